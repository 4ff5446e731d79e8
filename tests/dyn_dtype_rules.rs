//! The dynamic front's per-op dtype rules, beyond `torch.result_type`, as PyTorch 2.15 applies
//! them. The expected result dtypes and error texts are written out by hand from PyTorch's
//! semantics (its op metadata: `div` and the unary float ops promote integer inputs to the
//! default dtype, `float32`; `pow` stays integer and refuses a negative integer scalar exponent
//! of an integer base; `sum` of integers and `bool` is `int64`; `mean` of them is refused; `bool`
//! adds as or and multiplies as and; `-` refuses `bool`; `where` promotes its branches; the CPU
//! `mm` takes `int64`), not computed by devtype. Values are checked on fresh random inputs
//! against an `f64` (or exact `i64`) reference.

mod common;

use common::{values_f64, Rng};
use devtype::prelude::*;

const B: DType = DType::Bool;
const L: DType = DType::I64;
const H: DType = DType::F16;
const F: DType = DType::F32;
const D: DType = DType::F64;

fn cpu() -> DynDevice {
    DynDevice::cpu()
}

fn err<T: std::fmt::Debug>(r: devtype::Result<T>) -> String {
    r.expect_err("PyTorch refuses this").to_string()
}

/// A random tensor of `dtype` and `n` elements, with values exact in it: booleans, integers in
/// `-6..=6`, floats in `[-4, 4)` on a grid of 1/8 (exact in `f16`). Returns the tensor and its
/// values.
fn random(rng: &mut Rng, dtype: DType, n: usize) -> (DynTensor, Vec<f64>) {
    let values: Vec<f64> = (0..n)
        .map(|_| match dtype {
            DType::Bool => rng.int(0, 1) as f64,
            DType::I64 => rng.int(-6, 6) as f64,
            _ => rng.int(-32, 31) as f64 / 8.0,
        })
        .collect();
    let t = DynTensor::from_vec(values.clone(), [n], cpu())
        .unwrap()
        .to_dtype(dtype)
        .unwrap();
    (t, values)
}

/// `got` equals `want` rounded to `dtype` (NaNs equal, infinities equal), within its rounding.
fn assert_close(what: &str, got: &[f64], want: &[f64], dtype: DType) {
    assert_eq!(got.len(), want.len(), "{what}");
    let tolerance = match dtype {
        DType::F16 => 2e-3,
        DType::F32 => 2e-7,
        _ => 0.0,
    };
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let same = (g.is_nan() && w.is_nan())
            || g == w
            || (g - w).abs() <= tolerance * w.abs().max(1e-30)
            || (dtype == DType::F16 && w.abs() < 1e-4 && (g - w).abs() < 1e-7);
        assert!(same, "{what}: element {i} is {g}, expected {w}");
    }
}

/// PyTorch's `powi` on `i64`, for small values (no overflow): a negative exponent gives 1 for
/// a base of 1, ±1 for -1, else 0.
fn powi(base: i64, exponent: i64) -> i64 {
    if exponent < 0 {
        return match base {
            1 => 1,
            -1 => {
                if exponent % 2 == 0 {
                    1
                } else {
                    -1
                }
            }
            _ => 0,
        };
    }
    base.pow(exponent as u32)
}

