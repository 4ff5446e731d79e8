//! `Linear`: `y = x @ weight.T + bias`, with PyTorch's default initialisation.

use super::{Forward, Module, Output, ParameterOn};
use crate::api::rules;
use crate::core::error::Result;
use crate::device::{Cpu, Device};
use crate::tensor::operand::sealed::AsRaw;
use crate::tensor::{Float, InputElementIs, ModuleInput, Tensor};

/// A fully connected layer (`nn.Linear`) whose parameters live on `D`.
///
/// ```
/// use devtype::prelude::*;
/// use devtype::nn::Linear;
///
/// let dev = Cpu;                                   // or Cuda::<0>::open()?
/// let model = Linear::new(10, 2, Cpu).to(dev);     // the module, typed on its new device
/// let x = Tensor::randn([4, 10], Cpu);
/// let x = x.to(dev);                               // tensors return a copy: rebind!
/// let out = model.forward(&x);
/// assert_eq!(out.shape(), &[4, 2]);
/// ```
#[derive(Clone)]
///
/// The parameters are private: [`weight`](Linear::weight) and [`bias`](Linear::bias) read
/// them, and [`set_weight`](Linear::set_weight) replaces one (PyTorch's
/// `layer.weight = nn.Parameter(w)`) only with a tensor on the layer's device, so a parameter
/// cannot be swapped for one on another device behind the type's back.
pub struct Linear<D: Device, E: Float = f32> {
    /// `[out_features, in_features]`, a parameter.
    weight: Tensor<D, E>,
    /// `[out_features]`, a parameter, if any.
    bias: Option<Tensor<D, E>>,
}

crate::tensor::debug_on_host!(Linear<D, E: crate::tensor::Float> { weight, bias });

impl<D: Device> Linear<D, f32> {
    /// A layer of `f32` (PyTorch's default dtype) with PyTorch's default initialisation:
    /// weight and bias uniform in `[-1/√in, 1/√in]` (Kaiming-uniform with `a = √5`), created
    /// directly on `dev`. As `HashMap::new` fixes its hasher, this fixes the element type, so
    /// a model that is only built (or loaded) needs no annotation; for another one use
    /// [`with_element`](Linear::with_element).
    pub fn try_new(in_features: usize, out_features: usize, dev: D) -> Result<Self> {
        Self::try_with_element(in_features, out_features, dev)
    }

    /// A layer of `f32` with PyTorch's default initialisation, created directly on `dev`.
    ///
    /// Panics with the error's text where [`try_new`](Self::try_new) returns it.
    #[track_caller]
    pub fn new(in_features: usize, out_features: usize, dev: D) -> Self {
        Self::with_element(in_features, out_features, dev)
    }
}

impl<D: Device, E: Float> Linear<D, E> {
    /// A layer of `E` with PyTorch's default initialisation: weight and bias uniform in
    /// `[-1/√in, 1/√in]` (Kaiming-uniform with `a = √5`), created directly on `dev`
    /// (`Linear::<Cpu, f64>::try_with_element(3, 2, Cpu)`).
    pub fn try_with_element(in_features: usize, out_features: usize, dev: D) -> Result<Self> {
        let (weight, bias) =
            super::init::default_layer_parameters(&[out_features, in_features], true, dev)?;
        Ok(Linear::from_parameters(weight, bias))
    }

    /// A layer of `E` with PyTorch's default initialisation, created directly on `dev`.
    ///
    /// Panics with the error's text where [`try_with_element`](Self::try_with_element)
    /// returns it.
    #[track_caller]
    pub fn with_element(in_features: usize, out_features: usize, dev: D) -> Self {
        match Self::try_with_element(in_features, out_features, dev) {
            Ok(m) => m,
            Err(e) => panic!("{e}"),
        }
    }

    /// A layer from given values (`weight` is `[out, in]`); they become parameters.
    pub fn from_parameters(weight: Tensor<D, E>, bias: Option<Tensor<D, E>>) -> Self {
        Linear {
            weight: Tensor::parameter(weight),
            bias: bias.map(Tensor::parameter),
        }
    }

    /// The weight, `[out_features, in_features]`, a parameter (PyTorch's `layer.weight`).
    pub fn weight(&self) -> &Tensor<D, E> {
        &self.weight
    }

    /// The bias, `[out_features]`, a parameter, if the layer has one (`layer.bias`).
    pub fn bias(&self) -> Option<&Tensor<D, E>> {
        self.bias.as_ref()
    }

    /// The weight, mutably (it stays on `D`: its type says so).
    pub fn weight_mut(&mut self) -> &mut Tensor<D, E> {
        &mut self.weight
    }

    /// The bias, mutably, if the layer has one.
    pub fn bias_mut(&mut self) -> Option<&mut Tensor<D, E>> {
        self.bias.as_mut()
    }

