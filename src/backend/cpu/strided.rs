//! Walking strided views on the CPU: coalesced dimensions, runs along the innermost one, and
//! element-wise maps split across threads.

use crate::core::layout::{Dims, Layout};

/// Below this many output elements, element-wise work stays on the calling thread.
pub(crate) const PARALLEL_THRESHOLD: usize = 1 << 16;
/// Elements per parallel task.
const CHUNK: usize = 1 << 15;

/// `K` operands laid over one iteration shape, with dimensions merged wherever every operand
/// allows it, so most walks have one or two dimensions.
pub(crate) struct Strided<const K: usize> {
    shape: Dims,
    strides: [Dims; K],
    offsets: [usize; K],
}

impl<const K: usize> Strided<K> {
    /// `layouts` must all have the same shape (broadcast them first).
    pub(crate) fn new(layouts: [&Layout; K]) -> Self {
        let shape = layouts[0].shape;
        let mut out_shape = Dims::EMPTY;
        let mut out_strides = [Dims::EMPTY; K];
        for d in 0..shape.len() {
            if shape[d] == 1 {
                continue;
            }
            let n = out_shape.len();
            let mergeable =
                n > 0 && (0..K).all(|k| out_strides[k][n - 1] == layouts[k].strides[d] * shape[d]);
            if mergeable {
                out_shape[n - 1] *= shape[d];
                for k in 0..K {
                    out_strides[k][n - 1] = layouts[k].strides[d];
                }
            } else {
                // Cannot fail: at most as many dims as the input.
                let _ = out_shape.push(shape[d]);
                for k in 0..K {
                    let _ = out_strides[k].push(layouts[k].strides[d]);
                }
            }
        }
        Strided {
            shape: out_shape,
            strides: out_strides,
            offsets: layouts.map(|l| l.offset),
        }
    }

    /// Calls `f(position, offsets, len, inner_strides)` for each run of elements along the
    /// innermost dimension inside the row-major positions `range`.
    #[inline]
    pub(crate) fn runs(
        &self,
        range: std::ops::Range<usize>,
        mut f: impl FnMut(usize, [usize; K], usize, [usize; K]),
    ) {
        if range.is_empty() {
            return;
        }
        let rank = self.shape.len();
        if rank == 0 {
            if !range.is_empty() {
                f(range.start, self.offsets, 1, [0; K]);
            }
            return;
        }
        let inner = self.shape[rank - 1];
        let inner_strides: [usize; K] = std::array::from_fn(|k| self.strides[k][rank - 1]);
        // Multi-index of range.start.
        let mut index = [0usize; crate::core::layout::MAX_DIMS];
        let mut rest = range.start;
        for d in (0..rank).rev() {
            index[d] = rest % self.shape[d];
            rest /= self.shape[d];
        }
        // The offsets of range.start, then kept up to date as the index advances (a short
        // innermost dim, `x[:, 1:3]`, makes a run of two elements: recomputing the offsets
        // from the whole index for each would cost more than the copy).
        let mut offsets: [usize; K] = std::array::from_fn(|k| {
            self.offsets[k]
                + index[..rank]
                    .iter()
                    .zip(self.strides[k].iter())
                    .map(|(i, s)| i * s)
                    .sum::<usize>()
        });
        let mut pos = range.start;
        while pos < range.end {
            let len = (inner - index[rank - 1]).min(range.end - pos);
            f(pos, offsets, len, inner_strides);
            pos += len;
            // Advance the multi-index by len (we are at the end of a run or of the range).
            index[rank - 1] += len;
            for k in 0..K {
                offsets[k] += len * inner_strides[k];
            }
            let mut d = rank - 1;
            while index[d] == self.shape[d] && d > 0 {
                index[d] = 0;
                for (o, s) in offsets.iter_mut().zip(&self.strides) {
                    *o -= self.shape[d] * s[d];
                }
                d -= 1;
                index[d] += 1;
                for (o, s) in offsets.iter_mut().zip(&self.strides) {
                    *o += s[d];
                }
            }
        }
    }
}

