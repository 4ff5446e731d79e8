//! The CUDA backend on `cudarc`: one context and stream per GPU, shared by the process.
//!
//! The driver is loaded at run time, so devtype builds and runs on machines without CUDA:
//! [`Cuda::open`](crate::Cuda::open) then returns an error, never panics.

pub(crate) mod context;
pub(crate) mod storage;

pub use context::{device_count, is_available};

use crate::error::Result;

/// Waits for all work queued on GPU `ordinal` (PyTorch's `torch.cuda.synchronize(ordinal)`).
pub fn synchronize(ordinal: usize) -> Result<()> {
    context::get(ordinal)?.synchronize()
}

/// The error for a CUDA op the backend does not run yet.
pub(crate) fn unsupported(op: &'static str, t: &crate::tensor::raw::RawTensor) -> crate::Error {
    crate::Error::Cuda {
        context: op,
        name: format!("no CUDA kernel for {op} on {} ({})", t.device, t.dtype),
        code: -1,
    }
}
