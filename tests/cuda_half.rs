//! The 16-bit floats (`f16`, `bf16`) on CUDA against the CPU backend of the same dtype, on fresh
//! random inputs: every kernel family that has half kernels (copies and casts between every
//! dtype pair, creation, element-wise math, comparisons, `where`, indexing, `cat`, reductions,
//! softmax, matmul/linear, cross-entropy and the backward kernels), with odd sizes and strided
//! views.
//!
//! Both backends compute in `f32` and round once, so the element-wise results are equal bit for
//! bit (up to NaN payloads) where `f32` rounds the same on both (+ - * /, max/min, copies, casts,
//! comparisons, indexing), and within one ulp of the 16-bit type where CUDA's `f32` functions
//! differ from the host's libm in their last bit. Sums, softmax, products and losses accumulate
//! in `f32` in another order: within an ulp of the 16-bit type plus the `f32` rounding bound of
//! that order.
//!
//! The optimizers step 16-bit parameters in f32 and store them rounded, on both devices.
//!
//! Without a GPU every test prints why it skips and passes; with `DEVTYPE_REQUIRE_CUDA=1` a
//! missing GPU fails (see `tests/common`). The random seed is printed; set `DEVTYPE_TEST_SEED`
//! to rerun one.

mod common;

#[path = "common/ops.rs"]
mod ops;

use ops::{BINARY, COMPARE};

use devtype::nn::Reduction;
use devtype::optim::{Adam, Optimizer, Sgd};
use devtype::prelude::*;
use devtype::Result;
use std::sync::{Mutex, Once};

const CPU: DynDevice = DynDevice::cpu();
const GPU: DynDevice = DynDevice::cuda(0);
const HALVES: [DType; 2] = [DType::F16, DType::BF16];
const ALL: [DType; 6] = [
    DType::F32,
    DType::F64,
    DType::I64,
    DType::Bool,
    DType::F16,
    DType::BF16,
];
/// The shape of a 0-dim tensor.
const SCALAR: [usize; 0] = [];

/// Serialises random generation (the stream position is global) and seeds it once per run.
static RNG: Mutex<()> = Mutex::new(());

fn seed_once() {
    static SEED: Once = Once::new();
    SEED.call_once(|| {
        let seed = common::test_seed();
        eprintln!("cuda_half: DEVTYPE_TEST_SEED={seed}");
        devtype::manual_seed(seed);
    });
}

/// Fresh standard-normal values on the CPU, rounded to `dtype`.
fn randn(shape: &[usize], dtype: DType) -> DynTensor {
    seed_once();
    let _guard = RNG.lock().unwrap_or_else(|p| p.into_inner());
    DynTensor::randn(shape, CPU)
        .unwrap()
        .to_dtype(dtype)
        .unwrap()
}

/// Random integers in `[-range, range]`, as `dtype`.
fn randint(shape: &[usize], range: f64, dtype: DType) -> DynTensor {
    seed_once();
    let u = {
        let _guard = RNG.lock().unwrap_or_else(|p| p.into_inner());
        DynTensor::rand(shape, CPU).unwrap()
    };
    let v: Vec<f64> = common::values_f64(&u)
        .iter()
        .map(|x| (x * (2.0 * range + 1.0)).floor() - range)
        .collect();
    DynTensor::from_vec(v, shape, CPU)
        .unwrap()
        .to_dtype(dtype)
        .unwrap()
}

/// `t` with some elements replaced by NaN, infinities, signed zeros and values out of the
/// 16-bit range (floats only).
fn with_specials(t: &DynTensor) -> DynTensor {
    let specials = [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0,
        -0.0,
        1e6,
        -7e4,
        3e-6,
    ];
    let mut v = common::values_f64(t);
    for (i, x) in v.iter_mut().enumerate() {
        if i % 11 == 3 {
            *x = specials[(i / 11) % specials.len()];
        }
    }
    DynTensor::from_vec(v, t.shape(), CPU)
        .unwrap()
        .to_dtype(t.dtype())
        .unwrap()
}

/// How far a GPU result may be from the CPU's: `|a - b| <= ulps * eps * max(|a|, |b|) + abs`,
/// with `eps` the machine epsilon of the result's dtype. NaN matches NaN; infinities must be
/// equal.
#[derive(Clone, Copy, Debug)]
struct Tol {
    ulps: f64,
    abs: f64,
}

