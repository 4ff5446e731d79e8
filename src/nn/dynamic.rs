//! Modules whose device is a run-time value; they move in place, as PyTorch's `Module.to`.

use super::{join_name, Dropout, MSELoss, ReLU};
use crate::core::error::{Error, Result};
use crate::core::DType;
use crate::device::DynDevice;
use crate::ops::loss::Reduction;
use crate::tensor::operand::sealed::AsRaw;
use crate::DynTensor;

/// A module with a run-time device: it moves **in place** and returns `&mut Self`, as
/// PyTorch's `model.to(device)`, and checks devices at run time with PyTorch's messages.
pub trait DynModule {
    /// Runs the module on `input`.
    fn forward(&self, input: &DynTensor) -> Result<DynTensor>;

    /// Moves every parameter and buffer to `dev`, in place (the tensors that
    /// [`visit_parameters_mut`](Self::visit_parameters_mut) and
    /// [`visit_buffers_mut`](Self::visit_buffers_mut) give): all are copied first, then
    /// swapped in, so on failure nothing has moved. A parameter stays the same leaf, with its
    /// gradient moved along.
    fn move_to(&mut self, dev: DynDevice) -> Result<()> {
        convert_module(self, Some(dev), None)
    }

    /// Converts every floating-point parameter and buffer to `dtype`, in place (PyTorch's
    /// `model.to(torch.float64)`, `model.half()`): integral buffers keep their dtype, a
    /// parameter stays the same leaf with its gradient converted along, and on failure
    /// nothing has changed. Only floating-point `dtype`s are accepted, with PyTorch's text.
    ///
    /// ```
    /// use devtype::nn::{DynLinear, DynModule};
    /// use devtype::{DType, DynDevice, DynTensor};
    ///
    /// let dev = DynDevice::cpu();
    /// let mut model = DynLinear::new(3, 2, dev)?;
    /// model.cast_to(DType::F64)?;                     // in place, like `model.double()`
    /// let y = model.forward(&DynTensor::randn([4, 3], dev)?.to_dtype(DType::F64)?)?;
    /// assert_eq!(y.dtype(), DType::F64);
    /// let err = model.cast_to(DType::I64).unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     "nn.Module.to only accepts floating point or complex dtypes, but got desired dtype=torch.int64"
    /// );
    /// # Ok::<(), devtype::Error>(())
    /// ```
    fn cast_to(&mut self, dtype: DType) -> Result<()> {
        if !dtype.is_float() {
            return Err(Error::ModuleDType(dtype));
        }
        convert_module(self, None, Some(dtype))
    }

    /// Calls `f` with the full name and value of every parameter.
    fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &DynTensor));

    /// Calls `f` with the full name of every parameter and the parameter, mutably.
    fn visit_parameters_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut DynTensor));

    /// Calls `f` with the full name of every buffer and a handle to it (state that moves with
    /// the module but is not trained, PyTorch's `register_buffer`: a batch norm's running
    /// statistics). None by default.
    fn visit_buffers(&self, _prefix: &str, _f: &mut dyn FnMut(&str, DynBuffer)) {}

    /// Calls `f` with the full name of every tensor buffer and the buffer, mutably (what
    /// [`move_to`](Self::move_to) and [`cast_to`](Self::cast_to) convert besides the
    /// parameters; a host count such as `num_batches_tracked` is not a tensor). None by
    /// default. Like the parameter visitors, it must give the same tensors in the same order
    /// on every call: a conversion visits twice, converting, then replacing.
    fn visit_buffers_mut(&mut self, _prefix: &str, _f: &mut dyn FnMut(&str, &mut DynTensor)) {}

    /// Switches training behaviour (dropout, batch statistics) on or off.
    fn set_training(&mut self, _training: bool) {}

    /// The buffers with their names (PyTorch's `named_buffers()`), in visiting order.
    fn named_buffers(&self) -> Vec<(String, DynBuffer)> {
        let mut out = Vec::new();
        self.visit_buffers("", &mut |name, b| out.push((name.to_string(), b)));
        out
    }

    /// Moves every parameter to `dev` in place and returns `&mut self`: both
    /// `model.to(dev)?;` and chaining work.
    fn to(&mut self, dev: DynDevice) -> Result<&mut Self>
    where
        Self: Sized,
    {
        self.move_to(dev)?;
        Ok(self)
    }

    /// Converts every floating-point parameter and buffer to `dtype` in place
    /// ([`cast_to`](Self::cast_to)) and returns `&mut self`, as [`to`](Self::to) does for a
    /// device.
    fn to_dtype(&mut self, dtype: DType) -> Result<&mut Self>
    where
        Self: Sized,
    {
        self.cast_to(dtype)?;
        Ok(self)
    }

    /// The parameters with their names, each once, under the first name it is visited by (as
    /// PyTorch's `named_parameters()`, `remove_duplicate=True`): a weight shared by two layers
    /// (`b.weight = a.weight.clone()`) is listed under the first layer's name only.
    fn named_parameters(&self) -> Vec<(String, DynTensor)> {
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        self.visit_parameters("", &mut |name, p| {
            let id = p.node.as_ref().map(crate::graph::Node::address);
            if id.is_none_or(|id| seen.insert(id)) {
                out.push((name.to_string(), p.clone()));
            }
        });
        out
    }

    /// Clears every parameter's gradient.
    fn zero_grad(&self) {
        self.visit_parameters("", &mut |_, p| p.zero_grad());
    }

    /// Training mode.
    fn train(&mut self) {
        self.set_training(true);
    }

    /// Evaluation mode.
    fn eval(&mut self) {
        self.set_training(false);
    }
}

