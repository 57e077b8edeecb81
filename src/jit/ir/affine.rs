//! Arithmetic on the IR's affine indices ([`IndexExpr`]) and guards
//! ([`Cond`]): coefficients, scaling, solving a comparison for one
//! variable, conjuncts, renaming. Pure functions; no decisions.

use super::{Cond, IndexExpr};
use crate::syntax::ast::CmpOp;
use std::collections::BTreeSet;

/// The coefficient of `v` in `a`.
pub fn coef(a: &IndexExpr, v: usize) -> i64 {
    a.terms
        .iter()
        .filter(|(x, _)| *x == v)
        .map(|(_, c)| c)
        .sum()
}

/// `a` without its `v` terms.
pub fn without(a: &IndexExpr, v: usize) -> IndexExpr {
    IndexExpr {
        terms: a.terms.iter().filter(|(x, _)| *x != v).cloned().collect(),
        constant: a.constant,
    }
}

/// `k * a`.
pub fn scale(a: &IndexExpr, k: i64) -> IndexExpr {
    IndexExpr {
        terms: a.terms.iter().map(|(x, c)| (*x, c * k)).collect(),
        constant: a.constant * k,
    }
}

pub fn sub(a: &IndexExpr, b: &IndexExpr) -> IndexExpr {
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
    IndexExpr {
        terms: merged,
        constant: a.constant - b.constant,
    }
}

/// `a` with its terms merged, zeros dropped, sorted by variable.
pub fn canon(a: &IndexExpr) -> IndexExpr {
    let mut terms: Vec<(usize, i64)> = Vec::new();
    for (x, c) in &a.terms {
        match terms.iter_mut().find(|(y, _)| y == x) {
            Some(e) => e.1 += c,
            None => terms.push((*x, *c)),
        }
    }
    terms.retain(|(_, c)| *c != 0);
    terms.sort_unstable();
    IndexExpr {
        terms,
        constant: a.constant,
    }
}

pub fn aff_vars(a: &IndexExpr, out: &mut BTreeSet<usize>) {
    out.extend(a.terms.iter().filter(|(_, c)| *c != 0).map(|(x, _)| *x));
}

pub fn pred_vars(p: &Cond, out: &mut BTreeSet<usize>) {
    match p {
        Cond::Cmp(_, a, b) => {
            aff_vars(a, out);
            aff_vars(b, out);
        }
        Cond::And(a, b) | Cond::Or(a, b) => {
            pred_vars(a, out);
            pred_vars(b, out);
        }
        Cond::Not(a) => pred_vars(a, out),
    }
}

pub fn rename_aff(a: &IndexExpr, map: &[(usize, usize)]) -> IndexExpr {
    IndexExpr {
        terms: a
            .terms
            .iter()
            .map(|(x, c)| (map.iter().find(|(f, _)| f == x).map_or(*x, |m| m.1), *c))
            .collect(),
        constant: a.constant,
    }
}

pub fn rename_pred(p: &Cond, map: &[(usize, usize)]) -> Cond {
    match p {
        Cond::Cmp(op, a, b) => Cond::Cmp(*op, rename_aff(a, map), rename_aff(b, map)),
        Cond::And(a, b) => Cond::And(Box::new(rename_pred(a, map)), Box::new(rename_pred(b, map))),
        Cond::Or(a, b) => Cond::Or(Box::new(rename_pred(a, map)), Box::new(rename_pred(b, map))),
        Cond::Not(a) => Cond::Not(Box::new(rename_pred(a, map))),
    }
}

/// The bounds a comparison puts on `v` when it solves for `v` with
/// coefficient ±1: `(lo, hi)` (half-open).
pub fn solve(
    op: CmpOp,
    a: &IndexExpr,
    b: &IndexExpr,
    v: usize,
) -> Option<(Option<IndexExpr>, Option<IndexExpr>)> {
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
    let plus = |k: i64| IndexExpr {
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

pub fn conjuncts(p: Cond, out: &mut Vec<Cond>) {
    match p {
        Cond::And(a, b) => {
            conjuncts(*a, out);
            conjuncts(*b, out);
        }
        Cond::Not(a) => match *a {
            Cond::Cmp(op, x, y) => out.push(Cond::Cmp(
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
            Cond::Not(b) => conjuncts(*b, out),
            other => out.push(Cond::Not(Box::new(other))),
        },
        p => out.push(p),
    }
}
