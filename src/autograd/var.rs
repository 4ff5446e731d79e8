//! `Var<D, E>`: a tensor on `D` that autograd tracks.

use crate::core::error::{Error, Result};
use crate::core::raw::{Operand, RawTensor};
use crate::device::Device;
use crate::graph::{self, Node};
use crate::tensor::operand::sealed::AsRaw;
use crate::tensor::{Float, HasDevice, ModuleInput, Tensor};
use std::sync::Arc;

/// An op's tensor argument as the shared backward rules see it: the value and, if tracked,
/// its node.
#[derive(Clone, Copy)]
pub struct In<'a> {
    pub(crate) value: &'a RawTensor,
    pub(crate) node: Option<&'a Arc<Node>>,
}

impl<'a> In<'a> {
    /// The parts of any tensor operand (`Tensor`, `Var`, or references to them).
    pub(crate) fn of<T: AsRaw + ?Sized>(t: &'a T) -> Self {
        In {
            value: t.raw(),
            node: t.grad_node(),
        }
    }
}

/// An op's result: the value and the node that made it (`None` when nothing is tracked).
pub(crate) struct Out {
    pub(crate) value: RawTensor,
    pub(crate) node: Option<Arc<Node>>,
}

impl Out {
    /// This result as the input of the next op.
    pub(crate) fn input(&self) -> In<'_> {
        In {
            value: &self.value,
            node: self.node.as_ref(),
        }
    }
}

/// A tensor on device `D` that records the ops applied to it, so that
/// [`backward`](Var::backward) can compute gradients (PyTorch's tensor with `requires_grad`).
///
/// A `Var` reads like the [`Tensor`] it holds (`shape()`, `device()`, `to_vec()`, `item()`
/// through `Deref`), and its ops mirror the tensor ops, each recording its backward rule.
/// Parameters are leaves made with [`Var::parameter`]; their gradients accumulate, typed on
/// their device, until zeroed:
///
/// ```
/// use devtype::prelude::*;
///
/// let dev = Cpu; // or Cuda::<0>::open()?
/// let w = Var::parameter(Tensor::from_vec(vec![1.0f32, -2.0, 3.0], [3], dev));
/// let x = Tensor::from_vec(vec![0.5f32, 0.5, 2.0], [3], dev);
/// let loss = (&w * &x).relu().sum_all();
/// loss.backward();
/// let g: Tensor<Cpu> = w.grad().unwrap();      // on the parameter's device, typed on it
/// assert_eq!(g.to_vec(), vec![0.5, 0.0, 2.0]);
/// ```
pub struct Var<D: Device, E: Float = f32> {
    pub(crate) value: Tensor<D, E>,
    pub(crate) node: Option<Arc<Node>>,
}

impl<D: Device, E: Float> Clone for Var<D, E> {
    /// A new handle to the same value and the same node (gradients are shared).
    fn clone(&self) -> Self {
        Var {
            value: self.value.clone(),
            node: self.node.clone(),
        }
    }
}

impl<D: Device, E: Float> std::ops::Deref for Var<D, E> {
    type Target = Tensor<D, E>;
    #[inline]
    fn deref(&self) -> &Tensor<D, E> {
        &self.value
    }
}

impl<D: Device, E: Float> std::fmt::Debug for Var<D, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

impl<D: Device, E: Float> std::fmt::Display for Var<D, E> {
    /// Prints like PyTorch: `tensor([1., 2.], requires_grad=True)` for a parameter,
    /// `tensor(3., grad_fn=<SumBackward>)` for an op's result. On a GPU this waits for it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = self.value.to_string();
        let suffix = match &self.node {
            None => return f.write_str(&text),
            Some(n) if n.is_leaf() => "requires_grad=True".to_string(),
            Some(n) => format!("grad_fn=<{}>", n.name()),
        };
        match text.strip_suffix(')') {
            Some(head) => write!(f, "{head}, {suffix})"),
            None => write!(f, "{text} ({suffix})"),
        }
    }
}

impl<D: Device, E: Float> From<Tensor<D, E>> for Var<D, E> {
    /// A constant: not tracked, as a tensor without `requires_grad`.
    fn from(value: Tensor<D, E>) -> Self {
        Var::new(value)
    }
}

impl<D: Device, E: Float> From<Var<D, E>> for Tensor<D, E> {
    /// The value, detached from the graph.
    fn from(v: Var<D, E>) -> Self {
        v.value
    }
}

