//! The type checker: infers the type of every expression, checks index ranges
//! and size names, and collects *every* error in a function rather than
//! stopping at the first. An expression whose type cannot be known (because of
//! an earlier error) is typed `None`, which silences follow-on errors.

pub mod integral;

pub use integral::{integral, is_integral};

use crate::diag::{Diagnostic, Span};
use crate::syntax::ast::*;
use crate::syntax::ast::{MAX_INDEX_MAGNITUDE, MAX_INDEX_VALUE};
use crate::syntax::parser::{FunctionSpans, Parsed, SpanTree};
use crate::syntax::printer::{print_affine, print_type};

/// A checked function's signature.
#[derive(Clone, Debug, PartialEq)]
pub struct Signature {
    /// The function's name.
    pub name: String,
    /// Its parameters.
    pub params: Vec<Param>,
    /// Its result type (inferred when not declared).
    pub ret: Type,
}

impl std::fmt::Display for Signature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ps: Vec<String> = self
            .params
            .iter()
            .map(|p| format!("{}: {}", p.name, print_type(&p.ty)))
            .collect();
        write!(
            f,
            "fn {}({}) -> {}",
            self.name,
            ps.join(", "),
            print_type(&self.ret)
        )
    }
}

#[derive(Clone)]
enum Binding {
    Index(Size),
    Value(Type),
}

struct Checker<'a> {
    scope: Vec<(String, Binding)>,
    sizes: Vec<String>,
    errors: Vec<Diagnostic>,
    fspans: Option<&'a FunctionSpans>,
    /// The first this many entries of `scope` are the parameters.
    n_params: usize,
    /// Inside the index of a gather (where an integer array may be read).
    in_gather: bool,
}

fn child(sp: Option<&SpanTree>, k: usize) -> Option<&SpanTree> {
    sp.and_then(|s| s.children.get(k))
}

fn ty_str(t: &Type) -> String {
    print_type(t)
}

