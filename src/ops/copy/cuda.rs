//! CUDA side of copies: uploads, downloads, peer copies, strided gathers, casts
//! (`kernels/copy.cu`).
//!
//! Only downloads make the host wait (they are how values reach the host); uploads, copies
//! between GPUs, strided copies and casts are queued on the device's stream.

use crate::backend::cuda::context::{self, driver_error, GpuContext};
use crate::backend::cuda::kernels::KernelFile;
use crate::backend::cuda::launch::{self, Kernel};
use crate::backend::cuda::pinned::EventFence;
use crate::backend::cuda::{memory, sync};
use crate::core::cuda_storage::{suffix, with_cuda_slice, with_dtype, with_host_slice};
use crate::core::error::Result;
use crate::core::pinned::Fence;
use crate::core::raw::RawTensor;
use crate::core::DType;
use crate::ops::kernels::{typed, ALL_TYPES};
use std::sync::Arc;

/// `kernels/copy.cu`: `copy_<T>` (strided copies, also for `cat` and `linear`'s bias rows)
/// and `cast_<from>_<to>`.
pub(crate) static KERNELS: KernelFile = KernelFile {
    file: "copy.cu",
    source: include_str!("../../../kernels/copy.cu"),
    names: || {
        let mut n = Vec::new();
        typed(&mut n, "copy", &ALL_TYPES);
        for from in ALL_TYPES {
            typed(&mut n, &format!("cast_{from}"), &ALL_TYPES);
        }
        n
    },
};

/// Copies a contiguous CPU tensor to GPU `ordinal`. The host memory is staged by the driver
/// before the call returns, so nothing waits for the GPU.
pub(crate) fn upload(t: &RawTensor, ordinal: usize) -> Result<RawTensor> {
    let gpu = context::get(ordinal)?;
    let storage = t.cpu_storage().expect("upload takes a CPU tensor");
    let range = t
        .layout
        .contiguous_range()
        .expect("upload takes a contiguous tensor");
    let n = range.len();
    with_host_slice!(storage, "copy_", |data: T| {
        let mut slice = memory::alloc::<T>(gpu, n)?;
        if n > 0 {
            gpu.stream
                .memcpy_htod(&data[range], &mut slice)
                .map_err(|e| gpu.error("cuMemcpyHtoDAsync", e))?;
        }
        Ok(memory::tensor(slice, t.layout.shape, ordinal))
    })
}

/// Copies a GPU tensor to the host: waits for the GPU (a counted host sync, subject to the
/// sync debug mode).
pub(crate) fn download(t: &RawTensor) -> Result<RawTensor> {
    let (gpu, _) = memory::gpu_of("download", t)?;
    let shape = t.layout.shape;
    if t.numel() == 0 {
        return Ok(with_dtype!(t.dtype, "copy_", |T| RawTensor::from_cpu_vec(
            Vec::<T>::new(),
            shape
        )));
    }
    sync::before_implicit_sync()?;
    let src = contiguous_or_self(gpu, t)?;
    let (_, storage) = memory::gpu_of("download", &src)?;
    let range = src.layout.contiguous_range().expect("contiguous");
    let out = with_cuda_slice!(storage, |slice: T| {
        // The host buffer is allocated fallibly: a download too large for the host is an
        // error, not an abort.
        let mut host: Vec<T> = crate::core::pool::zeroed_vec::<T>(range.len())?;
        gpu.stream
            .memcpy_dtoh(&slice.slice(range), &mut host)
            .map_err(|e| gpu.error("cuMemcpyDtoHAsync", e))?;
        RawTensor::from_cpu_vec(host, shape)
    });
    // The copy into pageable memory is complete when the call returns; synchronising also
    // reports any earlier asynchronous kernel error here, where the value is read.
    gpu.synchronize()?;
    sync::record_sync();
    Ok(out)
}

