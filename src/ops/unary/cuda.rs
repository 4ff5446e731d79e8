//! CUDA side of element-wise math (`kernels/unary.cu`): one kernel per op and element type,
//! reading any view through its strides and writing a new contiguous tensor.

use super::UnaryOp;
use crate::backend::cuda::context::GpuContext;
use crate::backend::cuda::kernels::KernelFile;
use crate::backend::cuda::launch::{self, Kernel};
use crate::backend::cuda::memory;
use crate::core::cuda_storage::suffix;
use crate::core::error::Result;
use crate::core::raw::{Operand, RawTensor};
use crate::ops::kernels::{typed, FLOAT_TYPES, NUMERIC_TYPES};

/// `kernels/unary.cu`: `unary_<op>_<T>(T* out, const T* a, Strided<1>, u64 n)`.
pub(crate) static KERNELS: KernelFile = KernelFile {
    file: "unary.cu",
    source: include_str!("../../../kernels/unary.cu"),
    names: || {
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
    },
};

/// The kernel name of a unary op (`unary_<name>_<T>` in `unary.cu`).
fn unary_name(op: UnaryOp) -> &'static str {
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
        UnaryOp::Erf => "erf",
        UnaryOp::Gelu => "gelu",
        UnaryOp::GeluTanh => "gelu_tanh",
    }
}

pub(crate) fn unary(gpu: &'static GpuContext, a: Operand<'_>, op: UnaryOp) -> Result<RawTensor> {
    let n = a.numel();
    let out = memory::alloc_dtype(gpu, a.dtype, n)?;
    let name = format!("unary_{}_{}", unary_name(op), suffix(a.dtype));
    // unary_<op>_<T>(T* out, const T* a, Strided<1> L, u64 n)
    launch::strided(
        gpu,
        Kernel::new(&KERNELS, &name, "cuLaunchKernel(unary)"),
        out.device_ptr(),
        [memory::ptr(&a)?],
        &launch::strided_layout::<1>(&a.layout.shape, [&a.layout.strides]),
        n,
        (),
        4,
    )?;
    Ok(memory::tensor_from_storage(
        out,
        a.layout.shape,
        gpu.ordinal,
    ))
}

impl super::UnaryKernel for crate::ops::backend::CudaBackend {
    #[inline(always)]
    fn unary(self, a: Operand<'_>, op: UnaryOp) -> Result<RawTensor> {
        unary(self.0, a, op)
    }
}
