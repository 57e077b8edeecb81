//! The IR of the tensor language: types, affine indices, predicates,
//! expressions and functions.
//!
//! This one tree is shared by every stage: the parser produces it, the printer
//! writes it back, the builder and einsum front end construct it, the type
//! checker and interpreter consume it, and the e-graph and JIT translate it.
//! It carries no source positions (the parser returns those beside it, in a
//! [`SpanTree`](crate::syntax::SpanTree)), so structural equality is program
//! equality. Everything is serde-serializable.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// The size of one tensor axis or binder range.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Size {
    /// A size fixed in the program text.
    Lit(usize),
    /// A size name fixed at run time by the shapes of the inputs.
    Named(String),
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Size::Lit(n) => write!(f, "{n}"),
            Size::Named(s) => write!(f, "{s}"),
        }
    }
}

/// A type: a real number, a tensor of some element type, or a pair.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Type {
    /// A real number (`R`).
    Real,
    /// A tensor `[n]T`: `n` elements of type `T` along one axis.
    Tensor(Size, Box<Type>),
    /// A pair `(A, B)`.
    Pair(Box<Type>, Box<Type>),
    /// An integer (`Z`): only the element type of a parameter's tensor,
    /// `[n]Z`, an integer array read inside an index (a gather,
    /// [`Expr::Gather`]). At the call boundary its elements are f64 values
    /// that must be exact integers.
    Int,
}

impl Type {
    /// `[size]elem`.
    pub fn tensor(size: Size, elem: Type) -> Type {
        Type::Tensor(size, Box::new(elem))
    }
    /// `(a, b)`.
    pub fn pair(a: Type, b: Type) -> Type {
        Type::Pair(Box::new(a), Box::new(b))
    }
    /// `[s0, s1, ...]R`.
    pub fn array(sizes: impl IntoIterator<Item = Size>) -> Type {
        let sizes: Vec<Size> = sizes.into_iter().collect();
        sizes
            .into_iter()
            .rev()
            .fold(Type::Real, |t, s| Type::tensor(s, t))
    }
    /// Every size name that occurs in this type, in order of first occurrence.
    pub fn size_names(&self, out: &mut Vec<String>) {
        match self {
            Type::Real | Type::Int => {}
            Type::Tensor(s, t) => {
                if let Size::Named(n) = s {
                    if !out.contains(n) {
                        out.push(n.clone());
                    }
                }
                t.size_names(out)
            }
            Type::Pair(a, b) => {
                a.size_names(out);
                b.size_names(out);
            }
        }
    }
    /// Whether this is an integer array `[n, ...]Z`.
    pub fn is_int_array(&self) -> bool {
        match self {
            Type::Tensor(_, t) => matches!(**t, Type::Int) || t.is_int_array(),
            _ => false,
        }
    }
    /// True when no pair occurs anywhere inside the type.
    pub fn is_pair_free(&self) -> bool {
        match self {
            Type::Real | Type::Int => true,
            Type::Tensor(_, t) => t.is_pair_free(),
            Type::Pair(..) => false,
        }
    }
}

/// Every index variable ranges below this (sizes are at most 2^31, the
/// tensor limit [`crate::interp::value::MAX_ELEMENTS`]).
pub const MAX_INDEX_VALUE: i64 = 1 << 31;
/// The largest magnitude an index expression (or the difference of the two
/// sides of a comparison) may reach for any index values: `Σ|coef|·2^31 +
/// |constant|` must stay at most 2^62, so evaluating it (and subtracting two
/// of them) in i64 can never overflow. Larger ones are refused by the parser
/// and the type checker.
pub const MAX_INDEX_MAGNITUDE: i64 = 1 << 62;

/// An affine index expression `c0 + Σ ck·ik` over index names.
///
/// Kept canonical: terms sorted by name, no zero coefficients, so two
/// expressions are equal exactly when they are the same affine function.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default)]
pub struct Affine {
    /// Coefficient of each index variable (never 0).
    pub terms: BTreeMap<String, i64>,
    /// The constant term.
    pub constant: i64,
}

