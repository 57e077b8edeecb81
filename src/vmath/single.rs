//! The `f32` forms of [`crate::vmath`]'s slice kernels, for programs run
//! in `Precision::F32` (`f32` in, `f32` out, no `f64` buffers on the
//! caller's side): the maps `y = f(x + c)` of `exp`, `log`, `sin`, `cos`,
//! `tanh` ([`apply_to_add_f32`]), their fused sums `Σ f(x[i] + c)`
//! ([`sum_of_f32`]), the `maximum`/`minimum` of a slice
//! ([`reduce_of_f32`]), and the passes of a layer normalisation and a
//! softmax: `Σ x`, `Σ (x + c)²`, the affine maps and `x / c`
//! ([`sum_f32`], [`sum_sq_add_f32`], [`affine_to_f32`], [`div_to_f32`]).
//!
//! **Values.** As the interpreter's `F32`: `x + c` rounded to `f32`,
//! then the `f64` function of the (exact) widened argument rounded to
//! `f32`. `exp` has kernels of its own in `f32` lanes at AVX-512 (sixteen
//! lanes, `single/avx512.rs`) and at AVX2 (eight, `single/avx2.rs`):
//! range reduction, table and polynomial in `f32` with the leading
//! terms summed exactly, rounded once; within 1 ulp of the correctly
//! rounded value (checked over all `2^32` inputs: `cargo run --release
//! --example f32_exp_all`), and equal to the library's rounded result
//! for every argument: each kernel computes the lanes whose rounding it
//! cannot vouch for (about 0.1% of lanes at AVX-512, 0.14% at AVX2) in
//! `f64` lanes by the `f64` `exp` kernel, and hands the subnormal band
//! and the few of those that lie within two doubles of a rounding
//! boundary of `f32` to the library.
//! `tanh` has one in `f32` lanes at AVX-512 (`single/avx512.rs`: 26
//! intervals of `|x|` found from its bits, tables by permutes, a
//! polynomial, rounded once; within 0.8 ulp of the exact value, and
//! other than the library's rounded result for 0.033% of all `2^32`
//! inputs) and one in double lanes at AVX2 (`single/avx2.rs`: `e^{2a}`
//! without a table, one division, rounded once; the library's rounded
//! result but in rare double-rounding cases).
//! The other functions widen a chunk of 256 arguments
//! into a stack buffer of doubles, run the parent's `f64` kernel there
//! (within 1 `f64` ulp of the library) and round each result to `f32`:
//! again equal to the library's rounded result but for double rounding.
//! Special values (NaN, ±inf, ±0, subnormals, overflow) follow from the
//! `f64` kernels' exact special values and the one rounding.
//!
//! **Sums** accumulate in `f32` in the order of the parent's `f64`
//! ones: per [`super::SUM_BLOCK`]-term block, chunks of 256 terms added
//! pairwise (halves onto halves) down to sixteen values, those into
//! sixteen accumulators, the blocks' totals on two levels; every term
//! is the `f32` value of the term (`(x + c)·(x + c)` the rounded sum,
//! then the rounded product). The fused sums of `exp` and `tanh` at AVX2
//! and AVX-512 keep a whole chunk's terms in registers (the parent's
//! `fused_sum!`: the same additions, no buffer, no call per chunk; in
//! one run on Zen 4, log-sum-exp of 2^20 took 0.40 ms against 0.47).
//! The affine maps and the division are the
//! written `f32` operations (an IEEE division: `vmath/quotient.rs`'s
//! divider-free quotient measured slower than `vdivps` for `f32` on Zen
//! 4, 0.13 against 0.10 ns per element, so `f32` keeps the divider).
//!
//! **Dispatch.** As the parent's: the code compiled for AVX-512, for
//! AVX2 with FMA and plainly, chosen at run time ([`super::best`]);
//! [`apply_at_f32`] picks a level (the tests sweep each).
//!
//! Owns these `f32` kernels and their JIT entry points; it knows nothing
//! of programs.

use super::{run_sum, Affine, Level};
use crate::syntax::ast::{Func, RedOp};

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
#[cfg(target_arch = "x86_64")]
mod table32;
#[cfg(target_arch = "x86_64")]
mod tanh32;

/// Elements per chunk (a stack buffer of doubles, a chunk of a sum).
const CH: usize = 256;

