//! Vectorised `f64` elementary functions over slices: `exp`, `log`,
//! `sin`, `cos`, `tanh` and `erf`, evaluated in place on a buffer (what the
//! JIT's staged calls use, [`crate::jit`]'s generic loops: they compute a
//! block of arguments into a buffer, call one of the `einsat_v*` entry
//! points of this module, and read the results back).
//!
//! **Accuracy.** Each lane is within 1 ulp of the C library's result
//! (`f64::exp` and friends, what the interpreter calls), and special
//! values are that result exactly: every lane outside a function's
//! *core domain* (NaN, ±inf, zero where it matters, subnormal inputs or
//! results, overflow, `|x| > 1e5` for `sin`/`cos` whose argument
//! reduction here is a three-part Cody–Waite) is recomputed with the
//! scalar library function. Core domains: `exp` every argument at
//! AVX-512 (overflow to +inf, subnormal results and underflow to +0,
//! NaN to a NaN, all on the vector path) and at AVX2 `|x| < 708`, `x ≥ 746`
//! (+inf) and `x ≤ -746` (+0); `log`
//! normal positive finite `x`; `sin`/`cos` `|x| ≤ 1e5`; `tanh`
//! `|x| ≥ 2^-1000` at AVX2 and every non-NaN `x` at AVX-512, ±inf
//! included (±1 from 20 on, exactly the library's result).
//! `exp` has kernels of its own (`src/vmath/exp.rs`, in intrinsics):
//! at AVX-512 `2^m·2^(j/16)·e^r`, `|r| ≤ ln2/32`, the sixteen `2^(j/16)`
//! as double-doubles held in registers, a degree-7 polynomial and one
//! `scalef` (about 0.54 ulp from `e^x`); at AVX2 the same operations with
//! the table read by loads and `2^m` added to the exponent (the same bits
//! for `|x| < 708`). So has
//! `tanh` at AVX-512 (`vmath/tanh.rs`, within 0.8 ulp by its error analysis): a
//! degree-10 polynomial on one of 16 intervals of `|x| < 4.75`
//! (`|x| + |x|³·P(x²)` on the first), coefficients picked by permutes
//! from tables, and above by `1 - 2y/(1+y)`, `y = e^{-2|x|}` from a
//! series, no division either way; a chunk of 256 elements runs one of
//! the two, or both and a blend when it has both kinds. The other
//! kernels are branch-free double-double-corrected polynomials (the
//! reductions and the last additions are compensated, so a lane's error
//! is about half an ulp plus a small fraction): `exp`'s lane (the
//! other kernels' building block) by `2^k·e^r` with a degree-13 Taylor
//! polynomial; `log` by the fdlibm
//! reduction and polynomial with the sum of its parts compensated;
//! `sin`/`cos` by fdlibm's kernels on the reduced argument as a
//! double-double. `tanh` at AVX2 has a kernel in intrinsics too
//! (`vmath/tanh.rs`): the AVX-512 kernel's two lanes, the same
//! operations and bits, its tables read by loads, chosen per vector.
//! `erf` (`vmath/erf.rs`, lane code compiled at both levels) performs
//! the `libm` crate's operations (fdlibm's rational approximations and
//! its `exp`) per lane, coefficients picked per lane, so it is the
//! library's result bit for bit on every input (NaN to a NaN); a chunk
//! of 256 runs the cheapest of three lanes that covers it.
//! `tests/suite/vmath.rs` sweeps millions of points per function and level.
//!
//! **Fused reductions.** [`sum_of`] adds `f(x[i] + c)` over a slice
//! without writing the values anywhere (a chunk of them in a stack
//! buffer, the same lanes as the maps, added into sixteen accumulators),
//! in blocks of [`SUM_BLOCK`] terms whose totals go to two levels, as the
//! JIT's long sums ([`crate::jit`]), so a long sum stays about as
//! accurate as numpy's pairwise summation; [`reduce_of`] is the IEEE
//! 754-2019 `maximum`/`minimum` of a slice (NaN if any term is NaN,
//! -0 < +0): at AVX-512 by `vrangepd` with the NaNs counted on the
//! side, elsewhere compared as integers in the total order of the
//! doubles, so it vectorises. The JIT's staged loops call them for a sum whose
//! term is one kernel function of a run (log-sum-exp's
//! `sum(i:n) exp(x[i] - m)`) and for a max/min reduction of a run.
//!
//! **Division by one divisor** (`vmath/quotient.rs`): `x / d` and `(x +
//! c) / d` over an `f64` run from `RN(1/d)` and two corrections by the remainder
//! (Markstein's method), the IEEE quotient bit for bit without the
//! divider (lanes and divisors outside its proven range go to the
//! divider).
//!
//! **Moments and affine maps** (`vmath/moments.rs`): the plain sum of a slice,
//! the sum of squares of a shifted slice and the maps `(x + c) / d`,
//! `(x + c)·d`, `x·d`, `x + c` on the full vector width, for the passes
//! of a layer normalisation (the sums in [`sum_of`]'s order).
//!
//! **Single precision** (`vmath/single.rs`): the `f32` forms of the
//! maps, fused sums, reductions, moments, affine maps and division
//! (`f32` slices in and out, each value as the interpreter's `F32`
//! computes it, sums accumulated in `f32` in the same blocks), what the
//! JIT calls in `Precision::F32`; `exp` has kernels in `f32` lanes there
//! (AVX-512 and AVX2, the library's rounded value for every argument),
//! `tanh` in `f32` lanes at AVX-512 and in double lanes at AVX2, the
//! others widen chunks into the `f64` kernels above.
//! **pow** (`vmath/pow.rs`): `pow(x[i], y[i])` and `pow(x[i], c)` over
//! slices ([`pow_to`], [`pow_const_to`], the JIT's [`einsat_vpow`] and
//! [`einsat_vpow_const`]): `ln x` as a double-double from a 128-entry
//! table and a polynomial, `e^(y·ln x)` from a 128-entry table of
//! `2^(j/128)` (the algorithm of ARM's optimized-routines and glibc's
//! `pow`), within about 0.52 ulp; lanes outside its core domain (`x ≤
//! 0`, subnormal `x`, non-finite arguments, results that overflow,
//! underflow or are subnormal) are `f64::powf`'s exactly.
//!
//! **Dispatch.** The same lane code is compiled three ways and chosen at
//! run time ([`Level`], detected once per process): AVX-512 (F, DQ, VL),
//! AVX2 with FMA, and a scalar fallback that calls the library function
//! per element (any CPU, any architecture). Nothing assumes a CPU.
//!
//! Owns these kernels and their dispatch; it knows nothing of programs.

// The polynomial and splitting constants are quoted as fdlibm publishes
// them (more digits than an f64 holds).
#![allow(clippy::excessive_precision)]

use crate::syntax::ast::{Func, RedOp};
use std::sync::atomic::{AtomicU8, Ordering};

/// The body of an AVX-512 max/min reduction of a slice, `f64` and `f32`
/// lanes alike: `vrange` with imm 5 (the larger) or 4 (the smaller), the
/// sign from the comparison, orders -0 below +0 as IEEE 754-2019
/// `maximum`/`minimum` do, but returns the other operand for a quiet NaN
/// (measured): so the NaNs are counted on the side, one unordered compare
/// per vector; two instructions per vector where `run_reduce`'s order
/// keys took five. Four accumulators, the tail by a masked load filled
/// with the identity, the lanes by the calling module's `run_reduce`; any
/// NaN gives the type's `NAN`, as `run_reduce` does. A block that returns
/// from the enclosing function.
#[cfg(target_arch = "x86_64")]
macro_rules! range_reduce {
    ($op:expr, $xs:expr, $t:ty, $v:ty, $mask:ty, $w:expr, identity = $ident:expr,
     set1 = $set1:ident, load = $load:ident, mask_load = $mload:ident, store = $store:ident,
     range = $range:ident, cmp = $cmp:ident) => {{
        #[inline]
        #[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
        fn range(max: bool, a: $v, b: $v) -> $v {
            if max {
                $range::<5>(a, b)
            } else {
                $range::<4>(a, b)
            }
        }
        #[inline]
        #[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
        fn nans(x: $v) -> $mask {
            $cmp::<_CMP_UNORD_Q>(x, x)
        }
        let (op, xs): (RedOp, &[$t]) = ($op, $xs);
        let max = op == RedOp::Max;
        let id = $set1($ident);
        let (p, n) = (xs.as_ptr(), xs.len());
        let mut acc = [id; 4];
        let mut nan: $mask = 0;
        let mut i = 0;
        // SAFETY: every load reads the lanes `i..i + W` with `i + W <= n`,
        // or (masked) only those below `n`.
        unsafe {
            while i + 4 * $w <= n {
                for (k, a) in acc.iter_mut().enumerate() {
                    let x = $load(p.add(i + $w * k));
                    nan |= nans(x);
                    *a = range(max, *a, x);
                }
                i += 4 * $w;
            }
            while i + $w <= n {
                let x = $load(p.add(i));
                nan |= nans(x);
                acc[0] = range(max, acc[0], x);
                i += $w;
            }
            if i < n {
                let m: $mask = (1 << (n - i)) - 1;
                let x = $mload(id, m, p.add(i));
                nan |= nans(x);
                acc[1] = range(max, acc[1], x);
            }
        }
        if nan != 0 {
            return <$t>::NAN;
        }
        let v = range(max, range(max, acc[0], acc[1]), range(max, acc[2], acc[3]));
        let mut lanes = [<$t>::default(); $w];
        // SAFETY: room for the lanes.
        unsafe { $store(lanes.as_mut_ptr(), v) };
        run_reduce(op, &lanes)
    }};
}

