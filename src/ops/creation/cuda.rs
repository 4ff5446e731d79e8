//! CUDA side of creation: fill, range and random kernels (`kernels/creation.cu`).

use super::Fill;
use crate::error::Result;
use crate::tensor::layout::Dims;
use crate::tensor::raw::RawTensor;
use crate::tensor::DType;

pub(crate) fn create(_shape: Dims, _dtype: DType, ordinal: usize, _fill: Fill) -> Result<RawTensor> {
    crate::cuda::context::get(ordinal)?;
    Err(crate::Error::Cuda {
        context: "create",
        name: "no CUDA kernel for create".into(),
        code: -1,
    })
}
