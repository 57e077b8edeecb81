//! Testing support, public so that rule authors and compiler testers can use
//! it: random *well-typed* functions ([`gen_function`], [`arb_function`]) with
//! knobs for the features that appear ([`GenConfig`]), and random inputs that
//! fit a function's signature ([`random_inputs`]) in any memory layout
//! ([`Layout`]).
//!
//! Generated programs are well-typed by construction and keep the scalar
//! functions in their domains (`sqrt(abs(e))`, `log(1 + abs(e))`,
//! `exp(sin(e))`, division by `1 + abs(e)`), so with finite inputs every value
//! is finite and engines can be compared with a relative tolerance.

pub mod difftest;
pub use difftest::fuzz_pipeline;

use crate::interp::value::{Sizes, Value};
use crate::syntax::ast::*;
use ndarray::{ArrayD, IxDyn, ShapeBuilder, Slice};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// How an input array is laid out in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Row-major, contiguous.
    C,
    /// Column-major, contiguous.
    Fortran,
    /// Every other element of a larger array along every axis.
    Sliced,
    /// Every axis reversed (negative strides).
    Reversed,
}

impl Layout {
    /// Every layout.
    pub const ALL: [Layout; 4] = [Layout::C, Layout::Fortran, Layout::Sliced, Layout::Reversed];
}

/// Lay out `a` (any layout) as `layout`, keeping its logical contents.
pub fn relayout(a: &ArrayD<f64>, layout: Layout) -> ArrayD<f64> {
    match layout {
        Layout::C => a.as_standard_layout().to_owned(),
        Layout::Fortran => {
            let mut f = ArrayD::zeros(IxDyn(a.shape()).f());
            f.assign(a);
            f
        }
        Layout::Sliced => {
            let big: Vec<usize> = a.shape().iter().map(|&d| 2 * d.max(1)).collect();
            let mut b = ArrayD::from_elem(IxDyn(&big), f64::NAN);
            for ax in 0..a.ndim() {
                b.slice_axis_inplace(
                    ndarray::Axis(ax),
                    Slice::new(0, Some(2 * a.shape()[ax] as isize), 2),
                );
            }
            b.assign(a);
            b
        }
        Layout::Reversed => {
            let mut r = a.to_owned();
            for ax in 0..r.ndim() {
                r.invert_axis(ndarray::Axis(ax));
            }
            r.assign(a);
            r
        }
    }
}

/// Lay out every array inside a value.
pub fn relayout_value(v: &Value, layout: Layout) -> Value {
    match v {
        Value::Real(x) => Value::Real(*x),
        Value::Array(a) => Value::Array(relayout(a, layout)),
        Value::Pair(a, b) => Value::pair(relayout_value(a, layout), relayout_value(b, layout)),
    }
}

/// A value of `like`'s shape with every array zero and laid out as
/// `layout`: an output buffer a kernel must write in full.
pub fn zeros_like(like: &Value, layout: Layout) -> Value {
    match like {
        Value::Real(_) => Value::Real(0.0),
        Value::Array(a) => Value::Array(relayout(&ArrayD::zeros(IxDyn(a.shape())), layout)),
        Value::Pair(a, b) => Value::pair(zeros_like(a, layout), zeros_like(b, layout)),
    }
}

/// Random arguments for a function (in `crate::interp::random`, which the
/// rule check on load uses without this module).
pub use crate::interp::random::{random_inputs, random_inputs_of, ValueClass};

/// Which features random programs may use, and how big they get.
#[derive(Clone, Debug)]
pub struct GenConfig {
    /// Maximum expression depth.
    pub max_depth: u32,
    /// Pairs, projections and pair-typed subterms.
    pub pairs: bool,
    /// `let` bindings.
    pub lets: bool,
    /// Iverson brackets (every predicate form).
    pub brackets: bool,
    /// The Levi-Civita symbol `eps`.
    pub eps: bool,
    /// Scalar functions (`sqrt`, `exp`, …, kept in their domains).
    pub funcs: bool,
    /// Affine indices other than plain ones (they may leave the range).
    pub affine: bool,
    /// The literal sizes that binders and axes draw from.
    pub literal_sizes: Vec<usize>,
    /// Named sizes (`n`, `m`, bound by parameters) may appear.
    pub named_sizes: bool,
    /// The chance that a program uses named sizes at all, and then that
    /// any one binder or axis takes a named size rather than a literal.
    pub named_weight: f64,
    /// Pair-typed parameters (tensors of pairs as struct of arrays).
    pub pair_params: bool,
    /// Pair-typed (tuple) results.
    pub tuple_results: bool,
    /// Records: tensors of pairs (`[n](R,R)`, `[n]((R,R),R)`,
    /// `[n,m](R,R)`, `[n]([m]R,R)`) as results, as `let` values and read
    /// back inline (`(gen(i:n) (a, b))[ι].0`); the JIT carries them as
    /// struct of arrays.
    pub records: bool,
    /// The chance that a binder or axis drawing a literal size gets a
    /// one-element range (1) instead, or, with `zero_sizes`, an empty one
    /// (0 or 1, half each): loops that never run, tensors with no elements.
    pub small_sizes: f64,
    /// Sizes 0: literal (see `small_sizes`) and named sizes bound to 0 by
    /// the inputs with chance `zero_named` ([`random_sizes_with_zero`],
    /// [`difftest::inputs_with_zero`]); on by default, `einsat difftest
    /// --no-zero-sizes` turns it off.
    pub zero_sizes: bool,
    /// The chance that a named size is bound to 0 by the inputs (with `zero_sizes`).
    pub zero_named: f64,
    /// The chance that a `let` is a chain `let v1 = … in let v2 = f(v1, v1)
    /// in …` whose every value uses the previous one twice (inlining all
    /// of it is exponential), and the chain's longest length.
    pub let_chain: f64,
    /// The longest such chain.
    pub max_let_chain: usize,
    /// Max/min reductions `max(i:n) e`, `min(i:n) e`.
    pub reductions: bool,
    /// Indices and sizes as numbers (`i`, `i + 1`, `n`) and
    /// `where(c, a, b)`.
    pub values: bool,
    /// Indexed folds `fold(i:n, acc = init) body` with a number or a pair
    /// (of pairs) of numbers as the accumulator.
    pub folds: bool,
    /// Gathers `E[tok[i] + c, j]` from an integer array parameter `tok`
    /// (off in [`GenConfig::default`], so the programs of the other
    /// property tests stay as they were; on with the feature `gathers`
    /// or `all`).
    pub gathers: bool,
}

