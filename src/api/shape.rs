//! Shape ops (reshape, view, transpose, permute, squeeze, unsqueeze, flatten, narrow, expand,
//! contiguous): forward, backward rules, and the declarations. Their gradients are
//! views or reshapes of the incoming gradient; only `narrow` pads with zeros.

use super::declare::declare_ops;
use super::kit;
use crate::core::error::Result;
use crate::core::layout::wrap_dim;
use crate::core::raw::RawTensor;
use crate::dyn_tensor::check::same_device_elementwise;
use crate::graph::{record, In, Out};
use crate::ops;
use crate::tensor::{ElementIs, OperandOn};

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

/// `x` with `src` in place of `x.narrow(dim, start, end - start)`: a new tensor (PyTorch's
/// `torch.slice_scatter`, which is not in-place there either), built as the `cat` of the part
/// before, `src` and the part after, so gradients flow to both `x` and `src`. `start` and
/// `end` are clamped to the dimension as a Python slice is; `src` is converted to `x`'s dtype,
/// as PyTorch's `copy_` converts it.
fn slice_scatter(x: In<'_>, src: In<'_>, dim: isize, start: usize, end: usize) -> Result<Out> {
    let d = wrap_dim(dim, x.value.rank())?;
    let size = x.value.shape()[d];
    let end = end.min(size);
    let start = start.min(end);
    let mut slice = x.value.shape().to_vec();
    slice[d] = end - start;
    if src.value.shape() != &slice[..] {
        return Err(crate::Error::Shape(format!(
            "expected src to have a size equal to the slice of self. src size = {:?}, slice size = {:?}",
            src.value.shape(),
            slice
        )));
    }
    let converted;
    let src = if src.value.dtype == x.value.dtype {
        src
    } else {
        converted = super::copy::cast(src, x.value.dtype)?;
        converted.input()
    };
    let head = narrow(x, d as isize, 0, start)?;
    let tail = narrow(x, d as isize, end, size - end)?;
    super::cat::join(&[head.input(), src, tail.input()], d as isize, false)
}

/// `x` with `src` in place of `x.select(dim, index)` (PyTorch's `torch.select_scatter`).
fn select_scatter(x: In<'_>, src: In<'_>, dim: isize, index: isize) -> Result<Out> {
    let d = wrap_dim(dim, x.value.rank())?;
    let size = x.value.shape()[d];
    let i = if index < 0 {
        index + size as isize
    } else {
        index
    };
    if i < 0 || i >= size as isize {
        // PyTorch's `select` (which `select_scatter` calls) says it this way.
        return Err(crate::Error::Shape(format!(
            "select(): index {index} out of range for tensor of size {:?} at dimension {d}",
            x.value.shape()
        )));
    }
    let mut slice = x.value.shape().to_vec();
    slice.remove(d);
    if src.value.shape() != &slice[..] {
        return Err(crate::Error::Shape(format!(
            "expected src to have a size equal to the slice of self. src size = {:?}, slice size = {:?}",
            src.value.shape(),
            slice
        )));
    }
    let src = unsqueeze(src, d as isize)?;
    slice_scatter(x, src.input(), d as isize, i as usize, i as usize + 1)
}

