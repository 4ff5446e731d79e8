//! PyTorch's two device checks, run before any output is allocated or any kernel queued.

use crate::core::error::{Error, Result};
use crate::core::raw::RawTensor;
use crate::device::DynDevice;

/// The element-wise rule (`TensorIterator::compute_types`): the first non-CPU device is the
/// common one; with `allow_cpu_scalar`, one CPU 0-dim input may join a GPU op.
///
/// Returns the common device.
#[inline]
pub(crate) fn same_device_elementwise(
    operands: &[&RawTensor],
    allow_cpu_scalar: bool,
) -> Result<DynDevice> {
    let first = operands[0].device;
    if operands.iter().all(|t| t.device == first) {
        return Ok(first);
    }
    let common = operands
        .iter()
        .map(|t| t.device)
        .find(|d| !d.is_cpu())
        .unwrap_or(DynDevice::cpu());
    let mut cpu_scalars = 0;
    for t in operands {
        if !common.is_cpu() && allow_cpu_scalar && t.rank() == 0 && t.device.is_cpu() {
            if cpu_scalars == 1 {
                return Err(Error::TooManyCpuScalars);
            }
            cpu_scalars += 1;
        } else if t.device != common {
            return Err(Error::DeviceMismatch {
                first: common,
                second: t.device,
            });
        }
    }
    Ok(common)
}

/// The argument rule (`check_and_update_common_device`): the first argument's device is the
/// common one, and the first argument that differs is named, with PyTorch's method name.
#[inline]
pub(crate) fn same_device_arguments(
    method: &'static str,
    args: &[(&'static str, &RawTensor)],
) -> Result<DynDevice> {
    let common = args[0].1.device;
    for (name, t) in &args[1..] {
        if t.device != common {
            return Err(Error::ArgumentDeviceMismatch {
                common,
                found: t.device,
                argument: name,
                method,
            });
        }
    }
    Ok(common)
}
