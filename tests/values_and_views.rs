//! Values written into tensors: PyTorch's checked conversion of fill values and clamp bounds,
//! `arange`'s range checks, exact printing of large integers, and what an in-place op on a
//! view writes (the view is rebound; the tensor it was taken from keeps its values).

mod common;

use common::Rng;
use devtype::prelude::*;
use devtype::{DType, DynDevice, DynTensor};

const CPU: DynDevice = DynDevice::cpu();

fn err_text<T>(r: devtype::Result<T>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

fn overflow(type_name: &str) -> String {
    format!("value cannot be converted to type {type_name} without overflow")
}

/// PyTorch's `checked_convert` rule for a double into `dtype`, written out independently:
/// `None` when it fits, else the C++ type it names.
fn pytorch_refuses(v: f64, dtype: DType) -> Option<&'static str> {
    let (name, max, has_inf_nan) = match dtype {
        DType::F16 => ("c10::Half", 65504.0, true),
        DType::BF16 => ("c10::BFloat16", 3.3895313892515355e38, true),
        DType::F32 => ("float", 3.4028234663852886e38, true),
        DType::F64 | DType::Bool => return None,
        DType::I64 => ("int64_t", 9_223_372_036_854_775_808.0, false),
    };
    if has_inf_nan && (v.is_nan() || v.is_infinite()) {
        return None;
    }
    let out = v.is_nan() || v < -max || v > max || (dtype == DType::I64 && v >= max);
    out.then_some(name)
}

#[test]
fn full_refuses_a_value_its_dtype_cannot_hold_with_pytorchs_text() {
    // The cases recorded on PyTorch 2.15.
    assert_eq!(
        err_text(DynTensor::full([2], 1e6, DType::F16, CPU)),
        overflow("c10::Half")
    );
    assert_eq!(
        err_text(DynTensor::full([2], 1e30, DType::I64, CPU)),
        overflow("int64_t")
    );
    assert_eq!(
        err_text(DynTensor::full([2], f64::NAN, DType::I64, CPU)),
        overflow("int64_t")
    );
    assert_eq!(
        err_text(DynTensor::full([2], 1e300, DType::F32, CPU)),
        overflow("float")
    );
    assert_eq!(
        err_text(DynTensor::full([2], -1e39, DType::BF16, CPU)),
        overflow("c10::BFloat16")
    );
    // An integer scalar past f16's range is refused too (PyTorch's integral `overflows`).
    assert_eq!(
        err_text(DynTensor::full([2], 65505i64, DType::F16, CPU)),
        overflow("c10::Half")
    );
    // Infinities and NaN go into floating-point dtypes; anything goes into bool and f64.
    let inf = DynTensor::full([2], f64::NEG_INFINITY, DType::F16, CPU).unwrap();
    assert_eq!(
        inf.to_vec::<half::f16>().unwrap(),
        [half::f16::NEG_INFINITY; 2]
    );
    assert!(DynTensor::full([1], f64::NAN, DType::BF16, CPU).is_ok());
    assert_eq!(
        DynTensor::full([1], 1e30, DType::Bool, CPU)
            .unwrap()
            .to_vec::<bool>()
            .unwrap(),
        [true]
    );
    assert!(DynTensor::full([1], 1e300, DType::F64, CPU).is_ok());
    assert_eq!(
        DynTensor::full([1], 65504.0, DType::F16, CPU)
            .unwrap()
            .to_vec::<half::f16>()
            .unwrap(),
        [half::f16::MAX]
    );
    // Exact integers stay exact.
    assert_eq!(
        DynTensor::full([1], i64::MAX, DType::I64, CPU)
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        [i64::MAX]
    );
    // The *_like fills go through the same check.
    assert!(DynTensor::ones_like(&DynTensor::zeros([2], CPU).unwrap()).is_ok());
}

