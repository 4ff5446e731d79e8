//! CUDA side of reductions (`kernels/reduce.cu`).
//!
//! The plan's permuted layout (`[kept..., reduced...]`) is passed as strides, so reducing any
//! dims of any view needs no copy. The host picks the kernel shape:
//! - reduced elements contiguous (or few outputs): one block per output, threads striding over
//!   the reduced elements (`reduce_rows_*`);
//! - many outputs and a strided reduction (a sum over dim 0): one thread per output
//!   (`reduce_cols_*`), neighbouring threads reading neighbouring memory;
//! - when that leaves the GPU under-occupied (one big sum, few long columns) the reduced range
//!   is split over more blocks (`gridDim.y`), whose partial results a second kernel combines
//!   (`reduce_finish_*`), so every reduction uses the whole GPU.

use super::{ReduceOp, ReducePlan};
use crate::backend::cuda::context::GpuContext;
use crate::backend::cuda::kernels::KernelFile;
use crate::backend::cuda::launch::{self, Kernel};
use crate::backend::cuda::memory;
use crate::core::cuda_storage::{slice_ptr, suffix, with_dtype, CudaElement};
use crate::core::error::Result;
use crate::core::layout::MAX_DIMS;
use crate::core::raw::RawTensor;
use crate::core::DType;
use crate::ops::kernels::{typed, NUMERIC_TYPES};
use cudarc::driver::{DeviceRepr, LaunchConfig};

/// `kernels/reduce.cu`: `reduce_{rows,cols,finish}_{sum,max,min}_<T>` and
/// `argreduce_{rows,cols,finish}_{max,min}_<T>` (also the column sums of `ops::linear::bias_grad`).
pub(crate) static KERNELS: KernelFile = KernelFile {
    file: "reduce.cu",
    source: include_str!("../../../kernels/reduce.cu"),
    names: || {
        let mut n = Vec::new();
        for op in ["sum", "max", "min"] {
            for kind in ["rows", "cols", "finish"] {
                typed(&mut n, &format!("reduce_{kind}_{op}"), &NUMERIC_TYPES);
            }
        }
        for op in ["max", "min"] {
            for kind in ["rows", "cols", "finish"] {
                typed(&mut n, &format!("argreduce_{kind}_{op}"), &NUMERIC_TYPES);
            }
        }
        n
    },
};

/// `ReduceLayout` of `kernels/reduce.cu`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct ReduceLayout {
    kept_rank: u32,
    red_rank: u32,
    small: u32,
    pad: u32,
    kept_shape: [u64; MAX_DIMS],
    kept_strides: [u64; MAX_DIMS],
    red_shape: [u64; MAX_DIMS],
    red_strides: [u64; MAX_DIMS],
}

// SAFETY: `#[repr(C)]` with only integer fields, laid out as `ReduceLayout` in
// `kernels/reduce.cu` (four u32, then u64 arrays).
unsafe impl DeviceRepr for ReduceLayout {}

/// The kept and reduced halves of the plan's permuted layout, each with its dims merged.
fn layout(plan: &ReducePlan) -> ReduceLayout {
    let l = &plan.permuted;
    let rank = l.rank();
    // The first split point whose halves hold `outputs` and `reduced` elements (when several
    // do, the dims between them have size 1 and belong to either half).
    let product = |r: std::ops::Range<usize>| l.shape[r].iter().product::<usize>();
    let split = (0..=rank)
        .find(|&s| product(0..s) == plan.outputs && product(s..rank) == plan.reduced)
        .unwrap_or(rank);
    let kept = launch::strided_layout::<1>(&l.shape[..split], [&l.strides[..split]]);
    let red = launch::strided_layout::<1>(&l.shape[split..], [&l.strides[split..]]);
    ReduceLayout {
        kept_rank: kept.rank,
        red_rank: red.rank,
        small: kept.small & red.small,
        pad: 0,
        kept_shape: kept.shape,
        kept_strides: kept.strides[0],
        red_shape: red.shape,
        red_strides: red.strides[0],
    }
}

