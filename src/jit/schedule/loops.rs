//! The generic loops' schedule, between the loop IR ([`crate::jit::ir`])
//! and their code generator (`emit::loops`): it decides, for one nest and one
//! [`Layout`], how the nest's loops run. [`schedule`] returns a
//! [`LoopSchedule`]: the order of the gen loops and the body as a scheduled
//! scalar tree [`SchedExpr`] whose sums carry their loop domains. The decisions
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
//!   strong-zero flag stays exact ([`SchedSum::dom_strong`]: a sum whose range
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
//!   the nest is skipped (`emit::Native::skip`) and the consumer
//!   computes the sum in place as before. Nests with brackets (a guard or
//!   loop domain could skip most of the sum), strong-zero buffers, or
//!   that are GEMM stages or dense contractions themselves (`tiles`
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
//! `emit::loops`): loop-invariant code motion per loop, peeling of
//! border iterations for zero padding, and `f64x2` vectorisation of
//! innermost unit-stride loops.
//!
//! Owns the generic loops' schedule ([`LoopSchedule`]); the code generator
//! (`emit::loops`) follows it. Must not generate code.

use crate::jit::ir::affine::{aff_vars, coef, conjuncts, pred_vars, solve};
use crate::jit::ir::walk::{factors, interchange_factors, Product};
use crate::jit::ir::{Buf, Cond, IndexExpr, Layout, LoadIndex, LoopProgram, Nest, Scalar, SizeRef};
use crate::syntax::ast::{BinOp, Func, RedOp};
use std::collections::BTreeSet;

/// A loop bound: `aff` (over enclosing loop variables) plus an optional
/// multiple of a size.
#[derive(Clone, Debug)]
pub struct Bound {
    pub aff: IndexExpr,
    pub size: Option<(SizeRef, i64)>,
}

/// A loop domain inside `0..n`: the variable runs over
/// `max(0, lo..) .. min(n, hi..)`.
#[derive(Clone, Debug, Default)]
pub struct Domain {
    pub lo: Vec<Bound>,
    pub hi: Vec<Bound>,
}

/// A scheduled scalar expression: the loop IR's [`Scalar`] with sums carrying
/// their domains, loads their strong-zero flag buffers, and (inside the
/// code generator) values hoisted out of loops.
#[derive(Clone, Debug)]
pub enum SchedExpr {
    Num(f64),
    /// A load; `flag` is the buffer of the loaded temporary's strong-zero
    /// flags, if it has one.
    Load {
        buf: usize,
        ixs: Vec<LoadIndex>,
        flag: Option<usize>,
    },
    Bracket(Cond),
    Eps(Vec<IndexExpr>),
    Bin(BinOp, Box<SchedExpr>, Box<SchedExpr>),
    Neg(Box<SchedExpr>),
    Call(Func, Vec<SchedExpr>),
    Sum(Box<SchedSum>),
    /// The `k`-th value computed before the current loop by the code
    /// generator; the flag says whether it may be a strong zero.
    Hoisted(usize, bool),
    /// A max/min reduction: a loop of its own over its whole range, never
    /// a strong zero; no domain, interchange or column is taken from it
    /// (a term outside a bracket's domain is a 0 that still counts).
    Reduce(Box<SchedRed>),
    /// An index expression as a number ([`crate::jit::ir::Scalar::Index`]).
    Index(IndexExpr),
    /// A size as a number.
    SizeVal(SizeRef),
    /// `where` ([`crate::jit::ir::Scalar::Select`]).
    Select(crate::jit::ir::SelCond, Vec<SchedExpr>),
    /// A fold ([`crate::jit::ir::FoldLoop`]): a sequential loop of its
    /// own, never a strong zero; no domain, interchange or column is
    /// taken from it or from inside it.
    Fold(Box<SchedFold>),
    /// An accumulator slot of an enclosing fold.
    Acc(usize),
    /// A load with gathered axes ([`crate::jit::ir::Scalar::Gather`]).
    Gather {
        buf: usize,
        ixs: Vec<LoadIndex>,
        dyns: Vec<(usize, Box<SchedExpr>, i64)>,
    },
}

