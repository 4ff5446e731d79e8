//! Losses: `CrossEntropyLoss`, `NLLLoss` and `BCEWithLogitsLoss`, whose weights are buffers
//! typed on the module's device, and the element-wise `MSELoss`, `L1Loss`, `SmoothL1Loss` and
//! `HuberLoss`.

use super::Module;
use crate::api::rules;
use crate::core::error::Result;
use crate::device::Device;
use crate::dyn_tensor::DynTensor;
use crate::graph::In;
use crate::ops::loss::{CrossEntropyOptions, Reduction};
use crate::ops::{BinaryOp, UnaryOp};
use crate::tensor::{
    ClassTargets, Element, ElementIs, Float, HasDevice, InputElementIs, ModuleInput, Tensor,
};

/// The targets of a loss whose input (the logits) is on device `D`: `Tensor<D, E>`,
/// `&Tensor<D, E>` or `&&Tensor<D, E>`.
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

#[diagnostic::do_not_recommend]
impl<D: Device, E: Element> TargetOn<D> for &&Tensor<D, E> {}

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
#[derive(Clone)]
pub struct CrossEntropyLoss<D: Device, E: Float = f32> {
    /// Per-class weights, `[classes]` (a buffer: it moves with the module, gets no gradient).
    /// Private, so that it is set only through [`with_weight`](Self::with_weight), typed on `D`.
    weight: Option<Tensor<D, E>>,
    /// How per-sample losses are combined.
    pub reduction: Reduction,
    /// Targets equal to this are skipped (PyTorch's default is -100).
    pub ignore_index: i64,
}