/// A buffer of a dynamic module, as [`DynModule::visit_buffers`] gives it (the dynamic
/// front's [`Buffer`](super::Buffer)).
///
/// ```
/// use devtype::nn::{DynBatchNorm1d, DynBuffer, DynModule};
/// use devtype::DynDevice;
///
/// let bn = DynBatchNorm1d::new(3, DynDevice::cpu())?;
/// let names: Vec<String> = bn.named_buffers().into_iter().map(|(n, _)| n).collect();
/// assert_eq!(names, ["running_mean", "running_var", "num_batches_tracked"]);
/// assert!(matches!(bn.named_buffers()[2].1, DynBuffer::Count(0)));
/// # Ok::<(), devtype::Error>(())
/// ```
#[derive(Clone, Debug)]
pub enum DynBuffer {
    /// A tensor on the module's device (`running_mean`), a handle to it.
    Tensor(DynTensor),
    /// A count kept on the host (`num_batches_tracked`).
    Count(i64),
}

/// `nn.Linear` with a run-time device.
#[derive(Clone, Debug)]
pub struct DynLinear {
    /// `[out_features, in_features]`, a parameter.
    pub weight: DynTensor,
    /// `[out_features]`, a parameter, if any.
    pub bias: Option<DynTensor>,
}

impl DynLinear {
    /// PyTorch's default initialisation, created on `dev`.
    pub fn new(in_features: usize, out_features: usize, dev: DynDevice) -> Result<Self> {
        let bound = if in_features > 0 {
            1.0 / (in_features as f64).sqrt()
        } else {
            0.0
        };
        let uniform = |shape: &[usize]| -> Result<DynTensor> {
            DynTensor::parameter(
                DynTensor::rand(shape, dev)?
                    .mul_scalar(2.0 * bound)?
                    .add_scalar(-bound)?,
            )
        };
        Ok(DynLinear {
            weight: uniform(&[out_features, in_features])?,
            bias: Some(uniform(&[out_features])?),
        })
    }

    /// Moves every parameter to `dev` **in place** and returns `&mut self`, as PyTorch's
    /// `model.to(device)`: both `model.to(dev)?;` and chaining work.
    pub fn to(&mut self, dev: DynDevice) -> Result<&mut Self> {
        self.move_to(dev)?;
        Ok(self)
    }

    /// The device of the parameters.
    pub fn device(&self) -> DynDevice {
        self.weight.device()
    }

    /// `input @ weight.T + bias`, with PyTorch's device check (`wrapper_CUDA_addmm`).
    pub fn forward(&self, input: &DynTensor) -> Result<DynTensor> {
        input.linear(&self.weight, self.bias.as_ref())
    }
}

impl DynModule for DynLinear {
    fn forward(&self, input: &DynTensor) -> Result<DynTensor> {
        input.linear(&self.weight, self.bias.as_ref())
    }

    fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &DynTensor)) {
        f(&join_name(prefix, "weight"), &self.weight);
        if let Some(b) = &self.bias {
            f(&join_name(prefix, "bias"), b);
        }
    }

    fn visit_parameters_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut DynTensor)) {
        f(&join_name(prefix, "weight"), &mut self.weight);
        if let Some(b) = &mut self.bias {
            f(&join_name(prefix, "bias"), b);
        }
    }
}

impl DynModule for ReLU {
    fn forward(&self, input: &DynTensor) -> Result<DynTensor> {
        input.relu()
    }
    fn visit_parameters(&self, _prefix: &str, _f: &mut dyn FnMut(&str, &DynTensor)) {}
    fn visit_parameters_mut(&mut self, _prefix: &str, _f: &mut dyn FnMut(&str, &mut DynTensor)) {}
}

impl DynModule for Dropout {
    fn forward(&self, input: &DynTensor) -> Result<DynTensor> {
        if !self.training || self.p == 0.0 {
            return Ok(input.clone());
        }
        let keep = DynTensor::rand(input.shape(), input.device())?.ge(&DynTensor::full(
            [],
            self.p,
            crate::DType::F32,
            input.device(),
        )?)?;
        let scale = if self.p < 1.0 {
            1.0 / (1.0 - self.p)
        } else {
            0.0
        };
        let mask = keep.to_dtype(input.dtype())?.mul_scalar(scale)?;
        input.mul(&mask)
    }
    fn visit_parameters(&self, _prefix: &str, _f: &mut dyn FnMut(&str, &DynTensor)) {}
    fn visit_parameters_mut(&mut self, _prefix: &str, _f: &mut dyn FnMut(&str, &mut DynTensor)) {}
    fn set_training(&mut self, training: bool) {
        self.training = training;
    }
}

/// Layers applied in order, with a run-time device (`nn.Sequential`); parameters are named by
/// position (`0.weight`).
///
/// ```
/// use devtype::prelude::*;
/// use devtype::nn::{DynLinear, DynModule, DynSequential, ReLU};
/// # fn main() -> Result<(), devtype::Error> {
/// let dev: DynDevice = "cpu".parse()?;
/// let mut model = DynSequential::new()
///     .append(DynLinear::new(4, 8, DynDevice::cpu())?)
///     .append(ReLU)
///     .append(DynLinear::new(8, 2, DynDevice::cpu())?);
/// model.to(dev)?;                                   // in place, as PyTorch's model.to(device)
/// let y = DynModule::forward(&model, &DynTensor::randn([3, 4], dev)?.into())?;
/// assert_eq!(y.shape(), &[3, 2]);
/// # Ok(()) }
/// ```
#[derive(Default)]
pub struct DynSequential {
    layers: Vec<Box<dyn DynModule>>,
}

impl DynSequential {
    /// No layers yet.
    pub fn new() -> Self {
        DynSequential { layers: Vec::new() }
    }

    /// With `layer` appended.
    pub fn append<M: DynModule + 'static>(mut self, layer: M) -> Self {
        self.layers.push(Box::new(layer));
        self
    }

    /// The number of layers.
    pub fn len(&self) -> usize {
        self.layers.len()
    }

    /// True when there is no layer.
    pub fn is_empty(&self) -> bool {
        self.layers.is_empty()
    }
}

impl DynModule for DynSequential {
    fn forward(&self, input: &DynTensor) -> Result<DynTensor> {
        let mut x = input.clone();
        for layer in &self.layers {
            x = layer.forward(&x)?;
        }
        Ok(x)
    }

    fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &DynTensor)) {
        for (i, layer) in self.layers.iter().enumerate() {
            layer.visit_parameters(&join_name(prefix, &i.to_string()), f);
        }
    }

    fn visit_parameters_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut DynTensor)) {
        for (i, layer) in self.layers.iter_mut().enumerate() {
            layer.visit_parameters_mut(&join_name(prefix, &i.to_string()), f);
        }
    }

    fn visit_buffers(&self, prefix: &str, f: &mut dyn FnMut(&str, DynBuffer)) {
        for (i, layer) in self.layers.iter().enumerate() {
            layer.visit_buffers(&join_name(prefix, &i.to_string()), f);
        }
    }

    fn visit_buffers_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut DynTensor)) {
        for (i, layer) in self.layers.iter_mut().enumerate() {
            layer.visit_buffers_mut(&join_name(prefix, &i.to_string()), f);
        }
    }

    fn set_training(&mut self, training: bool) {
        for layer in &mut self.layers {
            layer.set_training(training);
        }
    }
}

