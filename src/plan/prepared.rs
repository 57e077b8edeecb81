//! The tensors of a network after its one-operand steps, in local index
//! ids ([`Prepared`]), and the turning of a contraction tree (SSA merges)
//! into the [`Plan`]'s steps, sliced or not. Depends on [`super::model`]
//! and [`super::tree`].

use super::model::{dedup, step_cost, union, Convention, Local, Method, Network, Plan, Step};
use super::tree::Tree;
use std::collections::BTreeMap;
use std::time::Instant;

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

impl<'a> Prepared<'a> {
    pub(crate) fn new(net: &'a Network, conv: Convention, limit: f64) -> Prepared<'a> {
        let inputs: Vec<Vec<usize>> = net.inputs().iter().map(|x| dedup(x)).collect();
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
        for i in net.output() {
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
            size: orig.iter().map(|&i| net.sizes()[i] as f64).collect(),
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
        let n = self.net.inputs().len();
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
    pub(crate) fn steps_with(&self, merges: &[(usize, usize)]) -> Vec<Step> {
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

    pub(crate) fn finish(
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
            inputs: self.net.inputs().len(),
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
