//! The CUDA kernel files and the kernels each op family launches from them.
//!
//! Every file in `kernels/` is one [`KernelFile`] here: its text, embedded in the crate, and
//! the names the op families build when they launch (`<kernel>_<dtype suffix>`, from the same
//! op enums the launches use). The CUDA backend compiles, caches and loads files by these
//! descriptions and knows no op; [`compile_kernels`] checks, without a GPU, that each file
//! defines exactly the kernels named here.

use super::binary::{BinaryOp, CompareOp};
use super::unary::UnaryOp;
use crate::backend::cuda::kernels::{compile_and_store, ptx_entries, KernelFile};
use crate::core::error::{Error, Result};

const ALL_TYPES: [&str; 4] = ["f32", "f64", "i64", "bool"];
const NUMERIC_TYPES: [&str; 3] = ["f32", "f64", "i64"];
const FLOAT_TYPES: [&str; 2] = ["f32", "f64"];

/// `<base>_<t>` for each type suffix `t`.
fn typed(names: &mut Vec<String>, base: &str, types: &[&str]) {
    names.extend(types.iter().map(|t| format!("{base}_{t}")));
}

/// The kernel name of a unary op (`unary_<name>_<T>` in `unary.cu`).
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

/// The kernel name of a comparison (`compare_<name>_<T>` in `binary.cu`).
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

/// Declares a kernel file: `kernels/<file>`, embedded, with the kernels listed by `names`.
macro_rules! kernel_file {
    ($(#[$doc:meta])* $name:ident = $file:literal, $names:expr) => {
        $(#[$doc])*
        pub(crate) static $name: KernelFile = KernelFile {
            file: $file,
            source: include_str!(concat!("../../kernels/", $file)),
            names: $names,
        };
    };
}

kernel_file!(
    /// Strided copies and casts (`ops::copy`).
    COPY = "copy.cu",
    || {
        let mut n = Vec::new();
        typed(&mut n, "copy", &ALL_TYPES);
        for from in ALL_TYPES {
            typed(&mut n, &format!("cast_{from}"), &ALL_TYPES);
        }
        n
    }
);
kernel_file!(
    /// Fills, ranges and random values (`ops::creation`).
    CREATION = "creation.cu",
    || {
        let mut n = Vec::new();
        for base in ["fill", "range", "uniform", "normal"] {
            typed(&mut n, base, &ALL_TYPES);
        }
        n
    }
);
kernel_file!(
    /// Element-wise arithmetic, comparisons and the relu gradient (`ops::binary`,
    /// `ops::relu_backward`).
    BINARY = "binary.cu",
    || {
        let mut n = Vec::new();
        for op in BinaryOp::ALL {
            let types: &[&str] = if op.float_only() {
                &FLOAT_TYPES
            } else {
                &NUMERIC_TYPES
            };
            typed(&mut n, &format!("binary_{}", op.name()), types);
            typed(&mut n, &format!("binary_scalar_{}", op.name()), types);
        }
        for op in CompareOp::ALL {
            typed(&mut n, &format!("compare_{}", compare_name(op)), &ALL_TYPES);
            typed(&mut n, &format!("compare_scalar_{}", compare_name(op)), &ALL_TYPES);
        }
        typed(&mut n, "relu_backward", &FLOAT_TYPES);
        n
    }
);
kernel_file!(
    /// Element-wise math of one tensor (`ops::unary`).
    UNARY = "unary.cu",
    || {
        let mut n = Vec::new();
        for op in UnaryOp::ALL {
            let types: &[&str] = if op.float_only() {
                &FLOAT_TYPES
            } else {
                &NUMERIC_TYPES
            };
            typed(&mut n, &format!("unary_{}", unary_name(op)), types);
        }
        n
    }
);
kernel_file!(
    /// Sums, extremes and their indices (`ops::reduce`).
    REDUCE = "reduce.cu",
    || {
        let mut n = Vec::new();
        for op in ["sum", "max", "min"] {
            for kind in ["rows", "cols", "finish"] {
                typed(&mut n, &format!("reduce_{kind}_{op}"), &NUMERIC_TYPES);
            }
        }
        for op in ["max", "min"] {
            for kind in ["rows", "cols", "finish"] {
                typed(&mut n, &format!("argreduce_{kind}_{op}"), &NUMERIC_TYPES);
            }
        }
        n
    }
);
kernel_file!(
    /// Softmax and log-softmax (`ops::softmax`).
    SOFTMAX = "softmax.cu",
    || {
        let mut n = Vec::new();
        typed(&mut n, "softmax", &FLOAT_TYPES);
        n
    }
);
kernel_file!(
    /// `index_select` and `gather` (`ops::index`).
    INDEX = "index.cu",
    || {
        let mut n = Vec::new();
        typed(&mut n, "index_select", &ALL_TYPES);
        typed(&mut n, "gather", &ALL_TYPES);
        n
    }
);
kernel_file!(
    /// `where` (`ops::where_cond`).
    WHERE = "where_cond.cu",
    || {
        let mut n = Vec::new();
        typed(&mut n, "where", &ALL_TYPES);
        n
    }
);
kernel_file!(
    /// Cross-entropy and its gradient (`ops::loss`, `ops::cross_entropy_backward`).
    LOSS = "loss.cu",
    || {
        let mut n = Vec::new();
        for base in [
            "cross_entropy_rows",
            "cross_entropy_reduce",
            "cross_entropy_total_weight",
            "cross_entropy_backward",
        ] {
            typed(&mut n, base, &FLOAT_TYPES);
        }
        n
    }
);
kernel_file!(
    /// `scatter_add` and `index_add` (`ops::scatter`).
    SCATTER = "scatter.cu",
    || {
        let mut n = Vec::new();
        typed(&mut n, "scatter_add", &FLOAT_TYPES);
        n
    }
);
kernel_file!(
    /// One-pass SGD and Adam updates (`ops::optim`).
    OPTIM = "optim.cu",
    || {
        let mut n = Vec::new();
        typed(&mut n, "sgd", &FLOAT_TYPES);
        typed(&mut n, "adam", &FLOAT_TYPES);
        n
    }
);

/// Every kernel file, in the order [`compile_kernels`] reports them.
pub(crate) static ALL: [&KernelFile; 11] = [
    &COPY, &CREATION, &BINARY, &UNARY, &REDUCE, &SOFTMAX, &INDEX, &WHERE, &LOSS, &SCATTER, &OPTIM,
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
/// Returns one report per file; warnings are in each report's `log`. Fails on the first
/// compile error, missing library or name mismatch. This is what CI runs with the
/// `nvidia-cuda-nvrtc` wheel (see `scripts/check-kernels.sh`).
///
/// Each image is also stored in the on-disk kernel cache (`DEVTYPE_KERNEL_CACHE`, see the
/// [module documentation](crate::cuda)), where GPU processes find it instead of compiling.
pub fn compile_kernels(arch: &str) -> Result<Vec<KernelReport>> {
    let mut reports = Vec::new();
    for family in ALL {
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
        reports.push(KernelReport {
            file: family.file,
            kernels: found.len(),
            image_bytes: compiled.image.len(),
            log: compiled.log,
        });
    }
    Ok(reports)
}
