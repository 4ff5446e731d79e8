//! CUDA side of `where` (`kernels/where_cond.cu`).

use crate::error::Result;
use crate::tensor::layout::Dims;
use crate::tensor::raw::RawTensor;

pub(crate) fn where_cond(cond: &RawTensor, _a: &RawTensor, _b: &RawTensor, _shape: Dims) -> Result<RawTensor> {
    Err(crate::cuda::unsupported("where", cond))
}
