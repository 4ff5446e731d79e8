//! Device memory of a tensor, one variant per element type.

use crate::tensor::DType;
use cudarc::driver::CudaSlice;

/// The values of a CUDA tensor, in the device's memory.
pub(crate) enum CudaStorage {
    F32(CudaSlice<f32>),
    F64(CudaSlice<f64>),
    I64(CudaSlice<i64>),
    Bool(CudaSlice<bool>),
}

impl CudaStorage {
    pub(crate) fn dtype(&self) -> DType {
        match self {
            CudaStorage::F32(_) => DType::F32,
            CudaStorage::F64(_) => DType::F64,
            CudaStorage::I64(_) => DType::I64,
            CudaStorage::Bool(_) => DType::Bool,
        }
    }
}
