//! The scheduling stage between the loop IR ([`super::loopir`]) and
//! Cranelift ([`super::codegen`]): it decides, for one nest and one
//! [`Layout`], how the nest's loops run. [`schedule`] returns a
//! [`NestSched`]: the order of the gen loops and the body as a scheduled
//! scalar tree [`T`] whose sums carry their loop domains. The decisions
//! taken here:
//!
//! - **Per-layout specialisation.** Native code is compiled per layout
//!   (which axes of which buffers are unit-stride; see `jit::Kernel`), so
//!   every decision below may read the layout: the same function called
//!   with C-order and Fortran-order arguments gets two schedules.
//! - **Loop order.** The innermost gen loop is the variable that indexes
//!   the most unit-stride axes (the output's counts double), so a
//!   transposed output or a read of `A[j,i]` walks memory contiguously;
//!   the other loops keep their order. The caller's range `lo..hi` always
//!   applies to the nest's first gen variable (`vars[0]`) wherever its
//!   loop ends up.
//! - **Loop domains from brackets.** A bracket that multiplies the whole
//!   body of a sum (a factor in numerator position of its product tree)
//!   and whose conjuncts solve for the sum's variable with coefficient ±1
//!   (`[j <= i]`, `[i-1 <= j && j <= i+1]`, `[j = i]`) becomes the
//!   bounds of the loop instead of a test per term. Terms outside the
//!   domain are strong zeros, so skipping them is exact; the sum's
//!   strong-zero flag stays exact ([`SumT::dom_strong`]: a sum whose range
//!   is not empty but whose domain is, is a strong zero).
//! - **Reduction interchange.** `sum(j) a(j) * sum(i) b(i) * c(i,j)` (no
//!   strong zeros) is computed as `sum(i) b'(i) * sum(j) a(j) * c'(i,j)`
//!   when `j` indexes more unit-stride axes than `i` (the bilinear form
//!   `sum(j) y[j] * sum(i) x[i] * A[i,j]` then walks rows of `A`). This
//!   reassociates the sum like every other schedule decision (see the
//!   README: results differ from the interpreter's left-to-right order by
//!   rounding only).
//!
//! - **Column sums computed ahead** ([`columns`], [`materialise`],
//!   [`with_columns`]). A sum `sum(j) f(i, j)` that depends on one
//!   enclosing loop variable `i` only (`sum(i) (…) * sum(j) x[j] * A[j,i]`,
//!   the chain `x·A·B·y`; `gen(i) c[i] + sum(j) x[j] * A[j,i]`) gets,
//!   layout-independently, a scratch vector `t` (a `Temp` buffer of the
//!   workspace, so no allocation per call once it is sized) and a nest
//!   `t[i] = sum(j) f(i, j)` placed before the consumer. Per layout, that
//!   nest runs and the consumer loads `t[i]` when more of the loads that
//!   depend on both variables walk unit stride along `i` than along `j`
//!   (the nest then runs in its own best order, accumulating rows, or on
//!   the GEMM library), or always when the nest is a GEMM stage; otherwise
//!   the nest is skipped (`codegen::Native::skip`) and the consumer
//!   computes the sum in place as before. Nests with brackets (a guard or
//!   loop domain could skip most of the sum), strong-zero buffers, or
//!   that are GEMM stages or dense contractions themselves (`dense`
//!   interchanges the two-level form per layout) are left alone. Computing ahead
//!   evaluates the same terms (zero padding checked as before) for every
//!   `i` of the loop's full range; only the order of additions changes.
//! - **Cache blocking of maps that walk across memory** ([`tiled`]): the
//!   transpose `gen(i,j) A[j,i]` (any nest without sums whose two
//!   innermost loops each walk some access at unit stride) runs those
//!   loops in blocks of [`TILE`] when, at call time, the rows walked
//!   across alias in the L1 cache or outrun the TLB.
//! - **Reuse of temporaries** ([`reuse_temps`]): a subterm of a later nest
//!   that is an earlier `let` temporary's whole body (with a call in it),
//!   its gen variables bound to loop variables of the same ranges, loads
//!   the temporary instead (the optimised row softmax
//!   `let t0 = gen(i,j) exp(X[i,j]) in let t1 = gen(i) sum(j) exp(X[i,j])
//!   in …` then computes each `exp` once). Temporaries that may hold
//!   strong zeros are not reused.
//!
//! Decided by the code generator from the scheduled tree (documented in
//! [`super::codegen`]): loop-invariant code motion per loop, peeling of
//! border iterations for zero padding, and `f64x2` vectorisation of
//! innermost unit-stride loops.

use super::loopir::*;
use crate::syntax::ast::{BinOp, CmpOp, Func};
use std::collections::BTreeSet;

/// A loop bound: `aff` (over enclosing loop variables) plus an optional
/// multiple of a size.
#[derive(Clone, Debug)]
pub struct Bound {
    pub aff: Aff,
    pub size: Option<(SizeRef, i64)>,
}

/// A loop domain inside `0..n`: the variable runs over
/// `max(0, lo..) .. min(n, hi..)`.
#[derive(Clone, Debug, Default)]
pub struct Dom {
    pub lo: Vec<Bound>,
    pub hi: Vec<Bound>,
}

/// A scheduled scalar expression: the loop IR's [`S`] with sums carrying
/// their domains, loads their strong-zero flag buffers, and (inside the
/// code generator) values hoisted out of loops.
#[derive(Clone, Debug)]
pub enum T {
    Num(f64),
    /// A load; `flag` is the buffer of the loaded temporary's strong-zero
    /// flags, if it has one.
    Load {
        buf: usize,
        ixs: Vec<Ix>,
        flag: Option<usize>,
    },
    Bracket(P),
    Eps(Vec<Aff>),
    Bin(BinOp, Box<T>, Box<T>),
    Neg(Box<T>),
    Call(Func, Vec<T>),
    Sum(Box<SumT>),
    /// The `k`-th value computed before the current loop by the code
    /// generator; the flag says whether it may be a strong zero.
    Hoisted(usize, bool),
}

