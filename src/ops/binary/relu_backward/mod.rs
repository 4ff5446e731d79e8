//! The gradient of `relu`: `y <= 0 ? 0 : grad` (PyTorch's `threshold_backward`: a NaN `y`
//! passes the gradient), where `y` is the relu's output (or input: both are positive, and
//! NaN, at the same places). Written into `grad`'s buffer when nothing else holds it.

pub(super) mod cpu;
pub(super) mod cuda;

use crate::core::error::{Error, Result};
use crate::core::raw::{Operand, RawTensor};

/// `y <= 0 ? 0 : grad` element-wise (PyTorch's `threshold_backward`: a NaN `y` passes the
/// gradient); `grad` and `y` have the same shape.
pub(crate) fn relu_backward(grad: Operand<'_>, y: &RawTensor) -> Result<RawTensor> {
    if grad.shape() != y.shape() {
        return Err(Error::Shape(format!(
            "relu_backward: grad of shape {:?} for an output of shape {:?}",
            grad.shape(),
            y.shape()
        )));
    }
    if grad.dtype != y.dtype || !grad.dtype.is_float() {
        return Err(Error::UnsupportedDType {
            op: "threshold_backward",
            dtype: grad.dtype,
        });
    }
    dispatch!([&grad, y], |be| be.relu_backward(grad, y))
}

/// The kernel entries of this family, one impl per backend: [`CpuBackend`](crate::ops::backend::CpuBackend)
/// in `cpu.rs`, [`CudaBackend`](crate::ops::backend::CudaBackend) in `cuda.rs`. The operands are on
/// that backend's device (`dispatch!` checked it) and the functions above planned shapes
/// and checked dtypes.
pub(crate) trait ReluBackwardKernel {
    fn relu_backward(self, grad: Operand<'_>, y: &RawTensor) -> Result<RawTensor>;
}
