//! Broadcasting element-wise arithmetic, with tensors or scalars: forward, backward rules
//! (gradients summed back to each input's shape), comparisons, and their declarations.

use super::declare::declare_ops;
use super::kit::{self, sum_to};
use crate::core::error::{Error, Result};
use crate::core::raw::Operand;
use crate::core::raw::RawTensor;
use crate::core::{DType, Element, ResultType, Scalar};
use crate::graph::{record, In, Out};
use crate::ops::{self, BinaryOp, CompareOp, UnaryOp};
use crate::tensor::{ElementIs, OperandOn};

fn name(op: BinaryOp) -> &'static str {
    match op {
        BinaryOp::Add => "AddBackward0",
        BinaryOp::Sub => "SubBackward0",
        BinaryOp::Mul => "MulBackward0",
        BinaryOp::Div => "DivBackward0",
        BinaryOp::Maximum => "MaximumBackward0",
        BinaryOp::Minimum => "MinimumBackward0",
        BinaryOp::Pow => "PowBackward1",
        BinaryOp::AddRelu => "AddReluBackward0",
    }
}

/// `a op b` with broadcasting, recorded. Generic code calls [`binary_out_of_line`].
#[inline(always)]
pub(crate) fn binary(a: In<'_>, b: In<'_>, op: BinaryOp) -> Result<Out> {
    if a.node.is_none() && b.node.is_none() {
        // Nothing to record: the kernel's result is the output, with no intermediate move.
        return ops::binary::binary(Operand::Borrowed(a.value), Operand::Borrowed(b.value), op)
            .map(Out::untracked);
    }
    let value = ops::binary::binary(Operand::Borrowed(a.value), Operand::Borrowed(b.value), op)?;
    let node = record(name(op), &[a.node, b.node], |needs| {
        let (need_a, need_b) = (needs[0], needs[1]);
        let out = value.clone();
        let (sa, sb) = (a.value.shape().to_vec(), b.value.shape().to_vec());
        let (x, y) = (a.value.clone(), b.value.clone());
        move |g| {
            let (ga, gb) = match op {
                BinaryOp::Add => (need_a.then(|| g.clone()), need_b.then_some(g)),
                BinaryOp::AddRelu => {
                    // The sum's gradient, where the output passed through.
                    let g = ops::binary::relu_backward::relu_backward(Operand::Owned(g), &out)?;
                    (need_a.then(|| g.clone()), need_b.then_some(g))
                }
                BinaryOp::Sub => (
                    need_a.then(|| g.clone()),
                    need_b.then(|| kit::neg(g)).transpose()?,
                ),
                BinaryOp::Mul => (
                    need_a.then(|| kit::mul(g.clone(), &y)).transpose()?,
                    need_b.then(|| kit::mul(g, &x)).transpose()?,
                ),
                BinaryOp::Div => {
                    let ga = need_a.then(|| kit::div(g.clone(), &y)).transpose()?;
                    // d(x / y)/dy = -(x / y) / y
                    let gb = need_b
                        .then(|| kit::neg(kit::div(kit::mul(g, &out)?, &y)?))
                        .transpose()?;
                    (ga, gb)
                }
                BinaryOp::Maximum | BinaryOp::Minimum => {
                    // PyTorch's derivatives.yaml, for maximum (minimum swaps < and >):
                    //   self:  where(self == other, grad / 2, grad).masked_fill_(self < other, 0)
                    //   other: where(self == other, grad / 2, grad).masked_fill_(self > other, 0)
                    // Ties split the gradient; where either is NaN, no comparison holds and
                    // both operands take the whole gradient (the NaN one included).
                    let (loses_a, loses_b) = if op == BinaryOp::Maximum {
                        (CompareOp::Lt, CompareOp::Gt)
                    } else {
                        (CompareOp::Gt, CompareOp::Lt)
                    };
                    let half = kit::mul_scalar(kit::mask(&x, &y, CompareOp::Eq)?, 0.5)?;
                    // share = 1 - 0.5 * [x == y] - [x loses]
                    let share = |loses: CompareOp| -> Result<_> {
                        let off = ops::binary::binary(
                            Operand::Owned(kit::mask(&x, &y, loses)?),
                            Operand::Borrowed(&half),
                            BinaryOp::Add,
                        )?;
                        kit::scalar(off, 1.0, BinaryOp::Sub, true)
                    };
                    let ga = need_a.then(|| kit::mul(share(loses_a)?, &g)).transpose()?;
                    let gb = need_b.then(|| kit::mul(share(loses_b)?, &g)).transpose()?;
                    (ga, gb)
                }
                BinaryOp::Pow => {
                    // PyTorch's FunctionsManual.cpp, for `pow(Tensor self, Tensor exponent)`:
                    //   pow_backward_self:     where(exponent == 0, 0, grad * exponent * self^(exponent - 1))
                    //   pow_backward_exponent: grad * where(self == 0 & exponent >= 0, 0, result * log(self))
                    // so a zero base (polynomial features of a zero input) gives 0, not NaN.
                    let zero = kit::full_scalar(0.0, &g)?;
                    let ga = need_a
                        .then(|| -> Result<_> {
                            let ym1 = kit::scalar(y.clone(), 1.0, BinaryOp::Sub, false)?;
                            let p = ops::binary::binary(
                                Operand::Borrowed(&x),
                                Operand::Owned(ym1),
                                BinaryOp::Pow,
                            )?;
                            let d = kit::mul(kit::mul(p, &y)?, &g)?;
                            let y_zero =
                                ops::binary::compare_scalar(&y, Scalar::Float(0.0), CompareOp::Eq)?;
                            ops::where_cond::where_cond(&y_zero, &zero, &d)
                        })
                        .transpose()?;
                    let gb = need_b
                        .then(|| -> Result<_> {
                            let t = kit::mul(kit::unary(x.clone(), UnaryOp::Log)?, &out)?;
                            let x_zero =
                                ops::binary::compare_scalar(&x, Scalar::Float(0.0), CompareOp::Eq)?;
                            let y_nonneg =
                                ops::binary::compare_scalar(&y, Scalar::Float(0.0), CompareOp::Ge)?;
                            let inner = ops::where_cond::where_cond(&y_nonneg, &zero, &t)?;
                            let masked = ops::where_cond::where_cond(&x_zero, &inner, &t)?;
                            kit::mul(masked, &g)
                        })
                        .transpose()?;
                    (ga, gb)
                }
            };
            Ok(vec![
                ga.map(|g| sum_to(g, &sa)).transpose()?,
                gb.map(|g| sum_to(g, &sb)).transpose()?,
            ])
        }
    });
    Ok(Out { value, node })
}

