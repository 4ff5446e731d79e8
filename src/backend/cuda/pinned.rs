//! Page-locked host memory (`cuMemHostAlloc`) for asynchronous copies, in one process-wide pool.
//!
//! Without a usable driver, the pool falls back to ordinary host memory and says so once on
//! stderr. PyTorch raises an error for `pin_memory()` without CUDA; devtype falls back instead,
//! so that code written for a GPU (a `DataLoader` with `pin_memory(true)`) runs unchanged on a
//! CPU-only machine, where there is no device to copy to and so nothing to overlap.
//! [`PinnedTensor::is_pinned`](crate::tensor::PinnedTensor::is_pinned) tells which one a
//! tensor got.

use super::context;
use crate::core::error::{Error, Result};
use crate::core::pinned::{Fence, HostAllocator, HostPool, PlainHost};
use cudarc::driver::CudaEvent;
use std::ptr::NonNull;
use std::sync::{Arc, OnceLock};

/// `cuMemHostAlloc` memory, portable: usable by every GPU's context.
struct DriverHost;

/// `CU_MEMHOSTALLOC_PORTABLE`: the block is pinned for every context, not only the current.
const PORTABLE: u32 = 0x01;

impl HostAllocator for DriverHost {
    fn alloc(&self, bytes: usize) -> Result<NonNull<u8>> {
        let gpu = context::get(0)?;
        gpu.bind()?;
        // SAFETY: a context is current (bound above); the call only writes the new pointer.
        // The memory's contents are unspecified; the pool zeroes every block it hands out.
        let ptr = unsafe { cudarc::driver::result::malloc_host(bytes, PORTABLE) }.map_err(|e| {
            if e.0 == cudarc::driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
                Error::CpuOutOfMemory {
                    bytes: bytes as u64,
                }
            } else {
                context::driver_error("cuMemHostAlloc", e)
            }
        })?;
        NonNull::new(ptr.cast::<u8>()).ok_or(Error::CpuOutOfMemory {
            bytes: bytes as u64,
        })
    }

    unsafe fn free(&self, ptr: NonNull<u8>, _bytes: usize) {
        if let Ok(gpu) = context::get(0) {
            let _ = gpu.bind();
            // SAFETY: `ptr` came from `cuMemHostAlloc` (the caller's contract), is freed once,
            // and no copy uses it any more.
            let _ = unsafe { cudarc::driver::result::free_host(ptr.as_ptr().cast()) };
        }
    }

    fn is_pinned(&self) -> bool {
        true
    }
}

static POOL: OnceLock<Arc<HostPool>> = OnceLock::new();

/// The process-wide pool of page-locked blocks (ordinary memory without a driver).
pub(crate) fn pool() -> &'static Arc<HostPool> {
    POOL.get_or_init(|| {
        #[cfg(not(miri))]
        let driver = context::get(0).map(|_| ());
        #[cfg(miri)]
        let driver: Result<()> = Err(Error::NoDriver);
        match driver {
            Ok(()) => HostPool::new(Box::new(DriverHost)),
            Err(e) => {
                eprintln!(
                    "devtype: pin_memory() uses ordinary host memory: no GPU to pin for ({e})"
                );
                HostPool::new(Box::new(PlainHost))
            }
        }
    })
}

/// Bytes of host memory held by the pinned pool, in use and cached (PyTorch's
/// `torch.cuda.host_memory_stats()["reserved_bytes.all.current"]`).
pub fn pinned_memory_reserved() -> u64 {
    POOL.get().map_or(0, |p| p.reserved() as u64)
}

/// Bytes of the pinned pool's blocks that tensors use now.
pub fn pinned_memory_allocated() -> u64 {
    POOL.get().map_or(0, |p| p.in_use() as u64)
}

/// Returns the pinned pool's cached blocks to the system (PyTorch's
/// `torch._C._host_emptyCache()`); blocks in use, and cached blocks a copy still reads, stay.
/// Returns the bytes freed. Never waits for a GPU.
pub fn empty_pinned_cache() -> u64 {
    POOL.get().map_or(0, |p| p.empty_cache() as u64)
}

/// A recorded CUDA event as a [`Fence`]; a wait on it is a counted host sync.
pub(crate) struct EventFence(pub(crate) CudaEvent);

impl Fence for EventFence {
    fn is_complete(&self) -> bool {
        // An error (a broken device) counts as complete: no copy runs on such a device.
        self.0.try_is_complete().unwrap_or(true)
    }

    fn wait(&self) -> Result<()> {
        self.0
            .synchronize()
            .map_err(|e| context::driver_error("cuEventSynchronize", e))?;
        super::sync::record_sync();
        Ok(())
    }
}
