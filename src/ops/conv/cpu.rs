//! CPU kernels of convolutions and pooling: gathers over contiguous buffers, one output row or
//! plane per task (in parallel above a size), `f16`/`bf16` through `f32`.

use super::{PoolMode, Window};
use crate::backend::cpu::copy_short;
use crate::backend::cpu::parallel::{for_each_chunk_mut, for_each_chunk_pair_mut};
use crate::backend::cpu::strided::PARALLEL_THRESHOLD;
use crate::backend::cpu::vmath::vectorized;
use crate::core::dtype::sealed::ElementStorage;
use crate::core::error::Result;
use crate::core::layout::Dims;
use crate::core::raw::RawTensor;
use crate::core::{DType, Element, Float};
use crate::ops::half;
use crate::ops::matmul::cpu::{gemm_one_thread, Gemm, MatrixView};

/// Runs `f(chunk_index, chunk)` over `out` in chunks of `len` (in parallel when it is large).
fn chunks<T: Send>(out: &mut [T], len: usize, f: impl Fn(usize, &mut [T]) + Sync + Send) {
    if len == 0 {
        return;
    }
    if out.len() >= PARALLEL_THRESHOLD && !cfg!(miri) {
        for_each_chunk_mut(out, len, &|start, c| f(start / len, c));
    } else {
        out.chunks_mut(len).enumerate().for_each(|(i, c)| f(i, c));
    }
}

/// The contiguous data of `t`.
fn data<T: Element>(t: &RawTensor) -> &[T] {
    let all = t
        .cpu_slice::<T>()
        .expect("a CPU tensor of the dispatched type");
    match t.layout.contiguous_range() {
        Some(r) => &all[r],
        None => &all[..0],
    }
}

/// `i * s - p + k * d`, the input coordinate of window position `k` of output `i`.
#[inline]
fn coord(i: usize, s: usize, p: usize, k: usize, d: usize) -> i64 {
    (i * s) as i64 - p as i64 + (k * d) as i64
}

/// The window of output `i` along one axis for the average pools: `(start, end, size)`,
/// clamped to the image, `size` the padded count.
#[inline]
pub(super) fn avg_range(i: usize, s: usize, p: usize, k: usize, n: usize) -> (usize, usize, i64) {
    let start = (i * s) as i64 - p as i64;
    let end = (start + k as i64).min((n + p) as i64);
    let size = end - start;
    let (start, end) = (start.max(0), end.min(n as i64));
    (start as usize, end.max(start) as usize, size)
}

/// PyTorch's adaptive window of output `i` of `o` over `n`: `[floor(i n / o), ceil((i+1) n / o))`.
#[inline]
pub(super) fn adaptive_range(i: usize, o: usize, n: usize) -> (usize, usize) {
    ((i * n) / o, ((i + 1) * n).div_ceil(o))
}

/// The outputs `o < n_out` along one axis whose tap at offset `off` (`k * d`) lands inside an
/// input of extent `n`, `0 <= o s - p + off < n`: one range, `(lo, hi)`, empty as `lo == hi`.
#[inline]
fn inside(n_out: usize, s: usize, p: usize, off: usize, n: usize) -> (usize, usize) {
    let lo = p.saturating_sub(off).div_ceil(s).min(n_out);
    let hi = (n + p).saturating_sub(off).div_ceil(s).clamp(lo, n_out);
    (lo, hi)
}

/// `dst.fill(value)` in fixed-size pieces ([`copy_short`]'s reason: padding columns are a
/// few elements).
#[inline(always)]
fn fill_short<T: Copy>(dst: &mut [T], value: T) {
    let mut d = dst;
    while d.len() >= 16 {
        d[..16].copy_from_slice(&[value; 16]);
        d = &mut d[16..];
    }
    for piece in [8, 4, 2, 1] {
        if d.len() >= piece {
            d[..piece].fill(value);
            d = &mut d[piece..];
        }
    }
}

