//! Two threads against one, size by size: the evidence for the thresholds
//! below which a GEMM stage (`jit::GEMM_SPLIT_MIN_WORK`) or a generated
//! nest (`jit::PARALLEL_THRESHOLD`) stays on one thread.
//!
//! Per size, four variants are timed alternately in one process, round
//! after round (order rotated each round): the one-thread kernel, the
//! two-thread kernel with the default thresholds ("auto"), the two-thread
//! kernel forced to split ("forced": `gemm_split_min_work: 0` for GEMM,
//! `parallel_threshold: 0` for generated nests), and the same with the
//! pool's threads spinning before they sleep ("spin": `pool::set_spin`,
//! `SPIN_US=worker,caller` microseconds, default 100,200; the pool's
//! default is not to spin, see `jit::pool`). Each round's ratio
//! (one-thread time / variant time, so > 1 is a speed-up) is kept, and the
//! median and quartiles over rounds are printed with the load average. The
//! kernels:
//! - `gemm`: matmul `A[i,k] * B[k,j]` on the GEMM library, n×n×n;
//! - `gemmT`: the same with both operands stored column-major;
//! - `ew`: the generated nest `gen(i:n, j:n) exp(A[i,j]) * B[j,i]`;
//! - `mv`: the generated nest `gen(i:n) sum(j:n) A[i,j] * x[j]` (GEMM off).
//!
//! `[BATCH_MS=5] [SPIN_US=worker,caller] cargo run --release --example thread_sweep [-- ROUNDS [KIND [N...]]]`
//! (KIND: gemm, gemmT, ew, mv or all; default all on its own sizes)

use einsat::interp::Value;
use einsat::jit::GEMM_SPLIT_MIN_WORK;
use einsat::jit::{self, Options};
use ndarray::{Array1, Array2};
use std::time::{Duration, Instant};

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// The pool's spinning for the "spin" variant: `SPIN_US=worker,caller`
/// (microseconds; default 100,200).
fn set_spin_tried() {
    let (w, c) = std::env::var("SPIN_US")
        .ok()
        .and_then(|s| {
            let (w, c) = s.split_once(',')?;
            Some((
                Duration::from_micros(w.parse().ok()?),
                Duration::from_micros(c.parse().ok()?),
            ))
        })
        .unwrap_or((Duration::from_micros(100), Duration::from_micros(200)));
    jit::testing::pool::set_spin(w, c);
}

