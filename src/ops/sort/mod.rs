//! Ops along one dimension that look at a whole line: `cumsum` (an inclusive scan) and `sort`
//! (values and their source indices; `topk` is its first `k`).
//!
//! Both see the input as `[outer, n, inner]` around the dim `d` (`n` its size), and make the
//! input contiguous first (one copy when it is a view).

pub(super) mod cpu;
pub(super) mod cuda;

use crate::core::error::{Error, Result};
use crate::core::layout::{wrap_dim, Dims};
use crate::core::raw::RawTensor;
use crate::core::DType;

/// `[outer, n, inner]` around dim `d` of `shape` (a 0-dim tensor is one line of one).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Lines {
    pub(crate) outer: usize,
    pub(crate) n: usize,
    pub(crate) inner: usize,
}

impl Lines {
    pub(crate) fn new(shape: &[usize], d: usize) -> Self {
        if shape.is_empty() {
            return Lines {
                outer: 1,
                n: 1,
                inner: 1,
            };
        }
        Lines {
            outer: shape[..d].iter().product(),
            n: shape[d],
            inner: shape[d + 1..].iter().product(),
        }
    }
}

/// The inclusive running sum along `dim` (from the end when `reverse`: the backward rule).
/// `bool` is refused here (the dynamic front sums it as `i64`, as PyTorch).
pub(crate) fn cumsum(a: &RawTensor, dim: isize, reverse: bool) -> Result<RawTensor> {
    let d = wrap_dim(dim, a.rank())?;
    if a.dtype == DType::Bool {
        return Err(Error::UnsupportedDType {
            op: "cumsum",
            dtype: a.dtype,
        });
    }
    let a = a.contiguous()?;
    let lines = Lines::new(a.shape(), d);
    dispatch!([&a], |be| be.cumsum(&a, lines, reverse))
}

/// Each line along `dim` sorted (ascending, or descending), stable: equal values keep their
/// order, and NaN sorts above every number (as PyTorch's `sort(stable=True)`). Only the first
/// `k` of each line are kept (`topk`; `k = n` for `sort`). Returns the values and their
/// indices along `dim` (`i64`).
pub(crate) fn sort(
    a: &RawTensor,
    dim: isize,
    descending: bool,
    k: usize,
) -> Result<(RawTensor, RawTensor)> {
    let d = wrap_dim(dim, a.rank())?;
    let size = if a.rank() == 0 { 1 } else { a.shape()[d] };
    if k > size {
        return Err(Error::Shape("selected index k out of range".into()));
    }
    if a.dtype == DType::Bool {
        return Err(Error::UnsupportedDType {
            op: "sort",
            dtype: a.dtype,
        });
    }
    let a = a.contiguous()?;
    let lines = Lines::new(a.shape(), d);
    let mut shape = crate::core::layout::Dims::shape(a.shape())?;
    if a.rank() > 0 {
        shape[d] = k;
    }
    dispatch!([&a], |be| be.sort(&a, lines, descending, k, shape))
}

/// The kernel entries of this family, one impl per backend: [`CpuBackend`](crate::ops::backend::CpuBackend)
/// in `cpu.rs`, [`CudaBackend`](crate::ops::backend::CudaBackend) in `cuda.rs`. The operands are on
/// that backend's device (`dispatch!` checked it) and the functions above planned shapes
/// and checked dtypes.
pub(crate) trait SortKernel {
    fn cumsum(self, a: &RawTensor, lines: Lines, reverse: bool) -> Result<RawTensor>;
    fn sort(
        self,
        a: &RawTensor,
        lines: Lines,
        descending: bool,
        k: usize,
        shape: Dims,
    ) -> Result<(RawTensor, RawTensor)>;
}
