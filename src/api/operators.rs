//! `std::ops` on both fronts: `+ - * /` and unary `-`, with tensors (same device, by type on
//! the typed front) and with Rust scalars. Each forwards to the declared op; untracked owned
//! operands lend their buffers to the result.

use super::binary::{binary_out_of_line as binary, binary_scalar};
use super::unary::unary;
use crate::core::error::Result;
use crate::core::raw::Operand;
use crate::core::{Element, Numeric};
use crate::device::Device;
use crate::graph::Out;
use crate::ops::{self, BinaryOp, UnaryOp};
use crate::tensor::operand::sealed::AsRaw;
use crate::tensor::{AssignElementIs, ElementIs, OperandOn, Tensor};
use crate::DynTensor;
use std::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Sub, SubAssign};

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
        return ops::binary::binary_typed_front::<E>(lhs.into_operand(), rhs.into_operand(), op)
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

/// PyTorch's check of an in-place op's operands: the result keeps `lhs`'s shape, and a leaf
/// that requires grad cannot be written while gradients are recorded.
fn check_in_place<D: Device, E: Element>(lhs: &Tensor<D, E>, rhs: &[usize]) -> Result<()> {
    if crate::graph::is_grad_enabled() && lhs.node.as_ref().is_some_and(|n| n.is_leaf()) {
        return Err(crate::core::error::Error::Autograd(
            "a leaf Variable that requires grad is being used in an in-place operation.".into(),
        ));
    }
    let out = lhs.shape();
    let n = out.len().max(rhs.len());
    let size = |s: &[usize], i: usize| (i + s.len()).checked_sub(n).map_or(1, |j| s[j]);
    let broadcast: Vec<usize> = (0..n)
        .map(|i| {
            let (a, b) = (size(out, i), size(rhs, i));
            if a == 1 {
                b
            } else {
                a
            }
        })
        .collect();
    let fits = (0..n).all(|i| {
        let (a, b) = (size(out, i), size(rhs, i));
        a == b || b == 1 || a == 1
    });
    if !fits {
        // The broadcast itself fails: the op's own error says how.
        return Ok(());
    }
    if broadcast != out {
        return Err(crate::core::error::Error::Shape(format!(
            "output with shape {out:?} doesn't match the broadcast shape {broadcast:?}"
        )));
    }
    Ok(())
}

/// `lhs op= rhs`, with value semantics: `lhs` is rebound to the result, and no other tensor
/// sees the change. An untracked `lhs` whose buffer no other tensor shares has its buffer
/// reused for the result (nothing else can see it); otherwise the result is computed into a
/// new buffer (and recorded, when either side is tracked, as PyTorch's in-place op on a
/// non-leaf rebinds its `grad_fn`). Views and clones of `lhs` keep their values: devtype never
/// writes into a storage another tensor holds (see the operators' docs).
#[inline]
fn assign_op<D: Device, E: Element, R: AsRaw>(
    lhs: &mut Tensor<D, E>,
    rhs: R,
    op: BinaryOp,
) -> Result<()> {
    check_in_place(lhs, rhs.raw().shape())?;
    let device = lhs.device();
    if crate::graph::is_grad_enabled() && (lhs.node.is_some() || rhs.grad_node().is_some()) {
        let out = binary(lhs.input(), rhs.input(), op)?;
        *lhs = Tensor::from_out(out, device);
        return Ok(());
    }
    // Untracked (or under `no_grad`): hand `lhs`'s buffer to the op so it can be reused. The
    // placeholder is a handle to `rhs`, dropped at once.
    let own = std::mem::replace(&mut lhs.raw, rhs.raw().clone());
    lhs.raw = ops::binary::binary_out_of_line(Operand::Owned(own), rhs.into_operand(), op)?;
    Ok(())
}

