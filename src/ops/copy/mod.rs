//! Copies: contiguous copies of strided views, moves between devices, element-type casts.

mod cpu;
mod cuda;

pub(crate) use cpu::copy_into;

use crate::device::DynDevice;
use crate::error::Result;
use crate::storage::Storage;
use crate::tensor::raw::RawTensor;
use crate::tensor::DType;

/// A contiguous copy of a strided view, on the same device.
pub(crate) fn contiguous(t: &RawTensor) -> Result<RawTensor> {
    match &*t.storage {
        Storage::Cpu(s) => Ok(cpu_dispatch!(s, |data: T| RawTensor::from_cpu_vec(
            cpu::gather_strided::<T>(data, &t.layout)?,
            t.layout.shape
        ))),
        Storage::Cuda(_) => cuda::contiguous(t),
    }
}

/// A copy on another device. `device` is resolved and differs from `t.device`.
pub(crate) fn to_device(t: &RawTensor, device: DynDevice) -> Result<RawTensor> {
    match (t.device.cuda_index(), device.cuda_index()) {
        (None, Some(ordinal)) => cuda::upload(&t.contiguous()?, ordinal),
        (Some(_), None) => cuda::download(t),
        (Some(_), Some(ordinal)) => cuda::device_to_device(t, ordinal),
        (None, None) => Ok(t.clone()),
    }
}

/// The values converted to another element type (PyTorch's `x.to(torch.float64)`).
pub(crate) fn cast(t: &RawTensor, dtype: DType) -> Result<RawTensor> {
    if t.dtype == dtype {
        return Ok(t.clone());
    }
    match &*t.storage {
        Storage::Cpu(s) => cpu_dispatch!(s, |data: T| cpu::cast::<T>(data, &t.layout, dtype)),
        Storage::Cuda(_) => cuda::cast(t, dtype),
    }
}
