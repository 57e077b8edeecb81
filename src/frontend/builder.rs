//! The Rust builder API: binders take closures and the result is the same
//! IR the parser makes.
//!
//! ```
//! use einsat::frontend::builder::*;
//! let f = func("axc", |b| {
//!     let a = b.param("A", "[3,3]R");
//!     let x = b.param("x", "[3]R");
//!     let c = b.param("c", "[3]R");
//!     gen(3, |i| c.at(i) + sum(3, |j| a.at2(i, j) * x.at(j)))
//! })
//! .unwrap();
//! assert_eq!(einsat::syntax::print_expr(&f.body), "gen(i:3) c[i] + sum(j:3) A[i, j] * x[j]");
//! ```
//!
//! # Scoping
//!
//! An index ([`Ix`]) is valid only inside the closure of the binder that
//! made it. Each binder gets a unique identity (process-wide, so indices and
//! expressions may be built and moved across threads); names are given only
//! when [`func`] finishes the function, and [`func`] checks every use of an
//! index (or of a [`let_`] variable) against the binders around it. An index
//! smuggled out of its closure — into a sibling binder, or into another
//! function — is an [`Error::Frontend`], never silently captured by whatever
//! binder happens to have the same name:
//!
//! ```
//! use einsat::frontend::builder::*;
//! // gen(i:3) (sum(j:3) x[j]) * sum(j:3) A[i, j], with the second sum's
//! // index taken from the first sum by mistake
//! let e = func("bad", |b| {
//!     let a = b.param("A", "[3,3]R");
//!     let x = b.param("x", "[3]R");
//!     gen(3, |i| {
//!         let mut escaped = None;
//!         let s1 = sum(3, |j| {
//!             escaped = Some(j);
//!             x.at(j)
//!         });
//!         let j = escaped.unwrap();
//!         s1 * sum(3, |_k| a.at2(i, j))
//!     })
//! })
//! .unwrap_err();
//! assert!(e.to_string().contains("used outside the `sum` that made it"), "{e}");
//! ```
//!
//! Index names are chosen by nesting depth (`i`, `j`, `k`, `l`, `p`, `q`, …,
//! skipping names used elsewhere in the function); the `*_named` variants
//! take the name, and naming an inner binder like an outer one whose index
//! the inner body uses is an error (the name would capture it). A binder's
//! size may be left out ([`gen_auto`], [`sum_auto`]): it is then inferred
//! from the axes its index indexes plainly, with an error if they disagree.

use crate::error::{Error, Result};
use crate::syntax::ast::*;
use std::collections::{BTreeMap, BTreeSet};
use std::ops;
use std::sync::atomic::{AtomicU64, Ordering};

/// Binder identities, unique in the process (not per thread: an [`Ix`]
/// moved to another thread stays the same index).
static NEXT_ID: AtomicU64 = AtomicU64::new(0);

fn fresh_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// Placeholder prefixes: while an expression is being built, a binder is
/// named `?ix{id}` (or `?ix{id}={name}` when a name was asked for) and its
/// uses `?ix{id}`; [`func`] replaces them by real names. `?` cannot start a
/// name of the surface language.
const IX_PREFIX: &str = "?ix";
const LET_PREFIX: &str = "?let";

fn placeholder(prefix: &str, id: u64) -> String {
    format!("{prefix}{id}")
}

fn binder_placeholder(prefix: &str, id: u64, name: Option<&str>) -> String {
    match name {
        Some(n) => format!("{prefix}{id}={n}"),
        None => placeholder(prefix, id),
    }
}

/// `(id, asked-for name)` of a placeholder binder or use.
fn parse_placeholder<'a>(prefix: &str, s: &'a str) -> Option<(u64, Option<&'a str>)> {
    let rest = s.strip_prefix(prefix)?;
    let (num, name) = match rest.split_once('=') {
        Some((a, b)) => (a, Some(b)),
        None => (rest, None),
    };
    Some((num.parse().ok()?, name))
}

const NAMES: [&str; 8] = ["i", "j", "k", "l", "p", "q", "r", "s"];

/// A value expression under construction. Until [`func`] finishes the
/// function, the names of its indices and `let` variables are placeholders.
#[derive(Clone, Debug, PartialEq)]
pub struct E(pub Expr);

/// A bound index: a cheap copyable handle, usable as often as needed inside
/// the closure of the binder that made it (and on any thread), and an error
/// anywhere else (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ix {
    id: u64,
}

/// An affine index expression over bound indices (`i + 1`, `2 * i - j`).
#[derive(Clone, Debug, PartialEq)]
pub struct Aff(pub Affine);

impl Ix {
    fn aff(self) -> Affine {
        Affine::var(placeholder(IX_PREFIX, self.id))
    }
}

/// A predicate, for Iverson brackets.
#[derive(Clone, Debug, PartialEq)]
pub struct P(pub Pred);

/// A binder size: a literal, a size name, or left to inference.
#[derive(Clone, Debug)]
pub struct SizeArg(Size);

impl From<usize> for SizeArg {
    fn from(n: usize) -> Self {
        SizeArg(Size::Lit(n))
    }
}
impl From<&str> for SizeArg {
    fn from(n: &str) -> Self {
        SizeArg(Size::Named(n.to_string()))
    }
}

