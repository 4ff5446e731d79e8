//! The `bf16` GEMM on CPUs with AVX512-BF16 (AMD Zen 4 and later, Intel Cooper Lake and
//! Sapphire Rapids and later): `vdpbf16ps` multiplies pairs of `bf16` values and adds both
//! products to an `f32` lane, on the `bf16` data itself (half the bytes of the widened `f32`
//! operands). On an AMD Zen 4 core that is twice the `f32` FMA rate; on the Intel Xeon
//! measured (family 6, model 207), half of it, so `matmul` uses this kernel on AMD's cores only
//! ([`available`]). PyTorch's oneDNN uses the same instruction on both.
//!
//! The numbers: a `bf16` product is exact in `f32` (8-bit significands), and the instruction
//! adds each product to the `f32` accumulator with one rounding, as an `f32` FMA would; what
//! differs from the widened `f32` GEMM is the order of the sums and that subnormal inputs and
//! results are flushed to zero (the instruction ignores MXCSR). The result is rounded to `bf16`
//! once, from the `f32` accumulator.
//!
//! Layout, as the usual GEMM kernels do it (BLIS's loops): `b` is packed in units of `KC`
//! pairs of `k` by `NC` columns, panels of `NR` columns, each `f32` lane holding one column's
//! two `bf16` values of a pair (a 32-bit word), reading each pair of `b`'s rows once, front to
//! back. The rows of `dst` are split into blocks of at most `MC` rows (fewer when `k` is
//! long), as many as a multiple of the threads, which take them one at a time (a thread that
//! starts late, or shares its core, takes fewer); for each block a thread packs
//! that block of `a` for the whole of `k` (a row of pairs per row, read by the micro-kernel as
//! a broadcast to every lane), then walks `dst`'s columns in blocks of `NC` and, for each `KC`
//! block, runs the micro-kernel over every `MR x NR` tile. A unit of `b` is packed by the
//! first thread that reaches it, the others waiting for it (the threads start on different
//! column blocks, so they seldom wait): no packing pass before the products, and the unit is
//! in its packer's L2 when that thread's products start. The micro-kernel sums a tile in 24
//! of the 32 vector registers, from zero, then adds the earlier `KC` blocks' sums (kept in an
//! `f32` buffer of one row block by one column block, in L2 with the packed `a`) and, for the
//! last `KC` block, rounds the tile to `bf16` straight into `dst` (`vcvtne2ps2bf16`): no
//! `m x n` `f32` result is allocated or written, and the buffer is not needed at all when `k`
//! fits one block. The packed operands and the sums are scratch from the `f32` buffer pool
//! (`core::pool`), reused from one product to the next without being cleared.

use super::cpu::MatrixView;
use crate::backend::cpu::parallel::map_items;
use crate::core::error::Result;
use crate::core::pool::PooledVec;
use half::bf16;
use half::slice::HalfFloatSliceExt;
use std::sync::{Mutex, OnceLock};

/// Rows of the micro-kernel's tile.
const MR: usize = 12;
/// Columns of the micro-kernel's tile: two 16-lane vectors.
const NR: usize = 32;
/// Pairs of `k` per packed block. A tile's sums stay in registers for the whole block and
/// make a round trip through memory only between blocks, so the block is long: `k` up to 1024
/// in one. Its `b` micro-panel (`KC * NR * 4` bytes, 64 KiB) is read from L2 while the
/// micro-panels of `a` go past it; the kernel asks 128 bytes of it per 24 instructions, well
/// within L2's bandwidth. Measured on Zen 4 (one thread, n = 1024 and 2048): 201-211 and 192
/// GFLOP/s, against 183-201 and 158 with 128 pairs (a 16 KiB panel kept in L1).
const KC: usize = 512;
/// Most rows of `dst` per block of a thread (a multiple of `MR`); fewer when `k` is long, so
/// that the block's packed `a`, every `KC` block of it, stays within [`A_BLOCK_WORDS`].
const MC: usize = 8 * MR;
/// Words of packed `a` per row block: 256 KiB, a quarter of a Zen 4 core's L2, beside the
/// `f32` sums of one column block (`MC * NC * 4` bytes, 192 KiB) and the `b` panels going by.
const A_BLOCK_WORDS: usize = 64 * 1024;
/// Columns of `dst` per column block (a multiple of `NR`).
const NC: usize = 16 * NR;
/// Micro-panels of `b` per packed unit (one `KC` block by `UNIT_PANELS * NR` columns), the
/// grain in which `b` is packed by the thread that first needs it: fine enough that two
/// threads starting on the same column block pack different units side by side (with one
/// unit per column block, one thread packed while the other waited, 100 of 720 us at
/// n = 512).
const UNIT_PANELS: usize = 4;
/// Row stride of the `f32` sums: a column block and one cache line, so that a tile's rows
/// fall in different L1 sets (`NC` floats, 2 KiB, would put all twelve in four).
const ACC_LD: usize = NC + 16;
/// Products with fewer multiply-adds run on one thread.
const PARALLEL_FLOPS: usize = 1 << 18;

