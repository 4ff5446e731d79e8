//! The `bf16` GEMM on CPUs with AVX512-BF16 (AMD Zen 4 and later, Intel Cooper Lake and
//! Sapphire Rapids and later): `vdpbf16ps` multiplies pairs of `bf16` values and adds both
//! products to an `f32` lane, so a product runs at twice the `f32` FMA rate, on the `bf16`
//! data itself (half the bytes of the widened `f32` operands). PyTorch's oneDNN uses the same
//! instruction on these CPUs.
//!
//! The numbers: a `bf16` product is exact in `f32` (8-bit significands), and the instruction
//! adds each product to the `f32` accumulator with one rounding, as an `f32` FMA would; what
//! differs from the widened `f32` GEMM is the order of the sums and that subnormal inputs and
//! results are flushed to zero (the instruction ignores MXCSR). The result is rounded to `bf16`
//! once, from the `f32` accumulator.
//!
//! Layout, as the usual GEMM kernels do it (BLIS's loops): `k` is cut into blocks of `KC`
//! pairs; for each, `b`'s rows are packed into panels of `NR` columns with each `f32` lane
//! holding one column's two `bf16` values of a pair, and each thread packs its own `MR`-row
//! panels of `a` (one pair per 32-bit word, broadcast to every lane). The micro-kernel holds an
//! `MR x NR` tile of `f32` accumulators in 24 of the 32 vector registers. Threads split the
//! rows of `dst`, so no two write the same element.

use super::cpu::MatrixView;
use half::bf16;
use rayon::prelude::*;

/// Rows of the micro-kernel's tile.
const MR: usize = 12;
/// Columns of the micro-kernel's tile: two 16-lane vectors.
const NR: usize = 32;
/// Pairs of `k` per packed block: one `b` micro-panel (`KC * NR * 4` bytes, 16 KiB) stays in
/// L1 while the rows of `a` stream past it.
const KC: usize = 128;
/// Rows of `dst` per parallel task (a multiple of `MR`).
const MC: usize = 8 * MR;