/// Copies a GPU tensor to GPU `ordinal` (peer copy, queued on both streams, no host wait).
pub(crate) fn device_to_device(t: &RawTensor, ordinal: usize) -> Result<RawTensor> {
    let (src_gpu, _) = memory::gpu_of("device_to_device", t)?;
    let dst_gpu = context::get(ordinal)?;
    let src = contiguous_or_self(src_gpu, t)?;
    if src_gpu.ordinal == ordinal {
        return Ok(src);
    }
    let (_, storage) = memory::gpu_of("device_to_device", &src)?;
    let n = src.numel();
    let out = memory::alloc_dtype(dst_gpu, src.dtype, n)?;
    if n > 0 {
        // The destination stream waits for everything queued on the source so far (the source
        // values are written), ...
        let written = src_gpu
            .stream
            .record_event(None)
            .map_err(|e| src_gpu.error("cuEventRecord", e))?;
        dst_gpu
            .stream
            .wait(&written)
            .map_err(|e| dst_gpu.error("cuStreamWaitEvent", e))?;
        let bytes = n * src.dtype.size_in_bytes();
        let src_ptr = memory::element_ptr(&src, storage);
        let dst_ptr = out.device_ptr();
        dst_gpu.bind()?;
        // SAFETY: both addresses are live allocations of at least `bytes` bytes on their
        // devices (the source range is inside `src`'s storage, the destination was just
        // allocated with `n` elements), both contexts are valid, and the copy is queued on the
        // destination's stream after the source's writes (event above).
        unsafe {
            cudarc::driver::result::memcpy_peer_async(
                dst_gpu.context.cu_ctx(),
                dst_ptr,
                src_gpu.context.cu_ctx(),
                src_ptr,
                bytes,
                dst_gpu.stream.cu_stream(),
            )
        }
        .map_err(|e| dst_gpu.error("cuMemcpyPeerAsync", e))?;
        // ... and the source stream waits for the copy, so the source buffer is not freed (in
        // its stream's order) or overwritten before the copy has read it.
        let copied = dst_gpu
            .stream
            .record_event(None)
            .map_err(|e| dst_gpu.error("cuEventRecord", e))?;
        src_gpu
            .stream
            .wait(&copied)
            .map_err(|e| driver_error("cuStreamWaitEvent", e))?;
    }
    Ok(memory::tensor_from_storage(out, src.layout.shape, ordinal))
}

/// The values converted to `dtype` (PyTorch's `x.to(torch.float64)`), as the CPU converts:
/// through `f64`, saturating to integers, `!= 0` to booleans, through `f32` (rounded to
/// nearest-even) to `f16`/`bf16`.
pub(crate) fn cast(gpu: &'static GpuContext, t: &RawTensor, dtype: DType) -> Result<RawTensor> {
    let n = t.numel();
    let out = memory::alloc_dtype(gpu, dtype, n)?;
    let name = format!("cast_{}_{}", suffix(t.dtype), suffix(dtype));
    // cast_<from>_<to>(To* dst, const From* src, Strided<1> L, u64 n)
    launch::strided(
        gpu,
        Kernel::new(&KERNELS, &name, "cuLaunchKernel(cast)"),
        out.device_ptr(),
        [memory::ptr(t)?],
        &launch::strided_layout::<1>(&t.layout.shape, [&t.layout.strides]),
        n,
        (),
        4,
    )?;
    Ok(memory::tensor_from_storage(
        out,
        t.layout.shape,
        gpu.ordinal,
    ))
}

/// A GPU `f16`/`bf16` tensor as a contiguous `f32` copy (exact); other dtypes come back as
/// they are. With [`narrow`], how the families that accumulate (losses, scatter-adds) run
/// their `f32` kernels for the 16-bit floats, as the CPU does (`ops::half`).
pub(crate) fn widen(gpu: &'static GpuContext, t: &RawTensor) -> Result<RawTensor> {
    if t.dtype.is_half() {
        cast(gpu, t, DType::F32)
    } else {
        Ok(t.clone())
    }
}

/// An `f32` result rounded once (to nearest, ties to even) to `dtype`; a no-op when it already
/// has that dtype.
pub(crate) fn narrow(gpu: &'static GpuContext, t: RawTensor, dtype: DType) -> Result<RawTensor> {
    if t.dtype == dtype {
        Ok(t)
    } else {
        cast(gpu, &t, dtype)
    }
}

