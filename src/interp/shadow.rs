//! The floating-point contract as an oracle: a number domain that runs the
//! *written* program and gives, for every result, the set of values a
//! correct optimisation of it may produce in the default (value-safe)
//! mode — `docs/fp-contract.md` states the contract, this module is its
//! executable form. Differential testing (`einsat difftest`) and the rule
//! checker ([`crate::egraph::check`]) accept a value exactly when it lies
//! in that set.
//!
//! A value [`Sh`] is the written program's own `f64` value `v`, an interval
//! `[lo, hi]` of acceptable finite results, and which of NaN, +∞ and −∞
//! are acceptable:
//!
//! - **Rounding.** Every operation widens the interval by twice its
//!   rounding error (2u of the magnitude, u = 2⁻⁵³), plus the absolute
//!   error an underflow can cause. Intervals carry the errors of their
//!   operands, so `x - m` of two exact inputs stays as tight as IEEE
//!   arithmetic makes it: a rewrite that turns a centred sum into a
//!   difference of large sums is caught.
//! - **Reordering.** A `sum`'s terms may be added in any order (as numpy,
//!   BLAS and the JIT's vector lanes do): its interval is widened by
//!   `(n+1)·u·Σ|terms|`, the bound on the error of any order.
//! - **Complex products.** The parts of a complex matrix product
//!   ([`super::complex`]: `(Σ x0·y0 − x1·y1, Σ x0·y1 + x1·y0)`) may be
//!   computed as the sums of their real products, combined (as `zgemm`
//!   does): each part also accepts the interval of the sum of its `2n`
//!   real product terms ([`Domain::regroups`]).
//! - **Overflow and underflow.** Regrouping a product or a sum can overflow
//!   where the written order did not, or the other way round. Each value
//!   carries `big`, a bound on the magnitude of every intermediate of every
//!   regrouping (each input counts as `max(|x|, 1)`; sums add, products
//!   multiply); where it overflows, or where the written program itself
//!   overflows, the value is unconstrained. A regrouped product may
//!   underflow: the interval is widened by `big` times the smallest
//!   subnormal.
//! - **Special values.** NaN, +∞ and −∞ propagate as IEEE arithmetic does,
//!   by kind: `x + ∞` is ∞, `∞ - ∞` is NaN, a NaN anywhere is NaN. A
//!   product (or quotient) that is infinite or NaN because of an infinite
//!   or zero operand may be NaN, +∞ or −∞: regrouping a contraction
//!   changes which `∞·0` and `∞ − ∞` are formed (`a·b + a·c` against
//!   `a·(b + c)` with `a = ∞`; numpy's `einsum(optimize=True)` and BLAS do
//!   the same). For the same reason an addition or subtraction of
//!   opposite infinities may be NaN, +∞ or −∞: taking a common factor out
//!   of its two terms (`x - 2x` as `x·(1 - 2)`, allowed) forms `∞·(−1)`
//!   where the written program forms `∞ − ∞`. An empty sum may also be NaN: a factor moved out of it
//!   meets its zero, and that factor may be infinite or NaN (an input, or
//!   an overflow or division the written program never performs, since it
//!   does not evaluate the empty sum's body), as with numpy's
//!   `einsum(optimize=True)`. A NaN input
//!   stays NaN wherever it reaches; a finite result never becomes
//!   non-finite, nor a non-finite one finite, beyond what overflow allows.
//! - **Precision.** The oracle runs in a format ([`crate::precision::Precision`]):
//!   in `F32` the written program's own value is the `f32` one
//!   ([`super::domain::F32`]), the rounding unit is `u = 2⁻²⁴`, the
//!   underflow error `f32`'s smallest subnormal, and a value beyond
//!   `f32`'s range is unconstrained (a regrouping may overflow).
//! - **Zeros.** The sign of a zero is not part of the contract (`-0 == 0`),
//!   so the sign of an infinity made by dividing by a zero is not either.

use super::domain::Domain;
use crate::precision::Precision;
use crate::syntax::ast::{BinOp, CmpOp, Func, RedOp};

/// The results a correct optimisation may give for one value of the
/// written program (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sh {
    /// The written program's own value (f64, written order).
    pub v: f64,
    /// Lowest acceptable finite result.
    pub lo: f64,
    /// Highest acceptable finite result (`lo > hi`: none is).
    pub hi: f64,
    /// NaN is acceptable.
    pub nan: bool,
    /// +∞ is acceptable.
    pub pinf: bool,
    /// −∞ is acceptable.
    pub ninf: bool,
    /// A bound on the magnitude of any intermediate of any regrouping (at
    /// least 1); infinite when a regrouping may overflow.
    pub big: f64,
}

impl Sh {
    /// An exactly known value (an input or a literal).
    pub fn exact(x: f64) -> Sh {
        let mut s = Sh::none(x);
        if x.is_nan() {
            s.nan = true;
        } else if x == f64::INFINITY {
            s.pinf = true;
        } else if x == f64::NEG_INFINITY {
            s.ninf = true;
        } else {
            s.lo = x;
            s.hi = x;
            s.big = x.abs().max(1.0);
        }
        s
    }