/// `sum(var in dom ∩ 0..n) body`.
#[derive(Clone, Debug)]
pub struct SumT {
    pub var: usize,
    pub n: SizeRef,
    pub dom: Dom,
    pub body: T,
    /// The domain came from a bracket: terms outside it are strong zeros
    /// (so the sum is a strong zero when `n > 0` and every term in the
    /// domain, if any, is one).
    pub dom_strong: bool,
}

/// The schedule of one nest.
#[derive(Clone, Debug)]
pub struct NestSched {
    /// Positions into `nest.vars`, outermost loop first.
    pub order: Vec<usize>,
    pub body: T,
    /// The two innermost gen loops may run in blocks of [`TILE`]: the
    /// buffer and axis of an access that walks across memory along the
    /// innermost loop (see [`tiled`]).
    pub tile: Option<(usize, usize)>,
}

/// The blocks of two tiled gen loops: (outer, inner) iterations. The
/// inner loop runs 8 at a time, so the access that walks across memory
/// reads 8 lines (one per row, each reused by the next 8 iterations of
/// the outer loop) and the one that walks along writes or reads whole
/// 64-byte lines; 8 lines also fit one set of the 8-way L1 cache when the
/// rows are a multiple of 4 KiB apart (n = 512, 1024). The outer loop
/// runs 128 at a time, so the rows the block visits stay in the TLB. By
/// measurement (the transpose `gen(i,j) A[j,i]`, n = 500–2048, 1 thread,
/// outer 8–full × inner 4–32); see [`tiled`].
pub const TILE: (i64, i64) = (128, 8);

/// Blocks are used beyond this many rows along the innermost loop
/// whatever their distance (see [`tiled`]; n = 1536–3000: 2.8–3.3× faster
/// blocked).
pub const TILE_ROWS: i64 = 1024;

/// Schedule `nest` of `p` for buffers laid out as `layout` says.
pub fn schedule(p: &LoopProgram, nest: &Nest, layout: &Layout) -> NestSched {
    let body = of_s(&nest.body, &p.bufs);
    let body = domains(body);
    let body = interchange(body, layout);
    let order = loop_order(nest, &body, layout);
    let tile = tiled(nest, &order, &body, layout);
    NestSched { order, body, tile }
}

/// **Cache blocking of a map that walks across memory**: a nest without
/// sums whose innermost gen loop walks unit stride in some accesses while
/// another access is unit-stride along the loop outside it (the transpose
/// `gen(i,j) A[j,i]`, `gen(i,j) A[i,j] + A[j,i]`) gets that access's
/// buffer and axis along the innermost loop. The code generator then runs
/// the two loops in blocks of [`TILE`] when, at call time, that axis's
/// rows are a multiple of 2 KiB apart (they then share a few sets of the
/// L1 cache, and a column of a few hundred rows no longer stays in it) or
/// the innermost loop spans more than [`TILE_ROWS`] rows (beyond what the
/// TLB holds); otherwise (n = 500, 1000: 0.5–0.8× the time of the
/// blocked loops) as before. Every element is computed by the same
/// operations: only the order in which elements are visited changes.
fn tiled(nest: &Nest, order: &[usize], body: &T, layout: &Layout) -> Option<(usize, usize)> {
    let &[.., a, b] = order else {
        return None;
    };
    let (va, vb) = (nest.vars[a].0, nest.vars[b].0);
    if has_sum(body) || va == vb {
        return None;
    }
    // the output walks across when it is unit-stride along `a`
    let out_across = layout.is_unit(nest.buf, a) && !layout.is_unit(nest.buf, b);
    let mut found = if out_across {
        Some((nest.buf, b))
    } else {
        None
    };
    across(body, va, vb, layout, &mut found);
    let unit_b = 2 * usize::from(layout.is_unit(nest.buf, b)) + unit_score(body, vb, layout);
    found.filter(|_| unit_b > 0)
}

/// The first load of `t` that is unit-stride along `va` and reads one
/// axis, not unit-stride, with `vb`: its buffer and that axis.
fn across(t: &T, va: usize, vb: usize, layout: &Layout, out: &mut Option<(usize, usize)>) {
    if out.is_some() {
        return;
    }
    match t {
        T::Load { buf, ixs, .. } => {
            let on: Vec<usize> = (0..ixs.len())
                .filter(|&x| coef(&ixs[x].aff, vb) != 0)
                .collect();
            if let [x] = on[..] {
                if !layout.is_unit(*buf, x) && unit_score(t, va, layout) > 0 {
                    *out = Some((*buf, x));
                }
            }
        }
        T::Bin(_, a, b) => {
            across(a, va, vb, layout, out);
            across(b, va, vb, layout, out);
        }
        T::Neg(a) => across(a, va, vb, layout, out),
        T::Call(_, args) => args.iter().for_each(|a| across(a, va, vb, layout, out)),
        _ => {}
    }
}

/// The number of nodes of `t` if it is at most `budget` (counting stops
/// past it).
pub(crate) fn size_within(t: &T, budget: usize) -> Option<usize> {
    fn walk(t: &T, left: &mut usize) -> bool {
        if *left == 0 {
            return false;
        }
        *left -= 1;
        match t {
            T::Bin(_, a, b) => walk(a, left) && walk(b, left),
            T::Neg(a) => walk(a, left),
            T::Call(_, args) => args.iter().all(|a| walk(a, left)),
            T::Sum(s) => walk(&s.body, left),
            _ => true,
        }
    }
    let mut left = budget;
    walk(t, &mut left).then_some(budget - left)
}