const EXACT: Tol = Tol {
    ulps: 0.0,
    abs: 0.0,
};
/// CUDA's `f32` functions and the host's may differ in the last `f32` bit, which can move the
/// rounded 16-bit result by one ulp.
const ONE_ULP: Tol = Tol {
    ulps: 1.0,
    abs: 1e-7,
};

/// `n` terms of magnitude about `scale` summed in `f32` in another order, then rounded.
fn summed(n: usize, scale: f64) -> Tol {
    Tol {
        ulps: 1.0,
        abs: 4.0 * (n as f64 + 1.0) * f32::EPSILON as f64 * scale,
    }
}

/// The mean of `n` terms of magnitude about one: [`summed`] divided by `n`.
fn mean_of(n: usize) -> Tol {
    summed(n, 1.0 / (n.max(1) as f64))
}

fn eps(dtype: DType) -> f64 {
    match dtype {
        DType::F16 => devtype::f16::EPSILON.to_f64(),
        DType::BF16 => devtype::bf16::EPSILON.to_f64(),
        DType::F32 => f32::EPSILON as f64,
        DType::F64 => f64::EPSILON,
        _ => 0.0,
    }
}

fn close(a: f64, b: f64, eps: f64, tol: Tol) -> bool {
    if a.is_nan() || b.is_nan() {
        return a.is_nan() && b.is_nan();
    }
    if a.is_infinite() || b.is_infinite() {
        return a == b;
    }
    (a - b).abs() <= tol.ulps * eps * a.abs().max(b.abs()) + tol.abs
}

/// Asserts that a GPU result equals the CPU's within `tol`.
#[track_caller]
fn assert_matches(got: &DynTensor, want: &DynTensor, tol: Tol, what: &str) {
    assert_eq!(got.device(), GPU, "{what}: result not on cuda:0");
    assert_eq!(want.device(), CPU);
    assert_eq!(got.shape(), want.shape(), "{what}: shapes differ");
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtypes differ");
    let (g, w) = (common::values_f64(got), common::values_f64(want));
    let e = eps(want.dtype());
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!(
            close(*a, *b, e, tol),
            "{what}: element {i} of {:?}: GPU {a:e} vs CPU {b:e} (tolerance {tol:?})",
            want.shape()
        );
    }
}

/// Runs `op` on `inputs` (CPU tensors) and on GPU copies of them, and compares.
#[track_caller]
fn check(
    what: &str,
    inputs: &[&DynTensor],
    tol: Tol,
    op: impl Fn(&[DynTensor]) -> Result<DynTensor>,
) {
    let cpu: Vec<DynTensor> = inputs.iter().map(|t| (*t).clone()).collect();
    let gpu: Vec<DynTensor> = inputs.iter().map(|t| t.to(GPU).unwrap()).collect();
    let want = op(&cpu).unwrap_or_else(|e| panic!("{what} on the CPU: {e}"));
    let got = op(&gpu).unwrap_or_else(|e| panic!("{what} on the GPU: {e}"));
    assert_matches(&got, &want, tol, what);
}

/// Shapes for element-wise ops: empty, scalar, one element, odd sizes (not a multiple of the
/// four-element packs), a large one.
const SHAPES: &[&[usize]] = &[
    &[],
    &[0],
    &[1],
    &[7],
    &[255],
    &[257, 3],
    &[33, 65, 7],
    &[(1 << 20) + 3],
];

/// Pairs of shapes that broadcast.
const PAIRS: &[(&[usize], &[usize])] = &[
    (&[], &[]),
    (&[0], &[0]),
    (&[7], &[7]),
    (&[1023], &[]),
    (&[5, 1], &[1, 6]),
    (&[37, 1, 5], &[3, 1]),
    (&[129, 257], &[257]),
];

