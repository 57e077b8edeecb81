//! `erf` over slices on the vector unit (AVX2+FMA and AVX-512): lane
//! code the compiler vectorises, compiled once per level, that performs
//! *the same floating-point operations in the same order* as the `libm`
//! crate's `erf` (fdlibm's algorithm, what the interpreter calls), so
//! every lane is that function's result bit for bit, and its accuracy is
//! the library's: within 1 ulp of `erf` (fdlibm's bound; `tests/suite/vmath.rs`
//! checks every lane against a double-double reference, ≤ 1 ulp from
//! the correctly rounded value, and against the library bit for bit, at
//! millions of points of every interval and their ends).
//!
//! fdlibm's intervals of `a = |x|`, each a rational function `P(t)/Q(t)`:
//! `a < 2^-28`: `(8x + efx8·x)/8`; `a < 0.84375`: `x + x·P/Q`, `t = x²`;
//! `a < 1.25`: `1 - ((1 - erx) - P/Q)`, `t = a - 1`; `a < 6`:
//! `1 - e^(-z²-0.5625)·e^((z-a)(z+a) + R/S)/a`, `t = 1/a²`, `z` = `a` with
//! its low 32 bits cleared, `R/S` of one of two fits (below and above
//! `1/0.35`); `a ≥ 6` (±inf too): 1; the sign is `x`'s. Here every lane
//! computes the one division `P/Q` with the coefficients of its interval
//! picked per lane (the shorter polynomials padded with zero
//! coefficients at the top, which Horner's rule passes through exactly:
//! `c + t·0 = c`), and the two `exp`s are fdlibm's `exp` (the `libm`
//! crate's) written out for the arguments they get there: `e^v` for
//! `-36.6 < v < -2.1` by `v = k·ln2 + r` (`k` truncated as the library
//! does), `r·c/(2-c)` and the scaling by `2^k` (exact: normal results),
//! and for `-0.21 < v < -0.0098` its `k = 0` form. NaN gives NaN.
//!
//! A chunk of 256 elements runs the cheapest lane that covers it (a
//! pre-pass takes the largest `|x|`, as integers): all `|x| < 0.84375`
//! (most of GELU's `x/√2`) the first interval's alone; all `|x| < 1.25`
//! the first two; otherwise every interval, blended.
//!
//! Owns the `erf` lane code and its chunked maps; uses nothing of its
//! parent (the dispatch and the entry points are in `crate::vmath`).

// fdlibm's constants are quoted as it publishes them.
#![allow(clippy::excessive_precision, clippy::unreadable_literal)]

/// Elements per chunk (one lane choice each).
const CH: usize = 256;

const ERX: f64 = 8.45062911510467529297e-01;
const EFX8: f64 = 1.02703333676410069053e+00;

/// `P`'s coefficients (of `t^0 … t^7`) per interval: `[0, 0.84375)`,
/// `[0.84375, 1.25)`, `[1.25, 1/0.35)`, `[1/0.35, 6)`.
const NUM: [[f64; 8]; 4] = [
    [
        1.28379167095512558561e-01,
        -3.25042107247001499370e-01,
        -2.84817495755985104766e-02,
        -5.77027029648944159157e-03,
        -2.37630166566501626084e-05,
        0.0,
        0.0,
        0.0,
    ],
    [
        -2.36211856075265944077e-03,
        4.14856118683748331666e-01,
        -3.72207876035701323847e-01,
        3.18346619901161753674e-01,
        -1.10894694282396677476e-01,
        3.54783043256182359371e-02,
        -2.16637559486879084300e-03,
        0.0,
    ],
    [
        -9.86494403484714822705e-03,
        -6.93858572707181764372e-01,
        -1.05586262253232909814e+01,
        -6.23753324503260060396e+01,
        -1.62396669462573470355e+02,
        -1.84605092906711035994e+02,
        -8.12874355063065934246e+01,
        -9.81432934416914548592e+00,
    ],
    [
        -9.86494292470009928597e-03,
        -7.99283237680523006574e-01,
        -1.77579549177547519889e+01,
        -1.60636384855821916062e+02,
        -6.37566443368389627722e+02,
        -1.02509513161107724954e+03,
        -4.83519191608651397019e+02,
        0.0,
    ],
];

