//! Every CPU op of the typed front against the f64 reference of `cpu_reference.rs`, on fresh
//! random inputs, for `f32` and `f64`, at several shapes: 0-dim, empty, one element, odd sizes,
//! more than 65536 elements (the parallel paths), and strided views (transpose, permute, narrow,
//! expand) as inputs.
#![allow(clippy::type_complexity)] // tables of (name, op, reference) read best spelled out

#[path = "cpu_reference.rs"]
mod reference;

#[path = "common/ops.rs"]
mod ops;

use devtype::prelude::*;
use devtype::{Element, Float};
use reference::*;

/// The big case: above the 65536-element threshold of the parallel element-wise paths.
const BIG: usize = 257 * 263;

/// A view applied to a freshly created tensor, and the same view on its reference.
#[derive(Clone, Debug)]
enum View {
    Plain,
    Transpose(usize, usize),
    Permute(Vec<usize>),
    Narrow(usize, usize, usize),
    Expand(Vec<usize>),
}

fn apply<E: Element>(t: &Tensor<Cpu, E>, r: &Ref, view: &View) -> (Tensor<Cpu, E>, Ref) {
    match view {
        View::Plain => (t.clone(), r.clone()),
        View::Transpose(a, b) => (t.transpose(*a as isize, *b as isize), r.transpose(*a, *b)),
        View::Permute(order) => {
            let o: Vec<isize> = order.iter().map(|&d| d as isize).collect();
            (t.permute(&o), r.permute(order))
        }
        View::Narrow(d, s, l) => (t.narrow(*d as isize, *s, *l), r.narrow(*d, *s, *l)),
        View::Expand(shape) => (t.expand(&signed(shape)), r.expand(shape)),
    }
}

/// A random input of `base` shape seen through `view`, with its reference (rounded to `E`).
fn input<E: Element>(
    rng: &mut Rng,
    base: &[usize],
    view: &View,
    lo: f64,
    hi: f64,
) -> (Tensor<Cpu, E>, Ref) {
    let r = Ref::random(rng, base, lo, hi).rounded::<E>();
    let t = tensor::<E>(&r);
    let (t, r) = apply(&t, &r, view);
    assert_eq!(t.shape(), &r.shape[..], "view {view:?} of {base:?}");
    (t, r)
}

/// (a's base shape, a's view, b's base shape, b's view): broadcasting, empty, 0-dim, big, strided.
fn binary_cases() -> Vec<(Vec<usize>, View, Vec<usize>, View)> {
    use View::*;
    vec![
        (vec![], Plain, vec![], Plain),
        (vec![1], Plain, vec![], Plain),
        (vec![], Plain, vec![5], Plain),
        (vec![0], Plain, vec![0], Plain),
        (vec![0, 3], Plain, vec![3], Plain),
        (vec![2, 0, 3], Plain, vec![1, 3], Plain),
        (vec![7], Plain, vec![7], Plain),
        (vec![3, 5], Plain, vec![5], Plain),
        (vec![3, 1], Plain, vec![1, 5], Plain),
        (vec![2, 1, 4], Plain, vec![3, 1], Plain),
        (vec![1, 1], Plain, vec![1], Plain),
        (vec![BIG], Plain, vec![BIG], Plain),
        (vec![257, 263], Plain, vec![263], Plain),
        (vec![300, 1], Plain, vec![1, 230], Plain),
        (vec![263, 257], Transpose(0, 1), vec![257, 263], Plain),
        (
            vec![263, 257],
            Transpose(0, 1),
            vec![263, 257],
            Transpose(0, 1),
        ),
        (vec![4, 5, 6], Permute(vec![2, 0, 1]), vec![6, 4, 5], Plain),
        (vec![9, 7], Narrow(0, 2, 5), vec![5, 7], Plain),
        (vec![9, 7], Narrow(1, 1, 5), vec![9, 7], Narrow(1, 2, 5)),
        (vec![1, 5], Expand(vec![4, 5]), vec![4, 5], Transpose(0, 0)),
        (
            vec![3, 1],
            Expand(vec![3, 300]),
            vec![300, 3],
            Transpose(0, 1),
        ),
        (vec![400, 330], Narrow(1, 3, 200), vec![400, 1], Plain),
        // A few elements (the inline fast path) and the views it must leave alone.
        (vec![1], Plain, vec![1], Plain),
        (vec![8], Plain, vec![8], Plain),
        (vec![9], Plain, vec![9], Plain),
        (vec![8], Narrow(0, 1, 6), vec![6], Plain),
        (vec![10], Narrow(0, 2, 6), vec![6], Narrow(0, 0, 6)),
        (vec![1], Expand(vec![5]), vec![5], Plain),
        (vec![2, 3], Transpose(0, 1), vec![3, 2], Plain),
    ]
}

fn binary_ops<E: Float + Precision>() {
    let mut rng = Rng::new(&format!("binary_ops::<{}>", std::any::type_name::<E>()));
    type Op<E> = fn(&Tensor<Cpu, E>, &Tensor<Cpu, E>) -> Tensor<Cpu, E>;
    let ops: Vec<(&str, Op<E>, fn(f64, f64) -> f64)> = vec![
        ("a + b", |a, b| a + b, |x, y| x + y),
        ("a - b", |a, b| a - b, |x, y| x - y),
        ("a * b", |a, b| a * b, |x, y| x * y),
        ("a / b", |a, b| a / b, |x, y| x / y),
        ("owned a + b", |a, b| a.clone() + b, |x, y| x + y),
        ("a - owned b", |a, b| a - b.clone(), |x, y| x - y),
        (
            "owned a * owned b",
            |a, b| a.clone() * b.clone(),
            |x, y| x * y,
        ),
        ("try_add", |a, b| a.try_add(b).unwrap(), |x, y| x + y),
        ("try_sub", |a, b| a.try_sub(b).unwrap(), |x, y| x - y),
        ("try_mul", |a, b| a.try_mul(b).unwrap(), |x, y| x * y),
        ("try_div", |a, b| a.try_div(b).unwrap(), |x, y| x / y),
        ("maximum", |a, b| a.maximum(b), f64::max),
        ("minimum", |a, b| a.try_minimum(b).unwrap(), f64::min),
        ("add_relu", |a, b| a.add_relu(b), |x, y| (x + y).max(0.0)),
    ];
    for (abase, aview, bbase, bview) in binary_cases() {
        let (a, ra) = input::<E>(&mut rng, &abase, &aview, -2.0, 2.0);
        let (b, rb) = input::<E>(&mut rng, &bbase, &bview, -2.0, 2.0);
        // Big cases (the parallel paths) run a representative subset, to keep debug runs short.
        let big = ra.numel().max(rb.numel()) > 10_000;
        for (name, op, f) in ops.iter().filter(|(n, _, _)| {
            !big || ["a + b", "a / b", "owned a * owned b", "maximum", "add_relu"].contains(n)
        }) {
            let got = to_ref(&op(&a, &b));
            // The reference is computed in f64 and rounded once to E: the op must be within
            // a few ulps of that.
            let want = ra.zip(&rb, f).rounded::<E>();
            assert_close(
                &got,
                &want,
                E::ELEMENTWISE,
                1e-30,
                &format!("{name} {:?}{aview:?} {:?}{bview:?}", abase, bbase),
            );
            // Operand order swapped (broadcasting is symmetric, the op is not).
            let got = to_ref(&op(&b, &a));
            let want = rb.zip(&ra, f).rounded::<E>();
            assert_close(
                &got,
                &want,
                E::ELEMENTWISE,
                1e-30,
                &format!("{name} swapped {:?} {:?}", abase, bbase),
            );
        }
    }
}

#[test]
fn binary_ops_f32() {
    binary_ops::<f32>();
}

#[test]
fn binary_ops_f64() {
    binary_ops::<f64>();
}

#[test]
fn maximum_and_minimum_propagate_nan_like_pytorch() {
    let a = Tensor::from_vec(vec![1.0f32, f32::NAN, 3.0, f32::NAN], [4], Cpu);
    let b = Tensor::from_vec(vec![f32::NAN, 2.0, 1.0, f32::NAN], [4], Cpu);
    for t in [a.maximum(&b), a.try_minimum(&b).unwrap()] {
        let v = t.to_vec();
        assert!(v[0].is_nan() && v[1].is_nan() && v[3].is_nan(), "{v:?}");
    }
    assert_eq!(a.maximum(&b).to_vec()[2], 3.0);
    assert_eq!(a.try_minimum(&b).unwrap().to_vec()[2], 1.0);
}

