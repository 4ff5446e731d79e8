//! Loss scaling's two device ops, PyTorch's `_amp_foreach_non_finite_check_and_unscale_` and
//! `_amp_update_scale_`: with them a `GradScaler` step unscales each gradient in one pass,
//! notes a non-finite value on the device and moves the scale there, with no host sync.
//!
//! Both write in place: into the gradient and the flag (`unscale_`), into the scale and the
//! count (`update_scale_`). A buffer another handle shares is copied first, so no other handle
//! sees the write.

pub(super) mod cpu;
pub(super) mod cuda;

use crate::core::error::{Error, Result};
use crate::core::raw::RawTensor;
use crate::core::DType;

/// The settings of [`update_scale_`], PyTorch's arguments of `_amp_update_scale_`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ScaleSchedule {
    pub(crate) growth_factor: f32,
    pub(crate) backoff_factor: f32,
    pub(crate) growth_interval: i64,
}

/// `what` is one value of `dtype`, or an internal error: the scaler makes these tensors, so a
/// mismatch is a bug, never a user's mistake.
fn one(t: &RawTensor, dtype: DType, what: &'static str) -> Result<()> {
    if t.dtype == dtype && t.numel() == 1 {
        Ok(())
    } else {
        Err(Error::Internal {
            context: "ops::amp",
            message: format!(
                "{what} must be a 1-element {dtype} tensor, got {:?} of {}",
                t.shape(),
                t.dtype
            ),
        })
    }
}

/// `grad *= inv_scale`, in place, computed in the gradient's compute type and rounded once;
/// `found_inf` becomes `true` when a result is `inf` or NaN (and is left as it was otherwise,
/// so one flag collects every gradient of a step). `inv_scale` is one `f32`, `found_inf` one
/// `bool`, both on the gradient's device.
pub(crate) fn unscale_(
    grad: &mut RawTensor,
    inv_scale: &RawTensor,
    found_inf: &mut RawTensor,
) -> Result<()> {
    if !grad.dtype.is_float() {
        return Err(Error::Internal {
            context: "ops::amp",
            message: format!("unscale_: a gradient of {}", grad.dtype),
        });
    }
    one(inv_scale, DType::F32, "inv_scale")?;
    one(found_inf, DType::Bool, "found_inf")?;
    dispatch!([grad, inv_scale, found_inf], |be| be
        .unscale_(grad, inv_scale, found_inf))
}

/// The next scale and growth count after a step (in place): after a non-finite step,
/// `scale * backoff_factor` and the count restarts; otherwise the count advances, and when it
/// reaches `growth_interval` the scale grows by `growth_factor` (kept only if finite) and the
/// count restarts. `scale` is one `f32`, `growth_tracker` one `i64`, `found_inf` one `bool`.
pub(crate) fn update_scale_(
    scale: &mut RawTensor,
    growth_tracker: &mut RawTensor,
    found_inf: &RawTensor,
    schedule: ScaleSchedule,
) -> Result<()> {
    one(scale, DType::F32, "scale")?;
    one(growth_tracker, DType::I64, "growth_tracker")?;
    one(found_inf, DType::Bool, "found_inf")?;
    dispatch!([scale, growth_tracker, found_inf], |be| be.update_scale_(
        scale,
        growth_tracker,
        found_inf,
        schedule
    ))
}

/// The scale schedule on the host, for the CPU kernel and as the reference of the tests:
/// `(scale, growth_tracker)` after a step.
pub(crate) fn next_scale(
    scale: f32,
    tracker: i64,
    found_inf: bool,
    s: ScaleSchedule,
) -> (f32, i64) {
    if found_inf {
        return (scale * s.backoff_factor, 0);
    }
    let successful = tracker.saturating_add(1);
    if successful >= s.growth_interval {
        let grown = scale * s.growth_factor;
        (if grown.is_finite() { grown } else { scale }, 0)
    } else {
        (scale, successful)
    }
}

