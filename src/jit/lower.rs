//! Lowering from normal form (`docs/language.md`) to the loop IR
//! ([`super::ir`]): buffers
//! (parameter leaves, `let` temporaries, result leaves), loop nests that
//! write one buffer each, and scalar expressions with accumulation loops,
//! guards and strided loads. Anything outside normal form is refused with
//! an error naming the offending node.
//!
//! **Records.** A value holding pairs — a result or a `let` — is a tree of
//! `gen`s and pairs with numbers at the leaves (`gen(i:n) (a, b)`, a
//! tensor of pairs). It is carried as struct of arrays, as at the call
//! boundary ([`Boundary`]): one buffer and one nest per leaf, over the
//! `gen`s above that leaf, addressed by the leaf's projection path
//! (`gen(i:n) (gen(j:m) a, b)` is a `[n,m]` buffer at `.0` and a `[n]`
//! buffer at `.1`). An access chain into such a value (`d[i].0`) picks
//! the leaf by its projections and indexes it by its accesses, in order.

//!
//! Owns the translation only: it must not schedule, emit or look at
//! layouts (the later stages do).

use super::ir::walk::may_be_strong;
use super::ir::{Buf, BufKind, Cond, IndexExpr, LoadIndex, LoopProgram, Nest, Scalar, SizeRef};
use crate::interp::Boundary;
use crate::syntax::ast::*;
use crate::syntax::printer::print_expr;

enum Binding {
    Param(usize, Boundary),
    /// A `let` temporary: its buffers, one per leaf of its pairs.
    Temp(Tree),
    /// The accumulator of an enclosing `fold`: its slots, one per leaf.
    Acc(Tree),
}

/// The leaves of a fold's value `v ::= (v, v) | e`, with their paths.
fn pair_leaves<'e>(e: &'e Expr, path: &mut Vec<u8>, out: &mut Vec<(Vec<u8>, &'e Expr)>) {
    match e {
        Expr::Pair(a, b) => {
            for (k, c) in [(0u8, a), (1, b)] {
                path.push(k);
                pair_leaves(c, path, out);
                path.pop();
            }
        }
        _ => out.push((path.clone(), e)),
    }
}

/// The tree of `e`'s pairs with the next of `slots` at each leaf.
fn slot_tree(e: &Expr, slots: &mut impl Iterator<Item = usize>) -> Tree {
    match e {
        Expr::Pair(a, b) => {
            let ta = slot_tree(a, slots);
            Tree::Pair(Box::new(ta), Box::new(slot_tree(b, slots)))
        }
        _ => Tree::Leaf(slots.next().unwrap_or(0)),
    }
}

/// The buffers of a value holding pairs, by projection path (struct of
/// arrays: `Pair` at every pair of the value's type, whatever `gen`s lie
/// above it).
#[derive(Clone, Debug)]
enum Tree {
    Leaf(usize),
    Pair(Box<Tree>, Box<Tree>),
}

/// A number-typed leaf of a tree of `gen`s and pairs: its projection path,
/// the `gen`s above it (outermost first) and its expression.
type Leaf<'e> = (Vec<u8>, Vec<(&'e str, &'e Size)>, &'e Expr);

/// The leaves of `g ::= gen(i:n) g | (g, g) | e`, in path order.
fn leaves<'e>(
    e: &'e Expr,
    path: &mut Vec<u8>,
    gens: &mut Vec<(&'e str, &'e Size)>,
    out: &mut Vec<Leaf<'e>>,
) {
    match e {
        Expr::Gen(i, n, b) => {
            gens.push((i, n));
            leaves(b, path, gens, out);
            gens.pop();
        }
        Expr::Pair(a, b) => {
            for (k, c) in [(0u8, a), (1, b)] {
                path.push(k);
                leaves(c, path, gens, out);
                path.pop();
            }
        }
        _ => out.push((path.clone(), gens.clone(), e)),
    }
}

