//! Type promotion on `DynTensor`, as `torch.result_type`
//! (https://pytorch.org/docs/stable/tensor_attributes.html#type-promotion-doc).
//!
//! The expected dtypes below are written out by hand from PyTorch's documented rules, not
//! computed by devtype's own promotion code:
//!
//! - categories rank bool < integer < floating point; an operand of a higher category wins;
//! - within a category the wider type wins; `float16` with `bfloat16` is `float32` (neither
//!   holds the other: `torch.promote_types(torch.float16, torch.bfloat16)`);
//! - tensors with dimensions outrank 0-dim tensors, which outrank wrapped numbers (Rust
//!   scalars); a lower class only counts when its category is higher than every class above
//!   it, and a float scalar then counts as the default dtype, `float32`;
//! - an in-place op whose result type cannot be cast to its output (float to integer, anything
//!   but bool to bool) fails with `result type Float can't be cast to the desired output type
//!   Long`.

use devtype::prelude::*;
use devtype::{ResultType, Scalar};

const B: DType = DType::Bool;
const L: DType = DType::I64;
const H: DType = DType::F16;
const BF: DType = DType::BF16;
const F: DType = DType::F32;
const D: DType = DType::F64;

/// `torch.promote_types(row, column)` for every pair (both tensors with dimensions).
const PAIRS: [(DType, [DType; 6]); 6] = [
    //     with: Bool I64 F16 BF16 F32 F64
    (B, [B, L, H, BF, F, D]),
    (L, [L, L, H, BF, F, D]),
    (H, [H, H, H, F, F, D]),
    (BF, [BF, BF, F, BF, F, D]),
    (F, [F, F, F, F, F, D]),
    (D, [D, D, D, D, D, D]),
];
const COLUMNS: [DType; 6] = [B, L, H, BF, F, D];

/// A tensor of `dtype` with values exact in every dtype: `[1, 0, 3]` (as booleans
/// `[true, false, true]`), shaped `shape`.
fn tensor(dtype: DType, shape: &[usize]) -> DynTensor {
    let values: Vec<f64> = vec![1.0, 0.0, 3.0];
    let n: usize = shape.iter().product();
    let t = DynTensor::from_vec(values[..n].to_vec(), shape, DynDevice::cpu()).unwrap();
    t.to_dtype(dtype).unwrap()
}

/// The values `tensor(dtype, [3])` holds.
fn held(dtype: DType) -> [f64; 3] {
    if dtype == DType::Bool {
        [1.0, 0.0, 1.0]
    } else {
        [1.0, 0.0, 3.0]
    }
}

fn values(t: &DynTensor) -> Vec<f64> {
    t.to_dtype(DType::F64).unwrap().to_vec::<f64>().unwrap()
}

