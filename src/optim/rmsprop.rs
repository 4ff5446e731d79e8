//! RMSprop (`torch.optim.RMSprop`): a running average of squared gradients scales each step;
//! optionally centered (minus the squared running average of the gradients), with momentum
//! and L2 weight decay.
//!
//! The update is composed of the device-generic element-wise kernels (`crate::ops`), in the
//! order of PyTorch's single-tensor implementation, so it runs wherever they run.

use super::ModelOn;
use super::{check_each_with_grad, check_state_names, for_each_with_grad, keep_unless, Optimizer};
use crate::core::error::{Error, Result};
use crate::core::raw::RawTensor;
use crate::core::{DType, Scalar};
use crate::device::Device;
use crate::ops::binary::{binary, binary_scalar, BinaryOp};
use crate::ops::optim::py_float;
use crate::ops::unary::{unary, UnaryOp};
use crate::tensor::{Float, Tensor};
use std::borrow::Cow;
use std::collections::HashMap;
use std::marker::PhantomData;

/// The hyper-parameters of RMSprop.
#[derive(Clone, Copy, Debug, PartialEq)]
struct RmspropUpdate {
    lr: f64,
    alpha: f64,
    eps: f64,
    weight_decay: f64,
    momentum: f64,
    centered: bool,
}

impl RmspropUpdate {
    /// PyTorch's checks of `torch.optim.RMSprop.__init__`, in its order and words; NaN fails
    /// each of them.
    fn validate(&self) -> Result<()> {
        for (value, what) in [
            (self.lr, "Invalid learning rate"),
            (self.eps, "Invalid epsilon value"),
            (self.momentum, "Invalid momentum value"),
            (self.weight_decay, "Invalid weight_decay value"),
            (self.alpha, "Invalid alpha value"),
        ] {
            // `not 0.0 <= value`, so NaN fails too.
            if value >= 0.0 {
                continue;
            }
            return Err(Error::InvalidOptimizerArgument(format!(
                "{what}: {}",
                py_float(value)
            )));
        }
        Ok(())
    }
}

/// The state of one parameter, named as PyTorch's `state_dict`.
#[derive(Clone, Default)]
struct State {
    square_avg: Option<RawTensor>,
    momentum_buffer: Option<RawTensor>,
    grad_avg: Option<RawTensor>,
    step: u64,
}

/// RMSprop (`torch.optim.RMSprop`), its state on `D`: `lr`, `alpha` (0.99), `eps` (1e-8),
/// `weight_decay`, `momentum` and `centered`, with PyTorch's defaults and checks (`Invalid
/// learning rate: -0.1`, `Invalid alpha value: -0.5`, ...; NaN fails too).
///
/// ```
/// use devtype::prelude::*;
/// use devtype::nn::{Linear, MSELoss};
/// use devtype::optim::RMSprop;
/// let mut model = Linear::new(3, 1, Cpu);
/// let mut opt = RMSprop::new(0.01).momentum(0.9).centered(true);
/// let x = Tensor::<Cpu>::randn([8, 3], Cpu);
/// MSELoss::new().forward(&model.forward(&x), &Tensor::<Cpu>::zeros([8, 1], Cpu)).backward();
/// opt.step(&mut model);
/// assert!(opt.square_avg("weight").is_some());
/// let err = RMSprop::<Cpu>::new(0.01).alpha(-0.5).check().unwrap_err();
/// assert_eq!(err.to_string(), "Invalid alpha value: -0.5");
/// ```
pub struct RMSprop<D: Device, E: Float = f32> {
    update: RmspropUpdate,
    state: HashMap<String, State>,
    _on: PhantomData<(D, E)>,
}

impl<D: Device, E: Float> Clone for RMSprop<D, E> {
    fn clone(&self) -> Self {
        RMSprop {
            update: self.update,
            state: self.state.clone(),
            _on: PhantomData,
        }
    }
}

