//! The JIT beside its best Rust peer, measured in the same run, on the
//! programs of `benches/perf.tl`: matvec and matmul (ndarray's `dot`, and
//! naive loops), a batched matmul, a three-operand contraction (`dot`
//! twice), a 5-point blur with zero padding, a row softmax and a
//! lower-triangular matvec (hand-written loops). The JIT runs the optimised
//! program through `call_into` (no allocation per call); matmul runs on one
//! thread and on all cores. Throughput is in elements of flops: criterion's
//! Gelem/s are GFLOP/s. `cargo bench --bench jit` takes a few minutes.

#[path = "../examples/peers/blur.rs"]
mod blur;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use einsat::jit::{self, Kernel, Options};
use einsat::Value;
use ndarray::{Array1, Array2, Array3, ArrayD, IxDyn};
use std::sync::Arc;
use std::time::Duration;

const SRC: &str = include_str!("perf.tl");

/// The optimised kernel of `name` (optimised for the sizes it runs with).
fn kernel(name: &str, threads: usize, sizes: &[(&str, usize)]) -> Arc<Kernel> {
    let prog = einsat::load(SRC).unwrap();
    let f = prog.get(name).unwrap();
    let opts = einsat::opt::Options {
        sizes: sizes.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        ..einsat::opt::Options::default()
    };
    let g = einsat::opt::optimize(f, &opts).unwrap().program;
    jit::compile_with(
        &g,
        &Options {
            threads,
            ..Options::default()
        },
    )
    .unwrap()
}

fn mat(n: usize, s: f64) -> Array2<f64> {
    Array2::from_shape_fn((n, n), |(i, j)| ((i * 7 + j * 3) % 11) as f64 * s - 0.5)
}

fn dynv<D: ndarray::Dimension>(a: &ndarray::Array<f64, D>) -> Value {
    Value::Array(a.clone().into_dyn())
}

fn zeros(shape: &[usize]) -> Value {
    Value::Array(ArrayD::zeros(IxDyn(shape)))
}

fn naive_matvec(a: &Array2<f64>, x: &Array1<f64>, y: &mut Array1<f64>) {
    let n = a.nrows();
    let (a, x) = (a.as_slice().unwrap(), x.as_slice().unwrap());
    let y = y.as_slice_mut().unwrap();
    for i in 0..n {
        let mut acc = 0.0;
        for j in 0..n {
            acc += a[i * n + j] * x[j];
        }
        y[i] = acc;
    }
}

fn naive_matmul(a: &Array2<f64>, b: &Array2<f64>, c: &mut Array2<f64>) {
    let n = a.nrows();
    let (a, b) = (a.as_slice().unwrap(), b.as_slice().unwrap());
    let c = c.as_slice_mut().unwrap();
    // i-k-j order: the inner loop streams rows of B and C
    c.fill(0.0);
    for i in 0..n {
        for k in 0..n {
            let aik = a[i * n + k];
            for j in 0..n {
                c[i * n + j] += aik * b[k * n + j];
            }
        }
    }
}

/// The peer that checks every neighbour: [`blur::naive`] on the arrays.
fn blur_naive(img: &Array2<f64>, out: &mut Array2<f64>) {
    let n = img.nrows();
    blur::naive(img.as_slice().unwrap(), out.as_slice_mut().unwrap(), n)
}

/// The blur as a careful programmer writes it (`examples/peers/blur.rs`).
fn blur_peeled(img: &Array2<f64>, out: &mut Array2<f64>) {
    blur::peeled(
        img.as_slice().unwrap(),
        out.as_slice_mut().unwrap(),
        img.nrows(),
    );
}

fn softmax(a: &Array2<f64>, out: &mut Array2<f64>) {
    let n = a.nrows();
    let x = a.as_slice().unwrap();
    let o = out.as_slice_mut().unwrap();
    for i in 0..n {
        let row = &x[i * n..(i + 1) * n];
        let s: f64 = row.iter().map(|v| v.exp()).sum();
        for j in 0..n {
            o[i * n + j] = row[j].exp() / s;
        }
    }
}

