//! CPU kernels for `cumsum` and `sort`: lines in parallel (`backend::cpu::parallel`, the
//! calling thread one of the workers), in groups with one scratch buffer each, no allocation
//! per element. Every scratch buffer is allocated fallibly: a line
//! the host has no room to sort is [`Error::CpuOutOfMemory`](crate::core::error::Error), never
//! an abort.

use super::Lines;
use crate::backend::cpu::parallel::{for_each_chunk_mut, for_each_chunk_pair_mut, map_items};
use crate::core::error::Result;
use crate::core::layout::Dims;
use crate::core::pool::filled_vec;
use crate::core::raw::RawTensor;
use crate::core::Element;
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};

/// An element type `cumsum` runs on, with the type it accumulates in (`f32` for the 16-bit
/// floats, rounded once per output, as PyTorch's CPU kernel).
pub(crate) trait Scan: Element {
    type Acc: Copy + Send + Sync;
    const ZERO_ACC: Self::Acc;
    fn add_to(acc: Self::Acc, x: Self) -> Self::Acc;
    fn out(acc: Self::Acc) -> Self;
}

macro_rules! scan_plain {
    ($t:ty, $zero:expr) => {
        impl Scan for $t {
            type Acc = $t;
            const ZERO_ACC: $t = $zero;
            #[inline]
            fn add_to(acc: $t, x: $t) -> $t {
                acc + x
            }
            #[inline]
            fn out(acc: $t) -> $t {
                acc
            }
        }
    };
}
scan_plain!(f32, 0.0);
scan_plain!(f64, 0.0);

impl Scan for i64 {
    type Acc = i64;
    const ZERO_ACC: i64 = 0;
    #[inline]
    fn add_to(acc: i64, x: i64) -> i64 {
        acc.wrapping_add(x)
    }
    #[inline]
    fn out(acc: i64) -> i64 {
        acc
    }
}

/// `bool` is refused before the kernels (`mod.rs`); the dispatch still names it.
impl Scan for bool {
    type Acc = bool;
    const ZERO_ACC: bool = false;
    #[inline]
    fn add_to(acc: bool, x: bool) -> bool {
        acc | x
    }
    #[inline]
    fn out(acc: bool) -> bool {
        acc
    }
}

macro_rules! scan_half {
    ($t:ty) => {
        impl Scan for $t {
            type Acc = f32;
            const ZERO_ACC: f32 = 0.0;
            #[inline]
            fn add_to(acc: f32, x: $t) -> f32 {
                acc + x.to_f32()
            }
            #[inline]
            fn out(acc: f32) -> $t {
                <$t>::from_f32(acc)
            }
        }
    };
}
scan_half!(half::f16);
scan_half!(half::bf16);

/// Scans one `[n, inner]` block: row by row, so the inner loop runs over contiguous memory.
fn scan_block<T: Scan>(x: &[T], out: &mut [T], acc: &mut [T::Acc], n: usize, reverse: bool) {
    let inner = acc.len();
    acc.fill(T::ZERO_ACC);
    for step in 0..n {
        let i = if reverse { n - 1 - step } else { step };
        let (xs, os) = (
            &x[i * inner..(i + 1) * inner],
            &mut out[i * inner..(i + 1) * inner],
        );
        for ((a, &v), o) in acc.iter_mut().zip(xs).zip(os) {
            *a = T::add_to(*a, v);
            *o = T::out(*a);
        }
    }
}

