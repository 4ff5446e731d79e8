//! CUDA side of creation: fill, range and random kernels (`kernels/creation.cu`). The values are
//! written on the device; nothing passes through the host. Random values use the same
//! counter-based hash as the CPU, so one seed gives the same numbers on every device.

use super::Fill;
use crate::backend::cuda::context::GpuContext;
use crate::backend::cuda::kernels::KernelFile;
use crate::backend::cuda::launch::{self, Kernel};
use crate::backend::cuda::memory;
use crate::core::cuda_storage::{slice_ptr, with_dtype, CudaElement};
use crate::core::error::Result;
use crate::core::layout::Dims;
use crate::core::raw::RawTensor;
use crate::core::DType;
use crate::ops::kernels::{typed, ALL_TYPES};
use cudarc::driver::CudaSlice;

/// `kernels/creation.cu`: `fill_<T>`, `range_<T>`, `uniform_<T>`, `normal_<T>`, and
/// `set_rng_state` (a CUDA graph's random state, written before each replay).
pub(crate) static KERNELS: KernelFile = KernelFile {
    file: "creation.cu",
    source: include_str!("../../../kernels/creation.cu"),
    names: || {
        let mut n = Vec::new();
        for base in ["fill", "range", "uniform", "normal"] {
            typed(&mut n, base, &ALL_TYPES);
        }
        n.push("set_rng_state".into());
        n
    },
};

pub(crate) fn create(
    gpu: &'static GpuContext,
    shape: Dims,
    dtype: DType,
    fill: Fill,
) -> Result<RawTensor> {
    with_dtype!(dtype, "fill_", |T| create_typed::<T>(gpu, shape, fill))
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
    let ptr = slice_ptr(&out);
    let context = "cuLaunchKernel(creation)";
    match fill {
        Fill::Constant(v) => {
            let name = format!("fill_{}", T::SUFFIX);
            // fill_<T>(T* out, u64 n, T value), four elements per thread.
            let kernel = Kernel::new(&KERNELS, &name, context);
            launch::flat(gpu, kernel, [ptr], n, (T::from_scalar(v),), 4)?;
        }
        Fill::Range { start, step } => {
            let name = format!("range_{}", T::SUFFIX);
            // range_<T>(T* out, u64 n, double start, double step)
            let kernel = Kernel::new(&KERNELS, &name, context);
            launch::flat(gpu, kernel, [ptr], n, (start, step), 1)?;
        }
        Fill::Uniform(draw) | Fill::Normal(draw) => {
            let base = if matches!(fill, Fill::Uniform(_)) {
                "uniform"
            } else {
                "normal"
            };
            let name = format!("{base}_{}", T::SUFFIX);
            // uniform_<T> / normal_<T>(T* out, u64 n, u64 seed, u64 offset, const u64* state):
            // `state` 0, or the address of a graph's `[seed, offset]`, read when the kernel runs.
            let kernel = Kernel::new(&KERNELS, &name, context);
            launch::flat(
                gpu,
                kernel,
                [ptr],
                n,
                (draw.seed, draw.offset, draw.state),
                1,
            )?;
        }
    }
    Ok(memory::tensor(out, shape, gpu.ordinal))
}

impl super::CreationKernel for crate::ops::backend::CudaBackend {
    #[inline(always)]
    fn create(self, shape: Dims, dtype: DType, fill: Fill) -> Result<RawTensor> {
        create(self.0, shape, dtype, fill)
    }
}

/// Queues the write of `[seed, offset]` into the two `u64` at `state` on `gpu`'s stream: the
/// random state a captured graph's draws read (see [`Draw`](crate::random::Draw)), written
/// before each replay as PyTorch's graph replay fills its `seed_extragraph` and
/// `offset_extragraph`.
///
/// `state` is the address of a live buffer of two `u64` on `gpu`.
pub(crate) fn set_rng_state(
    gpu: &'static GpuContext,
    state: u64,
    seed: u64,
    offset: u64,
) -> Result<()> {
    let kernel = Kernel::new(&KERNELS, "set_rng_state", "cuLaunchKernel(set_rng_state)");
    // set_rng_state(u64* state, u64 n, u64 seed, u64 offset), n = 1.
    launch::flat(gpu, kernel, [state], 1, (seed, offset), 1)
}