#[test]
fn full_follows_pytorchs_rule_on_random_values() {
    let mut rng = Rng::new("full_rule");
    let dtypes = [
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
        DType::I64,
        DType::Bool,
    ];
    for _ in 0..2000 {
        let v = match rng.below(6) {
            0 => f64::NAN,
            1 => f64::INFINITY * if rng.chance(0.5) { 1.0 } else { -1.0 },
            // Near the edges of each range.
            2 => rng.pick(&[
                65504.0,
                65505.0,
                65519.0,
                3.39e38,
                3.41e38,
                9_223_372_036_854_775_808.0,
            ]),
            _ => {
                let mag = 10f64.powf(rng.uniform(-5.0, 45.0));
                if rng.chance(0.5) {
                    mag
                } else {
                    -mag
                }
            }
        };
        let dtype = rng.pick(&dtypes);
        let got = DynTensor::full([1], v, dtype, CPU);
        match pytorch_refuses(v, dtype) {
            Some(name) => assert_eq!(err_text(got), overflow(name), "{v} as {dtype:?}"),
            None => assert!(got.is_ok(), "{v} as {dtype:?}: {:?}", got.err()),
        }
    }
}

#[test]
fn a_clamp_bound_is_checked_but_scalar_arithmetic_is_not() {
    let x = DynTensor::zeros([2], CPU)
        .unwrap()
        .to_dtype(DType::F16)
        .unwrap();
    // clamp converts its bound with checked_convert (PyTorch's clamp_min_scalar_kernel_impl).
    assert_eq!(err_text(x.clamp_min(1e6)), overflow("c10::Half"));
    assert_eq!(err_text(x.clamp_max(-1e6)), overflow("c10::Half"));
    assert_eq!(err_text(x.clamp(0.0, 1e6)), overflow("c10::Half"));
    assert_eq!(
        x.clamp_min(100.0).unwrap().to_vec::<half::f16>().unwrap(),
        [half::f16::from_f32(100.0); 2]
    );
    // Arithmetic with a scalar computes in the result dtype, unchecked, as PyTorch's
    // `x_f16 + 1e6` and `x_f16 += 1e6` (both give inf).
    let mut y = x.clone();
    y.add_scalar_(1e6).unwrap();
    assert_eq!(y.to_vec::<half::f16>().unwrap(), [half::f16::INFINITY; 2]);
    assert_eq!(
        x.add_scalar(1e6).unwrap().to_vec::<half::f16>().unwrap(),
        [half::f16::INFINITY; 2]
    );
}

#[test]
fn arange_checks_its_range_as_pytorch() {
    let sign = "upper bound and lower bound inconsistent with step sign";
    assert_eq!(
        err_text(Tensor::<Cpu>::try_arange_step(0.0, 1.0, -1.0, Cpu)),
        sign
    );
    assert_eq!(
        err_text(Tensor::<Cpu>::try_arange_step(1.0, 0.0, 0.5, Cpu)),
        sign
    );
    assert_eq!(
        err_text(DynTensor::arange_step(0.0, 1.0, -1.0, DType::F32, CPU)),
        sign
    );
    assert_eq!(
        err_text(Tensor::<Cpu>::try_arange_step(0.0, f64::NAN, 1.0, Cpu)),
        "unsupported range: 0 -> nan"
    );
    assert_eq!(
        err_text(DynTensor::arange_step(
            f64::NEG_INFINITY,
            2.5,
            1.0,
            DType::F64,
            CPU
        )),
        "unsupported range: -inf -> 2.5"
    );
    assert_eq!(
        err_text(Tensor::<Cpu>::try_arange_step(0.0, 1.0, 0.0, Cpu)),
        "step must be nonzero"
    );
    assert_eq!(
        err_text(Tensor::<Cpu>::try_arange_step(0.0, 1.0, f64::NAN, Cpu)),
        "step must be nonzero"
    );
    // Integers: converted (checked, truncated) first, as PyTorch's int64 accumulate type.
    assert_eq!(
        err_text(Tensor::<Cpu, i64>::try_arange_step(0.0, f64::NAN, 1.0, Cpu)),
        overflow("int64_t")
    );
    assert_eq!(
        Tensor::<Cpu, i64>::arange_step(0.0, 10.0, 2.5, Cpu).to_vec(),
        [0, 2, 4, 6, 8]
    );
    assert_eq!(
        Tensor::<Cpu, i64>::arange_step(7.0, -3.0, -3.0, Cpu).to_vec(),
        [7, 4, 1, -2]
    );
    assert_eq!(
        err_text(Tensor::<Cpu, i64>::try_arange_step(0.0, 1.0, 0.5, Cpu)),
        "step must be nonzero"
    );
    // An empty range with a consistent sign is fine.
    assert_eq!(
        Tensor::<Cpu>::arange_step(1.0, 1.0, -1.0, Cpu).shape(),
        &[0]
    );
    // Random ranges: the count and values of the definition, on both fronts.
    let mut rng = Rng::new("arange_step");
    for _ in 0..200 {
        let start = rng.uniform(-50.0, 50.0);
        let step = rng.uniform(0.1, 5.0) * if rng.chance(0.5) { 1.0 } else { -1.0 };
        let end = start + step * rng.uniform(0.0, 40.0);
        let n = ((end - start) / step).ceil() as usize;
        let want: Vec<f64> = (0..n).map(|i| start + i as f64 * step).collect();
        assert_eq!(
            Tensor::<Cpu, f64>::arange_step(start, end, step, Cpu).to_vec(),
            want
        );
        let d = DynTensor::arange_step(start, end, step, DType::F64, CPU).unwrap();
        assert_eq!(d.to_vec::<f64>().unwrap(), want);
        // Swapping the bounds points the step away from the end.
        if n > 1 {
            assert_eq!(
                err_text(DynTensor::arange_step(end, start, step, DType::F32, CPU)),
                sign
            );
        }
    }
}