/// `a op s` (or `s op a` when `scalar_first`), recorded.
pub(crate) fn binary_scalar(
    a: In<'_>,
    scalar: Scalar,
    op: BinaryOp,
    scalar_first: bool,
) -> Result<Out> {
    if let Some(wide) = promoted_by_scalar(a, scalar)? {
        return binary_scalar(wide.input(), scalar, op, scalar_first);
    }
    // A clamp bound is converted to the result's dtype with PyTorch's checked conversion
    // (`clamp_min_scalar_kernel_impl`'s `min.to<scalar_t>()`); arithmetic with a scalar is not.
    if matches!(op, BinaryOp::Maximum | BinaryOp::Minimum) {
        scalar.check_fits(a.value.dtype)?;
    }
    let value = ops::binary::binary_scalar(Operand::Borrowed(a.value), scalar, op, scalar_first)?;
    // Gradients flow through floating-point tensors only, where the scalar is a float.
    let s = scalar.to_f64();
    let node = record(name(op), &[a.node], |_| {
        let (x, out) = (a.value.clone(), value.clone());
        move |g| {
            let ga = match (op, scalar_first) {
                (BinaryOp::Add, _) | (BinaryOp::Sub, false) => g,
                (BinaryOp::AddRelu, _) => {
                    ops::binary::relu_backward::relu_backward(Operand::Owned(g), &out)?
                }
                (BinaryOp::Sub, true) => kit::neg(g)?,
                (BinaryOp::Mul, _) => kit::mul_scalar(g, s)?,
                (BinaryOp::Div, false) => kit::scalar(g, s, BinaryOp::Div, false)?,
                // d(s / x)/dx = -(s / x) / x
                (BinaryOp::Div, true) => kit::neg(kit::div(kit::mul(g, &out)?, &x)?)?,
                // d(x^s)/dx = s * x^(s - 1); PyTorch's `pow_backward` returns zeros for s == 0
                // (else 0 * 0^-1 = NaN at a zero base).
                (BinaryOp::Pow, false) if s == 0.0 => kit::zeros(x.shape(), &g)?,
                (BinaryOp::Pow, false) => kit::mul(
                    g,
                    &kit::mul_scalar(kit::scalar(x, s - 1.0, BinaryOp::Pow, false)?, s)?,
                )?,
                // d(s^x)/dx = s^x * ln(s); PyTorch's `pow_backward_exponent` for a scalar base:
                // where s == 0, `grad * where(exponent >= 0, 0, result * log(0))`.
                (BinaryOp::Pow, true) if s == 0.0 => {
                    let t = kit::mul_scalar(out, f64::NEG_INFINITY)?;
                    let nonneg =
                        ops::binary::compare_scalar(&x, Scalar::Float(0.0), CompareOp::Ge)?;
                    let zero = kit::full_scalar(0.0, &g)?;
                    kit::mul(ops::where_cond::where_cond(&nonneg, &zero, &t)?, &g)?
                }
                (BinaryOp::Pow, true) => kit::mul_scalar(kit::mul(g, &out)?, s.ln())?,
                (BinaryOp::Maximum, _) => kit::mul(g, &kit::mask_scalar(&x, s, CompareOp::Ge)?)?,
                (BinaryOp::Minimum, _) => kit::mul(g, &kit::mask_scalar(&x, s, CompareOp::Le)?)?,
            };
            Ok(vec![Some(ga)])
        }
    });
    Ok(Out { value, node })
}

