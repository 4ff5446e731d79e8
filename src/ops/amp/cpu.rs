//! CPU kernels of loss scaling: one pass over each gradient (split across threads for large
//! ones), and the scale schedule on two host values.

use super::ScaleSchedule;
use crate::backend::cpu::parallel::map_items;
use crate::backend::cpu::vmath::vectorized;
use crate::core::error::Result;
use crate::core::raw::RawTensor;
use crate::core::{DType, Element, Float};
use crate::ops::copy::cpu::make_unique;
use crate::ops::optim::OpMath;

/// Elements per parallel task.
const CHUNK: usize = 1 << 14;

/// `g *= inv` in place; true when a stored result is not finite. Branch-free, so it vectorizes
/// (as wide as the CPU allows: it runs inside `vectorized`).
#[inline(always)]
fn unscale_slice<T: OpMath>(g: &mut [T], inv: T::Acc) -> bool {
    let mut bad = false;
    for x in g {
        let out = T::down(x.up() * inv);
        bad |= !out.up().is_finite();
        *x = out;
    }
    bad
}

fn unscale_typed<T: OpMath>(grad: &mut RawTensor, inv_scale: f32) -> Result<bool> {
    make_unique::<T>(grad)?;
    let g = grad.unique_cpu_data::<T>().expect("made unique");
    let inv = T::Acc::from_f64(inv_scale as f64);
    let parallel = g.len() >= crate::backend::cpu::strided::PARALLEL_THRESHOLD && !cfg!(miri);
    Ok(if parallel {
        let chunks = g.chunks_mut(CHUNK).collect();
        map_items(chunks, &|c| {
            vectorized(
                #[inline(always)]
                || unscale_slice(c, inv),
            )
        })
        .into_iter()
        .any(|bad| bad)
    } else {
        vectorized(
            #[inline(always)]
            || unscale_slice(g, inv),
        )
    })
}

/// Writes one value into a 1-element tensor, in place (copying it first when shared).
fn store<T: Element>(t: &mut RawTensor, value: T) -> Result<()> {
    make_unique::<T>(t)?;
    t.unique_cpu_data::<T>().expect("made unique")[0] = value;
    Ok(())
}

pub(crate) fn unscale_(
    grad: &mut RawTensor,
    inv_scale: &RawTensor,
    found_inf: &mut RawTensor,
) -> Result<()> {
    let inv = inv_scale.item::<f32>()?;
    let bad = match grad.dtype {
        DType::F32 => unscale_typed::<f32>(grad, inv)?,
        DType::F64 => unscale_typed::<f64>(grad, inv)?,
        DType::F16 => unscale_typed::<half::f16>(grad, inv)?,
        DType::BF16 => unscale_typed::<half::bf16>(grad, inv)?,
        _ => unreachable!("checked in unscale_"),
    };
    if bad {
        store(found_inf, true)?;
    }
    Ok(())
}

pub(crate) fn update_scale_(
    scale: &mut RawTensor,
    growth_tracker: &mut RawTensor,
    found_inf: &RawTensor,
    schedule: ScaleSchedule,
) -> Result<()> {
    let (s, count) = super::next_scale(
        scale.item::<f32>()?,
        growth_tracker.item::<i64>()?,
        found_inf.item::<bool>()?,
        schedule,
    );
    store(scale, s)?;
    store(growth_tracker, count)
}

impl super::AmpKernel for crate::ops::backend::CpuBackend {
    #[inline(always)]
    fn unscale_(
        self,
        grad: &mut RawTensor,
        inv_scale: &RawTensor,
        found_inf: &mut RawTensor,
    ) -> Result<()> {
        unscale_(grad, inv_scale, found_inf)
    }
    #[inline(always)]
    fn update_scale_(
        self,
        scale: &mut RawTensor,
        growth_tracker: &mut RawTensor,
        found_inf: &RawTensor,
        schedule: ScaleSchedule,
    ) -> Result<()> {
        update_scale_(scale, growth_tracker, found_inf, schedule)
    }
}