/// `ys[i] = f(xs[i] + c)` (`f(xs[i])` without `c`) in `f32`, at the best
/// level: the sum rounded to `f32`, then the `f64` function of it rounded
/// to `f32`. `f` takes one argument (`max`/`min` are applied as
/// `f(x, x)`).
pub fn apply_to_add_f32(f: Func, xs: &[f32], ys: &mut [f32], c: Option<f32>) {
    assert_eq!(
        xs.len(),
        ys.len(),
        "apply_to_add_f32: slices of different lengths"
    );
    map_at(f, super::best(), xs, ys, c)
}

/// [`apply_to_add_f32`] at `level`, which must be one of
/// [`super::levels`] (a level this CPU lacks runs the scalar fallback).
pub fn apply_at_f32(f: Func, level: Level, xs: &[f32], ys: &mut [f32], c: Option<f32>) {
    assert_eq!(
        xs.len(),
        ys.len(),
        "apply_at_f32: slices of different lengths"
    );
    map_at(f, super::checked(level), xs, ys, c)
}

/// The map at a level this CPU has.
fn map_at(f: Func, level: Level, xs: &[f32], ys: &mut [f32], c: Option<f32>) {
    #[cfg(target_arch = "x86_64")]
    if let Some(k) = own_kernel(f, level, c.is_some()) {
        // SAFETY: the level's features were detected; `xs` and `ys` are
        // as long, distinct slices.
        unsafe { k(xs.as_ptr(), ys.as_mut_ptr(), xs.len(), c.unwrap_or(0.0)) };
        return;
    }
    if level == Level::Scalar || !super::has_kernel(f) {
        for (y, x) in ys.iter_mut().zip(xs) {
            let x = c.map_or(*x, |c| *x + c);
            *y = f.apply(&[f64::from(x), f64::from(x)]) as f32;
        }
        return;
    }
    let mut buf = [0.0f64; CH];
    for (s, d) in xs.chunks(CH).zip(ys.chunks_mut(CH)) {
        let b = &mut buf[..s.len()];
        match c {
            None => widen(s, b),
            Some(c) => widen_add(s, b, c),
        }
        if level == super::best() {
            super::apply(f, b);
        } else {
            super::apply_at(f, level, b);
        }
        narrow(b, d);
    }
}

#[inline]
fn widen(s: &[f32], b: &mut [f64]) {
    for (w, x) in b.iter_mut().zip(s) {
        *w = f64::from(*x);
    }
}

#[inline]
fn widen_add(s: &[f32], b: &mut [f64], c: f32) {
    for (w, x) in b.iter_mut().zip(s) {
        *w = f64::from(*x + c);
    }
}

#[inline]
fn narrow(b: &[f64], d: &mut [f32]) {
    for (y, w) in d.iter_mut().zip(b) {
        *y = *w as f32;
    }
}

/// An `f32` kernel of its own: `dst[i] = f(src[i] + c)` (or `f(src[i])`)
/// for `i < n`.
#[cfg(target_arch = "x86_64")]
type OwnKernel = unsafe fn(*const f32, *mut f32, usize, f32);

/// The kernel of its own that `f` has at `level` (`exp` and `tanh` at
/// AVX2, `single/avx2.rs`, and AVX-512, `single/avx512.rs`), of `f(x +
/// c)` when `add`; `None` for the others, which widen into the `f64`
/// kernels. Calling it needs the level's features, `src` with `n`
/// initialised `f32`s and `dst` room for `n`, the two equal or disjoint.
#[cfg(target_arch = "x86_64")]
fn own_kernel(f: Func, level: Level, add: bool) -> Option<OwnKernel> {
    Some(match (level, f, add) {
        (Level::Avx512, Func::Exp, false) => avx512::exp512::<false>,
        (Level::Avx512, Func::Exp, true) => avx512::exp512::<true>,
        (Level::Avx512, Func::Tanh, false) => avx512::tanh512::<false>,
        (Level::Avx512, Func::Tanh, true) => avx512::tanh512::<true>,
        (Level::Avx2, Func::Exp, false) => avx2::exp256::<false>,
        (Level::Avx2, Func::Exp, true) => avx2::exp256::<true>,
        (Level::Avx2, Func::Tanh, false) => avx2::tanh256::<false>,
        (Level::Avx2, Func::Tanh, true) => avx2::tanh256::<true>,
        _ => return None,
    })
}