/// The value of a CPU 0-dim tensor, as a scalar (read from the host: no sync).
fn host_scalar(t: &RawTensor) -> Result<Scalar> {
    Ok(match t.dtype {
        DType::F32 => t.item::<f32>()?.to_scalar(),
        DType::F64 => t.item::<f64>()?.to_scalar(),
        DType::I64 => t.item::<i64>()?.to_scalar(),
        DType::Bool => t.item::<bool>()?.to_scalar(),
        DType::F16 => t.item::<half::f16>()?.to_scalar(),
        DType::BF16 => t.item::<half::bf16>()?.to_scalar(),
    })
}

/// How the two operands of an element-wise op meet. Only the dynamic front gets operands on
/// two devices here, after its check let one CPU 0-dim tensor join an op on a GPU, as PyTorch
/// does: untracked, its value is passed to the kernel as a scalar; tracked, it is copied there
/// (and its gradient back).
enum Meet {
    /// Same device.
    Same,
    /// `a` (`first`) or `b` is an untracked CPU scalar with this value.
    Scalar { value: Scalar, first: bool },
    /// `a` (`first`) or `b` was copied to the other's device.
    Moved { out: Out, first: bool },
}

#[cold]
#[inline(never)]
fn meet(a: In<'_>, b: In<'_>) -> Result<Meet> {
    if a.value.device == b.value.device {
        return Ok(Meet::Same);
    }
    let (cpu, other, first) = if a.value.device.is_cpu() {
        (a, b, true)
    } else {
        (b, a, false)
    };
    Ok(match cpu.node {
        None => Meet::Scalar {
            value: host_scalar(cpu.value)?,
            first,
        },
        Some(_) => Meet::Moved {
            out: super::copy::to_device(cpu, other.value.device)?,
            first,
        },
    })
}

/// `torch.result_type` of two tensor operands.
pub(crate) fn result_type(a: &RawTensor, b: &RawTensor) -> DType {
    ResultType::new()
        .tensor(a.dtype, a.rank())
        .tensor(b.dtype, b.rank())
        .finish()
}

/// Runs `f` on `a` and `b` converted to their result type (recorded conversions, so gradients
/// flow back in each operand's own dtype). Only the dynamic front meets two dtypes here: the
/// typed front's operands share `E`, whose result type is `E` itself.
#[cold]
#[inline(never)]
fn promoted(a: In<'_>, b: In<'_>, f: impl FnOnce(In<'_>, In<'_>) -> Result<Out>) -> Result<Out> {
    let to = result_type(a.value, b.value);
    let ca = (a.value.dtype != to)
        .then(|| super::copy::cast(a, to))
        .transpose()?;
    let cb = (b.value.dtype != to)
        .then(|| super::copy::cast(b, to))
        .transpose()?;
    f(
        ca.as_ref().map_or(a, Out::input),
        cb.as_ref().map_or(b, Out::input),
    )
}

/// `a` converted to the result type of `a op scalar` (the wrapped-number rule: `i64 * 2.5` is
/// `f32`, `f16 * 2.5` stays `f16`), or `None` when that is `a`'s own dtype.
fn promoted_by_scalar(a: In<'_>, scalar: Scalar) -> Result<Option<Out>> {
    let to = ResultType::new()
        .tensor(a.value.dtype, a.value.rank())
        .scalar(scalar)
        .finish();
    (a.value.dtype != to)
        .then(|| super::copy::cast(a, to))
        .transpose()
}