#[test]
fn round_trips_views_and_casts_between_every_dtype_pair() {
    let Some(_gpu) = common::gpu() else { return };
    for dtype in HALVES {
        for &shape in SHAPES {
            let x = with_specials(&randn(shape, dtype));
            check(
                &format!("round trip {dtype:?} {shape:?}"),
                &[&x],
                EXACT,
                |t| t[0].to(CPU)?.to(t[0].device()),
            );
        }
        let x = randn(&[37, 53], dtype);
        check("transpose().contiguous()", &[&x], EXACT, |t| {
            t[0].transpose(0, 1)?.contiguous()
        });
        check("narrow().contiguous()", &[&x], EXACT, |t| {
            t[0].narrow(1, 5, 40)?.narrow(0, 3, 30)?.contiguous()
        });
        let y = randn(&[6, 5, 4, 3], dtype);
        check("permute().contiguous()", &[&y], EXACT, |t| {
            t[0].permute(&[2, 0, 3, 1])?.contiguous()
        });
    }
    // Every pair with a 16-bit float on one side, from contiguous tensors and from transposes;
    // values out of the 16-bit range overflow to infinity, NaN and infinities saturate into
    // i64 as on the CPU.
    for from in ALL {
        for to in ALL {
            if !from.is_half() && !to.is_half() {
                continue;
            }
            for &shape in &[&[0usize][..], &[1], &[1001], &[33, 17]] {
                let mut x = randn(shape, DType::F64).mul_scalar(300.0).unwrap();
                if from.is_float() {
                    x = with_specials(&x);
                }
                let x = x.to_dtype(from).unwrap();
                let what = format!("cast {from:?} -> {to:?} {shape:?}");
                check(&what, &[&x], EXACT, |t| t[0].to_dtype(to));
                if shape.len() == 2 {
                    check(&format!("{what} of a transpose"), &[&x], EXACT, |t| {
                        t[0].transpose(0, 1)?.to_dtype(to)
                    });
                }
            }
        }
    }
}

#[test]
fn creation_on_the_device_matches_the_cpu() {
    let Some(gpu) = common::gpu() else { return };
    for dtype in HALVES {
        for &shape in SHAPES {
            for value in [0.0, -0.0, 1.0, -2.5, 0.1, 1e6, f64::NAN] {
                let what = format!("full({value}) {dtype:?} {shape:?}");
                // A value the dtype cannot hold (1e6 in f16) is PyTorch's overflow error,
                // the same on both devices.
                let (want, got) = match (
                    DynTensor::full(shape, value, dtype, CPU),
                    DynTensor::full(shape, value, dtype, GPU),
                ) {
                    (Ok(want), Ok(got)) => (want, got),
                    (Err(c), Err(g)) => {
                        assert_eq!(c.to_string(), g.to_string(), "{what}");
                        continue;
                    }
                    (c, g) => panic!("{what}: cpu {:?}, gpu {:?}", c.err(), g.err()),
                };
                assert_matches(&got, &want, EXACT, &what);
            }
        }
    }
    for (start, end, step) in [(0.0, 3.0, 0.1), (-5.0, 5.0, 0.37), (1.0, 3000.0, 7.77)] {
        let want = Tensor::<Cpu, f16>::arange_step(start, end, step, Cpu);
        let got = Tensor::<Cuda<0>, f16>::arange_step(start, end, step, gpu);
        assert_matches(&got.into_dyn(), &want.into_dyn(), EXACT, "arange_step f16");
        let want = Tensor::<Cpu, bf16>::arange_step(start, end, step, Cpu);
        let got = Tensor::<Cuda<0>, bf16>::arange_step(start, end, step, gpu);
        assert_matches(&got.into_dyn(), &want.into_dyn(), EXACT, "arange_step bf16");
    }
    // The same seed gives the same uniform numbers on both devices (bit for bit, below one);
    // normal ones go through log and cos, whose last f64 bit may differ.
    for &shape in SHAPES {
        let _guard = RNG.lock().unwrap_or_else(|p| p.into_inner());
        for seed in [1u64, 0xDEAD_BEEF] {
            devtype::manual_seed(seed);
            let cpu_u = Tensor::<Cpu, f16>::zeros(shape, Cpu).rand_like();
            let cpu_b = Tensor::<Cpu, bf16>::zeros(shape, Cpu).rand_like();
            let cpu_n = Tensor::<Cpu, bf16>::zeros(shape, Cpu).randn_like();
            devtype::manual_seed(seed);
            let gpu_u = Tensor::<Cuda<0>, f16>::zeros(shape, gpu).rand_like();
            let gpu_b = Tensor::<Cuda<0>, bf16>::zeros(shape, gpu).rand_like();
            let gpu_n = Tensor::<Cuda<0>, bf16>::zeros(shape, gpu).randn_like();
            assert_matches(&gpu_u.into_dyn(), &cpu_u.into_dyn(), EXACT, "rand f16");
            assert_matches(&gpu_b.into_dyn(), &cpu_b.into_dyn(), EXACT, "rand bf16");
            assert_matches(&gpu_n.into_dyn(), &cpu_n.into_dyn(), ONE_ULP, "randn bf16");
        }
    }
}

