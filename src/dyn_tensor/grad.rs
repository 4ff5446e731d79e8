//! Gradients on the dynamic front: the same graph as the typed front's, with run-time checks.

use super::DynTensor;
use crate::core::error::{Error, Result};
use crate::core::raw::RawTensor;
use crate::core::DType;
use crate::device::DynDevice;
use crate::graph::{self, Node};
use crate::ops::copy::cast;

/// A tensor's value and gradient converted by [`DynTensor::converted`], not yet installed.
pub(crate) struct Converted {
    value: RawTensor,
    grad: Option<RawTensor>,
}

impl DynTensor {
    /// This tensor as a parameter: a leaf that requires grad (PyTorch's `nn.Parameter(t)`);
    /// only floating-point tensors can (PyTorch's "Only Tensors of floating point and complex
    /// dtype can require gradients").
    ///
    /// ```
    /// use devtype::prelude::*;
    /// # fn main() -> Result<(), devtype::Error> {
    /// let dev: DynDevice = "cpu".parse()?;
    /// let w = DynTensor::parameter(DynTensor::from_vec(vec![1.0f32, 2.0], [2], dev)?)?;
    /// let loss = w.mul(&w)?.sum_all()?;
    /// loss.backward()?;
    /// assert_eq!(w.grad().unwrap().to_vec::<f32>()?, vec![2.0, 4.0]);
    /// # Ok(()) }
    /// ```
    pub fn parameter(value: DynTensor) -> Result<Self> {
        if !value.dtype().is_float() {
            return Err(Error::Autograd(
                "Only Tensors of floating point and complex dtype can require gradients".into(),
            ));
        }
        let mut value = value;
        value.node = Some(Node::leaf());
        Ok(value)
    }

    /// True when gradients flow into this tensor.
    pub fn requires_grad(&self) -> bool {
        self.node.is_some()
    }

    /// True for parameters and untracked tensors.
    pub fn is_leaf(&self) -> bool {
        self.node.as_ref().is_none_or(|n| n.is_leaf())
    }

    /// The value, cut from the graph (shares storage).
    pub fn detach(&self) -> DynTensor {
        DynTensor::from_raw(self.raw.clone())
    }

    /// The accumulated gradient of a parameter, on its device.
    pub fn grad(&self) -> Option<DynTensor> {
        self.node.as_ref()?.grad().map(DynTensor::from_raw)
    }

    /// Clears the accumulated gradient.
    pub fn zero_grad(&self) {
        if let Some(n) = &self.node {
            n.set_grad(None);
        }
    }

    /// The value and gradient on `dev` and, when floating-point, as `dtype` (`None`: as they
    /// are), as PyTorch's `Module.to` converts each parameter and buffer (integral ones keep
    /// their dtype). Nothing changes until [`install`](Self::install): a module converts all
    /// its tensors first and installs them only when every conversion succeeded.
    pub(crate) fn converted(
        &self,
        dev: Option<DynDevice>,
        dtype: Option<DType>,
    ) -> Result<Converted> {
        let convert = |t: &RawTensor| -> Result<RawTensor> {
            let t = match dev {
                Some(dev) => t.to_device(dev.open()?)?,
                None => t.clone(),
            };
            match dtype {
                Some(dtype) if t.dtype.is_float() => cast(&t, dtype),
                _ => Ok(t),
            }
        };
        let grad = self.node.as_ref().and_then(|n| n.grad());
        Ok(Converted {
            value: convert(&self.raw)?,
            grad: grad.as_ref().map(convert).transpose()?,
        })
    }

    /// Installs what [`converted`](Self::converted) made: the value, and the gradient of a
    /// tensor that had one (the parameter stays the same leaf).
    pub(crate) fn install(&mut self, converted: Converted) {
        if let (Some(node), Some(grad)) = (&self.node, converted.grad) {
            node.set_grad(Some(grad));
        }
        self.raw = converted.value;
    }

    /// Back-propagates from this scalar into every parameter it depends on.
    pub fn backward(&self) -> Result<()> {
        if self.numel() != 1 {
            return Err(Error::Autograd(
                "grad can be implicitly created only for scalar outputs".into(),
            ));
        }
        let ones = DynTensor::full(self.shape(), 1.0, self.dtype(), self.device())?;
        self.backward_with(&ones)
    }

    /// Back-propagates `grad`, which has this tensor's shape, dtype and device.
    pub fn backward_with(&self, grad: &DynTensor) -> Result<()> {
        let node = self.node.as_ref().ok_or_else(graph::no_grad_fn)?;
        super::check::same_device_arguments(
            "backward",
            &[("self", &self.raw), ("gradient", &grad.raw)],
        )?;
        graph::check_backward_grad(&self.raw, &grad.raw)?;
        graph::backward(node, grad.raw.clone())
    }
}
