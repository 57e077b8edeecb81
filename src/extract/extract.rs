//! Extraction of the cheapest term of an e-class: tree-cost ([`TlCost`],
//! [`tree_choices`]) and DAG-aware ([`dag_choices`]), compared under the
//! scoped DAG cost ([`scoped_cost`]) of the terms they build.
//!
//! **Scoped sharing.** Tree cost pays a subterm at every use. The DAG cost
//! pays a *shareable* subterm — a scalar function call, a division, a `sum`
//! or a `gen`, the values the post-pass ([`super::normal`]) computes once
//! as a `let` when they occur twice — once per scope: a loop body is one
//! scope, and a `gen`/`sum` closes it, so a value shared inside a loop
//! body costs once per iteration of that loop, not once per program (the
//! De Bruijn e-graph gives a subterm under two different loops the same
//! class; the post-pass can only share it within one scalar). The body's
//! shareable values that do not use the loop's index (`#0`) are what the
//! post-pass hoists out of the loop: they cost once, not once per trip.
//! Everything else (loads, `+ - *`, brackets) is paid at every use, as in
//! the tree cost.
//!
//! **Greedy DAG extraction** (as `faster-greedy-dag` of egg's
//! extraction-gym): each class keeps the node whose cost set (shareable
//! classes of its scope with their cost, plus the unshared rest) has the
//! smallest total; a class is revisited when a child improves, and only a
//! strictly cheaper node replaces its choice. Classes are visited in id
//! order from a `BTreeSet` worklist, so the result is deterministic.
//! [`extract_best`] builds the tree-cost term and the DAG term and keeps
//! the one of smaller scoped cost (the tree term on a tie); on an e-graph
//! larger than [`DAG_NODE_LIMIT`] only the tree term.
//!
//! Terms are built from the choices by an explicit depth-first walk that
//! detects a cycle among the choices (egg's own `find_best` would loop,
//! allocating, forever). The tree cost functions of [`super::cost`] are
//! monotone, so there is no cycle there; a DAG choice may go stale (a
//! child's later choice need not fit its parent's), and a cycle makes the
//! DAG term unavailable, never a hang: the tree term is used.

use super::cost::{CostModel, PolySize, TlCost, CALL_COST, GEMM_FACTOR};
use crate::egraph::{node_func, node_red, TlGraph, TL};
use egg::{CostFunction, Id, Language, RecExpr};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The classes of the term of `root` made of `choice`'s nodes, children
/// before parents, each once; `None` when the choices lead in a cycle or a
/// class has no choice.
fn post_order<'a>(
    egraph: &TlGraph,
    root: Id,
    choice: &dyn Fn(Id) -> Option<&'a TL>,
) -> Option<Vec<Id>> {
    let mut order = Vec::new();
    let mut done: BTreeSet<Id> = BTreeSet::new();
    // the classes on the path from the root to the class being expanded
    let mut path: BTreeSet<Id> = BTreeSet::new();
    let mut stack: Vec<(Id, bool)> = vec![(egraph.find(root), false)];
    while let Some((c, expanded)) = stack.pop() {
        if done.contains(&c) {
            continue;
        }
        let node = choice(c)?;
        if !expanded {
            if !path.insert(c) {
                return None;
            }
            stack.push((c, true));
            for ch in node.children() {
                let ch = egraph.find(*ch);
                if !done.contains(&ch) {
                    stack.push((ch, false));
                }
            }
        } else {
            path.remove(&c);
            done.insert(c);
            order.push(c);
        }
    }
    Some(order)
}

/// The term of class `root` made of `choice`'s nodes, each class once
/// (shared), or `None` (see `post_order`).
pub fn build_from<'a>(
    egraph: &TlGraph,
    root: Id,
    choice: &dyn Fn(Id) -> Option<&'a TL>,
) -> Option<RecExpr<TL>> {
    let order = post_order(egraph, root, choice)?;
    let mut out = RecExpr::default();
    let mut done: HashMap<Id, Id> = HashMap::new();
    for c in order {
        let n = choice(c)?.clone().map_children(|ch| done[&egraph.find(ch)]);
        done.insert(c, out.add(n));
    }
    Some(out)
}

