//! The printer: IR back to the surface syntax with minimal parentheses, such
//! that `parse(print(p)) == p` for every program the parser can produce.
//!
//! The one subtle point is that `let`, `gen` and `sum` reach as far right as
//! possible: such a binder can stand without parentheses only where nothing
//! follows it, which the printer tracks as `open` ("the text ends here").

use super::ast::*;
use std::fmt::Write;

const P_BINDER: u8 = 0;
const P_ADD: u8 = 1;
const P_MUL: u8 = 2;
const P_NEG: u8 = 3;
const P_POSTFIX: u8 = 4;

fn prec(e: &Expr) -> u8 {
    match e {
        Expr::Let(..) | Expr::Gen(..) | Expr::Sum(..) => P_BINDER,
        Expr::Reduce(..) => P_BINDER,
        Expr::Fold(..) => P_BINDER,
        Expr::Bin(BinOp::Add | BinOp::Sub, ..) => P_ADD,
        Expr::Bin(BinOp::Mul | BinOp::Div, ..) => P_MUL,
        Expr::Neg(_) => P_NEG,
        Expr::Num(x) if !(x.is_finite() && *x >= 0.0 && !(*x == 0.0 && x.is_sign_negative())) => {
            P_NEG
        }
        _ => P_POSTFIX,
    }
}

/// Print a number so that the lexer reads back the same f64.
pub fn print_num(x: f64) -> String {
    if x.is_nan() {
        return "(0 / 0)".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "(1 / 0)" } else { "(-1 / 0)" }.into();
    }
    if x < 0.0 || (x == 0.0 && x.is_sign_negative()) {
        return format!("-{}", print_num(-x));
    }
    if x.fract() == 0.0 && x < 1e15 {
        return format!("{}", x as u64);
    }
    format!("{x:?}")
}

/// Print an affine index expression, e.g. `i`, `i+1`, `2*i-j+3`.
pub fn print_affine(a: &Affine) -> String {
    let mut s = String::new();
    for (k, (name, &c)) in a.terms.iter().enumerate() {
        let first = k == 0;
        let mag = c.unsigned_abs();
        if c < 0 {
            s.push('-');
        } else if !first {
            s.push('+');
        }
        if mag != 1 {
            let _ = write!(s, "{mag}*");
        }
        s.push_str(name);
    }
    if a.terms.is_empty() {
        let _ = write!(s, "{}", a.constant);
    } else if a.constant > 0 {
        let _ = write!(s, "+{}", a.constant);
    } else if a.constant < 0 {
        let _ = write!(s, "-{}", a.constant.unsigned_abs());
    }
    s
}

fn pred_prec(p: &Pred) -> u8 {
    match p {
        Pred::Or(..) => 1,
        Pred::And(..) => 2,
        _ => 3,
    }
}

fn print_pred_at(p: &Pred, ctx: u8, out: &mut String) {
    crate::stack::deep(|| {
        let parens = pred_prec(p) < ctx;
        if parens {
            out.push('(');
        }
        match p {
            Pred::Cmp(op, a, b) => {
                let _ = write!(
                    out,
                    "{} {} {}",
                    print_affine(a),
                    op.symbol(),
                    print_affine(b)
                );
            }
            Pred::Or(a, b) => {
                print_pred_at(a, 1, out);
                out.push_str(" || ");
                print_pred_at(b, 2, out);
            }
            Pred::And(a, b) => {
                print_pred_at(a, 2, out);
                out.push_str(" && ");
                print_pred_at(b, 3, out);
            }
            Pred::Not(a) => {
                out.push('!');
                print_pred_at(a, 4, out);
            }
        }
        if parens {
            out.push(')');
        }
    })
}

/// Print a predicate (the inside of an Iverson bracket).
pub fn print_pred(p: &Pred) -> String {
    let mut s = String::new();
    print_pred_at(p, 0, &mut s);
    s
}