fn quantile(v: &[f64], q: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn mat(n: usize, seed: usize) -> Array2<f64> {
    Array2::from_shape_fn((n, n), |(i, j)| {
        ((i * 7 + j * 3 + seed) % 11) as f64 * 0.1 + 1e-3 * ((i * j + seed) % 13) as f64
    })
}

fn kernel(
    src: &str,
    threads: usize,
    gemm: bool,
    threshold: u64,
    split_min_work: usize,
) -> std::sync::Arc<jit::Kernel> {
    let f = einsat::load(src).unwrap().functions.remove(0);
    jit::compile_with(
        &f,
        &Options {
            threads,
            gemm,
            parallel_threshold: threshold,
            gemm_split_min_work: split_min_work,
            ..Options::default()
        },
    )
    .unwrap()
}

fn main() {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let rounds: usize = argv.first().and_then(|s| s.parse().ok()).unwrap_or(15);
    let kind = argv.get(1).map(String::as_str).unwrap_or("all");
    let given: Vec<usize> = argv.iter().skip(2).map(|s| s.parse().unwrap()).collect();
    let batch: f64 = std::env::var("BATCH_MS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5.0);
    println!(
        "rounds {rounds}, batches of ~{batch} ms; cores {}; SPLIT_MIN_WORK 2^{}, PARALLEL_THRESHOLD 2^{}",
        jit::testing::pool::all_cores(),
        GEMM_SPLIT_MIN_WORK.trailing_zeros(),
        jit::PARALLEL_THRESHOLD.trailing_zeros()
    );
    println!("ratios: 1-thread time / 2-thread time, median (p25–p75) over rounds");
    let mm = "fn mm(A: [n,n]R, B: [n,n]R) -> [n,n]R = gen(i:n, j:n) sum(k:n) A[i,k] * B[k,j]";
    let ew = "fn ew(A: [n,n]R, B: [n,n]R) -> [n,n]R = gen(i:n, j:n) exp(A[i,j]) * B[j,i]";
    let mv = "fn mv(A: [n,n]R, x: [n]R) -> [n]R = gen(i:n) sum(j:n) A[i,j] * x[j]";
    let kinds: Vec<&str> = if kind == "all" {
        vec!["gemm", "gemmT", "ew", "mv"]
    } else {
        vec![kind]
    };
    for kind in kinds {
        let (src, gemm, default_sizes): (&str, bool, Vec<usize>) = match kind {
            "gemm" | "gemmT" => (
                mm,
                true,
                vec![32, 48, 64, 80, 96, 128, 160, 192, 224, 256, 320, 384, 512],
            ),
            "ew" => (
                ew,
                false,
                vec![16, 32, 48, 64, 96, 128, 192, 256, 512, 1024],
            ),
            "mv" => (mv, false, vec![32, 64, 96, 128, 192, 256, 512, 1024, 2048]),
            _ => panic!("KIND is gemm, gemmT, ew, mv or all"),
        };
        let sizes = if given.is_empty() {
            default_sizes
        } else {
            given.clone()
        };
        let k1 = kernel(src, 1, gemm, u64::MAX, GEMM_SPLIT_MIN_WORK);
        let k2 = kernel(src, 2, gemm, jit::PARALLEL_THRESHOLD, GEMM_SPLIT_MIN_WORK);
        let k2g = kernel(src, 2, gemm, jit::PARALLEL_THRESHOLD, 0);
        let k2f = kernel(src, 2, gemm, 0, GEMM_SPLIT_MIN_WORK);
        println!("{kind}:");
        for &n in &sizes {
            let args: Vec<Value> = match kind {
                "mv" => vec![
                    Value::Array(mat(n, 0).into_dyn()),
                    Value::Array(Array1::from_shape_fn(n, |i| (i % 7) as f64 * 0.3).into_dyn()),
                ],
                "gemmT" => [mat(n, 0), mat(n, 5)]
                    .into_iter()
                    .map(|a| {
                        Value::Array(
                            a.t()
                                .as_standard_layout()
                                .to_owned()
                                .reversed_axes()
                                .into_dyn(),
                        )
                    })
                    .collect(),
                _ => vec![
                    Value::Array(mat(n, 0).into_dyn()),
                    Value::Array(mat(n, 5).into_dyn()),
                ],
            };
            // GEMM: multiply-adds m·n·k (SPLIT_MIN_WORK's unit); generated
            // nests: `jit::nest_work` (PARALLEL_THRESHOLD's)
            let work = if gemm {
                (n * n * n) as u64
            } else {
                jit::nest_work(&k1.loop_program().nests[0], &[n as i64])
            };
            let mut out = k1.call(&args).unwrap();
            let reference = out.clone();
            // variants: 0 one thread, 1 auto, 2 forced, 3 forced with the
            // pool spinning
            let run = |v: usize, out: &mut Value| {
                if v == 3 {
                    set_spin_tried();
                } else {
                    jit::testing::pool::set_spin(
                        jit::testing::pool::WORKER_SPIN,
                        jit::testing::pool::CALLER_SPIN,
                    );
                }
                match v {
                    0 => k1.call_into(&args, out),
                    1 => k2.call_into(&args, out),
                    _ => {
                        if gemm {
                            k2g.call_into(&args, out)
                        } else {
                            k2f.call_into(&args, out)
                        }
                    }
                }
                .unwrap()
            };
            let mut same = true;
            for v in 1..4 {
                run(v, &mut out);
                same &= out == reference;
            }
            let t = Instant::now();
            run(0, &mut out);
            let reps = ((batch * 1e-3 / t.elapsed().as_secs_f64()).ceil() as usize).max(1);
            let load = loadavg();
            let mut ratios = [Vec::new(), Vec::new(), Vec::new()];
            let mut t1 = Vec::new();
            for r in 0..rounds {
                let mut tr = [0.0; 4];
                for j in 0..4 {
                    let v = (j + r) % 4;
                    let t = Instant::now();
                    for _ in 0..reps {
                        run(v, &mut out);
                    }
                    tr[v] = t.elapsed().as_secs_f64() / reps as f64;
                }
                t1.push(tr[0]);
                ratios[0].push(tr[0] / tr[1]);
                ratios[1].push(tr[0] / tr[2]);
                ratios[2].push(tr[0] / tr[3]);
            }
            let f = |r: &[f64]| {
                format!(
                    "{:.2}× ({:.2}–{:.2})",
                    quantile(r, 0.5),
                    quantile(r, 0.25),
                    quantile(r, 0.75)
                )
            };
            println!(
                "  n={n:<5} work 2^{:<5.1} 1 thread {:>9.1} µs   auto {:<20} forced {:<20} spin {:<20} same bits {same}  load {load}",
                (work as f64).log2(),
                quantile(&t1, 0.5) * 1e6,
                f(&ratios[0]),
                f(&ratios[1]),
                f(&ratios[2]),
            );
        }
    }
    jit::testing::pool::set_spin(
        jit::testing::pool::WORKER_SPIN,
        jit::testing::pool::CALLER_SPIN,
    );
}
