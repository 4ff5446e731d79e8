//! CUDA side of the fused optimizer updates (`kernels/optim.cu`): one element-wise kernel per
//! step, in place on the parameter and its state. State buffers are created as zeros on the
//! parameter's device on the first step. A parameter or state buffer whose storage is shared
//! (or is a view) is first replaced by a private contiguous copy, so other handles never see
//! the update, as on the CPU.

use super::{AdamScalars, AdamUpdate, OpMath, SgdUpdate};
use crate::backend::cuda::context::GpuContext;
use crate::backend::cuda::kernels::KernelFile;
use crate::backend::cuda::launch::{self, Kernel};
use crate::backend::cuda::memory;
use crate::core::cuda_storage::CudaElement;
use crate::core::error::{Error, Result};
use crate::core::raw::RawTensor;
use crate::core::{DType, Element};
use crate::ops::copy::cuda::{contiguous_or_self, make_unique};
use crate::ops::kernels::{typed, FLOAT_TYPES};
use cudarc::driver::DeviceRepr;

/// `kernels/optim.cu`: `sgd_<T>` and `adam_<T>`.
pub(crate) static KERNELS: KernelFile = KernelFile {
    file: "optim.cu",
    source: include_str!("../../../kernels/optim.cu"),
    names: || {
        let mut n = Vec::new();
        typed(&mut n, "sgd", &FLOAT_TYPES);
        typed(&mut n, "adam", &FLOAT_TYPES);
        typed(&mut n, "adam_dev", &FLOAT_TYPES);
        n
    },
};

/// Zeros shaped like `like`, on `gpu`.
fn zeros_like<T: CudaElement>(gpu: &GpuContext, like: &RawTensor) -> Result<RawTensor> {
    Ok(memory::tensor(
        memory::alloc_zeros::<T>(gpu, like.numel())?,
        like.layout.shape,
        gpu.ordinal,
    ))
}

/// The kernel's own guard: every buffer it indexes holds `n` elements of `T`, contiguous, on
/// `gpu` (`check_sgd`/`check_adam` rule out anything else before a step starts).
fn fits<T: CudaElement>(gpu: &GpuContext, n: usize, buffers: &[&RawTensor]) -> Result<()> {
    for b in buffers {
        if b.numel() != n || b.dtype != T::DTYPE || !b.layout.is_contiguous() {
            return Err(Error::Shape(format!(
                "optimizer kernel: a buffer of shape {:?} ({}) for a parameter of {n} elements of {}",
                b.shape(),
                b.dtype,
                T::DTYPE
            )));
        }
    }
    memory::same_gpu(gpu, buffers)
}

/// The device address of the skip flag, or 0 (null: never skip). The flag is one bool on
/// `gpu` (checked in `ops::optim`; this is the kernels' own guard).
fn skip_ptr(gpu: &GpuContext, skip: Option<&RawTensor>) -> Result<u64> {
    let Some(s) = skip else { return Ok(0) };
    if s.numel() != 1 || s.dtype != DType::Bool {
        return Err(Error::Shape(format!(
            "optimizer kernel: a skip flag of shape {:?} ({})",
            s.shape(),
            s.dtype
        )));
    }
    memory::same_gpu(gpu, &[s])?;
    memory::ptr(s)
}

pub(crate) fn sgd(
    gpu: &'static GpuContext,
    param: &mut RawTensor,
    grad: &RawTensor,
    buffer: &mut Option<RawTensor>,
    u: &SgdUpdate,
    skip: Option<&RawTensor>,
) -> Result<()> {
    let skip = skip_ptr(gpu, skip)?;
    match param.dtype {
        DType::F32 => sgd_typed::<f32>(gpu, param, grad, buffer, u, skip),
        DType::F64 => sgd_typed::<f64>(gpu, param, grad, buffer, u, skip),
        DType::F16 => sgd_typed::<half::f16>(gpu, param, grad, buffer, u, skip),
        DType::BF16 => sgd_typed::<half::bf16>(gpu, param, grad, buffer, u, skip),
        _ => unreachable!("checked in sgd"),
    }
}

