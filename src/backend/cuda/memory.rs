//! Device memory: stream-ordered allocation, out-of-memory errors, per-device accounting, and
//! the bridge between CUDA buffers and [`RawTensor`].
//!
//! Buffers come from the device's default memory pool through `cuMemAllocAsync` on the
//! device's stream and go back with `cuMemFreeAsync` on that stream, so allocating and freeing
//! never makes the host wait. The pool keeps freed memory for reuse (like PyTorch's caching
//! allocator). When an allocation fails, devtype waits for the GPU, returns the pool's cached
//! memory to the driver and tries once more; if that fails too the op returns
//! [`Error::OutOfMemory`] and the device stays usable.

use super::context::GpuContext;
pub use crate::core::cuda_storage::{max_memory_allocated, memory_allocated};
use crate::core::cuda_storage::{with_dtype, CudaElement, CudaStorage};
use crate::core::error::{Error, Result};
use crate::core::layout::{Dims, Layout};
use crate::core::raw::RawTensor;
use crate::core::storage::{SharedStorage, Storage};
use crate::core::DType;
use crate::core::DynDevice;
use cudarc::driver::sys::{self, CUresult};
use cudarc::driver::CudaSlice;

/// Returns the memory devtype keeps for reuse on GPU `ordinal` to the driver, so other
/// processes can use it (PyTorch's `torch.cuda.empty_cache`). Waits for the GPU first.
pub fn empty_cache(ordinal: usize) -> Result<()> {
    let gpu = super::context::get(ordinal)?;
    gpu.synchronize()?;
    super::sync::record_sync();
    trim(gpu)
}

fn trim(gpu: &GpuContext) -> Result<()> {
    if let Some(pool) = &gpu.pool {
        gpu.bind()?;
        // SAFETY: the pool is the device's valid default pool and its context is current;
        // trimming only releases memory no allocation uses.
        unsafe { sys::cuMemPoolTrimTo(pool.0, 0) }
            .result()
            .map_err(|e| super::context::driver_error("cuMemPoolTrimTo", e))?;
    }
    Ok(())
}

/// Makes memory reusable after an out-of-memory error: waits for the GPU (memory freed in
/// stream order becomes reusable once the stream reaches the free) and returns the pool's
/// cached memory to the driver, so the driver's own allocations (a module, cuBLAS's
/// workspace) can use it too.
pub(crate) fn reclaim(gpu: &GpuContext) -> Result<()> {
    gpu.synchronize()?;
    super::sync::record_sync();
    trim(gpu)
}

/// Runs `attempt`; when it fails with [`Error::OutOfMemory`] (or `retry_also` says its error
/// may be one in disguise), calls `reclaim` and tries once more. Allocation, module loading
/// and cuBLAS handle creation all recover this way, so a full device stays usable.
pub(crate) fn retry_after_oom<T>(
    mut attempt: impl FnMut() -> Result<T>,
    retry_also: impl Fn(&Error) -> bool,
    reclaim: impl FnOnce() -> Result<()>,
) -> Result<T> {
    match attempt() {
        Err(e) if matches!(e, Error::OutOfMemory { .. }) || retry_also(&e) => {
            reclaim()?;
            attempt()
        }
        other => other,
    }
}

fn pool_attribute(gpu: &GpuContext, attribute: sys::CUmemPool_attribute) -> u64 {
    let Some(pool) = &gpu.pool else { return 0 };
    let mut value: u64 = 0;
    // SAFETY: the pool is valid; reserved/used memory attributes are u64 written to `value`.
    let status =
        unsafe { sys::cuMemPoolGetAttribute(pool.0, attribute, (&mut value as *mut u64).cast()) };
    if status == CUresult::CUDA_SUCCESS {
        value
    } else {
        0
    }
}

/// The out-of-memory error for a request of `requested` bytes on `gpu`, with the device's
/// numbers as PyTorch reports them.
pub(crate) fn out_of_memory(gpu: &GpuContext, requested: u64) -> Error {
    let (free, total) = gpu.context.mem_get_info().unwrap_or((0, 0));
    let reserved = pool_attribute(
        gpu,
        sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
    );
    let used = pool_attribute(
        gpu,
        sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_CURRENT,
    );
    Error::OutOfMemory {
        device: gpu.ordinal,
        requested,
        total: total as u64,
        free: free as u64,
        allocated: memory_allocated(gpu.ordinal),
        reserved: reserved.saturating_sub(used),
    }
}

