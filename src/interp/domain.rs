//! Number domains of the reference interpreter: the interpreter is one
//! evaluator ([`super::run_domain`]) over a [`Domain`], so that the meaning
//! of a program (strong zeros, zero padding, the order of a sum's terms) is
//! written once and every analysis of values follows it exactly.
//!
//! - [`F64`]: IEEE-754 double arithmetic in the written order, the
//!   language's meaning ([`super::run`]).
//! - [`F32`]: IEEE-754 single arithmetic in the written order (every
//!   literal, input and result rounded to `f32`): the meaning of a program
//!   run in [`crate::precision::Precision::F32`] ([`super::run_with`]).
//! - [`Int`]: two's complement integers of a width (64 or 32 bits),
//!   wrapping like numpy's integer arrays: the meaning of an integral
//!   program run in [`crate::precision::Precision::I64`] or
//!   [`crate::precision::Precision::I32`] ([`super::run_int`]).
//! - [`Dd`]: double-double arithmetic (about 106 bits, the `twofloat`
//!   crate's numbers; division and the functions are this module's own,
//!   to about 2⁻¹⁰⁰): a high-precision reference for measuring the rounding error of
//!   a program, as the optimiser's accuracy check does
//!   ([`crate::extract::accuracy`]).
//! - [`super::shadow::Shadow`]: the set of results a correct optimisation
//!   of the program may give under the floating-point contract
//!   (`docs/fp-contract.md`); the oracle of differential testing and of the
//!   rule checker.

use crate::syntax::ast::{BinOp, CmpOp, Func, RedOp};
use twofloat::TwoFloat;

/// A number domain the interpreter evaluates in. Strong zeros are handled
/// by the evaluator (a strong zero is `num(0.0)` with its flag set); a
/// domain only does arithmetic.
pub trait Domain {
    /// A number.
    type N: Clone + std::fmt::Debug;
    /// A running sum.
    type Acc;
    /// A literal, an input element, or a zero (padding, strong zeros).
    fn num(&self, x: f64) -> Self::N;
    /// An integer input element, or an index or size used as a number
    /// (exact in an integer domain; the nearest number otherwise).
    fn int(&self, x: i64) -> Self::N {
        self.num(x as f64)
    }
    /// The format whose arithmetic this domain models (the limits of
    /// integer array elements depend on it: [`super::gather::fits`]).
    fn format(&self) -> crate::precision::Precision {
        crate::precision::Precision::F64
    }
    /// `a op b`.
    fn bin(&self, op: BinOp, a: &Self::N, b: &Self::N) -> Self::N;
    /// `-a`.
    fn neg(&self, a: &Self::N) -> Self::N;
    /// A scalar function.
    fn call(&self, f: Func, args: &[Self::N]) -> Self::N;
    /// The start of `sum(i:n) e`.
    fn sum_start(&self) -> Self::Acc;
    /// Add the next term (in increasing order of the index); `strong`: the
    /// term is a strong zero.
    fn sum_add(&self, acc: &mut Self::Acc, x: &Self::N, strong: bool);
    /// The sum of the `n` terms added.
    fn sum_end(&self, acc: Self::Acc, n: usize) -> Self::N;
    /// One step of `max(i:n) e` / `min(i:n) e`: `op` of the value so far
    /// and the next term (IEEE 754-2019 `maximum`/`minimum`, exact).
    fn reduce(&self, op: RedOp, acc: &Self::N, x: &Self::N) -> Self::N;
    /// `a op b` as the written program compares (IEEE), and whether every
    /// value the domain allows for `a` and `b` gives that same answer.
    fn compare(&self, op: CmpOp, a: &Self::N, b: &Self::N) -> (bool, bool);
    /// The value of a `where` whose condition the domain could not decide:
    /// the chosen side's value, widened by the other side's.
    fn either(&self, chosen: &Self::N, _other: &Self::N) -> Self::N {
        chosen.clone()
    }
    /// Whether the domain also accepts the regrouping the contract allows
    /// for a complex matrix product ([`super::complex`]): the evaluator
    /// then widens each part by [`Domain::either`] with its value as the
    /// sum of its real products. False for the domains of the written
    /// program's value.
    fn regroups(&self) -> bool {
        false
    }
}

