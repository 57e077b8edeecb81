//! Extraction: the cost model ([`cost`]), picking a term out of the
//! saturated e-graph, tree-cost or DAG-aware ([`extract`]), and the deterministic post-pass that puts
//! it in normal form, hoists loop invariants and shares values ([`normal`]),
//! and the default mode's accuracy check of the candidates ([`accuracy`]).
//!
//! Unstable internal: cost model, extraction and the normal-form passes (the
//! optimiser for users is [`crate::opt`]).

pub mod accuracy;
pub mod cost;
#[allow(clippy::module_inception)]
pub mod extract;
pub mod normal;

pub use cost::{ir_cost, CostModel};
pub use extract::{extract_best, extract_reduced, Extraction};
pub use normal::{is_normal, normalize, NormalOptions};
