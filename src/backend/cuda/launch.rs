//! Kernel arguments that describe strided operands, launch geometry, and the typed launchers:
//! one per kernel shape of `kernels/*.cu`, each holding the crate's only `launch` call for
//! kernels of that shape.
//!
//! A launcher takes the kernel (file and name), device addresses (`u64`, of live buffers on
//! `gpu`), the shape's own arguments and a tuple of trailing scalars, and pushes them in the
//! order every kernel of that shape declares. The shapes:
//!
//! | launcher | kernel parameters | grid |
//! |---|---|---|
//! | [`strided`] | `(out, in_0 .. in_{I-1}, Strided<S>, u64 n, scalars...)` | grid-stride over `n` |
//! | [`flat`] | `(p_0 .. p_{P-1}, u64 n, scalars...)` | grid-stride over `n` |
//! | [`per_row`] | `(p_0 .. p_{P-1}, u64 rows, u64 cols, scalars...)` | one block per row |
//! | [`one_block`] | `(p_0 .. p_{P-1}, u64 n, scalars...)` | one block |
//! | [`indexed`] | `(p_0 .. p_{P-1}, Args, u64 n)` | grid-stride over `n` |
//! | [`reduction`] | `(p_0 .. p_{P-1}, Layout, scalars...)` | the caller's plan |
//!
//! dfdx launches every kernel through one generic `launch` on a tuple of parameters; here the
//! tuple is only the trailing scalars, and the pointers and layouts sit where each shape puts
//! them, so a kernel family cannot push them in another order.

use super::context::GpuContext;
use super::kernels::{self, KernelFile};
use crate::core::error::Result;
use crate::core::layout::MAX_DIMS;
use cudarc::driver::{DeviceRepr, LaunchArgs, LaunchConfig, PushKernelArg};

/// Threads per block of the element-wise kernels.
pub(crate) const BLOCK: u32 = 256;

/// `Strided<K>` of `kernels/common.cuh`: one iteration shape (row-major) and `K` operands'
/// strides, in elements. Pointers carry the operands' offsets.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct StridedArg<const K: usize> {
    pub(crate) rank: u32,
    /// 1 when every element index and operand offset fits in 32 bits.
    pub(crate) small: u32,
    pub(crate) shape: [u64; MAX_DIMS],
    pub(crate) strides: [[u64; MAX_DIMS]; K],
}

// SAFETY: `#[repr(C)]` with only integer fields, laid out exactly as `Strided<K>` in
// `kernels/common.cuh` (two u32, then u64 arrays); passed by value as a kernel parameter.
unsafe impl<const K: usize> DeviceRepr for StridedArg<K> {}

/// Merges the dimensions of `shape` that every operand walks as one (dropping size-1 dims), so
/// kernels see the fewest dimensions: a contiguous tensor becomes rank 1 with stride 1.
pub(crate) fn strided_layout<const K: usize>(
    shape: &[usize],
    strides: [&[usize]; K],
) -> StridedArg<K> {
    let mut arg = StridedArg {
        rank: 0,
        small: 0,
        shape: [0; MAX_DIMS],
        strides: [[0; MAX_DIMS]; K],
    };
    let mut rank = 0usize;
    for d in 0..shape.len() {
        if shape[d] == 1 {
            continue;
        }
        let mergeable = rank > 0
            && (0..K)
                .all(|k| arg.strides[k][rank - 1] == (strides[k][d] as u64) * (shape[d] as u64));
        if mergeable {
            arg.shape[rank - 1] *= shape[d] as u64;
            for (to, from) in arg.strides.iter_mut().zip(&strides) {
                to[rank - 1] = from[d] as u64;
            }
        } else {
            arg.shape[rank] = shape[d] as u64;
            for (to, from) in arg.strides.iter_mut().zip(&strides) {
                to[rank] = from[d] as u64;
            }
            rank += 1;
        }
    }
    arg.rank = rank as u32;
    let numel: u128 = shape.iter().map(|&s| s as u128).product();
    let fits = |v: u128| v <= u32::MAX as u128;
    let offsets_fit = (0..K).all(|k| {
        let last: u128 = (0..rank)
            .map(|d| (arg.shape[d] as u128).saturating_sub(1) * arg.strides[k][d] as u128)
            .sum();
        fits(last) && (0..rank).all(|d| fits(arg.strides[k][d] as u128))
    });
    arg.small = (fits(numel) && offsets_fit) as u32;
    arg
}