const AUTO_PREFIX: &str = "?auto";

fn with_index<T>(name: Option<&str>, f: impl FnOnce(Ix) -> T) -> (String, T) {
    let id = fresh_id();
    let r = f(Ix { id });
    (binder_placeholder(IX_PREFIX, id, name), r)
}

fn auto_size() -> Size {
    Size::Named(format!("{AUTO_PREFIX}{}", fresh_id()))
}

/// `gen(i:n) body`.
pub fn gen(n: impl Into<SizeArg>, body: impl FnOnce(Ix) -> E) -> E {
    let (i, b) = with_index(None, body);
    E(Expr::gen(i, n.into().0, b.0))
}
/// `sum(i:n) body`.
pub fn sum(n: impl Into<SizeArg>, body: impl FnOnce(Ix) -> E) -> E {
    let (i, b) = with_index(None, body);
    E(Expr::sum(i, n.into().0, b.0))
}
/// `gen` with a given index name.
pub fn gen_named(i: &str, n: impl Into<SizeArg>, body: impl FnOnce(Ix) -> E) -> E {
    let (i, b) = with_index(Some(i), body);
    E(Expr::gen(i, n.into().0, b.0))
}
/// `sum` with a given index name.
pub fn sum_named(i: &str, n: impl Into<SizeArg>, body: impl FnOnce(Ix) -> E) -> E {
    let (i, b) = with_index(Some(i), body);
    E(Expr::sum(i, n.into().0, b.0))
}
/// `gen` whose size is inferred from the axes its index indexes.
pub fn gen_auto(body: impl FnOnce(Ix) -> E) -> E {
    let (i, b) = with_index(None, body);
    E(Expr::gen(i, auto_size(), b.0))
}
/// `sum` whose size is inferred from the axes its index indexes.
pub fn sum_auto(body: impl FnOnce(Ix) -> E) -> E {
    let (i, b) = with_index(None, body);
    E(Expr::sum(i, auto_size(), b.0))
}

/// `max(i:n) body`: the largest term, NaN if any term is NaN (IEEE
/// `maximum`), -inf over an empty range. Not [`max`], the binary function.
pub fn max_over(n: impl Into<SizeArg>, body: impl FnOnce(Ix) -> E) -> E {
    let (i, b) = with_index(None, body);
    E(Expr::reduce(RedOp::Max, i, n.into().0, b.0))
}
/// `min(i:n) body`: the smallest term, NaN if any term is NaN (IEEE
/// `minimum`), +inf over an empty range. Not [`min`], the binary function.
pub fn min_over(n: impl Into<SizeArg>, body: impl FnOnce(Ix) -> E) -> E {
    let (i, b) = with_index(None, body);
    E(Expr::reduce(RedOp::Min, i, n.into().0, b.0))
}
/// [`max_over`] or [`min_over`] with a given index name.
pub fn reduce_named(op: RedOp, i: &str, n: impl Into<SizeArg>, body: impl FnOnce(Ix) -> E) -> E {
    let (i, b) = with_index(Some(i), body);
    E(Expr::reduce(op, i, n.into().0, b.0))
}
/// [`max_over`] or [`min_over`] whose size is inferred from the axes its
/// index indexes.
pub fn reduce_auto(op: RedOp, body: impl FnOnce(Ix) -> E) -> E {
    let (i, b) = with_index(None, body);
    E(Expr::reduce(op, i, auto_size(), b.0))
}

/// `fold(i:n, acc = init) body(i, acc)`: `acc = init`, then for `i` in
/// `0..n` in order `acc = body(i, acc)`; the final `acc`. The accumulator
/// is a number or a pair (of pairs) of numbers, and `body` gives a value
/// of the same type (Horner: `fold(n, num(0.0), |i, acc| acc * x +
/// c.at(...))`). The index and the accumulator are valid only inside
/// `body`.
pub fn fold(n: impl Into<SizeArg>, init: E, body: impl FnOnce(Ix, E) -> E) -> E {
    fold_impl(None, n, init, body)
}
/// [`fold`] with given names for the index and the accumulator.
pub fn fold_named(
    i: &str,
    acc: &str,
    n: impl Into<SizeArg>,
    init: E,
    body: impl FnOnce(Ix, E) -> E,
) -> E {
    fold_impl(Some((i, acc)), n, init, body)
}

fn fold_impl(
    names: Option<(&str, &str)>,
    n: impl Into<SizeArg>,
    init: E,
    body: impl FnOnce(Ix, E) -> E,
) -> E {
    let acc = fresh_id();
    let (i, b) = with_index(names.map(|x| x.0), |i| {
        body(i, E(Expr::var(placeholder(LET_PREFIX, acc))))
    });
    E(Expr::fold(
        i,
        n.into().0,
        binder_placeholder(LET_PREFIX, acc, names.map(|x| x.1)),
        init.0,
        b.0,
    ))
}

