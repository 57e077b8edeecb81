//! A row's moments and affine maps on the vector unit's full width (the
//! passes of a layer normalisation): the plain sum `Σ x` of a slice
//! ([`sum`]), the sum of squares of a shifted slice `Σ (x + c)·(x + c)`
//! ([`sum_sq_add`]), and the maps `(x + c) / d`, `(x + c)·d`, `x·d` and
//! `x + c` ([`affine_to`], [`Affine`]). The JIT's staged loops call their
//! entry points (`einsat_vsum`, `einsat_vsumsq_add`, `einsat_vaffine`)
//! for an innermost sum or map of a unit-stride run, where its own loops
//! run on 16-byte vectors.
//!
//! **Values.** Every term and every map is the written operation,
//! rounded as the interpreter rounds it: `x + c`, then the product `d·d`
//! rounded on its own (no fused multiply-add), then the quotient or
//! product (the IEEE quotient bit for bit: `vmath/quotient.rs` computes it
//! from a reciprocal and two corrections by the remainder, never the
//! reciprocal's product alone).
//! Only the order of a sum's terms changes, as the floating-point
//! contract allows (`docs/fp-contract.md`): the terms are added as
//! [`super::sum_of`] adds its own, per [`super::SUM_BLOCK`]-term block
//! in chunks of 256 added pairwise (halves onto halves) down to sixteen
//! values, those into sixteen accumulators, the blocks' totals on two
//! levels; so a long sum stays about as accurate as numpy's pairwise
//! summation.
//!
//! **Dispatch.** As the parent module's kernels: the same code compiled
//! for AVX-512 (F, DQ, VL), for AVX2 with FMA (the code has no `mul_add`,
//! so none is contracted) and plainly, chosen at run time
//! ([`super::best`]).
//!
//! Owns these kernels, their entry points and their dispatch; it knows
//! nothing of programs.

#[cfg(target_arch = "x86_64")]
use super::quotient;
use super::{term_block, Level, SUM_BLOCK};

/// `Σ term(x, c)` over `xs` in [`super::run_sum`]'s order: per block of
/// [`SUM_BLOCK`] terms ([`super::term_block`]), the blocks' totals on two
/// levels (as [`super::sum_blocks`]; written out here, and `term` an
/// `#[inline(always)]` function item, so that nothing is left outside the
/// caller's target features: a closure was, and ran on 16-byte vectors).
#[inline(always)]
fn tree_sum(xs: &[f64], c: f64, term: impl Fn(f64, f64) -> f64 + Copy) -> f64 {
    const MID: usize = 64;
    let (mut outer, mut mid, mut k) = (0.0, 0.0, 0);
    for b in xs.chunks(SUM_BLOCK) {
        mid += term_block(b, |x| term(x, c));
        k += 1;
        if k == MID {
            outer += mid;
            mid = 0.0;
            k = 0;
        }
    }
    outer + mid
}

/// A term of the plain sum.
#[inline(always)]
fn plain(x: f64, _c: f64) -> f64 {
    x
}

/// A term of the sum of squares: the rounded sum, then the rounded
/// product.
#[inline(always)]
fn square(x: f64, c: f64) -> f64 {
    let d = x + c;
    d * d
}

#[inline(always)]
fn run_sum(xs: &[f64]) -> f64 {
    tree_sum(xs, 0.0, plain)
}

#[inline(always)]
fn run_sum_sq(xs: &[f64], c: f64) -> f64 {
    tree_sum(xs, c, square)
}

/// An affine map of a run, with a value `c` and a value `d` fixed in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Affine {
    /// `(x + c) / d`
    AddDiv,
    /// `(x + c) * d`
    AddMul,
    /// `x * d`
    Mul,
    /// `x + c`
    Add,
    /// `x / d`
    Div,
}

impl Affine {
    /// Every kind, in the order of their codes ([`Affine::code`]).
    pub const ALL: [Affine; 5] = [
        Affine::AddDiv,
        Affine::AddMul,
        Affine::Mul,
        Affine::Add,
        Affine::Div,
    ];

    /// The kind's code in the entry point `einsat_vaffine`.
    pub fn code(self) -> i64 {
        Affine::ALL
            .iter()
            .position(|k| *k == self)
            .expect("every kind is listed") as i64
    }

