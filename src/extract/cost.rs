//! The cost model: what a loop JIT runs. Work inside `sum`/`gen` is
//! multiplied by the trip count (a named size counts as
//! [`CostModel::default_size`], 1000, unless set in [`CostModel::sizes`]);
//! a `let` is paid once, then each read is a load. [`ir_cost`] prices a
//! named program (the before and after of the report, and the post-pass's
//! hoisting decisions); [`TlCost`] prices e-graph terms for tree-cost
//! extraction (the DAG-aware cost is in [`super::extract`]).
//!
//! **GEMM stages.** A nest that the JIT runs on the GEMM library
//! (`jit::schedule::gemm`: `gen(..) sum(..) α * X[..] * Y[..]` over plain indices, a
//! (batched) matrix–matrix or matrix–vector product) runs at library speed,
//! several times faster per flop than generated loops. The model says so,
//! modestly, to break ties between programs of similar work toward the one
//! whose stages are GEMM-shaped (e.g. a three-matrix chain as two products
//! through a `let`): [`ir_cost`] prices such a nest at
//! `min(c, GEMM_FACTOR · c + GEMM_CALL_COST)` of its loop cost `c`, and
//! [`TlCost`] prices the innermost `sum(k) X * Y` of two plain loads that
//! both use `k` with its product work scaled by [`GEMM_FACTOR`] (the loop
//! overhead stays: in the e-graph the enclosing `gen`s are not known yet).
//!
//! Both e-graph cost functions are *monotone*: a node costs at least as much
//! as each of its children (trip counts are at least 1, costs are
//! non-negative, products of polynomial sizes take factors of at least 1).
//! egg's extractor only replaces a class's choice by a strictly cheaper one,
//! so with monotone costs the chosen nodes cannot form a cycle and extraction
//! terminates: a loop `sum(i:0) …` (or a named size estimated as 0) costing
//! 0 made every class cost 0, and `0 * x` let a class choose a node that
//! leads back to itself (the term built from the choices never ended).

use crate::egraph::{node_func, size_of, TlGraph, TL};
use crate::syntax::ast::*;
use egg::{CostFunction, Id, Language};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

/// Trip counts for sizes.
#[derive(Clone, Debug)]
pub struct CostModel {
    pub sizes: BTreeMap<String, usize>,
    pub default_size: usize,
}

impl Default for CostModel {
    fn default() -> Self {
        CostModel {
            sizes: BTreeMap::new(),
            default_size: 1000,
        }
    }
}

impl CostModel {
    /// The trip count of a loop over `s`, at least 1: an empty loop still
    /// costs its test, and a zero would make costs non-monotone (see the
    /// module documentation).
    pub fn trip(&self, s: &Size) -> f64 {
        let n = match s {
            Size::Lit(n) => *n,
            Size::Named(x) => *self.sizes.get(x).unwrap_or(&self.default_size),
        };
        n.max(1) as f64
    }
}

impl CostModel {
    /// The trip count of the size in e-class `s` (1 when it is unknown).
    pub fn trip_of(&self, egraph: &TlGraph, s: Id) -> f64 {
        size_of(egraph, s).map(|s| self.trip(&s)).unwrap_or(1.0)
    }
}

/// Cost of one scalar function call.
pub const CALL_COST: f64 = 4.0;

/// The share of its loop cost a GEMM-shaped stage is counted at.
pub const GEMM_FACTOR: f64 = 0.125;

/// The fixed cost of one GEMM library call (so that tiny products stay
/// with generated code, which never costs more than its loops).
pub const GEMM_CALL_COST: f64 = 512.0;

