//! Fused cross-entropy over class indices (class weights, `ignore_index`, reductions), whose
//! backward is one fused kernel: `(softmax(x) - onehot(t)) * weight[t] * g / total_weight`.

use super::declare::declare_ops;
use crate::core::error::Result;
use crate::core::raw::RawTensor;
use crate::dyn_tensor::check::same_device_arguments;
use crate::graph::{record, In, Out};
use crate::ops;
use crate::ops::loss::{CrossEntropyOptions, Reduction};
use crate::tensor::{ArgumentOn, HasDevice};

/// `cross_entropy(logits, targets, weight)`, recorded (targets and weight get no gradient).
pub(crate) fn cross_entropy(
    logits: In<'_>,
    targets: &RawTensor,
    weight: Option<&RawTensor>,
    options: CrossEntropyOptions,
) -> Result<Out> {
    let value = ops::loss::cross_entropy(logits.value, targets, weight, options)?;
    let node = record("NllLossBackward0", &[logits.node], |_| {
        let (x, t, w) = (logits.value.clone(), targets.clone(), weight.cloned());
        move |g| {
            Ok(vec![Some(
                ops::loss::cross_entropy_backward::cross_entropy_backward(
                    &x,
                    &t,
                    w.as_ref(),
                    options,
                    &g,
                )?,
            )])
        }
    });
    Ok(Out { value, node })
}

/// PyTorch's device check of `nll_loss_forward`: logits, targets, then the weight.
fn check_loss(logits: In<'_>, targets: &RawTensor, weight: Option<In<'_>>) -> Result<()> {
    let mut args = vec![("self", logits.value), ("target", targets)];
    if let Some(w) = weight {
        args.push(("weight", w.value));
    }
    same_device_arguments("wrapper_CUDA_nll_loss_forward", &args)?;
    Ok(())
}

declare_ops! {
    /// Mean cross-entropy of these logits (`[batch, classes]`) against class indices
    /// (`F.cross_entropy(x, t)`).
    Float fn cross_entropy(x, targets: (impl ArgumentOn<D> + HasDevice<Element = i64>)) -> Same
        check { check_loss(x, targets.value, None)?; }
        = cross_entropy(x, targets.value, None, CrossEntropyOptions { reduction: Reduction::Mean, ignore_index: -100 });
    /// Cross-entropy of these logits against class indices, with optional class weights,
    /// PyTorch's `ignore_index` (`-100` by default) and reduction (`F.cross_entropy`).
    Float fn cross_entropy_with(x, targets: (impl ArgumentOn<D> + HasDevice<Element = i64>), weight: OptTensor, reduction: Reduction, ignore_index: i64) -> Same
        check { check_loss(x, targets.value, weight)?; }
        = cross_entropy(x, targets.value, weight.map(|w| w.value), CrossEntropyOptions { reduction, ignore_index });
}
