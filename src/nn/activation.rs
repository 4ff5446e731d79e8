//! Activation and regularisation modules without parameters: `ReLU` and `Dropout`.

use super::{Forward, Module};
use crate::core::error::Result;
use crate::device::Device;
use crate::ops::BinaryOp;
use crate::tensor::operand::sealed::AsRaw;
use crate::tensor::{Float, HasDevice, InputElementIs, ModuleInput, Tensor};

/// The device of a typed input (it is `D` by its type).
fn device_of<D: Device, I: HasDevice>(input: &I) -> D {
    D::from_dyn(input.raw().device).expect("typed tensors are on their device")
}

/// `max(x, 0)`, recorded; an owned input lends its buffer when nothing else holds it.
fn relu<D: Device, E: Float, I: ModuleInput<D> + InputElementIs<E>>(
    input: I,
) -> Result<Tensor<D, E>> {
    let device = device_of::<D, I>(&input);
    let node = input.grad_node().cloned();
    let out = crate::api::rules::relu_owned(input.into_operand(), node)?;
    Ok(Tensor::from_out(out, device))
}

/// `max(x, 0)` as a module (`nn.ReLU`). It has no parameters, so it runs on any device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReLU;

impl ReLU {
    /// `max(x, 0)`, recorded.
    pub fn try_forward<
        D: Device,
        E: Float,
        I: ModuleInput<D> + HasDevice<Element = E, Device = D>,
    >(
        &self,
        input: I,
    ) -> Result<Tensor<D, E>> {
        relu(input)
    }

    /// `max(x, 0)`, recorded, on the input's device.
    ///
    /// Panics with the error's text where [`try_forward`](Self::try_forward) returns it.
    #[track_caller]
    pub fn forward<D: Device, E: Float, I: ModuleInput<D> + HasDevice<Element = E, Device = D>>(
        &self,
        input: I,
    ) -> Tensor<D, E> {
        match self.try_forward(input) {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        }
    }
}

impl<D: Device, E: Float> Forward<D, E> for ReLU {
    #[track_caller]
    fn forward<I: ModuleInput<D> + InputElementIs<E>>(&self, input: I) -> Tensor<D, E> {
        match relu(input) {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        }
    }
}

impl super::Precision for ReLU {
    type Element = super::Anywhere;
}

impl super::Placement for ReLU {
    type Device = super::Anywhere;
}

impl<D: Device, E: Float> Module<D, E> for ReLU {
    type On<D2: Device> = ReLU;
    fn try_to<D2: Device>(&self, _dev: D2) -> Result<ReLU>
    where
        D: crate::device::CopyTo<D2>,
    {
        Ok(ReLU)
    }
    fn visit_parameters(&self, _prefix: &str, _f: &mut dyn FnMut(&str, &Tensor<D, E>)) {}
    fn visit_parameters_mut(&mut self, _prefix: &str, _f: &mut dyn FnMut(&str, &mut Tensor<D, E>)) {
    }
}

/// Zeroes each element with probability `p` while training and scales the rest by
/// `1 / (1 - p)`; the identity in evaluation mode (`nn.Dropout`). The mask is drawn on the
/// input's device from the seeded stream ([`manual_seed`](crate::manual_seed)).
///
/// ```
/// use devtype::prelude::*;
/// use devtype::nn::Dropout;
/// let mut drop = Dropout::new(0.5);
/// let x = Tensor::<Cpu>::ones([1000], Cpu);
/// let y = drop.forward(&x);
/// assert!(y.to_vec().iter().all(|&v| v == 0.0 || v == 2.0));
/// Module::<Cpu>::eval(&mut drop);
/// assert_eq!(drop.forward(&x).to_vec(), x.to_vec());
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dropout {
    /// The probability of zeroing an element.
    pub p: f64,
    /// True while training (the default); `eval()` turns it off.
    pub training: bool,
}

impl Dropout {
    /// Dropout with probability `p` (in `[0, 1]`), in training mode.
    pub fn new(p: f64) -> Self {
        assert!(
            (0.0..=1.0).contains(&p),
            "dropout probability has to be between 0 and 1, but got {p}"
        );
        Dropout { p, training: true }
    }

    /// The masked input while training, the input itself otherwise.
    pub fn try_forward<
        D: Device,
        E: Float,
        I: ModuleInput<D> + HasDevice<Element = E, Device = D>,
    >(
        &self,
        input: I,
    ) -> Result<Tensor<D, E>> {
        self.apply(input)
    }

    /// The masked input while training, the input itself otherwise.
    ///
    /// Panics with the error's text where [`try_forward`](Self::try_forward) returns it.
    #[track_caller]
    pub fn forward<D: Device, E: Float, I: ModuleInput<D> + HasDevice<Element = E, Device = D>>(
        &self,
        input: I,
    ) -> Tensor<D, E> {
        match self.apply(input) {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        }
    }

    fn apply<D: Device, E: Float, I: ModuleInput<D> + InputElementIs<E>>(
        &self,
        input: I,
    ) -> Result<Tensor<D, E>> {
        let device = device_of::<D, I>(&input);
        let x = input.input();
        if !self.training || self.p == 0.0 {
            return Ok(Tensor::from_out(
                crate::graph::Out {
                    value: x.value.clone(),
                    node: x.node.cloned(),
                },
                device,
            ));
        }
        let keep = Tensor::<D, E>::random(x.value.shape(), device, false)?
            .try_ge_scalar(E::from_f64(self.p))?;
        let scale = if self.p < 1.0 {
            1.0 / (1.0 - self.p)
        } else {
            0.0
        };
        let mask = keep
            .try_to_dtype::<E>()?
            .try_mul_scalar(E::from_f64(scale))?;
        let out = crate::api::rules::binary(x, mask.input(), BinaryOp::Mul)?;
        Ok(Tensor::from_out(out, device))
    }
}

impl<D: Device, E: Float> Forward<D, E> for Dropout {
    #[track_caller]
    fn forward<I: ModuleInput<D> + InputElementIs<E>>(&self, input: I) -> Tensor<D, E> {
        match self.apply(input) {
            Ok(v) => v,
            Err(e) => panic!("{e}"),
        }
    }
}

impl super::Precision for Dropout {
    type Element = super::Anywhere;
}

impl super::Placement for Dropout {
    type Device = super::Anywhere;
}

impl<D: Device, E: Float> Module<D, E> for Dropout {
    type On<D2: Device> = Dropout;
    fn try_to<D2: Device>(&self, _dev: D2) -> Result<Dropout>
    where
        D: crate::device::CopyTo<D2>,
    {
        Ok(*self)
    }
    fn visit_parameters(&self, _prefix: &str, _f: &mut dyn FnMut(&str, &Tensor<D, E>)) {}
    fn visit_parameters_mut(&mut self, _prefix: &str, _f: &mut dyn FnMut(&str, &mut Tensor<D, E>)) {
    }
    fn set_training(&mut self, training: bool) {
        self.training = training;
    }
}