/// The shape of a `where` condition (its numbers become arguments).
fn sel_cond(c: &crate::syntax::ast::Cond) -> super::ir::SelCond {
    use super::ir::SelCond as S;
    use crate::syntax::ast::Cond as C;
    match c {
        C::Cmp(op, _, _) => S::Cmp(*op),
        C::And(a, b) => S::And(Box::new(sel_cond(a)), Box::new(sel_cond(b))),
        C::Or(a, b) => S::Or(Box::new(sel_cond(a)), Box::new(sel_cond(b))),
        C::Not(a) => S::Not(Box::new(sel_cond(a))),
    }
}

/// The fold under the projections of `e`, with the projections' path
/// (outermost first), when `e` is projections of a fold.
fn fold_root(e: &Expr) -> Option<(&Expr, Vec<u8>)> {
    let mut path = Vec::new();
    let mut cur = e;
    while let Expr::Proj(k, a) = cur {
        path.push(*k);
        cur = a;
    }
    path.reverse();
    matches!(cur, Expr::Fold(..)).then_some((cur, path))
}
/// The placeholder index of a gathered axis (see [`Scalar::Gather`]).
static ZERO: Affine = Affine {
    terms: std::collections::BTreeMap::new(),
    constant: 0,
};

fn path_name(x: &str, path: &[u8]) -> String {
    let mut name = x.to_string();
    for k in path {
        name.push_str(&format!(".{k}"));
    }
    name
}

struct Lower {
    prog: LoopProgram,
    vals: Vec<(String, Binding)>,
    idx: Vec<(String, usize)>,
}

fn not_normal(what: &str, e: &Expr) -> String {
    format!(
        "not in normal form: {what} at `{}` (optimise the function first; where the \
         optimiser's limits keep it from the normal form, its report says so)",
        print_expr(e)
    )
}

impl Lower {
    fn size(&mut self, s: &Size) -> SizeRef {
        match s {
            Size::Lit(n) => SizeRef::Lit(*n as i64),
            Size::Named(x) => match self.prog.sizes.iter().position(|y| y == x) {
                Some(k) => SizeRef::Named(k),
                None => {
                    self.prog.sizes.push(x.clone());
                    SizeRef::Named(self.prog.sizes.len() - 1)
                }
            },
        }
    }

    fn fresh_var(&mut self, name: &str) -> usize {
        let v = self.prog.n_vars;
        self.prog.n_vars += 1;
        self.idx.push((name.to_string(), v));
        v
    }

    fn aff(&self, a: &Affine) -> Result<IndexExpr, String> {
        let mut terms = Vec::new();
        for (x, c) in &a.terms {
            let v = self
                .idx
                .iter()
                .rev()
                .find(|(n, _)| n == x)
                .map(|(_, v)| *v)
                .ok_or_else(|| format!("unbound index `{x}`"))?;
            terms.push((v, *c));
        }
        Ok(IndexExpr {
            terms,
            constant: a.constant,
        })
    }

    fn pred(&self, p: &Pred) -> Result<Cond, String> {
        Ok(match p {
            Pred::Cmp(op, a, b) => Cond::Cmp(*op, self.aff(a)?, self.aff(b)?),
            Pred::And(a, b) => Cond::And(Box::new(self.pred(a)?), Box::new(self.pred(b)?)),
            Pred::Or(a, b) => Cond::Or(Box::new(self.pred(a)?), Box::new(self.pred(b)?)),
            Pred::Not(a) => Cond::Not(Box::new(self.pred(a)?)),
        })
    }

