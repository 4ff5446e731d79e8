//! Adam (`torch.optim.Adam`) and AdamW (decoupled weight decay).

use super::ModelOn;
use super::{check_each_with_grad, check_state_names, for_each_with_grad, Optimizer};
use crate::core::error::Result;
use crate::core::raw::RawTensor;
use crate::core::DType;
use crate::device::Device;
use crate::ops::optim::AdamUpdate;
use crate::tensor::{Float, Tensor};
use std::collections::HashMap;
use std::marker::PhantomData;

/// The moment estimates of one parameter.
#[derive(Clone, Default)]
struct Moments {
    exp_avg: Option<RawTensor>,
    exp_avg_sq: Option<RawTensor>,
    /// Steps taken, counted on the host.
    step: u64,
    /// Steps taken, as a 0-dim `f64` tensor on the parameter's device, once a step could be
    /// skipped there ([`try_step_unless`](Optimizer::try_step_unless), a `GradScaler`): a
    /// skipped step does not count, as in PyTorch, where `step` is not called then. From then
    /// on it, not `step`, gives the bias corrections.
    device_step: Option<RawTensor>,
}

/// `[lr / (1 - beta1^t), 1 / sqrt(1 - beta2^t)]` for the step count `t` (a 0-dim `f64`
/// tensor), on its device, computed there (no host sync) and converted to `dtype`, the
/// kernels' compute type.
fn bias_corrections(t: &RawTensor, u: &AdamUpdate, dtype: DType) -> Result<RawTensor> {
    use crate::core::Scalar::Float;
    use crate::ops::binary::{binary_scalar, BinaryOp};
    use crate::ops::unary::{unary, UnaryOp};
    use std::borrow::Cow;
    // 1 - beta^t.
    let correction = |beta: f64| -> Result<RawTensor> {
        let power = binary_scalar(Cow::Borrowed(t), Float(beta), BinaryOp::Pow, true)?;
        binary_scalar(Cow::Owned(power), Float(1.0), BinaryOp::Sub, true)
    };
    let step_size = binary_scalar(
        Cow::Owned(correction(u.beta1)?),
        Float(u.lr),
        BinaryOp::Div,
        true,
    )?;
    let root = unary(Cow::Owned(correction(u.beta2)?), UnaryOp::Sqrt)?;
    let inv_sqrt_bc2 = unary(Cow::Owned(root), UnaryOp::Reciprocal)?;
    let both = crate::ops::cat::stack(&[&step_size, &inv_sqrt_bc2], 0)?;
    crate::ops::copy::cast(&both, dtype)
}

/// One advance of a device step count, shared by the parameters that held the same count.
#[derive(Clone)]
struct SharedCount {
    /// The count before the step (`None`: it starts from the host count `host_step`).
    prev: Option<RawTensor>,
    host_step: u64,
    device: crate::device::DynDevice,
    acc: DType,
    /// The count after the step (it does not advance where the step is skipped).
    next: RawTensor,
    corrections: RawTensor,
}

impl SharedCount {
    /// Whether a parameter `p` whose count is `prev` (or `host_step`, on the host) and whose
    /// kernels compute in `acc` advances to this count.
    fn counts(&self, prev: &Option<RawTensor>, host_step: u64, p: &RawTensor, acc: DType) -> bool {
        let same = match (&self.prev, prev) {
            (Some(a), Some(b)) => a.storage.ptr_eq(&b.storage) && a.layout == b.layout,
            (None, None) => self.host_step == host_step,
            _ => false,
        };
        same && self.device == p.device && self.acc == acc
    }

    fn advance(
        prev: &Option<RawTensor>,
        host_step: u64,
        p: &RawTensor,
        acc: DType,
        skip: Option<&RawTensor>,
        update: &AdamUpdate,
    ) -> Result<Self> {
        let t = match prev {
            Some(t) => t.clone(),
            None => crate::ops::creation::create(
                crate::core::layout::Dims::EMPTY,
                DType::F64,
                p.device,
                crate::ops::creation::Fill::Constant(crate::core::Scalar::Float(host_step as f64)),
            )?,
        };
        let next = crate::ops::binary::binary_scalar(
            std::borrow::Cow::Borrowed(&t),
            crate::core::Scalar::Float(1.0),
            crate::ops::binary::BinaryOp::Add,
            false,
        )?;
        let next = match skip {
            Some(skip) => crate::ops::where_cond::where_cond(skip, &t, &next)?,
            None => next,
        };
        let corrections = bias_corrections(&next, update, acc)?;
        Ok(SharedCount {
            prev: prev.clone(),
            host_step,
            device: p.device,
            acc,
            next,
            corrections,
        })
    }
}

