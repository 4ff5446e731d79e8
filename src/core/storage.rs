//! The one storage enum behind every tensor (host memory or device memory), and the shared
//! handle tensors hold to it.

use crate::core::cpu_storage::CpuStorage;
use crate::core::cuda_storage::CudaStorage;
use crate::core::pool::{PooledVec, INLINE};
use crate::core::Element;
use std::cell::RefCell;
use std::mem::ManuallyDrop;
use std::ops::Deref;
use std::sync::Arc;

/// Where a tensor's values are.
pub(crate) enum Storage {
    /// Host memory.
    Cpu(CpuStorage),
    /// Memory of one GPU.
    Cuda(CudaStorage),
}

impl Storage {
    /// True for host values kept inside the storage's own allocation (a few elements).
    #[inline]
    fn is_tiny_cpu(&self) -> bool {
        matches!(self, Storage::Cpu(s) if s.is_inline())
    }
}

/// A tensor's handle to its storage, shared by every view of it (an `Arc`).
///
/// The allocations of tiny host tensors are recycled: when the last handle to one goes, the
/// allocation waits in a short per-thread list for the next tiny tensor made on that thread.
/// Scalar-sized arithmetic (a loss, a step size, a one-element add) then costs no trip
/// through the system allocator. Larger buffers have their own pool (`cpu::pool`).
pub(crate) struct SharedStorage(ManuallyDrop<Arc<Storage>>);

/// Spare allocations kept per thread.
const MAX_SPARE: usize = 32;

thread_local! {
    static SPARE: RefCell<Vec<Arc<Storage>>> = const { RefCell::new(Vec::new()) };
}

impl SharedStorage {
    /// A handle to `storage`, in a recycled allocation when it is tiny and one is spare.
    #[inline]
    pub(crate) fn new(storage: Storage) -> Self {
        if storage.is_tiny_cpu() {
            let spare = SPARE
                .try_with(|list| list.try_borrow_mut().ok()?.pop())
                .ok()
                .flatten();
            if let Some(arc) = spare {
                // No `Arc::get_mut` here: its uniqueness test is a locked compare-and-swap,
                // 15% of a 1-element add's time on an Intel Xeon (perf). The list's invariant
                // makes it needless (see `Drop`).
                let ptr = Arc::into_raw(arc).cast_mut();
                // SAFETY: the list holds only allocations whose last handle was dropped
                // (`Drop` saw a strong count of 1, then an acquire fence ordered every other
                // thread's use before this) and no `Weak` ever points to a storage (this
                // module makes none), so `ptr` is the only pointer to it and writing through
                // it is exclusive; `into_raw`'s pointer may be written, as `get_mut`'s is.
                // The old value is a tiny host storage: it owns no heap memory, so it is
                // overwritten without a drop and nothing leaks.
                unsafe {
                    ptr.write(storage);
                    return SharedStorage(ManuallyDrop::new(Arc::from_raw(ptr)));
                }
            }
        }
        SharedStorage(ManuallyDrop::new(Arc::new(storage)))
    }

    /// A tiny host storage: `len` values of `E` (at most [`INLINE`]) inside the allocation,
    /// written by `fill` where they stay, in a recycled allocation when one is spare. `fill`
    /// must write every value: it may be handed the stale values of that allocation.
    ///
    /// Built in place rather than on the stack and moved in: the move read the inline
    /// buffer's fresh narrow stores back with wide loads, a store-forwarding stall per result
    /// (perf: about a fifth of the 1-element add's own samples on an Intel Xeon). A recycled
    /// allocation that already holds an inline buffer of `E` keeps it and only its length is
    /// set: building even the empty buffer on the stack stalled the same way (perf: an eighth
    /// of a tracked `Linear(10, 2)`'s kernel samples on Zen 4).
    #[inline(always)]
    pub(crate) fn tiny_cpu<E: Element>(len: usize, fill: impl FnOnce(&mut [E])) -> Self {
        debug_assert!(len <= INLINE);
        let value = || Storage::Cpu(E::buffer_into_cpu_storage(PooledVec::inline(len)));
        let spare = SPARE
            .try_with(|list| list.try_borrow_mut().ok()?.pop())
            .ok()
            .flatten();
        let arc = match spare {
            Some(arc) => {
                let ptr = Arc::as_ptr(&arc).cast_mut();
                // SAFETY: a spare is the only handle to its storage (`Drop` keeps one only
                // then, and no `Weak` exists), so this exclusive borrow, which ends before
                // `arc` is used again, aliases nothing (`Arc::get_mut` would give the same
                // borrow after an atomic check of what is known here).
                if let Storage::Cpu(s) = unsafe { &mut *ptr } {
                    if let Some(buffer) = E::cpu_buffer_mut(s) {
                        if buffer.reuse_inline(len) {
                            fill(buffer.as_mut_slice());
                            return SharedStorage(ManuallyDrop::new(arc));
                        }
                    }
                }
                let ptr = Arc::into_raw(arc).cast_mut();
                // SAFETY: as in `new`: `ptr` is the only pointer to a tiny host storage, which
                // owns no heap memory, and is given back to an `Arc` at once.
                unsafe {
                    ptr.write(value());
                    Arc::from_raw(ptr)
                }
            }
            None => Arc::new(value()),
        };
        let ptr = Arc::as_ptr(&arc).cast_mut();
        // SAFETY: `arc` is the only handle to its storage (a spare one, see above, or one just
        // made; no `Weak` exists) and it is not used while this exclusive borrow lives, so the
        // borrow aliases nothing. The pointer may be written, as `Arc::get_mut`'s is.
        if let Storage::Cpu(s) = unsafe { &mut *ptr } {
            if let Some(values) = E::cpu_slice_mut(s) {
                fill(values);
            }
        }
        SharedStorage(ManuallyDrop::new(arc))
    }

