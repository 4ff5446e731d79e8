//! CUDA side of `scatter_add` and `index_add` (`kernels/scatter.cu`): a zeroed output and one
//! thread per source element adding into it atomically. Both ops use the same kernel:
//! `index_add` passes an index that only varies along `dim`.
//!
//! Indices outside the dimension (the CPU's `index ... is out of bounds`) are skipped instead
//! of reported, since checking would make the host wait; the kernel never writes out of bounds.

use crate::backend::cuda::context::GpuContext;
use crate::backend::cuda::kernels::KernelFile;
use crate::backend::cuda::launch::{self, Kernel};
use crate::backend::cuda::memory;
use crate::core::cuda_storage::suffix;
use crate::core::error::Result;
use crate::core::layout::{contiguous_strides, Dims, MAX_DIMS};
use crate::core::raw::RawTensor;
use crate::ops::copy::cuda::{narrow, widen};
use crate::ops::kernels::{typed, WIDE_FLOAT_TYPES};
use cudarc::driver::DeviceRepr;

/// `kernels/scatter.cu`: `scatter_add_<T>` (also `index_add`'s kernel).
pub(crate) static KERNELS: KernelFile = KernelFile {
    file: "scatter.cu",
    source: include_str!("../../../../kernels/scatter.cu"),
    names: || {
        let mut n = Vec::new();
        typed(&mut n, "scatter_add", &WIDE_FLOAT_TYPES);
        n
    },
};

/// `ScatterArgs` of `kernels/scatter.cu`.
#[repr(C)]
#[derive(Clone, Copy)]
struct ScatterArgs {
    rank: u32,
    dim: u32,
    shape: [u64; MAX_DIMS],
    index_strides: [u64; MAX_DIMS],
    src_strides: [u64; MAX_DIMS],
    out_shape: [u64; MAX_DIMS],
    out_strides: [u64; MAX_DIMS],
    out_dim_stride: u64,
    dim_size: u64,
}

// SAFETY: `#[repr(C)]` with only integer fields, laid out as `ScatterArgs` in
// `kernels/scatter.cu`.
unsafe impl DeviceRepr for ScatterArgs {}

fn dims(values: &[usize]) -> [u64; MAX_DIMS] {
    let mut out = [0u64; MAX_DIMS];
    for (o, &v) in out.iter_mut().zip(values) {
        *o = v as u64;
    }
    out
}

/// A zeroed tensor of `shape` on the source's GPU, with `args` describing where each source
/// element goes.
fn run(
    gpu: &'static GpuContext,
    shape: Dims,
    index: &RawTensor,
    src: &RawTensor,
    args: ScatterArgs,
) -> Result<RawTensor> {
    let out = memory::alloc_zeros_dtype(gpu, src.dtype, shape.iter().product())?;
    let n = src.numel();
    if n > 0 && shape.iter().product::<usize>() > 0 {
        let name = format!("scatter_add_{}", suffix(src.dtype));
        // scatter_add_<T>(T* out, const T* src, const i64* index, ScatterArgs A, u64 n): `src`
        // and `index` are views described by `args` (every offset inside their buffers); every
        // output coordinate is checked on the device against `out_shape` and `dim_size`, so
        // the atomic adds stay inside `out`.
        launch::indexed(
            gpu,
            Kernel::new(&KERNELS, &name, "cuLaunchKernel(scatter_add)"),
            [out.device_ptr(), memory::ptr(src)?, memory::ptr(index)?],
            &args,
            n,
        )?;
    }
    Ok(memory::tensor_from_storage(out, shape, gpu.ordinal))
}

pub(crate) fn scatter_add(
    gpu: &'static GpuContext,
    shape: Dims,
    dim: usize,
    index: &RawTensor,
    src: &RawTensor,
) -> Result<RawTensor> {
    if src.dtype.is_half() {
        // f16/bf16: the f32 kernel (f32 atomic adds) on a widened copy, each sum rounded once.
        let sums = scatter_add(gpu, shape, dim, index, &widen(gpu, src)?)?;
        return narrow(gpu, sums, src.dtype);
    }
    let rank = src.rank();
    let args = if shape.is_empty() {
        // A 0-dim output: every source element adds into its one value (index 0 or -1).
        ScatterArgs {
            rank: rank as u32,
            dim: rank as u32,
            shape: dims(src.shape()),
            index_strides: dims(&index.layout.strides),
            src_strides: dims(&src.layout.strides),
            out_shape: [u64::MAX; MAX_DIMS],
            out_strides: [0; MAX_DIMS],
            out_dim_stride: 0,
            dim_size: 1,
        }
    } else {
        let out_strides = contiguous_strides(&shape);
        ScatterArgs {
            rank: rank as u32,
            dim: dim as u32,
            shape: dims(src.shape()),
            index_strides: dims(&index.layout.strides),
            src_strides: dims(&src.layout.strides),
            out_shape: dims(&shape),
            out_strides: dims(&out_strides),
            out_dim_stride: out_strides[dim] as u64,
            dim_size: shape[dim] as u64,
        }
    };
    run(gpu, shape, index, src, args)
}

pub(crate) fn index_add(
    gpu: &'static GpuContext,
    shape: Dims,
    dim: usize,
    index: &RawTensor,
    src: &RawTensor,
) -> Result<RawTensor> {
    if src.dtype.is_half() {
        let sums = index_add(gpu, shape, dim, index, &widen(gpu, src)?)?;
        return narrow(gpu, sums, src.dtype);
    }
    let rank = src.rank();
    // The index (one value per slice along `dim`) seen along the source's dims.
    let index_stride = if index.rank() == 1 {
        index.layout.strides[0] as u64
    } else {
        0
    };
    let args = if shape.is_empty() {
        let mut index_strides = [0u64; MAX_DIMS];
        if rank > 0 {
            index_strides[0] = index_stride;
        }
        ScatterArgs {
            rank: rank as u32,
            dim: rank as u32,
            shape: dims(src.shape()),
            index_strides,
            src_strides: dims(&src.layout.strides),
            out_shape: [u64::MAX; MAX_DIMS],
            out_strides: [0; MAX_DIMS],
            out_dim_stride: 0,
            dim_size: 1,
        }
    } else {
        let mut index_strides = [0u64; MAX_DIMS];
        index_strides[dim] = index_stride;
        let out_strides = contiguous_strides(&shape);
        ScatterArgs {
            rank: rank as u32,
            dim: dim as u32,
            shape: dims(src.shape()),
            index_strides,
            src_strides: dims(&src.layout.strides),
            out_shape: dims(&shape),
            out_strides: dims(&out_strides),
            out_dim_stride: out_strides[dim] as u64,
            dim_size: shape[dim] as u64,
        }
    };
    run(gpu, shape, index, src, args)
}

impl super::ScatterKernel for crate::ops::backend::CudaBackend {
    #[inline(always)]
    fn scatter_add(
        self,
        shape: Dims,
        dim: usize,
        index: &RawTensor,
        src: &RawTensor,
    ) -> Result<RawTensor> {
        scatter_add(self.0, shape, dim, index, src)
    }
    #[inline(always)]
    fn index_add(
        self,
        shape: Dims,
        dim: usize,
        index: &RawTensor,
        src: &RawTensor,
    ) -> Result<RawTensor> {
        index_add(self.0, shape, dim, index, src)
    }
}
