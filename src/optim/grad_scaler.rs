//! Loss scaling for `f16` training (PyTorch's `torch.amp.GradScaler`), decided on the device.

use super::{ModelOn, Optimizer};
use crate::core::error::{Error, Result};
use crate::device::Device;
use crate::nn::Module;
use crate::ops::amp::ScaleSchedule;
use crate::tensor::Tensor;

/// Scales the loss before `backward` so that small `f16` gradients do not flush to zero,
/// unscales the gradients before the optimizer steps, skips the steps whose gradients hold
/// an `inf` or a NaN, and adapts the scale: halved after such a step, doubled after
/// `growth_interval` good ones. PyTorch's defaults: 65536, 2.0, 0.5, 2000.
///
/// The scale, the count of good steps and the found-`inf` flag are 0-dim tensors on `D`, and
/// every decision is made on the device, as PyTorch's fused path does: `unscale_` is one
/// in-place pass per gradient that also sets the flag, the optimizer's fused kernels read the
/// flag and write nothing when it is set, and `update` is one tiny kernel. A training step with
/// a `GradScaler` makes no host sync and moves about the bytes of a plain step plus one read
/// and write of the gradients. Only [`get_scale`](Self::get_scale) reads the scale back, as
/// PyTorch's does.
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
#[derive(Debug)]
pub struct GradScaler<D: Device> {
    scale: Tensor<D, f32>,
    /// Good steps since the scale last changed.
    growth_tracker: Tensor<D, i64>,
    /// Set by `unscale_`, read by `step`, cleared by `update`.
    found_inf: Option<Tensor<D, bool>>,
    schedule: ScaleSchedule,
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
            found_inf: None,
            schedule: ScaleSchedule {
                growth_factor,
                backoff_factor,
                growth_interval: growth_interval.into(),
            },
        })
    }

    /// `loss * scale`, recorded: `backward` on it gives gradients multiplied by the scale.
    pub fn scale(&self, loss: &Tensor<D, f32>) -> Tensor<D, f32> {
        loss * &self.scale
    }

    /// The scale as a 0-dim tensor on `D` (no sync).
    pub fn scale_tensor(&self) -> &Tensor<D, f32> {
        &self.scale
    }

    /// The scale, read back to the host: a sync on a GPU, as PyTorch's `get_scale()`.
    pub fn get_scale(&self) -> f32 {
        self.scale.item()
    }

    /// Divides every gradient of `model` by the scale, in place, and notes on the device
    /// whether any of them holds an `inf` or a NaN (PyTorch's `scaler.unscale_(optimizer)`,
    /// for gradient clipping between `backward` and `step`). Once per step: a second call
    /// before [`update`](Self::update) is an error, as in PyTorch.
    pub fn try_unscale_<M: Module<D, f32>>(&mut self, model: &M) -> Result<()> {
        if self.found_inf.is_some() {
            return Err(Error::Autograd(
                "unscale_() has already been called on this optimizer since the last update()."
                    .into(),
            ));
        }
        let inv_scale = self.scale.try_reciprocal()?;
        let mut found = Tensor::<D, bool>::try_full([], false, self.scale.device())?;
        let mut result = Ok(());
        // In place, one pass per gradient (PyTorch's `_amp_foreach_non_finite_check_and_unscale_`):
        // a gradient another handle holds is copied first, so that handle keeps its values.
        model.visit_parameters("", &mut |_, p| {
            if let (Ok(()), Some(node)) = (&result, p.node()) {
                result = node
                    .update_grad(|g| crate::ops::amp::unscale_(g, &inv_scale.raw, &mut found.raw));
            }
        });
        result?;
        self.found_inf = Some(found);
        Ok(())
    }

    /// [`try_unscale_`](Self::try_unscale_), panicking with the error's text.
    #[track_caller]
    pub fn unscale_<M: Module<D, f32>>(&mut self, model: &M) {
        if let Err(e) = self.try_unscale_(model) {
            panic!("{e}");
        }
    }

    /// Unscales the gradients (unless [`unscale_`](Self::unscale_) already did) and steps
    /// `opt`, except where a gradient was not finite: then nothing changes. Decided on the
    /// device (`Optimizer::try_step_unless`), with no host sync.
    pub fn try_step<O: Optimizer<D, f32>, M: ModelOn<D, f32>>(
        &mut self,
        opt: &mut O,
        model: &mut M,
    ) -> Result<()> {
        if self.found_inf.is_none() {
            self.try_unscale_(model)?;
        }
        let skip = self.found_inf.as_ref().expect("set by unscale_");
        opt.try_step_unless(model, skip)
    }

    /// [`try_step`](Self::try_step), panicking with the error's text.
    #[track_caller]
    pub fn step<O: Optimizer<D, f32>, M: ModelOn<D, f32>>(&mut self, opt: &mut O, model: &mut M) {
        if let Err(e) = self.try_step(opt, model) {
            panic!("{e}");
        }
    }

    /// The next scale, on the device (PyTorch's `_amp_update_scale_`): after a step with a
    /// non-finite gradient, `scale * backoff_factor` and the count restarts; after
    /// `growth_interval` good steps in a row, `scale * growth_factor` (if that is finite).
    /// Without a step since the last update, nothing changes.
    pub fn try_update(&mut self) -> Result<()> {
        let Some(found) = self.found_inf.take() else {
            return Ok(());
        };
        crate::ops::amp::update_scale_(
            &mut self.scale.raw,
            &mut self.growth_tracker.raw,
            &found.raw,
            self.schedule,
        )
    }

    /// [`try_update`](Self::try_update), panicking with the error's text.
    #[track_caller]
    pub fn update(&mut self) {
        if let Err(e) = self.try_update() {
            panic!("{e}");
        }
    }

    /// The count of good steps since the scale last changed (a host read: a sync on a GPU).
    pub fn growth_tracker(&self) -> u32 {
        self.growth_tracker.item() as u32
    }
}
