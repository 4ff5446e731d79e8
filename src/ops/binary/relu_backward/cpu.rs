//! CPU kernel of the relu gradient.

use crate::backend::cpu::strided::{for_each_chunk, map2};
use crate::core::error::Result;
use crate::core::raw::{Operand, RawTensor};
use crate::core::{DType, Float};

/// PyTorch's `threshold_backward(grad, result, 0)`: `result <= 0 ? 0 : grad`, so a NaN
/// output (relu of NaN is NaN) passes the gradient, as in PyTorch.
#[inline(always)]
fn mask<T: Float>(g: T, y: T) -> T {
    if y <= T::ZERO {
        T::ZERO
    } else {
        g
    }
}

fn typed<T: Float>(mut grad: Operand<'_>, y: &RawTensor) -> Result<RawTensor> {
    let ys = y.cpu_slice::<T>().expect("cpu");
    if let (Operand::Owned(owner), Some(ry)) = (&mut grad, y.layout.contiguous_range()) {
        if let Some(dst) = owner.unique_cpu_data::<T>() {
            let ys = &ys[ry];
            for_each_chunk(dst, |start, chunk| {
                let end = start + chunk.len();
                for (g, &v) in chunk.iter_mut().zip(&ys[start..end]) {
                    *g = mask(*g, v);
                }
            });
            return Ok(grad.into_owned());
        }
    }
    let gs = grad.cpu_slice::<T>().expect("cpu");
    let mut out = T::pool().take(grad.numel())?;
    map2(gs, &grad.layout, ys, &y.layout, &mut out, mask);
    Ok(RawTensor::from_cpu_vec(out, grad.layout.shape))
}

pub(crate) fn relu_backward(grad: Operand<'_>, y: &RawTensor) -> Result<RawTensor> {
    match grad.dtype {
        DType::F32 => typed::<f32>(grad, y),
        DType::F64 => typed::<f64>(grad, y),
        // A mask: exact in any float type.
        DType::F16 => typed::<half::f16>(grad, y),
        DType::BF16 => typed::<half::bf16>(grad, y),
        _ => unreachable!("checked in relu_backward"),
    }
}

impl super::ReluBackwardKernel for crate::ops::backend::CpuBackend {
    #[inline(always)]
    fn relu_backward(self, grad: Operand<'_>, y: &RawTensor) -> Result<RawTensor> {
        relu_backward(grad, y)
    }
}