/// Tree-cost choices: for each class its node of least tree cost under a
/// cost function. Found by a worklist in class-id order (a class is
/// revisited when a child's cost improves), as [`dag_choices`] does: egg's
/// own extractor sweeps every class until nothing changes, which takes as
/// many sweeps as the e-graph is deep (a product of 11,000 factors made
/// that quadratic, seconds past any time limit).
pub struct TreeChoices<C> {
    best: HashMap<Id, (C, TL)>,
}

impl<C: Clone> TreeChoices<C> {
    /// The cheapest node of class `c`.
    pub fn node(&self, c: Id) -> Option<&TL> {
        self.best.get(&c).map(|b| &b.1)
    }
    /// The tree cost of class `c`.
    pub fn cost(&self, c: Id) -> Option<C> {
        self.best.get(&c).map(|b| b.0.clone())
    }
}

/// [`TreeChoices`] of every class of `egraph` under `cf`.
pub fn tree_choices<CF: CostFunction<TL>>(egraph: &TlGraph, mut cf: CF) -> TreeChoices<CF::Cost> {
    let mut ids: Vec<Id> = egraph.classes().map(|c| c.id).collect();
    ids.sort_unstable();
    let mut parents: HashMap<Id, BTreeSet<Id>> = HashMap::new();
    for &c in &ids {
        for n in &egraph[c].nodes {
            for ch in n.children() {
                parents.entry(egraph.find(*ch)).or_default().insert(c);
            }
        }
    }
    let mut best: HashMap<Id, (CF::Cost, TL)> = HashMap::new();
    let mut work: BTreeSet<Id> = ids.iter().copied().collect();
    while let Some(c) = work.pop_first() {
        let mut improved = false;
        for n in &egraph[c].nodes {
            if !n
                .children()
                .iter()
                .all(|ch| best.contains_key(&egraph.find(*ch)))
            {
                continue;
            }
            let cost = cf.cost(n, |ch| best[&egraph.find(ch)].0.clone());
            if best
                .get(&c)
                .is_none_or(|b| cost.partial_cmp(&b.0) == Some(std::cmp::Ordering::Less))
            {
                best.insert(c, (cost, n.clone()));
                improved = true;
            }
        }
        if improved {
            if let Some(ps) = parents.get(&c) {
                work.extend(ps.iter().copied());
            }
        }
    }
    TreeChoices { best }
}

/// The term of class `root` made of the chosen nodes, each class once
/// (shared), or `None` when the choices lead in a cycle.
pub fn build_term<C: Clone>(
    ex: &TreeChoices<C>,
    egraph: &TlGraph,
    root: Id,
) -> Option<RecExpr<TL>> {
    build_from(egraph, root, &|c| ex.node(egraph.find(c)))
}

/// The scoped DAG cost of a choice (see the module documentation).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DagCost {
    /// Shareable classes of the current scope, each with the cost of
    /// computing it once (its unshared subterms included).
    pub shared: BTreeMap<Id, f64>,
    /// The cost of the rest, paid at every use.
    pub private: f64,
}

impl DagCost {
    /// The whole cost: every shared value once, plus the rest.
    pub fn total(&self) -> f64 {
        self.private + self.shared.values().sum::<f64>()
    }

    fn absorb(&mut self, other: &DagCost) {
        self.private += other.private;
        for (k, v) in &other.shared {
            self.shared.entry(*k).or_insert(*v);
        }
    }
}

