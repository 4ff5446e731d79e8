//! Gradient clipping over a model's parameters, as PyTorch's `torch.nn.utils`:
//! [`clip_grad_norm_`] and [`clip_grad_value_`].
//!
//! Both see each parameter once (a tied weight is one gradient, as `named_parameters()` lists
//! it once) and change the gradients where they are stored, for the optimizer's next step.
//! The total norm is computed and applied on the gradients' device with device ops: nothing
//! is read back to the host (no sync), unless `error_if_nonfinite` asks for the check, which
//! must read the norm, as PyTorch's does.
//!
//! ```
//! use devtype::prelude::*;
//! use devtype::nn::{Linear, MSELoss};
//! use devtype::nn::utils::clip_grad_norm_;
//!
//! let dev = Cpu;                                        // or Cuda::<0>::open()?
//! let model = Linear::new(3, 1, Cpu).to(dev);
//! let x = Tensor::randn([8, 3], dev);
//! let loss = MSELoss::new().forward(&model.forward(&x), &Tensor::<Cpu>::full([8, 1], 100.0, dev));
//! loss.backward();
//! let total = clip_grad_norm_(&model, 1.0, 2.0);       // a 0-dim tensor on dev, no sync
//! assert!(total.item() > 1.0);
//! let after: f32 = model.parameters().iter()
//!     .map(|p| p.grad().unwrap().to_vec().iter().map(|g| g * g).sum::<f32>()).sum();
//! assert!((after.sqrt() - 1.0).abs() < 1e-4);            // clipped to max_norm
//! ```

use super::Module;
use crate::core::error::{Error, Result};
use crate::core::raw::RawTensor;
use crate::core::{DType, Scalar};
use crate::device::Device;
use crate::ops::binary::{binary, binary_scalar, compare_scalar, BinaryOp, CompareOp};
use crate::ops::reduce::{reduce, ReduceOp};
use crate::ops::unary::{unary, UnaryOp};
use crate::tensor::{Float, Tensor};
use std::borrow::Cow;
use std::sync::Arc;

/// The nodes of the parameters of `model` that have a gradient, each once (by identity).
fn nodes_with_grad<D: Device, E: Float, M: Module<D, E> + ?Sized>(
    model: &M,
) -> Vec<Arc<crate::graph::Node>> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    model.visit_parameters("", &mut |_, p| {
        if let (Some(id), Some(node)) = (super::identity(p), p.node()) {
            if seen.insert(id) && node.grad().is_some() {
                out.push(node.clone());
            }
        }
    });
    out
}

/// The device of the first parameter of `model`, if it has one.
fn device_of<D: Device, E: Float, M: Module<D, E> + ?Sized>(model: &M) -> Option<D> {
    let mut dev = None;
    model.visit_parameters("", &mut |_, p| {
        if dev.is_none() {
            dev = Some(p.device());
        }
    });
    dev
}

/// `torch.linalg.vector_norm(t, ord)` over all elements, as a 0-dim tensor of `t`'s dtype,
/// computed in `acc` (`f32` for the half types, as PyTorch accumulates them).
fn vector_norm(t: &RawTensor, ord: f64, acc: DType) -> Result<RawTensor> {
    let out_dtype = t.dtype;
    let x = if t.dtype == acc {
        Cow::Borrowed(t)
    } else {
        Cow::Owned(crate::ops::copy::cast(t, acc)?)
    };
    let norm = if ord == 0.0 {
        let nonzero = compare_scalar(&x, Scalar::Float(0.0), CompareOp::Ne)?;
        let ones = crate::ops::copy::cast(&nonzero, acc)?;
        reduce(&ones, &[], false, ReduceOp::Sum)?
    } else if ord.is_infinite() {
        let abs = unary(x, UnaryOp::Abs)?;
        let op = if ord > 0.0 {
            ReduceOp::Max
        } else {
            ReduceOp::Min
        };
        reduce(&abs, &[], false, op)?
    } else if ord == 2.0 {
        let sq = unary(x, UnaryOp::Square)?;
        let sum = reduce(&sq, &[], false, ReduceOp::Sum)?;
        unary(Cow::Owned(sum), UnaryOp::Sqrt)?
    } else if ord == 1.0 {
        let abs = unary(x, UnaryOp::Abs)?;
        reduce(&abs, &[], false, ReduceOp::Sum)?
    } else {
        let abs = unary(x, UnaryOp::Abs)?;
        let pow = binary_scalar(Cow::Owned(abs), Scalar::Float(ord), BinaryOp::Pow, false)?;
        let sum = reduce(&pow, &[], false, ReduceOp::Sum)?;
        binary_scalar(
            Cow::Owned(sum),
            Scalar::Float(1.0 / ord),
            BinaryOp::Pow,
            false,
        )?
    };
    if norm.dtype == out_dtype {
        Ok(norm)
    } else {
        crate::ops::copy::cast(&norm, out_dtype)
    }
}

