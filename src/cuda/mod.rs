//! The CUDA backend on `cudarc`: one context and stream per GPU, shared by the process.
//!
//! The driver, NVRTC and cuBLAS are loaded at run time, so devtype builds and runs on machines
//! without CUDA: [`Cuda::open`](crate::Cuda::open) then returns an error, never panics.
//!
//! - **Asynchrony.** Ops only queue work on the device's stream and return; memory is
//!   allocated and freed in stream order. The host waits only in `to_vec`, `item`, printing,
//!   `to(Cpu)`, [`synchronize`] and [`Timer::elapsed_ms`]. [`sync_count`] counts those waits
//!   and [`set_sync_debug_mode`] makes implicit ones warn or fail, as
//!   `torch.cuda.set_sync_debug_mode` does.
//! - **Kernels** live in `kernels/*.cu`, are embedded in the crate, and are compiled by NVRTC
//!   for the device's architecture the first time an op family runs on a device
//!   ([`compile_kernels`] does the same without a GPU). Matrix products use cuBLAS.
//!   Compiled kernels are kept on disk, in `$DEVTYPE_KERNEL_CACHE` (default
//!   `~/.cache/devtype/kernels`; `off` to disable), keyed by a hash of NVRTC's version, the
//!   architecture, the options and the sources: later processes load them without compiling.
//! - **Memory.** [`memory_allocated`] tracks the bytes of live tensors per device. Running out
//!   of memory is [`Error::OutOfMemory`](crate::Error::OutOfMemory); the device stays usable.

pub(crate) mod blas;
pub(crate) mod context;
pub(crate) mod disk_cache;
pub(crate) mod kernels;
pub(crate) mod launch;
pub(crate) mod loader;
pub(crate) mod memory;
pub(crate) mod nvrtc;
pub(crate) mod sync;
mod timer;

pub use context::{device_count, is_available};
pub use kernels::{compile_kernels, nvrtc_version, KernelReport};
pub use memory::{empty_cache, max_memory_allocated, memory_allocated};
pub use sync::{set_sync_debug_mode, sync_count, sync_debug_mode, SyncDebugMode};
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