declare_ops! {
    /// The same elements with another shape; one size may be `-1`. A view when the strides
    /// allow, else a copy.
    Element fn reshape(x, shape: Dims) -> Same = reshape(x, shape);
    /// A view with another shape (sharing the storage); fails when that needs a copy. As every
    /// view, it is never written through: see [`narrow`](Self::narrow).
    Element fn view(x, shape: Dims) -> Same = view(x, shape);
    /// Swaps two dimensions (a view: it shares the storage, and nothing is copied).
    ///
    /// devtype's tensors are values: an in-place operator (`+=`, `add_`, ...) on a view, or on
    /// the tensor it was taken from, rebinds that one tensor and never writes into the shared
    /// storage, so the other keeps its values (PyTorch writes through). To change part of a
    /// tensor, use [`slice_scatter`](Self::slice_scatter) or
    /// [`select_scatter`](Self::select_scatter).
    Element fn transpose(x, dim0: isize, dim1: isize) -> Same = transpose(x, dim0, dim1);
    /// The transpose of a matrix (a view, never written through: see [`narrow`](Self::narrow));
    /// vectors and scalars come back unchanged.
    Element fn t(x) -> Same = t(x);
    /// The dimensions in a new order (a view, never written through: see
    /// [`narrow`](Self::narrow)).
    Element fn permute(x, order: Dims) -> Same = permute(x, order);
    /// A new dimension of size 1 at `dim` (a view, never written through: see
    /// [`narrow`](Self::narrow)).
    Element fn unsqueeze(x, dim: isize) -> Same = unsqueeze(x, dim);
    /// Removes `dim` if its size is 1 (a view, never written through: see
    /// [`narrow`](Self::narrow)).
    Element fn squeeze(x, dim: isize) -> Same = squeeze(x, dim);
    /// Merges dimensions `start..=end` into one.
    Element fn flatten(x, start: isize, end: isize) -> Same = flatten(x, start, end);
    /// `len` elements of `dim` from `start` (a view: it shares the storage, and nothing is
    /// copied).
    ///
    /// devtype's tensors are values: `v += 1.0` on a view rebinds `v` and leaves the tensor it
    /// came from as it was (PyTorch writes through the view into the shared storage). To write
    /// a slice, build the new tensor: `x = x.slice_scatter(&v, dim, start, start + len)`.
    ///
    /// ```
    /// use devtype::prelude::*;
    /// let base = Tensor::<Cpu>::zeros([4], Cpu);
    /// let mut v = base.narrow(0, 1, 2);
    /// v += 1.0;
    /// assert_eq!(base.to_vec(), [0.0; 4]);
    /// assert_eq!(base.slice_scatter(&v, 0, 1, 3).to_vec(), [0.0, 1.0, 1.0, 0.0]);
    /// ```
    Element fn narrow(x, dim: isize, start: usize, len: usize) -> Same
        = narrow(x, dim, start, len);
    /// This tensor broadcast to `shape` (a view: size-1 dims repeat with stride 0); `-1` keeps
    /// a dimension's size, as in PyTorch, so `reshape` and `expand` take the same shapes. An
    /// in-place operator on the result rebinds it to a full-size tensor (PyTorch refuses it:
    /// its elements overlap in memory); the source is never written.
    Element fn expand(x, shape: Dims) -> Same = expand_to(x, shape);
    /// A new tensor: `self` with `src` in place of `self.narrow(dim, start, end - start)`
    /// (PyTorch's `torch.slice_scatter` with step 1). This is how to assign into a slice:
    /// devtype's in-place operators rebind the tensor they are applied to and never write
    /// through a view (see [`narrow`](Self::narrow)), so `x = x.slice_scatter(&rows, 0, 2, 4)`
    /// is what PyTorch's `x[2:4] = rows` does. `start` and `end` are clamped to the dimension
    /// as a Python slice's bounds are; `src` must have the slice's shape (else PyTorch's
    /// `expected src to have a size equal to the slice of self. ...`). Gradients flow to both.
    ///
    /// ```
    /// use devtype::prelude::*;
    /// let x = Tensor::<Cpu>::zeros([4], Cpu);
    /// let x = x.slice_scatter(&Tensor::ones([2], Cpu), 0, 1, 3);
    /// assert_eq!(x.to_vec(), [0.0, 1.0, 1.0, 0.0]);
    /// ```
    Element fn slice_scatter(x, src: (impl OperandOn<D> + ElementIs<E>), dim: isize, start: usize, end: usize) -> Same
        check { same_device_elementwise(&[x.value, src.value], false)?; }
        = slice_scatter(x, src, dim, start, end);
    /// A new tensor: `self` with `src` in place of `self.select(dim, index)` (PyTorch's
    /// `torch.select_scatter`; `index` may be negative); `src` has that slice's shape. See
    /// [`slice_scatter`](Self::slice_scatter).
    Element fn select_scatter(x, src: (impl OperandOn<D> + ElementIs<E>), dim: isize, index: isize) -> Same
        check { same_device_elementwise(&[x.value, src.value], false)?; }
        = select_scatter(x, src, dim, index);
    /// A contiguous copy, or the same tensor when already contiguous.
    Element fn contiguous(x) -> Same = contiguous(x);
}
