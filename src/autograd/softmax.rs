//! `softmax` and `log_softmax` along a dimension, with their backward rules:
//! `y * (g - sum(g * y))` and `g - exp(y) * sum(g)`.

use super::dyn_var::DynVar;
use super::kit;
use super::var::{In, Out, Var};
use crate::core::error::Result;
use crate::device::Device;
use crate::graph::record;
use crate::ops::{self, ReduceOp, UnaryOp};
use crate::tensor::{infallible, Float};

/// `softmax(a, dim)` (or `log_softmax` when `log`), recorded.
pub(crate) fn softmax(a: In<'_>, dim: isize, log: bool) -> Result<Out> {
    let value = ops::softmax::softmax(a.value, dim, log)?;
    let node = record(
        if log {
            "LogSoftmaxBackward0"
        } else {
            "SoftmaxBackward0"
        },
        &[a.node],
        |_| {
            let y = value.clone();
            move |g| {
                let d = if y.rank() == 0 { vec![] } else { vec![dim] };
                let gx = if log {
                    let total = ops::reduce::reduce(&g, &d, true, ReduceOp::Sum)?;
                    let p = kit::unary(y.clone(), UnaryOp::Exp)?;
                    kit::sub(g, &kit::mul(p, &total)?)?
                } else {
                    let dot =
                        ops::reduce::reduce(&kit::mul(g.clone(), &y)?, &d, true, ReduceOp::Sum)?;
                    kit::mul(kit::sub(g, &dot)?, &y)?
                };
                Ok(vec![Some(gx)])
            }
        },
    );
    Ok(Out { value, node })
}

impl<D: Device, E: Float> Var<D, E> {
    /// Softmax over `dim`.
    pub fn try_softmax(&self, dim: isize) -> Result<Self> {
        Ok(self.wrap(softmax(self.input(), dim, false)?))
    }
    infallible!(
        /// Softmax over `dim`.
        pub fn softmax(&self, dim: isize) -> Self
    );
    /// Log-softmax over `dim`, computed stably.
    pub fn try_log_softmax(&self, dim: isize) -> Result<Self> {
        Ok(self.wrap(softmax(self.input(), dim, true)?))
    }
    infallible!(
        /// Log-softmax over `dim`, computed stably.
        pub fn log_softmax(&self, dim: isize) -> Self
    );
}

impl DynVar {
    /// Softmax over `dim`.
    pub fn softmax(&self, dim: isize) -> Result<DynVar> {
        Ok(DynVar::from_out(softmax(self.input(), dim, false)?))
    }
    /// Log-softmax over `dim`.
    pub fn log_softmax(&self, dim: isize) -> Result<DynVar> {
        Ok(DynVar::from_out(softmax(self.input(), dim, true)?))
    }
}
