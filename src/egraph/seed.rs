//! Contraction-order seeds for the e-graph.
//!
//! A scalar body built from `+`, `-`, `*` and `sum` is a sum of monomials
//! `± Σ_{i1..ik} f1 * … * fm` (products of sums multiplied out, sums pulled
//! to the front: the sum-binding and distributivity rules read left to
//! right). Each monomial is a tensor network, and every order of eliminating
//! its summation indices gives an equal, tightly bound nesting
//! (`Σ_i` wraps exactly the factors that mention `i`: summation binding read
//! right to left). Reaching these nestings by rewriting alone takes long
//! chains of associativity, commutativity and sum swaps that saturation
//! under limits does not finish, yet identities such as `Σ_i ε_ijk ε_ilm`
//! (δ/ε) or the factorisation of independent sums only match in one of them.
//! So the optimiser adds the nestings to the root's e-class before
//! saturating; every seed equals the input by construction (the same
//! monomials), and the rule families then work on all of them together.
//!
//! The expansion is bounded ([`MAX_MONOMIALS`], [`MAX_BINDERS`],
//! [`MAX_SEEDS`]) and deterministic.
//!
//! **Value-safe mode** (`safe`, the optimiser's default; see
//! `docs/fp-contract.md`): multiplying out a product of sums or splitting
//! a sum of differences is not a regrouping but an expansion, which can
//! turn `Σ (x - m)²` into a difference of large sums. So in safe mode a
//! product or a sum's body must be a single monomial (a tensor network,
//! whose nestings are regroupings of one sum of products); the operands
//! of a `+`/`-` are seeded one at a time, the other kept as written.

use crate::extract::normal::fv_idx;
use crate::syntax::ast::*;
use std::collections::BTreeSet;

/// At most this many monomials after multiplying out.
pub const MAX_MONOMIALS: usize = 8;
/// At most this many summation indices in one monomial (5! orders).
pub const MAX_BINDERS: usize = 5;
/// At most this many seeds per body.
pub const MAX_SEEDS: usize = 160;
/// At most this many factors in one monomial: reading a longer product is
/// refused as soon as it passes the bound, so that a product of thousands
/// of factors costs linear time, not quadratic (issue 22: 11,000 factors
/// took 14 s whatever the time limit).
pub const MAX_FACTORS: usize = 64;

#[derive(Clone, Debug)]
struct Mono {
    neg: bool,
    binders: Vec<(String, Size)>,
    factors: Vec<Expr>,
}

/// The monomials of `e`; in safe mode only a single monomial (a product
/// of factors under sums) is read, anything else is `None`.
fn expand(e: &Expr, safe: bool) -> Option<Vec<Mono>> {
    expand_in(e, safe, false)
}

/// Whether a sum of range `n` may take in the factors beside it: only a
/// range known not to be empty (the e-graph's `nonempty`, `rules/binding.rules`).
/// Moved into an empty sum, an infinite or NaN factor times the sum's 0
/// (NaN) would become 0; the default mode never drops a NaN.
fn takes_factors(n: &Size) -> bool {
    matches!(n, Size::Lit(k) if *k >= 1)
}

