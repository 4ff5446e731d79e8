//! CUDA side of loss scaling (`kernels/amp.cu`): one in-place pass per gradient that also sets
//! the device flag, and a one-thread kernel for the scale schedule. Nothing waits for the GPU.

use super::ScaleSchedule;
use crate::backend::cuda::context::GpuContext;
use crate::backend::cuda::kernels::KernelFile;
use crate::backend::cuda::launch::{self, Kernel};
use crate::backend::cuda::memory;
use crate::core::cuda_storage::suffix;
use crate::core::error::Result;
use crate::core::raw::RawTensor;
use crate::ops::copy::cuda::make_unique;
use crate::ops::kernels::{typed, FLOAT_TYPES};

/// `kernels/amp.cu`: `amp_unscale_<T>` and `amp_update_scale`.
pub(crate) static KERNELS: KernelFile = KernelFile {
    file: "amp.cu",
    source: include_str!("../../../kernels/amp.cu"),
    names: || {
        let mut n = Vec::new();
        typed(&mut n, "amp_unscale", &FLOAT_TYPES);
        n.push("amp_update_scale".to_string());
        n
    },
};

pub(crate) fn unscale_(
    gpu: &'static GpuContext,
    grad: &mut RawTensor,
    inv_scale: &RawTensor,
    found_inf: &mut RawTensor,
) -> Result<()> {
    make_unique(gpu, grad)?;
    make_unique(gpu, found_inf)?;
    memory::same_gpu(gpu, &[&*grad, inv_scale, &*found_inf])?;
    let name = format!("amp_unscale_{}", suffix(grad.dtype));
    // amp_unscale_<T>(T* g, const float* inv_scale, bool* found_inf, u64 n): `g` is a
    // contiguous buffer of n elements owned by `grad` alone (made unique above), `inv_scale`
    // one f32 and `found_inf` one bool owned by this flag alone (both checked in
    // `ops::amp::unscale_`).
    launch::flat(
        gpu,
        Kernel::new(&KERNELS, &name, "cuLaunchKernel(amp_unscale)"),
        [
            memory::ptr(grad)?,
            memory::ptr(inv_scale)?,
            memory::ptr(found_inf)?,
        ],
        grad.numel(),
        (),
        4,
    )
}

pub(crate) fn update_scale_(
    gpu: &'static GpuContext,
    scale: &mut RawTensor,
    growth_tracker: &mut RawTensor,
    found_inf: &RawTensor,
    s: ScaleSchedule,
) -> Result<()> {
    make_unique(gpu, scale)?;
    make_unique(gpu, growth_tracker)?;
    memory::same_gpu(gpu, &[&*scale, &*growth_tracker, found_inf])?;
    // amp_update_scale(float* scale, i64* growth_tracker, const bool* found_inf, u64 n,
    // float growth_factor, float backoff_factor, i64 growth_interval), n = 1, one thread:
    // `scale` and `growth_tracker` are one value each owned by this scaler alone (made unique
    // above), `found_inf` one bool (all checked in `ops::amp::update_scale_`).
    launch::flat(
        gpu,
        Kernel::new(
            &KERNELS,
            "amp_update_scale",
            "cuLaunchKernel(amp_update_scale)",
        ),
        [
            memory::ptr(scale)?,
            memory::ptr(growth_tracker)?,
            memory::ptr(found_inf)?,
        ],
        1,
        (s.growth_factor, s.backoff_factor, s.growth_interval),
        1,
    )
}

impl super::AmpKernel for crate::ops::backend::CudaBackend {
    #[inline(always)]
    fn unscale_(
        self,
        grad: &mut RawTensor,
        inv_scale: &RawTensor,
        found_inf: &mut RawTensor,
    ) -> Result<()> {
        unscale_(self.0, grad, inv_scale, found_inf)
    }
    #[inline(always)]
    fn update_scale_(
        self,
        scale: &mut RawTensor,
        growth_tracker: &mut RawTensor,
        found_inf: &RawTensor,
        schedule: ScaleSchedule,
    ) -> Result<()> {
        update_scale_(self.0, scale, growth_tracker, found_inf, schedule)
    }
}
