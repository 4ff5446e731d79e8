//! CPU kernel of the GELU gradient.

use crate::backend::cpu::strided::{for_each_chunk, map2};
use crate::backend::cpu::vmath::{self, vectorized};
use crate::core::dtype::Half;
use crate::core::error::Result;
use crate::core::layout::Layout;
use crate::core::pool::PooledVec;
use crate::core::raw::{Operand, RawTensor};
use crate::core::{DType, Element};
use crate::ops::half::{HalfBlock, BLOCK};
use crate::ops::unary::{cpu_erf, Approximate, GELU_BETA, GELU_KAPPA};
use std::f64::consts::{FRAC_1_SQRT_2, FRAC_2_SQRT_PI};

/// `dy · gelu'(x)` on one element type.
trait GeluGrad: Element {
    fn gelu_grad(dy: Self, x: Self) -> Self;
    fn gelu_tanh_grad(dy: Self, x: Self) -> Self;
}

// PyTorch's `GeluBackwardKernelImpl`, in its order of operations, with its constants rounded
// to the element type. `f32` takes `vmath`'s `exp` and `tanh`, as the `Exp` and `Tanh` ops do,
// and the GELU forward's `erf` (`ops::unary::cpu_erf`): all branch-free, so the loops
// vectorize; `f64` the C library's functions.
macro_rules! float_grad {
    ($t:ty, $erf:path, $exp:path, $tanh:path) => {
        impl GeluGrad for $t {
            /// `dy (Φ(x) + x φ(x))`.
            #[inline(always)]
            fn gelu_grad(dy: Self, x: Self) -> Self {
                const ALPHA: $t = FRAC_1_SQRT_2 as $t;
                const BETA: $t = (FRAC_2_SQRT_PI * FRAC_1_SQRT_2 * 0.5) as $t;
                let cdf = 0.5 * (1.0 + $erf(x * ALPHA));
                let pdf = BETA * $exp(x * x * -0.5);
                dy * (cdf + x * pdf)
            }
            /// `dy` times the derivative of `x/2 · (1 + tanh(β (x + κ x³)))`, by the product
            /// rule: `(1 + t)/2 + x/2 · (1 - t²) · β (1 + 3κ x²)`.
            #[inline(always)]
            fn gelu_tanh_grad(dy: Self, x: Self) -> Self {
                const BETA: $t = GELU_BETA as $t;
                const KAPPA: $t = GELU_KAPPA as $t;
                let x_sq = x * x;
                let x_cube = x_sq * x;
                let inner = BETA * (x + KAPPA * x_cube);
                let t = $tanh(inner);
                let left = 0.5 * x;
                let right = 1.0 + t;
                let left_derivative = 0.5 * right;
                let tanh_derivative = 1.0 - t * t;
                let inner_derivative = BETA * (1.0 + 3.0 * KAPPA * x_sq);
                let right_derivative = left * tanh_derivative * inner_derivative;
                dy * (left_derivative + right_derivative)
            }
        }
    };
}
float_grad!(f32, cpu_erf::erf, vmath::exp, vmath::tanh);
float_grad!(f64, libm::erf, f64::exp, f64::tanh);

// f16 and bf16: the f32 formula on the widened values, rounded once (PyTorch's `opmath_t`).
macro_rules! half_grad {
    ($t:ty) => {
        impl GeluGrad for $t {
            #[inline(always)]
            fn gelu_grad(dy: Self, x: Self) -> Self {
                Half::narrow(f32::gelu_grad(dy.widen(), x.widen()))
            }
            #[inline(always)]
            fn gelu_tanh_grad(dy: Self, x: Self) -> Self {
                Half::narrow(f32::gelu_tanh_grad(dy.widen(), x.widen()))
            }
        }
    };
}
half_grad!(half::f16);
half_grad!(half::bf16);

/// `f` itself: lets a closure marked `#[inline(always)]` (an attribute Rust takes on a closure
/// only in argument position) be bound to a name.
#[inline(always)]
fn inlined<A, B, R>(f: impl Fn(A, B) -> R + Copy + Sync) -> impl Fn(A, B) -> R + Copy + Sync {
    f
}

/// Runs `$go` with `$f` bound to the gradient function of `approximate`: closures that must
/// inline rather than the functions themselves, whose call shims LLVM may leave out of line
/// (the exact form, with its erf, is large), which makes the loops scalar.
macro_rules! with_grad {
    ($approximate:expr, |$f:ident| $go:expr) => {
        match $approximate {
            Approximate::None => {
                let $f = inlined(
                    #[inline(always)]
                    |g, v| GeluGrad::gelu_grad(g, v),
                );
                $go
            }
            Approximate::Tanh => {
                let $f = inlined(
                    #[inline(always)]
                    |g, v| GeluGrad::gelu_tanh_grad(g, v),
                );
                $go
            }
        }
    };
}

