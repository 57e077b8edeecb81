//! The deterministic post-pass on an extracted (named) program: it puts the
//! program in the normal form of `docs/language.md` and computes shared
//! values once.
//!
//! 1. every binder gets a unique name, every `let` is inlined
//!    (capture-avoiding substitution);
//! 2. projections are pushed down to pairs or parameters (pair elimination,
//!    AoS→SoA), `(gen(i:n) e)[ι]` is beta-reduced where that is exact (plain
//!    index; constant or guarded affine index over a literal size);
//! 3. the result is rebuilt as a tuple of gens of scalars; a `gen` still read
//!    inside a scalar (an affine index over a named size) is *materialised*:
//!    lifted to a top-level `let` of a `gen` over the indices it uses;
//! 4. loop-invariant code motion: a `sum` that does not depend on some loop
//!    around it is materialised the same way (a `let` of a `gen` over the
//!    indices it does use), so it is computed once, not per iteration; so
//!    is a scalar function call or a division that uses a subset of its
//!    loops' indices (`exp(u[i])` inside `gen(i, j)`, `log(t0)` inside
//!    `gen(i)`) when the cost model says it is cheaper
//!    (`Norm::worth_hoisting`);
//! 5. common subexpressions: materialised values are keyed by their
//!    alpha-canonical (De Bruijn) form, so equal ones share one `let`; a
//!    call, division or `sum` that occurs twice in one scalar (a subterm
//!    the DAG-aware extractor priced once) is materialised when that is
//!    cheaper, so it is computed once; the body of a materialised value
//!    counts with the scalar it came from, so softmax's row sum
//!    `sum(j) exp(x[i, j] - m[i])` reads the hoisted numerator back;
//! 6. GEMM stages: a matrix product inside a larger expression (a bias and
//!    activation around it, inside another sum) becomes a `let` of its own,
//!    and its factors that are not plain loads (a centred operand, a
//!    shifted read) are materialised, so that the JIT runs it on the GEMM
//!    library (`Norm::gemm_stage`, [`NormalOptions::gemm_stage_min_work`]);
//!    a product divided by a power of two (`(Q Kᵀ) / 8`) is one stage with
//!    its scale, the library's scale factor being the written division
//!    (`scaled_product`), so its uses read the scaled value.
//!
//! Finally binders are renamed by depth (`i`, `j`, …) and lets `t0`, `t1`, ….

use super::cost::{ir_cost, CostModel};
use crate::syntax::ast::*;
use std::collections::{BTreeMap, BTreeSet};

/// Fresh-name supply. Internal names contain `%`, which no source name can.
#[derive(Default)]
pub struct Fresh(usize);
impl Fresh {
    pub fn next(&mut self, base: &str) -> String {
        self.0 += 1;
        format!("%{base}{}", self.0)
    }
}

/// The source name an internal name was made from (`%j_12` is `j`): for
/// reports, which show the program's own index names.
pub fn source_name(x: &str) -> &str {
    match x.strip_prefix('%') {
        Some(rest) => rest.rsplit_once('_').map_or(rest, |(name, _)| name),
        None => x,
    }
}

/// Free index names.
pub fn fv_idx(e: &Expr) -> BTreeSet<String> {
    fn aff(a: &Affine, bound: &[String], out: &mut BTreeSet<String>) {
        for v in a.vars() {
            if !bound.iter().any(|b| b == v) {
                out.insert(v.to_string());
            }
        }
    }
    fn go(e: &Expr, bound: &mut Vec<String>, out: &mut BTreeSet<String>) {
        match e {
            Expr::Gen(i, _, b) | Expr::Sum(i, _, b) | Expr::Reduce(_, i, _, b) => {
                bound.push(i.clone());
                go(b, bound, out);
                bound.pop();
            }
            Expr::Access(a, idx) => {
                go(a, bound, out);
                aff(idx, bound, out);
            }
            Expr::Bracket(p) => p.affines().into_iter().for_each(|a| aff(a, bound, out)),
            Expr::Eps(v) => v.iter().for_each(|a| aff(a, bound, out)),
            Expr::IndexValue(a) => aff(a, bound, out),
            Expr::Fold(i, _, _, a, b) => {
                go(a, bound, out);
                bound.push(i.clone());
                go(b, bound, out);
                bound.pop();
            }
            _ => e.children().into_iter().for_each(|c| go(c, bound, out)),
        }
    }
    let mut out = BTreeSet::new();
    go(e, &mut Vec::new(), &mut out);
    out
}

/// Free value names.
pub fn fv_val(e: &Expr) -> BTreeSet<String> {
    fn go(e: &Expr, bound: &mut Vec<String>, out: &mut BTreeSet<String>) {
        match e {
            Expr::Var(x) => {
                if !bound.contains(x) {
                    out.insert(x.clone());
                }
            }
            Expr::Let(x, a, b) | Expr::Fold(_, _, x, a, b) => {
                go(a, bound, out);
                bound.push(x.clone());
                go(b, bound, out);
                bound.pop();
            }
            _ => e.children().into_iter().for_each(|c| go(c, bound, out)),
        }
    }
    let mut out = BTreeSet::new();
    go(e, &mut Vec::new(), &mut out);
    out
}

/// `e{i ↦ by}` for an index, capture-avoiding.
pub fn subst_idx(e: &Expr, i: &str, by: &Affine, fresh: &mut Fresh) -> Expr {
    let sa = |a: &Affine| a.subst(i, by);
    match e {
        Expr::Gen(j, n, b) | Expr::Sum(j, n, b) | Expr::Reduce(_, j, n, b) => {
            if j == i {
                return e.clone();
            }
            let (j2, b2) = if by.vars().any(|v| v == j) {
                let k = fresh.next("i");
                let b = subst_idx(b, j, &Affine::var(k.clone()), fresh);
                (k, b)
            } else {
                (j.clone(), (**b).clone())
            };
            let body = subst_idx(&b2, i, by, fresh);
            e.rebind(j2, n.clone(), body)
        }
        Expr::Access(a, idx) => Expr::access(subst_idx(a, i, by, fresh), sa(idx)),
        Expr::Bracket(p) => Expr::Bracket(p.map_affine(&sa)),
        Expr::Eps(v) => Expr::Eps(v.iter().map(sa).collect()),
        Expr::IndexValue(a) => Expr::index_value(sa(a)),
        Expr::Fold(j, n, acc, a, b) => {
            let a2 = subst_idx(a, i, by, fresh);
            if j == i {
                return Expr::fold(j.clone(), n.clone(), acc.clone(), a2, (**b).clone());
            }
            let (j2, b2) = if by.vars().any(|v| v == j) {
                let k = fresh.next("i");
                let b = subst_idx(b, j, &Affine::var(k.clone()), fresh);
                (k, b)
            } else {
                (j.clone(), (**b).clone())
            };
            let body = subst_idx(&b2, i, by, fresh);
            Expr::fold(j2, n.clone(), acc.clone(), a2, body)
        }
        _ => map_children(e, &mut |c| subst_idx(c, i, by, fresh)),
    }
}

/// `e{x ↦ v}` for a value name, capture-avoiding (for both value and index
/// names free in `v`).
pub fn subst_val(e: &Expr, x: &str, v: &Expr, fresh: &mut Fresh) -> Expr {
    let fvi = fv_idx(v);
    let fvv = fv_val(v);
    subst_val_with(e, x, v, &fvi, &fvv, fresh)
}

fn subst_val_with(
    e: &Expr,
    x: &str,
    v: &Expr,
    fvi: &BTreeSet<String>,
    fvv: &BTreeSet<String>,
    fresh: &mut Fresh,
) -> Expr {
    match e {
        Expr::Var(y) if y == x => v.clone(),
        Expr::Let(y, a, b) => {
            let a2 = subst_val_with(a, x, v, fvi, fvv, fresh);
            if y == x {
                return Expr::let_(y.clone(), a2, (**b).clone());
            }
            let (y2, b2) = if fvv.contains(y) {
                let k = fresh.next("t");
                let b = subst_val(b, y, &Expr::Var(k.clone()), fresh);
                (k, b)
            } else {
                (y.clone(), (**b).clone())
            };
            Expr::let_(y2, a2, subst_val_with(&b2, x, v, fvi, fvv, fresh))
        }
        Expr::Gen(j, n, b) | Expr::Sum(j, n, b) | Expr::Reduce(_, j, n, b) => {
            let (j2, b2) = if fvi.contains(j) {
                let k = fresh.next("i");
                let b = subst_idx(b, j, &Affine::var(k.clone()), fresh);
                (k, b)
            } else {
                (j.clone(), (**b).clone())
            };
            let body = subst_val_with(&b2, x, v, fvi, fvv, fresh);
            e.rebind(j2, n.clone(), body)
        }
        Expr::Fold(j, n, acc, a, b) => {
            let a2 = subst_val_with(a, x, v, fvi, fvv, fresh);
            if acc == x {
                return Expr::fold(j.clone(), n.clone(), acc.clone(), a2, (**b).clone());
            }
            let (acc2, b2) = if fvv.contains(acc) {
                let k = fresh.next("acc");
                let b = subst_val(b, acc, &Expr::Var(k.clone()), fresh);
                (k, b)
            } else {
                (acc.clone(), (**b).clone())
            };
            let (j2, b2) = if fvi.contains(j) {
                let k = fresh.next("i");
                let b = subst_idx(&b2, j, &Affine::var(k.clone()), fresh);
                (k, b)
            } else {
                (j.clone(), b2)
            };
            let body = subst_val_with(&b2, x, v, fvi, fvv, fresh);
            Expr::fold(j2, n.clone(), acc2, a2, body)
        }
        _ => map_children(e, &mut |c| subst_val_with(c, x, v, fvi, fvv, fresh)),
    }
}

