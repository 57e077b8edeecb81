//! Rules as data: the `rules/*.rules` format, its parser, and the
//! instantiation of rules as egg rewrites.
//!
//! # Format
//!
//! The rule-file format (one `NAME [CLASS]: LHS => RHS if COND …` per
//! line, the operators of [`crate::egraph::TL`] as s-expressions, De Bruijn
//! indices, the meta-functions of [`METAS`] and the conditions of [`Cond`])
//! is documented for rule authors in `docs/rules.md`, with the rule
//! families as equations. A malformed file is an error naming `file:line`
//! and what is wrong ([`Error::RuleFile`]).
//!
//! Rules from outside the binary enter through [`super::load`], which
//! checks their soundness; this module only parses (the built-in rules,
//! which CI checks, are parsed here without a check: [`builtin_rules`]).

use super::*;
use crate::error::{Error, Result as EResult};
use egg::{Applier, ENodeOrVar, Pattern, PatternAst, Rewrite, Subst, Var};
use std::collections::BTreeMap;

/// A parsed s-expression.
#[derive(Clone, Debug, PartialEq)]
pub enum Sexp {
    Atom(String),
    List(Vec<Sexp>),
}

fn tokenize(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for ch in s.chars() {
        match ch {
            '(' | ')' => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                out.push(ch.to_string());
            }
            c if c.is_whitespace() => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn parse_sexps(toks: &[String]) -> Result<Vec<Sexp>, String> {
    let mut stack: Vec<Vec<Sexp>> = vec![Vec::new()];
    for t in toks {
        match t.as_str() {
            "(" => stack.push(Vec::new()),
            ")" => {
                let l = stack.pop().ok_or("unbalanced `)`")?;
                stack
                    .last_mut()
                    .ok_or("unbalanced `)`")?
                    .push(Sexp::List(l));
            }
            a => stack.last_mut().unwrap().push(Sexp::Atom(a.to_string())),
        }
        if stack.is_empty() {
            return Err("unbalanced `)`".into());
        }
    }
    if stack.len() != 1 {
        return Err("missing `)`".into());
    }
    Ok(stack.pop().unwrap())
}

/// A right-hand side: a pattern tree that may call meta-functions.
#[derive(Clone, Debug)]
pub enum Rhs {
    Var(String),
    Num(f64),
    Op(String, Vec<Rhs>),
    Meta(String, Vec<Rhs>),
}

/// A side condition.
#[derive(Clone, Debug)]
pub enum Cond {
    NotFree(String, u32),
    Free(String, u32),
    EqSize(String, String),
    Lit(String),
    SizeIs(String, usize),
    Always(String),
    Never(String),
    Solvable(String),
    IsVar(String, u32),
    Scalar(String),
    NoVar(String, String),
    Ne(String, String),
    PlainVar(String),
    Sym01(String),
    Weak(String),
    Nonempty(String),
}

/// How a rule treats floating-point values: the classes of the
/// floating-point contract (`docs/fp-contract.md`). The default mode of
/// the optimiser uses only [`FpClass::safe`] rules; the fast mode
/// (`Options::fast_math`) uses all. A rule's class is checked when it is
/// loaded (see [`crate::egraph::check`]): a rule that does not have the
/// class it claims is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FpClass {
    /// Both sides give the same value for every input, including ±inf,
    /// NaN, huge and tiny magnitudes, and the same strong-zero flag
    /// (the sign of a zero and NaN payloads aside).
    Exact,
    /// The sides regroup the terms of a sum or the factors of a product,
    /// keeping every term: equal up to the rounding, overflow and
    /// `inf·0` differences that reordering a sum allows.
    Reassociating,
    /// Reassociating for finite inputs; may turn an infinity or NaN into
    /// a number (`x*0 -> 0`).
    FiniteOnly,
    /// Equal in exact arithmetic only: may cancel terms and lose every
    /// digit to cancellation (`(a + b) - b -> a`).
    Cancelling,
}

impl FpClass {
    /// All classes, strongest first.
    pub const ALL: [FpClass; 4] = [
        FpClass::Exact,
        FpClass::Reassociating,
        FpClass::FiniteOnly,
        FpClass::Cancelling,
    ];

    /// The class's name in rule files.
    pub fn name(self) -> &'static str {
        match self {
            FpClass::Exact => "exact",
            FpClass::Reassociating => "reassociating",
            FpClass::FiniteOnly => "finite-only",
            FpClass::Cancelling => "cancelling",
        }
    }

    /// The class of a name in rule files.
    pub fn parse(s: &str) -> Option<FpClass> {
        FpClass::ALL.into_iter().find(|c| c.name() == s)
    }

    /// Used in the default (value-safe) mode.
    pub fn safe(self) -> bool {
        matches!(self, FpClass::Exact | FpClass::Reassociating)
    }
}

impl fmt::Display for FpClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One rule.
#[derive(Clone, Debug)]
pub struct Rule {
    /// The rule's name (`NAME-rev` for the reverse of a `<=>` rule).
    pub name: String,
    /// Its floating-point class, as written in the file.
    pub class: FpClass,
    /// The family: the file's name without `.rules`.
    pub family: String,
    /// The left side, a pattern.
    pub lhs: Sexp,
    /// The right side, as built (meta-functions resolved per match).
    pub rhs: Rhs,
    /// The right side as written.
    pub rhs_sexp: Sexp,
    /// The side conditions, all of which must hold.
    pub conds: Vec<Cond>,
    /// Where it was defined, `file:line`.
    pub origin: String,
}

