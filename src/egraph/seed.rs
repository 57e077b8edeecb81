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

use crate::extract::normal::fv_idx;
use crate::syntax::ast::*;
use std::collections::BTreeSet;

/// At most this many monomials after multiplying out.
pub const MAX_MONOMIALS: usize = 8;
/// At most this many summation indices in one monomial (5! orders).
pub const MAX_BINDERS: usize = 5;
/// At most this many seeds per body.
pub const MAX_SEEDS: usize = 160;

#[derive(Clone, Debug)]
struct Mono {
    neg: bool,
    binders: Vec<(String, Size)>,
    factors: Vec<Expr>,
}

fn expand(e: &Expr) -> Option<Vec<Mono>> {
    let out = match e {
        Expr::Bin(BinOp::Add, a, b) => {
            let mut v = expand(a)?;
            v.extend(expand(b)?);
            v
        }
        Expr::Bin(BinOp::Sub, a, b) => {
            let mut v = expand(a)?;
            v.extend(expand(b)?.into_iter().map(|m| Mono { neg: !m.neg, ..m }));
            v
        }
        Expr::Neg(a) => expand(a)?
            .into_iter()
            .map(|m| Mono { neg: !m.neg, ..m })
            .collect(),
        Expr::Bin(BinOp::Mul, a, b) => {
            let (va, vb) = (expand(a)?, expand(b)?);
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
            let mut v = expand(b)?;
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
    if out.len() > MAX_MONOMIALS || out.iter().any(|m| m.binders.len() > MAX_BINDERS) {
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
/// to reorder.
pub fn scalar_seeds(e: &Expr) -> Vec<Expr> {
    let Some(monos) = expand(e) else {
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

/// Seeds for a function body of type `ty`: under leading `gen`s (kept
/// around each seed), a body of real type is seeded by [`scalar_seeds`].
pub fn body_seeds(body: &Expr, ty: &Type) -> Vec<Expr> {
    match (body, ty) {
        (Expr::Gen(i, n, b), Type::Tensor(_, t)) => body_seeds(b, t)
            .into_iter()
            .map(|s| Expr::gen(i.clone(), n.clone(), s))
            .collect(),
        (Expr::Gen(..), _) => vec![],
        (e, Type::Real) => scalar_seeds(e),
        _ => vec![],
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
        let seeds = body_seeds(&f.body, &Type::Real);
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
        assert!(scalar_seeds(&e).is_empty());
    }

    #[test]
    fn non_polynomials_and_limits_give_no_seeds() {
        let f = &crate::load("fn f(x: [4]R) -> R = sum(i:4) sqrt(x[i])")
            .unwrap()
            .functions[0];
        assert!(body_seeds(&f.body, &Type::Real).is_empty());
        let big = "fn f(x: [2]R) -> R = (x[0]+x[1])*(x[0]+x[1])*(x[0]+x[1])*(x[0]+x[1])";
        let f = &crate::load(big).unwrap().functions[0];
        assert!(body_seeds(&f.body, &Type::Real).is_empty());
    }
}
