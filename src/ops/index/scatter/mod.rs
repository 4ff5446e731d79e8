//! Adding values into a zero tensor at indexed places: `scatter_add` (the gradient of
//! `gather`) and `index_add` (the gradient of `index_select`).

pub(super) mod cpu;
pub(crate) mod cuda;

use crate::core::error::{Error, Result};
use crate::core::layout::Dims;
use crate::core::raw::RawTensor;
use crate::core::DType;
use crate::core::DynDevice;

/// The device of `index` and `src`, which must be `device`, the output's.
fn on(
    device: DynDevice,
    index: &RawTensor,
    src: &RawTensor,
) -> Result<crate::ops::backend::Device> {
    let on = crate::ops::backend::on(&[index, src])?;
    if src.device.resolved() != device.resolved() {
        let (first, second) = if device.is_cpu() {
            (src.device, device)
        } else {
            (device, src.device)
        };
        return Err(Error::DeviceMismatch { first, second });
    }
    Ok(on)
}

fn check(op: &'static str, index: &RawTensor, src: &RawTensor) -> Result<()> {
    if index.dtype != DType::I64 {
        return Err(Error::Shape(format!(
            "{op}(): Expected dtype int64 for index"
        )));
    }
    if !src.dtype.is_float() {
        return Err(Error::UnsupportedDType {
            op,
            dtype: src.dtype,
        });
    }
    Ok(())
}

/// A zero tensor of `shape` with `out[..., index[p], ...] += src[p]` along `dim` for every
/// position `p` of `index` (which has `src`'s shape and `shape`'s rank).
pub(crate) fn scatter_add(
    shape: &[usize],
    dim: usize,
    index: &RawTensor,
    src: &RawTensor,
    device: DynDevice,
) -> Result<RawTensor> {
    check("scatter_add", index, src)?;
    if index.shape() != src.shape() || (index.rank() != shape.len() && !shape.is_empty()) {
        return Err(Error::Shape(format!(
            "scatter_add(): index of shape {:?} and source of shape {:?} do not fit an output of shape {shape:?}",
            index.shape(),
            src.shape()
        )));
    }
    let shape = Dims::shape(shape)?;
    dispatch!(@run on(device, index, src)?, |be| be.scatter_add(shape, dim, index, src))
}

/// A zero tensor of `shape` with slice `index[k]` along `dim` increased by slice `k` of `src`.
pub(crate) fn index_add(
    shape: &[usize],
    dim: usize,
    index: &RawTensor,
    src: &RawTensor,
    device: DynDevice,
) -> Result<RawTensor> {
    check("index_add", index, src)?;
    let shape = Dims::shape(shape)?;
    let fits = src.rank() == shape.len()
        && (shape.is_empty() || src.shape()[dim] == index.numel())
        && (0..shape.len()).all(|j| j == dim || src.shape()[j] == shape[j]);
    let fits_scalar = shape.is_empty() && src.numel() == index.numel();
    if !(fits || fits_scalar) {
        return Err(Error::Shape(format!(
            "index_add(): source of shape {:?} does not fit {} indices into an output of shape {:?} along dimension {dim}",
            src.shape(),
            index.numel(),
            &*shape
        )));
    }
    dispatch!(@run on(device, index, src)?, |be| be.index_add(shape, dim, index, src))
}

/// The kernel entries of this family, one impl per backend: [`CpuBackend`](crate::ops::backend::CpuBackend)
/// in `cpu.rs`, [`CudaBackend`](crate::ops::backend::CudaBackend) in `cuda.rs`. The operands are on
/// that backend's device (`dispatch!` checked it) and the functions above planned shapes
/// and checked dtypes.
pub(crate) trait ScatterKernel {
    fn scatter_add(
        self,
        shape: Dims,
        dim: usize,
        index: &RawTensor,
        src: &RawTensor,
    ) -> Result<RawTensor>;
    fn index_add(
        self,
        shape: Dims,
        dim: usize,
        index: &RawTensor,
        src: &RawTensor,
    ) -> Result<RawTensor>;
}
