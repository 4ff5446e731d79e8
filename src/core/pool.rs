//! A small caching allocator for large CPU buffers.
//!
//! A fresh 64 MiB output pays a page fault per 4 KiB page the first time it is written, which
//! costs more than the arithmetic of an element-wise op. Like PyTorch's CUDA caching allocator,
//! devtype keeps freed buffers of 64 KiB and more (at most 64 of them, 1 GiB in all, per element
//! type) and hands them to the next op of about the same size: a training step's activations and
//! gradients reuse last step's memory instead of being zeroed afresh. Smaller buffers go straight
//! to the system allocator, which is already fast for them.

use crate::core::error::{Error, Result};
use std::sync::Mutex;

/// Buffers smaller than this many bytes are not cached.
const MIN_CACHED_BYTES: usize = 1 << 16;
/// At most this many bytes sit in each pool.
const MAX_CACHED_BYTES: usize = 1 << 30;
/// At most this many buffers sit in each pool.
const MAX_CACHED_BUFFERS: usize = 64;

/// Freed buffers of one element type.
pub struct Pool<T> {
    free: Mutex<Vec<Vec<T>>>,
}

impl<T: Copy + Default> Pool<T> {
    pub(crate) const fn new() -> Self {
        Pool {
            free: Mutex::new(Vec::new()),
        }
    }

    fn cacheable(capacity: usize) -> bool {
        capacity.saturating_mul(std::mem::size_of::<T>()) >= MIN_CACHED_BYTES
    }

    /// A buffer of `len` elements whose values are unspecified (but initialised): callers
    /// overwrite every element. Fails with [`Error::CpuOutOfMemory`] when the host has no room.
    pub(crate) fn take(&self, len: usize) -> Result<Vec<T>>
    where
        T: crate::core::Element,
    {
        if Self::cacheable(len) {
            if let Ok(mut free) = self.free.lock() {
                // Best fit among buffers no more than twice as large; of equal fits, the one
                // freed last, whose lines and pages are the likeliest to be in cache (`relu_owned`
                // on a 16M-element sum, `cargo bench --bench cpu -- B`: 6.4-6.7 ms against 9.0-9.3
                // taking the one freed first, three rounds alternated).
                let best = free
                    .iter()
                    .enumerate()
                    .rev()
                    .filter(|(_, v)| v.capacity() >= len && v.capacity() <= len.saturating_mul(2))
                    .min_by_key(|(_, v)| v.capacity())
                    .map(|(i, _)| i);
                if let Some(i) = best {
                    let mut v = free.swap_remove(i);
                    drop(free);
                    // Within the capacity: no allocation.
                    v.resize(len, T::default());
                    return Ok(v);
                }
            }
        }
        zeroed_vec(len)
    }

    /// Returns a buffer to the pool, or frees it.
    fn give_back(&self, v: Vec<T>) {
        if !Self::cacheable(v.capacity()) {
            return;
        }
        if let Ok(mut free) = self.free.lock() {
            let cached: usize =
                free.iter().map(|b| b.capacity()).sum::<usize>() * std::mem::size_of::<T>();
            if free.len() < MAX_CACHED_BUFFERS
                && cached + v.capacity() * std::mem::size_of::<T>() <= MAX_CACHED_BYTES
            {
                free.push(v);
            }
        }
    }

    /// Frees every cached buffer.
    pub(crate) fn clear(&self) {
        if let Ok(mut free) = self.free.lock() {
            free.clear();
        }
    }
}

/// Elements stored inside the tensor's own allocation (no second allocation for tiny tensors).
pub(crate) const INLINE: usize = 8;

/// The values of a CPU tensor: a few inline, or a `Vec` that goes back to its element type's
/// pool when dropped.
pub struct PooledVec<T: crate::core::Element> {
    repr: Repr<T>,
}

enum Repr<T> {
    Inline {
        len: u8,
        data: [T; INLINE],
    },
    Heap(Vec<T>),
    /// `len` elements at the start of a (page-locked) host block (`core::pinned`).
    Host {
        block: super::pinned::HostBlock,
        len: usize,
        _element: std::marker::PhantomData<T>,
    },
}

