//! Convolution and pooling layers: `Conv1d` and `Conv2d` (with PyTorch's default
//! initialisation) and their dynamic fronts `DynConv1d` and `DynConv2d`, and the parameter-free
//! `MaxPool2d`, `AvgPool2d` and `AdaptiveAvgPool2d`, which run on whatever device their input
//! is on, on both fronts.

use super::activations::pointwise;
use super::functional::{input_tensor, or_panic};
use super::{DynModule, Forward, Module, Output};
use crate::api::rules;
use crate::api::Size2;
use crate::core::error::Result;
use crate::device::{Device, DynDevice};
use crate::tensor::operand::sealed::AsRaw;
use crate::tensor::{Float, HasDevice, InputElementIs, ModuleInput, Tensor};
use crate::DynTensor;

/// Checks a convolution layer's channels and groups as `nn.Conv2d` does.
fn check_channels(in_channels: usize, out_channels: usize, groups: usize) -> Result<()> {
    use crate::core::error::Error;
    if groups == 0 {
        return Err(Error::Shape("groups must be a positive integer".into()));
    }
    if !in_channels.is_multiple_of(groups) {
        return Err(Error::Shape(
            "in_channels must be divisible by groups".into(),
        ));
    }
    if !out_channels.is_multiple_of(groups) {
        return Err(Error::Shape(
            "out_channels must be divisible by groups".into(),
        ));
    }
    Ok(())
}

