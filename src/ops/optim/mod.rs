//! Fused optimizer updates, written into the parameter's own buffer when nothing else holds
//! it (the usual case after `backward`), with the optimizer state next to the parameter.

pub(super) mod cpu;
pub(super) mod cuda;

use crate::core::error::{Error, Result};
use crate::core::raw::RawTensor;
use crate::core::DType;

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

/// The type an optimizer computes a parameter's update in, PyTorch's `opmath_type`: `f32` for
/// the 16-bit floats, the type itself otherwise. Every value is read, widened, updated in
/// `Acc` with `Acc` hyper-parameters and rounded once when it is stored, as PyTorch's fused
/// optimizers do: in `f16`, `eps = 1e-8` would round to zero and in `bf16` `beta2 = 0.999` to
/// one, so the hyper-parameters must never be rounded to the parameter's type.
pub(crate) trait OpMath: crate::core::Float {
    /// The compute type.
    type Acc: crate::core::Float;
    /// Widens exactly.
    fn up(self) -> Self::Acc;
    /// Rounds to nearest, ties to even.
    fn down(v: Self::Acc) -> Self;
}

macro_rules! opmath_self {
    ($($t:ty),*) => {$(
        impl OpMath for $t {
            type Acc = $t;
            #[inline(always)]
            fn up(self) -> $t {
                self
            }
            #[inline(always)]
            fn down(v: $t) -> $t {
                v
            }
        }
    )*};
}
opmath_self!(f32, f64);

macro_rules! opmath_half {
    ($($t:ty),*) => {$(
        impl OpMath for $t {
            type Acc = f32;
            #[inline(always)]
            fn up(self) -> f32 {
                self.to_f32()
            }
            #[inline(always)]
            fn down(v: f32) -> $t {
                <$t>::from_f32(v)
            }
        }
    )*};
}
opmath_half!(half::f16, half::bf16);

/// The per-step scalars both Adam kernels take, in the parameters' compute type
/// ([`OpMath::Acc`]): computed once here so the CPU and the GPU update with identical numbers.
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
    pub(crate) fn scalars<T: crate::core::Element>(&self) -> AdamScalars<T> {
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

/// Formats `x` as Python's `repr(float)` does, so texts match PyTorch's f-strings:
/// `-0.1`, `-1.0`, `1e-05`, `nan`, `inf`.
pub(crate) fn py_float(x: f64) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.into();
    }
    // Rust's `{:?}` is the shortest round-trip form and switches to exponents where Python
    // does (below 1e-4, from 1e16); only the exponent's spelling differs.
    crate::core::format::c_style_exponent(format!("{x:?}"))
}

fn invalid(what: &str, value: f64) -> Error {
    Error::InvalidOptimizerArgument(format!("{what}: {}", py_float(value)))
}

/// `value >= 0`, written so that NaN fails too (PyTorch's `not 0.0 <= value`).
fn non_negative(value: f64, what: &str) -> Result<()> {
    if value >= 0.0 {
        Ok(())
    } else {
        Err(invalid(what, value))
    }
}

impl SgdUpdate {
    /// PyTorch's checks of `torch.optim.SGD.__init__`, in its order and words; NaN is
    /// rejected too (PyTorch lets a NaN learning rate through and fills the model with NaN).
    pub(crate) fn validate(&self) -> Result<()> {
        non_negative(self.lr, "Invalid learning rate")?;
        non_negative(self.momentum, "Invalid momentum value")?;
        non_negative(self.weight_decay, "Invalid weight_decay value")?;
        if self.dampening.is_nan() {
            return Err(invalid("Invalid dampening value", self.dampening));
        }
        if self.nesterov && (self.momentum <= 0.0 || self.dampening != 0.0) {
            return Err(Error::InvalidOptimizerArgument(
                "Nesterov momentum requires a momentum and zero dampening".into(),
            ));
        }
        Ok(())
    }
}