/// `lhs op= s` with a scalar.
#[inline]
fn assign_scalar<D: Device, E: Element>(lhs: &mut Tensor<D, E>, s: E, op: BinaryOp) -> Result<()> {
    check_in_place(lhs, &[])?;
    let device = lhs.device();
    if crate::graph::is_grad_enabled() && lhs.node.is_some() {
        let out = binary_scalar(lhs.input(), s.to_scalar(), op, false)?;
        *lhs = Tensor::from_out(out, device);
        return Ok(());
    }
    // Hand `lhs`'s buffer to the op so it can be reused; the placeholder is a 0-dim tensor.
    let placeholder = Tensor::<D, E>::try_scalar(s, device)?.raw;
    let own = std::mem::replace(&mut lhs.raw, placeholder);
    lhs.raw = ops::binary::binary_scalar(Operand::Owned(own), s.to_scalar(), op, false)?;
    Ok(())
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
        impl<D: Device, E: Numeric, R: OperandOn<D> + ElementIs<E>> $trait<R> for Tensor<D, E> {
            type Output = Tensor<D, E>;
            #[track_caller]
            fn $method(self, rhs: R) -> Tensor<D, E> {
                let device = self.device();
                or_panic(tensor_op(self, rhs, BinaryOp::$op, device))
            }
        }
        impl<D: Device, E: Numeric, R: OperandOn<D> + ElementIs<E>> $trait<R> for &Tensor<D, E> {
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

macro_rules! assign_operator {
    ($trait:ident, $method:ident, $op:ident) => {
        /// `self = self op rhs`, with value semantics (this is **not** PyTorch's write-through
        /// `add_`): `self` is rebound to the result, and every other tensor keeps its values,
        /// including a tensor `self` is a view of (`narrow`, `transpose`, `view`, ...) and a
        /// clone of `self`. The buffer is reused when nothing else holds it. To change part of
        /// a tensor, build the new tensor with [`slice_scatter`](Tensor::slice_scatter) or
        /// [`select_scatter`](Tensor::select_scatter): PyTorch's `x[1:3] += 1` is
        /// `x = x.slice_scatter(&(x.narrow(0, 1, 2) + 1.0), 0, 1, 3)`.
        ///
        /// The operand must be on the same device (by type), and the result keeps `self`'s
        /// shape. Panics with PyTorch's text on a leaf that requires grad (outside `no_grad`).
        ///
        /// ```
        /// use devtype::prelude::*;
        /// let base = Tensor::<Cpu>::zeros([4], Cpu);
        /// let mut v = base.narrow(0, 0, 2);
        /// v += 1.0;
        /// assert_eq!(v.to_vec(), [1.0, 1.0]);
        /// assert_eq!(base.to_vec(), [0.0; 4]); // a view is rebound, never written through
        /// let base = base.slice_scatter(&v, 0, 0, 2); // PyTorch's `base[0:2] = v`
        /// assert_eq!(base.to_vec(), [1.0, 1.0, 0.0, 0.0]);
        /// ```
        impl<D: Device, E: Numeric, R: OperandOn<D> + AssignElementIs<E>> $trait<R>
            for Tensor<D, E>
        {
            #[track_caller]
            fn $method(&mut self, rhs: R) {
                or_panic(assign_op(self, rhs, BinaryOp::$op))
            }
        }
        assign_scalar_operator!($trait, $method, $op, f32);
        assign_scalar_operator!($trait, $method, $op, f64);
        assign_scalar_operator!($trait, $method, $op, i64);
    };
}

macro_rules! assign_scalar_operator {
    ($trait:ident, $method:ident, $op:ident, $t:ty) => {
        impl<D: Device> $trait<$t> for Tensor<D, $t> {
            #[track_caller]
            fn $method(&mut self, rhs: $t) {
                or_panic(assign_scalar(self, rhs, BinaryOp::$op))
            }
        }
    };
}

assign_operator!(AddAssign, add_assign, Add);
assign_operator!(SubAssign, sub_assign, Sub);
assign_operator!(MulAssign, mul_assign, Mul);
assign_operator!(DivAssign, div_assign, Div);

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

/// PyTorch's checks of an in-place op on the dynamic front, before anything is computed: the
/// result type of the operands must cast to `lhs`'s dtype (`canCast`), a leaf that requires
/// grad cannot be written while gradients are recorded, and the broadcast shape must be
/// `lhs`'s own.
fn check_in_place_dyn(lhs: &DynTensor, result: crate::core::DType, rhs: &[usize]) -> Result<()> {
    if !crate::core::DType::can_cast(result, lhs.dtype()) {
        return Err(crate::core::error::Error::ResultTypeCast {
            result,
            output: lhs.dtype(),
        });
    }
    if crate::graph::is_grad_enabled() && lhs.node.as_ref().is_some_and(|n| n.is_leaf()) {
        return Err(crate::core::error::Error::Autograd(
            "a leaf Variable that requires grad is being used in an in-place operation.".into(),
        ));
    }
    let out = lhs.shape();
    if let Ok(broadcast) = crate::core::layout::broadcast_shapes(out, rhs) {
        if &broadcast[..] != out {
            return Err(crate::core::error::Error::Shape(format!(
                "output with shape {out:?} doesn't match the broadcast shape {:?}",
                &broadcast[..]
            )));
        }
    }
    Ok(())
}

/// Rebinds `lhs` to `result` (computed in the operands' result type), converted to `lhs`'s
/// dtype, as the typed front's `op=` does: no other tensor sees the change.
///
/// While gradients are recorded, `lhs` takes the result's node (PyTorch's in-place op on a
/// non-leaf rebinds its `grad_fn`). Under `no_grad` nothing is recorded, and `lhs` keeps its
/// own node, as the typed front does: a parameter updated there stays the same parameter
/// (rebinding the node too dropped its leaf, so it silently stopped getting gradients).
fn finish_in_place(lhs: &mut DynTensor, result: DynTensor) -> Result<()> {
    let result = if result.dtype() == lhs.dtype() {
        result
    } else {
        result.to_dtype(lhs.dtype())?
    };
    if crate::graph::is_grad_enabled() {
        *lhs = result;
    } else {
        lhs.raw = result.raw;
    }
    Ok(())
}

macro_rules! dyn_in_place {
    ($($name:ident, $scalar_name:ident, $op:ident, $torch:literal;)*) => {
        impl DynTensor {
            $(
                #[doc = concat!("`self = self ", $torch, " other`, with value semantics: `self` is rebound to the result (PyTorch's `", stringify!($name), "` writes")]
                /// through views instead; here views and clones of `self`, and the tensor
                /// `self` is a view of, keep their values: use
                /// [`slice_scatter`](DynTensor::slice_scatter) to change part of a tensor).
                /// With broadcasting and type promotion: the op computes in the operands' result
                /// type, which must cast to `self`'s dtype (`i64.add_(&f32)` is an `Err`:
                /// `result type Float can't be cast to the desired output type Long`; an `f32`
                /// tensor takes an `f64` result, narrowed).
                pub fn $name(&mut self, other: &DynTensor) -> Result<()> {
                    let result = super::binary::result_type(&self.raw, &other.raw);
                    // True division computes integers in floating point (`i64.div_(i64)` is
                    // PyTorch's `result type Float can't be cast ...`).
                    let result = if stringify!($op) == "div" {
                        super::binary::float_op_type(result)
                    } else {
                        result
                    };
                    check_in_place_dyn(self, result, other.shape())?;
                    let out = DynTensor::$op(self, other)?;
                    finish_in_place(self, out)
                }

                #[doc = concat!("`self = self ", $torch, " s` with a scalar, promoted as `", stringify!($op), "_scalar`:")]
                /// an integer tensor cannot take a float scalar. As PyTorch, the scalar is not
                /// range-checked: it computes in the result dtype (`f16 + 1e6` is `inf`).
                /// `self` is rebound, as [`add_`](DynTensor::add_): no other tensor changes.
                pub fn $scalar_name(&mut self, s: impl Into<crate::core::Scalar>) -> Result<()> {
                    let s = s.into();
                    let result = crate::core::ResultType::new()
                        .tensor(self.dtype(), self.shape().len())
                        .scalar(s)
                        .finish();
                    let result = if stringify!($op) == "div" {
                        super::binary::float_op_type(result)
                    } else {
                        result
                    };
                    check_in_place_dyn(self, result, &[])?;
                    let out = paste::paste! { DynTensor::[<$op _scalar>](self, s)? };
                    finish_in_place(self, out)
                }
            )*
        }
    };
}

dyn_in_place! {
    add_, add_scalar_, add, "+";
    sub_, sub_scalar_, sub, "-";
    mul_, mul_scalar_, mul, "*";
    div_, div_scalar_, div, "/";
}
