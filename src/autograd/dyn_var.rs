//! `DynVar`: the tracked counterpart of `DynTensor`, whose device is a run-time value.

use super::var::{In, Out};
use crate::core::error::{Error, Result};
use crate::core::raw::RawTensor;
use crate::device::DynDevice;
use crate::graph::{self, Node};
use crate::DynTensor;
use std::sync::Arc;

/// A [`DynTensor`] that autograd tracks: every op checks devices as PyTorch does (returning its
/// message as an `Err`), then records its backward rule, shared with [`Var`](super::Var).
///
/// ```
/// use devtype::prelude::*;
/// # fn main() -> Result<(), devtype::Error> {
/// let dev: DynDevice = "cpu".parse()?;
/// let w = DynVar::parameter(DynTensor::from_vec(vec![1.0f32, 2.0], [2], dev)?);
/// let loss = w.mul(&w)?.sum_all()?;
/// loss.backward()?;
/// assert_eq!(w.grad().unwrap().to_vec::<f32>()?, vec![2.0, 4.0]);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct DynVar {
    pub(crate) value: DynTensor,
    pub(crate) node: Option<Arc<Node>>,
}

impl std::ops::Deref for DynVar {
    type Target = DynTensor;
    fn deref(&self) -> &DynTensor {
        &self.value
    }
}

impl std::fmt::Debug for DynVar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.value, f)
    }
}

impl std::fmt::Display for DynVar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.value, f)
    }
}

impl From<DynTensor> for DynVar {
    /// A constant (not tracked).
    fn from(value: DynTensor) -> Self {
        DynVar::new(value)
    }
}

pub(crate) mod sealed {
    /// Crate-private access to an operand's value and node.
    pub trait DynParts {
        /// The value and node.
        fn parts(&self) -> super::In<'_>;
    }
}

/// The other operand of a [`DynVar`] op: a `DynVar` or a `DynTensor` (or a reference).
pub trait DynOperand: sealed::DynParts {}

impl sealed::DynParts for DynVar {
    fn parts(&self) -> In<'_> {
        self.input()
    }
}
impl sealed::DynParts for &DynVar {
    fn parts(&self) -> In<'_> {
        self.input()
    }
}
impl sealed::DynParts for DynTensor {
    fn parts(&self) -> In<'_> {
        In {
            value: &self.raw,
            node: None,
        }
    }
}
impl sealed::DynParts for &DynTensor {
    fn parts(&self) -> In<'_> {
        In {
            value: &self.raw,
            node: None,
        }
    }
}
impl DynOperand for DynVar {}
impl DynOperand for &DynVar {}
impl DynOperand for DynTensor {}
impl DynOperand for &DynTensor {}

impl DynVar {
    /// A constant: not tracked.
    pub fn new(value: DynTensor) -> Self {
        DynVar { value, node: None }
    }

    /// A parameter: a leaf that requires grad. Only floating-point tensors can.
    pub fn parameter(value: DynTensor) -> Self {
        DynVar {
            value,
            node: Some(Node::leaf()),
        }
    }

    /// A parameter, or an error for tensors that are not floating point (PyTorch's "only
    /// Tensors of floating point dtype can require gradients").
    pub fn try_parameter(value: DynTensor) -> Result<Self> {
        if !value.dtype().is_float() {
            return Err(Error::Autograd(
                "Only Tensors of floating point and complex dtype can require gradients".into(),
            ));
        }
        Ok(DynVar::parameter(value))
    }

    pub(crate) fn from_out(out: Out) -> Self {
        DynVar {
            value: DynTensor::from_raw(out.value),
            node: out.node,
        }
    }

    pub(crate) fn input(&self) -> In<'_> {
        In {
            value: &self.value.raw,
            node: self.node.as_ref(),
        }
    }

    pub(crate) fn raw(&self) -> &RawTensor {
        &self.value.raw
    }

    /// True when gradients flow into this tensor.
    pub fn requires_grad(&self) -> bool {
        self.node.is_some()
    }

    /// True for parameters and constants.
    pub fn is_leaf(&self) -> bool {
        self.node.as_ref().is_none_or(|n| n.is_leaf())
    }

    /// The value.
    pub fn tensor(&self) -> &DynTensor {
        &self.value
    }

    /// The value, cut from the graph (shares storage).
    pub fn detach(&self) -> DynTensor {
        self.value.clone()
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

    /// Moves the value to `dev` in place (a parameter stays a parameter, with its gradient
    /// moved along), as PyTorch's `Module.to` does to each parameter.
    pub(crate) fn move_to(&mut self, dev: DynDevice) -> Result<()> {
        let value = self.value.to(dev)?;
        if let Some(node) = &self.node {
            if let Some(g) = node.grad() {
                node.set_grad(Some(g.to_device(dev.resolved())?));
            }
        }
        self.value = value;
        Ok(())
    }

    /// Back-propagates from this scalar into every parameter it depends on.
    pub fn backward(&self) -> Result<()> {
        if self.value.numel() != 1 {
            return Err(Error::Autograd(
                "grad can be implicitly created only for scalar outputs".into(),
            ));
        }
        let ones = DynTensor::full(
            self.value.shape(),
            1.0,
            self.value.dtype(),
            self.value.device(),
        )?;
        self.backward_with(&ones)
    }

    /// Back-propagates `grad`, which has this tensor's shape, dtype and device.
    pub fn backward_with(&self, grad: &DynTensor) -> Result<()> {
        let node = self.node.as_ref().ok_or_else(|| {
            Error::Autograd(
                "element 0 of tensors does not require grad and does not have a grad_fn".into(),
            )
        })?;
        crate::dyn_tensor::check::same_device_arguments(
            "backward",
            &[("self", &self.value.raw), ("gradient", &grad.raw)],
        )?;
        if grad.shape() != self.value.shape() {
            return Err(Error::Autograd(format!(
                "Mismatch in shape: grad_output[0] has a shape of {:?} and output[0] has a shape of {:?}.",
                grad.shape(),
                self.value.shape()
            )));
        }
        if grad.dtype() != self.value.dtype() {
            return Err(dtype_mismatch(grad.dtype(), self.value.dtype()));
        }
        graph::backward(node, grad.raw.clone())
    }
}

/// `torch.<name>` of a dtype, as PyTorch prints dtypes.
fn torch_dtype_name(dtype: crate::tensor::DType) -> &'static str {
    use crate::tensor::DType;
    match dtype {
        DType::F32 => "torch.float32",
        DType::F64 => "torch.float64",
        DType::I64 => "torch.int64",
        DType::Bool => "torch.bool",
    }
}

/// A gradient for `backward_with` of another dtype than the output, in the words of
/// `torch.autograd`'s shape check (PyTorch words the dtype check of complex outputs this way;
/// devtype does not convert silently, so every dtype mismatch gets it).
pub(crate) fn dtype_mismatch(grad: crate::tensor::DType, output: crate::tensor::DType) -> Error {
    Error::Autograd(format!(
        "Mismatch in dtype: grad_output[0] has a dtype of {} and output[0] has a dtype of {}.",
        torch_dtype_name(grad),
        torch_dtype_name(output)
    ))
}
