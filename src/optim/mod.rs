//! Optimisers: [`Sgd`] (momentum, weight decay, Nesterov) and [`Adam`] (and AdamW).
//!
//! An optimizer holds only its state (momentum buffers, moment estimates), typed on a device
//! `D`; `step(&mut model)` updates the parameters of a model on that same `D`, in place where
//! nothing else holds them, with one fused pass per parameter. Tensors are values: a parameter
//! another handle shares (a clone taken before the step, a view) is copied first, so that
//! handle keeps its values (in PyTorch it would see the update). A model on another device than
//! the optimizer's state does not compile (PyTorch meets this at run time, after resuming a
//! checkpoint whose optimizer state was loaded onto the CPU): move one of them with `to`.
//!
//! ```
//! use devtype::prelude::*;
//! use devtype::nn::{Linear, MSELoss};
//! use devtype::optim::Sgd;
//!
//! let dev = Cpu;                                         // or Cuda::<0>::open()?
//! let mut model = Linear::new(3, 1, Cpu).to(dev);
//! let mut opt = Sgd::new(0.1).momentum(0.9);             // state on dev, inferred from step
//! let (x, y) = (Tensor::randn([8, 3], dev), Tensor::<Cpu>::zeros([8, 1], dev));
//! for _ in 0..20 {
//!     model.zero_grad();
//!     let loss = MSELoss::new().forward(&model.forward(&x), &y);
//!     loss.backward();
//!     opt.step(&mut model);
//! }
//! ```

mod adam;
mod grad_scaler;
mod lr_scheduler;
mod resume;
mod rmsprop;
mod sgd;

pub use adam::Adam;
pub use grad_scaler::{GradScaler, LossOn, ScaledModelOn, ScalerDeviceIs};
pub use lr_scheduler::{AnnealStrategy, LrScheduler};
pub use resume::{load_checkpoint, save_checkpoint, OptimizerState};
pub use rmsprop::RMSprop;
pub use sgd::Sgd;

use crate::core::error::Result;
use crate::core::raw::RawTensor;
use crate::device::Device;
use crate::nn::{Module, Placed, Placement, Precision};
use crate::tensor::operand::sealed::AsRaw;
use crate::tensor::Float;
use crate::tensor::Tensor;
use std::collections::{HashMap, HashSet};

/// The device of a model's parameters ([`Placement::Device`]), as an optimizer with its state
/// on `D` checks it before anything else: implemented for `D` itself (and for [`Anywhere`],
/// a model without parameters).
///
/// A model on another device is a compile error naming both devices in PyTorch's order (the
/// fused update reads parameter, gradient and state: `cuda:0 and cpu`), the model as the
/// culprit, and the fix. The defaulted parameters compute that order: leave them out.
///
/// [`Anywhere`]: crate::nn::Anywhere
#[diagnostic::on_unimplemented(
    message = "Expected all tensors to be on the same device, but found at least two devices, `{First}` and `{Second}`",
    label = "this model's parameters are on `{Self}`, but the optimizer's state is on `{D}`",
    note = "an optimizer's state stays on the device it was built or loaded on: build the optimizer after `let model = model.to(dev);` (or load it with `dev`), or move its state: `let mut opt = opt.to(dev);`"
)]
pub trait ModelDeviceIs<
    D: Device,
    // Projected on the optimizer's device: a model generic over `D` and an optimizer on `Cpu`
    // read `D` and `Cpu` (a projection on the model's device would stay unresolved).
    First = <D as Device>::NamedFirst<<Self as Placed>::Or<D>>,
    Second = <D as Device>::NamedSecond<<Self as Placed>::Or<D>>,
