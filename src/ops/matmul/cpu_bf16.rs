//! The `bf16` GEMM on CPUs with AVX512-BF16 (AMD Zen 4 and later, Intel Cooper Lake and
//! Sapphire Rapids and later), in two micro-kernels ([`Kernel`]) under one driver. `vdpbf16ps`
//! multiplies pairs of `bf16` values and adds both products to an `f32` lane, on the `bf16`
//! data itself (half the bytes of the widened `f32` operands): on an AMD Zen 4 core that is
//! twice the `f32` FMA rate; on the Intel Xeon measured without AMX (family 6, model 207), half
//! of it, so that kernel runs on AMD's cores only. Intel's cores with AMX (Sapphire Rapids and
//! later) run AMX's `tdpbf16ps` instead, the same sums of pairs on 16 x 16 tiles, 16 times the
//! work of one `vdpbf16ps` per instruction ([`native`] chooses). PyTorch's oneDNN uses the same
//! instructions.
//!
//! The numbers: a `bf16` product is exact in `f32` (8-bit significands), and the instruction
//! adds each product to the `f32` accumulator with one rounding, as an `f32` FMA would; what
//! differs from the widened `f32` GEMM is the order of the sums and that subnormal inputs and
//! results are flushed to zero (the instruction ignores MXCSR). The result is rounded to `bf16`
//! once, from the `f32` accumulator.
//!
//! Layout, as the usual GEMM kernels do it (BLIS's loops): `b` is packed in units of one block
//! of `k` (the kernel's `kc()` pairs: `DOT_KC`, `TILE_KC`) by `UNIT_PANELS` panels of `NR`
//! columns, each `f32` lane holding one column's two `bf16` values of a pair (a 32-bit word),
//! reading each pair of `b`'s rows once, front to back. `dst`'s columns are split into one group
//! of whole units per thread, and its rows into blocks of at most `MC_PANELS` micro-panels
//! (fewer when `k` is long), the same blocks in every group. A thread
//! takes its own group's row blocks one at a time (its group: the one that goes with the core it
//! runs on, so that the same core packs the same units and writes the same part of `dst` from one
//! product to the next), and then helps with another group's while a quarter of that group's rows
//! is still untaken (its thread started late, or runs on a slower core). A unit of `b` is packed by
//! the first thread that reaches it, its group's own, so that packed `b` seldom goes from one
//! core's cache to another's. For each row block, the `vdpbf16ps` micro-kernel reads `a`'s rows in
//! place when `a` is row-major with an even `k` (a row of pairs is a row of words; rows a multiple
//! of 4 KiB apart excepted, which would all fall in one L1 set), and otherwise from a packed copy
//! of the block (a row of pairs per row; for AMX, always packed, in runs of 16 pairs by 32 rows);
//! it runs over the group's columns in blocks of `NC`, and, for each block of `k`, over every `mr x
//! NR` tile. The `vdpbf16ps` micro-kernel sums a tile in 24 of the 32 vector registers,
//! broadcasting each word of `a` to every lane, the AMX one in four tiles; each from zero, then
//! adds the earlier blocks' sums (kept in an `f32` buffer of one row block by one column
//! block, in L2) and, for the last block, rounds the tile to `bf16` straight into `dst`
//! (`vcvtne2ps2bf16`): no `m x n` `f32` result is allocated or written, and the buffer is not
//! needed at all when `k` fits one block. The packed operands and the sums are scratch from the
//! `f32` buffer pool (`core::pool`), reused from one product to the next without being cleared.

use super::cpu::MatrixView;
use crate::backend::cpu::parallel::for_each_task;
use crate::core::error::Result;
use crate::core::pool::PooledVec;
use half::bf16;
use half::slice::HalfFloatSliceExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// Rows of the `vdpbf16ps` micro-kernel's tile ([`Kernel::Dot`]).
const DOT_MR: usize = 12;
/// Rows of the AMX micro-kernel's tile ([`Kernel::Tiles`]): two tiles of 16 rows.
const TILE_MR: usize = 32;
/// Columns of the micro-kernel's tile: two 16-lane vectors.
const NR: usize = 32;
/// Pairs of `k` per packed block for [`Kernel::Dot`]. A tile's sums stay in registers for the
/// whole block and make a round trip through memory only between blocks, so the block is
/// long: `k` up to 1024 in one. Its `b` micro-panel (`DOT_KC * NR * 4` bytes, 64 KiB) is read
/// from L2 while the micro-panels of `a` go past it; the kernel asks 128 bytes of it per 24
/// instructions, well within L2's bandwidth. Measured on Zen 4 (one thread, n = 1024 and
/// 2048): 201-211 and 192 GFLOP/s, against 183-201 and 158 with 128 pairs (a 16 KiB panel
/// kept in L1).
const DOT_KC: usize = 512;
/// Pairs of `k` per packed block for [`Kernel::Tiles`]: `k` up to 2048 in one, so that a
/// tile's sums at n = 2048 go from the tile registers to `dst` once, without a round trip
/// through the `f32` sums between blocks. Measured on the Xeon of `pack_a` (two threads,
/// three rounds): n = 2048 1830-1878 GFLOP/s against 1417-1530 with 512 pairs (and 1417-1496
/// with 256, whose 32 KiB `b` panel stays in L1); n = 512 and 1024 the same.
const TILE_KC: usize = 1024;
/// The longer of the two blocks (the size of `pack_a`'s row buffer).
const MAX_KC: usize = if DOT_KC > TILE_KC { DOT_KC } else { TILE_KC };
/// Steps of 16 pairs the AMX kernel runs on one tile before it turns to the next tile of its
/// column, its sums going to memory and back between (exact: they stay `f32`): a chunk of the
/// `b` micro-panel (32 KiB) is read from L1 by every tile of the column, and `a` streams past
/// it from L2 (`tileloaddt1`, which keeps it out of L1).
const CHUNK_STEPS: usize = 16;
/// Pairs of `b`'s rows packed per pass over a unit's panels ([`pack_b`]): each pass writes 2 KiB
/// into each panel in turn, front to back. A unit's panels are `kc_block * NR` words apart
/// (64 KiB for `Dot`, 128 KiB for `Tiles`), and one pair at a time wrote 128 bytes to each of
/// them in turn: as many streams of stores as panels, into one L1 set. (The rows are read the
/// same either way: each panel reads its own 64 bytes of every row, once.) Measured on the
/// Xeon of [`pack_a`] (`Tiles`, 16 panels a unit, two threads, two sets of four rounds
/// alternated): n = 2048 2227-2237 and 1979-2073 GFLOP/s against 2125-2174 and 1904-1984 one
/// pair at a time; 4 and 8 pairs between, 32 and 64 no better. On Zen 4 (`Dot`, four panels
/// a unit, products through the public API back to back, three rounds alternated): one
/// thread, n = 256 208 GFLOP/s against 200, n = 512 214-220 against 207-211; two threads,
/// medians n = 256 399-402 against 228-350, n = 512 427-438 against 407-428, n = 2048
/// 416-421 against 409-423 (32 and 64 pairs no better).
const B_PASS: usize = 16;
/// Most micro-panels of `a` (of the kernel's `mr` rows) per row block of a thread; fewer when
/// `k` is long, so that the block's packed `a`, every block of `k` of it, stays within the
/// kernel's budget ([`Kernel::a_block_words`]).
const MC_PANELS: usize = 8;

/// Columns of `dst` per column block (a multiple of `NR`).
const NC: usize = 16 * NR;
/// Micro-panels of `b` per packed unit (one block of `k` by `UNIT_PANELS * NR` columns), the
/// grain in which `b` is packed by the thread that first needs it: fine enough that two
/// threads starting on the same column block pack different units side by side (with one
/// unit per column block, one thread packed while the other waited, 100 of 720 us at
/// n = 512).
const UNIT_PANELS: usize = 4;
/// Micro-panels of `b` per unit for [`Kernel::Tiles`] where `b` has at least two such units
/// per thread (else `UNIT_PANELS`). A unit reads `unit_panels * NR` columns of each of `b`'s
/// rows, rows far apart; the AMX kernel is fast enough that this packing was 9-13% of the
/// product at n = 2048 with 4 panels a unit (`perf record`, one thread), 6-9% with 16; two
/// threads, six rounds alternated, twice: medians 1566-1578 GFLOP/s against 1484-1500, and
/// 1469 against 1418. (With 8 panels a unit at n = 1024: 1298 against 1319, so not there.)
const TILE_UNIT_PANELS: usize = 16;
/// Row stride of the `f32` sums: a column block and one cache line, so that a tile's rows
/// fall in different L1 sets (`NC` floats, 2 KiB, would put all twelve in four).
const ACC_LD: usize = NC + 16;

/// A micro-kernel of this GEMM. Both sum pairs of `bf16` products into `f32` and read the
/// same packed `b`; they differ in the rows of a tile and in the instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kernel {
    /// `vdpbf16ps` (AVX512-BF16) on `DOT_MR x NR` tiles held in 24 vector registers.
    Dot,
    /// AMX's `tdpbf16ps` on `TILE_MR x NR` tiles: four 16 x 16 tiles of `f32` sums, each
    /// instruction a 16 x 32 by 32 x 16 product (16 times `vdpbf16ps`'s work per instruction),
    /// the pairs of `k` past the last whole 16 summed with `vdpbf16ps`.
    Tiles,
}

impl Kernel {
    /// Rows of the kernel's tile.
    const fn mr(self) -> usize {
        match self {
            Kernel::Dot => DOT_MR,
            Kernel::Tiles => TILE_MR,
        }
    }