/// Whether `t` contains a sum (a loop of its own).
pub(crate) fn has_sum(t: &T) -> bool {
    match t {
        T::Sum(_) => true,
        T::Bin(_, a, b) => has_sum(a) || has_sum(b),
        T::Neg(a) => has_sum(a),
        T::Call(_, args) => args.iter().any(has_sum),
        _ => false,
    }
}

fn of_s(s: &S, bufs: &[Buf]) -> T {
    match s {
        S::Num(x) => T::Num(*x),
        S::Load(b, ixs) => T::Load {
            buf: *b,
            ixs: ixs.clone(),
            flag: bufs[*b].flag,
        },
        S::Bracket(p) => T::Bracket(p.clone()),
        S::Eps(v) => T::Eps(v.clone()),
        S::Bin(op, a, b) => T::Bin(*op, Box::new(of_s(a, bufs)), Box::new(of_s(b, bufs))),
        S::Neg(a) => T::Neg(Box::new(of_s(a, bufs))),
        S::Call(f, args) => T::Call(*f, args.iter().map(|a| of_s(a, bufs)).collect()),
        S::Sum(v, n, b) => T::Sum(Box::new(SumT {
            var: *v,
            n: n.clone(),
            dom: Dom::default(),
            body: of_s(b, bufs),
            dom_strong: false,
        })),
    }
}

/// Whether `t` may be a strong zero (as `loopir::may_be_strong`).
pub fn strong(t: &T) -> bool {
    match t {
        T::Bracket(_) => true,
        T::Load { flag, .. } => flag.is_some(),
        T::Hoisted(_, s) => *s,
        T::Neg(a) => strong(a),
        T::Sum(s) => s.dom_strong || strong(&s.body),
        T::Bin(BinOp::Mul, a, b) => strong(a) || strong(b),
        T::Bin(BinOp::Div, a, _) => strong(a),
        T::Bin(BinOp::Add | BinOp::Sub, a, b) => strong(a) && strong(b),
        _ => false,
    }
}

/// The coefficient of `v` in `a`.
pub fn coef(a: &Aff, v: usize) -> i64 {
    a.terms
        .iter()
        .filter(|(x, _)| *x == v)
        .map(|(_, c)| c)
        .sum()
}

/// `a` without its `v` terms.
pub fn without(a: &Aff, v: usize) -> Aff {
    Aff {
        terms: a.terms.iter().filter(|(x, _)| *x != v).cloned().collect(),
        constant: a.constant,
    }
}

/// `k * a`.
pub fn scale(a: &Aff, k: i64) -> Aff {
    Aff {
        terms: a.terms.iter().map(|(x, c)| (*x, c * k)).collect(),
        constant: a.constant * k,
    }
}

fn sub(a: &Aff, b: &Aff) -> Aff {
    let mut terms = a.terms.clone();
    for (x, c) in &b.terms {
        terms.push((*x, -c));
    }
    let mut merged: Vec<(usize, i64)> = Vec::new();
    for (x, c) in terms {
        match merged.iter_mut().find(|(y, _)| *y == x) {
            Some(e) => e.1 += c,
            None => merged.push((x, c)),
        }
    }
    merged.retain(|(_, c)| *c != 0);
    Aff {
        terms: merged,
        constant: a.constant - b.constant,
    }
}

fn aff_vars(a: &Aff, out: &mut BTreeSet<usize>) {
    out.extend(a.terms.iter().filter(|(_, c)| *c != 0).map(|(x, _)| *x));
}

fn pred_vars(p: &P, out: &mut BTreeSet<usize>) {
    match p {
        P::Cmp(_, a, b) => {
            aff_vars(a, out);
            aff_vars(b, out);
        }
        P::And(a, b) | P::Or(a, b) => {
            pred_vars(a, out);
            pred_vars(b, out);
        }
        P::Not(a) => pred_vars(a, out),
    }
}

/// The free loop variables of `t`.
pub fn free_vars(t: &T, out: &mut BTreeSet<usize>) {
    match t {
        T::Num(_) | T::Hoisted(..) => {}
        T::Load { ixs, .. } => ixs.iter().for_each(|ix| aff_vars(&ix.aff, out)),
        T::Bracket(p) => pred_vars(p, out),
        T::Eps(v) => v.iter().for_each(|a| aff_vars(a, out)),
        T::Bin(_, a, b) => {
            free_vars(a, out);
            free_vars(b, out);
        }
        T::Neg(a) => free_vars(a, out),
        T::Call(_, args) => args.iter().for_each(|a| free_vars(a, out)),
        T::Sum(s) => {
            let mut inner = BTreeSet::new();
            free_vars(&s.body, &mut inner);
            for b in s.dom.lo.iter().chain(&s.dom.hi) {
                aff_vars(&b.aff, &mut inner);
            }
            inner.remove(&s.var);
            out.extend(inner);
        }
    }
}

/// Whether `t` mentions `v` (free).
pub fn mentions(t: &T, v: usize) -> bool {
    let mut s = BTreeSet::new();
    free_vars(t, &mut s);
    s.contains(&v)
}

// ---------------------------------------------------------------- domains

