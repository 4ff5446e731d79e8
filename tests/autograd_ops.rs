//! Every differentiable op of a tracked `Tensor`, checked against central finite differences in f64 on
//! random inputs (`gradcheck`), including broadcasting and batched shapes.

use devtype::autograd::{gradcheck, gradcheck_with, GradcheckOptions};
use devtype::nn::Reduction;
use devtype::prelude::*;
use devtype::IndexItem;

type V = Tensor<Cpu, f64>;
type T = Tensor<Cpu, f64>;

fn randn(shape: &[usize], seed: u64) -> T {
    devtype::manual_seed(seed);
    Tensor::<Cpu, f64>::zeros(shape, Cpu).randn_like()
}

/// Values in [0.5, 2.5): away from the poles of log, sqrt and 1/x.
fn positive(shape: &[usize], seed: u64) -> T {
    devtype::manual_seed(seed);
    Tensor::<Cpu, f64>::zeros(shape, Cpu).rand_like() * 2.0 + 0.5
}

fn check(f: impl Fn(&[V]) -> devtype::Result<V>, inputs: &[&T]) {
    let inputs: Vec<T> = inputs.iter().map(|t| (*t).clone()).collect();
    if let Err(e) = gradcheck(f, &inputs) {
        panic!("{e}");
    }
}

#[test]
fn broadcasting_arithmetic_sums_gradients_back_to_each_shape() {
    let shapes: [(&[usize], &[usize]); 4] = [
        (&[2, 3, 4], &[3, 1]),
        (&[3, 1], &[2, 3, 4]),
        (&[4], &[2, 3, 4]),
        (&[2, 3], &[2, 3]),
    ];
    for (i, (sa, sb)) in shapes.into_iter().enumerate() {
        let (a, b) = (randn(sa, 10 + i as u64), positive(sb, 20 + i as u64));
        check(|v| Ok(&v[0] + &v[1]), &[&a, &b]);
        check(|v| Ok(&v[0] - &v[1]), &[&a, &b]);
        check(|v| Ok(&v[0] * &v[1]), &[&a, &b]);
        check(|v| Ok(&v[0] / &v[1]), &[&a, &b]);
        let c = randn(sb, 60 + i as u64);
        check(|v| v[0].try_maximum(&v[1]), &[&a, &c]);
        check(|v| v[0].try_minimum(&v[1]), &[&a, &c]);
        check(|v| v[0].try_add_relu(&v[1]), &[&a, &c]);
        check(|v| v[1].try_pow(&v[0]), &[&a, &b]);
    }
}

#[test]
fn maximum_splits_ties_evenly() {
    let a = Tensor::parameter(Tensor::<Cpu, f64>::from_vec(vec![1.0, 2.0, 3.0], [3], Cpu));
    let b = Tensor::parameter(Tensor::<Cpu, f64>::from_vec(vec![0.0, 2.0, 5.0], [3], Cpu));
    a.maximum(&b).sum_all().backward();
    assert_eq!(a.grad().unwrap().to_vec(), vec![1.0, 0.5, 0.0]);
    assert_eq!(b.grad().unwrap().to_vec(), vec![0.0, 0.5, 1.0]);
}

#[test]
fn scalar_operands() {
    let x = positive(&[4, 3], 1);
    check(|v| Ok(&v[0] * 3.0 + 1.5), &[&x]);
    check(|v| Ok(2.0 - &v[0]), &[&x]);
    check(|v| Ok(2.0 / &v[0]), &[&x]);
    check(|v| Ok(&v[0] / 4.0 - 1.0), &[&x]);
    check(|v| Ok(-&v[0] * 2.0), &[&x]);
    check(|v| v[0].try_pow_scalar(2.5), &[&x]);
    check(|v| v[0].try_clamp_min(1.5), &[&x]);
    check(|v| v[0].try_clamp_max(1.5), &[&x]);
}

#[test]
fn unary_math() {
    let (x, p) = (randn(&[3, 4], 2), positive(&[3, 4], 3));
    check(|v| v[0].try_relu(), &[&x]);
    check(|v| v[0].try_abs(), &[&x]);
    check(|v| v[0].try_square(), &[&x]);
    check(|v| v[0].try_exp(), &[&x]);
    check(|v| v[0].try_tanh(), &[&x]);
    check(|v| v[0].try_sigmoid(), &[&x]);
    check(|v| v[0].try_neg(), &[&x]);
    check(|v| v[0].try_log(), &[&p]);
    check(|v| v[0].try_sqrt(), &[&p]);
    check(|v| v[0].try_reciprocal(), &[&p]);
}

