//! Optimisers against reference formulas in f64, state on the model's device, and a small
//! training loop that converges.

use devtype::nn::{Linear, MSELoss};
use devtype::optim::{Adam, Optimizer, Sgd};
use devtype::prelude::*;

mod common;
use common::Rng;

/// A one-parameter "model" and a gradient to apply.
fn param_with_grad(p: &[f64], g: &[f64]) -> Tensor<Cpu, f64> {
    let v = Tensor::parameter(Tensor::from_vec(p.to_vec(), [p.len()], Cpu));
    v.try_set_grad(Some(Tensor::from_vec(g.to_vec(), [g.len()], Cpu)))
        .unwrap();
    v
}

fn close(a: &[f64], b: &[f64]) {
    assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!((x - y).abs() < 1e-12, "element {i}: {x} vs {y}");
    }
}

#[test]
fn sgd_with_momentum_nesterov_and_weight_decay_follows_torch() {
    let (lr, mom, wd) = (0.1, 0.9, 0.01);
    let grads = [[0.5, -1.0], [0.25, 0.75], [-0.5, 0.1]];
    for nesterov in [false, true] {
        // torch.optim.SGD refuses Nesterov with dampening (and so does devtype).
        let damp = if nesterov { 0.0 } else { 0.1 };
        let mut p = param_with_grad(&[1.0, -2.0], &grads[0]);
        let mut opt = Sgd::new(lr)
            .momentum(mom)
            .weight_decay(wd)
            .dampening(damp)
            .nesterov(nesterov);
        let (mut x, mut buf) = (vec![1.0f64, -2.0], vec![0.0f64; 2]);
        for (step, g) in grads.iter().enumerate() {
            p.try_set_grad(Some(Tensor::from_vec(g.to_vec(), [2], Cpu)))
                .unwrap();
            opt.step(&mut p);
            for i in 0..2 {
                let d = g[i] + wd * x[i];
                buf[i] = if step == 0 {
                    d
                } else {
                    mom * buf[i] + (1.0 - damp) * d
                };
                let d = if nesterov { d + mom * buf[i] } else { buf[i] };
                x[i] -= lr * d;
            }
            close(&p.to_vec(), &x);
        }
        let state: Tensor<Cpu, f64> = opt.momentum_buffer("").unwrap();
        close(&state.to_vec(), &buf);
    }
}

#[test]
fn adam_and_adamw_follow_torch() {
    let (lr, b1, b2, eps, wd) = (0.01, 0.9, 0.999, 1e-8, 0.1);
    let grads = [[0.5, -1.0], [0.25, 0.75], [-0.5, 0.1], [1.0, 1.0]];
    for decoupled in [false, true] {
        let mut p = param_with_grad(&[1.0, -2.0], &grads[0]);
        let mut opt = if decoupled {
            Adam::new(lr).decoupled_weight_decay(wd)
        } else {
            Adam::new(lr).weight_decay(wd)
        };
        let (mut x, mut m, mut v) = (vec![1.0f64, -2.0], vec![0.0f64; 2], vec![0.0f64; 2]);
        for (step, g) in grads.iter().enumerate() {
            p.try_set_grad(Some(Tensor::from_vec(g.to_vec(), [2], Cpu)))
                .unwrap();
            opt.step(&mut p);
            let t = (step + 1) as i32;
            for i in 0..2 {
                let gi = if decoupled { g[i] } else { g[i] + wd * x[i] };
                if decoupled {
                    x[i] *= 1.0 - lr * wd;
                }
                m[i] = b1 * m[i] + (1.0 - b1) * gi;
                v[i] = b2 * v[i] + (1.0 - b2) * gi * gi;
                let denom = (v[i] / (1.0 - b2.powi(t))).sqrt() + eps;
                x[i] -= lr / (1.0 - b1.powi(t)) * m[i] / denom;
            }
            close(&p.to_vec(), &x);
        }
        let (em, ev) = opt.moments("").unwrap();
        close(&em.to_vec(), &m);
        close(&ev.to_vec(), &v);
    }
}

