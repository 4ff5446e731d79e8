//! The one storage enum behind every tensor: host memory or device memory.

use crate::cpu::storage::CpuStorage;
use crate::cuda::storage::CudaStorage;
use crate::tensor::DType;

/// Where a tensor's values are.
pub(crate) enum Storage {
    /// Host memory.
    Cpu(CpuStorage),
    /// Memory of one GPU.
    Cuda(CudaStorage),
}

impl Storage {
    pub(crate) fn dtype(&self) -> DType {
        match self {
            Storage::Cpu(s) => s.dtype(),
            Storage::Cuda(s) => s.dtype(),
        }
    }
}