type UnaryFn = fn(&DynTensor) -> Result<DynTensor>;

#[test]
fn unary_math() {
    let Some(_gpu) = common::gpu() else { return };
    // Exact: each is one correctly rounded f32 operation (or none) before the one rounding.
    let exact: [(&str, UnaryFn); 5] = [
        ("neg", DynTensor::neg),
        ("relu", DynTensor::relu),
        ("abs", DynTensor::abs),
        ("square", DynTensor::square),
        ("reciprocal", DynTensor::reciprocal),
    ];
    let functions: [(&str, UnaryFn); 6] = [
        ("exp", DynTensor::exp),
        ("log", DynTensor::log),
        ("sqrt", DynTensor::sqrt),
        ("tanh", DynTensor::tanh),
        ("sigmoid", DynTensor::sigmoid),
        ("erf", DynTensor::erf),
    ];
    for dtype in HALVES {
        for &shape in SHAPES {
            let x = with_specials(&randn(shape, dtype).mul_scalar(3.0).unwrap());
            for (name, f) in exact {
                check(&format!("{name} {dtype:?} {shape:?}"), &[&x], EXACT, |t| {
                    f(&t[0])
                });
            }
            for (name, f) in functions {
                check(
                    &format!("{name} {dtype:?} {shape:?}"),
                    &[&x],
                    ONE_ULP,
                    |t| f(&t[0]),
                );
            }
        }
        let x = randn(&[65, 129], dtype);
        check("exp of a transpose", &[&x], ONE_ULP, |t| {
            t[0].transpose(0, 1)?.exp()
        });
        check("relu of a narrow", &[&x], EXACT, |t| {
            t[0].narrow(1, 3, 100)?.relu()
        });
    }
}

#[test]
fn binary_math_with_broadcasting_and_views() {
    let Some(_gpu) = common::gpu() else { return };
    for dtype in HALVES {
        for &(sa, sb) in PAIRS {
            let a = with_specials(&randn(sa, dtype).mul_scalar(4.0).unwrap());
            let b = randn(sb, dtype).mul_scalar(4.0).unwrap();
            for (name, f) in BINARY {
                let what = format!("{name} {dtype:?} {sa:?} {sb:?}");
                check(&what, &[&a, &b], EXACT, |t| f(&t[0], &t[1]));
                check(&format!("{what} swapped"), &[&a, &b], EXACT, |t| {
                    f(&t[1], &t[0])
                });
            }
            check(
                &format!("pow {dtype:?} {sa:?} {sb:?}"),
                &[&a, &b],
                ONE_ULP,
                |t| t[0].abs()?.pow(&t[1]),
            );
        }
        let a = randn(&[65, 129], dtype);
        let b = randn(&[129, 65], dtype);
        for (name, f) in BINARY {
            check(
                &format!("{name} of a transpose {dtype:?}"),
                &[&a, &b],
                EXACT,
                |t| f(&t[0], &t[1].transpose(0, 1)?),
            );
            check(
                &format!("{name} of narrows {dtype:?}"),
                &[&a, &b],
                EXACT,
                |t| {
                    f(
                        &t[0].narrow(1, 1, 64)?,
                        &t[1].transpose(0, 1)?.narrow(1, 3, 64)?,
                    )
                },
            );
        }
    }
}

