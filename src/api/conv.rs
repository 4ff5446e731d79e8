//! Convolutions (`conv1d`, `conv2d`: PyTorch's `F.conv1d`/`F.conv2d`) and 2-D pooling
//! (`max_pool2d`, `avg_pool2d`, `adaptive_avg_pool2d`), each one recorded op with its backward
//! rule.
//!
//! A convolution unfolds its input into columns (`im2col`: `[n, c kh kw, oh ow]`) and weighs
//! them with a matrix product per image and group (`ops::conv::conv2d`; the CPU image by image
//! in its cache, a GPU with one batched product on cuBLAS): `y[n, g] = W[g] @ col[n, g]`. Its
//! backward: `dX = col2im(W^T @ dY)` (`conv2d_input_grad`), `dW = dY @ col^T` per image
//! (`conv2d_weight_grads`) summed over the batch, `db = dY` summed over `n, oh, ow`. A 1-D convolution is the 2-D one over `[n, c, 1, l]`.

use super::autocast;
use super::declare::declare_ops;
use super::kit;
use crate::core::error::{Error, Result};
use crate::core::raw::RawTensor;
use crate::graph::{record, In, Out};
use crate::ops;
use crate::ops::conv::{PoolMode, Window};
use crate::ops::{BinaryOp, ReduceOp};
use crate::tensor::{ArgumentOn, ElementIs};

/// A pair of sizes, `(height, width)`: a 2-D op's kernel size, stride, padding or dilation.
///
/// ```
/// let stride: devtype::Size2 = (2, 1);
/// assert_eq!(stride.0, 2);
/// ```
pub type Size2 = (usize, usize);

/// `[8, 3, 3, 3]`, as PyTorch prints sizes in its messages.
fn sizes(shape: &[usize]) -> String {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    format!("[{}]", dims.join(", "))
}

/// PyTorch's legacy type name (`torch.FloatTensor`, `torch.cuda.HalfTensor`), or, for a type
/// without one, its dispatch name (`CPUBFloat16Type`), as `Tensor::toString` prints them.
pub(crate) fn legacy_type(t: &RawTensor) -> String {
    let cpu = t.device.is_cpu();
    if t.dtype == crate::core::DType::BF16 {
        return format!("{}BFloat16Type", if cpu { "CPU" } else { "CUDA" });
    }
    let cuda = if cpu { "" } else { "cuda." };
    format!("torch.{cuda}{}Tensor", t.dtype.scalar_type_name())
}

/// PyTorch's check that a convolution's weight and bias have the input's type and device
/// (the dynamic front's device check; the typed front's types make it hold).
fn check_conv(x: In<'_>, weight: In<'_>, bias: Option<In<'_>>) -> Result<()> {
    let (x, w) = (x.value, weight.value);
    // On the CPU only a `float` input takes the MKLDNN path and its message; the others
    // meet the slow kernel's dtype check first.
    if x.device == w.device
        && x.dtype != w.dtype
        && x.device.is_cpu()
        && x.dtype != crate::core::DType::F32
    {
        return Err(Error::DTypeMismatch {
            expected: x.dtype,
            found: w.dtype,
        });
    }
    if x.dtype != w.dtype || x.device != w.device {
        return Err(Error::Shape(format!(
            "Input type ({}) and weight type ({}) should be the same or input should be a MKLDNN tensor and weight is a dense tensor",
            legacy_type(x),
            legacy_type(w)
        )));
    }
    if let Some(b) = bias.map(|b| b.value) {
        if b.device != x.device {
            return Err(Error::Shape(format!(
                "Input type ({}) and bias type ({}) should be the same",
                legacy_type(x),
                legacy_type(b)
            )));
        }
        if b.dtype != x.dtype {
            return Err(Error::Shape(format!(
                "Input type ({}) and bias type ({}) should be the same",
                x.dtype.type_meta_name(),
                b.dtype.type_meta_name()
            )));
        }
    }
    Ok(())
}

