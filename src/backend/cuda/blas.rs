//! cuBLAS: one handle per device on the device's stream, and strided-batched GEMM on views.
//!
//! Tensors are row-major and cuBLAS is column-major, so `C = A @ B` (row-major `[m, n]`) is
//! computed as the column-major `C^T = B^T @ A^T` (`[n, m]`, which is the same memory). Each
//! operand is passed as it lies in memory: a matrix with unit column stride is a row-major
//! matrix (no transpose flag), one with unit row stride (a transposed view) gets the transpose
//! flag. Neither case copies; only a matrix with no unit stride at all needs a contiguous copy,
//! which the callers make.

use super::context::GpuContext;
use crate::core::error::{Error, Result};
use cudarc::cublas::sys::{self, cublasOperation_t, cublasStatus_t};
use cudarc::cublas::CudaBlas;
use cudarc::driver::CudaSlice;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

/// PyTorch's `torch.backends.cuda.matmul.allow_tf32`: off by default (as in PyTorch since
/// 1.12), process-wide.
static ALLOW_TF32: AtomicBool = AtomicBool::new(false);

/// Whether `f32` matrix products on CUDA may use TensorFloat-32 tensor cores (inputs rounded
/// to a 10-bit mantissa, products summed in `f32`): PyTorch's
/// `torch.backends.cuda.matmul.allow_tf32`. Off unless [`set_allow_tf32`] turned it on.
pub fn allow_tf32() -> bool {
    ALLOW_TF32.load(Ordering::Relaxed)
}

/// Lets `f32` matrix products (`matmul`, `bmm`, `linear`) on CUDA use TensorFloat-32, as
/// `torch.backends.cuda.matmul.allow_tf32 = True` does: several times faster on Ampere and
/// later GPUs, with a relative error near `1e-3` instead of `1e-6`. It applies to products
/// queued after the call, in every thread; `f64`, `f16` and `bf16` products and the CPU are
/// unaffected.
///
/// ```
/// devtype::cuda::matmul::set_allow_tf32(true);
/// assert!(devtype::cuda::matmul::allow_tf32());
/// devtype::cuda::matmul::set_allow_tf32(false);
/// ```
pub fn set_allow_tf32(allow: bool) {
    ALLOW_TF32.store(allow, Ordering::Relaxed);
}

/// The cuBLAS handle of one device, created on first use.
pub(crate) struct BlasCache {
    handle: OnceLock<Handle>,
    /// A handle must not be used by two threads at once.
    lock: Mutex<()>,
}

/// A handle and the workspace it was given (dropped in this order).
struct Handle {
    blas: CudaBlas,
    _workspace: CudaSlice<f32>,
}

/// The workspace each handle gets (PyTorch's default on Hopper and later, `:4096:8`).
const WORKSPACE_BYTES: usize = 32 << 20;

impl BlasCache {
    pub(crate) fn new() -> Self {
        BlasCache {
            handle: OnceLock::new(),
            lock: Mutex::new(()),
        }
    }
}

/// Maps a cuBLAS status; allocation failures are out-of-memory errors of `gpu`.
fn status(gpu: &GpuContext, call: &'static str, s: cublasStatus_t) -> Result<()> {
    match s {
        cublasStatus_t::CUBLAS_STATUS_SUCCESS => Ok(()),
        cublasStatus_t::CUBLAS_STATUS_ALLOC_FAILED => Err(super::memory::out_of_memory(gpu, 0)),
        other => Err(Error::Cuda {
            context: call,
            name: format!("{other:?}"),
            code: other as i32,
        }),
    }
}

