//! CPU matrix products on the `gemm` crate (AVX-512 when the CPU has it, chosen at run time);
//! tiny products use a plain loop, which beats any dispatch.

use super::MatmulPlan;
use crate::backend::cpu::strided::Strided;
use crate::core::error::Result;
use crate::core::layout::Layout;
use crate::core::pool::PooledVec;
use crate::core::raw::RawTensor;
use crate::core::{DType, Float};

/// The signature of a `gemm-*` crate's entry point (row and column strides in elements).
type GemmFn<T> = unsafe fn(
    usize,
    usize,
    usize,
    *mut T,
    isize,
    isize,
    bool,
    *const T,
    isize,
    isize,
    *const T,
    isize,
    isize,
    T,
    T,
    bool,
    bool,
    bool,
    gemm_common::Parallelism,
);

/// The element types the CPU GEMM runs on, each through its own `gemm-*` crate, which picks
/// the best kernel the CPU has (AVX-512, AVX2, ...) at run time.
pub(crate) trait Gemm: Float {
    /// The crate's entry point for this type.
    fn gemm_fn() -> GemmFn<Self>;
}

impl Gemm for f32 {
    fn gemm_fn() -> GemmFn<f32> {
        gemm_f32::gemm::f32::get_gemm_fn()
    }
}

impl Gemm for f64 {
    fn gemm_fn() -> GemmFn<f64> {
        gemm_f64::gemm::f64::get_gemm_fn()
    }
}

/// Products of at least this many multiply-adds run on every thread (`m * n * k`); smaller
/// ones on one (a batch of them is split across threads instead, in `typed`).
const GEMM_THREADS_FROM: usize = 1 << 18;

/// Products with at most this many multiply-adds use the plain loop.
const SMALL_PRODUCT: usize = 32 * 32 * 32;

/// A strided matrix inside a slice.
#[derive(Clone, Copy)]
pub(crate) struct MatrixView<'a, T> {
    pub(crate) data: &'a [T],
    pub(crate) offset: usize,
    pub(crate) row_stride: usize,
    pub(crate) col_stride: usize,
}

impl<T> MatrixView<'_, T> {
    /// True when all `rows x cols` elements lie inside `data` (checked arithmetic: a layout
    /// whose offsets overflow is out of bounds, never wrapped around into bounds).
    fn fits(&self, rows: usize, cols: usize) -> bool {
        if rows == 0 || cols == 0 {
            return true;
        }
        (rows - 1)
            .checked_mul(self.row_stride)
            .zip((cols - 1).checked_mul(self.col_stride))
            .and_then(|(r, c)| r.checked_add(c))
            .and_then(|rc| rc.checked_add(self.offset))
            .is_some_and(|last| last < self.data.len())
    }
}

/// The dot product of two equally long slices, four lanes at a time.
#[inline(always)]
fn dot<T: Float>(x: &[T], y: &[T]) -> T {
    let (xc, yc) = (x.chunks_exact(4), y.chunks_exact(4));
    let (xr, yr) = (xc.remainder(), yc.remainder());
    let mut lanes = [T::ZERO; 4];
    for (a, b) in xc.zip(yc) {
        for l in 0..4 {
            lanes[l] += a[l] * b[l];
        }
    }
    let mut s = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
    for (&a, &b) in xr.iter().zip(yr) {
        s += a * b;
    }
    s
}

