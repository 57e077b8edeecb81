//! `exp` of `f32` slices at AVX-512, written with `std::arch` intrinsics
//! (the single-precision kernel behind `crate::vmath`'s `f32` maps and
//! fused sums of `exp`).
//!
//! **Method.** Sixteen `f32` arguments are widened to two vectors of
//! eight doubles (exactly), clamped to `[-110, 100]` (NaN passes
//! through), and `x = (16m + j)·ln2/16 + r`, `|r| ≤ ln2/32`, `k = 16m + j`
//! the nearest integer to `16x/ln2`; `e^x = 2^m · 2^(j/16) · e^r`, the
//! sixteen `2^(j/16)` held in two registers (one `vpermt2pd` look-up),
//! `e^r` its Taylor polynomial to `r^5` (truncation below `1.5·10^-13`
//! relative), `2^m` by `scalef`. The double is rounded once to `f32`
//! (`vcvtpd2ps`), which gives overflow to +inf (from `x ≈ 88.72`),
//! subnormal results and underflow to +0 exactly as rounding the exact
//! value would. No branch and no library call.
//!
//! **Error.** The double before the final rounding is within about
//! `2^-42` (relative) of `e^x`: the reduction `r = x - k·(ln2/16)` is
//! one fused multiply-add (`|k| ≤ 1760`, so the constant's own error adds
//! below `2^-47`), the table entries are rounded doubles (`2^-53`), the
//! polynomial's truncation `2^-42.6`, its evaluation a few `2^-53`. So
//! the `f32` result is the correctly rounded `e^x` or its neighbour
//! (within 1 ulp), and equals the f64 library function rounded to
//! `f32` except when `e^x` lies within about `2^-18` ulp of a midpoint
//! between two floats (a few arguments per million).
//!
//! Owns this kernel and its constants; uses nothing of its parents (no
//! circle of module dependencies, `tests/architecture.rs`).

use std::arch::x86_64::*;

/// `1.5·2^52`: `y + SHIFT` rounds `y` to an integer in the low bits.
const SHIFT: f64 = 6755399441055744.0;
/// `16/ln2`.
const INV_L: f64 = 23.083120654223414;
/// `ln2/16`.
const L: f64 = std::f64::consts::LN_2 / 16.0;
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

/// The constants of one call, in registers.
#[derive(Clone, Copy)]
struct Consts {
    t0: __m512d,
    t1: __m512d,
}

/// `e^x` of eight doubles (widened `f32`s), before the final rounding.
#[inline]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
fn exp8(x: __m512d, k: Consts) -> __m512d {
    let x = _mm512_min_pd(_mm512_set1_pd(HI), _mm512_max_pd(_mm512_set1_pd(LO), x));
    let ks = _mm512_fmadd_pd(x, _mm512_set1_pd(INV_L), _mm512_set1_pd(SHIFT));
    let kd = _mm512_sub_pd(ks, _mm512_set1_pd(SHIFT));
    let r = _mm512_fnmadd_pd(kd, _mm512_set1_pd(L), x);
    let t = _mm512_permutex2var_pd(k.t0, _mm512_castpd_si512(ks), k.t1);
    let mut q = _mm512_fmadd_pd(_mm512_set1_pd(1.0 / 120.0), r, _mm512_set1_pd(1.0 / 24.0));
    q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0 / 6.0));
    q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(0.5));
    q = _mm512_fmadd_pd(q, r, _mm512_set1_pd(1.0));
    // t·e^r = t + (t·r)·q'
    let tr = _mm512_mul_pd(t, r);
    let v = _mm512_fmadd_pd(tr, q, t);
    _mm512_scalef_pd(v, _mm512_mul_pd(kd, _mm512_set1_pd(1.0 / 16.0)))
}

/// `e^x` of sixteen `f32`s, each rounded once to `f32`.
#[inline]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
fn exp16(v: __m512, k: Consts) -> __m512 {
    let lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    let hi = _mm512_cvtps_pd(_mm512_extractf32x8_ps::<1>(v));
    let a = _mm512_cvtpd_ps(exp8(lo, k));
    let b = _mm512_cvtpd_ps(exp8(hi, k));
    _mm512_insertf32x8::<1>(_mm512_castps256_ps512(a), b)
}

/// `dst[i] = e^(src[i] + c)` (`e^src[i]` when `!ADD`; the sum rounded
/// to `f32`) for `i < n`, each the `f32` of the double kernel.
///
/// # Safety
/// AVX-512 F/DQ/VL are present; `src` points to `n` initialised `f32`s
/// and `dst` to room for `n`, the two equal or disjoint.
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
pub(crate) unsafe fn map512<const ADD: bool>(src: *const f32, dst: *mut f32, n: usize, c: f32) {
    // SAFETY: `T` holds sixteen doubles.
    let k = unsafe {
        Consts {
            t0: _mm512_loadu_pd(T.as_ptr()),
            t1: _mm512_loadu_pd(T.as_ptr().add(8)),
        }
    };
    let cv = _mm512_set1_ps(c);
    let mut i = 0;
    while i + 16 <= n {
        // SAFETY: sixteen elements from `i` at each (loaded before the
        // store: `src` may be `dst`).
        unsafe {
            let mut v = _mm512_loadu_ps(src.add(i));
            if ADD {
                v = _mm512_add_ps(v, cv);
            }
            _mm512_storeu_ps(dst.add(i), exp16(v, k));
        }
        i += 16;
    }
    if i < n {
        let m: __mmask16 = (1u32 << (n - i)).wrapping_sub(1) as __mmask16;
        // SAFETY: the mask covers the `n - i` elements left (masked lanes
        // are neither read nor written).
        unsafe {
            let mut v = _mm512_maskz_loadu_ps(m, src.add(i));
            if ADD {
                v = _mm512_add_ps(v, cv);
            }
            _mm512_mask_storeu_ps(dst.add(i), m, exp16(v, k));
        }
    }
}
