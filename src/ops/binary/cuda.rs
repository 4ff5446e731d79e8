//! CUDA side of element-wise arithmetic and comparisons (`kernels/binary.cu`).

use super::{BinaryOp, CompareOp};
use crate::error::Result;
use crate::tensor::layout::Dims;
use crate::tensor::raw::RawTensor;

pub(crate) fn binary(a: &RawTensor, _b: &RawTensor, _shape: Dims, _op: BinaryOp) -> Result<RawTensor> {
    Err(crate::cuda::unsupported("binary", a))
}

pub(crate) fn binary_scalar(a: &RawTensor, _s: f64, _op: BinaryOp, _scalar_first: bool) -> Result<RawTensor> {
    Err(crate::cuda::unsupported("binary_scalar", a))
}

pub(crate) fn compare(a: &RawTensor, _b: &RawTensor, _shape: Dims, _op: CompareOp) -> Result<RawTensor> {
    Err(crate::cuda::unsupported("compare", a))
}

pub(crate) fn compare_scalar(a: &RawTensor, _s: f64, _op: CompareOp) -> Result<RawTensor> {
    Err(crate::cuda::unsupported("compare_scalar", a))
}
