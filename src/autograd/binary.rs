//! Broadcasting element-wise arithmetic, with tensors or scalars: forward, backward rules
//! (gradients summed back to each input's shape), and the `Var`/`DynVar` methods and operators.

use super::dyn_var::{DynOperand, DynVar};
use super::kit::{self, sum_to};
use super::var::{In, Out, Var, VarOperand};
use crate::core::error::Result;
use crate::core::raw::Operand;
use crate::device::Device;
use crate::dyn_tensor::check::same_device_elementwise;
use crate::graph::record;
use crate::ops::{self, BinaryOp, CompareOp, UnaryOp};
use crate::tensor::{infallible, Float, HasDevice, Scalar};
use std::ops::{Add, Div, Mul, Neg, Sub};

fn name(op: BinaryOp) -> &'static str {
    match op {
        BinaryOp::Add => "AddBackward0",
        BinaryOp::Sub => "SubBackward0",
        BinaryOp::Mul => "MulBackward0",
        BinaryOp::Div => "DivBackward0",
        BinaryOp::Maximum => "MaximumBackward0",
        BinaryOp::Minimum => "MinimumBackward0",
        BinaryOp::Pow => "PowBackward1",
        BinaryOp::AddRelu => "AddReluBackward0",
    }
}

/// `a op b` with broadcasting, recorded.
pub(crate) fn binary(a: In<'_>, b: In<'_>, op: BinaryOp) -> Result<Out> {
    let value = ops::binary::binary(Operand::Borrowed(a.value), Operand::Borrowed(b.value), op)?;
    let out = value.clone();
    let node = record(name(op), &[a.node, b.node], |needs| {
        let (need_a, need_b) = (needs[0], needs[1]);
        let (sa, sb) = (a.value.shape().to_vec(), b.value.shape().to_vec());
        let (x, y) = (a.value.clone(), b.value.clone());
        move |g| {
            let (ga, gb) = match op {
                BinaryOp::Add => (need_a.then(|| g.clone()), need_b.then_some(g)),
                BinaryOp::AddRelu => {
                    // The sum's gradient, where the output passed through.
                    let g = ops::relu_backward::relu_backward(Operand::Owned(g), &out)?;
                    (need_a.then(|| g.clone()), need_b.then_some(g))
                }
                BinaryOp::Sub => (
                    need_a.then(|| g.clone()),
                    need_b.then(|| kit::neg(g)).transpose()?,
                ),
                BinaryOp::Mul => (
                    need_a.then(|| kit::mul(g.clone(), &y)).transpose()?,
                    need_b.then(|| kit::mul(g, &x)).transpose()?,
                ),
                BinaryOp::Div => {
                    let ga = need_a.then(|| kit::div(g.clone(), &y)).transpose()?;
                    // d(x / y)/dy = -(x / y) / y
                    let gb = need_b
                        .then(|| kit::neg(kit::div(kit::mul(g, &out)?, &y)?))
                        .transpose()?;
                    (ga, gb)
                }
                BinaryOp::Maximum | BinaryOp::Minimum => {
                    // PyTorch's derivatives.yaml, for maximum (minimum swaps < and >):
                    //   self:  where(self == other, grad / 2, grad).masked_fill_(self < other, 0)
                    //   other: where(self == other, grad / 2, grad).masked_fill_(self > other, 0)
                    // Ties split the gradient; where either is NaN, no comparison holds and
                    // both operands take the whole gradient (the NaN one included).
                    let (loses_a, loses_b) = if op == BinaryOp::Maximum {
                        (CompareOp::Lt, CompareOp::Gt)
                    } else {
                        (CompareOp::Gt, CompareOp::Lt)
                    };
                    let half = kit::mul_scalar(kit::mask(&x, &y, CompareOp::Eq)?, 0.5)?;
                    // share = 1 - 0.5 * [x == y] - [x loses]
                    let share = |loses: CompareOp| -> Result<_> {
                        let off = ops::binary::binary(
                            Operand::Owned(kit::mask(&x, &y, loses)?),
                            Operand::Borrowed(&half),
                            BinaryOp::Add,
                        )?;
                        kit::scalar(off, 1.0, BinaryOp::Sub, true)
                    };
                    let ga = need_a.then(|| kit::mul(share(loses_a)?, &g)).transpose()?;
                    let gb = need_b.then(|| kit::mul(share(loses_b)?, &g)).transpose()?;
                    (ga, gb)
                }
                BinaryOp::Pow => {
                    let ga = need_a
                        .then(|| -> Result<_> {
                            // y * x^(y - 1)
                            let ym1 = kit::scalar(y.clone(), 1.0, BinaryOp::Sub, false)?;
                            let p = ops::binary::binary(
                                Operand::Borrowed(&x),
                                Operand::Owned(ym1),
                                BinaryOp::Pow,
                            )?;
                            kit::mul(kit::mul(p, &y)?, &g)
                        })
                        .transpose()?;
                    let gb = need_b
                        .then(|| {
                            kit::mul(kit::mul(kit::unary(x.clone(), UnaryOp::Log)?, &out)?, &g)
                        })
                        .transpose()?;
                    (ga, gb)
                }
            };
            Ok(vec![
                ga.map(|g| sum_to(g, &sa)).transpose()?,
                gb.map(|g| sum_to(g, &sb)).transpose()?,
            ])
        }
    });
    Ok(Out { value, node })
}