impl Affine {
    /// The index `name`.
    pub fn var(name: impl Into<String>) -> Affine {
        let mut terms = BTreeMap::new();
        terms.insert(name.into(), 1);
        Affine { terms, constant: 0 }
    }
    /// The constant `c`.
    pub fn constant(c: i64) -> Affine {
        Affine {
            terms: BTreeMap::new(),
            constant: c,
        }
    }
    /// The index name when this is a plain index `i`.
    pub fn as_var(&self) -> Option<&str> {
        if self.constant == 0 && self.terms.len() == 1 {
            let (k, v) = self.terms.iter().next().unwrap();
            if *v == 1 {
                return Some(k);
            }
        }
        None
    }
    /// The constant, when there are no variables.
    pub fn as_const(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.constant)
    }
    /// `self + o`. Saturates instead of wrapping on overflow, so an
    /// overflowing result is far outside [`MAX_INDEX_MAGNITUDE`] and refused
    /// by the type checker; use [`Affine::checked_add`] to detect it.
    pub fn add(&self, o: &Affine) -> Affine {
        let mut r = self.clone();
        for (k, v) in &o.terms {
            let e = r.terms.entry(k.clone()).or_insert(0);
            *e = e.saturating_add(*v);
        }
        r.constant = r.constant.saturating_add(o.constant);
        r.terms.retain(|_, v| *v != 0);
        r
    }
    /// `c · self`, saturating like [`Affine::add`].
    pub fn scale(&self, c: i64) -> Affine {
        if c == 0 {
            return Affine::default();
        }
        Affine {
            terms: self
                .terms
                .iter()
                .map(|(k, v)| (k.clone(), v.saturating_mul(c)))
                .collect(),
            constant: self.constant.saturating_mul(c),
        }
    }
    /// `self - o`, saturating like [`Affine::add`].
    pub fn sub(&self, o: &Affine) -> Affine {
        self.add(&o.scale(-1))
    }
    /// `self + o`, or `None` when a coefficient or the constant overflows.
    pub fn checked_add(&self, o: &Affine) -> Option<Affine> {
        let mut r = self.clone();
        for (k, v) in &o.terms {
            let e = r.terms.entry(k.clone()).or_insert(0);
            *e = e.checked_add(*v)?;
        }
        r.constant = r.constant.checked_add(o.constant)?;
        r.terms.retain(|_, v| *v != 0);
        Some(r)
    }
    /// `c · self`, or `None` on overflow.
    pub fn checked_scale(&self, c: i64) -> Option<Affine> {
        if c == 0 {
            return Some(Affine::default());
        }
        let mut terms = BTreeMap::new();
        for (k, v) in &self.terms {
            terms.insert(k.clone(), v.checked_mul(c)?);
        }
        Some(Affine {
            terms,
            constant: self.constant.checked_mul(c)?,
        })
    }
    /// `self - o`, or `None` on overflow.
    pub fn checked_sub(&self, o: &Affine) -> Option<Affine> {
        self.checked_add(&o.checked_scale(-1)?)
    }
    /// An upper bound on `|self|` over every index value the language allows
    /// (`|i| < MAX_INDEX_VALUE`): `Σ|coef|·2^31 + |constant|`, exact in i128.
    pub fn magnitude_bound(&self) -> u128 {
        self.terms
            .values()
            .map(|c| c.unsigned_abs() as u128 * MAX_INDEX_VALUE as u128)
            .fold(self.constant.unsigned_abs() as u128, |a, b| {
                a.saturating_add(b)
            })
    }
    /// Whether evaluating this index can never overflow: its magnitude bound
    /// is at most [`MAX_INDEX_MAGNITUDE`].
    pub fn in_index_range(&self) -> bool {
        self.magnitude_bound() <= MAX_INDEX_MAGNITUDE as u128
    }
    /// The index variables it uses.
    pub fn vars(&self) -> impl Iterator<Item = &str> {
        self.terms.keys().map(|s| s.as_str())
    }
    /// Evaluate with index values looked up by `env`.
    pub fn eval(&self, env: impl Fn(&str) -> i64) -> i64 {
        self.terms
            .iter()
            .fold(self.constant, |acc, (k, v)| acc + v * env(k))
    }
    /// Substitute index `name` by `by`.
    pub fn subst(&self, name: &str, by: &Affine) -> Affine {
        match self.terms.get(name) {
            None => self.clone(),
            Some(&c) => {
                let mut rest = self.clone();
                rest.terms.remove(name);
                rest.add(&by.scale(c))
            }
        }
    }
}