    /// Pairs of `k` per packed block ([`DOT_KC`], [`TILE_KC`]).
    const fn kc(self) -> usize {
        match self {
            Kernel::Dot => DOT_KC,
            Kernel::Tiles => TILE_KC,
        }
    }

    /// Products with fewer multiply-adds (`m * n * k`) run on one thread. The AMX kernel does
    /// a product about five times as fast as `Dot`, so a thread's share of a small one is
    /// shorter than what sharing costs (each column group packs all of `a`, and the threads
    /// wait for each other at the end). Measured on the Xeon of `pack_a` with products
    /// through the public API, three rounds alternated against the threshold of `Dot`: n = 256
    /// 1029-1046 GFLOP/s on one thread against 882-958 on two, n = 320 1077-1169 against
    /// 1033-1099; at n = 384 two threads were ahead (1265-1353 against 1177-1295), so from
    /// there (2^25 is just above 320^3) products share.
    const fn parallel_min(self) -> usize {
        match self {
            Kernel::Dot => 1 << 18,
            Kernel::Tiles => 1 << 25,
        }
    }

    /// Words of packed `a` per row block. For `Dot`, 256 KiB, a quarter of a Zen 4 core's L2,
    /// beside the `f32` sums of one column block (192 KiB) and the `b` panels going by. For
    /// `Tiles`, 1 MiB, half the L2 of Intel's cores with AMX: 8 tiles of 32 rows at `k` = 2048
    /// (128 KiB each) instead of 2, so that each pass over the packed `b` (8 MiB at n = 2048,
    /// past L2) serves four times the rows; measured on the Xeon of `pack_a`, two threads, two
    /// rounds: n = 2048 1575-1649 GFLOP/s against 1504-1543 with 256 KiB, n = 512 and 1024 the
    /// same (and with the chunked kernel, 12 tiles, 1.5 MiB, 1-7% slower at n = 1024 and 2048).
    const fn a_block_words(self) -> usize {
        match self {
            Kernel::Dot => 64 * 1024,
            Kernel::Tiles => 256 * 1024,
        }
    }

    /// Where pair `q` of row `r` sits in a packed micro-panel of `a` (`mr * kc()` words): row
    /// by row, `DOT_KC` words apart, for `Dot`; for `Tiles`, in runs of 16 pairs by the 32 rows
    /// (2 KiB, the two tiles of one AMX step), row `r`'s 16 pairs of a run side by side.
    const fn a_word(self, r: usize, q: usize) -> usize {
        match self {
            Kernel::Dot => r * DOT_KC + q,
            Kernel::Tiles => q / 16 * (TILE_MR * 16) + r * 16 + q % 16,
        }
    }
}

/// The kernel `bf16` products run on this CPU, if any runs them faster than the widened `f32`
/// GEMM: AMX's ([`Kernel::Tiles`]) where the CPU has AMX-BF16 and the OS lets the process use
/// the tile registers ([`tiles_supported`]), `vdpbf16ps` ([`Kernel::Dot`]) on AMD's cores
/// with AVX512-BF16, and none elsewhere (`bf16` is then widened to `f32`).
///
/// `vdpbf16ps`'s speed is a property of the core, not of the flag, measured with `cargo bench
/// --bench peak` (the `vdpbf16ps` and `f32` FMA ceilings, one thread): an AMD Zen 4 core runs
/// it at twice its `f32` FMA rate (227 against 113.5 GFLOP/s), an Intel Xeon (family 6, model
/// 207) at half of it (81.5 against 164), where that kernel reached 115-136 GFLOP/s on two
/// threads and the widened `f32` GEMM 177-188. AMX's tile instruction does 16 times the work
/// of one `vdpbf16ps` and runs on Intel's cores that have it (Sapphire Rapids and later). The
/// choice is made from the CPU and the OS alone, once, so a program's results do not change
/// from run to run.
pub(crate) fn native() -> Option<Kernel> {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        static NATIVE: OnceLock<Option<Kernel>> = OnceLock::new();
        *NATIVE.get_or_init(|| {
            if tiles_supported() {
                Some(Kernel::Tiles)
            } else if supported() && amd_cpu() {
                Some(Kernel::Dot)
            } else {
                None
            }
        })
    }
    #[cfg(not(all(target_arch = "x86_64", not(miri))))]
    {
        None
    }
}

/// True when this CPU has AVX-512F, AVX-512BW and AVX512-BF16, which [`Kernel::Dot`] (and
/// the tail of [`Kernel::Tiles`]) needs.
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