fn err<T>(r: devtype::Result<T>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn promote_types_matches_the_documented_table() {
    for (row, expected) in PAIRS {
        for (col, want) in COLUMNS.into_iter().zip(expected) {
            assert_eq!(DType::promote_types(row, col), want, "{row:?} with {col:?}");
        }
    }
}

#[test]
fn binary_ops_on_tensors_promote_and_compute_in_the_result_type() {
    for (row, expected) in PAIRS {
        for (col, want) in COLUMNS.into_iter().zip(expected) {
            let (a, b) = (tensor(row, &[3]), tensor(col, &[3]));
            assert_eq!(a.result_type(&b), want, "result_type({row:?}, {col:?})");
            if want == DType::Bool {
                // `bool + bool` is refused by devtype's arithmetic; the comparison promotes.
                assert_eq!(a.eq(&b).unwrap().dtype(), DType::Bool);
                continue;
            }
            let sum = a.add(&b).unwrap();
            assert_eq!(sum.dtype(), want, "{row:?} + {col:?}");
            // Small integers: exact in every dtype.
            let (x, y) = (held(row), held(col));
            let want_sum: Vec<f64> = (0..3).map(|i| x[i] + y[i]).collect();
            let want_prod: Vec<f64> = (0..3).map(|i| x[i] * y[i]).collect();
            assert_eq!(values(&sum), want_sum, "{row:?} + {col:?}");
            let prod = b.mul(&a).unwrap();
            assert_eq!(prod.dtype(), want, "{col:?} * {row:?}");
            assert_eq!(values(&prod), want_prod, "{col:?} * {row:?}");
        }
    }
}

#[test]
fn scalars_and_zero_dim_tensors_count_only_by_category() {
    let s_float = Scalar::Float(2.5);
    let s_int = Scalar::Int(2);
    let s_bool = Scalar::Bool(true);
    // (tensor dtype, its rank, scalar, expected): the wrapped-number rule.
    let scalar_cases = [
        (B, 1, s_bool, B),
        (B, 1, s_int, L),
        (B, 1, s_float, F),
        (L, 1, s_bool, L),
        (L, 1, s_int, L),
        (L, 1, s_float, F), // i64_tensor * 2.5 -> float32
        (H, 1, s_int, H),
        (H, 1, s_float, H), // f16_tensor * 2.5 stays float16
        (BF, 1, s_float, BF),
        (F, 1, s_float, F),
        (D, 1, s_float, D),
        (D, 1, s_int, D),
        (L, 0, s_float, F), // a 0-dim int64 tensor with a float: float32
        (D, 0, s_float, D), // a 0-dim float64 tensor outranks the scalar
        (H, 0, s_int, H),
    ];
    for (dtype, rank, s, want) in scalar_cases {
        let t = tensor(dtype, if rank == 0 { &[] } else { &[3] });
        assert_eq!(
            t.result_type_scalar(s),
            want,
            "{dtype:?}[rank {rank}] with {s:?}"
        );
    }
    // (dim tensor, 0-dim tensor, expected).
    let zero_dim_cases = [
        (F, D, F),   // the documented case: a 0-dim float64 does not widen a float32 tensor
        (L, D, D),   // ... but a higher category does count
        (L, H, H),   // int64 tensor with a 0-dim float16: float16
        (H, F, H),   // float16 tensor with a 0-dim float32: float16
        (B, L, L),   // bool tensor with a 0-dim int64: int64
        (B, D, D),   // bool tensor with a 0-dim float64: float64
        (BF, H, BF), // bfloat16 tensor with a 0-dim float16: bfloat16
        (L, L, L),
    ];
    for (dim, zero, want) in zero_dim_cases {
        let (a, b) = (tensor(dim, &[3]), tensor(zero, &[]));
        assert_eq!(a.result_type(&b), want, "{dim:?}[3] with {zero:?}[]");
        assert_eq!(b.result_type(&a), want, "{zero:?}[] with {dim:?}[3]");
        let sum = a.add(&b).unwrap();
        assert_eq!(sum.dtype(), want);
        let x = held(dim);
        let want_sum: Vec<f64> = x.iter().map(|v| v + 1.0).collect();
        assert_eq!(values(&sum), want_sum, "{dim:?}[3] + {zero:?}[]");
    }
    // Only 0-dim tensors: ordinary promotion among them.
    let (a, b) = (tensor(H, &[]), tensor(BF, &[]));
    assert_eq!(a.add(&b).unwrap().dtype(), F);
    let (a, b) = (tensor(L, &[]), tensor(F, &[]));
    assert_eq!(a.add(&b).unwrap().dtype(), F);
    // The public state machine agrees with the tensor form.
    assert_eq!(
        ResultType::new()
            .tensor(L, 2)
            .tensor(D, 0)
            .scalar(s_float)
            .finish(),
        D
    );
}

#[test]
fn scalar_ops_promote_with_the_right_values() {
    let longs = DynTensor::from_vec(vec![1i64, -2, 3], [3], DynDevice::cpu()).unwrap();
    let r = longs.mul_scalar(2.5).unwrap();
    assert_eq!(r.dtype(), F);
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![2.5, -5.0, 7.5]);
    let r = longs.add_scalar(2).unwrap();
    assert_eq!(r.dtype(), L);
    assert_eq!(r.to_vec::<i64>().unwrap(), vec![3, 0, 5]);
    let r = (&longs * 0.5).to_vec::<f32>().unwrap();
    assert_eq!(r, vec![0.5, -1.0, 1.5]);
    // f16 keeps its dtype; the scalar is used at f32 precision (PyTorch's opmath), so
    // 3 * 0.1 rounds once: f16(0.3f32), not f16(3 * f16(0.1)).
    let halves = tensor(H, &[3]);
    let r = halves.mul_scalar(0.1).unwrap();
    assert_eq!(r.dtype(), H);
    let want: Vec<f16> = [0.1f32, 0.0, 0.3f32]
        .iter()
        .map(|&v| f16::from_f32(v))
        .collect();
    assert_eq!(r.to_vec::<f16>().unwrap(), want);
    assert_ne!(
        f16::from_f32(3.0 * f16::from_f32(0.1).to_f32()),
        f16::from_f32(0.3),
        "the check above could not tell the two roundings apart"
    );
    // Bool tensors with an integer scalar become int64.
    let bools = tensor(B, &[3]);
    let r = bools.add_scalar(2).unwrap();
    assert_eq!(r.dtype(), L);
    assert_eq!(r.to_vec::<i64>().unwrap(), vec![3, 2, 3]);
    // clamp on integers with float bounds is computed in float32.
    let r = longs.clamp(-1.5, 2.5).unwrap();
    assert_eq!(r.dtype(), F);
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![1.0, -1.5, 2.5]);
}

