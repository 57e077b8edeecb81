//! Walks over the IR's scalar trees ([`Scalar`]): free variables, node
//! counts, searches, renaming, a product's factors, whether a value may be
//! a strong zero. Pure functions; no decisions.

use super::affine::{aff_vars, pred_vars, rename_aff, rename_pred};
use super::{Buf, LoadIndex, Scalar};
use crate::syntax::ast::BinOp;
use std::collections::BTreeSet;

pub fn s_free(s: &Scalar, out: &mut BTreeSet<usize>) {
    match s {
        Scalar::Num(_) => {}
        Scalar::Load(_, ixs) => ixs.iter().for_each(|ix| aff_vars(&ix.aff, out)),
        Scalar::Bracket(p) => pred_vars(p, out),
        Scalar::Eps(v) => v.iter().for_each(|a| aff_vars(a, out)),
        Scalar::Bin(_, a, b) => {
            s_free(a, out);
            s_free(b, out);
        }
        Scalar::Neg(a) => s_free(a, out),
        Scalar::Call(_, args) => args.iter().for_each(|a| s_free(a, out)),
        Scalar::Sum(v, _, b) => {
            let mut inner = BTreeSet::new();
            s_free(b, &mut inner);
            inner.remove(v);
            out.extend(inner);
        }
        Scalar::Reduce(_, v, _, b) => {
            let mut inner = BTreeSet::new();
            s_free(b, &mut inner);
            inner.remove(v);
            out.extend(inner);
        }
        Scalar::Index(a) => aff_vars(a, out),
        Scalar::SizeVal(_) => {}
        Scalar::Select(_, args) => args.iter().for_each(|a| s_free(a, out)),
        Scalar::Fold(f) => {
            f.init.iter().for_each(|a| s_free(a, out));
            let mut inner = BTreeSet::new();
            f.body.iter().for_each(|a| s_free(a, &mut inner));
            inner.remove(&f.var);
            for k in &f.slots {
                inner.remove(k);
            }
            out.extend(inner);
        }
        Scalar::Acc(k) => {
            out.insert(*k);
        }
        Scalar::Gather(_, ixs, dyns) => {
            ixs.iter().for_each(|ix| aff_vars(&ix.aff, out));
            dyns.iter().for_each(|(_, g, _)| s_free(g, out));
        }
    }
}

/// Whether `s` has a node `pick` selects.
pub fn s_any(s: &Scalar, pick: &dyn Fn(&Scalar) -> bool) -> bool {
    pick(s)
        || match s {
            Scalar::Bin(_, a, b) => s_any(a, pick) || s_any(b, pick),
            Scalar::Neg(a) | Scalar::Sum(_, _, a) => s_any(a, pick),
            Scalar::Reduce(_, _, _, a) => s_any(a, pick),
            Scalar::Call(_, args) => args.iter().any(|a| s_any(a, pick)),
            Scalar::Select(_, args) => args.iter().any(|a| s_any(a, pick)),
            Scalar::Fold(f) => f.init.iter().chain(&f.body).any(|a| s_any(a, pick)),
            Scalar::Gather(_, _, dyns) => dyns.iter().any(|(_, g, _)| s_any(g, pick)),
            _ => false,
        }
}

/// `s` with its variables renamed by `map` (`(from, to)` pairs).
/// Variable `v` under `map` (itself where the map does not name it).
fn renamed(v: usize, map: &[(usize, usize)]) -> usize {
    map.iter().find(|(f, _)| *f == v).map_or(v, |m| m.1)
}

/// A load's indices with their variables renamed by `map`.
fn rename_ixs(ixs: &[LoadIndex], map: &[(usize, usize)]) -> Vec<LoadIndex> {
    ixs.iter()
        .map(|ix| LoadIndex {
            aff: rename_aff(&ix.aff, map),
            dim: ix.dim.clone(),
            checked: ix.checked,
        })
        .collect()
}

pub fn rename(s: &Scalar, map: &[(usize, usize)]) -> Scalar {
    match s {
        Scalar::Num(x) => Scalar::Num(*x),
        Scalar::Load(b, ixs) => Scalar::Load(*b, rename_ixs(ixs, map)),
        Scalar::Bracket(p) => Scalar::Bracket(rename_pred(p, map)),
        Scalar::Eps(v) => Scalar::Eps(v.iter().map(|a| rename_aff(a, map)).collect()),
        Scalar::Bin(op, a, b) => {
            Scalar::Bin(*op, Box::new(rename(a, map)), Box::new(rename(b, map)))
        }
        Scalar::Neg(a) => Scalar::Neg(Box::new(rename(a, map))),
        Scalar::Call(f, args) => Scalar::Call(*f, args.iter().map(|a| rename(a, map)).collect()),
        Scalar::Sum(v, n, b) => Scalar::Sum(renamed(*v, map), n.clone(), Box::new(rename(b, map))),
        Scalar::Reduce(op, v, n, b) => {
            Scalar::Reduce(*op, renamed(*v, map), n.clone(), Box::new(rename(b, map)))
        }
        Scalar::Index(a) => Scalar::Index(rename_aff(a, map)),
        Scalar::SizeVal(n) => Scalar::SizeVal(n.clone()),
        Scalar::Select(c, args) => {
            Scalar::Select(c.clone(), args.iter().map(|a| rename(a, map)).collect())
        }
        Scalar::Fold(f) => {
            let r = |v: &usize| renamed(*v, map);
            Scalar::Fold(Box::new(super::FoldLoop {
                var: r(&f.var),
                n: f.n.clone(),
                slots: f.slots.iter().map(r).collect(),
                init: f.init.iter().map(|a| rename(a, map)).collect(),
                body: f.body.iter().map(|a| rename(a, map)).collect(),
                pick: f.pick,
            }))
        }
        Scalar::Acc(k) => Scalar::Acc(renamed(*k, map)),
        Scalar::Gather(b, ixs, dyns) => Scalar::Gather(
            *b,
            rename_ixs(ixs, map),
            dyns.iter()
                .map(|(a, g, c)| (*a, Box::new(rename(g, map)), *c))
                .collect(),
        ),
    }
}