>: Placed
{
    /// `M`, once its device is checked: the element type is checked through it, so a model
    /// on another device is one error (the device's), never a second one about its dtype.
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
impl<D: Device> ModelDeviceIs<D> for D {
    type Checked<M> = M;
    fn checked<M>(model: &M) -> &M {
        model
    }
    fn checked_mut<M>(model: &mut M) -> &mut M {
        model
    }
}

#[diagnostic::do_not_recommend]
impl<D: Device> ModelDeviceIs<D> for crate::nn::Anywhere {
    type Checked<M> = M;
    fn checked<M>(model: &M) -> &M {
        model
    }
    fn checked_mut<M>(model: &mut M) -> &mut M {
        model
    }
}

/// A model whose parameters are on `D` and of element type `E`, as an optimizer with its
/// state on `D` in `E` asks for.
///
/// The device is checked first ([`ModelDeviceIs`]: PyTorch's device sentence, naming both
/// devices); then, on the right device, the element type: a `bf16` model stepped by an `f32`
/// optimizer is the sentence of PyTorch's fused optimizers, `expected scalar type BFloat16 but
/// found Float`, naming both element types (never a device sentence that names one device
/// twice). The defaulted `Found` is the model's element type: leave it out.
///
/// An optimizer's code reaches the model as a [`Module`] through [`as_model`](Self::as_model).
#[diagnostic::on_unimplemented(
    message = "expected scalar type `{Found}` but found `{E}`",
    label = "this model's parameters are `{Found}`, but the optimizer's state is `{E}`",
    note = "an optimizer's state has its parameters' element type, fixed when it is built or first steps: build a new optimizer for the model (`let mut opt = Sgd::new(lr);`, its type inferred from `step`), or type it with the model's, `Sgd<D, {Found}>`"
)]
pub trait ModelOn<D: Device, E: Float = f32, Found = <Self as Precision>::Element>:
    Placement + Precision
{
    /// The model, as a [`Module`] on `D` of `E` (the model itself).
    type Model: Module<D, E>;
    /// The model, as a [`Module`] on `D` of `E`.
    fn as_model(&self) -> &Self::Model;
    /// The model, as a [`Module`] on `D` of `E`, mutably.
    fn as_model_mut(&mut self) -> &mut Self::Model;
}

impl<D: Device, E: Float, M> ModelOn<D, E> for M
where
    M: Placement + Precision,
    M::Device: ModelDeviceIs<D>,
    <M::Device as ModelDeviceIs<D>>::Checked<M>: Module<D, E>,
{
    type Model = <M::Device as ModelDeviceIs<D>>::Checked<M>;
    fn as_model(&self) -> &Self::Model {
        <M::Device as ModelDeviceIs<D>>::checked(self)
    }
    fn as_model_mut(&mut self) -> &mut Self::Model {
        <M::Device as ModelDeviceIs<D>>::checked_mut(self)
    }
}

/// An optimizer whose state lives on `D`: it updates models whose parameters are on `D`.
pub trait Optimizer<D: Device, E: Float = f32> {
    /// Updates every parameter of `model` that has a gradient, once.
    ///
    /// Checks everything first: the hyper-parameters (PyTorch's `Invalid learning rate: -0.1`
    /// and the like, NaN too), and every gradient and state buffer against its parameter
    /// (shape, dtype, and that the state is of a parameter of this model). On an error,
    /// no parameter and no state has changed.
    fn try_step<M: ModelOn<D, E>>(&mut self, model: &mut M) -> Result<()>;

    /// Updates every parameter of `model` that has a gradient, once (PyTorch's `opt.step()`).
    ///
    /// Panics with the error's text where [`try_step`](Self::try_step) returns it.
    #[track_caller]
    fn step<M: ModelOn<D, E>>(&mut self, model: &mut M) {
        if let Err(e) = self.try_step(model) {
            panic!("{e}");
        }
    }

    /// One step, or none where `skip` is `true`, decided on the device: no host sync. What
    /// [`GradScaler::step`](crate::amp::GradScaler::step) calls (PyTorch's fused and
    /// capturable optimizers take the same `found_inf` tensor).
    ///
    /// [`Sgd`] and [`Adam`] pass `skip` to their fused kernels, which read it on the device
    /// and write nothing where it holds. The default, for optimizers outside devtype, steps
    /// and then puts the parameters back where `skip` holds: `p = where(skip, p_before,
    /// p_after)` (its state, if any, is not put back).
    fn try_step_unless<M: ModelOn<D, E>>(
        &mut self,
        model: &mut M,
        skip: &Tensor<D, bool>,
    ) -> Result<()> {
        let before = snapshot(model);
        self.try_step(model)?;
        restore_unless(model, &before, &skip.raw)
    }

    /// Clears the gradients of `model` (PyTorch's `opt.zero_grad()`).
    fn zero_grad<M: ModelOn<D, E>>(&self, model: &M) {
        model.as_model().zero_grad();
    }

    /// The learning rate.
    fn lr(&self) -> f64;

    /// Sets the learning rate (for schedules).
    ///
    /// Infallible, like the builders: a bad value (negative, NaN) is reported by the next
    /// [`try_step`](Self::try_step), before anything changes, so it never slips through.
    fn set_lr(&mut self, lr: f64);
}

