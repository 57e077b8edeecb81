//! The reference interpreter: the exact meaning of `docs/language.md`,
//! written to be obviously right rather than fast. It is the oracle every other engine is
//! compared against.
//!
//! Internally a tensor is a vector of element values and a pair is a pair, so
//! arrays of pairs need no special casing; the boundary converts to and from
//! [`Value`]s (struct of arrays).
//!
//! Strong zeros: a failed Iverson bracket evaluates to a *strong* zero. A
//! product (or quotient) whose first factor is a strong zero is a strong
//! zero without evaluating the other factor, and a product with a strong zero
//! on the right is a strong zero whatever the left is (even NaN or infinite).
//! Negation, and sums or differences whose operands are all strong zeros, stay
//! strong. Everywhere else a strong zero is plain `0.0`.

pub mod complex;
pub mod domain;
pub mod gather;
pub mod random;
pub mod shadow;
pub mod value;

use crate::error::{Error, Result};
use crate::precision::Precision;
use crate::stack;
use crate::syntax::ast::*;
pub use domain::Domain;
use ndarray::{ArrayD, Axis, IxDyn};
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
pub use value::{bind, order_named, Boundary, IntValue, Sizes, Value};

/// A value of the interpreter over a number domain `N` (plain `f64`, or
/// one of the analysing domains of [`domain`]).
#[derive(Clone, Debug)]
enum V<N> {
    /// A number; the flag marks a strong zero.
    Num(N, bool),
    Tensor(Rc<Vec<V<N>>>),
    Pair(Rc<(V<N>, V<N>)>),
}

impl<N: Clone> V<N> {
    fn num(&self) -> (N, bool) {
        match self {
            V::Num(x, s) => (x.clone(), *s),
            _ => unreachable!("a well-typed program only does arithmetic on numbers"),
        }
    }
}

/// The zero of type `t` (every number 0, every axis its full size): what an
/// index outside the axis reads (zero padding). Built from the type, not from
/// another element, so an empty tensor pads like any other.
fn zero_of<D: Domain>(t: &Type, sizes: &Sizes, d: &D) -> Result<V<D::N>> {
    Ok(match t {
        Type::Real | Type::Int => V::Num(d.num(0.0), false),
        Type::Tensor(n, e) => {
            let n = value::resolve(n, sizes).expect("sizes are bound at the boundary");
            let z = zero_of(e, sizes, d)?;
            let mut items = tensor_items(n)?;
            items.resize(n, z);
            V::Tensor(Rc::new(items))
        }
        Type::Pair(a, b) => V::Pair(Rc::new((zero_of(a, sizes, d)?, zero_of(b, sizes, d)?))),
    })
}

/// Room for the `n` elements of a tensor, or [`Error::OutOfMemory`].
fn tensor_items<T>(n: usize) -> Result<Vec<T>> {
    crate::mem::with_capacity(n, || {
        format!("a tensor of {n} elements in the interpreter (which holds every value of the program in memory)")
    })
}

/// The element type of every access `e[ι]` of a well-typed body, keyed by
/// the node's address (the body is borrowed, unmoved, for the whole run).
type AccessTypes = HashMap<*const Expr, Type>;

fn access_types(e: &Expr, scope: &mut Vec<(String, Type)>, out: &mut AccessTypes) -> Type {
    stack::deep(|| access_types_inner(e, scope, out))
}

fn access_types_inner(e: &Expr, scope: &mut Vec<(String, Type)>, out: &mut AccessTypes) -> Type {
    match e {
        Expr::Var(x) => scope
            .iter()
            .rev()
            .find(|(n, _)| n == x)
            .map(|(_, t)| t.clone())
            .expect("a well-typed program binds every name it uses"),
        Expr::Num(_) | Expr::Bracket(_) | Expr::Eps(_) => Type::Real,
        Expr::Bin(_, a, b) => {
            access_types(a, scope, out);
            access_types(b, scope, out);
            Type::Real
        }
        Expr::Neg(a) | Expr::Sum(_, _, a) => {
            access_types(a, scope, out);
            Type::Real
        }
        Expr::Reduce(_, _, _, a) => {
            access_types(a, scope, out);
            Type::Real
        }
        Expr::Call(_, args) => {
            for a in args {
                access_types(a, scope, out);
            }
            Type::Real
        }
        Expr::Pair(a, b) => Type::pair(access_types(a, scope, out), access_types(b, scope, out)),
        Expr::Proj(k, a) => match access_types(a, scope, out) {
            Type::Pair(t0, t1) => *if *k == 0 { t0 } else { t1 },
            _ => unreachable!("a well-typed program only projects pairs"),
        },
        Expr::Gen(_, n, a) => Type::tensor(n.clone(), access_types(a, scope, out)),
        Expr::Access(a, _) => match access_types(a, scope, out) {
            Type::Tensor(_, elem) => {
                out.insert(e as *const Expr, (*elem).clone());
                *elem
            }
            _ => unreachable!("a well-typed program only indexes tensors"),
        },
        Expr::Let(x, e1, e2) => {
            let t1 = access_types(e1, scope, out);
            scope.push((x.clone(), t1));
            let t = access_types(e2, scope, out);
            scope.pop();
            t
        }
        Expr::IndexValue(_) | Expr::SizeValue(_) => Type::Real,
        Expr::Where(..) => {
            for c in e.children() {
                access_types(c, scope, out);
            }
            Type::Real
        }
        Expr::Fold(_, _, acc, init, body) => {
            let t = access_types(init, scope, out);
            scope.push((acc.clone(), t.clone()));
            access_types(body, scope, out);
            scope.pop();
            t
        }
        Expr::Gather(a, _, _) => match access_types(a, scope, out) {
            Type::Tensor(_, elem) => {
                out.insert(e as *const Expr, (*elem).clone());
                *elem
            }
            _ => unreachable!("a well-typed program only indexes tensors"),
        },
    }
}

