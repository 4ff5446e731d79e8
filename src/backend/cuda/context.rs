//! Opening GPUs: driver probing, one context and stream per device, and error mapping.
//!
//! Each opened GPU gets the device's primary context and one non-blocking stream, created once
//! per process and shared by every tensor on that device. All devtype work on a device is
//! queued on that one stream, so its order is the program's order; that is why cudarc's
//! per-buffer event tracking is switched off (it would record two events per kernel argument).
//! Copies between two GPUs order the two streams explicitly (see `ops/copy/cuda.rs`).
//! Beside it each GPU has a copy stream, used only by asynchronous uploads from pinned memory
//! (`to_async`): the compute stream waits for each such copy's event, so stream order still
//! orders every use of the uploaded buffer (see `ops/copy/cuda.rs`, `upload_async`).

use super::blas::BlasCache;
use super::kernels::KernelCache;
use crate::core::error::{Error, Result};
use cudarc::driver::sys::{self, CUresult};
use cudarc::driver::{CudaContext, CudaStream, DriverError};
use std::sync::{Arc, Mutex};

/// The oldest driver API version the kernels and cudarc bindings are built for (CUDA 13.0).
pub(crate) const REQUIRED_DRIVER_VERSION: i32 = 13000;

/// The device's default memory pool (stream-ordered allocation).
pub(crate) struct MemPool(pub(crate) sys::CUmemoryPool);

// SAFETY: a `CUmemoryPool` is a driver handle that the driver lets any thread use; devtype
// never destroys the default pool.
unsafe impl Send for MemPool {}
// SAFETY: as above; the driver synchronises its own pool state.
unsafe impl Sync for MemPool {}

/// Everything devtype holds for one opened GPU.
pub(crate) struct GpuContext {
    pub(crate) ordinal: usize,
    pub(crate) context: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
    /// A second stream for asynchronous copies from page-locked memory, so that they overlap
    /// the compute stream's work; the compute stream waits for each copy's event.
    pub(crate) copy_stream: Arc<CudaStream>,
    /// Streaming multiprocessors, to size grids that fill the GPU.
    pub(crate) sm_count: u32,
    /// Compute capability `(major, minor)`: NVRTC compiles for `sm_{major}{minor}`.
    pub(crate) compute_capability: (i32, i32),
    /// The default memory pool, when the device supports stream-ordered allocation.
    pub(crate) pool: Option<MemPool>,
    /// Kernels compiled and loaded for this device, one module per kernel file.
    pub(crate) kernels: KernelCache,
    /// The cuBLAS handle on this device's stream, created on first use.
    pub(crate) blas: BlasCache,
    /// True while a graph capture (`devtype::cuda::graph`) is in progress on the stream.
    pub(crate) capturing: std::sync::atomic::AtomicBool,
}

impl GpuContext {
    /// Waits for all work queued on this GPU.
    pub(crate) fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(|e| self.error("cuStreamSynchronize", e))
    }

    /// Maps a driver error of an operation on this GPU; out-of-memory becomes
    /// [`Error::OutOfMemory`] with the device's numbers.
    pub(crate) fn error(&self, context: &'static str, e: DriverError) -> Error {
        if e.0 == CUresult::CUDA_ERROR_OUT_OF_MEMORY {
            return super::memory::out_of_memory(self, 0);
        }
        driver_error(context, e)
    }

    /// Fails with the driver's `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED` while a graph capture is
    /// in progress on this GPU: for what cannot be recorded into a graph (loading a kernel
    /// module, creating the cuBLAS handle), which the capture's warm-up run does beforehand.
    pub(crate) fn not_capturing(&self, context: &'static str) -> Result<()> {
        if self.capturing.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(driver_error(
                context,
                DriverError(CUresult::CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED),
            ));
        }
        Ok(())
    }

    /// Makes this GPU's context current on the calling thread (needed before raw driver calls).
    pub(crate) fn bind(&self) -> Result<()> {
        self.context
            .bind_to_thread()
            .map_err(|e| self.error("cuCtxSetCurrent", e))
    }
}

/// Opened devices, by ordinal. Entries are never removed, so references stay valid.
static DEVICES: Mutex<Vec<Option<&'static GpuContext>>> = Mutex::new(Vec::new());

/// Maps a cudarc driver error without formatting it through the driver: cudarc's `Display`
/// calls `cuGetErrorString`, which needs a loaded driver, so only the code's name is kept.
///
/// The code is kept as it is: a call that knows which ordinal it asked for maps an invalid
/// device to [`Error::InvalidDeviceOrdinal`] itself (see [`open`]), so no error ever names a
/// made-up ordinal.
pub(crate) fn driver_error(context: &'static str, e: DriverError) -> Error {
    Error::Cuda {
        context,
        name: format!("{:?}", e.0),
        code: e.0 as i32,
    }
}

/// True when the CUDA driver library loads and is a driver (see [`super::loader`]).
fn driver_present() -> bool {
    super::loader::driver_basic().is_ok()
}

/// The CUDA version the driver supports (`13000` for CUDA 13.0), or `None` without a driver.
pub(crate) fn driver_version() -> Option<i32> {
    if !driver_present() {
        return None;
    }
    let mut version = 0i32;
    // SAFETY: the driver library is loaded and has `cuDriverGetVersion` (probed above); the
    // call only writes the version into the pointed-to integer and needs no `cuInit`.
    let status = unsafe { sys::cuDriverGetVersion(&mut version) };
    (status == CUresult::CUDA_SUCCESS).then_some(version)
}

