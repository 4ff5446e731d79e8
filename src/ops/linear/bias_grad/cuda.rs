//! CUDA side of the bias gradient: the sum over every dimension but the last, as a column
//! reduction of the reduce kernels (`kernels/reduce.cu`), which split long columns over the
//! whole GPU.

use crate::backend::cuda::context::GpuContext;
use crate::core::error::Result;
use crate::core::raw::RawTensor;
use crate::ops::reduce::{self, ReduceOp};

pub(crate) fn bias_grad(gpu: &'static GpuContext, grad: &RawTensor) -> Result<RawTensor> {
    if grad.rank() == 1 {
        // Nothing to sum over (an empty `dims` would mean "all dims" to `reduce`).
        return crate::ops::copy::cuda::contiguous_or_self(gpu, grad);
    }
    let dims: Vec<isize> = (0..grad.rank() as isize - 1).collect();
    reduce::reduce(grad, &dims, false, ReduceOp::Sum)
}

impl super::BiasGradKernel for crate::ops::backend::CudaBackend {
    #[inline(always)]
    fn bias_grad(self, grad: &RawTensor) -> Result<RawTensor> {
        bias_grad(self.0, grad)
    }
}
