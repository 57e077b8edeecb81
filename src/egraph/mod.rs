//! The e-graph form of the IR: the `egg` language [`TL`], its analysis
//! ([`TlAnalysis`]: free De Bruijn indices, smallest term size, constant
//! value) and the conversions between the named IR and e-graph terms.
//!
//! **Bound indices are De Bruijn indices.** An index variable is the number
//! of `gen`/`sum` binders between its use and its binder (0 = innermost), so
//! alpha-equivalent terms are the same term and land in one e-class
//! (`sum(j:n) A[i,j]*x[j]` under two different binders is one class).
//! Affine indices and predicates are canonical leaves ([`AffLeaf`],
//! [`PredLeaf`]) over De Bruijn variables written `#0`, `#1`, …; the helper
//! functions here ([`shift_aff`], [`subst_aff`], …) lift, lower and
//! substitute them, and [`shift_term`]/[`subst_term`] do it for whole terms,
//! capture-free by construction.
//!
//! Free indices are analysed *conservatively* (union over the nodes of a
//! class): a class is said not to use `#k` only when no term it represents
//! does, so an extracted term always respects the side conditions that were
//! checked on its class (the trap of egg issue #234 is avoided).
//!
//! Value names (parameters, `let`-bound names) stay names (`Var`).
//!
//! Unstable internal: the e-graph language, saturation and rule machinery
//! (the rule API for users is [`crate::rules`]).

pub mod check;
pub mod load;
pub mod poly;
pub mod rules;
pub mod saturate;
pub mod seed;

use crate::syntax::ast::*;
use egg::{define_language, Analysis, DidMerge, EGraph, Id, Language, RecExpr, Symbol};
use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

/// A number literal, ordered and hashed by its bits.
#[derive(Clone, Copy, Debug)]
pub struct NumLeaf(pub f64);
impl PartialEq for NumLeaf {
    fn eq(&self, o: &Self) -> bool {
        self.0.to_bits() == o.0.to_bits()
    }
}
impl PartialOrd for NumLeaf {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Eq for NumLeaf {}
// equality by bits, consistent with the ordering and the hash

impl Ord for NumLeaf {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&o.0)
    }
}
impl std::hash::Hash for NumLeaf {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.0.to_bits().hash(h)
    }
}
impl fmt::Display for NumLeaf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}",
            crate::syntax::printer::print_num(self.0).replace(' ', "")
        )
    }
}
impl FromStr for NumLeaf {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s.starts_with(|c: char| c.is_ascii_digit() || c == '-') {
            s.parse::<f64>().map(NumLeaf).map_err(|e| e.to_string())
        } else {
            Err(format!("not a number: {s}"))
        }
    }
}

/// A binder range or tensor size: `$3` or `$n`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SizeLeaf(pub Size);
impl fmt::Display for SizeLeaf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "${}", self.0)
    }
}
impl FromStr for SizeLeaf {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let r = s.strip_prefix('$').ok_or("not a size")?;
        Ok(SizeLeaf(match r.parse::<usize>() {
            Ok(n) => Size::Lit(n),
            Err(_) => Size::Named(r.to_string()),
        }))
    }
}

/// An affine index over De Bruijn variables (`#0` is the innermost binder).
///
/// The flag marks a *loose* plain index: one that became a plain variable by
/// substituting an affine or predicate-solved index (`t[j+1]` with
/// `j := i-1` is `t[i]`), so nothing says its range is the axis's. A plain
/// index that is not loose ranges exactly over the axis it reads (by typing,
/// and kept so by every rewrite); only those may be beta-reduced without a
/// range guard (`get-gen-var`). Printed as `@#0?`. Always `false` for an
/// index that is not a plain variable, so each index has one form.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AffLeaf(pub Affine, pub bool);
impl AffLeaf {
    /// A plain index known to range over its axis, or any other index.
    pub fn exact(a: Affine) -> AffLeaf {
        AffLeaf(a, false)
    }
    /// An index whose range is unknown when it is a plain variable.
    pub fn loose(a: Affine) -> AffLeaf {
        let l = a.as_var().is_some();
        AffLeaf(a, l)
    }
    /// A plain variable that is not loose.
    pub fn is_exact_var(&self) -> bool {
        !self.1 && self.0.as_var().is_some()
    }
}
impl fmt::Display for AffLeaf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mark = if self.1 { "?" } else { "" };
        write!(
            f,
            "@{}{mark}",
            crate::syntax::printer::print_affine(&self.0)
        )
    }
}
impl FromStr for AffLeaf {
    type Err = String;
    fn from_str(_: &str) -> Result<Self, String> {
        Err("affine leaves are built, not parsed".into())
    }
}

/// A predicate over De Bruijn variables.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PredLeaf(pub Pred);
impl fmt::Display for PredLeaf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{{{}}}",
            crate::syntax::printer::print_pred(&self.0).replace(' ', "")
        )
    }
}
impl FromStr for PredLeaf {
    type Err = String;
    fn from_str(_: &str) -> Result<Self, String> {
        Err("predicate leaves are built, not parsed".into())
    }
}

define_language! {
    /// The tensor language as e-nodes. `gen`/`sum` take `[size, body]`,
    /// `get` takes `[tensor, affine]`, `iv` (Iverson bracket) a predicate,
    /// `eps` two or three affines, `let` `[name, value, body]`.
    pub enum TL {
        "+" = Add([Id; 2]),
        "-" = Sub([Id; 2]),
        "*" = Mul([Id; 2]),
        "/" = Div([Id; 2]),
        "neg" = Neg([Id; 1]),
        "sqrt" = Sqrt([Id; 1]),
        "exp" = Exp([Id; 1]),
        "log" = Log([Id; 1]),
        "sin" = Sin([Id; 1]),
        "cos" = Cos([Id; 1]),
        "tanh" = Tanh([Id; 1]),
        "abs" = Abs([Id; 1]),
        "max" = Max([Id; 2]),
        "min" = Min([Id; 2]),
        "erf" = Erf([Id; 1]),
        "pow" = Pow([Id; 2]),
        "pair" = Pair([Id; 2]),
        "fst" = Fst([Id; 1]),
        "snd" = Snd([Id; 1]),
        "gen" = Gen([Id; 2]),
        "sum" = Sum([Id; 2]),
        "get" = Get([Id; 2]),
        "iv" = Iv([Id; 1]),
        "eps" = Eps(Box<[Id]>),
        "let" = Let([Id; 3]),
        "rmax" = RMax([Id; 2]),
        "rmin" = RMin([Id; 2]),
        Num(NumLeaf),
        Size(SizeLeaf),
        Aff(AffLeaf),
        Pred(PredLeaf),
        Var(Symbol),
        "idx" = Idx([Id; 1]),
        "sizev" = SizeV([Id; 1]),
        "where" = Where([Id; 3]),
        "<" = Lt([Id; 2]),
        "<=" = Le([Id; 2]),
        "==" = Eq([Id; 2]),
        "!=" = Ne([Id; 2]),
        "and" = And([Id; 2]),
        "or" = Or([Id; 2]),
        "not" = Not([Id; 1]),
        // `fold(i:n, acc = init) body`: `[size, acc name, init, body]`;
        // the body is under one index binder (`#0` is the fold's index),
        // `init` is not
        "fold" = Fold([Id; 4]),
    }
}

