//! Element-wise math on one tensor.

pub(super) mod cpu;
pub(crate) use cpu::UnaryMath;
/// The `f32` error function of the exact GELU's CPU kernels (forward and gradient).
pub(crate) mod cpu_erf;
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
    /// GELU, `x/2 (1 + erf(x/√2))` (floating point; PyTorch's `gelu(x, approximate='none')`)
    Gelu,
    /// GELU's tanh approximation, `x/2 (1 + tanh(√(2/π) (x + 0.044715 x³)))` (floating
    /// point; PyTorch's `gelu(x, approximate='tanh')`)
    GeluTanh,
}

// Declared with the ops that compute it (the forward here, the gradient in
// `ops::binary::gelu_backward`); `nn::functional` re-exports it.
/// Which GELU: PyTorch's `approximate='none'` (with the error function) or `'tanh'`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Approximate {
    /// `x Φ(x)`, `Φ` the standard normal's distribution function (PyTorch's default).
    #[default]
    None,
    /// `x/2 (1 + tanh(√(2/π) (x + 0.044715 x³)))`.
    Tanh,
}

impl UnaryOp {
    /// Every unary op.
    pub(crate) const ALL: [UnaryOp; 13] = [
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
        UnaryOp::Gelu,
        UnaryOp::GeluTanh,
    ];

    /// The GELU op of an approximation.
    pub(crate) const fn gelu(approximate: Approximate) -> UnaryOp {
        match approximate {
            Approximate::None => UnaryOp::Gelu,
            Approximate::Tanh => UnaryOp::GeluTanh,
        }
    }

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
            // One kernel for both approximations, as in PyTorch.
            UnaryOp::Gelu | UnaryOp::GeluTanh => "GeluKernelImpl",
        }
    }

    pub(crate) const fn float_only(self) -> bool {
        !matches!(
            self,
            UnaryOp::Neg | UnaryOp::Relu | UnaryOp::Abs | UnaryOp::Square
        )
    }
}

/// GELU's `tanh` approximation's `√(2/π)`, as PyTorch writes it (`M_SQRT2 * M_2_SQRTPI * 0.5`;
/// rounded to the element type where it is used, as PyTorch's kernels do).
pub(crate) const GELU_BETA: f64 = std::f64::consts::SQRT_2 * std::f64::consts::FRAC_2_SQRT_PI * 0.5;
/// GELU's `tanh` approximation's cubic coefficient.
pub(crate) const GELU_KAPPA: f64 = 0.044_715;

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