impl<D: Device, E: Float> std::fmt::Debug for RMSprop<D, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "RMSprop({:?}, state of {} parameters on {})",
            self.update,
            self.state.len(),
            crate::device::type_label::<D>()
        )
    }
}

impl<D: Device, E: Float> RMSprop<D, E> {
    /// RMSprop with learning rate `lr` and PyTorch's defaults (`alpha = 0.99`, `eps = 1e-8`,
    /// no weight decay, no momentum, not centered).
    pub fn new(lr: f64) -> Self {
        RMSprop {
            update: RmspropUpdate {
                lr,
                alpha: 0.99,
                eps: 1e-8,
                weight_decay: 0.0,
                momentum: 0.0,
                centered: false,
            },
            state: HashMap::new(),
            _on: PhantomData,
        }
    }

    /// RMSprop with learning rate `lr`, or PyTorch's `Invalid learning rate: {lr}`.
    pub fn try_new(lr: f64) -> Result<Self> {
        let opt = Self::new(lr);
        opt.check()?;
        Ok(opt)
    }

    /// Checks the hyper-parameters as `torch.optim.RMSprop` does, with its texts.
    pub fn check(&self) -> Result<()> {
        self.update.validate()
    }

    /// With another smoothing constant `alpha`.
    pub fn alpha(mut self, alpha: f64) -> Self {
        self.update.alpha = alpha;
        self
    }

    /// With another `eps`.
    pub fn eps(mut self, eps: f64) -> Self {
        self.update.eps = eps;
        self
    }

    /// With L2 weight decay added to the gradient.
    pub fn weight_decay(mut self, weight_decay: f64) -> Self {
        self.update.weight_decay = weight_decay;
        self
    }

    /// With momentum.
    pub fn momentum(mut self, momentum: f64) -> Self {
        self.update.momentum = momentum;
        self
    }

    /// Centered: the step is normalised by an estimate of the gradient's variance.
    pub fn centered(mut self, centered: bool) -> Self {
        self.update.centered = centered;
        self
    }

    fn wrap(r: &RawTensor) -> Tensor<D, E> {
        Tensor::from_raw(r.clone(), D::from_dyn(r.device).expect("state is on D"))
    }

    /// The running average of squared gradients of parameter `name`, once a step made it.
    pub fn square_avg(&self, name: &str) -> Option<Tensor<D, E>> {
        self.state.get(name)?.square_avg.as_ref().map(Self::wrap)
    }

    /// The momentum buffer of parameter `name` (with momentum), once a step made it.
    pub fn momentum_buffer(&self, name: &str) -> Option<Tensor<D, E>> {
        self.state
            .get(name)?
            .momentum_buffer
            .as_ref()
            .map(Self::wrap)
    }

    /// The running average of gradients of parameter `name` (centered), once a step made it.
    pub fn grad_avg(&self, name: &str) -> Option<Tensor<D, E>> {
        self.state.get(name)?.grad_avg.as_ref().map(Self::wrap)
    }

