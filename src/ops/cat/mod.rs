//! Joining tensors: `cat` along an existing dimension, `stack` along a new one.

pub(super) mod cpu;
pub(super) mod cuda;

use crate::core::error::{Error, Result};
use crate::core::layout::{wrap_dim, Dims};
use crate::core::raw::RawTensor;

/// Checks shapes like `torch.cat` and returns (dim, output shape).
fn plan(tensors: &[&RawTensor], dim: isize) -> Result<(usize, Dims)> {
    let first = tensors
        .first()
        .ok_or_else(|| Error::Shape("torch.cat(): expected a non-empty list of Tensors".into()))?;
    if first.rank() == 0 {
        return Err(Error::Shape(
            "zero-dimensional tensor (at position 0) cannot be concatenated".into(),
        ));
    }
    let d = wrap_dim(dim, first.rank())?;
    let mut shape = first.layout.shape;
    shape[d] = 0;
    for (i, t) in tensors.iter().enumerate() {
        if t.dtype != first.dtype {
            return Err(Error::DTypeMismatch {
                expected: first.dtype,
                found: t.dtype,
            });
        }
        if t.rank() != first.rank() {
            return Err(Error::Shape(format!(
                "Tensors must have same number of dimensions: got {} and {}",
                first.rank(),
                t.rank()
            )));
        }
        for j in 0..first.rank() {
            if j != d && t.shape()[j] != first.shape()[j] {
                return Err(Error::Shape(format!(
                    "Sizes of tensors must match except in dimension {d}. Expected size {} but got size {} for tensor number {i} in the list.",
                    first.shape()[j],
                    t.shape()[j]
                )));
            }
        }
        shape[d] = shape[d]
            .checked_add(t.shape()[d])
            .ok_or_else(|| Error::SizeOverflow {
                sizes: shape.to_vec(),
            })?;
    }
    shape.check_shape()?;
    Ok((d, shape))
}

/// Concatenates along `dim`. All tensors are on one device (checked by the caller).
pub(crate) fn cat(tensors: &[&RawTensor], dim: isize) -> Result<RawTensor> {
    let (d, shape) = plan(tensors, dim)?;
    let device = crate::ops::backend::on(tensors)?;
    dispatch!(@run device, |be| be.cat(tensors, d, shape))
}

/// Stacks along a new dimension `dim`; all shapes must be equal.
pub(crate) fn stack(tensors: &[&RawTensor], dim: isize) -> Result<RawTensor> {
    let first = tensors
        .first()
        .ok_or_else(|| Error::Shape("stack expects a non-empty TensorList".into()))?;
    for (i, t) in tensors.iter().enumerate() {
        if t.shape() != first.shape() {
            return Err(Error::Shape(format!(
                "stack expects each tensor to be equal size, but got {:?} at entry 0 and {:?} at entry {i}",
                first.shape(),
                t.shape()
            )));
        }
    }
    let unsqueezed = tensors
        .iter()
        .map(|t| crate::ops::shape::unsqueeze(t, dim))
        .collect::<Result<Vec<_>>>()?;
    let refs: Vec<&RawTensor> = unsqueezed.iter().collect();
    cat(&refs, dim)
}

/// The kernel entries of this family, one impl per backend: [`CpuBackend`](crate::ops::backend::CpuBackend)
/// in `cpu.rs`, [`CudaBackend`](crate::ops::backend::CudaBackend) in `cuda.rs`. The operands are on
/// that backend's device (`dispatch!` checked it) and the functions above planned shapes
/// and checked dtypes.
pub(crate) trait CatKernel {
    fn cat(self, tensors: &[&RawTensor], d: usize, shape: Dims) -> Result<RawTensor>;
}