/// The plain loops of [`gemm_into`] for products up to `SMALL_PRODUCT` multiply-adds (and
/// every product under Miri), inlined into each of [`small_product_widest`]'s paths.
///
/// The inner loop adds a row of `b` scaled by `a[i, p]` to a row of the output: contiguous
/// loads and stores across the output's columns, whatever `a`'s strides. A `b` whose rows are
/// not contiguous (`q @ k.T` in attention) is first copied row-major (`k * n` copies for
/// `m * k * n` multiply-adds), except where the output has fewer than four rows or eight
/// columns and `b`'s columns are contiguous: dot products along them cost less than the copy.
#[inline(always)]
fn small_product<T: Float>(
    dst: &mut [T],
    (m, k, n): (usize, usize, usize),
    a: MatrixView<'_, T>,
    b: MatrixView<'_, T>,
    accumulate: bool,
) {
    if b.col_stride != 1 && b.row_stride == 1 && a.col_stride == 1 && (m < 4 || n < 8) {
        // Rows of `a` and columns of `b` are contiguous and the output is narrow (`x @ w.T`
        // of a small `Linear`): dot products, four rows of `a` at a time, so each column of
        // `b` is loaded once per four sums (four independent chains instead of one dot
        // product's horizontal reduction; the `Linear(10, 2)` product fell from 736 to fewer
        // instructions, see the commit).
        let blocked = m / 4 * 4;
        for i in (0..blocked).step_by(4) {
            let rows: [&[T]; 4] =
                std::array::from_fn(|t| &a.data[a.offset + (i + t) * a.row_stride..][..k]);
            let [r0, r1, r2, r3] = rows;
            for j in 0..n {
                let col = &b.data[b.offset + j * b.col_stride..][..k];
                let mut sums = [T::ZERO; 4];
                // Zipped, so no access is bounds-checked (indexing each row by `p` was).
                for ((((&y, &x0), &x1), &x2), &x3) in col.iter().zip(r0).zip(r1).zip(r2).zip(r3) {
                    sums[0] += x0 * y;
                    sums[1] += x1 * y;
                    sums[2] += x2 * y;
                    sums[3] += x3 * y;
                }
                for (t, s) in sums.into_iter().enumerate() {
                    let d = &mut dst[(i + t) * n + j];
                    *d = if accumulate { *d + s } else { s };
                }
            }
        }
        for i in blocked..m {
            let row = &a.data[a.offset + i * a.row_stride..][..k];
            for (j, d) in dst[i * n..(i + 1) * n].iter_mut().enumerate() {
                let col = &b.data[b.offset + j * b.col_stride..][..k];
                let dot = dot(row, col);
                *d = if accumulate { *d + dot } else { dot };
            }
        }
        return;
    }
    // A `b` with strided rows is copied into a block on the stack when it fits (attention's
    // `k * n` is 256), into a `Vec` only above that: one allocation per product was 1.6% of
    // the transformer step's samples.
    const STACK_BLOCK: usize = 512;
    let mut on_stack;
    let mut on_heap = Vec::new();
    let (rows, row_stride, offset) = if b.col_stride == 1 {
        (b.data, b.row_stride, b.offset)
    } else {
        let copy = if k * n <= STACK_BLOCK {
            on_stack = [T::ZERO; STACK_BLOCK];
            &mut on_stack[..k * n]
        } else {
            on_heap.resize(k * n, T::ZERO);
            &mut on_heap[..]
        };
        for (p, row) in copy.chunks_exact_mut(n.max(1)).enumerate() {
            for (j, x) in row.iter_mut().enumerate() {
                *x = b.data[b.offset + p * b.row_stride + j * b.col_stride];
            }
        }
        (&*copy, n, 0)
    };
    // The output is summed in blocks of `R` rows and `W` columns held in registers across
    // the whole `p` loop: each row of `b` is loaded once per `R` rows, and the `R` sums are
    // independent chains (one row at a time was one chain of dependent adds, and its array,
    // reached through a slice of dynamic length, stayed in memory: scalar code, 12% of the
    // transformer step's samples).
    let a_at = |i: usize, p: usize| a.data[a.offset + i * a.row_stride + p * a.col_stride];
    let b_rows = BRows {
        rows,
        offset,
        row_stride,
    };
    let mut i = 0;
    while i + SMALL_ROWS <= m {
        row_block::<T, SMALL_ROWS>(dst, i, (k, n), &a_at, b_rows, accumulate);
        i += SMALL_ROWS;
    }
    for i in i..m {
        row_block::<T, 1>(dst, i, (k, n), &a_at, b_rows, accumulate);
    }
}

/// The rows of `b` as [`small_product`]'s blocks read them: row `p` starts at
/// `offset + p * row_stride` with contiguous columns.
#[derive(Clone, Copy)]
struct BRows<'a, T> {
    rows: &'a [T],
    offset: usize,
    row_stride: usize,
}

/// Rows summed at once by [`small_product`]'s blocks.
const SMALL_ROWS: usize = 4;
/// Columns summed at once: one 512-bit vector of `f32`.
const SMALL_COLS: usize = 16;

/// `dst[i..i + R, ..] (+)= a[i..i + R, ..] @ b`, `SMALL_COLS` columns at a time: the partial
/// sums of each element are added in the order `p = 0, 1, ..`, whatever `R` is, so the bits
/// do not depend on the blocking.
#[inline(always)]
fn row_block<T: Float, const R: usize>(
    dst: &mut [T],
    i: usize,
    (k, n): (usize, usize),
    a_at: &impl Fn(usize, usize) -> T,
    b: BRows<'_, T>,
    accumulate: bool,
) {
    const W: usize = SMALL_COLS;
    let full = n / W * W;
    for j0 in (0..full).step_by(W) {
        // Every copy here has a constant length, so `acc` lives in registers (a copy of a
        // dynamic length would keep it in memory and the loop scalar).
        let mut acc = [[T::ZERO; W]; R];
        if accumulate {
            for (t, acc) in acc.iter_mut().enumerate() {
                *acc = dst[(i + t) * n + j0..][..W]
                    .try_into()
                    .expect("a block of W columns");
            }
        }
        for p in 0..k {
            let brow: &[T; W] = b.rows[b.offset + p * b.row_stride + j0..][..W]
                .try_into()
                .expect("a block of W columns");
            for (t, acc) in acc.iter_mut().enumerate() {
                let x = a_at(i + t, p);
                for (o, &y) in acc.iter_mut().zip(brow) {
                    *o += x * y;
                }
            }
        }
        for (t, acc) in acc.iter().enumerate() {
            dst[(i + t) * n + j0..][..W].copy_from_slice(acc);
        }
    }
    // The last `n % W` columns, row by row, in the same order of sums.
    let w = n - full;
    if w > 0 {
        for t in 0..R {
            let mut acc = [T::ZERO; W];
            let out = &mut dst[(i + t) * n + full..][..w];
            if accumulate {
                acc[..w].copy_from_slice(out);
            }
            for p in 0..k {
                let x = a_at(i + t, p);
                let brow = &b.rows[b.offset + p * b.row_stride + full..][..w];
                for (o, &y) in acc[..w].iter_mut().zip(brow) {
                    *o += x * y;
                }
            }
            out.copy_from_slice(&acc[..w]);
        }
    }
}

