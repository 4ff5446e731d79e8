//! Page-locked host blocks and the pool that reuses them; pure Rust, so Miri checks it.
//!
//! The memory itself comes from a [`HostAllocator`] (the CUDA driver's `cuMemHostAlloc` in
//! `backend::cuda::pinned`, or ordinary aligned host memory where there is no driver). A
//! [`HostBlock`] owns one block while a tensor uses it; dropping it hands the block back to its
//! [`HostPool`] together with the [`Fence`]s of the device copies that may still use it. The pool
//! hands a block out again only once they have completed (a query, never a wait), so a block is
//! never rewritten while a copy still reads it, and returning a block never makes the host wait.
//!
//! Writes through a live block wait for its fences first ([`HostBlock::before_write`]): once a
//! copy's guard is gone, a later in-place write is still ordered after the copy.

use crate::core::error::{Error, Result};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

/// Blocks are at least this many bytes, rounded up to a power of two (as PyTorch's caching
/// host allocator does), so that batches of about the same size reuse each other's blocks.
pub(crate) const MIN_BLOCK_BYTES: usize = 4096;

/// Alignment of every block (enough for every element type; driver blocks are page-aligned).
pub(crate) const BLOCK_ALIGN: usize = 64;

/// Where the pool gets its memory from.
pub(crate) trait HostAllocator: Send + Sync {
    /// `bytes` bytes aligned to [`BLOCK_ALIGN`], contents unspecified.
    fn alloc(&self, bytes: usize) -> Result<NonNull<u8>>;
    /// Frees a block this allocator returned for `bytes` bytes.
    ///
    /// # Safety
    /// `ptr` came from [`alloc`](Self::alloc) of this allocator with `bytes`, is freed once, and
    /// nothing (host or device) uses it any more.
    unsafe fn free(&self, ptr: NonNull<u8>, bytes: usize);
    /// True when the memory is page-locked (the device can copy it asynchronously).
    fn is_pinned(&self) -> bool;
}

/// The completion of device work that uses a block (a recorded CUDA event).
pub(crate) trait Fence: Send + Sync {
    /// True once the work has finished (never waits).
    fn is_complete(&self) -> bool;
    /// Waits for the work to finish.
    fn wait(&self) -> Result<()>;
}

/// Ordinary host memory from the global allocator: the fallback without a driver, and what
/// the tests use.
pub(crate) struct PlainHost;

impl HostAllocator for PlainHost {
    fn alloc(&self, bytes: usize) -> Result<NonNull<u8>> {
        let layout =
            std::alloc::Layout::from_size_align(bytes.max(1), BLOCK_ALIGN).map_err(|_| {
                Error::CpuOutOfMemory {
                    bytes: bytes as u64,
                }
            })?;
        // SAFETY: `layout` has a non-zero size.
        let ptr = unsafe { std::alloc::alloc(layout) };
        NonNull::new(ptr).ok_or(Error::CpuOutOfMemory {
            bytes: bytes as u64,
        })
    }

    unsafe fn free(&self, ptr: NonNull<u8>, bytes: usize) {
        // SAFETY: the caller passes a pointer from `alloc` with the same `bytes`, so this is
        // the layout it was allocated with (it was valid then, so it is now).
        unsafe {
            std::alloc::dealloc(
                ptr.as_ptr(),
                std::alloc::Layout::from_size_align_unchecked(bytes.max(1), BLOCK_ALIGN),
            )
        }
    }

    fn is_pinned(&self) -> bool {
        false
    }
}

/// One block of the pool, not in use.
struct FreeBlock {
    ptr: NonNull<u8>,
    bytes: usize,
    /// The device copies that may still use it; the block is reusable once they completed.
    fences: Vec<Arc<dyn Fence>>,
}

// SAFETY: a free block is plain memory owned by the pool (no host reference to it exists);
// its fences are `Send`.
unsafe impl Send for FreeBlock {}

struct PoolState {
    free: Vec<FreeBlock>,
    /// Bytes of every block the pool has allocated and not freed (in use and cached).
    reserved: usize,
    /// Bytes of the blocks in use.
    in_use: usize,
}