impl Checker<'_> {
    fn error(&mut self, sp: Option<&SpanTree>, msg: String) {
        self.errors.push(Diagnostic::new(msg, sp.map(|s| s.span)));
    }

    fn lookup_value(&self, x: &str) -> Option<&Type> {
        self.scope.iter().rev().find_map(|(n, b)| match b {
            Binding::Value(t) if n == x => Some(t),
            _ => None,
        })
    }
    /// The names in scope of one kind (values or indices), innermost first.
    fn names_in_scope(&self, indices: bool) -> Vec<&str> {
        self.scope
            .iter()
            .rev()
            .filter(|(_, b)| matches!(b, Binding::Index(_)) == indices)
            .map(|(n, _)| n.as_str())
            .collect()
    }
    fn lookup_index(&self, x: &str) -> Option<&Size> {
        self.scope.iter().rev().find_map(|(n, b)| match b {
            Binding::Index(s) if n == x => Some(s),
            _ => None,
        })
    }

    fn check_size(&mut self, n: &Size, sp: Option<&SpanTree>) {
        if let Size::Lit(k) = n {
            if *k as u128 > MAX_INDEX_VALUE as u128 {
                self.error(
                    sp,
                    format!("the range {k} is larger than the limit of 2^31 = {MAX_INDEX_VALUE} (the most elements a tensor may have)"),
                );
            }
        }
        if let Size::Named(s) = n {
            if !self.sizes.contains(s) {
                self.error(
                    sp,
                    format!(
                        "size `{s}` is not bound by any parameter{} (every size name must occur in a parameter's type)",
                        crate::diag::did_you_mean(s, self.sizes.iter().map(String::as_str))
                    ),
                );
            }
        }
    }

    fn check_affine(&mut self, a: &Affine, sp: Option<&SpanTree>) {
        if !a.in_index_range() {
            self.error(sp, range_msg(a));
        }
        for v in a.vars() {
            if self.lookup_index(v).is_none() {
                let msg = if self.lookup_value(v).is_some() {
                    format!("`{v}` is a value, not an index")
                } else {
                    format!(
                        "unknown index `{v}`{}",
                        crate::diag::did_you_mean(v, self.names_in_scope(true))
                    )
                };
                self.error(sp, msg);
            }
        }
    }

    fn number(&mut self, t: Option<Type>, what: &str, sp: Option<&SpanTree>) {
        if let Some(t) = t {
            if t != Type::Real {
                self.error(
                    sp,
                    format!(
                        "{what} needs a number, but this has type {} (work on whole tensors is written with `gen`)",
                        ty_str(&t)
                    ),
                );
            }
        }
    }

    fn expr(&mut self, e: &Expr, sp: Option<&SpanTree>) -> Option<Type> {
        crate::stack::deep(|| self.expr_inner(e, sp))
    }

    fn expr_inner(&mut self, e: &Expr, sp: Option<&SpanTree>) -> Option<Type> {
        match e {
            Expr::Var(x) => {
                if let Some(t) = self.lookup_value(x) {
                    if t.is_int_array() && !self.in_gather {
                        self.error(
                            sp,
                            format!("`{x}` is an integer array: it may only be read inside an index, as in `E[{x}[i], j]`"),
                        );
                        return None;
                    }
                    return Some(t.clone());
                }
                let msg = if self.lookup_index(x).is_some() {
                    format!("`{x}` is an index, not a value")
                } else {
                    format!(
                        "unknown name `{x}`{}",
                        crate::diag::did_you_mean(x, self.names_in_scope(false))
                    )
                };
                self.error(sp, msg);
                None
            }
            Expr::Num(_) => Some(Type::Real),
            Expr::Bin(op, a, b) => {
                let ta = self.expr(a, child(sp, 0));
                let tb = self.expr(b, child(sp, 1));
                let what = format!("`{}`", op.symbol());
                self.number(ta, &what, child(sp, 0));
                self.number(tb, &what, child(sp, 1));
                Some(Type::Real)
            }
            Expr::Neg(a) => {
                let t = self.expr(a, child(sp, 0));
                self.number(t, "negation", child(sp, 0));
                Some(Type::Real)
            }
            Expr::Call(f, args) => {
                for (k, a) in args.iter().enumerate() {
                    let t = self.expr(a, child(sp, k));
                    self.number(t, &format!("`{}`", f.name()), child(sp, k));
                }
                Some(Type::Real)
            }
            Expr::Pair(a, b) => {
                let ta = self.expr(a, child(sp, 0));
                let tb = self.expr(b, child(sp, 1));
                Some(Type::pair(ta?, tb?))
            }
            Expr::Proj(k, a) => match self.expr(a, child(sp, 0))? {
                Type::Pair(t0, t1) => Some(if *k == 0 { *t0 } else { *t1 }),
                t => {
                    self.error(
                        sp,
                        format!(
                            "`.{k}` needs a pair, but the expression has type {}",
                            ty_str(&t)
                        ),
                    );
                    None
                }
            },
            Expr::Gen(i, n, body) | Expr::Sum(i, n, body) => {
                self.check_size(n, sp);
                self.scope.push((i.clone(), Binding::Index(n.clone())));
                let t = self.expr(body, child(sp, 0));
                self.scope.pop();
                if matches!(e, Expr::Gen(..)) {
                    Some(Type::tensor(n.clone(), t?))
                } else {
                    if let Some(t) = t {
                        if t != Type::Real {
                            self.error(
                                child(sp, 0),
                                format!("`sum` adds numbers, but its body has type {}", ty_str(&t)),
                            );
                        }
                    }
                    Some(Type::Real)
                }
            }
            Expr::Reduce(op, i, n, body) => {
                self.check_size(n, sp);
                self.scope.push((i.clone(), Binding::Index(n.clone())));
                let t = self.expr(body, child(sp, 0));
                self.scope.pop();
                if let Some(t) = t {
                    if t != Type::Real {
                        self.error(
                            child(sp, 0),
                            format!(
                                "`{}` reduces numbers, but its body has type {}",
                                op.name(),
                                ty_str(&t)
                            ),
                        );
                    }
                }
                Some(Type::Real)
            }
            Expr::Access(a, idx) => {
                let t = self.expr(a, child(sp, 0));
                self.check_affine(idx, sp);
                match t? {
                    Type::Tensor(n, elem) => {
                        if let Some(i) = idx.as_var() {
                            if let Some(r) = self.lookup_index(i).cloned() {
                                if r != n {
                                    let (axis, name) = access_root(a);
                                    let what = match name {
                                        Some(x) => format!("axis {axis} of `{x}`"),
                                        None => "the indexed axis".to_string(),
                                    };
                                    self.error(
                                        sp,
                                        format!(
                                            "index `{i}` ranges over {r} but {what} has size {n}"
                                        ),
                                    );
                                }
                            }
                        }
                        Some(*elem)
                    }
                    t => {
                        self.error(
                            sp,
                            format!(
                                "`[{}]` indexes a tensor, but the expression has type {}",
                                print_affine(idx),
                                ty_str(&t)
                            ),
                        );
                        None
                    }
                }
            }
            Expr::Bracket(p) => {
                for a in p.affines() {
                    self.check_affine(a, sp);
                }
                for d in cmp_differences(p) {
                    if !d.as_ref().is_some_and(Affine::in_index_range) {
                        self.error(
                            sp,
                            "a comparison whose sides differ by more than 2^62 (the index range) for some index values".to_string(),
                        );
                    }
                }
                Some(Type::Real)
            }
            Expr::Eps(idx) => {
                if idx.len() != 2 && idx.len() != 3 {
                    self.error(sp, format!("`eps` takes 2 or 3 indices, not {}", idx.len()));
                }
                for a in idx {
                    self.check_affine(a, sp);
                }
                Some(Type::Real)
            }
            Expr::Let(x, e1, e2) => {
                let t1 = self.expr(e1, child(sp, 0));
                match t1 {
                    Some(t1) => {
                        self.scope.push((x.clone(), Binding::Value(t1)));
                        let t = self.expr(e2, child(sp, 1));
                        self.scope.pop();
                        t
                    }
                    None => {
                        // keep checking the body, but silence errors about `x`
                        let before = self.errors.len();
                        let _ = self.expr(e2, child(sp, 1));
                        self.forget_unknown(before, x);
                        None
                    }
                }
            }
            Expr::IndexValue(a) => {
                self.check_affine(a, sp);
                Some(Type::Real)
            }
            Expr::SizeValue(n) => {
                self.check_size(&Size::Named(n.clone()), sp);
                Some(Type::Real)
            }
            Expr::Gather(a, g, c) => self.gather(a, g, *c, sp),
            Expr::Where(c, a, b) => {
                for (k, x) in c.exprs().into_iter().enumerate() {
                    let t = self.expr(x, child(sp, k));
                    self.number(t, "a comparison in `where`", child(sp, k));
                }
                let k = c.exprs().len();
                let ta = self.expr(a, child(sp, k));
                let tb = self.expr(b, child(sp, k + 1));
                self.number(ta, "`where`", child(sp, k));
                self.number(tb, "`where`", child(sp, k + 1));
                Some(Type::Real)
            }
            Expr::Fold(i, n, acc, init, body) => {
                self.check_size(n, sp);
                if acc == i {
                    self.error(
                        sp,
                        format!("the accumulator of `fold` has the name of its index, `{i}`: rename one"),
                    );
                }
                let t0 = self.expr(init, child(sp, 0));
                if let Some(t) = &t0 {
                    if !accumulator_type(t) {
                        self.error(
                            child(sp, 0),
                            format!(
                                "the accumulator `{acc}` of `fold` must be a number or a pair of numbers (like (R, R), pairs may nest), but its initial value has type {}",
                                ty_str(t)
                            ),
                        );
                    }
                }
                self.scope.push((i.clone(), Binding::Index(n.clone())));
                let before = self.errors.len();
                let tb = match &t0 {
                    Some(t) => {
                        self.scope.push((acc.clone(), Binding::Value(t.clone())));
                        let tb = self.expr(body, child(sp, 1));
                        self.scope.pop();
                        tb
                    }
                    None => {
                        // keep checking the body, but silence errors about `acc`
                        let _ = self.expr(body, child(sp, 1));
                        self.forget_unknown(before, acc);
                        None
                    }
                };
                self.scope.pop();
                if let (Some(t0), Some(tb)) = (&t0, &tb) {
                    if t0 != tb {
                        self.error(
                            child(sp, 1),
                            format!(
                                "the body of `fold` gives the next value of its accumulator `{acc}`, so it must have the accumulator's type {}, but it has type {}",
                                ty_str(t0),
                                ty_str(tb)
                            ),
                        );
                    }
                }
                t0
            }
        }
    }
}

