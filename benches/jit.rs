//! The JIT against hand-written Rust loops and ndarray's `dot` on matvec and
//! matmul (n = 64, 256, 1024), measured in the same run. Throughput is in
//! elements of flops: criterion prints it as Gelem/s = GFLOP/s.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use einsat::Value;
use ndarray::{Array1, Array2};
use std::time::Duration;

const SRC: &str = "
fn matvec(A: [n,n]R, x: [n]R) -> [n]R = gen(i:n) sum(j:n) A[i,j] * x[j]
fn matmul(A: [n,n]R, B: [n,n]R) -> [n,n]R = gen(i:n, j:n) sum(k:n) A[i,k] * B[k,j]
";

fn mat(n: usize, s: f64) -> Array2<f64> {
    Array2::from_shape_fn((n, n), |(i, j)| ((i * 7 + j * 3) % 11) as f64 * s - 0.5)
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
    for i in 0..n {
        for j in 0..n {
            let mut acc = 0.0;
            for k in 0..n {
                acc += a[i * n + k] * b[k * n + j];
            }
            c[i * n + j] = acc;
        }
    }
}

fn bench(c: &mut Criterion) {
    let prog = einsat::load(SRC).unwrap();
    let mv = einsat::jit::compile(prog.get("matvec").unwrap()).unwrap();
    let mm = einsat::jit::compile(prog.get("matmul").unwrap()).unwrap();

    let mut g = c.benchmark_group("matvec");
    g.sample_size(20).measurement_time(Duration::from_secs(2));
    for n in [64usize, 256, 1024] {
        g.throughput(Throughput::Elements(2 * (n * n) as u64));
        let a = mat(n, 0.1);
        let x = Array1::from_shape_fn(n, |i| (i % 5) as f64 - 2.0);
        let args = [
            Value::Array(a.clone().into_dyn()),
            Value::Array(x.clone().into_dyn()),
        ];
        let mut out = Value::Array(ndarray::ArrayD::zeros(ndarray::IxDyn(&[n])));
        g.bench_with_input(BenchmarkId::new("jit", n), &n, |b, _| {
            b.iter(|| mv.call_into(&args, &mut out).unwrap())
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

    let mut g = c.benchmark_group("matmul");
    g.sample_size(10).measurement_time(Duration::from_secs(3));
    for n in [64usize, 256, 1024] {
        g.throughput(Throughput::Elements(2 * (n * n * n) as u64));
        let a = mat(n, 0.1);
        let bm = mat(n, 0.2);
        let args = [
            Value::Array(a.clone().into_dyn()),
            Value::Array(bm.clone().into_dyn()),
        ];
        let mut out = Value::Array(ndarray::ArrayD::zeros(ndarray::IxDyn(&[n, n])));
        g.bench_with_input(BenchmarkId::new("jit", n), &n, |b, _| {
            b.iter(|| mm.call_into(&args, &mut out).unwrap())
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

criterion_group!(benches, bench);
criterion_main!(benches);