/// A convolution's options as PyTorch's `F.conv2d` takes them (`conv1d`'s with height 1).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ConvOptions {
    pub(crate) stride: Size2,
    pub(crate) padding: Size2,
    pub(crate) dilation: Size2,
    pub(crate) groups: usize,
}

/// The checked plan of one convolution, in 4-D (`[n, c, h, w]`, `[o, c / groups, kh, kw]`).
struct ConvPlan {
    x4: [usize; 4],
    w4: [usize; 4],
    window: Window,
}

/// PyTorch's checks of `F.conv1d` (`spatial == 1`) and `F.conv2d`, in its order, on the shapes
/// as given; the plan in 4-D.
fn plan_conv(
    x: &RawTensor,
    w: &RawTensor,
    bias: Option<&RawTensor>,
    o: ConvOptions,
    spatial: usize,
) -> Result<ConvPlan> {
    let name = if spatial == 1 { "conv1d" } else { "conv2d" };
    let (xs, ws) = (x.shape(), w.shape());
    if xs.len() != spatial + 1 && xs.len() != spatial + 2 {
        return Err(Error::Shape(format!(
            "Expected {}D (unbatched) or {}D (batched) input to {name}, but got input of size: {}",
            spatial + 1,
            spatial + 2,
            sizes(xs)
        )));
    }
    if !x.dtype.is_float() {
        return Err(Error::UnsupportedDType {
            op: name,
            dtype: x.dtype,
        });
    }
    if o.stride.0 == 0 || o.stride.1 == 0 {
        return Err(Error::Shape("non-positive stride is not supported".into()));
    }
    if o.dilation.0 == 0 || o.dilation.1 == 0 {
        return Err(Error::Shape(
            "non-positive dilation is not supported".into(),
        ));
    }
    if o.groups == 0 {
        return Err(Error::Shape("non-positive groups is not supported".into()));
    }
    if ws.len() < spatial + 2 {
        let strides: Vec<usize> = if spatial == 1 {
            vec![o.stride.1]
        } else {
            vec![o.stride.0, o.stride.1]
        };
        return Err(Error::Shape(format!(
            "expected stride to be a single integer value or a list of {} values to match the convolution dimensions, but got stride={}",
            ws.len().saturating_sub(2),
            sizes(&strides)
        )));
    }
    if ws.len() > spatial + 2 {
        return Err(Error::Shape(format!(
            "Expected {}-dimensional input for {}-dimensional weight {}, but got {}-dimensional input of size {} instead",
            ws.len(),
            ws.len(),
            sizes(ws),
            xs.len(),
            sizes(xs)
        )));
    }
    let batched = xs.len() == spatial + 2;
    let x_batched: Vec<usize> = if batched {
        xs.to_vec()
    } else {
        std::iter::once(1).chain(xs.iter().copied()).collect()
    };
    let groups = o.groups;
    let out_c = ws[0];
    if out_c < groups {
        return Err(Error::Shape(format!(
            "Given groups={groups}, expected weight to be at least {groups} at dimension 0, but got weight of size {} instead",
            sizes(ws)
        )));
    }
    if out_c % groups != 0 {
        return Err(Error::Shape(format!(
            "Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but got weight of size [{}] instead",
            sizes(ws)
        )));
    }
    let c = x_batched[1];
    if c != ws[1] * groups {
        return Err(Error::Shape(format!(
            "Given groups={groups}, weight of size {}, expected input{} to have {} channels, but got {c} channels instead",
            sizes(ws),
            sizes(&x_batched),
            ws[1] * groups
        )));
    }
    if let Some(b) = bias {
        if b.rank() != 1 || b.shape()[0] != out_c {
            return Err(Error::Shape(format!(
                "Given weight of size {}, expected bias to be 1-dimensional with {out_c} elements, but got bias of size {} instead",
                sizes(ws),
                sizes(b.shape())
            )));
        }
    }
    // In 4-D: a 1-D convolution runs over height 1.
    let (h, w_in, kh, kw) = if spatial == 1 {
        (1, x_batched[2], 1, ws[2])
    } else {
        (x_batched[2], x_batched[3], ws[2], ws[3])
    };
    let (ph, pw) = if spatial == 1 {
        (0, o.padding.1)
    } else {
        o.padding
    };
    let (sh, sw) = if spatial == 1 {
        (1, o.stride.1)
    } else {
        o.stride
    };
    let (dh, dw) = if spatial == 1 {
        (1, o.dilation.1)
    } else {
        o.dilation
    };
    if kh == 0 || kw == 0 {
        // PyTorch has no check of its own here (oneDNN fails to plan the convolution).
        return Err(Error::Shape(format!(
            "Given weight of size {}, expected a kernel of at least 1 in every spatial dimension",
            sizes(ws)
        )));
    }
    let (eh, ew) = ((kh - 1) * dh + 1, (kw - 1) * dw + 1);
    let (padded_h, padded_w) = (h + 2 * ph, w_in + 2 * pw);
    if padded_h < eh || padded_w < ew {
        let (padded, kernel) = if spatial == 1 {
            (format!("{padded_w}"), format!("{ew}"))
        } else {
            (format!("{padded_h} x {padded_w}"), format!("{eh} x {ew}"))
        };
        return Err(Error::Shape(format!(
            "Calculated padded input size per channel: ({padded}). Kernel size: ({kernel}). Kernel size can't be greater than actual input size"
        )));
    }
    let window = Window {
        c,
        h,
        w: w_in,
        kh,
        kw,
        sh,
        sw,
        ph,
        pw,
        dh,
        dw,
        oh: (padded_h - eh) / sh + 1,
        ow: (padded_w - ew) / sw + 1,
        mode: PoolMode::Max,
    };
    Ok(ConvPlan {
        x4: [x_batched[0], c, h, w_in],
        w4: [out_c, ws[1], kh, kw],
        window,
    })
}

