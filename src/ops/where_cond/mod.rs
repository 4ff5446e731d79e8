//! `where(cond, a, b)`: elements of `a` where `cond` holds, else of `b`, with broadcasting.

mod cuda;

use crate::backend::cpu::strided::map3;
use crate::core::error::{Error, Result};
use crate::core::layout::broadcast_shapes;
use crate::core::raw::RawTensor;
use crate::core::storage::Storage;
use crate::core::{DType, Element};

/// `cond ? a : b` element-wise.
pub(crate) fn where_cond(cond: &RawTensor, a: &RawTensor, b: &RawTensor) -> Result<RawTensor> {
    if cond.dtype != DType::Bool {
        return Err(Error::Shape(format!(
            "where expected condition to be a boolean tensor, but got a tensor with dtype {}",
            cond.dtype
        )));
    }
    if a.dtype != b.dtype {
        return Err(Error::DTypeMismatch {
            expected: a.dtype,
            found: b.dtype,
        });
    }
    let shape = broadcast_shapes(&broadcast_shapes(cond.shape(), a.shape())?, b.shape())?;
    match (&*cond.storage, &*a.storage, &*b.storage) {
        (Storage::Cpu(_), Storage::Cpu(_), Storage::Cpu(_)) => {
            fn go<T: Element>(
                c: &RawTensor,
                a: &RawTensor,
                b: &RawTensor,
                shape: crate::core::layout::Dims,
            ) -> Result<RawTensor> {
                let mut out = T::pool().take(shape.iter().product())?;
                map3(
                    (
                        c.cpu_slice::<bool>().expect("cpu"),
                        &c.layout.broadcast_to(&shape)?,
                    ),
                    (
                        a.cpu_slice::<T>().expect("cpu"),
                        &a.layout.broadcast_to(&shape)?,
                    ),
                    (
                        b.cpu_slice::<T>().expect("cpu"),
                        &b.layout.broadcast_to(&shape)?,
                    ),
                    &mut out,
                    |c, x, y| if c { x } else { y },
                );
                Ok(RawTensor::from_cpu_vec(out, shape))
            }
            match a.dtype {
                DType::F32 => go::<f32>(cond, a, b, shape),
                DType::F64 => go::<f64>(cond, a, b, shape),
                DType::I64 => go::<i64>(cond, a, b, shape),
                DType::Bool => go::<bool>(cond, a, b, shape),
            }
        }
        _ => cuda::where_cond(cond, a, b, shape),
    }
}