impl Default for GenConfig {
    fn default() -> Self {
        GenConfig {
            max_depth: 5,
            pairs: true,
            lets: true,
            brackets: true,
            eps: true,
            funcs: true,
            affine: true,
            literal_sizes: vec![2, 3],
            named_sizes: true,
            named_weight: 0.6,
            pair_params: true,
            tuple_results: true,
            records: true,
            small_sizes: 0.08,
            zero_sizes: true,
            zero_named: 0.1,
            let_chain: 0.15,
            max_let_chain: 14,
            reductions: true,
            values: true,
            folds: true,
            gathers: false,
        }
    }
}

/// The feature names [`GenConfig::with_features`] accepts.
pub const FEATURES: [&str; 14] = [
    "pairs",
    "lets",
    "brackets",
    "eps",
    "funcs",
    "affine",
    "named",
    "pair-params",
    "tuples",
    "records",
    "reductions",
    "values",
    "folds",
    "gathers",
];

impl GenConfig {
    fn feature(&mut self, name: &str) -> Option<&mut bool> {
        Some(match name {
            "pairs" => &mut self.pairs,
            "lets" => &mut self.lets,
            "brackets" => &mut self.brackets,
            "eps" => &mut self.eps,
            "funcs" => &mut self.funcs,
            "affine" => &mut self.affine,
            "named" => &mut self.named_sizes,
            "pair-params" => &mut self.pair_params,
            "tuples" => &mut self.tuple_results,
            "records" => &mut self.records,
            "reductions" => &mut self.reductions,
            "values" => &mut self.values,
            "folds" => &mut self.folds,
            "gathers" => &mut self.gathers,
            _ => return None,
        })
    }

    /// This configuration with the features of a comma-separated list:
    /// `all`, `none`, a feature name (turned on) or `-name` (turned off),
    /// applied left to right, e.g. `none,lets,affine` or `all,-eps`. A list
    /// that starts with a plain name starts from `none`.
    pub fn with_features(mut self, spec: &str) -> std::result::Result<GenConfig, String> {
        let items: Vec<&str> = spec
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect();
        if items
            .first()
            .is_some_and(|s| *s != "all" && *s != "none" && !s.starts_with('-'))
        {
            for f in FEATURES {
                *self.feature(f).expect("listed") = false;
            }
        }
        for item in items {
            match item {
                "all" | "none" => {
                    for f in FEATURES {
                        *self.feature(f).expect("listed") = item == "all";
                    }
                }
                _ => {
                    let (name, on) = match item.strip_prefix('-') {
                        Some(n) => (n, false),
                        None => (item, true),
                    };
                    match self.feature(name) {
                        Some(b) => *b = on,
                        None => {
                            return Err(format!(
                                "unknown feature `{}` (known: all, none, {})",
                                crate::diag::quote(name),
                                FEATURES.join(", ")
                            ))
                        }
                    }
                }
            }
        }
        Ok(self)
    }
}

struct Gen<'a, R: Rng> {
    rng: R,
    cfg: &'a GenConfig,
    sizes: Vec<Size>,
    values: Vec<(String, Type)>,
    indices: Vec<(String, Size)>,
    fresh: usize,
    /// The parameters (gathers index them) and the integer arrays.
    params: Vec<(String, Type)>,
    ints: Vec<(String, Type)>,
}

const INDEX_NAMES: [&str; 6] = ["i", "j", "k", "l", "p", "q"];

