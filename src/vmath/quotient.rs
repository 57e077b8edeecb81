//! Division of a run by one divisor without the divider: `(x + c) / d`
//! (or `x / d`) in `f64` lanes at AVX-512 and AVX2, **the
//! correctly rounded quotient**, bit for bit what the IEEE division
//! gives (the JIT's row divisions: softmax's `t1[i,j] / t2[i]`, layer
//! normalisation's `(x - mu) / s`): a product and three fused
//! multiply-adds instead of `vdivpd`: on Zen 4, in cache, 0.18 ns per
//! element at AVX-512 (0.25 with one fma and one range compare more, see
//! below; `vdivpd` 0.31), 0.26 at AVX2 (0.30); Zen 4's
//! divider is fast, on Sapphire Rapids `vdivpd` has about half its
//! throughput. `f32` keeps the divider: there the
//! same method measured slower than `vdivps` on Zen 4 (0.13 against
//! 0.10 ns per element).
//!
//! **The method** (Markstein's, as on IBM POWER and Itanium, with the
//! reciprocal as a double-double). Once per call, `y = RN(1/d)` (one
//! scalar division) and its rest `yl = RN(RN(1 - d·y)·y)` (the residual
//! by an fma); per lane, `t` the dividend (`x`, or `RN(x + c)`):
//!
//! ```text
//! q1 = RN(t·y + RN(t·yl))                          (fused multiply-add)
//! r  = RN(t - d·q1)      q = RN(q1 + r·y)          (fused multiply-adds)
//! ```
//!
//! **Why `q = RN(t/d)`.** Let `Q = t/d` and `u = 2^-53`. `y = (1/d)(1 +
//! ε)`, `|ε| ≤ u`, so `1 - d·y = -ε` and `y + (1 - d·y)·y = (1/d)(1 -
//! ε²)`; with the two roundings of `yl` (each `u` of `|yl| ≤ u/|d|`),
//! `y + yl = (1/d)(1 + η)`, `|η| ≤ 1.1·3u²`. `RN(t·yl)` is off by at most
//! `u·|t·yl| ≤ 1.1u²|Q|` (or `2^-1075` when it underflows, far less), so
//! the fma rounds a value within `5u²|Q|` of `Q`: far less than half the
//! spacing of the floats next to `Q` (at least `u|Q|/2`), so `q1` is
//! `Q`'s lower or upper neighbour (faithful).
//! Markstein's theorem (P. Markstein, IBM J. Res. Dev. 34, 1990; the
//! *Handbook of Floating-Point Arithmetic*, §4.7): if `y` is within half
//! an ulp of `1/d` and `q1` is a faithful quotient, the remainder `t -
//! d·q1` is a float (so the fused multiply-add computes it exactly) and
//! `RN(q1 + r·y) = RN(t/d)`: `q` is the IEEE quotient. (Starting from
//! `q1 = RN(t·y)`, up to two ulps off, would need a second correction to
//! become faithful: one fma more per vector.)
//!
//! **Bounds** (where the proof holds; every other lane is divided by the
//! divider, the same quotient): the remainder is exact when `e_d + e_q ≥
//! e_min + p - 1` (its bits are multiples of `ulp(d)·ulp(q)`), which
//! follows from `e_d + e_q ≥ e_t - 1` and `|t| ≥ 2^-800`.
//! No step overflows, and `Q` and `y` are normal, for `|t| ≤ 2^900`
//! and `2^-100 ≤ |d| ≤ 2^100`. A divisor
//! outside its range (zero, subnormal, huge, inf, NaN) sends the whole
//! call to the divider; a lane whose `t` is outside (zeros, whose sign
//! the formula would lose, subnormals, inf, NaN, huge) is recomputed by
//! the divider in its vector (one masked division, only in a vector that
//! has such a lane). `tests/suite/quotient.rs` compares every lane with
//! the IEEE division, bit for bit, at both levels (and the `f32` division).
//!
//! Owns these kernels and their bounds; uses nothing of its parent (no
//! circle of module dependencies, `tests/suite/architecture.rs`).

use std::arch::x86_64::*;

/// The `f64` bounds (module doc): dividends `T_LO..=T_HI` in magnitude,
/// divisors `D_LO..=D_HI`.
const T_LO: f64 = 1.499696813895631e-241; // 2^-800
const T_HI: f64 = 8.452712498170644e270; // 2^900
const D_LO: f64 = 7.888609052210118e-31; // 2^-100
const D_HI: f64 = 1.2676506002282294e30; // 2^100

/// Whether the kernels serve the divisor `d` (`f64`): `2^-100 ≤ |d| ≤
/// 2^100` (no NaN).
pub(super) fn serves(d: f64) -> bool {
    (D_LO..=D_HI).contains(&d.abs())
}