/// Grid for a grid-stride kernel over `n` work items with `per_thread` items per thread and
/// iteration: enough blocks to cover the work, at most a full wave of resident blocks.
pub(crate) fn grid(gpu: &GpuContext, n: usize, per_thread: usize) -> LaunchConfig {
    let per_block = BLOCK as usize * per_thread.max(1);
    let wanted = n.div_ceil(per_block).max(1);
    let cap = gpu.sm_count as usize * (2048 / BLOCK as usize);
    LaunchConfig {
        grid_dim: (wanted.min(cap) as u32, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Threads per block for a block that cooperates on `len` elements: a power of two from 32
/// to `max`.
pub(crate) fn block_for(len: usize, max: u32) -> u32 {
    (len.next_power_of_two().clamp(32, max as usize)) as u32
}

/// Rows handled by blocks of one row each: at most a few waves, grid-stride for the rest.
pub(crate) fn row_blocks(gpu: &GpuContext, rows: usize, threads: u32) -> u32 {
    let resident = (2048 / threads.max(32)) as usize * gpu.sm_count as usize;
    rows.clamp(1, resident * 4).min(i32::MAX as usize) as u32
}

/// One block per row (grid-stride over the rest) of `rows` rows of `row_len` elements, with
/// the row's threads a power of two between 32 and `max_threads`: the launch of the row-wise
/// kernels (softmax, cross-entropy and its gradient).
pub(crate) fn launch_config_per_row(
    gpu: &GpuContext,
    rows: usize,
    row_len: usize,
    max_threads: u32,
) -> LaunchConfig {
    let threads = block_for(row_len, max_threads);
    LaunchConfig {
        grid_dim: (row_blocks(gpu, rows, threads), 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// A kernel to launch: its file, its full name (`<kernel>_<dtype suffix>`), and the context
/// that names it in a launch error (`cuLaunchKernel(<op>)`).
#[derive(Clone, Copy)]
pub(crate) struct Kernel<'a> {
    pub(crate) file: &'static KernelFile,
    pub(crate) name: &'a str,
    pub(crate) context: &'static str,
}

impl<'a> Kernel<'a> {
    pub(crate) fn new(file: &'static KernelFile, name: &'a str, context: &'static str) -> Self {
        Kernel {
            file,
            name,
            context,
        }
    }
}

/// Trailing scalar parameters of a kernel, in order: a tuple of `DeviceRepr` values (`()` for
/// none). Each is pushed by reference with its own Rust type, which must be the kernel's.
pub(crate) trait Scalars {
    fn push<'a>(&'a self, builder: &mut LaunchArgs<'a>);
}

macro_rules! scalars {
    ($($T:ident . $i:tt),*) => {
        impl<$($T: DeviceRepr),*> Scalars for ($($T,)*) {
            #[allow(unused_variables)]
            fn push<'a>(&'a self, builder: &mut LaunchArgs<'a>) {
                $(builder.arg(&self.$i);)*
            }
        }
    };
}
scalars!();
scalars!(A.0);
scalars!(A.0, B.1);
scalars!(A.0, B.1, C.2);
scalars!(A.0, B.1, C.2, D.3);
scalars!(A.0, B.1, C.2, D.3, E.4);
scalars!(A.0, B.1, C.2, D.3, E.4, F.5);
scalars!(A.0, B.1, C.2, D.3, E.4, F.5, G.6);
scalars!(A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7);
scalars!(A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8);

/// Device addresses pushed in order (each a `u64`, the kernels' pointer parameters).
fn push_ptrs<'a>(builder: &mut LaunchArgs<'a>, ptrs: &'a [u64]) {
    for p in ptrs {
        builder.arg(p);
    }
}

/// The element-wise kernels over a strided iteration space (`kernels/common.cuh`'s `Strided<S>`):
/// `kernel(out, in_0, .., in_{I-1}, Strided<S> layout, u64 n, scalars...)`, `n` work items
/// with `per_thread` items per thread and grid-stride loop (4 for the vectorised `map1`/`map2`
/// kernels of `unary.cu`, `binary.cu`, `copy.cu`; 1 for `where_cond.cu`). Nothing is queued
/// for `n == 0`.
///
/// The caller passes `out` and `inputs` as device addresses of live buffers on `gpu` of the
/// kernel's element types, and `layout` made by [`strided_layout`] from the
/// operands' strides: every offset the kernel forms from it stays inside those buffers, and
/// `out` holds what the layout addresses of it (`n` elements when it is not an operand of the
/// layout).
#[allow(clippy::too_many_arguments)]
pub(crate) fn strided<const I: usize, const S: usize, X: Scalars>(
    gpu: &'static GpuContext,
    kernel: Kernel<'_>,
    out: u64,
    inputs: [u64; I],
    layout: &StridedArg<S>,
    n: usize,
    scalars: X,
    per_thread: usize,
) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let f = kernels::function(gpu, kernel.file, kernel.name)?;
    let count = n as u64;
    let mut b = gpu.stream.launch_builder(f);
    b.arg(&out);
    push_ptrs(&mut b, &inputs);
    b.arg(layout).arg(&count);
    scalars.push(&mut b);
    // SAFETY: every kernel of this shape is declared `(O* out, const T* in_0, ..,
    // Strided<S>, u64 n, scalars...)` (checked against `kernels/*.cu` for each caller: the
    // `u64` addresses are the pointer parameters, `StridedArg<S>` is laid out as `Strided<S>`
    // and the scalars are pushed with the kernel's types); the caller's addresses are live
    // buffers on `gpu` that the layout's offsets stay inside, for the `n` items the grid-stride
    // loop visits, and the launch is queued on `gpu`'s stream after the writes that made them.
    unsafe { b.launch(grid(gpu, n, per_thread)) }.map_err(|e| gpu.error(kernel.context, e))?;
    Ok(())
}

/// Kernels over `n` contiguous items: `kernel(p_0, .., p_{P-1}, u64 n, scalars...)` with a
/// grid-stride loop and `per_thread` items per thread (fills, ranges, random values, the
/// optimizer updates, the second pass of the reductions). Nothing is queued for `n == 0`.
///
/// Each address is a live buffer on `gpu` holding what the kernel indexes for `n` items.
pub(crate) fn flat<const P: usize, X: Scalars>(
    gpu: &'static GpuContext,
    kernel: Kernel<'_>,
    ptrs: [u64; P],
    n: usize,
    scalars: X,
    per_thread: usize,
) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let f = kernels::function(gpu, kernel.file, kernel.name)?;
    let count = n as u64;
    let mut b = gpu.stream.launch_builder(f);
    push_ptrs(&mut b, &ptrs);
    b.arg(&count);
    scalars.push(&mut b);
    // SAFETY: every kernel of this shape is declared `(T* p_0, .., u64 n, scalars...)`, the
    // caller pushing the scalars with the kernel's types; each address is a live buffer on
    // `gpu` covering the `n` items the grid-stride loop visits, queued after its writes.
    unsafe { b.launch(grid(gpu, n, per_thread)) }.map_err(|e| gpu.error(kernel.context, e))?;
    Ok(())
}

/// Row-wise kernels, one block per row (grid-stride over the rest), with a power-of-two block
/// of 32 to `max_threads` threads: `kernel(p_0, .., p_{P-1}, u64 rows, u64 cols, scalars...)`
/// (softmax, cross-entropy and its gradient). Nothing is queued for `rows == 0`.
///
/// Each address is a live buffer on `gpu` holding what the kernel indexes for `rows` rows of
/// `cols` elements.
pub(crate) fn per_row<const P: usize, X: Scalars>(
    gpu: &'static GpuContext,
    kernel: Kernel<'_>,
    ptrs: [u64; P],
    (rows, cols): (usize, usize),
    max_threads: u32,
    scalars: X,
) -> Result<()> {
    if rows == 0 {
        return Ok(());
    }
    let f = kernels::function(gpu, kernel.file, kernel.name)?;
    let (r, c) = (rows as u64, cols as u64);
    let mut b = gpu.stream.launch_builder(f);
    push_ptrs(&mut b, &ptrs);
    b.arg(&r).arg(&c);
    scalars.push(&mut b);
    // SAFETY: every kernel of this shape is declared `(T* p_0, .., u64 rows, u64 cols,
    // scalars...)`, the caller pushing the scalars with the kernel's types; each address is a
    // live buffer on `gpu` covering what the kernel reads or writes of `rows` x `cols`; the
    // block size is a power of two of at least 32, as the kernels' block reductions need.
    unsafe { b.launch(launch_config_per_row(gpu, rows, cols, max_threads)) }
        .map_err(|e| gpu.error(kernel.context, e))?;
    Ok(())
}

/// Kernels that one block runs over `n` items: `kernel(p_0, .., p_{P-1}, u64 n, scalars...)`,
/// the block a power of two from 32 to 1024 threads (the sums of the cross-entropy).
///
/// Each address is a live buffer on `gpu` holding what the kernel indexes for `n` items.
pub(crate) fn one_block<const P: usize, X: Scalars>(
    gpu: &'static GpuContext,
    kernel: Kernel<'_>,
    ptrs: [u64; P],
    n: usize,
    scalars: X,
) -> Result<()> {
    let f = kernels::function(gpu, kernel.file, kernel.name)?;
    let count = n as u64;
    let cfg = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (block_for(n, 1024), 1, 1),
        shared_mem_bytes: 0,
    };
    let mut b = gpu.stream.launch_builder(f);
    push_ptrs(&mut b, &ptrs);
    b.arg(&count);
    scalars.push(&mut b);
    // SAFETY: every kernel of this shape is declared `(T* p_0, .., u64 n, scalars...)`, the
    // caller pushing the scalars with the kernel's types; each address is a live buffer on
    // `gpu` covering what the kernel indexes for `n` items; one block of a multiple of 32
    // threads, as its block reduction needs.
    unsafe { b.launch(cfg) }.map_err(|e| gpu.error(kernel.context, e))?;
    Ok(())
}