#[test]
fn binary_ops_compute_in_the_ops_own_dtype() {
    let mut rng = Rng::new("binary_ops_compute_in_the_ops_own_dtype");
    type Reference = fn(f64, f64) -> f64;
    let or = |a: f64, b: f64| ((a != 0.0) || (b != 0.0)) as u8 as f64;
    let and = |a: f64, b: f64| ((a != 0.0) && (b != 0.0)) as u8 as f64;
    // (op, a, b, result dtype): PyTorch 2.15.
    let table: [(&str, DType, DType, DType, Reference); 22] = [
        ("div", L, L, F, |a, b| a / b),
        ("div", B, B, F, |a, b| a / b),
        ("div", L, B, F, |a, b| a / b),
        ("div", B, L, F, |a, b| a / b),
        ("div", L, H, H, |a, b| a / b),
        ("div", H, L, H, |a, b| a / b),
        ("div", L, D, D, |a, b| a / b),
        ("div", F, L, F, |a, b| a / b),
        ("pow", L, L, L, |a, b| powi(a as i64, b as i64) as f64),
        ("pow", B, L, L, |a, b| powi(a as i64, b as i64) as f64),
        ("pow", L, B, L, |a, b| powi(a as i64, b as i64) as f64),
        ("pow", L, F, F, f64::powf),
        ("add", B, B, B, or),
        ("add", B, L, L, |a, b| a + b),
        ("add", L, F, F, |a, b| a + b),
        ("mul", B, B, B, and),
        ("mul", B, L, L, |a, b| a * b),
        ("maximum", B, B, B, or),
        ("minimum", B, B, B, and),
        ("sub", L, L, L, |a, b| a - b),
        ("sub", L, F, F, |a, b| a - b),
        ("mul", L, H, H, |a, b| a * b),
    ];
    for (op, da, db, result, reference) in table {
        let n = 1 + rng.below(40);
        let ((a, va), (b, vb)) = (random(&mut rng, da, n), random(&mut rng, db, n));
        let got = match op {
            "div" => a.div(&b),
            "pow" => a.pow(&b),
            "add" => a.add(&b),
            "mul" => a.mul(&b),
            "sub" => a.sub(&b),
            "maximum" => a.maximum(&b),
            "minimum" => a.minimum(&b),
            _ => unreachable!(),
        };
        let what = format!("{op}({da:?}, {db:?})");
        let got = got.unwrap_or_else(|e| panic!("{what}: PyTorch accepts it, got {e}"));
        assert_eq!(got.dtype(), result, "{what}");
        let want: Vec<f64> = va.iter().zip(&vb).map(|(&a, &b)| reference(a, b)).collect();
        assert_close(&what, &values_f64(&got), &want, result);
    }
}

#[test]
fn scalar_operands_follow_the_same_rules() {
    let mut rng = Rng::new("scalar_operands_follow_the_same_rules");
    let (l, vl) = random(&mut rng, L, 25);
    let (b, vb) = random(&mut rng, B, 25);
    let map = |v: &[f64], f: &dyn Fn(f64) -> f64| v.iter().map(|&x| f(x)).collect::<Vec<_>>();
    let check = |what: &str, got: DynTensor, dtype: DType, want: Vec<f64>| {
        assert_eq!(got.dtype(), dtype, "{what}");
        assert_close(what, &values_f64(&got), &want, dtype);
    };
    check(
        "i64 / 2",
        l.div_scalar(2i64).unwrap(),
        F,
        map(&vl, &|x| x / 2.0),
    );
    check(
        "i64 / 2.5",
        l.div_scalar(2.5).unwrap(),
        F,
        map(&vl, &|x| x / 2.5),
    );
    check(
        "bool / 4",
        b.div_scalar(4i64).unwrap(),
        F,
        map(&vb, &|x| x / 4.0),
    );
    check("&i64 / 4.0", &l / 4.0, F, map(&vl, &|x| x / 4.0));
    check(
        "i64 ** 3",
        l.pow_scalar(3i64).unwrap(),
        L,
        map(&vl, &|x| x.powi(3)),
    );
    check(
        "i64 ** 0",
        l.pow_scalar(0i64).unwrap(),
        L,
        map(&vl, &|_| 1.0),
    );
    check(
        "bool ** 2",
        b.pow_scalar(2i64).unwrap(),
        L,
        map(&vb, &|x| x),
    );
    check(
        "i64 ** -1.0",
        l.pow_scalar(-1.0).unwrap(),
        F,
        map(&vl, &|x| 1.0 / x),
    );
    check(
        "i64 ** 0.5",
        l.pow_scalar(0.5).unwrap(),
        F,
        map(&vl, &f64::sqrt),
    );
    check(
        "bool + true",
        b.add_scalar(true).unwrap(),
        B,
        map(&vb, &|_| 1.0),
    );
    check("bool + false", b.add_scalar(false).unwrap(), B, vb.clone());
    check(
        "bool * false",
        b.mul_scalar(false).unwrap(),
        B,
        map(&vb, &|_| 0.0),
    );
    check("bool * true", b.mul_scalar(true).unwrap(), B, vb.clone());
    check(
        "bool + 2",
        b.add_scalar(2i64).unwrap(),
        L,
        map(&vb, &|x| x + 2.0),
    );
}

