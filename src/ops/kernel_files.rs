//! The CUDA kernel files, and the check that each defines exactly the kernels launched from it.
//! (The element-type lists the families name their kernels with are in [`super::kernels`], so
//! the families do not import this list of them.)
//!
//! Every file in `kernels/` is one [`KernelFile`], declared by the op family that launches its
//! kernels, beside that code (`KERNELS` in `ops/<family>/cuda.rs`): its text, embedded in the
//! crate, and the names the family builds when it launches (`<kernel>_<dtype suffix>`, from the
//! same op enums the launches use). A family's backward kernels are in a module inside it
//! and in its file: `binary.cu` holds `ops::binary::relu_backward`'s and
//! `ops::binary::gelu_backward`'s, `loss.cu` `ops::loss::cross_entropy_backward`'s (their
//! names join the family's list). The CUDA backend compiles, caches and loads files by these
//! descriptions and knows no op; [`compile_kernels`] checks, without a GPU, that each file
//! defines exactly the kernels named.

use crate::backend::cuda::kernels::{compile_and_store, ptx_entries, KernelFile};
use crate::core::error::{Error, Result};

/// Every kernel file, in the order [`compile_kernels`] reports them.
pub(crate) static ALL: [&KernelFile; 14] = [
    &super::copy::cuda::KERNELS,
    &super::creation::cuda::KERNELS,
    &super::binary::cuda::KERNELS,
    &super::unary::cuda::KERNELS,
    &super::reduce::cuda::KERNELS,
    &super::softmax::cuda::KERNELS,
    &super::index::cuda::KERNELS,
    &super::where_cond::cuda::KERNELS,
    &super::loss::cuda::KERNELS,
    &super::index::scatter::cuda::KERNELS,
    &super::optim::cuda::KERNELS,
    &super::amp::cuda::KERNELS,
    &super::sort::cuda::KERNELS,
    &super::conv::cuda::KERNELS,
];

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

/// Compiles every kernel file with this process's NVRTC for `arch` (`"sm_90"`, or
/// `"compute_90"` for PTX) without needing a GPU, and checks that the kernels in each file are
/// exactly the ones the Rust side launches.
///
/// Returns one report per file, in the order of the files; warnings are in each report's
/// `log`. Fails on a compile error, missing library or name mismatch (the first file's, in
/// that order). This is what CI runs with the `nvidia-cuda-nvrtc` wheel (see
/// `scripts/check-kernels.sh`).
///
/// The files compile on as many threads as the machine has cores (NVRTC compiles separate
/// programs concurrently), the files with the most kernels first.
///
/// Each image is also stored in the on-disk kernel cache (`DEVTYPE_KERNEL_CACHE`, see the
/// [module documentation](crate::cuda)), where GPU processes find it instead of compiling.
pub fn compile_kernels(arch: &str) -> Result<Vec<KernelReport>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let mut order: Vec<usize> = (0..ALL.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse((ALL[i].names)().len()));
    let results: Vec<Mutex<Option<Result<KernelReport>>>> =
        ALL.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..threads.min(ALL.len()) {
            s.spawn(|| {
                while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
                    let report = compile_one(ALL[i], arch);
                    *results[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(report);
                }
            });
        }
    });
    results
        .into_iter()
        .map(|r| {
            r.into_inner()
                .unwrap_or_else(|p| p.into_inner())
                .expect("every file was compiled")
        })
        .collect()
}

/// Compiles one kernel file and checks its kernels against the names launched from it.
fn compile_one(family: &KernelFile, arch: &str) -> Result<KernelReport> {
    // Always compiled (this is the check), then stored in the on-disk cache, so that
    // `scripts/gpu-check.sh build` ships the CUBINs and a GPU process loads them at once.
    let compiled = compile_and_store(family, arch)?;
    let mut found = ptx_entries(&compiled.ptx);
    found.sort();
    let mut expected = (family.names)();
    expected.sort();
    if found != expected {
        let missing: Vec<&String> = expected.iter().filter(|n| !found.contains(n)).collect();
        let extra: Vec<&String> = found.iter().filter(|n| !expected.contains(n)).collect();
        return Err(Error::KernelCompile {
            file: family.file,
            log: format!("kernels launched from Rust but not defined: {missing:?}; defined but never launched: {extra:?}"),
        });
    }
    Ok(KernelReport {
        file: family.file,
        kernels: found.len(),
        image_bytes: compiled.image.len(),
        log: compiled.log,
    })
}
