//! Optimal contraction trees by dynamic programming over subsets of tensors.
//!
//! `all_subsets` searches every pairwise tree, outer products included:
//! the cost of a subset is the least over its splits into two (3^n work),
//! so its answer is the least cost there is. `connected` is opt_einsum's
//! `dp` (Phys. Rev. E 90, 033315): only subsets that are connected (through
//! indices that are not the whole network's output) and only merges of two
//! parts that share such an index, found level by level (subsets of 2, 3,
//! … tensors) under a cost cap that starts at the result's size and grows
//! until the whole set is reached; every subset cheaper than the cap is
//! found with its least cost, so the first tree found is the cheapest of
//! that kind. Disconnected parts are solved apart and joined by
//! `all_subsets` over their results. Subsets are bitmasks of tensors
//! (at most [`CONNECTED_MAX`] in a connected part); index sets are bitsets
//! of any width. Both honour the memory limit: a subset whose tensor would
//! be larger is not made.

use super::model::{step_cost, union, Local, PlanError};
use super::tree::Builder;
use std::collections::HashMap;

/// Up to this many tensors the all-subsets DP is used (3^n splits).
pub const ALL_SUBSETS_MAX: usize = 12;
/// The most tensors of one connected part `connected` accepts.
pub const CONNECTED_MAX: usize = 128;
/// A bound on the work of `connected`: pairs of subsets examined, and
/// the cost beyond which its search is given up (a tree that costly is
/// known already).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Budget {
    /// Pairs of subsets examined, at most.
    pub pairs: u64,
    /// Give up once the cost cap exceeds this.
    pub cost: f64,
}

/// Why a DP gave no tree.
#[derive(Debug, PartialEq)]
pub(crate) enum Fail {
    /// The work budget ran out.
    Budget,
    /// A connected part is too large.
    TooLarge(usize),
    /// No tree keeps within the memory limit.
    Limit,
}

/// The least-cost tree of `local` (see the module doc): all subsets up to
/// [`ALL_SUBSETS_MAX`] tensors, else connected parts by `connected`
/// within `budget` each. Where no tree keeps within the memory limit, the
/// least-cost tree without it.
pub(crate) fn optimal(
    local: &Local,
    budget: Option<Budget>,
) -> Result<Vec<(usize, usize)>, PlanError> {
    match optimal_within(local, budget) {
        Ok(m) => Ok(m),
        Err(Fail::Limit) => {
            let free = Local {
                limit: f64::INFINITY,
                ..local.clone()
            };
            optimal_within(&free, budget).map_err(|e| to_error(e, local))
        }
        Err(e) => Err(to_error(e, local)),
    }
}

fn to_error(e: Fail, local: &Local) -> PlanError {
    match e {
        Fail::TooLarge(got) => PlanError::TooLargeForOptimal {
            got,
            max: CONNECTED_MAX,
        },
        // budgets are `Auto`'s, which falls back to other methods
        Fail::Budget | Fail::Limit => PlanError::TooLargeForOptimal {
            got: local.leaves.len(),
            max: CONNECTED_MAX,
        },
    }
}

fn optimal_within(local: &Local, budget: Option<Budget>) -> Result<Vec<(usize, usize)>, Fail> {
    let n = local.leaves.len();
    if n <= ALL_SUBSETS_MAX {
        return all_subsets(local).ok_or(Fail::Limit);
    }
    let parts = components(local);
    if let Some(p) = parts.iter().find(|p| p.len() > CONNECTED_MAX) {
        return Err(Fail::TooLarge(p.len()));
    }
    let counts = local.counts();
    let mut b = Builder::new(n);
    let mut roots = Vec::with_capacity(parts.len());
    let mut root_legs: Vec<Vec<u32>> = Vec::with_capacity(parts.len());
    for p in &parts {
        let (sub, back) = local.sub(p, &counts);
        let m = if p.len() <= ALL_SUBSETS_MAX {
            all_subsets(&sub).ok_or(Fail::Limit)?
        } else {
            connected(&sub, budget)?
        };
        roots.push(b.add(p, &m));
        let t = super::tree::Tree::build(&sub, &m);
        root_legs.push(
            t.legs[t.legs.len() - 1]
                .iter()
                .map(|&i| back[i as usize])
                .collect(),
        );
    }
    if parts.len() > 1 {
        let sets: Vec<&[u32]> = root_legs.iter().map(|l| &l[..]).collect();
        let (top, _) = local.rebase(&sets, |i| local.keep[i as usize]);
        let m = join(&top);
        b.add(&roots, &m);
    }
    Ok(b.merges)
}

