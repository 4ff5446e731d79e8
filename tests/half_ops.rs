//! Every CPU op family on `f16` and `bf16` against the `f32` result rounded to the dtype.
//!
//! For each op: fresh random `f32` values are rounded to the half type (the half inputs), and
//! the same half values widened back to `f32` (exactly) are the reference inputs. The op runs
//! on both; the `f32` result, rounded once to the half type, is what PyTorch's CPU kernels
//! promise for half tensors (math in `f32`, one rounding at the end, `f32` accumulation for
//! sums, means, softmax, matmul and losses). Shapes: a plain one, an odd one, an empty one, a
//! transposed view and a sliced (offset, non-contiguous) view.
//!
//! Tolerance, in units in the last place of the output dtype:
//! - 0 ulps for everything that devtype computes by running the `f32` kernel on exactly
//!   widened inputs (or the same `f32` function per element): the `f32` values are then
//!   bit-identical and their rounding is too. A kernel that rounded intermediate values (an
//!   f16 accumulator, say) would be off by many ulps on these sizes. `f16` matrix products
//!   run the f32 GEMM on widened inputs, so they are exact too.
//! - `bf16` matrix products: on CPUs whose `matmul` runs the AVX512-BF16 kernel, the `f32`
//!   sums run in another order (pairs of products per instruction, from zero per block of
//!   `k`), so the `f32` value differs from the reference's by up to `2 k eps32 sum|a b|`
//!   and now and then rounds to the neighbouring `bf16` value (measured on Zen 4: about one
//!   element in 100,000 of `randn` products with `k` of 13 to 70). They are checked against
//!   that bound instead ([`product_bound`]), which a wrong kernel (a lost or doubled term, a
//!   second rounding) exceeds by orders of magnitude.
//!
//! Separate tests compare with exact `f64` arithmetic, independently of devtype's `f32` path.

#[path = "common/ops.rs"]
mod ops;

use devtype::nn::Reduction;
use devtype::prelude::*;

type Op = fn(&Inputs) -> devtype::Result<DynTensor>;

/// The inputs of one case, all of one dtype (the half type, or `f32` holding its values).
struct Inputs {
    x: DynTensor,
    y: DynTensor,
    pos: DynTensor,
    m: DynTensor,
    w: DynTensor,
    bias: DynTensor,
    targets: DynTensor,
    idx: DynTensor,
    gidx: DynTensor,
    cond: DynTensor,
}

#[derive(Clone, Copy, Debug)]
enum View {
    Plain,
    Transposed,
    Sliced,
}

fn cpu() -> DynDevice {
    DynDevice::cpu()
}

/// A `[r, c]` operand seen through `view`, from base values `make(shape)` rounded to `half`:
/// `(half tensor, f32 tensor of the same values, same view)`.
fn operand(
    r: usize,
    c: usize,
    view: View,
    half: DType,
    make: &dyn Fn(&[usize]) -> DynTensor,
) -> (DynTensor, DynTensor) {
    let base_shape = match view {
        View::Plain => vec![r, c],
        View::Transposed => vec![c, r],
        View::Sliced => vec![r, 2 * c + 1],
    };
    let h = make(&base_shape).to_dtype(half).unwrap();
    let f = h.to_dtype(DType::F32).unwrap();
    let apply = |t: DynTensor| match view {
        View::Plain => t,
        View::Transposed => t.t().unwrap(),
        View::Sliced => t.narrow(1, 1, c).unwrap(),
    };
    (apply(h), apply(f))
}

/// Half inputs and their `f32` twins for a `[r, c]` case.
fn inputs(r: usize, c: usize, view: View, half: DType) -> (Inputs, Inputs) {
    let randn = |s: &[usize]| DynTensor::randn(s, cpu()).unwrap();
    let positive = |s: &[usize]| DynTensor::rand(s, cpu()).unwrap().add_scalar(0.5).unwrap();
    let (x, xf) = operand(r, c, view, half, &randn);
    let (y, yf) = operand(r, c, view, half, &randn);
    let (pos, posf) = operand(r, c, view, half, &positive);
    let (m, mf) = operand(c, 5, view, half, &randn);
    let (w, wf) = operand(5, c, view, half, &randn);
    let (bias, biasf) = operand(1, 5, View::Plain, half, &randn);
    let (bias, biasf) = (bias.reshape(&[5]).unwrap(), biasf.reshape(&[5]).unwrap());
    let c1 = c.max(1) as i64;
    let r1 = r.max(1) as i64;
    let targets =
        DynTensor::from_vec((0..r as i64).map(|i| (i * 7) % c1).collect(), [r], cpu()).unwrap();
    let idx = DynTensor::from_vec(vec![2 % c1, 0, c1 - 1, 1 % c1], [4], cpu()).unwrap();
    let gidx = DynTensor::from_vec(
        (0..(r * c) as i64).map(|i| (i * 5 + 3) % r1).collect(),
        [r, c],
        cpu(),
    )
    .unwrap();
    let cond = x.gt(&y).unwrap();
    let condf = xf.gt(&yf).unwrap();
    (
        Inputs {
            x,
            y,
            pos,
            m,
            w,
            bias,
            targets: targets.clone(),
            idx: idx.clone(),
            gidx: gidx.clone(),
            cond,
        },
        Inputs {
            x: xf,
            y: yf,
            pos: posf,
            m: mf,
            w: wf,
            bias: biasf,
            targets,
            idx,
            gidx,
            cond: condf,
        },
    )
}