    /// The storage, mutably, when no other handle shares it.
    #[inline]
    pub(crate) fn get_mut(&mut self) -> Option<&mut Storage> {
        Arc::get_mut(&mut self.0)
    }

    /// True when both handles share one storage.
    #[inline]
    pub(crate) fn ptr_eq(&self, other: &SharedStorage) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Clone for SharedStorage {
    #[inline]
    fn clone(&self) -> Self {
        SharedStorage(self.0.clone())
    }
}

impl Deref for SharedStorage {
    type Target = Storage;
    #[inline]
    fn deref(&self) -> &Storage {
        &self.0
    }
}

impl Drop for SharedStorage {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: this is the handle's drop, so `self.0` is taken once and never used again.
        let arc = unsafe { ManuallyDrop::take(&mut self.0) };
        let arc = match capture_keep::keep(arc) {
            Some(arc) => arc,
            None => return,
        };
        if arc.is_tiny_cpu() && Arc::strong_count(&arc) == 1 {
            // Every other handle was dropped with a release decrement; this orders their uses
            // of the storage before its reuse in `new` (a compiler barrier only, on x86).
            std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
            keep_spare(arc);
        }
    }
}

/// Keeps a tiny allocation for reuse, or frees it when the list is full (or the thread is
/// ending).
#[cold]
fn keep_spare(arc: Arc<Storage>) {
    let _ = SPARE.try_with(move |list| {
        if let Ok(mut list) = list.try_borrow_mut() {
            if list.len() < MAX_SPARE {
                list.push(arc);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny(values: &[f32]) -> Storage {
        let mut v = PooledVec::<f32>::with_len(values.len()).unwrap();
        v.as_mut_slice().copy_from_slice(values);
        Storage::Cpu(CpuStorage::F32(v))
    }

    fn values(s: &SharedStorage) -> Vec<f32> {
        match &**s {
            Storage::Cpu(CpuStorage::F32(v)) => v.as_slice().to_vec(),
            _ => unreachable!(),
        }
    }

    #[test]
    fn a_recycled_allocation_holds_the_new_values() {
        let first = SharedStorage::new(tiny(&[1.0, 2.0]));
        drop(first);
        let second = SharedStorage::new(tiny(&[3.0]));
        assert_eq!(values(&second), [3.0]);
    }

    #[test]
    fn recycled_allocations_never_alias_live_storages() {
        // More live storages than the spare list holds, dropped and remade in turns: each
        // must keep its own values (a reuse of a live allocation would overwrite one).
        let mut live: Vec<SharedStorage> = (0..MAX_SPARE + 4)
            .map(|i| SharedStorage::new(tiny(&[i as f32])))
            .collect();
        for round in 0..3 {
            let half: Vec<_> = live.drain(..live.len() / 2).collect();
            drop(half);
            while live.len() < MAX_SPARE + 4 {
                live.push(SharedStorage::new(tiny(&[
                    (100 * round + live.len()) as f32
                ])));
            }
            for (i, a) in live.iter().enumerate() {
                for b in &live[i + 1..] {
                    assert!(!a.ptr_eq(b));
                }
            }
        }
    }

    #[test]
    fn a_storage_last_held_by_another_thread_is_recycled_after_its_reads() {
        let a = SharedStorage::new(tiny(&[1.0, 2.0]));
        let view = a.clone();
        let read = std::thread::spawn(move || {
            let v = values(&view);
            drop(view);
            v
        });
        assert_eq!(read.join().unwrap(), [1.0, 2.0]);
        drop(a); // the last handle: its allocation goes to this thread's list
        let b = SharedStorage::new(tiny(&[7.0]));
        assert_eq!(values(&b), [7.0]);
    }

    #[test]
    fn a_tiny_storage_built_in_place_holds_its_values_and_element_type() {
        // A spare f32 allocation reused for an i64 storage, then a fresh one.
        drop(SharedStorage::new(tiny(&[1.0, 2.0, 3.0])));
        let ints = SharedStorage::tiny_cpu::<i64>(2, |v| v.copy_from_slice(&[7, -8]));
        match &*ints {
            Storage::Cpu(CpuStorage::I64(v)) => assert_eq!(v.as_slice(), [7, -8]),
            _ => panic!("not an i64 host storage"),
        }
        let held: Vec<_> = (0..MAX_SPARE + 2)
            .map(|i| SharedStorage::tiny_cpu::<f32>(1, |v| v[0] = i as f32))
            .collect();
        for (i, s) in held.iter().enumerate() {
            assert_eq!(values(s), [i as f32]);
        }
    }

    /// A spare allocation that holds an inline buffer of the same element type is reused as
    /// it is, its length set: shorter and longer than before, each with only the new values,
    /// and the allocation is the spare one (no new allocation).
    #[test]
    fn a_spare_buffer_of_the_same_type_is_reused_with_its_new_length() {
        let first = SharedStorage::tiny_cpu::<f32>(3, |v| v.copy_from_slice(&[1.0, 2.0, 3.0]));
        let at = Arc::as_ptr(&first.0);
        drop(first);
        let shorter = SharedStorage::tiny_cpu::<f32>(1, |v| v[0] = 9.0);
        assert_eq!(
            Arc::as_ptr(&shorter.0),
            at,
            "the spare allocation is reused"
        );
        assert_eq!(values(&shorter), [9.0]);
        drop(shorter);
        let longer =
            SharedStorage::tiny_cpu::<f32>(INLINE, |v| v.iter_mut().for_each(|x| *x = -1.0));
        assert_eq!(Arc::as_ptr(&longer.0), at);
        assert_eq!(values(&longer), [-1.0; INLINE]);
        drop(longer);
        let none = SharedStorage::tiny_cpu::<f32>(0, |_| {});
        assert_eq!(values(&none), [] as [f32; 0]);
    }

    #[test]
    fn a_shared_storage_is_never_recycled_while_a_view_holds_it() {
        let a = SharedStorage::new(tiny(&[1.0, 2.0]));
        let view = a.clone();
        drop(a);
        let b = SharedStorage::new(tiny(&[5.0, 6.0]));
        assert!(!b.ptr_eq(&view));
        assert_eq!(values(&view), [1.0, 2.0]);
        assert_eq!(values(&b), [5.0, 6.0]);
    }
}

/// GPU memory whose last handle drops while a stream capture is in progress on its GPU.
///
/// Freeing it there would put a free node into the graph, which every replay would run again
/// (and memory from before the capture would be freed while the graph still reads it): instead
/// the capture keeps the storage, and the graph made from it holds it until the graph is
/// dropped, when it is freed in stream order after the graph's last replay.
pub(crate) mod capture_keep {
    use super::Storage;
    use crate::core::per_capture::PerCapture;
    use std::sync::Arc;

    /// Per capturing GPU ordinal, the storages kept so far.
    static KEPT: PerCapture<Arc<Storage>> = PerCapture::new();

    /// Storage kept for a graph (freed when dropped).
    pub(crate) struct Kept(#[allow(dead_code)] Vec<Arc<Storage>>);

    /// Starts keeping the storage of GPU `ordinal` that is dropped.
    pub(crate) fn begin(ordinal: usize) {
        KEPT.begin(ordinal);
    }

    /// Stops keeping storage of GPU `ordinal`; returns what was kept.
    pub(crate) fn end(ordinal: usize) -> Kept {
        Kept(KEPT.end(ordinal))
    }

    /// Keeps `arc` when it is the last handle to GPU memory of a capturing GPU (returns
    /// `None`); otherwise gives it back.
    #[inline]
    pub(super) fn keep(arc: Arc<Storage>) -> Option<Arc<Storage>> {
        if !KEPT.any_active() {
            return Some(arc);
        }
        match &*arc {
            Storage::Cuda(c) if Arc::strong_count(&arc) == 1 => KEPT.push(c.ordinal(), arc),
            _ => Some(arc),
        }
    }
}
