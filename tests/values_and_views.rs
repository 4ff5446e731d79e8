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
        DType::I64 => ("int64_t", 9.223372036854775807e18, false),
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
                9.2233720368547758e18,
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
