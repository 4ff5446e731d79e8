//! CPU side of the fused gradient norm: the gradients cut into blocks, the blocks summed in
//! parallel (each in eight `f32` or `f64` lanes, folded into `f64`), the block sums added in
//! order, so the result does not depend on the thread count or schedule.

use crate::core::raw::RawTensor;
use crate::core::DType;
use half::{bf16, f16};

/// Elements per block: large enough that a block costs far more than its scheduling.
const BLOCK: usize = 1 << 16;

/// The sum of the squares of the elements of `data`: eight `f32` lanes over each run of 1024
/// elements (vectorised), folded into `f64` after each run so the rounding error stays that
/// of 128 additions.
fn lanes<T>(data: &[T], widen: impl Fn(T) -> f32) -> f64
where
    T: Copy,
{
    let mut s = 0.0f64;
    for run in data.chunks(1024) {
        let mut acc = [0.0f32; 8];
        let chunks = run.chunks_exact(8);
        let rest = chunks.remainder();
        for c in chunks {
            for i in 0..8 {
                let v = widen(c[i]);
                acc[i] += v * v;
            }
        }
        s += acc.iter().map(|&a| a as f64).sum::<f64>();
        for &x in rest {
            let v = widen(x) as f64;
            s += v * v;
        }
    }
    s
}

fn lanes_f64(data: &[f64]) -> f64 {
    let mut acc = [0.0f64; 8];
    let chunks = data.chunks_exact(8);
    let rest = chunks.remainder();
    for c in chunks {
        for i in 0..8 {
            acc[i] += c[i] * c[i];
        }
    }
    let mut s: f64 = acc.iter().sum();
    for &x in rest {
        s += x * x;
    }
    s
}

/// A contiguous run of one gradient.
enum Run<'a> {
    F32(&'a [f32]),
    F64(&'a [f64]),
    F16(&'a [f16]),
    BF16(&'a [bf16]),
}

impl Run<'_> {
    fn sum_sq(&self) -> f64 {
        match self {
            Run::F32(d) => lanes(d, |x| x),
            Run::F64(d) => lanes_f64(d),
            Run::F16(d) => lanes(d, f16::to_f32),
            Run::BF16(d) => lanes(d, bf16::to_f32),
        }
    }
}

/// The element slice of a contiguous CPU tensor of `E`.
fn slice<E: crate::core::Element>(t: &RawTensor) -> Option<&[E]> {
    let data = t.cpu_slice::<E>()?;
    data.get(t.layout.offset..t.layout.offset + t.numel())
}

/// `sum(g^2)` over every element of every gradient in `grads`, read once each, or `None`
/// when one of them is not a contiguous floating-point tensor on the CPU (the caller then
/// takes the general path).
pub(crate) fn sum_of_squares(grads: &[RawTensor]) -> Option<f64> {
    let mut runs = Vec::new();
    for g in grads {
        if !g.device.is_cpu() || !g.layout.is_contiguous() {
            return None;
        }
        match g.dtype {
            DType::F32 => runs.extend(slice::<f32>(g)?.chunks(BLOCK).map(Run::F32)),
            DType::F64 => runs.extend(slice::<f64>(g)?.chunks(BLOCK).map(Run::F64)),
            DType::F16 => runs.extend(slice::<f16>(g)?.chunks(BLOCK).map(Run::F16)),
            DType::BF16 => runs.extend(slice::<bf16>(g)?.chunks(BLOCK).map(Run::BF16)),
            _ => return None,
        }
    }
    // Small models' gradients (a few blocks in all) are summed on this thread: waking another
    // would cost more than the sums. The same block sums in the same order either way.
    let total: usize = grads.iter().map(RawTensor::numel).sum();
    let sums = if total < crate::backend::cpu::strided::PARALLEL_THRESHOLD {
        runs.iter().map(Run::sum_sq).collect()
    } else {
        crate::backend::cpu::parallel::map_items(runs, &|run| run.sum_sq())
    };
    Some(sums.iter().sum())
}
