//! Kernels whose scratch buffers the host cannot hold return `CpuOutOfMemory`, on both fronts,
//! instead of aborting the process: this binary's allocator refuses any allocation past a
//! budget of live bytes, set just above what the op's results need and below what its
//! scratch needs (a `sort` works in a copy of the line as packed `(key, index)` words, twice
//! an `f32` line; `cumsum` keeps partial sums per worker). After each refusal the same op, with room
//! for its results and scratch but not for a copy of its contiguous input, gives the values of
//! an independent computation.
//!
//! One test: the budget is global to the process, so nothing else may allocate while it is set.

use devtype::prelude::*;
use devtype::Error;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, refusing an allocation that would take the live bytes past `LIMIT`.
struct Budgeted;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static LIMIT: AtomicUsize = AtomicUsize::new(usize::MAX);

impl Budgeted {
    /// `allocate()` when `size` more bytes fit the budget, else null, with the count kept.
    fn admit(&self, size: usize, allocate: impl FnOnce() -> *mut u8) -> *mut u8 {
        let live = LIVE.fetch_add(size, Ordering::SeqCst) + size;
        let p = if live > LIMIT.load(Ordering::SeqCst) {
            std::ptr::null_mut()
        } else {
            allocate()
        };
        if p.is_null() {
            LIVE.fetch_sub(size, Ordering::SeqCst);
        }
        p
    }
}

// SAFETY: every call is forwarded to `System` with the caller's layout; the bookkeeping only
// decides whether to forward an allocation (a refusal is the null pointer `GlobalAlloc`
// allows) and never touches the memory.
unsafe impl GlobalAlloc for Budgeted {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc`, passed on.
        self.admit(layout.size(), || unsafe { System.alloc(layout) })
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc_zeroed`, passed on.
        self.admit(layout.size(), || unsafe { System.alloc_zeroed(layout) })
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::SeqCst);
        // SAFETY: the caller's contract for `dealloc`: `ptr` came from `System` above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Budgeted = Budgeted;

/// Runs `op` with at most `bytes` more bytes live than now (the host's cached buffers emptied
/// first, so every result is a fresh allocation), then lifts the budget.
fn with_budget<R>(bytes: usize, op: impl FnOnce() -> R) -> R {
    devtype::empty_host_cache();
    LIMIT.store(LIVE.load(Ordering::SeqCst) + bytes, Ordering::SeqCst);
    let r = op();
    LIMIT.store(usize::MAX, Ordering::SeqCst);
    r
}

fn assert_oom(err: Error, what: &str) {
    assert!(matches!(err, Error::CpuOutOfMemory { .. }), "{what}: {err}");
    assert!(
        err.to_string()
            .starts_with("DefaultCPUAllocator: can't allocate memory: you tried to allocate "),
        "{what}: {err}"
    );
}

const MIB: usize = 1 << 20;

/// Ascending by value, ties by index: the order `sort` promises, by `total_cmp` on pairs.
fn sorted_reference(line: &[f32]) -> (Vec<f32>, Vec<i64>) {
    let mut pairs: Vec<(f32, i64)> = line.iter().copied().zip(0..).collect();
    pairs.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    pairs.into_iter().unzip()
}

#[test]
fn kernel_scratch_the_host_cannot_hold_is_an_error() {
    // Start rayon's pool and the lazily made statics unbudgeted.
    let warm = Tensor::<Cpu>::randn([4, 1 << 14], Cpu);
    drop((warm.sort(1, false), warm.cumsum(0), warm.cumsum(1)));

    // One line of 2^20 `f32`: values and indices take 12 MiB, the packed words 8 MiB.
    let n = 1 << 20;
    let line = Tensor::<Cpu>::randn([n], Cpu);
    let err = with_budget(14 * MIB, || line.try_sort(0, false)).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "DefaultCPUAllocator: can't allocate memory: you tried to allocate {} bytes. \
             Error code 12 (Cannot allocate memory)",
            n * std::mem::size_of::<u64>()
        )
    );
    let dyn_err = with_budget(14 * MIB, || line.to_dyn().sort(0, false)).unwrap_err();
    assert_eq!(dyn_err, err);
    // With room for the results and the words (20 MiB), but not for a copy of the input as
    // well (a contiguous input is sorted where it is).
    let sorted = with_budget(22 * MIB, || line.try_sort(0, false)).unwrap();
    let (values, indices) = sorted_reference(&line.to_vec());
    assert_eq!(sorted.values.to_vec(), values);
    assert_eq!(sorted.indices.to_vec(), indices);

    // Eight lines sorted in parallel (one scratch per worker), and lines down a column (strided).
    let rows = Tensor::<Cpu>::randn([8, 1 << 18], Cpu);
    // Results 24 MiB, each worker's words 2 MiB.
    let err = with_budget(25 * MIB, || rows.try_sort(1, false)).unwrap_err();
    assert_oom(err, "sort of 8 lines");
    let columns = rows.t().contiguous();
    let err = with_budget(25 * MIB, || columns.try_sort(0, false)).unwrap_err();
    assert_oom(err, "sort down columns");
    let sorted = columns.sort(0, true);
    let all = rows.to_vec();
    for (c, line) in all.chunks(1 << 18).enumerate().take(2) {
        let (mut values, _) = sorted_reference(line);
        values.reverse();
        let got: Vec<f32> = sorted.values.narrow(1, c, 1).to_vec();
        assert_eq!(got, values, "column {c} sorted descending");
    }

    // `cumsum` down the columns of one block (parallel strips, each its own partial sums) and
    // along the middle of many blocks (partial sums per worker): results 4 and 16 MiB.
    let block = Tensor::<Cpu>::randn([4096, 256], Cpu);
    let err = with_budget(5 * MIB, || block.try_cumsum(0)).unwrap_err();
    assert_oom(err, "cumsum down columns");
    let dyn_err = with_budget(5 * MIB, || block.to_dyn().cumsum(0)).unwrap_err();
    assert_oom(dyn_err, "cumsum down columns, DynTensor");
    let blocks = Tensor::<Cpu>::randn([2, 2, 1 << 20], Cpu);
    let err = with_budget(17 * MIB, || blocks.try_cumsum(1)).unwrap_err();
    assert_oom(err, "cumsum of blocks");
    // Room for the result and the strips' sums, not for a copy of the input as well.
    let sum0 = with_budget(9 * MIB, || block.try_cumsum(0)).unwrap();
    let (sum0, x) = (sum0.to_vec(), block.to_vec());
    let mut acc = vec![0f32; 256];
    for (r, row) in x.chunks(256).enumerate() {
        for (j, (a, &v)) in acc.iter_mut().zip(row).enumerate() {
            *a += v;
            assert_eq!(sum0[r * 256 + j], *a, "cumsum at ({r}, {j})");
        }
    }
    let (sum1, x) = (blocks.cumsum(1).to_vec(), blocks.to_vec());
    let plane = 1 << 20;
    for o in 0..2 {
        for j in (0..plane).step_by(4099) {
            let (a, b) = (x[o * 2 * plane + j], x[o * 2 * plane + plane + j]);
            assert_eq!(sum1[o * 2 * plane + j], a);
            assert_eq!(sum1[o * 2 * plane + plane + j], a + b);
        }
    }
}