/// Every op family, on the dynamic front (the typed front runs the same kernels; see
/// `typed_front_matches` below).
fn ops() -> Vec<(&'static str, Op)> {
    vec![
        // Element-wise, unary.
        ("neg", |i| i.x.neg()),
        ("relu", |i| i.x.relu()),
        ("abs", |i| i.x.abs()),
        ("square", |i| i.x.square()),
        ("exp", |i| i.x.exp()),
        ("log", |i| i.pos.log()),
        ("sqrt", |i| i.pos.sqrt()),
        ("tanh", |i| i.x.tanh()),
        ("sigmoid", |i| i.x.sigmoid()),
        ("reciprocal", |i| i.pos.reciprocal()),
        ("erf", |i| i.x.erf()),
        // Element-wise, binary (with broadcasting too).
        ("add", |i| i.x.add(&i.y)),
        ("sub", |i| i.x.sub(&i.y)),
        ("mul", |i| i.x.mul(&i.y)),
        ("div", |i| i.x.div(&i.pos)),
        ("maximum", |i| i.x.maximum(&i.y)),
        ("minimum", |i| i.x.minimum(&i.y)),
        ("pow", |i| i.pos.pow(&i.y)),
        ("add_relu", |i| i.x.add_relu(&i.y)),
        ("add_broadcast", |i| {
            // A [1, c] row against [r, c] (the first row: exact, no rounding of its own).
            let row = if i.y.shape()[0] == 0 {
                i.y.clone()
            } else {
                i.y.narrow(0, 0, 1)?
            };
            i.x.add(&row)
        }),
        // With scalars (kept at f32 precision, as PyTorch's opmath).
        ("add_scalar", |i| i.x.add_scalar(0.1)),
        ("sub_scalar", |i| i.x.sub_scalar(1.7)),
        ("mul_scalar", |i| i.x.mul_scalar(0.3)),
        ("div_scalar", |i| i.x.div_scalar(3.0)),
        ("pow_scalar", |i| i.pos.pow_scalar(1.5)),
        ("rsub", |i| i.x.neg()?.add_scalar(1.0)),
        ("clamp", |i| i.x.clamp(-0.2, 0.3)),
        // Comparisons (exact: a bool result).
        ("lt", |i| i.x.lt(&i.y)),
        ("eq", |i| i.x.eq(&i.x.relu()?)),
        // A scalar exact in both half types: a comparison rounds its scalar to the tensor's
        // type (`comparisons_round_the_scalar_to_the_half_type`), where the f32 reference
        // would not, so an input equal to the rounded 0.1 would differ (one run in 200 did).
        ("ge_scalar", |i| i.x.ge_scalar(0.125)),
        // Reductions: f32 accumulation.
        ("sum_all", |i| i.x.sum_all()),
        ("sum_dim0", |i| i.x.sum_dim(0)),
        ("sum_dims_keep", |i| i.x.sum_dims(&[1], true)),
        ("mean_all", |i| i.x.mean_all()),
        ("mean_dim1", |i| i.x.mean_dim(1)),
        ("max_dim1", |i| i.x.max(1).map(|r| r.values)),
        ("min_keepdim", |i| i.x.min_keepdim(1).map(|r| r.values)),
        ("argmax", |i| i.x.argmax(1)),
        ("argmin", |i| i.x.argmin(1)),
        // Rows.
        ("softmax", |i| i.x.softmax(1)),
        ("log_softmax", |i| i.x.log_softmax(1)),
        ("softmax_dim0", |i| i.x.softmax(0)),
        // Products.
        ("matmul", |i| i.x.matmul(&i.m)),
        ("linear", |i| i.x.linear(&i.w, Some(&i.bias))),
        ("linear_no_bias", |i| i.x.linear(&i.w, None)),
        ("bmm", |i| {
            let a = i.x.unsqueeze(0)?;
            let b = i.m.unsqueeze(0)?;
            a.bmm(&b)
        }),
        // Losses.
        ("cross_entropy", |i| i.x.cross_entropy(&i.targets)),
        ("cross_entropy_sum", |i| {
            i.x.cross_entropy_with(&i.targets, None, Reduction::Sum, 0)
        }),
        ("cross_entropy_weight", |i| {
            let wt = i.bias.narrow(0, 0, i.x.shape()[1].min(5))?.abs()?;
            if wt.shape()[0] != i.x.shape()[1] {
                return i.x.cross_entropy(&i.targets);
            }
            i.x.cross_entropy_with(&i.targets, Some(&wt), Reduction::Mean, -100)
        }),
        // Indexing and moving.
        ("gather", |i| i.x.gather(0, &i.gidx)),
        ("index_select", |i| {
            if i.x.shape()[1] == 0 {
                return i.x.contiguous();
            }
            i.x.index_select(1, &i.idx)
        }),
        ("cat", |i| DynTensor::cat(&[&i.x, &i.y], 1)),
        ("where", |i| i.cond.where_cond(&i.x, &i.y)),
        ("contiguous", |i| i.x.t()?.contiguous()),
        ("reshape", |i| i.x.reshape(&[-1])),
        // Gradients: relu's mask, linear's bias sum, cross-entropy's backward.
        ("grad_relu_linear", |i| {
            let x = DynTensor::parameter(i.x.detach())?;
            let y = x.linear(&i.w, Some(&i.bias))?.relu()?.sum_all()?;
            y.backward()?;
            Ok(x.grad().expect("a gradient"))
        }),
        ("grad_cross_entropy", |i| {
            let x = DynTensor::parameter(i.x.detach())?;
            x.cross_entropy_with(&i.targets, None, Reduction::Sum, 0)?
                .backward()?;
            Ok(x.grad().expect("a gradient"))
        }),
    ]
}

/// The distance in units in the last place of `dtype` between two values of it.
fn ulps(dtype: DType, a: f64, b: f64) -> u32 {
    let bits = |v: f64| -> u16 {
        match dtype {
            DType::F16 => f16::from_f64(v).to_bits(),
            _ => bf16::from_f64(v).to_bits(),
        }
    };
    // Sign-magnitude to a monotonic integer line (+0 and -0 meet at 0x8000).
    let ordered = |b: u16| -> i32 {
        if b & 0x8000 != 0 {
            0x8000 - (b & 0x7fff) as i32
        } else {
            0x8000 + b as i32
        }
    };
    (ordered(bits(a)) - ordered(bits(b))).unsigned_abs()
}

fn as_f64(t: &DynTensor) -> Vec<f64> {
    t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap()
}

/// The ops of [`ops`] that are matrix products (see the module's note on `bf16` products).
const PRODUCTS: [&str; 5] = [
    "matmul",
    "linear",
    "linear_no_bias",
    "bmm",
    "grad_relu_linear",
];