/// Writes a convolution layer: its constructors, accessors, moves, forward and `Module` impl.
macro_rules! conv_layer {
    ($name:ident, $size:ty, $spatial:literal, |$s:ident| $opts:expr, $doc_new:literal) => {
        impl<D: Device, E: Float> $name<D, E> {
            /// The layer from given parameters (`weight` is `[out, in / groups, kernel..]`);
            /// they become parameters.
            pub fn from_parameters(weight: Tensor<D, E>, bias: Option<Tensor<D, E>>) -> Self {
                $name {
                    weight: Tensor::parameter(weight),
                    bias: bias.map(Tensor::parameter),
                    stride: Default::default(),
                    padding: Default::default(),
                    dilation: Default::default(),
                    groups: 1,
                }
                .with_stride(one())
                .with_dilation(one())
            }

            /// The stride (PyTorch's `stride=`).
            #[must_use]
            pub fn with_stride(mut self, stride: $size) -> Self {
                self.stride = stride;
                self
            }

            /// The zero padding on each side (PyTorch's `padding=`).
            #[must_use]
            pub fn with_padding(mut self, padding: $size) -> Self {
                self.padding = padding;
                self
            }

            /// The dilation (PyTorch's `dilation=`).
            #[must_use]
            pub fn with_dilation(mut self, dilation: $size) -> Self {
                self.dilation = dilation;
                self
            }

            /// The weight, `[out, in / groups, kernel..]`, a parameter.
            pub fn weight(&self) -> &Tensor<D, E> {
                &self.weight
            }

            /// The bias, `[out]`, a parameter, if the layer has one.
            pub fn bias(&self) -> Option<&Tensor<D, E>> {
                self.bias.as_ref()
            }

            /// The number of groups.
            pub fn groups(&self) -> usize {
                self.groups
            }

            /// The layer with every parameter on `dev`, typed on it.
            pub fn try_to<D2: Device>(&self, dev: D2) -> Result<$name<D2, E>>
            where
                D: crate::device::CopyTo<D2>,
            {
                Ok($name {
                    weight: Module::<D, E>::try_to(&self.weight, dev)?,
                    bias: self
                        .bias
                        .as_ref()
                        .map(|b| Module::<D, E>::try_to(b, dev))
                        .transpose()?,
                    stride: self.stride,
                    padding: self.padding,
                    dilation: self.dilation,
                    groups: self.groups,
                })
            }

            /// The layer with every parameter on `dev`, typed on it: `let model = model.to(dev);`.
            ///
            /// Panics with the error's text where [`try_to`](Self::try_to) returns it.
            #[must_use = "`to` returns the module typed on the new device: `let model = model.to(dev);`"]
            #[track_caller]
            pub fn to<D2: Device>(&self, dev: D2) -> $name<D2, E>
            where
                D: crate::device::CopyTo<D2>,
            {
                or_panic(self.try_to(dev))
            }

            /// The convolution of `input`, recorded for `backward`.
            pub fn try_forward<I: ModuleInput<D> + InputElementIs<E>>(
                &self,
                input: I,
            ) -> Result<Tensor<D, E>> {
                let device = self.weight.device();
                let $s = self;
                rules::conv(
                    input.input(),
                    self.weight.input(),
                    self.bias.as_ref().map(|b| b.input()),
                    $opts,
                    $spatial,
                )
                .map(|out| Tensor::from_out(out, device))
            }

            /// The convolution of `input`; the input must be on the layer's device.
            ///
            /// Panics with the error's text where [`try_forward`](Self::try_forward) returns it.
            #[track_caller]
            pub fn forward<I: ModuleInput<D> + InputElementIs<E>>(
                &self,
                input: I,
            ) -> Output<I, D, E> {
                or_panic(self.try_forward(input))
            }
        }

        impl<D: Device> $name<D, f32> {
            #[doc = $doc_new]
            pub fn try_new(
                in_channels: usize,
                out_channels: usize,
                kernel_size: $size,
                dev: D,
            ) -> Result<Self> {
                Self::try_with_options(in_channels, out_channels, kernel_size, 1, true, dev)
            }

            /// A layer of `f32` with PyTorch's default initialisation, created on `dev`.
            ///
            /// Panics with the error's text where [`try_new`](Self::try_new) returns it.
            #[track_caller]
            pub fn new(in_channels: usize, out_channels: usize, kernel_size: $size, dev: D) -> Self {
                or_panic(Self::try_new(in_channels, out_channels, kernel_size, dev))
            }
        }

        impl<D: Device, E: Float> Forward<D, E> for $name<D, E> {
            #[track_caller]
            fn forward<I: ModuleInput<D> + InputElementIs<E>>(&self, input: I) -> Tensor<D, E> {
                $name::forward(self, input)
            }
        }

        impl<D: Device, E: Float> super::Precision for $name<D, E> {
            type Element = E;
        }

        impl<D: Device, E: Float> super::Placement for $name<D, E> {
            type Device = D;
        }

        impl<D: Device, E: Float> Module<D, E> for $name<D, E> {
            type On<D2: Device> = $name<D2, E>;

            fn try_to<D2: Device>(&self, dev: D2) -> Result<$name<D2, E>>
            where
                D: crate::device::CopyTo<D2>,
            {
                $name::try_to(self, dev)
            }

            fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &Tensor<D, E>)) {
                f(&super::join_name(prefix, "weight"), &self.weight);
                if let Some(b) = &self.bias {
                    f(&super::join_name(prefix, "bias"), b);
                }
            }

            fn visit_parameters_mut(
                &mut self,
                prefix: &str,
                f: &mut dyn FnMut(&str, &mut Tensor<D, E>),
            ) {
                f(&super::join_name(prefix, "weight"), &mut self.weight);
                if let Some(b) = &mut self.bias {
                    f(&super::join_name(prefix, "bias"), b);
                }
            }
        }
    };
}

/// The size 1 of an option (`1` or `(1, 1)`).
trait One {
    fn one() -> Self;
}

impl One for usize {
    fn one() -> Self {
        1
    }
}

impl One for Size2 {
    fn one() -> Self {
        (1, 1)
    }
}

fn one<T: One>() -> T {
    T::one()
}

/// A 2-D convolution layer (`nn.Conv2d`) whose parameters live on `D`: weight
/// `[out, in / groups, kh, kw]`, bias `[out]`.
///
/// ```
/// use devtype::prelude::*;
/// use devtype::nn::Conv2d;
///
/// let conv = Conv2d::new(3, 8, (3, 3), Cpu).with_padding((1, 1));
/// let y = conv.forward(&Tensor::randn([2, 3, 5, 5], Cpu));
/// assert_eq!(y.shape(), &[2, 8, 5, 5]);
/// ```
#[derive(Clone)]
pub struct Conv2d<D: Device, E: Float = f32> {
    weight: Tensor<D, E>,
    bias: Option<Tensor<D, E>>,
    stride: Size2,
    padding: Size2,
    dilation: Size2,
    groups: usize,
}

crate::tensor::debug_on_host!(Conv2d<D, E: crate::tensor::Float> { weight, bias });