/// Row `k` (`c * kh * kw + ki * kw + kj`) of one image's columns: tap `(ki, kj)` of channel
/// `c` at every output position, from that channel's `plane`.
#[inline]
fn im2col_row<T: Float>(plane: &[T], g: &Window, k: usize, dst: &mut [T]) {
    let (ki, kj) = ((k / g.kw) % g.kh, k % g.kw);
    // Each output row of this tap reads one input row, or the padding: the columns inside
    // the image are a slice of it (every `sw`-th element), the rest zeros.
    let (x0, x1) = inside(g.ow, g.sw, g.pw, kj * g.dw, g.w);
    for (oy, drow) in dst.chunks_exact_mut(g.ow).enumerate() {
        let iy = coord(oy, g.sh, g.ph, ki, g.dh);
        if iy < 0 || iy as usize >= g.h || x0 == x1 {
            fill_short(drow, T::ZERO);
            continue;
        }
        let line = &plane[iy as usize * g.w..][..g.w];
        fill_short(&mut drow[..x0], T::ZERO);
        fill_short(&mut drow[x1..], T::ZERO);
        let first = x0 * g.sw + kj * g.dw - g.pw;
        if g.sw == 1 {
            copy_short(&mut drow[x0..x1], &line[first..first + (x1 - x0)]);
        } else {
            for (o, &v) in drow[x0..x1]
                .iter_mut()
                .zip(line[first..].iter().step_by(g.sw))
            {
                *o = v;
            }
        }
    }
}

/// One image (`[c, h, w]`) unfolded into `dst` (`[c * kh * kw, oh * ow]`).
fn im2col_image<T: Float>(image: &[T], g: &Window, dst: &mut [T]) {
    let plane_len = g.h * g.w;
    for (k, row) in dst.chunks_exact_mut(g.cols()).enumerate() {
        let c = k / (g.kh * g.kw);
        im2col_row(&image[c * plane_len..][..plane_len], g, k, row);
    }
}

fn im2col_typed<T: Float>(x: &RawTensor, g: &Window, shape: Dims) -> Result<RawTensor> {
    let mut out = T::pool().take(shape.iter().product())?;
    let src = data::<T>(x);
    let rows = g.rows();
    chunks(&mut out, g.cols(), |row, dst| {
        let (n, k) = (row / rows, row % rows);
        let c = k / (g.kh * g.kw);
        let plane = &src[(n * g.c + c) * g.h * g.w..][..g.h * g.w];
        im2col_row(plane, g, k, dst);
    });
    Ok(RawTensor::from_cpu_vec(out, shape))
}

/// Channel `c` of the adjoint of [`im2col_image`]: the rows of one image's columns `cols`
/// (`[c * kh * kw, oh * ow]`) that channel `c`'s taps produced, summed back onto its plane
/// `dst` (`[h, w]`, overwritten).
fn col2im_plane<T: Float>(cols: &[T], g: &Window, c: usize, dst: &mut [T]) {
    let width = g.cols();
    dst.fill(T::ZERO);
    // The taps in order (`ki`, then `kj`): each pixel receives its terms in that order, as
    // a per-pixel sum over the window would add them. Each tap's output row is added to
    // one input row, a slice of it (every `sw`-th element).
    for ki in 0..g.kh {
        for kj in 0..g.kw {
            let r = (c * g.kh + ki) * g.kw + kj;
            let tap = &cols[r * width..][..width];
            let (x0, x1) = inside(g.ow, g.sw, g.pw, kj * g.dw, g.w);
            if x0 == x1 {
                continue;
            }
            for (oy, trow) in tap.chunks_exact(g.ow).enumerate() {
                let iy = coord(oy, g.sh, g.ph, ki, g.dh);
                if iy < 0 || iy as usize >= g.h {
                    continue;
                }
                let line = &mut dst[iy as usize * g.w..][..g.w];
                let first = x0 * g.sw + kj * g.dw - g.pw;
                let terms = &trow[x0..x1];
                if g.sw == 1 {
                    for (o, &v) in line[first..first + terms.len()].iter_mut().zip(terms) {
                        *o += v;
                    }
                } else {
                    for (o, &v) in line[first..].iter_mut().step_by(g.sw).zip(terms) {
                        *o += v;
                    }
                }
            }
        }
    }
}

