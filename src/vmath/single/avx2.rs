//! `exp` of `f32` slices at AVX2 with FMA in eight `f32` lanes, written
//! with `std::arch` intrinsics (the kernel behind `crate::vmath`'s `f32`
//! map and fused sum of `exp` at that level; the other functions widen
//! into the `f64` kernels).
//!
//! The algorithm and its error analysis are the AVX-512 kernel's
//! (`single/avx512.rs`, "exp in f32 lanes") with a sixteen-entry table
//! (`N = 16`: two `vpermps` and a `vblendvps` per table): `k` the
//! nearest integer to `16x/ln2`, `|r1| ≤ ln2/32 + 2^-20 < 2^-5` (still
//! exact: the bits of `x - k·LH16` lie between `2^-5` and `2^-29`), `rlo
//! = -k·LL16` (`|k| ≤ 2540`, below `2^-21.7`), `e^r1 - 1 - r1` to `r1^5`
//! (truncation `r1^6/720 < 2^-42`), the same exact sum `H + H·r1`. `z`
//! is up to four times the AVX-512 kernel's (`|z| < 2^-11.9`), so its
//! roundings weigh `2^-36` and the dropped `(rlo + c)·r1²/2` up to
//! `2^-33`: the result is the correctly rounded value or its neighbour,
//! and the rounded library value but for about one argument in 70 000
//! (measured over all `2^32` inputs: 59 766 differ, none by more than 1
//! ulp, every special exact; at most 0.0064% on dense ranges such as
//! `[10, 88]`; an eight-entry table, one `vpermps`, gave 0.035%).
//! There is no `scalef`: `2^⌊k/16⌋` is two factors `2^m1·2^m2` built in
//! the exponent field (`|mi| ≤ 80`, both normal), the first product
//! exact, the second rounding once. Lanes in the subnormal band (`e^x`
//! subnormal, where that second rounding would round a second time)
//! take the library function, one lane at a time.
//!
//! Owns this kernel and its own constants (the shared ones are
//! `table32`'s); uses nothing of its parents.

use super::table32::{BAND_HI, BAND_LO, C16, H16, HI32, LO32, SHIFT32};
use std::arch::x86_64::*;

/// `16/ln2`, `ln2/16` rounded to `f32` and `-(ln2/16 - LH16)` rounded
/// (the shift, clamp, band and tables: `table32`).
const INV16: f32 = 23.08312;
const LH16: f32 = 0.0433217;
const NLL16: f32 = 1.1904089e-10;
/// The tables, in registers: each as two halves of eight.
struct Tables {
    h0: __m256,
    h1: __m256,
    c0: __m256,
    c1: __m256,
}

/// `e^x` of eight `f32` lanes in `[-110, 100]` (or NaN) in `f32`
/// arithmetic (module doc).
#[inline]
#[target_feature(enable = "avx2,fma")]
fn exp8(x: __m256, t: &Tables) -> __m256 {
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
    let w = _mm256_fmadd_ps(a, r1, a);
    let z = _mm256_fmadd_ps(q, p, w);
    let ph = _mm256_mul_ps(h, r1);
    let pl = _mm256_fmsub_ps(h, r1, ph);
    let s = _mm256_add_ps(h, ph);
    let e = _mm256_add_ps(_mm256_sub_ps(h, s), ph);
    let tail = _mm256_fmadd_ps(h, z, _mm256_add_ps(pl, e));
    let y = _mm256_add_ps(s, tail);
    // 2^m, m = ⌊k/16⌋ (an arithmetic shift of k, the low bits of `ks`)
    let m = _mm256_srai_epi32::<4>(_mm256_sub_epi32(idx, _mm256_set1_epi32(0x4B40_0000)));
    let m1 = _mm256_srai_epi32::<1>(m);
    let m2 = _mm256_sub_epi32(m, m1);
    let b = _mm256_set1_epi32(127);
    let p1 = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(m1, b)));
    let p2 = _mm256_castsi256_ps(_mm256_slli_epi32::<23>(_mm256_add_epi32(m2, b)));
    _mm256_mul_ps(_mm256_mul_ps(y, p1), p2)
}

/// `e^v` of eight `f32`s into `out`: the `f32` lanes, or the library
/// function per lane when a lane is in the subnormal band.
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
        let mut a = [0.0f32; 8];
        // SAFETY: eight floats each way.
        unsafe {
            _mm256_storeu_ps(a.as_mut_ptr(), v);
            for y in &mut a {
                *y = f64::from(*y).exp() as f32;
            }
            return _mm256_loadu_ps(a.as_ptr());
        }
    }
    exp8(x, t)
}

/// `dst[i] = e^(src[i] + c)` (`e^src[i]` when `!ADD`; the sum rounded
/// to `f32`) for `i < n`, in `f32` lanes (module doc).
///
/// # Safety
/// AVX2 and FMA are present; `src` points to `n` initialised `f32`s and
/// `dst` to room for `n`, the two equal or disjoint.
#[target_feature(enable = "avx2,fma")]
pub(crate) unsafe fn exp256<const ADD: bool>(src: *const f32, dst: *mut f32, n: usize, c: f32) {
    // SAFETY: `H16` and `C16` hold sixteen floats each.
    let t = unsafe {
        Tables {
            h0: _mm256_loadu_ps(H16.as_ptr()),
            h1: _mm256_loadu_ps(H16.as_ptr().add(8)),
            c0: _mm256_loadu_ps(C16.as_ptr()),
            c1: _mm256_loadu_ps(C16.as_ptr().add(8)),
        }
    };
    let cv = _mm256_set1_ps(c);
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: eight elements from `i` at each (loaded before the
        // store: `src` may be `dst`).
        unsafe {
            let mut v = _mm256_loadu_ps(src.add(i));
            if ADD {
                v = _mm256_add_ps(v, cv);
            }
            _mm256_storeu_ps(dst.add(i), exp_f32(v, &t));
        }
        i += 8;
    }
    if i < n {
        // the tail through a buffer of eight (unused lanes +0)
        let mut a = [0.0f32; 8];
        // SAFETY: `n - i < 8` elements at each from `i`.
        unsafe {
            std::ptr::copy_nonoverlapping(src.add(i), a.as_mut_ptr(), n - i);
            let mut v = _mm256_loadu_ps(a.as_ptr());
            if ADD {
                v = _mm256_add_ps(v, cv);
            }
            _mm256_storeu_ps(a.as_mut_ptr(), exp_f32(v, &t));
            std::ptr::copy_nonoverlapping(a.as_ptr(), dst.add(i), n - i);
        }
    }
}