/// Rebuild `e` with `f` applied to its direct children (binders untouched).
pub fn map_children(e: &Expr, f: &mut impl FnMut(&Expr) -> Expr) -> Expr {
    match e {
        Expr::Var(_) | Expr::Num(_) | Expr::Bracket(_) | Expr::Eps(_) => e.clone(),
        Expr::Bin(op, a, b) => Expr::bin(*op, f(a), f(b)),
        Expr::Neg(a) => Expr::Neg(Box::new(f(a))),
        Expr::Call(g, args) => Expr::Call(*g, args.iter().map(f).collect()),
        Expr::Pair(a, b) => Expr::pair(f(a), f(b)),
        Expr::Proj(k, a) => Expr::proj(*k, f(a)),
        Expr::Gen(i, n, b) => Expr::gen(i.clone(), n.clone(), f(b)),
        Expr::Sum(i, n, b) => Expr::sum(i.clone(), n.clone(), f(b)),
        Expr::Reduce(op, i, n, b) => Expr::reduce(*op, i.clone(), n.clone(), f(b)),
        Expr::Access(a, idx) => Expr::access(f(a), idx.clone()),
        Expr::Let(x, a, b) => Expr::let_(x.clone(), f(a), f(b)),
        Expr::IndexValue(_) | Expr::SizeValue(_) => e.clone(),
        Expr::Where(c, a, b) => {
            let c = c.map_exprs(f);
            Expr::where_(c, f(a), f(b))
        }
        Expr::Fold(i, n, acc, a, b) => Expr::fold(i.clone(), n.clone(), acc.clone(), f(a), f(b)),
        Expr::Gather(a, g, c) => Expr::gather(f(a), f(g), *c),
    }
}

/// [`map_children`] on an owned expression: children are moved, not cloned
/// (a long chain costs linear time, not quadratic).
pub fn map_children_owned(e: Expr, f: &mut impl FnMut(Expr) -> Expr) -> Expr {
    match e {
        Expr::Var(_) | Expr::Num(_) | Expr::Bracket(_) | Expr::Eps(_) => e,
        Expr::Bin(op, a, b) => Expr::bin(op, f(*a), f(*b)),
        Expr::Neg(a) => Expr::Neg(Box::new(f(*a))),
        Expr::Call(g, args) => Expr::Call(g, args.into_iter().map(f).collect()),
        Expr::Pair(a, b) => Expr::pair(f(*a), f(*b)),
        Expr::Proj(k, a) => Expr::proj(k, f(*a)),
        Expr::Gen(i, n, b) => Expr::gen(i, n, f(*b)),
        Expr::Sum(i, n, b) => Expr::sum(i, n, f(*b)),
        Expr::Reduce(op, i, n, b) => Expr::reduce(op, i, n, f(*b)),
        Expr::Access(a, idx) => Expr::access(f(*a), idx),
        Expr::Let(x, a, b) => Expr::let_(x, f(*a), f(*b)),
        Expr::IndexValue(_) | Expr::SizeValue(_) => e,
        Expr::Where(c, a, b) => {
            let c = c.map_exprs(&mut |x| f(x.clone()));
            Expr::where_(c, f(*a), f(*b))
        }
        Expr::Fold(i, n, acc, a, b) => {
            let a = f(*a);
            Expr::fold(i, n, acc, a, f(*b))
        }
        Expr::Gather(a, g, c) => Expr::gather(f(*a), f(*g), c),
    }
}

/// Give every binder (index and let) a fresh unique name.
/// The innermost renaming of `x` in a scope stack (old name, new name), or
/// `x` itself.
fn renamed(scope: &[(String, String)], x: &str) -> String {
    scope
        .iter()
        .rev()
        .find(|(o, _)| o == x)
        .map(|(_, n)| n.clone())
        .unwrap_or_else(|| x.to_string())
}

/// `a` with its index names renamed through `scope`.
fn rename_affine(a: &Affine, scope: &[(String, String)]) -> Affine {
    let mut r = Affine::constant(a.constant);
    for (v, c) in &a.terms {
        r = r.add(&Affine::var(renamed(scope, v)).scale(*c));
    }
    r
}

pub fn uniquify(e: &Expr, fresh: &mut Fresh) -> Expr {
    fn go(
        e: &Expr,
        idx: &mut Vec<(String, String)>,
        val: &mut Vec<(String, String)>,
        fresh: &mut Fresh,
    ) -> Expr {
        let ren = |a: &Affine, idx: &Vec<(String, String)>| rename_affine(a, idx);
        match e {
            Expr::Var(x) => Expr::Var(renamed(val, x)),
            Expr::Gen(i, n, b) | Expr::Sum(i, n, b) | Expr::Reduce(_, i, n, b) => {
                // the source name stays readable in reports (see
                // `source_name`)
                let k = fresh.next(&format!("{}_", source_name(i)));
                idx.push((i.clone(), k.clone()));
                let body = go(b, idx, val, fresh);
                idx.pop();
                e.rebind(k, n.clone(), body)
            }
            Expr::Let(x, a, b) => {
                let a = go(a, idx, val, fresh);
                let k = fresh.next("t");
                val.push((x.clone(), k.clone()));
                let b = go(b, idx, val, fresh);
                val.pop();
                Expr::let_(k, a, b)
            }
            Expr::Fold(i, n, acc, a, b) => {
                let a = go(a, idx, val, fresh);
                let k = fresh.next(&format!("{}_", source_name(i)));
                let t = fresh.next("acc");
                idx.push((i.clone(), k.clone()));
                val.push((acc.clone(), t.clone()));
                let b = go(b, idx, val, fresh);
                val.pop();
                idx.pop();
                Expr::fold(k, n.clone(), t, a, b)
            }
            Expr::Access(a, i) => Expr::access(go(a, idx, val, fresh), ren(i, idx)),
            Expr::Bracket(p) => Expr::Bracket(p.map_affine(&|a| ren(a, idx))),
            Expr::Eps(v) => Expr::Eps(v.iter().map(|a| ren(a, idx)).collect()),
            Expr::IndexValue(a) => Expr::IndexValue(ren(a, idx)),
            _ => map_children(e, &mut |c| go(c, idx, val, fresh)),
        }
    }
    go(e, &mut Vec::new(), &mut Vec::new(), fresh)
}

/// The default of [`NormalOptions::term_limit`] and of the optimiser's
/// `Options::term_limit`: the largest program (in nodes) that inlining lets
/// may make, and the largest term read out of the e-graph.
pub const DEFAULT_TERM_LIMIT: usize = 5000;

/// How many times the value name `x` occurs in `e` (a `let` of the same
/// name shadows it in its body).
pub fn uses_of(e: &Expr, x: &str) -> usize {
    match e {
        Expr::Var(y) => usize::from(y == x),
        Expr::Let(y, a, b) | Expr::Fold(_, _, y, a, b) => {
            uses_of(a, x) + if y == x { 0 } else { uses_of(b, x) }
        }
        _ => e.children().into_iter().map(|c| uses_of(c, x)).sum(),
    }
}

/// The number of `let`s in `e`.
pub fn count_lets(e: &Expr) -> usize {
    let own = usize::from(matches!(e, Expr::Let(..)));
    own + e.children().into_iter().map(count_lets).sum::<usize>()
}

/// Inline `let`s, innermost values first, as long as the program stays
/// within `limit` nodes: `let x = a in b` becomes `b{x ↦ a}`, which grows
/// the program by about `(k - 1)·|a|` when `b` uses `x` k times. A let used
/// at most once, or whose value is a name or a number, never grows it and
/// is always inlined; any other is kept (as a `let`) when inlining it
/// would take the program past `limit`. Inlining everything is exponential
/// in a chain `let v1 = v0*v0 in let v2 = v1*v1 in …`; this is linear in
/// the input plus `limit`. Use `usize::MAX` to inline every let.
pub fn inline_lets(e: &Expr, fresh: &mut Fresh, limit: usize) -> Expr {
    fn go(e: &Expr, fresh: &mut Fresh, total: &mut usize, limit: usize) -> Expr {
        match e {
            Expr::Let(x, a, b) => {
                let a = go(a, fresh, total, limit);
                let b = go(b, fresh, total, limit);
                // the program has 1 + |a| + |b| nodes here before, and
                // |b| - k + k·|a| after
                let k = uses_of(&b, x);
                let sa = a.size();
                let removed = 1 + sa;
                let added = k.saturating_mul(sa - 1);
                if added <= removed {
                    *total = total.saturating_sub(removed - added);
                } else if total.saturating_add(added - removed) <= limit {
                    *total = total.saturating_add(added - removed);
                } else {
                    return Expr::let_(x.clone(), a, b);
                }
                subst_val(&b, x, &a, fresh)
            }
            _ => map_children(e, &mut |c| go(c, fresh, total, limit)),
        }
    }
    let mut total = e.size();
    go(e, fresh, &mut total, limit)
}

/// Typing context: value names and index ranges.
#[derive(Clone, Default)]
pub struct Cx {
    pub vals: Vec<(String, Type)>,
    pub idx: Vec<(String, Size)>,
    /// Names of parameters (projections may stay on these).
    pub params: BTreeSet<String>,
}

impl Cx {
    /// The context at the top of `f`'s body: its parameters.
    pub fn of(f: &Function) -> Cx {
        Cx {
            vals: f
                .params
                .iter()
                .map(|p| (p.name.clone(), p.ty.clone()))
                .collect(),
            idx: vec![],
            params: f.params.iter().map(|p| p.name.clone()).collect(),
        }
    }

    fn val(&self, x: &str) -> Option<&Type> {
        self.vals.iter().rev().find(|(n, _)| n == x).map(|(_, t)| t)
    }

    /// The range of the innermost index named `i`.
    fn range(&self, i: &str) -> Option<&Size> {
        self.idx.iter().rev().find(|(n, _)| n == i).map(|(_, s)| s)
    }
}

/// The type of a well-typed expression in a context (`Real` when unknown).
pub fn type_of(e: &Expr, cx: &mut Cx) -> Type {
    match e {
        Expr::Var(x) => cx.val(x).cloned().unwrap_or(Type::Real),
        Expr::Num(_)
        | Expr::Bin(..)
        | Expr::Neg(_)
        | Expr::Call(..)
        | Expr::Sum(..)
        | Expr::Bracket(_)
        | Expr::Eps(_) => Type::Real,
        Expr::Reduce(..) => Type::Real,
        Expr::IndexValue(_) | Expr::SizeValue(_) | Expr::Where(..) => Type::Real,
        Expr::Pair(a, b) => Type::pair(type_of(a, cx), type_of(b, cx)),
        Expr::Proj(k, a) => match type_of(a, cx) {
            Type::Pair(x, y) => {
                if *k == 0 {
                    *x
                } else {
                    *y
                }
            }
            _ => Type::Real,
        },
        Expr::Gen(i, n, b) => {
            cx.idx.push((i.clone(), n.clone()));
            let t = type_of(b, cx);
            cx.idx.pop();
            Type::tensor(n.clone(), t)
        }
        Expr::Access(a, _) | Expr::Gather(a, _, _) => match type_of(a, cx) {
            Type::Tensor(_, t) => *t,
            _ => Type::Real,
        },
        Expr::Let(x, a, b) => {
            let ta = type_of(a, cx);
            cx.vals.push((x.clone(), ta));
            let t = type_of(b, cx);
            cx.vals.pop();
            t
        }
        Expr::Fold(_, _, _, a, _) => type_of(a, cx),
    }
}