impl<T: crate::core::Element> PooledVec<T> {
    /// Takes ownership of `v`.
    #[inline]
    pub(crate) fn new(v: Vec<T>) -> Self {
        PooledVec {
            repr: Repr::Heap(v),
        }
    }

    /// `len` elements with unspecified (initialised) values, for a kernel to overwrite:
    /// inline when tiny, from the pool when large. Fails with [`Error::CpuOutOfMemory`] when
    /// the host has no room.
    #[inline(always)]
    pub(crate) fn with_len(len: usize) -> Result<Self> {
        if len <= INLINE {
            Ok(Self::inline(len))
        } else {
            Self::heap(len)
        }
    }

    /// `len <= INLINE` elements inside the value: no allocation, so it cannot fail.
    #[inline(always)]
    pub(crate) fn inline(len: usize) -> Self {
        debug_assert!(len <= INLINE);
        PooledVec {
            repr: Repr::Inline {
                len: len.min(INLINE) as u8,
                data: [T::default(); INLINE],
            },
        }
    }

    /// Makes an inline buffer hold `len` values, for a recycled tiny storage: they are what the
    /// buffer held before (initialised, but stale), for the caller to overwrite every one;
    /// `false`, and nothing changed, when the buffer is not inline.
    #[inline(always)]
    pub(crate) fn reuse_inline(&mut self, len: usize) -> bool {
        debug_assert!(len <= INLINE);
        match &mut self.repr {
            Repr::Inline { len: l, .. } => {
                *l = len.min(INLINE) as u8;
                true
            }
            _ => false,
        }
    }

    /// The heap case of [`with_len`](Self::with_len), kept out of line so that the inline
    /// case of every tiny op stays a few instructions.
    #[inline(never)]
    fn heap(len: usize) -> Result<Self> {
        Ok(PooledVec {
            repr: Repr::Heap(T::pool().take(len)?),
        })
    }

    /// The first `len` elements of `block`, which holds valid values of `T` there (the block
    /// comes zeroed from its pool, and all-zero bytes are a valid value of every element type).
    pub(crate) fn from_host_block(block: super::pinned::HostBlock, len: usize) -> Self {
        assert!(len.saturating_mul(std::mem::size_of::<T>()) <= block.bytes());
        assert_eq!(block.as_ptr().align_offset(std::mem::align_of::<T>()), 0);
        PooledVec {
            repr: Repr::Host {
                block,
                len,
                _element: std::marker::PhantomData,
            },
        }
    }

    /// The host block behind the values, when they sit in one.
    pub(crate) fn host_block(&self) -> Option<&super::pinned::HostBlock> {
        match &self.repr {
            Repr::Host { block, .. } => Some(block),
            _ => None,
        }
    }

    /// True when the values sit inside this value (no heap buffer).
    #[inline]
    pub(crate) fn is_inline(&self) -> bool {
        matches!(self.repr, Repr::Inline { .. })
    }

    #[inline]
    pub(crate) fn as_slice(&self) -> &[T] {
        match &self.repr {
            Repr::Inline { len, data } => &data[..*len as usize],
            Repr::Heap(v) => v,
            // SAFETY: the block is live while `self` is, aligned for `T`, holds `len` valid
            // values of `T` (checked and promised in `from_host_block`), and the shared borrow
            // of `self` excludes host writes; device copies only read it meanwhile (a copy that
            // writes it owns the storage until its wait).
            Repr::Host { block, len, .. } => unsafe {
                std::slice::from_raw_parts(block.as_ptr().cast::<T>(), *len)
            },
        }
    }

    #[inline]
    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        match &mut self.repr {
            Repr::Inline { len, data } => &mut data[..*len as usize],
            Repr::Heap(v) => v,
            Repr::Host { block, len, .. } => {
                // A copy queued earlier may still read the block: the write waits for it.
                block.before_write();
                // SAFETY: as in `as_slice`; the exclusive borrow of `self` excludes every other
                // host access, and no device copy uses the block any more (waited above).
                unsafe { std::slice::from_raw_parts_mut(block.as_ptr().cast::<T>(), *len) }
            }
        }
    }
}