/// True when `bf16` products run this kernel: the CPU has the instruction ([`supported`]) and
/// runs it faster than the widened `f32` GEMM would run its products.
///
/// That is a property of the core, not of the flag, measured with `cargo bench --bench peak`
/// (the `vdpbf16ps` and `f32` FMA ceilings, one thread): an AMD Zen 4 core runs `vdpbf16ps` at
/// twice its `f32` FMA rate (227 against 113.5 GFLOP/s), an Intel Xeon (family 6, model 207)
/// at half of it (81.5 against 164), where this kernel reached 115-136 GFLOP/s on two threads
/// and the widened `f32` GEMM 177-188. No other Intel core has been measured; the kernel runs
/// on AMD's cores only (as measured on Zen 4), and elsewhere
/// `bf16` products are widened to `f32` as on CPUs without the instruction. The choice is made
/// from the CPU alone, so a program's results do not change from run to run.
pub(crate) fn available() -> bool {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        static NATIVE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *NATIVE.get_or_init(|| supported() && amd_cpu())
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    {
        false
    }
}

/// True when this CPU has AVX-512F, AVX-512BW and AVX512-BF16, which [`gemm`] needs.
pub(crate) fn supported() -> bool {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bw")
            && std::arch::is_x86_feature_detected!("avx512bf16")
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    {
        false
    }
}

/// True when the CPU's vendor string (CPUID leaf 0) is AMD's.
#[cfg(all(target_arch = "x86_64", not(miri)))]
fn amd_cpu() -> bool {
    let leaf = std::arch::x86_64::__cpuid(0);
    let vendor = [leaf.ebx, leaf.edx, leaf.ecx]
        .map(u32::to_le_bytes)
        .concat();
    vendor == *b"AuthenticAMD"
}

/// The bits of a `bf16` matrix view.
#[derive(Clone, Copy)]
struct Bits<'a> {
    data: &'a [u16],
    offset: usize,
    rs: usize,
    cs: usize,
}

impl Bits<'_> {
    fn new<'a>(v: &MatrixView<'a, bf16>) -> Bits<'a> {
        Bits {
            data: v.data.reinterpret_cast(),
            offset: v.offset,
            rs: v.row_stride,
            cs: v.col_stride,
        }
    }
    #[inline(always)]
    fn at(&self, r: usize, c: usize) -> u32 {
        self.data[self.offset + r * self.rs + c * self.cs] as u32
    }
}

/// Packs `b`'s pairs `q0 .. q0 + kc` (rows `2 q0 ..`) of the columns from `c_first` into
/// `block`, one `KC * NR`-word panel per `NR` columns (word `p * KC * NR + q * NR + j` = rows
/// `2 (q0 + q)` and `+ 1` of column `c_first + p * NR + j`; zero past the edges).
#[inline(always)]
fn pack_b(
    block: &mut [u32],
    b: Bits<'_>,
    (k, n): (usize, usize),
    (q0, kc): (usize, usize),
    c_first: usize,
) {
    let panel_cols = |p: usize| {
        let c0 = c_first + p * NR;
        (c0, NR.min(n - c0))
    };
    if b.cs == 1 {
        // Row-major: each pair of rows is read once, front to back, and zipped into words
        // (vectorized), one panel's `NR` columns at a time.
        let width = n - c_first;
        for q in 0..kc {
            let r0 = 2 * (q0 + q);
            let row0 = &b.data[b.offset + r0 * b.rs + c_first..][..width];
            let row1 =
                (r0 + 1 < k).then(|| &b.data[b.offset + (r0 + 1) * b.rs + c_first..][..width]);
            for (p, panel) in block.chunks_mut(KC * NR).enumerate() {
                let out = &mut panel[q * NR..][..NR];
                let (c0, cols) = panel_cols(p);
                let c0 = c0 - c_first;
                let x0 = &row0[c0..][..cols];
                match row1 {
                    Some(row1) => {
                        for ((w, &x), &y) in out.iter_mut().zip(x0).zip(&row1[c0..][..cols]) {
                            *w = x as u32 | (y as u32) << 16;
                        }
                    }
                    None => {
                        for (w, &x) in out.iter_mut().zip(x0) {
                            *w = x as u32;
                        }
                    }
                }
                if cols < NR {
                    // Only the last panel (a call to `memset` for nothing, otherwise).
                    out[cols..].fill(0);
                }
            }
        }
        return;
    }
    // Any other strides (column-major `b`, the `x @ w.T` of a linear layer: each pair is two
    // neighbours in memory), column by column.
    for (p, panel) in block.chunks_mut(KC * NR).enumerate() {
        let (c0, cols) = panel_cols(p);
        if cols < NR {
            for q in 0..kc {
                panel[q * NR + cols..][..NR - cols].fill(0);
            }
        }
        for j in 0..cols {
            for q in 0..kc {
                let r0 = 2 * (q0 + q);
                let hi = if r0 + 1 < k { b.at(r0 + 1, c0 + j) } else { 0 };
                panel[q * NR + j] = b.at(r0, c0 + j) | hi << 16;
            }
        }
    }
}

