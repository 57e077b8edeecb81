//! Tests of the planner against independent references: an exhaustive
//! search over all pairwise trees, and a checker that replays a plan with
//! plain sets.

use super::model::Rng;
use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::collections::BTreeSet;

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

type Set = BTreeSet<usize>;

fn size_of(s: &Set, sizes: &[u64]) -> f64 {
    s.iter().map(|&i| sizes[i] as f64).product()
}

fn cost(conv: Convention, union: f64, sums: bool) -> f64 {
    match conv {
        Convention::MultiplyAdds => union,
        Convention::OptEinsum => union * if sums { 2.0 } else { 1.0 },
    }
}

/// The one-operand steps of the model: cost, and the tensors after them;
/// `None` if one of them makes a tensor larger than `limit`.
fn presum(net: &Network, conv: Convention, limit: f64) -> Option<(f64, Vec<Set>)> {
    let ins: Vec<Set> = net
        .inputs()
        .iter()
        .map(|x| x.iter().copied().collect())
        .collect();
    let out: Set = net.output().iter().copied().collect();
    let mut total = 0.0;
    let mut ts = Vec::new();
    for (t, s) in ins.iter().enumerate() {
        let single: Set = s
            .iter()
            .copied()
            .filter(|i| {
                !out.contains(i)
                    && ins
                        .iter()
                        .enumerate()
                        .all(|(u, x)| u == t || !x.contains(i))
            })
            .collect();
        let r: Set = s.difference(&single).copied().collect();
        if !single.is_empty() || ins.len() == 1 {
            total += cost(conv, size_of(s, net.sizes()), !single.is_empty());
            if size_of(&r, net.sizes()) > limit {
                return None;
            }
        }
        ts.push(r);
    }
    Some((total, ts))
}

/// The least cost over every pairwise tree of `ts` (no intermediate above
/// `limit`; infinity if none).
fn exhaustive(ts: &[Set], out: &Set, sizes: &[u64], conv: Convention, limit: f64) -> f64 {
    if ts.len() <= 1 {
        return 0.0;
    }
    let mut best = f64::INFINITY;
    for i in 0..ts.len() {
        for j in i + 1..ts.len() {
            let u: Set = ts[i].union(&ts[j]).copied().collect();
            let rest: Vec<Set> = (0..ts.len())
                .filter(|&k| k != i && k != j)
                .map(|k| ts[k].clone())
                .collect();
            let kept: Set = u
                .iter()
                .copied()
                .filter(|x| out.contains(x) || rest.iter().any(|r| r.contains(x)))
                .collect();
            if size_of(&kept, sizes) > limit {
                continue;
            }
            let c = cost(conv, size_of(&u, sizes), kept.len() < u.len());
            let mut next = rest;
            next.push(kept);
            best = best.min(c + exhaustive(&next, out, sizes, conv, limit));
        }
    }
    best
}