/// Device memory for `len` elements of `T`, uninitialised, allocated in stream order.
///
/// Empty buffers hold one element, so every tensor has a valid device address. The bytes count
/// in [`memory_allocated`] once the buffer becomes tensor storage; scratch buffers that never
/// do are not counted.
pub(crate) fn alloc<T: CudaElement>(gpu: &GpuContext, len: usize) -> Result<CudaSlice<T>> {
    let len = len.max(1);
    let Some(bytes) = len.checked_mul(std::mem::size_of::<T>()) else {
        return Err(out_of_memory(gpu, u64::MAX));
    };
    let attempt = || {
        // SAFETY: the memory is uninitialised; every caller writes all `len` elements (by a
        // kernel, a memset or a copy queued on the same stream) before anything reads them.
        unsafe { gpu.stream.alloc::<T>(len) }.map_err(|e| {
            if e.0 == CUresult::CUDA_ERROR_OUT_OF_MEMORY {
                out_of_memory(gpu, bytes as u64)
            } else {
                gpu.error("cuMemAllocAsync", e)
            }
        })
    };
    let slice = retry_after_oom(attempt, |_| false, || reclaim(gpu))?;
    Ok(slice)
}

/// Uninitialised device memory for `len` elements of `dtype` (see [`alloc`]).
pub(crate) fn alloc_dtype(gpu: &GpuContext, dtype: DType, len: usize) -> Result<CudaStorage> {
    with_dtype!(dtype, "empty", |T| Ok(T::wrap(alloc::<T>(gpu, len)?)))
}

/// Device memory for `len` elements of `dtype`, zeroed on the device.
pub(crate) fn alloc_zeros_dtype(gpu: &GpuContext, dtype: DType, len: usize) -> Result<CudaStorage> {
    with_dtype!(dtype, "zeros", |T| Ok(T::wrap(alloc_zeros::<T>(gpu, len)?)))
}

/// Device memory for `len` elements of `T`, zeroed on the device.
pub(crate) fn alloc_zeros<T: CudaElement>(gpu: &GpuContext, len: usize) -> Result<CudaSlice<T>> {
    let mut slice = alloc::<T>(gpu, len)?;
    gpu.stream
        .memset_zeros(&mut slice)
        .map_err(|e| gpu.error("cuMemsetD8Async", e))?;
    Ok(slice)
}

/// A contiguous tensor of `shape` on GPU `ordinal` owning `slice`.
pub(crate) fn tensor<T: CudaElement>(
    slice: CudaSlice<T>,
    shape: Dims,
    ordinal: usize,
) -> RawTensor {
    RawTensor {
        storage: SharedStorage::new(Storage::Cuda(T::wrap(slice))),
        layout: Layout::contiguous(shape),
        dtype: T::DTYPE,
        device: DynDevice::cuda(ordinal),
    }
}

/// A contiguous tensor of `shape` owning `storage` (of any element type).
pub(crate) fn tensor_from_storage(storage: CudaStorage, shape: Dims, ordinal: usize) -> RawTensor {
    RawTensor {
        dtype: storage.dtype(),
        storage: SharedStorage::new(Storage::Cuda(storage)),
        layout: Layout::contiguous(shape),
        device: DynDevice::cuda(ordinal),
    }
}

/// A GPU tensor's device and storage; an error names the op for a tensor that is not on a GPU.
/// Kernels get their GPU from the ops' dispatch (`ops::backend`); this is for the copies
/// between devices, which start from one tensor.
pub(crate) fn gpu_of<'a>(
    op: &'static str,
    t: &'a RawTensor,
) -> Result<(&'static GpuContext, &'a CudaStorage)> {
    match (&*t.storage, t.device.cuda_index()) {
        (Storage::Cuda(s), Some(ordinal)) => {
            backed(s)?;
            Ok((super::context::get(ordinal)?, s))
        }
        _ => Err(Error::Internal {
            context: op,
            message: format!("the CUDA kernel was given a tensor on {}", t.device),
        }),
    }
}

