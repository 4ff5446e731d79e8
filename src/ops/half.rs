//! The CPU side of the 16-bit floats (`f16`, `bf16`): PyTorch computes them in `f32` (its
//! `opmath_type`) and rounds once, when the result is written. Element-wise families do that
//! per element (their `Arith`/`UnaryMath` impls); the families that accumulate (sums, means,
//! softmax, matmul, losses, scatter-adds) run their `f32` kernel on a widened copy of the
//! operands, [`widen`], and round its result once, [`narrow`].

use crate::core::cpu_storage::CpuStorage;
use crate::core::dtype::Half;
use crate::core::error::Result;
use crate::core::raw::RawTensor;
use crate::core::storage::{SharedStorage, Storage};
use crate::core::DType;

fn widen_slice<H: Half>(data: &[H]) -> Result<Vec<f32>> {
    let mut out = <f32 as crate::core::dtype::sealed::ElementStorage>::pool().take(data.len())?;
    for (o, &x) in out.iter_mut().zip(data) {
        *o = x.widen();
    }
    Ok(out)
}

/// A CPU `f16`/`bf16` tensor as `f32`, exactly, with the same layout (offset and strides): the
/// whole storage is widened, so a view stays the same view. Other dtypes come back as they are.
pub(crate) fn widen(t: &RawTensor) -> Result<RawTensor> {
    let data = match t.cpu_storage() {
        Some(CpuStorage::F16(v)) => widen_slice(v.as_slice())?,
        Some(CpuStorage::BF16(v)) => widen_slice(v.as_slice())?,
        _ => return Ok(t.clone()),
    };
    Ok(RawTensor {
        storage: SharedStorage::new(Storage::Cpu(CpuStorage::F32(
            crate::core::pool::PooledVec::new(data),
        ))),
        layout: t.layout,
        dtype: DType::F32,
        device: t.device,
    })
}

/// `widen` for an optional operand.
pub(crate) fn widen_opt(t: Option<&RawTensor>) -> Result<Option<RawTensor>> {
    t.map(widen).transpose()
}

/// A CPU `f32` result rounded (to nearest, ties to even) to `dtype`; any layout.
pub(crate) fn narrow(t: RawTensor, dtype: DType) -> Result<RawTensor> {
    if t.dtype == dtype {
        return Ok(t);
    }
    crate::ops::copy::cpu::cast(&t, dtype)
}
