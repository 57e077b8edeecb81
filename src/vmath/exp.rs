//! `exp` over slices on the vector unit, written with `std::arch`
//! intrinsics (the other functions of [`crate::vmath`] are scalar lane
//! code the compiler vectorises; `exp` is most of the cost of
//! log-sum-exp and softmax, so it has kernels of its own).
//!
//! **AVX-512** ([`map512`]): `x = (16m + j)·ln2/16 + r`, `|r| ≤ ln2/32`
//! (`k = 16m + j` the nearest integer to `16x/ln2`), and
//! `e^x = 2^m · 2^(j/16) · e^r`. The sixteen `2^(j/16)` are held in
//! registers as double-doubles `Th + Tl` (two `vpermt2pd` look-ups of
//! the low four bits of `k`); `e^r - 1 = p = r + r²·q(r)`, `q` the
//! Taylor polynomial to `r^7` (truncation below `2^-62` relative);
//! `v = Th + (Th·p + Tl)` and the result is `scalef(v, m)`, which
//! rounds to +inf above the largest double and through the subnormals
//! to +0 below them, so every finite `x` is on the vector path (the
//! argument is first clamped to `±1e4`, NaN passing through: the
//! result is NaN). No branch and no library call.
//!
//! Error bound (in ulps of the result, normal results): the reduction
//! `t = x - k·L_hi` is exact (`L_hi` has 32 significant bits, `|k| <
//! 2^18`), `r = t - k·L_lo` rounds once (`|r| < 2^-5`, so at most
//! `2^-59` absolute, 1/128 ulp); the polynomial's evaluation errors are
//! below `2^-64` relative (`r²·q ≤ 2.4e-4`); `Th·p + Tl` rounds once
//! (`|Th·p| < 0.045`: at most `2^-58`, 1/64 ulp), `Tl`'s own error and
//! the dropped `Tl·p` are below 1/100 ulp; the sum `Th + (…)` rounds
//! once (½ ulp). So a lane is within about 0.54 ulp of `e^x`, and the
//! library's result (within 0.502) at most one ulp from it. A
//! subnormal result is `v·2^m` rounded once more (half an ulp of the
//! subnormal plus `v`'s error, far below one).
//!
//! **AVX2** ([`map256`]): the same operations on four lanes, the table
//! read by four 16-byte loads of `[Th, Tl]` pairs (AVX2 has no
//! two-register permute; on Zen 3 this made the map 1.5 times as fast as
//! two gathers did, and `vpermps` look-ups were slower still) and `2^m`
//! added to the result's exponent, which is `scalef`'s value while the
//! result is normal: for `|x| < 708` the bits are [`map512`]'s. A vector
//! with a lane outside (or NaN) computes on clamped arguments and sets
//! those lanes to the library's result (+inf from 746 on, +0 from -746
//! down, `f64::exp` in between: subnormal results, the last 1.8 before
//! overflow, NaN).
//!
//! Owns the AVX-512 and AVX2 `exp` kernels and their constants. The
//! dispatch lives in `crate::vmath`'s `x86` module: this module uses
//! nothing of its parent (no circle of module dependencies,
//! `tests/suite/architecture.rs`); the `f32` kernels (`single/avx512.rs`,
//! `single/avx2.rs`) compute their hard lanes by [`exp512`] and
//! [`exp256`].

use std::arch::x86_64::*;

/// `1.5·2^52`: `y + SHIFT` rounds `y` to an integer in the low bits.
const SHIFT: f64 = 6755399441055744.0;
/// `16/ln2`.
const INV_L: f64 = 23.083120654223414;
/// `ln2/16` split: fdlibm's `ln2_hi` (32 significant bits) and
/// `ln2_lo`, over 16.
const L_HI: f64 = 6.931_471_803_691_238_164_90e-01 / 16.0;
const L_LO: f64 = 1.908_214_929_270_587_700_02e-10 / 16.0;
/// Arguments are clamped to `±CLAMP` (far beyond overflow/underflow).
const CLAMP: f64 = 1e4;

/// `2^(j/16)` rounded (high parts) ...
static TH: [f64; 16] = [
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
    1.9152065613971474,
];
/// ... and the rest, `2^(j/16) - TH[j]` rounded.
static TL: [f64; 16] = [
    0.0,
    8.551889705537965e-17,
    -3.046782079812471e-17,
    8.912812676025408e-17,
    3.982015231465646e-17,
    4.658027591836937e-17,
    2.5382502794888315e-17,
    7.70094837980299e-17,
    -9.667293313452913e-17,
    -3.483994556892796e-17,
    7.949834809697621e-17,
    2.4707192569797888e-17,
    8.199010020581497e-17,
    2.960140695448873e-17,
    3.283107224245627e-17,
    -1.0619946056195963e-16,
];

