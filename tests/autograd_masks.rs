//! The masks and edge cases of the backward rules, against PyTorch's formulas
//! (`derivatives.yaml` and `FunctionsManual.cpp`): each expected value below is written from
//! the formula cited next to it, at the points where the plain derivative is 0 * inf, 0 / 0
//! or log(0). Every case runs on the CPU and, when there is one, on GPU 0.

mod common;

use devtype::prelude::*;

const INF: f64 = f64::INFINITY;

/// `a == b` element-wise, NaN equal to NaN and infinities by sign.
fn same(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| (x.is_nan() && y.is_nan()) || x == y || (x - y).abs() < 1e-12)
}

#[track_caller]
fn assert_same(what: &str, got: Vec<f64>, want: &[f64]) {
    assert!(same(&got, want), "{what}: got {got:?}, want {want:?}");
}

fn param<D: Device>(values: &[f64], dev: D) -> Tensor<D, f64> {
    Tensor::parameter(Tensor::<Cpu, f64>::from_vec(values.to_vec(), [values.len()], Cpu).to(dev))
}

fn grad<D: Device + HostSync>(p: &Tensor<D, f64>) -> Vec<f64> {
    p.grad().expect("a gradient").to(Cpu).to_vec()
}

fn pow_tensor_exponent<D: Device + HostSync>(dev: D) {
    let x = param(&[0.0, 0.0, 0.0, 2.0, 0.0], dev);
    let y = param(&[0.0, 2.0, 0.5, 0.0, -1.0], dev);
    x.pow(&y).sum_all().backward();
    // pow_backward_self: where(exponent == 0, 0, grad * exponent * self.pow(exponent - 1))
    //   [0^0: 0, 2 * 0^1 = 0, 0.5 * 0^-0.5 = inf, 2^0: 0, -1 * 0^-2 = -inf]
    assert_same("d x^y / dx", grad(&x), &[0.0, 0.0, INF, 0.0, -INF]);
    // pow_backward_exponent: grad * where(self == 0 & exponent >= 0, 0, result * self.log())
    //   [0, 0, 0, 2^0 * ln 2, 0^-1 * log 0 = inf * -inf = -inf]
    assert_same(
        "d x^y / dy",
        grad(&y),
        &[0.0, 0.0, 0.0, std::f64::consts::LN_2, -INF],
    );
}

#[test]
fn pow_of_tensors_masks_a_zero_base_as_pytorch() {
    pow_tensor_exponent(Cpu);
    if let Some(gpu) = common::gpu() {
        pow_tensor_exponent(gpu);
    }
}

fn pow_broadcast<D: Device + HostSync>(dev: D) {
    // The masks broadcast with the operands: the exponent's gradient is summed back to [2].
    let x = param(&[0.0, 3.0, 0.0, 1.0, 0.0, 2.0], dev).reshape(&[3, 2]);
    let y = param(&[0.0, 2.0], dev);
    let xl = x.clone();
    xl.pow(&y).sum_all().backward();
    // column 0: y = 0 everywhere: d/dx = 0 (masked), d/dy = sum of [0 (0^0 masked), 1 * ln 1, 0]
    // column 1: y = 2: d/dx = 2x, d/dy = sum of x^2 ln x = 9 ln 3 + 0 + 4 ln 2
    assert_same(
        "d/dy broadcast",
        grad(&y),
        &[0.0, 9.0 * 3f64.ln() + 4.0 * 2f64.ln()],
    );
}

#[test]
fn pow_masks_broadcast_with_the_operands() {
    pow_broadcast(Cpu);
    if let Some(gpu) = common::gpu() {
        pow_broadcast(gpu);
    }
}

fn pow_scalar_exponent_zero<D: Device + HostSync>(dev: D) {
    let x = param(&[0.0, 1.5, -2.0], dev);
    x.pow_scalar(0.0).sum_all().backward();
    // pow_backward: exponent == 0 gives zeros_like(self) (not 0 * 0^-1 = NaN at 0).
    assert_same("d x^0 / dx", grad(&x), &[0.0, 0.0, 0.0]);
    let x = param(&[0.0, 1.5, -2.0], dev);
    x.pow_scalar(2.0).sum_all().backward();
    // pow_backward: grad * 2 * self^1.
    assert_same("d x^2 / dx", grad(&x), &[0.0, 3.0, -4.0]);
    let x = param(&[0.0, 4.0], dev);
    x.pow_scalar(0.5).sum_all().backward();
    // pow_backward: 0.5 * 0^-0.5 = inf (PyTorch does not mask a positive exponent).
    assert_same("d x^0.5 / dx", grad(&x), &[INF, 0.25]);
}

