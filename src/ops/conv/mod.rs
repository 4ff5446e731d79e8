//! Convolutions and pooling over `[planes, H, W]` images: the unfolding of a convolution's
//! input into columns (`im2col`, whose columns a matrix product then weighs) and its adjoint
//! (`col2im`, the input's gradient), and the pooling windows (max, average, adaptive average)
//! with their backward passes.
//!
//! Every kernel here is a gather (one output element per work item, no atomics), so the CPU
//! and the GPU sum in the same order.

pub(super) mod cpu;
pub(super) mod cuda;

use crate::core::error::Result;
use crate::core::layout::Dims;
use crate::core::raw::RawTensor;

/// The geometry of a 2-D window over an image of `[c, h, w]` per item: kernel `kh x kw`,
/// strides, paddings, dilations, and the output's `oh x ow`. `mode` is what the pooling kernels
/// compute (the convolution's unfolding ignores it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Window {
    pub(crate) c: usize,
    pub(crate) h: usize,
    pub(crate) w: usize,
    pub(crate) kh: usize,
    pub(crate) kw: usize,
    pub(crate) sh: usize,
    pub(crate) sw: usize,
    pub(crate) ph: usize,
    pub(crate) pw: usize,
    pub(crate) dh: usize,
    pub(crate) dw: usize,
    pub(crate) oh: usize,
    pub(crate) ow: usize,
    pub(crate) mode: PoolMode,
}

/// What a pooling window computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PoolMode {
    /// The maximum (NaN wins), with its flat index in the plane.
    Max,
    /// The mean, over the padded window (`count_include_pad`) or its part inside the image.
    Avg { count_include_pad: bool },
    /// PyTorch's adaptive windows: `[floor(i h / oh), ceil((i + 1) h / oh))`.
    Adaptive,
}

impl PoolMode {
    /// The kernels' code of the mode (`kernels/conv.cu`).
    pub(crate) fn code(self) -> (u64, u64) {
        match self {
            PoolMode::Max => (0, 0),
            PoolMode::Avg { count_include_pad } => (1, u64::from(count_include_pad)),
            PoolMode::Adaptive => (2, 0),
        }
    }
}

impl Window {
    /// Rows of the unfolded input: `c * kh * kw`.
    pub(crate) fn rows(&self) -> usize {
        self.c * self.kh * self.kw
    }

    /// Columns of the unfolded input: `oh * ow`.
    pub(crate) fn cols(&self) -> usize {
        self.oh * self.ow
    }
}

fn shape(dims: &[usize]) -> Result<Dims> {
    Dims::shape(dims)
}

/// `x` (`[n, c, h, w]`) unfolded to `[n, c * kh * kw, oh * ow]`, zeros where a window reaches
/// into the padding.
pub(crate) fn im2col(x: &RawTensor, g: &Window) -> Result<RawTensor> {
    let x = crate::ops::copy::contiguous(x)?;
    let n = x.shape()[0];
    let out = shape(&[n, g.rows(), g.cols()])?;
    dispatch!([&x], |be| be.im2col(&x, g, out))
}

/// The adjoint of [`im2col`]: `col` (`[n, c * kh * kw, oh * ow]`) summed back onto
/// `[n, c, h, w]`.
pub(crate) fn col2im(col: &RawTensor, g: &Window) -> Result<RawTensor> {
    let col = crate::ops::copy::contiguous(col)?;
    let n = col.shape()[0];
    let out = shape(&[n, g.c, g.h, g.w])?;
    dispatch!([&col], |be| be.col2im(&col, g, out))
}

/// Pools `x` (`[planes, h, w]`) to `[planes, oh, ow]`; for [`PoolMode::Max`] also the flat
/// index (in its plane) of each maximum, an `i64` tensor of the same shape.
pub(crate) fn pool2d(x: &RawTensor, g: &Window) -> Result<(RawTensor, Option<RawTensor>)> {
    let x = crate::ops::copy::contiguous(x)?;
    let planes = x.shape()[0];
    let out = shape(&[planes, g.oh, g.ow])?;
    dispatch!([&x], |be| be.pool2d(&x, g, out))
}

/// The gradient of [`pool2d`]: `gy` (`[planes, oh, ow]`) sent back to `[planes, h, w]` (to
/// each maximum's index, or spread over each window).
pub(crate) fn pool2d_backward(
    gy: &RawTensor,
    indices: Option<&RawTensor>,
    g: &Window,
) -> Result<RawTensor> {
    let gy = crate::ops::copy::contiguous(gy)?;
    let indices = indices.map(crate::ops::copy::contiguous).transpose()?;
    let planes = gy.shape()[0];
    let out = shape(&[planes, g.h, g.w])?;
    dispatch!([&gy], |be| be.pool2d_backward(
        &gy,
        indices.as_ref(),
        g,
        out
    ))
}

/// The kernel entries of this family, one impl per backend: [`CpuBackend`](crate::ops::backend::CpuBackend)
/// in `cpu.rs`, [`CudaBackend`](crate::ops::backend::CudaBackend) in `cuda.rs`. The operands are
/// contiguous, on that backend's device (`dispatch!` checked it), of a floating-point type, and
/// the functions above planned their shapes.
pub(crate) trait ConvKernel {
    fn im2col(self, x: &RawTensor, g: &Window, out: Dims) -> Result<RawTensor>;
    fn col2im(self, col: &RawTensor, g: &Window, out: Dims) -> Result<RawTensor>;
    fn pool2d(self, x: &RawTensor, g: &Window, out: Dims)
        -> Result<(RawTensor, Option<RawTensor>)>;
    fn pool2d_backward(
        self,
        gy: &RawTensor,
        indices: Option<&RawTensor>,
        g: &Window,
        out: Dims,
    ) -> Result<RawTensor>;
}
