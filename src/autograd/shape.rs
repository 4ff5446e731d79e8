//! Shape ops (reshape, view, transpose, permute, squeeze, unsqueeze, flatten, narrow, expand,
//! contiguous): forward, backward rules, and the `Var`/`DynVar` methods. Their gradients are
//! views or reshapes of the incoming gradient; only `narrow` pads with zeros.

use super::dyn_var::DynVar;
use super::kit;
use super::var::{In, Out, Var};
use crate::core::error::Result;
use crate::core::layout::wrap_dim;
use crate::core::raw::RawTensor;
use crate::device::Device;
use crate::graph::record;
use crate::ops;
use crate::tensor::{infallible, Float};

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

impl<D: Device, E: Float> Var<D, E> {
    /// The same elements with another shape; one size may be `-1`.
    pub fn try_reshape(&self, shape: &[isize]) -> Result<Self> {
        Ok(self.wrap(reshape(self.input(), shape)?))
    }
    infallible!(
        /// The same elements with another shape; one size may be `-1`.
        pub fn reshape(&self, shape: &[isize]) -> Self
    );
    /// A view with another shape; fails when that needs a copy.
    pub fn try_view(&self, shape: &[isize]) -> Result<Self> {
        Ok(self.wrap(view(self.input(), shape)?))
    }
    infallible!(
        /// A view with another shape; fails when that needs a copy.
        pub fn view(&self, shape: &[isize]) -> Self
    );
    /// Swaps two dimensions (a view).
    pub fn try_transpose(&self, dim0: isize, dim1: isize) -> Result<Self> {
        Ok(self.wrap(transpose(self.input(), dim0, dim1)?))
    }
    infallible!(
        /// Swaps two dimensions (a view).
        pub fn transpose(&self, dim0: isize, dim1: isize) -> Self
    );
    /// The transpose of a matrix (a view); vectors and scalars come back unchanged.
    pub fn try_t(&self) -> Result<Self> {
        if self.dims() < 2 {
            return Ok(self.clone());
        }
        if self.dims() > 2 {
            return Err(crate::Error::Shape(format!(
                "t() expects a tensor with <= 2 dimensions, but self is {}D",
                self.dims()
            )));
        }
        self.try_transpose(0, 1)
    }
    infallible!(
        /// The transpose of a matrix (a view); vectors and scalars come back unchanged.
        pub fn t(&self) -> Self
    );
    /// Reorders the dimensions (a view).
    pub fn try_permute(&self, order: &[isize]) -> Result<Self> {
        Ok(self.wrap(permute(self.input(), order)?))
    }
    infallible!(
        /// Reorders the dimensions (a view).
        pub fn permute(&self, order: &[isize]) -> Self
    );
    /// Inserts a dimension of size 1 at `dim`.
    pub fn try_unsqueeze(&self, dim: isize) -> Result<Self> {
        Ok(self.wrap(unsqueeze(self.input(), dim)?))
    }
    infallible!(
        /// Inserts a dimension of size 1 at `dim`.
        pub fn unsqueeze(&self, dim: isize) -> Self
    );
    /// Removes dimension `dim` if its size is 1.
    pub fn try_squeeze(&self, dim: isize) -> Result<Self> {
        Ok(self.wrap(squeeze(self.input(), dim)?))
    }
    infallible!(
        /// Removes dimension `dim` if its size is 1.
        pub fn squeeze(&self, dim: isize) -> Self
    );
    /// Merges dimensions `start..=end` into one.
    pub fn try_flatten(&self, start: isize, end: isize) -> Result<Self> {
        Ok(self.wrap(flatten(self.input(), start, end)?))
    }
    infallible!(
        /// Merges dimensions `start..=end` into one.
        pub fn flatten(&self, start: isize, end: isize) -> Self
    );
    /// Elements `start..start + len` along `dim` (a view).
    pub fn try_narrow(&self, dim: isize, start: usize, len: usize) -> Result<Self> {
        Ok(self.wrap(narrow(self.input(), dim, start, len)?))
    }
    infallible!(
        /// Elements `start..start + len` along `dim` (a view).
        pub fn narrow(&self, dim: isize, start: usize, len: usize) -> Self
    );
    /// Broadcasts to `shape` without copying; the gradient is summed back.
    pub fn try_expand(&self, shape: &[usize]) -> Result<Self> {
        Ok(self.wrap(expand(self.input(), shape)?))
    }
    infallible!(
        /// Broadcasts to `shape` without copying; the gradient is summed back.
        pub fn expand(&self, shape: &[usize]) -> Self
    );
    /// A contiguous copy, or the same tensor when already contiguous.
    pub fn try_contiguous(&self) -> Result<Self> {
        Ok(self.wrap(contiguous(self.input())?))
    }
    infallible!(
        /// A contiguous copy, or the same tensor when already contiguous.
        pub fn contiguous(&self) -> Self
    );
}

impl DynVar {
    /// The same elements with another shape; one size may be `-1`.
    pub fn reshape(&self, shape: &[isize]) -> Result<DynVar> {
        Ok(DynVar::from_out(reshape(self.input(), shape)?))
    }
    /// A view with another shape, or an error when that needs a copy.
    pub fn view(&self, shape: &[isize]) -> Result<DynVar> {
        Ok(DynVar::from_out(view(self.input(), shape)?))
    }
    /// Swaps two dimensions (a view).
    pub fn transpose(&self, dim0: isize, dim1: isize) -> Result<DynVar> {
        Ok(DynVar::from_out(transpose(self.input(), dim0, dim1)?))
    }
    /// Reorders the dimensions (a view).
    pub fn permute(&self, order: &[isize]) -> Result<DynVar> {
        Ok(DynVar::from_out(permute(self.input(), order)?))
    }
    /// Inserts a dimension of size 1.
    pub fn unsqueeze(&self, dim: isize) -> Result<DynVar> {
        Ok(DynVar::from_out(unsqueeze(self.input(), dim)?))
    }
    /// Removes dimension `dim` if its size is 1.
    pub fn squeeze(&self, dim: isize) -> Result<DynVar> {
        Ok(DynVar::from_out(squeeze(self.input(), dim)?))
    }
    /// Merges dimensions `start..=end`.
    pub fn flatten(&self, start: isize, end: isize) -> Result<DynVar> {
        Ok(DynVar::from_out(flatten(self.input(), start, end)?))
    }
    /// Elements `start..start + len` along `dim` (a view).
    pub fn narrow(&self, dim: isize, start: usize, len: usize) -> Result<DynVar> {
        Ok(DynVar::from_out(narrow(self.input(), dim, start, len)?))
    }
    /// Broadcasts to `shape` without copying.
    pub fn expand(&self, shape: &[usize]) -> Result<DynVar> {
        Ok(DynVar::from_out(expand(self.input(), shape)?))
    }
    /// A contiguous copy, or the same tensor when already contiguous.
    pub fn contiguous(&self) -> Result<DynVar> {
        Ok(DynVar::from_out(contiguous(self.input())?))
    }
}
