//! `f32` transcendental functions that vectorize: `exp`, `ln`, `tanh` and `sigmoid` written
//! without branches or library calls, so a loop over a slice compiles to vector code (16 lanes
//! with AVX-512), where a call to the C library's `expf` runs one value at a time. PyTorch's
//! CPU kernels do the same with SLEEF.
//!
//! Each function is a Cody–Waite range reduction and a short polynomial (the coefficients of
//! SLEEF's `expf_u10` and Cephes' `logf`/`tanhf`), with no fused multiply-adds, so every
//! instruction set gives the same bits, and the per-element path of strided views agrees with
//! the vector path of contiguous ones. Accuracy, measured against `f64` on every `f32` in the
//! domain (the tests below): `exp` and `ln` within 1 ulp, `tanh` within 2 and `sigmoid` within 2.5.
//!
//! [`vectorized`] runs a loop body compiled for the widest vector unit the CPU has (chosen at
//! run time, as the GEMM crate does); the loop's closures inline into it.

/// `e^x`; `+inf` above 88.72, `0` below -103.97, NaN for NaN; subnormal results rounded once.
#[inline(always)]
pub(crate) fn exp(x: f32) -> f32 {
    // 1.5 * 2^23: adding it rounds a float of magnitude < 2^22 to an integer, which then sits
    // in the low mantissa bits.
    const MAGIC: f32 = 12_582_912.0;
    // ln 2 in two parts: `k * L2U` is exact for |k| < 2^9 (L2U has 15 significant bits).
    const L2U: f32 = 0.693_145_75;
    const L2L: f32 = 1.428_606_8e-6;
    // Clamped so that k stays in [-150, 129]; NaN passes through (every comparison is false).
    let xc = x.clamp(-104.0, 89.0);
    let t = xc * std::f32::consts::LOG2_E + MAGIC;
    let k = (t.to_bits() as i32).wrapping_sub(MAGIC.to_bits() as i32);
    let kf = t - MAGIC;
    let s = xc - kf * L2U - kf * L2L;
    let mut u = 0.000_198_527_62_f32;
    u = u * s + 0.001_393_043_6;
    u = u * s + 0.008_333_361;
    u = u * s + 0.041_666_485;
    u = u * s + 0.166_666_67;
    u = u * s + 0.5;
    let u = 1.0 + (s * s * u + s);
    // 2^k in two factors, each a normal float, so a subnormal result is rounded only once.
    let k1 = k >> 1;
    let y = u * pow2(k1) * pow2(k - k1);
    if x < -104.0 {
        0.0
    } else {
        y
    }
}

/// `2^n` for `n` in `[-126, 127]`.
#[inline(always)]
fn pow2(n: i32) -> f32 {
    f32::from_bits(((n.wrapping_add(127)) as u32) << 23)
}

/// The natural logarithm: NaN below 0 (and for NaN), `-inf` at ±0, `+inf` at `+inf`.
#[inline(always)]
pub(crate) fn ln(x: f32) -> f32 {
    const SQRT_HALF: f32 = std::f32::consts::FRAC_1_SQRT_2;
    // Subnormals: scale into the normal range first (2^25), and take 25 off the exponent.
    let sub = x < f32::MIN_POSITIVE;
    let xs = if sub { x * 33_554_432.0 } else { x };
    let bits = xs.to_bits();
    // x = m * 2^e with m in [0.5, 1).
    let mut e = ((bits >> 23) & 0xff) as i32 - 126 - if sub { 25 } else { 0 };
    let m = f32::from_bits((bits & 0x807f_ffff) | 0x3f00_0000);
    // m in [sqrt(1/2), sqrt(2)): f = m - 1 is small.
    let lo = m < SQRT_HALF;
    e -= lo as i32;
    let f = if lo { m + m - 1.0 } else { m - 1.0 };
    let ef = e as f32;
    let z = f * f;
    let mut y = 7.037_683_6e-2_f32;
    y = y * f - 1.151_461e-1;
    y = y * f + 1.167_699_9e-1;
    y = y * f - 1.242_014_1e-1;
    y = y * f + 1.424_932_3e-1;
    y = y * f - 1.666_805_8e-1;
    y = y * f + 2.000_071_5e-1;
    y = y * f - 2.499_999_4e-1;
    y = y * f + 3.333_333e-1;
    y = y * f * z;
    y += -2.121_944_4e-4 * ef;
    y += -0.5 * z;
    let r = f + y + 0.693_359_4 * ef;
    if x.is_nan() || x < 0.0 {
        f32::NAN
    } else if x == 0.0 {
        f32::NEG_INFINITY
    } else if x == f32::INFINITY {
        f32::INFINITY
    } else {
        r
    }
}