/// [`expand`] of `e`, a factor of a product when `inner` (so that lifting
/// its sums moves the other factors into them). In safe mode a sum there
/// whose range may be empty ([`takes_factors`]) stays whole, one factor.
fn expand_in(e: &Expr, safe: bool, inner: bool) -> Option<Vec<Mono>> {
    let out = match e {
        Expr::Sum(_, n, _) if safe && inner && !takes_factors(n) => vec![Mono {
            neg: false,
            binders: vec![],
            factors: vec![e.clone()],
        }],
        Expr::Bin(BinOp::Add, a, b) if !safe => {
            let mut v = expand_in(a, safe, inner)?;
            v.extend(expand_in(b, safe, inner)?);
            v
        }
        Expr::Bin(BinOp::Sub, a, b) if !safe => {
            let mut v = expand_in(a, safe, inner)?;
            v.extend(
                expand_in(b, safe, inner)?
                    .into_iter()
                    .map(|m| Mono { neg: !m.neg, ..m }),
            );
            v
        }
        Expr::Neg(a) => expand_in(a, safe, inner)?
            .into_iter()
            .map(|m| Mono { neg: !m.neg, ..m })
            .collect(),
        Expr::Bin(BinOp::Mul, a, b) => {
            let (va, vb) = (expand_in(a, safe, true)?, expand_in(b, safe, true)?);
            let mut v = Vec::new();
            for x in &va {
                for y in &vb {
                    // Binders must stay distinct from each other and from the
                    // other side's indices (a `let` inlined twice repeats its
                    // binder names): otherwise no seeds.
                    if clash(x, y) || clash(y, x) {
                        return None;
                    }
                    let mut binders = x.binders.clone();
                    binders.extend(y.binders.iter().cloned());
                    let mut factors = x.factors.clone();
                    factors.extend(y.factors.iter().cloned());
                    v.push(Mono {
                        neg: x.neg != y.neg,
                        binders,
                        factors,
                    });
                }
            }
            v
        }
        Expr::Sum(i, n, b) => {
            let mut v = expand_in(b, safe, inner)?;
            for m in &mut v {
                if m.binders.iter().any(|(j, _)| j == i) {
                    return None; // a shadowed binder
                }
                m.binders.insert(0, (i.clone(), n.clone()));
            }
            v
        }
        other => vec![Mono {
            neg: false,
            binders: vec![],
            factors: vec![other.clone()],
        }],
    };
    if out.len() > MAX_MONOMIALS
        || out
            .iter()
            .any(|m| m.binders.len() > MAX_BINDERS || m.factors.len() > MAX_FACTORS)
    {
        return None;
    }
    Some(out)
}

/// Whether a binder of `y` is also a binder of `x` or an index `x` uses.
fn clash(x: &Mono, y: &Mono) -> bool {
    let used: BTreeSet<String> = x
        .factors
        .iter()
        .flat_map(fv_idx)
        .chain(x.binders.iter().map(|(i, _)| i.clone()))
        .collect();
    y.binders.iter().any(|(i, _)| used.contains(i))
}

fn product(mut fs: Vec<Expr>) -> Expr {
    if fs.is_empty() {
        return Expr::Num(1.0);
    }
    let first = fs.remove(0);
    fs.into_iter()
        .fold(first, |acc, f| Expr::bin(BinOp::Mul, acc, f))
}

/// The monomial with its indices eliminated in `order` (innermost first).
fn rebuild(m: &Mono, order: &[usize]) -> Expr {
    let mut fs: Vec<(Expr, BTreeSet<String>)> =
        m.factors.iter().map(|f| (f.clone(), fv_idx(f))).collect();
    for &k in order {
        let (i, n) = &m.binders[k];
        let (bucket, rest): (Vec<_>, Vec<_>) = fs.into_iter().partition(|(_, v)| v.contains(i));
        let mut fv: BTreeSet<String> = bucket.iter().flat_map(|(_, v)| v.clone()).collect();
        fv.remove(i);
        let s = Expr::sum(
            i.clone(),
            n.clone(),
            product(bucket.into_iter().map(|(e, _)| e).collect()),
        );
        fs = rest;
        fs.push((s, fv));
    }
    product(fs.into_iter().map(|(e, _)| e).collect())
}

/// All orders of `0..k`, in lexicographic order.
fn perms(k: usize) -> Vec<Vec<usize>> {
    fn go(cur: &mut Vec<usize>, k: usize, out: &mut Vec<Vec<usize>>) {
        if cur.len() == k {
            out.push(cur.clone());
            return;
        }
        for x in 0..k {
            if !cur.contains(&x) {
                cur.push(x);
                go(cur, k, out);
                cur.pop();
            }
        }
    }
    let mut out = Vec::new();
    go(&mut Vec::new(), k, &mut out);
    out
}

fn combine(monos: &[Mono], choice: &[usize], orders: &[Vec<Vec<usize>>]) -> Expr {
    let mut acc: Option<Expr> = None;
    for (k, m) in monos.iter().enumerate() {
        let t = rebuild(m, &orders[k][choice[k]]);
        acc = Some(match (acc, m.neg) {
            (None, false) => t,
            (None, true) => Expr::Neg(Box::new(t)),
            (Some(a), false) => Expr::bin(BinOp::Add, a, t),
            (Some(a), true) => Expr::bin(BinOp::Sub, a, t),
        });
    }
    acc.unwrap_or(Expr::Num(0.0))
}

