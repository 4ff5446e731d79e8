//! Every `kernels/*.cu` compiles with NVRTC for `sm_90` through devtype's own loader, with no
//! warnings, and defines exactly the kernels the Rust side launches. No GPU is needed.
//!
//! Skips (with a message) when `libnvrtc` cannot be loaded, unless `DEVTYPE_REQUIRE_NVRTC=1`
//! (set by `scripts/check-kernels.sh`, which installs the `nvidia-cuda-nvrtc` wheel).

use std::collections::BTreeSet;

fn nvrtc_required() -> bool {
    std::env::var("DEVTYPE_REQUIRE_NVRTC").is_ok_and(|v| v == "1")
}

#[test]
fn every_kernel_file_compiles_for_sm_90_without_warnings() {
    if !devtype::cuda::nvrtc_available() {
        assert!(
            !nvrtc_required(),
            "DEVTYPE_REQUIRE_NVRTC=1 but libnvrtc cannot be loaded: put the folder holding \
             libnvrtc.so.13 and libnvrtc-builtins.so.13.0 on LD_LIBRARY_PATH (scripts/check-kernels.sh does)"
        );
        eprintln!("skipping the kernel compile check: libnvrtc cannot be loaded (run scripts/check-kernels.sh)");
        return;
    }
    let version = devtype::cuda::nvrtc_version().expect("NVRTC version");
    let reports = devtype::cuda::compile_kernels("sm_90").unwrap_or_else(|e| panic!("{e}"));
    let mut total = 0;
    for r in &reports {
        println!(
            "kernels/{:<14} {:>4} kernels, {:>8} bytes of CUBIN",
            r.file, r.kernels, r.image_bytes
        );
        assert!(
            r.log.is_empty(),
            "NVRTC warnings in kernels/{}:\n{}",
            r.file,
            r.log
        );
        assert!(r.kernels > 0, "kernels/{} defines no kernel", r.file);
        total += r.kernels;
    }
    // Every .cu file in kernels/ is one the crate compiles (none forgotten). The folder is the
    // source tree's, a path of the build machine: a binary run elsewhere skips this part.
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/kernels");
    match std::fs::read_dir(dir) {
        Ok(entries) => {
            let on_disk: BTreeSet<String> = entries
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.ends_with(".cu"))
                .collect();
            let compiled: BTreeSet<String> = reports.iter().map(|r| r.file.to_string()).collect();
            assert_eq!(
                on_disk, compiled,
                "kernel files on disk and in the crate differ"
            );
        }
        Err(e) => eprintln!(
            "skipping the check that every file in {dir} is compiled: the source tree is not \
             here ({e}); the binary was built on another machine"
        ),
    }
    println!(
        "NVRTC {}.{}: compiled {total} kernels in {} files for sm_90, no warnings",
        version.0,
        version.1,
        reports.len()
    );
}

#[test]
fn ptx_for_an_older_architecture_also_compiles() {
    if !devtype::cuda::nvrtc_available() {
        eprintln!("skipping: libnvrtc cannot be loaded");
        return;
    }
    // The loader falls back to PTX (`compute_XY`) when NVRTC does not know the GPU's own
    // architecture; that path must compile too.
    let reports = devtype::cuda::compile_kernels("compute_80").unwrap_or_else(|e| panic!("{e}"));
    assert!(reports.iter().all(|r| r.log.is_empty() && r.kernels > 0));
}
