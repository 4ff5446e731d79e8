//! Every CUDA op against the CPU backend, on fresh random inputs of many shapes: empty, one
//! element, sizes that are not multiples of the block size, large ones, strided views
//! (transposes, narrows, permutes, broadcasts), in f32 and f64 (and i64/bool where the op has
//! them).
//!
//! Each check runs the same op on CPU tensors and on GPU copies of them and compares the
//! results: exactly where both backends round the same way (copies, casts, + - * /, max/min,
//! comparisons, indexing), within a few ulps for transcendental functions, and within the
//! rounding bound of the summation order for reductions and products.
//!
//! Without a GPU every test prints why it skips and passes; with `DEVTYPE_REQUIRE_CUDA=1` a
//! missing GPU fails (see `tests/common`). The random seed is printed; set
//! `DEVTYPE_TEST_SEED` to rerun one.

mod common;

#[path = "common/ops.rs"]
mod ops;

use ops::{BINARY, COMPARE};

use devtype::nn::Reduction;
use devtype::prelude::*;
use devtype::Result;
use std::sync::{Mutex, Once};

const CPU: DynDevice = DynDevice::cpu();
const GPU: DynDevice = DynDevice::cuda(0);
const FLOATS: [DType; 2] = [DType::F32, DType::F64];
/// The shape of a 0-dim tensor.
const SCALAR: [usize; 0] = [];

/// Serialises random generation (the stream position is global) and seeds it once per run.
static RNG: Mutex<()> = Mutex::new(());

fn seed_once() {
    static SEED: Once = Once::new();
    SEED.call_once(|| {
        let seed = std::env::var("DEVTYPE_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_nanos() as u64)
                    .unwrap_or(7)
            });
        eprintln!("cuda_ops: DEVTYPE_TEST_SEED={seed}");
        devtype::manual_seed(seed);
    });
}

/// Fresh standard-normal values on the CPU.
fn randn(shape: &[usize], dtype: DType) -> DynTensor {
    seed_once();
    let _guard = RNG.lock().unwrap_or_else(|p| p.into_inner());
    match dtype {
        DType::F64 => Tensor::<Cpu, f64>::zeros(shape, Cpu)
            .randn_like()
            .into_dyn(),
        _ => DynTensor::randn(shape, CPU)
            .unwrap()
            .to_dtype(dtype)
            .unwrap(),
    }
}

/// Fresh uniform values in [0, 1) on the CPU.
fn rand(shape: &[usize], dtype: DType) -> DynTensor {
    seed_once();
    let _guard = RNG.lock().unwrap_or_else(|p| p.into_inner());
    match dtype {
        DType::F64 => Tensor::<Cpu, f64>::zeros(shape, Cpu).rand_like().into_dyn(),
        _ => DynTensor::rand(shape, CPU)
            .unwrap()
            .to_dtype(dtype)
            .unwrap(),
    }
}

/// Random integers in `[-range, range]`, as `dtype`.
fn randint(shape: &[usize], range: f64, dtype: DType) -> DynTensor {
    let u = rand(shape, DType::F64);
    let v: Vec<f64> = u
        .to_vec::<f64>()
        .unwrap()
        .iter()
        .map(|x| (x * (2.0 * range + 1.0)).floor() - range)
        .collect();
    DynTensor::from_vec(v, shape, CPU)
        .unwrap()
        .to_dtype(dtype)
        .unwrap()
}

/// `t` with some elements replaced by NaN, infinities and signed zeros (floats only).
fn with_specials(t: &DynTensor) -> DynTensor {
    let specials = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -0.0];
    let mut v = t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap();
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

/// How far a GPU result may be from the CPU's: `|a - b| <= eps * (abs + rel * max(|a|, |b|))`
/// with `eps` the dtype's machine epsilon. NaN matches NaN; infinities must be equal.
#[derive(Clone, Copy, Debug)]
struct Tol {
    abs: f64,
    rel: f64,
}

const EXACT: Tol = Tol { abs: 0.0, rel: 0.0 };
/// Transcendental functions: CUDA's and the host libm's may differ by a few ulps.
const ULPS: Tol = Tol {
    abs: 4.0,
    rel: 16.0,
};

/// Sums of `n` terms of magnitude about one, added in another order.
fn summed(n: usize) -> Tol {
    Tol {
        abs: 8.0 * (n as f64 + 1.0),
        rel: 16.0,
    }
}

fn close(a: f64, b: f64, eps: f64, tol: Tol) -> bool {
    if a.is_nan() || b.is_nan() {
        return a.is_nan() && b.is_nan();
    }
    if a.is_infinite() || b.is_infinite() {
        return a == b;
    }
    (a - b).abs() <= eps * (tol.abs + tol.rel * a.abs().max(b.abs()))
}

