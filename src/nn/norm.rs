//! `LayerNorm` and `RMSNorm`: normalisation over the trailing dims, with PyTorch's parameters
//! (`weight` ones, `bias` zeros), typed on their device.

use super::functional::{input_tensor, or_panic, try_layer_norm, try_rms_norm};
use super::{join_name, Forward, Module, Placement};
use crate::core::error::Result;
use crate::device::Device;
use crate::tensor::{Float, HasDevice, ModuleInput, Tensor};

/// Moves an optional parameter.
fn move_opt<D, E: Float, D2: Device>(
    p: &Option<Tensor<D, E>>,
    dev: D2,
) -> Result<Option<Tensor<D2, E>>>
where
    D: Device + crate::device::CopyTo<D2>,
{
    p.as_ref()
        .map(|p| Module::<D, E>::try_to(p, dev))
        .transpose()
}

/// Layer normalisation over the last dims (`nn.LayerNorm(normalized_shape, eps,
/// elementwise_affine, bias)`): `weight` (ones) and `bias` (zeros) of `normalized_shape`.
///
/// ```
/// use devtype::prelude::*;
/// use devtype::nn::LayerNorm;
///
/// let dev = Cpu;                                   // or Cuda::<0>::open()?
/// let norm = LayerNorm::new(&[8], Cpu).to(dev);
/// let y = norm.forward(&Tensor::randn([4, 8], Cpu).to(dev));
/// assert_eq!(y.shape(), &[4, 8]);
/// assert_eq!(norm.named_parameters()[1].0, "bias");
/// ```
#[derive(Clone)]
pub struct LayerNorm<D: Device, E: Float = f32> {
    weight: Option<Tensor<D, E>>,
    bias: Option<Tensor<D, E>>,
    normalized_shape: Vec<usize>,
    eps: f64,
}

crate::tensor::debug_on_host!(LayerNorm<D, E: crate::tensor::Float> { weight, bias, normalized_shape, eps });

impl<D: Device> LayerNorm<D, f32> {
    /// `nn.LayerNorm(normalized_shape)`: `eps = 1e-5`, with `weight` and `bias`, in `f32`.
    #[track_caller]
    pub fn new(normalized_shape: &[usize], dev: D) -> Self {
        or_panic(Self::try_with_options(
            normalized_shape,
            1e-5,
            true,
            true,
            dev,
        ))
    }
}

impl<D: Device, E: Float> LayerNorm<D, E> {
    /// `nn.LayerNorm(normalized_shape, eps, elementwise_affine, bias)` of `E`, on `dev`.
    pub fn try_with_options(
        normalized_shape: &[usize],
        eps: f64,
        elementwise_affine: bool,
        bias: bool,
        dev: D,
    ) -> Result<Self> {
        let weight = elementwise_affine
            .then(|| Tensor::<D, E>::try_ones(normalized_shape, dev).map(Tensor::parameter))
            .transpose()?;
        let bias = (elementwise_affine && bias)
            .then(|| Tensor::<D, E>::try_zeros(normalized_shape, dev).map(Tensor::parameter))
            .transpose()?;
        Ok(LayerNorm {
            weight,
            bias,
            normalized_shape: normalized_shape.to_vec(),
            eps,
        })
    }

    /// The scale, a parameter of `normalized_shape`, if the layer is affine.
    pub fn weight(&self) -> Option<&Tensor<D, E>> {
        self.weight.as_ref()
    }

    /// The shift, a parameter of `normalized_shape`, if the layer has one.
    pub fn bias(&self) -> Option<&Tensor<D, E>> {
        self.bias.as_ref()
    }

    /// The normalised trailing sizes.
    pub fn normalized_shape(&self) -> &[usize] {
        &self.normalized_shape
    }

    /// The normalised input, scaled and shifted, recorded.
    pub fn try_forward<I: ModuleInput<D> + HasDevice<Element = E>>(
        &self,
        input: I,
    ) -> Result<Tensor<D, E>> {
        try_layer_norm(
            &input_tensor(&input),
            &self.normalized_shape,
            self.weight.as_ref(),
            self.bias.as_ref(),
            self.eps,
        )
    }
}

impl<D: Device, E: Float> Forward<D, E> for LayerNorm<D, E> {
    #[track_caller]
    fn forward<I: ModuleInput<D> + HasDevice<Element = E>>(&self, input: I) -> Tensor<D, E> {
        or_panic(self.try_forward(input))
    }
}

impl<D: Device, E: Float> Placement for LayerNorm<D, E> {
    type Device = D;
}

impl<D: Device, E: Float> Module<D, E> for LayerNorm<D, E> {
    type On<D2: Device> = LayerNorm<D2, E>;

