//! The Rust builder API (seed 003's style): binders take closures, so an
//! index cannot escape its scope, and the result is the same IR the parser
//! makes.
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
//! Index names are chosen by nesting depth (`i`, `j`, `k`, `l`, `p`, `q`, …);
//! the `*_named` variants take the name. A binder's size may be left out
//! ([`gen_auto`], [`sum_auto`]): it is then inferred from the axes its index
//! indexes plainly, with an error if they disagree.

use crate::error::{Error, Result};
use crate::syntax::ast::*;
use std::cell::Cell;
use std::ops;

thread_local! {
    static DEPTH: Cell<usize> = const { Cell::new(0) };
    static AUTO: Cell<usize> = const { Cell::new(0) };
    static INTERNED: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

fn intern(name: &str) -> u32 {
    INTERNED.with(|t| {
        let mut t = t.borrow_mut();
        match t.iter().position(|n| n == name) {
            Some(k) => k as u32,
            None => {
                t.push(name.to_string());
                (t.len() - 1) as u32
            }
        }
    })
}

fn name_of(k: u32) -> String {
    INTERNED.with(|t| t.borrow()[k as usize].clone())
}

const NAMES: [&str; 8] = ["i", "j", "k", "l", "p", "q", "r", "s"];

/// A value expression under construction.
#[derive(Clone, Debug, PartialEq)]
pub struct E(pub Expr);

/// A bound index: a cheap copyable handle, usable as often as needed.
#[derive(Clone, Copy, Debug)]
pub struct Ix(u32);

/// An affine index expression over bound indices (`i + 1`, `2 * i - j`).
#[derive(Clone, Debug, PartialEq)]
pub struct Aff(pub Affine);

impl Ix {
    /// The index's name.
    pub fn name(self) -> String {
        name_of(self.0)
    }
    fn aff(self) -> Affine {
        Affine::var(self.name())
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
    let depth = DEPTH.with(|d| d.get());
    let name = name.map(str::to_string).unwrap_or_else(|| {
        if depth < NAMES.len() {
            NAMES[depth].to_string()
        } else {
            format!("i{depth}")
        }
    });
    DEPTH.with(|d| d.set(depth + 1));
    let r = f(Ix(intern(&name)));
    DEPTH.with(|d| d.set(depth));
    (name, r)
}

fn auto_size() -> Size {
    let k = AUTO.with(|a| {
        let k = a.get();
        a.set(k + 1);
        k
    });
    Size::Named(format!("{AUTO_PREFIX}{k}"))
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

/// `let x = value in body(x)`, with a fresh name `t0`, `t1`, ….
pub fn let_(value: E, body: impl FnOnce(E) -> E) -> E {
    let depth = DEPTH.with(|d| d.get());
    let_named(&format!("t{depth}"), value, body)
}
/// `let name = value in body(name)`.
pub fn let_named(name: &str, value: E, body: impl FnOnce(E) -> E) -> E {
    let b = body(E(Expr::var(name)));
    E(Expr::let_(name, value.0, b.0))
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
pub fn func(name: &str, body: impl FnOnce(&mut FnBuilder) -> E) -> Result<Function> {
    DEPTH.with(|d| d.set(0));
    let mut b = FnBuilder::default();
    let e = body(&mut b);
    if !b.errors.is_empty() {
        return Err(Error::Frontend(b.errors.join("; ")));
    }
    let mut f = Function {
        name: name.to_string(),
        params: b.params,
        ret: None,
        body: e.0,
    };
    infer_sizes(&mut f)?;
    let sig = crate::types::check(&f).map_err(Error::types)?;
    f.ret = Some(sig.ret);
    Ok(f)
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
        Expr::Access(b, _) | Expr::Proj(_, b) => root_name(b),
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
        Expr::Bin(_, a, b) | Expr::Pair(a, b) | Expr::Let(_, a, b) => {
            subst_sizes(a, auto, by);
            subst_sizes(b, auto, by);
        }
        Expr::Neg(a) | Expr::Proj(_, a) | Expr::Access(a, _) => subst_sizes(a, auto, by),
        Expr::Call(_, args) => args.iter_mut().for_each(|a| subst_sizes(a, auto, by)),
        Expr::Var(_) | Expr::Num(_) | Expr::Bracket(_) | Expr::Eps(_) => {}
    }
}

fn autos(e: &Expr, out: &mut Vec<(String, String)>) {
    if let Expr::Gen(i, n, _) | Expr::Sum(i, n, _) = e {
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
