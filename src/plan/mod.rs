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
//! ([`slice`]): the plan loops over them, recomputing the steps that do not
//! use them, and says so ([`Plan::sliced`]).
//!
//! Everything is deterministic for a given [`Options::seed`] (unless a
//! [`Options::time_budget`] cuts a search short).

pub mod dp;
pub mod greedy;
pub mod networks;
pub mod partition;
pub mod slice;
pub(crate) mod tree;

use serde::Serialize;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use tree::Tree;

/// A tensor network: the inputs' index ids, the output's, a size per id.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Network {
    inputs: Vec<Vec<usize>>,
    output: Vec<usize>,
    sizes: Vec<u64>,
}

/// Why a network or a request could not be planned.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// A network needs at least one input.
    #[error("a contraction needs at least one input tensor")]
    NoInputs,
    /// An index id has no size.
    #[error("index {index} of {place} has no size (there are sizes for ids 0..{sizes})")]
    UnknownIndex {
        /// The id.
        index: usize,
        /// `input N` or `the output`.
        place: String,
        /// How many sizes were given.
        sizes: usize,
    },
    /// An output index is in no input.
    #[error("output index {0} is in no input")]
    OutputNotInInputs(usize),
    /// An output index is listed twice.
    #[error("output index {0} is listed twice")]
    DuplicateOutput(usize),
    /// A memory limit below one element.
    #[error("the memory limit must be at least one element")]
    ZeroLimit,
    /// The exact method was asked for a connected part too large for it.
    #[error("the optimal method handles at most {max} tensors in a connected part, this one has {got}; use greedy, hyper or auto")]
    TooLargeForOptimal {
        /// Tensors in the largest connected part.
        got: usize,
        /// The most `optimal` accepts.
        max: usize,
    },
    /// An einsum specification that [`Network::from_spec`] cannot read.
    #[error("einsum spec: {0}")]
    Spec(String),
    /// A path ([`plan_path`]) that does not contract the network.
    #[error("contraction path: {0}")]
    Path(String),
}

impl Network {
    /// A network of `inputs` (index ids of each input), `output` (the
    /// result's index ids, each at most once, each in some input) and
    /// `sizes` (the size of index id `i` is `sizes[i]`). An id repeated
    /// within one input is one index of that tensor (a diagonal is the
    /// caller's business).
    pub fn new(
        inputs: Vec<Vec<usize>>,
        output: Vec<usize>,
        sizes: Vec<u64>,
    ) -> Result<Network, PlanError> {
        if inputs.is_empty() {
            return Err(PlanError::NoInputs);
        }
        let n = sizes.len();
        for (t, ix) in inputs.iter().enumerate() {
            if let Some(&i) = ix.iter().find(|&&i| i >= n) {
                return Err(PlanError::UnknownIndex {
                    index: i,
                    place: format!("input {t}"),
                    sizes: n,
                });
            }
        }
        let mut seen = vec![false; n];
        let mut in_input = vec![false; n];
        for ix in &inputs {
            for &i in ix {
                in_input[i] = true;
            }
        }
        for &i in &output {
            if i >= n {
                return Err(PlanError::UnknownIndex {
                    index: i,
                    place: "the output".into(),
                    sizes: n,
                });
            }
            if seen[i] {
                return Err(PlanError::DuplicateOutput(i));
            }
            seen[i] = true;
            if !in_input[i] {
                return Err(PlanError::OutputNotInInputs(i));
            }
        }
        Ok(Network {
            inputs,
            output,
            sizes,
        })
    }