    /// Nothing acceptable yet (a start for unions).
    fn none(v: f64) -> Sh {
        Sh {
            v,
            lo: f64::INFINITY,
            hi: f64::NEG_INFINITY,
            nan: false,
            pinf: false,
            ninf: false,
            big: 1.0,
        }
    }

    /// Any result is acceptable.
    pub fn any(v: f64) -> Sh {
        Sh {
            v,
            lo: -f64::MAX,
            hi: f64::MAX,
            nan: true,
            pinf: true,
            ninf: true,
            big: f64::INFINITY,
        }
    }

    /// Whether any result is acceptable.
    pub fn is_any(&self) -> bool {
        self.nan && self.pinf && self.ninf && self.lo <= -f64::MAX && self.hi >= f64::MAX
    }

    /// Some finite result is acceptable.
    pub fn finite_ok(&self) -> bool {
        self.lo <= self.hi
    }

    /// Does the contract accept `o` for this value?
    pub fn accepts(&self, o: f64) -> bool {
        if o.is_nan() {
            self.nan
        } else if o == f64::INFINITY {
            self.pinf
        } else if o == f64::NEG_INFINITY {
            self.ninf
        } else {
            self.lo <= o && o <= self.hi
        }
    }

    /// The same set with the finite interval's distance from `v` scaled by
    /// `k` (the allowance for the other program's own rounding: the
    /// interval bounds the written program's error, a correct rewrite has
    /// an error of the same bound).
    pub fn slack(self, k: f64) -> Sh {
        self.slack_in(k, Precision::F64)
    }

    /// [`Sh::slack`] for a result computed in the format `p`.
    pub fn slack_in(mut self, k: f64, p: Precision) -> Sh {
        let (u, eta) = (p.unit_roundoff(), p.smallest_subnormal());
        if self.finite_ok() && self.v.is_finite() && !self.is_any() {
            let lo = self.v - (self.v - self.lo) * k - 4.0 * u * self.v.abs() - eta;
            let hi = self.v + (self.hi - self.v) * k + 4.0 * u * self.v.abs() + eta;
            if lo.is_finite() && hi.is_finite() {
                self.lo = self.lo.min(lo);
                self.hi = self.hi.max(hi);
            }
        }
        self
    }

    /// The acceptable set in words, for messages.
    pub fn describe(&self) -> String {
        if self.is_any() {
            return "anything (a regrouping may overflow)".into();
        }
        let mut parts = Vec::new();
        if self.finite_ok() {
            if self.lo == self.hi {
                parts.push(format!("{}", self.lo));
            } else {
                parts.push(format!("[{:e}, {:e}]", self.lo, self.hi));
            }
        }
        for (ok, name) in [(self.nan, "NaN"), (self.pinf, "inf"), (self.ninf, "-inf")] {
            if ok {
                parts.push(name.to_string());
            }
        }
        if parts.is_empty() {
            "nothing".into()
        } else {
            parts.join(" or ")
        }
    }

    fn kinds(&self) -> Vec<Kind> {
        let mut k = Vec::with_capacity(4);
        if self.finite_ok() {
            k.push(Kind::Fin(self.lo, self.hi));
        }
        if self.pinf {
            k.push(Kind::P);
        }
        if self.ninf {
            k.push(Kind::M);
        }
        if self.nan {
            k.push(Kind::N);
        }
        k
    }

    /// Add the outcome `k` to the acceptable set.
    fn add_kind(&mut self, k: Kind) {
        match k {
            Kind::Fin(lo, hi) => {
                self.lo = self.lo.min(lo);
                self.hi = self.hi.max(hi);
            }
            Kind::P => self.pinf = true,
            Kind::M => self.ninf = true,
            Kind::N => self.nan = true,
        }
    }

    /// Unconstrained where some regrouping may overflow, or where the
    /// finite interval left the range of doubles.
    fn settle(self, p: Precision) -> Sh {
        let max = p.max();
        let inside = |x: f64| x.abs() <= max;
        if !inside(self.big) || (self.finite_ok() && !(inside(self.lo) && inside(self.hi))) {
            return Sh::any(self.v);
        }
        let mut s = self;
        s.big = s.big.max(1.0);
        s
    }
}

/// One kind of outcome: a finite interval or a special value.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Fin(f64, f64),
    P,
    M,
    N,
}

/// The oracle domain (see the module documentation).
#[derive(Clone, Copy, Debug, Default)]
pub struct Shadow {
    /// The format the written program runs in.
    p: Precision,
}

/// The interval `[lo, hi]` widened by `w`.
fn widened(lo: f64, hi: f64, w: f64) -> Kind {
    Kind::Fin(lo - w, hi + w)
}

fn mag(lo: f64, hi: f64) -> f64 {
    lo.abs().max(hi.abs())
}