/// `conv1d` (`spatial == 1`) or `conv2d` of `x` with `weight` and `bias`, recorded.
pub(crate) fn conv(
    x: In<'_>,
    weight: In<'_>,
    bias: Option<In<'_>>,
    o: ConvOptions,
    spatial: usize,
) -> Result<Out> {
    // Inside an autocast scope, an `f32` convolution runs in the scope's type, as PyTorch's
    // autocast lists `conv1d` and `conv2d` with the matrix products.
    match bias {
        Some(b) => {
            if let Some(low) = autocast::product_type(&[x, weight, b]) {
                return autocast::in_low(low, [x, weight, b], |[x, w, b]| {
                    conv(x, w, Some(b), o, spatial)
                });
            }
        }
        None => {
            if let Some(low) = autocast::product_type(&[x, weight]) {
                return autocast::in_low(low, [x, weight], |[x, w]| conv(x, w, None, o, spatial));
            }
        }
    }
    let plan = plan_conv(x.value, weight.value, bias.map(|b| b.value), o, spatial)?;
    let g = plan.window;
    let groups = o.groups;
    let x4 = kit::reshape(x.value, &plan.x4)?;
    let w4 = kit::reshape(weight.value, &plan.w4)?;
    let mut y = ops::conv::conv2d(&x4, &w4, &g, groups)?;
    if let Some(b) = bias {
        let b4 = kit::reshape(b.value, &[1, plan.w4[0], 1, 1])?;
        y = kit::binary(y, &b4, BinaryOp::Add)?;
    }
    let mut out_shape: Vec<usize> = vec![plan.x4[0], plan.w4[0]];
    if spatial == 2 {
        out_shape.push(g.oh);
    }
    out_shape.push(g.ow);
    if x.value.rank() == spatial + 1 {
        out_shape.remove(0);
    }
    let value = kit::reshape(&y, &out_shape)?;
    let node = record(
        "ConvolutionBackward0",
        &[x.node, weight.node, bias.and_then(|b| b.node)],
        |needs| {
            let (need_x, need_w, need_b) = (needs[0], needs[1], needs[2]);
            let (x_shape, w_shape) = (x.value.layout.shape, weight.value.layout.shape);
            let xs = need_w.then(|| x4.clone());
            let ws = need_x.then(|| w4.clone());
            let (batch, out_c) = (plan.x4[0], plan.w4[0]);
            move |gy| {
                let gy4 = kit::reshape(&gy, &[batch, out_c, g.oh, g.ow])?;
                let gx = match &ws {
                    Some(w4) => {
                        let gx4 = ops::conv::conv2d_input_grad(&gy4, w4, &g, groups)?;
                        Some(kit::reshape(&gx4, &x_shape)?)
                    }
                    None => None,
                };
                let gw = match &xs {
                    Some(x4) => {
                        // One term per image, summed over the batch.
                        let per_image = ops::conv::conv2d_weight_grads(&gy4, x4, &g, groups)?;
                        let gw = ops::reduce::reduce(&per_image, &[0], false, ReduceOp::Sum)?;
                        Some(kit::reshape(&gw, &w_shape)?)
                    }
                    None => None,
                };
                let gb = need_b
                    .then(|| ops::reduce::reduce(&gy4, &[0, 2, 3], false, ReduceOp::Sum))
                    .transpose()?;
                Ok(vec![gx, gw, gb])
            }
        },
    );
    Ok(Out { value, node })
}