/// How the reduction is spread over the GPU.
struct Shape {
    rows: bool,
    cfg: LaunchConfig,
    chunk: usize,
    split: usize,
}

fn plan_launch(gpu: &GpuContext, l: &ReduceLayout, outputs: usize, reduced: usize) -> Shape {
    let target = gpu.sm_count as usize * 2048;
    let red_contiguous = l.red_rank > 0 && l.red_strides[l.red_rank as usize - 1] == 1;
    // Blocks per output when the reduced elements are contiguous (coalesced reads) or the
    // outputs are too few to keep threads busy; otherwise, and for short contiguous runs that
    // would idle most of a warp, a thread per output.
    let rows = l.red_rank > 0 && (outputs < 2048 || (red_contiguous && reduced > 16));
    let (threads, blocks, want_split) = if rows {
        let threads = launch::block_for(reduced, 256);
        let blocks = launch::row_blocks(gpu, outputs, threads) as usize;
        let busy = blocks * threads as usize;
        let split = if busy < target && reduced >= threads as usize * 8 {
            target
                .div_ceil(busy)
                .min(reduced.div_ceil(threads as usize * 8))
        } else {
            1
        };
        (threads, blocks, split)
    } else {
        let threads = launch::BLOCK;
        let blocks = outputs
            .div_ceil(threads as usize)
            .clamp(1, gpu.sm_count as usize * 8);
        let split = if outputs < target && reduced >= 64 {
            target.div_ceil(outputs.max(1)).min(reduced.div_ceil(32))
        } else {
            1
        };
        (threads, blocks, split)
    };
    let split = want_split.clamp(1, 65535);
    let chunk = reduced.div_ceil(split).max(1);
    let split = reduced.div_ceil(chunk).max(1);
    Shape {
        rows,
        cfg: LaunchConfig {
            grid_dim: (blocks as u32, split as u32, 1),
            block_dim: (threads, 1, 1),
            shared_mem_bytes: 0,
        },
        chunk,
        split,
    }
}

/// The type the reduce kernels accumulate a dtype in (`A = Acc<T>::type` of
/// `kernels/common.cuh`): `f32` for `f16`/`bf16`, the dtype itself otherwise.
fn accumulator(dtype: DType) -> DType {
    if dtype.is_half() {
        DType::F32
    } else {
        dtype
    }
}

fn reduce_typed<T: CudaElement>(
    gpu: &'static GpuContext,
    a: &RawTensor,
    plan: &ReducePlan,
    op: ReduceOp,
) -> Result<RawTensor> {
    let outputs = plan.outputs;
    let out = memory::alloc::<T>(gpu, outputs)?;
    if outputs > 0 {
        let l = layout(plan);
        let s = plan_launch(gpu, &l, outputs, plan.reduced);
        let base = match op {
            ReduceOp::Sum | ReduceOp::Mean => "sum",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
        };
        let kind = if s.rows { "rows" } else { "cols" };
        // Partial results have the kernels' accumulator type (`f32` for `f16`/`bf16`).
        let partial = if s.split > 1 {
            Some(memory::alloc_dtype(
                gpu,
                accumulator(T::DTYPE),
                outputs * s.split,
            )?)
        } else {
            None
        };
        let pp = partial.as_ref().map_or(0, |p| p.device_ptr());
        let po = slice_ptr(&out);
        let divide = (op == ReduceOp::Mean) as u32;
        let name = format!("reduce_{kind}_{base}_{}", T::SUFFIX);
        // reduce_{rows,cols}_<op>_<T>(T* out, A* partial, const T* in, ReduceLayout L,
        // u64 outputs, u64 reduced, u64 chunk, u32 divide): `out` holds `outputs` elements and
        // `partial` `outputs * gridDim.y` (only written when gridDim.y > 1).
        launch::reduction(
            gpu,
            Kernel::new(&KERNELS, &name, "cuLaunchKernel(reduce)"),
            [po, pp, memory::ptr(a)?],
            &l,
            (outputs as u64, plan.reduced as u64, s.chunk as u64, divide),
            s.cfg,
        )?;
        if s.split > 1 {
            let name = format!("reduce_finish_{base}_{}", T::SUFFIX);
            // reduce_finish_<op>_<T>(T* out, const A* partial, u64 outputs, u64 split,
            // u64 reduced, u32 divide): `partial` holds outputs * split values written by the
            // kernel queued just before on this stream.
            launch::flat(
                gpu,
                Kernel::new(&KERNELS, &name, "cuLaunchKernel(reduce_finish)"),
                [po, pp],
                outputs,
                (s.split as u64, plan.reduced as u64, divide),
                1,
            )?;
        }
        drop(partial);
    }
    Ok(memory::tensor(out, plan.out_shape, gpu.ordinal))
}

