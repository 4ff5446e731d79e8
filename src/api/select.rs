//! Ops along one dimension that look at a whole line, and filling by a mask: `cumsum`,
//! `sort`/`argsort`/`topk` (values with their indices), `masked_fill`. Forward, backward
//! rules, and the declarations.

use super::declare::declare_ops;
use crate::core::error::{Error, Result};
use crate::core::layout::{wrap_dim, Dims};
use crate::core::raw::RawTensor;
use crate::core::{DType, Scalar};
use crate::dyn_tensor::check::same_device_elementwise;
use crate::graph::{record, In, Out};
use crate::ops;
use crate::tensor::{ArgumentOn, HasDevice};

/// PyTorch's `(values, indices)` result (`torch.return_types.max`, `.sort`, `.topk`): the
/// values, and where each came from along the dim (`i64`). Destructure it, or turn it into a
/// tuple with `.into()`.
///
/// ```
/// use devtype::prelude::*;
/// let x = Tensor::from_vec(vec![1.0f32, 5.0, 3.0, 4.0, 2.0, 6.0], [2, 3], Cpu);
/// let best = x.max(1);
/// assert_eq!(best.values.to_vec(), [5.0, 6.0]);
/// assert_eq!(best.indices.to_vec(), [1, 2]);
/// let (values, indices) = x.topk(2, 1, true, true).into();
/// assert_eq!(values.to_vec(), [5.0, 3.0, 6.0, 4.0]);
/// assert_eq!(indices.to_vec(), [1, 2, 2, 0]);
/// ```
#[derive(Clone, Debug)]
pub struct ValuesIndices<V, I> {
    /// The values (tracked: the gradient goes back to where each came from).
    pub values: V,
    /// Their positions along the dim, as `i64`.
    pub indices: I,
}

impl<V, I> From<ValuesIndices<V, I>> for (V, I) {
    fn from(r: ValuesIndices<V, I>) -> (V, I) {
        (r.values, r.indices)
    }
}

/// The running sum along `dim`, recorded: the gradient is the running sum of the gradient from
/// the end (PyTorch's `cumsum` backward).
pub(crate) fn cumsum(a: In<'_>, dim: isize) -> Result<Out> {
    let value = ops::sort::cumsum(a.value, dim, false)?;
    let node = record("CumsumBackward0", &[a.node], |_| {
        move |g| Ok(vec![Some(ops::sort::cumsum(&g, dim, true)?)])
    });
    Ok(Out { value, node })
}

/// The dynamic front's `cumsum` of a `bool` tensor: counted in `i64`, as PyTorch.
fn cumsum_dyn(a: In<'_>, dim: isize) -> Result<Out> {
    if a.value.dtype == DType::Bool {
        return super::binary::with_dtype(a, DType::I64, |a| cumsum(a, dim));
    }
    cumsum(a, dim)
}

/// The gradient of values picked along `d` at `indices`: `g` scattered back (added) into
/// zeros of the input's shape.
fn picked(name: &'static str, a: In<'_>, value: RawTensor, indices: &RawTensor, d: usize) -> Out {
    let node = record(name, &[a.node], |_| {
        let (shape, index, device) = (a.value.shape().to_vec(), indices.clone(), a.value.device);
        move |g| {
            if shape.is_empty() {
                return Ok(vec![Some(g)]);
            }
            Ok(vec![Some(ops::index::scatter::scatter_add(
                &shape, d, &index, &g, device,
            )?)])
        }
    });
    Out { value, node }
}

/// The first `k` of each line along `dim` in order (`sort`: `k` = the line's length), recorded.
fn sorted(
    name: &'static str,
    a: In<'_>,
    dim: isize,
    descending: bool,
    k: usize,
) -> Result<(Out, Out)> {
    let (values, indices) = ops::sort::sort(a.value, dim, descending, k)?;
    let d = wrap_dim(dim, a.value.rank())?;
    let values = picked(name, a, values, &indices, d);
    Ok((values, Out::untracked(indices)))
}

/// `sort(dim, descending)`, stable.
pub(crate) fn sort(a: In<'_>, dim: isize, descending: bool) -> Result<(Out, Out)> {
    let d = wrap_dim(dim, a.value.rank())?;
    let n = if a.value.rank() == 0 {
        1
    } else {
        a.value.shape()[d]
    };
    sorted("SortBackward0", a, dim, descending, n)
}

/// `topk(k, dim, largest, sorted)`: always sorted (PyTorch leaves the order unspecified
/// when `sorted` is false; sorted is one such order), ties by index.
pub(crate) fn topk(a: In<'_>, k: usize, dim: isize, largest: bool) -> Result<(Out, Out)> {
    sorted("TopkBackward0", a, dim, largest, k)
}

