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
    let x = x.contiguous()?;
    let n = x.shape()[0];
    let out = shape(&[n, g.rows(), g.cols()])?;
    dispatch!([&x], |be| be.im2col(&x, g, out))
}

/// The adjoint of [`im2col`]: `col` (`[n, c * kh * kw, oh * ow]`) summed back onto
/// `[n, c, h, w]`.
pub(crate) fn col2im(col: &RawTensor, g: &Window) -> Result<RawTensor> {
    let col = col.contiguous()?;
    let n = col.shape()[0];
    let out = shape(&[n, g.c, g.h, g.w])?;
    dispatch!([&col], |be| be.col2im(&col, g, out))
}

/// Pools `x` (`[planes, h, w]`) to `[planes, oh, ow]`; for [`PoolMode::Max`] also the flat
/// index (in its plane) of each maximum, an `i64` tensor of the same shape.
pub(crate) fn pool2d(x: &RawTensor, g: &Window) -> Result<(RawTensor, Option<RawTensor>)> {
    let x = x.contiguous()?;
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
    let gy = gy.contiguous()?;
    let indices = indices.map(RawTensor::contiguous).transpose()?;
    let planes = gy.shape()[0];
    let out = shape(&[planes, g.h, g.w])?;
    dispatch!([&gy], |be| be.pool2d_backward(
        &gy,
        indices.as_ref(),
        g,
        out
    ))
}

/// `x4` (`[n, c, h, w]`) convolved with `w4` (`[out_c, c / groups, kh, kw]`), no bias:
/// `[n, out_c, oh, ow]`, `y[n, g] = W[g] @ im2col(x[n])[g]` for each group `g`.
pub(crate) fn conv2d(
    x4: &RawTensor,
    w4: &RawTensor,
    g: &Window,
    groups: usize,
) -> Result<RawTensor> {
    let (x, w) = (x4.contiguous()?, w4.contiguous()?);
    dispatch!([&x, &w], |be| be.conv2d(&x, &w, g, groups))
}

/// The gradient of [`conv2d`] with respect to its input: `gy` (`[n, out_c, oh, ow]`) weighed
/// back through `w4` and folded onto `[n, c, h, w]`, `col2im(W[g]^T @ gy[n, g])`.
pub(crate) fn conv2d_input_grad(
    gy: &RawTensor,
    w4: &RawTensor,
    g: &Window,
    groups: usize,
) -> Result<RawTensor> {
    let (gy, w) = (gy.contiguous()?, w4.contiguous()?);
    dispatch!([&gy, &w], |be| be.conv2d_input_grad(&gy, &w, g, groups))
}

/// Each image's term of the gradient of [`conv2d`] with respect to its weight:
/// `[n, groups, out_c / groups, c / groups * kh * kw]`, `gy[n, g] @ im2col(x[n])[g]^T` (the
/// caller sums them over `n`).
pub(crate) fn conv2d_weight_grads(
    gy: &RawTensor,
    x4: &RawTensor,
    g: &Window,
    groups: usize,
) -> Result<RawTensor> {
    let (gy, x) = (gy.contiguous()?, x4.contiguous()?);
    dispatch!([&gy, &x], |be| be.conv2d_weight_grads(&gy, &x, g, groups))
}

/// The three products of a convolution composed of this family's `im2col`/`col2im` and the
/// matmul family's batched product over the whole batch: every backend's way unless it has
/// its own (the CPU's, for images whose columns fit in its caches, in `cpu.rs`).
pub(crate) mod composed {
    use super::{col2im, im2col, Window};
    use crate::core::error::Result;
    use crate::core::raw::RawTensor;
    use crate::ops::matmul::matmul;
    use crate::ops::shape::{reshape, transpose};

    fn reshaped(t: &RawTensor, dims: &[usize]) -> Result<RawTensor> {
        let dims: Vec<isize> = dims.iter().map(|&d| d as isize).collect();
        reshape(&t.contiguous()?, &dims)
    }

    /// `[n, groups, c / groups * kh * kw, oh * ow]`.
    fn grouped_cols(x4: &RawTensor, g: &Window, groups: usize) -> Result<RawTensor> {
        let n = x4.shape()[0];
        reshaped(&im2col(x4, g)?, &[n, groups, g.rows() / groups, g.cols()])
    }

    /// [`super::conv2d`].
    pub(crate) fn conv2d(
        x4: &RawTensor,
        w4: &RawTensor,
        g: &Window,
        groups: usize,
    ) -> Result<RawTensor> {
        let (n, out_c) = (x4.shape()[0], w4.shape()[0]);
        let cols = grouped_cols(x4, g, groups)?;
        let wg = reshaped(w4, &[groups, out_c / groups, g.rows() / groups])?;
        reshaped(&matmul(&wg, &cols)?, &[n, out_c, g.oh, g.ow])
    }

    /// [`super::conv2d_input_grad`].
    pub(crate) fn input_grad(
        gy: &RawTensor,
        w4: &RawTensor,
        g: &Window,
        groups: usize,
    ) -> Result<RawTensor> {
        let (n, out_c) = (gy.shape()[0], w4.shape()[0]);
        let og = out_c / groups;
        let gyg = reshaped(gy, &[n, groups, og, g.cols()])?;
        let wt = transpose(&reshaped(w4, &[groups, og, g.rows() / groups])?, 1, 2)?;
        let gcol = reshaped(&matmul(&wt, &gyg)?, &[n, g.rows(), g.cols()])?;
        col2im(&gcol, g)
    }

    /// [`super::conv2d_weight_grads`]: one product per image and group (the columns
    /// transposed as a view, no copy). One product over `n * oh * ow` would need both operands
    /// permuted and copied first, and a GEMM of `og x k` with a long inner dimension keeps one
    /// thread busy.
    pub(crate) fn weight_grads(
        gy: &RawTensor,
        x4: &RawTensor,
        g: &Window,
        groups: usize,
    ) -> Result<RawTensor> {
        let (n, out_c) = (gy.shape()[0], gy.shape()[1]);
        let gyg = reshaped(gy, &[n, groups, out_c / groups, g.cols()])?;
        let cols_t = transpose(&grouped_cols(x4, g, groups)?, 2, 3)?;
        matmul(&gyg, &cols_t)
    }
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
    /// [`conv2d`] (operands contiguous).
    fn conv2d(self, x4: &RawTensor, w4: &RawTensor, g: &Window, groups: usize) -> Result<RawTensor>
    where
        Self: Sized,
    {
        composed::conv2d(x4, w4, g, groups)
    }
    /// [`conv2d_input_grad`] (operands contiguous).
    fn conv2d_input_grad(
        self,
        gy: &RawTensor,
        w4: &RawTensor,
        g: &Window,
        groups: usize,
    ) -> Result<RawTensor>
    where
        Self: Sized,
    {
        composed::input_grad(gy, w4, g, groups)
    }
    /// [`conv2d_weight_grads`] (operands contiguous).
    fn conv2d_weight_grads(
        self,
        gy: &RawTensor,
        x4: &RawTensor,
        g: &Window,
        groups: usize,
    ) -> Result<RawTensor>
    where
        Self: Sized,
    {
        composed::weight_grads(gy, x4, g, groups)
    }
}