/// Print a type, e.g. `[n,3]R`, `[n](R, R)`.
pub fn print_type(t: &Type) -> String {
    match t {
        Type::Real => "R".into(),
        Type::Int => "Z".into(),
        Type::Pair(a, b) => format!("({}, {})", print_type(a), print_type(b)),
        Type::Tensor(..) => {
            let mut sizes = Vec::new();
            let mut t = t;
            while let Type::Tensor(s, e) = t {
                sizes.push(s.to_string());
                t = e;
            }
            format!("[{}]{}", sizes.join(","), print_type(t))
        }
    }
}

/// Write the binders of a run of `gen`s (or of `sum`s) as one head,
/// `gen(i:n, j:m)`, and return the body below them.
fn binder_head<'e>(e: &'e Expr, out: &mut String) -> &'e Expr {
    // the keyword of a binder node, its index, range and body
    fn binder(e: &Expr) -> Option<(&'static str, &str, &Size, &Expr)> {
        match e {
            Expr::Gen(i, n, b) => Some(("gen", i, n, b)),
            Expr::Sum(i, n, b) => Some(("sum", i, n, b)),
            Expr::Reduce(op, i, n, b) => Some((op.name(), i, n, b)),
            _ => None,
        }
    }
    let kw = binder(e).map_or("gen", |b| b.0);
    let mut binders = Vec::new();
    let mut body = e;
    while let Some((k, i, n, b)) = binder(body) {
        if k != kw {
            break;
        }
        binders.push(format!("{i}:{n}"));
        body = b;
    }
    let _ = write!(out, "{kw}({})", binders.join(", "));
    body
}

/// Print an expression with minimal parentheses.
pub fn print_expr(e: &Expr) -> String {
    let mut s = String::new();
    pr(e, P_BINDER, true, &mut s);
    s
}

fn pr(e: &Expr, ctx: u8, open: bool, out: &mut String) {
    crate::stack::deep(|| pr_at(e, ctx, open, out))
}

fn pr_at(e: &Expr, ctx: u8, open: bool, out: &mut String) {
    let p = prec(e);
    // A binder may stand bare wherever the text ends after it, whatever the
    // precedence around it: it reaches as far right as possible anyway.
    let parens = if p == P_BINDER { !open } else { p < ctx };
    if parens {
        out.push('(');
        pr_inner(e, true, out);
        out.push(')');
    } else {
        pr_inner(e, open, out);
    }
}

