//! An `f32` error function that vectorizes, for the exact GELU's forward and backward kernels.
//!
//! `libm::erff` (the `Erf` op's) picks one of five formulas with branches and calls `expf`
//! twice in the upper ranges, so a loop over a slice runs it one element at a time (about 7 ns
//! an element on an AVX-512 Xeon). The GELU gradient needs `erf` again (PyTorch's
//! `gelu_backward` recomputes `Φ(x)` from `x`), so with that `erf` the fused exact GELU, forward
//! and backward, cost twice what the GELU composed of element-wise ops did (the gradient of
//! that composition needs only `exp`). This is the same algorithm, FreeBSD's `s_erff.c` (the
//! one the `libm` crate ports), with its coefficients, written without branches: every range's
//! formula is computed and the lane's range selects one, and `expf` is `vmath::exp`. Within an
//! ulp of `erf` (0.97 at worst over every `f32`), and of `libm::erff` (the test below).
//!
//! The coefficients carry Sun's notice, as their licence asks:
//! Copyright (C) 1993 by Sun Microsystems, Inc. All rights reserved.
//! Developed at SunPro, a Sun Microsystems, Inc. business.
//! Permission to use, copy, modify, and distribute this software is freely granted, provided
//! that this notice is preserved.

use crate::backend::cpu::vmath;

// erf on [0, 0.84375]: x + x P(x²)/Q(x²); below 2^-28, x (1 + EFX8 / 8).
const EFX8: f32 = f32::from_bits(0x3f8375d4); // 1.0270333290e+00
const PP: [f32; 5] = [
    f32::from_bits(0x3e0375d4), // 1.2837916613e-01
    f32::from_bits(0xbea66beb), // -3.2504209876e-01
    f32::from_bits(0xbce9528f), // -2.8481749818e-02
    f32::from_bits(0xbbbd1489), // -5.7702702470e-03
    f32::from_bits(0xb7c756b1), // -2.3763017452e-05
];
const QQ: [f32; 5] = [
    f32::from_bits(0x3ecbbbce), // 3.9791721106e-01
    f32::from_bits(0x3d852a63), // 6.5022252500e-02
    f32::from_bits(0x3ba68116), // 5.0813062117e-03
    f32::from_bits(0x390aee49), // 1.3249473704e-04
    f32::from_bits(0xb684e21a), // -3.9602282413e-06
];
// erf on [0.84375, 1.25]: ERX + P(s)/Q(s), s = |x| - 1.
const ERX: f32 = f32::from_bits(0x3f58560b); // 8.4506291151e-01
const PA: [f32; 7] = [
    f32::from_bits(0xbb1acdc6), // -2.3621185683e-03
    f32::from_bits(0x3ed46805), // 4.1485610604e-01
    f32::from_bits(0xbebe9208), // -3.7220788002e-01
    f32::from_bits(0x3ea2fe54), // 3.1834661961e-01
    f32::from_bits(0xbde31cc2), // -1.1089469492e-01
    f32::from_bits(0x3d1151b3), // 3.5478305072e-02
    f32::from_bits(0xbb0df9c0), // -2.1663755178e-03
];
const QA: [f32; 6] = [
    f32::from_bits(0x3dd9f331), // 1.0642088205e-01
    f32::from_bits(0x3f0a5785), // 5.4039794207e-01
    f32::from_bits(0x3d931ae7), // 7.1828655899e-02
    f32::from_bits(0x3e013307), // 1.2617121637e-01
    f32::from_bits(0x3c5f6e13), // 1.3637083583e-02
    f32::from_bits(0x3c445aa3), // 1.1984500103e-02
];
// erfc on [1.25, 1/0.35]: exp(-z² - 0.5625) exp((z - x)(z + x) + R(s)/S(s)) / x, s = 1/x², z
// = x with the low 13 bits of its significand cleared (so that z² is exact).
const RA: [f32; 8] = [
    f32::from_bits(0xbc21a093), // -9.8649440333e-03
    f32::from_bits(0xbf31a0b7), // -6.9385856390e-01
    f32::from_bits(0xc128f022), // -1.0558626175e+01
    f32::from_bits(0xc2798057), // -6.2375331879e+01
    f32::from_bits(0xc322658c), // -1.6239666748e+02
    f32::from_bits(0xc3389ae7), // -1.8460508728e+02
    f32::from_bits(0xc2a2932b), // -8.1287437439e+01
    f32::from_bits(0xc11d077e), // -9.8143291473e+00
];
const SA: [f32; 8] = [
    f32::from_bits(0x419d35ce), // 1.9651271820e+01
    f32::from_bits(0x4309a863), // 1.3765776062e+02
    f32::from_bits(0x43d9486f), // 4.3456588745e+02
    f32::from_bits(0x442158c9), // 6.4538726807e+02
    f32::from_bits(0x43d6810b), // 4.2900814819e+02
    f32::from_bits(0x42d9451f), // 1.0863500214e+02
    f32::from_bits(0x40d23f7c), // 6.5702495575e+00
    f32::from_bits(0xbd777f97), // -6.0424413532e-02
];
// erfc on [1/0.35, 6]: the same form with other coefficients.
const RB: [f32; 7] = [
    f32::from_bits(0xbc21a092), // -9.8649431020e-03
    f32::from_bits(0xbf4c9dd4), // -7.9928326607e-01
    f32::from_bits(0xc18e104b), // -1.7757955551e+01
    f32::from_bits(0xc320a2ea), // -1.6063638306e+02
    f32::from_bits(0xc41f6441), // -6.3756646729e+02
    f32::from_bits(0xc480230b), // -1.0250950928e+03
    f32::from_bits(0xc3f1c275), // -4.8351919556e+02
];
const SB: [f32; 7] = [
    f32::from_bits(0x41f2b459), // 3.0338060379e+01
    f32::from_bits(0x43a2e571), // 3.2579251099e+02
    f32::from_bits(0x44c01759), // 1.5367296143e+03
    f32::from_bits(0x4547fdbb), // 3.1998581543e+03
    f32::from_bits(0x451f90ce), // 2.5530502930e+03
    f32::from_bits(0x43ed43a7), // 4.7452853394e+02
    f32::from_bits(0xc1b38712), // -2.2440952301e+01
];