#[test]
fn large_integers_print_exactly() {
    let t = Tensor::from_vec(vec![9007199254740993i64], [1], Cpu);
    assert_eq!(t.to_string(), "tensor([9007199254740993])");
    // Random integers of every size: the printed numbers parse back to the values, on both
    // fronts, in every layout the printer takes (one row, rows, summarised).
    let mut rng = Rng::new("print_i64");
    for n in [1usize, 5, 12, 1500] {
        let values: Vec<i64> = (0..n)
            .map(|_| {
                (rng.next_u64() >> rng.below(64)) as i64 * if rng.chance(0.5) { 1 } else { -1 }
            })
            .collect();
        let shape = if n == 12 { vec![3, 4] } else { vec![n] };
        let typed = Tensor::from_vec(values.clone(), &shape, Cpu).to_string();
        let dynamic = DynTensor::from_vec(values.clone(), &shape, CPU)
            .unwrap()
            .to_string();
        assert_eq!(typed, dynamic);
        let printed: Vec<i64> = typed
            .trim_start_matches("tensor(")
            .split(|c: char| !(c.is_ascii_digit() || c == '-'))
            .filter(|w| !w.is_empty())
            .map(|w| w.parse().unwrap())
            .collect();
        let want: Vec<i64> = if n > 1000 {
            [&values[..3], &values[n - 3..]].concat()
        } else {
            values.clone()
        };
        assert_eq!(printed, want, "{typed}");
    }
}

/// The view kinds the randomised test takes of a `[r, c]` base, with the storage offsets of
/// the view's elements in row-major order of the view (a reference model of the storage).
#[derive(Clone, Copy, Debug)]
enum ViewKind {
    /// `narrow(0, start, len)`.
    Rows(usize, usize),
    /// `narrow(1, start, len)`.
    Cols(usize, usize),
    /// `t()`.
    Transpose,
    /// `view([r * c])`.
    Flat,
    /// `narrow(0, i, 1).squeeze(0)`: PyTorch's `select(0, i)`.
    Row(usize),
}

impl ViewKind {
    fn random(rng: &mut Rng, r: usize, c: usize) -> ViewKind {
        match rng.below(5) {
            0 => {
                let s = rng.below(r);
                ViewKind::Rows(s, 1 + rng.below(r - s))
            }
            1 => {
                let s = rng.below(c);
                ViewKind::Cols(s, 1 + rng.below(c - s))
            }
            2 => ViewKind::Transpose,
            3 => ViewKind::Flat,
            _ => ViewKind::Row(rng.below(r)),
        }
    }