/// IEEE-754 doubles in the written order: the language's meaning.
#[derive(Clone, Copy, Debug, Default)]
pub struct F64;

impl Domain for F64 {
    type N = f64;
    type Acc = f64;
    fn num(&self, x: f64) -> f64 {
        x
    }
    fn bin(&self, op: BinOp, a: &f64, b: &f64) -> f64 {
        op.apply(*a, *b)
    }
    fn neg(&self, a: &f64) -> f64 {
        -a
    }
    fn call(&self, f: Func, args: &[f64]) -> f64 {
        f.apply(args)
    }
    fn sum_start(&self) -> f64 {
        0.0
    }
    fn sum_add(&self, acc: &mut f64, x: &f64, _strong: bool) {
        *acc += x;
    }
    fn sum_end(&self, acc: f64, _n: usize) -> f64 {
        acc
    }
    fn reduce(&self, op: RedOp, acc: &f64, x: &f64) -> f64 {
        op.apply(*acc, *x)
    }
    fn compare(&self, op: CmpOp, a: &f64, b: &f64) -> (bool, bool) {
        (op.holds_f64(*a, *b), true)
    }
}

/// IEEE-754 singles in the written order: the meaning of a program in
/// [`crate::precision::Precision::F32`]. A number is held as the `f64` of an `f32`;
/// every operation is computed in `f64` and rounded to `f32`, which is
/// the correctly rounded `f32` result for `+ - * /` and `sqrt` (as
/// 53 ≥ 2·24 + 2) and a faithful one for the other functions; a sum accumulates in
/// `f32`, term by term in the written order. An intermediate beyond
/// `f32`'s range is infinite where it happens (`(1e30 * 1e30) / 1e30` is
/// `inf`), as in `f32` arithmetic.
#[derive(Clone, Copy, Debug, Default)]
pub struct F32;

#[inline]
fn r32(x: f64) -> f64 {
    x as f32 as f64
}

impl Domain for F32 {
    type N = f64;
    type Acc = f64;
    fn format(&self) -> crate::precision::Precision {
        crate::precision::Precision::F32
    }
    fn num(&self, x: f64) -> f64 {
        r32(x)
    }
    fn bin(&self, op: BinOp, a: &f64, b: &f64) -> f64 {
        r32(op.apply(*a, *b))
    }
    fn neg(&self, a: &f64) -> f64 {
        -a
    }
    fn call(&self, f: Func, args: &[f64]) -> f64 {
        r32(f.apply(args))
    }
    fn sum_start(&self) -> f64 {
        0.0
    }
    fn sum_add(&self, acc: &mut f64, x: &f64, _strong: bool) {
        *acc = r32(*acc + x);
    }
    fn sum_end(&self, acc: f64, _n: usize) -> f64 {
        acc
    }
    fn reduce(&self, op: RedOp, acc: &f64, x: &f64) -> f64 {
        op.apply(*acc, *x)
    }
    fn compare(&self, op: CmpOp, a: &f64, b: &f64) -> (bool, bool) {
        (op.holds_f64(*a, *b), true)
    }
}

/// Two's complement integers of the width of an integer
/// [`Precision`](crate::precision::Precision) (`I64` or `I32`), held as
/// `i64` (an `I32` number sign-extended): `+ - *`, negation and sums wrap
/// to the width after every operation (numpy's arithmetic on integer
/// arrays), `max`/`min` and comparisons are the integers'. A sum
/// accumulates in the width. The empty `max(i:0)`/`min(i:0)` is the
/// width's smallest/largest integer (the float formats' `-inf`/`+inf`).
/// Only integral programs ([`crate::types::integral()`]) run here: division
/// and the other functions never occur (they would give 0).
#[derive(Clone, Copy, Debug)]
pub struct Int(pub crate::precision::Precision);

