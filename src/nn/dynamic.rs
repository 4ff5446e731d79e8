//! Modules whose device is a run-time value; they move in place, as PyTorch's `Module.to`.

use crate::device::DynDevice;
use crate::error::Result;
use crate::ops::loss::Reduction;
use crate::DynTensor;

/// `nn.Linear` with a run-time device.
#[derive(Clone, Debug)]
pub struct DynLinear {
    /// `[out_features, in_features]`.
    pub weight: DynTensor,
    /// `[out_features]`, if any.
    pub bias: Option<DynTensor>,
}

impl DynLinear {
    /// PyTorch's default initialisation, created on `dev`.
    pub fn new(in_features: usize, out_features: usize, dev: DynDevice) -> Result<Self> {
        let bound = if in_features > 0 { 1.0 / (in_features as f64).sqrt() } else { 0.0 };
        let uniform = |shape: &[usize]| -> Result<DynTensor> {
            DynTensor::rand(shape, dev)?.mul_scalar(2.0 * bound)?.add_scalar(-bound)
        };
        Ok(DynLinear {
            weight: uniform(&[out_features, in_features])?,
            bias: Some(uniform(&[out_features])?),
        })
    }

    /// Moves every parameter to `dev` **in place** and returns `&mut self`, as PyTorch's
    /// `model.to(device)`: both `model.to(dev)?;` and chaining work.
    pub fn to(&mut self, dev: DynDevice) -> Result<&mut Self> {
        // Copy everything first, then swap in: a failure leaves the module where it was.
        let weight = self.weight.to(dev)?;
        let bias = self.bias.as_ref().map(|b| b.to(dev)).transpose()?;
        self.weight = weight;
        self.bias = bias;
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

/// `nn.CrossEntropyLoss` with a run-time device.
#[derive(Clone, Debug)]
pub struct DynCrossEntropyLoss {
    /// Per-class weights.
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
        logits.cross_entropy(targets, self.weight.as_ref(), self.reduction, self.ignore_index)
    }
}