/// `Σ term(src[i])` for `i < n` (`term` a vector function of the
/// loaded lanes), added as [`run_sum`] adds a slice's terms, so bit for
/// bit the sum of the map's values in that order: per [`SUM_BLOCK`]-term
/// block, chunks of 256 terms (the last padded with +0) halved onto
/// themselves down to [`ACCS`] values, those into [`ACCS`] accumulators,
/// summed by [`pairwise`]; the blocks' totals on two levels ([`MID`]).
///
/// A whole chunk stays in registers. Its `V` vectors (`V = 256 / W`) are
/// halved onto vector `u mod V/2`, then `u mod V/4`, … down to `L = ACCS
/// / W` vectors; so `Gr = (e_r + e_{r+V/2}) + (e_{r+V/4} + e_{r+3V/4})`
/// for `r < V/4` first, then the `G`s halved the same way: no buffer, no
/// call per chunk (the term `$g` is expanded inline, under the caller's
/// target features). The last, partial chunk goes through a buffer: its
/// terms by `$tail(src, dst, len)` (the map, the same values), the rest
/// +0, halved in place as `run_sum` halves it.
///
/// `$t` the element type, `$vt` its vector of `$w` lanes; `$zero`,
/// `$vadd`, `$load`, `$store` the vector's zero, sum, unaligned load and
/// store; `$v` names the loaded vector in `$g`. The short forms
/// `fused_sum!(pd512 | pd256 | ps512 | ps256, src, n, |v| term, tail = …)`
/// name those from the vector type.
#[cfg(target_arch = "x86_64")]
macro_rules! fused_sum {
    (pd512, $($rest:tt)*) => {
        fused_sum!(f64, __m512d, 8, zero = _mm512_setzero_pd(), add = _mm512_add_pd,
            load = _mm512_loadu_pd, store = _mm512_storeu_pd, $($rest)*)
    };
    (pd256, $($rest:tt)*) => {
        fused_sum!(f64, __m256d, 4, zero = _mm256_setzero_pd(), add = _mm256_add_pd,
            load = _mm256_loadu_pd, store = _mm256_storeu_pd, $($rest)*)
    };
    (ps512, $($rest:tt)*) => {
        fused_sum!(f32, __m512, 16, zero = _mm512_setzero_ps(), add = _mm512_add_ps,
            load = _mm512_loadu_ps, store = _mm512_storeu_ps, $($rest)*)
    };
    (ps256, $($rest:tt)*) => {
        fused_sum!(f32, __m256, 8, zero = _mm256_setzero_ps(), add = _mm256_add_ps,
            load = _mm256_loadu_ps, store = _mm256_storeu_ps, $($rest)*)
    };
    ($t:ty, $vt:ty, $w:expr, zero = $zero:expr, add = $vadd:ident, load = $load:ident,
     store = $store:ident, $src:expr, $n:expr, |$v:ident| $g:expr,
     tail = |$ts:ident, $td:ident, $tl:ident| $tail:expr) => {{
        const W: usize = $w;
        const CHUNK: usize = 16 * $crate::vmath::ACCS;
        const V: usize = CHUNK / W;
        const L: usize = $crate::vmath::ACCS / W;
        let (src, n): (*const $t, usize) = ($src, $n);
        let (mut outer, mut mid, mut blocks): ($t, $t, usize) = (0.0, 0.0, 0);
        let mut i = 0;
        while i < n {
            let block_end = n.min(i + $crate::vmath::SUM_BLOCK);
            let mut acc: [$vt; L] = [$zero; L];
            while i + CHUNK <= block_end {
                let mut g: [$vt; V / 4] = [$zero; V / 4];
                for (r, gr) in g.iter_mut().enumerate() {
                    // SAFETY: `W` elements from each `at`, `at + W <= n`.
                    let e = |u: usize| -> *const $t { unsafe { src.add(i + W * u) } };
                    let a = $vadd(
                        {
                            let $v = unsafe { $load(e(r)) };
                            $g
                        },
                        {
                            let $v = unsafe { $load(e(r + V / 2)) };
                            $g
                        },
                    );
                    let b = $vadd(
                        {
                            let $v = unsafe { $load(e(r + V / 4)) };
                            $g
                        },
                        {
                            let $v = unsafe { $load(e(r + 3 * V / 4)) };
                            $g
                        },
                    );
                    *gr = $vadd(a, b);
                }
                let mut w = V / 4;
                while w > L {
                    w /= 2;
                    for u in 0..w {
                        g[u] = $vadd(g[u], g[u + w]);
                    }
                }
                for (a, x) in acc.iter_mut().zip(&g[..L]) {
                    *a = $vadd(*a, *x);
                }
                i += CHUNK;
            }
            if i < block_end {
                let len = block_end - i;
                let mut buf: [$t; CHUNK] = [0.0; CHUNK];
                {
                    // SAFETY: `len < CHUNK` elements from `i < n`.
                    let ($ts, $td, $tl): (*const $t, *mut $t, usize) =
                        (unsafe { src.add(i) }, buf.as_mut_ptr(), len);
                    $tail;
                }
                // (the padding's terms are +0)
                buf[len..].fill(0.0);
                let mut w = CHUNK;
                while w > $crate::vmath::ACCS {
                    w /= 2;
                    let (a, b) = buf.split_at_mut(w);
                    for (x, y) in a.iter_mut().zip(&b[..w]) {
                        *x += *y;
                    }
                }
                for (u, a) in acc.iter_mut().enumerate() {
                    // SAFETY: `W` elements from `W·u < ACCS`.
                    *a = $vadd(*a, unsafe { $load(buf.as_ptr().add(W * u)) });
                }
                i = block_end;
            }
            let mut lanes: [$t; $crate::vmath::ACCS] = [0.0; $crate::vmath::ACCS];
            for (u, a) in acc.iter().enumerate() {
                // SAFETY: room for `W` from `W·u < ACCS`.
                unsafe { $store(lanes.as_mut_ptr().add(W * u), *a) };
            }
            mid += $crate::vmath::pairwise(lanes);
            blocks += 1;
            if blocks == $crate::vmath::MID {
                outer += mid;
                mid = 0.0;
                blocks = 0;
            }
        }
        outer + mid
    }};
}

mod moments;
pub use moments::{
    affine_to, affine_to_at, einsat_vaffine, einsat_vsum, einsat_vsumsq_add, sum, sum_sq_add,
    Affine,
};
#[cfg(target_arch = "x86_64")]
mod erf;
#[cfg(target_arch = "x86_64")]
mod quotient;
mod single;
#[cfg(target_arch = "x86_64")]
mod tanh;
pub use single::{
    affine_to_at_f32, affine_to_f32, apply_at_f32, apply_to_add_f32, div_to_f32,
    einsat_vaffine_f32, einsat_vcos_add_f32, einsat_vcos_f32, einsat_vdiv_f32, einsat_verf_add_f32,
    einsat_verf_f32, einsat_vexp_add_f32, einsat_vexp_f32, einsat_vlog_add_f32, einsat_vlog_f32,
    einsat_vmax_f32, einsat_vmin_f32, einsat_vsin_add_f32, einsat_vsin_f32,
    einsat_vsum_cos_add_f32, einsat_vsum_erf_add_f32, einsat_vsum_exp_add_f32, einsat_vsum_f32,
    einsat_vsum_log_add_f32, einsat_vsum_sin_add_f32, einsat_vsum_tanh_add_f32,
    einsat_vsumsq_add_f32, einsat_vtanh_add_f32, einsat_vtanh_f32, reduce_of_f32, sum_f32,
    sum_of_at_f32, sum_of_f32, sum_sq_add_f32,
};

/// An instruction-set level the kernels are compiled for, lowest first
/// (each includes the ones below it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// The library function per element (every CPU).
    Scalar,
    /// AVX2 and FMA (x86-64).
    Avx2,
    /// AVX-512 F, DQ and VL, with AVX2 and FMA (x86-64).
    Avx512,
}

/// The levels this CPU supports, lowest first ([`Level::Scalar`] always).
pub fn levels() -> Vec<Level> {
    let mut v = vec![Level::Scalar];
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            v.push(Level::Avx2);
            if std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512dq")
                && std::arch::is_x86_feature_detected!("avx512vl")
            {
                v.push(Level::Avx512);
            }
        }
    }
    v
}

/// The best level of this CPU (detected once).
pub fn best() -> Level {
    static BEST: AtomicU8 = AtomicU8::new(0);
    let code = match BEST.load(Ordering::Relaxed) {
        0 => {
            let l = *levels().last().expect("scalar is always there");
            let c = match l {
                Level::Scalar => 1,
                Level::Avx2 => 2,
                Level::Avx512 => 3,
            };
            BEST.store(c, Ordering::Relaxed);
            c
        }
        c => c,
    };
    match code {
        3 => Level::Avx512,
        2 => Level::Avx2,
        _ => Level::Scalar,
    }
}

/// Whether `f` has a vector kernel here (else [`apply_at`] maps the
/// library function).
pub fn has_kernel(f: Func) -> bool {
    matches!(
        f,
        Func::Exp | Func::Log | Func::Sin | Func::Cos | Func::Tanh | Func::Erf
    )
}

/// `xs[i] = f(xs[i])` for a one-argument `f`, at the best level.
pub fn apply(f: Func, xs: &mut [f64]) {
    match best() {
        #[cfg(target_arch = "x86_64")]
        l @ (Level::Avx2 | Level::Avx512) if has_kernel(f) => {
            // SAFETY: `best` detected the level's features on this CPU.
            unsafe { x86::run(f, l == Level::Avx512, xs) }
        }
        _ => apply_at(f, Level::Scalar, xs),
    }
}

