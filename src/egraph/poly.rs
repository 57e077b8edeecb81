//! Algebraic simplification of scalar arithmetic: a normal form for sums of
//! monomials, used as a pass on the named IR (before saturation and on
//! every candidate program the optimiser extracts).
//!
//! A maximal subtree of `+`, `-`, `*`, negation and number literals is read
//! as a polynomial with `f64` coefficients over *atoms*: every other
//! subterm (loads, calls, sums, brackets, divisions, names, …), itself
//! simplified first and identified by its printed text. Like terms are
//! collected and cancel (`x*y - y*x` is 0, `(x-y)*(x+y) + y*y` is `x*x`);
//! the polynomial is written back factored greedily (the atom shared by the
//! most monomials is taken out first: `a*b + a*c` is `a*(b+c)`), and the
//! result replaces the subtree only when it has fewer arithmetic operations,
//! so a program with nothing to collect is left exactly as it was.
//!
//! Expansion is bounded ([`MAX_TERMS`] monomials at every step, degree at
//! most [`MAX_DEGREE`]): a subtree past the bounds is left as written (its
//! atoms still simplified). Nothing is added to the e-graph, which is why
//! this is a pass and not a rule family: the same identities by rewriting
//! need associativity and commutativity chains through every partial
//! product (measured in `tests/suite/algebra.rs`' notes and the README).
//!
//! **Policy on NaN and infinity** (REWRITES.md, `## Algebra`): like the
//! rules `sub-self` and `mul-zero`, cancellation assumes finite values
//! (`x - x` is 0 even where `x` is infinite). Brackets stay exact: a guard
//! `[p]` is an atom, kept as a factor of every monomial it multiplies, so
//! `[p] * e` remains 0 where `p` fails whatever `e` is; no rule here
//! removes or duplicates a bracket except by distributing it over a sum
//! (`[p]*(a+b)` = `[p]*a + [p]*b`, exact for strong zeros).

use crate::extract::normal::map_children;
use crate::syntax::ast::*;
use std::collections::BTreeMap;

/// At most this many monomials in a polynomial (at every step).
pub const MAX_TERMS: usize = 64;
/// At most this degree of a monomial.
pub const MAX_DEGREE: usize = 12;

/// A monomial: atom numbers, sorted, with repetition.
type Mono = Vec<usize>;

/// A polynomial: monomials with non-zero coefficients.
#[derive(Clone, Debug, Default, PartialEq)]
struct Poly(BTreeMap<Mono, f64>);

impl Poly {
    fn constant(c: f64) -> Poly {
        let mut p = Poly::default();
        if c != 0.0 {
            p.0.insert(vec![], c);
        }
        p
    }
    /// Every coefficient finite (literals are; products of large ones
    /// may overflow, and then the tree is left as written).
    fn finite(&self) -> bool {
        self.0.values().all(|c| c.is_finite())
    }
    fn atom(a: usize) -> Poly {
        let mut p = Poly::default();
        p.0.insert(vec![a], 1.0);
        p
    }
    fn add_scaled(mut self, o: &Poly, s: f64) -> Option<Poly> {
        for (m, c) in &o.0 {
            let e = self.0.entry(m.clone()).or_insert(0.0);
            *e += s * c;
            if *e == 0.0 {
                self.0.remove(m);
            }
        }
        (self.0.len() <= MAX_TERMS).then_some(self)
    }
    fn mul(&self, o: &Poly) -> Option<Poly> {
        let mut r = Poly::default();
        for (m1, c1) in &self.0 {
            for (m2, c2) in &o.0 {
                let mut m = m1.clone();
                m.extend(m2.iter().copied());
                if m.len() > MAX_DEGREE {
                    return None;
                }
                m.sort_unstable();
                let c = c1 * c2;
                if !c.is_finite() || (c == 0.0 && *c1 != 0.0 && *c2 != 0.0) {
                    // the coefficients' product overflows or underflows:
                    // no constant the written order would make
                    return None;
                }
                let e = r.0.entry(m.clone()).or_insert(0.0);
                *e += c;
                if *e == 0.0 {
                    r.0.remove(&m);
                }
                if r.0.len() > MAX_TERMS {
                    return None;
                }
            }
        }
        Some(r)
    }
}

/// The atoms of one arithmetic tree, numbered by first occurrence.
#[derive(Default)]
struct Atoms {
    by_key: BTreeMap<String, usize>,
    exprs: Vec<Expr>,
}

