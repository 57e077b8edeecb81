//! Slicing: when no contraction tree keeps every intermediate within the
//! memory limit, loop over some indices (each slice fixes them) and
//! recompute, per slice, the steps that do not use them.
//!
//! A sliced index divides the size of every tensor that has it by its size;
//! a step that uses it runs once per slice over a proportionally smaller
//! range (same total), a step that does not is repeated for every slice.
//! Indices are chosen one at a time among those of the tensors still too
//! large, each time the one that adds the least cost (ties: the smaller
//! largest tensor, then the lower id), until everything fits. Both the
//! tree searched under the limit and the tree searched without it are
//! sliced; the cheaper result wins.

use super::model::{step_cost, Local, Step};
use super::prepared::Prepared;

/// Steps as (operands, index union, kept indices), local ids.
type Sets = Vec<(Vec<usize>, Vec<u32>, Vec<u32>)>;

/// The cheapest sliced plan among the trees `trees` (over `pre`'s
/// leaves): its index, its steps and the sliced indices (local ids).
pub(crate) fn best_slicing(
    pre: &Prepared,
    trees: &[Vec<(usize, usize)>],
    limit: f64,
) -> (usize, Vec<Step>, Vec<u32>) {
    let mut best: Option<(f64, usize, Vec<Step>, Vec<u32>)> = None;
    for (k, m) in trees.iter().enumerate() {
        let sets = pre.step_sets(m);
        let sliced = choose(&pre.local, &sets, limit);
        let steps = pre.steps_sliced(&sets, &sliced);
        let c = total(&pre.local, &sets, &sliced);
        if best.as_ref().is_none_or(|(b, _, _, _)| c < *b) {
            best = Some((c, k, steps, sliced));
        }
    }
    let (_, k, steps, sliced) = best.expect("a tree");
    (k, steps, sliced)
}

/// Cost of the steps `sets` with `sliced` looped over, by `local`'s
/// convention.
fn total(local: &Local, sets: &Sets, sliced: &[u32]) -> f64 {
    let slices: f64 = sliced.iter().map(|&i| local.size[i as usize]).product();
    sets.iter()
        .map(|(_, u, kept)| {
            let per: f64 = u
                .iter()
                .filter(|i| !sliced.contains(i))
                .map(|&i| local.size[i as usize])
                .product();
            step_cost(local.conv, per * slices, kept.len() < u.len())
        })
        .sum()
}

/// Largest tensor a step makes per slice.
fn largest(local: &Local, sets: &Sets, sliced: &[u32]) -> f64 {
    sets.iter()
        .map(|(_, _, kept)| {
            kept.iter()
                .filter(|i| !sliced.contains(i))
                .map(|&i| local.size[i as usize])
                .product::<f64>()
        })
        .fold(0.0, f64::max)
}

/// The indices to slice so that every step's tensor fits `limit`.
pub(crate) fn choose(local: &Local, sets: &Sets, limit: f64) -> Vec<u32> {
    let m = local.size.len();
    let mut sliced: Vec<u32> = Vec::new();
    let mut is_sliced = vec![false; m];
    let mut slices = 1.0;
    let mut within = vec![0.0f64; m];
    loop {
        // each step's cost now, and per index the cost of the steps using it:
        // slicing c multiplies the cost of the others by size(c)
        within.iter_mut().for_each(|w| *w = 0.0);
        let mut total = 0.0;
        let mut cands: Vec<u32> = Vec::new();
        for (_, u, kept) in sets {
            let per: f64 = u
                .iter()
                .filter(|&&i| !is_sliced[i as usize])
                .map(|&i| local.size[i as usize])
                .product();
            let c = step_cost(local.conv, per * slices, kept.len() < u.len());
            total += c;
            for &i in u {
                within[i as usize] += c;
            }
            let size: f64 = kept
                .iter()
                .filter(|&&i| !is_sliced[i as usize])
                .map(|&i| local.size[i as usize])
                .product();
            if size > limit {
                cands.extend(
                    kept.iter()
                        .copied()
                        .filter(|&i| !is_sliced[i as usize] && local.size[i as usize] > 1.0),
                );
            }
        }
        if cands.is_empty() {
            return sliced;
        }
        cands.sort_unstable();
        cands.dedup();
        let after = |c: u32| {
            let s = local.size[c as usize];
            s * total - (s - 1.0) * within[c as usize]
        };
        let least = cands
            .iter()
            .map(|&c| after(c))
            .fold(f64::INFINITY, f64::min);
        // ties: the smaller largest tensor, then the lower id
        let mut best: Option<(f64, u32)> = None;
        for &c in cands.iter().filter(|&&c| after(c) <= least) {
            sliced.push(c);
            let l = largest(local, sets, &sliced);
            sliced.pop();
            if best.is_none_or(|(bl, _)| l < bl) {
                best = Some((l, c));
            }
        }
        let c = best.expect("a candidate").1;
        sliced.push(c);
        is_sliced[c as usize] = true;
        slices *= local.size[c as usize];
    }
}