/// `q(r) = (e^r - 1 - r)/r²` to `r^5` (Taylor: `1/2, 1/6, …, 1/7!`).
const Q: [f64; 6] = [
    1.0 / 2.0,
    1.0 / 6.0,
    1.0 / 24.0,
    1.0 / 120.0,
    1.0 / 720.0,
    1.0 / 5040.0,
];

/// The table in four registers.
pub(super) struct Table512 {
    h0: __m512d,
    h1: __m512d,
    l0: __m512d,
    l1: __m512d,
}

#[inline]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
pub(super) fn table512() -> Table512 {
    // SAFETY: each load reads 8 of the 16 elements of a static.
    unsafe {
        Table512 {
            h0: _mm512_loadu_pd(TH.as_ptr()),
            h1: _mm512_loadu_pd(TH.as_ptr().add(8)),
            l0: _mm512_loadu_pd(TL.as_ptr()),
            l1: _mm512_loadu_pd(TL.as_ptr().add(8)),
        }
    }
}

/// `e^x` of eight lanes (see the module's comment; `f32`'s AVX-512 `exp`
/// computes its hard lanes by it too).
#[inline]
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
pub(super) fn exp512(t: &Table512, x: __m512d) -> __m512d {
    let set = _mm512_set1_pd;
    // (the argument second: a NaN passes through max and min)
    let x = _mm512_min_pd(set(CLAMP), _mm512_max_pd(set(-CLAMP), x));
    // `k/16` directly (`ks/16` of AVX2's form, scaled by a power of two:
    // the same rounding, the same low bits), so `scalef` takes it as it
    // is; `(k/16)·16·L_hi` is `k·L_hi` exactly, `r` the same bits
    let ks = _mm512_fmadd_pd(x, set(INV_L / 16.0), set(SHIFT / 16.0));
    let kd = _mm512_sub_pd(ks, set(SHIFT / 16.0));
    let r = _mm512_fnmadd_pd(kd, set(L_HI * 16.0), x);
    let r = _mm512_fnmadd_pd(kd, set(L_LO * 16.0), r);
    let mut q = set(Q[5]);
    for c in Q[..5].iter().rev() {
        q = _mm512_fmadd_pd(q, r, set(*c));
    }
    let p = _mm512_fmadd_pd(_mm512_mul_pd(r, r), q, r);
    // the low four bits of k index the table (bit 3: which register)
    let j = _mm512_castpd_si512(ks);
    let th = _mm512_permutex2var_pd(t.h0, j, t.h1);
    let tl = _mm512_permutex2var_pd(t.l0, j, t.l1);
    let v = _mm512_add_pd(th, _mm512_fmadd_pd(th, p, tl));
    // 2^floor(k/16)
    _mm512_scalef_pd(v, kd)
}

/// `dst[i] = e^(src[i] + c)` (`e^src[i]` when `!ADD`) for `i < n`, on
/// AVX-512; `src == dst` is allowed.
///
/// # Safety
/// AVX-512 F/DQ/VL are present; `src` points to `n` initialised
/// doubles and `dst` to room for `n`, the two equal or disjoint.
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
pub(super) unsafe fn map512<const ADD: bool>(src: *const f64, dst: *mut f64, n: usize, c: f64) {
    let t = table512();
    let cv = _mm512_set1_pd(c);
    let mut i = 0;
    while i + 8 <= n {
        // SAFETY: `i + 8 <= n` elements at each.
        unsafe {
            let mut x = _mm512_loadu_pd(src.add(i));
            if ADD {
                x = _mm512_add_pd(x, cv);
            }
            _mm512_storeu_pd(dst.add(i), exp512(&t, x));
        }
        i += 8;
    }
    if i < n {
        let m: __mmask8 = (1u8 << (n - i)) - 1;
        // SAFETY: the masked lanes are the `n - i` elements left (the
        // others are neither read nor written).
        unsafe {
            let mut x = _mm512_maskz_loadu_pd(m, src.add(i));
            if ADD {
                x = _mm512_add_pd(x, cv);
            }
            _mm512_mask_storeu_pd(dst.add(i), m, exp512(&t, x));
        }
    }
}

/// AVX2's core domain: `|x|` below this, `e^x` is a normal double
/// ([`map256`] computes it on the vector path).
const CORE2: f64 = 708.0;
/// From here on `e^x` is +inf, and +0 from `-EDGE2` down (the library's
/// results: `e^x` overflows from 709.78…, and is below half the smallest
/// subnormal from -745.13…).
const EDGE2: f64 = 746.0;