fn cumsum_typed<T: Scan>(x: &[T], lines: Lines, reverse: bool) -> Result<Vec<T>> {
    let Lines { outer, n, inner } = lines;
    let block = n * inner;
    let mut out = T::pool().take(outer * block)?;
    if block == 0 {
        return Ok(out);
    }
    if outer > 1 && outer * block >= 1 << 15 && !cfg!(miri) {
        let failed = AtomicBool::new(false);
        for_each_chunk_mut(&mut out, group(outer) * block, &|start, o| {
            let Ok(mut acc) = filled_vec(inner, T::ZERO_ACC) else {
                return failed.store(true, AtomicOrdering::Relaxed);
            };
            for (o, xs) in o.chunks_mut(block).zip(x[start..].chunks(block)) {
                scan_block(xs, o, &mut acc, n, reverse);
            }
        });
        scratch_failed::<T::Acc>(&failed, inner)?;
    } else if outer == 1 && inner >= 64 && block >= 1 << 15 && !cfg!(miri) {
        // One block with many columns: the columns in parallel strips.
        let strip = inner.div_ceil(rayon::current_num_threads().max(1)).max(16);
        let strips: Vec<(usize, usize)> = (0..inner)
            .step_by(strip)
            .map(|s| (s, (s + strip).min(inner)))
            .collect();
        let parts: Vec<Vec<T>> = map_items(strips.clone(), &|(s, e)| {
            let w = e - s;
            let mut acc = filled_vec(w, T::ZERO_ACC)?;
            let mut part = filled_vec(n * w, T::ZERO)?;
            for step in 0..n {
                let i = if reverse { n - 1 - step } else { step };
                for j in 0..w {
                    acc[j] = T::add_to(acc[j], x[i * inner + s + j]);
                    part[i * w + j] = T::out(acc[j]);
                }
            }
            Ok(part)
        })
        .into_iter()
        .collect::<Result<_>>()?;
        for (&(s, e), part) in strips.iter().zip(&parts) {
            let w = e - s;
            for i in 0..n {
                out[i * inner + s..i * inner + e].copy_from_slice(&part[i * w..(i + 1) * w]);
            }
        }
    } else {
        let mut acc = filled_vec(inner, T::ZERO_ACC)?;
        for (o, xs) in out.chunks_mut(block).zip(x.chunks(block)) {
            scan_block(xs, o, &mut acc, n, reverse);
        }
    }
    Ok(out)
}

pub(crate) fn cumsum(a: &RawTensor, lines: Lines, reverse: bool) -> Result<RawTensor> {
    let (start, len) = (a.layout.offset, a.numel());
    let s = a.cpu_storage().expect("cpu");
    let shape = Dims::shape(a.shape())?;
    cpu_dispatch!(s, |data: T| {
        let out = cumsum_typed::<T>(&data[start..start + len], lines, reverse)?;
        Ok(RawTensor::from_cpu_vec(out, shape))
    })
}

/// An element type `sort` orders, by an unsigned key whose order is sort's: NaN above every
/// number and all NaNs equal, `-0.0` equal to `0.0` (PyTorch's order for sort and topk).
pub(crate) trait Sortable: Element + PartialOrd {
    /// Bits of [`key`](Self::key) in use (the low ones).
    const KEY_BITS: u32;
    fn key(self) -> u64;
}

macro_rules! float_key {
    ($t:ty, $bits:ty, $n:expr) => {
        impl Sortable for $t {
            const KEY_BITS: u32 = $n;
            #[inline(always)]
            fn key(self) -> u64 {
                if self.is_nan() {
                    return <$bits>::MAX as u64;
                }
                // `+ 0.0` turns `-0.0` into `0.0` and leaves every other number as it is; a
                // negative number's bits count down as it grows, a positive one's up.
                let b = (self + 0.0).to_bits();
                (if b >> ($n - 1) == 1 {
                    !b
                } else {
                    b | 1 << ($n - 1)
                }) as u64
            }
        }
    };
}
float_key!(f32, u32, 32);
float_key!(f64, u64, 64);

impl Sortable for half::f16 {
    const KEY_BITS: u32 = 32;
    #[inline(always)]
    fn key(self) -> u64 {
        self.to_f32().key()
    }
}

impl Sortable for half::bf16 {
    const KEY_BITS: u32 = 32;
    #[inline(always)]
    fn key(self) -> u64 {
        self.to_f32().key()
    }
}

impl Sortable for i64 {
    const KEY_BITS: u32 = 64;
    #[inline(always)]
    fn key(self) -> u64 {
        (self as u64) ^ 1 << 63
    }
}

impl Sortable for bool {
    const KEY_BITS: u32 = 1;
    #[inline(always)]
    fn key(self) -> u64 {
        self as u64
    }
}

/// A value's key and its index in one integer, the key above: integers sort in sort's order,
/// ties by index (so an unstable sort gives the stable result), with no comparator to call.
trait Packed: Copy + Ord + Send {
    fn pack(key: u64, index: usize) -> Self;
    fn index(self) -> usize;
}

/// A key of at most 32 bits and an index below 2^32.
impl Packed for u64 {
    #[inline(always)]
    fn pack(key: u64, index: usize) -> Self {
        key << 32 | index as u64
    }
    #[inline(always)]
    fn index(self) -> usize {
        (self & 0xffff_ffff) as usize
    }
}

impl Packed for u128 {
    #[inline(always)]
    fn pack(key: u64, index: usize) -> Self {
        (key as u128) << 64 | index as u128
    }
    #[inline(always)]
    fn index(self) -> usize {
        self as u64 as usize
    }
}