impl Rule {
    /// Whether the rule may run on programs in an integer format
    /// ([`crate::precision::Precision::I64`], `I32`): its sides and
    /// conditions use no division, no `max`/`min` reduction or function,
    /// no order comparison and only integer literals — ring identities and
    /// the structural families, which hold in wrapping integers (checked
    /// by [`crate::egraph::check::check_rule_int`]). Order does not mix
    /// with wrapping arithmetic (`max(-e) = -min(e)` fails at the smallest
    /// integer), so those rules stay out.
    pub fn int_admitted(&self) -> bool {
        fn ok(s: &Sexp) -> bool {
            match s {
                Sexp::Atom(a) => {
                    const DENY: [&str; 19] = [
                        "/", "rmax", "rmin", "<", "<=", ">", ">=", "sqrt", "exp", "log", "sin",
                        "cos", "tanh", "abs", "max", "min", "call", "erf", "pow",
                    ];
                    if DENY.contains(&a.as_str()) {
                        return false;
                    }
                    match a.parse::<f64>() {
                        Ok(x) => x.fract() == 0.0 && x.abs() < 2f64.powi(31),
                        Err(_) => true,
                    }
                }
                Sexp::List(v) => v.iter().all(ok),
            }
        }
        // (the conditions are structural: free variables, sizes, literals)
        ok(&self.lhs) && ok(&self.rhs_sexp)
    }

    /// The file and 1-based line of [`Rule::origin`].
    pub fn file_line(&self) -> (String, Option<usize>) {
        split_origin(&self.origin)
    }
}

fn split_origin(origin: &str) -> (String, Option<usize>) {
    match origin.rsplit_once(':') {
        Some((f, l)) => match l.parse() {
            Ok(l) => (f.to_string(), Some(l)),
            Err(_) => (origin.to_string(), None),
        },
        None => (origin.to_string(), None),
    }
}

/// The meta-functions and their arities.
pub const METAS: &[(&str, usize)] = &[
    ("@shift", 1),
    ("@unshift", 1),
    ("@subst", 2),
    ("@swap", 1),
    ("@eq", 2),
    ("@and", 2),
    ("@solve", 1),
    ("@guard", 2),
    ("@inrange", 2),
    ("@num", 1),
    ("@substvar", 3),
    ("@getvar", 1),
    ("@never", 0),
    ("@not", 1),
];

fn pattern_vars(s: &Sexp, out: &mut Vec<String>) {
    match s {
        Sexp::Atom(a) if a.starts_with('?') => {
            if !out.contains(a) {
                out.push(a.clone())
            }
        }
        Sexp::Atom(_) => {}
        Sexp::List(l) => l.iter().for_each(|x| pattern_vars(x, out)),
    }
}

fn is_num(a: &str) -> bool {
    a.starts_with(|c: char| c.is_ascii_digit()) && a.parse::<f64>().is_ok()
}

fn check_lhs(s: &Sexp) -> Result<(), String> {
    match s {
        Sexp::Atom(a) => {
            if a.starts_with('?') || is_num(a) {
                Ok(())
            } else if a.starts_with('@') {
                Err(format!("meta-function `{a}` on the left side"))
            } else {
                Err(format!("unknown atom `{a}` (operators need parentheses)"))
            }
        }
        Sexp::List(l) => {
            let (head, args) = l.split_first().ok_or("empty list")?;
            let op = match head {
                Sexp::Atom(a) => a,
                _ => return Err("a list must start with an operator".into()),
            };
            if op.starts_with('@') {
                return Err(format!("meta-function `{op}` on the left side"));
            }
            let arity = OPERATORS
                .iter()
                .find(|(o, _)| o == op)
                .ok_or_else(|| format!("unknown operator `{op}`"))?
                .1;
            match arity {
                Some(n) if n != args.len() => {
                    return Err(format!("`{op}` takes {n} arguments, not {}", args.len()))
                }
                None if args.len() != 2 && args.len() != 3 => {
                    return Err(format!("`{op}` takes 2 or 3 arguments"))
                }
                _ => {}
            }
            args.iter().try_for_each(check_lhs)
        }
    }
}