/// [`small_product`] compiled for the widest vector unit this CPU has (AVX-512, else AVX2,
/// else the build's baseline). Only the instruction set changes, no fused multiply-adds, so
/// the bits are the same on every path. (A closure through `vmath::vectorized` is too large
/// to be inlined into the wide function, and would run at the baseline's width.)
fn small_product_widest<T: Float>(
    dst: &mut [T],
    shape: (usize, usize, usize),
    a: MatrixView<'_, T>,
    b: MatrixView<'_, T>,
    accumulate: bool,
) {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F, checked just above.
            return unsafe { wide::avx512(dst, shape, a, b, accumulate) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, checked just above.
            return unsafe { wide::avx2(dst, shape, a, b, accumulate) };
        }
    }
    small_product(dst, shape, a, b, accumulate)
}

#[cfg(all(target_arch = "x86_64", not(miri)))]
mod wide {
    use super::{small_product, MatrixView};
    use crate::core::Float;

    /// `small_product` compiled with `$feature` enabled, as `$name`.
    macro_rules! compiled_for {
        ($($name:ident: $feature:literal),*) => {$(
            #[target_feature(enable = $feature)]
            pub(super) fn $name<T: Float>(
                dst: &mut [T],
                shape: (usize, usize, usize),
                a: MatrixView<'_, T>,
                b: MatrixView<'_, T>,
                accumulate: bool,
            ) {
                small_product(dst, shape, a, b, accumulate)
            }
        )*};
    }

    compiled_for!(avx512: "avx512f", avx2: "avx2");
}

/// `dst[m x n] (row-major, contiguous) = (accumulate ? dst : 0) + a[m x k] @ b[k x n]`.
pub(crate) fn gemm_into<T: Gemm>(
    dst: &mut [T],
    (m, k, n): (usize, usize, usize),
    a: MatrixView<'_, T>,
    b: MatrixView<'_, T>,
    accumulate: bool,
) {
    // Small products first: asking `rayon` for its thread count costs about as much as a
    // 4x10x2 product (`Linear(10, 2)`'s).
    let flops = m.saturating_mul(n).saturating_mul(k);
    if flops < GEMM_THREADS_FROM || cfg!(miri) {
        return gemm_one_thread(dst, (m, k, n), a, b, accumulate);
    }
    let threads = rayon::current_num_threads();
    if threads < 2 {
        return gemm_one_thread(dst, (m, k, n), a, b, accumulate);
    }
    // From here `m, n, k > 0` (their product is at least `GEMM_THREADS_FROM`). The preconditions
    // of the `unsafe` call in `crate_gemm` are asserted there; these are the split's own.
    let out_len = m.checked_mul(n).expect("gemm: m * n overflows");
    assert!(dst.len() >= out_len, "gemm destination too small");
    if rayon::current_thread_index().is_some() || m < 16 * threads {
        // On a pool thread already (the crate's `rayon` loops steal while they wait), or too
        // few rows to share: the crate splits the product.
        return crate_gemm(
            dst,
            (m, k, n),
            a,
            b,
            accumulate,
            gemm_common::Parallelism::Rayon(threads),
        );
    }
    if n >= BAND_MIN_COLUMNS * threads && k >= m {
        // Wide, and no fewer steps of `k` than rows: one band of columns per thread (whole vectors
        // of 16), the caller one of them. Each thread packs only its band of `b` and reads all of
        // `a` in place, where blocks of rows would each pack all of `b`, a cost that weighs most
        // where each thread has few rows; bands lost where `k` is short against `m`, where the
        // threads waited for each other (`perf record` at 1024 x 64 x 1024, a 0.5 ms product: 11%
        // of the samples in waiting and yielding against 5% with rows, whose packing took 4%
        // against 1%). Measured on an Intel Xeon with AVX-512 (family 6, model 167, two threads)
        // through `matmul`, alternated three times with the row split (m x k x n; t: `b`
        // transposed; GFLOP/s): 32 x 4096 x 4096t 92-103 against 58-62, 64 x 1024 x 1024t 160-173
        // against 107-113, 32 x 768 x 768t 161-167 against 96-102, 32 x 512 x 512t 133-143 against
        // 80-83, 32 x 256 x 256t 149-157 against 106-111, 128 x 1024 x 256t 268-277 against
        // 190-200, square products level (n = 256 0.95-0.98x, 512 to 2048 0.97-1.05x), but 1024 x
        // 64 x 1024 266-280 against 316-347 and 256 x 64 x 2048 289 against 325-331, hence `k >=
        // m`.
        let band = n.div_ceil(threads).next_multiple_of(16);
        let out = crate::backend::cpu::parallel::SendPtr::new(&mut dst[..out_len]);
        crate::backend::cpu::parallel::for_each_task(n.div_ceil(band), &|t| {
            let c0 = t * band;
            let width = band.min(n - c0);
            let part = MatrixView {
                offset: b.offset + c0 * b.col_stride,
                ..b
            };
            // SAFETY: `dst` holds `m * n` values (asserted above); band `t` is columns `c0 ..
            // c0 + width` of its `m` rows (row stride `n`), written by task `t` alone, and the
            // bands are disjoint; `dst` is borrowed mutably for the whole loop.
            unsafe {
                crate_gemm_raw(
                    (out.at(c0), n),
                    (m, k, width),
                    a,
                    part,
                    accumulate,
                    gemm_common::Parallelism::None,
                )
            };
        });
        return;
    }
    // From the program's own thread: one block of rows per thread, the caller one of them
    // (`backend::cpu::parallel`); the crate's own `rayon` split would put the caller to sleep
    // until a worker wakes it. Each output element is the same sum either way.
    let rows = m.div_ceil(threads);
    crate::backend::cpu::parallel::for_each_chunk_mut(
        &mut dst[..out_len],
        rows * n,
        &|start, d| {
            let part = MatrixView {
                offset: a.offset + start / n * a.row_stride,
                ..a
            };
            crate_gemm(
                d,
                (d.len() / n, k, n),
                part,
                b,
                accumulate,
                gemm_common::Parallelism::None,
            );
        },
    );
}