fn pr_inner(e: &Expr, open: bool, out: &mut String) {
    match e {
        Expr::Var(x) => out.push_str(x),
        Expr::Num(x) => out.push_str(&print_num(*x)),
        Expr::Bin(op, a, b) => {
            let p = prec(e);
            pr(a, p, false, out);
            let _ = write!(out, " {} ", op.symbol());
            pr(b, p + 1, open, out);
        }
        Expr::Neg(a) => {
            out.push('-');
            // `--x` would lex as two minus signs anyway; a space keeps it readable.
            if matches!(**a, Expr::Neg(_)) || matches!(**a, Expr::Num(x) if x < 0.0) {
                out.push(' ');
            }
            pr(a, P_NEG, open, out);
        }
        Expr::Call(f, args) => {
            out.push_str(f.name());
            out.push('(');
            for (k, a) in args.iter().enumerate() {
                if k > 0 {
                    out.push_str(", ");
                }
                pr(a, P_BINDER, true, out);
            }
            out.push(')');
        }
        Expr::Pair(a, b) => {
            out.push('(');
            pr(a, P_BINDER, true, out);
            out.push_str(", ");
            pr(b, P_BINDER, true, out);
            out.push(')');
        }
        Expr::Proj(k, a) => {
            if matches!(**a, Expr::Num(_)) {
                out.push('(');
                pr(a, P_BINDER, true, out);
                out.push(')');
            } else {
                pr(a, P_POSTFIX, false, out);
            }
            let _ = write!(out, ".{k}");
        }
        Expr::Access(..) | Expr::Gather(..) => {
            let mut idx = Vec::new();
            let mut base = e;
            loop {
                match base {
                    Expr::Access(b, i) => {
                        idx.push(print_affine(i));
                        base = b;
                    }
                    Expr::Gather(b, g, c) => {
                        idx.push(print_gather_index(g, *c));
                        base = b;
                    }
                    _ => break,
                }
            }
            idx.reverse();
            pr(base, P_POSTFIX, false, out);
            let _ = write!(out, "[{}]", idx.join(", "));
        }
        Expr::Bracket(p) => {
            let _ = write!(out, "[{}]", print_pred(p));
        }
        Expr::Eps(idx) => {
            let v: Vec<String> = idx.iter().map(print_affine).collect();
            let _ = write!(out, "eps[{}]", v.join(", "));
        }
        Expr::Gen(..) | Expr::Sum(..) | Expr::Reduce(..) => {
            let body = binder_head(e, out);
            out.push(' ');
            pr(body, P_BINDER, open, out);
        }
        Expr::Let(x, e1, e2) => {
            let _ = write!(out, "let {x} = ");
            pr(e1, P_BINDER, true, out);
            out.push_str(" in ");
            pr(e2, P_BINDER, open, out);
        }
        Expr::IndexValue(a) => match a.as_var() {
            Some(i) => out.push_str(i),
            // the parser folds `(2*i-j+1)` back into this one index value
            None => {
                let _ = write!(out, "({})", print_affine(a));
            }
        },
        Expr::SizeValue(n) => out.push_str(n),
        Expr::Where(c, a, b) => {
            out.push_str("where(");
            print_cond_at(c, 0, out);
            out.push_str(", ");
            pr(a, P_BINDER, true, out);
            out.push_str(", ");
            pr(b, P_BINDER, true, out);
            out.push(')');
        }
        Expr::Fold(i, n, acc, a, b) => {
            let _ = write!(out, "fold({i}:{n}, {acc} = ");
            pr(a, P_BINDER, true, out);
            out.push_str(") ");
            pr(b, P_BINDER, open, out);
        }
    }
}

/// The index of a gather, `tok[i]`, `tok[i, k] + 1`, `tok[i] - 2`.
fn print_gather_index(g: &Expr, c: i64) -> String {
    let mut s = String::new();
    pr(g, P_POSTFIX, false, &mut s);
    match c {
        0 => {}
        c if c > 0 => {
            let _ = write!(s, " + {c}");
        }
        c => {
            let _ = write!(s, " - {}", c.unsigned_abs());
        }
    }
    s
}

fn cond_prec(c: &Cond) -> u8 {
    match c {
        Cond::Or(..) => 1,
        Cond::And(..) => 2,
        _ => 3,
    }
}

/// A condition of `where`, as [`print_pred_at`] prints a predicate; a
/// compared number that is a binder is parenthesised.
fn print_cond_at(c: &Cond, ctx: u8, out: &mut String) {
    crate::stack::deep(|| {
        let parens = cond_prec(c) < ctx;
        if parens {
            out.push('(');
        }
        match c {
            Cond::Cmp(op, a, b) => {
                pr(a, P_ADD, false, out);
                let _ = write!(out, " {} ", op.symbol());
                pr(b, P_ADD, false, out);
            }
            Cond::Or(a, b) => {
                print_cond_at(a, 1, out);
                out.push_str(" || ");
                print_cond_at(b, 2, out);
            }
            Cond::And(a, b) => {
                print_cond_at(a, 2, out);
                out.push_str(" && ");
                print_cond_at(b, 3, out);
            }
            Cond::Not(a) => {
                out.push('!');
                print_cond_at(a, 4, out);
            }
        }
        if parens {
            out.push(')');
        }
    })
}

/// Lines of printed programs are laid out to fit this many columns where
/// they can (see [`print_function`]).
pub const LINE_WIDTH: usize = 88;

/// Bodies of more nodes than this are printed on one line (laying out
/// measures each subterm's flat text: quadratic in the worst case).
const LAYOUT_MAX_NODES: usize = 5_000;