/// Comparison operators in predicates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum CmpOp {
    /// `=`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl CmpOp {
    /// Every comparison operator, in declaration order.
    pub const ALL: [CmpOp; 6] = [
        CmpOp::Eq,
        CmpOp::Ne,
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
    ];

    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
    /// Whether `a op b`.
    pub fn holds(self, a: i64, b: i64) -> bool {
        match self {
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
        }
    }
}

/// A predicate over index expressions, the inside of an Iverson bracket.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Pred {
    /// A comparison of two affine indices.
    Cmp(CmpOp, Affine, Affine),
    /// `p && q`.
    And(Box<Pred>, Box<Pred>),
    /// `p || q`.
    Or(Box<Pred>, Box<Pred>),
    /// `!p`.
    Not(Box<Pred>),
}

impl Pred {
    /// Its truth with index values from `env`.
    pub fn eval(&self, env: &impl Fn(&str) -> i64) -> bool {
        match self {
            Pred::Cmp(op, a, b) => op.holds(a.eval(env), b.eval(env)),
            Pred::And(a, b) => a.eval(env) && b.eval(env),
            Pred::Or(a, b) => a.eval(env) || b.eval(env),
            Pred::Not(a) => !a.eval(env),
        }
    }
    /// Every affine expression inside the predicate.
    pub fn affines(&self) -> Vec<&Affine> {
        match self {
            Pred::Cmp(_, a, b) => vec![a, b],
            Pred::And(a, b) | Pred::Or(a, b) => {
                let mut v = a.affines();
                v.extend(b.affines());
                v
            }
            Pred::Not(a) => a.affines(),
        }
    }
    /// The predicate with every affine index mapped by `f`.
    pub fn map_affine(&self, f: &impl Fn(&Affine) -> Affine) -> Pred {
        match self {
            Pred::Cmp(op, a, b) => Pred::Cmp(*op, f(a), f(b)),
            Pred::And(a, b) => Pred::And(Box::new(a.map_affine(f)), Box::new(b.map_affine(f))),
            Pred::Or(a, b) => Pred::Or(Box::new(a.map_affine(f)), Box::new(b.map_affine(f))),
            Pred::Not(a) => Pred::Not(Box::new(a.map_affine(f))),
        }
    }
}

/// Binary arithmetic operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
}

impl BinOp {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
        }
    }
    /// `a op b`.
    pub fn apply(self, a: f64, b: f64) -> f64 {
        match self {
            BinOp::Add => a + b,
            BinOp::Sub => a - b,
            BinOp::Mul => a * b,
            BinOp::Div => a / b,
        }
    }
}

/// The scalar functions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Func {
    /// `sqrt`
    Sqrt,
    /// `exp`
    Exp,
    /// `log`
    Log,
    /// `sin`
    Sin,
    /// `cos`
    Cos,
    /// `tanh`
    Tanh,
    /// `abs`
    Abs,
    /// `max` (two arguments)
    Max,
    /// `min` (two arguments)
    Min,
    /// `erf`, the error function `2/√π ∫₀ˣ e^(-t²) dt` (`libm::erf`)
    Erf,
    /// `pow` (two arguments): `x` to the power `y`, C's `pow`
    Pow,
}

