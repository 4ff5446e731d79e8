//! `softmax` and `log_softmax` along a dimension, computed stably (max subtracted first).

pub(super) mod cpu;
pub(super) mod cuda;

use crate::core::error::{Error, Result};
use crate::core::layout::wrap_dim;
use crate::core::raw::RawTensor;

/// `softmax(a, dim)`, or `log_softmax` when `log`.
pub(crate) fn softmax(a: &RawTensor, dim: isize, log: bool) -> Result<RawTensor> {
    if !a.dtype.is_float() {
        return Err(Error::UnsupportedDType {
            op: if log {
                "log_softmax_lastdim_kernel_impl"
            } else {
                "softmax_lastdim_kernel_impl"
            },
            dtype: a.dtype,
        });
    }
    if a.rank() == 0 {
        wrap_dim(dim, 0)?;
        let r = crate::ops::shape::reshape(a, &[1])?;
        let s = softmax(&r, 0, log)?;
        return crate::ops::shape::reshape(&s, &[]);
    }
    let d = wrap_dim(dim, a.rank())?;
    // Work on rows: move `dim` last and make the data contiguous (a no-op in the usual case).
    let last = a.rank() - 1;
    let moved = crate::ops::shape::transpose(a, d as isize, last as isize)?.contiguous()?;
    let out = dispatch!([&moved], |be| be.softmax(moved, log))?;
    crate::ops::shape::transpose(&out, d as isize, last as isize)?.contiguous()
}

/// The kernel entries of this family, one impl per backend: [`CpuBackend`](crate::ops::backend::CpuBackend)
/// in `cpu.rs`, [`CudaBackend`](crate::ops::backend::CudaBackend) in `cuda.rs`. The operands are on
/// that backend's device (`dispatch!` checked it) and the functions above planned shapes
/// and checked dtypes.
pub(crate) trait SoftmaxKernel {
    fn softmax(self, a: RawTensor, log: bool) -> Result<RawTensor>;
}