/// Max or min along `dim` with the index picked (the first on ties, the first NaN if any),
/// recorded: the gradient goes to that element.
pub(crate) fn extreme_indexed(
    a: In<'_>,
    dim: isize,
    keepdim: bool,
    max: bool,
) -> Result<(Out, Out)> {
    if a.value.rank() == 0 || a.value.numel() == 0 {
        // A scalar, or nothing to pick from (the reductions' own errors).
        let values = super::reduce::extreme_dim(a, dim, keepdim, max)?;
        let indices = ops::reduce::arg_reduce(a.value, dim, keepdim, max)?;
        return Ok((values, Out::untracked(indices)));
    }
    // One pass over the data: where the extreme is, then the values gathered from there.
    let d = wrap_dim(dim, a.value.rank())?;
    let at = ops::reduce::arg_reduce(a.value, dim, true, max)?;
    let kept = at.shape().to_vec();
    let values = ops::index::gather(a.value, d as isize, &at)?;
    let (values, indices) = if keepdim {
        (values, at.clone())
    } else {
        let mut squeezed = kept.clone();
        squeezed.remove(d);
        (
            super::kit::reshape(&values, &squeezed)?,
            super::kit::reshape(&at, &squeezed)?,
        )
    };
    let name = if max { "MaxBackward0" } else { "MinBackward0" };
    let node = record(name, &[a.node], |_| {
        let (shape, device) = (a.value.shape().to_vec(), a.value.device);
        move |g| {
            let g = super::kit::reshape(&g, &kept)?;
            Ok(vec![Some(ops::index::scatter::scatter_add(
                &shape, d, &at, &g, device,
            )?)])
        }
    });
    Ok((
        Out {
            value: values,
            node,
        },
        Out::untracked(indices),
    ))
}

/// The dynamic front's `max(dim)`/`min(dim)` of `bool`: through `i64`, the values back to
/// `bool` (PyTorch runs them on `bool`).
fn extreme_dyn(a: In<'_>, dim: isize, keepdim: bool, max: bool) -> Result<(Out, Out)> {
    if a.value.dtype != DType::Bool {
        return extreme_indexed(a, dim, keepdim, max);
    }
    let wide = super::copy::cast(a, DType::I64)?;
    let (values, indices) = extreme_indexed(wide.input(), dim, keepdim, max)?;
    Ok((super::copy::cast(values.input(), DType::Bool)?, indices))
}

/// PyTorch's check of a fill value against the tensor's type (`value cannot be converted to
/// type c10::Half without overflow`): a finite value must be finite in the type, an integer
/// type takes only values in its range.
fn checked_fill(value: Scalar, dtype: DType) -> Result<Scalar> {
    let overflow = || {
        Error::Shape(format!(
            "value cannot be converted to type {} without overflow",
            match dtype {
                DType::I64 => "int64_t",
                other => other.type_meta_name(),
            }
        ))
    };
    let v = value.to_f64();
    // As PyTorch's `checked_convert`: a float outside the type's finite range overflows
    // (infinities and NaN pass into the float types; NaN does not pass into `i64`).
    let float_fits = |max: f64| !v.is_finite() || v.abs() <= max;
    let fits = match (dtype, value) {
        (_, Scalar::Bool(_)) | (DType::I64 | DType::F64 | DType::Bool, Scalar::Int(_)) => true,
        (DType::I64, _) => (i64::MIN as f64..-(i64::MIN as f64)).contains(&v),
        (DType::F16, _) => float_fits(65504.0),
        (DType::BF16, _) => float_fits(3.389_531_389_251_535_5e38),
        (DType::F32, _) => float_fits(f32::MAX as f64),
        _ => true,
    };
    if fits {
        Ok(value)
    } else {
        Err(overflow())
    }
}

/// `a` with `value` where `mask` holds (broadcast together), recorded: the gradient passes
/// where the mask does not hold.
pub(crate) fn masked_fill(a: In<'_>, mask: &RawTensor, value: Scalar) -> Result<Out> {
    if mask.dtype != DType::Bool {
        return Err(Error::Shape(format!(
            "masked_fill_ only supports boolean masks, but got mask with dtype {}",
            mask.dtype.type_meta_name()
        )));
    }
    let value = checked_fill(value, a.value.dtype)?;
    let fill = ops::creation::create(
        Dims::EMPTY,
        a.value.dtype,
        a.value.device,
        ops::creation::Fill::Constant(value),
    )?;
    let out = ops::where_cond::where_cond(mask, &fill, a.value)?;
    let node = record("MaskedFillBackward0", &[a.node], |_| {
        let (m, shape) = (mask.clone(), a.value.shape().to_vec());
        move |g| {
            let zero = super::kit::full_scalar(0.0, &g)?;
            let kept = ops::where_cond::where_cond(&m, &zero, &g)?;
            Ok(vec![Some(super::kit::sum_to(kept, &shape)?)])
        }
    });
    Ok(Out { value: out, node })
}

