//! Probing the CUDA libraries before cudarc calls into them.
//!
//! cudarc (with `dynamic-loading`) opens each library by the first of its candidate names that
//! `dlopen` accepts and resolves every function on its first call, panicking (`Missing symbol
//! cuDriverGetVersion: dlsym failed`) when the file lacks it: a stub `libcuda.so` from a
//! toolkit's `stubs/` folder, or an unrelated file first on `LD_LIBRARY_PATH`. devtype never
//! lets that happen: before the first call into a library it asks cudarc for the very library
//! it will use (`culib()`, after `is_culib_present()` says one loads) and looks up every symbol
//! devtype and cudarc's safe layer call. A missing one is [`Error::BrokenLibrary`], naming the
//! file and the symbol; an absent library is [`Error::NoDriver`] or [`Error::MissingLibrary`].
//!
//! [`contain`] is the second line of defence: it turns a panic of a cudarc call into an error.

use crate::core::error::{Error, Result};
use std::ffi::c_void;
use std::sync::OnceLock;

/// A CUDA library devtype loads at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Library {
    /// `libcuda`, the driver.
    Driver,
    /// `libnvrtc`, the run-time compiler.
    Nvrtc,
    /// `libcublas`.
    Cublas,
}

/// Driver functions needed to count devices and read the driver's version (present in every
/// driver of the last decade).
const DRIVER_BASIC: &[&str] = &[
    "cuDriverGetVersion",
    "cuInit",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuGetErrorName",
    "cuGetErrorString",
];

/// Driver functions devtype and cudarc's safe layer call once a device is opened.
const DRIVER_FULL: &[&str] = &[
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuDeviceGetAttribute",
    "cuDeviceGetDefaultMemPool",
    "cuCtxSetCurrent",
    "cuCtxGetCurrent",
    "cuCtxSynchronize",
    "cuStreamCreate",
    "cuStreamDestroy_v2",
    "cuStreamSynchronize",
    "cuStreamWaitEvent",
    "cuEventCreate",
    "cuEventRecord",
    "cuEventSynchronize",
    "cuEventDestroy_v2",
    "cuMemAllocAsync",
    "cuMemFreeAsync",
    "cuMemGetInfo_v2",
    "cuMemPoolGetAttribute",
    "cuMemPoolSetAttribute",
    "cuMemPoolTrimTo",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuMemcpyDtoDAsync_v2",
    "cuMemsetD8Async",
    "cuModuleLoadData",
    "cuModuleGetFunction",
    "cuModuleUnload",
    "cuLaunchKernel",
];

const NVRTC: &[&str] = &[
    "nvrtcVersion",
    "nvrtcGetNumSupportedArchs",
    "nvrtcGetSupportedArchs",
    "nvrtcCreateProgram",
    "nvrtcCompileProgram",
    "nvrtcDestroyProgram",
    "nvrtcGetProgramLogSize",
    "nvrtcGetProgramLog",
    "nvrtcGetPTXSize",
    "nvrtcGetPTX",
    "nvrtcGetCUBINSize",
    "nvrtcGetCUBIN",
];

const CUBLAS: &[&str] = &[
    "cublasCreate_v2",
    "cublasDestroy_v2",
    "cublasSetStream_v2",
    "cublasSetMathMode",
    "cublasSetWorkspace_v2",
    "cublasSgemmStridedBatched",
    "cublasDgemmStridedBatched",
];

