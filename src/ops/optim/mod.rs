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