/// `let x = value in body(x)`, with a fresh name `t0`, `t1`, …. The
/// variable is valid only inside `body`, like an index.
pub fn let_(value: E, body: impl FnOnce(E) -> E) -> E {
    let_impl(None, value, body)
}
/// `let name = value in body(name)`.
pub fn let_named(name: &str, value: E, body: impl FnOnce(E) -> E) -> E {
    let_impl(Some(name), value, body)
}

fn let_impl(name: Option<&str>, value: E, body: impl FnOnce(E) -> E) -> E {
    let id = fresh_id();
    let b = body(E(Expr::var(placeholder(LET_PREFIX, id))));
    E(Expr::let_(
        binder_placeholder(LET_PREFIX, id, name),
        value.0,
        b.0,
    ))
}

/// A number.
pub fn num(x: f64) -> E {
    E(Expr::Num(x))
}
/// A pair.
pub fn pair(a: E, b: E) -> E {
    E(Expr::pair(a.0, b.0))
}
/// The Iverson bracket `[p]`.
pub fn bracket(p: P) -> E {
    E(Expr::Bracket(p.0))
}
/// `eps[i,j,k]`.
pub fn eps3(i: impl Into<Aff>, j: impl Into<Aff>, k: impl Into<Aff>) -> E {
    E(Expr::Eps(vec![i.into().0, j.into().0, k.into().0]))
}
/// `eps[i,j]`.
pub fn eps2(i: impl Into<Aff>, j: impl Into<Aff>) -> E {
    E(Expr::Eps(vec![i.into().0, j.into().0]))
}

macro_rules! unary_fns {
    ($($name:ident => $f:ident),*) => {$(
        #[doc = concat!("`", stringify!($name), "(e)`.")]
        pub fn $name(e: E) -> E {
            E(Expr::Call(Func::$f, vec![e.0]))
        }
    )*};
}
unary_fns!(sqrt => Sqrt, exp => Exp, log => Log, sin => Sin, cos => Cos, tanh => Tanh, abs => Abs);

/// `max(a, b)`.
pub fn max(a: E, b: E) -> E {
    E(Expr::Call(Func::Max, vec![a.0, b.0]))
}
/// `min(a, b)`.
pub fn min(a: E, b: E) -> E {
    E(Expr::Call(Func::Min, vec![a.0, b.0]))
}
/// `erf(e)`.
pub fn erf(e: E) -> E {
    E(Expr::Call(Func::Erf, vec![e.0]))
}

/// `pow(a, b)`: `a` to the power `b` (C's `pow`).
pub fn pow(a: E, b: E) -> E {
    E(Expr::Call(Func::Pow, vec![a.0, b.0]))
}

impl E {
    /// `e[i]`.
    pub fn at(&self, i: impl Into<Aff>) -> E {
        E(Expr::access(self.0.clone(), i.into().0))
    }
    /// `e[i, j]`.
    pub fn at2(&self, i: impl Into<Aff>, j: impl Into<Aff>) -> E {
        self.at(i).at(j)
    }
    /// `e[i, j, k]`.
    pub fn at3(&self, i: impl Into<Aff>, j: impl Into<Aff>, k: impl Into<Aff>) -> E {
        self.at(i).at(j).at(k)
    }
    /// `e[g + c]`, a gather: `g` reads an integer array parameter at
    /// every axis (`tok.at(i)`, for `tok: [n]Z`), and `c` is added to it;
    /// `e` is a parameter or an access chain from one. An embedding
    /// lookup `gen(i:n, j:d) E[tok[i], j]` is
    /// `gen("n", |i| gen("d", |j| e.gather(tok.at(i), 0).at(j)))`.
    pub fn gather(&self, g: E, c: i64) -> E {
        E(Expr::gather(self.0.clone(), g.0, c))
    }
    /// `e.k`.
    pub fn proj(&self, k: u8) -> E {
        E(Expr::proj(k, self.0.clone()))
    }
    /// `e.0`.
    pub fn fst(&self) -> E {
        self.proj(0)
    }
    /// `e.1`.
    pub fn snd(&self) -> E {
        self.proj(1)
    }
}

impl From<Ix> for Aff {
    fn from(i: Ix) -> Self {
        Aff(i.aff())
    }
}
impl From<i64> for Aff {
    fn from(c: i64) -> Self {
        Aff(Affine::constant(c))
    }
}
impl From<i32> for Aff {
    fn from(c: i32) -> Self {
        Aff(Affine::constant(c as i64))
    }
}

macro_rules! cmp_methods {
    ($($name:ident => $op:ident),*) => {$(
        #[doc = concat!("The predicate `self ", stringify!($name), " other`.")]
        pub fn $name(self, o: impl Into<Aff>) -> P {
            P(Pred::Cmp(CmpOp::$op, Aff::from(self).0, o.into().0))
        }
    )*};
}
impl Ix {
    cmp_methods!(eq => Eq, ne => Ne, lt => Lt, le => Le, gt => Gt, ge => Ge);
}
impl Aff {
    cmp_methods!(eq => Eq, ne => Ne, lt => Lt, le => Le, gt => Gt, ge => Ge);
}

/// A condition of [`where_`]: comparisons of numbers ([`E::is_lt`], …)
/// combined with `&`, `|` and `!`.
#[derive(Clone, Debug)]
pub struct C(pub Cond);