    /// An access chain `x`, `x.0`, `a[ι]`, … ending in a number.
    fn chain(&mut self, e: &Expr) -> Result<Scalar, String> {
        let mut ops = Vec::new();
        let mut gathers: Vec<(usize, &Expr, i64)> = Vec::new();
        let mut axes_from_end = 0usize;
        let mut cur = e;
        loop {
            match cur {
                Expr::Access(a, i) => {
                    ops.push(Err(i));
                    axes_from_end += 1;
                    cur = a;
                }
                Expr::Gather(a, g, c) => {
                    // the axis' index is replaced below (0 until then)
                    ops.push(Err(&ZERO));
                    gathers.push((axes_from_end, g, *c));
                    axes_from_end += 1;
                    cur = a;
                }
                Expr::Proj(k, a) => {
                    ops.push(Ok(*k));
                    cur = a;
                }
                Expr::Var(_) => break,
                _ => return Err(not_normal("an access not rooted at a name", e)),
            }
        }
        let Expr::Var(x) = cur else { unreachable!() };
        ops.reverse();
        let pos = self
            .vals
            .iter()
            .rposition(|(n, _)| n == x)
            .ok_or_else(|| format!("unknown name `{x}`"))?;
        let (buf, dims_all) = match &self.vals[pos].1 {
            Binding::Acc(t) => {
                let mut t = t;
                for op in &ops {
                    t = match (t, op) {
                        (Tree::Pair(a, b), Ok(k)) => {
                            if *k == 0 {
                                a
                            } else {
                                b
                            }
                        }
                        _ => return Err(not_normal("an accumulator that is not a number", e)),
                    };
                }
                let Tree::Leaf(k) = t else {
                    return Err(not_normal("a pair where a number is expected", e));
                };
                return Ok(Scalar::Acc(*k));
            }
            Binding::Temp(t) => {
                let mut t = t;
                for k in ops.iter().flatten() {
                    t = match t {
                        Tree::Pair(a, b) => {
                            if *k == 0 {
                                a
                            } else {
                                b
                            }
                        }
                        Tree::Leaf(_) => return Err(not_normal("a projection of a number", e)),
                    };
                }
                let Tree::Leaf(b) = t else {
                    return Err(not_normal("a pair where a number is expected", e));
                };
                (*b, self.prog.bufs[*b].dims.clone())
            }
            Binding::Param(p, bd) => {
                let mut bd = bd.clone();
                let mut path = Vec::new();
                for k in ops.iter().flatten() {
                    bd = match bd {
                        Boundary::Pair(a, b) => {
                            if *k == 0 {
                                *a
                            } else {
                                *b
                            }
                        }
                        Boundary::Array(_) => {
                            return Err(not_normal("a projection of a number", e))
                        }
                    };
                    path.push(*k);
                }
                let Boundary::Array(dims) = bd else {
                    return Err(not_normal("a pair where a number is expected", e));
                };
                let p = *p;
                let dims: Vec<SizeRef> = dims.iter().map(|s| self.size(s)).collect();
                let found = self.prog.bufs.iter().position(|b| {
                    matches!(&b.kind, BufKind::Param { param, path: q } if *param == p && *q == path)
                });
                let b = match found {
                    Some(b) => b,
                    None => {
                        let name = path_name(x, &path);
                        self.prog.bufs.push(Buf {
                            kind: BufKind::Param { param: p, path },
                            dims: dims.clone(),
                            name,
                            flag: None,
                        });
                        self.prog.bufs.len() - 1
                    }
                };
                (b, dims)
            }
        };
        let idx: Vec<&Affine> = ops.iter().filter_map(|o| o.err()).collect();
        if idx.len() != dims_all.len() {
            return Err(not_normal("an access that is not a number", e));
        }
        let mut ixs = Vec::new();
        for (a, dim) in idx.into_iter().zip(dims_all) {
            ixs.push(LoadIndex {
                aff: self.aff(a)?,
                dim,
                // A plain index has the axis's range (the type checker
                // guarantees it); anything else may leave it.
                checked: a.as_var().is_none(),
            });
        }
        if gathers.is_empty() {
            return Ok(Scalar::Load(buf, ixs));
        }
        let n = ixs.len();
        let mut dyns = Vec::new();
        for (from_end, g, c) in gathers {
            dyns.push((n - 1 - from_end, Box::new(self.chain(g)?), c));
        }
        dyns.sort_by_key(|d| d.0);
        Ok(Scalar::Gather(buf, ixs, dyns))
    }

