//! CPU kernels for element-wise math.

use super::{UnaryOp, GELU_BETA, GELU_KAPPA};
use crate::backend::cpu::strided::{for_each_chunk, map1};
use crate::backend::cpu::vmath::{self, vectorized};
use crate::core::dtype::Half;
use crate::core::error::Result;
use crate::core::layout::Layout;
use crate::core::pool::PooledVec;
use crate::core::raw::{Operand, RawTensor};
use crate::core::{DType, Element, Float};
use crate::ops::half::{map_blocks, map_blocks_in_place, HalfBlock};

/// The math of a unary op on one element type.
pub(crate) trait UnaryMath: Element {
    fn neg(self) -> Self;
    fn relu(self) -> Self;
    fn abs(self) -> Self;
    fn square(self) -> Self;
    fn exp(self) -> Self;
    fn log(self) -> Self;
    fn sqrt(self) -> Self;
    fn tanh(self) -> Self;
    fn sigmoid(self) -> Self;
    fn reciprocal(self) -> Self;
    fn erf(self) -> Self;
    fn gelu(self) -> Self;
    fn gelu_tanh(self) -> Self;
}

// `f32`'s transcendental functions are the vectorizable ones of `vmath` (PyTorch uses SLEEF
// there); `f64` keeps the C library's.
macro_rules! float_math {
    ($t:ty, $exp:path, $ln:path, $tanh:path, $sigmoid:path, $erf:path, $gelu_erf:path) => {
        impl UnaryMath for $t {
            #[inline(always)]
            fn neg(self) -> Self {
                -self
            }
            /// `max`, not a branch that returns `self`: applied in place, such a branch
            /// lets LLVM store only the lanes that change, a masked store (`vmaskmovps`)
            /// that AMD's Zen cores run microcoded (`relu` on `f16`, through a block
            /// buffer, ran at half the speed of `f32` on Zen 3). `+ 0.0` makes
            /// `relu(-0.0)` `+0.0` on every path (`max` may return either zero); NaN
            /// propagates, as in PyTorch.
            #[inline(always)]
            fn relu(self) -> Self {
                if self.is_nan() {
                    self + self
                } else {
                    self.max(0.0) + 0.0
                }
            }
            #[inline(always)]
            fn abs(self) -> Self {
                Float::abs(self)
            }
            #[inline(always)]
            fn square(self) -> Self {
                self * self
            }
            #[inline(always)]
            fn exp(self) -> Self {
                $exp(self)
            }
            #[inline(always)]
            fn log(self) -> Self {
                $ln(self)
            }
            #[inline(always)]
            fn sqrt(self) -> Self {
                Float::sqrt(self)
            }
            #[inline(always)]
            fn tanh(self) -> Self {
                $tanh(self)
            }
            #[inline(always)]
            fn sigmoid(self) -> Self {
                $sigmoid(self)
            }
            #[inline(always)]
            fn reciprocal(self) -> Self {
                1.0 / self
            }
            #[inline(always)]
            fn erf(self) -> Self {
                $erf(self)
            }
            /// PyTorch's `GeluKernelImpl` (`approximate='none'`), in its order of operations.
            #[inline(always)]
            fn gelu(self) -> Self {
                const ALPHA: $t = std::f64::consts::FRAC_1_SQRT_2 as $t;
                self * 0.5 * (1.0 + $gelu_erf(self * ALPHA))
            }
            /// PyTorch's `GeluKernelImpl` (`approximate='tanh'`), in its order of operations.
            /// Branch-free for `f32` (`vmath::tanh`), so a loop over a slice vectorizes.
            #[inline(always)]
            fn gelu_tanh(self) -> Self {
                const BETA: $t = GELU_BETA as $t;
                const KAPPA: $t = GELU_KAPPA as $t;
                let x_cube = self * self * self;
                let inner = BETA * (self + KAPPA * x_cube);
                0.5 * self * (1.0 + $tanh(inner))
            }
        }
    };
}
// `erf` is the `libm` crate's (a port of musl's, within an ulp), as PyTorch's CPU kernel is
// the C library's (or SLEEF's, also within an ulp). The exact GELU's `f32` erf is the same
// algorithm written to vectorize (`cpu_erf`, also within an ulp): its gradient computes `erf`
// again, and one element at a time that doubled the cost of a GELU step.
float_math!(
    f32,
    vmath::exp,
    vmath::ln,
    vmath::tanh,
    vmath::sigmoid,
    libm::erff,
    super::cpu_erf::erf
);
float_math!(
    f64,
    Float::exp,
    Float::ln,
    Float::tanh,
    sigmoid_f64,
    libm::erf,
    libm::erf
);

#[inline(always)]
fn sigmoid_f64(x: f64) -> f64 {
    1.0 / (1.0 + Float::exp(-x))
}

// f16 and bf16: each function in f32 (exact inputs), rounded once. The per-element path of
// strided views; contiguous ones run the f32 functions in blocks (`half_typed`).
macro_rules! half_math {
    ($t:ty, $($f:ident),*) => {
        impl UnaryMath for $t {
            $(
                #[inline(always)]
                fn $f(self) -> Self {
                    Half::narrow(UnaryMath::$f(self.widen()))
                }
            )*
        }
    };
}
half_math!(
    half::f16,
    neg,
    relu,
    abs,
    square,
    exp,
    log,
    sqrt,
    tanh,
    sigmoid,
    reciprocal,
    erf,
    gelu,
    gelu_tanh
);
half_math!(
    half::bf16,
    neg,
    relu,
    abs,
    square,
    exp,
    log,
    sqrt,
    tanh,
    sigmoid,
    reciprocal,
    erf,
    gelu,
    gelu_tanh
);

