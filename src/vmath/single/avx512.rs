//! `exp` and `tanh` of `f32` slices at AVX-512, both in `f32` lanes,
//! written with `std::arch` intrinsics (the single-precision kernels
//! behind `crate::vmath`'s `f32` maps and fused sums of these two
//! functions; the others widen into the `f64` kernels).
//!
//! **exp in f32 lanes** ([`exp512`], [`exp16`]). Sixteen `f32` arguments
//! are clamped to `[-110, 100]` (NaN passes through; `e^100` overflows
//! `f32`, `e^-110` rounds to +0). `k` is the nearest integer to
//! `32x/ln2` (`x·(32/ln2) + 1.5·2^23` in one fused multiply-add, `k` in
//! the low bits, `|k| ≤ 5080`), and `x = k·ln2/32 + r1 + rlo`:
//! `r1 = x - k·LH32` by one fused multiply-add is **exact** (`LH32` is
//! `ln2/32` rounded to `f32`, in `[2^-6, 2^-5)`, so `k·LH32` is a
//! multiple of `2^-29`; `x` is a multiple of `2^-30` once `k ≠ 0`;
//! `|r1| ≤ ln2/64 + 2^-24·|x|·ln2/32 < 2^-6`: 24 bits hold it) and
//! `rlo = -k·LL32` (`LL32` the rest of `ln2/32`, `|LL32| < 2^-34`, so
//! `|rlo| < 2^-21.7`; its rounding and `LL32`'s own error are below
//! `2^-45`). Then `e^x = 2^⌊k/32⌋ · 2^(j/32) · e^(r1 + rlo)`, `j = k mod
//! 32`, and `2^(j/32) = H·(1 + c)`, `H` rounded to `f32` and `|c| <
//! 2^-24` rounded too (`c`'s error below `2^-48`), both looked up by one
//! `vpermi2ps` each from two registers (no gather). With `e^r1 = 1 + r1 +
//! r1²·P(r1)`, `P` Taylor's `1/2 + r1/6 + r1²/24` (truncation
//! `r1^5/120 < 2^-39.5`):
//!
//! `e^x / 2^⌊k/32⌋ = H + H·r1 + H·z`, `z = r1²·P + (rlo + c)(1 + r1)`.
//!
//! **Error.** Dropped: `(rlo + c)·r1²/2` (below `2^-21.4 · 2^-13 =
//! 2^-34.4` relative at the largest `|k|`, `2^-36` for `|x| < 20`),
//! `rlo²/2` and `rlo·c` (below `2^-44`), the truncation (`2^-39.5`). `H +
//! H·r1` is summed exactly: `H·r1 = ph + pl` by a product and an `fmsub`,
//! `H + ph = s + e` by Fast2Sum (`|ph| < |H|`). `z` (below `2^-13.9`)
//! carries a few roundings of `2^-24` relative, and `tail = H·z + (pl +
//! e)` one more: together below `2^-36` of the result. Then `s + tail`
//! is rounded **once**. So the value before that rounding is within
//! about `2^-34` relative of `e^x` (`2^-10` ulp; `2^-35` for `|x| < 20`),
//! the result is the correctly rounded value or its neighbour, and it
//! differs from the library's rounded value only where `e^x` lies that
//! close to a midpoint between two floats: measured over all `2^32`
//! inputs (`examples/f32_exp_all.rs`), 3 905, none by more than 1 ulp, every special
//! exact; at most 0.0015% on dense ranges such as `[-86, -40]` and
//! `[10, 88]` (the same construction in pure `f32`, `fma(H, r1 + z, H)`,
//! is 20% faster on Zen 4 but differs for up to 0.12% of dense ranges
//! and 468 410 of all inputs, enough to break the JIT's bit-for-bit
//! agreement with the interpreter that `tests/suite/f32.rs` checks).
//! `scalef` by `k/32` (it floors) is exact for normal results; overflow
//! gives +inf exactly as rounding the exact value would (the result
//! rounds at the same relative precision). Subnormal results would be
//! rounded twice, so a vector with a lane in the subnormal band
//! `(-104, -87.33)` is computed on the double lanes below instead (below
//! `-104`, `e^x < 2^-150.04` and the lane gives +0 exactly).
//!
//! **exp in double lanes** (`exp8`, the subnormal band's).
//! Sixteen `f32` arguments are widened to two vectors of eight doubles
//! (exactly), and `x = (16m + j)·ln2/16 + r`, `|r| ≤ ln2/32`,
//! `k = 16m + j` the nearest integer to `16x/ln2` (`x/ln2 + 1.5·2^48`
//! rounds to a multiple of 1/16, `k/16`); `e^x = 2^m · 2^(j/16) · e^r`, the sixteen
//! `2^(j/16)` held in two registers (one `vpermt2pd` look-up), `e^r` its
//! Taylor polynomial to `r^5` (truncation below `1.5·10^-13` relative),
//! `2^m` by `scalef` (which floors `k/16`). The double is rounded once
//! to `f32` (`vcvtpd2ps`), which gives overflow to +inf (from `x ≈
//! 88.72`), subnormal results and underflow to +0 exactly as rounding
//! the exact value would.
//!
//! **tanh in f32 lanes** ([`tanh512`], `tanh16`), on `a = min(|x|,
//! 9.5)` (from 9.01 `tanh` rounds to 1 in `f32`; NaN passes), the sign
//! put back at the end. `a` falls in one of 26 intervals, found from its
//! bits: interval 0 is `[0, 1/8)`, and from `1/8` on, interval `k =
//! (bits(a) >> 21) - 495` is a quarter of a binade (`[2^e(1 + j/4),
//! 2^e(1 + (j+1)/4))`, the last `[8, 10)`). Each interval's constants
//! come from 32-entry tables (`tanh32.rs`), by one two-register
//! `vpermt2ps` each (no gather, no branch, no division, no `exp`):
//! `tanh(a) = C0 + (Q0 + r·p(r))`, `r = a - M`, `M` the interval's
//! middle (`a`'s bits with the low 21 set to `0x100000`; exact: `M` is
//! within a factor 2 of `a`), `C0` the `f32` of `tanh(M)`, `Q0` the rest of the
//! fit's constant term (below 2^-25), `p` of degree 5 by Horner; in
//! interval 0, `tanh(a) = a + a·p(a)` (`M = 0`, `Q0 = 0`, and `p(0) = 0`,
//! so tiny and subnormal `a` give `a`, and ±0 gives ±0).
//!
//! **Error of tanh** (in ulps of the result; the final addition rounds
//! once, 0.5). The fit with rounded coefficients is within 0.061 ulp
//! (printed per interval by `tanh32_tables.py`). `p`'s last Horner step
//! rounds once (half an ulp of `p ≤ 1`, 2^-25) and the earlier ones are
//! damped by `|r|`, which is at most an eighth of `a`; in intervals 1–8
//! (`a < 1/2`, `tanh(a) ≥ 0.9a`, and an ulp of the result is at least
//! `2^-24·tanh(a)`), `|r·δp|` is under 0.08 ulp, and the rounding of
//! `q = Q0 + r·p` (`|q| ≤ a/8`) under 0.14; beyond, `tanh' ≤ 0.79` and
//! both are smaller. In interval 0, `|p| ≤ 0.0052`, so `a·p` and its
//! errors are that fraction of the result: under 0.03 ulp. So every lane
//! is within 0.8 ulp of `tanh(x)`: the correctly rounded value or its
//! neighbour, not always the library's rounded value (about one argument
//! in ten differs by 1 ulp; `tests/suite/vmath_f32.rs` bounds every lane
//! at 1 ulp and counts them). ±inf gives ±1, NaN a NaN.
//!
//! **Error of the double lanes.** The double before the final rounding
//! is within about `2^-42` of the exact value:
//! the reduction `r = x - (k/16)·ln2` is one fused multiply-add (`|k/16|
//! ≤ 160`, the constant's own error adds below `2^-45`), the table
//! entries are rounded doubles (`2^-53`), the polynomial's truncation
//! `2^-42.6`, its evaluation a few `2^-53`. So the `f32` result is the
//! correctly rounded value or its neighbour (within 1 ulp), and equals
//! the f64 library function rounded to `f32` except when the exact value
//! lies within about `2^-14` ulp of a midpoint between two floats (a few
//! arguments in ten thousand at most; `tests/suite/vmath_f32.rs` counts them).
//!
//! Owns these kernels and their constants; uses nothing of its parents
//! (no circle of module dependencies, `tests/suite/architecture.rs`).

