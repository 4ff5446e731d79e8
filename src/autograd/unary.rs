//! Element-wise math of one tensor: forward, backward rules, and the `Var`/`DynVar` methods.

use super::dyn_var::DynVar;
use super::kit;
use super::var::{In, Out, Var};
use crate::core::error::Result;
use crate::core::raw::{Operand, RawTensor};
use crate::device::Device;
use crate::graph::record;
use crate::ops::{self, BinaryOp, CompareOp, UnaryOp};
use crate::tensor::{infallible, Float};

fn name(op: UnaryOp) -> &'static str {
    match op {
        UnaryOp::Neg => "NegBackward0",
        UnaryOp::Relu => "ReluBackward0",
        UnaryOp::Abs => "AbsBackward0",
        UnaryOp::Square => "PowBackward0",
        UnaryOp::Exp => "ExpBackward0",
        UnaryOp::Log => "LogBackward0",
        UnaryOp::Sqrt => "SqrtBackward0",
        UnaryOp::Tanh => "TanhBackward0",
        UnaryOp::Sigmoid => "SigmoidBackward0",
        UnaryOp::Reciprocal => "ReciprocalBackward0",
    }
}

/// `d op(x) / dx * g`, from the input `x` and the output `y`.
fn rule(
    op: UnaryOp,
    g: RawTensor,
    x: Option<&RawTensor>,
    y: Option<&RawTensor>,
) -> Result<RawTensor> {
    let x = || x.expect("the input is saved for this op");
    let y = || y.expect("the output is saved for this op");
    match op {
        UnaryOp::Neg => kit::neg(g),
        UnaryOp::Relu => ops::relu_backward::relu_backward(Operand::Owned(g), y()),
        UnaryOp::Abs => {
            let sign = kit::sub(
                kit::mask_scalar(x(), 0.0, CompareOp::Gt)?,
                &kit::mask_scalar(x(), 0.0, CompareOp::Lt)?,
            )?;
            kit::mul(g, &sign)
        }
        UnaryOp::Square => kit::mul(kit::mul_scalar(g, 2.0)?, x()),
        UnaryOp::Exp => kit::mul(g, y()),
        UnaryOp::Log => kit::div(g, x()),
        UnaryOp::Sqrt => kit::div(kit::mul_scalar(g, 0.5)?, y()),
        UnaryOp::Tanh => {
            // 1 - y^2
            let d = kit::scalar(
                kit::unary(y().clone(), UnaryOp::Square)?,
                1.0,
                BinaryOp::Sub,
                true,
            )?;
            kit::mul(g, &d)
        }
        UnaryOp::Sigmoid => {
            // y * (1 - y)
            let d = kit::mul(kit::scalar(y().clone(), 1.0, BinaryOp::Sub, true)?, y())?;
            kit::mul(g, &d)
        }
        UnaryOp::Reciprocal => kit::neg(kit::mul(g, &kit::unary(y().clone(), UnaryOp::Square)?)?),
    }
}

/// `op(a)`, recorded.
pub(crate) fn unary(a: In<'_>, op: UnaryOp) -> Result<Out> {
    let value = ops::unary::unary(Operand::Borrowed(a.value), op)?;
    let node = record(name(op), &[a.node], |_| {
        let saves_x = matches!(op, UnaryOp::Abs | UnaryOp::Square | UnaryOp::Log);
        let x = if saves_x { Some(a.value.clone()) } else { None };
        let y = if saves_x || op == UnaryOp::Neg {
            None
        } else {
            Some(value.clone())
        };
        move |g| Ok(vec![Some(rule(op, g, x.as_ref(), y.as_ref())?)])
    });
    Ok(Out { value, node })
}

/// `relu(a)` of an owned operand, recorded: the result is written into `a`'s buffer when
/// nothing else holds it (an op that saved `a` for its own backward holds it, so it is then
/// left alone and a new buffer is used).
pub(crate) fn relu_owned(
    a: Operand<'_>,
    node: Option<std::sync::Arc<crate::graph::Node>>,
) -> Result<Out> {
    let value = ops::unary::unary(a, UnaryOp::Relu)?;
    let node = record(name(UnaryOp::Relu), &[node.as_ref()], |_| {
        let y = value.clone();
        move |g| Ok(vec![Some(rule(UnaryOp::Relu, g, None, Some(&y))?)])
    });
    Ok(Out { value, node })
}

macro_rules! var_unary {
    ($($(#[$doc:meta])* $name:ident => $op:ident),* $(,)?) => {
        impl<D: Device, E: Float> Var<D, E> {
            $(
                paste::paste! {
                    $(#[$doc])*
                    pub fn [<try_ $name>](&self) -> Result<Self> {
                        Ok(self.wrap(unary(self.input(), UnaryOp::$op)?))
                    }
                }
                infallible!($(#[$doc])* pub fn $name(&self) -> Self);
            )*
        }
        impl DynVar {
            $(
                $(#[$doc])*
                pub fn $name(&self) -> Result<DynVar> {
                    Ok(DynVar::from_out(unary(self.input(), UnaryOp::$op)?))
                }
            )*
        }
    };
}

var_unary!(
    /// `max(x, 0)` element-wise; the gradient passes where the output is positive.
    relu => Relu,
    /// `|x|` element-wise.
    abs => Abs,
    /// `x * x` element-wise.
    square => Square,
    /// `e^x` element-wise.
    exp => Exp,
    /// Natural logarithm element-wise.
    log => Log,
    /// Square root element-wise.
    sqrt => Sqrt,
    /// Hyperbolic tangent element-wise.
    tanh => Tanh,
    /// Logistic sigmoid element-wise.
    sigmoid => Sigmoid,
    /// `1 / x` element-wise.
    reciprocal => Reciprocal,
);

impl DynVar {
    /// `-x`.
    pub fn neg(&self) -> Result<DynVar> {
        Ok(DynVar::from_out(unary(self.input(), UnaryOp::Neg)?))
    }
}