fn reference(net: &Network, conv: Convention, limit: f64) -> f64 {
    let out: Set = net.output().iter().copied().collect();
    match presum(net, conv, limit) {
        None => f64::INFINITY,
        Some((c, ts)) => c + exhaustive(&ts, &out, net.sizes(), conv, limit),
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// Replay `plan` with sets: every input used once, each step's kept and
/// summed indices, its costs and size, the result's indices; slicing by
/// its definition. Panics on a mismatch.
fn check(net: &Network, plan: &Plan) {
    let sizes = net.sizes();
    let n = net.inputs().len();
    let out: Set = net.output().iter().copied().collect();
    let sliced: Set = plan.sliced.iter().copied().collect();
    let slices: f64 = sliced.iter().map(|&i| sizes[i] as f64).product();
    assert!(close(slices, plan.slices));
    let mut avail: BTreeMap<usize, Set> = net
        .inputs()
        .iter()
        .enumerate()
        .map(|(t, x)| (t, x.iter().copied().collect()))
        .collect();
    let (mut fl, mut fo, mut un, mut big) = (0.0, 0.0, 0.0, 0.0f64);
    for (k, s) in plan.steps.iter().enumerate() {
        assert!(!s.operands.is_empty() && s.operands.len() <= 2, "{s:?}");
        let mut u = Set::new();
        for o in &s.operands {
            let t = avail
                .remove(o)
                .unwrap_or_else(|| panic!("operand {o} of step {k} not available"));
            u.extend(t);
        }
        let kept: Set = u
            .iter()
            .copied()
            .filter(|i| out.contains(i) || avail.values().any(|t| t.contains(i)))
            .collect();
        let summed: Vec<usize> = u.difference(&kept).copied().collect();
        assert_eq!(
            s.kept,
            kept.iter().copied().collect::<Vec<_>>(),
            "kept of step {k}"
        );
        assert_eq!(s.summed, summed, "summed of step {k}");
        let per: f64 = u.difference(&sliced).map(|&i| sizes[i] as f64).product();
        assert!(close(s.flops, per * slices), "flops of step {k}");
        let sums = !summed.is_empty();
        assert!(close(
            s.flops_opt_einsum,
            cost(Convention::OptEinsum, per * slices, sums)
        ));
        let sz: f64 = kept.difference(&sliced).map(|&i| sizes[i] as f64).product();
        assert!(close(s.size, sz), "size of step {k}");
        fl += s.flops;
        fo += s.flops_opt_einsum;
        un += size_of(&u, sizes);
        big = big.max(sz);
        avail.insert(n + k, kept);
    }
    assert_eq!(avail.len(), 1, "one tensor left");
    let (_, last) = avail.into_iter().next().unwrap();
    assert_eq!(last, out, "the result's indices");
    assert!(close(fl, plan.flops) && close(fo, plan.flops_opt_einsum));
    assert!(close(un, plan.unsliced_flops));
    assert!(close(big, plan.largest_intermediate));
    if let Some(l) = plan.memory_limit {
        assert!(
            plan.largest_intermediate <= l,
            "{} > {l}",
            plan.largest_intermediate
        );
    }
    // the linear path replays the same operands
    let mut cur: Vec<usize> = (0..n).collect();
    for (k, (pos, s)) in plan.linear_path().iter().zip(&plan.steps).enumerate() {
        let ops: Vec<usize> = pos.iter().map(|&p| cur[p]).collect();
        assert_eq!(ops, s.operands);
        let mut d = pos.clone();
        d.sort_unstable_by(|a, b| b.cmp(a));
        for p in d {
            cur.remove(p);
        }
        cur.push(n + k);
    }
}

fn opts(method: Method, conv: Convention, limit: MemoryLimit) -> Options {
    Options {
        method,
        convention: conv,
        memory_limit: limit,
        ..Options::default()
    }
}

/// Random networks: `n` inputs over up to `m` indices (scalars, single
/// indices, hyperedges and batch indices all occur), sizes 1..=5.
fn networks(ns: std::ops::RangeInclusive<usize>, m: usize) -> impl Strategy<Value = Network> {
    (
        prop::collection::vec(prop::collection::vec(0..m, 0..5), ns),
        prop::collection::vec(1u64..6, m),
        prop::collection::vec(any::<bool>(), m),
    )
        .prop_map(|(inputs, sizes, outm)| {
            let used: Set = inputs.iter().flatten().copied().collect();
            let output: Vec<usize> = used.iter().copied().filter(|&i| outm[i]).collect();
            Network::new(inputs, output, sizes).unwrap()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(256)))]

    /// `optimal` (and `auto`) find exactly the least cost over all pairwise
    /// trees, in both conventions.
    #[test]
    fn optimal_is_exhaustive(net in networks(3..=6, 7)) {
        for conv in [Convention::MultiplyAdds, Convention::OptEinsum] {
            let want = reference(&net, conv, f64::INFINITY);
            for m in [Method::Optimal, Method::Auto] {
                let p = plan(&net, &opts(m, conv, MemoryLimit::Unlimited)).unwrap();
                check(&net, &p);
                let got = match conv {
                    Convention::MultiplyAdds => p.flops,
                    Convention::OptEinsum => p.flops_opt_einsum,
                };
                prop_assert!(close(got, want), "{m:?} {conv:?}: {got} vs {want} on {net:?}");
            }
        }
    }

    /// Under a memory limit, `optimal` finds the least cost of the trees
    /// within it when there is one, and otherwise slices so that every
    /// tensor fits.
    #[test]
    fn optimal_within_limit(net in networks(3..=6, 7), lim in 1u32..40) {
        let l = lim as f64;
        let p = plan(&net, &opts(Method::Optimal, Convention::MultiplyAdds, MemoryLimit::Elements(l))).unwrap();
        check(&net, &p);
        prop_assert!(p.largest_intermediate <= l);
        let want = reference(&net, Convention::MultiplyAdds, l);
        if want.is_finite() {
            prop_assert!(p.sliced.is_empty(), "{p:?}");
            prop_assert!(close(p.flops, want), "{} vs {want}", p.flops);
        } else {
            prop_assert!(!p.sliced.is_empty());
            prop_assert!(p.flops >= p.unsliced_flops * (1.0 - 1e-12));
        }
    }

    /// Greedy and hyper plans are valid trees, never cheaper than optimal.
    #[test]
    fn heuristics_are_valid(net in networks(3..=6, 7), seed in 0u64..4) {
        let best = reference(&net, Convention::MultiplyAdds, f64::INFINITY);
        for m in [Method::Greedy, Method::Hyper] {
            let o = Options { seed, ..opts(m, Convention::MultiplyAdds, MemoryLimit::Unlimited) };
            let p = plan(&net, &o).unwrap();
            check(&net, &p);
            prop_assert!(p.flops >= best * (1.0 - 1e-9));
        }
    }

}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(256) / 8))]

    /// Larger networks: every method's plan replays, limits hold.
    #[test]
    fn larger_networks_are_valid(net in networks(7..=40, 60), lim in prop::option::of(2u32..200)) {
        let limit = lim.map_or(MemoryLimit::Unlimited, |l| MemoryLimit::Elements(l as f64));
        for m in [Method::Greedy, Method::Hyper, Method::Auto] {
            let o = Options {
                greedy_trials: Some(4),
                hyper_trials: Some(3),
                ..opts(m, Convention::MultiplyAdds, limit)
            };
            let p = plan(&net, &o).unwrap();
            check(&net, &p);
        }
    }
}