/// Queues `dst[i] = src[i]` over `shape`, each side a strided view given by its first
/// element's device address and its strides (in elements of `dtype`).
pub(crate) fn copy_strided(
    gpu: &'static GpuContext,
    dtype: DType,
    shape: &[usize],
    (dst, dst_strides): (u64, &[usize]),
    (src, src_strides): (u64, &[usize]),
) -> Result<()> {
    let n: usize = shape.iter().product();
    if n == 0 {
        return Ok(());
    }
    let name = format!("copy_{}", suffix(dtype));
    // copy_<T>(T* dst, const T* src, Strided<2> L, u64 n): operand 0 of the layout is `dst`,
    // 1 is `src`; the caller guarantees both views lie inside live buffers of `dtype` on `gpu`.
    launch::strided(
        gpu,
        Kernel::new(&KERNELS, &name, "cuLaunchKernel(copy)"),
        dst,
        [src],
        &launch::strided_layout::<2>(shape, [dst_strides, src_strides]),
        n,
        (),
        4,
    )
}

/// A contiguous copy of a GPU tensor (any view), on the same GPU.
pub(crate) fn contiguous(gpu: &'static GpuContext, t: &RawTensor) -> Result<RawTensor> {
    let n = t.numel();
    let out = memory::alloc_dtype(gpu, t.dtype, n)?;
    let shape = t.layout.shape;
    let dst_strides = crate::core::layout::contiguous_strides(&shape);
    copy_strided(
        gpu,
        t.dtype,
        &shape,
        (out.device_ptr(), &dst_strides),
        (memory::ptr(t)?, &t.layout.strides),
    )?;
    Ok(memory::tensor_from_storage(out, shape, gpu.ordinal))
}

/// Makes `t` the only owner of a contiguous buffer it covers from its start (copying it when
/// shared or a view), so that an op can write it in place without changing what other handles
/// see (optimizer steps, loss scaling).
pub(crate) fn make_unique(gpu: &'static GpuContext, t: &mut RawTensor) -> Result<()> {
    let whole = t.layout.offset == 0 && t.layout.is_contiguous();
    if !(whole && t.storage.get_mut().is_some()) {
        *t = contiguous(gpu, t)?;
    }
    Ok(())
}

/// The tensor itself when contiguous, else a contiguous copy on its GPU.
pub(crate) fn contiguous_or_self(gpu: &'static GpuContext, t: &RawTensor) -> Result<RawTensor> {
    if t.layout.is_contiguous() {
        Ok(t.clone())
    } else {
        contiguous(gpu, t)
    }
}