    /// Offsets into the `[r, c]` storage, in the view's row-major order, and the view's shape.
    fn offsets(self, r: usize, c: usize) -> (Vec<usize>, Vec<usize>) {
        match self {
            ViewKind::Rows(s, n) => ((s * c..(s + n) * c).collect(), vec![n, c]),
            ViewKind::Cols(s, n) => (
                (0..r)
                    .flat_map(|i| (s..s + n).map(move |j| i * c + j))
                    .collect(),
                vec![r, n],
            ),
            ViewKind::Transpose => (
                (0..c)
                    .flat_map(|j| (0..r).map(move |i| i * c + j))
                    .collect(),
                vec![c, r],
            ),
            ViewKind::Flat => ((0..r * c).collect(), vec![r * c]),
            ViewKind::Row(i) => ((i * c..(i + 1) * c).collect(), vec![c]),
        }
    }

    fn typed<D: Device>(self, t: &Tensor<D, f64>) -> Tensor<D, f64> {
        match self {
            ViewKind::Rows(s, n) => t.narrow(0, s, n),
            ViewKind::Cols(s, n) => t.narrow(1, s, n),
            ViewKind::Transpose => t.t(),
            ViewKind::Flat => t.view(&[-1]),
            ViewKind::Row(i) => t.narrow(0, i, 1).squeeze(0),
        }
    }

    fn dynamic(self, t: &DynTensor) -> DynTensor {
        match self {
            ViewKind::Rows(s, n) => t.narrow(0, s, n).unwrap(),
            ViewKind::Cols(s, n) => t.narrow(1, s, n).unwrap(),
            ViewKind::Transpose => t.t().unwrap(),
            ViewKind::Flat => t.view(&[-1]).unwrap(),
            ViewKind::Row(i) => t.narrow(0, i, 1).unwrap().squeeze(0).unwrap(),
        }
    }
}

fn apply(op: usize, x: f64, y: f64) -> f64 {
    match op {
        0 => x + y,
        1 => x - y,
        2 => x * y,
        _ => x / y,
    }
}

