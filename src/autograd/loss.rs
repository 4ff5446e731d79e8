//! Fused cross-entropy over class indices (class weights, `ignore_index`, reductions), whose
//! backward is one fused kernel: `(softmax(x) - onehot(t)) * weight[t] * g / total_weight`.

use super::dyn_var::DynVar;
use super::var::{In, Out, Var};
use crate::core::error::Result;
use crate::core::raw::RawTensor;
use crate::device::Device;
use crate::dyn_tensor::check::same_device_arguments;
use crate::graph::record;
use crate::ops;
use crate::ops::loss::{CrossEntropyOptions, Reduction};
use crate::tensor::{Float, HasDevice, OperandOn, Tensor};
use crate::DynTensor;

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
                ops::cross_entropy_backward::cross_entropy_backward(
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

impl<D: Device, E: Float> Var<D, E> {
    /// Cross-entropy of these logits (`[batch, classes]`) against class indices, with optional
    /// class weights, PyTorch's `ignore_index` and reduction (`F.cross_entropy`).
    pub fn try_cross_entropy_with<T: OperandOn<D> + HasDevice<Element = i64>>(
        &self,
        targets: T,
        weight: Option<&Tensor<D, E>>,
        reduction: Reduction,
        ignore_index: i64,
    ) -> Result<Self> {
        let options = CrossEntropyOptions {
            reduction,
            ignore_index,
        };
        Ok(self.wrap(cross_entropy(
            self.input(),
            targets.raw(),
            weight.map(|w| &w.raw),
            options,
        )?))
    }

    /// Mean cross-entropy of these logits against class indices (`F.cross_entropy(x, t)`).
    ///
    /// Panics with the error's text where [`try_cross_entropy_with`](Self::try_cross_entropy_with) returns it.
    #[track_caller]
    pub fn cross_entropy<T: OperandOn<D> + HasDevice<Element = i64>>(&self, targets: T) -> Self {
        match self.try_cross_entropy_with(targets, None, Reduction::Mean, -100) {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        }
    }
}

impl DynVar {
    /// Cross-entropy against class indices, with optional class weights; devices checked as
    /// PyTorch's `nll_loss_forward`.
    pub fn cross_entropy(
        &self,
        targets: &DynTensor,
        weight: Option<&DynTensor>,
        reduction: Reduction,
        ignore_index: i64,
    ) -> Result<DynVar> {
        let mut args = vec![("self", self.raw()), ("target", &targets.raw)];
        if let Some(w) = weight {
            args.push(("weight", &w.raw));
        }
        same_device_arguments("wrapper_CUDA_nll_loss_forward", &args)?;
        let options = CrossEntropyOptions {
            reduction,
            ignore_index,
        };
        Ok(DynVar::from_out(cross_entropy(
            self.input(),
            &targets.raw,
            weight.map(|w| &w.raw),
            options,
        )?))
    }
}
