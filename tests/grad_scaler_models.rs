//! One `GradScaler` driving several models in one iteration (PyTorch's multi-model pattern),
//! its per-model state (`READY`, `UNSCALED`, `STEPPED`) with PyTorch's errors, and weights
//! tied between layers: unscaled once, stepped once, saved once. Scaled runs are compared
//! with plain runs from the same start: the scales are powers of two, so scaling and
//! unscaling are exact and the parameters must agree bit for bit. Every case runs on the CPU
//! and, when there is one, on GPU 0.

mod common;

use common::Rng;
use devtype::amp::GradScaler;
use devtype::nn::{Linear, MSELoss, Module};
use devtype::optim::{Adam, Optimizer, Sgd};
use devtype::prelude::*;

fn random<D: Device>(rng: &mut Rng, shape: &[usize], dev: D) -> Tensor<D> {
    let n = shape.iter().product();
    let v: Vec<f32> = rng.values(n, -2.0, 2.0).iter().map(|&x| x as f32).collect();
    Tensor::<Cpu>::from_vec(v, shape, Cpu).to(dev)
}

fn linear<D: Device>(rng: &mut Rng, i: usize, o: usize, dev: D) -> Linear<D> {
    Linear::from_parameters(random(rng, &[o, i], dev), Some(random(rng, &[o], dev)))
}

/// A copy with parameters of its own.
fn copy_of<D: Device>(m: &Linear<D>) -> Linear<D> {
    Linear::from_parameters(m.weight().detach(), m.bias().map(|b| b.detach()))
}

fn values<D: Device + HostSync, M: Module<D>>(m: &M) -> Vec<Vec<f32>> {
    m.parameters().iter().map(|p| p.to(Cpu).to_vec()).collect()
}

/// Two models, their batches, and a loss of each.
struct Two<D: Device> {
    a: Linear<D>,
    b: Linear<D>,
    xa: Tensor<D>,
    ya: Tensor<D>,
    xb: Tensor<D>,
    yb: Tensor<D>,
}

impl<D: Device> Two<D> {
    fn new(seed: &str, dev: D) -> Self {
        let mut rng = Rng::new(seed);
        Two {
            a: linear(&mut rng, 5, 3, dev),
            b: linear(&mut rng, 4, 2, dev),
            xa: random(&mut rng, &[8, 5], dev),
            ya: random(&mut rng, &[8, 3], dev),
            xb: random(&mut rng, &[6, 4], dev),
            yb: random(&mut rng, &[6, 2], dev),
        }
    }

    fn copy(&self) -> Self {
        Two {
            a: copy_of(&self.a),
            b: copy_of(&self.b),
            xa: self.xa.clone(),
            ya: self.ya.clone(),
            xb: self.xb.clone(),
            yb: self.yb.clone(),
        }
    }

    fn loss(&self) -> Tensor<D> {
        let mse = MSELoss::new();
        mse.forward(&self.a.forward(&self.xa), &self.ya)
            + mse.forward(&self.b.forward(&self.xb), &self.yb)
    }

    fn zero_grad(&self) {
        self.a.zero_grad();
        self.b.zero_grad();
    }
}

fn two_models_one_scaler<D: Device + HostSync>(dev: D) {
    let mut scaled = Two::new("two_models", dev);
    let mut plain = scaled.copy();
    let (mut opt_a, mut opt_b) = (Sgd::new(0.05).momentum(0.9), Sgd::new(0.1).momentum(0.5));
    let (mut ref_a, mut ref_b) = (opt_a.clone(), opt_b.clone());
    let mut scaler = GradScaler::new(dev);
    for _ in 0..3 {
        scaled.zero_grad();
        scaler.scale(&scaled.loss()).backward();
        scaler.step(&mut opt_a, &mut scaled.a);
        scaler.step(&mut opt_b, &mut scaled.b);
        scaler.update();

        plain.zero_grad();
        plain.loss().backward();
        ref_a.step(&mut plain.a);
        ref_b.step(&mut plain.b);
    }
    // Each model's gradients were divided by the scale (exactly) before its step.
    assert_eq!(values(&scaled.a), values(&plain.a), "first model");
    assert_eq!(values(&scaled.b), values(&plain.b), "second model");
    assert_eq!(scaler.get_scale(), 65536.0);
    assert_eq!(scaler.growth_tracker(), 3);
}

#[test]
fn one_scaler_two_models_steps_each_with_unscaled_gradients() {
    two_models_one_scaler(Cpu);
    if let Some(gpu) = common::gpu() {
        two_models_one_scaler(gpu);
    }
}

