//! One training step of a 784-512-10 MLP (ReLU), batch 256, class-weighted cross-entropy,
//! SGD lr 0.01, on the CPU (workload D), with PyTorch's
//! deterministic data and weights (`det_sym`) and the same timing method (warm-up, calibrated
//! iterations per sample, median of samples), plus their per-step median of 50 steps.
//!
//! `cargo bench --bench train` prints the median ms per step and checks the loss against
//! PyTorch's (2.468970 before training, 2.321380 after 55 steps).
//! `BENCH_QUICK=1` shortens it; `BENCH_SAMPLES=n` sets the number of samples.

use devtype::nn::{CrossEntropyLoss, Linear, ReLU, Sequential};
use devtype::optim::Sgd;
use devtype::prelude::*;
use std::hint::black_box;
use std::time::Instant;

const B: usize = 256;
const I: usize = 784;
const H: usize = 512;
const O: usize = 10;

mod common;

use common::{det_sym, median, time_per_call};

fn main() {
    let quick = std::env::var("BENCH_QUICK").is_ok_and(|v| v == "1");
    let samples = std::env::var("BENCH_SAMPLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if quick { 3 } else { 9 });
    let min_sample_s = if quick { 0.02 } else { 0.15 };
    let dev = Cpu;
    let (s1, s2) = (1.0 / (I as f32).sqrt(), 1.0 / (H as f32).sqrt());
    let x = Tensor::from_vec(det_sym(B * I, 1, 1.0), [B, I], dev);
    let y =
        Tensor::<Cpu, i64>::from_vec((0..B).map(|k| ((7 * k + 3) % O) as i64).collect(), [B], dev);
    let class_weights = Tensor::from_vec((0..O).map(|c| 0.5 + 0.1 * c as f32).collect(), [O], dev);
    // The peers' deterministic weights (`det_sym`), the same for every model made here.
    let new_model = || {
        Sequential::new((
            Linear::from_parameters(
                Tensor::from_vec(det_sym(H * I, 2, s1), [H, I], dev),
                Some(Tensor::from_vec(det_sym(H, 3, s1), [H], dev)),
            ),
            ReLU,
            Linear::from_parameters(
                Tensor::from_vec(det_sym(O * H, 4, s2), [O, H], dev),
                Some(Tensor::from_vec(det_sym(O, 5, s2), [O], dev)),
            ),
        ))
    };
    let mut model = new_model();
    let criterion = CrossEntropyLoss::new().with_weight(class_weights);
    let mut opt = Sgd::new(0.01);
    let loss0 = no_grad(|| criterion.forward(&model.forward(&x), &y).item());

    let mut step = || {
        model.zero_grad();
        let loss = criterion.forward(&model.forward(&x), &y);
        loss.backward();
        opt.step(&mut model);
        black_box(&loss);
    };
    // The peers' per-step method: 5 warm-up steps, then the median of 50 timed steps.
    for _ in 0..5 {
        step();
    }
    let per_step: Vec<f64> = (0..50)
        .map(|_| {
            let t = Instant::now();
            step();
            t.elapsed().as_secs_f64()
        })
        .collect();
    // The calibrated method of `rust/src/lib.rs`.
    let calibrated = time_per_call(min_sample_s, samples, &mut step);

    // Loss check against PyTorch: a fresh model trained 55 steps.
    let mut fresh = new_model();
    let mut opt = Sgd::new(0.01);
    for _ in 0..55 {
        fresh.zero_grad();
        criterion.forward(&fresh.forward(&x), &y).backward();
        opt.step(&mut fresh);
    }
    let loss55 = no_grad(|| criterion.forward(&fresh.forward(&x), &y).item());

    let flops = 2.0 * (B * I * H) as f64 * 2.0 + 3.0 * 2.0 * (B * H * O) as f64;
    let (m_cal, m_step) = (median(&calibrated), median(&per_step));
    println!(
        "devtype D MLP train step (784-512-10, b=256, weighted CE, SGD), CPU, {} rayon threads",
        rayon_threads()
    );
    println!(
        "  median {:.3} ms/step (calibrated samples: {samples}), {:.0} GFLOP/s",
        m_cal * 1e3,
        flops / m_cal / 1e9
    );
    println!(
        "  median {:.3} ms/step (per-step, 50 steps after 5 warm-up, as the peers' D)",
        m_step * 1e3
    );
    println!("  loss before training {loss0:.6} (PyTorch 2.468970), after 55 steps {loss55:.6} (PyTorch 2.321380)");
    assert!(
        (loss0 - 2.46897).abs() < 1e-4,
        "loss before training differs from PyTorch's"
    );
    assert!(
        (loss55 - 2.32138).abs() < 1e-3,
        "loss after 55 steps differs from PyTorch's"
    );
}

fn rayon_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
