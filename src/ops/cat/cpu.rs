//! CPU kernel for `cat`: each input is copied into its slab of the output.

use crate::core::error::Result;
use crate::core::layout::{Dims, Layout};
use crate::core::raw::RawTensor;
use crate::core::{DType, Element};
use crate::ops::copy::copy_into;

fn typed<T: Element>(tensors: &[&RawTensor], d: usize, shape: Dims) -> Result<RawTensor> {
    let mut out = T::pool().take(shape.iter().product())?;
    let full = Layout::contiguous(shape);
    let mut start = 0;
    for t in tensors {
        let mut slab = full;
        slab.offset = start * full.strides[d];
        slab.shape[d] = t.shape()[d];
        copy_into(
            &mut out,
            &slab,
            t.cpu_slice::<T>().expect("dtype checked"),
            &t.layout,
        );
        start += t.shape()[d];
    }
    Ok(RawTensor::from_cpu_vec(out, shape))
}

pub(crate) fn cat(tensors: &[&RawTensor], d: usize, shape: Dims) -> Result<RawTensor> {
    match tensors[0].dtype {
        DType::F32 => typed::<f32>(tensors, d, shape),
        DType::F64 => typed::<f64>(tensors, d, shape),
        DType::I64 => typed::<i64>(tensors, d, shape),
        DType::Bool => typed::<bool>(tensors, d, shape),
        DType::F16 => typed::<half::f16>(tensors, d, shape),
        DType::BF16 => typed::<half::bf16>(tensors, d, shape),
    }
}

impl super::CatKernel for crate::ops::backend::CpuBackend {
    #[inline(always)]
    fn cat(self, tensors: &[&RawTensor], d: usize, shape: Dims) -> Result<RawTensor> {
        cat(tensors, d, shape)
    }
}