/// The bounds a comparison puts on `v` when it solves for `v` with
/// coefficient ±1: `(lo, hi)` (half-open).
pub(crate) fn solve(op: CmpOp, a: &Aff, b: &Aff, v: usize) -> Option<(Option<Aff>, Option<Aff>)> {
    // d = a - b; d op 0
    let d = sub(a, b);
    let c = coef(&d, v);
    let (d, op) = match c {
        1 => (d, op),
        -1 => (
            scale(&d, -1),
            match op {
                CmpOp::Lt => CmpOp::Gt,
                CmpOp::Le => CmpOp::Ge,
                CmpOp::Gt => CmpOp::Lt,
                CmpOp::Ge => CmpOp::Le,
                o => o,
            },
        ),
        _ => return None,
    };
    // v + r op 0, so v op -r
    let m = scale(&without(&d, v), -1);
    let plus = |k: i64| Aff {
        terms: m.terms.clone(),
        constant: m.constant + k,
    };
    Some(match op {
        CmpOp::Lt => (None, Some(plus(0))),
        CmpOp::Le => (None, Some(plus(1))),
        CmpOp::Gt => (Some(plus(1)), None),
        CmpOp::Ge => (Some(plus(0)), None),
        CmpOp::Eq => (Some(plus(0)), Some(plus(1))),
        CmpOp::Ne => return None,
    })
}

pub(crate) fn conjuncts(p: P, out: &mut Vec<P>) {
    match p {
        P::And(a, b) => {
            conjuncts(*a, out);
            conjuncts(*b, out);
        }
        P::Not(a) => match *a {
            P::Cmp(op, x, y) => out.push(P::Cmp(
                match op {
                    CmpOp::Eq => CmpOp::Ne,
                    CmpOp::Ne => CmpOp::Eq,
                    CmpOp::Lt => CmpOp::Ge,
                    CmpOp::Le => CmpOp::Gt,
                    CmpOp::Gt => CmpOp::Le,
                    CmpOp::Ge => CmpOp::Lt,
                },
                x,
                y,
            )),
            P::Not(b) => conjuncts(*b, out),
            other => out.push(P::Not(Box::new(other))),
        },
        p => out.push(p),
    }
}

/// Take the brackets in numerator position of `t`'s product tree apart:
/// the conjuncts that solve for `v` go into `dom`, the rest stay.
/// `found` is set when any conjunct went.
fn take_brackets(t: T, v: usize, dom: &mut Dom, found: &mut bool) -> T {
    match t {
        T::Bracket(p) => {
            let mut cs = Vec::new();
            conjuncts(p, &mut cs);
            let mut rest: Option<P> = None;
            for c in cs {
                let solved = match &c {
                    P::Cmp(op, a, b) => solve(*op, a, b, v),
                    _ => None,
                };
                match solved {
                    Some((lo, hi)) => {
                        *found = true;
                        if let Some(lo) = lo {
                            dom.lo.push(Bound {
                                aff: lo,
                                size: None,
                            });
                        }
                        if let Some(hi) = hi {
                            dom.hi.push(Bound {
                                aff: hi,
                                size: None,
                            });
                        }
                    }
                    None => {
                        rest = Some(match rest {
                            None => c,
                            Some(r) => P::And(Box::new(r), Box::new(c)),
                        })
                    }
                }
            }
            match rest {
                None => T::Num(1.0),
                Some(r) => T::Bracket(r),
            }
        }
        T::Bin(BinOp::Mul, a, b) => {
            let a = take_brackets(*a, v, dom, found);
            let b = take_brackets(*b, v, dom, found);
            // 1 * e and e * 1 are e, flag included
            match (a, b) {
                (T::Num(x), e) | (e, T::Num(x)) if x == 1.0 => e,
                (a, b) => T::Bin(BinOp::Mul, Box::new(a), Box::new(b)),
            }
        }
        T::Bin(BinOp::Div, a, b) => {
            let a = take_brackets(*a, v, dom, found);
            T::Bin(BinOp::Div, Box::new(a), b)
        }
        T::Neg(a) => T::Neg(Box::new(take_brackets(*a, v, dom, found))),
        t => t,
    }
}

/// Turn brackets over each sum's variable into the sum's domain.
fn domains(t: T) -> T {
    match t {
        T::Sum(s) => {
            let SumT {
                var,
                n,
                mut dom,
                body,
                dom_strong,
            } = *s;
            let body = domains(body);
            let mut found = false;
            let body = take_brackets(body, var, &mut dom, &mut found);
            T::Sum(Box::new(SumT {
                var,
                n,
                dom,
                body,
                dom_strong: dom_strong || found,
            }))
        }
        T::Bin(op, a, b) => T::Bin(op, Box::new(domains(*a)), Box::new(domains(*b))),
        T::Neg(a) => T::Neg(Box::new(domains(*a))),
        T::Call(f, args) => T::Call(f, args.into_iter().map(domains).collect()),
        t => t,
    }
}

// ------------------------------------------------------------ interchange

/// How many loads of `t` index a unit-stride axis with plain `v` (the
/// other axes not mentioning `v`), i.e. walk memory contiguously when `v`
/// is the innermost loop.
pub fn unit_score(t: &T, v: usize, layout: &Layout) -> usize {
    match t {
        T::Load { buf, ixs, .. } => {
            let on: Vec<usize> = (0..ixs.len())
                .filter(|&a| coef(&ixs[a].aff, v) != 0)
                .collect();
            usize::from(
                on.len() == 1 && coef(&ixs[on[0]].aff, v) == 1 && layout.is_unit(*buf, on[0]),
            )
        }
        T::Bin(_, a, b) => unit_score(a, v, layout) + unit_score(b, v, layout),
        T::Neg(a) => unit_score(a, v, layout),
        T::Call(_, args) => args.iter().map(|a| unit_score(a, v, layout)).sum(),
        T::Sum(s) => unit_score(&s.body, v, layout),
        _ => 0,
    }
}

fn factors(t: T, out: &mut Vec<T>) {
    match t {
        T::Bin(BinOp::Mul, a, b) => {
            factors(*a, out);
            factors(*b, out);
        }
        t => out.push(t),
    }
}

