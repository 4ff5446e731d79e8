//! Loss scaling for `f16` training (PyTorch's `torch.amp.GradScaler`), decided on the device.

use super::{ModelOn, Optimizer};
use crate::core::error::{Error, Result};
use crate::device::Device;
use crate::graph::Node;
use crate::nn::{Module, Placed, Placement, Precision};
use crate::ops::amp::ScaleSchedule;
use crate::tensor::{ElementIs, HasDevice, OperandOn, Tensor};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Weak};

/// Where one model (PyTorch: one optimizer) is in the current iteration, after
/// [`GradScaler::unscale_`] or [`GradScaler::step`]; a model without an entry is `READY`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Its gradients are unscaled (PyTorch's `OptState.UNSCALED`).
    Unscaled,
    /// It has stepped (PyTorch's `OptState.STEPPED`).
    Stepped,
}

/// The state of one model since the last `update` (PyTorch's `_per_optimizer_states[id(opt)]`).
struct PerModel<D: Device> {
    /// The model's parameters, by identity, sorted: which model this is. An optimizer here
    /// holds no parameters (it updates the model it is given), so the model's parameter set
    /// plays the part of PyTorch's `id(optimizer)`.
    key: Vec<usize>,
    stage: Stage,
    /// Set on the device where a gradient this entry unscaled was `inf` or NaN.
    found_inf: Tensor<D, bool>,
    /// Entries that unscaled a parameter this model shares with another (weights tied across
    /// models): their flags count for this model's step too.
    shared_with: Vec<usize>,
}

crate::tensor::debug_on_host!(PerModel<D> { key, stage, found_inf, shared_with });

/// A loss that [`GradScaler::scale`] can scale: a tensor on the scaler's device `D`.
///
/// A loss on another device is a compile error naming both devices in PyTorch's order and
/// the scaler's `GradScaler::new(dev)` as the likely culprit. Leave the defaulted parameters
/// out.
#[diagnostic::on_unimplemented(
    message = "Expected all tensors to be on the same device, but found at least two devices, `{First}` and `{Second}`",
    label = "this loss is on `{Found}`, but the scaler's scale is on `{D}`",
    note = "a `GradScaler` stays on the device it was built on: build it on the model's device, `GradScaler::new(dev)` (the device the loss is on)"
)]
pub trait LossOn<
    D: Device,
    Found: Device = <Self as HasDevice>::Device,
    First: Device = <Found as Device>::OperandFirst<D>,
    Second: Device = <Found as Device>::OperandSecond<D>,
>: OperandOn<D>
{
}

#[diagnostic::do_not_recommend]
impl<D: Device, T: OperandOn<D>> LossOn<D> for T {}

/// The device of a model's parameters ([`Placement::Device`]), as a [`GradScaler`] on `D`
/// checks it before anything else: implemented for `D` itself (and for a model without
/// parameters).
///
/// A model on another device is a compile error naming both devices in PyTorch's order and
/// the scaler's `GradScaler::new(dev)` as the fix (the optimizer, built without a device,
/// takes the scaler's). Leave the defaulted parameters out.
#[diagnostic::on_unimplemented(
    message = "Expected all tensors to be on the same device, but found at least two devices, `{First}` and `{Second}`",
    label = "this model's parameters are on `{Self}`, but the scaler (and so its optimizer) is on `{D}`",
    note = "a `GradScaler` stays on the device it was built on: build it after `let model = model.to(dev);` with that device, `GradScaler::new(dev)`"
)]
pub trait ScalerDeviceIs<
    D: Device,
    First = <D as Device>::NamedFirst<<Self as Placed>::Or<D>>,
    Second = <D as Device>::NamedSecond<<Self as Placed>::Or<D>>,