/// `xs[i] = f(xs[i])` at `level`, which must be one of [`levels`] (a
/// level this CPU lacks runs the scalar fallback). `f` takes one
/// argument (`max`/`min` are applied as `f(x, x)`).
pub fn apply_at(f: Func, level: Level, xs: &mut [f64]) {
    let level = checked(level);
    match (f, level) {
        #[cfg(target_arch = "x86_64")]
        (
            Func::Exp | Func::Log | Func::Sin | Func::Cos | Func::Tanh | Func::Erf,
            Level::Avx2 | Level::Avx512,
        ) => {
            // SAFETY: the level's features were detected on this CPU.
            unsafe { x86::run(f, level == Level::Avx512, xs) }
        }
        _ => {
            for x in xs.iter_mut() {
                *x = f.apply(&[*x, *x]);
            }
        }
    }
}

/// `dst[i] = f(src[i])` for `i` in `0..n`, at the best level: `src` and
/// `dst` are the same buffer (in place) or buffers that do not overlap.
///
/// # Safety
/// `src` points to `n` initialised `f64`s and `dst` to room for `n`
/// (or `n == 0`); the two should be equal or disjoint (overlapping
/// ones are read from a copy).
pub unsafe fn apply_raw(f: Func, src: *const f64, dst: *mut f64, n: usize) {
    // SAFETY: the caller's contract.
    unsafe { apply_raw_add(f, src, dst, n, None) }
}

/// [`apply_raw`] of `f(src[i] + c)` ([`apply_to_add`]).
///
/// # Safety
/// As [`apply_raw`].
pub unsafe fn apply_raw_add(f: Func, src: *const f64, dst: *mut f64, n: usize, c: Option<f64>) {
    if n == 0 {
        return;
    }
    if std::ptr::eq(src, dst) && c.is_none() {
        // SAFETY: the caller passes `n` elements at `dst` (= `src`).
        return apply(f, unsafe { std::slice::from_raw_parts_mut(dst, n) });
    }
    let (a, b) = (src as usize, dst as usize);
    if a < b + n * 8 && b < a + n * 8 {
        // overlapping (no caller does this but in place): from a copy
        // SAFETY: the caller passes `n` elements at each.
        let xs = unsafe { std::slice::from_raw_parts(src, n) }.to_vec();
        let ys = unsafe { std::slice::from_raw_parts_mut(dst, n) };
        return apply_to_add(f, &xs, ys, c);
    }
    // SAFETY: the caller passes `n` elements at each, not overlapping.
    let (xs, ys) = unsafe {
        (
            std::slice::from_raw_parts(src, n),
            std::slice::from_raw_parts_mut(dst, n),
        )
    };
    apply_to_add(f, xs, ys, c)
}

/// `ys[i] = f(xs[i])` for a one-argument `f`, at the best level
/// (`xs` and `ys` of the same length).
pub fn apply_to(f: Func, xs: &[f64], ys: &mut [f64]) {
    apply_to_add(f, xs, ys, None)
}

/// `ys[i] = f(xs[i] + c)` (`f(xs[i])` without `c`), at the best level:
/// the sum rounded as the interpreter rounds `x + c` (and `x - c` is
/// `x + (-c)` exactly), then the function.
pub fn apply_to_add(f: Func, xs: &[f64], ys: &mut [f64], c: Option<f64>) {
    map_to_add(f, best(), xs, ys, c)
}

/// [`apply_to_add`] at `level`, which must be one of [`levels`] (a level
/// this CPU lacks runs the scalar fallback).
pub fn apply_to_add_at(f: Func, level: Level, xs: &[f64], ys: &mut [f64], c: Option<f64>) {
    map_to_add(f, checked(level), xs, ys, c)
}

/// `level` if this CPU has it, else [`Level::Scalar`] (`levels` builds a
/// vector: the calls at the best level, which must not allocate, skip
/// this).
fn checked(level: Level) -> Level {
    if levels().contains(&level) {
        level
    } else {
        Level::Scalar
    }
}

/// [`apply_to_add`] at a level this CPU has.
fn map_to_add(f: Func, level: Level, xs: &[f64], ys: &mut [f64], c: Option<f64>) {
    assert_eq!(xs.len(), ys.len(), "apply_to: slices of different lengths");
    match level {
        #[cfg(target_arch = "x86_64")]
        l @ (Level::Avx2 | Level::Avx512) if has_kernel(f) => {
            // SAFETY: `best` detected the level's features on this CPU.
            unsafe { x86::run_to(f, l == Level::Avx512, xs, ys, c) }
        }
        _ => {
            for (y, x) in ys.iter_mut().zip(xs) {
                let x = c.map_or(*x, |c| *x + c);
                *y = f.apply(&[x, x]);
            }
        }
    }
}

thread_local! {
    /// The threads a long sum or reduction called on this thread may use
    /// ([`with_threads`]); 1 unless a kernel runner set it.
    static THREADS: std::cell::Cell<usize> = const { std::cell::Cell::new(1) };
}

/// Run `f` with the long sums and reductions it calls on this thread
/// ([`sum_of`], [`reduce_of`] and their `f32` forms, what the JIT's nests
/// call) allowed `threads` threads of the JIT's pool: the JIT's kernel
/// runner wraps a nest that runs on one thread in it (a log-sum-exp's
/// passes are such a nest). The result does not depend on the threads
/// (the groups' totals are added in their order).
pub fn with_threads<R>(threads: usize, f: impl FnOnce() -> R) -> R {
    let old = THREADS.with(|t| t.replace(threads.max(1)));
    let r = f();
    THREADS.with(|t| t.set(old));
    r
}

/// Elements of a group: the [`MID`] [`SUM_BLOCK`]s whose totals a sum
/// adds on one accumulator before adding that into its running total
/// ([`sum_blocks`]).
const GROUP: usize = MID * SUM_BLOCK;

/// Blocks whose totals [`sum_blocks`] adds on one accumulator before
/// adding that into its running total.
const MID: usize = 64;

/// A value the pool's threads hand back through an atomic (its bits).
trait Bits: Copy + Default + Send + Sync {
    fn to_u64(self) -> u64;
    fn from_u64(b: u64) -> Self;
}
impl Bits for f64 {
    fn to_u64(self) -> u64 {
        self.to_bits()
    }
    fn from_u64(b: u64) -> Self {
        f64::from_bits(b)
    }
}
impl Bits for f32 {
    fn to_u64(self) -> u64 {
        u64::from(self.to_bits())
    }
    fn from_u64(b: u64) -> Self {
        f32::from_bits(b as u32)
    }
}

/// `part` of each [`GROUP`] of `xs` (the last one shorter), the groups in
/// batches of up to 64 computed on up to `threads` threads of the JIT's
/// pool, handed to `fold` in order.
fn par_parts<T: Bits>(
    threads: usize,
    xs: &[T],
    part: impl Fn(&[T]) -> T + Sync,
    mut fold: impl FnMut(T),
) {
    use std::sync::atomic::AtomicU64;
    let groups = xs.len().div_ceil(GROUP);
    let mut first = 0;
    while first < groups {
        let m = (groups - first).min(64);
        let vals: [AtomicU64; 64] = std::array::from_fn(|_| AtomicU64::new(0));
        crate::jit::run::pool::run(threads, m, |g| {
            let lo = (first + g) * GROUP;
            let v = part(&xs[lo..xs.len().min(lo + GROUP)]);
            vals[g].store(v.to_u64(), Ordering::Relaxed);
        });
        for v in &vals[..m] {
            fold(T::from_u64(v.load(Ordering::Relaxed)));
        }
        first += m;
    }
}

/// Whether a run of `n` elements is split over this thread's
/// [`with_threads`] threads (at least two groups).
fn parallel(n: usize) -> Option<usize> {
    let t = THREADS.with(|t| t.get());
    (t > 1 && n >= 2 * GROUP).then_some(t)
}

/// A sum shaped as [`sum_blocks`] (`sum` of `xs`), on the threads
/// [`with_threads`] allows when `xs` has two groups or more: each
/// [`GROUP`]'s sum on some thread, those added in order from +0. The same
/// bits as `sum(xs)`: `sum_blocks` adds exactly these group totals (its
/// `mid`) into its running total in this order; a group's own `sum` is
/// its `mid` plus +0 twice, which only turns a -0 into +0, and a running
/// total that starts at +0 is never -0, so adding +0 for -0 changes
/// nothing.
fn par_sum<T: Bits + std::ops::AddAssign>(xs: &[T], sum: impl Fn(&[T]) -> T + Sync) -> T {
    match parallel(xs.len()) {
        None => sum(xs),
        Some(t) => {
            let mut total = T::default();
            par_parts(t, xs, sum, |v| total += v);
            total
        }
    }
}

/// A max/min reduction (`red` of `xs`) on the threads [`with_threads`]
/// allows when `xs` has two groups or more: each group's `red`, then
/// `join` of those (the same value: the reduction is exact and its NaN
/// and signed-zero rules are those of the whole).
fn par_reduce<T: Bits>(xs: &[T], red: impl Fn(&[T]) -> T + Sync, join: impl Fn(&[T]) -> T) -> T {
    match parallel(xs.len()) {
        None => red(xs),
        Some(t) => {
            let mut acc: Option<T> = None;
            par_parts(t, xs, red, |v| acc = Some(acc.map_or(v, |a| join(&[a, v]))));
            acc.unwrap_or_else(|| join(&[]))
        }
    }
}

/// Terms of a fused sum ([`sum_of`]) added on one set of accumulators
/// before the block's total goes to the next level (the JIT's long sums
/// use the same block, `jit::emit::common::SUM_BLOCK`).
pub const SUM_BLOCK: usize = 4096;

