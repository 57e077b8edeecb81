//! Hyper-optimised contraction trees: recursive bisection of the tensor
//! hypergraph and subtree reconfiguration (cotengra's approach, written
//! for einsat; Gray & Kourtis, Quantum 5, 410 (2021)).
//!
//! A tree is built top-down: the tensors are split in two by
//! Fiduccia–Mattheyses bisection (vertices are tensors, hyperedges are
//! indices weighted by log2 of their size, so the cut is the log-size of
//! the tensors the top step multiplies; random balanced starts grown by
//! breadth-first search, passes of single-vertex moves with the best prefix
//! kept), each half is split again until at most `cutoff` tensors are
//! left, which are contracted exactly (`dp::all_subsets`) or greedily.
//! Each trial draws its own imbalance, cutoff, edge weighting and size
//! jitter; greedy restarts compete. The best tree is then improved by
//! `reconfigure`: for each step, in order of cost, the subtree of up to 8
//! tensors below it is re-contracted by exact DP and replaced if cheaper,
//! pass after pass until nothing improves.

use super::dp;
use super::greedy;
use super::model::{Ctx, Local, Rng};
use super::tree::{cost_within, to_merges, Builder, Tree};
use std::collections::{BinaryHeap, VecDeque};

/// Leaves of a window of `reconfigure`.
pub const WINDOW: usize = 8;

/// Parameters of one partition trial.
#[derive(Clone, Debug)]
struct Params {
    /// Allowed imbalance of a bisection (0.1: each side within 10 % of half).
    imbalance: f64,
    /// Parts of at most this many tensors are contracted directly.
    cutoff: usize,
    /// Edge weights log2(size) (else 1 per edge).
    log_weights: bool,
    /// Relative noise on edge weights.
    jitter: f64,
    /// Random starts per bisection.
    starts: usize,
}

impl Params {
    fn sample(rng: &mut Rng, trial: usize) -> Params {
        if trial == 0 {
            return Params {
                imbalance: 0.2,
                cutoff: 8,
                log_weights: true,
                jitter: 0.0,
                starts: 3,
            };
        }
        Params {
            imbalance: 0.02 + 0.6 * rng.unit(),
            cutoff: 4 + rng.below(9),
            log_weights: rng.unit() < 0.85,
            jitter: (0.01f64.ln() + rng.unit() * (0.5f64.ln() - 0.01f64.ln())).exp(),
            starts: 2 + rng.below(3),
        }
    }
}

/// Partition trees by network size.
fn trials_for(n: usize) -> usize {
    match n {
        0..=60 => 24,
        61..=300 => 16,
        _ => 10,
    }
}

/// The hyper-optimised tree of `local` (see the module doc).
pub(crate) fn hyper(local: &Local, ctx: &Ctx) -> Vec<(usize, usize)> {
    let n = local.leaves.len();
    if n <= 2 {
        return dp::all_subsets(local).unwrap_or_else(|| vec![(0, 1)][..n - 1].to_vec());
    }
    let trials = ctx.opts.hyper_trials.unwrap_or_else(|| trials_for(n));
    let counts = local.counts();
    let mut best = greedy::best_of(local, ctx.opts.greedy_trials.unwrap_or(16), ctx);
    best = reconfigure(local, &best, 1);
    let mut best_cost = cost_within(local, &best);

    let mut rng = Rng::new(ctx.rng_seed, 2);
    for trial in 0..trials {
        if ctx.out_of_time() {
            break;
        }
        let p = Params::sample(&mut rng, trial);
        let m = bisect_tree(local, &counts, &p, &mut rng);
        // a pass of reconfiguration: raw partition trees predict badly
        let m = reconfigure(local, &m, 1);
        let c = cost_within(local, &m);
        if c < best_cost {
            best_cost = c;
            best = m;
        }
    }
    reconfigure(local, &best, 16)
}

/// A tree by recursive bisection with parameters `p`.
fn bisect_tree(local: &Local, counts: &[u32], p: &Params, rng: &mut Rng) -> Vec<(usize, usize)> {
    let n = local.leaves.len();
    let mut b = Builder::new(n);
    let mut scratch = Scratch::new(local);
    rec(
        local,
        counts,
        (0..n).collect(),
        p,
        rng,
        &mut b,
        &mut scratch,
    );
    b.merges
}

/// Reusable per-index buffers of the bisection.
struct Scratch {
    /// Hyperedge id of each index (`u32::MAX`: none yet).
    edge_of: Vec<u32>,
}