pub(crate) fn reduce(
    gpu: &'static GpuContext,
    a: &RawTensor,
    plan: &ReducePlan,
    op: ReduceOp,
) -> Result<RawTensor> {
    match a.dtype {
        DType::Bool => Err(crate::Error::UnsupportedDType {
            op: op.name(),
            dtype: DType::Bool,
        }),
        dtype => with_dtype!(dtype, "reduce", |T| reduce_typed::<T>(gpu, a, plan, op)),
    }
}

pub(crate) fn arg_reduce(
    gpu: &'static GpuContext,
    a: &RawTensor,
    plan: &ReducePlan,
    max: bool,
) -> Result<RawTensor> {
    let outputs = plan.outputs;
    let out = memory::alloc::<i64>(gpu, outputs)?;
    if outputs > 0 {
        let l = layout(plan);
        let s = plan_launch(gpu, &l, outputs, plan.reduced);
        let op = if max { "max" } else { "min" };
        let kind = if s.rows { "rows" } else { "cols" };
        let values = if s.split > 1 {
            Some(memory::alloc_dtype(
                gpu,
                accumulator(a.dtype),
                outputs * s.split,
            )?)
        } else {
            None
        };
        let indices = if s.split > 1 {
            Some(memory::alloc::<i64>(gpu, outputs * s.split)?)
        } else {
            None
        };
        let (pv, pi) = (
            values.as_ref().map_or(0, |v| v.device_ptr()),
            indices.as_ref().map_or(0, slice_ptr),
        );
        let po = slice_ptr(&out);
        let name = format!("argreduce_{kind}_{op}_{}", suffix(a.dtype));
        // argreduce_{rows,cols}_<op>_<T>(i64* out, A* pv, i64* pi, const T* in, ReduceLayout L,
        // u64 outputs, u64 reduced, u64 chunk): `out` holds `outputs` indices, `pv`/`pi`
        // `outputs * gridDim.y` entries (written only when gridDim.y > 1).
        launch::reduction(
            gpu,
            Kernel::new(&KERNELS, &name, "cuLaunchKernel(argreduce)"),
            [po, pv, pi, memory::ptr(a)?],
            &l,
            (outputs as u64, plan.reduced as u64, s.chunk as u64),
            s.cfg,
        )?;
        if s.split > 1 {
            let name = format!("argreduce_finish_{op}_{}", suffix(a.dtype));
            // argreduce_finish_<op>_<T>(i64* out, const A* pv, const i64* pi, u64 outputs,
            // u64 split): the partial arrays hold outputs * split entries written by the
            // kernel queued just before.
            launch::flat(
                gpu,
                Kernel::new(&KERNELS, &name, "cuLaunchKernel(argreduce_finish)"),
                [po, pv, pi],
                outputs,
                (s.split as u64,),
                1,
            )?;
        }
        drop((values, indices));
    }
    Ok(memory::tensor(out, plan.out_shape, gpu.ordinal))
}

impl super::ReduceKernel for crate::ops::backend::CudaBackend {
    #[inline(always)]
    fn reduce(self, a: &RawTensor, plan: &ReducePlan, op: ReduceOp) -> Result<RawTensor> {
        reduce(self.0, a, plan, op)
    }
    #[inline(always)]
    fn arg_reduce(self, a: &RawTensor, plan: &ReducePlan, max: bool) -> Result<RawTensor> {
        arg_reduce(self.0, a, plan, max)
    }
}
