//! The shape of `src/ops`, read from the sources: each family owns its kernel trait
//! (declared in its `mod.rs`, implemented for the CPU in `cpu.rs` and for CUDA in `cuda.rs`),
//! `backend.rs` names no family, and CPU kernels are leaves (they never go back through the
//! dispatcher). A new family or kernel file is checked by being there.

use std::fs;
use std::path::{Path, PathBuf};

fn ops_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/ops")
}

/// Every family folder with a `cpu.rs`, with its name.
fn families() -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = fs::read_dir(ops_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("cpu.rs").exists())
        .map(|p| (p.file_name().unwrap().to_str().unwrap().to_string(), p))
        .collect();
    out.sort();
    assert!(out.len() >= 10, "found the families: {out:?}");
    out
}

/// The text without `//` comments (so docs may mention what code may not do).
fn code(path: &Path) -> String {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| l.split("//").next().unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn each_family_declares_its_kernel_trait_and_implements_it_for_both_backends() {
    for (name, dir) in families() {
        let m = code(&dir.join("mod.rs"));
        let trait_name = m
            .split("pub(crate) trait ")
            .skip(1)
            .filter_map(|rest| rest.split_whitespace().next())
            .find(|t| t.ends_with("Kernel"))
            .unwrap_or_else(|| panic!("ops/{name}/mod.rs declares no `...Kernel` trait"));
        for (file, backend) in [("cpu.rs", "CpuBackend"), ("cuda.rs", "CudaBackend")] {
            let text = code(&dir.join(file));
            let imp = format!("impl super::{trait_name} for crate::ops::backend::{backend}");
            assert!(text.contains(&imp), "ops/{name}/{file} lacks `{imp}`");
        }
    }
}

#[test]
fn backend_rs_knows_no_family() {
    let backend = code(&ops_dir().join("backend.rs"));
    for (name, _) in families() {
        for pattern in [format!("super::{name}"), format!("ops::{name}")] {
            assert!(!backend.contains(&pattern), "backend.rs names `{pattern}`");
        }
    }
    assert!(!backend.contains("trait "), "backend.rs declares a trait");
}

#[test]
fn cpu_kernels_do_not_call_back_into_the_dispatcher() {
    for (name, dir) in families() {
        for entry in fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let file = path.file_name().unwrap().to_str().unwrap().to_string();
            if !file.starts_with("cpu") {
                continue;
            }
            let text = code(&path).replace("cpu_dispatch!", "");
            for call in [
                ".contiguous()",
                "dispatch!",
                "shape::reshape(",
                ".to_device(",
            ] {
                assert!(
                    !text.contains(call),
                    "ops/{name}/{file} calls `{call}`: a CPU kernel calls the CPU routines \
                     (ops::copy::cpu) directly"
                );
            }
        }
    }
}