>: Placed
{
    /// `M`, once its device is checked (see [`ModelDeviceIs::Checked`](super::ModelDeviceIs)).
    #[doc(hidden)]
    type Checked<M>;
    /// `model`, as [`Checked`](Self::Checked).
    #[doc(hidden)]
    fn checked<M>(model: &M) -> &Self::Checked<M>;
    /// `model`, as [`Checked`](Self::Checked), mutably.
    #[doc(hidden)]
    fn checked_mut<M>(model: &mut M) -> &mut Self::Checked<M>;
}

#[diagnostic::do_not_recommend]
impl<D: Device> ScalerDeviceIs<D> for D {
    type Checked<M> = M;
    fn checked<M>(model: &M) -> &M {
        model
    }
    fn checked_mut<M>(model: &mut M) -> &mut M {
        model
    }
}

#[diagnostic::do_not_recommend]
impl<D: Device> ScalerDeviceIs<D> for crate::nn::Anywhere {
    type Checked<M> = M;
    fn checked<M>(model: &M) -> &M {
        model
    }
    fn checked_mut<M>(model: &mut M) -> &mut M {
        model
    }
}

/// A model that a [`GradScaler`] on `D` can unscale and step: its parameters on `D`, in `f32`.
///
/// The device is checked first ([`ScalerDeviceIs`]: PyTorch's device sentence, naming both
/// devices and `GradScaler::new(dev)` as the fix); then, on the right device, the element
/// type: an `f16` or `bf16` model is PyTorch's `Attempting to unscale FP16 gradients.` with
/// its element type, never a device sentence. Leave the defaulted `Found` out.
#[diagnostic::on_unimplemented(
    message = "Attempting to unscale `{Found}` gradients.",
    label = "this model's parameters are `{Found}`: a `GradScaler` unscales the `f32` gradients of an `f32` model",
    note = "keep the model in `f32` (its master weights) and run its forward pass under `autocast::<f16, _>(|| model.forward(&x))`: the products run in `f16`, the parameters and their gradients stay `f32`"
)]
pub trait ScaledModelOn<D: Device, Found = <Self as Precision>::Element>:
    Placement + Precision
{
    /// The model, as one an optimizer on `D` in `f32` steps (the model itself).
    type Model: ModelOn<D, f32>;
    /// The model, as one an optimizer on `D` in `f32` steps.
    fn as_scaled(&self) -> &Self::Model;
    /// The model, as one an optimizer on `D` in `f32` steps, mutably.
    fn as_scaled_mut(&mut self) -> &mut Self::Model;
}

impl<D: Device, M> ScaledModelOn<D> for M
where
    M: Placement + Precision,
    M::Device: ScalerDeviceIs<D>,
    <M::Device as ScalerDeviceIs<D>>::Checked<M>: ModelOn<D, f32>,
{
    type Model = <M::Device as ScalerDeviceIs<D>>::Checked<M>;
    fn as_scaled(&self) -> &Self::Model {
        <M::Device as ScalerDeviceIs<D>>::checked(self)
    }
    fn as_scaled_mut(&mut self) -> &mut Self::Model {
        <M::Device as ScalerDeviceIs<D>>::checked_mut(self)
    }
}