impl<D: Device, E: Float> Var<D, E> {
    /// A constant: a tensor autograd does not track (no gradient flows into it).
    pub fn new(value: Tensor<D, E>) -> Self {
        Var { value, node: None }
    }

    /// A parameter: a leaf that requires grad and accumulates it (PyTorch's
    /// `nn.Parameter(t)`, or `t.requires_grad_()`).
    pub fn parameter(value: Tensor<D, E>) -> Self {
        Var {
            value,
            node: Some(Node::leaf()),
        }
    }

    pub(crate) fn from_out(out: Out, device: D) -> Self {
        Var {
            value: Tensor::from_raw(out.value, device),
            node: out.node,
        }
    }

    #[inline]
    pub(crate) fn wrap(&self, out: Out) -> Self {
        Var::from_out(out, self.value.device())
    }

    #[inline]
    pub(crate) fn input(&self) -> In<'_> {
        In {
            value: &self.value.raw,
            node: self.node.as_ref(),
        }
    }

    /// True when gradients flow into this tensor: a parameter, or an op's result with a
    /// tracked input (PyTorch's `requires_grad`).
    pub fn requires_grad(&self) -> bool {
        self.node.is_some()
    }

    /// True for parameters and constants; false for the results of tracked ops.
    pub fn is_leaf(&self) -> bool {
        self.node.as_ref().is_none_or(|n| n.is_leaf())
    }

    /// The value.
    pub fn tensor(&self) -> &Tensor<D, E> {
        &self.value
    }

    /// The value as a plain tensor, cut from the graph (PyTorch's `detach()`); shares storage.
    pub fn detach(&self) -> Tensor<D, E> {
        self.value.clone()
    }

    /// The value as a plain tensor.
    pub fn into_tensor(self) -> Tensor<D, E> {
        self.value
    }

    /// The accumulated gradient of a parameter, on its device (PyTorch's `.grad`); `None`
    /// before the first `backward`, after [`zero_grad`](Self::zero_grad), and for non-leaves.
    pub fn grad(&self) -> Option<Tensor<D, E>> {
        let node = self.node.as_ref()?;
        node.grad()
            .map(|g| Tensor::from_raw(g, self.value.device()))
    }

    /// Sets the accumulated gradient (shape and device are the parameter's by type; the shape
    /// is checked).
    pub fn try_set_grad(&self, grad: Option<Tensor<D, E>>) -> Result<()> {
        let node = self.node.as_ref().filter(|n| n.is_leaf()).ok_or_else(|| {
            Error::Autograd(
                "set_grad: only parameters (leaves that require grad) hold a gradient".into(),
            )
        })?;
        if let Some(g) = &grad {
            if g.shape() != self.value.shape() {
                return Err(Error::Autograd(format!(
                    "assigned grad has data of a different size: {:?} for a parameter of shape {:?}",
                    g.shape(),
                    self.value.shape()
                )));
            }
        }
        node.set_grad(grad.map(|g| g.raw));
        Ok(())
    }

    /// Clears the accumulated gradient (PyTorch's `zero_grad(set_to_none=True)`).
    pub fn zero_grad(&self) {
        if let Some(n) = &self.node {
            n.set_grad(None);
        }
    }

    /// Replaces the value, keeping the identity (node and gradient) of the parameter; used by
    /// optimizers and checkpoint loading. The shape must stay the same.
    pub(crate) fn set_value(&mut self, value: Tensor<D, E>) {
        debug_assert_eq!(value.shape(), self.value.shape());
        self.value = value;
    }

    /// The value's untyped tensor, mutably (for in-place updates by optimizers).
    pub(crate) fn raw_mut(&mut self) -> &mut RawTensor {
        &mut self.value.raw
    }

    pub(crate) fn node(&self) -> Option<&Arc<Node>> {
        self.node.as_ref()
    }

    /// Computes the gradient of this scalar with respect to every parameter it depends on and
    /// adds it to their `.grad` (PyTorch's `loss.backward()`). The graph's saved tensors are
    /// freed: a second call fails with PyTorch's message.
    pub fn try_backward(&self) -> Result<()> {
        if self.value.numel() != 1 {
            return Err(Error::Autograd(
                "grad can be implicitly created only for scalar outputs".into(),
            ));
        }
        let ones = Tensor::<D, E>::try_ones(self.value.shape(), self.value.device())?;
        self.try_backward_with(&ones)
    }

    /// Computes gradients (see [`try_backward`](Self::try_backward)).
    ///
    /// Panics with the error's text where `try_backward` returns it.
    #[track_caller]
    pub fn backward(&self) {
        if let Err(e) = self.try_backward() {
            panic!("{e}");
        }
    }

    /// Back-propagates `grad`, the gradient of some scalar with respect to this tensor
    /// (PyTorch's `y.backward(gradient)`); `grad` has this tensor's shape and device.
    pub fn try_backward_with(&self, grad: &Tensor<D, E>) -> Result<()> {
        let node = self.node.as_ref().ok_or_else(|| {
            Error::Autograd(
                "element 0 of tensors does not require grad and does not have a grad_fn".into(),
            )
        })?;
        if grad.shape() != self.value.shape() {
            return Err(Error::Autograd(format!(
                "Mismatch in shape: grad_output[0] has a shape of {:?} and output[0] has a shape of {:?}.",
                grad.shape(),
                self.value.shape()
            )));
        }
        if grad.raw.dtype != self.value.raw.dtype {
            return Err(super::dyn_var::dtype_mismatch(
                grad.raw.dtype,
                self.value.raw.dtype,
            ));
        }
        graph::backward(node, grad.raw.clone())
    }

    /// Back-propagates `grad` (see [`try_backward_with`](Self::try_backward_with)).
    ///
    /// Panics with the error's text where `try_backward_with` returns it.
    #[track_caller]
    pub fn backward_with(&self, grad: &Tensor<D, E>) {
        if let Err(e) = self.try_backward_with(grad) {
            panic!("{e}");
        }
    }
}