/// True when [`Kernel::Tiles`] can run: [`supported`], the CPU has AMX-TILE and AMX-BF16
/// (CPUID leaf 7, EDX bits 24 and 22), and the OS has granted this process the tile data
/// registers (Linux 5.16 and later, on request: `arch_prctl(ARCH_REQ_XCOMP_PERM,
/// XFEATURE_XTILEDATA)`, made once here; without the grant a tile instruction is an invalid
/// opcode). Anything else (another OS, a hypervisor that hides AMX, a refused request): false.
pub(crate) fn tiles_supported() -> bool {
    #[cfg(all(target_arch = "x86_64", target_os = "linux", not(miri)))]
    {
        static TILES: OnceLock<bool> = OnceLock::new();
        *TILES.get_or_init(|| {
            let leaf7 = std::arch::x86_64::__cpuid_count(7, 0);
            let cpu = leaf7.edx & (1 << 24) != 0 && leaf7.edx & (1 << 22) != 0;
            if !(supported() && cpu) {
                return false;
            }
            const ARCH_REQ_XCOMP_PERM: libc::c_long = 0x1023;
            const XFEATURE_XTILEDATA: libc::c_long = 18;
            // SAFETY: `arch_prctl` with these arguments only asks the kernel to enlarge this
            // process's saved state for the tile data; it reads and writes no memory of ours.
            let granted = unsafe {
                libc::syscall(
                    libc::SYS_arch_prctl,
                    ARCH_REQ_XCOMP_PERM,
                    XFEATURE_XTILEDATA,
                )
            };
            granted == 0
        })
    }
    #[cfg(not(all(target_arch = "x86_64", target_os = "linux", not(miri))))]
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
/// `block`, one `kc_block * NR`-word panel per `NR` columns (word `p * kc_block * NR + q * NR +
/// j` = rows `2 (q0 + q)` and `+ 1` of column `c_first + p * NR + j`; zero past the edges).
///
/// A row-major `b` is packed `pass` pairs of rows at a time ([`B_PASS`]): each pass
/// writes its pairs into every panel in turn, `pass * NR * 4` bytes of each panel front to
/// back.
#[inline(always)]
fn pack_b(
    (block, kc_block): (&mut [u32], usize),
    b: Bits<'_>,
    (k, n): (usize, usize),
    (q0, kc): (usize, usize),
    (c_first, pass): (usize, usize),
) {
    let panel_cols = |p: usize| {
        let c0 = c_first + p * NR;
        (c0, NR.min(n - c0))
    };
    if b.cs == 1 {
        // Row-major: pairs of rows zipped into words (vectorized), one panel's `NR` columns at
        // a time.
        let width = n - c_first;
        let row = |r: usize| &b.data[b.offset + r * b.rs + c_first..][..width];
        // At least one pair a pass (a pass of none would pack nothing).
        let pass = pass.max(1);
        for first in (0..kc).step_by(pass) {
            for (p, panel) in block.chunks_mut(kc_block * NR).enumerate() {
                let (c0, cols) = panel_cols(p);
                let c0 = c0 - c_first;
                for q in first..(first + pass).min(kc) {
                    let r0 = 2 * (q0 + q);
                    let out = &mut panel[q * NR..][..NR];
                    let x0 = &row(r0)[c0..][..cols];
                    if r0 + 1 < k {
                        for ((w, &x), &y) in out.iter_mut().zip(x0).zip(&row(r0 + 1)[c0..][..cols])
                        {
                            *w = x as u32 | (y as u32) << 16;
                        }
                    } else {
                        for (w, &x) in out.iter_mut().zip(x0) {
                            *w = x as u32;
                        }
                    }
                    if cols < NR {
                        // Only the last panel (a call to `memset` for nothing, otherwise).
                        out[cols..].fill(0);
                    }
                }
            }
        }
        return;
    }
    // Any other strides (column-major `b`, the `x @ w.T` of a linear layer: each pair is two
    // neighbours in memory), column by column.
    for (p, panel) in block.chunks_mut(kc_block * NR).enumerate() {
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

/// Packs `a`'s rows `r0 .. r0 + rows` and pairs `q0 .. q0 + kc` into micro-panels of `mr`
/// rows of `kernel.kc()` words (zero past the edges), as [`Kernel::a_word`] places them.
///
/// For [`Kernel::Dot`] a row of a panel is a row of `a` as it is in memory (a plain copy when
/// `a` is row-major), and the micro-kernel reads the `mr` rows as `mr` streams, `DOT_KC * 4` bytes
/// (2 KiB) apart: the twelve share two L1 sets, six lines in each of eight ways, one line per
/// stream at a time. (A row stride of `DOT_KC` plus one line, which spreads them over twelve sets,
/// measured the same on Zen 4: 401-431 against 407-433 GFLOP/s at n = 512-2048, two quiet
/// rounds alternated.) For [`Kernel::Tiles`] each 16 pairs of the 32 rows are one 2 KiB run,
/// the two tiles of `a` one step of the kernel reads, so that it reads `a` as one stream:
/// measured on the Intel Xeon with AMX (family 6, model 167, one thread, a scratch loop of the
/// kernel over a row block's panels), 829-887 GFLOP/s against 731-770 with 32 rows 2 KiB
/// apart.
fn pack_a(
    out: &mut [u32],
    a: Bits<'_>,
    k: usize,
    (r0, rows): (usize, usize),
    (q0, kc): (usize, usize),
    kernel: Kernel,
) {
    let mr = kernel.mr();
    let c0 = 2 * q0;
    // `a`'s rows as words, when its pairs are (row-major, an even `k`, word-aligned): `Tiles`
    // then copies each row's runs straight from `a`.
    let rows_as_words = (kernel == Kernel::Tiles && a.cs == 1 && k.is_multiple_of(2))
        .then_some(())
        .filter(|_| a.rs.is_multiple_of(2) && a.offset.is_multiple_of(2))
        .and_then(|_| u32_words(a.data));
    let mut line = [0u32; MAX_KC];
    for (i, panel) in out.chunks_exact_mut(mr * kernel.kc()).enumerate() {
        for r in 0..mr {
            let row = i * mr + r;
            if let (Some(words), true) = (rows_as_words, row < rows) {
                let src = &words[(a.offset + (r0 + row) * a.rs) / 2 + q0..][..kc];
                let runs = src.chunks_exact(16);
                let (last, tail) = (kc / 16, runs.remainder());
                for (step, run) in runs.enumerate() {
                    // A run of 16 words, one 64-byte move (not a call to `memcpy`).
                    let run: &[u32; 16] = run.try_into().expect("16 words");
                    let to: &mut [u32; 16] = (&mut panel[kernel.a_word(r, 16 * step)..][..16])
                        .try_into()
                        .expect("16 words");
                    *to = *run;
                }
                if !tail.is_empty() {
                    panel[kernel.a_word(r, 16 * last)..][..tail.len()].copy_from_slice(tail);
                }
                continue;
            }
            // The row's words: straight into the panel for `Dot`, through `line` for `Tiles`.
            let words = match kernel {
                Kernel::Dot => &mut panel[kernel.a_word(r, 0)..][..kc],
                Kernel::Tiles => &mut line[..kc],
            };
            if row >= rows {
                words.fill(0);
            } else if a.cs == 1 {
                // Row-major: the row's pairs, front to back (the last one half zero when `k`
                // is odd).
                let row = r0 + row;
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
            } else {
                let row = r0 + row;
                for (q, w) in words.iter_mut().enumerate() {
                    let c = c0 + 2 * q;
                    let hi = if c + 1 < k { a.at(row, c + 1) } else { 0 };
                    *w = a.at(row, c) | hi << 16;
                }
            }
            if kernel == Kernel::Tiles {
                for (step, run) in line[..kc].chunks(16).enumerate() {
                    panel[kernel.a_word(r, 16 * step)..][..run.len()].copy_from_slice(run);
                }
            }
        }
    }
}

/// `dst[m x n]` (row-major, contiguous) `= a[m x k] @ b[k x n]` on `bf16` operands in any
/// strides, accumulated in `f32` and rounded once, with `kernel`. Call only where the kernel
/// can run ([`supported`], and [`tiles_supported`] for [`Kernel::Tiles`]; it panics
/// otherwise). Its packed operands and sums are allocated before any work starts, fallibly:
/// scratch the host cannot hold is [`Error::CpuOutOfMemory`], with `dst` untouched.
///
/// [`Error::CpuOutOfMemory`]: crate::core::error::Error::CpuOutOfMemory
pub(crate) fn gemm(
    dst: &mut [bf16],
    (m, k, n): (usize, usize, usize),
    a: MatrixView<'_, bf16>,
    b: MatrixView<'_, bf16>,
    kernel: Kernel,
) -> Result<()> {
    assert!(supported(), "the bf16 kernels need AVX512-BF16");
    assert!(
        kernel == Kernel::Dot || tiles_supported(),
        "the bf16 tile kernel needs AMX-BF16"
    );
    let mr = kernel.mr();
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
    let kc_block = kernel.kc();
    let kblocks = pairs.div_ceil(kc_block);
    let panels = n.div_ceil(NR);
    // Block `kb`, panel `p`: `kc(kb) * NR` words at `(kb * panels + p) * kc_block * NR`.
    // Sizes that overflow saturate, and no allocator grants `usize::MAX` words.
    let words = |parts: &[usize]| parts.iter().fold(1usize, |w, &p| w.saturating_mul(p));
    let mut packed_b = scratch(words(&[kblocks, panels, kc_block, NR]))?;
    let parallel = m.saturating_mul(n).saturating_mul(k) >= kernel.parallel_min() && !cfg!(miri);
    let threads = if parallel {
        rayon::current_num_threads().max(1)
    } else {
        1
    };
    // The packed `b` in units of one `kc_block` block by `unit_panels` micro-panels, each
    // packed by the first thread that needs it (the others wait for it): no separate packing
    // pass, and a unit is still in the packer's L2 when its products start. For the AMX
    // kernel, wider units where `b` has at least two per thread (`TILE_UNIT_PANELS`).
    let unit_panels = match kernel {
        Kernel::Tiles if panels.div_ceil(TILE_UNIT_PANELS) >= 2 * threads => TILE_UNIT_PANELS,
        _ => UNIT_PANELS,
    };
    let units_per_block = panels.div_ceil(unit_panels);
    let mut units = Vec::with_capacity(kblocks * units_per_block);
    for block in as_words(packed_b.as_mut_slice()).chunks_mut(panels * kc_block * NR) {
        for unit in block.chunks_mut(unit_panels * kc_block * NR) {
            units.push(Line(Unit {
                raw: Mutex::new(Some(unit)),
                packed: OnceLock::new(),
            }));
        }
    }
    let unit = |kb: usize, u: usize| -> &[u32] {
        let unit = &units[kb * units_per_block + u].0;
        unit.packed.get_or_init(|| {
            let raw = unit.raw.lock().unwrap_or_else(|e| e.into_inner()).take();
            let raw = raw.expect("a unit is packed once");
            let kc = kc_block.min(pairs - kb * kc_block);
            #[cfg(target_arch = "x86_64")]
            // SAFETY: `gemm` runs only where `supported()` found AVX-512F and AVX-512BW.
            unsafe {
                x86::pack_b(
                    (raw, kc_block),
                    b,
                    (k, n),
                    (kb * kc_block, kc),
                    (u * unit_panels * NR, B_PASS),
                )
            };
            raw
        })
    };
    let micro = m.div_ceil(mr);
    // `dst`'s columns in groups of whole units, one per thread (fewer when `b` has fewer
    // units): a thread packs its group's units of `b` and writes its group's columns of `dst`,
    // the same core from one product to the next (`home_slot`), and turns to the other
    // groups' row blocks only when its own are done. No packed `b` goes from one core's cache
    // to another's, except for the last few row blocks, and each part of `dst` and of the
    // scratch stays in one core's cache from one product to the next. (Rows split among the
    // threads over one shared packed `b`, which each core packed half of and read whole,
    // lost 31% at n = 256 in the windows where the VM put its two vCPUs far apart, a cache
    // line taking 320-350 ns from one to the other instead of 50-55; PyTorch 18%.)
    let groups = threads.min(units_per_block);
    let workers = threads.min(micro.saturating_mul(groups));
    let group_panels = |g: usize| {
        let (u0, u1) = (
            g * units_per_block / groups,
            (g + 1) * units_per_block / groups,
        );
        (u0 * unit_panels, (u1 * unit_panels).min(panels))
    };
    // Row blocks: whole micro-panels whose packed `a` (all of `k`) fits the budget, the same
    // in every group, taken one at a time, and, when threads share them (a group's own and,
    // at the end, the others'), smaller towards the end (each a `2 * sharers`-th of what is
    // left, down to one micro-panel): a thread that starts late (a sleeping core's wake-up)
    // leaves its blocks to the others, and the threads end within a small block of each
    // other. (With even blocks, one thread waited 300-450 us of a 5.6 ms product at
    // n = 1024 for the other's last block.) The blocks' sizes depend on the thread count, but
    // a tile's sums on its row and column alone: the same bits on any number of threads.
    let mc =
        (kernel.a_block_words() / kblocks.saturating_mul(kc_block * mr)).clamp(1, MC_PANELS) * mr;
    let sharers = workers.div_ceil(groups);
    let mut row_blocks = Vec::new();
    let (mut row, mut left) = (0, micro);
    while left > 0 {
        let size = if workers == 1 {
            left
        } else {
            left / (2 * sharers)
        };
        let size = size.clamp(1, mc / mr);
        left -= size;
        let end = (row + size * mr).min(m);
        row_blocks.push((row, end - row));
        row = end;
    }
    // Per worker: the `f32` sums of a column block over the `k` blocks before the last
    // (whole tiles of rows, row stride `ACC_LD`; the last block's tiles go straight to `dst`,
    // rounded), then the packed `a` of a row block (micro-panel `i` of block `kb`: `mr` rows
    // of `kc(kb)` words, `kc_block` apart, at `(kb * bmicro + i) * kc_block * mr`), for the largest
    // block; one allocation for all, so that it comes back from the pool whole.
    let block_rows = mc.min(micro * mr);
    let acc_words = if kblocks > 1 { block_rows * ACC_LD } else { 0 };
    let slot_words = acc_words.saturating_add(words(&[kblocks, block_rows, kc_block]));
    let mut scratch_all = scratch(words(&[workers, slot_words]))?;
    let slots: Vec<Line<Mutex<Option<&mut [f32]>>>> = scratch_all
        .as_mut_slice()
        .chunks_mut(slot_words)
        .map(|s| Line(Mutex::new(Some(s))))
        .collect();
    // Each group's next row block, taken by its home worker (and at the end by the others).
    let next: Vec<Line<AtomicUsize>> = (0..groups).map(|_| Line(AtomicUsize::new(0))).collect();
    // `a`'s words and row stride in words, when the micro-kernel can read its rows in place
    // (row-major, pairs of `k` aligned to words, and rows that do not all fall in one L1 set,
    // as rows a multiple of 4 KiB apart would: twelve streams in an 8-way set): no copy of
    // `a` at all, where each column group's worker would otherwise pack all of it. Not for
    // the AMX kernel, which reads its packing's runs as one stream (see `pack_a`).
    let a_words = (kernel == Kernel::Dot && a.cs == 1 && k.is_multiple_of(2))
        .then_some(())
        .filter(|_| a.rs.is_multiple_of(2) && a.offset.is_multiple_of(2))
        .and_then(|_| u32_words(a.data))
        .filter(|_| a.rs.wrapping_mul(2) % 4096 != 0)
        .map(|words| (words, a.rs / 2));
    let out = Out {
        ptr: dst.as_mut_ptr().cast(),
        m,
        n,
    };
    // Row block `blk` (rows `r0 .. r0 + brows`) of column group `g`, with a worker's scratch.
    let product = |g: usize,
                   blk: usize,
                   (r0, brows): (usize, usize),
                   acc: &mut [f32],
                   packed_a: &mut [u32],
                   amx: Option<&Amx>| {
        let bmicro = brows.div_ceil(mr);
        // Whole micro-panels read in place when `a` allows it; the rest (all, or the last
        // one, short of rows) packed.
        let in_place = if a_words.is_some() { brows / mr } else { 0 };
        for kb in 0..kblocks {
            let kc = kc_block.min(pairs - kb * kc_block);
            let pa = &mut packed_a[kb * bmicro * kc_block * mr..][..bmicro * kc_block * mr];
            let rest = (r0 + in_place * mr, brows - in_place * mr);
            pack_a(
                &mut pa[in_place * mr * kc_block..],
                a,
                k,
                rest,
                (kb * kc_block, kc),
                kernel,
            );
        }
        let (gp0, gp1) = group_panels(g);
        let cblocks = (gp1 - gp0).div_ceil(NC / NR);
        // Neighbouring blocks start on different column blocks and units, so that threads
        // sharing a group pack different units first.
        for j in 0..cblocks {
            let p0 = gp0 + (j + blk) % cblocks * (NC / NR);
            let p1 = (p0 + NC / NR).min(gp1);
            let c0 = p0 * NR;
            for kb in 0..kblocks {
                let kc = kc_block.min(pairs - kb * kc_block);
                let pa = &packed_a[kb * bmicro * kc_block * mr..][..bmicro * kc_block * mr];
                for t in 0..p1 - p0 {
                    let p = p0 + (t + blk * unit_panels) % (p1 - p0);
                    let bu = unit(kb, p / unit_panels);
                    let bp = &bu[p % unit_panels * kc_block * NR..][..kc * NR];
                    let cols = NR.min(n - p * NR);
                    // The micro-panels read in place, then the packed ones: each run of
                    // micro-panels in one call, their tiles one above the other.
                    for (i, panels) in [(0, in_place), (in_place, bmicro - in_place)] {
                        if panels == 0 {
                            continue;
                        }
                        let ap = match a_words {
                            Some((words, lda)) if i < in_place => {
                                let row = a.offset + (r0 + i * mr) * a.rs;
                                (&words[row / 2 + kb * kc_block..], lda)
                            }
                            _ => (&pa[i * mr * kc_block..], kc_block),
                        };
                        let at = i * mr * ACC_LD + (p * NR - c0);
                        let sink = if kb + 1 == kblocks {
                            Sink::Round {
                                prior: (kb > 0).then(|| &acc[at..]),
                                out: &out,
                                at: (r0 + i * mr, p * NR),
                                rows: (brows - i * mr).min(panels * mr),
                            }
                        } else if kb == 0 {
                            Sink::Store(&mut acc[at..])
                        } else {
                            Sink::Add(&mut acc[at..])
                        };
                        // SAFETY: these tiles of `dst` (rows of row block `blk`, columns of
                        // group `g`) are in the item `(g, blk)`, which `next[g]` hands to one
                        // worker only, and no other item's tiles overlap them.
                        unsafe { tiles((kernel, amx), kc, ap, panels, bp, cols, sink) };
                    }
                }
            }
        }
    };
    let work = |_: usize| {
        // This worker's tiles, configured once for all its row blocks (see `x86::Amx`).
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `gemm` runs the AMX kernel only where `tiles_supported()` (asserted above);
        // the scope lives on this thread until `work` returns, and nothing in `product`
        // configures or releases tiles.
        let amx = (kernel == Kernel::Tiles).then(|| unsafe { Amx::configure() });
        #[cfg(not(target_arch = "x86_64"))]
        let amx: Option<Amx> = None;
        // A slot of scratch, preferably the one this core had in the last product.
        let (slot, words) = home_slot(&slots);
        let (acc, packed_a) = words.split_at_mut(acc_words);
        let packed_a = as_words(packed_a);
        let home = slot % groups;
        for (i, g) in (0..groups).map(|i| (i, (home + i) % groups)) {
            loop {
                if i > 0 && workers == groups {
                    // Another worker's group: helped only while a quarter of its rows is
                    // still untaken (its worker started late, or runs on a slower core).
                    // Each block taken from it means reading that group's packed `b`, which
                    // is in the other core's cache: near the end that costs more than the
                    // block saves.
                    let taken = next[g].0.load(Ordering::Relaxed);
                    if row_blocks
                        .get(taken)
                        .is_none_or(|&(r0, _)| 4 * (m - r0) < m)
                    {
                        break;
                    }
                }
                let blk = next[g].0.fetch_add(1, Ordering::Relaxed);
                let Some(&rows) = row_blocks.get(blk) else {
                    break;
                };
                product(g, blk, rows, acc, packed_a, amx.as_ref());
            }
        }
    };
    if workers > 1 {
        // The calling thread is one of the workers, so it never sleeps while they work, and
        // no wake-up (a pool thread's at the start, the caller's at the end) delays a product.
        for_each_task(workers, &work);
    } else {
        work(0);
    }
    Ok(())
}

/// Takes one of `slots` (there is one per worker, and each worker takes one), preferring the
/// one whose index is this core's number modulo their count: the scratch and the column group
/// that go with the slot then stay on one core from one product to the next, as long as the
/// threads do.
fn home_slot<'a>(slots: &[Line<Mutex<Option<&'a mut [f32]>>>]) -> (usize, &'a mut [f32]) {
    let first = current_cpu() % slots.len();
    (0..slots.len())
        .map(|i| (first + i) % slots.len())
        .find_map(|s| {
            let taken = slots[s].0.lock().unwrap_or_else(|e| e.into_inner()).take();
            taken.map(|w| (s, w))
        })
        .expect("a slot per worker")
}

/// The number of the core this thread runs on, as the OS last told the CPU (`RDTSCP`'s
/// `TSC_AUX`, the CPU's number in its low 12 bits on Linux), or 0 where it cannot be read.
/// Only a preference: a wrong or stale number costs cache misses, never correctness.
fn current_cpu() -> usize {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        static RDTSCP: OnceLock<bool> = OnceLock::new();
        // CPUID leaf 0x8000_0001, EDX bit 27.
        let has = *RDTSCP.get_or_init(|| {
            let max = std::arch::x86_64::__cpuid(0x8000_0000).eax;
            max >= 0x8000_0001 && std::arch::x86_64::__cpuid(0x8000_0001).edx & (1 << 27) != 0
        });
        if has {
            let mut aux = 0u32;
            // SAFETY: the CPU has RDTSCP (checked above); it writes only `aux`.
            unsafe { std::arch::x86_64::__rdtscp(&mut aux) };
            return (aux & 0xfff) as usize;
        }
    }
    0
}