/// Whether `t` may be the accumulator of a `fold`: a number, or a pair
/// whose sides may be.
pub fn accumulator_type(t: &Type) -> bool {
    match t {
        Type::Real => true,
        Type::Pair(a, b) => accumulator_type(a) && accumulator_type(b),
        Type::Tensor(..) => false,
        Type::Int => false,
    }
}

impl Checker<'_> {
    /// Drop the "unknown name `x`" errors reported since error `before`:
    /// `x` is bound by a binder whose value failed to check (its own error
    /// is reported), so uses of it in the body are not errors of their own.
    fn forget_unknown(&mut self, before: usize, x: &str) {
        let needle = format!("unknown name `{x}`");
        let mut k = before;
        while k < self.errors.len() {
            if self.errors[k].message.starts_with(&needle) {
                self.errors.remove(k);
            } else {
                k += 1;
            }
        }
    }

    /// `a[g + c]`: `a` an access chain from a parameter, `g` an integer
    /// array read at every axis.
    fn gather(&mut self, a: &Expr, g: &Expr, c: i64, sp: Option<&SpanTree>) -> Option<Type> {
        if c.unsigned_abs() > MAX_INDEX_MAGNITUDE as u64 {
            self.error(
                sp,
                format!("a gather's offset {c} is out of the index range (at most 2^62)"),
            );
        }
        let t = self.expr(a, child(sp, 0));
        let was = std::mem::replace(&mut self.in_gather, true);
        let tg = self.expr(g, child(sp, 1));
        self.in_gather = was;
        let (_, root) = access_root(a);
        let from_param = root.is_some_and(|x| {
            self.scope
                .iter()
                .rposition(|(n, b)| n == x && matches!(b, Binding::Value(_)))
                .is_some_and(|k| k < self.n_params)
        });
        if !from_param && !chain_has_error(a) {
            self.error(
                child(sp, 0),
                "a gather (an index read from an integer array) indexes a parameter or an access chain from one, as in `E[tok[i], j]`".to_string(),
            );
        }
        let mut root_g = g;
        while let Expr::Access(b, _) = root_g {
            root_g = b;
        }
        let plain = matches!(root_g, Expr::Var(_)) && !matches!(g, Expr::Var(_));
        match tg {
            Some(Type::Int) if plain => {}
            None => {}
            Some(t) => {
                let what = if matches!(t, Type::Tensor(..)) && t.is_int_array() {
                    "an integer array read at fewer indices than it has axes".to_string()
                } else {
                    format!("type {}", ty_str(&t))
                };
                self.error(
                    child(sp, 1),
                    format!("a gather's index must read one integer of an integer array (`tok[i]`, `tok[i, k] + 1`), but this is {what}"),
                );
            }
        }
        match t? {
            Type::Tensor(_, elem) => Some(*elem),
            t => {
                self.error(
                    sp,
                    format!(
                        "a gather indexes a tensor, but the expression has type {}",
                        ty_str(&t)
                    ),
                );
                None
            }
        }
    }
}

