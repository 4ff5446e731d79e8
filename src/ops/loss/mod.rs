//! Cross-entropy over class indices, fused (log-softmax and negative log-likelihood in one
//! pass), with optional class weights, `ignore_index` and PyTorch's reductions.

mod cpu;
mod cuda;

use crate::error::{Error, Result};
use crate::storage::Storage;
use crate::tensor::raw::RawTensor;
use crate::tensor::DType;

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
    let (n, c) = match logits.rank() {
        2 => (logits.shape()[0], logits.shape()[1]),
        1 => (1, logits.shape()[0]),
        r => {
            return Err(Error::Shape(format!(
                "cross_entropy expects logits of shape [batch, classes] or [classes], got {r}-D"
            )))
        }
    };
    let target_n = if logits.rank() == 1 {
        if targets.rank() == 0 {
            1
        } else {
            usize::MAX
        }
    } else if targets.rank() == 1 {
        targets.shape()[0]
    } else {
        usize::MAX
    };
    if target_n != n {
        return Err(Error::Shape(format!(
            "Expected input batch_size ({n}) to match target batch_size ({}).",
            targets.shape().first().copied().unwrap_or(1)
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
    match &*logits.storage {
        Storage::Cpu(_) => cpu::cross_entropy(logits, targets, weight, options, (n, c)),
        Storage::Cuda(_) => cuda::cross_entropy(logits, targets, weight, options, (n, c)),
    }
}