/// Scalar operands on both sides, for one concrete type (operators with scalars are per type).
macro_rules! scalar_ops {
    ($name:ident, $t:ty) => {
        #[test]
        fn $name() {
            let mut rng = Rng::new(stringify!($name));
            let cases: Vec<(Vec<usize>, View)> = vec![
                (vec![], View::Plain),
                (vec![0, 4], View::Plain),
                (vec![1], View::Plain),
                (vec![5, 3], View::Plain),
                (vec![BIG], View::Plain),
                (vec![263, 257], View::Transpose(0, 1)),
                (vec![6, 7], View::Narrow(1, 2, 3)),
                (vec![1, 4], View::Expand(vec![3, 4])),
            ];
            for (base, view) in cases {
                let (a, ra) = input::<$t>(&mut rng, &base, &view, -2.0, 2.0);
                let s: $t = rng.uniform(0.25, 3.0) as $t;
                let sv = s as f64;
                let checks: Vec<(&str, Tensor<Cpu, $t>, Ref)> = vec![
                    ("a + s", &a + s, ra.map(|x| x + sv)),
                    ("a - s", &a - s, ra.map(|x| x - sv)),
                    ("a * s", &a * s, ra.map(|x| x * sv)),
                    ("a / s", &a / s, ra.map(|x| x / sv)),
                    ("s + a", s + &a, ra.map(|x| sv + x)),
                    ("s - a", s - &a, ra.map(|x| sv - x)),
                    ("s * a", s * &a, ra.map(|x| sv * x)),
                    ("s / a", s / &a, ra.map(|x| sv / x)),
                    ("owned a - s", a.clone() - s, ra.map(|x| x - sv)),
                    ("s - owned a", s - a.clone(), ra.map(|x| sv - x)),
                    ("s / owned a", s / a.clone(), ra.map(|x| sv / x)),
                    (
                        "add_scalar",
                        a.try_add_scalar(s).unwrap(),
                        ra.map(|x| x + sv),
                    ),
                    (
                        "mul_scalar",
                        a.try_mul_scalar(s).unwrap(),
                        ra.map(|x| x * sv),
                    ),
                    (
                        "clamp_min",
                        a.clamp_min(s / 4.0),
                        ra.map(|x| x.max(sv / 4.0)),
                    ),
                    (
                        "pow_scalar",
                        a.abs().pow_scalar(s),
                        ra.map(|x| x.abs().powf(sv)),
                    ),
                ];
                for (name, got, want) in checks {
                    assert_close(
                        &to_ref(&got),
                        &want.rounded::<$t>(),
                        <$t as Precision>::ELEMENTWISE,
                        1e-30,
                        &format!("{name} on {base:?} {view:?}"),
                    );
                }
                // The inputs are untouched by all of the above.
                assert_exact(&to_ref(&a), &ra, "input after scalar ops");
            }
        }
    };
}
scalar_ops!(scalar_ops_f32, f32);
scalar_ops!(scalar_ops_f64, f64);

/// `erf(x)` in f64, independently of the kernel's `libm`: the Maclaurin series below |x| = 2
/// (its largest term is e^4 times the result at most, so the cancellation costs under 1e-14),
/// and `1 - erfc(x)` above, erfc by its continued fraction
/// `e^{-x²}/√π / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))`, evaluated from the tail.
fn erf_series(x: f64) -> f64 {
    let a = x.abs();
    if a < 2.0 {
        let (mut term, mut sum) = (x, x);
        for n in 1..60 {
            term *= -x * x / n as f64;
            sum += term / (2 * n + 1) as f64;
        }
        return sum * std::f64::consts::FRAC_2_SQRT_PI;
    }
    let mut t = a;
    for k in (1..200).rev() {
        t = a + (k as f64 / 2.0) / t;
    }
    let erfc = (-a * a).exp() / (std::f64::consts::PI.sqrt() * t);
    x.signum() * (1.0 - erfc)
}

fn unary_ops<E: Float + Precision>() {
    let mut rng = Rng::new(&format!("unary_ops::<{}>", std::any::type_name::<E>()));
    type Op<E> = fn(&Tensor<Cpu, E>) -> Tensor<Cpu, E>;
    // (name, op, reference, input range)
    let ops: Vec<(&str, Op<E>, fn(f64) -> f64, (f64, f64))> = vec![
        ("neg", |a| -a, |x| -x, (-3.0, 3.0)),
        ("owned neg", |a| -a.clone(), |x| -x, (-3.0, 3.0)),
        ("try_neg", |a| a.try_neg().unwrap(), |x| -x, (-3.0, 3.0)),
        // PyTorch's relu keeps NaN (f64::max would not).
        (
            "relu",
            |a| a.relu(),
            |x| if x.is_nan() { x } else { x.max(0.0) },
            (-3.0, 3.0),
        ),
        (
            "relu_owned",
            |a| a.clone().relu_owned(),
            |x| if x.is_nan() { x } else { x.max(0.0) },
            (-3.0, 3.0),
        ),
        ("abs", |a| a.abs(), f64::abs, (-3.0, 3.0)),
        ("square", |a| a.square(), |x| x * x, (-3.0, 3.0)),
        ("exp", |a| a.exp(), f64::exp, (-5.0, 5.0)),
        ("log", |a| a.log(), f64::ln, (0.01, 10.0)),
        ("log of negatives", |a| a.log(), f64::ln, (-2.0, 0.5)),
        ("sqrt", |a| a.sqrt(), f64::sqrt, (0.0, 10.0)),
        ("sqrt of negatives", |a| a.sqrt(), f64::sqrt, (-2.0, 1.0)),
        ("tanh", |a| a.tanh(), f64::tanh, (-4.0, 4.0)),
        (
            "sigmoid",
            |a| a.sigmoid(),
            |x| 1.0 / (1.0 + (-x).exp()),
            (-8.0, 8.0),
        ),
        ("reciprocal", |a| a.reciprocal(), |x| 1.0 / x, (-3.0, 3.0)),
        ("erf", |a| a.erf(), erf_series, (-3.5, 3.5)),
    ];
    let cases: Vec<(Vec<usize>, View)> = vec![
        (vec![], View::Plain),
        (vec![0], View::Plain),
        (vec![3, 0], View::Plain),
        (vec![1], View::Plain),
        (vec![13], View::Plain),
        (vec![4, 9, 5], View::Plain),
        (vec![BIG], View::Plain),
        (vec![263, 257], View::Transpose(0, 1)),
        (vec![3, 4, 5], View::Permute(vec![1, 2, 0])),
        (vec![10, 8], View::Narrow(0, 3, 4)),
        (vec![1, 7], View::Expand(vec![5, 7])),
    ];
    for (name, op, f, (lo, hi)) in &ops {
        for (base, view) in &cases {
            let (a, ra) = input::<E>(&mut rng, base, view, *lo, *hi);
            let got = to_ref(&op(&a));
            let want = ra.map(f).rounded::<E>();
            assert_close(
                &got,
                &want,
                E::ELEMENTWISE,
                1e-30,
                &format!("{name} on {base:?} {view:?}"),
            );
            assert_exact(&to_ref(&a), &ra, &format!("{name} left its input alone"));
        }
    }
    // Special values.
    let special = Tensor::<Cpu, E>::from_vec(
        [
            0.0,
            -0.0,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            1e-30,
            -1e30,
        ]
        .map(E::from_f64)
        .to_vec(),
        [7],
        Cpu,
    );
    let rs = to_ref(&special);
    for (name, op, f, _) in &ops {
        assert_close(
            &to_ref(&op(&special)),
            &rs.map(f).rounded::<E>(),
            E::ELEMENTWISE,
            1e-30,
            &format!("{name} on special values"),
        );
    }
}

#[test]
fn unary_ops_f32() {
    unary_ops::<f32>();
}

#[test]
fn unary_ops_f64() {
    unary_ops::<f64>();
}

