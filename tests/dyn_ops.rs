//! The dynamic front's own code paths against the f64 reference: scalar methods, `pow`,
//! operators, reductions, softmax, cat/stack, indexing, `where`, for every element type it
//! takes (f32, f64, i64, bool where they apply), on fresh random inputs.
#![allow(clippy::type_complexity)] // tables of (name, op, reference) read best spelled out

#[path = "common/ops.rs"]
mod ops;
#[path = "cpu_reference.rs"]
mod reference;

use devtype::prelude::*;
use reference::*;

fn cpu() -> DynDevice {
    DynDevice::cpu()
}

fn make(r: &Ref, dtype: DType) -> DynTensor {
    match dtype {
        DType::F32 => DynTensor::from_vec(
            r.data.iter().map(|&v| v as f32).collect::<Vec<_>>(),
            &r.shape,
            cpu(),
        ),
        DType::F64 => DynTensor::from_vec(r.data.clone(), &r.shape, cpu()),
        DType::I64 => DynTensor::from_vec(
            r.data.iter().map(|&v| v as i64).collect::<Vec<_>>(),
            &r.shape,
            cpu(),
        ),
        DType::Bool => DynTensor::from_vec(
            r.data.iter().map(|&v| v != 0.0).collect::<Vec<_>>(),
            &r.shape,
            cpu(),
        ),
        #[allow(unreachable_patterns)]
        other => panic!("no test values for {other:?}"),
    }
    .unwrap()
}

fn read(t: &DynTensor) -> Ref {
    let data = values_f64(t);
    Ref::new(t.shape(), data)
}

/// The reference rounded as the dtype holds values.
fn as_dtype(r: &Ref, dtype: DType) -> Ref {
    match dtype {
        DType::F32 => r.rounded::<f32>(),
        DType::F64 => r.clone(),
        DType::I64 => r.map(|v| v.trunc()),
        _ => r.map(|v| (v != 0.0) as u8 as f64),
    }
}

fn tol(dtype: DType) -> f64 {
    match dtype {
        DType::F32 => <f32 as Precision>::ELEMENTWISE,
        DType::F64 => <f64 as Precision>::ELEMENTWISE,
        _ => 0.0,
    }
}

fn acc_tol(dtype: DType) -> f64 {
    match dtype {
        DType::F32 => <f32 as Precision>::ACCUMULATED,
        _ => <f64 as Precision>::ACCUMULATED,
    }
}

/// Random values for `dtype`: integers in [-9, 9] for i64, 0/1 for bool.
fn random(rng: &mut Rng, shape: &[usize], dtype: DType) -> Ref {
    let r = Ref::random(rng, shape, -3.0, 3.0);
    match dtype {
        DType::I64 => r.map(|v| (v * 3.0).round()),
        DType::Bool => r.map(|v| (v > 0.0) as u8 as f64),
        _ => as_dtype(&r, dtype),
    }
}

const SHAPES: [(&[usize], &[usize]); 6] = [
    (&[], &[]),
    (&[0, 2], &[2]),
    (&[4, 5], &[5]),
    (&[3, 1], &[1, 6]),
    (&[2, 3, 4], &[3, 1]),
    (&[257, 263], &[1, 263]),
];