#[test]
fn integer_powers_are_exact() {
    let base = DynTensor::from_vec(vec![3i64, -3, 2, -1, -1, 1, 0, 7], [8], cpu()).unwrap();
    let exponent = DynTensor::from_vec(vec![39i64, 39, 62, -3, -4, -9, 0, 2], [8], cpu()).unwrap();
    // 3^39 = 4052555153018976267 is past 2^53: no floating point holds it.
    assert_eq!(
        base.pow(&exponent).unwrap().to_vec::<i64>().unwrap(),
        [
            4052555153018976267,
            -4052555153018976267,
            1 << 62,
            -1,
            1,
            1,
            1,
            49
        ]
    );
    // Past i64, PyTorch's products wrap: 3^40 mod 2^64.
    let wrapped = base.pow_scalar(40i64).unwrap().to_vec::<i64>().unwrap();
    assert_eq!(wrapped[0], 3i64.wrapping_pow(40));
    // A broadcast exponent, and a 0-dim base.
    let two = DynTensor::full([], 2i64, L, cpu()).unwrap();
    assert_eq!(
        two.pow(&DynTensor::from_vec(vec![0i64, 10, 62], [3], cpu()).unwrap())
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        [1, 1024, 1 << 62]
    );
}

#[test]
fn unary_float_ops_of_integers_and_bool_give_float32() {
    let mut rng = Rng::new("unary_float_ops_of_integers_and_bool_give_float32");
    type Reference = fn(f64) -> f64;
    let table: [(&str, Reference); 6] = [
        ("sqrt", f64::sqrt),
        ("exp", f64::exp),
        ("log", f64::ln),
        ("tanh", f64::tanh),
        ("sigmoid", |x| 1.0 / (1.0 + (-x).exp())),
        ("reciprocal", |x| 1.0 / x),
    ];
    for (op, reference) in table {
        for (dtype, result) in [(L, F), (B, F), (H, H), (F, F)] {
            let n = 1 + rng.below(30);
            let (x, v) = random(&mut rng, dtype, n);
            let got = match op {
                "sqrt" => x.sqrt(),
                "exp" => x.exp(),
                "log" => x.log(),
                "tanh" => x.tanh(),
                "sigmoid" => x.sigmoid(),
                "reciprocal" => x.reciprocal(),
                _ => unreachable!(),
            };
            let what = format!("{op}({dtype:?})");
            let got = got.unwrap_or_else(|e| panic!("{what}: PyTorch accepts it, got {e}"));
            assert_eq!(got.dtype(), result, "{what}");
            let want: Vec<f64> = v.iter().map(|&x| reference(x)).collect();
            assert_close(&what, &values_f64(&got), &want, result);
        }
    }
    // Integer ops of integers stay integers; `square` of bool is `pow(x, 2)`: int64.
    let (l, vl) = random(&mut rng, L, 20);
    let (b, vb) = random(&mut rng, B, 20);
    let neg: Vec<f64> = vl.iter().map(|x| -x).collect();
    assert_eq!(values_f64(&l.neg().unwrap()), neg);
    assert_eq!(l.neg().unwrap().dtype(), L);
    let abs: Vec<f64> = vl.iter().map(|x| x.abs()).collect();
    assert_eq!(values_f64(&l.abs().unwrap()), abs);
    let square = b.square().unwrap();
    assert_eq!((square.dtype(), values_f64(&square)), (L, vb));
}

