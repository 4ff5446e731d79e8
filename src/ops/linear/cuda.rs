//! CUDA side of the fused linear layer: the bias is broadcast into the output rows, then one
//! cuBLAS GEMM accumulates `x @ weight.T` onto them (`beta = 1`), reading the weight through
//! its transposed strides (no copy).

use crate::backend::cuda::blas::{self, GemmOperand};
use crate::backend::cuda::context::GpuContext;
use crate::backend::cuda::memory;
use crate::core::error::Result;
use crate::core::layout::Dims;
use crate::core::raw::RawTensor;
use crate::core::DType;
use crate::ops::copy::cuda::contiguous;

pub(crate) fn linear(
    gpu: &'static GpuContext,
    x: &RawTensor,
    w: &RawTensor,
    bias: Option<&RawTensor>,
    (rows, k, n, shape): (usize, usize, usize, Dims),
) -> Result<RawTensor> {
    // x as a [rows, k] matrix (a view when the strides allow, else a copy), readable by cuBLAS.
    let x2 = if x.rank() == 2 {
        x.clone()
    } else {
        crate::ops::shape::reshape(x, &[rows as isize, k as isize])?
    };
    let x2 = match blas::matrix_layout(rows, k, x2.layout.strides[0], x2.layout.strides[1]) {
        Some(_) => x2,
        None => contiguous(gpu, &x2)?,
    };
    // weight is [n, k]; weight.T is [k, n] with the strides swapped.
    let wt = |t: &RawTensor| blas::matrix_layout(k, n, t.layout.strides[1], t.layout.strides[0]);
    let w = match wt(w) {
        Some(_) => w.clone(),
        None => contiguous(gpu, w)?,
    };
    let (la, lb) = (
        blas::matrix_layout(rows, k, x2.layout.strides[0], x2.layout.strides[1])
            .expect("checked above"),
        wt(&w).expect("contiguous weights have a layout"),
    );
    let numel = rows * n;
    if let (Some(b), DType::F16 | DType::BF16) = (bias, x.dtype) {
        return half_with_bias(gpu, (&x2, la), (&w, lb), b, (rows, k, n, shape));
    }
    let out = if bias.is_none() && k == 0 {
        memory::alloc_zeros_dtype(gpu, x.dtype, numel)?
    } else {
        memory::alloc_dtype(gpu, x.dtype, numel)?
    };
    if numel > 0 {
        let pc = out.device_ptr();
        let beta = match bias {
            Some(b) => {
                // Every output row starts as the bias: a broadcast copy (row stride 0).
                crate::ops::copy::cuda::copy_strided(
                    gpu,
                    x.dtype,
                    &[rows, n],
                    (pc, &[n, 1][..]),
                    (memory::ptr(b)?, &[0, b.layout.strides[0]][..]),
                )?;
                1.0
            }
            None => 0.0,
        };
        let a = GemmOperand {
            ptr: memory::ptr(&x2)?,
            row_major: la.0,
            ld: la.1,
            batch_stride: 0,
        };
        let b = GemmOperand {
            ptr: memory::ptr(&w)?,
            row_major: lb.0,
            ld: lb.1,
            batch_stride: 0,
        };
        blas::gemm_dtype(gpu, x.dtype, (rows, n, k), a, b, pc, 0, 1, beta)?;
    }
    Ok(memory::tensor_from_storage(out, shape, gpu.ordinal))
}

/// A 16-bit linear with a bias, rounded once as on the CPU and in PyTorch's fused kernel: the
/// rows start as the bias in f32 (one cast of its broadcast view), one GEMM adds
/// `x @ weight.T` to them in f32, and one cast rounds the sums to the 16-bit type (a 16-bit
/// output would let cuBLAS round the product before adding the bias; see
/// `blas::gemm_half_to_f32`).
fn half_with_bias(
    gpu: &'static GpuContext,
    (x, la): (&RawTensor, (bool, usize)),
    (w, lb): (&RawTensor, (bool, usize)),
    bias: &RawTensor,
    (rows, k, n, shape): (usize, usize, usize, Dims),
) -> Result<RawTensor> {
    let sums =
        crate::ops::copy::cuda::cast(gpu, &crate::ops::shape::expand(bias, &shape)?, DType::F32)?;
    let operand = |t: &RawTensor, (row_major, ld): (bool, usize)| -> Result<GemmOperand> {
        Ok(GemmOperand {
            ptr: memory::ptr(t)?,
            row_major,
            ld,
            batch_stride: 0,
        })
    };
    blas::gemm_half_to_f32(
        gpu,
        x.dtype,
        (rows, n, k),
        operand(x, la)?,
        operand(w, lb)?,
        memory::ptr(&sums)?,
        1.0,
    )?;
    crate::ops::copy::cuda::cast(gpu, &sums, x.dtype)
}

impl super::LinearKernel for crate::ops::backend::CudaBackend {
    #[inline(always)]
    fn linear(
        self,
        x: &RawTensor,
        w: &RawTensor,
        bias: Option<&RawTensor>,
        plan: (usize, usize, usize, Dims),
    ) -> Result<RawTensor> {
        linear(self.0, x, w, bias, plan)
    }
}