impl<const K: usize> Strided<K> {
    /// As [`Strided::runs`], but whole innermost runs that follow each other along the next
    /// dimension come as one block: `f(position, offsets, rows, row_strides, len,
    /// inner_strides)` covers `rows` runs of `len` elements, row `r` starting at `offsets +
    /// r * row_strides`. A view with a short innermost dim (`x[:, 1:3]`, runs of two) is then
    /// walked by a tight double loop instead of one callback and one carry per run.
    #[inline]
    pub(crate) fn blocks(
        &self,
        range: std::ops::Range<usize>,
        mut f: impl FnMut(usize, [usize; K], usize, [usize; K], usize, [usize; K]),
    ) {
        let rank = self.shape.len();
        if rank < 2 {
            self.runs(range, |pos, offsets, len, strides| {
                f(pos, offsets, 1, [0; K], len, strides)
            });
            return;
        }
        let inner = self.shape[rank - 1];
        let outer = self.shape[rank - 2];
        let row_strides: [usize; K] = std::array::from_fn(|k| self.strides[k][rank - 2]);
        let inner_strides: [usize; K] = std::array::from_fn(|k| self.strides[k][rank - 1]);
        // Split `range` at the edges of `[outer, inner]` planes and of partial rows: the part
        // of each plane made of whole rows is one block, the rest goes run by run.
        let plane = outer * inner;
        let mut pos = range.start;
        while pos < range.end {
            let in_plane = pos % plane;
            let (row, col) = (in_plane / inner, in_plane % inner);
            let plane_end = (pos - in_plane + plane).min(range.end);
            if col != 0 || plane_end - pos < inner {
                // A partial row: up to the end of the row or the range.
                let end = (pos - col + inner).min(range.end);
                self.runs(pos..end, |p, o, len, s| f(p, o, 1, [0; K], len, s));
                pos = end;
                continue;
            }
            let rows = ((plane_end - pos) / inner).min(outer - row);
            let offsets = self.offsets_at(pos);
            f(pos, offsets, rows, row_strides, inner, inner_strides);
            pos += rows * inner;
        }
    }

    /// Every operand's offset at the row-major position `pos`.
    fn offsets_at(&self, pos: usize) -> [usize; K] {
        let mut offsets = self.offsets;
        let mut rest = pos;
        for d in (0..self.shape.len()).rev() {
            let i = rest % self.shape[d];
            rest /= self.shape[d];
            for (o, s) in offsets.iter_mut().zip(&self.strides) {
                *o += i * s[d];
            }
        }
        offsets
    }
}

/// Below this many elements, a serial loop is not split at a cache line (the extra call would
/// cost more than the lines it saves).
const ALIGN_SPLIT_MIN: usize = 1 << 12;

/// Splits `out` into chunks, in parallel when large, and calls `f(start, chunk)` on each.
///
/// Every chunk after the first few elements starts on a 64-byte boundary, so that the loops'
/// vectors line up with cache lines. A large buffer from the system allocator starts 16 bytes
/// past one, and there every 64-byte AVX-512 load and store of a loop over it straddles two
/// lines: `relu` writing 16M `f32` took 5.3-5.5 ms against 4.1 aligned (a scratch loop, the
/// same buffers offset by 16 bytes or not), and in devtype, in `(&x + &y).relu()`, 5.4-5.6 ms
/// against 4.1-4.6 once its chunks were aligned. Only positions change, never values: each
/// element is computed from its own index.
#[inline]
pub(crate) fn for_each_chunk<O: Send>(out: &mut [O], f: impl Fn(usize, &mut [O]) + Sync) {
    if out.len() < ALIGN_SPLIT_MIN {
        f(0, out);
    } else {
        for_each_aligned_chunk(out, &f);
    }
}