fn to_rhs(s: &Sexp, bound: &[String]) -> Result<Rhs, String> {
    match s {
        Sexp::Atom(a) => {
            if a.starts_with('?') {
                if bound.contains(a) {
                    Ok(Rhs::Var(a.clone()))
                } else {
                    Err(format!(
                        "right side uses `{a}`, which the left side does not bind"
                    ))
                }
            } else if is_num(a) {
                Ok(Rhs::Num(a.parse().unwrap()))
            } else {
                Err(format!("unknown atom `{a}` (operators need parentheses)"))
            }
        }
        Sexp::List(l) => {
            let (head, args) = l.split_first().ok_or("empty list")?;
            let op = match head {
                Sexp::Atom(a) => a.clone(),
                _ => return Err("a list must start with an operator".into()),
            };
            let args = args
                .iter()
                .map(|a| to_rhs(a, bound))
                .collect::<Result<Vec<_>, _>>()?;
            if op.starts_with('@') {
                let ar = METAS
                    .iter()
                    .find(|(m, _)| *m == op)
                    .ok_or_else(|| format!("unknown meta-function `{op}`"))?
                    .1;
                if ar != args.len() {
                    return Err(format!("`{op}` takes {ar} arguments, not {}", args.len()));
                }
                Ok(Rhs::Meta(op, args))
            } else {
                let arity = OPERATORS
                    .iter()
                    .find(|(o, _)| *o == op)
                    .ok_or_else(|| format!("unknown operator `{op}`"))?
                    .1;
                match arity {
                    Some(n) if n != args.len() => {
                        Err(format!("`{op}` takes {n} arguments, not {}", args.len()))
                    }
                    None if args.len() != 2 && args.len() != 3 => {
                        Err(format!("`{op}` takes 2 or 3 arguments"))
                    }
                    _ => Ok(Rhs::Op(op, args)),
                }
            }
        }
    }
}

fn to_cond(s: &Sexp, bound: &[String]) -> Result<Cond, String> {
    let l = match s {
        Sexp::List(l) if !l.is_empty() => l,
        _ => return Err(format!("a condition must be a list, found `{s:?}`")),
    };
    let atoms: Vec<String> = l
        .iter()
        .map(|x| match x {
            Sexp::Atom(a) => Ok(a.clone()),
            _ => Err("condition arguments are atoms".to_string()),
        })
        .collect::<Result<_, _>>()?;
    let var = |k: usize| -> Result<String, String> {
        let a = atoms
            .get(k)
            .ok_or_else(|| format!("condition `{}` needs more arguments", atoms[0]))?;
        if !bound.contains(a) {
            return Err(format!(
                "condition uses `{a}`, which the left side does not bind"
            ));
        }
        Ok(a.clone())
    };
    let num = |k: usize| -> Result<u32, String> {
        match atoms.get(k) {
            Some(a) if !a.is_empty() && a.bytes().all(|c| c.is_ascii_digit()) => {
                a.parse().map_err(|_| {
                    format!(
                        "condition `{}`: the number `{a}` is out of range (at most {})",
                        atoms[0],
                        u32::MAX
                    )
                })
            }
            _ => Err(format!("condition `{}` needs a number argument", atoms[0])),
        }
    };
    let arity = |n: usize| -> Result<(), String> {
        if atoms.len() != n + 1 {
            Err(format!("condition `{}` takes {n} arguments", atoms[0]))
        } else {
            Ok(())
        }
    };
    Ok(match atoms[0].as_str() {
        "notfree" => {
            arity(2)?;
            Cond::NotFree(var(1)?, num(2)?)
        }
        "free" => {
            arity(2)?;
            Cond::Free(var(1)?, num(2)?)
        }
        "eqsize" => {
            arity(2)?;
            Cond::EqSize(var(1)?, var(2)?)
        }
        "lit" => {
            arity(1)?;
            Cond::Lit(var(1)?)
        }
        "size" => {
            arity(2)?;
            Cond::SizeIs(var(1)?, num(2)? as usize)
        }
        "always" => {
            arity(1)?;
            Cond::Always(var(1)?)
        }
        "never" => {
            arity(1)?;
            Cond::Never(var(1)?)
        }
        "solvable" => {
            arity(1)?;
            Cond::Solvable(var(1)?)
        }
        "isvar" => {
            arity(2)?;
            Cond::IsVar(var(1)?, num(2)?)
        }
        "scalar" => {
            arity(1)?;
            Cond::Scalar(var(1)?)
        }
        "novar" => {
            arity(2)?;
            Cond::NoVar(var(1)?, var(2)?)
        }
        "ne" => {
            arity(2)?;
            Cond::Ne(var(1)?, var(2)?)
        }
        "plainvar" => {
            arity(1)?;
            Cond::PlainVar(var(1)?)
        }
        "sym01" => {
            arity(1)?;
            Cond::Sym01(var(1)?)
        }
        "weak" => {
            arity(1)?;
            Cond::Weak(var(1)?)
        }
        "nonempty" => {
            arity(1)?;
            Cond::Nonempty(var(1)?)
        }
        c => return Err(format!("unknown condition `{c}`")),
    })
}

