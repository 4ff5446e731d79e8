//! CUDA side of creation: fill, range and random kernels (`kernels/creation.cu`). The values are
//! written on the device; nothing passes through the host. Random values use the same
//! counter-based hash as the CPU, so one seed gives the same numbers on every device.

use super::Fill;
use crate::backend::cuda::context::{self, GpuContext};
use crate::backend::cuda::kernels;
use crate::backend::cuda::{launch, memory};
use crate::core::cuda_storage::{slice_ptr, with_dtype, CudaElement};
use crate::core::error::Result;
use crate::core::layout::Dims;
use crate::core::raw::RawTensor;
use crate::core::DType;
use cudarc::driver::{CudaSlice, PushKernelArg};

pub(crate) fn create(shape: Dims, dtype: DType, ordinal: usize, fill: Fill) -> Result<RawTensor> {
    let gpu = context::get(ordinal)?;
    with_dtype!(dtype, |T| create_typed::<T>(gpu, shape, fill))
}

fn create_typed<T: CudaElement>(
    gpu: &'static GpuContext,
    shape: Dims,
    fill: Fill,
) -> Result<RawTensor> {
    let n: usize = shape.iter().product();
    // A zero constant (`0.0`, `-0.0`, `0`, `false`, as on the CPU) is a memset.
    if matches!(fill, Fill::Constant(s) if s.is_zero()) {
        return Ok(memory::tensor(
            memory::alloc_zeros::<T>(gpu, n)?,
            shape,
            gpu.ordinal,
        ));
    }
    let out: CudaSlice<T> = memory::alloc::<T>(gpu, n)?;
    if n > 0 {
        let ptr = slice_ptr(&out);
        let count = n as u64;
        let launch_err = |e| gpu.error("cuLaunchKernel(creation)", e);
        match fill {
            Fill::Constant(v) => {
                let f = kernels::function(
                    gpu,
                    &crate::ops::kernels::CREATION,
                    &format!("fill_{}", T::SUFFIX),
                )?;
                let value = T::from_scalar(v);
                let mut b = gpu.stream.launch_builder(f);
                b.arg(&ptr).arg(&count).arg(&value);
                // SAFETY: `fill_<T>(T* out, u64 n, T value)` matches; `out` holds `n` elements.
                unsafe { b.launch(launch::elementwise(gpu, n)) }.map_err(launch_err)?;
            }
            Fill::Range { start, step } => {
                let f = kernels::function(
                    gpu,
                    &crate::ops::kernels::CREATION,
                    &format!("range_{}", T::SUFFIX),
                )?;
                let mut b = gpu.stream.launch_builder(f);
                b.arg(&ptr).arg(&count).arg(&start).arg(&step);
                // SAFETY: `range_<T>(T* out, u64 n, double start, double step)` matches; `out`
                // holds `n` elements.
                unsafe { b.launch(launch::grid(gpu, n, 1)) }.map_err(launch_err)?;
            }
            Fill::Uniform { seed, offset } | Fill::Normal { seed, offset } => {
                let base = if matches!(fill, Fill::Uniform { .. }) {
                    "uniform"
                } else {
                    "normal"
                };
                let f = kernels::function(
                    gpu,
                    &crate::ops::kernels::CREATION,
                    &format!("{base}_{}", T::SUFFIX),
                )?;
                let mut b = gpu.stream.launch_builder(f);
                b.arg(&ptr).arg(&count).arg(&seed).arg(&offset);
                // SAFETY: `uniform_<T>` / `normal_<T>(T* out, u64 n, u64 seed, u64 offset)`
                // match; `out` holds `n` elements.
                unsafe { b.launch(launch::grid(gpu, n, 1)) }.map_err(launch_err)?;
            }
        }
    }
    Ok(memory::tensor(out, shape, gpu.ordinal))
}