/// Seeds for a scalar expression: every elimination order of a single
/// monomial, or, for several, each monomial in each of its orders with the
/// others in their first (bounded by [`MAX_SEEDS`]). Empty when the
/// expression is not a polynomial of sums within the bounds or has nothing
/// to reorder. In safe mode (see the module documentation) the operands of
/// `+`, `-` and negation are seeded one at a time, each a single monomial.
pub fn scalar_seeds(e: &Expr, safe: bool) -> Vec<Expr> {
    if safe {
        let mut out = Vec::new();
        safe_seeds(e, &mut out);
        return out;
    }
    let Some(monos) = expand(e, false) else {
        return vec![];
    };
    if monos.iter().all(|m| m.binders.len() < 2) && monos.len() < 2 {
        return vec![];
    }
    let orders: Vec<Vec<Vec<usize>>> = monos.iter().map(|m| perms(m.binders.len())).collect();
    let mut out = vec![combine(&monos, &vec![0; monos.len()], &orders)];
    for (k, os) in orders.iter().enumerate() {
        for c in 1..os.len() {
            if out.len() >= MAX_SEEDS {
                return out;
            }
            let mut choice = vec![0; monos.len()];
            choice[k] = c;
            out.push(combine(&monos, &choice, &orders));
        }
    }
    out
}

/// Safe-mode seeds of `e` (see [`scalar_seeds`]), at most [`MAX_SEEDS`].
fn safe_seeds(e: &Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::Bin(op @ (BinOp::Add | BinOp::Sub), a, b) => {
            let mut left = Vec::new();
            safe_seeds(a, &mut left);
            for s in left {
                out.push(Expr::bin(*op, s, (**b).clone()));
            }
            let mut right = Vec::new();
            safe_seeds(b, &mut right);
            for s in right {
                out.push(Expr::bin(*op, (**a).clone(), s));
            }
        }
        Expr::Neg(a) => {
            let mut inner = Vec::new();
            safe_seeds(a, &mut inner);
            out.extend(inner.into_iter().map(|s| Expr::Neg(Box::new(s))));
        }
        _ => {
            let Some(monos) = expand(e, true) else {
                return;
            };
            let [m] = &monos[..] else { return };
            if m.binders.len() < 2 {
                return;
            }
            for o in perms(m.binders.len()) {
                let t = rebuild(m, &o);
                out.push(if m.neg { Expr::Neg(Box::new(t)) } else { t });
            }
        }
    }
    out.truncate(MAX_SEEDS);
}

/// Seeds for a function body of type `ty`: under leading `gen`s (kept
/// around each seed), a body of real type is seeded by [`scalar_seeds`].
pub fn body_seeds(body: &Expr, ty: &Type, safe: bool) -> Vec<Expr> {
    match (body, ty) {
        (Expr::Gen(i, n, b), Type::Tensor(_, t)) => body_seeds(b, t, safe)
            .into_iter()
            .map(|s| Expr::gen(i.clone(), n.clone(), s))
            .collect(),
        (Expr::Gen(..), _) => vec![],
        (e, Type::Real) => scalar_seeds(e, safe),
        _ => vec![],
    }
}

/// Whether index `i` is a binder of `m` of size `n` (literal or named).
fn binder_size<'a>(m: &'a Mono, i: &str) -> Option<&'a Size> {
    m.binders.iter().find(|(j, _)| j == i).map(|(_, n)| n)
}

fn mentions(e: &Expr, i: &str) -> bool {
    fv_idx(e).contains(i)
}

