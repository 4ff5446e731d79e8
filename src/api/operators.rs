//! `std::ops` on both fronts: `+ - * /` and unary `-`, with tensors (same device, by type on
//! the typed front) and with Rust scalars. Each forwards to the declared op; untracked owned
//! operands lend their buffers to the result.

use super::binary::{binary, binary_scalar};
use super::unary::unary;
use crate::core::error::Result;
use crate::core::{Element, Numeric};
use crate::device::Device;
use crate::graph::Out;
use crate::ops::{self, BinaryOp, UnaryOp};
use crate::tensor::operand::sealed::AsRaw;
use crate::tensor::{HasDevice, OperandOn, Tensor};
use crate::DynTensor;
use std::ops::{Add, Div, Mul, Neg, Sub};

/// `lhs op rhs` on `device`: when nothing is tracked, owned operands' buffers are reused and
/// the result is built in place.
#[inline(always)]
fn tensor_op<D: Device, E: Element, L: AsRaw, R: AsRaw>(
    lhs: L,
    rhs: R,
    op: BinaryOp,
    device: D,
) -> Result<Tensor<D, E>> {
    if lhs.grad_node().is_none() && rhs.grad_node().is_none() {
        return ops::binary::binary(lhs.into_operand(), rhs.into_operand(), op)
            .map(|raw| Tensor::from_raw(raw, device));
    }
    Ok(Tensor::from_out(
        binary(lhs.input(), rhs.input(), op)?,
        device,
    ))
}

/// `t op s` (or `s op t` when `scalar_first`): an untracked owned `t` lends its buffer.
#[inline]
fn scalar_op<T: AsRaw, E: Element>(t: T, s: E, op: BinaryOp, scalar_first: bool) -> Result<Out> {
    if t.grad_node().is_none() {
        return Ok(Out::untracked(ops::binary::binary_scalar(
            t.into_operand(),
            s.to_scalar(),
            op,
            scalar_first,
        )?));
    }
    binary_scalar(t.input(), s.to_scalar(), op, scalar_first)
}

/// The value of an operator, or a panic with the error's text (as PyTorch raises).
#[track_caller]
#[inline]
fn or_panic<T>(r: Result<T>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    }
}

macro_rules! operator {
    ($trait:ident, $method:ident, $op:ident) => {
        impl<D: Device, E: Numeric, R: OperandOn<D> + HasDevice<Element = E>> $trait<R>
            for Tensor<D, E>
        {
            type Output = Tensor<D, E>;
            #[track_caller]
            fn $method(self, rhs: R) -> Tensor<D, E> {
                let device = self.device();
                or_panic(tensor_op(self, rhs, BinaryOp::$op, device))
            }
        }
        impl<D: Device, E: Numeric, R: OperandOn<D> + HasDevice<Element = E>> $trait<R>
            for &Tensor<D, E>
        {
            type Output = Tensor<D, E>;
            #[track_caller]
            fn $method(self, rhs: R) -> Tensor<D, E> {
                or_panic(tensor_op(self, rhs, BinaryOp::$op, self.device()))
            }
        }
        scalar_operator!($trait, $method, $op, f32);
        scalar_operator!($trait, $method, $op, f64);
        scalar_operator!($trait, $method, $op, i64);

        impl $trait<&DynTensor> for &DynTensor {
            type Output = DynTensor;
            /// Panics with PyTorch's text on a device, shape or dtype mismatch; use the method
            /// of the same name for a `Result`.
            #[track_caller]
            fn $method(self, rhs: &DynTensor) -> DynTensor {
                or_panic(DynTensor::$method(self, rhs))
            }
        }
        impl $trait<DynTensor> for DynTensor {
            type Output = DynTensor;
            #[track_caller]
            fn $method(self, rhs: DynTensor) -> DynTensor {
                $trait::$method(&self, &rhs)
            }
        }
        impl $trait<&DynTensor> for DynTensor {
            type Output = DynTensor;
            #[track_caller]
            fn $method(self, rhs: &DynTensor) -> DynTensor {
                $trait::$method(&self, rhs)
            }
        }
        impl $trait<f64> for &DynTensor {
            type Output = DynTensor;
            #[track_caller]
            fn $method(self, rhs: f64) -> DynTensor {
                paste::paste! { or_panic(self.[<$method _scalar>](rhs)) }
            }
        }
    };
}

macro_rules! scalar_operator {
    ($trait:ident, $method:ident, $op:ident, $t:ty) => {
        impl<D: Device> $trait<$t> for Tensor<D, $t> {
            type Output = Tensor<D, $t>;
            #[track_caller]
            fn $method(self, rhs: $t) -> Tensor<D, $t> {
                let device = self.device();
                Tensor::from_out(or_panic(scalar_op(self, rhs, BinaryOp::$op, false)), device)
            }
        }
        impl<D: Device> $trait<$t> for &Tensor<D, $t> {
            type Output = Tensor<D, $t>;
            #[track_caller]
            fn $method(self, rhs: $t) -> Tensor<D, $t> {
                Tensor::from_out(
                    or_panic(scalar_op(self, rhs, BinaryOp::$op, false)),
                    self.device(),
                )
            }
        }
        impl<D: Device> $trait<Tensor<D, $t>> for $t {
            type Output = Tensor<D, $t>;
            #[track_caller]
            fn $method(self, rhs: Tensor<D, $t>) -> Tensor<D, $t> {
                let device = rhs.device();
                Tensor::from_out(or_panic(scalar_op(rhs, self, BinaryOp::$op, true)), device)
            }
        }
        impl<D: Device> $trait<&Tensor<D, $t>> for $t {
            type Output = Tensor<D, $t>;
            #[track_caller]
            fn $method(self, rhs: &Tensor<D, $t>) -> Tensor<D, $t> {
                Tensor::from_out(
                    or_panic(scalar_op(rhs, self, BinaryOp::$op, true)),
                    rhs.device(),
                )
            }
        }
    };
}

operator!(Add, add, Add);
operator!(Sub, sub, Sub);
operator!(Mul, mul, Mul);
operator!(Div, div, Div);

impl<D: Device, E: Numeric> Neg for Tensor<D, E> {
    type Output = Tensor<D, E>;
    #[track_caller]
    fn neg(self) -> Tensor<D, E> {
        let device = self.device();
        let out = if self.node.is_none() {
            ops::unary::unary(self.into_operand(), UnaryOp::Neg).map(Out::untracked)
        } else {
            unary(self.input(), UnaryOp::Neg)
        };
        Tensor::from_out(or_panic(out), device)
    }
}

impl<D: Device, E: Numeric> Neg for &Tensor<D, E> {
    type Output = Tensor<D, E>;
    #[track_caller]
    fn neg(self) -> Tensor<D, E> {
        or_panic(self.try_neg())
    }
}

impl Neg for &DynTensor {
    type Output = DynTensor;
    #[track_caller]
    fn neg(self) -> DynTensor {
        or_panic(DynTensor::neg(self))
    }
}