/// Whether an access chain's root is not a name (then its own error says so).
fn chain_has_error(a: &Expr) -> bool {
    let mut e = a;
    loop {
        match e {
            Expr::Access(b, _) | Expr::Proj(_, b) | Expr::Gather(b, _, _) => e = b,
            Expr::Var(_) => return false,
            _ => return false,
        }
    }
}

/// Whether a type holds `Z` anywhere.
fn has_int(t: &Type) -> bool {
    match t {
        Type::Int => true,
        Type::Real => false,
        Type::Tensor(_, e) => has_int(e),
        Type::Pair(a, b) => has_int(a) || has_int(b),
    }
}

fn range_msg(a: &Affine) -> String {
    format!(
        "index expression `{}` out of range: for every index value below 2^31 it must stay within ±2^62 (Σ|coefficient|·2^31 + |constant| ≤ {MAX_INDEX_MAGNITUDE})",
        print_affine(a)
    )
}

/// `a - b` of every comparison of a predicate (`None` when it overflows).
fn cmp_differences(p: &Pred) -> Vec<Option<Affine>> {
    let mut out = Vec::new();
    let mut stack = vec![p];
    while let Some(p) = stack.pop() {
        match p {
            Pred::Cmp(_, a, b) => out.push(a.checked_sub(b)),
            Pred::And(a, b) | Pred::Or(a, b) => {
                stack.push(a);
                stack.push(b);
            }
            Pred::Not(a) => stack.push(a),
        }
    }
    out
}

/// The axis number and root name of an access chain `x[..][..]`.
fn access_root(mut e: &Expr) -> (usize, Option<&str>) {
    let mut axis = 0;
    loop {
        match e {
            Expr::Access(b, _) | Expr::Gather(b, _, _) => {
                axis += 1;
                e = b;
            }
            Expr::Var(x) => return (axis, Some(x)),
            Expr::Proj(_, b) => e = b,
            _ => return (axis, None),
        }
    }
}