/// `Σ_i ε_ijk ε_ilm → δ_jl δ_km − δ_jm δ_kl` on one monomial (i a binder of
/// range 3, in both symbols as a plain index and nowhere else): the two
/// monomials it becomes, or `None` when no pair of symbols matches. A range
/// guard `[0 ≤ j < 3 ∧ 0 ≤ k < 3]` is added unless j and k are binders of
/// range 3 (the rule `eps-eps` in the e-graph form).
fn eps_eps(m: &Mono) -> Option<Vec<Mono>> {
    let three = Size::Lit(3);
    for (p, fp) in m.factors.iter().enumerate() {
        let Expr::Eps(vp) = fp else { continue };
        if vp.len() != 3 {
            continue;
        }
        for (q, fq) in m.factors.iter().enumerate().skip(p + 1) {
            let Expr::Eps(vq) = fq else { continue };
            if vq.len() != 3 {
                continue;
            }
            for (bi, (i, n)) in m.binders.iter().enumerate() {
                if *n != three {
                    continue;
                }
                let pos = |v: &[Affine]| -> Option<usize> {
                    let at: Vec<usize> = (0..3).filter(|&k| v[k].vars().any(|x| x == i)).collect();
                    (at.len() == 1 && v[at[0]].as_var() == Some(i.as_str())).then(|| at[0])
                };
                let (Some(a), Some(b)) = (pos(vp), pos(vq)) else {
                    continue;
                };
                let others = m
                    .factors
                    .iter()
                    .enumerate()
                    .any(|(k, f)| k != p && k != q && mentions(f, i));
                if others {
                    continue;
                }
                // rotate so that i comes first (cyclic: the sign is kept)
                let (j, k) = (vp[(a + 1) % 3].clone(), vp[(a + 2) % 3].clone());
                let (l, mm) = (vq[(b + 1) % 3].clone(), vq[(b + 2) % 3].clone());
                let mut rest: Vec<Expr> = m
                    .factors
                    .iter()
                    .enumerate()
                    .filter(|(t, _)| *t != p && *t != q)
                    .map(|(_, f)| f.clone())
                    .collect();
                let in_range = |x: &Affine| {
                    x.as_var()
                        .and_then(|v| binder_size(m, v))
                        .is_some_and(|s| *s == three)
                };
                if !(in_range(&j) && in_range(&k)) {
                    let g = |x: &Affine| {
                        Pred::And(
                            Box::new(Pred::Cmp(CmpOp::Le, Affine::constant(0), x.clone())),
                            Box::new(Pred::Cmp(CmpOp::Lt, x.clone(), Affine::constant(3))),
                        )
                    };
                    rest.push(Expr::Bracket(Pred::And(Box::new(g(&j)), Box::new(g(&k)))));
                }
                let eq = |x: &Affine, y: &Affine| {
                    Expr::Bracket(Pred::Cmp(CmpOp::Eq, x.clone(), y.clone()))
                };
                let mut binders = m.binders.clone();
                binders.remove(bi);
                let mut f1 = rest.clone();
                f1.push(eq(&j, &l));
                f1.push(eq(&k, &mm));
                let mut f2 = rest;
                f2.push(eq(&j, &mm));
                f2.push(eq(&k, &l));
                return Some(vec![
                    Mono {
                        neg: m.neg,
                        binders: binders.clone(),
                        factors: f1,
                    },
                    Mono {
                        neg: !m.neg,
                        binders,
                        factors: f2,
                    },
                ]);
            }
        }
    }
    None
}

/// Sum collapse of a `[x = y]` factor for two binders of one size: `x` is
/// replaced by `y` everywhere (exact: `Σ_x [x = y] e = e{x ↦ y}` for `y` in
/// `x`'s range). Whether it did.
fn delta_collapse(m: &mut Mono) -> bool {
    for (p, f) in m.factors.iter().enumerate() {
        let Expr::Bracket(Pred::Cmp(CmpOp::Eq, a, b)) = f else {
            continue;
        };
        let (Some(x), Some(y)) = (a.as_var(), b.as_var()) else {
            continue;
        };
        if x == y {
            m.factors.remove(p);
            return true;
        }
        let (Some(sx), Some(sy)) = (binder_size(m, x), binder_size(m, y)) else {
            continue;
        };
        if sx != sy {
            continue;
        }
        let (x, y) = (x.to_string(), y.to_string());
        m.factors.remove(p);
        let mut fresh = crate::extract::normal::Fresh::default();
        let by = Affine::var(y);
        m.factors = m
            .factors
            .iter()
            .map(|f| crate::extract::normal::subst_idx(f, &x, &by, &mut fresh))
            .collect();
        m.binders.retain(|(i, _)| *i != x);
        return true;
    }
    false
}

/// An ε with a repeated plain index is 0.
fn has_zero_eps(m: &Mono) -> bool {
    m.factors.iter().any(|f| match f {
        Expr::Eps(v) => {
            (0..v.len()).any(|a| (a + 1..v.len()).any(|b| v[a] == v[b] && v[a].as_var().is_some()))
        }
        _ => false,
    })
}