/// The value an accumulator of `fold` holds: `v` with every strong zero
/// made a plain 0 (an accumulator is a number or a pair of them).
fn plain<N: Clone>(v: V<N>) -> V<N> {
    match v {
        V::Num(x, _) => V::Num(x, false),
        V::Pair(p) => V::Pair(Rc::new((plain(p.0.clone()), plain(p.1.clone())))),
        t => t,
    }
}

/// A run's state. Names are borrowed from the program (binding an index
/// or a value copies no string), values are borrowed from the caller.
struct Env<'a, D: Domain> {
    d: &'a D,
    values: Vec<(&'a str, V<D::N>)>,
    indices: Vec<(&'a str, i64)>,
    sizes: &'a Sizes,
    access_types: &'a AccessTypes,
    /// The zero each access pads with, built on first use.
    zeros: HashMap<*const Expr, V<D::N>>,
    /// An allocation refused during the run: the run stops (every loop
    /// ends early) and fails with it.
    oom: Option<Error>,
    /// The integer array arguments, as passed (read by gathers).
    ints: &'a [(&'a str, &'a Value)],
}

impl<D: Domain> Env<'_, D> {
    fn index(&self, i: &str) -> i64 {
        self.indices
            .iter()
            .rev()
            .find(|(n, _)| same_name(n, i))
            .map(|(_, v)| *v)
            .expect("a well-typed program binds every index it uses")
    }
    fn size(&self, n: &Size) -> usize {
        value::resolve(n, self.sizes).expect("sizes are bound at the boundary")
    }
}

/// Whether two names are the same (`a == b`, compared in line: names are
/// short, and a lookup compares many).
#[inline]
fn same_name(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).all(|(x, y)| x == y)
}

fn eps(idx: &[i64]) -> f64 {
    let n = idx.len() as i64;
    if idx.iter().any(|&k| k < 0 || k >= n) {
        return 0.0;
    }
    let mut sign = 1.0;
    for a in 0..idx.len() {
        for b in a + 1..idx.len() {
            if idx[a] == idx[b] {
                return 0.0;
            }
            if idx[a] > idx[b] {
                sign = -sign;
            }
        }
    }
    sign
}

/// A complex product's part (see [`complex`]) as the sum of its `2·n`
/// real products: both products of each index added to one sum.
fn split_sum<'a, D: Domain>(part: &complex::Part<'a>, env: &mut Env<'a, D>) -> D::N {
    fn go<'a, D: Domain>(
        part: &complex::Part<'a>,
        level: usize,
        acc: &mut D::Acc,
        count: &mut usize,
        env: &mut Env<'a, D>,
    ) {
        let d = env.d;
        let Some(&(i, n)) = part.sums.get(level) else {
            let (x, sx) = eval(part.t1, env).num();
            d.sum_add(acc, &x, sx);
            let (y, sy) = eval(part.t2, env).num();
            let y = if part.neg && !sy { d.neg(&y) } else { y };
            d.sum_add(acc, &y, sy);
            *count += 2;
            return;
        };
        let n = env.size(n);
        for k in 0..n {
            if env.oom.is_some() {
                break;
            }
            env.indices.push((i, k as i64));
            go(part, level + 1, acc, count, env);
            env.indices.pop();
        }
    }
    let d = env.d;
    let mut acc = d.sum_start();
    let mut count = 0;
    go(part, 0, &mut acc, &mut count, env);
    d.sum_end(acc, count)
}

fn eval<'a, D: Domain>(e: &'a Expr, env: &mut Env<'a, D>) -> V<D::N> {
    stack::deep(|| eval_inner(e, env))
}