fn product(fs: Vec<T>) -> T {
    let mut it = fs.into_iter();
    let first = it.next().unwrap_or(T::Num(1.0));
    it.fold(first, |a, b| T::Bin(BinOp::Mul, Box::new(a), Box::new(b)))
}

fn plain_sum(t: &T) -> bool {
    matches!(t, T::Sum(s) if s.dom.lo.is_empty() && s.dom.hi.is_empty() && !s.dom_strong)
}

/// `sum(j) F * sum(i) G` → `sum(i) G_i * sum(j) F * G_ij` when `j` walks
/// memory better than `i` (no strong zeros anywhere).
fn interchange(t: T, layout: &Layout) -> T {
    match t {
        T::Sum(s) => {
            let mut s = *s;
            s.body = interchange(s.body, layout);
            if !plain_sum(&T::Sum(Box::new(s.clone()))) || strong(&s.body) {
                return T::Sum(Box::new(s));
            }
            let j = s.var;
            let mut fs = Vec::new();
            factors(s.body.clone(), &mut fs);
            let sums: Vec<usize> = (0..fs.len()).filter(|&k| plain_sum(&fs[k])).collect();
            if sums.len() != 1 {
                return T::Sum(Box::new(s));
            }
            let inner = match fs.remove(sums[0]) {
                T::Sum(x) => *x,
                _ => unreachable!(),
            };
            let i = inner.var;
            let mut gs = Vec::new();
            factors(inner.body.clone(), &mut gs);
            if gs.iter().any(|g| matches!(g, T::Sum(_))) {
                return T::Sum(Box::new(s));
            }
            let score = |v: usize| -> usize {
                fs.iter().chain(&gs).map(|f| unit_score(f, v, layout)).sum()
            };
            if score(j) <= score(i) {
                return T::Sum(Box::new(s));
            }
            let (with_j, without_j): (Vec<T>, Vec<T>) =
                gs.into_iter().partition(|g| mentions(g, j));
            let mut in_j = fs;
            in_j.extend(with_j);
            let new_inner = T::Sum(Box::new(SumT {
                var: j,
                n: s.n,
                dom: Dom::default(),
                body: product(in_j),
                dom_strong: false,
            }));
            let mut outer = without_j;
            outer.push(new_inner);
            T::Sum(Box::new(SumT {
                var: i,
                n: inner.n,
                dom: Dom::default(),
                body: product(outer),
                dom_strong: false,
            }))
        }
        T::Bin(op, a, b) => T::Bin(
            op,
            Box::new(interchange(*a, layout)),
            Box::new(interchange(*b, layout)),
        ),
        T::Neg(a) => T::Neg(Box::new(interchange(*a, layout))),
        T::Call(f, args) => T::Call(
            f,
            args.into_iter().map(|a| interchange(a, layout)).collect(),
        ),
        t => t,
    }
}

// ------------------------------------------------------------ loop order

/// The gen loops' order: the variable with the best [`unit_score`] (the
/// output's unit-stride axis counts twice) innermost, unless the written
/// order's innermost is as good.
fn loop_order(nest: &Nest, body: &T, layout: &Layout) -> Vec<usize> {
    let n = nest.vars.len();
    let mut order: Vec<usize> = (0..n).collect();
    if n < 2 {
        return order;
    }
    let score = |k: usize| -> usize {
        let v = nest.vars[k].0;
        2 * usize::from(layout.is_unit(nest.buf, k)) + unit_score(body, v, layout)
    };
    let best = (0..n).rev().max_by_key(|&k| (score(k), k)).expect("n >= 2");
    let best = if score(best) > score(n - 1) {
        best
    } else {
        n - 1
    };
    order.retain(|&k| k != best);
    order.push(best);
    order
}

// ---------------------------------------------------------- column sums

/// At most this many column sums per nest get a scratch vector.
pub const MAX_COLS: usize = 4;

fn s_free(s: &S, out: &mut BTreeSet<usize>) {
    match s {
        S::Num(_) => {}
        S::Load(_, ixs) => ixs.iter().for_each(|ix| aff_vars(&ix.aff, out)),
        S::Bracket(p) => pred_vars(p, out),
        S::Eps(v) => v.iter().for_each(|a| aff_vars(a, out)),
        S::Bin(_, a, b) => {
            s_free(a, out);
            s_free(b, out);
        }
        S::Neg(a) => s_free(a, out),
        S::Call(_, args) => args.iter().for_each(|a| s_free(a, out)),
        S::Sum(v, _, b) => {
            let mut inner = BTreeSet::new();
            s_free(b, &mut inner);
            inner.remove(v);
            out.extend(inner);
        }
    }
}

/// Whether `s` has a node `pick` selects.
fn s_any(s: &S, pick: &dyn Fn(&S) -> bool) -> bool {
    pick(s)
        || match s {
            S::Bin(_, a, b) => s_any(a, pick) || s_any(b, pick),
            S::Neg(a) | S::Sum(_, _, a) => s_any(a, pick),
            S::Call(_, args) => args.iter().any(|a| s_any(a, pick)),
            _ => false,
        }
}

fn rename_aff(a: &Aff, map: &[(usize, usize)]) -> Aff {
    Aff {
        terms: a
            .terms
            .iter()
            .map(|(x, c)| (map.iter().find(|(f, _)| f == x).map_or(*x, |m| m.1), *c))
            .collect(),
        constant: a.constant,
    }
}

fn rename_pred(p: &P, map: &[(usize, usize)]) -> P {
    match p {
        P::Cmp(op, a, b) => P::Cmp(*op, rename_aff(a, map), rename_aff(b, map)),
        P::And(a, b) => P::And(Box::new(rename_pred(a, map)), Box::new(rename_pred(b, map))),
        P::Or(a, b) => P::Or(Box::new(rename_pred(a, map)), Box::new(rename_pred(b, map))),
        P::Not(a) => P::Not(Box::new(rename_pred(a, map))),
    }
}

