//! Losses: `CrossEntropyLoss`, whose class weights are a buffer typed on the module's device,
//! and `MSELoss`.

use super::Module;
use crate::api::rules;
use crate::core::error::Result;
use crate::device::Device;
use crate::graph::In;
use crate::ops::loss::{CrossEntropyOptions, Reduction};
use crate::ops::{BinaryOp, UnaryOp};
use crate::tensor::{
    ClassTargets, Element, ElementIs, Float, HasDevice, InputElementIs, ModuleInput, Tensor,
};

/// The targets of a loss whose input (the logits) is on device `D`: `Tensor<D, E>` or
/// `&Tensor<D, E>`.
///
/// A loss runs where its input is (and a loss with class weights, as
/// [`CrossEntropyLoss`], takes its input on the weights' device), so targets on another device
/// are blamed against the input, never against buffers a loss may not have. PyTorch checks
/// `nll_loss(input, target, weight)` in argument order, the input's device first; so does this
/// message.
#[diagnostic::on_unimplemented(
    message = "Expected all tensors to be on the same device, but found at least two devices, `{D}` and `{Found}`",
    label = "these targets are on `{Found}`, but the loss's input is on `{D}`",
    note = "a loss runs on the device of its input, and the logits are on the model's device: if the model was never moved, move it once (`let model = model.to(dev);`); else move the targets with the batch (`let y = y.to(dev);`)"
)]
pub trait TargetOn<D: Device, Found: Device = <Self as HasDevice>::Device>: HasDevice {}

#[diagnostic::do_not_recommend]
impl<D: Device, E: Element> TargetOn<D> for Tensor<D, E> {}

#[diagnostic::do_not_recommend]
impl<D: Device, E: Element> TargetOn<D> for &Tensor<D, E> {}

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
    /// Per-class weights, `[classes]` (a buffer: it moves with the module, gets no gradient).
    /// Private, so that it is set only through [`with_weight`](Self::with_weight), typed on `D`.
    weight: Option<Tensor<D, E>>,
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

    /// The per-class weights, if any (a buffer on `D`).
    pub fn weight(&self) -> Option<&Tensor<D, E>> {
        self.weight.as_ref()
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

    /// The loss of `logits` (`[batch, classes]`, a `Var` or a `Tensor`) against class
    /// indices `targets` (`[batch]`), recorded for `backward`.
    pub fn try_forward<L, T>(&self, logits: L, targets: T) -> Result<Tensor<D, E>>
    where
        L: ModuleInput<D> + InputElementIs<E>,
        T: TargetOn<<L as HasDevice>::Device> + ClassTargets,
    {
        let device = D::from_dyn(logits.raw().device).expect("typed tensors are on their device");
        let options = CrossEntropyOptions {
            reduction: self.reduction,
            ignore_index: self.ignore_index,
        };
        let out = rules::cross_entropy(
            logits.input(),
            targets.raw(),
            self.weight.as_ref().map(|w| &w.raw),
            options,
        )?;
        Ok(Tensor::from_out(out, device))
    }

    /// The loss of `logits` against `targets`: the logits on the loss's device, the targets on
    /// the logits'.
    ///
    /// Panics with the error's text where [`try_forward`](Self::try_forward) returns it.
    #[track_caller]
    pub fn forward<L, T>(&self, logits: L, targets: T) -> Tensor<D, E>
    where
        L: ModuleInput<D> + InputElementIs<E>,
        T: TargetOn<<L as HasDevice>::Device> + ClassTargets,
    {
        match self.try_forward(logits, targets) {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }
}

impl<D: Device, E: Float> super::Precision for CrossEntropyLoss<D, E> {
    type Element = E;
}

impl<D: Device, E: Float> super::Placement for CrossEntropyLoss<D, E> {
    type Device = D;
}

impl<D: Device, E: Float> Module<D, E> for CrossEntropyLoss<D, E> {
    type On<D2: Device> = CrossEntropyLoss<D2, E>;
    fn try_to<D2: Device>(&self, dev: D2) -> Result<CrossEntropyLoss<D2, E>> {
        CrossEntropyLoss::try_to(self, dev)
    }
    fn visit_parameters(&self, _prefix: &str, _f: &mut dyn FnMut(&str, &Tensor<D, E>)) {}
    fn visit_parameters_mut(&mut self, _prefix: &str, _f: &mut dyn FnMut(&str, &mut Tensor<D, E>)) {
    }
}

/// Mean squared error (`nn.MSELoss`): `mean((input - target)^2)`, or the sum, or one loss per
/// element. It has no buffers, so it runs on the device of its inputs, which must agree.
///
/// ```
/// use devtype::prelude::*;
/// use devtype::nn::MSELoss;
/// let pred = Tensor::parameter(Tensor::from_vec(vec![1.0f32, 2.0], [2], Cpu));
/// let target = Tensor::from_vec(vec![0.0f32, 4.0], [2], Cpu);
/// let loss = MSELoss::new().forward(&pred, &target);
/// assert_eq!(loss.item(), 2.5);
/// loss.backward();
/// assert_eq!(pred.grad().unwrap().to_vec(), vec![1.0, -2.0]);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MSELoss {
    /// How per-element losses are combined (mean by default).
    pub reduction: Reduction,
}

