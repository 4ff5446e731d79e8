//! CPU kernels for creation.

use super::Fill;
use crate::backend::cpu::strided::for_each_chunk;
use crate::core::error::Result;
use crate::core::layout::Dims;
use crate::core::pool::zeroed_vec;
use crate::core::raw::RawTensor;
use crate::core::{DType, Element};
use crate::random;

pub(crate) fn create(shape: Dims, dtype: DType, fill: Fill) -> Result<RawTensor> {
    fn go<T: Element>(shape: Dims, fill: Fill) -> Result<RawTensor> {
        let numel: usize = shape.iter().product();
        let zero = matches!(fill, Fill::Constant(s) if s.is_zero());
        let mut out = if zero {
            zeroed_vec::<T>(numel)?
        } else {
            T::pool().take(numel)?
        };
        match fill {
            Fill::Constant(_) if zero => {}
            Fill::Constant(v) => out.fill(T::from_scalar(v)),
            Fill::Range { start, step } => for_each_chunk(&mut out, |s, c| {
                for (i, o) in c.iter_mut().enumerate() {
                    *o = T::from_f64(start + (s + i) as f64 * step);
                }
            }),
            Fill::Uniform(random::Draw { seed, offset, .. }) => {
                // The largest value below one of the element type, so that rounding never
                // reaches 1.0: [0, 1) as PyTorch's `rand`.
                let top = match T::DTYPE {
                    DType::F32 => random::F32_BELOW_ONE,
                    DType::F16 => 1.0 - f64::powi(2.0, -11),
                    DType::BF16 => 1.0 - f64::powi(2.0, -8),
                    _ => 1.0,
                };
                for_each_chunk(&mut out, |s, c| {
                    for (i, o) in c.iter_mut().enumerate() {
                        *o = T::from_f64(random::uniform(seed, offset + (s + i) as u64).min(top));
                    }
                })
            }
            Fill::Normal(random::Draw { seed, offset, .. }) => for_each_chunk(&mut out, |s, c| {
                let offset = offset.div_ceil(2);
                for (i, o) in c.iter_mut().enumerate() {
                    *o = T::from_f64(random::normal(seed, offset + (s + i) as u64));
                }
            }),
        }
        Ok(RawTensor::from_cpu_vec(out, shape))
    }
    match dtype {
        DType::F32 => go::<f32>(shape, fill),
        DType::F64 => go::<f64>(shape, fill),
        DType::I64 => go::<i64>(shape, fill),
        DType::Bool => go::<bool>(shape, fill),
        DType::F16 => go::<half::f16>(shape, fill),
        DType::BF16 => go::<half::bf16>(shape, fill),
    }
}

impl super::CreationKernel for crate::ops::backend::CpuBackend {
    #[inline(always)]
    fn create(self, shape: Dims, dtype: DType, fill: Fill) -> Result<RawTensor> {
        create(shape, dtype, fill)
    }
}
