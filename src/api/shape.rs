//! Shape ops (reshape, view, transpose, permute, squeeze, unsqueeze, flatten, narrow, expand,
//! contiguous): forward, backward rules, and the declarations. Their gradients are
//! views or reshapes of the incoming gradient; only `narrow` pads with zeros.

use super::declare::declare_ops;
use super::kit;
use crate::core::error::Result;
use crate::core::layout::wrap_dim;
use crate::core::raw::RawTensor;
use crate::graph::{record, In, Out};
use crate::ops;

/// Records an op whose output holds the input's elements in the same order: its gradient is
/// the incoming one reshaped back.
fn same_order(a: In<'_>, value: RawTensor, name: &'static str) -> Out {
    let node = record(name, &[a.node], |_| {
        let shape = a.value.shape().to_vec();
        move |g| Ok(vec![Some(kit::reshape(&g, &shape)?)])
    });
    Out { value, node }
}

pub(crate) fn reshape(a: In<'_>, shape: &[isize]) -> Result<Out> {
    Ok(same_order(
        a,
        ops::shape::reshape(a.value, shape)?,
        "ViewBackward0",
    ))
}

pub(crate) fn view(a: In<'_>, shape: &[isize]) -> Result<Out> {
    Ok(same_order(
        a,
        ops::shape::view(a.value, shape)?,
        "ViewBackward0",
    ))
}

pub(crate) fn squeeze(a: In<'_>, dim: isize) -> Result<Out> {
    Ok(same_order(
        a,
        ops::shape::squeeze(a.value, dim)?,
        "SqueezeBackward1",
    ))
}

pub(crate) fn unsqueeze(a: In<'_>, dim: isize) -> Result<Out> {
    Ok(same_order(
        a,
        ops::shape::unsqueeze(a.value, dim)?,
        "UnsqueezeBackward0",
    ))
}

pub(crate) fn flatten(a: In<'_>, start: isize, end: isize) -> Result<Out> {
    Ok(same_order(
        a,
        ops::shape::flatten(a.value, start, end)?,
        "ViewBackward0",
    ))
}

pub(crate) fn contiguous(a: In<'_>) -> Result<Out> {
    Ok(same_order(a, a.value.contiguous()?, "CloneBackward0"))
}

pub(crate) fn transpose(a: In<'_>, d0: isize, d1: isize) -> Result<Out> {
    let value = ops::shape::transpose(a.value, d0, d1)?;
    let node = record("TransposeBackward0", &[a.node], |_| {
        move |g| Ok(vec![Some(ops::shape::transpose(&g, d0, d1)?)])
    });
    Ok(Out { value, node })
}

pub(crate) fn permute(a: In<'_>, order: &[isize]) -> Result<Out> {
    let value = ops::shape::permute(a.value, order)?;
    let node = record("PermuteBackward0", &[a.node], |_| {
        let rank = a.value.rank();
        let mut inverse = vec![0isize; order.len()];
        for (i, &d) in order.iter().enumerate() {
            let d = wrap_dim(d, rank).expect("checked by the forward");
            inverse[d] = i as isize;
        }
        move |g| Ok(vec![Some(ops::shape::permute(&g, &inverse)?)])
    });
    Ok(Out { value, node })
}

pub(crate) fn narrow(a: In<'_>, dim: isize, start: usize, len: usize) -> Result<Out> {
    let value = ops::shape::narrow(a.value, dim, start, len)?;
    let node = record("NarrowBackward0", &[a.node], |_| {
        let shape = a.value.shape().to_vec();
        move |g| {
            let d = wrap_dim(dim, shape.len())?;
            let zeros = |n: usize| -> Result<RawTensor> {
                let mut s = shape.clone();
                s[d] = n;
                kit::zeros(&s, &g)
            };
            let mut parts = Vec::with_capacity(3);
            if start > 0 {
                parts.push(zeros(start)?);
            }
            parts.push(g.clone());
            let after = shape[d] - start - len;
            if after > 0 {
                parts.push(zeros(after)?);
            }
            let refs: Vec<&RawTensor> = parts.iter().collect();
            Ok(vec![Some(ops::cat::cat(&refs, d as isize)?)])
        }
    });
    Ok(Out { value, node })
}