impl Scratch {
    fn new(local: &Local) -> Scratch {
        Scratch {
            edge_of: vec![u32::MAX; local.size.len()],
        }
    }
}

fn rec(
    local: &Local,
    counts: &[u32],
    ids: Vec<usize>,
    p: &Params,
    rng: &mut Rng,
    b: &mut Builder,
    scratch: &mut Scratch,
) -> usize {
    if ids.len() <= p.cutoff.max(2) {
        let m = solve_leaf(local, counts, &ids, rng);
        return b.add(&ids, &m);
    }
    let side = bisect(local, &ids, p, rng, scratch);
    let (a, c): (Vec<usize>, Vec<usize>) = {
        let mut a = Vec::new();
        let mut c = Vec::new();
        for (k, &t) in ids.iter().enumerate() {
            if side[k] {
                c.push(t);
            } else {
                a.push(t);
            }
        }
        (a, c)
    };
    if a.is_empty() || c.is_empty() {
        let m = solve_leaf(local, counts, &ids, rng);
        return b.add(&ids, &m);
    }
    let ra = rec(local, counts, a, p, rng, b, scratch);
    let rc = rec(local, counts, c, p, rng, b, scratch);
    b.merge(ra.min(rc), ra.max(rc))
}

/// Contract a part directly: exact when small, else greedy.
fn solve_leaf(local: &Local, counts: &[u32], ids: &[usize], rng: &mut Rng) -> Vec<(usize, usize)> {
    let (sub, _) = local.sub(ids, counts);
    if ids.len() <= 10 {
        if let Some(m) = dp::all_subsets(&sub) {
            return m;
        }
    }
    greedy::run(&sub, 1.0, 0.0, rng)
}

/// A hypergraph to bisect: weighted vertices and weighted hyperedges.
struct Graph {
    /// Vertex weights (tensors per vertex).
    vw: Vec<f64>,
    /// Each hyperedge's pins (at least two).
    edges: Vec<Vec<u32>>,
    /// Each hyperedge's weight.
    ew: Vec<f64>,
    /// Each vertex's hyperedges.
    vedges: Vec<Vec<u32>>,
}

impl Graph {
    fn new(vw: Vec<f64>, mut edges: Vec<Vec<u32>>, mut ew: Vec<f64>) -> Graph {
        let mut k = 0;
        for e in 0..edges.len() {
            if edges[e].len() >= 2 {
                edges.swap(k, e);
                ew.swap(k, e);
                k += 1;
            }
        }
        edges.truncate(k);
        ew.truncate(k);
        let mut vedges = vec![Vec::new(); vw.len()];
        for (e, pl) in edges.iter().enumerate() {
            for &v in pl {
                vedges[v as usize].push(e as u32);
            }
        }
        Graph {
            vw,
            edges,
            ew,
            vedges,
        }
    }

    /// A coarser graph by heavy-edge matching (pairs of vertices joined);
    /// with the map from these vertices to the coarse ones. `None` when
    /// it hardly shrinks.
    fn coarsen(&self, max_w: f64, rng: &mut Rng) -> Option<(Graph, Vec<u32>)> {
        let nv = self.vw.len();
        let mut order: Vec<usize> = (0..nv).collect();
        for i in (1..nv).rev() {
            let j = rng.below(i + 1);
            order.swap(i, j);
        }
        let mut mate = vec![u32::MAX; nv];
        let mut rating: Vec<f64> = vec![0.0; nv];
        let mut touched: Vec<usize> = Vec::new();
        for &v in &order {
            if mate[v] != u32::MAX {
                continue;
            }
            for &e in &self.vedges[v] {
                let pl = &self.edges[e as usize];
                let r = self.ew[e as usize] / (pl.len() - 1) as f64;
                for &u in pl {
                    let u = u as usize;
                    if u != v && mate[u] == u32::MAX && self.vw[u] + self.vw[v] <= max_w {
                        if rating[u] == 0.0 {
                            touched.push(u);
                        }
                        rating[u] += r + 1e-9;
                    }
                }
            }
            let mut best: Option<(f64, usize)> = None;
            for &u in &touched {
                if best.is_none_or(|(r, _)| rating[u] > r) {
                    best = Some((rating[u], u));
                }
            }
            for &u in &touched {
                rating[u] = 0.0;
            }
            touched.clear();
            match best {
                Some((_, u)) => {
                    mate[v] = u as u32;
                    mate[u] = v as u32;
                }
                None => mate[v] = v as u32,
            }
        }
        let mut map = vec![u32::MAX; nv];
        let mut vw = Vec::new();
        for v in 0..nv {
            if map[v] != u32::MAX {
                continue;
            }
            let u = mate[v] as usize;
            map[v] = vw.len() as u32;
            map[u] = vw.len() as u32;
            vw.push(if u == v {
                self.vw[v]
            } else {
                self.vw[v] + self.vw[u]
            });
        }
        if vw.len() as f64 > 0.9 * nv as f64 {
            return None;
        }
        let edges: Vec<Vec<u32>> = self
            .edges
            .iter()
            .map(|pl| {
                let mut c: Vec<u32> = pl.iter().map(|&v| map[v as usize]).collect();
                c.sort_unstable();
                c.dedup();
                c
            })
            .collect();
        Some((Graph::new(vw, edges, self.ew.clone()), map))
    }
}

