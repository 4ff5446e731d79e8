//! CPU kernels for reductions.

use super::{ReduceOp, ReducePlan};
use crate::backend::cpu::parallel::for_each_chunk_mut;
use crate::backend::cpu::strided::Strided;
use crate::core::dtype::Half;
use crate::core::error::Result;
use crate::core::raw::RawTensor;
use crate::core::Element;

/// What a reduction needs of an element type.
pub(crate) trait Reducible: Element {
    fn sum_run(data: &[Self], stride: usize, len: usize) -> Self;
    fn add(self, o: Self) -> Self;
    fn max_of(self, o: Self) -> Self;
    fn min_of(self, o: Self) -> Self;
    fn div_count(self, n: usize) -> Self;
    fn is_nan(self) -> bool;
}

/// The sum of a contiguous run in 32 lanes: lane `i` adds elements `i`, `i + 32`, `i + 64`,
/// ...; the lanes then meet in a fixed tree, `v[i] = (l[i] + l[i+8]) + (l[i+16] + l[i+24])`,
/// `((v0 + v4) + (v1 + v5)) + ((v2 + v6) + (v3 + v7))`, and the tail adds in order. Eight to
/// thirty-two independent adds hide their latency behind memory, and the rounding error grows
/// with `n / 32` rather than `n`. Every path below computes this same association, so the bits
/// do not depend on the CPU.
macro_rules! lane_sum {
    ($name:ident, $t:ty) => {
        #[inline]
        fn $name(data: &[$t]) -> $t {
            let mut lanes = [0.0 as $t; 32];
            let chunks = data.chunks_exact(32);
            let rest = chunks.remainder();
            for c in chunks {
                for i in 0..32 {
                    lanes[i] += c[i];
                }
            }
            let mut v = [0.0 as $t; 8];
            for i in 0..8 {
                v[i] = (lanes[i] + lanes[i + 8]) + (lanes[i + 16] + lanes[i + 24]);
            }
            let mut s = ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
            for &x in rest {
                s += x;
            }
            s
        }
    };
}
lane_sum!(lane_sum_f32, f32);
lane_sum!(lane_sum_f64, f64);

/// [`lane_sum!`]'s association written with AVX registers. Left to itself, LLVM vectorises
/// the portable loop *across* chunks, de-interleaving pairs of lanes with shuffles and
/// spilling (measured with `perf annotate`: a one-thread 16M-element sum ran at 10 GB/s where
/// PyTorch's runs at 13); here each register holds eight (`f32`) or four (`f64`) consecutive
/// lanes, and an add per register per chunk is all the loop does.
#[cfg(all(target_arch = "x86_64", not(miri)))]
mod avx {
    use std::arch::x86_64::*;

    #[target_feature(enable = "avx")]
    pub(super) fn sum_f32(data: &[f32]) -> f32 {
        let chunks = data.chunks_exact(32);
        let rest = chunks.remainder();
        let mut r = [_mm256_setzero_ps(); 4];
        for c in chunks {
            for (k, r) in r.iter_mut().enumerate() {
                // SAFETY: `c` holds 32 elements; this reads `c[8k..8k + 8]`, k < 4.
                *r = _mm256_add_ps(*r, unsafe { _mm256_loadu_ps(c.as_ptr().add(8 * k)) });
            }
        }
        // Lane i of v: (l[i] + l[i+8]) + (l[i+16] + l[i+24]).
        let v = _mm256_add_ps(_mm256_add_ps(r[0], r[1]), _mm256_add_ps(r[2], r[3]));
        let mut v8 = [0.0f32; 8];
        // SAFETY: `v8` holds the eight values stored.
        unsafe { _mm256_storeu_ps(v8.as_mut_ptr(), v) };
        let mut s = ((v8[0] + v8[4]) + (v8[1] + v8[5])) + ((v8[2] + v8[6]) + (v8[3] + v8[7]));
        for &x in rest {
            s += x;
        }
        s
    }