/// Random in-place ops on random views of random tensors, on both fronts and on `dev`: each
/// view holds exactly the reference values of its elements after the ops; the base, every
/// other view and a clone keep theirs (nothing is written through a shared storage). Writing
/// the result back with `slice_scatter` gives what PyTorch's write-through gives, computed on
/// a reference model of the storage in plain `Vec` arithmetic.
fn in_place_ops_on_views_are_values_on<D: Device + HostSync>(dev: D, seed: &str) {
    let mut rng = Rng::new(seed);
    for _ in 0..60 {
        let (r, c) = (1 + rng.below(5), 1 + rng.below(5));
        let storage = rng.values(r * c, -4.0, 4.0);
        let base = Tensor::from_vec(storage.clone(), [r, c], dev);
        let dbase: DynTensor = base.clone().into();
        let clone = base.clone();
        let kind = ViewKind::random(&mut rng, r, c);
        let (offsets, shape) = kind.offsets(r, c);
        let mut view = kind.typed(&base);
        let mut dview = kind.dynamic(&dbase);
        let other = ViewKind::Flat.typed(&base);
        let mut want: Vec<f64> = offsets.iter().map(|&o| storage[o]).collect();
        for _ in 0..1 + rng.below(4) {
            let op = rng.below(4);
            if rng.chance(0.5) {
                let s = rng.uniform(0.5, 2.0);
                match op {
                    0 => view += s,
                    1 => view -= s,
                    2 => view *= s,
                    _ => view /= s,
                }
                match op {
                    0 => dview.add_scalar_(s),
                    1 => dview.sub_scalar_(s),
                    2 => dview.mul_scalar_(s),
                    _ => dview.div_scalar_(s),
                }
                .unwrap();
                want.iter_mut().for_each(|w| *w = apply(op, *w, s));
            } else {
                let vals = rng.values(want.len(), 0.5, 2.0);
                let rhs = Tensor::from_vec(vals.clone(), &shape, dev);
                let drhs: DynTensor = rhs.clone().into();
                match op {
                    0 => view += &rhs,
                    1 => view -= &rhs,
                    2 => view *= &rhs,
                    _ => view /= &rhs,
                }
                match op {
                    0 => dview.add_(&drhs),
                    1 => dview.sub_(&drhs),
                    2 => dview.mul_(&drhs),
                    _ => dview.div_(&drhs),
                }
                .unwrap();
                for (w, v) in want.iter_mut().zip(&vals) {
                    *w = apply(op, *w, *v);
                }
            }
        }
        assert_eq!(view.shape(), &shape[..], "{kind:?}");
        assert_eq!(view.to_vec(), want, "{kind:?}");
        assert_eq!(dview.to_vec::<f64>().unwrap(), want, "{kind:?}");
        // Nothing else changed.
        assert_eq!(base.to_vec(), storage, "{kind:?}");
        assert_eq!(dbase.to_vec::<f64>().unwrap(), storage, "{kind:?}");
        assert_eq!(clone.to_vec(), storage, "{kind:?}");
        assert_eq!(other.to_vec(), storage, "{kind:?}");
        // PyTorch's write-through, on the reference storage; slice_scatter gives it.
        let mut written = storage.clone();
        for (&o, &w) in offsets.iter().zip(&want) {
            written[o] = w;
        }
        let scattered = match kind {
            ViewKind::Rows(s, n) => Some((
                base.slice_scatter(&view, 0, s, s + n),
                dbase.slice_scatter(&dview, 0, s, s + n).unwrap(),
            )),
            ViewKind::Cols(s, n) => Some((
                base.slice_scatter(&view, 1, s, s + n),
                dbase.slice_scatter(&dview, 1, s, s + n).unwrap(),
            )),
            ViewKind::Row(i) => Some((
                base.select_scatter(&view, 0, i as isize),
                dbase.select_scatter(&dview, 0, i as isize).unwrap(),
            )),
            ViewKind::Transpose | ViewKind::Flat => None,
        };
        if let Some((t, d)) = scattered {
            assert_eq!(t.to_vec(), written, "{kind:?}");
            assert_eq!(d.to_vec::<f64>().unwrap(), written, "{kind:?}");
        }
    }
}

#[test]
fn in_place_ops_on_views_rebind_the_view_and_leave_the_storage() {
    in_place_ops_on_views_are_values_on(Cpu, "views_cpu");
    if let Some(gpu) = common::gpu() {
        in_place_ops_on_views_are_values_on(gpu, "views_gpu");
    }
}

#[test]
fn the_issues_example_and_an_expanded_view() {
    let base = Tensor::<Cpu>::zeros([4], Cpu);
    let mut v = base.narrow(0, 0, 2);
    v += 1.0;
    assert_eq!(v.to_vec(), [1.0, 1.0]);
    assert_eq!(base.to_vec(), [0.0; 4]);
    assert_eq!(
        base.slice_scatter(&v, 0, 0, 2).to_vec(),
        [1.0, 1.0, 0.0, 0.0]
    );
    let one = Tensor::<Cpu>::zeros([1], Cpu);
    let mut e = one.expand(&[3]);
    e += &Tensor::from_vec(vec![1.0f32, 2.0, 3.0], [3], Cpu);
    assert_eq!(e.to_vec(), [1.0, 2.0, 3.0]);
    assert_eq!(one.to_vec(), [0.0]);
    // Bounds clamp as a Python slice's; a wrong-sized source is PyTorch's error.
    assert_eq!(
        base.slice_scatter(Tensor::ones([1], Cpu), 0, 3, 100)
            .to_vec(),
        [0.0, 0.0, 0.0, 1.0]
    );
    assert_eq!(
        err_text(base.try_slice_scatter(Tensor::ones([3], Cpu), 0, 0, 2)),
        "expected src to have a size equal to the slice of self. src size = [3], slice size = [2]"
    );
    assert_eq!(
        err_text(base.try_select_scatter(Tensor::scalar(1.0, Cpu), 0, 4)),
        "select(): index 4 out of range for tensor of size [4] at dimension 0"
    );
    let d = DynTensor::zeros([2, 2], CPU).unwrap();
    let longs = DynTensor::from_vec(vec![7i64, 8], [2], CPU).unwrap();
    assert_eq!(
        d.select_scatter(&longs, 1, -1)
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        [0.0, 7.0, 0.0, 8.0]
    );
}