/// Adam (`torch.optim.Adam`): bias-corrected moment estimates, kept on `D`. With
/// [`decoupled_weight_decay`](Adam::decoupled_weight_decay), AdamW.
///
/// # Checked values
///
/// As for [`Sgd`](super::Sgd): the builders stay infallible, and the values are checked with
/// PyTorch's texts by [`try_new`](Adam::try_new), [`check`](Adam::check) and before anything
/// changes by every [`try_step`](Optimizer::try_step) (so [`set_lr`](Optimizer::set_lr) cannot
/// slip a bad value through): `Invalid learning rate: -0.1`, `Invalid epsilon value: -1.0`,
/// `Invalid beta parameter at index 0: 1.0`, `Invalid weight_decay value: -0.01`; NaN fails
/// each of them.
///
/// ```
/// use devtype::prelude::*;
/// use devtype::optim::Adam;
/// let err = Adam::<Cpu>::new(0.1).betas(1.0, 0.999).check().unwrap_err();
/// assert_eq!(err.to_string(), "Invalid beta parameter at index 0: 1.0");
/// ```
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

impl<D: Device, E: Float> std::fmt::Debug for Adam<D, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Adam({:?}, state of {} parameters on {})",
            self.update,
            self.state.len(),
            crate::device::type_label::<D>()
        )
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

    /// Adam with learning rate `lr`, or PyTorch's `Invalid learning rate: {lr}` when it is
    /// negative or NaN.
    pub fn try_new(lr: f64) -> Result<Self> {
        let opt = Self::new(lr);
        opt.check()?;
        Ok(opt)
    }

    /// Checks the hyper-parameters as `torch.optim.Adam` does (NaN fails too), with its texts.
    pub fn check(&self) -> Result<()> {
        self.update.validate()
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
    pub fn try_to<D2: Device>(&self, dev: D2) -> Result<Adam<D2, E>>
    where
        D: crate::device::CopyTo<D2>,
    {
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
                        device_step: mv(&m.device_step)?,
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
    pub fn to<D2: Device>(&self, dev: D2) -> Adam<D2, E>
    where
        D: crate::device::CopyTo<D2>,
    {
        match self.try_to(dev) {
            Ok(o) => o,
            Err(e) => panic!("{e}"),
        }
    }
}

impl<D: Device, E: Float> Adam<D, E> {
    /// One step; with `skip`, one that changes nothing and does not count where `skip` holds
    /// (the kernels read the flag on the device): the step count on the device advances only
    /// where it does not.
    fn step_counting<M: ModelOn<D, E>>(
        &mut self,
        model: &mut M,
        skip: Option<&RawTensor>,
    ) -> Result<()> {
        let update = self.update;
        update.validate()?;
        let state = &mut self.state;
        // Everything is checked before the first update: a failed step changes nothing (not
        // even the step counts).
        let names = check_each_with_grad(model, |name, p, g| {
            let m = state.get(name);
            crate::ops::optim::check_adam(
                name,
                p,
                g,
                m.and_then(|m| m.exp_avg.as_ref()),
                m.and_then(|m| m.exp_avg_sq.as_ref()),
                &update,
            )
        })?;
        check_state_names(state.keys(), &names, "exp_avg")?;
        let mut counts: Vec<SharedCount> = Vec::new();
        for_each_with_grad(model, |name, p, g| {
            let m = state.entry(name.to_string()).or_default();
            let u = AdamUpdate {
                step: m.step + 1,
                ..update
            };
            // The step count on the device, once a step could be skipped, and the bias
            // corrections it gives: shared by the parameters whose counts are one tensor
            // (normally all of them), so they cost a few tiny ops per step, not per parameter.
            let acc = crate::ops::optim::acc_dtype(p.dtype);
            let counted = match (skip, &m.device_step) {
                (None, None) => None,
                (_, prev) => Some(
                    match counts.iter().find(|c| c.counts(prev, m.step, p, acc)) {
                        Some(c) => c.clone(),
                        None => {
                            let c = SharedCount::advance(prev, m.step, p, acc, skip, &update)?;
                            counts.push(c.clone());
                            c
                        }
                    },
                ),
            };
            let corrections = counted.as_ref().map(|c| &c.corrections);
            crate::ops::optim::adam(
                name,
                p,
                g,
                &mut m.exp_avg,
                &mut m.exp_avg_sq,
                &u,
                corrections,
                skip,
            )?;
            m.step += 1;
            if let Some(c) = counted {
                m.device_step = Some(c.next);
            }
            Ok(())
        })
    }
}

impl<D: Device, E: Float> Optimizer<D, E> for Adam<D, E> {
    fn try_step<M: ModelOn<D, E>>(&mut self, model: &mut M) -> Result<()> {
        self.step_counting(model, None)
    }

    /// The fused kernels read `skip` on the device and change no parameter and no moment
    /// where it holds (moments the skipped step created stay zeros), and the step count, kept
    /// on the device from the first such call on, does not advance there: the bias
    /// corrections stay PyTorch's, whose `GradScaler` does not call `step` then. No snapshot,
    /// no host sync.
    fn try_step_unless<M: ModelOn<D, E>>(
        &mut self,
        model: &mut M,
        skip: &Tensor<D, bool>,
    ) -> Result<()> {
        self.step_counting(model, Some(&skip.raw))
    }

    fn lr(&self) -> f64 {
        self.update.lr
    }

    fn set_lr(&mut self, lr: f64) {
        self.update.lr = lr;
    }
}

impl<D: Device, E: Float> super::resume::sealed::Sealed<D> for Adam<D, E> {
    #[allow(private_interfaces)]
    fn export_state(&self) -> Result<(Vec<(String, RawTensor)>, super::resume::Meta)> {
        use super::resume::exact;
        let u = self.update;
        let g = "optimizer.param_groups.0";
        let mut meta: super::resume::Meta = [
            (
                "optimizer.type".to_string(),
                if u.decoupled { "AdamW" } else { "Adam" }.to_string(),
            ),
            (format!("{g}.lr"), exact(u.lr)),
            (format!("{g}.betas.0"), exact(u.beta1)),
            (format!("{g}.betas.1"), exact(u.beta2)),
            (format!("{g}.eps"), exact(u.eps)),
            (format!("{g}.weight_decay"), exact(u.weight_decay)),
        ]
        .into_iter()
        .collect();
        let mut tensors = Vec::new();
        for (name, m) in &self.state {
            let s = format!("optimizer.state.{name}");
            if let Some(t) = &m.exp_avg {
                tensors.push((format!("{s}.exp_avg"), t.clone()));
            }
            if let Some(t) = &m.exp_avg_sq {
                tensors.push((format!("{s}.exp_avg_sq"), t.clone()));
            }
            // PyTorch's `step`: the count of steps taken (on the device once steps could be
            // skipped there); the host's count of calls, which also counts skipped ones, too.
            let step = match &m.device_step {
                Some(t) => t.clone(),
                None => {
                    RawTensor::from_cpu_vec(vec![m.step as f64], crate::core::layout::Dims::EMPTY)
                }
            };
            tensors.push((format!("{s}.step"), step));
            meta.insert(format!("{s}.host_step"), m.step.to_string());
            meta.insert(
                format!("{s}.step_on_device"),
                m.device_step.is_some().to_string(),
            );
        }
        Ok((tensors, meta))
    }

    #[allow(private_interfaces)]
    fn import_state(
        tensors: &HashMap<String, RawTensor>,
        meta: &super::resume::Meta,
        dev: D,
        names: &std::collections::HashSet<String>,
    ) -> Result<Self> {
        use super::resume::{meta_bool, meta_f64, state_tensor};
        use crate::core::error::Error;
        let kind = meta.get("optimizer.type").map(String::as_str);
        if kind != Some("Adam") && kind != Some("AdamW") {
            return Err(Error::InvalidOptimizerArgument(format!(
                "the checkpoint holds the state of {}, not of Adam or AdamW",
                kind.unwrap_or("no optimizer")
            )));
        }
        let g = "optimizer.param_groups.0";
        let wd = meta_f64(meta, &format!("{g}.weight_decay"))?;
        let mut opt = Adam::<D, E>::new(meta_f64(meta, &format!("{g}.lr"))?)
            .betas(
                meta_f64(meta, &format!("{g}.betas.0"))?,
                meta_f64(meta, &format!("{g}.betas.1"))?,
            )
            .eps(meta_f64(meta, &format!("{g}.eps"))?);
        opt = if kind == Some("AdamW") {
            opt.decoupled_weight_decay(wd)
        } else {
            opt.weight_decay(wd)
        };
        opt.check()?;
        let dyn_dev = dev.dyn_device();
        for (key, raw) in tensors {
            let Some(rest) = key.strip_prefix("optimizer.state.") else {
                continue;
            };
            let (name, what) = rest.rsplit_once('.').unwrap_or((rest, ""));
            let m = opt.state.entry(name.to_string()).or_default();
            match what {
                "exp_avg" => m.exp_avg = Some(state_tensor(raw, E::DTYPE, dyn_dev)?),
                "exp_avg_sq" => m.exp_avg_sq = Some(state_tensor(raw, E::DTYPE, dyn_dev)?),
                "step" => {
                    let s = format!("optimizer.state.{name}");
                    m.step = meta
                        .get(&format!("{s}.host_step"))
                        .and_then(|v| v.parse().ok())
                        .ok_or_else(|| Error::MissingTensor {
                            name: format!("{s}.host_step"),
                        })?;
                    if meta_bool(meta, &format!("{s}.step_on_device"))? {
                        if raw.dtype != DType::F64 || raw.numel() != 1 {
                            return Err(Error::InvalidOptimizerArgument(format!(
                                "{key} must be one f64, found {:?} of {}",
                                raw.shape(),
                                raw.dtype
                            )));
                        }
                        m.device_step = Some(raw.to_device(dyn_dev)?);
                    }
                }
                _ => {
                    return Err(Error::InvalidOptimizerArgument(format!(
                        "the checkpoint holds {key}, which Adam does not keep"
                    )))
                }
            }
        }
        for (name, m) in &opt.state {
            if m.exp_avg.is_none() || m.exp_avg_sq.is_none() {
                return Err(Error::MissingTensor {
                    name: format!("optimizer.state.{name}.exp_avg"),
                });
            }
        }
        check_state_names(opt.state.keys(), names, "exp_avg")?;
        Ok(opt)
    }
}

impl<D: Device, E: Float> super::OptimizerState<D, E> for Adam<D, E> {}
