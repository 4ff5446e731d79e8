//! CUDA side of `cat`: strided copies into slabs of the output (`kernels/copy.cu`).

use crate::error::Result;
use crate::tensor::layout::Dims;
use crate::tensor::raw::RawTensor;

pub(crate) fn cat(tensors: &[&RawTensor], _d: usize, _shape: Dims) -> Result<RawTensor> {
    Err(crate::cuda::unsupported("cat", tensors[0]))
}