/// The large half of [`for_each_chunk`]: `f` through a pointer, and never inlined (where it
/// was, the pointer's target was known again and `f` inlined at each call), so that each
/// kernel's loop is compiled once for it, not once per call below: three copies made a user's
/// binary 0.47 MB larger (`scripts/user-build.sh`: 8.17 MB against 7.67).
#[inline(never)]
fn for_each_aligned_chunk<O: Send>(out: &mut [O], f: &(dyn Fn(usize, &mut [O]) + Sync)) {
    let len = out.len();
    // Elements before the first 64-byte boundary (none where there is no such boundary).
    let head = super::elements_to_cache_line(out)
        .filter(|&h| h < len)
        .unwrap_or(0);
    let (first, rest) = out.split_at_mut(head);
    if head > 0 {
        f(0, first);
    }
    if len >= PARALLEL_THRESHOLD && !cfg!(miri) {
        par_for_each_chunk(rest, &|start, chunk| f(head + start, chunk));
    } else {
        f(head, rest);
    }
}

/// The parallel half of [`for_each_chunk`], generic over the element type only: `f` is called
/// through a pointer, once per chunk of `CHUNK` elements. Generic over the closure, `rayon`'s
/// job machinery was compiled again for every element-wise kernel (each op, element type and
/// layout case: 11,570 `rayon_core` functions, 6.6 MB of a user's 14 MB of code, measured with
/// `scripts/user-build.sh`).
fn par_for_each_chunk<O: Send>(out: &mut [O], f: &(dyn Fn(usize, &mut [O]) + Sync)) {
    super::parallel::for_each_chunk_mut(out, CHUNK, f);
}

/// `out[i] = f(a[i])` over a (possibly strided) view `la` of `a`; `out` is contiguous.
pub(crate) fn map1<A: Copy + Sync, O: Send>(
    a: &[A],
    la: &Layout,
    out: &mut [O],
    f: impl Fn(A) -> O + Sync,
) {
    if let Some(r) = la.contiguous_range() {
        let a = &a[r];
        for_each_chunk(out, |start, chunk| {
            let end = start + chunk.len();
            super::vmath::vectorized(
                #[inline(always)]
                || {
                    for (o, &x) in chunk.iter_mut().zip(&a[start..end]) {
                        *o = f(x);
                    }
                },
            )
        });
        return;
    }
    let walk = Strided::new([la]);
    for_each_chunk(out, |start, chunk| {
        walk.blocks(
            start..start + chunk.len(),
            |pos, [oa], rows, [ra], len, [sa]| {
                let dst = &mut chunk[pos - start..pos - start + rows * len];
                for (r, row) in dst.chunks_exact_mut(len).enumerate() {
                    let base = oa + r * ra;
                    for (i, o) in row.iter_mut().enumerate() {
                        *o = f(a[base + i * sa]);
                    }
                }
            },
        );
    });
}

/// `out[i] = f(a[i], b[i])` over two views already broadcast to `out`'s shape.
pub(crate) fn map2<A: Copy + Sync, B: Copy + Sync, O: Send>(
    a: &[A],
    la: &Layout,
    b: &[B],
    lb: &Layout,
    out: &mut [O],
    f: impl Fn(A, B) -> O + Sync,
) {
    if let (Some(ra), Some(rb)) = (la.contiguous_range(), lb.contiguous_range()) {
        let (a, b) = (&a[ra], &b[rb]);
        for_each_chunk(out, |start, chunk| {
            let end = start + chunk.len();
            for ((o, &x), &y) in chunk.iter_mut().zip(&a[start..end]).zip(&b[start..end]) {
                *o = f(x, y);
            }
        });
        return;
    }
    let walk = Strided::new([la, lb]);
    for_each_chunk(out, |start, chunk| {
        walk.runs(
            start..start + chunk.len(),
            |pos, [oa, ob], len, [sa, sb]| {
                let dst = &mut chunk[pos - start..pos - start + len];
                match (sa, sb) {
                    (1, 1) => {
                        for ((o, &x), &y) in
                            dst.iter_mut().zip(&a[oa..oa + len]).zip(&b[ob..ob + len])
                        {
                            *o = f(x, y);
                        }
                    }
                    (1, 0) => {
                        let y = b[ob];
                        for (o, &x) in dst.iter_mut().zip(&a[oa..oa + len]) {
                            *o = f(x, y);
                        }
                    }
                    (0, 1) => {
                        let x = a[oa];
                        for (o, &y) in dst.iter_mut().zip(&b[ob..ob + len]) {
                            *o = f(x, y);
                        }
                    }
                    _ => {
                        for (i, o) in dst.iter_mut().enumerate() {
                            *o = f(a[oa + i * sa], b[ob + i * sb]);
                        }
                    }
                }
            },
        );
    });
}