    fn scalar(&mut self, e: &Expr) -> Result<Scalar, String> {
        Ok(match e {
            Expr::Num(x) => Scalar::Num(*x),
            Expr::Fold(..) => self.fold(e, &[])?,
            Expr::Proj(..) if matches!(fold_root(e), Some((Expr::Fold(..), _))) => {
                let (root, path) = fold_root(e).expect("checked");
                self.fold(root, &path)?
            }
            Expr::Var(_) | Expr::Access(..) | Expr::Proj(..) | Expr::Gather(..) => self.chain(e)?,
            Expr::Bracket(p) => Scalar::Bracket(self.pred(p)?),
            Expr::Eps(v) => Scalar::Eps(v.iter().map(|a| self.aff(a)).collect::<Result<_, _>>()?),
            Expr::Bin(op, a, b) => {
                Scalar::Bin(*op, Box::new(self.scalar(a)?), Box::new(self.scalar(b)?))
            }
            Expr::Neg(a) => Scalar::Neg(Box::new(self.scalar(a)?)),
            Expr::Call(f, args) => Scalar::Call(
                *f,
                args.iter()
                    .map(|a| self.scalar(a))
                    .collect::<Result<_, _>>()?,
            ),
            Expr::Sum(i, n, b) => {
                let n = self.size(n);
                let v = self.fresh_var(i);
                let body = self.scalar(b);
                self.idx.pop();
                Scalar::Sum(v, n, Box::new(body?))
            }
            Expr::Reduce(op, i, n, b) => {
                let n = self.size(n);
                let v = self.fresh_var(i);
                let body = self.scalar(b);
                self.idx.pop();
                Scalar::Reduce(*op, v, n, Box::new(body?))
            }
            Expr::Gen(..) => return Err(not_normal("a `gen` inside a number", e)),
            Expr::Let(..) => return Err(not_normal("a `let` inside an expression", e)),
            Expr::Pair(..) => return Err(not_normal("a pair inside an expression", e)),
            Expr::IndexValue(a) => Scalar::Index(self.aff(a)?),
            Expr::SizeValue(n) => Scalar::SizeVal(self.size(&Size::Named(n.clone()))),
            Expr::Where(c, a, b) => {
                let mut args = Vec::new();
                for x in c.exprs() {
                    args.push(self.scalar(x)?);
                }
                args.push(self.scalar(a)?);
                args.push(self.scalar(b)?);
                Scalar::Select(sel_cond(c), args)
            }
        })
    }

    /// Leaf `path` of `fold(i:n, acc = init) body` (a tree of pairs over
    /// numbers in normal form).
    fn fold(&mut self, e: &Expr, path: &[u8]) -> Result<Scalar, String> {
        let Expr::Fold(i, n, acc, init, body) = e else {
            return Err(not_normal("a fold expected", e));
        };
        let (mut li, mut lb) = (Vec::new(), Vec::new());
        pair_leaves(init, &mut Vec::new(), &mut li);
        pair_leaves(body, &mut Vec::new(), &mut lb);
        if li.len() != lb.len() || li.iter().zip(&lb).any(|(a, b)| a.0 != b.0) {
            return Err(not_normal(
                "a fold whose body is not a tree of pairs like its initial value",
                e,
            ));
        }
        let pick = li
            .iter()
            .position(|(p, _)| p == path)
            .ok_or_else(|| not_normal("a projection of a fold that is not a number", e))?;
        let init_s = li
            .iter()
            .map(|(_, x)| self.scalar(x))
            .collect::<Result<Vec<_>, _>>()?;
        let n = self.size(n);
        let slots: Vec<usize> = (0..li.len())
            .map(|_| {
                self.prog.n_vars += 1;
                self.prog.n_vars - 1
            })
            .collect();
        let v = self.fresh_var(i);
        let tree = slot_tree(init, &mut slots.iter().copied());
        self.vals.push((acc.clone(), Binding::Acc(tree)));
        let body_s = lb
            .iter()
            .map(|(_, x)| self.scalar(x))
            .collect::<Result<Vec<_>, _>>();
        self.vals.pop();
        self.idx.pop();
        Ok(Scalar::Fold(Box::new(super::ir::FoldLoop {
            var: v,
            n,
            slots,
            init: init_s,
            body: body_s?,
            pick,
        })))
    }