/// The scoped DAG cost of node `node` of class `class`, given its
/// children's costs (`None` when a child has none yet). `tl` is the
/// e-graph's cost (its memo of plain loads lasts as long as it does: one
/// per extraction).
pub fn node_dag_cost<'c>(
    tl: &TlCost<'_>,
    class: Id,
    node: &TL,
    child: impl Fn(Id) -> Option<&'c DagCost>,
) -> Option<DagCost> {
    let (egraph, model) = (tl.egraph, tl.model);
    let mut kids = DagCost::default();
    let loop_node =
        matches!(node, TL::Gen(_) | TL::Sum(_) | TL::Fold(_)) || node_red(node).is_some();
    if !loop_node {
        for ch in node.children() {
            kids.absorb(child(egraph.find(*ch))?);
        }
    }
    let shared_op = |own: f64, mut kids: DagCost| {
        let once = own + kids.private;
        kids.private = 0.0;
        kids.shared.insert(class, once);
        kids
    };
    Some(match node {
        TL::Num(_) | TL::Var(_) | TL::Size(_) | TL::Aff(_) | TL::Pred(_) => DagCost::default(),
        TL::Gen([s, b]) | TL::Sum([s, b]) | TL::RMax([s, b]) | TL::RMin([s, b]) => {
            let body = child(egraph.find(*b))?;
            let n = model.trip_of(egraph, *s);
            // values that do not use the loop's index are hoisted out of it
            let mut variant = body.private;
            let mut invariant = 0.0;
            for (c, v) in &body.shared {
                if egraph[*c].data.fv & 1 == 0 {
                    invariant += v;
                } else {
                    variant += v;
                }
            }
            let cost = if matches!(node, TL::Sum(_)) && tl.gemm_product(*b) {
                (n * (GEMM_FACTOR * variant + 1.0)).max(variant + 1.0)
            } else {
                n * (variant + 1.0)
            };
            let mut r = DagCost::default();
            r.shared.insert(class, cost + invariant);
            r
        }
        TL::Fold([s, _, a, b]) => {
            // nothing is hoisted out of a fold's body (it may read the
            // accumulator): every step pays all of it
            let body = child(egraph.find(*b))?;
            let mut r = child(egraph.find(*a))?.clone();
            let n = model.trip_of(egraph, *s);
            let step = body.private + body.shared.values().sum::<f64>();
            r.shared.insert(class, n * (step + 1.0));
            r
        }
        n if node_func(n).is_some() => shared_op(CALL_COST, kids),
        TL::Div(_) => shared_op(1.0, kids),
        TL::Pair(_) | TL::Fst(_) | TL::Snd(_) | TL::Let(_) => kids,
        _ => {
            kids.private += 1.0;
            kids
        }
    })
}

/// The scoped DAG cost of the term of `root` made of `choice`'s nodes
/// (`None`: see `post_order`).
pub fn scoped_cost<'a>(
    egraph: &TlGraph,
    model: &CostModel,
    root: Id,
    choice: &dyn Fn(Id) -> Option<&'a TL>,
) -> Option<f64> {
    let order = post_order(egraph, root, choice)?;
    let tl = TlCost::new(egraph, model);
    let mut costs: BTreeMap<Id, DagCost> = BTreeMap::new();
    for c in order {
        let d = node_dag_cost(&tl, c, choice(c)?, |ch| costs.get(&ch))?;
        costs.insert(c, d);
    }
    costs.get(&egraph.find(root)).map(DagCost::total)
}

/// Greedy DAG-aware choices: for each class the node of smallest scoped
/// DAG cost found (see the module documentation), by class.
pub fn dag_choices(egraph: &TlGraph, model: &CostModel) -> BTreeMap<Id, TL> {
    let mut ids: Vec<Id> = egraph.classes().map(|c| c.id).collect();
    ids.sort_unstable();
    let mut parents: BTreeMap<Id, BTreeSet<Id>> = BTreeMap::new();
    for &c in &ids {
        for n in &egraph[c].nodes {
            for ch in n.children() {
                parents.entry(egraph.find(*ch)).or_default().insert(c);
            }
        }
    }
    let tl = TlCost::new(egraph, model);
    let mut best: BTreeMap<Id, (f64, DagCost, TL)> = BTreeMap::new();
    let mut work: BTreeSet<Id> = ids.iter().copied().collect();
    // every update is strictly cheaper; the budget only guards against a
    // long tail of tiny improvements
    let mut budget = 64 * ids.len() + 1024;
    while let Some(c) = work.pop_first() {
        if budget == 0 {
            break;
        }
        budget -= 1;
        let mut improved = false;
        for n in &egraph[c].nodes {
            if n.children().iter().any(|ch| egraph.find(*ch) == c) {
                continue;
            }
            let Some(d) = node_dag_cost(&tl, c, n, |ch| best.get(&ch).map(|b| &b.1)) else {
                continue;
            };
            let t = d.total();
            if best.get(&c).is_none_or(|b| t < b.0) {
                best.insert(c, (t, d, n.clone()));
                improved = true;
            }
        }
        if improved {
            if let Some(ps) = parents.get(&c) {
                work.extend(ps.iter().copied());
            }
        }
    }
    best.into_iter().map(|(c, (_, _, n))| (c, n)).collect()
}

