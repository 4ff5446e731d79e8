//! CUDA side of element-wise math (`kernels/unary.cu`): one kernel per op and element type,
//! reading any view through its strides and writing a new contiguous tensor.

use super::UnaryOp;
use crate::backend::cuda::kernels;
use crate::backend::cuda::{launch, memory};
use crate::core::cuda_storage::suffix;
use crate::core::error::Result;
use crate::core::raw::RawTensor;
use crate::ops::kernels::unary_name;
use cudarc::driver::PushKernelArg;

pub(crate) fn unary(a: &RawTensor, op: UnaryOp) -> Result<RawTensor> {
    let (gpu, sa) = memory::gpu_of("unary", a)?;
    let n = a.numel();
    let out = memory::alloc_dtype(gpu, a.dtype, n)?;
    if n > 0 {
        let name = format!("unary_{}_{}", unary_name(op), suffix(a.dtype));
        let f = kernels::function(gpu, &crate::ops::kernels::UNARY, &name)?;
        let layout = launch::strided::<1>(&a.layout.shape, [&a.layout.strides]);
        let (po, pa, count) = (out.device_ptr(), memory::element_ptr(a, sa), n as u64);
        let mut b = gpu.stream.launch_builder(f);
        b.arg(&po).arg(&pa).arg(&layout).arg(&count);
        // SAFETY: `unary_<op>_<T>(T* out, const T* a, Strided<1>, u64 n)` matches; `a` is a view
        // inside its buffer and `out` holds `n` elements of the same type.
        unsafe { b.launch(launch::elementwise(gpu, n)) }
            .map_err(|e| gpu.error("cuLaunchKernel(unary)", e))?;
    }
    Ok(memory::tensor_from_storage(
        out,
        a.layout.shape,
        gpu.ordinal,
    ))
}