fn eval_inner<'a, D: Domain>(e: &'a Expr, env: &mut Env<'a, D>) -> V<D::N> {
    let d = env.d;
    match e {
        Expr::Var(x) => env
            .values
            .iter()
            .rev()
            .find(|(n, _)| same_name(n, x))
            .map(|(_, v)| v.clone())
            .expect("a well-typed program binds every name it uses"),
        Expr::Num(x) => V::Num(d.num(*x), false),
        Expr::Bin(op, a, b) => {
            let (x, sx) = eval(a, env).num();
            if sx && matches!(op, BinOp::Mul | BinOp::Div) {
                return V::Num(d.num(0.0), true);
            }
            let (y, sy) = eval(b, env).num();
            match op {
                BinOp::Mul if sy => V::Num(d.num(0.0), true),
                BinOp::Add | BinOp::Sub => V::Num(d.bin(*op, &x, &y), sx && sy),
                _ => V::Num(d.bin(*op, &x, &y), false),
            }
        }
        Expr::Neg(a) => {
            let (x, s) = eval(a, env).num();
            if s {
                V::Num(d.num(0.0), true)
            } else {
                V::Num(d.neg(&x), false)
            }
        }
        Expr::Call(f, args) => match &args[..] {
            // (one or two arguments, every function but a few: no vector)
            [a] => {
                let x = eval(a, env).num().0;
                V::Num(d.call(*f, std::slice::from_ref(&x)), false)
            }
            [a, b] => {
                let x = eval(a, env).num().0;
                let y = eval(b, env).num().0;
                V::Num(d.call(*f, &[x, y]), false)
            }
            _ => {
                let xs: Vec<D::N> = args.iter().map(|a| eval(a, env).num().0).collect();
                V::Num(d.call(*f, &xs), false)
            }
        },
        Expr::Pair(a, b) => {
            let mut va = eval(a, env);
            let mut vb = eval(b, env);
            if d.regroups() {
                if let Some([pa, pb]) = complex::pattern(a, b) {
                    // a complex product: each part may also be its real
                    // products' sums, combined (docs/fp-contract.md)
                    for (v, part) in [(&mut va, pa), (&mut vb, pb)] {
                        let (x, s) = v.num();
                        let split = split_sum(&part, env);
                        *v = V::Num(d.either(&x, &split), s);
                    }
                }
            }
            V::Pair(Rc::new((va, vb)))
        }
        Expr::Proj(k, a) => match eval(a, env) {
            V::Pair(p) => {
                if *k == 0 {
                    p.0.clone()
                } else {
                    p.1.clone()
                }
            }
            _ => unreachable!("a well-typed program only projects pairs"),
        },
        Expr::Gen(i, n, body) => {
            let n = env.size(n);
            let mut out = match tensor_items(n) {
                Ok(v) => v,
                Err(e) => {
                    env.oom.get_or_insert(e);
                    Vec::new()
                }
            };
            for k in 0..n {
                if env.oom.is_some() {
                    break;
                }
                env.indices.push((i.as_str(), k as i64));
                out.push(eval(body, env));
                env.indices.pop();
            }
            V::Tensor(Rc::new(out))
        }
        Expr::Sum(i, n, body) => {
            let n = env.size(n);
            let mut acc = d.sum_start();
            let mut all_strong = n > 0;
            for k in 0..n {
                if env.oom.is_some() {
                    break;
                }
                env.indices.push((i.as_str(), k as i64));
                let (x, s) = eval(body, env).num();
                env.indices.pop();
                d.sum_add(&mut acc, &x, s);
                all_strong &= s;
            }
            V::Num(d.sum_end(acc, n), all_strong)
        }
        Expr::Reduce(op, i, n, body) => {
            let n = env.size(n);
            let mut acc = d.num(op.identity());
            for k in 0..n {
                if env.oom.is_some() {
                    break;
                }
                env.indices.push((i.as_str(), k as i64));
                let (x, _) = eval(body, env).num();
                env.indices.pop();
                acc = d.reduce(*op, &acc, &x);
            }
            // an ordinary number, like a scalar function's result
            V::Num(acc, false)
        }
        Expr::Access(..) | Expr::Gather(..) => {
            let k = match e {
                Expr::Access(_, idx) => idx.eval(|v| env.index(v)),
                Expr::Gather(_, g, c) => gather_index(g, *c, env),
                _ => unreachable!("an access or a gather"),
            };
            let (Expr::Access(a, _) | Expr::Gather(a, _, _)) = e else {
                unreachable!("an access or a gather")
            };
            match eval(a, env) {
                V::Tensor(items) if k >= 0 && (k as usize) < items.len() => {
                    items[k as usize].clone()
                }
                V::Tensor(_) => {
                    let key = e as *const Expr;
                    if let Some(z) = env.zeros.get(&key) {
                        return z.clone();
                    }
                    let t = &env.access_types[&key];
                    match zero_of(t, env.sizes, d) {
                        Ok(z) => {
                            env.zeros.insert(key, z.clone());
                            z
                        }
                        Err(e) => {
                            env.oom.get_or_insert(e);
                            V::Num(d.num(0.0), false)
                        }
                    }
                }
                _ => unreachable!("a well-typed program only indexes tensors"),
            }
        }
        Expr::Bracket(p) => {
            if p.eval(&|v| env.index(v)) {
                V::Num(d.num(1.0), false)
            } else {
                V::Num(d.num(0.0), true)
            }
        }
        Expr::Eps(idx) => {
            let ks: Vec<i64> = idx.iter().map(|a| a.eval(|v| env.index(v))).collect();
            V::Num(d.num(eps(&ks)), false)
        }
        Expr::Let(x, e1, e2) => {
            let v = eval(e1, env);
            env.values.push((x.as_str(), v));
            let r = eval(e2, env);
            env.values.pop();
            r
        }
        Expr::IndexValue(a) => V::Num(d.int(a.eval(|v| env.index(v))), false),
        Expr::SizeValue(n) => V::Num(d.int(env.size(&Size::Named(n.clone())) as i64), false),
        Expr::Where(c, a, b) => {
            let (holds, decided) = eval_cond(c, env);
            let (chosen, other) = if holds { (a, b) } else { (b, a) };
            let x = eval(chosen, env).num().0;
            if decided {
                V::Num(x, false)
            } else {
                let y = eval(other, env).num().0;
                V::Num(d.either(&x, &y), false)
            }
        }
        Expr::Fold(i, n, acc, init, body) => {
            let n = env.size(n);
            let mut a = plain(eval(init, env));
            for k in 0..n {
                if env.oom.is_some() {
                    break;
                }
                env.indices.push((i.as_str(), k as i64));
                env.values.push((acc.as_str(), a));
                let r = eval(body, env);
                env.values.pop();
                env.indices.pop();
                a = plain(r);
            }
            a
        }
    }
}

