//! Fused optimizer updates, written into the parameter's own buffer when nothing else holds
//! it (the usual case after `backward`), with the optimizer state next to the parameter.

mod cpu;
mod cuda;

use crate::error::{Error, Result};
use crate::storage::Storage;
use crate::tensor::raw::RawTensor;

/// The hyper-parameters of one SGD update (`torch.optim.SGD`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct SgdUpdate {
    pub(crate) lr: f64,
    pub(crate) momentum: f64,
    pub(crate) dampening: f64,
    pub(crate) weight_decay: f64,
    pub(crate) nesterov: bool,
}

/// The hyper-parameters of one Adam update (`torch.optim.Adam`, or `AdamW` when `decoupled`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct AdamUpdate {
    pub(crate) lr: f64,
    pub(crate) beta1: f64,
    pub(crate) beta2: f64,
    pub(crate) eps: f64,
    pub(crate) weight_decay: f64,
    pub(crate) decoupled: bool,
    /// The step number, from 1.
    pub(crate) step: u64,
}

/// The per-step scalars both Adam kernels take, in the parameters' element type: computed
/// once here so the CPU and the GPU update with identical numbers.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AdamScalars<T> {
    pub(crate) b1: T,
    pub(crate) b2: T,
    pub(crate) one_b1: T,
    pub(crate) one_b2: T,
    pub(crate) eps: T,
    /// Weight decay added to the gradient (Adam); zero when decoupled.
    pub(crate) l2: T,
    /// The factor on the parameter before the step (AdamW); one when not decoupled.
    pub(crate) decay: T,
    /// `lr / (1 - beta1^t)`.
    pub(crate) step_size: T,
    /// `1 / sqrt(1 - beta2^t)`.
    pub(crate) inv_sqrt_bc2: T,
}

impl AdamUpdate {
    pub(crate) fn scalars<T: crate::tensor::Element>(&self) -> AdamScalars<T> {
        let t = self.step as i32;
        let bc1 = 1.0 - self.beta1.powi(t);
        let bc2 = 1.0 - self.beta2.powi(t);
        let (l2, decay) = if self.decoupled {
            (T::ZERO, T::from_f64(1.0 - self.lr * self.weight_decay))
        } else {
            (T::from_f64(self.weight_decay), T::ONE)
        };
        AdamScalars {
            b1: T::from_f64(self.beta1),
            b2: T::from_f64(self.beta2),
            one_b1: T::from_f64(1.0 - self.beta1),
            one_b2: T::from_f64(1.0 - self.beta2),
            eps: T::from_f64(self.eps),
            l2,
            decay,
            step_size: T::from_f64(self.lr / bc1),
            inv_sqrt_bc2: T::from_f64(1.0 / bc2.sqrt()),
        }
    }
}

fn check(param: &RawTensor, grad: &RawTensor) -> Result<()> {
    if param.shape() != grad.shape() {
        return Err(Error::Shape(format!(
            "optimizer: a gradient of shape {:?} for a parameter of shape {:?}",
            grad.shape(),
            param.shape()
        )));
    }
    if param.dtype != grad.dtype || !param.dtype.is_float() {
        return Err(Error::DTypeMismatch {
            expected: param.dtype,
            found: grad.dtype,
        });
    }
    Ok(())
}

/// One SGD step on `param`; `momentum_buffer` is created on the first step when momentum is used.
pub(crate) fn sgd(
    param: &mut RawTensor,
    grad: &RawTensor,
    momentum_buffer: &mut Option<RawTensor>,
    update: &SgdUpdate,
) -> Result<()> {
    check(param, grad)?;
    match (&*param.storage, &*grad.storage) {
        (Storage::Cpu(_), Storage::Cpu(_)) => cpu::sgd(param, grad, momentum_buffer, update),
        _ => cuda::sgd(param, grad, momentum_buffer, update),
    }
}

/// One Adam step on `param`; the moment estimates are created on the first step.
pub(crate) fn adam(
    param: &mut RawTensor,
    grad: &RawTensor,
    exp_avg: &mut Option<RawTensor>,
    exp_avg_sq: &mut Option<RawTensor>,
    update: &AdamUpdate,
) -> Result<()> {
    check(param, grad)?;
    match (&*param.storage, &*grad.storage) {
        (Storage::Cpu(_), Storage::Cpu(_)) => cpu::adam(param, grad, exp_avg, exp_avg_sq, update),
        _ => cuda::adam(param, grad, exp_avg, exp_avg_sq, update),
    }
}
