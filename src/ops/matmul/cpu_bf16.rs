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
//! Layout, as the usual GEMM kernels do it (BLIS's loops): `b` is packed once, in blocks of
//! `KC` pairs of `k` and panels of `NR` columns, each `f32` lane holding one column's two `bf16`
//! values of a pair (a 32-bit word). The rows of `dst` are split evenly between the threads
//! (whole `MR`-row micro-panels, one task per thread: `rayon`'s finer tasks left one thread
//! idle for a whole block at the end); each thread walks its rows in blocks of at most `MC`,
//! packs that block of `a` per `KC` block (one pair per word, broadcast to every lane), and
//! runs the micro-kernel over every `MR x NR` tile. The micro-kernel holds the tile in 24 of
//! the 32 vector registers, loads it from (or zeroes it for the first `KC` block) and stores it
//! to an `f32` buffer of the thread's block, which is rounded to `bf16` once, into `dst`, while
//! it is still in cache: no `m x n` `f32` result is allocated or written.

use super::cpu::MatrixView;
use crate::ops::half::HalfBlock;
use half::bf16;
use half::slice::HalfFloatSliceExt;
use rayon::prelude::*;

/// Rows of the micro-kernel's tile.
const MR: usize = 12;
/// Columns of the micro-kernel's tile: two 16-lane vectors.
const NR: usize = 32;
/// Pairs of `k` per packed block: one `b` micro-panel (`KC * NR * 4` bytes, 16 KiB) stays in
/// L1 while the micro-panels of `a` stream past it.
const KC: usize = 128;
/// Most rows of `dst` per block of a thread (a multiple of `MR`): the packed `a` block
/// (`MC * KC * 4` bytes, 48 KiB) stays in L2.
const MC: usize = 8 * MR;
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

