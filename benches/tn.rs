//! Contraction time of planned tensor networks (issue 23, the speed half):
//! each network written as one sum of products, optimised (planned
//! pairwise, every step a GEMM stage where it is a matrix product) and
//! compiled with 1 and 2 threads, called on random data; beside, in the
//! same run, a baseline: hand-written ndarray `dot` chains for the ring
//! (matrix chain and trace) and the matrix-product-state norm (transfer
//! matrices site by site, as a user would write it), and the interpreter
//! running the optimised program for the small grid. Against opt_einsum on
//! numpy: `python/bench_tn.py`. `cargo bench --bench tn`.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use einsat::jit::{self, Arg};
use einsat::plan::{networks, Network};
use einsat::Value;
use ndarray::{Array2, ArrayD, Ix2, Ix3};

/// The network as a program: one named size per index (`d{id}`).
fn program(net: &Network) -> einsat::Function {
    einsat::load(&networks::program_text(net))
        .unwrap()
        .functions
        .remove(0)
}

fn optimised(net: &Network) -> einsat::Function {
    let f = program(net);
    let mut o = einsat::opt::Options::default();
    for (i, &s) in net.sizes().iter().enumerate() {
        o.sizes.insert(format!("d{i}"), s as usize);
    }
    einsat::opt::optimize(&f, &o).unwrap().program
}

/// `Tr(M0 · M1 ⋯ M(n-1))` with ndarray's `dot`.
fn ring_ndarray(ms: &[ArrayD<f64>]) -> f64 {
    let mut acc: Array2<f64> = ms[0].clone().into_dimensionality::<Ix2>().unwrap();
    for m in &ms[1..] {
        acc = acc.dot(&m.view().into_dimensionality::<Ix2>().unwrap());
    }
    acc.diag().sum()
}

/// ⟨bra|ket⟩ of `networks::mps_norm`'s tensors (ket sites, then bra
/// sites; `[p, r]`, `[l, p, r]`…, `[l, p]`) by transfer matrices.
fn mps_ndarray(ts: &[ArrayD<f64>], sites: usize) -> f64 {
    let (ket, bra) = ts.split_at(sites);
    fn two(a: &ArrayD<f64>) -> ndarray::ArrayView2<'_, f64> {
        a.view().into_dimensionality::<Ix2>().unwrap()
    }
    // E[r, r'] = sum_p A0[p, r] B0[p, r']
    let mut e: Array2<f64> = two(&ket[0]).t().dot(&two(&bra[0]));
    for k in 1..sites - 1 {
        let a = ket[k].view().into_dimensionality::<Ix3>().unwrap();
        let b = bra[k].view().into_dimensionality::<Ix3>().unwrap();
        let (l, p, r) = a.dim();
        let a2 = a.to_shape((l, p * r)).unwrap();
        // X[l', p, r] = sum_l E[l, l'] A[l, p, r]
        let x = e.t().dot(&a2);
        let x = x.to_shape((l * p, r)).unwrap();
        let b2 = b.to_shape((l * p, r)).unwrap();
        e = x.t().dot(&b2);
    }
    let x = e.t().dot(&two(&ket[sites - 1]));
    (&x * &two(&bra[sites - 1])).sum()
}

fn tn(c: &mut Criterion) {
    let mut g = c.benchmark_group("tn");
    g.sample_size(20);
    let cases: Vec<(&str, Network)> = vec![
        ("ring8", networks::ring(8, 8)),
        ("ring50", networks::ring(50, 8)),
        ("mps32", networks::mps_norm(32, 32, 2)),
        ("grid4x4", networks::grid(4, 4, 4)),
        ("grid6x6", networks::grid(6, 6, 4)),
        ("rr100", networks::random_regular(100, 3, 2, 100)),
    ];
    for (name, net) in &cases {
        let f = optimised(net);
        let inputs = networks::random_data(net, 1);
        let args: Vec<Arg> = inputs.iter().map(|a| Arg::Array(a.view())).collect();
        for threads in [1, 2] {
            let k = jit::compile_with(
                &f,
                &jit::Options {
                    threads,
                    ..jit::Options::default()
                },
            )
            .unwrap();
            g.bench_with_input(
                BenchmarkId::new(format!("einsat {threads}t"), name),
                &args,
                |b, a| b.iter(|| k.call_args(black_box(a)).unwrap()),
            );
        }
        match *name {
            "ring8" | "ring50" => {
                g.bench_with_input(
                    BenchmarkId::new("ndarray dot chain", name),
                    &inputs,
                    |b, i| b.iter(|| ring_ndarray(black_box(i))),
                );
            }
            "mps32" => {
                let sites = net.inputs().len() / 2;
                g.bench_with_input(
                    BenchmarkId::new("ndarray transfer matrices", name),
                    &inputs,
                    |b, i| b.iter(|| mps_ndarray(black_box(i), sites)),
                );
            }
            "grid4x4" => {
                let vals: Vec<Value> = inputs.iter().map(|a| Value::Array(a.clone())).collect();
                g.bench_with_input(
                    BenchmarkId::new("interpreter (planned)", name),
                    &vals,
                    |b, v| b.iter(|| einsat::interp::run(&f, black_box(v)).unwrap()),
                );
            }
            _ => {}
        }
    }
    g.finish();
}

/// The baselines compute what the kernels compute (checked once, before
/// timing anything).
fn check(_: &mut Criterion) {
    for (net, base) in [
        (networks::ring(8, 8), 0),
        (networks::mps_norm(32, 32, 2), 1),
    ] {
        let f = optimised(&net);
        let inputs = networks::random_data(&net, 1);
        let args: Vec<Arg> = inputs.iter().map(|a| Arg::Array(a.view())).collect();
        let got: f64 = match jit::compile(&f).unwrap().call_args(&args).unwrap() {
            Value::Real(x) => x,
            v => panic!("{v}"),
        };
        let want = if base == 0 {
            ring_ndarray(&inputs)
        } else {
            mps_ndarray(&inputs, net.inputs().len() / 2)
        };
        assert!(
            (got - want).abs() <= 1e-9 * want.abs().max(1e-300),
            "{got} vs {want}"
        );
    }
}

criterion_group!(benches, check, tn);
criterion_main!(benches);