impl AdamUpdate {
    /// PyTorch's checks of `torch.optim.Adam.__init__` (and `AdamW`), in its order and words;
    /// NaN fails each of them, as in PyTorch.
    pub(crate) fn validate(&self) -> Result<()> {
        non_negative(self.lr, "Invalid learning rate")?;
        non_negative(self.eps, "Invalid epsilon value")?;
        for (i, beta) in [self.beta1, self.beta2].into_iter().enumerate() {
            if !(0.0..1.0).contains(&beta) {
                return Err(invalid(
                    &format!("Invalid beta parameter at index {i}"),
                    beta,
                ));
            }
        }
        non_negative(self.weight_decay, "Invalid weight_decay value")
    }
}

/// Checks that a gradient fits its parameter: same shape, same floating dtype, same device.
pub(crate) fn check(param: &RawTensor, grad: &RawTensor) -> Result<()> {
    if param.device != grad.device {
        return Err(Error::DeviceMismatch {
            first: param.device,
            second: grad.device,
        });
    }
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

/// Checks that the state buffer `state` of parameter `name` fits it: same shape, dtype and
/// device. The kernels read and write the state at every index of the parameter.
pub(crate) fn check_state(
    name: &str,
    state: &'static str,
    param: &RawTensor,
    buffer: &RawTensor,
) -> Result<()> {
    if buffer.shape() != param.shape() || buffer.dtype != param.dtype {
        return Err(Error::OptimizerStateMismatch {
            name: name.to_string(),
            state,
            expected: param.shape().to_vec(),
            found: buffer.shape().to_vec(),
            expected_dtype: param.dtype,
            found_dtype: buffer.dtype,
        });
    }
    if buffer.device != param.device {
        return Err(Error::DeviceMismatch {
            first: param.device,
            second: buffer.device,
        });
    }
    Ok(())
}

/// Every precondition of one SGD step of parameter `name`, checked before anything changes.
pub(crate) fn check_sgd(
    name: &str,
    param: &RawTensor,
    grad: &RawTensor,
    momentum_buffer: Option<&RawTensor>,
    update: &SgdUpdate,
) -> Result<()> {
    update.validate()?;
    check(param, grad)?;
    match momentum_buffer {
        Some(b) if update.momentum != 0.0 => check_state(name, "momentum_buffer", param, b),
        _ => Ok(()),
    }
}

/// Every precondition of one Adam step of parameter `name`, checked before anything changes.
pub(crate) fn check_adam(
    name: &str,
    param: &RawTensor,
    grad: &RawTensor,
    exp_avg: Option<&RawTensor>,
    exp_avg_sq: Option<&RawTensor>,
    update: &AdamUpdate,
) -> Result<()> {
    update.validate()?;
    check(param, grad)?;
    if let Some(m) = exp_avg {
        check_state(name, "exp_avg", param, m)?;
    }
    if let Some(v) = exp_avg_sq {
        check_state(name, "exp_avg_sq", param, v)?;
    }
    if exp_avg.is_some() != exp_avg_sq.is_some() {
        return Err(Error::Autograd(format!(
            "optimizer state of parameter \"{name}\" has only one of exp_avg and exp_avg_sq"
        )));
    }
    Ok(())
}

/// Checks `skip`: one `bool` on the parameter's device, which the kernels read before they
/// write anything.
fn check_skip(param: &RawTensor, skip: Option<&RawTensor>) -> Result<()> {
    let Some(skip) = skip else { return Ok(()) };
    if skip.device != param.device {
        return Err(Error::DeviceMismatch {
            first: param.device,
            second: skip.device,
        });
    }
    if skip.numel() != 1 || skip.dtype != DType::Bool {
        return Err(Error::Shape(format!(
            "optimizer: the skip flag must be one bool, got {:?} of {}",
            skip.shape(),
            skip.dtype
        )));
    }
    Ok(())
}

/// One SGD step on `param`; `momentum_buffer` is created on the first step when momentum is used.
/// Where `skip` (one `bool` on the device, a `GradScaler`'s found-inf flag) holds, the kernel
/// changes nothing: a buffer this step creates stays zeros. The flag is read on the device, so
/// the host never waits for it.
///
/// Checks its own preconditions first ([`check_sgd`]): no caller can make a kernel read or
/// write past a buffer.
pub(crate) fn sgd(
    name: &str,
    param: &mut RawTensor,
    grad: &RawTensor,
    momentum_buffer: &mut Option<RawTensor>,
    update: &SgdUpdate,
    skip: Option<&RawTensor>,
) -> Result<()> {
    check_sgd(name, param, grad, momentum_buffer.as_ref(), update)?;
    check_skip(param, skip)?;
    dispatch!([param, grad], |be| be.sgd(
        param,
        grad,
        momentum_buffer,
        update,
        skip
    ))
}

/// The compute type of a parameter dtype ([`OpMath::Acc`]): `f64` for `f64`, `f32` otherwise.
pub(crate) fn acc_dtype(dtype: DType) -> DType {
    if dtype == DType::F64 {
        DType::F64
    } else {
        DType::F32
    }
}

/// Checks `corrections`: `[step_size, 1 / sqrt(1 - beta2^t)]`, two values of the parameter's
/// compute type on its device.
fn check_corrections(param: &RawTensor, corrections: &RawTensor) -> Result<()> {
    if corrections.device != param.device {
        return Err(Error::DeviceMismatch {
            first: param.device,
            second: corrections.device,
        });
    }
    if corrections.numel() != 2 || corrections.dtype != acc_dtype(param.dtype) {
        return Err(Error::Shape(format!(
            "adam: bias corrections must be 2 values of {}, got {:?} of {}",
            acc_dtype(param.dtype),
            corrections.shape(),
            corrections.dtype
        )));
    }
    Ok(())
}

/// One Adam step on `param`; the moment estimates are created on the first step. With
/// `corrections` (`[lr / (1 - beta1^t), 1 / sqrt(1 - beta2^t)]` on the device, for a step
/// count kept there), the kernel reads the bias corrections from it instead of computing them
/// from `update.step` on the host.
///
/// Where `skip` holds, nothing changes, as for [`sgd`].
///
/// Checks its own preconditions first ([`check_adam`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn adam(
    name: &str,
    param: &mut RawTensor,
    grad: &RawTensor,
    exp_avg: &mut Option<RawTensor>,
    exp_avg_sq: &mut Option<RawTensor>,
    update: &AdamUpdate,
    corrections: Option<&RawTensor>,
    skip: Option<&RawTensor>,
) -> Result<()> {
    check_adam(
        name,
        param,
        grad,
        exp_avg.as_ref(),
        exp_avg_sq.as_ref(),
        update,
    )?;
    if let Some(c) = corrections {
        check_corrections(param, c)?;
    }
    check_skip(param, skip)?;
    dispatch!([param, grad], |be| be.adam(
        param,
        grad,
        exp_avg,
        exp_avg_sq,
        update,
        corrections,
        skip
    ))
}

