//! The kernel files, their kernel names, and the per-device cache of compiled modules.
//!
//! Each op family has one file in `kernels/` (embedded here with `include_str!`). The first op
//! of a family on a device compiles its file with NVRTC for that device's architecture
//! (`sm_XY` from the compute capability), loads the module and looks up every kernel the
//! family's table names; later ops find them in the cache. Kernel names are
//! `<kernel>_<dtype suffix>`, built by the same functions that list them here, so
//! [`compile_kernels`] can check (without a GPU) that every name the Rust side launches exists.

use super::context::GpuContext;
use super::disk_cache::{self, KeyParts};
use super::nvrtc::{self, Compiled};
use crate::core::error::{Error, Result};
use crate::ops::{BinaryOp, CompareOp, UnaryOp};
use cudarc::driver::CudaFunction;
use cudarc::nvrtc::Ptx;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, OnceLock};

/// One kernel file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Family {
    Copy,
    Creation,
    Binary,
    Unary,
    Reduce,
    Softmax,
    Index,
    Where,
    Loss,
    Scatter,
    Optim,
}

const FAMILIES: usize = 11;

const ALL_TYPES: [&str; 4] = ["f32", "f64", "i64", "bool"];
const NUMERIC_TYPES: [&str; 3] = ["f32", "f64", "i64"];
const FLOAT_TYPES: [&str; 2] = ["f32", "f64"];

/// The kernel name of a unary op.
pub(crate) fn unary_name(op: UnaryOp) -> &'static str {
    match op {
        UnaryOp::Neg => "neg",
        UnaryOp::Relu => "relu",
        UnaryOp::Abs => "abs",
        UnaryOp::Square => "square",
        UnaryOp::Exp => "exp",
        UnaryOp::Log => "log",
        UnaryOp::Sqrt => "sqrt",
        UnaryOp::Tanh => "tanh",
        UnaryOp::Sigmoid => "sigmoid",
        UnaryOp::Reciprocal => "reciprocal",
    }
}

/// The kernel name of a comparison.
pub(crate) fn compare_name(op: CompareOp) -> &'static str {
    match op {
        CompareOp::Eq => "eq",
        CompareOp::Ne => "ne",
        CompareOp::Lt => "lt",
        CompareOp::Le => "le",
        CompareOp::Gt => "gt",
        CompareOp::Ge => "ge",
    }
}

impl Family {
    pub(crate) const ALL: [Family; FAMILIES] = [
        Family::Copy,
        Family::Creation,
        Family::Binary,
        Family::Unary,
        Family::Reduce,
        Family::Softmax,
        Family::Index,
        Family::Where,
        Family::Loss,
        Family::Scatter,
        Family::Optim,
    ];

    fn index(self) -> usize {
        self as usize
    }

