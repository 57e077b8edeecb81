//! Rule soundness checking: every rule is instantiated with random
//! well-typed terms (all sizes one literal `N`, so plain indices always fit),
//! its conditions are checked on the instance exactly as in the e-graph, the
//! right side is built with the same meta-functions, and both sides are run
//! in the interpreter on random inputs of every [`ValueClass`] (moderate,
//! exact and signed zeros, a large common offset, magnitudes from 1e-300 to
//! 1e300, infinities and NaN). Per rule: instances tried, skipped
//! (conditions never met), mismatches, and the smallest counterexample seen.
//!
//! **Floating-point classes.** A rule claims a class ([`FpClass`],
//! `docs/fp-contract.md`) and is checked against it:
//!
//! - `exact`: on every value class, the right side's value equals the left
//!   side's (NaN equals NaN, and the sign of a zero is not compared) and so
//!   does its strong-zero flag (which a context can observe: `[p] * inf`);
//! - `reassociating`: on every value class, the right side's value is one
//!   the contract accepts for the left side ([`Shadow`]: rounding within
//!   the error bound of the left side's own terms, a sum's terms in any
//!   order, NaN and infinities where regrouping an `∞·0` allows them), and
//!   the strong-zero flags agree;
//! - `finite-only`: the same, on the finite value classes only;
//! - `cancelling`: on moderate values and exact zeros, the two sides agree
//!   within a relative 1e-7 of their magnitude, or are both NaN or
//!   infinite (a left side that is NaN is not skipped: `exp(log(x)) => x`
//!   fails for `x < 0`).
//!
//! Each report also gives the strongest class the rule passed on every
//! instance, so a rule file can be told which class to claim.

use super::rules::{build_rhs, check_cond, FpClass, Rule, Sexp, Store};
use super::*;
use crate::error::Error;
use crate::interp;
use crate::interp::domain::F64;
use crate::interp::random::{random_inputs_of, ValueClass};
use crate::interp::shadow::Shadow;
use crate::syntax::printer::print_function;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::collections::BTreeMap;

/// The verdict on one rule.
#[derive(Clone, Debug, Serialize)]
pub struct RuleReport {
    /// The rule's name.
    pub name: String,
    /// Where it is defined, `file:line`.
    pub origin: String,
    /// Instances whose both sides were run.
    pub tried: usize,
    /// Rounds in which no instance meeting the conditions was found (the
    /// checker keeps drawing until `tried` reaches the requested count).
    pub skipped: usize,
    /// Instances whose two sides gave different values.
    pub mismatches: usize,
    /// The smallest counterexample found: both sides as programs and values.
    pub counterexample: Option<String>,
    /// The class the rule claims.
    pub class: FpClass,
    /// The strongest class the rule passed on every instance (`None`: not
    /// even `cancelling`, the rule is unsound).
    pub holds: Option<FpClass>,
}

impl RuleReport {
    /// No instance disagreed with the claimed class.
    pub fn sound(&self) -> bool {
        self.mismatches == 0
    }
}

/// A single growing term as a [`Store`].
struct TreeStore {
    t: Vec<TL>,
    types: BTreeMap<Symbol, Type>,
}

impl TreeStore {
    fn fv_rec(&self, id: Id) -> u64 {
        node_fv(&self.t[usize::from(id)], |c| self.fv_rec(c))
    }
    fn ty_rec(&self, id: Id) -> Option<Type> {
        let n = &self.t[usize::from(id)];
        match n {
            TL::Var(x) => self.types.get(x).cloned(),
            TL::Aff(_) | TL::Pred(_) | TL::Size(_) => None,
            TL::Pair([a, b]) => Some(Type::pair(self.ty_rec(*a)?, self.ty_rec(*b)?)),
            TL::Fst([a]) | TL::Snd([a]) => match self.ty_rec(*a)? {
                Type::Pair(x, y) => Some(if matches!(n, TL::Fst(_)) { *x } else { *y }),
                _ => None,
            },
            TL::Gen([s, b]) => match &self.t[usize::from(*s)] {
                TL::Size(s) => Some(Type::tensor(s.0.clone(), self.ty_rec(*b)?)),
                _ => None,
            },
            TL::Get([a, _]) => match self.ty_rec(*a)? {
                Type::Tensor(_, e) => Some(*e),
                _ => None,
            },
            TL::Let([_, _, b]) => self.ty_rec(*b),
            _ => Some(Type::Real),
        }
    }
    fn copy_into(&self, id: Id, out: &mut RecExpr<TL>) -> Id {
        let n = self.t[usize::from(id)]
            .clone()
            .map_children(|c| self.copy_into(c, out));
        out.add(n)
    }
    fn eq(&self, a: Id, b: Id) -> bool {
        let (x, y) = (&self.t[usize::from(a)], &self.t[usize::from(b)]);
        x.matches(y)
            && x.children()
                .iter()
                .zip(y.children())
                .all(|(p, q)| self.eq(*p, *q))
    }
}

