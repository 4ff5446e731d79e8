//! CUDA side of `cat`: each input is copied through its strides into its slab of the output
//! (`copy_<dtype>` of `kernels/copy.cu`), one launch per non-empty input.

use crate::backend::cuda::context::GpuContext;
use crate::backend::cuda::memory;
use crate::core::error::Result;
use crate::core::layout::{contiguous_strides, Dims};
use crate::core::raw::RawTensor;

pub(crate) fn cat(
    gpu: &'static GpuContext,
    tensors: &[&RawTensor],
    d: usize,
    shape: Dims,
) -> Result<RawTensor> {
    let dtype = tensors[0].dtype;
    let out = memory::alloc_dtype(gpu, dtype, shape.iter().product())?;
    let strides = contiguous_strides(&shape);
    let base = out.device_ptr();
    let mut start = 0usize;
    for t in tensors {
        let slab = base + (start * strides[d] * dtype.size_in_bytes()) as u64;
        crate::ops::copy::cuda::copy_strided(
            gpu,
            dtype,
            t.shape(),
            (slab, &strides),
            (memory::ptr(t)?, &t.layout.strides),
        )?;
        start += t.shape()[d];
    }
    Ok(memory::tensor_from_storage(out, shape, gpu.ordinal))
}

impl super::CatKernel for crate::ops::backend::CudaBackend {
    #[inline(always)]
    fn cat(self, tensors: &[&RawTensor], d: usize, shape: Dims) -> Result<RawTensor> {
        cat(self.0, tensors, d, shape)
    }
}