fn trimv(a: &Array2<f64>, x: &Array1<f64>, y: &mut Array1<f64>) {
    let n = a.nrows();
    let (a, x) = (a.as_slice().unwrap(), x.as_slice().unwrap());
    let y = y.as_slice_mut().unwrap();
    for i in 0..n {
        let mut acc = 0.0;
        for j in 0..=i {
            acc += a[i * n + j] * x[j];
        }
        y[i] = acc;
    }
}

fn bench_matvec(c: &mut Criterion) {
    let mut g = c.benchmark_group("matvec");
    g.sample_size(20)
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500));
    for n in [256usize, 1024] {
        g.throughput(Throughput::Elements(2 * (n * n) as u64));
        let k = kernel("matvec", 0, &[("n", n)]);
        let a = mat(n, 0.1);
        let x = Array1::from_shape_fn(n, |i| (i % 5) as f64 - 2.0);
        let args = [dynv(&a), dynv(&x)];
        let mut out = zeros(&[n]);
        g.bench_with_input(BenchmarkId::new("jit", n), &n, |b, _| {
            b.iter(|| k.call_into(&args, &mut out).unwrap())
        });
        let mut y = Array1::zeros(n);
        g.bench_with_input(BenchmarkId::new("naive-rust", n), &n, |b, _| {
            b.iter(|| naive_matvec(&a, &x, &mut y))
        });
        g.bench_with_input(BenchmarkId::new("ndarray-dot", n), &n, |b, _| {
            b.iter(|| a.dot(&x))
        });
    }
    g.finish();
}

fn bench_matmul(c: &mut Criterion) {
    let mut g = c.benchmark_group("matmul");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500));
    for n in [128usize, 512] {
        g.throughput(Throughput::Elements(2 * (n * n * n) as u64));
        let one = kernel("matmul", 1, &[("n", n)]);
        let all = kernel("matmul", 0, &[("n", n)]);
        let a = mat(n, 0.1);
        let bm = mat(n, 0.2);
        let args = [dynv(&a), dynv(&bm)];
        let mut out = zeros(&[n, n]);
        g.bench_with_input(BenchmarkId::new("jit-1-thread", n), &n, |b, _| {
            b.iter(|| one.call_into(&args, &mut out).unwrap())
        });
        g.bench_with_input(BenchmarkId::new("jit-all-threads", n), &n, |b, _| {
            b.iter(|| all.call_into(&args, &mut out).unwrap())
        });
        let mut cm = Array2::zeros((n, n));
        g.bench_with_input(BenchmarkId::new("naive-rust", n), &n, |b, _| {
            b.iter(|| naive_matmul(&a, &bm, &mut cm))
        });
        g.bench_with_input(BenchmarkId::new("ndarray-dot", n), &n, |b, _| {
            b.iter(|| a.dot(&bm))
        });
    }
    g.finish();
}

fn bench_contractions(c: &mut Criterion) {
    let mut g = c.benchmark_group("contractions");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500));

    // 16 products of 64x64 matrices
    let (nb, n) = (16usize, 64usize);
    let k = kernel("bmm", 0, &[("b", nb), ("n", n)]);
    let a = Array3::from_shape_fn((nb, n, n), |(p, i, j)| {
        ((p + i * 7 + j * 3) % 11) as f64 * 0.1
    });
    let bm = Array3::from_shape_fn((nb, n, n), |(p, i, j)| {
        ((p * 3 + i + j * 5) % 7) as f64 * 0.2
    });
    let args = [dynv(&a), dynv(&bm)];
    let mut out = zeros(&[nb, n, n]);
    g.throughput(Throughput::Elements((2 * nb * n * n * n) as u64));
    g.bench_function("bmm-16x64/jit", |b| {
        b.iter(|| k.call_into(&args, &mut out).unwrap())
    });
    g.bench_function("bmm-16x64/ndarray-dot", |b| {
        b.iter(|| {
            (0..nb)
                .map(|p| {
                    a.index_axis(ndarray::Axis(0), p)
                        .dot(&bm.index_axis(ndarray::Axis(0), p))
                })
                .collect::<Vec<_>>()
        })
    });

    // A B C, 128x128: two matrix products once the order is chosen
    let n = 128usize;
    let k = kernel("abc", 0, &[("n", n)]);
    let (a, bm, cm) = (mat(n, 0.1), mat(n, 0.2), mat(n, 0.3));
    let args = [dynv(&a), dynv(&bm), dynv(&cm)];
    let mut out = zeros(&[n, n]);
    g.throughput(Throughput::Elements((4 * n * n * n) as u64));
    g.bench_function("abc-128/jit", |b| {
        b.iter(|| k.call_into(&args, &mut out).unwrap())
    });
    g.bench_function("abc-128/ndarray-dot", |b| b.iter(|| a.dot(&bm).dot(&cm)));
    g.finish();
}