    /// The nest writing the leaf `body` under `gens` into `buf`; returns
    /// the buffer's dims.
    fn nest(
        &mut self,
        gens: &[(&str, &Size)],
        body: &Expr,
        buf: usize,
    ) -> Result<Vec<SizeRef>, String> {
        let mut vars = Vec::new();
        for (i, n) in gens {
            let n = self.size(n);
            let v = self.fresh_var(i);
            vars.push((v, n));
        }
        let body = self.scalar(body);
        for _ in &vars {
            self.idx.pop();
        }
        let dims = vars.iter().map(|(_, n)| n.clone()).collect();
        self.prog.nests.push(Nest {
            buf,
            vars,
            body: body?,
        });
        Ok(dims)
    }

    /// The result `g ::= gen(i:n) g | (g, g) | e`: one output buffer and
    /// nest per leaf, at the leaf's projection path.
    fn output(&mut self, e: &Expr) -> Result<(), String> {
        let mut ls = Vec::new();
        leaves(e, &mut Vec::new(), &mut Vec::new(), &mut ls);
        for (path, gens, body) in ls {
            let buf = self.prog.bufs.len();
            self.prog.bufs.push(Buf {
                kind: BufKind::Out { path },
                dims: vec![],
                name: "result".into(),
                flag: None,
            });
            let dims = self.nest(&gens, body, buf)?;
            self.prog.bufs[buf].dims = dims;
        }
        Ok(())
    }

    /// The temporaries of `let x = g`: one buffer and nest per leaf of `g`
    /// (with a strong-zero flag buffer where the leaf may be one).
    fn temp<'e>(
        &mut self,
        x: &str,
        g: &'e Expr,
        path: &mut Vec<u8>,
        gens: &mut Vec<(&'e str, &'e Size)>,
    ) -> Result<Tree, String> {
        match g {
            Expr::Gen(i, n, b) => {
                gens.push((i, n));
                let r = self.temp(x, b, path, gens);
                gens.pop();
                return r;
            }
            Expr::Pair(a, b) => {
                path.push(0);
                let ta = self.temp(x, a, path, gens);
                path.pop();
                path.push(1);
                let tb = self.temp(x, b, path, gens);
                path.pop();
                return Ok(Tree::Pair(Box::new(ta?), Box::new(tb?)));
            }
            _ => {}
        }
        let name = path_name(x, path);
        let buf = self.prog.bufs.len();
        self.prog.bufs.push(Buf {
            kind: BufKind::Temp,
            dims: vec![],
            name: name.clone(),
            flag: None,
        });
        let dims = self.nest(gens, g, buf)?;
        self.prog.bufs[buf].dims = dims.clone();
        let body = &self.prog.nests.last().expect("just pushed").body;
        if may_be_strong(body, &self.prog.bufs) {
            // the interpreter carries strong zeros through a `let`
            let fb = self.prog.bufs.len();
            self.prog.bufs.push(Buf {
                kind: BufKind::Temp,
                dims,
                name: format!("{name}#strong"),
                flag: None,
            });
            self.prog.bufs[buf].flag = Some(fb);
        }
        Ok(Tree::Leaf(buf))
    }

    fn block(&mut self, e: &Expr) -> Result<(), String> {
        match e {
            Expr::Let(x, a, b) => {
                let t = self.temp(x, a, &mut Vec::new(), &mut Vec::new())?;
                self.vals.push((x.clone(), Binding::Temp(t)));
                let r = self.block(b);
                self.vals.pop();
                r
            }
            _ => self.output(e),
        }
    }
}

/// Lower a function in normal form.
pub fn lower(f: &Function) -> Result<LoopProgram, String> {
    let mut l = Lower {
        prog: LoopProgram {
            bufs: vec![],
            nests: vec![],
            n_vars: 0,
            sizes: vec![],
            cols: vec![],
            row_sums: vec![],
        },
        vals: f
            .params
            .iter()
            .enumerate()
            .map(|(k, p)| (p.name.clone(), Binding::Param(k, Boundary::of(&p.ty))))
            .collect(),
        idx: vec![],
    };
    // every size name of the parameters is known to native code
    for p in &f.params {
        let mut names = Vec::new();
        p.ty.size_names(&mut names);
        for s in names {
            l.size(&Size::Named(s));
        }
    }
    l.block(&f.body)?;
    Ok(l.prog)
}