/// True when this CPU runs the `vdpbf16ps` kernel.
pub(crate) fn available() -> bool {
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

/// `dst[m x n]` (row-major, contiguous `f32`) `= a[m x k] @ b[k x n]` on `bf16` operands in
/// any strides. Call only when [`available`] says so (it panics otherwise).
pub(crate) fn gemm(
    dst: &mut [f32],
    (m, k, n): (usize, usize, usize),
    a: MatrixView<'_, bf16>,
    b: MatrixView<'_, bf16>,
) {
    assert!(available(), "the bf16 kernel needs AVX512-BF16");
    assert!(dst.len() >= m * n, "gemm destination too small");
    if m == 0 || n == 0 {
        return;
    }
    dst[..m * n].fill(0.0);
    if k == 0 {
        return;
    }
    let pairs = k.div_ceil(2);
    let panels = n.div_ceil(NR);
    let mut packed_b = vec![0u16; KC * panels * NR * 2];
    for q0 in (0..pairs).step_by(KC) {
        let kc = KC.min(pairs - q0);
        // Panel p, pair q, lane j, half t: b[2 (q0 + q) + t, p NR + j] (zero past the edges).
        packed_b
            .par_chunks_mut(KC * NR * 2)
            .enumerate()
            .for_each(|(p, panel)| {
                for q in 0..kc {
                    for j in 0..NR {
                        let col = p * NR + j;
                        for t in 0..2 {
                            let row = 2 * (q0 + q) + t;
                            panel[(q * NR + j) * 2 + t] = if col < n && row < k {
                                b.data[b.offset + row * b.row_stride + col * b.col_stride].to_bits()
                            } else {
                                0
                            };
                        }
                    }
                }
            });
        let packed_b = &packed_b;
        dst[..m * n]
            .par_chunks_mut(MC * n)
            .enumerate()
            .for_each(|(block, rows)| {
                let r0 = block * MC;
                let mr_panels = (rows.len() / n).div_ceil(MR);
                // Panel i, pair q, row r: a[r0 + i MR + r, 2 (q0 + q) .. + 2] as one word.
                let mut packed_a = vec![0u32; mr_panels * kc * MR];
                for (i, panel) in packed_a.chunks_mut(kc * MR).enumerate() {
                    for q in 0..kc {
                        for r in 0..MR {
                            let row = r0 + i * MR + r;
                            if row >= m {
                                continue;
                            }
                            let at = |col: usize| {
                                if col < k {
                                    a.data[a.offset + row * a.row_stride + col * a.col_stride]
                                        .to_bits() as u32
                                } else {
                                    0
                                }
                            };
                            let c = 2 * (q0 + q);
                            panel[q * MR + r] = at(c) | (at(c + 1) << 16);
                        }
                    }
                }
                let block_rows = rows.len() / n;
                for p in 0..panels {
                    let bp = &packed_b[p * KC * NR * 2..][..kc * NR * 2];
                    let cols = NR.min(n - p * NR);
                    for (i, ap) in packed_a.chunks(kc * MR).enumerate() {
                        let tile_rows = MR.min(block_rows - i * MR);
                        let c = &mut rows[(i * MR) * n + p * NR..];
                        tile(kc, ap, bp, c, n, tile_rows, cols);
                    }
                }
            });
    }
}

/// Adds one `MR x NR` tile's products to `c` (row stride `ldc`), writing only the first `rows`
/// rows and `cols` columns.
fn tile(kc: usize, a: &[u32], b: &[u16], c: &mut [f32], ldc: usize, rows: usize, cols: usize) {
    assert!(a.len() >= kc * MR && b.len() >= kc * NR * 2);
    assert!((1..=MR).contains(&rows) && (1..=NR).contains(&cols));
    assert!(c.len() >= (rows - 1) * ldc + cols);
    let mut acc = [[0f32; NR]; MR];
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `gemm` runs only when `available()` found AVX-512F and AVX512-BF16; the packed
    // panels hold `kc` pairs (asserted above) and `acc` is a local `MR x NR` array.
    unsafe {
        x86::kernel(kc, a.as_ptr(), b.as_ptr(), &mut acc)
    };
    for (r, row) in acc.iter().enumerate().take(rows) {
        for (d, &s) in c[r * ldc..][..cols].iter_mut().zip(row) {
            *d += s;
        }
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

    /// `acc[r][j] = sum over q of a[q][r] . b[q][j]` (each a pair of `bf16` dot products).
    ///
    /// # Safety
    /// The CPU must have AVX-512F and AVX512-BF16; `a` must hold `kc * MR` words and `b`
    /// `kc * NR * 2` halves.
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub(super) unsafe fn kernel(
        kc: usize,
        a: *const u32,
        b: *const u16,
        acc: &mut [[f32; NR]; MR],
    ) {
        let mut c = [[_mm512_setzero_ps(); 2]; MR];
        for q in 0..kc {
            // SAFETY: pair `q < kc` of each panel is inside it (the caller's contract); the
            // loads are unaligned.
            let (b0, b1) = unsafe {
                let bq = b.add(q * NR * 2);
                (
                    _mm512_loadu_si512(bq.cast()),
                    _mm512_loadu_si512(bq.add(32).cast()),
                )
            };
            let (b0, b1) = (as_bh(b0), as_bh(b1));
            for (r, cr) in c.iter_mut().enumerate() {
                // SAFETY: word `q * MR + r` is inside `a` (the caller's contract).
                let w = unsafe { a.add(q * MR + r).read() } as i32;
                let x = as_bh(_mm512_set1_epi32(w));
                cr[0] = _mm512_dpbf16_ps(cr[0], x, b0);
                cr[1] = _mm512_dpbf16_ps(cr[1], x, b1);
            }
        }
        for (r, cr) in c.iter().enumerate() {
            // SAFETY: each row of `acc` holds 32 f32s, two unaligned 16-lane stores.
            unsafe {
                _mm512_storeu_ps(acc[r].as_mut_ptr(), cr[0]);
                _mm512_storeu_ps(acc[r].as_mut_ptr().add(16), cr[1]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against the f64 product of the same `bf16` values, on odd sizes (every edge: rows past
    /// `MR`, columns past `NR`, an odd `k`, more than one `KC` block) and transposed strides.
    #[test]
    fn bf16_kernel_matches_the_f64_product() {
        if !available() {
            eprintln!("skipping: this CPU has no AVX512-BF16");
            return;
        }
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            bf16::from_f32(((seed >> 40) as f32 / (1u64 << 24) as f32) * 4.0 - 2.0)
        };
        for (m, k, n) in [(1, 1, 1), (13, 3, 33), (37, 301, 45), (100, 257, 70)] {
            let a: Vec<bf16> = (0..m * k).map(|_| next()).collect();
            let b: Vec<bf16> = (0..k * n).map(|_| next()).collect();
            for (b_rs, b_cs) in [(n, 1), (1, k)] {
                let va = MatrixView {
                    data: &a,
                    offset: 0,
                    row_stride: k,
                    col_stride: 1,
                };
                let vb = MatrixView {
                    data: &b,
                    offset: 0,
                    row_stride: b_rs,
                    col_stride: b_cs,
                };
                let mut dst = vec![f32::NAN; m * n];
                gemm(&mut dst, (m, k, n), va, vb);
                for i in 0..m {
                    for j in 0..n {
                        let (mut want, mut mag) = (0f64, 0f64);
                        for p in 0..k {
                            let x = a[i * k + p].to_f64() * b[p * b_rs + j * b_cs].to_f64();
                            want += x;
                            mag += x.abs();
                        }
                        let got = dst[i * n + j] as f64;
                        let tol = mag * k as f64 * f32::EPSILON as f64 + 1e-30;
                        assert!(
                            (got - want).abs() <= tol,
                            "({m}, {k}, {n}) at ({i}, {j}): {got} vs {want}"
                        );
                    }
                }
            }
        }
    }
}
