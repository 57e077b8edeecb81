//! `exp` of `f32` slices at AVX2 with FMA in eight `f32` lanes, and
//! `tanh` in double lanes (`tanh256`), written with `std::arch`
//! intrinsics (the kernels behind `crate::vmath`'s `f32` maps and fused
//! sums of these two at that level; the other functions widen into the
//! `f64` kernels).
//!
//! The algorithm and its error analysis are the AVX-512 kernel's
//! (`single/avx512.rs`, "exp in f32 lanes") with a sixteen-entry table
//! (`N = 16`: two `vpermps` and a `vblendvps` per table): `k` the
//! nearest integer to `16x/ln2`, `|r1| ≤ ln2/32 + 2^-20 < 2^-5` (still
//! exact: the bits of `x - k·LH16` lie between `2^-5` and `2^-29`), `rlo
//! = -k·LL16` (`|k| ≤ 2540`, below `2^-21.7`), `e^r1 - 1 - r1` to `r1^5`
//! (truncation `r1^6/720 < 2^-42`), the same exact sum `H + H·r1`. `z`
//! is up to four times the AVX-512 kernel's (`|z| < 2^-11.9`), so its
//! roundings weigh `2^-36`; `(rlo + c)·e^r1` is taken to second order
//! (`(rlo + c)·(1 + r1 + r1²/2)`, the dropped third-order term below
//! `2^-39`), so `s + tail` is within about `2^-35.5` of `e^x·2^-m`.
//!
//! **Equal to the library.** The kernel then checks its own rounding:
//! where `s + tail - d` and `s + tail + d` (`d = H·2^-34`, 1.8 times that
//! bound with the roundings of `tail ± d`, below `2^-34.9`, added) round
//! to different floats, the exact value may lie on either side of a
//! midpoint, and the lane is *hard* and takes the library's `exp`,
//! rounded (about 0.14% of lanes, one vector in 100), computed in `f64`
//! lanes by the `f64` kernel as at AVX-512 (`double_lanes`); elsewhere
//! both round to the correctly rounded value, which is the rounded
//! library value (the library's own
//! error is far inside the margin). So every result is the
//! interpreter's `F32` value bit for bit: checked over all `2^32`
//! arguments (`cargo run --release --example f32_exp_all`: none differ;
//! 59 766 did before the check, and `tests/suite/f32.rs`'s bit-for-bit
//! map tests failed on Zen 3). The check costs its operations: on Zen 3,
//! 0.95 ns per element without it, 1.42 with an earlier form of it (the
//! distance of the residual from half an ulp, and powers of two apart).
//! There is no `scalef`: `2^⌊k/16⌋` is two factors `2^m1·2^m2` built in
//! the exponent field (`|mi| ≤ 80`, both normal), the first product
//! exact, the second rounding once. Lanes in the subnormal band (`e^x`
//! subnormal, where that second rounding would round a second time)
//! take the library function, one lane at a time.
//!
//! Owns these kernels and their own constants (the shared ones are
//! `table32`'s); of its parents it uses only the `f64` `exp` kernel
//! (`crate::vmath`'s `exp` module, which uses nothing).

use super::table32::{
    library_exp, BAND_HI, BAND_LO, C16, H16, HI32, LO32, MID_BITS, NEAR, SHIFT32,
};
use std::arch::x86_64::*;

/// `16/ln2`, `ln2/16` rounded to `f32` and `-(ln2/16 - LH16)` rounded
/// (the shift, clamp, band and tables: `table32`).
const INV16: f32 = 23.08312;
const LH16: f32 = 0.0433217;
const NLL16: f32 = 1.1904089e-10;
/// `2^-34`: a lane is hard where `s + tail ± H·HARD` round apart (module
/// doc; `HARD` is above the error bound, about `2^-35.5`, with the
/// roundings of `tail ± d` added).
const HARD: f32 = 5.820_766e-11;
/// The tables, in registers: each as two halves of eight.
struct Tables {
    h0: __m256,
    h1: __m256,
    c0: __m256,
    c1: __m256,
}

/// [`H16`] and [`C16`], loaded.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn tables() -> Tables {
    // SAFETY: `H16` and `C16` hold sixteen floats each.
    unsafe {
        Tables {
            h0: _mm256_loadu_ps(H16.as_ptr()),
            h1: _mm256_loadu_ps(H16.as_ptr().add(8)),
            c0: _mm256_loadu_ps(C16.as_ptr()),
            c1: _mm256_loadu_ps(C16.as_ptr().add(8)),
        }
    }
}