/// Whether `e`, a `gen` chain, is a stage the GEMM library runs: the
/// shape `jit::schedule::gemm::plan` takes (see there), on the named IR.
pub fn gemm_stage(e: &Expr) -> bool {
    fn factors<'a>(
        e: &'a Expr,
        sums: &mut Vec<&'a str>,
        loads: &mut Vec<Vec<&'a str>>,
    ) -> Option<()> {
        match e {
            Expr::Sum(i, _, b) => {
                sums.push(i);
                factors(b, sums, loads)
            }
            Expr::Bin(BinOp::Mul, a, b) => {
                factors(a, sums, loads)?;
                factors(b, sums, loads)
            }
            Expr::Neg(a) => factors(a, sums, loads),
            Expr::Num(_) | Expr::Var(_) => Some(()),
            Expr::Access(..) => {
                let mut idx = Vec::new();
                let mut cur = e;
                loop {
                    match cur {
                        Expr::Access(a, i) => {
                            idx.push(i.as_var()?);
                            cur = a;
                        }
                        Expr::Proj(_, a) => cur = a,
                        Expr::Var(_) => break,
                        _ => return None,
                    }
                }
                loads.push(idx);
                Some(())
            }
            _ => None,
        }
    }
    let mut gens = Vec::new();
    let mut cur = e;
    while let Expr::Gen(i, _, b) = cur {
        gens.push(i.as_str());
        cur = b;
    }
    // a product divided by a power of two, without a literal factor of
    // its own: the library's scale factor
    if let Expr::Bin(BinOp::Div, a, c) = cur {
        fn literal(e: &Expr) -> bool {
            matches!(e, Expr::Num(_)) || e.children().into_iter().any(literal)
        }
        let divisor = match &**c {
            Expr::Num(x) => Some(*x),
            Expr::Neg(x) => match **x {
                Expr::Num(x) => Some(-x),
                _ => None,
            },
            _ => None,
        };
        match divisor {
            Some(x) if crate::precision::exact_reciprocal(x).is_some() && !literal(a) => cur = a,
            _ => return false,
        }
    }
    let (mut sums, mut loads) = (Vec::new(), Vec::new());
    if gens.is_empty() || factors(cur, &mut sums, &mut loads).is_none() {
        return false;
    }
    let binders: Vec<&str> = gens.iter().chain(&sums).copied().collect();
    let distinct = binders
        .iter()
        .enumerate()
        .all(|(k, v)| !binders[..k].contains(v));
    if loads.len() != 2 || sums.is_empty() || !distinct {
        return false;
    }
    let bound = loads.iter().flatten().all(|v| binders.contains(v));
    let (x, y) = (&loads[0], &loads[1]);
    let sums_ok = sums.iter().all(|v| x.contains(v) && y.contains(v));
    let gens_ok = gens.iter().all(|v| x.contains(v) || y.contains(v));
    let m_or_n = gens.iter().any(|v| x.contains(v) != y.contains(v));
    bound && sums_ok && gens_ok && m_or_n
}

/// The cost of a named expression: operations executed, loops multiplied
/// out, lets paid once; GEMM-shaped stages at library speed (see the
/// module doc). Within one loop body (or outside all loops) a loop-free
/// arithmetic subterm written more than once is paid once: the JIT
/// computes it once (Cranelift's value numbering merges `x[i] * x[i]`
/// written twice in one body into one multiply), so inlining a cheap `let`
/// into its uses costs what the `let` did. Calls, sums and other loops are
/// paid at every occurrence.
pub fn ir_cost(e: &Expr, m: &CostModel) -> f64 {
    Scope::default().cost(e, m).0
}

/// The loop-free arithmetic subterms already paid in the current loop
/// body, by structural hash.
#[derive(Clone, Default)]
struct Scope {
    seen: std::collections::HashSet<u64>,
}