#[test]
fn scalar_operands_and_comparisons() {
    let Some(_gpu) = common::gpu() else { return };
    for dtype in HALVES {
        for &shape in SHAPES {
            let x = with_specials(&randn(shape, dtype));
            // 0.1 is not a 16-bit value: the scalar stays f32 in the op, on both devices.
            // 6e4 is near f16's largest value (65504): products overflow to inf.
            for s in [2.5, -0.75, 0.0, 0.1, 6e4] {
                let scalar = DynTensor::full(SCALAR, s, dtype, CPU).unwrap();
                for (name, f) in BINARY {
                    let what = format!("{name} {dtype:?} {shape:?} and scalar {s}");
                    let (gx, cx) = (x.to(GPU).unwrap(), x.clone());
                    assert_matches(
                        &f(&gx, &scalar).unwrap(),
                        &f(&cx, &scalar).unwrap(),
                        EXACT,
                        &what,
                    );
                    assert_matches(
                        &f(&scalar, &gx).unwrap(),
                        &f(&scalar, &cx).unwrap(),
                        EXACT,
                        &what,
                    );
                }
                check(&format!("add_scalar {dtype:?} {s}"), &[&x], EXACT, |t| {
                    t[0].add_scalar(s)
                });
                check(&format!("mul_scalar {dtype:?} {s}"), &[&x], EXACT, |t| {
                    t[0].mul_scalar(s)
                });
                check(&format!("div_scalar {dtype:?} {s}"), &[&x], EXACT, |t| {
                    t[0].div_scalar(s)
                });
                check(&format!("clamp_min {dtype:?} {s}"), &[&x], EXACT, |t| {
                    t[0].clamp_min(s)
                });
                check(&format!("gt_scalar {dtype:?} {s}"), &[&x], EXACT, |t| {
                    t[0].gt_scalar(s)
                });
                check(&format!("eq_scalar {dtype:?} {s}"), &[&x], EXACT, |t| {
                    t[0].eq_scalar(s)
                });
            }
        }
        for &(sa, sb) in PAIRS {
            // Small integers, so that ties are common.
            let a = with_specials(&randint(sa, 3.0, dtype));
            let b = randint(sb, 3.0, dtype);
            for (name, f) in COMPARE {
                let what = format!("{name} {dtype:?} {sa:?} {sb:?}");
                check(&what, &[&a, &b], EXACT, |t| f(&t[0], &t[1]));
            }
        }
    }
}

#[test]
fn where_indexing_and_cat() {
    let Some(_gpu) = common::gpu() else { return };
    for dtype in HALVES {
        for &(sa, sb) in PAIRS {
            let c = randn(sa, DType::F32).gt_scalar(0.0).unwrap();
            let a = randn(sa, dtype);
            let b = randn(sb, dtype);
            check(
                &format!("where {dtype:?} {sa:?} {sb:?}"),
                &[&c, &a, &b],
                EXACT,
                |t| t[0].where_cond(&t[1], &t[2]),
            );
        }
        let x = with_specials(&randn(&[37, 53], dtype));
        let rows = randint(&[100], 18.0, DType::I64).add_scalar(18).unwrap();
        let cols = randint(&[21], 26.0, DType::I64).add_scalar(26).unwrap();
        check("index_select dim 0", &[&x, &rows], EXACT, |t| {
            t[0].index_select(0, &t[1])
        });
        check("index_select dim 1", &[&x, &cols], EXACT, |t| {
            t[0].index_select(1, &t[1])
        });
        check("index_select of a transpose", &[&x, &cols], EXACT, |t| {
            t[0].transpose(0, 1)?.index_select(0, &t[1])
        });
        let picks = randint(&[37, 9], 26.0, DType::I64).add_scalar(26).unwrap();
        check("gather dim 1", &[&x, &picks], EXACT, |t| {
            t[0].gather(1, &t[1])
        });
        let picks0 = randint(&[5, 53], 18.0, DType::I64).add_scalar(18).unwrap();
        check("gather dim 0", &[&x, &picks0], EXACT, |t| {
            t[0].gather(0, &t[1])
        });
        let y = randn(&[11, 53], dtype);
        let z = randn(&[53, 37], dtype);
        check("cat dim 0 with a transpose", &[&x, &y, &z], EXACT, |t| {
            DynTensor::cat(&[&t[0], &t[1], &t[2].transpose(0, 1)?], 0)
        });
        check("cat dim 1 of narrows", &[&x, &z], EXACT, |t| {
            DynTensor::cat(&[&t[0].narrow(1, 2, 7)?, &t[1].transpose(0, 1)?], 1)
        });
    }
}