fn handle(gpu: &GpuContext) -> Result<&CudaBlas> {
    if let Some(h) = gpu.blas.handle.get() {
        return Ok(&h.blas);
    }
    gpu.not_capturing("cublasCreate")?;
    // `Err(MissingLibrary)` or `Err(BrokenLibrary)` rather than a cudarc panic.
    super::loader::cublas()?;
    gpu.bind()?;
    let create = || {
        super::loader::contain("cublasCreate", || {
            CudaBlas::new(gpu.stream.clone()).map_err(|e| match status(gpu, "cublasCreate", e.0) {
                Err(err) => err,
                Ok(()) => Error::Cuda {
                    context: "cublasCreate",
                    name: format!("{:?}", e.0),
                    code: e.0 as i32,
                },
            })
        })
    };
    // Creating the handle allocates device memory (a workspace) outside devtype's pool: on a
    // full device it fails with ALLOC_FAILED (out of memory) or, when the runtime cannot set
    // itself up, NOT_INITIALIZED. Both are retried once after the pool's cache is released.
    let not_initialized = |e: &Error| {
        matches!(e, Error::Cuda { context: "cublasCreate", name, .. }
            if name.contains("NOT_INITIALIZED"))
    };
    let blas =
        super::memory::retry_after_oom(create, not_initialized, || super::memory::reclaim(gpu))?;
    // Half-precision GEMMs sum in f32 from start to end: without this flag cuBLAS may split `k`
    // and add the partial sums in the 16-bit output type (what PyTorch allows by default,
    // `allow_fp16_reduced_precision_reduction`). With it, a GPU product is the CPU's up to the
    // order of the f32 additions and the final rounding.
    // SAFETY: the handle was just created and is valid; setting its math mode has no other
    // precondition.
    status(gpu, "cublasSetMathMode", unsafe {
        sys::cublasSetMathMode(
            *blas.handle(),
            sys::cublasMath_t::CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION,
        )
    })?;
    // Another thread may have won the race; its handle is used and this one dropped.
    // A workspace of the handle's own, as PyTorch gives every handle: without one, cuBLAS takes
    // scratch memory as it goes, which inside a CUDA graph capture would be graph memory.
    // Allocated outside any capture (`not_capturing` above), before the handle is shared.
    let workspace = super::memory::alloc::<f32>(gpu, WORKSPACE_BYTES / 4)?;
    // SAFETY: the handle is valid and not yet shared; the workspace is a live device buffer of
    // WORKSPACE_BYTES bytes on this device that outlives the handle (`Handle`'s field order).
    status(gpu, "cublasSetWorkspace", unsafe {
        sys::cublasSetWorkspace_v2(
            *blas.handle(),
            crate::core::cuda_storage::slice_ptr(&workspace) as *mut std::ffi::c_void,
            WORKSPACE_BYTES,
        )
    })?;
    let _ = gpu.blas.handle.set(Handle {
        blas,
        _workspace: workspace,
    });
    Ok(&gpu.blas.handle.get().expect("set above").blas)
}

/// How a `rows x cols` matrix with strides `(rs, cs)` can be handed to cuBLAS without a copy:
/// `Some((true, ld))` row-major (element `(r, c)` at `r * ld + c`), `Some((false, ld))`
/// column-major (at `c * ld + r`), `None` when it needs a contiguous copy first.
pub(crate) fn matrix_layout(
    rows: usize,
    cols: usize,
    rs: usize,
    cs: usize,
) -> Option<(bool, usize)> {
    let row_major = (cols <= 1 || cs == 1) && (rows <= 1 || rs >= cols.max(1));
    if row_major {
        return Some((true, if rows <= 1 { cols.max(1) } else { rs }));
    }
    let col_major = (rows <= 1 || rs == 1) && (cols <= 1 || cs >= rows.max(1));
    if col_major {
        return Some((false, if cols <= 1 { rows.max(1) } else { cs }));
    }
    None
}

/// One GEMM operand: device address of the first matrix, its layout from [`matrix_layout`],
/// and the distance between consecutive matrices of the batch (0 to reuse one matrix).
#[derive(Clone, Copy, Debug)]
pub(crate) struct GemmOperand {
    pub(crate) ptr: u64,
    pub(crate) row_major: bool,
    pub(crate) ld: usize,
    pub(crate) batch_stride: usize,
}

/// Element types cuBLAS multiplies.
pub(crate) trait BlasFloat: Copy {
    /// Calls `cublas{S,D}gemmStridedBatched` (`cublasGemmStridedBatchedEx` for f16/bf16).
    ///
    /// # Safety
    /// The pointers and dimensions must describe memory of this element type on the handle's
    /// device, valid until the queued work has run.
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm_strided_batched(
        handle: sys::cublasHandle_t,
        ops: (cublasOperation_t, cublasOperation_t),
        mnk: (i32, i32, i32),
        alpha: Self,
        a: (u64, i32, i64),
        b: (u64, i32, i64),
        beta: Self,
        c: (u64, i32, i64),
        batch: i32,
    ) -> cublasStatus_t;
}

