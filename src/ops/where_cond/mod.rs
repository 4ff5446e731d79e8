//! `where(cond, a, b)`: elements of `a` where `cond` holds, else of `b`, with broadcasting.

pub(super) mod cpu;
pub(super) mod cuda;

use crate::core::error::{Error, Result};
use crate::core::layout::{broadcast_shapes, Dims};
use crate::core::raw::RawTensor;
use crate::core::DType;

/// `cond ? a : b` element-wise.
pub(crate) fn where_cond(cond: &RawTensor, a: &RawTensor, b: &RawTensor) -> Result<RawTensor> {
    if cond.dtype != DType::Bool {
        return Err(Error::Shape(format!(
            "where expected condition to be a boolean tensor, but got a tensor with dtype {}",
            cond.dtype
        )));
    }
    if a.dtype != b.dtype {
        return Err(Error::DTypeMismatch {
            expected: a.dtype,
            found: b.dtype,
        });
    }
    let shape = broadcast_shapes(&broadcast_shapes(cond.shape(), a.shape())?, b.shape())?;
    dispatch!([cond, a, b], |be| be.where_cond(cond, a, b, shape))
}

/// The kernel entries of this family, one impl per backend: [`CpuBackend`](crate::ops::backend::CpuBackend)
/// in `cpu.rs`, [`CudaBackend`](crate::ops::backend::CudaBackend) in `cuda.rs`. The operands are on
/// that backend's device (`dispatch!` checked it) and the functions above planned shapes
/// and checked dtypes.
pub(crate) trait WhereKernel {
    fn where_cond(
        self,
        c: &RawTensor,
        a: &RawTensor,
        b: &RawTensor,
        shape: Dims,
    ) -> Result<RawTensor>;
}