pub(crate) fn expand(a: In<'_>, shape: &[usize]) -> Result<Out> {
    let value = ops::shape::expand(a.value, shape)?;
    let node = record("ExpandBackward0", &[a.node], |_| {
        let input = a.value.shape().to_vec();
        move |g| Ok(vec![Some(kit::sum_to(g, &input)?)])
    });
    Ok(Out { value, node })
}

/// The transpose of a matrix; vectors and scalars come back unchanged (PyTorch's `t()`).
fn t(a: In<'_>) -> Result<Out> {
    match a.value.rank() {
        0 | 1 => contiguous_view(a),
        2 => transpose(a, 0, 1),
        r => Err(crate::Error::Shape(format!(
            "t() expects a tensor with <= 2 dimensions, but self is {r}D"
        ))),
    }
}

/// The same tensor (a new handle, in the graph as an identity).
fn contiguous_view(a: In<'_>) -> Result<Out> {
    Ok(same_order(a, a.value.clone(), "AliasBackward0"))
}

/// `expand` with PyTorch's sizes: `-1` keeps the size of an existing dimension.
fn expand_to(a: In<'_>, sizes: &[isize]) -> Result<Out> {
    let shape = a.value.shape();
    let lead = sizes.len().checked_sub(shape.len()).ok_or_else(|| {
        crate::Error::Shape(format!(
            "expand: the number of sizes provided ({}) must be greater or equal to the number of dimensions in the tensor ({})",
            sizes.len(),
            shape.len()
        ))
    })?;
    let mut target = Vec::with_capacity(sizes.len());
    for (i, &s) in sizes.iter().enumerate() {
        target.push(match s {
            -1 if i < lead => {
                return Err(crate::Error::Shape(format!(
                    "The expanded size of the tensor (-1) isn't allowed in a leading, non-existing dimension {i}"
                )))
            }
            -1 => shape[i - lead],
            s if s < 0 => {
                return Err(crate::Error::Shape(format!(
                    "Trying to create tensor with negative dimension {s}: {sizes:?}"
                )))
            }
            s => s as usize,
        });
    }
    expand(a, &target)
}

declare_ops! {
    /// The same elements with another shape; one size may be `-1`. A view when the strides
    /// allow, else a copy.
    Element fn reshape(x, shape: Dims) -> Same check {} = reshape(x, shape);
    /// A view with another shape; fails when that needs a copy.
    Element fn view(x, shape: Dims) -> Same check {} = view(x, shape);
    /// Swaps two dimensions (a view).
    Element fn transpose(x, dim0: isize, dim1: isize) -> Same check {} = transpose(x, dim0, dim1);
    /// The transpose of a matrix (a view); vectors and scalars come back unchanged.
    Element fn t(x) -> Same check {} = t(x);
    /// The dimensions in a new order (a view).
    Element fn permute(x, order: Dims) -> Same check {} = permute(x, order);
    /// A new dimension of size 1 at `dim` (a view).
    Element fn unsqueeze(x, dim: isize) -> Same check {} = unsqueeze(x, dim);
    /// Removes `dim` if its size is 1 (a view).
    Element fn squeeze(x, dim: isize) -> Same check {} = squeeze(x, dim);
    /// Merges dimensions `start..=end` into one.
    Element fn flatten(x, start: isize, end: isize) -> Same check {} = flatten(x, start, end);
    /// `len` elements of `dim` from `start` (a view).
    Element fn narrow(x, dim: isize, start: usize, len: usize) -> Same check {}
        = narrow(x, dim, start, len);
    /// This tensor broadcast to `shape` (a view: size-1 dims repeat with stride 0); `-1` keeps
    /// a dimension's size, as in PyTorch, so `reshape` and `expand` take the same shapes.
    Element fn expand(x, shape: Dims) -> Same check {} = expand_to(x, shape);
    /// A contiguous copy, or the same tensor when already contiguous.
    Element fn contiguous(x) -> Same check {} = contiguous(x);
}