/// Split the tensors `ids` in two (`true`: second side), minimising the
/// weight of the cut hyperedges within the balance of `p`: multilevel
/// (heavy-edge matching down to a few dozen vertices, random grown starts
/// refined by FM there, then FM at every level on the way up).
fn bisect(local: &Local, ids: &[usize], p: &Params, rng: &mut Rng, sc: &mut Scratch) -> Vec<bool> {
    let nv = ids.len();
    // hyperedges: indices of at least two of the tensors
    let mut pins: Vec<Vec<u32>> = Vec::new();
    let mut edge_index: Vec<u32> = Vec::new();
    for (v, &t) in ids.iter().enumerate() {
        for &i in &local.leaves[t] {
            let e = sc.edge_of[i as usize];
            if e == u32::MAX {
                sc.edge_of[i as usize] = pins.len() as u32;
                edge_index.push(i);
                pins.push(vec![v as u32]);
            } else {
                pins[e as usize].push(v as u32);
            }
        }
    }
    for &i in &edge_index {
        sc.edge_of[i as usize] = u32::MAX;
    }
    let weight: Vec<f64> = edge_index
        .iter()
        .map(|&i| {
            let s = local.size[i as usize];
            let base = if p.log_weights {
                s.max(1.0).log2()
            } else {
                1.0
            };
            (base * (1.0 + p.jitter * (2.0 * rng.unit() - 1.0))).max(0.0)
        })
        .collect();
    let g0 = Graph::new(vec![1.0; nv], pins, weight);
    let half = nv as f64 / 2.0;
    let lo = (half * (1.0 - p.imbalance)).floor().max(1.0);
    let hi = (half * (1.0 + p.imbalance))
        .ceil()
        .min(nv as f64 - 1.0)
        .max(lo);
    // coarsen
    let mut levels: Vec<(Graph, Vec<u32>)> = Vec::new();
    let max_w = (nv as f64 / 12.0).max(2.0);
    loop {
        let g = levels.last().map_or(&g0, |(g, _)| g);
        if g.vw.len() <= 48 {
            break;
        }
        match g.coarsen(max_w, rng) {
            Some(x) => levels.push(x),
            None => break,
        }
    }
    let coarse = levels.last().map_or(&g0, |(g, _)| g);
    let mut best: Option<(f64, Vec<bool>)> = None;
    for _ in 0..p.starts.max(1) {
        let mut side = grow(coarse, half, rng);
        let cut = fm(coarse, &mut side, lo, hi);
        if best.as_ref().is_none_or(|(c, _)| cut < *c) {
            best = Some((cut, side));
        }
    }
    let mut side = best.expect("one start").1;
    // uncoarsen, refining at every level
    for k in (0..levels.len()).rev() {
        let finer = if k == 0 { &g0 } else { &levels[k - 1].0 };
        let map = &levels[k].1;
        side = map.iter().map(|&c| side[c as usize]).collect();
        fm(finer, &mut side, lo, hi);
    }
    side
}

/// A start: vertices of about `target` weight grown by breadth-first
/// search from random seeds (`false`), the rest `true`.
fn grow(g: &Graph, target: f64, rng: &mut Rng) -> Vec<bool> {
    let nv = g.vw.len();
    let mut side = vec![true; nv];
    let mut taken = 0.0;
    let mut left = nv;
    let mut queue = VecDeque::new();
    while taken < target && left > 1 {
        let v = match queue.pop_front() {
            Some(v) => v,
            None => {
                // a random vertex still on the other side
                let mut v = rng.below(nv);
                while !side[v] {
                    v = (v + 1) % nv;
                }
                side[v] = false;
                taken += g.vw[v];
                left -= 1;
                v
            }
        };
        for &e in &g.vedges[v] {
            for &u in &g.edges[e as usize] {
                let u = u as usize;
                if side[u] && taken < target && left > 1 {
                    side[u] = false;
                    taken += g.vw[u];
                    left -= 1;
                    queue.push_back(u);
                }
            }
        }
    }
    side
}

