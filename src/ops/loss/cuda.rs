//! CUDA side of fused cross-entropy (`kernels/loss.cu`): one block per row computes the row's
//! log-sum-exp and its weighted loss; a second one-block kernel sums the losses (and weights,
//! for the mean). Nothing is read back to the host.
//!
//! The CPU fails with `Target t is out of bounds.` for a target outside `[0, classes)` (other
//! than `ignore_index`). Checking that on the GPU would make the host wait, so it is not done;
//! the kernel never reads out of bounds and such a row's loss is NaN instead (so the mean or
//! sum is NaN too).

use super::{CrossEntropyOptions, Reduction};
use crate::backend::cuda::kernels;
use crate::backend::cuda::{launch, memory};
use crate::core::cuda_storage::{slice_ptr, with_dtype, CudaElement};
use crate::core::error::Result;
use crate::core::layout::Dims;
use crate::core::raw::RawTensor;
use cudarc::driver::{LaunchConfig, PushKernelArg};

pub(crate) fn cross_entropy(
    logits: &RawTensor,
    targets: &RawTensor,
    weight: Option<&RawTensor>,
    options: CrossEntropyOptions,
    nc: (usize, usize),
) -> Result<RawTensor> {
    with_dtype!(logits.dtype, |T| typed::<T>(
        logits, targets, weight, options, nc
    ))
}

fn typed<T: CudaElement>(
    logits: &RawTensor,
    targets: &RawTensor,
    weight: Option<&RawTensor>,
    options: CrossEntropyOptions,
    (n, c): (usize, usize),
) -> Result<RawTensor> {
    let (gpu, _) = memory::gpu_of("cross_entropy", logits)?;
    memory::same_gpu(gpu, &[targets])?;
    if let Some(w) = weight {
        memory::same_gpu(gpu, &[w])?;
    }
    let x = crate::ops::copy::cuda::contiguous_or_self(logits)?;
    let t = crate::ops::copy::cuda::contiguous_or_self(targets)?;
    let w = weight
        .map(crate::ops::copy::cuda::contiguous_or_self)
        .transpose()?;
    let ptr = |r: &RawTensor| -> Result<u64> {
        let (_, s) = memory::gpu_of("cross_entropy", r)?;
        Ok(memory::element_ptr(r, s))
    };
    let loss = memory::alloc::<T>(gpu, n)?;
    let wsum = memory::alloc::<T>(gpu, n)?;
    let (pl, pw) = (slice_ptr(&loss), slice_ptr(&wsum));
    if n > 0 {
        let f = kernels::function(
            gpu,
            &crate::ops::kernels::LOSS,
            &format!("cross_entropy_rows_{}", T::SUFFIX),
        )?;
        let cfg = launch::per_row(gpu, n, c, 256);
        let (px, pt) = (ptr(&x)?, ptr(&t)?);
        let pweight = match &w {
            Some(w) => ptr(w)?,
            None => 0,
        };
        let (rows, classes, ignore, has_weight) =
            (n as u64, c as u64, options.ignore_index, w.is_some() as u32);
        let mut b = gpu.stream.launch_builder(f);
        b.arg(&pl)
            .arg(&pw)
            .arg(&px)
            .arg(&pt)
            .arg(&pweight)
            .arg(&rows)
            .arg(&classes)
            .arg(&ignore)
            .arg(&has_weight);
        // SAFETY: `cross_entropy_rows_<T>(T* loss, T* wsum, const T* x, const i64* target,
        // const T* weight, u64 n, u64 c, i64 ignore_index, u32 has_weight)` matches; `x` is a
        // contiguous n x c, `target` n contiguous i64, `weight` c contiguous values (read only
        // when `has_weight`, at a target checked on the device to be in [0, c)); `loss` and
        // `wsum` hold n elements; the block size is a multiple of 32.
        unsafe { b.launch(cfg) }.map_err(|e| gpu.error("cuLaunchKernel(cross_entropy)", e))?;
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
            let f = kernels::function(
                gpu,
                &crate::ops::kernels::LOSS,
                &format!("cross_entropy_reduce_{}", T::SUFFIX),
            )?;
            let cfg = LaunchConfig {
                grid_dim: (1, 1, 1),
                block_dim: (launch::block_for(n, 1024), 1, 1),
                shared_mem_bytes: 0,
            };
            let (po, rows, mean) = (
                slice_ptr(&out),
                n as u64,
                (options.reduction == Reduction::Mean) as u32,
            );
            let mut b = gpu.stream.launch_builder(f);
            b.arg(&po).arg(&pl).arg(&pw).arg(&rows).arg(&mean);
            // SAFETY: `cross_entropy_reduce_<T>(T* out, const T* loss, const T* wsum, u64 n,
            // u32 mean)` matches; `loss` and `wsum` hold n elements written by the kernel above
            // (queued before on the same stream), `out` holds one; one block, a multiple of 32.
            unsafe { b.launch(cfg) }
                .map_err(|e| gpu.error("cuLaunchKernel(cross_entropy_reduce)", e))?;
            drop((loss, wsum));
            Ok(memory::tensor(out, Dims::EMPTY, gpu.ordinal))
        }
    }
}