/// Whether [`sort_line`] finds the first `k` of a line of `n` in one pass (a few of a long
/// line, `topk`) rather than by sorting the line.
fn scans(n: usize, k: usize) -> bool {
    k <= 64 && k * 16 <= n
}

/// How many packed words [`sort_line`] needs for a line.
fn scratch_len(n: usize, k: usize) -> usize {
    if scans(n, k) {
        k + 1
    } else {
        n
    }
}

/// A scratch buffer with the room [`sort_line`] needs, allocated fallibly: a line is sorted in
/// a copy of packed `(key, index)` words, twice (`u64`) or four times (`u128`) the size of an
/// `f32` line.
fn line_scratch<P>(n: usize, k: usize) -> Result<Vec<P>> {
    crate::core::pool::empty_vec(scratch_len(n, k))
}

/// Lines (or blocks of lines) per task of a parallel loop over `count` of them: sixteen tasks
/// per thread, so that the threads finish within a sixteenth of their share of each other (a
/// thread that starts late leaves its tasks to the others), each task with one scratch buffer
/// for all its lines. (With four, `topk(16, 1)` on 4096 lines of 4096 ran 12% slower than
/// `rayon`'s adaptive split.)
fn group(count: usize) -> usize {
    count
        .div_ceil(16 * rayon::current_num_threads().max(1))
        .max(1)
}

/// The error of a parallel loop that set `failed` when a task could not allocate its scratch
/// of `len` values of `S` (a task cannot return one itself).
fn scratch_failed<S>(failed: &AtomicBool, len: usize) -> Result<()> {
    if failed.load(AtomicOrdering::Relaxed) {
        return Err(crate::core::pool::out_of_memory::<S>(len));
    }
    Ok(())
}

/// Sorts one line (`x[i * inner]`, `i < n`) as packed words in `scratch` and writes its first
/// `k` (values, indices) to `vs`/`is` at stride `step`. The order is total (equal values by
/// their index), so the unstable sort and `select_nth` give the stable result; descending
/// inverts the keys but not the indices, so ties stay in index order.
#[allow(clippy::too_many_arguments)]
fn sort_line<T: Sortable, P: Packed>(
    x: &[T],
    inner: usize,
    n: usize,
    k: usize,
    descending: bool,
    scratch: &mut Vec<P>,
    vs: &mut [T],
    is: &mut [i64],
    step: usize,
) {
    scratch.clear();
    if k == 0 {
        return;
    }
    let flip = if descending {
        u64::MAX >> (64 - T::KEY_BITS)
    } else {
        0
    };
    let packed = |i: usize| P::pack(x[i * inner].key() ^ flip, i);
    if scans(n, k) {
        // A few of a long line (`topk`): one pass keeping the best `k` so far in order. Once
        // `k` are kept, an element enters only when it beats the `k`-th, which after the first
        // few hundred is rare: a value strictly worse than the `k`-th's (neither NaN) is
        // rejected by one compare, any other gets its key.
        let mut kth: Option<T> = None;
        for i in 0..n {
            if let Some(t) = kth {
                let v = x[i * inner];
                if if descending { v < t } else { v > t } {
                    continue;
                }
            }
            let e = packed(i);
            if scratch.len() == k {
                if e > scratch[k - 1] {
                    continue;
                }
                scratch.pop();
            }
            let at = scratch.partition_point(|b| *b < e);
            scratch.insert(at, e);
            if scratch.len() == k {
                kth = Some(x[scratch[k - 1].index() * inner]);
            }
        }
    } else {
        scratch.extend((0..n).map(packed));
        if k < n {
            scratch.select_nth_unstable(k - 1);
            scratch[..k].sort_unstable();
        } else {
            scratch.sort_unstable();
        }
    }
    for (r, p) in scratch[..k].iter().enumerate() {
        let i = p.index();
        vs[r * step] = x[i * inner];
        is[r * step] = i as i64;
    }
}

fn sort_typed<T: Sortable>(
    x: &[T],
    lines: Lines,
    descending: bool,
    k: usize,
) -> Result<(Vec<T>, Vec<i64>)> {
    let count = lines.outer * lines.inner;
    let mut values = T::pool().take(count * k)?;
    let mut indices = crate::core::pool::zeroed_vec::<i64>(count * k)?;
    if count * k == 0 {
        return Ok((values, indices));
    }
    let out = (&mut values[..], &mut indices[..]);
    if T::KEY_BITS <= 32 && lines.n <= 1 << 32 {
        sort_lines::<T, u64>(x, lines, descending, k, out)?;
    } else {
        sort_lines::<T, u128>(x, lines, descending, k, out)?;
    }
    Ok((values, indices))
}