/// Parameters large enough that the CPU update is split into chunks across threads (100,003
/// elements: not a whole number of chunks), on fresh random values: SGD with momentum and
/// Adam, three steps each, every element against the formula in f64.
#[test]
fn large_parameters_update_every_chunk_as_the_formula_says() {
    let mut rng = Rng::new("large_parameters_update_every_chunk_as_the_formula_says");
    let n = 100_003;
    let start = rng.values(n, -1.0, 1.0);
    let grads: Vec<Vec<f64>> = (0..3).map(|_| rng.values(n, -1.0, 1.0)).collect();
    let (lr, mom, wd) = (0.1, 0.9, 0.01);
    let mut p = param_with_grad(&start, &grads[0]);
    let mut sgd = Sgd::new(lr).momentum(mom).weight_decay(wd);
    let (mut x, mut buf) = (start.clone(), vec![0.0f64; n]);
    for (step, g) in grads.iter().enumerate() {
        p.try_set_grad(Some(Tensor::from_vec(g.clone(), [n], Cpu)))
            .unwrap();
        sgd.step(&mut p);
        for i in 0..n {
            let d = g[i] + wd * x[i];
            buf[i] = if step == 0 { d } else { mom * buf[i] + d };
            x[i] -= lr * buf[i];
        }
        close(&p.to_vec(), &x);
    }
    let (b1, b2, eps) = (0.9, 0.999, 1e-8);
    let mut p = param_with_grad(&start, &grads[0]);
    let mut adam = Adam::new(lr);
    let (mut x, mut m, mut v) = (start.clone(), vec![0.0f64; n], vec![0.0f64; n]);
    for (step, g) in grads.iter().enumerate() {
        p.try_set_grad(Some(Tensor::from_vec(g.clone(), [n], Cpu)))
            .unwrap();
        adam.step(&mut p);
        let t = (step + 1) as i32;
        for i in 0..n {
            m[i] = b1 * m[i] + (1.0 - b1) * g[i];
            v[i] = b2 * v[i] + (1.0 - b2) * g[i] * g[i];
            let denom = (v[i] / (1.0 - b2.powi(t))).sqrt() + eps;
            x[i] -= lr / (1.0 - b1.powi(t)) * m[i] / denom;
        }
        close(&p.to_vec(), &x);
    }
}

#[test]
fn parameters_without_gradients_are_left_alone() {
    let mut p = Tensor::parameter(Tensor::<Cpu>::ones([3], Cpu));
    Sgd::new(1.0).step(&mut p);
    assert_eq!(p.to_vec(), vec![1.0; 3]);
}

#[test]
fn a_shared_parameter_is_not_changed_behind_another_handles_back() {
    let mut p = param_with_grad(&[1.0, 2.0], &[1.0, 1.0]);
    let before = p.detach(); // another handle to the same storage
    Sgd::new(0.5).step(&mut p);
    assert_eq!(before.to_vec(), vec![1.0, 2.0]);
    assert_eq!(p.to_vec(), vec![0.5, 1.5]);
}

#[test]
fn optimizer_state_moves_with_to() {
    let mut p = param_with_grad(&[1.0, 2.0], &[1.0, 1.0]);
    let mut opt = Adam::new(0.1);
    opt.step(&mut p);
    let moved: Adam<Cpu, f64> = opt.to(Cpu);
    assert_eq!(
        moved.moments("").unwrap().0.to_vec(),
        opt.moments("").unwrap().0.to_vec()
    );
}

#[test]
fn a_linear_regression_converges() {
    devtype::manual_seed(11);
    let x = Tensor::<Cpu>::randn([64, 3], Cpu);
    let true_w = Tensor::from_vec(vec![2.0f32, -1.0, 0.5], [3, 1], Cpu);
    let y = &x.matmul(&true_w) + 0.25f32;
    let mut model = Linear::new(3, 1, Cpu);
    let mut opt = Sgd::new(0.1).momentum(0.9);
    let mut last = f32::INFINITY;
    for _ in 0..200 {
        model.zero_grad();
        let loss = MSELoss::new().forward(&model.forward(&x), &y);
        last = loss.item();
        loss.backward();
        opt.step(&mut model);
    }
    assert!(last < 1e-6, "loss {last}");
    let w = model.weight().to_vec();
    assert!(
        (w[0] - 2.0).abs() < 1e-3 && (w[1] + 1.0).abs() < 1e-3 && (w[2] - 0.5).abs() < 1e-3,
        "{w:?}"
    );
    assert!((model.bias().unwrap().to_vec()[0] - 0.25).abs() < 1e-3);
}

/// `x` rounded to the 16-bit type `H` and back (through f32, as the kernels round).
fn round_to<H: devtype::Float>(x: f64) -> f64 {
    Tensor::from_vec(vec![x as f32], [1], Cpu)
        .to_dtype::<H>()
        .to_dtype::<f64>()
        .to_vec()[0]
}

/// One ulp of `H` at `x`'s magnitude, relative (2^-10 for f16, 2^-7 for bf16).
fn half_ulp<H: devtype::Float>() -> f64 {
    if H::DTYPE == DType::F16 {
        2f64.powi(-10)
    } else {
        2f64.powi(-7)
    }
}

