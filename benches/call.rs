//! Per-call overhead of a kernel on small arrays (issue 12: at most
//! 100 ns for the boundary check and dispatch), beside ndarray on the same
//! sizes in the same run: the dot product of two 3-vectors and a 3×3
//! matrix–vector product, through every call path — `call_into` on
//! `Value`s, `call_args_into` on views (built once, and built in the
//! timed loop as a caller building them per call would), `eval_into` on
//! arrays and on views passed by value, and the allocating `call`,
//! `call_args` and `eval` (one result per call). `cargo bench --bench
//! call`.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use einsat::jit::{self, Arg, ArgMut, Kernel};
use einsat::Value;
use ndarray::{arr0, array, Array1, ArrayD, IxDyn};
use std::sync::Arc;

fn kernel(src: &str) -> Arc<Kernel> {
    let p = einsat::load(src).unwrap();
    jit::compile(&p.functions[0]).unwrap()
}

fn dot(c: &mut Criterion) {
    let k = kernel("fn dot(x: [n]R, y: [n]R) -> R = sum(i:n) x[i] * y[i]");
    let x = array![1.0, 2.0, 3.0];
    let y = array![0.5, -1.0, 2.0];
    let mut g = c.benchmark_group("dot3");
    g.bench_function("ndarray dot", |b| {
        b.iter(|| black_box(&x).dot(black_box(&y)))
    });
    let args = [
        Value::Array(x.clone().into_dyn()),
        Value::Array(y.clone().into_dyn()),
    ];
    let mut out = Value::Real(0.0);
    g.bench_function("einsat call_into (Value)", |b| {
        b.iter(|| k.call_into(black_box(&args), &mut out).unwrap())
    });
    g.bench_function("einsat call -> Value", |b| {
        b.iter(|| k.call(black_box(&args)).unwrap())
    });
    let mut r = arr0(0.0);
    {
        let a = [
            Arg::Array(x.view().into_dyn()),
            Arg::Array(y.view().into_dyn()),
        ];
        let mut o = ArgMut::Array(r.view_mut().into_dyn());
        g.bench_function("einsat call_args_into (views built once)", |b| {
            b.iter(|| k.call_args_into(black_box(&a), &mut o).unwrap())
        });
        g.bench_function("einsat call_args -> Value", |b| {
            b.iter(|| k.call_args(black_box(&a)).unwrap())
        });
    }
    g.bench_function("einsat call_args_into (views built per call)", |b| {
        b.iter(|| {
            let a = [
                Arg::Array(x.view().into_dyn()),
                Arg::Array(y.view().into_dyn()),
            ];
            let mut o = ArgMut::Array(r.view_mut().into_dyn());
            k.call_args_into(black_box(&a), &mut o).unwrap()
        })
    });
    g.bench_function("einsat eval_into (arrays)", |b| {
        b.iter(|| k.eval_into((black_box(&x), black_box(&y)), &mut r).unwrap())
    });
    g.bench_function("einsat eval_into (views by value)", |b| {
        b.iter(|| {
            k.eval_into((black_box(&x).view(), black_box(&y).view()), r.view_mut())
                .unwrap()
        })
    });
    g.bench_function("einsat eval -> f64", |b| {
        b.iter(|| k.eval::<f64>((black_box(&x), black_box(&y))).unwrap())
    });
    g.finish();
}

fn matvec(c: &mut Criterion) {
    let k = kernel("fn mv(A: [n,m]R, x: [m]R) -> [n]R = gen(i:n) sum(j:m) A[i,j] * x[j]");
    let a = array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.5]];
    let x = array![0.5, -1.0, 2.0];
    let mut out = Array1::zeros(3);
    let mut g = c.benchmark_group("matvec3");
    g.bench_function("ndarray dot", |b| {
        b.iter(|| black_box(&a).dot(black_box(&x)))
    });
    g.bench_function("ndarray general_mat_vec_mul (into)", |b| {
        b.iter(|| {
            ndarray::linalg::general_mat_vec_mul(1.0, black_box(&a), black_box(&x), 0.0, &mut out)
        })
    });
    let mut o = Array1::zeros(3);
    g.bench_function("einsat eval_into (arrays)", |b| {
        b.iter(|| k.eval_into((black_box(&a), black_box(&x)), &mut o).unwrap())
    });
    g.bench_function("einsat eval_into (transposed view)", |b| {
        b.iter(|| {
            k.eval_into((black_box(&a).t(), black_box(&x)), &mut o)
                .unwrap()
        })
    });
    g.bench_function("einsat eval -> Array1", |b| {
        b.iter(|| {
            k.eval::<Array1<f64>>((black_box(&a), black_box(&x)))
                .unwrap()
        })
    });
    let args = [
        Value::Array(a.clone().into_dyn()),
        Value::Array(x.clone().into_dyn()),
    ];
    let mut vo = Value::Array(ArrayD::zeros(IxDyn(&[3])));
    g.bench_function("einsat call_into (Value)", |b| {
        b.iter(|| k.call_into(black_box(&args), &mut vo).unwrap())
    });
    g.finish();
}

criterion_group!(
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = dot, matvec
);
criterion_main!(benches);