/// A value alone in its cache lines (two of them, as the L2 prefetcher fetches lines in
/// pairs), so that one core writing it does not take a line another core is reading.
#[repr(align(128))]
struct Line<T>(T);

/// `dst` as the workers write it: each tile by one worker (the items are disjoint), through a
/// pointer because two workers' tiles can share rows.
struct Out {
    ptr: *mut u16,
    m: usize,
    n: usize,
}
// SAFETY: the pointer is written only through `tile`, whose callers write disjoint tiles.
unsafe impl Sync for Out {}

/// One block of `k` by `unit_panels` micro-panels of the packed `b`: its words, until the first
/// thread that needs it takes them to pack (`raw`), then packed, for every thread to read
/// (`packed`).
struct Unit<'a> {
    raw: Mutex<Option<&'a mut [u32]>>,
    packed: OnceLock<&'a [u32]>,
}

/// `len` words of scratch from the `f32` buffer pool, allocated fallibly, starting on a cache
/// line: a recycled buffer comes as the last product left it (hot in the caches, and not
/// cleared: every word is written before it is read), and goes back to the pool when dropped.
fn scratch(len: usize) -> Result<Scratch> {
    Ok(Scratch {
        buf: PooledVec::with_len(len.saturating_add(LINE_WORDS - 1))?,
        len,
    })
}

