//! Element-wise math on one tensor.

pub(super) mod cpu;
pub(crate) use cpu::UnaryMath;
pub(super) mod cuda;

use crate::core::error::{Error, Result};
use crate::core::raw::{Operand, RawTensor};
use crate::core::DType;

/// An element-wise function of one tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `-x`
    Neg,
    /// `max(x, 0)`
    Relu,
    /// `|x|`
    Abs,
    /// `x * x`
    Square,
    /// `e^x` (floating point)
    Exp,
    /// `ln x` (floating point)
    Log,
    /// `√x` (floating point)
    Sqrt,
    /// `tanh x` (floating point)
    Tanh,
    /// `1 / (1 + e^-x)` (floating point)
    Sigmoid,
    /// `1 / x` (floating point)
    Reciprocal,
    /// The error function, `2/√π ∫₀ˣ e^{-t²} dt` (floating point)
    Erf,
}

impl UnaryOp {
    /// Every unary op.
    pub(crate) const ALL: [UnaryOp; 11] = [
        UnaryOp::Neg,
        UnaryOp::Relu,
        UnaryOp::Abs,
        UnaryOp::Square,
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Sqrt,
        UnaryOp::Tanh,
        UnaryOp::Sigmoid,
        UnaryOp::Reciprocal,
        UnaryOp::Erf,
    ];

    /// PyTorch's CPU kernel name, used in `"exp_vml_cpu" not implemented for 'Long'`.
    pub const fn kernel_name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "neg_cpu",
            UnaryOp::Relu => "clamp_min_cpu",
            UnaryOp::Abs => "abs_cpu",
            UnaryOp::Square => "mul_cpu",
            UnaryOp::Exp => "exp_vml_cpu",
            UnaryOp::Log => "log_vml_cpu",
            UnaryOp::Sqrt => "sqrt_vml_cpu",
            UnaryOp::Tanh => "tanh_vml_cpu",
            UnaryOp::Sigmoid => "sigmoid_cpu",
            UnaryOp::Reciprocal => "reciprocal_cpu",
            UnaryOp::Erf => "erf_vml_cpu",
        }
    }

    pub(crate) const fn float_only(self) -> bool {
        !matches!(
            self,
            UnaryOp::Neg | UnaryOp::Relu | UnaryOp::Abs | UnaryOp::Square
        )
    }
}

/// `op(a)`, written into `a`'s buffer when `a` is owned and nothing else uses it.
pub(crate) fn unary(a: Operand<'_>, op: UnaryOp) -> Result<RawTensor> {
    if a.dtype == DType::Bool || (op.float_only() && !a.dtype.is_float()) {
        return Err(Error::UnsupportedDType {
            op: op.kernel_name(),
            dtype: a.dtype,
        });
    }
    dispatch!([&a], |be| be.unary(a, op))
}

/// The kernel entries of this family, one impl per backend: [`CpuBackend`](crate::ops::backend::CpuBackend)
/// in `cpu.rs`, [`CudaBackend`](crate::ops::backend::CudaBackend) in `cuda.rs`. The operands are on
/// that backend's device (`dispatch!` checked it) and the functions above planned shapes
/// and checked dtypes.
pub(crate) trait UnaryKernel {
    fn unary(self, a: Operand<'_>, op: UnaryOp) -> Result<RawTensor>;
}