/// `Σ f(xs[i] + c)` (`Σ f(xs[i])` without `c`) for a one-argument `f`,
/// at the best level: each term is what [`apply_to_add`] gives, and the
/// terms are added in blocks of [`SUM_BLOCK`] on sixteen accumulators,
/// the blocks' totals on two levels (64 blocks, then the rest), so no
/// partial sum adds more than a few hundred terms one after another.
/// 0 for an empty slice.
pub fn sum_of(f: Func, xs: &[f64], c: Option<f64>) -> f64 {
    let level = best();
    par_sum(xs, |g| sum_at_level(f, level, g, c))
}

/// [`sum_of`] at `level` (on this thread), which must be one of
/// [`levels`] (a level this CPU lacks runs the scalar fallback).
pub fn sum_of_at(f: Func, level: Level, xs: &[f64], c: Option<f64>) -> f64 {
    sum_at_level(f, checked(level), xs, c)
}

/// [`sum_of`] at a level this CPU has, on this thread.
fn sum_at_level(f: Func, level: Level, xs: &[f64], c: Option<f64>) -> f64 {
    match level {
        #[cfg(target_arch = "x86_64")]
        l @ (Level::Avx2 | Level::Avx512) if has_kernel(f) => {
            // SAFETY: `best` detected the level's features on this CPU.
            unsafe { x86::sum(f, l == Level::Avx512, xs, c) }
        }
        _ => sum_blocks(xs, |blk| {
            let mut acc = [0.0f64; ACCS];
            for (k, x) in blk.iter().enumerate() {
                let x = c.map_or(*x, |c| *x + c);
                acc[k % ACCS] += f.apply(&[x, x]);
            }
            pairwise(acc)
        }),
    }
}

/// The reduction `op` of a slice: IEEE 754-2019 `maximum` or `minimum`
/// of every element ([`RedOp::apply`]: NaN if any is NaN, -0 below +0),
/// its identity (-inf, +inf) for an empty slice; at the best level.
pub fn reduce_of(op: RedOp, xs: &[f64]) -> f64 {
    par_reduce(xs, |g| reduce_seq(op, g), |v| reduce_seq(op, v))
}

/// [`reduce_of`] on this thread.
fn reduce_seq(op: RedOp, xs: &[f64]) -> f64 {
    match best() {
        #[cfg(target_arch = "x86_64")]
        l @ (Level::Avx2 | Level::Avx512) => {
            // SAFETY: `best` detected the level's features on this CPU.
            unsafe { x86::reduce(op, l == Level::Avx512, xs) }
        }
        _ => xs.iter().fold(op.identity(), |a, &x| op.apply(a, x)),
    }
}

/// `ys[i] = xs[i] / c` (the IEEE quotient, bit for bit the scalar
/// division's: `vmath/quotient.rs`), at the
/// best level: on the vector unit's full width (the generated loops
/// divide two lanes at a time).
pub fn div_to(xs: &[f64], ys: &mut [f64], c: f64) {
    assert_eq!(xs.len(), ys.len(), "div_to: slices of different lengths");
    // SAFETY: `best` is this CPU's; the slices are disjoint, of one length.
    unsafe { div_raw(best(), xs.as_ptr(), ys.as_mut_ptr(), xs.len(), c) }
}

/// [`div_to`] at `level` (a level above this CPU's best runs at its best).
pub fn div_to_at(level: Level, xs: &[f64], ys: &mut [f64], c: f64) {
    assert_eq!(xs.len(), ys.len(), "div_to: slices of different lengths");
    let level = level.min(best());
    // SAFETY: the level is this CPU's; the slices are disjoint, of one length.
    unsafe { div_raw(level, xs.as_ptr(), ys.as_mut_ptr(), xs.len(), c) }
}

/// `dst[i] = src[i] / c` for `i < n` at `level`.
///
/// # Safety
/// This CPU has `level`'s features; `src` has `n` readable elements,
/// `dst` room for `n`, the two equal or disjoint.
unsafe fn div_raw(level: Level, src: *const f64, dst: *mut f64, n: usize, c: f64) {
    match level {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the caller's contract.
        l @ (Level::Avx2 | Level::Avx512) => unsafe {
            x86::div(l == Level::Avx512, src, dst, n, c)
        },
        _ => {
            for i in 0..n {
                // SAFETY: the caller's contract (each element read before
                // it is written).
                unsafe { *dst.add(i) = *src.add(i) / c };
            }
        }
    }
}

/// A JIT entry point: `dst[i] = src[i] / c` for `i` in `0..n`
/// ([`div_to`]), in place when `src == dst`.
///
/// # Safety
/// `src` points to `n` initialised `f64`s and `dst` to room for `n` (or
/// `n <= 0`); the two should be equal or disjoint (overlapping ones are
/// read from a copy).
pub unsafe extern "C" fn einsat_vdiv(src: *const f64, dst: *mut f64, n: i64, c: f64) {
    if n <= 0 {
        return;
    }
    let n = n as usize;
    let (a, b) = (src as usize, dst as usize);
    if a != b && a < b + n * 8 && b < a + n * 8 {
        // overlapping (no caller does this but in place): from a copy
        // SAFETY: the caller passes `n` elements at each.
        let xs = unsafe { std::slice::from_raw_parts(src, n) }.to_vec();
        let ys = unsafe { std::slice::from_raw_parts_mut(dst, n) };
        return div_to(&xs, ys, c);
    }
    // SAFETY: the caller passes `n` elements at each, equal or disjoint.
    unsafe { div_raw(best(), src, dst, n, c) }
}

/// The JIT's entry points: `dst[0..n] = f(src[0..n])`, in place when
/// `src == dst`.
macro_rules! entry {
    ($name:ident, $f:expr) => {
        /// A JIT entry point: `dst[i] = f(src[i])` for `i` in `0..n`, at
        /// the best level ([`apply_raw`]).
        ///
        /// # Safety
        /// `src` points to `n` initialised `f64`s and `dst` to room for
        /// `n` (or `n <= 0`); the two are equal or do not overlap.
        pub unsafe extern "C" fn $name(src: *const f64, dst: *mut f64, n: i64) {
            if n <= 0 {
                return;
            }
            // SAFETY: the caller's contract.
            unsafe { apply_raw($f, src, dst, n as usize) }
        }
    };
}
entry!(einsat_vexp, Func::Exp);
entry!(einsat_vlog, Func::Log);
entry!(einsat_vsin, Func::Sin);
entry!(einsat_vcos, Func::Cos);
entry!(einsat_vtanh, Func::Tanh);
entry!(einsat_verf, Func::Erf);

/// The JIT's entry points with an addend: `dst[0..n] = f(src[0..n] + c)`.
macro_rules! entry_add {
    ($name:ident, $f:expr) => {
        /// A JIT entry point: `dst[i] = f(src[i] + c)` for `i` in `0..n`,
        /// at the best level ([`apply_raw_add`]).
        ///
        /// # Safety
        /// As the entry points without addend.
        pub unsafe extern "C" fn $name(src: *const f64, dst: *mut f64, n: i64, c: f64) {
            if n <= 0 {
                return;
            }
            // SAFETY: the caller's contract.
            unsafe { apply_raw_add($f, src, dst, n as usize, Some(c)) }
        }
    };
}
entry_add!(einsat_vexp_add, Func::Exp);
entry_add!(einsat_vlog_add, Func::Log);
entry_add!(einsat_vsin_add, Func::Sin);
entry_add!(einsat_vcos_add, Func::Cos);
entry_add!(einsat_vtanh_add, Func::Tanh);
entry_add!(einsat_verf_add, Func::Erf);

/// The JIT's fused sums: `Σ f(src[0..n] + c)` ([`sum_of`]).
macro_rules! entry_sum {
    ($name:ident, $f:expr) => {
        /// A JIT entry point: `Σ f(src[i] + c)` for `i` in `0..n`, at the
        /// best level ([`sum_of`]); 0 for `n <= 0`.
        ///
        /// # Safety
        /// `src` points to `n` initialised `f64`s (or `n <= 0`).
        pub unsafe extern "C" fn $name(src: *const f64, n: i64, c: f64) -> f64 {
            if n <= 0 {
                return 0.0;
            }
            // SAFETY: the caller's contract.
            let xs = unsafe { std::slice::from_raw_parts(src, n as usize) };
            sum_of($f, xs, Some(c))
        }
    };
}
entry_sum!(einsat_vsum_exp_add, Func::Exp);
entry_sum!(einsat_vsum_log_add, Func::Log);
entry_sum!(einsat_vsum_sin_add, Func::Sin);
entry_sum!(einsat_vsum_cos_add, Func::Cos);
entry_sum!(einsat_vsum_tanh_add, Func::Tanh);
entry_sum!(einsat_vsum_erf_add, Func::Erf);

/// The JIT's max/min reductions of a run ([`reduce_of`]).
macro_rules! entry_reduce {
    ($name:ident, $op:expr) => {
        /// A JIT entry point: the reduction of `src[0..n]` ([`reduce_of`]);
        /// its identity for `n <= 0`.
        ///
        /// # Safety
        /// `src` points to `n` initialised `f64`s (or `n <= 0`).
        pub unsafe extern "C" fn $name(src: *const f64, n: i64) -> f64 {
            if n <= 0 {
                return $op.identity();
            }
            // SAFETY: the caller's contract.
            reduce_of($op, unsafe { std::slice::from_raw_parts(src, n as usize) })
        }
    };
}
entry_reduce!(einsat_vmax, RedOp::Max);
entry_reduce!(einsat_vmin, RedOp::Min);

// ------------------------------------------------------------ lane code

/// `a + b` as a double-double (Knuth's two-sum).
#[inline(always)]
fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// `a + b` as a double-double when `|a| >= |b|` (or `a` is 0).
#[inline(always)]
fn fast_two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    (s, b - (s - a))
}

