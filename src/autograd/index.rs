//! Indexing by `i64` tensors: `gather` (gradient: `scatter_add`) and `index_select`
//! (gradient: `index_add`).

use super::dyn_var::DynVar;
use super::var::{In, Out, Var};
use crate::core::error::Result;
use crate::core::layout::wrap_dim;
use crate::core::raw::RawTensor;
use crate::device::Device;
use crate::dyn_tensor::check::same_device_arguments;
use crate::graph::record;
use crate::ops;
use crate::tensor::{infallible, Float, HasDevice, OperandOn};
use crate::DynTensor;

/// `gather(a, dim, index)`, recorded.
pub(crate) fn gather(a: In<'_>, dim: isize, index: &RawTensor) -> Result<Out> {
    let value = ops::index::gather(a.value, dim, index)?;
    let node = record("GatherBackward0", &[a.node], |_| {
        let (shape, index, device) = (a.value.shape().to_vec(), index.clone(), a.value.device);
        move |g| {
            let d = if shape.is_empty() {
                0
            } else {
                wrap_dim(dim, shape.len())?
            };
            Ok(vec![Some(ops::scatter::scatter_add(
                &shape, d, &index, &g, device,
            )?)])
        }
    });
    Ok(Out { value, node })
}

/// `index_select(a, dim, index)`, recorded.
pub(crate) fn index_select(a: In<'_>, dim: isize, index: &RawTensor) -> Result<Out> {
    let value = ops::index::index_select(a.value, dim, index)?;
    let node = record("IndexSelectBackward0", &[a.node], |_| {
        let (shape, index, device) = (a.value.shape().to_vec(), index.clone(), a.value.device);
        move |g| {
            let d = if shape.is_empty() {
                0
            } else {
                wrap_dim(dim, shape.len())?
            };
            Ok(vec![Some(ops::scatter::index_add(
                &shape, d, &index, &g, device,
            )?)])
        }
    });
    Ok(Out { value, node })
}

impl<D: Device, E: Float> Var<D, E> {
    /// `out[i][j] = self[i][index[i][j]]` along `dim` (PyTorch's `gather`).
    pub fn try_gather<I: OperandOn<D> + HasDevice<Element = i64>>(
        &self,
        dim: isize,
        index: I,
    ) -> Result<Self> {
        Ok(self.wrap(gather(self.input(), dim, index.raw())?))
    }
    infallible!(
        /// `out[i][j] = self[i][index[i][j]]` along `dim` (PyTorch's `gather`).
        pub fn gather[I: OperandOn<D> + HasDevice<Element = i64>](&self, dim: isize, index: I) -> Self
    );
    /// Slices along `dim` picked by the 1-D `index` (PyTorch's `index_select`).
    pub fn try_index_select<I: OperandOn<D> + HasDevice<Element = i64>>(
        &self,
        dim: isize,
        index: I,
    ) -> Result<Self> {
        Ok(self.wrap(index_select(self.input(), dim, index.raw())?))
    }
    infallible!(
        /// Slices along `dim` picked by the 1-D `index` (PyTorch's `index_select`).
        pub fn index_select[I: OperandOn<D> + HasDevice<Element = i64>](&self, dim: isize, index: I) -> Self
    );
}

impl DynVar {
    /// `out[i][j] = self[i][index[i][j]]` along `dim` (checked as PyTorch's `gather`).
    pub fn gather(&self, dim: isize, index: &DynTensor) -> Result<DynVar> {
        same_device_arguments(
            "wrapper_CUDA_gather",
            &[("self", self.raw()), ("index", &index.raw)],
        )?;
        Ok(DynVar::from_out(gather(self.input(), dim, &index.raw)?))
    }
    /// Slices along `dim` picked by `index` (checked as PyTorch's `index_select`).
    pub fn index_select(&self, dim: isize, index: &DynTensor) -> Result<DynVar> {
        same_device_arguments(
            "wrapper_CUDA__index_select",
            &[("self", self.raw()), ("index", &index.raw)],
        )?;
        Ok(DynVar::from_out(index_select(
            self.input(),
            dim,
            &index.raw,
        )?))
    }
}