impl Atoms {
    fn intern(&mut self, e: Expr) -> usize {
        let key = crate::syntax::printer::print_expr(&e);
        if let Some(k) = self.by_key.get(&key) {
            return *k;
        }
        let k = self.exprs.len();
        self.by_key.insert(key, k);
        self.exprs.push(e);
        k
    }
}

fn is_arith(e: &Expr) -> bool {
    matches!(
        e,
        Expr::Bin(BinOp::Add | BinOp::Sub | BinOp::Mul, _, _) | Expr::Neg(_)
    )
}

/// Arithmetic operations of a tree (atoms count nothing).
fn ops(e: &Expr) -> usize {
    match e {
        Expr::Bin(BinOp::Add | BinOp::Sub | BinOp::Mul, a, b) => 1 + ops(a) + ops(b),
        Expr::Neg(a) => 1 + ops(a),
        _ => 0,
    }
}

/// Read an arithmetic tree as a polynomial; `None` past the bounds.
fn poly_of(e: &Expr, atoms: &mut Atoms) -> Option<Poly> {
    crate::stack::deep(|| poly_of_here(e, atoms))
}

fn poly_of_here(e: &Expr, atoms: &mut Atoms) -> Option<Poly> {
    Some(match e {
        Expr::Num(c) => Poly::constant(*c),
        Expr::Bin(BinOp::Add, a, b) => poly_of(a, atoms)?.add_scaled(&poly_of(b, atoms)?, 1.0)?,
        Expr::Bin(BinOp::Sub, a, b) => poly_of(a, atoms)?.add_scaled(&poly_of(b, atoms)?, -1.0)?,
        Expr::Bin(BinOp::Mul, a, b) => poly_of(a, atoms)?.mul(&poly_of(b, atoms)?)?,
        Expr::Neg(a) => Poly::default().add_scaled(&poly_of(a, atoms)?, -1.0)?,
        other => Poly::atom(atoms.intern(simplify(other))),
    })
}

fn product(atoms: &Atoms, m: &[usize]) -> Option<Expr> {
    m.iter()
        .map(|&a| atoms.exprs[a].clone())
        .reduce(|x, y| Expr::bin(BinOp::Mul, x, y))
}

/// A monomial with a non-negative coefficient `c`.
fn term(atoms: &Atoms, c: f64, m: &[usize]) -> Expr {
    match (product(atoms, m), c == 1.0) {
        (None, _) => Expr::Num(c),
        (Some(p), true) => p,
        (Some(p), false) => Expr::bin(BinOp::Mul, Expr::Num(c), p),
    }
}

/// `acc + sign * t`, with `acc` possibly absent.
fn add_signed(acc: Option<Expr>, t: Expr, neg: bool) -> Expr {
    match (acc, neg) {
        (None, false) => t,
        (None, true) => Expr::Neg(Box::new(t)),
        (Some(a), false) => Expr::bin(BinOp::Add, a, t),
        (Some(a), true) => Expr::bin(BinOp::Sub, a, t),
    }
}

/// Write a polynomial back, factoring greedily; `(expr, negated)`: the
/// expression stands for the polynomial, or for its negation when the flag
/// is set (so a caller can subtract instead of negating).
fn emit(p: &Poly, atoms: &Atoms) -> (Expr, bool) {
    if p.0.is_empty() {
        return (Expr::Num(0.0), false);
    }
    // the atom in the most monomials (ties: the first atom)
    let mut count: BTreeMap<usize, usize> = BTreeMap::new();
    for m in p.0.keys() {
        let mut seen = m.clone();
        seen.dedup();
        for a in seen {
            *count.entry(a).or_insert(0) += 1;
        }
    }
    let best = count
        .iter()
        .filter(|(_, n)| **n >= 2)
        .max_by(|x, y| x.1.cmp(y.1).then(y.0.cmp(x.0)))
        .map(|(a, _)| *a);
    let Some(a) = best else {
        // a plain sum: positive terms first
        let mut terms: Vec<(&Mono, f64)> = p.0.iter().map(|(m, c)| (m, *c)).collect();
        terms.sort_by_key(|t| t.1 < 0.0);
        let all_neg = terms.iter().all(|(_, c)| *c < 0.0);
        let mut acc = None;
        for (m, c) in terms {
            let neg = (c < 0.0) != all_neg;
            acc = Some(add_signed(acc, term(atoms, c.abs(), m), neg));
        }
        return (acc.unwrap(), all_neg);
    };
    let mut q = Poly::default();
    let mut r = Poly::default();
    for (m, c) in &p.0 {
        if let Some(k) = m.iter().position(|x| *x == a) {
            let mut m2 = m.clone();
            m2.remove(k);
            q.0.insert(m2, *c);
        } else {
            r.0.insert(m.clone(), *c);
        }
    }
    let (qe, qneg) = emit(&q, atoms);
    let head = match &qe {
        Expr::Num(c) if *c == 1.0 => atoms.exprs[a].clone(),
        _ => Expr::bin(BinOp::Mul, atoms.exprs[a].clone(), qe),
    };
    if r.0.is_empty() {
        return (head, qneg);
    }
    let (re, rneg) = emit(&r, atoms);
    // head stands for ±a*q, re for ±r
    (
        match (qneg, rneg) {
            (false, false) => Expr::bin(BinOp::Add, head, re),
            (false, true) => Expr::bin(BinOp::Sub, head, re),
            (true, false) => Expr::bin(BinOp::Sub, re, head),
            (true, true) => Expr::bin(BinOp::Add, head, re),
        },
        qneg && rneg,
    )
}

