//! CUDA side of softmax: one block per row of the contiguous input (`kernels/softmax.cu`).

use crate::backend::cuda::kernels;
use crate::backend::cuda::{launch, memory};
use crate::core::cuda_storage::suffix;
use crate::core::error::Result;
use crate::core::raw::RawTensor;
use cudarc::driver::PushKernelArg;

/// `a` is contiguous (the caller moved the softmax dim last); rows are its last dimension.
pub(crate) fn softmax(a: &RawTensor, log: bool) -> Result<RawTensor> {
    let a = crate::ops::copy::cuda::contiguous_or_self(a)?;
    let (gpu, sa) = memory::gpu_of("softmax", &a)?;
    let n = a.numel();
    let out = memory::alloc_dtype(gpu, a.dtype, n)?;
    let cols = *a.shape().last().expect("rank >= 1");
    if n > 0 {
        let rows = n / cols;
        let f = kernels::function(
            gpu,
            &crate::ops::kernels::SOFTMAX,
            &format!("softmax_{}", suffix(a.dtype)),
        )?;
        let cfg = launch::per_row(gpu, rows, cols, 512);
        let (po, pa, rows, cols, log) = (
            out.device_ptr(),
            memory::element_ptr(&a, sa),
            rows as u64,
            cols as u64,
            log as u32,
        );
        let mut b = gpu.stream.launch_builder(f);
        b.arg(&po).arg(&pa).arg(&rows).arg(&cols).arg(&log);
        // SAFETY: `softmax_<T>(T* out, const T* in, u64 rows, u64 cols, u32 log)` matches; `a`
        // is contiguous with rows * cols elements from its address, `out` holds as many, and
        // the block size is a multiple of 32 as the kernel's block reduction needs.
        unsafe { b.launch(cfg) }.map_err(|e| gpu.error("cuLaunchKernel(softmax)", e))?;
    }
    Ok(memory::tensor_from_storage(
        out,
        a.layout.shape,
        gpu.ordinal,
    ))
}
