//! Parallel loops that the calling thread takes part in.
//!
//! A training loop runs on the program's own thread, outside `rayon`'s pool. A `rayon`
//! parallel iterator called from there hands the whole loop to the pool and puts the caller to
//! sleep until a worker wakes it: two thread wake-ups per element-wise op, each tens of
//! microseconds on a virtual machine, for ops that take about as long. PyTorch's OpenMP loops
//! have the calling thread do a share. [`for_each_task`] does the same on `rayon`'s threads:
//! helpers are spawned into the pool and every thread, the caller included, takes the next
//! task from one counter, so the caller never waits for a sleeping worker to wake up (if none
//! does in time, the caller does every task itself); it only waits, spinning, for tasks
//! already running on other threads. Measured on the transformer's training step
//! (`cargo bench --bench cpu -- TT`), see the commit that added this module.
//!
//! A helper that runs out of tasks then lingers: it waits, spinning, for [`LINGER`] for the
//! next loop, which takes it at once instead of waking a sleeping pool thread (as OpenMP's
//! threads spin between PyTorch's parallel regions, for as long as they do). A wake-up is
//! usually a few microseconds, but on a virtual machine whose idle core has halted it was
//! 0.5-4 ms for one product in ten: for a 5 ms GEMM, the caller alone for most of it.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// A task body whose borrow the compiler cannot follow into the pool's threads.
struct Body(*const (dyn Fn(usize) + Sync));

// SAFETY: the pointee is `Sync` (shared calls from any thread are allowed), and `Body` only
// moves the pointer; when it may be dereferenced is `Shared::work`'s business.
unsafe impl Send for Body {}
// SAFETY: as above: `&Body` only gives access to the pointer.
unsafe impl Sync for Body {}

/// What the caller and its helpers share: the next task to take, the tasks finished, and the
/// first panic, if any (a panicking task must not abort the process from a pool thread).
struct Shared {
    next: AtomicUsize,
    done: AtomicUsize,
    tasks: usize,
    panic: Mutex<Option<Box<dyn std::any::Any + Send>>>,
    body: Body,
}

impl Shared {
    /// Takes tasks until none is left.
    fn work(&self) {
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.tasks {
                return;
            }
            // SAFETY: task `i < tasks` was taken and is not yet counted in `done`, and
            // `for_each_task` does not return (so the body it borrowed stays alive) before
            // `done` reaches `tasks`. A helper that starts late finds `i >= tasks` and never
            // dereferences the pointer.
            let body = unsafe { &*self.body.0 };
            if let Err(p) = catch_unwind(AssertUnwindSafe(|| body(i))) {
                let mut first = self.panic.lock().unwrap_or_else(|e| e.into_inner());
                first.get_or_insert(p);
            }
            self.done.fetch_add(1, Ordering::Release);
        }
    }
}