/// The operator names that may appear in patterns, with their arities
/// (`None`: any arity, for `eps`).
pub const OPERATORS: &[(&str, Option<usize>)] = &[
    ("+", Some(2)),
    ("-", Some(2)),
    ("*", Some(2)),
    ("/", Some(2)),
    ("neg", Some(1)),
    ("sqrt", Some(1)),
    ("exp", Some(1)),
    ("log", Some(1)),
    ("sin", Some(1)),
    ("cos", Some(1)),
    ("tanh", Some(1)),
    ("abs", Some(1)),
    ("max", Some(2)),
    ("min", Some(2)),
    ("erf", Some(1)),
    ("pow", Some(2)),
    ("pair", Some(2)),
    ("fst", Some(1)),
    ("snd", Some(1)),
    ("gen", Some(2)),
    ("sum", Some(2)),
    ("get", Some(2)),
    ("iv", Some(1)),
    ("eps", None),
    ("let", Some(3)),
    ("rmax", Some(2)),
    ("rmin", Some(2)),
    ("idx", Some(1)),
    ("sizev", Some(1)),
    ("where", Some(3)),
    ("<", Some(2)),
    ("<=", Some(2)),
    ("==", Some(2)),
    ("!=", Some(2)),
    ("and", Some(2)),
    ("or", Some(2)),
    ("not", Some(1)),
];

/// Build an operator node from its name and children.
pub fn make_op(op: &str, ch: &[Id]) -> Option<TL> {
    let a = |k: usize| ch[k];
    let arity = OPERATORS.iter().find(|(o, _)| *o == op)?.1;
    if let Some(n) = arity {
        if n != ch.len() {
            return None;
        }
    } else if ch.len() != 2 && ch.len() != 3 {
        return None;
    }
    Some(match op {
        "+" => TL::Add([a(0), a(1)]),
        "-" => TL::Sub([a(0), a(1)]),
        "*" => TL::Mul([a(0), a(1)]),
        "/" => TL::Div([a(0), a(1)]),
        "neg" => TL::Neg([a(0)]),
        "sqrt" => TL::Sqrt([a(0)]),
        "exp" => TL::Exp([a(0)]),
        "log" => TL::Log([a(0)]),
        "sin" => TL::Sin([a(0)]),
        "cos" => TL::Cos([a(0)]),
        "tanh" => TL::Tanh([a(0)]),
        "abs" => TL::Abs([a(0)]),
        "max" => TL::Max([a(0), a(1)]),
        "min" => TL::Min([a(0), a(1)]),
        "erf" => TL::Erf([a(0)]),
        "pow" => TL::Pow([a(0), a(1)]),
        "pair" => TL::Pair([a(0), a(1)]),
        "fst" => TL::Fst([a(0)]),
        "snd" => TL::Snd([a(0)]),
        "gen" => TL::Gen([a(0), a(1)]),
        "sum" => TL::Sum([a(0), a(1)]),
        "get" => TL::Get([a(0), a(1)]),
        "iv" => TL::Iv([a(0)]),
        "eps" => TL::Eps(ch.to_vec().into_boxed_slice()),
        "let" => TL::Let([a(0), a(1), a(2)]),
        "rmax" => TL::RMax([a(0), a(1)]),
        "rmin" => TL::RMin([a(0), a(1)]),
        "idx" => TL::Idx([a(0)]),
        "sizev" => TL::SizeV([a(0)]),
        "where" => TL::Where([a(0), a(1), a(2)]),
        "<" => TL::Lt([a(0), a(1)]),
        "<=" => TL::Le([a(0), a(1)]),
        "==" => TL::Eq([a(0), a(1)]),
        "!=" => TL::Ne([a(0), a(1)]),
        "and" => TL::And([a(0), a(1)]),
        "or" => TL::Or([a(0), a(1)]),
        "not" => TL::Not([a(0)]),
        _ => return None,
    })
}

/// The max/min reduction node `[size, body]` of `op`.
pub fn red_node(op: RedOp, s: Id, b: Id) -> TL {
    match op {
        RedOp::Max => TL::RMax([s, b]),
        RedOp::Min => TL::RMin([s, b]),
    }
}

/// The reduction of a max/min reduction node, with its size and body.
pub fn node_red(n: &TL) -> Option<(RedOp, Id, Id)> {
    match n {
        TL::RMax([s, b]) => Some((RedOp::Max, *s, *b)),
        TL::RMin([s, b]) => Some((RedOp::Min, *s, *b)),
        _ => None,
    }
}

fn func_node(f: Func, ch: &[Id]) -> TL {
    make_op(f.name(), ch).expect("scalar functions are operators")
}

/// The scalar function a node applies, if it is a call (`sqrt`, `exp`, …).
pub(crate) fn node_func(n: &TL) -> Option<Func> {
    Some(match n {
        TL::Sqrt(_) => Func::Sqrt,
        TL::Exp(_) => Func::Exp,
        TL::Log(_) => Func::Log,
        TL::Sin(_) => Func::Sin,
        TL::Cos(_) => Func::Cos,
        TL::Tanh(_) => Func::Tanh,
        TL::Abs(_) => Func::Abs,
        TL::Max(_) => Func::Max,
        TL::Min(_) => Func::Min,
        TL::Erf(_) => Func::Erf,
        TL::Pow(_) => Func::Pow,
        _ => return None,
    })
}

