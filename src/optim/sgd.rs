//! Stochastic gradient descent with momentum, dampening, weight decay and Nesterov momentum,
//! as `torch.optim.SGD`.

use super::ModelOn;
use super::{check_each_with_grad, check_state_names, for_each_with_grad, Optimizer};
use crate::core::error::Result;
use crate::core::raw::RawTensor;
use crate::device::Device;
use crate::ops::optim::SgdUpdate;
use crate::tensor::{Float, Tensor};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::path::Path;

/// SGD (`torch.optim.SGD`): `p -= lr * (g + weight_decay * p)`, with momentum buffers (on
/// `D`) when `momentum > 0`.
///
/// # Checked values
///
/// The builders stay infallible so that `Sgd::new(0.1).momentum(0.9)` reads as in PyTorch;
/// the values are checked with PyTorch's texts by [`try_new`](Sgd::try_new) (the learning
/// rate) and [`check`](Sgd::check) (all of them), and always again by every
/// [`try_step`](Optimizer::try_step) before it touches anything, so a bad value (from a
/// builder or from [`set_lr`](Optimizer::set_lr)) is an `Err`, never a silent update:
/// `Invalid learning rate: -0.1`, `Invalid momentum value: -0.5`,
/// `Invalid weight_decay value: -1.0`, `Nesterov momentum requires a momentum and zero
/// dampening`. NaN is an error for every value (PyTorch lets a NaN learning rate through).
///
/// ```
/// use devtype::prelude::*;
/// use devtype::optim::Sgd;
/// let err = Sgd::<Cpu>::try_new(-0.1).unwrap_err();
/// assert_eq!(err.to_string(), "Invalid learning rate: -0.1");
/// assert!(Sgd::<Cpu>::new(0.1).nesterov(true).check().is_err()); // Nesterov needs momentum
/// ```
pub struct Sgd<D: Device, E: Float = f32> {
    update: SgdUpdate,
    /// Momentum buffers by parameter name, on `D`.
    momentum_buffers: HashMap<String, RawTensor>,
    _on: PhantomData<(D, E)>,
}

impl<D: Device, E: Float> Clone for Sgd<D, E> {
    fn clone(&self) -> Self {
        Sgd {
            update: self.update,
            momentum_buffers: self.momentum_buffers.clone(),
            _on: PhantomData,
        }
    }
}

impl<D: Device, E: Float> std::fmt::Debug for Sgd<D, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Sgd({:?}, {} momentum buffers on {})",
            self.update,
            self.momentum_buffers.len(),
            crate::device::type_label::<D>()
        )
    }
}

impl<D: Device, E: Float> Sgd<D, E> {
    /// Plain SGD with learning rate `lr`; the device is the model's (inferred from `step`).
    pub fn new(lr: f64) -> Self {
        Sgd {
            update: SgdUpdate {
                lr,
                momentum: 0.0,
                dampening: 0.0,
                weight_decay: 0.0,
                nesterov: false,
            },
            momentum_buffers: HashMap::new(),
            _on: PhantomData,
        }
    }

    /// Plain SGD with learning rate `lr`, or PyTorch's `Invalid learning rate: {lr}` when it
    /// is negative or NaN.
    pub fn try_new(lr: f64) -> Result<Self> {
        let opt = Self::new(lr);
        opt.check()?;
        Ok(opt)
    }

    /// Checks the hyper-parameters as `torch.optim.SGD` does (and NaN), with its texts.
    pub fn check(&self) -> Result<()> {
        self.update.validate()
    }

    /// With momentum (buffers are created on the first step, on `D`).
    pub fn momentum(mut self, momentum: f64) -> Self {
        self.update.momentum = momentum;
        self
    }

    /// With dampening of the momentum.
    pub fn dampening(mut self, dampening: f64) -> Self {
        self.update.dampening = dampening;
        self
    }

    /// With L2 weight decay.
    pub fn weight_decay(mut self, weight_decay: f64) -> Self {
        self.update.weight_decay = weight_decay;
        self
    }