    /// The file name under `kernels/`.
    pub(crate) fn file(self) -> &'static str {
        match self {
            Family::Copy => "copy.cu",
            Family::Creation => "creation.cu",
            Family::Binary => "binary.cu",
            Family::Unary => "unary.cu",
            Family::Reduce => "reduce.cu",
            Family::Softmax => "softmax.cu",
            Family::Index => "index.cu",
            Family::Where => "where_cond.cu",
            Family::Loss => "loss.cu",
            Family::Scatter => "scatter.cu",
            Family::Optim => "optim.cu",
        }
    }

    /// The file's text, embedded in the crate.
    pub(crate) fn source(self) -> &'static str {
        match self {
            Family::Copy => include_str!("../../kernels/copy.cu"),
            Family::Creation => include_str!("../../kernels/creation.cu"),
            Family::Binary => include_str!("../../kernels/binary.cu"),
            Family::Unary => include_str!("../../kernels/unary.cu"),
            Family::Reduce => include_str!("../../kernels/reduce.cu"),
            Family::Softmax => include_str!("../../kernels/softmax.cu"),
            Family::Index => include_str!("../../kernels/index.cu"),
            Family::Where => include_str!("../../kernels/where_cond.cu"),
            Family::Loss => include_str!("../../kernels/loss.cu"),
            Family::Scatter => include_str!("../../kernels/scatter.cu"),
            Family::Optim => include_str!("../../kernels/optim.cu"),
        }
    }

    /// Every kernel the Rust side may launch from this file.
    pub(crate) fn kernel_names(self) -> Vec<String> {
        let mut names = Vec::new();
        let mut add = |base: &str, types: &[&str]| {
            for t in types {
                names.push(format!("{base}_{t}"));
            }
        };
        match self {
            Family::Copy => {
                add("copy", &ALL_TYPES);
                for from in ALL_TYPES {
                    add(&format!("cast_{from}"), &ALL_TYPES);
                }
            }
            Family::Creation => {
                for base in ["fill", "range", "uniform", "normal"] {
                    add(base, &ALL_TYPES);
                }
            }
            Family::Binary => {
                for op in [
                    BinaryOp::Add,
                    BinaryOp::Sub,
                    BinaryOp::Mul,
                    BinaryOp::Div,
                    BinaryOp::Maximum,
                    BinaryOp::Minimum,
                    BinaryOp::Pow,
                    BinaryOp::AddRelu,
                ] {
                    let types: &[&str] = if op.float_only() {
                        &FLOAT_TYPES
                    } else {
                        &NUMERIC_TYPES
                    };
                    add(&format!("binary_{}", op.name()), types);
                    add(&format!("binary_scalar_{}", op.name()), types);
                }
                for op in [
                    CompareOp::Eq,
                    CompareOp::Ne,
                    CompareOp::Lt,
                    CompareOp::Le,
                    CompareOp::Gt,
                    CompareOp::Ge,
                ] {
                    add(&format!("compare_{}", compare_name(op)), &ALL_TYPES);
                    add(&format!("compare_scalar_{}", compare_name(op)), &ALL_TYPES);
                }
                add("relu_backward", &FLOAT_TYPES);
            }
            Family::Unary => {
                for op in [
                    UnaryOp::Neg,
                    UnaryOp::Relu,
                    UnaryOp::Abs,
                    UnaryOp::Square,
                    UnaryOp::Exp,
                    UnaryOp::Log,
                    UnaryOp::Sqrt,
                    UnaryOp::Tanh,
                    UnaryOp::Sigmoid,
                    UnaryOp::Reciprocal,
                ] {
                    let types: &[&str] = if op.float_only() {
                        &FLOAT_TYPES
                    } else {
                        &NUMERIC_TYPES
                    };
                    add(&format!("unary_{}", unary_name(op)), types);
                }
            }
            Family::Reduce => {
                for op in ["sum", "max", "min"] {
                    for kind in ["rows", "cols", "finish"] {
                        add(&format!("reduce_{kind}_{op}"), &NUMERIC_TYPES);
                    }
                }
                for op in ["max", "min"] {
                    for kind in ["rows", "cols", "finish"] {
                        add(&format!("argreduce_{kind}_{op}"), &NUMERIC_TYPES);
                    }
                }
            }
            Family::Softmax => add("softmax", &FLOAT_TYPES),
            Family::Index => {
                add("index_select", &ALL_TYPES);
                add("gather", &ALL_TYPES);
            }
            Family::Where => add("where", &ALL_TYPES),
            Family::Loss => {
                add("cross_entropy_rows", &FLOAT_TYPES);
                add("cross_entropy_reduce", &FLOAT_TYPES);
                add("cross_entropy_total_weight", &FLOAT_TYPES);
                add("cross_entropy_backward", &FLOAT_TYPES);
            }
            Family::Scatter => add("scatter_add", &FLOAT_TYPES),
            Family::Optim => {
                add("sgd", &FLOAT_TYPES);
                add("adam", &FLOAT_TYPES);
            }
        }
        names
    }
}

/// A loaded module and its kernels by name.
pub(crate) struct KernelModule {
    functions: HashMap<String, CudaFunction>,
}

/// Compiled and loaded kernel files of one device.
pub(crate) struct KernelCache {
    /// NVRTC output, kept also when it failed (compiling again would fail again).
    compiled: [OnceLock<Result<Arc<Compiled>>>; FAMILIES],
    /// Loaded modules; only successes are kept (loading may fail for want of memory).
    loaded: [OnceLock<KernelModule>; FAMILIES],
}