/// `Module.to` for a whole module, on every tensor its visitors give: each is converted (to
/// `dev`, to `dtype`, as [`DynTensor::converted`]) before any is replaced, so a failure (out
/// of memory on the device, a missing device) leaves the module as it was.
fn convert_module<M: DynModule + ?Sized>(
    module: &mut M,
    dev: Option<DynDevice>,
    dtype: Option<DType>,
) -> Result<()> {
    let mut done = Vec::new();
    let mut failed = None;
    let mut convert = |t: &mut DynTensor| {
        if failed.is_none() {
            match t.converted(dev, dtype) {
                Ok(c) => done.push(c),
                Err(e) => failed = Some(e),
            }
        }
    };
    module.visit_parameters_mut("", &mut |_, p| convert(p));
    module.visit_buffers_mut("", &mut |_, b| convert(b));
    if let Some(e) = failed {
        return Err(e);
    }
    // The same visits in the same order: each tensor gets its own conversion. A visitor that
    // gives other tensors on a second call (a module's contract broken) changes nothing.
    let mut count = 0;
    module.visit_parameters_mut("", &mut |_, _| count += 1);
    module.visit_buffers_mut("", &mut |_, _| count += 1);
    if count != done.len() {
        return Err(Error::Internal {
            context: "Module.to",
            message: format!(
                "the module's visitors gave {} tensors, then {count}",
                done.len()
            ),
        });
    }
    let mut done = done.into_iter();
    let mut install = |t: &mut DynTensor| {
        if let Some(c) = done.next() {
            t.install(c)
        }
    };
    module.visit_parameters_mut("", &mut |_, p| install(p));
    module.visit_buffers_mut("", &mut |_, b| install(b));
    Ok(())
}

/// `nn.CrossEntropyLoss` with a run-time device.
#[derive(Clone, Debug)]
pub struct DynCrossEntropyLoss {
    /// Per-class weights (a buffer).
    pub weight: Option<DynTensor>,
    /// How per-sample losses are combined.
    pub reduction: Reduction,
    /// Targets equal to this are skipped.
    pub ignore_index: i64,
}

impl Default for DynCrossEntropyLoss {
    fn default() -> Self {
        DynCrossEntropyLoss {
            weight: None,
            reduction: Reduction::Mean,
            ignore_index: -100,
        }
    }
}

impl DynCrossEntropyLoss {
    /// With per-class weights.
    pub fn with_weight(weight: DynTensor) -> Self {
        DynCrossEntropyLoss {
            weight: Some(weight),
            ..Default::default()
        }
    }

    /// Moves the weight buffer in place, as `criterion.to(device)`.
    pub fn to(&mut self, dev: DynDevice) -> Result<&mut Self> {
        if let Some(w) = &self.weight {
            self.weight = Some(w.to(dev)?);
        }
        Ok(self)
    }

    /// The loss, with PyTorch's device check (`wrapper_CUDA_nll_loss_forward`).
    pub fn forward(&self, logits: &DynTensor, targets: &DynTensor) -> Result<DynTensor> {
        logits.cross_entropy_with(
            targets,
            self.weight.as_ref(),
            self.reduction,
            self.ignore_index,
        )
    }
}

impl MSELoss {
    /// The loss of `input` against `target` on the dynamic front (devices checked as
    /// PyTorch's element-wise ops).
    pub fn forward_dyn(&self, input: &DynTensor, target: &DynTensor) -> Result<DynTensor> {
        let (a, b) = (input.input(), target.input());
        crate::dyn_tensor::check::same_device_elementwise(&[a.value, b.value], false)?;
        Ok(DynTensor::from_out(self.apply(a, b)?))
    }
}