fn ring(n: usize, size: u64) -> Network {
    let inputs = (0..n).map(|k| vec![k, (k + 1) % n]).collect();
    Network::new(inputs, vec![], vec![size; n]).unwrap()
}

#[test]
fn rings_match_opt_einsum_greedy_or_better() {
    // issue 23: opt_einsum's greedy costs 6,272 / 14,464 / 22,656
    for (n, oe) in [(8, 6272.0), (16, 14464.0), (24, 22656.0)] {
        let net = ring(n, 8);
        let p = plan(&net, &Options::default()).unwrap();
        check(&net, &p);
        assert!(p.flops_opt_einsum <= oe, "ring {n}: {}", p.flops_opt_einsum);
    }
}

#[test]
fn special_shapes() {
    let sz = |_: char| 3;
    // one input: a single step, numpy's [(0,)]
    let net = Network::from_spec("ab->ba", sz).unwrap();
    let p = plan(&net, &Options::default()).unwrap();
    check(&net, &p);
    assert_eq!(p.linear_path(), vec![vec![0]]);
    // indices in one tensor only are summed first, by a one-operand step
    let net = Network::from_spec("abc,cd->d", sz).unwrap();
    let p = plan(&net, &Options::default()).unwrap();
    check(&net, &p);
    assert_eq!(p.steps[0].operands, vec![0]);
    assert_eq!(p.steps[0].summed, vec!['a' as usize, 'b' as usize]);
    // scalars, disconnected parts, batch hyperedges
    for spec in [
        ",->",
        ",ab,->ab",
        "ab,cd->abcd",
        "bij,bjk,bkl->bil",
        "ai,bi,ci,di->abcd",
        "i,i,i->",
    ] {
        let net = Network::from_spec(spec, sz).unwrap();
        for m in [Method::Optimal, Method::Greedy, Method::Hyper, Method::Auto] {
            let p = plan(&net, &Options::method(m)).unwrap();
            check(&net, &p);
        }
    }
    // implicit output: letters used once, sorted
    let net = Network::from_spec("ba,ac", sz).unwrap();
    assert_eq!(net.output(), &['b' as usize, 'c' as usize]);
}