/// The index a gather reads: the integer array's element at the affine
/// positions of `g` (0 off its axes), plus `c`. The call's check
/// ([`gather::check`]) made every element an integer on the axis; a
/// value that is not (never, after the check) reads off the axis, as a
/// zero-padding read.
fn gather_index<D: Domain>(g: &Expr, c: i64, env: &Env<'_, D>) -> i64 {
    let Some(x) = gather::array_of(g) else {
        return -1;
    };
    let pos: Vec<i64> = gather::positions_of(g)
        .iter()
        .map(|a| a.eval(|v| env.index(v)))
        .collect();
    let t = match env
        .ints
        .iter()
        .rev()
        .find(|(n, _)| *n == x)
        .map(|(_, v)| *v)
    {
        Some(Value::Array(a)) => {
            let shape = a.shape();
            if pos.len() == shape.len()
                && pos
                    .iter()
                    .zip(shape)
                    .all(|(&k, &n)| k >= 0 && (k as usize) < n)
            {
                let ix: Vec<usize> = pos.iter().map(|&k| k as usize).collect();
                a[IxDyn(&ix)]
            } else {
                0.0
            }
        }
        _ => return -1,
    };
    if t.is_finite() && t.fract() == 0.0 && t.abs() <= MAX_INDEX_MAGNITUDE as f64 {
        (t as i64).saturating_add(c)
    } else {
        -1
    }
}

/// A `where` condition: whether it holds in the written program, and
/// whether the domain is sure of it (always, for plain `f64`).
fn eval_cond<'a, D: Domain>(c: &'a Cond, env: &mut Env<'a, D>) -> (bool, bool) {
    stack::deep(|| match c {
        Cond::Cmp(op, a, b) => {
            let x = eval(a, env).num().0;
            let y = eval(b, env).num().0;
            env.d.compare(*op, &x, &y)
        }
        Cond::And(a, b) => {
            let (x, dx) = eval_cond(a, env);
            let (y, dy) = eval_cond(b, env);
            // a side sure to be false decides the conjunction
            let sure = match (dx, dy) {
                (true, true) => true,
                (true, false) => !x,
                (false, true) => !y,
                (false, false) => false,
            };
            (x && y, sure)
        }
        Cond::Or(a, b) => {
            let (x, dx) = eval_cond(a, env);
            let (y, dy) = eval_cond(b, env);
            let sure = match (dx, dy) {
                (true, true) => true,
                (true, false) => x,
                (false, true) => y,
                (false, false) => false,
            };
            (x || y, sure)
        }
        Cond::Not(a) => {
            let (x, dx) = eval_cond(a, env);
            (!x, dx)
        }
    })
}

/// The `k`-th element along the first axis, borrowed (numbers of type
/// `T`: `f64`, or the integers of [`run_int`]).
enum Slice<'a, T = f64> {
    Real(T),
    Array(ndarray::ArrayViewD<'a, T>),
    Pair(Box<Slice<'a, T>>, Box<Slice<'a, T>>),
}

/// A number of an argument, as a domain's number.
trait Input: Copy {
    fn to<D: Domain>(self, d: &D) -> D::N;
}

impl Input for f64 {
    fn to<D: Domain>(self, d: &D) -> D::N {
        d.num(self)
    }
}

impl<T: crate::precision::IntElem> Input for T {
    fn to<D: Domain>(self, d: &D) -> D::N {
        d.int(self.to_i64())
    }
}

fn slice<'a, T: Copy>(v: &Slice<'a, T>, k: usize) -> Slice<'a, T> {
    match v {
        Slice::Array(a) => {
            let s = a.clone().index_axis_move(Axis(0), k);
            if s.ndim() == 0 {
                Slice::Real(s[IxDyn(&[])])
            } else {
                Slice::Array(s)
            }
        }
        Slice::Pair(a, b) => Slice::Pair(Box::new(slice(a, k)), Box::new(slice(b, k))),
        Slice::Real(_) => unreachable!("bound values match their types"),
    }
}

fn borrowed(v: &Value) -> Slice<'_> {
    match v {
        Value::Real(x) => Slice::Real(*x),
        Value::Array(a) => Slice::Array(a.view()),
        Value::Pair(a, b) => Slice::Pair(Box::new(borrowed(a)), Box::new(borrowed(b))),
    }
}