fn neg_kind(a: Kind) -> Kind {
    match a {
        Kind::Fin(lo, hi) => Kind::Fin(-hi, -lo),
        Kind::P => Kind::M,
        Kind::M => Kind::P,
        Kind::N => Kind::N,
    }
}

/// The signs an interval's values may have: (some positive, some negative,
/// holds zero).
fn signs(lo: f64, hi: f64) -> (bool, bool, bool) {
    (hi > 0.0, lo < 0.0, lo <= 0.0 && 0.0 <= hi)
}

/// Outcomes of `a * b` for two kinds.
fn mul_kinds(a: Kind, b: Kind, out: &mut Vec<Kind>) {
    match (a, b) {
        (Kind::N, _) | (_, Kind::N) => out.push(Kind::N),
        (Kind::Fin(a0, a1), Kind::Fin(b0, b1)) => {
            let p = [a0 * b0, a0 * b1, a1 * b0, a1 * b1];
            let lo = p.iter().cloned().fold(f64::INFINITY, f64::min);
            let hi = p.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            out.push(Kind::Fin(lo, hi));
        }
        (Kind::Fin(lo, hi), inf) | (inf, Kind::Fin(lo, hi)) => {
            let (pos, neg, zero) = signs(lo, hi);
            let plus = matches!(inf, Kind::P);
            if zero {
                // ∞·0: NaN, or an infinity of either sign when regrouped
                out.extend([Kind::N, Kind::P, Kind::M]);
            }
            if pos {
                out.push(if plus { Kind::P } else { Kind::M });
            }
            if neg {
                out.push(if plus { Kind::M } else { Kind::P });
            }
        }
        (x, y) => {
            let same = matches!((x, y), (Kind::P, Kind::P) | (Kind::M, Kind::M));
            out.push(if same { Kind::P } else { Kind::M });
        }
    }
}

/// Outcomes of `a / b` for two kinds; `None`: anything (a divisor whose
/// interval holds zero and other values).
fn div_kinds(a: Kind, b: Kind, out: &mut Vec<Kind>) -> Option<()> {
    match (a, b) {
        (Kind::N, _) | (_, Kind::N) => out.push(Kind::N),
        (Kind::Fin(..), Kind::P | Kind::M) => out.push(Kind::Fin(0.0, 0.0)),
        (Kind::P | Kind::M, Kind::P | Kind::M) => out.push(Kind::N),
        (inf @ (Kind::P | Kind::M), Kind::Fin(lo, hi)) => {
            let (pos, neg, zero) = signs(lo, hi);
            if zero {
                out.extend([Kind::P, Kind::M]);
            }
            let plus = matches!(inf, Kind::P);
            if pos {
                out.push(if plus { Kind::P } else { Kind::M });
            }
            if neg {
                out.push(if plus { Kind::M } else { Kind::P });
            }
        }
        (Kind::Fin(a0, a1), Kind::Fin(b0, b1)) => {
            if b0 <= 0.0 && 0.0 <= b1 {
                if b0 != 0.0 || b1 != 0.0 {
                    return None;
                }
                // division by an exact zero: an infinity of either sign
                // (zeros carry no sign in the contract), NaN for 0/0
                out.extend([Kind::P, Kind::M]);
                if a0 <= 0.0 && 0.0 <= a1 {
                    out.push(Kind::N);
                }
            } else {
                let p = [a0 / b0, a0 / b1, a1 / b0, a1 / b1];
                let lo = p.iter().cloned().fold(f64::INFINITY, f64::min);
                let hi = p.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                out.push(Kind::Fin(lo, hi));
            }
        }
    }
    Some(())
}

/// Representatives of a kind for [`Shadow::pow`] with a special value
/// as the other argument: the special value itself, or the ends of the
/// interval with every point `pow` treats apart that it holds (0, ±1, an
/// odd integer of either sign, the neighbours of its ends: a non-odd
/// point where an end is an odd integer).
fn kind_reps(k: Kind) -> Vec<f64> {
    match k {
        Kind::P => vec![f64::INFINITY],
        Kind::M => vec![f64::NEG_INFINITY],
        Kind::N => vec![f64::NAN],
        Kind::Fin(lo, hi) => {
            let mut r = vec![lo, hi, lo.next_up().min(hi), hi.next_down().max(lo)];
            for c in [0.0, 1.0, -1.0] {
                if lo <= c && c <= hi {
                    r.push(c);
                }
            }
            // an odd integer of each sign, if the interval holds one
            for (a, b) in [(lo, hi.min(-1.0)), (lo.max(1.0), hi)] {
                let mut k = a.ceil();
                if k % 2.0 == 0.0 {
                    k += 1.0;
                }
                if k <= b && k.abs() < 2f64.powi(53) {
                    r.push(k);
                }
            }
            r
        }
    }
}

