//! `+=`, `-=`, `*=`, `/=` on `Tensor`: values, broadcasting into `self`'s shape, autograd as
//! PyTorch's in-place ops (leaf error, rebound `grad_fn`), and the device-order traits in
//! generic code.

use devtype::prelude::*;

#[test]
fn compound_assignments_compute_in_place() {
    let mut a = Tensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], [2, 2], Cpu);
    let b = Tensor::from_vec(vec![10.0f32, 20.0], [2], Cpu);
    a += &b;
    assert_eq!(a.to_vec(), vec![11.0, 22.0, 13.0, 24.0]);
    a -= b.clone();
    assert_eq!(a.to_vec(), vec![1.0, 2.0, 3.0, 4.0]);
    a *= 2.0;
    assert_eq!(a.to_vec(), vec![2.0, 4.0, 6.0, 8.0]);
    a /= &Tensor::full([2, 2], 2.0f32, Cpu);
    assert_eq!(a.to_vec(), vec![1.0, 2.0, 3.0, 4.0]);
    a += 1.0;
    a -= 0.5;
    a /= 0.5;
    assert_eq!(a.to_vec(), vec![3.0, 5.0, 7.0, 9.0]);
    assert_eq!(a.shape(), &[2, 2]);

    let mut n = Tensor::from_vec(vec![1i64, 2, 3], [3], Cpu);
    n *= &Tensor::from_vec(vec![2i64, 2, 2], [3], Cpu);
    n += 1;
    assert_eq!(n.to_vec(), vec![3, 5, 7]);
}

#[test]
fn running_sum_over_a_loop() {
    let mut running = Tensor::<Cpu>::zeros([3], Cpu);
    for i in 0..4 {
        let stat = Tensor::full([3], i as f32, Cpu);
        running += &stat;
    }
    assert_eq!(running.to_vec(), vec![6.0, 6.0, 6.0]);
}

#[test]
#[should_panic(expected = "output with shape [2] doesn't match the broadcast shape [2, 2]")]
fn result_must_keep_the_shape_of_self() {
    let mut a = Tensor::<Cpu>::zeros([2], Cpu);
    a += &Tensor::<Cpu>::ones([2, 2], Cpu);
}

#[test]
#[should_panic(
    expected = "a leaf Variable that requires grad is being used in an in-place operation."
)]
fn in_place_on_a_leaf_that_requires_grad_is_an_error() {
    let mut w = Tensor::parameter(Tensor::<Cpu>::ones([2], Cpu));
    w += 1.0;
}

#[test]
fn in_place_on_a_leaf_under_no_grad_updates_it() {
    let mut w = Tensor::parameter(Tensor::<Cpu>::ones([2], Cpu));
    no_grad(|| w -= &Tensor::full([2], 0.25f32, Cpu));
    assert_eq!(w.to_vec(), vec![0.75, 0.75]);
    assert!(w.requires_grad() && w.is_leaf());
}

#[test]
fn in_place_on_a_tracked_result_records_it() {
    let w = Tensor::parameter(Tensor::from_vec(vec![1.0f32, 2.0], [2], Cpu));
    let mut y = &w * 2.0;
    y += &w; // y = 3w
    y *= &w; // y = 3w^2, dy/dw = 6w
    assert_eq!(y.to_vec(), vec![3.0, 12.0]);
    y.sum_all().backward();
    assert_eq!(w.grad().unwrap().to_vec(), vec![6.0, 12.0]);
}

#[test]
fn untracked_lhs_with_tracked_rhs_becomes_tracked() {
    let w = Tensor::parameter(Tensor::from_vec(vec![1.0f32, 2.0], [2], Cpu));
    let mut acc = Tensor::<Cpu>::zeros([2], Cpu);
    acc += &w;
    acc += &w;
    assert!(acc.requires_grad());
    acc.sum_all().backward();
    assert_eq!(w.grad().unwrap().to_vec(), vec![2.0, 2.0]);
}

/// Element-wise ops, comparisons, `where_cond`, in-place ops and argument-checked ops in code
/// generic over the device: the ordering parameters of `OperandOn` resolve for any `D`.
fn generic_step<D: Device>(x: &Tensor<D>, y: &Tensor<D>) -> Tensor<D> {
    let mut s = x + y;
    s += y;
    let mask = x.lt(y);
    let picked = mask.where_cond(&s, y);
    picked.matmul(&y.reshape(&[-1, 1]))
}

fn generic_with_bound<D: Device, R: OperandOn<D> + HasDevice<Element = f32>>(
    x: &Tensor<D>,
    r: R,
) -> Tensor<D> {
    x.matmul(r)
}

#[test]
fn ordering_traits_hold_for_generic_devices() {
    let x = Tensor::from_vec(vec![1.0f32, 5.0], [2], Cpu);
    let y = Tensor::from_vec(vec![2.0f32, 3.0], [2], Cpu);
    // s = x + 2y = [5, 11]; mask = x < y = [true, false]; picked = [5, 3]; dot with y = 19.
    assert_eq!(generic_step(&x, &y).to_vec(), vec![19.0]);
    let m = Tensor::from_vec(vec![1.0f32, 2.0], [1, 2], Cpu);
    let v = Tensor::from_vec(vec![3.0f32, 4.0], [2, 1], Cpu);
    assert_eq!(generic_with_bound(&m, &v).to_vec(), vec![11.0]);
}