fn typed<T: GeluGrad>(
    mut grad: Operand<'_>,
    x: &RawTensor,
    approximate: Approximate,
) -> Result<RawTensor> {
    let xs = x.cpu_slice::<T>().expect("cpu");
    if let Some(rx) = x.layout.contiguous_range() {
        let xs = &xs[rx];
        if let Operand::Owned(owner) = &mut grad {
            if let Some(dst) = owner.unique_cpu_data::<T>() {
                // `#[inline(always)]`: the loop must compile inside `vectorized`'s wide variants.
                with_grad!(approximate, |f| for_each_chunk(dst, |start, chunk| {
                    let xs = &xs[start..start + chunk.len()];
                    vectorized(
                        #[inline(always)]
                        || {
                            for (g, &v) in chunk.iter_mut().zip(xs) {
                                *g = f(*g, v);
                            }
                        },
                    )
                }));
                return Ok(grad.into_owned());
            }
        }
        if let Some(rg) = grad.layout.contiguous_range() {
            let gs = &grad.cpu_slice::<T>().expect("cpu")[rg];
            let mut out = PooledVec::<T>::with_len(gs.len())?;
            let layout = Layout::contiguous(grad.layout.shape);
            with_grad!(approximate, |f| for_each_chunk(
                out.as_mut_slice(),
                |start, chunk| {
                    let end = start + chunk.len();
                    let (gs, xs) = (&gs[start..end], &xs[start..end]);
                    vectorized(
                        #[inline(always)]
                        || {
                            for ((o, &g), &v) in chunk.iter_mut().zip(gs).zip(xs) {
                                *o = f(g, v);
                            }
                        },
                    )
                }
            ));
            return Ok(RawTensor::from_cpu_buffer(out, layout));
        }
    }
    let gs = grad.cpu_slice::<T>().expect("cpu");
    let mut out = PooledVec::<T>::with_len(grad.numel())?;
    let layout = Layout::contiguous(grad.layout.shape);
    with_grad!(approximate, |f| map2(
        gs,
        &grad.layout,
        xs,
        &x.layout,
        out.as_mut_slice(),
        f
    ));
    Ok(RawTensor::from_cpu_buffer(out, layout))
}

/// `out[i] = narrow(f(widen(grad[i]), widen(x[i])))` in blocks of [`BLOCK`], where `grad` is
/// `out` itself when it is `None` (in place); equal lengths. `ops::half::zip_blocks`, but with
/// the `f32` loop inside `vectorized`: at the build's baseline vector width, the exact gradient
/// (every range of erf computed) cost twice what the composed GELU's gradient did.
fn half_blocks<H: HalfBlock>(
    grad: Option<&[H]>,
    x: &[H],
    out: &mut [H],
    f: impl Fn(f32, f32) -> f32 + Sync,
) {
    for_each_chunk(out, |start, chunk| {
        let (mut gb, mut xb) = ([0f32; BLOCK], [0f32; BLOCK]);
        for (k, o) in chunk.chunks_mut(BLOCK).enumerate() {
            let (at, n) = (start + k * BLOCK, o.len());
            let (gb, xb) = (&mut gb[..n], &mut xb[..n]);
            H::widen_block(grad.map_or(&*o, |g| &g[at..at + n]), gb);
            H::widen_block(&x[at..at + n], xb);
            vectorized(
                #[inline(always)]
                || {
                    for (g, &v) in gb.iter_mut().zip(xb.iter()) {
                        *g = f(*g, v);
                    }
                },
            );
            H::narrow_block(gb, o);
        }
    });
}

/// `f16`/`bf16`: contiguous operands in blocks (widened to `f32`, the `f32` formula, narrowed
/// once: the bits of the per-element path); strided views per element.
fn half_typed<H: HalfBlock + GeluGrad>(
    mut grad: Operand<'_>,
    x: &RawTensor,
    approximate: Approximate,
) -> Result<RawTensor> {
    let (Some(rx), Some(rg)) = (x.layout.contiguous_range(), grad.layout.contiguous_range()) else {
        return typed::<H>(grad, x, approximate);
    };
    let xs = &x.cpu_slice::<H>().expect("cpu")[rx];
    if let Operand::Owned(owner) = &mut grad {
        if let Some(dst) = owner.unique_cpu_data::<H>() {
            with_grad!(approximate, |f| half_blocks(
                None,
                xs,
                dst,
                #[inline(always)]
                |g: f32, v: f32| f(g, v)
            ));
            return Ok(grad.into_owned());
        }
    }
    let gs = &grad.cpu_slice::<H>().expect("cpu")[rg];
    let mut out = PooledVec::<H>::with_len(gs.len())?;
    let layout = Layout::contiguous(grad.layout.shape);
    with_grad!(approximate, |f| half_blocks(
        Some(gs),
        xs,
        out.as_mut_slice(),
        #[inline(always)]
        |g: f32, v: f32| f(g, v)
    ));
    Ok(RawTensor::from_cpu_buffer(out, layout))
}

pub(crate) fn gelu_backward(
    grad: Operand<'_>,
    x: &RawTensor,
    approximate: Approximate,
) -> Result<RawTensor> {
    match grad.dtype {
        DType::F32 => typed::<f32>(grad, x, approximate),
        DType::F64 => typed::<f64>(grad, x, approximate),
        DType::F16 => half_typed::<half::f16>(grad, x, approximate),
        DType::BF16 => half_typed::<half::bf16>(grad, x, approximate),
        _ => unreachable!("checked in gelu_backward"),
    }
}

impl super::GeluBackwardKernel for crate::ops::backend::CpuBackend {
    #[inline(always)]
    fn gelu_backward(
        self,
        grad: Operand<'_>,
        x: &RawTensor,
        approximate: Approximate,
    ) -> Result<RawTensor> {
        gelu_backward(grad, x, approximate)
    }
}
