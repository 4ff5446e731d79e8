//! CPU kernels for `index_select` and `gather`.

use crate::core::error::{Error, Result};
use crate::core::layout::{Dims, Layout};
use crate::core::raw::RawTensor;
use crate::core::{DType, Element};

/// The indices in order, each checked against `size`. As in PyTorch, `gather` and
/// `index_select` take no negative indices; each has its own text for one out of range.
fn checked_indices(index: &RawTensor, dim: usize, size: usize, select: bool) -> Result<Vec<usize>> {
    let raw = index.to_vec::<i64>()?;
    raw.iter()
        .map(|&i| {
            if i < 0 || i >= size as i64 {
                Err(if select {
                    Error::IndexOutOfRange { index: i, size }
                } else {
                    Error::IndexOutOfBounds {
                        index: i,
                        dim,
                        size,
                    }
                })
            } else {
                Ok(i as usize)
            }
        })
        .collect()
}

fn select_typed<T: Element>(
    a: &RawTensor,
    d: usize,
    idx: &[usize],
    shape: Dims,
) -> Result<RawTensor> {
    let src = a.cpu_slice::<T>().expect("cpu");
    let mut out = T::pool().take(shape.iter().product())?;
    if a.rank() == 0 {
        for o in out.iter_mut() {
            *o = src[a.layout.offset];
        }
        return Ok(RawTensor::from_cpu_vec(out, shape));
    }
    let dst_layout = Layout::contiguous(shape);
    for (k, &i) in idx.iter().enumerate() {
        let mut from = a.layout;
        from.offset += i * from.strides[d];
        from.shape[d] = 1;
        let mut to = dst_layout;
        to.offset = k * dst_layout.strides[d];
        to.shape[d] = 1;
        crate::ops::copy::copy_into(&mut out, &to, src, &from);
    }
    Ok(RawTensor::from_cpu_vec(out, shape))
}

pub(crate) fn index_select(
    a: &RawTensor,
    d: usize,
    index: &RawTensor,
    shape: Dims,
) -> Result<RawTensor> {
    let size = if a.rank() == 0 { 1 } else { a.shape()[d] };
    let idx = checked_indices(index, d, size, true)?;
    match a.dtype {
        DType::F32 => select_typed::<f32>(a, d, &idx, shape),
        DType::F64 => select_typed::<f64>(a, d, &idx, shape),
        DType::I64 => select_typed::<i64>(a, d, &idx, shape),
        DType::Bool => select_typed::<bool>(a, d, &idx, shape),
        DType::F16 => select_typed::<half::f16>(a, d, &idx, shape),
        DType::BF16 => select_typed::<half::bf16>(a, d, &idx, shape),
    }
}

fn gather_typed<T: Element>(
    a: &RawTensor,
    d: usize,
    idx: &[usize],
    shape: Dims,
) -> Result<RawTensor> {
    let src = a.cpu_slice::<T>().expect("cpu");
    let numel: usize = shape.iter().product();
    let mut out = T::pool().take(numel)?;
    let rank = shape.len();
    let mut pos = [0usize; crate::core::layout::MAX_DIMS];
    for (n, o) in out.iter_mut().enumerate() {
        let mut rest = n;
        for j in (0..rank).rev() {
            pos[j] = rest % shape[j];
            rest /= shape[j];
        }
        let mut off = a.layout.offset;
        // A 0-dim input (with a 0- or 1-dim index) has no strides: every index is 0 there.
        for (j, &stride) in a.layout.strides.iter().enumerate() {
            let p = if j == d { idx[n] } else { pos[j] };
            off += p * stride;
        }
        *o = src[off];
    }
    Ok(RawTensor::from_cpu_vec(out, shape))
}

pub(crate) fn gather(a: &RawTensor, d: usize, index: &RawTensor, shape: Dims) -> Result<RawTensor> {
    let size = if a.rank() == 0 { 1 } else { a.shape()[d] };
    let idx = checked_indices(index, d, size, false)?;
    match a.dtype {
        DType::F32 => gather_typed::<f32>(a, d, &idx, shape),
        DType::F64 => gather_typed::<f64>(a, d, &idx, shape),
        DType::I64 => gather_typed::<i64>(a, d, &idx, shape),
        DType::Bool => gather_typed::<bool>(a, d, &idx, shape),
        DType::F16 => gather_typed::<half::f16>(a, d, &idx, shape),
        DType::BF16 => gather_typed::<half::bf16>(a, d, &idx, shape),
    }
}

impl super::IndexKernel for crate::ops::backend::CpuBackend {
    #[inline(always)]
    fn index_select(
        self,
        a: &RawTensor,
        d: usize,
        index: &RawTensor,
        shape: Dims,
    ) -> Result<RawTensor> {
        index_select(a, d, index, shape)
    }
    #[inline(always)]
    fn gather(self, a: &RawTensor, d: usize, index: &RawTensor, shape: Dims) -> Result<RawTensor> {
        gather(a, d, index, shape)
    }
}
