//! Names in value position that stand for numbers: after a function is
//! parsed, a bare name that is not a value (parameter or `let`) in scope but
//! an index bound by an enclosing `gen`/`sum` becomes an
//! [`Expr::IndexValue`], and one that is a size name of the function an
//! [`Expr::SizeValue`] (`docs/language.md`, "Sizes and indices as
//! numbers"). Integer arithmetic on index values folds into one affine
//! index value (`i + 1`, `2*i - j`), which is what makes `parse(print(p))
//! == p` hold for index values the optimiser builds.

use super::ast::*;
use super::parser::SpanTree;
use crate::diag::Diagnostic;

/// Names in scope while resolving.
pub(crate) struct Scope<'a> {
    /// Size names of the function (from its parameters' types).
    pub sizes: &'a [String],
    /// Value names (parameters, then `let`s), innermost last.
    pub values: Vec<String>,
    /// Index names bound by `gen`/`sum`, innermost last.
    pub indices: Vec<String>,
}

/// Resolve the names of `e` (with its span tree `sp`) in `scope`.
pub(crate) fn resolve(
    e: Expr,
    sp: SpanTree,
    scope: &mut Scope,
) -> Result<(Expr, SpanTree), Diagnostic> {
    crate::stack::deep(|| resolve_inner(e, sp, scope))
}

/// The integer an already-resolved number stands for, as an affine index:
/// an index value, or an integer literal of at most 2^31.
fn as_int(e: &Expr) -> Option<Affine> {
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
fn fold_bin(op: BinOp, a: &Expr, b: &Expr) -> Option<Expr> {
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

fn resolve_inner(
    e: Expr,
    mut sp: SpanTree,
    scope: &mut Scope,
) -> Result<(Expr, SpanTree), Diagnostic> {
    let mut kids = std::mem::take(&mut sp.children).into_iter();
    let next = |kids: &mut std::vec::IntoIter<SpanTree>| kids.next().unwrap_or_default();
    let r = match e {
        Expr::Var(x) => {
            if scope.values.contains(&x) {
                Expr::Var(x)
            } else if scope.indices.contains(&x) {
                if scope.sizes.contains(&x) {
                    return Err(Diagnostic::new(
                        format!(
                            "`{x}` is both an index and a size name here, so as a number it is ambiguous: rename the index"
                        ),
                        Some(sp.span),
                    ));
                }
                Expr::IndexValue(Affine::var(x))
            } else if scope.sizes.contains(&x) {
                Expr::SizeValue(x)
            } else {
                Expr::Var(x)
            }
        }
        Expr::Bin(op, a, b) => {
            let (a, sa) = resolve(*a, next(&mut kids), scope)?;
            let (b, sb) = resolve(*b, next(&mut kids), scope)?;
            match fold_bin(op, &a, &b) {
                Some(f) => f,
                None => {
                    sp.children = vec![sa, sb];
                    Expr::bin(op, a, b)
                }
            }
        }
        Expr::Neg(a) => {
            let (a, sa) = resolve(*a, next(&mut kids), scope)?;
            match a {
                Expr::IndexValue(x) if x.checked_scale(-1).is_some() => {
                    Expr::index_value(x.scale(-1))
                }
                a => {
                    sp.children = vec![sa];
                    Expr::Neg(Box::new(a))
                }
            }
        }
        Expr::Call(f, args) => {
            let mut out = Vec::new();
            for a in args {
                let (a, s) = resolve(a, next(&mut kids), scope)?;
                out.push(a);
                sp.children.push(s);
            }
            Expr::Call(f, out)
        }
        Expr::Pair(a, b) => {
            let (a, sa) = resolve(*a, next(&mut kids), scope)?;
            let (b, sb) = resolve(*b, next(&mut kids), scope)?;
            sp.children = vec![sa, sb];
            Expr::pair(a, b)
        }
        Expr::Proj(k, a) => {
            let (a, sa) = resolve(*a, next(&mut kids), scope)?;
            sp.children = vec![sa];
            Expr::proj(k, a)
        }
        Expr::Access(a, idx) => {
            let (a, sa) = resolve(*a, next(&mut kids), scope)?;
            sp.children = vec![sa];
            Expr::access(a, idx)
        }
        Expr::Gen(i, n, b) => {
            scope.indices.push(i.clone());
            let r = resolve(*b, next(&mut kids), scope);
            scope.indices.pop();
            let (b, sb) = r?;
            sp.children = vec![sb];
            Expr::gen(i, n, b)
        }
        Expr::Sum(i, n, b) => {
            scope.indices.push(i.clone());
            let r = resolve(*b, next(&mut kids), scope);
            scope.indices.pop();
            let (b, sb) = r?;
            sp.children = vec![sb];
            Expr::sum(i, n, b)
        }
        Expr::Reduce(op, i, n, b) => {
            scope.indices.push(i.clone());
            let r = resolve(*b, next(&mut kids), scope);
            scope.indices.pop();
            let (b, sb) = r?;
            sp.children = vec![sb];
            Expr::Reduce(op, i, n, Box::new(b))
        }
        Expr::Let(x, a, b) => {
            let (a, sa) = resolve(*a, next(&mut kids), scope)?;
            scope.values.push(x.clone());
            let r = resolve(*b, next(&mut kids), scope);
            scope.values.pop();
            let (b, sb) = r?;
            sp.children = vec![sa, sb];
            Expr::let_(x, a, b)
        }
        Expr::Where(c, a, b) => {
            let mut spans = Vec::new();
            let c = c.try_map_exprs(&mut |x| {
                let (x, s) = resolve(x.clone(), next(&mut kids), scope)?;
                spans.push(s);
                Ok(x)
            })?;
            let (a, sa) = resolve(*a, next(&mut kids), scope)?;
            let (b, sb) = resolve(*b, next(&mut kids), scope)?;
            spans.push(sa);
            spans.push(sb);
            sp.children = spans;
            Expr::where_(c, a, b)
        }
        e @ (Expr::Num(_)
        | Expr::Bracket(_)
        | Expr::Eps(_)
        | Expr::IndexValue(_)
        | Expr::SizeValue(_)) => e,
    };
    sp.depth = 1 + sp.children.iter().map(|c| c.depth).max().unwrap_or(0);
    Ok((r, sp))
}