/// How far a `bf16` product may be from the `f32` reference `want`, both summing `k` terms
/// whose magnitudes add up to at most `sum_abs`: each `f32` sum, in its own order, is within
/// `k eps32 sum_abs` of the exact one, and the `bf16` result is then rounded once (half a
/// `bf16` ulp, at most `2^-8` of the value); subnormal sums flushed to zero by the kernel
/// are within `2^-126`.
fn product_bound(k: usize, sum_abs: f64, want: f64) -> f64 {
    let drift = 2.0 * k as f64 * f64::from(f32::EPSILON) * sum_abs;
    drift + (want.abs() + drift) * 2f64.powi(-8) + 2f64.powi(-126)
}

/// Runs every op on `[r, c]` inputs seen through `view`, for both half types.
fn check_shape(r: usize, c: usize, view: View) {
    for half in [DType::F16, DType::BF16] {
        let (hi, fi) = inputs(r, c, view, half);
        for (name, op) in ops() {
            let what = format!("{name} {half:?} [{r}, {c}] {view:?}");
            let (got, reference) = match (op(&hi), op(&fi)) {
                (Ok(g), Ok(r)) => (g, r),
                // Refused on both (a max over an empty dim): the same error, as PyTorch's.
                (Err(g), Err(r)) => {
                    assert_eq!(g.to_string(), r.to_string(), "{what}");
                    continue;
                }
                (g, r) => panic!("{what}: {:?} vs f32 {:?}", g.err(), r.err()),
            };
            assert_eq!(got.shape(), reference.shape(), "{what}");
            let out_dtype = reference.dtype();
            if out_dtype == DType::F32 {
                assert_eq!(got.dtype(), half, "{what}: result dtype");
            } else {
                // bool and int64 results (comparisons, arg-reductions) are exact.
                assert_eq!(got.dtype(), out_dtype, "{what}");
            }
            if half == DType::BF16 && PRODUCTS.contains(&name) {
                // Every product here sums at most `c + 6` terms (the bias and, in the
                // gradient, relu's mask of ones included), each at most `largest^2`.
                let largest = [&fi.x, &fi.m, &fi.w, &fi.bias]
                    .iter()
                    .flat_map(|t| as_f64(t))
                    .fold(1f64, |m, v| m.max(v.abs()));
                let sum_abs = (c + 6) as f64 * largest * largest;
                for (k, (a, b)) in as_f64(&got).iter().zip(as_f64(&reference)).enumerate() {
                    let bound = product_bound(c + 6, sum_abs, b);
                    assert!(
                        (a - b).abs() <= bound,
                        "{what}[{k}]: {a} vs f32 {b} (bound {bound})"
                    );
                }
                continue;
            }
            let rounded = if out_dtype == DType::F32 {
                reference.to_dtype(half).unwrap()
            } else {
                reference
            };
            for (k, (a, b)) in as_f64(&got).iter().zip(as_f64(&rounded)).enumerate() {
                let ok = if out_dtype == DType::F32 {
                    (a.is_nan() && b.is_nan()) || ulps(half, *a, b) == 0
                } else {
                    *a == b
                };
                assert!(ok, "{what}[{k}]: {a} vs f32 rounded {b}");
            }
        }
    }
}

#[test]
fn every_op_matches_f32_rounded_on_plain_odd_and_empty_shapes() {
    devtype::manual_seed(11);
    check_shape(4, 6, View::Plain);
    check_shape(7, 13, View::Plain);
    check_shape(0, 5, View::Plain);
    check_shape(3, 0, View::Plain);
    check_shape(1, 1, View::Plain);
}

#[test]
fn every_op_matches_f32_rounded_on_strided_views() {
    devtype::manual_seed(12);
    check_shape(5, 7, View::Transposed);
    check_shape(6, 9, View::Sliced);
}

#[test]
fn large_products_and_reductions_match_f32_rounded() {
    devtype::manual_seed(13);
    // 70 x 70 x 5 = 24,500 multiply-adds: under the small-product cut-off for the f32
    // matmul, but reductions over 4900 elements; the products below go to the f32 GEMM
    // (f16, widened) and to the bf16 GEMM (or the f32 one, widened, where it does not run).
    check_shape(70, 70, View::Plain);
    for half in [DType::F16, DType::BF16] {
        for view in [View::Plain, View::Transposed] {
            let randn = |s: &[usize]| DynTensor::randn(s, cpu()).unwrap();
            let (a, af) = operand(48, 40, view, half, &randn);
            let (b, bf) = operand(40, 36, view, half, &randn);
            let got = as_f64(&a.matmul(&b).unwrap());
            let exact = af.matmul(&bf).unwrap();
            let rounded = as_f64(&exact.to_dtype(half).unwrap());
            let (exact, sums) = (
                as_f64(&exact),
                as_f64(&af.abs().unwrap().matmul(&bf.abs().unwrap()).unwrap()),
            );
            for k in 0..got.len() {
                let (x, y) = (got[k], rounded[k]);
                if half == DType::F16 {
                    assert_eq!(
                        ulps(half, x, y),
                        0,
                        "matmul {half:?} {view:?}[{k}]: {x} vs {y}"
                    );
                } else {
                    let bound = product_bound(40, sums[k], exact[k]);
                    assert!(
                        (x - exact[k]).abs() <= bound,
                        "matmul {half:?} {view:?}[{k}]: {x} vs f32 {} (bound {bound})",
                        exact[k]
                    );
                }
            }
        }
    }
}

