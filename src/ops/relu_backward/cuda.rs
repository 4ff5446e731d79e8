//! CUDA side of the relu gradient: `grad * (y > 0)` in one kernel (`relu_backward_*` of
//! `kernels/binary.cu`), reading both operands through their strides.

use crate::backend::cuda::kernels;
use crate::backend::cuda::{launch, memory};
use crate::core::cuda_storage::suffix;
use crate::core::error::Result;
use crate::core::raw::RawTensor;
use cudarc::driver::PushKernelArg;

pub(crate) fn relu_backward(grad: &RawTensor, y: &RawTensor) -> Result<RawTensor> {
    let (gpu, sg) = memory::gpu_of("relu_backward", grad)?;
    let (_, sy) = memory::gpu_of("relu_backward", y)?;
    memory::same_gpu(gpu, &[y])?;
    let shape = grad.layout.shape;
    let n = grad.numel();
    let out = memory::alloc_dtype(gpu, grad.dtype, n)?;
    if n > 0 {
        let layout = launch::strided::<2>(&shape, [&grad.layout.strides, &y.layout.strides]);
        let f = kernels::function(
            gpu,
            &crate::ops::kernels::BINARY,
            &format!("relu_backward_{}", suffix(grad.dtype)),
        )?;
        let (po, pg, py, count) = (
            out.device_ptr(),
            memory::element_ptr(grad, sg),
            memory::element_ptr(y, sy),
            n as u64,
        );
        let mut b = gpu.stream.launch_builder(f);
        b.arg(&po).arg(&pg).arg(&py).arg(&layout).arg(&count);
        // SAFETY: `relu_backward_<T>(T* out, const T* grad, const T* y, Strided<2>, u64 n)`
        // matches; `grad` and `y` have `shape` (checked by the caller) and are views inside
        // their buffers; `out` holds `n` elements.
        unsafe { b.launch(launch::elementwise(gpu, n)) }
            .map_err(|e| gpu.error("cuLaunchKernel(relu_backward)", e))?;
    }
    Ok(memory::tensor_from_storage(out, shape, gpu.ordinal))
}