/// The name and class of a rule, from `NAME [CLASS]`.
fn rule_head(head: &str) -> Result<(&str, FpClass), String> {
    let classes = || {
        FpClass::ALL
            .iter()
            .map(|c| c.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some((name, class)) = head.split_once('[') else {
        let hint = if head.is_empty() || head.contains(char::is_whitespace) {
            String::new()
        } else {
            format!(": write `{head} [exact]: ...`")
        };
        return Err(format!(
            "rule `{head}` has no floating-point class{hint} (classes: {}; see docs/fp-contract.md)",
            classes()
        ));
    };
    let name = name.trim();
    if name.is_empty() || name.contains(char::is_whitespace) || name.contains(']') {
        return Err(format!("bad rule name `{name}`"));
    }
    let class = class
        .strip_suffix(']')
        .ok_or_else(|| format!("rule `{name}`: expected `]` after the class"))?
        .trim();
    let class = FpClass::parse(class).ok_or_else(|| {
        format!(
            "rule `{name}`: unknown floating-point class `{class}` (classes: {})",
            classes()
        )
    })?;
    Ok((name, class))
}

/// Parse one rules file, without the soundness check.
pub(crate) fn parse_unchecked(file: &str, text: &str) -> EResult<Vec<Rule>> {
    let family = std::path::Path::new(file)
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_else(|| file.to_string());
    let mut out: Vec<Rule> = Vec::new();
    for (ln, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let at = format!("{file}:{}", ln + 1);
        let err = |m: String| Error::RuleFile {
            file: file.to_string(),
            line: Some(ln + 1),
            message: m,
        };
        let (head, rest) = line
            .split_once(':')
            .ok_or_else(|| err("expected `NAME [CLASS]: LHS => RHS`".into()))?;
        let (name, class) = rule_head(head.trim()).map_err(&err)?;
        let (both, lhs_s, rest) = if let Some((l, r)) = rest.split_once("<=>") {
            (true, l, r)
        } else if let Some((l, r)) = rest.split_once("=>") {
            (false, l, r)
        } else {
            return Err(err("expected `=>` or `<=>`".into()));
        };
        let (rhs_s, cond_s) = match rest.split_once(" if ") {
            Some((r, c)) => (r, Some(c)),
            None => (rest, None),
        };
        let one = |s: &str, what: &str| -> EResult<Sexp> {
            let v = parse_sexps(&tokenize(s)).map_err(|m| err(format!("{what}: {m}")))?;
            if v.len() != 1 {
                return Err(err(format!(
                    "{what} must be one pattern, found {}",
                    v.len()
                )));
            }
            Ok(v.into_iter().next().unwrap())
        };
        let lhs = one(lhs_s, "left side")?;
        let rhs_sexp = one(rhs_s, "right side")?;
        check_lhs(&lhs).map_err(|m| err(format!("left side: {m}")))?;
        let mut vars = Vec::new();
        pattern_vars(&lhs, &mut vars);
        let rhs = to_rhs(&rhs_sexp, &vars).map_err(|m| err(format!("right side: {m}")))?;
        let conds = match cond_s {
            Some(c) => parse_sexps(&tokenize(c))
                .map_err(|m| err(format!("conditions: {m}")))?
                .iter()
                .map(|s| to_cond(s, &vars))
                .collect::<Result<Vec<_>, _>>()
                .map_err(&err)?,
            None => vec![],
        };
        if out.iter().any(|r| r.name == name) {
            return Err(err(format!("rule `{name}` is defined twice")));
        }
        out.push(Rule {
            name: name.to_string(),
            class,
            family: family.clone(),
            lhs: lhs.clone(),
            rhs,
            rhs_sexp: rhs_sexp.clone(),
            conds: conds.clone(),
            origin: at.clone(),
        });
        if both {
            check_lhs(&rhs_sexp).map_err(|m| {
                err(format!(
                    "`<=>` needs a plain pattern on the right side: {m}"
                ))
            })?;
            let mut rv = Vec::new();
            pattern_vars(&rhs_sexp, &mut rv);
            if vars.iter().any(|v| !rv.contains(v)) {
                return Err(err(
                    "`<=>` needs both sides to bind the same variables".into()
                ));
            }
            let back = to_rhs(&lhs, &rv).map_err(&err)?;
            out.push(Rule {
                name: format!("{name}-rev"),
                class,
                family: family.clone(),
                lhs: rhs_sexp,
                rhs: back,
                rhs_sexp: lhs.clone(),
                conds,
                origin: at,
            });
        }
    }
    Ok(out)
}

/// The built-in rule files, embedded in the binary.
pub const BUILTIN: &[(&str, &str)] = &[
    ("pairs.rules", include_str!("../../rules/pairs.rules")),
    ("lets.rules", include_str!("../../rules/lets.rules")),
    ("gens.rules", include_str!("../../rules/gens.rules")),
    ("sums.rules", include_str!("../../rules/sums.rules")),
    (
        "delta_eps.rules",
        include_str!("../../rules/delta_eps.rules"),
    ),
    ("binding.rules", include_str!("../../rules/binding.rules")),
    ("algebra.rules", include_str!("../../rules/algebra.rules")),
    (
        "reductions.rules",
        include_str!("../../rules/reductions.rules"),
    ),
    ("where.rules", include_str!("../../rules/where.rules")),
];

/// All built-in rules.
pub fn builtin_rules() -> Vec<Rule> {
    let mut v = Vec::new();
    for (f, t) in BUILTIN {
        v.extend(parse_unchecked(&format!("rules/{f}"), t).expect("built-in rules parse"));
    }
    v
}

// ---------------------------------------------------------------------------
// Evaluating conditions and right sides against some store of terms

/// What conditions and meta-functions need from where terms live (the
/// e-graph, or a single tree for soundness checking).
pub trait Store {
    fn fv(&self, id: Id) -> u64;
    fn ty(&self, id: Id) -> Option<Type>;
    fn has_var(&self, id: Id, x: Symbol) -> bool;
    fn node(&self, id: Id) -> Option<TL>;
    fn term(&self, id: Id) -> Option<RecExpr<TL>>;
    fn add(&mut self, n: TL) -> Id;
    fn add_term(&mut self, t: &RecExpr<TL>) -> Id;
    fn same(&self, a: Id, b: Id) -> bool;
    /// The class of a term, when it is already present.
    fn find_term(&self, t: &RecExpr<TL>) -> Option<Id>;
    /// Whether the term may evaluate to a strong zero ([`node_strong`]).
    fn may_be_strong(&self, id: Id) -> bool;
}

fn get_aff<S: Store>(s: &S, id: Id) -> Option<Affine> {
    get_aff_leaf(s, id).map(|a| a.0)
}
fn get_aff_leaf<S: Store>(s: &S, id: Id) -> Option<AffLeaf> {
    match s.node(id)? {
        TL::Aff(a) => Some(a),
        _ => None,
    }
}
fn get_pred<S: Store>(s: &S, id: Id) -> Option<Pred> {
    match s.node(id)? {
        TL::Pred(p) => Some(p.0),
        _ => None,
    }
}
fn get_size<S: Store>(s: &S, id: Id) -> Option<Size> {
    match s.node(id)? {
        TL::Size(p) => Some(p.0),
        _ => None,
    }
}

/// `p ⇔ #0 = ι`: ι, lowered out of the binder.
pub fn solve(p: &Pred) -> Option<Affine> {
    let (a, b) = match p {
        Pred::Cmp(CmpOp::Eq, a, b) => (a, b),
        // a conjunction pins `#0` when one of its conjuncts does
        Pred::And(x, y) => return solve(x).or_else(|| solve(y)),
        _ => return None,
    };
    let d = a.sub(b);
    let c = *d.terms.get(&db(0))?;
    if c != 1 && c != -1 {
        return None;
    }
    let mut rest = d.clone();
    rest.terms.remove(&db(0));
    // c·#0 + rest = 0  ⇒  #0 = -rest / c
    let iota = rest.scale(-c);
    Some(shift_aff(&iota, 1, -1))
}

/// `p` without its conjuncts that mention only `#0` and hold for every
/// `#0` in `0..n`; `None` when no conjunct goes.
fn drop_in_range(p: &Pred, n: i64) -> Option<Pred> {
    fn conj(p: &Pred, out: &mut Vec<Pred>) {
        match p {
            Pred::And(a, b) => {
                conj(a, out);
                conj(b, out);
            }
            p => out.push(p.clone()),
        }
    }
    let zero = db(0);
    let mut all = Vec::new();
    conj(p, &mut all);
    let before = all.len();
    all.retain(|c| {
        let only0 = c.affines().iter().all(|a| a.vars().all(|v| v == zero));
        let mentions0 = c.affines().iter().any(|a| a.vars().any(|v| v == zero));
        !(only0 && mentions0 && (0..n).all(|v| c.eval(&|_: &str| v)))
    });
    if all.len() == before {
        return None;
    }
    let mut it = all.into_iter();
    Some(match it.next() {
        None => Pred::Cmp(CmpOp::Eq, Affine::constant(0), Affine::constant(0)),
        Some(first) => it.fold(first, |a, b| Pred::And(Box::new(a), Box::new(b))),
    })
}

/// `p ∧ q` without the conjuncts that always hold.
pub fn simp_and(p: Pred, q: Pred) -> Pred {
    fn conj(p: Pred, out: &mut Vec<Pred>) {
        match p {
            Pred::And(a, b) => {
                conj(*a, out);
                conj(*b, out);
            }
            p => {
                if decide(&p) != Some(true) && !out.contains(&p) {
                    out.push(p)
                }
            }
        }
    }
    let mut v = Vec::new();
    conj(p, &mut v);
    conj(q, &mut v);
    let mut it = v.into_iter();
    match it.next() {
        None => Pred::Cmp(CmpOp::Eq, Affine::constant(0), Affine::constant(0)),
        Some(first) => it.fold(first, |a, b| Pred::And(Box::new(a), Box::new(b))),
    }
}

/// The predicate that never holds, in its one canonical form (every failed
/// bracket is this strong zero).
pub fn never_pred() -> Pred {
    Pred::Cmp(CmpOp::Ne, Affine::constant(0), Affine::constant(0))
}

/// Check one condition.
pub fn check_cond<S: Store>(s: &S, c: &Cond, v: &impl Fn(&str) -> Id) -> bool {
    match c {
        Cond::NotFree(x, k) => s.fv(v(x)) & (1u64 << (*k).min(63)) == 0,
        Cond::Free(x, k) => s.fv(v(x)) & (1u64 << (*k).min(63)) != 0,
        Cond::EqSize(a, b) => {
            matches!((get_size(s, v(a)), get_size(s, v(b))), (Some(x), Some(y)) if x == y)
        }
        Cond::Lit(a) => matches!(get_size(s, v(a)), Some(Size::Lit(_))),
        Cond::SizeIs(a, n) => get_size(s, v(a)) == Some(Size::Lit(*n)),
        Cond::Always(p) => get_pred(s, v(p)).and_then(|p| decide(&p)) == Some(true),
        Cond::Never(p) => get_pred(s, v(p)).and_then(|p| decide(&p)) == Some(false),
        Cond::Solvable(p) => get_pred(s, v(p)).and_then(|p| solve(&p)).is_some(),
        Cond::IsVar(a, k) => get_aff(s, v(a)).is_some_and(|a| a == Affine::var(db(*k))),
        Cond::Scalar(e) => s.ty(v(e)) == Some(Type::Real),
        Cond::NoVar(e, x) => match s.node(v(x)) {
            Some(TL::Var(sym)) => !s.has_var(v(e), sym),
            _ => false,
        },
        Cond::Ne(a, b) => !s.same(v(a), v(b)),
        Cond::PlainVar(a) => get_aff_leaf(s, v(a)).is_some_and(|a| a.is_exact_var()),
        Cond::Weak(e) => !s.may_be_strong(v(e)),
        Cond::Nonempty(n) => matches!(get_size(s, v(n)), Some(Size::Lit(k)) if k >= 1),
        Cond::Sym01(e) => {
            let id = v(e);
            if s.fv(id) & 3 == 0 {
                return true;
            }
            match s.term(id) {
                Some(t) => s.find_term(&swap_term(&t)).is_some_and(|k| s.same(k, id)),
                None => false,
            }
        }
    }
}

/// Build a right side; `None` when a meta-function is undefined here.
pub fn build_rhs<S: Store>(s: &mut S, r: &Rhs, v: &impl Fn(&str) -> Id) -> Option<Id> {
    Some(match r {
        Rhs::Var(x) => v(x),
        Rhs::Num(x) => s.add(TL::Num(NumLeaf(*x))),
        Rhs::Op(op, args) => {
            let mut ch = Vec::new();
            for a in args {
                ch.push(build_rhs(s, a, v)?);
            }
            let n = make_op(op, &ch)?;
            s.add(n)
        }
        Rhs::Meta(m, args) => {
            let mut ch = Vec::new();
            for a in args {
                ch.push(build_rhs(s, a, v)?);
            }
            meta(s, m, &ch)?
        }
    })
}

fn meta<S: Store>(s: &mut S, m: &str, a: &[Id]) -> Option<Id> {
    match m {
        "@shift" => {
            if s.fv(a[0]) == 0 {
                return Some(a[0]);
            }
            let t = shift_term(&s.term(a[0])?, 1);
            Some(s.add_term(&t))
        }
        "@unshift" => {
            if s.fv(a[0]) & 1 != 0 {
                return None;
            }
            if s.fv(a[0]) == 0 {
                return Some(a[0]);
            }
            let t = shift_term(&s.term(a[0])?, -1);
            Some(s.add_term(&t))
        }
        "@subst" => {
            let by = get_aff_leaf(s, a[1])?;
            if s.fv(a[0]) == 0 {
                return Some(a[0]);
            }
            let t = subst_term(&s.term(a[0])?, &by);
            Some(s.add_term(&t))
        }
        "@swap" => {
            if s.fv(a[0]) & 3 == 0 {
                return Some(a[0]);
            }
            let t = swap_term(&s.term(a[0])?);
            Some(s.add_term(&t))
        }
        "@eq" => {
            let x = get_aff(s, a[0])?;
            let y = get_aff(s, a[1])?;
            Some(s.add(TL::Pred(PredLeaf(Pred::Cmp(CmpOp::Eq, x, y)))))
        }
        "@and" => {
            let p = get_pred(s, a[0])?;
            let q = get_pred(s, a[1])?;
            Some(s.add(TL::Pred(PredLeaf(simp_and(p, q)))))
        }
        "@solve" => {
            let p = get_pred(s, a[0])?;
            let i = solve(&p)?;
            // solved from a predicate: nothing bounds its range
            Some(s.add(TL::Aff(AffLeaf::loose(i))))
        }
        "@guard" => {
            let n = match get_size(s, a[0])? {
                Size::Lit(n) => n as i64,
                Size::Named(_) => return None,
            };
            let x = get_aff(s, a[1])?;
            let p = Pred::And(
                Box::new(Pred::Cmp(CmpOp::Le, Affine::constant(0), x.clone())),
                Box::new(Pred::Cmp(CmpOp::Lt, x, Affine::constant(n))),
            );
            let p = match decide(&p) {
                Some(true) => Pred::Cmp(CmpOp::Eq, Affine::constant(0), Affine::constant(0)),
                _ => p,
            };
            Some(s.add(TL::Pred(PredLeaf(p))))
        }
        "@inrange" => {
            let n = match get_size(s, a[0])? {
                Size::Lit(n) if n <= 1 << 16 => n as i64,
                _ => return None,
            };
            let p = get_pred(s, a[1])?;
            let q = drop_in_range(&p, n)?;
            Some(s.add(TL::Pred(PredLeaf(q))))
        }
        "@num" => match get_size(s, a[0])? {
            Size::Lit(n) => Some(s.add(TL::Num(NumLeaf(n as f64)))),
            Size::Named(_) => None,
        },
        "@substvar" => {
            let x = match s.node(a[1])? {
                TL::Var(x) => x,
                _ => return None,
            };
            let body = s.term(a[0])?;
            let val = s.term(a[2])?;
            let t = subst_var_term(&body, x, &val);
            Some(s.add_term(&t))
        }
        "@getvar" => {
            let k = s.add(TL::Aff(AffLeaf::exact(Affine::var(db(0)))));
            Some(s.add(TL::Get([a[0], k])))
        }
        "@never" => Some(s.add(TL::Pred(PredLeaf(never_pred())))),
        "@not" => {
            let p = get_pred(s, a[0])?;
            let q = match p {
                Pred::Not(q) => *q,
                p => match decide(&p) {
                    Some(b) => {
                        if b {
                            never_pred()
                        } else {
                            Pred::Cmp(CmpOp::Eq, Affine::constant(0), Affine::constant(0))
                        }
                    }
                    None => Pred::Not(Box::new(p)),
                },
            };
            Some(s.add(TL::Pred(PredLeaf(q))))
        }
        _ => None,
    }
}

/// `e{x ↦ v}` on terms: `v` is lifted under the binders it is moved into;
/// a `let` of the same name stops the substitution. Shared subterms are
/// visited once per binder depth (memoised), so the result stays shared and
/// the cost is linear in the terms, not in the trees they stand for.
pub fn subst_var_term(e: &RecExpr<TL>, x: Symbol, v: &RecExpr<TL>) -> RecExpr<TL> {
    type Memo = std::collections::HashMap<(Id, i64), Id>;
    fn copy(src: &RecExpr<TL>, id: Id, out: &mut RecExpr<TL>, memo: &mut Memo) -> Id {
        if let Some(k) = memo.get(&(id, -1)) {
            return *k;
        }
        let n = src[id].clone().map_children(|c| copy(src, c, out, memo));
        let k = out.add(n);
        memo.insert((id, -1), k);
        k
    }
    struct Cx<'a> {
        e: &'a RecExpr<TL>,
        x: Symbol,
        v: &'a RecExpr<TL>,
        out: RecExpr<TL>,
        /// `e`'s subterms: copied (depth -1) and substituted at a depth
        memo: Memo,
        /// `v` lifted by a depth, copied into `out`
        lifted: std::collections::HashMap<i64, Id>,
    }
    fn go(cx: &mut Cx, id: Id, depth: i64) -> Id {
        if let Some(k) = cx.memo.get(&(id, depth)) {
            return *k;
        }
        let k = build(cx, id, depth);
        cx.memo.insert((id, depth), k);
        k
    }
    fn build(cx: &mut Cx, id: Id, depth: i64) -> Id {
        let e = cx.e;
        match &e[id] {
            TL::Var(y) if *y == cx.x => {
                if let Some(k) = cx.lifted.get(&depth) {
                    return *k;
                }
                let lifted = shift_term(cx.v, depth);
                let root = Id::from(lifted.as_ref().len() - 1);
                let k = copy(&lifted, root, &mut cx.out, &mut Memo::new());
                cx.lifted.insert(depth, k);
                k
            }
            TL::Let([n, a, b]) if matches!(&e[*n], TL::Var(y) if *y == cx.x) => {
                let n2 = copy(e, *n, &mut cx.out, &mut cx.memo);
                let a2 = go(cx, *a, depth);
                let b2 = copy(e, *b, &mut cx.out, &mut cx.memo);
                cx.out.add(TL::Let([n2, a2, b2]))
            }
            TL::Let([n, a, b]) => {
                let n2 = copy(e, *n, &mut cx.out, &mut cx.memo);
                let a2 = go(cx, *a, depth);
                let b2 = go(cx, *b, depth);
                cx.out.add(TL::Let([n2, a2, b2]))
            }
            TL::Gen([s, b]) | TL::Sum([s, b]) => {
                let s2 = copy(e, *s, &mut cx.out, &mut cx.memo);
                let b2 = go(cx, *b, depth + 1);
                cx.out.add(if matches!(&e[id], TL::Gen(_)) {
                    TL::Gen([s2, b2])
                } else {
                    TL::Sum([s2, b2])
                })
            }
            TL::RMax([s, b]) | TL::RMin([s, b]) => {
                let s2 = copy(e, *s, &mut cx.out, &mut cx.memo);
                let b2 = go(cx, *b, depth + 1);
                let op = super::node_red(&e[id]).expect("a reduction").0;
                cx.out.add(super::red_node(op, s2, b2))
            }
            TL::Fold([s, n, a, b]) => {
                // the accumulator of the same name stops the substitution
                // in the body (as a `let` does), which is one binder deeper
                let s2 = copy(e, *s, &mut cx.out, &mut cx.memo);
                let n2 = copy(e, *n, &mut cx.out, &mut cx.memo);
                let a2 = go(cx, *a, depth);
                let b2 = if matches!(&e[*n], TL::Var(y) if *y == cx.x) {
                    copy(e, *b, &mut cx.out, &mut cx.memo)
                } else {
                    go(cx, *b, depth + 1)
                };
                cx.out.add(TL::Fold([s2, n2, a2, b2]))
            }
            n => {
                let n = n.clone().map_children(|c| go(cx, c, depth));
                cx.out.add(n)
            }
        }
    }
    let mut cx = Cx {
        e,
        x,
        v,
        out: RecExpr::default(),
        memo: Memo::new(),
        lifted: Default::default(),
    };
    let root = Id::from(e.as_ref().len() - 1);
    go(&mut cx, root, 0);
    cx.out
}

// ---------------------------------------------------------------------------
// The e-graph as a store

struct GraphStore<'a>(&'a mut TlGraph);