/// A sum that an f16 accumulator gets wrong: 4096 ones (an f16 running sum sticks at 2048,
/// where 2048 + 1 rounds back to 2048) and 0.001 added 3000 times.
#[test]
fn sums_accumulate_in_f32() {
    for half in [DType::F16, DType::BF16] {
        let ones = DynTensor::full([4096], 1.0, half, cpu()).unwrap();
        assert_eq!(as_f64(&ones.sum_all().unwrap()), vec![4096.0], "{half:?}");
        assert_eq!(as_f64(&ones.mean_all().unwrap()), vec![1.0], "{half:?}");
        let small = DynTensor::full([3000], 0.001, half, cpu()).unwrap();
        let one = as_f64(&small)[0];
        let exact = one * 3000.0;
        let got = as_f64(&small.sum_all().unwrap())[0];
        assert!(
            ulps(half, got, exact) <= 1,
            "{half:?}: sum {got}, exact {exact}"
        );
        // A dot product of 4096 ones: f32 accumulation gives 4096 exactly.
        let row = DynTensor::full([1, 4096], 1.0, half, cpu()).unwrap();
        let col = DynTensor::full([4096, 1], 1.0, half, cpu()).unwrap();
        assert_eq!(as_f64(&row.matmul(&col).unwrap()), vec![4096.0], "{half:?}");
        // log_softmax over 4096 equal logits: -ln(4096) = -8.317766...
        let lsm = DynTensor::zeros([1, 4096], cpu())
            .unwrap()
            .to_dtype(half)
            .unwrap()
            .log_softmax(1)
            .unwrap();
        let v = as_f64(&lsm)[0];
        assert!(ulps(half, v, -(4096f64).ln()) <= 1, "{half:?}: {v}");
    }
}

/// f16 products against exact f64 arithmetic: within half an ulp of the f16 result (its
/// rounding) plus the f32 accumulation's bound, k * 2^-24 * sum |a_i b_i|.
#[test]
fn f16_matmul_is_close_to_the_exact_product() {
    devtype::manual_seed(14);
    let (m, k, n) = (33, 64, 31);
    let a = DynTensor::randn([m, k], cpu())
        .unwrap()
        .to_dtype(DType::F16)
        .unwrap();
    let b = DynTensor::randn([k, n], cpu())
        .unwrap()
        .to_dtype(DType::F16)
        .unwrap();
    let (av, bv) = (as_f64(&a), as_f64(&b));
    let c = as_f64(&a.matmul(&b).unwrap());
    for i in 0..m {
        for j in 0..n {
            let (mut exact, mut mag) = (0.0f64, 0.0f64);
            for p in 0..k {
                exact += av[i * k + p] * bv[p * n + j];
                mag += (av[i * k + p] * bv[p * n + j]).abs();
            }
            let got = c[i * n + j];
            let half_ulp = f64::powi(2.0, (got.abs().max(6.1e-5)).log2().floor() as i32 - 11);
            let bound = half_ulp + k as f64 * f64::powi(2.0, -24) * mag;
            assert!(
                (got - exact).abs() <= bound,
                "[{i}, {j}]: {got} vs exact {exact} (bound {bound})"
            );
        }
    }
}

/// Element-wise results equal the exact result rounded once to the half type: devtype rounds
/// the correctly rounded f32 result, and rounding twice (24 bits, then 11 or 8) is innocuous
/// for + - * when 24 >= 2p + 2 (Figueroa, 1995), which holds for f16 (p = 11) and bf16 (p = 8).
#[test]
fn elementwise_results_are_rounded_once() {
    devtype::manual_seed(15);
    for half in [DType::F16, DType::BF16] {
        let a = DynTensor::randn([257], cpu())
            .unwrap()
            .to_dtype(half)
            .unwrap();
        let b = DynTensor::randn([257], cpu())
            .unwrap()
            .to_dtype(half)
            .unwrap();
        let (av, bv) = (as_f64(&a), as_f64(&b));
        for (name, got, f) in [
            (
                "add",
                a.add(&b).unwrap(),
                (|x, y| x + y) as fn(f64, f64) -> f64,
            ),
            ("mul", a.mul(&b).unwrap(), |x, y| x * y),
            ("sub", a.sub(&b).unwrap(), |x, y| x - y),
        ] {
            assert_eq!(got.dtype(), half);
            for (k, g) in as_f64(&got).into_iter().enumerate() {
                let exact = f(av[k], bv[k]);
                // Nearest: no representable value of the type is closer to the exact result.
                let rounded = match half {
                    DType::F16 => f16::from_f64(exact).to_f64(),
                    _ => bf16::from_f64(exact).to_f64(),
                };
                assert_eq!(g, rounded, "{name} {half:?}[{k}]");
            }
        }
    }
}

#[test]
fn typed_front_matches() {
    devtype::manual_seed(16);
    let x32 = Tensor::<Cpu>::randn([5, 7], Cpu);
    let h: Tensor<Cpu, f16> = x32.to_dtype();
    let b: Tensor<Cpu, bf16> = x32.to_dtype();
    let dh = h.to_dyn();
    assert_eq!(dh.dtype(), DType::F16);
    assert_eq!(b.to_dyn().dtype(), DType::BF16);
    let typed = h.softmax(1).matmul(h.t()).sum_all();
    let dynamic = dh
        .softmax(1)
        .unwrap()
        .matmul(&dh.t().unwrap())
        .unwrap()
        .sum_all()
        .unwrap();
    assert_eq!(typed.to_vec(), dynamic.to_vec::<f16>().unwrap());
    let typed = (&b * &b).exp().mean_all();
    let bd = b.to_dyn();
    let dynamic = bd.mul(&bd).unwrap().exp().unwrap().mean_all().unwrap();
    assert_eq!(typed.to_vec(), dynamic.to_vec::<bf16>().unwrap());
    // Creation and conversions both ways.
    let z = Tensor::<Cpu, f16>::zeros([2, 3], Cpu);
    assert_eq!(z.to_vec(), vec![f16::ZERO; 6]);
    let o = Tensor::<Cpu, bf16>::ones([2], Cpu);
    assert_eq!(o.to_dtype::<f64>().to_vec(), vec![1.0, 1.0]);
    let f = Tensor::<Cpu, f16>::full([2], f16::from_f32(0.1), Cpu);
    assert_eq!(
        f.to_dtype::<f32>().to_vec(),
        vec![f16::from_f32(0.1).to_f32(); 2]
    );
    let r = Tensor::<Cpu, bf16>::zeros([1000], Cpu)
        .randn_like()
        .to_dtype::<f64>()
        .to_vec();
    let mean = r.iter().sum::<f64>() / 1000.0;
    assert!(mean.abs() < 0.15, "randn mean {mean}");
    assert!(r.iter().any(|&v| v != r[0]));
    let u = DynTensor::rand([4096], DynDevice::cpu())
        .unwrap()
        .to_dtype(DType::F16)
        .unwrap();
    assert!(as_f64(&u).iter().all(|&v| (0.0..=1.0).contains(&v)));
    // to_dtype: f16 -> bf16 -> f32 and i64 -> f16 round as PyTorch (nearest, ties to even).
    let l = DynTensor::from_vec(vec![2049i64, 2051, -65519, 70000], [4], DynDevice::cpu()).unwrap();
    assert_eq!(
        as_f64(&l.to_dtype(DType::F16).unwrap()),
        vec![2048.0, 2052.0, -65504.0, f64::INFINITY]
    );
}

