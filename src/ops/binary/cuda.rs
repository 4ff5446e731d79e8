//! CUDA side of element-wise arithmetic and comparisons (`kernels/binary.cu`).
//!
//! Broadcast and strided operands are passed as strides (no copies); the output is a new
//! contiguous tensor. Contiguous operands take the kernels' vectorised path.

use super::{BinaryOp, CompareOp};
use crate::backend::cuda::context::GpuContext;
use crate::backend::cuda::kernels::KernelFile;
use crate::backend::cuda::launch::{self, Kernel};
use crate::backend::cuda::memory;
use crate::core::cuda_storage::{suffix, with_dtype, CudaElement};
use crate::core::error::Result;
use crate::core::layout::Dims;
use crate::core::raw::{Operand, RawTensor};
use crate::core::{DType, Element, Scalar};
use crate::ops::kernels::{typed, ALL_TYPES, FLOAT_TYPES, NUMERIC_TYPES};
use cudarc::driver::DeviceRepr;

/// `kernels/binary.cu`: arithmetic and comparisons (here) and the relu and GELU gradients
/// (`ops::binary::relu_backward` and `ops::binary::gelu_backward`, which name their own
/// kernels).
pub(crate) static KERNELS: KernelFile = KernelFile {
    file: "binary.cu",
    source: include_str!("../../../kernels/binary.cu"),
    names: || {
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
            typed(
                &mut n,
                &format!("compare_scalar_{}", compare_name(op)),
                &ALL_TYPES,
            );
        }
        n.extend(super::relu_backward::cuda::kernel_names());
        n.extend(super::gelu_backward::cuda::kernel_names());
        n
    },
};

/// The kernel name of a comparison (`compare_<name>_<T>` in `binary.cu`).
fn compare_name(op: CompareOp) -> &'static str {
    match op {
        CompareOp::Eq => "eq",
        CompareOp::Ne => "ne",
        CompareOp::Lt => "lt",
        CompareOp::Le => "le",
        CompareOp::Gt => "gt",
        CompareOp::Ge => "ge",
    }
}

/// Queues `kernel(out, a, b, Strided<2>, u64 n)` over `shape` and returns `out`
/// (`binary_<op>_<T>` and `compare_<op>_<T>`).
fn launch2(
    gpu: &'static GpuContext,
    kernel: Kernel<'_>,
    a: &RawTensor,
    b: &RawTensor,
    shape: Dims,
    out_dtype: DType,
) -> Result<RawTensor> {
    let n: usize = shape.iter().product();
    let out = memory::alloc_dtype(gpu, out_dtype, n)?;
    if n > 0 {
        let la = a.layout.broadcast_to(&shape)?;
        let lb = b.layout.broadcast_to(&shape)?;
        launch::strided(
            gpu,
            kernel,
            out.device_ptr(),
            [memory::ptr(a)?, memory::ptr(b)?],
            &launch::strided_layout::<2>(&shape, [&la.strides, &lb.strides]),
            n,
            (),
            4,
        )?;
    }
    Ok(memory::tensor_from_storage(out, shape, gpu.ordinal))
}

pub(crate) fn binary(
    gpu: &'static GpuContext,
    a: Operand<'_>,
    b: Operand<'_>,
    shape: Dims,
    op: BinaryOp,
) -> Result<RawTensor> {
    let name = format!("binary_{}_{}", op.name(), suffix(a.dtype));
    let kernel = Kernel::new(&KERNELS, &name, "cuLaunchKernel(binary)");
    launch2(gpu, kernel, &a, &b, shape, a.dtype)
}

pub(crate) fn binary_scalar(
    gpu: &'static GpuContext,
    a: Operand<'_>,
    s: Scalar,
    op: BinaryOp,
    scalar_first: bool,
) -> Result<RawTensor> {
    if a.dtype.is_half() {
        // The 16-bit floats keep the scalar as an `f32` (PyTorch's wrapped number in
        // `opmath_type`), as the CPU does.
        return with_dtype!(a.dtype, "binary_scalar", |T| scalar_typed::<T, f32>(
            gpu,
            &a,
            s.to_f64() as f32,
            op,
            scalar_first
        ));
    }
    with_dtype!(a.dtype, "binary_scalar", |T| scalar_typed::<T, T>(
        gpu,
        &a,
        T::from_scalar(s),
        op,
        scalar_first
    ))
}