/// `out[i] = f(a[i], b[i], c[i])` over three views already broadcast to `out`'s shape.
pub(crate) fn map3<A: Copy + Sync, B: Copy + Sync, C: Copy + Sync, O: Send>(
    (a, la): (&[A], &Layout),
    (b, lb): (&[B], &Layout),
    (c, lc): (&[C], &Layout),
    out: &mut [O],
    f: impl Fn(A, B, C) -> O + Sync,
) {
    let walk = Strided::new([la, lb, lc]);
    for_each_chunk(out, |start, chunk| {
        walk.runs(
            start..start + chunk.len(),
            |pos, [oa, ob, oc], len, [sa, sb, sc]| {
                let dst = &mut chunk[pos - start..pos - start + len];
                for (i, o) in dst.iter_mut().enumerate() {
                    *o = f(a[oa + i * sa], b[ob + i * sb], c[oc + i * sc]);
                }
            },
        );
    });
}

/// In place: `a[i] = f(a[i], b[i])` where `a` is contiguous with `out`'s shape.
pub(crate) fn zip_in_place<A: Copy + Send + Sync, B: Copy + Sync>(
    a: &mut [A],
    b: &[B],
    lb: &Layout,
    f: impl Fn(A, B) -> A + Sync,
) {
    if let Some(rb) = lb.contiguous_range() {
        let b = &b[rb];
        for_each_chunk(a, |start, chunk| {
            let end = start + chunk.len();
            for (x, &y) in chunk.iter_mut().zip(&b[start..end]) {
                *x = f(*x, y);
            }
        });
        return;
    }
    let walk = Strided::new([lb]);
    for_each_chunk(a, |start, chunk| {
        walk.runs(start..start + chunk.len(), |pos, [ob], len, [sb]| {
            let dst = &mut chunk[pos - start..pos - start + len];
            for (i, x) in dst.iter_mut().enumerate() {
                *x = f(*x, b[ob + i * sb]);
            }
        });
    });
}

/// `out[i] = f(x[i], y[i])` for equally long contiguous slices.
#[inline]
pub(crate) fn zip_contiguous<T: Send, U: Copy + Sync, V: Copy + Sync>(
    x: &[U],
    y: &[V],
    out: &mut [T],
    f: impl Fn(U, V) -> T + Sync,
) {
    if out.len() < PARALLEL_THRESHOLD {
        // One thread: the plain loop, inlined into the op.
        for ((o, &a), &b) in out.iter_mut().zip(x).zip(y) {
            *o = f(a, b);
        }
        return;
    }
    for_each_chunk(out, |start, chunk| {
        let end = start + chunk.len();
        for ((o, &a), &b) in chunk.iter_mut().zip(&x[start..end]).zip(&y[start..end]) {
            *o = f(a, b);
        }
    });
}

