//! CUDA side of `where` (`kernels/where_cond.cu`): the three operands are broadcast through
//! their strides, the output is a new contiguous tensor.

use crate::backend::cuda::kernels;
use crate::backend::cuda::{launch, memory};
use crate::core::cuda_storage::suffix;
use crate::core::error::Result;
use crate::core::layout::Dims;
use crate::core::raw::RawTensor;
use cudarc::driver::PushKernelArg;

pub(crate) fn where_cond(
    cond: &RawTensor,
    a: &RawTensor,
    b: &RawTensor,
    shape: Dims,
) -> Result<RawTensor> {
    let (gpu, sc) = memory::gpu_of("where", cond)?;
    let (_, sa) = memory::gpu_of("where", a)?;
    let (_, sb) = memory::gpu_of("where", b)?;
    memory::same_gpu(gpu, &[a, b])?;
    let n: usize = shape.iter().product();
    let out = memory::alloc_dtype(gpu, a.dtype, n)?;
    if n > 0 {
        let lc = cond.layout.broadcast_to(&shape)?;
        let la = a.layout.broadcast_to(&shape)?;
        let lb = b.layout.broadcast_to(&shape)?;
        let layout = launch::strided::<3>(&shape, [&lc.strides, &la.strides, &lb.strides]);
        let f = kernels::function(
            gpu,
            &crate::ops::kernels::WHERE,
            &format!("where_{}", suffix(a.dtype)),
        )?;
        let (po, pc, pa, pb, count) = (
            out.device_ptr(),
            memory::element_ptr(cond, sc),
            memory::element_ptr(a, sa),
            memory::element_ptr(b, sb),
            n as u64,
        );
        let mut builder = gpu.stream.launch_builder(f);
        builder
            .arg(&po)
            .arg(&pc)
            .arg(&pa)
            .arg(&pb)
            .arg(&layout)
            .arg(&count);
        // SAFETY: `where_<T>(T* out, const bool* cond, const T* a, const T* b, Strided<3>, u64)`
        // matches; the three inputs are views broadcast to `shape` inside their buffers (cond is
        // bool, checked by the caller) and `out` holds `n` elements.
        unsafe { builder.launch(launch::grid(gpu, n, 1)) }
            .map_err(|e| gpu.error("cuLaunchKernel(where)", e))?;
    }
    Ok(memory::tensor_from_storage(out, shape, gpu.ordinal))
}