use super::table32::{BAND_HI, BAND_LO, C32, H32, HI32, LO32, SHIFT32};
use super::tanh32;
use std::arch::x86_64::*;

/// `1.5·2^48`: `y + SHIFT` rounds `y` to a multiple of 1/16 (`k/16`,
/// `k` in the low bits).
const SHIFT: f64 = 1.5 * 281474976710656.0;
/// `1/ln2` and `ln2`.
const INV_LN2: f64 = std::f64::consts::LOG2_E;
const LN2: f64 = std::f64::consts::LN_2;
// (the clamp, the subnormal band and the `f32` tables: `table32`)

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

/// The `f32` lanes' constants (module doc): `32/ln2`, `ln2/32` rounded to
/// `f32` and the rest of it, `1.5·2^23` (`y + SHIFT32` rounds `y` to an
/// integer, `k`, in the low bits).
const INV32: f32 = 46.16624;
const LH32: f32 = 0.02166085;
/// `-(ln2/32 - LH32)`, rounded.
const NLL32: f32 = 5.9520444e-11;

/// The tables of one call, in registers.
#[derive(Clone, Copy)]
struct Consts {
    t0: __m512d,
    t1: __m512d,
    h0: __m512,
    h1: __m512,
    c0: __m512,
    c1: __m512,
}

