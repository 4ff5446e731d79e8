//! CPU kernel for the fused linear layer.

use crate::core::error::Result;
use crate::core::layout::Dims;
use crate::core::raw::RawTensor;
use crate::core::DType;
use crate::ops::half;
use crate::ops::matmul::{gemm_into, Gemm, MatrixView};

fn typed<T: Gemm>(
    x: &RawTensor,
    w: &RawTensor,
    bias: Option<&RawTensor>,
    (rows, k, n, shape): (usize, usize, usize, Dims),
) -> Result<RawTensor> {
    // x as a [rows, k] matrix: a view when the strides allow, else a copy.
    let reshaped;
    let x2 = if x.rank() == 2 {
        x
    } else {
        reshaped = match x.layout.view(&[rows, k])? {
            Some(l) => x.with_layout(l),
            None => {
                let c = crate::ops::copy::cpu::contiguous(x)?;
                let l = c
                    .layout
                    .view(&[rows, k])?
                    .expect("contiguous tensors always have a view");
                c.with_layout(l)
            }
        };
        &reshaped
    };
    // The bias as a slice (a copy when it is a strided view), read before the result is made.
    let owned;
    let bias = match bias {
        Some(b) => Some(match b.layout.contiguous_range() {
            Some(r) => &b.cpu_slice::<T>().expect("cpu")[r],
            None => {
                owned = b.to_vec::<T>()?;
                &owned[..]
            }
        }),
        None => None,
    };
    let a = MatrixView {
        data: x2.cpu_slice::<T>().expect("cpu"),
        offset: x2.layout.offset,
        row_stride: x2.layout.strides[0],
        col_stride: x2.layout.strides[1],
    };
    // weight is [n, k]; its transpose [k, n] is the same memory with the strides swapped.
    let b = MatrixView {
        data: w.cpu_slice::<T>().expect("cpu"),
        offset: w.layout.offset,
        row_stride: w.layout.strides[1],
        col_stride: w.layout.strides[0],
    };
    RawTensor::cpu_filled::<T>(shape, rows * n, |out| {
        if let Some(bias) = bias {
            for row in out.chunks_mut(n.max(1)) {
                crate::backend::cpu::copy_short(row, bias);
            }
        }
        gemm_into(out, (rows, k, n), a, b, bias.is_some());
    })
}

pub(crate) fn linear(
    x: &RawTensor,
    w: &RawTensor,
    bias: Option<&RawTensor>,
    plan: (usize, usize, usize, Dims),
) -> Result<RawTensor> {
    // Each arm hands back the kernel's own `Result`, so the tensor is written once, in place.
    match x.dtype {
        DType::F32 => typed::<f32>(x, w, bias, plan),
        DType::F64 => typed::<f64>(x, w, bias, plan),
        // bf16 and f16 in f32 (widened copies), rounded once.
        DType::F16 | DType::BF16 => {
            let (xw, ww, bw) = (half::widen(x)?, half::widen(w)?, half::widen_opt(bias)?);
            half::narrow(typed::<f32>(&xw, &ww, bw.as_ref(), plan)?, x.dtype)
        }
        _ => unreachable!("checked in plan"),
    }
}

impl super::LinearKernel for crate::ops::backend::CpuBackend {
    #[inline(always)]
    fn linear(
        self,
        x: &RawTensor,
        w: &RawTensor,
        bias: Option<&RawTensor>,
        plan: (usize, usize, usize, Dims),
    ) -> Result<RawTensor> {
        linear(x, w, bias, plan)
    }
}
