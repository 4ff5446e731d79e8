//! Kernel arguments that describe strided operands, and launch geometry.

use super::context::GpuContext;
use crate::core::layout::MAX_DIMS;
use cudarc::driver::{DeviceRepr, LaunchConfig};

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
pub(crate) fn strided<const K: usize>(shape: &[usize], strides: [&[usize]; K]) -> StridedArg<K> {
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

/// Grid for the vectorised element-wise kernels (four elements per load).
pub(crate) fn elementwise(gpu: &GpuContext, n: usize) -> LaunchConfig {
    grid(gpu, n, 4)
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
pub(crate) fn per_row(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contiguous_tensors_merge_to_one_dimension() {
        let a = strided::<2>(&[4, 5, 6], [&[30, 6, 1], &[30, 6, 1]]);
        assert_eq!(a.rank, 1);
        assert_eq!(a.shape[0], 120);
        assert_eq!(a.strides[0][0], 1);
        assert_eq!(a.small, 1);
    }

    #[test]
    fn broadcasts_and_transposes_keep_their_dimensions() {
        // [4, 6] + [6]: the broadcast operand has stride 0 on dim 0.
        let b = strided::<2>(&[4, 6], [&[6, 1], &[0, 1]]);
        assert_eq!(b.rank, 2);
        assert_eq!(&b.shape[..2], &[4, 6]);
        assert_eq!(&b.strides[1][..2], &[0, 1]);
        // A transpose: dims cannot merge.
        let t = strided::<1>(&[3, 2], [&[1, 3]]);
        assert_eq!(t.rank, 2);
        // Size-1 dims vanish; a scalar has rank 0.
        let s = strided::<1>(&[1, 1], [&[0, 0]]);
        assert_eq!(s.rank, 0);
    }

    #[test]
    fn large_offsets_use_64_bit_indexing() {
        let big = strided::<1>(&[2, 3], [&[1 << 33, 1]]);
        assert_eq!(big.small, 0);
    }
}