    /// With Nesterov momentum.
    pub fn nesterov(mut self, nesterov: bool) -> Self {
        self.update.nesterov = nesterov;
        self
    }

    /// The momentum buffer of parameter `name`, once a step has made it.
    pub fn momentum_buffer(&self, name: &str) -> Option<Tensor<D, E>> {
        let raw = self.momentum_buffers.get(name)?;
        Some(Tensor::from_raw(
            raw.clone(),
            D::from_dyn(raw.device).expect("state is on D"),
        ))
    }

    /// The optimizer with its state on `dev`, typed on it (as after moving the model).
    pub fn try_to<D2: Device>(&self, dev: D2) -> Result<Sgd<D2, E>>
    where
        D: crate::device::CopyTo<D2>,
    {
        let buffers = self
            .momentum_buffers
            .iter()
            .map(|(k, v)| Ok((k.clone(), v.to_device(dev.dyn_device())?)))
            .collect::<Result<_>>()?;
        Ok(Sgd {
            update: self.update,
            momentum_buffers: buffers,
            _on: PhantomData,
        })
    }

    /// The optimizer with its state on `dev`: `let opt = opt.to(dev);`.
    #[must_use = "`to` returns the optimizer typed on the new device: `let opt = opt.to(dev);`"]
    #[track_caller]
    pub fn to<D2: Device>(&self, dev: D2) -> Sgd<D2, E>
    where
        D: crate::device::CopyTo<D2>,
    {
        match self.try_to(dev) {
            Ok(o) => o,
            Err(e) => panic!("{e}"),
        }
    }

    /// Saves the momentum buffers (safetensors, by parameter name).
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let mut tensors: Vec<(String, &RawTensor)> = self
            .momentum_buffers
            .iter()
            .map(|(k, v)| (k.clone(), v))
            .collect();
        tensors.sort_by(|a, b| a.0.cmp(&b.0));
        crate::nn::checkpoint_write(path.as_ref(), &tensors)
    }

    /// An optimizer with learning rate `lr` and the momentum buffers of a file, loaded onto
    /// `dev` (the resumed optimizer's state is typed on the device it was loaded onto).
    ///
    /// The file holds the buffers only: dampening, weight decay and Nesterov are not in it.
    /// To resume a run exactly, use [`save_checkpoint`](super::save_checkpoint) and
    /// [`load_checkpoint`](super::load_checkpoint), which keep every hyper-parameter too.
    ///
    /// The buffers are checked against the model at every step, before anything changes: a
    /// file of another model (a buffer of another shape, or for a parameter the model does not
    /// have) makes `try_step` an error that names the parameter and both shapes.
    pub fn load(path: impl AsRef<Path>, lr: f64, momentum: f64, dev: D) -> Result<Self> {
        let mut opt = Sgd::new(lr).momentum(momentum);
        for t in crate::nn::checkpoint_read::<E>(path.as_ref())? {
            let raw = Tensor::<D, E>::try_from_vec(t.values, &t.shape, dev)?.raw;
            opt.momentum_buffers.insert(t.name, raw);
        }
        Ok(opt)
    }
}

impl<D: Device, E: Float> Sgd<D, E> {
    /// One step, or where `skip` (one `bool` on `D`) holds none: the kernels read the flag on
    /// the device and write nothing then.
    fn step_unless<M: ModelOn<D, E>>(
        &mut self,
        model: &mut M,
        skip: Option<&RawTensor>,
    ) -> Result<()> {
        let update = self.update;
        update.validate()?;
        let buffers = &mut self.momentum_buffers;
        // Everything is checked before the first update: a failed step changes nothing.
        let names = check_each_with_grad(model, |name, p, g| {
            crate::ops::optim::check_sgd(name, p, g, buffers.get(name), &update)
        })?;
        if update.momentum != 0.0 {
            check_state_names(buffers.keys(), &names, "momentum_buffer")?;
        }
        for_each_with_grad(model, |name, p, g| {
            if update.momentum == 0.0 {
                return crate::ops::optim::sgd(name, p, g, &mut None, &update, skip);
            }
            let mut buf = buffers.remove(name);
            let r = crate::ops::optim::sgd(name, p, g, &mut buf, &update, skip);
            if let Some(b) = buf {
                buffers.insert(name.to_string(), b);
            }
            r
        })
    }
}

