//! The shape of `src/ops`, read from the sources: each family owns its kernel trait
//! (declared in its `mod.rs`, implemented for the CPU in `cpu.rs` and for CUDA in `cuda.rs`),
//! `backend.rs` names no family, and CPU kernels are leaves (they never go back through the
//! dispatcher). A new family or kernel file is checked by being there.

use std::fs;
use std::path::{Path, PathBuf};

fn ops_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src/ops")
}

/// Every family folder with a `cpu.rs` (a backward family nested in its forward one too),
/// with its path under `src/ops`.
fn families() -> Vec<(String, PathBuf)> {
    fn walk(dir: &Path, prefix: &str, out: &mut Vec<(String, PathBuf)>) {
        for entry in fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                let name = format!("{prefix}{}", p.file_name().unwrap().to_str().unwrap());
                if p.join("cpu.rs").exists() {
                    out.push((name.clone(), p.clone()));
                }
                walk(&p, &format!("{name}/"), out);
            }
        }
    }
    let mut out = Vec::new();
    walk(&ops_dir(), "", &mut out);
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
        let name = name.split('/').next_back().unwrap();
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

/// The top-level module (family, or file such as `half.rs`) under `src/ops` that `path` is in.
fn top(path: &Path) -> String {
    let rel = path.strip_prefix(ops_dir()).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_str()
        .unwrap();
    first.trim_end_matches(".rs").to_string()
}

#[test]
fn no_import_circle_between_the_modules_of_ops() {
    fn files(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                files(&p, out);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    let mut all = Vec::new();
    files(&ops_dir(), &mut all);
    let modules: std::collections::BTreeSet<String> =
        all.iter().map(|p| top(p)).filter(|m| m != "mod").collect();
    let mut edges: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> = modules
        .iter()
        .map(|m| (m.clone(), Default::default()))
        .collect();
    for path in &all {
        let from = top(path);
        if from == "mod" {
            continue;
        }
        // Code outside `#[cfg(test)]` modules (a test may use anything).
        let text = code(path);
        let text = text.split("#[cfg(test)]").next().unwrap();
        for m in &modules {
            let uses = [
                format!("crate::ops::{m}"),
                format!("super::{m}::"),
                format!("super::super::{m}"),
            ]
            .iter()
            .any(|p| text.contains(p.as_str()))
                || text.contains(&format!("use super::{{{m}"))
                || text.contains(&format!("use super::super::{{{m}"));
            if uses && *m != from {
                edges.get_mut(&from).unwrap().insert(m.clone());
            }
        }
    }
    // Depth-first search for a cycle.
    fn visit<'a>(
        m: &'a str,
        edges: &'a std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
        state: &mut std::collections::BTreeMap<&'a str, u8>,
        path: &mut Vec<&'a str>,
    ) {
        match state.get(m) {
            Some(2) => return,
            Some(1) => panic!("import circle in src/ops: {path:?} -> {m}"),
            _ => {}
        }
        state.insert(m, 1);
        path.push(m);
        for n in &edges[m] {
            visit(n, edges, state, path);
        }
        path.pop();
        state.insert(m, 2);
    }
    let mut state = Default::default();
    for m in edges.keys() {
        visit(m, &edges, &mut state, &mut Vec::new());
    }
    assert!(
        edges["backend"].is_empty(),
        "backend.rs imports {:?}",
        edges["backend"]
    );
}