#[test]
fn pow_of_a_scalar_exponent_zero_has_zero_gradient() {
    pow_scalar_exponent_zero(Cpu);
    if let Some(gpu) = common::gpu() {
        pow_scalar_exponent_zero(gpu);
    }
}

fn polynomial_features<D: Device + HostSync>(dev: D) {
    // Polynomial features [x^0, x^1, x^2] of an input holding a zero, then a linear layer:
    // the weight's gradient must stay finite (it was NaN everywhere through x^0).
    let x = Tensor::<Cpu, f64>::from_vec(vec![0.0, 1.0, 2.0], [3, 1], Cpu).to(dev);
    let x = Tensor::parameter(x);
    let powers = Tensor::<Cpu, f64>::from_vec(vec![0.0, 1.0, 2.0], [1, 3], Cpu).to(dev);
    let w = param(&[0.5, -1.0, 2.0], dev);
    let feats = x.pow(&powers); // [3, 3]
    (&feats * &w).sum_all().backward();
    // d/dw = sum over rows of x^k: [3, 3, 5]; d/dx = sum_k w_k k x^(k-1), masked at k = 0:
    // x = 0: -1 + 0 = -1; x = 1: -1 + 4 = 3; x = 2: -1 + 8 = 7.
    assert_same("d/dw", grad(&w), &[3.0, 3.0, 5.0]);
    assert_same("d/dx", grad(&x), &[-1.0, 3.0, 7.0]);
}

#[test]
fn polynomial_features_of_a_zero_input_keep_finite_gradients() {
    polynomial_features(Cpu);
    if let Some(gpu) = common::gpu() {
        polynomial_features(gpu);
    }
}

#[test]
fn requires_grad_on_a_result_keeps_it_in_the_graph() {
    let w = Tensor::parameter(Tensor::<Cpu>::from_vec(vec![1.0, 2.0], [2], Cpu));
    let y = (&w * 3.0f32).requires_grad_();
    assert!(!y.is_leaf(), "requires_grad_ on a result made a new leaf");
    y.sum_all().backward();
    // PyTorch: `y.requires_grad_()` returns y unchanged, so w gets d(3w)/dw = 3.
    assert_eq!(w.grad().map(|g| g.to_vec()), Some(vec![3.0, 3.0]));
}

#[test]
fn requires_grad_on_a_parameter_keeps_its_grad_and_identity() {
    let w = Tensor::parameter(Tensor::<Cpu>::from_vec(vec![1.0, 2.0], [2], Cpu));
    (&w * 2.0f32).sum_all().backward();
    let w2 = w.clone().requires_grad_();
    assert_eq!(w2.grad().map(|g| g.to_vec()), Some(vec![2.0, 2.0]));
    // Still one parameter: a backward through the new handle accumulates into the same grad.
    (&w2 * 1.0f32).sum_all().backward();
    assert_eq!(w.grad().map(|g| g.to_vec()), Some(vec![3.0, 3.0]));
}

#[test]
fn requires_grad_on_an_untracked_tensor_makes_a_parameter() {
    let t = Tensor::<Cpu>::from_vec(vec![1.0, 2.0], [2], Cpu).requires_grad_();
    assert!(t.requires_grad() && t.is_leaf());
    (&t * 5.0f32).sum_all().backward();
    assert_eq!(t.grad().map(|g| g.to_vec()), Some(vec![5.0, 5.0]));
}

fn relu_at_zero_and_nan<D: Device + HostSync>(dev: D) {
    let nan = f64::NAN;
    let x = param(&[-1.0, 0.0, -0.0, 2.0, nan], dev);
    x.relu().sum_all().backward();
    // derivatives.yaml relu: threshold_backward(grad, result, 0), i.e. result <= 0 ? 0 : grad:
    // 0 at 0 (and -0), and the gradient passes at NaN (NaN <= 0 is false).
    assert_same("relu'", grad(&x), &[0.0, 0.0, 0.0, 1.0, 1.0]);
    let a = param(&[-1.0, 0.5, nan], dev);
    let b = param(&[1.0, 0.5, 1.0], dev);
    a.add_relu(&b).sum_all().backward();
    // relu(a + b): the same mask on the sum [0, 1, NaN].
    assert_same("add_relu' a", grad(&a), &[0.0, 1.0, 1.0]);
    assert_same("add_relu' b", grad(&b), &[0.0, 1.0, 1.0]);
}

#[test]
fn relu_masks_zero_and_passes_nan_as_threshold_backward() {
    relu_at_zero_and_nan(Cpu);
    if let Some(gpu) = common::gpu() {
        relu_at_zero_and_nan(gpu);
    }
}