const SHIFT: f64 = 6755399441055744.0; // 1.5 * 2^52
const INV_LN2: f64 = std::f64::consts::LOG2_E;
/// fdlibm's split of ln 2: 32 significant bits, and the rest.
const LN2_HI: f64 = 6.931_471_803_691_238_164_90e-01;
const LN2_LO: f64 = 1.908_214_929_270_587_700_02e-10;

/// `e^x = scale * (s + tail)` for `|x| < 708` (`x = k ln2 + r`,
/// `|r| <= ln2/2`, `scale = 2^k`).
#[inline(always)]
fn exp_parts(x: f64) -> (f64, f64, f64) {
    let ks = x.mul_add(INV_LN2, SHIFT);
    let kd = ks - SHIFT;
    let ki = ks.to_bits();
    let t = (-kd).mul_add(LN2_HI, x); // exact
    let rh = (-kd).mul_add(LN2_LO, t);
    let rl = (-kd).mul_add(LN2_LO, t - rh);
    // (e^r - 1 - r) / r^2, Taylor to r^11
    const C: [f64; 12] = [
        1.0 / 2.0,
        1.0 / 6.0,
        1.0 / 24.0,
        1.0 / 120.0,
        1.0 / 720.0,
        1.0 / 5040.0,
        1.0 / 40320.0,
        1.0 / 362880.0,
        1.0 / 3628800.0,
        1.0 / 39916800.0,
        1.0 / 479001600.0,
        1.0 / 6227020800.0,
    ];
    let mut q = C[11];
    for c in C[..11].iter().rev() {
        q = q.mul_add(rh, *c);
    }
    let r2 = rh * rh;
    let s = 1.0 + rh;
    let e = (1.0 - s) + rh;
    let tail = e + (rl + r2.mul_add(q, rh * rl));
    let scale = f64::from_bits((ki << 52).wrapping_add(0x3ff0_0000_0000_0000));
    (s, tail, scale)
}

#[inline(always)]
fn exp_core(x: f64) -> bool {
    x.abs() < 708.0
}

#[inline(always)]
fn exp_lane(x: f64) -> f64 {
    let (s, tail, scale) = exp_parts(x);
    (s + tail) * scale
}

const LG: [f64; 7] = [
    6.666_666_666_666_735_130e-01,
    3.999_999_999_940_941_908e-01,
    2.857_142_874_366_239_149e-01,
    2.222_219_843_214_978_396e-01,
    1.818_357_216_161_805_012e-01,
    1.531_383_769_920_937_332e-01,
    1.479_819_860_511_658_591e-01,
];

#[inline(always)]
fn log_core(x: f64) -> bool {
    (f64::MIN_POSITIVE..=f64::MAX).contains(&x)
}

#[inline(always)]
fn log_lane(x: f64) -> f64 {
    let ix = x.to_bits();
    let tmp = ix.wrapping_sub(0x3fe6_a09e_667f_3bcd);
    let k = (((tmp >> 32) as u32 as i32) >> 20) as f64;
    let m = f64::from_bits(ix.wrapping_sub(tmp & (0xfff << 52)));
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * w.mul_add(w.mul_add(LG[5], LG[3]), LG[1]);
    let t2 = z * w.mul_add(w.mul_add(w.mul_add(LG[6], LG[4]), LG[2]), LG[0]);
    let r = t2 + t1;
    let hf = 0.5 * f;
    let hfsq = hf * f;
    let hfsq_lo = hf.mul_add(f, -hfsq);
    let (a, ea) = two_sum(k * LN2_HI, f);
    let (b, eb) = two_sum(a, -hfsq);
    let rest = ((ea + eb) - hfsq_lo) + s.mul_add(hfsq + r, k * LN2_LO);
    b + rest
}

const TWO_OVER_PI: f64 = std::f64::consts::FRAC_2_PI;
/// fdlibm's pio2_1, pio2_2, pio2_3 (33 bits each) and pio2_3t.
const PIO2: [f64; 4] = [
    1.570_796_326_734_125_614_17e+00,
    6.077_100_506_303_965_976_60e-11,
    2.022_266_248_711_166_455_80e-21,
    8.478_427_660_368_899_569_97e-32,
];
const S: [f64; 6] = [
    -1.666_666_666_666_663_243_48e-01,
    8.333_333_333_322_489_461_24e-03,
    -1.984_126_982_985_794_931_34e-04,
    2.755_731_370_707_006_767_89e-06,
    -2.505_076_025_340_686_341_95e-08,
    1.589_690_995_211_550_102_21e-10,
];
const CC: [f64; 6] = [
    4.166_666_666_666_660_190_37e-02,
    -1.388_888_888_887_410_957_49e-03,
    2.480_158_728_947_672_941_78e-05,
    -2.755_731_435_139_066_330_35e-07,
    2.087_572_321_298_174_827_90e-09,
    -1.135_964_755_778_819_482_65e-11,
];

#[inline(always)]
fn trig_core(x: f64) -> bool {
    x.abs() <= 1e5
}

/// `x = n π/2 + (rh + rl)`, `|rh + rl| <= π/4` (a little more at worst);
/// returns `n mod 4` too. For `|x| <= 1e5`.
#[inline(always)]
fn reduce(x: f64) -> (f64, f64, u64) {
    let ns = x.mul_add(TWO_OVER_PI, SHIFT);
    let n = ns - SHIFT;
    let q = ns.to_bits() & 3;
    let r1 = (-n).mul_add(PIO2[0], x); // exact
    let (y, e) = two_sum(r1, -(n * PIO2[1]));
    let (y2, e2) = two_sum(y, -(n * PIO2[2]));
    let lo = (e + e2) - n * PIO2[3];
    let (rh, rl) = fast_two_sum(y2, lo);
    (rh, rl, q)
}

/// fdlibm's `__kernel_sin(x, y, 1)`.
#[inline(always)]
fn ksin(x: f64, y: f64) -> f64 {
    let z = x * x;
    let v = z * x;
    let r = z.mul_add(
        z.mul_add(z.mul_add(z.mul_add(S[5], S[4]), S[3]), S[2]),
        S[1],
    );
    x - ((z * (0.5 * y - v * r) - y) - v * S[0])
}

/// fdlibm's (musl's) `__cos(x, y)`.
#[inline(always)]
fn kcos(x: f64, y: f64) -> f64 {
    let z = x * x;
    let w = z * z;
    let r = z * z.mul_add(z.mul_add(CC[2], CC[1]), CC[0])
        + w * w * z.mul_add(z.mul_add(CC[5], CC[4]), CC[3]);
    let hz = 0.5 * z;
    let w = 1.0 - hz;
    w + (((1.0 - w) - hz) + z.mul_add(r, -(x * y)))
}

#[inline(always)]
fn flip(v: f64, neg: bool) -> f64 {
    f64::from_bits(v.to_bits() ^ ((neg as u64) << 63))
}

#[inline(always)]
fn sin_lane(x: f64) -> f64 {
    let (rh, rl, q) = reduce(x);
    let s = ksin(rh, rl);
    let c = kcos(rh, rl);
    let v = if q & 1 == 1 { c } else { s };
    let v = flip(v, q & 2 == 2);
    if x.abs() < 3.725_290_298_461_914e-9 {
        x
    } else {
        v
    }
}

#[inline(always)]
fn cos_lane(x: f64) -> f64 {
    let (rh, rl, q) = reduce(x);
    let s = ksin(rh, rl);
    let c = kcos(rh, rl);
    let v = if q & 1 == 1 { s } else { c };
    flip(v, (q + 1) & 2 == 2)
}

#[inline(always)]
fn tanh_core(x: f64) -> bool {
    // (NaN compares false; ±inf is in: see `tanh_lane`)
    x.abs() >= 9.332_636_185_032_189e-302
}

#[inline(always)]
fn tanh_lane(x: f64) -> f64 {
    // tanh(a) rounds to 1 from a = 19.06…: from 20 (and at inf) the lane
    // computes tanh(20), which is 1.0 after the final rounding, so large
    // arguments (GELU's, most of a layer's pre-activations) stay on the
    // vector path instead of one library call each
    let a = x.abs().min(20.0);
    let small = a < 0.625;
    let (s, tail, scale) = exp_parts(a + a);
    // small: expm1(2a) / (expm1(2a) + 2)
    let big_a = s.mul_add(scale, -1.0); // exact for k <= 2
    let (nh, nl) = two_sum(big_a, scale * tail);
    let (sdh, sde) = fast_two_sum(2.0, nh);
    // large: 1 - 2 / (e^{2a} + 1)
    let (eh, el) = fast_two_sum(s, tail);
    let (eh, el) = (eh * scale, el * scale);
    let (ldh, lde) = fast_two_sum(eh, 1.0);
    // the lane's quotient (nh + nl) / (dh + dl), by one division: the
    // reciprocal's quotient q, then q's correction from the remainder
    // (a division is several times the cost of the other operations)
    let (nh, nl, dh, dl) = if small {
        (nh, nl, sdh, sde + nl)
    } else {
        (2.0, 0.0, ldh, lde + el)
    };
    let inv = 1.0 / dh;
    let q = nh * inv;
    let rem = (-q).mul_add(dh, nh) + (-q).mul_add(dl, nl);
    let ql = rem * inv;
    let v = if small {
        q + ql
    } else {
        let (t, te) = fast_two_sum(1.0, -q);
        t + (te - ql)
    };
    f64::from_bits(v.to_bits() | (x.to_bits() & (1 << 63)))
}