/// Scales the loss before `backward` so that small `f16` gradients do not flush to zero,
/// unscales the gradients before the optimizer steps, skips the steps whose gradients hold
/// an `inf` or a NaN, and adapts the scale: halved after such a step, doubled after
/// `growth_interval` good ones. PyTorch's defaults: 65536, 2.0, 0.5, 2000.
///
/// The scale, the count of good steps and the found-`inf` flags are 0-dim tensors on `D`, and
/// every decision is made on the device, as PyTorch's fused path does: `unscale_` is one
/// in-place pass per gradient that also sets the flag, the optimizer's fused kernels read the
/// flag and write nothing when it is set, and `update` is one tiny kernel. A training step with
/// a `GradScaler` makes no host sync and moves about the bytes of a plain step plus one read
/// and write of the gradients. Only [`get_scale`](Self::get_scale) reads the scale back, as
/// PyTorch's does.
///
/// One scaler can drive several models in one iteration (PyTorch's multi-model pattern): each
/// model's gradients are unscaled and checked once, by its own `unscale_` or `step`, and each
/// model steps or skips on its own flag; `update` backs off if any of them found an `inf`. The
/// state is kept per model, as PyTorch keeps it per optimizer (`READY`, `UNSCALED`,
/// `STEPPED`), with PyTorch's errors for a second `unscale_` or `step` before `update`. A
/// parameter is one gradient however many names it has (weights tied with
/// `set_weight(&other.weight())`, within a model or across models): it is unscaled once.
///
/// ```
/// use devtype::amp::{autocast, GradScaler};
/// use devtype::nn::{CrossEntropyLoss, Linear};
/// use devtype::optim::Sgd;
/// use devtype::prelude::*;
///
/// let dev = Cpu;
/// let mut model = Linear::new(10, 3, Cpu).to(dev);
/// let mut opt = Sgd::new(0.1);
/// let mut scaler = GradScaler::new(dev);
/// let loss_fn = CrossEntropyLoss::new();
/// for _ in 0..3 {
///     let x = Tensor::<Cpu>::randn([8, 10], Cpu).to(dev);
///     let y = Tensor::<Cpu, i64>::from_vec(vec![0, 1, 2, 0, 1, 2, 0, 1], [8], Cpu).to(dev);
///     opt.zero_grad(&model);
///     let logits = autocast::<f16, _>(|| model.forward(&x)); // the product in f16
///     let loss = loss_fn.forward(&logits, &y);                // the loss in f32
///     scaler.scale(&loss).backward();
///     scaler.step(&mut opt, &mut model); // unscales, skips on inf/NaN
///     scaler.update();                   // the next scale, on the device
/// }
/// assert_eq!(scaler.get_scale(), 65536.0);
/// ```
pub struct GradScaler<D: Device> {
    scale: Tensor<D, f32>,
    /// Good steps since the scale last changed.
    growth_tracker: Tensor<D, i64>,
    /// One entry per model unscaled since the last `update`, cleared by `update`.
    per_model: Vec<PerModel<D>>,
    /// Every parameter unscaled since the last `update`, by identity, with the entry that
    /// unscaled it. A weak handle to the node keeps its address (its identity) from being
    /// reused before `update`, without keeping the parameter or its gradient alive.
    unscaled: HashMap<usize, (Weak<Node>, usize)>,
    schedule: ScaleSchedule,
}

crate::tensor::debug_on_host!(GradScaler<D> { scale, growth_tracker, per_model, unscaled, schedule });

/// PyTorch's text for a second `unscale_` on one optimizer before `update`.
const UNSCALED_TWICE: &str =
    "unscale_() has already been called on this optimizer since the last update().";

/// The parameters of `model`, each once (by identity), with their identities.
fn parameters_of<D: Device, M: Module<D, f32>>(model: &M) -> Vec<(usize, Arc<Node>)> {
    let mut out: Vec<(usize, Arc<Node>)> = Vec::new();
    let mut seen = HashSet::new();
    model.visit_parameters("", &mut |_, p| {
        if let (Some(id), Some(node)) = (crate::nn::identity(p), p.node()) {
            if seen.insert(id) {
                out.push((id, node.clone()));
            }
        }
    });
    out
}

/// The key of a model's entry: its parameters' identities, sorted.
fn key_of(params: &[(usize, Arc<Node>)]) -> Vec<usize> {
    let mut key: Vec<usize> = params.iter().map(|(id, _)| *id).collect();
    key.sort_unstable();
    key
}

/// `a || b` for two 0-dim flags, on their device.
fn either<D: Device>(a: &Tensor<D, bool>, b: &Tensor<D, bool>) -> Result<Tensor<D, bool>> {
    let raw = crate::ops::where_cond::where_cond(&a.raw, &a.raw, &b.raw)?;
    Ok(Tensor::from_raw(raw, a.device()))
}

