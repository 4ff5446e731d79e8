//! The CPU side of the 16-bit floats (`f16`, `bf16`): PyTorch computes them in `f32` (its
//! `opmath_type`) and rounds once, when the result is written. Element-wise families do that
//! in blocks on contiguous operands ([`zip_blocks`], [`map_blocks`]: widen a block to `f32`,
//! the `f32` op, narrow it back) and per element otherwise (their `Arith`/`UnaryMath` impls),
//! with the same bits either way. The families that accumulate (sums, means, softmax, matmul,
//! losses, scatter-adds) run their `f32` kernel on a widened copy of the operands, [`widen`],
//! and round its result once, [`narrow`]; both convert in blocks too.

use crate::backend::cpu::vmath::vectorized;
use crate::core::cpu_storage::CpuStorage;
use crate::core::dtype::Half;
use crate::core::error::Result;
use crate::core::raw::RawTensor;
use crate::core::storage::{SharedStorage, Storage};
use crate::core::DType;

fn widen_slice<H: HalfBlock>(data: &[H]) -> Result<Vec<f32>> {
    let mut out = <f32 as crate::core::dtype::sealed::ElementStorage>::pool().take(data.len())?;
    widen_into(data, &mut out);
    Ok(out)
}

/// A CPU `f16`/`bf16` tensor as `f32`, exactly, with the same layout (offset and strides): the
/// whole storage is widened, so a view stays the same view. Other dtypes come back as they are.
pub(crate) fn widen(t: &RawTensor) -> Result<RawTensor> {
    let data = match t.cpu_storage() {
        Some(CpuStorage::F16(v)) => widen_slice(v.as_slice())?,
        Some(CpuStorage::BF16(v)) => widen_slice(v.as_slice())?,
        _ => return Ok(t.clone()),
    };
    Ok(RawTensor {
        storage: SharedStorage::new(Storage::Cpu(CpuStorage::F32(
            crate::core::pool::PooledVec::new(data),
        ))),
        layout: t.layout,
        dtype: DType::F32,
        device: t.device,
    })
}

/// `widen` for an optional operand.
pub(crate) fn widen_opt(t: Option<&RawTensor>) -> Result<Option<RawTensor>> {
    t.map(widen).transpose()
}

/// A CPU `f32` result rounded (to nearest, ties to even) to `dtype` (`f16` or `bf16`); any
/// layout. The same bits as the copy family's cast, written here so that this helper of the
/// families stays a leaf (it calls no family).
pub(crate) fn narrow(t: RawTensor, dtype: DType) -> Result<RawTensor> {
    fn go<H: HalfBlock + crate::core::Element>(t: &RawTensor) -> Result<RawTensor> {
        let data = t.cpu_slice::<f32>().expect("a CPU f32 result");
        let mut out = H::pool().take(t.layout.numel())?;
        match t.layout.contiguous_range() {
            Some(r) => narrow_into(&data[r], &mut out),
            None => crate::backend::cpu::strided::map1(data, &t.layout, &mut out, H::narrow),
        }
        Ok(RawTensor::from_cpu_vec(out, t.layout.shape))
    }
    match (t.dtype, dtype) {
        (a, b) if a == b => Ok(t),
        (DType::F32, DType::F16) => go::<half::f16>(&t),
        (DType::F32, DType::BF16) => go::<half::bf16>(&t),
        (from, to) => Err(crate::core::error::Error::Internal {
            context: "ops::half::narrow",
            message: format!("narrows f32 to f16 or bf16, not {from:?} to {to:?}"),
        }),
    }
}

// ---------------------------------------------------------------------------------------------
// Block conversion: the element-wise families on `f16` widen a block of each operand into an
// `f32` buffer on the stack, run the `f32` kernel's own per-element function over it, and
// narrow the block back. The results are the same bits as the per-element path (exact
// widening, the same `f32` math, one rounding to nearest, ties to even), but the conversions
// run as vector code (F16C, 8 at a time, the `half` crate's slice conversions, chosen at run
// time; per element, `f16::to_f32` checks for F16C on every call and converts one value).
// `bf16` converts with a shift and an integer rounding that the compiler vectorizes inside
// the op's own loop, so it runs fused, one pass per element: measured on this machine, that is
// faster than going through a buffer (which costs extra loads and stores per element).

