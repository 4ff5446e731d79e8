//! The gradient of `relu`: `grad * (y > 0)`, where `y` is the relu's output (or input: both
//! are positive at the same places). Written into `grad`'s buffer when nothing else holds it.

pub(super) mod cpu;
pub(super) mod cuda;

use crate::core::error::{Error, Result};
use crate::core::raw::{Operand, RawTensor};

/// `grad * (y > 0)` element-wise; `grad` and `y` have the same shape.
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