impl<R: Rng> Gen<'_, R> {
    fn chance(&mut self, p: f64) -> bool {
        self.rng.gen_bool(p)
    }
    fn size(&mut self) -> Size {
        let named: Vec<Size> = self
            .sizes
            .iter()
            .filter(|s| matches!(s, Size::Named(_)))
            .cloned()
            .collect();
        let lits: Vec<Size> = self
            .sizes
            .iter()
            .filter(|s| matches!(s, Size::Lit(_)))
            .cloned()
            .collect();
        let pool = if !named.is_empty()
            && (lits.is_empty() || self.chance(self.cfg.named_weight.clamp(0.0, 1.0)))
        {
            named
        } else {
            if self.cfg.small_sizes > 0.0 && self.chance(self.cfg.small_sizes.clamp(0.0, 1.0)) {
                let lo = usize::from(!self.cfg.zero_sizes);
                return Size::Lit(self.rng.gen_range(lo..=1));
            }
            lits
        };
        if pool.is_empty() {
            return Size::Lit(2);
        }
        pool[self.rng.gen_range(0..pool.len())].clone()
    }
    fn index_name(&mut self) -> String {
        // mostly fresh names, sometimes shadowing one in scope
        if !self.indices.is_empty() && self.chance(0.15) {
            let k = self.rng.gen_range(0..self.indices.len());
            return self.indices[k].0.clone();
        }
        let name = INDEX_NAMES[self.indices.len() % INDEX_NAMES.len()];
        if self.indices.iter().any(|(n, _)| n == name) {
            self.fresh += 1;
            format!("{name}{}", self.fresh)
        } else {
            name.to_string()
        }
    }
    fn value_name(&mut self) -> String {
        self.fresh += 1;
        format!("t{}", self.fresh)
    }
    fn visible_indices(&self) -> Vec<(String, Size)> {
        // innermost binding of each name only
        let mut out: Vec<(String, Size)> = Vec::new();
        for (n, s) in self.indices.iter().rev() {
            if !out.iter().any(|(m, _)| m == n) {
                out.push((n.clone(), s.clone()));
            }
        }
        out
    }
    fn visible_values(&self) -> Vec<(String, Type)> {
        let mut out: Vec<(String, Type)> = Vec::new();
        for (n, t) in self.values.iter().rev() {
            if !out.iter().any(|(m, _)| m == n) {
                out.push((n.clone(), t.clone()));
            }
        }
        out
    }
    fn ty(&mut self, depth: u32, allow_pairs: bool) -> Type {
        let r = self.rng.gen_range(0..10);
        match r {
            0..=3 => Type::Real,
            4..=6 => Type::tensor(self.size(), Type::Real),
            7 if depth > 0 => {
                let s = self.size();
                let e = self.ty(depth - 1, allow_pairs);
                Type::tensor(s, e)
            }
            8 if allow_pairs && depth > 0 => {
                let a = self.ty(depth - 1, allow_pairs);
                let b = self.ty(depth - 1, allow_pairs);
                Type::pair(a, b)
            }
            _ => Type::array([self.size(), self.size()]),
        }
    }
    /// A record type: a tensor (rank 1 or 2) of pairs, possibly nested,
    /// possibly with a tensor inside a component.
    fn record_ty(&mut self) -> Type {
        let n = self.size();
        let el = match self.rng.gen_range(0..5) {
            0 | 1 => Type::pair(Type::Real, Type::Real),
            2 => Type::pair(Type::pair(Type::Real, Type::Real), Type::Real),
            3 => {
                let m = self.size();
                return Type::tensor(n, Type::tensor(m, Type::pair(Type::Real, Type::Real)));
            }
            _ => {
                let m = self.size();
                Type::pair(Type::tensor(m, Type::Real), Type::Real)
            }
        };
        Type::tensor(n, el)
    }
    /// An index expression for an axis of size `n`.
    fn affine_for(&mut self, n: &Size) -> Affine {
        let idx = self.visible_indices();
        let plain: Vec<&(String, Size)> = idx.iter().filter(|(_, s)| s == n).collect();
        if !plain.is_empty() && (!self.cfg.affine || self.chance(0.7)) {
            let k = self.rng.gen_range(0..plain.len());
            return Affine::var(plain[k].0.clone());
        }
        if !self.cfg.affine || idx.is_empty() {
            let hi = match n {
                Size::Lit(k) => (*k as i64).max(1),
                Size::Named(_) => 2,
            };
            let c = if self.cfg.affine {
                self.rng.gen_range(0..=hi)
            } else {
                0
            };
            return Affine::constant(c);
        }
        let (i, _) = idx[self.rng.gen_range(0..idx.len())].clone();
        let mut a = Affine::var(i);
        match self.rng.gen_range(0..5) {
            0 => a = a.add(&Affine::constant(1)),
            1 => a = a.add(&Affine::constant(-1)),
            2 => a = a.scale(2),
            3 if idx.len() > 1 => {
                let (j, _) = idx[self.rng.gen_range(0..idx.len())].clone();
                a = a.sub(&Affine::var(j)).add(&Affine::constant(1));
            }
            _ => a = a.add(&Affine::constant(self.rng.gen_range(-2..3))),
        }
        if a.as_var().is_some() {
            a = a.add(&Affine::constant(1));
        }
        a
    }
    fn pred(&mut self, depth: u32) -> Pred {
        let idx = self.visible_indices();
        let pick = |g: &mut Self| -> Affine {
            if idx.is_empty() || g.chance(0.2) {
                Affine::constant(g.rng.gen_range(0..3))
            } else {
                let (i, _) = idx[g.rng.gen_range(0..idx.len())].clone();
                let a = Affine::var(i);
                if g.cfg.affine && g.chance(0.3) {
                    a.add(&Affine::constant(g.rng.gen_range(-1..2)))
                } else {
                    a
                }
            }
        };
        if depth > 0 && self.chance(0.3) {
            let a = self.pred(depth - 1);
            return match self.rng.gen_range(0..3) {
                0 => Pred::Not(Box::new(a)),
                1 => Pred::And(Box::new(a), Box::new(self.pred(depth - 1))),
                _ => Pred::Or(Box::new(a), Box::new(self.pred(depth - 1))),
            };
        }
        let op = CmpOp::ALL[self.rng.gen_range(0..CmpOp::ALL.len())];
        let a = pick(self);
        let b = pick(self);
        Pred::Cmp(op, a, b)
    }
    /// Read a value of type `want` out of a name in scope, if some name holds one.
    fn read(&mut self, want: &Type) -> Option<Expr> {
        let vals = self.visible_values();
        let mut cands = Vec::new();
        for (n, t) in &vals {
            if let Some(e) = self.path_to(Expr::var(n.clone()), t, want, 4) {
                cands.push(e);
            }
        }
        if cands.is_empty() {
            None
        } else {
            let k = self.rng.gen_range(0..cands.len());
            Some(cands.swap_remove(k))
        }
    }
    fn path_to(&mut self, e: Expr, t: &Type, want: &Type, fuel: u32) -> Option<Expr> {
        if t == want {
            return Some(e);
        }
        if fuel == 0 {
            return None;
        }
        match t {
            Type::Real | Type::Int => None,
            Type::Tensor(n, el) => {
                let idx = self.affine_for(n);
                self.path_to(Expr::access(e, idx), el, want, fuel - 1)
            }
            Type::Pair(a, b) => {
                let first = self.chance(0.5);
                let (k, tk, ok, tok) = if first { (0, a, 1, b) } else { (1, b, 0, a) };
                if let Some(r) = self.path_to(Expr::proj(k, e.clone()), tk, want, fuel - 1) {
                    return Some(r);
                }
                self.path_to(Expr::proj(ok, e), tok, want, fuel - 1)
            }
        }
    }
    fn num(&mut self) -> Expr {
        let choices = [0.0, 1.0, 2.0, 0.5, 3.0, 1.5];
        Expr::Num(choices[self.rng.gen_range(0..choices.len())])
    }
    fn bind_index<T>(&mut self, n: &Size, f: impl FnOnce(&mut Self, String) -> T) -> (String, T) {
        let i = self.index_name();
        self.indices.push((i.clone(), n.clone()));
        let r = f(self, i.clone());
        self.indices.pop();
        (i, r)
    }
    fn expr(&mut self, want: &Type, depth: u32) -> Expr {
        if depth == 0 || self.chance(0.12) {
            if let Some(e) = self.read(want) {
                return e;
            }
        }
        match want {
            Type::Real | Type::Int => self.real(depth),
            Type::Tensor(n, el) => {
                if self.cfg.lets && depth > 1 && self.chance(0.1) {
                    return self.let_(want, depth);
                }
                let el = (**el).clone();
                let (i, body) = self.bind_index(n, |g, _| g.expr(&el, depth.saturating_sub(1)));
                Expr::gen(i, n.clone(), body)
            }
            Type::Pair(a, b) => {
                if self.cfg.lets && depth > 1 && self.chance(0.1) {
                    return self.let_(want, depth);
                }
                let (a, b) = ((**a).clone(), (**b).clone());
                let ea = self.expr(&a, depth.saturating_sub(1));
                let eb = self.expr(&b, depth.saturating_sub(1));
                Expr::pair(ea, eb)
            }
        }
    }
    fn let_(&mut self, want: &Type, depth: u32) -> Expr {
        if self.cfg.let_chain > 0.0
            && self.cfg.max_let_chain >= 2
            && self.chance(self.cfg.let_chain.clamp(0.0, 1.0))
        {
            return self.let_chain(want, depth);
        }
        let t = if self.cfg.records && self.chance(0.25) {
            self.record_ty()
        } else {
            self.ty(1, self.cfg.pairs)
        };
        let e1 = self.expr(&t, depth - 1);
        let x = self.value_name();
        self.values.push((x.clone(), t));
        let e2 = self.expr(want, depth - 1);
        self.values.pop();
        Expr::let_(x, e1, e2)
    }
    /// `let v0 = 2 tanh(e) in let v1 = step(v0) in … in body`, where each
    /// step reads the previous value twice and keeps values in [-2, 2]
    /// (`v*v/4 + v/2` elementwise, with a shifted read for tensors). The
    /// chain starts from `2 tanh(e)` (elementwise, through a binding of
    /// `e` for tensors), not from `e`: from a value above 2 the steps grow
    /// doubly exponentially, and a `cos` of the result then differs
    /// entirely between two correct orders of the same additions.
    fn let_chain(&mut self, want: &Type, depth: u32) -> Expr {
        let t = if self.chance(0.5) {
            Type::Real
        } else {
            Type::tensor(self.size(), Type::Real)
        };
        let len = self.rng.gen_range(2..=self.cfg.max_let_chain);
        let mut binds: Vec<(String, Expr)> = Vec::new();
        let squash =
            |e: Expr| Expr::bin(BinOp::Mul, Expr::Num(2.0), Expr::Call(Func::Tanh, vec![e]));
        let e = self.expr(&t, depth - 1);
        let e0 = match &t {
            Type::Tensor(n, _) => {
                let n = n.clone();
                let raw = self.value_name();
                self.values.push((raw.clone(), t.clone()));
                binds.push((raw.clone(), e));
                let (i, body) = self.bind_index(&n, |_, i| {
                    squash(Expr::access(Expr::var(raw), Affine::var(i)))
                });
                Expr::gen(i, n, body)
            }
            _ => squash(e),
        };
        let x0 = self.value_name();
        self.values.push((x0.clone(), t.clone()));
        binds.push((x0.clone(), e0));
        let mut prev = x0;
        for _ in 1..len {
            let v = Expr::var(prev.clone());
            let step = |a: Expr, b: Expr, c: Expr| {
                Expr::bin(
                    BinOp::Add,
                    Expr::bin(BinOp::Mul, Expr::bin(BinOp::Mul, a, b), Expr::Num(0.25)),
                    Expr::bin(BinOp::Mul, c, Expr::Num(0.5)),
                )
            };
            let value = match &t {
                Type::Tensor(n, _) => {
                    let n = n.clone();
                    let (i, body) = self.bind_index(&n, |g, i| {
                        let shifted = g.affine_for(&n);
                        let at = |a: Affine| Expr::access(v.clone(), a);
                        step(at(Affine::var(i.clone())), at(shifted), at(Affine::var(i)))
                    });
                    Expr::gen(i, n, body)
                }
                _ => step(v.clone(), v.clone(), v),
            };
            let x = self.value_name();
            self.values.push((x.clone(), t.clone()));
            binds.push((x.clone(), value));
            prev = x;
        }
        let mut body = self.expr(want, depth - 1);
        for (x, value) in binds.into_iter().rev() {
            self.values.pop();
            body = Expr::let_(x, value, body);
        }
        body
    }
    fn real(&mut self, depth: u32) -> Expr {
        if depth == 0 {
            let idx = self.visible_indices();
            return match self.rng.gen_range(0..6) {
                0 | 1 if self.cfg.gathers && !self.ints.is_empty() && self.chance(0.4) => {
                    self.gather().unwrap_or_else(|| self.num())
                }
                0 | 1 => self.read(&Type::Real).unwrap_or_else(|| self.num()),
                2 if self.cfg.brackets && !idx.is_empty() => Expr::Bracket(self.pred(0)),
                3 if self.cfg.eps && !idx.is_empty() => {
                    let k = if self.chance(0.7) { 3 } else { 2 };
                    let v = (0..k)
                        .map(|_| {
                            let (i, _) = idx[self.rng.gen_range(0..idx.len())].clone();
                            Affine::var(i)
                        })
                        .collect();
                    Expr::Eps(v)
                }
                4 if self.cfg.values => self.number_value(),
                5 if self.cfg.gathers => self.gather().unwrap_or_else(|| self.num()),
                _ => self.read(&Type::Real).unwrap_or_else(|| self.num()),
            };
        }
        let d = depth - 1;
        match self.rng.gen_range(0..16) {
            0..=2 => {
                let ops = [BinOp::Add, BinOp::Sub, BinOp::Mul];
                let op = ops[self.rng.gen_range(0..3)];
                Expr::bin(op, self.real(d), self.real(d))
            }
            3 => {
                // division, kept away from zero
                let den = Expr::bin(
                    BinOp::Add,
                    Expr::Num(1.0),
                    Expr::Call(Func::Abs, vec![self.real(d)]),
                );
                Expr::bin(BinOp::Div, self.real(d), den)
            }
            4 => Expr::Neg(Box::new(self.real(d))),
            5 if self.cfg.funcs => self.call(d),
            6..=8 => {
                let n = self.size();
                let (i, body) = self.bind_index(&n, |g, _| g.real(d));
                Expr::sum(i, n, body)
            }
            9 if self.cfg.brackets && !self.visible_indices().is_empty() => {
                let p = Expr::Bracket(self.pred(1));
                let e = self.real(d);
                if self.chance(0.5) {
                    Expr::bin(BinOp::Mul, p, e)
                } else {
                    Expr::bin(BinOp::Mul, e, p)
                }
            }
            10 if self.cfg.lets => self.let_(&Type::Real, depth),
            11 if self.cfg.pairs => {
                let other = self.ty(0, false);
                let first = self.chance(0.5);
                let t = if first {
                    Type::pair(Type::Real, other)
                } else {
                    Type::pair(other, Type::Real)
                };
                let e = self.expr(&t, d);
                Expr::proj(if first { 0 } else { 1 }, e)
            }
            12 => {
                // index into a generated tensor: (gen(i:n) e)[ι]
                let n = self.size();
                let (i, body) = self.bind_index(&n, |g, _| g.real(d.saturating_sub(1)));
                let g = Expr::gen(i, n.clone(), body);
                let idx = self.affine_for(&n);
                Expr::access(g, idx)
            }
            13 => {
                // index a generated tensor of tensors: (gen(i:n) e)[ι][ι']
                let (n, m) = (self.size(), self.size());
                let inner = Type::tensor(m.clone(), Type::Real);
                let (i, body) = self.bind_index(&n, |g, _| g.expr(&inner, d.saturating_sub(1)));
                let a = self.affine_for(&n);
                let b = self.affine_for(&m);
                Expr::access(Expr::access(Expr::gen(i, n, body), a), b)
            }
            14 if self.cfg.records => {
                // a component of an element of a generated tensor of
                // pairs: (gen(i:n) (a, b))[ι].k
                let n = self.size();
                let first = self.chance(0.5);
                let (i, body) = self.bind_index(&n, |g, _| {
                    let a = g.real(d.saturating_sub(1));
                    let b = g.real(d.saturating_sub(1));
                    Expr::pair(a, b)
                });
                let idx = self.affine_for(&n);
                Expr::proj(u8::from(!first), Expr::access(Expr::gen(i, n, body), idx))
            }
            15 if self.cfg.folds && self.chance(0.3) => self.fold(d),
            15 if self.cfg.gathers && self.chance(0.3) => {
                let g = self.gather();
                g.unwrap_or_else(|| self.real(d))
            }
            15 if self.cfg.reductions && self.chance(0.5) => {
                // a max or min reduction
                let op = if self.chance(0.5) {
                    RedOp::Max
                } else {
                    RedOp::Min
                };
                let n = self.size();
                let (i, body) = self.bind_index(&n, |g, _| g.real(d));
                Expr::reduce(op, i, n, body)
            }
            15 if self.cfg.values => {
                let c = self.cond(d);
                let a = self.real(d);
                let b = self.real(d);
                Expr::where_(c, a, b)
            }
            _ => self.read(&Type::Real).unwrap_or_else(|| self.real(d)),
        }
    }
    /// A number from a fold: `fold(i:n, acc = init) body` with a number
    /// accumulator, or a component of one with a pair (of pairs).
    fn fold(&mut self, d: u32) -> Expr {
        let n = self.size();
        let t = match self.rng.gen_range(0..10) {
            0..=2 if self.cfg.pairs => Type::pair(Type::Real, Type::Real),
            3 if self.cfg.pairs => Type::pair(Type::pair(Type::Real, Type::Real), Type::Real),
            _ => Type::Real,
        };
        let init = self.expr(&t, d.saturating_sub(1));
        let acc = self.value_name();
        let (i, body) = self.bind_index(&n, |g, _| {
            g.values.push((acc.clone(), t.clone()));
            let b = g.fold_body(&acc, &t, &t, d);
            g.values.pop();
            b
        });
        let mut e = Expr::fold(i, n, acc, init, body);
        let mut t = t;
        while let Type::Pair(a, b) = t {
            let k = u8::from(self.chance(0.5));
            e = Expr::proj(k, e);
            t = if k == 0 { *a } else { *b };
        }
        e
    }
    /// A fold's next accumulator (of type `part`, inside the accumulator
    /// `acc` of type `whole`): mostly a step from a component of the
    /// accumulator (kept from growing without bound: a sum, a damped
    /// step, a guarded update, a swap of components), sometimes anything.
    fn fold_body(&mut self, acc: &str, whole: &Type, part: &Type, d: u32) -> Expr {
        if let Type::Pair(a, b) = part {
            let ea = self.fold_body(acc, whole, a, d);
            let eb = self.fold_body(acc, whole, b, d);
            return Expr::pair(ea, eb);
        }
        let a = self
            .path_to(Expr::var(acc), whole, &Type::Real, 4)
            .unwrap_or(Expr::Num(0.0));
        let d1 = d.saturating_sub(1);
        match self.rng.gen_range(0..6) {
            0 | 1 => Expr::bin(BinOp::Add, a, self.real(d1)),
            2 => Expr::bin(
                BinOp::Add,
                Expr::bin(BinOp::Mul, Expr::Num(0.5), a),
                self.real(d1),
            ),
            3 if self.cfg.values => {
                let c = self.cond(d1);
                let x = Expr::bin(BinOp::Sub, a.clone(), self.real(d1));
                Expr::where_(c, x, a)
            }
            4 => a,
            _ => self.real(d1),
        }
    }
    /// A gather `E[tok[ι] + c, ι']` (or on `E`'s second axis) from a
    /// parameter of type `[s]R` or `[s,t]R` and an integer array, when
    /// the function has both.
    fn gather(&mut self) -> Option<Expr> {
        if self.ints.is_empty() {
            return None;
        }
        let targets: Vec<(String, Vec<Size>)> = self
            .params
            .iter()
            .filter_map(|(x, t)| match t {
                Type::Tensor(s, e) => match &**e {
                    Type::Real => Some((x.clone(), vec![s.clone()])),
                    Type::Tensor(u, r) if **r == Type::Real => {
                        Some((x.clone(), vec![s.clone(), u.clone()]))
                    }
                    _ => None,
                },
                _ => None,
            })
            .collect();
        if targets.is_empty() {
            return None;
        }
        let (x, dims) = targets[self.rng.gen_range(0..targets.len())].clone();
        let (tok, tt) = self.ints[self.rng.gen_range(0..self.ints.len())].clone();
        let mut read = Expr::var(tok);
        let mut t = &tt;
        while let Type::Tensor(s, e) = t {
            let a = self.affine_for(s);
            read = Expr::access(read, a);
            t = e;
        }
        let c = match self.rng.gen_range(0..10) {
            0 => 1,
            1 => -1,
            _ => 0,
        };
        let at = self.rng.gen_range(0..dims.len());
        let mut e = Expr::var(x);
        for (k, s) in dims.iter().enumerate() {
            e = if k == at {
                Expr::gather(e, read.clone(), c)
            } else {
                let a = self.affine_for(s);
                Expr::access(e, a)
            };
        }
        Some(e)
    }
    /// An index or a size as a number: `i`, `2*i - j + 1`, `n`, or a
    /// literal when neither is in scope.
    fn number_value(&mut self) -> Expr {
        let idx = self.visible_indices();
        let named: Vec<String> = self
            .sizes
            .iter()
            .filter_map(|s| match s {
                Size::Named(n) => Some(n.clone()),
                _ => None,
            })
            .collect();
        if !idx.is_empty() && (named.is_empty() || self.chance(0.7)) {
            let (i, _) = idx[self.rng.gen_range(0..idx.len())].clone();
            let mut a = Affine::var(i).scale([1, 1, 1, -1, 2][self.rng.gen_range(0..5)]);
            if idx.len() > 1 && self.chance(0.3) {
                let (j, _) = idx[self.rng.gen_range(0..idx.len())].clone();
                a = a.add(&Affine::var(j));
            }
            a.constant = self.rng.gen_range(-1..=1);
            Expr::index_value(a)
        } else if !named.is_empty() {
            Expr::SizeValue(named[self.rng.gen_range(0..named.len())].clone())
        } else {
            self.num()
        }
    }
    /// A `where` condition: comparisons of numbers (often an index with a
    /// small constant, as in edge clamping), sometimes combined.
    fn cond(&mut self, d: u32) -> Cond {
        let op = CmpOp::ALL[self.rng.gen_range(0..CmpOp::ALL.len())];
        let c = if self.chance(0.4) && !self.visible_indices().is_empty() {
            let a = self.number_value();
            Cond::Cmp(
                op,
                Box::new(a),
                Box::new(Expr::Num(self.rng.gen_range(0..3) as f64)),
            )
        } else {
            let a = self.real(d / 2);
            let b = if self.chance(0.5) {
                Expr::Num(0.0)
            } else {
                self.real(d / 2)
            };
            Cond::Cmp(op, Box::new(a), Box::new(b))
        };
        match self.rng.gen_range(0..8) {
            0 if d > 0 => Cond::And(Box::new(c), Box::new(self.cond(d - 1))),
            1 if d > 0 => Cond::Or(Box::new(c), Box::new(self.cond(d - 1))),
            2 => Cond::Not(Box::new(c)),
            _ => c,
        }
    }
    fn call(&mut self, d: u32) -> Expr {
        let a = self.real(d);
        match self.rng.gen_range(0..10) {
            0 => Expr::Call(Func::Sqrt, vec![Expr::Call(Func::Abs, vec![a])]),
            1 => Expr::Call(
                Func::Log,
                vec![Expr::bin(
                    BinOp::Add,
                    Expr::Num(1.0),
                    Expr::Call(Func::Abs, vec![a]),
                )],
            ),
            2 => Expr::Call(Func::Exp, vec![Expr::Call(Func::Sin, vec![a])]),
            3 => Expr::Call(Func::Cos, vec![a]),
            4 => Expr::Call(Func::Tanh, vec![a]),
            5 => Expr::Call(Func::Abs, vec![a]),
            6 => Expr::Call(Func::Max, vec![a, self.real(d)]),
            7 => Expr::Call(Func::Min, vec![a, self.real(d)]),
            8 => Expr::Call(Func::Erf, vec![a]),
            _ => self.pow(a, d),
        }
    }
    /// `pow(a, e)`: a literal exponent (the common case, integer or not),
    /// a power of `|a|`, or any exponent (random values easily overflow
    /// or make NaN; every engine must still agree on them).
    fn pow(&mut self, a: Expr, d: u32) -> Expr {
        const LITS: [f64; 8] = [2.0, 3.0, -1.0, -2.0, 0.5, 1.5, -1.5, 0.0];
        let (x, y) = match self.rng.gen_range(0..3) {
            0 => {
                // (a negative literal is written, and parsed, as `-c`)
                let c = LITS[self.rng.gen_range(0..LITS.len())];
                let y = if c < 0.0 {
                    Expr::Neg(Box::new(Expr::Num(-c)))
                } else {
                    Expr::Num(c)
                };
                (a, y)
            }
            1 => (Expr::Call(Func::Abs, vec![a]), self.real(d)),
            _ => (a, self.real(d)),
        };
        Expr::Call(Func::Pow, vec![x, y])
    }
}