/// `a op s` (or `s op a` when `scalar_first`), recorded.
pub(crate) fn binary_scalar(
    a: In<'_>,
    scalar: Scalar,
    op: BinaryOp,
    scalar_first: bool,
) -> Result<Out> {
    let value = ops::binary::binary_scalar(Operand::Borrowed(a.value), scalar, op, scalar_first)?;
    // Gradients flow through floating-point tensors only, where the scalar is a float.
    let s = scalar.to_f64();
    let out = value.clone();
    let node = record(name(op), &[a.node], |_| {
        let x = a.value.clone();
        move |g| {
            let ga = match (op, scalar_first) {
                (BinaryOp::Add, _) | (BinaryOp::Sub, false) => g,
                (BinaryOp::AddRelu, _) => {
                    ops::relu_backward::relu_backward(Operand::Owned(g), &out)?
                }
                (BinaryOp::Sub, true) => kit::neg(g)?,
                (BinaryOp::Mul, _) => kit::mul_scalar(g, s)?,
                (BinaryOp::Div, false) => kit::scalar(g, s, BinaryOp::Div, false)?,
                // d(s / x)/dx = -(s / x) / x
                (BinaryOp::Div, true) => kit::neg(kit::div(kit::mul(g, &out)?, &x)?)?,
                // d(x^s)/dx = s * x^(s - 1)
                (BinaryOp::Pow, false) => kit::mul(
                    g,
                    &kit::mul_scalar(kit::scalar(x, s - 1.0, BinaryOp::Pow, false)?, s)?,
                )?,
                // d(s^x)/dx = s^x * ln(s)
                (BinaryOp::Pow, true) => kit::mul_scalar(kit::mul(g, &out)?, s.ln())?,
                (BinaryOp::Maximum, _) => kit::mul(g, &kit::mask_scalar(&x, s, CompareOp::Ge)?)?,
                (BinaryOp::Minimum, _) => kit::mul(g, &kit::mask_scalar(&x, s, CompareOp::Le)?)?,
            };
            Ok(vec![Some(ga)])
        }
    });
    Ok(Out { value, node })
}

impl<D: Device, E: Float> Var<D, E> {
    fn bin<R: VarOperand<D> + HasDevice<Element = E>>(
        &self,
        rhs: &R,
        op: BinaryOp,
    ) -> Result<Self> {
        Ok(self.wrap(binary(self.input(), In::of(rhs), op)?))
    }

    fn bin_scalar(&self, s: E, op: BinaryOp, scalar_first: bool) -> Result<Self> {
        Ok(self.wrap(binary_scalar(
            self.input(),
            s.to_scalar(),
            op,
            scalar_first,
        )?))
    }