// ---------------------------------------------------------------------------
// De Bruijn affine indices and predicates

/// The name of De Bruijn variable `k` inside affine and predicate leaves.
pub fn db(k: u32) -> String {
    format!("#{k}")
}

/// The De Bruijn number of a leaf variable name.
pub fn db_num(s: &str) -> u32 {
    s[1..].parse().expect("De Bruijn names are #k")
}

/// Map the variables of an affine expression.
fn map_aff_vars(a: &Affine, f: &impl Fn(u32) -> Affine) -> Affine {
    let mut r = Affine::constant(a.constant);
    for (v, c) in &a.terms {
        r = r.add(&f(db_num(v)).scale(*c));
    }
    r
}

/// Add `d` to every variable `>= cutoff` (lifting a term under `d` new binders).
pub fn shift_aff(a: &Affine, cutoff: u32, d: i64) -> Affine {
    map_aff_vars(a, &|k| {
        if k >= cutoff {
            Affine::var(db((k as i64 + d) as u32))
        } else {
            Affine::var(db(k))
        }
    })
}

/// Substitute variable `depth` by `by` (which lives outside the binder being
/// removed, `depth` binders further out) and lower the variables above it.
pub fn subst_aff(a: &Affine, depth: u32, by: &Affine) -> Affine {
    map_aff_vars(a, &|k| {
        if k < depth {
            Affine::var(db(k))
        } else if k == depth {
            shift_aff(by, 0, depth as i64)
        } else {
            Affine::var(db(k - 1))
        }
    })
}

/// Exchange variables `depth` and `depth + 1` (swapping two adjacent binders).
pub fn swap_aff(a: &Affine, depth: u32) -> Affine {
    map_aff_vars(a, &|k| {
        if k == depth {
            Affine::var(db(k + 1))
        } else if k == depth + 1 {
            Affine::var(db(k - 1))
        } else {
            Affine::var(db(k))
        }
    })
}

/// Bit set of the variables of an affine expression (variables past 63 all
/// count as 63, which only makes the analysis more conservative).
pub fn aff_bits(a: &Affine) -> u64 {
    a.vars().fold(0, |acc, v| acc | 1u64 << db_num(v).min(63))
}

fn pred_bits(p: &Pred) -> u64 {
    p.affines().into_iter().fold(0, |acc, a| acc | aff_bits(a))
}

/// Decide a predicate syntactically: `Some(true)` when it always holds,
/// `Some(false)` when it never does, `None` when it depends on the indices.
pub fn decide(p: &Pred) -> Option<bool> {
    match p {
        Pred::Cmp(op, a, b) => {
            let d = a.sub(b);
            let c = d.as_const()?;
            Some(op.holds(c, 0))
        }
        Pred::And(a, b) => match (decide(a), decide(b)) {
            (Some(false), _) | (_, Some(false)) => Some(false),
            (Some(true), Some(true)) => Some(true),
            _ => None,
        },
        Pred::Or(a, b) => match (decide(a), decide(b)) {
            (Some(true), _) | (_, Some(true)) => Some(true),
            (Some(false), Some(false)) => Some(false),
            _ => None,
        },
        Pred::Not(a) => decide(a).map(|b| !b),
    }
}

// ---------------------------------------------------------------------------
// Analysis

/// What the analysis knows about an e-class.
#[derive(Clone, Debug, PartialEq)]
pub struct Data {
    /// Free De Bruijn indices (union over the class: conservative).
    pub fv: u64,
    /// Size of the smallest term in the class (for representative terms).
    pub size: usize,
    /// The class's value when it is a known finite constant.
    pub constant: Option<f64>,
    /// The type, when known (parameters' types come from the analysis).
    pub ty: Option<Type>,
    /// Free value names (union over the class).
    pub vars: std::collections::BTreeSet<Symbol>,
    /// Some term of the class may evaluate to a strong zero (a failed
    /// bracket, or arithmetic that keeps one; see [`node_strong`]).
    pub strong: bool,
}

/// The e-class analysis of [`TL`]; it knows the types of the parameters.
#[derive(Default, Clone)]
pub struct TlAnalysis {
    pub params: std::collections::BTreeMap<Symbol, Type>,
    /// The format the program is optimised for: constants fold only where
    /// the fold is what that format's arithmetic gives.
    pub precision: crate::precision::Precision,
}

impl TlAnalysis {
    /// The analysis of `f`'s body: the types of its parameters.
    pub fn of(f: &crate::syntax::ast::Function) -> TlAnalysis {
        TlAnalysis {
            params: f
                .params
                .iter()
                .map(|p| (Symbol::from(p.name.as_str()), p.ty.clone()))
                .collect(),
            precision: crate::precision::Precision::F64,
        }
    }

    /// [`TlAnalysis::of`] for a program optimised for the format `p`.
    pub fn of_in(f: &crate::syntax::ast::Function, p: crate::precision::Precision) -> TlAnalysis {
        TlAnalysis {
            precision: p,
            ..TlAnalysis::of(f)
        }
    }
}

fn node_ty(eg: &TlGraph, n: &TL) -> Option<Type> {
    let t = |i: &Id| eg[*i].data.ty.clone();
    match n {
        TL::Var(x) => eg.analysis.params.get(x).cloned(),
        TL::Aff(_) | TL::Pred(_) | TL::Size(_) => None,
        TL::Pair([a, b]) => Some(Type::pair(t(a)?, t(b)?)),
        TL::Fst([a]) | TL::Snd([a]) => match t(a)? {
            Type::Pair(x, y) => Some(if matches!(n, TL::Fst(_)) { *x } else { *y }),
            _ => None,
        },
        TL::Gen([s, b]) => Some(Type::tensor(size_of(eg, *s)?, t(b)?)),
        TL::Get([a, _]) => match t(a)? {
            Type::Tensor(_, e) => Some(*e),
            _ => None,
        },
        TL::Let([_, _, b]) => t(b),
        TL::Fold([_, _, a, _]) => t(a),
        // conditions are no values
        TL::Lt(_) | TL::Le(_) | TL::Eq(_) | TL::Ne(_) | TL::And(_) | TL::Or(_) | TL::Not(_) => None,
        _ => Some(Type::Real),
    }
}

