//! Indexing by `i64` tensors: `gather` (gradient: `scatter_add`) and `index_select`
//! (gradient: `index_add`).

use super::declare::declare_ops;
use crate::core::error::Result;
use crate::core::layout::wrap_dim;
use crate::core::raw::RawTensor;
use crate::dyn_tensor::check::same_device_arguments;
use crate::graph::{record, In, Out};
use crate::ops;
use crate::tensor::{ArgumentOn, HasDevice};

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
            Ok(vec![Some(ops::index::scatter::scatter_add(
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
            Ok(vec![Some(ops::index::scatter::index_add(
                &shape, d, &index, &g, device,
            )?)])
        }
    });
    Ok(Out { value, node })
}

declare_ops! {
    /// Values along `dim` at `index` (`out[i][j] = self[index[i][j]][j]` for `dim = 0`);
    /// `index` is an `i64` tensor on the same device.
    Element fn gather(x, dim: isize, index: (impl ArgumentOn<D> + HasDevice<Element = i64>)) -> Same
        check { same_device_arguments("wrapper_CUDA_gather", &[("self", x.value), ("index", index.value)])?; }
        = gather(x, dim, index.value);
    /// The slices of `dim` listed in `index` (an `i64` vector on the same device).
    Element fn index_select(x, dim: isize, index: (impl ArgumentOn<D> + HasDevice<Element = i64>)) -> Same
        check { same_device_arguments("wrapper_CUDA__index_select", &[("self", x.value), ("index", index.value)])?; }
        = index_select(x, dim, index.value);
}
