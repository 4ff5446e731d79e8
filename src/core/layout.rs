//! Shapes, strides and views: how a tensor's elements sit in its storage.

use crate::core::error::{Error, Result};
use std::fmt;
use std::ops::{Deref, DerefMut};

/// The most dimensions a tensor can have.
pub const MAX_DIMS: usize = 8;

/// A short list of sizes or strides, stored inline (no allocation per op).
///
/// Equality and hashing look at the `len` values in use only (the slots past `len` may hold
/// leftovers of `remove`).
#[derive(Clone, Copy)]
pub(crate) struct Dims {
    len: u8,
    values: [usize; MAX_DIMS],
}

impl Dims {
    pub(crate) const EMPTY: Dims = Dims {
        len: 0,
        values: [0; MAX_DIMS],
    };

    /// A shape: at most [`MAX_DIMS`] sizes whose element count fits (see [`checked_numel`]).
    /// Every shape a tensor gets is made here or checked with [`Dims::check_shape`].
    pub(crate) fn shape(values: &[usize]) -> Result<Self> {
        if values.len() > MAX_DIMS {
            return Err(Error::TooManyDims {
                max: MAX_DIMS,
                got: values.len(),
            });
        }
        let mut d = Dims::EMPTY;
        d.len = values.len() as u8;
        d.values[..values.len()].copy_from_slice(values);
        d.check_shape()?;
        Ok(d)
    }

    /// The element count of this shape, or [`Error::SizeOverflow`] when no tensor of it can
    /// exist (see [`checked_numel`]).
    #[inline]
    pub(crate) fn check_shape(&self) -> Result<usize> {
        checked_numel(self)
    }

    /// `len` copies of `value`.
    pub(crate) fn filled(len: usize, value: usize) -> Self {
        debug_assert!(len <= MAX_DIMS);
        let mut d = Dims::EMPTY;
        d.len = len as u8;
        d.values[..len].fill(value);
        d
    }

    pub(crate) fn push(&mut self, value: usize) -> Result<()> {
        if self.len() == MAX_DIMS {
            return Err(Error::TooManyDims {
                max: MAX_DIMS,
                got: MAX_DIMS + 1,
            });
        }
        self.values[self.len as usize] = value;
        self.len += 1;
        Ok(())
    }

    pub(crate) fn insert(&mut self, at: usize, value: usize) -> Result<()> {
        self.push(0)?;
        let n = self.len();
        self.values.copy_within(at..n - 1, at + 1);
        self.values[at] = value;
        Ok(())
    }

    pub(crate) fn remove(&mut self, at: usize) -> usize {
        let n = self.len();
        let v = self.values[at];
        self.values.copy_within(at + 1..n, at);
        self.len -= 1;
        v
    }
}

impl PartialEq for Dims {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        // A plain loop: a tensor has a handful of dims, too few for a `memcmp` call to pay.
        self.len == other.len && self.iter().zip(other.iter()).all(|(a, b)| a == b)
    }
}

impl Eq for Dims {}

impl std::hash::Hash for Dims {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (**self).hash(state)
    }
}

impl Deref for Dims {
    type Target = [usize];
    #[inline]
    fn deref(&self) -> &[usize] {
        &self.values[..self.len as usize]
    }
}

impl DerefMut for Dims {
    #[inline]
    fn deref_mut(&mut self) -> &mut [usize] {
        &mut self.values[..self.len as usize]
    }
}

impl fmt::Debug for Dims {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// Row-major strides of a contiguous tensor of `shape`.
#[inline]
pub(crate) fn contiguous_strides(shape: &[usize]) -> Dims {
    let mut strides = Dims::EMPTY;
    strides.len = shape.len() as u8;
    let mut acc = 1usize;
    for (s, &size) in strides.values[..shape.len()].iter_mut().zip(shape).rev() {
        *s = acc;
        acc *= size.max(1);
    }
    strides
}

/// The most elements a tensor may have, and the most its contiguous strides may span: the
/// byte size of the widest element type (8 bytes) must still fit in `isize`, as every
/// allocator requires. Sizes are checked against it once, where a shape is made, so all later
/// arithmetic on sizes, strides and offsets (`numel`, `offset + i * stride`) cannot overflow.
pub(crate) const MAX_NUMEL: usize = isize::MAX as usize / 8;

/// The number of elements of `shape`, or PyTorch's error when it (or the strides of a
/// contiguous tensor of that shape, which an empty tensor has too) exceeds [`MAX_NUMEL`]: no
/// such tensor can exist, and nothing is allocated for it.
#[inline]
pub(crate) fn checked_numel(shape: &[usize]) -> Result<usize> {
    let mut numel = 1usize;
    let mut extent = 1usize;
    for &s in shape {
        numel = numel.saturating_mul(s);
        extent = extent.saturating_mul(s.max(1));
    }
    if extent > MAX_NUMEL {
        return Err(Error::SizeOverflow {
            sizes: shape.to_vec(),
        });
    }
    Ok(numel)
}

/// Normalises a possibly negative dimension index (`-1` is the last), as PyTorch's `maybe_wrap_dim`.
pub(crate) fn wrap_dim(dim: isize, rank: usize) -> Result<usize> {
    let r = rank.max(1) as isize;
    if dim < -r || dim >= r {
        return Err(Error::DimOutOfRange {
            dim,
            min: -r,
            max: r - 1,
        });
    }
    Ok(if dim < 0 {
        (dim + r) as usize
    } else {
        dim as usize
    })
}

/// The shape two shapes broadcast to, with PyTorch's error when they do not.
pub(crate) fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Dims> {
    let rank = a.len().max(b.len());
    let mut out = Dims::filled(rank, 1);
    for i in 0..rank {
        let da = if i + a.len() >= rank {
            a[i + a.len() - rank]
        } else {
            1
        };
        let db = if i + b.len() >= rank {
            b[i + b.len() - rank]
        } else {
            1
        };
        out[i] = if da == db || db == 1 {
            da
        } else if da == 1 {
            db
        } else {
            return Err(Error::BroadcastMismatch {
                a: da,
                b: db,
                dim: i,
            });
        };
    }
    out.check_shape()?;
    Ok(out)
}

/// Where the elements of a tensor are: sizes, strides (in elements) and a start offset.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct Layout {
    pub(crate) shape: Dims,
    pub(crate) strides: Dims,
    pub(crate) offset: usize,
}