/// A fold's loop: the loop IR's [`crate::jit::ir::FoldLoop`] with its
/// values scheduled.
#[derive(Clone, Debug)]
pub struct SchedFold {
    pub var: usize,
    pub n: SizeRef,
    pub slots: Vec<usize>,
    pub init: Vec<SchedExpr>,
    pub body: Vec<SchedExpr>,
    pub pick: usize,
}

/// `max(var:n) body` or `min(var:n) body`.
#[derive(Clone, Debug)]
pub struct SchedRed {
    pub op: RedOp,
    pub var: usize,
    pub n: SizeRef,
    pub body: SchedExpr,
}

/// `sum(var in dom ∩ 0..n) body`.
#[derive(Clone, Debug)]
pub struct SchedSum {
    pub var: usize,
    pub n: SizeRef,
    pub dom: Domain,
    pub body: SchedExpr,
    /// The domain came from a bracket: terms outside it are strong zeros
    /// (so the sum is a strong zero when `n > 0` and every term in the
    /// domain, if any, is one).
    pub dom_strong: bool,
}

/// The schedule of one nest.
#[derive(Clone, Debug)]
pub struct LoopSchedule {
    /// Positions into `nest.vars`, outermost loop first.
    pub order: Vec<usize>,
    pub body: SchedExpr,
    /// The two innermost gen loops may run in blocks of `TILE`: the
    /// buffer and axis of an access that walks across memory along the
    /// innermost loop (see `tiled`).
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
pub fn schedule(p: &LoopProgram, nest: &Nest, layout: &Layout) -> LoopSchedule {
    let body = of_s(&nest.body, &p.bufs);
    let body = domains(body);
    let body = interchange(body, layout);
    let order = loop_order(nest, &body, layout);
    let tile = tiled(nest, &order, &body, layout);
    LoopSchedule { order, body, tile }
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
fn tiled(
    nest: &Nest,
    order: &[usize],
    body: &SchedExpr,
    layout: &Layout,
) -> Option<(usize, usize)> {
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
fn across(t: &SchedExpr, va: usize, vb: usize, layout: &Layout, out: &mut Option<(usize, usize)>) {
    if out.is_some() {
        return;
    }
    match t {
        SchedExpr::Load { buf, ixs, .. } => {
            let on: Vec<usize> = (0..ixs.len())
                .filter(|&x| coef(&ixs[x].aff, vb) != 0)
                .collect();
            if let [x] = on[..] {
                if !layout.is_unit(*buf, x) && unit_score(t, va, layout) > 0 {
                    *out = Some((*buf, x));
                }
            }
        }
        SchedExpr::Bin(_, a, b) => {
            across(a, va, vb, layout, out);
            across(b, va, vb, layout, out);
        }
        SchedExpr::Neg(a) => across(a, va, vb, layout, out),
        SchedExpr::Call(_, args) => args.iter().for_each(|a| across(a, va, vb, layout, out)),
        _ => {}
    }
}

/// The number of nodes of `t` if it is at most `budget` (counting stops
/// past it).
pub(crate) fn size_within(t: &SchedExpr, budget: usize) -> Option<usize> {
    fn walk(t: &SchedExpr, left: &mut usize) -> bool {
        if *left == 0 {
            return false;
        }
        *left -= 1;
        match t {
            SchedExpr::Bin(_, a, b) => walk(a, left) && walk(b, left),
            SchedExpr::Neg(a) => walk(a, left),
            SchedExpr::Call(_, args) => args.iter().all(|a| walk(a, left)),
            SchedExpr::Sum(s) => walk(&s.body, left),
            SchedExpr::Reduce(r) => walk(&r.body, left),
            SchedExpr::Fold(f) => f.init.iter().chain(&f.body).all(|a| walk(a, left)),
            _ => true,
        }
    }
    let mut left = budget;
    walk(t, &mut left).then_some(budget - left)
}

/// Whether `t` contains a sum (a loop of its own).
pub(crate) fn has_sum(t: &SchedExpr) -> bool {
    match t {
        SchedExpr::Sum(_) => true,
        SchedExpr::Reduce(_) | SchedExpr::Fold(_) => true,
        SchedExpr::Bin(_, a, b) => has_sum(a) || has_sum(b),
        SchedExpr::Neg(a) => has_sum(a),
        SchedExpr::Call(_, args) => args.iter().any(has_sum),
        SchedExpr::Select(_, args) => args.iter().any(has_sum),
        _ => false,
    }
}

fn of_s(s: &Scalar, bufs: &[Buf]) -> SchedExpr {
    match s {
        Scalar::Num(x) => SchedExpr::Num(*x),
        Scalar::Load(b, ixs) => SchedExpr::Load {
            buf: *b,
            ixs: ixs.clone(),
            flag: bufs[*b].flag,
        },
        Scalar::Bracket(p) => SchedExpr::Bracket(p.clone()),
        Scalar::Eps(v) => SchedExpr::Eps(v.clone()),
        Scalar::Bin(op, a, b) => {
            SchedExpr::Bin(*op, Box::new(of_s(a, bufs)), Box::new(of_s(b, bufs)))
        }
        Scalar::Neg(a) => SchedExpr::Neg(Box::new(of_s(a, bufs))),
        Scalar::Call(f, args) => SchedExpr::Call(*f, args.iter().map(|a| of_s(a, bufs)).collect()),
        Scalar::Sum(v, n, b) => SchedExpr::Sum(Box::new(SchedSum {
            var: *v,
            n: n.clone(),
            dom: Domain::default(),
            body: of_s(b, bufs),
            dom_strong: false,
        })),
        Scalar::Reduce(op, v, n, b) => SchedExpr::Reduce(Box::new(SchedRed {
            op: *op,
            var: *v,
            n: n.clone(),
            body: of_s(b, bufs),
        })),
        Scalar::Index(a) => SchedExpr::Index(a.clone()),
        Scalar::SizeVal(n) => SchedExpr::SizeVal(n.clone()),
        Scalar::Select(c, args) => {
            SchedExpr::Select(c.clone(), args.iter().map(|a| of_s(a, bufs)).collect())
        }
        Scalar::Fold(f) => SchedExpr::Fold(Box::new(SchedFold {
            var: f.var,
            n: f.n.clone(),
            slots: f.slots.clone(),
            init: f.init.iter().map(|a| of_s(a, bufs)).collect(),
            body: f.body.iter().map(|a| of_s(a, bufs)).collect(),
            pick: f.pick,
        })),
        Scalar::Acc(k) => SchedExpr::Acc(*k),
        Scalar::Gather(b, ixs, dyns) => SchedExpr::Gather {
            buf: *b,
            ixs: ixs.clone(),
            dyns: dyns
                .iter()
                .map(|(a, g, c)| (*a, Box::new(of_s(g, bufs)), *c))
                .collect(),
        },
    }
}

/// Whether `t` may be a strong zero (as `ir::walk::may_be_strong`).
pub fn strong(t: &SchedExpr) -> bool {
    match t {
        SchedExpr::Bracket(_) => true,
        SchedExpr::Load { flag, .. } => flag.is_some(),
        SchedExpr::Hoisted(_, s) => *s,
        SchedExpr::Neg(a) => strong(a),
        SchedExpr::Sum(s) => s.dom_strong || strong(&s.body),
        SchedExpr::Bin(BinOp::Mul, a, b) => strong(a) || strong(b),
        SchedExpr::Bin(BinOp::Div, a, _) => strong(a),
        SchedExpr::Bin(BinOp::Add | BinOp::Sub, a, b) => strong(a) && strong(b),
        _ => false,
    }
}

/// The free loop variables of `t`.
pub fn free_vars(t: &SchedExpr, out: &mut BTreeSet<usize>) {
    match t {
        SchedExpr::Num(_) | SchedExpr::Hoisted(..) => {}
        SchedExpr::Load { ixs, .. } => ixs.iter().for_each(|ix| aff_vars(&ix.aff, out)),
        SchedExpr::Gather { ixs, dyns, .. } => {
            ixs.iter().for_each(|ix| aff_vars(&ix.aff, out));
            dyns.iter().for_each(|(_, g, _)| free_vars(g, out));
        }
        SchedExpr::Bracket(p) => pred_vars(p, out),
        SchedExpr::Eps(v) => v.iter().for_each(|a| aff_vars(a, out)),
        SchedExpr::Bin(_, a, b) => {
            free_vars(a, out);
            free_vars(b, out);
        }
        SchedExpr::Neg(a) => free_vars(a, out),
        SchedExpr::Call(_, args) => args.iter().for_each(|a| free_vars(a, out)),
        SchedExpr::Index(a) => aff_vars(a, out),
        SchedExpr::SizeVal(_) => {}
        SchedExpr::Select(_, args) => args.iter().for_each(|a| free_vars(a, out)),
        SchedExpr::Sum(s) => {
            let mut inner = BTreeSet::new();
            free_vars(&s.body, &mut inner);
            for b in s.dom.lo.iter().chain(&s.dom.hi) {
                aff_vars(&b.aff, &mut inner);
            }
            inner.remove(&s.var);
            out.extend(inner);
        }
        SchedExpr::Reduce(r) => {
            let mut inner = BTreeSet::new();
            free_vars(&r.body, &mut inner);
            inner.remove(&r.var);
            out.extend(inner);
        }
        SchedExpr::Fold(f) => {
            f.init.iter().for_each(|a| free_vars(a, out));
            let mut inner = BTreeSet::new();
            f.body.iter().for_each(|a| free_vars(a, &mut inner));
            inner.remove(&f.var);
            for k in &f.slots {
                inner.remove(k);
            }
            out.extend(inner);
        }
        SchedExpr::Acc(k) => {
            out.insert(*k);
        }
    }
}

/// Whether `t` mentions `v` (free).
pub fn mentions(t: &SchedExpr, v: usize) -> bool {
    let mut s = BTreeSet::new();
    free_vars(t, &mut s);
    s.contains(&v)
}

// ---------------------------------------------------------------- domains

/// Take the brackets in numerator position of `t`'s product tree apart:
/// the conjuncts that solve for `v` go into `dom`, the rest stay.
/// `found` is set when any conjunct went.
fn take_brackets(t: SchedExpr, v: usize, dom: &mut Domain, found: &mut bool) -> SchedExpr {
    match t {
        SchedExpr::Bracket(p) => {
            let mut cs = Vec::new();
            conjuncts(p, &mut cs);
            let mut rest: Option<Cond> = None;
            for c in cs {
                let solved = match &c {
                    Cond::Cmp(op, a, b) => solve(*op, a, b, v),
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
                            Some(r) => Cond::And(Box::new(r), Box::new(c)),
                        })
                    }
                }
            }
            match rest {
                None => SchedExpr::Num(1.0),
                Some(r) => SchedExpr::Bracket(r),
            }
        }
        SchedExpr::Bin(BinOp::Mul, a, b) => {
            let a = take_brackets(*a, v, dom, found);
            let b = take_brackets(*b, v, dom, found);
            // 1 * e and e * 1 are e, flag included
            match (a, b) {
                (SchedExpr::Num(x), e) | (e, SchedExpr::Num(x)) if x == 1.0 => e,
                (a, b) => SchedExpr::Bin(BinOp::Mul, Box::new(a), Box::new(b)),
            }
        }
        SchedExpr::Bin(BinOp::Div, a, b) => {
            let a = take_brackets(*a, v, dom, found);
            SchedExpr::Bin(BinOp::Div, Box::new(a), b)
        }
        SchedExpr::Neg(a) => SchedExpr::Neg(Box::new(take_brackets(*a, v, dom, found))),
        t => t,
    }
}