impl<D: Device, E: Float> Optimizer<D, E> for Sgd<D, E> {
    fn try_step<M: ModelOn<D, E>>(&mut self, model: &mut M) -> Result<()> {
        self.step_unless(model, None)
    }

    /// The fused kernels read `skip` on the device and change nothing where it holds: no
    /// snapshot, no host sync. A momentum buffer the skipped step created stays zeros, so the
    /// next step starts it from the gradient, as PyTorch's first step does (exactly so with
    /// `dampening = 0`; with dampening the first kept step damps the gradient once).
    fn try_step_unless<M: ModelOn<D, E>>(
        &mut self,
        model: &mut M,
        skip: &Tensor<D, bool>,
    ) -> Result<()> {
        self.step_unless(model, Some(&skip.raw))
    }

    fn lr(&self) -> f64 {
        self.update.lr
    }

    fn set_lr(&mut self, lr: f64) {
        self.update.lr = lr;
    }
}

impl<D: Device, E: Float> super::resume::sealed::Sealed<D> for Sgd<D, E> {
    #[allow(private_interfaces)]
    fn export_state(&self) -> Result<(Vec<(String, RawTensor)>, super::resume::Meta)> {
        use super::resume::exact;
        let u = self.update;
        let g = "optimizer.param_groups.0";
        let meta = [
            ("optimizer.type".to_string(), "SGD".to_string()),
            (format!("{g}.lr"), exact(u.lr)),
            (format!("{g}.momentum"), exact(u.momentum)),
            (format!("{g}.dampening"), exact(u.dampening)),
            (format!("{g}.weight_decay"), exact(u.weight_decay)),
            (format!("{g}.nesterov"), u.nesterov.to_string()),
        ]
        .into_iter()
        .collect();
        let tensors = self
            .momentum_buffers
            .iter()
            .map(|(k, v)| (format!("optimizer.state.{k}.momentum_buffer"), v.clone()))
            .collect();
        Ok((tensors, meta))
    }

    #[allow(private_interfaces)]
    fn import_state(
        tensors: &HashMap<String, RawTensor>,
        meta: &super::resume::Meta,
        dev: D,
        names: &std::collections::HashSet<String>,
    ) -> Result<Self> {
        use super::resume::{meta_bool, meta_f64};
        if meta.get("optimizer.type").map(String::as_str) != Some("SGD") {
            return Err(crate::core::error::Error::InvalidOptimizerArgument(
                format!(
                    "the checkpoint holds the state of {}, not of SGD",
                    meta.get("optimizer.type")
                        .map_or("no optimizer", String::as_str)
                ),
            ));
        }
        let g = "optimizer.param_groups.0";
        let mut opt = Sgd::<D, E>::new(meta_f64(meta, &format!("{g}.lr"))?)
            .momentum(meta_f64(meta, &format!("{g}.momentum"))?)
            .dampening(meta_f64(meta, &format!("{g}.dampening"))?)
            .weight_decay(meta_f64(meta, &format!("{g}.weight_decay"))?)
            .nesterov(meta_bool(meta, &format!("{g}.nesterov"))?);
        opt.check()?;
        for (key, raw) in tensors {
            let Some(rest) = key.strip_prefix("optimizer.state.") else {
                continue;
            };
            let name = rest.strip_suffix(".momentum_buffer").ok_or_else(|| {
                crate::core::error::Error::InvalidOptimizerArgument(format!(
                    "the checkpoint holds {key}, which SGD does not keep"
                ))
            })?;
            let t = super::resume::state_tensor(raw, E::DTYPE, dev.dyn_device())?;
            opt.momentum_buffers.insert(name.to_string(), t);
        }
        check_state_names(opt.momentum_buffers.keys(), names, "momentum_buffer")?;
        Ok(opt)
    }
}

impl<D: Device, E: Float> super::OptimizerState<D, E> for Sgd<D, E> {}
