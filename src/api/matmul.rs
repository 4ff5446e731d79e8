//! Matrix products with `torch.matmul`'s rules (2-D, batched with broadcast batch dims,
//! vectors): `dA = G @ B^T` and `dB = A^T @ G`, with transposed views (never copies), summed
//! back over broadcast batch dims.

use super::autocast;
use super::declare::declare_ops;
use super::kit;
use crate::core::error::{Error, Result};
use crate::core::layout::broadcast_shapes;
use crate::core::raw::RawTensor;
use crate::dyn_tensor::check::same_device_arguments;
use crate::graph::{record, In, Out};
use crate::ops;
use crate::tensor::{ArgumentOn, MatrixElementIs};

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
    if let Some(low) = autocast::product_type(&[a, b]) {
        return autocast::in_low(low, [a, b], |[a, b]| matmul(a, b));
    }
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

/// `a @ b` of two 3-D tensors with the same batch size (PyTorch's `bmm`), recorded.
fn bmm(a: In<'_>, b: In<'_>) -> Result<Out> {
    if let Some(low) = autocast::product_type(&[a, b]) {
        return autocast::in_low(low, [a, b], |[a, b]| bmm(a, b));
    }
    let (sa, sb) = (a.value.shape(), b.value.shape());
    if sa.len() != 3 {
        return Err(Error::Shape("batch1 must be a 3D tensor".into()));
    }
    if sb.len() != 3 {
        return Err(Error::Shape("batch2 must be a 3D tensor".into()));
    }
    if sb[0] != sa[0] || sb[1] != sa[2] {
        return Err(Error::Shape(format!(
            "Expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}].",
            sa[0], sa[2], sb[0], sb[1]
        )));
    }
    matmul(a, b)
}

/// PyTorch's method name for the device check of `a @ b`.
fn mm_method(a: &RawTensor, b: &RawTensor) -> &'static str {
    if a.rank() > 2 || b.rank() > 2 {
        "wrapper_CUDA_bmm"
    } else {
        "wrapper_CUDA_mm"
    }
}

declare_ops! {
    /// Matrix product with `torch.matmul`'s rules: 2-D, batched (batch dims broadcast), vectors.
    Float fn matmul(x, other: (impl ArgumentOn<D> + MatrixElementIs<E>)) -> Same
        check { same_device_arguments(mm_method(x.value, other.value), &[("self", x.value), ("mat2", other.value)])?; }
        = matmul(x, other);
    /// Batched matrix product of `[b, n, k]` and `[b, k, m]` (PyTorch's `bmm`: no broadcasting).
    Float fn bmm(x, other: (impl ArgumentOn<D> + MatrixElementIs<E>)) -> Same
        check { same_device_arguments("wrapper_CUDA_bmm", &[("self", x.value), ("mat2", other.value)])?; }
        = bmm(x, other);
}