fn node_vars(eg: &TlGraph, n: &TL) -> std::collections::BTreeSet<Symbol> {
    match n {
        TL::Var(x) => std::iter::once(*x).collect(),
        TL::Let([x, a, b]) | TL::Fold([_, x, a, b]) => {
            let name = eg[*x].nodes.iter().find_map(|n| match n {
                TL::Var(s) => Some(*s),
                _ => None,
            });
            let mut v = eg[*a].data.vars.clone();
            for y in &eg[*b].data.vars {
                if Some(*y) != name {
                    v.insert(*y);
                }
            }
            v
        }
        _ => {
            let mut v = std::collections::BTreeSet::new();
            for c in n.children() {
                v.extend(eg[*c].data.vars.iter().copied());
            }
            v
        }
    }
}

/// The e-graph type used by the optimiser.
pub type TlGraph = EGraph<TL, TlAnalysis>;

/// Free-index bits of one node, given its children's data.
pub fn node_fv(n: &TL, data: impl Fn(Id) -> u64) -> u64 {
    match n {
        TL::Aff(a) => aff_bits(&a.0),
        TL::Pred(p) => pred_bits(&p.0),
        TL::Num(_) | TL::Size(_) | TL::Var(_) => 0,
        TL::Gen([_, b]) | TL::Sum([_, b]) => data(*b) >> 1,
        TL::RMax([_, b]) | TL::RMin([_, b]) => data(*b) >> 1,
        TL::Fold([_, _, a, b]) => data(*a) | (data(*b) >> 1),
        _ => n.children().iter().fold(0, |acc, c| acc | data(*c)),
    }
}

/// Whether a node may evaluate to a strong zero, given whether its children
/// may (the interpreter's rules: a product with a strong factor, a quotient
/// with a strong numerator, a negation, sum or `gen` of strong terms, a sum
/// or difference of two strong operands; a let-bound name may hold one, a
/// parameter never does).
pub fn node_strong(n: &TL, is_param: impl Fn(Symbol) -> bool, child: impl Fn(Id) -> bool) -> bool {
    match n {
        TL::Iv(_) => true,
        TL::Mul([a, b]) | TL::Pair([a, b]) => child(*a) || child(*b),
        TL::Div([a, _]) => child(*a),
        TL::Add([a, b]) | TL::Sub([a, b]) => child(*a) && child(*b),
        TL::Neg([a]) | TL::Fst([a]) | TL::Snd([a]) | TL::Get([a, _]) => child(*a),
        TL::Sum([_, a]) | TL::Gen([_, a]) => child(*a),
        TL::Let([_, a, b]) => child(*a) || child(*b),
        TL::Var(x) => !is_param(*x),
        _ => false,
    }
}

/// Fold a constant node: only where the result is exactly what IEEE
/// arithmetic gives for the operands *and* cannot depend on their order
/// with anything else: a finite normal number, or an exact zero (`0 * c`,
/// `c - c`). A fold that overflows, underflows to zero or to a subnormal
/// is refused: reassociating `x * 1e-200 * 1e-200` must not make
/// `x * 0` (see `docs/fp-contract.md`).
///
/// In `F32` ([`crate::precision::Precision`]) the operands must be `f32` values (a
/// literal that is not, like `0.1`, means its rounding, so nothing built
/// on it is folded) and the result is rounded to `f32` and judged in
/// `f32`'s range: the correctly rounded `f32` result, what the program's
/// own arithmetic gives.
fn fold_const(
    n: &TL,
    c: impl Fn(Id) -> Option<f64>,
    p: crate::precision::Precision,
) -> Option<f64> {
    if p.is_int() {
        return fold_int(n, c, p);
    }
    let c = |i: Id| c(i).filter(|x| p.holds(*x));
    let r = match n {
        TL::Num(x) => x.0,
        TL::Add([a, b]) => p.round(c(*a)? + c(*b)?),
        TL::Sub([a, b]) => p.round(c(*a)? - c(*b)?),
        TL::Mul([a, b]) => p.round(c(*a)? * c(*b)?),
        TL::Div([a, b]) => p.round(c(*a)? / c(*b)?),
        TL::Neg([a]) => -c(*a)?,
        _ => return None,
    };
    let exact_zero = r == 0.0
        && match n {
            TL::Mul([a, b]) => c(*a)? == 0.0 || c(*b)? == 0.0,
            TL::Div([a, _]) => c(*a)? == 0.0,
            _ => true, // sums and differences are exact when they are 0
        };
    (r.is_finite() && (r.abs() >= p.min_positive() || exact_zero)).then_some(r)
}

/// [`fold_const`] in an integer format: operands that are integers of the
/// width (below 2^53, so the `f64` constant is exact), `+ - *` and negation
/// wrapping in the width (what the program's arithmetic gives), a result
/// below 2^53 in magnitude; no division.
fn fold_int(n: &TL, c: impl Fn(Id) -> Option<f64>, p: crate::precision::Precision) -> Option<f64> {
    const EXACT: f64 = 9007199254740992.0; // 2^53
    let c = |i: Id| {
        c(i).filter(|x| crate::types::integral::literal_fits(*x, p) && x.abs() < EXACT)
            .map(|x| x as i64)
    };
    let r = match n {
        TL::Num(x) => return Some(x.0),
        TL::Add([a, b]) => p.wrap(c(*a)?.wrapping_add(c(*b)?)),
        TL::Sub([a, b]) => p.wrap(c(*a)?.wrapping_sub(c(*b)?)),
        TL::Mul([a, b]) => p.wrap(c(*a)?.wrapping_mul(c(*b)?)),
        TL::Neg([a]) => p.wrap(c(*a)?.wrapping_neg()),
        _ => return None,
    };
    ((r as f64).abs() < EXACT).then_some(r as f64)
}