impl KernelCache {
    pub(crate) fn new() -> Self {
        KernelCache {
            compiled: std::array::from_fn(|_| OnceLock::new()),
            loaded: std::array::from_fn(|_| OnceLock::new()),
        }
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
fn key_parts(family: Family, arch: &str, nvrtc_version: (i32, i32)) -> KeyParts<'_> {
    KeyParts {
        nvrtc: nvrtc_version,
        arch,
        options: nvrtc::OPTIONS,
        header: nvrtc::COMMON_HEADER,
        file: family.file(),
        source: family.source(),
    }
}

/// Compiles `family` for `arch` with NVRTC and stores the image in the on-disk cache folder
/// `dir` (none: no cache).
fn compile_and_store_in(dir: Option<&Path>, family: Family, arch: &str) -> Result<Compiled> {
    let compiled = nvrtc::compile(family.file(), family.source(), arch)?;
    if let Some(dir) = dir {
        let version = nvrtc::version()?;
        disk_cache::store(dir, &key_parts(family, arch, version), &compiled.image);
    }
    Ok(compiled)
}

/// [`compile_and_store_in`] this process's cache folder.
fn compile_and_store(family: Family, arch: &str) -> Result<Compiled> {
    compile_and_store_in(disk_cache::dir().as_deref(), family, arch)
}

/// The image of `family` for `arch`: from the cache folder `dir` when a valid entry's key
/// matches (no NVRTC compile, which takes seconds per file), else compiled and stored there.
fn cached_or_compiled_in(dir: Option<&Path>, family: Family, arch: &str) -> Result<Compiled> {
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
fn cached_or_compiled(family: Family, arch: &str) -> Result<Compiled> {
    cached_or_compiled_in(disk_cache::dir().as_deref(), family, arch)
}

/// Loads `compiled` on `gpu` and looks up every kernel of `family` in it.
fn load_module(gpu: &GpuContext, family: Family, compiled: &Compiled) -> Result<KernelModule> {
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
    for name in family.kernel_names() {
        let f = loaded.load_function(&name).map_err(|e| match e.0 {
            cudarc::driver::sys::CUresult::CUDA_ERROR_NOT_FOUND => Error::KernelCompile {
                file: family.file(),
                log: format!("kernel `{name}` is missing from the compiled module"),
            },
            _ => gpu.error("cuModuleGetFunction", e),
        })?;
        functions.insert(name, f);
    }
    Ok(KernelModule { functions })
}

fn module(gpu: &'static GpuContext, family: Family) -> Result<&'static KernelModule> {
    let i = family.index();
    if let Some(m) = gpu.kernels.loaded[i].get() {
        return Ok(m);
    }
    let compiled = gpu.kernels.compiled[i]
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
    let _ = gpu.kernels.loaded[i].set(module);
    Ok(gpu.kernels.loaded[i].get().expect("set above"))
}

/// The kernel `name` of `family` on `gpu`, compiling and loading its file on first use.
pub(crate) fn function(
    gpu: &'static GpuContext,
    family: Family,
    name: &str,
) -> Result<&'static CudaFunction> {
    module(gpu, family)?
        .functions
        .get(name)
        .ok_or_else(|| Error::KernelCompile {
            file: family.file(),
            log: format!("no kernel `{name}` in kernels/{}", family.file()),
        })
}

/// The result of compiling one kernel file with [`compile_kernels`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelReport {
    /// The file under `kernels/`.
    pub file: &'static str,
    /// Kernels found in the compiled file; each is one the Rust side launches.
    pub kernels: usize,
    /// Size of the compiled image (CUBIN or PTX) in bytes.
    pub image_bytes: usize,
    /// NVRTC's log: warnings, empty for a clean compile.
    pub log: String,
}

/// Kernel names defined in PTX text (`.entry name(`).
fn ptx_entries(ptx: &str) -> Vec<String> {
    ptx.match_indices(".entry ")
        .filter_map(|(at, m)| {
            let rest = &ptx[at + m.len()..];
            let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))?;
            Some(rest[..end].to_string())
        })
        .collect()
}

/// Compiles every kernel file with this process's NVRTC for `arch` (`"sm_90"`, or
/// `"compute_90"` for PTX) without needing a GPU, and checks that the kernels in each file are
/// exactly the ones the Rust side launches.
///
/// Returns one report per file; warnings are in each report's `log`. Fails on the first
/// compile error, missing library or name mismatch. This is what CI runs with the
/// `nvidia-cuda-nvrtc` wheel (see `scripts/check-kernels.sh`).
///
/// Each image is also stored in the on-disk kernel cache (`DEVTYPE_KERNEL_CACHE`, see the
/// [module documentation](crate::cuda)), where GPU processes find it instead of compiling.
pub fn compile_kernels(arch: &str) -> Result<Vec<KernelReport>> {
    let mut reports = Vec::new();
    for family in Family::ALL {
        // Always compiled (this is the check), then stored in the on-disk cache, so that
        // `scripts/gpu-check.sh build` ships the CUBINs and a GPU process loads them at once.
        let compiled = compile_and_store(family, arch)?;
        let mut found = ptx_entries(&compiled.ptx);
        found.sort();
        let mut expected = family.kernel_names();
        expected.sort();
        if found != expected {
            let missing: Vec<&String> = expected.iter().filter(|n| !found.contains(n)).collect();
            let extra: Vec<&String> = found.iter().filter(|n| !expected.contains(n)).collect();
            return Err(Error::KernelCompile {
                file: family.file(),
                log: format!("kernels launched from Rust but not defined: {missing:?}; defined but never launched: {extra:?}"),
            });
        }
        reports.push(KernelReport {
            file: family.file(),
            kernels: found.len(),
            image_bytes: compiled.image.len(),
            log: compiled.log,
        });
    }
    Ok(reports)
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
        let family = Family::Optim;
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
