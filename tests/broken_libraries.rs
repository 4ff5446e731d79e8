//! A `libcuda.so` (or `libnvrtc.so`) that loads but is not the library (a toolkit's stub, an
//! unrelated file first on `LD_LIBRARY_PATH`) is an error naming the file and the missing
//! symbol, never a panic in cudarc (`Missing symbol cuDriverGetVersion: dlsym failed`).
//!
//! The parent test builds a shared object with no CUDA symbols (`cc -shared`) into a temporary
//! folder, names it `libcuda.so` and `libnvrtc.so`, and runs this test binary again with that
//! folder first on `LD_LIBRARY_PATH` (the dynamic loader reads it at process start). The child
//! test does the checks; the parent asserts that it passed and that nothing panicked. Skips
//! with a printed reason when no C compiler is installed.

use devtype::device::{run_on_best_device, DeviceJob};
use devtype::prelude::*;
use std::path::PathBuf;
use std::process::Command;

const CHILD_ENV: &str = "DEVTYPE_BROKEN_LIBRARY_CHILD";
const DONE: &str = "broken-library checks passed";

/// Builds the fake library; `None` (with the reason) when there is no C compiler.
fn fake_library_dir() -> Result<PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("devtype-fake-cuda-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let src = dir.join("fake.c");
    std::fs::write(
        &src,
        "int devtype_not_a_cuda_library(void) { return 42; }\n",
    )
    .map_err(|e| e.to_string())?;
    let lib = dir.join("libcuda.so");
    let out = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&src)
        .output()
        .map_err(|e| format!("no C compiler (`cc`): {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "cc -shared failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    for name in ["libnvrtc.so", "libcublas.so"] {
        std::fs::copy(&lib, dir.join(name)).map_err(|e| e.to_string())?;
    }
    Ok(dir)
}

#[test]
fn a_library_without_the_cuda_symbols_is_an_error_not_a_panic() {
    if std::env::var_os(CHILD_ENV).is_some() {
        return; // the child runs only the checks below
    }
    let dir = match fake_library_dir() {
        Ok(d) => d,
        Err(reason) => {
            eprintln!("skipping the broken-library check: {reason}");
            return;
        }
    };
    let path = match std::env::var_os("LD_LIBRARY_PATH") {
        Some(old) if !old.is_empty() => {
            let mut p = dir.clone().into_os_string();
            p.push(":");
            p.push(old);
            p
        }
        _ => dir.clone().into_os_string(),
    };
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "child_checks_with_fake_libraries",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, &dir)
        .env("LD_LIBRARY_PATH", path)
        .env_remove("DEVTYPE_REQUIRE_CUDA")
        .env("DEVTYPE_KERNEL_CACHE", "off")
        .output()
        .expect("run the test binary again");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success() && stdout.contains(DONE),
        "the child failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    assert!(
        !stdout.contains("panicked") && !stderr.contains("panicked"),
        "something panicked in the child:\n{stdout}\n{stderr}"
    );
}

struct Where;

impl DeviceJob for Where {
    type Output = String;
    fn run<D: Device + HostSync>(self, device: D) -> String {
        Tensor::<D>::ones([2], device).to_string();
        device.to_string()
    }
}

#[test]
fn child_checks_with_fake_libraries() {
    let Some(dir) = std::env::var_os(CHILD_ENV) else {
        return; // only meaningful in the child started above
    };
    let dir = PathBuf::from(dir);
    // No panic is caught here: a panic fails the child, and the parent reports it.
    assert_eq!(devtype::cuda::device_count(), 0);
    assert!(!devtype::cuda::is_available());
    let e = Cuda::<0>::open().unwrap_err();
    let text = e.to_string();
    println!("Cuda::<0>::open(): {text}");
    match &e {
        devtype::Error::BrokenLibrary {
            library,
            path,
            symbol,
        } => {
            assert_eq!(*library, "libcuda");
            assert_eq!(symbol, "cuDriverGetVersion");
            assert!(
                PathBuf::from(path).starts_with(&dir),
                "the error names {path}, not the fake library in {}",
                dir.display()
            );
        }
        other => panic!("expected BrokenLibrary, got {other:?}"),
    }
    assert!(
        text.contains("lacks the symbol `cuDriverGetVersion`"),
        "{text}"
    );
    // Asking again gives the same error (nothing half-initialised).
    assert_eq!(Cuda::<0>::open().unwrap_err(), e);
    let e = DynTensor::zeros([2, 3], "cuda".parse().unwrap()).unwrap_err();
    assert!(e.to_string().contains("libcuda"), "{e}");
    assert_eq!(run_on_best_device(Where), "cpu");
    devtype::cuda::synchronize(0).unwrap_err();
    // NVRTC: the same care.
    assert!(!devtype::cuda::nvrtc_available());
    let e = devtype::cuda::compile_kernels("sm_90").unwrap_err();
    assert!(
        matches!(&e, devtype::Error::BrokenLibrary { library: "libnvrtc", symbol, .. } if symbol == "nvrtcVersion"),
        "{e:?}"
    );
    let e = devtype::cuda::nvrtc_version().unwrap_err();
    assert!(e.to_string().contains("libnvrtc"), "{e}");
    println!("{DONE}");
}