fn two_models_with_adam<D: Device + HostSync>(dev: D) {
    // unscale_ of the first model by hand (as before clipping), step of both: the first is not
    // unscaled twice, the second is unscaled by its step.
    let mut scaled = Two::new("two_models_adam", dev);
    let mut plain = scaled.copy();
    let (mut opt_a, mut opt_b) = (Adam::new(0.01), Adam::new(0.02));
    let (mut ref_a, mut ref_b) = (Adam::new(0.01), Adam::new(0.02));
    let mut scaler = GradScaler::new(dev);
    for _ in 0..3 {
        scaled.zero_grad();
        scaler.scale(&scaled.loss()).backward();
        scaler.unscale_(&scaled.a);
        scaler.step(&mut opt_a, &mut scaled.a);
        scaler.step(&mut opt_b, &mut scaled.b);
        scaler.update();

        plain.zero_grad();
        plain.loss().backward();
        ref_a.step(&mut plain.a);
        ref_b.step(&mut plain.b);
    }
    for (m, (s, p)) in [
        (values(&scaled.a), values(&plain.a)),
        (values(&scaled.b), values(&plain.b)),
    ]
    .iter()
    .enumerate()
    {
        for (u, v) in s.iter().flatten().zip(p.iter().flatten()) {
            // Adam's bias corrections come from a device-side count under a scaler: they may
            // differ from the host's in the last bit.
            assert!(
                (u - v).abs() <= 1e-6 * v.abs().max(1e-3),
                "model {m}: {u} vs {v}"
            );
        }
    }
}

#[test]
fn one_scaler_two_adam_models_with_an_explicit_unscale() {
    two_models_with_adam(Cpu);
    if let Some(gpu) = common::gpu() {
        two_models_with_adam(gpu);
    }
}

fn inf_in_the_second_model<D: Device + HostSync>(dev: D) {
    let mut t = Two::new("two_models_inf", dev);
    let (mut opt_a, mut opt_b) = (Sgd::new(0.1), Sgd::new(0.1));
    let mut scaler = GradScaler::new(dev);
    let (before_a, before_b) = (values(&t.a), values(&t.b));
    t.zero_grad();
    scaler.scale(&t.loss()).backward();
    let shape = t.b.weight().shape().to_vec();
    let mut g = t.b.weight().grad().unwrap().to(Cpu).to_vec();
    g[1] = f32::INFINITY;
    t.b.weight()
        .try_set_grad(Some(Tensor::<Cpu>::from_vec(g, &shape[..], Cpu).to(dev)))
        .unwrap();
    scaler.step(&mut opt_a, &mut t.a);
    scaler.step(&mut opt_b, &mut t.b);
    scaler.update();
    // PyTorch: each optimizer steps on its own found_inf, so the first model steps and the
    // second skips; update sees the inf of either and backs off.
    assert_ne!(
        values(&t.a),
        before_a,
        "the first model's gradients were finite"
    );
    assert_eq!(
        values(&t.b),
        before_b,
        "the second model had an inf: skipped"
    );
    assert_eq!(scaler.get_scale(), 32768.0);
    assert_eq!(scaler.growth_tracker(), 0);
}

#[test]
fn an_inf_in_the_second_model_skips_it_and_backs_off() {
    inf_in_the_second_model(Cpu);
    if let Some(gpu) = common::gpu() {
        inf_in_the_second_model(gpu);
    }
}

#[test]
fn inf_in_the_second_model_only_is_seen_even_when_the_first_steps_first() {
    // The inf is in the second model, the first steps first: before, the first model's
    // unscale set the only flag and the second model was neither unscaled nor checked.
    let mut t = Two::new("two_models_inf_first", Cpu);
    let (mut opt_a, mut opt_b) = (Sgd::new(0.1), Sgd::new(0.1));
    let mut scaler = GradScaler::new(Cpu);
    let before_b = values(&t.b);
    t.zero_grad();
    scaler.scale(t.loss()).backward();
    t.b.bias()
        .unwrap()
        .try_set_grad(Some(Tensor::from_vec(vec![f32::NAN, 0.0], [2], Cpu)))
        .unwrap();
    scaler.step(&mut opt_a, &mut t.a);
    scaler.step(&mut opt_b, &mut t.b);
    assert_eq!(values(&t.b), before_b);
    scaler.update();
    assert_eq!(scaler.get_scale(), 32768.0);
}