impl Store for GraphStore<'_> {
    fn fv(&self, id: Id) -> u64 {
        self.0[id].data.fv
    }
    fn ty(&self, id: Id) -> Option<Type> {
        self.0[id].data.ty.clone()
    }
    fn has_var(&self, id: Id, x: Symbol) -> bool {
        self.0[id].data.vars.contains(&x)
    }
    fn node(&self, id: Id) -> Option<TL> {
        leaf_of(self.0, id).cloned().or_else(|| {
            self.0[id]
                .nodes
                .iter()
                .find(|n| matches!(n, TL::Var(_)))
                .cloned()
        })
    }
    fn term(&self, id: Id) -> Option<RecExpr<TL>> {
        representative(self.0, id)
    }
    fn add(&mut self, n: TL) -> Id {
        self.0.add(n)
    }
    fn add_term(&mut self, t: &RecExpr<TL>) -> Id {
        self.0.add_expr(t)
    }
    fn same(&self, a: Id, b: Id) -> bool {
        self.0.find(a) == self.0.find(b)
    }
    fn find_term(&self, t: &RecExpr<TL>) -> Option<Id> {
        self.0.lookup_expr(t)
    }
    fn may_be_strong(&self, id: Id) -> bool {
        self.0[id].data.strong
    }
}