/// The hyperbolic tangent: an odd polynomial below |x| = 0.625, `1 - 2 / (e^2|x| + 1)` above,
/// computed on |x| and given x's sign (so `tanh(-0) = -0`).
#[inline(always)]
pub(crate) fn tanh(x: f32) -> f32 {
    let sign = x.to_bits() & 0x8000_0000;
    let a = f32::from_bits(x.to_bits() & 0x7fff_ffff);
    // Small |x|: tanh a = a + a^3 P(a^2).
    let z = a * a;
    let mut p = -5.704_988_7e-3_f32;
    p = p * z + 2.063_909e-2;
    p = p * z - 5.373_971_6e-2;
    p = p * z + 1.333_144_2e-1;
    p = p * z - 3.333_328e-1;
    let small = p * z * a + a;
    // Large |x|: exp saturates to +inf above 44, where 2 / inf = 0 gives exactly 1.
    let big = 1.0 - 2.0 / (exp(a + a) + 1.0);
    let t = if a < 0.625 { small } else { big };
    // `x + x`, not `x`: a branch that returns the argument, applied in place, becomes a
    // masked store of the other lanes (`vmaskmovps`), which AMD's Zen cores run microcoded.
    if x.is_nan() {
        x + x
    } else {
        f32::from_bits(t.to_bits() | sign)
    }
}

/// `1 / (1 + e^-x)`, as `e^x / (1 + e^x)` for negative x, where `e^-x` would overflow
/// before the result underflows.
#[inline(always)]
pub(crate) fn sigmoid(x: f32) -> f32 {
    let e = exp(-f32::from_bits(x.to_bits() & 0x7fff_ffff));
    let num = if x < 0.0 { e } else { 1.0 };
    num / (1.0 + e)
}

/// Runs `body` compiled for the widest vector unit this CPU has (AVX-512, else AVX2, else the
/// build's baseline), so that the loops inside it, and the closures they call, vectorize that
/// wide. Only the instruction set changes: no fused multiply-adds are enabled, so the results
/// are the same bits on every path.
#[inline(always)]
pub(crate) fn vectorized<R>(body: impl FnOnce() -> R) -> R {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    match width() {
        // SAFETY: `width` found AVX-512F on this CPU.
        Width::Avx512 => return unsafe { wide::avx512(body) },
        // SAFETY: `width` found AVX2 on this CPU.
        Width::Avx2 => return unsafe { wide::avx2(body) },
        Width::Baseline => {}
    }
    body()
}

/// The instructions [`vectorized`] compiles its body for on this CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(any(miri, not(target_arch = "x86_64")), allow(dead_code))]
pub(crate) enum Width {
    /// AVX-512F.
    Avx512,
    /// AVX2.
    Avx2,
    /// The build's baseline (SSE2 on x86-64), and every other architecture.
    Baseline,
}

/// The widest of [`Width`] this CPU has (the standard library caches the CPU's answer).
#[inline(always)]
pub(crate) fn width() -> Width {
    #[cfg(all(target_arch = "x86_64", not(miri)))]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return Width::Avx512;
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            return Width::Avx2;
        }
    }
    Width::Baseline
}

#[cfg(all(target_arch = "x86_64", not(miri)))]
mod wide {
    #[target_feature(enable = "avx512f")]
    #[inline]
    pub(super) fn avx512<R>(body: impl FnOnce() -> R) -> R {
        body()
    }

    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) fn avx2<R>(body: impl FnOnce() -> R) -> R {
        body()
    }
}

#[cfg(test)]
mod tests {
    //! Each function against the `f64` function, in units of the `f32` result's last place,
    //! on a sample of every `f32` bit pattern (every `STEP`th one, both signs, every exponent)
    //! and on the edges. `DEVTYPE_VMATH_EXHAUSTIVE=1` checks all 2^32 inputs (a release build
    //! takes about a minute).