/// Products split across threads by columns have at least this many columns per thread
/// ([`gemm_into`], which also asks `k >= m`); the others are split by rows. Bands of 128 to
/// 512 columns measured ahead of the rows or level with them wherever `k >= m` (the figures
/// there); narrower ones were not tried.
const BAND_MIN_COLUMNS: usize = 128;

/// [`gemm_into`] on the calling thread alone: its small products, and a product that is one
/// task of a loop already split across threads (a convolution's per-image products).
#[inline]
pub(crate) fn gemm_one_thread<T: Gemm>(
    dst: &mut [T],
    (m, k, n): (usize, usize, usize),
    a: MatrixView<'_, T>,
    b: MatrixView<'_, T>,
    accumulate: bool,
) {
    // The preconditions of the `unsafe` call in `crate_gemm`, with checked arithmetic
    // throughout. Every layout was checked when it was made, so these hold for every tensor;
    // a failure is a bug in devtype, reported by a panic rather than by memory corruption.
    let out_len = m.checked_mul(n).expect("gemm: m * n overflows");
    assert!(dst.len() >= out_len, "gemm destination too small");
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !accumulate {
            dst[..out_len].fill(T::ZERO);
        }
        return;
    }
    // The plain loops index the slices (bounds-checked); the `gemm` call relies on the
    // operands lying inside their slices, checked right before it.
    if out_len.saturating_mul(k) <= SMALL_PRODUCT || cfg!(miri) {
        return small_product_widest(dst, (m, k, n), a, b, accumulate);
    }
    crate_gemm(
        dst,
        (m, k, n),
        a,
        b,
        accumulate,
        gemm_common::Parallelism::None,
    );
}

/// `dst[m x n] = (accumulate ? dst : 0) + a @ b` by the `gemm-*` crate, `m, k, n > 0`.
fn crate_gemm<T: Gemm>(
    dst: &mut [T],
    (m, k, n): (usize, usize, usize),
    a: MatrixView<'_, T>,
    b: MatrixView<'_, T>,
    accumulate: bool,
    parallelism: gemm_common::Parallelism,
) {
    assert!(dst.len() >= m * n, "gemm destination too small");
    // SAFETY: `dst` holds the `m` rows of `n` values at row stride `n` (asserted), borrowed
    // mutably for the call.
    unsafe {
        crate_gemm_raw(
            (dst.as_mut_ptr(), n),
            (m, k, n),
            a,
            b,
            accumulate,
            parallelism,
        )
    }
}

/// [`crate_gemm`] into `m` rows of `n` values at row stride `ld` from `dst.0`.
///
/// # Safety
/// Those values must be valid for writes (and reads, with `accumulate`), and nothing else may
/// read or write them during the call.
unsafe fn crate_gemm_raw<T: Gemm>(
    (dst, ld): (*mut T, usize),
    (m, k, n): (usize, usize, usize),
    a: MatrixView<'_, T>,
    b: MatrixView<'_, T>,
    accumulate: bool,
    parallelism: gemm_common::Parallelism,
) {
    assert!(a.fits(m, k), "gemm lhs out of bounds");
    assert!(b.fits(k, n), "gemm rhs out of bounds");
    let call = GemmCall {
        m,
        n,
        k,
        dst: (dst, 1, ld as isize),
        // SAFETY: `offset` is inside `data` (the `fits` asserts above, with `m, k, n > 0`).
        lhs: (
            unsafe { a.data.as_ptr().add(a.offset) },
            a.col_stride as isize,
            a.row_stride as isize,
        ),
        // SAFETY: as for `lhs`.
        rhs: (
            unsafe { b.data.as_ptr().add(b.offset) },
            b.col_stride as isize,
            b.row_stride as isize,
        ),
    }
    .column_major_dst();
    // SAFETY: `dst`'s rows are valid and unshared (the caller's contract), written with
    // strides (1, ld); the last element each operand reaches is inside its slice (asserted
    // above), and both stay valid for the call's duration (borrowed). `column_major_dst` only
    // transposes the problem, so the same elements are reached.
    unsafe {
        T::gemm_fn()(
            call.m,
            call.n,
            call.k,
            call.dst.0,
            call.dst.1,
            call.dst.2,
            accumulate,
            call.lhs.0,
            call.lhs.1,
            call.lhs.2,
            call.rhs.0,
            call.rhs.1,
            call.rhs.2,
            T::ONE,
            T::ONE,
            false,
            false,
            false,
            parallelism,
        )
    }
}

