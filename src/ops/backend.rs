//! The one place that looks at where operands are: [`on`] (and [`on_device`] for creation)
//! finds the device of a set of operands or returns PyTorch's device-mismatch error, and
//! `dispatch!` runs a family's kernel entry on that device's backend, [`CpuBackend`] or
//! [`CudaBackend`].
//!
//! This is candle's `BackendStorage` match fitted to devtype: candle matches `(Cpu, Cpu)`,
//! `(Cuda, Cuda)` and returns a device-mismatch error for anything else in every method; here
//! that match is written once ([`on`]) and returns a [`Device`] holding what the backend needs
//! (the GPU's context). The kernel entries are dfdx's shape: each op family declares its
//! kernel trait in its `mod.rs` (`BinaryKernel`, `ReduceKernel`, ...) and implements it for
//! [`CpuBackend`] in its `cpu.rs` and for [`CudaBackend`] in its `cuda.rs`; this file knows no
//! family. `dispatch!` monomorphises the call for each backend, so the CPU path is a static,
//! inlined call.

use crate::backend::cuda::context::{self, GpuContext};
use crate::core::error::{Error, Result};
use crate::core::raw::RawTensor;
use crate::core::storage::Storage;
use crate::core::DynDevice;

/// Where a set of operands is, with what its backend needs.
#[derive(Clone, Copy)]
pub(crate) enum Device {
    Cpu,
    Cuda(&'static GpuContext),
}

/// The device every operand is on, or PyTorch's device-mismatch error naming the first non-CPU
/// device and the first operand on another one. This is the only place the ops look at a
/// storage's variant. The caller passes at least one operand.
///
/// The devices decide the mismatch; the storages decide the backend: host memory runs on the
/// CPU, device memory on its GPU, and operands whose storages disagree (with equal devices)
/// are an internal error, never a CUDA launch. (Host memory labelled `cuda:N` runs on the CPU,
/// as it always did: the fronts' tests fake GPU tensors that way.)
#[inline(always)]
pub(crate) fn on(operands: &[&RawTensor]) -> Result<Device> {
    let first = operands[0];
    let device = first.device.cuda_index();
    for t in &operands[1..] {
        if t.device.cuda_index() != device {
            return Err(mismatch(first.device, t.device));
        }
    }
    let all = |cpu: bool| {
        operands[1..]
            .iter()
            .all(|t| matches!(&*t.storage, Storage::Cpu(_)) == cpu)
    };
    match (&*first.storage, device) {
        (Storage::Cpu(_), _) if all(true) => Ok(Device::Cpu),
        (Storage::Cuda(_), Some(ordinal)) if all(false) => Ok(Device::Cuda(context::get(ordinal)?)),
        (_, _) => Err(Error::Internal {
            context: "ops::backend::on",
            message: format!(
                "tensors on {} hold memory of different kinds (host and device)",
                first.device
            ),
        }),
    }
}

/// The device to create a tensor on.
pub(crate) fn on_device(device: DynDevice) -> Result<Device> {
    match device.resolved().cuda_index() {
        None => Ok(Device::Cpu),
        Some(ordinal) => Ok(Device::Cuda(context::get(ordinal)?)),
    }
}

/// PyTorch's `Expected all tensors to be on the same device, but found at least two devices,
/// cuda:0 and cpu!`: the non-CPU device of the two first.
#[cold]
fn mismatch(a: DynDevice, b: DynDevice) -> Error {
    let (first, second) = if a.is_cpu() { (b, a) } else { (a, b) };
    Error::DeviceMismatch { first, second }
}

/// `dispatch!([a, b], |be| be.binary(a, b, shape, op))`: finds the device of the operands once
/// ([`on`], `?` on a mismatch) and runs the body with `be` bound to that device's backend
/// ([`CpuBackend`] or [`CudaBackend`]; the family's kernel trait must be in scope),
/// monomorphised for each (no dynamic call on the CPU path).
/// `dispatch!(device = d, |be| ...)` does the same for a device value (creation).
macro_rules! dispatch {
    (@run $device:expr, |$be:ident| $body:expr) => {{
        match $device {
            $crate::ops::backend::Device::Cpu => {
                let $be = $crate::ops::backend::CpuBackend;
                $body
            }
            $crate::ops::backend::Device::Cuda(gpu) => {
                let $be = $crate::ops::backend::CudaBackend(gpu);
                $body
            }
        }
    }};
    (device = $d:expr, |$be:ident| $body:expr) => {
        dispatch!(@run $crate::ops::backend::on_device($d)?, |$be| $body)
    };
    ([$($t:expr),+ $(,)?], |$be:ident| $body:expr) => {
        dispatch!(@run $crate::ops::backend::on(&[$($t),+])?, |$be| $body)
    };
}

/// Host memory.
#[derive(Clone, Copy)]
pub(crate) struct CpuBackend;

/// One GPU, whose context the CUDA kernels launch on.
#[derive(Clone, Copy)]
pub(crate) struct CudaBackend(pub(crate) &'static GpuContext);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::layout::Dims;

    #[test]
    fn a_mismatch_names_the_non_cpu_device_first() {
        let (cpu, gpu0, gpu1) = (DynDevice::cpu(), DynDevice::cuda(0), DynDevice::cuda(1));
        for (a, b, first, second) in [
            (cpu, gpu0, gpu0, cpu),
            (gpu0, cpu, gpu0, cpu),
            (gpu0, gpu1, gpu0, gpu1),
        ] {
            assert_eq!(mismatch(a, b), Error::DeviceMismatch { first, second });
        }
    }

    #[test]
    fn host_operands_dispatch_to_the_cpu() {
        let a = RawTensor::from_cpu_vec(vec![1.0f32, 2.0], Dims::shape(&[2]).unwrap());
        let b = RawTensor::from_cpu_vec(vec![3i64], Dims::EMPTY);
        assert!(matches!(on(&[&a, &b]), Ok(Device::Cpu)));
        assert!(matches!(on_device(DynDevice::cpu()), Ok(Device::Cpu)));
        // Host memory labelled cuda:0 (the fronts' tests' fake GPU tensors) runs on the CPU,
        // never in CUDA code; with a tensor labelled cpu it is a device mismatch.
        let mut fake = a.clone();
        fake.device = DynDevice::cuda(0);
        assert!(matches!(on(&[&fake, &fake]), Ok(Device::Cpu)));
        assert_eq!(
            on(&[&a, &fake]).err(),
            Some(Error::DeviceMismatch {
                first: DynDevice::cuda(0),
                second: DynDevice::cpu()
            })
        );
    }
}
