//! CUDA side of `index_select` and `gather` (`kernels/index.cu`).
//!
//! The CPU checks every index and fails with `index ... is out of bounds`; on the GPU that
//! check would make the host wait for the indices, so it is not made. Instead the kernels are
//! bounds-safe: they never read outside the input, and an element whose index is outside
//! `[0, size)` (as in PyTorch, negative indices are invalid) is NaN (floats) or 0 / `false`
//! (integers, booleans).

use crate::backend::cuda::context::GpuContext;
use crate::backend::cuda::kernels::KernelFile;
use crate::backend::cuda::launch::{self, Kernel};
use crate::backend::cuda::memory;
use crate::core::cuda_storage::suffix;
use crate::core::error::Result;
use crate::core::layout::{Dims, MAX_DIMS};
use crate::core::raw::RawTensor;
use crate::ops::kernels::{typed, ALL_TYPES};
use cudarc::driver::DeviceRepr;

/// `kernels/index.cu`: `index_select_<T>` and `gather_<T>`.
pub(crate) static KERNELS: KernelFile = KernelFile {
    file: "index.cu",
    source: include_str!("../../../kernels/index.cu"),
    names: || {
        let mut n = Vec::new();
        typed(&mut n, "index_select", &ALL_TYPES);
        typed(&mut n, "gather", &ALL_TYPES);
        n
    },
};

/// `IndexArgs` of `kernels/index.cu`.
#[repr(C)]
#[derive(Clone, Copy)]
struct IndexArgs {
    rank: u32,
    dim: u32,
    shape: [u64; MAX_DIMS],
    a_strides: [u64; MAX_DIMS],
    index_strides: [u64; MAX_DIMS],
    a_dim_stride: u64,
    dim_size: u64,
}

// SAFETY: `#[repr(C)]` with only integer fields, laid out as `IndexArgs` in `kernels/index.cu`.
unsafe impl DeviceRepr for IndexArgs {}

fn dims(values: &[usize]) -> [u64; MAX_DIMS] {
    let mut out = [0u64; MAX_DIMS];
    for (o, &v) in out.iter_mut().zip(values) {
        *o = v as u64;
    }
    out
}

fn run(
    gpu: &'static GpuContext,
    kernel: &str,
    a: &RawTensor,
    index: &RawTensor,
    shape: Dims,
    args: IndexArgs,
) -> Result<RawTensor> {
    let n: usize = shape.iter().product();
    let out = memory::alloc_dtype(gpu, a.dtype, n)?;
    let name = format!("{kernel}_{}", suffix(a.dtype));
    // index_select_<T> / gather_<T>(T* out, const T* a, const i64* index, IndexArgs A, u64 n):
    // `args` describes `a` and `index` with their own strides (every index offset stays inside
    // `index`), reads of `a` are bounds-checked on the device against `dim_size`, and `out`
    // holds `n` elements.
    launch::indexed(
        gpu,
        Kernel::new(&KERNELS, &name, "cuLaunchKernel(index)"),
        [out.device_ptr(), memory::ptr(a)?, memory::ptr(index)?],
        &args,
        n,
    )?;
    Ok(memory::tensor_from_storage(out, shape, gpu.ordinal))
}

pub(crate) fn index_select(
    gpu: &'static GpuContext,
    a: &RawTensor,
    d: usize,
    index: &RawTensor,
    shape: Dims,
) -> Result<RawTensor> {
    if a.rank() == 0 {
        // A 0-dim input: the output is its one value.
        return crate::ops::copy::cuda::contiguous(gpu, a);
    }
    let mut index_strides = [0u64; MAX_DIMS];
    index_strides[d] = if index.rank() == 1 {
        index.layout.strides[0] as u64
    } else {
        0
    };
    let args = IndexArgs {
        rank: a.rank() as u32,
        dim: d as u32,
        shape: dims(&shape),
        a_strides: dims(&a.layout.strides),
        index_strides,
        a_dim_stride: a.layout.strides[d] as u64,
        dim_size: a.shape()[d] as u64,
    };
    run(gpu, "index_select", a, index, shape, args)
}

pub(crate) fn gather(
    gpu: &'static GpuContext,
    a: &RawTensor,
    d: usize,
    index: &RawTensor,
    shape: Dims,
) -> Result<RawTensor> {
    let (a_strides, a_dim_stride, dim_size) = if a.rank() == 0 {
        ([0u64; MAX_DIMS], 0, 1)
    } else {
        (
            dims(&a.layout.strides),
            a.layout.strides[d] as u64,
            a.shape()[d] as u64,
        )
    };
    let args = IndexArgs {
        rank: shape.len() as u32,
        dim: d as u32,
        shape: dims(&shape),
        a_strides,
        index_strides: dims(&index.layout.strides),
        a_dim_stride,
        dim_size,
    };
    run(gpu, "gather", a, index, shape, args)
}

impl super::IndexKernel for crate::ops::backend::CudaBackend {
    #[inline(always)]
    fn index_select(
        self,
        a: &RawTensor,
        d: usize,
        index: &RawTensor,
        shape: Dims,
    ) -> Result<RawTensor> {
        index_select(self.0, a, d, index, shape)
    }
    #[inline(always)]
    fn gather(self, a: &RawTensor, d: usize, index: &RawTensor, shape: Dims) -> Result<RawTensor> {
        gather(self.0, a, d, index, shape)
    }
}