/// `dst[i] = f(src[i] + c)`, `src` and `dst` equal or disjoint (the
/// JIT's entry points).
///
/// # Safety
/// `src` points to `n` initialised `f32`s and `dst` to room for `n`.
unsafe fn map_raw(f: Func, src: *const f32, dst: *mut f32, n: usize, c: Option<f32>) {
    if n == 0 {
        return;
    }
    let (a, b) = (src as usize, dst as usize);
    if a < b + n * 4 && b < a + n * 4 {
        // in place (or overlapping): from a copy
        // SAFETY: the caller passes `n` elements at each.
        let xs = unsafe { std::slice::from_raw_parts(src, n) }.to_vec();
        let ys = unsafe { std::slice::from_raw_parts_mut(dst, n) };
        return apply_to_add_f32(f, &xs, ys, c);
    }
    // SAFETY: the caller passes `n` elements at each, not overlapping.
    let (xs, ys) = unsafe {
        (
            std::slice::from_raw_parts(src, n),
            std::slice::from_raw_parts_mut(dst, n),
        )
    };
    apply_to_add_f32(f, xs, ys, c)
}

/// `Σ f(xs[i] + c)` (`Σ f(xs[i])` without `c`) in `f32`, at the best
/// level: each term what [`apply_to_add_f32`] gives, added in `f32` in
/// blocks (module doc); 0 for an empty slice.
pub fn sum_of_f32(f: Func, xs: &[f32], c: Option<f32>) -> f32 {
    super::par_sum(xs, |g| sum_seq_f32(f, g, c))
}

/// [`sum_of_f32`] at `level` (on this thread), which must be one of
/// [`super::levels`] (a level this CPU lacks runs the scalar fallback).
pub fn sum_of_at_f32(f: Func, level: Level, xs: &[f32], c: Option<f32>) -> f32 {
    sum_level_f32(f, super::checked(level), xs, c)
}

/// [`sum_of_f32`] on this thread.
fn sum_seq_f32(f: Func, xs: &[f32], c: Option<f32>) -> f32 {
    sum_level_f32(f, super::best(), xs, c)
}

/// [`sum_of_f32`] on this thread at a level this CPU has.
fn sum_level_f32(f: Func, level: Level, xs: &[f32], c: Option<f32>) -> f32 {
    match level {
        #[cfg(target_arch = "x86_64")]
        Level::Avx2 | Level::Avx512 => {
            // SAFETY: `best` detected the level's features on this CPU.
            unsafe { x86::sum_of(f, level == Level::Avx512, xs, c) }
        }
        _ => run_sum(xs, |s, t| map_at(f, level, s, t, c)),
    }
}

/// A term of the plain sum.
#[inline(always)]
fn plain(x: f32, _c: f32) -> f32 {
    x
}

/// A term of the sum of squares: the rounded sum, then the rounded
/// product.
#[inline(always)]
fn square(x: f32, c: f32) -> f32 {
    let d = x + c;
    d * d
}

/// [`run_sum`] of `term(x, c)`, written out ([`super::term_block`]:
/// whole chunks straight from the slice, no copy into a chunk buffer).
#[inline(always)]
fn term_sum(xs: &[f32], c: f32, term: impl Fn(f32, f32) -> f32 + Copy) -> f32 {
    super::sum_blocks(
        xs,
        #[inline(always)]
        |blk| super::term_block(blk, |x| term(x, c)),
    )
}

/// `Σ xs[i]` in `f32` at the best level (the sums' order, module doc);
/// 0 for an empty slice.
pub fn sum_f32(xs: &[f32]) -> f32 {
    match super::best() {
        #[cfg(target_arch = "x86_64")]
        l @ (Level::Avx2 | Level::Avx512) => {
            // SAFETY: `best` detected the level's features on this CPU.
            unsafe { x86::sum_sq(l == Level::Avx512, false, xs, 0.0) }
        }
        _ => term_sum(xs, 0.0, plain),
    }
}

/// `Σ (xs[i] + c)·(xs[i] + c)` in `f32` at the best level: each term the
/// rounded sum, then the rounded product (no fused multiply-add); 0 for
/// an empty slice.
pub fn sum_sq_add_f32(xs: &[f32], c: f32) -> f32 {
    match super::best() {
        #[cfg(target_arch = "x86_64")]
        l @ (Level::Avx2 | Level::Avx512) => {
            // SAFETY: `best` detected the level's features on this CPU.
            unsafe { x86::sum_sq(l == Level::Avx512, true, xs, c) }
        }
        _ => term_sum(xs, c, square),
    }
}