macro_rules! blas_float {
    ($t:ty, $f:ident) => {
        impl BlasFloat for $t {
            unsafe fn gemm_strided_batched(
                handle: sys::cublasHandle_t,
                ops: (cublasOperation_t, cublasOperation_t),
                (m, n, k): (i32, i32, i32),
                alpha: Self,
                a: (u64, i32, i64),
                b: (u64, i32, i64),
                beta: Self,
                c: (u64, i32, i64),
                batch: i32,
            ) -> cublasStatus_t {
                // SAFETY: forwarded from the caller's contract; alpha and beta are host values
                // read during the call (the handle is in host pointer mode).
                unsafe {
                    sys::$f(
                        handle,
                        ops.0,
                        ops.1,
                        m,
                        n,
                        k,
                        &alpha,
                        a.0 as *const $t,
                        a.1,
                        a.2,
                        b.0 as *const $t,
                        b.1,
                        b.2,
                        &beta,
                        c.0 as *mut $t,
                        c.1,
                        c.2,
                        batch,
                    )
                }
            }
        }
    };
}
blas_float!(f64, cublasDgemmStridedBatched);

// f32: `cublasSgemmStridedBatched` (full f32), or `cublasGemmStridedBatchedEx` with
// `CUBLAS_COMPUTE_32F_FAST_TF32` when the user allowed TF32 ([`set_allow_tf32`]).
impl BlasFloat for f32 {
    unsafe fn gemm_strided_batched(
        handle: sys::cublasHandle_t,
        ops: (cublasOperation_t, cublasOperation_t),
        (m, n, k): (i32, i32, i32),
        alpha: Self,
        a: (u64, i32, i64),
        b: (u64, i32, i64),
        beta: Self,
        c: (u64, i32, i64),
        batch: i32,
    ) -> cublasStatus_t {
        if !allow_tf32() {
            // SAFETY: forwarded from the caller's contract; alpha and beta are host values
            // read during the call (the handle is in host pointer mode).
            return unsafe {
                sys::cublasSgemmStridedBatched(
                    handle,
                    ops.0,
                    ops.1,
                    m,
                    n,
                    k,
                    &alpha,
                    a.0 as *const f32,
                    a.1,
                    a.2,
                    b.0 as *const f32,
                    b.1,
                    b.2,
                    &beta,
                    c.0 as *mut f32,
                    c.1,
                    c.2,
                    batch,
                )
            };
        }
        // SAFETY: forwarded from the caller's contract (the buffers hold f32).
        unsafe {
            gemm_ex(
                handle,
                ops,
                (m, n, k),
                (alpha, beta),
                (a, b, c),
                batch,
                (sys::cudaDataType::CUDA_R_32F, sys::cudaDataType::CUDA_R_32F),
                sys::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32,
            )
        }
    }
}

// f16 and bf16: `cublasGemmStridedBatchedEx` with 16-bit inputs and output and
// `CUBLAS_COMPUTE_32F` (products and sums in f32, each output rounded once: the handle
// disallows reduced-precision reductions, see `handle`); alpha and beta are f32 values then.
macro_rules! blas_half {
    ($t:ty, $data_type:ident) => {
        impl BlasFloat for $t {
            unsafe fn gemm_strided_batched(
                handle: sys::cublasHandle_t,
                ops: (cublasOperation_t, cublasOperation_t),
                (m, n, k): (i32, i32, i32),
                alpha: Self,
                a: (u64, i32, i64),
                b: (u64, i32, i64),
                beta: Self,
                c: (u64, i32, i64),
                batch: i32,
            ) -> cublasStatus_t {
                // SAFETY: forwarded from the caller's contract (the buffers hold this 16-bit
                // type).
                unsafe {
                    gemm_ex(
                        handle,
                        ops,
                        (m, n, k),
                        (alpha.to_f32(), beta.to_f32()),
                        (a, b, c),
                        batch,
                        (sys::cudaDataType::$data_type, sys::cudaDataType::$data_type),
                        sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
                    )
                }
            }
        }
    };
}
blas_half!(half::f16, CUDA_R_16F);
blas_half!(half::bf16, CUDA_R_16BF);

/// One operand of a strided-batched GEMM call: device address, leading dimension, batch stride.
type Matrix = (u64, i32, i64);