#[test]
fn sums_of_bool_and_integers_are_exact_int64_counts() {
    let mut rng = Rng::new("sums_of_bool_and_integers_are_exact_int64_counts");
    // The accuracy idiom: (predictions == labels).sum() is an int64 count.
    let n = 1 + rng.below(500);
    let (p, vp) = random(&mut rng, L, n);
    let (y, vy) = random(&mut rng, L, n);
    let hits = p.eq(&y).unwrap();
    let count = hits.sum_all().unwrap();
    assert_eq!(count.dtype(), L);
    let want = vp.iter().zip(&vy).filter(|(a, b)| a == b).count() as i64;
    assert_eq!(count.item::<i64>().unwrap(), want);
    // Per dim, and over dims.
    let (rows, cols) = (1 + rng.below(7), 1 + rng.below(7));
    let (m, vm) = random(&mut rng, B, rows * cols);
    let m = m.reshape(&[rows as isize, cols as isize]).unwrap();
    let per_col = m.sum_dim(0).unwrap();
    assert_eq!(per_col.dtype(), L);
    let want: Vec<f64> = (0..cols)
        .map(|c| (0..rows).map(|r| vm[r * cols + c]).sum())
        .collect();
    assert_eq!(values_f64(&per_col), want);
    let kept = m.sum_dims(&[1], true).unwrap();
    assert_eq!((kept.dtype(), kept.shape()), (L, &[rows, 1][..]));
    // int64 sums stay exact past 2^53 (never through a float).
    let big: Vec<i64> = (0..64)
        .map(|_| rng.int(1 << 55, 1 << 56) * if rng.chance(0.5) { -1 } else { 1 })
        .collect();
    let want: i64 = big.iter().sum();
    let t = DynTensor::from_vec(big, [64], cpu()).unwrap();
    assert_eq!(t.sum_all().unwrap().item::<i64>().unwrap(), want);
    // mean of integers and bool: PyTorch's text.
    assert_eq!(
        err(hits.mean_all()),
        "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Bool"
    );
    assert_eq!(
        err(p.mean_dim(0)),
        "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Long"
    );
}

#[test]
fn max_and_min_of_bool_and_integers() {
    let mut rng = Rng::new("max_and_min_of_bool_and_integers");
    let (rows, cols) = (1 + rng.below(6), 1 + rng.below(6));
    let (b, vb) = random(&mut rng, B, rows * cols);
    let b = b.reshape(&[rows as isize, cols as isize]).unwrap();
    let any = vb.iter().any(|&v| v != 0.0) as u8 as f64;
    let all = vb.iter().all(|&v| v != 0.0) as u8 as f64;
    let max = b.max_all().unwrap();
    assert_eq!((max.dtype(), values_f64(&max)), (B, vec![any]));
    let min = b.min_all().unwrap();
    assert_eq!((min.dtype(), values_f64(&min)), (B, vec![all]));
    let per_row = b.max(1).unwrap().values;
    let want: Vec<f64> = (0..rows)
        .map(|r| (0..cols).any(|c| vb[r * cols + c] != 0.0) as u8 as f64)
        .collect();
    assert_eq!((per_row.dtype(), values_f64(&per_row)), (B, want));
    assert_eq!(
        err(b.argmax(1)),
        "\"argmax_cpu\" not implemented for 'Bool'"
    );
    // Integers: values and indices.
    let (l, vl) = random(&mut rng, L, 30);
    let best = vl.iter().cloned().fold(f64::MIN, f64::max);
    let first = vl.iter().position(|&v| v == best).unwrap() as i64;
    assert_eq!(l.max_all().unwrap().item::<i64>().unwrap() as f64, best);
    assert_eq!(l.argmax_all().unwrap().item::<i64>().unwrap(), first);
}