/// Simplify an arithmetic tree; `None` when it is past the bounds.
fn simplify_arith(e: &Expr) -> Option<Expr> {
    let mut atoms = Atoms::default();
    let p = poly_of(e, &mut atoms)?;
    if !p.finite() {
        return None;
    }
    let (x, neg) = emit(&p, &atoms);
    Some(if neg { Expr::Neg(Box::new(x)) } else { x })
}

/// Simplify every maximal arithmetic subtree of `e` (see the module
/// documentation); a subtree is replaced only by one with fewer
/// arithmetic operations.
pub fn simplify(e: &Expr) -> Expr {
    crate::stack::deep(|| {
        if is_arith(e) {
            if let Some(s) = simplify_arith(e) {
                if ops(&s) < ops(e) {
                    return s;
                }
            }
            // keep the tree, simplify its atoms
            return map_arith_atoms(e);
        }
        map_children(e, &mut simplify)
    })
}

fn map_arith_atoms(e: &Expr) -> Expr {
    crate::stack::deep(|| {
        if is_arith(e) {
            map_children(e, &mut map_arith_atoms)
        } else {
            simplify(e)
        }
    })
}

/// At most this many ways of fusing sums are tried per arithmetic tree.
pub const MAX_FUSIONS: usize = 16;

/// Sum fusion: in a polynomial whose monomials hold sums over one range,
/// `c1 * r1 * Σ_i x1 + c2 * r2 * Σ_j x2` is `Σ_i (c1 * r1 * x1 + c2 * r2 *
/// x2{j ↦ i})` (exact: the factors outside are loop-invariant, and the
/// post-pass hoists them into `let`s). One loop instead of two, and the
/// bodies' common factors can then be taken out (`(a×b)·(c×d)`'s
/// `t0 * Σ c a - t1 * Σ c b` is `Σ c * (t0 * a - t1 * b)`). Every way of
/// choosing at most one sum per monomial (at least two monomials fused,
/// up to [`MAX_FUSIONS`]) is returned, simplified; the caller keeps the
/// cheapest by the cost model. `e` is an arithmetic tree.
pub fn fusions(e: &Expr) -> Vec<Expr> {
    let mut atoms = Atoms::default();
    let Some(p) = poly_of(e, &mut atoms).filter(Poly::finite) else {
        return vec![];
    };
    let monos: Vec<(&Mono, f64)> = p.0.iter().map(|(m, c)| (m, *c)).collect();
    let sizes: std::collections::BTreeSet<Size> = atoms
        .exprs
        .iter()
        .filter_map(|a| match a {
            Expr::Sum(_, n, _) => Some(n.clone()),
            _ => None,
        })
        .collect();
    let mut out = Vec::new();
    for n in sizes {
        // per monomial: the positions of its sums over n
        let opts: Vec<Vec<usize>> = monos
            .iter()
            .map(|(m, _)| {
                let mut v: Vec<usize> = (0..m.len())
                    .filter(|&k| matches!(&atoms.exprs[m[k]], Expr::Sum(_, s, _) if *s == n))
                    .collect();
                v.dedup_by_key(|k| m[*k]);
                v
            })
            .collect();
        let combos: usize = opts
            .iter()
            .try_fold(1usize, |acc, v| acc.checked_mul(v.len() + 1))
            .unwrap_or(usize::MAX);
        if combos > MAX_FUSIONS || opts.iter().filter(|v| !v.is_empty()).count() < 2 {
            continue;
        }
        // a binder name free nowhere in the tree
        let used = crate::extract::normal::fv_idx(e);
        let name = (0..)
            .map(|k| format!("f{k}"))
            .find(|x| !used.contains(x))
            .unwrap();
        for c in 0..combos {
            let mut code = c;
            let mut inside: Option<Expr> = None;
            let mut outside: Option<Expr> = None;
            let mut fused = 0;
            for (k, (m, coef)) in monos.iter().enumerate() {
                let choice = code % (opts[k].len() + 1);
                code /= opts[k].len() + 1;
                if choice == 0 {
                    let t = term(&atoms, coef.abs(), m);
                    outside = Some(add_signed(outside, t, *coef < 0.0));
                    continue;
                }
                fused += 1;
                let pos = opts[k][choice - 1];
                let Expr::Sum(i, _, body) = &atoms.exprs[m[pos]] else {
                    unreachable!("chosen atoms are sums")
                };
                let mut fresh = crate::extract::normal::Fresh::default();
                let body = crate::extract::normal::subst_idx(
                    body,
                    i,
                    &Affine::var(name.clone()),
                    &mut fresh,
                );
                let mut rest: Vec<usize> = m.to_vec();
                rest.remove(pos);
                let t = match product(&atoms, &rest) {
                    Some(r) => Expr::bin(BinOp::Mul, r, body),
                    None => body,
                };
                let t = if coef.abs() == 1.0 {
                    t
                } else {
                    Expr::bin(BinOp::Mul, Expr::Num(coef.abs()), t)
                };
                inside = Some(add_signed(inside, t, *coef < 0.0));
            }
            if fused < 2 {
                continue;
            }
            let s = Expr::sum(name.clone(), n.clone(), inside.unwrap());
            let whole = match outside {
                None => s,
                Some(o) => Expr::bin(BinOp::Add, o, s),
            };
            out.push(simplify(&whole));
        }
    }
    out
}

