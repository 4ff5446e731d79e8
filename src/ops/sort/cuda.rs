//! CUDA side of `cumsum` and `sort`/`topk` (`kernels/sort.cu`): one thread per line for the
//! scan; for the sort, a bitonic sort of each chunk of up to 2048 elements of a line in shared
//! memory, then segmented merge passes (one thread per element, its place found by a binary
//! search in the other run) until each line is one run, then the first `k` written out.

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

/// `kernels/sort.cu`: `cumsum_<T>` and `sort_chunks_<T>`, `sort_merge_<T>`, `sort_write_<T>`.
pub(crate) static KERNELS: KernelFile = KernelFile {
    file: "sort.cu",
    source: include_str!("../../../kernels/sort.cu"),
    names: || {
        let mut n = Vec::new();
        typed(&mut n, "cumsum", &NUMERIC_TYPES);
        typed(&mut n, "sort_chunks", &NUMERIC_TYPES);
        typed(&mut n, "sort_merge", &NUMERIC_TYPES);
        typed(&mut n, "sort_write", &NUMERIC_TYPES);
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

/// The most elements of a line one block sorts in shared memory (`SORT_CHUNK` in
/// `kernels/sort.cu`).
const SORT_CHUNK: usize = 2048;

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
        let sfx = suffix(a.dtype);
        let (n, count) = (lines.n, lines.outer * lines.inner);
        let total = a.numel();
        let desc = u32::from(descending);
        // Two line-contiguous buffers ([lines, n]) of values and indices, ping-ponged.
        let v = [
            memory::alloc_dtype(gpu, a.dtype, total)?,
            memory::alloc_dtype(gpu, a.dtype, total)?,
        ];
        let i = [
            memory::alloc::<i64>(gpu, total)?,
            memory::alloc::<i64>(gpu, total)?,
        ];
        let c = n.next_power_of_two().min(SORT_CHUNK);
        let chunks = n.div_ceil(c);
        let name = format!("sort_chunks_{sfx}");
        // sort_chunks_<T>(T* tv, i64* ti, const T* x, u64 rows, u64 c, u64 n, u64 inner,
        // u64 chunks, u32 descending): `x` is contiguous with `count * n` elements, `tv`/`ti`
        // hold as many; one block per (line, chunk) of `c` (a power of two, at most
        // SORT_CHUNK, the shared arrays' size) elements.
        launch::per_row(
            gpu,
            Kernel::new(&KERNELS, &name, "cuLaunchKernel(sort)"),
            [v[0].device_ptr(), slice_ptr(&i[0]), memory::ptr(a)?],
            (count * chunks, c),
            1024,
            (n as u64, lines.inner as u64, chunks as u64, desc),
        )?;
        let mut width = c;
        let mut cur = 0;
        let merge = format!("sort_merge_{sfx}");
        while width < n {
            // sort_merge_<T>(T* ov, i64* oi, const T* iv, const i64* ii, u64 total, u64 n,
            // u64 width, u32 descending): all four buffers hold `total` elements.
            let (src, dst) = (cur, 1 - cur);
            let (sv, dv, si, di) = (&v[src], &v[dst], &i[src], &i[dst]);
            launch::flat(
                gpu,
                Kernel::new(&KERNELS, &merge, "cuLaunchKernel(sort)"),
                [
                    dv.device_ptr(),
                    slice_ptr(di),
                    sv.device_ptr(),
                    slice_ptr(si),
                ],
                total,
                (n as u64, width as u64, desc),
                1,
            )?;
            cur = dst;
            width *= 2;
        }
        let name = format!("sort_write_{sfx}");
        // sort_write_<T>(T* values, i64* indices, const T* tv, const i64* ti, u64 total, u64 n,
        // u64 inner, u64 k): the outputs hold `total = count * k` elements, the sorted lines
        // `count * n`.
        launch::flat(
            gpu,
            Kernel::new(&KERNELS, &name, "cuLaunchKernel(sort)"),
            [
                values.device_ptr(),
                slice_ptr(&indices),
                v[cur].device_ptr(),
                slice_ptr(&i[cur]),
            ],
            kept,
            (n as u64, lines.inner as u64, k as u64),
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