/// Type-check one function. `spans` (from the parser) lets errors point at
/// source text; without it they carry no position.
pub fn check_function(
    f: &Function,
    spans: Option<&FunctionSpans>,
) -> Result<Signature, Vec<Diagnostic>> {
    let mut c = Checker {
        scope: Vec::new(),
        sizes: f.size_names(),
        errors: Vec::new(),
        fspans: spans,
        n_params: f.params.len(),
        in_gather: false,
    };
    let name_sp = spans.map(|s| SpanTree::leaf(s.name));
    let mut seen = std::collections::HashSet::new();
    for (k, p) in f.params.iter().enumerate() {
        if !seen.insert(p.name.as_str()) {
            let sp = c.fspans.and_then(|s| s.params.get(k)).copied();
            c.errors.push(Diagnostic::new(
                format!("parameter `{}` is declared twice", p.name),
                sp,
            ));
        }
        if has_int(&p.ty) && !p.ty.is_int_array() {
            let sp = c.fspans.and_then(|s| s.params.get(k)).copied();
            c.errors.push(Diagnostic::new(
                format!(
                    "parameter `{}` has type {}: `Z` is only the element type of an integer array, `[n]Z` or `[n, m]Z`",
                    p.name,
                    ty_str(&p.ty)
                ),
                sp,
            ));
        }
        c.scope.push((p.name.clone(), Binding::Value(p.ty.clone())));
    }
    if let Some(t) = f.ret.as_ref().filter(|t| has_int(t)) {
        c.errors.push(Diagnostic::new(
            format!(
                "the result type {} holds `Z`: integer arrays are parameters only",
                ty_str(t)
            ),
            spans.and_then(|s| s.ret),
        ));
    }
    if let Some(t) = &f.ret {
        let mut names = Vec::new();
        t.size_names(&mut names);
        for n in names {
            if !c.sizes.contains(&n) {
                let sp: Option<Span> = spans.and_then(|s| s.ret);
                c.errors.push(Diagnostic::new(
                    format!("size `{n}` in the result type is not bound by any parameter"),
                    sp,
                ));
            }
        }
    }
    let t = c.expr(&f.body, spans.map(|s| &s.body));
    if let (Some(t), Some(r)) = (&t, &f.ret) {
        if t != r {
            let sp = spans.and_then(|s| s.ret).or(name_sp.map(|s| s.span));
            c.errors.push(Diagnostic::new(
                format!(
                    "the body of `{}` has type {} but the declared result type is {}",
                    f.name,
                    ty_str(t),
                    ty_str(r)
                ),
                sp,
            ));
        }
    }
    if c.errors.is_empty() {
        Ok(Signature {
            name: f.name.clone(),
            params: f.params.clone(),
            ret: t.expect("a body without errors has a type"),
        })
    } else {
        Err(c.errors)
    }
}

/// Type-check every function of a parsed file, collecting all errors.
pub fn check_parsed(p: &Parsed) -> Result<Vec<Signature>, Vec<Diagnostic>> {
    let mut sigs = Vec::new();
    let mut errs = Vec::new();
    // first definition of each name: a set keeps this linear in the file
    let mut seen = std::collections::HashSet::new();
    for (k, f) in p.program.functions.iter().enumerate() {
        if !seen.insert(f.name.as_str()) {
            errs.push(Diagnostic::new(
                format!("function `{}` is defined twice", f.name),
                p.spans.get(k).map(|s| s.name),
            ));
        }
        match check_function(f, p.spans.get(k)) {
            Ok(s) => sigs.push(s),
            Err(e) => errs.extend(e),
        }
    }
    if errs.is_empty() {
        Ok(sigs)
    } else {
        Err(errs)
    }
}

/// Parse and type-check a source text, reporting every error at once: the
/// syntax errors, and the type errors of the functions that parsed, in
/// source order. With a syntax error the result is [`crate::error::Error::Parse`]
/// (holding both kinds), else [`crate::error::Error::Type`]; neither carries the
/// source yet (see [`crate::error::Error::with_source`]).
pub fn parse_and_check(src: &str) -> crate::error::Result<Parsed> {
    let (parsed, mut errors) = crate::syntax::parse_program_partial(src);
    let type_errors = check_parsed(&parsed).err().unwrap_or_default();
    if errors.is_empty() {
        if type_errors.is_empty() {
            return Ok(parsed);
        }
        return Err(crate::error::Error::types(type_errors));
    }
    errors.extend(type_errors);
    errors.sort_by_key(|d| d.span.map_or(0, |s| s.start));
    Err(crate::error::Error::parse(errors))
}

/// Type-check a function built without source text.
pub fn check(f: &Function) -> Result<Signature, Vec<Diagnostic>> {
    check_function(f, None)
}
