//! Contraction planning: the order in which a sum over a product of tensor
//! accesses (an einsum, or any sum-of-products nest) is contracted, one pair
//! of tensors at a time.
//!
//! The input is a [`Network`]: each input tensor as a list of index ids, the
//! output's index ids and a size per index. Indices may be hyperedges (in
//! three or more tensors, or in tensors and the output: batch indices);
//! indices in only one tensor and not in the output are summed first, by a
//! one-operand step; scalars (no indices) and disconnected parts (outer
//! products) are allowed; index ids are `usize`, any number of them.
//!
//! [`plan`] returns a [`Plan`]: the contraction tree as steps in SSA form
//! (inputs are `0..n`, step `k` makes `n + k`) and in numpy's linear form
//! ([`Plan::linear_path`]), with per step the indices kept and summed, its
//! cost and the size of what it makes, and the totals. Costs are counted
//! both as multiply-adds (a pairwise step costs the product of the sizes of
//! the union of its operands' indices) and in opt_einsum's convention
//! (`flop_count`: that product times 2 when the step sums an index), so
//! figures compare like for like with opt_einsum and cotengra; which one the
//! search minimises is [`Options::convention`].
//!
//! Methods ([`Method`]):
//! - `Optimal` ([`dp`]): dynamic programming over subsets. Up to
//!   [`dp::ALL_SUBSETS_MAX`] tensors every pairwise tree is searched, outer
//!   products included (exact); above it, over connected subsets with a cost
//!   cap that grows until a tree is found (opt_einsum's `dp`: exact among
//!   trees without outer products inside a connected part).
//! - `Greedy` ([`greedy`]): opt_einsum's greedy (cost = size(out) − size(a)
//!   − size(b), ties by id) and random restarts with Gumbel noise, the best
//!   kept.
//! - `Hyper` ([`partition`]): recursive bisection of the hypergraph
//!   (Fiduccia–Mattheyses with random starts), exact DP or greedy at the
//!   leaves, then subtree reconfiguration (exact DP on subtrees of 8
//!   leaves); greedy restarts compete.
//! - `Auto`: exact DP for small networks (every network of up to
//!   [`dp::ALL_SUBSETS_MAX`] tensors gets the optimal cost); beyond, hyper,
//!   then the connected DP within a work budget (taken where cheaper).
//!
//! A memory limit ([`MemoryLimit`], default: the largest argument or
//! result, or 2^27 elements, whichever is larger) bounds every tensor a step
//! makes. The search first looks for a tree within the limit; where none is
//! found (or where recomputation is cheaper), indices are sliced
//! ([`slice`](mod@slice)): the plan loops over them, recomputing the steps that do not
//! use them, and says so ([`Plan::sliced`]).
//!
//! Everything is deterministic for a given [`Options::seed`] (unless a
//! [`Options::time_budget`] cuts a search short).

pub mod dp;
pub mod greedy;
pub mod model;
pub mod networks;
pub mod partition;
pub(crate) mod prepared;
pub mod slice;
pub(crate) mod tree;

pub use model::{Convention, MemoryLimit, Method, Network, Options, Plan, PlanError, Step};
use model::{Ctx, Local};
use prepared::Prepared;
use std::time::Instant;

/// Plan the contraction of `net`.
pub fn plan(net: &Network, opts: &Options) -> Result<Plan, PlanError> {
    let start = Instant::now();
    let limit = match opts.memory_limit {
        MemoryLimit::Unlimited => f64::INFINITY,
        MemoryLimit::Elements(e) if e < 1.0 || e.is_nan() => return Err(PlanError::ZeroLimit),
        MemoryLimit::Elements(e) => e,
        MemoryLimit::Default => {
            let largest = (0..net.inputs().len())
                .map(|t| net.input_size(t))
                .fold(net.output_size(), f64::max);
            largest.max((1u64 << 27) as f64)
        }
    };
    let pre = Prepared::new(net, opts.convention, limit);
    let ctx = Ctx {
        opts,
        start,
        rng_seed: opts.seed,
    };
    let (mut method, merges) = search(&pre.local, &ctx)?;
    let mut steps = pre.steps_with(&merges);
    let mut sliced_local = Vec::new();
    let max_size = steps.iter().map(|s| s.size).fold(0.0, f64::max);
    if max_size > limit {
        // no tree within the limit was found: slice it, or the tree
        // searched without the limit, whichever then costs less
        let mut trees = vec![merges];
        let mut methods = vec![method];
        if opts.method != Method::Optimal {
            let free = Local {
                limit: f64::INFINITY,
                ..pre.local.clone()
            };
            let (m, t) = search(&free, &ctx)?;
            methods.push(m);
            trees.push(t);
        }
        let (k, best_steps, sl) = slice::best_slicing(&pre, &trees, limit);
        method = methods[k];
        steps = best_steps;
        sliced_local = sl;
    }
    Ok(pre.finish(method, steps, &sliced_local, limit, start))
}