impl Domain for Int {
    type N = i64;
    type Acc = i64;
    fn format(&self) -> crate::precision::Precision {
        self.0
    }
    fn num(&self, x: f64) -> i64 {
        // literals are integers of the width (checked); ±inf are the
        // identities of max/min
        match self.0 {
            crate::precision::Precision::I32 => i64::from(x as i32),
            _ => x as i64,
        }
    }
    fn int(&self, x: i64) -> i64 {
        self.0.wrap(x)
    }
    fn bin(&self, op: BinOp, a: &i64, b: &i64) -> i64 {
        self.0.wrap(match op {
            BinOp::Add => a.wrapping_add(*b),
            BinOp::Sub => a.wrapping_sub(*b),
            BinOp::Mul => a.wrapping_mul(*b),
            BinOp::Div => 0,
        })
    }
    fn neg(&self, a: &i64) -> i64 {
        self.0.wrap(a.wrapping_neg())
    }
    fn call(&self, f: Func, args: &[i64]) -> i64 {
        match f {
            Func::Max => args[0].max(args[1]),
            Func::Min => args[0].min(args[1]),
            _ => 0,
        }
    }
    fn sum_start(&self) -> i64 {
        0
    }
    fn sum_add(&self, acc: &mut i64, x: &i64, _strong: bool) {
        *acc = self.0.wrap(acc.wrapping_add(*x));
    }
    fn sum_end(&self, acc: i64, _n: usize) -> i64 {
        acc
    }
    fn reduce(&self, op: RedOp, acc: &i64, x: &i64) -> i64 {
        match op {
            RedOp::Max => *acc.max(x),
            RedOp::Min => *acc.min(x),
        }
    }
    fn compare(&self, op: CmpOp, a: &i64, b: &i64) -> (bool, bool) {
        let r = match op {
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
        };
        (r, true)
    }
}

/// Double-double arithmetic (`twofloat`'s numbers): about 106 significant
/// bits, the reference a program's rounding error is measured against.
/// Division and the functions are this module's ([`dd_div`], [`dd_sqrt`],
/// [`dd_exp`], [`dd_ln`], [`dd_tanh`], [`dd_sin_cos`], [`erf_dd`],
/// [`dd_pow`]):
/// `twofloat`'s division drops the quotient's low part, its `ln` is about
/// 2⁻⁴⁸ off on large arguments, its `sin` about 2⁻⁶⁸ and its `sqrt`
/// about 2⁻⁸⁰ on tiny ones (`tests/suite/dd_domain.rs` measures them all
/// against mpmath). Meant for
/// finite inputs; a non-finite intermediate makes the result NaN or an
/// infinity, which callers treat as "no reference".
#[derive(Clone, Copy, Debug, Default)]
pub struct Dd;

fn dd_finite(x: TwoFloat) -> TwoFloat {
    if x.hi().is_finite() && x.lo().is_finite() {
        x
    } else {
        // keep the leading part's special value, drop a NaN tail
        TwoFloat::from(x.hi() + if x.lo().is_nan() { 0.0 } else { x.lo() })
    }
}