/// A rule as an egg applier: conditions, then the right side.
pub struct RuleApplier {
    pub rule: Rule,
    rhs_pattern: Option<Pattern<TL>>,
}

fn lookup(subst: &Subst, x: &str) -> Id {
    let v: Var = x.parse().expect("pattern variables parse");
    subst[v]
}

impl Applier<TL, TlAnalysis> for RuleApplier {
    fn apply_one(
        &self,
        egraph: &mut TlGraph,
        eclass: Id,
        subst: &Subst,
        searcher_ast: Option<&PatternAst<TL>>,
        rule_name: Symbol,
    ) -> Vec<Id> {
        let v = |x: &str| lookup(subst, x);
        {
            let st = GraphStore(egraph);
            if !self.rule.conds.iter().all(|c| check_cond(&st, c, &v)) {
                return vec![];
            }
        }
        if let Some(p) = &self.rhs_pattern {
            if let Some(ast) = searcher_ast {
                let (to, did) = egraph.union_instantiations(ast, &p.ast, subst, rule_name);
                return if did { vec![to] } else { vec![] };
            }
            let id = egraph.add_instantiation(&p.ast, subst);
            return if egraph.union(eclass, id) {
                vec![id]
            } else {
                vec![]
            };
        }
        let mut st = GraphStore(egraph);
        let Some(id) = build_rhs(&mut st, &self.rule.rhs, &v) else {
            return vec![];
        };
        let did = if egraph.are_explanations_enabled() {
            egraph.union_trusted(eclass, id, rule_name)
        } else {
            egraph.union(eclass, id)
        };
        if did {
            vec![id]
        } else {
            vec![]
        }
    }
}

