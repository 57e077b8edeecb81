//! The integrality check: whether a program may run in an integer format
//! ([`Precision::I64`], [`Precision::I32`]), where every value is an
//! integer of the width and `+ - *` wrap like numpy's integer arrays.
//!
//! A program is integral when every value operation is one of `+ - *`,
//! unary minus, `max`/`min` (binary and reductions), comparisons, `&& ||
//! !`, `where`, `fold`, `let`, `gen`, `sum`, pairs and projections,
//! brackets and `eps`, sizes and indices used as numbers, accesses, and
//! literals that are integers of the width. Division and every other
//! function have no exact integer meaning here (numpy's `/` on integers
//! gives float64): such a program is refused with an error naming the
//! construct, at its source position when the parser's spans are given.
//! Gathers (`E[tok[i], j]`) are allowed: an integer array's element is an
//! index, not a number (in an integer format it comes as an integer of
//! the width, [`crate::interp::gather`]).

use crate::diag::Diagnostic;
use crate::precision::Precision;
use crate::syntax::ast::{BinOp, Expr, Func, Function};
use crate::syntax::parser::{FunctionSpans, SpanTree};
use crate::syntax::printer::print_num;

/// Check that `f` can run in the integer format `p`: every error found
/// (see the module doc), each at its source position when `spans` (from
/// the parser) are given. A float format accepts every program.
pub fn integral(
    f: &Function,
    spans: Option<&FunctionSpans>,
    p: Precision,
) -> Result<(), Vec<Diagnostic>> {
    if !p.is_int() {
        return Ok(());
    }
    let mut errs = Vec::new();
    walk(&f.body, spans.map(|s| &s.body), p, &mut errs);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs)
    }
}

/// Whether `f` passes [`integral`] in `p` (no positions needed).
pub fn is_integral(f: &Function, p: Precision) -> bool {
    integral(f, None, p).is_ok()
}

/// Whether the literal `x` is an integer of the width of `p`.
pub fn literal_fits(x: f64, p: Precision) -> bool {
    let lim = 2f64.powi(p.int_bits() as i32 - 1);
    x.fract() == 0.0 && x >= -lim && x < lim
}

fn walk(e: &Expr, sp: Option<&SpanTree>, p: Precision, errs: &mut Vec<Diagnostic>) {
    crate::stack::deep(|| walk_inner(e, sp, p, errs))
}

fn walk_inner(e: &Expr, sp: Option<&SpanTree>, p: Precision, errs: &mut Vec<Diagnostic>) {
    let at = sp.map(|s| s.span);
    match e {
        Expr::Num(x) if !literal_fits(*x, p) => errs.push(Diagnostic::new(
            if x.fract() != 0.0 {
                format!(
                    "the literal `{}` is not an integer: an integer program ({p}) has integer literals only",
                    print_num(*x)
                )
            } else {
                format!(
                    "the literal `{}` is beyond the range of {p}",
                    print_num(*x)
                )
            },
            at,
        )),
        Expr::Bin(BinOp::Div, ..) => errs.push(Diagnostic::new(
            format!("`/`: an integer program ({p}) has no true division; numpy's `/` on integers gives float64"),
            at,
        )),
        Expr::Call(func, _) if !matches!(func, Func::Max | Func::Min) => {
            errs.push(Diagnostic::new(
                format!(
                    "`{}`: an integer program ({p}) has no `{}`; numpy's `{}` of integers gives float64",
                    func.name(),
                    func.name(),
                    func.name()
                ),
                at,
            ))
        }
        _ => {}
    }
    // a gather's integer array is not a number: nothing below it to check
    for (k, c) in e.children().into_iter().enumerate() {
        walk(c, sp.and_then(|s| s.children.get(k)), p, errs);
    }
}