/// Fiduccia–Mattheyses passes on `side`, keeping the first side's weight
/// within `lo..=hi` (or moving towards it); returns the cut weight.
fn fm(g: &Graph, side: &mut [bool], lo: f64, hi: f64) -> f64 {
    let nv = side.len();
    let (edges, vedges, weight, vw) = (&g.edges, &g.vedges, &g.ew, &g.vw);
    let mut cnt: Vec<[u32; 2]> = edges
        .iter()
        .map(|pl| {
            let mut c = [0u32; 2];
            for &v in pl {
                c[side[v as usize] as usize] += 1;
            }
            c
        })
        .collect();
    let cut_of = |cnt: &[[u32; 2]]| -> f64 {
        cnt.iter()
            .zip(weight)
            .filter(|(c, _)| c[0] > 0 && c[1] > 0)
            .map(|(_, w)| w)
            .sum()
    };
    let gain = |v: usize, side: &[bool], cnt: &[[u32; 2]]| -> f64 {
        let f = side[v] as usize;
        let t = 1 - f;
        let mut g = 0.0;
        for &e in &vedges[v] {
            let c = cnt[e as usize];
            if c[t] > 0 {
                g += weight[e as usize];
            }
            if c[f] > 1 {
                g -= weight[e as usize];
            }
        }
        g
    };
    let mut w0: f64 = (0..nv).filter(|&v| !side[v]).map(|v| vw[v]).sum();
    // can v move without leaving (or while approaching) the balance?
    let movable = |v: usize, w0: f64, side: &[bool]| -> bool {
        let n0 = if side[v] { w0 + vw[v] } else { w0 - vw[v] };
        let inside = |x: f64| (lo..=hi).contains(&x);
        inside(n0) || (!inside(w0) && (n0 - (lo + hi) / 2.0).abs() < (w0 - (lo + hi) / 2.0).abs())
    };
    let imbalance = |w0: f64| {
        if w0 < lo {
            lo - w0
        } else if w0 > hi {
            w0 - hi
        } else {
            0.0
        }
    };
    let mut cut = cut_of(&cnt);
    for _pass in 0..12 {
        let mut locked = vec![false; nv];
        let mut stamp = vec![0u32; nv];
        let mut heaps: [BinaryHeap<(greedy::Key, u32, u32)>; 2] =
            [BinaryHeap::new(), BinaryHeap::new()];
        for v in 0..nv {
            heaps[side[v] as usize].push((greedy::Key(gain(v, side, &cnt)), 0, v as u32));
        }
        let mut moves: Vec<usize> = Vec::new();
        let start = (imbalance(w0), 0.0);
        let mut run = 0.0;
        let mut best = start;
        let mut best_len = 0;
        let mut since_best = 0;
        loop {
            // the best movable vertex of each side, stale entries dropped
            let mut pick: Option<(f64, usize)> = None;
            for (f, heap) in heaps.iter_mut().enumerate() {
                while let Some(&(gv, st, v)) = heap.peek() {
                    let v = v as usize;
                    if locked[v] || st != stamp[v] || side[v] as usize != f {
                        heap.pop();
                        continue;
                    }
                    if !movable(v, w0, side) {
                        // not now: drop it for this pass
                        heap.pop();
                        continue;
                    }
                    if pick.is_none_or(|(pg, _)| gv.0 > pg) {
                        pick = Some((gv.0, v));
                    }
                    break;
                }
            }
            let Some((gv, v)) = pick else { break };
            heaps[side[v] as usize].pop();
            let f = side[v] as usize;
            locked[v] = true;
            side[v] = !side[v];
            w0 += if f == 0 { -vw[v] } else { vw[v] };
            for &e in &vedges[v] {
                cnt[e as usize][f] -= 1;
                cnt[e as usize][1 - f] += 1;
            }
            for &e in &vedges[v] {
                for &u in &edges[e as usize] {
                    let u = u as usize;
                    if !locked[u] {
                        stamp[u] += 1;
                        heaps[side[u] as usize].push((
                            greedy::Key(gain(u, side, &cnt)),
                            stamp[u],
                            u as u32,
                        ));
                    }
                }
            }
            moves.push(v);
            run += gv;
            // better: less imbalance, then more gain
            let now = (imbalance(w0), -run);
            if now.0 < best.0 - 1e-12 || (now.0 <= best.0 + 1e-12 && now.1 < best.1 - 1e-12) {
                best = now;
                best_len = moves.len();
                since_best = 0;
            } else {
                since_best += 1;
                if since_best > 64.max(nv / 8) {
                    break;
                }
            }
        }
        // undo the moves after the best prefix
        for &v in moves[best_len..].iter().rev() {
            let f = side[v] as usize;
            side[v] = !side[v];
            w0 += if f == 0 { -vw[v] } else { vw[v] };
            for &e in &vedges[v] {
                cnt[e as usize][f] -= 1;
                cnt[e as usize][1 - f] += 1;
            }
        }
        let improved = best_len > 0;
        cut = cut_of(&cnt);
        if !improved {
            break;
        }
    }
    cut.max(0.0)
}