#[test]
fn reductions_accumulate_in_f32() {
    let Some(_gpu) = common::gpu() else { return };
    let cases: &[(&[usize], &[isize])] = &[
        (&[7], &[0]),
        (&[1], &[]),
        (&[33, 65, 7], &[1]),
        (&[33, 65, 7], &[0, 2]),
        (&[33, 65, 7], &[-1]),
        (&[255, 3], &[0]),
        (&[(1 << 20) + 3], &[]),
        // Split over gridDim.y, with f32 partials combined by the finish kernels.
        (&[1000, 4096], &[0]),
        (&[2, 300, 2500], &[1]),
    ];
    for dtype in HALVES {
        for &(shape, dims) in cases {
            let x = randn(shape, dtype);
            let n: usize = if dims.is_empty() {
                shape.iter().product()
            } else {
                dims.iter()
                    .map(|&d| shape[d.rem_euclid(shape.len() as isize) as usize])
                    .product()
            };
            let what = format!("{dtype:?} {shape:?} dims {dims:?}");
            // A sum of n standard-normal terms is about sqrt(n): its f32 rounding error in
            // any order is far below n * eps(f32), and its mean's below that over n.
            check(&format!("sum {what}"), &[&x], summed(n, 1.0), |t| {
                t[0].sum_dims(dims, false)
            });
            check(&format!("mean {what}"), &[&x], mean_of(n), |t| {
                t[0].mean_dims(dims, true)
            });
            if dims.len() == 1 {
                let d = dims[0];
                let y = with_specials(&x);
                check(&format!("max {what}"), &[&y], EXACT, |t| {
                    t[0].max(d).map(|r| r.values)
                });
                check(&format!("min {what}"), &[&y], EXACT, |t| {
                    t[0].min(d).map(|r| r.values)
                });
                check(&format!("argmax {what}"), &[&y], EXACT, |t| t[0].argmax(d));
                check(&format!("argmin {what}"), &[&y], EXACT, |t| t[0].argmin(d));
                // Ties are common in 16-bit values: the first index wins on both devices.
                let ties = randint(shape, 2.0, dtype);
                check(&format!("argmax with ties {what}"), &[&ties], EXACT, |t| {
                    t[0].argmax(d)
                });
            }
        }
        let x = randn(&[300, 700], dtype);
        check("sum of everything", &[&x], summed(210_000, 1.0), |t| {
            t[0].sum_all()
        });
        check("mean of everything", &[&x], mean_of(210_000), |t| {
            t[0].mean_all()
        });
        check("max of a narrowed transpose", &[&x], EXACT, |t| {
            t[0].transpose(0, 1)?
                .narrow(0, 3, 500)?
                .max(1)
                .map(|r| r.values)
        });
    }
}

#[test]
fn softmax_and_log_softmax() {
    let Some(_gpu) = common::gpu() else { return };
    for dtype in HALVES {
        for &shape in &[&[1usize][..], &[7], &[3, 1000], &[257, 33], &[4, 5, 6]] {
            let x = randn(shape, dtype).mul_scalar(4.0).unwrap();
            let cols = *shape.last().unwrap();
            let tol = summed(cols, 1.0);
            for dim in [-1isize, 0] {
                let what = format!("{dtype:?} {shape:?} dim {dim}");
                check(&format!("softmax {what}"), &[&x], tol, |t| {
                    t[0].softmax(dim)
                });
                check(
                    &format!("log_softmax {what}"),
                    &[&x],
                    summed(cols, 16.0),
                    |t| t[0].log_softmax(dim),
                );
            }
        }
        let x = with_specials(&randn(&[9, 40], dtype));
        check(
            "softmax with NaN and infinities",
            &[&x],
            summed(40, 1.0),
            |t| t[0].softmax(1),
        );
        let y = randn(&[40, 9], dtype);
        check("log_softmax of a transpose", &[&y], summed(40, 16.0), |t| {
            t[0].transpose(0, 1)?.log_softmax(1)
        });
    }
}

#[test]
fn matmul_and_linear_through_gemm_ex() {
    let Some(_gpu) = common::gpu() else { return };
    for dtype in HALVES {
        for &(m, k, n) in &[
            (1usize, 1usize, 1usize),
            (7, 13, 5),
            (65, 129, 33),
            (256, 512, 128),
        ] {
            let a = randn(&[m, k], dtype);
            let b = randn(&[k, n], dtype);
            // cuBLAS sums k in another order than the CPU's f32 GEMM: f32 rounding of that
            // order, then one ulp either way of the 16-bit rounding.
            let tol = Tol {
                ulps: 1.0,
                ..summed(k, 1.0)
            };
            let what = format!("matmul {dtype:?} {m}x{k}x{n}");
            check(&what, &[&a, &b], tol, |t| t[0].matmul(&t[1]));
            check(&format!("{what} of transposes"), &[&a, &b], tol, |t| {
                t[0].transpose(0, 1)?
                    .contiguous()?
                    .transpose(0, 1)?
                    .matmul(&t[1].transpose(0, 1)?.contiguous()?.transpose(0, 1)?)
            });
            let w = randn(&[n, k], dtype);
            let bias = randn(&[n], dtype);
            check(
                &format!("linear {dtype:?} {m}x{k}x{n}"),
                &[&a, &w, &bias],
                tol,
                |t| t[0].linear(&t[1], Some(&t[2])),
            );
            check(
                &format!("linear without bias {dtype:?} {m}x{k}x{n}"),
                &[&a, &w],
                tol,
                |t| t[0].linear(&t[1], None),
            );
        }
        // A 3-D input, and a bias that is a strided view at an offset (stride 2).
        let x3 = randn(&[2, 300, 64], dtype);
        let w = randn(&[48, 64], dtype);
        let pairs = randn(&[48, 2], dtype);
        check(
            &format!("linear {dtype:?} 3-D, strided bias"),
            &[&x3, &w, &pairs],
            Tol {
                ulps: 1.0,
                ..summed(64, 1.0)
            },
            |t| {
                let bias = t[2].transpose(0, 1)?.narrow(0, 1, 1)?.squeeze(0)?;
                t[0].linear(&t[1], Some(&bias))
            },
        );
        let a3 = randn(&[3, 17, 9], dtype);
        let b3 = randn(&[3, 9, 11], dtype);
        check("bmm", &[&a3, &b3], summed(9, 4.0), |t| t[0].matmul(&t[1]));
        let v = randn(&[9], dtype);
        check("matrix @ vector", &[&a3, &v], summed(9, 4.0), |t| {
            t[0].matmul(&t[1])
        });
    }
}