    /// `self + rhs` with broadcasting: the fallible form of `+`.
    pub fn try_add<R: VarOperand<D> + HasDevice<Element = E>>(&self, rhs: R) -> Result<Self> {
        self.bin(&rhs, BinaryOp::Add)
    }
    /// `self - rhs` with broadcasting: the fallible form of `-`.
    pub fn try_sub<R: VarOperand<D> + HasDevice<Element = E>>(&self, rhs: R) -> Result<Self> {
        self.bin(&rhs, BinaryOp::Sub)
    }
    /// `self * rhs` with broadcasting: the fallible form of `*`.
    pub fn try_mul<R: VarOperand<D> + HasDevice<Element = E>>(&self, rhs: R) -> Result<Self> {
        self.bin(&rhs, BinaryOp::Mul)
    }
    /// `self / rhs` with broadcasting: the fallible form of `/`.
    pub fn try_div<R: VarOperand<D> + HasDevice<Element = E>>(&self, rhs: R) -> Result<Self> {
        self.bin(&rhs, BinaryOp::Div)
    }
    /// The larger of each pair (`torch.maximum`); ties split the gradient evenly.
    pub fn try_maximum<R: VarOperand<D> + HasDevice<Element = E>>(&self, rhs: R) -> Result<Self> {
        self.bin(&rhs, BinaryOp::Maximum)
    }
    infallible!(
        /// The larger of each pair (`torch.maximum`); ties split the gradient evenly.
        pub fn maximum[R: VarOperand<D> + HasDevice<Element = E>](&self, rhs: R) -> Self
    );
    /// The smaller of each pair (`torch.minimum`); ties split the gradient evenly.
    pub fn try_minimum<R: VarOperand<D> + HasDevice<Element = E>>(&self, rhs: R) -> Result<Self> {
        self.bin(&rhs, BinaryOp::Minimum)
    }
    infallible!(
        /// The smaller of each pair (`torch.minimum`); ties split the gradient evenly.
        pub fn minimum[R: VarOperand<D> + HasDevice<Element = E>](&self, rhs: R) -> Self
    );
    /// `relu(self + rhs)` in one pass, with broadcasting (PyTorch's fused `_add_relu`).
    pub fn try_add_relu<R: VarOperand<D> + HasDevice<Element = E>>(&self, rhs: R) -> Result<Self> {
        self.bin(&rhs, BinaryOp::AddRelu)
    }
    infallible!(
        /// `relu(self + rhs)` in one pass, with broadcasting (PyTorch's fused `_add_relu`).
        pub fn add_relu[R: VarOperand<D> + HasDevice<Element = E>](&self, rhs: R) -> Self
    );
    /// `self` to the power `rhs`, element-wise (`torch.pow`).
    pub fn try_pow<R: VarOperand<D> + HasDevice<Element = E>>(&self, rhs: R) -> Result<Self> {
        self.bin(&rhs, BinaryOp::Pow)
    }
    infallible!(
        /// `self` to the power `rhs`, element-wise (`torch.pow`).
        pub fn pow[R: VarOperand<D> + HasDevice<Element = E>](&self, rhs: R) -> Self
    );

    /// `self + s`.
    pub fn try_add_scalar(&self, s: E) -> Result<Self> {
        self.bin_scalar(s, BinaryOp::Add, false)
    }
    infallible!(
        /// `self + s`.
        pub fn add_scalar(&self, s: E) -> Self
    );
    /// `self * s`.
    pub fn try_mul_scalar(&self, s: E) -> Result<Self> {
        self.bin_scalar(s, BinaryOp::Mul, false)
    }
    infallible!(
        /// `self * s`.
        pub fn mul_scalar(&self, s: E) -> Self
    );
    /// `self` to the power `s`.
    pub fn try_pow_scalar(&self, s: E) -> Result<Self> {
        self.bin_scalar(s, BinaryOp::Pow, false)
    }
    infallible!(
        /// `self` to the power `s`.
        pub fn pow_scalar(&self, s: E) -> Self
    );
    /// `max(self, s)` element-wise (PyTorch's `clamp_min`).
    pub fn try_clamp_min(&self, s: E) -> Result<Self> {
        self.bin_scalar(s, BinaryOp::Maximum, false)
    }
    infallible!(
        /// `max(self, s)` element-wise (PyTorch's `clamp_min`).
        pub fn clamp_min(&self, s: E) -> Self
    );
    /// `min(self, s)` element-wise (PyTorch's `clamp_max`).
    pub fn try_clamp_max(&self, s: E) -> Result<Self> {
        self.bin_scalar(s, BinaryOp::Minimum, false)
    }
    infallible!(
        /// `min(self, s)` element-wise (PyTorch's `clamp_max`).
        pub fn clamp_max(&self, s: E) -> Self
    );
    /// `-self`, the fallible form of unary `-`.
    pub fn try_neg(&self) -> Result<Self> {
        Ok(self.wrap(super::unary::unary(self.input(), UnaryOp::Neg)?))
    }
}

macro_rules! var_operator {
    ($trait:ident, $method:ident, $op:ident) => {
        impl<D: Device, E: Float, R: VarOperand<D> + HasDevice<Element = E>> $trait<R>
            for &Var<D, E>
        {
            type Output = Var<D, E>;
            #[track_caller]
            fn $method(self, rhs: R) -> Var<D, E> {
                match self.bin(&rhs, BinaryOp::$op) {
                    Ok(v) => v,
                    Err(e) => panic!("{e}"),
                }
            }
        }
        impl<D: Device, E: Float, R: VarOperand<D> + HasDevice<Element = E>> $trait<R>
            for Var<D, E>
        {
            type Output = Var<D, E>;
            #[track_caller]
            fn $method(self, rhs: R) -> Var<D, E> {
                $trait::$method(&self, rhs)
            }
        }
        var_scalar_operator!($trait, $method, $op, f32);
        var_scalar_operator!($trait, $method, $op, f64);
    };
}

