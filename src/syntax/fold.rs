//! Integer arithmetic on index values folded into one index value: `i +
//! 1`, `-i`, `2*i - j` used as numbers are one [`Expr::IndexValue`]. The
//! parser folds what it reads (`docs/language.md`, "Sizes and indices as
//! numbers"), and every other producer of programs (the builder, the
//! optimiser, the random generator) folds with [`fold_index_values`], so
//! that `parse(print(p)) == p` holds for index values.

use super::ast::*;

/// The integer an already-resolved number stands for, as an affine index:
/// an index value, or an integer literal of at most 2^31.
pub(crate) fn as_int(e: &Expr) -> Option<Affine> {
    match e {
        Expr::IndexValue(a) => Some(a.clone()),
        Expr::Num(x) if x.fract() == 0.0 && x.abs() <= MAX_INDEX_VALUE as f64 => {
            Some(Affine::constant(*x as i64))
        }
        Expr::Neg(a) if matches!(**a, Expr::Num(_)) => as_int(a).map(|c| c.scale(-1)),
        _ => None,
    }
}

/// `a op b` folded into one index value when both are integers, one of them
/// an index value, and the result stays in the index range.
pub(crate) fn fold_bin(op: BinOp, a: &Expr, b: &Expr) -> Option<Expr> {
    if !matches!(a, Expr::IndexValue(_)) && !matches!(b, Expr::IndexValue(_)) {
        return None;
    }
    let (x, y) = (as_int(a)?, as_int(b)?);
    let r = match op {
        BinOp::Add => x.checked_add(&y)?,
        BinOp::Sub => x.checked_sub(&y)?,
        BinOp::Mul => match (x.as_const(), y.as_const()) {
            (Some(c), _) => y.checked_scale(c)?,
            (_, Some(c)) => x.checked_scale(c)?,
            _ => return None,
        },
        BinOp::Div => return None,
    };
    r.in_index_range().then(|| Expr::index_value(r))
}

/// `e` with integer arithmetic on index values folded as the parser folds
/// it (`i + 1`, `-i`, `2*i - j`), so that a program built by other means
/// (the builder, the optimiser, the random generator) prints to text that
/// parses back to it. The value is the same (the integers are exact).
pub fn fold_index_values(e: Expr) -> Expr {
    crate::stack::deep(|| {
        let f = fold_index_values;
        let e = match e {
            Expr::Bin(op, a, b) => Expr::bin(op, f(*a), f(*b)),
            Expr::Neg(a) => Expr::Neg(Box::new(f(*a))),
            Expr::Call(g, args) => Expr::Call(g, args.into_iter().map(f).collect()),
            Expr::Pair(a, b) => Expr::pair(f(*a), f(*b)),
            Expr::Proj(k, a) => Expr::proj(k, f(*a)),
            Expr::Gen(i, n, b) => Expr::gen(i, n, f(*b)),
            Expr::Sum(i, n, b) => Expr::sum(i, n, f(*b)),
            Expr::Reduce(op, i, n, b) => Expr::Reduce(op, i, n, Box::new(f(*b))),
            Expr::Access(a, idx) => Expr::access(f(*a), idx),
            Expr::Let(x, a, b) => Expr::let_(x, f(*a), f(*b)),
            Expr::Where(c, a, b) => {
                let c = c.map_exprs(&mut |x| f(x.clone()));
                Expr::where_(c, f(*a), f(*b))
            }
            Expr::Fold(i, n, acc, a, b) => Expr::fold(i, n, acc, f(*a), f(*b)),
            e => e,
        };
        match e {
            Expr::Bin(op, a, b) => match fold_bin(op, &a, &b) {
                Some(f) => f,
                None => Expr::Bin(op, a, b),
            },
            Expr::Neg(a) => match *a {
                Expr::IndexValue(x) if x.checked_scale(-1).is_some() => {
                    Expr::index_value(x.scale(-1))
                }
                a => Expr::Neg(Box::new(a)),
            },
            Expr::IndexValue(a) => Expr::index_value(a),
            e => e,
        }
    })
}