#[test]
fn a_tensor_saved_for_backward_is_never_changed_by_a_later_in_place_op() {
    // PyTorch would raise "modified by an inplace operation" at backward; here `a += 1`
    // rebinds `a`, the saved value is the one `tanh` saw, and the gradient is right.
    let mut rng = Rng::new("saved");
    let xs = rng.values(5, -2.0, 2.0);
    let p = Tensor::parameter(Tensor::from_vec(xs.clone(), [5], Cpu));
    let mut a = &p * 2.0;
    let b = a.tanh();
    a += 1.0;
    a *= &Tensor::from_vec(vec![3.0f64; 5], [5], Cpu);
    b.sum_all().backward();
    let want: Vec<f64> = xs
        .iter()
        .map(|x| 2.0 * (1.0 - (2.0 * x).tanh().powi(2)))
        .collect();
    let got = p.grad().unwrap().to_vec();
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() < 1e-12, "{got:?} vs {want:?}");
    }
    assert_eq!(
        a.to_vec(),
        xs.iter().map(|x| (2.0 * x + 1.0) * 3.0).collect::<Vec<_>>()
    );
    // The gradient flows through the rebound `a` too.
    let p2 = Tensor::parameter(Tensor::from_vec(xs.clone(), [5], Cpu));
    let mut a2 = &p2 * 2.0;
    a2 += 1.0;
    a2.sum_all().backward();
    assert_eq!(p2.grad().unwrap().to_vec(), [2.0; 5]);
}

#[test]
fn a_dynamic_parameter_updated_in_place_under_no_grad_stays_a_parameter() {
    let mut w = DynTensor::parameter(DynTensor::ones([3], CPU).unwrap()).unwrap();
    let step = DynTensor::full([3], 0.25, DType::F32, CPU).unwrap();
    no_grad(|| w.sub_(&step)).unwrap();
    no_grad(|| w.mul_scalar_(2.0)).unwrap();
    assert_eq!(w.to_vec::<f32>().unwrap(), [1.5; 3]);
    assert!(
        w.requires_grad(),
        "the in-place update dropped the parameter's leaf"
    );
    w.mul(&w).unwrap().sum_all().unwrap().backward().unwrap();
    assert_eq!(w.grad().unwrap().to_vec::<f32>().unwrap(), [3.0; 3]);
}

#[test]
fn slice_scatter_passes_gradients_to_both_inputs() {
    let mut rng = Rng::new("scatter_grad");
    let x = Tensor::parameter(Tensor::from_vec(rng.values(12, -1.0, 1.0), [3, 4], Cpu));
    let src = Tensor::parameter(Tensor::from_vec(rng.values(6, -1.0, 1.0), [3, 2], Cpu));
    let w = rng.values(12, -1.0, 1.0);
    let out = x.slice_scatter(&src, 1, 1, 3);
    (&out * &Tensor::from_vec(w.clone(), [3, 4], Cpu))
        .sum_all()
        .backward();
    // d/dx: w outside the slice, 0 inside; d/dsrc: w inside the slice.
    let gx: Vec<f64> = (0..12)
        .map(|k| if (1..3).contains(&(k % 4)) { 0.0 } else { w[k] })
        .collect();
    let gs: Vec<f64> = (0..12)
        .filter(|k| (1..3).contains(&(k % 4)))
        .map(|k| w[k])
        .collect();
    assert_eq!(x.grad().unwrap().to_vec(), gx);
    assert_eq!(src.grad().unwrap().to_vec(), gs);
}
