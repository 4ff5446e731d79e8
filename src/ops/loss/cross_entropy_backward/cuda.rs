//! CUDA side of the cross-entropy gradient (`kernels/loss.cu`): a one-block kernel sums the
//! class weights of the rows not ignored (the mean's divisor, kept on the device), then one
//! block per row writes `(softmax(x) - onehot(t)) * scale`. Nothing is read back to the host.
//!
//! A target outside `[0, classes)` (other than `ignore_index`) fails on the CPU; here it makes
//! that row NaN (and, for the mean, every row, through the total weight) instead, because
//! checking would make the host wait. The kernels never read out of bounds.

use crate::backend::cuda::context::GpuContext;
use crate::backend::cuda::launch::{self, Kernel};
use crate::backend::cuda::memory;
use crate::core::cuda_storage::{slice_ptr, with_dtype, CudaElement};
use crate::core::error::Result;
use crate::core::raw::RawTensor;
use crate::ops::copy::cuda::{contiguous_or_self, narrow, widen};
use crate::ops::kernels::{typed as typed_names, WIDE_FLOAT_TYPES};
use crate::ops::loss::{CrossEntropyOptions, Reduction};

/// The kernels of `kernels/loss.cu` this family launches (the file is declared by
/// `ops::loss`, whose list includes these).
pub(crate) fn kernel_names() -> Vec<String> {
    let mut n = Vec::new();
    for base in ["cross_entropy_total_weight", "cross_entropy_backward"] {
        typed_names(&mut n, base, &WIDE_FLOAT_TYPES);
    }
    n
}

pub(crate) fn cross_entropy_backward(
    gpu: &'static GpuContext,
    logits: &RawTensor,
    targets: &RawTensor,
    weight: Option<&RawTensor>,
    options: CrossEntropyOptions,
    grad_out: &RawTensor,
    nc: (usize, usize),
) -> Result<RawTensor> {
    if logits.dtype.is_half() {
        // f16/bf16: the f32 kernels on widened copies, each gradient element rounded once.
        let x = widen(gpu, logits)?;
        let w = weight.map(|w| widen(gpu, w)).transpose()?;
        let g = widen(gpu, grad_out)?;
        let grad = cross_entropy_backward(gpu, &x, targets, w.as_ref(), options, &g, nc)?;
        return narrow(gpu, grad, logits.dtype);
    }
    with_dtype!(logits.dtype, "nll_loss_backward", |T| typed::<T>(
        gpu, logits, targets, weight, options, grad_out, nc
    ))
}

fn typed<T: CudaElement>(
    gpu: &'static GpuContext,
    logits: &RawTensor,
    targets: &RawTensor,
    weight: Option<&RawTensor>,
    options: CrossEntropyOptions,
    grad_out: &RawTensor,
    (n, c): (usize, usize),
) -> Result<RawTensor> {
    let x = contiguous_or_self(gpu, logits)?;
    let t = contiguous_or_self(gpu, targets)?;
    let go = contiguous_or_self(gpu, grad_out)?;
    let w = weight.map(|w| contiguous_or_self(gpu, w)).transpose()?;
    let out = memory::alloc::<T>(gpu, n * c)?;
    if n * c > 0 {
        let (px, pt, pgo) = (memory::ptr(&x)?, memory::ptr(&t)?, memory::ptr(&go)?);
        let pw = match &w {
            Some(w) => memory::ptr(w)?,
            None => 0,
        };
        let (ignore, has_weight) = (options.ignore_index, w.is_some() as u32);
        let mode: u32 = match options.reduction {
            Reduction::Mean => 0,
            Reduction::Sum => 1,
            Reduction::None => 2,
        };
        let total = memory::alloc::<T>(gpu, 1)?;
        let ptotal = slice_ptr(&total);
        if mode == 0 {
            let name = format!("cross_entropy_total_weight_{}", T::SUFFIX);
            // cross_entropy_total_weight_<T>(T* total, const i64* target, const T* weight,
            // u64 n, u64 c, i64 ignore_index, u32 has_weight): `target` holds n i64, `weight`
            // c values (read only at targets checked to be in [0, c)), `total` one.
            launch::one_block(
                gpu,
                Kernel::new(
                    &crate::ops::loss::cuda::KERNELS,
                    &name,
                    "cuLaunchKernel(cross_entropy_total_weight)",
                ),
                [ptotal, pt, pw],
                n,
                (c as u64, ignore, has_weight),
            )?;
        }
        let name = format!("cross_entropy_backward_{}", T::SUFFIX);
        // cross_entropy_backward_<T>(T* out, const T* x, const i64* target, const T* weight,
        // const T* grad_out, const T* total, u64 n, u64 c, i64 ignore_index, u32 has_weight,
        // u32 mode): `x` and `out` are contiguous n x c, `target` n i64, `grad_out` holds n
        // values for mode 2 (`Reduction::None`) and one otherwise (checked by the caller),
        // `total` is read only in mode 0 after the kernel above wrote it (same stream);
        // `weight` is read only at targets checked to be in [0, c).
        launch::per_row(
            gpu,
            Kernel::new(
                &crate::ops::loss::cuda::KERNELS,
                &name,
                "cuLaunchKernel(cross_entropy_backward)",
            ),
            [slice_ptr(&out), px, pt, pw, pgo, ptotal],
            (n, c),
            256,
            (ignore, has_weight, mode),
        )?;
        drop(total);
    }
    Ok(memory::tensor(out, logits.layout.shape, gpu.ordinal))
}

impl super::CrossEntropyBackwardKernel for crate::ops::backend::CudaBackend {
    #[inline(always)]
    fn cross_entropy_backward(
        self,
        logits: &RawTensor,
        targets: &RawTensor,
        weight: Option<&RawTensor>,
        options: CrossEntropyOptions,
        grad_out: &RawTensor,
        nc: (usize, usize),
    ) -> Result<RawTensor> {
        cross_entropy_backward(self.0, logits, targets, weight, options, grad_out, nc)
    }
}
