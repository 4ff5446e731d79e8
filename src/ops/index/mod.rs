//! Indexing by tensors of `i64`: `index_select` and `gather`.
//! Indices are checked before anything is allocated.

pub(super) mod cpu;
pub(super) mod cuda;
/// The gradients of `gather` (`scatter_add`) and `index_select` (`index_add`).
pub(crate) mod scatter;

use crate::core::error::{Error, Result};
use crate::core::layout::{wrap_dim, Dims};
use crate::core::raw::RawTensor;
use crate::core::DType;

fn check_index_dtype(op: &str, index: &RawTensor) -> Result<()> {
    if index.dtype != DType::I64 {
        return Err(Error::Shape(format!(
            "{op}(): Expected dtype int64 for index"
        )));
    }
    Ok(())
}

/// Rows (along `dim`) of `a` picked by the 1-D `index`.
pub(crate) fn index_select(a: &RawTensor, dim: isize, index: &RawTensor) -> Result<RawTensor> {
    check_index_dtype("index_select", index)?;
    if index.rank() > 1 {
        return Err(Error::Shape(
            "index_select(): Index is supposed to be a vector".into(),
        ));
    }
    let d = if a.rank() == 0 {
        wrap_dim(dim, 0)?
    } else {
        wrap_dim(dim, a.rank())?
    };
    if a.rank() == 0 && index.numel() != 1 {
        return Err(Error::Shape(format!(
            "index_select(): Index to scalar can have only 1 value, got {} value(s)",
            index.numel()
        )));
    }
    let mut shape = a.layout.shape;
    if a.rank() > 0 {
        shape[d] = index.numel();
    }
    dispatch!([a, index], |be| be.index_select(a, d, index, shape))
}

/// `out[i][j] = a[i][index[i][j]]` along `dim` (any rank): PyTorch's `gather`.
pub(crate) fn gather(a: &RawTensor, dim: isize, index: &RawTensor) -> Result<RawTensor> {
    check_index_dtype("gather", index)?;
    let d = wrap_dim(dim, a.rank())?;
    if index.rank() != a.rank() && !(a.rank() == 0 && index.rank() <= 1) {
        return Err(Error::Shape(
            "Index tensor must have the same number of dimensions as input tensor".into(),
        ));
    }
    for j in 0..a.rank() {
        if j != d && index.shape()[j] > a.shape()[j] {
            return Err(Error::Shape(format!(
                "Size does not match at dimension {j} expected index {:?} to be no larger than self {:?} apart from dimension {d}",
                index.shape(),
                a.shape()
            )));
        }
    }
    let shape: Dims = index.layout.shape;
    dispatch!([a, index], |be| be.gather(a, d, index, shape))
}

/// The kernel entries of this family, one impl per backend: [`CpuBackend`](crate::ops::backend::CpuBackend)
/// in `cpu.rs`, [`CudaBackend`](crate::ops::backend::CudaBackend) in `cuda.rs`. The operands are on
/// that backend's device (`dispatch!` checked it) and the functions above planned shapes
/// and checked dtypes.
pub(crate) trait IndexKernel {
    fn index_select(
        self,
        a: &RawTensor,
        d: usize,
        index: &RawTensor,
        shape: Dims,
    ) -> Result<RawTensor>;
    fn gather(self, a: &RawTensor, d: usize, index: &RawTensor, shape: Dims) -> Result<RawTensor>;
}
