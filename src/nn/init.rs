//! Parameter initialisation, as PyTorch's `torch.nn.init`: each function replaces the values
//! of a parameter (a tensor on any device) in place, drawing from devtype's random stream, so
//! the same seed gives the same numbers on every device.
//!
//! ```
//! use devtype::prelude::*;
//! use devtype::nn::init::{kaiming_uniform_, zeros_, FanMode};
//! let mut w = Tensor::parameter(Tensor::<Cpu>::zeros([16, 8], Cpu));
//! kaiming_uniform_(&mut w, 0.0, FanMode::FanIn, "relu").unwrap();
//! let bound = (6.0f32 / 8.0).sqrt();                        // gain √2 × √(3 / fan_in)
//! assert!(w.to_vec().iter().all(|v| v.abs() <= bound));
//! let mut b = Tensor::parameter(Tensor::<Cpu>::ones([16], Cpu));
//! zeros_(&mut b).unwrap();
//! assert!(b.to_vec().iter().all(|&v| v == 0.0));
//! ```

use crate::core::error::{Error, Result};
use crate::device::Device;
use crate::tensor::{Float, Tensor};

/// Which fan `kaiming_*` scales by: `fan_in` (PyTorch's default, keeps the forward pass's
/// variance) or `fan_out` (the backward pass's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FanMode {
    /// `mode="fan_in"`.
    FanIn,
    /// `mode="fan_out"`.
    FanOut,
}

/// PyTorch's `calculate_gain(nonlinearity, param)`: 1 for `linear`, the `conv*` names and
/// `sigmoid`, 5/3 for `tanh`, √2 for `relu`, √(2 / (1 + slope²)) for `leaky_relu` (slope
/// `param`, 0.01 when `None`), 3/4 for `selu`.
pub fn calculate_gain(nonlinearity: &str, param: Option<f64>) -> Result<f64> {
    Ok(match nonlinearity {
        "linear" | "conv1d" | "conv2d" | "conv3d" | "conv_transpose1d" | "conv_transpose2d"
        | "conv_transpose3d" | "sigmoid" => 1.0,
        "tanh" => 5.0 / 3.0,
        "relu" => 2f64.sqrt(),
        "leaky_relu" => {
            let slope = param.unwrap_or(0.01);
            (2.0 / (1.0 + slope * slope)).sqrt()
        }
        "selu" => 3.0 / 4.0,
        other => return Err(Error::Shape(format!("Unsupported nonlinearity {other}"))),
    })
}

/// `(fan_in, fan_out)` of a weight: `shape[1] × receptive field`, `shape[0] × receptive field`.
fn fans(shape: &[usize]) -> Result<(f64, f64)> {
    if shape.len() < 2 {
        return Err(Error::Shape(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions".into(),
        ));
    }
    let receptive: usize = shape[2..].iter().product();
    Ok(((shape[1] * receptive) as f64, (shape[0] * receptive) as f64))
}

fn replace<D: Device, E: Float>(t: &mut Tensor<D, E>, value: Tensor<D, E>) {
    t.set_value(value);
}

/// Uniform in `[a, b)` (`torch.nn.init.uniform_`).
pub fn uniform_<D: Device, E: Float>(t: &mut Tensor<D, E>, a: f64, b: f64) -> Result<()> {
    let u = Tensor::<D, E>::random(t.shape(), t.device(), false)?;
    let v = u
        .try_mul_scalar(E::from_f64(b - a))?
        .try_add_scalar(E::from_f64(a))?;
    replace(t, v);
    Ok(())
}

/// Normal with `mean` and standard deviation `std` (`torch.nn.init.normal_`).
pub fn normal_<D: Device, E: Float>(t: &mut Tensor<D, E>, mean: f64, std: f64) -> Result<()> {
    let n = Tensor::<D, E>::random(t.shape(), t.device(), true)?;
    let v = n
        .try_mul_scalar(E::from_f64(std))?
        .try_add_scalar(E::from_f64(mean))?;
    replace(t, v);
    Ok(())
}

/// Every element `value` (`torch.nn.init.constant_`).
pub fn constant_<D: Device, E: Float>(t: &mut Tensor<D, E>, value: f64) -> Result<()> {
    let v = Tensor::<D, E>::try_full(t.shape(), E::from_f64(value), t.device())?;
    replace(t, v);
    Ok(())
}