    /// The error of `got` against the exact `want`, in ulps of `want` rounded to `f32`.
    fn ulps(got: f32, want: f64) -> f64 {
        if want.is_nan() {
            return if got.is_nan() { 0.0 } else { f64::INFINITY };
        }
        let w = want as f32;
        if w.is_infinite() || got.is_infinite() {
            return if got == w { 0.0 } else { f64::INFINITY };
        }
        let exp = if w == 0.0 || w.abs() < f32::MIN_POSITIVE {
            -149
        } else {
            (w.abs().to_bits() >> 23) as i32 - 127 - 23
        };
        (got as f64 - want).abs() / 2f64.powi(exp)
    }

    fn worst(f: fn(f32) -> f32, reference: fn(f64) -> f64) -> (f64, f32) {
        let exhaustive = std::env::var_os("DEVTYPE_VMATH_EXHAUSTIVE").is_some();
        let step: usize = if cfg!(miri) {
            1 << 22
        } else if exhaustive {
            1
        } else {
            4099
        };
        let mut worst = (0.0, 0.0);
        let edges = [
            0.0,
            -0.0,
            f32::MIN_POSITIVE,
            1e-45,
            f32::MAX,
            f32::MIN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            88.722_83,
            88.722_84,
            -103.972_08,
            -103.972_07,
            -87.336_55,
            0.625,
            0.624_999_94,
            -0.625,
            1.0,
            0.707_106_77,
        ];
        let sample = (0..=u32::MAX).step_by(step).map(f32::from_bits);
        for x in sample.chain(edges) {
            let e = ulps(f(x), reference(x as f64));
            if e > worst.0 || e.is_nan() {
                worst = (e, x);
            }
        }
        eprintln!("worst: {} ulps at {:e}", worst.0, worst.1);
        worst
    }

    fn sigmoid64(x: f64) -> f64 {
        1.0 / (1.0 + (-x).exp())
    }

    #[test]
    fn exp_is_within_one_ulp() {
        let (e, x) = worst(super::exp, f64::exp);
        assert!(e <= 1.0, "exp({x:e}) is {e} ulps off");
    }

    #[test]
    fn ln_is_within_one_ulp() {
        let (e, x) = worst(super::ln, f64::ln);
        assert!(e <= 1.0, "ln({x:e}) is {e} ulps off");
    }

    #[test]
    fn tanh_is_within_two_ulps() {
        let (e, x) = worst(super::tanh, f64::tanh);
        assert!(e <= 2.0, "tanh({x:e}) is {e} ulps off");
    }

    #[test]
    fn sigmoid_is_within_two_and_a_half_ulps() {
        let (e, x) = worst(super::sigmoid, sigmoid64);
        assert!(e <= 2.5, "sigmoid({x:e}) is {e} ulps off");
    }

    #[test]
    fn signs_and_specials() {
        use super::{exp, ln, sigmoid, tanh};
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp(f32::INFINITY), f32::INFINITY);
        assert!(exp(f32::NAN).is_nan());
        assert_eq!(ln(1.0), 0.0);
        assert_eq!(ln(0.0), f32::NEG_INFINITY);
        assert_eq!(ln(-0.0), f32::NEG_INFINITY);
        assert!(ln(-1.0).is_nan() && ln(f32::NAN).is_nan());
        assert_eq!(ln(f32::INFINITY), f32::INFINITY);
        assert_eq!(tanh(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(tanh(f32::INFINITY), 1.0);
        assert_eq!(tanh(f32::NEG_INFINITY), -1.0);
        assert!(tanh(f32::NAN).is_nan());
        assert_eq!(sigmoid(f32::NEG_INFINITY), 0.0);
        assert_eq!(sigmoid(f32::INFINITY), 1.0);
    }

    /// The vector path (a slice loop inside `vectorized`) gives the bits of the scalar path.
    #[test]
    fn vector_and_scalar_paths_agree() {
        let xs: Vec<f32> = (0..4096u32)
            .map(|i| f32::from_bits(i.wrapping_mul(0x9e37_79b9)))
            .collect();
        for f in [super::exp, super::ln, super::tanh, super::sigmoid] {
            let mut v = xs.clone();
            super::vectorized(|| v.iter_mut().for_each(|x| *x = f(*x)));
            for (x, y) in xs.iter().zip(&v) {
                // NaN: any NaN (Miri, like some hardware, picks NaN signs and payloads freely).
                let s = f(*x);
                assert!(
                    s.to_bits() == y.to_bits() || (s.is_nan() && y.is_nan()),
                    "at {x:e}"
                );
            }
        }
    }
}