impl Func {
    /// Every scalar function.
    pub const ALL: [Func; 11] = [
        Func::Sqrt,
        Func::Exp,
        Func::Log,
        Func::Sin,
        Func::Cos,
        Func::Tanh,
        Func::Abs,
        Func::Max,
        Func::Min,
        Func::Erf,
        Func::Pow,
    ];
    /// The name as written.
    pub fn name(self) -> &'static str {
        match self {
            Func::Sqrt => "sqrt",
            Func::Exp => "exp",
            Func::Log => "log",
            Func::Sin => "sin",
            Func::Cos => "cos",
            Func::Tanh => "tanh",
            Func::Abs => "abs",
            Func::Max => "max",
            Func::Min => "min",
            Func::Erf => "erf",
            Func::Pow => "pow",
        }
    }
    /// The function of a name.
    pub fn from_name(s: &str) -> Option<Func> {
        Func::ALL.iter().copied().find(|f| f.name() == s)
    }
    /// Its number of arguments.
    pub fn arity(self) -> usize {
        match self {
            Func::Max | Func::Min | Func::Pow => 2,
            _ => 1,
        }
    }
    /// Its value at `args`.
    pub fn apply(self, args: &[f64]) -> f64 {
        match self {
            Func::Sqrt => args[0].sqrt(),
            Func::Exp => args[0].exp(),
            Func::Log => args[0].ln(),
            Func::Sin => args[0].sin(),
            Func::Cos => args[0].cos(),
            Func::Tanh => args[0].tanh(),
            Func::Abs => args[0].abs(),
            Func::Max => args[0].max(args[1]),
            Func::Min => args[0].min(args[1]),
            Func::Erf => libm::erf(args[0]),
            Func::Pow => args[0].powf(args[1]),
        }
    }
}

/// The max/min reductions `max(i:n) e`, `min(i:n) e`.
///
/// Unlike the binary [`Func::Max`]/[`Func::Min`] (Rust's `f64::max`, which
/// ignores a NaN), a reduction is IEEE 754-2019 `maximum`/`minimum`: a NaN
/// term makes the result NaN, and -0 is below +0. That makes it exactly
/// associative and commutative, so every evaluation order agrees bit for
/// bit. Over an empty range it is its identity, -inf for max, +inf for min.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum RedOp {
    /// `max(i:n) e`
    Max,
    /// `min(i:n) e`
    Min,
}

impl RedOp {
    /// Both reductions.
    pub const ALL: [RedOp; 2] = [RedOp::Max, RedOp::Min];
    /// The keyword as written.
    pub fn name(self) -> &'static str {
        match self {
            RedOp::Max => "max",
            RedOp::Min => "min",
        }
    }
    /// The reduction written `s`.
    pub fn from_name(s: &str) -> Option<RedOp> {
        RedOp::ALL.iter().copied().find(|r| r.name() == s)
    }
    /// The value of the empty reduction: -inf for max, +inf for min.
    pub fn identity(self) -> f64 {
        match self {
            RedOp::Max => f64::NEG_INFINITY,
            RedOp::Min => f64::INFINITY,
        }
    }
    /// IEEE 754-2019 `maximum(a, b)` / `minimum(a, b)`: NaN if either is
    /// NaN, and -0 < +0.
    pub fn apply(self, a: f64, b: f64) -> f64 {
        if a.is_nan() || b.is_nan() {
            return f64::NAN;
        }
        match self {
            RedOp::Max => {
                if a > b || (a == b && b.is_sign_negative()) {
                    a
                } else {
                    b
                }
            }
            RedOp::Min => {
                if a < b || (a == b && b.is_sign_positive()) {
                    a
                } else {
                    b
                }
            }
        }
    }
}