/// True when this CPU has AVX-512F and AVX512-BF16, which [`gemm`] needs.
pub(crate) fn supported() -> bool {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        std::arch::is_x86_feature_detected!("avx512f")
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

/// Packs `b`'s pairs `q0 .. q0 + kc` (rows `2 q0 ..`) of columns `c0 .. c0 + NR` into `panel`
/// (word `q * NR + j` = rows `2 (q0 + q)` and `+ 1` of column `c0 + j`; zero past the edges).
fn pack_b(panel: &mut [u32], b: Bits<'_>, (k, n): (usize, usize), q0: usize, c0: usize) {
    let kc = panel.len() / NR;
    let cols = NR.min(n - c0);
    if b.cs == 1 {
        // Row-major: two rows zipped into words (vectorized).
        for (q, out) in panel.chunks_exact_mut(NR).enumerate() {
            let r0 = 2 * (q0 + q);
            let row0 = &b.data[b.offset + r0 * b.rs + c0..][..cols];
            if r0 + 1 < k {
                let row1 = &b.data[b.offset + (r0 + 1) * b.rs + c0..][..cols];
                for ((w, &x), &y) in out.iter_mut().zip(row0).zip(row1) {
                    *w = x as u32 | (y as u32) << 16;
                }
            } else {
                for (w, &x) in out.iter_mut().zip(row0) {
                    *w = x as u32;
                }
            }
            out[cols..].fill(0);
        }
        return;
    }
    panel.fill(0);
    // Any other strides (column-major `b`, the `x @ w.T` of a linear layer: each pair is two
    // neighbours in memory), column by column.
    for j in 0..cols {
        for q in 0..kc {
            let r0 = 2 * (q0 + q);
            let hi = if r0 + 1 < k { b.at(r0 + 1, c0 + j) } else { 0 };
            panel[q * NR + j] = b.at(r0, c0 + j) | hi << 16;
        }
    }
}

/// Packs `a`'s rows `r0 .. r0 + rows` and pairs `q0 .. q0 + kc` into micro-panels of `MR` rows
/// (word `i * kc * MR + q * MR + r` = columns `2 (q0 + q)` and `+ 1` of row `r0 + i MR + r`;
/// zero past the edges).
fn pack_a(
    out: &mut [u32],
    a: Bits<'_>,
    k: usize,
    (r0, rows): (usize, usize),
    (q0, kc): (usize, usize),
) {
    for (i, panel) in out.chunks_exact_mut(kc * MR).enumerate() {
        for r in 0..MR {
            let row = i * MR + r;
            if row >= rows {
                for q in 0..kc {
                    panel[q * MR + r] = 0;
                }
                continue;
            }
            let row = r0 + row;
            let c0 = 2 * q0;
            if a.cs == 1 {
                let len = (2 * kc).min(k - c0);
                let src = &a.data[a.offset + row * a.rs + c0..][..len];
                let mut pairs = src.chunks_exact(2);
                for (q, p) in (&mut pairs).enumerate() {
                    panel[q * MR + r] = p[0] as u32 | (p[1] as u32) << 16;
                }
                if let [x] = pairs.remainder() {
                    panel[(len / 2) * MR + r] = *x as u32;
                }
            } else {
                for q in 0..kc {
                    let c = c0 + 2 * q;
                    let hi = if c + 1 < k { a.at(row, c + 1) } else { 0 };
                    panel[q * MR + r] = a.at(row, c) | hi << 16;
                }
            }
        }
    }
}

/// `dst[m x n]` (row-major, contiguous) `= a[m x k] @ b[k x n]` on `bf16` operands in any
/// strides, accumulated in `f32` and rounded once. Call only where [`supported`] (it panics
/// otherwise).
pub(crate) fn gemm(
    dst: &mut [bf16],
    (m, k, n): (usize, usize, usize),
    a: MatrixView<'_, bf16>,
    b: MatrixView<'_, bf16>,
) {
    assert!(supported(), "the bf16 kernel needs AVX512-BF16");
    let out_len = m.checked_mul(n).expect("gemm: m * n overflows");
    assert!(dst.len() >= out_len, "gemm destination too small");
    let dst = &mut dst[..out_len];
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        dst.fill(bf16::ZERO);
        return;
    }
    let (a, b) = (Bits::new(&a), Bits::new(&b));
    let pairs = k.div_ceil(2);
    let kblocks = pairs.div_ceil(KC);
    let panels = n.div_ceil(NR);
    // Block `kb`, panel `p`: `kc(kb) * NR` words at `(kb * panels + p) * KC * NR`.
    let mut packed_b = vec![0u32; kblocks * panels * KC * NR];
    let parallel = m.saturating_mul(n).saturating_mul(k) >= PARALLEL_FLOPS && !cfg!(miri);
    let pack = |(i, chunk): (usize, &mut [u32])| {
        let (kb, p) = (i / panels, i % panels);
        let kc = KC.min(pairs - kb * KC);
        pack_b(&mut chunk[..kc * NR], b, (k, n), kb * KC, p * NR);
    };
    if parallel {
        packed_b.par_chunks_mut(KC * NR).enumerate().for_each(pack);
    } else {
        packed_b.chunks_mut(KC * NR).enumerate().for_each(pack);
    }
    let packed_b = &packed_b[..];
    // Whole micro-panels of rows, split evenly: one task per thread.
    let micro = m.div_ceil(MR);
    let tasks = if parallel {
        rayon::current_num_threads().clamp(1, micro)
    } else {
        1
    };
    let mut parts = Vec::with_capacity(tasks);
    let mut rest = dst;
    let mut row = 0;
    for t in 0..tasks {
        let end = ((t + 1) * micro / tasks * MR).min(m);
        let (part, tail) = rest.split_at_mut((end - row) * n);
        parts.push((row, part));
        rest = tail;
        row = end;
    }
    let work = |(r0, part): (usize, &mut [bf16])| {
        let rows = part.len() / n;
        let mut acc = vec![0f32; MC.min(rows.next_multiple_of(MR)) * n];
        let mut packed_a = vec![0u32; MC * KC];
        for (blk, out) in part.chunks_mut(MC * n).enumerate() {
            let brows = out.len() / n;
            let bmicro = brows.div_ceil(MR);
            for kb in 0..kblocks {
                let kc = KC.min(pairs - kb * KC);
                let pa = &mut packed_a[..bmicro * kc * MR];
                pack_a(pa, a, k, (r0 + blk * MC, brows), (kb * KC, kc));
                for p in 0..panels {
                    let bp = &packed_b[(kb * panels + p) * KC * NR..][..kc * NR];
                    for (i, ap) in pa.chunks_exact(kc * MR).enumerate() {
                        // The tile's rows in `acc` (whole tiles: `acc` has `bmicro * MR` rows).
                        let c = &mut acc[i * MR * n + p * NR..];
                        tile(kc, ap, bp, c, n, NR.min(n - p * NR), kb == 0);
                    }
                }
            }
            <bf16 as HalfBlock>::narrow_block(&acc[..brows * n], out);
        }
    };
    if tasks > 1 {
        parts.into_par_iter().for_each(work);
    } else {
        parts.into_iter().for_each(work);
    }
}