fn bench_loops(c: &mut Criterion) {
    let mut g = c.benchmark_group("loops");
    g.sample_size(20)
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500));
    let n = 512usize;
    let img = mat(n, 0.1);

    let k = kernel("blur", 0, &[("n", n)]);
    let args = [dynv(&img)];
    let mut out = zeros(&[n, n]);
    let mut o = Array2::zeros((n, n));
    g.throughput(Throughput::Elements((5 * n * n) as u64));
    g.bench_function("blur-512/jit", |b| {
        b.iter(|| k.call_into(&args, &mut out).unwrap())
    });
    g.bench_function("blur-512/rust", |b| b.iter(|| blur_naive(&img, &mut o)));
    g.bench_function("blur-512/rust-peeled", |b| {
        b.iter(|| blur_peeled(&img, &mut o))
    });
    {
        // the README's row: n = 1024, one thread
        let n = 1024;
        let img = mat(n, 0.1);
        let k = kernel("blur", 1, &[("n", n)]);
        let args = [dynv(&img)];
        let mut out = zeros(&[n, n]);
        let mut o = Array2::zeros((n, n));
        g.throughput(Throughput::Elements((5 * n * n) as u64));
        g.bench_function("blur-1024/jit-1thread", |b| {
            b.iter(|| k.call_into(&args, &mut out).unwrap())
        });
        g.bench_function("blur-1024/rust-peeled", |b| {
            b.iter(|| blur_peeled(&img, &mut o))
        });
    }

    let k = kernel("softmax", 0, &[("n", n)]);
    let mut out = zeros(&[n, n]);
    // exp counted as one flop, as `einsat bench` does
    g.throughput(Throughput::Elements((4 * n * n) as u64));
    g.bench_function("softmax-512/jit", |b| {
        b.iter(|| k.call_into(&args, &mut out).unwrap())
    });
    g.bench_function("softmax-512/rust", |b| b.iter(|| softmax(&img, &mut o)));

    let n = 1024usize;
    let a = mat(n, 0.1);
    let x = Array1::from_shape_fn(n, |i| (i % 5) as f64 - 2.0);
    let k = kernel("trimv", 0, &[("n", n)]);
    let args = [dynv(&a), dynv(&x)];
    let mut out = zeros(&[n]);
    let mut y = Array1::zeros(n);
    g.throughput(Throughput::Elements((n * (n + 1)) as u64));
    g.bench_function("trimv-1024/jit", |b| {
        b.iter(|| k.call_into(&args, &mut out).unwrap())
    });
    g.bench_function("trimv-1024/rust", |b| b.iter(|| trimv(&a, &x, &mut y)));
    g.finish();
}

/// The fixed cost of handing an (empty) job to the pool's workers: the
/// floor under [`jit::PARALLEL_THRESHOLD`].
fn bench_pool(c: &mut Criterion) {
    let mut g = c.benchmark_group("pool");
    g.sample_size(20)
        .measurement_time(Duration::from_secs(1))
        .warm_up_time(Duration::from_millis(500));
    let t = jit::testing::pool::all_cores();
    g.bench_function("empty-job-all-threads", |b| {
        b.iter(|| {
            jit::testing::pool::run(t, 4 * t, |i| {
                std::hint::black_box(i);
            })
        })
    });
    g.finish();
}

criterion_group!(
    benches,
    bench_pool,
    bench_matvec,
    bench_matmul,
    bench_contractions,
    bench_loops
);
criterion_main!(benches);