crate::tensor::debug_on_host!(CrossEntropyLoss<D, E: crate::tensor::Float> { weight, reduction, ignore_index });

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
    pub fn try_to<D2: Device>(&self, dev: D2) -> Result<CrossEntropyLoss<D2, E>>
    where
        D: crate::device::CopyTo<D2>,
    {
        Ok(CrossEntropyLoss {
            weight: self.weight.as_ref().map(|w| w.move_to(dev)).transpose()?,
            reduction: self.reduction,
            ignore_index: self.ignore_index,
        })
    }

    /// The loss with its weight buffer on `dev`: `let loss_fn = loss_fn.to(dev);`.
    #[must_use = "`to` returns the loss typed on the new device: `let loss_fn = loss_fn.to(dev);`"]
    #[track_caller]
    pub fn to<D2: Device>(&self, dev: D2) -> CrossEntropyLoss<D2, E>
    where
        D: crate::device::CopyTo<D2>,
    {
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
    fn try_to<D2: Device>(&self, dev: D2) -> Result<CrossEntropyLoss<D2, E>>
    where
        D: crate::device::CopyTo<D2>,
    {
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
    fn try_to<D2: Device>(&self, _dev: D2) -> Result<MSELoss>
    where
        D: crate::device::CopyTo<D2>,
    {
        Ok(*self)
    }
    fn visit_parameters(&self, _prefix: &str, _f: &mut dyn FnMut(&str, &Tensor<D, E>)) {}
    fn visit_parameters_mut(&mut self, _prefix: &str, _f: &mut dyn FnMut(&str, &mut Tensor<D, E>)) {
    }
}

/// Writes an element-wise loss without buffers (as [`MSELoss`]): its struct methods, its typed
/// and dynamic `forward`, and its `Module` impl. `$param` is its one hyper-parameter, if any.
macro_rules! elementwise_loss {
    (
        $(#[$doc:meta])*
        $name:ident, $rule:ident $(, $param:ident: $default:expr, $param_doc:literal)?
    ) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct $name {
            /// How per-element losses are combined (mean by default).
            pub reduction: Reduction,
            $(#[doc = $param_doc] pub $param: f64,)?
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl $name {
            /// The loss with PyTorch's defaults (mean reduction).
            pub fn new() -> Self {
                $name {
                    reduction: Reduction::Mean,
                    $($param: $default,)?
                }
            }

            /// With another reduction.
            pub fn with_reduction(mut self, reduction: Reduction) -> Self {
                self.reduction = reduction;
                self
            }

            $(
                #[doc = $param_doc]
                pub fn $param(mut self, $param: f64) -> Self {
                    self.$param = $param;
                    self
                }
            )?

            pub(crate) fn apply(&self, input: In<'_>, target: In<'_>) -> Result<crate::graph::Out> {
                rules::$rule(input, target, self.reduction $(, self.$param)?)
            }

            /// The loss of `input` against `target` (same shape, or broadcastable), recorded.
            pub fn try_forward<D, E, L, T>(&self, input: L, target: T) -> Result<Tensor<D, E>>
            where
                D: Device,
                E: Float,
                L: ModuleInput<D> + HasDevice<Element = E, Device = D>,
                T: TargetOn<D> + ElementIs<E>,
            {
                let device =
                    D::from_dyn(input.raw().device).expect("typed tensors are on their device");
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

            /// The loss of `input` against `target` on the dynamic front (devices checked as
            /// PyTorch's element-wise ops, dtypes promoted as theirs).
            pub fn forward_dyn(&self, input: &DynTensor, target: &DynTensor) -> Result<DynTensor> {
                use crate::tensor::operand::sealed::AsRaw;
                let (a, b) = (input.input(), target.input());
                crate::dyn_tensor::check::same_device_elementwise(&[a.value, b.value], false)?;
                Ok(DynTensor::from_out(self.apply(a, b)?))
            }
        }

        impl super::Placement for $name {
            type Device = super::Anywhere;
        }

        impl<D: Device, E: Float> Module<D, E> for $name {
            type On<D2: Device> = $name;
            fn try_to<D2: Device>(&self, _dev: D2) -> Result<$name>
    where
        D: crate::device::CopyTo<D2>,
    {
                Ok(*self)
            }
            fn visit_parameters(&self, _prefix: &str, _f: &mut dyn FnMut(&str, &Tensor<D, E>)) {}
            fn visit_parameters_mut(
                &mut self,
                _prefix: &str,
                _f: &mut dyn FnMut(&str, &mut Tensor<D, E>),
            ) {
            }
        }
    };
}

elementwise_loss! {
    /// Mean absolute error (`nn.L1Loss`): `mean(|input - target|)`, or the sum, or one loss
    /// per element. No buffers: it runs on the device of its inputs.
    ///
    /// ```
    /// use devtype::prelude::*;
    /// use devtype::nn::L1Loss;
    /// let pred = Tensor::parameter(Tensor::from_vec(vec![1.0f32, 2.0], [2], Cpu));
    /// let target = Tensor::from_vec(vec![0.0f32, 4.0], [2], Cpu);
    /// let loss = L1Loss::new().forward(&pred, &target);
    /// assert_eq!(loss.item(), 1.5);
    /// loss.backward();
    /// assert_eq!(pred.grad().unwrap().to_vec(), vec![0.5, -0.5]);
    /// ```
    L1Loss, l1_loss
}

elementwise_loss! {
    /// Smooth L1 loss (`nn.SmoothL1Loss`): with `z = |input - target|`, `0.5 z^2 / beta`
    /// where `z < beta`, else `z - 0.5 beta` (`beta = 1` by default; `0` is the L1 loss).
    ///
    /// ```
    /// use devtype::prelude::*;
    /// use devtype::nn::SmoothL1Loss;
    /// let pred = Tensor::from_vec(vec![0.5f32, 3.0], [2], Cpu);
    /// let target = Tensor::zeros([2], Cpu);
    /// let loss = SmoothL1Loss::new().forward(&pred, &target);
    /// assert_eq!(loss.item(), (0.125 + 2.5) / 2.0);
    /// ```
    SmoothL1Loss, smooth_l1_loss, beta: 1.0, "Where the loss turns from quadratic to linear (`beta`, not negative)."
}

elementwise_loss! {
    /// Huber loss (`nn.HuberLoss`): with `z = |input - target|`, `0.5 z^2` where
    /// `z < delta`, else `delta (z - 0.5 delta)` (`delta = 1` by default).
    ///
    /// ```
    /// use devtype::prelude::*;
    /// use devtype::nn::HuberLoss;
    /// let pred = Tensor::from_vec(vec![0.5f32, 3.0], [2], Cpu);
    /// let target = Tensor::zeros([2], Cpu);
    /// let loss = HuberLoss::new().delta(2.0).forward(&pred, &target);
    /// assert_eq!(loss.item(), (0.125 + 4.0) / 2.0);
    /// ```
    HuberLoss, huber_loss, delta: 1.0, "Where the loss turns from quadratic to linear (`delta`, positive)."
}

/// Binary cross-entropy on logits (`nn.BCEWithLogitsLoss`), in PyTorch's numerically stable
/// form, with optional element `weight` and per-class `pos_weight` buffers held on `D` (so a
/// weight left on the CPU while the logits are on the GPU does not compile).
///
/// ```
/// use devtype::prelude::*;
/// use devtype::nn::BCEWithLogitsLoss;
/// let loss_fn = BCEWithLogitsLoss::<Cpu>::new().with_pos_weight(Tensor::full([2], 3.0, Cpu));
/// let logits = Tensor::<Cpu>::zeros([4, 2], Cpu);
/// let targets = Tensor::<Cpu>::ones([4, 2], Cpu);
/// let loss = loss_fn.forward(&logits, &targets);
/// assert!((loss.item() - 3.0 * 2f32.ln()).abs() < 1e-6);
/// ```
#[derive(Clone)]
pub struct BCEWithLogitsLoss<D: Device, E: Float = f32> {
    weight: Option<Tensor<D, E>>,
    pos_weight: Option<Tensor<D, E>>,
    /// How per-element losses are combined.
    pub reduction: Reduction,
}

crate::tensor::debug_on_host!(BCEWithLogitsLoss<D, E: crate::tensor::Float> { weight, pos_weight, reduction });

impl<D: Device, E: Float> Default for BCEWithLogitsLoss<D, E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<D: Device, E: Float> BCEWithLogitsLoss<D, E> {
    /// Unweighted mean binary cross-entropy.
    pub fn new() -> Self {
        BCEWithLogitsLoss {
            weight: None,
            pos_weight: None,
            reduction: Reduction::Mean,
        }
    }

    /// With a weight per element (broadcast against the loss), on `D`.
    pub fn with_weight(mut self, weight: Tensor<D, E>) -> Self {
        self.weight = Some(weight);
        self
    }

    /// With a weight of the positive examples per class (broadcast along the last dim), on `D`.
    pub fn with_pos_weight(mut self, pos_weight: Tensor<D, E>) -> Self {
        self.pos_weight = Some(pos_weight);
        self
    }

    /// With another reduction.
    pub fn with_reduction(mut self, reduction: Reduction) -> Self {
        self.reduction = reduction;
        self
    }

    /// The element weights, if any.
    pub fn weight(&self) -> Option<&Tensor<D, E>> {
        self.weight.as_ref()
    }

    /// The positive-class weights, if any.
    pub fn pos_weight(&self) -> Option<&Tensor<D, E>> {
        self.pos_weight.as_ref()
    }

    /// The loss with its buffers on `dev`, typed on it.
    pub fn try_to<D2: Device>(&self, dev: D2) -> Result<BCEWithLogitsLoss<D2, E>>
    where
        D: crate::device::CopyTo<D2>,
    {
        Ok(BCEWithLogitsLoss {
            weight: self.weight.as_ref().map(|w| w.move_to(dev)).transpose()?,
            pos_weight: self
                .pos_weight
                .as_ref()
                .map(|w| w.move_to(dev))
                .transpose()?,
            reduction: self.reduction,
        })
    }

    /// The loss with its buffers on `dev`: `let loss_fn = loss_fn.to(dev);`.
    #[must_use = "`to` returns the loss typed on the new device: `let loss_fn = loss_fn.to(dev);`"]
    #[track_caller]
    pub fn to<D2: Device>(&self, dev: D2) -> BCEWithLogitsLoss<D2, E>
    where
        D: crate::device::CopyTo<D2>,
    {
        match self.try_to(dev) {
            Ok(m) => m,
            Err(e) => panic!("{e}"),
        }
    }

    /// The loss of `logits` against probabilities `targets` of the same shape, recorded (the
    /// targets get a gradient too when tracked, as in PyTorch).
    pub fn try_forward<L, T>(&self, logits: L, targets: T) -> Result<Tensor<D, E>>
    where
        L: ModuleInput<D> + InputElementIs<E>,
        T: TargetOn<<L as HasDevice>::Device> + ElementIs<E>,
    {
        let device = D::from_dyn(logits.raw().device).expect("typed tensors are on their device");
        let out = rules::bce_with_logits(
            logits.input(),
            targets.input(),
            self.weight.as_ref().map(|w| In {
                value: &w.raw,
                node: None,
            }),
            self.pos_weight.as_ref().map(|w| In {
                value: &w.raw,
                node: None,
            }),
            self.reduction,
        )?;
        Ok(Tensor::from_out(out, device))
    }

    /// The loss of `logits` against `targets`.
    ///
    /// Panics with the error's text where [`try_forward`](Self::try_forward) returns it.
    #[track_caller]
    pub fn forward<L, T>(&self, logits: L, targets: T) -> Tensor<D, E>
    where
        L: ModuleInput<D> + InputElementIs<E>,
        T: TargetOn<<L as HasDevice>::Device> + ElementIs<E>,
    {
        match self.try_forward(logits, targets) {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }
}

impl<D: Device, E: Float> super::Placement for BCEWithLogitsLoss<D, E> {
    type Device = D;
}

impl<D: Device, E: Float> Module<D, E> for BCEWithLogitsLoss<D, E> {
    type On<D2: Device> = BCEWithLogitsLoss<D2, E>;
    fn try_to<D2: Device>(&self, dev: D2) -> Result<BCEWithLogitsLoss<D2, E>>
    where
        D: crate::device::CopyTo<D2>,
    {
        BCEWithLogitsLoss::try_to(self, dev)
    }
    fn visit_parameters(&self, _prefix: &str, _f: &mut dyn FnMut(&str, &Tensor<D, E>)) {}
    fn visit_parameters_mut(&mut self, _prefix: &str, _f: &mut dyn FnMut(&str, &mut Tensor<D, E>)) {
    }
}

/// Negative log-likelihood over class indices (`nn.NLLLoss`), on log-probabilities (the
/// output of `log_softmax`), with optional per-class weights held on `D` and `ignore_index`.
///
/// ```
/// use devtype::prelude::*;
/// use devtype::nn::NLLLoss;
/// let logp = Tensor::from_vec(vec![-0.5f32, -1.0, -2.0, -0.25], [2, 2], Cpu);
/// let targets = Tensor::<Cpu, i64>::from_vec(vec![1, 0], [2], Cpu);
/// let loss = NLLLoss::<Cpu>::new().forward(&logp, &targets);
/// assert_eq!(loss.item(), 1.5);
/// ```
#[derive(Clone)]
pub struct NLLLoss<D: Device, E: Float = f32> {
    weight: Option<Tensor<D, E>>,
    /// How per-sample losses are combined.
    pub reduction: Reduction,
    /// Targets equal to this are skipped (PyTorch's default is -100).
    pub ignore_index: i64,
}

crate::tensor::debug_on_host!(NLLLoss<D, E: crate::tensor::Float> { weight, reduction, ignore_index });

impl<D: Device, E: Float> Default for NLLLoss<D, E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<D: Device, E: Float> NLLLoss<D, E> {
    /// Unweighted mean negative log-likelihood.
    pub fn new() -> Self {
        NLLLoss {
            weight: None,
            reduction: Reduction::Mean,
            ignore_index: -100,
        }
    }

    /// With per-class weights, on `D`.
    pub fn with_weight(mut self, weight: Tensor<D, E>) -> Self {
        self.weight = Some(weight);
        self
    }

    /// The per-class weights, if any.
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
    pub fn try_to<D2: Device>(&self, dev: D2) -> Result<NLLLoss<D2, E>>
    where
        D: crate::device::CopyTo<D2>,
    {
        Ok(NLLLoss {
            weight: self.weight.as_ref().map(|w| w.move_to(dev)).transpose()?,
            reduction: self.reduction,
            ignore_index: self.ignore_index,
        })
    }

    /// The loss with its weight buffer on `dev`: `let loss_fn = loss_fn.to(dev);`.
    #[must_use = "`to` returns the loss typed on the new device: `let loss_fn = loss_fn.to(dev);`"]
    #[track_caller]
    pub fn to<D2: Device>(&self, dev: D2) -> NLLLoss<D2, E>
    where
        D: crate::device::CopyTo<D2>,
    {
        match self.try_to(dev) {
            Ok(m) => m,
            Err(e) => panic!("{e}"),
        }
    }

    /// The loss of log-probabilities `input` (`[batch, classes]`) at class indices `targets`
    /// (`[batch]`), recorded.
    pub fn try_forward<L, T>(&self, input: L, targets: T) -> Result<Tensor<D, E>>
    where
        L: ModuleInput<D> + InputElementIs<E>,
        T: TargetOn<<L as HasDevice>::Device> + ClassTargets,
    {
        let device = D::from_dyn(input.raw().device).expect("typed tensors are on their device");
        let out = rules::nll_loss(
            input.input(),
            targets.raw(),
            self.weight.as_ref().map(|w| &w.raw),
            self.reduction,
            self.ignore_index,
        )?;
        Ok(Tensor::from_out(out, device))
    }

    /// The loss of `input` against `targets`.
    ///
    /// Panics with the error's text where [`try_forward`](Self::try_forward) returns it.
    #[track_caller]
    pub fn forward<L, T>(&self, input: L, targets: T) -> Tensor<D, E>
    where
        L: ModuleInput<D> + InputElementIs<E>,
        T: TargetOn<<L as HasDevice>::Device> + ClassTargets,
    {
        match self.try_forward(input, targets) {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }
}

impl<D: Device, E: Float> super::Placement for NLLLoss<D, E> {
    type Device = D;
}

impl<D: Device, E: Float> Module<D, E> for NLLLoss<D, E> {
    type On<D2: Device> = NLLLoss<D2, E>;
    fn try_to<D2: Device>(&self, dev: D2) -> Result<NLLLoss<D2, E>>
    where
        D: crate::device::CopyTo<D2>,
    {
        NLLLoss::try_to(self, dev)
    }
    fn visit_parameters(&self, _prefix: &str, _f: &mut dyn FnMut(&str, &Tensor<D, E>)) {}
    fn visit_parameters_mut(&mut self, _prefix: &str, _f: &mut dyn FnMut(&str, &mut Tensor<D, E>)) {
    }
}
