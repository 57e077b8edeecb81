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
//! `e^x / 2^⌊k/32⌋ = H + H·r1 + H·z`, `z = r1²·P + (rlo + c)·e^r1`.
//!
//! **Error.** `(rlo + c)·e^r1` is taken to second order,
//! `(rlo + c)·(1 + r1 + r1²/2)`, so what is dropped is the third-order
//! term (below `2^-42`), `rlo²/2` and `rlo·c` (below `2^-44`) and the
//! truncation (`2^-39.5`). `H + H·r1` is summed exactly: `H·r1 = ph +
//! pl` by a product and an `fmsub`, `H + ph = s + e` by Fast2Sum (`|ph|
//! < |H|`). `z` (below `2^-13.9`) carries a few roundings of `2^-24`
//! relative, and `tail = H·z + (pl + e)` one more: together below
//! `2^-36` of the result. Then `s + tail` is rounded **once**, and
//! `scalef` by `k/32` (it floors) is exact for normal results; overflow
//! gives +inf exactly as rounding the exact value would (the result
//! rounds at the same relative precision).
//!
//! **Equal to the library.** The kernel then checks its own rounding, as
//! the AVX2 kernel does: where `s + tail - d` and `s + tail + d` (`d =
//! 2^-34`, at least `2^-35.03` relative: twice that bound, 1.3 times
//! with the roundings of `tail ± d` added) round to
//! different floats, the exact value may lie on either side of a
//! midpoint, and the lane is *hard* and takes the library's `exp`,
//! rounded (about one lane in 1 000, one vector in 70), computed in
//! `f64` lanes by the `f64` kernel ([`double_lanes`]); else
//! both round to the correctly rounded value, which is the rounded
//! library value.
//! A vector with a lane in the subnormal band `(-104, -87.33)` (where
//! `scalef` would round a second time) takes the library in every lane;
//! below `-104`, `e^x < 2^-150.04` and the lane gives +0 exactly. So every
//! result is the interpreter's `F32` value bit for bit: over all `2^32`
//! arguments (`cargo run --release --example f32_exp_all`) none differ
//! (3 905 did before the check).
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
//! Owns these kernels and their constants; of its parents it uses only
//! the `f64` `exp` kernel (`crate::vmath`'s `exp` module, which uses
//! nothing: no circle of module dependencies, `tests/suite/architecture.rs`).

use super::table32::{
    library_exp, BAND_HI, BAND_LO, C32, H32, HI32, LO32, MID_BITS, NEAR, SHIFT32,
};
use super::tanh32;
use std::arch::x86_64::*;

/// The `f32` lanes' constants (module doc): `32/ln2`, `ln2/32` rounded to
/// `f32` and the rest of it, `1.5·2^23` (`y + SHIFT32` rounds `y` to an
/// integer, `k`, in the low bits).
const INV32: f32 = 46.16624;
const LH32: f32 = 0.02166085;
/// `-(ln2/32 - LH32)`, rounded.
const NLL32: f32 = 5.9520444e-11;
/// `2^-34`: a lane is hard where `s + tail ± HARD` round apart (`s`
/// lies in `[0.97, 2.03]`, so that is at least `2^-35.03` relative, 1.3
/// times the kernel's error bound, `2^-36`, with the roundings of `tail ±
/// HARD`, below `2^-36.9`, on top; module doc).
const HARD: f32 = 5.820_766e-11;

/// The tables of one call, in registers.
#[derive(Clone, Copy)]
struct Consts {
    h0: __m512,
    h1: __m512,
    c0: __m512,
    c1: __m512,
}

/// The tables, loaded.
#[inline]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
fn consts() -> Consts {
    // SAFETY: `H32` and `C32` hold 32 floats each.
    unsafe {
        Consts {
            h0: _mm512_loadu_ps(H32.as_ptr()),
            h1: _mm512_loadu_ps(H32.as_ptr().add(16)),
            c0: _mm512_loadu_ps(C32.as_ptr()),
            c1: _mm512_loadu_ps(C32.as_ptr().add(16)),
        }
    }
}

