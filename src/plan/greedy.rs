//! Greedy contraction trees, opt_einsum's algorithm with cotengra's knobs.
//!
//! Tensors with identical index sets are multiplied first (Hadamard
//! products). Then, among pairs of live tensors sharing a connecting index,
//! the pair of least score is contracted, the score being
//! `size(ab) / costmod − (size(a) + size(b)) · costmod` (`costmod = 1`:
//! opt_einsum's `memory-removed`, size(out) − size(a) − size(b)), ties
//! broken by the larger and then the smaller node id. With a temperature
//! `T > 0` a score `x` becomes `sign(x)·ln|x| − T·g` with `g` a Gumbel
//! sample drawn when the pair is scored, so repeated runs explore
//! (`best_of` keeps the cheapest of several runs, the first without
//! noise). A pair whose result would break the memory limit is not taken.
//! Tensors left without a partner (disconnected parts) are joined smallest
//! first. Indices in every tensor connect nothing (as in opt_einsum: they
//! are summed at the last step anyway).

use super::model::{union, Ctx, Local, Rng};
use super::tree::{cost_within, Builder};
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// An `f64` ordered by `total_cmp`, for heaps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Key(pub f64);

impl Eq for Key {}
impl PartialOrd for Key {
    fn partial_cmp(&self, o: &Key) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Key {
    fn cmp(&self, o: &Key) -> Ordering {
        self.0.total_cmp(&o.0)
    }
}

/// The cheapest (by [`cost_within`]) of `trials` greedy runs: the first
/// plain (costmod 1, no noise), the others with costmod drawn from
/// [0.5, 2] and a temperature from [0.001, 1] (log-uniform), seeded by
/// `ctx`'s seed. Stops early when `ctx`'s time budget runs out.
pub(crate) fn best_of(local: &Local, trials: usize, ctx: &Ctx) -> Vec<(usize, usize)> {
    let mut rng = Rng::new(ctx.rng_seed, 1);
    let mut best = run(local, 1.0, 0.0, &mut rng);
    let mut best_cost = cost_within(local, &best);
    for _ in 1..trials.max(1) {
        if ctx.out_of_time() {
            break;
        }
        let costmod = 0.5 * 4f64.powf(rng.unit());
        let temp = (0.001f64.ln() + rng.unit() * (1.0f64.ln() - 0.001f64.ln())).exp();
        let m = run(local, costmod, temp, &mut rng);
        let c = cost_within(local, &m);
        if c < best_cost {
            best_cost = c;
            best = m;
        }
    }
    best
}

/// A candidate pair: score, larger id, smaller id.
type Cand = Reverse<(Key, usize, usize)>;

/// One greedy run (see the module doc).
pub(crate) fn run(
    local: &Local,
    costmod: f64,
    temperature: f64,
    rng: &mut Rng,
) -> Vec<(usize, usize)> {
    let n = local.leaves.len();
    if n <= 1 {
        return Vec::new();
    }
    let m = local.size.len();
    let mut count = local.counts();
    // indices that may pair tensors: connecting, and not in every tensor
    let links: Vec<bool> = (0..m)
        .map(|i| local.conn[i] && !local.keep[i] && (count[i] as usize) < n)
        .collect();
    let mut legs: Vec<Vec<u32>> = local.leaves.clone();
    let mut size: Vec<f64> = legs.iter().map(|l| local.size_of(l)).collect();
    let mut live: Vec<bool> = vec![true; n];
    let mut b = Builder::new(n);
    let mut holders: Vec<Vec<usize>> = vec![Vec::new(); m];
    for (t, l) in legs.iter().enumerate() {
        for &i in l {
            if links[i as usize] {
                holders[i as usize].push(t);
            }
        }
    }

    // contract a and b: the new node's id
    let contract = |a: usize,
                    c: usize,
                    legs: &mut Vec<Vec<u32>>,
                    size: &mut Vec<f64>,
                    live: &mut Vec<bool>,
                    count: &mut Vec<u32>,
                    holders: &mut Vec<Vec<usize>>,
                    b: &mut Builder|
     -> usize {
        let u = union(&legs[a], &legs[c]);
        for &i in legs[a].iter().chain(&legs[c]) {
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
        let id = b.merge(a.min(c), a.max(c));
        live[a] = false;
        live[c] = false;
        live.push(true);
        for &i in &u {
            if links[i as usize] {
                holders[i as usize].retain(|&t| t != a && t != c);
            }
        }
        for &i in &kept {
            if links[i as usize] {
                holders[i as usize].push(id);
            }
        }
        size.push(local.size_of(&kept));
        legs.push(kept);
        id
    };

    // Hadamard products of identical index sets first
    let mut by_set: std::collections::BTreeMap<Vec<u32>, usize> = Default::default();
    for t in 0..n {
        let key = legs[t].clone();
        if let Some(&o) = by_set.get(&key) {
            if !key.is_empty() {
                let id = contract(
                    o,
                    t,
                    &mut legs,
                    &mut size,
                    &mut live,
                    &mut count,
                    &mut holders,
                    &mut b,
                );
                by_set.remove(&key);
                by_set.insert(legs[id].clone(), id);
                continue;
            }
        }
        by_set.insert(key, t);
    }

    let score = |a: usize,
                 c: usize,
                 legs: &[Vec<u32>],
                 size: &[f64],
                 count: &[u32],
                 rng: &mut Rng|
     -> Option<Cand> {
        let (la, lc) = (&legs[a], &legs[c]);
        // size of the result: indices kept by the union
        let mut s12 = 1.0;
        let (mut i, mut j) = (0, 0);
        while i < la.len() || j < lc.len() {
            let (x, both) = match (la.get(i), lc.get(j)) {
                (Some(&x), Some(&y)) if x == y => {
                    i += 1;
                    j += 1;
                    (x, 2)
                }
                (Some(&x), Some(&y)) if x < y => {
                    i += 1;
                    (x, 1)
                }
                (Some(_), Some(&y)) => {
                    j += 1;
                    (y, 1)
                }
                (Some(&x), None) => {
                    i += 1;
                    (x, 1)
                }
                (None, Some(&y)) => {
                    j += 1;
                    (y, 1)
                }
                (None, None) => unreachable!(),
            };
            if local.keep[x as usize] || count[x as usize] > both {
                s12 *= local.size[x as usize];
            }
        }
        if s12 > local.limit {
            return None;
        }
        let raw = s12 / costmod - (size[a] + size[c]) * costmod;
        let sc = if temperature > 0.0 {
            let g = temperature * rng.gumbel();
            if raw > 0.0 {
                raw.ln() - g
            } else if raw < 0.0 {
                -(-raw).ln() - g
            } else {
                -g
            }
        } else {
            raw
        };
        Some(Reverse((Key(sc), a.max(c), a.min(c))))
    };

    let mut heap: BinaryHeap<Cand> = BinaryHeap::new();
    let mut nb: Vec<usize> = Vec::new();
    for a in 0..live.len() {
        if !live[a] {
            continue;
        }
        nb.clear();
        for &i in &legs[a] {
            if links[i as usize] {
                nb.extend(holders[i as usize].iter().copied().filter(|&t| t > a));
            }
        }
        nb.sort_unstable();
        nb.dedup();
        for &c in &nb {
            if let Some(x) = score(a, c, &legs, &size, &count, rng) {
                heap.push(x);
            }
        }
    }
    while let Some(Reverse((_, hi, lo))) = heap.pop() {
        if !live[hi] || !live[lo] {
            continue;
        }
        let id = contract(
            lo,
            hi,
            &mut legs,
            &mut size,
            &mut live,
            &mut count,
            &mut holders,
            &mut b,
        );
        nb.clear();
        for &i in &legs[id] {
            if links[i as usize] {
                nb.extend(holders[i as usize].iter().copied().filter(|&t| t != id));
            }
        }
        nb.sort_unstable();
        nb.dedup();
        for &c in &nb {
            if let Some(x) = score(id, c, &legs, &size, &count, rng) {
                heap.push(x);
            }
        }
    }
    // whatever is left: smallest first
    let mut rest: BinaryHeap<Reverse<(Key, usize)>> = (0..live.len())
        .filter(|&t| live[t])
        .map(|t| Reverse((Key(size[t]), t)))
        .collect();
    while rest.len() > 1 {
        let Reverse((_, a)) = rest.pop().expect("two left");
        let Reverse((_, c)) = rest.pop().expect("two left");
        let id = contract(
            a,
            c,
            &mut legs,
            &mut size,
            &mut live,
            &mut count,
            &mut holders,
            &mut b,
        );
        rest.push(Reverse((Key(size[id]), id)));
    }
    b.merges
}