/// The output size of a pooling window along one axis (PyTorch's `pooling_output_shape`).
fn pooled(n: usize, k: usize, s: usize, p: usize, d: usize, ceil: bool) -> i64 {
    let span =
        n as i64 + 2 * p as i64 - (d * (k - 1)) as i64 - 1 + if ceil { s as i64 - 1 } else { 0 };
    let mut out = span.div_euclid(s as i64) + 1;
    if ceil && (out - 1) * s as i64 >= (n + p) as i64 {
        out -= 1;
    }
    out
}

/// `x` seen as `[planes, h, w]`, and the shape of the result for `(oh, ow)`.
fn planes(x: &RawTensor) -> Result<(RawTensor, Vec<usize>)> {
    let s = x.shape();
    let r = s.len();
    let planes: usize = s[..r - 2].iter().product();
    Ok((
        kit::reshape(x, &[planes, s[r - 2], s[r - 1]])?,
        s[..r - 2].to_vec(),
    ))
}

/// PyTorch's checks of `max_pool2d` (`max`) and `avg_pool2d`; the window.
#[allow(clippy::too_many_arguments)]
fn plan_pool(
    x: &RawTensor,
    kernel: Size2,
    stride: Size2,
    padding: Size2,
    dilation: Size2,
    ceil_mode: bool,
    mode: PoolMode,
) -> Result<Window> {
    let s = x.shape();
    let max = mode == PoolMode::Max;
    if !x.dtype.is_float() {
        return Err(Error::UnsupportedDType {
            op: if max { "max_pool2d" } else { "avg_pool2d" },
            dtype: x.dtype,
        });
    }
    if s.len() != 3 && s.len() != 4 {
        if max || s.len() > 4 {
            return Err(Error::Shape(
                "non-empty 3D or 4D (batch mode) tensor expected for input".into(),
            ));
        }
        return Err(Error::DimOutOfRange {
            dim: -3,
            min: -(s.len() as isize),
            max: s.len() as isize - 1,
        });
    }
    if kernel.0 == 0 || kernel.1 == 0 {
        return Err(Error::Shape(format!(
            "kernel size should be greater than zero, but got kH: {} kW: {}",
            kernel.0, kernel.1
        )));
    }
    if stride.0 == 0 || stride.1 == 0 {
        return Err(Error::Shape("stride should not be zero".into()));
    }
    if dilation.0 == 0 || dilation.1 == 0 {
        return Err(Error::Shape(format!(
            "dilation should be greater than zero, but got dilationH: {} dilationW: {}",
            dilation.0, dilation.1
        )));
    }
    for (p, k, d) in [
        (padding.0, kernel.0, dilation.0),
        (padding.1, kernel.1, dilation.1),
    ] {
        if p > k / 2 {
            return Err(Error::Shape(format!(
                "pad should be at most half of effective kernel size, but got pad={p}, kernel_size={k} and dilation={d}"
            )));
        }
    }
    let r = s.len();
    let (c, h, w) = (s[r - 3], s[r - 2], s[r - 1]);
    if c == 0 || h == 0 || w == 0 {
        return Err(Error::Shape(format!(
            "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:{}",
            sizes(s)
        )));
    }
    let oh = pooled(h, kernel.0, stride.0, padding.0, dilation.0, ceil_mode);
    let ow = pooled(w, kernel.1, stride.1, padding.1, dilation.1, ceil_mode);
    if oh < 1 || ow < 1 {
        return Err(Error::Shape(format!(
            "Given input size: ({c}x{h}x{w}). Calculated output size: ({c}x{oh}x{ow}). Output size is too small"
        )));
    }
    Ok(Window {
        c: 1,
        h,
        w,
        kh: kernel.0,
        kw: kernel.1,
        sh: stride.0,
        sw: stride.1,
        ph: padding.0,
        pw: padding.1,
        dh: dilation.0,
        dw: dilation.1,
        oh: oh as usize,
        ow: ow as usize,
        mode,
    })
}

