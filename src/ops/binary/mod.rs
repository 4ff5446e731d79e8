//! Broadcasting element-wise arithmetic and comparisons, with tensors or scalars.

mod cpu;
mod cuda;

use crate::error::{Error, Result};
use crate::storage::Storage;
use crate::tensor::layout::broadcast_shapes;
use crate::tensor::raw::{Operand, RawTensor};
use crate::tensor::DType;

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
#[inline(always)]
pub(crate) fn binary(a: Operand<'_>, b: Operand<'_>, op: BinaryOp) -> Result<RawTensor> {
    check_dtypes(op.name(), op.float_only(), a.dtype, b.dtype)?;
    let shape = if a.layout.shape == b.layout.shape {
        a.layout.shape
    } else {
        broadcast_shapes(a.shape(), b.shape())?
    };
    match (&*a.storage, &*b.storage) {
        (Storage::Cpu(_), Storage::Cpu(_)) => cpu::binary(a, b, shape, op),
        _ => cuda::binary(&a, &b, shape, op),
    }
}

/// `a op scalar`, or `scalar op a` when `scalar_first`.
pub(crate) fn binary_scalar(
    a: Operand<'_>,
    scalar: f64,
    op: BinaryOp,
    scalar_first: bool,
) -> Result<RawTensor> {
    if a.dtype == DType::Bool || (op.float_only() && !a.dtype.is_float()) {
        return Err(Error::UnsupportedDType {
            op: op.name(),
            dtype: a.dtype,
        });
    }
    match &*a.storage {
        Storage::Cpu(_) => cpu::binary_scalar(a, scalar, op, scalar_first),
        Storage::Cuda(_) => cuda::binary_scalar(&a, scalar, op, scalar_first),
    }
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
    match (&*a.storage, &*b.storage) {
        (Storage::Cpu(_), Storage::Cpu(_)) => cpu::compare(a, b, shape, op),
        _ => cuda::compare(a, b, shape, op),
    }
}

/// `a cmp scalar`, as a `bool` tensor.
pub(crate) fn compare_scalar(a: &RawTensor, scalar: f64, op: CompareOp) -> Result<RawTensor> {
    match &*a.storage {
        Storage::Cpu(_) => cpu::compare_scalar(a, scalar, op),
        Storage::Cuda(_) => cuda::compare_scalar(a, scalar, op),
    }
}