fn zero_of(t: &Type, fresh: &mut Fresh) -> Expr {
    match t {
        Type::Real | Type::Int => Expr::Num(0.0),
        Type::Tensor(n, t) => Expr::gen(fresh.next("i"), n.clone(), zero_of(t, fresh)),
        Type::Pair(a, b) => Expr::pair(zero_of(a, fresh), zero_of(b, fresh)),
    }
}

/// Root of an access/projection chain.
fn chain_root(e: &Expr) -> &Expr {
    match e {
        Expr::Access(a, _) | Expr::Proj(_, a) | Expr::Gather(a, _, _) => chain_root(a),
        _ => e,
    }
}

/// Whether an access chain is rooted at a parameter (whose elements are
/// never strong zeros), not at a `let`-bound name.
fn chain_root_is_param(e: &Expr, cx: &Cx) -> bool {
    match chain_root(e) {
        // names are unique after the pre-pass: no `let` shadows a parameter
        Expr::Var(x) => cx.params.contains(x),
        _ => false,
    }
}

/// Is `e` an access/projection chain rooted at a name: a parameter, or a
/// `let` kept by [`inline_lets`] (projections stay on those; the post-pass
/// replaces a kept let's name by its components).
fn is_param_chain(e: &Expr, cx: &Cx) -> bool {
    matches!(chain_root(e), Expr::Var(x) if cx.params.contains(x) || cx.val(x).is_some())
}

/// The simplifier: beta-reduction of accesses of gens and projection
/// push-down, bottom-up, in a typing context.
pub struct Simp<'a> {
    pub fresh: &'a mut Fresh,
}

impl Simp<'_> {
    pub fn simp(&mut self, e: &Expr, cx: &mut Cx) -> Expr {
        match e {
            Expr::Gen(i, n, b) | Expr::Sum(i, n, b) | Expr::Reduce(_, i, n, b) => {
                cx.idx.push((i.clone(), n.clone()));
                let b = self.simp(b, cx);
                cx.idx.pop();
                e.rebind(i.clone(), n.clone(), b)
            }
            // The lets left by `inline_lets` stay: their value is simplified
            // once, and their body with the name's type in the context.
            Expr::Let(x, a, b) => {
                let a = self.simp(a, cx);
                let t = type_of(&a, cx);
                cx.vals.push((x.clone(), t));
                let b = self.simp(b, cx);
                cx.vals.pop();
                Expr::let_(x.clone(), a, b)
            }
            Expr::Proj(k, a) => {
                let a = self.simp(a, cx);
                self.proj(*k, a, cx)
            }
            Expr::Access(a, idx) => {
                let a = self.simp(a, cx);
                self.access(a, idx, cx)
            }
            Expr::Fold(i, n, acc, a, b) => {
                let a = self.simp(a, cx);
                let t = type_of(&a, cx);
                cx.idx.push((i.clone(), n.clone()));
                cx.vals.push((acc.clone(), t));
                let b = self.simp(b, cx);
                cx.vals.pop();
                cx.idx.pop();
                Expr::fold(i.clone(), n.clone(), acc.clone(), a, b)
            }
            _ => map_children(e, &mut |c| self.simp(c, cx)),
        }
    }

    /// `π_k a` for a simplified pair-typed `a`.
    pub fn proj(&mut self, k: u8, a: Expr, cx: &mut Cx) -> Expr {
        match a {
            // `(let x = v in b).k` is `let x = v in b.k` (the name is unique)
            Expr::Let(x, v, b) => self.under_let(x, *v, cx, |s, cx| s.proj(k, *b, cx)),
            Expr::Pair(x, y) => {
                if k == 0 {
                    *x
                } else {
                    *y
                }
            }
            _ if is_param_chain(&a, cx) => Expr::proj(k, a),
            Expr::Access(t, idx) => {
                let t = self.comp(k, *t, cx);
                self.access(t, &idx, cx)
            }
            _ => Expr::proj(k, a),
        }
    }

    /// The elementwise component `k` of a simplified tensor `t` of pairs.
    fn comp(&mut self, k: u8, t: Expr, cx: &mut Cx) -> Expr {
        match t {
            Expr::Let(x, v, b) => self.under_let(x, *v, cx, |s, cx| s.comp(k, *b, cx)),
            Expr::Gen(i, n, b) => {
                cx.idx.push((i.clone(), n.clone()));
                let r = self.elem_comp(k, *b, cx);
                cx.idx.pop();
                Expr::gen(i, n, r)
            }
            Expr::Access(t2, idx) if !is_param_chain(&t2, cx) => {
                let c = self.comp(k, *t2, cx);
                self.access(c, &idx, cx)
            }
            _ => {
                let n = match type_of(&t, cx) {
                    Type::Tensor(n, _) => n,
                    _ => return Expr::proj(k, t),
                };
                let j = self.fresh.next("i");
                cx.idx.push((j.clone(), n.clone()));
                let el = self.access(t, &Affine::var(j.clone()), cx);
                let r = self.elem_comp(k, el, cx);
                cx.idx.pop();
                Expr::gen(j, n, r)
            }
        }
    }

    fn elem_comp(&mut self, k: u8, b: Expr, cx: &mut Cx) -> Expr {
        match type_of(&b, cx) {
            Type::Pair(..) => self.proj(k, b, cx),
            _ => self.comp(k, b, cx),
        }
    }

    /// `let x = v in f(b)`, with `x`'s type in the context while `f` runs.
    fn under_let(
        &mut self,
        x: String,
        v: Expr,
        cx: &mut Cx,
        f: impl FnOnce(&mut Self, &mut Cx) -> Expr,
    ) -> Expr {
        let t = type_of(&v, cx);
        cx.vals.push((x.clone(), t));
        let r = f(self, cx);
        cx.vals.pop();
        Expr::let_(x, v, r)
    }

    /// `t[idx]` for a simplified `t`.
    pub fn access(&mut self, t: Expr, idx: &Affine, cx: &mut Cx) -> Expr {
        if let Expr::Let(x, v, b) = t {
            // `(let x = v in b)[ι]` is `let x = v in b[ι]` (the name is unique)
            return self.under_let(x, *v, cx, |s, cx| s.access(*b, idx, cx));
        }
        if let Expr::Gen(i, n, b) = &t {
            // A plain index is exact only when its own range fits the
            // gen's: after substitution `t[i]` may read a gen over `n`
            // with an `i` ranging over 3, and must keep its padding.
            let var_fits = idx.as_var().is_some_and(|v| match (cx.range(v), n) {
                (Some(r), n) if r == n => true,
                (Some(Size::Lit(r)), Size::Lit(m)) => r <= m,
                _ => false,
            });
            let exact = var_fits
                || matches!((idx.as_const(), n), (Some(c), Size::Lit(m)) if c >= 0 && (c as usize) < *m);
            // Substituting an index can turn `t[j+1]` or `t[j-i]` into a
            // plain `t[i]` whose range is not `t`'s axis: that is ill-typed,
            // and later stages would take the read as exact. Such an access
            // of a gen stays unreduced (it is padded); see `plain_mismatch`.
            if exact {
                let r = subst_idx(b, i, idx, self.fresh);
                let r = self.simp(&r, cx);
                if plain_mismatch(&r, cx) {
                    return Expr::access(t, idx.clone());
                }
                return r;
            }
            if let (Some(_), Size::Lit(_)) = (idx.as_const(), n) {
                cx.idx.push((i.clone(), n.clone()));
                let tb = type_of(b, cx);
                cx.idx.pop();
                return zero_of(&tb, self.fresh);
            }
            if let Size::Lit(m) = n {
                cx.idx.push((i.clone(), n.clone()));
                let tb = type_of(b, cx);
                cx.idx.pop();
                if tb == Type::Real {
                    let guard = Pred::And(
                        Box::new(Pred::Cmp(CmpOp::Le, Affine::constant(0), idx.clone())),
                        Box::new(Pred::Cmp(
                            CmpOp::Lt,
                            idx.clone(),
                            Affine::constant(*m as i64),
                        )),
                    );
                    let r = subst_idx(b, i, idx, self.fresh);
                    let r = self.simp(&r, cx);
                    if !plain_mismatch(&r, cx) {
                        // outside the gen the read is a plain zero (zero
                        // padding), the failed guard a strong one: the
                        // second term makes it plain again (a product with
                        // an infinity stays NaN, as written)
                        let outside = Pred::Not(Box::new(guard.clone()));
                        return Expr::bin(
                            BinOp::Add,
                            Expr::bin(BinOp::Mul, Expr::Bracket(guard), r),
                            Expr::bin(BinOp::Mul, Expr::Bracket(outside), Expr::Num(0.0)),
                        );
                    }
                }
            }
        }
        Expr::access(t, idx.clone())
    }
}

/// Does `e` read a tensor with a plain index whose range is not the size of
/// the axis it reads (ill-typed, as `docs/language.md` requires plain
/// indices to range exactly over their axis)?
pub fn plain_mismatch(e: &Expr, cx: &mut Cx) -> bool {
    match e {
        Expr::Access(t, idx) => {
            if let Some(v) = idx.as_var() {
                let r = cx.range(v).cloned();
                if let (Some(r), Type::Tensor(n, _)) = (r, type_of(t, cx)) {
                    if r != n {
                        return true;
                    }
                }
            }
            plain_mismatch(t, cx)
        }
        Expr::Gen(i, n, b) | Expr::Sum(i, n, b) | Expr::Reduce(_, i, n, b) => {
            cx.idx.push((i.clone(), n.clone()));
            let m = plain_mismatch(b, cx);
            cx.idx.pop();
            m
        }
        Expr::Let(x, a, b) => {
            if plain_mismatch(a, cx) {
                return true;
            }
            let ta = type_of(a, cx);
            cx.vals.push((x.clone(), ta));
            let m = plain_mismatch(b, cx);
            cx.vals.pop();
            m
        }
        Expr::Fold(i, n, acc, a, b) => {
            if plain_mismatch(a, cx) {
                return true;
            }
            let ta = type_of(a, cx);
            cx.idx.push((i.clone(), n.clone()));
            cx.vals.push((acc.clone(), ta));
            let m = plain_mismatch(b, cx);
            cx.vals.pop();
            cx.idx.pop();
            m
        }
        _ => e.children().into_iter().any(|c| plain_mismatch(c, cx)),
    }
}

