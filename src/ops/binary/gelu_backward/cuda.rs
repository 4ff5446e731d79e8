//! CUDA side of the GELU gradient: `grad · gelu'(x)` in one kernel per approximation
//! (`gelu_backward_*` and `gelu_tanh_backward_*` of `kernels/binary.cu`), reading both operands
//! through their strides.

use crate::backend::cuda::context::GpuContext;
use crate::backend::cuda::launch::{self, Kernel};
use crate::backend::cuda::memory;
use crate::core::cuda_storage::suffix;
use crate::core::error::Result;
use crate::core::raw::{Operand, RawTensor};
use crate::ops::kernels::{typed, FLOAT_TYPES};
use crate::ops::unary::Approximate;

/// The kernel name of an approximation's gradient (`<name>_<T>` in `binary.cu`).
fn kernel_name(approximate: Approximate) -> &'static str {
    match approximate {
        Approximate::None => "gelu_backward",
        Approximate::Tanh => "gelu_tanh_backward",
    }
}

/// The kernels of `kernels/binary.cu` this family launches (the file is declared by
/// `ops::binary`, whose list includes these).
pub(crate) fn kernel_names() -> Vec<String> {
    let mut n = Vec::new();
    for approximate in [Approximate::None, Approximate::Tanh] {
        typed(&mut n, kernel_name(approximate), &FLOAT_TYPES);
    }
    n
}

pub(crate) fn gelu_backward(
    gpu: &'static GpuContext,
    grad: Operand<'_>,
    x: &RawTensor,
    approximate: Approximate,
) -> Result<RawTensor> {
    let shape = grad.layout.shape;
    let n = grad.numel();
    let out = memory::alloc_dtype(gpu, grad.dtype, n)?;
    let name = format!("{}_{}", kernel_name(approximate), suffix(grad.dtype));
    // <name>_<T>(T* out, const T* grad, const T* x, Strided<2> L, u64 n); `grad` and `x` have
    // `shape` (checked by the caller).
    launch::strided(
        gpu,
        Kernel::new(
            &crate::ops::binary::cuda::KERNELS,
            &name,
            "cuLaunchKernel(gelu_backward)",
        ),
        out.device_ptr(),
        [memory::ptr(&grad)?, memory::ptr(x)?],
        &launch::strided_layout::<2>(&shape, [&grad.layout.strides, &x.layout.strides]),
        n,
        (),
        4,
    )?;
    Ok(memory::tensor_from_storage(out, shape, gpu.ordinal))
}

impl super::GeluBackwardKernel for crate::ops::backend::CudaBackend {
    #[inline(always)]
    fn gelu_backward(
        self,
        grad: Operand<'_>,
        x: &RawTensor,
        approximate: Approximate,
    ) -> Result<RawTensor> {
        gelu_backward(self.0, grad, x, approximate)
    }
}
