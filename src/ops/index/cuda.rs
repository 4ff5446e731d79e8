//! CUDA side of `index_select` and `gather` (`kernels/index.cu`).

use crate::error::Result;
use crate::tensor::layout::Dims;
use crate::tensor::raw::RawTensor;

pub(crate) fn index_select(a: &RawTensor, _d: usize, _index: &RawTensor, _shape: Dims) -> Result<RawTensor> {
    Err(crate::cuda::unsupported("index_select", a))
}

pub(crate) fn gather(a: &RawTensor, _d: usize, _index: &RawTensor, _shape: Dims) -> Result<RawTensor> {
    Err(crate::cuda::unsupported("gather", a))
}