/// The pooling `g` of `x` (its last two dims), recorded; for a max pool also the indices of
/// the maxima (flat in each `h x w` plane, PyTorch's `return_indices=True`), untracked.
fn pool_indexed(x: In<'_>, g: Window, name: &'static str) -> Result<(Out, Option<RawTensor>)> {
    let (xp, lead) = planes(x.value)?;
    let (value, indices) = ops::conv::pool2d(&xp, &g)?;
    let mut shape = lead;
    shape.extend([g.oh, g.ow]);
    let value = kit::reshape(&value, &shape)?;
    let shaped = indices
        .as_ref()
        .map(|i| kit::reshape(i, &shape))
        .transpose()?;
    let node = record(name, &[x.node], |_| {
        let x_shape = x.value.layout.shape;
        let planes = xp.shape()[0];
        move |gy| {
            let gy = kit::reshape(&gy, &[planes, g.oh, g.ow])?;
            let gx = ops::conv::pool2d_backward(&gy, indices.as_ref(), &g)?;
            Ok(vec![Some(kit::reshape(&gx, &x_shape)?)])
        }
    });
    Ok((Out { value, node }, shaped))
}

/// The pooling `g` of `x`, recorded.
fn pool(x: In<'_>, g: Window, name: &'static str) -> Result<Out> {
    pool_indexed(x, g, name).map(|(out, _)| out)
}

/// `max_pool2d`, recorded: the backward sends each gradient to its window's maximum.
fn max_pool2d(
    x: In<'_>,
    kernel: Size2,
    stride: Size2,
    padding: Size2,
    dilation: Size2,
    ceil_mode: bool,
) -> Result<Out> {
    let g = plan_pool(
        x.value,
        kernel,
        stride,
        padding,
        dilation,
        ceil_mode,
        PoolMode::Max,
    )?;
    pool(x, g, "MaxPool2DWithIndicesBackward0")
}