impl fmt::Debug for Layout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Layout({:?}, strides {:?}, offset {})",
            self.shape, self.strides, self.offset
        )
    }
}

impl Layout {
    /// A contiguous row-major layout.
    #[inline(always)]
    pub(crate) fn contiguous(shape: Dims) -> Self {
        Layout {
            strides: contiguous_strides(&shape),
            shape,
            offset: 0,
        }
    }

    #[cfg(test)]
    pub(crate) fn from_shape(shape: &[usize]) -> Result<Self> {
        Ok(Layout::contiguous(Dims::shape(shape)?))
    }

    #[inline]
    pub(crate) fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    #[inline]
    pub(crate) fn rank(&self) -> usize {
        self.shape.len()
    }

    /// True when the elements are in row-major order with no gaps (size-1 dims ignored; an
    /// empty tensor is contiguous, as in PyTorch).
    #[inline]
    pub(crate) fn is_contiguous(&self) -> bool {
        self.contiguous_range().is_some()
    }

    /// The element range `offset..offset+numel` when contiguous.
    #[inline]
    pub(crate) fn contiguous_range(&self) -> Option<std::ops::Range<usize>> {
        // One pass for both questions: this runs on every operand of every op.
        let mut expected = 1usize;
        let mut in_order = true;
        for (&size, &stride) in self.shape.iter().zip(self.strides.iter()).rev() {
            if size != 1 {
                in_order &= stride == expected;
                expected = expected.wrapping_mul(size);
            }
        }
        // `expected` is now the element count; an empty tensor is contiguous whatever its
        // strides.
        (in_order || expected == 0).then(|| self.offset..self.offset + expected)
    }

    /// The same elements seen with `shape`, by zero strides on broadcast dims.
    pub(crate) fn broadcast_to(&self, shape: &[usize]) -> Result<Layout> {
        let target = Dims::shape(shape)?;
        let rank = shape.len();
        if rank < self.rank() {
            return Err(Error::Shape(format!(
                "The expanded size of the tensor ({}) must match the existing size ({}) at non-singleton dimension 0.  Target sizes: {:?}.  Tensor sizes: {:?}",
                rank, self.rank(), shape, &*self.shape
            )));
        }
        let mut strides = Dims::filled(rank, 0);
        let lead = rank - self.rank();
        for i in 0..self.rank() {
            let (have, want) = (self.shape[i], shape[lead + i]);
            strides[lead + i] = if have == want {
                self.strides[i]
            } else if have == 1 {
                0
            } else {
                return Err(Error::Shape(format!(
                    "The expanded size of the tensor ({want}) must match the existing size ({have}) at non-singleton dimension {}.  Target sizes: {:?}.  Tensor sizes: {:?}",
                    lead + i, shape, &*self.shape
                )));
            };
        }
        Ok(Layout {
            shape: target,
            strides,
            offset: self.offset,
        })
    }

    /// Swaps two dimensions (a view).
    pub(crate) fn transpose(&self, a: usize, b: usize) -> Layout {
        let mut l = *self;
        l.shape.swap(a, b);
        l.strides.swap(a, b);
        l
    }