#[test]
fn a_second_step_or_unscale_before_update_is_pytorchs_error() {
    let mut t = Two::new("two_models_twice", Cpu);
    let (mut opt_a, mut opt_b) = (Sgd::new(0.1), Sgd::new(0.1));
    let mut scaler = GradScaler::new(Cpu);
    t.zero_grad();
    scaler.scale(t.loss()).backward();
    scaler.try_unscale_(&t.a).unwrap();
    let e = scaler.try_unscale_(&t.a).unwrap_err().to_string();
    assert_eq!(
        e,
        "unscale_() has already been called on this optimizer since the last update()."
    );
    scaler.try_step(&mut opt_a, &mut t.a).unwrap();
    let after_one = values(&t.a);
    let e = scaler
        .try_step(&mut opt_a, &mut t.a)
        .unwrap_err()
        .to_string();
    assert_eq!(e, "step() has already been called since the last update().");
    assert_eq!(
        values(&t.a),
        after_one,
        "the refused step changed the model"
    );
    let e = scaler.try_unscale_(&t.a).unwrap_err().to_string();
    assert_eq!(e, "unscale_() is being called after step().");
    // The other model is still READY: its step runs.
    scaler.try_step(&mut opt_b, &mut t.b).unwrap();
    scaler.update();
    // After update every model is READY again.
    t.zero_grad();
    scaler.scale(t.loss()).backward();
    scaler.try_step(&mut opt_a, &mut t.a).unwrap();
    scaler.try_step(&mut opt_b, &mut t.b).unwrap();
    scaler.update();
    assert_eq!(scaler.growth_tracker(), 2);
}

/// Two layers whose weights are one parameter (`b.set_weight(&a.weight())`).
struct Tied<D: Device> {
    a: Linear<D>,
    b: Linear<D>,
}
devtype::module!(Tied<D> { a, b });

impl<D: Device> Tied<D> {
    fn new(seed: &str, dev: D) -> (Self, Tensor<D>, Tensor<D>) {
        let mut rng = Rng::new(seed);
        let a = linear(&mut rng, 4, 4, dev);
        let mut b = linear(&mut rng, 4, 4, dev);
        b.set_weight(a.weight());
        let x = random(&mut rng, &[6, 4], dev);
        let y = random(&mut rng, &[6, 4], dev);
        (Tied { a, b }, x, y)
    }

    fn copy(&self) -> Self {
        let a = copy_of(&self.a);
        let mut b = copy_of(&self.b);
        b.set_weight(a.weight());
        Tied { a, b }
    }

    fn loss(&self, x: &Tensor<D>, y: &Tensor<D>) -> Tensor<D> {
        MSELoss::new().forward(&self.b.forward(self.a.forward(x).relu()), y)
    }
}

fn tied_weights<D: Device + HostSync>(dev: D) {
    let (mut scaled, x, y) = Tied::new("tied", dev);
    let mut plain = scaled.copy();
    let (mut opt, mut reference) = (Sgd::new(0.05).momentum(0.9), Sgd::new(0.05).momentum(0.9));
    let mut scaler = GradScaler::new(dev);
    for _ in 0..3 {
        scaled.zero_grad();
        scaler.scale(&scaled.loss(&x, &y)).backward();
        scaler.unscale_(&scaled);
        // The one gradient of the tied weight, divided by the scale once.
        plain.zero_grad();
        plain.loss(&x, &y).backward();
        let g = |m: &Tied<D>| m.a.weight().grad().unwrap().to(Cpu).to_vec();
        assert_eq!(g(&scaled), g(&plain), "the tied weight's gradient");
        scaler.step(&mut opt, &mut scaled);
        scaler.update();
        reference.step(&mut plain);
    }
    assert_eq!(values(&scaled), values(&plain));
    // Still tied: one parameter, listed once (as PyTorch's named_parameters()), one momentum
    // buffer, and the two layers see the same value.
    let names: Vec<String> = scaled
        .named_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["a.weight", "a.bias", "b.bias"]);
    assert_eq!(scaled.num_parameters(), 16 + 4 + 4);
    assert!(opt.momentum_buffer("a.weight").is_some());
    assert!(opt.momentum_buffer("b.weight").is_none());
    assert_eq!(
        scaled.a.weight().to(Cpu).to_vec(),
        scaled.b.weight().to(Cpu).to_vec()
    );
}

#[test]
fn a_tied_weight_is_unscaled_and_stepped_once() {
    tied_weights(Cpu);
    if let Some(gpu) = common::gpu() {
        tied_weights(gpu);
    }
}