impl<T: crate::core::Element> Drop for PooledVec<T> {
    fn drop(&mut self) {
        if let Repr::Heap(v) = &mut self.repr {
            let v = std::mem::take(v);
            if v.capacity() > 0 {
                T::pool().give_back(v);
            }
        }
    }
}

/// Frees the large host buffers devtype keeps for reuse (the CPU's counterpart of
/// [`cuda::empty_cache`](crate::cuda::empty_cache), which returns a GPU's cached memory).
pub fn empty_host_cache() {
    use crate::core::dtype::sealed::ElementStorage;
    use crate::core::DType;
    for dtype in DType::ALL {
        // Exhaustive: a new element type does not compile until its pool is listed here.
        match dtype {
            DType::F32 => <f32 as ElementStorage>::pool().clear(),
            DType::F64 => <f64 as ElementStorage>::pool().clear(),
            DType::I64 => <i64 as ElementStorage>::pool().clear(),
            DType::Bool => <bool as ElementStorage>::pool().clear(),
            DType::F16 => <half::f16 as ElementStorage>::pool().clear(),
            DType::BF16 => <half::bf16 as ElementStorage>::pool().clear(),
        }
    }
}

/// The error for an allocation of `len` elements of `T` that the host cannot make.
pub(crate) fn out_of_memory<T>(len: usize) -> Error {
    Error::CpuOutOfMemory {
        bytes: (len as u64).saturating_mul(std::mem::size_of::<T>() as u64),
    }
}

/// Types whose all-zero bit pattern is a value: the element types and the kernels' scratch
/// words (`u32`), for [`zeroed_vec`]. Nominally public only because [`Element`]'s sealed
/// plumbing names it; the module is the crate's own.
///
/// # Safety
///
/// An implementor is not zero-sized and is valid with every byte zero.
///
/// [`Element`]: crate::core::Element
pub unsafe trait ZeroBits: Copy {
    /// The all-zero value.
    const ZERO_BITS: Self;
}

macro_rules! zero_bits {
    ($($t:ty = $zero:expr),* $(,)?) => {$(
        // SAFETY: all-zero bytes are `0`, `0.0` (IEEE 754 and bfloat16 alike) or `false`.
        unsafe impl ZeroBits for $t {
            const ZERO_BITS: Self = $zero;
        }
    )*};
}
zero_bits!(
    f32 = 0.0,
    f64 = 0.0,
    half::f16 = half::f16::ZERO,
    half::bf16 = half::bf16::ZERO,
    i64 = 0,
    bool = false,
    u32 = 0,
);

/// `len` elements of `T`, all zero (`0`, `0.0`, `false`), allocated fallibly: an allocation
/// the host cannot make is [`Error::CpuOutOfMemory`], never an abort of the process.
///
/// Large buffers come zeroed from the allocator (`calloc`), which maps zero pages lazily, so
/// no page is touched before a kernel writes it; small ones from `malloc`, filled here
/// (glibc's `calloc` bypasses its per-thread cache).
pub(crate) fn zeroed_vec<T: ZeroBits>(len: usize) -> Result<Vec<T>> {
    if len == 0 {
        return Ok(Vec::new());
    }
    if len.saturating_mul(std::mem::size_of::<T>()) < MIN_CACHED_BYTES {
        // Small: below 64 KiB.
        let mut v = Vec::new();
        v.try_reserve_exact(len)
            .map_err(|_| out_of_memory::<T>(len))?;
        v.resize(len, T::ZERO_BITS);
        return Ok(v);
    }
    let layout = std::alloc::Layout::array::<T>(len).map_err(|_| out_of_memory::<T>(len))?;
    // SAFETY: `layout` has a non-zero size: `len > 0` and no `ZeroBits` type is zero-sized.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>();
    if ptr.is_null() {
        return Err(out_of_memory::<T>(len));
    }
    advise_huge_pages(ptr.cast(), layout.size());
    // SAFETY: `ptr` comes from the global allocator with the layout of `[T; len]`, which is the
    // layout `Vec<T>` frees a capacity of `len` with; its `len` elements are all-zero bytes,
    // a valid value of `T` (`ZeroBits`'s contract).
    Ok(unsafe { Vec::from_raw_parts(ptr, len, len) })
}

