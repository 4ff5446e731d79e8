//! Every op of both fronts, declared once, beside its backward rule.
//!
//! One file per op family. Each holds the family's recorded ops (the forward, which calls the
//! kernels in [`crate::ops`], and the backward rule, written with the same device-generic ops)
//! and one [`declare_ops!`](declare) table that makes the methods of `Tensor` (with `try_`
//! twins) and of `DynTensor` (with PyTorch's device check) from the same declaration. A
//! tracked input (a parameter, or a result of one) records its rule on either front; untracked
//! inputs record nothing.
//!
//! To add an op: its kernels in `ops/<family>/` (`cpu.rs`, `cuda.rs`, `kernels/<family>.cu`),
//! then one declaration (and, if it is differentiable, its rule) here.

pub(crate) mod declare;

mod autocast;

mod binary;
mod cat;
mod copy;
mod gradcheck;
mod index;
mod kit;
mod linear;
mod loss;
mod matmul;
mod operators;
mod reduce;
mod select;
mod shape;
mod slice;
mod softmax;
mod unary;

pub use autocast::{autocast, autocast_dtype, autocast_type, LowPrecision};
pub use cat::{JoinList, TensorList};
pub use copy::MaskFor;
pub use gradcheck::{gradcheck, gradcheck_dyn, gradcheck_with, GradcheckOptions};
pub use select::ValuesIndices;
pub use slice::{IndexItem, IndexItems, IndexSpec};

pub(crate) mod rules {
    //! The recorded ops, for the modules in `nn`.
    pub(crate) use super::binary::binary;
    pub(crate) use super::linear::linear;
    pub(crate) use super::loss::{
        bce_with_logits, cross_entropy, huber_loss, l1_loss, nll_loss, smooth_l1_loss,
    };
    pub(crate) use super::reduce::sum_mean;
    pub(crate) use super::unary::{relu_owned, unary};
}

/// The names of every op declared for both fronts (each with `Tensor::try_<op>`,
/// `Tensor::<op>` and `DynTensor::<op>`), for the parity test.
pub(crate) const DECLARED: &[&[&str]] = &[
    binary::DECLARED,
    index::DECLARED,
    linear::DECLARED,
    loss::DECLARED,
    matmul::DECLARED,
    reduce::DECLARED,
    select::DECLARED,
    slice::DECLARED,
    shape::DECLARED,
    softmax::DECLARED,
    unary::DECLARED,
];

/// Every op declared for both fronts (see [`declare`]), by name.
#[doc(hidden)]
pub fn declared_ops() -> Vec<&'static str> {
    DECLARED.iter().flat_map(|f| f.iter().copied()).collect()
}