fn sexp_to_pattern(s: &Sexp, out: &mut PatternAst<TL>) -> Id {
    match s {
        Sexp::Atom(a) if a.starts_with('?') => {
            out.add(ENodeOrVar::Var(a.parse().expect("pattern variable")))
        }
        Sexp::Atom(a) => out.add(ENodeOrVar::ENode(TL::Num(NumLeaf(
            a.parse().expect("checked number"),
        )))),
        Sexp::List(l) => {
            let op = match &l[0] {
                Sexp::Atom(a) => a.clone(),
                _ => unreachable!("checked"),
            };
            let ch: Vec<Id> = l[1..].iter().map(|x| sexp_to_pattern(x, out)).collect();
            out.add(ENodeOrVar::ENode(
                make_op(&op, &ch).expect("checked operator"),
            ))
        }
    }
}

/// The left side of a rule as an egg pattern.
pub fn lhs_pattern(r: &Rule) -> Pattern<TL> {
    let mut ast = PatternAst::default();
    sexp_to_pattern(&r.lhs, &mut ast);
    Pattern::new(ast)
}

fn rhs_is_plain(r: &Rhs) -> bool {
    match r {
        Rhs::Var(_) | Rhs::Num(_) => true,
        Rhs::Op(_, a) => a.iter().all(rhs_is_plain),
        Rhs::Meta(..) => false,
    }
}