/// The kernel entries of this family, one impl per backend: [`CpuBackend`](crate::ops::backend::CpuBackend)
/// in `cpu.rs`, [`CudaBackend`](crate::ops::backend::CudaBackend) in `cuda.rs`. The operands are on
/// that backend's device (`dispatch!` checked it) and the functions above planned shapes
/// and checked dtypes.
pub(crate) trait OptimKernel {
    fn sgd(
        self,
        param: &mut RawTensor,
        grad: &RawTensor,
        buffer: &mut Option<RawTensor>,
        u: &SgdUpdate,
        skip: Option<&RawTensor>,
    ) -> Result<()>;
    #[allow(clippy::too_many_arguments)]
    fn adam(
        self,
        param: &mut RawTensor,
        grad: &RawTensor,
        m: &mut Option<RawTensor>,
        v: &mut Option<RawTensor>,
        u: &AdamUpdate,
        corrections: Option<&RawTensor>,
        skip: Option<&RawTensor>,
    ) -> Result<()>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(values: &[f32], shape: &[usize]) -> RawTensor {
        RawTensor::from_vec(values.to_vec(), shape, crate::core::DynDevice::cpu()).unwrap()
    }

    const SGD: SgdUpdate = SgdUpdate {
        lr: 0.1,
        momentum: 0.9,
        dampening: 0.0,
        weight_decay: 0.0,
        nesterov: false,
    };