macro_rules! cond_methods {
    ($($name:ident => $op:ident),*) => {$(
        #[doc = concat!("The condition `self ", stringify!($op), " other` on numbers (IEEE: false with a NaN except for `Ne`).")]
        pub fn $name(&self, o: E) -> C {
            C(Cond::Cmp(CmpOp::$op, Box::new(self.0.clone()), Box::new(o.0)))
        }
    )*};
}
impl E {
    cond_methods!(is_eq => Eq, is_ne => Ne, is_lt => Lt, is_le => Le, is_gt => Gt, is_ge => Ge);
}
impl ops::BitAnd for C {
    type Output = C;
    fn bitand(self, o: C) -> C {
        C(Cond::And(Box::new(self.0), Box::new(o.0)))
    }
}
impl ops::BitOr for C {
    type Output = C;
    fn bitor(self, o: C) -> C {
        C(Cond::Or(Box::new(self.0), Box::new(o.0)))
    }
}
impl ops::Not for C {
    type Output = C;
    fn not(self) -> C {
        C(Cond::Not(Box::new(self.0)))
    }
}

/// `where(c, a, b)`: `a` where `c` holds, else `b` (only that side is
/// evaluated).
pub fn where_(c: C, a: E, b: E) -> E {
    E(Expr::where_(c.0, a.0, b.0))
}

/// The run-time value of the size name `n` as a number.
pub fn size_value(n: &str) -> E {
    E(Expr::SizeValue(n.to_string()))
}

impl Ix {
    /// The index as a number (`gen(i:n) x[i] * i`).
    pub fn value(self) -> E {
        Aff::from(self).value()
    }
}
impl Aff {
    /// The index expression as a number (`i + 1`, `n - 1 - i`'s index part).
    pub fn value(self) -> E {
        E(Expr::index_value(self.0))
    }
}

impl ops::BitAnd for P {
    type Output = P;
    fn bitand(self, o: P) -> P {
        P(Pred::And(Box::new(self.0), Box::new(o.0)))
    }
}
impl ops::BitOr for P {
    type Output = P;
    fn bitor(self, o: P) -> P {
        P(Pred::Or(Box::new(self.0), Box::new(o.0)))
    }
}
impl ops::Not for P {
    type Output = P;
    fn not(self) -> P {
        P(Pred::Not(Box::new(self.0)))
    }
}

macro_rules! affine_ops {
    ($($lhs:ty),*) => {$(
        impl<T: Into<Aff>> ops::Add<T> for $lhs {
            type Output = Aff;
            fn add(self, o: T) -> Aff {
                Aff(Aff::from(self).0.add(&o.into().0))
            }
        }
        impl<T: Into<Aff>> ops::Sub<T> for $lhs {
            type Output = Aff;
            fn sub(self, o: T) -> Aff {
                Aff(Aff::from(self).0.sub(&o.into().0))
            }
        }
        impl ops::Mul<$lhs> for i64 {
            type Output = Aff;
            fn mul(self, o: $lhs) -> Aff {
                Aff(Aff::from(o).0.scale(self))
            }
        }
    )*};
}
affine_ops!(Ix, Aff);

macro_rules! arith {
    ($($tr:ident $m:ident $op:ident),*) => {$(
        impl ops::$tr<E> for E {
            type Output = E;
            fn $m(self, o: E) -> E { E(Expr::bin(BinOp::$op, self.0, o.0)) }
        }
        impl ops::$tr<f64> for E {
            type Output = E;
            fn $m(self, o: f64) -> E { E(Expr::bin(BinOp::$op, self.0, Expr::Num(o))) }
        }
        impl ops::$tr<E> for f64 {
            type Output = E;
            fn $m(self, o: E) -> E { E(Expr::bin(BinOp::$op, Expr::Num(self), o.0)) }
        }
    )*};
}
arith!(Add add Add, Sub sub Sub, Mul mul Mul, Div div Div);

impl ops::Neg for E {
    type Output = E;
    fn neg(self) -> E {
        E(Expr::Neg(Box::new(self.0)))
    }
}

/// Declares a function's parameters.
#[derive(Default)]
pub struct FnBuilder {
    params: Vec<Param>,
    errors: Vec<String>,
}

impl FnBuilder {
    /// A parameter whose type is written in the surface syntax (`"[n,3]R"`).
    pub fn param(&mut self, name: &str, ty: &str) -> E {
        match crate::syntax::parse_type(ty) {
            Ok(t) => self.param_typed(name, t),
            Err(d) => {
                self.errors.push(format!(
                    "parameter `{name}`: bad type `{ty}`: {}",
                    d.message
                ));
                E(Expr::var(name))
            }
        }
    }
    /// A parameter with a type value.
    pub fn param_typed(&mut self, name: &str, ty: Type) -> E {
        self.params.push(Param {
            name: name.to_string(),
            ty,
        });
        E(Expr::var(name))
    }
}