/// `c[0] + s (c[1] + s (c[2] + ...))`.
#[inline(always)]
fn poly<const N: usize>(s: f32, c: &[f32; N]) -> f32 {
    let mut r = c[N - 1];
    for k in (0..N - 1).rev() {
        r = r * s + c[k];
    }
    r
}

/// `1 + s (c[0] + s (c[1] + ...))`.
#[inline(always)]
fn poly1<const N: usize>(s: f32, c: &[f32; N]) -> f32 {
    1.0 + s * poly(s, c)
}

/// The error function: odd, NaN for NaN, `±1` at `±inf`.
#[inline(always)]
pub(crate) fn erf(x: f32) -> f32 {
    let bits = x.to_bits();
    let sign = bits & 0x8000_0000;
    let ix = bits & 0x7fff_ffff;
    let a = f32::from_bits(ix);

    // |x| < 0.84375 (with x's sign).
    let tiny = 0.125 * (8.0 * x + EFX8 * x);
    let z = x * x;
    let small = x + x * (poly(z, &PP) / poly1(z, &QQ));

    // |x| >= 0.84375, on |x|: 1 - erfc.
    let s = a - 1.0;
    let middle = ERX + poly(s, &PA) / poly1(s, &QA);
    let s = 1.0 / (a * a);
    let (r, q) = if ix < 0x4036_db6d {
        (poly(s, &RA), poly1(s, &SA))
    } else {
        (poly(s, &RB), poly1(s, &SB))
    };
    let zt = f32::from_bits(ix & 0xffff_e000);
    let erfc = vmath::exp(-zt * zt - 0.5625) * vmath::exp((zt - a) * (zt + a) + r / q) / a;
    let upper = if ix < 0x3fa0_0000 {
        middle
    } else if ix < 0x40c0_0000 {
        1.0 - erfc
    } else {
        1.0
    };

    let y = if ix < 0x3180_0000 {
        tiny
    } else if ix < 0x3f58_0000 {
        small
    } else {
        f32::from_bits(upper.to_bits() | sign)
    };
    // `x + x`, not `x`: see `vmath::tanh` (a branch returning the argument becomes a masked
    // store when applied in place).
    if x.is_nan() {
        x + x
    } else {
        y
    }
}