fn col2im_typed<T: Float>(col: &RawTensor, g: &Window, shape: Dims) -> Result<RawTensor> {
    let mut out = T::pool().take(shape.iter().product())?;
    let src = data::<T>(col);
    let per_image = g.rows() * g.cols();
    chunks(&mut out, g.h * g.w, |p, dst| {
        let (n, c) = (p / g.c, p % g.c);
        col2im_plane(&src[n * per_image..][..per_image], g, c, dst);
    });
    Ok(RawTensor::from_cpu_vec(out, shape))
}

/// The maximum of one window and its flat index (NaN wins; the last NaN, as PyTorch's loop).
fn window_max<T: Float>(plane: &[T], g: &Window, oy: usize, ox: usize) -> (T, i64) {
    let (mut best, mut at) = (T::NEG_INFINITY, -1i64);
    for ki in 0..g.kh {
        let y = coord(oy, g.sh, g.ph, ki, g.dh);
        if y < 0 || y as usize >= g.h {
            continue;
        }
        for kj in 0..g.kw {
            let x = coord(ox, g.sw, g.pw, kj, g.dw);
            if x < 0 || x as usize >= g.w {
                continue;
            }
            let i = y * g.w as i64 + x;
            let v = plane[i as usize];
            if at < 0 {
                at = i;
            }
            #[allow(clippy::eq_op)]
            let nan = v != v;
            if v > best || nan {
                best = v;
                at = i;
            }
        }
    }
    (best, at.max(0))
}

/// The window of output `(oy, ox)` of a mean pool, clamped, and its divisor.
fn mean_window(g: &Window, oy: usize, ox: usize) -> ((usize, usize), (usize, usize), usize) {
    match g.mode {
        PoolMode::Avg { count_include_pad } => {
            let (y0, y1, sy) = avg_range(oy, g.sh, g.ph, g.kh, g.h);
            let (x0, x1, sx) = avg_range(ox, g.sw, g.pw, g.kw, g.w);
            let div = if count_include_pad {
                (sy * sx) as usize
            } else {
                (y1 - y0) * (x1 - x0)
            };
            ((y0, y1), (x0, x1), div)
        }
        _ => {
            let (y0, y1) = adaptive_range(oy, g.oh, g.h);
            let (x0, x1) = adaptive_range(ox, g.ow, g.w);
            ((y0, y1), (x0, x1), (y1 - y0) * (x1 - x0))
        }
    }
}

/// Outputs of an inside max pool computed together: one vector register of `f32`.
const POOL_LANES: usize = 16;

/// Every output row of one plane's max pool whose windows lie inside the image (no padding,
/// no dilation): up to `POOL_LANES` outputs of a row at a time, each tap a load per lane and a
/// select (no branch: on real data which tap wins is a coin toss, and a mispredicted branch
/// per tap cost more than the rest of the pool). PyTorch's loop, lane by lane: the maximum
/// starts at `-inf` at the window's first index, taps in row-major order, a tap wins when it is
/// greater or NaN, so the same values and indices as [`window_max`].
#[inline(always)]
fn max_rows_inside<T: Float>(plane: &[T], g: &Window, sw: usize, dst: &mut [T], at: &mut [i64]) {
    let rows = dst.chunks_exact_mut(g.ow).zip(at.chunks_exact_mut(g.ow));
    for (oy, (drow, arow)) in rows.enumerate() {
        let top = oy * g.sh * g.w;
        // Rows of LeNet's pools are 14 and 5 outputs wide: the tail in 8, 4, 2 and 1 lanes.
        let mut ox = 0;
        while ox < g.ow {
            let first = top + ox * sw;
            let n = g.ow - ox;
            let (d, a) = (&mut drow[ox..], &mut arow[ox..]);
            ox += if n >= POOL_LANES {
                max_lanes::<T, POOL_LANES>(plane, g, sw, first, d, a)
            } else if n >= 8 {
                max_lanes::<T, 8>(plane, g, sw, first, d, a)
            } else if n >= 4 {
                max_lanes::<T, 4>(plane, g, sw, first, d, a)
            } else if n >= 2 {
                max_lanes::<T, 2>(plane, g, sw, first, d, a)
            } else {
                max_lanes::<T, 1>(plane, g, sw, first, d, a)
            };
        }
    }
}