/// `s` with its variables renamed by `map` (`(from, to)` pairs).
fn rename(s: &S, map: &[(usize, usize)]) -> S {
    match s {
        S::Num(x) => S::Num(*x),
        S::Load(b, ixs) => S::Load(
            *b,
            ixs.iter()
                .map(|ix| Ix {
                    aff: rename_aff(&ix.aff, map),
                    dim: ix.dim.clone(),
                    checked: ix.checked,
                })
                .collect(),
        ),
        S::Bracket(p) => S::Bracket(rename_pred(p, map)),
        S::Eps(v) => S::Eps(v.iter().map(|a| rename_aff(a, map)).collect()),
        S::Bin(op, a, b) => S::Bin(*op, Box::new(rename(a, map)), Box::new(rename(b, map))),
        S::Neg(a) => S::Neg(Box::new(rename(a, map))),
        S::Call(f, args) => S::Call(*f, args.iter().map(|a| rename(a, map)).collect()),
        S::Sum(v, n, b) => S::Sum(
            map.iter().find(|(f, _)| f == v).map_or(*v, |m| m.1),
            n.clone(),
            Box::new(rename(b, map)),
        ),
    }
}

/// The loads of `s` that depend on both `i` and `j`, counted by which of
/// the two walks a unit-stride axis (plain, coefficient 1, the only axis
/// mentioning it): `(along i, along j)`.
fn cross_units(s: &S, i: usize, j: usize, layout: &Layout) -> (usize, usize) {
    match s {
        S::Load(buf, ixs) => {
            let on = |v: usize| -> Vec<usize> {
                (0..ixs.len())
                    .filter(|&a| coef(&ixs[a].aff, v) != 0)
                    .collect()
            };
            let (oi, oj) = (on(i), on(j));
            if oi.is_empty() || oj.is_empty() {
                return (0, 0);
            }
            let unit = |o: &[usize], v: usize| {
                usize::from(
                    o.len() == 1 && coef(&ixs[o[0]].aff, v) == 1 && layout.is_unit(*buf, o[0]),
                )
            };
            (unit(&oi, i), unit(&oj, j))
        }
        S::Bin(_, a, b) => {
            let (x, y) = cross_units(a, i, j, layout);
            let (z, w) = cross_units(b, i, j, layout);
            (x + z, y + w)
        }
        S::Neg(a) | S::Sum(_, _, a) => cross_units(a, i, j, layout),
        S::Call(_, args) => args.iter().fold((0, 0), |(x, y), a| {
            let (z, w) = cross_units(a, i, j, layout);
            (x + z, y + w)
        }),
        _ => (0, 0),
    }
}

/// The column sums of `body` (see [`Col`]): sums whose only free variable
/// is one enclosing loop variable (in `scope`), without sums inside, with
/// a load that depends on both variables; not the whole body, and not the
/// whole body of an enclosing sum (`perfect`: `sum(i) sum(j) A[j,i]` is a
/// perfect nest, whose loop order the scheduler picks so that the
/// unit-stride loop runs innermost, with no scratch vector and no second
/// pass). Found outermost first, left to right.
fn find_cols(
    s: &S,
    top: bool,
    perfect: bool,
    scope: &mut Vec<(usize, SizeRef)>,
    out: &mut Vec<(usize, usize, SizeRef, SizeRef, S)>,
) {
    match s {
        S::Sum(j, m, b) => {
            let mut free = BTreeSet::new();
            s_free(s, &mut free);
            let outer = match free.iter().collect::<Vec<_>>()[..] {
                [i] => scope.iter().rev().find(|(v, _)| v == i).cloned(),
                _ => None,
            };
            if let (Some((i, n)), false) = (outer, perfect) {
                let cross = s_any(b, &|x| {
                    matches!(x, S::Load(_, ixs)
                        if ixs.iter().any(|ix| coef(&ix.aff, i) != 0)
                        && ixs.iter().any(|ix| coef(&ix.aff, *j) != 0))
                });
                if !top && cross && !s_any(b, &|x| matches!(x, S::Sum(..))) {
                    out.push((*j, i, n, m.clone(), (**b).clone()));
                    return;
                }
            }
            scope.push((*j, m.clone()));
            find_cols(b, false, true, scope, out);
            scope.pop();
        }
        S::Bin(_, a, b) => {
            find_cols(a, false, false, scope, out);
            find_cols(b, false, false, scope, out);
        }
        S::Neg(a) => find_cols(a, false, false, scope, out),
        S::Call(_, args) => args
            .iter()
            .for_each(|a| find_cols(a, false, false, scope, out)),
        _ => {}
    }
}