/// `relu` on the values where formulations differ: `-0.0` gives `+0.0`, NaN stays NaN (of
/// either sign), infinities and subnormals as `max(x, 0)`; the same bits in place
/// (`relu_owned` on a tensor nobody else holds) and into a new tensor, on the vector body and
/// the tail (an odd length), in every float dtype.
fn relu_edges<E: Float>() {
    let special = [
        -0.0,
        0.0,
        -1.5,
        2.0,
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        1e-40,
        -1e-40,
        f32::MIN_POSITIVE,
    ];
    let values: Vec<f32> = special.iter().copied().cycle().take(1001).collect();
    let want: Vec<u32> = values
        .iter()
        .map(|&v| {
            // What the element type holds, then relu in f64.
            let held = Tensor::from_vec(vec![v], [1], Cpu).to_dtype::<E>();
            let h = held.to_dtype::<f64>().to_vec()[0];
            let r = if h.is_nan() {
                f64::NAN
            } else if h > 0.0 {
                h
            } else {
                0.0
            };
            (r as f32).to_bits()
        })
        .collect();
    let x = Tensor::from_vec(values, [1001], Cpu).to_dtype::<E>();
    let out_of_place = x.relu();
    let in_place = x.mul_scalar(E::from_f64(1.0)).relu_owned();
    for (name, got) in [("relu", out_of_place), ("relu_owned", in_place)] {
        let got = got.to_dtype::<f32>().to_vec();
        for (i, (g, &w)) in got.iter().zip(&want).enumerate() {
            let ok = if f32::from_bits(w).is_nan() {
                g.is_nan()
            } else {
                g.to_bits() == w
            };
            assert!(
                ok,
                "{name}::<{}>[{i}]: {g:?} ({:#x}), want {:?}",
                std::any::type_name::<E>(),
                g.to_bits(),
                f32::from_bits(w)
            );
        }
    }
}

#[test]
fn relu_edges_in_every_float_dtype() {
    relu_edges::<f32>();
    relu_edges::<f64>();
    relu_edges::<half::f16>();
    relu_edges::<half::bf16>();
}

#[test]
fn integer_unary_and_arithmetic() {
    let mut rng = Rng::new("integer_unary_and_arithmetic");
    let a = Ref::new(
        &[4, 5],
        (0..20).map(|_| rng.below(21) as f64 - 10.0).collect(),
    );
    let b = Ref::new(&[5], (0..5).map(|_| rng.below(21) as f64 - 10.0).collect());
    let (ta, tb) = (tensor::<i64>(&a), tensor::<i64>(&b));
    assert_exact(&to_ref(&(&ta + &tb)), &a.zip(&b, |x, y| x + y), "i64 +");
    assert_exact(&to_ref(&(&ta - &tb)), &a.zip(&b, |x, y| x - y), "i64 -");
    assert_exact(&to_ref(&(&ta * &tb)), &a.zip(&b, |x, y| x * y), "i64 *");
    assert_exact(
        &to_ref(&ta.maximum(&tb)),
        &a.zip(&b, f64::max),
        "i64 maximum",
    );
    assert_exact(&to_ref(&(&ta * 3)), &a.map(|x| x * 3.0), "i64 * 3");
    assert_exact(&to_ref(&(7 - &ta)), &a.map(|x| 7.0 - x), "7 - i64");
    assert_exact(&to_ref(&-&ta), &a.map(|x| -x), "i64 neg");
    assert_exact(&to_ref(&ta.relu()), &a.map(|x| x.max(0.0)), "i64 relu");
    assert_exact(&to_ref(&ta.abs()), &a.map(f64::abs), "i64 abs");
    assert_exact(&to_ref(&ta.square()), &a.map(|x| x * x), "i64 square");
    assert_exact(
        &to_ref(&ta.sum_dim(1)),
        &a.reduce(&[1], false, |v| v.iter().sum()),
        "i64 sum",
    );
    // Division is for floating point only, as PyTorch's true division would promote.
    assert!(ta.try_div(&tb).is_err());
    // Also for a few elements, which take the inline fast path when the op is defined.
    let (one, two) = (
        Tensor::<Cpu, i64>::from_vec(vec![7], [1], Cpu),
        Tensor::<Cpu, i64>::from_vec(vec![-3], [1], Cpu),
    );
    assert_eq!((&one + &two).to_vec(), vec![4]);
    assert!(one.try_div(&two).is_err());
    assert!(one.try_pow(&two).is_err());
}

/// Comparisons with tensors and scalars, on values with many ties.
fn comparisons<E: Float + Precision>() {
    let mut rng = Rng::new(&format!("comparisons::<{}>", std::any::type_name::<E>()));
    type Cmp<E> = fn(&Tensor<Cpu, E>, &Tensor<Cpu, E>) -> Tensor<Cpu, bool>;
    type CmpS<E> = fn(&Tensor<Cpu, E>, E) -> Tensor<Cpu, bool>;
    let ops: Vec<(&str, Cmp<E>, CmpS<E>, fn(f64, f64) -> bool)> = vec![
        ("eq", |a, b| a.eq(b), |a, s| a.eq_scalar(s), |x, y| x == y),
        ("ne", |a, b| a.ne(b), |a, s| a.ne_scalar(s), |x, y| x != y),
        ("lt", |a, b| a.lt(b), |a, s| a.lt_scalar(s), |x, y| x < y),
        ("le", |a, b| a.le(b), |a, s| a.le_scalar(s), |x, y| x <= y),
        ("gt", |a, b| a.gt(b), |a, s| a.gt_scalar(s), |x, y| x > y),
        ("ge", |a, b| a.ge(b), |a, s| a.ge_scalar(s), |x, y| x >= y),
    ];
    let small_ints = |rng: &mut Rng, shape: &[usize]| {
        Ref::random(rng, shape, 0.0, 1.0).map(|_| rng.below(4) as f64 - 1.0)
    };
    for (abase, aview, bbase, bview) in binary_cases() {
        let (a, ra) = input::<E>(&mut rng, &abase, &aview, -2.0, 2.0);
        let (b, rb) = input::<E>(&mut rng, &bbase, &bview, -2.0, 2.0);
        // Ties matter for eq/le/ge: also compare integer-valued tensors.
        let ia = small_ints(&mut rng, &abase);
        let ib = small_ints(&mut rng, &bbase);
        let (tia, ria) = apply(&tensor::<E>(&ia), &ia, &aview);
        let (tib, rib) = apply(&tensor::<E>(&ib), &ib, &bview);
        let big = ra.numel().max(rb.numel()) > 10_000;
        for (name, op, op_s, f) in ops
            .iter()
            .filter(|(n, ..)| !big || ["eq", "lt"].contains(n))
        {
            let want = ra.zip(&rb, |x, y| f(x, y) as u8 as f64);
            assert_exact(
                &to_ref(&op(&a, &b)),
                &want,
                &format!("{name} {abase:?} {bbase:?}"),
            );
            let want = ria.zip(&rib, |x, y| f(x, y) as u8 as f64);
            assert_exact(
                &to_ref(&op(&tia, &tib)),
                &want,
                &format!("{name} ties {abase:?} {bbase:?}"),
            );
            let s = E::from_f64(0.0);
            assert_exact(
                &to_ref(&op_s(&tia, s)),
                &ria.map(|x| f(x, 0.0) as u8 as f64),
                &format!("{name}_scalar"),
            );
            let s = E::from_f64(0.5);
            assert_exact(
                &to_ref(&op_s(&a, s)),
                &ra.map(|x| f(x, 0.5) as u8 as f64),
                &format!("{name}_scalar 0.5"),
            );
        }
    }
    // NaN compares unequal to everything, itself included.
    let n = Tensor::<Cpu, E>::from_vec(vec![E::from_f64(f64::NAN), E::from_f64(1.0)], [2], Cpu);
    assert_eq!(n.eq(&n).to_vec(), vec![false, true]);
    assert_eq!(n.ne(&n).to_vec(), vec![true, false]);
    assert_eq!(n.le_scalar(E::from_f64(5.0)).to_vec(), vec![false, true]);
}

#[test]
fn comparisons_f32() {
    comparisons::<f32>();
}

#[test]
fn comparisons_f64() {
    comparisons::<f64>();
}