/// Build and type-check a function. The result type is inferred.
///
/// This is where indices and `let` variables get their names and where
/// every use of one is checked against the binders around it: an index used
/// outside the closure of its binder, or a given name that would capture
/// another variable, is an [`Error::Frontend`].
pub fn func(name: &str, body: impl FnOnce(&mut FnBuilder) -> E) -> Result<Function> {
    let mut b = FnBuilder::default();
    let e = body(&mut b);
    if !b.errors.is_empty() {
        return Err(Error::Frontend(b.errors.join("; ")));
    }
    let body = crate::syntax::fold_index_values(resolve_names(&b.params, e.0)?);
    let mut f = Function {
        name: name.to_string(),
        params: b.params,
        ret: None,
        body,
    };
    infer_sizes(&mut f)?;
    let sig = crate::types::check(&f).map_err(Error::types)?;
    f.ret = Some(sig.ret);
    Ok(f)
}

// ---- names and scopes ----

/// What kind of binder made a placeholder.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Gen,
    Sum,
    Let,
    Reduce(RedOp),
    Fold,
}

impl Kind {
    fn word(self) -> &'static str {
        match self {
            Kind::Gen => "gen",
            Kind::Sum => "sum",
            Kind::Let => "let",
            Kind::Reduce(op) => op.name(),
            Kind::Fold => "fold",
        }
    }
}

/// One binder around the current position: its placeholder id (`None` for a
/// binder written with a plain name, e.g. in an `E(Expr)` made by hand) and
/// its final name.
struct Scope {
    id: Option<u64>,
    name: String,
}

struct Resolver {
    /// Index binders around the current position, outermost first.
    idx: Vec<Scope>,
    /// `let` binders around the current position, outermost first.
    lets: Vec<Scope>,
    /// Names an automatic index name must avoid: plain index names and the
    /// names asked for anywhere in the function.
    taken_idx: BTreeSet<String>,
    /// Likewise for `let` names (parameters, plain variables).
    taken_val: BTreeSet<String>,
    /// Every placeholder binder of the tree: its kind, and its final name
    /// once given (for error messages).
    binders: BTreeMap<u64, (Kind, Option<String>)>,
}

/// Collect plain names, asked-for names and placeholder binders.
fn survey(e: &Expr, r: &mut Resolver) {
    crate::stack::deep(|| {
        let aff = |a: &Affine, r: &mut Resolver| {
            for k in a.terms.keys() {
                if parse_placeholder(IX_PREFIX, k).is_none() {
                    r.taken_idx.insert(k.clone());
                }
            }
        };
        match e {
            Expr::Var(x) if parse_placeholder(LET_PREFIX, x).is_none() => {
                r.taken_val.insert(x.clone());
            }
            Expr::Gen(i, _, _) | Expr::Sum(i, _, _) | Expr::Reduce(_, i, _, _) => {
                let kind = match e {
                    Expr::Gen(..) => Kind::Gen,
                    Expr::Reduce(op, ..) => Kind::Reduce(*op),
                    _ => Kind::Sum,
                };
                match parse_placeholder(IX_PREFIX, i) {
                    Some((id, asked)) => {
                        r.binders.insert(id, (kind, None));
                        if let Some(n) = asked {
                            r.taken_idx.insert(n.to_string());
                        }
                    }
                    None => {
                        r.taken_idx.insert(i.clone());
                    }
                }
            }
            Expr::Fold(i, _, x, _, _) => {
                for (name, prefix, kind, taken) in [
                    (i, IX_PREFIX, Kind::Fold, &mut r.taken_idx),
                    (x, LET_PREFIX, Kind::Let, &mut r.taken_val),
                ] {
                    match parse_placeholder(prefix, name) {
                        Some((id, asked)) => {
                            r.binders.insert(id, (kind, None));
                            if let Some(n) = asked {
                                taken.insert(n.to_string());
                            }
                        }
                        None => {
                            taken.insert(name.clone());
                        }
                    }
                }
            }
            Expr::Let(x, _, _) => match parse_placeholder(LET_PREFIX, x) {
                Some((id, asked)) => {
                    r.binders.insert(id, (Kind::Let, None));
                    if let Some(n) = asked {
                        r.taken_val.insert(n.to_string());
                    }
                }
                None => {
                    r.taken_val.insert(x.clone());
                }
            },
            Expr::Access(_, a) => aff(a, r),
            Expr::Eps(v) => v.iter().for_each(|a| aff(a, r)),
            Expr::IndexValue(a) => aff(a, r),
            Expr::Bracket(p) => pred_affines(p, &mut |a| aff(a, r)),
            _ => {}
        }
        for c in e.children() {
            survey(c, r);
        }
    })
}

fn pred_affines(p: &Pred, f: &mut impl FnMut(&Affine)) {
    match p {
        Pred::Cmp(_, a, b) => {
            f(a);
            f(b);
        }
        Pred::And(a, b) | Pred::Or(a, b) => {
            pred_affines(a, f);
            pred_affines(b, f);
        }
        Pred::Not(a) => pred_affines(a, f),
    }
}