/// `e^x` of sixteen `f32` lanes in `[-110, 100]` outside the subnormal
/// band (or NaN) in `f32` arithmetic (module doc): `x = k·ln2/32 + r1 +
/// rlo`, `e^x = 2^⌊k/32⌋ · H·(1 + c) · e^r`, `H·(1 + r1)` summed exactly,
/// the rest on top, one rounding, then the exact `scalef`; and the lanes
/// whose rounding the kernel cannot vouch for (their bits set).
#[inline]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
fn exp16(x: __m512, k: Consts) -> (__m512, __mmask16) {
    let ks = _mm512_fmadd_ps(x, _mm512_set1_ps(INV32), _mm512_set1_ps(SHIFT32));
    let kd = _mm512_sub_ps(ks, _mm512_set1_ps(SHIFT32));
    // exact (module doc)
    let r1 = _mm512_fnmadd_ps(kd, _mm512_set1_ps(LH32), x);
    let rlo = _mm512_mul_ps(kd, _mm512_set1_ps(NLL32));
    let idx = _mm512_castps_si512(ks);
    let h = _mm512_permutex2var_ps(k.h0, idx, k.h1);
    let c = _mm512_permutex2var_ps(k.c0, idx, k.c1);
    // z = (e^r1 - 1 - r1) + (rlo + c)·(1 + r1 + r1²/2)
    let q = _mm512_mul_ps(r1, r1);
    let mut p = _mm512_fmadd_ps(r1, _mm512_set1_ps(1.0 / 24.0), _mm512_set1_ps(1.0 / 6.0));
    p = _mm512_fmadd_ps(p, r1, _mm512_set1_ps(0.5));
    let a = _mm512_add_ps(rlo, c);
    let w = _mm512_fmadd_ps(a, _mm512_fmadd_ps(q, _mm512_set1_ps(0.5), r1), a);
    let z = _mm512_fmadd_ps(q, p, w);
    // H + H·r1 as s + (ph - (s - H)) + pl, exactly; H·z on top
    let ph = _mm512_mul_ps(h, r1);
    let pl = _mm512_fmsub_ps(h, r1, ph);
    let s = _mm512_add_ps(h, ph);
    let e = _mm512_add_ps(_mm512_sub_ps(h, s), ph);
    let tail = _mm512_fmadd_ps(h, z, _mm512_add_ps(pl, e));
    // The rounding of `s + tail` is certain where its ends `s + tail ± d`
    // round alike (`d = HARD`, above the error bound; `tail ± d` rounds
    // by far less than `d`), and then `e^x·2^-m` rounds there too: else
    // the lane is hard (about one in 1 000).
    let d = _mm512_set1_ps(HARD);
    let y = _mm512_add_ps(s, _mm512_sub_ps(tail, d));
    let hi = _mm512_add_ps(s, _mm512_add_ps(tail, d));
    // (NaN lanes are not hard: they stay NaN)
    let hard = _mm512_cmp_ps_mask::<_CMP_NEQ_OQ>(y, hi);
    (
        _mm512_scalef_ps(y, _mm512_mul_ps(kd, _mm512_set1_ps(1.0 / 32.0))),
        hard,
    )
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

/// `e^v` of sixteen `f32`s: the `f32` lanes ([`exp16`]), or the library
/// function per lane when a lane is in the subnormal band, and for the
/// lanes whose rounding [`exp16`] cannot vouch for (module doc).
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
        return library_lanes(v, v, !0);
    }
    let (y, hard) = exp16(x, k);
    if hard == 0 {
        return y;
    }
    double_lanes(v, y, hard)
}

/// `y` with the lanes of `hard`'s bits set to the library's `e^v`,
/// rounded, computed in `f64` lanes: the `f64` kernel's `e^v`
/// (`crate::vmath`'s `exp`, within 0.54 ulp of `e^v`; the library's within
/// 0.52, so the two doubles are at most one apart) rounded to `f32` is
/// the library's rounded value unless a rounding boundary of `f32` (a
/// midpoint, whose low 29 significand bits are `2^28`) is within two
/// doubles of it; those lanes (about one hard lane in 10^8) take the
/// library ([`library_lanes`]). `v`'s hard lanes are in `[-110, 100]`
/// outside the subnormal band, so the doubles are normal.
#[cold]
#[inline(never)]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
fn double_lanes(v: __m512, y: __m512, hard: __mmask16) -> __m512 {
    let t = crate::vmath::exp::table512();
    let lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    let hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(
        _mm512_castps_pd(v),
    )));
    let (elo, ehi) = (
        crate::vmath::exp::exp512(&t, lo),
        crate::vmath::exp::exp512(&t, hi),
    );
    let f = _mm512_insertf32x8::<1>(
        _mm512_castps256_ps512(_mm512_cvtpd_ps(elo)),
        _mm512_cvtpd_ps(ehi),
    );
    let out = _mm512_mask_blend_ps(hard, y, f);
    let tough = hard & (u16::from(near(elo)) | (u16::from(near(ehi)) << 8));
    if tough == 0 {
        out
    } else {
        library_lanes(v, out, tough)
    }
}

/// The lanes of `e` within `NEAR` doubles of a midpoint of `f32`
/// (`table32`): `|low - 2^28| ≤ NEAR` (`low` the low `MID_BITS` bits of
/// the significand), as one unsigned compare (below, the difference
/// wraps).
#[inline]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
fn near(e: __m512d) -> __mmask8 {
    let mid = 1i64 << (MID_BITS - 1);
    let low = _mm512_and_si512(_mm512_castpd_si512(e), _mm512_set1_epi64(2 * mid - 1));
    let off = _mm512_sub_epi64(low, _mm512_set1_epi64(mid - NEAR));
    _mm512_cmple_epu64_mask(off, _mm512_set1_epi64(2 * NEAR))
}

/// `y` with the lanes of `hard`'s bits set to the library's `e^v`, rounded.
#[cold]
#[inline(never)]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
fn library_lanes(v: __m512, y: __m512, hard: __mmask16) -> __m512 {
    let (mut a, mut out) = ([0.0f32; 16], [0.0f32; 16]);
    // SAFETY: sixteen floats each way.
    unsafe {
        _mm512_storeu_ps(a.as_mut_ptr(), v);
        _mm512_storeu_ps(out.as_mut_ptr(), y);
    }
    library_exp(&a, &mut out, u32::from(hard));
    // SAFETY: sixteen floats.
    unsafe { _mm512_loadu_ps(out.as_ptr()) }
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