/// `len` copies of `value` in a new buffer, allocated fallibly (see [`zeroed_vec`]): for the
/// kernels' scratch, whose size follows the data.
pub(crate) fn filled_vec<T: Copy>(len: usize, value: T) -> Result<Vec<T>> {
    let mut v = empty_vec(len)?;
    v.resize(len, value);
    Ok(v)
}

/// An empty buffer with room for `len` values, allocated fallibly (see [`zeroed_vec`]).
pub(crate) fn empty_vec<T>(len: usize) -> Result<Vec<T>> {
    let mut v: Vec<T> = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| out_of_memory::<T>(len))?;
    advise_huge_pages(
        v.as_mut_ptr().cast(),
        v.capacity() * std::mem::size_of::<T>(),
    );
    Ok(v)
}

/// Buffers of at least this many bytes are backed by huge pages where the kernel offers them.
#[cfg(all(target_os = "linux", not(miri)))]
const HUGE_PAGE_MIN_BYTES: usize = 4 << 20;

/// Asks Linux to back the 2 MiB-aligned middle of a new buffer of `bytes` bytes at `ptr` with
/// transparent huge pages (`madvise(MADV_HUGEPAGE)`), before anything touches it.
///
/// A buffer streamed by an element-wise op then takes one TLB entry per 2 MiB instead of one
/// per 4 KiB, and its first write one page fault per 2 MiB instead of 512. On a 2-vCPU Xeon, a
/// scratch loop of `x + y` then `relu` over 16M `f32` (four 64 MiB buffers) took 10.1-10.3 ms
/// with this call against 11.4-12.2 without, and devtype's `exp` over 32M elements 11.3-11.8
/// against 13.9-14.2. Only the kernel's choice of pages changes, never the contents. A kernel with huge pages off (`/sys/kernel/mm/transparent_hugepage/enabled` set
/// to `never`) ignores the advice; with them `always`, it is what happens anyway. Only the
/// aligned middle is advised, so a buffer never holds more memory than its own size rounded to
/// pages (once freed, memory the allocator keeps for reuse keeps the advice). Where memory is fragmented, a first write into a 2 MiB range may wait while the
/// kernel assembles a huge page (as its `defrag` setting says); the pool reuses its buffers, so
/// that is paid once per buffer, not per op. (PyTorch's CPU allocator does the same under
/// `THP_MEM_ALLOC_ENABLE=1`.)
fn advise_huge_pages(ptr: *mut u8, bytes: usize) {
    #[cfg(all(target_os = "linux", not(miri)))]
    if bytes >= HUGE_PAGE_MIN_BYTES {
        const HUGE_PAGE: usize = 2 << 20;
        let start = ptr.addr().next_multiple_of(HUGE_PAGE);
        let end = (ptr.addr() + bytes) / HUGE_PAGE * HUGE_PAGE;
        if end > start {
            // SAFETY: `[start, end)` is page-aligned and lies inside the allocation of `bytes`
            // bytes at `ptr`, which the caller has just made and alone owns. MADV_HUGEPAGE only
            // sets how the kernel backs those pages (their contents stay as they are); if it
            // fails (a kernel without huge pages), nothing has changed, so the result is ignored.
            unsafe {
                libc::madvise(
                    ptr.with_addr(start).cast(),
                    end - start,
                    libc::MADV_HUGEPAGE,
                );
            }
        }
    }
    #[cfg(not(all(target_os = "linux", not(miri))))]
    let _ = (ptr, bytes);
}