/// An expression of the tensor language.
///
/// Multi-binder forms are nested: `gen(i:n, j:m) e` is
/// `Gen(i, n, Gen(j, m, e))`, and `e[i,j]` is `Access(Access(e, i), j)`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Expr {
    /// A parameter or let-bound name.
    Var(String),
    /// A number literal. The parser only produces finite non-negative ones.
    Num(f64),
    /// `a op b`.
    Bin(BinOp, Box<Expr>, Box<Expr>),
    /// `-a`.
    Neg(Box<Expr>),
    /// A scalar function applied to its arguments.
    Call(Func, Vec<Expr>),
    /// `(a, b)`.
    Pair(Box<Expr>, Box<Expr>),
    /// `e.0` or `e.1`.
    Proj(u8, Box<Expr>),
    /// `gen(i:n) e`.
    Gen(String, Size, Box<Expr>),
    /// `sum(i:n) e`.
    Sum(String, Size, Box<Expr>),
    /// `e[ι]`, indexing the outermost axis.
    Access(Box<Expr>, Affine),
    /// The Iverson bracket `[p]`.
    Bracket(Pred),
    /// The Levi-Civita symbol over 2 or 3 indices.
    Eps(Vec<Affine>),
    /// `let x = e1 in e2`.
    Let(String, Box<Expr>, Box<Expr>),
    /// `max(i:n) e` or `min(i:n) e`: the IEEE 754-2019 `maximum` or
    /// `minimum` of the terms (NaN propagates, -0 < +0); empty: -inf / +inf.
    Reduce(RedOp, String, Size, Box<Expr>),
    /// An index expression used as a number: `i`, `i + 1`, `n - 1 - i`'s
    /// index part. Its value is the integer the affine expression gives
    /// (computed in i64; exact as an f64 below 2^53). Never a constant:
    /// [`Expr::index_value`] makes a constant a [`Expr::Num`].
    IndexValue(Affine),
    /// A size name used as a number: its run-time value.
    SizeValue(String),
    /// `where(c, a, b)`: `a` where the condition `c` holds, else `b`; only
    /// the chosen side is evaluated, and the result is an ordinary number.
    Where(Box<Cond>, Box<Expr>, Box<Expr>),
    /// `fold(i:n, acc = init) body`: `acc = init; for i in 0..n { acc =
    /// body }`, sequentially; its value is the final `acc`. Fields: the
    /// index `i`, its range `n`, the accumulator's name, `init` (evaluated
    /// outside the loop: neither `i` nor `acc` is bound in it) and `body`
    /// (both bound). The accumulator is a number or a pair (of pairs) of
    /// numbers; it holds ordinary numbers (a strong zero stored in it is a
    /// plain 0).
    Fold(String, Size, String, Box<Expr>, Box<Expr>),
    /// A gather `e[g + c]`: the element of `e`'s outermost axis at the
    /// integer `g + c`, where `g` reads an integer array parameter at affine
    /// indices (`tok[i]`, `tok[i, k]`: [`Expr::Var`] under
    /// [`Expr::Access`]es) and `c` is a constant. `e` is an access chain
    /// from a parameter. Every element of the integer array, plus `c`, must
    /// lie on the axis: that is checked when a call starts
    /// ([`crate::interp::gather`]); a read of `g` off its own axes is 0, so
    /// the index is then `c` (off the axis: a zero-padding read).
    Gather(Box<Expr>, Box<Expr>, i64),
}

/// The condition of a `where`: comparisons of numbers (IEEE: every
/// comparison with a NaN is false except `!=`) combined by `&&`, `||`, `!`.
/// Booleans exist only here.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Cond {
    /// `a op b` of two numbers.
    Cmp(CmpOp, Box<Expr>, Box<Expr>),
    /// `c && d`.
    And(Box<Cond>, Box<Cond>),
    /// `c || d`.
    Or(Box<Cond>, Box<Cond>),
    /// `!c`.
    Not(Box<Cond>),
}

impl CmpOp {
    /// Whether `a op b` for two numbers, as IEEE-754 compares them (false
    /// when either is NaN, except for `!=`).
    pub fn holds_f64(self, a: f64, b: f64) -> bool {
        match self {
            CmpOp::Eq => a == b,
            CmpOp::Ne => a != b,
            CmpOp::Lt => a < b,
            CmpOp::Le => a <= b,
            CmpOp::Gt => a > b,
            CmpOp::Ge => a >= b,
        }
    }
}