/// `cublasGemmStridedBatchedEx` with inputs of type `data`, output of type `c_data` and an f32
/// compute type (`CUBLAS_COMPUTE_32F`, or its TF32 form): alpha and beta are host f32 values
/// then.
///
/// # Safety
/// As [`BlasFloat::gemm_strided_batched`], with A and B of type `data`, C of type `c_data`.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_ex(
    handle: sys::cublasHandle_t,
    ops: (cublasOperation_t, cublasOperation_t),
    (m, n, k): (i32, i32, i32),
    (alpha, beta): (f32, f32),
    (a, b, c): (Matrix, Matrix, Matrix),
    batch: i32,
    (data, c_data): (sys::cudaDataType, sys::cudaDataType),
    compute: sys::cublasComputeType_t,
) -> cublasStatus_t {
    // SAFETY: forwarded from the caller's contract; alpha and beta are host f32 values read
    // during the call (the handle is in host pointer mode), the scalar type of an f32 compute
    // type.
    unsafe {
        sys::cublasGemmStridedBatchedEx(
            handle,
            ops.0,
            ops.1,
            m,
            n,
            k,
            (&alpha as *const f32).cast(),
            a.0 as *const std::ffi::c_void,
            data,
            a.1,
            a.2,
            b.0 as *const std::ffi::c_void,
            data,
            b.1,
            b.2,
            (&beta as *const f32).cast(),
            c.0 as *mut std::ffi::c_void,
            c_data,
            c.1,
            c.2,
            batch,
            compute,
            sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
        )
    }
}

fn int(v: usize, what: &str) -> Result<i32> {
    i32::try_from(v).map_err(|_| {
        Error::Shape(format!(
            "matmul: {what} {v} is too large for cuBLAS (at most {})",
            i32::MAX
        ))
    })
}

fn long(v: usize) -> Result<i64> {
    i64::try_from(v)
        .map_err(|_| Error::Shape(format!("matmul: stride {v} is too large for cuBLAS")))
}

/// Queues `C[i] = A[i] @ B[i] + beta * C[i]` for `batch` matrices: `A[i]` is `m x k`, `B[i]`
/// is `k x n`, `C[i]` is a contiguous row-major `m x n` at `c + i * c_batch_stride` elements.
/// With `k = 0` nothing is queued: callers write zeros (or the bias) into `C` themselves.
///
/// The caller guarantees that every matrix lies inside its buffer on `gpu`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm<T: BlasFloat>(
    gpu: &GpuContext,
    (m, n, k): (usize, usize, usize),
    a: GemmOperand,
    b: GemmOperand,
    c: u64,
    c_batch_stride: usize,
    batch: usize,
    beta: T,
    one: T,
) -> Result<()> {
    if m == 0 || n == 0 || k == 0 || batch == 0 {
        return Ok(());
    }
    let h = handle(gpu)?;
    let (ops, mnk, (lda, ldb, ldc)) = call_shape((m, n, k), &a, &b)?;
    let size = std::mem::size_of::<T>() as u64;
    let _guard = gpu.blas.lock.lock().unwrap_or_else(|p| p.into_inner());
    gpu.bind()?;
    let max_batch = i32::MAX as usize;
    let mut done = 0usize;
    while done < batch {
        let count = (batch - done).min(max_batch);
        let ptr = |base: u64, stride: usize| base + (done * stride) as u64 * size;
        // SAFETY: the caller guarantees that all `batch` matrices of A, B and C, with these
        // leading dimensions and batch strides, lie inside live buffers on this device; the
        // handle is bound to the device's stream and used by one thread at a time (the lock).
        let s = unsafe {
            T::gemm_strided_batched(
                *h.handle(),
                ops,
                mnk,
                one,
                (ptr(b.ptr, b.batch_stride), ldb, long(b.batch_stride)?),
                (ptr(a.ptr, a.batch_stride), lda, long(a.batch_stride)?),
                beta,
                (ptr(c, c_batch_stride), ldc, long(c_batch_stride)?),
                count as i32,
            )
        };
        status(gpu, "cublasGemmStridedBatched", s)?;
        done += count;
    }
    Ok(())
}

/// The operations, sizes and leading dimensions of the column-major call that computes the
/// row-major `C (m x n) = A (m x k) @ B (k x n)`: `C^T = op(B) @ op(A)`.
#[allow(clippy::type_complexity)]
fn call_shape(
    (m, n, k): (usize, usize, usize),
    a: &GemmOperand,
    b: &GemmOperand,
) -> Result<(
    (cublasOperation_t, cublasOperation_t),
    (i32, i32, i32),
    (i32, i32, i32),
)> {
    let op = |row_major: bool| {
        if row_major {
            cublasOperation_t::CUBLAS_OP_N
        } else {
            cublasOperation_t::CUBLAS_OP_T
        }
    };
    Ok((
        (op(b.row_major), op(a.row_major)),
        (int(n, "size")?, int(m, "size")?, int(k, "size")?),
        (
            int(a.ld, "leading dimension")?,
            int(b.ld, "leading dimension")?,
            int(n, "size")?,
        ),
    ))
}