/// The first `N` outputs of `dst` and `at`, adjacent outputs of [`max_rows_inside`] whose first
/// window starts at flat index `first`; returns `N`.
#[inline(always)]
fn max_lanes<T: Float, const N: usize>(
    plane: &[T],
    g: &Window,
    sw: usize,
    first: usize,
    dst: &mut [T],
    at: &mut [i64],
) -> usize {
    let mut best = [T::NEG_INFINITY; N];
    let mut arg = [0usize; N];
    for (l, a) in arg.iter_mut().enumerate() {
        *a = first + l * sw;
    }
    for ki in 0..g.kh {
        for kj in 0..g.kw {
            let start = first + ki * g.w + kj;
            let taps = &plane[start..][..(N - 1) * sw + 1];
            for l in 0..N {
                let v = taps[l * sw];
                #[allow(clippy::eq_op)]
                let wins = (v > best[l]) | (v != v);
                best[l] = if wins { v } else { best[l] };
                arg[l] = if wins { start + l * sw } else { arg[l] };
            }
        }
    }
    dst[..N].copy_from_slice(&best);
    for (o, &i) in at[..N].iter_mut().zip(&arg) {
        *o = i as i64;
    }
    N
}

fn pool_typed<T: Float>(
    x: &RawTensor,
    g: &Window,
    shape: Dims,
) -> Result<(RawTensor, Option<RawTensor>)> {
    let numel: usize = shape.iter().product();
    let mut out = T::pool().take(numel)?;
    let src = data::<T>(x);
    let plane_len = g.h * g.w;
    let per = g.oh * g.ow;
    if g.mode == PoolMode::Max {
        let mut idx = <i64 as ElementStorage>::pool().take(numel)?;
        // Every window inside the image (no padding or dilation; floor mode): no bounds test
        // per tap ([`max_rows_inside`]).
        let inside = g.ph == 0
            && g.pw == 0
            && g.dh == 1
            && g.dw == 1
            && (g.oh == 0 || (g.oh - 1) * g.sh + g.kh <= g.h)
            && (g.ow == 0 || (g.ow - 1) * g.sw + g.kw <= g.w)
            && g.kh > 0
            && g.kw > 0;
        let planes = |p: usize, dst: &mut [T], at: &mut [i64]| {
            let plane = &src[p * plane_len..][..plane_len];
            if inside {
                // The strides LeNet's and VGG's pools have as constants, so the lanes' loads
                // are fixed offsets the loop vectorizes over.
                vectorized(
                    #[inline(always)]
                    || match g.sw {
                        1 => max_rows_inside(plane, g, 1, dst, at),
                        2 => max_rows_inside(plane, g, 2, dst, at),
                        sw => max_rows_inside(plane, g, sw, dst, at),
                    },
                );
                return;
            }
            for oy in 0..g.oh {
                for ox in 0..g.ow {
                    let (v, i) = window_max(plane, g, oy, ox);
                    dst[oy * g.ow + ox] = v;
                    at[oy * g.ow + ox] = i;
                }
            }
        };
        if per > 0 {
            if numel >= PARALLEL_THRESHOLD && !cfg!(miri) {
                for_each_chunk_pair_mut(&mut out, &mut idx, per, &|start, dst, at| {
                    planes(start / per, dst, at)
                });
            } else {
                for (p, (dst, at)) in out.chunks_mut(per).zip(idx.chunks_mut(per)).enumerate() {
                    planes(p, dst, at);
                }
            }
        }
        return Ok((
            RawTensor::from_cpu_vec(out, shape),
            Some(RawTensor::from_cpu_vec(idx, shape)),
        ));
    }
    chunks(&mut out, per, |p, dst| {
        let plane = &src[p * plane_len..][..plane_len];
        for oy in 0..g.oh {
            for ox in 0..g.ow {
                let ((y0, y1), (x0, x1), div) = mean_window(g, oy, ox);
                let mut acc = T::ZERO;
                for y in y0..y1 {
                    for x in x0..x1 {
                        acc += plane[y * g.w + x];
                    }
                }
                dst[oy * g.ow + ox] = if y0 >= y1 || x0 >= x1 {
                    T::ZERO
                } else {
                    acc / T::from_f64(div as f64)
                };
            }
        }
    });
    Ok((RawTensor::from_cpu_vec(out, shape), None))
}