/// Give the column sums of `p`'s nests their scratch vectors and nests
/// ([`Col`], [`LoopProgram::cols`]), layout-independently; whether each
/// runs is decided per layout ([`materialise`]). A nest is left alone
/// when it has a bracket anywhere (a guard or loop domain may skip the
/// sum for most outer indices, which computing it ahead would not), reads
/// or writes strong zeros, or is a GEMM stage or a dense contraction
/// (`dense::plan` takes it; it interchanges the sums of the two-level
/// form `sum(i) x[i] * sum(j) A[j,i] * y[j]` itself, per layout, with no
/// temporary). Computing a
/// column sum ahead changes no value, only when it is computed: it reads
/// the same elements (zero padding checked as before) for every index of
/// its outer loop. With `gemm` (the kernel runs GEMM stages), a column
/// sum whose nest is a GEMM stage (a matrix-vector product) is computed
/// ahead in every layout ([`Col::lib`]): the library takes any strides
/// and beats the generated row or column walk.
pub fn columns(p: &mut LoopProgram, gemm: bool) {
    let mut k = 0;
    while k < p.nests.len() {
        let nest = &p.nests[k];
        if p.touches_strong_buffers(nest)
            || s_any(&nest.body, &|x| matches!(x, S::Bracket(_)))
            || super::gemm::plan(p, nest).is_some()
            || super::dense::plan(p, nest, &Layout::c_order(p)).is_some()
            || p.cols.iter().any(|c| c.buf == nest.buf)
        {
            k += 1;
            continue;
        }
        let mut found = Vec::new();
        let mut scope = nest.vars.clone();
        find_cols(&nest.body, true, false, &mut scope, &mut found);
        found.truncate(MAX_COLS);
        let consumer = nest.buf;
        let name = p.bufs[consumer].name.clone();
        for (c, (j, i, n, m, body)) in found.into_iter().enumerate() {
            let buf = p.bufs.len();
            p.bufs.push(Buf {
                kind: BufKind::Temp,
                dims: vec![n.clone()],
                name: format!("{name}#col{c}"),
                flag: None,
            });
            let (i2, j2) = (p.n_vars, p.n_vars + 1);
            p.n_vars += 2;
            let body = rename(&body, &[(i, i2), (j, j2)]);
            let ahead = Nest {
                buf,
                vars: vec![(i2, n.clone())],
                body: S::Sum(j2, m, Box::new(body)),
            };
            let lib = gemm && super::gemm::plan(p, &ahead).is_some();
            p.nests.insert(k, ahead);
            k += 1;
            p.cols.push(Col {
                buf,
                consumer,
                sum_var: j,
                outer: i,
                n,
                lib,
            });
        }
        k += 1;
    }
}

/// Whether the column sum `col` is computed ahead under `layout`: when
/// more of the loads that depend on both its variables walk a unit-stride
/// axis along the outer variable than along the summed one (the scratch
/// nest then accumulates a row at a time, `for j { for i { t[i] += … } }`,
/// instead of walking a column per outer index), or always when the
/// scratch nest is a GEMM stage ([`Col::lib`]).
pub fn materialise(p: &LoopProgram, col: &Col, layout: &Layout) -> bool {
    if col.lib {
        return true;
    }
    let Some(nest) = p.nests.iter().find(|n| n.buf == col.buf) else {
        return false;
    };
    let (Some((i, _)), S::Sum(j, _, b)) = (nest.vars.first(), &nest.body) else {
        return false;
    };
    let (along_i, along_j) = cross_units(b, *i, *j, layout);
    along_i > along_j
}

/// `nest` as it runs under `layout`: `None` for the nest of a column sum
/// that is not computed ahead (it does nothing), else the nest with each
/// column sum computed ahead replaced by a load of its scratch vector.
pub fn with_columns<'n>(
    p: &LoopProgram,
    nest: &'n Nest,
    layout: &Layout,
) -> Option<std::borrow::Cow<'n, Nest>> {
    use std::borrow::Cow;
    if let Some(c) = p.cols.iter().find(|c| c.buf == nest.buf) {
        return materialise(p, c, layout).then_some(Cow::Borrowed(nest));
    }
    let mine: Vec<&Col> = p
        .cols
        .iter()
        .filter(|c| c.consumer == nest.buf && materialise(p, c, layout))
        .collect();
    if mine.is_empty() {
        return Some(Cow::Borrowed(nest));
    }
    fn subst(s: &S, mine: &[&Col]) -> S {
        match s {
            S::Sum(v, n, b) => match mine.iter().find(|c| c.sum_var == *v) {
                Some(c) => S::Load(
                    c.buf,
                    vec![Ix {
                        aff: Aff {
                            terms: vec![(c.outer, 1)],
                            constant: 0,
                        },
                        dim: c.n.clone(),
                        checked: false,
                    }],
                ),
                None => S::Sum(*v, n.clone(), Box::new(subst(b, mine))),
            },
            S::Bin(op, a, b) => S::Bin(*op, Box::new(subst(a, mine)), Box::new(subst(b, mine))),
            S::Neg(a) => S::Neg(Box::new(subst(a, mine))),
            S::Call(f, args) => S::Call(*f, args.iter().map(|a| subst(a, mine)).collect()),
            s => s.clone(),
        }
    }
    Some(Cow::Owned(Nest {
        buf: nest.buf,
        vars: nest.vars.clone(),
        body: subst(&nest.body, &mine),
    }))
}

// ------------------------------------------------- reuse of temporaries

/// `a` with its terms merged, zeros dropped, sorted by variable.
fn canon(a: &Aff) -> Aff {
    let mut terms: Vec<(usize, i64)> = Vec::new();
    for (x, c) in &a.terms {
        match terms.iter_mut().find(|(y, _)| y == x) {
            Some(e) => e.1 += c,
            None => terms.push((*x, *c)),
        }
    }
    terms.retain(|(_, c)| *c != 0);
    terms.sort_unstable();
    Aff {
        terms,
        constant: a.constant,
    }
}

/// Whether `a` (over the temporary's variables) is `b` (over the
/// consumer's) under `map`, binding unmapped variables of `a` on the way.
fn match_aff(a: &Aff, b: &Aff, map: &mut Vec<(usize, usize)>) -> bool {
    let a = canon(a);
    let mut terms = Vec::new();
    for (x, c) in &a.terms {
        let y = match map.iter().find(|(f, _)| f == x) {
            Some(m) => m.1,
            None => {
                // bind `x` to the variable of `b` with the same coefficient
                // that no other variable maps to
                let cands: Vec<usize> = canon(b)
                    .terms
                    .iter()
                    .filter(|(y, d)| d == c && !map.iter().any(|m| m.1 == *y))
                    .map(|(y, _)| *y)
                    .collect();
                let [y] = cands[..] else { return false };
                map.push((*x, y));
                y
            }
        };
        terms.push((y, *c));
    }
    let mapped = canon(&Aff {
        terms,
        constant: a.constant,
    });
    let b = canon(b);
    mapped.terms == b.terms && mapped.constant == b.constant
}