    /// A network from an einsum specification in numpy's grammar without
    /// ellipses (`"ab,bc->ac"`; without `->` the output is the letters used
    /// once, in alphabetical order) and the size of each letter. Index ids
    /// are the letters' code points.
    pub fn from_spec(spec: &str, size: impl Fn(char) -> u64) -> Result<Network, PlanError> {
        let spec: String = spec.chars().filter(|c| !c.is_whitespace()).collect();
        let (lhs, rhs) = match spec.split_once("->") {
            Some((l, r)) => (l.to_string(), Some(r.to_string())),
            None => (spec.clone(), None),
        };
        let bad = |c: char| !c.is_alphabetic() && c != ',';
        if let Some(c) = lhs.chars().find(|&c| bad(c)) {
            return Err(PlanError::Spec(format!("unexpected character `{c}`")));
        }
        let inputs: Vec<Vec<usize>> = lhs
            .split(',')
            .map(|t| t.chars().map(|c| c as usize).collect())
            .collect();
        let output: Vec<usize> = match rhs {
            Some(r) => {
                if let Some(c) = r.chars().find(|c| !c.is_alphabetic()) {
                    return Err(PlanError::Spec(format!(
                        "unexpected character `{c}` in the output"
                    )));
                }
                r.chars().map(|c| c as usize).collect()
            }
            None => {
                let mut count: BTreeMap<usize, usize> = BTreeMap::new();
                for t in &inputs {
                    for &c in t {
                        *count.entry(c).or_default() += 1;
                    }
                }
                count
                    .into_iter()
                    .filter(|&(_, k)| k == 1)
                    .map(|(c, _)| c)
                    .collect()
            }
        };
        let top = inputs
            .iter()
            .flatten()
            .chain(&output)
            .copied()
            .max()
            .unwrap_or(0);
        let sizes = (0..=top)
            .map(|c| char::from_u32(c as u32).map(&size).unwrap_or(1))
            .collect();
        Network::new(inputs, output, sizes)
    }

    /// The inputs' index ids, as given.
    pub fn inputs(&self) -> &[Vec<usize>] {
        &self.inputs
    }

    /// The output's index ids, as given.
    pub fn output(&self) -> &[usize] {
        &self.output
    }

    /// The size of each index id.
    pub fn sizes(&self) -> &[u64] {
        &self.sizes
    }

    /// Elements of input `t` (1 for a scalar).
    pub fn input_size(&self, t: usize) -> f64 {
        dedup(&self.inputs[t])
            .iter()
            .map(|&i| self.sizes[i] as f64)
            .product()
    }

    /// Elements of the result.
    pub fn output_size(&self) -> f64 {
        self.output.iter().map(|&i| self.sizes[i] as f64).product()
    }
}

fn dedup(ix: &[usize]) -> Vec<usize> {
    let mut v = ix.to_vec();
    v.sort_unstable();
    v.dedup();
    v
}

/// How a plan is searched for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Method {
    /// By size: exact DP when small, connected DP when medium, hyper beyond.
    Auto,
    /// Dynamic programming over subsets: the least cost.
    Optimal,
    /// Greedy with random restarts.
    Greedy,
    /// Recursive bisection, subtree reconfiguration, greedy restarts.
    Hyper,
    /// A path given by the caller ([`plan_path`]); not a search.
    Given,
}

/// Which cost the search minimises (both are always reported).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize)]
pub enum Convention {
    /// A pairwise step costs the product of the sizes of its indices (one
    /// multiply-add per element of the index union); a one-operand step
    /// the size of its operand.
    #[default]
    MultiplyAdds,
    /// opt_einsum's `flop_count`: as `MultiplyAdds`, times 2 for a step
    /// that sums an index.
    OptEinsum,
}

/// The bound on the elements of any tensor a step makes.
#[derive(Clone, Copy, Debug, PartialEq, Default, Serialize)]
pub enum MemoryLimit {
    /// The largest argument or result, or 2^27 elements, whichever is larger.
    #[default]
    Default,
    /// No bound.
    Unlimited,
    /// At most this many elements (at least 1).
    Elements(f64),
}