/// `C = A @ B + beta * C` for one matrix with `A` and `B` in a 16-bit `dtype` (f16, bf16) and
/// `C` in f32 (contiguous, `m x n`): products and sums in f32, and `beta * C` added in f32 too.
/// A 16-bit `C` would not do for a bias: cuBLAS may round `A @ B` to 16 bits before adding it
/// (an H200 did, for most shapes), one rounding more than PyTorch's fused `linear`.
pub(crate) fn gemm_half_to_f32(
    gpu: &GpuContext,
    dtype: crate::core::DType,
    mnk: (usize, usize, usize),
    a: GemmOperand,
    b: GemmOperand,
    c: u64,
    beta: f32,
) -> Result<()> {
    let data = match dtype {
        crate::core::DType::F16 => sys::cudaDataType::CUDA_R_16F,
        crate::core::DType::BF16 => sys::cudaDataType::CUDA_R_16BF,
        other => {
            return Err(Error::UnsupportedDType {
                op: "addmm_cuda",
                dtype: other,
            })
        }
    };
    if mnk.0 == 0 || mnk.1 == 0 || mnk.2 == 0 {
        return Ok(());
    }
    let h = handle(gpu)?;
    let (ops, sizes, (lda, ldb, ldc)) = call_shape(mnk, &a, &b)?;
    let _guard = gpu.blas.lock.lock().unwrap_or_else(|p| p.into_inner());
    gpu.bind()?;
    // SAFETY: the caller guarantees that A and B (16-bit, these leading dimensions) and C (f32,
    // m x n contiguous) lie inside live buffers on this device; the handle is bound to the
    // device's stream and used by one thread at a time (the lock).
    let s = unsafe {
        gemm_ex(
            *h.handle(),
            ops,
            sizes,
            (1.0, beta),
            ((b.ptr, ldb, 0), (a.ptr, lda, 0), (c, ldc, 0)),
            1,
            (data, sys::cudaDataType::CUDA_R_32F),
            sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
        )
    };
    status(gpu, "cublasGemmStridedBatchedEx", s)
}

/// [`gemm`] for a run-time dtype (`f32`, `f64`, `f16`, `bf16`), with `beta` given as `f64`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm_dtype(
    gpu: &GpuContext,
    dtype: crate::core::DType,
    mnk: (usize, usize, usize),
    a: GemmOperand,
    b: GemmOperand,
    c: u64,
    c_batch_stride: usize,
    batch: usize,
    beta: f64,
) -> Result<()> {
    fn go<T: BlasFloat + crate::core::Element>(
        gpu: &GpuContext,
        mnk: (usize, usize, usize),
        a: GemmOperand,
        b: GemmOperand,
        c: (u64, usize),
        batch: usize,
        beta: f64,
    ) -> Result<()> {
        gemm::<T>(gpu, mnk, a, b, c.0, c.1, batch, T::from_f64(beta), T::ONE)
    }
    match dtype {
        crate::core::DType::F32 => go::<f32>(gpu, mnk, a, b, (c, c_batch_stride), batch, beta),
        crate::core::DType::F64 => go::<f64>(gpu, mnk, a, b, (c, c_batch_stride), batch, beta),
        crate::core::DType::F16 => {
            go::<half::f16>(gpu, mnk, a, b, (c, c_batch_stride), batch, beta)
        }
        crate::core::DType::BF16 => {
            go::<half::bf16>(gpu, mnk, a, b, (c, c_batch_stride), batch, beta)
        }
        other => Err(Error::UnsupportedDType {
            op: "addmm_cuda",
            dtype: other,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::matrix_layout;

    #[test]
    fn views_map_to_blas_layouts_without_copies() {
        // Contiguous [3, 4]: row-major, ld 4.
        assert_eq!(matrix_layout(3, 4, 4, 1), Some((true, 4)));
        // Its transpose [4, 3] with strides (1, 4): column-major, ld 4.
        assert_eq!(matrix_layout(4, 3, 1, 4), Some((false, 4)));
        // A row of a wider matrix (narrowed columns): row-major with ld 10.
        assert_eq!(matrix_layout(3, 4, 10, 1), Some((true, 10)));
        // One row: any row stride works.
        assert_eq!(matrix_layout(1, 4, 0, 1), Some((true, 4)));
        // A broadcast (stride 0) matrix with several rows and columns needs a copy.
        assert_eq!(matrix_layout(3, 4, 0, 0), None);
        // Every other column: needs a copy.
        assert_eq!(matrix_layout(3, 4, 8, 2), None);
    }
}