/// `x[i] = f(x[i], y[i])` for equally long contiguous slices.
#[inline]
pub(crate) fn zip_contiguous_in_place<T: Copy + Send + Sync, U: Copy + Sync>(
    x: &mut [T],
    y: &[U],
    f: impl Fn(T, U) -> T + Sync,
) {
    for_each_chunk(x, |start, chunk| {
        let end = start + chunk.len();
        for (a, &b) in chunk.iter_mut().zip(&y[start..end]) {
            *a = f(*a, b);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The offset of row-major position `pos` in `layout`, computed from scratch.
    fn offset_of(layout: &Layout, mut pos: usize) -> usize {
        let mut offset = layout.offset;
        for d in (0..layout.rank()).rev() {
            offset += (pos % layout.shape[d]) * layout.strides[d];
            pos /= layout.shape[d];
        }
        offset
    }

    /// A small xorshift generator: fresh cases each run, a fixed seed under Miri.
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    #[test]
    fn blocks_visit_every_position_once_at_its_offset() {
        let seed = if cfg!(miri) {
            7
        } else {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(7, |d| d.as_nanos() as u64 | 1)
        };
        let mut rng = Rng(seed);
        let cases = if cfg!(miri) { 20 } else { 500 };
        for case in 0..cases {
            // A random shape of rank 0-4 (extents 1-5), a random permutation of its
            // contiguous strides, a random offset: views that do and do not coalesce.
            let rank = rng.below(5);
            let shape: Vec<usize> = (0..rank).map(|_| 1 + rng.below(5)).collect();
            let mut base = Layout::from_shape(&shape).unwrap();
            base.offset = rng.below(3);
            let mut order: Vec<usize> = (0..rank).collect();
            for i in (1..rank).rev() {
                order.swap(i, rng.below(i + 1));
            }
            let a = base.permute(&order).unwrap();
            let b = Layout::from_shape(&a.shape).unwrap();
            let n = a.numel();
            let start = rng.below(n + 1);
            let end = start + rng.below(n - start + 1);
            let walk = Strided::new([&a, &b]);
            let mut seen = vec![0u32; n];
            walk.blocks(
                start..end,
                |pos, [oa, ob], rows, [ra, rb], len, [sa, sb]| {
                    assert!(rows >= 1 && len >= 1, "case {case} seed {seed}");
                    for r in 0..rows {
                        for i in 0..len {
                            let p = pos + r * len + i;
                            seen[p] += 1;
                            let ctx = format!("case {case} seed {seed} {a:?} pos {p}");
                            assert_eq!(oa + r * ra + i * sa, offset_of(&a, p), "{ctx}");
                            assert_eq!(ob + r * rb + i * sb, offset_of(&b, p), "{ctx}");
                        }
                    }
                },
            );
            for (p, &count) in seen.iter().enumerate() {
                let want = u32::from((start..end).contains(&p));
                assert_eq!(count, want, "case {case} seed {seed} {a:?} position {p}");
            }
        }
    }

    /// `for_each_chunk` hands out every element once, at its own position, and every chunk
    /// that does not start at 0 starts on a 64-byte boundary: buffers that start anywhere, at
    /// lengths on both sides of the serial and parallel thresholds.
    #[test]
    fn chunks_cover_the_buffer_once_and_start_on_cache_lines() {
        let lens: &[usize] = if cfg!(miri) {
            &[0, 1, 63, ALIGN_SPLIT_MIN - 1, ALIGN_SPLIT_MIN + 5]
        } else {
            &[
                0,
                1,
                63,
                ALIGN_SPLIT_MIN - 1,
                ALIGN_SPLIT_MIN + 5,
                PARALLEL_THRESHOLD + 17,
                5 * CHUNK + 3,
            ]
        };
        for &len in lens {
            for skip in 0..16 {
                let mut buf = vec![0u32; len + 16];
                let out = &mut buf[skip..skip + len];
                let base = out.as_ptr() as usize;
                let calls = std::sync::Mutex::new(Vec::new());
                for_each_chunk(out, |start, chunk| {
                    assert_eq!(
                        chunk.as_ptr() as usize,
                        base + 4 * start,
                        "len {len} skip {skip}"
                    );
                    for v in chunk.iter_mut() {
                        *v += 1;
                    }
                    calls.lock().unwrap().push(start);
                });
                assert!(
                    out.iter().all(|&v| v == 1),
                    "len {len} skip {skip}: not once each"
                );
                let calls = calls.into_inner().unwrap();
                if len >= ALIGN_SPLIT_MIN {
                    for start in calls.into_iter().filter(|&s| s > 0) {
                        assert_eq!(
                            (base + 4 * start) % 64,
                            0,
                            "len {len} skip {skip} start {start}"
                        );
                    }
                }
            }
        }
    }
}