    /// The optimizer with its state on `dev`, typed on it.
    pub fn try_to<D2: Device>(&self, dev: D2) -> Result<RMSprop<D2, E>>
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
            .map(|(k, s)| {
                Ok((
                    k.clone(),
                    State {
                        square_avg: mv(&s.square_avg)?,
                        momentum_buffer: mv(&s.momentum_buffer)?,
                        grad_avg: mv(&s.grad_avg)?,
                        step: s.step,
                    },
                ))
            })
            .collect::<Result<_>>()?;
        Ok(RMSprop {
            update: self.update,
            state,
            _on: PhantomData,
        })
    }

    /// The optimizer with its state on `dev`: `let opt = opt.to(dev);`.
    #[must_use = "`to` returns the optimizer typed on the new device: `let opt = opt.to(dev);`"]
    #[track_caller]
    pub fn to<D2: Device>(&self, dev: D2) -> RMSprop<D2, E>
    where
        D: crate::device::CopyTo<D2>,
    {
        match self.try_to(dev) {
            Ok(o) => o,
            Err(e) => panic!("{e}"),
        }
    }

    fn step_with<M: ModelOn<D, E>>(
        &mut self,
        model: &mut M,
        skip: Option<&RawTensor>,
    ) -> Result<()> {
        let u = self.update;
        u.validate()?;
        let state = &mut self.state;
        let names = check_each_with_grad(model, |name, p, g| {
            crate::ops::optim::check(p, g)?;
            if let Some(s) = state.get(name) {
                for (what, buffer) in [
                    ("square_avg", &s.square_avg),
                    ("momentum_buffer", &s.momentum_buffer),
                    ("grad_avg", &s.grad_avg),
                ] {
                    if let Some(b) = buffer {
                        crate::ops::optim::check_state(name, what, p, b)?;
                    }
                }
            }
            if let Some(skip) = skip {
                if skip.device != p.device {
                    return Err(Error::DeviceMismatch {
                        first: p.device,
                        second: skip.device,
                    });
                }
            }
            Ok(())
        })?;
        check_state_names(state.keys(), &names, "square_avg")?;
        for_each_with_grad(model, |name, p, g| {
            let s = state.entry(name.to_string()).or_default();
            let (p_new, sq, mb, ga) = rmsprop_step(p, g, s, &u)?;
            match skip {
                None => {
                    *p = p_new;
                    s.square_avg = Some(sq);
                    s.momentum_buffer = mb;
                    s.grad_avg = ga;
                }
                Some(skip) => {
                    let mut p_new = p_new;
                    keep_unless(skip, Some(p), &mut p_new)?;
                    *p = p_new;
                    let keep = |old: &mut Option<RawTensor>, new: Option<RawTensor>| {
                        if let Some(mut new) = new {
                            keep_unless(skip, old.as_ref(), &mut new)?;
                            *old = Some(new);
                        }
                        Ok::<(), Error>(())
                    };
                    keep(&mut s.square_avg, Some(sq))?;
                    keep(&mut s.momentum_buffer, mb)?;
                    keep(&mut s.grad_avg, ga)?;
                }
            }
            s.step += 1;
            Ok(())
        })
    }
}

type Stepped = (RawTensor, RawTensor, Option<RawTensor>, Option<RawTensor>);

