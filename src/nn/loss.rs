//! `CrossEntropyLoss`, whose class weights are a buffer typed on the module's device.

use crate::device::Device;
use crate::error::Result;
use crate::ops::loss::{CrossEntropyOptions, Reduction};
use crate::tensor::{Float, HasDevice, ModuleInput, Tensor};

/// Cross-entropy over class indices (`nn.CrossEntropyLoss`), with optional per-class weights
/// held on `D`. Because the weight's device is in the type, the PyTorch bug of a loss weight
/// left on the CPU while the logits are on the GPU cannot compile.
///
/// ```
/// use devtype::prelude::*;
/// use devtype::nn::CrossEntropyLoss;
///
/// let dev = Cpu;
/// let weight = Tensor::from_vec(vec![1.0, 2.0], [2], dev);
/// let loss_fn = CrossEntropyLoss::new().with_weight(weight);
/// let logits = Tensor::<Cpu>::zeros([4, 2], dev);
/// let targets = Tensor::<Cpu, i64>::from_vec(vec![0, 1, 1, 0], [4], dev);
/// let loss = loss_fn.forward(&logits, &targets);
/// assert!((loss.item() - 2f32.ln()).abs() < 1e-6);
/// ```
#[derive(Clone, Debug)]
pub struct CrossEntropyLoss<D: Device, E: Float = f32> {
    /// Per-class weights, `[classes]`.
    pub weight: Option<Tensor<D, E>>,
    /// How per-sample losses are combined.
    pub reduction: Reduction,
    /// Targets equal to this are skipped (PyTorch's default is -100).
    pub ignore_index: i64,
}

impl<D: Device, E: Float> Default for CrossEntropyLoss<D, E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<D: Device, E: Float> CrossEntropyLoss<D, E> {
    /// Unweighted mean cross-entropy.
    pub fn new() -> Self {
        CrossEntropyLoss {
            weight: None,
            reduction: Reduction::Mean,
            ignore_index: -100,
        }
    }

    /// With per-class weights, which must be on the loss's device `D`.
    pub fn with_weight(mut self, weight: Tensor<D, E>) -> Self {
        self.weight = Some(weight);
        self
    }

    /// With another reduction.
    pub fn with_reduction(mut self, reduction: Reduction) -> Self {
        self.reduction = reduction;
        self
    }

    /// Skipping targets equal to `ignore_index`.
    pub fn with_ignore_index(mut self, ignore_index: i64) -> Self {
        self.ignore_index = ignore_index;
        self
    }

    /// The loss with its weight buffer on `dev`, typed on it.
    pub fn try_to<D2: Device>(&self, dev: D2) -> Result<CrossEntropyLoss<D2, E>> {
        Ok(CrossEntropyLoss {
            weight: self.weight.as_ref().map(|w| w.try_to(dev)).transpose()?,
            reduction: self.reduction,
            ignore_index: self.ignore_index,
        })
    }

    /// The loss with its weight buffer on `dev`: `let loss_fn = loss_fn.to(dev);`.
    #[must_use = "`to` returns the loss typed on the new device: `let loss_fn = loss_fn.to(dev);`"]
    #[track_caller]
    pub fn to<D2: Device>(&self, dev: D2) -> CrossEntropyLoss<D2, E> {
        match self.try_to(dev) {
            Ok(m) => m,
            Err(e) => panic!("{e}"),
        }
    }

    /// The loss of `logits` (`[batch, classes]`) against class indices `targets` (`[batch]`).
    pub fn try_forward<L, T>(&self, logits: L, targets: T) -> Result<Tensor<D, E>>
    where
        L: ModuleInput<D> + HasDevice<Element = E>,
        T: ModuleInput<D> + HasDevice<Element = i64>,
    {
        let device = D::from_dyn(logits.raw().device).expect("typed tensors are on their device");
        let raw = crate::ops::loss::cross_entropy(
            logits.raw(),
            targets.raw(),
            self.weight.as_ref().map(|w| &w.raw),
            CrossEntropyOptions {
                reduction: self.reduction,
                ignore_index: self.ignore_index,
            },
        )?;
        Ok(Tensor::from_raw(raw, device))
    }

    /// The loss of `logits` against `targets`; both must be on the loss's device.
    ///
    /// Panics with the error's text where [`try_forward`](Self::try_forward) returns it.
    #[track_caller]
    pub fn forward<L, T>(&self, logits: L, targets: T) -> Tensor<D, E>
    where
        L: ModuleInput<D> + HasDevice<Element = E>,
        T: ModuleInput<D> + HasDevice<Element = i64>,
    {
        match self.try_forward(logits, targets) {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }
}