/// A random well-typed function, deterministic in `seed`.
pub fn gen_function(seed: u64, cfg: &GenConfig) -> Function {
    gen_function_with(StdRng::seed_from_u64(seed), cfg)
}

/// A random well-typed function drawn from `rng`: any source of choices,
/// such as [`ByteRng`] over a fuzzer's input, so that a small change of the
/// bytes is a small change of the program.
pub fn gen_function_with<R: Rng>(mut rng: R, cfg: &GenConfig) -> Function {
    let mut sizes: Vec<Size> = cfg.literal_sizes.iter().map(|&n| Size::Lit(n)).collect();
    let named =
        cfg.named_sizes && (sizes.is_empty() || rng.gen_bool(cfg.named_weight.clamp(0.0, 1.0)));
    if named {
        sizes.push(Size::Named("n".into()));
        if rng.gen_bool(0.5) {
            sizes.push(Size::Named("m".into()));
        }
    }
    let mut g = Gen {
        rng,
        cfg,
        sizes: sizes.clone(),
        values: Vec::new(),
        indices: Vec::new(),
        fresh: 0,
        params: Vec::new(),
        ints: Vec::new(),
    };
    let nparams = g.rng.gen_range(1..=4);
    let mut params = Vec::new();
    for k in 0..nparams {
        let name = ["A", "x", "y", "B"][k].to_string();
        let ty = if cfg.pair_params && g.chance(0.2) {
            let s = g.size();
            Type::tensor(s, Type::pair(Type::Real, Type::Real))
        } else if cfg.pair_params && g.chance(0.1) {
            let a = g.ty(0, false);
            Type::pair(Type::Real, a)
        } else {
            g.ty(1, false)
        };
        params.push(Param { name, ty });
    }
    // every named size must be bound by a parameter: add one if needed
    for s in &sizes {
        if let Size::Named(n) = s {
            let mut bound = Vec::new();
            for p in &params {
                p.ty.size_names(&mut bound);
            }
            if !bound.contains(n) {
                params.push(Param {
                    name: format!("v{n}"),
                    ty: Type::tensor(s.clone(), Type::Real),
                });
            }
        }
    }
    if cfg.gathers && g.chance(0.8) {
        let s = g.size();
        let ty = if g.chance(0.3) {
            let u = g.size();
            Type::tensor(s, Type::tensor(u, Type::Int))
        } else {
            Type::tensor(s, Type::Int)
        };
        g.ints.push(("tok".into(), ty.clone()));
        params.push(Param {
            name: "tok".into(),
            ty,
        });
    }
    g.params = params
        .iter()
        .filter(|p| !p.ty.is_int_array())
        .map(|p| (p.name.clone(), p.ty.clone()))
        .collect();
    g.values = g.params.clone();
    let ret = if cfg.records && g.chance(0.15) {
        g.record_ty()
    } else if cfg.tuple_results && g.chance(0.15) {
        let a = g.ty(0, false);
        let b = g.ty(0, false);
        Type::pair(a, b)
    } else {
        g.ty(1, false)
    };
    let body = crate::syntax::fold_index_values(g.expr(&ret, cfg.max_depth));
    Function {
        name: "f".into(),
        params,
        ret: Some(ret),
        body,
    }
}