/// The number of nodes of `s` (sums and their bodies included) when it is
/// more than `limit`, else `None`.
pub fn nodes_beyond(s: &Scalar, limit: usize) -> Option<usize> {
    fn count(s: &Scalar) -> usize {
        crate::stack::deep(|| match s {
            Scalar::Num(_) | Scalar::Load(..) | Scalar::Bracket(_) | Scalar::Eps(_) => 1,
            Scalar::Bin(_, a, b) => 1 + count(a) + count(b),
            Scalar::Neg(a) | Scalar::Sum(_, _, a) => 1 + count(a),
            Scalar::Reduce(_, _, _, a) => 1 + count(a),
            Scalar::Call(_, args) => 1 + args.iter().map(count).sum::<usize>(),
            Scalar::Index(_) | Scalar::SizeVal(_) => 1,
            Scalar::Select(_, args) => 1 + args.iter().map(count).sum::<usize>(),
            Scalar::Fold(f) => 1 + f.init.iter().chain(&f.body).map(count).sum::<usize>(),
            Scalar::Acc(_) => 1,
            Scalar::Gather(_, _, dyns) => 1 + dyns.iter().map(|(_, g, _)| count(g)).sum::<usize>(),
        })
    }
    let n = count(s);
    (n > limit).then_some(n)
}

/// Whether `s` may evaluate to a strong zero (a failed bracket, or an
/// element of a temporary that may hold one), following the interpreter's
/// rules: products with a strong factor and quotients with a strong
/// numerator, negations, and sums/differences of two strong operands.
pub fn may_be_strong(s: &Scalar, bufs: &[Buf]) -> bool {
    match s {
        Scalar::Bracket(_) => true,
        Scalar::Load(b, _) => bufs[*b].flag.is_some(),
        Scalar::Neg(a) | Scalar::Sum(_, _, a) => may_be_strong(a, bufs),
        Scalar::Bin(BinOp::Mul, a, b) => may_be_strong(a, bufs) || may_be_strong(b, bufs),
        Scalar::Bin(BinOp::Div, a, _) => may_be_strong(a, bufs),
        Scalar::Bin(BinOp::Add | BinOp::Sub, a, b) => {
            may_be_strong(a, bufs) && may_be_strong(b, bufs)
        }
        _ => false,
    }
}

/// A tree with binary products, which [`factors`] takes apart (the loop
/// IR's [`Scalar`] and the schedule's expressions).
pub trait Product {
    /// The operands of `self` when it is a product `a * b`.
    fn mul_operands(&self) -> Option<(&Self, &Self)>;
}

impl Product for Scalar {
    fn mul_operands(&self) -> Option<(&Self, &Self)> {
        match self {
            Scalar::Bin(BinOp::Mul, a, b) => Some((a, b)),
            _ => None,
        }
    }
}

/// The factors of `e`'s product tree, left to right (`e` itself when it
/// is not a product): the one factor-collection helper of the back end.
pub fn factors<'a, E: Product>(e: &'a E, out: &mut Vec<&'a E>) {
    match e.mul_operands() {
        Some((a, b)) => {
            factors(a, out);
            factors(b, out);
        }
        None => out.push(e),
    }
}

/// The factors of `sum(o) mid * sum(i) inner` regrouped for the sums the
/// other way round, `sum(i) mid' * sum(o) inner'` (reduction
/// interchange): `inner'` is `mid` then the factors of `inner` that
/// `uses_outer` (they depend on `o`), `mid'` the other factors of
/// `inner`, each in order. Returns `(mid', inner')`. The one regrouping
/// both the generic loops' and the register tiles' interchange use.
pub fn interchange_factors<F: Clone>(
    mid: &[F],
    inner: &[F],
    uses_outer: impl Fn(&F) -> bool,
) -> (Vec<F>, Vec<F>) {
    let mut m2 = Vec::new();
    let mut i2: Vec<F> = mid.to_vec();
    for f in inner {
        if uses_outer(f) {
            i2.push(f.clone());
        } else {
            m2.push(f.clone());
        }
    }
    (m2, i2)
}