/// The kernel entries of this family, one impl per backend: [`CpuBackend`](crate::ops::backend::CpuBackend)
/// in `cpu.rs`, [`CudaBackend`](crate::ops::backend::CudaBackend) in `cuda.rs`. The operands are on
/// that backend's device (`dispatch!` checked it) and the functions above planned shapes
/// and checked dtypes.
pub(crate) trait AmpKernel {
    fn unscale_(
        self,
        grad: &mut RawTensor,
        inv_scale: &RawTensor,
        found_inf: &mut RawTensor,
    ) -> Result<()>;
    fn update_scale_(
        self,
        scale: &mut RawTensor,
        growth_tracker: &mut RawTensor,
        found_inf: &RawTensor,
        schedule: ScaleSchedule,
    ) -> Result<()>;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::DynDevice;

    fn t<E: crate::core::Element>(values: Vec<E>, shape: &[usize]) -> RawTensor {
        RawTensor::from_vec(values, shape, DynDevice::cpu()).unwrap()
    }

    fn flag() -> RawTensor {
        t(vec![false], &[])
    }

    #[test]
    fn unscale_multiplies_in_place_and_flags_any_non_finite_value() {
        // Several parallel chunks (Miri runs one thread, and takes a shorter run).
        let n = if cfg!(miri) { 3_000 } else { 70_000 };
        let values: Vec<f32> = (0..n).map(|i| (i as f32 - 3000.0) * 0.25).collect();
        let inv = t(vec![0.125f32], &[]);
        let mut g = t(values.clone(), &[n]);
        let mut found = flag();
        unscale_(&mut g, &inv, &mut found).unwrap();
        let want: Vec<f32> = values.iter().map(|v| v * 0.125).collect();
        assert_eq!(g.to_vec::<f32>().unwrap(), want);
        assert_eq!(found.to_vec::<bool>().unwrap(), [false]);
        for (at, bad) in [
            (0, f32::NAN),
            (n - 1, f32::INFINITY),
            (n / 2, f32::NEG_INFINITY),
        ] {
            let mut v = values.clone();
            v[at] = bad;
            let mut g = t(v, &[n]);
            let mut found = flag();
            unscale_(&mut g, &inv, &mut found).unwrap();
            assert_eq!(found.to_vec::<bool>().unwrap(), [true], "{bad} at {at}");
            // A later finite gradient does not clear the flag.
            unscale_(&mut t(vec![1.0f32], &[1]), &inv, &mut found).unwrap();
            assert_eq!(found.to_vec::<bool>().unwrap(), [true]);
        }
    }

    #[test]
    fn unscale_flags_values_that_overflow_only_once_unscaled() {
        // A scale below one: 60000 * 2 is finite in f32 but not in f16.
        let inv = t(vec![2.0f32], &[]);
        let mut g = t(vec![half::f16::from_f32(60000.0)], &[1]);
        let mut found = flag();
        unscale_(&mut g, &inv, &mut found).unwrap();
        assert_eq!(found.to_vec::<bool>().unwrap(), [true]);
        for dtype in [DType::F64, DType::BF16, DType::F16] {
            let mut g = crate::ops::copy::cast(&t(vec![1.5f32, -3.0], &[2]), dtype).unwrap();
            let mut found = flag();
            unscale_(&mut g, &t(vec![0.5f32], &[]), &mut found).unwrap();
            let back = crate::ops::copy::cast(&g, DType::F64).unwrap();
            assert_eq!(back.to_vec::<f64>().unwrap(), [0.75, -1.5], "{dtype}");
            assert_eq!(found.to_vec::<bool>().unwrap(), [false]);
        }
    }

