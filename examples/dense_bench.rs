//! Dense contractions in generated code against ndarray's `dot`, timed in
//! the same process (best of several interleaved rounds, so a loaded
//! machine hurts both sides alike). GEMM stages off: the figures are the
//! generated code's own.
//!
//! `cargo run --release --example dense_bench [-- n_matmul n_matvec]`

use einsat::jit::{self, Options};
use einsat::Value;
use ndarray::{Array1, Array2};
use std::time::Instant;

const SRC: &str = "
fn matvec(A: [n,n]R, x: [n]R) -> [n]R = gen(i:n) sum(j:n) A[i,j] * x[j]
fn matmul(A: [n,n]R, B: [n,n]R) -> [n,n]R = gen(i:n, j:n) sum(k:n) A[i,k] * B[k,j]
fn colv(A: [n,n]R, x: [n]R) -> [n]R = gen(j:n) sum(i:n) x[i] * A[i,j]
";

fn best(reps: usize, mut f: impl FnMut()) -> f64 {
    let mut b = f64::INFINITY;
    for _ in 0..reps {
        let t = Instant::now();
        f();
        b = b.min(t.elapsed().as_secs_f64());
    }
    b
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let prog = einsat::load(SRC).unwrap();
    for f in &prog.functions {
        let t = Instant::now();
        let _k = jit::compile_uncached_with(
            f,
            &Options {
                gemm: false,
                threads: 1,
                ..Options::default()
            },
        )
        .unwrap();
        println!(
            "compile {}: {:.2} ms",
            f.name,
            t.elapsed().as_secs_f64() * 1e3
        );
    }
    let opts = Options {
        gemm: false,
        threads: 1,
        ..Options::default()
    };
    for &n in args
        .first()
        .map(std::slice::from_ref)
        .unwrap_or(&[256, 1024])
    {
        let a = Array2::from_shape_fn((n, n), |(i, j)| ((i * 7 + j * 3) % 11) as f64 * 0.1 - 0.5);
        let b = Array2::from_shape_fn((n, n), |(i, j)| ((i * 5 + j * 2) % 13) as f64 * 0.1 - 0.6);
        let k = jit::compile_with(prog.get("matmul").unwrap(), &opts).unwrap();
        let args = [
            Value::Array(a.clone().into_dyn()),
            Value::Array(b.clone().into_dyn()),
        ];
        let mut out = Value::Array(ndarray::ArrayD::zeros(ndarray::IxDyn(&[n, n])));
        let reps = if n >= 1024 { 3 } else { 20 };
        let (mut tj, mut td) = (f64::INFINITY, f64::INFINITY);
        for _ in 0..3 {
            tj = tj.min(best(reps, || k.call_into(&args, &mut out).unwrap()));
            td = td.min(best(reps, || {
                std::hint::black_box(a.dot(&b));
            }));
        }
        let fl = 2.0 * (n * n * n) as f64;
        println!(
            "matmul n={n}: jit {:.3} ms {:.2} GFLOP/s | ndarray dot {:.3} ms {:.2} GFLOP/s | jit/dot time {:.2}x",
            tj * 1e3,
            fl / tj / 1e9,
            td * 1e3,
            fl / td / 1e9,
            tj / td
        );
    }
    for name in ["matvec", "colv"] {
        let n = *args.get(1).unwrap_or(&1024);
        let a = Array2::from_shape_fn((n, n), |(i, j)| ((i * 7 + j * 3) % 11) as f64 * 0.1 - 0.5);
        let x = Array1::from_shape_fn(n, |i| (i % 5) as f64 - 2.0);
        let k = jit::compile_with(prog.get(name).unwrap(), &opts).unwrap();
        let args = [
            Value::Array(a.clone().into_dyn()),
            Value::Array(x.clone().into_dyn()),
        ];
        let mut out = Value::Array(ndarray::ArrayD::zeros(ndarray::IxDyn(&[n])));
        let (mut tj, mut td) = (f64::INFINITY, f64::INFINITY);
        let at = a.t();
        for _ in 0..5 {
            tj = tj.min(best(50, || k.call_into(&args, &mut out).unwrap()));
            td = td.min(best(50, || {
                if name == "matvec" {
                    std::hint::black_box(a.dot(&x));
                } else {
                    std::hint::black_box(at.dot(&x));
                }
            }));
        }
        let fl = 2.0 * (n * n) as f64;
        println!(
            "{name} n={n}: jit {:.3} ms {:.2} GFLOP/s | ndarray dot {:.3} ms {:.2} GFLOP/s | jit/dot time {:.2}x",
            tj * 1e3,
            fl / tj / 1e9,
            td * 1e3,
            fl / td / 1e9,
            tj / td
        );
    }
}
