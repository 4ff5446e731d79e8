//! Reductions over dimensions: sum, mean, max, min, argmax, argmin.

pub(super) mod cpu;
/// The fused norm pass of `clip_grad_norm_` (`nn::utils`): the sum of squares of every
/// gradient of a model in one pass that reads each element once. CPU only for now: on a GPU,
/// `clip_grad_norm_` keeps its composed form (per-gradient norms on the device, no host sync).
pub(crate) mod cpu_sum_of_squares;
pub(super) mod cuda;

use crate::core::error::{Error, Result};
use crate::core::layout::{wrap_dim, Dims, Layout};
use crate::core::raw::RawTensor;
use crate::core::DType;

/// A reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Sum of the elements.
    Sum,
    /// Arithmetic mean (floating point only).
    Mean,
    /// Largest element (NaN propagates).
    Max,
    /// Smallest element (NaN propagates).
    Min,
}

impl ReduceOp {
    pub(crate) const fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Mean => "mean",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
        }
    }
}

/// The input seen with reduced dims moved last, and the output's shape.
pub(crate) struct ReducePlan {
    /// Input layout permuted to `[kept..., reduced...]`.
    pub(crate) permuted: Layout,
    /// Number of outputs (product of kept sizes).
    pub(crate) outputs: usize,
    /// Elements folded into each output.
    pub(crate) reduced: usize,
    /// The output shape (with or without the kept 1s).
    pub(crate) out_shape: Dims,
}

/// Normalises `dims` (negative allowed; empty means all) and plans the walk.
pub(crate) fn plan(a: &RawTensor, dims: &[isize], keepdim: bool) -> Result<ReducePlan> {
    let rank = a.rank();
    let mut reduce_mask = [false; crate::core::layout::MAX_DIMS];
    if dims.is_empty() {
        reduce_mask[..rank].fill(true);
    }
    for &d in dims {
        let d = wrap_dim(d, rank)?;
        if rank == 0 {
            continue;
        }
        if reduce_mask[d] {
            return Err(Error::Shape(format!(
                "dim {d} appears multiple times in the list of dims"
            )));
        }
        reduce_mask[d] = true;
    }
    let mut order = Vec::with_capacity(rank);
    let mut out_shape = Dims::EMPTY;
    let (mut outputs, mut reduced) = (1usize, 1usize);
    for (d, (&reduce, &size)) in reduce_mask.iter().zip(a.shape()).enumerate() {
        if !reduce {
            order.push(d);
            out_shape.push(size)?;
            outputs *= size;
        } else if keepdim {
            out_shape.push(1)?;
        }
    }
    for (d, (&reduce, &size)) in reduce_mask.iter().zip(a.shape()).enumerate() {
        if reduce {
            order.push(d);
            reduced *= size;
        }
    }
    Ok(ReducePlan {
        permuted: a.layout.permute(&order)?,
        outputs,
        reduced,
        out_shape,
    })
}

/// `op` over `dims` (all dims when empty).
pub(crate) fn reduce(
    a: &RawTensor,
    dims: &[isize],
    keepdim: bool,
    op: ReduceOp,
) -> Result<RawTensor> {
    if op == ReduceOp::Mean && !a.dtype.is_float() {
        return Err(Error::Shape(format!(
            "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {}",
            a.dtype
        )));
    }
    if a.dtype == DType::Bool {
        return Err(Error::UnsupportedDType {
            op: op.name(),
            dtype: a.dtype,
        });
    }
    let plan = plan(a, dims, keepdim)?;
    if plan.reduced == 0 && matches!(op, ReduceOp::Max | ReduceOp::Min) && plan.outputs > 0 {
        return Err(Error::Shape(format!(
            "{}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.",
            op.name()
        )));
    }
    dispatch!([a], |be| be.reduce(a, &plan, op))
}

/// Index of the largest (`max = true`) or smallest element along `dim`, as `i64`.
pub(crate) fn arg_reduce(a: &RawTensor, dim: isize, keepdim: bool, max: bool) -> Result<RawTensor> {
    if a.dtype == DType::Bool {
        // PyTorch's kernel names, per device.
        return Err(Error::UnsupportedDType {
            op: match (max, a.device.is_cpu()) {
                (true, true) => "argmax_cpu",
                (false, true) => "argmin_cpu",
                (true, false) => "argmax_cuda",
                (false, false) => "argmin_cuda",
            },
            dtype: a.dtype,
        });
    }
    let plan = plan(a, &[dim], keepdim)?;
    if plan.reduced == 0 {
        return Err(Error::Shape(format!(
            "{}(): Expected reduction dim {} to have non-zero size.",
            if max { "argmax" } else { "argmin" },
            wrap_dim(dim, a.rank())?
        )));
    }
    dispatch!([a], |be| be.arg_reduce(a, &plan, max))
}

/// The kernel entries of this family, one impl per backend: [`CpuBackend`](crate::ops::backend::CpuBackend)
/// in `cpu.rs`, [`CudaBackend`](crate::ops::backend::CudaBackend) in `cuda.rs`. The operands are on
/// that backend's device (`dispatch!` checked it) and the functions above planned shapes
/// and checked dtypes.
pub(crate) trait ReduceKernel {
    fn reduce(self, a: &RawTensor, plan: &ReducePlan, op: ReduceOp) -> Result<RawTensor>;
    fn arg_reduce(self, a: &RawTensor, plan: &ReducePlan, max: bool) -> Result<RawTensor>;
}