/// The outcomes of `pow(x, y)` for `x` in `[x0, x1]`, `y` in `[y0, y1]`
/// (finite intervals; see [`Shadow::pow`]), before rounding.
fn pow_box(x0: f64, x1: f64, y0: f64, y1: f64, out: &mut Vec<Kind>) {
    // a zero x
    if x0 <= 0.0 && 0.0 <= x1 {
        if y0 < 0.0 {
            // the sign of a zero is not part of the contract
            out.extend([Kind::P, Kind::M]);
        }
        if y1 > 0.0 {
            out.push(Kind::Fin(0.0, 0.0));
        }
        if y0 <= 0.0 && 0.0 <= y1 {
            out.push(Kind::Fin(1.0, 1.0));
        }
    }
    // |x|^y over the box of magnitudes [m0, m1] (m0 > 0): its corners
    let corners = |m0: f64, m1: f64| {
        let c = [m0.powf(y0), m0.powf(y1), m1.powf(y0), m1.powf(y1)];
        let lo = c.iter().cloned().fold(f64::INFINITY, f64::min);
        let hi = c.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        (lo, hi)
    };
    let tiny = f64::from_bits(1);
    // a magnitude range as outcomes of one sign (an overflow stays an
    // infinite upper end: the finite values below it are kept)
    let push = |lo: f64, hi: f64, neg: bool, out: &mut Vec<Kind>| {
        if lo.is_finite() {
            let hi = hi.min(f64::MAX);
            out.push(if neg {
                Kind::Fin(-hi, -lo)
            } else {
                Kind::Fin(lo, hi)
            });
        }
        if hi == f64::INFINITY {
            out.push(if neg { Kind::M } else { Kind::P });
        }
    };
    if x1 > 0.0 {
        let (lo, hi) = corners(x0.max(tiny), x1);
        push(lo, hi, false, out);
    }
    if x0 < 0.0 {
        let (lo, hi) = corners((-x1).max(tiny), -x0);
        if y0 == y1 {
            if y0.fract() != 0.0 {
                out.push(Kind::N);
            } else {
                push(lo, hi, y0 % 2.0 != 0.0, out);
            }
        } else {
            // a non-integer exponent, or integers of either parity
            out.push(Kind::N);
            if y0.ceil() <= y1 {
                push(lo, hi, false, out);
                push(lo, hi, true, out);
            }
        }
    }
}

/// The running state of a sum: which kinds some choice of terms can give.
pub struct ShAcc {
    v: f64,
    lo: f64,
    hi: f64,
    mag: f64,
    big: f64,
    any: bool,
    /// Every term so far can be finite.
    all_fin: bool,
    /// Every term can be finite or +∞ (or −∞).
    all_fp: bool,
    all_fm: bool,
    some_nan: bool,
    n_p: usize,
    n_m: usize,
    n_pm: usize,
    /// The format the written sum accumulates in.
    p: Precision,
}

impl ShAcc {
    fn new(p: Precision) -> ShAcc {
        ShAcc {
            p,
            v: 0.0,
            lo: 0.0,
            hi: 0.0,
            mag: 0.0,
            big: 0.0,
            any: false,
            all_fin: true,
            all_fp: true,
            all_fm: true,
            some_nan: false,
            n_p: 0,
            n_m: 0,
            n_pm: 0,
        }
    }

    fn add(&mut self, x: &Sh) {
        self.v = self.p.round(self.v + x.v);
        if x.is_any() {
            self.any = true;
        }
        let fin = x.finite_ok();
        if fin {
            self.lo += x.lo;
            self.hi += x.hi;
            self.mag += mag(x.lo, x.hi);
        }
        self.big += x.big;
        self.all_fin &= fin;
        self.all_fp &= fin || x.pinf;
        self.all_fm &= fin || x.ninf;
        self.some_nan |= x.nan;
        self.n_p += x.pinf as usize;
        self.n_m += x.ninf as usize;
        self.n_pm += (x.pinf && x.ninf) as usize;
    }

    /// The sum's acceptable set; `w` is the widening of its finite part.
    fn finish(self, w: f64, p: Precision) -> Sh {
        if self.any {
            return Sh::any(self.v);
        }
        let mut s = Sh::none(self.v);
        s.big = self.big;
        let p_and_m =
            self.n_p >= 1 && self.n_m >= 1 && !(self.n_p == 1 && self.n_m == 1 && self.n_pm == 1);
        s.nan = self.some_nan || p_and_m;
        s.pinf = self.all_fp && self.n_p >= 1;
        s.ninf = self.all_fm && self.n_m >= 1;
        if self.all_fin {
            s.add_kind(widened(self.lo, self.hi, w));
        }
        s.settle(p)
    }
}

impl Shadow {
    /// The oracle for a run on `args` (the same for any arguments: an
    /// empty sum may be NaN whatever they hold, see the module
    /// documentation).
    pub fn for_inputs(args: &[crate::interp::Value]) -> Shadow {
        Shadow::for_inputs_in(args, Precision::F64)
    }

    /// [`Shadow::for_inputs`] for a program run in the format `p`.
    pub fn for_inputs_in(args: &[crate::interp::Value], p: Precision) -> Shadow {
        let _ = args;
        Shadow { p }
    }