impl Analysis<TL> for TlAnalysis {
    type Data = Data;
    fn make(egraph: &mut TlGraph, enode: &TL) -> Data {
        let fv = node_fv(enode, |i| egraph[i].data.fv);
        let size = enode
            .children()
            .iter()
            .fold(1usize, |s, c| s.saturating_add(egraph[*c].data.size));
        let constant = match enode {
            // an index value whose index became a constant
            TL::Idx([a]) => aff_of(egraph, *a)
                .and_then(|a| a.as_const())
                .map(|c| c as f64),
            _ => fold_const(
                enode,
                |i| egraph[i].data.constant,
                egraph.analysis.precision,
            ),
        };
        let ty = node_ty(egraph, enode);
        let vars = node_vars(egraph, enode);
        let strong = node_strong(
            enode,
            |x| egraph.analysis.params.contains_key(&x),
            |i| egraph[i].data.strong,
        );
        Data {
            fv,
            size,
            constant,
            ty,
            vars,
            strong,
        }
    }
    fn merge(&mut self, a: &mut Data, b: Data) -> DidMerge {
        let fv = a.fv | b.fv;
        let size = a.size.min(b.size);
        let constant = a.constant.or(b.constant);
        let ty = a.ty.clone().or(b.ty.clone());
        let mut vars = a.vars.clone();
        vars.extend(b.vars.iter().copied());
        let bits = |c: Option<f64>| c.map(f64::to_bits);
        let strong = a.strong || b.strong;
        let da = strong != a.strong
            || fv != a.fv
            || size != a.size
            || bits(constant) != bits(a.constant)
            || ty != a.ty
            || vars != a.vars;
        let db = strong != b.strong
            || fv != b.fv
            || size != b.size
            || bits(constant) != bits(b.constant)
            || ty != b.ty
            || vars != b.vars;
        a.fv = fv;
        a.size = size;
        a.constant = constant;
        a.ty = ty;
        a.vars = vars;
        a.strong = strong;
        DidMerge(da, db)
    }
    fn modify(egraph: &mut TlGraph, id: Id) {
        if let Some(c) = egraph[id].data.constant {
            if c == 0.0 && c.is_sign_negative() {
                return;
            }
            let has = egraph[id].nodes.iter().any(|n| matches!(n, TL::Num(_)));
            if !has {
                let k = egraph.add(TL::Num(NumLeaf(c)));
                egraph.union_trusted(id, k, "constant-fold");
            }
        }
    }
}

/// The leaf value of a leaf class (affine, predicate, size, number).
pub fn leaf_of(eg: &TlGraph, id: Id) -> Option<&TL> {
    eg[id]
        .nodes
        .iter()
        .find(|n| matches!(n, TL::Aff(_) | TL::Pred(_) | TL::Size(_) | TL::Num(_)))
}

pub fn aff_of(eg: &TlGraph, id: Id) -> Option<Affine> {
    eg[id].nodes.iter().find_map(|n| match n {
        TL::Aff(a) => Some(a.0.clone()),
        _ => None,
    })
}
pub fn pred_of(eg: &TlGraph, id: Id) -> Option<Pred> {
    eg[id].nodes.iter().find_map(|n| match n {
        TL::Pred(p) => Some(p.0.clone()),
        _ => None,
    })
}
pub fn size_of(eg: &TlGraph, id: Id) -> Option<Size> {
    eg[id].nodes.iter().find_map(|n| match n {
        TL::Size(s) => Some(s.0.clone()),
        _ => None,
    })
}

/// A small representative term of a class: at every class the node of
/// least size (well founded, so it terminates). `None` when the analysis is
/// momentarily stale and no decreasing node is found. A class used several
/// times is built once (the term is shared, so its length is at most the
/// number of classes even when the tree it stands for is exponentially
/// larger, as for an inlined chain of lets).
pub fn representative(eg: &TlGraph, id: Id) -> Option<RecExpr<TL>> {
    fn go(
        eg: &TlGraph,
        id: Id,
        out: &mut RecExpr<TL>,
        memo: &mut HashMap<Id, Id>,
        depth: usize,
    ) -> Option<Id> {
        let id = eg.find(id);
        if let Some(k) = memo.get(&id) {
            return Some(*k);
        }
        if depth > 400 {
            return None;
        }
        let class = &eg[id];
        let mut best: Option<(usize, &TL)> = None;
        for n in &class.nodes {
            let s = n
                .children()
                .iter()
                .fold(1usize, |s, c| s.saturating_add(eg[*c].data.size));
            if best.is_none_or(|(b, _)| s < b) {
                best = Some((s, n));
            }
        }
        let (_, n) = best?;
        let n = n.clone();
        let mut kids = Vec::new();
        for c in n.children() {
            let k = go(eg, *c, out, memo, depth + 1)?;
            kids.push(k);
        }
        let mut it = kids.into_iter();
        let n = n.map_children(|_| it.next().unwrap());
        let k = out.add(n);
        memo.insert(id, k);
        Some(k)
    }
    let mut out = RecExpr::default();
    go(eg, id, &mut out, &mut HashMap::new(), 0)?;
    Some(out)
}

// ---------------------------------------------------------------------------
// Term operations on RecExprs (capture-free by construction)