/// Decide a predicate from the ranges of the indices in scope (interval
/// reasoning; a named size only bounds an index from below).
pub fn decide_in(p: &Pred, cx: &Cx) -> Option<bool> {
    fn range(a: &Affine, cx: &Cx) -> (Option<i64>, Option<i64>) {
        let mut lo = Some(a.constant);
        let mut hi = Some(a.constant);
        for (v, c) in &a.terms {
            let n = cx.range(v);
            let (vl, vh) = match n {
                Some(Size::Lit(n)) => (Some(0), Some(*n as i64 - 1)),
                Some(Size::Named(_)) => (Some(0), None),
                None => (None, None),
            };
            let (l, h) = if *c >= 0 { (vl, vh) } else { (vh, vl) };
            lo = lo.and_then(|x| l.map(|l| x + c * l));
            hi = hi.and_then(|x| h.map(|h| x + c * h));
        }
        (lo, hi)
    }
    match p {
        Pred::Cmp(op, a, b) => {
            let (lo, hi) = range(&a.sub(b), cx);
            let pos = lo.is_some_and(|l| l > 0);
            let neg = hi.is_some_and(|h| h < 0);
            let nonneg = lo.is_some_and(|l| l >= 0);
            let nonpos = hi.is_some_and(|h| h <= 0);
            let zero = nonneg && nonpos;
            match op {
                CmpOp::Eq if zero => Some(true),
                CmpOp::Eq if pos || neg => Some(false),
                CmpOp::Ne if zero => Some(false),
                CmpOp::Ne if pos || neg => Some(true),
                CmpOp::Lt if neg => Some(true),
                CmpOp::Lt if nonneg => Some(false),
                CmpOp::Le if nonpos => Some(true),
                CmpOp::Le if pos => Some(false),
                CmpOp::Gt if pos => Some(true),
                CmpOp::Gt if nonpos => Some(false),
                CmpOp::Ge if nonneg => Some(true),
                CmpOp::Ge if neg => Some(false),
                _ => None,
            }
        }
        Pred::And(a, b) => match (decide_in(a, cx), decide_in(b, cx)) {
            (Some(false), _) | (_, Some(false)) => Some(false),
            (Some(true), Some(true)) => Some(true),
            _ => None,
        },
        Pred::Or(a, b) => match (decide_in(a, cx), decide_in(b, cx)) {
            (Some(true), _) | (_, Some(true)) => Some(true),
            (Some(false), Some(false)) => Some(false),
            _ => None,
        },
        Pred::Not(a) => decide_in(a, cx).map(|b| !b),
    }
}

/// The key under which a closed value is shared: its De Bruijn form (the
/// term itself, compared node by node, not its text: formatting every
/// candidate was a tenth of the optimiser's time), or for a term the
/// e-graph cannot hold, its debug text.
type Key = Result<egg::RecExpr<crate::egraph::TL>, String>;

fn key_of(e: &Expr) -> Key {
    crate::egraph::to_rec(e)
        .map(commuted)
        .map_err(|_| format!("{e:?}"))
}

/// `rec` with the two operands of every `+` and `*` in a canonical order
/// (by a structural hash of each operand, itself computed on the
/// reordered operands), so that values equal up to the commutativity of
/// `+` and `*` — `Σₖ Q[i,k]·K[j,k]` and `Σₖ K[j,k]·Q[i,k]`, which the
/// e-graph's extraction may write either way in two places of one
/// program — get one key and share one `let`. Swapping the operands of
/// an IEEE addition or multiplication never changes its value, so the
/// shared value is the one computed either way. Two operands whose
/// hashes collide keep their written order (a missed sharing, never a
/// wrong one: the key is still the term itself, compared node by node).
fn commuted(rec: egg::RecExpr<crate::egraph::TL>) -> egg::RecExpr<crate::egraph::TL> {
    use crate::egraph::TL;
    use egg::{Id, Language};
    use std::hash::{Hash, Hasher};
    let nodes = rec.as_ref();
    let mut hashes: Vec<u64> = Vec::with_capacity(nodes.len());
    let mut ordered: Vec<TL> = Vec::with_capacity(nodes.len());
    for node in nodes {
        let mut node = node.clone();
        if let TL::Add([a, b]) | TL::Mul([a, b]) = &mut node {
            if hashes[usize::from(*b)] < hashes[usize::from(*a)] {
                std::mem::swap(a, b);
            }
        }
        // the node without its children's positions, then the children's
        // hashes in their (now canonical) order
        let mut h = std::collections::hash_map::DefaultHasher::new();
        node.clone().map_children(|_| Id::from(0usize)).hash(&mut h);
        for &c in node.children() {
            hashes[usize::from(c)].hash(&mut h);
        }
        hashes.push(h.finish());
        ordered.push(node);
    }
    // written out again from the root, children first in their order, so
    // that equal trees are equal node vectors
    fn emit(id: Id, ordered: &[TL], out: &mut egg::RecExpr<TL>, done: &mut Vec<Option<Id>>) -> Id {
        if let Some(n) = done[usize::from(id)] {
            return n;
        }
        let node = ordered[usize::from(id)]
            .clone()
            .map_children(|c| emit(c, ordered, out, done));
        let n = out.add(node);
        done[usize::from(id)] = Some(n);
        n
    }
    let mut out = egg::RecExpr::default();
    if let Some(last) = ordered.len().checked_sub(1) {
        let mut done = vec![None; ordered.len()];
        emit(Id::from(last), &ordered, &mut out, &mut done);
    }
    out
}

struct Norm<'a> {
    fresh: &'a mut Fresh,
    lets: Vec<(String, Expr)>,
    keys: BTreeMap<Key, String>,
    params: BTreeSet<String>,
    param_types: Vec<(String, Type)>,
    licm: bool,
    /// Trip counts for the hoisting decisions ([`Norm::worth_hoisting`]).
    model: CostModel,
    /// The most elements a hoisted value may have (estimated with
    /// `model`): a larger one is recomputed where it is used instead.
    memory_limit: f64,
    /// Whether calls and divisions are hoisted (not inside the arguments
    /// of one being hoisted).
    hoist_calls: bool,
    /// Occurrences of each hoisting candidate in the scalar being
    /// normalised, by key ([`Norm::count_candidates`]); only keys that
    /// occur at least twice.
    shared: BTreeMap<Key, usize>,
    /// The keys of the values being materialised (innermost last), which
    /// their own bodies must not hoist again.
    making: Vec<Key>,
    /// The least work of a matrix product inside a scalar that becomes a
    /// stage of its own ([`Norm::gemm_stage`]); infinite: none does.
    gemm_min_work: f64,
    /// Whether the scalar being normalised is a whole `let` value's or the
    /// result's leaf (set by [`Norm::output`], taken by [`Norm::scalar`]).
    root: bool,
    /// Whether the scalar being normalised holds a bracket or `eps`: a
    /// guard may skip most of a product's elements (`[i = j] * (A B)[i, j]`
    /// reads a diagonal), so only a product that is a whole nest's value
    /// becomes a stage there.
    guarded: bool,
    /// The accumulators of the folds around the scalar being normalised:
    /// a value that reads one cannot be materialised.
    accs: Vec<String>,
}