impl<D: Device, E: Float> Conv2d<D, E> {
    /// A layer of `E` with PyTorch's default initialisation, created on `dev`: `groups`
    /// splits the channels, `bias` says whether it has one (`Conv2d::<Cpu, f64>::try_with_options(..)`).
    pub fn try_with_options(
        in_channels: usize,
        out_channels: usize,
        kernel_size: Size2,
        groups: usize,
        bias: bool,
        dev: D,
    ) -> Result<Self> {
        check_channels(in_channels, out_channels, groups)?;
        let shape = [
            out_channels,
            in_channels / groups,
            kernel_size.0,
            kernel_size.1,
        ];
        let (w, b) = super::init::default_layer_parameters(&shape, bias, dev)?;
        let mut layer = Self::from_parameters(w, b);
        layer.groups = groups;
        Ok(layer)
    }
}

conv_layer!(
    Conv2d,
    Size2,
    2,
    |s| rules::ConvOptions {
        stride: s.stride,
        padding: s.padding,
        dilation: s.dilation,
        groups: s.groups,
    },
    "A layer of `f32` with PyTorch's default initialisation (weight and bias uniform in `[-1/√fan_in, 1/√fan_in]`), stride 1, no padding, one group, a bias; created on `dev`."
);

/// A 1-D convolution layer (`nn.Conv1d`) whose parameters live on `D`: weight
/// `[out, in / groups, k]`, bias `[out]`.
///
/// ```
/// use devtype::prelude::*;
/// use devtype::nn::Conv1d;
///
/// let conv = Conv1d::new(4, 2, 3, Cpu).with_stride(2);
/// let y = conv.forward(&Tensor::randn([1, 4, 9], Cpu));
/// assert_eq!(y.shape(), &[1, 2, 4]);
/// ```
#[derive(Clone)]
pub struct Conv1d<D: Device, E: Float = f32> {
    weight: Tensor<D, E>,
    bias: Option<Tensor<D, E>>,
    stride: usize,
    padding: usize,
    dilation: usize,
    groups: usize,
}

crate::tensor::debug_on_host!(Conv1d<D, E: crate::tensor::Float> { weight, bias });

impl<D: Device, E: Float> Conv1d<D, E> {
    /// A layer of `E` with PyTorch's default initialisation, created on `dev`: `groups`
    /// splits the channels, `bias` says whether it has one.
    pub fn try_with_options(
        in_channels: usize,
        out_channels: usize,
        kernel_size: usize,
        groups: usize,
        bias: bool,
        dev: D,
    ) -> Result<Self> {
        check_channels(in_channels, out_channels, groups)?;
        let shape = [out_channels, in_channels / groups, kernel_size];
        let (w, b) = super::init::default_layer_parameters(&shape, bias, dev)?;
        let mut layer = Self::from_parameters(w, b);
        layer.groups = groups;
        Ok(layer)
    }
}

conv_layer!(
    Conv1d,
    usize,
    1,
    |s| rules::ConvOptions {
        stride: (1, s.stride),
        padding: (0, s.padding),
        dilation: (1, s.dilation),
        groups: s.groups,
    },
    "A layer of `f32` with PyTorch's default initialisation (weight and bias uniform in `[-1/√fan_in, 1/√fan_in]`), stride 1, no padding, one group, a bias; created on `dev`."
);

/// Max pooling over the last two dims (`nn.MaxPool2d`); parameter-free, so it runs on any
/// device.
///
/// ```
/// use devtype::prelude::*;
/// use devtype::nn::MaxPool2d;
/// let y = MaxPool2d::new((2, 2)).forward(&Tensor::<Cpu>::randn([1, 3, 4, 4], Cpu));
/// assert_eq!(y.shape(), &[1, 3, 2, 2]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MaxPool2d {
    /// The window.
    pub kernel_size: Size2,
    /// The stride (the window by default, as PyTorch's `stride=None`).
    pub stride: Size2,
    /// Implicit `-inf` padding on each side.
    pub padding: Size2,
    /// The spacing of a window's elements.
    pub dilation: Size2,
    /// Whether a window that starts inside the input but runs over its end makes an output.
    pub ceil_mode: bool,
}

impl MaxPool2d {
    /// Windows of `kernel_size`, strided by it, no padding, no dilation.
    pub fn new(kernel_size: Size2) -> Self {
        MaxPool2d {
            kernel_size,
            stride: kernel_size,
            padding: (0, 0),
            dilation: (1, 1),
            ceil_mode: false,
        }
    }
}

