//! Indexing that reads like PyTorch's `x[1, :, 2:5]`: `x.i((1, .., 2..5))`. Single indices
//! drop their dim, ranges keep it (clamped to the size, negative ends counted from the end, as
//! Python's slices), `..` takes the whole dim; dims not named are taken whole. Every result is
//! a view (narrow, then squeeze: no copy), tracked as those ops.

use super::declare::declare_ops;
use crate::core::error::{Error, Result};
use crate::graph::{In, Out};

/// One position of an index: a single index (the dim is dropped) or a slice (kept).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexItem {
    /// `x[i]`: one index, negative from the end; the dim is dropped.
    Select(i64),
    /// `x[start:end]`: either end may be missing or negative, as Python's slices.
    Slice(Option<i64>, Option<i64>),
}

/// A list of [`IndexItem`]s, one per leading dim (what `index` takes).
pub type IndexItems<'a> = &'a [IndexItem];

/// What [`Tensor::i`](crate::Tensor::i) takes: an index, a range, `..`, or a tuple of them
/// (one per leading dim).
pub trait IndexSpec {
    /// The items, one per dim from the first.
    fn items(self) -> Vec<IndexItem>;
}

macro_rules! int_specs {
    ($($t:ty),*) => {$(
        impl IndexSpec for $t {
            fn items(self) -> Vec<IndexItem> {
                vec![IndexItem::Select(self as i64)]
            }
        }
        impl IndexSpec for std::ops::Range<$t> {
            fn items(self) -> Vec<IndexItem> {
                vec![IndexItem::Slice(Some(self.start as i64), Some(self.end as i64))]
            }
        }
        impl IndexSpec for std::ops::RangeInclusive<$t> {
            fn items(self) -> Vec<IndexItem> {
                let end = *self.end() as i64;
                // `a..=-1` is "to the end".
                let end = if end == -1 { None } else { Some(end + 1) };
                vec![IndexItem::Slice(Some(*self.start() as i64), end)]
            }
        }
        impl IndexSpec for std::ops::RangeFrom<$t> {
            fn items(self) -> Vec<IndexItem> {
                vec![IndexItem::Slice(Some(self.start as i64), None)]
            }
        }
        impl IndexSpec for std::ops::RangeToInclusive<$t> {
            fn items(self) -> Vec<IndexItem> {
                let end = self.end as i64;
                let end = if end == -1 { None } else { Some(end + 1) };
                vec![IndexItem::Slice(None, end)]
            }
        }
        impl IndexSpec for std::ops::RangeTo<$t> {
            fn items(self) -> Vec<IndexItem> {
                vec![IndexItem::Slice(None, Some(self.end as i64))]
            }
        }
    )*};
}
int_specs!(i32, i64, isize, usize);

impl IndexSpec for std::ops::RangeFull {
    fn items(self) -> Vec<IndexItem> {
        vec![IndexItem::Slice(None, None)]
    }
}

impl IndexSpec for IndexItem {
    fn items(self) -> Vec<IndexItem> {
        vec![self]
    }
}

macro_rules! tuple_specs {
    ($(($($n:ident),+)),*) => {$(
        impl<$($n: IndexSpec),+> IndexSpec for ($($n,)+) {
            #[allow(non_snake_case)]
            fn items(self) -> Vec<IndexItem> {
                let ($($n,)+) = self;
                let mut v = Vec::new();
                $(v.extend($n.items());)+
                v
            }
        }
    )*};
}
tuple_specs!(
    (A),
    (A, B),
    (A, B, C),
    (A, B, C, D),
    (A, B, C, D, E),
    (A, B, C, D, E, F)
);

/// The view `items` pick, recorded as narrows and squeezes.
pub(crate) fn index(a: In<'_>, items: &[IndexItem]) -> Result<Out> {
    let rank = a.value.rank();
    if items.len() > rank {
        return Err(Error::Shape(format!(
            "too many indices for tensor of dimension {rank}"
        )));
    }
    let mut out: Option<Out> = None;
    let mut selected = Vec::new();
    for (d, item) in items.iter().enumerate() {
        let n = a.value.shape()[d] as i64;
        let (start, len) = match *item {
            IndexItem::Select(i) => {
                if i < -n || i >= n {
                    return Err(Error::Shape(format!(
                        "index {i} is out of bounds for dimension {d} with size {n}"
                    )));
                }
                selected.push(d);
                (if i < 0 { i + n } else { i }, 1)
            }
            IndexItem::Slice(start, end) => {
                let clamp = |v: i64| (if v < 0 { v + n } else { v }).clamp(0, n);
                let s = start.map_or(0, clamp);
                let e = end.map_or(n, clamp);
                if s == 0 && e == n {
                    continue;
                }
                (s, (e - s).max(0))
            }
        };
        let input = out.as_ref().map_or(a, Out::input);
        out = Some(super::shape::narrow(
            input,
            d as isize,
            start as usize,
            len as usize,
        )?);
    }
    // The selected dims dropped, the last first so the earlier numbers hold.
    for &d in selected.iter().rev() {
        let input = out.as_ref().map_or(a, Out::input);
        out = Some(super::shape::squeeze(input, d as isize)?);
    }
    match out {
        Some(out) => Ok(out),
        None => super::shape::reshape(a, &super::kit::signed(a.value.shape())),
    }
}

declare_ops! {
    /// The view of `items` (one per leading dim), as PyTorch's `x[...]`; see
    /// [`i`](Self::i) for the short form.
    Element fn index(x, items: IndexItems) -> Same = index(x, items);
}

impl<D: crate::device::Device, E: crate::core::Element> crate::Tensor<D, E> {
    /// PyTorch's `x[1, :, 2:5]` as `x.i((1, .., 2..5))`: single indices drop their dim,
    /// ranges keep it (clamped; negative ends from the end), `..` takes a dim whole, dims not
    /// named are whole. A view: no copy; the gradient flows back into the source's places.
    ///
    /// ```
    /// use devtype::prelude::*;
    /// let x = Tensor::from_vec((0..12).map(|v| v as f32).collect(), [3, 4], Cpu);
    /// assert_eq!(x.i(1).to_vec(), [4.0, 5.0, 6.0, 7.0]);
    /// assert_eq!(x.i((.., 1..3)).shape(), &[3, 2]);
    /// assert_eq!(x.i((-1, 2)).item(), 10.0);
    /// assert_eq!(x.i((1.., -1)).to_vec(), [7.0, 11.0]);
    /// ```
    #[track_caller]
    pub fn i(&self, spec: impl IndexSpec) -> Self {
        self.index(&spec.items())
    }

    /// [`i`](Self::i), returning PyTorch's error (`index 5 is out of bounds for dimension 0
    /// with size 3`, `too many indices for tensor of dimension 2`) instead of panicking.
    pub fn try_i(&self, spec: impl IndexSpec) -> Result<Self> {
        self.try_index(&spec.items())
    }
}

impl crate::DynTensor {
    /// PyTorch's `x[1, :, 2:5]` as `x.i((1, .., 2..5))`; see [`Tensor::i`](crate::Tensor::i).
    pub fn i(&self, spec: impl IndexSpec) -> Result<crate::DynTensor> {
        self.index(&spec.items())
    }
}