/// Turn brackets over each sum's variable into the sum's domain.
fn domains(t: SchedExpr) -> SchedExpr {
    match t {
        SchedExpr::Sum(s) => {
            let SchedSum {
                var,
                n,
                mut dom,
                body,
                dom_strong,
            } = *s;
            let body = domains(body);
            let mut found = false;
            let body = take_brackets(body, var, &mut dom, &mut found);
            SchedExpr::Sum(Box::new(SchedSum {
                var,
                n,
                dom,
                body,
                dom_strong: dom_strong || found,
            }))
        }
        SchedExpr::Bin(op, a, b) => {
            SchedExpr::Bin(op, Box::new(domains(*a)), Box::new(domains(*b)))
        }
        SchedExpr::Neg(a) => SchedExpr::Neg(Box::new(domains(*a))),
        SchedExpr::Call(f, args) => SchedExpr::Call(f, args.into_iter().map(domains).collect()),
        SchedExpr::Reduce(mut r) => {
            // the sums inside get their domains; the reduction keeps its
            // brackets
            r.body = domains(r.body);
            SchedExpr::Reduce(r)
        }
        SchedExpr::Fold(mut f) => {
            // likewise the sums inside a fold
            f.init = f.init.into_iter().map(domains).collect();
            f.body = f.body.into_iter().map(domains).collect();
            SchedExpr::Fold(f)
        }
        SchedExpr::Select(c, args) => SchedExpr::Select(c, args.into_iter().map(domains).collect()),
        t => t,
    }
}