#[test]
fn comparisons_run_in_the_promoted_type() {
    // f32(0.1) = 0.100000001490116...: greater than f64's 0.1 when compared in float64, equal
    // when the float64 is rounded to float32 first.
    let a = DynTensor::from_vec(vec![0.1f32], [1], DynDevice::cpu()).unwrap();
    let b = DynTensor::from_vec(vec![0.1f64], [1], DynDevice::cpu()).unwrap();
    assert_eq!(a.gt(&b).unwrap().to_vec::<bool>().unwrap(), vec![true]);
    assert_eq!(a.eq(&b).unwrap().to_vec::<bool>().unwrap(), vec![false]);
    assert_eq!(b.lt(&a).unwrap().to_vec::<bool>().unwrap(), vec![true]);
    // int64 with float32: 2 < 2.5.
    let i = DynTensor::from_vec(vec![2i64, 3], [2], DynDevice::cpu()).unwrap();
    let f = DynTensor::from_vec(vec![2.5f32, 2.5], [2], DynDevice::cpu()).unwrap();
    assert_eq!(
        i.lt(&f).unwrap().to_vec::<bool>().unwrap(),
        vec![true, false]
    );
}

#[test]
fn in_place_ops_refuse_a_wider_category() {
    let cpu = DynDevice::cpu();
    let mut longs = DynTensor::from_vec(vec![1i64, 2], [2], cpu).unwrap();
    let floats = DynTensor::from_vec(vec![0.5f32, 0.5], [2], cpu).unwrap();
    assert_eq!(
        err(longs.add_(&floats)),
        "result type Float can't be cast to the desired output type Long"
    );
    assert_eq!(
        err(longs.mul_scalar_(1.5)),
        "result type Float can't be cast to the desired output type Long"
    );
    let doubles = DynTensor::from_vec(vec![0.5f64, 0.5], [2], cpu).unwrap();
    assert_eq!(
        err(longs.sub_(&doubles)),
        "result type Double can't be cast to the desired output type Long"
    );
    let mut bools = tensor(B, &[2]);
    assert_eq!(
        err(bools.add_(&longs)),
        "result type Long can't be cast to the desired output type Bool"
    );
    // Nothing was written by the refused ops.
    assert_eq!(longs.to_vec::<i64>().unwrap(), vec![1, 2]);
    // Same category: allowed, and the result keeps the output's dtype.
    longs.add_scalar_(5).unwrap();
    assert_eq!(longs.to_vec::<i64>().unwrap(), vec![6, 7]);
    let mut f32s = DynTensor::from_vec(vec![1.0f32, 2.0], [2], cpu).unwrap();
    f32s.add_(&doubles).unwrap();
    assert_eq!(f32s.dtype(), F);
    assert_eq!(f32s.to_vec::<f32>().unwrap(), vec![1.5, 2.5]);
    f32s.mul_(&longs).unwrap();
    assert_eq!(f32s.to_vec::<f32>().unwrap(), vec![9.0, 17.5]);
    let mut halves = tensor(H, &[2]);
    halves
        .div_(&tensor(BF, &[2]))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(halves.dtype(), H);
    let got = halves.to_vec::<f16>().unwrap();
    assert_eq!(got[0], f16::ONE);
    assert!(got[1].is_nan(), "0 / 0");
    let mut halves = tensor(H, &[3]);
    halves.mul_scalar_(2.5).unwrap();
    assert_eq!(values(&halves), vec![2.5, 0.0, 7.5]);
    // The broadcast must keep the output's shape (PyTorch's text).
    let mut row = tensor(F, &[3]);
    assert_eq!(
        err(row.add_(&DynTensor::ones([2, 3], cpu).unwrap())),
        "output with shape [3] doesn't match the broadcast shape [2, 3]"
    );
}

