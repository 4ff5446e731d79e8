//! devtype's NVRTC loader: compiles one kernel file (with `kernels/common.cuh` as its only
//! header) for one GPU architecture, keeping the compiler's log even on success so callers can
//! reject warnings.
//!
//! It talks to `cudarc::nvrtc::sys` directly: cudarc's `compile_ptx` drops the log on success
//! and panics when `libnvrtc` is missing, while this probes the library first and returns
//! errors.

use crate::core::error::{Error, Result};
use cudarc::nvrtc::sys::{self, nvrtcResult};
use std::ffi::{c_char, c_int, CString};

/// The shared header every kernel file includes.
pub(crate) const COMMON_HEADER: &str = include_str!("../../../kernels/common.cuh");

/// Options every kernel file is compiled with (besides the architecture). `--fmad=false` keeps
/// multiply-adds rounded as on the CPU, so ranges and random numbers match it.
pub(crate) const OPTIONS: &[&str] = &["--std=c++17", "--fmad=false"];

/// A compiled kernel file.
pub(crate) struct Compiled {
    /// A CUBIN (for `sm_XY`) or NUL-terminated PTX (for `compute_XY`).
    pub(crate) image: Vec<u8>,
    /// The PTX, kept to check kernel names (present for both targets).
    pub(crate) ptx: String,
    /// NVRTC's log (warnings), empty for a clean compile.
    pub(crate) log: String,
    /// True when the image came from the on-disk cache (then `ptx` and `log` are empty).
    pub(crate) from_cache: bool,
}

/// True when `libnvrtc` loads and has every function devtype calls.
pub(crate) fn nvrtc_present() -> bool {
    super::loader::nvrtc().is_ok()
}

fn check(call: &'static str, status: nvrtcResult) -> Result<()> {
    if status == nvrtcResult::NVRTC_SUCCESS {
        Ok(())
    } else {
        Err(Error::Cuda {
            context: call,
            name: format!("{status:?}"),
            code: status as i32,
        })
    }
}

/// `Err(MissingLibrary)` without libnvrtc, `Err(BrokenLibrary)` for a file that lacks one of
/// its functions: never a cudarc panic.
fn require_nvrtc() -> Result<()> {
    super::loader::nvrtc()
}

/// NVRTC's version `(major, minor)`.
pub(crate) fn version() -> Result<(i32, i32)> {
    require_nvrtc()?;
    let (mut major, mut minor) = (0 as c_int, 0 as c_int);
    // SAFETY: libnvrtc is loaded; the call writes two integers.
    check("nvrtcVersion", unsafe {
        sys::nvrtcVersion(&mut major, &mut minor)
    })?;
    Ok((major, minor))
}

/// The architectures this NVRTC can compile for (`90` for `sm_90`), ascending.
pub(crate) fn supported_archs() -> Result<Vec<i32>> {
    require_nvrtc()?;
    let mut count: c_int = 0;
    // SAFETY: libnvrtc is loaded; the call writes one integer.
    check("nvrtcGetNumSupportedArchs", unsafe {
        sys::nvrtcGetNumSupportedArchs(&mut count)
    })?;
    let mut archs = vec![0 as c_int; count.max(0) as usize];
    if !archs.is_empty() {
        // SAFETY: `archs` has room for the `count` integers the call writes.
        check("nvrtcGetSupportedArchs", unsafe {
            sys::nvrtcGetSupportedArchs(archs.as_mut_ptr())
        })?;
    }
    archs.sort_unstable();
    Ok(archs)
}

/// The `--gpu-architecture` value for a device of compute capability `(major, minor)`: the
/// device's own `sm_XY` (a CUBIN, no JIT) when this NVRTC supports it, otherwise PTX for the
/// newest older architecture it supports (the driver JIT-compiles it).
pub(crate) fn arch_for(major: i32, minor: i32) -> Result<String> {
    let wanted = major * 10 + minor;
    let archs = supported_archs()?;
    if archs.contains(&wanted) {
        return Ok(format!("sm_{wanted}"));
    }
    match archs.iter().rev().find(|&&a| a <= wanted) {
        Some(a) => Ok(format!("compute_{a}")),
        None => Err(Error::KernelCompile {
            file: "(all)",
            log: format!(
                "this NVRTC supports architectures {archs:?}, none at or below the GPU's sm_{wanted}"
            ),
        }),
    }
}