impl Store for TreeStore {
    fn fv(&self, id: Id) -> u64 {
        self.fv_rec(id)
    }
    fn ty(&self, id: Id) -> Option<Type> {
        self.ty_rec(id)
    }
    fn has_var(&self, id: Id, x: Symbol) -> bool {
        match &self.t[usize::from(id)] {
            TL::Var(y) => *y == x,
            n => n.children().iter().any(|c| self.has_var(*c, x)),
        }
    }
    fn node(&self, id: Id) -> Option<TL> {
        Some(self.t[usize::from(id)].clone())
    }
    fn term(&self, id: Id) -> Option<RecExpr<TL>> {
        let mut out = RecExpr::default();
        self.copy_into(id, &mut out);
        Some(out)
    }
    fn add(&mut self, n: TL) -> Id {
        self.t.push(n);
        Id::from(self.t.len() - 1)
    }
    fn add_term(&mut self, t: &RecExpr<TL>) -> Id {
        let base = self.t.len();
        for n in t.as_ref() {
            let n = n.clone().map_children(|c| Id::from(base + usize::from(c)));
            self.t.push(n);
        }
        Id::from(self.t.len() - 1)
    }
    fn same(&self, a: Id, b: Id) -> bool {
        self.eq(a, b)
    }
    fn may_be_strong(&self, id: Id) -> bool {
        node_strong(
            &self.t[usize::from(id)],
            |x| PARAMS.contains(&x.as_str()),
            |c| self.may_be_strong(c),
        )
    }
    fn find_term(&self, t: &RecExpr<TL>) -> Option<Id> {
        let mut probe = TreeStore {
            t: self.t.clone(),
            types: BTreeMap::new(),
        };
        let k = probe.add_term(t);
        (0..self.t.len()).map(Id::from).find(|i| probe.eq(*i, k))
    }
}

#[derive(Clone, Debug)]
enum Sort {
    Size,
    Aff,
    Pred,
    Name,
    Term(Type),
    /// A `where` condition.
    Cond,
}

struct Inst {
    rng: StdRng,
    n: usize,
    st: TreeStore,
    binds: BTreeMap<String, Id>,
    fresh: usize,
}

