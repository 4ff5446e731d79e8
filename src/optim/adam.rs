//! Adam (`torch.optim.Adam`) and AdamW (decoupled weight decay).

use super::{for_each_with_grad, Optimizer};
use crate::device::Device;
use crate::error::Result;
use crate::nn::Module;
use crate::ops::optim::AdamUpdate;
use crate::tensor::raw::RawTensor;
use crate::tensor::{Float, Tensor};
use std::collections::HashMap;
use std::marker::PhantomData;

/// The moment estimates of one parameter.
#[derive(Clone, Default)]
struct Moments {
    exp_avg: Option<RawTensor>,
    exp_avg_sq: Option<RawTensor>,
    step: u64,
}

/// Adam (`torch.optim.Adam`): bias-corrected moment estimates, kept on `D`. With
/// [`decoupled_weight_decay`](Adam::decoupled_weight_decay), AdamW.
pub struct Adam<D: Device, E: Float = f32> {
    update: AdamUpdate,
    state: HashMap<String, Moments>,
    _on: PhantomData<(D, E)>,
}

impl<D: Device, E: Float> Clone for Adam<D, E> {
    fn clone(&self) -> Self {
        Adam {
            update: self.update,
            state: self.state.clone(),
            _on: PhantomData,
        }
    }
}

impl<D: Device, E: Float> Adam<D, E> {
    /// Adam with learning rate `lr` and PyTorch's defaults (`betas = (0.9, 0.999)`,
    /// `eps = 1e-8`); the device is the model's (inferred from `step`).
    pub fn new(lr: f64) -> Self {
        Adam {
            update: AdamUpdate {
                lr,
                beta1: 0.9,
                beta2: 0.999,
                eps: 1e-8,
                weight_decay: 0.0,
                decoupled: false,
                step: 0,
            },
            state: HashMap::new(),
            _on: PhantomData,
        }
    }

    /// With other `betas`.
    pub fn betas(mut self, beta1: f64, beta2: f64) -> Self {
        self.update.beta1 = beta1;
        self.update.beta2 = beta2;
        self
    }

    /// With another `eps`.
    pub fn eps(mut self, eps: f64) -> Self {
        self.update.eps = eps;
        self
    }

    /// With L2 weight decay added to the gradient (Adam's `weight_decay`).
    pub fn weight_decay(mut self, weight_decay: f64) -> Self {
        self.update.weight_decay = weight_decay;
        self.update.decoupled = false;
        self
    }

    /// With decoupled weight decay (AdamW).
    pub fn decoupled_weight_decay(mut self, weight_decay: f64) -> Self {
        self.update.weight_decay = weight_decay;
        self.update.decoupled = true;
        self
    }

    /// The first and second moment estimates of parameter `name`, once a step has made them.
    pub fn moments(&self, name: &str) -> Option<(Tensor<D, E>, Tensor<D, E>)> {
        let m = self.state.get(name)?;
        let wrap = |r: &RawTensor| {
            Tensor::from_raw(r.clone(), D::from_dyn(r.device).expect("state is on D"))
        };
        Some((wrap(m.exp_avg.as_ref()?), wrap(m.exp_avg_sq.as_ref()?)))
    }

    /// The optimizer with its state on `dev`, typed on it.
    pub fn try_to<D2: Device>(&self, dev: D2) -> Result<Adam<D2, E>> {
        let mv = |t: &Option<RawTensor>| {
            t.as_ref()
                .map(|t| t.to_device(dev.dyn_device()))
                .transpose()
        };
        let state = self
            .state
            .iter()
            .map(|(k, m)| {
                Ok((
                    k.clone(),
                    Moments {
                        exp_avg: mv(&m.exp_avg)?,
                        exp_avg_sq: mv(&m.exp_avg_sq)?,
                        step: m.step,
                    },
                ))
            })
            .collect::<Result<_>>()?;
        Ok(Adam {
            update: self.update,
            state,
            _on: PhantomData,
        })
    }

    /// The optimizer with its state on `dev`: `let opt = opt.to(dev);`.
    #[must_use = "`to` returns the optimizer typed on the new device: `let opt = opt.to(dev);`"]
    #[track_caller]
    pub fn to<D2: Device>(&self, dev: D2) -> Adam<D2, E> {
        match self.try_to(dev) {
            Ok(o) => o,
            Err(e) => panic!("{e}"),
        }
    }
}

impl<D: Device, E: Float> Optimizer<D, E> for Adam<D, E> {
    fn try_step<M: Module<D, E>>(&mut self, model: &mut M) -> Result<()> {
        let update = self.update;
        let state = &mut self.state;
        for_each_with_grad(model, |name, p, g| {
            let m = state.entry(name.to_string()).or_default();
            m.step += 1;
            let u = AdamUpdate {
                step: m.step,
                ..update
            };
            crate::ops::optim::adam(p, g, &mut m.exp_avg, &mut m.exp_avg_sq, &u)
        })
    }

    fn lr(&self) -> f64 {
        self.update.lr
    }

    fn set_lr(&mut self, lr: f64) {
        self.update.lr = lr;
    }
}