/// `nn.BCEWithLogitsLoss` with a run-time device: optional element `weight` and per-class
/// `pos_weight` buffers that move with it, in place.
///
/// ```
/// use devtype::prelude::*;
/// use devtype::nn::DynBCEWithLogitsLoss;
/// let cpu = DynDevice::cpu();
/// let mut criterion = DynBCEWithLogitsLoss {
///     pos_weight: Some(DynTensor::full([2], 3.0, DType::F32, cpu)?),
///     ..Default::default()
/// };
/// criterion.to(cpu)?;
/// let logits = DynTensor::zeros([4, 2], cpu)?;
/// let targets = DynTensor::ones([4, 2], cpu)?;
/// let loss = criterion.forward(&logits, &targets)?.item::<f32>()?;
/// assert!((loss - 3.0 * 2f32.ln()).abs() < 1e-6);
/// # Ok::<(), devtype::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct DynBCEWithLogitsLoss {
    /// A weight per element, broadcast against the loss (a buffer).
    pub weight: Option<DynTensor>,
    /// A weight of the positive examples per class, broadcast along the last dim (a buffer).
    pub pos_weight: Option<DynTensor>,
    /// How per-element losses are combined.
    pub reduction: Reduction,
}

impl Default for DynBCEWithLogitsLoss {
    fn default() -> Self {
        DynBCEWithLogitsLoss {
            weight: None,
            pos_weight: None,
            reduction: Reduction::Mean,
        }
    }
}

/// Both optional buffers on `dev`, or an error with neither moved.
fn move_buffers(
    a: &Option<DynTensor>,
    b: &Option<DynTensor>,
    dev: DynDevice,
) -> Result<(Option<DynTensor>, Option<DynTensor>)> {
    let mv = |t: &Option<DynTensor>| t.as_ref().map(|t| t.to(dev)).transpose();
    Ok((mv(a)?, mv(b)?))
}

impl DynBCEWithLogitsLoss {
    /// Moves the weight buffers in place, as `criterion.to(device)`; on failure neither has
    /// moved.
    pub fn to(&mut self, dev: DynDevice) -> Result<&mut Self> {
        (self.weight, self.pos_weight) = move_buffers(&self.weight, &self.pos_weight, dev)?;
        Ok(self)
    }

    /// The loss of `logits` against `targets`, with PyTorch's device and dtype checks.
    pub fn forward(&self, logits: &DynTensor, targets: &DynTensor) -> Result<DynTensor> {
        logits.binary_cross_entropy_with_logits(
            targets,
            self.weight.as_ref(),
            self.pos_weight.as_ref(),
            self.reduction,
        )
    }
}

/// `nn.NLLLoss` with a run-time device: log-probabilities `[batch, classes]` against `i64`
/// class indices, an optional per-class `weight` buffer that moves with it, in place.
///
/// ```
/// use devtype::prelude::*;
/// use devtype::nn::DynNLLLoss;
/// let cpu = DynDevice::cpu();
/// let criterion = DynNLLLoss::default();
/// let logp = DynTensor::from_vec(vec![-0.5f32, -1.0, -2.0, -0.25], [2, 2], cpu)?;
/// let target = DynTensor::from_vec(vec![0i64, 1], [2], cpu)?;
/// assert_eq!(criterion.forward(&logp, &target)?.item::<f32>()?, 0.375);
/// # Ok::<(), devtype::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct DynNLLLoss {
    /// Per-class weights (a buffer).
    pub weight: Option<DynTensor>,
    /// How per-sample losses are combined.
    pub reduction: Reduction,
    /// Targets equal to this are skipped.
    pub ignore_index: i64,
}

impl Default for DynNLLLoss {
    fn default() -> Self {
        DynNLLLoss {
            weight: None,
            reduction: Reduction::Mean,
            ignore_index: -100,
        }
    }
}

impl DynNLLLoss {
    /// Moves the weight buffer in place, as `criterion.to(device)`.
    pub fn to(&mut self, dev: DynDevice) -> Result<&mut Self> {
        (self.weight, _) = move_buffers(&self.weight, &None, dev)?;
        Ok(self)
    }

    /// The loss, with PyTorch's device check (`nll_loss_forward`).
    pub fn forward(&self, input: &DynTensor, targets: &DynTensor) -> Result<DynTensor> {
        input.nll_loss(
            targets,
            self.weight.as_ref(),
            self.reduction,
            self.ignore_index,
        )
    }
}
