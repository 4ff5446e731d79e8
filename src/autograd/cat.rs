//! Joining: `cat` along an existing dimension and `stack` along a new one. Each input's
//! gradient is its slice of the incoming gradient (a view).

use super::dyn_var::DynVar;
use super::var::{In, Out, Var};
use crate::core::error::{Error, Result};
use crate::core::layout::wrap_dim;
use crate::core::raw::RawTensor;
use crate::device::Device;
use crate::graph::record;
use crate::ops;
use crate::tensor::Float;

/// `cat` (or `stack` when `new_dim`) of `inputs` along `dim`, recorded.
pub(crate) fn join(inputs: &[In<'_>], dim: isize, new_dim: bool) -> Result<Out> {
    let raws: Vec<&RawTensor> = inputs.iter().map(|i| i.value).collect();
    let value = if new_dim {
        ops::cat::stack(&raws, dim)?
    } else {
        ops::cat::cat(&raws, dim)?
    };
    let nodes: Vec<_> = inputs.iter().map(|i| i.node).collect();
    let node = record(
        if new_dim {
            "StackBackward0"
        } else {
            "CatBackward0"
        },
        &nodes,
        |needs| {
            let needs = needs.to_vec();
            let d = wrap_dim(dim, value.rank()).expect("checked by the forward");
            let sizes: Vec<usize> = raws
                .iter()
                .map(|r| if new_dim { 1 } else { r.shape()[d] })
                .collect();
            move |g| {
                let mut start = 0;
                let mut grads = Vec::with_capacity(sizes.len());
                for (&len, &need) in sizes.iter().zip(&needs) {
                    grads.push(if need {
                        let part = ops::shape::narrow(&g, d as isize, start, len)?;
                        Some(if new_dim {
                            ops::shape::squeeze(&part, d as isize)?
                        } else {
                            part
                        })
                    } else {
                        None
                    });
                    start += len;
                }
                Ok(grads)
            }
        },
    );
    Ok(Out { value, node })
}

fn empty() -> Error {
    Error::Shape("torch.cat(): expected a non-empty list of Tensors".into())
}

impl<D: Device, E: Float> Var<D, E> {
    /// Joins tensors along `dim`: `Var::cat(&[&a, &b], 0)`.
    pub fn try_cat(tensors: &[&Var<D, E>], dim: isize) -> Result<Self> {
        let first = tensors.first().ok_or_else(empty)?;
        let inputs: Vec<In<'_>> = tensors.iter().map(|t| t.input()).collect();
        Ok(first.wrap(join(&inputs, dim, false)?))
    }
    /// Joins tensors along `dim`.
    ///
    /// Panics with the error's text where [`try_cat`](Self::try_cat) returns it.
    #[track_caller]
    pub fn cat(tensors: &[&Var<D, E>], dim: isize) -> Self {
        match Self::try_cat(tensors, dim) {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        }
    }
    /// Stacks equally shaped tensors along a new dimension `dim`.
    pub fn try_stack(tensors: &[&Var<D, E>], dim: isize) -> Result<Self> {
        let first = tensors
            .first()
            .ok_or_else(|| Error::Shape("stack expects a non-empty TensorList".into()))?;
        let inputs: Vec<In<'_>> = tensors.iter().map(|t| t.input()).collect();
        Ok(first.wrap(join(&inputs, dim, true)?))
    }
    /// Stacks equally shaped tensors along a new dimension `dim`.
    ///
    /// Panics with the error's text where [`try_stack`](Self::try_stack) returns it.
    #[track_caller]
    pub fn stack(tensors: &[&Var<D, E>], dim: isize) -> Self {
        match Self::try_stack(tensors, dim) {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        }
    }
}

impl DynVar {
    fn checked<'a>(tensors: &[&'a DynVar]) -> Result<Vec<In<'a>>> {
        if tensors.is_empty() {
            return Err(empty());
        }
        let args: Vec<(&'static str, &RawTensor)> =
            tensors.iter().map(|t| ("tensors", t.raw())).collect();
        crate::dyn_tensor::check::same_device_arguments("wrapper_CUDA_cat", &args)?;
        Ok(tensors.iter().map(|t| t.input()).collect())
    }
    /// Joins tensors along `dim`; all on one device (checked as PyTorch's `cat`).
    pub fn cat(tensors: &[&DynVar], dim: isize) -> Result<DynVar> {
        Ok(DynVar::from_out(join(
            &Self::checked(tensors)?,
            dim,
            false,
        )?))
    }
    /// Stacks equally shaped tensors along a new dimension.
    pub fn stack(tensors: &[&DynVar], dim: isize) -> Result<DynVar> {
        Ok(DynVar::from_out(join(&Self::checked(tensors)?, dim, true)?))
    }
}