/// Rebuild `e` bottom-up, changing affine and predicate leaves by `f(depth, leaf)`,
/// where `depth` is the number of binders between the root and the leaf.
/// A subterm shared in `e` is rebuilt once per depth it occurs at, so the
/// result stays shared (linear in `e`, not in the tree it stands for).
fn map_leaves(e: &RecExpr<TL>, f: &impl Fn(u32, &TL) -> TL) -> RecExpr<TL> {
    fn go(
        e: &RecExpr<TL>,
        id: Id,
        depth: u32,
        f: &impl Fn(u32, &TL) -> TL,
        out: &mut RecExpr<TL>,
        memo: &mut HashMap<(Id, u32), Id>,
    ) -> Id {
        if let Some(k) = memo.get(&(id, depth)) {
            return *k;
        }
        let k = build(e, id, depth, f, out, memo);
        memo.insert((id, depth), k);
        k
    }
    fn build(
        e: &RecExpr<TL>,
        id: Id,
        depth: u32,
        f: &impl Fn(u32, &TL) -> TL,
        out: &mut RecExpr<TL>,
        memo: &mut HashMap<(Id, u32), Id>,
    ) -> Id {
        let n = &e[id];
        match n {
            TL::Aff(_) | TL::Pred(_) => out.add(f(depth, n)),
            TL::Gen([s, b]) | TL::Sum([s, b]) => {
                let s2 = go(e, *s, depth, f, out, memo);
                let b2 = go(e, *b, depth + 1, f, out, memo);
                out.add(if matches!(n, TL::Gen(_)) {
                    TL::Gen([s2, b2])
                } else {
                    TL::Sum([s2, b2])
                })
            }
            TL::RMax([s, b]) | TL::RMin([s, b]) => {
                let s2 = go(e, *s, depth, f, out, memo);
                let b2 = go(e, *b, depth + 1, f, out, memo);
                let op = node_red(n).expect("a reduction").0;
                out.add(red_node(op, s2, b2))
            }
            TL::Fold([s, x, a, b]) => {
                let s2 = go(e, *s, depth, f, out, memo);
                let x2 = go(e, *x, depth, f, out, memo);
                let a2 = go(e, *a, depth, f, out, memo);
                let b2 = go(e, *b, depth + 1, f, out, memo);
                out.add(TL::Fold([s2, x2, a2, b2]))
            }
            TL::Idx(_) => {
                // an index value reads no tensor: its index is never loose
                let n = n.clone().map_children(|c| {
                    let k = go(e, c, depth, f, out, memo);
                    match &out[k] {
                        TL::Aff(a) if a.1 => out.add(TL::Aff(AffLeaf::exact(a.0.clone()))),
                        _ => k,
                    }
                });
                out.add(n)
            }
            TL::Eps(_) => {
                // eps reads no tensor: its indices are never loose
                let n = n.clone().map_children(|c| {
                    let k = go(e, c, depth, f, out, memo);
                    match &out[k] {
                        TL::Aff(a) if a.1 => out.add(TL::Aff(AffLeaf::exact(a.0.clone()))),
                        _ => k,
                    }
                });
                out.add(n)
            }
            _ => {
                let n = n.clone().map_children(|c| go(e, c, depth, f, out, memo));
                out.add(n)
            }
        }
    }
    let mut out = RecExpr::default();
    let root = Id::from(e.as_ref().len() - 1);
    go(e, root, 0, f, &mut out, &mut HashMap::new());
    out
}

fn map_leaf(n: &TL, f: impl Fn(&Affine) -> Affine) -> TL {
    match n {
        TL::Aff(a) => TL::Aff(AffLeaf(f(&a.0), a.1)),
        TL::Pred(p) => TL::Pred(PredLeaf(p.0.map_affine(&f))),
        _ => n.clone(),
    }
}

/// Lift the free indices of `e` by `d` (to move it under `d` new binders).
pub fn shift_term(e: &RecExpr<TL>, d: i64) -> RecExpr<TL> {
    map_leaves(e, &|depth, n| map_leaf(n, |a| shift_aff(a, depth, d)))
}

/// `e` is the body of a removed binder: substitute its variable by `by`
/// (an affine outside the binder) and lower the others.
///
/// An index that mentions the variable stays exact only when it is an exact
/// plain variable replaced by an exact plain variable (`by` comes from an
/// access of a gen over the binder's own range); any other result that is
/// a plain variable is loose (see [`AffLeaf`]).
pub fn subst_term(e: &RecExpr<TL>, by: &AffLeaf) -> RecExpr<TL> {
    let by_exact = by.is_exact_var();
    map_leaves(e, &|depth, n| match n {
        TL::Aff(a) => {
            let r = subst_aff(&a.0, depth, &by.0);
            if a.0.terms.contains_key(&db(depth)) {
                if by_exact && a.is_exact_var() {
                    TL::Aff(AffLeaf::exact(r))
                } else {
                    TL::Aff(AffLeaf::loose(r))
                }
            } else {
                TL::Aff(AffLeaf(r, a.1))
            }
        }
        _ => map_leaf(n, |a| subst_aff(a, depth, &by.0)),
    })
}

/// Exchange the two innermost free variables of `e` (`#0` and `#1`).
pub fn swap_term(e: &RecExpr<TL>) -> RecExpr<TL> {
    map_leaves(e, &|depth, n| map_leaf(n, |a| swap_aff(a, depth)))
}

// ---------------------------------------------------------------------------
// Conversion between the named IR and TL terms

/// Why an expression cannot be converted.
#[derive(Debug, Clone)]
pub struct ConvError(pub String);

fn to_db(a: &Affine, scope: &[String]) -> Result<Affine, ConvError> {
    let mut r = Affine::constant(a.constant);
    for (v, c) in &a.terms {
        let pos = scope
            .iter()
            .rposition(|s| s == v)
            .ok_or_else(|| ConvError(format!("free index `{v}`")))?;
        let k = (scope.len() - 1 - pos) as u32;
        r = r.add(&Affine::var(db(k)).scale(*c));
    }
    Ok(r)
}

