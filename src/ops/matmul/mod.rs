//! Matrix products: 2-D, batched with broadcasting batch dims, and vectors, like `torch.matmul`.
//! Transposed views are used through their strides, never copied.

pub(super) mod cpu;
mod cpu_bf16;
pub(super) mod cuda;

pub(crate) use cpu::{gemm_into, Gemm, MatrixView};

pub(crate) use cpu_bf16::Kernel as Bf16Kernel;

/// The kernel `bf16` products run on here ([`cpu_bf16::native`]), or `None`: widened to `f32`.
pub(crate) fn bf16_kernel() -> Option<Bf16Kernel> {
    cpu_bf16::native()
}

use crate::core::error::{Error, Result};
use crate::core::layout::{broadcast_shapes, Dims, Layout};
use crate::core::raw::RawTensor;
use crate::core::DType;

/// The plan of one (batched) product `[..., m, k] @ [..., k, n]`.
pub(crate) struct MatmulPlan {
    pub(crate) m: usize,
    pub(crate) k: usize,
    pub(crate) n: usize,
    /// Broadcast batch shape.
    pub(crate) batch: Dims,
    /// `a` viewed as `[batch..., m, k]` (batch dims broadcast).
    pub(crate) a: Layout,
    /// `b` viewed as `[batch..., k, n]`.
    pub(crate) b: Layout,
    /// The result's shape (vector dims removed again).
    pub(crate) out_shape: Dims,
}

/// Checks shapes and dtypes as PyTorch does and plans the product.
pub(crate) fn plan(a: &RawTensor, b: &RawTensor) -> Result<MatmulPlan> {
    if a.dtype != b.dtype {
        return Err(Error::Shape(format!(
            "expected m1 and m2 to have the same dtype, but got: {} != {}",
            a.dtype.type_meta_name(),
            b.dtype.type_meta_name()
        )));
    }
    // PyTorch's CPU kernels take integers (exact, `i64` here), its CUDA ones do not.
    let cpu_int = a.dtype == DType::I64 && a.device.is_cpu();
    if !a.dtype.is_float() && !cpu_int {
        return Err(Error::UnsupportedDType {
            op: if a.device.is_cpu() {
                "addmm_impl_cpu_"
            } else {
                "addmm_cuda"
            },
            dtype: a.dtype,
        });
    }
    if a.rank() == 0 || b.rank() == 0 {
        return Err(Error::Shape(format!(
            "both arguments to matmul need to be at least 1D, but they are {}D and {}D",
            a.rank(),
            b.rank()
        )));
    }
    // Vectors become matrices: [k] -> [1, k] on the left, [k] -> [k, 1] on the right.
    let la = if a.rank() == 1 {
        a.layout.view(&[1, a.shape()[0]])?.expect("1-D views")
    } else {
        a.layout
    };
    let lb = if b.rank() == 1 {
        b.layout.view(&[b.shape()[0], 1])?.expect("1-D views")
    } else {
        b.layout
    };
    let (ra, rb) = (la.rank(), lb.rank());
    let (m, k1) = (la.shape[ra - 2], la.shape[ra - 1]);
    let (k2, n) = (lb.shape[rb - 2], lb.shape[rb - 1]);
    if k1 != k2 && b.rank() <= 2 {
        // `torch.matmul` folds the leading dims of `a` and calls dot, mv or mm.
        let rows: usize = la.shape[..ra - 1].iter().product();
        return Err(match (a.rank(), b.rank()) {
            (1, 1) => Error::Shape(format!(
                "inconsistent tensor size, expected tensor [{k1}] and src [{k2}] to have the same number of elements, but got {k1} and {k2} elements respectively"
            )),
            (_, 1) => Error::Shape(format!("size mismatch, got input ({rows}), mat ({rows}x{k1}), vec ({k2})")),
            _ => Error::MatmulShape { op: "mm", m: rows, k1, k2, n },
        });
    }
    if ra == 2 && rb == 2 && k1 == k2 {
        // A plain matrix product (the common case): no batch dims to broadcast.
        let mut out_shape = Dims::EMPTY;
        if a.rank() > 1 {
            out_shape.push(m)?;
        }
        if b.rank() > 1 {
            out_shape.push(n)?;
        }
        out_shape.check_shape()?;
        return Ok(MatmulPlan {
            m,
            k: k1,
            n,
            batch: Dims::EMPTY,
            a: la,
            b: lb,
            out_shape,
        });
    }
    // Otherwise batch dims broadcast first, then `bmm` checks the inner sizes.
    let batch = broadcast_shapes(&la.shape[..ra - 2], &lb.shape[..rb - 2])?;
    if k1 != k2 {
        let count: usize = batch.iter().product();
        return Err(Error::BatchMatmulShape {
            batch: count,
            k: k1,
            got_batch: count,
            got_k: k2,
        });
    }
    let mut full_a = batch;
    full_a.push(m)?;
    full_a.push(k1)?;
    let mut full_b = batch;
    full_b.push(k2)?;
    full_b.push(n)?;
    let mut out_shape = batch;
    if a.rank() > 1 {
        out_shape.push(m)?;
    }
    if b.rank() > 1 {
        out_shape.push(n)?;
    }
    out_shape.check_shape()?;
    Ok(MatmulPlan {
        m,
        k: k1,
        n,
        batch,
        a: la.broadcast_to(&full_a)?,
        b: lb.broadcast_to(&full_b)?,
        out_shape,
    })
}

/// `a @ b`.
pub(crate) fn matmul(a: &RawTensor, b: &RawTensor) -> Result<RawTensor> {
    let plan = plan(a, b)?;
    dispatch!([a, b], |be| be.matmul(a, b, &plan))
}

/// The kernel entries of this family, one impl per backend: [`CpuBackend`](crate::ops::backend::CpuBackend)
/// in `cpu.rs`, [`CudaBackend`](crate::ops::backend::CudaBackend) in `cuda.rs`. The operands are on
/// that backend's device (`dispatch!` checked it) and the functions above planned shapes
/// and checked dtypes.
pub(crate) trait MatmulKernel {
    fn matmul(self, a: &RawTensor, b: &RawTensor, plan: &MatmulPlan) -> Result<RawTensor>;
}
