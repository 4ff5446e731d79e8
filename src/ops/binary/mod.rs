//! Broadcasting element-wise arithmetic and comparisons, with tensors or scalars.

pub(super) mod cpu;
pub(super) mod cuda;
/// The gradient of GELU: a two-operand map whose kernels are in `binary.cu`.
pub(crate) mod gelu_backward;
/// The gradient of `relu` (and of `add_relu`): a two-operand map whose kernel is in `binary.cu`.
pub(crate) mod relu_backward;

use crate::core::error::{Error, Result};
use crate::core::layout::{broadcast_shapes, Dims};
use crate::core::raw::{Operand, RawTensor};
use crate::core::{DType, Scalar};

/// An element-wise arithmetic op.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a * b`
    Mul,
    /// `a / b` (floating point only)
    Div,
    /// The larger of `a` and `b`, NaN propagating (`torch.maximum`).
    Maximum,
    /// The smaller of `a` and `b`, NaN propagating (`torch.minimum`).
    Minimum,
    /// `a` to the power `b` (floating point only).
    Pow,
    /// `max(a + b, 0)` in one pass: `relu(a + b)` fused (PyTorch's `aten::_add_relu`), so the
    /// sum is never written out and read back. NaN stays NaN, as in `relu`.
    AddRelu,
}

impl BinaryOp {
    /// Every element-wise arithmetic op.
    pub(crate) const ALL: [BinaryOp; 8] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Maximum,
        BinaryOp::Minimum,
        BinaryOp::Pow,
        BinaryOp::AddRelu,
    ];

    /// PyTorch's name of the op.
    pub const fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Maximum => "maximum",
            BinaryOp::Minimum => "minimum",
            BinaryOp::Pow => "pow",
            BinaryOp::AddRelu => "add_relu",
        }
    }

    /// True for ops defined on floating point only.
    pub(crate) fn float_only(self) -> bool {
        matches!(self, BinaryOp::Div | BinaryOp::Pow)
    }
}

/// An element-wise comparison; the result is a `bool` tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompareOp {
    /// `a == b`
    Eq,
    /// `a != b`
    Ne,
    /// `a < b`
    Lt,
    /// `a <= b`
    Le,
    /// `a > b`
    Gt,
    /// `a >= b`
    Ge,
}

impl CompareOp {
    /// Every comparison.
    pub(crate) const ALL: [CompareOp; 6] = [
        CompareOp::Eq,
        CompareOp::Ne,
        CompareOp::Lt,
        CompareOp::Le,
        CompareOp::Gt,
        CompareOp::Ge,
    ];
}

fn check_dtypes(op: &'static str, float_only: bool, a: DType, b: DType) -> Result<()> {
    if a != b {
        return Err(Error::DTypeMismatch {
            expected: a,
            found: b,
        });
    }
    if a == DType::Bool || (float_only && !a.is_float()) {
        return Err(Error::UnsupportedDType { op, dtype: a });
    }
    Ok(())
}

/// `a op b` with broadcasting. An owned operand's buffer is reused when nothing else uses it.
///
/// Inlined into devtype's own callers only: generic code (the typed front) calls
/// [`binary_out_of_line`], see there.
#[inline(always)]
pub(crate) fn binary(a: Operand<'_>, b: Operand<'_>, op: BinaryOp) -> Result<RawTensor> {
    if let Some(out) = cpu::tiny(&a, &b, op) {
        return Ok(out);
    }
    check_dtypes(op.name(), op.float_only(), a.dtype, b.dtype)?;
    let shape = if a.layout.shape == b.layout.shape {
        a.layout.shape
    } else {
        broadcast_shapes(a.shape(), b.shape())?
    };
    dispatch!([&a, &b], |be| be.binary(a, b, shape, op))
}

