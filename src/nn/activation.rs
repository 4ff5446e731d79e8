//! Activation modules.

use super::Forward;
use crate::device::Device;
use crate::tensor::{HasDevice, ModuleInput, Numeric, Tensor};

/// `max(x, 0)` as a module (`nn.ReLU`). It has no parameters, so it runs on any device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReLU;

impl<D: Device, E: Numeric> Forward<D, E> for ReLU {
    #[track_caller]
    fn forward<I: ModuleInput<D> + HasDevice<Element = E>>(&self, input: I) -> Tensor<D, E> {
        let device = D::from_dyn(input.raw().device).expect("typed tensors are on their device");
        match crate::ops::unary::unary(input.into_operand(), crate::ops::UnaryOp::Relu) {
            Ok(t) => Tensor::from_raw(t, device),
            Err(e) => panic!("{e}"),
        }
    }
}