    #[test]
    fn kernels_refuse_state_of_another_shape_and_change_nothing() {
        let mut p = t(&[1.0, 2.0, 3.0], &[3]);
        let g = t(&[1.0, 1.0, 1.0], &[3]);
        let mut short = Some(t(&[0.0, 0.0], &[2]));
        let err = sgd("w", &mut p, &g, &mut short, &SGD, None).unwrap_err();
        assert!(matches!(err, Error::OptimizerStateMismatch { ref name, .. } if name == "w"));
        assert_eq!(p.to_vec::<f32>().unwrap(), [1.0, 2.0, 3.0]);
        let adam_update = AdamUpdate {
            lr: 0.1,
            beta1: 0.9,
            beta2: 0.999,
            eps: 1e-8,
            weight_decay: 0.0,
            decoupled: false,
            step: 1,
        };
        let (mut m, mut v) = (Some(t(&[0.0; 3], &[3])), Some(t(&[0.0; 4], &[4])));
        let err = adam("w", &mut p, &g, &mut m, &mut v, &adam_update, None, None).unwrap_err();
        assert!(err.to_string().contains("exp_avg_sq"), "{err}");
        assert_eq!(p.to_vec::<f32>().unwrap(), [1.0, 2.0, 3.0]);
        // A gradient of another shape with as many elements.
        let g2 = t(&[1.0, 1.0, 1.0], &[3, 1]);
        assert!(sgd("w", &mut p, &g2, &mut None, &SGD, None).is_err());
        // A state of another dtype.
        let mut f64_state = Some(
            RawTensor::from_vec(vec![0.0f64; 3], &[3], crate::core::DynDevice::cpu()).unwrap(),
        );
        assert!(sgd("w", &mut p, &g, &mut f64_state, &SGD, None).is_err());
        assert_eq!(p.to_vec::<f32>().unwrap(), [1.0, 2.0, 3.0]);
        // Hyper-parameters are the kernels' precondition too.
        let bad = SgdUpdate { lr: -1.0, ..SGD };
        assert!(sgd("w", &mut p, &g, &mut None, &bad, None).is_err());
        // So is the skip flag: one bool.
        let flags =
            RawTensor::from_vec(vec![false, false], &[2], crate::core::DynDevice::cpu()).unwrap();
        assert!(sgd("w", &mut p, &g, &mut None, &SGD, Some(&flags)).is_err());
        assert!(sgd("w", &mut p, &g, &mut None, &SGD, Some(&g)).is_err());
        assert_eq!(p.to_vec::<f32>().unwrap(), [1.0, 2.0, 3.0]);
    }

    #[test]
    fn floats_print_as_python_repr() {
        for (x, shown) in [
            (-0.1, "-0.1"),
            (-1.0, "-1.0"),
            (0.0, "0.0"),
            (-1e-5, "-1e-05"),
            (1e-4, "0.0001"),
            (1e16, "1e+16"),
            (1.5e300, "1.5e+300"),
            (123456.0, "123456.0"),
            (f64::NAN, "nan"),
            (f64::NEG_INFINITY, "-inf"),
        ] {
            assert_eq!(py_float(x), shown);
        }
    }
}
