//! Extraction of the cheapest term of an e-class under [`TlCost`].

use super::cost::{CostModel, PolySize, TlCost};
use crate::egraph::{TlGraph, TL};
use egg::{Extractor, Id, RecExpr};

/// The cheapest term of class `root` and its cost.
pub fn extract_best(egraph: &TlGraph, root: Id, model: &CostModel) -> (f64, RecExpr<TL>) {
    let ex = Extractor::new(egraph, TlCost { egraph, model });
    ex.find_best(root)
}

/// The term of class `root` whose multiplied-out form is smallest
/// ([`PolySize`]).
pub fn extract_reduced(egraph: &TlGraph, root: Id, model: &CostModel) -> RecExpr<TL> {
    let ex = Extractor::new(egraph, PolySize { egraph, model });
    ex.find_best(root).1
}