/// Owns an NVRTC program and destroys it on every path.
struct Program(sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: the program was created by `nvrtcCreateProgram` and is destroyed once; the
        // result is ignored because nothing can be done about a failure here.
        let _ = unsafe { sys::nvrtcDestroyProgram(&mut self.0) };
    }
}

impl Program {
    fn log(&self) -> Result<String> {
        let mut size = 0usize;
        // SAFETY: the program is valid; the call writes one size.
        check("nvrtcGetProgramLogSize", unsafe {
            sys::nvrtcGetProgramLogSize(self.0, &mut size)
        })?;
        let mut buf = vec![0u8; size.max(1)];
        // SAFETY: `buf` has room for the `size` bytes (NUL included) the call writes.
        check("nvrtcGetProgramLog", unsafe {
            sys::nvrtcGetProgramLog(self.0, buf.as_mut_ptr() as *mut c_char)
        })?;
        Ok(text(&buf))
    }

    fn ptx(&self) -> Result<Vec<u8>> {
        let mut size = 0usize;
        // SAFETY: the program compiled; the call writes one size.
        check("nvrtcGetPTXSize", unsafe {
            sys::nvrtcGetPTXSize(self.0, &mut size)
        })?;
        let mut buf = vec![0u8; size.max(1)];
        // SAFETY: `buf` has room for the `size` bytes (NUL included) the call writes.
        check("nvrtcGetPTX", unsafe {
            sys::nvrtcGetPTX(self.0, buf.as_mut_ptr() as *mut c_char)
        })?;
        Ok(buf)
    }

    fn cubin(&self) -> Result<Vec<u8>> {
        let mut size = 0usize;
        // SAFETY: the program compiled for a real architecture; the call writes one size.
        check("nvrtcGetCUBINSize", unsafe {
            sys::nvrtcGetCUBINSize(self.0, &mut size)
        })?;
        let mut buf = vec![0u8; size.max(1)];
        // SAFETY: `buf` has room for the `size` bytes the call writes.
        check("nvrtcGetCUBIN", unsafe {
            sys::nvrtcGetCUBIN(self.0, buf.as_mut_ptr() as *mut c_char)
        })?;
        buf.truncate(size);
        Ok(buf)
    }
}

/// The text before the first NUL, lossily decoded and trimmed.
fn text(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).trim().to_string()
}

/// Compiles kernel file `file` (its text is `source`) for `arch` (`sm_90`, `compute_90`).
pub(crate) fn compile(file: &'static str, source: &str, arch: &str) -> Result<Compiled> {
    require_nvrtc()?;
    let nul = |s: &str| {
        CString::new(s).map_err(|_| Error::KernelCompile {
            file,
            log: "source contains a NUL byte".into(),
        })
    };
    let src = nul(source)?;
    let name = nul(file)?;
    let header = nul(COMMON_HEADER)?;
    let header_name = nul("common.cuh")?;
    let headers = [header.as_ptr()];
    let include_names = [header_name.as_ptr()];
    let mut prog: sys::nvrtcProgram = std::ptr::null_mut();
    // SAFETY: every pointer is a valid NUL-terminated string that outlives the call; the two
    // arrays hold exactly `numHeaders` (1) entries.
    check("nvrtcCreateProgram", unsafe {
        sys::nvrtcCreateProgram(
            &mut prog,
            src.as_ptr(),
            name.as_ptr(),
            1,
            headers.as_ptr(),
            include_names.as_ptr(),
        )
    })?;
    let program = Program(prog);
    let mut options: Vec<CString> = vec![nul(&format!("--gpu-architecture={arch}"))?];
    for o in OPTIONS {
        options.push(nul(o)?);
    }
    let option_ptrs: Vec<*const c_char> = options.iter().map(|o| o.as_ptr()).collect();
    // SAFETY: the program is valid and `option_ptrs` holds `len` valid strings that outlive
    // the call.
    let status = unsafe {
        sys::nvrtcCompileProgram(program.0, option_ptrs.len() as c_int, option_ptrs.as_ptr())
    };
    let log = program.log()?;
    if status != nvrtcResult::NVRTC_SUCCESS {
        return Err(Error::KernelCompile {
            file,
            log: if log.is_empty() {
                format!("{status:?}")
            } else {
                log
            },
        });
    }
    let ptx_bytes = program.ptx()?;
    let ptx = text(&ptx_bytes);
    let image = if arch.starts_with("sm_") {
        program.cubin()?
    } else {
        ptx_bytes
    };
    Ok(Compiled {
        image,
        ptx,
        log,
        from_cache: false,
    })
}