/// Calls `f(0)`, ..., `f(tasks - 1)`, each exactly once, on up to `rayon`'s number of threads,
/// the calling thread one of them. Returns when every call has returned; a panic in any of
/// them is resumed on the caller after all have finished (on a pool thread already, `rayon`'s
/// rule: the panic is resumed on the caller, other tasks may not have run).
pub(crate) fn for_each_task(tasks: usize, f: &(dyn Fn(usize) + Sync)) {
    let threads = pool_threads().min(tasks);
    if threads <= 1 {
        // In order on this thread, with the same outcome as below: every task runs, then the
        // first panic is resumed.
        let mut first = None;
        for i in 0..tasks {
            if let Err(p) = catch_unwind(AssertUnwindSafe(|| f(i))) {
                first.get_or_insert(p);
            }
        }
        if let Some(p) = first {
            resume_unwind(p);
        }
        return;
    }
    if !cfg!(miri) && rayon::current_thread_index().is_some() {
        // Already on a pool thread (a loop inside a parallel loop): `rayon`'s own splitting,
        // whose waiting thread steals work instead of spinning.
        use rayon::prelude::*;
        (0..tasks).into_par_iter().for_each(f);
        return;
    }
    // SAFETY: only the lifetime is erased (same pointer, same vtable); see `Shared::work` for
    // why the pointer is never used after `f`'s borrow ends.
    let body = unsafe {
        std::mem::transmute::<*const (dyn Fn(usize) + Sync + '_), *const (dyn Fn(usize) + Sync)>(f)
    };
    let shared = Arc::new(Shared {
        next: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        tasks,
        panic: Mutex::new(None),
        body: Body(body),
    });
    // Lingering helpers first (`claim` takes them for this loop), then new ones.
    let claimed = claim(&shared, threads - 1);
    let helpers: Vec<_> = (claimed..threads - 1)
        .map(|_| spawn_helper(Arc::clone(&shared)))
        .collect();
    shared.work();
    // Every task is taken; wait for those still running elsewhere.
    let mut spins = 0u32;
    while shared.done.load(Ordering::Acquire) < tasks {
        if spins < 1 << 12 {
            spins += 1;
            std::hint::spin_loop();
        } else {
            std::thread::yield_now();
        }
    }
    for h in helpers {
        h.join();
    }
    if claimed > 0 {
        unclaim(&shared);
    }
    let panic = shared
        .panic
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take();
    if let Some(p) = panic {
        resume_unwind(p);
    }
}

/// The threads a loop is shared between: `rayon`'s. (Under Miri, three: `rayon`'s pool does
/// not run there, its `crossbeam` deques use integer-to-pointer casts that strict provenance
/// refuses, so the helpers are plain threads, and Miri checks the protocol above with them.)
fn pool_threads() -> usize {
    if cfg!(miri) {
        3
    } else {
        rayon::current_num_threads()
    }
}

/// A helper running [`Shared::work`]: a job in `rayon`'s pool, nothing to wait for at the end
/// (the caller waits for the tasks, not for the jobs: one that starts late takes no task).
/// Then it lingers ([`linger`]).
#[cfg(not(miri))]
fn spawn_helper(shared: Arc<Shared>) -> Helper {
    rayon::spawn(move || {
        shared.work();
        drop(shared);
        linger();
    });
    Helper
}

/// How long a helper with no task left waits for the next loop before it goes back to
/// `rayon` (whose idle threads soon sleep): as long as PyTorch's OpenMP thread spins, so that
/// a program computing every few milliseconds keeps its second core at the same price in CPU
/// time, and a program that stops computing gives the core back within milliseconds.
///
/// Measured on Zen 4, two threads: without lingering, the helper started 0.5-4 ms late in one
/// `bf16` product of ten (n = 1024, back to back). PyTorch 2.15's helper spent 5.7-8.5 ms of
/// CPU time after a product while the caller slept 5, 10 or 50 ms. With `bf16` products
/// n = 512 that far apart, GFLOP/s (and the process's CPU time per second): 5 ms apart, 217
/// (0.37) with 1 ms of lingering, 357 (1.13) with 8 ms, PyTorch 367-373 (1.13); 10 ms apart,
/// 192 (0.22), 376 (0.87), PyTorch 269-333 (0.82-0.83); 20 ms apart, 204 with 8 ms against
/// PyTorch's 43 (its first product after a long sleep waits for the woken thread).
const LINGER: Duration = Duration::from_millis(8);

/// The lingering helpers: how many are waiting unclaimed (`idle`), and the loops that
/// claimed some of them with the claims not yet taken. Every lingering helper is either idle
/// or owed to a loop by a claim: `idle + claims` = helpers lingering.
struct Lingering {
    idle: usize,
    jobs: Vec<(Arc<Shared>, usize)>,
}

static LINGERING: Mutex<Lingering> = Mutex::new(Lingering {
    idle: 0,
    jobs: Vec::new(),
});

/// Bumped whenever a loop claims lingering helpers: what they watch while they spin.
static POSTS: AtomicUsize = AtomicUsize::new(0);

fn lingering() -> MutexGuard<'static, Lingering> {
    LINGERING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Claims up to `wanted` lingering helpers for `shared`'s loop; returns how many.
fn claim(shared: &Arc<Shared>, wanted: usize) -> usize {
    if cfg!(miri) {
        return 0;
    }
    let claimed = {
        let mut l = lingering();
        let k = l.idle.min(wanted);
        if k > 0 {
            l.idle -= k;
            l.jobs.push((Arc::clone(shared), k));
        }
        k
    };
    if claimed > 0 {
        POSTS.fetch_add(1, Ordering::Release);
    }
    claimed
}

/// After `shared`'s loop has finished: the claims no helper took (they were still spinning
/// towards them) go back to idle.
fn unclaim(shared: &Arc<Shared>) {
    let mut l = lingering();
    if let Some(i) = l.jobs.iter().position(|(j, _)| Arc::ptr_eq(j, shared)) {
        let (_, left) = l.jobs.swap_remove(i);
        l.idle += left;
    }
}

/// Takes one claim, if any loop holds one, and the loop's work.
#[cfg_attr(miri, allow(dead_code))]
fn take_claim(l: &mut Lingering) -> Option<Arc<Shared>> {
    let i = l.jobs.iter().position(|(_, left)| *left > 0)?;
    l.jobs[i].1 -= 1;
    let job = Arc::clone(&l.jobs[i].0);
    if l.jobs[i].1 == 0 {
        l.jobs.swap_remove(i);
    }
    Some(job)
}

/// Waits, spinning, for loops that claim this helper, and works on each, until none has
/// come for [`LINGER`]. At most one helper fewer than the pool's threads lingers at once,
/// so a `rayon` job from elsewhere always finds a thread that is not spinning here.
#[cfg_attr(miri, allow(dead_code))]
fn linger() {
    thread_local! {
        static LINGERING_HERE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }
    if LINGERING_HERE.get() {
        // A helper job run by `rayon::yield_now` below, on a thread that lingers already.
        return;
    }
    LINGERING_HERE.set(true);
    linger_here();
    LINGERING_HERE.set(false);
}

/// [`linger`]'s loop.
#[cfg_attr(miri, allow(dead_code))]
fn linger_here() {
    loop {
        let mut seen = POSTS.load(Ordering::Acquire);
        {
            let mut l = lingering();
            let owed: usize = l.jobs.iter().map(|(_, left)| left).sum();
            if l.idle + owed + 1 >= pool_threads() {
                return;
            }
            l.idle += 1;
        }
        let start = Instant::now();
        let job = loop {
            for _ in 0..64 {
                if POSTS.load(Ordering::Relaxed) != seen {
                    break;
                }
                std::hint::spin_loop();
            }
            let now = POSTS.load(Ordering::Acquire);
            if now != seen {
                seen = now;
                if let Some(job) = take_claim(&mut lingering()) {
                    break job;
                }
            }
            if start.elapsed() >= LINGER {
                let mut l = lingering();
                // Claimed meanwhile: the claim is this helper's to honour.
                if let Some(job) = take_claim(&mut l) {
                    break job;
                }
                // No claim left, so `idle` counts this helper (the invariant above).
                l.idle -= 1;
                return;
            }
            // Pending `rayon` work (the program's own parallel iterators, say) runs here
            // instead of waiting for the pool's other threads; with none, a thread that shares
            // this core runs (a test, another program). (Without the first, a parallel sum
            // right after a product ran on one thread: 869 against 437 us.)
            if rayon::yield_now() != Some(rayon::Yield::Executed) {
                std::thread::yield_now();
            }
        };
        job.work();
    }
}
#[cfg(not(miri))]
struct Helper;
#[cfg(not(miri))]
impl Helper {
    fn join(self) {}
}

/// Under Miri, a thread, joined at the end so that none outlives the test.
#[cfg(miri)]
fn spawn_helper(shared: Arc<Shared>) -> Helper {
    Helper(std::thread::spawn(move || shared.work()))
}
#[cfg(miri)]
struct Helper(std::thread::JoinHandle<()>);
#[cfg(miri)]
impl Helper {
    fn join(self) {
        // `work` catches the tasks' panics, so the thread itself does not panic.
        let _ = self.0.join();
    }
}

/// `f(start, chunk)` for each `chunk_len`-element chunk of `out` (the last may be shorter),
/// through [`for_each_task`].
pub(crate) fn for_each_chunk_mut<O: Send>(
    out: &mut [O],
    chunk_len: usize,
    f: &(dyn Fn(usize, &mut [O]) + Sync),
) {
    let chunk_len = chunk_len.max(1);
    let len = out.len();
    let base = SendPtr(out.as_mut_ptr());
    for_each_task(len.div_ceil(chunk_len), &|i| {
        let start = i * chunk_len;
        let n = chunk_len.min(len - start);
        let base = &base;
        // SAFETY: `start + n <= len`, so the chunk lies inside `out`, which is borrowed
        // mutably for this whole call; `for_each_task` runs each `i` exactly once, so no two
        // calls get overlapping chunks; `O: Send` lets another thread have the chunk.
        let chunk = unsafe { std::slice::from_raw_parts_mut(base.0.add(start), n) };
        f(start, chunk)
    });
}

/// What [`for_each_chunk_pair_mut`] calls: `(start, a_chunk, b_chunk)`.
type PairBody<'a, A, B> = dyn Fn(usize, &mut [A], &mut [B]) + Sync + 'a;

/// `f(start, a_chunk, b_chunk)` for the matching `chunk_len`-element chunks of two slices of
/// the same length (a value and its index, as max pooling writes them).
pub(crate) fn for_each_chunk_pair_mut<A: Send, B: Send>(
    a: &mut [A],
    b: &mut [B],
    chunk_len: usize,
    f: &PairBody<'_, A, B>,
) {
    assert_eq!(
        a.len(),
        b.len(),
        "chunk pairs of slices of different lengths"
    );
    let chunk_len = chunk_len.max(1);
    let len = a.len();
    let (pa, pb) = (SendPtr(a.as_mut_ptr()), SendPtr(b.as_mut_ptr()));
    for_each_task(len.div_ceil(chunk_len), &|i| {
        let start = i * chunk_len;
        let n = chunk_len.min(len - start);
        let (pa, pb) = (&pa, &pb);
        // SAFETY: as in `for_each_chunk_mut`, for each slice (both have `len` elements).
        let (ca, cb) = unsafe {
            (
                std::slice::from_raw_parts_mut(pa.0.add(start), n),
                std::slice::from_raw_parts_mut(pb.0.add(start), n),
            )
        };
        f(start, ca, cb)
    });
}

/// `f(item)` for each of `items`, each exactly once, through [`for_each_task`], with the
/// results in the items' order: for a loop over several slices at once, split into matching
/// chunks (an optimizer's parameter, gradient and states), or for partial results that are
/// then combined in a fixed order (the same bits on any thread count).
pub(crate) fn map_items<I: Send, R: Send>(items: Vec<I>, f: &(dyn Fn(I) -> R + Sync)) -> Vec<R> {
    // One slot per item: the task that takes index `i` is its only user, so the locks are
    // never contended; they are what lets a shared slot hand its item out by value.
    let slots: Vec<Mutex<(Option<I>, Option<R>)>> = items
        .into_iter()
        .map(|item| Mutex::new((Some(item), None)))
        .collect();
    let lock = |i: usize| slots[i].lock().unwrap_or_else(|e| e.into_inner());
    for_each_task(slots.len(), &|i| {
        let item = lock(i).0.take();
        if let Some(item) = item {
            let result = f(item);
            lock(i).1 = Some(result);
        }
    });
    slots
        .into_iter()
        .map(|slot| {
            let (_, result) = slot.into_inner().unwrap_or_else(|e| e.into_inner());
            result.expect("every task ran")
        })
        .collect()
}

/// A pointer into a slice whose disjoint parts are handed to other threads (the chunks of the
/// `for_each_chunk*` functions; the GEMM's bands of columns).
pub(crate) struct SendPtr<O>(*mut O);
// SAFETY: tasks only copy the pointer out; every user writes through it to disjoint parts of
// the slice, one task each, and `O: Send` lets another thread have them.
unsafe impl<O: Send> Sync for SendPtr<O> {}

impl<O> SendPtr<O> {
    /// The slice's pointer, for tasks to write their own disjoint parts through.
    pub(crate) fn new(slice: &mut [O]) -> Self {
        SendPtr(slice.as_mut_ptr())
    }

    /// The pointer `i` elements on (computed, not dereferenced).
    pub(crate) fn at(&self, i: usize) -> *mut O {
        self.0.wrapping_add(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every task runs exactly once, whatever the count (none, one, fewer than the threads,
    /// many), from outside the pool and from inside it.
    #[test]
    fn each_task_runs_once() {
        let check = || {
            for tasks in [0usize, 1, 2, 3, 17, 200] {
                let hits: Vec<AtomicUsize> = (0..tasks).map(|_| AtomicUsize::new(0)).collect();
                for_each_task(tasks, &|i| {
                    hits[i].fetch_add(1, Ordering::Relaxed);
                });
                assert!(
                    hits.iter().all(|h| h.load(Ordering::Relaxed) == 1),
                    "{tasks}"
                );
            }
        };
        check();
        if !cfg!(miri) {
            // Inside `rayon`'s pool (which does not run under Miri, see `pool_threads`).
            rayon::scope(|_| check());
        }
    }

    /// Every item is handed to `f` once, by value, and its result comes back in its place,
    /// from outside the pool and from inside it; items can be chunks of several slices.
    #[test]
    fn items_map_in_order() {
        let check = || {
            for len in [0usize, 1, 2, 3, 17, 200] {
                let mut a: Vec<usize> = (0..len).collect();
                let b: Vec<usize> = (0..len).map(|i| 1000 * i).collect();
                let items: Vec<_> = a.chunks_mut(3).zip(b.chunks(3)).collect();
                let sums = map_items(items, &|(a, b)| {
                    for (a, &b) in a.iter_mut().zip(b) {
                        *a += b;
                    }
                    a.iter().sum::<usize>()
                });
                let want: Vec<usize> = (0..len)
                    .map(|i| 1001 * i)
                    .collect::<Vec<_>>()
                    .chunks(3)
                    .map(|c| c.iter().sum())
                    .collect();
                assert_eq!(sums, want, "{len}");
                assert!(a.iter().enumerate().all(|(i, &v)| v == 1001 * i), "{len}");
            }
        };
        check();
        if !cfg!(miri) {
            rayon::scope(|_| check());
        }
    }

    /// Each chunk is handed out once, at its start, with the right length.
    #[test]
    fn chunks_cover_the_slice() {
        for (len, chunk) in [(0usize, 4usize), (1, 4), (9, 4), (64, 8), (1000, 7)] {
            let mut v = vec![0usize; len];
            for_each_chunk_mut(&mut v, chunk, &|start, c| {
                assert!(c.len() <= chunk);
                for (j, x) in c.iter_mut().enumerate() {
                    *x += start + j + 1;
                }
            });
            assert!(
                v.iter().enumerate().all(|(i, &x)| x == i + 1),
                "{len}/{chunk}"
            );
            let mut w = vec![0u8; len];
            v.fill(0);
            for_each_chunk_pair_mut(&mut v, &mut w, chunk, &|start, a, b| {
                for (j, (x, y)) in a.iter_mut().zip(b).enumerate() {
                    *x += start + j + 1;
                    *y += 1;
                }
            });
            assert!(
                v.iter().enumerate().all(|(i, &x)| x == i + 1),
                "{len}/{chunk}"
            );
            assert!(w.iter().all(|&y| y == 1), "{len}/{chunk}");
        }
    }

    /// Loops from several threads at once, each with lingering helpers to claim: every task
    /// runs once, no more helpers linger than the pool has threads to spare, and once the
    /// loops stop, every helper stops lingering and every claim is settled.
    #[test]
    fn lingering_helpers_are_claimed_and_released() {
        if cfg!(miri) {
            return; // no lingering under Miri (`claim`)
        }
        let spare = pool_threads().saturating_sub(1);
        let lingered = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for round in 0..300 {
                        let tasks = 1 + round % 9;
                        let hits: Vec<AtomicUsize> =
                            (0..tasks).map(|_| AtomicUsize::new(0)).collect();
                        for_each_task(tasks, &|i| {
                            hits[i].fetch_add(1, Ordering::Relaxed);
                        });
                        assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
                        // Some loops come as the lingering helpers give up: a claim made
                        // as a helper's time runs out must still be taken.
                        if round % 4 == 0 {
                            let jitter = Duration::from_micros(round as u64 % 61);
                            std::thread::sleep(LINGER - Duration::from_micros(30) + jitter);
                        }
                        let l = lingering();
                        let owed: usize = l.jobs.iter().map(|(_, left)| left).sum();
                        assert!(l.idle + owed <= spare, "{} + {owed} > {spare}", l.idle);
                        assert!(l.jobs.iter().all(|(_, left)| *left > 0));
                        lingered.fetch_max(l.idle + owed, Ordering::Relaxed);
                    }
                });
            }
        });
        if spare > 0 {
            assert!(
                lingered.load(Ordering::Relaxed) > 0,
                "no helper ever lingered"
            );
        }
        // Other tests may be running loops too: wait for a moment with none lingering.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            {
                let l = lingering();
                if l.idle == 0 && l.jobs.is_empty() {
                    break;
                }
            }
            assert!(
                Instant::now() < deadline,
                "helpers still lingering after a minute"
            );
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// A panicking task reaches the caller as a panic (not an abort in a pool thread), after
    /// the other tasks have finished.
    #[test]
    fn a_panic_reaches_the_caller() {
        let ran = AtomicUsize::new(0);
        let r = catch_unwind(AssertUnwindSafe(|| {
            for_each_task(64, &|i| {
                ran.fetch_add(1, Ordering::Relaxed);
                assert!(i != 5, "task five");
            })
        }));
        assert!(r.is_err());
        assert_eq!(ran.load(Ordering::Relaxed), 64);
        if cfg!(miri) {
            return; // `rayon`'s pool does not run under Miri (see `pool_threads`)
        }
        // The same on one thread.
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        ran.store(0, Ordering::Relaxed);
        let r = one.install(|| {
            catch_unwind(AssertUnwindSafe(|| {
                for_each_task(64, &|i| {
                    ran.fetch_add(1, Ordering::Relaxed);
                    assert!(i != 5, "task five");
                })
            }))
        });
        assert!(r.is_err());
        assert_eq!(ran.load(Ordering::Relaxed), 64);
    }
}
