//! CPU kernel for softmax over contiguous rows.

use crate::backend::cpu::parallel::for_each_chunk_mut;
use crate::backend::cpu::strided::PARALLEL_THRESHOLD;
use crate::backend::cpu::vmath::vectorized;
use crate::core::error::Result;
use crate::core::raw::RawTensor;
use crate::core::{DType, Float};
use crate::ops::half;
use crate::ops::unary::UnaryMath;

/// Softmax (or log-softmax) of one row, from `src` into `dst`. The exponentials are one loop of
/// their own (it vectorizes: `f32`'s `exp` is `vmath`'s), summed after.
#[inline]
fn softmax_row<T: Float + UnaryMath>(src: &[T], dst: &mut [T], log: bool) {
    let max = src.iter().fold(T::NEG_INFINITY, |m, &x| m.max_nan(x));
    let max = if max == T::NEG_INFINITY { T::ZERO } else { max };
    vectorized(
        #[inline(always)]
        || {
            for (d, &x) in dst.iter_mut().zip(src) {
                *d = UnaryMath::exp(x - max);
            }
        },
    );
    let mut sum = T::ZERO;
    for &e in dst.iter() {
        sum += e;
    }
    if log {
        let lse = UnaryMath::log(sum);
        for (d, &x) in dst.iter_mut().zip(src) {
            *d = x - max - lse;
        }
    } else {
        let inv = T::ONE / sum;
        for d in dst.iter_mut() {
            *d = *d * inv;
        }
    }
}

fn typed<T: Float + UnaryMath>(a: RawTensor, log: bool) -> Result<RawTensor> {
    let row = *a.shape().last().expect("rank >= 1");
    let numel = a.numel();
    let mut out = T::pool().take(numel)?;
    if numel == 0 {
        // Nothing to compute (and an empty layout need not count as contiguous).
        return Ok(RawTensor::from_cpu_vec(out, a.layout.shape));
    }
    let src = a.cpu_slice::<T>().expect("cpu");
    let r = a.layout.contiguous_range().expect("contiguous");
    let src = &src[r];
    if numel >= PARALLEL_THRESHOLD && !cfg!(miri) {
        // Whole rows per task, about 16K elements each.
        let rows = ((1 << 14) / row).max(1);
        for_each_chunk_mut(&mut out, rows * row, &|start, d| {
            let s = &src[start..start + d.len()];
            for (d, s) in d.chunks_mut(row).zip(s.chunks(row)) {
                softmax_row(s, d, log);
            }
        });
    } else {
        for (d, s) in out.chunks_mut(row).zip(src.chunks(row)) {
            softmax_row(s, d, log);
        }
    }
    Ok(RawTensor::from_cpu_vec(out, a.layout.shape))
}

/// `a` is contiguous; the softmax runs along its last dimension.
pub(crate) fn softmax(a: RawTensor, log: bool) -> Result<RawTensor> {
    match a.dtype {
        DType::F32 => typed::<f32>(a, log),
        DType::F64 => typed::<f64>(a, log),
        DType::F16 | DType::BF16 => {
            let dtype = a.dtype;
            half::narrow(typed::<f32>(half::widen(&a)?, log)?, dtype)
        }
        _ => unreachable!("checked in softmax"),
    }
}

impl super::SoftmaxKernel for crate::ops::backend::CpuBackend {
    #[inline(always)]
    fn softmax(self, a: RawTensor, log: bool) -> Result<RawTensor> {
        softmax(a, log)
    }
}