/// The pieces of `e^(k·ln2/16 + r)` on four lanes for [`exp256`]: `p = e^r - 1` (`r + r²·q(r)`,
/// Taylor to `r^7`), the integer `k` from the bits of `ks = x·16/ln2 +
/// SHIFT` (less SHIFT's, two's complement), and `2^(j/16) = th + tl`,
/// `j = k mod 16`, from the table: the four `j`s through memory, one
/// 16-byte load of `[TH[j], TL[j]]` ([`T2`]) per lane, transposed.
#[inline]
#[target_feature(enable = "avx2,fma")]
fn parts256(r: __m256d, ks: __m256d) -> (__m256d, __m256i, __m256d, __m256d) {
    let set = _mm256_set1_pd;
    let mut q = set(Q[5]);
    for c in Q[..5].iter().rev() {
        q = _mm256_fmadd_pd(q, r, set(*c));
    }
    let p = _mm256_fmadd_pd(_mm256_mul_pd(r, r), q, r);
    let k = _mm256_sub_epi64(_mm256_castpd_si256(ks), _mm256_castpd_si256(set(SHIFT)));
    let j = _mm256_and_si256(k, _mm256_set1_epi64x(15));
    let mut js = [0u64; 4];
    // SAFETY: room for four; every index is below 16, `T2`'s length.
    let (th, tl) = unsafe {
        _mm256_storeu_si256(js.as_mut_ptr().cast(), j);
        let e = |q: usize| _mm_loadu_pd(T2.get_unchecked(js[q] as usize).as_ptr());
        let lo = _mm256_insertf128_pd::<1>(_mm256_castpd128_pd256(e(0)), e(2));
        let hi = _mm256_insertf128_pd::<1>(_mm256_castpd128_pd256(e(1)), e(3));
        (_mm256_unpacklo_pd(lo, hi), _mm256_unpackhi_pd(lo, hi))
    };
    (p, k, th, tl)
}

/// `[TH[j], TL[j]]` side by side: one 16-byte load reads both.
static T2: [[f64; 2]; 16] = {
    let mut t = [[0.0; 2]; 16];
    let mut j = 0;
    while j < 16 {
        t[j] = [TH[j], TL[j]];
        j += 1;
    }
    t
};

/// `e^x` of four lanes with `|x| < 708`: [`exp512`]'s operations, the
/// table read by loads ([`parts256`]; AVX2 has no two-register permute) and `2^m`
/// added to the exponent (the result is normal, so this is `scalef`'s
/// value): the same bits as [`exp512`] (`f32`'s AVX2 `exp` computes its
/// hard lanes by it too).
#[inline]
#[target_feature(enable = "avx2,fma")]
pub(super) fn exp256(x: __m256d) -> __m256d {
    let set = _mm256_set1_pd;
    let ks = _mm256_fmadd_pd(x, set(INV_L), set(SHIFT));
    let kd = _mm256_sub_pd(ks, set(SHIFT));
    let r = _mm256_fnmadd_pd(kd, set(L_HI), x);
    let r = _mm256_fnmadd_pd(kd, set(L_LO), r);
    let (p, k, th, tl) = parts256(r, ks);
    let v = _mm256_add_pd(th, _mm256_fmadd_pd(th, p, tl));
    // 2^floor(k/16) into the exponent: (k & ~15) << 48 = floor(k/16) << 52
    let m = _mm256_slli_epi64::<48>(_mm256_andnot_si256(_mm256_set1_epi64x(15), k));
    _mm256_castsi256_pd(_mm256_add_epi64(_mm256_castpd_si256(v), m))
}

/// The library's `e^x` for a lane outside AVX2's core domain: +inf from
/// 746 on, +0 from -746 down, `f64::exp` in between and for NaN.
fn edge(x: f64) -> f64 {
    if x >= EDGE2 {
        f64::INFINITY
    } else if x <= -EDGE2 {
        0.0
    } else {
        x.exp()
    }
}

/// `e^x` per lane: [`exp256`] when every lane is in the core domain,
/// else [`outside`].
#[inline]
#[target_feature(enable = "avx2,fma")]
fn lanes(x: __m256d) -> __m256d {
    let ok = _mm256_cmp_pd::<_CMP_LT_OQ>(
        _mm256_andnot_pd(_mm256_set1_pd(-0.0), x),
        _mm256_set1_pd(CORE2),
    );
    let ok = _mm256_movemask_pd(ok);
    if ok == 0xf {
        exp256(x)
    } else {
        outside(x, ok)
    }
}

