//! The planning problem and its answer, shared by every search: the
//! [`Network`] (inputs' and output's index ids, sizes), [`Options`],
//! [`Method`], [`Convention`], [`MemoryLimit`], the [`Plan`] and its
//! [`Step`]s, [`PlanError`]; and for the searches the problem in dense
//! local index ids (`Local`), the search context (`Ctx`), the step
//! cost, index-set union and the deterministic `Rng`. Depends on no other
//! module of `plan`; every one of them may use it.

use serde::Serialize;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

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
    /// A path ([`super::plan_path`]) that does not contract the network.
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

pub(crate) fn dedup(ix: &[usize]) -> Vec<usize> {
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
    /// A path given by the caller ([`super::plan_path`]); not a search.
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

/// What [`super::plan()`] does.
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