/// Add a named expression to a RecExpr; `scope` lists the index names bound
/// around it, innermost last.
pub fn expr_to_rec(
    e: &Expr,
    scope: &mut Vec<String>,
    out: &mut RecExpr<TL>,
) -> Result<Id, ConvError> {
    Ok(match e {
        // a gather's index is no affine index: the e-graph does not take
        // programs with gathers (the optimiser keeps them as written)
        Expr::Gather(..) => {
            return Err(ConvError(
                "a gather (an index read from an integer array)".into(),
            ))
        }
        Expr::Var(x) => out.add(TL::Var(Symbol::from(x.as_str()))),
        Expr::Num(x) => {
            if *x < 0.0 {
                let k = out.add(TL::Num(NumLeaf(-*x)));
                out.add(TL::Neg([k]))
            } else {
                out.add(TL::Num(NumLeaf(*x)))
            }
        }
        Expr::Bin(op, a, b) => {
            let a = expr_to_rec(a, scope, out)?;
            let b = expr_to_rec(b, scope, out)?;
            out.add(match op {
                BinOp::Add => TL::Add([a, b]),
                BinOp::Sub => TL::Sub([a, b]),
                BinOp::Mul => TL::Mul([a, b]),
                BinOp::Div => TL::Div([a, b]),
            })
        }
        Expr::Neg(a) => {
            let a = expr_to_rec(a, scope, out)?;
            out.add(TL::Neg([a]))
        }
        Expr::Call(f, args) => {
            let mut ch = Vec::new();
            for a in args {
                ch.push(expr_to_rec(a, scope, out)?);
            }
            out.add(func_node(*f, &ch))
        }
        Expr::Pair(a, b) => {
            let a = expr_to_rec(a, scope, out)?;
            let b = expr_to_rec(b, scope, out)?;
            out.add(TL::Pair([a, b]))
        }
        Expr::Proj(k, a) => {
            let a = expr_to_rec(a, scope, out)?;
            out.add(if *k == 0 { TL::Fst([a]) } else { TL::Snd([a]) })
        }
        Expr::Gen(i, n, b) | Expr::Sum(i, n, b) => {
            let s = out.add(TL::Size(SizeLeaf(n.clone())));
            scope.push(i.clone());
            let b = expr_to_rec(b, scope, out);
            scope.pop();
            let b = b?;
            out.add(if matches!(e, Expr::Gen(..)) {
                TL::Gen([s, b])
            } else {
                TL::Sum([s, b])
            })
        }
        Expr::Reduce(op, i, n, b) => {
            let s = out.add(TL::Size(SizeLeaf(n.clone())));
            scope.push(i.clone());
            let b = expr_to_rec(b, scope, out);
            scope.pop();
            let b = b?;
            out.add(red_node(*op, s, b))
        }
        Expr::Access(a, idx) => {
            let a = expr_to_rec(a, scope, out)?;
            let k = out.add(TL::Aff(AffLeaf::exact(to_db(idx, scope)?)));
            out.add(TL::Get([a, k]))
        }
        Expr::Bracket(p) => {
            let mut err = None;
            let p = p.map_affine(&|a| {
                to_db(a, scope).unwrap_or_else(|e| {
                    let _ = &e;
                    Affine::constant(i64::MIN)
                })
            });
            if p.affines().iter().any(|a| a.constant == i64::MIN) {
                err = Some(ConvError("free index in a predicate".into()));
            }
            if let Some(e) = err {
                return Err(e);
            }
            let k = out.add(TL::Pred(PredLeaf(p)));
            out.add(TL::Iv([k]))
        }
        Expr::Eps(idx) => {
            let mut ch = Vec::new();
            for a in idx {
                ch.push(out.add(TL::Aff(AffLeaf::exact(to_db(a, scope)?))));
            }
            out.add(TL::Eps(ch.into_boxed_slice()))
        }
        Expr::Let(x, e1, e2) => {
            let n = out.add(TL::Var(Symbol::from(x.as_str())));
            let a = expr_to_rec(e1, scope, out)?;
            let b = expr_to_rec(e2, scope, out)?;
            out.add(TL::Let([n, a, b]))
        }
        Expr::IndexValue(a) => {
            let a = to_db(a, scope)?;
            match a.as_const() {
                Some(c) => expr_to_rec(&Expr::Num(c as f64), scope, out)?,
                None => {
                    let k = out.add(TL::Aff(AffLeaf::exact(a)));
                    out.add(TL::Idx([k]))
                }
            }
        }
        Expr::SizeValue(n) => {
            let k = out.add(TL::Size(SizeLeaf(Size::Named(n.clone()))));
            out.add(TL::SizeV([k]))
        }
        Expr::Where(c, a, b) => {
            let c = cond_to_rec(c, scope, out)?;
            let a = expr_to_rec(a, scope, out)?;
            let b = expr_to_rec(b, scope, out)?;
            out.add(TL::Where([c, a, b]))
        }
        Expr::Fold(i, n, acc, a, b) => {
            let s = out.add(TL::Size(SizeLeaf(n.clone())));
            let x = out.add(TL::Var(Symbol::from(acc.as_str())));
            let a = expr_to_rec(a, scope, out)?;
            scope.push(i.clone());
            let b = expr_to_rec(b, scope, out);
            scope.pop();
            let b = b?;
            out.add(TL::Fold([s, x, a, b]))
        }
    })
}

/// Add a `where` condition to a RecExpr (`>` and `>=` as `<` and `<=` with
/// the sides exchanged, which IEEE comparison makes the same).
fn cond_to_rec(c: &Cond, scope: &mut Vec<String>, out: &mut RecExpr<TL>) -> Result<Id, ConvError> {
    Ok(match c {
        Cond::Cmp(op, a, b) => {
            let a = expr_to_rec(a, scope, out)?;
            let b = expr_to_rec(b, scope, out)?;
            out.add(match op {
                CmpOp::Lt => TL::Lt([a, b]),
                CmpOp::Le => TL::Le([a, b]),
                CmpOp::Gt => TL::Lt([b, a]),
                CmpOp::Ge => TL::Le([b, a]),
                CmpOp::Eq => TL::Eq([a, b]),
                CmpOp::Ne => TL::Ne([a, b]),
            })
        }
        Cond::And(a, b) => {
            let a = cond_to_rec(a, scope, out)?;
            let b = cond_to_rec(b, scope, out)?;
            out.add(TL::And([a, b]))
        }
        Cond::Or(a, b) => {
            let a = cond_to_rec(a, scope, out)?;
            let b = cond_to_rec(b, scope, out)?;
            out.add(TL::Or([a, b]))
        }
        Cond::Not(a) => {
            let a = cond_to_rec(a, scope, out)?;
            out.add(TL::Not([a]))
        }
    })
}

/// Convert a condition of a TL term back (see [`rec_to_expr`]).
pub fn rec_to_cond(e: &RecExpr<TL>, id: Id, scope: &mut Vec<String>) -> Cond {
    let n = &e[id];
    let x = |k: usize, scope: &mut Vec<String>| Box::new(rec_to_expr(e, n.children()[k], scope));
    let c = |k: usize, scope: &mut Vec<String>| Box::new(rec_to_cond(e, n.children()[k], scope));
    match n {
        TL::Lt(_) => Cond::Cmp(CmpOp::Lt, x(0, scope), x(1, scope)),
        TL::Le(_) => Cond::Cmp(CmpOp::Le, x(0, scope), x(1, scope)),
        TL::Eq(_) => Cond::Cmp(CmpOp::Eq, x(0, scope), x(1, scope)),
        TL::Ne(_) => Cond::Cmp(CmpOp::Ne, x(0, scope), x(1, scope)),
        TL::And(_) => Cond::And(c(0, scope), c(1, scope)),
        TL::Or(_) => Cond::Or(c(0, scope), c(1, scope)),
        TL::Not(_) => Cond::Not(c(0, scope)),
        // not a condition: never built by the conversions or the rules
        _ => Cond::Cmp(
            CmpOp::Ne,
            Box::new(Expr::Num(0.0)),
            Box::new(Expr::Num(0.0)),
        ),
    }
}

