//! `exp` and `tanh` of `f32` slices at AVX-512, written with `std::arch`
//! intrinsics (the single-precision kernels behind `crate::vmath`'s
//! `f32` maps and fused sums of these two functions; the others widen
//! into the `f64` kernels).
//!
//! **exp** ([`exp512`]). Sixteen `f32` arguments are clamped to
//! `[-110, 100]` (NaN passes through), widened to two vectors of eight
//! doubles (exactly), and `x = (16m + j)·ln2/16 + r`, `|r| ≤ ln2/32`,
//! `k = 16m + j` the nearest integer to `16x/ln2` (`x/ln2 + 1.5·2^48`
//! rounds to a multiple of 1/16, `k/16`); `e^x = 2^m · 2^(j/16) · e^r`,
//! the sixteen `2^(j/16)` held in two registers (one `vpermt2pd`
//! look-up), `e^r` its Taylor polynomial to `r^5` (truncation below
//! `1.5·10^-13` relative), `2^m` by `scalef` (which floors `k/16`). The
//! double is rounded once to `f32` (`vcvtpd2ps`), which gives overflow
//! to +inf (from `x ≈ 88.72`), subnormal results and underflow to +0
//! exactly as rounding the exact value would. No branch, no library call.
//!
//! **tanh** ([`tanh512`]), on `a = |x|` widened, the sign put back at the
//! end: below `1/16` the Taylor polynomial `a + a³·P(a²)` to `a^9`
//! (truncation below `2^-46` relative; `x = ±0` and subnormal `x` give
//! `x`), else `(E - 1)/(E + 1)`, `E = e^{2·min(a, 10)}` by the exp
//! lanes above (from `a = 10` the quotient rounds to 1 in `f32`, as
//! `tanh` does from 9.01), the quotient by `vrcp14pd` and two Newton
//! steps (no division): `E - 1` cancels at most a factor 8.5 from `a ≥
//! 1/16`, so the lane is within `2^-38` of `tanh(a)`. The polynomial
//! runs on every lane and a blend picks (no branch). ±inf gives ±1,
//! NaN a NaN.
//!
//! **Error.** The double before the final rounding is within about
//! `2^-42` (exp) or `2^-38` (tanh) of the exact value: the reduction
//! `r = x - (k/16)·ln2` is one fused multiply-add (`|k/16| ≤ 160`, the
//! constant's own error adds below `2^-45`), the table entries are
//! rounded doubles (`2^-53`), the polynomial's truncation `2^-42.6`, its
//! evaluation a few `2^-53`. So the `f32` result is the correctly
//! rounded value or its neighbour (within 1 ulp), and equals the f64
//! library function rounded to `f32` except when the exact value lies
//! within about `2^-14` ulp of a midpoint between two floats (a few
//! arguments in ten thousand at most; `tests/vmath_f32.rs` counts them).
//!
//! Owns these kernels and their constants; uses nothing of its parents
//! (no circle of module dependencies, `tests/architecture.rs`).

use std::arch::x86_64::*;

/// `1.5·2^48`: `y + SHIFT` rounds `y` to a multiple of 1/16 (`k/16`,
/// `k` in the low bits).
const SHIFT: f64 = 1.5 * 281474976710656.0;
/// `1/ln2` and `ln2`.
const INV_LN2: f64 = std::f64::consts::LOG2_E;
const LN2: f64 = std::f64::consts::LN_2;
/// The clamp: `e^100` overflows `f32`, `e^-110` rounds to +0 in it.
const HI: f64 = 100.0;
const LO: f64 = -110.0;

/// `2^(j/16)`, rounded.
static T: [f64; 16] = [
    1.0,
    1.0442737824274138,
    1.0905077326652577,
    1.1387886347566916,
    1.189207115002721,
    1.241857812073484,
    1.2968395546510096,
    1.3542555469368927,
    std::f64::consts::SQRT_2,
    1.4768261459394993,
    1.5422108254079407,
    1.6104903319492543,
    1.681792830507429,
    1.7562521603732995,
    1.8340080864093424,
    1.915206561397147,
];

/// The tables of one call, in registers.
#[derive(Clone, Copy)]
struct Consts {
    t0: __m512d,
    t1: __m512d,
}

/// The tables, loaded.
#[inline]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
fn consts() -> Consts {
    // SAFETY: `T` holds sixteen doubles.
    unsafe {
        Consts {
            t0: _mm512_loadu_pd(T.as_ptr()),
            t1: _mm512_loadu_pd(T.as_ptr().add(8)),
        }
    }
}

/// `e^x` of eight doubles in `[-110, 100]` (or NaN), before the final
/// rounding.
#[inline]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
fn exp8(x: __m512d, k: Consts) -> __m512d {
    let ks = _mm512_fmadd_pd(x, _mm512_set1_pd(INV_LN2), _mm512_set1_pd(SHIFT));
    let kd = _mm512_sub_pd(ks, _mm512_set1_pd(SHIFT));
    let r = _mm512_fnmadd_pd(kd, _mm512_set1_pd(LN2), x);
    let t = _mm512_permutex2var_pd(k.t0, _mm512_castpd_si512(ks), k.t1);
    let mut q = _mm512_fmadd_pd(_mm512_set1_pd(1.0 / 120.0), r, _mm512_set1_pd(1.0 / 24.0));
    q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 6.0));
    q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(0.5));
    q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0));
    // t·e^r = t + (t·r)·q
    let tr = _mm512_mul_pd(t, r);
    let v = _mm512_fmadd_pd(tr, q, t);
    _mm512_scalef_pd(v, kd)
}