/// Every element 0 (`torch.nn.init.zeros_`).
pub fn zeros_<D: Device, E: Float>(t: &mut Tensor<D, E>) -> Result<()> {
    constant_(t, 0.0)
}

/// Every element 1 (`torch.nn.init.ones_`).
pub fn ones_<D: Device, E: Float>(t: &mut Tensor<D, E>) -> Result<()> {
    constant_(t, 1.0)
}

/// Glorot uniform: `U(-bound, bound)`, `bound = gain × √(6 / (fan_in + fan_out))`
/// (`torch.nn.init.xavier_uniform_`).
pub fn xavier_uniform_<D: Device, E: Float>(t: &mut Tensor<D, E>, gain: f64) -> Result<()> {
    let (fan_in, fan_out) = fans(t.shape())?;
    let std = gain * (2.0 / (fan_in + fan_out)).sqrt();
    let bound = 3f64.sqrt() * std;
    uniform_(t, -bound, bound)
}

/// Glorot normal: `N(0, std²)`, `std = gain × √(2 / (fan_in + fan_out))`
/// (`torch.nn.init.xavier_normal_`).
pub fn xavier_normal_<D: Device, E: Float>(t: &mut Tensor<D, E>, gain: f64) -> Result<()> {
    let (fan_in, fan_out) = fans(t.shape())?;
    normal_(t, 0.0, gain * (2.0 / (fan_in + fan_out)).sqrt())
}

fn kaiming_std(shape: &[usize], a: f64, mode: FanMode, nonlinearity: &str) -> Result<f64> {
    let (fan_in, fan_out) = fans(shape)?;
    let fan = match mode {
        FanMode::FanIn => fan_in,
        FanMode::FanOut => fan_out,
    };
    Ok(calculate_gain(nonlinearity, Some(a))? / fan.sqrt())
}

/// He uniform: `U(-bound, bound)`, `bound = gain × √(3 / fan)`, the gain of `nonlinearity`
/// with slope `a` (`torch.nn.init.kaiming_uniform_`; PyTorch's defaults are `a = 0`,
/// `FanIn`, `"leaky_relu"`; `Linear`'s default init is `a = √5`).
pub fn kaiming_uniform_<D: Device, E: Float>(
    t: &mut Tensor<D, E>,
    a: f64,
    mode: FanMode,
    nonlinearity: &str,
) -> Result<()> {
    let bound = 3f64.sqrt() * kaiming_std(t.shape(), a, mode, nonlinearity)?;
    uniform_(t, -bound, bound)
}

/// He normal: `N(0, std²)`, `std = gain / √fan` (`torch.nn.init.kaiming_normal_`).
pub fn kaiming_normal_<D: Device, E: Float>(
    t: &mut Tensor<D, E>,
    a: f64,
    mode: FanMode,
    nonlinearity: &str,
) -> Result<()> {
    let std = kaiming_std(t.shape(), a, mode, nonlinearity)?;
    normal_(t, 0.0, std)
}

/// A layer's weight and optional bias.
pub(crate) type Parameters<D, E> = (Tensor<D, E>, Option<Tensor<D, E>>);

/// PyTorch's default initialisation of `Linear` and the convolutions: weight and bias uniform in
/// `[-1/√fan_in, 1/√fan_in]` (Kaiming-uniform with `a = √5`), `fan_in` the product of the
/// weight's dims after the first (`in_features`; `c / groups · kernel` for a convolution).
pub(crate) fn default_layer_parameters<D: Device, E: Float>(
    weight_shape: &[usize],
    bias: bool,
    dev: D,
) -> Result<Parameters<D, E>> {
    let fan_in: usize = weight_shape[1..].iter().product();
    let bound = if fan_in > 0 {
        1.0 / (fan_in as f64).sqrt()
    } else {
        0.0
    };
    let uniform = |shape: &[usize]| -> Result<Tensor<D, E>> {
        let u = Tensor::<D, E>::random(shape, dev, false)?;
        u.try_mul_scalar(E::from_f64(2.0 * bound))?
            .try_add_scalar(E::from_f64(-bound))
    };
    let weight = uniform(weight_shape)?;
    let bias = if bias {
        Some(uniform(&weight_shape[..1])?)
    } else {
        None
    };
    Ok((weight, bias))
}
