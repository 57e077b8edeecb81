//! Extraction of the cheapest term of an e-class under [`TlCost`].
//!
//! The term is built from the extractor's choice in each class by an
//! explicit depth-first walk that detects a cycle among the choices (egg's
//! own `find_best` would loop, allocating, forever). The cost functions of
//! [`super::cost`] are monotone, so there is no cycle; the check turns a
//! future non-monotone cost into a failed extraction instead of a hang.

use super::cost::{CostModel, PolySize, TlCost};
use crate::egraph::{TlAnalysis, TlGraph, TL};
use egg::{CostFunction, Extractor, Id, Language, RecExpr};
use std::collections::{HashMap, HashSet};

/// The term of class `root` made of `ex`'s chosen nodes, each class once
/// (shared), or `None` when the choices lead in a cycle.
pub fn build_term<CF: CostFunction<TL>>(
    ex: &Extractor<'_, CF, TL, TlAnalysis>,
    egraph: &TlGraph,
    root: Id,
) -> Option<RecExpr<TL>> {
    let mut out = RecExpr::default();
    let mut done: HashMap<Id, Id> = HashMap::new();
    // the classes on the path from the root to the class being expanded
    let mut path: HashSet<Id> = HashSet::new();
    let mut stack: Vec<(Id, bool)> = vec![(egraph.find(root), false)];
    while let Some((c, expanded)) = stack.pop() {
        if done.contains_key(&c) {
            continue;
        }
        let node = ex.find_best_node(c);
        if !expanded {
            if !path.insert(c) {
                return None;
            }
            stack.push((c, true));
            for ch in node.children() {
                let ch = egraph.find(*ch);
                if !done.contains_key(&ch) {
                    stack.push((ch, false));
                }
            }
        } else {
            path.remove(&c);
            let n = node.clone().map_children(|ch| done[&egraph.find(ch)]);
            let id = out.add(n);
            done.insert(c, id);
        }
    }
    Some(out)
}

/// The cheapest term of class `root` and its cost (`None`: see
/// [`build_term`]).
pub fn extract_best(egraph: &TlGraph, root: Id, model: &CostModel) -> Option<(f64, RecExpr<TL>)> {
    let ex = Extractor::new(egraph, TlCost { egraph, model });
    let cost = ex.find_best_cost(root);
    build_term(&ex, egraph, root).map(|t| (cost, t))
}

/// The term of class `root` whose multiplied-out form is smallest
/// ([`PolySize`]).
pub fn extract_reduced(egraph: &TlGraph, root: Id, model: &CostModel) -> Option<RecExpr<TL>> {
    let ex = Extractor::new(egraph, PolySize { egraph, model });
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