/// PyTorch's text for a non-finite total norm with `error_if_nonfinite`.
fn nonfinite_error(norm_type: f64) -> Error {
    Error::Autograd(format!(
        "The total norm of order {} for gradients from `parameters` is non-finite, so it cannot be clipped. To disable this error and scale the gradients by the non-finite norm anyway, set `error_if_nonfinite=False`",
        crate::ops::optim::py_float(norm_type)
    ))
}

/// Scales the gradients of `model`'s parameters so that their total `norm_type`-norm (the norm
/// of all gradients together, as if concatenated) is at most `max_norm`; returns that total
/// norm, before clipping, as a 0-dim tensor on the parameters' device (PyTorch's
/// `torch.nn.utils.clip_grad_norm_`).
///
/// As PyTorch: the norm of each gradient, then the norm of those norms (`norm_type` may be
/// `2.0`, `f64::INFINITY`, or any `p`), the coefficient `max_norm / (total_norm + 1e-6)`
/// clamped to at most 1, and every gradient multiplied by it, on the device: no host sync.
/// Each parameter is counted once, its gradient scaled once. A model without gradients gives
/// `0`. With `error_if_nonfinite`, a total norm that is `inf` or NaN is PyTorch's error (`The
/// total norm of order 2.0 for gradients from `parameters` is non-finite, ...`) and no
/// gradient changes; that check reads the norm on the host (one sync), as PyTorch's does.
///
/// ```
/// use devtype::prelude::*;
/// use devtype::nn::utils::try_clip_grad_norm_;
/// let w = Tensor::parameter(Tensor::<Cpu>::zeros([2], Cpu));
/// w.try_set_grad(Some(Tensor::from_vec(vec![f32::INFINITY, 1.0], [2], Cpu))).unwrap();
/// let err = try_clip_grad_norm_(&w, 1.0, 2.0, true).unwrap_err();
/// assert!(err.to_string().starts_with("The total norm of order 2.0 for gradients"));
/// ```
pub fn try_clip_grad_norm_<D: Device, E: Float, M: Module<D, E> + ?Sized>(
    model: &M,
    max_norm: f64,
    norm_type: f64,
    error_if_nonfinite: bool,
) -> Result<Tensor<D, E>> {
    let nodes = nodes_with_grad(model);
    let Some(dev) = device_of(model) else {
        return Err(Error::UnsupportedOperation(
            "clip_grad_norm_: the model has no parameters, so there is no device for the norm",
        ));
    };
    if nodes.is_empty() {
        return Tensor::try_full([], E::from_f64(0.0), dev);
    }
    let grads: Vec<RawTensor> = nodes.iter().filter_map(|n| n.grad()).collect();
    let acc = crate::ops::optim::acc_dtype(E::DTYPE);
    // The 2-norm of gradients on the CPU: one fused pass reading each element once.
    let fused = if norm_type == 2.0 {
        crate::ops::reduce::cpu_sum_of_squares::sum_of_squares(&grads)
    } else {
        None
    };
    let total = match fused {
        Some(sum) => RawTensor::from_cpu_vec(
            vec![E::from_f64(sum.sqrt())],
            crate::core::layout::Dims::EMPTY,
        ),
        None => {
            let norms = grads
                .iter()
                .map(|g| vector_norm(g, norm_type, acc))
                .collect::<Result<Vec<_>>>()?;
            let refs: Vec<&RawTensor> = norms.iter().collect();
            let stacked = crate::ops::cat::stack(&refs, 0)?;
            vector_norm(&stacked, norm_type, acc)?
        }
    };
    if error_if_nonfinite {
        let v = total.to_vec::<E>()?[0].to_f64();
        if !v.is_finite() {
            return Err(nonfinite_error(norm_type));
        }
    }
    let shifted = binary_scalar(
        Cow::Borrowed(&total),
        Scalar::Float(1e-6),
        BinaryOp::Add,
        false,
    )?;
    let coef = binary_scalar(
        Cow::Owned(shifted),
        Scalar::Float(max_norm),
        BinaryOp::Div,
        true,
    )?;
    let coef = binary_scalar(
        Cow::Owned(coef),
        Scalar::Float(1.0),
        BinaryOp::Minimum,
        false,
    )?;
    // Every new gradient is computed before any is stored: on an error, none has changed.
    let scaled = grads
        .iter()
        .map(|g| binary(Cow::Borrowed(g), Cow::Borrowed(&coef), BinaryOp::Mul))
        .collect::<Result<Vec<_>>>()?;
    for (node, g) in nodes.iter().zip(scaled) {
        node.set_grad(Some(g));
    }
    Ok(Tensor::from_raw(total, dev))
}