fn sgd_typed<T: CudaElement + OpMath<Acc: DeviceRepr>>(
    gpu: &'static GpuContext,
    param: &mut RawTensor,
    grad: &RawTensor,
    buffer: &mut Option<RawTensor>,
    u: &SgdUpdate,
    skip: u64,
) -> Result<()> {
    let g = contiguous_or_self(gpu, grad)?;
    make_unique(gpu, param)?;
    let has_momentum = u.momentum != 0.0;
    let first = buffer.is_none();
    if has_momentum {
        if buffer.is_none() {
            *buffer = Some(zeros_like::<T>(gpu, param)?);
        }
        make_unique(gpu, buffer.as_mut().expect("created above"))?;
    }
    let n = param.numel();
    match (has_momentum, buffer.as_ref()) {
        (true, Some(b)) => fits::<T>(gpu, n, &[&g, b])?,
        _ => fits::<T>(gpu, n, &[&g])?,
    }
    if n == 0 {
        return Ok(());
    }
    let name = format!("sgd_{}", T::SUFFIX);
    let pb = match (has_momentum, buffer.as_ref()) {
        (true, Some(b)) => memory::ptr(b)?,
        _ => 0,
    };
    // sgd_<T>(T* p, const T* g, T* b, const bool* skip, u64 n, A lr, A wd, A momentum, A keep,
    // u32 nesterov, u32 first, u32 has_momentum), A the compute type (`OpMath::Acc`: f32 for
    // f16/bf16, the kernel's `Acc<T>::type`): `p` is a contiguous buffer of n elements owned
    // by `param` alone (made unique above), `g` a contiguous n-element gradient, `b` the
    // n-element momentum buffer (read and written only when `has_momentum`), `skip` null or
    // one bool on this GPU.
    launch::flat(
        gpu,
        Kernel::new(&KERNELS, &name, "cuLaunchKernel(sgd)"),
        [memory::ptr(param)?, memory::ptr(&g)?, pb, skip],
        n,
        (
            T::Acc::from_f64(u.lr),
            T::Acc::from_f64(u.weight_decay),
            T::Acc::from_f64(u.momentum),
            T::Acc::from_f64(1.0 - u.dampening),
            u.nesterov as u32,
            first as u32,
            has_momentum as u32,
        ),
        1,
    )
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn adam(
    gpu: &'static GpuContext,
    param: &mut RawTensor,
    grad: &RawTensor,
    m: &mut Option<RawTensor>,
    v: &mut Option<RawTensor>,
    u: &AdamUpdate,
    c: Option<&RawTensor>,
    skip: Option<&RawTensor>,
) -> Result<()> {
    let s = skip_ptr(gpu, skip)?;
    match param.dtype {
        DType::F32 => adam_typed::<f32>(gpu, param, grad, (m, v), u, c, s),
        DType::F64 => adam_typed::<f64>(gpu, param, grad, (m, v), u, c, s),
        DType::F16 => adam_typed::<half::f16>(gpu, param, grad, (m, v), u, c, s),
        DType::BF16 => adam_typed::<half::bf16>(gpu, param, grad, (m, v), u, c, s),
        _ => unreachable!("checked in adam"),
    }
}

fn adam_typed<T: CudaElement + OpMath<Acc: DeviceRepr>>(
    gpu: &'static GpuContext,
    param: &mut RawTensor,
    grad: &RawTensor,
    (exp_avg, exp_avg_sq): (&mut Option<RawTensor>, &mut Option<RawTensor>),
    u: &AdamUpdate,
    corrections: Option<&RawTensor>,
    skip: u64,
) -> Result<()> {
    let g = contiguous_or_self(gpu, grad)?;
    make_unique(gpu, param)?;
    for state in [&mut *exp_avg, &mut *exp_avg_sq] {
        if state.is_none() {
            *state = Some(zeros_like::<T>(gpu, param)?);
        }
        make_unique(gpu, state.as_mut().expect("created above"))?;
    }
    let n = param.numel();
    if let (Some(m), Some(v)) = (exp_avg.as_ref(), exp_avg_sq.as_ref()) {
        fits::<T>(gpu, n, &[&g, m, v])?;
    }
    if n == 0 {
        return Ok(());
    }
    // The same scalars as the CPU kernel, from one place, in the compute type.
    let AdamScalars {
        b1,
        b2,
        one_b1,
        one_b2,
        eps,
        l2,
        decay,
        step_size,
        inv_sqrt_bc2,
    } = u.scalars::<T::Acc>();
    let pm = memory::ptr(exp_avg.as_ref().expect("created above"))?;
    let pv = memory::ptr(exp_avg_sq.as_ref().expect("created above"))?;
    if let Some(c) = corrections {
        // The bias corrections from device memory (checked in `ops::optim::adam`: two values
        // of the compute type on this device).
        let c = contiguous_or_self(gpu, c)?;
        memory::same_gpu(gpu, &[&c])?;
        // The kernel's own guard: it reads two values of A.
        if c.numel() != 2 || c.dtype != super::acc_dtype(T::DTYPE) {
            return Err(Error::Shape(format!(
                "adam: bias corrections of shape {:?} ({})",
                c.shape(),
                c.dtype
            )));
        }
        let name = format!("adam_dev_{}", T::SUFFIX);
        // adam_dev_<T>(T* p, const T* g, T* m, T* v, const bool* skip, const A* corr, u64 n,
        // A b1, A b2, A one_b1, A one_b2, A eps, A l2, A decay): as `adam_<T>` below, with
        // `corr` two contiguous values of A (step_size, inv_sqrt_bc2) that every thread reads.
        return launch::flat(
            gpu,
            Kernel::new(&KERNELS, &name, "cuLaunchKernel(adam_dev)"),
            [
                memory::ptr(param)?,
                memory::ptr(&g)?,
                pm,
                pv,
                skip,
                memory::ptr(&c)?,
            ],
            n,
            (b1, b2, one_b1, one_b2, eps, l2, decay),
            1,
        );
    }
    let name = format!("adam_{}", T::SUFFIX);
    // adam_<T>(T* p, const T* g, T* m, T* v, const bool* skip, u64 n, A b1, A b2, A one_b1,
    // A one_b2, A eps, A l2, A decay, A step_size, A inv_sqrt_bc2), A the compute type: `p`,
    // `m` and `v` are contiguous n-element buffers owned by this optimizer step alone (made
    // unique above), `g` a contiguous n-element gradient and `skip` null or one bool on this
    // GPU.
    launch::flat(
        gpu,
        Kernel::new(&KERNELS, &name, "cuLaunchKernel(adam)"),
        [memory::ptr(param)?, memory::ptr(&g)?, pm, pv, skip],
        n,
        (
            b1,
            b2,
            one_b1,
            one_b2,
            eps,
            l2,
            decay,
            step_size,
            inv_sqrt_bc2,
        ),
        1,
    )
}

impl super::OptimKernel for crate::ops::backend::CudaBackend {
    #[inline(always)]
    fn sgd(
        self,
        param: &mut RawTensor,
        grad: &RawTensor,
        buffer: &mut Option<RawTensor>,
        u: &SgdUpdate,
        skip: Option<&RawTensor>,
    ) -> Result<()> {
        sgd(self.0, param, grad, buffer, u, skip)
    }
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn adam(
        self,
        param: &mut RawTensor,
        grad: &RawTensor,
        m: &mut Option<RawTensor>,
        v: &mut Option<RawTensor>,
        u: &AdamUpdate,
        corrections: Option<&RawTensor>,
        skip: Option<&RawTensor>,
    ) -> Result<()> {
        adam(self.0, param, grad, m, v, u, corrections, skip)
    }
}