/// A proptest strategy for random well-typed functions.
pub fn arb_function(cfg: GenConfig) -> impl Strategy<Value = Function> {
    any::<u64>().prop_map(move |seed| gen_function(seed, &cfg))
}

/// Named sizes for random inputs: every size name of `f` set to a value in
/// `1..=max`, deterministic in `seed`.
pub fn random_sizes(f: &Function, seed: u64, max: usize) -> Sizes {
    let mut rng = StdRng::seed_from_u64(seed);
    f.size_names()
        .into_iter()
        .map(|n| (n, rng.gen_range(1..=max)))
        .collect()
}

/// Like [`random_sizes`], but each size is 0 with chance `zero` (see
/// [`GenConfig::zero_named`]).
pub fn random_sizes_with_zero(f: &Function, seed: u64, max: usize, zero: f64) -> Sizes {
    let mut rng = StdRng::seed_from_u64(seed);
    f.size_names()
        .into_iter()
        .map(|n| {
            let z = zero > 0.0 && rng.gen_bool(zero.clamp(0.0, 1.0));
            (n, if z { 0 } else { rng.gen_range(1..=max) })
        })
        .collect()
}

/// The body of the parser fuzz target, also run over the kept corpus by the
/// regression tests: parse and check `src`; a program that checks must print
/// and parse back to itself, and rendering its diagnostics must not panic.
pub fn fuzz_parse(src: &str) {
    match crate::syntax::parse_program(src) {
        Err(ds) => {
            let _ = crate::diag::render_all(&ds, "fuzz.tl", src);
        }
        Ok(parsed) => match crate::types::check_parsed(&parsed) {
            Err(ds) => {
                let _ = crate::diag::render_all(&ds, "fuzz.tl", src);
            }
            Ok(_) => {
                let text = crate::syntax::print_program(&parsed.program);
                let back = crate::syntax::parse_program(&text)
                    .unwrap_or_else(|e| panic!("printed program does not parse: {e:?}\n{text}"));
                assert_eq!(back.program, parsed.program, "print/parse changed:\n{text}");
            }
        },
    }
}