/// Elements per block: two `f32` blocks (2 KiB each) stay in L1.
pub(crate) const BLOCK: usize = 512;

/// A 16-bit float whose slices convert to and from `f32` in bulk.
pub(crate) trait HalfBlock: Half {
    /// True when the element-wise helpers should convert per element, inside the op's loop
    /// (a conversion the compiler vectorizes), rather than through a block buffer.
    const FUSED: bool;
    /// `dst[i] = src[i].widen()`; equal lengths.
    fn widen_block(src: &[Self], dst: &mut [f32]);
    /// `dst[i] = Self::narrow(src[i])`; equal lengths.
    fn narrow_block(src: &[f32], dst: &mut [Self]);
}

impl HalfBlock for half::f16 {
    const FUSED: bool = false;
    #[inline]
    fn widen_block(src: &[Self], dst: &mut [f32]) {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        if std::arch::is_x86_feature_detected!("f16c") {
            // SAFETY: the CPU has F16C and AVX (F16C implies AVX), checked just above.
            unsafe { f16c::widen(src, dst) };
            return;
        }
        use half::slice::HalfFloatSliceExt;
        // `half`'s own conversion: the same function `f16::to_f32` picks per element.
        src.convert_to_f32_slice(dst);
    }
    #[inline]
    fn narrow_block(src: &[f32], dst: &mut [Self]) {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        if std::arch::is_x86_feature_detected!("f16c") {
            // SAFETY: as in `widen_block`.
            unsafe { f16c::narrow(src, dst) };
            return;
        }
        use half::slice::HalfFloatSliceExt;
        dst.convert_from_f32_slice(src);
    }
}

/// F16C conversions of whole blocks, 8 values per instruction in one loop. `half`'s slice
/// conversions use the same instructions (so the same bits: `vcvtph2ps`, and `vcvtps2ph`
/// rounding to nearest, ties to even) but call them through a function pointer for every 8
/// values, which cost more than the conversion itself.
#[cfg(all(target_arch = "x86_64", not(miri)))]
mod f16c {
    use std::arch::x86_64::{
        _mm256_cvtph_ps, _mm256_cvtps_ph, _mm256_loadu_ps, _mm256_storeu_ps, _mm_loadu_si128,
        _mm_storeu_si128, _MM_FROUND_TO_NEAREST_INT,
    };

    /// `dst[i] = src[i].to_f32()`; equal lengths.
    #[target_feature(enable = "avx,f16c")]
    pub(super) fn widen(src: &[half::f16], dst: &mut [f32]) {
        assert_eq!(src.len(), dst.len());
        let whole = src.len() / 8 * 8;
        for i in (0..whole).step_by(8) {
            // SAFETY: `i + 8 <= whole <= len` for both slices; the loads and stores are
            // unaligned ones, and `f16` is a `u16` in memory.
            unsafe {
                let h = _mm_loadu_si128(src.as_ptr().add(i).cast());
                _mm256_storeu_ps(dst.as_mut_ptr().add(i), _mm256_cvtph_ps(h));
            }
        }
        for (d, s) in dst[whole..].iter_mut().zip(&src[whole..]) {
            *d = s.to_f32();
        }
    }

    /// `dst[i] = f16::from_f32(src[i])`; equal lengths.
    #[target_feature(enable = "avx,f16c")]
    pub(super) fn narrow(src: &[f32], dst: &mut [half::f16]) {
        assert_eq!(src.len(), dst.len());
        let whole = src.len() / 8 * 8;
        for i in (0..whole).step_by(8) {
            // SAFETY: as in `widen`.
            unsafe {
                let v = _mm256_loadu_ps(src.as_ptr().add(i));
                let h = _mm256_cvtps_ph::<_MM_FROUND_TO_NEAREST_INT>(v);
                _mm_storeu_si128(dst.as_mut_ptr().add(i).cast(), h);
            }
        }
        for (d, s) in dst[whole..].iter_mut().zip(&src[whole..]) {
            *d = half::f16::from_f32(*s);
        }
    }
}

