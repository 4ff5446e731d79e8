//! CUDA side of the cross-entropy gradient (`kernels/loss.cu`): a one-block kernel sums the
//! class weights of the rows not ignored (the mean's divisor, kept on the device), then one
//! block per row writes `(softmax(x) - onehot(t)) * scale`. Nothing is read back to the host.
//!
//! A target outside `[0, classes)` (other than `ignore_index`) fails on the CPU; here it makes
//! that row NaN (and, for the mean, every row, through the total weight) instead, because
//! checking would make the host wait. The kernels never read out of bounds.

use crate::backend::cuda::kernels;
use crate::backend::cuda::{launch, memory};
use crate::core::cuda_storage::{slice_ptr, with_dtype, CudaElement};
use crate::core::error::Result;
use crate::core::raw::RawTensor;
use crate::ops::loss::{CrossEntropyOptions, Reduction};
use cudarc::driver::{LaunchConfig, PushKernelArg};

pub(crate) fn cross_entropy_backward(
    logits: &RawTensor,
    targets: &RawTensor,
    weight: Option<&RawTensor>,
    options: CrossEntropyOptions,
    grad_out: &RawTensor,
    nc: (usize, usize),
) -> Result<RawTensor> {
    with_dtype!(logits.dtype, |T| typed::<T>(
        logits, targets, weight, options, grad_out, nc
    ))
}

fn typed<T: CudaElement>(
    logits: &RawTensor,
    targets: &RawTensor,
    weight: Option<&RawTensor>,
    options: CrossEntropyOptions,
    grad_out: &RawTensor,
    (n, c): (usize, usize),
) -> Result<RawTensor> {
    let (gpu, _) = memory::gpu_of("cross_entropy_backward", logits)?;
    memory::same_gpu(gpu, &[targets, grad_out])?;
    if let Some(w) = weight {
        memory::same_gpu(gpu, &[w])?;
    }
    let x = crate::ops::copy::cuda::contiguous_or_self(logits)?;
    let t = crate::ops::copy::cuda::contiguous_or_self(targets)?;
    let go = crate::ops::copy::cuda::contiguous_or_self(grad_out)?;
    let w = weight
        .map(crate::ops::copy::cuda::contiguous_or_self)
        .transpose()?;
    let ptr = |r: &RawTensor| -> Result<u64> {
        let (_, s) = memory::gpu_of("cross_entropy_backward", r)?;
        Ok(memory::element_ptr(r, s))
    };
    let out = memory::alloc::<T>(gpu, n * c)?;
    if n * c > 0 {
        let (px, pt, pgo) = (ptr(&x)?, ptr(&t)?, ptr(&go)?);
        let pw = match &w {
            Some(w) => ptr(w)?,
            None => 0,
        };
        let (rows, classes, ignore, has_weight) =
            (n as u64, c as u64, options.ignore_index, w.is_some() as u32);
        let mode: u32 = match options.reduction {
            Reduction::Mean => 0,
            Reduction::Sum => 1,
            Reduction::None => 2,
        };
        let total = memory::alloc::<T>(gpu, 1)?;
        let ptotal = slice_ptr(&total);
        if mode == 0 {
            let f = kernels::function(
                gpu,
                &crate::ops::kernels::LOSS,
                &format!("cross_entropy_total_weight_{}", T::SUFFIX),
            )?;
            let cfg = LaunchConfig {
                grid_dim: (1, 1, 1),
                block_dim: (launch::block_for(n, 1024), 1, 1),
                shared_mem_bytes: 0,
            };
            let mut b = gpu.stream.launch_builder(f);
            b.arg(&ptotal)
                .arg(&pt)
                .arg(&pw)
                .arg(&rows)
                .arg(&classes)
                .arg(&ignore)
                .arg(&has_weight);
            // SAFETY: `cross_entropy_total_weight_<T>(T* total, const i64* target, const T* weight,
            // u64 n, u64 c, i64 ignore_index, u32 has_weight)` matches; `target` holds n i64,
            // `weight` c values (read only at targets checked to be in [0, c)), `total` one; one
            // block of a multiple of 32 threads.
            unsafe { b.launch(cfg) }
                .map_err(|e| gpu.error("cuLaunchKernel(cross_entropy_total_weight)", e))?;
        }
        let f = kernels::function(
            gpu,
            &crate::ops::kernels::LOSS,
            &format!("cross_entropy_backward_{}", T::SUFFIX),
        )?;
        let cfg = launch::per_row(gpu, n, c, 256);
        let po = slice_ptr(&out);
        let mut b = gpu.stream.launch_builder(f);
        b.arg(&po)
            .arg(&px)
            .arg(&pt)
            .arg(&pw)
            .arg(&pgo)
            .arg(&ptotal)
            .arg(&rows)
            .arg(&classes)
            .arg(&ignore)
            .arg(&has_weight)
            .arg(&mode);
        // SAFETY: `cross_entropy_backward_<T>(T* out, const T* x, const i64* target, const T*
        // weight, const T* grad_out, const T* total, u64 n, u64 c, i64 ignore_index, u32
        // has_weight, u32 mode)` matches; `x` and `out` are contiguous n x c, `target` n i64,
        // `grad_out` holds n values for mode 2 (`Reduction::None`) and one otherwise (checked by
        // the caller), `total` is read only in mode 0 after the kernel above wrote it (same
        // stream); `weight` is read only at targets checked to be in [0, c); blocks are a
        // multiple of 32 threads.
        unsafe { b.launch(cfg) }
            .map_err(|e| gpu.error("cuLaunchKernel(cross_entropy_backward)", e))?;
        drop(total);
    }
    Ok(memory::tensor(out, logits.layout.shape, gpu.ordinal))
}