/// Convert a closed named expression to a TL term.
pub fn to_rec(e: &Expr) -> Result<RecExpr<TL>, ConvError> {
    let mut out = RecExpr::default();
    expr_to_rec(e, &mut Vec::new(), &mut out)?;
    Ok(out)
}

/// Index names used when converting back: by binder depth.
pub fn index_name(depth: usize) -> String {
    const NAMES: [&str; 10] = ["i", "j", "k", "l", "m", "p", "q", "r", "s", "t"];
    NAMES
        .get(depth)
        .map(|s| s.to_string())
        .unwrap_or_else(|| format!("i{depth}"))
}

fn from_db(a: &Affine, scope: &[String]) -> Affine {
    let mut r = Affine::constant(a.constant);
    for (v, c) in &a.terms {
        let k = db_num(v) as usize;
        let name = if k < scope.len() {
            scope[scope.len() - 1 - k].clone()
        } else {
            format!("free{}", k - scope.len())
        };
        r = r.add(&Affine::var(name).scale(*c));
    }
    r
}

/// Convert the subterm `id` of a TL term back to a named expression; binders
/// are named by depth (`i`, `j`, `k`, …), `scope` lists the enclosing names.
pub fn rec_to_expr(e: &RecExpr<TL>, id: Id, scope: &mut Vec<String>) -> Expr {
    let n = &e[id];
    let c = |k: usize, scope: &mut Vec<String>| rec_to_expr(e, n.children()[k], scope);
    match n {
        TL::Num(x) => Expr::Num(x.0),
        TL::Var(s) => Expr::Var(s.to_string()),
        TL::Add(_) => Expr::bin(BinOp::Add, c(0, scope), c(1, scope)),
        TL::Sub(_) => Expr::bin(BinOp::Sub, c(0, scope), c(1, scope)),
        TL::Mul(_) => Expr::bin(BinOp::Mul, c(0, scope), c(1, scope)),
        TL::Div(_) => Expr::bin(BinOp::Div, c(0, scope), c(1, scope)),
        TL::Neg(_) => Expr::Neg(Box::new(c(0, scope))),
        TL::Pair(_) => Expr::pair(c(0, scope), c(1, scope)),
        TL::Fst(_) => Expr::proj(0, c(0, scope)),
        TL::Snd(_) => Expr::proj(1, c(0, scope)),
        TL::Gen([s, b]) | TL::Sum([s, b]) => {
            let size = match &e[*s] {
                TL::Size(s) => s.0.clone(),
                _ => Size::Lit(1),
            };
            let name = index_name(scope.len());
            scope.push(name.clone());
            let body = rec_to_expr(e, *b, scope);
            scope.pop();
            if matches!(n, TL::Gen(_)) {
                Expr::gen(name, size, body)
            } else {
                Expr::sum(name, size, body)
            }
        }
        TL::RMax([s, b]) | TL::RMin([s, b]) => {
            let size = match &e[*s] {
                TL::Size(s) => s.0.clone(),
                _ => Size::Lit(1),
            };
            let name = index_name(scope.len());
            scope.push(name.clone());
            let body = rec_to_expr(e, *b, scope);
            scope.pop();
            let op = node_red(n).expect("a reduction").0;
            Expr::reduce(op, name, size, body)
        }
        TL::Get([t, a]) => {
            let t = rec_to_expr(e, *t, scope);
            let a = match &e[*a] {
                TL::Aff(a) => from_db(&a.0, scope),
                _ => Affine::constant(0),
            };
            Expr::access(t, a)
        }
        TL::Iv([p]) => match &e[*p] {
            TL::Pred(p) => Expr::Bracket(p.0.map_affine(&|a| from_db(a, scope))),
            _ => Expr::Num(1.0),
        },
        TL::Eps(ch) => Expr::Eps(
            ch.iter()
                .map(|k| match &e[*k] {
                    TL::Aff(a) => from_db(&a.0, scope),
                    _ => Affine::constant(0),
                })
                .collect(),
        ),
        TL::Let([x, _, _]) => {
            let name = match &e[*x] {
                TL::Var(s) => s.to_string(),
                _ => "x".into(),
            };
            Expr::let_(name, c(1, scope), c(2, scope))
        }
        TL::Aff(_) | TL::Pred(_) | TL::Size(_) => Expr::Num(0.0),
        TL::Idx([a]) => match &e[*a] {
            TL::Aff(a) => Expr::index_value(from_db(&a.0, scope)),
            _ => Expr::Num(0.0),
        },
        TL::SizeV([s]) => match &e[*s] {
            TL::Size(SizeLeaf(Size::Named(n))) => Expr::SizeValue(n.clone()),
            TL::Size(SizeLeaf(Size::Lit(k))) => Expr::Num(*k as f64),
            _ => Expr::Num(0.0),
        },
        TL::Where([c, a, b]) => {
            let c = rec_to_cond(e, *c, scope);
            let a = rec_to_expr(e, *a, scope);
            Expr::where_(c, a, rec_to_expr(e, *b, scope))
        }
        TL::Lt(_) | TL::Le(_) | TL::Eq(_) | TL::Ne(_) | TL::And(_) | TL::Or(_) | TL::Not(_) => {
            Expr::Num(0.0)
        }
        TL::Fold([s, x, a, b]) => {
            let size = match &e[*s] {
                TL::Size(s) => s.0.clone(),
                _ => Size::Lit(1),
            };
            let acc = match &e[*x] {
                TL::Var(s) => s.to_string(),
                _ => "acc".into(),
            };
            let init = rec_to_expr(e, *a, scope);
            let name = index_name(scope.len());
            scope.push(name.clone());
            let body = rec_to_expr(e, *b, scope);
            scope.pop();
            Expr::fold(name, size, acc, init, body)
        }
        _ => {
            let f = node_func(n).expect("remaining nodes are scalar functions");
            let args = (0..n.children().len()).map(|k| c(k, scope)).collect();
            Expr::Call(f, args)
        }
    }
}

/// Convert a whole TL term back to a named expression.
pub fn from_rec(e: &RecExpr<TL>) -> Expr {
    let root = Id::from(e.as_ref().len() - 1);
    rec_to_expr(e, root, &mut Vec::new())
}