/// [`exp256`] on clamped arguments with the lanes outside the core
/// domain (and NaN's; `ok`'s clear bits) set by [`edge`].
#[cold]
#[inline(never)]
#[target_feature(enable = "avx2,fma")]
fn outside(x: __m256d, ok: i32) -> __m256d {
    let core = _mm256_set1_pd(CORE2);
    let xc = _mm256_min_pd(core, _mm256_max_pd(_mm256_set1_pd(-CORE2), x));
    let (mut out, mut xs) = ([0.0; 4], [0.0; 4]);
    // SAFETY: room for four each.
    unsafe {
        _mm256_storeu_pd(out.as_mut_ptr(), exp256(xc));
        _mm256_storeu_pd(xs.as_mut_ptr(), x);
    }
    for (k, (o, x)) in out.iter_mut().zip(xs).enumerate() {
        if ok & (1 << k) == 0 {
            *o = edge(x);
        }
    }
    // SAFETY: four elements.
    unsafe { _mm256_loadu_pd(out.as_ptr()) }
}

/// `dst[i] = e^(src[i] + c)` (`e^src[i]` when `!ADD`) for `i < n`, on
/// AVX2 and FMA: four lanes at a time by [`exp256`]; a vector with a lane
/// outside `|x| < 708` (or NaN) computes on clamped arguments and then
/// sets those lanes ([`edge`]); the tail by [`edge`]'s library or the
/// lanes of a padded vector. `src == dst` is allowed.
///
/// # Safety
/// AVX2 and FMA are present; `src` points to `n` initialised doubles and
/// `dst` to room for `n`, the two equal or disjoint.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn map256<const ADD: bool>(src: *const f64, dst: *mut f64, n: usize, c: f64) {
    let cv = _mm256_set1_pd(c);
    let mut i = 0;
    while i + 4 <= n {
        // SAFETY: `i + 4 <= n` elements at each.
        unsafe {
            let mut x = _mm256_loadu_pd(src.add(i));
            if ADD {
                x = _mm256_add_pd(x, cv);
            }
            _mm256_storeu_pd(dst.add(i), lanes(x));
        }
        i += 4;
    }
    if i < n {
        let mut pad = [0.0; 4];
        for (k, p) in pad.iter_mut().enumerate().take(n - i) {
            // SAFETY: `i + k < n`.
            let x = unsafe { *src.add(i + k) };
            *p = if ADD { x + c } else { x };
        }
        let mut out = [0.0; 4];
        // SAFETY: four elements of `pad`, room for four in `out`.
        unsafe { _mm256_storeu_pd(out.as_mut_ptr(), lanes(_mm256_loadu_pd(pad.as_ptr()))) };
        for (k, o) in out.iter().enumerate().take(n - i) {
            // SAFETY: `i + k < n`.
            unsafe { *dst.add(i + k) = *o };
        }
    }
}

/// `Σ e^(src[i] + c)` (`Σ e^src[i]` when `!ADD`) for `i < n` on
/// AVX-512: the terms of [`map512`], added in registers as
/// `crate::vmath`'s `fused_sum!` says (bit for bit `run_sum` of the map).
///
/// # Safety
/// AVX-512 F/DQ/VL are present; `src` points to `n` initialised doubles.
#[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
pub(super) unsafe fn sum512<const ADD: bool>(src: *const f64, n: usize, c: f64) -> f64 {
    let (t, cv) = (table512(), _mm512_set1_pd(c));
    fused_sum!(
        pd512,
        src,
        n,
        |v| exp512(&t, if ADD { _mm512_add_pd(v, cv) } else { v }),
        // SAFETY: the tail's `len` elements and room for them.
        tail = |s, d, len| unsafe { map512::<ADD>(s, d, len, c) }
    )
}

/// `Σ e^(src[i] + c)` (`Σ e^src[i]` when `!ADD`) for `i < n` on AVX2:
/// the terms of [`map256`], added in registers as `crate::vmath`'s
/// `fused_sum!` says (bit for bit `run_sum` of the map).
///
/// # Safety
/// AVX2 and FMA are present; `src` points to `n` initialised doubles.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn sum256<const ADD: bool>(src: *const f64, n: usize, c: f64) -> f64 {
    let cv = _mm256_set1_pd(c);
    fused_sum!(
        pd256,
        src,
        n,
        |v| lanes(if ADD { _mm256_add_pd(v, cv) } else { v }),
        // SAFETY: the tail's `len` elements and room for them.
        tail = |s, d, len| unsafe { map256::<ADD>(s, d, len, c) }
    )
}
