//! CUDA side of fused cross-entropy (`kernels/loss.cu`): one block per row computes the row's
//! log-sum-exp and its weighted loss; a second one-block kernel sums the losses (and weights,
//! for the mean). Nothing is read back to the host.
//!
//! The CPU fails with `Target t is out of bounds.` for a target outside `[0, classes)` (other
//! than `ignore_index`). Checking that on the GPU would make the host wait, so it is not done;
//! the kernel never reads out of bounds and such a row's loss is NaN instead (so the mean or
//! sum is NaN too).

use super::{CrossEntropyOptions, Reduction};
use crate::backend::cuda::context::GpuContext;
use crate::backend::cuda::kernels::KernelFile;
use crate::backend::cuda::launch::{self, Kernel};
use crate::backend::cuda::memory;
use crate::core::cuda_storage::{slice_ptr, with_dtype, CudaElement};
use crate::core::error::Result;
use crate::core::layout::Dims;
use crate::core::raw::RawTensor;
use crate::ops::copy::cuda::{contiguous_or_self, narrow, widen};
use crate::ops::kernels::{typed as typed_names, WIDE_FLOAT_TYPES};

/// `kernels/loss.cu`: the forward kernels (here) and the gradient's
/// (`ops::loss::cross_entropy_backward`, which names its own).
pub(crate) static KERNELS: KernelFile = KernelFile {
    file: "loss.cu",
    source: include_str!("../../../kernels/loss.cu"),
    names: || {
        let mut n = Vec::new();
        for base in ["cross_entropy_rows", "cross_entropy_reduce"] {
            typed_names(&mut n, base, &WIDE_FLOAT_TYPES);
        }
        n.extend(super::cross_entropy_backward::cuda::kernel_names());
        n
    },
};

pub(crate) fn cross_entropy(
    gpu: &'static GpuContext,
    logits: &RawTensor,
    targets: &RawTensor,
    weight: Option<&RawTensor>,
    options: CrossEntropyOptions,
    nc: (usize, usize),
) -> Result<RawTensor> {
    if logits.dtype.is_half() {
        // f16/bf16: the f32 kernels on widened copies, the loss rounded once (the log-softmax,
        // the sums and the mean's division all in f32), as on the CPU.
        let x = widen(gpu, logits)?;
        let w = weight.map(|w| widen(gpu, w)).transpose()?;
        let loss = cross_entropy(gpu, &x, targets, w.as_ref(), options, nc)?;
        return narrow(gpu, loss, logits.dtype);
    }
    with_dtype!(logits.dtype, "cross_entropy", |T| typed::<T>(
        gpu, logits, targets, weight, options, nc
    ))
}

fn typed<T: CudaElement>(
    gpu: &'static GpuContext,
    logits: &RawTensor,
    targets: &RawTensor,
    weight: Option<&RawTensor>,
    options: CrossEntropyOptions,
    (n, c): (usize, usize),
) -> Result<RawTensor> {
    let x = contiguous_or_self(gpu, logits)?;
    let t = contiguous_or_self(gpu, targets)?;
    let w = weight.map(|w| contiguous_or_self(gpu, w)).transpose()?;
    let loss = memory::alloc::<T>(gpu, n)?;
    let wsum = memory::alloc::<T>(gpu, n)?;
    let (pl, pw) = (slice_ptr(&loss), slice_ptr(&wsum));
    if n > 0 {
        let name = format!("cross_entropy_rows_{}", T::SUFFIX);
        let pweight = match &w {
            Some(w) => memory::ptr(w)?,
            None => 0,
        };
        // cross_entropy_rows_<T>(T* loss, T* wsum, const T* x, const i64* target, const T*
        // weight, u64 n, u64 c, i64 ignore_index, u32 has_weight): `x` is a contiguous n x c,
        // `target` n contiguous i64, `weight` c contiguous values (read only when `has_weight`,
        // at a target checked on the device to be in [0, c)); `loss` and `wsum` hold n elements.
        launch::per_row(
            gpu,
            Kernel::new(&KERNELS, &name, "cuLaunchKernel(cross_entropy)"),
            [pl, pw, memory::ptr(&x)?, memory::ptr(&t)?, pweight],
            (n, c),
            256,
            (options.ignore_index, w.is_some() as u32),
        )?;
    }
    match options.reduction {
        Reduction::None => {
            let shape = if logits.rank() == 1 {
                Dims::EMPTY
            } else {
                Dims::shape(&[n])?
            };
            Ok(memory::tensor(loss, shape, gpu.ordinal))
        }
        Reduction::Sum | Reduction::Mean => {
            let out = memory::alloc::<T>(gpu, 1)?;
            let name = format!("cross_entropy_reduce_{}", T::SUFFIX);
            // cross_entropy_reduce_<T>(T* out, const T* loss, const T* wsum, u64 n, u32 mean):
            // `loss` and `wsum` hold n elements written by the kernel above (queued before on
            // the same stream), `out` holds one.
            launch::one_block(
                gpu,
                Kernel::new(&KERNELS, &name, "cuLaunchKernel(cross_entropy_reduce)"),
                [slice_ptr(&out), pl, pw],
                n,
                ((options.reduction == Reduction::Mean) as u32,),
            )?;
            drop((loss, wsum));
            Ok(memory::tensor(out, Dims::EMPTY, gpu.ordinal))
        }
    }
}

impl super::LossKernel for crate::ops::backend::CudaBackend {
    #[inline(always)]
    fn cross_entropy(
        self,
        logits: &RawTensor,
        targets: &RawTensor,
        weight: Option<&RawTensor>,
        options: CrossEntropyOptions,
        nc: (usize, usize),
    ) -> Result<RawTensor> {
        cross_entropy(self.0, logits, targets, weight, options, nc)
    }
}