/// Asserts that a GPU result equals the CPU's within `tol`.
#[track_caller]
fn assert_matches(got: &DynTensor, want: &DynTensor, tol: Tol, what: &str) {
    assert_eq!(got.device(), GPU, "{what}: result not on cuda:0");
    assert_eq!(want.device(), CPU);
    assert_eq!(got.shape(), want.shape(), "{what}: shapes differ");
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtypes differ");
    let (g, w, eps): (Vec<f64>, Vec<f64>, f64) = match want.dtype() {
        DType::F32 => (
            got.to_vec::<f32>()
                .unwrap()
                .into_iter()
                .map(f64::from)
                .collect(),
            want.to_vec::<f32>()
                .unwrap()
                .into_iter()
                .map(f64::from)
                .collect(),
            f32::EPSILON as f64,
        ),
        DType::F64 => (
            got.to_vec::<f64>().unwrap(),
            want.to_vec::<f64>().unwrap(),
            f64::EPSILON,
        ),
        DType::I64 => {
            assert_eq!(
                got.to_vec::<i64>().unwrap(),
                want.to_vec::<i64>().unwrap(),
                "{what}"
            );
            return;
        }
        DType::Bool => {
            assert_eq!(
                got.to_vec::<bool>().unwrap(),
                want.to_vec::<bool>().unwrap(),
                "{what}"
            );
            return;
        }
        // The 16-bit floats are checked in tests/cuda_half.rs, with tolerances in their ulps.
        DType::F16 | DType::BF16 => panic!("{what}: half tensors are checked in cuda_half.rs"),
    };
    for (i, (a, b)) in g.iter().zip(&w).enumerate() {
        assert!(
            close(*a, *b, eps, tol),
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

/// Shapes for element-wise ops: empty, scalar, one element, odd sizes, a large one.
const SHAPES: &[&[usize]] = &[
    &[],
    &[0],
    &[3, 0],
    &[1],
    &[7],
    &[255],
    &[1023],
    &[257, 3],
    &[33, 65, 7],
    &[(1 << 20) + 3],
];

#[test]
fn round_trips_and_contiguous_copies_of_views() {
    let Some(_gpu) = common::gpu() else { return };
    for dtype in [DType::F32, DType::F64, DType::I64, DType::Bool] {
        for &shape in SHAPES {
            let x = randint(shape, 1000.0, dtype);
            check(
                &format!("round trip {dtype:?} {shape:?}"),
                &[&x],
                EXACT,
                |t| t[0].to(CPU)?.to(t[0].device()),
            );
        }
        let x = randint(&[37, 53], 1000.0, dtype);
        check("transpose().contiguous()", &[&x], EXACT, |t| {
            t[0].transpose(0, 1)?.contiguous()
        });
        check("narrow().contiguous()", &[&x], EXACT, |t| {
            t[0].narrow(1, 5, 40)?.narrow(0, 3, 30)?.contiguous()
        });
        let y = randint(&[6, 5, 4, 3], 1000.0, dtype);
        check("permute().contiguous()", &[&y], EXACT, |t| {
            t[0].permute(&[2, 0, 3, 1])?.contiguous()
        });
        check("reshape of a transpose", &[&y], EXACT, |t| {
            t[0].transpose(1, 3)?.reshape(&[-1, 20])
        });
        check("download of a strided view", &[&x], EXACT, |t| {
            t[0].transpose(0, 1)?
                .narrow(0, 1, 7)?
                .to(CPU)?
                .to(t[0].device())
        });
    }
}

#[test]
fn creation_on_the_device_matches_the_cpu() {
    let Some(_gpu) = common::gpu() else { return };
    for &shape in SHAPES {
        for dtype in [DType::F32, DType::F64, DType::I64, DType::Bool] {
            for value in [0.0, -0.0, 1.0, -2.5, 3.75e9, f64::NAN] {
                let what = format!("full({value}) {dtype:?} {shape:?}");
                // A value the dtype cannot hold (NaN in i64) is PyTorch's overflow error, the
                // same on both devices.
                match (
                    DynTensor::full(shape, value, dtype, CPU),
                    DynTensor::full(shape, value, dtype, GPU),
                ) {
                    (Ok(want), Ok(got)) => assert_matches(&got, &want, EXACT, &what),
                    (Err(c), Err(g)) => assert_eq!(c.to_string(), g.to_string(), "{what}"),
                    (c, g) => panic!("{what}: cpu {:?}, gpu {:?}", c.err(), g.err()),
                }
            }
        }
    }
    for n in [0, 1, 5, 1000, (1 << 20) + 7] {
        assert_matches(
            &DynTensor::arange(n, GPU).unwrap(),
            &DynTensor::arange(n, CPU).unwrap(),
            EXACT,
            "arange",
        );
    }
    let Some(gpu) = common::gpu() else { return };
    for (start, end, step) in [
        (0.0, 3.0, 0.1),
        (-5.0, 5.0, 0.37),
        (10.0, -10.0, -0.3),
        (1.0, 1e6, 7.77),
    ] {
        let want = Tensor::<Cpu, f64>::arange_step(start, end, step, Cpu);
        let got = Tensor::<Cuda<0>, f64>::arange_step(start, end, step, gpu);
        assert_matches(&got.into_dyn(), &want.into_dyn(), EXACT, "arange_step f64");
        // As PyTorch, an i64 range truncates its step: 0.37 is a zero step there.
        if step.trunc() == 0.0 {
            continue;
        }
        let want = Tensor::<Cpu, i64>::arange_step(start, end, step, Cpu);
        let got = Tensor::<Cuda<0>, i64>::arange_step(start, end, step, gpu);
        assert_matches(&got.into_dyn(), &want.into_dyn(), EXACT, "arange_step i64");
    }
    // Random values: the same seed gives the same numbers on both devices. Uniform values are
    // bit-identical; normal ones go through log and cos, which may differ in the last bit.
    for &shape in SHAPES {
        let _guard = RNG.lock().unwrap_or_else(|p| p.into_inner());
        for seed in [1u64, 0xDEAD_BEEF] {
            devtype::manual_seed(seed);
            let cpu32 = Tensor::<Cpu, f32>::rand(shape, Cpu);
            let cpu64 = Tensor::<Cpu, f64>::zeros(shape, Cpu).randn_like();
            let cpun = Tensor::<Cpu, f32>::randn(shape, Cpu);
            devtype::manual_seed(seed);
            let gpu32 = Tensor::<Cuda<0>, f32>::rand(shape, gpu);
            let gpu64 = Tensor::<Cuda<0>, f64>::zeros(shape, gpu).randn_like();
            let gpun = Tensor::<Cuda<0>, f32>::randn(shape, gpu);
            assert_matches(&gpu32.into_dyn(), &cpu32.into_dyn(), EXACT, "rand f32");
            assert_matches(
                &gpu64.into_dyn(),
                &cpu64.into_dyn(),
                Tol {
                    abs: 64.0,
                    rel: 64.0,
                },
                "randn f64",
            );
            assert_matches(
                &gpun.into_dyn(),
                &cpun.into_dyn(),
                Tol { abs: 2.0, rel: 2.0 },
                "randn f32",
            );
        }
    }
}

#[test]
fn casts_between_every_pair_of_dtypes() {
    let Some(_gpu) = common::gpu() else { return };
    let odd = vec![
        0.0,
        -0.0,
        0.5,
        -0.5,
        1.5,
        -2.7,
        1e20,
        -1e20,
        9.3e18,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        3.0,
        16777217.0,
    ];
    let specials = DynTensor::from_vec(odd.clone(), [odd.len()], CPU).unwrap();
    let all = [DType::F32, DType::F64, DType::I64, DType::Bool];
    for from in all {
        for &shape in &[&[0usize][..], &[1], &[1023], &[31, 17]] {
            let x = randint(shape, 1e6, DType::F64)
                .div_scalar(7.0)
                .unwrap()
                .to_dtype(from)
                .unwrap();
            for to in all {
                check(
                    &format!("cast {from:?} -> {to:?} {shape:?}"),
                    &[&x],
                    EXACT,
                    |t| t[0].to_dtype(to),
                );
                if shape.len() == 2 {
                    check(
                        &format!("cast of a transpose {from:?} -> {to:?}"),
                        &[&x],
                        EXACT,
                        |t| t[0].transpose(0, 1)?.to_dtype(to),
                    );
                }
            }
        }
        let s = specials.to_dtype(from).unwrap();
        for to in all {
            check(
                &format!("cast of special values {from:?} -> {to:?}"),
                &[&s],
                EXACT,
                |t| t[0].to_dtype(to),
            );
        }
    }
}

/// Pairs of shapes that broadcast, including empty and large ones.
const PAIRS: &[(&[usize], &[usize])] = &[
    (&[], &[]),
    (&[0], &[0]),
    (&[3, 0], &[3, 1]),
    (&[1], &[1]),
    (&[1023], &[1023]),
    (&[1023], &[]),
    (&[257, 3], &[3]),
    (&[257, 3], &[257, 1]),
    (&[4, 1, 5], &[3, 1]),
    (&[2, 3, 4, 5, 6], &[3, 1, 5, 1]),
    (&[(1 << 20) + 3], &[(1 << 20) + 3]),
    (&[1 << 10, 1 << 10], &[1 << 10]),
];

#[test]
fn binary_ops_with_broadcasting_and_views() {
    let Some(_gpu) = common::gpu() else { return };
    for dtype in FLOATS {
        for &(sa, sb) in PAIRS {
            let a = with_specials(&randn(sa, dtype));
            let b = randn(sb, dtype);
            for (name, f) in BINARY {
                check(
                    &format!("{name} {dtype:?} {sa:?} {sb:?}"),
                    &[&a, &b],
                    EXACT,
                    |t| f(&t[0], &t[1]),
                );
                check(
                    &format!("{name} {dtype:?} {sb:?} {sa:?}"),
                    &[&b, &a],
                    EXACT,
                    |t| f(&t[0], &t[1]),
                );
            }
            let pos = b.abs().unwrap();
            check(
                &format!("pow {dtype:?} {sa:?} {sb:?}"),
                &[&pos, &a],
                ULPS,
                |t| t[0].pow(&t[1]),
            );
        }
        // Views: a transposed operand, a narrowed one, both.
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
    // Integers: wrapping arithmetic (no division), exact.
    for &(sa, sb) in PAIRS {
        let a = randint(sa, 1e12, DType::I64);
        let b = randint(sb, 1e6, DType::I64);
        for (name, f) in BINARY.iter().filter(|(n, _)| *n != "div") {
            check(
                &format!("{name} i64 {sa:?} {sb:?}"),
                &[&a, &b],
                EXACT,
                |t| f(&t[0], &t[1]),
            );
        }
    }
}

#[test]
fn scalar_operands_on_either_side() {
    let Some(_gpu) = common::gpu() else { return };
    for dtype in [DType::F32, DType::F64, DType::I64] {
        for &shape in SHAPES {
            let x = if dtype == DType::I64 {
                randint(shape, 1e6, dtype)
            } else {
                with_specials(&randn(shape, dtype))
            };
            for s in [2.5, -0.75, 0.0, 3.0] {
                // `x op s` through the `_scalar` methods, and with a CPU 0-dim tensor on either
                // side (PyTorch's CPU-scalar exemption), which passes the value to the kernel.
                let scalar = DynTensor::full(SCALAR, s, dtype, CPU).unwrap();
                for (name, f) in BINARY {
                    if dtype == DType::I64 && name == "div" {
                        continue;
                    }
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
                check(&format!("add_scalar {dtype:?}"), &[&x], EXACT, |t| {
                    t[0].add_scalar(s)
                });
                check(&format!("mul_scalar {dtype:?}"), &[&x], EXACT, |t| {
                    t[0].mul_scalar(s)
                });
                check(&format!("maximum_scalar {dtype:?}"), &[&x], EXACT, |t| {
                    t[0].clamp_min(s)
                });
                if dtype != DType::I64 {
                    check(&format!("div_scalar {dtype:?}"), &[&x], EXACT, |t| {
                        t[0].div_scalar(s)
                    });
                    check(&format!("pow_scalar {dtype:?}"), &[&x], ULPS, |t| {
                        t[0].abs()?.pow_scalar(s)
                    });
                }
            }
        }
    }
}

#[test]
fn comparisons_with_tensors_and_scalars() {
    let Some(_gpu) = common::gpu() else { return };
    for dtype in [DType::F32, DType::F64, DType::I64, DType::Bool] {
        for &(sa, sb) in PAIRS {
            // Small integers, so that ties are common.
            let mut a = randint(sa, 3.0, dtype);
            if dtype.is_float() {
                a = with_specials(&a);
            }
            let b = randint(sb, 3.0, dtype);
            for (name, f) in COMPARE {
                check(
                    &format!("{name} {dtype:?} {sa:?} {sb:?}"),
                    &[&a, &b],
                    EXACT,
                    |t| f(&t[0], &t[1]),
                );
                // A CPU 0-dim operand on either side becomes a scalar comparison on the GPU.
                let s = DynTensor::full(SCALAR, 1.0, dtype, CPU).unwrap();
                let (ga, ca) = (a.to(GPU).unwrap(), a.clone());
                let what = format!("{name} {dtype:?} {sa:?} with a scalar");
                assert_matches(&f(&ga, &s).unwrap(), &f(&ca, &s).unwrap(), EXACT, &what);
                assert_matches(&f(&s, &ga).unwrap(), &f(&s, &ca).unwrap(), EXACT, &what);
            }
        }
        let a = randint(&[40, 30], 2.0, dtype);
        check(&format!("lt of a transpose {dtype:?}"), &[&a], EXACT, |t| {
            let square = t[0].narrow(0, 0, 30)?;
            square.lt(&square.transpose(0, 1)?)
        });
    }
}

type UnaryFn = fn(&DynTensor) -> Result<DynTensor>;

#[test]
fn unary_math() {
    let Some(_gpu) = common::gpu() else { return };
    let exact: [(&str, UnaryFn); 4] = [
        ("neg", DynTensor::neg),
        ("relu", DynTensor::relu),
        ("abs", DynTensor::abs),
        ("square", DynTensor::square),
    ];
    let math: [(&str, UnaryFn); 7] = [
        ("exp", DynTensor::exp),
        ("log", DynTensor::log),
        ("sqrt", DynTensor::sqrt),
        ("tanh", DynTensor::tanh),
        ("sigmoid", DynTensor::sigmoid),
        ("reciprocal", DynTensor::reciprocal),
        ("erf", DynTensor::erf),
    ];
    for dtype in FLOATS {
        for &shape in SHAPES {
            let x = with_specials(&randn(shape, dtype).mul_scalar(3.0).unwrap());
            for (name, f) in exact {
                check(&format!("{name} {dtype:?} {shape:?}"), &[&x], EXACT, |t| {
                    f(&t[0])
                });
            }
            for (name, f) in math {
                let tol = if name == "reciprocal" || name == "sqrt" {
                    EXACT
                } else {
                    ULPS
                };
                check(&format!("{name} {dtype:?} {shape:?}"), &[&x], tol, |t| {
                    f(&t[0])
                });
            }
        }
        let x = randn(&[63, 130], dtype);
        for (name, f) in exact.iter().chain(math.iter()) {
            check(
                &format!("{name} of a transposed narrow {dtype:?}"),
                &[&x],
                ULPS,
                |t| f(&t[0].narrow(1, 2, 100)?.transpose(0, 1)?),
            );
        }
    }
    for &shape in SHAPES {
        let x = randint(shape, 1e15, DType::I64);
        for (name, f) in exact {
            check(&format!("{name} i64 {shape:?}"), &[&x], EXACT, |t| f(&t[0]));
        }
    }
}

#[test]
fn reductions_over_any_dims_of_any_view() {
    let Some(_gpu) = common::gpu() else { return };
    let cases: &[(&[usize], &[isize])] = &[
        (&[], &[]),
        (&[0], &[]),
        (&[4, 0], &[1]),
        (&[1], &[0]),
        (&[1023], &[]),
        (&[1023], &[0]),
        (&[257, 3], &[0]),
        (&[257, 3], &[1]),
        (&[257, 3], &[-1, 0]),
        (&[33, 65, 7], &[1]),
        (&[33, 65, 7], &[0, 2]),
        (&[33, 65, 7], &[2]),
        (&[(1 << 20) + 3], &[]),
        (&[4096, 300], &[0]),
        (&[3, 100_003], &[1]),
        (&[2, 50_000, 3], &[1]),
        (&[3000, 2, 2], &[0, 2]),
        // At least 2048 outputs with a strided reduction: a thread per output
        // (`reduce_cols_*`, `argreduce_cols_*`), the reduction split over `gridDim.y` and
        // combined by `*_finish_*` (split 32, 2 and 10 on an H200's 132 SMs).
        (&[1000, 4096], &[0]),
        (&[64, 3000], &[0]),
        (&[2, 300, 2500], &[1]),
    ];
    for dtype in FLOATS {
        for &(shape, dims) in cases {
            let x = randn(shape, dtype);
            let n: usize = if dims.is_empty() {
                shape.iter().product()
            } else {
                dims.iter()
                    .map(|&d| shape[d.rem_euclid(shape.len().max(1) as isize) as usize])
                    .product()
            };
            for keepdim in [false, true] {
                let what = format!("{dtype:?} {shape:?} dims {dims:?} keepdim {keepdim}");
                check(&format!("sum {what}"), &[&x], summed(n), |t| {
                    t[0].sum_dims(dims, keepdim)
                });
                check(&format!("mean {what}"), &[&x], summed(1), |t| {
                    t[0].mean_dims(dims, keepdim)
                });
            }
            if n > 0 && dims.len() == 1 {
                let d = dims[0];
                let y = with_specials(&x);
                check(
                    &format!("max {dtype:?} {shape:?} dim {d}"),
                    &[&y],
                    EXACT,
                    |t| t[0].max(d).map(|r| r.values),
                );
                check(
                    &format!("min {dtype:?} {shape:?} dim {d}"),
                    &[&y],
                    EXACT,
                    |t| t[0].min(d).map(|r| r.values),
                );
                check(
                    &format!("argmax {dtype:?} {shape:?} dim {d}"),
                    &[&x],
                    EXACT,
                    |t| t[0].argmax(d),
                );
                check(
                    &format!("argmin {dtype:?} {shape:?} dim {d}"),
                    &[&x],
                    EXACT,
                    |t| t[0].argmin(d),
                );
                check(
                    &format!("argmax with NaN {dtype:?} {shape:?} dim {d}"),
                    &[&y],
                    EXACT,
                    |t| t[0].argmax(d),
                );
                // Ties: the first index wins.
                let ties = randint(shape, 2.0, dtype);
                check(
                    &format!("argmin with ties {dtype:?} {shape:?} dim {d}"),
                    &[&ties],
                    EXACT,
                    |t| t[0].argmin(d),
                );
                check(
                    &format!("argmax with ties {dtype:?} {shape:?} dim {d}"),
                    &[&ties],
                    EXACT,
                    |t| t[0].argmax(d),
                );
            }
        }
        // Views: reduce a transpose and a narrow without copying them.
        let x = randn(&[300, 400], dtype);
        for d in [0, 1] {
            check("sum of a transpose", &[&x], summed(400), |t| {
                t[0].transpose(0, 1)?.sum_dim(d)
            });
            check("max of a narrow", &[&x], EXACT, |t| {
                t[0].narrow(1, 7, 333)?.max(d).map(|r| r.values)
            });
            check("argmax of a permute", &[&x], EXACT, |t| {
                t[0].transpose(0, 1)?.narrow(0, 1, 300)?.argmax(d)
            });
        }
        check("sum of everything", &[&x], summed(120_000), |t| {
            t[0].sum_all()
        });
        check("mean of everything", &[&x], summed(1), |t| t[0].mean_all());
    }
    // Integers: wrapping sums, max, min, arg reductions, exact.
    for &(shape, dims) in cases {
        let x = randint(shape, 1e9, DType::I64);
        check(&format!("sum i64 {shape:?} {dims:?}"), &[&x], EXACT, |t| {
            t[0].sum_dims(dims, false)
        });
        let n: usize = shape.iter().product();
        if n > 0 && dims.len() == 1 {
            check("max i64", &[&x], EXACT, |t| {
                t[0].max(dims[0]).map(|r| r.values)
            });
            check("argmin i64", &[&x], EXACT, |t| t[0].argmin(dims[0]));
        }
    }
}

#[test]
fn matrix_products_on_views_and_batches() {
    let Some(_gpu) = common::gpu() else { return };
    for dtype in FLOATS {
        let mm: &[(usize, usize, usize)] = &[
            (1, 1, 1),
            (17, 33, 9),
            (128, 64, 256),
            (0, 5, 3),
            (3, 0, 4),
            (5, 3, 0),
            (1, 300, 1),
            (513, 257, 129),
        ];
        for &(m, k, n) in mm {
            let a = randn(&[m, k], dtype);
            let b = randn(&[k, n], dtype);
            let tol = summed(k);
            check(
                &format!("mm {m}x{k} @ {k}x{n} {dtype:?}"),
                &[&a, &b],
                tol,
                |t| t[0].matmul(&t[1]),
            );
            // Transposed views go to cuBLAS with transpose flags, no copies.
            let at = randn(&[k, m], dtype);
            let bt = randn(&[n, k], dtype);
            check("a.T @ b", &[&at, &b], tol, |t| {
                t[0].transpose(0, 1)?.matmul(&t[1])
            });
            check("a @ b.T", &[&a, &bt], tol, |t| {
                t[0].matmul(&t[1].transpose(0, 1)?)
            });
            check("a.T @ b.T", &[&at, &bt], tol, |t| {
                t[0].transpose(0, 1)?.matmul(&t[1].transpose(0, 1)?)
            });
        }
        let tol = summed(40);
        // Vectors.
        let v = randn(&[40], dtype);
        let w = randn(&[40, 7], dtype);
        let u = randn(&[9, 40], dtype);
        check("vector @ matrix", &[&v, &w], tol, |t| t[0].matmul(&t[1]));
        check("matrix @ vector", &[&u, &v], tol, |t| t[0].matmul(&t[1]));
        check("vector @ vector", &[&v, &v], tol, |t| t[0].matmul(&t[1]));
        // A row-narrowed matrix (leading dimension larger than its width).
        let big = randn(&[50, 80], dtype);
        check("narrowed operands", &[&big, &w], tol, |t| {
            t[0].narrow(1, 10, 40)?.narrow(0, 3, 20)?.matmul(&t[1])
        });
        // A matrix with no unit stride (every other column) is copied first.
        let wide = randn(&[9, 40, 2], dtype);
        check("no unit stride", &[&wide, &w], tol, |t| {
            t[0].narrow(2, 1, 1)?.squeeze(2)?.matmul(&t[1])
        });
        // Batches: plain, transposed, broadcast (batch stride 0), several batch dims.
        let a3 = randn(&[4, 17, 40], dtype);
        let b3 = randn(&[4, 40, 9], dtype);
        check("bmm", &[&a3, &b3], tol, |t| t[0].matmul(&t[1]));
        check("bmm of transposes", &[&a3, &b3], tol, |t| {
            t[1].transpose(1, 2)?.matmul(&t[0].transpose(1, 2)?)
        });
        check("batch @ matrix (broadcast)", &[&a3, &w], tol, |t| {
            t[0].matmul(&t[1])
        });
        let a4 = randn(&[2, 1, 5, 40], dtype);
        let b4 = randn(&[3, 40, 6], dtype);
        check("broadcast batch dims", &[&a4, &b4], tol, |t| {
            t[0].matmul(&t[1])
        });
        let a5 = randn(&[3, 2, 5, 40], dtype);
        check("batch dims that do not merge", &[&a5, &b4], tol, |t| {
            t[0].transpose(0, 1)?.matmul(&t[1])
        });
        check(
            "empty batch",
            &[&randn(&[0, 5, 40], dtype), &randn(&[0, 40, 3], dtype)],
            tol,
            |t| t[0].matmul(&t[1]),
        );
    }
}

#[test]
fn softmax_and_log_softmax() {
    let Some(_gpu) = common::gpu() else { return };
    for dtype in FLOATS {
        let shapes: &[&[usize]] = &[
            &[],
            &[1],
            &[1, 1],
            &[7, 10],
            &[3, 1000],
            &[2, 3, 1030],
            &[4096, 3],
            &[5, 0],
        ];
        for &shape in shapes {
            let x = randn(shape, dtype).mul_scalar(4.0).unwrap();
            let cols = shape.iter().copied().max().unwrap_or(1);
            let tol = Tol {
                abs: 8.0 * cols as f64 + 16.0,
                rel: 32.0,
            };
            for dim in [-1isize, 0] {
                check(
                    &format!("softmax {dtype:?} {shape:?} dim {dim}"),
                    &[&x],
                    tol,
                    |t| t[0].softmax(dim),
                );
                check(
                    &format!("log_softmax {dtype:?} {shape:?} dim {dim}"),
                    &[&x],
                    tol,
                    |t| t[0].log_softmax(dim),
                );
            }
        }
        // NaN and -inf rows, as the CPU handles them.
        let x = with_specials(&randn(&[40, 13], dtype));
        check(
            "softmax with NaN and inf",
            &[&x],
            Tol {
                abs: 128.0,
                rel: 32.0,
            },
            |t| t[0].softmax(1),
        );
        let neg_inf = DynTensor::full([3, 5], f64::NEG_INFINITY, dtype, CPU).unwrap();
        check("softmax of a -inf row", &[&neg_inf], EXACT, |t| {
            t[0].softmax(1)
        });
        check(
            "log_softmax of a transposed view",
            &[&x],
            Tol {
                abs: 128.0,
                rel: 32.0,
            },
            |t| t[0].transpose(0, 1)?.log_softmax(1),
        );
    }
}

#[test]
fn index_select_and_gather() {
    let Some(_gpu) = common::gpu() else { return };
    for dtype in [DType::F32, DType::F64, DType::I64, DType::Bool] {
        let x = randint(&[50, 7], 100.0, dtype);
        let rows = DynTensor::from_vec(vec![3i64, 0, 49, 48, 3, 0], [6], CPU).unwrap();
        let cols = DynTensor::from_vec(vec![6i64, 0, 2], [3], CPU).unwrap();
        check(
            &format!("index_select dim 0 {dtype:?}"),
            &[&x, &rows],
            EXACT,
            |t| t[0].index_select(0, &t[1]),
        );
        check(
            &format!("index_select dim 1 {dtype:?}"),
            &[&x, &cols],
            EXACT,
            |t| t[0].index_select(1, &t[1]),
        );
        check(
            &format!("index_select of a transpose {dtype:?}"),
            &[&x, &cols],
            EXACT,
            |t| t[0].transpose(0, 1)?.index_select(0, &t[1]),
        );
        let empty = DynTensor::from_vec(Vec::<i64>::new(), [0], CPU).unwrap();
        check("index_select with no indices", &[&x, &empty], EXACT, |t| {
            t[0].index_select(0, &t[1])
        });
        // A strided index.
        let idx2 = DynTensor::from_vec(vec![1i64, 5, 2, 6, 3, 0], [3, 2], CPU).unwrap();
        check(
            "index_select with a strided index",
            &[&x, &idx2],
            EXACT,
            |t| t[0].index_select(1, &t[1].transpose(0, 1)?.narrow(0, 0, 1)?.squeeze(0)?),
        );
        // Embedding-sized lookups.
        let table = randint(&[1000, 64], 100.0, dtype);
        let ids = randint(&[4096], 499.0, DType::I64).add_scalar(499).unwrap();
        check("embedding lookup", &[&table, &ids], EXACT, |t| {
            t[0].index_select(0, &t[1])
        });
        // gather along each dim, with an index smaller than the input.
        let g = randint(&[5, 8], 100.0, dtype);
        let gi = randint(&[5, 3], 4.0, DType::I64)
            .abs()
            .unwrap()
            .mul_scalar(2)
            .unwrap()
            .add_scalar(-1)
            .unwrap()
            .relu()
            .unwrap();
        check(&format!("gather dim 1 {dtype:?}"), &[&g, &gi], EXACT, |t| {
            t[0].gather(1, &t[1])
        });
        let gi0 = randint(&[4, 8], 2.0, DType::I64).add_scalar(2).unwrap();
        check(
            &format!("gather dim 0 {dtype:?}"),
            &[&g, &gi0],
            EXACT,
            |t| t[0].gather(0, &t[1]),
        );
        let gt = randint(&[3, 8], 2.0, DType::I64).add_scalar(2).unwrap();
        check(
            &format!("gather from a transpose with a strided index {dtype:?}"),
            &[&g, &gt],
            EXACT,
            |t| t[0].transpose(0, 1)?.gather(1, &t[1].transpose(0, 1)?),
        );
    }
}

#[test]
fn invalid_indices_are_safe_on_the_gpu() {
    let Some(_gpu) = common::gpu() else { return };
    // The CPU reports the bad index; the GPU cannot without waiting, so the element reads NaN.
    let x = randn(&[4, 3], DType::F32);
    let bad = DynTensor::from_vec(vec![1i64, 4, -5, 1_000_000_000], [4], CPU).unwrap();
    assert!(x.index_select(0, &bad).is_err());
    let got = x
        .to(GPU)
        .unwrap()
        .index_select(0, &bad.to(GPU).unwrap())
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    let want = x.to_vec::<f32>().unwrap();
    assert_eq!(&got[..3], &want[3..6]);
    assert!(got[3..].iter().all(|v| v.is_nan()), "{got:?}");
    let gi = DynTensor::from_vec(vec![0i64, 3, -4, 2], [4, 1], CPU).unwrap();
    let got = x
        .to(GPU)
        .unwrap()
        .gather(1, &gi.to(GPU).unwrap())
        .unwrap()
        .to_vec::<f32>()
        .unwrap();
    assert_eq!(got[0], want[0]);
    assert!(got[1].is_nan() && got[2].is_nan());
    assert_eq!(got[3], want[11]);
}

#[test]
fn cumsum_sort_topk_max_and_masked_fill_along_any_dim() {
    let Some(_gpu) = common::gpu() else { return };
    let shapes: &[&[usize]] = &[&[], &[0], &[1], &[7], &[3, 0], &[5, 33], &[4, 9, 6], &[300]];
    for dtype in [DType::F32, DType::F64, DType::I64] {
        for &shape in shapes {
            let x = if dtype == DType::I64 {
                randint(shape, 5.0, dtype)
            } else {
                // Rounded: ties, which both backends order by index.
                with_specials(&randint(shape, 5.0, dtype))
            };
            for d in 0..shape.len().max(1) as isize {
                let what = |op: &str| format!("{op} {dtype:?} {shape:?} dim {d}");
                let tol = if dtype == DType::I64 {
                    EXACT
                } else {
                    summed(300)
                };
                check(&what("cumsum"), &[&x], tol, |t| t[0].cumsum(d));
                check(&what("cumsum of a transpose"), &[&x], tol, |t| {
                    if t[0].shape().len() < 2 {
                        return t[0].cumsum(d);
                    }
                    t[0].transpose(0, -1)?.cumsum(d)
                });
                for descending in [false, true] {
                    check(&what("sort values"), &[&x], EXACT, |t| {
                        Ok(t[0].sort(d, descending)?.values)
                    });
                    check(&what("sort indices"), &[&x], EXACT, |t| {
                        Ok(t[0].sort(d, descending)?.indices)
                    });
                    let n = if shape.is_empty() {
                        1
                    } else {
                        shape[d as usize]
                    };
                    let k = n.div_ceil(2);
                    check(&what("topk"), &[&x], EXACT, |t| {
                        let r = t[0].topk(k, d, descending, true)?;
                        r.values
                            .to_dtype(DType::F64)?
                            .add(&r.indices.to_dtype(DType::F64)?)
                    });
                }
                if shape.iter().all(|&s| s > 0) {
                    check(&what("max indices"), &[&x], EXACT, |t| {
                        Ok(t[0].max(d)?.indices)
                    });
                }
            }
            let mask = randn(shape, DType::F32)
                .gt(&DynTensor::full(SCALAR, 0.0, DType::F32, CPU).unwrap())
                .unwrap();
            check(
                &format!("masked_fill {dtype:?} {shape:?}"),
                &[&x, &mask],
                EXACT,
                |t| t[0].masked_fill(&t[1], 3),
            );
        }
    }
    // Gradients on the device: the reverse scan and the scatter of sort's.
    let x = randn(&[6, 5], DType::F64);
    check("cumsum backward", &[&x], summed(6), |t| {
        let v = DynTensor::parameter(t[0].clone())?;
        v.cumsum(0)?.mul(&v.cumsum(0)?)?.sum()?.backward()?;
        let s = DynTensor::parameter(t[0].clone())?;
        s.sort(1, true)?.values.cumsum(1)?.sum()?.backward()?;
        v.grad().unwrap().add(&s.grad().unwrap())
    });
}

/// Lines longer than one block's shared-memory chunk (2048): sorted in chunks, then merged
/// (several passes, a last run shorter than the others), ties and NaN ordered as on the CPU.
#[test]
fn sort_of_long_lines_on_the_gpu() {
    let Some(_gpu) = common::gpu() else { return };
    let shapes: &[(&[usize], isize)] = &[
        (&[9000], 0),
        (&[2, 5000, 3], 1),
        (&[3, 2049], 1),
        (&[2100, 2], 0),
    ];
    for dtype in [DType::F32, DType::F64, DType::I64] {
        for &(shape, d) in shapes {
            let x = if dtype == DType::I64 {
                randint(shape, 50.0, dtype)
            } else {
                with_specials(&randint(shape, 50.0, dtype))
            };
            for descending in [false, true] {
                let what = format!("long sort {dtype:?} {shape:?} dim {d} descending {descending}");
                check(&what, &[&x], EXACT, |t| {
                    Ok(t[0].sort(d, descending)?.values)
                });
                check(&what, &[&x], EXACT, |t| {
                    Ok(t[0].sort(d, descending)?.indices)
                });
                check(&what, &[&x], EXACT, |t| {
                    Ok(t[0].topk(7, d, descending, true)?.indices)
                });
            }
        }
    }
}

#[test]
fn where_with_broadcasting() {
    let Some(_gpu) = common::gpu() else { return };
    for dtype in [DType::F32, DType::F64, DType::I64, DType::Bool] {
        for &(sa, sb) in PAIRS {
            let c = randn(sa, DType::F32)
                .gt(&DynTensor::full(SCALAR, 0.0, DType::F32, CPU).unwrap())
                .unwrap();
            let a = randint(sa, 100.0, dtype);
            let b = randint(sb, 100.0, dtype);
            check(
                &format!("where {dtype:?} {sa:?} {sb:?}"),
                &[&c, &a, &b],
                EXACT,
                |t| t[0].where_cond(&t[1], &t[2]),
            );
            check(
                &format!("where {dtype:?} {sb:?} {sa:?}"),
                &[&c, &b, &a],
                EXACT,
                |t| t[0].where_cond(&t[1], &t[2]),
            );
        }
        let c = randn(&[30, 20], DType::F32)
            .gt(&DynTensor::full(SCALAR, 0.0, DType::F32, CPU).unwrap())
            .unwrap();
        let a = randint(&[20, 30], 100.0, dtype);
        check("where of transposes", &[&c, &a], EXACT, |t| {
            t[0].where_cond(
                &t[1].transpose(0, 1)?,
                &t[1].narrow(0, 0, 1)?.transpose(0, 1)?,
            )
        });
    }
}

#[test]
fn cat_and_stack() {
    let Some(_gpu) = common::gpu() else { return };
    for dtype in [DType::F32, DType::F64, DType::I64, DType::Bool] {
        let a = randint(&[3, 4], 100.0, dtype);
        let b = randint(&[5, 4], 100.0, dtype);
        let e = randint(&[0, 4], 100.0, dtype);
        check(&format!("cat dim 0 {dtype:?}"), &[&a, &b, &e], EXACT, |t| {
            DynTensor::cat(&[&t[0], &t[2], &t[1]], 0)
        });
        let c = randint(&[3, 2], 100.0, dtype);
        let z = randint(&[3, 0], 100.0, dtype);
        check(&format!("cat dim 1 {dtype:?}"), &[&a, &c, &z], EXACT, |t| {
            DynTensor::cat(&[&t[0], &t[2], &t[1]], 1)
        });
        check(&format!("cat of views {dtype:?}"), &[&a, &b], EXACT, |t| {
            DynTensor::cat(
                &[
                    &t[0].transpose(0, 1)?,
                    &t[1].transpose(0, 1)?.narrow(1, 1, 3)?,
                ],
                1,
            )
        });
        let big = randint(&[1000, 300], 100.0, dtype);
        check(&format!("cat large {dtype:?}"), &[&big, &big], EXACT, |t| {
            DynTensor::cat(&[&t[0], &t[1].narrow(1, 0, 300)?], 0)
        });
        check(&format!("stack {dtype:?}"), &[&a, &a], EXACT, |t| {
            DynTensor::stack(&[&t[0], &t[1]], 1)
        });
        check(
            &format!("stack at the end {dtype:?}"),
            &[&a, &b],
            EXACT,
            |t| DynTensor::stack(&[&t[0], &t[1].narrow(0, 0, 3)?], 2),
        );
    }
}

#[test]
fn fused_linear_layer() {
    let Some(_gpu) = common::gpu() else { return };
    for dtype in FLOATS {
        for &(rows, k, n) in &[
            (5, 7, 3),
            (1, 1, 1),
            (64, 300, 129),
            (0, 4, 3),
            (4, 0, 3),
            (3, 4, 0),
        ] {
            let x = randn(&[rows, k], dtype);
            let w = randn(&[n, k], dtype);
            let b = randn(&[n], dtype);
            let tol = summed(k + 1);
            check(
                &format!("linear {rows}x{k} -> {n} {dtype:?}"),
                &[&x, &w, &b],
                tol,
                |t| t[0].linear(&t[1], Some(&t[2])),
            );
            check(
                &format!("linear without bias {dtype:?}"),
                &[&x, &w],
                tol,
                |t| t[0].linear(&t[1], None),
            );
        }
        let tol = summed(8);
        let x3 = randn(&[2, 4, 7], dtype);
        let w = randn(&[3, 7], dtype);
        let b = randn(&[3], dtype);
        check("linear of a 3-D input", &[&x3, &w, &b], tol, |t| {
            t[0].linear(&t[1], Some(&t[2]))
        });
        check("linear of a vector", &[&x3, &w, &b], tol, |t| {
            t[0].narrow(0, 0, 1)?
                .narrow(1, 0, 1)?
                .reshape(&[7])?
                .linear(&t[1], Some(&t[2]))
        });
        check("linear of a transposed input", &[&x3, &w, &b], tol, |t| {
            t[0].transpose(1, 2)?
                .transpose(1, 2)?
                .permute(&[1, 0, 2])?
                .linear(&t[1], Some(&t[2]))
        });
        let wt = randn(&[7, 3], dtype);
        check(
            "linear with transposed weights",
            &[&x3, &wt, &b],
            tol,
            |t| t[0].linear(&t[1].transpose(0, 1)?, Some(&t[2])),
        );
        let bb = randn(&[6], dtype);
        check("linear with a strided bias", &[&x3, &w, &bb], tol, |t| {
            t[0].linear(
                &t[1],
                Some(&t[2].reshape(&[3, 2])?.narrow(1, 1, 1)?.squeeze(1)?),
            )
        });
    }
}

#[test]
fn fused_cross_entropy() {
    let Some(_gpu) = common::gpu() else { return };
    for dtype in FLOATS {
        for &(n, c) in &[(1usize, 1usize), (8, 10), (300, 1000), (4097, 3), (0, 5)] {
            let x = randn(&[n, c], dtype).mul_scalar(3.0).unwrap();
            // Targets in range, some set to the ignore index.
            let mut t = randint(&[n], c as f64, DType::I64)
                .abs()
                .unwrap()
                .to_vec::<i64>()
                .unwrap();
            for (i, v) in t.iter_mut().enumerate() {
                *v %= c as i64;
                if i % 7 == 5 {
                    *v = -100;
                }
            }
            let targets = DynTensor::from_vec(t, [n], CPU).unwrap();
            let weight = rand(&[c], dtype).add_scalar(0.5).unwrap();
            let tol = Tol {
                abs: 16.0 * (c + n) as f64 + 64.0,
                rel: 64.0,
            };
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
                if n > 1 {
                    check(
                        &format!("{what} of a transposed view"),
                        &[&x, &targets],
                        tol,
                        |t| {
                            t[0].transpose(0, 1)?
                                .contiguous()?
                                .transpose(0, 1)?
                                .cross_entropy_with(&t[1], None, reduction, -100)
                        },
                    );
                }
            }
        }
        // One sample: logits [classes] and a 0-dim target.
        let x = randn(&[6], dtype);
        let t = DynTensor::from_vec(vec![4i64], SCALAR, CPU).unwrap();
        check(
            "cross_entropy of one sample",
            &[&x, &t],
            Tol {
                abs: 64.0,
                rel: 64.0,
            },
            |t| t[0].cross_entropy_with(&t[1], None, Reduction::None, -100),
        );
    }
}

#[test]
fn typed_front_on_the_gpu() {
    let Some(gpu) = common::gpu() else { return };
    let x: Tensor<Cpu> = randn(&[64, 32], DType::F32).try_into_typed().unwrap();
    let w: Tensor<Cpu> = randn(&[32, 16], DType::F32).try_into_typed().unwrap();
    let xg = x.to(gpu);
    let wg = w.to(gpu);
    // `to` onto the same device shares storage.
    assert!(xg.to(gpu).shares_storage_with(&xg));
    let want = (&x.matmul(&w) + &Tensor::ones([64, 16], Cpu))
        .relu()
        .sum_dim(1);
    let got = (&xg.matmul(&wg) + &Tensor::ones([64, 16], gpu))
        .relu()
        .sum_dim(1);
    assert_eq!(got.device(), gpu);
    assert_matches(&got.into_dyn(), &want.into_dyn(), summed(64), "typed chain");
    // Printing reads the values back, as PyTorch prints them.
    let values = vec![1.0f32, 2.5, -3.0];
    let printed_cpu = Tensor::from_vec(values.clone(), [3], Cpu).to_string();
    let printed_gpu = Tensor::from_vec(values, [3], gpu).to_string();
    assert_eq!(
        printed_gpu,
        format!("{}, device='cuda:0')", printed_cpu.trim_end_matches(')'))
    );
    assert_eq!(
        Tensor::<Cuda<0>, i64>::arange(3, gpu).to_vec(),
        vec![0, 1, 2]
    );
    assert_eq!(Tensor::<Cuda<0>>::scalar(4.0, gpu).item(), 4.0);
}

#[test]
fn copies_between_two_gpus() {
    let Some(_gpu) = common::gpu() else { return };
    let Some(_second) = common::second_gpu() else {
        return;
    };
    let gpu1 = DynDevice::cuda(1);
    for dtype in [DType::F32, DType::F64, DType::I64, DType::Bool] {
        let x = randint(&[300, 70], 1000.0, dtype);
        let on0 = x.to(GPU).unwrap();
        let on1 = on0.to(gpu1).unwrap();
        assert_eq!(on1.device(), gpu1);
        let back = on1.to(GPU).unwrap();
        assert_matches(&back, &x, EXACT, "cuda:0 -> cuda:1 -> cuda:0");
        let view = on0.transpose(0, 1).unwrap().to(gpu1).unwrap();
        assert_eq!(
            view.to(CPU).unwrap().to_vec::<f64>().ok(),
            x.transpose(0, 1).unwrap().to_vec::<f64>().ok()
        );
    }
}

/// Every op of the op table (`tests/common/ops.rs`) on the GPU against the CPU, in f32 and f64:
/// a newly declared op runs here from the day it lands (the per-family tests above add shapes
/// and views).
#[test]
fn every_op_of_the_table_matches_the_cpu() {
    ops::assert_families();
    ops::assert_covers(
        "cuda_ops",
        ops::cases().iter().map(|(name, _)| *name),
        |_| None,
    );
    if common::gpu().is_none() {
        return;
    }
    let draw = ops::Draw::new(11);
    for dtype in FLOATS {
        ops::run_cases(
            "cuda_ops",
            &draw.inputs(dtype, GPU),
            &draw.inputs(dtype, CPU),
            |_| None,
            |_, want| 16.0 * ops::table_eps(dtype) * want.abs().max(1.0),
        );
    }
}