/// Index and scatter kernels: `kernel(p_0, .., p_{P-1}, Args args, u64 n)`, one thread per
/// item of `n` (grid-stride), `Args` a `#[repr(C)]` description of the operands' shapes and
/// strides. Nothing is queued for `n == 0`.
///
/// `args` is laid out as the kernel's struct and describes the buffers behind the addresses
/// (every offset it yields stays inside them; an index read from memory is checked on the
/// device before it is used).
pub(crate) fn indexed<const P: usize, A: DeviceRepr>(
    gpu: &'static GpuContext,
    kernel: Kernel<'_>,
    ptrs: [u64; P],
    args: &A,
    n: usize,
) -> Result<()> {
    if n == 0 {
        return Ok(());
    }
    let f = kernels::function(gpu, kernel.file, kernel.name)?;
    let count = n as u64;
    let mut b = gpu.stream.launch_builder(f);
    push_ptrs(&mut b, &ptrs);
    b.arg(args).arg(&count);
    // SAFETY: every kernel of this shape is declared `(T* p_0, .., Args, u64 n)`, `A` being
    // laid out as its `Args` struct (a `DeviceRepr` whose impl says so); the addresses are live
    // buffers on `gpu` that `args` describes, and the kernel checks indices read from memory
    // against `args` before using them.
    unsafe { b.launch(grid(gpu, n, 1)) }.map_err(|e| gpu.error(kernel.context, e))?;
    Ok(())
}

