//! CUDA side of the relu gradient: `y <= 0 ? 0 : grad` (PyTorch's `threshold_backward`) in one
//! kernel (`relu_backward_*` of `kernels/binary.cu`), reading both operands through their
//! strides.

use crate::backend::cuda::context::GpuContext;
use crate::backend::cuda::launch::{self, Kernel};
use crate::backend::cuda::memory;
use crate::core::cuda_storage::suffix;
use crate::core::error::Result;
use crate::core::raw::{Operand, RawTensor};
use crate::ops::kernels::{typed, FLOAT_TYPES};

/// The kernels of `kernels/binary.cu` this family launches (the file is declared by
/// `ops::binary`, whose list includes these).
pub(crate) fn kernel_names() -> Vec<String> {
    let mut n = Vec::new();
    typed(&mut n, "relu_backward", &FLOAT_TYPES);
    n
}

pub(crate) fn relu_backward(
    gpu: &'static GpuContext,
    grad: Operand<'_>,
    y: &RawTensor,
) -> Result<RawTensor> {
    let shape = grad.layout.shape;
    let n = grad.numel();
    let out = memory::alloc_dtype(gpu, grad.dtype, n)?;
    let name = format!("relu_backward_{}", suffix(grad.dtype));
    // relu_backward_<T>(T* out, const T* grad, const T* y, Strided<2> L, u64 n); `grad` and
    // `y` have `shape` (checked by the caller).
    launch::strided(
        gpu,
        Kernel::new(
            &crate::ops::binary::cuda::KERNELS,
            &name,
            "cuLaunchKernel(relu_backward)",
        ),
        out.device_ptr(),
        [memory::ptr(&grad)?, memory::ptr(y)?],
        &launch::strided_layout::<2>(&shape, [&grad.layout.strides, &y.layout.strides]),
        n,
        (),
        4,
    )?;
    Ok(memory::tensor_from_storage(out, shape, gpu.ordinal))
}

impl super::ReluBackwardKernel for crate::ops::backend::CudaBackend {
    #[inline(always)]
    fn relu_backward(self, grad: Operand<'_>, y: &RawTensor) -> Result<RawTensor> {
        relu_backward(self.0, grad, y)
    }
}