/// [`binary`] as a call, for the typed front's generic code, with the few-value case of element
/// type `E` in front.
///
/// A generic function is compiled in the crate that uses it, with all it inlines: inlined,
/// `binary` brought every element type's kernels (and their `rayon` jobs) into each user's
/// crate, 1.4 MB of its 2.4 MB of code, compiled at every rebuild (`scripts/user-build.sh`).
/// What stays inline is the one comparison of `E`'s few-value case (the element type and,
/// at the operators, the op are constants there): 1-element arithmetic costs no call.
#[inline(always)]
pub(crate) fn binary_typed_front<E: crate::core::Element>(
    a: Operand<'_>,
    b: Operand<'_>,
    op: BinaryOp,
) -> Result<RawTensor> {
    if let Some(out) = cpu::tiny_as(E::DTYPE, &a, &b, op) {
        return Ok(out);
    }
    binary_out_of_line(a, b, op)
}

/// The dynamic front's counterpart of [`binary_typed_front`]'s first test: `a op b` for two
/// floating-point CPU operands of one dtype that are whole storages of a few elements (see
/// [`cpu::tiny_as`]), or `None`. For these, the dynamic front's rules (`torch.result_type`,
/// true division) are the plain op's, so the general path would give the same result, after
/// the type and broadcast bookkeeping that a loss or a step size does not need.
#[inline]
pub(crate) fn tiny_float(a: &RawTensor, b: &RawTensor, op: BinaryOp) -> Option<RawTensor> {
    match a.dtype {
        DType::F32 | DType::F64 => cpu::tiny_as(a.dtype, a, b, op),
        _ => None,
    }
}

/// [`binary`], compiled once, here.
#[inline(never)]
pub(crate) fn binary_out_of_line(
    a: Operand<'_>,
    b: Operand<'_>,
    op: BinaryOp,
) -> Result<RawTensor> {
    binary(a, b, op)
}

/// `a op scalar`, or `scalar op a` when `scalar_first`. The scalar is converted to `a`'s
/// element type once (exactly, for integers).
pub(crate) fn binary_scalar(
    a: Operand<'_>,
    scalar: Scalar,
    op: BinaryOp,
    scalar_first: bool,
) -> Result<RawTensor> {
    if a.dtype == DType::Bool || (op.float_only() && !a.dtype.is_float()) {
        return Err(Error::UnsupportedDType {
            op: op.name(),
            dtype: a.dtype,
        });
    }
    dispatch!([&a], |be| be.binary_scalar(a, scalar, op, scalar_first))
}

/// `a cmp b` with broadcasting, as a `bool` tensor.
pub(crate) fn compare(a: &RawTensor, b: &RawTensor, op: CompareOp) -> Result<RawTensor> {
    if a.dtype != b.dtype {
        return Err(Error::DTypeMismatch {
            expected: a.dtype,
            found: b.dtype,
        });
    }
    let shape = broadcast_shapes(a.shape(), b.shape())?;
    dispatch!([a, b], |be| be.compare(a, b, shape, op))
}

/// `a cmp scalar`, as a `bool` tensor, computed exactly.
///
/// As in PyTorch, a floating-point tensor compares with the scalar cast to its element type.
/// An integer tensor compares exactly with any scalar: a fractional or out-of-range float
/// becomes the integer threshold that gives the same answer (`x < 2.5` is `x < 3`), so no
/// value is ever rounded through `f64`. A `bool` tensor compares as the integers 0 and 1.
pub(crate) fn compare_scalar(a: &RawTensor, scalar: Scalar, op: CompareOp) -> Result<RawTensor> {
    if a.dtype == DType::Bool {
        let ints = crate::ops::copy::cast(a, DType::I64)?;
        return compare_scalar(&ints, scalar, op);
    }
    let scalar = match (a.dtype, scalar) {
        (DType::I64, Scalar::Float(f)) => match integer_threshold(f, op) {
            Threshold::Compare(op, i) => return compare_dispatch(a, Scalar::Int(i), op),
            Threshold::Always(value) => {
                return crate::ops::creation::create(
                    a.layout.shape,
                    DType::Bool,
                    a.device,
                    crate::ops::creation::Fill::Constant(Scalar::Bool(value)),
                )
            }
        },
        (DType::I64, Scalar::Bool(b)) => Scalar::Int(b as i64),
        (_, s) => s,
    };
    compare_dispatch(a, scalar, op)
}

