//! CUDA side of matrix products: cuBLAS strided-batched GEMM on views, no copies.

use super::MatmulPlan;
use crate::error::Result;
use crate::tensor::raw::RawTensor;

pub(crate) fn matmul(a: &RawTensor, _b: &RawTensor, _plan: &MatmulPlan) -> Result<RawTensor> {
    Err(crate::cuda::unsupported("matmul", a))
}