/// `e^x` of eight `f32` lanes in `[-110, 100]` (or NaN) in `f32`
/// arithmetic (module doc), and the lanes whose rounding the kernel cannot
/// vouch for (all ones there).
#[inline]
#[target_feature(enable = "avx2,fma")]
fn exp8(x: __m256, t: &Tables) -> (__m256, __m256) {
    let ks = _mm256_fmadd_ps(x, _mm256_set1_ps(INV16), _mm256_set1_ps(SHIFT32));
    let kd = _mm256_sub_ps(ks, _mm256_set1_ps(SHIFT32));
    // exact (module doc)
    let r1 = _mm256_fnmadd_ps(kd, _mm256_set1_ps(LH16), x);
    let rlo = _mm256_mul_ps(kd, _mm256_set1_ps(NLL16));
    let idx = _mm256_castps_si256(ks);
    // j = k mod 16: the entry of each half (`vpermps` reads the low three
    // bits), the half by bit 3 (moved to the sign for `vblendvps`)
    let hi = _mm256_castsi256_ps(_mm256_slli_epi32::<28>(idx));
    let h = _mm256_blendv_ps(
        _mm256_permutevar8x32_ps(t.h0, idx),
        _mm256_permutevar8x32_ps(t.h1, idx),
        hi,
    );
    let c = _mm256_blendv_ps(
        _mm256_permutevar8x32_ps(t.c0, idx),
        _mm256_permutevar8x32_ps(t.c1, idx),
        hi,
    );
    let q = _mm256_mul_ps(r1, r1);
    let mut p = _mm256_fmadd_ps(r1, _mm256_set1_ps(1.0 / 120.0), _mm256_set1_ps(1.0 / 24.0));
    p = _mm256_fmadd_ps(p, r1, _mm256_set1_ps(1.0 / 6.0));
    p = _mm256_fmadd_ps(p, r1, _mm256_set1_ps(0.5));
    let a = _mm256_add_ps(rlo, c);
    // a·(1 + r1 + r1²/2): (rlo + c)·e^r1 to second order
    let w = _mm256_fmadd_ps(a, _mm256_fmadd_ps(q, _mm256_set1_ps(0.5), r1), a);
    let z = _mm256_fmadd_ps(q, p, w);
    let ph = _mm256_mul_ps(h, r1);
    let pl = _mm256_fmsub_ps(h, r1, ph);
    let s = _mm256_add_ps(h, ph);
    let e = _mm256_add_ps(_mm256_sub_ps(h, s), ph);
    let tail = _mm256_fmadd_ps(h, z, _mm256_add_ps(pl, e));
    // The rounding of `s + tail` is certain where its ends `s + tail ± d`
    // round alike (`d = H·HARD`, above the error bound and the roundings
    // of `tail ± d`, below 2^-34.9), and then `e^x·2^-m` rounds there too:
    // else the lane is hard (about 0.14%).
    let d = _mm256_mul_ps(h, _mm256_set1_ps(HARD));
    let y = _mm256_add_ps(s, _mm256_sub_ps(tail, d));
    let hi = _mm256_add_ps(s, _mm256_add_ps(tail, d));
    // (NaN lanes are not hard: they stay NaN)
    let hard = _mm256_cmp_ps::<_CMP_NEQ_OQ>(y, hi);
    // 2^m, m = ⌊k/16⌋ (an arithmetic shift of k, the low bits of `ks`)
    let m = _mm256_srai_epi32::<4>(_mm256_sub_epi32(idx, _mm256_set1_epi32(0x4B40_0000)));
    let m1 = _mm256_srai_epi32::<1>(m);
    let m2 = _mm256_sub_epi32(m, m1);
    let b = _mm256_set1_epi32(127);
    let p1 = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(m1, b)));
    let p2 = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(m2, b)));
    (_mm256_mul_ps(_mm256_mul_ps(y, p1), p2), hard)
}