impl Cond {
    /// The numbers it compares, left to right (the order of
    /// [`Expr::children`] for a `where`).
    pub fn exprs(&self) -> Vec<&Expr> {
        let mut out = Vec::new();
        let mut todo = vec![self];
        while let Some(c) = todo.pop() {
            match c {
                Cond::Cmp(_, a, b) => {
                    out.push(&**a);
                    out.push(&**b);
                }
                Cond::And(a, b) | Cond::Or(a, b) => {
                    todo.push(b);
                    todo.push(a);
                }
                Cond::Not(a) => todo.push(a),
            }
        }
        out
    }
    /// The condition with every compared number mapped by `f` (left to
    /// right).
    pub fn map_exprs(&self, f: &mut impl FnMut(&Expr) -> Expr) -> Cond {
        match self {
            Cond::Cmp(op, a, b) => {
                let a = f(a);
                let b = f(b);
                Cond::Cmp(*op, Box::new(a), Box::new(b))
            }
            Cond::And(a, b) => {
                let a = a.map_exprs(f);
                Cond::And(Box::new(a), Box::new(b.map_exprs(f)))
            }
            Cond::Or(a, b) => {
                let a = a.map_exprs(f);
                Cond::Or(Box::new(a), Box::new(b.map_exprs(f)))
            }
            Cond::Not(a) => Cond::Not(Box::new(a.map_exprs(f))),
        }
    }
    /// Like [`Cond::map_exprs`] with a fallible `f`.
    pub fn try_map_exprs<E>(
        &self,
        f: &mut impl FnMut(&Expr) -> Result<Expr, E>,
    ) -> Result<Cond, E> {
        Ok(match self {
            Cond::Cmp(op, a, b) => {
                let a = f(a)?;
                let b = f(b)?;
                Cond::Cmp(*op, Box::new(a), Box::new(b))
            }
            Cond::And(a, b) => {
                let a = a.try_map_exprs(f)?;
                Cond::And(Box::new(a), Box::new(b.try_map_exprs(f)?))
            }
            Cond::Or(a, b) => {
                let a = a.try_map_exprs(f)?;
                Cond::Or(Box::new(a), Box::new(b.try_map_exprs(f)?))
            }
            Cond::Not(a) => Cond::Not(Box::new(a.try_map_exprs(f)?)),
        })
    }
    /// The compared numbers, mutable, left to right.
    pub fn exprs_mut(&mut self) -> Vec<&mut Expr> {
        match self {
            Cond::Cmp(_, a, b) => vec![&mut **a, &mut **b],
            Cond::And(a, b) | Cond::Or(a, b) => {
                let mut v = a.exprs_mut();
                v.extend(b.exprs_mut());
                v
            }
            Cond::Not(a) => a.exprs_mut(),
        }
    }
    /// Call `f` on every compared number, left to right.
    pub fn for_each_expr_mut(&mut self, f: &mut impl FnMut(&mut Expr)) {
        match self {
            Cond::Cmp(_, a, b) => {
                f(a);
                f(b);
            }
            Cond::And(a, b) | Cond::Or(a, b) => {
                a.for_each_expr_mut(f);
                b.for_each_expr_mut(f);
            }
            Cond::Not(a) => a.for_each_expr_mut(f),
        }
    }
    /// Its truth, given the values of the numbers it compares (in the
    /// order of [`Cond::exprs`]).
    pub fn eval_with(&self, vals: &mut impl Iterator<Item = f64>) -> bool {
        match self {
            Cond::Cmp(op, _, _) => {
                let a = vals.next().unwrap_or(f64::NAN);
                let b = vals.next().unwrap_or(f64::NAN);
                op.holds_f64(a, b)
            }
            Cond::And(a, b) => {
                let x = a.eval_with(vals);
                let y = b.eval_with(vals);
                x && y
            }
            Cond::Or(a, b) => {
                let x = a.eval_with(vals);
                let y = b.eval_with(vals);
                x || y
            }
            Cond::Not(a) => !a.eval_with(vals),
        }
    }
}