/// f32 -> bf16 and f64 -> f16 conversions round to nearest, ties to even, seeing every bit of
/// the f32 value (the `half` crate's `from_f64` drops the low 32 bits of an f64 first, which
/// turns some above-the-tie f32 values into ties and rounds them down).
#[test]
fn conversions_round_to_nearest() {
    // 1 + 2^-8 + 2^-23: just above the bf16 tie between 1 and 1 + 2^-7.
    let v = 1.0f32 + f32::powi(2.0, -8) + f32::powi(2.0, -23);
    let t = DynTensor::from_vec(vec![v, -v], [2], DynDevice::cpu()).unwrap();
    let b = as_f64(&t.to_dtype(DType::BF16).unwrap());
    let up = 1.0 + f64::powi(2.0, -7);
    assert_eq!(b, vec![up, -up]);
    // The same through f64 (f32 -> f64 is exact): PyTorch converts a double through float.
    let t64 = t.to_dtype(DType::F64).unwrap();
    assert_eq!(as_f64(&t64.to_dtype(DType::BF16).unwrap()), vec![up, -up]);
    // f16: 1 + 2^-11 + 2^-23 is above the tie between 1 and 1 + 2^-10.
    let v = 1.0f32 + f32::powi(2.0, -11) + f32::powi(2.0, -23);
    let t = DynTensor::from_vec(vec![v], [1], DynDevice::cpu()).unwrap();
    let up = 1.0 + f64::powi(2.0, -10);
    assert_eq!(as_f64(&t.to_dtype(DType::F16).unwrap()), vec![up]);
    let t64 = t.to_dtype(DType::F64).unwrap();
    assert_eq!(as_f64(&t64.to_dtype(DType::F16).unwrap()), vec![up]);
    // An exact tie goes to even: 1 + 2^-8 -> 1 in bf16.
    let t = DynTensor::from_vec(vec![1.0f32 + f32::powi(2.0, -8)], [1], DynDevice::cpu()).unwrap();
    assert_eq!(as_f64(&t.to_dtype(DType::BF16).unwrap()), vec![1.0]);
}

#[test]
fn prints_as_pytorch() {
    let h = Tensor::from_vec(vec![f16::from_f32(1.0), f16::from_f32(2.0)], [2], Cpu);
    assert_eq!(h.to_string(), "tensor([1., 2.], dtype=torch.float16)");
    let b = Tensor::from_vec(vec![bf16::from_f32(1.0), bf16::from_f32(2.0)], [2], Cpu);
    assert_eq!(b.to_string(), "tensor([1., 2.], dtype=torch.bfloat16)");
    // torch.tensor([0.1, -1.25], dtype=torch.float16) prints the stored values (0.1 is
    // 0.0999755859375 in f16) at PyTorch's precision, 4 digits.
    let h = DynTensor::from_vec(vec![0.1f32, -1.25], [2], DynDevice::cpu())
        .unwrap()
        .to_dtype(DType::F16)
        .unwrap();
    assert_eq!(
        h.to_string(),
        "tensor([ 0.1000, -1.2500], dtype=torch.float16)"
    );
    // torch.tensor(2.3, dtype=torch.bfloat16) -> tensor(2.2969, dtype=torch.bfloat16)
    let b = DynTensor::from_vec(vec![2.3f32], [], DynDevice::cpu())
        .unwrap()
        .to_dtype(DType::BF16)
        .unwrap();
    assert_eq!(b.to_string(), "tensor(2.2969, dtype=torch.bfloat16)");
    // torch.tensor([1e-5, 1.], dtype=torch.float16) -> scientific, as for float32.
    let h = DynTensor::from_vec(vec![1e-5f32, 1.0], [2], DynDevice::cpu())
        .unwrap()
        .to_dtype(DType::F16)
        .unwrap();
    assert_eq!(
        h.to_string(),
        "tensor([1.0014e-05, 1.0000e+00], dtype=torch.float16)"
    );
    let e = DynTensor::zeros([0], DynDevice::cpu())
        .unwrap()
        .to_dtype(DType::BF16)
        .unwrap();
    assert_eq!(e.to_string(), "tensor([], dtype=torch.bfloat16)");
    assert_eq!(DType::F16.scalar_type_name(), "Half");
    assert_eq!(DType::BF16.scalar_type_name(), "BFloat16");
    assert_eq!(DType::F16.type_meta_name(), "c10::Half");
    assert_eq!(DType::BF16.type_meta_name(), "c10::BFloat16");
}

/// `x >= 0.1` on a half tensor compares with 0.1 rounded to the tensor's type, as PyTorch
/// does (the comparison's common type is the tensor's: the scalar does not promote), unlike
/// the scalar arithmetic above, which keeps the scalar at f32 (opmath). PyTorch 2.15, for
/// `x = torch.tensor([0.1], dtype=dt)` (0.0999755859375 in f16, 0.10009765625 in bf16):
/// `ge, gt, le, lt, eq, ne` against `0.1` are `True, False, True, False, True, False`.
#[test]
fn comparisons_round_the_scalar_to_the_half_type() {
    for (half, x) in [(DType::F16, 0.0999755859375), (DType::BF16, 0.10009765625)] {
        let t = DynTensor::full([1], x, half, cpu()).unwrap();
        let got: Vec<bool> = [
            t.ge_scalar(0.1),
            t.gt_scalar(0.1),
            t.le_scalar(0.1),
            t.lt_scalar(0.1),
            t.eq_scalar(0.1),
            t.ne_scalar(0.1),
        ]
        .into_iter()
        .map(|r| r.unwrap().to_vec::<bool>().unwrap()[0])
        .collect();
        assert_eq!(got, [true, false, true, false, true, false], "{half:?}");
        // The same value in f32 compares with 0.1 in f32 (0.1f32 lies above the f16 value).
        let wide = t.to_dtype(DType::F32).unwrap();
        let above = half == DType::F16;
        assert_eq!(
            wide.lt_scalar(0.1).unwrap().to_vec::<bool>().unwrap(),
            [above]
        );
    }
}