/// `tanh(x)` of eight doubles (widened `f32`s), before the final
/// rounding.
#[inline]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
fn tanh8(x: __m512d, k: Consts) -> __m512d {
    let sign_bit = _mm512_set1_pd(-0.0);
    let sign = _mm512_and_pd(x, sign_bit);
    let a = _mm512_andnot_pd(sign_bit, x);
    // (NaN passes: `min` returns its second operand then)
    let ac = _mm512_min_pd(_mm512_set1_pd(10.0), a);
    let e = exp8(_mm512_add_pd(ac, ac), k);
    let one = _mm512_set1_pd(1.0);
    let num = _mm512_sub_pd(e, one);
    let den = _mm512_add_pd(e, one);
    let mut y = _mm512_rcp14_pd(den);
    let mut d = _mm512_fnmadd_pd(den, y, one);
    y = _mm512_fmadd_pd(y, d, y);
    d = _mm512_fnmadd_pd(den, y, one);
    y = _mm512_fmadd_pd(y, d, y);
    let q = _mm512_mul_pd(num, y);
    let small = _mm512_cmp_pd_mask::<_CMP_LT_OQ>(a, _mm512_set1_pd(1.0 / 16.0));
    // (branch-free: on normal data a vector has a small lane a third
    // of the time, at random, and the mispredicted branch cost more
    // than the polynomial)
    let a2 = _mm512_mul_pd(a, a);
    let mut p = _mm512_fmadd_pd(
        _mm512_set1_pd(62.0 / 2835.0),
        a2,
        _mm512_set1_pd(-17.0 / 315.0),
    );
    p = _mm512_fmadd_pd(p, a2, _mm512_set1_pd(2.0 / 15.0));
    p = _mm512_fmadd_pd(p, a2, _mm512_set1_pd(-1.0 / 3.0));
    let r = _mm512_fmadd_pd(_mm512_mul_pd(a, a2), p, a);
    _mm512_or_pd(_mm512_mask_blend_pd(small, q, r), sign)
}

/// A function of sixteen `f32`s: both halves widened, `$f` of each,
/// each rounded once to `f32`.
macro_rules! halves {
    ($v:expr, $k:expr, $f:ident) => {{
        let v = $v;
        let lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
        let hi = _mm512_cvtps_pd(_mm512_extractf32x8_ps::<1>(v));
        let a = _mm512_cvtpd_ps($f(lo, $k));
        let b = _mm512_cvtpd_ps($f(hi, $k));
        _mm512_insertf32x8::<1>(_mm512_castps256_ps512(a), b)
    }};
}

/// `dst[i] = g(src[i] + c)` (`g(src[i])` when `!ADD`; the sum rounded
/// to `f32`) for `i < n`, `g` the vector function of sixteen `f32`s
/// `$g` of the loaded vector and the tables.
macro_rules! map_loop {
    ($src:ident, $dst:ident, $n:ident, $c:ident, $add:ident, |$v:ident, $k:ident| $g:expr) => {{
        let $k = consts();
        let cv = _mm512_set1_ps($c);
        let mut i = 0;
        while i + 16 <= $n {
            // SAFETY: sixteen elements from `i` at each (loaded before
            // the store: `src` may be `dst`).
            unsafe {
                let mut $v = _mm512_loadu_ps($src.add(i));
                if $add {
                    $v = _mm512_add_ps($v, cv);
                }
                _mm512_storeu_ps($dst.add(i), $g);
            }
            i += 16;
        }
        if i < $n {
            let m: __mmask16 = (1u32 << ($n - i)).wrapping_sub(1) as __mmask16;
            // SAFETY: the mask covers the `n - i` elements left (masked
            // lanes are neither read nor written).
            unsafe {
                let mut $v = _mm512_maskz_loadu_ps(m, $src.add(i));
                if $add {
                    $v = _mm512_add_ps($v, cv);
                }
                _mm512_mask_storeu_ps($dst.add(i), m, $g);
            }
        }
    }};
}

/// `dst[i] = e^(src[i] + c)` (`e^src[i]` when `!ADD`; the sum rounded
/// to `f32`) for `i < n`, each the `f32` of the double lanes.
///
/// # Safety
/// AVX-512 F/DQ/VL are present; `src` points to `n` initialised `f32`s
/// and `dst` to room for `n`, the two equal or disjoint.
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
pub(crate) unsafe fn exp512<const ADD: bool>(src: *const f32, dst: *mut f32, n: usize, c: f32) {
    let (lo, hi) = (_mm512_set1_ps(LO as f32), _mm512_set1_ps(HI as f32));
    // (the clamp in `f32`, NaN passing: `max`/`min` return their second
    // operand for a NaN)
    map_loop!(src, dst, n, c, ADD, |v, k| halves!(
        _mm512_min_ps(hi, _mm512_max_ps(lo, v)),
        k,
        exp8
    ))
}

/// `dst[i] = tanh(src[i] + c)` (`tanh(src[i])` when `!ADD`) for `i < n`,
/// each the `f32` of the double lanes.
///
/// # Safety
/// As [`exp512`].
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
pub(crate) unsafe fn tanh512<const ADD: bool>(src: *const f32, dst: *mut f32, n: usize, c: f32) {
    map_loop!(src, dst, n, c, ADD, |v, k| halves!(v, k, tanh8))
}