/// What [`plan`] does.
#[derive(Clone, Debug)]
pub struct Options {
    /// The search method.
    pub method: Method,
    /// The cost the search minimises.
    pub convention: Convention,
    /// The bound on intermediates.
    pub memory_limit: MemoryLimit,
    /// Seed of the random restarts and partitions.
    pub seed: u64,
    /// Greedy runs (the first without noise); `None`: by size.
    pub greedy_trials: Option<usize>,
    /// Partition trees of `Hyper`; `None`: by size.
    pub hyper_trials: Option<usize>,
    /// Stop random searches after this long (the best so far is kept);
    /// with it, results depend on the machine's speed.
    pub time_budget: Option<Duration>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            method: Method::Auto,
            convention: Convention::MultiplyAdds,
            memory_limit: MemoryLimit::Default,
            seed: 0,
            greedy_trials: None,
            hyper_trials: None,
            time_budget: None,
        }
    }
}

impl Options {
    /// Default options with `method`.
    pub fn method(method: Method) -> Options {
        Options {
            method,
            ..Options::default()
        }
    }
}

/// One step of a plan: one or two operands contracted into a new tensor.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Step {
    /// The operands' SSA ids (inputs are `0..n`, step `k` makes `n + k`).
    pub operands: Vec<usize>,
    /// The indices of the tensor made (sorted ids).
    pub kept: Vec<usize>,
    /// The indices summed by this step (sorted ids).
    pub summed: Vec<usize>,
    /// Multiply-adds of this step, over all slices.
    pub flops: f64,
    /// opt_einsum's `flop_count` of this step, over all slices.
    pub flops_opt_einsum: f64,
    /// Elements of the tensor made (of one slice, when sliced).
    pub size: f64,
}

/// A contraction plan (see the module doc).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Plan {
    /// The method that found it (for `Auto`, the one it chose).
    pub method: Method,
    /// Number of inputs.
    pub inputs: usize,
    /// The steps in order; the last makes the result.
    pub steps: Vec<Step>,
    /// Total multiply-adds, recomputation of sliced loops included.
    pub flops: f64,
    /// Total in opt_einsum's convention, recomputation included.
    pub flops_opt_einsum: f64,
    /// The largest tensor any step makes (elements, per slice).
    pub largest_intermediate: f64,
    /// The memory limit applied (elements), if any.
    pub memory_limit: Option<f64>,
    /// Indices looped over (sliced) to keep within the limit; empty when
    /// every step fits as it is.
    pub sliced: Vec<usize>,
    /// Number of slices (product of the sliced indices' sizes; 1 unsliced).
    pub slices: f64,
    /// Multiply-adds of the same tree without slicing.
    pub unsliced_flops: f64,
    /// Wall-clock planning time in seconds.
    pub seconds: f64,
}

impl Plan {
    /// The path in SSA form: per step its operands' ids.
    pub fn ssa_path(&self) -> Vec<Vec<usize>> {
        self.steps.iter().map(|s| s.operands.clone()).collect()
    }

    /// The path in numpy's linear form (`einsum_path`): per step the
    /// positions of its operands in the current list of tensors, which
    /// loses them and gains the result at its end.
    pub fn linear_path(&self) -> Vec<Vec<usize>> {
        let mut current: Vec<usize> = (0..self.inputs).collect();
        let mut out = Vec::with_capacity(self.steps.len());
        for (k, s) in self.steps.iter().enumerate() {
            let pos: Vec<usize> = s
                .operands
                .iter()
                .map(|id| {
                    current
                        .iter()
                        .position(|c| c == id)
                        .expect("valid SSA path")
                })
                .collect();
            let mut del = pos.clone();
            del.sort_unstable_by(|a, b| b.cmp(a));
            for p in del {
                current.remove(p);
            }
            current.push(self.inputs + k);
            out.push(pos);
        }
        out
    }
}