macro_rules! var_scalar_operator {
    ($trait:ident, $method:ident, $op:ident, $t:ty) => {
        impl<D: Device> $trait<$t> for &Var<D, $t> {
            type Output = Var<D, $t>;
            #[track_caller]
            fn $method(self, s: $t) -> Var<D, $t> {
                match self.bin_scalar(s, BinaryOp::$op, false) {
                    Ok(v) => v,
                    Err(e) => panic!("{e}"),
                }
            }
        }
        impl<D: Device> $trait<$t> for Var<D, $t> {
            type Output = Var<D, $t>;
            #[track_caller]
            fn $method(self, s: $t) -> Var<D, $t> {
                $trait::$method(&self, s)
            }
        }
        impl<D: Device> $trait<&Var<D, $t>> for $t {
            type Output = Var<D, $t>;
            #[track_caller]
            fn $method(self, v: &Var<D, $t>) -> Var<D, $t> {
                match v.bin_scalar(self, BinaryOp::$op, true) {
                    Ok(v) => v,
                    Err(e) => panic!("{e}"),
                }
            }
        }
        impl<D: Device> $trait<Var<D, $t>> for $t {
            type Output = Var<D, $t>;
            #[track_caller]
            fn $method(self, v: Var<D, $t>) -> Var<D, $t> {
                $trait::$method(self, &v)
            }
        }
    };
}

var_operator!(Add, add, Add);
var_operator!(Sub, sub, Sub);
var_operator!(Mul, mul, Mul);
var_operator!(Div, div, Div);

impl<D: Device, E: Float> Neg for &Var<D, E> {
    type Output = Var<D, E>;
    #[track_caller]
    fn neg(self) -> Var<D, E> {
        match self.try_neg() {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        }
    }
}

impl<D: Device, E: Float> Neg for Var<D, E> {
    type Output = Var<D, E>;
    #[track_caller]
    fn neg(self) -> Var<D, E> {
        -&self
    }
}

/// `a op b` on the dynamic front: devices checked as PyTorch's element-wise ops, where one
/// CPU 0-dim tensor may join an op on a GPU (it is copied there, and its gradient back).
fn dyn_binary(a: In<'_>, b: In<'_>, op: BinaryOp) -> Result<DynVar> {
    let common = same_device_elementwise(&[a.value, b.value], true)?;
    let moved = if a.value.device != common {
        Some((true, super::copy::to_device(a, common)?))
    } else if b.value.device != common {
        Some((false, super::copy::to_device(b, common)?))
    } else {
        None
    };
    let out = match &moved {
        Some((true, m)) => binary(m.input(), b, op)?,
        Some((false, m)) => binary(a, m.input(), op)?,
        None => binary(a, b, op)?,
    };
    Ok(DynVar::from_out(out))
}

macro_rules! dyn_binary {
    ($($(#[$doc:meta])* $name:ident => $op:ident),* $(,)?) => {
        impl DynVar {
            $(
                $(#[$doc])*
                pub fn $name<O: DynOperand>(&self, other: O) -> Result<DynVar> {
                    dyn_binary(self.input(), other.parts(), BinaryOp::$op)
                }
                paste::paste! {
                    #[doc = concat!("`self ", stringify!($name), " s`, element-wise.")]
                    pub fn [<$name _scalar>](&self, s: f64) -> Result<DynVar> {
                        Ok(DynVar::from_out(binary_scalar(self.input(), Scalar::Float(s), BinaryOp::$op, false)?))
                    }
                }
            )*
        }
    };
}
dyn_binary!(
    /// `self + other` with broadcasting; devices checked as PyTorch's element-wise ops.
    add => Add,
    /// `self - other` with broadcasting.
    sub => Sub,
    /// `self * other` with broadcasting.
    mul => Mul,
    /// `self / other` with broadcasting.
    div => Div,
    /// Element-wise maximum with broadcasting.
    maximum => Maximum,
    /// Element-wise minimum with broadcasting.
    minimum => Minimum,
    /// `self` to the power `other`, element-wise.
    pow => Pow,
    /// `relu(self + other)` in one pass, with broadcasting.
    add_relu => AddRelu,
);

macro_rules! dyn_operator {
    ($trait:ident, $method:ident) => {
        impl<O: DynOperand> $trait<O> for &DynVar {
            type Output = DynVar;
            /// Panics with PyTorch's text on a device, shape or dtype mismatch; use the method
            /// of the same name for a `Result`.
            #[track_caller]
            fn $method(self, rhs: O) -> DynVar {
                match DynVar::$method(self, rhs) {
                    Ok(v) => v,
                    Err(e) => panic!("{e}"),
                }
            }
        }
        impl<O: DynOperand> $trait<O> for DynVar {
            type Output = DynVar;
            #[track_caller]
            fn $method(self, rhs: O) -> DynVar {
                $trait::$method(&self, rhs)
            }
        }
    };
}
dyn_operator!(Add, add);
dyn_operator!(Sub, sub);
dyn_operator!(Mul, mul);
dyn_operator!(Div, div);