/// Reductions over a two-part layout: `kernel(p_0, .., p_{P-1}, Layout layout, scalars...)`
/// with the caller's launch plan `cfg` (blocks per output and a split of the reduced range
/// over `gridDim.y`).
///
/// `layout` is laid out as the kernel's struct and describes the input behind the addresses;
/// the output and partial buffers hold what `cfg`'s grid writes.
pub(crate) fn reduction<const P: usize, L: DeviceRepr, X: Scalars>(
    gpu: &'static GpuContext,
    kernel: Kernel<'_>,
    ptrs: [u64; P],
    layout: &L,
    scalars: X,
    cfg: LaunchConfig,
) -> Result<()> {
    let f = kernels::function(gpu, kernel.file, kernel.name)?;
    let mut b = gpu.stream.launch_builder(f);
    push_ptrs(&mut b, &ptrs);
    b.arg(layout);
    scalars.push(&mut b);
    // SAFETY: every kernel of this shape is declared `(T* p_0, .., Layout, scalars...)`, `L`
    // laid out as its layout struct and the scalars pushed with the kernel's types; the input
    // is the view `layout` describes and the output and partial buffers hold what the grid of
    // `cfg` writes (row blocks a multiple of 32 threads).
    unsafe { b.launch(cfg) }.map_err(|e| gpu.error(kernel.context, e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguous_tensors_merge_to_one_dimension() {
        let a = strided_layout::<2>(&[4, 5, 6], [&[30, 6, 1], &[30, 6, 1]]);
        assert_eq!(a.rank, 1);
        assert_eq!(a.shape[0], 120);
        assert_eq!(a.strides[0][0], 1);
        assert_eq!(a.small, 1);
    }

    #[test]
    fn broadcasts_and_transposes_keep_their_dimensions() {
        // [4, 6] + [6]: the broadcast operand has stride 0 on dim 0.
        let b = strided_layout::<2>(&[4, 6], [&[6, 1], &[0, 1]]);
        assert_eq!(b.rank, 2);
        assert_eq!(&b.shape[..2], &[4, 6]);
        assert_eq!(&b.strides[1][..2], &[0, 1]);
        // A transpose: dims cannot merge.
        let t = strided_layout::<1>(&[3, 2], [&[1, 3]]);
        assert_eq!(t.rank, 2);
        // Size-1 dims vanish; a scalar has rank 0.
        let s = strided_layout::<1>(&[1, 1], [&[0, 0]]);
        assert_eq!(s.rank, 0);
    }

    #[test]
    fn large_offsets_use_64_bit_indexing() {
        let big = strided_layout::<1>(&[2, 3], [&[1 << 33, 1]]);
        assert_eq!(big.small, 0);
    }
}
