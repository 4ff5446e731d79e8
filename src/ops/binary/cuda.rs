//! CUDA side of element-wise arithmetic and comparisons (`kernels/binary.cu`).
//!
//! Broadcast and strided operands are passed as strides (no copies); the output is a new
//! contiguous tensor. Contiguous operands take the kernels' vectorised path.

use super::{BinaryOp, CompareOp};
use crate::backend::cuda::context::GpuContext;
use crate::backend::cuda::kernels;
use crate::backend::cuda::{launch, memory};
use crate::core::cuda_storage::{suffix, with_dtype, CudaElement};
use crate::core::error::Result;
use crate::core::layout::Dims;
use crate::core::raw::RawTensor;
use crate::core::{DType, Element, Scalar};
use crate::ops::kernels::compare_name;
use cudarc::driver::PushKernelArg;

/// Queues `kernel(out, a, b, Strided<2>, n)` over `shape` and returns `out`.
fn launch2(
    name: &str,
    a: &RawTensor,
    b: &RawTensor,
    shape: Dims,
    out_dtype: DType,
) -> Result<RawTensor> {
    let (gpu, sa) = memory::gpu_of(name_op(name), a)?;
    let (_, sb) = memory::gpu_of(name_op(name), b)?;
    memory::same_gpu(gpu, &[b])?;
    let n: usize = shape.iter().product();
    let out = memory::alloc_dtype(gpu, out_dtype, n)?;
    if n > 0 {
        let la = a.layout.broadcast_to(&shape)?;
        let lb = b.layout.broadcast_to(&shape)?;
        let layout = launch::strided::<2>(&shape, [&la.strides, &lb.strides]);
        let f = kernels::function(gpu, &crate::ops::kernels::BINARY, name)?;
        let (po, pa, pb, count) = (
            out.device_ptr(),
            memory::element_ptr(a, sa),
            memory::element_ptr(b, sb),
            n as u64,
        );
        let mut builder = gpu.stream.launch_builder(f);
        builder.arg(&po).arg(&pa).arg(&pb).arg(&layout).arg(&count);
        // SAFETY: `binary_*` / `compare_*(O* out, const T* a, const T* b, Strided<2>, u64 n)`
        // match these arguments; both inputs are views of live buffers of `a.dtype` broadcast
        // to `shape` (the strides keep every offset inside them), and `out` holds `n` elements.
        unsafe { builder.launch(launch::elementwise(gpu, n)) }
            .map_err(|e| gpu.error("cuLaunchKernel(binary)", e))?;
    }
    Ok(memory::tensor_from_storage(out, shape, gpu.ordinal))
}

fn name_op(name: &str) -> &'static str {
    if name.starts_with("compare") {
        "compare"
    } else {
        "binary"
    }
}

pub(crate) fn binary(a: &RawTensor, b: &RawTensor, shape: Dims, op: BinaryOp) -> Result<RawTensor> {
    let name = format!("binary_{}_{}", op.name(), suffix(a.dtype));
    launch2(&name, a, b, shape, a.dtype)
}

fn scalar_typed<T: CudaElement>(
    gpu: &'static GpuContext,
    a: &RawTensor,
    pa: u64,
    s: Scalar,
    op: BinaryOp,
    scalar_first: bool,
) -> Result<RawTensor> {
    let n = a.numel();
    let out = memory::alloc::<T>(gpu, n)?;
    if n > 0 {
        let name = format!("binary_scalar_{}_{}", op.name(), T::SUFFIX);
        let f = kernels::function(gpu, &crate::ops::kernels::BINARY, &name)?;
        let layout = launch::strided::<1>(&a.layout.shape, [&a.layout.strides]);
        // The scalar converted as the CPU converts it (`T::from_scalar`).
        let (po, count, value, first) = (
            crate::core::cuda_storage::slice_ptr(&out),
            n as u64,
            T::from_scalar(s),
            scalar_first as u32,
        );
        let mut builder = gpu.stream.launch_builder(f);
        builder
            .arg(&po)
            .arg(&pa)
            .arg(&layout)
            .arg(&count)
            .arg(&value)
            .arg(&first);
        // SAFETY: `binary_scalar_<op>_<T>(T* out, const T* a, Strided<1>, u64 n, T s, u32 first)`
        // matches; `a` is a view inside its buffer and `out` holds `n` elements.
        unsafe { builder.launch(launch::elementwise(gpu, n)) }
            .map_err(|e| gpu.error("cuLaunchKernel(binary_scalar)", e))?;
    }
    Ok(memory::tensor(out, a.layout.shape, gpu.ordinal))
}

pub(crate) fn binary_scalar(
    a: &RawTensor,
    s: Scalar,
    op: BinaryOp,
    scalar_first: bool,
) -> Result<RawTensor> {
    let (gpu, sa) = memory::gpu_of("binary_scalar", a)?;
    let pa = memory::element_ptr(a, sa);
    with_dtype!(a.dtype, |T| scalar_typed::<T>(
        gpu,
        a,
        pa,
        s,
        op,
        scalar_first
    ))
}

pub(crate) fn compare(
    a: &RawTensor,
    b: &RawTensor,
    shape: Dims,
    op: CompareOp,
) -> Result<RawTensor> {
    let name = format!("compare_{}_{}", compare_name(op), suffix(a.dtype));
    launch2(&name, a, b, shape, DType::Bool)
}

pub(crate) fn compare_scalar(a: &RawTensor, s: Scalar, op: CompareOp) -> Result<RawTensor> {
    let (gpu, sa) = memory::gpu_of("compare_scalar", a)?;
    with_dtype!(a.dtype, |T| compare_scalar_typed::<T>(
        gpu,
        sa,
        a,
        T::from_scalar(s),
        op
    ))
}

fn compare_scalar_typed<T: CudaElement>(
    gpu: &'static GpuContext,
    sa: &crate::core::cuda_storage::CudaStorage,
    a: &RawTensor,
    s: T,
    op: CompareOp,
) -> Result<RawTensor> {
    let n = a.numel();
    let out = memory::alloc::<bool>(gpu, n)?;
    if n > 0 {
        let name = format!("compare_scalar_{}_{}", compare_name(op), suffix(a.dtype));
        let f = kernels::function(gpu, &crate::ops::kernels::BINARY, &name)?;
        let layout = launch::strided::<1>(&a.layout.shape, [&a.layout.strides]);
        let (po, pa, count) = (
            crate::core::cuda_storage::slice_ptr(&out),
            memory::element_ptr(a, sa),
            n as u64,
        );
        let mut builder = gpu.stream.launch_builder(f);
        builder.arg(&po).arg(&pa).arg(&layout).arg(&count).arg(&s);
        // SAFETY: `compare_scalar_<op>_<T>(bool* out, const T* a, Strided<1>, u64 n, T s)`
        // matches; `a` is a view inside its buffer and `out` holds `n` booleans.
        unsafe { builder.launch(launch::elementwise(gpu, n)) }
            .map_err(|e| gpu.error("cuLaunchKernel(compare_scalar)", e))?;
    }
    Ok(memory::tensor(out, a.layout.shape, gpu.ordinal))
}
