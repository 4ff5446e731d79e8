//! The per-device cache of compiled kernel files.
//!
//! A kernel file is a [`KernelFile`]: its name under `kernels/`, its text (embedded with
//! `include_str!`) and the names of the kernels the Rust side launches from it. Each op family
//! declares its file beside its code (`KERNELS` in `ops/<family>/cuda.rs`, listed by
//! `crate::ops::kernel_files`); this backend knows none of them.
//! The first op of a file on a device compiles it with NVRTC for that device's architecture
//! (`sm_XY` from the compute capability), or finds the image in the on-disk cache, loads the
//! module and looks up every kernel the file names; later ops find them in the cache.

use super::context::GpuContext;
use super::disk_cache::{self, KeyParts};
use super::nvrtc::{self, Compiled};
use crate::core::error::{Error, Result};
use cudarc::driver::CudaFunction;
use cudarc::nvrtc::Ptx;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

/// One kernel file: where it is, what it says, and which kernels the Rust side launches from
/// it (`<kernel>_<dtype suffix>` names, built by the op family that launches them).
pub(crate) struct KernelFile {
    /// The file name under `kernels/`.
    pub(crate) file: &'static str,
    /// Its text.
    pub(crate) source: &'static str,
    /// Every kernel launched from it.
    pub(crate) names: fn() -> Vec<String>,
}

/// A loaded module and its kernels by name.
pub(crate) struct KernelModule {
    functions: HashMap<String, CudaFunction>,
}

/// One kernel file on one device: NVRTC's output (kept also when it failed: compiling again
/// would fail again) and the loaded module (only successes are kept: loading may fail for want
/// of memory).
#[derive(Default)]
struct Slot {
    compiled: OnceLock<Result<Arc<Compiled>>>,
    loaded: OnceLock<KernelModule>,
}

/// Compiled and loaded kernel files of one device, by file name. A slot is made once per file
/// and device and lives as long as the device (which is never closed).
#[derive(Default)]
pub(crate) struct KernelCache {
    slots: Mutex<HashMap<&'static str, &'static Slot>>,
}

impl KernelCache {
    pub(crate) fn new() -> Self {
        KernelCache::default()
    }

