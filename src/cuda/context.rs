//! Opening GPUs: driver probing, one context and stream per device, and error mapping.

use crate::error::{Error, Result};
use cudarc::driver::{CudaContext, CudaStream, DriverError};
use std::sync::{Arc, Mutex, OnceLock};

/// Everything devtype holds for one opened GPU.
pub(crate) struct GpuContext {
    pub(crate) ordinal: usize,
    pub(crate) context: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
}

impl GpuContext {
    pub(crate) fn synchronize(&self) -> Result<()> {
        self.stream
            .synchronize()
            .map_err(|e| driver_error("cuStreamSynchronize", e))
    }
}

/// Opened devices, by ordinal. Entries are never removed, so references stay valid.
static DEVICES: Mutex<Vec<Option<&'static GpuContext>>> = Mutex::new(Vec::new());

/// Maps a cudarc driver error without formatting it through the driver.
pub(crate) fn driver_error(context: &'static str, e: DriverError) -> Error {
    use cudarc::driver::sys::CUresult;
    match e.0 {
        CUresult::CUDA_ERROR_INVALID_DEVICE => Error::InvalidDeviceOrdinal {
            ordinal: usize::MAX,
            count: 0,
        },
        CUresult::CUDA_ERROR_NO_DEVICE => Error::InvalidDeviceOrdinal {
            ordinal: usize::MAX,
            count: 0,
        },
        code => Error::Cuda {
            context,
            name: format!("{code:?}"),
            code: code as i32,
        },
    }
}

/// True when the CUDA driver library can be loaded.
fn driver_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: `is_culib_present` only tries to dlopen the driver library by its known names.
    *PRESENT.get_or_init(|| unsafe { cudarc::driver::sys::is_culib_present() })
}

/// How many GPUs the driver sees: 0 without a driver. Never panics.
pub fn device_count() -> usize {
    if !driver_present() {
        return 0;
    }
    CudaContext::device_count()
        .map(|n| n.max(0) as usize)
        .unwrap_or(0)
}

/// True when at least one GPU can be used (PyTorch's `torch.cuda.is_available()`).
pub fn is_available() -> bool {
    device_count() > 0
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
    if !driver_present() {
        return Err(Error::NoDriver);
    }
    let count = CudaContext::device_count().map_err(|e| match e.0 {
        cudarc::driver::sys::CUresult::CUDA_ERROR_NO_DEVICE => Error::InvalidDeviceOrdinal { ordinal, count: 0 },
        _ => driver_error("cuInit", e),
    })?;
    let count = count.max(0) as usize;
    if ordinal >= count {
        return Err(Error::InvalidDeviceOrdinal { ordinal, count });
    }
    let context = CudaContext::new(ordinal).map_err(|e| driver_error("cuCtxCreate", e))?;
    let stream = context
        .new_stream()
        .map_err(|e| driver_error("cuStreamCreate", e))?;
    let ctx: &'static GpuContext = Box::leak(Box::new(GpuContext {
        ordinal,
        context,
        stream,
    }));
    if devices.len() <= ordinal {
        devices.resize(ordinal + 1, None);
    }
    devices[ordinal] = Some(ctx);
    Ok(ctx)
}
