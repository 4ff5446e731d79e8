//! CUDA side of reductions (`kernels/reduce.cu`).

use super::{ReduceOp, ReducePlan};
use crate::error::Result;
use crate::tensor::raw::RawTensor;

pub(crate) fn reduce(a: &RawTensor, _plan: &ReducePlan, _op: ReduceOp) -> Result<RawTensor> {
    Err(crate::cuda::unsupported("reduce", a))
}

pub(crate) fn arg_reduce(a: &RawTensor, _plan: &ReducePlan, _max: bool) -> Result<RawTensor> {
    Err(crate::cuda::unsupported("arg_reduce", a))
}