/// Words in a cache line (64 bytes).
const LINE_WORDS: usize = 16;

/// A buffer of [`scratch`]: `len` words from the first cache line of `buf` (the pool's
/// buffers start where the allocator put them, 16 bytes into a line for large ones). Every
/// packed row of 64 bytes then lies in one line: an AMX tile load of rows that straddle two
/// lines took six times as long (4 loads of 16 rows from L1 in 203 cycles against 33.6, the
/// whole kernel at 877 GFLOP/s against 1413 on one thread, measured on the Xeon of `pack_a`
/// with a scratch loop), and `vdpbf16ps`'s 64-byte loads of `b` each touch one line.
struct Scratch {
    buf: PooledVec<f32>,
    len: usize,
}

impl Scratch {
    fn as_mut_slice(&mut self) -> &mut [f32] {
        let words = self.buf.as_mut_slice();
        // At most 15 words to the line (`LINE_WORDS - 1` spare); where the offset cannot be
        // computed, the buffer as it is, correct but slower.
        let skip = crate::backend::cpu::elements_to_cache_line(words).unwrap_or(0);
        &mut words[skip..][..self.len]
    }
}

/// `data` as 32-bit words (word `i` = elements `2 i` and `2 i + 1`), when it starts at a
/// word's alignment.
fn u32_words(data: &[u16]) -> Option<&[u32]> {
    // SAFETY: `u16` and `u32` are plain integers, every bit pattern valid; `align_to` gives the
    // aligned middle part, which borrows `data` for its lifetime.
    let (head, words, _) = unsafe { data.align_to::<u32>() };
    head.is_empty().then_some(words)
}

/// The scratch words of [`scratch`], as the packing and the micro-kernel see them.
fn as_words(v: &mut [f32]) -> &mut [u32] {
    // SAFETY: `f32` and `u32` have the same size and alignment, and every bit pattern is a
    // valid value of both; the result borrows `v` exclusively for its lifetime.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u32>(), v.len()) }
}