#[test]
fn the_typed_front_keeps_dtypes_exact() {
    let h = Tensor::from_vec(vec![f16::from_f32(1.5), f16::from_f32(-2.0)], [2], Cpu);
    let r: Tensor<Cpu, f16> = h.mul_scalar(f16::from_f32(2.5));
    assert_eq!(r.to_vec(), vec![f16::from_f32(3.75), f16::from_f32(-5.0)]);
    let l = Tensor::from_vec(vec![3i64, -4], [2], Cpu);
    let r: Tensor<Cpu, i64> = l.add(&l);
    assert_eq!(r.to_vec(), vec![6, -8]);
}

#[test]
fn promotion_keeps_gradients_in_each_operands_dtype() {
    let cpu = DynDevice::cpu();
    let a =
        DynTensor::parameter(DynTensor::from_vec(vec![1.0f32, 2.0], [2], cpu).unwrap()).unwrap();
    let b =
        DynTensor::parameter(DynTensor::from_vec(vec![3.0f64, 4.0], [2], cpu).unwrap()).unwrap();
    let y = a.mul(&b).unwrap();
    assert_eq!(y.dtype(), D);
    y.sum_all().unwrap().backward().unwrap();
    let ga = a.grad().unwrap();
    let gb = b.grad().unwrap();
    assert_eq!(ga.dtype(), F);
    assert_eq!(gb.dtype(), D);
    assert_eq!(ga.to_vec::<f32>().unwrap(), vec![3.0, 4.0]);
    assert_eq!(gb.to_vec::<f64>().unwrap(), vec![1.0, 2.0]);
}

/// The README's example, verbatim.
#[test]
fn readme_example() -> devtype::Result<()> {
    let cpu = DynDevice::cpu();
    let longs = DynTensor::from_vec(vec![1i64, 2], [2], cpu)?;
    assert_eq!(longs.mul_scalar(2.5)?.dtype(), DType::F32); // i64 * 2.5 -> float32
    let halves = longs.to_dtype(DType::F16)?;
    assert_eq!(halves.mul_scalar(2.5)?.dtype(), DType::F16); // stays float16
    let doubles = DynTensor::full([2], 1.0, DType::F64, cpu)?;
    assert_eq!(halves.add(&doubles)?.dtype(), DType::F64);
    let mut acc = longs.clone();
    assert_eq!(
        acc.add_(&halves).unwrap_err().to_string(),
        "result type Half can't be cast to the desired output type Long"
    );
    Ok(())
}