/// `e^v` of eight `f32`s: the `f32` lanes, or the library function per
/// lane when a lane is in the subnormal band, and for the lanes whose
/// rounding [`exp8`] cannot vouch for.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn exp_f32(v: __m256, t: &Tables) -> __m256 {
    // (the clamp in `f32`, NaN passing: `max`/`min` return their second
    // operand for a NaN)
    let x = _mm256_min_ps(_mm256_set1_ps(HI32), _mm256_max_ps(_mm256_set1_ps(LO32), v));
    let band = _mm256_and_ps(
        _mm256_cmp_ps::<_CMP_LT_OQ>(x, _mm256_set1_ps(BAND_HI)),
        _mm256_cmp_ps::<_CMP_GT_OQ>(x, _mm256_set1_ps(BAND_LO)),
    );
    if _mm256_movemask_ps(band) != 0 {
        return library_lanes(v, v, 0xff);
    }
    let (y, hard) = exp8(x, t);
    if _mm256_movemask_ps(hard) == 0 {
        return y;
    }
    double_lanes(v, y, hard)
}

/// The lanes of `e` within `NEAR` doubles of a midpoint of `f32`
/// (`table32`): `|low - 2^28| ≤ NEAR` (`low` the low `MID_BITS` bits of
/// the significand), as bits.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn near(e: __m256d) -> i32 {
    let mid = 1i64 << (MID_BITS - 1);
    let low = _mm256_and_si256(_mm256_castpd_si256(e), _mm256_set1_epi64x(2 * mid - 1));
    let above = _mm256_cmpgt_epi64(low, _mm256_set1_epi64x(mid - NEAR - 1));
    let below = _mm256_cmpgt_epi64(_mm256_set1_epi64x(mid + NEAR + 1), low);
    _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_and_si256(above, below)))
}

/// `y` with the lanes set in the mask `hard` set to the library's `e^v`,
/// rounded, computed in `f64` lanes by the `f64` kernel (`crate::vmath`'s
/// `exp`), as at AVX-512 (`single/avx512.rs`, `double_lanes`, says why
/// that is the library's rounded value); the lanes within `NEAR` doubles
/// of a midpoint of `f32` take the library ([`library_lanes`]).
#[cold]
#[inline(never)]
#[target_feature(enable = "avx2,fma")]
fn double_lanes(v: __m256, y: __m256, hard: __m256) -> __m256 {
    let lo = crate::vmath::exp::exp256(_mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    let hi = crate::vmath::exp::exp256(_mm256_cvtps_pd(_mm256_extractf128_ps::<1>(v)));
    let f = _mm256_insertf128_ps::<1>(
        _mm256_castps128_ps256(_mm256_cvtpd_ps(lo)),
        _mm256_cvtpd_ps(hi),
    );
    let out = _mm256_blendv_ps(y, f, hard);
    let tough = _mm256_movemask_ps(hard) & (near(lo) | (near(hi) << 4));
    if tough == 0 {
        out
    } else {
        library_lanes(v, out, tough)
    }
}

/// `y` with the lanes of `hard`'s bits set to the library's `e^v`, rounded.
#[cold]
#[inline(never)]
#[target_feature(enable = "avx2,fma")]
fn library_lanes(v: __m256, y: __m256, hard: i32) -> __m256 {
    let (mut a, mut out) = ([0.0f32; 8], [0.0f32; 8]);
    // SAFETY: eight floats each way.
    unsafe {
        _mm256_storeu_ps(a.as_mut_ptr(), v);
        _mm256_storeu_ps(out.as_mut_ptr(), y);
    }
    library_exp(&a, &mut out, hard as u32);
    // SAFETY: eight floats.
    unsafe { _mm256_loadu_ps(out.as_ptr()) }
}

/// `dst[i] = g(src[i] + c)` (`g(src[i])` when `!ADD`; the sum rounded
/// to `f32`) for `i < n`, `g` the vector function of eight `f32`s `$g` of
/// the loaded vector; the tail through a buffer of eight (unused lanes
/// +0).
macro_rules! map_loop {
    ($src:ident, $dst:ident, $n:ident, $c:ident, $add:ident, |$v:ident| $g:expr) => {{
        let cv = _mm256_set1_ps($c);
        let mut i = 0;
        while i + 8 <= $n {
            // SAFETY: eight elements from `i` at each (loaded before the
            // store: `src` may be `dst`).
            unsafe {
                let mut $v = _mm256_loadu_ps($src.add(i));
                if $add {
                    $v = _mm256_add_ps($v, cv);
                }
                _mm256_storeu_ps($dst.add(i), $g);
            }
            i += 8;
        }
        if i < $n {
            let mut a = [0.0f32; 8];
            // SAFETY: `n - i < 8` elements at each from `i`.
            unsafe {
                std::ptr::copy_nonoverlapping($src.add(i), a.as_mut_ptr(), $n - i);
                let mut $v = _mm256_loadu_ps(a.as_ptr());
                if $add {
                    $v = _mm256_add_ps($v, cv);
                }
                _mm256_storeu_ps(a.as_mut_ptr(), $g);
                std::ptr::copy_nonoverlapping(a.as_ptr(), $dst.add(i), $n - i);
            }
        }
    }};
}

/// `dst[i] = e^(src[i] + c)` (`e^src[i]` when `!ADD`; the sum rounded
/// to `f32`) for `i < n`, in `f32` lanes (module doc).
///
/// # Safety
/// AVX2 and FMA are present; `src` points to `n` initialised `f32`s and
/// `dst` to room for `n`, the two equal or disjoint.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn exp256<const ADD: bool>(src: *const f32, dst: *mut f32, n: usize, c: f32) {
    let t = tables();
    map_loop!(src, dst, n, c, ADD, |v| exp_f32(v, &t))
}