impl Inst {
    fn size(&mut self) -> Id {
        self.st.add(TL::Size(SizeLeaf(Size::Lit(self.n))))
    }
    fn aff(&mut self, depth: u32) -> Affine {
        let n = self.n as i64;
        if depth == 0 || self.rng.gen_bool(0.15) {
            return Affine::constant(self.rng.gen_range(-1..=n));
        }
        let k = self.rng.gen_range(0..depth);
        let c = if self.rng.gen_bool(0.85) { 1 } else { -1 };
        let off = if self.rng.gen_bool(0.7) {
            0
        } else {
            self.rng.gen_range(-1..=1)
        };
        Affine::var(db(k)).scale(c).add(&Affine::constant(off))
    }
    fn pred(&mut self, depth: u32) -> Pred {
        if self.rng.gen_bool(0.15) {
            let a = self.pred(depth);
            let b = self.pred(depth);
            return Pred::And(Box::new(a), Box::new(b));
        }
        if depth > 0 && self.rng.gen_bool(0.4) {
            let b = self.aff(depth);
            return Pred::Cmp(CmpOp::Eq, Affine::var(db(0)), b);
        }
        let op = CmpOp::ALL[self.rng.gen_range(0..CmpOp::ALL.len())];
        let a = self.aff(depth);
        let b = self.aff(depth);
        Pred::Cmp(op, a, b)
    }
    fn leaf_aff(&mut self, depth: u32) -> Id {
        let a = self.aff(depth);
        self.st.add(TL::Aff(AffLeaf::exact(a)))
    }
    fn var(&mut self, x: &str) -> Id {
        self.st.add(TL::Var(Symbol::from(x)))
    }
    fn get(&mut self, t: Id, depth: u32) -> Id {
        let a = self.leaf_aff(depth);
        self.st.add(TL::Get([t, a]))
    }
    fn term(&mut self, ty: &Type, depth: u32, vals: &[(Symbol, Type)], budget: u32) -> Id {
        match ty {
            Type::Real | Type::Int => self.real(depth, vals, budget),
            Type::Tensor(_, e) => {
                let opts: Vec<Symbol> = vals
                    .iter()
                    .filter(|(_, t)| t == ty)
                    .map(|(x, _)| *x)
                    .collect();
                if !opts.is_empty() && self.rng.gen_bool(0.4) {
                    let k = self.rng.gen_range(0..opts.len());
                    return self.st.add(TL::Var(opts[k]));
                }
                let is_vec = **e == Type::Real;
                let r = self.rng.gen_range(0..4);
                if is_vec && r == 0 {
                    let name = if self.rng.gen_bool(0.5) { "x" } else { "y" };
                    return self.var(name);
                }
                if is_vec && r == 1 {
                    let a = self.var("A");
                    return self.get(a, depth);
                }
                if **e == Type::tensor(Size::Lit(self.n), Type::Real) && r == 2 {
                    return self.var("A");
                }
                let s = self.size();
                let b = self.term(e, depth + 1, vals, budget.saturating_sub(1));
                self.st.add(TL::Gen([s, b]))
            }
            Type::Pair(a, b) => {
                if **a == Type::Real && **b == Type::Real && self.rng.gen_bool(0.4) {
                    return self.var("p");
                }
                let x = self.term(a, depth, vals, budget.saturating_sub(1));
                let y = self.term(b, depth, vals, budget.saturating_sub(1));
                self.st.add(TL::Pair([x, y]))
            }
        }
    }
    /// A random `where` condition: a comparison of two numbers (an index
    /// value against a small constant now and then), sometimes negated or
    /// combined.
    fn cond(&mut self, depth: u32, vals: &[(Symbol, Type)], budget: u32) -> Id {
        let a = if depth > 0 && self.rng.gen_bool(0.3) {
            let k = self.leaf_aff(depth);
            self.st.add(TL::Idx([k]))
        } else {
            self.real(depth, vals, budget)
        };
        let b = if self.rng.gen_bool(0.4) {
            let c = [0.0, 1.0, 2.0][self.rng.gen_range(0..3)];
            self.st.add(TL::Num(NumLeaf(c)))
        } else {
            self.real(depth, vals, budget)
        };
        let c = match self.rng.gen_range(0..4) {
            0 => TL::Lt([a, b]),
            1 => TL::Le([a, b]),
            2 => TL::Eq([a, b]),
            _ => TL::Ne([a, b]),
        };
        let c = self.st.add(c);
        match self.rng.gen_range(0..6) {
            0 => self.st.add(TL::Not([c])),
            1 if budget > 0 => {
                let d = self.cond(depth, vals, budget - 1);
                self.st.add(TL::And([c, d]))
            }
            2 if budget > 0 => {
                let d = self.cond(depth, vals, budget - 1);
                self.st.add(TL::Or([c, d]))
            }
            _ => c,
        }
    }
    fn real(&mut self, depth: u32, vals: &[(Symbol, Type)], budget: u32) -> Id {
        let leaf = budget == 0 || self.rng.gen_bool(0.35);
        if leaf {
            let scal: Vec<Symbol> = vals
                .iter()
                .filter(|(_, t)| *t == Type::Real)
                .map(|(x, _)| *x)
                .collect();
            let vecs: Vec<Symbol> = vals
                .iter()
                .filter(|(_, t)| *t == Type::tensor(Size::Lit(self.n), Type::Real))
                .map(|(x, _)| *x)
                .collect();
            return match self.rng.gen_range(0..8) {
                0 => {
                    let c = [0.0, 1.0, 2.0, 0.5, 3.0][self.rng.gen_range(0..5)];
                    self.st.add(TL::Num(NumLeaf(c)))
                }
                1 => self.var("s"),
                2 if !scal.is_empty() => {
                    let k = self.rng.gen_range(0..scal.len());
                    self.st.add(TL::Var(scal[k]))
                }
                3 if !vecs.is_empty() => {
                    let k = self.rng.gen_range(0..vecs.len());
                    let v = self.st.add(TL::Var(vecs[k]));
                    self.get(v, depth)
                }
                4 => {
                    let a = self.var("A");
                    let r = self.get(a, depth);
                    self.get(r, depth)
                }
                5 => {
                    let p = self.var("p");
                    self.st.add(TL::Fst([p]))
                }
                _ => {
                    let name = if self.rng.gen_bool(0.5) { "x" } else { "y" };
                    let x = self.var(name);
                    self.get(x, depth)
                }
            };
        }
        let b = budget - 1;
        match self.rng.gen_range(0..10) {
            0 | 1 => {
                let x = self.real(depth, vals, b);
                let y = self.real(depth, vals, b);
                self.st.add(TL::Add([x, y]))
            }
            2 | 3 => {
                let x = self.real(depth, vals, b);
                let y = self.real(depth, vals, b);
                self.st.add(TL::Mul([x, y]))
            }
            4 => {
                let x = self.real(depth, vals, b);
                let y = self.real(depth, vals, b);
                self.st.add(TL::Sub([x, y]))
            }
            5 => {
                let p = self.pred(depth);
                let p = self.st.add(TL::Pred(PredLeaf(p)));
                let iv = self.st.add(TL::Iv([p]));
                let x = self.real(depth, vals, b);
                self.st.add(TL::Mul([iv, x]))
            }
            6 => {
                let s = self.size();
                let x = self.real(depth + 1, vals, b);
                self.st.add(TL::Sum([s, x]))
            }
            7 => {
                let k = if self.rng.gen_bool(0.8) { 3 } else { 2 };
                let ch: Vec<Id> = (0..k).map(|_| self.leaf_aff(depth)).collect();
                self.st.add(TL::Eps(ch.into_boxed_slice()))
            }
            8 => {
                let x = self.real(depth, vals, b);
                self.st.add(TL::Neg([x]))
            }
            _ if self.rng.gen_bool(0.5) => {
                let x = self.real(depth, vals, b);
                self.st.add(TL::Sin([x]))
            }
            _ => {
                // a max or min reduction
                let s = self.size();
                let x = self.real(depth + 1, vals, b);
                let op = if self.rng.gen_bool(0.5) {
                    RedOp::Max
                } else {
                    RedOp::Min
                };
                self.st.add(red_node(op, s, x))
            }
        }
    }