/// One function over a slice, in chunks: a chunk whose lanes are all in
/// the core domain by the kernel (vectorised), any other chunk lane by
/// lane, by the kernel or the library function.
#[inline(always)]
fn run_chunks(
    xs: &mut [f64],
    lane: impl Fn(f64) -> f64,
    core: impl Fn(f64) -> bool,
    lib: impl Fn(f64) -> f64,
) {
    const CH: usize = 256;
    for ch in xs.chunks_mut(CH) {
        // (an integer reduction, which vectorises; a fold of `bool`s did
        // not, and cost about as much as the kernel)
        let all = ch.iter().fold(0u64, |a, &x| a | u64::from(!core(x))) == 0;
        if all {
            for x in ch.iter_mut() {
                *x = lane(*x);
            }
        } else {
            for x in ch.iter_mut() {
                *x = if core(*x) { lane(*x) } else { lib(*x) };
            }
        }
    }
}

/// [`run_chunks`] from `src` into `dst` (the same lengths).
#[inline(always)]
fn run_chunks_to(
    src: &[f64],
    dst: &mut [f64],
    lane: impl Fn(f64) -> f64,
    core: impl Fn(f64) -> bool,
    lib: impl Fn(f64) -> f64,
) {
    const CH: usize = 256;
    for (s, d) in src.chunks(CH).zip(dst.chunks_mut(CH)) {
        let all = s.iter().fold(0u64, |a, &x| a | u64::from(!core(x))) == 0;
        if all {
            for (y, &x) in d.iter_mut().zip(s) {
                *y = lane(x);
            }
        } else {
            for (y, &x) in d.iter_mut().zip(s) {
                *y = if core(x) { lane(x) } else { lib(x) };
            }
        }
    }
}

#[inline(always)]
fn run_func_to(f: Func, xs: &[f64], ys: &mut [f64]) {
    match f {
        Func::Exp => run_chunks_to(xs, ys, exp_lane, exp_core, f64::exp),
        Func::Log => run_chunks_to(xs, ys, log_lane, log_core, f64::ln),
        Func::Sin => run_chunks_to(xs, ys, sin_lane, trig_core, f64::sin),
        Func::Cos => run_chunks_to(xs, ys, cos_lane, trig_core, f64::cos),
        Func::Tanh => run_chunks_to(xs, ys, tanh_lane, tanh_core, f64::tanh),
        _ => {
            for (y, x) in ys.iter_mut().zip(xs) {
                *y = f.apply(&[*x, *x]);
            }
        }
    }
}

/// [`run_func_to`] of `f(x + c)`: per chunk, the sums into the output
/// with their domain check, then the kernel in place there
/// ([`add_then`]; a buffer of sums, then a check pass, then the kernel
/// into the output, was three passes).
#[inline(always)]
fn run_func_to_add(f: Func, xs: &[f64], ys: &mut [f64], c: f64) {
    const CH: usize = 256;
    for (s, d) in xs.chunks(CH).zip(ys.chunks_mut(CH)) {
        add_then(f, s, d, c);
    }
}

/// `t[i] = f(s[i] + c)` ([`add_then_chunk`] with `f`'s lanes).
#[inline(always)]
fn add_then(f: Func, s: &[f64], t: &mut [f64], c: f64) {
    match f {
        Func::Exp => add_then_chunk(s, t, c, exp_lane, exp_core, f64::exp),
        Func::Log => add_then_chunk(s, t, c, log_lane, log_core, f64::ln),
        Func::Sin => add_then_chunk(s, t, c, sin_lane, trig_core, f64::sin),
        Func::Cos => add_then_chunk(s, t, c, cos_lane, trig_core, f64::cos),
        Func::Tanh => add_then_chunk(s, t, c, tanh_lane, tanh_core, f64::tanh),
        _ => {
            for (t, x) in t.iter_mut().zip(s) {
                *t = *x + c;
            }
            run_func(f, t)
        }
    }
}

/// One chunk of `t[i] = f(s[i] + c)`: the sums and their domain check
/// in one pass, then the kernel in place (as [`run_chunks`] does).
#[inline(always)]
fn add_then_chunk(
    s: &[f64],
    t: &mut [f64],
    c: f64,
    lane: impl Fn(f64) -> f64,
    core: impl Fn(f64) -> bool,
    lib: impl Fn(f64) -> f64,
) {
    let mut bad = 0u64;
    for (t, x) in t.iter_mut().zip(s) {
        let v = *x + c;
        *t = v;
        bad |= u64::from(!core(v));
    }
    if bad == 0 {
        for x in t.iter_mut() {
            *x = lane(*x);
        }
    } else {
        for x in t.iter_mut() {
            *x = if core(*x) { lane(*x) } else { lib(*x) };
        }
    }
}

#[inline(always)]
fn run_func(f: Func, xs: &mut [f64]) {
    match f {
        Func::Exp => run_chunks(xs, exp_lane, exp_core, f64::exp),
        Func::Log => run_chunks(xs, log_lane, log_core, f64::ln),
        Func::Sin => run_chunks(xs, sin_lane, trig_core, f64::sin),
        Func::Cos => run_chunks(xs, cos_lane, trig_core, f64::cos),
        Func::Tanh => run_chunks(xs, tanh_lane, tanh_core, f64::tanh),
        _ => {
            for x in xs.iter_mut() {
                *x = f.apply(&[*x, *x]);
            }
        }
    }
}

/// Accumulators of a fused sum (two AVX-512 vectors, four AVX2 ones).
const ACCS: usize = 16;

/// The halving of a 256-term chunk (`buf[k] += buf[k + w]` for `w` =
/// 128, 64, 32, 16) without the buffer: `first(x)` is the first level's
/// sixteen values at `x..x + 16` (`t[x + i] + t[x + i + 128]`), and the
/// result is the sixteen values the halving leaves at the front, each
/// the same additions in the same order (depth first, in registers: the
/// in-place halving stored and reloaded every level).
#[inline(always)]
fn halved<T: Copy + std::ops::AddAssign>(first: impl Fn(usize) -> [T; ACCS]) -> [T; ACCS] {
    // (loops, not `array::from_fn`: that was left a call, outside the
    // caller's target features)
    #[inline(always)]
    fn add<T: Copy + std::ops::AddAssign>(mut a: [T; ACCS], b: [T; ACCS]) -> [T; ACCS] {
        for i in 0..ACCS {
            a[i] += b[i];
        }
        a
    }
    // (written out: closures for the levels were left calls)
    let (f0, f64_, f32_, f96) = (first(0), first(64), first(32), first(96));
    let lo = add(add(f0, f64_), add(f32_, f96));
    let (f16, f80, f48, f112) = (first(16), first(80), first(48), first(112));
    add(lo, add(add(f16, f80), add(f48, f112)))
}

/// [`halved`] of a chunk held in `buf` (256 terms).
#[inline(always)]
fn halved_buf<T: Copy + std::ops::AddAssign>(buf: &[T]) -> [T; ACCS] {
    halved(
        #[inline(always)]
        |x| first_level(buf, x, |t| t),
    )
}

/// The first level of [`halved`] at `x` from a whole chunk `s`: `t(s[x +
/// i]) + t(s[x + i + 128])`.
#[inline(always)]
fn first_level<T: Copy + std::ops::AddAssign>(s: &[T], x: usize, t: impl Fn(T) -> T) -> [T; ACCS] {
    let (a, b) = (&s[x..x + ACCS], &s[x + 128..x + 128 + ACCS]);
    let mut r = [a[0]; ACCS];
    for i in 0..ACCS {
        r[i] = t(a[i]);
        r[i] += t(b[i]);
    }
    r
}

/// One [`SUM_BLOCK`]-term block of `Σ term(x)`: per chunk of 256 the
/// terms added pairwise ([`halved`]; a whole chunk's terms straight from
/// the slice into the first level, a partial chunk's through a buffer
/// padded with `+0` terms, as [`run_sum`] pads it) down to [`ACCS`]
/// values, those into [`ACCS`] accumulators, summed as a balanced tree
/// ([`pairwise`]): `run_sum`'s additions in `run_sum`'s order. The plain
/// sums and sums of squares of `f64` (`moments`) and `f32` (`single`).
#[inline(always)]
fn term_block<T: Copy + Default + std::ops::AddAssign>(
    blk: &[T],
    term: impl Fn(T) -> T + Copy,
) -> T {
    const CH: usize = 16 * ACCS;
    let mut acc = [T::default(); ACCS];
    for s in blk.chunks(CH) {
        let sixteen = if s.len() == CH {
            halved(
                #[inline(always)]
                |x| first_level(s, x, term),
            )
        } else {
            // (+0 terms: the sum of the others, -0 aside)
            let mut buf = [T::default(); CH];
            for (t, x) in buf.iter_mut().zip(s) {
                *t = term(*x);
            }
            halved_buf(&buf)
        };
        for (a, x) in acc.iter_mut().zip(sixteen) {
            *a += x;
        }
    }
    pairwise(acc)
}

/// The sum of `acc` as a balanced tree.
#[inline(always)]
fn pairwise<T: Copy + std::ops::AddAssign>(acc: [T; ACCS]) -> T {
    let mut a = acc;
    let mut w = ACCS;
    while w > 1 {
        w /= 2;
        for k in 0..w {
            a[k] += a[k + w];
        }
    }
    a[0]
}

/// `Σ block(b)` over the [`SUM_BLOCK`]-term blocks `b` of `xs`, the
/// blocks' totals on two levels (as `jit::emit::common::Levels`); the
/// `f64` and `f32` sums (`vmath/single.rs`) alike.
#[inline(always)]
fn sum_blocks<T: Copy + Default + std::ops::AddAssign + std::ops::Add<Output = T>>(
    xs: &[T],
    mut block: impl FnMut(&[T]) -> T,
) -> T {
    let (mut outer, mut mid, mut k) = (T::default(), T::default(), 0);
    for b in xs.chunks(SUM_BLOCK) {
        mid += block(b);
        k += 1;
        if k == MID {
            outer += mid;
            mid = T::default();
            k = 0;
        }
    }
    outer + mid
}