/// Print a function in the surface syntax, laid out as the examples are
/// written: a body that fits in [`LINE_WIDTH`] columns on one line, a
/// longer one broken at `let … in` (one binding per line), after the
/// binders of `gen`/`sum` (the body indented below them) and before the
/// `+`/`-` of a long sum of terms. Only whitespace differs from the flat
/// text, so what prints parses back to the same function.
pub fn print_function(f: &Function) -> String {
    let params: Vec<String> = f
        .params
        .iter()
        .map(|p| format!("{}: {}", p.name, print_type(&p.ty)))
        .collect();
    let ret = match &f.ret {
        Some(t) => format!(" -> {}", print_type(t)),
        None => String::new(),
    };
    let body = if f.body.size() <= LAYOUT_MAX_NODES {
        let mut s = String::new();
        lay(&f.body, P_BINDER, true, 2, &mut s);
        s
    } else {
        print_expr(&f.body)
    };
    format!(
        "fn {}({}){} =\n  {}\n",
        f.name,
        params.join(", "),
        ret,
        body
    )
}

/// `e` printed flat (as [`pr`] would).
fn flat(e: &Expr, ctx: u8, open: bool) -> String {
    let mut s = String::new();
    pr(e, ctx, open, &mut s);
    s
}

fn newline(indent: usize, out: &mut String) {
    out.push('\n');
    out.extend(std::iter::repeat_n(' ', indent));
}

/// [`pr`] with line breaks: `e` starts at column `indent` of a line.
fn lay(e: &Expr, ctx: u8, open: bool, indent: usize, out: &mut String) {
    crate::stack::deep(|| lay_at(e, ctx, open, indent, out))
}

fn lay_at(e: &Expr, ctx: u8, open: bool, indent: usize, out: &mut String) {
    let column = out.len() - out.rfind('\n').map_or(0, |k| k + 1);
    let text = flat(e, ctx, open);
    let breakable = matches!(e, Expr::Let(..) | Expr::Gen(..) | Expr::Sum(..))
        || matches!(e, Expr::Reduce(..))
        || matches!(e, Expr::Bin(BinOp::Add | BinOp::Sub, ..));
    if column + text.len() <= LINE_WIDTH || !breakable {
        out.push_str(&text);
        return;
    }
    let p = prec(e);
    let parens = if p == P_BINDER { !open } else { p < ctx };
    if parens {
        out.push('(');
        lay_inner(e, true, indent + 1, out);
        out.push(')');
    } else {
        lay_inner(e, open, indent, out);
    }
}

fn lay_inner(e: &Expr, open: bool, indent: usize, out: &mut String) {
    match e {
        Expr::Bin(op, a, b) => {
            let p = prec(e);
            lay(a, p, false, indent, out);
            newline(indent, out);
            let _ = write!(out, "{} ", op.symbol());
            lay(b, p + 1, open, indent + 2, out);
        }
        Expr::Gen(..) | Expr::Sum(..) | Expr::Reduce(..) => {
            let body = binder_head(e, out);
            newline(indent + 2, out);
            lay(body, P_BINDER, open, indent + 2, out);
        }
        Expr::Let(x, e1, e2) => {
            let _ = write!(out, "let {x} = ");
            lay(e1, P_BINDER, true, indent + 4, out);
            out.push_str(" in");
            newline(indent, out);
            lay(e2, P_BINDER, open, indent, out);
        }
        _ => pr_inner(e, open, out),
    }
}

/// Print every function of a program, separated by blank lines.
pub fn print_program(p: &Program) -> String {
    p.functions
        .iter()
        .map(print_function)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The function in the surface syntax, laid out as [`print_function`]
/// does (it parses back to the same function).
impl std::fmt::Display for Function {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&print_function(self))
    }
}

/// Every function, as [`print_program`] prints them.
impl std::fmt::Display for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&print_program(self))
    }
}