/// The lines' first `k` (values, indices) into `values`/`indices`, sorted as words `P`.
fn sort_lines<T: Sortable, P: Packed>(
    x: &[T],
    lines: Lines,
    descending: bool,
    k: usize,
    (values, indices): (&mut [T], &mut [i64]),
) -> Result<()> {
    let Lines { outer, n, inner } = lines;
    let count = outer * inner;
    if k == 0 || count == 0 {
        return Ok(()); // nothing to write (and no zero-length chunks to split into)
    }
    let parallel = count > 1 && count * n >= 1 << 14 && !cfg!(miri);
    if inner == 1 {
        // Lines are contiguous, and so are their outputs.
        let run = |(line, (vs, is)): (usize, (&mut [T], &mut [i64])), scratch: &mut Vec<P>| {
            sort_line(&x[line * n..], 1, n, k, descending, scratch, vs, is, 1)
        };
        let pairs = values.chunks_mut(k).zip(indices.chunks_mut(k)).enumerate();
        if parallel {
            let failed = AtomicBool::new(false);
            for_each_chunk_pair_mut(values, indices, group(count) * k, &|start, vs, is| {
                let Ok(mut scratch) = line_scratch(n, k) else {
                    return failed.store(true, AtomicOrdering::Relaxed);
                };
                let pairs = vs.chunks_mut(k).zip(is.chunks_mut(k));
                for (j, p) in pairs.enumerate() {
                    run((start / k + j, p), &mut scratch);
                }
            });
            scratch_failed::<P>(&failed, scratch_len(n, k))?;
        } else {
            let mut scratch = line_scratch(n, k)?;
            pairs.for_each(|p| run(p, &mut scratch));
        }
        return Ok(());
    }
    // Strided lines: one `[k, inner]` output block per outer index.
    let block = |o: usize, vs: &mut [T], is: &mut [i64], scratch: &mut Vec<P>| {
        for j in 0..inner {
            let line = &x[o * n * inner + j..];
            sort_line(
                line,
                inner,
                n,
                k,
                descending,
                scratch,
                &mut vs[j..],
                &mut is[j..],
                inner,
            );
        }
    };
    if parallel && outer > 1 {
        let failed = AtomicBool::new(false);
        let len = k * inner;
        for_each_chunk_pair_mut(values, indices, group(outer) * len, &|start, vs, is| {
            let Ok(mut scratch) = line_scratch(n, k) else {
                return failed.store(true, AtomicOrdering::Relaxed);
            };
            let blocks = vs.chunks_mut(len).zip(is.chunks_mut(len));
            for (j, (vs, is)) in blocks.enumerate() {
                block(start / len + j, vs, is, &mut scratch);
            }
        });
        scratch_failed::<P>(&failed, scratch_len(n, k))?;
    } else {
        let mut scratch = line_scratch(n, k)?;
        for (o, (vs, is)) in values
            .chunks_mut(k * inner)
            .zip(indices.chunks_mut(k * inner))
            .enumerate()
        {
            block(o, vs, is, &mut scratch);
        }
    }
    Ok(())
}

pub(crate) fn sort(
    a: &RawTensor,
    lines: Lines,
    descending: bool,
    k: usize,
    shape: Dims,
) -> Result<(RawTensor, RawTensor)> {
    let (start, len) = (a.layout.offset, a.numel());
    let s = a.cpu_storage().expect("cpu");
    cpu_dispatch!(s, |data: T| {
        let (v, i) = sort_typed::<T>(&data[start..start + len], lines, descending, k)?;
        Ok((
            RawTensor::from_cpu_vec(v, shape),
            RawTensor::from_cpu_vec(i, shape),
        ))
    })
}

impl super::SortKernel for crate::ops::backend::CpuBackend {
    #[inline(always)]
    fn cumsum(self, a: &RawTensor, lines: Lines, reverse: bool) -> Result<RawTensor> {
        cumsum(a, lines, reverse)
    }
    #[inline(always)]
    fn sort(
        self,
        a: &RawTensor,
        lines: Lines,
        descending: bool,
        k: usize,
        shape: Dims,
    ) -> Result<(RawTensor, RawTensor)> {
        sort(a, lines, descending, k, shape)
    }
}