/// The final name of a use: the placeholder's binder must be around it, and
/// no binder between it and the use may carry the same name; a plain name
/// must not be captured by a placeholder binder.
fn lookup(
    scopes: &[Scope],
    binders: &BTreeMap<u64, (Kind, Option<String>)>,
    used: &str,
    prefix: &str,
) -> Result<String> {
    match parse_placeholder(prefix, used) {
        Some((id, _)) => {
            let Some(p) = scopes.iter().rposition(|s| s.id == Some(id)) else {
                let what = match binders.get(&id) {
                    Some((k, Some(n))) => format!(
                        "{} `{n}` is used outside the `{}` that made it",
                        if *k == Kind::Let { "variable" } else { "index" },
                        k.word()
                    ),
                    Some((k, None)) => format!(
                        "an {} is used outside the `{}` that made it",
                        if *k == Kind::Let { "variable" } else { "index" },
                        k.word()
                    ),
                    None => format!(
                        "an {} is used outside the binder that made it (its binder is not part of this function)",
                        if prefix == LET_PREFIX { "variable" } else { "index" }
                    ),
                };
                return Err(Error::Frontend(format!(
                    "{what}: a builder index or `let` variable is valid only inside its binder's closure"
                )));
            };
            let name = &scopes[p].name;
            if scopes[p + 1..].iter().any(|s| &s.name == name) {
                return Err(Error::Frontend(format!(
                    "the name `{name}` given to an inner binder hides the outer `{name}` that its body uses; choose another name"
                )));
            }
            Ok(name.clone())
        }
        None => {
            if let Some(s) = scopes.iter().rev().find(|s| s.name == used) {
                if s.id.is_some() {
                    return Err(Error::Frontend(format!(
                        "the name `{used}` given to a binder hides the `{used}` that its body uses; choose another name"
                    )));
                }
            }
            Ok(used.to_string())
        }
    }
}

impl Resolver {
    fn affine(&self, a: Affine) -> Result<Affine> {
        let mut out = Affine::constant(a.constant);
        for (k, v) in a.terms {
            let name = lookup(&self.idx, &self.binders, &k, IX_PREFIX)?;
            out = out.add(&Affine::var(name).scale(v));
        }
        Ok(out)
    }

    fn pred(&self, p: Pred) -> Result<Pred> {
        Ok(match p {
            Pred::Cmp(op, a, b) => Pred::Cmp(op, self.affine(a)?, self.affine(b)?),
            Pred::And(a, b) => Pred::And(Box::new(self.pred(*a)?), Box::new(self.pred(*b)?)),
            Pred::Or(a, b) => Pred::Or(Box::new(self.pred(*a)?), Box::new(self.pred(*b)?)),
            Pred::Not(a) => Pred::Not(Box::new(self.pred(*a)?)),
        })
    }

    /// An automatic name: by depth, avoiding the binders around and every
    /// name taken in the function.
    fn auto_name(&self, kind: Kind) -> String {
        let (scopes, taken) = match kind {
            Kind::Let => (&self.lets, &self.taken_val),
            _ => (&self.idx, &self.taken_idx),
        };
        let free = |n: &str| !taken.contains(n) && !scopes.iter().any(|s| s.name == n);
        let depth = scopes.len();
        let mut candidates: Vec<String> = Vec::new();
        if kind == Kind::Let {
            candidates.extend((depth..).take(64).map(|k| format!("t{k}")));
        } else {
            candidates.extend(NAMES.iter().skip(depth).map(|s| s.to_string()));
            candidates.extend(NAMES.iter().take(depth).map(|s| s.to_string()));
        }
        candidates.into_iter().find(|n| free(n)).unwrap_or_else(|| {
            let stem = if kind == Kind::Let { "t" } else { "i" };
            (depth..)
                .map(|k| format!("{stem}{k}"))
                .find(|n| free(n))
                .expect("some name is free")
        })
    }

    /// Enter a binder named `raw`: push its scope, returning its final name.
    fn enter(&mut self, raw: String, kind: Kind) -> String {
        let prefix = if kind == Kind::Let {
            LET_PREFIX
        } else {
            IX_PREFIX
        };
        let (id, name) = match parse_placeholder(prefix, &raw) {
            Some((id, Some(asked))) => (Some(id), asked.to_string()),
            Some((id, None)) => (Some(id), self.auto_name(kind)),
            None => (None, raw),
        };
        if let Some(id) = id {
            self.binders.insert(id, (kind, Some(name.clone())));
        }
        let scope = Scope {
            id,
            name: name.clone(),
        };
        match kind {
            Kind::Let => self.lets.push(scope),
            _ => self.idx.push(scope),
        }
        name
    }

