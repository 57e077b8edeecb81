//! Planning time of the contraction planner alone (`einsat::plan`) on its
//! benchmark networks (`plan::networks`): rings, a matrix-product-state
//! norm, a 2D grid, random einsums of 3–8 operands and random 3-regular
//! graphs of 50–500 tensors, with `Method::Auto` and the default options.
//! The flops of those plans against opt_einsum and cotengra:
//! `examples/plan_networks.rs` and `python/bench_plan.py`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use einsat::plan::{networks, plan, Network, Options};

fn small(c: &mut Criterion) {
    let mut g = c.benchmark_group("plan");
    let mut cases: Vec<(String, Network)> = vec![
        ("ring8".into(), networks::ring(8, 8)),
        ("ring16".into(), networks::ring(16, 8)),
        ("ring24".into(), networks::ring(24, 8)),
    ];
    for n in 3..=8 {
        cases.push((
            format!("einsum{n}"),
            networks::random_einsum(n, n as u64 * 10),
        ));
    }
    for (name, net) in &cases {
        g.bench_with_input(BenchmarkId::from_parameter(name), net, |b, net| {
            b.iter(|| plan(net, &Options::default()).unwrap())
        });
    }
    g.finish();
}

fn large(c: &mut Criterion) {
    let mut g = c.benchmark_group("plan");
    g.sample_size(10);
    let cases: Vec<(String, Network)> = vec![
        ("mps32".into(), networks::mps_norm(32, 32, 2)),
        ("grid6x6".into(), networks::grid(6, 6, 4)),
        ("rr20".into(), networks::random_regular(20, 3, 2, 20)),
        ("rr50".into(), networks::random_regular(50, 3, 2, 50)),
        ("rr100".into(), networks::random_regular(100, 3, 2, 100)),
        ("rr200".into(), networks::random_regular(200, 3, 2, 200)),
        ("rr500".into(), networks::random_regular(500, 3, 2, 500)),
    ];
    for (name, net) in &cases {
        g.bench_with_input(BenchmarkId::from_parameter(name), net, |b, net| {
            b.iter(|| plan(net, &Options::default()).unwrap())
        });
    }
    g.finish();
}

criterion_group!(benches, small, large);
criterion_main!(benches);
