//! Shared by the benchmarks: deterministic data and the timing method, the same as
//! `scripts/torch_cpu_bench.py`'s, so devtype's numbers sit beside PyTorch's.
#![allow(dead_code)]

use std::time::Instant;

/// Prints what devtype's CPU kernels run on here (`devtype::cpu::capability()`), first, as a
/// JSON line beside the figures.
pub fn print_capability() {
    println!(
        "{{\"peer\":\"devtype\",\"info\":\"cpu capability\",\"text\":\"{}\"}}",
        devtype::cpu::capability()
    );
}

/// `((i + seed) * 0x9E3779B97F4A7C15 mod 2^64) >> 40` / 2^24, as the peers' harnesses.
pub fn det_uniform(n: usize, seed: u64) -> Vec<f32> {
    (0..n as u64)
        .map(|i| {
            (i.wrapping_add(seed).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as f32 / 16_777_216.0
        })
        .collect()
}

pub fn det_sym(n: usize, seed: u64, scale: f32) -> Vec<f32> {
    det_uniform(n, seed)
        .into_iter()
        .map(|u| (2.0 * u - 1.0) * scale)
        .collect()
}

/// The peers' `time_per_call`: warm-up, calibration, then `samples` timed samples.
pub fn time_per_call(min_sample_s: f64, samples: usize, mut f: impl FnMut()) -> Vec<f64> {
    let t0 = Instant::now();
    let mut warm = 0;
    while warm < 3 || t0.elapsed().as_secs_f64() < min_sample_s * 0.5 {
        f();
        warm += 1;
    }
    let t = Instant::now();
    f();
    let one = t.elapsed().as_secs_f64().max(1e-9);
    let mut iters = ((min_sample_s / one).ceil() as usize).max(1);
    if iters > 10 {
        let probe = (iters / 10).max(1);
        let t = Instant::now();
        for _ in 0..probe {
            f();
        }
        iters = ((min_sample_s / (t.elapsed().as_secs_f64().max(1e-9) / probe as f64)).ceil()
            as usize)
            .max(1);
    }
    (0..samples)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iters {
                f();
            }
            t.elapsed().as_secs_f64() / iters as f64
        })
        .collect()
}

pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        0.5 * (s[n / 2 - 1] + s[n / 2])
    }
}

/// Seconds per call with a fixed count per sample (the peers' tiny workloads).
pub fn time_fixed(samples: usize, warmup: usize, iters: usize, mut f: impl FnMut()) -> Vec<f64> {
    for _ in 0..warmup {
        f();
    }
    (0..samples)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iters {
                f();
            }
            t.elapsed().as_secs_f64() / iters as f64
        })
        .collect()
}