/// The tensor network of a scalar expression reduced by ε–ε contraction
/// and δ collapse (the δ/ε identities of Diderot EIN §5.4 applied to the
/// multiplied-out monomials, where they match in one step instead of after
/// the long chains of sum swaps and associativity that bring the two
/// symbols together in the e-graph), and by collapsing `Σ_x [x = y]` for
/// two binders of one range. `None` when nothing reduces.
/// Equal to the input by construction (each step is an exact identity).
///
/// In safe mode (the optimiser's default) the input must be a single
/// monomial (`expand`), monomials holding a zero `eps` are kept (their
/// `0 · x` is NaN where `x` is infinite), and a plain `+ 0` ends the
/// result: the brackets the identities introduce are strong zeros where
/// the symbols they replace were plain ones.
pub fn reduce_scalar(e: &Expr, safe: bool) -> Option<Expr> {
    let mut monos = expand(e, safe)?;
    let mut changed = false;
    loop {
        let mut step = false;
        let mut next = Vec::new();
        for m in monos {
            match eps_eps(&m) {
                Some(ms) => {
                    changed = true;
                    step = true;
                    next.extend(ms);
                }
                None => next.push(m),
            }
        }
        for m in &mut next {
            while delta_collapse(m) {
                changed = true;
                step = true;
            }
        }
        if !safe {
            next.retain(|m| !has_zero_eps(m));
        }
        monos = next;
        if !step || monos.len() > 4 * MAX_MONOMIALS {
            break;
        }
    }
    if !changed {
        return None;
    }
    let orders: Vec<Vec<Vec<usize>>> = monos.iter().map(|m| perms(m.binders.len())).collect();
    let r = combine(&monos, &vec![0; monos.len()], &orders);
    Some(if safe {
        Expr::bin(BinOp::Add, r, Expr::Num(0.0))
    } else {
        r
    })
}

