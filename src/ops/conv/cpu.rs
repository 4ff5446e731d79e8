//! CPU kernels of convolutions and pooling: gathers over contiguous buffers, one output row or
//! plane per task (in parallel above a size), `f16`/`bf16` through `f32`.

use super::{PoolMode, Window};
use crate::backend::cpu::strided::PARALLEL_THRESHOLD;
use crate::core::dtype::sealed::ElementStorage;
use crate::core::error::Result;
use crate::core::layout::Dims;
use crate::core::raw::RawTensor;
use crate::core::{DType, Element, Float};
use crate::ops::half;
use rayon::prelude::*;

/// Runs `f(chunk_index, chunk)` over `out` in chunks of `len` (in parallel when it is large).
fn chunks<T: Send>(out: &mut [T], len: usize, f: impl Fn(usize, &mut [T]) + Sync + Send) {
    if len == 0 {
        return;
    }
    if out.len() >= PARALLEL_THRESHOLD && !cfg!(miri) {
        out.par_chunks_mut(len)
            .enumerate()
            .for_each(|(i, c)| f(i, c));
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

/// The outputs along one axis whose window may hold input `x` (a superset: the caller checks).
#[inline]
fn candidates(
    x: usize,
    s: usize,
    p: usize,
    k: usize,
    d: usize,
    o: usize,
) -> std::ops::Range<usize> {
    let hi = ((x + p) / s + 1).min(o);
    let reach = (k - 1) * d;
    let lo = if x + p >= reach {
        (x + p - reach).div_ceil(s)
    } else {
        0
    };
    lo.min(hi)..hi
}

/// The output along one axis whose window position `k` is input `x`, if any:
/// `o = (x + p - k d) / s` when that divides exactly and `o < n_out`.
#[inline]
fn source(x: usize, s: usize, p: usize, k: usize, d: usize, n_out: usize) -> Option<usize> {
    let t = (x + p).checked_sub(k * d)?;
    (t % s == 0 && t / s < n_out).then_some(t / s)
}

fn im2col_typed<T: Float>(x: &RawTensor, g: &Window, shape: Dims) -> Result<RawTensor> {
    let mut out = T::pool().take(shape.iter().product())?;
    let src = data::<T>(x);
    let (rows, cols) = (g.rows(), g.cols());
    chunks(&mut out, cols, |row, dst| {
        let (n, k) = (row / rows, row % rows);
        let (c, ki, kj) = (k / (g.kh * g.kw), (k / g.kw) % g.kh, k % g.kw);
        let plane = &src[(n * g.c + c) * g.h * g.w..][..g.h * g.w];
        for oy in 0..g.oh {
            let iy = coord(oy, g.sh, g.ph, ki, g.dh);
            for ox in 0..g.ow {
                let ix = coord(ox, g.sw, g.pw, kj, g.dw);
                dst[oy * g.ow + ox] =
                    if iy >= 0 && (iy as usize) < g.h && ix >= 0 && (ix as usize) < g.w {
                        plane[iy as usize * g.w + ix as usize]
                    } else {
                        T::ZERO
                    };
            }
        }
    });
    Ok(RawTensor::from_cpu_vec(out, shape))
}

fn col2im_typed<T: Float>(col: &RawTensor, g: &Window, shape: Dims) -> Result<RawTensor> {
    let mut out = T::pool().take(shape.iter().product())?;
    let src = data::<T>(col);
    let (rows, cols) = (g.rows(), g.cols());
    chunks(&mut out, g.h * g.w, |p, dst| {
        let (n, c) = (p / g.c, p % g.c);
        for y in 0..g.h {
            for x in 0..g.w {
                let mut acc = T::ZERO;
                for ki in 0..g.kh {
                    let Some(oy) = source(y, g.sh, g.ph, ki, g.dh, g.oh) else {
                        continue;
                    };
                    for kj in 0..g.kw {
                        let Some(ox) = source(x, g.sw, g.pw, kj, g.dw, g.ow) else {
                            continue;
                        };
                        let r = (c * g.kh + ki) * g.kw + kj;
                        acc += src[(n * rows + r) * cols + oy * g.ow + ox];
                    }
                }
                dst[y * g.w + x] = acc;
            }
        }
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
        let mut pairs: Vec<(T, i64)> = vec![(T::ZERO, 0); numel];
        chunks(&mut pairs, per, |p, dst| {
            let plane = &src[p * plane_len..][..plane_len];
            for oy in 0..g.oh {
                for ox in 0..g.ow {
                    dst[oy * g.ow + ox] = window_max(plane, g, oy, ox);
                }
            }
        });
        for ((o, i), (v, at)) in out.iter_mut().zip(idx.iter_mut()).zip(pairs) {
            *o = v;
            *i = at;
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

/// The outputs along one axis whose pooling window may hold input `x`.
pub(super) fn pool_candidates(g: &Window, x: usize, vertical: bool) -> std::ops::Range<usize> {
    let (s, p, k, d, o, n) = if vertical {
        (g.sh, g.ph, g.kh, g.dh, g.oh, g.h)
    } else {
        (g.sw, g.pw, g.kw, g.dw, g.ow, g.w)
    };
    match g.mode {
        PoolMode::Adaptive => (x * o) / n..((x + 1) * o).div_ceil(n).min(o),
        _ => candidates(x, s, p, k, d, o),
    }
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
    chunks(&mut out, g.h * g.w, |p, dst| {
        let gp = &src[p * per..][..per];
        for y in 0..g.h {
            let ys = pool_candidates(g, y, true);
            for x in 0..g.w {
                let xs = pool_candidates(g, x, false);
                let mut acc = T::ZERO;
                for oy in ys.clone() {
                    for ox in xs.clone() {
                        let o = oy * g.ow + ox;
                        match idx {
                            Some(idx) => {
                                if idx[p * per + o] == (y * g.w + x) as i64 {
                                    acc += gp[o];
                                }
                            }
                            None => {
                                let ((y0, y1), (x0, x1), div) = mean_window(g, oy, ox);
                                if (y0..y1).contains(&y) && (x0..x1).contains(&x) {
                                    acc += gp[o] / T::from_f64(div as f64);
                                }
                            }
                        }
                    }
                }
                dst[y * g.w + x] = acc;
            }
        }
    });
    Ok(RawTensor::from_cpu_vec(out, shape))
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