#[test]
fn arithmetic_for_each_dtype() {
    let mut rng = Rng::new("arithmetic_for_each_dtype");
    type Op = fn(&DynTensor, &DynTensor) -> devtype::Result<DynTensor>;
    let ops: [(&str, Op, fn(f64, f64) -> f64, bool); 7] = [
        ("add", DynTensor::add, |x, y| x + y, false),
        ("sub", DynTensor::sub, |x, y| x - y, false),
        ("mul", DynTensor::mul, |x, y| x * y, false),
        ("div", DynTensor::div, |x, y| x / y, true),
        ("maximum", DynTensor::maximum, f64::max, false),
        ("minimum", DynTensor::minimum, f64::min, false),
        ("pow", DynTensor::pow, f64::powf, true),
    ];
    for dtype in [DType::F32, DType::F64, DType::I64] {
        for (sa, sb) in SHAPES {
            let ra = random(&mut rng, sa, dtype);
            let rb = random(&mut rng, sb, dtype);
            let (a, b) = (make(&ra, dtype), make(&rb, dtype));
            for (name, op, f, float_only) in ops {
                let what = format!("{name} {dtype:?} {sa:?} {sb:?}");
                // Positive bases keep pow real.
                let base = if name == "pow" {
                    as_dtype(&ra.map(|v| v.abs() + 0.5), dtype)
                } else {
                    ra.clone()
                };
                let r = op(&make(&base, dtype), &b);
                if float_only && dtype == DType::I64 {
                    // PyTorch's rules: true division of integers is float32; integer powers
                    // stay integer, exact (a negative exponent gives 0 but for bases of ±1).
                    let base = as_dtype(&base, dtype);
                    // An integer zero has no sign: x / 0 is +-inf by the sign of x alone.
                    let rb = rb.map(|v| v + 0.0);
                    let (got, want) = if name == "div" {
                        (r.unwrap(), as_dtype(&base.zip(&rb, f), DType::F32))
                    } else {
                        let powi = |x: f64, y: f64| {
                            if y < 0.0 {
                                if x == 1.0 {
                                    1.0
                                } else {
                                    0.0
                                }
                            } else {
                                x.powi(y as i32)
                            }
                        };
                        (r.unwrap(), base.zip(&rb, powi))
                    };
                    let dtype = if name == "div" {
                        DType::F32
                    } else {
                        DType::I64
                    };
                    assert_eq!(got.dtype(), dtype, "{what}");
                    assert_close(&read(&got), &want, tol(dtype), 1e-30, &what);
                    continue;
                }
                let want = as_dtype(&base.zip(&rb, f), dtype);
                assert_close(&read(&r.unwrap()), &want, tol(dtype), 1e-30, &what);
            }
            assert_exact(&read(&a), &ra, "inputs unchanged");
        }
    }
}

#[test]
fn scalar_methods_and_operators() {
    let mut rng = Rng::new("scalar_methods_and_operators");
    type Op = fn(&DynTensor, f64) -> devtype::Result<DynTensor>;
    let ops: [(&str, Op, fn(f64, f64) -> f64); 7] = [
        ("add_scalar", DynTensor::add_scalar, |x, s| x + s),
        ("sub_scalar", DynTensor::sub_scalar, |x, s| x - s),
        ("mul_scalar", DynTensor::mul_scalar, |x, s| x * s),
        ("div_scalar", DynTensor::div_scalar, |x, s| x / s),
        ("clamp_min", DynTensor::clamp_min, f64::max),
        ("clamp_max", DynTensor::clamp_max, f64::min),
        ("pow_scalar", DynTensor::pow_scalar, |x, s| x.abs().powf(s)),
    ];
    for dtype in [DType::F32, DType::F64] {
        for shape in [&[][..], &[0][..], &[7][..], &[300, 250][..]] {
            let ra = random(&mut rng, shape, dtype);
            let a = make(&ra, dtype);
            let s = as_dtype(&Ref::new(&[], vec![rng.uniform(0.5, 2.0)]), dtype).data[0];
            for (name, op, f) in ops {
                let input = if name == "pow_scalar" {
                    a.abs().unwrap()
                } else {
                    a.clone()
                };
                let got = read(&op(&input, s).unwrap());
                assert_close(
                    &got,
                    &as_dtype(&ra.map(|x| f(x, s)), dtype),
                    tol(dtype),
                    1e-30,
                    &format!("{name} {dtype:?} {shape:?}"),
                );
            }
            // Operators: references and owned values, scalars on the right.
            let rb = random(&mut rng, shape, dtype);
            let b = make(&rb, dtype);
            let t = tol(dtype);
            assert_close(
                &read(&(&a + &b)),
                &as_dtype(&ra.zip(&rb, |x, y| x + y), dtype),
                t,
                1e-30,
                "&a + &b",
            );
            assert_close(
                &read(&(a.clone() - b.clone())),
                &as_dtype(&ra.zip(&rb, |x, y| x - y), dtype),
                t,
                1e-30,
                "a - b",
            );
            assert_close(
                &read(&(a.clone() * &b)),
                &as_dtype(&ra.zip(&rb, |x, y| x * y), dtype),
                t,
                1e-30,
                "a * &b",
            );
            assert_close(
                &read(&(&a / 4.0)),
                &as_dtype(&ra.map(|x| x / 4.0), dtype),
                t,
                1e-30,
                "&a / 4",
            );
            assert_close(
                &read(&(&a - 0.5)),
                &as_dtype(&ra.map(|x| x - 0.5), dtype),
                t,
                1e-30,
                "&a - 0.5",
            );
            assert_close(&read(&-&a), &ra.map(|x| -x), t, 1e-30, "-&a");
            assert_exact(&read(&a), &ra, "operands unchanged");
        }
    }
    // Integer scalars.
    let r = Ref::new(&[4], vec![-3.0, 0.0, 5.0, 7.0]);
    let a = make(&r, DType::I64);
    assert_eq!(
        read(&a.add_scalar(2.0).unwrap()).data,
        vec![-1.0, 2.0, 7.0, 9.0]
    );
    assert_eq!(
        read(&a.clamp_min(1.0).unwrap()).data,
        vec![1.0, 1.0, 5.0, 7.0]
    );
    // A float scalar promotes an integer or bool tensor to float32 (PyTorch's wrapped-number
    // rule, tests/promotion.rs); a bool tensor plus a bool is a logical or, as in PyTorch.
    let q = a.div_scalar(2.0).unwrap();
    assert_eq!(q.dtype(), DType::F32);
    assert_eq!(read(&q).data, vec![-1.5, 0.0, 2.5, 3.5]);
    let b = make(&r, DType::Bool).add_scalar(1.0).unwrap();
    assert_eq!(b.dtype(), DType::F32);
    assert_eq!(read(&b).data, vec![2.0, 1.0, 2.0, 2.0]);
    let or = make(&r, DType::Bool).add_scalar(true).unwrap();
    assert_eq!((or.dtype(), read(&or).data), (DType::Bool, vec![1.0; 4]));
}