#[test]
fn linear_path_is_numpys() {
    // a chain a-b-c-d: the middle pair first, then the rest
    let net = Network::from_spec(
        "ab,bc,cd->ad",
        |c| if c == 'b' || c == 'c' { 10 } else { 2 },
    )
    .unwrap();
    let p = plan(&net, &Options::method(Method::Optimal)).unwrap();
    check(&net, &p);
    assert_eq!(p.flops, 2.0 * 10.0 * 10.0 + 2.0 * 10.0 * 2.0);
    let ssa = p.ssa_path();
    let lin = p.linear_path();
    assert_eq!(ssa.len(), 2);
    assert_eq!(lin[1], vec![0, 1]);
    assert!(lin[0] == vec![0, 1] || lin[0] == vec![1, 2]);
}

#[test]
fn bad_networks_are_errors() {
    assert_eq!(
        Network::new(vec![], vec![], vec![]),
        Err(PlanError::NoInputs)
    );
    assert!(matches!(
        Network::new(vec![vec![0, 3]], vec![], vec![2, 2]),
        Err(PlanError::UnknownIndex { index: 3, .. })
    ));
    assert_eq!(
        Network::new(vec![vec![0]], vec![1], vec![2, 2]),
        Err(PlanError::OutputNotInInputs(1))
    );
    assert_eq!(
        Network::new(vec![vec![0]], vec![0, 0], vec![2]),
        Err(PlanError::DuplicateOutput(0))
    );
    assert!(Network::from_spec("a1,b->", |_| 2).is_err());
    let net = ring(4, 2);
    let o = Options {
        memory_limit: MemoryLimit::Elements(0.5),
        ..Options::default()
    };
    assert_eq!(plan(&net, &o), Err(PlanError::ZeroLimit));
}

#[test]
fn optimal_refuses_huge_connected_parts() {
    let net = ring(200, 2);
    let e = plan(&net, &Options::method(Method::Optimal)).unwrap_err();
    assert!(
        matches!(e, PlanError::TooLargeForOptimal { got: 200, .. }),
        "{e}"
    );
}

/// A random network of `n` tensors, each index shared by two tensors
/// (a random graph of degree about 3), bond size `d`.
fn random_graph(n: usize, d: u64, seed: u64) -> Network {
    let mut r = Rng::new(seed, 99);
    let mut inputs: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut next = 0;
    // a path keeps it connected, then random extra edges
    for t in 1..n {
        let u = r.below(t);
        inputs[t].push(next);
        inputs[u].push(next);
        next += 1;
    }
    for _ in 0..n / 2 {
        let (a, b) = (r.below(n), r.below(n));
        if a != b {
            inputs[a].push(next);
            inputs[b].push(next);
            next += 1;
        }
    }
    Network::new(inputs, vec![], vec![d; next]).unwrap()
}

#[test]
fn deterministic_for_a_seed() {
    let net = random_graph(80, 2, 7);
    for m in [Method::Greedy, Method::Hyper, Method::Auto] {
        let o = Options {
            seed: 5,
            hyper_trials: Some(4),
            ..Options::method(m)
        };
        let a = plan(&net, &o).unwrap();
        let b = plan(&net, &o).unwrap();
        check(&net, &a);
        assert_eq!(a.steps, b.steps, "{m:?}");
    }
}

#[test]
fn hyper_beats_plain_greedy_on_a_random_graph() {
    let net = random_graph(120, 2, 3);
    let g = plan(
        &net,
        &Options {
            greedy_trials: Some(1),
            ..Options::method(Method::Greedy)
        },
    )
    .unwrap();
    let h = plan(&net, &Options::method(Method::Hyper)).unwrap();
    check(&net, &h);
    assert!(h.flops <= g.flops, "{} > {}", h.flops, g.flops);
}