/// [`reduce_scalar`] under a body's leading `gen`s.
pub fn reduce_body(body: &Expr, ty: &Type, safe: bool) -> Option<Expr> {
    match (body, ty) {
        (Expr::Gen(i, n, b), Type::Tensor(_, t)) => {
            reduce_body(b, t, safe).map(|s| Expr::gen(i.clone(), n.clone(), s))
        }
        (Expr::Gen(..), _) => None,
        (e, Type::Real) => reduce_scalar(e, safe),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crossdot_has_the_eps_eps_nesting() {
        let f = &crate::load(
            "fn f(a: [3]R, b: [3]R, c: [3]R, d: [3]R) -> R =
             sum(i:3) (sum(j:3, k:3) eps[i,j,k] * a[j] * b[k]) * (sum(l:3, m:3) eps[i,l,m] * c[l] * d[m])",
        )
        .unwrap()
        .functions[0];
        let seeds = body_seeds(&f.body, &Type::Real, false);
        assert_eq!(seeds.len(), 120);
        let printed: Vec<String> = seeds
            .iter()
            .map(crate::syntax::printer::print_expr)
            .collect();
        assert!(
            printed
                .iter()
                .any(|p| p.contains("sum(i:3) eps[i, j, k] * eps[i, l, m]")),
            "{printed:#?}"
        );
        // every seed means the same
        for s in &seeds {
            let g = Function {
                body: s.clone(),
                ..f.clone()
            };
            let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(3);
            let args =
                crate::interp::random::random_inputs(f, &Default::default(), &mut rng).unwrap();
            let a = crate::interp::run(f, &args).unwrap();
            let b = crate::interp::run(&g, &args).unwrap();
            assert!(a.approx_eq(&b, 1e-9, 1e-12), "{a} vs {b}");
        }
    }

    #[test]
    fn repeated_binder_names_give_no_seeds() {
        // what inlining `let t = sum(j:2) x[j] in t * t` produces
        let j = || Expr::access(Expr::var("x"), Affine::var("j"));
        let s = || Expr::sum("j", Size::Lit(2), j());
        let e = Expr::bin(BinOp::Mul, s(), s());
        assert!(scalar_seeds(&e, false).is_empty());
        assert!(scalar_seeds(&e, true).is_empty());
    }

    #[test]
    fn non_polynomials_and_limits_give_no_seeds() {
        let f = &crate::load("fn f(x: [4]R) -> R = sum(i:4) sqrt(x[i])")
            .unwrap()
            .functions[0];
        assert!(body_seeds(&f.body, &Type::Real, false).is_empty());
        let big = "fn f(x: [2]R) -> R = (x[0]+x[1])*(x[0]+x[1])*(x[0]+x[1])*(x[0]+x[1])";
        let f = &crate::load(big).unwrap().functions[0];
        assert!(body_seeds(&f.body, &Type::Real, false).is_empty());
    }
}

#[cfg(test)]
mod long_products {
    use super::*;

    /// A product of thousands of factors is refused after [`MAX_FACTORS`]
    /// (linear, not quadratic: issue 22's 11,000 factors).
    #[test]
    fn long_products_give_no_seeds() {
        let x = |k: i64| Expr::access(Expr::var("x"), Affine::constant(k % 3));
        let e = (1..11_000).fold(x(0), |acc, k| Expr::bin(BinOp::Mul, acc, x(k)));
        let e = Expr::sum("i", Size::Lit(3), e);
        // deep trees are walked on a large stack, as the optimiser does
        crate::stack::roomy(move || {
            assert!(scalar_seeds(&e, true).is_empty());
            assert!(scalar_seeds(&e, false).is_empty());
            assert!(reduce_scalar(&e, true).is_none());
        });
    }
}

// ---------------------------------------------------------------------------
// Planned seeds: the contraction order of a tensor network from the
// planner (`crate::plan`), for networks of any size

/// A product under sums, read in linear time: every factor of a tree of `*`
/// (and negations) under its leading and nested sums, or `None` when the
/// expression is not one (a `+` inside, a binder name bound twice). A sum
/// inside the product whose range may be empty ([`takes_factors`]) is a
/// factor, whole: the plan would move the other factors into it.
fn read_network(e: &Expr) -> Option<Mono> {
    let mut m = Mono {
        neg: false,
        binders: vec![],
        factors: vec![],
    };
    let mut names: BTreeSet<String> = BTreeSet::new();
    // (each subterm with whether it is inside the product)
    let mut stack = vec![(e, false)];
    while let Some((x, inner)) = stack.pop() {
        match x {
            Expr::Bin(BinOp::Mul, a, b) => {
                stack.push((b, true));
                stack.push((a, true));
            }
            Expr::Neg(a) => {
                m.neg = !m.neg;
                stack.push((a, inner));
            }
            Expr::Sum(_, n, _) if inner && !takes_factors(n) => m.factors.push(x.clone()),
            Expr::Sum(i, n, b) => {
                if !names.insert(i.clone()) {
                    return None;
                }
                m.binders.push((i.clone(), n.clone()));
                stack.push((b, inner));
            }
            Expr::Bin(BinOp::Add | BinOp::Sub, ..) => return None,
            other => m.factors.push(other.clone()),
        }
    }
    // a factor must not use a binder's name for an index bound outside it
    // (inlined lets repeat binder names): refuse rather than capture
    for f in &m.factors {
        for i in fv_idx(f) {
            if names.contains(&i) && m.binders.iter().filter(|(j, _)| *j == i).count() != 1 {
                return None;
            }
        }
    }
    Some(m)
}

/// One planned tensor network of a body: the plan, the names of its index
/// ids, and its tensors (factors) as text, in the order the plan numbers
/// them.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PlannedNetwork {
    /// The contraction plan.
    pub plan: crate::plan::Plan,
    /// The name of each index id of the plan.
    pub indices: Vec<String>,
    /// Each input tensor of the plan, as written.
    pub tensors: Vec<String>,
}