    fn try_to<D2: Device>(&self, dev: D2) -> Result<LayerNorm<D2, E>>
    where
        D: crate::device::CopyTo<D2>,
    {
        Ok(LayerNorm {
            weight: move_opt(&self.weight, dev)?,
            bias: move_opt(&self.bias, dev)?,
            normalized_shape: self.normalized_shape.clone(),
            eps: self.eps,
        })
    }

    fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &Tensor<D, E>)) {
        if let Some(w) = &self.weight {
            f(&join_name(prefix, "weight"), w);
        }
        if let Some(b) = &self.bias {
            f(&join_name(prefix, "bias"), b);
        }
    }

    fn visit_parameters_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut Tensor<D, E>)) {
        if let Some(w) = &mut self.weight {
            f(&join_name(prefix, "weight"), w);
        }
        if let Some(b) = &mut self.bias {
            f(&join_name(prefix, "bias"), b);
        }
    }
}

/// RMS normalisation over the last dims (`nn.RMSNorm(normalized_shape, eps,
/// elementwise_affine)`): `x / √(mean(x²) + eps) · weight`, `weight` ones; `eps` `None` is
/// the element type's machine epsilon, as PyTorch's.
///
/// ```
/// use devtype::prelude::*;
/// use devtype::nn::RMSNorm;
///
/// let norm = RMSNorm::new(&[8], Cpu);
/// let y = norm.forward(&Tensor::randn([4, 8], Cpu));
/// assert_eq!(y.shape(), &[4, 8]);
/// ```
#[derive(Clone)]
pub struct RMSNorm<D: Device, E: Float = f32> {
    weight: Option<Tensor<D, E>>,
    normalized_shape: Vec<usize>,
    eps: Option<f64>,
}

crate::tensor::debug_on_host!(RMSNorm<D, E: crate::tensor::Float> { weight, normalized_shape, eps });

impl<D: Device> RMSNorm<D, f32> {
    /// `nn.RMSNorm(normalized_shape)`: `eps = None`, with `weight`, in `f32`.
    #[track_caller]
    pub fn new(normalized_shape: &[usize], dev: D) -> Self {
        or_panic(Self::try_with_options(normalized_shape, None, true, dev))
    }
}

impl<D: Device, E: Float> RMSNorm<D, E> {
    /// `nn.RMSNorm(normalized_shape, eps, elementwise_affine)` of `E`, on `dev`.
    pub fn try_with_options(
        normalized_shape: &[usize],
        eps: Option<f64>,
        elementwise_affine: bool,
        dev: D,
    ) -> Result<Self> {
        let weight = elementwise_affine
            .then(|| Tensor::<D, E>::try_ones(normalized_shape, dev).map(Tensor::parameter))
            .transpose()?;
        Ok(RMSNorm {
            weight,
            normalized_shape: normalized_shape.to_vec(),
            eps,
        })
    }

    /// The scale, a parameter of `normalized_shape`, if the layer is affine.
    pub fn weight(&self) -> Option<&Tensor<D, E>> {
        self.weight.as_ref()
    }

    /// The normalised input, scaled, recorded.
    pub fn try_forward<I: ModuleInput<D> + HasDevice<Element = E>>(
        &self,
        input: I,
    ) -> Result<Tensor<D, E>> {
        try_rms_norm(
            &input_tensor(&input),
            &self.normalized_shape,
            self.weight.as_ref(),
            self.eps,
        )
    }
}

impl<D: Device, E: Float> Forward<D, E> for RMSNorm<D, E> {
    #[track_caller]
    fn forward<I: ModuleInput<D> + HasDevice<Element = E>>(&self, input: I) -> Tensor<D, E> {
        or_panic(self.try_forward(input))
    }
}

impl<D: Device, E: Float> Placement for RMSNorm<D, E> {
    type Device = D;
}

impl<D: Device, E: Float> Module<D, E> for RMSNorm<D, E> {
    type On<D2: Device> = RMSNorm<D2, E>;

    fn try_to<D2: Device>(&self, dev: D2) -> Result<RMSNorm<D2, E>>
    where
        D: crate::device::CopyTo<D2>,
    {
        Ok(RMSNorm {
            weight: move_opt(&self.weight, dev)?,
            normalized_shape: self.normalized_shape.clone(),
            eps: self.eps,
        })
    }

    fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &Tensor<D, E>)) {
        if let Some(w) = &self.weight {
            f(&join_name(prefix, "weight"), w);
        }
    }

    fn visit_parameters_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut Tensor<D, E>)) {
        if let Some(w) = &mut self.weight {
            f(&join_name(prefix, "weight"), w);
        }
    }
}