/// Queues a copy of a contiguous host tensor to GPU `ordinal` on the device's copy stream,
/// when its values sit in a page-locked block (else copies as [`upload`] does, and returns no
/// fence). The compute stream waits for the copy's event, so every op on the result is ordered
/// after it without a host wait; the block is fenced by that event, so the host neither
/// rewrites it (a write waits) nor hands it out again (the pool checks) before the copy has
/// read it. Returns the GPU tensor and the copy's fence.
pub(crate) fn upload_async(
    t: &RawTensor,
    ordinal: usize,
) -> Result<(RawTensor, Option<Arc<dyn Fence>>)> {
    let gpu = context::get(ordinal)?;
    let storage = t.cpu_storage().expect("upload_async takes a CPU tensor");
    let range = t
        .layout
        .contiguous_range()
        .expect("upload_async takes a contiguous tensor");
    let n = range.len();
    let pinned = storage.host_block().filter(|b| b.is_pinned());
    let (Some(block), true, true) = (pinned, n > 0, gpu.pool.is_some()) else {
        return Ok((upload(t, ordinal)?, None));
    };
    let copy = &gpu.copy_stream;
    with_host_slice!(storage, "copy_", |data: T| {
        let src = &data[range];
        let bytes = std::mem::size_of_val(src);
        gpu.bind()?;
        let attempt = || {
            // SAFETY: the copy stream is a live stream of this (current) context; the memory
            // is uninitialised until the copy below, queued on the same stream, fills it.
            unsafe { cudarc::driver::result::malloc_async(copy.cu_stream(), bytes) }
                .map_err(|e| gpu.error("cuMemAllocAsync", e))
        };
        let dst = memory::retry_after_oom(attempt, |_| false, || memory::reclaim(gpu))?;
        // SAFETY: `dst` holds `bytes` bytes, allocated in the copy stream's order before this
        // copy; `src` is page-locked host memory that stays alive and unwritten until the
        // copy's event completes (the event fences the block below, and the caller's guard
        // borrows the source).
        unsafe { cudarc::driver::result::memcpy_htod_async(dst, src, copy.cu_stream()) }
            .map_err(|e| gpu.error("cuMemcpyHtoDAsync", e))?;
        let copied = copy
            .record_event(None)
            .map_err(|e| gpu.error("cuEventRecord", e))?;
        gpu.stream
            .wait(&copied)
            .map_err(|e| gpu.error("cuStreamWaitEvent", e))?;
        // SAFETY: `dst` is a live allocation of `n` elements of `T`, written by the copy; the
        // compute stream, which uses and frees it from now on, waits for the copy above (so
        // also for the allocation, earlier on the copy stream).
        let slice = unsafe { gpu.stream.upgrade_device_ptr::<T>(dst, n) };
        let fence: Arc<dyn Fence> = Arc::new(EventFence(copied));
        block.set_fence(fence.clone());
        Ok((memory::tensor(slice, t.layout.shape, ordinal), Some(fence)))
    })
}

/// Queues a copy of a GPU tensor into `dst`, a contiguous host tensor of its shape and type
/// whose storage nothing else shares, on the device's compute stream (where the source's
/// values are written and where it is freed). Returns the copy's fence: `dst`'s values are
/// valid once it completes. Into pageable memory the driver finishes the copy before returning.
pub(crate) fn download_async(t: &RawTensor, dst: &mut RawTensor) -> Result<Arc<dyn Fence>> {
    let (gpu, _) = memory::gpu_of("download_async", t)?;
    let src = contiguous_or_self(gpu, t)?;
    let (_, storage) = memory::gpu_of("download_async", &src)?;
    let src_ptr = memory::element_ptr(&src, storage);
    let n = src.numel();
    gpu.bind()?;
    with_dtype!(src.dtype, "copy_", |T| {
        let host = dst.unique_cpu_data::<T>().filter(|h| h.len() == n).ok_or(
            crate::core::error::Error::Internal {
                context: "download_async",
                message: "the destination is not an unshared host tensor of the source's size"
                    .into(),
            },
        )?;
        if n > 0 {
            // SAFETY: `src_ptr` addresses `n` contiguous elements of `T` inside the live
            // allocation of `src` (kept alive until after the copy: it is freed in this
            // stream's order), written earlier on this stream; `host` holds exactly `n`
            // elements, stays alive (the caller's handle owns it, and its block is fenced by
            // the event below) and is not read before the event completes.
            unsafe {
                cudarc::driver::result::memcpy_dtoh_async(host, src_ptr, gpu.stream.cu_stream())
            }
            .map_err(|e| gpu.error("cuMemcpyDtoHAsync", e))?;
        }
    });
    let done = gpu
        .stream
        .record_event(None)
        .map_err(|e| gpu.error("cuEventRecord", e))?;
    let fence: Arc<dyn Fence> = Arc::new(EventFence(done));
    if let Some(crate::core::storage::Storage::Cpu(s)) = dst.storage.get_mut() {
        if let Some(block) = s.host_block() {
            block.set_fence(fence.clone());
        }
    }
    Ok(fence)
}

impl super::CopyKernel for crate::ops::backend::CudaBackend {
    #[inline(always)]
    fn contiguous(self, t: &RawTensor) -> Result<RawTensor> {
        contiguous(self.0, t)
    }
    #[inline(always)]
    fn cast(self, t: &RawTensor, dtype: DType) -> Result<RawTensor> {
        cast(self.0, t, dtype)
    }
}