impl UnaryMath for i64 {
    fn neg(self) -> Self {
        self.wrapping_neg()
    }
    fn relu(self) -> Self {
        self.max(0)
    }
    fn abs(self) -> Self {
        self.wrapping_abs()
    }
    fn square(self) -> Self {
        self.wrapping_mul(self)
    }
    // Integers never reach the floating-point ops (checked in `unary`).
    fn exp(self) -> Self {
        self
    }
    fn log(self) -> Self {
        self
    }
    fn sqrt(self) -> Self {
        self
    }
    fn tanh(self) -> Self {
        self
    }
    fn sigmoid(self) -> Self {
        self
    }
    fn reciprocal(self) -> Self {
        self
    }
    fn erf(self) -> Self {
        self
    }
    fn gelu(self) -> Self {
        self
    }
    fn gelu_tanh(self) -> Self {
        self
    }
}

/// `f` itself: lets a closure marked `#[inline(always)]` (an attribute Rust takes on a closure
/// only in argument position) be bound to a name.
#[inline(always)]
fn inlined<A, R>(f: impl Fn(A) -> R + Copy + Sync) -> impl Fn(A) -> R + Copy + Sync {
    f
}

macro_rules! with_unary {
    ($op:expr, |$f:ident| $go:expr) => {
        match $op {
            UnaryOp::Neg => {
                let $f = UnaryMath::neg;
                $go
            }
            UnaryOp::Relu => {
                let $f = UnaryMath::relu;
                $go
            }
            UnaryOp::Abs => {
                let $f = UnaryMath::abs;
                $go
            }
            UnaryOp::Square => {
                let $f = UnaryMath::square;
                $go
            }
            UnaryOp::Exp => {
                let $f = UnaryMath::exp;
                $go
            }
            UnaryOp::Log => {
                let $f = UnaryMath::log;
                $go
            }
            UnaryOp::Sqrt => {
                let $f = UnaryMath::sqrt;
                $go
            }
            UnaryOp::Tanh => {
                let $f = UnaryMath::tanh;
                $go
            }
            UnaryOp::Sigmoid => {
                let $f = UnaryMath::sigmoid;
                $go
            }
            UnaryOp::Reciprocal => {
                let $f = UnaryMath::reciprocal;
                $go
            }
            UnaryOp::Erf => {
                let $f = UnaryMath::erf;
                $go
            }
            // A closure that must inline, not the function itself: the exact GELU is large
            // enough (the vectorizable erf computes every range's formula) that LLVM left the
            // function's call shim out of line, and the loop ran one element at a time.
            UnaryOp::Gelu => {
                let $f = inlined(
                    #[inline(always)]
                    |v| UnaryMath::gelu(v),
                );
                $go
            }
            UnaryOp::GeluTanh => {
                let $f = UnaryMath::gelu_tanh;
                $go
            }
        }
    };
}

fn typed<T: UnaryMath>(mut a: Operand<'_>, op: UnaryOp) -> Result<RawTensor> {
    if let Operand::Owned(owner) = &mut a {
        if let Some(dst) = owner.unique_cpu_data::<T>() {
            // `#[inline(always)]`: the loop must compile inside `vectorized`'s wide variants.
            with_unary!(op, |f| for_each_chunk(dst, |_, c| vectorized(
                #[inline(always)]
                || {
                    for x in c.iter_mut() {
                        *x = f(*x);
                    }
                }
            )));
            return Ok(a.into_owned());
        }
    }
    let x = a.cpu_slice::<T>().expect("cpu");
    let mut out = PooledVec::<T>::with_len(a.numel())?;
    let layout = Layout::contiguous(a.layout.shape);
    with_unary!(op, |f| map1(x, &a.layout, out.as_mut_slice(), f));
    Ok(RawTensor::from_cpu_buffer(out, layout))
}

/// `f16`/`bf16`: contiguous operands in blocks (widened to `f32`, the `f32` function, narrowed
/// once: the bits of the per-element path); strided views per element.
fn half_typed<H: HalfBlock + UnaryMath>(mut a: Operand<'_>, op: UnaryOp) -> Result<RawTensor> {
    if let Operand::Owned(owner) = &mut a {
        if let Some(dst) = owner.unique_cpu_data::<H>() {
            with_unary!(op, |f| map_blocks_in_place(
                dst,
                #[inline(always)]
                |v: f32| f(v)
            ));
            return Ok(a.into_owned());
        }
    }
    let Some(r) = a.layout.contiguous_range() else {
        return typed::<H>(a, op);
    };
    let x = &a.cpu_slice::<H>().expect("cpu")[r];
    let mut out = PooledVec::<H>::with_len(a.numel())?;
    let layout = Layout::contiguous(a.layout.shape);
    with_unary!(op, |f| map_blocks(
        x,
        out.as_mut_slice(),
        #[inline(always)]
        |v: f32| f(v)
    ));
    Ok(RawTensor::from_cpu_buffer(out, layout))
}

pub(crate) fn unary(a: Operand<'_>, op: UnaryOp) -> Result<RawTensor> {
    match a.dtype {
        DType::F32 => typed::<f32>(a, op),
        DType::F64 => typed::<f64>(a, op),
        DType::I64 => typed::<i64>(a, op),
        DType::F16 => half_typed::<half::f16>(a, op),
        DType::BF16 => half_typed::<half::bf16>(a, op),
        DType::Bool => unreachable!("booleans are refused in `unary`"),
    }
}

impl super::UnaryKernel for crate::ops::backend::CpuBackend {
    #[inline(always)]
    fn unary(self, a: Operand<'_>, op: UnaryOp) -> Result<RawTensor> {
        unary(a, op)
    }
}