/// Packs `a`'s rows `r0 .. r0 + rows` and pairs `q0 .. q0 + kc` into micro-panels of `MR` rows
/// of `KC` words (word `i * MR * KC + r * KC + q` = columns `2 (q0 + q)` and `+ 1` of row
/// `r0 + i MR + r`; zero past the edges). A row of a panel is a row of `a` as it is in memory
/// (a plain copy when `a` is row-major), and the micro-kernel reads the `MR` rows as `MR`
/// streams, `KC * 4` bytes (2 KiB) apart: the twelve share two L1 sets, six lines in each of
/// eight ways, one line per stream at a time. (A row stride of `KC` plus one line, which
/// spreads them over twelve sets, measured the same on Zen 4: 401-431 against 407-433 GFLOP/s
/// at n = 512-2048, two quiet rounds alternated.)
fn pack_a(
    out: &mut [u32],
    a: Bits<'_>,
    k: usize,
    (r0, rows): (usize, usize),
    (q0, kc): (usize, usize),
) {
    let c0 = 2 * q0;
    for (i, panel) in out.chunks_exact_mut(MR * KC).enumerate() {
        for (r, words) in panel.chunks_exact_mut(KC).enumerate() {
            let words = &mut words[..kc];
            let row = i * MR + r;
            if row >= rows {
                words.fill(0);
                continue;
            }
            let row = r0 + row;
            if a.cs == 1 {
                // Row-major: the row's pairs, front to back (the last one half zero when `k`
                // is odd).
                let len = (2 * kc).min(k - c0);
                let src = &a.data[a.offset + row * a.rs + c0..][..len];
                let pairs = src.chunks_exact(2);
                let odd = pairs.remainder().first().map(|&x| x as u32);
                for (w, pair) in words.iter_mut().zip(pairs) {
                    *w = pair[0] as u32 | (pair[1] as u32) << 16;
                }
                if let Some(x) = odd {
                    words[kc - 1] = x;
                }
                continue;
            }
            for (q, w) in words.iter_mut().enumerate() {
                let c = c0 + 2 * q;
                let hi = if c + 1 < k { a.at(row, c + 1) } else { 0 };
                *w = a.at(row, c) | hi << 16;
            }
        }
    }
}