impl<D: Device, E: Float> Tensor<D, E> {
    /// This tensor as a parameter that requires grad (PyTorch's `t.requires_grad_()`).
    pub fn into_parameter(self) -> Var<D, E> {
        Var::parameter(self)
    }
}

impl<D: Device, E: Float> AsRaw for Var<D, E> {
    #[inline]
    fn raw(&self) -> &RawTensor {
        &self.value.raw
    }
    #[inline]
    fn into_operand<'a>(self) -> Operand<'a>
    where
        Self: 'a,
    {
        Operand::Owned(self.value.raw)
    }
    #[inline]
    fn grad_node(&self) -> Option<&Arc<Node>> {
        self.node.as_ref()
    }
}

impl<D: Device, E: Float> AsRaw for &Var<D, E> {
    #[inline]
    fn raw(&self) -> &RawTensor {
        &self.value.raw
    }
    #[inline]
    fn into_operand<'a>(self) -> Operand<'a>
    where
        Self: 'a,
    {
        Operand::Borrowed(&self.value.raw)
    }
    #[inline]
    fn grad_node(&self) -> Option<&Arc<Node>> {
        self.node.as_ref()
    }
}

impl<D: Device, E: Float> HasDevice for Var<D, E> {
    type Device = D;
    type Element = E;
}

impl<D: Device, E: Float> HasDevice for &Var<D, E> {
    type Device = D;
    type Element = E;
}

#[diagnostic::do_not_recommend]
impl<D: Device, E: Float> ModuleInput<D> for Var<D, E> {}

#[diagnostic::do_not_recommend]
impl<D: Device, E: Float> ModuleInput<D> for &Var<D, E> {}

/// The other operand of an op on a [`Var`]: a `Var` or a plain `Tensor` (or a reference to
/// either) on the same device `D`. A tensor on another device does not compile, with
/// PyTorch's words.
#[diagnostic::on_unimplemented(
    message = "Expected all tensors to be on the same device, but found at least two devices, `{D}` and `{Found}`",
    label = "this operand is on `{Found}`, expected `{D}`",
    note = "`.to(device)` returns a new tensor and leaves the original where it was: `let x = x.to(dev);`",
    note = "when possible, create tensors directly on the device: `Tensor::zeros(shape, dev)`"
)]
pub trait VarOperand<D: Device, Found: Device = <Self as HasDevice>::Device>: HasDevice {}

#[diagnostic::do_not_recommend]
impl<D: Device, E: Float> VarOperand<D> for Var<D, E> {}
#[diagnostic::do_not_recommend]
impl<D: Device, E: Float> VarOperand<D> for &Var<D, E> {}
#[diagnostic::do_not_recommend]
impl<D: Device, E: Float> VarOperand<D> for Tensor<D, E> {}
#[diagnostic::do_not_recommend]
impl<D: Device, E: Float> VarOperand<D> for &Tensor<D, E> {}