fn where_cond<E: Float + Precision>() {
    let mut rng = Rng::new(&format!("where_cond::<{}>", std::any::type_name::<E>()));
    let cases: Vec<(Vec<usize>, Vec<usize>, Vec<usize>)> = vec![
        (vec![], vec![], vec![]),
        (vec![4], vec![4], vec![4]),
        (vec![3, 1], vec![1, 5], vec![5]),
        (vec![2, 3, 4], vec![], vec![3, 1]),
        (vec![0, 2], vec![2], vec![1]),
        (vec![BIG], vec![BIG], vec![1]),
        (vec![257, 263], vec![263], vec![257, 1]),
    ];
    for (cs, a_s, b_s) in cases {
        let rc = Ref::random(&mut rng, &cs, -1.0, 1.0);
        let cond = tensor::<E>(&rc).gt_scalar(E::from_f64(0.0));
        let rc = rc.map(|v| (v > 0.0) as u8 as f64);
        let ra = Ref::random(&mut rng, &a_s, -2.0, 2.0).rounded::<E>();
        let rb = Ref::random(&mut rng, &b_s, -2.0, 2.0).rounded::<E>();
        let (a, b) = (tensor::<E>(&ra), tensor::<E>(&rb));
        assert_exact(
            &to_ref(&cond.where_cond(&a, &b)),
            &Ref::where_cond(&rc, &ra, &rb),
            &format!("where {cs:?} {a_s:?} {b_s:?}"),
        );
        assert_exact(
            &to_ref(&cond.where_cond(a.clone(), &b)),
            &Ref::where_cond(&rc, &ra, &rb),
            "where owned",
        );
        assert_exact(
            &to_ref(&cond.try_where_cond(&b, &a).unwrap()),
            &Ref::where_cond(&rc, &rb, &ra),
            "where swapped",
        );
    }
    // Strided condition and operands.
    let rc = Ref::random(&mut rng, &[40, 30], -1.0, 1.0);
    let cond = tensor::<E>(&rc).lt_scalar(E::from_f64(0.0)).transpose(0, 1);
    let rc = rc.map(|v| (v < 0.0) as u8 as f64).transpose(0, 1);
    let (a, ra) = input::<E>(&mut rng, &[40, 30], &View::Transpose(0, 1), -1.0, 1.0);
    let (b, rb) = input::<E>(&mut rng, &[30, 50], &View::Narrow(1, 5, 40), -1.0, 1.0);
    assert_exact(
        &to_ref(&cond.where_cond(&a, &b)),
        &Ref::where_cond(&rc, &ra, &rb),
        "where strided",
    );
}

#[test]
fn where_cond_f32() {
    where_cond::<f32>();
}

#[test]
fn where_cond_f64() {
    where_cond::<f64>();
}

/// `(a's shape, a's view, b's shape, b's view)` for matmul: 2-D, vectors, batches, empty,
/// transposed, expanded; sizes below, at and above the small-product threshold (32^3).
fn matmul_cases() -> Vec<(Vec<usize>, View, Vec<usize>, View)> {
    use View::*;
    vec![
        (vec![1, 1], Plain, vec![1, 1], Plain),
        (vec![3, 5], Plain, vec![5, 7], Plain),
        (vec![0, 4], Plain, vec![4, 3], Plain),
        (vec![4, 0], Plain, vec![0, 3], Plain),
        (vec![4, 3], Plain, vec![3, 0], Plain),
        (vec![32, 32], Plain, vec![32, 32], Plain),
        (vec![32, 32], Plain, vec![32, 33], Plain),
        (vec![33, 33], Plain, vec![33, 33], Plain),
        (vec![64, 70], Plain, vec![70, 50], Plain),
        (vec![130, 65], Plain, vec![65, 129], Plain),
        (vec![5, 3], Transpose(0, 1), vec![5, 4], Plain),
        (vec![7, 3], Transpose(0, 1), vec![2, 7], Transpose(0, 1)),
        (vec![70, 64], Transpose(0, 1), vec![50, 70], Transpose(0, 1)),
        (
            vec![40, 90],
            Narrow(1, 10, 45),
            vec![60, 50],
            Narrow(0, 7, 45),
        ),
        (
            vec![1, 6],
            Expand(vec![4, 6]),
            vec![6, 1],
            Expand(vec![6, 3]),
        ),
        (vec![6], Plain, vec![6], Plain),
        (vec![40], Plain, vec![40, 33], Plain),
        (vec![6, 4], Plain, vec![4], Plain),
        (vec![4], Plain, vec![2, 4, 3], Plain),
        (vec![2, 3, 4], Plain, vec![4], Plain),
        (vec![2, 3, 4], Plain, vec![2, 4, 5], Plain),
        (vec![2, 1, 3, 4], Plain, vec![5, 4, 6], Plain),
        (vec![3, 4], Plain, vec![2, 4, 5], Plain),
        (vec![2, 3, 4], Plain, vec![4, 5], Plain),
        (vec![3, 40, 35], Plain, vec![3, 35, 36], Plain),
        (
            vec![3, 35, 40],
            Permute(vec![0, 2, 1]),
            vec![36, 35, 3],
            Permute(vec![2, 1, 0]),
        ),
        (vec![0, 3, 4], Plain, vec![4, 2], Plain),
        (vec![2, 3, 0], Plain, vec![2, 0, 4], Plain),
    ]
}

fn matmul<E: Float + Precision>() {
    let mut rng = Rng::new(&format!("matmul::<{}>", std::any::type_name::<E>()));
    for (abase, aview, bbase, bview) in matmul_cases() {
        let (a, ra) = input::<E>(&mut rng, &abase, &aview, -1.0, 1.0);
        let (b, rb) = input::<E>(&mut rng, &bbase, &bview, -1.0, 1.0);
        let what = format!("{abase:?}{aview:?} @ {bbase:?}{bview:?}");
        let got = to_ref(&a.matmul(&b));
        assert_close_scaled(
            &got,
            &ra.matmul(&rb),
            &ra.matmul_abs(&rb),
            E::ACCUMULATED,
            &what,
        );
        let got = to_ref(&a.try_matmul(b.clone()).unwrap());
        assert_close_scaled(
            &got,
            &ra.matmul(&rb),
            &ra.matmul_abs(&rb),
            E::ACCUMULATED,
            &format!("try_matmul {what}"),
        );
    }
}

#[test]
fn matmul_f32() {
    matmul::<f32>();
}

#[test]
fn matmul_f64() {
    matmul::<f64>();
}

/// Reductions over one dim (each, negative too), several dims, all dims, with and without
/// `keepdim`, on contiguous, strided and big inputs.
fn reductions<E: Float + Precision>() {
    let mut rng = Rng::new(&format!("reductions::<{}>", std::any::type_name::<E>()));
    let cases: Vec<(Vec<usize>, View)> = vec![
        (vec![], View::Plain),
        (vec![1], View::Plain),
        (vec![9], View::Plain),
        (vec![3, 0], View::Plain),
        (vec![4, 5, 6], View::Plain),
        (vec![2, 3, 4, 5], View::Permute(vec![3, 1, 0, 2])),
        (vec![BIG], View::Plain),
        (vec![300, 250], View::Plain),
        (vec![263, 257], View::Transpose(0, 1)),
        (vec![20, 30], View::Narrow(1, 3, 17)),
        (vec![1, 9], View::Expand(vec![5, 9])),
    ];
    let sum = |v: &[f64]| v.iter().sum::<f64>();
    let abs_sum = |v: &[f64]| v.iter().map(|x| x.abs()).sum::<f64>();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let max = |v: &[f64]| v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let min = |v: &[f64]| v.iter().cloned().fold(f64::INFINITY, f64::min);
    for (base, view) in cases {
        let (a, ra) = input::<E>(&mut rng, &base, &view, -2.0, 2.0);
        let rank = ra.shape.len();
        let what = format!("{base:?} {view:?}");
        // All dims.
        let scale = ra.reduce(&[], false, abs_sum);
        assert_close_scaled(
            &to_ref(&a.sum_all()),
            &ra.reduce(&[], false, sum),
            &scale,
            E::ACCUMULATED,
            &format!("sum_all {what}"),
        );
        let mscale = ra.reduce(&[], false, |v| abs_sum(v) / v.len() as f64);
        assert_close_scaled(
            &to_ref(&a.mean_all()),
            &ra.reduce(&[], false, mean),
            &mscale,
            E::ACCUMULATED,
            &format!("mean_all {what}"),
        );
        if ra.numel() > 0 {
            assert_exact(
                &to_ref(&a.max_all()),
                &ra.reduce(&[], false, max).rounded::<E>(),
                &format!("max_all {what}"),
            );
        }
        for keepdim in [false, true] {
            let dims: Vec<isize> = (0..rank as isize).collect();
            let all = a.sum_dims(&dims, keepdim);
            let all_dims: Vec<usize> = (0..rank).collect();
            assert_close_scaled(
                &to_ref(&all),
                &ra.reduce(&all_dims, keepdim, sum),
                &ra.reduce(&all_dims, keepdim, abs_sum),
                E::ACCUMULATED,
                &format!("sum_dims(all, {keepdim}) {what}"),
            );
        }
        for d in 0..rank {
            for dim in [d as isize, d as isize - rank as isize] {
                let w = format!("dim {dim} of {what}");
                let scale = ra.reduce(&[d], false, abs_sum);
                assert_close_scaled(
                    &to_ref(&a.sum_dim(dim)),
                    &ra.reduce(&[d], false, sum),
                    &scale,
                    E::ACCUMULATED,
                    &format!("sum {w}"),
                );
                let mscale = ra.reduce(&[d], false, |v| abs_sum(v) / v.len() as f64);
                assert_close_scaled(
                    &to_ref(&a.mean_dim(dim)),
                    &ra.reduce(&[d], false, mean),
                    &mscale,
                    E::ACCUMULATED,
                    &format!("mean {w}"),
                );
                let kscale = ra.reduce(&[d], true, abs_sum);
                assert_close_scaled(
                    &to_ref(&a.sum_dims(&[dim], true)),
                    &ra.reduce(&[d], true, sum),
                    &kscale,
                    E::ACCUMULATED,
                    &format!("sum keepdim {w}"),
                );
                let mkscale = ra.reduce(&[d], true, |v| abs_sum(v) / v.len() as f64);
                assert_close_scaled(
                    &to_ref(&a.mean_dims(&[dim], true)),
                    &ra.reduce(&[d], true, mean),
                    &mkscale,
                    E::ACCUMULATED,
                    &format!("mean keepdim {w}"),
                );
                if ra.shape[d] > 0 {
                    assert_exact(
                        &to_ref(&a.max(dim).values),
                        &ra.reduce(&[d], false, max),
                        &format!("max {w}"),
                    );
                    assert_exact(
                        &to_ref(&a.min(dim).values),
                        &ra.reduce(&[d], false, min),
                        &format!("min {w}"),
                    );
                    assert_exact(
                        &to_ref(&a.max_keepdim(dim).values),
                        &ra.reduce(&[d], true, max),
                        &format!("max_keepdim {w}"),
                    );
                }
            }
        }
        // Two dims at once, in either order.
        if rank >= 3 {
            for (d0, d1) in [(0usize, 2usize), (2, 1)] {
                let dims = [d0 as isize, d1 as isize - rank as isize];
                for keepdim in [false, true] {
                    let want = ra.reduce(&[d0, d1], keepdim, sum);
                    let scale = ra.reduce(&[d0, d1], keepdim, abs_sum);
                    assert_close_scaled(
                        &to_ref(&a.sum_dims(&dims, keepdim)),
                        &want,
                        &scale,
                        E::ACCUMULATED,
                        &format!("sum_dims {dims:?} {keepdim} {what}"),
                    );
                    let want = ra.reduce(&[d0, d1], keepdim, mean);
                    let scale = ra.reduce(&[d0, d1], keepdim, |v| abs_sum(v) / v.len() as f64);
                    assert_close_scaled(
                        &to_ref(&a.mean_dims(&dims, keepdim)),
                        &want,
                        &scale,
                        E::ACCUMULATED,
                        &format!("mean_dims {dims:?} {keepdim} {what}"),
                    );
                }
            }
        }
    }
}