#[test]
fn comparisons_and_where_for_each_dtype() {
    let mut rng = Rng::new("comparisons_and_where_for_each_dtype");
    type Op = fn(&DynTensor, &DynTensor) -> devtype::Result<DynTensor>;
    let ops: [(&str, Op, fn(f64, f64) -> bool); 6] = [
        ("eq", DynTensor::eq, |x, y| x == y),
        ("ne", DynTensor::ne, |x, y| x != y),
        ("lt", DynTensor::lt, |x, y| x < y),
        ("le", DynTensor::le, |x, y| x <= y),
        ("gt", DynTensor::gt, |x, y| x > y),
        ("ge", DynTensor::ge, |x, y| x >= y),
    ];
    for dtype in [DType::F32, DType::F64, DType::I64, DType::Bool] {
        for (sa, sb) in SHAPES {
            let ra = random(&mut rng, sa, dtype).map(|v| v.round());
            let rb = random(&mut rng, sb, dtype).map(|v| v.round());
            let (a, b) = (make(&ra, dtype), make(&rb, dtype));
            for (name, op, f) in ops {
                let got = op(&a, &b).unwrap();
                assert_eq!(got.dtype(), DType::Bool);
                assert_exact(
                    &read(&got),
                    &ra.zip(&rb, |x, y| f(x, y) as u8 as f64),
                    &format!("{name} {dtype:?} {sa:?} {sb:?}"),
                );
            }
            let cond = a.gt(&b).unwrap();
            let rc = ra.zip(&rb, |x, y| (x > y) as u8 as f64);
            let got = cond.where_cond(&a, &b).unwrap();
            assert_exact(
                &read(&got),
                &Ref::where_cond(&rc, &ra, &rb),
                &format!("where {dtype:?} {sa:?} {sb:?}"),
            );
        }
    }
}

