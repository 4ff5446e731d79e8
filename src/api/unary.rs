//! Element-wise math of one tensor: forward, backward rules, and the declarations.

use super::declare::declare_ops;
use super::kit;
use crate::core::error::{Error, Result};
use crate::core::raw::{Operand, RawTensor};
use crate::core::DType;
use crate::core::Numeric;
use crate::device::Device;
use crate::graph::{record, In, Out};
use crate::ops::unary::Approximate;
use crate::ops::{self, BinaryOp, CompareOp, UnaryOp};
use crate::tensor::Tensor;

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
        UnaryOp::Erf => "ErfBackward0",
        UnaryOp::Gelu | UnaryOp::GeluTanh => "GeluBackward0",
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
        UnaryOp::Relu => ops::binary::relu_backward::relu_backward(Operand::Owned(g), y()),
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
        UnaryOp::Erf => {
            // 2/√π e^{-x²}
            let e = kit::unary(
                kit::neg(kit::unary(x().clone(), UnaryOp::Square)?)?,
                UnaryOp::Exp,
            )?;
            kit::mul(kit::mul_scalar(g, std::f64::consts::FRAC_2_SQRT_PI)?, &e)
        }
        UnaryOp::Gelu => {
            ops::binary::gelu_backward::gelu_backward(Operand::Owned(g), x(), Approximate::None)
        }
        UnaryOp::GeluTanh => {
            ops::binary::gelu_backward::gelu_backward(Operand::Owned(g), x(), Approximate::Tanh)
        }
    }
}

/// `op(a)`, recorded.
pub(crate) fn unary(a: In<'_>, op: UnaryOp) -> Result<Out> {
    let value = ops::unary::unary(Operand::Borrowed(a.value), op)?;
    let node = record(name(op), &[a.node], |_| {
        let saves_x = matches!(
            op,
            UnaryOp::Abs
                | UnaryOp::Square
                | UnaryOp::Log
                | UnaryOp::Erf
                | UnaryOp::Gelu
                | UnaryOp::GeluTanh
        );
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

/// The dynamic front's `op(a)` of an op that computes in floating point: integers and `bool`
/// in `float32` (PyTorch's unary float ops: `sqrt(i64)` is `float32`).
fn float_unary(a: In<'_>, op: UnaryOp) -> Result<Out> {
    super::binary::with_dtype(a, super::binary::float_op_type(a.value.dtype), |a| {
        unary(a, op)
    })
}

/// The dynamic front's `neg`, `relu` and `square` of a `bool` tensor, as PyTorch: the first two
/// refuse it with its texts, `square` is `pow(x, 2)`, an `i64` tensor.
fn dyn_unary(a: In<'_>, op: UnaryOp) -> Result<Out> {
    if a.value.dtype != DType::Bool {
        return unary(a, op);
    }
    match op {
        UnaryOp::Neg => Err(Error::UnsupportedOperation(
            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.",
        )),
        UnaryOp::Relu => Err(Error::UnsupportedOperation(
            "Boolean inputs not supported for relu",
        )),
        UnaryOp::Square => super::binary::with_dtype(a, DType::I64, |a| unary(a, op)),
        _ => unary(a, op),
    }
}

declare_ops! {
    /// `-x` element-wise (the fallible form of the `-` operator).
    Numeric fn neg(x) -> Same = unary(x, UnaryOp::Neg),
        dynamic dyn_unary(x, UnaryOp::Neg);
    /// `max(x, 0)` element-wise; the gradient passes where the output is positive.
    Numeric fn relu(x) -> Same = unary(x, UnaryOp::Relu),
        dynamic dyn_unary(x, UnaryOp::Relu);
    /// `|x|` element-wise.
    Numeric fn abs(x) -> Same = unary(x, UnaryOp::Abs);
    /// `x * x` element-wise.
    Numeric fn square(x) -> Same = unary(x, UnaryOp::Square),
        dynamic dyn_unary(x, UnaryOp::Square);
    /// `e^x` element-wise.
    Float fn exp(x) -> Same = unary(x, UnaryOp::Exp),
        dynamic float_unary(x, UnaryOp::Exp);
    /// Natural logarithm element-wise.
    Float fn log(x) -> Same = unary(x, UnaryOp::Log),
        dynamic float_unary(x, UnaryOp::Log);
    /// Square root element-wise.
    Float fn sqrt(x) -> Same = unary(x, UnaryOp::Sqrt),
        dynamic float_unary(x, UnaryOp::Sqrt);
    /// Hyperbolic tangent element-wise.
    Float fn tanh(x) -> Same = unary(x, UnaryOp::Tanh),
        dynamic float_unary(x, UnaryOp::Tanh);
    /// Logistic sigmoid element-wise.
    Float fn sigmoid(x) -> Same = unary(x, UnaryOp::Sigmoid),
        dynamic float_unary(x, UnaryOp::Sigmoid);
    /// `1 / x` element-wise.
    Float fn reciprocal(x) -> Same = unary(x, UnaryOp::Reciprocal),
        dynamic float_unary(x, UnaryOp::Reciprocal);
    /// The error function element-wise (`torch.erf`).
    Float fn erf(x) -> Same = unary(x, UnaryOp::Erf),
        dynamic float_unary(x, UnaryOp::Erf);
}

impl<D: Device, E: Numeric> Tensor<D, E> {
    /// `relu` that reuses this tensor's buffer when nothing else holds it.
    pub fn try_relu_owned(self) -> Result<Self> {
        let device = self.device();
        let node = self.node;
        Ok(Tensor::from_out(
            relu_owned(Operand::Owned(self.raw), node)?,
            device,
        ))
    }

    /// `relu` that reuses this tensor's buffer when nothing else holds it.
    ///
    /// Panics with the error's text where [`try_relu_owned`](Self::try_relu_owned) returns it.
    #[track_caller]
    pub fn relu_owned(self) -> Self {
        match self.try_relu_owned() {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }
}
