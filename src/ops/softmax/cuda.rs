//! CUDA side of softmax: one block per row (`kernels/softmax.cu`).

use crate::error::Result;
use crate::tensor::raw::RawTensor;

pub(crate) fn softmax(a: &RawTensor, _log: bool) -> Result<RawTensor> {
    Err(crate::cuda::unsupported("softmax", a))
}