/// [`binary`], compiled once, here: for the typed front's generic code (see
/// `ops::binary::binary_typed_front`).
#[inline(never)]
pub(crate) fn binary_out_of_line(a: In<'_>, b: In<'_>, op: BinaryOp) -> Result<Out> {
    binary(a, b, op)
}

/// `a op b` with broadcasting on either front, recorded.
#[inline(always)]
fn elementwise(a: In<'_>, b: In<'_>, op: BinaryOp) -> Result<Out> {
    if a.value.dtype != b.value.dtype {
        return promoted(a, b, |a, b| elementwise(a, b, op));
    }
    if a.value.device == b.value.device {
        return binary(a, b, op);
    }
    match meet(a, b)? {
        Meet::Same => binary(a, b, op),
        Meet::Scalar { value, first: true } => binary_scalar(b, value, op, true),
        Meet::Scalar {
            value,
            first: false,
        } => binary_scalar(a, value, op, false),
        Meet::Moved { out, first: true } => binary(out.input(), b, op),
        Meet::Moved { out, first: false } => binary(a, out.input(), op),
    }
}

/// PyTorch's default dtype, `float32`: where integer and `bool` inputs of an op that computes in
/// floating point (true division, `sqrt`, `exp`, ...) go (`promote_integer_inputs_to_float`).
pub(crate) const DEFAULT_FLOAT: DType = DType::F32;

/// The dtype a float op computes in for inputs of result type `dtype`.
pub(crate) fn float_op_type(dtype: DType) -> DType {
    if dtype.is_float() {
        dtype
    } else {
        DEFAULT_FLOAT
    }
}