/// A tree joining tensors that share no connecting index: all subsets when
/// few, else smallest first.
pub(crate) fn join(local: &Local) -> Vec<(usize, usize)> {
    let n = local.leaves.len();
    if n <= ALL_SUBSETS_MAX {
        let free = Local {
            limit: f64::INFINITY,
            ..local.clone()
        };
        if let Some(m) = all_subsets(&free) {
            return m;
        }
    }
    smallest_first(local, (0..n).collect())
}

/// Merge the two smallest of `live` (node ids of `local`'s leaves) until
/// one is left: the merges (SSA over all of `local`'s leaves, with
/// `local.leaves.len() + k` for merge `k`). Only for tensors that share
/// no connecting index, so legs are the union's kept indices.
pub(crate) fn smallest_first(local: &Local, live: Vec<usize>) -> Vec<(usize, usize)> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let n = local.leaves.len();
    let mut count = local.counts();
    let mut legs: Vec<Vec<u32>> = local.leaves.clone();
    let mut heap: BinaryHeap<Reverse<(super::greedy::Key, usize)>> = live
        .iter()
        .map(|&v| Reverse((super::greedy::Key(local.size_of(&legs[v])), v)))
        .collect();
    let mut merges = Vec::new();
    while heap.len() > 1 {
        let Reverse((_, a)) = heap.pop().expect("two left");
        let Reverse((_, b)) = heap.pop().expect("two left");
        let u = union(&legs[a], &legs[b]);
        for &i in legs[a].iter().chain(&legs[b]) {
            count[i as usize] -= 1;
        }
        let kept: Vec<u32> = u
            .into_iter()
            .filter(|&i| local.keep[i as usize] || count[i as usize] > 0)
            .collect();
        for &i in &kept {
            count[i as usize] += 1;
        }
        let id = n + merges.len();
        merges.push((a.min(b), a.max(b)));
        heap.push(Reverse((super::greedy::Key(local.size_of(&kept)), id)));
        legs.push(kept);
    }
    merges
}

/// The connected parts of `local`'s leaves (through connecting indices),
/// each sorted, in order of their first leaf.
pub(crate) fn components(local: &Local) -> Vec<Vec<usize>> {
    let n = local.leaves.len();
    let mut parent: Vec<usize> = (0..n).collect();
    fn find(p: &mut [usize], mut x: usize) -> usize {
        while p[x] != x {
            p[x] = p[p[x]];
            x = p[x];
        }
        x
    }
    let mut first: Vec<Option<usize>> = vec![None; local.size.len()];
    for (t, l) in local.leaves.iter().enumerate() {
        for &i in l {
            if !local.conn[i as usize] {
                continue;
            }
            match first[i as usize] {
                None => first[i as usize] = Some(t),
                Some(u) => {
                    let (a, b) = (find(&mut parent, t), find(&mut parent, u));
                    if a != b {
                        parent[a.max(b)] = a.min(b);
                    }
                }
            }
        }
    }
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut slot: Vec<Option<usize>> = vec![None; n];
    for t in 0..n {
        let r = find(&mut parent, t);
        match slot[r] {
            Some(g) => groups[g].push(t),
            None => {
                slot[r] = Some(groups.len());
                groups.push(vec![t]);
            }
        }
    }
    groups
}

/// Words of a bitset over `m` indices.
fn words(m: usize) -> usize {
    m.div_ceil(64).max(1)
}

/// Product of the sizes of the indices in the bitset `b`.
#[inline]
fn prod(b: &[u64], size: &[f64]) -> f64 {
    let mut p = 1.0;
    for (k, &w) in b.iter().enumerate() {
        let mut w = w;
        while w != 0 {
            let t = w.trailing_zeros() as usize;
            p *= size[k * 64 + t];
            w &= w - 1;
        }
    }
    p
}