fn borrowed_int<T>(v: &IntValue<T>) -> Slice<'_, T>
where
    T: Copy,
{
    match v {
        IntValue::Int(x) => Slice::Real(*x),
        IntValue::Array(a) => Slice::Array(a.view()),
        IntValue::Pair(a, b) => Slice::Pair(Box::new(borrowed_int(a)), Box::new(borrowed_int(b))),
    }
}

fn outer_len<T>(v: &Slice<'_, T>) -> usize {
    match v {
        Slice::Array(a) => a.shape()[0],
        Slice::Pair(a, _) => outer_len(a),
        Slice::Real(_) => unreachable!("bound values match their types"),
    }
}

/// An argument in the interpreter's form (its arrays read in place, row by
/// row; the tensors' element vectors allocated fallibly).
fn to_internal<D: Domain, T: Input>(v: &Slice<'_, T>, t: &Type, d: &D) -> Result<V<D::N>> {
    Ok(match t {
        Type::Real | Type::Int => match v {
            Slice::Real(x) => V::Num(x.to(d), false),
            Slice::Array(a) => V::Num(a[IxDyn(&[])].to(d), false),
            Slice::Pair(..) => unreachable!("bound values match their types"),
        },
        Type::Pair(ta, tb) => match v {
            Slice::Pair(a, b) => V::Pair(Rc::new((to_internal(a, ta, d)?, to_internal(b, tb, d)?))),
            _ => unreachable!("bound values match their types"),
        },
        Type::Tensor(_, e) => {
            let n = outer_len(v);
            let mut items = tensor_items(n)?;
            for k in 0..n {
                items.push(to_internal(&slice(v, k), e, d)?);
            }
            V::Tensor(Rc::new(items))
        }
    })
}

fn boundary_shape(b: &Boundary, sizes: &Sizes) -> Result<Vec<usize>> {
    match b {
        Boundary::Array(s) => s.iter().map(|n| value::resolve(n, sizes)).collect(),
        Boundary::Pair(..) => unreachable!("called on array boundaries only"),
    }
}

fn to_boundary(v: &V<f64>, t: &Type, sizes: &Sizes) -> Result<Value> {
    match t {
        Type::Real | Type::Int => Ok(Value::Real(v.num().0)),
        Type::Pair(ta, tb) => match v {
            V::Pair(p) => Ok(Value::pair(
                to_boundary(&p.0, ta, sizes)?,
                to_boundary(&p.1, tb, sizes)?,
            )),
            _ => unreachable!("values match their types"),
        },
        Type::Tensor(..) => {
            let b = Boundary::of(t);
            stack(v, t, &b, sizes)
        }
    }
}

/// Convert a tensor value of type `t` (boundary `b`) to arrays.
fn stack(v: &V<f64>, t: &Type, b: &Boundary, sizes: &Sizes) -> Result<Value> {
    match b {
        Boundary::Array(_) => {
            let shape = boundary_shape(b, sizes)?;
            let n = value::checked_elements(&shape)?;
            let mut data = crate::mem::with_capacity(n as usize, || {
                format!("the result (an array of shape {shape:?})")
            })?;
            flatten(v, &mut |x: &f64, _| data.push(*x));
            let a = ArrayD::from_shape_vec(IxDyn(&shape), data)
                .map_err(|e| Error::Call(format!("internal shape mismatch: {e}")))?;
            Ok(Value::Array(a))
        }
        Boundary::Pair(b0, b1) => Ok(Value::pair(
            stack(&component(v, 0)?, &component_type(t, 0), b0, sizes)?,
            stack(&component(v, 1)?, &component_type(t, 1), b1, sizes)?,
        )),
    }
}

fn flatten<N>(v: &V<N>, out: &mut impl FnMut(&N, bool)) {
    match v {
        V::Num(x, s) => out(x, *s),
        V::Tensor(items) => items.iter().for_each(|i| flatten(i, out)),
        V::Pair(_) => unreachable!("pairs are split before flattening"),
    }
}

/// The k-th component of a (tensor of) pair(s), as a tensor of components.
fn component<N: Clone>(v: &V<N>, k: usize) -> Result<V<N>> {
    Ok(match v {
        V::Pair(p) => {
            if k == 0 {
                p.0.clone()
            } else {
                p.1.clone()
            }
        }
        V::Tensor(items) => {
            let mut out = tensor_items(items.len())?;
            for i in items.iter() {
                out.push(component(i, k)?);
            }
            V::Tensor(Rc::new(out))
        }
        V::Num(..) => unreachable!("components are taken of pairs only"),
    })
}

fn component_type(t: &Type, k: usize) -> Type {
    match t {
        Type::Pair(a, b) => {
            if k == 0 {
                (**a).clone()
            } else {
                (**b).clone()
            }
        }
        Type::Tensor(n, e) => Type::tensor(n.clone(), component_type(e, k)),
        Type::Real | Type::Int => unreachable!("components are taken of pairs only"),
    }
}

/// Run `f` on positional arguments. `f` must have passed the type checker;
/// the arguments are checked here.
pub fn run(f: &Function, args: &[Value]) -> Result<Value> {
    let prepared = Prepared::new(f)?;
    let (out, sizes) = prepared.run_in(args, &domain::F64)?;
    to_boundary(&out, &prepared.ret, &sizes)
}

