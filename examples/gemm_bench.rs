//! GEMM stages through `Kernel::call` (boundary checks and result
//! allocation included) against ndarray's `dot`, in the same process:
//! matmul n=64, 256, 1024 with 1 and 2 threads, C order and transposed
//! operands; matvec and dot n=1024; GEMM off (generated code) for reference.
//!
//! `cargo run --release --example gemm_bench [-- quick]`

use einsat::interp::Value;
use einsat::jit::{self, Options};
use ndarray::{Array1, Array2};
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// GFLOP/s of each of `fs`, measured interleaved (round robin, 9 rounds
/// of batches of at least ~30 ms each, median per function) so that load
/// from other processes hits all of them alike.
fn gflops(flops: f64, fs: &mut [&mut dyn FnMut()]) -> Vec<f64> {
    let reps: Vec<usize> = fs
        .iter_mut()
        .map(|f| {
            f();
            let mut reps = 1usize;
            loop {
                let t = Instant::now();
                for _ in 0..reps {
                    f();
                }
                if t.elapsed().as_secs_f64() > 0.03 {
                    return reps;
                }
                reps *= 2;
            }
        })
        .collect();
    let mut ts = vec![Vec::new(); fs.len()];
    for _ in 0..9 {
        for (k, f) in fs.iter_mut().enumerate() {
            let t = Instant::now();
            for _ in 0..reps[k] {
                f();
            }
            ts[k].push(t.elapsed().as_secs_f64() / reps[k] as f64);
        }
    }
    ts.into_iter().map(|t| flops / median(t) / 1e9).collect()
}

fn kernel(src: &str, gemm: bool, threads: usize) -> std::sync::Arc<jit::Kernel> {
    let f = einsat::load(src).unwrap().functions.remove(0);
    jit::compile_with(&f, &Options { gemm, threads }).unwrap()
}

fn mat(n: usize, seed: usize) -> Array2<f64> {
    Array2::from_shape_fn((n, n), |(i, j)| ((i * 7 + j * 3 + seed) % 11) as f64 * 0.1)
}

fn main() {
    let quick = std::env::args().any(|a| a == "quick");
    let mm = "fn mm(A: [n,n]R, B: [n,n]R) -> [n,n]R = gen(i:n, j:n) sum(k:n) A[i,k] * B[k,j]";
    let sizes: &[usize] = if quick { &[256] } else { &[64, 256, 1024] };
    for &n in sizes {
        let (a, b) = (mat(n, 0), mat(n, 5));
        let fl = 2.0 * (n * n * n) as f64;
        for (name, a, b) in [
            ("C order", a.clone(), b.clone()),
            ("transposed", a.t().to_owned(), b.t().to_owned()),
        ] {
            let (a, b) = if name == "transposed" {
                // logical A and B again, stored column-major
                (a.reversed_axes(), b.reversed_axes())
            } else {
                (a, b)
            };
            let args = [
                Value::Array(a.clone().into_dyn()),
                Value::Array(b.clone().into_dyn()),
            ];
            let (k1, k2, kn) = (
                kernel(mm, true, 1),
                kernel(mm, true, 2),
                kernel(mm, false, 1),
            );
            let mut fnd = || {
                std::hint::black_box(a.dot(&b));
            };
            let mut f1 = || {
                std::hint::black_box(k1.call(&args).unwrap());
            };
            let mut f2 = || {
                std::hint::black_box(k2.call(&args).unwrap());
            };
            let mut fnat = || {
                std::hint::black_box(kn.call(&args).unwrap());
            };
            let mut fs: Vec<&mut dyn FnMut()> = vec![&mut fnd, &mut f1, &mut f2];
            if n <= 256 {
                fs.push(&mut fnat);
            }
            let g = gflops(fl, &mut fs);
            let nd = g[0];
            let mut line = format!("matmul n={n:<5} {name:<10}  ndarray {nd:5.1} GFLOP/s");
            for (label, g) in ["gemm t=1", "gemm t=2", "native"].iter().zip(&g[1..]) {
                line.push_str(&format!("  {label} {g:5.1} ({:.2}×)", g / nd));
            }
            line.push_str(&format!("  t=2/t=1 {:.2}×", g[2] / g[1]));
            println!("{line}");
        }
    }
    let n = 1024;
    let a = mat(n, 0);
    let x = Array1::from_shape_fn(n, |i| (i % 5) as f64 * 0.3);
    let fl = 2.0 * (n * n) as f64;
    for (name, src, at) in [
        (
            "matvec A·x ",
            "fn mv(A: [n,n]R, x: [n]R) -> [n]R = gen(i:n) sum(j:n) A[i,j] * x[j]",
            false,
        ),
        (
            "matvec x·A ",
            "fn vm(A: [n,n]R, x: [n]R) -> [n]R = gen(i:n) sum(j:n) x[j] * A[j,i]",
            true,
        ),
    ] {
        let args = [
            Value::Array(a.clone().into_dyn()),
            Value::Array(x.clone().into_dyn()),
        ];
        let (kg, kn) = (kernel(src, true, 1), kernel(src, false, 1));
        let mut fnd = || {
            if at {
                std::hint::black_box(x.dot(&a));
            } else {
                std::hint::black_box(a.dot(&x));
            }
        };
        let mut fg = || {
            std::hint::black_box(kg.call(&args).unwrap());
        };
        let mut fnat = || {
            std::hint::black_box(kn.call(&args).unwrap());
        };
        let g = gflops(fl, &mut [&mut fnd, &mut fg, &mut fnat]);
        let nd = g[0];
        let mut line = format!("{name} n={n}  ndarray {nd:5.1} GFLOP/s");
        for (label, g) in ["gemm", "native"].iter().zip(&g[1..]) {
            line.push_str(&format!("  {label} {g:5.1} ({:.2}×)", g / nd));
        }
        println!("{line}");
    }
}