/// Where the sums of a column of tiles over their `kc` pairs go: `panels` tiles of the
/// kernel's `mr` rows (one above the other) by `cols` columns, at row stride `ACC_LD` in the
/// `f32` sums and `n` in `dst`.
enum Sink<'a> {
    /// `c = sum`: the first of several blocks of `k`.
    Store(&'a mut [f32]),
    /// `c += sum`: a block between the first and the last.
    Add(&'a mut [f32]),
    /// The last block: `dst = bf16(prior + sum)` (or of `sum` alone when it is also the
    /// first), for the tiles' first `rows` rows, at row and column `at` of `out`.
    Round {
        prior: Option<&'a [f32]>,
        out: &'a Out,
        at: (usize, usize),
        rows: usize,
    },
}

/// Runs `kernel` on a column of `panels` tiles of `mr x cols`: the product of `panels`
/// micro-panels of `a` (`mr * lda` words apart) with one micro-panel of `b`, each tile summed
/// from zero (so its earlier sums are read only after the products, their cache misses hidden
/// behind the next tile's work), then into `sink`.
///
/// # Safety
/// With [`Sink::Round`], no other thread may read or write the tiles' part of `dst` while this
/// runs (its bounds are checked here). `kernel` must be able to run on this CPU (as `gemm`
/// asserts).
unsafe fn tiles(
    (kernel, amx): (Kernel, Option<&Amx>),
    kc: usize,
    (a, lda): (&[u32], usize),
    panels: usize,
    b: &[u32],
    cols: usize,
    sink: Sink<'_>,
) {
    let mr = kernel.mr();
    let all = panels * mr;
    assert!(panels >= 1 && kc <= kernel.kc() && b.len() >= kc * NR);
    match kernel {
        Kernel::Dot => assert!(kc <= lda && a.len() >= (all - 1) * lda + kc),
        // Packed micro-panels (`Kernel::a_word`), `mr * TILE_KC` words apart, whole runs of 16
        // pairs.
        Kernel::Tiles => assert!(
            lda == TILE_KC && a.len() >= (panels - 1) * mr * TILE_KC + mr * kc.next_multiple_of(16)
        ),
    }
    assert!((1..=NR).contains(&cols));
    let tile_len = |rows: usize, ld: usize| (rows - 1) * ld + cols;
    let (mode, c, dst, rows) = match sink {
        Sink::Store(c) => {
            assert!(c.len() >= tile_len(all, ACC_LD));
            (Mode::Store, c.as_mut_ptr(), (std::ptr::null_mut(), 0), all)
        }
        Sink::Add(c) => {
            assert!(c.len() >= tile_len(all, ACC_LD));
            (Mode::Add, c.as_mut_ptr(), (std::ptr::null_mut(), 0), all)
        }
        Sink::Round {
            prior,
            out,
            at: (r, c),
            rows,
        } => {
            assert!(all - mr < rows && rows <= all && r + rows <= out.m && c + cols <= out.n);
            let dst = (out.ptr.wrapping_add(r * out.n + c), out.n);
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
    let (a, b) = (a.as_ptr(), b.as_ptr());
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `gemm` runs only when `supported()` found AVX-512F, AVX-512BW and AVX512-BF16,
    // and with `Kernel::Tiles` only when `tiles_supported()` found AMX and the OS's grant (the
    // caller's contract); the micro-panels hold `kc` pairs of `mr` rows (asserted above, as
    // each kernel reads them) and `b`'s `kc` pairs of `NR` columns, and `c` (row stride
    // `ACC_LD`) and `dst` hold the `rows` rows of `cols` values that `mode` touches (asserted
    // above); `c` is written only in the modes that got it from a `&mut`, `dst` by this
    // thread alone (the caller's contract).
    unsafe {
        match kernel {
            Kernel::Dot => {
                for i in 0..panels {
                    let at = i * DOT_MR;
                    x86::dot(
                        kc,
                        (a.wrapping_add(at * lda), lda),
                        b,
                        c.wrapping_add(at * ACC_LD),
                        (dst.0.wrapping_add(at * dst.1), dst.1),
                        (DOT_MR.min(rows - at), cols),
                        mode,
                    )
                }
            }
            Kernel::Tiles => {
                let amx = amx.expect("the AMX kernel runs in a configured scope");
                x86::tiles((amx, kc), (a, panels), b, c, dst, (rows, cols), mode)
            }
        }
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (kernel, amx, a, b, c, dst, rows, mode);
}

/// A thread's configured AMX tiles ([`x86::Amx`]); nothing where there is no AMX.
#[cfg(target_arch = "x86_64")]
use x86::Amx;
#[cfg(not(target_arch = "x86_64"))]
enum Amx {}

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
    use super::{Mode, ACC_LD, CHUNK_STEPS, DOT_MR, MC_PANELS, NR, TILE_MR};
    use std::arch::asm;
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
        block: (&mut [u32], usize),
        b: super::Bits<'_>,
        kn: (usize, usize),
        q: (usize, usize),
        columns: (usize, usize),
    ) {
        super::pack_b(block, b, kn, q, columns);
    }

    /// Sums `a[r][q] . b[q][j]` (each a pair of `bf16` products) over the `kc` pairs of the
    /// packed panels, from zero, for a `DOT_MR x NR` tile, then finishes it as `mode` says on
    /// the first `rows` rows and `cols` columns of `c` (`f32`, row stride `ACC_LD`) or `dst`
    /// (`bf16` bits, row stride `ldd`), as [`finish`] does.
    ///
    /// # Safety
    /// The CPU must have AVX-512F, AVX-512BW and AVX512-BF16; `kc <= DOT_KC`; `a` must hold
    /// `DOT_MR` rows of `kc` words, `lda` words apart, `b` `kc * NR` words; `c` (read in `Add`
    /// and `AddRound`, written in `Store` and `Add`) and `dst` (written in `Round` and
    /// `AddRound`) must hold `rows` rows of `cols` values at their strides, `rows <= DOT_MR`
    /// and `cols <= NR`.
    #[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
    pub(super) unsafe fn dot(
        kc: usize,
        (a, lda): (*const u32, usize),
        b: *const u32,
        c: *mut f32,
        (dst, ldd): (*mut u16, usize),
        (rows, cols): (usize, usize),
        mode: Mode,
    ) {
        let mut acc = [[_mm512_setzero_ps(); 2]; DOT_MR];
        // SAFETY: `a` holds `DOT_MR` rows of `kc` words and `b` `kc` pairs (the caller's
        // contract).
        unsafe { dot_pairs(&mut acc, 0..kc, (a, lda), b) };
        // SAFETY: the caller's contract, passed on.
        unsafe { finish(&acc[..rows], c, (dst, ldd), cols, mode) };
    }

    /// Adds `a[r][q] . b[q][j]` for the pairs `q` in `pairs` to the rows of `acc`
    /// (`vdpbf16ps`, each word of `a` broadcast to every lane).
    ///
    /// # Safety
    /// The CPU must have AVX-512F and AVX512-BF16; `a` must hold `acc.len()` rows of
    /// `pairs.end` words, `lda` words apart, and `b` `pairs.end * NR` words.
    #[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
    #[inline]
    unsafe fn dot_pairs(
        acc: &mut [[__m512; 2]],
        pairs: std::ops::Range<usize>,
        (a, lda): (*const u32, usize),
        b: *const u32,
    ) {
        for q in pairs {
            // SAFETY: pair `q` of each panel is inside it (the caller's contract); the
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
                // SAFETY: word `r * lda + q` is inside `a` (the caller's contract).
                let w = unsafe { a.add(r * lda + q).read() } as i32;
                let x = as_bh(_mm512_set1_epi32(w));
                cr[0] = _mm512_dpbf16_ps(cr[0], x, b0);
                cr[1] = _mm512_dpbf16_ps(cr[1], x, b1);
            }
        }
    }

    /// Finishes the sums of `acc.len()` rows of a tile (row `r`'s `NR` columns in `acc[r]`) as
    /// `mode` says, on their first `cols` columns of `c` (`f32`, row stride `ACC_LD`) or `dst`
    /// (`bf16` bits, row stride `ldd`). The rounding to `bf16` is to nearest, ties to even, as
    /// `half`'s `from_f32`, with NaN kept quiet; sums in the subnormal range become zero.
    ///
    /// # Safety
    /// The CPU must have AVX-512F, AVX-512BW and AVX512-BF16; `c` (read in `Add` and
    /// `AddRound`, written in `Store` and `Add`) and `dst` (written in `Round` and `AddRound`)
    /// must hold `acc.len()` rows of `cols` values at their strides, `cols <= NR`.
    #[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
    #[inline]
    unsafe fn finish(
        acc: &[[__m512; 2]],
        c: *mut f32,
        (dst, ldd): (*mut u16, usize),
        cols: usize,
        mode: Mode,
    ) {
        // The columns in use: the first 16 in the first vector, the rest in the second.
        let m0: __mmask16 = if cols >= 16 { !0 } else { (1 << cols) - 1 };
        let m1: __mmask16 = if cols >= NR {
            !0
        } else {
            ((1u32 << cols.saturating_sub(16)) - 1) as u16
        };
        let m32: __mmask32 = m0 as u32 | (m1 as u32) << 16;
        for (r, cr) in acc.iter().enumerate() {
            // SAFETY: row `r` of the tile, columns `< cols` (the masks) of `c` or `dst` (the
            // caller's contract); masked-off lanes are neither read nor written.
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

    /// AMX's tile configuration for [`tiles`]: palette 1, all eight tiles 16 rows of 64 bytes
    /// (`tmm0`-`tmm3` the four `16 x 16` `f32` sums, `tmm4`-`tmm5` two `16 x 16`-word blocks of
    /// `a`, `tmm6`-`tmm7` two `16 x 16`-word blocks of `b`).
    #[repr(C, align(64))]
    struct TileConfig([u8; 64]);

    static TILE_CONFIG: TileConfig = {
        let mut cfg = [0u8; 64];
        cfg[0] = 1; // palette
        let mut t = 0;
        while t < 8 {
            cfg[16 + 2 * t] = 64; // bytes per row (little-endian u16)
            cfg[48 + t] = 16; // rows
            t += 1;
        }
        TileConfig(cfg)
    };

    /// This thread's AMX tiles, configured as `TILE_CONFIG` says for as long as this lives, and
    /// released when it is dropped (or unwound): the proof [`tiles`] takes that they are
    /// configured. `ldtilecfg` and `tilerelease` wait for every tile instruction in flight, so
    /// a worker configures once for all its products of a GEMM, not once per column of tiles:
    /// at n = 256 (16 columns a worker, each four tiles of 8 steps), `ldtilecfg` alone held a
    /// quarter of the kernel's samples (`perf record` on the Xeon of [`super::pack_a`]). Not
    /// `Send`: the configuration belongs to the thread that made it.
    pub(super) struct Amx(std::marker::PhantomData<*const ()>);

    impl Amx {
        /// Configures this thread's tiles.
        ///
        /// # Safety
        /// The CPU must have AMX-TILE and the OS must have granted this process the tile data
        /// (`tiles_supported()`); nothing else on this thread may configure or release the
        /// tiles while the scope lives (only [`tiles`] uses them, and it does neither).
        pub(super) unsafe fn configure() -> Amx {
            // SAFETY: AMX-TILE and the grant (the caller's contract); the instruction reads the
            // 64 bytes of `TILE_CONFIG`, a valid palette-1 configuration, and nothing else.
            unsafe {
                asm!(
                    "ldtilecfg [{cfg}]",
                    cfg = in(reg) TILE_CONFIG.0.as_ptr(),
                    options(nostack, readonly),
                )
            };
            Amx(std::marker::PhantomData)
        }
    }

    impl Drop for Amx {
        fn drop(&mut self) {
            // SAFETY: the tiles were configured by `configure`, so the CPU has AMX-TILE;
            // releasing them returns them to their initial state and touches no memory.
            unsafe { asm!("tilerelease", options(nostack, nomem)) };
        }
    }

    /// The [`super::Kernel::Tiles`] micro-kernel on a column of `panels` tiles of `TILE_MR x
    /// NR` (at most `MC_PANELS`): [`dot`]'s work on each, with `a` packed micro-panels in runs
    /// of 16 pairs (`Kernel::a_word`), `TILE_MR * TILE_KC` words apart, and the tiles' rows one
    /// after the other in `c` and `dst`. For each tile, the first `16 * (kc / 16)` pairs go
    /// through AMX (per 16 pairs, a step: `a`'s two tiles, one 2 KiB run, and `b`'s two, four
    /// `tdpbf16ps` into the four sum tiles), in chunks of `CHUNK_STEPS` steps: each chunk
    /// runs over every tile of the column, a tile's sums coming from the stack (zero in the
    /// first chunk) and going back to it, so that the chunk's 32 KiB of `b` are read from L1
    /// by all but the first tile, while `a`, read once per chunk, streams from L2 with
    /// `tileloaddt1` (not kept in L1, where it would push `b` out). The sums stay `f32` on the
    /// way, so the chunks change no bit. Measured on the Xeon of [`super::pack_a`] (two
    /// threads, three rounds alternated, medians of `bf16` products through `matmul`): n =
    /// 512 1486-1533 GFLOP/s against 1359-1396 with the whole of `kc` per tile, n = 1024
    /// 1866-1945 against 1604-1689, n = 256 and 2048 the same; 8 steps a chunk or 32 were
    /// slower (32: 1651-1718 at n = 1024 and 2048, its `b` chunk past L1), plain `tileloadd`
    /// for `a` 7-13% slower, software prefetches of `a` no faster. While a chunk runs, the
    /// next chunk's `b` (after a panel's last chunk, the start of the next panel) is fetched
    /// into L2, 256 bytes a step, so that the first tile of each chunk no longer waits on L3
    /// for it: n = 2048 2246-2400 GFLOP/s against 2125-2204 (five rounds alternated), n = 256
    /// to 1024 the same; `prefetcht0` and `prefetcht2` about the same, 512 bytes a step (two
    /// chunks ahead by the last tiles) and one chunk further ahead slower. Then the last `kc % 16`
    /// pairs are added with `vdpbf16ps` (the same sums of pairs, one rounding per pair of
    /// products) 8 rows at a time before [`finish`]; where there are none, the sums are
    /// finished in place (n = 256 715-765 against 673-686 GFLOP/s with them copied through
    /// registers and the stack).
    ///
    /// Within a tile, the loop loads the next step's first tiles of `a` and `b` as soon as this
    /// step's products are done with them (the tile registers are not renamed, so a load waits
    /// for the products that read its register): 3-5% faster than loading each step's four
    /// tiles at its start (measured with a scratch loop on the same Xeon). The tiles' data
    /// lives inside one `asm!` block (no tile register is live between blocks); their
    /// configuration is the worker's [`Amx`] scope's, made once per product and released
    /// when the worker is done, so that a thread between products carries no tile state.
    ///
    /// # Safety
    /// [`dot`]'s for each tile, with `TILE_MR` for `DOT_MR`, `rows` counted over the column
    /// (`rows <= panels * TILE_MR`), and tile `i` of `a` holding `TILE_MR` rows of `kc` pairs
    /// as `Kernel::a_word` places them (`TILE_MR * 16 * kc.div_ceil(16)` words from word
    /// `i * TILE_MR * TILE_KC`); and this thread's tiles configured as [`Amx`] configures them
    /// (the `_configured` scope, which also proves AMX-TILE and the OS's grant).
    #[target_feature(enable = "avx512f,avx512bw,avx512bf16")]
    pub(super) unsafe fn tiles(
        (_configured, kc): (&Amx, usize),
        (a, panels): (*const u32, usize),
        b: *const u32,
        c: *mut f32,
        (dst, ldd): (*mut u16, usize),
        (rows, cols): (usize, usize),
        mode: Mode,
    ) {
        /// The tiles' sums, `TILE_MR` rows of `NR` floats per tile.
        #[repr(C, align(64))]
        struct Sums([[f32; NR]; TILE_MR * MC_PANELS]);
        assert!((1..=MC_PANELS).contains(&panels));
        // Uninitialised (32 KiB, of which the column uses `panels` tiles): its rows are read
        // only after the tile stores, or the zeros, have written them.
        let mut sums = std::mem::MaybeUninit::<Sums>::uninit();
        let sum_rows: *mut [f32; NR] = sums.as_mut_ptr().cast();
        let steps = kc / 16;
        if steps == 0 {
            // SAFETY: the column's rows of `sums`, inside it (`panels <= MC_PANELS`).
            unsafe { sum_rows.write_bytes(0, panels * TILE_MR) };
        } else {
            // SAFETY: the CPU has AMX-TILE and AMX-BF16 and the OS's grant, and the tiles are
            // configured (the caller's contract and `_configured`). Each tile load reads 16
            // rows of 64 bytes: of `a`, the two halves of step `s`'s run of tile `i` (words
            // `i * TILE_MR * TILE_KC + s * 512 ..` and `+ 256`, 16 words a row); of `b`, pairs
            // `16 s .. 16 s + 16` of the panel (`NR` words a pair, the tiles its first and
            // second 16 columns); for `s < steps` and `i < panels`, inside the operands by the
            // caller's contract (each chunk's loop is peeled so that no load reaches past its
            // last step, and the chunks end at step `steps`). The sums' loads and stores touch
            // `sums`, 32 rows of 128 bytes per tile, `panels <= MC_PANELS` tiles, each tile's
            // loaded only after the previous chunk stored it. The block touches no memory else,
            // pushes nothing (`nostack`), and leaves the configuration as it found it. Its
            // prefetches may name lines past the operands (the chunk after a panel's last):
            // a prefetch reads nothing the program sees and never faults.
            unsafe {
                asm!(
                    // A chunk of at most `CHUNK_STEPS` steps over every tile of the column.
                    "6:",
                    "mov {i}, {panels}",
                    // The next chunk's `b`, a quarter of a step's 2 KiB fetched into L2 at each
                    // step of this chunk (all of it over eight tiles of 16 steps).
                    "lea {pf}, [{bc} + {chunk_bytes}]",
                    // A tile: its sums from zero (the first chunk) or from `sums`.
                    "4:",
                    "mov {a}, {at}",
                    "mov {b}, {bc}",
                    "cmp {left}, {steps}",
                    "jne 8f",
                    "tilezero tmm0",
                    "tilezero tmm1",
                    "tilezero tmm2",
                    "tilezero tmm3",
                    "jmp 9f",
                    "8:",
                    "tileloadd tmm0, [{st} + {r64}*2]",
                    "tileloadd tmm1, [{st} + {r64}*2 + 64]",
                    "tileloadd tmm2, [{st} + {r64}*2 + 2048]",
                    "tileloadd tmm3, [{st} + {r64}*2 + 2112]",
                    "9:",
                    "tileloaddt1 tmm4, [{a} + {r64}*1]",
                    "tileloadd tmm6, [{b} + {r64}*2]",
                    "mov {step}, {left}",
                    "cmp {step}, {chunk}",
                    "jbe 7f",
                    "mov {step}, {chunk}",
                    "7:",
                    "dec {step}",
                    "jz 3f",
                    "2:",
                    "tileloadd tmm7, [{b} + {r64}*2 + 64]",
                    "tdpbf16ps tmm0, tmm4, tmm6",
                    "tileloaddt1 tmm5, [{a} + {r64}*1 + 1024]",
                    "tdpbf16ps tmm1, tmm4, tmm7",
                    "add {a}, 2048",
                    "add {b}, 2048",
                    "prefetcht1 [{pf}]",
                    "prefetcht1 [{pf} + 64]",
                    "prefetcht1 [{pf} + 128]",
                    "prefetcht1 [{pf} + 192]",
                    "add {pf}, 256",
                    "tdpbf16ps tmm2, tmm5, tmm6",
                    "tileloaddt1 tmm4, [{a} + {r64}*1]",
                    "tdpbf16ps tmm3, tmm5, tmm7",
                    "tileloadd tmm6, [{b} + {r64}*2]",
                    "dec {step}",
                    "jnz 2b",
                    "3:",
                    "prefetcht1 [{pf}]",
                    "prefetcht1 [{pf} + 64]",
                    "prefetcht1 [{pf} + 128]",
                    "prefetcht1 [{pf} + 192]",
                    "add {pf}, 256",
                    "tileloadd tmm7, [{b} + {r64}*2 + 64]",
                    "tdpbf16ps tmm0, tmm4, tmm6",
                    "tileloaddt1 tmm5, [{a} + {r64}*1 + 1024]",
                    "tdpbf16ps tmm1, tmm4, tmm7",
                    "tdpbf16ps tmm2, tmm5, tmm6",
                    "tdpbf16ps tmm3, tmm5, tmm7",
                    "tilestored [{st} + {r64}*2], tmm0",
                    "tilestored [{st} + {r64}*2 + 64], tmm1",
                    "tilestored [{st} + {r64}*2 + 2048], tmm2",
                    "tilestored [{st} + {r64}*2 + 2112], tmm3",
                    "add {at}, {tile_bytes}",
                    "add {st}, 4096",
                    "dec {i}",
                    "jnz 4b",
                    // The next chunk: back to the first tile, `CHUNK_STEPS` steps on.
                    "mov {step}, {panels}",
                    "imul {step}, {step}, {tile_bytes}",
                    "sub {at}, {step}",
                    "add {at}, {chunk_bytes}",
                    "add {bc}, {chunk_bytes}",
                    "mov {step}, {panels}",
                    "shl {step}, 12",
                    "sub {st}, {step}",
                    "sub {left}, {chunk}",
                    "ja 6b",
                    at = inout(reg) a => _,
                    bc = inout(reg) b => _,
                    steps = in(reg) steps,
                    left = inout(reg) steps => _,
                    panels = in(reg) panels,
                    st = inout(reg) sum_rows => _,
                    i = out(reg) _,
                    a = out(reg) _,
                    b = out(reg) _,
                    step = out(reg) _,
                    pf = out(reg) _,
                    // A tile row of `a`'s runs: 16 words; twice that, a pair of `b`'s
                    // panel and a row of `sums`: `NR` words.
                    r64 = in(reg) 64usize,
                    chunk = const CHUNK_STEPS,
                    chunk_bytes = const CHUNK_STEPS * 2048,
                    tile_bytes = const TILE_MR * super::TILE_KC * 4,
                    options(nostack),
                );
            }
        }
        for i in 0..panels {
            let first = i * TILE_MR;
            if first >= rows {
                break;
            }
            let tile_rows = TILE_MR.min(rows - first);
            if kc.is_multiple_of(16) {
                // No pairs past the last step: the tile's sums are finished where they are.
                // SAFETY: rows `first .. first + tile_rows` of `sums` (inside it, `first +
                // tile_rows <= panels * TILE_MR`), written by the tile stores above; a row of
                // `NR` floats is two 64-byte vectors, and `Sums` is 64-byte aligned. Then
                // `finish` on the tile's rows of `c` or `dst`, inside them (the caller's
                // contract).
                unsafe {
                    let sums = std::slice::from_raw_parts(
                        sum_rows.add(first).cast::<[__m512; 2]>(),
                        tile_rows,
                    );
                    finish(
                        sums,
                        c.wrapping_add(first * ACC_LD),
                        (dst.wrapping_add(first * ldd), ldd),
                        cols,
                        mode,
                    )
                };
                continue;
            }
            let a = a.wrapping_add(first * super::TILE_KC);
            // The pairs past the last whole step: the rows' words in the last run, 16 apart.
            let (tail_a, tail_b) = (
                a.wrapping_add(steps * TILE_MR * 16),
                b.wrapping_add(steps * 16 * NR),
            );
            for r0 in (0..tile_rows).step_by(8) {
                let rows8 = 8.min(rows - first - r0);
                let mut acc = [[_mm512_setzero_ps(); 2]; 8];
                for (j, v) in acc.iter_mut().enumerate() {
                    // SAFETY: row `first + r0 + j < panels * TILE_MR` of `sums` (`r0 + j <
                    // TILE_MR`), `NR` = 32 floats, written above.
                    unsafe {
                        let row = sum_rows.add(first + r0 + j).cast::<f32>();
                        v[0] = _mm512_loadu_ps(row);
                        v[1] = _mm512_loadu_ps(row.add(16));
                    }
                }
                // SAFETY: the last run holds `kc % 16` pairs of every row, and `b` `kc` pairs
                // (the caller's contract).
                unsafe {
                    dot_pairs(
                        &mut acc,
                        0..kc % 16,
                        (tail_a.wrapping_add(r0 * 16), 16),
                        tail_b,
                    )
                };
                // SAFETY: rows `first + r0 ..` of the column, `rows8` of them, inside `c` or
                // `dst` (the caller's contract).
                unsafe {
                    let r = first + r0;
                    finish(
                        &acc[..rows8],
                        c.wrapping_add(r * ACC_LD),
                        (dst.wrapping_add(r * ldd), ldd),
                        cols,
                        mode,
                    )
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rayon::prelude::*;

    /// The row-block and tile sizes the test shapes are built around (`vdpbf16ps`'s; the AMX
    /// kernel's tiles of 32 rows and row blocks of up to `MC_PANELS` of them fall on other rows
    /// of the same shapes).
    const MR: usize = DOT_MR;
    const MC: usize = MC_PANELS * DOT_MR;

    /// The kernels this CPU can run, whether or not `matmul` prefers them here, after saying
    /// which cannot. A test with none returns before any reference work (under Miri, which
    /// runs no kernel, the reference loops alone would take hours).
    fn kernels_here() -> Vec<Kernel> {
        let mut here = Vec::new();
        if supported() {
            here.push(Kernel::Dot);
        } else {
            eprintln!("skipping the vdpbf16ps kernel: this CPU has no AVX512-BF16");
        }
        if tiles_supported() {
            here.push(Kernel::Tiles);
        } else {
            eprintln!("skipping the AMX kernel: this CPU or OS gives no AMX-BF16 tiles");
        }
        here
    }

    /// A row-major view of `data` from its start, rows `rs` apart.
    fn row_major(data: &[bf16], rs: usize) -> MatrixView<'_, bf16> {
        MatrixView {
            data,
            offset: 0,
            row_stride: rs,
            col_stride: 1,
        }
    }

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

    /// Against the f64 product of the same `bf16` values, on odd sizes (every edge: rows past
    /// `MR` and `MC`, columns past `NR` and `NC`, an odd `k`, more than one block of `k`, row
    /// blocks shortened by a long `k`, more than one thread) and every stride order of both
    /// operands (row-major, transposed, and a view with neither stride 1), with the operands
    /// at an offset inside a larger buffer.
    #[test]
    fn bf16_kernel_matches_the_f64_product() {
        let kernels = kernels_here();
        if kernels.is_empty() {
            return;
        }
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let sizes = [
            (1, 1, 1),
            (13, 3, 33),
            (37, 301, 45),
            (100, 257, 70),
            (2 * MC + 5, 2 * 2 * MAX_KC + 3, NR + 1),
            (1, 2 * MAX_KC, 2 * NR),
            // More than one column block, and a `k` long enough for row blocks under `MC` (and
            // under `MC_PANELS` AMX tiles): three blocks of `TILE_KC`, five of `DOT_KC`.
            (40, 2 * 2 * MAX_KC + 1, NC + NR + 3),
            // Three column blocks, so that the two tasks start on different units of `b`, and
            // each packs some that the other then reads.
            (2 * MC + 7, 2 * MAX_KC + 1, 2 * NC + 5),
            // Even `k` (with `a` at an even offset): whole micro-panels of a row-major `a` read
            // in place (`vdpbf16ps` only), the last one short of rows packed, over one and two
            // blocks.
            (37, 300, 45),
            (2 * MC + 5, 2 * DOT_KC + 2, NC + 3),
            // Rows 4 KiB apart: packed after all.
            (25, 2048, 33),
            // The AMX kernel's pairs of `k` past the last whole 16 (1 to 15 of them, and all
            // of a short `k`), on a whole tile of 32 rows read in place and a short one.
            (TILE_MR + 9, 2 * 16 + 2, 2 * NR + 3),
            (2 * TILE_MR, 2 * 16 * 7 + 30, NR),
            (TILE_MR + 1, 30, 17),
            // More AMX steps than one chunk (`CHUNK_STEPS`), the last chunk short, then a
            // tail of pairs: 21 steps of 16 and 3 pairs, over three tiles of a column.
            (2 * TILE_MR + 3, 2 * (16 * (CHUNK_STEPS + 5) + 3), NR + 5),
        ];
        for (m, k, n) in sizes {
            // Each operand in a buffer 3 times its size, at an offset (odd for an odd `k`,
            // even otherwise), with strides: 0 row-major, 1 column-major, 2 both strides > 1
            // (every other element).
            let off = 8 - k % 2;
            let a = values(3 * m * k + off, &mut seed);
            let b = values(3 * k * n + off, &mut seed);
            let (a64, b64): (Vec<f64>, Vec<f64>) = (
                a.iter().map(|x| x.to_f64()).collect(),
                b.iter().map(|x| x.to_f64()).collect(),
            );
            let strides = |rows: usize, cols: usize, order: usize| match order {
                0 => (cols, 1),
                1 => (1, rows),
                _ => (2 * cols, 2),
            };
            // The long cases in two orders only, their reference on every fifth row and the
            // last (the reference is slow in a debug build; every tile still has rows checked).
            let orders = [(0, 0), (1, 1), (0, 1), (1, 0), (2, 2)];
            let (orders, row_step) = if m * k * n > 1 << 24 {
                (&orders[..2], 5)
            } else {
                (&orders[..], 1)
            };
            for &(oa, ob) in orders {
                let (a_rs, a_cs) = strides(m, k, oa);
                let (b_rs, b_cs) = strides(k, n, ob);
                let va = MatrixView {
                    data: &a,
                    offset: off,
                    row_stride: a_rs,
                    col_stride: a_cs,
                };
                let vb = MatrixView {
                    data: &b,
                    offset: off,
                    row_stride: b_rs,
                    col_stride: b_cs,
                };
                // Every kernel's product, against one reference.
                let dsts: Vec<(Kernel, Vec<bf16>)> = kernels
                    .iter()
                    .map(|&kernel| {
                        let mut dst = vec![bf16::NAN; m * n];
                        gemm(&mut dst, (m, k, n), va, vb, kernel).unwrap();
                        (kernel, dst)
                    })
                    .collect();
                for i in (0..m).filter(|i| i % row_step == 0 || i + 1 == m) {
                    for j in 0..n {
                        let (mut want, mut mag) = (0f64, 0f64);
                        for p in 0..k {
                            let x = a64[off + i * a_rs + p * a_cs] * b64[off + p * b_rs + j * b_cs];
                            want += x;
                            mag += x.abs();
                        }
                        // f32 accumulation, then one rounding to bf16 (8 significant bits).
                        let tol = mag * k as f64 * f32::EPSILON as f64
                            + want.abs() * 2f64.powi(-8)
                            + 1e-30;
                        for (kernel, dst) in &dsts {
                            let got = dst[i * n + j].to_f64();
                            assert!(
                                (got - want).abs() <= tol,
                                "{kernel:?} ({m}, {k}, {n}) strides {oa}/{ob} at ({i}, {j}): {got} vs {want}"
                            );
                        }
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
        let kernels = kernels_here();
        if kernels.is_empty() {
            return;
        }
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let (m, k, n) = (3 * MC + 5, 2 * MAX_KC + 9, 2 * NC + 7);
        let a = values(m * k, &mut seed);
        let b = values(k * n, &mut seed);
        for kernel in kernels {
            let product = || {
                let mut dst = vec![bf16::NAN; m * n];
                gemm(
                    &mut dst,
                    (m, k, n),
                    row_major(&a, k),
                    row_major(&b, n),
                    kernel,
                )
                .unwrap();
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
    }

    /// On pools of 1, 3 and 5 threads (more threads than this machine's cores, so that some
    /// start late and the others take row blocks of their column groups), the same bits,
    /// and the `f64` product's values; `a` read in place (even `k`) over two blocks of `k`.
    #[test]
    fn column_groups_on_any_pool_give_the_same_bits() {
        let kernels = kernels_here();
        if kernels.is_empty() {
            return;
        }
        let mut seed = 0x5851_f42d_4c95_7f2du64;
        let (m, k, n) = (5 * MC + 7, 2 * MAX_KC + 2, 3 * NC + 5);
        let a = values(m * k, &mut seed);
        let b = values(k * n, &mut seed);
        let on = |threads: usize, kernel: Kernel| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut dst = vec![bf16::NAN; m * n];
            pool.install(|| {
                let (a, b) = (row_major(&a, k), row_major(&b, n));
                gemm(&mut dst, (m, k, n), a, b, kernel).unwrap()
            });
            dst
        };
        // Each kernel on one thread, against one reference.
        let ones: Vec<(Kernel, Vec<bf16>)> = kernels
            .into_iter()
            .map(|kernel| (kernel, on(1, kernel)))
            .collect();
        for i in (0..m).step_by(7) {
            for j in 0..n {
                let (mut want, mut mag) = (0f64, 0f64);
                for p in 0..k {
                    let x = a[i * k + p].to_f64() * b[p * n + j].to_f64();
                    want += x;
                    mag += x.abs();
                }
                let tol = mag * k as f64 * f32::EPSILON as f64 + want.abs() * 2f64.powi(-8);
                for (kernel, one) in &ones {
                    let got = one[i * n + j].to_f64();
                    assert!(
                        (got - want).abs() <= tol,
                        "{kernel:?} ({i}, {j}): {got} vs {want}"
                    );
                }
            }
        }
        for (kernel, one) in &ones {
            for threads in [3, 5] {
                for _ in 0..3 {
                    let dst = on(threads, *kernel);
                    let same = dst.iter().zip(one).all(|(x, y)| x.to_bits() == y.to_bits());
                    assert!(same, "{kernel:?} {threads} threads");
                }
            }
        }
    }

    /// Infinities, NaN and sums past `bf16`'s range come out as the `f64` product says, in
    /// the full tiles and in a right-edge tile, on one block of `k` and on several.
    #[test]
    fn special_values_come_out_as_the_f64_product_says() {
        for (kernel, k) in kernels_here().into_iter().flat_map(|kr| {
            // Short of one AMX step, past whole steps, and over several blocks.
            [5, 2 * 16 * 3 + 5, 2 * MAX_KC + 5].map(|k| (kr, k))
        }) {
            let (m, n) = (TILE_MR + 3, NR + 8);
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
            a[(MR + 1) * k + 1] = bf16::NAN; // a row past the first `vdpbf16ps` tile
            a[(TILE_MR + 1) * k + k - 1] = bf16::INFINITY; // past the first AMX tile, last pair
            let mut dst = vec![bf16::ZERO; m * n];
            let (va, vb) = (row_major(&a, k), row_major(&b, n));
            gemm(&mut dst, (m, k, n), va, vb, kernel).unwrap();
            for i in 0..m {
                for j in 0..n {
                    let want: f64 = (0..k)
                        .map(|p| a[i * k + p].to_f64() * b[p * n + j].to_f64())
                        .sum();
                    let want = bf16::from_f64(want);
                    let got = dst[i * n + j];
                    assert!(
                        got == want || got.is_nan() && want.is_nan(),
                        "{kernel:?} k = {k} at ({i}, {j}): {got} vs {want}"
                    );
                }
            }
        }
    }
}
