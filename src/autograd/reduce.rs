//! Reductions: sum and mean over dims, max and min over a dim or over everything. Forward,
//! backward rules, and the `Var`/`DynVar` methods.

use super::dyn_var::DynVar;
use super::kit;
use super::var::{In, Out, Var};
use crate::core::error::Result;
use crate::core::layout::wrap_dim;
use crate::device::Device;
use crate::graph::record;
use crate::ops::{self, CompareOp, ReduceOp};
use crate::tensor::{infallible, Float};

/// Sum or mean over `dims` (all when empty), recorded.
pub(crate) fn sum_mean(a: In<'_>, dims: &[isize], keepdim: bool, mean: bool) -> Result<Out> {
    let op = if mean { ReduceOp::Mean } else { ReduceOp::Sum };
    let value = ops::reduce::reduce(a.value, dims, keepdim, op)?;
    let reduced = kit::reduced_dims(dims, a.value.rank())?;
    let node = record(
        if mean {
            "MeanBackward1"
        } else {
            "SumBackward1"
        },
        &[a.node],
        |_| {
            let shape = a.value.shape().to_vec();
            let count: usize = reduced.iter().map(|&d| shape[d]).product();
            move |g| {
                let g = if mean {
                    kit::mul_scalar(g, 1.0 / count as f64)?
                } else {
                    g
                };
                Ok(vec![Some(kit::expand_reduced(
                    &g, &shape, &reduced, keepdim,
                )?)])
            }
        },
    );
    Ok(Out { value, node })
}

/// Max or min over one dim, recorded: the gradient goes to the element picked (the first on
/// ties, as `argmax`).
pub(crate) fn extreme_dim(a: In<'_>, dim: isize, keepdim: bool, max: bool) -> Result<Out> {
    let op = if max { ReduceOp::Max } else { ReduceOp::Min };
    let value = ops::reduce::reduce(a.value, &[dim], keepdim, op)?;
    let node = record(
        if max { "MaxBackward0" } else { "MinBackward0" },
        &[a.node],
        |_| {
            let x = a.value.clone();
            move |g| {
                let shape = x.shape().to_vec();
                if x.rank() == 0 {
                    return Ok(vec![Some(g)]);
                }
                let d = wrap_dim(dim, x.rank())?;
                let index = ops::reduce::arg_reduce(&x, dim, true, max)?;
                let kept: Vec<usize> = (0..shape.len())
                    .map(|j| if j == d { 1 } else { shape[j] })
                    .collect();
                let g = kit::reshape(&g, &kept)?;
                Ok(vec![Some(ops::scatter::scatter_add(
                    &shape, d, &index, &g, x.device,
                )?)])
            }
        },
    );
    Ok(Out { value, node })
}

/// Max or min of all elements, recorded: the gradient is shared evenly by the elements equal
/// to the result, and by the NaNs when the result is NaN (PyTorch's
/// `evenly_distribute_backward`: `[1, NaN, 3].max()` sends it all to the NaN).
pub(crate) fn extreme_all(a: In<'_>, max: bool) -> Result<Out> {
    let op = if max { ReduceOp::Max } else { ReduceOp::Min };
    let value = ops::reduce::reduce(a.value, &[], false, op)?;
    let node = record(
        if max { "MaxBackward1" } else { "MinBackward1" },
        &[a.node],
        |_| {
            let (x, y) = (a.value.clone(), value.clone());
            move |g| {
                // mask = (x == y) | (isnan(x) & isnan(y)), as PyTorch's GPU branch (no host
                // read of `y`); the two terms never overlap, so their sum is the mask.
                let equal = kit::mask(&x, &y, CompareOp::Eq)?;
                let both_nan = kit::mul(
                    kit::mask(&x, &x, CompareOp::Ne)?,
                    &kit::mask(&y, &y, CompareOp::Ne)?,
                )?;
                let hits = kit::binary(equal, &both_nan, ops::BinaryOp::Add)?;
                let count = ops::reduce::reduce(&hits, &[], false, ReduceOp::Sum)?;
                let share = kit::div(g, &count)?;
                Ok(vec![Some(kit::mul(hits, &share)?)])
            }
        },
    );
    Ok(Out { value, node })
}