/// The arguments of one `gemm-*` call: sizes, then each matrix as (pointer, column stride,
/// row stride) in elements, as the crates take them.
#[derive(Clone, Copy, Debug, PartialEq)]
struct GemmCall<P, Q> {
    m: usize,
    n: usize,
    k: usize,
    dst: (P, isize, isize),
    lhs: (Q, isize, isize),
    rhs: (Q, isize, isize),
}

impl<P, Q> GemmCall<P, Q> {
    /// The same product with a column-major destination. The `gemm-*` kernels are written for
    /// one (their micro-kernels step down columns of `dst`); called directly with a row-major
    /// `dst` they run at about half speed (n = 2048 on an AVX-512 Xeon, one thread: 82
    /// against 156 GFLOP/s). The umbrella `gemm` crate did this before calling them:
    /// `C = A B` with row-major `C` is `C^T = B^T A^T` with column-major `C^T`, which swaps
    /// `m` and `n`, swaps the operands and exchanges each one's strides.
    fn column_major_dst(self) -> Self {
        if self.dst.1.unsigned_abs() < self.dst.2.unsigned_abs() {
            GemmCall {
                m: self.n,
                n: self.m,
                k: self.k,
                dst: (self.dst.0, self.dst.2, self.dst.1),
                lhs: (self.rhs.0, self.rhs.2, self.rhs.1),
                rhs: (self.lhs.0, self.lhs.2, self.lhs.1),
            }
        } else {
            self
        }
    }
}

/// Offsets of each batch's matrix for a layout `[batch..., r, c]`.
pub(crate) fn batch_offsets(layout: &Layout, batch_rank: usize) -> Result<Vec<usize>> {
    let mut batch = *layout;
    let r = layout.rank();
    let mut shape = batch.shape;
    let mut strides = batch.strides;
    shape[r - 2] = 1;
    shape[r - 1] = 1;
    strides[r - 2] = 0;
    strides[r - 1] = 0;
    batch.shape = shape;
    batch.strides = strides;
    let count: usize = layout.shape[..batch_rank].iter().product();
    let mut out = Vec::new();
    out.try_reserve_exact(count)
        .map_err(|_| crate::core::pool::out_of_memory::<usize>(count))?;
    Strided::new([&batch]).runs(0..count, |_, [o], len, [s]| {
        out.extend((0..len).map(|i| o + i * s))
    });
    Ok(out)
}

fn typed<T: Gemm>(a: &[T], b: &[T], plan: &MatmulPlan) -> Result<RawTensor> {
    let (m, k, n) = (plan.m, plan.k, plan.n);
    let br = plan.batch.len();
    let ra = plan.a.rank();
    let rb = plan.b.rank();
    let batches: usize = plan.batch.iter().product();
    if br == 0 {
        // One matrix: no per-batch offsets to gather.
        let va = MatrixView {
            data: a,
            offset: plan.a.offset,
            row_stride: plan.a.strides[0],
            col_stride: plan.a.strides[1],
        };
        let vb = MatrixView {
            data: b,
            offset: plan.b.offset,
            row_stride: plan.b.strides[0],
            col_stride: plan.b.strides[1],
        };
        return RawTensor::cpu_filled::<T>(plan.out_shape, m * n, |out| {
            gemm_into(out, (m, k, n), va, vb, false)
        });
    }
    // The output's size was checked when the plan was made, so this cannot overflow.
    let mut out = T::pool().take(batches * m * n)?;
    if out.is_empty() {
        // Nothing to compute (and no per-batch offsets to list, however many batches).
        return Ok(RawTensor::from_cpu_vec(out, plan.out_shape));
    }
    let offs_a = batch_offsets(&plan.a, br)?;
    let offs_b = batch_offsets(&plan.b, br)?;
    let one = |(i, dst): (usize, &mut [T])| {
        let va = MatrixView {
            data: a,
            offset: offs_a[i],
            row_stride: plan.a.strides[ra - 2],
            col_stride: plan.a.strides[ra - 1],
        };
        let vb = MatrixView {
            data: b,
            offset: offs_b[i],
            row_stride: plan.b.strides[rb - 2],
            col_stride: plan.b.strides[rb - 1],
        };
        gemm_into(dst, (m, k, n), va, vb, false);
    };
    let per_product = m * n * k;
    if batches > 1
        && per_product < GEMM_THREADS_FROM
        && per_product.saturating_mul(batches) >= 1 << 16
        && !cfg!(miri)
    {
        // Each product is too small for the GEMM to split (it runs on one thread): split the
        // batch instead (a convolution's per-image products, attention's per-head ones). Each
        // product is computed as it would be alone, so the bits do not change.
        let per_task = ((1 << 16) / per_product.max(1)).max(1);
        let len = (m * n).max(1);
        crate::backend::cpu::parallel::for_each_chunk_mut(
            &mut out[..batches * len],
            per_task * len,
            &|start, c| {
                for (i, dst) in (start / len..).zip(c.chunks_mut(len)) {
                    one((i, dst));
                }
            },
        );
    } else {
        out.chunks_mut((m * n).max(1))
            .enumerate()
            .take(batches)
            .for_each(one);
    }
    Ok(RawTensor::from_cpu_vec(out, plan.out_shape))
}