/// The device address of a GPU tensor's first element, for a kernel argument; an error for a
/// tensor not on a GPU (the ops' dispatch only sends GPU tensors to the CUDA backend).
pub(crate) fn ptr(t: &RawTensor) -> Result<u64> {
    match &*t.storage {
        Storage::Cuda(s) => {
            backed(s)?;
            Ok(element_ptr(t, s))
        }
        Storage::Cpu(_) => Err(Error::Internal {
            context: "cuda kernel argument",
            message: format!("a CUDA kernel was given a tensor on {}", t.device),
        }),
    }
}

/// An error for memory a CUDA graph capture made whose graph has not run (see
/// `core::cuda_storage::GraphMemory`): a kernel reading it would fault and end the context.
fn backed(s: &CudaStorage) -> Result<()> {
    if s.is_backed() {
        return Ok(());
    }
    Err(Error::UnsupportedOperation(
        "this tensor was made while a CUDA graph was being captured, and no replay of that graph \
         has run (the capture failed, the graph was dropped, or it was never replayed): it holds \
         no memory yet. Replay the graph first, or make the tensor outside the capture",
    ))
}

/// The device address of a GPU tensor's first element (storage address plus layout offset).
pub(crate) fn element_ptr(t: &RawTensor, storage: &CudaStorage) -> u64 {
    storage.device_ptr() + (t.layout.offset * t.dtype.size_in_bytes()) as u64
}

/// Checks that every operand is on `gpu` (the dynamic front checks devices before calling in;
/// this guards the crate's own calls).
pub(crate) fn same_gpu(gpu: &GpuContext, others: &[&RawTensor]) -> Result<()> {
    for t in others {
        if t.device.cuda_index() != Some(gpu.ordinal) {
            return Err(Error::DeviceMismatch {
                first: DynDevice::cuda(gpu.ordinal),
                second: t.device,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::retry_after_oom;
    use crate::core::error::Error;

    fn oom() -> Error {
        Error::OutOfMemory {
            device: 0,
            requested: 1,
            total: 2,
            free: 0,
            allocated: 0,
            reserved: 0,
        }
    }

    #[test]
    fn out_of_memory_reclaims_and_retries_once() {
        let mut calls = 0;
        let mut reclaimed = false;
        let r = retry_after_oom(
            || {
                calls += 1;
                if calls == 1 {
                    Err(oom())
                } else {
                    Ok(calls)
                }
            },
            |_| false,
            || {
                reclaimed = true;
                Ok(())
            },
        );
        assert_eq!(r, Ok(2));
        assert!(reclaimed);
        // Still out of memory after reclaiming: the second error is returned, no third try.
        let mut calls = 0;
        let r: crate::core::error::Result<()> = retry_after_oom(
            || {
                calls += 1;
                Err(oom())
            },
            |_| false,
            || Ok(()),
        );
        assert!(matches!(r, Err(Error::OutOfMemory { .. })));
        assert_eq!(calls, 2);
    }

    #[test]
    fn other_errors_are_not_retried_unless_asked() {
        let other = Error::Cuda {
            context: "cublasCreate",
            name: "CUBLAS_STATUS_NOT_INITIALIZED".into(),
            code: 1,
        };
        let mut calls = 0;
        let r: crate::core::error::Result<()> = retry_after_oom(
            || {
                calls += 1;
                Err(other.clone())
            },
            |_| false,
            || panic!("must not reclaim"),
        );
        assert_eq!(r, Err(other.clone()));
        assert_eq!(calls, 1);
        let mut calls = 0;
        let r = retry_after_oom(
            || {
                calls += 1;
                if calls == 1 {
                    Err(other.clone())
                } else {
                    Ok(())
                }
            },
            |e| {
                matches!(
                    e,
                    Error::Cuda {
                        context: "cublasCreate",
                        ..
                    }
                )
            },
            || Ok(()),
        );
        assert_eq!(r, Ok(()));
    }
}