#[test]
fn thousands_of_indices() {
    // a chain of 2000 matrices: 2001 distinct indices
    let n = 2000;
    let inputs = (0..n).map(|k| vec![k, k + 1]).collect();
    let net = Network::new(inputs, vec![0, n], vec![3; n + 1]).unwrap();
    let p = plan(&net, &Options::method(Method::Greedy)).unwrap();
    check(&net, &p);
    assert_eq!(p.flops, 27.0 * (n - 1) as f64);
}

#[test]
fn slicing_says_so_and_fits() {
    // a ring of 6 with bond 10: every pairwise tree makes a 100-element
    // tensor, so a limit of 20 needs slicing
    let net = ring(6, 10);
    let free = plan(&net, &Options::method(Method::Optimal)).unwrap();
    let o = Options {
        memory_limit: MemoryLimit::Elements(20.0),
        ..Options::method(Method::Optimal)
    };
    let p = plan(&net, &o).unwrap();
    check(&net, &p);
    assert!(!p.sliced.is_empty());
    assert!(p.largest_intermediate <= 20.0);
    assert!(p.flops >= free.flops);
    assert_eq!(p.slices, 10.0);
    // the default limit leaves small networks alone
    assert!(free.sliced.is_empty());
    assert_eq!(free.memory_limit, Some((1u64 << 27) as f64));
}

#[test]
fn connected_dp_matches_all_subsets() {
    // random connected networks of 7..12 tensors: the connected DP's cost
    // equals the all-subsets DP's where the latter needs no outer product
    for seed in 0..20 {
        let n = 7 + (seed as usize % 6);
        let net = random_graph(n, 2 + seed % 3, seed);
        let pre = Prepared::new(&net, Convention::MultiplyAdds, f64::INFINITY);
        let a = dp::all_subsets(&pre.local).unwrap();
        let c = dp::connected(&pre.local, None).unwrap();
        let (ca, _) = pre.local.evaluate(&a);
        let (cc, _) = pre.local.evaluate(&c);
        assert!(cc >= ca * (1.0 - 1e-12), "seed {seed}");
        // graphs of bond >= 2 rarely profit from outer products
        assert!(cc <= ca * 1.5, "seed {seed}: {cc} vs {ca}");
    }
}

#[test]
fn reconfiguration_never_worsens() {
    for seed in 0..5 {
        let net = random_graph(60, 2, seed);
        let pre = Prepared::new(&net, Convention::MultiplyAdds, f64::INFINITY);
        let mut r = Rng::new(seed, 0);
        let g = greedy::run(&pre.local, 1.0, 0.5, &mut r);
        let re = partition::reconfigure(&pre.local, &g, 4);
        let (cg, _) = pre.local.evaluate(&g);
        let (cr, _) = pre.local.evaluate(&re);
        assert_eq!(re.len(), g.len());
        assert!(cr <= cg, "seed {seed}: {cr} > {cg}");
    }
}

#[test]
fn a_given_path_is_costed_as_the_search_costs_it() {
    for seed in 0..10 {
        let net = random_graph(9, 2 + seed % 3, seed);
        let o = Options::default();
        let p = plan(&net, &o).unwrap();
        let given = plan_path(&net, &p.linear_path(), &o).unwrap();
        assert_eq!(given.method, Method::Given);
        assert_eq!(given.flops, p.flops, "seed {seed}");
        assert_eq!(given.linear_path(), p.linear_path());
    }
    // numpy's own path form: a ring of four matrices, left to right
    let net = Network::from_spec("ab,bc,cd,da->", |_| 8).unwrap();
    let p = plan_path(
        &net,
        &[vec![0, 1], vec![0, 1], vec![0, 1]],
        &Options::default(),
    )
    .unwrap();
    assert_eq!(p.steps.len(), 3);
    assert_eq!(p.flops, 8.0 * 8.0 * 8.0 * 2.0 + 8.0 * 8.0);
    // an unfinished path is finished in order; a bad one is an error
    let q = plan_path(&net, &[vec![2, 3]], &Options::default()).unwrap();
    assert_eq!(q.steps.len(), 3);
    assert!(matches!(
        plan_path(&net, &[vec![0, 4]], &Options::default()),
        Err(PlanError::Path(_))
    ));
    assert!(matches!(
        plan_path(&net, &[vec![1, 1]], &Options::default()),
        Err(PlanError::Path(_))
    ));
}