    /// Instantiate a left side.
    fn pattern(&mut self, s: &Sexp, sort: Sort, depth: u32, vals: &[(Symbol, Type)]) -> Id {
        match s {
            Sexp::Atom(a) if a.starts_with('?') => {
                if let Some(id) = self.binds.get(a) {
                    return *id;
                }
                let id = match sort {
                    Sort::Size => self.size(),
                    Sort::Aff => self.leaf_aff(depth),
                    Sort::Pred => {
                        let p = self.pred(depth);
                        self.st.add(TL::Pred(PredLeaf(p)))
                    }
                    Sort::Name => {
                        self.fresh += 1;
                        let x = format!("v{}", self.fresh);
                        self.var(&x)
                    }
                    Sort::Term(t) => {
                        let budget = self.rng.gen_range(0..4);
                        self.term(&t, depth, vals, budget)
                    }
                    Sort::Cond => {
                        let budget = self.rng.gen_range(0..3);
                        self.cond(depth, vals, budget)
                    }
                };
                self.binds.insert(a.clone(), id);
                id
            }
            Sexp::Atom(a) => self.st.add(TL::Num(NumLeaf(a.parse().unwrap_or(0.0)))),
            Sexp::List(l) => {
                let op = match &l[0] {
                    Sexp::Atom(a) => a.as_str(),
                    _ => "",
                };
                let args = &l[1..];
                let expected = match &sort {
                    Sort::Term(t) => t.clone(),
                    _ => Type::Real,
                };
                let n = self.n;
                let mut ch = Vec::new();
                match op {
                    "gen" | "sum" | "rmax" | "rmin" => {
                        ch.push(self.pattern(&args[0], Sort::Size, depth, vals));
                        let el = match (&expected, op) {
                            (Type::Tensor(_, t), "gen") => (**t).clone(),
                            _ => Type::Real,
                        };
                        ch.push(self.pattern(&args[1], Sort::Term(el), depth + 1, vals));
                    }
                    "get" => {
                        let t = Type::tensor(Size::Lit(n), expected);
                        ch.push(self.pattern(&args[0], Sort::Term(t), depth, vals));
                        ch.push(self.pattern(&args[1], Sort::Aff, depth, vals));
                    }
                    "iv" => ch.push(self.pattern(&args[0], Sort::Pred, depth, vals)),
                    "idx" => ch.push(self.pattern(&args[0], Sort::Aff, depth, vals)),
                    "sizev" => ch.push(self.pattern(&args[0], Sort::Size, depth, vals)),
                    "where" => {
                        ch.push(self.pattern(&args[0], Sort::Cond, depth, vals));
                        for a in &args[1..] {
                            ch.push(self.pattern(a, Sort::Term(Type::Real), depth, vals));
                        }
                    }
                    "and" | "or" | "not" => {
                        for a in args {
                            ch.push(self.pattern(a, Sort::Cond, depth, vals));
                        }
                    }
                    "eps" => {
                        for a in args {
                            ch.push(self.pattern(a, Sort::Aff, depth, vals));
                        }
                    }
                    "fst" | "snd" => {
                        let t = if op == "fst" {
                            Type::pair(expected, Type::Real)
                        } else {
                            Type::pair(Type::Real, expected)
                        };
                        ch.push(self.pattern(&args[0], Sort::Term(t), depth, vals));
                    }
                    "pair" => {
                        let (a, b) = match &expected {
                            Type::Pair(a, b) => ((**a).clone(), (**b).clone()),
                            _ => (Type::Real, Type::Real),
                        };
                        ch.push(self.pattern(&args[0], Sort::Term(a), depth, vals));
                        ch.push(self.pattern(&args[1], Sort::Term(b), depth, vals));
                    }
                    "let" => {
                        let name = self.pattern(&args[0], Sort::Name, depth, vals);
                        let t = if self.rng.gen_bool(0.6) {
                            Type::Real
                        } else {
                            Type::tensor(Size::Lit(n), Type::Real)
                        };
                        let t = match &args[1] {
                            Sexp::List(l) if matches!(&l[0], Sexp::Atom(a) if a == "gen") => {
                                Type::tensor(Size::Lit(n), Type::Real)
                            }
                            _ => t,
                        };
                        ch.push(name);
                        ch.push(self.pattern(&args[1], Sort::Term(t.clone()), depth, vals));
                        let sym = match &self.st.t[usize::from(name)] {
                            TL::Var(s) => *s,
                            _ => Symbol::from("v"),
                        };
                        self.st.types.insert(sym, t.clone());
                        let mut v2 = vals.to_vec();
                        v2.push((sym, t));
                        ch.push(self.pattern(&args[2], Sort::Term(expected), depth, &v2));
                    }
                    _ => {
                        for a in args {
                            ch.push(self.pattern(a, Sort::Term(Type::Real), depth, vals));
                        }
                    }
                }
                let node = make_op(op, &ch).expect("checked operator");
                self.st.add(node)
            }
        }
    }
}