pointwise!(
    MaxPool2d,
    |p, x| x.try_max_pool2d(p.kernel_size, p.stride, p.padding, p.dilation, p.ceil_mode),
    |p, x| x.max_pool2d(p.kernel_size, p.stride, p.padding, p.dilation, p.ceil_mode)
);

/// Average pooling over the last two dims (`nn.AvgPool2d`); parameter-free.
///
/// ```
/// use devtype::prelude::*;
/// use devtype::nn::AvgPool2d;
/// let y = AvgPool2d::new((2, 2)).forward(&Tensor::<Cpu>::ones([1, 3, 4, 4], Cpu));
/// assert_eq!(y.to_vec(), vec![1.0; 12]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AvgPool2d {
    /// The window.
    pub kernel_size: Size2,
    /// The stride (the window by default).
    pub stride: Size2,
    /// Implicit zero padding on each side.
    pub padding: Size2,
    /// Whether a window that starts inside the input but runs over its end makes an output.
    pub ceil_mode: bool,
    /// Whether the padding counts in a window's divisor.
    pub count_include_pad: bool,
}

impl AvgPool2d {
    /// Windows of `kernel_size`, strided by it, no padding, padding counted (PyTorch's
    /// defaults).
    pub fn new(kernel_size: Size2) -> Self {
        AvgPool2d {
            kernel_size,
            stride: kernel_size,
            padding: (0, 0),
            ceil_mode: false,
            count_include_pad: true,
        }
    }
}

pointwise!(
    AvgPool2d,
    |p, x| x.try_avg_pool2d(
        p.kernel_size,
        p.stride,
        p.padding,
        p.ceil_mode,
        p.count_include_pad
    ),
    |p, x| x.avg_pool2d(
        p.kernel_size,
        p.stride,
        p.padding,
        p.ceil_mode,
        p.count_include_pad
    )
);

/// Adaptive average pooling to a fixed output size (`nn.AdaptiveAvgPool2d`); parameter-free.
///
/// ```
/// use devtype::prelude::*;
/// use devtype::nn::AdaptiveAvgPool2d;
/// let y = AdaptiveAvgPool2d::new((1, 1)).forward(&Tensor::<Cpu>::ones([2, 3, 5, 7], Cpu));
/// assert_eq!(y.shape(), &[2, 3, 1, 1]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AdaptiveAvgPool2d {
    /// The output's `(height, width)`.
    pub output_size: Size2,
}

impl AdaptiveAvgPool2d {
    /// Pools to `output_size`.
    pub fn new(output_size: Size2) -> Self {
        AdaptiveAvgPool2d { output_size }
    }
}

pointwise!(
    AdaptiveAvgPool2d,
    |p, x| x.try_adaptive_avg_pool2d(p.output_size),
    |p, x| x.adaptive_avg_pool2d(p.output_size)
);

/// `nn.Conv2d` with a run-time device (the dynamic front's layer): weight
/// `[out, in / groups, kh, kw]` and bias `[out]` are parameters, the options plain fields.
///
/// ```
/// use devtype::nn::{DynConv2d, DynModule};
/// use devtype::{DynDevice, DynTensor};
///
/// let mut conv = DynConv2d::new(3, 4, (3, 3), DynDevice::cpu())?;
/// conv.padding = (1, 1);
/// let y = conv.forward(&DynTensor::randn([2, 3, 5, 5], DynDevice::cpu())?)?;
/// assert_eq!(y.shape(), &[2, 4, 5, 5]);
/// # Ok::<(), devtype::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct DynConv2d {
    /// `[out, in / groups, kh, kw]`, a parameter.
    pub weight: DynTensor,
    /// `[out]`, a parameter, if any.
    pub bias: Option<DynTensor>,
    /// The stride.
    pub stride: Size2,
    /// The zero padding on each side.
    pub padding: Size2,
    /// The dilation.
    pub dilation: Size2,
    /// The number of groups.
    pub groups: usize,
}

impl DynConv2d {
    /// PyTorch's default initialisation (weight and bias uniform in
    /// `[-1/√fan_in, 1/√fan_in]`), `f32`, stride 1, no padding, one group; created on `dev`.
    pub fn new(
        in_channels: usize,
        out_channels: usize,
        kernel_size: Size2,
        dev: DynDevice,
    ) -> Result<Self> {
        let (weight, bias) = dyn_default_parameters(
            &[out_channels, in_channels, kernel_size.0, kernel_size.1],
            dev,
        )?;
        Ok(DynConv2d {
            weight,
            bias: Some(bias),
            stride: (1, 1),
            padding: (0, 0),
            dilation: (1, 1),
            groups: 1,
        })
    }
}