#[test]
fn adam_steps_a_tied_weight_once_and_keeps_it_tied() {
    // The tied model against the same computation with one weight used twice.
    let (mut model, x, y) = Tied::new("tied_adam", Cpu);
    let w = Tensor::parameter(model.a.weight().detach());
    let ba = Tensor::parameter(model.a.bias().unwrap().detach());
    let bb = Tensor::parameter(model.b.bias().unwrap().detach());
    let mut reference = vec![w.clone(), ba.clone(), bb.clone()];
    let mut opt = Adam::new(0.01).decoupled_weight_decay(0.1);
    let mut ref_opt = Adam::new(0.01).decoupled_weight_decay(0.1);
    for _ in 0..3 {
        model.zero_grad();
        model.loss(&x, &y).backward();
        opt.step(&mut model);
        reference.zero_grad();
        let h = (x.matmul(reference[0].t()) + &reference[1]).relu();
        let out = h.matmul(reference[0].t()) + &reference[2];
        MSELoss::new().forward(&out, &y).backward();
        ref_opt.step(&mut reference);
    }
    assert_eq!(model.a.weight().to_vec(), reference[0].to_vec());
    assert_eq!(model.b.weight().to_vec(), reference[0].to_vec());
    assert_eq!(model.b.bias().unwrap().to_vec(), reference[2].to_vec());
    assert!(opt.moments("b.weight").is_none(), "state kept for an alias");
}

#[test]
fn a_weight_shared_by_two_models_is_unscaled_once_and_checked_for_both() {
    let mut rng = Rng::new("shared_across");
    let a = linear(&mut rng, 3, 3, Cpu);
    let mut b = linear(&mut rng, 3, 3, Cpu);
    b.set_weight(a.weight());
    let x = random(&mut rng, &[5, 3], Cpu);
    let mut scaler = GradScaler::new(Cpu);
    let (mut oa, mut ob) = (Sgd::new(0.1), Sgd::new(0.1));
    let loss = (b.forward(a.forward(&x)) * 1.0f32).sum_all();
    scaler.scale(&loss).backward();
    let scaled = a.weight().grad().unwrap().to_vec();
    scaler.unscale_(&a);
    scaler.unscale_(&b);
    let once: Vec<f32> = scaled.iter().map(|g| g / 65536.0).collect();
    assert_eq!(a.weight().grad().unwrap().to_vec(), once, "unscaled twice");
    // An inf in the shared weight, found by the first model's unscale, skips the second too.
    let mut rng = Rng::new("shared_across_inf");
    let c = linear(&mut rng, 3, 3, Cpu);
    let mut d = linear(&mut rng, 3, 3, Cpu);
    d.set_weight(c.weight());
    let (mut c, mut d) = (c, d);
    let loss = d.forward(c.forward(&x)).sum_all();
    let mut s2 = GradScaler::new(Cpu);
    s2.scale(&loss).backward();
    c.weight()
        .try_set_grad(Some(Tensor::full([3, 3], f32::INFINITY, Cpu)))
        .unwrap();
    let before_d = values(&d);
    s2.step(&mut oa, &mut c);
    s2.step(&mut ob, &mut d);
    assert_eq!(
        values(&d),
        before_d,
        "the second model stepped with an inf in its weight"
    );
    s2.update();
    assert_eq!(s2.get_scale(), 32768.0);
}

fn tied_after_a_move<D: Device + HostSync>(dev: D) {
    let (model, x, y) = Tied::new("tied_move", Cpu);
    let moved = model.to(dev);
    // One parameter on the new device, listed once, with one gradient for both uses.
    let names: Vec<String> = moved
        .named_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(
        names,
        ["a.weight", "a.bias", "b.bias"],
        "the move untied the weight"
    );
    moved.loss(&x.to(dev), &y.to(dev)).backward();
    let ga = moved.a.weight().grad().unwrap().to(Cpu).to_vec();
    let gb = moved.b.weight().grad().unwrap().to(Cpu).to_vec();
    assert_eq!(ga, gb);
    // The same gradient as the tied model on the CPU: both uses summed into one.
    model.loss(&x, &y).backward();
    let want = model.a.weight().grad().unwrap().to_vec();
    for (g, w) in ga.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-5 * w.abs().max(1.0), "{g} vs {w}");
    }
    // In a Vec and a Sequential too.
    let layers = vec![model.a.clone(), model.b.clone()].to(dev);
    assert_eq!(layers.named_parameters().len(), 3);
    let seq = devtype::nn::Sequential::new((model.a.clone(), model.b.clone())).to(dev);
    assert_eq!(seq.named_parameters().len(), 3);
    // Two moves are two models: the second does not share the first's parameters.
    let again = model.to(dev);
    let p = |m: &Tied<D>| m.a.weight().clone();
    again.a.weight().zero_grad();
    assert!(p(&moved).grad().is_some() && p(&again).grad().is_none());
}

#[test]
fn a_tied_weight_stays_tied_when_the_model_moves() {
    tied_after_a_move(Cpu);
    if let Some(gpu) = common::gpu() {
        tied_after_a_move(gpu);
    }
}
