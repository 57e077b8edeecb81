//! Reuse of `let` temporaries ([`reuse_temps`]): a subterm of a later
//! nest that is an earlier temporary's whole body loads the temporary
//! instead. A program-level pass of the scheduling stage; it rewrites the
//! IR and must not look at layouts or generate code.

use crate::jit::ir::affine::canon;
use crate::jit::ir::walk::s_any;
use crate::jit::ir::{BufKind, Cond, IndexExpr, LoadIndex, LoopProgram, Nest, Scalar, SizeRef};

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

/// The `let` temporaries of `p` worth reusing: buffer, the nest's
/// variables and body (a call inside: what reuse saves), no strong zeros.
fn reusable(p: &LoopProgram, upto: usize) -> Vec<(usize, &Nest)> {
    p.nests[..upto]
        .iter()
        .filter(|n| {
            matches!(p.bufs[n.buf].kind, BufKind::Temp)
                && p.bufs[n.buf].flag.is_none()
                && !p.cols.iter().any(|c| c.buf == n.buf)
                && s_any(&n.body, &|x| matches!(x, Scalar::Call(..)))
        })
        .map(|n| (n.buf, n))
        .collect()
}

fn reuse_in(s: &Scalar, temps: &[(usize, &Nest)], scope: &mut Vec<(usize, SizeRef)>) -> Scalar {
    for (buf, t) in temps {
        let mut map = Vec::new();
        if !match_s(&t.body, s, &mut map) {
            continue;
        }
        // every gen variable of the temporary is bound to a variable in
        // scope whose loop has the axis's range (a plain, unchecked index)
        let ixs: Option<Vec<LoadIndex>> = t
            .vars
            .iter()
            .map(|(v, n)| {
                let (_, w) = map.iter().find(|(f, _)| f == v)?;
                let (_, m) = scope.iter().rev().find(|(x, _)| x == w)?;
                (m == n).then(|| LoadIndex {
                    aff: IndexExpr {
                        terms: vec![(*w, 1)],
                        constant: 0,
                    },
                    dim: n.clone(),
                    checked: false,
                })
            })
            .collect();
        if let Some(ixs) = ixs {
            return Scalar::Load(*buf, ixs);
        }
    }
    match s {
        Scalar::Bin(op, a, b) => Scalar::Bin(
            *op,
            Box::new(reuse_in(a, temps, scope)),
            Box::new(reuse_in(b, temps, scope)),
        ),
        Scalar::Neg(a) => Scalar::Neg(Box::new(reuse_in(a, temps, scope))),
        Scalar::Call(f, args) => {
            Scalar::Call(*f, args.iter().map(|a| reuse_in(a, temps, scope)).collect())
        }
        Scalar::Sum(v, n, b) => {
            scope.push((*v, n.clone()));
            let b = reuse_in(b, temps, scope);
            scope.pop();
            Scalar::Sum(*v, n.clone(), Box::new(b))
        }
        s => s.clone(),
    }
}

/// Whether the temporary's body `a` is the consumer's subterm `b` under
/// `map` (the temporary's variables to the consumer's; sum variables
/// matched binder to binder).
fn match_s(a: &Scalar, b: &Scalar, map: &mut Vec<(usize, usize)>) -> bool {
    match (a, b) {
        (Scalar::Num(x), Scalar::Num(y)) => x.to_bits() == y.to_bits(),
        (Scalar::Load(b1, i1), Scalar::Load(b2, i2)) => {
            b1 == b2
                && i1.len() == i2.len()
                && i1
                    .iter()
                    .zip(i2)
                    .all(|(x, y)| x.dim == y.dim && match_aff(&x.aff, &y.aff, map))
        }
        (Scalar::Bracket(p), Scalar::Bracket(q)) => match_pred(p, q, map),
        (Scalar::Eps(u), Scalar::Eps(v)) => {
            u.len() == v.len() && u.iter().zip(v).all(|(x, y)| match_aff(x, y, map))
        }
        (Scalar::Bin(o1, a1, b1), Scalar::Bin(o2, a2, b2)) => {
            o1 == o2 && match_s(a1, a2, map) && match_s(b1, b2, map)
        }
        (Scalar::Neg(x), Scalar::Neg(y)) => match_s(x, y, map),
        (Scalar::Call(f, xs), Scalar::Call(g, ys)) => {
            f == g && xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| match_s(x, y, map))
        }
        (Scalar::Sum(v, n, x), Scalar::Sum(w, m, y)) => {
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

fn match_pred(a: &Cond, b: &Cond, map: &mut Vec<(usize, usize)>) -> bool {
    match (a, b) {
        (Cond::Cmp(o1, a1, b1), Cond::Cmp(o2, a2, b2)) => {
            o1 == o2 && match_aff(a1, a2, map) && match_aff(b1, b2, map)
        }
        (Cond::And(a1, b1), Cond::And(a2, b2)) | (Cond::Or(a1, b1), Cond::Or(a2, b2)) => {
            match_pred(a1, a2, map) && match_pred(b1, b2, map)
        }
        (Cond::Not(a1), Cond::Not(a2)) => match_pred(a1, a2, map),
        _ => false,
    }
}

/// Whether `a` (over the temporary's variables) is `b` (over the
/// consumer's) under `map`, binding unmapped variables of `a` on the way.
fn match_aff(a: &IndexExpr, b: &IndexExpr, map: &mut Vec<(usize, usize)>) -> bool {
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
    let mapped = canon(&IndexExpr {
        terms,
        constant: a.constant,
    });
    let b = canon(b);
    mapped.terms == b.terms && mapped.constant == b.constant
}