fn root_sort(s: &Sexp) -> Type {
    match s {
        Sexp::List(l) => match &l[0] {
            Sexp::Atom(a) if a == "gen" => Type::tensor(Size::Lit(3), Type::Real),
            Sexp::Atom(a) if a == "pair" => Type::pair(Type::Real, Type::Real),
            _ => Type::Real,
        },
        _ => Type::Real,
    }
}

/// The parameters of every instance (see [`params`]).
const PARAMS: [&str; 5] = ["s", "x", "y", "A", "p"];

fn params(n: usize) -> Vec<Param> {
    let v = |m| Type::tensor(Size::Lit(m), Type::Real);
    vec![
        Param {
            name: "s".into(),
            ty: Type::Real,
        },
        Param {
            name: "x".into(),
            ty: v(n),
        },
        Param {
            name: "y".into(),
            ty: v(n),
        },
        Param {
            name: "A".into(),
            ty: Type::tensor(Size::Lit(n), v(n)),
        },
        Param {
            name: "p".into(),
            ty: Type::pair(Type::Real, Type::Real),
        },
    ]
}

/// Check one rule on `cases` random instances.
pub fn check_rule(rule: &Rule, cases: usize, seed: u64) -> RuleReport {
    check_rule_by(rule, cases, seed, judge)
}

/// Check a rule admitted in the integer formats ([`Rule::int_admitted`])
/// in wrapping integers: every instance whose left side is integral
/// ([`crate::types::integral()`]) is run in `I64` and in `I32`
/// ([`crate::interp::run_int`]) on random integers spread over the width
/// (the limits and their neighbours often, values near ±2^53, ±2^31 and
/// ±2^30), and the two sides must give the same integers, bit for bit. A
/// mismatch counts against the rule whatever its floating-point class.
pub fn check_rule_int(rule: &Rule, cases: usize, seed: u64) -> RuleReport {
    check_rule_by(rule, cases, seed, judge_int)
}

/// Run both sides of an instance in `I64` and `I32` on random integers;
/// `None` when the left side is not integral or cannot run.
fn judge_int(fl: &Function, fr: &Function, rng: &mut StdRng) -> Option<Outcome> {
    use crate::interp::IntValue;
    use crate::precision::IntElem;
    fn wide<T: IntElem>(rng: &mut StdRng) -> T {
        let (lo, hi) = if T::PRECISION.int_bits() == 64 {
            (i64::MIN, i64::MAX)
        } else {
            (i64::from(i32::MIN), i64::from(i32::MAX))
        };
        let near = |c: i64, rng: &mut StdRng| {
            let s = if rng.gen_bool(0.5) { c } else { -c };
            s.wrapping_add(rng.gen_range(-2..=2))
        };
        T::from_i64(match rng.gen_range(0..7) {
            0 => lo + rng.gen_range(0..3),
            1 => hi - rng.gen_range(0..3),
            2 => rng.gen_range(-3..=3),
            3 => near(1 << 53, rng),
            4 => near(1 << 31, rng),
            5 => near(1 << 30, rng),
            _ => rng.gen_range(lo..=hi),
        })
    }
    fn ints<T: IntElem>(v: &interp::Value, rng: &mut StdRng) -> IntValue<T> {
        match v {
            interp::Value::Real(_) => IntValue::Int(wide(rng)),
            interp::Value::Array(a) => IntValue::Array(a.mapv(|_| wide(rng))),
            interp::Value::Pair(a, b) => IntValue::pair(ints(a, rng), ints(b, rng)),
        }
    }
    fn one<T: IntElem>(
        fl: &Function,
        fr: &Function,
        shapes: &[interp::Value],
        rng: &mut StdRng,
    ) -> Option<Option<String>> {
        let args: Vec<IntValue<T>> = shapes.iter().map(|v| ints(v, rng)).collect();
        let left = interp::run_int(fl, &args).ok()?;
        let right = interp::run_int(fr, &args);
        Some(match right {
            Ok(r) if r == left => None,
            r => Some(format!(
                "not exact in {} on {args:?}: left gives {left:?}, right gives {}",
                T::PRECISION,
                match r {
                    Ok(r) => format!("{r:?}"),
                    Err(e) => format!("an error ({e})"),
                }
            )),
        })
    }
    if !crate::types::is_integral(fl, crate::precision::Precision::I64) {
        return None;
    }
    let shapes = random_inputs_of(fl, &BTreeMap::new(), ValueClass::Moderate, rng).ok()?;
    let mut why = None;
    for _ in 0..3 {
        why = why.or(one::<i64>(fl, fr, &shapes, rng)?);
        why = why.or(one::<i32>(fl, fr, &shapes, rng)?);
    }
    Some(Outcome {
        fails: std::array::from_fn(|_| why.clone()),
    })
}