    /// The unit roundoff of the format.
    fn u(&self) -> f64 {
        self.p.unit_roundoff()
    }

    /// The smallest subnormal of the format.
    fn eta(&self) -> f64 {
        self.p.smallest_subnormal()
    }

    /// The written program's own value: `x` rounded to the format.
    fn r(&self, x: f64) -> f64 {
        self.p.round(x)
    }

    /// Apply a function kind by kind.
    fn func1(&self, f: Func, a: &Sh) -> Sh {
        let v = self.r(f.apply(&[a.v]));
        if a.is_any() {
            return Sh::any(v);
        }
        let mut s = Sh::none(v);
        let at = |x: f64| f.apply(&[x]);
        let round = |x: f64| 4.0 * self.u() * x.abs() + self.eta();
        for k in a.kinds() {
            match k {
                Kind::N => s.nan = true,
                Kind::P | Kind::M => {
                    let r = at(if matches!(k, Kind::P) {
                        f64::INFINITY
                    } else {
                        f64::NEG_INFINITY
                    });
                    s.add_kind(Sh::exact(r).kinds().pop().expect("one kind"));
                }
                Kind::Fin(lo, hi) => match f {
                    Func::Exp => {
                        let (l, h) = (at(lo), at(hi));
                        if h > self.p.max() {
                            s.pinf = true;
                        }
                        let h = h.min(self.p.max());
                        s.add_kind(widened(l, h, round(h)));
                    }
                    Func::Tanh => {
                        let (l, h) = (at(lo), at(hi));
                        s.add_kind(widened(l, h, round(h.abs().max(l.abs()))));
                    }
                    Func::Sqrt | Func::Log => {
                        if lo < 0.0 {
                            s.nan = true;
                        }
                        if hi >= 0.0 {
                            let l0 = lo.max(0.0);
                            if f == Func::Log && l0 == 0.0 {
                                s.ninf = true;
                            }
                            let l = if f == Func::Log && l0 == 0.0 {
                                at(self.eta())
                            } else {
                                at(l0)
                            };
                            let h = at(hi);
                            if h.is_finite() {
                                s.add_kind(widened(l, h, round(h.abs().max(l.abs()))));
                            }
                        }
                    }
                    Func::Sin | Func::Cos => {
                        // 1-Lipschitz, values in [-1, 1]
                        let c = at(a.v.clamp(lo, hi));
                        let w = (hi - a.v.clamp(lo, hi)).max(a.v.clamp(lo, hi) - lo);
                        if !w.is_finite() || w >= 2.0 {
                            s.add_kind(Kind::Fin(-1.0, 1.0));
                        } else {
                            let w = w + 4.0 * self.u();
                            s.add_kind(Kind::Fin((c - w).max(-1.0), (c + w).min(1.0)));
                        }
                    }
                    Func::Abs => {
                        let (pos, neg, zero) = signs(lo, hi);
                        let l = if zero { 0.0 } else { lo.abs().min(hi.abs()) };
                        let h = if pos || neg { mag(lo, hi) } else { 0.0 };
                        s.add_kind(Kind::Fin(l, h));
                    }
                    Func::Max | Func::Min | Func::Pow => unreachable!("binary"),
                    Func::Erf => {
                        // increasing and bounded, as tanh
                        let (l, h) = (at(lo), at(hi));
                        s.add_kind(widened(l, h, round(h.abs().max(l.abs()))));
                    }
                },
            }
        }
        s.big = if s.finite_ok() {
            mag(s.lo, s.hi).max(1.0)
        } else {
            1.0
        };
        s.settle(self.p)
    }

    fn func2(&self, f: Func, a: &Sh, b: &Sh) -> Sh {
        self.monotone2(&|x: f64, y: f64| f.apply(&[x, y]), a, b)
    }

    /// `pow(a, b)`: the union over the kinds of its arguments. On finite
    /// intervals, for `x > 0` the value `exp(y·ln x)` is monotone in `ln x`
    /// and in `y` separately (bilinear in the exponent), so its extremes
    /// over a box are at the box's corners: that carries the conditioning
    /// in both arguments (`|y|` in `x`, `|y·ln x|` in `y`). A negative `x`
    /// gives `±|x|^y` at an integer `y` and NaN elsewhere (an exponent
    /// known only to an interval may be a non-integer); a zero `x` gives
    /// 0, 1 or an infinity by the sign of `y`. Special values follow C99's
    /// table (`pow(x, 0) = 1` even for a NaN `x`, `pow(1, y) = 1` even for
    /// a NaN `y`), found by evaluating `pow` at a representative of every
    /// case the other argument's interval holds.
    fn pow(&self, a: &Sh, b: &Sh) -> Sh {
        let f = |x: f64, y: f64| x.powf(y);
        let v = self.r(f(a.v, b.v));
        if a.is_any() || b.is_any() {
            return Sh::any(v);
        }
        let mut out = Vec::new();
        for x in a.kinds() {
            for y in b.kinds() {
                match (x, y) {
                    (Kind::Fin(x0, x1), Kind::Fin(y0, y1)) => pow_box(x0, x1, y0, y1, &mut out),
                    _ => {
                        for &xr in &kind_reps(x) {
                            for &yr in &kind_reps(y) {
                                out.push(Sh::exact(f(xr, yr)).kinds().pop().expect("one kind"));
                            }
                        }
                    }
                }
            }
        }
        let mut s = Sh::none(v);
        let max = self.p.max();
        for k in out {
            match k {
                Kind::Fin(lo, hi) => {
                    // beyond the format's range: an infinity there (an
                    // overflow), and the finite values up to the range
                    if hi > max {
                        s.pinf = true;
                    }
                    if lo < -max {
                        s.ninf = true;
                    }
                    let (lo, hi) = (lo.max(-max), hi.min(max));
                    if lo <= hi {
                        s.add_kind(widened(lo, hi, 4.0 * self.u() * mag(lo, hi) + self.eta()));
                    }
                }
                k => s.add_kind(k),
            }
        }
        s.big = if s.finite_ok() {
            mag(s.lo, s.hi).max(1.0)
        } else {
            1.0
        };
        s.settle(self.p)
    }

