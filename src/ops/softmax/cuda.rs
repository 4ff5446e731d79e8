//! CUDA side of softmax: one block per row of the contiguous input (`kernels/softmax.cu`).

use crate::backend::cuda::context::GpuContext;
use crate::backend::cuda::kernels::KernelFile;
use crate::backend::cuda::launch::{self, Kernel};
use crate::backend::cuda::memory;
use crate::core::cuda_storage::suffix;
use crate::core::error::Result;
use crate::core::raw::RawTensor;
use crate::ops::kernels::{typed, FLOAT_TYPES};

/// `kernels/softmax.cu`: `softmax_<T>`.
pub(crate) static KERNELS: KernelFile = KernelFile {
    file: "softmax.cu",
    source: include_str!("../../../kernels/softmax.cu"),
    names: || {
        let mut n = Vec::new();
        typed(&mut n, "softmax", &FLOAT_TYPES);
        n
    },
};

/// `a` is contiguous (the caller moved the softmax dim last); rows are its last dimension.
pub(crate) fn softmax(gpu: &'static GpuContext, a: RawTensor, log: bool) -> Result<RawTensor> {
    let a = crate::ops::copy::cuda::contiguous_or_self(gpu, &a)?;
    let n = a.numel();
    let out = memory::alloc_dtype(gpu, a.dtype, n)?;
    let cols = *a.shape().last().expect("rank >= 1");
    if n > 0 {
        let name = format!("softmax_{}", suffix(a.dtype));
        // softmax_<T>(T* out, const T* in, u64 rows, u64 cols, u32 log_softmax): `a` is
        // contiguous with rows * cols elements from its address, `out` holds as many.
        launch::per_row(
            gpu,
            Kernel::new(&KERNELS, &name, "cuLaunchKernel(softmax)"),
            [out.device_ptr(), memory::ptr(&a)?],
            (n / cols, cols),
            512,
            (log as u32,),
        )?;
    }
    Ok(memory::tensor_from_storage(
        out,
        a.layout.shape,
        gpu.ordinal,
    ))
}

impl super::SoftmaxKernel for crate::ops::backend::CudaBackend {
    #[inline(always)]
    fn softmax(self, a: RawTensor, log: bool) -> Result<RawTensor> {
        softmax(self.0, a, log)
    }
}