// ------------------------------------------------------------ interchange

/// How many loads of `t` index a unit-stride axis with plain `v` (the
/// other axes not mentioning `v`), i.e. walk memory contiguously when `v`
/// is the innermost loop.
pub fn unit_score(t: &SchedExpr, v: usize, layout: &Layout) -> usize {
    match t {
        SchedExpr::Load { buf, ixs, .. } => {
            let on: Vec<usize> = (0..ixs.len())
                .filter(|&a| coef(&ixs[a].aff, v) != 0)
                .collect();
            usize::from(
                on.len() == 1 && coef(&ixs[on[0]].aff, v) == 1 && layout.is_unit(*buf, on[0]),
            )
        }
        SchedExpr::Bin(_, a, b) => unit_score(a, v, layout) + unit_score(b, v, layout),
        SchedExpr::Neg(a) => unit_score(a, v, layout),
        SchedExpr::Call(_, args) => args.iter().map(|a| unit_score(a, v, layout)).sum(),
        SchedExpr::Sum(s) => unit_score(&s.body, v, layout),
        SchedExpr::Reduce(r) => unit_score(&r.body, v, layout),
        _ => 0,
    }
}

impl Product for SchedExpr {
    fn mul_operands(&self) -> Option<(&Self, &Self)> {
        match self {
            SchedExpr::Bin(BinOp::Mul, a, b) => Some((a, b)),
            _ => None,
        }
    }
}