/// `f(a)` with `a` converted to `to` first (a recorded conversion), or `f(a)` itself.
pub(crate) fn with_dtype(
    a: In<'_>,
    to: DType,
    f: impl FnOnce(In<'_>) -> Result<Out>,
) -> Result<Out> {
    if a.value.dtype == to {
        return f(a);
    }
    let cast = super::copy::cast(a, to)?;
    f(cast.input())
}

/// `f(a, b)` with both converted to `to` first.
fn with_dtypes(
    a: In<'_>,
    b: In<'_>,
    to: DType,
    f: impl FnOnce(In<'_>, In<'_>) -> Result<Out>,
) -> Result<Out> {
    with_dtype(a, to, |a| with_dtype(b, to, |b| f(a, b)))
}

/// PyTorch's `sub_check`: no subtraction with a `bool` operand (a scalar counts as one).
fn sub_check(a: DType, b: DType) -> Result<()> {
    if a == DType::Bool && b == DType::Bool {
        return Err(Error::UnsupportedOperation(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.",
        ));
    }
    if a == DType::Bool || b == DType::Bool {
        return Err(Error::UnsupportedOperation(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.",
        ));
    }
    Ok(())
}

/// `a op b` of two `bool` operands, as PyTorch's kernels compute it: `+` and `maximum` are
/// logical or, `*` and `minimum` logical and (through `i64`, exactly).
fn bool_elementwise(a: In<'_>, b: In<'_>, op: BinaryOp) -> Result<Out> {
    let op = match op {
        BinaryOp::Add | BinaryOp::Maximum => BinaryOp::Maximum,
        BinaryOp::Mul | BinaryOp::Minimum => BinaryOp::Minimum,
        other => {
            return Err(Error::UnsupportedDType {
                op: other.name(),
                dtype: DType::Bool,
            })
        }
    };
    let ints = with_dtypes(a, b, DType::I64, |a, b| elementwise(a, b, op))?;
    super::copy::cast(ints.input(), DType::Bool)
}

/// The dynamic front's `a op b`: `torch.result_type`, then the op's own rule. True division
/// computes integers and `bool` in `float32`; `pow` of integers stays integer (exact); `bool`
/// operands add (or), multiply (and) and take maximum/minimum, and refuse `-` with PyTorch's
/// texts.
fn dyn_elementwise(a: In<'_>, b: In<'_>, op: BinaryOp) -> Result<Out> {
    if a.node.is_none() && b.node.is_none() {
        if let Some(out) = ops::binary::tiny_float(a.value, b.value, op) {
            return Ok(Out::untracked(out));
        }
    }
    if op == BinaryOp::Sub {
        sub_check(a.value.dtype, b.value.dtype)?;
    }
    let to = result_type(a.value, b.value);
    match op {
        BinaryOp::Div => with_dtypes(a, b, float_op_type(to), |a, b| elementwise(a, b, op)),
        BinaryOp::Pow if to == DType::I64 => with_dtypes(a, b, to, |a, b| {
            Ok(Out::untracked(int_pow(a.value, b.value)?))
        }),
        BinaryOp::Pow if to == DType::Bool => Err(bool_pow(a.value, b.value)),
        _ if to == DType::Bool => with_dtypes(a, b, to, |a, b| bool_elementwise(a, b, op)),
        _ => elementwise(a, b, op),
    }
}

/// The dynamic front's `a op s`, with the same rules as [`dyn_elementwise`] and `pow`'s check
/// of an integer base with a negative integer exponent.
fn dyn_scalar(a: In<'_>, s: Scalar, op: BinaryOp) -> Result<Out> {
    let scalar_dtype = match s {
        Scalar::Bool(_) => DType::Bool,
        Scalar::Int(_) => DType::I64,
        Scalar::Float(_) => DType::F64,
    };
    if op == BinaryOp::Sub {
        sub_check(a.value.dtype, scalar_dtype)?;
    }
    if op == BinaryOp::Pow && !a.value.dtype.is_float() {
        if let Scalar::Int(e) = s {
            if e < 0 {
                return Err(Error::UnsupportedOperation(
                    "Integers to negative integer powers are not allowed.",
                ));
            }
        }
    }
    let to = ResultType::new()
        .tensor(a.value.dtype, a.value.rank())
        .scalar(s)
        .finish();
    match op {
        BinaryOp::Div => with_dtype(a, float_op_type(to), |a| binary_scalar(a, s, op, false)),
        BinaryOp::Pow if to == DType::I64 => with_dtype(a, to, |a| {
            // An `i64` result type means the exponent is an integer or a `bool`.
            let e = match s {
                Scalar::Int(e) => e,
                Scalar::Bool(e) => i64::from(e),
                Scalar::Float(e) => e as i64,
            };
            let exponent = RawTensor::from_vec(vec![e], &[], a.value.device)?;
            Ok(Out::untracked(int_pow(a.value, &exponent)?))
        }),
        BinaryOp::Pow if to == DType::Bool => Err(bool_pow(a.value, a.value)),
        _ if to == DType::Bool => {
            let b = RawTensor::from_vec(vec![s != Scalar::Bool(false)], &[], a.value.device)?;
            bool_elementwise(
                a,
                In {
                    value: &b,
                    node: None,
                },
                op,
            )
        }
        _ => binary_scalar(a, s, op, false),
    }
}

/// PyTorch's refusal of `pow` computed in `bool` (its kernels dispatch integers and floats
/// only), with its per-device kernel name.
fn bool_pow(a: &RawTensor, b: &RawTensor) -> Error {
    Error::UnsupportedDType {
        op: if a.device.is_cpu() && b.device.is_cpu() {
            "pow"
        } else {
            "pow_cuda"
        },
        dtype: DType::Bool,
    }
}

/// `base ** exponent` of `i64` tensors, exactly as PyTorch's `powi`: wrapping products, and a
/// negative exponent gives `1` for a base of `1`, `±1` for `-1`, else `0`. Computed on the host
/// (an integer power cannot go through floating point exactly) and put on the operands' device.
fn int_pow(base: &RawTensor, exponent: &RawTensor) -> Result<RawTensor> {
    let device = if base.device.is_cpu() {
        exponent.device
    } else {
        base.device
    };
    let shape = crate::core::layout::broadcast_shapes(base.shape(), exponent.shape())?;
    let b = ops::shape::expand(base, &shape)?.to_vec::<i64>()?;
    let e = ops::shape::expand(exponent, &shape)?.to_vec::<i64>()?;
    let values = b.iter().zip(&e).map(|(&b, &e)| powi(b, e)).collect();
    RawTensor::from_vec(values, &shape, device)
}

/// PyTorch's `powi` of `i64`s (`aten/src/ATen/native/Pow.h`).
pub(crate) fn powi(base: i64, exponent: i64) -> i64 {
    if exponent < 0 {
        return match base {
            1 => 1,
            -1 if exponent % 2 != 0 => -1,
            -1 => 1,
            _ => 0,
        };
    }
    let (mut result, mut base, mut exponent) = (1i64, base, exponent);
    while exponent > 0 {
        if exponent & 1 == 1 {
            result = result.wrapping_mul(base);
        }
        exponent >>= 1;
        base = base.wrapping_mul(base);
    }
    result
}

/// `a op b` as a `bool` tensor (never tracked), computed in the operands' result type.
#[inline]
fn compare(a: In<'_>, b: In<'_>, op: CompareOp) -> Result<Out> {
    if a.value.dtype != b.value.dtype {
        let to = result_type(a.value, b.value);
        let convert = |t: &RawTensor| -> Result<RawTensor> {
            if t.dtype == to {
                Ok(t.clone())
            } else {
                ops::copy::cast(t, to)
            }
        };
        let (ca, cb) = (convert(a.value)?, convert(b.value)?);
        let (ia, ib) = (
            In {
                value: &ca,
                node: None,
            },
            In {
                value: &cb,
                node: None,
            },
        );
        return compare(ia, ib, op);
    }
    if a.value.device == b.value.device {
        return Ok(Out::untracked(ops::binary::compare(a.value, b.value, op)?));
    }
    let value = match meet(a, b)? {
        Meet::Same => ops::binary::compare(a.value, b.value, op)?,
        // `scalar op t` is `t op' scalar` with the comparison mirrored, so the kernel only
        // ever sees the GPU tensor.
        Meet::Scalar { value, first: true } => {
            ops::binary::compare_scalar(b.value, value, mirrored(op))?
        }
        Meet::Scalar {
            value,
            first: false,
        } => ops::binary::compare_scalar(a.value, value, op)?,
        Meet::Moved { out, first: true } => ops::binary::compare(&out.value, b.value, op)?,
        Meet::Moved { out, first: false } => ops::binary::compare(a.value, &out.value, op)?,
    };
    Ok(Out::untracked(value))
}

/// The comparison with its operands swapped: `s < t` is `t > s`.
fn mirrored(op: CompareOp) -> CompareOp {
    match op {
        CompareOp::Lt => CompareOp::Gt,
        CompareOp::Le => CompareOp::Ge,
        CompareOp::Gt => CompareOp::Lt,
        CompareOp::Ge => CompareOp::Le,
        other => other,
    }
}

/// `a op s` as a `bool` tensor (never tracked).
fn compare_scalar(a: In<'_>, s: Scalar, op: CompareOp) -> Result<Out> {
    Ok(Out::untracked(ops::binary::compare_scalar(a.value, s, op)?))
}

/// The dynamic front's `clamp` family: PyTorch computes in the result type of the tensor and
/// its bounds, and its kernels (`clamp_min_scalar_cpu`, ...) take no `bool`.
fn clamp_checked(
    a: In<'_>,
    bounds: &[Scalar],
    kernel: &'static str,
    f: impl FnOnce(In<'_>) -> Result<Out>,
) -> Result<Out> {
    let to = bounds
        .iter()
        .fold(
            ResultType::new().tensor(a.value.dtype, a.value.rank()),
            |r, &s| r.scalar(s),
        )
        .finish();
    if to == DType::Bool {
        let op = match (kernel, a.value.device.is_cpu()) {
            ("clamp_min_scalar", true) => "clamp_min_scalar_cpu",
            ("clamp_min_scalar", false) => "clamp_min_scalar_cuda",
            ("clamp_max_scalar", true) => "clamp_max_scalar_cpu",
            ("clamp_max_scalar", false) => "clamp_max_scalar_cuda",
            (_, true) => "clamp_scalar_cpu",
            (_, false) => "clamp_scalar_cuda",
        };
        return Err(Error::UnsupportedDType {
            op,
            dtype: DType::Bool,
        });
    }
    f(a)
}

/// `clamp(a, min, max)`: `min(max(a, min), max)`, recorded as its two steps.
fn clamp(a: In<'_>, min: Scalar, max: Scalar) -> Result<Out> {
    let low = binary_scalar(a, min, BinaryOp::Maximum, false)?;
    binary_scalar(low.input(), max, BinaryOp::Minimum, false)
}

declare_ops! {
    /// `self + other` with broadcasting: the fallible form of `+`.
    Numeric fn add(x, other: (impl OperandOn<D> + ElementIs<E>)) -> Same
        = elementwise(x, other, BinaryOp::Add), dynamic dyn_elementwise(x, other, BinaryOp::Add);
    /// `self - other` with broadcasting: the fallible form of `-`.
    Numeric fn sub(x, other: (impl OperandOn<D> + ElementIs<E>)) -> Same
        = elementwise(x, other, BinaryOp::Sub), dynamic dyn_elementwise(x, other, BinaryOp::Sub);
    /// `self * other` with broadcasting: the fallible form of `*`.
    Numeric fn mul(x, other: (impl OperandOn<D> + ElementIs<E>)) -> Same
        = elementwise(x, other, BinaryOp::Mul), dynamic dyn_elementwise(x, other, BinaryOp::Mul);
    /// `self / other` with broadcasting: the fallible form of `/`.
    Numeric fn div(x, other: (impl OperandOn<D> + ElementIs<E>)) -> Same
        = elementwise(x, other, BinaryOp::Div), dynamic dyn_elementwise(x, other, BinaryOp::Div);
    /// The larger of each pair (`torch.maximum`); ties split the gradient evenly.
    Numeric fn maximum(x, other: (impl OperandOn<D> + ElementIs<E>)) -> Same
        = elementwise(x, other, BinaryOp::Maximum), dynamic dyn_elementwise(x, other, BinaryOp::Maximum);
    /// The smaller of each pair (`torch.minimum`); ties split the gradient evenly.
    Numeric fn minimum(x, other: (impl OperandOn<D> + ElementIs<E>)) -> Same
        = elementwise(x, other, BinaryOp::Minimum), dynamic dyn_elementwise(x, other, BinaryOp::Minimum);
    /// `self` to the power `other`, element-wise (`torch.pow`).
    Numeric fn pow(x, other: (impl OperandOn<D> + ElementIs<E>)) -> Same
        = elementwise(x, other, BinaryOp::Pow), dynamic dyn_elementwise(x, other, BinaryOp::Pow);
    /// `relu(self + other)` in one pass, with broadcasting (PyTorch's fused `_add_relu`): the
    /// sum is never written out, so it moves 3 tensors' worth of memory instead of 5.
    Numeric fn add_relu(x, other: (impl OperandOn<D> + ElementIs<E>)) -> Same
        = elementwise(x, other, BinaryOp::AddRelu);

    /// `self + s` (on the dynamic front an `f64`, `i64` or `bool`: integers stay exact).
    Numeric fn add_scalar(x, s: Scalar) -> Same
        = binary_scalar(x, s, BinaryOp::Add, false), dynamic dyn_scalar(x, s, BinaryOp::Add);
    /// `self - s`.
    Numeric fn sub_scalar(x, s: Scalar) -> Same
        = binary_scalar(x, s, BinaryOp::Sub, false), dynamic dyn_scalar(x, s, BinaryOp::Sub);
    /// `self * s`.
    Numeric fn mul_scalar(x, s: Scalar) -> Same
        = binary_scalar(x, s, BinaryOp::Mul, false), dynamic dyn_scalar(x, s, BinaryOp::Mul);
    /// `self / s`.
    Numeric fn div_scalar(x, s: Scalar) -> Same
        = binary_scalar(x, s, BinaryOp::Div, false), dynamic dyn_scalar(x, s, BinaryOp::Div);
    /// `self` to the power `s`.
    Numeric fn pow_scalar(x, s: Scalar) -> Same
        = binary_scalar(x, s, BinaryOp::Pow, false), dynamic dyn_scalar(x, s, BinaryOp::Pow);
    /// `max(self, s)` element-wise (PyTorch's `clamp_min`).
    Numeric fn clamp_min(x, s: Scalar) -> Same
        = binary_scalar(x, s, BinaryOp::Maximum, false),
        dynamic clamp_checked(x, &[s], "clamp_min_scalar", |x| binary_scalar(x, s, BinaryOp::Maximum, false));
    /// `min(self, s)` element-wise (PyTorch's `clamp_max`).
    Numeric fn clamp_max(x, s: Scalar) -> Same
        = binary_scalar(x, s, BinaryOp::Minimum, false),
        dynamic clamp_checked(x, &[s], "clamp_max_scalar", |x| binary_scalar(x, s, BinaryOp::Minimum, false));
    /// `min(max(self, min), max)` element-wise (PyTorch's `clamp(min, max)`).
    Numeric fn clamp(x, min: Scalar, max: Scalar) -> Same
        = clamp(x, min, max),
        dynamic clamp_checked(x, &[min, max], "clamp_scalar", |x| clamp(x, min, max));

    /// Element-wise `==` (a `bool` tensor).
    Element fn eq(x, other: (impl OperandOn<D> + ElementIs<E>)) -> Bool
        no_grad("a bool result") = compare(x, other, CompareOp::Eq);
    /// Element-wise `!=` (a `bool` tensor).
    Element fn ne(x, other: (impl OperandOn<D> + ElementIs<E>)) -> Bool
        no_grad("a bool result") = compare(x, other, CompareOp::Ne);
    /// Element-wise `<` (a `bool` tensor).
    Element fn lt(x, other: (impl OperandOn<D> + ElementIs<E>)) -> Bool
        no_grad("a bool result") = compare(x, other, CompareOp::Lt);
    /// Element-wise `<=` (a `bool` tensor).
    Element fn le(x, other: (impl OperandOn<D> + ElementIs<E>)) -> Bool
        no_grad("a bool result") = compare(x, other, CompareOp::Le);
    /// Element-wise `>` (a `bool` tensor).
    Element fn gt(x, other: (impl OperandOn<D> + ElementIs<E>)) -> Bool
        no_grad("a bool result") = compare(x, other, CompareOp::Gt);
    /// Element-wise `>=` (a `bool` tensor).
    Element fn ge(x, other: (impl OperandOn<D> + ElementIs<E>)) -> Bool
        no_grad("a bool result") = compare(x, other, CompareOp::Ge);
    /// Element-wise `== s` (a `bool` tensor; integers compare exactly).
    Element fn eq_scalar(x, s: Scalar) -> Bool
        no_grad("a bool result") = compare_scalar(x, s, CompareOp::Eq);
    /// Element-wise `!= s`.
    Element fn ne_scalar(x, s: Scalar) -> Bool
        no_grad("a bool result") = compare_scalar(x, s, CompareOp::Ne);
    /// Element-wise `< s`.
    Element fn lt_scalar(x, s: Scalar) -> Bool
        no_grad("a bool result") = compare_scalar(x, s, CompareOp::Lt);
    /// Element-wise `<= s`.
    Element fn le_scalar(x, s: Scalar) -> Bool
        no_grad("a bool result") = compare_scalar(x, s, CompareOp::Le);
    /// Element-wise `> s`.
    Element fn gt_scalar(x, s: Scalar) -> Bool
        no_grad("a bool result") = compare_scalar(x, s, CompareOp::Gt);
    /// Element-wise `>= s`.
    Element fn ge_scalar(x, s: Scalar) -> Bool
        no_grad("a bool result") = compare_scalar(x, s, CompareOp::Ge);
}

impl crate::DynTensor {
    /// `torch.result_type(self, other)`: the dtype `self op other` computes in and returns
    /// (see [`ResultType`] for the rules; 0-dim tensors count only by category).
    pub fn result_type(&self, other: &crate::DynTensor) -> DType {
        result_type(&self.raw, &other.raw)
    }

    /// `torch.result_type(self, s)` with a Rust scalar (a wrapped number): `f16` with `2.5`
    /// stays `F16`, `i64` with `2.5` is `F32`.
    pub fn result_type_scalar(&self, s: impl Into<Scalar>) -> DType {
        ResultType::new()
            .tensor(self.raw.dtype, self.raw.rank())
            .scalar(s.into())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::operand::sealed::AsRaw;
    use crate::{Cpu, Tensor};

    /// `s ^ x` with a scalar base (reached from the dynamic front when a CPU 0-dim base meets
    /// a GPU exponent): PyTorch's `pow_backward_exponent(grad, Scalar base, exponent, result)`
    /// is `grad * where(exponent >= 0, 0, result * log(base))` for a zero base, so
    /// `d 0^x / dx` at x = [0, 1, -1, 2.5] is [0, 0, inf * -inf = -inf, 0] (the plain rule
    /// gives -inf and NaN at 0 and 1).
    #[test]
    fn scalar_base_zero_masks_as_pytorch() {
        let x = Tensor::parameter(Tensor::<Cpu, f64>::from_vec(
            vec![0.0, 1.0, -1.0, 2.5],
            [4],
            Cpu,
        ));
        let out = binary_scalar(x.input(), Scalar::Float(0.0), BinaryOp::Pow, true).unwrap();
        Tensor::<Cpu, f64>::from_out(out, Cpu).sum_all().backward();
        assert_eq!(
            x.grad().unwrap().to_vec(),
            vec![0.0, 0.0, f64::NEG_INFINITY, 0.0]
        );
        // A non-zero base is not masked: d 2^x / dx = 2^x ln 2.
        let x = Tensor::parameter(Tensor::<Cpu, f64>::from_vec(vec![0.0, 1.0], [2], Cpu));
        let out = binary_scalar(x.input(), Scalar::Float(2.0), BinaryOp::Pow, true).unwrap();
        Tensor::<Cpu, f64>::from_out(out, Cpu).sum_all().backward();
        // Within a few ulp: `ln` and `powf` need not be correctly rounded (some C libraries
        // return a neighbour of the exact result, and Miri adds a random error of several ulp
        // to each: 8 ulp apart in one CI run). A wrong rule is off by far more.
        let ln2 = std::f64::consts::LN_2;
        for (got, want) in x.grad().unwrap().to_vec().into_iter().zip([ln2, 2.0 * ln2]) {
            assert!(
                (got - want).abs() <= 32.0 * f64::EPSILON * want,
                "{got} vs {want}"
            );
        }
    }
}