/// A copy of `values` in a new buffer, allocated fallibly (see [`zeroed_vec`]).
pub(crate) fn copy_to_vec<T: crate::core::Element>(values: &[T]) -> Result<Vec<T>> {
    let mut v = empty_vec(values.len())?;
    v.extend_from_slice(values);
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cached<T: crate::core::Element>() -> usize {
        T::pool().free.lock().map_or(0, |f| f.len())
    }

    /// The smallest buffer that fits comes back, and of equal ones the one freed last.
    #[test]
    fn the_best_fit_freed_last_is_reused() {
        let pool = Pool::<f32>::new();
        let len = MIN_CACHED_BYTES;
        let mut bufs: Vec<Vec<f32>> = [len, 2 * len, len, len]
            .iter()
            .map(|&n| zeroed_vec(n).unwrap())
            .collect();
        let ptrs: Vec<*const f32> = bufs.iter().map(|b| b.as_ptr()).collect();
        for b in bufs.drain(..) {
            pool.give_back(b);
        }
        // Three buffers fit `len` exactly: the last one freed first, then the one before (each
        // kept alive, so that no address comes back from the allocator meanwhile).
        let taken: Vec<Vec<f32>> = (0..3).map(|_| pool.take(len).unwrap()).collect();
        let got: Vec<*const f32> = taken.iter().map(|b| b.as_ptr()).collect();
        assert_eq!(got, [ptrs[3], ptrs[2], ptrs[0]]);
        // Then the larger one: not for more than its capacity, but for `len + 1` (over half).
        let fresh = pool.take(2 * len + 1).unwrap();
        assert_ne!(fresh.as_ptr(), ptrs[1]);
        let got = pool.take(len + 1).unwrap();
        assert_eq!((got.as_ptr(), got.len()), (ptrs[1], len + 1));
    }

    /// Every element type's cached buffers are freed, the 16-bit ones included (they were
    /// missed once).
    #[test]
    fn empty_host_cache_frees_every_element_type() {
        let len = MIN_CACHED_BYTES / 2;
        drop(PooledVec::<half::f16>::with_len(len).unwrap());
        drop(PooledVec::<half::bf16>::with_len(len).unwrap());
        assert!(cached::<half::f16>() >= 1 && cached::<half::bf16>() >= 1);
        empty_host_cache();
        assert_eq!((cached::<half::f16>(), cached::<half::bf16>()), (0, 0));
    }

    /// A large new buffer, zeroed or empty, asks for huge pages over its aligned middle (the
    /// mapping that holds it carries the kernel's `hg` flag, set by `MADV_HUGEPAGE`, whether or
    /// not huge pages are on), and holds its zeros and then its values as any other buffer.
    #[cfg(all(target_os = "linux", not(miri)))]
    #[test]
    fn large_buffers_ask_for_huge_pages() {
        if !std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists() {
            eprintln!("skipped: this kernel has no transparent huge pages");
            return;
        }
        // The `VmFlags` of the mapping that holds `addr`, from /proc/self/smaps.
        let flags = |addr: usize| -> String {
            let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
            let mut inside = false;
            for line in smaps.lines() {
                let range = line.split_whitespace().next().unwrap_or("");
                if let Some((lo, hi)) = range.split_once('-') {
                    if let (Ok(lo), Ok(hi)) =
                        (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
                    {
                        inside = (lo..hi).contains(&addr);
                        continue;
                    }
                }
                if inside && line.starts_with("VmFlags:") {
                    return line.to_string();
                }
            }
            panic!("no mapping holds {addr:#x}")
        };
        let huge = |p: *const f32| {
            let middle = (p as usize).next_multiple_of(2 << 20);
            flags(middle).split_whitespace().any(|f| f == "hg")
        };
        let len = (HUGE_PAGE_MIN_BYTES / 4) * 3 + 5;
        let mut zeroed = zeroed_vec::<f32>(len).unwrap();
        let mut empty = empty_vec::<f32>(len).unwrap();
        assert!(
            huge(zeroed.as_ptr()),
            "zeroed_vec: {}",
            flags(zeroed.as_ptr() as usize)
        );
        assert!(
            huge(empty.as_ptr()),
            "empty_vec: {}",
            flags(empty.as_ptr() as usize)
        );
        assert!(zeroed.iter().all(|&v| v == 0.0));
        for (i, v) in zeroed.iter_mut().enumerate() {
            *v = i as f32;
        }
        empty.extend(zeroed.iter().map(|v| v + 1.0));
        assert!((0..len).all(|i| zeroed[i] == i as f32 && empty[i] == i as f32 + 1.0));
    }
}
