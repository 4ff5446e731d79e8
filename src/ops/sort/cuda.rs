//! CUDA side of `cumsum` and `sort`/`topk` (`kernels/sort.cu`): one thread per line for the
//! scan, one per element (its rank in its line) for the sort.

use super::Lines;
use crate::backend::cuda::context::GpuContext;
use crate::backend::cuda::kernels::KernelFile;
use crate::backend::cuda::launch::{self, Kernel};
use crate::backend::cuda::memory;
use crate::core::cuda_storage::{slice_ptr, suffix};
use crate::core::error::Result;
use crate::core::layout::Dims;
use crate::core::raw::RawTensor;
use crate::ops::kernels::{typed, NUMERIC_TYPES};

/// `kernels/sort.cu`: `cumsum_<T>` and `sort_<T>`.
pub(crate) static KERNELS: KernelFile = KernelFile {
    file: "sort.cu",
    source: include_str!("../../../kernels/sort.cu"),
    names: || {
        let mut n = Vec::new();
        typed(&mut n, "cumsum", &NUMERIC_TYPES);
        typed(&mut n, "sort", &NUMERIC_TYPES);
        n
    },
};

pub(crate) fn cumsum(
    gpu: &'static GpuContext,
    a: &RawTensor,
    lines: Lines,
    reverse: bool,
) -> Result<RawTensor> {
    let shape = Dims::shape(a.shape())?;
    let out = memory::alloc_dtype(gpu, a.dtype, a.numel())?;
    let count = lines.outer * lines.inner;
    if a.numel() > 0 {
        let name = format!("cumsum_{}", suffix(a.dtype));
        // cumsum_<T>(T* out, const T* x, u64 lines, u64 n, u64 inner, u32 reverse): `x` is
        // contiguous (made so by the caller) with `lines * n` elements, as `out`.
        launch::flat(
            gpu,
            Kernel::new(&KERNELS, &name, "cuLaunchKernel(cumsum)"),
            [out.device_ptr(), memory::ptr(a)?],
            count,
            (lines.n as u64, lines.inner as u64, u32::from(reverse)),
            1,
        )?;
    }
    Ok(memory::tensor_from_storage(out, shape, gpu.ordinal))
}

pub(crate) fn sort(
    gpu: &'static GpuContext,
    a: &RawTensor,
    lines: Lines,
    descending: bool,
    k: usize,
    shape: Dims,
) -> Result<(RawTensor, RawTensor)> {
    let kept = lines.outer * lines.inner * k;
    let values = memory::alloc_dtype(gpu, a.dtype, kept)?;
    let indices = memory::alloc::<i64>(gpu, kept)?;
    if kept > 0 {
        let name = format!("sort_{}", suffix(a.dtype));
        // sort_<T>(T* values, i64* indices, const T* x, u64 total, u64 n, u64 inner, u64 k,
        // u32 descending): `x` is contiguous with `total = outer * n * inner` elements; the
        // outputs hold `outer * k * inner`, each written once (ranks are distinct).
        launch::flat(
            gpu,
            Kernel::new(&KERNELS, &name, "cuLaunchKernel(sort)"),
            [values.device_ptr(), slice_ptr(&indices), memory::ptr(a)?],
            a.numel(),
            (
                lines.n as u64,
                lines.inner as u64,
                k as u64,
                u32::from(descending),
            ),
            1,
        )?;
    }
    Ok((
        memory::tensor_from_storage(values, shape, gpu.ordinal),
        memory::tensor(indices, shape, gpu.ordinal),
    ))
}

impl super::SortKernel for crate::ops::backend::CudaBackend {
    #[inline(always)]
    fn cumsum(self, a: &RawTensor, lines: Lines, reverse: bool) -> Result<RawTensor> {
        cumsum(self.0, a, lines, reverse)
    }
    #[inline(always)]
    fn sort(
        self,
        a: &RawTensor,
        lines: Lines,
        descending: bool,
        k: usize,
        shape: Dims,
    ) -> Result<(RawTensor, RawTensor)> {
        sort(self.0, a, lines, descending, k, shape)
    }
}