    /// The kind of a code ([`Affine::code`]).
    pub fn from_code(code: i64) -> Option<Affine> {
        usize::try_from(code)
            .ok()
            .and_then(|k| Affine::ALL.get(k).copied())
    }

    /// The map of one value, as the interpreter rounds it.
    #[inline(always)]
    pub fn apply(self, x: f64, c: f64, d: f64) -> f64 {
        match self {
            Affine::AddDiv => (x + c) / d,
            Affine::AddMul => (x + c) * d,
            Affine::Mul => x * d,
            Affine::Add => x + c,
            Affine::Div => x / d,
        }
    }
}

#[inline(always)]
fn run_affine(kind: Affine, xs: &[f64], ys: &mut [f64], c: f64, d: f64) {
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

/// `Σ xs[i]` at the best level (in `tree_sum`'s order); 0 for an empty
/// slice.
pub fn sum(xs: &[f64]) -> f64 {
    match super::best() {
        #[cfg(target_arch = "x86_64")]
        l @ (Level::Avx2 | Level::Avx512) => {
            // SAFETY: `best` detected the level's features on this CPU.
            unsafe { x86::sum(l == Level::Avx512, xs) }
        }
        _ => run_sum(xs),
    }
}

/// `Σ (xs[i] + c)·(xs[i] + c)` at the best level: each term the rounded
/// sum, then the rounded product (no fused multiply-add), added in
/// `tree_sum`'s order; 0 for an empty slice.
pub fn sum_sq_add(xs: &[f64], c: f64) -> f64 {
    match super::best() {
        #[cfg(target_arch = "x86_64")]
        l @ (Level::Avx2 | Level::Avx512) => {
            // SAFETY: `best` detected the level's features on this CPU.
            unsafe { x86::sum_sq(l == Level::Avx512, xs, c) }
        }
        _ => run_sum_sq(xs, c),
    }
}

/// `ys[i] = kind(xs[i], c, d)` ([`Affine::apply`], exactly the scalar
/// operations) at the best level.
pub fn affine_to(kind: Affine, xs: &[f64], ys: &mut [f64], c: f64, d: f64) {
    affine_to_at(kind, super::best(), xs, ys, c, d)
}

/// [`affine_to`] at `level` (a level above this CPU's best runs the
/// scalar operations).
pub fn affine_to_at(kind: Affine, level: Level, xs: &[f64], ys: &mut [f64], c: f64, d: f64) {
    assert_eq!(xs.len(), ys.len(), "affine_to: slices of different lengths");
    match level {
        #[cfg(target_arch = "x86_64")]
        l @ (Level::Avx2 | Level::Avx512) if l <= super::best() => {
            // SAFETY: `best` detected the level's features on this CPU.
            unsafe { x86::affine(kind, l == Level::Avx512, xs, ys, c, d) }
        }
        _ => run_affine(kind, xs, ys, c, d),
    }
}

/// A JIT entry point: `Σ src[i]` for `i` in `0..n` ([`sum`]); 0 for
/// `n <= 0`.
///
/// # Safety
/// `src` points to `n` initialised `f64`s (or `n <= 0`).
pub unsafe extern "C" fn einsat_vsum(src: *const f64, n: i64) -> f64 {
    if n <= 0 {
        return 0.0;
    }
    // SAFETY: the caller's contract.
    sum(unsafe { std::slice::from_raw_parts(src, n as usize) })
}

/// A JIT entry point: `Σ (src[i] + c)·(src[i] + c)` for `i` in `0..n`
/// ([`sum_sq_add`]); 0 for `n <= 0`.
///
/// # Safety
/// `src` points to `n` initialised `f64`s (or `n <= 0`).
pub unsafe extern "C" fn einsat_vsumsq_add(src: *const f64, n: i64, c: f64) -> f64 {
    if n <= 0 {
        return 0.0;
    }
    // SAFETY: the caller's contract.
    sum_sq_add(unsafe { std::slice::from_raw_parts(src, n as usize) }, c)
}

/// A JIT entry point: `dst[i] = kind(src[i], c, d)` for `i` in `0..n`
/// ([`affine_to`], `kind` an [`Affine::code`]); nothing for `n <= 0` or
/// an unknown code. `src` and `dst` may be the same buffer or overlap
/// (then read from a copy).
///
/// # Safety
/// `src` points to `n` initialised `f64`s and `dst` to room for `n` (or
/// `n <= 0`).
pub unsafe extern "C" fn einsat_vaffine(
    src: *const f64,
    dst: *mut f64,
    n: i64,
    c: f64,
    d: f64,
    kind: i64,
) {
    let Some(kind) = Affine::from_code(kind) else {
        return;
    };
    if n <= 0 {
        return;
    }
    let n = n as usize;
    let (a, b) = (src as usize, dst as usize);
    if a < b + n * 8 && b < a + n * 8 {
        // in place or overlapping (no caller does this yet): from a copy
        // SAFETY: the caller passes `n` elements at each.
        let xs = unsafe { std::slice::from_raw_parts(src, n) }.to_vec();
        let ys = unsafe { std::slice::from_raw_parts_mut(dst, n) };
        return affine_to(kind, &xs, ys, c, d);
    }
    // SAFETY: the caller passes `n` elements at each, not overlapping.
    let (xs, ys) = unsafe {
        (
            std::slice::from_raw_parts(src, n),
            std::slice::from_raw_parts_mut(dst, n),
        )
    };
    affine_to(kind, xs, ys, c, d)
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{run_affine, run_sum, run_sum_sq, Affine};

    #[target_feature(enable = "avx2,fma")]
    unsafe fn avx2_sum(xs: &[f64]) -> f64 {
        run_sum(xs)
    }

    #[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
    unsafe fn avx512_sum(xs: &[f64]) -> f64 {
        run_sum(xs)
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn avx2_sum_sq(xs: &[f64], c: f64) -> f64 {
        run_sum_sq(xs, c)
    }

    #[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
    unsafe fn avx512_sum_sq(xs: &[f64], c: f64) -> f64 {
        run_sum_sq(xs, c)
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn avx2_affine(kind: Affine, xs: &[f64], ys: &mut [f64], c: f64, d: f64) {
        run_affine(kind, xs, ys, c, d)
    }

    #[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
    unsafe fn avx512_affine(kind: Affine, xs: &[f64], ys: &mut [f64], c: f64, d: f64) {
        run_affine(kind, xs, ys, c, d)
    }

    /// # Safety
    /// The level's features (AVX2+FMA, or AVX-512 F/DQ/VL too) are present.
    pub(super) unsafe fn sum(wide: bool, xs: &[f64]) -> f64 {
        // SAFETY: the caller checked the features.
        unsafe {
            if wide {
                avx512_sum(xs)
            } else {
                avx2_sum(xs)
            }
        }
    }

    /// # Safety
    /// As [`sum`].
    pub(super) unsafe fn sum_sq(wide: bool, xs: &[f64], c: f64) -> f64 {
        // SAFETY: the caller checked the features.
        unsafe {
            if wide {
                avx512_sum_sq(xs, c)
            } else {
                avx2_sum_sq(xs, c)
            }
        }
    }

    /// # Safety
    /// As [`sum`].
    pub(super) unsafe fn affine(
        kind: Affine,
        wide: bool,
        xs: &[f64],
        ys: &mut [f64],
        c: f64,
        d: f64,
    ) {
        use super::quotient;
        let (src, dst, n) = (xs.as_ptr(), ys.as_mut_ptr(), xs.len().min(ys.len()));
        // SAFETY: the caller checked the features; the slices are disjoint.
        unsafe {
            let fast = quotient::serves(d);
            match (kind, wide) {
                (Affine::AddDiv, true) if fast => quotient::div512::<true>(src, dst, n, c, d),
                (Affine::Div, true) if fast => quotient::div512::<false>(src, dst, n, c, d),
                (Affine::AddDiv, false) if fast => quotient::div256::<true>(src, dst, n, c, d),
                (Affine::Div, false) if fast => quotient::div256::<false>(src, dst, n, c, d),
                (_, true) => avx512_affine(kind, xs, ys, c, d),
                (_, false) => avx2_affine(kind, xs, ys, c, d),
            }
        }
    }
}