/// `1.5·2^52`: `y + SHIFT64` rounds `y` to an integer, `k`, in the low
/// bits.
const SHIFT64: f64 = 6_755_399_441_055_744.0;
/// `ln2` split as fdlibm's (`LN2_HI` has 32 significant bits, so
/// `k·LN2_HI` is exact for `|k| < 2^21`).
const LN2_HI: f64 = 6.931_471_803_691_238_2e-1;
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;

/// `tanh(a)` of four doubles (widened `f32`s, `a = |x|`, or NaN), before
/// the final rounding, within about `2^-44` of it (module doc of
/// `tanh256`).
#[inline]
#[target_feature(enable = "avx2,fma")]
fn tanh4(a: __m256d) -> __m256d {
    // (NaN passes: `min` returns its second operand then)
    let x = _mm256_min_pd(_mm256_set1_pd(10.0), a);
    let x = _mm256_add_pd(x, x);
    // e^x = 2^k·e^r, |r| ≤ ln2/2, e^r by Taylor to r^11
    let ks = _mm256_fmadd_pd(
        x,
        _mm256_set1_pd(std::f64::consts::LOG2_E),
        _mm256_set1_pd(SHIFT64),
    );
    let kd = _mm256_sub_pd(ks, _mm256_set1_pd(SHIFT64));
    let r = _mm256_fnmadd_pd(kd, _mm256_set1_pd(LN2_HI), x);
    let r = _mm256_fnmadd_pd(kd, _mm256_set1_pd(LN2_LO), r);
    let mut p = _mm256_set1_pd(1.0 / 39_916_800.0);
    for c in [
        1.0 / 3_628_800.0,
        1.0 / 362_880.0,
        1.0 / 40_320.0,
        1.0 / 5_040.0,
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
        1.0,
    ] {
        p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(c));
    }
    // e^r - 1 = r·p, e^x - 1 = 2^k·(r·p) + (2^k - 1) (exact for small k)
    let scale = _mm256_castsi256_pd(_mm256_add_epi64(
        _mm256_slli_epi64::<52>(_mm256_castpd_si256(ks)),
        _mm256_set1_epi64x(1023 << 52),
    ));
    let one = _mm256_set1_pd(1.0);
    let num = _mm256_fmadd_pd(_mm256_mul_pd(r, p), scale, _mm256_sub_pd(scale, one));
    let den = _mm256_add_pd(num, _mm256_set1_pd(2.0));
    let q = _mm256_div_pd(num, den);
    // a < 1/16: a + a³·P(a²), Taylor to a^9
    let a2 = _mm256_mul_pd(a, a);
    let mut s = _mm256_fmadd_pd(
        _mm256_set1_pd(62.0 / 2835.0),
        a2,
        _mm256_set1_pd(-17.0 / 315.0),
    );
    s = _mm256_fmadd_pd(s, a2, _mm256_set1_pd(2.0 / 15.0));
    s = _mm256_fmadd_pd(s, a2, _mm256_set1_pd(-1.0 / 3.0));
    let t = _mm256_fmadd_pd(_mm256_mul_pd(a, a2), s, a);
    let small = _mm256_cmp_pd::<_CMP_LT_OQ>(a, _mm256_set1_pd(1.0 / 16.0));
    _mm256_blendv_pd(q, t, small)
}