/// Pure 16-bit training (no f32 master weights): parameters and state are stored in `H`, but
/// the update runs in f32 with f32 hyper-parameters, as PyTorch's fused optimizers do. Rounding
/// `eps = 1e-8` to f16 would give zero (and 0 / 0 = NaN where a gradient is zero), rounding
/// `beta2 = 0.999` to bf16 would give one.
fn half_adam_follows_an_f64_reference<H: devtype::Float>() {
    let (lr, b1, b2, eps, wd) = (0.01, 0.9, 0.999, 1e-8, 0.1);
    // A zero gradient in the first element every step: its update must stay zero, not NaN.
    let grads = [
        [0.0, -1.0, 3.5e-3],
        [0.0, 0.75, -2.0],
        [0.0, 0.1, 0.5],
        [0.0, 1.0, 1.0],
    ];
    let start: Vec<f64> = [1.0, -2.0, 0.3].iter().map(|&v| round_to::<H>(v)).collect();
    for decoupled in [false, true] {
        let mut p = Tensor::parameter(Tensor::from_vec(start.clone(), [3], Cpu).to_dtype::<H>());
        let mut opt = if decoupled {
            Adam::<Cpu, H>::new(lr).decoupled_weight_decay(wd)
        } else {
            Adam::<Cpu, H>::new(lr).weight_decay(wd)
        };
        let l2 = if decoupled { 0.0 } else { wd };
        let (mut x, mut m, mut v) = (start.clone(), vec![0.0f64; 3], vec![0.0f64; 3]);
        for (step, g) in grads.iter().enumerate() {
            let g: Vec<f64> = g.iter().map(|&v| round_to::<H>(v)).collect();
            p.try_set_grad(Some(Tensor::from_vec(g.clone(), [3], Cpu).to_dtype::<H>()))
                .unwrap();
            opt.step(&mut p);
            let t = (step + 1) as i32;
            let decay = if decoupled { 1.0 - lr * wd } else { 1.0 };
            for i in 0..3 {
                let gi = g[i] + l2 * x[i];
                let mi = b1 * m[i] + (1.0 - b1) * gi;
                let vi = b2 * v[i] + (1.0 - b2) * gi * gi;
                m[i] = round_to::<H>(mi);
                v[i] = round_to::<H>(vi);
                let denom = vi.sqrt() / (1.0 - b2.powi(t)).sqrt() + eps;
                x[i] = round_to::<H>(x[i] * decay - lr / (1.0 - b1.powi(t)) * mi / denom);
            }
            let got = p.detach().to_dtype::<f64>().to_vec();
            assert!(got.iter().all(|v| v.is_finite()), "{:?}: {got:?}", H::DTYPE);
            for (a, b) in got.iter().zip(&x) {
                // The kernel's f32 arithmetic against f64: a rounding may flip by one ulp
                // and carry into the next steps.
                assert!(
                    (a - b).abs() <= 2.0 * half_ulp::<H>() * a.abs().max(b.abs()),
                    "{:?} step {step}: {got:?} vs {x:?}",
                    H::DTYPE
                );
            }
        }
        // AdamW: the zero-gradient element moves only by the decay (its step is 0 / eps).
        if decoupled {
            let want0 = (0..grads.len()).fold(start[0], |x, _| round_to::<H>(x * (1.0 - lr * wd)));
            assert_eq!(p.detach().to_dtype::<f64>().to_vec()[0], want0);
        }
    }
}

#[test]
fn f16_adam_computes_in_f32() {
    half_adam_follows_an_f64_reference::<f16>();
}

#[test]
fn bf16_adam_computes_in_f32() {
    half_adam_follows_an_f64_reference::<bf16>();
}

/// SGD with momentum on 16-bit parameters: the momentum buffer is stored in `H`, the update
/// runs in f32 (see above).
fn half_sgd_follows_an_f64_reference<H: devtype::Float>() {
    let (lr, mom, wd) = (0.1, 0.9, 0.01);
    let grads = [[0.5, -1.0], [0.25, 0.75], [-0.5, 0.1]];
    let start: Vec<f64> = [1.0, -2.0].iter().map(|&v| round_to::<H>(v)).collect();
    for nesterov in [false, true] {
        let mut p = Tensor::parameter(Tensor::from_vec(start.clone(), [2], Cpu).to_dtype::<H>());
        let mut opt = Sgd::<Cpu, H>::new(lr)
            .momentum(mom)
            .weight_decay(wd)
            .nesterov(nesterov);
        let (mut x, mut buf) = (start.clone(), vec![0.0f64; 2]);
        for (step, g) in grads.iter().enumerate() {
            let g: Vec<f64> = g.iter().map(|&v| round_to::<H>(v)).collect();
            p.try_set_grad(Some(Tensor::from_vec(g.clone(), [2], Cpu).to_dtype::<H>()))
                .unwrap();
            opt.step(&mut p);
            for i in 0..2 {
                let d = g[i] + wd * x[i];
                let b = if step == 0 { d } else { mom * buf[i] + d };
                buf[i] = round_to::<H>(b);
                let d = if nesterov { d + mom * b } else { b };
                x[i] = round_to::<H>(x[i] - lr * d);
            }
            let got = p.detach().to_dtype::<f64>().to_vec();
            for (a, b) in got.iter().zip(&x) {
                assert!(
                    (a - b).abs() <= 2.0 * half_ulp::<H>() * a.abs().max(b.abs()),
                    "{:?} step {step}: {got:?} vs {x:?}",
                    H::DTYPE
                );
            }
        }
    }
}

#[test]
fn f16_and_bf16_sgd_compute_in_f32() {
    half_sgd_follows_an_f64_reference::<f16>();
    half_sgd_follows_an_f64_reference::<bf16>();
}