impl HalfBlock for half::bf16 {
    const FUSED: bool = true;
    #[inline]
    fn widen_block(src: &[Self], dst: &mut [f32]) {
        assert_eq!(src.len(), dst.len());
        for (d, s) in dst.iter_mut().zip(src) {
            *d = s.widen();
        }
    }
    #[inline]
    fn narrow_block(src: &[f32], dst: &mut [Self]) {
        assert_eq!(src.len(), dst.len());
        for (d, s) in dst.iter_mut().zip(src) {
            *d = Self::narrow(*s);
        }
    }
}

/// Runs `f` over `out` in parallel chunks (as the `f32` kernels split their work), each chunk
/// in blocks of at most [`BLOCK`]: `f(start, block, scratch)` gets the block's first index and
/// `K` `f32` buffers of the block's length, set up once per chunk (zeroing them per block cost
/// a `memset` of 2 KiB per buffer per 512 elements).
#[inline]
fn blocks<O: Send, const K: usize>(
    out: &mut [O],
    f: impl Fn(usize, &mut [O], [&mut [f32]; K]) + Sync,
) {
    crate::backend::cpu::strided::for_each_chunk(out, |start, chunk| {
        let mut scratch = [[0f32; BLOCK]; K];
        for (k, b) in chunk.chunks_mut(BLOCK).enumerate() {
            let n = b.len();
            f(
                start + k * BLOCK,
                b,
                scratch.each_mut().map(|s| &mut s[..n]),
            );
        }
    });
}

/// `out[i] = narrow(f(widen(x[i]), widen(y[i])))`; equal lengths.
#[inline]
pub(crate) fn zip_blocks<H: HalfBlock>(
    x: &[H],
    y: &[H],
    out: &mut [H],
    f: impl Fn(f32, f32) -> f32 + Sync,
) {
    assert_eq!(x.len(), out.len());
    zip_into(Some(x), y, out, f);
}

/// In place: `x[i] = narrow(f(widen(x[i]), widen(y[i])))`; equal lengths.
#[inline]
pub(crate) fn zip_blocks_in_place<H: HalfBlock>(
    x: &mut [H],
    y: &[H],
    f: impl Fn(f32, f32) -> f32 + Sync,
) {
    zip_into(None, y, x, f);
}

/// `out[i] = narrow(f(widen(a[i]), widen(y[i])))`, where `a` is `x`, or `out` itself when
/// `x` is `None` (in place); `y` and `out` have equal lengths.
#[inline]
fn zip_into<H: HalfBlock>(
    x: Option<&[H]>,
    y: &[H],
    out: &mut [H],
    f: impl Fn(f32, f32) -> f32 + Sync,
) {
    assert_eq!(y.len(), out.len());
    if H::FUSED {
        crate::backend::cpu::strided::for_each_chunk(out, |start, o| {
            let y = &y[start..start + o.len()];
            match x {
                Some(x) => {
                    for ((o, a), b) in o.iter_mut().zip(&x[start..]).zip(y) {
                        *o = H::narrow(f(a.widen(), b.widen()));
                    }
                }
                None => {
                    for (o, b) in o.iter_mut().zip(y) {
                        *o = H::narrow(f(o.widen(), b.widen()));
                    }
                }
            }
        });
        return;
    }
    blocks(out, |start, o, [a, b]| {
        H::widen_block(x.map_or(&*o, |x| &x[start..start + o.len()]), a);
        H::widen_block(&y[start..start + o.len()], b);
        for (p, &q) in a.iter_mut().zip(b.iter()) {
            *p = f(*p, q);
        }
        H::narrow_block(a, o);
    });
}

/// `out[i] = narrow(f(widen(x[i])))`; equal lengths.
#[inline]
pub(crate) fn map_blocks<H: HalfBlock>(x: &[H], out: &mut [H], f: impl Fn(f32) -> f32 + Sync) {
    assert_eq!(x.len(), out.len());
    map_into(Some(x), out, f);
}

/// In place: `x[i] = narrow(f(widen(x[i])))`.
#[inline]
pub(crate) fn map_blocks_in_place<H: HalfBlock>(x: &mut [H], f: impl Fn(f32) -> f32 + Sync) {
    map_into(None, x, f);
}