/// `dst[m x n]` (row-major, contiguous) `= a[m x k] @ b[k x n]` on `bf16` operands in any
/// strides, accumulated in `f32` and rounded once. Call only where [`supported`] (it panics
/// otherwise). Its packed operands and sums are allocated before any work starts, fallibly:
/// scratch the host cannot hold is [`Error::CpuOutOfMemory`], with `dst` untouched.
///
/// [`Error::CpuOutOfMemory`]: crate::core::error::Error::CpuOutOfMemory
pub(crate) fn gemm(
    dst: &mut [bf16],
    (m, k, n): (usize, usize, usize),
    a: MatrixView<'_, bf16>,
    b: MatrixView<'_, bf16>,
) -> Result<()> {
    assert!(supported(), "the bf16 kernel needs AVX512-BF16");
    let out_len = m.checked_mul(n).expect("gemm: m * n overflows");
    assert!(dst.len() >= out_len, "gemm destination too small");
    let dst = &mut dst[..out_len];
    if m == 0 || n == 0 {
        return Ok(());
    }
    if k == 0 {
        dst.fill(bf16::ZERO);
        return Ok(());
    }
    let (a, b) = (Bits::new(&a), Bits::new(&b));
    let pairs = k.div_ceil(2);
    let kblocks = pairs.div_ceil(KC);
    let panels = n.div_ceil(NR);
    // Block `kb`, panel `p`: `kc(kb) * NR` words at `(kb * panels + p) * KC * NR`.
    // Sizes that overflow saturate, and no allocator grants `usize::MAX` words.
    let words = |parts: &[usize]| parts.iter().fold(1usize, |w, &p| w.saturating_mul(p));
    let mut packed_b = scratch(words(&[kblocks, panels, KC, NR]))?;
    // The packed `b` in units of one `KC` block by `UNIT_PANELS` micro-panels, each packed by
    // the first thread that needs it (the others wait for it): no separate packing pass, and
    // a unit is still in the packer's L2 when its products start.
    let cblocks = n.div_ceil(NC);
    let units_per_block = panels.div_ceil(UNIT_PANELS);
    let mut units = Vec::with_capacity(kblocks * units_per_block);
    for block in as_words(packed_b.as_mut_slice()).chunks_mut(panels * KC * NR) {
        for unit in block.chunks_mut(UNIT_PANELS * KC * NR) {
            units.push(Unit {
                raw: Mutex::new(Some(unit)),
                packed: OnceLock::new(),
            });
        }
    }
    let unit = |kb: usize, u: usize| -> &[u32] {
        let unit = &units[kb * units_per_block + u];
        unit.packed.get_or_init(|| {
            let raw = unit.raw.lock().unwrap_or_else(|e| e.into_inner()).take();
            let raw = raw.expect("a unit is packed once");
            let kc = KC.min(pairs - kb * KC);
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `gemm` runs only where `supported()` found AVX-512F and AVX-512BW.
            unsafe {
                x86::pack_b(raw, b, (k, n), (kb * KC, kc), u * UNIT_PANELS * NR)
            };
            raw
        })
    };
    let parallel = m.saturating_mul(n).saturating_mul(k) >= PARALLEL_FLOPS && !cfg!(miri);
    let micro = m.div_ceil(MR);
    let workers = if parallel {
        rayon::current_num_threads().clamp(1, micro)
    } else {
        1
    };
    // Row blocks: whole micro-panels whose packed `a` (all of `k`) fits the budget, taken one
    // at a time by the threads, and, when there are several, smaller towards the end (each a
    // `2 * workers`-th of what is left, down to one micro-panel): a thread that starts late (a
    // sleeping core's wake-up) leaves its blocks to the others, and the threads end within a
    // small block of each other. (With even blocks, one thread waited 300-450 us of a 5.6 ms
    // product at n = 1024 for the other's last block; 40-140 us now.) The blocks' sizes
    // depend on the thread count, but a tile's sums on its row and column alone: the same
    // bits on any number of threads.
    let mc = (A_BLOCK_WORDS / kblocks.saturating_mul(KC * MR)).clamp(1, MC / MR) * MR;
    let mut row_blocks = Vec::new();
    let (mut rest, mut row, mut left) = (dst, 0, micro);
    while left > 0 {
        let size = if workers == 1 {
            left
        } else {
            left / (2 * workers)
        };
        let size = size.clamp(1, mc / MR);
        left -= size;
        let end = (row + size * MR).min(m);
        let (out, tail) = rest.split_at_mut((end - row) * n);
        row_blocks.push((row_blocks.len(), row, out));
        (rest, row) = (tail, end);
    }
    // One scratch per thread (`work` says why that is enough), for the largest block.
    let block_rows = mc.min(micro * MR);
    let mut scratches = Vec::with_capacity(workers);
    for _ in 0..workers {
        // The `f32` sums of a column block over the `KC` blocks before the last (whole tiles
        // of rows, row stride `ACC_LD`); the last block's tiles go straight to `dst`, rounded.
        let acc = scratch(if kblocks > 1 { block_rows * ACC_LD } else { 0 })?;
        // In a row block of `bmicro` micro-panels, block `kb`'s micro-panel `i`: `MR` rows of
        // `kc(kb)` words, `KC` apart, at `(kb * bmicro + i) * KC * MR`.
        let packed_a = scratch(words(&[kblocks, block_rows, KC]))?;
        scratches.push((acc, packed_a));
    }
    // Row block `blk` (rows from `r0`, its part of `dst` in `out`) with a thread's scratch.
    let product =
        |blk: usize, r0: usize, out: &mut [bf16], acc: &mut [f32], packed_a: &mut [u32]| {
            let brows = out.len() / n;
            let bmicro = brows.div_ceil(MR);
            for kb in 0..kblocks {
                let kc = KC.min(pairs - kb * KC);
                let pa = &mut packed_a[kb * bmicro * KC * MR..][..bmicro * KC * MR];
                pack_a(pa, a, k, (r0, brows), (kb * KC, kc));
            }
            // Neighbouring blocks start on different column blocks and units, so that the
            // threads' first blocks pack different units.
            for j in 0..cblocks {
                let cb = (j + blk) % cblocks;
                let c0 = cb * NC;
                for kb in 0..kblocks {
                    let kc = KC.min(pairs - kb * KC);
                    let pa = &packed_a[kb * bmicro * KC * MR..][..bmicro * KC * MR];
                    let (p0, p1) = (c0 / NR, (c0 + NC).min(n).div_ceil(NR));
                    for t in 0..p1 - p0 {
                        let p = p0 + (t + blk * UNIT_PANELS) % (p1 - p0);
                        let bu = unit(kb, p / UNIT_PANELS);
                        let bp = &bu[p % UNIT_PANELS * KC * NR..][..kc * NR];
                        let cols = NR.min(n - p * NR);
                        for (i, ap) in pa.chunks_exact(MR * KC).enumerate() {
                            let at = i * MR * ACC_LD + (p * NR - c0);
                            let sink = if kb + 1 == kblocks {
                                Sink::Round {
                                    prior: (kb > 0).then(|| &acc[at..]),
                                    dst: &mut out[i * MR * n + p * NR..],
                                    ld: n,
                                    rows: MR.min(brows - i * MR),
                                }
                            } else if kb == 0 {
                                Sink::Store(&mut acc[at..])
                            } else {
                                Sink::Add(&mut acc[at..])
                            };
                            tile(kc, ap, bp, cols, sink);
                        }
                    }
                }
            }
        };
    let scratches = Mutex::new(scratches);
    let scratches = || scratches.lock().unwrap_or_else(|e| e.into_inner());
    let work = |(blk, r0, out): (usize, usize, &mut [bf16])| {
        // No more blocks run at once than `workers`: `map_items` runs one per thread, on at
        // most the pool's threads and at most one per block, and `workers` is the smaller of
        // the pool's threads and the micro-panels (each block has one at least).
        let (mut acc, mut packed_a) = scratches().pop().expect("a scratch per running block");
        product(
            blk,
            r0,
            out,
            acc.as_mut_slice(),
            as_words(packed_a.as_mut_slice()),
        );
        scratches().push((acc, packed_a));
    };
    if workers > 1 {
        // The calling thread takes blocks beside the pool's, so it never sleeps while they
        // work, and no wake-up (a pool thread's at the start, the caller's at the end) delays
        // a product. Against `rayon`'s split of one job per pool thread (the caller asleep),
        // medians of per-product times alternated three times, GFLOP/s on Zen 4: n = 256 352,
        // 199, 319 against 168, 197, 262; n = 512 379, 381, 389 against 356, 372, 369;
        // n = 1024 393, 342, 393 against 323, 345, 331.
        map_items(row_blocks, &work);
    } else {
        row_blocks.into_iter().for_each(work);
    }
    Ok(())
}