#[test]
fn matmul_plain_batched_broadcast_and_vectors() {
    let cases: [(&[usize], &[usize]); 6] = [
        (&[3, 4], &[4, 5]),
        (&[2, 3, 4], &[2, 4, 5]),
        (&[2, 3, 4], &[4, 5]),
        (&[2, 1, 3, 4], &[3, 4, 2]),
        (&[4], &[4, 5]),
        (&[3, 4], &[4]),
    ];
    for (i, (sa, sb)) in cases.into_iter().enumerate() {
        check(
            |v| v[0].try_matmul(&v[1]),
            &[&randn(sa, 30 + i as u64), &randn(sb, 40 + i as u64)],
        );
    }
    // A transposed view as an operand.
    check(
        |v| v[0].t().try_matmul(&v[1]),
        &[&randn(&[4, 3], 50), &randn(&[4, 2], 51)],
    );
}

#[test]
fn reductions() {
    let x = randn(&[2, 3, 4], 4);
    check(|v| v[0].try_sum_all(), &[&x]);
    check(|v| v[0].try_sum_dims(&[0, 2], false), &[&x]);
    check(|v| v[0].try_sum_dims(&[-1], true), &[&x]);
    check(|v| v[0].try_mean_all(), &[&x]);
    check(|v| v[0].try_mean_dims(&[1], true), &[&x]);
    check(|v| v[0].try_mean_dim(0), &[&x]);
    check(|v| v[0].try_max(1).map(|r| r.values), &[&x]);
    check(|v| v[0].try_max_keepdim(-1).map(|r| r.values), &[&x]);
    check(|v| v[0].try_min(2).map(|r| r.values), &[&x]);
    check(|v| v[0].try_max_all(), &[&x]);
    check(|v| v[0].try_min_all(), &[&x]);
}

#[test]
fn shape_ops() {
    let x = randn(&[2, 3, 4], 5);
    check(|v| v[0].try_reshape(&[4, -1]), &[&x]);
    check(|v| v[0].try_view(&[6, 4]), &[&x]);
    check(|v| v[0].try_transpose(0, 2), &[&x]);
    check(|v| v[0].try_permute(&[2, 0, 1]), &[&x]);
    check(|v| v[0].try_unsqueeze(1), &[&x]);
    check(|v| v[0].try_unsqueeze(0)?.try_squeeze(0), &[&x]);
    check(|v| v[0].try_flatten(1, 2), &[&x]);
    check(|v| v[0].try_narrow(2, 1, 2), &[&x]);
    check(|v| v[0].try_narrow(0, 0, 1), &[&x]);
    check(|v| v[0].try_transpose(1, 2)?.try_contiguous(), &[&x]);
    // A non-contiguous view reshaped (a copy) and multiplied so the gradient is not uniform.
    let w = randn(&[2, 12], 6);
    check(
        |v| Ok(&v[0].try_transpose(1, 2)?.try_reshape(&[2, 12])? * &v[1]),
        &[&x, &w],
    );
    check(
        |v| Ok(&v[0].try_expand(&[2, 3, 4])? * &v[1]),
        &[&randn(&[3, 1], 7), &x],
    );
    check(|v| v[0].try_t(), &[&randn(&[3, 5], 8)]);
}

#[test]
fn cat_and_stack() {
    let (a, b, c) = (randn(&[2, 3], 9), randn(&[4, 3], 10), randn(&[2, 3], 11));
    check(|v| Ok(&V::try_cat([&v[0], &v[1]], 0)? * 2.0), &[&a, &b]);
    check(|v| V::try_cat([&v[0], &v[1]], -1), &[&a, &c]);
    check(|v| V::try_stack([&v[0], &v[1]], 1), &[&a, &c]);
    // An untracked member gets no gradient, the others do.
    check(|v| V::try_stack([&v[0], &c.clone()], 0), &[&a]);
}

#[test]
fn softmax_and_log_softmax() {
    let x = randn(&[3, 5], 12);
    let w = randn(&[3, 5], 13);
    for dim in [0, 1, -1] {
        check(|v| Ok(&v[0].try_softmax(dim)? * &v[1]), &[&x, &w]);
        check(|v| Ok(&v[0].try_log_softmax(dim)? * &v[1]), &[&x, &w]);
    }
}