/// Improve a tree by exact re-contraction of its subtrees of up to
/// [`WINDOW`] tensors (see the module doc), at most `passes` passes.
pub(crate) fn reconfigure(
    local: &Local,
    merges: &[(usize, usize)],
    passes: usize,
) -> Vec<(usize, usize)> {
    let t = Tree::build(local, merges);
    let n = t.n;
    if n < 3 {
        return merges.to_vec();
    }
    let mut kids = t.children.clone();
    let mut legs = t.legs;
    let mut cost = t.cost;
    let root = 2 * n - 2;
    for _ in 0..passes {
        let mut order: Vec<usize> = (n..2 * n - 1).collect();
        order.sort_by(|&a, &b| cost[b - n].total_cmp(&cost[a - n]).then(a.cmp(&b)));
        let mut improved = false;
        for v in order {
            // the window: breadth-first below v
            let mut inner = vec![v];
            let mut front: VecDeque<usize> = VecDeque::from([kids[v - n].0, kids[v - n].1]);
            let mut leaves: Vec<usize> = Vec::new();
            while let Some(x) = front.pop_front() {
                if x >= n && leaves.len() + front.len() + 2 <= WINDOW {
                    inner.push(x);
                    front.push_back(kids[x - n].0);
                    front.push_back(kids[x - n].1);
                } else {
                    leaves.push(x);
                }
            }
            if leaves.len() < 3 {
                continue;
            }
            let old: f64 = inner.iter().map(|&x| cost[x - n]).sum();
            let sets: Vec<&[u32]> = leaves.iter().map(|&x| &legs[x][..]).collect();
            let top = &legs[v];
            let (sub, back) = local.rebase(&sets, |i| top.binary_search(&i).is_ok());
            // the cheapest re-contraction that does not make the window's
            // largest tensor worse beyond the memory limit
            let old_max = inner
                .iter()
                .map(|&x| local.size_of(&legs[x]))
                .fold(0.0, f64::max);
            let free = Local {
                limit: f64::INFINITY,
                ..sub.clone()
            };
            let fits = |t: &Tree| t.largest() <= local.limit || t.largest() <= old_max;
            let mut found = dp::all_subsets(&free)
                .map(|m| (Tree::build(&sub, &m), m))
                .filter(|(t, _)| fits(t));
            if found.is_none() && local.limit.is_finite() {
                found = dp::all_subsets(&sub).map(|m| (Tree::build(&sub, &m), m));
            }
            let Some((nt, m)) = found else {
                continue;
            };
            if nt.total_cost() >= old * (1.0 - 1e-12) {
                continue;
            }
            improved = true;
            let k = leaves.len();
            let mut ids: Vec<usize> = leaves.clone();
            for j in 0..m.len() {
                ids.push(if j + 1 == m.len() { v } else { inner[j + 1] });
            }
            for (j, &(a, c)) in m.iter().enumerate() {
                let id = ids[k + j];
                kids[id - n] = (ids[a], ids[c]);
                legs[id] = nt.legs[k + j].iter().map(|&i| back[i as usize]).collect();
                cost[id - n] = nt.cost[j];
            }
        }
        if !improved {
            break;
        }
    }
    let out = to_merges(n, &kids, root);
    debug_assert_eq!(out.len(), n - 1);
    out
}
