//! Reuse of `let` temporaries ([`reuse_temps`]): a subterm of a later
//! nest that is an earlier temporary's whole body loads the temporary
//! instead. A program-level pass of the scheduling stage; it rewrites the
//! IR and must not look at layouts or generate code.

use crate::jit::ir::affine::canon;
use crate::jit::ir::walk::{rename, s_any};
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
    let loaded_before = loaded(p);
    for k in 1..p.nests.len() {
        let temps = reusable(p, k);
        if temps.is_empty() {
            continue;
        }
        let aliases = aliases(p, k);
        let nest = &p.nests[k];
        let mut scope = nest.vars.clone();
        let body = reuse_in(&nest.body, &temps, &aliases, &mut scope);
        p.nests[k].body = body;
    }
    // a temporary no longer loaded anywhere (every load of it became a
    // load of another): its nest is not run
    let loaded_after = loaded(p);
    p.nests.retain(|n| {
        !(matches!(p.bufs[n.buf].kind, BufKind::Temp)
            && p.bufs[n.buf].flag.is_none()
            && loaded_before.contains(&n.buf)
            && !loaded_after.contains(&n.buf))
    });
}

/// The buffers some nest loads.
fn loaded(p: &LoopProgram) -> std::collections::BTreeSet<usize> {
    fn go(s: &Scalar, out: &mut std::collections::BTreeSet<usize>) {
        match s {
            Scalar::Load(b, _) => {
                out.insert(*b);
            }
            Scalar::Gather(b, _, dyns) => {
                out.insert(*b);
                for (_, g, _) in dyns {
                    go(g, out);
                }
            }
            Scalar::Bin(_, a, b) => {
                go(a, out);
                go(b, out);
            }
            Scalar::Neg(a) | Scalar::Sum(_, _, a) | Scalar::Reduce(_, _, _, a) => go(a, out),
            Scalar::Call(_, args) | Scalar::Select(_, args) => {
                for a in args {
                    go(a, out);
                }
            }
            Scalar::Fold(f) => {
                for a in f.init.iter().chain(&f.body) {
                    go(a, out);
                }
            }
            _ => {}
        }
    }
    let mut out = std::collections::BTreeSet::new();
    for n in &p.nests {
        go(&n.body, &mut out);
    }
    out
}

/// The `let` temporaries before nest `upto` that are another name for a
/// cheap elementwise expression (`let t3 = gen(i,j) t0[i,j] / 8`: no
/// reduction, call or gather, no strong zeros, no column sum): a load of
/// one matches the temporary's body with its variables bound to the
/// load's ([`match_s`]), so `exp(t3[i,j] - m[i])` is found to be
/// `exp(t0[i,j] / 8 - m[i])`, the same operations on the same values.
fn aliases(p: &LoopProgram, upto: usize) -> Vec<(usize, &Nest)> {
    p.nests[..upto]
        .iter()
        .filter(|n| {
            matches!(p.bufs[n.buf].kind, BufKind::Temp)
                && p.bufs[n.buf].flag.is_none()
                && !p.cols.iter().any(|c| c.buf == n.buf)
                && !s_any(&n.body, &|x| {
                    matches!(
                        x,
                        Scalar::Call(..)
                            | Scalar::Sum(..)
                            | Scalar::Reduce(..)
                            | Scalar::Fold(..)
                            | Scalar::Acc(..)
                            | Scalar::Gather(..)
                            | Scalar::Select(..)
                    )
                })
        })
        .map(|n| (n.buf, n))
        .collect()
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

fn reuse_in(
    s: &Scalar,
    temps: &[(usize, &Nest)],
    aliases: &[(usize, &Nest)],
    scope: &mut Vec<(usize, SizeRef)>,
) -> Scalar {
    for (buf, t) in temps {
        let mut map = Vec::new();
        if !match_s(&t.body, s, &mut map, aliases) {
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
            Box::new(reuse_in(a, temps, aliases, scope)),
            Box::new(reuse_in(b, temps, aliases, scope)),
        ),
        Scalar::Neg(a) => Scalar::Neg(Box::new(reuse_in(a, temps, aliases, scope))),
        Scalar::Call(f, args) => Scalar::Call(
            *f,
            args.iter()
                .map(|a| reuse_in(a, temps, aliases, scope))
                .collect(),
        ),
        Scalar::Sum(v, n, b) => {
            scope.push((*v, n.clone()));
            let b = reuse_in(b, temps, aliases, scope);
            scope.pop();
            Scalar::Sum(*v, n.clone(), Box::new(b))
        }
        s => s.clone(),
    }
}

/// Whether the temporary's body `a` is the consumer's subterm `b` under
/// `map` (the temporary's variables to the consumer's; sum variables
/// matched binder to binder).
fn match_s(
    a: &Scalar,
    b: &Scalar,
    map: &mut Vec<(usize, usize)>,
    aliases: &[(usize, &Nest)],
) -> bool {
    // a load of an alias ([`aliases`]) in the consumer: its body there
    if let Scalar::Load(tb, ixs) = b {
        let same_load = matches!(a, Scalar::Load(ta, _) if ta == tb);
        if let Some((_, t)) = aliases.iter().find(|(x, _)| x == tb).filter(|_| !same_load) {
            return expand(t, ixs).is_some_and(|e| match_s(a, &e, map, aliases));
        }
    }
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
            o1 == o2 && match_s(a1, a2, map, aliases) && match_s(b1, b2, map, aliases)
        }
        (Scalar::Neg(x), Scalar::Neg(y)) => match_s(x, y, map, aliases),
        (Scalar::Call(f, xs), Scalar::Call(g, ys)) => {
            f == g
                && xs.len() == ys.len()
                && xs.iter().zip(ys).all(|(x, y)| match_s(x, y, map, aliases))
        }
        (Scalar::Sum(v, n, x), Scalar::Sum(w, m, y)) => {
            if n != m || map.iter().any(|(f, t)| f == v || t == w) {
                return false;
            }
            map.push((*v, *w));
            let ok = match_s(x, y, map, aliases);
            map.retain(|(f, _)| f != v);
            ok
        }
        _ => false,
    }
}

/// The body of alias `t` with its variables bound to the plain indices
/// `ixs` of a load of it (each a variable with the axis's range); `None`
/// for any other index.
fn expand(t: &Nest, ixs: &[LoadIndex]) -> Option<Scalar> {
    if ixs.len() != t.vars.len() {
        return None;
    }
    let mut map = Vec::with_capacity(ixs.len());
    for (ix, (v, n)) in ixs.iter().zip(&t.vars) {
        match (ix.checked, ix.aff.constant, ix.aff.terms.as_slice()) {
            (false, 0, [(w, 1)]) if ix.dim == *n => map.push((*v, *w)),
            _ => return None,
        }
    }
    Some(rename(&t.body, &map))
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