    /// Reorders dimensions (a view).
    pub(crate) fn permute(&self, order: &[usize]) -> Result<Layout> {
        if order.len() != self.rank() {
            return Err(Error::PermuteRank {
                rank: self.rank(),
                given: order.len(),
            });
        }
        let mut seen = [false; MAX_DIMS];
        let mut l = *self;
        for (i, &d) in order.iter().enumerate() {
            if d >= self.rank() {
                return Err(Error::DimOutOfRange {
                    dim: d as isize,
                    min: -(self.rank() as isize),
                    max: self.rank() as isize - 1,
                });
            }
            if seen[d] {
                return Err(Error::PermuteDuplicate);
            }
            seen[d] = true;
            l.shape[i] = self.shape[d];
            l.strides[i] = self.strides[d];
        }
        Ok(l)
    }

    /// A view with `shape` when the strides allow one (PyTorch's `computeStride`), else `None`.
    pub(crate) fn view(&self, shape: &[usize]) -> Result<Option<Layout>> {
        let new_shape = Dims::shape(shape)?;
        if self.is_contiguous() {
            return Ok(Some(Layout {
                strides: contiguous_strides(&new_shape),
                shape: new_shape,
                offset: self.offset,
            }));
        }
        let numel = self.numel();
        if numel == 0 {
            return Ok(Some(Layout {
                strides: contiguous_strides(&new_shape),
                shape: new_shape,
                offset: self.offset,
            }));
        }
        // Walk the old dims from the back in chunks that are contiguous among themselves.
        let mut new_strides = Dims::filled(shape.len(), 0);
        let old = &self.shape;
        let old_st = &self.strides;
        let mut view_d = shape.len() as isize - 1;
        let mut chunk_base_stride = *old_st.last().unwrap_or(&1);
        let mut tensor_numel = 1usize;
        let mut view_numel = 1usize;
        for tensor_d in (0..old.len()).rev() {
            tensor_numel *= old[tensor_d];
            if tensor_d == 0
                || (old[tensor_d - 1] != 1
                    && old_st[tensor_d - 1] != tensor_numel * chunk_base_stride)
            {
                while view_d >= 0 && (view_numel < tensor_numel || shape[view_d as usize] == 1) {
                    new_strides[view_d as usize] = view_numel * chunk_base_stride;
                    view_numel *= shape[view_d as usize];
                    view_d -= 1;
                }
                if view_numel != tensor_numel {
                    return Ok(None);
                }
                if tensor_d > 0 {
                    chunk_base_stride = old_st[tensor_d - 1];
                    tensor_numel = 1;
                    view_numel = 1;
                }
            }
        }
        if view_d != -1 {
            return Ok(None);
        }
        Ok(Some(Layout {
            shape: new_shape,
            strides: new_strides,
            offset: self.offset,
        }))
    }
}

/// Resolves a shape given with at most one `-1` (as `reshape(-1, 4)`) for `numel` elements.
pub(crate) fn infer_shape(shape: &[isize], numel: usize) -> Result<Vec<usize>> {
    let mut out = Vec::with_capacity(shape.len());
    let mut infer_at = None;
    let mut known = 1usize;
    for (i, &s) in shape.iter().enumerate() {
        if s == -1 {
            if infer_at.is_some() {
                return Err(Error::Shape("only one dimension can be inferred".into()));
            }
            infer_at = Some(i);
            out.push(1);
        } else if s < 0 {
            return Err(Error::Shape(format!("invalid shape dimension {s}")));
        } else {
            known *= s as usize;
            out.push(s as usize);
        }
    }
    let shown = || shape.iter().map(|&s| s as i64).collect::<Vec<_>>();
    if let Some(i) = infer_at {
        if known == 0 || !numel.is_multiple_of(known) {
            return Err(Error::Shape(format!(
                "shape '{:?}' is invalid for input of size {numel}",
                shown()
            )));
        }
        out[i] = numel / known;
    } else if known != numel {
        return Err(Error::ReshapeNumel { shape: out, numel });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting_follows_numpy_rules() {
        assert_eq!(&*broadcast_shapes(&[4, 1, 3], &[2, 1]).unwrap(), &[4, 2, 3]);
        assert_eq!(
            broadcast_shapes(&[3], &[4]).unwrap_err().to_string(),
            "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0"
        );
    }

    #[test]
    fn views_of_transposes_need_copies() {
        let l = Layout::from_shape(&[2, 3, 4]).unwrap();
        assert!(l.view(&[6, 4]).unwrap().is_some());
        let t = l.transpose(1, 2); // [2, 4, 3]
        assert!(t.view(&[2, 12]).unwrap().is_none());
        let v = t.view(&[1, 2, 4, 3]).unwrap().unwrap();
        assert_eq!(&*v.strides, &[24, 12, 1, 4]);
        assert!(t.view(&[8, 3]).unwrap().is_none());
        assert_eq!(&*t.view(&[2, 4, 3]).unwrap().unwrap().strides, &[12, 1, 4]);
    }

    #[test]
    fn dims_wrap_like_pytorch() {
        assert_eq!(wrap_dim(-1, 3).unwrap(), 2);
        assert_eq!(
            wrap_dim(3, 3).unwrap_err().to_string(),
            "Dimension out of range (expected to be in range of [-3, 2], but got 3)"
        );
    }
}
