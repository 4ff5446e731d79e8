//! Views: reshape, view, transpose, permute, squeeze, unsqueeze, flatten, narrow, expand.
//! These change only the layout; `reshape` copies when no view exists, as PyTorch does.

use crate::core::error::{Error, Result};
use crate::core::layout::{infer_shape, wrap_dim, Dims};
use crate::core::raw::RawTensor;

/// Refuses target shapes whose known sizes overflow when multiplied (no tensor has that many
/// elements, and even an empty one could not have strides), with `reshape`'s text, before
/// `infer_shape` multiplies them.
fn check_target_size(shape: &[isize], numel: usize) -> Result<()> {
    let overflows = shape
        .iter()
        .filter(|&&s| s >= 0)
        .try_fold(1usize, |acc, &s| acc.checked_mul((s as usize).max(1)))
        .is_none();
    if overflows {
        return Err(Error::Shape(format!(
            "shape '{shape:?}' is invalid for input of size {numel}"
        )));
    }
    Ok(())
}

/// `reshape`: a view when the strides allow one, otherwise a contiguous copy.
pub(crate) fn reshape(a: &RawTensor, shape: &[isize]) -> Result<RawTensor> {
    check_target_size(shape, a.numel())?;
    let shape = infer_shape(shape, a.numel())?;
    match a.layout.view(&shape)? {
        Some(l) => Ok(a.with_layout(l)),
        None => {
            let c = a.contiguous()?;
            let l = c
                .layout
                .view(&shape)?
                .expect("contiguous tensors always have a view");
            Ok(c.with_layout(l))
        }
    }
}

/// `view`: never copies; fails like PyTorch when the strides do not allow it.
pub(crate) fn view(a: &RawTensor, shape: &[isize]) -> Result<RawTensor> {
    check_target_size(shape, a.numel())?;
    let shape = infer_shape(shape, a.numel())?;
    match a.layout.view(&shape)? {
        Some(l) => Ok(a.with_layout(l)),
        None => Err(Error::ViewNotPossible),
    }
}

/// Swaps two dimensions.
pub(crate) fn transpose(a: &RawTensor, d0: isize, d1: isize) -> Result<RawTensor> {
    if a.rank() == 0 {
        wrap_dim(d0, 0)?;
        wrap_dim(d1, 0)?;
        return Ok(a.clone());
    }
    let (d0, d1) = (wrap_dim(d0, a.rank())?, wrap_dim(d1, a.rank())?);
    Ok(a.with_layout(a.layout.transpose(d0, d1)))
}

/// Reorders all dimensions.
pub(crate) fn permute(a: &RawTensor, order: &[isize]) -> Result<RawTensor> {
    let mut dims = Vec::with_capacity(order.len());
    for &d in order {
        dims.push(if a.rank() == 0 {
            return Err(Error::PermuteRank {
                rank: 0,
                given: order.len(),
            });
        } else {
            wrap_dim(d, a.rank())?
        });
    }
    Ok(a.with_layout(a.layout.permute(&dims)?))
}

/// Inserts a dimension of size 1 at `dim` (which may be `rank`).
pub(crate) fn unsqueeze(a: &RawTensor, dim: isize) -> Result<RawTensor> {
    let d = wrap_dim(dim, a.rank() + 1)?;
    let mut l = a.layout;
    let stride = if d < a.rank() {
        l.strides[d] * l.shape[d]
    } else {
        1
    };
    l.shape.insert(d, 1)?;
    l.strides.insert(d, stride)?;
    Ok(a.with_layout(l))
}

/// Removes dimension `dim` if its size is 1 (else returns the tensor unchanged, as PyTorch).
pub(crate) fn squeeze(a: &RawTensor, dim: isize) -> Result<RawTensor> {
    if a.rank() == 0 {
        wrap_dim(dim, 0)?;
        return Ok(a.clone());
    }
    let d = wrap_dim(dim, a.rank())?;
    if a.shape()[d] != 1 {
        return Ok(a.clone());
    }
    let mut l = a.layout;
    l.shape.remove(d);
    l.strides.remove(d);
    Ok(a.with_layout(l))
}

/// Merges dims `start..=end` into one.
pub(crate) fn flatten(a: &RawTensor, start: isize, end: isize) -> Result<RawTensor> {
    let (s, e) = (wrap_dim(start, a.rank())?, wrap_dim(end, a.rank())?);
    if a.rank() == 0 {
        return reshape(a, &[1]);
    }
    if s > e {
        return Err(Error::Shape(
            "flatten() has invalid args: start_dim cannot come after end_dim".into(),
        ));
    }
    let mut shape: Vec<isize> = a.shape()[..s].iter().map(|&x| x as isize).collect();
    shape.push(a.shape()[s..=e].iter().product::<usize>() as isize);
    shape.extend(a.shape()[e + 1..].iter().map(|&x| x as isize));
    reshape(a, &shape)
}

/// Elements `start..start + len` of dimension `dim` (a view).
pub(crate) fn narrow(a: &RawTensor, dim: isize, start: usize, len: usize) -> Result<RawTensor> {
    if a.rank() == 0 {
        return Err(Error::Shape(
            "narrow() cannot be applied to a 0-dim tensor.".into(),
        ));
    }
    let d = wrap_dim(dim, a.rank())?;
    let size = a.shape()[d];
    if start > size {
        return Err(Error::Shape(format!(
            "start out of range (expected to be in range of [-{size}, {size}], but got {start})"
        )));
    }
    if len > size - start {
        return Err(Error::Shape(format!(
            "start ({start}) + length ({len}) exceeds dimension size ({size})."
        )));
    }
    let mut l = a.layout;
    l.shape[d] = len;
    // An empty view keeps its offset: a tensor with a 0-size dim may have no storage at all,
    // and an offset past its end would make even an empty read go out of bounds.
    if l.numel() > 0 {
        l.offset += start * l.strides[d];
    }
    Ok(a.with_layout(l))
}

/// Broadcasts to `shape` without copying (zero strides).
pub(crate) fn expand(a: &RawTensor, shape: &[usize]) -> Result<RawTensor> {
    Dims::shape(shape)?;
    Ok(a.with_layout(a.layout.broadcast_to(shape)?))
}
