//! The machine's ceiling for f32 matrix products: fused multiply-adds with no memory traffic,
//! on one thread and on every thread, with 256-bit (AVX2) and 512-bit (AVX-512) vectors.
//!
//! No GEMM, ours or a peer's, can beat this number; it says how far a GEMM target can be met
//! on the machine at hand. (An AMD Zen 4 core, for one, runs a 512-bit FMA as two 256-bit
//! halves, so both widths give the same ceiling there.)
//!
//! ```sh
//! cargo bench --bench peak
//! ```

use std::hint::black_box;
use std::time::Instant;

/// Independent accumulator chains, at least FMA latency times FMA ports on any x86 core, and
/// few enough to stay in registers (AVX2 has 16, AVX-512 32).
const CHAINS_AVX2: usize = 12;
const CHAINS_AVX512: usize = 16;
/// Loop trips per timed call.
const ITERS: u64 = 20_000_000;

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{CHAINS_AVX2, CHAINS_AVX512, ITERS};
    use std::arch::x86_64::*;

    /// Flops of one call of [`fma_avx512`].
    pub const FLOPS_AVX512: f64 = (ITERS as usize * CHAINS_AVX512 * 16 * 2) as f64;
    /// Flops of one call of [`fma_avx2`].
    pub const FLOPS_AVX2: f64 = (ITERS as usize * CHAINS_AVX2 * 8 * 2) as f64;

    /// `CHAINS_AVX512` independent FMA chains of 16 lanes.
    ///
    /// # Safety
    /// The CPU must support AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub unsafe fn fma_avx512(seed: f32) -> f32 {
        let a = _mm512_set1_ps(0.999_999);
        let b = _mm512_set1_ps(1e-7);
        let mut acc = [_mm512_set1_ps(seed); CHAINS_AVX512];
        for _ in 0..ITERS {
            for v in acc.iter_mut() {
                *v = _mm512_fmadd_ps(*v, a, b);
            }
        }
        let mut sum = _mm512_setzero_ps();
        for v in acc {
            sum = _mm512_add_ps(sum, v);
        }
        _mm512_reduce_add_ps(sum)
    }

    /// `CHAINS_AVX2` independent FMA chains of 8 lanes.
    ///
    /// # Safety
    /// The CPU must support AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn fma_avx2(seed: f32) -> f32 {
        let a = _mm256_set1_ps(0.999_999);
        let b = _mm256_set1_ps(1e-7);
        let mut acc = [_mm256_set1_ps(seed); CHAINS_AVX2];
        for _ in 0..ITERS {
            for v in acc.iter_mut() {
                *v = _mm256_fmadd_ps(*v, a, b);
            }
        }
        let mut sum = _mm256_setzero_ps();
        for v in acc {
            sum = _mm256_add_ps(sum, v);
        }
        let mut lanes = [0f32; 8];
        // SAFETY: `lanes` is 8 writable f32s; the unaligned store has no alignment needs.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), sum) };
        lanes.iter().sum()
    }
}

/// Median GFLOP/s of `threads` threads each running `kernel` at once.
fn measure(threads: usize, flops_per_call: f64, kernel: fn(f32) -> f32) -> f64 {
    let mut rates: Vec<f64> = (0..5)
        .map(|round| {
            let start = Instant::now();
            std::thread::scope(|s| {
                for t in 0..threads {
                    s.spawn(move || black_box(kernel(black_box(round as f32 + t as f32))));
                }
            });
            threads as f64 * flops_per_call / start.elapsed().as_secs_f64() / 1e9
        })
        .collect();
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

fn report(case: &str, gflops: f64) {
    println!(
        "{{\"peer\":\"machine\",\"workload\":\"peak\",\"case\":\"{case}\",\"value\":{gflops:.1},\"unit\":\"GFLOP/s\"}}"
    );
}

#[cfg(target_arch = "x86_64")]
fn main() {
    let all = std::thread::available_parallelism().map_or(1, |n| n.get());
    if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
        // SAFETY: AVX2 and FMA were detected just above.
        let kernel: fn(f32) -> f32 = |s| unsafe { x86::fma_avx2(s) };
        report(
            "f32 FMA, AVX2, 1 thread",
            measure(1, x86::FLOPS_AVX2, kernel),
        );
        let name = format!("f32 FMA, AVX2, {all} threads");
        report(&name, measure(all, x86::FLOPS_AVX2, kernel));
    }
    if is_x86_feature_detected!("avx512f") {
        // SAFETY: AVX-512F was detected just above.
        let kernel: fn(f32) -> f32 = |s| unsafe { x86::fma_avx512(s) };
        report(
            "f32 FMA, AVX-512, 1 thread",
            measure(1, x86::FLOPS_AVX512, kernel),
        );
        let name = format!("f32 FMA, AVX-512, {all} threads");
        report(&name, measure(all, x86::FLOPS_AVX512, kernel));
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn main() {
    println!("the peak probe measures x86-64 vector units only");
}
