//! Reverse-mode automatic differentiation over the same ops as the tensors.
//!
//! A [`Var<D, E>`] is a tensor on `D` that records the ops applied to it; a parameter is a
//! leaf made with [`Var::parameter`]. `loss.backward()` on a scalar walks the recorded graph
//! once and adds each parameter's gradient to its `.grad()`, a `Tensor<D, E>` on the
//! parameter's own device, typed on it. Gradients accumulate until zeroed, as in PyTorch.
//! [`no_grad`] turns recording off for evaluation.
//!
//! ```
//! use devtype::prelude::*;
//!
//! let dev = Cpu;                                              // or Cuda::<0>::open()?
//! let w = Var::parameter(Tensor::<Cpu>::randn([3, 2], dev));
//! let x = Tensor::<Cpu>::randn([4, 3], dev);
//! let loss = Var::new(x).matmul(&w).tanh().mean_all();
//! loss.backward();
//! let g: Tensor<Cpu> = w.grad().unwrap();                     // on w's device, by type
//! assert_eq!(g.shape(), &[3, 2]);
//! ```
//!
//! The backward rules are written once, on the untyped core, with the same device-generic
//! ops the tensors use, so they run wherever those ops run. Each op family keeps its forward
//! and backward together in one file here. [`DynVar`] is the same graph on the dynamic front:
//! its ops check devices as PyTorch does and return its messages as errors. [`gradcheck`]
//! compares every rule with finite differences, as `torch.autograd.gradcheck` does.

mod binary;
mod cat;
mod copy;
mod dyn_var;
mod gradcheck;
mod index;
mod kit;
mod linear;
mod loss;
mod matmul;
mod reduce;
mod shape;
mod softmax;
mod unary;
mod var;

pub use crate::graph::{is_grad_enabled, no_grad, NoGradGuard};
pub use dyn_var::{DynOperand, DynVar};
pub use gradcheck::{gradcheck, gradcheck_dyn, gradcheck_with, GradcheckOptions};
pub(crate) use var::{In, Out};
pub use var::{Var, VarOperand};

pub(crate) mod rules {
    //! The recorded ops, for the modules in `nn`.
    pub(crate) use super::binary::binary;
    pub(crate) use super::linear::linear;
    pub(crate) use super::loss::cross_entropy;
    pub(crate) use super::reduce::sum_mean;
    pub(crate) use super::unary::{relu_owned, unary};
}
