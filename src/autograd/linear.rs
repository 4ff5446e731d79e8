//! `linear(x, weight, bias) = x @ weight.T + bias`, fused, with its backward:
//! `dx = g @ W`, `dW = g^T @ x` (a transposed view fed to the GEMM, never copied) and
//! `db = g` summed over rows (row by row, vectorised).

use super::dyn_var::{DynOperand, DynVar};
use super::kit;
use super::var::{In, Out, Var};
use crate::core::error::Result;
use crate::device::Device;
use crate::dyn_tensor::check::same_device_arguments;
use crate::graph::record;
use crate::ops;
use crate::tensor::Float;

/// `x @ weight.T + bias`, recorded.
pub(crate) fn linear(x: In<'_>, weight: In<'_>, bias: Option<In<'_>>) -> Result<Out> {
    let value = ops::linear::linear(x.value, weight.value, bias.map(|b| b.value))?;
    let node = record(
        "AddmmBackward0",
        &[x.node, weight.node, bias.and_then(|b| b.node)],
        |needs| {
            let (need_x, need_w, need_b) = (needs[0], needs[1], needs[2]);
            let xs = need_w.then(|| x.value.clone());
            let ws = need_x.then(|| weight.value.clone());
            let x_shape = x.value.layout.shape;
            let (out_f, in_f) = (weight.value.shape()[0], weight.value.shape()[1]);
            move |g| {
                let rows = x_shape
                    .iter()
                    .product::<usize>()
                    .checked_div(in_f)
                    .unwrap_or(0);
                let g2 = kit::reshape(&g, &[rows, out_f])?;
                let gx = match &ws {
                    Some(w) => Some(kit::reshape(&ops::matmul::matmul(&g2, w)?, &x_shape)?),
                    None => None,
                };
                let gw = match &xs {
                    Some(x) => {
                        let x2 = kit::reshape(x, &[rows, in_f])?;
                        Some(ops::matmul::matmul(
                            &ops::shape::transpose(&g2, 0, 1)?,
                            &x2,
                        )?)
                    }
                    None => None,
                };
                let gb = need_b.then(|| ops::bias_grad::bias_grad(&g2)).transpose()?;
                Ok(vec![gx, gw, gb])
            }
        },
    );
    Ok(Out { value, node })
}

impl<D: Device, E: Float> Var<D, E> {
    /// `self @ weight.T + bias`, fused (`torch.nn.functional.linear`).
    pub fn try_linear(&self, weight: &Var<D, E>, bias: Option<&Var<D, E>>) -> Result<Self> {
        Ok(self.wrap(linear(
            self.input(),
            weight.input(),
            bias.map(|b| b.input()),
        )?))
    }
    /// `self @ weight.T + bias`, fused.
    ///
    /// Panics with the error's text where [`try_linear`](Self::try_linear) returns it.
    #[track_caller]
    pub fn linear(&self, weight: &Var<D, E>, bias: Option<&Var<D, E>>) -> Self {
        match self.try_linear(weight, bias) {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        }
    }
}

impl DynVar {
    /// `self @ weight.T + bias`, devices checked as PyTorch's `addmm` (bias first, then `mat1`).
    pub fn linear<W: DynOperand>(&self, weight: W, bias: Option<&DynVar>) -> Result<DynVar> {
        let w = weight.parts();
        match bias {
            Some(b) => same_device_arguments(
                "wrapper_CUDA_addmm",
                &[("self", b.raw()), ("mat1", self.raw()), ("mat2", w.value)],
            )?,
            None => same_device_arguments(
                "wrapper_CUDA_mm",
                &[("self", self.raw()), ("mat2", w.value)],
            )?,
        };
        Ok(DynVar::from_out(linear(
            self.input(),
            w,
            bias.map(|b| b.input()),
        )?))
    }
}
