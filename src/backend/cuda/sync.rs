//! Host syncs: a process-wide counter and PyTorch's sync debug mode.
//!
//! CUDA work is asynchronous: an op only queues a kernel and returns. The host waits for the
//! GPU only when it needs a value (`to_vec`, `item`, printing, `to(Cpu)`), at an explicit
//! [`synchronize`](super::synchronize), and when a [`Timer`](super::Timer) is read. Every such
//! wait adds one to [`sync_count`] (the whole process) and to [`thread_sync_count`] (the thread
//! that waited), so a test can prove that a training loop never waits.
//!
//! [`set_sync_debug_mode`] works like `torch.cuda.set_sync_debug_mode`: in `Warn` mode each
//! implicit sync (a value read back) prints `called a synchronizing CUDA operation` to stderr,
//! in `Error` mode it fails with [`Error::SynchronizingOperation`] before waiting. Explicit
//! waits (`synchronize`, timers) are counted but never warned about, as in PyTorch.

use crate::core::error::{Error, Result};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

/// What to do when an operation makes the host wait for the GPU (PyTorch's
/// `torch.cuda.set_sync_debug_mode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SyncDebugMode {
    /// Syncs happen silently (PyTorch's `"default"`, 0).
    #[default]
    Default,
    /// Each implicit sync prints `called a synchronizing CUDA operation` to stderr (`"warn"`, 1).
    Warn,
    /// Each implicit sync fails with [`Error::SynchronizingOperation`] (`"error"`, 2).
    Error,
}

static MODE: AtomicU8 = AtomicU8::new(0);
static COUNT: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static THREAD_COUNT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Sets what happens when an op makes the host wait for the GPU; see [`SyncDebugMode`].
///
/// ```
/// use devtype::cuda::{set_sync_debug_mode, sync_debug_mode, SyncDebugMode};
/// set_sync_debug_mode(SyncDebugMode::Warn);
/// assert_eq!(sync_debug_mode(), SyncDebugMode::Warn);
/// set_sync_debug_mode(SyncDebugMode::Default);
/// ```
pub fn set_sync_debug_mode(mode: SyncDebugMode) {
    let value = match mode {
        SyncDebugMode::Default => 0,
        SyncDebugMode::Warn => 1,
        SyncDebugMode::Error => 2,
    };
    MODE.store(value, Ordering::SeqCst);
}

/// The current sync debug mode.
pub fn sync_debug_mode() -> SyncDebugMode {
    match MODE.load(Ordering::SeqCst) {
        1 => SyncDebugMode::Warn,
        2 => SyncDebugMode::Error,
        _ => SyncDebugMode::Default,
    }
}

/// How many times, since the process started, the host has waited for a GPU (value reads,
/// `to(Cpu)`, explicit synchronisations, timer reads). Compare two readings around a loop to
/// prove that it never waits.
pub fn sync_count() -> u64 {
    COUNT.load(Ordering::SeqCst)
}

/// How many times the calling thread has waited for a GPU (the waits [`sync_count`] counts,
/// made on this thread). Other threads' waits (a test running beside it, a data-loading
/// worker) do not move it, so two readings around a loop prove that this loop never waits.
///
/// ```
/// use devtype::cuda::thread_sync_count;
/// use devtype::prelude::*;
///
/// # fn main() -> devtype::Result<()> {
/// let before = thread_sync_count();
/// std::thread::spawn(|| {
///     if let Ok(gpu) = Cuda::<0>::open() {
///         gpu.synchronize().unwrap();            // another thread's wait
///     }
/// })
/// .join()
/// .unwrap();
/// assert_eq!(thread_sync_count(), before);
/// # Ok(())
/// # }
/// ```
pub fn thread_sync_count() -> u64 {
    THREAD_COUNT.with(|c| c.get())
}

/// Called before an implicit host sync (a value read back): applies the debug mode.
pub(crate) fn before_implicit_sync() -> Result<()> {
    match sync_debug_mode() {
        SyncDebugMode::Default => Ok(()),
        SyncDebugMode::Warn => {
            eprintln!("warning: called a synchronizing CUDA operation");
            Ok(())
        }
        SyncDebugMode::Error => Err(Error::SynchronizingOperation),
    }
}

/// Records one host wait.
pub(crate) fn record_sync() {
    COUNT.fetch_add(1, Ordering::SeqCst);
    // A thread being torn down has no count left to read: nothing to add to.
    let _ = THREAD_COUNT.try_with(|c| c.set(c.get() + 1));
}
