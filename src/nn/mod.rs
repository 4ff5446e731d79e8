//! Layers and losses, typed on the device of their parameters and buffers.
//!
//! A module's inputs go through [`ModuleInput<D>`](crate::ModuleInput): feeding a batch that is
//! still on the CPU to a model on `Cuda<0>` is a compile error whose label says the input is on
//! one device and the module's parameters on another. `to(dev)` returns the module typed on the
//! new device; the dynamic counterparts move in place, as PyTorch's `Module.to`.

mod activation;
mod dynamic;
mod linear;
mod loss;

pub use crate::ops::loss::Reduction;
pub use activation::ReLU;
pub use dynamic::{DynCrossEntropyLoss, DynLinear};
pub use linear::Linear;
pub use loss::CrossEntropyLoss;

use crate::device::Device;
use crate::tensor::{Element, ModuleInput, Tensor};

/// Something with a `forward` from tensors on `D` to tensors on `D`.
pub trait Forward<D: Device, E: Element = f32> {
    /// Runs the module on `input`, which must be on the module's device.
    fn forward<I: ModuleInput<D> + crate::HasDevice<Element = E>>(&self, input: I) -> Tensor<D, E>;
}