impl MSELoss {
    /// The mean squared error.
    pub fn new() -> Self {
        MSELoss {
            reduction: Reduction::Mean,
        }
    }

    /// With another reduction.
    pub fn with_reduction(mut self, reduction: Reduction) -> Self {
        self.reduction = reduction;
        self
    }

    pub(crate) fn apply(&self, input: In<'_>, target: In<'_>) -> Result<crate::graph::Out> {
        let diff = rules::binary(input, target, BinaryOp::Sub)?;
        let sq = rules::unary(diff.input(), UnaryOp::Square)?;
        match self.reduction {
            Reduction::None => Ok(sq),
            Reduction::Sum => rules::sum_mean(sq.input(), &[], false, false),
            Reduction::Mean => rules::sum_mean(sq.input(), &[], false, true),
        }
    }

    /// The loss of `input` against `target` (same shape, or broadcastable), recorded.
    pub fn try_forward<D, E, L, T>(&self, input: L, target: T) -> Result<Tensor<D, E>>
    where
        D: Device,
        E: Float,
        L: ModuleInput<D> + HasDevice<Element = E, Device = D>,
        T: TargetOn<D> + ElementIs<E>,
    {
        let device = D::from_dyn(input.raw().device).expect("typed tensors are on their device");
        Ok(Tensor::from_out(
            self.apply(input.input(), target.input())?,
            device,
        ))
    }

    /// The loss of `input` against `target`; both on one device.
    ///
    /// Panics with the error's text where [`try_forward`](Self::try_forward) returns it.
    #[track_caller]
    pub fn forward<D, E, L, T>(&self, input: L, target: T) -> Tensor<D, E>
    where
        D: Device,
        E: Float,
        L: ModuleInput<D> + HasDevice<Element = E, Device = D>,
        T: TargetOn<D> + ElementIs<E>,
    {
        match self.try_forward(input, target) {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        }
    }
}

impl super::Precision for MSELoss {
    type Element = super::Anywhere;
}

impl super::Placement for MSELoss {
    type Device = super::Anywhere;
}

impl<D: Device, E: Float> Module<D, E> for MSELoss {
    type On<D2: Device> = MSELoss;
    fn try_to<D2: Device>(&self, _dev: D2) -> Result<MSELoss> {
        Ok(*self)
    }
    fn visit_parameters(&self, _prefix: &str, _f: &mut dyn FnMut(&str, &Tensor<D, E>)) {}
    fn visit_parameters_mut(&mut self, _prefix: &str, _f: &mut dyn FnMut(&str, &mut Tensor<D, E>)) {
    }
}
