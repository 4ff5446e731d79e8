//! `devtype::shaped`: values against the dynamic API (and f64 sums for the products) on random
//! inputs, the run-time texts where a size is `Dyn`, and the checked conversions.

use devtype::nn::ReLU;
use devtype::prelude::*;
use devtype::shaped::nn::{Seq, StaticLinear};
use devtype::shaped::{Axis, Dyn, Shaped, C};

type M<A, B> = Shaped<Cpu, f32, (A, B)>;

fn same(a: &Tensor<Cpu>, b: &Tensor<Cpu>, what: &str) {
    assert_eq!(a.shape(), b.shape(), "{what}: shape");
    assert_eq!(a.to_vec(), b.to_vec(), "{what}: values");
}

#[test]
fn element_wise_ops_broadcast_as_the_dynamic_ones() {
    let a: Shaped<Cpu, f32, (Dyn, C<3>, C<4>)> = Shaped::randn([5, 3, 4], Cpu);
    let b: Shaped<Cpu, f32, (C<1>, C<4>)> = Shaped::randn([1, 4], Cpu);
    let c: Shaped<Cpu, f32, (C<4>,)> = Shaped::randn([4], Cpu);
    let sum = &a + &b; // (Dyn, C<3>, C<4>)
    let _: &Shaped<Cpu, f32, (Dyn, C<3>, C<4>)> = &sum;
    same(sum.tensor(), &(a.tensor() + b.tensor()), "a + b");
    same(a.sub(&c).tensor(), &a.tensor().sub(c.tensor()), "a - c");
    same(
        b.mul(&a).tensor(),
        &b.tensor().mul(a.tensor()),
        "b * a (rank 2 with rank 3)",
    );
    same((&a / &c).tensor(), &a.tensor().div(c.tensor()), "a / c");
    same(a.relu().tensor(), &a.tensor().relu(), "relu");
    same(
        a.maximum(&b).tensor(),
        &a.tensor().maximum(b.tensor()),
        "maximum",
    );
}

#[test]
fn matmul_bmm_and_linear_match_f64_sums() {
    let x: M<Dyn, C<7>> = Shaped::randn([5, 7], Cpu);
    let w: M<C<7>, C<3>> = Shaped::randn([7, 3], Cpu);
    let y = x.matmul(&w);
    let _: &M<Dyn, C<3>> = &y;
    let (xv, wv, yv) = (x.to_vec(), w.to_vec(), y.to_vec());
    for i in 0..5 {
        for j in 0..3 {
            let want: f64 = (0..7)
                .map(|k| xv[i * 7 + k] as f64 * wv[k * 3 + j] as f64)
                .sum();
            assert!((yv[i * 3 + j] as f64 - want).abs() < 1e-4, "({i}, {j})");
        }
    }
    let a: Shaped<Cpu, f32, (C<2>, Dyn, C<4>)> = Shaped::randn([2, 3, 4], Cpu);
    let b: Shaped<Cpu, f32, (C<2>, C<4>, C<5>)> = Shaped::randn([2, 4, 5], Cpu);
    same(a.bmm(&b).tensor(), &a.tensor().bmm(b.tensor()), "bmm");
    let w4: M<C<20>, Dyn> = Shaped::randn([20, 1], Cpu);
    let w4 = w4.reshape::<(C<4>, Dyn)>(); // [4, 5]
    same(
        a.matmul(&w4).tensor(),
        &a.tensor().matmul(w4.tensor()),
        "3-D @ 2-D",
    );
    let weight: M<C<3>, C<7>> = Shaped::randn([3, 7], Cpu);
    let bias: Shaped<Cpu, f32, (C<3>,)> = Shaped::randn([3], Cpu);
    same(
        x.linear(&weight, Some(&bias)).tensor(),
        &x.tensor().linear(weight.tensor(), Some(bias.tensor())),
        "linear",
    );
}

#[test]
fn shape_changes_match_the_dynamic_ones() {
    let img: Shaped<Cpu, f32, (Dyn, C<28>, C<28>)> = Shaped::randn([3, 28, 28], Cpu);
    let flat = img.flatten();
    let _: &M<Dyn, C<784>> = &flat; // 28 * 28, computed by typenum
    same(flat.tensor(), &img.tensor().flatten(1, -1), "flatten");
    let back = flat.reshape::<(Dyn, C<28>, C<28>)>();
    same(back.tensor(), img.tensor(), "reshape back");
    let viewed = flat.view::<(Dyn, C<4>, C<196>)>();
    same(viewed.tensor(), &flat.tensor().view(&[-1, 4, 196]), "view");
    assert!(viewed.tensor().shares_storage_with(flat.tensor()));
    let t = img.transpose::<1, 2>();
    same(t.tensor(), &img.tensor().transpose(1, 2), "transpose");
    let p = img.permute::<(C<2>, C<0>, C<1>)>();
    let _: &Shaped<Cpu, f32, (C<28>, Dyn, C<28>)> = &p;
    same(p.tensor(), &img.tensor().permute(&[2, 0, 1]), "permute");
    let a: M<C<2>, C<3>> = Shaped::randn([2, 3], Cpu);
    let b: M<C<2>, C<5>> = Shaped::randn([2, 5], Cpu);
    let ab = a.cat(Axis::<1>, &b);
    let _: &M<C<2>, C<8>> = &ab; // 3 + 5, computed by typenum
    same(
        ab.tensor(),
        &Tensor::cat([a.tensor(), b.tensor()], 1),
        "cat",
    );
}