/// A `f32`'s place in the total order of the floats, as an integer
/// (-NaN < -inf < … < -0 < +0 < … < +inf < +NaN); its own inverse.
#[inline(always)]
fn order_key(x: f32) -> i32 {
    let b = x.to_bits() as i32;
    b ^ ((((b >> 31) as u32) >> 1) as i32)
}

/// As the parent's `f64` reduction: the largest and the smallest key,
/// NaN if either is beyond ±inf's.
#[inline(always)]
fn run_reduce(op: RedOp, xs: &[f32]) -> f32 {
    let (top, bottom) = (order_key(f32::INFINITY), order_key(f32::NEG_INFINITY));
    let (mut hi, mut lo) = (bottom, top);
    for &x in xs {
        let k = order_key(x);
        hi = hi.max(k);
        lo = lo.min(k);
    }
    if hi > top || lo < bottom {
        return f32::NAN;
    }
    let k = if op == RedOp::Max { hi } else { lo };
    f32::from_bits(order_key(f32::from_bits(k as u32)) as u32)
}

/// The reduction `op` of an `f32` slice: IEEE 754-2019 `maximum` or
/// `minimum` (NaN if any element is NaN, -0 below +0), its identity
/// (-inf, +inf) for an empty slice; at the best level.
pub fn reduce_of_f32(op: RedOp, xs: &[f32]) -> f32 {
    super::par_reduce(xs, |g| reduce_seq_f32(op, g), |v| reduce_seq_f32(op, v))
}

/// [`reduce_of_f32`] on this thread.
fn reduce_seq_f32(op: RedOp, xs: &[f32]) -> f32 {
    match super::best() {
        #[cfg(target_arch = "x86_64")]
        l @ (Level::Avx2 | Level::Avx512) => {
            // SAFETY: `best` detected the level's features on this CPU.
            unsafe { x86::reduce(op, l == Level::Avx512, xs) }
        }
        _ => run_reduce(op, xs),
    }
}

#[inline(always)]
fn run_affine(kind: Affine, xs: &[f32], ys: &mut [f32], c: f32, d: f32) {
    // (one loop per kind: each vectorises on its own)
    macro_rules! map {
        ($x:ident => $e:expr) => {
            for (y, &$x) in ys.iter_mut().zip(xs) {
                *y = $e;
            }
        };
    }
    match kind {
        Affine::AddDiv => map!(x => (x + c) / d),
        Affine::AddMul => map!(x => (x + c) * d),
        Affine::Mul => map!(x => x * d),
        Affine::Add => map!(x => x + c),
        Affine::Div => map!(x => x / d),
    }
}

/// `ys[i] = kind(xs[i], c, d)` in `f32` (the written IEEE operations,
/// each rounded to `f32`), at the best level.
pub fn affine_to_f32(kind: Affine, xs: &[f32], ys: &mut [f32], c: f32, d: f32) {
    affine_to_at_f32(kind, super::best(), xs, ys, c, d)
}

/// [`affine_to_f32`] at `level` (a level above this CPU's best runs the
/// scalar operations).
pub fn affine_to_at_f32(kind: Affine, level: Level, xs: &[f32], ys: &mut [f32], c: f32, d: f32) {
    assert_eq!(
        xs.len(),
        ys.len(),
        "affine_to_f32: slices of different lengths"
    );
    match level {
        #[cfg(target_arch = "x86_64")]
        l @ (Level::Avx2 | Level::Avx512) if l <= super::best() => {
            // SAFETY: `best` detected the level's features on this CPU.
            unsafe { x86::affine(kind, l == Level::Avx512, xs, ys, c, d) }
        }
        _ => run_affine(kind, xs, ys, c, d),
    }
}

/// `ys[i] = xs[i] / c` in `f32` (IEEE division), at the best level.
pub fn div_to_f32(xs: &[f32], ys: &mut [f32], c: f32) {
    affine_to_f32(Affine::Div, xs, ys, 0.0, c)
}

