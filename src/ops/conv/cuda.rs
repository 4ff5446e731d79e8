//! CUDA side of convolutions and pooling (`kernels/conv.cu`): gathers over contiguous
//! images, one thread per output element, described by one `Window` argument.

use super::Window;
use crate::backend::cuda::context::GpuContext;
use crate::backend::cuda::kernels::KernelFile;
use crate::backend::cuda::launch::{self, Kernel};
use crate::backend::cuda::memory;
use crate::core::cuda_storage::{slice_ptr, suffix};
use crate::core::error::Result;
use crate::core::layout::Dims;
use crate::core::raw::RawTensor;
use crate::ops::kernels::{typed, FLOAT_TYPES};
use cudarc::driver::DeviceRepr;

/// `kernels/conv.cu`: `im2col_<T>`, `col2im_<T>`, `pool2d_<T>`, `pool2d_backward_<T>`.
pub(crate) static KERNELS: KernelFile = KernelFile {
    file: "conv.cu",
    source: include_str!("../../../kernels/conv.cu"),
    names: || {
        let mut n = Vec::new();
        typed(&mut n, "im2col", &FLOAT_TYPES);
        typed(&mut n, "col2im", &FLOAT_TYPES);
        typed(&mut n, "pool2d", &FLOAT_TYPES);
        typed(&mut n, "pool2d_backward", &FLOAT_TYPES);
        n
    },
};

/// `Window` of `kernels/conv.cu`.
#[repr(C)]
#[derive(Clone, Copy)]
struct WindowArgs {
    c: u64,
    h: u64,
    w: u64,
    kh: u64,
    kw: u64,
    sh: u64,
    sw: u64,
    ph: u64,
    pw: u64,
    dh: u64,
    dw: u64,
    oh: u64,
    ow: u64,
    mode: u64,
    include_pad: u64,
}

// SAFETY: `#[repr(C)]` with only `u64` fields, laid out as `Window` in `kernels/conv.cu`.
unsafe impl DeviceRepr for WindowArgs {}

fn args(g: &Window) -> WindowArgs {
    let (mode, include_pad) = g.mode.code();
    let u = |v: usize| v as u64;
    WindowArgs {
        c: u(g.c),
        h: u(g.h),
        w: u(g.w),
        kh: u(g.kh),
        kw: u(g.kw),
        sh: u(g.sh),
        sw: u(g.sw),
        ph: u(g.ph),
        pw: u(g.pw),
        dh: u(g.dh),
        dw: u(g.dw),
        oh: u(g.oh),
        ow: u(g.ow),
        mode,
        include_pad,
    }
}

/// Launches `<kernel>_<T>` over the `out` elements of a new tensor of `shape`, `inputs` after it.
fn gather<const P: usize>(
    gpu: &'static GpuContext,
    kernel: &str,
    like: &RawTensor,
    inputs: [u64; P],
    g: &Window,
    shape: Dims,
) -> Result<RawTensor> {
    let n: usize = shape.iter().product();
    let out = memory::alloc_dtype(gpu, like.dtype, n)?;
    let name = format!("{kernel}_{}", suffix(like.dtype));
    let mut ptrs = [0u64; 3];
    ptrs[0] = out.device_ptr();
    ptrs[1..=P].copy_from_slice(&inputs);
    let a = args(g);
    // im2col / col2im_<T>(T* out, const T* in, Window A, u64 n), pool2d_backward_<T>(T* gx,
    // const T* gy, const i64* idx, Window A, u64 n): the inputs are contiguous buffers of the
    // shapes `A` describes (the caller planned them), `out` holds the `n` elements; the index
    // pointer is read only in the max mode, where it holds the forward's `[planes, oh, ow]`.
    if P == 1 {
        launch::indexed(
            gpu,
            Kernel::new(&KERNELS, &name, "cuLaunchKernel(conv)"),
            [ptrs[0], ptrs[1]],
            &a,
            n,
        )?;
    } else {
        launch::indexed(
            gpu,
            Kernel::new(&KERNELS, &name, "cuLaunchKernel(conv)"),
            [ptrs[0], ptrs[1], ptrs[2]],
            &a,
            n,
        )?;
    }
    Ok(memory::tensor_from_storage(out, shape, gpu.ordinal))
}

impl super::ConvKernel for crate::ops::backend::CudaBackend {
    fn im2col(self, x: &RawTensor, g: &Window, out: Dims) -> Result<RawTensor> {
        gather(self.0, "im2col", x, [memory::ptr(x)?], g, out)
    }

    fn col2im(self, col: &RawTensor, g: &Window, out: Dims) -> Result<RawTensor> {
        gather(self.0, "col2im", col, [memory::ptr(col)?], g, out)
    }

    fn pool2d(
        self,
        x: &RawTensor,
        g: &Window,
        out: Dims,
    ) -> Result<(RawTensor, Option<RawTensor>)> {
        let gpu = self.0;
        let n: usize = out.iter().product();
        let values = memory::alloc_dtype(gpu, x.dtype, n)?;
        let max = g.mode == super::PoolMode::Max;
        let indices = if max {
            Some(memory::alloc::<i64>(gpu, n)?)
        } else {
            None
        };
        let name = format!("pool2d_{}", suffix(x.dtype));
        // pool2d_<T>(T* out, i64* idx, const T* x, Window A, u64 n): `x` is a contiguous
        // `[planes, h, w]`, `out` (and `idx`, written only in the max mode, null otherwise)
        // hold the `n = planes * oh * ow` outputs.
        launch::indexed(
            gpu,
            Kernel::new(&KERNELS, &name, "cuLaunchKernel(pool2d)"),
            [
                values.device_ptr(),
                indices.as_ref().map_or(0, slice_ptr),
                memory::ptr(x)?,
            ],
            &args(g),
            n,
        )?;
        Ok((
            memory::tensor_from_storage(values, out, gpu.ordinal),
            indices.map(|i| memory::tensor(i, out, gpu.ordinal)),
        ))
    }

    fn pool2d_backward(
        self,
        gy: &RawTensor,
        indices: Option<&RawTensor>,
        g: &Window,
        out: Dims,
    ) -> Result<RawTensor> {
        let idx = match indices {
            Some(i) => memory::ptr(i)?,
            None => 0,
        };
        gather(
            self.0,
            "pool2d_backward",
            gy,
            [memory::ptr(gy)?, idx],
            g,
            out,
        )
    }
}
