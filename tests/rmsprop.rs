//! `RMSprop` against `torch.optim.RMSprop` (recorded by `scripts/torch_rmsprop.py`): six
//! steps on two parameters under four settings (default; centered with momentum and weight
//! decay; momentum; centered with `alpha < 0.5`), the parameters and the state (PyTorch's
//! names: `square_avg`, `momentum_buffer`, `grad_avg`); PyTorch's argument errors; a skipped
//! step changes nothing; and on a GPU the same values as the CPU.

mod common;

#[path = "reference/rmsprop_torch.rs"]
#[allow(dead_code, clippy::excessive_precision, clippy::approx_constant)]
mod torch;

use devtype::optim::{Optimizer, RMSprop};
use devtype::prelude::*;

fn close(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 2e-6 * (1.0 + w.abs()),
            "{what}[{i}]: got {g}, PyTorch {w}"
        );
    }
}

fn grads(i: usize) -> (&'static [f32], &'static [f32]) {
    use torch::*;
    [
        (G0_0, G1_0),
        (G0_1, G1_1),
        (G0_2, G1_2),
        (G0_3, G1_3),
        (G0_4, G1_4),
        (G0_5, G1_5),
    ][i]
}

/// Six steps from the recorded start with the recorded gradients.
fn run<D: Device>(opt: &mut RMSprop<D>, dev: D) -> Vec<Tensor<D>> {
    let mut model = vec![
        Tensor::parameter(Tensor::from_vec(torch::P0.to_vec(), [3, 4], dev)),
        Tensor::parameter(Tensor::from_vec(torch::P1.to_vec(), [5], dev)),
    ];
    for i in 0..6 {
        let (g0, g1) = grads(i);
        model[0]
            .try_set_grad(Some(Tensor::from_vec(g0.to_vec(), [3, 4], dev)))
            .unwrap();
        model[1]
            .try_set_grad(Some(Tensor::from_vec(g1.to_vec(), [5], dev)))
            .unwrap();
        opt.step(&mut model);
    }
    model
}

type Case = (
    &'static str,
    fn() -> (f64, f64, f64, f64, f64, bool),
    [&'static [f32]; 5],
);

fn cases() -> Vec<Case> {
    use torch::*;
    vec![
        (
            "default",
            || (0.01, 0.99, 1e-8, 0.0, 0.0, false),
            [DEFAULT_P0, DEFAULT_P1, DEFAULT_SQ0, &[], &[]],
        ),
        (
            "all",
            || (0.01, 0.9, 1e-6, 0.1, 0.8, true),
            [ALL_P0, ALL_P1, ALL_SQ0, ALL_MB0, ALL_GA0],
        ),
        (
            "momentum",
            || (0.02, 0.99, 1e-8, 0.0, 0.5, false),
            [MOMENTUM_P0, MOMENTUM_P1, MOMENTUM_SQ0, MOMENTUM_MB0, &[]],
        ),
        (
            "centered",
            || (0.005, 0.3, 1e-8, 0.0, 0.0, true),
            [CENTERED_P0, CENTERED_P1, CENTERED_SQ0, &[], CENTERED_GA0],
        ),
    ]
}

fn check_against_torch<D: Device + HostSync>(dev: D) {
    for (name, settings, want) in cases() {
        let (lr, alpha, eps, wd, momentum, centered) = settings();
        let mut opt = RMSprop::<D>::new(lr)
            .alpha(alpha)
            .eps(eps)
            .weight_decay(wd)
            .momentum(momentum)
            .centered(centered);
        let model = run(&mut opt, dev);
        close(&format!("{name} p0"), &model[0].to(Cpu).to_vec(), want[0]);
        close(&format!("{name} p1"), &model[1].to(Cpu).to_vec(), want[1]);
        close(
            &format!("{name} square_avg"),
            &opt.square_avg("0").unwrap().to(Cpu).to_vec(),
            want[2],
        );
        match opt.momentum_buffer("0") {
            Some(b) => close(
                &format!("{name} momentum_buffer"),
                &b.to(Cpu).to_vec(),
                want[3],
            ),
            None => assert!(want[3].is_empty(), "{name}: no momentum buffer"),
        }
        match opt.grad_avg("0") {
            Some(b) => close(&format!("{name} grad_avg"), &b.to(Cpu).to_vec(), want[4]),
            None => assert!(want[4].is_empty(), "{name}: no grad_avg"),
        }
    }
}

#[test]
fn matches_pytorch() {
    check_against_torch(Cpu);
}

#[test]
fn arguments_are_checked_as_pytorch() {
    let text = |o: RMSprop<Cpu>| o.check().unwrap_err().to_string();
    assert_eq!(text(RMSprop::new(-0.1)), "Invalid learning rate: -0.1");
    assert_eq!(
        text(RMSprop::new(0.1).eps(-1.0)),
        "Invalid epsilon value: -1.0"
    );
    assert_eq!(
        text(RMSprop::new(0.1).momentum(-0.5)),
        "Invalid momentum value: -0.5"
    );
    assert_eq!(
        text(RMSprop::new(0.1).weight_decay(-0.01)),
        "Invalid weight_decay value: -0.01"
    );
    assert_eq!(
        text(RMSprop::new(0.1).alpha(-1.0)),
        "Invalid alpha value: -1.0"
    );
    assert_eq!(text(RMSprop::new(f64::NAN)), "Invalid learning rate: nan");
    // A bad learning rate set later fails the step before anything changes.
    let mut opt = RMSprop::<Cpu>::new(0.1);
    opt.set_lr(-1.0);
    let p = Tensor::parameter(Tensor::<Cpu>::ones([2], Cpu));
    p.try_set_grad(Some(Tensor::ones([2], Cpu))).unwrap();
    let mut model = vec![p];
    assert!(opt.try_step(&mut model).is_err());
    assert_eq!(model[0].to_vec(), [1.0, 1.0]);
    assert!(opt.square_avg("0").is_none());
}

#[test]
fn a_skipped_step_changes_nothing() {
    let mut opt = RMSprop::<Cpu>::new(0.1).momentum(0.9).centered(true);
    let p = Tensor::parameter(Tensor::<Cpu>::from_vec(vec![1.0, 2.0], [2], Cpu));
    let mut model = vec![p];
    model[0]
        .try_set_grad(Some(Tensor::from_vec(vec![0.5, -1.0], [2], Cpu)))
        .unwrap();
    opt.step(&mut model);
    let before = model[0].to_vec();
    let sq = opt.square_avg("0").unwrap().to_vec();
    let skip = Tensor::<Cpu, bool>::from_vec(vec![true], [], Cpu);
    opt.try_step_unless(&mut model, &skip).unwrap();
    assert_eq!(model[0].to_vec(), before);
    assert_eq!(opt.square_avg("0").unwrap().to_vec(), sq);
    let go = Tensor::<Cpu, bool>::from_vec(vec![false], [], Cpu);
    opt.try_step_unless(&mut model, &go).unwrap();
    assert_ne!(model[0].to_vec(), before);
}

#[test]
fn cuda_matches_pytorch() {
    let Some(gpu) = common::gpu() else { return };
    check_against_torch(gpu);
}