#[test]
fn comparisons_across_dtypes_and_where_promote() {
    let mut rng = Rng::new("comparisons_across_dtypes_and_where_promote");
    for (da, db) in [(L, F), (B, L), (H, L), (B, F), (L, D)] {
        let n = 1 + rng.below(30);
        let ((a, va), (b, vb)) = (random(&mut rng, da, n), random(&mut rng, db, n));
        let lt = a.lt(&b).unwrap();
        let want: Vec<f64> = va
            .iter()
            .zip(&vb)
            .map(|(x, y)| (x < y) as u8 as f64)
            .collect();
        assert_eq!((lt.dtype(), values_f64(&lt)), (B, want), "{da:?} < {db:?}");
    }
    // where(cond, a, b) is in result_type(a, b).
    for (da, db, result) in [
        (F, L, F),
        (L, F, F),
        (L, B, L),
        (H, L, H),
        (B, B, B),
        (F, D, D),
    ] {
        let n = 1 + rng.below(30);
        let (c, vc) = random(&mut rng, B, n);
        let ((a, va), (b, vb)) = (random(&mut rng, da, n), random(&mut rng, db, n));
        let got = c.where_cond(&a, &b).unwrap();
        assert_eq!(got.dtype(), result, "where({da:?}, {db:?})");
        let want: Vec<f64> = (0..n)
            .map(|i| if vc[i] != 0.0 { va[i] } else { vb[i] })
            .collect();
        assert_eq!(values_f64(&got), want, "where({da:?}, {db:?})");
    }
}

#[test]
fn cat_and_stack_promote_their_inputs() {
    let mut rng = Rng::new("cat_and_stack_promote_their_inputs");
    for (dtypes, result) in [
        (vec![F, L], F),
        (vec![B, L, B], L),
        (vec![H, L], H),
        (vec![L, H, D], D),
        (vec![B, B], B),
    ] {
        let n = 1 + rng.below(6);
        let parts: Vec<(DynTensor, Vec<f64>)> =
            dtypes.iter().map(|&d| random(&mut rng, d, n)).collect();
        let refs: Vec<&DynTensor> = parts.iter().map(|(t, _)| t).collect();
        let want: Vec<f64> = parts.iter().flat_map(|(_, v)| v.clone()).collect();
        let cat = DynTensor::cat(&refs, 0).unwrap();
        assert_eq!(
            (cat.dtype(), values_f64(&cat)),
            (result, want.clone()),
            "cat {dtypes:?}"
        );
        let stack = DynTensor::stack(&refs, 0).unwrap();
        assert_eq!(
            (stack.dtype(), stack.shape(), values_f64(&stack)),
            (result, &[dtypes.len(), n][..], want),
            "stack {dtypes:?}"
        );
    }
    // A tracked f32 input still gets its gradient through the conversion-free path, and an
    // f16 one through its recorded conversion.
    let x = DynTensor::parameter(DynTensor::ones([2], cpu()).unwrap()).unwrap();
    let h =
        DynTensor::parameter(DynTensor::ones([2], cpu()).unwrap().to_dtype(H).unwrap()).unwrap();
    let l = DynTensor::full([2], 3i64, L, cpu()).unwrap();
    let joined = DynTensor::cat(&[&x, &l, &h], 0).unwrap();
    assert_eq!(joined.dtype(), F);
    joined.sum_all().unwrap().backward().unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f32>().unwrap(), [1.0, 1.0]);
    assert_eq!(h.grad().unwrap().dtype(), H);
}