/// `src[0..n]` and `dst[0..n]` as slices, or `None` when they overlap.
///
/// # Safety
/// `src` points to `n` initialised `f32`s and `dst` to room for `n`.
unsafe fn two<'a>(src: *const f32, dst: *mut f32, n: usize) -> Option<(&'a [f32], &'a mut [f32])> {
    let (a, b) = (src as usize, dst as usize);
    if a < b + n * 4 && b < a + n * 4 {
        return None;
    }
    // SAFETY: the caller's contract, not overlapping.
    unsafe {
        Some((
            std::slice::from_raw_parts(src, n),
            std::slice::from_raw_parts_mut(dst, n),
        ))
    }
}

/// A JIT entry point: `dst[i] = kind(src[i], c, d)` for `i` in `0..n` in
/// `f32` ([`affine_to_f32`], `kind` an [`Affine::code`]); nothing for
/// `n <= 0` or an unknown code. `src` and `dst` may be the same buffer
/// or overlap (then read from a copy).
///
/// # Safety
/// `src` points to `n` initialised `f32`s and `dst` to room for `n` (or
/// `n <= 0`).
pub unsafe extern "C" fn einsat_vaffine_f32(
    src: *const f32,
    dst: *mut f32,
    n: i64,
    c: f32,
    d: f32,
    kind: i64,
) {
    let Some(kind) = Affine::from_code(kind) else {
        return;
    };
    if n <= 0 {
        return;
    }
    let n = n as usize;
    // SAFETY: the caller's contract.
    match unsafe { two(src, dst, n) } {
        Some((xs, ys)) => affine_to_f32(kind, xs, ys, c, d),
        None => {
            // SAFETY: the caller passes `n` elements at each.
            let xs = unsafe { std::slice::from_raw_parts(src, n) }.to_vec();
            let ys = unsafe { std::slice::from_raw_parts_mut(dst, n) };
            affine_to_f32(kind, &xs, ys, c, d)
        }
    }
}

/// A JIT entry point: `dst[i] = src[i] / c` in `f32` ([`div_to_f32`]).
///
/// # Safety
/// As [`einsat_vaffine_f32`].
pub unsafe extern "C" fn einsat_vdiv_f32(src: *const f32, dst: *mut f32, n: i64, c: f32) {
    // SAFETY: the caller's contract.
    unsafe { einsat_vaffine_f32(src, dst, n, 0.0, c, Affine::Div.code()) }
}

/// A JIT entry point: `Σ src[i]` in `f32` ([`sum_f32`]); 0 for `n <= 0`.
///
/// # Safety
/// `src` points to `n` initialised `f32`s (or `n <= 0`).
pub unsafe extern "C" fn einsat_vsum_f32(src: *const f32, n: i64) -> f32 {
    if n <= 0 {
        return 0.0;
    }
    // SAFETY: the caller's contract.
    sum_f32(unsafe { std::slice::from_raw_parts(src, n as usize) })
}

/// A JIT entry point: `Σ (src[i] + c)·(src[i] + c)` in `f32`
/// ([`sum_sq_add_f32`]); 0 for `n <= 0`.
///
/// # Safety
/// `src` points to `n` initialised `f32`s (or `n <= 0`).
pub unsafe extern "C" fn einsat_vsumsq_add_f32(src: *const f32, n: i64, c: f32) -> f32 {
    if n <= 0 {
        return 0.0;
    }
    // SAFETY: the caller's contract.
    sum_sq_add_f32(unsafe { std::slice::from_raw_parts(src, n as usize) }, c)
}