declare_ops! {
    /// The running sum along `dim` (PyTorch's `x.cumsum(dim)`); the dynamic front counts
    /// `bool` in `i64`, as PyTorch.
    ///
    /// ```
    /// use devtype::prelude::*;
    /// let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], [2, 2], Cpu);
    /// assert_eq!(x.cumsum(1).to_vec(), [1.0, 3.0, 3.0, 7.0]);
    /// assert_eq!(x.cumsum(0).to_vec(), [1.0, 2.0, 4.0, 6.0]);
    /// ```
    Numeric fn cumsum(x, dim: isize) -> Same = cumsum(x, dim),
        dynamic cumsum_dyn(x, dim);
    /// Each line along `dim` sorted, with where each value came from (PyTorch's
    /// `x.sort(dim, descending, stable=True)`): equal values keep their order, NaN sorts above
    /// every number.
    ///
    /// ```
    /// use devtype::prelude::*;
    /// let x = Tensor::from_vec(vec![3.0f32, 1.0, 2.0, 1.0], [4], Cpu);
    /// let s = x.sort(0, false);
    /// assert_eq!(s.values.to_vec(), [1.0, 1.0, 2.0, 3.0]);
    /// assert_eq!(s.indices.to_vec(), [1, 3, 2, 0]);
    /// assert_eq!(x.argsort(0, true).to_vec(), [0, 2, 1, 3]);
    /// ```
    Numeric fn sort(x, dim: isize, descending: bool) -> Pair = sort(x, dim, descending);
    /// The indices that sort each line along `dim` (PyTorch's `x.argsort(dim, descending,
    /// stable=True)`).
    Numeric fn argsort(x, dim: isize, descending: bool) -> Long
        no_grad("an index result") = sort(x, dim, descending).map(|(_, i)| i);
    /// The `k` largest (or smallest) of each line along `dim`, in order, with their indices
    /// (PyTorch's `x.topk(k, dim, largest, sorted)`; the result is sorted either way, equal
    /// values by index). `k` larger than the line is `selected index k out of range`.
    Numeric fn topk(x, k: usize, dim: isize, largest: bool, sorted: bool) -> Pair
        = { let _ = sorted; topk(x, k, dim, largest) };
    /// `value` where `mask` holds, else `self`, broadcast together (PyTorch's
    /// `x.masked_fill(mask, value)`): a `bool` mask on the same device; a value the type cannot
    /// hold is PyTorch's overflow error.
    ///
    /// ```
    /// use devtype::prelude::*;
    /// let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], [3], Cpu);
    /// let mask = Tensor::from_vec(vec![true, false, true], [3], Cpu);
    /// assert_eq!(x.masked_fill(&mask, -1.0).to_vec(), [-1.0, 2.0, -1.0]);
    /// ```
    Element fn masked_fill(x, mask: (impl ArgumentOn<D> + HasDevice<Element = bool>), value: Scalar) -> Same
        check { same_device_elementwise(&[x.value, mask.value], true)?; }
        = masked_fill(x, mask.value, value);
    /// The max along `dim` and where it is (PyTorch's `x.max(dim)`, a
    /// [`ValuesIndices`]): the first index on ties, the first NaN when there is one; the
    /// gradient goes to the element picked. [`max_all`](Self::max_all) is PyTorch's `x.max()`.
    Numeric fn max(x, dim: isize) -> Pair = extreme_indexed(x, dim, false, true),
        dynamic extreme_dyn(x, dim, false, true);
    /// [`max`](Self::max) keeping `dim` with size 1 (PyTorch's `x.max(dim, keepdim=True)`).
    Numeric fn max_keepdim(x, dim: isize) -> Pair = extreme_indexed(x, dim, true, true),
        dynamic extreme_dyn(x, dim, true, true);
    /// The min along `dim` and where it is (PyTorch's `x.min(dim)`); see [`max`](Self::max).
    Numeric fn min(x, dim: isize) -> Pair = extreme_indexed(x, dim, false, false),
        dynamic extreme_dyn(x, dim, false, false);
    /// [`min`](Self::min) keeping `dim` with size 1.
    Numeric fn min_keepdim(x, dim: isize) -> Pair = extreme_indexed(x, dim, true, false),
        dynamic extreme_dyn(x, dim, true, false);
}
