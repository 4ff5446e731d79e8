//! Creation directly on a device: fills, ranges and random values. On a GPU the values are
//! written by a kernel; nothing passes through the host.

pub(super) mod cpu;
pub(super) mod cuda;

use crate::core::error::Result;
use crate::core::layout::Dims;
use crate::core::raw::RawTensor;
use crate::core::DynDevice;
use crate::core::{DType, Scalar};

/// How values are produced.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Fill {
    /// Every element the same (exactly, for integers).
    Constant(Scalar),
    /// `start + i * step`.
    Range { start: f64, step: f64 },
    /// Uniform in `[0, 1)` from the random stream.
    Uniform { seed: u64, offset: u64 },
    /// Standard normal from the random stream.
    Normal { seed: u64, offset: u64 },
}

impl Fill {
    /// Uniform values, reserving `numel` positions of the global stream.
    pub(crate) fn uniform(numel: usize) -> Fill {
        let (seed, offset) = crate::random::reserve(numel as u64);
        Fill::Uniform { seed, offset }
    }

    /// Normal values, reserving `2 * numel + 1` positions of the global stream.
    pub(crate) fn normal(numel: usize) -> Fill {
        let (seed, offset) = crate::random::reserve(2 * numel as u64 + 1);
        Fill::Normal {
            seed,
            offset: offset.div_ceil(2),
        }
    }
}

/// A new contiguous tensor of `shape` on `device` filled by `fill`.
pub(crate) fn create(
    shape: Dims,
    dtype: DType,
    device: DynDevice,
    fill: Fill,
) -> Result<RawTensor> {
    dispatch!(device = device, |be| be.create(shape, dtype, fill))
}