/// One kernel: `$name::<ADD>(src, dst, n, c, d)` writes `dst[i] =
/// (src[i] + c) / d` (`src[i] / d` when `!ADD`) for `i < n`, in vectors
/// of `$w` lanes, the tail in scalar IEEE operations.
macro_rules! kernel {
    ($name:ident, $feat:literal, $t:ty, $w:expr, $v:ty,
     set1 = $set1:ident, load = $load:ident, store = $store:ident,
     add = $add:ident, mul = $mul:ident, fma = $fma:ident, fnma = $fnma:ident,
     $rest:ident ($tv:ident, $dv:ident, $q:ident) => $fix:block) => {
        /// See the module doc.
        ///
        /// # Safety
        /// The level's features are present; `src` has `n` readable
        /// elements and `dst` room for `n`, the two equal or disjoint;
        /// `d` is served ([`serves`]).
        #[target_feature(enable = $feat)]
        pub(super) unsafe fn $name<const ADD: bool>(
            src: *const $t,
            dst: *mut $t,
            n: usize,
            c: $t,
            d: $t,
        ) {
            let y = 1.0 / d;
            // the rest of `1/d`: `1 - d·y` is a float (`y` is `1/d`
            // rounded), the fma gives it exactly
            let yl = (-d).mul_add(y, 1.0) * y;
            let (yv, ylv, $dv, cv) = ($set1(y), $set1(yl), $set1(d), $set1(c));
            let mut i = 0;
            while i + $w <= n {
                // SAFETY: `i + $w <= n` elements at each.
                unsafe {
                    let mut $tv: $v = $load(src.add(i));
                    if ADD {
                        $tv = $add($tv, cv);
                    }
                    let q = $fma($tv, yv, $mul($tv, ylv));
                    let r = $fnma(q, $dv, $tv);
                    let $q = $fma(r, yv, q);
                    let $rest = $fix;
                    $store(dst.add(i), $rest);
                }
                i += $w;
            }
            while i < n {
                // SAFETY: `i < n`.
                unsafe {
                    let x = *src.add(i);
                    *dst.add(i) = if ADD { (x + c) / d } else { x / d };
                }
                i += 1;
            }
        }
    };
}

kernel!(div512, "avx512f,avx512dq,avx512vl,avx2,fma", f64, 8, __m512d,
set1 = _mm512_set1_pd, load = _mm512_loadu_pd, store = _mm512_storeu_pd,
add = _mm512_add_pd, mul = _mm512_mul_pd, fma = _mm512_fmadd_pd, fnma = _mm512_fnmadd_pd,
out (t, dv, q) => {
    // T_LO ≤ |t| ≤ T_HI as one unsigned compare of the bits (below
    // T_LO the difference wraps; a NaN's bits are above T_HI's)
    let a = _mm512_and_si512(_mm512_castpd_si512(t), _mm512_set1_epi64(i64::MAX));
    let off = _mm512_sub_epi64(a, _mm512_set1_epi64(T_LO.to_bits() as i64));
    let ok = _mm512_cmple_epu64_mask(off, _mm512_set1_epi64((T_HI.to_bits() - T_LO.to_bits()) as i64));
    if ok == 0xff { q } else { _mm512_mask_div_pd(q, !ok, t, dv) }
});

kernel!(div256, "avx2,fma", f64, 4, __m256d,
set1 = _mm256_set1_pd, load = _mm256_loadu_pd, store = _mm256_storeu_pd,
add = _mm256_add_pd, mul = _mm256_mul_pd, fma = _mm256_fmadd_pd, fnma = _mm256_fnmadd_pd,
out (t, dv, q) => {
    let a = _mm256_andnot_pd(_mm256_set1_pd(-0.0), t);
    let ok = _mm256_and_pd(
        _mm256_cmp_pd::<_CMP_GE_OQ>(a, _mm256_set1_pd(T_LO)),
        _mm256_cmp_pd::<_CMP_LE_OQ>(a, _mm256_set1_pd(T_HI)),
    );
    if _mm256_movemask_pd(ok) == 0xf { q } else { _mm256_blendv_pd(_mm256_div_pd(t, dv), q, ok) }
});

#[cfg(test)]
mod tests {
    #[test]
    fn the_bounds_are_the_powers_of_two_they_say() {
        assert_eq!(super::T_LO, 2f64.powi(-800));
        assert_eq!(super::T_HI, 2f64.powi(900));
        assert_eq!(super::D_LO, 2f64.powi(-100));
        assert_eq!(super::D_HI, 2f64.powi(100));
    }
}