/// Runs `check` on every parameter of `model` that has a gradient, with its name, stopping at
/// the first error; returns the names of all parameters (with a gradient or not).
///
/// Optimizers call this before [`for_each_with_grad`], so that a step that fails changes no
/// parameter and no state: all or nothing. Each parameter is seen once, under its first name
/// (a tied weight's other names are not parameters of their own: no state is kept for them).
pub(crate) fn check_each_with_grad<D: Device, E: Float, M: ModelOn<D, E>>(
    model: &M,
    mut check: impl FnMut(&str, &RawTensor, &RawTensor) -> Result<()>,
) -> Result<HashSet<String>> {
    let model = model.as_model();
    let mut result = Ok(());
    let mut names = HashSet::new();
    let mut seen = HashSet::new();
    model.visit_parameters("", &mut |name, p| {
        if crate::nn::identity(p).is_some_and(|id| !seen.insert(id)) {
            return;
        }
        names.insert(name.to_string());
        if result.is_err() {
            return;
        }
        let Some(grad) = p.node().and_then(|n| n.grad()) else {
            return;
        };
        result = check(name, p.raw(), &grad);
    });
    result.map(|()| names)
}

/// An error when the state holds a buffer for a parameter the model does not have: the state
/// was made for (or loaded from a file of) another model.
pub(crate) fn check_state_names<'a>(
    state: impl IntoIterator<Item = &'a String>,
    names: &HashSet<String>,
    what: &'static str,
) -> Result<()> {
    let mut unknown: Vec<&String> = state.into_iter().filter(|k| !names.contains(*k)).collect();
    unknown.sort();
    match unknown.first() {
        Some(name) => Err(crate::core::error::Error::OptimizerStateUnknownParameter {
            name: name.to_string(),
            state: what,
        }),
        None => Ok(()),
    }
}

/// New handles to the parameters that have a gradient, by name: their values before a step
/// (a step then writes new buffers for them, as it never writes into shared storage).
pub(crate) fn snapshot<D: Device, E: Float, M: ModelOn<D, E>>(
    model: &M,
) -> HashMap<String, RawTensor> {
    let model = model.as_model();
    let mut before = HashMap::new();
    let mut seen = HashSet::new();
    model.visit_parameters("", &mut |name, p| {
        if crate::nn::identity(p).is_some_and(|id| !seen.insert(id)) {
            return;
        }
        if p.node().and_then(|n| n.grad()).is_some() {
            before.insert(name.to_string(), p.raw().clone());
        }
    });
    before
}

/// `p = where(skip, before, p)` for every parameter in `before`.
pub(crate) fn restore_unless<D: Device, E: Float, M: ModelOn<D, E>>(
    model: &mut M,
    before: &HashMap<String, RawTensor>,
    skip: &RawTensor,
) -> Result<()> {
    crate::nn::for_each_unique_mut(model.as_model_mut(), |name, p| match before.get(name) {
        Some(old) => keep_unless(skip, Some(old), p.raw_mut()),
        None => Ok(()),
    })
}

/// `after = where(skip, before, after)`; a state buffer the step created (`before` is `None`)
/// becomes zeros where `skip` holds.
pub(crate) fn keep_unless(
    skip: &RawTensor,
    before: Option<&RawTensor>,
    after: &mut RawTensor,
) -> Result<()> {
    let zeros;
    let old = match before {
        Some(old) => old,
        None => {
            zeros = crate::ops::creation::create(
                after.layout.shape,
                after.dtype,
                after.device,
                crate::ops::creation::Fill::Constant(crate::core::Scalar::Float(0.0)),
            )?;
            &zeros
        }
    };
    *after = crate::ops::where_cond::where_cond(skip, old, after)?;
    Ok(())
}

/// Runs `update` on every parameter of `model` that has a gradient, with its name: once per
/// parameter, under its first name; the other handles of a tied weight then share the updated
/// value (one step, and the tie holds).
pub(crate) fn for_each_with_grad<D: Device, E: Float, M: ModelOn<D, E>>(
    model: &mut M,
    mut update: impl FnMut(&str, &mut RawTensor, &RawTensor) -> Result<()>,
) -> Result<()> {
    crate::nn::for_each_unique_mut(model.as_model_mut(), |name, p| {
        match p.node().and_then(|n| n.grad()) {
            Some(grad) => update(name, p.raw_mut(), &grad),
            None => Ok(()),
        }
    })
}
