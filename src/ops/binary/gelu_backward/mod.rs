//! The gradient of GELU, `grad · gelu'(x)` in one pass (PyTorch's `gelu_backward`), from the
//! GELU's input `x`: for the exact GELU `Φ(x) + x φ(x)`, for the tanh approximation the
//! derivative of that formula. Written into `grad`'s buffer when nothing else holds it.

pub(super) mod cpu;
pub(super) mod cuda;

use crate::core::error::{Error, Result};
use crate::core::raw::{Operand, RawTensor};
use crate::ops::unary::Approximate;

/// `grad · d gelu(x) / dx` element-wise, for the GELU of `approximate`; `grad` and `x` have
/// the same shape and floating-point type.
pub(crate) fn gelu_backward(
    grad: Operand<'_>,
    x: &RawTensor,
    approximate: Approximate,
) -> Result<RawTensor> {
    if grad.shape() != x.shape() {
        return Err(Error::Shape(format!(
            "gelu_backward: grad of shape {:?} for an input of shape {:?}",
            grad.shape(),
            x.shape()
        )));
    }
    if grad.dtype != x.dtype || !grad.dtype.is_float() {
        return Err(Error::UnsupportedDType {
            op: "GeluBackwardKernelImpl",
            dtype: grad.dtype,
        });
    }
    dispatch!([&grad, x], |be| be.gelu_backward(grad, x, approximate))
}

/// The kernel entries of this family, one impl per backend: [`CpuBackend`](crate::ops::backend::CpuBackend)
/// in `cpu.rs`, [`CudaBackend`](crate::ops::backend::CudaBackend) in `cuda.rs`. The operands are on
/// that backend's device (`dispatch!` checked it) and the functions above planned shapes
/// and checked dtypes.
pub(crate) trait GeluBackwardKernel {
    fn gelu_backward(
        self,
        grad: Operand<'_>,
        x: &RawTensor,
        approximate: Approximate,
    ) -> Result<RawTensor>;
}