fn pool_backward_typed<T: Float>(
    gy: &RawTensor,
    indices: Option<&RawTensor>,
    g: &Window,
    shape: Dims,
) -> Result<RawTensor> {
    let mut out = T::pool().take(shape.iter().product())?;
    let src = data::<T>(gy);
    let idx = indices.map(data::<i64>);
    let per = g.oh * g.ow;
    // Each output's gradient goes to the input(s) it read, outputs in row-major order: every
    // pixel receives its terms in that order (a windowed sum per pixel would add the same).
    chunks(&mut out, g.h * g.w, |p, dst| {
        dst.fill(T::ZERO);
        let gp = &src[p * per..][..per];
        match idx {
            Some(idx) => {
                for (&v, &at) in gp.iter().zip(&idx[p * per..][..per]) {
                    dst[at as usize] += v;
                }
            }
            None => {
                for oy in 0..g.oh {
                    for ox in 0..g.ow {
                        let ((y0, y1), (x0, x1), div) = mean_window(g, oy, ox);
                        if y0 >= y1 || x0 >= x1 {
                            continue;
                        }
                        let v = gp[oy * g.ow + ox] / T::from_f64(div as f64);
                        for y in y0..y1 {
                            for o in &mut dst[y * g.w + x0..y * g.w + x1] {
                                *o += v;
                            }
                        }
                    }
                }
            }
        }
    });
    Ok(RawTensor::from_cpu_vec(out, shape))
}

/// The most elements of one image's columns (`c * kh * kw * oh * ow`) for which the CPU
/// computes a convolution image by image whatever the batch: each thread unfolds one image
/// into a buffer that stays in its L2 cache (1 MiB of `f32`) and multiplies it there, instead
/// of unfolding the whole batch into a buffer several times the cache (LeNet's first layer:
/// 5 MB at batch 64, written and read back, then recomputed for the weight's gradient: ~22%
/// of its training step's samples).
const IMAGE_COLS_MAX: usize = 1 << 18;

/// Whether [`ConvKernel`](super::ConvKernel)'s products run image by image here (`f32`/`f64`,
/// at least two images): when each image's columns fit in a cache, or when there are at least
/// as many images as threads. Larger images still gain (a ResNet block, 32x64x56x56 -> 64, k3:
/// forward 136-162 ms batched against 55-58 image by image, forward + backward 366-423 against
/// 190, on a 2-vCPU Xeon): one image's columns, 7 MB, instead of the batch's 231 MB, each
/// product on one thread. With fewer images than threads, the batched products, each split
/// across every thread, keep them all busy.
fn by_image(t: &RawTensor, g: &Window) -> bool {
    let n = t.shape()[0];
    n >= 2
        && (g.rows() * g.cols() <= IMAGE_COLS_MAX || n >= rayon::current_num_threads())
        && matches!(t.dtype, DType::F32 | DType::F64)
}

