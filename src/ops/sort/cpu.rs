//! CPU kernels for `cumsum` and `sort`: lines in parallel (rayon), one scratch buffer per
//! worker, no allocation per element. Every scratch buffer is allocated fallibly: a line
//! the host has no room to sort is [`Error::CpuOutOfMemory`](crate::core::error::Error), never
//! an abort.

use super::Lines;
use crate::core::error::Result;
use crate::core::layout::Dims;
use crate::core::pool::filled_vec;
use crate::core::raw::RawTensor;
use crate::core::Element;
use rayon::prelude::*;
use std::cmp::Ordering;
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
        out.par_chunks_mut(block)
            .zip(x.par_chunks(block))
            .for_each_init(
                || filled_vec(inner, T::ZERO_ACC),
                |acc, (o, xs)| match acc {
                    Ok(acc) => scan_block(xs, o, acc, n, reverse),
                    Err(_) => failed.store(true, AtomicOrdering::Relaxed),
                },
            );
        if failed.load(AtomicOrdering::Relaxed) {
            return Err(crate::core::pool::out_of_memory::<T::Acc>(inner));
        }
    } else if outer == 1 && inner >= 64 && block >= 1 << 15 && !cfg!(miri) {
        // One block with many columns: the columns in parallel strips.
        let strip = inner.div_ceil(rayon::current_num_threads().max(1)).max(16);
        let strips: Vec<(usize, usize)> = (0..inner)
            .step_by(strip)
            .map(|s| (s, (s + strip).min(inner)))
            .collect();
        let parts: Vec<Vec<T>> = strips
            .par_iter()
            .map(|&(s, e)| {
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

/// An element type `sort` orders: NaN above every number (PyTorch's order for sort and topk).
pub(crate) trait Sortable: Element + PartialOrd {
    fn nan(self) -> bool;
}

macro_rules! sortable {
    ($($t:ty),*) => {$(
        impl Sortable for $t {
            #[inline]
            #[allow(clippy::eq_op)]
            fn nan(self) -> bool {
                self != self
            }
        }
    )*};
}
sortable!(f32, f64, i64, half::f16, half::bf16, bool);

/// The ascending order of values, NaN last (all NaNs equal).
#[inline]
fn value_order<T: Sortable>(a: T, b: T) -> Ordering {
    match (a.nan(), b.nan()) {
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
    }
}

/// Whether [`sort_line`] finds the first `k` of a line of `n` in one pass (a few of a long
/// line, `topk`) rather than by sorting the line.
fn scans(n: usize, k: usize) -> bool {
    k <= 64 && k * 16 <= n
}

/// A scratch buffer with the room [`sort_line`] needs, allocated fallibly: a line is sorted in
/// a copy of `(value, index)` pairs, four times the size of an `f32` line.
fn line_scratch<T>(n: usize, k: usize) -> Result<Vec<(T, i64)>> {
    crate::core::pool::empty_vec(if scans(n, k) { k + 1 } else { n })
}

/// The error of a parallel loop whose scratch could not be allocated (see [`line_scratch`]).
fn scratch_failed<T>(failed: &AtomicBool, n: usize, k: usize) -> Result<()> {
    if failed.load(AtomicOrdering::Relaxed) {
        return Err(crate::core::pool::out_of_memory::<(T, i64)>(
            if scans(n, k) { k + 1 } else { n },
        ));
    }
    Ok(())
}

/// Sorts one line (`x[i * inner]`, `i < n`) into `scratch` and writes its first `k`
/// (values, indices) to `vs`/`is` at stride `step`. The order is total (equal values by their
/// index), so the unstable sort and `select_nth` give the stable result.
#[allow(clippy::too_many_arguments)]
fn sort_line<T: Sortable>(
    x: &[T],
    inner: usize,
    n: usize,
    k: usize,
    descending: bool,
    scratch: &mut Vec<(T, i64)>,
    vs: &mut [T],
    is: &mut [i64],
    step: usize,
) {
    scratch.clear();
    let cmp = |a: &(T, i64), b: &(T, i64)| {
        let by_value = if descending {
            value_order(b.0, a.0)
        } else {
            value_order(a.0, b.0)
        };
        by_value.then(a.1.cmp(&b.1))
    };
    if k == 0 {
        return;
    }
    let scan = scans(n, k);
    if scan {
        // A few of a long line (`topk`): one pass keeping the best `k` so far in order. An
        // element enters only when it beats the `k`-th, which after the first few hundred
        // is rare, so the pass is mostly one compare per element.
        for i in 0..n {
            let v = x[i * inner];
            if scratch.len() == k {
                let last = scratch[k - 1].0;
                let beats = if descending {
                    value_order(v, last) == Ordering::Greater
                } else {
                    value_order(v, last) == Ordering::Less
                };
                if !beats {
                    continue;
                }
                scratch.pop();
            }
            // Later indices lose ties, so the new one goes after every equal value.
            let e = (v, i as i64);
            let at = scratch.partition_point(|b| cmp(b, &e) == Ordering::Less);
            scratch.insert(at, e);
        }
    } else {
        scratch.extend((0..n).map(|i| (x[i * inner], i as i64)));
    }
    if scan {
        // Filled by the pass above, already in order.
    } else if k < n {
        scratch.select_nth_unstable_by(k - 1, cmp);
        scratch[..k].sort_unstable_by(cmp);
    } else {
        scratch.sort_unstable_by(cmp);
    }
    for (r, &(v, i)) in scratch[..k].iter().enumerate() {
        vs[r * step] = v;
        is[r * step] = i;
    }
}

fn sort_typed<T: Sortable>(
    x: &[T],
    lines: Lines,
    descending: bool,
    k: usize,
) -> Result<(Vec<T>, Vec<i64>)> {
    let Lines { outer, n, inner } = lines;
    let count = outer * inner;
    let mut values = T::pool().take(count * k)?;
    let mut indices = crate::core::pool::zeroed_vec::<i64>(count * k)?;
    if count * k == 0 {
        return Ok((values, indices));
    }
    let parallel = count > 1 && count * n >= 1 << 14 && !cfg!(miri);
    if inner == 1 {
        // Lines are contiguous, and so are their outputs.
        let run = |(line, (vs, is)): (usize, (&mut [T], &mut [i64])), scratch: &mut Vec<_>| {
            sort_line(&x[line * n..], 1, n, k, descending, scratch, vs, is, 1)
        };
        let pairs = values.chunks_mut(k).zip(indices.chunks_mut(k)).enumerate();
        if parallel {
            let failed = AtomicBool::new(false);
            values
                .par_chunks_mut(k)
                .zip(indices.par_chunks_mut(k))
                .enumerate()
                .for_each_init(
                    || line_scratch(n, k),
                    |s, p| match s {
                        Ok(s) => run(p, s),
                        Err(_) => failed.store(true, AtomicOrdering::Relaxed),
                    },
                );
            scratch_failed::<T>(&failed, n, k)?;
        } else {
            let mut scratch = line_scratch(n, k)?;
            pairs.for_each(|p| run(p, &mut scratch));
        }
        return Ok((values, indices));
    }
    // Strided lines: one `[k, inner]` output block per outer index.
    let block = |o: usize, vs: &mut [T], is: &mut [i64], scratch: &mut Vec<(T, i64)>| {
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
        values
            .par_chunks_mut(k * inner)
            .zip(indices.par_chunks_mut(k * inner))
            .enumerate()
            .for_each_init(
                || line_scratch(n, k),
                |s, (o, (vs, is))| match s {
                    Ok(s) => block(o, vs, is, s),
                    Err(_) => failed.store(true, AtomicOrdering::Relaxed),
                },
            );
        scratch_failed::<T>(&failed, n, k)?;
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
    Ok((values, indices))
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
