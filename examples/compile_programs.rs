//! Compile time of the programs of `python/bench_programs.py`, stage by
//! stage, as `einsat.compile` spends it: parse and type check (`load`),
//! the optimiser (`opt`, of which `sat` is saturation and `acc` the
//! accuracy check's reference samples and candidate runs, timed apart by
//! repeating them), `jit` (`jit::compile_uncached_with`: loop IR,
//! schedule, Cranelift) and `text` (printing the programs and the JSON
//! report, as the Python `Kernel` keeps them).
//!
//! Stages in this thread's CPU time (steadier than wall time on a shared
//! machine; the compile runs on the calling thread), `total` too, and
//! `wall` the total's wall time. Per program the median over REPS
//! compiles; then the median over the programs (the issue 26 target:
//! median ≤ 5 ms), the CPU named.
//!
//! `cargo run --release --example compile_programs [-- REPS]` (default 9).

use einsat::extract::accuracy::Reference;
use einsat::jit::{self, Options};
use std::time::Instant;

/// The sources of `python/bench_programs.py` (attention once per sequence
/// length there, so four times here: the same median).
const PROGRAMS: &[(&str, &str)] = &[
    ("exp", "fn f(x: [n]R) -> [n]R = gen(i:n) exp(x[i])"),
    ("tanh", "fn f(x: [n]R) -> [n]R = gen(i:n) tanh(x[i])"),
    (
        "lse",
        "fn lse(x: [n]R) -> R = let m = max(i:n) x[i] in m + log(sum(i:n) exp(x[i] - m))",
    ),
    (
        "softmax",
        "fn sm(X: [n,m]R) -> [n,m]R = gen(i:n) let mx = max(j:m) X[i,j] in \
         let z = sum(j:m) exp(X[i,j] - mx) in gen(j:m) exp(X[i,j] - mx) / z",
    ),
    (
        "layernorm",
        "fn ln(X: [n,m]R) -> [n,m]R = gen(i:n) let mu = (sum(j:m) X[i,j]) / m in \
         let v = (sum(j:m) (X[i,j] - mu) * (X[i,j] - mu)) / m in \
         gen(j:m) (X[i,j] - mu) / sqrt(v + 0.00001)",
    ),
    (
        "gelu",
        "fn g(X: [n,k]R, W: [k,m]R) -> [n,m]R = gen(i:n, j:m) let h = sum(l:k) X[i,l] * W[l,j] in \
         0.5 * h * (1 + tanh(0.7978845608028654 * (h + 0.044715 * h * h * h)))",
    ),
    (
        "mlp",
        "fn mlp(X: [n,k]R, W: [k,m]R, b: [m]R) -> [n,m]R = \
         gen(i:n, j:m) max(b[j] + sum(l:k) X[i,l] * W[l,j], 0)",
    ),
    (
        "mlp2",
        "fn mlp2(X: [n,k]R, W1: [k,m]R, b1: [m]R, W2: [m,p]R) -> [n,p]R = \
         let H = gen(i:n, j:m) max(b1[j] + sum(l:k) X[i,l] * W1[l,j], 0) in \
         gen(i:n, c:p) sum(j:m) H[i,j] * W2[j,c]",
    ),
    ("attention", ATTENTION),
    ("attention", ATTENTION),
    ("attention", ATTENTION),
    ("attention", ATTENTION),
    (
        "gram",
        "fn gram(X: [n,d]R) -> [d,d]R = gen(a:d, b:d) sum(i:n) \
         (X[i,a] - (sum(k:n) X[k,a]) / n) * (X[i,b] - (sum(k:n) X[k,b]) / n)",
    ),
    (
        "stencil",
        "fn lap(X: [n,m]R) -> [n,m]R = gen(i:n, j:m) \
         X[i-1,j] + X[i+1,j] + X[i,j-1] + X[i,j+1] - 4 * X[i,j]",
    ),
    (
        "bmm",
        "fn bmm(A: [b,i,j]R, B: [b,j,k]R) -> [b,i,k]R = gen(p:b, q:i, r:k) sum(t:j) A[p,q,t] * B[p,t,r]",
    ),
];