/// `text` with internal names (`%j_12`) shown as their source names.
fn readable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(k) = rest.find('%') {
        out.push_str(&rest[..k]);
        let tail = &rest[k..];
        let end = tail[1..]
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .map_or(tail.len(), |e| e + 1);
        out.push_str(crate::extract::normal::source_name(&tail[..end]));
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// What plans a network: the planner's search, or a given path.
pub type Planner<'a> = dyn FnMut(&crate::plan::Network) -> Option<crate::plan::Plan> + 'a;

/// The planned nesting of one network: `Σ_{summed}` over each step's two
/// operands (or one), as the planner contracts them. `scope` holds the
/// enclosing `gen` indices with their sizes; `size` gives the planner a
/// size. `None` when `e` is not a network of at least three factors (two
/// with `min_factors` 2) or the planner refuses it.
pub fn planned_scalar(
    e: &Expr,
    scope: &[(String, Size)],
    size: &dyn Fn(&Size) -> u64,
    planner: &mut Planner<'_>,
    min_factors: usize,
) -> Option<(Expr, PlannedNetwork)> {
    let m = read_network(e)?;
    if m.factors.len() < min_factors.max(2) {
        return None;
    }
    // index ids: every binder and every enclosing index a factor uses
    let mut ids: Vec<(String, Size)> = Vec::new();
    let id_of = |name: &str, ids: &mut Vec<(String, Size)>| -> Option<usize> {
        if let Some(k) = ids.iter().position(|(n, _)| n == name) {
            return Some(k);
        }
        let s = m
            .binders
            .iter()
            .chain(scope.iter().rev())
            .find(|(n, _)| n == name)?
            .1
            .clone();
        ids.push((name.to_string(), s));
        Some(ids.len() - 1)
    };
    let binder_names: BTreeSet<&String> = m.binders.iter().map(|(n, _)| n).collect();
    let mut inputs = Vec::with_capacity(m.factors.len());
    let mut output: BTreeSet<usize> = BTreeSet::new();
    for f in &m.factors {
        let mut idx = Vec::new();
        for i in fv_idx(f) {
            let k = id_of(&i, &mut ids)?;
            if !binder_names.contains(&i) {
                output.insert(k);
            }
            idx.push(k);
        }
        inputs.push(idx);
    }
    // a binder no factor uses still sums (n copies): keep it in the nest
    let unused: Vec<(String, Size)> = m
        .binders
        .iter()
        .filter(|(n, _)| !ids.iter().any(|(i, _)| i == n))
        .cloned()
        .collect();
    let sizes: Vec<u64> = ids.iter().map(|(_, s)| size(s).max(1)).collect();
    let net = crate::plan::Network::new(inputs, output.into_iter().collect(), sizes).ok()?;
    let p = planner(&net)?;
    let mut nodes: Vec<Option<Expr>> = m.factors.iter().cloned().map(Some).collect();
    for s in &p.steps {
        let mut ops = s
            .operands
            .iter()
            .map(|&o| nodes.get_mut(o).and_then(Option::take));
        let first = ops.next()??;
        let body = match ops.next() {
            Some(second) => Expr::bin(BinOp::Mul, first, second?),
            None => first,
        };
        let body = s.summed.iter().rev().fold(body, |acc, &k| {
            Expr::sum(ids[k].0.clone(), ids[k].1.clone(), acc)
        });
        nodes.push(Some(body));
    }
    // what is left (one tensor, or disconnected parts the plan joined)
    let rest: Vec<Expr> = nodes.into_iter().flatten().collect();
    let mut r = product(rest);
    for (i, n) in unused.into_iter().rev() {
        r = Expr::sum(i, n, r);
    }
    if m.neg {
        r = Expr::Neg(Box::new(r));
    }
    let net = PlannedNetwork {
        plan: p,
        indices: ids
            .into_iter()
            .map(|(n, _)| crate::extract::normal::source_name(&n).to_string())
            .collect(),
        tensors: m
            .factors
            .iter()
            .map(|f| readable(&crate::syntax::printer::print_expr(f)))
            .collect(),
    };
    Some((r, net))
}

/// [`planned_scalar`] for a function body of type `ty`: under its leading
/// `gen`s, and in each operand of a `+`, `-` or negation; `None` when no
/// network was planned.
pub fn planned_body(
    body: &Expr,
    ty: &Type,
    size: &dyn Fn(&Size) -> u64,
    planner: &mut Planner<'_>,
    min_factors: usize,
) -> Option<(Expr, Vec<PlannedNetwork>)> {
    struct Go<'s, 'p, 'q> {
        size: &'s dyn Fn(&Size) -> u64,
        planner: &'p mut Planner<'q>,
        min_factors: usize,
        plans: Vec<PlannedNetwork>,
        scope: Vec<(String, Size)>,
    }
    impl Go<'_, '_, '_> {
        fn go(&mut self, e: &Expr, ty: &Type) -> Expr {
            match (e, ty) {
                (Expr::Gen(i, n, b), Type::Tensor(_, t)) => {
                    self.scope.push((i.clone(), n.clone()));
                    let b = self.go(b, t);
                    self.scope.pop();
                    Expr::gen(i.clone(), n.clone(), b)
                }
                (Expr::Bin(op @ (BinOp::Add | BinOp::Sub), a, b), Type::Real) => {
                    let a = self.go(a, ty);
                    let b = self.go(b, ty);
                    Expr::bin(*op, a, b)
                }
                (e, Type::Real) => {
                    let e = self.inside(e, false);
                    match planned_scalar(&e, &self.scope, self.size, self.planner, self.min_factors)
                    {
                        Some((r, p)) => {
                            self.plans.push(p);
                            r
                        }
                        None => e,
                    }
                }
                _ => e.clone(),
            }
        }

        /// `e` with the sums that [`read_network`] keeps whole (inside a
        /// product, a range that may be empty) planned, each a network of
        /// its own: `0.5 * sum(j:n) A[i,j] * …`. The binders of the sums
        /// above such a sum are indices of its network, as the enclosing
        /// `gen`s' are.
        fn inside(&mut self, e: &Expr, inner: bool) -> Expr {
            match e {
                Expr::Bin(BinOp::Mul, a, b) => {
                    Expr::bin(BinOp::Mul, self.inside(a, true), self.inside(b, true))
                }
                Expr::Neg(a) => Expr::Neg(Box::new(self.inside(a, inner))),
                // (a network of its own, its leading sums and all)
                Expr::Sum(_, n, _) if inner && !takes_factors(n) => self.go(e, &Type::Real),
                Expr::Sum(i, n, b) => {
                    self.scope.push((i.clone(), n.clone()));
                    let b = self.inside(b, inner);
                    self.scope.pop();
                    Expr::sum(i.clone(), n.clone(), b)
                }
                _ => e.clone(),
            }
        }
    }
    let mut g = Go {
        size,
        planner,
        min_factors,
        plans: Vec::new(),
        scope: Vec::new(),
    };
    let r = g.go(body, ty);
    (!g.plans.is_empty()).then_some((r, g.plans))
}