fn match_pred(a: &P, b: &P, map: &mut Vec<(usize, usize)>) -> bool {
    match (a, b) {
        (P::Cmp(o1, a1, b1), P::Cmp(o2, a2, b2)) => {
            o1 == o2 && match_aff(a1, a2, map) && match_aff(b1, b2, map)
        }
        (P::And(a1, b1), P::And(a2, b2)) | (P::Or(a1, b1), P::Or(a2, b2)) => {
            match_pred(a1, a2, map) && match_pred(b1, b2, map)
        }
        (P::Not(a1), P::Not(a2)) => match_pred(a1, a2, map),
        _ => false,
    }
}

/// Whether the temporary's body `a` is the consumer's subterm `b` under
/// `map` (the temporary's variables to the consumer's; sum variables
/// matched binder to binder).
fn match_s(a: &S, b: &S, map: &mut Vec<(usize, usize)>) -> bool {
    match (a, b) {
        (S::Num(x), S::Num(y)) => x.to_bits() == y.to_bits(),
        (S::Load(b1, i1), S::Load(b2, i2)) => {
            b1 == b2
                && i1.len() == i2.len()
                && i1
                    .iter()
                    .zip(i2)
                    .all(|(x, y)| x.dim == y.dim && match_aff(&x.aff, &y.aff, map))
        }
        (S::Bracket(p), S::Bracket(q)) => match_pred(p, q, map),
        (S::Eps(u), S::Eps(v)) => {
            u.len() == v.len() && u.iter().zip(v).all(|(x, y)| match_aff(x, y, map))
        }
        (S::Bin(o1, a1, b1), S::Bin(o2, a2, b2)) => {
            o1 == o2 && match_s(a1, a2, map) && match_s(b1, b2, map)
        }
        (S::Neg(x), S::Neg(y)) => match_s(x, y, map),
        (S::Call(f, xs), S::Call(g, ys)) => {
            f == g && xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| match_s(x, y, map))
        }
        (S::Sum(v, n, x), S::Sum(w, m, y)) => {
            if n != m || map.iter().any(|(f, t)| f == v || t == w) {
                return false;
            }
            map.push((*v, *w));
            let ok = match_s(x, y, map);
            map.retain(|(f, _)| f != v);
            ok
        }
        _ => false,
    }
}

/// The `let` temporaries of `p` worth reusing: buffer, the nest's
/// variables and body (a call inside: what reuse saves), no strong zeros.
fn reusable(p: &LoopProgram, upto: usize) -> Vec<(usize, &Nest)> {
    p.nests[..upto]
        .iter()
        .filter(|n| {
            matches!(p.bufs[n.buf].kind, BufKind::Temp)
                && p.bufs[n.buf].flag.is_none()
                && !p.cols.iter().any(|c| c.buf == n.buf)
                && s_any(&n.body, &|x| matches!(x, S::Call(..)))
        })
        .map(|n| (n.buf, n))
        .collect()
}

fn reuse_in(s: &S, temps: &[(usize, &Nest)], scope: &mut Vec<(usize, SizeRef)>) -> S {
    for (buf, t) in temps {
        let mut map = Vec::new();
        if !match_s(&t.body, s, &mut map) {
            continue;
        }
        // every gen variable of the temporary is bound to a variable in
        // scope whose loop has the axis's range (a plain, unchecked index)
        let ixs: Option<Vec<Ix>> = t
            .vars
            .iter()
            .map(|(v, n)| {
                let (_, w) = map.iter().find(|(f, _)| f == v)?;
                let (_, m) = scope.iter().rev().find(|(x, _)| x == w)?;
                (m == n).then(|| Ix {
                    aff: Aff {
                        terms: vec![(*w, 1)],
                        constant: 0,
                    },
                    dim: n.clone(),
                    checked: false,
                })
            })
            .collect();
        if let Some(ixs) = ixs {
            return S::Load(*buf, ixs);
        }
    }
    match s {
        S::Bin(op, a, b) => S::Bin(
            *op,
            Box::new(reuse_in(a, temps, scope)),
            Box::new(reuse_in(b, temps, scope)),
        ),
        S::Neg(a) => S::Neg(Box::new(reuse_in(a, temps, scope))),
        S::Call(f, args) => S::Call(*f, args.iter().map(|a| reuse_in(a, temps, scope)).collect()),
        S::Sum(v, n, b) => {
            scope.push((*v, n.clone()));
            let b = reuse_in(b, temps, scope);
            scope.pop();
            S::Sum(*v, n.clone(), Box::new(b))
        }
        s => s.clone(),
    }
}

/// Reuse of `let` temporaries: a subterm of a later nest that is an
/// earlier temporary's whole body, with the temporary's gen variables
/// bound to loop variables of the same ranges, becomes a load of the
/// temporary (`let t0 = gen(i,j) exp(X[i,j]) in let t1 = gen(i) sum(j)
/// exp(X[i,j]) in …`, the optimised row softmax, then computes each
/// `exp` once). Only temporaries whose body calls a function (what a
/// load saves) and that hold no strong zeros; the value loaded is the one
/// the subterm computes (the same operations on the same elements), so
/// nothing changes but the work.
pub fn reuse_temps(p: &mut LoopProgram) {
    for k in 1..p.nests.len() {
        let temps = reusable(p, k);
        if temps.is_empty() {
            continue;
        }
        let nest = &p.nests[k];
        let mut scope = nest.vars.clone();
        let body = reuse_in(&nest.body, &temps, &mut scope);
        p.nests[k].body = body;
    }
}