/// [`sum_of`]'s lane code: per chunk, the terms into a stack buffer (in
/// cache) by the map's code, the chunk added pairwise in place (halves
/// onto halves down to [`ACCS`] values: plain loops over consecutive
/// elements, which vectorise; [`halved`]'s registers measured slower
/// here, after a function's map, than in the plain sums), those into
/// [`ACCS`] accumulators.
/// (Each form is compiled in a function of its own, [`x86`]: with both
/// forms in one function some lanes were not inlined, see
/// [`run_func_to_add`]. Accumulating a chunk straight into `[f64; 16]`
/// was vectorised across chunks, by gathers.)
///
/// Generic over the element type: the `f32` sums (`vmath/single.rs`) are
/// this function in `f32`. The closures are inlined into the caller (a
/// kernel compiled with a level's features): compiled on their own, they
/// would lack those features, and the `f32` form's pairwise loops did run
/// on SSE2 so.
#[inline(always)]
fn run_sum<T: Copy + Default + std::ops::AddAssign + std::ops::Add<Output = T>>(
    xs: &[T],
    mut terms: impl FnMut(&[T], &mut [T]),
) -> T {
    const CH: usize = 256;
    const _: () = assert!(CH == 16 * ACCS);
    sum_blocks(
        xs,
        #[inline(always)]
        |blk| {
            let mut acc = [T::default(); ACCS];
            let mut buf = [T::default(); CH];
            for s in blk.chunks(CH) {
                terms(s, &mut buf[..s.len()]);
                if s.len() < CH {
                    // (+0 terms: the sum of the others, -0 aside)
                    buf[s.len()..].fill(T::default());
                }
                let mut w = CH;
                while w > ACCS {
                    w /= 2;
                    let (a, b) = buf.split_at_mut(w);
                    for (x, y) in a.iter_mut().zip(&b[..w]) {
                        *x += *y;
                    }
                }
                for (a, x) in acc.iter_mut().zip(&buf[..ACCS]) {
                    *a += *x;
                }
            }
            pairwise(acc)
        },
    )
}

/// A double's place in the total order of the doubles, as an integer
/// (-NaN < -inf < … < -0 < +0 < … < +inf < +NaN); its own inverse.
#[inline(always)]
fn order_key(x: f64) -> i64 {
    let b = x.to_bits() as i64;
    b ^ ((((b >> 63) as u64) >> 1) as i64)
}

/// [`reduce_of`]'s lane code: the largest and the smallest key, two
/// integer reductions (which vectorise, five operations per vector with
/// the key). A NaN has a key above +inf's or below -inf's (by its sign),
/// so it shows in one of the two; without one, the extreme the
/// reduction asks for is its result (the identity for no elements).
#[inline(always)]
fn run_reduce(op: RedOp, xs: &[f64]) -> f64 {
    let (top, bottom) = (order_key(f64::INFINITY), order_key(f64::NEG_INFINITY));
    let (mut hi, mut lo) = (bottom, top);
    for &x in xs {
        let k = order_key(x);
        hi = hi.max(k);
        lo = lo.min(k);
    }
    if hi > top || lo < bottom {
        return f64::NAN;
    }
    let k = if op == RedOp::Max { hi } else { lo };
    f64::from_bits(order_key(f64::from_bits(k as u64)) as u64)
}

#[cfg(target_arch = "x86_64")]
mod exp;

#[cfg(target_arch = "x86_64")]
mod x86 {
    use crate::syntax::ast::Func;
    use crate::syntax::ast::RedOp;
    use crate::vmath::{
        add_then, erf, exp, quotient, run_func, run_func_to, run_func_to_add, run_reduce, run_sum,
        tanh,
    };

    #[target_feature(enable = "avx2,fma")]
    unsafe fn avx2_sum(f: Func, xs: &[f64]) -> f64 {
        if f == Func::Tanh {
            return run_sum(xs, |s, t| tanh::apply_to256(s, t, None));
        }
        run_sum(xs, |s, t| run_func_to(f, s, t))
    }