/// One step of one parameter, as PyTorch's `_single_tensor_rmsprop`: the new parameter and
/// the new `square_avg`, `momentum_buffer` and `grad_avg` (new buffers: nothing is written in
/// place, so a tensor sharing the old ones keeps them).
fn rmsprop_step(p: &RawTensor, g: &RawTensor, s: &State, u: &RmspropUpdate) -> Result<Stepped> {
    let f = Scalar::Float;
    let zeros = || {
        crate::ops::creation::create(
            p.layout.shape,
            p.dtype,
            p.device,
            crate::ops::creation::Fill::Constant(Scalar::Int(0)),
        )
    };
    // grad = grad + weight_decay * param
    let grad = if u.weight_decay != 0.0 {
        let wd = binary_scalar(Cow::Borrowed(p), f(u.weight_decay), BinaryOp::Mul, false)?;
        binary(Cow::Borrowed(g), Cow::Owned(wd), BinaryOp::Add)?
    } else {
        g.clone()
    };
    // square_avg = square_avg * alpha + (1 - alpha) * grad * grad
    let sq_old = match &s.square_avg {
        Some(t) => t.clone(),
        None => zeros()?,
    };
    let g2 = binary(Cow::Borrowed(&grad), Cow::Borrowed(&grad), BinaryOp::Mul)?;
    let g2 = binary_scalar(Cow::Owned(g2), f(1.0 - u.alpha), BinaryOp::Mul, false)?;
    let decayed = binary_scalar(Cow::Owned(sq_old), f(u.alpha), BinaryOp::Mul, false)?;
    let square_avg = binary(Cow::Owned(decayed), Cow::Owned(g2), BinaryOp::Add)?;
    let (avg, grad_avg) = if u.centered {
        // grad_avg.lerp_(grad, 1 - alpha), with lerp's two formulas.
        let ga_old = match &s.grad_avg {
            Some(t) => t.clone(),
            None => zeros()?,
        };
        let w = 1.0 - u.alpha;
        let diff = binary(Cow::Borrowed(&grad), Cow::Borrowed(&ga_old), BinaryOp::Sub)?;
        let ga = if w.abs() < 0.5 {
            let step = binary_scalar(Cow::Owned(diff), f(w), BinaryOp::Mul, false)?;
            binary(Cow::Owned(ga_old), Cow::Owned(step), BinaryOp::Add)?
        } else {
            let step = binary_scalar(Cow::Owned(diff), f(1.0 - w), BinaryOp::Mul, false)?;
            binary(Cow::Borrowed(&grad), Cow::Owned(step), BinaryOp::Sub)?
        };
        // avg = sqrt(square_avg - grad_avg^2)
        let ga2 = binary(Cow::Borrowed(&ga), Cow::Borrowed(&ga), BinaryOp::Mul)?;
        let var = binary(Cow::Borrowed(&square_avg), Cow::Owned(ga2), BinaryOp::Sub)?;
        (unary(Cow::Owned(var), UnaryOp::Sqrt)?, Some(ga))
    } else {
        (unary(Cow::Borrowed(&square_avg), UnaryOp::Sqrt)?, None)
    };
    let avg = binary_scalar(Cow::Owned(avg), f(u.eps), BinaryOp::Add, false)?;
    let ratio = binary(Cow::Borrowed(&grad), Cow::Owned(avg), BinaryOp::Div)?;
    let (direction, momentum_buffer) = if u.momentum > 0.0 {
        // buf = buf * momentum + grad / avg; param -= lr * buf
        let buf = match &s.momentum_buffer {
            Some(b) => {
                let b = binary_scalar(Cow::Borrowed(b), f(u.momentum), BinaryOp::Mul, false)?;
                binary(Cow::Owned(b), Cow::Owned(ratio), BinaryOp::Add)?
            }
            // A zero buffer times momentum plus the ratio is the ratio.
            None => {
                let b = binary_scalar(Cow::Owned(zeros()?), f(u.momentum), BinaryOp::Mul, false)?;
                binary(Cow::Owned(b), Cow::Owned(ratio), BinaryOp::Add)?
            }
        };
        (buf.clone(), Some(buf))
    } else {
        (ratio, None)
    };
    let scaled = binary_scalar(Cow::Owned(direction), f(-u.lr), BinaryOp::Mul, false)?;
    let p_new = binary(Cow::Borrowed(p), Cow::Owned(scaled), BinaryOp::Add)?;
    Ok((p_new, square_avg, momentum_buffer, grad_avg))
}

impl<D: Device, E: Float> Optimizer<D, E> for RMSprop<D, E> {
    fn try_step<M: ModelOn<D, E>>(&mut self, model: &mut M) -> Result<()> {
        self.step_with(model, None)
    }

    /// Where `skip` holds (read on the device, no host sync), neither the parameters nor the
    /// state change (state a skipped first step would create stays zeros).
    fn try_step_unless<M: ModelOn<D, E>>(
        &mut self,
        model: &mut M,
        skip: &Tensor<D, bool>,
    ) -> Result<()> {
        self.step_with(model, Some(&skip.raw))
    }

    fn lr(&self) -> f64 {
        self.update.lr
    }

    fn set_lr(&mut self, lr: f64) {
        self.update.lr = lr;
    }
}