    /// A function of two numbers monotone in both (binary max/min, a step
    /// of a max/min reduction): the union over the kinds of its arguments.
    fn monotone2(&self, pick: &dyn Fn(f64, f64) -> f64, a: &Sh, b: &Sh) -> Sh {
        let v = self.r(pick(a.v, b.v));
        if a.is_any() || b.is_any() {
            return Sh::any(v);
        }
        let mut s = Sh::none(v);
        // representatives of each kind: the interval's ends, or the
        // special value; max/min are monotone in both arguments
        let reps = |x: &Sh| -> Vec<(f64, f64)> {
            x.kinds()
                .into_iter()
                .map(|k| match k {
                    Kind::Fin(lo, hi) => (lo, hi),
                    Kind::P => (f64::INFINITY, f64::INFINITY),
                    Kind::M => (f64::NEG_INFINITY, f64::NEG_INFINITY),
                    Kind::N => (f64::NAN, f64::NAN),
                })
                .collect()
        };
        for (a0, a1) in reps(a) {
            for (b0, b1) in reps(b) {
                let lo = pick(a0, b0);
                let hi = pick(a1, b1);
                for r in [lo, hi] {
                    if !r.is_finite() {
                        s.add_kind(Sh::exact(r).kinds().pop().expect("one kind"));
                    }
                }
                if lo.is_finite() && hi.is_finite() {
                    s.add_kind(Kind::Fin(lo.min(hi), hi.max(lo)));
                } else if lo.is_finite() || hi.is_finite() {
                    // one end special: the finite end and beyond
                    let x = if lo.is_finite() { lo } else { hi };
                    let (l, h) = if hi.is_finite() {
                        (-self.p.max(), x)
                    } else {
                        (x, self.p.max())
                    };
                    s.add_kind(Kind::Fin(l, h));
                }
            }
        }
        s.big = a.big.max(b.big);
        s.settle(self.p)
    }
}

impl Domain for Shadow {
    type N = Sh;
    type Acc = ShAcc;

    fn num(&self, x: f64) -> Sh {
        Sh::exact(self.r(x))
    }

    fn bin(&self, op: BinOp, a: &Sh, b: &Sh) -> Sh {
        let v = self.r(op.apply(a.v, b.v));
        if a.is_any() || b.is_any() {
            // ∞·(anything) may be any special; a product with an exactly
            // known zero is still known up to special values
            return match op {
                BinOp::Mul => {
                    let mut s = Sh::none(v);
                    let mut out = Vec::new();
                    for x in a.kinds() {
                        for y in b.kinds() {
                            mul_kinds(x, y, &mut out);
                        }
                    }
                    for k in out {
                        s.add_kind(k);
                    }
                    if s.finite_ok() && (s.lo != 0.0 || s.hi != 0.0) {
                        Sh::any(v)
                    } else {
                        s.big = 1.0;
                        s
                    }
                }
                _ => Sh::any(v),
            };
        }
        match op {
            BinOp::Add | BinOp::Sub => {
                let b = if op == BinOp::Sub { self.neg(b) } else { *b };
                let mut acc = ShAcc::new(self.p);
                acc.add(a);
                acc.add(&b);
                // ∞ − ∞: a common factor taken out of the two terms
                // (`x - 2x` as `x·(1 - 2)`) changes which ∞ − ∞ and ∞·0
                // are formed, as regrouping a product does
                let opposite = (a.pinf && b.ninf) || (a.ninf && b.pinf);
                let mut s = acc.finish(0.0, self.p);
                s.v = v;
                if opposite {
                    s.nan = true;
                    s.pinf = true;
                    s.ninf = true;
                }
                if s.finite_ok() && !s.is_any() {
                    // the finite part: every pair of finite outcomes
                    let (lo, hi) = (s.lo, s.hi);
                    s.lo = lo - 2.0 * self.u() * mag(lo, hi) - self.eta();
                    s.hi = hi + 2.0 * self.u() * mag(lo, hi) + self.eta();
                }
                s.settle(self.p)
            }
            BinOp::Mul | BinOp::Div => {
                let mut out = Vec::new();
                for x in a.kinds() {
                    for y in b.kinds() {
                        if op == BinOp::Mul {
                            mul_kinds(x, y, &mut out);
                        } else if div_kinds(x, y, &mut out).is_none() {
                            return Sh::any(v);
                        }
                    }
                }
                let big = if op == BinOp::Mul {
                    a.big * b.big
                } else {
                    // |a / b| ≤ big(a) / min|b|
                    let bmin = if b.finite_ok() {
                        let (pos, neg, _) = signs(b.lo, b.hi);
                        if pos && neg {
                            0.0
                        } else {
                            b.lo.abs().min(b.hi.abs())
                        }
                    } else {
                        1.0
                    };
                    if bmin > 0.0 {
                        a.big * (1.0 / bmin).max(1.0)
                    } else {
                        a.big
                    }
                };
                let mut s = Sh::none(v);
                for k in out {
                    match k {
                        Kind::Fin(lo, hi) => {
                            let w =
                                2.0 * self.u() * mag(lo, hi) + big * self.eta() * 2.0 + self.eta();
                            s.add_kind(widened(lo, hi, w));
                        }
                        k => s.add_kind(k),
                    }
                }
                s.big = big;
                if s.pinf || s.ninf {
                    // an infinity in a product: regrouping the product or
                    // the sum around it changes which ∞·0 and ∞−∞ meet
                    s.nan = true;
                    s.pinf = true;
                    s.ninf = true;
                }
                s.settle(self.p)
            }
        }
    }