/// The JIT's `f32` maps, maps with an addend and fused sums of one
/// function.
macro_rules! entries {
    ($map:ident, $add:ident, $sum:ident, $f:expr) => {
        /// A JIT entry point: `dst[i] = f(src[i])` in `f32` for `i` in
        /// `0..n` ([`apply_to_add_f32`]).
        ///
        /// # Safety
        /// `src` points to `n` initialised `f32`s and `dst` to room for
        /// `n` (or `n <= 0`); in place or overlapping reads a copy.
        pub unsafe extern "C" fn $map(src: *const f32, dst: *mut f32, n: i64) {
            if n > 0 {
                // SAFETY: the caller's contract.
                unsafe { map_raw($f, src, dst, n as usize, None) }
            }
        }

        /// A JIT entry point: `dst[i] = f(src[i] + c)` in `f32` for `i`
        /// in `0..n` ([`apply_to_add_f32`]).
        ///
        /// # Safety
        /// As the entry point without addend.
        pub unsafe extern "C" fn $add(src: *const f32, dst: *mut f32, n: i64, c: f32) {
            if n > 0 {
                // SAFETY: the caller's contract.
                unsafe { map_raw($f, src, dst, n as usize, Some(c)) }
            }
        }

        /// A JIT entry point: `Σ f(src[i] + c)` in `f32` for `i` in
        /// `0..n` ([`sum_of_f32`]); 0 for `n <= 0`.
        ///
        /// # Safety
        /// `src` points to `n` initialised `f32`s (or `n <= 0`).
        pub unsafe extern "C" fn $sum(src: *const f32, n: i64, c: f32) -> f32 {
            if n <= 0 {
                return 0.0;
            }
            // SAFETY: the caller's contract.
            let xs = unsafe { std::slice::from_raw_parts(src, n as usize) };
            sum_of_f32($f, xs, Some(c))
        }
    };
}
entries!(
    einsat_vexp_f32,
    einsat_vexp_add_f32,
    einsat_vsum_exp_add_f32,
    Func::Exp
);
entries!(
    einsat_vlog_f32,
    einsat_vlog_add_f32,
    einsat_vsum_log_add_f32,
    Func::Log
);
entries!(
    einsat_vsin_f32,
    einsat_vsin_add_f32,
    einsat_vsum_sin_add_f32,
    Func::Sin
);
entries!(
    einsat_vcos_f32,
    einsat_vcos_add_f32,
    einsat_vsum_cos_add_f32,
    Func::Cos
);
entries!(
    einsat_vtanh_f32,
    einsat_vtanh_add_f32,
    einsat_vsum_tanh_add_f32,
    Func::Tanh
);
entries!(
    einsat_verf_f32,
    einsat_verf_add_f32,
    einsat_vsum_erf_add_f32,
    Func::Erf
);

/// A JIT entry point: the `maximum` of `src[0..n]` in `f32`
/// ([`reduce_of_f32`]); -inf for `n <= 0`.
///
/// # Safety
/// `src` points to `n` initialised `f32`s (or `n <= 0`).
pub unsafe extern "C" fn einsat_vmax_f32(src: *const f32, n: i64) -> f32 {
    if n <= 0 {
        return f32::NEG_INFINITY;
    }
    // SAFETY: the caller's contract.
    reduce_of_f32(RedOp::Max, unsafe {
        std::slice::from_raw_parts(src, n as usize)
    })
}