/// A rule as an egg rewrite.
pub fn to_rewrite(r: &Rule) -> EResult<Rewrite<TL, TlAnalysis>> {
    let rhs_pattern = if rhs_is_plain(&r.rhs) {
        let mut ast = PatternAst::default();
        sexp_to_pattern(&r.rhs_sexp, &mut ast);
        Some(Pattern::new(ast))
    } else {
        None
    };
    Rewrite::new(
        r.name.clone(),
        lhs_pattern(r),
        RuleApplier {
            rule: r.clone(),
            rhs_pattern,
        },
    )
    .map_err(|e| {
        let (file, line) = r.file_line();
        Error::RuleFile {
            file,
            line,
            message: e.to_string(),
        }
    })
}

/// Rules as egg rewrites, keyed by name in file order.
pub fn rewrites(rules: &[Rule]) -> EResult<Vec<Rewrite<TL, TlAnalysis>>> {
    rules.iter().map(to_rewrite).collect()
}

/// Rules grouped by family, in order.
pub fn by_family(rules: &[Rule]) -> BTreeMap<String, Vec<&Rule>> {
    let mut m: BTreeMap<String, Vec<&Rule>> = BTreeMap::new();
    for r in rules {
        m.entry(r.family.clone()).or_default().push(r);
    }
    m
}