#[test]
fn integer_matmul_is_exact_on_the_cpu() {
    let mut rng = Rng::new("integer_matmul_is_exact_on_the_cpu");
    for (sa, sb) in [
        (vec![3, 4], vec![4, 2]),
        (vec![4], vec![4, 3]),
        (vec![2, 3, 4], vec![4, 5]),
        (vec![2, 1, 2, 3], vec![3, 3, 2]),
        (vec![5], vec![5]),
    ] {
        let na: usize = sa.iter().product();
        let nb: usize = sb.iter().product();
        // Products up to 2^51 and sums of up to 5 of them: exact in i64, not in f64.
        let a: Vec<i64> = (0..na).map(|_| rng.int(-(1 << 31), 1 << 31)).collect();
        let b: Vec<i64> = (0..nb).map(|_| rng.int(-(1 << 20), 1 << 20)).collect();
        let ta = DynTensor::from_vec(a.clone(), &sa[..], cpu()).unwrap();
        let tb = DynTensor::from_vec(b.clone(), &sb[..], cpu()).unwrap();
        let got = ta.matmul(&tb).unwrap();
        assert_eq!(got.dtype(), L);
        // Reference: the f32 product of the same shapes gives the shape; the values come from
        // the definition, summed in i128.
        let shape_ref = ta
            .to_dtype(F)
            .unwrap()
            .matmul(&tb.to_dtype(F).unwrap())
            .unwrap();
        assert_eq!(got.shape(), shape_ref.shape(), "{sa:?} @ {sb:?}");
        let want = reference_matmul(&a, &sa, &b, &sb);
        assert_eq!(got.to_vec::<i64>().unwrap(), want, "{sa:?} @ {sb:?}");
    }
    // bmm of i64 (no broadcasting), against the same definition.
    let a: Vec<i64> = (0..24).map(|_| rng.int(-(1 << 31), 1 << 31)).collect();
    let b: Vec<i64> = (0..16).map(|_| rng.int(-(1 << 20), 1 << 20)).collect();
    let ta = DynTensor::from_vec(a.clone(), [2, 3, 4], cpu()).unwrap();
    let tb = DynTensor::from_vec(b.clone(), [2, 4, 2], cpu()).unwrap();
    assert_eq!(
        ta.bmm(&tb).unwrap().to_vec::<i64>().unwrap(),
        reference_matmul(&a, &[2, 3, 4], &b, &[2, 4, 2])
    );
    // F.linear of i64 on the CPU: x @ w^T + b, exactly (PyTorch's CPU addmm takes int64).
    let x: Vec<i64> = (0..12).map(|_| rng.int(-(1 << 31), 1 << 31)).collect();
    let w: Vec<i64> = (0..8).map(|_| rng.int(-(1 << 20), 1 << 20)).collect();
    let bias: Vec<i64> = (0..2).map(|_| rng.int(-1000, 1000)).collect();
    let tx = DynTensor::from_vec(x.clone(), [3, 4], cpu()).unwrap();
    let tw = DynTensor::from_vec(w.clone(), [2, 4], cpu()).unwrap();
    let tbias = DynTensor::from_vec(bias.clone(), [2], cpu()).unwrap();
    let wt: Vec<i64> = (0..8).map(|i| w[(i % 2) * 4 + i / 2]).collect();
    let product = reference_matmul(&x, &[3, 4], &wt, &[4, 2]);
    assert_eq!(
        tx.linear(&tw, None).unwrap().to_vec::<i64>().unwrap(),
        product
    );
    let with_bias: Vec<i64> = product
        .iter()
        .enumerate()
        .map(|(i, &v)| v + bias[i % 2])
        .collect();
    assert_eq!(
        tx.linear(&tw, Some(&tbias))
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        with_bias
    );
    let bools = DynTensor::full([2, 2], true, B, cpu()).unwrap();
    assert_eq!(
        err(bools.matmul(&bools)),
        "\"addmm_impl_cpu_\" not implemented for 'Bool'"
    );
    let longs = DynTensor::full([2, 2], 1i64, L, cpu()).unwrap();
    let floats = DynTensor::ones([2, 2], cpu()).unwrap();
    assert_eq!(
        err(longs.matmul(&floats)),
        "expected m1 and m2 to have the same dtype, but got: long int != float"
    );
}

/// `a @ b` by `torch.matmul`'s definition (vectors promoted, batch dims broadcast), in i128.
fn reference_matmul(a: &[i64], sa: &[usize], b: &[i64], sb: &[usize]) -> Vec<i64> {
    let (a_vec, b_vec) = (sa.len() == 1, sb.len() == 1);
    let sa: Vec<usize> = if a_vec { vec![1, sa[0]] } else { sa.to_vec() };
    let sb: Vec<usize> = if b_vec { vec![sb[0], 1] } else { sb.to_vec() };
    let (m, k, n) = (sa[sa.len() - 2], sa[sa.len() - 1], sb[sb.len() - 1]);
    let (ba, bb) = (&sa[..sa.len() - 2], &sb[..sb.len() - 2]);
    let rank = ba.len().max(bb.len());
    let pad = |s: &[usize]| -> Vec<usize> {
        let mut v = vec![1; rank - s.len()];
        v.extend_from_slice(s);
        v
    };
    let (pa, pb) = (pad(ba), pad(bb));
    let batch: Vec<usize> = pa.iter().zip(&pb).map(|(&x, &y)| x.max(y)).collect();
    let count: usize = batch.iter().product();
    let mut out = Vec::new();
    for flat in 0..count {
        // The batch index, then each operand's (broadcast) batch offset.
        let mut rem = flat;
        let mut index = vec![0; rank];
        for d in (0..rank).rev() {
            index[d] = rem % batch[d];
            rem /= batch[d];
        }
        let offset = |p: &[usize]| -> usize {
            let mut o = 0;
            for d in 0..rank {
                o = o * p[d] + if p[d] == 1 { 0 } else { index[d] };
            }
            o
        };
        let (oa, ob) = (offset(&pa) * m * k, offset(&pb) * k * n);
        for i in 0..m {
            for j in 0..n {
                let s: i128 = (0..k)
                    .map(|p| a[oa + i * k + p] as i128 * b[ob + p * n + j] as i128)
                    .sum();
                out.push(s as i64);
            }
        }
    }
    out
}