/// `Q = 1 + t·q(t)`: `q`'s coefficients (of `t^0 … t^7`) per interval.
const DEN: [[f64; 8]; 4] = [
    [
        3.97917223959155352819e-01,
        6.50222499887672944485e-02,
        5.08130628187576562776e-03,
        1.32494738004321644526e-04,
        -3.96022827877536812320e-06,
        0.0,
        0.0,
        0.0,
    ],
    [
        1.06420880400844228286e-01,
        5.40397917702171048937e-01,
        7.18286544141962662868e-02,
        1.26171219808761642112e-01,
        1.36370839120290507362e-02,
        1.19844998467991074170e-02,
        0.0,
        0.0,
    ],
    [
        1.96512716674392571292e+01,
        1.37657754143519042600e+02,
        4.34565877475229228821e+02,
        6.45387271733267880336e+02,
        4.29008140027567833386e+02,
        1.08635005541779435134e+02,
        6.57024977031928170135e+00,
        -6.04244152148580987438e-02,
    ],
    [
        3.03380607434824582924e+01,
        3.25792512996573918826e+02,
        1.53672958608443695994e+03,
        3.19985821950859553908e+03,
        2.55305040643316442583e+03,
        4.74528541206955367215e+02,
        -2.24409524465858183362e+01,
        0.0,
    ],
];

/// The ends of the intervals, as fdlibm compares high words: `2^-28`,
/// 0.84375, 1.25, high word `0x4006db6d` (≈ 1/0.35), 6.
const TINY: f64 = 3.725290298461914e-9;
const A1: f64 = 0.84375;
const A2: f64 = 1.25;
const A3_BITS: u64 = 0x4006_db6d_0000_0000;
const A4: f64 = 6.0;

/// fdlibm's `exp` constants.
const LN2HI: f64 = 6.93147180369123816490e-01;
const LN2LO: f64 = 1.90821492927058770002e-10;
const INVLN2: f64 = std::f64::consts::LOG2_E; // fdlibm's invln2, the same double
const P1: f64 = 1.66666666666666019037e-01;
const P2: f64 = -2.77777777770155933842e-03;
const P3: f64 = 6.61375632143793436117e-05;
const P4: f64 = -1.65339022054652515390e-06;
const P5: f64 = 4.13813679705723846039e-08;
/// `1.5·2^52`: `v + SHIFT` holds the integer `v` in its low bits.
const SHIFT: f64 = 6755399441055744.0;

/// `e^r`'s fdlibm kernel after the reduction: `1 + (r·c/(2-c) - lo + hi)`.
#[inline(always)]
fn exp_kernel(r: f64, hi: f64, lo: f64) -> f64 {
    let xx = r * r;
    let c = r - xx * (P1 + xx * (P2 + xx * (P3 + xx * (P4 + xx * P5))));
    1.0 + (r * c / (2.0 - c) - lo + hi)
}

/// fdlibm's `exp(v)` for `-745 < v ≤ -1.5·ln2` with a normal result
/// (here `-36.6 < v < -2.1`): `k` is `v/ln2 - 1/2` truncated.
#[inline(always)]
fn exp_neg(v: f64) -> f64 {
    let kf = (INVLN2 * v - 0.5).trunc();
    let hi = v - kf * LN2HI; // exact
    let lo = kf * LN2LO;
    let y = exp_kernel(hi - lo, hi, lo);
    let ki = (kf + SHIFT).to_bits();
    y * f64::from_bits((ki << 52).wrapping_add(0x3ff0_0000_0000_0000))
}

/// fdlibm's `exp(v)` for `2^-28 < |v| ≤ ln2/2` (here `-0.21 < v <
/// -0.0098`): no reduction.
#[inline(always)]
fn exp_small(v: f64) -> f64 {
    exp_kernel(v, v, 0.0)
}