/// A source of random choices that reads them from a byte string (zeros once
/// it runs out): with [`gen_function_with`], fuzzer input becomes a random
/// program, and a mutation of the bytes a local change of the program.
#[derive(Clone, Debug)]
pub struct ByteRng<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> ByteRng<'a> {
    /// A generator reading `data` (then zeros once it runs out).
    pub fn new(data: &'a [u8]) -> ByteRng<'a> {
        ByteRng { data, pos: 0 }
    }
}

impl rand::RngCore for ByteRng<'_> {
    fn next_u32(&mut self) -> u32 {
        let mut b = [0u8; 4];
        self.fill_bytes(&mut b);
        u32::from_le_bytes(b)
    }
    fn next_u64(&mut self) -> u64 {
        let mut b = [0u8; 8];
        self.fill_bytes(&mut b);
        u64::from_le_bytes(b)
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        for d in dest {
            *d = self.data.get(self.pos).copied().unwrap_or(0);
            self.pos += 1;
        }
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> std::result::Result<(), rand::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

fn children_mut(e: &mut Expr) -> Vec<&mut Expr> {
    match e {
        Expr::Var(_) | Expr::Num(_) | Expr::Bracket(_) | Expr::Eps(_) => vec![],
        Expr::Bin(_, a, b) | Expr::Pair(a, b) | Expr::Let(_, a, b) => vec![a, b],
        Expr::Neg(a)
        | Expr::Proj(_, a)
        | Expr::Gen(_, _, a)
        | Expr::Sum(_, _, a)
        | Expr::Access(a, _) => vec![a],
        Expr::Call(_, args) => args.iter_mut().collect(),
        Expr::Reduce(_, _, _, a) => vec![a],
        Expr::Gather(a, g, _) => vec![a, g],
        Expr::IndexValue(_) | Expr::SizeValue(_) => vec![],
        Expr::Where(c, a, b) => {
            let mut v = c.exprs_mut();
            v.push(&mut **a);
            v.push(&mut **b);
            v
        }
        Expr::Fold(_, _, _, a, b) => vec![a, b],
    }
}

fn node_at<'a>(e: &'a mut Expr, path: &[usize]) -> &'a mut Expr {
    match path.split_first() {
        None => e,
        Some((&k, rest)) => node_at(children_mut(e).swap_remove(k), rest),
    }
}

