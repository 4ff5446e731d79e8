//! `softmax` and `log_softmax` along a dimension, with their backward rules:
//! `y * (g - sum(g * y))` and `g - exp(y) * sum(g)`.

use super::declare::declare_ops;
use super::kit;
use crate::core::error::Result;
use crate::graph::{record, In, Out};
use crate::ops::{self, ReduceOp, UnaryOp};

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

declare_ops! {
    /// Softmax over `dim`.
    Float fn softmax(x, dim: isize) -> Same = softmax(x, dim, false);
    /// Log-softmax over `dim`, computed stably.
    Float fn log_softmax(x, dim: isize) -> Same = softmax(x, dim, true);
}