/// The error function in double-double, about 95 good bits (the
/// interpreter's [`Dd`] reference, and the reference `tests/suite/vmath.rs`
/// checks `erf`'s kernels against): for `|x| < 2.5` the Taylor series
/// `2/√π · Σ (-1)^n x^(2n+1) / (n! (2n+1))` (its alternating terms cost
/// at most 9 bits to cancellation); from 2.5 on `1 - erfc(x)`,
/// `erfc(x) = e^(-x²)/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + …))))`,
/// the continued fraction 200 levels deep (relative error below 1e-40
/// from 2.5 on); ±1 from `|x| ≥ 9` (`erfc` below 1e-36 there). Odd;
/// ±0 and NaN are returned as they are.
pub fn erf_dd(x: TwoFloat) -> TwoFloat {
    let two_over_sqrt_pi =
        TwoFloat::new_add(std::f64::consts::FRAC_2_SQRT_PI, 1.533545961316588e-17);
    let one_over_sqrt_pi = TwoFloat::new_add(0.5641895835477563, 7.66772980658294e-18);
    let h = x.hi();
    if h.is_nan() || h == 0.0 {
        return x;
    }
    let neg = h < 0.0;
    let a = if neg { -x } else { x };
    let v = if a.hi() < 2.5 {
        let a2 = a * a;
        let mut t = a;
        let mut sum = a;
        for n in 0..400 {
            t = t * (-a2) / (n + 1) as f64;
            let term = t / (2 * n + 3) as f64;
            sum += term;
            if term.hi().abs() <= 1e-36 * sum.hi().abs() {
                break;
            }
        }
        sum * two_over_sqrt_pi
    } else if a.hi() < 9.0 {
        let mut f = a;
        for k in (1..=200).rev() {
            f = a + TwoFloat::from(k as f64 / 2.0) / f;
        }
        let erfc = dd_exp(-(a * a)) * one_over_sqrt_pi / f;
        TwoFloat::from(1.0) - erfc
    } else {
        TwoFloat::from(1.0)
    };
    if neg {
        -v
    } else {
        v
    }
}

/// `pow(a, b)` in double-double, about 100 correct bits for finite
/// results: `exp(b·ln a)` from [`dd_ln`] and [`dd_exp`] (with the sign of
/// an odd integer power of a negative `a`); C's special cases (a zero,
/// one or non-finite operand, a zero exponent) as `f64::powf` gives them.
/// (`twofloat`'s own `powf` goes through its `ln`, off by about 2⁻⁴⁸ on
/// large arguments.)
pub fn dd_pow(a: TwoFloat, b: TwoFloat) -> TwoFloat {
    let (x, y) = (a.hi(), b.hi());
    if !x.is_finite() || !y.is_finite() || x == 0.0 || y == 0.0 || a == 1.0 {
        return TwoFloat::from(x.powf(y));
    }
    let int = b.hi().fract() == 0.0 && b.lo().fract() == 0.0;
    if x < 0.0 && !int {
        return TwoFloat::from(f64::NAN);
    }
    let m = dd_exp(b * dd_ln(a.abs()));
    // the parity of an integer `b`: of its low part unless that is zero
    let last = if b.lo() != 0.0 { b.lo() } else { b.hi() };
    if x < 0.0 && last % 2.0 != 0.0 {
        -m
    } else {
        m
    }
}

/// `a / b` in the [`Dd`] domain: [`dd_div`] for finite operands and a
/// non-zero divisor, IEEE's quotient of the leading parts otherwise (an
/// infinity, a NaN or a zero divisor).
fn dd_quotient(a: TwoFloat, b: TwoFloat) -> TwoFloat {
    if a.hi().is_finite() && a.hi() != 0.0 && b.hi().is_finite() && b.hi() != 0.0 {
        dd_div(a, b)
    } else {
        TwoFloat::from(a.hi() / b.hi())
    }
}

/// `tanh` of a double-double, to about 2⁻¹⁰⁰ relative: `x` itself where
/// `|x| < 2⁻⁵⁶` (the next term, `x³/3`, is below 2⁻¹¹² of it),
/// `sign(x)·(1 − 2/(e^(2|x|) + 1))` from `|x| ≥ 0.5` (no cancellation:
/// the result is at least 0.46), and `m/(m + 2)` with `m = e^(2x) − 1`
/// from [`dd_expm1`] between (`twofloat`'s own `tanh`,
/// `(e^x − e^-x)/(e^x + e^-x)` through its `exp` and its division, loses
/// bits to cancellation near 0). ±1 beyond `|x| = 40`; NaN and ±0 as
/// they are.
pub fn dd_tanh(x: TwoFloat) -> TwoFloat {
    let h = x.hi();
    if h.is_nan() || h.abs() < f64::powi(2.0, -56) {
        return x;
    }
    if h.abs() > 40.0 {
        return TwoFloat::from(h.signum());
    }
    let one = TwoFloat::from(1.0);
    if h.abs() >= 0.5 {
        let e = dd_exp(x.abs() * 2.0);
        let t = one - dd_div(TwoFloat::from(2.0), e + one);
        if h < 0.0 {
            -t
        } else {
            t
        }
    } else {
        let m = dd_expm1(x * 2.0);
        dd_div(m, m + 2.0)
    }
}

