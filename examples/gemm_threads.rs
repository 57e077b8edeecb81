//! GEMM stages on two threads: the library's own threading
//! (`Parallelism::Rayon(2)`) against output panels on einsat's thread pool
//! (each a single-threaded library call), for matmul in C order and with
//! both operands transposed, n=256 and 1024. Every strategy and the
//! one-thread call are timed alternately in one process, round after round
//! (the order rotated each round), and each round's ratio to the one-thread
//! time of the same round is kept, so that load from other processes hits
//! all of them alike; the load average is printed with each figure.
//!
//! `[BATCH_MS=20] cargo run --release --example gemm_threads [-- ROUNDS [N...]]`

use einsat::interp::Value;
use einsat::jit::{self, Options};
use einsat::jit::{GemmAxis as Axis, GemmSplit as Split, DEFAULT_GEMM_SPLIT};
use ndarray::Array2;
use std::time::Instant;

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn quantile(v: &[f64], q: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn kernel(threads: usize, split: Split) -> std::sync::Arc<jit::Kernel> {
    let src = "fn mm(A: [n,n]R, B: [n,n]R) -> [n,n]R = gen(i:n, j:n) sum(k:n) A[i,k] * B[k,j]";
    let f = einsat::load(src).unwrap().functions.remove(0);
    jit::compile_with(
        &f,
        &Options {
            threads,
            gemm_split: split,
            ..Options::default()
        },
    )
    .unwrap()
}

fn mat(n: usize, seed: usize) -> Array2<f64> {
    Array2::from_shape_fn((n, n), |(i, j)| {
        ((i * 7 + j * 3 + seed) % 11) as f64 * 0.1 + 1e-3 * ((i * j + seed) % 13) as f64
    })
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let rounds: usize = argv.first().and_then(|s| s.parse().ok()).unwrap_or(25);
    let sizes: Vec<usize> = if argv.len() > 1 {
        argv[1..].iter().map(|s| s.parse().unwrap()).collect()
    } else {
        vec![256, 1024]
    };
    let strategies: Vec<(&str, Split)> = vec![
        ("rayon", Split::Rayon),
        (
            "panels N ×1",
            Split::Panels {
                per_thread: 1,
                axis: Axis::N,
            },
        ),
        (
            "panels N ×4",
            Split::Panels {
                per_thread: 4,
                axis: Axis::N,
            },
        ),
        (
            "panels M ×1",
            Split::Panels {
                per_thread: 1,
                axis: Axis::M,
            },
        ),
        (
            "panels M ×4",
            Split::Panels {
                per_thread: 4,
                axis: Axis::M,
            },
        ),
    ];
    let k1 = kernel(1, DEFAULT_GEMM_SPLIT);
    // a two-thread kernel per strategy
    let k2: Vec<_> = strategies.iter().map(|(_, s)| kernel(2, *s)).collect();
    println!("rounds {rounds}; cores {}", jit::testing::pool::all_cores());
    for &n in &sizes {
        let (a, b) = (mat(n, 0), mat(n, 5));
        let fl = 2.0 * (n * n * n) as f64;
        for layout in ["C order", "transposed"] {
            let (a, b) = if layout == "transposed" {
                // the same logical A and B, stored column-major
                (
                    a.t().as_standard_layout().to_owned().reversed_axes(),
                    b.t().as_standard_layout().to_owned().reversed_axes(),
                )
            } else {
                (a.clone(), b.clone())
            };
            let args = [Value::Array(a.into_dyn()), Value::Array(b.into_dyn())];
            let mut out = k1.call(&args).unwrap();
            let reference = out.clone();
            // bit-identity against one thread, per strategy
            let mut same = Vec::new();
            for k in &k2 {
                k.call_into(&args, &mut out).unwrap();
                same.push(out == reference);
            }
            // calls per timed batch: ~BATCH_MS (default 20) ms on one thread
            let batch: f64 = std::env::var("BATCH_MS")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(20.0);
            let t = Instant::now();
            k1.call_into(&args, &mut out).unwrap();
            let reps = ((batch * 1e-3 / t.elapsed().as_secs_f64()).ceil() as usize).max(1);
            let load_before = loadavg();
            // per variant (0: one thread, 1..: strategies) the times, and
            // per strategy the ratio to the same round's one-thread time
            let nv = 1 + strategies.len();
            let mut times = vec![Vec::new(); nv];
            let mut ratios = vec![Vec::new(); strategies.len()];
            for r in 0..rounds {
                let mut t_round = vec![0.0; nv];
                for j in 0..nv {
                    let v = (j + r) % nv;
                    let k = if v == 0 { &k1 } else { &k2[v - 1] };
                    let t = Instant::now();
                    for _ in 0..reps {
                        k.call_into(&args, &mut out).unwrap();
                    }
                    t_round[v] = t.elapsed().as_secs_f64() / reps as f64;
                }
                for v in 0..nv {
                    times[v].push(t_round[v]);
                }
                for s in 0..strategies.len() {
                    ratios[s].push(t_round[0] / t_round[s + 1]);
                }
            }
            let g = |t: &[f64], q: f64| fl / quantile(t, 1.0 - q) / 1e9;
            println!(
                "n={n:<5} {layout:<10} load {load_before} → {}; 1 thread {:5.1} GFLOP/s (p10 {:.1}, p90 {:.1})",
                loadavg(),
                g(&times[0], 0.5),
                g(&times[0], 0.1),
                g(&times[0], 0.9)
            );
            for (s, (name, _)) in strategies.iter().enumerate() {
                let q = |x| quantile(&ratios[s], x);
                println!(
                    "    {name:<12} t=2 {:5.1} GFLOP/s  speed-up median {:.2}× (p10 {:.2}, p25 {:.2}, p75 {:.2}, p90 {:.2}; min {:.2}, max {:.2}; best vs best {:.2}×)  bit-identical to 1 thread: {}",
                    g(&times[s + 1], 0.5),
                    q(0.5),
                    q(0.1),
                    q(0.25),
                    q(0.75),
                    q(0.9),
                    q(0.0),
                    q(1.0),
                    quantile(&times[0], 0.0) / quantile(&times[s + 1], 0.0),
                    same[s]
                );
            }
        }
    }
}