#[test]
fn reductions_f32() {
    reductions::<f32>();
}

#[test]
fn reductions_f64() {
    reductions::<f64>();
}

#[test]
fn reductions_of_empty_tensors_follow_pytorch() {
    let e = Tensor::<Cpu>::zeros([3, 0], Cpu);
    assert_eq!(e.sum_dim(1).to_vec(), vec![0.0; 3]);
    assert_eq!(e.sum_dim(0).shape(), &[0]);
    assert_eq!(e.sum_all().item(), 0.0);
    assert!(e.mean_all().item().is_nan(), "mean of nothing is nan");
    assert!(e.mean_dim(1).to_vec().iter().all(|v| v.is_nan()));
    assert!(e.try_max_all().is_err());
    assert!(e.try_max(1).is_err());
    assert!(e.try_argmax(1).is_err());
    assert_eq!(e.max(0).values.shape(), &[0]);
}

/// Reference argmax/argmin: the first index of the extreme value; a NaN wins (first NaN).
fn arg_ref(v: &[f64], max: bool) -> f64 {
    let mut best = 0;
    for (i, &x) in v.iter().enumerate() {
        let b = v[best];
        if b.is_nan() {
            break;
        }
        if x.is_nan() || (max && x > b) || (!max && x < b) {
            best = i;
        }
    }
    best as f64
}

fn argmax_argmin<E: Float + Precision>() {
    let mut rng = Rng::new(&format!("argmax_argmin::<{}>", std::any::type_name::<E>()));
    let cases: Vec<(Vec<usize>, View)> = vec![
        (vec![], View::Plain),
        (vec![1], View::Plain),
        (vec![17], View::Plain),
        (vec![4, 5, 6], View::Plain),
        (vec![5, 6], View::Transpose(0, 1)),
        (vec![300, 250], View::Plain),
        (vec![BIG], View::Plain),
        (vec![8, 9], View::Narrow(1, 2, 5)),
    ];
    for (base, view) in cases {
        // Integer values: many ties, so "first index" is tested.
        let r = Ref::random(&mut rng, &base, 0.0, 1.0).map(|_| rng.below(3) as f64);
        let (t, r) = apply(&tensor::<E>(&r), &r, &view);
        let rank = r.shape.len();
        for d in 0..rank.max(1) {
            let dims = if rank == 0 { vec![] } else { vec![d] };
            for dim in [d as isize, d as isize - rank.max(1) as isize] {
                let w = format!("dim {dim} of {base:?} {view:?}");
                assert_exact(
                    &to_ref(&t.argmax(dim)),
                    &r.reduce(&dims, false, |v| arg_ref(v, true)),
                    &format!("argmax {w}"),
                );
                assert_exact(
                    &to_ref(&t.argmin(dim)),
                    &r.reduce(&dims, false, |v| arg_ref(v, false)),
                    &format!("argmin {w}"),
                );
            }
        }
    }
    // NaN: both return the index of the first NaN, and max/min return NaN.
    let v = [1.0, f64::NAN, 5.0, f64::NAN, -3.0];
    let t = Tensor::<Cpu, E>::from_vec(v.map(E::from_f64).to_vec(), [5], Cpu);
    assert_eq!(t.argmax(0).item(), 1);
    assert_eq!(t.argmin(0).item(), 1);
    assert!(t.max(0).values.item().to_f64().is_nan());
    assert!(t.min(0).values.item().to_f64().is_nan());
    assert!(t.max_all().item().to_f64().is_nan());
    assert!(t.sum_dim(0).item().to_f64().is_nan());
    let m = Tensor::<Cpu, E>::from_vec(
        [3.0, 1.0, f64::NAN, 2.0, 2.0, 0.0]
            .map(E::from_f64)
            .to_vec(),
        [2, 3],
        Cpu,
    );
    assert_eq!(m.argmax(1).to_vec(), vec![2, 0]);
    assert_eq!(m.argmin(1).to_vec(), vec![2, 2]);
    assert_eq!(m.argmax(0).to_vec(), vec![0, 1, 0]);
    // Infinities are ordinary extremes.
    let inf = Tensor::<Cpu, E>::from_vec(
        [f64::NEG_INFINITY, f64::INFINITY, f64::INFINITY]
            .map(E::from_f64)
            .to_vec(),
        [3],
        Cpu,
    );
    assert_eq!(inf.argmax(0).item(), 1);
    assert_eq!(inf.argmin(0).item(), 0);
}

#[test]
fn argmax_argmin_f32() {
    argmax_argmin::<f32>();
}

#[test]
fn argmax_argmin_f64() {
    argmax_argmin::<f64>();
}

