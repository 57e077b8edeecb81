//! The saturation runner: all rule families in one egg `Runner`, with node,
//! iteration and time limits and egg's `BackoffScheduler` so that the
//! associativity/commutativity rules cannot drown the others. Hitting a limit
//! is not an error: the e-graph as it stands is returned and extraction
//! picks the best program found so far.

use super::{TlAnalysis, TL};
use egg::{BackoffScheduler, RecExpr, Rewrite, Runner, StopReason};
use std::collections::BTreeMap;
use std::time::Duration;

/// Limits of one saturation.
#[derive(Clone, Debug)]
pub struct Limits {
    pub node_limit: usize,
    pub iter_limit: usize,
    pub time_limit: Duration,
    /// Record explanations (slower).
    pub explain: bool,
    /// Use the backoff scheduler (else egg's simple scheduler).
    pub backoff: bool,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            node_limit: 12_000,
            iter_limit: 12,
            time_limit: Duration::from_secs(5),
            explain: false,
            backoff: true,
        }
    }
}

/// What a saturation did.
#[derive(Clone, Debug, Default)]
pub struct SatStats {
    pub nodes: usize,
    pub classes: usize,
    pub iterations: usize,
    pub stop_reason: String,
    pub seconds: f64,
    /// How often each rule was applied (matches that were applied).
    pub fired: BTreeMap<String, usize>,
}

/// Saturate `expr` with `rules` under `limits`. Each of `seeds` is a term
/// known to equal `expr` (see [`super::seed`]) and joins its e-class first.
pub fn saturate(
    expr: &RecExpr<TL>,
    seeds: &[RecExpr<TL>],
    analysis: TlAnalysis,
    rules: &[Rewrite<TL, TlAnalysis>],
    limits: &Limits,
) -> (Runner<TL, TlAnalysis>, SatStats) {
    let mut runner = Runner::new(analysis)
        .with_node_limit(limits.node_limit)
        .with_iter_limit(limits.iter_limit)
        .with_time_limit(limits.time_limit);
    if limits.explain {
        runner = runner.with_explanations_enabled();
    }
    if limits.backoff {
        runner = runner.with_scheduler(BackoffScheduler::default());
    } else {
        runner = runner.with_scheduler(egg::SimpleScheduler);
    }
    let mut runner = runner.with_expr(expr);
    let root = runner.roots[0];
    for s in seeds {
        let id = runner.egraph.add_expr(s);
        runner
            .egraph
            .union_trusted(root, id, "contraction-order seed");
    }
    runner.egraph.rebuild();
    let runner = runner.run(rules);
    let mut fired = BTreeMap::new();
    for it in &runner.iterations {
        for (name, n) in &it.applied {
            *fired.entry(name.to_string()).or_insert(0) += n;
        }
    }
    let stop_reason = match &runner.stop_reason {
        Some(StopReason::Saturated) => "saturated".to_string(),
        Some(StopReason::IterationLimit(n)) => format!("iteration limit ({n})"),
        Some(StopReason::NodeLimit(n)) => format!("node limit ({n})"),
        Some(StopReason::TimeLimit(t)) => format!("time limit ({t}s)"),
        Some(StopReason::Other(s)) => s.clone(),
        None => "not run".to_string(),
    };
    let stats = SatStats {
        nodes: runner.egraph.total_number_of_nodes(),
        classes: runner.egraph.number_of_classes(),
        iterations: runner.iterations.len(),
        stop_reason,
        seconds: runner.iterations.iter().map(|i| i.total_time).sum(),
        fired,
    };
    (runner, stats)
}