/// A dynamic convolution layer's parameters with PyTorch's default initialisation, one group:
/// weight `[out, in, kernel..]` and bias `[out]` uniform in `[-1/√fan_in, 1/√fan_in]`, `fan_in`
/// being `in · kernel..` (the weight first, then the bias, as the typed layers draw them).
fn dyn_default_parameters(
    weight_shape: &[usize],
    dev: DynDevice,
) -> Result<(DynTensor, DynTensor)> {
    check_channels(weight_shape[1], weight_shape[0], 1)?;
    let fan_in: usize = weight_shape[1..].iter().product();
    let bound = if fan_in > 0 {
        1.0 / (fan_in as f64).sqrt()
    } else {
        0.0
    };
    let uniform = |shape: &[usize]| -> Result<DynTensor> {
        DynTensor::parameter(
            DynTensor::rand(shape, dev)?
                .mul_scalar(2.0 * bound)?
                .add_scalar(-bound)?,
        )
    };
    Ok((uniform(weight_shape)?, uniform(&weight_shape[..1])?))
}

/// `DynModule` for a dynamic convolution: `$op` of the input with the layer's weight, bias and
/// options; the parameters `weight` and `bias`, moved together.
macro_rules! dyn_conv_module {
    ($layer:ident, $op:ident) => {
        impl DynModule for $layer {
            fn forward(&self, input: &DynTensor) -> Result<DynTensor> {
                input.$op(
                    &self.weight,
                    self.bias.as_ref(),
                    self.stride,
                    self.padding,
                    self.dilation,
                    self.groups,
                )
            }

            fn visit_parameters(&self, prefix: &str, f: &mut dyn FnMut(&str, &DynTensor)) {
                f(&super::join_name(prefix, "weight"), &self.weight);
                if let Some(b) = &self.bias {
                    f(&super::join_name(prefix, "bias"), b);
                }
            }

            fn visit_parameters_mut(
                &mut self,
                prefix: &str,
                f: &mut dyn FnMut(&str, &mut DynTensor),
            ) {
                f(&super::join_name(prefix, "weight"), &mut self.weight);
                if let Some(b) = &mut self.bias {
                    f(&super::join_name(prefix, "bias"), b);
                }
            }
        }
    };
}
dyn_conv_module!(DynConv2d, conv2d);

/// `nn.Conv1d` with a run-time device (the dynamic front's layer): weight
/// `[out, in / groups, k]` and bias `[out]` are parameters, the options plain fields.
///
/// ```
/// use devtype::nn::{DynConv1d, DynModule};
/// use devtype::{DynDevice, DynTensor};
///
/// let mut conv = DynConv1d::new(4, 2, 3, DynDevice::cpu())?;
/// conv.stride = 2;
/// let y = conv.forward(&DynTensor::randn([1, 4, 9], DynDevice::cpu())?)?;
/// assert_eq!(y.shape(), &[1, 2, 4]);
/// # Ok::<(), devtype::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct DynConv1d {
    /// `[out, in / groups, k]`, a parameter.
    pub weight: DynTensor,
    /// `[out]`, a parameter, if any.
    pub bias: Option<DynTensor>,
    /// The stride.
    pub stride: usize,
    /// The zero padding on each side.
    pub padding: usize,
    /// The dilation.
    pub dilation: usize,
    /// The number of groups.
    pub groups: usize,
}

impl DynConv1d {
    /// PyTorch's default initialisation (weight and bias uniform in
    /// `[-1/√fan_in, 1/√fan_in]`), `f32`, stride 1, no padding, one group; created on `dev`.
    pub fn new(
        in_channels: usize,
        out_channels: usize,
        kernel_size: usize,
        dev: DynDevice,
    ) -> Result<Self> {
        let (weight, bias) =
            dyn_default_parameters(&[out_channels, in_channels, kernel_size], dev)?;
        Ok(DynConv1d {
            weight,
            bias: Some(bias),
            stride: 1,
            padding: 0,
            dilation: 1,
            groups: 1,
        })
    }
}

dyn_conv_module!(DynConv1d, conv1d);