/// The square root of a positive finite double-double, to about 2⁻¹⁰⁴
/// relative: scaled by an even power of 2 into `[1, 4)` (`twofloat`'s own
/// `sqrt` loses bits when `x.hi()²`'s rounding error is subnormal), then
/// one Newton step `s + (x − s²)/(2s)` from `s = √x.hi()`, `s²` exact.
pub fn dd_sqrt(x: TwoFloat) -> TwoFloat {
    // subnormal leading parts: scale up first
    let (x, e0) = if x.hi() < f64::MIN_POSITIVE {
        (x * pow2(108), -54)
    } else {
        (x, 0)
    };
    let e = ((x.hi().to_bits() >> 52) & 0x7ff) as i32 - 1023;
    let half = e.div_euclid(2);
    let m = x * pow2(-2 * half);
    let s = m.hi().sqrt();
    let r = m - TwoFloat::new_mul(s, s);
    let root = TwoFloat::new_add(s, r.hi() / (2.0 * s));
    root * pow2(half + e0)
}

/// `e^z − 1` for `|z| ≤ 1`, to about 2⁻¹⁰⁴ relative: the Taylor series to
/// `z³⁰/30!` (below 2⁻¹⁰⁷ of the sum; for negative `z` the alternating
/// terms cancel at most one bit, `|e^z − 1| ≥ 0.63·|z|`).
pub fn dd_expm1(z: TwoFloat) -> TwoFloat {
    let mut t = z;
    let mut s = z;
    for j in 2..=30 {
        t = dd_div(t * z, TwoFloat::from(f64::from(j)));
        s += t;
    }
    s
}

/// π/2 in three doubles (about 160 bits), for [`dd_sin_cos`]'s reduction.
const DD_PI_2: [f64; 3] = [
    std::f64::consts::FRAC_PI_2,
    6.123233995736766e-17,
    -1.4973849048591698e-33,
];

/// `sin x` and `cos x` of a double-double, to about 2⁻¹⁰⁰ (absolute
/// near a zero of the function, relative elsewhere) for `|x| < 2⁴⁰`:
/// `x = k·π/2 + r`, `|r| ≤ π/4`, with π/2 in three doubles (`k·π/2` exact
/// to about 2⁻¹¹⁵ at the largest `k`), then the Taylor series of `sin r`
/// and `cos r` to the 27th and 28th powers (below 2⁻¹⁰⁹). Beyond `2⁴⁰`,
/// `twofloat`'s.
pub fn dd_sin_cos(x: TwoFloat) -> (TwoFloat, TwoFloat) {
    let h = x.hi();
    if !h.is_finite() {
        let nan = TwoFloat::from(f64::NAN);
        return (nan, nan);
    }
    if h == 0.0 {
        return (x, TwoFloat::from(1.0));
    }
    if h.abs() >= f64::powi(2.0, 40) {
        return (x.sin(), x.cos());
    }
    let k = (h / DD_PI_2[0]).round();
    // k·π/2 in parts: k has at most 41 bits, each product below is exact
    // up to its own rounding, kept as a double-double
    let r = x
        - TwoFloat::new_mul(k, DD_PI_2[0])
        - TwoFloat::new_mul(k, DD_PI_2[1])
        - TwoFloat::new_mul(k, DD_PI_2[2]);
    let r2 = r * r;
    let (mut s, mut c) = (r, TwoFloat::from(1.0));
    let (mut ts, mut tc) = (r, TwoFloat::from(1.0));
    for j in 1..=14 {
        let j = f64::from(j);
        ts = dd_div(-(ts * r2), TwoFloat::from((2.0 * j) * (2.0 * j + 1.0)));
        tc = dd_div(-(tc * r2), TwoFloat::from((2.0 * j - 1.0) * (2.0 * j)));
        s += ts;
        c += tc;
    }
    match (k as i64).rem_euclid(4) {
        0 => (s, c),
        1 => (c, -s),
        2 => (-s, -c),
        _ => (-c, s),
    }
}