#[test]
fn reductions_softmax_index_select_and_cross_entropy_match() {
    let x: Shaped<Cpu, f32, (Dyn, C<6>, C<4>)> = Shaped::randn([3, 6, 4], Cpu);
    let s = x.sum::<1>();
    let _: &M<Dyn, C<4>> = &s;
    same(s.tensor(), &x.tensor().sum_dim(1), "sum");
    let k = x.mean_keepdim::<2>();
    let _: &Shaped<Cpu, f32, (Dyn, C<6>, C<1>)> = &k;
    same(
        k.tensor(),
        &x.tensor().mean_dims(&[2], true),
        "mean keepdim",
    );
    same(x.max::<0>().tensor(), &x.tensor().max(0).values, "max");
    same(
        x.max_keepdim::<0>().tensor(),
        &x.tensor().max_keepdim(0).values,
        "max keepdim",
    );
    same(x.softmax::<2>().tensor(), &x.tensor().softmax(2), "softmax");
    let idx: Shaped<Cpu, i64, (C<2>,)> = Tensor::from_vec(vec![5i64, 0], [2], Cpu).into_shaped();
    let sel = x.index_select(Axis::<1>, &idx);
    let _: &Shaped<Cpu, f32, (Dyn, C<2>, C<4>)> = &sel;
    same(
        sel.tensor(),
        &x.tensor().index_select(1, idx.tensor()),
        "index_select",
    );
    let logits: M<Dyn, C<4>> = Shaped::randn([6, 4], Cpu);
    let targets: Shaped<Cpu, i64, (Dyn,)> =
        Tensor::from_vec(vec![0i64, 1, 2, 3, 0, 1], [6], Cpu).into_shaped();
    same(
        logits.cross_entropy(&targets).tensor(),
        &logits.tensor().cross_entropy(targets.tensor()),
        "cross_entropy",
    );
}

#[test]
fn dynamic_sizes_are_checked_at_run_time_with_the_same_texts() {
    let x: M<Dyn, Dyn> = Tensor::randn([4, 3], Cpu).into_shaped();
    let w: M<C<5>, C<2>> = Shaped::randn([5, 2], Cpu);
    assert_eq!(
        x.try_matmul(&w).unwrap_err().to_string(),
        "mm: mat1 and mat2 shapes cannot be multiplied (4x3 and 5x2)"
    );
    let a: M<Dyn, C<3>> = Shaped::randn([2, 3], Cpu);
    let b: M<C<4>, C<3>> = Shaped::randn([4, 3], Cpu);
    assert_eq!(
        a.try_add(&b).unwrap_err().to_string(),
        "The size of tensor a (2) must match the size of tensor b (4) at non-singleton dimension 0"
    );
    let r = x.try_reshape::<(C<5>, Dyn)>().unwrap_err().to_string();
    assert_eq!(r, "shape '[5, -1]' is invalid for input of size 12");
    let layer = StaticLinear::<Cpu, 5, 2>::new(Cpu);
    assert_eq!(
        layer.try_forward(&x).unwrap_err().to_string(),
        "addmm: mat1 and mat2 shapes cannot be multiplied (4x3 and 5x2)"
    );
    let t: Shaped<Cpu, i64, (Dyn,)> = Tensor::from_vec(vec![0i64; 3], [3], Cpu).into_shaped();
    let logits: M<Dyn, C<2>> = Shaped::randn([4, 2], Cpu);
    assert_eq!(
        logits.try_cross_entropy(&t).unwrap_err().to_string(),
        "Expected input batch_size (4) to match target batch_size (3)."
    );
}

#[test]
fn conversions_are_free_one_way_and_checked_the_other() {
    let t = Tensor::randn([4, 10], Cpu);
    let s: M<Dyn, C<10>> = t.clone().try_into_shaped().unwrap();
    assert!(s.tensor().shares_storage_with(&t));
    let back: Tensor<Cpu> = s.into();
    assert!(back.shares_storage_with(&t));
    let e = t.clone().try_into_shaped::<(Dyn, C<11>)>().unwrap_err();
    assert_eq!(
        e.to_string(),
        "The size of tensor a (10) must match the size of tensor b (11) at non-singleton dimension 1"
    );
    let e = t
        .clone()
        .try_into_shaped::<(Dyn, C<4>, C<10>)>()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "Expected 3D tensor, but got input of size: [4, 10]"
    );
    let e = Shaped::<Cpu, f32, (C<3>,)>::try_zeros([4], Cpu).unwrap_err();
    assert_eq!(
        e.to_string(),
        "The size of tensor a (4) must match the size of tensor b (3) at non-singleton dimension 0"
    );
    let t2 = t.clone();
    assert!(std::panic::catch_unwind(std::panic::AssertUnwindSafe(
        || t2.into_shaped::<(C<5>, Dyn)>()
    ))
    .is_err());
}