/// `erf(x)` for one lane. `MID`: lanes may be in `[0.84375, 1.25)`;
/// `TAIL`: lanes may be at or above 1.25 (or NaN).
#[inline(always)]
fn lane<const MID: bool, const TAIL: bool>(x: f64) -> f64 {
    let a = x.abs();
    let in0 = a < A1;
    let in1 = a < A2;
    let in2 = a < f64::from_bits(A3_BITS);
    let z = x * x;
    let t = if in0 || !MID {
        z
    } else if in1 || !TAIL {
        a - 1.0
    } else {
        1.0 / z
    };
    let pick = |k: usize| -> (f64, f64) {
        if in0 || !MID {
            (NUM[0][k], DEN[0][k])
        } else if in1 || !TAIL {
            (NUM[1][k], DEN[1][k])
        } else if in2 {
            (NUM[2][k], DEN[2][k])
        } else {
            (NUM[3][k], DEN[3][k])
        }
    };
    // Horner from the top (the padding zeros pass through exactly)
    let (mut p, mut q) = pick(7);
    for k in (0..7).rev() {
        let (c, d) = pick(k);
        p = c + t * p;
        q = d + t * q;
    }
    let q = 1.0 + t * q;
    let y = p / q;
    let v0 = if a < TINY {
        0.125 * (8.0 * x + EFX8 * x)
    } else {
        x + x * y
    };
    if !MID {
        return v0;
    }
    let v1 = 1.0 - ((1.0 - ERX) - y);
    let v = if TAIL {
        let zz = f64::from_bits(a.to_bits() & 0xffff_ffff_0000_0000);
        let r = exp_neg(-zz * zz - 0.5625) * exp_small((zz - a) * (zz + a) + y);
        let v2 = 1.0 - r / a;
        if in1 {
            v1
        } else if a >= A4 {
            1.0
        } else {
            v2
        }
    } else {
        v1
    };
    if in0 {
        v0
    } else {
        f64::from_bits(v.to_bits() | (x.to_bits() & (1 << 63)))
    }
}

/// `dst[i] = erf(src[i] + c)` (`erf(src[i])` when `!ADD`) for `i < n`,
/// per chunk: the arguments into a buffer with their largest magnitude
/// (as integers, NaN above ∞), then the lane that covers the chunk.
///
/// # Safety
/// `src` points to `n` initialised doubles and `dst` to room for `n`,
/// the two equal or disjoint.
#[inline(always)]
unsafe fn map<const ADD: bool>(src: *const f64, dst: *mut f64, n: usize, c: f64) {
    let mut arg = [0.0f64; CH];
    let mut i = 0;
    while i < n {
        let len = CH.min(n - i);
        let arg = &mut arg[..len];
        let mut top = 0u64;
        {
            // SAFETY: `len` elements from `i` (read before `dst` is
            // written: `src` may be `dst`).
            let s = unsafe { std::slice::from_raw_parts(src.add(i), len) };
            for (a, &x) in arg.iter_mut().zip(s) {
                let v = if ADD { x + c } else { x };
                *a = v;
                top = top.max(v.to_bits() & !(1 << 63));
            }
        }
        // SAFETY: room for `len` elements from `i`; `s` is gone.
        let d = unsafe { std::slice::from_raw_parts_mut(dst.add(i), len) };
        if top < A1.to_bits() {
            for (y, &x) in d.iter_mut().zip(arg.iter()) {
                *y = lane::<false, false>(x);
            }
        } else if top < A2.to_bits() {
            for (y, &x) in d.iter_mut().zip(arg.iter()) {
                *y = lane::<true, false>(x);
            }
        } else {
            for (y, &x) in d.iter_mut().zip(arg.iter()) {
                *y = lane::<true, true>(x);
            }
        }
        i += len;
    }
}

/// [`map`] on AVX2 and FMA.
///
/// # Safety
/// AVX2 and FMA are present; as [`map`].
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn map2<const ADD: bool>(src: *const f64, dst: *mut f64, n: usize, c: f64) {
    // SAFETY: the caller's contract.
    unsafe { map::<ADD>(src, dst, n, c) }
}

/// [`map`] on AVX-512 (F, DQ, VL).
///
/// # Safety
/// AVX-512 F/DQ/VL are present; as [`map`].
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
pub(super) unsafe fn map512<const ADD: bool>(src: *const f64, dst: *mut f64, n: usize, c: f64) {
    // SAFETY: the caller's contract.
    unsafe { map::<ADD>(src, dst, n, c) }
}
