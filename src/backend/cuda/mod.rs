//! The CUDA backend on `cudarc`; its public face is [`crate::cuda`].

pub(crate) mod blas;
pub(crate) mod context;
pub(crate) mod disk_cache;
pub(crate) mod kernels;
pub(crate) mod launch;
pub(crate) mod loader;
pub(crate) mod memory;
pub(crate) mod nvrtc;
pub(crate) mod pinned;
pub(crate) mod sync;
mod timer;

pub use blas::{allow_tf32, set_allow_tf32};
pub use context::{device_count, get_device_name, is_available};
pub use kernels::nvrtc_version;
pub use memory::{empty_cache, max_memory_allocated, memory_allocated};
pub use pinned::{empty_pinned_cache, pinned_memory_allocated, pinned_memory_reserved};
pub use sync::{
    set_sync_debug_mode, sync_count, sync_debug_mode, thread_sync_count, SyncDebugMode,
};
pub use timer::Timer;

use crate::core::error::Result;

/// Waits for all work queued on GPU `ordinal` (PyTorch's `torch.cuda.synchronize(ordinal)`).
///
/// Counted by [`sync_count`]; as in PyTorch, an explicit synchronisation never triggers the
/// sync debug mode.
pub fn synchronize(ordinal: usize) -> Result<()> {
    context::get(ordinal)?.synchronize()?;
    sync::record_sync();
    Ok(())
}

/// True when NVRTC (`libnvrtc`) can be loaded, so kernels can be compiled.
pub fn nvrtc_available() -> bool {
    nvrtc::nvrtc_present()
}