impl<D: Device, E: Float> super::resume::sealed::Sealed<D> for RMSprop<D, E> {
    #[allow(private_interfaces)]
    fn export_state(&self) -> Result<(Vec<(String, RawTensor)>, super::resume::Meta)> {
        use super::resume::exact;
        let u = self.update;
        let g = "optimizer.param_groups.0";
        let mut meta: super::resume::Meta = [
            ("optimizer.type".to_string(), "RMSprop".to_string()),
            (format!("{g}.lr"), exact(u.lr)),
            (format!("{g}.alpha"), exact(u.alpha)),
            (format!("{g}.eps"), exact(u.eps)),
            (format!("{g}.weight_decay"), exact(u.weight_decay)),
            (format!("{g}.momentum"), exact(u.momentum)),
            (format!("{g}.centered"), u.centered.to_string()),
        ]
        .into_iter()
        .collect();
        let mut tensors = Vec::new();
        for (name, st) in &self.state {
            let s = format!("optimizer.state.{name}");
            for (what, t) in [
                ("square_avg", &st.square_avg),
                ("momentum_buffer", &st.momentum_buffer),
                ("grad_avg", &st.grad_avg),
            ] {
                if let Some(t) = t {
                    tensors.push((format!("{s}.{what}"), t.clone()));
                }
            }
            tensors.push((
                format!("{s}.step"),
                RawTensor::from_cpu_vec(vec![st.step as f64], crate::core::layout::Dims::EMPTY),
            ));
            meta.insert(format!("{s}.host_step"), st.step.to_string());
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
        let kind = meta.get("optimizer.type").map(String::as_str);
        if kind != Some("RMSprop") {
            return Err(Error::InvalidOptimizerArgument(format!(
                "the checkpoint holds the state of {}, not of RMSprop",
                kind.unwrap_or("no optimizer")
            )));
        }
        let g = "optimizer.param_groups.0";
        let opt = RMSprop::<D, E>::new(meta_f64(meta, &format!("{g}.lr"))?)
            .alpha(meta_f64(meta, &format!("{g}.alpha"))?)
            .eps(meta_f64(meta, &format!("{g}.eps"))?)
            .weight_decay(meta_f64(meta, &format!("{g}.weight_decay"))?)
            .momentum(meta_f64(meta, &format!("{g}.momentum"))?)
            .centered(meta_bool(meta, &format!("{g}.centered"))?);
        opt.check()?;
        let mut opt = opt;
        let dyn_dev = dev.dyn_device();
        for (key, raw) in tensors {
            let Some(rest) = key.strip_prefix("optimizer.state.") else {
                continue;
            };
            let (name, what) = rest.rsplit_once('.').unwrap_or((rest, ""));
            let st = opt.state.entry(name.to_string()).or_default();
            match what {
                "square_avg" => st.square_avg = Some(state_tensor(raw, E::DTYPE, dyn_dev)?),
                "momentum_buffer" => {
                    st.momentum_buffer = Some(state_tensor(raw, E::DTYPE, dyn_dev)?)
                }
                "grad_avg" => st.grad_avg = Some(state_tensor(raw, E::DTYPE, dyn_dev)?),
                "step" => {
                    let s = format!("optimizer.state.{name}.host_step");
                    st.step = meta
                        .get(&s)
                        .and_then(|v| v.parse().ok())
                        .ok_or(Error::MissingTensor { name: s })?;
                    if raw.dtype != DType::F64 || raw.numel() != 1 {
                        return Err(Error::InvalidOptimizerArgument(format!(
                            "{key} must be one f64, found {:?} of {}",
                            raw.shape(),
                            raw.dtype
                        )));
                    }
                }
                _ => {
                    return Err(Error::InvalidOptimizerArgument(format!(
                        "the checkpoint holds {key}, which RMSprop does not keep"
                    )))
                }
            }
        }
        let u = opt.update;
        for (name, st) in &opt.state {
            let missing = if st.square_avg.is_none() {
                Some("square_avg")
            } else if u.momentum > 0.0 && st.momentum_buffer.is_none() {
                Some("momentum_buffer")
            } else if u.centered && st.grad_avg.is_none() {
                Some("grad_avg")
            } else {
                None
            };
            if let Some(what) = missing {
                return Err(Error::MissingTensor {
                    name: format!("optimizer.state.{name}.{what}"),
                });
            }
        }
        check_state_names(opt.state.keys(), names, "square_avg")?;
        Ok(opt)
    }
}

impl<D: Device, E: Float> super::OptimizerState<D, E> for RMSprop<D, E> {}