/// [`try_clip_grad_norm_`] with `error_if_nonfinite = false` (PyTorch's default): panics only
/// where it returns an error (out of memory, a model without parameters).
#[track_caller]
pub fn clip_grad_norm_<D: Device, E: Float, M: Module<D, E> + ?Sized>(
    model: &M,
    max_norm: f64,
    norm_type: f64,
) -> Tensor<D, E> {
    match try_clip_grad_norm_(model, max_norm, norm_type, false) {
        Ok(t) => t,
        Err(e) => panic!("{e}"),
    }
}

/// Clamps every gradient of `model`'s parameters to `[-clip_value, clip_value]`, in place
/// (PyTorch's `torch.nn.utils.clip_grad_value_`); NaN stays NaN, as in `clamp`. Each
/// parameter once; on the device, no sync. On an error no gradient has changed.
///
/// ```
/// use devtype::prelude::*;
/// use devtype::nn::utils::clip_grad_value_;
/// let w = Tensor::parameter(Tensor::<Cpu>::zeros([3], Cpu));
/// w.try_set_grad(Some(Tensor::from_vec(vec![-5.0, 0.5, 5.0], [3], Cpu))).unwrap();
/// clip_grad_value_(&w, 1.0);
/// assert_eq!(w.grad().unwrap().to_vec(), [-1.0, 0.5, 1.0]);
/// ```
pub fn try_clip_grad_value_<D: Device, E: Float, M: Module<D, E> + ?Sized>(
    model: &M,
    clip_value: f64,
) -> Result<()> {
    let nodes = nodes_with_grad(model);
    let clamped = nodes
        .iter()
        .filter_map(|n| n.grad())
        .map(|g| {
            let low = binary_scalar(
                Cow::Borrowed(&g),
                Scalar::Float(-clip_value),
                BinaryOp::Maximum,
                false,
            )?;
            binary_scalar(
                Cow::Owned(low),
                Scalar::Float(clip_value),
                BinaryOp::Minimum,
                false,
            )
        })
        .collect::<Result<Vec<_>>>()?;
    for (node, g) in nodes.iter().zip(clamped) {
        node.set_grad(Some(g));
    }
    Ok(())
}

/// [`try_clip_grad_value_`], panicking with the error's text where it returns one.
#[track_caller]
pub fn clip_grad_value_<D: Device, E: Float, M: Module<D, E> + ?Sized>(model: &M, clip_value: f64) {
    if let Err(e) = try_clip_grad_value_(model, clip_value) {
        panic!("{e}");
    }
}