/// How many GPUs the driver sees: 0 without a driver, or with a library that is not one.
/// Never panics.
pub fn device_count() -> usize {
    if !driver_present() {
        return 0;
    }
    super::loader::contain("cuDeviceGetCount", || {
        CudaContext::device_count().map_err(|e| driver_error("cuDeviceGetCount", e))
    })
    .map(|n| n.max(0) as usize)
    .unwrap_or(0)
}

/// True when at least one GPU can be used (PyTorch's `torch.cuda.is_available()`).
pub fn is_available() -> bool {
    device_count() > 0
}

/// The name the driver reports for GPU `ordinal` (PyTorch's `torch.cuda.get_device_name`),
/// opening the device if needed.
///
/// ```
/// // Without a GPU (or with fewer than 8), an error, never a panic.
/// assert!(devtype::cuda::get_device_name(8).is_err());
/// ```
pub fn get_device_name(ordinal: usize) -> Result<String> {
    let gpu = open(ordinal)?;
    gpu.context
        .name()
        .map_err(|e| driver_error("cuDeviceGetName", e))
}

/// True when GPU `ordinal` has been opened in this process.
pub(crate) fn is_open(ordinal: usize) -> bool {
    DEVICES
        .lock()
        .map(|d| d.get(ordinal).is_some_and(|e| e.is_some()))
        .unwrap_or(false)
}

/// The opened GPU `ordinal`, opening it on first use.
pub(crate) fn get(ordinal: usize) -> Result<&'static GpuContext> {
    open(ordinal)
}

/// Opens GPU `ordinal` once per process; later calls return the same context.
pub(crate) fn open(ordinal: usize) -> Result<&'static GpuContext> {
    let mut devices = DEVICES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(Some(ctx)) = devices.get(ordinal) {
        return Ok(ctx);
    }
    // No driver: `NoDriver`; a file that is not a driver: `BrokenLibrary`, never a panic.
    super::loader::driver_basic()?;
    match driver_version() {
        Some(found) if found < REQUIRED_DRIVER_VERSION => {
            return Err(Error::DriverTooOld {
                found,
                required: REQUIRED_DRIVER_VERSION,
            })
        }
        _ => {}
    }
    super::loader::driver_full()?;
    let ctx = super::loader::contain("cuInit", || open_new(ordinal))?;
    if devices.len() <= ordinal {
        devices.resize(ordinal + 1, None);
    }
    devices[ordinal] = Some(ctx);
    Ok(ctx)
}

/// [`open`] once the driver is known to be usable; returns the context to record.
fn open_new(ordinal: usize) -> Result<&'static GpuContext> {
    let count = CudaContext::device_count().map_err(|e| match e.0 {
        CUresult::CUDA_ERROR_NO_DEVICE => Error::InvalidDeviceOrdinal { ordinal, count: 0 },
        _ => driver_error("cuInit", e),
    })?;
    let count = count.max(0) as usize;
    if ordinal >= count {
        return Err(Error::InvalidDeviceOrdinal { ordinal, count });
    }
    let context = CudaContext::new(ordinal).map_err(|e| match e.0 {
        CUresult::CUDA_ERROR_INVALID_DEVICE | CUresult::CUDA_ERROR_NO_DEVICE => {
            Error::InvalidDeviceOrdinal { ordinal, count }
        }
        _ => driver_error("cuDevicePrimaryCtxRetain", e),
    })?;
    // SAFETY: every devtype operation on this device runs on the one stream created below, so
    // stream order already orders every use of every buffer, and buffers are freed in stream
    // order (`cuMemFreeAsync` on the same stream). Cross-device copies wait on explicit events.
    // No buffer exists yet on this context, so none was created with tracking on.
    unsafe { context.disable_event_tracking() };
    let stream = context
        .new_stream()
        .map_err(|e| driver_error("cuStreamCreate", e))?;
    let copy_stream = context
        .new_stream()
        .map_err(|e| driver_error("cuStreamCreate", e))?;
    let attribute = |a| {
        context
            .attribute(a)
            .map_err(|e| driver_error("cuDeviceGetAttribute", e))
    };
    use sys::CUdevice_attribute::*;
    let sm_count = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?.max(1) as u32;
    let compute_capability = (
        attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
        attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
    );
    let pool = if context.has_async_alloc() {
        Some(default_pool(&context)?)
    } else {
        None
    };
    let ctx: &'static GpuContext = Box::leak(Box::new(GpuContext {
        ordinal,
        context,
        stream,
        copy_stream,
        sm_count,
        compute_capability,
        pool,
        kernels: KernelCache::new(),
        blas: BlasCache::new(),
        capturing: std::sync::atomic::AtomicBool::new(false),
    }));
    Ok(ctx)
}

/// The device's default memory pool, told to keep freed memory for reuse (as PyTorch's caching
/// allocator does) instead of returning it to the driver at every synchronisation.
fn default_pool(context: &Arc<CudaContext>) -> Result<MemPool> {
    context
        .bind_to_thread()
        .map_err(|e| driver_error("cuCtxSetCurrent", e))?;
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: the context is current and `cu_device` is its valid device handle; the call only
    // writes the pool handle.
    unsafe { sys::cuDeviceGetDefaultMemPool(&mut pool, context.cu_device()) }
        .result()
        .map_err(|e| driver_error("cuDeviceGetDefaultMemPool", e))?;
    let mut threshold: u64 = u64::MAX;
    // SAFETY: `pool` is the valid default pool; the release threshold attribute is a u64 read
    // from the pointer during the call.
    unsafe {
        sys::cuMemPoolSetAttribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut threshold as *mut u64).cast(),
        )
    }
    .result()
    .map_err(|e| driver_error("cuMemPoolSetAttribute", e))?;
    Ok(MemPool(pool))
}