/// [`check_rule`] with the judge of an instance given.
fn check_rule_by(
    rule: &Rule,
    cases: usize,
    seed: u64,
    judge: fn(&Function, &Function, &mut StdRng) -> Option<Outcome>,
) -> RuleReport {
    let mut rep = RuleReport {
        name: rule.name.clone(),
        origin: rule.origin.clone(),
        tried: 0,
        skipped: 0,
        mismatches: 0,
        counterexample: None,
        class: rule.class,
        holds: None,
    };
    let mut failed = [false; 4];
    let mut rng = StdRng::seed_from_u64(seed);
    // Keep drawing until `cases` instances ran (rules with narrow conditions
    // need more draws), up to four times as many rounds.
    let mut rounds = 0;
    while rep.tried < cases && rounds < cases * 4 {
        rounds += 1;
        let mut done = false;
        for _attempt in 0..60 {
            let n = if rng.gen_bool(0.75) { 3 } else { 2 };
            let d: u32 = rng.gen_range(0..=2);
            let ps = params(n);
            let mut types: BTreeMap<Symbol, Type> = ps
                .iter()
                .map(|p| (Symbol::from(p.name.as_str()), p.ty.clone()))
                .collect();
            types.insert(Symbol::from("s"), Type::Real);
            let mut inst = Inst {
                rng: StdRng::seed_from_u64(rng.gen()),
                n,
                st: TreeStore {
                    t: Vec::new(),
                    types,
                },
                binds: BTreeMap::new(),
                fresh: 0,
            };
            let mut ty = root_sort(&rule.lhs);
            if let Type::Tensor(_, e) = ty {
                ty = Type::Tensor(Size::Lit(n), e);
            }
            let lhs = inst.pattern(&rule.lhs, Sort::Term(ty), d, &[]);
            let binds = inst.binds.clone();
            let v = |x: &str| binds[x];
            if !rule.conds.iter().all(|c| check_cond(&inst.st, c, &v)) {
                continue;
            }
            let Some(rhs) = build_rhs(&mut inst.st, &rule.rhs, &v) else {
                continue;
            };
            let scope: Vec<String> = (0..d as usize).map(index_name).collect();
            let whole = |id: Id, st: &TreeStore| -> Function {
                let mut t = RecExpr::default();
                let root = st.copy_into(id, &mut t);
                let mut e = rec_to_expr(&t, root, &mut scope.clone());
                for k in (0..d as usize).rev() {
                    e = Expr::gen(index_name(k), Size::Lit(n), e);
                }
                Function {
                    name: "side".into(),
                    params: ps.clone(),
                    ret: None,
                    body: e,
                }
            };
            let fl = whole(lhs, &inst.st);
            let fr = whole(rhs, &inst.st);
            if crate::types::check(&fl).is_err() {
                continue;
            }
            let mut irng = StdRng::seed_from_u64(rng.gen());
            let Some(outcome) = judge(&fl, &fr, &mut irng) else {
                continue;
            };
            done = true;
            rep.tried += 1;
            for c in FpClass::ALL {
                if outcome.fails[c as usize].is_some() {
                    failed[c as usize] = true;
                }
            }
            if let Some(why) = &outcome.fails[rule.class as usize] {
                rep.mismatches += 1;
                let text = format!(
                    "left:  {}right: {}{why}",
                    print_function(&fl),
                    print_function(&fr),
                );
                if rep
                    .counterexample
                    .as_ref()
                    .is_none_or(|c| text.len() < c.len())
                {
                    rep.counterexample = Some(text);
                }
            }
            break;
        }
        if !done {
            rep.skipped += 1;
        }
    }
    rep.holds = FpClass::ALL.into_iter().find(|c| {
        // a class holds when it and every weaker one passed
        FpClass::ALL
            .iter()
            .filter(|w| **w >= *c)
            .all(|w| !failed[*w as usize])
    });
    rep
}

