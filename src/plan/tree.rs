//! Contraction trees over a [`Local`] problem's leaves: legs and cost of
//! every node from a list of SSA merges, splicing sub-trees together, and
//! the score the searches compare trees by.

use super::model::{step_cost, union, Local};

/// A binary contraction tree: leaves `0..n`, merge `k` makes node `n + k`.
#[derive(Clone, Debug)]
pub struct Tree {
    /// Number of leaves.
    pub n: usize,
    /// Children of each internal node (`children[k]` for node `n + k`).
    pub children: Vec<(usize, usize)>,
    /// Indices of every node (leaves first).
    pub legs: Vec<Vec<u32>>,
    /// Cost of each internal node's step.
    pub cost: Vec<f64>,
    /// Elements of every node.
    pub size: Vec<f64>,
}

impl Tree {
    /// The tree of `merges` over `local`'s leaves. A node keeps an index
    /// that `local` keeps or that a tensor not yet merged into it has.
    pub fn build(local: &Local, merges: &[(usize, usize)]) -> Tree {
        let n = local.leaves.len();
        let mut count = local.counts();
        let mut legs: Vec<Vec<u32>> = local.leaves.clone();
        let mut size: Vec<f64> = legs.iter().map(|l| local.size_of(l)).collect();
        let mut cost = Vec::with_capacity(merges.len());
        for &(a, b) in merges {
            let u = union(&legs[a], &legs[b]);
            for &i in legs[a].iter().chain(&legs[b]) {
                count[i as usize] -= 1;
            }
            let kept: Vec<u32> = u
                .iter()
                .copied()
                .filter(|&i| local.keep[i as usize] || count[i as usize] > 0)
                .collect();
            for &i in &kept {
                count[i as usize] += 1;
            }
            let sums = kept.len() < u.len();
            cost.push(step_cost(local.conv, local.size_of(&u), sums));
            size.push(local.size_of(&kept));
            legs.push(kept);
        }
        Tree {
            n,
            children: merges.to_vec(),
            legs,
            cost,
            size,
        }
    }

    /// Total cost of the steps.
    pub fn total_cost(&self) -> f64 {
        self.cost.iter().sum()
    }

    /// The largest tensor a step makes (0 without steps).
    pub fn largest(&self) -> f64 {
        self.size[self.n..].iter().copied().fold(0.0, f64::max)
    }
}

/// Cost of a tree, penalised where it breaks the memory limit (by the
/// factor slicing would at least add, roughly): what searches compare.
pub(crate) fn cost_within(local: &Local, merges: &[(usize, usize)]) -> f64 {
    let t = Tree::build(local, merges);
    score(&t, local.limit)
}

/// [`cost_within`] of a built tree.
pub(crate) fn score(t: &Tree, limit: f64) -> f64 {
    let c = t.total_cost();
    let big = t.largest();
    if big > limit {
        c * (big / limit)
    } else {
        c
    }
}

/// Builds one tree from trees of parts: node ids are the whole problem's.
#[derive(Clone, Debug, Default)]
pub(crate) struct Builder {
    /// Leaves of the whole problem.
    pub n: usize,
    /// Merges so far (SSA over the whole problem's leaves).
    pub merges: Vec<(usize, usize)>,
}

impl Builder {
    /// A builder over `n` leaves.
    pub fn new(n: usize) -> Builder {
        Builder {
            n,
            merges: Vec::with_capacity(n.saturating_sub(1)),
        }
    }

    /// Merge nodes `a` and `b`; the new node's id.
    pub fn merge(&mut self, a: usize, b: usize) -> usize {
        self.merges.push((a, b));
        self.n + self.merges.len() - 1
    }

    /// Add the tree `sub` whose leaves are the nodes `ids`; its root's id.
    pub fn add(&mut self, ids: &[usize], sub: &[(usize, usize)]) -> usize {
        let k = ids.len();
        let mut map: Vec<usize> = ids.to_vec();
        let mut root = ids[0];
        for &(a, b) in sub {
            let id = self.merge(map[a], map[b]);
            map.push(id);
            root = id;
        }
        debug_assert_eq!(map.len(), 2 * k - 1);
        root
    }
}

/// The merges of a tree given by children per internal node (any ids),
/// in an order where children come first: SSA over leaves `0..n`.
/// `kids[v - n]` are node `v`'s children; `root` the root.
pub(crate) fn to_merges(n: usize, kids: &[(usize, usize)], root: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::with_capacity(kids.len());
    let mut new_id = vec![usize::MAX; n + kids.len()];
    for (i, id) in new_id.iter_mut().enumerate().take(n) {
        *id = i;
    }
    // iterative post-order
    let mut stack = vec![(root, false)];
    while let Some((v, done)) = stack.pop() {
        if v < n {
            continue;
        }
        let (a, b) = kids[v - n];
        if done {
            out.push((new_id[a], new_id[b]));
            new_id[v] = n + out.len() - 1;
        } else {
            stack.push((v, true));
            stack.push((b, false));
            stack.push((a, false));
        }
    }
    out
}

#[cfg(test)]
impl Local {
    /// Cost and largest intermediate of the tree `merges` (SSA pairs over
    /// the leaves; the leaves themselves are not counted).
    pub fn evaluate(&self, merges: &[(usize, usize)]) -> (f64, f64) {
        let t = Tree::build(self, merges);
        (t.total_cost(), t.largest())
    }
}