    fn expr(&mut self, e: Expr) -> Result<Expr> {
        crate::stack::deep(|| {
            Ok(match e {
                Expr::Var(x) => Expr::Var(lookup(&self.lets, &self.binders, &x, LET_PREFIX)?),
                Expr::Num(x) => Expr::Num(x),
                Expr::Bin(op, a, b) => Expr::bin(op, self.expr(*a)?, self.expr(*b)?),
                Expr::Neg(a) => Expr::Neg(Box::new(self.expr(*a)?)),
                Expr::Call(f, args) => Expr::Call(
                    f,
                    args.into_iter()
                        .map(|a| self.expr(a))
                        .collect::<Result<_>>()?,
                ),
                Expr::Pair(a, b) => Expr::pair(self.expr(*a)?, self.expr(*b)?),
                Expr::Proj(k, a) => Expr::proj(k, self.expr(*a)?),
                Expr::Gen(i, n, b) => {
                    let i = self.enter(i, Kind::Gen);
                    let b = self.expr(*b);
                    self.idx.pop();
                    Expr::gen(i, n, b?)
                }
                Expr::Sum(i, n, b) => {
                    let i = self.enter(i, Kind::Sum);
                    let b = self.expr(*b);
                    self.idx.pop();
                    Expr::sum(i, n, b?)
                }
                Expr::Reduce(op, i, n, b) => {
                    let i = self.enter(i, Kind::Reduce(op));
                    let b = self.expr(*b);
                    self.idx.pop();
                    Expr::reduce(op, i, n, b?)
                }
                Expr::Access(a, ix) => Expr::access(self.expr(*a)?, self.affine(ix)?),
                Expr::Gather(a, g, c) => Expr::gather(self.expr(*a)?, self.expr(*g)?, c),
                Expr::Bracket(p) => Expr::Bracket(self.pred(p)?),
                Expr::Eps(v) => Expr::Eps(
                    v.into_iter()
                        .map(|a| self.affine(a))
                        .collect::<Result<_>>()?,
                ),
                Expr::Let(x, a, b) => {
                    let a = self.expr(*a)?;
                    let x = self.enter(x, Kind::Let);
                    let b = self.expr(*b);
                    self.lets.pop();
                    Expr::let_(x, a, b?)
                }
                Expr::IndexValue(a) => Expr::index_value(self.affine(a)?),
                Expr::SizeValue(n) => Expr::SizeValue(n),
                Expr::Where(c, a, b) => {
                    let c = c.try_map_exprs(&mut |x| self.expr(x.clone()))?;
                    Expr::where_(c, self.expr(*a)?, self.expr(*b)?)
                }
                Expr::Fold(i, n, x, a, b) => {
                    let a = self.expr(*a)?;
                    let i = self.enter(i, Kind::Fold);
                    let x = self.enter(x, Kind::Let);
                    let b = self.expr(*b);
                    self.lets.pop();
                    self.idx.pop();
                    Expr::fold(i, n, x, a, b?)
                }
            })
        })
    }
}

/// Give the placeholder names of a built body their final names, checking
/// every use against the binders around it.
fn resolve_names(params: &[Param], body: Expr) -> Result<Expr> {
    let mut r = Resolver {
        idx: Vec::new(),
        lets: Vec::new(),
        taken_idx: BTreeSet::new(),
        taken_val: params.iter().map(|p| p.name.clone()).collect(),
        binders: BTreeMap::new(),
    };
    survey(&body, &mut r);
    r.expr(body)
}

// ---- size inference ----

fn is_auto(s: &Size) -> bool {
    matches!(s, Size::Named(n) if n.starts_with(AUTO_PREFIX))
}

/// Constraints found for one auto size: (size, where).
type Found = Vec<(String, Vec<(Size, String)>)>;

fn root_name(e: &Expr) -> String {
    match e {
        Expr::Var(x) => format!("`{x}`"),
        Expr::Access(b, _) | Expr::Proj(_, b) | Expr::Gather(b, _, _) => root_name(b),
        _ => "an expression".into(),
    }
}

fn infer(
    e: &Expr,
    vals: &mut Vec<(String, Type)>,
    idx: &mut Vec<(String, Size)>,
    found: &mut Found,
) -> Option<Type> {
    match e {
        Expr::Var(x) => vals
            .iter()
            .rev()
            .find(|(n, _)| n == x)
            .map(|(_, t)| t.clone()),
        Expr::Num(_) | Expr::Bracket(_) | Expr::Eps(_) => Some(Type::Real),
        Expr::Bin(_, a, b) => {
            infer(a, vals, idx, found);
            infer(b, vals, idx, found);
            Some(Type::Real)
        }
        Expr::Neg(a) => {
            infer(a, vals, idx, found);
            Some(Type::Real)
        }
        Expr::Call(_, args) => {
            for a in args {
                infer(a, vals, idx, found);
            }
            Some(Type::Real)
        }
        Expr::Pair(a, b) => {
            let ta = infer(a, vals, idx, found);
            let tb = infer(b, vals, idx, found);
            Some(Type::pair(ta?, tb?))
        }
        Expr::Proj(k, a) => match infer(a, vals, idx, found)? {
            Type::Pair(x, y) => Some(if *k == 0 { *x } else { *y }),
            _ => None,
        },
        Expr::Gen(i, n, b) | Expr::Sum(i, n, b) => {
            idx.push((i.clone(), n.clone()));
            let t = infer(b, vals, idx, found);
            idx.pop();
            if matches!(e, Expr::Gen(..)) {
                Some(Type::tensor(n.clone(), t?))
            } else {
                Some(Type::Real)
            }
        }
        Expr::Reduce(_, i, n, b) => {
            idx.push((i.clone(), n.clone()));
            infer(b, vals, idx, found);
            idx.pop();
            Some(Type::Real)
        }
        Expr::Access(a, ix) => {
            let t = infer(a, vals, idx, found)?;
            match t {
                Type::Tensor(n, el) => {
                    if let Some(i) = ix.as_var() {
                        if let Some((_, s)) = idx.iter().rev().find(|(m, _)| m == i) {
                            if let Size::Named(auto) = s {
                                if is_auto(s) && !is_auto(&n) {
                                    let what = root_name(a);
                                    match found.iter_mut().find(|(k, _)| k == auto) {
                                        Some((_, v)) => v.push((n.clone(), what)),
                                        None => found.push((auto.clone(), vec![(n.clone(), what)])),
                                    }
                                }
                            }
                        }
                    }
                    Some(*el)
                }
                _ => None,
            }
        }
        Expr::Let(x, a, b) => {
            let t = infer(a, vals, idx, found);
            match t {
                Some(t) => {
                    vals.push((x.clone(), t));
                    let r = infer(b, vals, idx, found);
                    vals.pop();
                    r
                }
                None => {
                    infer(b, vals, idx, found);
                    None
                }
            }
        }
        Expr::IndexValue(_) | Expr::SizeValue(_) => Some(Type::Real),
        Expr::Gather(a, g, _) => {
            infer(g, vals, idx, found);
            match infer(a, vals, idx, found)? {
                Type::Tensor(_, el) => Some(*el),
                _ => None,
            }
        }
        Expr::Where(..) => {
            for c in e.children() {
                infer(c, vals, idx, found);
            }
            Some(Type::Real)
        }
        Expr::Fold(i, n, x, a, b) => {
            let t = infer(a, vals, idx, found);
            idx.push((i.clone(), n.clone()));
            if let Some(t) = &t {
                vals.push((x.clone(), t.clone()));
            }
            infer(b, vals, idx, found);
            if t.is_some() {
                vals.pop();
            }
            idx.pop();
            t
        }
    }
}