/// `bf16` products on AVX512-BF16 or AMX (`super::cpu_bf16`): accumulated in `f32`, rounded
/// once, written as `bf16` by the kernel itself.
fn bf16_native(a: &[half::bf16], b: &[half::bf16], plan: &MatmulPlan) -> Result<RawTensor> {
    let kernel = super::cpu_bf16::native().expect("called where a bf16 kernel runs");
    let (m, k, n) = (plan.m, plan.k, plan.n);
    let br = plan.batch.len();
    let (ra, rb) = (plan.a.rank(), plan.b.rank());
    let batches: usize = plan.batch.iter().product();
    let mut out = PooledVec::<half::bf16>::with_len(batches * m * n)?;
    let layout = Layout::contiguous(plan.out_shape);
    if !out.as_slice().is_empty() {
        let (offs_a, offs_b) = if br == 0 {
            (vec![plan.a.offset], vec![plan.b.offset])
        } else {
            (batch_offsets(&plan.a, br)?, batch_offsets(&plan.b, br)?)
        };
        let out = out.as_mut_slice();
        for (i, dst) in out.chunks_mut((m * n).max(1)).enumerate().take(batches) {
            let va = MatrixView {
                data: a,
                offset: offs_a[i],
                row_stride: plan.a.strides[ra - 2],
                col_stride: plan.a.strides[ra - 1],
            };
            let vb = MatrixView {
                data: b,
                offset: offs_b[i],
                row_stride: plan.b.strides[rb - 2],
                col_stride: plan.b.strides[rb - 1],
            };
            super::cpu_bf16::gemm(dst, (m, k, n), va, vb, kernel)?;
        }
    }
    Ok(RawTensor::from_cpu_buffer(out, layout))
}

/// `a @ b` of `i64` matrices (PyTorch's CPU `mm` takes integers): exact, with wrapping sums
/// and products as PyTorch's integer kernels. A plain triple loop: integer products are for
/// counting and indexing, not the hot path.
fn int_matmul(a: &[i64], b: &[i64], plan: &MatmulPlan) -> Result<RawTensor> {
    let (m, k, n) = (plan.m, plan.k, plan.n);
    let br = plan.batch.len();
    let (ra, rb) = (plan.a.rank(), plan.b.rank());
    let batches: usize = plan.batch.iter().product();
    // The output's size was checked when the plan was made, so this cannot overflow.
    let mut out = crate::core::pool::zeroed_vec::<i64>(batches * m * n)?;
    if out.is_empty() {
        return Ok(RawTensor::from_cpu_vec(out, plan.out_shape));
    }
    let (offs_a, offs_b) = if br == 0 {
        (vec![plan.a.offset], vec![plan.b.offset])
    } else {
        (batch_offsets(&plan.a, br)?, batch_offsets(&plan.b, br)?)
    };
    let (a_row, a_col) = (plan.a.strides[ra - 2], plan.a.strides[ra - 1]);
    let (b_row, b_col) = (plan.b.strides[rb - 2], plan.b.strides[rb - 1]);
    for (batch, dst) in out.chunks_mut(m * n).enumerate() {
        let (oa, ob) = (offs_a[batch], offs_b[batch]);
        for i in 0..m {
            for j in 0..n {
                dst[i * n + j] = (0..k).fold(0i64, |acc, p| {
                    acc.wrapping_add(
                        a[oa + i * a_row + p * a_col].wrapping_mul(b[ob + p * b_row + j * b_col]),
                    )
                });
            }
        }
    }
    Ok(RawTensor::from_cpu_vec(out, plan.out_shape))
}