    #[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
    unsafe fn avx512_sum(f: Func, xs: &[f64]) -> f64 {
        if f == Func::Tanh {
            return run_sum(xs, |s, t| tanh::apply_to(s, t, None));
        }
        run_sum(xs, |s, t| run_func_to(f, s, t))
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn avx2_sum_add(f: Func, xs: &[f64], c: f64) -> f64 {
        if f == Func::Tanh {
            return run_sum(xs, |s, t| tanh::apply_to256(s, t, Some(c)));
        }
        run_sum(xs, |s, t| add_then(f, s, t, c))
    }

    #[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
    unsafe fn avx512_sum_add(f: Func, xs: &[f64], c: f64) -> f64 {
        if f == Func::Tanh {
            return run_sum(xs, |s, t| tanh::apply_to(s, t, Some(c)));
        }
        run_sum(xs, |s, t| add_then(f, s, t, c))
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn avx2_reduce(op: RedOp, xs: &[f64]) -> f64 {
        run_reduce(op, xs)
    }

    #[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
    unsafe fn avx512_reduce(op: RedOp, xs: &[f64]) -> f64 {
        use std::arch::x86_64::*;
        range_reduce!(
            op,
            xs,
            f64,
            __m512d,
            __mmask8,
            8,
            identity = op.identity(),
            set1 = _mm512_set1_pd,
            load = _mm512_loadu_pd,
            mask_load = _mm512_mask_loadu_pd,
            store = _mm512_storeu_pd,
            range = _mm512_range_pd,
            cmp = _mm512_cmp_pd_mask
        )
    }

    /// # Safety
    /// The level's features (AVX2+FMA, or AVX-512 F/DQ/VL too) are present.
    pub(super) unsafe fn sum(f: Func, wide: bool, xs: &[f64], c: Option<f64>) -> f64 {
        // SAFETY: the caller checked the features.
        unsafe {
            if f == Func::Exp {
                return exp_sum(wide, xs, c);
            }
            if f == Func::Erf {
                return erf_sum(wide, xs, c);
            }
            match (wide, c) {
                (true, None) => avx512_sum(f, xs),
                (false, None) => avx2_sum(f, xs),
                (true, Some(c)) => avx512_sum_add(f, xs, c),
                (false, Some(c)) => avx2_sum_add(f, xs, c),
            }
        }
    }

    /// `dst[i] = src[i] / c` for `i < n` (`vmath/quotient.rs`'s kernels
    /// where they serve `c`, the divider otherwise).
    ///
    /// # Safety
    /// The level's features (AVX2+FMA, or AVX-512 F/DQ/VL too) are present;
    /// `src` has `n` readable elements, `dst` room for `n`, the two equal
    /// or disjoint.
    pub(super) unsafe fn div(wide: bool, src: *const f64, dst: *mut f64, n: usize, c: f64) {
        // SAFETY: the caller checked the features and the buffers.
        unsafe {
            match (quotient::serves(c), wide) {
                (true, true) => quotient::div512::<false>(src, dst, n, 0.0, c),
                (true, false) => quotient::div256::<false>(src, dst, n, 0.0, c),
                (false, _) => {
                    for i in 0..n {
                        *dst.add(i) = *src.add(i) / c;
                    }
                }
            }
        }
    }

    /// # Safety
    /// The level's features (AVX2+FMA, or AVX-512 F/DQ/VL too) are present.
    pub(super) unsafe fn reduce(op: RedOp, wide: bool, xs: &[f64]) -> f64 {
        // SAFETY: the caller checked the features.
        unsafe {
            if wide {
                avx512_reduce(op, xs)
            } else {
                avx2_reduce(op, xs)
            }
        }
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn avx2(f: Func, xs: &mut [f64]) {
        if f == Func::Tanh {
            return tanh::apply256(xs);
        }
        run_func(f, xs)
    }

    #[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
    unsafe fn avx512(f: Func, xs: &mut [f64]) {
        if f == Func::Tanh {
            return tanh::apply(xs);
        }
        run_func(f, xs)
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn avx2_to(f: Func, xs: &[f64], ys: &mut [f64]) {
        if f == Func::Tanh {
            return tanh::apply_to256(xs, ys, None);
        }
        run_func_to(f, xs, ys)
    }

    #[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
    unsafe fn avx512_to(f: Func, xs: &[f64], ys: &mut [f64]) {
        if f == Func::Tanh {
            return tanh::apply_to(xs, ys, None);
        }
        run_func_to(f, xs, ys)
    }

    // (functions of their own: with both forms in one function, some
    // lanes were not inlined into it and ran 20 times slower)
    #[target_feature(enable = "avx2,fma")]
    unsafe fn avx2_to_add(f: Func, xs: &[f64], ys: &mut [f64], c: f64) {
        if f == Func::Tanh {
            return tanh::apply_to256(xs, ys, Some(c));
        }
        run_func_to_add(f, xs, ys, c)
    }

    #[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
    unsafe fn avx512_to_add(f: Func, xs: &[f64], ys: &mut [f64], c: f64) {
        if f == Func::Tanh {
            return tanh::apply_to(xs, ys, Some(c));
        }
        run_func_to_add(f, xs, ys, c)
    }

    /// # Safety
    /// The level's features (AVX2+FMA, or AVX-512 F/DQ/VL too) are present.
    pub(super) unsafe fn run_to(f: Func, wide: bool, xs: &[f64], ys: &mut [f64], c: Option<f64>) {
        // SAFETY: the caller checked the features.
        unsafe {
            if f == Func::Exp {
                return exp_map(wide, xs.as_ptr(), ys.as_mut_ptr(), xs.len(), c);
            }
            if f == Func::Erf {
                return erf_map(wide, xs.as_ptr(), ys.as_mut_ptr(), xs.len(), c);
            }
            match (wide, c) {
                (true, None) => avx512_to(f, xs, ys),
                (false, None) => avx2_to(f, xs, ys),
                (true, Some(c)) => avx512_to_add(f, xs, ys, c),
                (false, Some(c)) => avx2_to_add(f, xs, ys, c),
            }
        }
    }

    /// # Safety
    /// The level's features (AVX2+FMA, or AVX-512 F/DQ/VL too) are present.
    pub(super) unsafe fn run(f: Func, wide: bool, xs: &mut [f64]) {
        // SAFETY: the caller checked the features.
        unsafe {
            if f == Func::Exp {
                return exp_map(wide, xs.as_ptr(), xs.as_mut_ptr(), xs.len(), None);
            }
            if f == Func::Erf {
                return erf_map(wide, xs.as_ptr(), xs.as_mut_ptr(), xs.len(), None);
            }
            if wide {
                avx512(f, xs)
            } else {
                avx2(f, xs)
            }
        }
    }

    // ---------------------------------------------- exp (src/vmath/exp.rs)

    #[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
    fn exp_sum512<const ADD: bool>(xs: &[f64], c: f64) -> f64 {
        // SAFETY: `xs` has `len` elements; the features are enabled here.
        unsafe { exp::sum512::<ADD>(xs.as_ptr(), xs.len(), c) }
    }

    #[target_feature(enable = "avx2,fma")]
    fn exp_sum2<const ADD: bool>(xs: &[f64], c: f64) -> f64 {
        // SAFETY: `xs` has `len` elements; the features are enabled here.
        unsafe { exp::sum256::<ADD>(xs.as_ptr(), xs.len(), c) }
    }

    /// `dst[i] = e^(src[i] + c)` (`e^src[i]` without `c`) for `i < n`, at
    /// AVX-512 when `wide`, else AVX2.
    ///
    /// # Safety
    /// The level's features are present; `src` points to `n` initialised
    /// doubles and `dst` to room for `n`, equal or disjoint.
    pub(super) unsafe fn exp_map(
        wide: bool,
        src: *const f64,
        dst: *mut f64,
        n: usize,
        c: Option<f64>,
    ) {
        // SAFETY: the caller's contract.
        unsafe {
            match (wide, c) {
                (true, None) => exp::map512::<false>(src, dst, n, 0.0),
                (true, Some(c)) => exp::map512::<true>(src, dst, n, c),
                (false, None) => exp::map256::<false>(src, dst, n, 0.0),
                (false, Some(c)) => exp::map256::<true>(src, dst, n, c),
            }
        }
    }

    /// `Σ e^(xs[i] + c)` as [`crate::vmath::sum_of`] adds it, at AVX-512
    /// when `wide`, else AVX2.
    ///
    /// # Safety
    /// The level's features are present.
    pub(super) unsafe fn exp_sum(wide: bool, xs: &[f64], c: Option<f64>) -> f64 {
        // SAFETY: the caller's contract.
        unsafe {
            match (wide, c) {
                (true, None) => exp_sum512::<false>(xs, 0.0),
                (true, Some(c)) => exp_sum512::<true>(xs, c),
                (false, None) => exp_sum2::<false>(xs, 0.0),
                (false, Some(c)) => exp_sum2::<true>(xs, c),
            }
        }
    }

    // ---------------------------------------------- erf (src/vmath/erf.rs)

    /// `dst[i] = erf(src[i] + c)` (`erf(src[i])` without `c`) for
    /// `i < n`, at AVX-512 when `wide`, else AVX2.
    ///
    /// # Safety
    /// The level's features are present; `src` points to `n` initialised
    /// doubles and `dst` to room for `n`, equal or disjoint.
    pub(super) unsafe fn erf_map(
        wide: bool,
        src: *const f64,
        dst: *mut f64,
        n: usize,
        c: Option<f64>,
    ) {
        // SAFETY: the caller's contract.
        unsafe {
            match (wide, c) {
                (true, None) => erf::map512::<false>(src, dst, n, 0.0),
                (true, Some(c)) => erf::map512::<true>(src, dst, n, c),
                (false, None) => erf::map2::<false>(src, dst, n, 0.0),
                (false, Some(c)) => erf::map2::<true>(src, dst, n, c),
            }
        }
    }

    #[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
    fn erf_sum512<const ADD: bool>(xs: &[f64], c: f64) -> f64 {
        // SAFETY: `s` and `t` are as long (a chunk and its buffer).
        run_sum(xs, |s, t| unsafe {
            erf::map512::<ADD>(s.as_ptr(), t.as_mut_ptr(), s.len(), c)
        })
    }

    #[target_feature(enable = "avx2,fma")]
    fn erf_sum2<const ADD: bool>(xs: &[f64], c: f64) -> f64 {
        // SAFETY: `s` and `t` are as long (a chunk and its buffer).
        run_sum(xs, |s, t| unsafe {
            erf::map2::<ADD>(s.as_ptr(), t.as_mut_ptr(), s.len(), c)
        })
    }

    /// `Σ erf(xs[i] + c)` as [`crate::vmath::sum_of`] adds it, at AVX-512
    /// when `wide`, else AVX2.
    ///
    /// # Safety
    /// The level's features are present.
    pub(super) unsafe fn erf_sum(wide: bool, xs: &[f64], c: Option<f64>) -> f64 {
        // SAFETY: the caller's contract.
        unsafe {
            match (wide, c) {
                (true, None) => erf_sum512::<false>(xs, 0.0),
                (true, Some(c)) => erf_sum512::<true>(xs, c),
                (false, None) => erf_sum2::<false>(xs, 0.0),
                (false, Some(c)) => erf_sum2::<true>(xs, c),
            }
        }
    }
}

// ---------------------------------------------------------------------------
// pow (vmath/pow.rs)

mod pow;

/// The kernel of `pow` for `level` (a level this CPU lacks: the scalar
/// fallback).
fn pow_isa(level: Level) -> pow::Isa {
    match level {
        l if !levels().contains(&l) => pow::Isa::Scalar,
        Level::Scalar => pow::Isa::Scalar,
        Level::Avx2 => pow::Isa::Avx2,
        Level::Avx512 => pow::Isa::Avx512,
    }
}

/// `dst[i] = pow(xs[i], ys[i])` (C's `pow`, [`Func::Pow`]) at `level`,
/// within 1 ulp of the correctly rounded result, special values exactly
/// `f64::powf` (`vmath/pow.rs`); every slice of the same length.
pub fn pow_to_at(level: Level, xs: &[f64], ys: &[f64], dst: &mut [f64]) {
    assert!(
        xs.len() == ys.len() && xs.len() == dst.len(),
        "pow_to: slices of different lengths"
    );
    // SAFETY: the level's features are checked by `pow_isa`; three slices
    // of `n` elements, `dst` borrowed apart from the others.
    unsafe {
        pow::pow_raw(
            pow_isa(level),
            xs.as_ptr(),
            Some(ys.as_ptr()),
            0.0,
            dst.as_mut_ptr(),
            xs.len(),
        )
    }
}

/// `dst[i] = pow(xs[i], c)` at `level` ([`pow_to_at`] with a constant
/// exponent).
pub fn pow_const_to_at(level: Level, xs: &[f64], c: f64, dst: &mut [f64]) {
    assert_eq!(
        xs.len(),
        dst.len(),
        "pow_const_to: slices of different lengths"
    );
    // SAFETY: as in `pow_to_at`.
    unsafe {
        pow::pow_raw(
            pow_isa(level),
            xs.as_ptr(),
            None,
            c,
            dst.as_mut_ptr(),
            xs.len(),
        )
    }
}

/// `dst[i] = pow(xs[i], ys[i])` at the best level ([`pow_to_at`]).
pub fn pow_to(xs: &[f64], ys: &[f64], dst: &mut [f64]) {
    pow_to_at(best(), xs, ys, dst)
}

/// `dst[i] = pow(xs[i], c)` at the best level ([`pow_const_to_at`]).
pub fn pow_const_to(xs: &[f64], c: f64, dst: &mut [f64]) {
    pow_const_to_at(best(), xs, c, dst)
}

/// A JIT entry point: `dst[i] = pow(x[i], y[i])` for `i` in `0..n` at the
/// best level ([`pow_to`]); `dst` may be `x` or `y`.
///
/// # Safety
/// `x` and `y` point to `n` initialised `f64`s and `dst` to room for `n`
/// (or `n <= 0`); `dst` equal to `x` or `y` or disjoint from both.
pub unsafe extern "C" fn einsat_vpow(x: *const f64, y: *const f64, dst: *mut f64, n: i64) {
    if n > 0 {
        // SAFETY: the caller's contract; `best` detected the features.
        unsafe { pow::pow_raw(pow_isa(best()), x, Some(y), 0.0, dst, n as usize) }
    }
}

/// A JIT entry point: `dst[i] = pow(x[i], c)` for `i` in `0..n` at the
/// best level ([`pow_const_to`]); `dst` may be `x`.
///
/// # Safety
/// `x` points to `n` initialised `f64`s and `dst` to room for `n` (or
/// `n <= 0`); `dst` equal to `x` or disjoint from it.
pub unsafe extern "C" fn einsat_vpow_const(x: *const f64, dst: *mut f64, n: i64, c: f64) {
    if n > 0 {
        // SAFETY: the caller's contract; `best` detected the features.
        unsafe { pow::pow_raw(pow_isa(best()), x, None, c, dst, n as usize) }
    }
}