/// A JIT entry point: the `minimum` of `src[0..n]` in `f32`
/// ([`reduce_of_f32`]); +inf for `n <= 0`.
///
/// # Safety
/// `src` points to `n` initialised `f32`s (or `n <= 0`).
pub unsafe extern "C" fn einsat_vmin_f32(src: *const f32, n: i64) -> f32 {
    if n <= 0 {
        return f32::INFINITY;
    }
    // SAFETY: the caller's contract.
    reduce_of_f32(RedOp::Min, unsafe {
        std::slice::from_raw_parts(src, n as usize)
    })
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use crate::syntax::ast::{Func, RedOp};
    use crate::vmath::single::{
        map_at, own_kernel, plain, run_affine, run_reduce, run_sum, square, term_sum,
    };
    use crate::vmath::{Affine, Level};

    /// `Σ f(x + c)` at `level` (compiled with its features, below): a
    /// kernel of its own per chunk, or the map.
    #[inline(always)]
    fn sum_of_at(f: Func, level: Level, xs: &[f32], c: Option<f32>) -> f32 {
        let (p, n) = (xs.as_ptr(), xs.len());
        // SAFETY: the caller has the level's features; `xs` has `n`
        // elements.
        match (level, f, c) {
            (Level::Avx512, Func::Exp, None) => {
                return unsafe { super::avx512::exp_sum512::<false>(p, n, 0.0) }
            }
            (Level::Avx512, Func::Exp, Some(c)) => {
                return unsafe { super::avx512::exp_sum512::<true>(p, n, c) }
            }
            (Level::Avx512, Func::Tanh, None) => {
                return unsafe { super::avx512::tanh_sum512::<false>(p, n, 0.0) }
            }
            (Level::Avx512, Func::Tanh, Some(c)) => {
                return unsafe { super::avx512::tanh_sum512::<true>(p, n, c) }
            }
            (Level::Avx2, Func::Exp, None) => {
                return unsafe { super::avx2::exp_sum256::<false>(p, n, 0.0) }
            }
            (Level::Avx2, Func::Exp, Some(c)) => {
                return unsafe { super::avx2::exp_sum256::<true>(p, n, c) }
            }
            (Level::Avx2, Func::Tanh, None) => {
                return unsafe { super::avx2::tanh_sum256::<false>(p, n, 0.0) }
            }
            (Level::Avx2, Func::Tanh, Some(c)) => {
                return unsafe { super::avx2::tanh_sum256::<true>(p, n, c) }
            }
            _ => {}
        }
        match own_kernel(f, level, c.is_some()) {
            // SAFETY: the caller has the level's features; `s` and `t`
            // are as long.
            Some(k) => run_sum(xs, |s, t| unsafe {
                k(s.as_ptr(), t.as_mut_ptr(), s.len(), c.unwrap_or(0.0))
            }),
            None => run_sum(xs, |s, t| map_at(f, level, s, t, c)),
        }
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn avx2_sum_of(f: Func, xs: &[f32], c: Option<f32>) -> f32 {
        sum_of_at(f, Level::Avx2, xs, c)
    }

    #[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
    unsafe fn avx512_sum_of(f: Func, xs: &[f32], c: Option<f32>) -> f32 {
        sum_of_at(f, Level::Avx512, xs, c)
    }

    /// # Safety
    /// The level's features (AVX2+FMA, or AVX-512 F/DQ/VL too) are present.
    pub(super) unsafe fn sum_of(f: Func, wide: bool, xs: &[f32], c: Option<f32>) -> f32 {
        // SAFETY: the caller checked the features.
        unsafe {
            if wide {
                avx512_sum_of(f, xs, c)
            } else {
                avx2_sum_of(f, xs, c)
            }
        }
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn avx2_sum_sq(sq: bool, xs: &[f32], c: f32) -> f32 {
        if sq {
            term_sum(xs, c, square)
        } else {
            term_sum(xs, c, plain)
        }
    }

    #[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
    unsafe fn avx512_sum_sq(sq: bool, xs: &[f32], c: f32) -> f32 {
        if sq {
            term_sum(xs, c, square)
        } else {
            term_sum(xs, c, plain)
        }
    }

    /// # Safety
    /// As [`sum_of`].
    pub(super) unsafe fn sum_sq(wide: bool, sq: bool, xs: &[f32], c: f32) -> f32 {
        // SAFETY: the caller checked the features.
        unsafe {
            if wide {
                avx512_sum_sq(sq, xs, c)
            } else {
                avx2_sum_sq(sq, xs, c)
            }
        }
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn avx2_reduce(op: RedOp, xs: &[f32]) -> f32 {
        run_reduce(op, xs)
    }

    #[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
    unsafe fn avx512_reduce(op: RedOp, xs: &[f32]) -> f32 {
        use std::arch::x86_64::*;
        // (the parent's `range_reduce`, on `vrangeps`)
        range_reduce!(
            op,
            xs,
            f32,
            __m512,
            __mmask16,
            16,
            identity = op.identity() as f32,
            set1 = _mm512_set1_ps,
            load = _mm512_loadu_ps,
            mask_load = _mm512_mask_loadu_ps,
            store = _mm512_storeu_ps,
            range = _mm512_range_ps,
            cmp = _mm512_cmp_ps_mask
        )
    }

    /// # Safety
    /// As [`sum_of`].
    pub(super) unsafe fn reduce(op: RedOp, wide: bool, xs: &[f32]) -> f32 {
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
    unsafe fn avx2_affine(kind: Affine, xs: &[f32], ys: &mut [f32], c: f32, d: f32) {
        run_affine(kind, xs, ys, c, d)
    }

    #[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
    unsafe fn avx512_affine(kind: Affine, xs: &[f32], ys: &mut [f32], c: f32, d: f32) {
        run_affine(kind, xs, ys, c, d)
    }

    /// # Safety
    /// As [`sum_of`].
    pub(super) unsafe fn affine(
        kind: Affine,
        wide: bool,
        xs: &[f32],
        ys: &mut [f32],
        c: f32,
        d: f32,
    ) {
        // SAFETY: the caller checked the features.
        unsafe {
            if wide {
                avx512_affine(kind, xs, ys, c, d)
            } else {
                avx2_affine(kind, xs, ys, c, d)
            }
        }
    }
}