impl Scope {
    /// `e`'s cost given what this body has already paid, and its
    /// structural hash when it is loop-free arithmetic (which the JIT's
    /// value numbering merges).
    fn cost(&mut self, e: &Expr, m: &CostModel) -> (f64, Option<u64>) {
        use std::hash::{Hash, Hasher};
        // hash of a node from its kind, payload and children's hashes
        let node =
            |tag: u8, payload: &dyn Fn(&mut std::hash::DefaultHasher), kids: &[Option<u64>]| {
                let mut h = std::hash::DefaultHasher::new();
                tag.hash(&mut h);
                payload(&mut h);
                for k in kids {
                    (*k)?.hash(&mut h);
                }
                Some(h.finish())
            };
        // a body of its own: nothing paid yet
        let body = |b: &Expr| Scope::default().cost(b, m).0;
        let (own, kids, hash): (f64, f64, Option<u64>) = match e {
            Expr::Gen(_, n, b) if gemm_stage(e) => {
                let c = m.trip(n) * (body(b) + 1.0);
                (c.min(GEMM_FACTOR * c + GEMM_CALL_COST), 0.0, None)
            }
            Expr::Var(x) => (0.0, 0.0, node(0, &|h| x.hash(h), &[])),
            Expr::Num(x) => (0.0, 0.0, node(1, &|h| x.to_bits().hash(h), &[])),
            Expr::Bracket(p) => (1.0, 0.0, node(2, &|h| p.hash(h), &[])),
            Expr::Eps(ix) => (1.0, 0.0, node(3, &|h| ix.hash(h), &[])),
            Expr::IndexValue(a) => (1.0, 0.0, node(4, &|h| a.hash(h), &[])),
            Expr::SizeValue(x) => (1.0, 0.0, node(5, &|h| x.hash(h), &[])),
            Expr::Bin(op, a, b) => {
                let ((ca, ha), (cb, hb)) = (self.cost(a, m), self.cost(b, m));
                (1.0, ca + cb, node(6, &|h| op.hash(h), &[ha, hb]))
            }
            Expr::Neg(a) => {
                let (ca, ha) = self.cost(a, m);
                (1.0, ca, node(7, &|_| (), &[ha]))
            }
            Expr::Access(a, i) => {
                let (ca, ha) = self.cost(a, m);
                (1.0, ca, node(8, &|h| i.hash(h), &[ha]))
            }
            Expr::Proj(k, a) => {
                let (ca, ha) = self.cost(a, m);
                (0.0, ca, node(9, &|h| k.hash(h), &[ha]))
            }
            Expr::Call(_, args) => (
                CALL_COST,
                args.iter().map(|a| self.cost(a, m).0).sum::<f64>(),
                None,
            ),
            Expr::Pair(a, b) => (0.0, self.cost(a, m).0 + self.cost(b, m).0, None),
            Expr::Gen(_, n, b) | Expr::Sum(_, n, b) | Expr::Reduce(_, _, n, b) => {
                (m.trip(n) * (body(b) + 1.0), 0.0, None)
            }
            Expr::Gather(a, g, _) => (3.0, self.cost(a, m).0 + self.cost(g, m).0, None),
            // the body in a scope of its own: a name it binds may shadow
            // one this scope has seen
            Expr::Let(_, a, b) => (0.0, self.cost(a, m).0 + body(b), None),
            // the condition always; each side only where it is chosen:
            // it may use what this body paid before, but what it pays is
            // its own
            Expr::Where(c, a, b) => {
                let cc: f64 = c.exprs().into_iter().map(|x| self.cost(x, m).0).sum();
                let ca = self.clone().cost(a, m).0;
                let cb = self.clone().cost(b, m).0;
                (1.0, cc + ca + cb, None)
            }
            Expr::Fold(_, n, _, a, b) => {
                (self.cost(a, m).0 + m.trip(n) * (body(b) + 1.0), 0.0, None)
            }
        };
        match hash {
            // paid already in this body (and so were its parts)
            Some(h) if !self.seen.insert(h) => (0.0, hash),
            _ => (own + kids, hash),
        }
    }
}

/// Extraction cost of e-graph terms (tree cost: a subterm is paid at every
/// use; the post-pass adds sharing and loop-invariant hoisting on top). The
/// DAG-aware cost, which pays a shared value once per loop body and a
/// loop-invariant one once per loop, is `extract::node_dag_cost`, built on
/// the same constants.
pub struct TlCost<'a> {
    pub egraph: &'a TlGraph,
    pub model: &'a CostModel,
    /// [`TlCost::plain_load`]'s answers by class and depth: extraction asks
    /// for every `sum` node on every pass, and unmemoised the search
    /// branches over every `Get` node of every class it meets (in integer
    /// formats, where more rules hold, classes hold many: 75% of the time
    /// of optimising random integer programs went there).
    loads: RefCell<HashMap<(Id, usize), bool>>,
}