impl<D: Device> GradScaler<D> {
    /// A scaler on `dev` with PyTorch's defaults: `init_scale = 65536`, `growth_factor = 2`,
    /// `backoff_factor = 0.5`, `growth_interval = 2000`.
    pub fn new(dev: D) -> Self {
        Self::try_with(dev, 65536.0, 2.0, 0.5, 2000).expect("the defaults are valid")
    }

    /// A scaler with its own settings, checked as PyTorch checks them.
    pub fn try_with(
        dev: D,
        init_scale: f32,
        growth_factor: f32,
        backoff_factor: f32,
        growth_interval: u32,
    ) -> Result<Self> {
        if growth_factor.is_nan() || growth_factor <= 1.0 {
            return Err(Error::Autograd("The growth factor must be > 1.0.".into()));
        }
        if backoff_factor.is_nan() || backoff_factor >= 1.0 {
            return Err(Error::Autograd("The backoff factor must be < 1.0.".into()));
        }
        if !(init_scale > 0.0 && init_scale.is_finite()) || growth_interval == 0 {
            return Err(Error::Autograd(format!(
                "GradScaler needs a finite init_scale > 0 and a growth_interval > 0, got {init_scale} and {growth_interval}"
            )));
        }
        Ok(GradScaler {
            scale: Tensor::try_full([], init_scale, dev)?,
            growth_tracker: Tensor::try_full([], 0, dev)?,
            per_model: Vec::new(),
            unscaled: HashMap::new(),
            schedule: ScaleSchedule {
                growth_factor,
                backoff_factor,
                growth_interval: growth_interval.into(),
            },
        })
    }

    /// `loss * scale`, recorded: `backward` on it gives gradients multiplied by the scale.
    ///
    /// The loss (`Tensor<D, f32>` or a reference to one) must be on the scaler's device and in
    /// `f32`; anything else is a compile error with PyTorch's device sentence, or the dtype
    /// one, and the fix.
    pub fn scale<L: LossOn<D> + ElementIs<f32>>(&self, loss: L) -> Tensor<D, f32> {
        &self.scale * loss
    }

    /// The scale as a 0-dim tensor on `D` (no sync).
    pub fn scale_tensor(&self) -> &Tensor<D, f32> {
        &self.scale
    }

    /// The scale, read back to the host: a sync on a GPU, as PyTorch's `get_scale()`.
    pub fn get_scale(&self) -> f32
    where
        D: crate::device::HostSync,
    {
        self.scale.item()
    }

    /// The entry of the model with these parameters, if it was unscaled since the last update.
    fn entry(&self, key: &[usize]) -> Option<usize> {
        self.per_model.iter().position(|m| m.key == key)
    }

    /// Divides every gradient of `model` by the scale, in place, and notes on the device
    /// whether any of them holds an `inf` or a NaN (PyTorch's `scaler.unscale_(optimizer)`,
    /// for gradient clipping between `backward` and `step`). Once per model and step: a second
    /// call before [`update`](Self::update) is PyTorch's error `unscale_() has already been
    /// called on this optimizer since the last update().`, and one after `step`
    /// `unscale_() is being called after step().`. A parameter that another model's `unscale_`
    /// already unscaled in this iteration (a weight shared by both) is not unscaled again.
    pub fn try_unscale_<M: ScaledModelOn<D>>(&mut self, model: &M) -> Result<()> {
        let params = parameters_of(model.as_scaled().as_model());
        let key = key_of(&params);
        if let Some(i) = self.entry(&key) {
            return Err(Error::Autograd(match self.per_model[i].stage {
                Stage::Unscaled => UNSCALED_TWICE.into(),
                Stage::Stepped => "unscale_() is being called after step().".into(),
            }));
        }
        self.unscale_params(key, &params).map(|_| ())
    }

