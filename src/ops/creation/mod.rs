//! Creation directly on a device: fills, ranges and random values. On a GPU the values are
//! written by a kernel; nothing passes through the host.

pub(super) mod cpu;
pub(super) mod cuda;

use crate::core::error::{Error, Result};
use crate::core::layout::Dims;
use crate::core::raw::RawTensor;
use crate::core::DynDevice;
use crate::core::{DType, Scalar};
use crate::random::Draw;

/// How values are produced.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Fill {
    /// Every element the same (exactly, for integers).
    Constant(Scalar),
    /// `start + i * step`.
    Range { start: f64, step: f64 },
    /// Uniform in `[0, 1)` from the random stream: position `offset + i` for element `i`.
    Uniform(Draw),
    /// Standard normal from the random stream: element `i` from positions `2j` and `2j + 1`,
    /// `j = ceil(offset / 2) + i` (`offset` being the draw's first reserved position).
    Normal(Draw),
}

impl Fill {
    /// Uniform values made on `device`, reserving `numel` positions of the stream.
    pub(crate) fn uniform(numel: usize, device: DynDevice) -> Fill {
        Fill::Uniform(crate::random::reserve_on(device, numel as u64))
    }

    /// Normal values made on `device`, reserving `2 * numel + 1` positions of the stream.
    pub(crate) fn normal(numel: usize, device: DynDevice) -> Fill {
        Fill::Normal(crate::random::reserve_on(device, 2 * numel as u64 + 1))
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

/// Queues the write of `[seed, offset]` to the random state of a CUDA graph on `gpu` (two
/// `u64` at device address `state`), which the graph's draws read when they run (see
/// [`Draw`]).
pub(crate) fn set_rng_state(
    gpu: &'static crate::backend::cuda::context::GpuContext,
    state: u64,
    seed: u64,
    offset: u64,
) -> Result<()> {
    cuda::set_rng_state(gpu, state, seed, offset)
}

/// PyTorch's `torch.arange(start, end, step)` for `dtype`: the number of values and the `Fill`
/// that makes them, with PyTorch's checks in its order (`compute_arange_size`): a zero (or NaN)
/// step, a non-finite bound, a step pointing away from `end`, a size past `i64::MAX`.
///
/// For `I64` the bounds and the step are first converted to integers as PyTorch does
/// (checked: NaN or infinity is `value cannot be converted to type int64_t without overflow`;
/// then truncated toward zero), and the size is counted in integers.
pub(crate) fn arange(start: f64, end: f64, step: f64, dtype: DType) -> Result<(usize, Fill)> {
    let (start, end, step) = if dtype == DType::I64 {
        for v in [start, end, step] {
            Scalar::Float(v).check_fits(DType::I64)?;
        }
        (start.trunc(), end.trunc(), step.trunc())
    } else {
        (start, end, step)
    };
    // Zero and NaN (PyTorch's `xstep > 0 || xstep < 0` fails for both).
    if step == 0.0 || step.is_nan() {
        return Err(Error::Shape("step must be nonzero".into()));
    }
    if !(start.is_finite() && end.is_finite()) {
        return Err(Error::Shape(format!(
            "unsupported range: {} -> {}",
            cpp_float(start),
            cpp_float(end)
        )));
    }
    if !((step > 0.0 && end >= start) || (step < 0.0 && end <= start)) {
        return Err(Error::Shape(
            "upper bound and lower bound inconsistent with step sign".into(),
        ));
    }
    let size = if dtype == DType::I64 {
        // ceil((end - start) / step) in integers: (end - start + step - sgn) / step.
        let (s, e, st) = (start as i128, end as i128, step as i128);
        ((e - s + st - st.signum()) / st) as f64
    } else {
        ((end - start) / step).ceil()
    };
    if !(size >= 0.0 && size <= i64::MAX as f64) {
        return Err(Error::Shape("invalid size, possible overflow?".into()));
    }
    Ok((size as usize, Fill::Range { start, step }))
}

/// A number as C++'s `operator<<` prints a `double` by default (`%g`, 6 significant digits):
/// `0`, `0.5`, `1e+10`, `-inf`, `nan`.
pub(crate) fn cpp_float(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.into();
    }
    // The exponent after rounding to 6 significant digits decides the notation.
    let sci = format!("{x:.5e}");
    let (mantissa, exp) = sci.split_once('e').expect("`{:e}` has an exponent");
    let exp: i32 = exp.parse().expect("an integer exponent");
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if (-4..6).contains(&exp) {
        trim(&format!("{x:.*}", (5 - exp) as usize))
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    }
}

/// The kernel entries of this family, one impl per backend: [`CpuBackend`](crate::ops::backend::CpuBackend)
/// in `cpu.rs`, [`CudaBackend`](crate::ops::backend::CudaBackend) in `cuda.rs`. The operands are on
/// that backend's device (`dispatch!` checked it) and the functions above planned shapes
/// and checked dtypes.
pub(crate) trait CreationKernel {
    fn create(self, shape: Dims, dtype: DType, fill: Fill) -> Result<RawTensor>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpp_float_prints_as_ostream() {
        for (x, want) in [
            (0.0, "0"),
            (1.0, "1"),
            (0.5, "0.5"),
            (-2.25, "-2.25"),
            (0.1, "0.1"),
            (123456.0, "123456"),
            (1234567.0, "1.23457e+06"),
            (1e10, "1e+10"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1e-300, "1e-300"),
            (999999.5, "1e+06"),
            (f64::NAN, "nan"),
            (f64::NEG_INFINITY, "-inf"),
        ] {
            assert_eq!(cpp_float(x), want, "{x}");
        }
    }
}
