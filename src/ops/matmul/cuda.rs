//! CUDA side of matrix products: cuBLAS strided-batched GEMM on views, no copies.
//!
//! Transposed views are handed to cuBLAS with its transpose flags, broadcast batch dims with a
//! batch stride of 0, and batch dims that do not merge into one stride become a short host loop
//! of GEMM calls (all queued, none waited for). Only an operand whose matrices have no unit
//! stride at all is copied to a contiguous tensor first.

use super::MatmulPlan;
use crate::backend::cuda::blas::{self, GemmOperand};
use crate::backend::cuda::context::GpuContext;
use crate::backend::cuda::{launch, memory};
use crate::core::error::Result;
use crate::core::layout::{contiguous_strides, Layout};
use crate::core::raw::RawTensor;
use crate::ops::copy::cuda::contiguous;

/// `(row_major, ld)` of the matrices of a `[batch..., rows, cols]` layout, if cuBLAS can read
/// them in place.
fn blas_layout(l: &Layout) -> Option<(bool, usize)> {
    let r = l.rank();
    blas::matrix_layout(
        l.shape[r - 2],
        l.shape[r - 1],
        l.strides[r - 2],
        l.strides[r - 1],
    )
}

pub(crate) fn matmul(
    gpu: &'static GpuContext,
    a: &RawTensor,
    b: &RawTensor,
    plan: &MatmulPlan,
) -> Result<RawTensor> {
    let (Some(la), Some(lb)) = (blas_layout(&plan.a), blas_layout(&plan.b)) else {
        // A matrix with no unit stride (a broadcast or every-other-column view): copy that
        // operand, then plan again (its vector and batch dims are unchanged).
        let a2 = if blas_layout(&plan.a).is_none() {
            contiguous(gpu, a)?
        } else {
            a.clone()
        };
        let b2 = if blas_layout(&plan.b).is_none() {
            contiguous(gpu, b)?
        } else {
            b.clone()
        };
        return matmul(gpu, &a2, &b2, &super::plan(&a2, &b2)?);
    };
    let (m, k, n) = (plan.m, plan.k, plan.n);
    let batches: usize = plan.batch.iter().product();
    let numel = batches * m * n;
    let out = if k == 0 {
        memory::alloc_zeros_dtype(gpu, a.dtype, numel)?
    } else {
        memory::alloc_dtype(gpu, a.dtype, numel)?
    };
    if numel > 0 && k > 0 {
        let br = plan.batch.len();
        // Batch strides of a, b and the (contiguous) output, merged where they allow.
        let mut c_shape = plan.batch;
        c_shape.push(m)?;
        c_shape.push(n)?;
        let c_strides = contiguous_strides(&c_shape);
        let batch = launch::strided_layout::<3>(
            &plan.batch,
            [
                &plan.a.strides[..br],
                &plan.b.strides[..br],
                &c_strides[..br],
            ],
        );
        let rank = batch.rank as usize;
        let (inner, inner_strides) = if rank == 0 {
            (1usize, [0usize; 3])
        } else {
            (
                batch.shape[rank - 1] as usize,
                [0, 1, 2].map(|k| batch.strides[k][rank - 1] as usize),
            )
        };
        let outer: usize = batch.shape[..rank.saturating_sub(1)]
            .iter()
            .product::<u64>() as usize;
        let size = a.dtype.size_in_bytes() as u64;
        let (pa, pb, pc) = (memory::ptr(a)?, memory::ptr(b)?, out.device_ptr());
        for o in 0..outer {
            // Offsets of outer batch index `o` (row-major over the merged outer dims).
            let mut rest = o;
            let mut offs = [0usize; 3];
            for d in (0..rank.saturating_sub(1)).rev() {
                let size_d = batch.shape[d] as usize;
                let i = rest % size_d;
                rest /= size_d;
                for (k, off) in offs.iter_mut().enumerate() {
                    *off += i * batch.strides[k][d] as usize;
                }
            }
            let operand =
                |ptr: u64, off: usize, (row_major, ld): (bool, usize), stride: usize| GemmOperand {
                    ptr: ptr + off as u64 * size,
                    row_major,
                    ld,
                    batch_stride: stride,
                };
            let ga = operand(pa, offs[0], la, inner_strides[0]);
            let gb = operand(pb, offs[1], lb, inner_strides[1]);
            let c = pc + offs[2] as u64 * size;
            blas::gemm_dtype(
                gpu,
                a.dtype,
                (m, n, k),
                ga,
                gb,
                c,
                inner_strides[2],
                inner,
                0.0,
            )?;
        }
    }
    Ok(memory::tensor_from_storage(
        out,
        plan.out_shape,
        gpu.ordinal,
    ))
}

impl super::MatmulKernel for crate::ops::backend::CudaBackend {
    #[inline(always)]
    fn matmul(self, a: &RawTensor, b: &RawTensor, plan: &MatmulPlan) -> Result<RawTensor> {
        matmul(self.0, a, b, plan)
    }
}