fn softmax<E: Float + Precision>() {
    let mut rng = Rng::new(&format!("softmax::<{}>", std::any::type_name::<E>()));
    let cases: Vec<(Vec<usize>, View)> = vec![
        (vec![], View::Plain),
        (vec![1], View::Plain),
        (vec![7], View::Plain),
        (vec![3, 4, 5], View::Plain),
        (vec![2, 0, 3], View::Plain),
        (vec![300, 250], View::Plain),
        (vec![263, 257], View::Transpose(0, 1)),
        (vec![4, 5, 6], View::Permute(vec![2, 0, 1])),
        (vec![10, 12], View::Narrow(1, 2, 7)),
        (vec![1, 6], View::Expand(vec![3, 6])),
    ];
    for (base, view) in cases {
        let (a, ra) = input::<E>(&mut rng, &base, &view, -10.0, 10.0);
        let rank = ra.shape.len();
        for d in 0..rank.max(1) {
            for dim in [d as isize, d as isize - rank.max(1) as isize] {
                let w = format!("dim {dim} of {base:?} {view:?}");
                let (want, want_log) = if rank == 0 {
                    (ra.map(|_| 1.0), ra.map(|_| 0.0))
                } else {
                    (ra.softmax(d, false), ra.softmax(d, true))
                };
                // Probabilities: relative to each value (the exponentials are well conditioned).
                assert_close(
                    &to_ref(&a.softmax(dim)),
                    &want,
                    20.0 * E::ELEMENTWISE,
                    1e-30,
                    &format!("softmax {w}"),
                );
                // Log-probabilities: x - logsumexp cancels; the error scales with |x| + |lse|.
                let scale = ra.map(|x| x.abs() + 25.0);
                assert_close_scaled(
                    &to_ref(&a.log_softmax(dim)),
                    &want_log,
                    &scale,
                    E::ELEMENTWISE,
                    &format!("log_softmax {w}"),
                );
            }
        }
    }
    // Large logits: stable (no inf/nan), as PyTorch subtracts the max.
    let big = Tensor::<Cpu, E>::from_vec(
        [1000.0, 0.0, -1000.0, 999.0].map(E::from_f64).to_vec(),
        [4],
        Cpu,
    );
    let r = Ref::new(&[4], vec![1000.0, 0.0, -1000.0, 999.0]);
    assert_close(
        &to_ref(&big.softmax(0)),
        &r.softmax(0, false),
        10.0 * E::ELEMENTWISE,
        1e-30,
        "softmax of large logits",
    );
    assert_close(
        &to_ref(&big.log_softmax(0)),
        &r.softmax(0, true),
        10.0 * E::ELEMENTWISE,
        1e-30,
        "log_softmax of large logits",
    );
}

#[test]
fn softmax_f32() {
    softmax::<f32>();
}

#[test]
fn softmax_f64() {
    softmax::<f64>();
}

fn cat_and_stack<E: Float + Precision>() {
    let mut rng = Rng::new(&format!("cat_and_stack::<{}>", std::any::type_name::<E>()));
    // Same shape apart from `dim`, strided pieces, empty pieces.
    for (shape, dim) in [
        (vec![2, 3], 0usize),
        (vec![2, 3], 1),
        (vec![4, 1, 5], 1),
        (vec![3, 4, 2], 2),
        (vec![7], 0),
        (vec![300, 230], 0),
    ] {
        let mut sa = shape.clone();
        sa[dim] += 1;
        let mut sc = shape.clone();
        sc[dim] = 0;
        let (a, ra) = input::<E>(&mut rng, &sa, &View::Plain, -1.0, 1.0);
        let rev: Vec<usize> = shape.iter().rev().cloned().collect();
        let (b, rb) = if shape.len() >= 2 {
            input::<E>(
                &mut rng,
                &rev,
                &View::Permute((0..shape.len()).rev().collect()),
                -1.0,
                1.0,
            )
        } else {
            input::<E>(
                &mut rng,
                &[shape[0] + 3],
                &View::Narrow(0, 2, shape[0]),
                -1.0,
                1.0,
            )
        };
        assert_eq!(b.shape(), &shape[..]);
        let (c, rc) = input::<E>(&mut rng, &sc, &View::Plain, -1.0, 1.0);
        let want = Ref::cat(&[&ra, &rb, &rc, &ra], dim);
        let w = format!("cat {shape:?} dim {dim}");
        for d in [dim as isize, dim as isize - shape.len() as isize] {
            assert_exact(
                &to_ref(&Tensor::cat((&a, &b, &c, &a), d)),
                &want,
                &format!("tuple {w}"),
            );
            assert_exact(
                &to_ref(&Tensor::cat([&a, &b, &c, &a], d)),
                &want,
                &format!("array {w}"),
            );
            let v = vec![a.clone(), b.clone(), c.clone(), a.clone()];
            assert_exact(&to_ref(&Tensor::cat(&v, d)), &want, &format!("vec {w}"));
            assert_exact(
                &to_ref(&Tensor::cat(v.clone(), d)),
                &want,
                &format!("owned vec {w}"),
            );
            assert_exact(
                &to_ref(&Tensor::cat(&v[..], d)),
                &want,
                &format!("slice {w}"),
            );
            let refs: Vec<&Tensor<Cpu, E>> = vec![&a, &b, &c, &a];
            assert_exact(
                &to_ref(&Tensor::try_cat(&refs[..], d).unwrap()),
                &want,
                &format!("ref slice {w}"),
            );
        }
        assert_exact(
            &to_ref(&Tensor::cat((&b,), dim as isize)),
            &rb,
            "cat of one",
        );
        // stack: equal shapes, each new dim.
        let (b2, rb2) = input::<E>(&mut rng, &shape, &View::Plain, -1.0, 1.0);
        for d in 0..=shape.len() {
            let want = Ref::stack(&[&rb, &rb2, &rb], d);
            assert_exact(
                &to_ref(&Tensor::stack((&b, &b2, &b), d as isize)),
                &want,
                &format!("stack tuple {shape:?} at {d}"),
            );
            let v = [b.clone(), b2.clone(), b.clone()];
            assert_exact(
                &to_ref(&Tensor::stack(&v[..], d as isize)),
                &want,
                &format!("stack slice {shape:?} at {d}"),
            );
            let neg = d as isize - (shape.len() as isize + 1);
            assert_exact(
                &to_ref(&Tensor::stack([&b, &b2, &b], neg)),
                &want,
                &format!("stack {shape:?} at {neg}"),
            );
        }
    }
    // 0-dim tensors stack into a vector and cannot be concatenated.
    let s = Tensor::<Cpu, E>::scalar(E::from_f64(2.5), Cpu);
    let t = Tensor::<Cpu, E>::scalar(E::from_f64(-1.0), Cpu);
    assert_eq!(to_ref(&Tensor::stack((&s, &t), 0)).data, vec![2.5, -1.0]);
    assert_eq!(
        Tensor::try_cat((&s, &t), 0).unwrap_err().to_string(),
        "zero-dimensional tensor (at position 0) cannot be concatenated"
    );
    let empty: Vec<Tensor<Cpu, E>> = Vec::new();
    assert!(Tensor::try_cat(&empty, 0).is_err());
    assert!(Tensor::try_stack(&empty, 0).is_err());
}

#[test]
fn cat_and_stack_f32() {
    cat_and_stack::<f32>();
}

#[test]
fn cat_and_stack_f64() {
    cat_and_stack::<f64>();
}

#[test]
fn cat_and_stack_shape_errors() {
    let a = Tensor::<Cpu>::zeros([2, 3], Cpu);
    let b = Tensor::<Cpu>::zeros([2, 4], Cpu);
    assert_eq!(
        Tensor::try_cat((&a, &b), 0).unwrap_err().to_string(),
        "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for tensor number 1 in the list."
    );
    assert_eq!(Tensor::cat((&a, &b), 1).shape(), &[2, 7]);
    let c = Tensor::<Cpu>::zeros([2, 3, 1], Cpu);
    assert_eq!(
        Tensor::try_cat((&a, &c), 0).unwrap_err().to_string(),
        "Tensors must have same number of dimensions: got 2 and 3"
    );
    assert_eq!(
        Tensor::try_cat((&a, &a), 2).unwrap_err().to_string(),
        "Dimension out of range (expected to be in range of [-2, 1], but got 2)"
    );
    assert_eq!(
        Tensor::try_stack((&a, &b), 0).unwrap_err().to_string(),
        "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [2, 4] at entry 1"
    );
    assert_eq!(
        Tensor::try_stack((&a, &a), 3).unwrap_err().to_string(),
        "Dimension out of range (expected to be in range of [-3, 2], but got 3)"
    );
}