    /// Unscales the parameters not unscaled yet in this iteration and records the model's
    /// entry, `UNSCALED`; returns its index. On an error the gradients unscaled so far stay
    /// recorded as unscaled and the entry's flag is set, so that no step uses a half-unscaled
    /// model and no gradient is unscaled twice.
    fn unscale_params(&mut self, key: Vec<usize>, params: &[(usize, Arc<Node>)]) -> Result<usize> {
        let index = self.per_model.len();
        let inv_scale = self.scale.try_reciprocal()?;
        let dev = self.scale.device();
        let mut found = Tensor::<D, bool>::try_full([], false, dev)?;
        let mut shared_with = Vec::new();
        let mut result = Ok(());
        // In place, one pass per gradient (PyTorch's `_amp_foreach_non_finite_check_and_unscale_`):
        // a gradient another handle holds is copied first, so that handle keeps its values.
        for (id, node) in params {
            if let Some(&(_, other)) = self.unscaled.get(id) {
                if !shared_with.contains(&other) {
                    shared_with.push(other);
                }
                continue;
            }
            result =
                node.update_grad(|g| crate::ops::amp::unscale_(g, &inv_scale.raw, &mut found.raw));
            if result.is_err() {
                break;
            }
            self.unscaled.insert(*id, (Arc::downgrade(node), index));
        }
        if result.is_err() {
            if let Ok(set) = Tensor::<D, bool>::try_full([], true, dev) {
                found = set;
            }
        }
        self.per_model.push(PerModel {
            key,
            stage: Stage::Unscaled,
            found_inf: found,
            shared_with,
        });
        result.map(|()| index)
    }

    /// Whether the step of entry `i` is skipped: its own flag, or that of an entry that
    /// unscaled one of its parameters (on the device: no sync).
    fn skip_flag(&self, i: usize) -> Result<Tensor<D, bool>> {
        let entry = &self.per_model[i];
        let mut skip = entry.found_inf.clone();
        for &j in &entry.shared_with {
            skip = either(&skip, &self.per_model[j].found_inf)?;
        }
        Ok(skip)
    }

    /// [`try_unscale_`](Self::try_unscale_), panicking with the error's text.
    #[track_caller]
    pub fn unscale_<M: ScaledModelOn<D>>(&mut self, model: &M) {
        if let Err(e) = self.try_unscale_(model) {
            panic!("{e}");
        }
    }

    /// Unscales the gradients of `model` (unless [`unscale_`](Self::unscale_) already did) and
    /// steps `opt` on it, except where one of its gradients was not finite: then nothing
    /// changes. Decided on the device (`Optimizer::try_step_unless`), with no host sync.
    ///
    /// Once per model and iteration: a second `step` of the same model before
    /// [`update`](Self::update) is PyTorch's `step() has already been called since the last
    /// update().`, and changes nothing. Several models (with their own optimizers) may step
    /// in one iteration: each is unscaled and checked on its own.
    pub fn try_step<O: Optimizer<D, f32>, M: ScaledModelOn<D>>(
        &mut self,
        opt: &mut O,
        model: &mut M,
    ) -> Result<()> {
        let params = parameters_of(model.as_scaled().as_model());
        let key = key_of(&params);
        let i = match self.entry(&key) {
            Some(i) if self.per_model[i].stage == Stage::Stepped => {
                return Err(Error::Autograd(
                    "step() has already been called since the last update().".into(),
                ));
            }
            Some(i) => i,
            None => self.unscale_params(key, &params)?,
        };
        drop(params);
        let skip = self.skip_flag(i)?;
        opt.try_step_unless(model.as_scaled_mut(), &skip)?;
        self.per_model[i].stage = Stage::Stepped;
        Ok(())
    }

    /// [`try_step`](Self::try_step), panicking with the error's text.
    #[track_caller]
    pub fn step<O: Optimizer<D, f32>, M: ScaledModelOn<D>>(&mut self, opt: &mut O, model: &mut M) {
        if let Err(e) = self.try_step(opt, model) {
            panic!("{e}");
        }
    }

