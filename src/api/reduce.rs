//! Reductions: sum and mean over dims, max and min over a dim or over everything. Forward,
//! backward rules, and the declarations.

use super::declare::declare_ops;
use super::kit;
use crate::core::error::Result;
use crate::core::layout::wrap_dim;
use crate::core::DType;
use crate::graph::{record, In, Out};
use crate::ops::{self, CompareOp, ReduceOp};

/// Sum or mean over `dims` (all when empty), recorded.
pub(crate) fn sum_mean(a: In<'_>, dims: &[isize], keepdim: bool, mean: bool) -> Result<Out> {
    let op = if mean { ReduceOp::Mean } else { ReduceOp::Sum };
    let value = ops::reduce::reduce(a.value, dims, keepdim, op)?;
    let reduced = kit::reduced_dims(dims, a.value.rank())?;
    // PyTorch's names: `x.sum()` is SumBackward0, `x.sum(dim)` SumBackward1 (mean alike).
    let node = record(
        match (mean, dims.is_empty()) {
            (false, true) => "SumBackward0",
            (false, false) => "SumBackward1",
            (true, true) => "MeanBackward0",
            (true, false) => "MeanBackward1",
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
                Ok(vec![Some(ops::index::scatter::scatter_add(
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

/// The index of the max (or min) along `dim` (never tracked).
fn arg_dim(a: In<'_>, dim: isize, keepdim: bool, max: bool) -> Result<Out> {
    Ok(Out::untracked(ops::reduce::arg_reduce(
        a.value, dim, keepdim, max,
    )?))
}

/// The index of the max (or min) of all elements, into the flattened tensor (PyTorch's
/// `argmax()` without a dim), as a 0-dim tensor.
fn arg_all(a: In<'_>, max: bool) -> Result<Out> {
    let flat = ops::shape::reshape(a.value, &[-1])?;
    Ok(Out::untracked(ops::reduce::arg_reduce(
        &flat, 0, false, max,
    )?))
}

/// The dynamic front's `sum` of a `bool` tensor: counted in `i64` (PyTorch sums integers and
/// `bool` as `int64`, exactly: `(a == b).sum()` is a count).
fn counted(a: In<'_>, f: impl FnOnce(In<'_>) -> Result<Out>) -> Result<Out> {
    if a.value.dtype == DType::Bool {
        return super::binary::with_dtype(a, DType::I64, f);
    }
    f(a)
}

/// The dynamic front's `max`/`min` of a `bool` tensor: a `bool` (any / all), as PyTorch's
/// kernels give it, through `i64`.
fn logical(a: In<'_>, f: impl FnOnce(In<'_>) -> Result<Out>) -> Result<Out> {
    if a.value.dtype != DType::Bool {
        return f(a);
    }
    let ints = super::binary::with_dtype(a, DType::I64, f)?;
    super::copy::cast(ints.input(), DType::Bool)
}

declare_ops! {
    /// Sum over dimensions `dims` (all when empty), dropping them unless `keepdim`.
    Numeric fn sum_dims(x, dims: Dims, keepdim: bool) -> Same
        = sum_mean(x, dims, keepdim, false),
        dynamic counted(x, |x| sum_mean(x, dims, keepdim, false));
    /// Sum over `dim`, dropping it (PyTorch's `x.sum(dim)`).
    Numeric fn sum_dim(x, dim: isize) -> Same = sum_mean(x, &[dim], false, false),
        dynamic counted(x, |x| sum_mean(x, &[dim], false, false));
    /// Sum of all elements, as a 0-dim tensor (PyTorch's `x.sum()`).
    ///
    /// ```
    /// use devtype::prelude::*;
    /// let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], [2, 2], Cpu);
    /// assert_eq!(x.sum().item(), 10.0);
    /// assert_eq!(x.mean().item(), 2.5);
    /// assert_eq!(x.sum_dim(0).to_vec(), [4.0, 6.0]);
    /// ```
    Numeric fn sum(x) -> Same = sum_mean(x, &[], false, false),
        dynamic counted(x, |x| sum_mean(x, &[], false, false));
    /// Sum of all elements: the older name of [`sum`](Self::sum), kept as an alias.
    Numeric fn sum_all(x) -> Same = sum_mean(x, &[], false, false),
        dynamic counted(x, |x| sum_mean(x, &[], false, false));
    /// Mean over dimensions `dims` (all when empty), dropping them unless `keepdim`.
    Float fn mean_dims(x, dims: Dims, keepdim: bool) -> Same
        = sum_mean(x, dims, keepdim, true);
    /// Mean over `dim`, dropping it (PyTorch's `x.mean(dim)`).
    Float fn mean_dim(x, dim: isize) -> Same = sum_mean(x, &[dim], false, true);
    /// Mean of all elements, as a 0-dim tensor (PyTorch's `x.mean()`).
    Float fn mean(x) -> Same = sum_mean(x, &[], false, true);
    /// Mean of all elements: the older name of [`mean`](Self::mean), kept as an alias.
    Float fn mean_all(x) -> Same = sum_mean(x, &[], false, true);
    /// Max of all elements, as a 0-dim tensor; ties share the gradient.
    Numeric fn max_all(x) -> Same = extreme_all(x, true),
        dynamic logical(x, |x| extreme_all(x, true));
    /// Min of all elements, as a 0-dim tensor; ties share the gradient.
    Numeric fn min_all(x) -> Same = extreme_all(x, false),
        dynamic logical(x, |x| extreme_all(x, false));
    /// The index of the max along `dim` (the first on ties), as `i64`.
    Numeric fn argmax(x, dim: isize) -> Long
        no_grad("an index result") = arg_dim(x, dim, false, true);
    /// The index of the min along `dim` (the first on ties), as `i64`.
    Numeric fn argmin(x, dim: isize) -> Long
        no_grad("an index result") = arg_dim(x, dim, false, false);
    /// The index of the max of all elements in the flattened tensor (PyTorch's `argmax()`).
    Numeric fn argmax_all(x) -> Long
        no_grad("an index result") = arg_all(x, true);
    /// The index of the min of all elements in the flattened tensor (PyTorch's `argmin()`).
    Numeric fn argmin_all(x) -> Long
        no_grad("an index result") = arg_all(x, false);
}