impl Library {
    /// The name used in errors.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Library::Driver => "libcuda",
            Library::Nvrtc => "libnvrtc",
            Library::Cublas => "libcublas",
        }
    }

    /// True when cudarc finds a file to load for this library.
    fn loads(self) -> bool {
        if cfg!(miri) {
            // Miri cannot load shared libraries.
            return false;
        }
        // SAFETY: `is_culib_present` only tries to `dlopen` the library by cudarc's candidate
        // names (running the file's initialisers, as any use of the library would).
        unsafe {
            match self {
                Library::Driver => cudarc::driver::sys::is_culib_present(),
                Library::Nvrtc => cudarc::nvrtc::sys::is_culib_present(),
                Library::Cublas => cudarc::cublas::sys::is_culib_present(),
            }
        }
    }

    /// True when the library cudarc uses has `symbol`. Only called after [`Library::loads`].
    fn has(self, symbol: &str) -> bool {
        // SAFETY: `culib` returns the library cudarc calls through, opening it by the same
        // names `is_culib_present` just found loadable (so it does not panic); `get` only
        // looks the symbol up with `dlsym`, and the pointer is never called or dereferenced.
        unsafe {
            let lib = match self {
                Library::Driver => cudarc::driver::sys::culib(),
                Library::Nvrtc => cudarc::nvrtc::sys::culib(),
                Library::Cublas => cudarc::cublas::sys::culib(),
            };
            lib.get::<*const c_void>(symbol.as_bytes()).is_ok()
        }
    }

    /// The file the library was loaded from, read from `/proc/self/maps`; cudarc's candidate
    /// name when that is not readable.
    fn path(self) -> String {
        let stem = &self.name()[3..];
        let matches = |file: &str| {
            let so = format!("lib{stem}.so");
            file == so || file.starts_with(&format!("{so}."))
        };
        if let Ok(maps) = std::fs::read_to_string("/proc/self/maps") {
            for line in maps.lines() {
                if let Some(at) = line.find('/') {
                    let path = line[at..].trim();
                    let file = path.rsplit('/').next().unwrap_or(path);
                    if matches(file) {
                        return path.to_string();
                    }
                }
            }
        }
        format!("lib{stem}.so (the first of cudarc's names for it that loads)")
    }

    /// The first of `symbols` this library lacks.
    fn missing(self, symbols: &[&str]) -> Option<String> {
        symbols.iter().find(|s| !self.has(s)).map(|s| s.to_string())
    }

    fn absent_error(self) -> Error {
        match self {
            Library::Driver => Error::NoDriver,
            other => Error::MissingLibrary {
                library: other.name(),
            },
        }
    }

    fn broken(self, symbol: String) -> Error {
        Error::BrokenLibrary {
            library: self.name(),
            path: self.path(),
            symbol,
        }
    }
}

/// The outcome of probing one library with one symbol list, computed once per process.
fn probe(
    lib: Library,
    symbols: &'static [&'static str],
    cell: &OnceLock<Result<()>>,
) -> Result<()> {
    cell.get_or_init(|| {
        if !lib.loads() {
            return Err(lib.absent_error());
        }
        match lib.missing(symbols) {
            Some(symbol) => Err(lib.broken(symbol)),
            None => Ok(()),
        }
    })
    .clone()
}

/// Checks that the driver loads and can count devices and report its version: `Err(NoDriver)`
/// without one, `Err(BrokenLibrary)` for a file that is not a driver.
pub(crate) fn driver_basic() -> Result<()> {
    static CELL: OnceLock<Result<()>> = OnceLock::new();
    probe(Library::Driver, DRIVER_BASIC, &CELL)
}

/// [`driver_basic`], then every driver function an opened device uses.
pub(crate) fn driver_full() -> Result<()> {
    driver_basic()?;
    static CELL: OnceLock<Result<()>> = OnceLock::new();
    probe(Library::Driver, DRIVER_FULL, &CELL)
}

/// Checks that `libnvrtc` loads and has every function devtype calls.
pub(crate) fn nvrtc() -> Result<()> {
    static CELL: OnceLock<Result<()>> = OnceLock::new();
    probe(Library::Nvrtc, NVRTC, &CELL)
}

/// Checks that `libcublas` loads and has every function devtype and cudarc call.
pub(crate) fn cublas() -> Result<()> {
    static CELL: OnceLock<Result<()>> = OnceLock::new();
    probe(Library::Cublas, CUBLAS, &CELL)
}

/// Runs `f`, turning a panic inside it (a cudarc call that found a symbol missing after all)
/// into an error naming `call`, so no cudarc panic reaches the caller.
pub(crate) fn contain<T>(call: &'static str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let message = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic without a message".to_string());
            Err(Error::LibraryPanicked { call, message })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_error() {
        let r: Result<()> = contain("cuInit", || panic!("Missing symbol cuInit: dlsym failed"));
        match r {
            Err(Error::LibraryPanicked { call, message }) => {
                assert_eq!(call, "cuInit");
                assert!(message.contains("Missing symbol cuInit"), "{message}");
            }
            other => panic!("expected an error, got {other:?}"),
        }
        assert_eq!(contain("x", || Ok(3)).unwrap(), 3);
    }
}