#[test]
fn cross_entropy_accumulates_in_f32() {
    let Some(_gpu) = common::gpu() else { return };
    for dtype in HALVES {
        for &(n, c) in &[(1usize, 1usize), (8, 10), (300, 1000), (4097, 3), (0, 5)] {
            let x = randn(&[n, c], dtype).mul_scalar(3.0).unwrap();
            let mut t = common::values_f64(&randint(&[n], c as f64, DType::I64))
                .into_iter()
                .map(|v| (v.abs() as i64) % c as i64)
                .collect::<Vec<i64>>();
            for (i, v) in t.iter_mut().enumerate() {
                if i % 7 == 5 {
                    *v = -100;
                }
            }
            let targets = DynTensor::from_vec(t, [n], CPU).unwrap();
            let weight = randn(&[c], dtype).abs().unwrap().add_scalar(0.5).unwrap();
            let tol = summed(c + n, 16.0);
            for reduction in [Reduction::None, Reduction::Sum, Reduction::Mean] {
                let what = format!("cross_entropy {n}x{c} {dtype:?} {reduction:?}");
                check(&what, &[&x, &targets], tol, |t| {
                    t[0].cross_entropy_with(&t[1], None, reduction, -100)
                });
                check(
                    &format!("{what} weighted"),
                    &[&x, &targets, &weight],
                    tol,
                    |t| t[0].cross_entropy_with(&t[1], Some(&t[2]), reduction, -100),
                );
            }
        }
    }
}

/// The gradients of a small model through every backward kernel with half kernels:
/// index_select (index_add), linear (GEMMs and the bias sum), relu (relu_backward), gather
/// (scatter_add) and cross-entropy (its fused gradient).
fn grads(dev: DynDevice, init: &[DynTensor], inputs: &[DynTensor]) -> Result<Vec<DynTensor>> {
    let params: Vec<DynTensor> = init
        .iter()
        .map(|t| DynTensor::parameter(t.to(dev).unwrap()).unwrap())
        .collect();
    let [w1, b1, w2, b2, table] = &params[..] else {
        unreachable!()
    };
    let [x, rows, picks, targets] = inputs else {
        unreachable!()
    };
    let on = |t: &DynTensor| t.to(dev).unwrap();
    let emb = table.index_select(0, &on(rows))?;
    let h = on(x).add(&emb)?.linear(w1, Some(b1))?.relu()?;
    let logits = h.linear(w2, Some(b2))?;
    let picked = logits.gather(1, &on(picks))?.sum_all()?.mul_scalar(0.1)?;
    let loss = logits.cross_entropy_with(&on(targets), None, Reduction::Mean, -100)?;
    loss.add(&picked)?.backward()?;
    Ok(params
        .iter()
        .map(|p| p.grad().expect("a gradient"))
        .collect())
}