#[test]
fn gather_and_index_select() {
    let x = randn(&[3, 4], 14);
    let idx = Tensor::<Cpu, i64>::from_vec(vec![0, 3, 3, 1, 2, 2], [3, 2], Cpu);
    check(|v| v[0].try_gather(1, &idx), &[&x]);
    let rows = Tensor::<Cpu, i64>::from_vec(vec![2, 0, 2], [3], Cpu);
    check(|v| v[0].try_index_select(0, &rows), &[&x]);
    let cols = Tensor::<Cpu, i64>::from_vec(vec![1, 3], [2], Cpu);
    check(|v| v[0].try_index_select(1, &cols), &[&x]);
}

#[test]
fn linear_with_and_without_bias() {
    let (x, w, b) = (randn(&[2, 3, 4], 15), randn(&[5, 4], 16), randn(&[5], 17));
    check(|v| v[0].try_linear(&v[1], Some(&v[2])), &[&x, &w, &b]);
    check(|v| v[0].try_linear(&v[1], None), &[&randn(&[6, 4], 18), &w]);
    // The input as a constant: only the parameters get gradients.
    check(|v| x.clone().try_linear(&v[0], Some(&v[1])), &[&w, &b]);
}

#[test]
fn fused_cross_entropy() {
    let x = randn(&[6, 4], 19);
    let t = Tensor::<Cpu, i64>::from_vec(vec![0, 3, 1, 1, 2, 3], [6], Cpu);
    let w = positive(&[4], 20);
    for reduction in [Reduction::Mean, Reduction::Sum, Reduction::None] {
        check(
            |v| v[0].try_cross_entropy_with(&t, None, reduction, -100),
            &[&x],
        );
        check(
            |v| v[0].try_cross_entropy_with(&t, Some(&w), reduction, -100),
            &[&x],
        );
        check(
            |v| v[0].try_cross_entropy_with(&t, Some(&w), reduction, 3),
            &[&x],
        );
    }
}

#[test]
fn where_and_to() {
    let (a, b) = (randn(&[3, 4], 21), randn(&[4], 22));
    let cond = a.gt_scalar(0.0);
    check(|v| cond.try_where_cond(&v[0], &v[1]), &[&a, &b]);
    check(|v| v[0].try_to(Cpu)?.try_exp(), &[&a]);
}

#[test]
fn a_composite_mlp() {
    let (x, w1, b1, w2) = (
        randn(&[5, 3], 23),
        randn(&[4, 3], 24),
        randn(&[4], 25),
        randn(&[2, 4], 26),
    );
    let t = Tensor::<Cpu, i64>::from_vec(vec![0, 1, 1, 0, 1], [5], Cpu);
    let options = GradcheckOptions {
        atol: 1e-6,
        ..Default::default()
    };
    gradcheck_with(
        |v| {
            v[0].try_linear(&v[1], Some(&v[2]))?
                .try_tanh()?
                .try_linear(&v[3], None)?
                .try_cross_entropy_with(&t, None, Reduction::Mean, -100)
        },
        &[x, w1, b1, w2],
        options,
    )
    .unwrap();
}

#[test]
fn relu_module_on_an_owned_input_keeps_saved_tensors_intact() {
    // tanh saves its output for its backward; the relu that consumes it must not overwrite it.
    let x = randn(&[4, 5], 27);
    check(|v| devtype::nn::ReLU.try_forward(v[0].try_tanh()?), &[&x]);
    check(|v| devtype::nn::ReLU.try_forward(&v[0] * 2.0 - 0.5), &[&x]);
}

#[test]
fn ops_added_with_one_declaration() {
    let (a, b) = (randn(&[3, 4], 41), randn(&[3, 4], 42));
    let p = positive(&[3, 4], 43);
    check(|v| v[0].try_clamp(-0.3, 0.4), &[&a]);
    check(|v| v[0].try_clamp_max(0.2), &[&a]);
    check(|v| v[0].try_sub_scalar(1.5), &[&a]);
    check(|v| v[0].try_div_scalar(-2.5), &[&a]);
    check(|v| v[0].try_pow(&v[1]), &[&p, &b]);
    check(|v| v[0].try_t(), &[&a]);
    check(|v| v[0].try_max_keepdim(1).map(|r| r.values), &[&a]);
    check(|v| v[0].try_min_keepdim(0).map(|r| r.values), &[&a]);
    check(|v| v[0].try_min_all(), &[&a]);
    check(
        |v| v[0].try_bmm(&v[1]),
        &[&randn(&[2, 3, 4], 44), &randn(&[2, 4, 5], 45)],
    );
}