#[cfg(test)]
mod planned {
    use super::*;

    fn seed_of(src: &str) -> (Function, Expr, Vec<crate::plan::Plan>) {
        let f = crate::load(src).unwrap().functions.remove(0);
        let ty = crate::types::check(&f).unwrap().ret;
        let (e, p) = planned_body(
            &f.body,
            &ty,
            &|s| match s {
                Size::Lit(k) => *k as u64,
                Size::Named(_) => 8,
            },
            &mut |net| crate::plan::plan(net, &crate::plan::Options::default()).ok(),
            3,
        )
        .unwrap();
        (f, e, p.into_iter().map(|p| p.plan).collect())
    }

    #[test]
    fn a_ring_is_contracted_pairwise_and_means_the_same() {
        let (f, e, plans) = seed_of(
            "fn ring(A: [n,n]R, B: [n,n]R, C: [n,n]R, D: [n,n]R, E: [n,n]R) -> R =
               sum(a:n, b:n, c:n, d:n, e:n) A[a,b] * B[b,c] * C[c,d] * D[d,e] * E[e,a]",
        );
        assert_eq!(plans[0].steps.len(), 4);
        let g = Function {
            body: e.clone(),
            ..f.clone()
        };
        crate::types::check(&g).unwrap();
        let mut rng = <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(5);
        let sizes: crate::interp::Sizes = [("n".to_string(), 3)].into_iter().collect();
        let args = crate::interp::random::random_inputs(&f, &sizes, &mut rng).unwrap();
        let a = crate::interp::run(&f, &args).unwrap();
        let b = crate::interp::run(&g, &args).unwrap();
        assert!(a.approx_eq(&b, 1e-12, 1e-12), "{a} vs {b}");
        // nested sums, each over the indices one step sums
        let text = crate::syntax::printer::print_expr(&e);
        assert!(text.matches("sum(").count() >= 4, "{text}");
    }

    #[test]
    fn gens_and_additions_are_planned_inside() {
        let (f, e, plans) = seed_of(
            "fn g(A: [n,n]R, B: [n,n]R, x: [n]R, c: [n]R) -> [n]R =
               gen(i:n) c[i] + sum(j:n, k:n) A[i,j] * B[j,k] * x[k]",
        );
        assert_eq!(plans.len(), 1);
        let g = Function {
            body: e,
            ..f.clone()
        };
        assert_eq!(
            crate::types::check(&g).unwrap().ret,
            crate::types::check(&f).unwrap().ret
        );
    }
}