fn gather_and_index_select<E: Float + Precision>() {
    let mut rng = Rng::new(&format!(
        "gather_and_index_select::<{}>",
        std::any::type_name::<E>()
    ));
    for (base, view) in [
        (vec![5], View::Plain),
        (vec![4, 6], View::Plain),
        (vec![3, 4, 5], View::Plain),
        (vec![6, 4], View::Transpose(0, 1)),
        (vec![5, 9], View::Narrow(1, 2, 6)),
        (vec![1, 5], View::Expand(vec![3, 5])),
        (vec![400, 200], View::Plain),
    ] {
        let (a, ra) = input::<E>(&mut rng, &base, &view, -3.0, 3.0);
        let rank = ra.shape.len();
        for d in 0..rank {
            let size = ra.shape[d];
            let w = format!("dim {d} of {base:?} {view:?}");
            // index_select: any length, repeats, any order.
            for len in [0usize, 1, 3, size + 2] {
                let idx: Vec<usize> = (0..len).map(|_| rng.below(size)).collect();
                let it = Tensor::<Cpu, i64>::from_vec(
                    idx.iter().map(|&i| i as i64).collect(),
                    [len],
                    Cpu,
                );
                let want = ra.index_select(d, &idx);
                for dim in [d as isize, d as isize - rank as isize] {
                    assert_exact(
                        &to_ref(&a.index_select(dim, &it)),
                        &want,
                        &format!("index_select {idx:?} {w}"),
                    );
                }
            }
            // gather: index of the same rank, no larger than the input apart from `d`.
            let ishape: Vec<usize> = ra
                .shape
                .iter()
                .enumerate()
                .map(|(j, &s)| {
                    if j == d {
                        rng.below(2 * s + 1)
                    } else {
                        rng.below(s + 1)
                    }
                })
                .collect();
            let n: usize = ishape.iter().product();
            let ivals: Vec<f64> = (0..n).map(|_| rng.below(size) as f64).collect();
            let rindex = Ref::new(&ishape, ivals.clone());
            let it = Tensor::<Cpu, i64>::from_vec(
                ivals.iter().map(|&v| v as i64).collect(),
                &ishape,
                Cpu,
            );
            for dim in [d as isize, d as isize - rank as isize] {
                assert_exact(
                    &to_ref(&a.gather(dim, &it)),
                    &ra.gather(d, &rindex),
                    &format!("gather {ishape:?} {w}"),
                );
            }
            // A strided index works as well.
            if ishape.len() == 2 && n > 0 {
                let tt = it.transpose(0, 1).contiguous().transpose(0, 1);
                assert_exact(
                    &to_ref(&a.gather(d as isize, &tt)),
                    &ra.gather(d, &rindex),
                    &format!("gather strided index {w}"),
                );
            }
        }
    }
}

#[test]
fn gather_and_index_select_f32() {
    gather_and_index_select::<f32>();
}

#[test]
fn gather_and_index_select_f64() {
    gather_and_index_select::<f64>();
}

#[test]
fn negative_and_out_of_range_indices_are_errors() {
    let a = Tensor::<Cpu>::from_vec(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3], Cpu);
    for bad in [-1i64, -4, 3, 100, i64::MIN, i64::MAX] {
        let idx = Tensor::<Cpu, i64>::from_vec(vec![0, bad], [2], Cpu);
        let e = a.try_index_select(1, &idx).unwrap_err().to_string();
        assert_eq!(e, "index out of range in self", "index_select {bad}");
        let gidx = Tensor::<Cpu, i64>::from_vec(vec![0, bad, 1, 2], [2, 2], Cpu);
        assert_eq!(
            a.try_gather(1, &gidx).unwrap_err().to_string(),
            format!("index {bad} is out of bounds for dimension 1 with size 3"),
            "gather {bad}"
        );
    }
    let idx = Tensor::<Cpu, i64>::from_vec(vec![2], [1], Cpu);
    assert!(a.try_index_select(0, &idx).is_err());
    assert_eq!(
        a.try_index_select(2, &idx).unwrap_err().to_string(),
        "Dimension out of range (expected to be in range of [-2, 1], but got 2)"
    );
    let two_d = Tensor::<Cpu, i64>::zeros([1, 1], Cpu);
    assert_eq!(
        a.try_index_select(0, &two_d).unwrap_err().to_string(),
        "index_select(): Index is supposed to be a vector"
    );
    assert_eq!(
        a.try_gather(0, Tensor::<Cpu, i64>::zeros([2], Cpu))
            .unwrap_err()
            .to_string(),
        "Index tensor must have the same number of dimensions as input tensor"
    );
    // A 0-dim input takes a 0- or 1-dim index of zeros, as in PyTorch.
    let s = Tensor::<Cpu>::scalar(7.0, Cpu);
    assert_eq!(
        s.gather(0, Tensor::<Cpu, i64>::zeros([3], Cpu)).to_vec(),
        vec![7.0; 3]
    );
    assert_eq!(
        s.index_select(0, Tensor::<Cpu, i64>::zeros([1], Cpu))
            .to_vec(),
        vec![7.0]
    );
    assert!(s.try_gather(0, Tensor::<Cpu, i64>::ones([2], Cpu)).is_err());
}

