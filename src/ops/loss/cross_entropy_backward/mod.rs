//! The gradient of fused cross-entropy with respect to the logits, in one pass:
//! `(softmax(x) - onehot(t)) * weight[t] * grad_out / total_weight` per row (rows whose target
//! is `ignore_index` get zeros).

pub(super) mod cpu;
pub(super) mod cuda;

use crate::core::error::{Error, Result};
use crate::core::raw::RawTensor;
use crate::ops::loss::{check, CrossEntropyOptions, Reduction};

/// `d loss / d logits`, given `grad_out` (0-dim for the mean and sum reductions, `[batch]`
/// for `Reduction::None`).
pub(crate) fn cross_entropy_backward(
    logits: &RawTensor,
    targets: &RawTensor,
    weight: Option<&RawTensor>,
    options: CrossEntropyOptions,
    grad_out: &RawTensor,
) -> Result<RawTensor> {
    let (n, c) = check(logits, targets, weight)?;
    let expected = if options.reduction == Reduction::None && logits.rank() == 2 {
        n
    } else {
        1
    };
    if grad_out.numel() != expected || grad_out.dtype != logits.dtype {
        return Err(Error::Shape(format!(
            "cross_entropy_backward: expected a gradient of {expected} element(s), got shape {:?}",
            grad_out.shape()
        )));
    }
    let device = match weight {
        Some(w) => crate::ops::backend::on(&[logits, targets, grad_out, w])?,
        None => crate::ops::backend::on(&[logits, targets, grad_out])?,
    };
    dispatch!(@run device, |be| be.cross_entropy_backward(
        logits,
        targets,
        weight,
        options,
        grad_out,
        (n, c)
    ))
}

/// The kernel entries of this family, one impl per backend: [`CpuBackend`](crate::ops::backend::CpuBackend)
/// in `cpu.rs`, [`CudaBackend`](crate::ops::backend::CudaBackend) in `cuda.rs`. The operands are on
/// that backend's device (`dispatch!` checked it) and the functions above planned shapes
/// and checked dtypes.
pub(crate) trait CrossEntropyBackwardKernel {
    fn cross_entropy_backward(
        self,
        logits: &RawTensor,
        targets: &RawTensor,
        weight: Option<&RawTensor>,
        options: CrossEntropyOptions,
        grad_out: &RawTensor,
        nc: (usize, usize),
    ) -> Result<RawTensor>;
}