/// Run `f` in the format `p` ([`crate::precision::Precision`]):
/// [`run`] for `F64`; for `F32` every input and literal is rounded to
/// `f32` and every operation's result too ([`domain::F32`]). The result's
/// numbers are `f64`s holding `f32` values. For `I64`/`I32`, [`run_int`]
/// on the arguments as integers (each must be an integer of the width,
/// below 2^53 in magnitude, else an error), the result as `f64`s (an
/// error beyond 2^53, where they would round; call [`run_int`] for exact
/// integers of any size).
pub fn run_with(f: &Function, args: &[Value], p: crate::precision::Precision) -> Result<Value> {
    match p {
        crate::precision::Precision::F64 => run(f, args),
        crate::precision::Precision::F32 => {
            let prepared = Prepared::new(f)?;
            let (out, sizes) = prepared.run_in(args, &domain::F32)?;
            to_boundary(&out, &prepared.ret, &sizes)
        }
        crate::precision::Precision::I64 => {
            let args = ints_of::<i64>(args)?;
            run_int(f, &args)?.to_value_exact()
        }
        crate::precision::Precision::I32 => {
            let args = ints_of::<i32>(args)?;
            run_int(f, &args)?.to_value_exact()
        }
    }
}

fn ints_of<T: crate::precision::IntElem>(args: &[Value]) -> Result<Vec<IntValue<T>>> {
    args.iter().map(IntValue::from_value).collect()
}

/// Run an integral program `f` ([`crate::types::integral()`]) in the
/// integer format of `T` (`i64`: [`crate::precision::Precision::I64`],
/// `i32`: `I32`) on integer arguments, exactly: every input is read as the
/// integer it is (never through `f64`), `+ - *` and sums wrap to the width
/// ([`domain::Int`]). A program that is not integral is refused with the
/// integrality check's errors.
pub fn run_int<T: crate::precision::IntElem>(
    f: &Function,
    args: &[IntValue<T>],
) -> Result<IntValue<T>> {
    let p = T::PRECISION;
    let sig = crate::types::check(f).map_err(Error::types)?;
    crate::types::integral(f, None, p).map_err(Error::types)?;
    let sizes = value::bind_operands(f, args)?;
    gather::check(f, args, &sizes, p, p)?;
    // the integer arrays, as gathers read them (checked: every element is
    // on the axes it indexes, so exact as `f64`)
    let int_values: Vec<(&str, Value)> = f
        .params
        .iter()
        .zip(args)
        .filter(|(q, _)| q.ty.is_int_array())
        .map(|(q, v)| (q.name.as_str(), v.to_value()))
        .collect();
    let ints: Vec<(&str, &Value)> = int_values.iter().map(|(n, v)| (*n, v)).collect();
    let prepared = Prepared::checked(f, sig.ret.clone());
    let out = prepared.run_in_with(&sizes, &ints, &domain::Int(p), |env, d| {
        for (q, v) in f.params.iter().zip(args) {
            env.values
                .push((q.name.as_str(), to_internal(&borrowed_int(v), &q.ty, d)?));
        }
        Ok(())
    })?;
    let mut leaves = Vec::new();
    collect_leaves(&out, &sig.ret, &Boundary::of(&sig.ret), &sizes, &mut leaves)?;
    let mut leaves = leaves.into_iter();
    fn build<T: crate::precision::IntElem>(
        b: &Boundary,
        leaves: &mut std::vec::IntoIter<Leaf<i64>>,
    ) -> Result<IntValue<T>> {
        Ok(match b {
            Boundary::Array(s) if s.is_empty() => {
                let l = leaves.next().expect("one leaf per array");
                IntValue::Int(T::from_i64(l.data[0].0))
            }
            Boundary::Array(_) => {
                let l = leaves.next().expect("one leaf per array");
                let data = l.data.into_iter().map(|(x, _)| T::from_i64(x)).collect();
                IntValue::Array(
                    ArrayD::from_shape_vec(IxDyn(&l.shape), data)
                        .map_err(|e| Error::Call(format!("internal shape mismatch: {e}")))?,
                )
            }
            Boundary::Pair(a, b) => IntValue::pair(build(a, leaves)?, build(b, leaves)?),
        })
    }
    build(&Boundary::of(&sig.ret), &mut leaves)
}

/// One array of a result, in the order of [`Value`]'s leaves (a pair's
/// first component first): its shape and its elements in C order, each
/// with its strong-zero flag.
#[derive(Clone, Debug)]
pub struct Leaf<N> {
    /// The array's shape (empty for a number).
    pub shape: Vec<usize>,
    /// The elements in C order, with their strong-zero flags.
    pub data: Vec<(N, bool)>,
}

/// Run `f` in the number domain `d` (see [`domain`]): the result's arrays
/// as [`Leaf`]s, in the order of [`Value`]'s leaves.
pub fn run_domain<D: Domain>(f: &Function, args: &[Value], d: &D) -> Result<Vec<Leaf<D::N>>> {
    Prepared::new(f)?.run_domain(args, d)
}