/// `tanh` of eight `f32`s: `|x|` widened in two halves, [`tanh4`] of
/// each rounded once to `f32`, `x`'s sign put back.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn tanh_f32(v: __m256) -> __m256 {
    let sign_bit = _mm256_set1_ps(-0.0);
    let sign = _mm256_and_ps(v, sign_bit);
    let a = _mm256_andnot_ps(sign_bit, v);
    let lo = _mm256_cvtpd_ps(tanh4(_mm256_cvtps_pd(_mm256_castps256_ps128(a))));
    let hi = _mm256_cvtpd_ps(tanh4(_mm256_cvtps_pd(_mm256_extractf128_ps::<1>(a))));
    _mm256_or_ps(_mm256_set_m128(hi, lo), sign)
}

/// `dst[i] = tanh(src[i] + c)` (`tanh(src[i])` when `!ADD`; the sum
/// rounded to `f32`) for `i < n`, each the `f32` of double lanes.
///
/// **tanh in double lanes.** On `a = |x|` (the sign put back at the
/// end): below `1/16` the Taylor polynomial `a + a³·P(a²)` to `a^9`
/// (truncation below `2^-46` relative; ±0 and subnormal `x` give `x`),
/// else `m/(m + 2)`, `m = e^{2·min(a, 10)} - 1` (from `a = 10` the
/// quotient rounds to 1 in `f32`, as `tanh` does from 9.01). `e^y` is
/// `2^k·e^r`, `k` the nearest integer to `y/ln2` (`0 ≤ k ≤ 29`), `r = y -
/// k·ln2` by fdlibm's two-part `ln2` (error below `2^-60`), `e^r - 1 =
/// r·p(r)` to `r^11` (`|r| ≤ ln2/2`, truncation below `2^-44` relative),
/// `m = 2^k·(r·p) + (2^k - 1)` (`2^k - 1` exact). `m` is within about
/// `2^-50` relative of `e^y - 1`, so the correctly rounded quotient is
/// within `2^-49` of `tanh(a)`. The double is rounded once to `f32`: the
/// correctly rounded value or its neighbour, the library's rounded value
/// but where `tanh(a)` lies within about `2^-25` ulp of a midpoint
/// (`tests/suite/vmath_f32.rs` counts them). ±inf gives ±1, NaN a NaN.
///
/// # Safety
/// As [`exp256`].
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn tanh256<const ADD: bool>(src: *const f32, dst: *mut f32, n: usize, c: f32) {
    map_loop!(src, dst, n, c, ADD, |v| tanh_f32(v))
}

/// `Σ e^(src[i] + c)` (`Σ e^src[i]` when `!ADD`) for `i < n`: the terms
/// of [`exp256`], added in registers as `crate::vmath`'s `fused_sum!`
/// says (bit for bit `run_sum` of the map).
///
/// # Safety
/// AVX2 and FMA are present; `src` points to `n` initialised `f32`s.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn exp_sum256<const ADD: bool>(src: *const f32, n: usize, c: f32) -> f32 {
    let t = tables();
    let cv = _mm256_set1_ps(c);
    fused_sum!(
        ps256,
        src,
        n,
        |v| exp_f32(if ADD { _mm256_add_ps(v, cv) } else { v }, &t),
        // SAFETY: the tail's `len` elements and room for them.
        tail = |s, d, len| unsafe { exp256::<ADD>(s, d, len, c) }
    )
}

/// `Σ tanh(src[i] + c)` (`Σ tanh(src[i])` when `!ADD`) for `i < n`: the
/// terms of [`tanh256`], added in registers as `crate::vmath`'s
/// `fused_sum!` says.
///
/// # Safety
/// As [`exp_sum256`].
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn tanh_sum256<const ADD: bool>(src: *const f32, n: usize, c: f32) -> f32 {
    let cv = _mm256_set1_ps(c);
    fused_sum!(
        ps256,
        src,
        n,
        |v| tanh_f32(if ADD { _mm256_add_ps(v, cv) } else { v }),
        // SAFETY: the tail's `len` elements and room for them.
        tail = |s, d, len| unsafe { tanh256::<ADD>(s, d, len, c) }
    )
}