/// Reuses host blocks; one per process for page-locked memory (`backend::cuda::pinned`).
pub(crate) struct HostPool {
    allocator: Box<dyn HostAllocator>,
    state: Mutex<PoolState>,
}

impl HostPool {
    pub(crate) fn new(allocator: Box<dyn HostAllocator>) -> Arc<Self> {
        Arc::new(HostPool {
            allocator,
            state: Mutex::new(PoolState {
                free: Vec::new(),
                reserved: 0,
                in_use: 0,
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The block size a request of `bytes` gets.
    pub(crate) fn block_size(bytes: usize) -> usize {
        bytes.max(MIN_BLOCK_BYTES).next_power_of_two()
    }

    /// True when the pool's memory is page-locked.
    pub(crate) fn is_pinned(&self) -> bool {
        self.allocator.is_pinned()
    }

    /// A block of at least `bytes` bytes, all zero: a free block of the right size whose last
    /// copy has finished, or a new one.
    pub(crate) fn take(self: &Arc<Self>, bytes: usize) -> Result<HostBlock> {
        let size = Self::block_size(bytes);
        let reused = {
            let mut state = self.lock();
            let found = state
                .free
                .iter()
                .position(|b| b.bytes == size && all_complete(&b.fences));
            let block = found.map(|i| state.free.swap_remove(i));
            if block.is_some() {
                state.in_use += size;
            }
            block
        };
        let ptr = match reused {
            Some(b) => b.ptr,
            None => {
                let ptr = self.allocator.alloc(size)?;
                let mut state = self.lock();
                state.reserved += size;
                state.in_use += size;
                ptr
            }
        };
        // SAFETY: `ptr` is a block of `size` bytes that only this call owns now (fresh, or
        // taken out of the free list with its last copy finished).
        unsafe { std::ptr::write_bytes(ptr.as_ptr(), 0, size) };
        Ok(HostBlock {
            ptr,
            bytes: size,
            fences: Mutex::new(Vec::new()),
            pool: Arc::clone(self),
        })
    }

    /// Bytes of every block held (in use and cached): PyTorch's reserved host memory.
    pub(crate) fn reserved(&self) -> usize {
        self.lock().reserved
    }

    /// Bytes of blocks in use by tensors.
    pub(crate) fn in_use(&self) -> usize {
        self.lock().in_use
    }

    /// Frees every cached block whose last copy has finished; returns the bytes freed.
    pub(crate) fn empty_cache(&self) -> usize {
        let done: Vec<FreeBlock> = {
            let mut state = self.lock();
            let (done, busy): (Vec<_>, Vec<_>) = std::mem::take(&mut state.free)
                .into_iter()
                .partition(|b| all_complete(&b.fences));
            state.free = busy;
            let freed: usize = done.iter().map(|b| b.bytes).sum();
            state.reserved -= freed;
            done
        };
        let freed = done.iter().map(|b| b.bytes).sum();
        for b in done {
            // SAFETY: the block came from this allocator with `b.bytes`, left the free list
            // above (so it is freed once) and its last copy has finished.
            unsafe { self.allocator.free(b.ptr, b.bytes) };
        }
        freed
    }

    fn give_back(&self, block: FreeBlock) {
        let mut state = self.lock();
        state.in_use -= block.bytes;
        state.free.push(block);
    }
}

impl Drop for HostPool {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        for b in state.free.drain(..) {
            for f in &b.fences {
                // Device copies may still use it: wait before freeing (only when the pool
                // itself goes, never for the process-wide pool).
                let _ = f.wait();
            }
            // SAFETY: the block came from this allocator with `b.bytes`, is freed once (drained)
            // and its last copy has finished (waited above).
            unsafe { self.allocator.free(b.ptr, b.bytes) };
        }
    }
}

/// A block of host memory owned by one tensor storage; back to its pool when dropped.
pub(crate) struct HostBlock {
    ptr: NonNull<u8>,
    bytes: usize,
    /// The device copies that may still read or write this block.
    fences: Mutex<Vec<Arc<dyn Fence>>>,
    pool: Arc<HostPool>,
}

// SAFETY: the block owns its memory exclusively (like a `Box<[u8]>`); shared access goes
// through `&HostBlock`, which only hands out shared slices, and the fence sits in a mutex.
unsafe impl Send for HostBlock {}
// SAFETY: as above: `&HostBlock` allows only reads of the memory and locked fence updates.
unsafe impl Sync for HostBlock {}

// A panic never leaves a block half-updated: its memory is plain values (as in a `Vec`) and
// its fence and its pool's state sit behind mutexes that recover from poisoning. So a tensor
// in a host block stays as unwind-safe as one in a `Vec`.
impl std::panic::UnwindSafe for HostBlock {}
impl std::panic::RefUnwindSafe for HostBlock {}

impl HostBlock {
    /// The block's size in bytes.
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    /// The first byte.
    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// True when the memory is page-locked.
    pub(crate) fn is_pinned(&self) -> bool {
        self.pool.is_pinned()
    }

    /// Records that a device copy queued now uses the block until `fence` completes. Earlier
    /// copies that have completed are forgotten; the others stay (copies to two GPUs run on
    /// two streams, so the newest need not complete last).
    pub(crate) fn set_fence(&self, fence: Arc<dyn Fence>) {
        let mut fences = self.fences.lock().unwrap_or_else(|p| p.into_inner());
        fences.retain(|f| !f.is_complete());
        fences.push(fence);
    }

    /// Waits until no device copy uses the block: called before the host writes to it. A
    /// failed wait (a broken device) is not reported here: the device's next operation reports
    /// it, and a device in that state runs no more copies.
    pub(crate) fn before_write(&mut self) {
        let fences = self.fences.get_mut().unwrap_or_else(|p| p.into_inner());
        for f in fences.drain(..) {
            if !f.is_complete() {
                let _ = f.wait();
            }
        }
    }
}

impl Drop for HostBlock {
    fn drop(&mut self) {
        let fences = std::mem::take(self.fences.get_mut().unwrap_or_else(|p| p.into_inner()));
        self.pool.give_back(FreeBlock {
            ptr: self.ptr,
            bytes: self.bytes,
            fences,
        });
    }
}

fn all_complete(fences: &[Arc<dyn Fence>]) -> bool {
    fences.iter().all(|f| f.is_complete())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    /// A fence the test completes by hand, counting waits.
    struct Manual {
        done: AtomicBool,
        waits: AtomicUsize,
    }

    impl Manual {
        fn new() -> Arc<Self> {
            Arc::new(Manual {
                done: AtomicBool::new(false),
                waits: AtomicUsize::new(0),
            })
        }
    }

    impl Fence for Manual {
        fn is_complete(&self) -> bool {
            self.done.load(Ordering::SeqCst)
        }
        fn wait(&self) -> Result<()> {
            self.waits.fetch_add(1, Ordering::SeqCst);
            self.done.store(true, Ordering::SeqCst);
            Ok(())
        }
    }

    fn pool() -> Arc<HostPool> {
        HostPool::new(Box::new(PlainHost))
    }

    #[test]
    fn blocks_are_rounded_up_and_reused_once_free() {
        let pool = pool();
        assert_eq!(HostPool::block_size(1), MIN_BLOCK_BYTES);
        assert_eq!(HostPool::block_size(5000), 8192);
        let a = pool.take(5000).unwrap();
        assert_eq!(a.bytes(), 8192);
        assert_eq!((pool.reserved(), pool.in_use()), (8192, 8192));
        let first = a.as_ptr();
        drop(a);
        assert_eq!((pool.reserved(), pool.in_use()), (8192, 0));
        let b = pool.take(6000).unwrap();
        assert_eq!(b.as_ptr(), first, "a free block of the same size is reused");
        assert_eq!(pool.reserved(), 8192);
        let c = pool.take(100).unwrap();
        assert_ne!(c.as_ptr(), first);
        assert_eq!((pool.reserved(), pool.in_use()), (8192 + 4096, 8192 + 4096));
    }

    #[test]
    fn a_block_comes_zeroed_even_when_reused() {
        let pool = pool();
        let a = pool.take(64).unwrap();
        // SAFETY: the block holds at least 64 bytes and this test owns it.
        unsafe { std::ptr::write_bytes(a.as_ptr(), 0xAB, 64) };
        drop(a);
        let b = pool.take(64).unwrap();
        // SAFETY: as above; the block was zeroed by `take`.
        let bytes = unsafe { std::slice::from_raw_parts(b.as_ptr(), 64) };
        assert!(bytes.iter().all(|&x| x == 0));
    }

    #[test]
    fn a_block_a_copy_still_uses_is_not_handed_out_again() {
        let pool = pool();
        let a = pool.take(10).unwrap();
        let first = a.as_ptr();
        let fence = Manual::new();
        a.set_fence(fence.clone());
        drop(a); // no wait on drop
        assert_eq!(fence.waits.load(Ordering::SeqCst), 0);
        let b = pool.take(10).unwrap();
        assert_ne!(b.as_ptr(), first, "the copy has not finished");
        // The busy block is not freed by empty_cache either.
        assert_eq!(pool.empty_cache(), 0);
        fence.done.store(true, Ordering::SeqCst);
        let c = pool.take(10).unwrap();
        assert_eq!(c.as_ptr(), first, "reused once the copy has finished");
        assert_eq!(fence.waits.load(Ordering::SeqCst), 0, "never waited");
        drop((b, c));
    }

    #[test]
    fn a_write_waits_for_the_copy_and_only_once() {
        let pool = pool();
        let mut a = pool.take(10).unwrap();
        let fence = Manual::new();
        a.set_fence(fence.clone());
        a.before_write();
        assert_eq!(fence.waits.load(Ordering::SeqCst), 1);
        a.before_write();
        assert_eq!(fence.waits.load(Ordering::SeqCst), 1);
        // A finished copy costs no wait.
        let done = Manual::new();
        done.done.store(true, Ordering::SeqCst);
        a.set_fence(done.clone());
        a.before_write();
        assert_eq!(done.waits.load(Ordering::SeqCst), 0);
    }

    #[test]
    fn every_unfinished_copy_keeps_the_block_busy() {
        let pool = pool();
        let a = pool.take(10).unwrap();
        let first = a.as_ptr();
        let (gpu0, gpu1) = (Manual::new(), Manual::new());
        a.set_fence(gpu0.clone());
        a.set_fence(gpu1.clone()); // a copy to another GPU, on another stream
        drop(a);
        gpu1.done.store(true, Ordering::SeqCst);
        let b = pool.take(10).unwrap();
        assert_ne!(b.as_ptr(), first, "the first copy still reads the block");
        gpu0.done.store(true, Ordering::SeqCst);
        let c = pool.take(10).unwrap();
        assert_eq!(c.as_ptr(), first);
        drop((b, c));
    }

    #[test]
    fn empty_cache_frees_idle_blocks_and_keeps_blocks_in_use() {
        let pool = pool();
        let a = pool.take(10).unwrap();
        let b = pool.take(10_000).unwrap();
        drop(b);
        assert_eq!(pool.reserved(), 4096 + 16384);
        assert_eq!(pool.empty_cache(), 16384);
        assert_eq!((pool.reserved(), pool.in_use()), (4096, 4096));
        drop(a);
        assert_eq!(pool.empty_cache(), 4096);
        assert_eq!((pool.reserved(), pool.in_use()), (0, 0));
    }

    #[test]
    fn a_block_outliving_its_pool_handle_and_threads() {
        let pool = pool();
        let blocks: Vec<HostBlock> = (0..4).map(|_| pool.take(100).unwrap()).collect();
        let fence = Manual::new();
        blocks[0].set_fence(fence.clone());
        drop(pool);
        std::thread::scope(|s| {
            for b in blocks {
                s.spawn(move || drop(b));
            }
        });
        // The last block dropped the pool, which waited for the busy block before freeing it.
        assert_eq!(fence.waits.load(Ordering::SeqCst), 1);
    }
}