/// `c[MR x cols] (row stride ldc) = (first ? 0 : c) + a-panel @ b-panel`.
fn tile(kc: usize, a: &[u32], b: &[u32], c: &mut [f32], ldc: usize, cols: usize, first: bool) {
    assert!(a.len() >= kc * MR && b.len() >= kc * NR);
    assert!((1..=NR).contains(&cols) && ldc >= cols);
    assert!(c.len() >= (MR - 1) * ldc + cols);
    if cols == NR {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `gemm` runs only when `supported()` found AVX-512F and AVX512-BF16; the
        // packed panels hold `kc` pairs and `c` holds `MR` rows of `NR` at stride `ldc`
        // (asserted above).
        unsafe {
            x86::kernel(kc, a.as_ptr(), b.as_ptr(), c.as_mut_ptr(), ldc, first)
        };
        return;
    }
    // A right-edge tile: through a full local tile.
    let mut t = [0f32; MR * NR];
    if !first {
        for r in 0..MR {
            t[r * NR..][..cols].copy_from_slice(&c[r * ldc..][..cols]);
        }
    }
    #[cfg(target_arch = "x86_64")]
    // SAFETY: as above, with `t` a local `MR x NR` tile.
    unsafe {
        x86::kernel(kc, a.as_ptr(), b.as_ptr(), t.as_mut_ptr(), NR, first)
    };
    for r in 0..MR {
        c[r * ldc..][..cols].copy_from_slice(&t[r * NR..][..cols]);
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{MR, NR};
    use std::arch::x86_64::*;

    /// The 32 `bf16` halves of a 512-bit integer vector, as the BF16 instructions take them.
    #[inline(always)]
    fn as_bh(v: __m512i) -> __m512bh {
        // SAFETY: both are 64-byte vectors of plain bits; every bit pattern is a valid value.
        unsafe { std::mem::transmute::<__m512i, __m512bh>(v) }
    }

    /// `c[r][j] = (first ? 0 : c[r][j]) + sum over q of a[q][r] . b[q][j]` (each a pair of
    /// `bf16` dot products), `c` an `MR x NR` tile with row stride `ldc`.
    ///
    /// # Safety
    /// The CPU must have AVX-512F and AVX512-BF16; `a` must hold `kc * MR` words, `b`
    /// `kc * NR` words and `c` `MR` rows of `NR` `f32`s at stride `ldc`.
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub(super) unsafe fn kernel(
        kc: usize,
        a: *const u32,
        b: *const u32,
        c: *mut f32,
        ldc: usize,
        first: bool,
    ) {
        let mut acc = [[_mm512_setzero_ps(); 2]; MR];
        if !first {
            for (r, cr) in acc.iter_mut().enumerate() {
                // SAFETY: row `r < MR` of the tile (the caller's contract); unaligned loads.
                unsafe {
                    cr[0] = _mm512_loadu_ps(c.add(r * ldc));
                    cr[1] = _mm512_loadu_ps(c.add(r * ldc + 16));
                }
            }
        }
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
                // SAFETY: word `q * MR + r` is inside `a` (the caller's contract).
                let w = unsafe { a.add(q * MR + r).read() } as i32;
                let x = as_bh(_mm512_set1_epi32(w));
                cr[0] = _mm512_dpbf16_ps(cr[0], x, b0);
                cr[1] = _mm512_dpbf16_ps(cr[1], x, b1);
            }
        }
        for (r, cr) in acc.iter().enumerate() {
            // SAFETY: row `r < MR` of the tile (the caller's contract); unaligned stores.
            unsafe {
                _mm512_storeu_ps(c.add(r * ldc), cr[0]);
                _mm512_storeu_ps(c.add(r * ldc + 16), cr[1]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    /// `MR` and `MC`, columns past `NR`, an odd `k`, more than one `KC` block, more than one
    /// task) and every stride order of both operands (row-major, transposed, and a view with
    /// neither stride 1), with the operands at an offset inside a larger buffer.
    #[test]
    fn bf16_kernel_matches_the_f64_product() {
        // Wherever the CPU has the instruction, whether or not `matmul` prefers it there.
        if !supported() {
            eprintln!("skipping: this CPU has no AVX512-BF16");
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
        ];
        for (m, k, n) in sizes {
            // Each operand in a buffer 3 times its size, at offset 7, with strides:
            // 0 row-major, 1 column-major, 2 both strides > 1 (every other element).
            let a = values(3 * m * k + 7, &mut seed);
            let b = values(3 * k * n + 7, &mut seed);
            let strides = |rows: usize, cols: usize, order: usize| match order {
                0 => (cols, 1),
                1 => (1, rows),
                _ => (2 * cols, 2),
            };
            for (oa, ob) in [(0, 0), (0, 1), (1, 0), (1, 1), (2, 2)] {
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
                gemm(&mut dst, (m, k, n), va, vb);
                for i in 0..m {
                    for j in 0..n {
                        let (mut want, mut mag) = (0f64, 0f64);
                        for p in 0..k {
                            let x = a[7 + i * a_rs + p * a_cs].to_f64()
                                * b[7 + p * b_rs + j * b_cs].to_f64();
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
}