/// `out[i] = narrow(f(widen(a[i])))`, where `a` is `x`, or `out` itself when `x` is `None`
/// (in place). The loops run inside [`vectorized`]: `f` is often one of the vector-math
/// functions.
#[inline]
fn map_into<H: HalfBlock>(x: Option<&[H]>, out: &mut [H], f: impl Fn(f32) -> f32 + Sync) {
    if H::FUSED {
        crate::backend::cpu::strided::for_each_chunk(out, |start, o| {
            vectorized(
                #[inline(always)]
                || match x {
                    Some(x) => {
                        for (o, a) in o.iter_mut().zip(&x[start..]) {
                            *o = H::narrow(f(a.widen()));
                        }
                    }
                    None => {
                        for o in o.iter_mut() {
                            *o = H::narrow(f(o.widen()));
                        }
                    }
                },
            )
        });
        return;
    }
    blocks(out, |start, o, [a, r]| {
        H::widen_block(x.map_or(&*o, |x| &x[start..start + o.len()]), a);
        // Into a second buffer, not back into `a`: where `f` can return its argument
        // (`maximum`, `minimum`), storing in place lets LLVM store only the changed lanes, a
        // masked store that AMD's Zen cores run microcoded.
        vectorized(
            #[inline(always)]
            || {
                for (r, &p) in r.iter_mut().zip(a.iter()) {
                    *r = f(p);
                }
            },
        );
        H::narrow_block(r, o);
    });
}

/// `out[i] = widen(x[i])`, in parallel chunks; equal lengths.
pub(crate) fn widen_into<H: HalfBlock>(x: &[H], out: &mut [f32]) {
    assert_eq!(x.len(), out.len());
    blocks(out, |start, o, []| {
        H::widen_block(&x[start..start + o.len()], o)
    });
}

/// `out[i] = narrow(x[i])`, in parallel chunks; equal lengths.
pub(crate) fn narrow_into<H: HalfBlock>(x: &[f32], out: &mut [H]) {
    assert_eq!(x.len(), out.len());
    blocks(out, |start, o, []| {
        H::narrow_block(&x[start..start + o.len()], o)
    });
}

/// `out[i] = B::narrow(A::widen(x[i]))` (`f16` <-> `bf16`, through `f32`, as the per-element
/// cast does); equal lengths.
pub(crate) fn convert_into<A: HalfBlock, B: HalfBlock>(x: &[A], out: &mut [B]) {
    assert_eq!(x.len(), out.len());
    blocks(out, |start, o, [a]| {
        A::widen_block(&x[start..start + o.len()], a);
        B::narrow_block(a, o);
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::layout::Dims;

    /// `narrow` rounds every element of a view as the per-element conversion does, contiguous
    /// (blocks) or transposed (strided), to both 16-bit types.
    #[test]
    fn narrow_rounds_views_as_the_per_element_cast() {
        let values: Vec<f32> = (0..12).map(|i| (i as f32 - 5.3) * 1.000_123_4e3).collect();
        let t = RawTensor::from_cpu_vec(values.clone(), Dims::shape(&[3, 4]).unwrap());
        let tt = crate::ops::shape::transpose(&t, 0, 1).unwrap();
        // The transpose's row-major order: element [i, j] is values[j * 4 + i].
        let transposed: Vec<f32> = (0..12).map(|p| values[(p % 3) * 4 + p / 3]).collect();
        for (view, expect) in [(&t, &values), (&tt, &transposed)] {
            let f16s = narrow(view.clone(), DType::F16).unwrap();
            let bf16s = narrow(view.clone(), DType::BF16).unwrap();
            let got16 = f16s.cpu_slice::<half::f16>().unwrap();
            let gotb = bf16s.cpu_slice::<half::bf16>().unwrap();
            for (i, &x) in expect.iter().enumerate() {
                assert_eq!(got16[i], half::f16::from_f32(x));
                assert_eq!(gotb[i], half::bf16::from_f32(x));
            }
        }
        assert!(narrow(t.clone(), DType::I64).is_err());
    }
}