impl Norm<'_> {
    fn cx(&self) -> Cx {
        let mut vals = self.param_types.clone();
        for (x, e) in &self.lets {
            let mut c = Cx {
                vals: vals.clone(),
                idx: vec![],
                params: self.params.clone(),
            };
            let t = type_of(e, &mut c);
            vals.push((x.clone(), t));
        }
        Cx {
            vals,
            idx: vec![],
            params: self.params.clone(),
        }
    }

    fn simp(&mut self, e: &Expr, cx: &mut Cx) -> Expr {
        Simp { fresh: self.fresh }.simp(e, cx)
    }

    /// `b{x ↦ view of a}` simplified, for a `let x = a in b` that was not
    /// inlined (see [`Norm::view`]).
    fn unlet(&mut self, x: &str, a: Expr, b: &Expr, cx: &mut Cx) -> Expr {
        let r = self.view(a, cx);
        let b = subst_val(b, x, &r, self.fresh);
        self.simp(&b, cx)
    }

    /// The value `a` of a `let` that was not inlined, computed once: lifted
    /// to top-level `let`s of pair-free gens over the enclosing indices it
    /// uses (a tensor of pairs or a pair is split into its components, as
    /// at the call boundary). Returns a small expression of `a`'s type that
    /// reads those back (a name, an access chain, and pairs and gens of
    /// such), to substitute for the let's name.
    fn view(&mut self, a: Expr, cx: &mut Cx) -> Expr {
        if matches!(chain_root(&a), Expr::Var(_)) {
            return a;
        }
        let ty = type_of(&a, cx);
        match ty {
            Type::Pair(..) => {
                let a0 = Simp { fresh: self.fresh }.proj(0, a.clone(), cx);
                let a1 = Simp { fresh: self.fresh }.proj(1, a, cx);
                let v0 = self.view(a0, cx);
                let v1 = self.view(a1, cx);
                Expr::pair(v0, v1)
            }
            Type::Tensor(n, _) if !ty.is_pair_free() => {
                let j = self.fresh.next("i");
                cx.idx.push((j.clone(), n.clone()));
                let el = Simp { fresh: self.fresh }.access(a, &Affine::var(j.clone()), cx);
                let v = self.view(el, cx);
                cx.idx.pop();
                Expr::gen(j, n, v)
            }
            _ => self.materialize(a, cx),
        }
    }

    /// Build the `o`/`g` form of a simplified expression of type `ty`.
    fn output(&mut self, e: Expr, ty: &Type, cx: &mut Cx) -> Expr {
        if let Expr::Let(x, a, b) = e {
            let b = self.unlet(&x, *a, &b, cx);
            return self.output(b, ty, cx);
        }
        match ty {
            Type::Pair(a, b) => {
                let e0 = Simp { fresh: self.fresh }.proj(0, e.clone(), cx);
                let e1 = Simp { fresh: self.fresh }.proj(1, e, cx);
                let o0 = self.output(e0, a, cx);
                let o1 = self.output(e1, b, cx);
                Expr::pair(o0, o1)
            }
            Type::Tensor(n, t) => match e {
                Expr::Gen(i, m, b) => {
                    cx.idx.push((i.clone(), m.clone()));
                    let r = self.output(*b, t, cx);
                    cx.idx.pop();
                    Expr::gen(i, m, r)
                }
                _ => {
                    let j = self.fresh.next("i");
                    cx.idx.push((j.clone(), n.clone()));
                    let el = Simp { fresh: self.fresh }.access(e, &Affine::var(j.clone()), cx);
                    let r = self.output(el, t, cx);
                    cx.idx.pop();
                    Expr::gen(j, n.clone(), r)
                }
            },
            Type::Real | Type::Int => {
                let mut counts = BTreeMap::new();
                self.count_candidates(&e, cx, &mut counts);
                // A materialised value's body (a hoisted `sum`) keeps the
                // counts of the scalar it came from: softmax's
                // `sum(j) exp(x[i, j] - m[i])` reads the hoisted numerator
                // `exp(x[i, j] - m[i])` instead of computing every `exp`
                // again (keys are closed forms, the same in either scalar).
                for (k, v) in &self.shared {
                    let c = counts.entry(k.clone()).or_insert(0);
                    *c = (*c).max(*v);
                }
                counts.retain(|_, k| *k >= 2);
                let saved = std::mem::replace(&mut self.shared, counts);
                self.root = true;
                let guarded = std::mem::replace(&mut self.guarded, has_guard(&e));
                let r = self.scalar(e, cx);
                self.guarded = guarded;
                self.shared = saved;
                r
            }
        }
    }

    /// Normalise a number-typed expression.
    fn scalar(&mut self, e: Expr, cx: &mut Cx) -> Expr {
        let root = std::mem::replace(&mut self.root, false);
        match e {
            Expr::Let(x, a, b) => {
                let b = self.unlet(&x, *a, &b, cx);
                self.root = root;
                self.scalar(b, cx)
            }
            Expr::Sum(..)
                if self.gemm_min_work.is_finite()
                    && (root || !self.guarded)
                    && self.is_matrix_product(&e, cx) =>
            {
                self.gemm_stage(e, root, cx)
            }
            Expr::Bin(BinOp::Div, ..)
                if self.gemm_min_work.is_finite()
                    && (root || !self.guarded)
                    && scaled_product(&e).is_some_and(|p| {
                        self.is_matrix_product(p, cx) && self.always_scaled(&e, p, cx)
                    }) =>
            {
                self.gemm_stage(e, root, cx)
            }
            Expr::Sum(i, n, b) => {
                if self.licm && !cx.idx.is_empty() {
                    let whole = Expr::sum(i.clone(), n.clone(), (*b).clone());
                    let fv = fv_idx(&whole);
                    let missing = cx.idx.iter().any(|(x, _)| !fv.contains(x));
                    if missing && self.fits(&whole, cx) {
                        return self.materialize(whole, cx);
                    }
                }
                let whole = Expr::sum(i, n, *b);
                if self.worth_hoisting(&whole, cx) {
                    return self.materialize(whole, cx);
                }
                let Expr::Sum(i, n, b) = whole else {
                    unreachable!("rebuilt above")
                };
                cx.idx.push((i.clone(), n.clone()));
                let r = self.scalar(*b, cx);
                cx.idx.pop();
                Expr::sum(i, n, r)
            }
            Expr::Reduce(op, i, n, b) => {
                // hoisted like a sum (exact: the same value, computed once)
                let whole = Expr::reduce(op, i, n, *b);
                if self.licm && !cx.idx.is_empty() {
                    let fv = fv_idx(&whole);
                    let missing = cx.idx.iter().any(|(x, _)| !fv.contains(x));
                    if missing && self.fits(&whole, cx) {
                        return self.materialize(whole, cx);
                    }
                }
                if self.worth_hoisting(&whole, cx) {
                    return self.materialize(whole, cx);
                }
                let Expr::Reduce(op, i, n, b) = whole else {
                    unreachable!("rebuilt above")
                };
                cx.idx.push((i.clone(), n.clone()));
                let r = self.scalar(*b, cx);
                cx.idx.pop();
                Expr::reduce(op, i, n, r)
            }
            Expr::Fold(..) => self.fold(e, cx),
            Expr::Access(..) | Expr::Proj(..)
                if matches!(chain_root(&e), Expr::Gen(..))
                    && fv_val(chain_root(&e)).iter().any(|x| self.accs.contains(x)) =>
            {
                self.unchain(e, cx)
            }
            Expr::Access(..) | Expr::Proj(..) | Expr::Var(_) => {
                let c = self.chain(e, cx);
                self.fix_ranges(c, cx)
            }
            Expr::Gen(..) | Expr::Pair(..) => {
                // not reachable for simplified well-typed input; keep it exact
                let s = self.simp(&e, cx);
                if matches!(s, Expr::Gen(..) | Expr::Pair(..)) {
                    s
                } else {
                    self.scalar(s, cx)
                }
            }
            Expr::Bracket(p) => match decide_in(&p, cx) {
                Some(true) => Expr::Num(1.0),
                _ => Expr::Bracket(p),
            },
            Expr::Call(..) | Expr::Bin(BinOp::Div, ..)
                if self.hoist_calls && self.worth_hoisting(&e, cx) =>
            {
                // The arguments first, with only their sums hoisted: a sum
                // hoisted here is shared with its other uses (the diamond
                // `sin(A x)[i] * cos(A x)[j]` computes `A x` once), a call
                // inside stays in the one hoisted with it.
                self.hoist_calls = false;
                let e = map_children_owned(e, &mut |c| self.scalar(c, cx));
                self.hoist_calls = true;
                self.materialize(e, cx)
            }
            Expr::Bin(BinOp::Mul, a, b) => {
                let a = self.scalar(*a, cx);
                let b = self.scalar(*b, cx);
                match (a, b) {
                    (Expr::Num(1.0), b) => b,
                    (a, Expr::Num(1.0)) => a,
                    (a, b) => Expr::bin(BinOp::Mul, a, b),
                }
            }
            _ => map_children_owned(e, &mut |c| self.scalar(c, cx)),
        }
    }

    /// An access chain in a scalar: rooted at a name it stays; rooted at a
    /// gen, the gen is materialised.
    fn chain(&mut self, e: Expr, cx: &mut Cx) -> Expr {
        match e {
            Expr::Access(a, idx) => {
                if matches!(*a, Expr::Gen(..)) {
                    let r = self.materialize(*a, cx);
                    return Expr::access(r, idx);
                }
                let a = self.chain(*a, cx);
                Expr::access(a, idx)
            }
            Expr::Proj(k, a) => {
                let a = self.chain(*a, cx);
                Expr::proj(k, a)
            }
            Expr::Gen(..) => self.materialize(e, cx),
            Expr::Fold(..) => self.fold(e, cx),
            _ => e,
        }
    }

    /// A `fold` in a scalar (or under projections): its initial value
    /// and body as trees of pairs over normal scalars. Nothing in the
    /// body is hoisted or shared out of the loop (it may read the
    /// accumulator, which changes every step); the fold as a whole is
    /// hoisted like any other scalar around it.
    fn fold(&mut self, e: Expr, cx: &mut Cx) -> Expr {
        let Expr::Fold(i, n, acc, init, body) = e else {
            return e;
        };
        let ty = type_of(&init, cx);
        let init = self.fold_value(*init, &ty, cx);
        let licm = std::mem::replace(&mut self.licm, false);
        let calls = std::mem::replace(&mut self.hoist_calls, false);
        let gemm = std::mem::replace(&mut self.gemm_min_work, f64::INFINITY);
        let shared = std::mem::take(&mut self.shared);
        cx.idx.push((i.clone(), n.clone()));
        cx.vals.push((acc.clone(), ty.clone()));
        self.accs.push(acc.clone());
        let body = self.fold_value(*body, &ty, cx);
        self.accs.pop();
        cx.vals.pop();
        cx.idx.pop();
        self.licm = licm;
        self.hoist_calls = calls;
        self.gemm_min_work = gemm;
        self.shared = shared;
        Expr::fold(i, n, acc, init, body)
    }

    /// A number read out of a `gen` that reads a fold's accumulator (so it
    /// cannot be materialised), `(gen(k:n) e)[ι]…`, as the guarded sum
    /// `sum(k:n) [k = ι] * e…`: the one term where `ι` is in range is the
    /// element read (a strong zero if it is one), the others strong zeros
    /// that add nothing. Out of range the sum is a strong zero where the
    /// padded read is a plain 0: when no element can be a strong zero (no
    /// bracket or `eps` in it) a `where` on the range gives the plain 0
    /// there; else over a literal size `+ [ι out of range] * 0` makes it
    /// plain (over a named size it stays strong: the one case where the
    /// value may differ, by a strong zero's absorbing an infinity).
    fn unchain(&mut self, e: Expr, cx: &mut Cx) -> Expr {
        let mut ops = Vec::new();
        let mut cur = e;
        loop {
            match cur {
                Expr::Access(a, idx) => {
                    ops.push(Err(idx));
                    cur = *a;
                }
                Expr::Proj(k, a) => {
                    ops.push(Ok(k));
                    cur = *a;
                }
                other => {
                    cur = other;
                    break;
                }
            }
        }
        let (Expr::Gen(k, n, body), Some(Err(idx))) = (cur, ops.pop()) else {
            unreachable!("called on an access chain rooted at a gen")
        };
        let k2 = self.fresh.next("i");
        let mut x = subst_idx(&body, &k, &Affine::var(k2.clone()), self.fresh);
        for op in ops.into_iter().rev() {
            x = match op {
                Ok(p) => Expr::proj(p, x),
                Err(a) => Expr::access(x, a),
            };
        }
        let strong = has_guard(&x);
        let guard = Expr::Bracket(Pred::Cmp(CmpOp::Eq, Affine::var(k2.clone()), idx.clone()));
        let mut r = Expr::sum(k2, n.clone(), Expr::bin(BinOp::Mul, guard, x));
        if !strong {
            // no element is a strong zero: outside the range the read is
            // the padding's plain 0
            let i = || Box::new(Expr::index_value(idx.clone()));
            let size = match &n {
                Size::Lit(m) => Expr::Num(*m as f64),
                Size::Named(m) => Expr::SizeValue(m.clone()),
            };
            let inside = Cond::And(
                Box::new(Cond::Cmp(CmpOp::Ge, i(), Box::new(Expr::Num(0.0)))),
                Box::new(Cond::Cmp(CmpOp::Lt, i(), Box::new(size))),
            );
            r = Expr::where_(inside, r, Expr::Num(0.0));
        } else if let Size::Lit(m) = n {
            let inside = Pred::And(
                Box::new(Pred::Cmp(CmpOp::Le, Affine::constant(0), idx.clone())),
                Box::new(Pred::Cmp(CmpOp::Lt, idx, Affine::constant(m as i64))),
            );
            let outside = Expr::Bracket(Pred::Not(Box::new(inside)));
            r = Expr::bin(
                BinOp::Add,
                r,
                Expr::bin(BinOp::Mul, outside, Expr::Num(0.0)),
            );
        }
        let r = self.simp(&r, cx);
        self.scalar(r, cx)
    }

    /// A value of an accumulator's type `ty` (a number or pairs of them)
    /// as a tree of pairs over normal scalars.
    fn fold_value(&mut self, e: Expr, ty: &Type, cx: &mut Cx) -> Expr {
        if let Expr::Let(x, a, b) = e {
            // inlined, not materialised: the value may read an accumulator
            let b = subst_val(&b, &x, &a, self.fresh);
            let b = self.simp(&b, cx);
            return self.fold_value(b, ty, cx);
        }
        match ty {
            Type::Pair(ta, tb) => {
                let e0 = Simp { fresh: self.fresh }.proj(0, e.clone(), cx);
                let e1 = Simp { fresh: self.fresh }.proj(1, e, cx);
                let v0 = self.fold_value(e0, ta, cx);
                let v1 = self.fold_value(e1, tb, cx);
                Expr::pair(v0, v1)
            }
            _ => {
                self.root = false;
                self.scalar(e, cx)
            }
        }
    }

    /// A plain index whose range differs from the axis it reads (left by
    /// substitution; zero padding makes it exact, the type checker does not
    /// accept it) is rebound: `x[j]` becomes `sum(k:n) [k = j] * x[k]`.
    fn fix_ranges(&mut self, e: Expr, cx: &Cx) -> Expr {
        let mut full = self.cx();
        full.idx = cx.idx.clone();
        let mut fixes: Vec<(String, Size, String)> = Vec::new();
        fn go(
            e: Expr,
            full: &mut Cx,
            fresh: &mut Fresh,
            fixes: &mut Vec<(String, Size, String)>,
        ) -> Expr {
            match e {
                Expr::Access(a, idx) => {
                    let n = match type_of(&a, full) {
                        Type::Tensor(n, _) => Some(n),
                        _ => None,
                    };
                    let a = go(*a, full, fresh, fixes);
                    if let (Some(v), Some(n)) = (idx.as_var(), n) {
                        let r = full.range(v);
                        if r.is_some_and(|r| *r != n) {
                            let k = fresh.next("i");
                            fixes.push((k.clone(), n, v.to_string()));
                            return Expr::access(a, Affine::var(k));
                        }
                    }
                    Expr::access(a, idx)
                }
                Expr::Proj(k, a) => Expr::proj(k, go(*a, full, fresh, fixes)),
                e => e,
            }
        }
        let plain = chain_root_is_param(&e, &full);
        let mut r = go(e, &mut full, self.fresh, &mut fixes);
        let fixed = !fixes.is_empty();
        for (k, n, v) in fixes.into_iter().rev() {
            let guard = Expr::Bracket(Pred::Cmp(CmpOp::Eq, Affine::var(k.clone()), Affine::var(v)));
            r = Expr::sum(k, n, Expr::bin(BinOp::Mul, guard, r));
        }
        if fixed && plain {
            // where the index is out of range every term is a strong zero,
            // while the padded read it replaces is a plain one; a
            // parameter's element never is strong, so `+ 0` restores it
            r = Expr::bin(BinOp::Add, r, Expr::Num(0.0));
        }
        r
    }

    /// Lift `g` (any value) to a top-level `let` of a `gen` over the enclosing
    /// indices it uses; return the expression reading it back.
    fn materialize(&mut self, g: Expr, cx: &mut Cx) -> Expr {
        let chosen = used_positions(&g, cx);
        let mut whole = g;
        for &p in chosen.iter().rev() {
            let (n, s) = cx.idx[p].clone();
            whole = Expr::gen(n, s, whole);
        }
        let mut top = self.cx();
        let ty = type_of(&whole, &mut top);
        // the let's own body is a new scalar: its calls may be hoisted
        // (not the value itself, which the counts it inherits still list)
        let calls = std::mem::replace(&mut self.hoist_calls, true);
        self.making.push(key_of(&whole));
        let body = self.output(whole, &ty, &mut top);
        self.making.pop();
        self.hoist_calls = calls;
        let key = key_of(&body);
        let name = match self.keys.get(&key) {
            Some(n) => n.clone(),
            // `gen(i:n) t[i]` over `t: [n]…` is `t` itself
            None if eta_name(&body, &mut top).is_some() => {
                eta_name(&body, &mut top).expect("checked")
            }
            None => {
                let n = self.fresh.next("t");
                self.lets.push((n.clone(), body));
                self.keys.insert(key, n.clone());
                n
            }
        };
        // the caller's context learns the new name's type (a top-level
        // let, so at the bottom: no binder of the context shadows it):
        // read back whole, a tensor, it would otherwise be taken for a
        // number (`type_of`), and an access of it padded as one
        if cx.val(&name).is_none() {
            cx.vals.insert(0, (name.clone(), ty));
        }
        let mut r = Expr::Var(name);
        for &p in &chosen {
            r = Expr::access(r, Affine::var(cx.idx[p].0.clone()));
        }
        r
    }
}