/// Plan the contraction of `net`.
pub fn plan(net: &Network, opts: &Options) -> Result<Plan, PlanError> {
    let start = Instant::now();
    let limit = match opts.memory_limit {
        MemoryLimit::Unlimited => f64::INFINITY,
        MemoryLimit::Elements(e) if e < 1.0 || e.is_nan() => return Err(PlanError::ZeroLimit),
        MemoryLimit::Elements(e) => e,
        MemoryLimit::Default => {
            let largest = (0..net.inputs.len())
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
    let n = net.inputs.len();
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

/// Search state shared by the methods.
pub(crate) struct Ctx<'a> {
    pub opts: &'a Options,
    pub start: Instant,
    pub rng_seed: u64,
}

impl Ctx<'_> {
    /// Has the time budget run out?
    pub fn out_of_time(&self) -> bool {
        self.opts
            .time_budget
            .is_some_and(|b| self.start.elapsed() >= b)
    }
}

/// The tensors after the one-operand steps, in local index ids.
pub(crate) struct Prepared<'a> {
    pub net: &'a Network,
    /// Local index id -> network id.
    pub orig: Vec<usize>,
    /// The leaves' problem.
    pub local: Local,
    /// For each leaf, the SSA id it has after the one-operand steps.
    pub leaf_ssa: Vec<usize>,
    /// One-operand steps: (input, its index set, the leaf's set), local ids.
    pub unary: Vec<(usize, Vec<u32>, Vec<u32>)>,
}

/// A sub-problem: leaves as sets of dense local index ids.
#[derive(Clone, Debug)]
pub(crate) struct Local {
    /// Size of each index.
    pub size: Vec<f64>,
    /// Indices needed outside (the output, or tensors outside the leaves).
    pub keep: Vec<bool>,
    /// Indices that connect tensors (not the whole network's output).
    pub conn: Vec<bool>,
    /// Each leaf's indices, sorted.
    pub leaves: Vec<Vec<u32>>,
    /// The cost being minimised.
    pub conv: Convention,
    /// The memory limit.
    pub limit: f64,
}

/// The cost of a step whose operands' index union has `union` elements.
#[inline]
pub(crate) fn step_cost(conv: Convention, union: f64, sums: bool) -> f64 {
    match conv {
        Convention::MultiplyAdds => union,
        Convention::OptEinsum if sums => 2.0 * union,
        Convention::OptEinsum => union,
    }
}

