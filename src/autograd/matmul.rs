//! Matrix products with `torch.matmul`'s rules (2-D, batched with broadcast batch dims,
//! vectors): `dA = G @ B^T` and `dB = A^T @ G`, with transposed views (never copies), summed
//! back over broadcast batch dims.

use super::dyn_var::{DynOperand, DynVar};
use super::kit;
use super::var::{In, Out, Var, VarOperand};
use crate::core::error::Result;
use crate::core::layout::broadcast_shapes;
use crate::core::raw::RawTensor;
use crate::device::Device;
use crate::dyn_tensor::check::same_device_arguments;
use crate::graph::record;
use crate::ops;
use crate::tensor::{infallible, Float, HasDevice};

/// `a` as a matrix (or batch of them): vectors become `[1, k]` (left) or `[k, 1]` (right).
fn as_matrix(t: &RawTensor, left: bool) -> Result<RawTensor> {
    match (t.rank(), left) {
        (1, true) => kit::reshape(t, &[1, t.shape()[0]]),
        (1, false) => kit::reshape(t, &[t.shape()[0], 1]),
        _ => Ok(t.clone()),
    }
}

fn t_last(t: &RawTensor) -> Result<RawTensor> {
    ops::shape::transpose(t, -1, -2)
}

/// `a @ b`, recorded.
pub(crate) fn matmul(a: In<'_>, b: In<'_>) -> Result<Out> {
    let value = ops::matmul::matmul(a.value, b.value)?;
    let node = record("MmBackward0", &[a.node, b.node], |needs| {
        let (need_a, need_b) = (needs[0], needs[1]);
        let (x, y) = (a.value.clone(), b.value.clone());
        move |g| {
            let (xm, ym) = (as_matrix(&x, true)?, as_matrix(&y, false)?);
            let (rx, ry) = (xm.rank(), ym.rank());
            let mut gshape =
                broadcast_shapes(&xm.shape()[..rx - 2], &ym.shape()[..ry - 2])?.to_vec();
            gshape.push(xm.shape()[rx - 2]);
            gshape.push(ym.shape()[ry - 1]);
            let g = kit::reshape(&g, &gshape)?;
            let ga = need_a
                .then(|| -> Result<_> {
                    let full = ops::matmul::matmul(&g, &t_last(&ym)?)?;
                    kit::reshape(&kit::sum_to(full, xm.shape())?, x.shape())
                })
                .transpose()?;
            let gb = need_b
                .then(|| -> Result<_> {
                    let full = ops::matmul::matmul(&t_last(&xm)?, &g)?;
                    kit::reshape(&kit::sum_to(full, ym.shape())?, y.shape())
                })
                .transpose()?;
            Ok(vec![ga, gb])
        }
    });
    Ok(Out { value, node })
}

impl<D: Device, E: Float> Var<D, E> {
    /// Matrix product with `torch.matmul`'s rules: 2-D, batched (batch dims broadcast), vectors.
    pub fn try_matmul<R: VarOperand<D> + HasDevice<Element = E>>(&self, rhs: R) -> Result<Self> {
        Ok(self.wrap(matmul(self.input(), In::of(&rhs))?))
    }
    infallible!(
        /// Matrix product with `torch.matmul`'s rules: 2-D, batched (batch dims broadcast), vectors.
        pub fn matmul[R: VarOperand<D> + HasDevice<Element = E>](&self, rhs: R) -> Self
    );
}

impl DynVar {
    /// Matrix product with `torch.matmul`'s rules; devices checked as `mm`/`bmm`.
    pub fn matmul<O: DynOperand>(&self, other: O) -> Result<DynVar> {
        let other = other.parts();
        let method = if self.dims() > 2 || other.value.rank() > 2 {
            "wrapper_CUDA_bmm"
        } else {
            "wrapper_CUDA_mm"
        };
        same_device_arguments(method, &[("self", self.raw()), ("mat2", other.value)])?;
        Ok(DynVar::from_out(matmul(self.input(), other)?))
    }
}
