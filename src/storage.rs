//! The one storage enum behind every tensor: host memory or device memory.

use crate::cpu::storage::CpuStorage;
use crate::cuda::storage::CudaStorage;

/// Where a tensor's values are.
pub(crate) enum Storage {
    /// Host memory.
    Cpu(CpuStorage),
    /// Memory of one GPU.
    Cuda(CudaStorage),
}