#[test]
fn reductions_softmax_and_matmul() {
    let mut rng = Rng::new("reductions_softmax_and_matmul");
    let sum = |v: &[f64]| v.iter().sum::<f64>();
    let abs_sum = |v: &[f64]| v.iter().map(|x| x.abs()).sum::<f64>();
    let max = |v: &[f64]| v.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let min = |v: &[f64]| v.iter().cloned().fold(f64::INFINITY, f64::min);
    for dtype in [DType::F32, DType::F64, DType::I64] {
        for shape in [&[5][..], &[3, 4, 5][..], &[300, 250][..]] {
            let r = random(&mut rng, shape, dtype);
            let t = make(&r, dtype);
            let rank = shape.len();
            let w = format!("{dtype:?} {shape:?}");
            let at = acc_tol(dtype);
            assert_close_scaled(
                &read(&t.sum_all().unwrap()),
                &r.reduce(&[], false, sum),
                &r.reduce(&[], false, abs_sum),
                at,
                &format!("sum_all {w}"),
            );
            for d in 0..rank {
                let dim = d as isize - rank as isize;
                assert_close_scaled(
                    &read(&t.sum_dim(dim).unwrap()),
                    &r.reduce(&[d], false, sum),
                    &r.reduce(&[d], false, abs_sum),
                    at,
                    &format!("sum {d} {w}"),
                );
                assert_exact(
                    &read(&t.max(dim).unwrap().values),
                    &r.reduce(&[d], false, max),
                    &format!("max {d} {w}"),
                );
                assert_exact(
                    &read(&t.min(dim).unwrap().values),
                    &r.reduce(&[d], false, min),
                    &format!("min {d} {w}"),
                );
                let first = |v: &[f64], better: fn(f64, f64) -> bool| {
                    let mut b = 0;
                    for (i, &x) in v.iter().enumerate() {
                        if better(x, v[b]) {
                            b = i;
                        }
                    }
                    b as f64
                };
                assert_exact(
                    &read(&t.argmax(dim).unwrap()),
                    &r.reduce(&[d], false, |v| first(v, |x, y| x > y)),
                    &format!("argmax {d} {w}"),
                );
                assert_exact(
                    &read(&t.argmin(dim).unwrap()),
                    &r.reduce(&[d], false, |v| first(v, |x, y| x < y)),
                    &format!("argmin {d} {w}"),
                );
                if dtype != DType::I64 {
                    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
                    let scale = r.reduce(&[d], true, |v| abs_sum(v) / v.len() as f64);
                    assert_close_scaled(
                        &read(&t.mean_dims(&[dim], true).unwrap()),
                        &r.reduce(&[d], true, mean),
                        &scale,
                        at,
                        &format!("mean {d} {w}"),
                    );
                    assert_close(
                        &read(&t.softmax(dim).unwrap()),
                        &r.softmax(d, false),
                        20.0 * tol(dtype),
                        1e-30,
                        &format!("softmax {d} {w}"),
                    );
                    let scale = r.map(|x| x.abs() + 10.0);
                    assert_close_scaled(
                        &read(&t.log_softmax(dim).unwrap()),
                        &r.softmax(d, true),
                        &scale,
                        tol(dtype),
                        &format!("log_softmax {d} {w}"),
                    );
                }
            }
            if rank >= 2 && dtype != DType::I64 {
                let all: Vec<isize> = (0..rank as isize).collect();
                assert_close_scaled(
                    &read(&t.sum_dims(&all, true).unwrap()),
                    &r.reduce(&[], true, sum),
                    &r.reduce(&[], true, abs_sum),
                    at,
                    &format!("sum_dims(all) {w}"),
                );
                let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
                assert_close_scaled(
                    &read(&t.mean_all().unwrap()),
                    &r.reduce(&[], false, mean),
                    &r.reduce(&[], false, |v| abs_sum(v) / v.len() as f64),
                    at,
                    &format!("mean_all {w}"),
                );
            }
        }
    }
    for dtype in [DType::F32, DType::F64] {
        for (sa, sb) in [
            (&[3, 5][..], &[5, 4][..]),
            (&[40, 33][..], &[33, 35][..]),
            (&[2, 3, 4][..], &[4][..]),
            (&[5][..], &[5][..]),
        ] {
            let (ra, rb) = (random(&mut rng, sa, dtype), random(&mut rng, sb, dtype));
            let got = make(&ra, dtype).matmul(&make(&rb, dtype)).unwrap();
            assert_close_scaled(
                &read(&got),
                &ra.matmul(&rb),
                &ra.matmul_abs(&rb),
                acc_tol(dtype),
                &format!("matmul {dtype:?} {sa:?} {sb:?}"),
            );
        }
    }
}

