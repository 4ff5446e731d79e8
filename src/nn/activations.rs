//! Parameterless layers made of recorded ops: `GELU` (one fused op), `SiLU`, `LeakyReLU`,
//! `Tanh`, `Sigmoid`, `Softmax` and `Flatten`. Like [`ReLU`](super::ReLU) they run on whatever
//! device their input is on (placed [`Anywhere`](super::Anywhere)), on both fronts.

use super::functional::{self as f, input_tensor, or_panic, Approximate};
use super::{DynModule, Forward, Module};
use crate::core::error::Result;
use crate::device::Device;
use crate::ops::UnaryOp;
use crate::tensor::operand::sealed::AsRaw;
use crate::tensor::{Float, HasDevice, ModuleInput, Tensor};
use crate::DynTensor;

/// Writes the typed and dynamic impls of a parameterless layer from its typed and dynamic
/// bodies.
macro_rules! pointwise {
    ($name:ident, |$s:ident, $x:ident| $typed:expr, |$ds:ident, $dx:ident| $dynamic:expr) => {
        impl $name {
            /// The layer applied to `input`, recorded, on the input's device.
            pub fn try_forward<
                D: Device,
                E: Float,
                I: ModuleInput<D> + HasDevice<Element = E, Device = D>,
            >(
                &self,
                input: I,
            ) -> Result<Tensor<D, E>> {
                let $s = self;
                let $x: Tensor<D, E> = input_tensor(&input);
                $typed
            }

            /// The layer applied to `input`, recorded, on the input's device.
            ///
            /// Panics with the error's text where [`try_forward`](Self::try_forward) returns it.
            #[track_caller]
            pub fn forward<
                D: Device,
                E: Float,
                I: ModuleInput<D> + HasDevice<Element = E, Device = D>,
            >(
                &self,
                input: I,
            ) -> Tensor<D, E> {
                or_panic(self.try_forward(input))
            }
        }

        impl<D: Device, E: Float> Forward<D, E> for $name {
            #[track_caller]
            fn forward<I: ModuleInput<D> + HasDevice<Element = E>>(
                &self,
                input: I,
            ) -> Tensor<D, E> {
                let $s = self;
                let $x: Tensor<D, E> = input_tensor(&input);
                or_panic($typed)
            }
        }

        impl super::Placement for $name {
            type Device = super::Anywhere;
        }

        impl<D: Device, E: Float> Module<D, E> for $name {
            type On<D2: Device> = $name;
            fn try_to<D2: Device>(&self, _dev: D2) -> Result<$name>
            where
                D: crate::device::CopyTo<D2>,
            {
                Ok(*self)
            }
            fn visit_parameters(&self, _prefix: &str, _f: &mut dyn FnMut(&str, &Tensor<D, E>)) {}
            fn visit_parameters_mut(
                &mut self,
                _prefix: &str,
                _f: &mut dyn FnMut(&str, &mut Tensor<D, E>),
            ) {
            }
        }

        impl DynModule for $name {
            fn forward(&self, input: &DynTensor) -> Result<DynTensor> {
                let ($ds, $dx) = (self, input);
                $dynamic
            }
            fn visit_parameters(&self, _prefix: &str, _f: &mut dyn FnMut(&str, &DynTensor)) {}
            fn visit_parameters_mut(
                &mut self,
                _prefix: &str,
                _f: &mut dyn FnMut(&str, &mut DynTensor),
            ) {
            }
        }
    };
}
pub(super) use pointwise;

/// GELU as a module (`nn.GELU(approximate=...)`): `x Φ(x)`, exact by default.
///
/// ```
/// use devtype::prelude::*;
/// use devtype::nn::{Approximate, GELU};
/// let y = GELU::new(Approximate::Tanh).forward(&Tensor::<Cpu>::zeros([3], Cpu));
/// assert_eq!(y.to_vec(), [0.0; 3]);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GELU {
    /// Exact (`Approximate::None`, the default) or the tanh approximation.
    pub approximate: Approximate,
}

impl GELU {
    /// GELU with the given approximation.
    pub fn new(approximate: Approximate) -> Self {
        GELU { approximate }
    }
}

pointwise!(
    GELU,
    |layer, x| f::try_gelu(&x, layer.approximate),
    |layer, x| dyn_gelu(x, layer.approximate)
);

/// SiLU as a module (`nn.SiLU`): `x σ(x)`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SiLU;

pointwise!(SiLU, |_l, x| f::try_silu(&x), |_l, x| x.mul(&x.sigmoid()?));

/// Leaky ReLU as a module (`nn.LeakyReLU(negative_slope)`, by default `0.01`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LeakyReLU {
    /// The slope for negative inputs.
    pub negative_slope: f64,
}

impl LeakyReLU {
    /// Leaky ReLU with `negative_slope`.
    pub fn new(negative_slope: f64) -> Self {
        LeakyReLU { negative_slope }
    }
}

impl Default for LeakyReLU {
    fn default() -> Self {
        LeakyReLU::new(0.01)
    }
}

pointwise!(
    LeakyReLU,
    |layer, x| f::try_leaky_relu(&x, layer.negative_slope),
    |layer, x| x
        .gt_scalar(0.0)?
        .where_cond(x, &x.mul_scalar(layer.negative_slope)?)
);

/// `tanh` as a module (`nn.Tanh`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tanh;

pointwise!(Tanh, |_l, x| x.try_tanh(), |_l, x| x.tanh());

/// The logistic sigmoid as a module (`nn.Sigmoid`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sigmoid;

pointwise!(Sigmoid, |_l, x| x.try_sigmoid(), |_l, x| x.sigmoid());

/// Softmax over `dim` as a module (`nn.Softmax(dim)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Softmax {
    /// The dim the probabilities sum to 1 over.
    pub dim: isize,
}

impl Softmax {
    /// Softmax over `dim`.
    pub fn new(dim: isize) -> Self {
        Softmax { dim }
    }
}

pointwise!(Softmax, |layer, x| x.try_softmax(layer.dim), |layer, x| x
    .softmax(layer.dim));

/// `flatten(start_dim, end_dim)` as a module (`nn.Flatten()`: dims 1 to -1 by default, so a
/// batch `[n, c, h, w]` becomes `[n, c·h·w]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flatten {
    /// The first dim flattened.
    pub start_dim: isize,
    /// The last dim flattened.
    pub end_dim: isize,
}

impl Flatten {
    /// Flattens dims `start_dim..=end_dim`.
    pub fn new(start_dim: isize, end_dim: isize) -> Self {
        Flatten { start_dim, end_dim }
    }
}

impl Default for Flatten {
    fn default() -> Self {
        Flatten::new(1, -1)
    }
}

pointwise!(
    Flatten,
    |layer, x| x.try_flatten(layer.start_dim, layer.end_dim),
    |layer, x| x.flatten(layer.start_dim, layer.end_dim)
);

/// GELU on the dynamic front: the same recorded op as [`f::try_gelu`]. Integer and `bool`
/// inputs are refused as PyTorch's `F.gelu` refuses them (`"GeluKernelImpl" not implemented for
/// 'Long'`), not promoted.
fn dyn_gelu(x: &DynTensor, approximate: Approximate) -> Result<DynTensor> {
    Ok(DynTensor::from_out(crate::api::rules::unary(
        x.input(),
        UnaryOp::gelu(approximate),
    )?))
}