    fn neg(&self, a: &Sh) -> Sh {
        let mut s = Sh::none(-a.v);
        for k in a.kinds() {
            s.add_kind(neg_kind(k));
        }
        s.big = a.big;
        if a.is_any() {
            return Sh::any(-a.v);
        }
        s
    }

    fn call(&self, f: Func, args: &[Sh]) -> Sh {
        match f {
            Func::Max | Func::Min => self.func2(f, &args[0], &args[1]),
            Func::Pow => self.pow(&args[0], &args[1]),
            _ => self.func1(f, &args[0]),
        }
    }

    fn sum_start(&self) -> ShAcc {
        ShAcc::new(self.p)
    }

    fn sum_add(&self, acc: &mut ShAcc, x: &Sh, _strong: bool) {
        acc.add(x);
    }

    fn reduce(&self, op: RedOp, acc: &Sh, x: &Sh) -> Sh {
        // exact in IEEE arithmetic and in any order: no widening
        self.monotone2(&|a: f64, b: f64| op.apply(a, b), acc, x)
    }

    fn sum_end(&self, acc: ShAcc, n: usize) -> Sh {
        if n == 0 {
            let mut s = Sh::exact(0.0);
            // a factor moved out of the empty sum may be non-finite even
            // when every input is finite (found by CI: the empty sum of
            // `sum(i:0) sum(j:3) y[j] * sum(k:2) y[j]` regrouped into
            // `(sum(i:0) 2) * sum(j:3) y[j] * y[j]`, with y ~ 1e267)
            s.nan = true;
            return s;
        }
        let w = (n as f64 + 1.0) * 2.0 * self.u() * acc.mag + n as f64 * self.eta();
        acc.finish(w, self.p)
    }

    fn compare(&self, op: CmpOp, a: &Sh, b: &Sh) -> (bool, bool) {
        let written = op.holds_f64(a.v, b.v);
        // each kind as an interval of the extended reals, or NaN
        let iv = |k: Kind| match k {
            Kind::Fin(lo, hi) => Some((lo, hi)),
            Kind::P => Some((f64::INFINITY, f64::INFINITY)),
            Kind::M => Some((f64::NEG_INFINITY, f64::NEG_INFINITY)),
            Kind::N => None,
        };
        let (mut can_true, mut can_false) = (false, false);
        for x in a.kinds() {
            for y in b.kinds() {
                let (t, f) = match (iv(x), iv(y)) {
                    (Some((a0, a1)), Some((b0, b1))) => {
                        let lt = (a0 < b1, a1 >= b0);
                        let le = (a0 <= b1, a1 > b0);
                        let gt = (a1 > b0, a0 <= b1);
                        let ge = (a1 >= b0, a0 < b1);
                        let overlap = a0 <= b1 && b0 <= a1;
                        let point = a0 == a1 && b0 == b1 && a0 == b0;
                        let eq = (overlap, !point);
                        match op {
                            CmpOp::Lt => lt,
                            CmpOp::Le => le,
                            CmpOp::Gt => gt,
                            CmpOp::Ge => ge,
                            CmpOp::Eq => eq,
                            CmpOp::Ne => (eq.1, eq.0),
                        }
                    }
                    // a comparison with NaN is false, except `!=`
                    _ => {
                        let r = op == CmpOp::Ne;
                        (r, !r)
                    }
                };
                can_true |= t;
                can_false |= f;
            }
        }
        (written, !(can_true && can_false))
    }

