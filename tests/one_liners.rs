//! Issue 29's two dozen one-liners a PyTorch user types without thinking, as they type them
//! here (the PyTorch line in each comment). That this file compiles is half the test: each
//! line is the call a user reaches for, with no annotation PyTorch does not need. The values
//! are checked against the obvious answer on a small literal.

use devtype::nn::functional::scaled_dot_product_attention;
use devtype::nn::{CrossEntropyLoss, Linear};
use devtype::prelude::*;
use devtype::shaped::{Shaped, C};
use devtype::tensor;

#[test]
fn the_one_liners_compile_and_give_pytorchs_values() {
    let dev = Cpu;
    // 1. x = torch.tensor([[1., 5., 3.], [4., 2., 6.]])
    let x: Tensor<Cpu> = tensor!([[1., 5., 3.], [4., 2., 6.]], dev);
    // 2. x.sum()
    assert_eq!(x.sum().item(), 21.0);
    // 3. x.mean()
    assert_eq!(x.mean().item(), 3.5);
    // 4. x.sum(dim=1)
    assert_eq!(x.sum_dim(1).to_vec(), [9.0, 12.0]);
    // 5. x.mean(dim=0)
    assert_eq!(x.mean_dim(0).to_vec(), [2.5, 3.5, 4.5]);
    // 6. values, indices = x.max(dim=1)
    let (values, indices) = x.max(1).into();
    assert_eq!(
        (values.to_vec(), indices.to_vec()),
        (vec![5.0, 6.0], vec![1, 2])
    );
    // 7. x.argmax(dim=1)
    assert_eq!(x.argmax(1).to_vec(), [1, 2]);
    // 8. x.topk(2, dim=1)
    let top = x.topk(2, 1, true, true);
    assert_eq!(top.values.to_vec(), [5.0, 3.0, 6.0, 4.0]);
    // 9. x.sort(dim=1)
    assert_eq!(
        x.sort(1, false).values.to_vec(),
        [1.0, 3.0, 5.0, 2.0, 4.0, 6.0]
    );
    // 10. x.argsort(dim=1, descending=True)
    assert_eq!(x.argsort(1, true).to_vec(), [1, 2, 0, 2, 0, 1]);
    // 11. x.cumsum(dim=1)
    assert_eq!(x.cumsum(1).to_vec(), [1.0, 6.0, 9.0, 4.0, 6.0, 12.0]);
    // 12. x.masked_fill(x > 4, 0.)
    assert_eq!(
        x.masked_fill(x.gt_scalar(4.0), 0.0).to_vec(),
        [1.0, 0.0, 3.0, 4.0, 2.0, 0.0]
    );
    // 13. torch.zeros_like(x)  (same dtype and device)
    let z = Tensor::zeros_like(&x);
    assert_eq!((z.shape(), z.sum().item()), (&[2usize, 3][..], 0.0));
    // 14. torch.ones_like(d) keeps float64
    let d: Tensor<Cpu, f64> = x.double();
    let o = Tensor::ones_like(&d);
    assert_eq!((o.dtype(), o.sum().item()), (DType::F64, 6.0));
    // 15. torch.full_like(x, 7.)
    assert_eq!(Tensor::full_like(&x, 7.0).mean().item(), 7.0);
    // 16. x.half()
    let h = x.half();
    assert_eq!((h.dtype(), h.float().to_vec()), (DType::F16, x.to_vec()));
    // 17. x.bfloat16()
    assert_eq!(x.bfloat16().dtype(), DType::BF16);
    // 18. x.long()
    assert_eq!(x.long().to_vec(), [1, 5, 3, 4, 2, 6]);
    // 19. (x > 2).float()
    assert_eq!(
        x.gt_scalar(2.0).float().to_vec(),
        [0.0, 1.0, 1.0, 1.0, 0.0, 1.0]
    );
    // 20. x[:, 1:3]
    assert_eq!(x.i((.., 1..3)).to_vec(), [5.0, 3.0, 2.0, 6.0]);
    // 21. x.clamp(2., 4.)
    assert_eq!(x.clamp(2.0, 4.0).to_vec(), [2.0, 4.0, 3.0, 4.0, 2.0, 4.0]);
    // 22. x.view(-1)
    assert_eq!(x.view(&[-1]).shape(), &[6]);
    // 23. x.t() @ x  (x.t().matmul(x))
    assert_eq!(x.t().matmul(&x).shape(), &[3, 3]);
    // 24. x.softmax(dim=1).sum(dim=1)
    let rows = x.softmax(1).sum_dim(1).to_vec();
    assert!(rows.iter().all(|r| (r - 1.0).abs() < 1e-6));
}