/// The default least work (multiply-adds, by the cost model's trip
/// counts) of a matrix product that the normal-form pass (step 6 above) makes a stage of
/// its own ([`NormalOptions::gemm_stage_min_work`]).
pub const MIN_GEMM_STAGE_WORK: f64 = 4096.0;

/// Matrix products inside larger expressions (issue 26): a `sum(k…) A * B`
/// whose factors share the summed indices, with indices of its own on each
/// side (`M` only in `A`, `N` only in `B`; or on one side only, a
/// matrix-vector product, when both factors are plain loads), runs on the GEMM stage when its
/// nest is exactly `gen(m…, n…) sum(k…) X[…] * Y[…]` over two plain loads.
/// So, in the normal-form pass:
///
/// - a factor that is not such a load (`X[k, i] - mu[i]`, `Q[i, k] / 8`,
///   a read with a shifted index) is materialised over the indices it uses
///   (computed once per `(m, k)` instead of once per `(m, n, k)`);
/// - the product itself, when it is not already the whole value of its
///   nest (`max(b[j] + sum(l) X[i, l] * W[l, j], 0)`, a product inside
///   another sum, a nest with indices the product does not use), is
///   materialised as a `let` of its own and read back where it stood.
///
/// Both are the same expressions over the same index ranges, read back
/// under the same guards, so values are unchanged (as for loop-invariant
/// code motion above); materialised values are shared by key, so the
/// product `Q Kᵀ` used twice is computed once.
impl Norm<'_> {
    /// Whether `e` (a `sum`) is a matrix product worth a stage.
    fn is_matrix_product(&self, e: &Expr, cx: &Cx) -> bool {
        let mut ks: Vec<(&str, &Size)> = Vec::new();
        let mut body = e;
        while let Expr::Sum(k, n, b) = body {
            ks.push((k, n));
            body = b;
        }
        let Expr::Bin(BinOp::Mul, a, b) = body else {
            return false;
        };
        let (fa, fb) = (fv_idx(a), fv_idx(b));
        let summed = |v: &str| ks.iter().any(|(k, _)| *k == v);
        let distinct = (1..ks.len()).all(|p| !ks[..p].iter().any(|q| q.0 == ks[p].0));
        if !distinct || ks.iter().any(|(k, _)| cx.range(k).is_some()) {
            return false;
        }
        if !ks.iter().all(|(k, _)| fa.contains(*k) && fb.contains(*k)) {
            return false;
        }
        if fa
            .iter()
            .chain(&fb)
            .any(|v| !summed(v) && cx.range(v).is_none())
        {
            return false;
        }
        let own = |f: &BTreeSet<String>, g: &BTreeSet<String>| -> Vec<String> {
            f.iter()
                .filter(|v| !summed(v) && !g.contains(*v))
                .cloned()
                .collect()
        };
        let (m, n) = (own(&fa, &fb), own(&fb, &fa));
        if m.is_empty() && n.is_empty() {
            return false;
        }
        if m.is_empty() || n.is_empty() {
            // A matrix-vector product reads each matrix element once, so
            // it is worth a stage (the library's GEMV, several times the
            // generated loops' speed) only over plain loads: a factor
            // materialised first would cost as much memory traffic as
            // the product.
            let mut inner = self.cx();
            inner.idx = cx.idx.clone();
            inner
                .idx
                .extend(ks.iter().map(|(k, s)| (k.to_string(), (*s).clone())));
            if !(self.plain_load(a, &inner) && self.plain_load(b, &inner)) {
                return false;
            }
        }
        let model = &self.model;
        let outer: f64 = fa
            .union(&fb)
            .filter(|v| !summed(v))
            .filter_map(|v| cx.range(v))
            .map(|s| model.trip(s))
            .product();
        let inner: f64 = ks.iter().map(|(_, s)| model.trip(s)).product();
        outer * inner >= self.gemm_min_work
    }

    /// Whether the product `p` of the scaled product `e` occurs in the
    /// scalar being normalised only as `e` (as many times, by
    /// [`Norm::count_candidates`]): a product also used unscaled, or with
    /// another scale, stays one stage without its scale, divided at each
    /// use, instead of two stages.
    fn always_scaled(&self, e: &Expr, p: &Expr, cx: &Cx) -> bool {
        let count = |x: &Expr| {
            let chosen = used_positions(x, cx);
            let key = candidate_key(x, cx, &chosen);
            self.shared.get(&key).copied().unwrap_or(1)
        };
        self.shared.is_empty() || count(p) == count(e)
    }

    /// Make the matrix product `e` ([`Norm::is_matrix_product`]), or a
    /// scaled one ([`scaled_product`]), a stage: its factors plain loads,
    /// itself (with its scale) the whole value of its nest.
    fn gemm_stage(&mut self, e: Expr, root: bool, cx: &mut Cx) -> Expr {
        let (e, divisor) = match e {
            Expr::Bin(BinOp::Div, a, c) => (*a, Some(*c)),
            e => (e, None),
        };
        let mut ks: Vec<(String, Size)> = Vec::new();
        let mut body = e;
        while let Expr::Sum(k, n, b) = body {
            ks.push((k, n));
            body = *b;
        }
        let Expr::Bin(BinOp::Mul, a, b) = body else {
            unreachable!("checked by is_matrix_product")
        };
        let depth = cx.idx.len();
        cx.idx.extend(ks.iter().cloned());
        let a = self.factor(*a, cx);
        let b = self.factor(*b, cx);
        cx.idx.truncate(depth);
        let mut s = Expr::bin(BinOp::Mul, a, b);
        for (k, n) in ks.into_iter().rev() {
            s = Expr::sum(k, n, s);
        }
        if let Some(c) = divisor {
            s = Expr::bin(BinOp::Div, s, c);
        }
        let used = fv_idx(&s);
        let whole_nest = root && cx.idx.iter().all(|(x, _)| used.contains(x));
        if whole_nest || !self.fits(&s, cx) {
            s
        } else {
            self.materialize(s, cx)
        }
    }

    /// A factor of a stage: a plain load stays, anything else is
    /// materialised (within the memory limit).
    fn factor(&mut self, f: Expr, cx: &mut Cx) -> Expr {
        if self.plain_load(&f, cx) || !self.fits(&f, cx) {
            self.scalar(f, cx)
        } else {
            self.materialize(f, cx)
        }
    }

    /// Whether `e` is a load the GEMM stage reads as it is: a name's
    /// element, every index a distinct enclosing index over exactly its
    /// axis.
    fn plain_load(&self, e: &Expr, cx: &Cx) -> bool {
        let mut full = self.cx();
        full.idx = cx.idx.clone();
        let mut idx = Vec::new();
        let mut t = e;
        while let Expr::Access(x, i) = t {
            idx.push(i);
            t = x;
        }
        let Expr::Var(name) = t else { return false };
        let Some(mut ty) = full.val(name).cloned() else {
            return false;
        };
        let mut seen = BTreeSet::new();
        for i in idx.iter().rev() {
            let Some(v) = i.as_var() else { return false };
            let Type::Tensor(n, el) = ty else {
                return false;
            };
            if !seen.insert(v) || full.range(v) != Some(&n) {
                return false;
            }
            ty = *el;
        }
        !idx.is_empty() && ty == Type::Real
    }
}