    fn regroups(&self) -> bool {
        true
    }

    fn either(&self, chosen: &Sh, other: &Sh) -> Sh {
        if chosen.is_any() || other.is_any() {
            return Sh::any(chosen.v);
        }
        let mut s = *chosen;
        for k in other.kinds() {
            s.add_kind(k);
        }
        s.big = chosen.big.max(other.big);
        s.settle(self.p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interp::{run_domain, Value};

    fn oracle(src: &str, args: &[Value]) -> Vec<Sh> {
        let f = &crate::load(src).unwrap().functions[0];
        let d = Shadow::for_inputs(args);
        run_domain(f, args, &d).unwrap()[0]
            .data
            .iter()
            .map(|(s, _)| s.slack(2.0))
            .collect()
    }

    #[test]
    fn centred_sums_stay_tight_and_expanded_ones_are_refused() {
        let x: Vec<f64> = (0..8).map(|k| 1e8 + k as f64 * 0.5).collect();
        let m = x.iter().sum::<f64>() / 8.0;
        let arg = Value::Array(ndarray::arr1(&x).into_dyn());
        let s = oracle(
            "fn v(x: [8]R) -> R = let m = (sum(i:8) x[i]) / 8 in sum(i:8) (x[i] - m) * (x[i] - m)",
            &[arg],
        )[0];
        let exact: f64 = x.iter().map(|v| (v - m) * (v - m)).sum();
        assert!(s.accepts(exact), "{}", s.describe());
        // Σx² − n·m²: the expanded form loses every digit
        let expanded = x.iter().map(|v| v * v).sum::<f64>() - 8.0 * m * m;
        assert!(!s.accepts(expanded), "{} accepted {expanded}", s.describe());
    }

    #[test]
    fn specials_propagate_and_inf_times_zero_may_regroup() {
        let s = oracle(
            "fn f(x: R) -> R = x * 0 + (x - x)",
            &[Value::Real(f64::INFINITY)],
        )[0];
        assert!(s.accepts(f64::NAN) && !s.accepts(0.0), "{}", s.describe());
        let s = oracle("fn f(x: R) -> R = x * 0", &[Value::Real(f64::INFINITY)])[0];
        assert!(s.accepts(f64::NAN) && s.accepts(f64::INFINITY) && !s.accepts(0.0));
        let s = oracle("fn f(x: R) -> R = x + 1", &[Value::Real(f64::NAN)])[0];
        assert!(s.accepts(f64::NAN) && !s.accepts(f64::INFINITY) && !s.accepts(1.0));
    }

    #[test]
    fn opposite_infinities_may_change_kind_one_infinity_may_not() {
        // difftest's case: the optimiser's `(sum(i:2) x[i]) * -1` (a common
        // factor taken out of `s - 2s`) gives +∞ where the written ∞ − ∞ is NaN
        let x = Value::Array(ndarray::arr1(&[f64::NEG_INFINITY, -0.0]).into_dyn());
        let s = oracle(
            "fn f(x: [2]R) -> R = (sum(i:2) x[i]) - sum(i:2, j:2) x[j]",
            &[x],
        )[0];
        assert!(
            s.accepts(f64::NAN) && s.accepts(f64::INFINITY),
            "{}",
            s.describe()
        );
        assert!(!s.accepts(0.0) && !s.accepts(1.0), "{}", s.describe());
        // one infinity and a finite term: that infinity only
        let s = oracle(
            "fn f(x: R, y: R) -> R = x - y",
            &[Value::Real(f64::INFINITY), Value::Real(1.0)],
        )[0];
        assert!(s.accepts(f64::INFINITY), "{}", s.describe());
        assert!(
            !s.accepts(f64::NAN) && !s.accepts(f64::NEG_INFINITY),
            "{}",
            s.describe()
        );
    }

    #[test]
    fn constant_folds_that_underflow_or_overflow_are_refused() {
        let s = oracle("fn f(x: R) -> R = x * 1e50 / 1e50", &[Value::Real(1.0)])[0];
        assert!(s.accepts(1.0) && !s.accepts(0.0), "{}", s.describe());
        let s = oracle("fn f(x: R) -> R = x * 1e200 * 1e200", &[Value::Real(1.0)])[0];
        assert!(s.is_any());
    }

    #[test]
    fn reordered_sums_are_within_the_allowance() {
        let x = [1e16, 1.0, -1e16, 1.0];
        let arg = Value::Array(ndarray::arr1(&x).into_dyn());
        let s = oracle("fn f(x: [4]R) -> R = sum(i:4) x[i]", &[arg])[0];
        // left to right gives 1; pairwise gives 2 or 0: all are in the bound
        for o in [0.0, 1.0, 2.0] {
            assert!(s.accepts(o), "{} refused {o}", s.describe());
        }
        assert!(!s.accepts(100.0));
    }
}