    #[target_feature(enable = "avx")]
    pub(super) fn sum_f64(data: &[f64]) -> f64 {
        let chunks = data.chunks_exact(32);
        let rest = chunks.remainder();
        let mut r = [_mm256_setzero_pd(); 8];
        for c in chunks {
            for (k, r) in r.iter_mut().enumerate() {
                // SAFETY: `c` holds 32 elements; this reads `c[4k..4k + 4]`, k < 8.
                *r = _mm256_add_pd(*r, unsafe { _mm256_loadu_pd(c.as_ptr().add(4 * k)) });
            }
        }
        // Register k holds lanes 4k..4k+4: v[0..4] = (r0 + r2) + (r4 + r6) are lanes
        // (i, i+8, i+16, i+24) for i < 4, v[4..8] = (r1 + r3) + (r5 + r7) for 4 <= i < 8.
        let lo = _mm256_add_pd(_mm256_add_pd(r[0], r[2]), _mm256_add_pd(r[4], r[6]));
        let hi = _mm256_add_pd(_mm256_add_pd(r[1], r[3]), _mm256_add_pd(r[5], r[7]));
        let (mut l, mut h) = ([0.0f64; 4], [0.0f64; 4]);
        // SAFETY: `l` and `h` hold the four values stored in each.
        unsafe {
            _mm256_storeu_pd(l.as_mut_ptr(), lo);
            _mm256_storeu_pd(h.as_mut_ptr(), hi);
        }
        let mut s = ((l[0] + h[0]) + (l[1] + h[1])) + ((l[2] + h[2]) + (l[3] + h[3]));
        for &x in rest {
            s += x;
        }
        s
    }
}

macro_rules! float_reducible {
    ($t:ty, $portable:ident, $avx:ident) => {
        impl Reducible for $t {
            #[inline]
            fn sum_run(data: &[Self], stride: usize, len: usize) -> Self {
                if stride == 1 {
                    let run = &data[..len];
                    #[cfg(all(target_arch = "x86_64", not(miri)))]
                    if std::arch::is_x86_feature_detected!("avx") {
                        // SAFETY: the CPU has AVX, checked just above.
                        return unsafe { avx::$avx(run) };
                    }
                    $portable(run)
                } else {
                    (0..len).map(|i| data[i * stride]).sum()
                }
            }
            #[inline]
            fn add(self, o: Self) -> Self {
                self + o
            }
            #[inline]
            fn max_of(self, o: Self) -> Self {
                if self.is_nan() || self >= o {
                    self
                } else {
                    o
                }
            }
            #[inline]
            fn min_of(self, o: Self) -> Self {
                if self.is_nan() || self <= o {
                    self
                } else {
                    o
                }
            }
            #[inline]
            fn div_count(self, n: usize) -> Self {
                self / n as $t
            }
            #[inline]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
        }
    };
}
float_reducible!(f32, lane_sum_f32, sum_f32);
float_reducible!(f64, lane_sum_f64, sum_f64);

// f16 and bf16 sums and means run on widened `f32` copies (see `reduce`); these serve
// max, min and the arg-reductions, which compare and never round.
macro_rules! half_reducible {
    ($t:ty) => {
        impl Reducible for $t {
            #[inline]
            fn sum_run(data: &[Self], stride: usize, len: usize) -> Self {
                let s: f32 = (0..len).map(|i| data[i * stride].widen()).sum();
                Half::narrow(s)
            }
            #[inline]
            fn add(self, o: Self) -> Self {
                Half::narrow(self.widen() + o.widen())
            }
            #[inline]
            fn max_of(self, o: Self) -> Self {
                if self.is_nan() || self >= o {
                    self
                } else {
                    o
                }
            }
            #[inline]
            fn min_of(self, o: Self) -> Self {
                if self.is_nan() || self <= o {
                    self
                } else {
                    o
                }
            }
            #[inline]
            fn div_count(self, n: usize) -> Self {
                Half::narrow(self.widen() / n as f32)
            }
            #[inline]
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
        }
    };
}
half_reducible!(half::f16);
half_reducible!(half::bf16);

impl Reducible for i64 {
    fn sum_run(data: &[Self], stride: usize, len: usize) -> Self {
        (0..len).fold(0i64, |s, i| s.wrapping_add(data[i * stride]))
    }
    fn add(self, o: Self) -> Self {
        self.wrapping_add(o)
    }
    fn max_of(self, o: Self) -> Self {
        self.max(o)
    }
    fn min_of(self, o: Self) -> Self {
        self.min(o)
    }
    fn div_count(self, n: usize) -> Self {
        self / n.max(1) as i64
    }
    fn is_nan(self) -> bool {
        false
    }
}

impl Reducible for bool {
    fn sum_run(data: &[Self], stride: usize, len: usize) -> Self {
        (0..len).any(|i| data[i * stride])
    }
    fn add(self, o: Self) -> Self {
        self | o
    }
    fn max_of(self, o: Self) -> Self {
        self | o
    }
    fn min_of(self, o: Self) -> Self {
        self & o
    }
    fn div_count(self, _: usize) -> Self {
        self
    }
    fn is_nan(self) -> bool {
        false
    }
}

/// A contiguous run at least this long takes the lane-wise max/min ([`run_extreme`]).
const RUN: usize = 64;

