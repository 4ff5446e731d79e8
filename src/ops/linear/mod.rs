//! `linear(x, weight, bias) = x @ weight.T + bias`, fused (PyTorch's `addmm`): the bias is
//! written first and the product accumulated onto it, with no transposed copy of the weight.

/// The bias gradient of a linear layer.
pub(crate) mod bias_grad;
pub(super) mod cpu;
pub(super) mod cuda;

use crate::core::error::{Error, Result};
use crate::core::layout::Dims;
use crate::core::raw::RawTensor;
use crate::core::DType;

/// Checks shapes as `F.linear` and returns (rows, in, out, output shape).
pub(crate) fn plan(
    x: &RawTensor,
    weight: &RawTensor,
    bias: Option<&RawTensor>,
) -> Result<(usize, usize, usize, Dims)> {
    if weight.rank() != 2 {
        return Err(Error::NotAMatrix {
            op: "addmm",
            argument: "mat2",
            dims: weight.rank(),
        });
    }
    if x.rank() == 0 {
        return Err(Error::Shape(
            "both arguments to linear need to be at least 1D, but they are 0D and 2D".into(),
        ));
    }
    for t in std::iter::once(weight).chain(bias) {
        if t.dtype != x.dtype {
            return Err(Error::Shape(format!(
                "mat1 and mat2 must have the same dtype, but got {} and {}",
                x.dtype, t.dtype
            )));
        }
    }
    // PyTorch's CPU `addmm`/`mm` take integers (computed exactly below), its CUDA ones do not.
    let cpu_int = x.dtype == DType::I64 && x.device.is_cpu();
    if !x.dtype.is_float() && !cpu_int {
        return Err(Error::UnsupportedDType {
            op: if x.device.is_cpu() {
                "addmm_impl_cpu_"
            } else {
                "addmm_cuda"
            },
            dtype: x.dtype,
        });
    }
    let (out_features, in_features) = (weight.shape()[0], weight.shape()[1]);
    let k = *x.shape().last().expect("rank >= 1");
    let rows: usize = x.shape()[..x.rank() - 1].iter().product();
    if k != in_features {
        // With a bias PyTorch runs the fused `addmm`, without one `matmul` (so `mm`).
        let op = if bias.is_some() { "addmm" } else { "mm" };
        return Err(Error::MatmulShape {
            op,
            m: rows,
            k1: k,
            k2: in_features,
            n: out_features,
        });
    }
    if let Some(b) = bias {
        if b.shape() != [out_features] {
            return Err(Error::Shape(format!(
                "The size of tensor a ({}) must match the size of tensor b ({out_features}) at non-singleton dimension {}",
                b.shape().last().copied().unwrap_or(1),
                x.rank() - 1
            )));
        }
    }
    let mut shape = x.layout.shape;
    *shape.last_mut().expect("rank >= 1") = out_features;
    shape.check_shape()?;
    Ok((rows, in_features, out_features, shape))
}

/// `x @ weight.T + bias`.
pub(crate) fn linear(
    x: &RawTensor,
    weight: &RawTensor,
    bias: Option<&RawTensor>,
) -> Result<RawTensor> {
    let plan = plan(x, weight, bias)?;
    if x.dtype == DType::I64 {
        // Only the CPU gets here (`plan`): the exact integer product, then the bias.
        crate::ops::backend::on(&[x, weight])?;
        let product = crate::ops::matmul::matmul(x, &crate::ops::shape::transpose(weight, 0, 1)?)?;
        return match bias {
            Some(b) => crate::ops::binary::binary(
                crate::core::raw::Operand::Owned(product),
                crate::core::raw::Operand::Borrowed(b),
                crate::ops::BinaryOp::Add,
            ),
            None => Ok(product),
        };
    }
    let device = match bias {
        Some(b) => crate::ops::backend::on(&[x, weight, b])?,
        None => crate::ops::backend::on(&[x, weight])?,
    };
    dispatch!(@run device, |be| be.linear(x, weight, bias, plan))
}

/// The kernel entries of this family, one impl per backend: [`CpuBackend`](crate::ops::backend::CpuBackend)
/// in `cpu.rs`, [`CudaBackend`](crate::ops::backend::CudaBackend) in `cuda.rs`. The operands are on
/// that backend's device (`dispatch!` checked it) and the functions above planned shapes
/// and checked dtypes.
pub(crate) trait LinearKernel {
    fn linear(
        self,
        x: &RawTensor,
        w: &RawTensor,
        bias: Option<&RawTensor>,
        plan: (usize, usize, usize, Dims),
    ) -> Result<RawTensor>;
}