pub(crate) fn matmul(a: &RawTensor, b: &RawTensor, plan: &MatmulPlan) -> Result<RawTensor> {
    match a.dtype {
        DType::I64 => int_matmul(
            a.cpu_slice().expect("cpu"),
            b.cpu_slice().expect("cpu"),
            plan,
        ),
        DType::F32 => typed::<f32>(
            a.cpu_slice().expect("cpu"),
            b.cpu_slice().expect("cpu"),
            plan,
        ),
        DType::F64 => typed::<f64>(
            a.cpu_slice().expect("cpu"),
            b.cpu_slice().expect("cpu"),
            plan,
        ),
        // f16 and bf16: widened to f32 (in blocks), the f32 GEMM, rounded once. Exact inputs
        // and f32 accumulation, so the result is the f32 product rounded (PyTorch's rule);
        // the widening is O(n^2) against the product's O(n^3). Measured at 2048^3 on this
        // machine: 0.97x the f32 GEMM, where `gemm-f16`'s own f16 kernels ran at 0.74x (and
        // rounded between blocks of k). bf16 runs natively instead where `cpu_bf16::native`
        // picks a kernel (AMX's tiles, or `vdpbf16ps` on AMD's cores).
        DType::BF16 if super::cpu_bf16::native().is_some() => bf16_native(
            a.cpu_slice().expect("cpu"),
            b.cpu_slice().expect("cpu"),
            plan,
        ),
        DType::F16 | DType::BF16 => {
            let (wa, wb) = (crate::ops::half::widen(a)?, crate::ops::half::widen(b)?);
            let out = typed::<f32>(
                wa.cpu_slice().expect("widened"),
                wb.cpu_slice().expect("widened"),
                plan,
            )?;
            crate::ops::half::narrow(out, a.dtype)
        }
        _ => unreachable!("checked in plan"),
    }
}

impl super::MatmulKernel for crate::ops::backend::CpuBackend {
    #[inline(always)]
    fn matmul(self, a: &RawTensor, b: &RawTensor, plan: &MatmulPlan) -> Result<RawTensor> {
        matmul(a, b, plan)
    }
}

#[cfg(test)]
mod tests {
    use super::GemmCall;

    /// A row-major destination reaches the `gemm-*` kernels transposed, with a unit row stride
    /// (the layout they run at full speed on), and the product is unchanged.
    #[test]
    fn gemm_is_called_with_a_column_major_destination() {
        // dst [2 x 3] row-major, a [2 x 4] row-major, b [4 x 3] transposed storage.
        let call = GemmCall {
            m: 2,
            n: 3,
            k: 4,
            dst: ('d', 1, 3),
            lhs: ('a', 1, 4),
            rhs: ('b', 4, 1),
        };
        let t = call.column_major_dst();
        assert_eq!(
            t,
            GemmCall {
                m: 3,
                n: 2,
                k: 4,
                dst: ('d', 3, 1),
                lhs: ('b', 1, 4),
                rhs: ('a', 4, 1)
            }
        );
        assert_eq!(t.dst.2, 1, "column-major: unit row stride");
        // Already column-major: untouched.
        assert_eq!(t.column_major_dst(), t);
    }

    /// Values uniform in `[-2, 2)` from a xorshift generator started at `seed` (nonzero).
    fn uniform(mut seed: u64) -> impl FnMut() -> f32 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            ((seed >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0
        }
    }