    #[test]
    fn unscale_never_writes_a_shared_buffer_or_a_view() {
        let inv = t(vec![0.5f32], &[]);
        let mut g = t(vec![2.0f32, 4.0, 6.0, 8.0], &[2, 2]);
        let held = g.clone();
        unscale_(&mut g, &inv, &mut flag()).unwrap();
        assert_eq!(g.to_vec::<f32>().unwrap(), [1.0, 2.0, 3.0, 4.0]);
        assert_eq!(held.to_vec::<f32>().unwrap(), [2.0, 4.0, 6.0, 8.0]);
        // A transposed view is unscaled in its own order.
        let mut view = crate::ops::shape::transpose(&held, 0, 1).unwrap();
        unscale_(&mut view, &inv, &mut flag()).unwrap();
        assert_eq!(view.to_vec::<f32>().unwrap(), [1.0, 3.0, 2.0, 4.0]);
        assert_eq!(held.to_vec::<f32>().unwrap(), [2.0, 4.0, 6.0, 8.0]);
        // The flag is shared too: a held copy keeps its value.
        let mut found = flag();
        let seen = found.clone();
        unscale_(&mut t(vec![f32::NAN], &[1]), &inv, &mut found).unwrap();
        assert_eq!(found.to_vec::<bool>().unwrap(), [true]);
        assert_eq!(seen.to_vec::<bool>().unwrap(), [false]);
    }

    #[test]
    fn bad_operands_are_refused_before_anything_changes() {
        let mut g = t(vec![1.0f32, 2.0], &[2]);
        let mut found = flag();
        let wide = t(vec![0.5f32, 0.5], &[2]);
        assert!(unscale_(&mut g, &wide, &mut found).is_err());
        assert!(unscale_(&mut g, &t(vec![0.5f64], &[]), &mut found).is_err());
        assert!(unscale_(&mut g, &t(vec![0.5f32], &[]), &mut t(vec![0.0f32], &[])).is_err());
        assert!(unscale_(&mut t(vec![1i64], &[1]), &t(vec![0.5f32], &[]), &mut found).is_err());
        assert_eq!(g.to_vec::<f32>().unwrap(), [1.0, 2.0]);
        let mut scale = t(vec![4.0f32], &[]);
        let mut f32_tracker = t(vec![0.0f32], &[]);
        let s = ScaleSchedule {
            growth_factor: 2.0,
            backoff_factor: 0.5,
            growth_interval: 1,
        };
        assert!(update_scale_(&mut scale, &mut f32_tracker, &found, s).is_err());
        assert_eq!(scale.to_vec::<f32>().unwrap(), [4.0]);
    }

    #[test]
    fn update_scale_follows_pytorchs_schedule() {
        let s = ScaleSchedule {
            growth_factor: 2.0,
            backoff_factor: 0.5,
            growth_interval: 3,
        };
        // (found_inf, scale and count after the step), from PyTorch's `_amp_update_scale_`.
        let steps = [
            (false, 8.0, 1),
            (false, 8.0, 2),
            (false, 16.0, 0),
            (true, 8.0, 0),
            (false, 8.0, 1),
            (true, 4.0, 0),
            (false, 4.0, 1),
            (false, 4.0, 2),
            (false, 8.0, 0),
        ];
        let mut scale = t(vec![8.0f32], &[]);
        let mut tracker = t(vec![0i64], &[]);
        let (mut host_scale, mut host_tracker) = (8.0f32, 0i64);
        for (bad, want_scale, want_count) in steps {
            let found = t(vec![bad], &[]);
            update_scale_(&mut scale, &mut tracker, &found, s).unwrap();
            assert_eq!(scale.to_vec::<f32>().unwrap(), [want_scale]);
            assert_eq!(tracker.to_vec::<i64>().unwrap(), [want_count]);
            (host_scale, host_tracker) = next_scale(host_scale, host_tracker, bad, s);
            assert_eq!((host_scale, host_tracker), (want_scale, want_count));
        }
        // Growing to inf keeps the scale, and the count still restarts.
        let mut scale = t(vec![f32::MAX], &[]);
        let mut tracker = t(vec![2i64], &[]);
        update_scale_(&mut scale, &mut tracker, &t(vec![false], &[]), s).unwrap();
        assert_eq!(scale.to_vec::<f32>().unwrap(), [f32::MAX]);
        assert_eq!(tracker.to_vec::<i64>().unwrap(), [0]);
    }
}
