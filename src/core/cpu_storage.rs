//! Host memory of a tensor, one variant per element type.

use super::pool::PooledVec;
use crate::core::DType;

/// The values of a CPU tensor.
pub enum CpuStorage {
    F32(PooledVec<f32>),
    F64(PooledVec<f64>),
    I64(PooledVec<i64>),
    Bool(PooledVec<bool>),
    F16(PooledVec<half::f16>),
    BF16(PooledVec<half::bf16>),
}

impl CpuStorage {
    /// True when the values sit inside the storage (a few elements, no heap buffer).
    #[inline]
    pub(crate) fn is_inline(&self) -> bool {
        match self {
            CpuStorage::F32(v) => v.is_inline(),
            CpuStorage::F64(v) => v.is_inline(),
            CpuStorage::I64(v) => v.is_inline(),
            CpuStorage::Bool(v) => v.is_inline(),
            CpuStorage::F16(v) => v.is_inline(),
            CpuStorage::BF16(v) => v.is_inline(),
        }
    }

    /// The (page-locked) host block the values sit in, if they sit in one.
    pub(crate) fn host_block(&self) -> Option<&super::pinned::HostBlock> {
        match self {
            CpuStorage::F32(v) => v.host_block(),
            CpuStorage::F64(v) => v.host_block(),
            CpuStorage::I64(v) => v.host_block(),
            CpuStorage::Bool(v) => v.host_block(),
            CpuStorage::F16(v) => v.host_block(),
            CpuStorage::BF16(v) => v.host_block(),
        }
    }

    pub(crate) fn dtype(&self) -> DType {
        match self {
            CpuStorage::F32(_) => DType::F32,
            CpuStorage::F64(_) => DType::F64,
            CpuStorage::I64(_) => DType::I64,
            CpuStorage::Bool(_) => DType::Bool,
            CpuStorage::F16(_) => DType::F16,
            CpuStorage::BF16(_) => DType::BF16,
        }
    }
}