#[test]
fn what_pytorch_refuses_is_refused_with_its_text() {
    let l = DynTensor::from_vec(vec![2i64, 3], [2], cpu()).unwrap();
    let b = DynTensor::from_vec(vec![true, false], [2], cpu()).unwrap();
    let f = DynTensor::ones([2], cpu()).unwrap();
    let negative_power = "Integers to negative integer powers are not allowed.";
    assert_eq!(err(l.pow_scalar(-1i64)), negative_power);
    assert_eq!(err(l.pow_scalar(-2i64)), negative_power);
    assert_eq!(err(b.pow_scalar(-1i64)), negative_power);
    assert_eq!(err(b.pow(&b)), "\"pow\" not implemented for 'Bool'");
    assert_eq!(
        err(b.pow_scalar(true)),
        "\"pow\" not implemented for 'Bool'"
    );
    assert_eq!(
        err(b.neg()),
        "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead."
    );
    assert_eq!(err(b.relu()), "Boolean inputs not supported for relu");
    let two_bools = "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.";
    let one_bool = "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.";
    assert_eq!(err(b.sub(&b)), two_bools);
    assert_eq!(err(b.sub(&l)), one_bool);
    assert_eq!(err(f.sub(&b)), one_bool);
    assert_eq!(err(f.sub_scalar(true)), one_bool);
    assert_eq!(err(b.sub_scalar(1i64)), one_bool);
    assert_eq!(err(b.sub_scalar(true)), two_bools);
    // The clamp kernels take no bool (a bool tensor with integer bounds computes in i64).
    assert_eq!(
        err(b.clamp_min(true)),
        "\"clamp_min_scalar_cpu\" not implemented for 'Bool'"
    );
    assert_eq!(
        err(b.clamp_max(false)),
        "\"clamp_max_scalar_cpu\" not implemented for 'Bool'"
    );
    assert_eq!(
        err(b.clamp(false, true)),
        "\"clamp_scalar_cpu\" not implemented for 'Bool'"
    );
    let clamped = b.clamp(0i64, 1i64).unwrap();
    assert_eq!(
        (clamped.dtype(), clamped.to_vec::<i64>().unwrap()),
        (L, vec![1, 0])
    );
    // In place, true division's float result cannot go into an integer tensor.
    assert_eq!(
        err(l.clone().div_(&l)),
        "result type Float can't be cast to the desired output type Long"
    );
    assert_eq!(
        err(l.clone().div_scalar_(2i64)),
        "result type Float can't be cast to the desired output type Long"
    );
    let mut halves = DynTensor::ones([2], cpu()).unwrap();
    halves.div_(&l).unwrap();
    assert_eq!(halves.to_vec::<f32>().unwrap(), [0.5, 1.0 / 3.0]);
}

#[test]
fn the_typed_front_keeps_refusing_by_type() {
    // Its element type is fixed: an i64 tensor's `div` cannot return a float tensor.
    let l = Tensor::from_vec(vec![4i64, 9], [2], Cpu);
    assert_eq!(
        l.try_div(&l).unwrap_err().to_string(),
        "\"div\" not implemented for 'Long'"
    );
    assert_eq!(l.try_sum_all().unwrap().item(), 13);
}
