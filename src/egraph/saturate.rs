//! The saturation runner: all rule families in one egg `Runner`, with node,
//! iteration and time limits and a backoff scheduler (egg's
//! `BackoffScheduler`, reimplemented in [`Bounded`]) so that the
//! associativity/commutativity rules cannot drown the others. Hitting a limit
//! is not an error: the e-graph as it stands is returned and extraction
//! picks the best program found so far.
//!
//! egg checks its limits only between two rules' searches or applications,
//! and one rule's matches can add tens of thousands of nodes (a product of
//! 16 factors under associativity and commutativity went from under 12,000
//! to 50,844 nodes in one application). So [`Bounded`] also bounds the work
//! *inside* an iteration: each rule's search stops at a match limit, and
//! matches are applied a few at a time, stopping as soon as the e-graph has
//! passed the node limit or the deadline has passed. The e-graph thus ends
//! within a small factor of the node limit (the last few matches' nodes),
//! and saturation ends within a small margin of the time limit.

use super::{TlAnalysis, TL};
use egg::{
    Analysis, EGraph, Language, RecExpr, Rewrite, RewriteScheduler, Runner, SearchMatches,
    StopReason, Symbol,
};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::time::{Duration, Instant};

/// Limits of one saturation.
#[derive(Clone, Debug)]
pub struct Limits {
    pub node_limit: usize,
    pub iter_limit: usize,
    pub time_limit: Duration,
    /// Record explanations (slower).
    pub explain: bool,
    /// Use the backoff scheduler (else every rule every iteration).
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

impl Limits {
    /// The most matches of one rule applied in one iteration: the node
    /// limit (at least 1000). More could not all add nodes anyway, and
    /// searching for them costs time and memory.
    pub fn match_limit(&self) -> usize {
        self.node_limit.max(1000)
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

/// Matches applied at once between two checks of the limits.
const APPLY_CHUNK: usize = 8;

/// egg's backoff schedule of one rule.
#[derive(Clone, Debug, Default)]
struct RuleStats {
    banned_until: usize,
    times_banned: u32,
}

/// Why [`Bounded`] stopped applying matches in the middle of an iteration.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Cut {
    Nodes(usize),
    Time(f64),
}

/// The scheduler: egg's exponential backoff (a rule whose matches exceed
/// its threshold, 1000 doubled per earlier ban, is banned for 5 iterations
/// doubled per earlier ban; when only banned rules are left, bans are
/// shortened), or no backoff; in both cases a rule's matches are capped at
/// [`Limits::match_limit`] and applied in chunks, with the node limit and
/// the deadline checked between chunks.
pub struct Bounded {
    backoff: bool,
    stats: BTreeMap<Symbol, RuleStats>,
    match_limit: usize,
    node_limit: usize,
    start: Instant,
    deadline: Instant,
    /// Set when applying stopped early; shared with the runner's hook.
    cut: Rc<Cell<Option<Cut>>>,
    /// Some rule's matches were cut at the match limit this iteration (so
    /// the runner must not conclude it saturated).
    truncated_in: Option<usize>,
}

impl Bounded {
    fn new(limits: &Limits, start: Instant, cut: Rc<Cell<Option<Cut>>>) -> Bounded {
        Bounded {
            backoff: limits.backoff,
            stats: BTreeMap::new(),
            match_limit: limits.match_limit(),
            node_limit: limits.node_limit,
            start,
            deadline: start + limits.time_limit,
            cut,
            truncated_in: None,
        }
    }

    /// Whether a limit has been reached (and record which).
    fn over<L: Language, N: Analysis<L>>(&mut self, egraph: &EGraph<L, N>) -> bool {
        if self.cut.get().is_some() {
            return true;
        }
        let size = egraph.total_size();
        if size > self.node_limit {
            self.cut.set(Some(Cut::Nodes(size)));
            return true;
        }
        let now = Instant::now();
        if now >= self.deadline {
            self.cut
                .set(Some(Cut::Time((now - self.start).as_secs_f64())));
            return true;
        }
        false
    }
}

impl<L: Language, N: Analysis<L>> RewriteScheduler<L, N> for Bounded {
    fn can_stop(&mut self, iteration: usize) -> bool {
        if self.cut.get().is_some() || self.truncated_in == Some(iteration) {
            return false;
        }
        if !self.backoff {
            return true;
        }
        // egg's BackoffScheduler: fast-forward to the end of the shortest
        // ban, and saturation is only claimed when no rule is banned
        let min_ban = self
            .stats
            .values()
            .filter(|s| s.banned_until > iteration)
            .map(|s| s.banned_until)
            .min();
        match min_ban {
            None => true,
            Some(m) => {
                let delta = m - iteration;
                for s in self.stats.values_mut() {
                    if s.banned_until > iteration {
                        s.banned_until -= delta;
                    }
                }
                false
            }
        }
    }