fn paths(e: &Expr, prefix: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    out.push(prefix.clone());
    for (k, c) in e.children().into_iter().enumerate() {
        prefix.push(k);
        paths(c, prefix, out);
        prefix.pop();
    }
}

/// How big an expression is for shrinking: its node count, then the sum of
/// its index coefficients and constants and of its literal sizes.
fn weight(e: &Expr) -> (usize, i64) {
    fn aff(a: &Affine) -> i64 {
        a.constant.saturating_abs() + a.terms.values().map(|c| c.saturating_abs()).sum::<i64>()
    }
    fn go(e: &Expr) -> i64 {
        let own = match e {
            Expr::Access(_, a) => aff(a),
            Expr::Eps(v) => v.iter().map(aff).sum(),
            Expr::Bracket(p) => p.affines().into_iter().map(aff).sum(),
            Expr::Gen(_, Size::Lit(n), _) | Expr::Sum(_, Size::Lit(n), _) => *n as i64,
            Expr::Reduce(_, _, Size::Lit(n), _) => *n as i64,
            _ => 0,
        };
        e.children()
            .into_iter()
            .fold(own, |s, c| s.saturating_add(go(c)))
    }
    (e.size(), go(e))
}

/// Same-shaped simpler forms of a node: an access with a simpler index, a
/// binder over a smaller literal range.
fn simpler_in_place(e: &Expr) -> Vec<Expr> {
    let mut out = Vec::new();
    match e {
        Expr::Access(t, a) => {
            let mut idx = vec![Affine::constant(0)];
            if a.constant != 0 {
                idx.push(Affine {
                    constant: 0,
                    ..a.clone()
                });
            }
            for v in a.terms.keys() {
                idx.push(Affine::var(v.clone()));
            }
            for i in idx {
                if &i != a {
                    out.push(Expr::Access(t.clone(), i));
                }
            }
        }
        Expr::Gen(i, Size::Lit(n), b) | Expr::Sum(i, Size::Lit(n), b) => {
            for m in [1, 2].into_iter().filter(|m| m < n) {
                out.push(match e {
                    Expr::Gen(..) => Expr::Gen(i.clone(), Size::Lit(m), b.clone()),
                    _ => Expr::Sum(i.clone(), Size::Lit(m), b.clone()),
                });
            }
        }
        Expr::Reduce(op, i, Size::Lit(n), b) => {
            for m in [1, 2].into_iter().filter(|m| m < n) {
                out.push(Expr::Reduce(*op, i.clone(), Size::Lit(m), b.clone()));
            }
        }
        _ => {}
    }
    out
}

