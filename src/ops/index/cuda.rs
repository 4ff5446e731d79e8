//! CUDA side of `index_select` and `gather` (`kernels/index.cu`).
//!
//! The CPU checks every index and fails with `index ... is out of bounds`; on the GPU that
//! check would make the host wait for the indices, so it is not made. Instead the kernels are
//! bounds-safe: they never read outside the input, and an element whose index is outside
//! `[0, size)` (as in PyTorch, negative indices are invalid) is NaN (floats) or 0 / `false`
//! (integers, booleans).

use crate::backend::cuda::kernels;
use crate::backend::cuda::{launch, memory};
use crate::core::cuda_storage::suffix;
use crate::core::error::Result;
use crate::core::layout::{Dims, MAX_DIMS};
use crate::core::raw::RawTensor;
use cudarc::driver::{DeviceRepr, PushKernelArg};

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
    kernel: &str,
    a: &RawTensor,
    index: &RawTensor,
    shape: Dims,
    args: IndexArgs,
) -> Result<RawTensor> {
    let (gpu, sa) = memory::gpu_of(kernel_op(kernel), a)?;
    let (_, si) = memory::gpu_of(kernel_op(kernel), index)?;
    memory::same_gpu(gpu, &[index])?;
    let n: usize = shape.iter().product();
    let out = memory::alloc_dtype(gpu, a.dtype, n)?;
    if n > 0 {
        let f = kernels::function(
            gpu,
            &crate::ops::kernels::INDEX,
            &format!("{kernel}_{}", suffix(a.dtype)),
        )?;
        let (po, pa, pi, count) = (
            out.device_ptr(),
            memory::element_ptr(a, sa),
            memory::element_ptr(index, si),
            n as u64,
        );
        let mut b = gpu.stream.launch_builder(f);
        b.arg(&po).arg(&pa).arg(&pi).arg(&args).arg(&count);
        // SAFETY: `index_select_<T>` / `gather_<T>(T* out, const T* a, const i64* index,
        // IndexArgs, u64 n)` match; `args` describes `a` and `index` with their own strides
        // (every index offset stays inside `index`), reads of `a` are bounds-checked on the
        // device against `dim_size`, and `out` holds `n` elements.
        unsafe { b.launch(launch::grid(gpu, n, 1)) }
            .map_err(|e| gpu.error("cuLaunchKernel(index)", e))?;
    }
    Ok(memory::tensor_from_storage(out, shape, gpu.ordinal))
}

fn kernel_op(kernel: &str) -> &'static str {
    if kernel == "gather" {
        "gather"
    } else {
        "index_select"
    }
}

pub(crate) fn index_select(
    a: &RawTensor,
    d: usize,
    index: &RawTensor,
    shape: Dims,
) -> Result<RawTensor> {
    if a.rank() == 0 {
        // A 0-dim input: the output is its one value.
        return crate::ops::copy::cuda::contiguous(a);
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
    run("index_select", a, index, shape, args)
}

pub(crate) fn gather(a: &RawTensor, d: usize, index: &RawTensor, shape: Dims) -> Result<RawTensor> {
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
    run("gather", a, index, shape, args)
}