/// The verdict on one instance: per class, why it failed (if it did).
struct Outcome {
    fails: [Option<String>; 4],
}

/// Elementwise results of one side: values and strong-zero flags.
fn flat_f64(f: &Function, args: &[interp::Value]) -> Option<Vec<(f64, bool)>> {
    let leaves = interp::run_domain(f, args, &F64).ok()?;
    Some(leaves.into_iter().flat_map(|l| l.data).collect())
}

/// Same value under the contract's equality: NaN equals NaN, the sign of a
/// zero does not count.
fn same_value(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b
}

/// Run both sides of an instance on inputs of every value class and judge
/// each floating-point class; `None` when the left side cannot run.
fn judge(fl: &Function, fr: &Function, rng: &mut StdRng) -> Option<Outcome> {
    let mut fails: [Option<String>; 4] = Default::default();
    let right_types = crate::types::check(fr).is_ok();
    let sizes = BTreeMap::new();
    for class in ValueClass::ALL {
        let args = random_inputs_of(fl, &sizes, class, rng).ok()?;
        let left = flat_f64(fl, &args)?;
        let oracle = Shadow::for_inputs(&args);
        let shadow: Vec<_> = interp::run_domain(fl, &args, &oracle)
            .ok()?
            .into_iter()
            .flat_map(|l| l.data)
            .collect();
        let right = if right_types {
            flat_f64(fr, &args)
        } else {
            None
        };
        let show = |vals: &[(f64, bool)]| {
            vals.iter()
                .map(|(v, s)| format!("{v}{}", if *s { " (strong)" } else { "" }))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let inputs = args
            .iter()
            .map(|a| a.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let Some(right) = right.filter(|r| r.len() == left.len()) else {
            let why = format!(
                "left gives {}, the right side does not type-check or run",
                show(&left)
            );
            for f in fails.iter_mut() {
                f.get_or_insert_with(|| why.clone());
            }
            continue;
        };
        let says = |what: &str| {
            format!(
                "{what} on {} inputs ({inputs}): left gives {}, right gives {}",
                class.name(),
                show(&left),
                show(&right)
            )
        };
        // exact: same values and strong flags
        if fails[0].is_none() {
            let ok = left
                .iter()
                .zip(&right)
                .all(|((a, sa), (b, sb))| same_value(*a, *b) && sa == sb);
            if !ok {
                fails[0] = Some(says("not exact"));
            }
        }
        // reassociating and finite-only: within the contract's set
        let within = shadow
            .iter()
            .zip(&right)
            .all(|((sh, _), (b, _))| sh.slack(2.0).accepts(*b));
        let flags = left.iter().zip(&right).all(|((_, sa), (_, sb))| sa == sb);
        if fails[1].is_none() && !(within && flags) {
            let worst = shadow
                .iter()
                .zip(&right)
                .find(|((sh, _), (b, _))| !sh.slack(2.0).accepts(*b))
                .map(|((sh, _), _)| format!(" (the contract accepts {})", sh.slack(2.0).describe()))
                .unwrap_or_else(|| " (strong-zero flags differ)".into());
            fails[1] = Some(says("outside the reassociating bound") + &worst);
        }
        if class.finite() && fails[2].is_none() && !within {
            let worst = shadow
                .iter()
                .zip(&right)
                .find(|((sh, _), (b, _))| !sh.slack(2.0).accepts(*b))
                .map(|((sh, _), _)| format!(" (the contract accepts {})", sh.slack(2.0).describe()))
                .unwrap_or_default();
            fails[2] = Some(says("outside the reassociating bound") + &worst);
        }
        // cancelling: agreement in exact arithmetic, on moderate values
        if matches!(class, ValueClass::Moderate | ValueClass::Zeros) && fails[3].is_none() {
            let ok = left.iter().zip(&right).all(|((a, _), (b, _))| {
                if !a.is_finite() || !b.is_finite() {
                    // NaN and the infinities may trade places (as they may
                    // in a regrouping); finite and non-finite may not
                    return !a.is_finite() && !b.is_finite();
                }
                (a - b).abs() <= 1e-7 * a.abs().max(b.abs()) + 1e-9
            });
            if !ok {
                fails[3] = Some(says("different values"));
            }
        }
    }
    Some(Outcome { fails })
}

/// [`check_rule_int`] for every rule admitted in the integer formats
/// ([`Rule::int_admitted`]); deterministic in `seed`.
pub fn check_rules_int(rules: &[Rule], cases: usize, seed: u64) -> Vec<RuleReport> {
    rules
        .iter()
        .filter(|r| r.int_admitted())
        .enumerate()
        .map(|(k, r)| check_rule_int(r, cases, seed.wrapping_add(k as u64)))
        .collect()
}

/// Check every rule; deterministic in `seed`.
pub fn check_rules(rules: &[Rule], cases: usize, seed: u64) -> Vec<RuleReport> {
    rules
        .iter()
        .enumerate()
        .map(|(k, r)| check_rule(r, cases, seed.wrapping_add(k as u64 * 7919)))
        .collect()
}

// ---------------------------------------------------------------------------
// The check on load: rule files are checked before their rules are used

/// How rules are checked for soundness when they are loaded
/// ([`super::load::parse_rules`], [`super::load::load_rules_dir`] and their
/// `*_with` variants): every rule is instantiated on random terms and inputs
/// as [`check_rule`] does; the first unsound rule refuses the whole load
/// with [`Error::UnsoundRule`] and its smallest counterexample.
///
/// Each rule first gets [`RuleCheck::min_cases`] instances (always, so
/// every rule is instantiated whatever the budget), then up to
/// [`RuleCheck::cases`] in all while the whole check stays within
/// [`RuleCheck::time_budget`]. Rules identical (sides and conditions) to a
/// built-in rule are not instantiated again: CI checks those with 1000
/// instances each. The instances are drawn from [`RuleCheck::seed`], so a
/// check that stays within its budget is deterministic; a check is a
/// sample, not a proof (`einsat rules check --cases 1000` and `einsat
/// difftest --rules DIR` look harder).
#[derive(Clone, Debug)]
pub struct RuleCheck {
    /// Check at all (`false`: [`RuleCheck::skip`], the CLI's
    /// `--no-rule-check`).
    pub enabled: bool,
    /// Instances per rule while the budget lasts (default 50).
    pub cases: usize,
    /// Instances every rule gets, budget or not (default 10).
    pub min_cases: usize,
    /// Time for the instances beyond `min_cases` (default 2 s).
    pub time_budget: std::time::Duration,
    /// Seed of the random instances.
    pub seed: u64,
}

impl Default for RuleCheck {
    fn default() -> Self {
        RuleCheck {
            enabled: true,
            cases: 50,
            min_cases: 10,
            time_budget: std::time::Duration::from_secs(2),
            seed: 1,
        }
    }
}

impl RuleCheck {
    /// No check: rules are loaded as written.
    pub fn skip() -> RuleCheck {
        RuleCheck {
            enabled: false,
            ..RuleCheck::default()
        }
    }

    /// Check `rules` (see the type's doc): `Ok` when none is found unsound.
    pub fn check(&self, rules: &[Rule]) -> crate::error::Result<()> {
        if !self.enabled {
            return Ok(());
        }
        let start = std::time::Instant::now();
        let todo: Vec<(usize, &Rule)> = rules
            .iter()
            .enumerate()
            .filter(|(_, r)| !is_builtin(r))
            .collect();
        let seed = |k: usize, pass: u64| {
            self.seed
                .wrapping_add(k as u64 * 7919)
                .wrapping_add(pass.wrapping_mul(104_729))
        };
        let first = self.min_cases.min(self.cases).max(1);
        for &(k, r) in &todo {
            refuse(r, check_rule(r, first, seed(k, 0)))?;
        }
        let rest = self.cases.saturating_sub(first);
        if rest > 0 {
            for &(k, r) in &todo {
                if start.elapsed() >= self.time_budget {
                    break;
                }
                refuse(r, check_rule(r, rest, seed(k, 1)))?;
            }
        }
        Ok(())
    }
}

fn refuse(r: &Rule, rep: RuleReport) -> crate::error::Result<()> {
    if rep.sound() {
        return Ok(());
    }
    let (file, line) = r.file_line();
    Err(Error::UnsoundRule {
        rule: r.name.clone(),
        class: r.class.name(),
        holds: rep.holds.map(|c| c.name()),
        file,
        line: line.unwrap_or(0),
        counterexample: rep
            .counterexample
            .unwrap_or_else(|| "(none recorded)".into()),
    })
}

/// Whether a rule has the sides and conditions of a built-in rule.
fn is_builtin(r: &Rule) -> bool {
    static BUILTIN: std::sync::OnceLock<std::collections::BTreeSet<String>> =
        std::sync::OnceLock::new();
    let fingerprint = |r: &Rule| {
        format!(
            "[{}] {:?} => {:?} if {:?}",
            r.class, r.lhs, r.rhs_sexp, r.conds
        )
    };
    BUILTIN
        .get_or_init(|| {
            super::rules::builtin_rules()
                .iter()
                .map(fingerprint)
                .collect()
        })
        .contains(&fingerprint(r))
}