impl<D: Device, E: Float> Var<D, E> {
    /// Sum over dimensions `dims` (all when empty), dropping them unless `keepdim`.
    pub fn try_sum_dims(&self, dims: &[isize], keepdim: bool) -> Result<Self> {
        Ok(self.wrap(sum_mean(self.input(), dims, keepdim, false)?))
    }
    infallible!(
        /// Sum over dimensions `dims` (all when empty), dropping them unless `keepdim`.
        pub fn sum_dims(&self, dims: &[isize], keepdim: bool) -> Self
    );
    /// Sum over dimension `dim`.
    pub fn try_sum(&self, dim: isize) -> Result<Self> {
        self.try_sum_dims(&[dim], false)
    }
    infallible!(
        /// Sum over dimension `dim`.
        pub fn sum(&self, dim: isize) -> Self
    );
    /// Sum of all elements, as a 0-dimensional tensor.
    pub fn try_sum_all(&self) -> Result<Self> {
        self.try_sum_dims(&[], false)
    }
    infallible!(
        /// Sum of all elements, as a 0-dimensional tensor.
        pub fn sum_all(&self) -> Self
    );
    /// Mean over dimensions `dims` (all when empty), dropping them unless `keepdim`.
    pub fn try_mean_dims(&self, dims: &[isize], keepdim: bool) -> Result<Self> {
        Ok(self.wrap(sum_mean(self.input(), dims, keepdim, true)?))
    }
    infallible!(
        /// Mean over dimensions `dims` (all when empty), dropping them unless `keepdim`.
        pub fn mean_dims(&self, dims: &[isize], keepdim: bool) -> Self
    );
    /// Mean over dimension `dim`.
    pub fn try_mean(&self, dim: isize) -> Result<Self> {
        self.try_mean_dims(&[dim], false)
    }
    infallible!(
        /// Mean over dimension `dim`.
        pub fn mean(&self, dim: isize) -> Self
    );
    /// Mean of all elements, as a 0-dimensional tensor.
    pub fn try_mean_all(&self) -> Result<Self> {
        self.try_mean_dims(&[], false)
    }
    infallible!(
        /// Mean of all elements, as a 0-dimensional tensor.
        pub fn mean_all(&self) -> Self
    );
    /// Largest element over `dim`.
    pub fn try_max(&self, dim: isize) -> Result<Self> {
        Ok(self.wrap(extreme_dim(self.input(), dim, false, true)?))
    }
    infallible!(
        /// Largest element over `dim`.
        pub fn max(&self, dim: isize) -> Self
    );
    /// Largest element over `dim`, keeping it as size 1.
    pub fn try_max_keepdim(&self, dim: isize) -> Result<Self> {
        Ok(self.wrap(extreme_dim(self.input(), dim, true, true)?))
    }
    infallible!(
        /// Largest element over `dim`, keeping it as size 1.
        pub fn max_keepdim(&self, dim: isize) -> Self
    );
    /// Largest element of all.
    pub fn try_max_all(&self) -> Result<Self> {
        Ok(self.wrap(extreme_all(self.input(), true)?))
    }
    infallible!(
        /// Largest element of all.
        pub fn max_all(&self) -> Self
    );
    /// Smallest element over `dim`.
    pub fn try_min(&self, dim: isize) -> Result<Self> {
        Ok(self.wrap(extreme_dim(self.input(), dim, false, false)?))
    }
    infallible!(
        /// Smallest element over `dim`.
        pub fn min(&self, dim: isize) -> Self
    );
    /// Smallest element of all.
    pub fn try_min_all(&self) -> Result<Self> {
        Ok(self.wrap(extreme_all(self.input(), false)?))
    }
    infallible!(
        /// Smallest element of all.
        pub fn min_all(&self) -> Self
    );
}

impl DynVar {
    /// Sum over `dims` (all when empty).
    pub fn sum_dims(&self, dims: &[isize], keepdim: bool) -> Result<DynVar> {
        Ok(DynVar::from_out(sum_mean(
            self.input(),
            dims,
            keepdim,
            false,
        )?))
    }
    /// Sum over `dim`.
    pub fn sum(&self, dim: isize) -> Result<DynVar> {
        self.sum_dims(&[dim], false)
    }
    /// Sum of all elements (0-dim).
    pub fn sum_all(&self) -> Result<DynVar> {
        self.sum_dims(&[], false)
    }
    /// Mean over `dims` (all when empty).
    pub fn mean_dims(&self, dims: &[isize], keepdim: bool) -> Result<DynVar> {
        Ok(DynVar::from_out(sum_mean(
            self.input(),
            dims,
            keepdim,
            true,
        )?))
    }
    /// Mean over `dim`.
    pub fn mean(&self, dim: isize) -> Result<DynVar> {
        self.mean_dims(&[dim], false)
    }
    /// Mean of all elements (0-dim).
    pub fn mean_all(&self) -> Result<DynVar> {
        self.mean_dims(&[], false)
    }
    /// Largest element over `dim`.
    pub fn max(&self, dim: isize) -> Result<DynVar> {
        Ok(DynVar::from_out(extreme_dim(
            self.input(),
            dim,
            false,
            true,
        )?))
    }
    /// Largest element of all.
    pub fn max_all(&self) -> Result<DynVar> {
        Ok(DynVar::from_out(extreme_all(self.input(), true)?))
    }
    /// Smallest element over `dim`.
    pub fn min(&self, dim: isize) -> Result<DynVar> {
        Ok(DynVar::from_out(extreme_dim(
            self.input(),
            dim,
            false,
            false,
        )?))
    }
    /// Smallest element of all.
    pub fn min_all(&self) -> Result<DynVar> {
        Ok(DynVar::from_out(extreme_all(self.input(), false)?))
    }
}