/// `max_pool2d` with the indices of the maxima, recorded (the indices get no gradient).
fn max_pool2d_with_indices(
    x: In<'_>,
    kernel: Size2,
    stride: Size2,
    padding: Size2,
    dilation: Size2,
    ceil_mode: bool,
) -> Result<(Out, Out)> {
    let g = plan_pool(
        x.value,
        kernel,
        stride,
        padding,
        dilation,
        ceil_mode,
        PoolMode::Max,
    )?;
    let (out, indices) = pool_indexed(x, g, "MaxPool2DWithIndicesBackward0")?;
    let indices = indices.ok_or_else(|| Error::Internal {
        context: "max_pool2d_with_indices",
        message: "the max pool kept no indices".into(),
    })?;
    Ok((out, Out::untracked(indices)))
}

/// `avg_pool2d`, recorded.
fn avg_pool2d(
    x: In<'_>,
    kernel: Size2,
    stride: Size2,
    padding: Size2,
    ceil_mode: bool,
    count_include_pad: bool,
) -> Result<Out> {
    let mode = PoolMode::Avg { count_include_pad };
    let g = plan_pool(x.value, kernel, stride, padding, (1, 1), ceil_mode, mode)?;
    pool(x, g, "AvgPool2DBackward0")
}

/// `adaptive_avg_pool2d`, recorded.
fn adaptive_avg_pool2d(x: In<'_>, output_size: Size2) -> Result<Out> {
    let s = x.value.shape();
    if !x.value.dtype.is_float() {
        return Err(Error::UnsupportedDType {
            op: "adaptive_avg_pool2d",
            dtype: x.value.dtype,
        });
    }
    if s.len() != 3 && s.len() != 4 {
        return Err(Error::Shape(format!(
            "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {}",
            sizes(s)
        )));
    }
    let r = s.len();
    for d in r - 2..r {
        if s[d] == 0 {
            return Err(Error::Shape(format!(
                "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has sizes {} with dimension {d} being empty",
                sizes(s)
            )));
        }
    }
    let g = Window {
        c: 1,
        h: s[r - 2],
        w: s[r - 1],
        kh: 1,
        kw: 1,
        sh: 1,
        sw: 1,
        ph: 0,
        pw: 0,
        dh: 1,
        dw: 1,
        oh: output_size.0,
        ow: output_size.1,
        mode: PoolMode::Adaptive,
    };
    pool(x, g, "AdaptiveAvgPool2DBackward0")
}

