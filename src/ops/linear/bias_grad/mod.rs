//! The bias gradient of a linear layer: the sum of `grad` over every dimension but the last,
//! accumulated row by row (contiguous, vectorised) instead of as a strided column reduction.

pub(super) mod cpu;
pub(super) mod cuda;

use crate::core::error::{Error, Result};
use crate::core::raw::RawTensor;

/// `grad.sum(all dims but the last)`, of shape `[grad.shape[-1]]`.
pub(crate) fn bias_grad(grad: &RawTensor) -> Result<RawTensor> {
    if grad.rank() == 0 {
        return Err(Error::Shape(
            "bias_grad: expected a gradient with at least one dimension".into(),
        ));
    }
    if !grad.dtype.is_float() {
        return Err(Error::UnsupportedDType {
            op: "sum",
            dtype: grad.dtype,
        });
    }
    dispatch!([grad], |be| be.bias_grad(grad))
}

/// The kernel entries of this family, one impl per backend: [`CpuBackend`](crate::ops::backend::CpuBackend)
/// in `cpu.rs`, [`CudaBackend`](crate::ops::backend::CudaBackend) in `cuda.rs`. The operands are on
/// that backend's device (`dispatch!` checked it) and the functions above planned shapes
/// and checked dtypes.
pub(crate) trait BiasGradKernel {
    fn bias_grad(self, grad: &RawTensor) -> Result<RawTensor>;
}