impl<'a> TlCost<'a> {
    /// The cost of terms of `egraph` under `model`.
    pub fn new(egraph: &'a TlGraph, model: &'a CostModel) -> TlCost<'a> {
        TlCost {
            egraph,
            model,
            loads: RefCell::new(HashMap::new()),
        }
    }

    /// Whether class `c` holds a load with plain indices (`x[i][j]…`),
    /// through at most `8 - depth` nested loads.
    fn plain_load(&self, c: Id, depth: usize) -> bool {
        if depth >= 8 {
            return false;
        }
        if let Some(&known) = self.loads.borrow().get(&(c, depth)) {
            return known;
        }
        let found = self.egraph[c].nodes.iter().any(|n| match n {
            TL::Get([t, a]) => {
                let exact = self.egraph[*a]
                    .nodes
                    .iter()
                    .any(|n| matches!(n, TL::Aff(l) if l.is_exact_var()));
                exact
                    && self.egraph[*t].nodes.iter().any(|n| match n {
                        TL::Var(_) | TL::Fst(_) | TL::Snd(_) => true,
                        TL::Get(_) => self.plain_load(*t, depth + 1),
                        _ => false,
                    })
            }
            _ => false,
        });
        self.loads.borrow_mut().insert((c, depth), found);
        found
    }

    /// Whether class `b`, the body of a `sum`, holds a product of two plain
    /// loads that both use the summed index `#0` and do not use the same
    /// other indices (an index in one factor only is an M or N axis; a dot
    /// product is no GEMM stage).
    pub(crate) fn gemm_product(&self, b: Id) -> bool {
        self.egraph[b].nodes.iter().any(|n| match n {
            TL::Mul([x, y]) => {
                let (fx, fy) = (self.egraph[*x].data.fv, self.egraph[*y].data.fv);
                fx & fy & 1 == 1
                    && (fx ^ fy) >> 1 != 0
                    && self.plain_load(*x, 0)
                    && self.plain_load(*y, 0)
            }
            _ => false,
        })
    }
}

impl CostFunction<TL> for TlCost<'_> {
    type Cost = f64;
    fn cost<C>(&mut self, enode: &TL, mut costs: C) -> f64
    where
        C: FnMut(Id) -> f64,
    {
        let kids = |costs: &mut C| enode.children().iter().map(|c| costs(*c)).sum::<f64>();
        match enode {
            TL::Num(_) | TL::Var(_) | TL::Size(_) | TL::Aff(_) | TL::Pred(_) => 0.0,
            TL::Sum([s, b]) if self.gemm_product(*b) => {
                let n = self.model.trip_of(self.egraph, *s);
                let cb = costs(*b);
                // never below its body: costs stay monotone (see above)
                (n * (GEMM_FACTOR * cb + 1.0)).max(cb + 1.0)
            }
            TL::Gen([s, b]) | TL::Sum([s, b]) => {
                let n = self.model.trip_of(self.egraph, *s);
                n * (costs(*b) + 1.0)
            }
            TL::RMax([s, b]) | TL::RMin([s, b]) => {
                let n = self.model.trip_of(self.egraph, *s);
                n * (costs(*b) + 1.0)
            }
            TL::Fold([s, _, a, b]) => {
                let n = self.model.trip_of(self.egraph, *s);
                costs(*a) + n * (costs(*b) + 1.0)
            }
            TL::Iv(_) | TL::Eps(_) => 1.0 + kids(&mut costs),
            TL::Pair(_) | TL::Fst(_) | TL::Snd(_) | TL::Let(_) => kids(&mut costs),
            n if node_func(n).is_some() => CALL_COST + kids(&mut costs),
            _ => 1.0 + kids(&mut costs),
        }
    }
}

/// The size of a term's multiplied-out form: sums add, products multiply,
/// `sum` multiplies by its trip count, leaves count one. Terms with a small
/// polynomial size are tensor networks that have been reduced (δ collapsed,
/// ε pairs contracted); the optimiser seeds its next round with the one of
/// smallest size, whose best contraction order [`crate::egraph::seed`]
/// then builds. Any other node counts as one plus its children.
pub struct PolySize<'a> {
    pub egraph: &'a TlGraph,
    pub model: &'a CostModel,
}

