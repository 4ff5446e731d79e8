//! Cross-entropy over class indices, fused (log-softmax and negative log-likelihood in one
//! pass), with optional class weights, `ignore_index` and PyTorch's reductions.

pub(super) mod cpu;
/// The gradient of `cross_entropy` with respect to the logits; its kernels are in `loss.cu`.
pub(crate) mod cross_entropy_backward;
pub(super) mod cuda;

use crate::core::error::{Error, Result};
use crate::core::raw::RawTensor;
use crate::core::DType;

/// How per-sample losses are combined.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Reduction {
    /// Weighted mean over the samples that are not ignored (the default).
    #[default]
    Mean,
    /// Sum over samples.
    Sum,
    /// One loss per sample.
    None,
}

/// Options of a cross-entropy call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CrossEntropyOptions {
    pub(crate) reduction: Reduction,
    pub(crate) ignore_index: i64,
}

/// Checks shapes as `nll_loss` does.
pub(crate) fn check(
    logits: &RawTensor,
    targets: &RawTensor,
    weight: Option<&RawTensor>,
) -> Result<(usize, usize)> {
    if !logits.dtype.is_float() {
        return Err(Error::UnsupportedDType {
            op: "log_softmax_lastdim_kernel_impl",
            dtype: logits.dtype,
        });
    }
    if targets.dtype != DType::I64 {
        return Err(Error::Shape(format!(
            "expected scalar type Long but found {}",
            targets.dtype
        )));
    }
    // PyTorch's checks, in its order: `nll_loss_nd` (input rank, batch sizes), then
    // `nll_loss`'s (target rank, the unbatched size check).
    let (n, c) = match logits.rank() {
        0 => {
            return Err(Error::Shape(
                "Expected 1 or more dimensions (got 0)".to_string(),
            ))
        }
        1 => (1, logits.shape()[0]),
        2 => (logits.shape()[0], logits.shape()[1]),
        r => {
            return Err(Error::Shape(format!(
                "cross_entropy expects logits of shape [batch, classes] or [classes], got {r}-D"
            )))
        }
    };
    if logits.rank() == 2 {
        if let Some(&m) = targets.shape().first() {
            if m != n {
                return Err(Error::Shape(format!(
                    "Expected input batch_size ({n}) to match target batch_size ({m})."
                )));
            }
        }
    }
    if targets.rank() > 1 {
        return Err(Error::Shape(
            "0D or 1D target tensor expected, multi-target not supported".to_string(),
        ));
    }
    // Unbatched logits take a 0-D target; batched ones a 1-D target of the batch size.
    let fits = match logits.rank() {
        1 => targets.rank() == 0,
        _ => targets.rank() == 1,
    };
    if !fits {
        return Err(Error::Shape(format!(
            "size mismatch (got input: {:?}, target: {:?})",
            logits.shape(),
            targets.shape()
        )));
    }
    if let Some(w) = weight {
        if w.dtype != logits.dtype {
            return Err(Error::DTypeMismatch {
                expected: logits.dtype,
                found: w.dtype,
            });
        }
        if w.shape() != [c] {
            return Err(Error::Shape(format!(
                "weight tensor should be defined either for all {c} classes or no classes but got weight tensor of shape: {:?}",
                w.shape()
            )));
        }
    }
    Ok((n, c))
}

/// `cross_entropy(logits, targets, weight)`.
pub(crate) fn cross_entropy(
    logits: &RawTensor,
    targets: &RawTensor,
    weight: Option<&RawTensor>,
    options: CrossEntropyOptions,
) -> Result<RawTensor> {
    let (n, c) = check(logits, targets, weight)?;
    let device = match weight {
        Some(w) => crate::ops::backend::on(&[logits, targets, w])?,
        None => crate::ops::backend::on(&[logits, targets])?,
    };
    dispatch!(@run device, |be| be.cross_entropy(
        logits,
        targets,
        weight,
        options,
        (n, c)
    ))
}

/// The kernel entries of this family, one impl per backend: [`CpuBackend`](crate::ops::backend::CpuBackend)
/// in `cpu.rs`, [`CudaBackend`](crate::ops::backend::CudaBackend) in `cuda.rs`. The operands are on
/// that backend's device (`dispatch!` checked it) and the functions above planned shapes
/// and checked dtypes.
pub(crate) trait LossKernel {
    fn cross_entropy(
        self,
        logits: &RawTensor,
        targets: &RawTensor,
        weight: Option<&RawTensor>,
        options: CrossEntropyOptions,
        nc: (usize, usize),
    ) -> Result<RawTensor>;
}