#[cfg(test)]
mod tests {
    use super::erf;

    /// The error of `got` against the exact `want`, in ulps of `want` rounded to `f32`.
    fn ulps(got: f32, want: f64) -> f64 {
        let w = want as f32;
        let exp = if w == 0.0 || w.abs() < f32::MIN_POSITIVE {
            -149
        } else {
            (w.abs().to_bits() >> 23) as i32 - 127 - 23
        };
        (got as f64 - want).abs() / 2f64.powi(exp)
    }

    /// Against `f64` erf on every 4099th `f32` bit pattern (both signs, every exponent; all of
    /// them with `DEVTYPE_VMATH_EXHAUSTIVE=1`, as `vmath`'s tests: 0.97 ulps at worst, at
    /// 0.8366857) and the edges of the ranges: within an ulp, and within one of `libm::erff`
    /// (the `Erf` op's).
    #[test]
    fn erf_is_within_an_ulp() {
        let step = if cfg!(miri) {
            1 << 22
        } else if std::env::var_os("DEVTYPE_VMATH_EXHAUSTIVE").is_some() {
            1
        } else {
            4099
        };
        let edges = [
            0.0f32,
            -0.0,
            1e-45,
            3.725_290_3e-9,
            0.843_75,
            0.843_749_94,
            1.25,
            1.249_999_9,
            2.857_142_7,
            2.857_143,
            6.0,
            5.999_999_5,
            -1.25,
            -2.857_143,
        ];
        let (mut worst, mut at, mut apart) = (0.0f64, 0.0f32, 0.0f64);
        for x in (0..=u32::MAX)
            .step_by(step)
            .map(f32::from_bits)
            .chain(edges)
            .filter(|x| !x.is_nan())
        {
            let got = erf(x);
            let e = ulps(got, libm::erf(x as f64));
            if e > worst {
                (worst, at) = (e, x);
            }
            apart = apart.max(ulps(got, libm::erff(x) as f64));
        }
        eprintln!("worst: {worst} ulps at {at:e}; at most {apart} ulps from libm::erff");
        // Under Miri (whose float operations may be deliberately imprecise, to catch code that
        // relies on exact results) one sample point measured 1.0000000000000004 ulps from
        // `libm::erff` in CI's run; natively every difference is a whole number of ulps.
        let slack = if cfg!(miri) { 0.01 } else { 0.0 };
        assert!(worst <= 1.0 + slack, "erf({at:e}) is {worst} ulps off");
        assert!(apart <= 1.0 + slack, "{apart} ulps from libm::erff");
    }

    #[test]
    fn signs_and_specials() {
        assert_eq!(erf(0.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(erf(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(erf(f32::INFINITY), 1.0);
        assert_eq!(erf(f32::NEG_INFINITY), -1.0);
        assert!(erf(f32::NAN).is_nan());
        for x in [0.5f32, 1.0, 2.0, 5.0] {
            assert_eq!(erf(-x), -erf(x));
        }
    }

    /// The vector path (a slice loop inside `vectorized`) gives the bits of the scalar path.
    #[test]
    fn vector_and_scalar_paths_agree() {
        let xs: Vec<f32> = (0..4096u32)
            .map(|i| f32::from_bits(i.wrapping_mul(0x9e37_79b9)))
            .collect();
        let mut v = xs.clone();
        crate::backend::cpu::vmath::vectorized(|| v.iter_mut().for_each(|x| *x = erf(*x)));
        for (x, y) in xs.iter().zip(&v) {
            let s = erf(*x);
            assert!(
                s.to_bits() == y.to_bits() || (s.is_nan() && y.is_nan()),
                "at {x:e}"
            );
        }
    }
}