impl CostFunction<TL> for PolySize<'_> {
    type Cost = f64;
    fn cost<C>(&mut self, enode: &TL, mut costs: C) -> f64
    where
        C: FnMut(Id) -> f64,
    {
        match enode {
            TL::Add([a, b]) | TL::Sub([a, b]) => costs(*a) + costs(*b),
            // factors count at least 1, so a product is at least each factor
            TL::Mul([a, b]) => costs(*a).max(1.0) * costs(*b).max(1.0),
            TL::Neg([a]) => costs(*a),
            TL::Sum([s, b]) => {
                let n = self.model.trip_of(self.egraph, *s);
                n * costs(*b)
            }
            TL::Size(_) | TL::Aff(_) | TL::Pred(_) => 0.0,
            TL::Num(_) | TL::Var(_) | TL::Iv(_) | TL::Eps(_) => 1.0,
            TL::Get([t, _]) => costs(*t),
            _ => 1.0 + enode.children().iter().map(|c| costs(*c)).sum::<f64>(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(src: &str) -> f64 {
        let f = crate::load(src).unwrap().functions.remove(0);
        ir_cost(&f.body, &CostModel::default())
    }

    #[test]
    fn arithmetic_written_twice_in_one_body_is_paid_once() {
        // the JIT's value numbering computes x*x - y*y once
        let twice = cost("fn f(x: [n]R, y: [n]R) -> [n]R = gen(i:n) x[i] * x[i] - y[i] * y[i] + (x[i] * x[i] - y[i] * y[i])");
        let doubled =
            cost("fn f(x: [n]R, y: [n]R) -> [n]R = gen(i:n) (x[i] * x[i] - y[i] * y[i]) * 2");
        assert_eq!(twice, doubled);
        // the same subterm in two loops' bodies is paid in each
        let two_loops =
            cost("fn f(x: [n]R) -> [n]R = gen(i:n) (sum(j:n) x[j] * x[j]) + sum(k:n) x[k] * x[k]");
        let one_loop = cost("fn f(x: [n]R) -> [n]R = gen(i:n) 2 * sum(j:n) x[j] * x[j]");
        assert!(two_loops > one_loop, "{two_loops} {one_loop}");
    }

    #[test]
    fn calls_sums_and_branches_are_paid_where_they_run() {
        let calls = cost("fn f(x: [n]R) -> [n]R = gen(i:n) exp(x[i]) + exp(x[i])");
        let call = cost("fn f(x: [n]R) -> [n]R = gen(i:n) exp(x[i]) * 2");
        assert!(calls > call, "{calls} {call}");
        let sums = cost("fn f(A: [n,n]R) -> [n]R = gen(i:n) (sum(j:n) A[i, j]) + sum(j:n) A[i, j]");
        let sum = cost("fn f(A: [n,n]R) -> [n]R = gen(i:n) 2 * sum(j:n) A[i, j]");
        assert!(sums > sum, "{sums} {sum}");
        // a side of a where may reuse what was computed before it, but what
        // it computes is not reused after it (it may not have run)
        let before = cost("fn f(x: [n]R, y: [n]R) -> [n]R = gen(i:n) y[i] * y[i] + where(x[i] > 0, y[i] * y[i], 0)");
        let after = cost("fn f(x: [n]R, y: [n]R) -> [n]R = gen(i:n) where(x[i] > 0, y[i] * y[i], 0) + y[i] * y[i]");
        assert!(before < after, "{before} {after}");
    }

    #[test]
    fn a_let_body_does_not_reuse_a_shadowed_name() {
        // the inner w is another value: w * w is paid again
        let shadowed = cost(
            "fn f(x: [n]R) -> [n]R = gen(i:n) let w = x[i] in w * w + (let w = x[i] + 1 in w * w)",
        );
        let plain = cost(
            "fn f(x: [n]R) -> [n]R = gen(i:n) let w = x[i] in w * w + (let v = x[i] + 1 in w * w)",
        );
        assert!(shadowed >= plain, "{shadowed} {plain}");
        assert!(shadowed > cost("fn f(x: [n]R) -> [n]R = gen(i:n) let w = x[i] in w * w + w * w"));
    }
}