/// The largest e-graph (in e-nodes) that [`extract_best`] runs the greedy
/// DAG extractor on; a larger one (the ε-ε programs that stop on a limit
/// near 11,000 nodes) keeps the tree-cost term, priced by its scoped cost:
/// the DAG pass costs a set union per node and update, which there would
/// add a sizeable share to the optimise time.
pub const DAG_NODE_LIMIT: usize = 4000;

/// How [`extract_best`] picks a term.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Extraction {
    /// Tree cost only (egg's extractor): a subterm is paid at every use.
    Tree,
    /// The tree-cost term or the greedy DAG term, whichever has the
    /// smaller scoped DAG cost.
    #[default]
    Dag,
}

/// The cheapest term of class `root` and its cost (`None`: see
/// [`build_term`]). With [`Extraction::Dag`] the cost is the term's scoped
/// DAG cost ([`scoped_cost`]); with [`Extraction::Tree`] its tree cost.
pub fn extract_best(
    egraph: &TlGraph,
    root: Id,
    model: &CostModel,
    how: Extraction,
) -> Option<(f64, RecExpr<TL>)> {
    let ex = tree_choices(egraph, TlCost::new(egraph, model));
    if how == Extraction::Tree {
        let cost = ex.cost(egraph.find(root))?;
        return build_term(&ex, egraph, root).map(|t| (cost, t));
    }
    let tree_choice = |c: Id| ex.node(egraph.find(c));
    let tree = scoped_cost(egraph, model, root, &tree_choice);
    if egraph.total_number_of_nodes() > DAG_NODE_LIMIT {
        return build_from(egraph, root, &tree_choice).and_then(|e| tree.map(|t| (t, e)));
    }
    let choices = dag_choices(egraph, model);
    let dag_choice = |c: Id| choices.get(&egraph.find(c));
    let dag = scoped_cost(egraph, model, root, &dag_choice);
    match (tree, dag) {
        (Some(t), Some(d)) if d < t => build_from(egraph, root, &dag_choice).map(|e| (d, e)),
        (Some(t), _) => build_from(egraph, root, &tree_choice).map(|e| (t, e)),
        (None, Some(d)) => build_from(egraph, root, &dag_choice).map(|e| (d, e)),
        (None, None) => None,
    }
}

/// The term of class `root` whose multiplied-out form is smallest
/// ([`PolySize`]).
pub fn extract_reduced(egraph: &TlGraph, root: Id, model: &CostModel) -> Option<RecExpr<TL>> {
    let ex = tree_choices(egraph, PolySize { egraph, model });
    build_term(&ex, egraph, root)
}

/// The number of nodes of `e` written out as a tree (shared subterms counted
/// at every use), saturating: what converting it to a named expression
/// builds.
pub fn tree_size(e: &RecExpr<TL>) -> usize {
    let mut size: Vec<usize> = Vec::with_capacity(e.as_ref().len());
    for n in e.as_ref() {
        let s = n
            .children()
            .iter()
            .fold(1usize, |acc, c| acc.saturating_add(size[usize::from(*c)]));
        size.push(s);
    }
    size.last().copied().unwrap_or(0)
}