const ATTENTION: &str = "fn att(Q: [s,d]R, K: [s,d]R, V: [s,d]R) -> [s,d]R = \
    let S = gen(i:s, j:s) (sum(l:d) Q[i,l] * K[j,l]) / 8 in \
    let P = gen(i:s) let mx = max(j:s) S[i,j] in let z = sum(j:s) exp(S[i,j] - mx) in \
    gen(j:s) exp(S[i,j] - mx) / z in \
    gen(i:s, c:d) sum(j:s) P[i,j] * V[j,c]";

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// This thread's CPU time in ms (the compile runs on the calling thread;
/// CPU time is steadier than wall time on a shared machine).
fn cpu_ms() -> f64 {
    einsat::opt::thread_cpu_seconds() * 1e3
}

fn cpu() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

/// Per stage, the times of one program's compiles.
#[derive(Default)]
struct Times {
    load: Vec<f64>,
    opt: Vec<f64>,
    sat: Vec<f64>,
    acc: Vec<f64>,
    jit: Vec<f64>,
    text: Vec<f64>,
    total: Vec<f64>,
    wall: Vec<f64>,
}

fn main() {
    let reps = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(9usize)
        .max(1);
    let opts = Options {
        threads: 1,
        ..Options::default()
    };
    println!(
        "CPU: {}; {reps} compiles per program (median), times in ms",
        cpu()
    );
    println!(
        "{:<10} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}",
        "program", "load", "opt", "(sat)", "(acc)", "jit", "text", "total", "wall"
    );
    let mut rows: Vec<[f64; 8]> = Vec::new();
    let mut outputs = Vec::new();
    for (name, src) in PROGRAMS {
        let mut t = Times::default();
        let mut printed = String::new();
        for _ in 0..reps {
            let w0 = Instant::now();
            let t0 = cpu_ms();
            let prog = einsat::load(src).expect("the bench programs load");
            let f = &prog.functions[0];
            let load = cpu_ms() - t0;
            let t1 = cpu_ms();
            let o = einsat::opt::optimize(f, &Default::default()).expect("optimise");
            let opt = cpu_ms() - t1;
            let t2 = cpu_ms();
            jit::clear_cache();
            let k = jit::compile_uncached_with(&o.program, &opts).expect("compile");
            let jit_ms = cpu_ms() - t2;
            let t3 = cpu_ms();
            let a = einsat::syntax::print_function(f);
            printed = einsat::syntax::print_function(&o.program);
            let r = einsat::opt::report_json(f, &o).to_string();
            let text = cpu_ms() - t3;
            let kept = std::hint::black_box((k, a, r));
            let total = cpu_ms() - t0;
            let wall = ms(w0);
            // (the kernel is dropped outside the time: a user keeps it)
            drop(kept);
            // the accuracy check's share, repeated apart: the reference
            // samples and the run of the chosen program on them (one
            // candidate's check)
            let t4 = cpu_ms();
            if let Some(reference) = Reference::of(f) {
                std::hint::black_box(reference.loss(&o.program));
            }
            t.acc.push(cpu_ms() - t4);
            t.load.push(load);
            t.opt.push(opt);
            t.sat.push(o.report.saturation_seconds * 1e3);
            t.jit.push(jit_ms);
            t.text.push(text);
            t.total.push(total);
            t.wall.push(wall);
        }
        outputs.push(printed);
        let row = [
            median(&t.load),
            median(&t.opt),
            median(&t.sat),
            median(&t.acc),
            median(&t.jit),
            median(&t.text),
            median(&t.total),
            median(&t.wall),
        ];
        println!(
            "{:<10} {:>7.2} {:>7.2} {:>7.2} {:>7.2} {:>7.2} {:>7.2} {:>7.2} {:>7.2}",
            name, row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7]
        );
        rows.push(row);
    }
    let col = |k: usize| median(&rows.iter().map(|r| r[k]).collect::<Vec<_>>());
    println!(
        "{:<10} {:>7.2} {:>7.2} {:>7.2} {:>7.2} {:>7.2} {:>7.2} {:>7.2} {:>7.2}",
        "median",
        col(0),
        col(1),
        col(2),
        col(3),
        col(4),
        col(5),
        col(6),
        col(7)
    );
    // a digest of the optimised programs: the same text before and after a
    // change that must not change results
    let mut h: u64 = 0xcbf29ce484222325;
    for b in outputs.join("\n").bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x100000001b3);
    }
    println!("optimised programs' digest: {h:016x}");
}
