//! CPU side of `where`: one strided walk over the three operands broadcast to the output.

use crate::backend::cpu::strided::map3;
use crate::core::error::Result;
use crate::core::layout::Dims;
use crate::core::raw::RawTensor;
use crate::core::{DType, Element};

fn go<T: Element>(c: &RawTensor, a: &RawTensor, b: &RawTensor, shape: Dims) -> Result<RawTensor> {
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

pub(crate) fn where_cond(
    cond: &RawTensor,
    a: &RawTensor,
    b: &RawTensor,
    shape: Dims,
) -> Result<RawTensor> {
    match a.dtype {
        DType::F32 => go::<f32>(cond, a, b, shape),
        DType::F64 => go::<f64>(cond, a, b, shape),
        DType::I64 => go::<i64>(cond, a, b, shape),
        DType::Bool => go::<bool>(cond, a, b, shape),
        DType::F16 => go::<half::f16>(cond, a, b, shape),
        DType::BF16 => go::<half::bf16>(cond, a, b, shape),
    }
}

impl super::WhereKernel for crate::ops::backend::CpuBackend {
    #[inline(always)]
    fn where_cond(
        self,
        c: &RawTensor,
        a: &RawTensor,
        b: &RawTensor,
        shape: Dims,
    ) -> Result<RawTensor> {
        where_cond(c, a, b, shape)
    }
}