/// `f(image, out_chunk, columns)` for each image's `per`-element chunk of `out`, on every
/// thread when the work is large, with a `columns`-element scratch buffer per task; the first
/// allocation failure is returned after the loop.
fn each_image<T: Float>(
    out: &mut [T],
    per: usize,
    columns: usize,
    f: impl Fn(usize, &mut [T], &mut [T]) + Sync,
) -> Result<()> {
    if per == 0 {
        return Ok(());
    }
    let failed = std::sync::Mutex::new(None);
    let task = |start: usize, chunk: &mut [T]| match T::pool().take(columns) {
        Ok(mut buf) => f(start / per, chunk, &mut buf),
        Err(e) => {
            let mut first = failed.lock().unwrap_or_else(|p| p.into_inner());
            first.get_or_insert(e);
        }
    };
    if (out.len() / per).saturating_mul(columns) >= PARALLEL_THRESHOLD && !cfg!(miri) {
        for_each_chunk_mut(out, per, &task);
    } else {
        for (i, chunk) in out.chunks_mut(per).enumerate() {
            task(i * per, chunk);
        }
    }
    match failed.into_inner().unwrap_or_else(|p| p.into_inner()) {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// A row-major `rows x cols` matrix at `offset` in `data`, or its transpose (`t`).
fn matrix<T>(data: &[T], offset: usize, cols: usize, t: bool) -> MatrixView<'_, T> {
    let (row_stride, col_stride) = if t { (1, cols) } else { (cols, 1) };
    MatrixView {
        data,
        offset,
        row_stride,
        col_stride,
    }
}

/// [`super::conv2d`] image by image: `y[i, g] = W[g] @ im2col(x[i])[g]`.
fn conv2d_typed<T: Gemm>(
    x: &RawTensor,
    w: &RawTensor,
    g: &Window,
    groups: usize,
) -> Result<RawTensor> {
    let (n, out_c) = (x.shape()[0], w.shape()[0]);
    let (og, kg, l) = (out_c / groups, g.rows() / groups, g.cols());
    let mut out = T::pool().take(n * out_c * l)?;
    let (src, wd) = (data::<T>(x), data::<T>(w));
    let image = g.c * g.h * g.w;
    each_image(&mut out, out_c * l, g.rows() * l, |i, y, cols| {
        im2col_image(&src[i * image..][..image], g, cols);
        for (gi, y) in y.chunks_exact_mut(og * l).enumerate() {
            let (a, b) = (
                matrix(wd, gi * og * kg, kg, false),
                matrix(cols, gi * kg * l, l, false),
            );
            gemm_one_thread(y, (og, kg, l), a, b, false);
        }
    })?;
    Ok(RawTensor::from_cpu_vec(
        out,
        Dims::shape(&[n, out_c, g.oh, g.ow])?,
    ))
}

/// [`super::conv2d_input_grad`] image by image: `col2im(W[g]^T @ gy[i, g])`.
fn input_grad_typed<T: Gemm>(
    gy: &RawTensor,
    w: &RawTensor,
    g: &Window,
    groups: usize,
) -> Result<RawTensor> {
    let (n, out_c) = (gy.shape()[0], w.shape()[0]);
    let (og, kg, l) = (out_c / groups, g.rows() / groups, g.cols());
    let image = g.c * g.h * g.w;
    let mut out = T::pool().take(n * image)?;
    let (gd, wd) = (data::<T>(gy), data::<T>(w));
    each_image(&mut out, image, g.rows() * l, |i, dx, gcol| {
        for (gi, gcol) in gcol.chunks_exact_mut(kg * l).enumerate() {
            let a = matrix(wd, gi * og * kg, kg, true);
            let b = matrix(gd, (i * out_c + gi * og) * l, l, false);
            gemm_one_thread(gcol, (kg, og, l), a, b, false);
        }
        for (c, plane) in dx.chunks_exact_mut(g.h * g.w).enumerate() {
            col2im_plane(gcol, g, c, plane);
        }
    })?;
    Ok(RawTensor::from_cpu_vec(
        out,
        Dims::shape(&[n, g.c, g.h, g.w])?,
    ))
}

/// [`super::conv2d_weight_grads`] image by image: `gy[i, g] @ im2col(x[i])[g]^T`.
fn weight_grads_typed<T: Gemm>(
    gy: &RawTensor,
    x: &RawTensor,
    g: &Window,
    groups: usize,
) -> Result<RawTensor> {
    let (n, out_c) = (gy.shape()[0], gy.shape()[1]);
    let (og, kg, l) = (out_c / groups, g.rows() / groups, g.cols());
    let mut out = T::pool().take(n * out_c * kg)?;
    let (gd, src) = (data::<T>(gy), data::<T>(x));
    let image = g.c * g.h * g.w;
    each_image(&mut out, out_c * kg, g.rows() * l, |i, dw, cols| {
        im2col_image(&src[i * image..][..image], g, cols);
        for (gi, dw) in dw.chunks_exact_mut(og * kg).enumerate() {
            let a = matrix(gd, (i * out_c + gi * og) * l, l, false);
            let b = matrix(cols, gi * kg * l, l, true);
            gemm_one_thread(dw, (og, l, kg), a, b, false);
        }
    })?;
    Ok(RawTensor::from_cpu_vec(
        out,
        Dims::shape(&[n, groups, og, kg])?,
    ))
}

/// Runs `f` on `f32`/`f64` tensors, the 16-bit floats widened to `f32` and the result rounded
/// back.
fn floats(
    ts: &[&RawTensor],
    f32_op: impl FnOnce(&[RawTensor]) -> Result<RawTensor>,
    f64_op: impl FnOnce(&[RawTensor]) -> Result<RawTensor>,
) -> Result<RawTensor> {
    let dtype = ts[0].dtype;
    match dtype {
        DType::F64 => f64_op(&ts.iter().map(|t| (*t).clone()).collect::<Vec<_>>()),
        DType::F32 => f32_op(&ts.iter().map(|t| (*t).clone()).collect::<Vec<_>>()),
        _ => {
            let wide = ts
                .iter()
                .map(|t| half::widen(t))
                .collect::<Result<Vec<_>>>()?;
            half::narrow(f32_op(&wide)?, dtype)
        }
    }
}

impl super::ConvKernel for crate::ops::backend::CpuBackend {
    fn im2col(self, x: &RawTensor, g: &Window, out: Dims) -> Result<RawTensor> {
        floats(
            &[x],
            |t| im2col_typed::<f32>(&t[0], g, out),
            |t| im2col_typed::<f64>(&t[0], g, out),
        )
    }

    fn col2im(self, col: &RawTensor, g: &Window, out: Dims) -> Result<RawTensor> {
        floats(
            &[col],
            |t| col2im_typed::<f32>(&t[0], g, out),
            |t| col2im_typed::<f64>(&t[0], g, out),
        )
    }

    fn conv2d(
        self,
        x4: &RawTensor,
        w4: &RawTensor,
        g: &Window,
        groups: usize,
    ) -> Result<RawTensor> {
        match x4.dtype {
            DType::F32 if by_image(x4, g) => conv2d_typed::<f32>(x4, w4, g, groups),
            DType::F64 if by_image(x4, g) => conv2d_typed::<f64>(x4, w4, g, groups),
            _ => super::composed::conv2d(x4, w4, g, groups),
        }
    }

    fn conv2d_input_grad(
        self,
        gy: &RawTensor,
        w4: &RawTensor,
        g: &Window,
        groups: usize,
    ) -> Result<RawTensor> {
        match gy.dtype {
            DType::F32 if by_image(gy, g) => input_grad_typed::<f32>(gy, w4, g, groups),
            DType::F64 if by_image(gy, g) => input_grad_typed::<f64>(gy, w4, g, groups),
            _ => super::composed::input_grad(gy, w4, g, groups),
        }
    }

    fn conv2d_weight_grads(
        self,
        gy: &RawTensor,
        x4: &RawTensor,
        g: &Window,
        groups: usize,
    ) -> Result<RawTensor> {
        match x4.dtype {
            DType::F32 if by_image(x4, g) => weight_grads_typed::<f32>(gy, x4, g, groups),
            DType::F64 if by_image(x4, g) => weight_grads_typed::<f64>(gy, x4, g, groups),
            _ => super::composed::weight_grads(gy, x4, g, groups),
        }
    }

    fn pool2d(
        self,
        x: &RawTensor,
        g: &Window,
        out: Dims,
    ) -> Result<(RawTensor, Option<RawTensor>)> {
        match x.dtype {
            DType::F64 => pool_typed::<f64>(x, g, out),
            DType::F32 => pool_typed::<f32>(x, g, out),
            dtype => {
                let (v, i) = pool_typed::<f32>(&half::widen(x)?, g, out)?;
                Ok((half::narrow(v, dtype)?, i))
            }
        }
    }

    fn pool2d_backward(
        self,
        gy: &RawTensor,
        indices: Option<&RawTensor>,
        g: &Window,
        out: Dims,
    ) -> Result<RawTensor> {
        floats(
            &[gy],
            |t| pool_backward_typed::<f32>(&t[0], indices, g, out),
            |t| pool_backward_typed::<f64>(&t[0], indices, g, out),
        )
    }
}