#[test]
fn matmul_of_mixed_half_types_names_them_as_pytorch() {
    let a = DynTensor::ones([2, 2], DynDevice::cpu()).unwrap();
    let h = a.to_dtype(DType::F16).unwrap();
    let b = a.to_dtype(DType::BF16).unwrap();
    assert_eq!(
        a.matmul(&h).unwrap_err().to_string(),
        "expected m1 and m2 to have the same dtype, but got: float != c10::Half"
    );
    assert_eq!(
        h.matmul(&b).unwrap_err().to_string(),
        "expected m1 and m2 to have the same dtype, but got: c10::Half != c10::BFloat16"
    );
}

#[test]
fn half_tensors_go_to_a_gpu_or_fail_cleanly() {
    // With a GPU the 16-bit floats upload and fill there (tests/cuda_half.rs checks the
    // values); without one it is the driver's error, never a panic.
    let h = DynTensor::ones([2], DynDevice::cpu())
        .unwrap()
        .to_dtype(DType::F16)
        .unwrap();
    match h.to(DynDevice::cuda(0)) {
        Ok(g) => assert_eq!(g.dtype(), DType::F16),
        Err(e) => {
            let e = e.to_string();
            assert!(e.contains("driver") || e.contains("CUDA"), "{e}");
        }
    }
    match DynTensor::full([2], 1.0, DType::BF16, DynDevice::cuda(0)) {
        Ok(g) => assert_eq!(g.dtype(), DType::BF16),
        Err(e) => {
            let e = e.to_string();
            assert!(e.contains("driver") || e.contains("CUDA"), "{e}");
        }
    }
}

#[test]
fn safetensors_round_trip_keeps_half_values_bit_for_bit() {
    use devtype::nn::{Linear, Module};
    let path =
        std::env::temp_dir().join(format!("devtype-half-{}.safetensors", std::process::id()));
    for _ in 0..1 {
        let model = Linear::<Cpu, f16>::with_element(3, 2, Cpu);
        model.save(&path).unwrap();
        let mut copy = Linear::<Cpu, f16>::with_element(3, 2, Cpu);
        copy.load(&path).unwrap();
        assert_eq!(copy.weight().to_vec(), model.weight().to_vec());
        assert_eq!(
            copy.bias().unwrap().to_vec(),
            model.bias().unwrap().to_vec()
        );
        // The file says F16: a bf16 model converts it, as PyTorch's load_state_dict does
        // (rounding each value once to the nearest bf16).
        let mut other = Linear::<Cpu, bf16>::with_element(3, 2, Cpu);
        other.load(&path).unwrap();
        let want: Vec<bf16> = (model.weight().to_vec().iter())
            .map(|v| bf16::from_f64(v.to_f64()))
            .collect();
        assert_eq!(other.weight().to_vec(), want);
        let model = Linear::<Cpu, bf16>::with_element(4, 3, Cpu);
        model.save(&path).unwrap();
        other = Linear::<Cpu, bf16>::with_element(4, 3, Cpu);
        other.load(&path).unwrap();
        assert_eq!(other.weight().to_vec(), model.weight().to_vec());
        let _ = model.parameters();
    }
    std::fs::remove_file(&path).ok();
}

// ---------------------------------------------------------------------------------------------
// Block conversion (the element-wise families widen blocks of 512 elements to f32, run the f32
// op and narrow the block back): every length around a block edge, the parallel split, offsets
// and strides, in place and not, and the conversions themselves on every class of value. The
// reference rounds the f32 result per element with the `half` crate itself.

const BLOCK: usize = 512;

/// Lengths around block edges and the parallel split (chunks of 2^15 from 2^16 elements).
fn block_lengths() -> Vec<usize> {
    if cfg!(miri) {
        vec![0, 1, BLOCK - 1, BLOCK, BLOCK + 1, 2 * BLOCK + 3]
    } else {
        vec![
            0,
            1,
            7,
            BLOCK - 1,
            BLOCK,
            BLOCK + 1,
            3 * BLOCK + 5,
            (1 << 16) - 1,
            (1 << 16) + 1,
            100_003,
        ]
    }
}

/// `n` values of `dtype` (as f32 bit-exact twins): random normals, with zeros of both signs,
/// infinities, a NaN, subnormals and values near the top of the range mixed in.
fn half_values(n: usize, dtype: DType, seed: u64) -> Vec<f32> {
    devtype::manual_seed(seed);
    let mut v = DynTensor::randn([n], cpu())
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    let specials = [
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        6.0e-8,
        -3.0e-6,
        1.0e-39,
        60000.0,
        -65504.0,
        3.0e38,
        1.0,
    ];
    for (k, x) in v.iter_mut().enumerate() {
        if k % 97 == 5 {
            *x = specials[(k / 97) % specials.len()];
        } else if k % 89 == 3 {
            *x *= 3.0e4;
        }
    }
    v.into_iter()
        .map(|x| match dtype {
            DType::F16 => f16::from_f32(x).to_f32(),
            _ => bf16::from_f32(x).to_f32(),
        })
        .collect()
}

fn half_tensor(v: &[f32], dtype: DType) -> DynTensor {
    match dtype {
        DType::F16 => DynTensor::from_vec(
            v.iter().map(|&x| f16::from_f32(x)).collect(),
            [v.len()],
            cpu(),
        ),
        _ => DynTensor::from_vec(
            v.iter().map(|&x| bf16::from_f32(x)).collect(),
            [v.len()],
            cpu(),
        ),
    }
    .unwrap()
}

/// The bits of a half tensor, as u16.
fn half_bits(t: &DynTensor) -> Vec<u16> {
    match t.dtype() {
        DType::F16 => t
            .to_vec::<f16>()
            .unwrap()
            .iter()
            .map(|x| x.to_bits())
            .collect(),
        DType::BF16 => t
            .to_vec::<bf16>()
            .unwrap()
            .iter()
            .map(|x| x.to_bits())
            .collect(),
        d => panic!("not a half type: {d:?}"),
    }
}

