//! Every op, one folder per family: `mod.rs` (shapes, checks, the family's kernel trait, and
//! one `dispatch!` to the implementation for the operands' device: `backend::on`),
//! `cpu.rs` (the trait for `CpuBackend`: the CPU kernels) and `cuda.rs` (the trait for
//! `CudaBackend`: the CUDA launches through the typed launchers of `backend::cuda::launch`,
//! and the family's `KERNELS`, its kernel file and the names it launches from it). A new
//! kernel entry is one trait method, its two impls and its `.cu` kernel, all in its family.
//!
//! Ops here work on [`RawTensor`](crate::core::raw::RawTensor) and assume the device check
//! is done: the typed front had the compiler do it, the dynamic front does it in
//! `dyn_tensor::check` before calling in.

/// Runs `$body` with `$T` bound to the element type of a CPU storage and `$data` to its slice.
macro_rules! cpu_dispatch {
    ($storage:expr, |$data:ident : $T:ident| $body:expr) => {
        match $storage {
            $crate::core::cpu_storage::CpuStorage::F32($data) => {
                #[allow(dead_code)]
                type $T = f32;
                let $data = $data.as_slice();
                $body
            }
            $crate::core::cpu_storage::CpuStorage::F64($data) => {
                #[allow(dead_code)]
                type $T = f64;
                let $data = $data.as_slice();
                $body
            }
            $crate::core::cpu_storage::CpuStorage::I64($data) => {
                #[allow(dead_code)]
                type $T = i64;
                let $data = $data.as_slice();
                $body
            }
            $crate::core::cpu_storage::CpuStorage::Bool($data) => {
                #[allow(dead_code)]
                type $T = bool;
                let $data = $data.as_slice();
                $body
            }
            $crate::core::cpu_storage::CpuStorage::F16($data) => {
                #[allow(dead_code)]
                type $T = half::f16;
                let $data = $data.as_slice();
                $body
            }
            $crate::core::cpu_storage::CpuStorage::BF16($data) => {
                #[allow(dead_code)]
                type $T = half::bf16;
                let $data = $data.as_slice();
                $body
            }
        }
    };
}

#[macro_use]
pub(crate) mod backend;
pub(crate) mod amp;
pub(crate) mod binary;
pub(crate) mod capability;
pub(crate) mod cat;
pub(crate) mod conv;
pub(crate) mod copy;
pub(crate) mod creation;
pub(crate) mod half;
pub(crate) mod index;
pub(crate) mod kernel_files;
pub(crate) mod kernels;
pub(crate) mod linear;
pub(crate) mod loss;
pub(crate) mod matmul;
pub(crate) mod optim;
pub(crate) mod reduce;
pub(crate) mod shape;
pub(crate) mod softmax;
pub(crate) mod sort;
pub(crate) mod unary;
pub(crate) mod where_cond;

pub use binary::{BinaryOp, CompareOp};
pub use reduce::ReduceOp;
pub use unary::UnaryOp;
