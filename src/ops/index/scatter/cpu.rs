//! CPU kernels of `scatter_add` and `index_add`.

use crate::core::error::{Error, Result};
use crate::core::layout::{Dims, Layout};
use crate::core::raw::RawTensor;
use crate::core::{DType, Float};
use crate::ops::half;

fn wrap_index(i: i64, dim: usize, size: usize) -> Result<usize> {
    let j = if i < 0 { i + size as i64 } else { i };
    if j < 0 || j >= size as i64 {
        return Err(Error::IndexOutOfBounds {
            index: i,
            dim,
            size,
        });
    }
    Ok(j as usize)
}

/// What both accumulating kernels start with: the indices and values on the host and a zeroed
/// output, or the whole result when the output is 0-dimensional (every value lands in it).
enum Setup<T> {
    Done(RawTensor),
    Ready(Vec<i64>, Vec<T>, Vec<T>),
}

fn accumulate_setup<T: Float>(shape: Dims, index: &RawTensor, src: &RawTensor) -> Result<Setup<T>> {
    let idx = index.to_vec::<i64>()?;
    let vals = src.to_vec::<T>()?;
    let numel: usize = shape.iter().product();
    let mut out = crate::core::pool::zeroed_vec::<T>(numel)?;
    if shape.is_empty() {
        for (&i, &v) in idx.iter().zip(&vals) {
            wrap_index(i, 0, 1)?;
            out[0] += v;
        }
        return Ok(Setup::Done(RawTensor::from_cpu_vec(out, shape)));
    }
    Ok(Setup::Ready(idx, vals, out))
}

fn scatter_typed<T: Float>(
    shape: Dims,
    dim: usize,
    index: &RawTensor,
    src: &RawTensor,
) -> Result<RawTensor> {
    let (idx, vals, mut out) = match accumulate_setup::<T>(shape, index, src)? {
        Setup::Done(t) => return Ok(t),
        Setup::Ready(idx, vals, out) => (idx, vals, out),
    };
    let strides = Layout::contiguous(shape).strides;
    let ishape = index.shape();
    let rank = ishape.len();
    let mut pos = [0usize; crate::core::layout::MAX_DIMS];
    for (p, (&i, &v)) in idx.iter().zip(&vals).enumerate() {
        let mut rest = p;
        for j in (0..rank).rev() {
            pos[j] = rest % ishape[j];
            rest /= ishape[j];
        }
        let mut off = 0;
        for j in 0..rank {
            let at = if j == dim {
                wrap_index(i, dim, shape[dim])?
            } else {
                pos[j]
            };
            off += at * strides[j];
        }
        out[off] += v;
    }
    Ok(RawTensor::from_cpu_vec(out, shape))
}

fn index_add_typed<T: Float>(
    shape: Dims,
    dim: usize,
    index: &RawTensor,
    src: &RawTensor,
) -> Result<RawTensor> {
    let (idx, vals, mut out) = match accumulate_setup::<T>(shape, index, src)? {
        Setup::Done(t) => return Ok(t),
        Setup::Ready(idx, vals, out) => (idx, vals, out),
    };
    // View both as [outer, size, inner] and add slice k of src into slice idx[k] of out.
    let outer: usize = shape[..dim].iter().product();
    let inner: usize = shape[dim + 1..].iter().product();
    let (size, count) = (shape[dim], idx.len());
    let targets = idx
        .iter()
        .map(|&i| wrap_index(i, dim, size))
        .collect::<Result<Vec<_>>>()?;
    for o in 0..outer {
        for (k, &t) in targets.iter().enumerate() {
            let s = &vals[(o * count + k) * inner..(o * count + k + 1) * inner];
            let d = &mut out[(o * size + t) * inner..(o * size + t + 1) * inner];
            for (a, &b) in d.iter_mut().zip(s) {
                *a += b;
            }
        }
    }
    Ok(RawTensor::from_cpu_vec(out, shape))
}

pub(crate) fn scatter_add(
    shape: Dims,
    dim: usize,
    index: &RawTensor,
    src: &RawTensor,
) -> Result<RawTensor> {
    match src.dtype {
        DType::F32 => scatter_typed::<f32>(shape, dim, index, src),
        DType::F64 => scatter_typed::<f64>(shape, dim, index, src),
        DType::F16 | DType::BF16 => half::narrow(
            scatter_typed::<f32>(shape, dim, index, &half::widen(src)?)?,
            src.dtype,
        ),
        _ => unreachable!("checked in scatter_add"),
    }
}

pub(crate) fn index_add(
    shape: Dims,
    dim: usize,
    index: &RawTensor,
    src: &RawTensor,
) -> Result<RawTensor> {
    match src.dtype {
        DType::F32 => index_add_typed::<f32>(shape, dim, index, src),
        DType::F64 => index_add_typed::<f64>(shape, dim, index, src),
        DType::F16 | DType::BF16 => half::narrow(
            index_add_typed::<f32>(shape, dim, index, &half::widen(src)?)?,
            src.dtype,
        ),
        _ => unreachable!("checked in index_add"),
    }
}

impl super::ScatterKernel for crate::ops::backend::CpuBackend {
    #[inline(always)]
    fn scatter_add(
        self,
        shape: Dims,
        dim: usize,
        index: &RawTensor,
        src: &RawTensor,
    ) -> Result<RawTensor> {
        scatter_add(shape, dim, index, src)
    }
    #[inline(always)]
    fn index_add(
        self,
        shape: Dims,
        dim: usize,
        index: &RawTensor,
        src: &RawTensor,
    ) -> Result<RawTensor> {
        index_add(shape, dim, index, src)
    }
}