/// `S` is the scalar's type in the kernel: `T` itself, or `f32` for the 16-bit floats.
fn scalar_typed<T: CudaElement, S: DeviceRepr>(
    gpu: &'static GpuContext,
    a: &RawTensor,
    s: S,
    op: BinaryOp,
    scalar_first: bool,
) -> Result<RawTensor> {
    let n = a.numel();
    let out = memory::alloc::<T>(gpu, n)?;
    let name = format!("binary_scalar_{}_{}", op.name(), T::SUFFIX);
    // binary_scalar_<op>_<T>(T* out, const T* a, Strided<1> L, u64 n, S s, u32 scalar_first),
    // the scalar converted as the CPU converts it (`T::from_scalar`, or to `f32` for f16/bf16).
    launch::strided(
        gpu,
        Kernel::new(&KERNELS, &name, "cuLaunchKernel(binary_scalar)"),
        crate::core::cuda_storage::slice_ptr(&out),
        [memory::ptr(a)?],
        &launch::strided_layout::<1>(&a.layout.shape, [&a.layout.strides]),
        n,
        (s, scalar_first as u32),
        4,
    )?;
    Ok(memory::tensor(out, a.layout.shape, gpu.ordinal))
}

pub(crate) fn compare(
    gpu: &'static GpuContext,
    a: &RawTensor,
    b: &RawTensor,
    shape: Dims,
    op: CompareOp,
) -> Result<RawTensor> {
    let name = format!("compare_{}_{}", compare_name(op), suffix(a.dtype));
    let kernel = Kernel::new(&KERNELS, &name, "cuLaunchKernel(binary)");
    launch2(gpu, kernel, a, b, shape, DType::Bool)
}

pub(crate) fn compare_scalar(
    gpu: &'static GpuContext,
    a: &RawTensor,
    s: Scalar,
    op: CompareOp,
) -> Result<RawTensor> {
    with_dtype!(a.dtype, "compare_scalar", |T| compare_scalar_typed::<T>(
        gpu,
        a,
        T::from_scalar(s),
        op
    ))
}

fn compare_scalar_typed<T: CudaElement>(
    gpu: &'static GpuContext,
    a: &RawTensor,
    s: T,
    op: CompareOp,
) -> Result<RawTensor> {
    let n = a.numel();
    let out = memory::alloc::<bool>(gpu, n)?;
    let name = format!("compare_scalar_{}_{}", compare_name(op), suffix(a.dtype));
    // compare_scalar_<op>_<T>(bool* out, const T* a, Strided<1> L, u64 n, T s)
    launch::strided(
        gpu,
        Kernel::new(&KERNELS, &name, "cuLaunchKernel(compare_scalar)"),
        crate::core::cuda_storage::slice_ptr(&out),
        [memory::ptr(a)?],
        &launch::strided_layout::<1>(&a.layout.shape, [&a.layout.strides]),
        n,
        (s,),
        4,
    )?;
    Ok(memory::tensor(out, a.layout.shape, gpu.ordinal))
}

impl super::BinaryKernel for crate::ops::backend::CudaBackend {
    #[inline(always)]
    fn binary(
        self,
        a: Operand<'_>,
        b: Operand<'_>,
        shape: Dims,
        op: BinaryOp,
    ) -> Result<RawTensor> {
        binary(self.0, a, b, shape, op)
    }
    #[inline(always)]
    fn binary_scalar(
        self,
        a: Operand<'_>,
        s: Scalar,
        op: BinaryOp,
        scalar_first: bool,
    ) -> Result<RawTensor> {
        binary_scalar(self.0, a, s, op, scalar_first)
    }
    #[inline(always)]
    fn compare(
        self,
        a: &RawTensor,
        b: &RawTensor,
        shape: Dims,
        op: CompareOp,
    ) -> Result<RawTensor> {
        compare(self.0, a, b, shape, op)
    }
    #[inline(always)]
    fn compare_scalar(self, a: &RawTensor, s: Scalar, op: CompareOp) -> Result<RawTensor> {
        compare_scalar(self.0, a, s, op)
    }
}