fn compare_dispatch(a: &RawTensor, scalar: Scalar, op: CompareOp) -> Result<RawTensor> {
    dispatch!([a], |be| be.compare_scalar(a, scalar, op))
}

/// How an integer `x` compares with a float `f`, as a comparison with an integer or a constant.
#[derive(Debug, PartialEq)]
enum Threshold {
    Compare(CompareOp, i64),
    Always(bool),
}

/// The exact integer form of `x op f` for every `i64` value `x`.
fn integer_threshold(f: f64, op: CompareOp) -> Threshold {
    // i64::MAX + 1 = 2^63, exactly representable; every i64 lies in [-2^63, 2^63).
    const TOP: f64 = 9_223_372_036_854_775_808.0;
    if f.is_nan() {
        return Threshold::Always(op == CompareOp::Ne);
    }
    // `x < f` is `x < ceil(f)`, `x >= f` is `x >= ceil(f)`, `x <= f` is `x <= floor(f)`,
    // `x > f` is `x > floor(f)`; `x == f` needs `f` integral.
    let (bound, below, above) = match op {
        CompareOp::Lt => (f.ceil(), false, true),
        CompareOp::Ge => (f.ceil(), true, false),
        CompareOp::Le => (f.floor(), false, true),
        CompareOp::Gt => (f.floor(), true, false),
        CompareOp::Eq | CompareOp::Ne => {
            let exact = f.fract() == 0.0 && (-TOP..TOP).contains(&f);
            return if exact {
                Threshold::Compare(op, f as i64)
            } else {
                Threshold::Always(op == CompareOp::Ne)
            };
        }
    };
    if bound >= TOP {
        // Beyond every i64: `x < bound` and `x <= bound` always hold.
        Threshold::Always(above)
    } else if bound < -TOP {
        Threshold::Always(below)
    } else {
        Threshold::Compare(op, bound as i64)
    }
}

/// The kernel entries of this family, one impl per backend: [`CpuBackend`](crate::ops::backend::CpuBackend)
/// in `cpu.rs`, [`CudaBackend`](crate::ops::backend::CudaBackend) in `cuda.rs`. The operands are on
/// that backend's device (`dispatch!` checked it) and the functions above planned shapes
/// and checked dtypes.
pub(crate) trait BinaryKernel {
    fn binary(self, a: Operand<'_>, b: Operand<'_>, shape: Dims, op: BinaryOp)
        -> Result<RawTensor>;
    fn binary_scalar(
        self,
        a: Operand<'_>,
        s: Scalar,
        op: BinaryOp,
        scalar_first: bool,
    ) -> Result<RawTensor>;
    fn compare(self, a: &RawTensor, b: &RawTensor, shape: Dims, op: CompareOp)
        -> Result<RawTensor>;
    fn compare_scalar(self, a: &RawTensor, s: Scalar, op: CompareOp) -> Result<RawTensor>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_thresholds_are_exact() {
        use CompareOp::*;
        assert_eq!(integer_threshold(2.5, Lt), Threshold::Compare(Lt, 3));
        assert_eq!(integer_threshold(2.5, Le), Threshold::Compare(Le, 2));
        assert_eq!(integer_threshold(-2.5, Gt), Threshold::Compare(Gt, -3));
        assert_eq!(integer_threshold(-2.5, Ge), Threshold::Compare(Ge, -2));
        assert_eq!(integer_threshold(2.5, Eq), Threshold::Always(false));
        assert_eq!(integer_threshold(2.5, Ne), Threshold::Always(true));
        assert_eq!(integer_threshold(1e19, Lt), Threshold::Always(true));
        assert_eq!(integer_threshold(1e19, Ge), Threshold::Always(false));
        assert_eq!(integer_threshold(-1e19, Gt), Threshold::Always(true));
        assert_eq!(integer_threshold(f64::NAN, Eq), Threshold::Always(false));
        assert_eq!(integer_threshold(f64::NAN, Ne), Threshold::Always(true));
        assert_eq!(
            integer_threshold(i64::MIN as f64, Ge),
            Threshold::Compare(Ge, i64::MIN)
        );
    }
}