/// A function type-checked once and run many times ([`run_domain`] on
/// each argument list, in any domain): the check and the analyses of the
/// body that do not depend on the arguments are done once. Each run's
/// result (value or error) is the one [`run_domain`] gives.
pub struct Prepared<'f> {
    f: &'f Function,
    /// The result type.
    ret: Type,
    /// The element type of every access of the body.
    access_types: AccessTypes,
    /// Sizes whose allocations the body has been found to stay within.
    allocations_ok: std::cell::RefCell<Vec<Sizes>>,
}

impl<'f> Prepared<'f> {
    /// Type-check `f` (its errors as [`run_domain`] reports them).
    pub fn new(f: &'f Function) -> Result<Prepared<'f>> {
        let sig = crate::types::check(f).map_err(Error::types)?;
        Ok(Prepared::checked(f, sig.ret))
    }

    /// `f`, which passed the type checker with result type `ret`.
    fn checked(f: &'f Function, ret: Type) -> Prepared<'f> {
        let mut scope: Vec<(String, Type)> = f
            .params
            .iter()
            .map(|p| (p.name.clone(), p.ty.clone()))
            .collect();
        let mut access = AccessTypes::new();
        access_types(&f.body, &mut scope, &mut access);
        Prepared {
            f,
            ret,
            access_types: access,
            allocations_ok: Default::default(),
        }
    }

    /// [`run_domain`] of the function on `args`.
    pub fn run_domain<D: Domain>(&self, args: &[Value], d: &D) -> Result<Vec<Leaf<D::N>>> {
        let (out, sizes) = self.run_in(args, d)?;
        let mut leaves = Vec::new();
        collect_leaves(
            &out,
            &self.ret,
            &Boundary::of(&self.ret),
            &sizes,
            &mut leaves,
        )?;
        Ok(leaves)
    }

    /// Evaluate the body on `args`: its value and the bound sizes.
    fn run_in<D: Domain>(&self, args: &[Value], d: &D) -> Result<(V<D::N>, Sizes)> {
        let f = self.f;
        let sizes = bind(f, args)?;
        gather::check(f, args, &sizes, Precision::F64, d.format())?;
        let ints: Vec<(&str, &Value)> = f
            .params
            .iter()
            .zip(args)
            .filter(|(p, _)| p.ty.is_int_array())
            .map(|(p, v)| (p.name.as_str(), v))
            .collect();
        let out = self.run_in_with(&sizes, &ints, d, |env, d| {
            for (p, v) in f.params.iter().zip(args) {
                env.values
                    .push((p.name.as_str(), to_internal(&borrowed(v), &p.ty, d)?));
            }
            Ok(())
        })?;
        Ok((out, sizes))
    }

    /// Evaluate the body at the bound `sizes`, the integer array arguments
    /// `ints`, the parameters bound by `bind_params`.
    fn run_in_with<'a, D: Domain>(
        &'a self,
        sizes: &'a Sizes,
        ints: &'a [(&'a str, &'a Value)],
        d: &'a D,
        bind_params: impl FnOnce(&mut Env<'a, D>, &D) -> Result<()>,
    ) -> Result<V<D::N>> {
        let f = self.f;
        if !self.allocations_ok.borrow().contains(sizes) {
            // refuse absurd result sizes before computing anything
            if let Some(shape) = result_shapes(&self.ret, sizes)? {
                for s in shape {
                    value::checked_elements(&s)?;
                }
            }
            check_allocations(f, sizes)?;
            self.allocations_ok.borrow_mut().push(sizes.clone());
        }
        let mut env = Env {
            d,
            values: Vec::with_capacity(f.params.len() + 8),
            indices: Vec::with_capacity(8),
            sizes,
            access_types: &self.access_types,
            zeros: HashMap::new(),
            oom: None,
            ints,
        };
        bind_params(&mut env, d)?;
        let out = eval(&f.body, &mut env);
        if let Some(e) = env.oom.take() {
            return Err(e);
        }
        Ok(out)
    }
}

fn collect_leaves<N: Clone>(
    v: &V<N>,
    t: &Type,
    b: &Boundary,
    sizes: &Sizes,
    out: &mut Vec<Leaf<N>>,
) -> Result<()> {
    match b {
        Boundary::Array(_) => {
            let shape = boundary_shape(b, sizes)?;
            let mut data = Vec::new();
            flatten(v, &mut |x: &N, s| data.push((x.clone(), s)));
            out.push(Leaf { shape, data });
            Ok(())
        }
        Boundary::Pair(b0, b1) => {
            collect_leaves(&component(v, 0)?, &component_type(t, 0), b0, sizes, out)?;
            collect_leaves(&component(v, 1)?, &component_type(t, 1), b1, sizes, out)
        }
    }
}

/// The shape of a value as the allocation check sees it: how many numbers
/// it holds (`count`, saturating), and per component of pairs and per
/// element of tensors the same, so a projection or an access counts only
/// the part it takes.
struct Shape {
    count: u128,
    kind: ShapeKind,
}

enum ShapeKind {
    Num,
    /// A tensor; the shape of each of its elements.
    Tensor(Rc<Shape>),
    Pair(Rc<Shape>, Rc<Shape>),
}

impl Shape {
    fn num() -> Rc<Shape> {
        Rc::new(Shape {
            count: 1,
            kind: ShapeKind::Num,
        })
    }
    fn tensor(n: u128, elem: Rc<Shape>) -> Rc<Shape> {
        Rc::new(Shape {
            count: n.saturating_mul(elem.count),
            kind: ShapeKind::Tensor(elem),
        })
    }
    fn pair(a: Rc<Shape>, b: Rc<Shape>) -> Rc<Shape> {
        Rc::new(Shape {
            count: a.count.saturating_add(b.count),
            kind: ShapeKind::Pair(a, b),
        })
    }
    /// The exact shape of a value of type `t`.
    fn of(t: &Type, sizes: &Sizes) -> Result<Rc<Shape>> {
        Ok(match t {
            Type::Real | Type::Int => Shape::num(),
            Type::Tensor(n, e) => {
                Shape::tensor(value::resolve(n, sizes)? as u128, Shape::of(e, sizes)?)
            }
            Type::Pair(a, b) => Shape::pair(Shape::of(a, sizes)?, Shape::of(b, sizes)?),
        })
    }
}

/// Refuse any `gen` of `f`'s body whose tensor would hold more than
/// [`value::MAX_ELEMENTS`] numbers, before anything is allocated. The
/// count is exact: every value's shape is followed through `let`s, pairs,
/// projections and accesses (`let t = (big, x) in gen(i:n) t.1` counts `n`
/// numbers, not `n` times `big`).
fn check_allocations(f: &Function, sizes: &Sizes) -> Result<()> {
    let mut scope = Vec::with_capacity(f.params.len());
    for p in &f.params {
        scope.push((p.name.clone(), Shape::of(&p.ty, sizes)?));
    }
    shape_of(&f.body, sizes, &mut scope).map(|_| ())
}

/// The shape of the value of `e` (`scope`: the shapes of the names in
/// scope), refusing a `gen` past the limit.
fn shape_of(e: &Expr, sizes: &Sizes, scope: &mut Vec<(String, Rc<Shape>)>) -> Result<Rc<Shape>> {
    stack::deep(|| shape_of_inner(e, sizes, scope))
}

fn shape_of_inner(
    e: &Expr,
    sizes: &Sizes,
    scope: &mut Vec<(String, Rc<Shape>)>,
) -> Result<Rc<Shape>> {
    Ok(match e {
        Expr::Var(x) => scope
            .iter()
            .rev()
            .find(|(n, _)| n == x)
            .map(|(_, s)| s.clone())
            .unwrap_or_else(Shape::num),
        Expr::Gen(_, n, body) => {
            let n = value::resolve(n, sizes)? as u128;
            let s = Shape::tensor(n, shape_of(body, sizes, scope)?);
            if s.count > value::MAX_ELEMENTS {
                return Err(Error::Call(format!(
                    "`{}` would build a tensor of {} elements (the limit is {})",
                    crate::syntax::print_expr(e)
                        .chars()
                        .take(60)
                        .collect::<String>(),
                    s.count,
                    value::MAX_ELEMENTS
                )));
            }
            s
        }
        Expr::Let(x, e1, e2) => {
            let s = shape_of(e1, sizes, scope)?;
            scope.push((x.clone(), s));
            let r = shape_of(e2, sizes, scope);
            scope.pop();
            r?
        }
        Expr::Pair(a, b) => Shape::pair(shape_of(a, sizes, scope)?, shape_of(b, sizes, scope)?),
        Expr::Proj(k, a) => {
            let s = shape_of(a, sizes, scope)?;
            match &s.kind {
                ShapeKind::Pair(p0, p1) => {
                    if *k == 0 {
                        p0.clone()
                    } else {
                        p1.clone()
                    }
                }
                _ => s,
            }
        }
        Expr::Access(a, _) | Expr::Gather(a, _, _) => {
            let s = shape_of(a, sizes, scope)?;
            match &s.kind {
                ShapeKind::Tensor(elem) => elem.clone(),
                _ => s,
            }
        }
        _ => {
            for c in e.children() {
                shape_of(c, sizes, scope)?;
            }
            Shape::num()
        }
    })
}

/// Run `f` on named arguments.
pub fn run_named(f: &Function, args: BTreeMap<String, Value>) -> Result<Value> {
    let args = order_named(f, args)?;
    run(f, &args)
}

/// The resolved shapes of every array of a result of type `t`.
pub fn result_shapes(t: &Type, sizes: &Sizes) -> Result<Option<Vec<Vec<usize>>>> {
    fn go(b: &Boundary, sizes: &Sizes, out: &mut Vec<Vec<usize>>) -> Result<()> {
        match b {
            Boundary::Array(s) => {
                out.push(
                    s.iter()
                        .map(|n| value::resolve(n, sizes))
                        .collect::<Result<_>>()?,
                );
                Ok(())
            }
            Boundary::Pair(a, b) => {
                go(a, sizes, out)?;
                go(b, sizes, out)
            }
        }
    }
    let mut out = Vec::new();
    go(&Boundary::of(t), sizes, &mut out)?;
    Ok(Some(out))
}