fn poles_and_kinks<D: Device + HostSync>(dev: D) {
    let nan = f64::NAN;
    // abs: grad * self.sgn(): 0 at 0 (and -0), 0 at NaN (sign's vectorized (0 < x) - (x < 0)).
    let x = param(&[-2.0, 0.0, -0.0, 3.0, nan], dev);
    x.abs().sum_all().backward();
    assert_same("abs'", grad(&x), &[-1.0, 0.0, 0.0, 1.0, 0.0]);
    // sqrt: grad / (2 * result): inf at 0, NaN below 0 (result NaN).
    let x = param(&[0.0, 4.0, -1.0], dev);
    x.sqrt().sum_all().backward();
    assert_same("sqrt'", grad(&x), &[INF, 0.25, nan]);
    // log: grad / self: inf at 0, -inf at -0.
    let x = param(&[0.0, -0.0, 2.0], dev);
    x.log().sum_all().backward();
    assert_same("log'", grad(&x), &[INF, -INF, 0.5]);
    // reciprocal: -grad * result^2: -inf at 0.
    let x = param(&[0.0, 2.0], dev);
    x.reciprocal().sum_all().backward();
    assert_same("reciprocal'", grad(&x), &[-INF, -0.25]);
    // div: self: grad / other; other: -grad * self / other^2 (div_tensor_other_backward).
    let a = param(&[1.0, 0.0, -1.0], dev);
    let b = param(&[0.0, 0.0, 2.0], dev);
    (&a / &b).sum_all().backward();
    assert_same("d(a/b)/da", grad(&a), &[INF, INF, 0.5]);
    // -(a / b) / b: [-(inf / 0) = -inf, -(NaN / 0) = NaN, -(-0.5 / 2) = 0.25]
    assert_same("d(a/b)/db", grad(&b), &[-INF, nan, 0.25]);
}

#[test]
fn poles_and_kinks_follow_pytorchs_formulas() {
    poles_and_kinks(Cpu);
    if let Some(gpu) = common::gpu() {
        poles_and_kinks(gpu);
    }
}

fn clamps_and_extremes<D: Device + HostSync>(dev: D) {
    let nan = f64::NAN;
    // clamp_backward: grad * (self >= min & self <= max): passes at both bounds, 0 at NaN.
    let x = param(&[-2.0, -1.0, 0.0, 1.0, 2.0, nan], dev);
    x.clamp(-1.0, 1.0).sum_all().backward();
    assert_same("clamp'", grad(&x), &[0.0, 1.0, 1.0, 1.0, 0.0, 0.0]);
    // clamp_min: where(self >= min, grad, 0); clamp_max: where(self <= max, grad, 0).
    let x = param(&[-1.0, 0.0, 1.0, nan], dev);
    x.clamp_min(0.0).sum_all().backward();
    assert_same("clamp_min'", grad(&x), &[0.0, 1.0, 1.0, 0.0]);
    let x = param(&[-1.0, 0.0, 1.0, nan], dev);
    x.clamp_max(0.0).sum_all().backward();
    assert_same("clamp_max'", grad(&x), &[1.0, 1.0, 0.0, 0.0]);
    // max(): evenly_distribute_backward: ties share, a NaN result goes to the NaNs.
    let x = param(&[3.0, 1.0, 3.0, 2.0], dev);
    x.max_all().backward();
    assert_same("max_all' ties", grad(&x), &[0.5, 0.0, 0.5, 0.0]);
    let x = param(&[3.0, nan, 1.0], dev);
    x.max_all().backward();
    assert_same("max_all' NaN", grad(&x), &[0.0, 1.0, 0.0]);
    // max(dim): value_selecting_reduction_backward at the index max returns (the NaN's, where
    // there is one; the first of a tie).
    let x = param(&[1.0, nan, 5.0, 2.0, 2.0, 0.0], dev);
    x.reshape(&[2, 3]).max(1).values.sum_all().backward();
    assert_same("max(1)'", grad(&x), &[0.0, 1.0, 0.0, 1.0, 0.0, 0.0]);
    // maximum: ties split in half (derivatives.yaml maximum).
    let a = param(&[1.0, 2.0], dev);
    let b = param(&[1.0, 0.0], dev);
    a.maximum(&b).sum_all().backward();
    assert_same("maximum' a", grad(&a), &[0.5, 1.0]);
    assert_same("maximum' b", grad(&b), &[0.5, 0.0]);
}

#[test]
fn clamps_and_extremes_follow_pytorchs_masks() {
    clamps_and_extremes(Cpu);
    if let Some(gpu) = common::gpu() {
        clamps_and_extremes(gpu);
    }
}