#[test]
fn a_chained_model_matches_its_layers_and_trains() {
    let l1 = StaticLinear::<Cpu, 6, 8>::new(Cpu);
    let l2 = StaticLinear::<Cpu, 8, 3>::new(Cpu);
    let model = Seq::new(l1.clone()).then(ReLU).then(l2.clone());
    let x: M<Dyn, C<6>> = Shaped::randn([5, 6], Cpu);
    let y = model.forward(&x);
    let want = l2.forward(&l1.forward(&x).relu());
    same(y.tensor(), want.tensor(), "Seq vs its layers");
    let names: Vec<String> = model
        .named_parameters()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(names, ["0.weight", "0.bias", "2.weight", "2.bias"]);
    let targets: Shaped<Cpu, i64, (Dyn,)> =
        Tensor::from_vec(vec![0i64, 1, 2, 0, 1], [5], Cpu).into_shaped();
    let loss = y.cross_entropy(&targets);
    loss.backward();
    for (n, p) in model.named_parameters() {
        assert!(p.grad().is_some(), "{n} has a gradient");
    }
}

#[test]
fn stack_matches_the_dynamic_one_and_checks_dyn_sizes_at_run_time() {
    let a: M<C<2>, C<3>> = Shaped::randn([2, 3], Cpu);
    let b: M<C<2>, C<3>> = Shaped::randn([2, 3], Cpu);
    let s = a.stack(Axis::<1>, &b);
    let _: &Shaped<Cpu, f32, (C<2>, C<2>, C<3>)> = &s; // a new dimension of size 2 at 1
    same(
        s.tensor(),
        &Tensor::stack([a.tensor(), b.tensor()], 1),
        "stack",
    );
    let all = Shaped::stack_all(Axis::<0>, [&a, &b, &a]);
    let _: &Shaped<Cpu, f32, (C<3>, C<2>, C<3>)> = &all;
    same(
        all.tensor(),
        &Tensor::stack([a.tensor(), b.tensor(), a.tensor()], 0),
        "stack_all",
    );
    let d: M<Dyn, C<3>> = Shaped::randn([4, 3], Cpu);
    assert_eq!(
        a.try_stack(Axis::<0>, &d).unwrap_err().to_string(),
        "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [4, 3] at entry 1"
    );
}

#[test]
fn index_select_takes_the_index_length() {
    let x: M<Dyn, C<5>> = Shaped::randn([3, 5], Cpu);
    let idx: Shaped<Cpu, i64, (Dyn,)> =
        Tensor::from_vec(vec![4i64, 4, 0, 1], [4], Cpu).into_shaped();
    let y = x.index_select(Axis::<1>, &idx);
    let _: &M<Dyn, Dyn> = &y;
    same(
        y.tensor(),
        &x.tensor().index_select(1, idx.tensor()),
        "index_select",
    );
}

/// Sizes past 1024 in the table compute statically (3 x 32 x 32 = 3072, 600 + 600, 50257);
/// a product outside it (300 x 300 = 90000) is `Dyn`, checked at run time.
#[test]
fn table_sizes_compute_past_1024_and_others_become_dyn() {
    let x: Shaped<Cpu, f32, (Dyn, C<3>, C<32>, C<32>)> = Shaped::randn([2, 3, 32, 32], Cpu);
    let f = x.flatten();
    let _: &M<Dyn, C<3072>> = &f;
    let bias: Shaped<Cpu, f32, (C<3072>,)> = Shaped::randn([3072], Cpu);
    same(
        (&f + &bias).tensor(),
        &(f.tensor() + bias.tensor()),
        "3072 + bias",
    );
    let y: M<C<2>, C<600>> = Shaped::randn([2, 600], Cpu);
    let c = y.cat(Axis::<1>, &y);
    let _: &M<C<2>, C<1200>> = &c;
    let z: Shaped<Cpu, f32, (Dyn, C<300>, C<300>)> = Shaped::randn([1, 300, 300], Cpu);
    let g = z.flatten();
    let _: &M<Dyn, Dyn> = &g;
    assert_eq!(g.shape(), &[1, 90000]);
    assert_eq!(
        g.try_reshape::<(C<7>, Dyn)>().unwrap_err().to_string(),
        "shape '[7, -1]' is invalid for input of size 90000"
    );
    let v: M<Dyn, C<50257>> = Shaped::zeros([1, 50257], Cpu);
    let w: Shaped<Cpu, f32, (C<50257>,)> = Shaped::zeros([50257], Cpu);
    let _: M<Dyn, C<50257>> = &v + &w;
}