/// The max (`MAX`) or min of a contiguous run, NaN if it holds one (the first NaN): 16
/// lanes, the compare and the NaN test kept apart so both vectorise (a compare that also
/// tests for NaN, as `max_of`, runs one element at a time).
#[inline]
fn run_extreme<T: Reducible, const MAX: bool>(run: &[T]) -> T {
    let mut lanes = [run[0]; 16];
    let mut nans = [false; 16];
    let chunks = run.chunks_exact(16);
    let rest = chunks.remainder();
    for c in chunks {
        for i in 0..16 {
            let x = c[i];
            nans[i] |= x.is_nan();
            let better = if MAX { x > lanes[i] } else { x < lanes[i] };
            lanes[i] = if better { x } else { lanes[i] };
        }
    }
    if nans.iter().any(|&n| n) || rest.iter().any(|x| x.is_nan()) {
        return *run.iter().find(|x| x.is_nan()).expect("a NaN was seen");
    }
    let pick = |a: T, b: T| {
        let better = if MAX { b > a } else { b < a };
        if better {
            b
        } else {
            a
        }
    };
    rest.iter()
        .fold(lanes.into_iter().fold(run[0], pick), |a, &b| pick(a, b))
}

/// [`run_extreme`] with `max` chosen at run time.
#[inline]
fn extreme_of<T: Reducible>(run: &[T], max: bool) -> T {
    if max {
        run_extreme::<T, true>(run)
    } else {
        run_extreme::<T, false>(run)
    }
}

/// Folds positions `range` of the permuted walk.
fn fold_range<T: Reducible>(
    data: &[T],
    walk: &Strided<1>,
    range: std::ops::Range<usize>,
    op: ReduceOp,
) -> T {
    let mut acc = match op {
        ReduceOp::Sum | ReduceOp::Mean => T::ZERO,
        ReduceOp::Max | ReduceOp::Min => data[0],
    };
    let mut first = true;
    walk.runs(range, |_, [o], len, [s]| match op {
        ReduceOp::Sum | ReduceOp::Mean => acc = acc.add(T::sum_run(&data[o..], s, len)),
        ReduceOp::Max | ReduceOp::Min => {
            let mut take = |x: T| {
                acc = if first {
                    first = false;
                    x
                } else if op == ReduceOp::Max {
                    acc.max_of(x)
                } else {
                    acc.min_of(x)
                };
            };
            if s == 1 && len >= RUN {
                take(extreme_of(&data[o..o + len], op == ReduceOp::Max));
            } else {
                for i in 0..len {
                    take(data[o + i * s]);
                }
            }
        }
    });
    acc
}

fn typed<T: Reducible>(data: &[T], plan: &ReducePlan, op: ReduceOp) -> Result<RawTensor> {
    let walk = Strided::new([&plan.permuted]);
    let r = plan.reduced;
    let finish = |v: T| {
        if op == ReduceOp::Mean {
            v.div_count(r)
        } else {
            v
        }
    };
    let mut out = T::pool().take(plan.outputs)?;
    let work = plan.outputs * r;
    if plan.outputs == 1
        && r >= 1 << 16
        && !cfg!(miri)
        && matches!(op, ReduceOp::Sum | ReduceOp::Mean)
    {
        // One big sum: split the reduction itself across threads, into one partial sum per
        // block of the line, added in order (the same bits whatever the thread count).
        let chunk = 1 << 14;
        let mut partial = crate::core::pool::filled_vec(r.div_ceil(chunk), T::ZERO)?;
        for_each_chunk_mut(&mut partial, 1, &|c, p| {
            p[0] = fold_range(data, &walk, c * chunk..((c + 1) * chunk).min(r), op);
        });
        out[0] = finish(partial.into_iter().fold(T::ZERO, T::add));
    } else if work >= 1 << 16 && plan.outputs > 1 && !cfg!(miri) {
        for_each_chunk_mut(&mut out, (1 << 14) / r.max(1) + 1, &|start, c| {
            for (i, o) in (start..).zip(c) {
                *o = finish(fold_range(data, &walk, i * r..(i + 1) * r, op));
            }
        });
    } else {
        for (i, o) in out.iter_mut().enumerate() {
            *o = finish(fold_range(data, &walk, i * r..(i + 1) * r, op));
        }
    }
    Ok(RawTensor::from_cpu_vec(out, plan.out_shape))
}

pub(crate) fn reduce(a: &RawTensor, plan: &ReducePlan, op: ReduceOp) -> Result<RawTensor> {
    if a.dtype.is_half() && matches!(op, ReduceOp::Sum | ReduceOp::Mean) {
        // Accumulated in f32 (PyTorch's rule for reduced-precision sums), rounded once.
        let wide = crate::ops::half::widen(a)?;
        let s = wide.cpu_slice::<f32>().expect("widened");
        return crate::ops::half::narrow(typed::<f32>(s, plan, op)?, a.dtype);
    }
    let s = a.cpu_storage().expect("cpu");
    cpu_dispatch!(s, |data: T| typed::<T>(data, plan, op))
}