#[test]
fn gradients_match_the_cpu() {
    let Some(_gpu) = common::gpu() else { return };
    for dtype in HALVES {
        let (batch, features, hidden, classes, vocab) = (37, 16, 24, 5, 10);
        let scaled = |shape: &[usize], s: f64| randn(shape, dtype).mul_scalar(s).unwrap();
        let init = vec![
            scaled(&[hidden, features], 0.25),
            scaled(&[hidden], 0.1),
            scaled(&[classes, hidden], 0.2),
            scaled(&[classes], 0.1),
            scaled(&[vocab, features], 1.0),
        ];
        let x = randn(&[batch, features], dtype);
        let rows = randint(&[batch], 4.0, DType::I64).add_scalar(5).unwrap();
        let picks = randint(&[batch, 2], 2.0, DType::I64).add_scalar(2).unwrap();
        let targets = randint(&[batch], 2.0, DType::I64).add_scalar(2).unwrap();
        let inputs = [x, rows, picks, targets];
        let want = grads(CPU, &init, &inputs).unwrap();
        let got = grads(GPU, &init, &inputs).unwrap();
        // Each op rounds its result to the 16-bit type on both devices, so a one-ulp
        // difference early (an f32 sum in another order) can carry through a few ops.
        let tol = Tol {
            ulps: 8.0,
            abs: 8.0 * eps(dtype) * 0.1,
        };
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_matches(g, w, tol, &format!("gradient {i} {dtype:?}"));
        }
    }
}

/// Three optimizer steps on a 16-bit parameter on `D` (Nesterov SGD, or Adam with L2 weight
/// decay, or AdamW), from `init` with `grads`.
fn optimizer_steps<D: Device, H: devtype::Float>(
    dev: D,
    init: &DynTensor,
    grads: &[DynTensor],
    which: &str,
) -> Result<DynTensor> {
    let to_d = |t: &DynTensor| -> Result<Tensor<D, H>> {
        t.to(dev.dyn_device())?.try_into_tensor::<D, H>()
    };
    let mut p = Tensor::parameter(to_d(init)?);
    let mut sgd = Sgd::<D, H>::new(0.1).momentum(0.9).nesterov(true);
    let mut adam = Adam::<D, H>::new(0.01).weight_decay(0.1);
    let mut adamw = Adam::<D, H>::new(0.01).decoupled_weight_decay(0.1);
    for g in grads {
        p.try_set_grad(Some(to_d(g)?))?;
        match which {
            "sgd" => sgd.try_step(&mut p)?,
            "adam" => adam.try_step(&mut p)?,
            _ => adamw.try_step(&mut p)?,
        }
    }
    Ok(p.detach().to_dyn())
}

#[test]
fn optimizers_on_half_parameters_match_the_cpu() {
    let Some(gpu) = common::gpu() else { return };
    // Pure 16-bit parameters and state: the update runs in f32 on both devices and each stored
    // value rounds once. CUDA contracts a * b + c into one FMA where the CPU rounds twice, so an
    // f32 result may differ in its last bit and move a 16-bit value by one ulp, which the next
    // steps carry.
    let tol = Tol {
        ulps: 2.0,
        abs: 1e-6,
    };
    for dtype in HALVES {
        let init = randn(&[257], dtype);
        let grads: Vec<DynTensor> = (0..3).map(|_| randn(&[257], dtype)).collect();
        for which in ["sgd", "adam", "adamw"] {
            let (got, want) = if dtype == DType::F16 {
                (
                    optimizer_steps::<_, f16>(gpu, &init, &grads, which),
                    optimizer_steps::<_, f16>(Cpu, &init, &grads, which),
                )
            } else {
                (
                    optimizer_steps::<_, bf16>(gpu, &init, &grads, which),
                    optimizer_steps::<_, bf16>(Cpu, &init, &grads, which),
                )
            };
            let (got, want) = (got.unwrap(), want.unwrap());
            assert_matches(&got, &want, tol, &format!("{which} {dtype:?}"));
        }
    }
}

/// Every op of the op table (`tests/common/ops.rs`) on the GPU against the CPU, in f16 and
/// bf16: both compute in f32 and round once, so within a few ulps of the 16-bit type.
#[test]
fn every_op_of_the_table_matches_the_cpu() {
    ops::assert_families();
    ops::assert_covers(
        "cuda_half",
        ops::cases().iter().map(|(name, _)| *name),
        |_| None,
    );
    if common::gpu().is_none() {
        return;
    }
    let draw = ops::Draw::new(12);
    for dtype in HALVES {
        ops::run_cases(
            "cuda_half",
            &draw.inputs(dtype, GPU),
            &draw.inputs(dtype, CPU),
            |_| None,
            |_, want| 4.0 * ops::table_eps(dtype) * want.abs().max(1.0),
        );
    }
}