/// The f32 result rounded per element by `half`, as bits.
fn rounded_bits(t: &DynTensor, dtype: DType) -> Vec<u16> {
    t.to_vec::<f32>()
        .unwrap()
        .iter()
        .map(|&x| match dtype {
            DType::F16 => f16::from_f32(x).to_bits(),
            _ => bf16::from_f32(x).to_bits(),
        })
        .collect()
}

/// Equal bits (any NaN matching any NaN), or within `tolerance` ulps.
fn same_bits(what: &str, got: &[u16], want: &[u16], dtype: DType, tolerance: u32) {
    assert_eq!(got.len(), want.len(), "{what}");
    let value = |b: u16| match dtype {
        DType::F16 => f16::from_bits(b).to_f64(),
        _ => bf16::from_bits(b).to_f64(),
    };
    for (k, (&g, &w)) in got.iter().zip(want).enumerate() {
        let (a, b) = (value(g), value(w));
        // NaN against NaN is a match (x - x on infinities: the f32 op picks the sign).
        let close = tolerance > 0 && ulps(dtype, a, b) <= tolerance;
        assert!(
            g == w || (a.is_nan() && b.is_nan()) || close,
            "{what}[{k}]: {g:#06x} vs {w:#06x}"
        );
    }
}

type Elementwise = fn(&DynTensor, &DynTensor) -> devtype::Result<DynTensor>;

fn elementwise_ops() -> Vec<(&'static str, Elementwise)> {
    vec![
        ("add", |x, y| x.add(y)),
        ("sub", |x, y| x.sub(y)),
        ("mul", |x, y| x.mul(y)),
        ("div", |x, y| x.div(y)),
        ("pow", |x, y| x.abs()?.pow(y)),
        ("maximum", |x, y| x.maximum(y)),
        ("minimum", |x, y| x.minimum(y)),
        ("add_relu", |x, y| x.add_relu(y)),
        // In place: a fresh (owned, unshared) left operand lends its buffer.
        ("add in place", |x, y| x.mul_scalar(1.0)?.add(y)),
        ("add_relu in place", |x, y| x.mul_scalar(1.0)?.add_relu(y)),
        ("add_scalar", |x, _| x.add_scalar(0.1)),
        ("mul_scalar", |x, _| x.mul_scalar(2.5)),
        ("div_scalar", |x, _| x.div_scalar(3.0)),
        ("sub_scalar in place", |x, _| {
            x.mul_scalar(1.0)?.sub_scalar(1.7)
        }),
        ("pow_scalar", |x, _| x.abs()?.pow_scalar(1.5)),
        ("clamp", |x, _| x.clamp(-0.2, 0.3)),
        ("clamp_min", |x, _| x.clamp_min(-0.2)),
        ("clamp_max", |x, _| x.clamp_max(0.3)),
        ("neg", |x, _| x.neg()),
        ("relu", |x, _| x.relu()),
        ("abs", |x, _| x.abs()),
        ("square", |x, _| x.square()),
        ("exp", |x, _| x.exp()),
        ("log", |x, _| x.abs()?.log()),
        ("sqrt", |x, _| x.abs()?.sqrt()),
        ("tanh", |x, _| x.tanh()),
        ("sigmoid", |x, _| x.sigmoid()),
        ("reciprocal", |x, _| x.reciprocal()),
        ("erf", |x, _| x.erf()),
        ("exp in place", |x, _| x.mul_scalar(1.0)?.exp()),
    ]
}

/// The element-wise list is the op table's element-wise ops (those of the `binary` and `unary`
/// families with a result of the input's type; a case counts for the op its name starts
/// with), so a new element-wise op joins the block tests or fails here by name.
#[test]
fn elementwise_ops_are_the_tables_elementwise_family() {
    let listed: std::collections::BTreeSet<&str> = elementwise_ops()
        .iter()
        .map(|(name, _)| name.split(' ').next().unwrap())
        .collect();
    let family: std::collections::BTreeSet<&str> = devtype::op_table()
        .filter(|op| matches!(op.family(), "binary" | "unary") && op.result == "Same")
        .map(|op| op.name)
        .collect();
    assert_eq!(
        listed, family,
        "elementwise_ops (left) against the table's element-wise ops (right)"
    );
}

/// Runs every element-wise op on `x`, `y` (half) and on their f32 twins seen through the same
/// `view`, and checks the bits.
fn check_blocks(n: usize, dtype: DType, view: &dyn Fn(DynTensor) -> DynTensor, what: &str) {
    let (xv, yv) = (
        half_values(n, dtype, 21 + n as u64),
        half_values(n, dtype, 22 + n as u64),
    );
    let (x, y) = (view(half_tensor(&xv, dtype)), view(half_tensor(&yv, dtype)));
    let xf = view(DynTensor::from_vec(xv, [n], cpu()).unwrap());
    let yf = view(DynTensor::from_vec(yv, [n], cpu()).unwrap());
    for (name, op) in elementwise_ops() {
        let got = op(&x, &y).unwrap();
        assert_eq!(got.dtype(), dtype, "{name}");
        let want = op(&xf, &yf).unwrap();
        // Miri adds a few ulps of random error to transcendental functions, separately on
        // each call, so the f32 twin's result can round to a neighbour there.
        let transcendental = [
            "pow",
            "pow_scalar",
            "exp",
            "log",
            "tanh",
            "sigmoid",
            "erf",
            "exp in place",
        ];
        let tolerance = u32::from(cfg!(miri) && transcendental.contains(&name));
        same_bits(
            &format!("{name} {dtype:?} n={n} {what}"),
            &half_bits(&got),
            &rounded_bits(&want, dtype),
            dtype,
            tolerance,
        );
    }
}

#[test]
fn elementwise_blocks_match_f32_rounded_at_every_edge() {
    for dtype in [DType::F16, DType::BF16] {
        for n in block_lengths() {
            check_blocks(n, dtype, &|t| t, "plain");
        }
    }
}