impl Expr {
    /// A name.
    pub fn var(s: impl Into<String>) -> Expr {
        Expr::Var(s.into())
    }
    /// `a op b`.
    pub fn bin(op: BinOp, a: Expr, b: Expr) -> Expr {
        Expr::Bin(op, Box::new(a), Box::new(b))
    }
    /// `gen(i:n) body`.
    pub fn gen(i: impl Into<String>, n: Size, body: Expr) -> Expr {
        Expr::Gen(i.into(), n, Box::new(body))
    }
    /// `sum(i:n) body`.
    pub fn sum(i: impl Into<String>, n: Size, body: Expr) -> Expr {
        Expr::Sum(i.into(), n, Box::new(body))
    }
    /// `max(i:n) body` or `min(i:n) body`.
    pub fn reduce(op: RedOp, i: impl Into<String>, n: Size, body: Expr) -> Expr {
        Expr::Reduce(op, i.into(), n, Box::new(body))
    }
    /// The same kind of binder as `self` (a `gen`, `sum` or max/min
    /// reduction) over index `i` of range `n`, with body `body`.
    pub fn rebind(&self, i: String, n: Size, body: Expr) -> Expr {
        match self {
            Expr::Gen(..) => Expr::gen(i, n, body),
            Expr::Reduce(op, ..) => Expr::reduce(*op, i, n, body),
            Expr::Sum(..) => Expr::sum(i, n, body),
            _ => unreachable!("rebind is called on binders only"),
        }
    }
    /// `e[idx]`.
    pub fn access(e: Expr, idx: Affine) -> Expr {
        Expr::Access(Box::new(e), idx)
    }
    /// `e.k`.
    pub fn proj(k: u8, e: Expr) -> Expr {
        Expr::Proj(k, Box::new(e))
    }
    /// `(a, b)`.
    pub fn pair(a: Expr, b: Expr) -> Expr {
        Expr::Pair(Box::new(a), Box::new(b))
    }
    /// The number an index expression gives: [`Expr::IndexValue`], or a
    /// number literal when it is a constant (the negation of one when it is
    /// negative, as the parser reads `-1`).
    pub fn index_value(a: Affine) -> Expr {
        match a.as_const() {
            Some(c) if c < 0 => Expr::Neg(Box::new(Expr::Num(c.unsigned_abs() as f64))),
            Some(c) => Expr::Num(c as f64),
            None => Expr::IndexValue(a),
        }
    }
    /// `where(c, a, b)`.
    pub fn where_(c: Cond, a: Expr, b: Expr) -> Expr {
        Expr::Where(Box::new(c), Box::new(a), Box::new(b))
    }
    /// `fold(i:n, acc = init) body`.
    pub fn fold(
        i: impl Into<String>,
        n: Size,
        acc: impl Into<String>,
        init: Expr,
        body: Expr,
    ) -> Expr {
        Expr::Fold(i.into(), n, acc.into(), Box::new(init), Box::new(body))
    }
    /// `e[g + c]`, a gather (see [`Expr::Gather`]).
    pub fn gather(e: Expr, g: Expr, c: i64) -> Expr {
        Expr::Gather(Box::new(e), Box::new(g), c)
    }
    /// `let x = e1 in e2`.
    pub fn let_(x: impl Into<String>, e1: Expr, e2: Expr) -> Expr {
        Expr::Let(x.into(), Box::new(e1), Box::new(e2))
    }
    /// The direct sub-expressions, in the order the span tree stores them.
    /// Does the value name `x` occur free in this expression?
    pub fn uses_var(&self, x: &str) -> bool {
        crate::stack::deep(|| self.uses_var_inner(x))
    }
    fn uses_var_inner(&self, x: &str) -> bool {
        match self {
            Expr::Var(y) => y == x,
            Expr::Let(y, a, b) => a.uses_var(x) || (y != x && b.uses_var(x)),
            Expr::Fold(_, _, y, a, b) => a.uses_var(x) || (y != x && b.uses_var(x)),
            e => e.children().into_iter().any(|c| c.uses_var(x)),
        }
    }
    /// The direct subexpressions, in order.
    pub fn children(&self) -> Vec<&Expr> {
        match self {
            Expr::Var(_) | Expr::Num(_) | Expr::Bracket(_) | Expr::Eps(_) => vec![],
            Expr::Bin(_, a, b) | Expr::Pair(a, b) | Expr::Let(_, a, b) => vec![a, b],
            Expr::Neg(a) | Expr::Proj(_, a) | Expr::Gen(_, _, a) | Expr::Sum(_, _, a) => {
                vec![a]
            }
            Expr::Reduce(_, _, _, a) => vec![a],
            Expr::Access(a, _) => vec![a],
            Expr::Call(_, args) => args.iter().collect(),
            Expr::IndexValue(_) | Expr::SizeValue(_) => vec![],
            Expr::Where(c, a, b) => {
                let mut v = c.exprs();
                v.push(a);
                v.push(b);
                v
            }
            Expr::Fold(_, _, _, a, b) => vec![a, b],
            Expr::Gather(a, g, _) => vec![a, g],
        }
    }
    /// Depth of the tree (a leaf has depth 1), counted without recursion.
    pub fn depth(&self) -> usize {
        let mut max = 0;
        let mut todo = vec![(self, 1)];
        while let Some((e, d)) = todo.pop() {
            max = max.max(d);
            todo.extend(e.children().into_iter().map(|c| (c, d + 1)));
        }
        max
    }
    /// Number of nodes in the tree.
    pub fn size(&self) -> usize {
        let mut n = 0;
        let mut todo = vec![self];
        while let Some(e) = todo.pop() {
            n += 1;
            todo.extend(e.children());
        }
        n
    }
}