/// `a / b` in double-double, three quotient digits (`twofloat`'s own
/// division drops the low part, `1/3` has none).
pub fn dd_div(a: TwoFloat, b: TwoFloat) -> TwoFloat {
    let q1 = a.hi() / b.hi();
    let r = a - b * q1;
    let q2 = r.hi() / b.hi();
    let r = r - b * q2;
    let q3 = r.hi() / b.hi();
    TwoFloat::new_add(q1, q2) + q3
}

/// ln 2 in double-double.
const DD_LN2: (f64, f64) = (std::f64::consts::LN_2, 2.3190468138462996e-17);

/// `2^k` for an exponent in the range of doubles' normal numbers.
fn pow2(k: i32) -> f64 {
    f64::from_bits(((k + 1023) as u64) << 52)
}

/// The natural logarithm of a positive finite double-double, to about
/// 2⁻¹⁰⁰ relative: `k·ln 2 + 2·atanh((m − 1)/(m + 1))` with `m` in
/// `[√½, √2]`, the series summed to 24 terms (`s² ≤ 0.03`).
pub fn dd_ln(a: TwoFloat) -> TwoFloat {
    let mut a = a;
    let mut k = 0i32;
    if a.hi() < f64::MIN_POSITIVE {
        a *= pow2(54);
        k -= 54;
    }
    let e = ((a.hi().to_bits() >> 52) & 0x7ff) as i32 - 1023;
    a = a * pow2(-e / 2) * pow2(-e + e / 2);
    k += e;
    if a.hi() > std::f64::consts::SQRT_2 {
        a *= 0.5;
        k += 1;
    }
    let one = TwoFloat::from(1.0);
    let s = dd_div(a - one, a + one);
    let s2 = s * s;
    const TERMS: i32 = 24;
    let mut p = dd_div(one, TwoFloat::from(f64::from(2 * TERMS + 1)));
    for j in (0..TERMS).rev() {
        p = p * s2 + dd_div(one, TwoFloat::from(f64::from(2 * j + 1)));
    }
    let ln2 = TwoFloat::new_add(DD_LN2.0, DD_LN2.1);
    s * p * 2.0 + ln2 * f64::from(k)
}

/// `e^z` of a double-double, to about 2⁻¹⁰⁰ relative: `2^k·e^r` with
/// `|r| ≤ ln 2 / 2`, `e^r` as `(e^(r/2¹⁰))^(2¹⁰)` through `expm1` (ten
/// squarings of `t ↦ t·(t + 2)`) and a 10-term Taylor series. 0 and ∞
/// beyond the range of doubles.
pub fn dd_exp(z: TwoFloat) -> TwoFloat {
    if z.hi() > 709.8 {
        return TwoFloat::from(f64::INFINITY);
    }
    if z.hi() < -745.2 {
        return TwoFloat::from(0.0);
    }
    let ln2 = TwoFloat::new_add(DD_LN2.0, DD_LN2.1);
    let k = (z.hi() / DD_LN2.0).round();
    let r = (z - ln2 * k) * pow2(-10);
    let mut t = r;
    let mut em1 = r;
    for j in 2..=10 {
        t = dd_div(t * r, TwoFloat::from(f64::from(j)));
        em1 += t;
    }
    for _ in 0..10 {
        em1 = em1 * (em1 + 2.0);
    }
    let e = em1 + 1.0;
    // 2^k in two steps (k may be beyond one double's exponent range)
    let k = k as i32;
    let k1 = k / 2;
    e * pow2(k1) * pow2(k - k1)
}

