//! CUDA side of `cat`: each input is copied through its strides into its slab of the output
//! (`copy_<dtype>` of `kernels/copy.cu`), one launch per non-empty input.

use crate::backend::cuda::memory;
use crate::core::error::Result;
use crate::core::layout::{contiguous_strides, Dims};
use crate::core::raw::RawTensor;

pub(crate) fn cat(tensors: &[&RawTensor], d: usize, shape: Dims) -> Result<RawTensor> {
    let (gpu, _) = memory::gpu_of("cat", tensors[0])?;
    memory::same_gpu(gpu, tensors)?;
    let dtype = tensors[0].dtype;
    let out = memory::alloc_dtype(gpu, dtype, shape.iter().product())?;
    let strides = contiguous_strides(&shape);
    let base = out.device_ptr();
    let mut start = 0usize;
    for t in tensors {
        let (_, storage) = memory::gpu_of("cat", t)?;
        let slab = base + (start * strides[d] * dtype.size_in_bytes()) as u64;
        crate::ops::copy::cuda::copy_strided(
            gpu,
            dtype,
            t.shape(),
            (slab, &strides),
            (memory::element_ptr(t, storage), &t.layout.strides),
        )?;
        start += t.shape()[d];
    }
    Ok(memory::tensor_from_storage(out, shape, gpu.ordinal))
}