#[path = "common/ops.rs"]
mod ops;

/// One gradient check: the op on tracked inputs, and the inputs.
type GradCase = (
    &'static str,
    Box<dyn Fn(&[V]) -> devtype::Result<V>>,
    Vec<T>,
);

/// One gradient check per op of the op table that has a gradient (the others are marked
/// `no_grad` in their declarations, and skipped with that reason).
fn grad_cases() -> Vec<GradCase> {
    let (a, b) = (randn(&[3, 4], 70), randn(&[3, 4], 71));
    let p = positive(&[3, 4], 72);
    let bat1 = randn(&[2, 3, 4], 73);
    let idx = Tensor::<Cpu, i64>::from_vec(vec![2, 0, 1, 2], [4], Cpu);
    let gidx = Tensor::<Cpu, i64>::from_vec(vec![0, 2, 1, 1, 0, 2, 2, 1, 0, 0, 1, 2], [3, 4], Cpu);
    let targets = Tensor::<Cpu, i64>::from_vec(vec![1, 0, 3], [3], Cpu);
    let mask = b.gt_scalar(0.0);
    let cw = positive(&[4], 74);
    let mut cases: Vec<GradCase> = Vec::new();
    macro_rules! case {
        ($name:literal, $f:expr, [$($input:expr),*]) => {
            cases.push(($name, Box::new($f), vec![$($input.clone()),*]));
        };
    }
    // Unary.
    case!("neg", |v: &[V]| v[0].try_neg(), [a]);
    case!("relu", |v: &[V]| v[0].try_relu(), [a]);
    case!("abs", |v: &[V]| v[0].try_abs(), [a]);
    case!("square", |v: &[V]| v[0].try_square(), [a]);
    case!("exp", |v: &[V]| v[0].try_exp(), [a]);
    case!("log", |v: &[V]| v[0].try_log(), [p]);
    case!("sqrt", |v: &[V]| v[0].try_sqrt(), [p]);
    case!("tanh", |v: &[V]| v[0].try_tanh(), [a]);
    case!("sigmoid", |v: &[V]| v[0].try_sigmoid(), [a]);
    case!("reciprocal", |v: &[V]| v[0].try_reciprocal(), [p]);
    case!("erf", |v: &[V]| v[0].try_erf(), [a]);
    // Binary, with a broadcast row.
    let row = randn(&[4], 75);
    case!("add", |v: &[V]| v[0].try_add(&v[1]), [a, row]);
    case!("sub", |v: &[V]| v[0].try_sub(&v[1]), [a, row]);
    case!("mul", |v: &[V]| v[0].try_mul(&v[1]), [a, b]);
    case!("div", |v: &[V]| v[0].try_div(&v[1]), [a, p]);
    case!("maximum", |v: &[V]| v[0].try_maximum(&v[1]), [a, b]);
    case!("minimum", |v: &[V]| v[0].try_minimum(&v[1]), [a, b]);
    case!("pow", |v: &[V]| v[0].try_pow(&v[1]), [p, b]);
    case!("add_relu", |v: &[V]| v[0].try_add_relu(&v[1]), [a, row]);
    // With scalars.
    case!("add_scalar", |v: &[V]| v[0].try_add_scalar(1.5), [a]);
    case!("sub_scalar", |v: &[V]| v[0].try_sub_scalar(1.5), [a]);
    case!("mul_scalar", |v: &[V]| v[0].try_mul_scalar(-2.0), [a]);
    case!("div_scalar", |v: &[V]| v[0].try_div_scalar(4.0), [a]);
    case!("pow_scalar", |v: &[V]| v[0].try_pow_scalar(2.5), [p]);
    case!("clamp_min", |v: &[V]| v[0].try_clamp_min(-0.2), [a]);
    case!("clamp_max", |v: &[V]| v[0].try_clamp_max(0.3), [a]);
    case!("clamp", |v: &[V]| v[0].try_clamp(-0.2, 0.3), [a]);
    // Reductions.
    case!(
        "sum_dims",
        |v: &[V]| v[0].try_sum_dims(&[0, 2], true),
        [bat1]
    );
    case!("sum_dim", |v: &[V]| v[0].try_sum_dim(1), [a]);
    case!("sum", |v: &[V]| v[0].try_sum(), [a]);
    case!("sum_all", |v: &[V]| v[0].try_sum_all(), [a]);
    case!(
        "mean_dims",
        |v: &[V]| v[0].try_mean_dims(&[1], true),
        [bat1]
    );
    case!("mean_dim", |v: &[V]| v[0].try_mean_dim(0), [a]);
    case!("mean", |v: &[V]| v[0].try_mean(), [a]);
    case!("mean_all", |v: &[V]| v[0].try_mean_all(), [a]);
    case!("max", |v: &[V]| v[0].try_max(1).map(|r| r.values), [a]);
    case!(
        "max_keepdim",
        |v: &[V]| v[0].try_max_keepdim(0).map(|r| r.values),
        [a]
    );
    case!("max_all", |v: &[V]| v[0].try_max_all(), [a]);
    case!("min", |v: &[V]| v[0].try_min(1).map(|r| r.values), [a]);
    case!(
        "min_keepdim",
        |v: &[V]| v[0].try_min_keepdim(1).map(|r| r.values),
        [a]
    );
    case!("min_all", |v: &[V]| v[0].try_min_all(), [a]);
    // Along a dim.
    case!("cumsum", |v: &[V]| v[0].try_cumsum(1), [a]);
    case!(
        "sort",
        |v: &[V]| v[0].try_sort(1, false).map(|r| r.values),
        [a]
    );
    case!(
        "topk",
        |v: &[V]| v[0].try_topk(2, 1, true, true).map(|r| r.values),
        [a]
    );
    case!(
        "masked_fill",
        move |v: &[V]| v[0].try_masked_fill(&mask, 0.25),
        [a]
    );
    case!(
        "index",
        |v: &[V]| v[0].try_index(&[IndexItem::Select(-1), IndexItem::Slice(Some(1), None)]),
        [bat1]
    );
    // Shapes.
    case!("reshape", |v: &[V]| v[0].t().try_reshape(&[2, -1]), [a]);
    case!("view", |v: &[V]| v[0].try_view(&[4, 3]), [a]);
    case!("transpose", |v: &[V]| v[0].try_transpose(0, 2), [bat1]);
    case!("t", |v: &[V]| v[0].try_t(), [a]);
    case!("permute", |v: &[V]| v[0].try_permute(&[2, 0, 1]), [bat1]);
    case!("unsqueeze", |v: &[V]| v[0].try_unsqueeze(1), [a]);
    case!(
        "squeeze",
        |v: &[V]| v[0].try_unsqueeze(0)?.try_squeeze(0),
        [a]
    );
    case!("flatten", |v: &[V]| v[0].try_flatten(0, 1), [bat1]);
    case!("narrow", |v: &[V]| v[0].try_narrow(1, 1, 2), [a]);
    // Expanded: multiplied so that the summed gradient is not uniform.
    case!(
        "expand",
        |v: &[V]| Ok(&v[0].try_expand(&[3, 4])? * &v[1]),
        [row, b]
    );
    case!("contiguous", |v: &[V]| v[0].t().try_contiguous(), [a]);
    case!(
        "slice_scatter",
        |v: &[V]| v[0].try_slice_scatter(&v[1], 1, 1, 3),
        [a, randn(&[3, 2], 76)]
    );
    case!(
        "select_scatter",
        |v: &[V]| v[0].try_select_scatter(&v[1], 0, -1),
        [a, row]
    );
    // Products, softmax, indexing, losses.
    case!(
        "matmul",
        |v: &[V]| v[0].try_matmul(&v[1]),
        [a, randn(&[4, 5], 77)]
    );
    case!(
        "bmm",
        |v: &[V]| v[0].try_bmm(&v[1]),
        [bat1, randn(&[2, 4, 5], 78)]
    );
    case!(
        "linear",
        |v: &[V]| v[0].try_linear(&v[1], Some(&v[2])),
        [a, randn(&[5, 4], 79), randn(&[5], 80)]
    );
    let w = randn(&[3, 4], 81);
    case!(
        "softmax",
        move |v: &[V]| Ok(&v[0].try_softmax(1)? * &w),
        [a]
    );
    let w = randn(&[3, 4], 82);
    case!(
        "log_softmax",
        move |v: &[V]| Ok(&v[0].try_log_softmax(0)? * &w),
        [a]
    );
    case!("gather", move |v: &[V]| v[0].try_gather(0, &gidx), [a]);
    case!(
        "index_select",
        move |v: &[V]| v[0].try_index_select(1, &idx),
        [a]
    );
    // Convolutions and pooling (every input gets a gradient: image, weight, bias).
    case!(
        "conv2d",
        |v: &[V]| v[0].try_conv2d(&v[1], Some(&v[2]), (2, 1), (1, 1), (1, 2), 2),
        [
            randn(&[2, 4, 5, 4], 86),
            randn(&[4, 2, 2, 3], 87),
            randn(&[4], 88)
        ]
    );
    case!(
        "conv1d",
        |v: &[V]| v[0].try_conv1d(&v[1], None, 2, 1, 1, 1),
        [randn(&[2, 3, 7], 89), randn(&[2, 3, 3], 90)]
    );
    case!(
        "max_pool2d",
        |v: &[V]| v[0].try_max_pool2d((2, 2), (1, 2), (1, 0), (1, 1), true),
        [randn(&[2, 3, 5, 4], 91)]
    );
    case!(
        "max_pool2d_with_indices",
        |v: &[V]| v[0]
            .try_max_pool2d_with_indices((2, 2), (1, 1), (1, 0), (1, 2), true)
            .map(|r| r.values),
        [randn(&[2, 4, 5], 94)]
    );
    case!(
        "avg_pool2d",
        |v: &[V]| v[0].try_avg_pool2d((3, 2), (2, 1), (1, 1), true, false),
        [randn(&[2, 3, 5, 4], 92)]
    );
    case!(
        "adaptive_avg_pool2d",
        |v: &[V]| v[0].try_adaptive_avg_pool2d((3, 3)),
        [randn(&[3, 5, 4], 93)]
    );
    let t = targets.clone();
    case!(
        "cross_entropy",
        move |v: &[V]| v[0].try_cross_entropy(&t),
        [a]
    );
    // The targets and class weights are constants: only the input gets a gradient.
    let (t, weight) = (targets.clone(), cw.clone());
    case!(
        "cross_entropy_with",
        move |v: &[V]| v[0].try_cross_entropy_with(&t, Some(&weight), Reduction::Sum, 0),
        [a]
    );
    let target = b.clone();
    case!(
        "l1_loss",
        move |v: &[V]| v[0].try_l1_loss(&target, Reduction::Mean),
        [a]
    );
    let target = b.clone();
    case!(
        "smooth_l1_loss",
        move |v: &[V]| v[0].try_smooth_l1_loss(&target, Reduction::None, 0.5),
        [a]
    );
    let target = b.clone();
    case!(
        "huber_loss",
        move |v: &[V]| v[0].try_huber_loss(&target, Reduction::Sum, 0.7),
        [a]
    );
    let (target, weight, pos_weight) =
        (p.mul_scalar(0.4), positive(&[3, 4], 83), positive(&[4], 84));
    case!(
        "binary_cross_entropy_with_logits",
        move |v: &[V]| v[0].try_binary_cross_entropy_with_logits(
            &target,
            Some(&weight),
            Some(&pos_weight),
            Reduction::Mean
        ),
        [a]
    );
    let (t, weight) = (targets.clone(), cw.clone());
    case!(
        "nll_loss",
        move |v: &[V]| v[0]
            .try_log_softmax(1)?
            .try_nll_loss(&t, Some(&weight), Reduction::Mean, 0),
        [a]
    );
    // Written by hand.
    case!(
        "cat",
        |v: &[V]| V::try_cat([&v[0], &v[1]], 0),
        [a, randn(&[2, 4], 85)]
    );
    case!("stack", |v: &[V]| V::try_stack([&v[0], &v[1]], 1), [a, b]);
    case!("to", |v: &[V]| v[0].t().try_to(Cpu), [a]);
    case!("to_dtype", |v: &[V]| v[0].try_to_dtype::<f64>(), [a]);
    let cond = a.gt(&b);
    case!(
        "where_cond",
        move |v: &[V]| cond.try_where_cond(&v[0], &v[1]),
        [a, row]
    );
    cases
}

/// Every op of the op table with a gradient, against finite differences; the ops marked
/// `no_grad` are skipped with the reason their declaration gives.
#[test]
fn every_op_of_the_table_with_a_gradient() {
    let cases = grad_cases();
    ops::assert_covers("gradcheck", cases.iter().map(|(name, _, _)| *name), |op| {
        op.no_grad
    });
    for (name, f, inputs) in &cases {
        if let Err(e) = gradcheck(f, inputs) {
            panic!("{name}: {e}");
        }
    }
}