fn subst_sizes(e: &mut Expr, auto: &str, by: &Size) {
    match e {
        Expr::Gen(_, n, b) | Expr::Sum(_, n, b) => {
            if matches!(n, Size::Named(m) if m == auto) {
                *n = by.clone();
            }
            subst_sizes(b, auto, by);
        }
        Expr::Reduce(_, _, n, b) => {
            if matches!(n, Size::Named(m) if m == auto) {
                *n = by.clone();
            }
            subst_sizes(b, auto, by);
        }
        Expr::Bin(_, a, b) | Expr::Pair(a, b) | Expr::Let(_, a, b) => {
            subst_sizes(a, auto, by);
            subst_sizes(b, auto, by);
        }
        Expr::Neg(a) | Expr::Proj(_, a) | Expr::Access(a, _) => subst_sizes(a, auto, by),
        Expr::Gather(a, g, _) => {
            subst_sizes(a, auto, by);
            subst_sizes(g, auto, by);
        }
        Expr::Call(_, args) => args.iter_mut().for_each(|a| subst_sizes(a, auto, by)),
        Expr::Var(_) | Expr::Num(_) | Expr::Bracket(_) | Expr::Eps(_) => {}
        Expr::IndexValue(_) | Expr::SizeValue(_) => {}
        Expr::Where(c, a, b) => {
            c.for_each_expr_mut(&mut |x| subst_sizes(x, auto, by));
            subst_sizes(a, auto, by);
            subst_sizes(b, auto, by);
        }
        Expr::Fold(_, n, _, a, b) => {
            if matches!(n, Size::Named(m) if m == auto) {
                *n = by.clone();
            }
            subst_sizes(a, auto, by);
            subst_sizes(b, auto, by);
        }
    }
}

fn autos(e: &Expr, out: &mut Vec<(String, String)>) {
    if let Expr::Gen(i, n, _) | Expr::Sum(i, n, _) | Expr::Reduce(_, i, n, _) = e {
        if let Size::Named(m) = n {
            if is_auto(n) {
                out.push((m.clone(), i.clone()));
            }
        }
    }
    for c in e.children() {
        autos(c, out);
    }
}

/// Replace every inferred-size binder's placeholder by the size of the axes
/// its index indexes plainly.
fn infer_sizes(f: &mut Function) -> Result<()> {
    loop {
        let mut pending = Vec::new();
        autos(&f.body, &mut pending);
        if pending.is_empty() {
            return Ok(());
        }
        let mut found = Found::new();
        let mut vals: Vec<(String, Type)> = f
            .params
            .iter()
            .map(|p| (p.name.clone(), p.ty.clone()))
            .collect();
        infer(&f.body, &mut vals, &mut Vec::new(), &mut found);
        if found.is_empty() {
            let (_, i) = &pending[0];
            return Err(Error::Frontend(format!(
                "cannot infer the size of index `{i}`: it never indexes an axis of known size plainly"
            )));
        }
        for (auto, uses) in found {
            let index = pending
                .iter()
                .find(|(a, _)| *a == auto)
                .map(|(_, i)| i.clone())
                .unwrap_or_default();
            let (first, where1) = &uses[0];
            if let Some((other, where2)) = uses.iter().find(|(s, _)| s != first) {
                return Err(Error::Frontend(format!(
                    "index `{index}` is used with size {first} on {where1} and size {other} on {where2}"
                )));
            }
            subst_sizes(&mut f.body, &auto, first);
        }
    }
}