declare_ops! {
    /// PyTorch's `F.conv2d`: `self` is `[n, c, h, w]` (or `[c, h, w]`), `weight`
    /// `[o, c / groups, kh, kw]`, `bias` `[o]`; the result is `[n, o, oh, ow]` with
    /// `oh = (h + 2 ph - dh (kh - 1) - 1) / sh + 1`.
    ///
    /// ```
    /// use devtype::{Cpu, Tensor};
    /// let x = Tensor::<Cpu>::ones([1, 1, 3, 3], Cpu);
    /// let w = Tensor::<Cpu>::ones([1, 1, 2, 2], Cpu);
    /// let y = x.conv2d(&w, None, (1, 1), (0, 0), (1, 1), 1);
    /// assert_eq!(y.to_vec(), vec![4.0; 4]);
    /// ```
    Float fn conv2d(x, weight: (impl ArgumentOn<D> + ElementIs<E>), bias: OptTensor, stride: Size2,
        padding: Size2, dilation: Size2, groups: usize) -> Same
        check { check_conv(x, weight, bias)?; }
        = conv(x, weight, bias, ConvOptions { stride, padding, dilation, groups }, 2);
    /// PyTorch's `F.conv1d`: `self` is `[n, c, l]` (or `[c, l]`), `weight` `[o, c / groups, k]`,
    /// `bias` `[o]`: `conv2d` over `[n, c, 1, l]`.
    ///
    /// ```
    /// use devtype::{Cpu, Tensor};
    /// let x = Tensor::<Cpu>::from_vec(vec![1.0, 2.0, 3.0], [1, 1, 3], Cpu);
    /// let w = Tensor::<Cpu>::from_vec(vec![1.0, -1.0], [1, 1, 2], Cpu);
    /// assert_eq!(x.conv1d(&w, None, 1, 0, 1, 1).to_vec(), vec![-1.0, -1.0]);
    /// ```
    Float fn conv1d(x, weight: (impl ArgumentOn<D> + ElementIs<E>), bias: OptTensor, stride: usize,
        padding: usize, dilation: usize, groups: usize) -> Same
        check { check_conv(x, weight, bias)?; }
        = conv(x, weight, bias, ConvOptions {
            stride: (1, stride),
            padding: (0, padding),
            dilation: (1, dilation),
            groups,
        }, 1);
    /// PyTorch's `F.max_pool2d` over the last two dims of a `[n, c, h, w]` (or `[c, h, w]`)
    /// input; the backward sends each gradient to its window's maximum.
    ///
    /// ```
    /// use devtype::{Cpu, Tensor};
    /// let x = Tensor::<Cpu>::from_vec(vec![1.0, 5.0, 3.0, 2.0], [1, 2, 2], Cpu);
    /// assert_eq!(x.max_pool2d((2, 2), (2, 2), (0, 0), (1, 1), false).to_vec(), vec![5.0]);
    /// ```
    Float fn max_pool2d(x, kernel_size: Size2, stride: Size2, padding: Size2, dilation: Size2,
        ceil_mode: bool) -> Same
        = max_pool2d(x, kernel_size, stride, padding, dilation, ceil_mode);
    /// `max_pool2d` with the indices of the maxima (PyTorch's `F.max_pool2d(..,
    /// return_indices=True)`): `(values, indices)`, each index flat in its `h x w` plane.
    ///
    /// ```
    /// use devtype::{Cpu, Tensor};
    /// let x = Tensor::<Cpu>::from_vec(vec![1.0, 5.0, 3.0, 2.0], [1, 2, 2], Cpu);
    /// let r = x.max_pool2d_with_indices((2, 2), (2, 2), (0, 0), (1, 1), false);
    /// assert_eq!((r.values.to_vec(), r.indices.to_vec()), (vec![5.0], vec![1]));
    /// ```
    Float fn max_pool2d_with_indices(x, kernel_size: Size2, stride: Size2, padding: Size2,
        dilation: Size2, ceil_mode: bool) -> Pair
        = max_pool2d_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode);
    /// PyTorch's `F.avg_pool2d` over the last two dims of a `[n, c, h, w]` (or `[c, h, w]`)
    /// input.
    ///
    /// ```
    /// use devtype::{Cpu, Tensor};
    /// let x = Tensor::<Cpu>::from_vec(vec![1.0, 5.0, 3.0, 3.0], [1, 2, 2], Cpu);
    /// assert_eq!(x.avg_pool2d((2, 2), (2, 2), (0, 0), false, true).to_vec(), vec![3.0]);
    /// ```
    Float fn avg_pool2d(x, kernel_size: Size2, stride: Size2, padding: Size2, ceil_mode: bool,
        count_include_pad: bool) -> Same
        = avg_pool2d(x, kernel_size, stride, padding, ceil_mode, count_include_pad);
    /// PyTorch's `F.adaptive_avg_pool2d`: output `(i, j)` is the mean of rows
    /// `[floor(i h / oh), ceil((i + 1) h / oh))` and the columns likewise.
    ///
    /// ```
    /// use devtype::{Cpu, Tensor};
    /// let x = Tensor::<Cpu>::from_vec(vec![1.0, 2.0, 3.0, 4.0], [1, 2, 2], Cpu);
    /// assert_eq!(x.adaptive_avg_pool2d((1, 1)).to_vec(), vec![2.5]);
    /// ```
    Float fn adaptive_avg_pool2d(x, output_size: Size2) -> Same
        = adaptive_avg_pool2d(x, output_size);
}