/// Union of two sorted sets.
pub(crate) fn union(a: &[u32], b: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => {
                out.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

impl Local {
    /// Elements of a tensor with indices `ix`.
    pub fn size_of(&self, ix: &[u32]) -> f64 {
        ix.iter().map(|&i| self.size[i as usize]).product()
    }

    /// Number of leaves containing each index.
    pub fn counts(&self) -> Vec<u32> {
        let mut c = vec![0u32; self.size.len()];
        for l in &self.leaves {
            for &i in l {
                c[i as usize] += 1;
            }
        }
        c
    }

    /// The sub-problem of leaves `ids` (in that order) with dense index ids:
    /// an index is kept if it is kept here or in a leaf not chosen. Also
    /// returns the map from the new index ids to these.
    pub fn sub(&self, ids: &[usize], counts: &[u32]) -> (Local, Vec<u32>) {
        let sets: Vec<&[u32]> = ids.iter().map(|&t| &self.leaves[t][..]).collect();
        let mut inside: BTreeMap<u32, u32> = BTreeMap::new();
        for s in &sets {
            for &i in *s {
                *inside.entry(i).or_default() += 1;
            }
        }
        self.rebase(&sets, |i| {
            self.keep[i as usize] || inside.get(&i).copied().unwrap_or(0) < counts[i as usize]
        })
    }

    /// A problem over the tensors `sets` (index sets in these ids), keeping
    /// the indices `keep` says, with dense ids; and the map back.
    pub fn rebase(&self, sets: &[&[u32]], keep: impl Fn(u32) -> bool) -> (Local, Vec<u32>) {
        let mut map: BTreeMap<u32, u32> = BTreeMap::new();
        for s in sets {
            for &i in *s {
                map.insert(i, 0);
            }
        }
        let back: Vec<u32> = map.keys().copied().collect();
        for (k, v) in map.values_mut().enumerate() {
            *v = k as u32;
        }
        let leaves = sets
            .iter()
            .map(|s| s.iter().map(|i| map[i]).collect())
            .collect();
        let local = Local {
            size: back.iter().map(|&i| self.size[i as usize]).collect(),
            keep: back.iter().map(|&i| keep(i)).collect(),
            conn: back.iter().map(|&i| self.conn[i as usize]).collect(),
            leaves,
            conv: self.conv,
            limit: self.limit,
        };
        (local, back)
    }

    #[cfg(test)]
    /// Cost and largest intermediate of the tree `merges` (SSA pairs over
    /// the leaves; the leaves themselves are not counted).
    pub fn evaluate(&self, merges: &[(usize, usize)]) -> (f64, f64) {
        let t = Tree::build(self, merges);
        (t.total_cost(), t.largest())
    }
}

impl<'a> Prepared<'a> {
    fn new(net: &'a Network, conv: Convention, limit: f64) -> Prepared<'a> {
        let inputs: Vec<Vec<usize>> = net.inputs.iter().map(|x| dedup(x)).collect();
        let mut used: BTreeMap<usize, u32> = BTreeMap::new();
        for ix in &inputs {
            for &i in ix {
                used.insert(i, 0);
            }
        }
        let orig: Vec<usize> = used.keys().copied().collect();
        for (k, v) in used.values_mut().enumerate() {
            *v = k as u32;
        }
        let m = orig.len();
        let mut in_out = vec![false; m];
        for i in &net.output {
            in_out[used[i] as usize] = true;
        }
        let mut count = vec![0u32; m];
        let sets: Vec<Vec<u32>> = inputs
            .iter()
            .map(|ix| ix.iter().map(|i| used[i]).collect())
            .collect();
        for s in &sets {
            for &i in s {
                count[i as usize] += 1;
            }
        }
        let n = sets.len();
        let mut unary = Vec::new();
        let mut leaves = Vec::with_capacity(n);
        let mut leaf_ssa = Vec::with_capacity(n);
        for (t, s) in sets.iter().enumerate() {
            let reduced: Vec<u32> = s
                .iter()
                .copied()
                .filter(|&i| in_out[i as usize] || count[i as usize] > 1)
                .collect();
            if reduced.len() < s.len() || n == 1 {
                leaf_ssa.push(n + unary.len());
                unary.push((t, s.clone(), reduced.clone()));
            } else {
                leaf_ssa.push(t);
            }
            leaves.push(reduced);
        }
        let local = Local {
            size: orig.iter().map(|&i| net.sizes[i] as f64).collect(),
            keep: in_out.clone(),
            conn: in_out.iter().map(|&o| !o).collect(),
            leaves,
            conv,
            limit,
        };
        Prepared {
            net,
            orig,
            local,
            leaf_ssa,
            unary,
        }
    }

    /// The whole list of steps (local index ids) for the tree `merges` over
    /// the leaves: (operands, union, kept).
    pub fn step_sets(&self, merges: &[(usize, usize)]) -> Vec<(Vec<usize>, Vec<u32>, Vec<u32>)> {
        let n = self.net.inputs.len();
        let mut out = Vec::with_capacity(self.unary.len() + merges.len());
        for (t, s, r) in &self.unary {
            out.push((vec![*t], s.clone(), r.clone()));
        }
        let tree = Tree::build(&self.local, merges);
        let nl = self.local.leaves.len();
        let mut ssa: Vec<usize> = self.leaf_ssa.clone();
        for (k, &(a, b)) in merges.iter().enumerate() {
            let node = nl + k;
            let u = union(&tree.legs[a], &tree.legs[b]);
            let (x, y) = (ssa[a].min(ssa[b]), ssa[a].max(ssa[b]));
            out.push((vec![x, y], u, tree.legs[node].clone()));
            ssa.push(n + self.unary.len() + k);
        }
        out
    }

    /// Steps without slicing, as `Step`s in local ids (converted by
    /// `finish`).
    fn steps_with(&self, merges: &[(usize, usize)]) -> Vec<Step> {
        self.steps_sliced(&self.step_sets(merges), &[])
    }

    /// Steps with the indices `sliced` looped over.
    pub fn steps_sliced(
        &self,
        sets: &[(Vec<usize>, Vec<u32>, Vec<u32>)],
        sliced: &[u32],
    ) -> Vec<Step> {
        let size = &self.local.size;
        let slices: f64 = sliced.iter().map(|&i| size[i as usize]).product();
        sets.iter()
            .map(|(ops, u, kept)| {
                let mut summed: Vec<u32> =
                    u.iter().copied().filter(|i| !kept.contains(i)).collect();
                summed.sort_unstable();
                // the step runs once per slice, over its indices not sliced
                let per_slice: f64 = u
                    .iter()
                    .filter(|i| !sliced.contains(i))
                    .map(|&i| size[i as usize])
                    .product();
                let u_total = per_slice * slices;
                let kept_in: f64 = kept
                    .iter()
                    .filter(|i| !sliced.contains(i))
                    .map(|&i| size[i as usize])
                    .product();
                let sums = !summed.is_empty();
                Step {
                    operands: ops.clone(),
                    kept: kept.iter().map(|&i| i as usize).collect(),
                    summed: summed.iter().map(|&i| i as usize).collect(),
                    flops: u_total,
                    flops_opt_einsum: step_cost(Convention::OptEinsum, u_total, sums),
                    size: kept_in,
                }
            })
            .collect()
    }

    fn finish(
        &self,
        method: Method,
        mut steps: Vec<Step>,
        sliced: &[u32],
        limit: f64,
        start: Instant,
    ) -> Plan {
        let size = &self.local.size;
        let unsliced: f64 = if sliced.is_empty() {
            steps.iter().map(|s| s.flops).sum()
        } else {
            let sets: Vec<(Vec<usize>, Vec<u32>, Vec<u32>)> = steps
                .iter()
                .map(|s| {
                    let kept: Vec<u32> = s.kept.iter().map(|&i| i as u32).collect();
                    let mut u: Vec<u32> = s.summed.iter().map(|&i| i as u32).collect();
                    u.extend(&kept);
                    u.sort_unstable();
                    (s.operands.clone(), u, kept)
                })
                .collect();
            self.steps_sliced(&sets, &[]).iter().map(|s| s.flops).sum()
        };
        for s in &mut steps {
            for i in s.kept.iter_mut().chain(s.summed.iter_mut()) {
                *i = self.orig[*i];
            }
            s.kept.sort_unstable();
            s.summed.sort_unstable();
        }
        let mut sl: Vec<usize> = sliced.iter().map(|&i| self.orig[i as usize]).collect();
        sl.sort_unstable();
        Plan {
            method,
            inputs: self.net.inputs.len(),
            flops: steps.iter().map(|s| s.flops).sum(),
            flops_opt_einsum: steps.iter().map(|s| s.flops_opt_einsum).sum(),
            largest_intermediate: steps.iter().map(|s| s.size).fold(0.0, f64::max),
            steps,
            memory_limit: limit.is_finite().then_some(limit),
            slices: sliced.iter().map(|&i| size[i as usize]).product(),
            sliced: sl,
            unsliced_flops: unsliced,
            seconds: start.elapsed().as_secs_f64(),
        }
    }
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

/// A small deterministic random generator (SplitMix64).
#[derive(Clone, Debug)]
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator for `seed` and stream `stream`.
    pub fn new(seed: u64, stream: u64) -> Rng {
        let mut r = Rng(seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        r.next();
        r
    }

    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    /// A standard Gumbel sample.
    pub fn gumbel(&mut self) -> f64 {
        let u = self.unit().max(1e-300);
        -(-u.ln()).ln()
    }
}

#[cfg(test)]
mod tests;
