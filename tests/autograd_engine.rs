//! The engine: accumulation, zeroing, no-grad, errors with PyTorch's texts, shared
//! sub-expressions, gradients typed on the parameter's device, and a gradcheck that can fail.

use devtype::autograd::{gradcheck, is_grad_enabled, NoGradGuard};
use devtype::prelude::*;

fn param(values: Vec<f32>) -> Tensor<Cpu> {
    let n = values.len();
    Tensor::parameter(Tensor::from_vec(values, [n], Cpu))
}

#[test]
fn gradients_accumulate_until_zeroed() {
    let w = param(vec![1.0, 2.0, 3.0]);
    let x = Tensor::from_vec(vec![4.0f32, 5.0, 6.0], [3], Cpu);
    (&w * &x).sum_all().backward();
    (&w * &x).sum_all().backward();
    let g: Tensor<Cpu> = w.grad().unwrap();
    assert_eq!(g.to_vec(), vec![8.0, 10.0, 12.0]);
    w.zero_grad();
    assert!(w.grad().is_none());
    (&w * &w).sum_all().backward();
    assert_eq!(w.grad().unwrap().to_vec(), vec![2.0, 4.0, 6.0]);
}

#[test]
fn a_value_used_twice_gets_both_contributions() {
    let w = param(vec![0.5, -1.5]);
    let y = w.exp();
    let loss = (&y * &y + &y).sum_all(); // e^{2w} + e^w
    loss.backward();
    let expected: Vec<f32> = [0.5f32, -1.5]
        .iter()
        .map(|&v| 2.0 * (2.0 * v).exp() + v.exp())
        .collect();
    for (g, e) in w.grad().unwrap().to_vec().iter().zip(expected) {
        assert!((g - e).abs() < 1e-5, "{g} vs {e}");
    }
}

#[test]
fn backward_twice_through_one_graph_is_an_error_with_pytorchs_text() {
    let w = param(vec![1.0, 2.0]);
    let loss = w.square().sum_all();
    loss.try_backward().unwrap();
    let err = loss.try_backward().unwrap_err().to_string();
    assert!(
        err.starts_with("Trying to backward through the graph a second time"),
        "{err}"
    );
}

#[test]
fn backward_needs_a_scalar_or_a_gradient() {
    let w = param(vec![1.0, 2.0]);
    let y = &w * 3.0f32;
    assert_eq!(
        y.try_backward().unwrap_err().to_string(),
        "grad can be implicitly created only for scalar outputs"
    );
    y.backward_with(Tensor::from_vec(vec![1.0, -1.0], [2], Cpu));
    assert_eq!(w.grad().unwrap().to_vec(), vec![3.0, -3.0]);
    let c = Tensor::<Cpu>::ones([1], Cpu);
    assert_eq!(
        c.try_backward().unwrap_err().to_string(),
        "element 0 of tensors does not require grad and does not have a grad_fn"
    );
}

#[test]
fn no_grad_records_nothing() {
    let w = param(vec![1.0, 2.0]);
    let y = no_grad(|| {
        assert!(!is_grad_enabled());
        w.exp().sum_all()
    });
    assert!(is_grad_enabled());
    assert!(!y.requires_grad());
    {
        let _guard = NoGradGuard::new();
        assert!(!(&w * 2.0f32).requires_grad());
    }
    assert!((&w * 2.0f32).requires_grad());
    assert!(w.is_leaf() && !(&w * 2.0f32).is_leaf());
}

#[test]
fn display_shows_requires_grad_and_grad_fn() {
    let w = param(vec![1.0, 2.0]);
    assert_eq!(w.to_string(), "tensor([1., 2.], requires_grad=True)");
    assert_eq!(
        w.sum_all().to_string(),
        "tensor(3., grad_fn=<SumBackward0>)"
    );
}

#[test]
fn gradcheck_catches_a_wrong_gradient() {
    // f(x) = x * detach(x): the true derivative is 2x, the recorded one only x.
    let x = Tensor::<Cpu, f64>::from_vec(vec![0.5, -1.0, 2.0], [3], Cpu);
    let err = gradcheck(
        |v| Ok((&v[0] * v[0].detach()).sum_all()),
        std::slice::from_ref(&x),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with("Jacobian mismatch for output 0 with respect to input 0"),
        "{err}"
    );
    // A constant whose recorded gradient is zero while the value moves: caught too.
    let err = gradcheck(|v| Ok(v[0].detach().sum_all()), std::slice::from_ref(&x))
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("Jacobian mismatch"), "{err}");
    // And a gradient that is zero everywhere proves nothing: refused.
    let err = gradcheck(|v| Ok((-v[0].square() - 1.0).relu().sum_all()), &[x])
        .unwrap_err()
        .to_string();
    assert!(err.contains("zero everywhere"), "{err}");
}

#[test]
fn a_big_graph_frees_saved_tensors_after_backward() {
    let w = Tensor::parameter(Tensor::<Cpu>::randn([64, 64], Cpu));
    let mut h = Tensor::<Cpu>::randn([8, 64], Cpu);
    for _ in 0..20 {
        h = h.matmul(&w).tanh();
    }
    h.sum_all().backward();
    let g = w.grad().unwrap();
    assert_eq!(g.shape(), &[64, 64]);
    assert!(g.to_vec().iter().all(|v| v.is_finite()) && g.to_vec().iter().any(|&v| v != 0.0));
}

#[test]
fn gradients_flow_through_a_dtype_conversion_and_back_to_the_source_dtype() {
    let x = Tensor::parameter(Tensor::from_vec(vec![1.5f32, -2.0, 0.25], [3], Cpu));
    let y = x.to_dtype::<f64>();
    assert!(y.requires_grad());
    let loss = (&y * &y).sum_all(); // d/dx = 2x, computed in f64
    loss.backward();
    let g: Tensor<Cpu, f32> = x.grad().unwrap();
    assert_eq!(g.to_vec(), vec![3.0, -4.0, 0.5]);
    // Integer results are not tracked (no gradient can flow through them).
    assert!(!x.to_dtype::<i64>().requires_grad());
}

#[test]
fn a_tracked_tensor_prints_as_pytorch_does() {
    let w = Tensor::parameter(Tensor::from_vec(vec![1.0f32, 2.0], [2], Cpu));
    assert_eq!(w.to_string(), "tensor([1., 2.], requires_grad=True)");
    let s = w.sum_all();
    assert_eq!(s.to_string(), "tensor(3., grad_fn=<SumBackward0>)");
    assert_eq!(s.detach().to_string(), "tensor(3.)");
    let d = w.to_dyn().mul_scalar(2.0).unwrap();
    assert_eq!(d.to_string(), "tensor([2., 4.], grad_fn=<MulBackward0>)");
}