    /// Replaces the weight with `weight`, which must be on the layer's device `D` (PyTorch's
    /// `layer.weight = nn.Parameter(w)`). It becomes a parameter unless it already is one (a
    /// parameter given here stays the same parameter, its gradient shared).
    ///
    /// ```
    /// use devtype::prelude::*;
    /// use devtype::nn::Linear;
    ///
    /// let dev = Cpu;                                   // or Cuda::<0>::open()?
    /// let mut layer = Linear::new(2, 1, Cpu).to(dev);
    /// layer.set_weight(Tensor::from_vec(vec![1.0, 2.0], [1, 2], Cpu).to(dev));
    /// assert!(layer.weight().requires_grad());
    /// ```
    pub fn set_weight<W: ParameterOn<D, E>>(&mut self, weight: W) {
        self.weight = weight.into_parameter();
    }

    /// Replaces the bias (or gives the layer one) with `bias`, on the layer's device `D`.
    pub fn set_bias<B: ParameterOn<D, E>>(&mut self, bias: B) {
        self.bias = Some(bias.into_parameter());
    }

    /// Removes the bias (PyTorch's `layer.bias = None`).
    pub fn clear_bias(&mut self) {
        self.bias = None;
    }

    /// Input features.
    pub fn in_features(&self) -> usize {
        self.weight.shape()[1]
    }

    /// Output features.
    pub fn out_features(&self) -> usize {
        self.weight.shape()[0]
    }

    /// The layer with every parameter on `dev`, typed on it.
    pub fn try_to<D2: Device>(&self, dev: D2) -> Result<Linear<D2, E>>
    where
        D: crate::device::CopyTo<D2>,
    {
        Ok(Linear {
            weight: Module::<D, E>::try_to(&self.weight, dev)?,
            bias: self
                .bias
                .as_ref()
                .map(|b| Module::<D, E>::try_to(b, dev))
                .transpose()?,
        })
    }

    /// The layer with every parameter on `dev`, typed on it: `let model = model.to(dev);`.
    ///
    /// Panics with the error's text where [`try_to`](Self::try_to) returns it.
    #[must_use = "`to` returns the module typed on the new device: `let model = model.to(dev);`"]
    #[track_caller]
    pub fn to<D2: Device>(&self, dev: D2) -> Linear<D2, E>
    where
        D: crate::device::CopyTo<D2>,
    {
        match self.try_to(dev) {
            Ok(m) => m,
            Err(e) => panic!("{e}"),
        }
    }

    /// `input @ weight.T + bias`, recorded for `backward`.
    pub fn try_forward<I: ModuleInput<D> + InputElementIs<E>>(
        &self,
        input: I,
    ) -> Result<Tensor<D, E>> {
        let device = self.weight.device();
        rules::linear(
            input.input(),
            self.weight.input(),
            self.bias.as_ref().map(|b| b.input()),
        )
        .map(|out| Tensor::from_out(out, device))
    }

    /// `input @ weight.T + bias`; the input must be on the layer's device.
    ///
    /// Panics with the error's text where [`try_forward`](Self::try_forward) returns it (a shape mismatch).
    #[track_caller]
    pub fn forward<I: ModuleInput<D> + InputElementIs<E>>(&self, input: I) -> Output<I, D, E> {
        match self.try_forward(input) {
            Ok(t) => t,
            Err(e) => panic!("{e}"),
        }
    }
}

impl<D: Device, E: Float> Forward<D, E> for Linear<D, E> {
    #[track_caller]
    fn forward<I: ModuleInput<D> + InputElementIs<E>>(&self, input: I) -> Tensor<D, E> {
        Linear::forward(self, input)
    }
}

impl<D: Device, E: Float> super::Precision for Linear<D, E> {
    type Element = E;
}

impl<D: Device, E: Float> super::Placement for Linear<D, E> {
    type Device = D;
}

impl<D: Device, E: Float> Module<D, E> for Linear<D, E> {
    type On<D2: Device> = Linear<D2, E>;

    fn try_to<D2: Device>(&self, dev: D2) -> Result<Linear<D2, E>>
    where
        D: crate::device::CopyTo<D2>,
    {
        Linear::try_to(self, dev)
    }

    fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &Tensor<D, E>)) {
        f(&super::join_name(prefix, "weight"), &self.weight);
        if let Some(b) = &self.bias {
            f(&super::join_name(prefix, "bias"), b);
        }
    }

    fn visit_parameters_mut(&mut self, prefix: &str, f: &mut dyn FnMut(&str, &mut Tensor<D, E>)) {
        f(&super::join_name(prefix, "weight"), &mut self.weight);
        if let Some(b) = &mut self.bias {
            f(&super::join_name(prefix, "bias"), b);
        }
    }
}

impl Linear<Cpu, f32> {
    /// An `f32` layer on the CPU (the usual start before `to(dev)`).
    pub fn cpu(in_features: usize, out_features: usize) -> Self {
        Self::new(in_features, out_features, Cpu)
    }
}