/// The tables, loaded.
#[inline]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
fn consts() -> Consts {
    // SAFETY: `T` holds sixteen doubles, `H32` and `C32` 32 floats each.
    unsafe {
        Consts {
            t0: _mm512_loadu_pd(T.as_ptr()),
            t1: _mm512_loadu_pd(T.as_ptr().add(8)),
            h0: _mm512_loadu_ps(H32.as_ptr()),
            h1: _mm512_loadu_ps(H32.as_ptr().add(16)),
            c0: _mm512_loadu_ps(C32.as_ptr()),
            c1: _mm512_loadu_ps(C32.as_ptr().add(16)),
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

/// `e^x` of sixteen `f32` lanes in `[-110, 100]` (or NaN) in `f32`
/// arithmetic (module doc): `x = k·ln2/32 + r1 + rlo`, `e^x = 2^⌊k/32⌋ ·
/// H·(1 + c) · e^r`, `H·(1 + r1)` summed exactly, the rest on top, one
/// rounding, then the exact (or, for subnormal results, rounded once more)
/// `scalef`.
#[inline]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
fn exp16(x: __m512, k: Consts) -> __m512 {
    let ks = _mm512_fmadd_ps(x, _mm512_set1_ps(INV32), _mm512_set1_ps(SHIFT32));
    let kd = _mm512_sub_ps(ks, _mm512_set1_ps(SHIFT32));
    // exact (module doc)
    let r1 = _mm512_fnmadd_ps(kd, _mm512_set1_ps(LH32), x);
    let rlo = _mm512_mul_ps(kd, _mm512_set1_ps(NLL32));
    let idx = _mm512_castps_si512(ks);
    let h = _mm512_permutex2var_ps(k.h0, idx, k.h1);
    let c = _mm512_permutex2var_ps(k.c0, idx, k.c1);
    // z = (e^r - 1 - r1) + c·e^r, to first order in rlo and c
    let q = _mm512_mul_ps(r1, r1);
    let mut p = _mm512_fmadd_ps(r1, _mm512_set1_ps(1.0 / 24.0), _mm512_set1_ps(1.0 / 6.0));
    p = _mm512_fmadd_ps(p, r1, _mm512_set1_ps(0.5));
    let a = _mm512_add_ps(rlo, c);
    let w = _mm512_fmadd_ps(a, r1, a);
    let z = _mm512_fmadd_ps(q, p, w);
    // H + H·r1 as s + (ph - (s - H)) + pl, exactly; H·z on top
    let ph = _mm512_mul_ps(h, r1);
    let pl = _mm512_fmsub_ps(h, r1, ph);
    let s = _mm512_add_ps(h, ph);
    let e = _mm512_add_ps(_mm512_sub_ps(h, s), ph);
    let tail = _mm512_fmadd_ps(h, z, _mm512_add_ps(pl, e));
    let y = _mm512_add_ps(s, tail);
    _mm512_scalef_ps(y, _mm512_mul_ps(kd, _mm512_set1_ps(1.0 / 32.0)))
}

/// `tanh(x)` of sixteen `f32` lanes in `f32` arithmetic (module doc):
/// `a = min(|x|, 9.5)`, its interval `k` from its bits, `r = a - M`
/// (exact; `M` the middle of the interval, from the bits too), `q = Q0[k] + r·p(r)`, the result `C0[k] + q` (`a + a·p(a)`
/// in interval 0), rounded once, with `x`'s sign.
#[inline]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
fn tanh16(x: __m512, t: &TanhTables) -> __m512 {
    let sign_bit = _mm512_set1_ps(-0.0);
    let sign = _mm512_and_ps(x, sign_bit);
    // (NaN passes: `min` returns its second operand then)
    let a = _mm512_min_ps(_mm512_set1_ps(9.5), _mm512_andnot_ps(sign_bit, x));
    let k = _mm512_max_epi32(
        _mm512_sub_epi32(
            _mm512_srli_epi32::<21>(_mm512_castps_si512(a)),
            _mm512_set1_epi32(495),
        ),
        _mm512_setzero_si512(),
    );
    // one two-register permute per table (the index's low five bits)
    macro_rules! look {
        ($j:expr) => {
            _mm512_permutex2var_ps(t.0[$j][0], k, t.0[$j][1])
        };
    }
    let small = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(a, _mm512_set1_ps(0.125));
    // `M`: the middle of `a`'s quarter binade (its bits with the low 21
    // set to 0x100000), 0 in interval 0
    let m = _mm512_maskz_ternarylogic_epi32::<0xF8>(
        !small,
        _mm512_set1_epi32(0x0010_0000),
        _mm512_castps_si512(a),
        _mm512_set1_epi32(!0x001f_ffff),
    );
    let r = _mm512_sub_ps(a, _mm512_castsi512_ps(m));
    let mut p = look!(7);
    for j in (2..7).rev() {
        p = _mm512_fmadd_ps(p, r, look!(j));
    }
    let q = _mm512_fmadd_ps(p, r, look!(1));
    let c0 = _mm512_mask_blend_ps(small, look!(0), a);
    _mm512_or_ps(_mm512_add_ps(c0, q), sign)
}

/// The tables of [`tanh16`] in registers, two per table (`C0`, `Q0`,
/// then `P` by power).
struct TanhTables([[__m512; 2]; 8]);

/// [`TanhTables`], loaded.
#[inline]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
fn tanh_tables() -> TanhTables {
    let rows: [&[f32; 32]; 8] = [
        &tanh32::C0,
        &tanh32::Q0,
        &tanh32::P[0],
        &tanh32::P[1],
        &tanh32::P[2],
        &tanh32::P[3],
        &tanh32::P[4],
        &tanh32::P[5],
    ];
    // SAFETY: each row holds 32 floats.
    TanhTables(rows.map(|r| unsafe {
        [
            _mm512_loadu_ps(r.as_ptr()),
            _mm512_loadu_ps(r.as_ptr().add(16)),
        ]
    }))
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

/// `e^v` of sixteen `f32`s: the `f32` lanes ([`exp16`]), or the double
/// lanes when a lane is in the subnormal band (module doc).
#[inline]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
fn exp_f32(v: __m512, k: Consts) -> __m512 {
    // (the clamp in `f32`, NaN passing: `max`/`min` return their second
    // operand for a NaN)
    let x = _mm512_min_ps(_mm512_set1_ps(HI32), _mm512_max_ps(_mm512_set1_ps(LO32), v));
    let band = _mm512_mask_cmp_ps_mask::<_CMP_GT_OQ>(
        _mm512_cmp_ps_mask::<_CMP_LT_OQ>(x, _mm512_set1_ps(BAND_HI)),
        x,
        _mm512_set1_ps(BAND_LO),
    );
    if band != 0 {
        return halves!(x, k, exp8);
    }
    exp16(x, k)
}

/// `dst[i] = e^(src[i] + c)` (`e^src[i]` when `!ADD`; the sum rounded
/// to `f32`) for `i < n`, in `f32` lanes (module doc).
///
/// # Safety
/// AVX-512 F/DQ/VL are present; `src` points to `n` initialised `f32`s
/// and `dst` to room for `n`, the two equal or disjoint.
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
pub(crate) unsafe fn exp512<const ADD: bool>(src: *const f32, dst: *mut f32, n: usize, c: f32) {
    map_loop!(src, dst, n, c, ADD, |v, k| exp_f32(v, k))
}

/// `dst[i] = tanh(src[i] + c)` (`tanh(src[i])` when `!ADD`; the sum
/// rounded to `f32`) for `i < n`, in `f32` lanes (module doc).
///
/// # Safety
/// As [`exp512`].
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
pub(crate) unsafe fn tanh512<const ADD: bool>(src: *const f32, dst: *mut f32, n: usize, c: f32) {
    let t = tanh_tables();
    map_loop!(src, dst, n, c, ADD, |v, _k| tanh16(v, &t))
}

/// `Σ e^(src[i] + c)` (`Σ e^src[i]` when `!ADD`) for `i < n`: the terms
/// of [`exp512`], added in registers as `crate::vmath`'s `fused_sum!` says.
///
/// # Safety
/// AVX-512 F/DQ/VL are present; `src` points to `n` initialised `f32`s.
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
pub(crate) unsafe fn exp_sum512<const ADD: bool>(src: *const f32, n: usize, c: f32) -> f32 {
    let (k, cv) = (consts(), _mm512_set1_ps(c));
    fused_sum!(
        ps512,
        src,
        n,
        |v| exp_f32(if ADD { _mm512_add_ps(v, cv) } else { v }, k),
        // SAFETY: the tail's `len` elements and room for them.
        tail = |s, d, len| unsafe { exp512::<ADD>(s, d, len, c) }
    )
}

/// `Σ tanh(src[i] + c)` (`Σ tanh(src[i])` when `!ADD`) for `i < n`: the
/// terms of [`tanh512`], added in registers as `crate::vmath`'s `fused_sum!` says.
///
/// # Safety
/// As [`exp_sum512`].
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
pub(crate) unsafe fn tanh_sum512<const ADD: bool>(src: *const f32, n: usize, c: f32) -> f32 {
    let (t, cv) = (tanh_tables(), _mm512_set1_ps(c));
    fused_sum!(
        ps512,
        src,
        n,
        |v| tanh16(if ADD { _mm512_add_ps(v, cv) } else { v }, &t),
        // SAFETY: the tail's `len` elements and room for them.
        tail = |s, d, len| unsafe { tanh512::<ADD>(s, d, len, c) }
    )
}