    fn search_rewrite<'a>(
        &mut self,
        iteration: usize,
        egraph: &EGraph<L, N>,
        rewrite: &'a Rewrite<L, N>,
    ) -> Vec<SearchMatches<'a, L>> {
        if self.over(egraph) {
            return vec![];
        }
        let cap = self.match_limit;
        if !self.backoff {
            let mut ms = rewrite.search_with_limit(egraph, cap.saturating_add(1));
            if truncate(&mut ms, cap) {
                self.truncated_in = Some(iteration);
            }
            return ms;
        }
        let stats = self.stats.entry(rewrite.name).or_default();
        if iteration < stats.banned_until {
            return vec![];
        }
        let threshold = 1000usize.saturating_mul(pow2(stats.times_banned));
        let mut ms = rewrite.search_with_limit(egraph, threshold.min(cap).saturating_add(1));
        let total: usize = ms.iter().map(|m| m.substs.len()).sum();
        if total > threshold {
            let ban_length = 5usize.saturating_mul(pow2(stats.times_banned));
            stats.times_banned += 1;
            stats.banned_until = iteration.saturating_add(ban_length);
            return vec![];
        }
        if truncate(&mut ms, cap) {
            self.truncated_in = Some(iteration);
        }
        ms
    }

    fn apply_rewrite(
        &mut self,
        _iteration: usize,
        egraph: &mut EGraph<L, N>,
        rewrite: &Rewrite<L, N>,
        matches: Vec<SearchMatches<L>>,
    ) -> usize {
        let mut applied = 0;
        for m in matches {
            for chunk in m.substs.chunks(APPLY_CHUNK) {
                if self.over(egraph) {
                    return applied;
                }
                let part = SearchMatches {
                    eclass: m.eclass,
                    substs: chunk.to_vec(),
                    ast: m.ast.clone(),
                };
                applied += rewrite.apply(egraph, &[part]).len();
            }
        }
        applied
    }
}

/// 2^k, saturating.
fn pow2(k: u32) -> usize {
    1usize.checked_shl(k).unwrap_or(usize::MAX)
}

/// Keep at most `cap` matches; whether some were dropped.
fn truncate<L: Language>(ms: &mut Vec<SearchMatches<L>>, cap: usize) -> bool {
    let mut left = cap;
    let mut cut = false;
    ms.retain_mut(|m| {
        if left == 0 {
            cut = true;
            return false;
        }
        if m.substs.len() > left {
            m.substs.truncate(left);
            cut = true;
        }
        left -= m.substs.len();
        true
    });
    cut
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
    let start = Instant::now();
    let cut: Rc<Cell<Option<Cut>>> = Rc::new(Cell::new(None));
    let hook_cut = cut.clone();
    // egg's own limits are the same; its time limit is a backstop a little
    // later than the scheduler's deadline, which is checked more often
    let mut runner = Runner::new(analysis)
        .with_node_limit(limits.node_limit)
        .with_iter_limit(limits.iter_limit)
        .with_time_limit(limits.time_limit + Duration::from_millis(50))
        .with_scheduler(Bounded::new(limits, start, cut))
        .with_hook(move |_| match hook_cut.get() {
            None => Ok(()),
            Some(Cut::Nodes(n)) => Err(format!("node limit ({n})")),
            Some(Cut::Time(t)) => Err(format!("time limit ({t}s)")),
        });
    if limits.explain {
        runner = runner.with_explanations_enabled();
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
        seconds: start.elapsed().as_secs_f64(),
        fired,
    };
    (runner, stats)
}