/// The factors of `t`'s product tree, owned ([`factors`]).
fn owned_factors(t: &SchedExpr) -> Vec<SchedExpr> {
    let mut fs = Vec::new();
    factors(t, &mut fs);
    fs.into_iter().cloned().collect()
}

fn product(fs: Vec<SchedExpr>) -> SchedExpr {
    let mut it = fs.into_iter();
    let first = it.next().unwrap_or(SchedExpr::Num(1.0));
    it.fold(first, |a, b| {
        SchedExpr::Bin(BinOp::Mul, Box::new(a), Box::new(b))
    })
}

fn plain_sum(t: &SchedExpr) -> bool {
    matches!(t, SchedExpr::Sum(s) if s.dom.lo.is_empty() && s.dom.hi.is_empty() && !s.dom_strong)
}

/// `sum(j) F * sum(i) G` → `sum(i) G_i * sum(j) F * G_ij` when `j` walks
/// memory better than `i` (no strong zeros anywhere).
fn interchange(t: SchedExpr, layout: &Layout) -> SchedExpr {
    match t {
        SchedExpr::Sum(s) => {
            let mut s = *s;
            s.body = interchange(s.body, layout);
            if !plain_sum(&SchedExpr::Sum(Box::new(s.clone()))) || strong(&s.body) {
                return SchedExpr::Sum(Box::new(s));
            }
            let j = s.var;
            let mut fs = owned_factors(&s.body);
            let sums: Vec<usize> = (0..fs.len()).filter(|&k| plain_sum(&fs[k])).collect();
            if sums.len() != 1 {
                return SchedExpr::Sum(Box::new(s));
            }
            let inner = match fs.remove(sums[0]) {
                SchedExpr::Sum(x) => *x,
                _ => unreachable!(),
            };
            let i = inner.var;
            let gs = owned_factors(&inner.body);
            if gs.iter().any(|g| matches!(g, SchedExpr::Sum(_))) {
                return SchedExpr::Sum(Box::new(s));
            }
            let score = |v: usize| -> usize {
                fs.iter().chain(&gs).map(|f| unit_score(f, v, layout)).sum()
            };
            if score(j) <= score(i) {
                return SchedExpr::Sum(Box::new(s));
            }
            let (mut outer, in_j) = interchange_factors(&fs, &gs, |g| mentions(g, j));
            let new_inner = SchedExpr::Sum(Box::new(SchedSum {
                var: j,
                n: s.n,
                dom: Domain::default(),
                body: product(in_j),
                dom_strong: false,
            }));
            outer.push(new_inner);
            SchedExpr::Sum(Box::new(SchedSum {
                var: i,
                n: inner.n,
                dom: Domain::default(),
                body: product(outer),
                dom_strong: false,
            }))
        }
        SchedExpr::Bin(op, a, b) => SchedExpr::Bin(
            op,
            Box::new(interchange(*a, layout)),
            Box::new(interchange(*b, layout)),
        ),
        SchedExpr::Neg(a) => SchedExpr::Neg(Box::new(interchange(*a, layout))),
        SchedExpr::Call(f, args) => SchedExpr::Call(
            f,
            args.into_iter().map(|a| interchange(a, layout)).collect(),
        ),
        SchedExpr::Reduce(mut r) => {
            r.body = interchange(r.body, layout);
            SchedExpr::Reduce(r)
        }
        SchedExpr::Select(c, args) => SchedExpr::Select(
            c,
            args.into_iter().map(|a| interchange(a, layout)).collect(),
        ),
        t => t,
    }
}

// ------------------------------------------------------------ loop order

/// The gen loops' order: the variable with the best [`unit_score`] (the
/// output's unit-stride axis counts twice) innermost, unless the written
/// order's innermost is as good.
fn loop_order(nest: &Nest, body: &SchedExpr, layout: &Layout) -> Vec<usize> {
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

/// The deepest nesting of sums in `t`.
pub(crate) fn sum_depth(t: &SchedExpr) -> usize {
    match t {
        SchedExpr::Sum(s) => 1 + sum_depth(&s.body),
        SchedExpr::Reduce(r) => 1 + sum_depth(&r.body),
        SchedExpr::Fold(f) => {
            let body = f.body.iter().map(sum_depth).max().unwrap_or(0);
            (1 + body).max(f.init.iter().map(sum_depth).max().unwrap_or(0))
        }
        SchedExpr::Bin(_, a, b) => sum_depth(a).max(sum_depth(b)),
        SchedExpr::Neg(a) => sum_depth(a),
        SchedExpr::Call(_, args) => args.iter().map(sum_depth).max().unwrap_or(0),
        SchedExpr::Select(_, args) => args.iter().map(sum_depth).max().unwrap_or(0),
        _ => 0,
    }
}