#[test]
fn cat_stack_and_indexing_for_each_dtype() {
    let mut rng = Rng::new("cat_stack_and_indexing_for_each_dtype");
    for dtype in [DType::F32, DType::F64, DType::I64, DType::Bool] {
        let ra = random(&mut rng, &[3, 4], dtype);
        let rb = random(&mut rng, &[2, 4], dtype);
        let (a, b) = (make(&ra, dtype), make(&rb, dtype));
        assert_exact(
            &read(&DynTensor::cat(&[&a, &b, &a], 0).unwrap()),
            &Ref::cat(&[&ra, &rb, &ra], 0),
            &format!("cat {dtype:?}"),
        );
        let at = a.transpose(0, 1).unwrap();
        assert_exact(
            &read(&DynTensor::cat(&[&at, &at], -1).unwrap()),
            &Ref::cat(&[&ra.transpose(0, 1), &ra.transpose(0, 1)], 1),
            "cat strided",
        );
        for d in 0..3 {
            assert_exact(
                &read(&DynTensor::stack(&[&a, &a, &a], d as isize).unwrap()),
                &Ref::stack(&[&ra, &ra, &ra], d),
                &format!("stack {dtype:?} at {d}"),
            );
        }
        assert!(DynTensor::cat(&[], 0).is_err());
        assert!(DynTensor::stack(&[&a, &b], 0).is_err());
        let idx: Vec<usize> = vec![2, 0, 0, 3];
        let it = DynTensor::from_vec(
            idx.iter().map(|&i| i as i64).collect::<Vec<_>>(),
            [4],
            cpu(),
        )
        .unwrap();
        assert_exact(
            &read(&a.index_select(1, &it).unwrap()),
            &ra.index_select(1, &idx),
            &format!("index_select {dtype:?}"),
        );
        let gi = Ref::new(&[3, 2], vec![0.0, 3.0, 1.0, 1.0, 2.0, 0.0]);
        let gt = DynTensor::from_vec(
            gi.data.iter().map(|&v| v as i64).collect::<Vec<_>>(),
            [3, 2],
            cpu(),
        )
        .unwrap();
        assert_exact(
            &read(&a.gather(1, &gt).unwrap()),
            &ra.gather(1, &gi),
            &format!("gather {dtype:?}"),
        );
        // Negative and out-of-range indices are errors, never panics.
        for bad in [-1i64, 4, i64::MIN] {
            let it = DynTensor::from_vec(vec![0, bad], [2], cpu()).unwrap();
            assert!(a.index_select(1, &it).is_err(), "index_select {bad}");
            let gt = DynTensor::from_vec(vec![0, bad, 0, 0, 0, 0], [3, 2], cpu()).unwrap();
            assert_eq!(
                a.gather(1, &gt).unwrap_err().to_string(),
                format!("index {bad} is out of bounds for dimension 1 with size 4")
            );
        }
    }
}