    /// The plain loops (every product up to `SMALL_PRODUCT` multiply-adds) against the f64
    /// definition: every row count around the 4-row blocking, sizes on both sides of the
    /// threshold, both stride orders of each operand and a strided view, with and without
    /// accumulation, operands at an offset.
    #[test]
    fn small_products_match_the_f64_definition() {
        let mut next = uniform(0x9e37_79b9_7f4a_7c15);
        let mut sizes: Vec<(usize, usize, usize)> = (1..=9).map(|m| (m, 10, 2)).collect();
        sizes.extend([
            (4, 1, 1),
            (5, 3, 7),
            (4, 16, 16),
            (16, 16, 16),
            (9, 7, 11),
            (3, 9, 12),
            // Two 16-column blocks and a tail, a 4-row block and a tail row.
            (5, 6, 37),
            (6, 8, 32),
            // `k * n` over the stack block of a strided `b`'s copy: it goes to a `Vec`.
            (2, 32, 24),
            (1, 0, 5),
        ]);
        if !cfg!(miri) {
            // Products that go to the GEMM crate: their numbers are checked here, but under
            // Miri (which looks for undefined behaviour in devtype's code, not the crate's)
            // they took over twenty minutes of CI.
            sizes.extend([(32, 32, 32), (32, 32, 33), (31, 33, 32), (8, 64, 64)]);
        }
        for (m, k, n) in sizes {
            let a: Vec<f32> = (0..3 * m * k + 5).map(|_| next()).collect();
            let b: Vec<f32> = (0..3 * k * n + 5).map(|_| next()).collect();
            let strides = |rows: usize, cols: usize, order: usize| match order {
                0 => (cols, 1),
                1 => (1, rows),
                _ => (2 * cols, 2),
            };
            for (oa, ob) in [(0, 0), (0, 1), (1, 0), (1, 1), (2, 2)] {
                for accumulate in [false, true] {
                    let (a_rs, a_cs) = strides(m, k, oa);
                    let (b_rs, b_cs) = strides(k, n, ob);
                    let view = |data, row_stride, col_stride| super::MatrixView {
                        data,
                        offset: 5,
                        row_stride,
                        col_stride,
                    };
                    let init: Vec<f32> = (0..m * n).map(|_| next()).collect();
                    let mut dst = init.clone();
                    super::gemm_into(
                        &mut dst,
                        (m, k, n),
                        view(&a[..], a_rs, a_cs),
                        view(&b[..], b_rs, b_cs),
                        accumulate,
                    );
                    if m * k * n <= super::SMALL_PRODUCT {
                        // The loops in the build's baseline instruction set give the same bits
                        // as the ones `gemm_into` ran, compiled for this CPU's vector unit.
                        let mut base = init.clone();
                        super::small_product(
                            &mut base,
                            (m, k, n),
                            view(&a[..], a_rs, a_cs),
                            view(&b[..], b_rs, b_cs),
                            accumulate,
                        );
                        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                        assert_eq!(bits(&base), bits(&dst), "({m}, {k}, {n}) {oa}/{ob}");
                    }
                    for i in 0..m {
                        for j in 0..n {
                            let (mut want, mut mag) = (0f64, 0f64);
                            if accumulate {
                                want = init[i * n + j] as f64;
                                mag = want.abs();
                            }
                            for p in 0..k {
                                let x = a[5 + i * a_rs + p * a_cs] as f64
                                    * b[5 + p * b_rs + j * b_cs] as f64;
                                want += x;
                                mag += x.abs();
                            }
                            let got = dst[i * n + j] as f64;
                            let tol = mag * (k + 1) as f64 * f32::EPSILON as f64;
                            assert!(
                                (got - want).abs() <= tol,
                                "({m}, {k}, {n}) {oa}/{ob} acc {accumulate} ({i}, {j}): {got} vs {want}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// Products wide enough to be split by columns across the threads (`BAND_MIN_COLUMNS` a
    /// thread, on however many threads this machine has), against the f64 definition and bit
    /// for bit against the same product on one thread: both stride orders of `b`, operands at
    /// an offset, with and without accumulation, a width that leaves the last band short.
    #[test]
    fn column_bands_match_one_thread_and_the_definition() {
        if cfg!(miri) {
            // Under Miri every product runs on one thread (`gemm_into`): there are no bands,
            // and a product this size would take minutes of CI in the plain loops.
            return;
        }
        let threads = rayon::current_num_threads();
        let m = 16 * threads + 5;
        let (k, n) = (m + 33, super::BAND_MIN_COLUMNS * threads + 37);
        let mut next = uniform(0x2545_f491_4f6c_dd1d);
        let a: Vec<f32> = (0..3 + m * k).map(|_| next()).collect();
        let b: Vec<f32> = (0..5 + k * n).map(|_| next()).collect();
        let start: Vec<f32> = (0..m * n).map(|_| next()).collect();
        let view_a = super::MatrixView {
            data: &a,
            offset: 3,
            row_stride: k,
            col_stride: 1,
        };
        for (b_rs, b_cs) in [(n, 1), (1, k)] {
            let view_b = super::MatrixView {
                data: &b,
                offset: 5,
                row_stride: b_rs,
                col_stride: b_cs,
            };
            for accumulate in [false, true] {
                let mut split = if accumulate {
                    start.clone()
                } else {
                    vec![f32::NAN; m * n]
                };
                let mut one = split.clone();
                super::gemm_into(&mut split, (m, k, n), view_a, view_b, accumulate);
                super::gemm_one_thread(&mut one, (m, k, n), view_a, view_b, accumulate);
                for i in 0..m {
                    for j in 0..n {
                        let (mut want, mut mag) = (0f64, 0f64);
                        for p in 0..k {
                            let x = a[3 + i * k + p] as f64 * b[5 + p * b_rs + j * b_cs] as f64;
                            want += x;
                            mag += x.abs();
                        }
                        if accumulate {
                            want += start[i * n + j] as f64;
                            mag += start[i * n + j].abs() as f64;
                        }
                        let got = split[i * n + j];
                        let tol = mag * (k + 1) as f64 * f32::EPSILON as f64;
                        assert!(
                            (got as f64 - want).abs() <= tol,
                            "({i}, {j}) b strides ({b_rs}, {b_cs}) accumulate {accumulate}: {got} vs {want}"
                        );
                        assert_eq!(
                            got.to_bits(),
                            one[i * n + j].to_bits(),
                            "({i}, {j}): the split changed the sum"
                        );
                    }
                }
            }
        }
    }

    /// The transposed call computes the same product as the plain definition (the loop path is
    /// bypassed by a size above `SMALL_PRODUCT`), in both destination layouts' element order.
    #[test]
    fn transposed_gemm_matches_the_definition() {
        let (m, k, n) = (37, 41, 43);
        let a: Vec<f32> = (0..m * k).map(|i| ((i * 7 % 13) as f32) - 6.0).collect();
        let b: Vec<f32> = (0..k * n).map(|i| ((i * 5 % 11) as f32) - 5.0).collect();
        for (b_rs, b_cs) in [(n, 1), (1, k)] {
            let view_a = super::MatrixView {
                data: &a,
                offset: 0,
                row_stride: k,
                col_stride: 1,
            };
            let view_b = super::MatrixView {
                data: &b,
                offset: 0,
                row_stride: b_rs,
                col_stride: b_cs,
            };
            let mut dst = vec![0.0f32; m * n];
            super::gemm_into(&mut dst, (m, k, n), view_a, view_b, false);
            for i in 0..m {
                for j in 0..n {
                    let want: f64 = (0..k)
                        .map(|p| a[i * k + p] as f64 * b[p * b_rs + j * b_cs] as f64)
                        .sum();
                    assert_eq!(dst[i * n + j] as f64, want, "({i}, {j})");
                }
            }
        }
    }
}