/// The product of a scaled product: `e` is `sum(…) / c` with `c` a power
/// of two whose reciprocal is exact (`crate::precision::exact_reciprocal`:
/// the division is then the GEMM library's scale factor bit for bit, see
/// `jit::schedule::gemm`). Such a product is a stage with its scale (`S =
/// (Q Kᵀ) / 8` computed once, not `Q Kᵀ` with `/ 8` at each of its uses);
/// a division by any other constant (`/ 3`, which is not `· (1/3)`)
/// leaves the product alone a stage and divides where it is used. (A
/// product times a constant stays a stage without it: `0.5 * h` and
/// `h * 0.044715` of one `h` are one product, not three.)
fn scaled_product(e: &Expr) -> Option<&Expr> {
    match e {
        Expr::Bin(BinOp::Div, a, c)
            if matches!(**a, Expr::Sum(..))
                && literal(c)
                    .and_then(crate::precision::exact_reciprocal)
                    .is_some() =>
        {
            Some(a)
        }
        _ => None,
    }
}

/// The value of a number literal, negated or not.
fn literal(e: &Expr) -> Option<f64> {
    match e {
        Expr::Num(x) => Some(*x),
        Expr::Neg(a) => literal(a).map(|x| -x),
        _ => None,
    }
}

/// Whether a bracket or `eps` occurs in `e`.
fn has_guard(e: &Expr) -> bool {
    matches!(e, Expr::Bracket(_) | Expr::Eps(_)) || e.children().into_iter().any(has_guard)
}

/// The positions in `cx.idx` of the enclosing indices `e` uses (the
/// innermost binding of each name), outermost first.
fn used_positions(e: &Expr, cx: &Cx) -> Vec<usize> {
    let mut chosen: Vec<usize> = fv_idx(e)
        .iter()
        .filter_map(|v| cx.idx.iter().rposition(|(n, _)| n == v))
        .collect();
    chosen.sort_unstable();
    chosen
}

/// Hoisting partially invariant scalar work and sharing repeated work
/// (see [`Norm::worth_hoisting`]).
impl Norm<'_> {
    /// Whether `e`, a scalar function call, a division or a `sum` inside
    /// the loops of `cx`, is computed more cheaply as a top-level `let` of
    /// a `gen` over the enclosing indices it uses (read back with one load
    /// per occurrence) than where it stands, under the cost model:
    ///
    /// - `e` uses only some of the enclosing indices (`exp(u[i])` inside
    ///   `gen(i, j)`, `log(t0)` inside `gen(i)`): computed on that subset,
    ///   or once when it uses none;
    /// - `e` occurs more than once in the same scalar (a subterm that the
    ///   DAG-aware extractor priced once): computed once, read at each use.
    ///
    /// The hoisted value is the same expression over the same index
    /// ranges, so padding is unchanged, and every read of it stays where
    /// `e` stood, under the same guards: a value computed where a bracket
    /// kills it (NaN from `log` of a negative) is read only through the
    /// bracket's strong zero.
    /// Whether `e` hoisted (a `gen` over the enclosing indices it uses)
    /// stays within the memory limit.
    fn fits(&self, e: &Expr, cx: &Cx) -> bool {
        let elements: f64 = used_positions(e, cx)
            .iter()
            .map(|&p| self.model.trip(&cx.idx[p].1))
            .product();
        elements <= self.memory_limit
    }

    fn worth_hoisting(&self, e: &Expr, cx: &Cx) -> bool {
        if !self.licm || !self.fits(e, cx) {
            return false;
        }
        let chosen = used_positions(e, cx);
        let invariant = chosen.len() < cx.idx.len();
        // (the key, built once, when something is looked up by it)
        let key = (!self.shared.is_empty() || !self.making.is_empty())
            .then(|| candidate_key(e, cx, &chosen));
        let uses = match &key {
            Some(key) if !self.shared.is_empty() => self.shared.get(key).copied().unwrap_or(1),
            _ => 1,
        };
        if !invariant && uses < 2 {
            return false;
        }
        if key.is_some_and(|key| self.making.contains(&key)) {
            // the value being materialised, at the root of its own body
            return false;
        }
        let m = &self.model;
        let all: f64 = cx.idx.iter().map(|(_, s)| m.trip(s)).product();
        let c = ir_cost(e, m);
        // `gen(i1:n1, …) e`, computed once
        let once = chosen
            .iter()
            .rev()
            .fold(c, |acc, &p| m.trip(&cx.idx[p].1) * (acc + 1.0));
        let k = uses as f64;
        let inline = k * all * c;
        let hoisted = once + k * all * chosen.len() as f64;
        hoisted < inline
    }

    /// Count, by [`candidate_key`], the hoisting candidates (calls,
    /// divisions, sums) of the scalar `e` in the loops of `cx`.
    fn count_candidates(&self, e: &Expr, cx: &mut Cx, out: &mut BTreeMap<Key, usize>) {
        if !self.licm {
            return;
        }
        if matches!(
            e,
            Expr::Call(..) | Expr::Bin(BinOp::Div, ..) | Expr::Sum(..) | Expr::Reduce(..)
        ) {
            let chosen = used_positions(e, cx);
            *out.entry(candidate_key(e, cx, &chosen)).or_insert(0) += 1;
        }
        match e {
            Expr::Sum(i, n, b) | Expr::Gen(i, n, b) | Expr::Reduce(_, i, n, b) => {
                cx.idx.push((i.clone(), n.clone()));
                self.count_candidates(b, cx, out);
                cx.idx.pop();
            }
            Expr::Let(..) | Expr::Fold(..) => {}
            _ => {
                for c in e.children() {
                    self.count_candidates(c, cx, out);
                }
            }
        }
    }
}

/// The key under which occurrences of a hoisting candidate `e` are the
/// same value: the De Bruijn form of `gen(…) e` over the enclosing indices
/// it uses (what [`Norm::materialize`] would compute).
fn candidate_key(e: &Expr, cx: &Cx, chosen: &[usize]) -> Key {
    let mut whole = e.clone();
    for &p in chosen.iter().rev() {
        let (n, s) = cx.idx[p].clone();
        whole = Expr::gen(n, s, whole);
    }
    key_of(&whole)
}

/// `t` when `e` is `gen(i1:n1, …, ik:nk) t[i1, …, ik]` for a name `t` of
/// type `[n1, …, nk]…` (a copy of `t`).
fn eta_name(e: &Expr, cx: &mut Cx) -> Option<String> {
    let mut binders = Vec::new();
    let mut body = e;
    while let Expr::Gen(i, n, b) = body {
        binders.push((i.as_str(), n));
        body = b;
    }
    let mut idx = Vec::new();
    while let Expr::Access(t, a) = body {
        idx.push(a.as_var()?);
        body = t;
    }
    idx.reverse();
    let Expr::Var(t) = body else { return None };
    let repeated = (1..binders.len()).any(|k| binders[..k].iter().any(|b| b.0 == binders[k].0));
    if binders.is_empty() || idx.len() != binders.len() || repeated {
        return None;
    }
    let mut ty = cx.val(t)?.clone();
    for ((i, n), v) in binders.iter().zip(&idx) {
        match ty {
            Type::Tensor(m, el) if *i == *v && **n == m => ty = *el,
            _ => return None,
        }
    }
    Some(t.clone())
}

/// Options of the post-pass.
#[derive(Clone, Debug)]
pub struct NormalOptions {
    /// Hoist loop-invariant sums into lets (LICM).
    pub licm: bool,
    /// Inline lets only while the program stays within this many nodes
    /// ([`inline_lets`]); the others are computed once, as top-level lets.
    pub term_limit: usize,
    /// Trip counts for deciding what to hoist (a call or division used on
    /// a subset of its loops' indices, a value used twice).
    pub model: CostModel,
    /// The most elements (estimated with `model`) a value hoisted into a
    /// `let` may have; a larger one is recomputed in its loops instead
    /// (issue 23's memory limit: loops that recompute rather than
    /// materialise). Infinite by default.
    pub memory_limit: f64,
    /// Matrix products inside larger expressions of at least this much
    /// work become GEMM stages of their own (`Norm::gemm_stage`);
    /// [`MIN_GEMM_STAGE_WORK`] by default, infinite to turn it off.
    pub gemm_stage_min_work: f64,
}