impl Domain for Dd {
    type N = TwoFloat;
    type Acc = TwoFloat;
    fn num(&self, x: f64) -> TwoFloat {
        TwoFloat::from(x)
    }
    fn bin(&self, op: BinOp, a: &TwoFloat, b: &TwoFloat) -> TwoFloat {
        dd_finite(match op {
            BinOp::Add => *a + *b,
            BinOp::Sub => *a - *b,
            BinOp::Mul => *a * *b,
            BinOp::Div => dd_quotient(*a, *b),
        })
    }
    fn neg(&self, a: &TwoFloat) -> TwoFloat {
        -*a
    }
    fn call(&self, f: Func, args: &[TwoFloat]) -> TwoFloat {
        let a = args[0];
        dd_finite(match f {
            Func::Sqrt => {
                if a.hi() < 0.0 {
                    TwoFloat::from(f64::NAN)
                } else if a.hi() == 0.0 || a.hi() == f64::INFINITY {
                    a
                } else {
                    dd_sqrt(a)
                }
            }
            Func::Exp => {
                if a.hi().is_nan() {
                    a
                } else {
                    dd_exp(a)
                }
            }
            Func::Log => {
                let h = a.hi();
                if h.is_nan() || h < 0.0 {
                    TwoFloat::from(f64::NAN)
                } else if h == 0.0 {
                    TwoFloat::from(f64::NEG_INFINITY)
                } else if h == f64::INFINITY {
                    a
                } else {
                    dd_ln(a)
                }
            }
            Func::Sin => dd_sin_cos(a).0,
            Func::Cos => dd_sin_cos(a).1,
            Func::Tanh => dd_tanh(a),
            Func::Abs => a.abs(),
            Func::Max => {
                let b = args[1];
                if a.hi().is_nan() {
                    b
                } else if b.hi().is_nan() || a >= b {
                    a
                } else {
                    b
                }
            }
            Func::Min => {
                let b = args[1];
                if a.hi().is_nan() {
                    b
                } else if b.hi().is_nan() || a <= b {
                    a
                } else {
                    b
                }
            }
            Func::Erf => erf_dd(a),
            Func::Pow => dd_pow(a, args[1]),
        })
    }
    fn sum_start(&self) -> TwoFloat {
        TwoFloat::from(0.0)
    }
    fn sum_add(&self, acc: &mut TwoFloat, x: &TwoFloat, _strong: bool) {
        *acc = dd_finite(*acc + *x);
    }
    fn sum_end(&self, acc: TwoFloat, _n: usize) -> TwoFloat {
        acc
    }
    fn reduce(&self, op: RedOp, acc: &TwoFloat, x: &TwoFloat) -> TwoFloat {
        let (a, b) = (*acc, *x);
        if a.hi().is_nan() || b.hi().is_nan() {
            return TwoFloat::from(f64::NAN);
        }
        let a_wins = match op {
            RedOp::Max => a > b,
            RedOp::Min => a < b,
        };
        if a_wins {
            a
        } else if a == b {
            // equal: the sign of a zero decides, as in f64
            let h = op.apply(a.hi(), b.hi());
            if h.to_bits() == a.hi().to_bits() {
                a
            } else {
                b
            }
        } else {
            b
        }
    }

    fn compare(&self, op: CmpOp, a: &TwoFloat, b: &TwoFloat) -> (bool, bool) {
        let (x, y) = (a.hi(), b.hi());
        if x.is_nan() || y.is_nan() || x != y {
            (op.holds_f64(x, y), true)
        } else {
            (op.holds_f64(a.lo(), b.lo()), true)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn double_double_keeps_what_doubles_lose() {
        let d = Dd;
        let big = d.num(1e16);
        let one = d.num(1.0);
        let s = d.bin(BinOp::Add, &one, &big);
        let r = d.bin(BinOp::Sub, &s, &big);
        assert_eq!(r.hi(), 1.0);
        assert_eq!(F64.bin(BinOp::Sub, &(1.0 + 1e16), &1e16), 0.0);
        let e = d.call(Func::Exp, &[d.num(1.0)]);
        assert!((e.hi() - std::f64::consts::E).abs() <= f64::EPSILON * 3.0);
    }
}