/// The plan of `net` that contracts it in the order `path` gives, in
/// numpy's linear form (as `einsum_path` returns it and opt_einsum takes
/// it): each entry lists positions in the current list of tensors, which
/// loses them and gains their contraction at its end. An entry of one
/// position only sums that tensor's own indices (done anyway), an entry of
/// more than two contracts them left to right; tensors left at the end are
/// contracted in order. Costs as [`plan`] counts them; no search, no
/// slicing (the memory limit is reported, not enforced).
pub fn plan_path(net: &Network, path: &[Vec<usize>], opts: &Options) -> Result<Plan, PlanError> {
    let start = Instant::now();
    let pre = Prepared::new(net, opts.convention, f64::INFINITY);
    let n = net.inputs().len();
    // the current list, as leaf/merge ids of the tree over the leaves
    let mut current: Vec<usize> = (0..n).collect();
    let mut merges: Vec<(usize, usize)> = Vec::new();
    for (k, entry) in path.iter().enumerate() {
        if entry.is_empty() {
            return Err(PlanError::Path(format!("step {k} lists no tensor")));
        }
        let mut seen = entry.clone();
        seen.sort_unstable();
        seen.dedup();
        if seen.len() != entry.len() {
            return Err(PlanError::Path(format!("step {k} lists a tensor twice")));
        }
        if let Some(bad) = entry.iter().find(|&&p| p >= current.len()) {
            return Err(PlanError::Path(format!(
                "step {k} names position {bad}, but {} tensors are left",
                current.len()
            )));
        }
        let ids: Vec<usize> = entry.iter().map(|&p| current[p]).collect();
        let mut del = entry.clone();
        del.sort_unstable_by(|a, b| b.cmp(a));
        for p in del {
            current.remove(p);
        }
        let mut acc = ids[0];
        for &id in &ids[1..] {
            merges.push((acc, id));
            acc = n + merges.len() - 1;
        }
        current.push(acc);
    }
    while current.len() > 1 {
        let (a, b) = (current.remove(0), current.remove(0));
        merges.push((a, b));
        current.push(n + merges.len() - 1);
    }
    let steps = pre.steps_with(&merges);
    let limit = match opts.memory_limit {
        MemoryLimit::Elements(e) => e,
        _ => f64::INFINITY,
    };
    Ok(pre.finish(Method::Given, steps, &[], limit, start))
}

/// Networks with up to this many leaves get the exact all-subsets DP from
/// `Auto`.
pub const AUTO_EXACT: usize = dp::ALL_SUBSETS_MAX;

/// The method's tree over the leaves.
fn search(local: &Local, ctx: &Ctx) -> Result<(Method, Vec<(usize, usize)>), PlanError> {
    let n = local.leaves.len();
    if n <= 1 {
        return Ok((ctx.opts.method, Vec::new()));
    }
    match ctx.opts.method {
        Method::Optimal => Ok((Method::Optimal, dp::optimal(local, None)?)),
        Method::Greedy => {
            let trials = ctx.opts.greedy_trials.unwrap_or(greedy_trials_for(n));
            Ok((Method::Greedy, greedy::best_of(local, trials, ctx)))
        }
        Method::Hyper => Ok((Method::Hyper, partition::hyper(local, ctx))),
        Method::Auto => Ok(auto(local, ctx)),
        Method::Given => Err(PlanError::Path(
            "the `Given` method takes its path from `plan_path`".into(),
        )),
    }
}

/// Greedy runs by network size.
fn greedy_trials_for(n: usize) -> usize {
    match n {
        0..=20 => 32,
        21..=100 => 64,
        _ => 32,
    }
}

fn auto(local: &Local, ctx: &Ctx) -> (Method, Vec<(usize, usize)>) {
    let n = local.leaves.len();
    if n <= AUTO_EXACT {
        if let Ok(m) = dp::optimal(local, None) {
            return (Method::Optimal, m);
        }
    }
    // hyper (greedy restarts included), then the connected DP within a work
    // budget, given up once its cost cap passes hyper's cost
    let best = partition::hyper(local, ctx);
    let best_cost = tree::cost_within(local, &best);
    if n <= dp::CONNECTED_MAX {
        let budget = dp::Budget {
            pairs: dp_pairs_for(n),
            cost: best_cost,
        };
        if let Ok(m) = dp::optimal(local, Some(budget)) {
            if tree::cost_within(local, &m) < best_cost {
                return (Method::Optimal, m);
            }
        }
    }
    (Method::Hyper, best)
}

/// The connected DP's work budget in `Auto` (pairs of subsets examined).
fn dp_pairs_for(n: usize) -> u64 {
    if n <= 24 {
        1_000_000
    } else {
        4_000_000
    }
}

#[cfg(test)]
mod tests;