impl Default for NormalOptions {
    fn default() -> Self {
        NormalOptions {
            licm: true,
            term_limit: DEFAULT_TERM_LIMIT,
            model: CostModel::default(),
            memory_limit: f64::INFINITY,
            gemm_stage_min_work: MIN_GEMM_STAGE_WORK,
        }
    }
}

/// Put a well-typed function in normal form, hoisting loop-invariant sums
/// and sharing equal materialised values.
pub fn normalize(f: &Function, opts: &NormalOptions) -> Function {
    let mut fresh = Fresh::default();
    let params: BTreeSet<String> = f.params.iter().map(|p| p.name.clone()).collect();
    let param_types: Vec<(String, Type)> = f
        .params
        .iter()
        .map(|p| (p.name.clone(), p.ty.clone()))
        .collect();
    let mut cx = Cx {
        vals: param_types.clone(),
        idx: vec![],
        params: params.clone(),
    };
    let ret = match &f.ret {
        Some(t) => t.clone(),
        None => match crate::types::check(f) {
            Ok(sig) => sig.ret,
            Err(_) => type_of(&f.body, &mut cx),
        },
    };
    let body = uniquify(&f.body, &mut fresh);
    let body = inline_lets(&body, &mut fresh, opts.term_limit);
    let body = Simp { fresh: &mut fresh }.simp(&body, &mut cx);
    let mut n = Norm {
        fresh: &mut fresh,
        lets: Vec::new(),
        keys: BTreeMap::new(),
        params,
        param_types,
        licm: opts.licm,
        model: opts.model.clone(),
        memory_limit: opts.memory_limit,
        hoist_calls: true,
        shared: BTreeMap::new(),
        making: Vec::new(),
        gemm_min_work: opts.gemm_stage_min_work,
        root: false,
        guarded: false,
        accs: Vec::new(),
    };
    let out = n.output(body, &ret, &mut cx);
    let mut body = out;
    for (x, e) in n.lets.into_iter().rev() {
        body = Expr::let_(x, e, body);
    }
    let g = Function {
        name: f.name.clone(),
        params: f.params.clone(),
        ret: Some(ret),
        body,
    };
    pretty_names(&g)
}

/// Whether `e` uses an index as a number somewhere.
fn has_index_values(e: &Expr) -> bool {
    matches!(e, Expr::IndexValue(_)) || e.children().into_iter().any(has_index_values)
}

/// Rename binders by depth (`i`, `j`, …) and lets `t0`, `t1`, … (skipping
/// parameter names).
pub fn pretty_names(f: &Function) -> Function {
    let params: BTreeSet<String> = f.params.iter().map(|p| p.name.clone()).collect();
    let sizes = f.size_names();
    // an index used as a number must not be read back as a parameter
    let values = has_index_values(&f.body);
    let names: Vec<String> = (0..64)
        .map(crate::egraph::index_name)
        .filter(|n| !(sizes.contains(n) || values && params.contains(n)))
        .collect();
    let mut counter = 0usize;
    let mut accs = 0usize;
    let mut next_let = |acc: bool| loop {
        let n = if acc {
            accs += 1;
            format!("acc{}", accs - 1)
        } else {
            counter += 1;
            format!("t{}", counter - 1)
        };
        if !params.contains(&n) {
            return n;
        }
    };
    fn go(
        e: &Expr,
        idx: &mut Vec<(String, String)>,
        val: &mut Vec<(String, String)>,
        next_let: &mut dyn FnMut(bool) -> String,
        names: &[String],
    ) -> Expr {
        let ren = |a: &Affine, idx: &Vec<(String, String)>| rename_affine(a, idx);
        match e {
            Expr::Var(x) => Expr::Var(renamed(val, x)),
            Expr::Gen(i, n, b) | Expr::Sum(i, n, b) | Expr::Reduce(_, i, n, b) => {
                let k = names
                    .get(idx.len())
                    .cloned()
                    .unwrap_or_else(|| format!("i{}", idx.len()));
                idx.push((i.clone(), k.clone()));
                let body = go(b, idx, val, next_let, names);
                idx.pop();
                e.rebind(k, n.clone(), body)
            }
            Expr::Let(x, a, b) => {
                let a = go(a, idx, val, next_let, names);
                let k = next_let(false);
                val.push((x.clone(), k.clone()));
                let b = go(b, idx, val, next_let, names);
                val.pop();
                Expr::let_(k, a, b)
            }
            Expr::Fold(i, n, acc, a, b) => {
                let a = go(a, idx, val, next_let, names);
                let k = names
                    .get(idx.len())
                    .cloned()
                    .unwrap_or_else(|| format!("i{}", idx.len()));
                let t = next_let(true);
                idx.push((i.clone(), k.clone()));
                val.push((acc.clone(), t.clone()));
                let b = go(b, idx, val, next_let, names);
                val.pop();
                idx.pop();
                Expr::fold(k, n.clone(), t, a, b)
            }
            Expr::Access(a, i) => Expr::access(go(a, idx, val, next_let, names), ren(i, idx)),
            Expr::Bracket(p) => Expr::Bracket(p.map_affine(&|a| ren(a, idx))),
            Expr::Eps(v) => Expr::Eps(v.iter().map(|a| ren(a, idx)).collect()),
            Expr::IndexValue(a) => Expr::IndexValue(ren(a, idx)),
            _ => map_children(e, &mut |c| go(c, idx, val, next_let, names)),
        }
    }
    let body = go(
        &f.body,
        &mut Vec::new(),
        &mut Vec::new(),
        &mut next_let,
        &names,
    );
    // integer arithmetic on index values as the parser reads it back
    let body = if values {
        crate::syntax::fold_index_values(body)
    } else {
        body
    };
    Function { body, ..f.clone() }
}

/// Whether a function is in the normal form of `docs/language.md`, with records
/// (what `jit::lower` lowers): a result or a `let` value is a tree of
/// `gen`s and pairs over numbers (`g ::= gen(i:n) g | (g, g) | e`), so a
/// tensor of pairs `gen(i:n) (a, b)` is normal and is carried as struct
/// of arrays, one buffer per leaf; an access chain may project any name
/// of a type holding pairs (`d[i].0`).
pub fn is_normal(f: &Function) -> bool {
    let mut cx = Cx::of(f);
    fn chain_ok(e: &Expr, cx: &Cx, has_proj: bool) -> bool {
        match e {
            Expr::Var(x) => !has_proj || cx.val(x).is_some(),
            Expr::Access(a, _) => chain_ok(a, cx, has_proj),
            Expr::Gather(a, g, _) => {
                chain_ok(a, cx, has_proj)
                    && matches!(&**g, Expr::Access(..))
                    && crate::interp::gather::array_of(g).is_some()
            }
            Expr::Proj(_, a) => chain_ok(a, cx, true),
            _ => false,
        }
    }
    fn scalar(e: &Expr, cx: &mut Cx) -> bool {
        match e {
            Expr::Num(_) | Expr::Bracket(_) | Expr::Eps(_) => true,
            Expr::IndexValue(_) | Expr::SizeValue(_) => true,
            Expr::Where(c, a, b) => {
                c.exprs().into_iter().all(|x| scalar(x, cx)) && scalar(a, cx) && scalar(b, cx)
            }
            Expr::Proj(..) if matches!(chain_root(e), Expr::Fold(..)) => {
                // projections of a fold of pairs (no access in between)
                let mut r = e;
                while let Expr::Proj(_, a) = r {
                    r = a;
                }
                matches!(r, Expr::Fold(..)) && type_of(e, cx) == Type::Real && fold_ok(r, cx)
            }
            Expr::Var(_) | Expr::Access(..) | Expr::Proj(..) | Expr::Gather(..) => {
                chain_ok(e, cx, false) && type_of(e, cx) == Type::Real
            }
            Expr::Bin(_, a, b) => scalar(a, cx) && scalar(b, cx),
            Expr::Neg(a) => scalar(a, cx),
            Expr::Call(_, args) => args.iter().all(|a| scalar(a, cx)),
            Expr::Sum(i, n, b) => {
                cx.idx.push((i.clone(), n.clone()));
                let r = scalar(b, cx);
                cx.idx.pop();
                r
            }
            Expr::Reduce(_, i, n, b) => {
                cx.idx.push((i.clone(), n.clone()));
                let r = scalar(b, cx);
                cx.idx.pop();
                r
            }
            Expr::Fold(..) => type_of(e, cx) == Type::Real && fold_ok(e, cx),
            _ => false,
        }
    }
    /// `fold(i:n, acc = v) v` with `v` a tree of pairs over scalars.
    fn fold_ok(e: &Expr, cx: &mut Cx) -> bool {
        fn value(e: &Expr, cx: &mut Cx) -> bool {
            match e {
                Expr::Pair(a, b) => value(a, cx) && value(b, cx),
                _ => scalar(e, cx),
            }
        }
        let Expr::Fold(i, n, acc, a, b) = e else {
            return false;
        };
        if !value(a, cx) {
            return false;
        }
        let t = type_of(a, cx);
        cx.idx.push((i.clone(), n.clone()));
        cx.vals.push((acc.clone(), t));
        let r = value(b, cx);
        cx.vals.pop();
        cx.idx.pop();
        r
    }
    fn g(e: &Expr, cx: &mut Cx) -> bool {
        match e {
            Expr::Gen(i, n, b) => {
                cx.idx.push((i.clone(), n.clone()));
                let r = g(b, cx);
                cx.idx.pop();
                r
            }
            Expr::Pair(a, b) => g(a, cx) && g(b, cx),
            _ => scalar(e, cx),
        }
    }
    fn s(e: &Expr, cx: &mut Cx) -> bool {
        match e {
            Expr::Let(x, a, b) => {
                if !g(a, cx) {
                    return false;
                }
                let t = type_of(a, cx);
                cx.vals.push((x.clone(), t));
                let r = s(b, cx);
                cx.vals.pop();
                r
            }
            _ => g(e, cx),
        }
    }
    s(&f.body, &mut cx)
}