#[test]
fn creation_and_conversion() {
    for dtype in [DType::F32, DType::F64, DType::I64, DType::Bool] {
        let t = DynTensor::full([2, 3], 2.0, dtype, cpu()).unwrap();
        assert_eq!(t.dtype(), dtype);
        assert_eq!(read(&t), as_dtype(&Ref::new(&[2, 3], vec![2.0; 6]), dtype));
        assert_eq!(
            read(&DynTensor::zeros_like(&t).unwrap()),
            Ref::new(&[2, 3], vec![0.0; 6])
        );
        assert_eq!(
            read(&DynTensor::ones_like(&t).unwrap()),
            Ref::new(&[2, 3], vec![1.0; 6])
        );
        assert_eq!(DynTensor::ones_like(&t).unwrap().dtype(), dtype);
        for to in [DType::F32, DType::F64, DType::I64, DType::Bool] {
            let r = Ref::new(&[4], vec![-1.5, 0.0, 2.75, 3.0]);
            let src = make(&r, dtype);
            let c = src.to_dtype(to).unwrap();
            assert_eq!(c.dtype(), to);
            assert_eq!(
                read(&c),
                as_dtype(&as_dtype(&r, dtype), to),
                "{dtype:?} -> {to:?}"
            );
        }
    }
    assert_eq!(
        read(&DynTensor::arange(5, cpu()).unwrap()).data,
        vec![0.0, 1.0, 2.0, 3.0, 4.0]
    );
    assert_eq!(DynTensor::zeros([2], cpu()).unwrap().dtype(), DType::F32);
    let t = DynTensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], [2, 3], cpu()).unwrap();
    assert_eq!(t.dim(), 2);
    assert_eq!(t.numel(), 6);
    assert_eq!(
        DynTensor::from_vec(vec![1.0f32; 5], [2, 3], cpu())
            .unwrap_err()
            .to_string(),
        "from_vec: 5 values cannot fill a tensor of shape [2, 3] (6 elements)"
    );
    let typed: Tensor<Cpu, f64> = t.clone().try_into_tensor().unwrap();
    assert_eq!(typed.to_vec(), vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert_eq!(
        t.to(cpu()).unwrap().to_vec::<f64>().unwrap(),
        typed.to_vec()
    );
    // Sizes whose product overflows are refused before anything is allocated.
    assert!(DynTensor::zeros([usize::MAX, 2], cpu()).is_err());
    assert!(DynTensor::rand([1 << 62, 1 << 62], cpu()).is_err());
    assert!(DynTensor::from_vec(vec![0f32; 2], [usize::MAX, 2], cpu()).is_err());
    assert_eq!(
        DynTensor::zeros([1usize << 62, 8], cpu())
            .unwrap_err()
            .to_string(),
        "Storage size calculation overflowed with sizes=[4611686018427387904, 8]"
    );
}

/// Operands of a few elements take a short path on the CPU (`ops::binary::tiny_float`); it
/// must give the general kernels' bits. The same values as views into a larger buffer (an
/// offset, so not the short path) are the reference, for every binary op, `f32` and `f64`,
/// ranks 0 and 1, on fresh random inputs (positive bases for `pow`).
#[test]
fn tiny_operands_give_the_general_paths_bits() {
    let mut rng = Rng::new("tiny_operands_give_the_general_paths_bits");
    // The table's element-wise binary ops, and `pow`, which that list leaves to the GPU
    // suites' ulp tolerance (here both sides run on the CPU and must agree bit for bit).
    let pow: (&str, ops::BinaryFn) = ("pow", DynTensor::pow);
    let ops = ops::BINARY.into_iter().chain([pow]);
    let bits = |t: &DynTensor| -> Vec<u64> {
        match t.dtype() {
            DType::F32 => t
                .to_vec::<f32>()
                .unwrap()
                .iter()
                .map(|v| v.to_bits() as u64)
                .collect(),
            _ => t
                .to_vec::<f64>()
                .unwrap()
                .iter()
                .map(|v| v.to_bits())
                .collect(),
        }
    };
    for dtype in [DType::F32, DType::F64] {
        for shape in [vec![], vec![1], vec![5], vec![8]] {
            for (name, op) in ops.clone() {
                let (a, b) = (
                    Ref::random(&mut rng, &shape, 0.1, 3.0),
                    Ref::random(&mut rng, &shape, -3.0, 3.0),
                );
                let (x, y) = (make(&a, dtype), make(&b, dtype));
                // The same values after one leading element: a view at offset 1.
                let n = a.data.len();
                let behind = |r: &Ref| {
                    let mut data = vec![0.5];
                    data.extend(&r.data);
                    let whole = make(
                        &Ref {
                            shape: vec![n + 1],
                            data,
                        },
                        dtype,
                    );
                    whole
                        .narrow(0, 1, n)
                        .unwrap()
                        .reshape(&shape.iter().map(|&s| s as isize).collect::<Vec<_>>())
                        .unwrap()
                };
                let (xv, yv) = (behind(&a), behind(&b));
                let got = op(&x, &y).unwrap();
                let want = op(&xv, &yv).unwrap();
                assert_eq!(got.shape(), want.shape(), "{name} {dtype:?} {shape:?}");
                assert_eq!(bits(&got), bits(&want), "{name} {dtype:?} {shape:?}");
            }
        }
    }
}