fn arg_typed<T: Reducible>(data: &[T], plan: &ReducePlan, max: bool) -> Result<RawTensor> {
    let walk = Strided::new([&plan.permuted]);
    let r = plan.reduced;
    let mut out = crate::core::pool::zeroed_vec::<i64>(plan.outputs)?;
    let one = |i: usize| -> i64 {
        let (mut best, mut best_at, mut pos) = (data[0], 0usize, 0usize);
        walk.runs(i * r..(i + 1) * r, |_, [off], len, [s]| {
            if s == 1 && len >= RUN {
                // The run's extreme lane-wise, then the first place it sits (the run is in
                // cache by then): the first NaN when there is one, the first on ties.
                if pos > 0 && best.is_nan() {
                    pos += len;
                    return;
                }
                let run = &data[off..off + len];
                let x = extreme_of(run, max);
                let better = pos == 0 || x.is_nan() || if max { x > best } else { x < best };
                if better {
                    let at = if x.is_nan() {
                        run.iter().position(|v| v.is_nan())
                    } else {
                        run.iter().position(|&v| v == x)
                    };
                    best = x;
                    best_at = pos + at.expect("the extreme is in its run");
                }
                pos += len;
                return;
            }
            for j in 0..len {
                let x = data[off + j * s];
                let better = pos == 0
                    || (!best.is_nan() && (x.is_nan() || if max { x > best } else { x < best }));
                if better {
                    best = x;
                    best_at = pos;
                }
                pos += 1;
            }
        });
        best_at as i64
    };
    if plan.outputs * r >= 1 << 16 && plan.outputs > 1 && !cfg!(miri) {
        // One output per line, the lines split across threads (as the values' reduction).
        for_each_chunk_mut(&mut out, (1 << 14) / r.max(1) + 1, &|start, c| {
            for (i, o) in (start..).zip(c) {
                *o = one(i);
            }
        });
    } else {
        for (i, o) in out.iter_mut().enumerate() {
            *o = one(i);
        }
    }
    Ok(RawTensor::from_cpu_vec(out, plan.out_shape))
}

pub(crate) fn arg_reduce(a: &RawTensor, plan: &ReducePlan, max: bool) -> Result<RawTensor> {
    let s = a.cpu_storage().expect("cpu");
    cpu_dispatch!(s, |data: T| arg_typed::<T>(data, plan, max))
}

impl super::ReduceKernel for crate::ops::backend::CpuBackend {
    #[inline(always)]
    fn reduce(self, a: &RawTensor, plan: &ReducePlan, op: ReduceOp) -> Result<RawTensor> {
        reduce(a, plan, op)
    }
    #[inline(always)]
    fn arg_reduce(self, a: &RawTensor, plan: &ReducePlan, max: bool) -> Result<RawTensor> {
        arg_reduce(a, plan, max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fresh values of mixed sign and magnitude (so the association shows in the bits).
    fn values(n: usize, seed: u64) -> Vec<f64> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let m = (x >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                m * 2f64.powi((x % 40) as i32 - 20)
            })
            .collect()
    }

    /// The vector path is the portable association, bit for bit, at every length around the
    /// 32-lane chunk and at long ones; both stay within the lanes' error bound of the f64 sum.
    #[test]
    fn the_vector_sum_is_the_portable_sum_bit_for_bit() {
        // Fresh values each run; under Miri (no clock in isolation) a fixed seed, and the long
        // length left to the native run.
        let seed = if cfg!(miri) {
            1
        } else {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        };
        let long: &[usize] = if cfg!(miri) { &[] } else { &[100_003] };
        let lens = (0..100)
            .chain([127, 128, 129, 1000, 4097])
            .chain(long.iter().copied());
        for (k, n) in lens.enumerate() {
            let x = values(n, seed + k as u64);
            let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
            let got32 = <f32 as Reducible>::sum_run(&x32, 1, n);
            let got64 = <f64 as Reducible>::sum_run(&x, 1, n);
            assert_eq!(
                got32.to_bits(),
                lane_sum_f32(&x32).to_bits(),
                "f32 n={n} seed={seed}"
            );
            assert_eq!(
                got64.to_bits(),
                lane_sum_f64(&x).to_bits(),
                "f64 n={n} seed={seed}"
            );
            let exact: f64 = x32.iter().map(|&v| v as f64).sum();
            let abs: f64 = x32.iter().map(|&v| (v as f64).abs()).sum();
            let bound = (n / 32 + 40) as f64 * f32::EPSILON as f64 * abs;
            assert!(
                (got32 as f64 - exact).abs() <= bound,
                "f32 n={n}: {got32} vs {exact}"
            );
        }
    }
}
