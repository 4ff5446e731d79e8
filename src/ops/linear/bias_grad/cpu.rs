//! CPU kernel of the bias gradient: rows added into one accumulator row.

use crate::backend::cpu::parallel::for_each_chunk_mut;
use crate::core::error::Result;
use crate::core::layout::Dims;
use crate::core::raw::RawTensor;
use crate::core::{DType, Float};
use crate::ops::half;

/// Rows per parallel task.
const ROWS_PER_TASK: usize = 64;

fn add_rows<T: Float>(acc: &mut [T], rows: &[T]) {
    for row in rows.chunks_exact(acc.len()) {
        for (a, &x) in acc.iter_mut().zip(row) {
            *a += x;
        }
    }
}

fn typed<T: Float>(grad: &RawTensor) -> Result<RawTensor> {
    let n = *grad.shape().last().expect("rank >= 1");
    let g = crate::ops::copy::cpu::contiguous_or_self(grad)?;
    let range = g.layout.contiguous_range().expect("contiguous");
    let data = &g.cpu_slice::<T>().expect("cpu")[range];
    let rows = data.len().checked_div(n).unwrap_or(0);
    let mut out = crate::core::pool::zeroed_vec::<T>(n)?;
    if n > 0 {
        if rows * n >= crate::backend::cpu::strided::PARALLEL_THRESHOLD && !cfg!(miri) {
            // One partial sum per block of rows, added in order (the same bits whatever the
            // thread count).
            let blocks = rows.div_ceil(ROWS_PER_TASK);
            let mut partial = crate::core::pool::zeroed_vec::<T>(blocks * n)?;
            for_each_chunk_mut(&mut partial, n, &|start, acc| {
                let b = start / n;
                add_rows(
                    acc,
                    &data[b * ROWS_PER_TASK * n..((b + 1) * ROWS_PER_TASK).min(rows) * n],
                );
            });
            for acc in partial.chunks_exact(n) {
                for (o, &x) in out.iter_mut().zip(acc) {
                    *o += x;
                }
            }
        } else {
            add_rows(&mut out, data);
        }
    }
    Ok(RawTensor::from_cpu_vec(out, Dims::shape(&[n])?))
}

pub(crate) fn bias_grad(grad: &RawTensor) -> Result<RawTensor> {
    match grad.dtype {
        DType::F32 => typed::<f32>(grad),
        DType::F64 => typed::<f64>(grad),
        DType::F16 | DType::BF16 => half::narrow(typed::<f32>(&half::widen(grad)?)?, grad.dtype),
        _ => unreachable!("checked in bias_grad"),
    }
}

impl super::BiasGradKernel for crate::ops::backend::CpuBackend {
    #[inline(always)]
    fn bias_grad(self, grad: &RawTensor) -> Result<RawTensor> {
        bias_grad(grad)
    }
}