/// A function parameter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Param {
    /// The parameter's name.
    pub name: String,
    /// Its type.
    pub ty: Type,
}

/// `fn name(params) -> ret = body`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Function {
    /// The function's name.
    pub name: String,
    /// Its parameters, in order.
    pub params: Vec<Param>,
    /// The declared result type; `None` when left out (inferred).
    pub ret: Option<Type>,
    /// Its body.
    pub body: Expr,
}

/// Dismantle `e` iteratively, so that the tree of a long flat chain (as
/// deep as the chain is long) drops without deep recursion.
pub fn drop_iteratively(e: Expr) {
    let mut e = e;
    fn take(e: &mut Expr, todo: &mut Vec<Expr>) {
        match e {
            Expr::Bin(_, a, b) | Expr::Pair(a, b) | Expr::Let(_, a, b) => {
                todo.push(std::mem::replace(&mut **a, Expr::Num(0.0)));
                todo.push(std::mem::replace(&mut **b, Expr::Num(0.0)));
            }
            Expr::Neg(a)
            | Expr::Proj(_, a)
            | Expr::Gen(_, _, a)
            | Expr::Sum(_, _, a)
            | Expr::Access(a, _) => todo.push(std::mem::replace(&mut **a, Expr::Num(0.0))),
            Expr::Reduce(_, _, _, a) => todo.push(std::mem::replace(&mut **a, Expr::Num(0.0))),
            Expr::Call(_, args) => todo.append(args),
            Expr::Var(_) | Expr::Num(_) | Expr::Bracket(_) | Expr::Eps(_) => {}
            Expr::IndexValue(_) | Expr::SizeValue(_) => {}
            Expr::Where(c, a, b) => {
                let c = std::mem::replace(
                    &mut **c,
                    Cond::Cmp(
                        CmpOp::Eq,
                        Box::new(Expr::Num(0.0)),
                        Box::new(Expr::Num(0.0)),
                    ),
                );
                todo.extend(cond_into_exprs(c));
                todo.push(std::mem::replace(&mut **a, Expr::Num(0.0)));
                todo.push(std::mem::replace(&mut **b, Expr::Num(0.0)));
            }
            Expr::Fold(_, _, _, a, b) => {
                todo.push(std::mem::replace(&mut **a, Expr::Num(0.0)));
                todo.push(std::mem::replace(&mut **b, Expr::Num(0.0)));
            }
            Expr::Gather(a, g, _) => {
                todo.push(std::mem::replace(&mut **a, Expr::Num(0.0)));
                todo.push(std::mem::replace(&mut **g, Expr::Num(0.0)));
            }
        }
    }
    let mut todo = Vec::new();
    take(&mut e, &mut todo);
    while let Some(mut e) = todo.pop() {
        take(&mut e, &mut todo);
    }
}

/// The compared numbers of a condition, taken out of it without deep
/// recursion (for [`drop_iteratively`]).
fn cond_into_exprs(c: Cond) -> Vec<Expr> {
    let mut out = Vec::new();
    let mut todo = vec![c];
    while let Some(c) = todo.pop() {
        match c {
            Cond::Cmp(_, a, b) => {
                out.push(*a);
                out.push(*b);
            }
            Cond::And(a, b) | Cond::Or(a, b) => {
                todo.push(*a);
                todo.push(*b);
            }
            Cond::Not(a) => todo.push(*a),
        }
    }
    out
}

impl Function {
    /// Size names bound by the parameters, in order of first occurrence.
    pub fn size_names(&self) -> Vec<String> {
        let mut v = Vec::new();
        for p in &self.params {
            p.ty.size_names(&mut v);
        }
        v
    }
}

/// A file: one or more functions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct Program {
    /// The functions, in source order.
    pub functions: Vec<Function>,
}

impl Program {
    /// The function called `name`.
    pub fn get(&self, name: &str) -> Option<&Function> {
        self.functions.iter().find(|f| f.name == name)
    }
}