    /// The next scale, on the device (PyTorch's `_amp_update_scale_`): after an iteration in
    /// which any model's gradients held a non-finite value, `scale * backoff_factor` and the
    /// count restarts; after `growth_interval` good iterations in a row, `scale *
    /// growth_factor` (if that is finite). Every model is `READY` again afterwards. Without an
    /// `unscale_` or `step` since the last update, nothing changes.
    pub fn try_update(&mut self) -> Result<()> {
        let Some(first) = self.per_model.first() else {
            return Ok(());
        };
        let mut found = first.found_inf.clone();
        for m in &self.per_model[1..] {
            found = either(&found, &m.found_inf)?;
        }
        crate::ops::amp::update_scale_(
            &mut self.scale.raw,
            &mut self.growth_tracker.raw,
            &found.raw,
            self.schedule,
        )?;
        self.per_model.clear();
        self.unscaled.clear();
        Ok(())
    }

    /// [`try_update`](Self::try_update), panicking with the error's text.
    #[track_caller]
    pub fn update(&mut self) {
        if let Err(e) = self.try_update() {
            panic!("{e}");
        }
    }

    /// The count of good steps since the scale last changed (a host read: a sync on a GPU).
    pub fn growth_tracker(&self) -> u32
    where
        D: crate::device::HostSync,
    {
        self.growth_tracker.item() as u32
    }
}

impl<D: Device> GradScaler<D> {
    /// The scaler's state for a checkpoint (PyTorch's `GradScaler.state_dict()` names).
    pub(crate) fn export_state(
        &self,
    ) -> (
        Vec<(String, crate::core::raw::RawTensor)>,
        super::resume::Meta,
    ) {
        use super::resume::exact;
        let tensors = vec![
            ("scaler.scale".to_string(), self.scale.raw.clone()),
            (
                "scaler._growth_tracker".to_string(),
                self.growth_tracker.raw.clone(),
            ),
        ];
        let meta = [
            (
                "scaler.growth_factor".to_string(),
                exact(self.schedule.growth_factor as f64),
            ),
            (
                "scaler.backoff_factor".to_string(),
                exact(self.schedule.backoff_factor as f64),
            ),
            (
                "scaler.growth_interval".to_string(),
                self.schedule.growth_interval.to_string(),
            ),
        ]
        .into_iter()
        .collect();
        (tensors, meta)
    }

    /// A scaler on this one's device with a checkpoint's state, every value checked.
    pub(crate) fn import_state(
        &self,
        tensors: &HashMap<String, crate::core::raw::RawTensor>,
        meta: &super::resume::Meta,
    ) -> Result<Self> {
        use super::resume::meta_f64;
        let dev = self.scale.device();
        let get = |name: &str, dtype: crate::core::DType| {
            let t = tensors.get(name).ok_or_else(|| Error::MissingTensor {
                name: name.to_string(),
            })?;
            if t.dtype != dtype || t.numel() != 1 {
                return Err(Error::InvalidOptimizerArgument(format!(
                    "{name} must be one {dtype}, found {:?} of {}",
                    t.shape(),
                    t.dtype
                )));
            }
            t.to_device(dev.dyn_device())
        };
        let interval = meta_f64(meta, "scaler.growth_interval")?;
        let mut s = GradScaler::try_with(
            dev,
            1.0,
            meta_f64(meta, "scaler.growth_factor")? as f32,
            meta_f64(meta, "scaler.backoff_factor")? as f32,
            interval as u32,
        )?;
        s.scale = Tensor::from_raw(get("scaler.scale", crate::core::DType::F32)?, dev);
        s.growth_tracker =
            Tensor::from_raw(get("scaler._growth_tracker", crate::core::DType::I64)?, dev);
        Ok(s)
    }
}
