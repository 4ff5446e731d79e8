//! `linear(x, weight, bias) = x @ weight.T + bias`, fused, with its backward:
//! `dx = g @ W`, `dW = g^T @ x` (a transposed view fed to the GEMM, never copied) and
//! `db = g` summed over rows (row by row, vectorised).

use super::autocast;
use super::declare::declare_ops;
use super::kit;
use crate::core::error::Result;
use crate::dyn_tensor::check::same_device_arguments;
use crate::graph::{record, In, Out};
use crate::ops;
use crate::tensor::{ArgumentOn, MatrixElementIs};

/// `x @ weight.T + bias`, recorded.
pub(crate) fn linear(x: In<'_>, weight: In<'_>, bias: Option<In<'_>>) -> Result<Out> {
    match bias {
        Some(b) => {
            if let Some(low) = autocast::product_type(&[x, weight, b]) {
                return autocast::in_low(low, [x, weight, b], |[x, w, b]| linear(x, w, Some(b)));
            }
        }
        None => {
            if let Some(low) = autocast::product_type(&[x, weight]) {
                return autocast::in_low(low, [x, weight], |[x, w]| linear(x, w, None));
            }
        }
    }
    // The node first, so the kernel's result goes straight into `Out` (no move of the tensor
    // through a local: this runs once per layer per step). A node made for a product that
    // then fails is only dropped.
    let node = record(
        "AddmmBackward0",
        &[x.node, weight.node, bias.and_then(|b| b.node)],
        |needs| {
            let (need_x, need_w, need_b) = (needs[0], needs[1], needs[2]);
            let xs = need_w.then(|| x.value.clone());
            let ws = need_x.then(|| weight.value.clone());
            let x_shape = x.value.layout.shape;
            // Read without indexing: the forward below checks the shapes after this runs, and
            // a weight that is not a matrix must be its error, not a panic here.
            let dim = |d: usize| weight.value.shape().get(d).copied().unwrap_or(0);
            let (out_f, in_f) = (dim(0), dim(1));
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
                let gb = need_b
                    .then(|| ops::linear::bias_grad::bias_grad(&g2))
                    .transpose()?;
                Ok(vec![gx, gw, gb])
            }
        },
    );
    ops::linear::linear(x.value, weight.value, bias.map(|b| b.value))
        .map(|value| Out { value, node })
}

/// PyTorch's device check of `linear`: `addmm(bias, x, weight^T)`, or `mm` without a bias.
fn check_linear(x: In<'_>, weight: In<'_>, bias: Option<In<'_>>) -> Result<()> {
    match bias {
        Some(b) => same_device_arguments(
            "wrapper_CUDA_addmm",
            &[("self", b.value), ("mat1", x.value), ("mat2", weight.value)],
        )?,
        None => same_device_arguments(
            "wrapper_CUDA_mm",
            &[("self", x.value), ("mat2", weight.value)],
        )?,
    };
    Ok(())
}

declare_ops! {
    /// `self @ weight^T + bias` over the last dimension (PyTorch's `F.linear`), in one
    /// matrix product with the bias fused.
    Float fn linear(x, weight: (impl ArgumentOn<D> + MatrixElementIs<E>), bias: OptTensor) -> Same
        check { check_linear(x, weight, bias)?; }
        = linear(x, weight, bias);
}