/// Buffer reuse by owned operands must never be visible: inputs keep their values.
#[test]
fn in_place_buffer_reuse_is_invisible() {
    let mut rng = Rng::new("in_place_buffer_reuse_is_invisible");
    for n in [1usize, 5, BIG] {
        let rx = Ref::random(&mut rng, &[n], -1.0, 1.0).rounded::<f32>();
        let ry = Ref::random(&mut rng, &[n], -1.0, 1.0).rounded::<f32>();
        let (x, y) = (tensor::<f32>(&rx), tensor::<f32>(&ry));
        let sum = rx.zip(&ry, |a, b| a + b).rounded::<f32>();
        let z = &x + &y;
        assert_exact(&to_ref(&z), &sum, "&x + &y");
        assert_exact(&to_ref(&x), &rx, "x after &x + &y");
        // x is shared by its clone: the clone's buffer must not be written.
        let z = x.clone() + &y;
        assert_exact(&to_ref(&z), &sum, "x.clone() + &y");
        assert_exact(&to_ref(&x), &rx, "x after x.clone() + &y");
        let z = &y + x.clone();
        assert_exact(&to_ref(&z), &sum, "&y + x.clone()");
        assert_exact(&to_ref(&x), &rx, "x after &y + x.clone()");
        let alias = x.clone();
        let z = alias + y.clone();
        assert_exact(&to_ref(&z), &sum, "alias + y.clone()");
        assert_exact(&to_ref(&x), &rx, "x after alias + y");
        assert_exact(&to_ref(&y), &ry, "y after alias + y.clone()");
        let z = x.clone() * 2.0;
        assert_exact(&to_ref(&z), &rx.map(|v| v * 2.0), "x.clone() * 2");
        let z = 2.0 - x.clone();
        assert_exact(
            &to_ref(&z),
            &rx.map(|v| 2.0 - v).rounded::<f32>(),
            "2 - x.clone()",
        );
        let z = -x.clone();
        assert_exact(&to_ref(&z), &rx.map(|v| -v), "-x.clone()");
        let z = x.clone().relu_owned();
        assert_exact(
            &to_ref(&z),
            &rx.map(|v| v.max(0.0)),
            "x.clone().relu_owned()",
        );
        assert_exact(&to_ref(&x), &rx, "x after owned ops on clones");
        // A view of x is shared too, whatever its layout.
        let v = x.reshape(&[n as isize, 1]);
        let z = v + &y.reshape(&[n as isize, 1]);
        assert_exact(&to_ref(&z).reshape(&[n]), &sum, "view + view");
        assert_exact(&to_ref(&x), &rx, "x after a view was consumed");
        // A temporary that nobody else holds may be reused; the result must still be right.
        let w = (&x + &y) * &x;
        assert_close(
            &to_ref(&w),
            &sum.zip(&rx, |s, a| s * a).rounded::<f32>(),
            4e-6,
            1e-30,
            "(x + y) * x",
        );
        assert_exact(&to_ref(&x), &rx, "x after (x + y) * x");
    }
    // An owned operand of another shape than the result is not a place for it.
    let row = Tensor::<Cpu>::from_vec(vec![1.0, 2.0, 3.0], [1, 3], Cpu);
    let col = Tensor::<Cpu>::from_vec(vec![10.0, 20.0], [2, 1], Cpu);
    let z = row.clone() + col.clone();
    assert_eq!(z.to_vec(), vec![11.0, 12.0, 13.0, 21.0, 22.0, 23.0]);
    assert_eq!(row.to_vec(), vec![1.0, 2.0, 3.0]);
    // Owned non-contiguous views (sole owner after the original is dropped).
    let m = Tensor::<Cpu>::from_vec((0..6).map(|v| v as f32).collect(), [2, 3], Cpu);
    let t = m.transpose(0, 1);
    drop(m);
    let ones = Tensor::<Cpu>::ones([3, 2], Cpu);
    assert_eq!((t + &ones).to_vec(), vec![1.0, 4.0, 2.0, 5.0, 3.0, 6.0]);
    let m = Tensor::<Cpu>::from_vec((0..6).map(|v| v as f32).collect(), [2, 3], Cpu);
    let first_row = m.narrow(0, 0, 1);
    assert_eq!(
        (first_row + &Tensor::<Cpu>::ones([1, 3], Cpu)).to_vec(),
        vec![1.0, 2.0, 3.0]
    );
    assert_eq!(m.to_vec(), vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    let e = Tensor::<Cpu>::from_vec(vec![5.0], [1, 1], Cpu).expand(&[2, 2]);
    assert_eq!(
        (e - &Tensor::<Cpu>::ones([2, 2], Cpu)).to_vec(),
        vec![4.0; 4]
    );
}

#[test]
fn dtype_conversions_round_trip() {
    let mut rng = Rng::new("dtype_conversions_round_trip");
    let r = Ref::random(&mut rng, &[5, 7], -100.0, 100.0);
    let t64 = tensor::<f64>(&r);
    let t32: Tensor<Cpu, f32> = t64.to_dtype();
    assert_exact(&to_ref(&t32), &r.rounded::<f32>(), "f64 -> f32");
    let ti: Tensor<Cpu, i64> = t64.transpose(0, 1).to_dtype();
    assert_exact(
        &to_ref(&ti),
        &r.transpose(0, 1).map(|v| v.trunc()),
        "f64 -> i64 truncates",
    );
    let tb: Tensor<Cpu, bool> = ti.to_dtype();
    assert_exact(
        &to_ref(&tb),
        &r.transpose(0, 1).map(|v| (v.trunc() != 0.0) as u8 as f64),
        "i64 -> bool",
    );
    let back: Tensor<Cpu, f64> = tb.to_dtype();
    assert_eq!(back.shape(), &[7, 5]);
    let same: Tensor<Cpu, f64> = t64.to_dtype();
    assert!(
        same.shares_storage_with(&t64),
        "a cast to the same type is free"
    );
}

/// Sizes as `reshape` and `expand` take them.
fn signed(shape: &[usize]) -> Vec<isize> {
    shape.iter().map(|&s| s as isize).collect()
}

/// Reductions large enough to run split across threads (>= 65536 elements): `max(dim)`'s
/// values and indices and `argmax` against a plain loop (first of equal maxima; the first NaN
/// wins), on lines full of ties and with NaNs in some, and `sum()` against f64.
#[test]
fn large_reductions_match_a_plain_loop() {
    let mut rng = Rng::new("large_reductions_match_a_plain_loop");
    let (rows, cols) = (257 + rng.below(40), 300 + rng.below(40));
    let data: Vec<f32> = (0..rows * cols)
        .map(|_| {
            if rng.chance(0.0005) {
                f32::NAN
            } else {
                rng.int(-20, 20) as f32 // many ties per line
            }
        })
        .collect();
    let x = Tensor::from_vec(data.clone(), [rows, cols], Cpu);
    let best = x.max(1);
    let (values, indices) = (best.values.to_vec(), best.indices.to_vec());
    let arg = x.argmax(1).to_vec();
    for r in 0..rows {
        let line = &data[r * cols..(r + 1) * cols];
        let mut at = 0;
        for (j, &v) in line.iter().enumerate() {
            if line[at].is_nan() {
                break;
            }
            if v.is_nan() || v > line[at] {
                at = j;
            }
        }
        assert_eq!(indices[r], at as i64, "max(1) index of line {r}");
        assert_eq!(arg[r], at as i64, "argmax(1) of line {r}");
        assert!(
            values[r] == line[at] || (values[r].is_nan() && line[at].is_nan()),
            "max(1) value of line {r}: {} against {}",
            values[r],
            line[at]
        );
    }
    let n = 1 << 20;
    let big: Vec<f32> = (0..n).map(|_| rng.uniform(-1.0, 1.0) as f32).collect();
    let want: f64 = big.iter().map(|&v| v as f64).sum();
    let got = Tensor::from_vec(big, [n], Cpu).sum().item() as f64;
    assert!(
        (got - want).abs() <= 1e-6 * n as f64,
        "sum {got} against {want}"
    );
}

/// Every op of the op table (`tests/common/ops.rs`) in f32 against the same op in f64 on the
/// same values (the f64 reference; the per-family tests above check the f64 kernels against
/// the independent loops of `cpu_reference.rs`).
#[test]
fn every_op_of_the_table_in_f32_matches_f64() {
    let draw = ops::Draw::new(14);
    let cpu = DynDevice::cpu();
    ops::run_cases(
        "reference",
        &draw.inputs(DType::F32, cpu),
        &draw.rounded_inputs(DType::F32, DType::F64, cpu),
        |_| None,
        |_, want| 64.0 * ops::table_eps(DType::F32) * want.abs().max(1.0),
    );
}

/// The ops whose CPU kernels split work across threads give the same bits on one thread (a
/// one-thread pool) as on every thread from the program's own thread, on shapes above their
/// thresholds: a chunk handed the wrong start, or partial sums added in an order that depends
/// on the scheduling, would differ. Element-wise add, a 1M-element `sum`, row sums, `softmax`,
/// batched small products, a product big enough to split, max pooling with its indices,
/// `Linear`'s bias gradient, and convolutions forward and backward: small images (unfolded
/// image by image on every thread count) and large ones, fewer than a machine with four or
/// more threads has (there the pool runs the batched product and one thread runs image by
/// image, so the two paths must agree). (The values themselves are checked against the f64
/// reference by the tests above and in `tests/conv.rs`.)
#[test]
fn parallel_kernels_give_the_same_bits_on_any_thread_count() {
    let mut rng = Rng::new("parallel_kernels_give_the_same_bits_on_any_thread_count");
    let mut t = |shape: &[usize]| {
        let n = shape.iter().product();
        Tensor::<Cpu>::from_vec(
            rng.values(n, -2.0, 2.0).iter().map(|&v| v as f32).collect(),
            shape,
            Cpu,
        )
    };
    let (a, b) = (t(&[300, 301]), t(&[300, 301]));
    let big = t(&[1 << 20]);
    let logits = t(&[4099, 33]);
    let (q, k) = (t(&[300, 16, 16]), t(&[300, 16, 16]));
    let img = t(&[8, 16, 41, 40]);
    let x = t(&[1030, 70]);
    let (m1, m2) = (t(&[300, 200]), t(&[200, 250]));
    let (small, small_w) = (t(&[5, 3, 20, 19]), t(&[8, 3, 3, 3]));
    let (large, large_w) = (t(&[3, 16, 64, 64]), t(&[16, 16, 3, 3]));
    let run = || {
        let lin = devtype::nn::Linear::new(70, 64, Cpu);
        let scale = Tensor::<Cpu>::from_vec(
            (0..1030 * 64).map(|i| (i % 7) as f32 - 3.0).collect(),
            [1030, 64],
            Cpu,
        );
        (lin.forward(&x) * &scale).sum().backward();
        let pooled = img.max_pool2d_with_indices((3, 3), (2, 2), (1, 1), (1, 1), false);
        let conv = |x: &Tensor<Cpu>, w: &Tensor<Cpu>| {
            let (x, w) = (Tensor::parameter(x.clone()), Tensor::parameter(w.clone()));
            let y = x.conv2d(&w, None, (1, 1), (1, 1), (1, 1), 1);
            (&y * &y).sum().backward();
            [
                y.to_vec(),
                x.grad().unwrap().to_vec(),
                w.grad().unwrap().to_vec(),
            ]
        };
        let [small_y, small_dx, small_dw] = conv(&small, &small_w);
        let [large_y, large_dx, large_dw] = conv(&large, &large_w);
        vec![
            (&a + &b).to_vec(),
            vec![big.sum().item()],
            a.sum_dims(&[1], false).to_vec(),
            logits.softmax(1).to_vec(),
            q.matmul(k.transpose(1, 2)).to_vec(),
            m1.matmul(&m2).to_vec(),
            pooled.values.to_vec(),
            pooled.indices.to_vec().iter().map(|&i| i as f32).collect(),
            lin.bias().unwrap().grad().unwrap().to_vec(),
            small_y,
            small_dx,
            small_dw,
            large_y,
            large_dx,
            large_dw,
        ]
    };
    let bits = |v: Vec<Vec<f32>>| -> Vec<Vec<u32>> {
        v.into_iter()
            .map(|x| x.iter().map(|f| f.to_bits()).collect())
            .collect()
    };
    devtype::manual_seed(7);
    let pool = bits(run());
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    devtype::manual_seed(7);
    let serial = bits(one.install(run));
    let names = [
        "add",
        "sum",
        "sum(1)",
        "softmax",
        "bmm",
        "mm",
        "max_pool2d",
        "indices",
        "bias grad",
        "conv2d, small images",
        "its input gradient",
        "its weight gradient",
        "conv2d, large images",
        "its input gradient",
        "its weight gradient",
    ];
    assert_eq!(names.len(), pool.len(), "a name for every result");
    for ((name, p), s) in names.iter().zip(&pool).zip(&serial) {
        assert!(p == s, "{name}: the pool's bits differ from one thread's");
    }
}