/// [`fusions`] of the scalar body of a normal-form program (under its
/// `let` bodies and leading `gen`s), each in place of the body.
pub fn body_fusions(e: &Expr) -> Vec<Expr> {
    match e {
        Expr::Let(x, a, b) => body_fusions(b)
            .into_iter()
            .map(|b| Expr::let_(x.clone(), (**a).clone(), b))
            .collect(),
        Expr::Gen(i, n, b) => body_fusions(b)
            .into_iter()
            .map(|b| Expr::gen(i.clone(), n.clone(), b))
            .collect(),
        e if is_arith(e) => fusions(e),
        _ => vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::printer::print_expr;

    fn simp(src: &str) -> String {
        let f = &crate::load(src).unwrap().functions[0];
        print_expr(&simplify(&f.body))
    }

    #[test]
    fn difference_of_squares() {
        assert_eq!(
            simp("fn f(x: R, y: R) -> R = (x - y) * (x + y) + y * y"),
            "x * x"
        );
        assert_eq!(simp("fn f(x: R, y: R) -> R = x * y - y * x"), "0");
    }

    #[test]
    fn factors_and_leaves_plain_sums() {
        assert_eq!(
            simp("fn f(a: R, b: R, c: R) -> R = a * b + c * a"),
            "a * (b + c)"
        );
        assert_eq!(simp("fn f(a: R, b: R) -> R = a - b"), "a - b");
        assert_eq!(simp("fn f(a: R, b: R) -> R = -a - b"), "-a - b");
        // overflowing coefficients: left as written
        let big = "fn f(a: R) -> R = 1e200 * a * 1e200 - a * 1e300 * 1e300";
        let f = &crate::load(big).unwrap().functions[0];
        assert_eq!(simplify(&f.body), f.body);
    }

    #[test]
    fn fusing_sums_of_one_range() {
        let f = &crate::load(
            "fn f(a: [3]R, b: [3]R, c: [3]R, t: R, u: R) -> R =
             t * (sum(i:3) c[i] * a[i]) - u * sum(j:3) b[j] * c[j]",
        )
        .unwrap()
        .functions[0];
        let fs: Vec<String> = fusions(&f.body).iter().map(print_expr).collect();
        assert_eq!(fs, ["sum(f0:3) c[f0] * (t * a[f0] - u * b[f0])"]);
    }
}