/// One `KC` block by `UNIT_PANELS` micro-panels of the packed `b`: its words, until the first
/// thread that needs it takes them to pack (`raw`), then packed, for every thread to read
/// (`packed`).
struct Unit<'a> {
    raw: Mutex<Option<&'a mut [u32]>>,
    packed: OnceLock<&'a [u32]>,
}

/// `len` words of scratch from the `f32` buffer pool, allocated fallibly: a recycled buffer
/// comes as the last product left it (hot in the caches, and not cleared: every word is
/// written before it is read), and goes back to the pool when dropped.
fn scratch(len: usize) -> Result<PooledVec<f32>> {
    PooledVec::with_len(len)
}

/// The scratch words of [`scratch`], as the packing and the micro-kernel see them.
fn as_words(v: &mut [f32]) -> &mut [u32] {
    // SAFETY: `f32` and `u32` have the same size and alignment, and every bit pattern is a
    // valid value of both; the result borrows `v` exclusively for its lifetime.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u32>(), v.len()) }
}

/// Where a tile's sum over its `kc` pairs goes: `MR` rows of `cols`, at row stride `ACC_LD` in the
/// `f32` sums and `n` in `dst`.
enum Sink<'a> {
    /// `c = sum`: the first of several `KC` blocks.
    Store(&'a mut [f32]),
    /// `c += sum`: a block between the first and the last.
    Add(&'a mut [f32]),
    /// The last block: `dst = bf16(prior + sum)` (or of `sum` alone when it is also the
    /// first), for the tile's first `rows` rows.
    Round {
        prior: Option<&'a [f32]>,
        dst: &'a mut [bf16],
        ld: usize,
        rows: usize,
    },
}

/// Runs the micro-kernel on one `MR x cols` tile: the packed panels' product, summed from zero
/// (so the tile's earlier sums are read only after the products, their cache misses hidden
/// behind the next tile's work), then into `sink`.
fn tile(kc: usize, a: &[u32], b: &[u32], cols: usize, sink: Sink<'_>) {
    assert!(kc <= KC && a.len() >= (MR - 1) * KC + kc && b.len() >= kc * NR);
    assert!((1..=NR).contains(&cols));
    let tile_len = |rows: usize, ld: usize| (rows - 1) * ld + cols;
    let (mode, c, dst, rows) = match sink {
        Sink::Store(c) => {
            assert!(c.len() >= tile_len(MR, ACC_LD));
            (Mode::Store, c.as_mut_ptr(), (std::ptr::null_mut(), 0), MR)
        }
        Sink::Add(c) => {
            assert!(c.len() >= tile_len(MR, ACC_LD));
            (Mode::Add, c.as_mut_ptr(), (std::ptr::null_mut(), 0), MR)
        }
        Sink::Round {
            prior,
            dst,
            ld,
            rows,
        } => {
            assert!((1..=MR).contains(&rows) && ld >= cols && dst.len() >= tile_len(rows, ld));
            let dst = (dst.as_mut_ptr().cast::<u16>(), ld);
            match prior {
                Some(c) => {
                    assert!(c.len() >= tile_len(rows, ACC_LD));
                    // Only read through, never written.
                    (Mode::AddRound, c.as_ptr().cast_mut(), dst, rows)
                }
                None => (Mode::Round, std::ptr::null_mut(), dst, rows),
            }
        }
    };
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `gemm` runs only when `supported()` found AVX-512F, AVX-512BW and AVX512-BF16;
    // the packed panels hold `kc` pairs, and `c` (row stride `ACC_LD`) and `dst` hold the `rows`
    // rows of `cols` values that `mode` touches (asserted above); `c` is written only in the
    // modes that got it from a `&mut`.
    unsafe {
        x86::kernel(kc, a.as_ptr(), b.as_ptr(), c, dst, (rows, cols), mode)
    };
}

/// What the micro-kernel does with a tile's sum.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// `c = sum`.
    Store,
    /// `c += sum`.
    Add,
    /// `dst = bf16(sum)`.
    Round,
    /// `dst = bf16(c + sum)`.
    AddRound,
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Mode, ACC_LD, KC, MR, NR};
    use std::arch::x86_64::*;

    /// The 32 `bf16` halves of a 512-bit integer vector, as the BF16 instructions take them.
    #[inline(always)]
    fn as_bh(v: __m512i) -> __m512bh {
        // SAFETY: both are 64-byte vectors of plain bits; every bit pattern is a valid value.
        unsafe { std::mem::transmute::<__m512i, __m512bh>(v) }
    }

    /// [`super::pack_b`] compiled for AVX-512 (its zip of two rows into words then runs 32
    /// columns per instruction).
    ///
    /// # Safety
    /// The CPU must have AVX-512F and AVX-512BW.
    #[target_feature(enable = "avx512f,avx512bw")]
    pub(super) unsafe fn pack_b(
        block: &mut [u32],
        b: super::Bits<'_>,
        kn: (usize, usize),
        q: (usize, usize),
        c_first: usize,
    ) {
        super::pack_b(block, b, kn, q, c_first);
    }

    /// Sums `a[r][q] . b[q][j]` (each a pair of `bf16` products) over the `kc` pairs of the
    /// packed panels, from zero, for an `MR x NR` tile, then finishes it as `mode` says on the
    /// first `rows` rows and `cols` columns of `c` (`f32`, row stride `ACC_LD`) or `dst` (`bf16`
    /// bits, row stride `ldd`). The rounding to `bf16` is to nearest, ties to even, as `half`'s `from_f32`, with
    /// NaN kept quiet; sums in the subnormal range become zero.
    ///
    /// # Safety
    /// The CPU must have AVX-512F, AVX-512BW and AVX512-BF16; `kc <= KC`; `a` must hold `MR`
    /// rows of `kc` words, `KC` words apart, `b` `kc * NR` words; `c` (read in `Add` and `AddRound`, written in `Store` and `Add`)
    /// and `dst` (written in `Round` and `AddRound`) must hold `rows` rows of `cols` values at
    /// their strides, `rows <= MR` and `cols <= NR`.
    #[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
    pub(super) unsafe fn kernel(
        kc: usize,
        a: *const u32,
        b: *const u32,
        c: *mut f32,
        (dst, ldd): (*mut u16, usize),
        (rows, cols): (usize, usize),
        mode: Mode,
    ) {
        let mut acc = [[_mm512_setzero_ps(); 2]; MR];
        for q in 0..kc {
            // SAFETY: pair `q < kc` of each panel is inside it (the caller's contract); the
            // loads are unaligned.
            let (b0, b1) = unsafe {
                let bq = b.add(q * NR);
                (
                    _mm512_loadu_si512(bq.cast()),
                    _mm512_loadu_si512(bq.add(16).cast()),
                )
            };
            let (b0, b1) = (as_bh(b0), as_bh(b1));
            for (r, cr) in acc.iter_mut().enumerate() {
                // SAFETY: word `r * KC + q` is inside `a` (the caller's contract).
                let w = unsafe { a.add(r * KC + q).read() } as i32;
                let x = as_bh(_mm512_set1_epi32(w));
                cr[0] = _mm512_dpbf16_ps(cr[0], x, b0);
                cr[1] = _mm512_dpbf16_ps(cr[1], x, b1);
            }
        }
        // The columns in use: the first 16 in the first vector, the rest in the second.
        let m0: __mmask16 = if cols >= 16 { !0 } else { (1 << cols) - 1 };
        let m1: __mmask16 = if cols >= NR {
            !0
        } else {
            ((1u32 << cols.saturating_sub(16)) - 1) as u16
        };
        let m32: __mmask32 = m0 as u32 | (m1 as u32) << 16;
        for (r, cr) in acc.iter().enumerate().take(rows) {
            // SAFETY: row `r < rows` of the tile, columns `< cols` (the masks) of `c` or `dst`
            // (the caller's contract); masked-off lanes are neither read nor written.
            unsafe {
                let cr_ptr = c.wrapping_add(r * ACC_LD);
                let (mut v0, mut v1) = (cr[0], cr[1]);
                if matches!(mode, Mode::Add | Mode::AddRound) {
                    v0 = _mm512_add_ps(_mm512_maskz_loadu_ps(m0, cr_ptr), v0);
                    v1 = _mm512_add_ps(_mm512_maskz_loadu_ps(m1, cr_ptr.wrapping_add(16)), v1);
                }
                match mode {
                    Mode::Store | Mode::Add => {
                        _mm512_mask_storeu_ps(cr_ptr, m0, v0);
                        _mm512_mask_storeu_ps(cr_ptr.wrapping_add(16), m1, v1);
                    }
                    Mode::Round | Mode::AddRound => {
                        // Lanes 0-15 from `v0`, 16-31 from `v1`.
                        let h: __m512i = std::mem::transmute(_mm512_cvtne2ps_pbh(v1, v0));
                        _mm512_mask_storeu_epi16(dst.wrapping_add(r * ldd).cast(), m32, h);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rayon::prelude::*;

    fn values(count: usize, seed: &mut u64) -> Vec<bf16> {
        (0..count)
            .map(|_| {
                *seed ^= *seed << 13;
                *seed ^= *seed >> 7;
                *seed ^= *seed << 17;
                bf16::from_f32(((*seed >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0)
            })
            .collect()
    }

    /// True, after saying so, where the CPU lacks AVX512-BF16: the kernel cannot run there
    /// (`matmul` widens `bf16` to `f32` instead, which `tests/half_ops.rs` checks).
    fn skip_without_the_instruction() -> bool {
        let skip = !supported();
        if skip {
            eprintln!("skipping: this CPU has no AVX512-BF16");
        }
        skip
    }

    /// Against the f64 product of the same `bf16` values, on odd sizes (every edge: rows past
    /// `MR` and `MC`, columns past `NR` and `NC`, an odd `k`, more than one `KC` block, row
    /// blocks shortened by a long `k`, more than one thread) and every stride order of both
    /// operands (row-major, transposed, and a view with neither stride 1), with the operands
    /// at an offset inside a larger buffer.
    #[test]
    fn bf16_kernel_matches_the_f64_product() {
        // Wherever the CPU has the instruction, whether or not `matmul` prefers it there.
        if skip_without_the_instruction() {
            return;
        }
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let sizes = [
            (1, 1, 1),
            (13, 3, 33),
            (37, 301, 45),
            (100, 257, 70),
            (2 * MC + 5, 2 * 2 * KC + 3, NR + 1),
            (1, 2 * KC, 2 * NR),
            // More than one column block, and a `k` long enough for row blocks under `MC`.
            (40, 2 * 12 * KC + 1, NC + NR + 3),
            // Three column blocks, so that the two tasks start on different units of `b`, and
            // each packs some that the other then reads.
            (2 * MC + 7, 3 * 2 * KC + 1, 2 * NC + 5),
        ];
        for (m, k, n) in sizes {
            // Each operand in a buffer 3 times its size, at offset 7, with strides:
            // 0 row-major, 1 column-major, 2 both strides > 1 (every other element).
            let a = values(3 * m * k + 7, &mut seed);
            let b = values(3 * k * n + 7, &mut seed);
            let (a64, b64): (Vec<f64>, Vec<f64>) = (
                a.iter().map(|x| x.to_f64()).collect(),
                b.iter().map(|x| x.to_f64()).collect(),
            );
            let strides = |rows: usize, cols: usize, order: usize| match order {
                0 => (cols, 1),
                1 => (1, rows),
                _ => (2 * cols, 2),
            };
            // The long case in two orders only (the reference is slow in a debug build).
            let orders = [(0, 0), (1, 1), (0, 1), (1, 0), (2, 2)];
            let orders = if m * k * n > 1 << 24 {
                &orders[..2]
            } else {
                &orders[..]
            };
            for &(oa, ob) in orders {
                let (a_rs, a_cs) = strides(m, k, oa);
                let (b_rs, b_cs) = strides(k, n, ob);
                let va = MatrixView {
                    data: &a,
                    offset: 7,
                    row_stride: a_rs,
                    col_stride: a_cs,
                };
                let vb = MatrixView {
                    data: &b,
                    offset: 7,
                    row_stride: b_rs,
                    col_stride: b_cs,
                };
                let mut dst = vec![bf16::NAN; m * n];
                gemm(&mut dst, (m, k, n), va, vb).unwrap();
                for i in 0..m {
                    for j in 0..n {
                        let (mut want, mut mag) = (0f64, 0f64);
                        for p in 0..k {
                            let x = a64[7 + i * a_rs + p * a_cs] * b64[7 + p * b_rs + j * b_cs];
                            want += x;
                            mag += x.abs();
                        }
                        let got = dst[i * n + j].to_f64();
                        // f32 accumulation, then one rounding to bf16 (8 significant bits).
                        let tol = mag * k as f64 * f32::EPSILON as f64
                            + want.abs() * 2f64.powi(-8)
                            + 1e-30;
                        assert!(
                            (got - want).abs() <= tol,
                            "({m}, {k}, {n}) strides {oa}/{ob} at ({i}, {j}): {got} vs {want}"
                        );
                    }
                }
            }
        }
    }

    /// Many products at once, called from inside `rayon`'s pool (each one's threads then wait
    /// for units of `b` and take row blocks while the pool is busy with the others): every
    /// result has the same bits as the same product on its own, since a row's sums run in
    /// one order whichever thread computes it.
    #[test]
    fn concurrent_products_from_the_pool_give_the_same_bits() {
        if skip_without_the_instruction() {
            return;
        }
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let (m, k, n) = (3 * MC + 5, 2 * KC * 2 + 9, 2 * NC + 7);
        let a = values(m * k, &mut seed);
        let b = values(k * n, &mut seed);
        let view = |data, rs| MatrixView {
            data,
            offset: 0,
            row_stride: rs,
            col_stride: 1,
        };
        let product = || {
            let mut dst = vec![bf16::NAN; m * n];
            gemm(&mut dst, (m, k, n), view(&a, k), view(&b, n)).unwrap();
            dst
        };
        let alone = product();
        let together: Vec<Vec<bf16>> = (0..6).into_par_iter().map(|_| product()).collect();
        for dst in together {
            assert!(dst
                .iter()
                .zip(&alone)
                .all(|(x, y)| x.to_bits() == y.to_bits()));
        }
    }

    /// Infinities, NaN and sums past `bf16`'s range come out as the `f64` product says, in
    /// the full tiles and in a right-edge tile, on one `KC` block and on several.
    #[test]
    fn special_values_come_out_as_the_f64_product_says() {
        if skip_without_the_instruction() {
            return;
        }
        for k in [5, 2 * KC + 5] {
            let (m, n) = (MR + 3, NR + 8);
            let mut a = vec![bf16::from_f32(0.5); m * k];
            let b: Vec<bf16> = (0..k * n)
                .map(|i| bf16::from_f32(1.0 + (i % 7) as f32))
                .collect();
            a[k + 1] = bf16::INFINITY; // row 1: +inf
            a[2 * k + 3] = bf16::NEG_INFINITY; // row 2: -inf
            a[3 * k] = bf16::NAN; // row 3: NaN
            a[4 * k] = bf16::INFINITY; // row 4: inf - inf = NaN
            a[4 * k + 2] = bf16::NEG_INFINITY;
            for x in &mut a[5 * k..6 * k] {
                *x = bf16::from_f32(3e37); // row 5: finite products whose sum overflows
            }
            a[(MR + 1) * k + 1] = bf16::NAN; // a row past the first tile
            let view = |data, rs| MatrixView {
                data,
                offset: 0,
                row_stride: rs,
                col_stride: 1,
            };
            let mut dst = vec![bf16::ZERO; m * n];
            gemm(&mut dst, (m, k, n), view(&a, k), view(&b, n)).unwrap();
            for i in 0..m {
                for j in 0..n {
                    let want: f64 = (0..k)
                        .map(|p| a[i * k + p].to_f64() * b[p * n + j].to_f64())
                        .sum();
                    let want = bf16::from_f64(want);
                    let got = dst[i * n + j];
                    assert!(
                        got == want || got.is_nan() && want.is_nan(),
                        "k = {k} at ({i}, {j}): {got} vs {want}"
                    );
                }
            }
        }
    }
}