#[test]
fn elementwise_blocks_on_offset_and_strided_views() {
    for dtype in [DType::F16, DType::BF16] {
        for n in block_lengths() {
            // An offset view, contiguous: the block path from the middle of a storage.
            let m = n.saturating_sub(5).min(n.saturating_sub(3));
            check_blocks(
                n,
                dtype,
                &|t: DynTensor| t.narrow(0, 3.min(n), m).unwrap(),
                "offset",
            );
            // Every other element: the per-element path.
            if n >= 2 {
                check_blocks(
                    n,
                    dtype,
                    &|t: DynTensor| {
                        let k = (n / 2) as isize;
                        t.narrow(0, 0, n - n % 2)
                            .and_then(|t| t.reshape(&[k, 2]))
                            .and_then(|t| t.narrow(1, 0, 1))
                            .unwrap()
                    },
                    "strided",
                );
            }
        }
    }
}

/// f32 values of every class: zeros, subnormals (of f32 and of f16), normals, the ties of
/// both types (odd and even kept parts, just above and below), overflow to infinity,
/// infinities, and NaNs with payloads (quiet and signaling), plus a sweep of bit patterns.
fn f32_edge_values() -> Vec<f32> {
    let mut bits: Vec<u32> = vec![
        0x0000_0000,
        0x8000_0000,
        0x0000_0001,
        0x8000_0001,
        0x007f_ffff,
        0x0000_8000,
        0x0000_8001,
        0x0001_8000,
        0x0080_0000,
        0x3f80_0000,
        0xbf80_0000,
        0x3f80_8000,
        0x3f81_8000,
        0x3f80_7fff,
        0x3f80_8001,
        0x3f81_7fff,
        0x3f80_1000,
        0x3f80_3000,
        0x3f80_0fff,
        0x3f80_1001,
        0x7f7f_ffff,
        0xff7f_ffff,
        0x7f7f_8000,
        0x7f7f_7fff,
        0x7f80_0000,
        0xff80_0000,
        0x7fc0_0000,
        0xffc0_0000,
        0x7f80_0001,
        0xff80_0001,
        0x7fbf_ffff,
        0x7fc1_2345,
        0xffc1_2345,
        0x7fff_ffff,
        0xffff_ffff,
        0x7f80_8000,
        0x7f81_0000,
        0x477f_f000,
        0x477f_efff,
        0x477f_f001,
        0x4780_0000,
        0x3380_0000,
        0x3380_0001,
        0x3340_0000,
        0x33c0_0000,
        0x3880_0000,
        0x387f_e000,
        0x387f_f000,
    ];
    let step = if cfg!(miri) { 0x0fff_fffb } else { 61_283 };
    bits.extend((0..=u32::MAX).step_by(step));
    bits.into_iter().map(f32::from_bits).collect()
}

#[test]
fn casts_in_blocks_match_half_per_element_on_every_class() {
    let v = f32_edge_values();
    let n = v.len();
    let t = DynTensor::from_vec(v.clone(), [n], cpu()).unwrap();
    // f32 -> f16 / bf16, at an offset too (the block path of a view).
    for (dtype, view) in [
        (DType::F16, false),
        (DType::BF16, false),
        (DType::F16, true),
        (DType::BF16, true),
    ] {
        let (src, vals) = if view {
            (t.narrow(0, 1, n - 1).unwrap(), &v[1..])
        } else {
            (t.clone(), &v[..])
        };
        let got = half_bits(&src.to_dtype(dtype).unwrap());
        for (k, (&g, &x)) in got.iter().zip(vals).enumerate() {
            let want = match dtype {
                DType::F16 => f16::from_f32(x).to_bits(),
                _ => bf16::from_f32(x).to_bits(),
            };
            assert_eq!(g, want, "{dtype:?}[{k}] from {:#010x}", x.to_bits());
        }
    }
    // Every f16 and bf16 bit pattern -> f32 and -> the other half type.
    let all: Vec<u16> = if cfg!(miri) {
        (0..=u16::MAX)
            .step_by(257)
            .chain([0x7c01, 0x7d00, 0xfe00, 0x7f81, 0x7fc1, 0xff81])
            .collect()
    } else {
        (0..=u16::MAX).collect()
    };
    let n = all.len();
    let h =
        DynTensor::from_vec(all.iter().map(|&b| f16::from_bits(b)).collect(), [n], cpu()).unwrap();
    let b = DynTensor::from_vec(
        all.iter().map(|&b| bf16::from_bits(b)).collect(),
        [n],
        cpu(),
    )
    .unwrap();
    let hf = h.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap();
    let bf = b.to_dtype(DType::F32).unwrap().to_vec::<f32>().unwrap();
    let hb = half_bits(&h.to_dtype(DType::BF16).unwrap());
    let bh = half_bits(&b.to_dtype(DType::F16).unwrap());
    for (k, &bits) in all.iter().enumerate() {
        let (x, y) = (f16::from_bits(bits), bf16::from_bits(bits));
        assert_eq!(
            hf[k].to_bits(),
            x.to_f32().to_bits(),
            "f16 {bits:#06x} -> f32"
        );
        assert_eq!(
            bf[k].to_bits(),
            y.to_f32().to_bits(),
            "bf16 {bits:#06x} -> f32"
        );
        assert_eq!(
            hb[k],
            bf16::from_f32(x.to_f32()).to_bits(),
            "f16 {bits:#06x} -> bf16"
        );
        assert_eq!(
            bh[k],
            f16::from_f32(y.to_f32()).to_bits(),
            "bf16 {bits:#06x} -> f16"
        );
    }
}

/// Every op of the op table (`tests/common/ops.rs`) in f16 and bf16 against the same op on the
/// same values in f32: the f32 result rounded once is within an ulp of the 16-bit type, a few
/// where an op rounds an intermediate result (a reduction of rounded terms).
#[test]
fn every_op_of_the_table_matches_f32() {
    let draw = ops::Draw::new(13);
    for dtype in [DType::F16, DType::BF16] {
        ops::run_cases(
            "half_ops",
            &draw.inputs(dtype, cpu()),
            &draw.rounded_inputs(dtype, DType::F32, cpu()),
            |_| None,
            |_, want| 4.0 * ops::table_eps(dtype) * want.abs().max(1.0),
        );
    }
}
