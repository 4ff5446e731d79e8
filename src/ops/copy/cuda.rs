//! CUDA side of copies: uploads, downloads, peer copies, strided gathers, casts.

use crate::error::Result;
use crate::tensor::raw::RawTensor;
use crate::tensor::DType;

pub(crate) fn contiguous(t: &RawTensor) -> Result<RawTensor> {
    Err(crate::cuda::unsupported("contiguous", t))
}

pub(crate) fn upload(t: &RawTensor, ordinal: usize) -> Result<RawTensor> {
    crate::cuda::context::get(ordinal)?;
    Err(crate::cuda::unsupported("upload", t))
}

pub(crate) fn download(t: &RawTensor) -> Result<RawTensor> {
    Err(crate::cuda::unsupported("download", t))
}

pub(crate) fn device_to_device(t: &RawTensor, ordinal: usize) -> Result<RawTensor> {
    crate::cuda::context::get(ordinal)?;
    Err(crate::cuda::unsupported("device_to_device", t))
}

pub(crate) fn cast(t: &RawTensor, _dtype: DType) -> Result<RawTensor> {
    Err(crate::cuda::unsupported("cast", t))
}