/// The least-cost pairwise tree over all of `local`'s leaves, outer
/// products included; `None` if none keeps within the memory limit.
/// At most 20 leaves (3^n work: meant for up to [`ALL_SUBSETS_MAX`]).
pub(crate) fn all_subsets(local: &Local) -> Option<Vec<(usize, usize)>> {
    let n = local.leaves.len();
    assert!(n <= 20, "all_subsets is exponential");
    if n <= 1 {
        return Some(Vec::new());
    }
    let m = local.size.len();
    let w = words(m);
    let full: u32 = (1u32 << n) - 1;
    let nsub = 1usize << n;
    // leaves containing each index
    let mut mask = vec![0u32; m];
    for (t, l) in local.leaves.iter().enumerate() {
        for &i in l {
            mask[i as usize] |= 1 << t;
        }
    }
    let present: Vec<usize> = (0..m).filter(|&i| mask[i] != 0).collect();
    let mut legs = vec![0u64; nsub * w];
    let mut lsize = vec![1.0f64; nsub];
    for s in 1..nsub {
        let s32 = s as u32;
        let row = &mut legs[s * w..(s + 1) * w];
        for &i in &present {
            let mi = mask[i];
            if mi & s32 != 0 && (local.keep[i] || mi & !s32 & full != 0) {
                row[i / 64] |= 1 << (i % 64);
            }
        }
        lsize[s] = prod(row, &local.size);
    }
    let mut cost = vec![f64::INFINITY; nsub];
    let mut split = vec![0u32; nsub];
    for t in 0..n {
        cost[1 << t] = 0.0;
    }
    let mut u = vec![0u64; w];
    for s in 1..nsub {
        let s32 = s as u32;
        if s32.count_ones() < 2 || lsize[s] > local.limit {
            continue;
        }
        let low = s32 & s32.wrapping_neg();
        let rest = s32 ^ low;
        let mut best = f64::INFINITY;
        let mut best_s1 = 0u32;
        // s1 = low | t over the subsets t of rest but rest itself
        let mut t = rest;
        loop {
            t = t.wrapping_sub(1) & rest;
            let s1 = low | t;
            let s2 = s32 ^ s1;
            let (c1, c2) = (cost[s1 as usize], cost[s2 as usize]);
            if c1 + c2 < best {
                let (l1, l2) = (
                    &legs[s1 as usize * w..(s1 as usize + 1) * w],
                    &legs[s2 as usize * w..(s2 as usize + 1) * w],
                );
                let ls = &legs[s * w..(s + 1) * w];
                let mut sums = false;
                for k in 0..w {
                    u[k] = l1[k] | l2[k];
                    sums |= u[k] & !ls[k] != 0;
                }
                let c = c1 + c2 + step_cost(local.conv, prod(&u, &local.size), sums);
                if c < best {
                    best = c;
                    best_s1 = s1;
                }
            }
            if t == 0 {
                break;
            }
        }
        cost[s] = best;
        split[s] = best_s1;
    }
    if !cost[full as usize].is_finite() {
        return None;
    }
    let mut b = Builder::new(n);
    fn emit(s: u32, split: &[u32], b: &mut Builder) -> usize {
        if s.count_ones() == 1 {
            return s.trailing_zeros() as usize;
        }
        let s1 = split[s as usize];
        let x = emit(s1, split, b);
        let y = emit(s ^ s1, split, b);
        b.merge(x, y)
    }
    emit(full, &split, &mut b);
    Some(b.merges)
}

/// One subset found by `connected`.
struct Entry {
    set: u128,
    cost: f64,
    /// The two entries it was made of (`u32::MAX` for a leaf).
    left: u32,
    right: u32,
    /// Leaves outside sharing a connecting index with it.
    nbr: u128,
}

