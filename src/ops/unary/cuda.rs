//! CUDA side of element-wise math (`kernels/unary.cu`).

use super::UnaryOp;
use crate::error::Result;
use crate::tensor::raw::RawTensor;

pub(crate) fn unary(a: &RawTensor, _op: UnaryOp) -> Result<RawTensor> {
    Err(crate::cuda::unsupported("unary", a))
}