    fn slot(&self, file: &'static str) -> &'static Slot {
        let mut slots = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        let slot: &mut &'static Slot = slots
            .entry(file)
            .or_insert_with(|| Box::leak(Box::default()));
        // The leaked slot itself (copied out of the map), not a borrow of the map's entry.
        let leaked: &'static Slot = slot;
        leaked
    }
}

/// The architecture NVRTC compiles for on `gpu`.
fn arch_of(gpu: &GpuContext) -> Result<String> {
    static ARCHS: OnceLock<std::sync::Mutex<HashMap<(i32, i32), String>>> = OnceLock::new();
    let (major, minor) = gpu.compute_capability;
    let cache = ARCHS.get_or_init(Default::default);
    if let Some(a) = cache
        .lock()
        .ok()
        .and_then(|c| c.get(&(major, minor)).cloned())
    {
        return Ok(a);
    }
    let arch = nvrtc::arch_for(major, minor)?;
    if let Ok(mut c) = cache.lock() {
        c.insert((major, minor), arch.clone());
    }
    Ok(arch)
}

/// What the compiled image of `family` for `arch` depends on (the key of its cache entry).
fn key_parts<'a>(family: &'a KernelFile, arch: &'a str, nvrtc_version: (i32, i32)) -> KeyParts<'a> {
    KeyParts {
        nvrtc: nvrtc_version,
        arch,
        options: nvrtc::OPTIONS,
        header: nvrtc::COMMON_HEADER,
        file: family.file,
        source: family.source,
    }
}

/// Compiles `family` for `arch` with NVRTC and stores the image in the on-disk cache folder
/// `dir` (none: no cache).
fn compile_and_store_in(dir: Option<&Path>, family: &KernelFile, arch: &str) -> Result<Compiled> {
    let compiled = nvrtc::compile(family.file, family.source, arch)?;
    if let Some(dir) = dir {
        let version = nvrtc::version()?;
        disk_cache::store(dir, &key_parts(family, arch, version), &compiled.image);
    }
    Ok(compiled)
}

/// [`compile_and_store_in`] this process's cache folder.
pub(crate) fn compile_and_store(family: &KernelFile, arch: &str) -> Result<Compiled> {
    compile_and_store_in(disk_cache::dir().as_deref(), family, arch)
}

/// The image of `family` for `arch`: from the cache folder `dir` when a valid entry's key
/// matches (no NVRTC compile, which takes seconds per file), else compiled and stored there.
fn cached_or_compiled_in(dir: Option<&Path>, family: &KernelFile, arch: &str) -> Result<Compiled> {
    let version = nvrtc::version()?;
    if let Some(image) =
        dir.and_then(|d| disk_cache::load_from(d, &key_parts(family, arch, version)))
    {
        return Ok(Compiled {
            image,
            ptx: String::new(),
            log: String::new(),
            from_cache: true,
        });
    }
    compile_and_store_in(dir, family, arch)
}

/// [`cached_or_compiled_in`] this process's cache folder.
fn cached_or_compiled(family: &KernelFile, arch: &str) -> Result<Compiled> {
    cached_or_compiled_in(disk_cache::dir().as_deref(), family, arch)
}

/// Loads `compiled` on `gpu` and looks up every kernel of `family` in it.
fn load_module(gpu: &GpuContext, family: &KernelFile, compiled: &Compiled) -> Result<KernelModule> {
    // A CUBIN, or PTX text NUL-terminated as NVRTC returned it: `cuModuleLoadData` takes both.
    // Loading allocates device memory for the code and constants; on a full device it runs out
    // of memory like an allocation, and recovers the same way (wait, trim the pool, retry).
    let load = || {
        gpu.context
            .load_module(Ptx::from_binary(compiled.image.clone()))
            .map_err(|e| gpu.error("cuModuleLoadData", e))
    };
    let loaded = super::memory::retry_after_oom(load, |_| false, || super::memory::reclaim(gpu))?;
    let mut functions = HashMap::new();
    for name in (family.names)() {
        let f = loaded.load_function(&name).map_err(|e| match e.0 {
            cudarc::driver::sys::CUresult::CUDA_ERROR_NOT_FOUND => Error::KernelCompile {
                file: family.file,
                log: format!("kernel `{name}` is missing from the compiled module"),
            },
            _ => gpu.error("cuModuleGetFunction", e),
        })?;
        functions.insert(name, f);
    }
    Ok(KernelModule { functions })
}

fn module(gpu: &'static GpuContext, family: &KernelFile) -> Result<&'static KernelModule> {
    let slot = gpu.kernels.slot(family.file);
    if let Some(m) = slot.loaded.get() {
        return Ok(m);
    }
    // Compiling and loading a module cannot be part of a graph (and would be lost from it).
    gpu.not_capturing("cuModuleLoadData")?;
    let compiled = slot
        .compiled
        .get_or_init(|| {
            let arch = arch_of(gpu)?;
            cached_or_compiled(family, &arch).map(Arc::new)
        })
        .clone()?;
    let module = match load_module(gpu, family, &compiled) {
        Ok(m) => m,
        // A cached image the driver rejects (or that lacks a kernel) is not trusted twice:
        // compile afresh, which also replaces the entry on disk.
        Err(e) if compiled.from_cache && !matches!(e, Error::OutOfMemory { .. }) => {
            let fresh = compile_and_store(family, &arch_of(gpu)?)?;
            load_module(gpu, family, &fresh)?
        }
        Err(e) => return Err(e),
    };
    let _ = slot.loaded.set(module);
    Ok(slot.loaded.get().expect("set above"))
}

/// The kernel `name` of `family` on `gpu`, compiling and loading its file on first use.
pub(crate) fn function(
    gpu: &'static GpuContext,
    family: &KernelFile,
    name: &str,
) -> Result<&'static CudaFunction> {
    module(gpu, family)?
        .functions
        .get(name)
        .ok_or_else(|| Error::KernelCompile {
            file: family.file,
            log: format!("no kernel `{name}` in kernels/{}", family.file),
        })
}

/// Kernel names defined in PTX text (`.entry name(`).
pub(crate) fn ptx_entries(ptx: &str) -> Vec<String> {
    ptx.match_indices(".entry ")
        .filter_map(|(at, m)| {
            let rest = &ptx[at + m.len()..];
            let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))?;
            Some(rest[..end].to_string())
        })
        .collect()
}

/// The version of the NVRTC library this process loads, `(major, minor)`; fails when there is
/// none.
pub fn nvrtc_version() -> Result<(i32, i32)> {
    nvrtc::version()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole path through the cache with the real NVRTC (when it loads; skipped otherwise,
    /// e.g. under plain `cargo test`): a miss compiles and stores, a hit returns the same bytes
    /// without compiling, and a corrupted entry is compiled afresh and replaced.
    #[test]
    #[cfg_attr(miri, ignore = "Miri cannot load libnvrtc")]
    fn kernels_come_from_the_disk_cache_after_the_first_compile() {
        if !nvrtc::nvrtc_present() {
            eprintln!("skipping the kernel cache check: libnvrtc cannot be loaded");
            return;
        }
        let dir = std::env::temp_dir().join(format!("devtype-kcache-nvrtc-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        static OPTIM: KernelFile = KernelFile {
            file: "optim.cu",
            source: include_str!("../../../kernels/optim.cu"),
            names: Vec::new,
        };
        let family = &OPTIM;
        let first = cached_or_compiled_in(Some(&dir), family, "sm_90").unwrap();
        assert!(!first.from_cache);
        let start = std::time::Instant::now();
        let second = cached_or_compiled_in(Some(&dir), family, "sm_90").unwrap();
        assert!(second.from_cache, "the second lookup compiled again");
        assert_eq!(second.image, first.image);
        eprintln!("kernel cache hit in {:?}", start.elapsed());
        // Corrupt the entry: it is ignored, compiled afresh, and replaced by a good one.
        let entry = std::fs::read_dir(&dir)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .path();
        let mut bytes = std::fs::read(&entry).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0x55;
        std::fs::write(&entry, &bytes).unwrap();
        let third = cached_or_compiled_in(Some(&dir), family, "sm_90").unwrap();
        assert!(!third.from_cache, "a corrupt entry was trusted");
        assert_eq!(third.image, first.image);
        assert!(
            cached_or_compiled_in(Some(&dir), family, "sm_90")
                .unwrap()
                .from_cache
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
