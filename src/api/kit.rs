//! The device-generic ops backward rules are written with: thin calls into the same kernels
//! the tensor fronts use (`crate::ops`), so every rule runs wherever those ops run.

use crate::core::error::Result;
use crate::core::layout::Dims;
use crate::core::raw::{Operand, RawTensor};
use crate::ops::creation::{create, Fill};
use crate::ops::{self, BinaryOp, CompareOp, ReduceOp, UnaryOp};
use crate::tensor::Scalar;

/// `a op b` with broadcasting; `a`'s buffer is reused when it is owned and unique.
pub(crate) fn binary(a: RawTensor, b: &RawTensor, op: BinaryOp) -> Result<RawTensor> {
    ops::binary::binary(Operand::Owned(a), Operand::Borrowed(b), op)
}

/// `a * b`.
pub(crate) fn mul(a: RawTensor, b: &RawTensor) -> Result<RawTensor> {
    binary(a, b, BinaryOp::Mul)
}

/// `a / b`.
pub(crate) fn div(a: RawTensor, b: &RawTensor) -> Result<RawTensor> {
    binary(a, b, BinaryOp::Div)
}

/// `a - b`.
pub(crate) fn sub(a: RawTensor, b: &RawTensor) -> Result<RawTensor> {
    binary(a, b, BinaryOp::Sub)
}

/// `a op s` (or `s op a` when `scalar_first`).
pub(crate) fn scalar(a: RawTensor, s: f64, op: BinaryOp, scalar_first: bool) -> Result<RawTensor> {
    ops::binary::binary_scalar(Operand::Owned(a), Scalar::Float(s), op, scalar_first)
}

/// `a * s`.
pub(crate) fn mul_scalar(a: RawTensor, s: f64) -> Result<RawTensor> {
    scalar(a, s, BinaryOp::Mul, false)
}

/// `op(a)`.
pub(crate) fn unary(a: RawTensor, op: UnaryOp) -> Result<RawTensor> {
    ops::unary::unary(Operand::Owned(a), op)
}

/// `-a`.
pub(crate) fn neg(a: RawTensor) -> Result<RawTensor> {
    unary(a, UnaryOp::Neg)
}

/// `(a op s)` as a 0/1 tensor of `a`'s element type.
pub(crate) fn mask_scalar(a: &RawTensor, s: f64, op: CompareOp) -> Result<RawTensor> {
    ops::copy::cast(
        &ops::binary::compare_scalar(a, Scalar::Float(s), op)?,
        a.dtype,
    )
}

/// `(a op b)` as a 0/1 tensor of `a`'s element type.
pub(crate) fn mask(a: &RawTensor, b: &RawTensor, op: CompareOp) -> Result<RawTensor> {
    ops::copy::cast(&ops::binary::compare(a, b, op)?, a.dtype)
}

/// Zeros of `shape` with `like`'s element type and device.
pub(crate) fn zeros(shape: &[usize], like: &RawTensor) -> Result<RawTensor> {
    create(
        Dims::shape(shape)?,
        like.dtype,
        like.device,
        Fill::Constant(Scalar::Int(0)),
    )
}

/// A 0-dim tensor holding `value`, with `like`'s element type and device.
pub(crate) fn full_scalar(value: f64, like: &RawTensor) -> Result<RawTensor> {
    create(
        Dims::EMPTY,
        like.dtype,
        like.device,
        Fill::Constant(Scalar::Float(value)),
    )
}

/// `shape` as the `isize`s `reshape` takes.
pub(crate) fn signed(shape: &[usize]) -> Vec<isize> {
    shape.iter().map(|&s| s as isize).collect()
}

/// `a` seen with `shape` (a view when the strides allow, else a copy).
pub(crate) fn reshape(a: &RawTensor, shape: &[usize]) -> Result<RawTensor> {
    if a.shape() == shape {
        return Ok(a.clone());
    }
    ops::shape::reshape(a, &signed(shape))
}

/// Sums a gradient of a broadcast result back to the shape of the input that was broadcast.
pub(crate) fn sum_to(g: RawTensor, shape: &[usize]) -> Result<RawTensor> {
    if g.shape() == shape {
        return Ok(g);
    }
    let lead = g.rank() - shape.len();
    let mut dims: Vec<isize> = (0..lead as isize).collect();
    for (i, &s) in shape.iter().enumerate() {
        if s == 1 && g.shape()[lead + i] != 1 {
            dims.push((lead + i) as isize);
        }
    }
    let summed = if dims.is_empty() {
        g
    } else {
        ops::reduce::reduce(&g, &dims, true, ReduceOp::Sum)?
    };
    reshape(&summed, shape)
}

/// Spreads the gradient of a reduction over `dims` back over the input's `shape` (a broadcast
/// view, no copy). `keepdim` says whether the reduced dims are still in `g`.
pub(crate) fn expand_reduced(
    g: &RawTensor,
    shape: &[usize],
    dims: &[usize],
    keepdim: bool,
) -> Result<RawTensor> {
    let kept: Vec<usize> = (0..shape.len())
        .map(|d| if dims.contains(&d) { 1 } else { shape[d] })
        .collect();
    let g = if keepdim {
        g.clone()
    } else {
        reshape(g, &kept)?
    };
    ops::shape::expand(&g, shape)
}

/// The dims a reduction over `dims` (empty: all) of a rank-`rank` tensor folds, normalised.
pub(crate) fn reduced_dims(dims: &[isize], rank: usize) -> Result<Vec<usize>> {
    if dims.is_empty() {
        return Ok((0..rank).collect());
    }
    let mut out = Vec::with_capacity(dims.len());
    for &d in dims {
        if rank == 0 {
            crate::core::layout::wrap_dim(d, 0)?;
            continue;
        }
        out.push(crate::core::layout::wrap_dim(d, rank)?);
    }
    Ok(out)
}