/// Shrink a function while `fails` keeps holding: repeatedly replace a
/// subterm by one of its own sub-terms or by `0`/`1`, keeping the function
/// well-typed with the same signature. Returns the smallest failing function
/// found (at most `max_steps` accepted steps).
pub fn shrink(f: &Function, fails: impl Fn(&Function) -> bool, max_steps: usize) -> Function {
    let sig = match crate::types::check(f) {
        Ok(s) => s,
        Err(_) => return f.clone(),
    };
    let mut best = f.clone();
    for _ in 0..max_steps {
        let mut ps = Vec::new();
        paths(&best.body, &mut Vec::new(), &mut ps);
        let mut improved = false;
        'outer: for p in ps {
            let node = node_at(&mut best.body.clone(), &p).clone();
            let mut cands: Vec<Expr> = vec![Expr::Num(0.0), Expr::Num(1.0)];
            for c in node.children() {
                cands.push(c.clone());
                cands.extend(c.children().into_iter().cloned());
            }
            cands.extend(simpler_in_place(&node));
            for cand in cands {
                if weight(&cand) >= weight(&node) || cand == node {
                    continue;
                }
                let mut g = best.clone();
                *node_at(&mut g.body, &p) = cand;
                let ok = crate::types::check(&g).is_ok_and(|s| s.ret == sig.ret);
                if ok && fails(&g) {
                    best = g;
                    improved = true;
                    break 'outer;
                }
            }
        }
        if !improved {
            break;
        }
    }
    best
}