#[test]
fn the_casts_on_the_dynamic_front() {
    let x = DynTensor::from_vec(vec![1.5f32, -2.0], [2], DynDevice::cpu()).unwrap();
    assert_eq!(x.double().unwrap().dtype(), DType::F64);
    assert_eq!(x.half().unwrap().dtype(), DType::F16);
    assert_eq!(x.bfloat16().unwrap().dtype(), DType::BF16);
    assert_eq!(x.long().unwrap().to_vec::<i64>().unwrap(), [1, -2]);
    assert_eq!(x.bool().unwrap().dtype(), DType::Bool);
    assert_eq!(
        x.long().unwrap().float().unwrap().to_vec::<f32>().unwrap(),
        [1.0, -2.0]
    );
    // A cast of a tracked tensor passes the gradient back (as `x.double()` in PyTorch).
    let w = Tensor::parameter(Tensor::<Cpu>::from_vec(vec![1.0, 2.0], [2], Cpu));
    w.double().square().sum().backward();
    assert_eq!(w.grad().unwrap().to_vec(), [2.0, 4.0]);
}

/// A helper that takes its tensors by reference and passes them on with one `&` more than
/// needed (`&x` where `x: &Tensor`, as code moved out of `main` into a function often does):
/// the same values as with `x` itself, and no device error for a mistake that is not one.
#[test]
fn a_reference_to_a_reference_is_an_operand() {
    // The same step twice: with `&` before every tensor argument (`&x`, a `&&Tensor`), and
    // without (`x`, the `&Tensor` itself). The extra borrows are the point here (clippy
    // suggests dropping them, as it should in a user's code).
    macro_rules! step {
        ($name:ident, $($by:tt)?) => {
            #[allow(clippy::op_ref)]
            fn $name(
                model: &Linear<Cpu>,
                x: &Tensor<Cpu>,
                w: &Tensor<Cpu>,
                y: &Tensor<Cpu, i64>,
                keep: &Tensor<Cpu, bool>,
            ) -> [Vec<f32>; 9] {
                let loss_fn = CrossEntropyLoss::<Cpu>::new();
                let logits = model.forward($($by)? x);
                let loss = loss_fn.forward(&logits, $($by)? y);
                let p = Tensor::parameter(x.clone());
                let out = p.matmul($($by)? w);
                out.backward_with($($by)? &out);
                let mut layer = Linear::new(3, 3, Cpu);
                layer.set_weight($($by)? w);
                layer.clear_bias();
                let picked = x.gt(&x.neg()).where_cond($($by)? x, $($by)? x.neg());
                let attended = scaled_dot_product_attention(x, x, x, $($by)? keep, false, 0.0);
                let xs: Shaped<Cpu, f32, (C<5>, C<3>)> = x.clone().into_shaped();
                let ws: Shaped<Cpu, f32, (C<3>, C<3>)> = w.clone().into_shaped();
                let (xs, ws) = (&xs, &ws);
                [
                    x.matmul($($by)? w).to_vec(),
                    (x + $($by)? x).to_vec(),
                    x.maximum($($by)? x).to_vec(),
                    loss.to_vec(),
                    p.grad().expect("a gradient").to_vec(),
                    layer.forward(x).to_vec(),
                    picked.to_vec(),
                    attended.to_vec(),
                    xs.matmul($($by)? ws).into_tensor().to_vec(),
                ]
            }
        };
    }
    step!(step, &);
    step!(step_once,);
    let model = Linear::new(3, 4, Cpu);
    let x = Tensor::<Cpu>::randn([5, 3], Cpu);
    let w = Tensor::<Cpu>::randn([3, 3], Cpu);
    let y = Tensor::<Cpu, i64>::from_vec(vec![0, 3, 1, 2, 3], [5], Cpu);
    // Each query sees the keys up to its own position.
    let keep =
        Tensor::<Cpu, bool>::from_vec((0..25).map(|i| i % 5 <= i / 5).collect(), [5, 5], Cpu);
    let twice = step(&model, &x, &w, &y, &keep);
    assert_eq!(twice, step_once(&model, &x, &w, &y, &keep));
    // |x| by `where_cond`, and the layer given `w` computes x @ w^T.
    assert_eq!(twice[6], x.abs().to_vec());
    assert_eq!(twice[5], x.matmul(w.t()).to_vec());
    // x @ w by hand, and the operands still usable afterwards.
    let (xs, ws) = (x.to_vec(), w.to_vec());
    for i in 0..5 {
        for j in 0..3 {
            let want: f32 = (0..3).map(|p| xs[i * 3 + p] * ws[p * 3 + j]).sum();
            assert!((twice[0][i * 3 + j] - want).abs() <= 1e-5 * (1.0 + want.abs()));
        }
    }
}
