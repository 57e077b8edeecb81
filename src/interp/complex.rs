//! The complex matrix product as the floating-point contract names it
//! (`docs/fp-contract.md`, "may"): a pair of sums over the same indices
//! `(sum(k..) x0*y0 - x1*y1, sum(k..) x0*y1 + x1*y0)` (in either order,
//! terms and factors in any order, a subtraction also written as the
//! addition of a negated product), the factors accesses (`A[i, j].0`).
//! The default mode may compute each part as BLAS's `zgemm` and numpy's
//! complex `@` do, the sums of its two real products accumulated
//! separately and then combined; the contract's oracle
//! ([`super::shadow`]) then bounds each part by its `2·n` real product
//! terms ([`Domain::regroups`](super::Domain::regroups)). Owns the
//! recognition only.

use crate::syntax::ast::{BinOp, Expr, Size};

/// One part of a recognised complex product: the sums around it
/// (outermost first), and its two products, the second negated when
/// `neg`.
pub(crate) struct Part<'e> {
    pub(crate) sums: Vec<(&'e str, &'e Size)>,
    pub(crate) t1: &'e Expr,
    pub(crate) t2: &'e Expr,
    pub(crate) neg: bool,
}

/// A factor: an access chain (no arithmetic).
fn load(e: &Expr) -> bool {
    match e {
        Expr::Var(_) => true,
        Expr::Access(a, _) | Expr::Proj(_, a) => load(a),
        _ => false,
    }
}

/// A product of two factors, with its sign (`true`: negated).
fn product(e: &Expr) -> Option<(bool, &Expr, &Expr)> {
    match e {
        Expr::Neg(a) => product(a).map(|(s, f, g)| (!s, f, g)),
        Expr::Bin(BinOp::Mul, f, g) if load(f) && load(g) => Some((false, f, g)),
        _ => None,
    }
}

type Terms<'e> = [(bool, &'e Expr, &'e Expr); 2];

/// `sum(k..) t1 ± t2` with its sums, terms and their signs.
fn part(e: &Expr) -> Option<(Part<'_>, Terms<'_>)> {
    let mut sums = Vec::new();
    let mut cur = e;
    while let Expr::Sum(i, n, b) = cur {
        sums.push((i.as_str(), n));
        cur = b;
    }
    let Expr::Bin(op @ (BinOp::Add | BinOp::Sub), t1, t2) = cur else {
        return None;
    };
    let (s1, f1, g1) = product(t1)?;
    let (s2, f2, g2) = product(t2)?;
    let neg = *op == BinOp::Sub;
    Some((
        Part { sums, t1, t2, neg },
        [(s1, f1, g1), (s2 ^ neg, f2, g2)],
    ))
}

/// Whether `re` and `im` are `x0·y0 − x1·y1` and `x0·y1 + x1·y0`.
fn complex(re: &Terms<'_>, im: &Terms<'_>) -> bool {
    if im.iter().any(|t| t.0) {
        return false;
    }
    let (pl, mi) = match (re[0].0, re[1].0) {
        (false, true) => (re[0], re[1]),
        (true, false) => (re[1], re[0]),
        _ => return false,
    };
    let pair = |a: &Expr, b: &Expr, t: &(bool, &Expr, &Expr)| {
        (a == t.1 && b == t.2) || (a == t.2 && b == t.1)
    };
    for (x0, y0) in [(pl.1, pl.2), (pl.2, pl.1)] {
        for (x1, y1) in [(mi.1, mi.2), (mi.2, mi.1)] {
            if (pair(x0, y1, &im[0]) && pair(x1, y0, &im[1]))
                || (pair(x0, y1, &im[1]) && pair(x1, y0, &im[0]))
            {
                return true;
            }
        }
    }
    false
}

/// The parts of `(a, b)` when the pair is a complex product.
pub(crate) fn pattern<'e>(a: &'e Expr, b: &'e Expr) -> Option<[Part<'e>; 2]> {
    let (pa, ta) = part(a)?;
    let (pb, tb) = part(b)?;
    if pa.sums.is_empty() || pa.sums != pb.sums {
        return None;
    }
    (complex(&ta, &tb) || complex(&tb, &ta)).then_some([pa, pb])
}
