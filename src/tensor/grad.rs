//! Gradients on the typed front: parameters, `backward`, `grad` (PyTorch's `requires_grad`
//! tensors, merged into `Tensor` as PyTorch merged `Variable` in 0.4).

use super::{Element, ElementIs, Float, GradElementIs, GradOn, Tensor};
use crate::core::error::{Error, Result};
use crate::core::raw::RawTensor;
use crate::device::Device;
use crate::graph::{self, Node};

impl<D: Device, E: Element> Tensor<D, E> {
    /// True when gradients flow into this tensor: a parameter, or an op's result with a
    /// tracked input (PyTorch's `requires_grad`).
    pub fn requires_grad(&self) -> bool {
        self.node.is_some()
    }

    /// True for parameters and untracked tensors; false for the results of tracked ops.
    pub fn is_leaf(&self) -> bool {
        self.node.as_ref().is_none_or(|n| n.is_leaf())
    }

    /// The value, cut from the graph (PyTorch's `detach()`); shares storage.
    pub fn detach(&self) -> Tensor<D, E> {
        Tensor::from_raw(self.raw.clone(), self.device())
    }
}

impl<D: Device, E: Float> Tensor<D, E> {
    /// This tensor as a parameter: a leaf that requires grad and accumulates it (PyTorch's
    /// `nn.Parameter(t)`). Ops on it record their backward rules.
    ///
    /// ```
    /// use devtype::prelude::*;
    ///
    /// let dev = Cpu; // or Cuda::<0>::open()?
    /// let w = Tensor::parameter(Tensor::from_vec(vec![1.0f32, -2.0, 3.0], [3], dev));
    /// let x = Tensor::from_vec(vec![0.5f32, 0.5, 2.0], [3], dev);
    /// let loss = (&w * &x).relu().sum_all();
    /// loss.backward();
    /// let g: Tensor<Cpu> = w.grad().unwrap();      // on the parameter's device, typed on it
    /// assert_eq!(g.to_vec(), vec![0.5, 0.0, 2.0]);
    /// ```
    pub fn parameter(value: Tensor<D, E>) -> Self {
        let mut value = value;
        value.node = Some(Node::leaf());
        value
    }

    /// This tensor, requiring grad (PyTorch's `t.requires_grad_()`): an untracked tensor
    /// becomes a parameter (a leaf); a tensor that already requires grad (a parameter, or the
    /// result of a tracked op) comes back unchanged, as in PyTorch, so a result stays in its
    /// graph and a parameter keeps its identity and its accumulated `.grad`.
    ///
    /// ```
    /// use devtype::prelude::*;
    /// let w = Tensor::parameter(Tensor::<Cpu>::ones([2], Cpu));
    /// let y = (&w * 3.0f32).requires_grad_();     // still the product, not a new leaf
    /// assert!(!y.is_leaf());
    /// y.sum_all().backward();
    /// assert_eq!(w.grad().unwrap().to_vec(), vec![3.0, 3.0]);
    /// ```
    pub fn requires_grad_(self) -> Self {
        if self.requires_grad() {
            return self;
        }
        Tensor::parameter(self)
    }

    /// The accumulated gradient of a parameter, on its device (PyTorch's `.grad`); `None`
    /// before the first `backward`, after [`zero_grad`](Self::zero_grad), and for non-leaves.
    pub fn grad(&self) -> Option<Tensor<D, E>> {
        let node = self.node.as_ref()?;
        node.grad().map(|g| Tensor::from_raw(g, self.device()))
    }

    /// Sets the accumulated gradient (PyTorch's `p.grad = g`): `g` is a `Tensor<D, E>` or a
    /// reference to one, on the parameter's device and of its element type (by type: another
    /// is a compile error with PyTorch's sentence); the shape is checked.
    pub fn try_set_grad<G: GradOn<D> + GradElementIs<E>>(&self, grad: Option<G>) -> Result<()> {
        let node = self.node.as_ref().filter(|n| n.is_leaf()).ok_or_else(|| {
            Error::Autograd(
                "set_grad: only parameters (leaves that require grad) hold a gradient".into(),
            )
        })?;
        if let Some(g) = &grad {
            if g.raw().shape() != self.shape() {
                return Err(Error::Autograd(format!(
                    "assigned grad has data of a different size: {:?} for a parameter of shape {:?}",
                    g.raw().shape(),
                    self.shape()
                )));
            }
        }
        node.set_grad(grad.map(|g| g.into_operand().into_owned()));
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
        debug_assert_eq!(value.shape(), self.shape());
        self.raw = value.raw;
    }

    /// The value's untyped tensor, mutably (for in-place updates by optimizers).
    pub(crate) fn raw_mut(&mut self) -> &mut RawTensor {
        &mut self.raw
    }

    pub(crate) fn node(&self) -> Option<&std::sync::Arc<Node>> {
        self.node.as_ref()
    }

    /// Computes the gradient of this scalar with respect to every parameter it depends on and
    /// adds it to their `.grad` (PyTorch's `loss.backward()`). The graph's saved tensors are
    /// freed: a second call fails with PyTorch's message.
    pub fn try_backward(&self) -> Result<()> {
        if self.numel() != 1 {
            return Err(Error::Autograd(
                "grad can be implicitly created only for scalar outputs".into(),
            ));
        }
        let ones = Tensor::<D, E>::try_ones(self.shape(), self.device())?;
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
    ///
    /// `grad` is a `Tensor<D, E>` or a reference to one: another device or element type is a
    /// compile error with PyTorch's sentence.
    pub fn try_backward_with<G: GradOn<D> + ElementIs<E>>(&self, grad: G) -> Result<()> {
        let node = self.node.as_ref().ok_or_else(graph::no_grad_fn)?;
        graph::check_backward_grad(&self.raw, grad.raw())?;
        graph::backward(node, grad.into_operand().into_owned())
    }

    /// Back-propagates `grad` (see [`try_backward_with`](Self::try_backward_with)).
    ///
    /// Panics with the error's text where `try_backward_with` returns it.
    #[track_caller]
    pub fn backward_with<G: GradOn<D> + ElementIs<E>>(&self, grad: G) {
        if let Err(e) = self.try_backward_with(grad) {
            panic!("{e}");
        }
    }
}