/// opt_einsum's `dp` over connected subsets (see the module doc) of a
/// connected part of at most [`CONNECTED_MAX`] tensors, within `budget`.
pub(crate) fn connected(
    local: &Local,
    budget: Option<Budget>,
) -> Result<Vec<(usize, usize)>, Fail> {
    let n = local.leaves.len();
    if n > CONNECTED_MAX {
        return Err(Fail::TooLarge(n));
    }
    if n <= 1 {
        return Ok(Vec::new());
    }
    let m = local.size.len();
    let w = words(m);
    let full: u128 = if n == 128 {
        u128::MAX
    } else {
        (1u128 << n) - 1
    };
    let mut mask = vec![0u128; m];
    for (t, l) in local.leaves.iter().enumerate() {
        for &i in l {
            mask[i as usize] |= 1 << t;
        }
    }
    let mut legs: Vec<u64> = Vec::new();
    let mut entries: Vec<Entry> = Vec::new();
    let mut index: HashMap<u128, u32> = HashMap::new();
    // entries by level (number of leaves), and by level and leaf
    let mut levels: Vec<Vec<u32>> = vec![Vec::new(); n + 1];
    let mut by_leaf: Vec<Vec<Vec<u32>>> = vec![vec![Vec::new(); n]; n + 1];
    let nbr_of = |row: &[u64], set: u128| -> u128 {
        let mut nb = 0u128;
        for (k, &wd) in row.iter().enumerate() {
            let mut wd = wd;
            while wd != 0 {
                let i = k * 64 + wd.trailing_zeros() as usize;
                if local.conn[i] {
                    nb |= mask[i];
                }
                wd &= wd - 1;
            }
        }
        nb & !set
    };
    for (t, l) in local.leaves.iter().enumerate() {
        let mut row = vec![0u64; w];
        for &i in l {
            row[i as usize / 64] |= 1 << (i % 64);
        }
        let set = 1u128 << t;
        let nbr = nbr_of(&row, set);
        legs.extend_from_slice(&row);
        index.insert(set, entries.len() as u32);
        levels[1].push(entries.len() as u32);
        by_leaf[1][t].push(entries.len() as u32);
        entries.push(Entry {
            set,
            cost: 0.0,
            left: u32::MAX,
            right: u32::MAX,
            nbr,
        });
    }
    // the whole set's legs: its size starts the cap
    let out_size: f64 = (0..m)
        .filter(|&i| mask[i] != 0 && local.keep[i])
        .map(|i| local.size[i])
        .product();
    let min_size = local
        .size
        .iter()
        .copied()
        .filter(|&s| s > 0.0)
        .fold(f64::INFINITY, f64::min);
    let step = if min_size.is_finite() {
        min_size.max(2.0)
    } else {
        2.0
    };
    let naive: f64 = 2.0 * n as f64 * local.size.iter().map(|&s| s.max(1.0)).product::<f64>();
    let mut cap = out_size.max(1.0);
    let mut u = vec![0u64; w];
    let mut ls = vec![0u64; w];
    let mut work: u64 = 0;
    loop {
        for lev in 2..=n {
            for m1 in 1..=lev / 2 {
                let m2 = lev - m1;
                for k1 in 0..levels[m1].len() {
                    let e1 = levels[m1][k1] as usize;
                    let (s1, c1, nb) = (entries[e1].set, entries[e1].cost, entries[e1].nbr);
                    if c1 > cap {
                        continue;
                    }
                    let mut nbits = nb;
                    while nbits != 0 {
                        let t = nbits.trailing_zeros() as usize;
                        nbits &= nbits - 1;
                        work += by_leaf[m2][t].len() as u64;
                        if budget.is_some_and(|b| work > b.pairs) {
                            return Err(Fail::Budget);
                        }
                        for k2 in 0..by_leaf[m2][t].len() {
                            let e2 = by_leaf[m2][t][k2] as usize;
                            let s2 = entries[e2].set;
                            if s1 & s2 != 0 {
                                continue;
                            }
                            // each pair once: through its lowest shared neighbour,
                            // and in one order when both halves are as large
                            if (nb & s2).trailing_zeros() as usize != t || (m1 == m2 && s1 > s2) {
                                continue;
                            }
                            let c2 = entries[e2].cost;
                            if c1 + c2 > cap {
                                continue;
                            }
                            let s = s1 | s2;
                            let mut sums = false;
                            {
                                let l1 = &legs[e1 * w..(e1 + 1) * w];
                                let l2 = &legs[e2 * w..(e2 + 1) * w];
                                for k in 0..w {
                                    u[k] = l1[k] | l2[k];
                                    ls[k] = 0;
                                }
                                for k in 0..w {
                                    let mut wd = u[k];
                                    while wd != 0 {
                                        let i = k * 64 + wd.trailing_zeros() as usize;
                                        wd &= wd - 1;
                                        if local.keep[i] || mask[i] & !s & full != 0 {
                                            ls[k] |= 1 << (i % 64);
                                        } else {
                                            sums = true;
                                        }
                                    }
                                }
                            }
                            let c = c1 + c2 + step_cost(local.conv, prod(&u, &local.size), sums);
                            if c > cap {
                                continue;
                            }
                            if let Some(&e) = index.get(&s) {
                                let e = e as usize;
                                if c < entries[e].cost {
                                    entries[e].cost = c;
                                    entries[e].left = e1 as u32;
                                    entries[e].right = e2 as u32;
                                }
                                continue;
                            }
                            if prod(&ls, &local.size) > local.limit {
                                continue;
                            }
                            let id = entries.len() as u32;
                            let nbr = nbr_of(&ls, s);
                            legs.extend_from_slice(&ls);
                            entries.push(Entry {
                                set: s,
                                cost: c,
                                left: e1 as u32,
                                right: e2 as u32,
                                nbr,
                            });
                            index.insert(s, id);
                            levels[lev].push(id);
                            let mut bits = s;
                            while bits != 0 {
                                let t = bits.trailing_zeros() as usize;
                                bits &= bits - 1;
                                by_leaf[lev][t].push(id);
                            }
                        }
                    }
                }
            }
        }
        if let Some(&e) = index.get(&full) {
            let mut b = Builder::new(n);
            fn emit(e: usize, entries: &[Entry], b: &mut Builder) -> usize {
                let en = &entries[e];
                if en.left == u32::MAX {
                    return en.set.trailing_zeros() as usize;
                }
                let x = emit(en.left as usize, entries, b);
                let y = emit(en.right as usize, entries, b);
                b.merge(x, y)
            }
            emit(e as usize, &entries, &mut b);
            return Ok(b.merges);
        }
        if cap > naive {
            return Err(Fail::Limit);
        }
        if budget.is_some_and(|b| cap > b.cost) {
            return Err(Fail::Budget);
        }
        cap *= step;
    }
}
