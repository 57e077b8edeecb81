//! JIT compile time per kernel, as a user waits for it: every function of
//! `examples/*.tl` and `benches/perf.tl` (the benches' kernels: matvec,
//! matmul, batched matmul, three-operand contraction, blur with zero
//! padding, softmax, triangular matvec, axpy), optimised and as written
//! (when already in normal form), GEMM stages on and off, compiled fresh
//! each time (`compile_uncached_with`, and the kernel cache cleared).
//!
//! Per kernel, the median over REPS compiles of:
//! - `opt`: `opt::optimize` (not JIT; shown apart, `-` for as written);
//! - `jit`: `jit::compile_uncached_with` (type check, loop IR, schedule,
//!   Cranelift for the C-order layout of every buffer);
//! - `1st`: the first call's extra time over the second one, C-order
//!   arguments (workspace setup, GEMM library start-up, cold code);
//! - `wait`: `jit` + `1st`, what a user waits for before the first result;
//! - `F 1st`: the extra time of the first call with Fortran-order
//!   arguments after the C-order ones (native code for that layout is
//!   compiled at its first use).
//!
//! then the median, p90 and worst over all kernels, and over the default
//! path alone (optimised, GEMM on). One thread, every named size N. First
//! of all, the first compile in the process (a matmul), against the same
//! compile again: the one-time cost a short-lived process (`einsat run`)
//! pays on top.
//!
//! `cargo run --release --example compiletime [-- REPS [N]]` (default 7
//! compiles per kernel, N = 32); `EINSAT_COMPILETIME_FILTER=matmul` keeps
//! the functions whose name contains the text; `EINSAT_COMPILETIME_PASSES=1`
//! also prints Cranelift's own pass times summed over every compile (the
//! rest of `jit` is einsat's lowering, scheduling and IR building, and the
//! JIT module's memory).

use einsat::extract::is_normal;
use einsat::jit::{self, Options};
use einsat::testing::{relayout_value, Layout};
use einsat::{Function, Value};
use rand::SeedableRng;
use std::collections::BTreeMap;
use std::time::Instant;

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// The `q` quantile (nearest rank) of `v`.
fn quantile(v: &[f64], q: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let k = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[k - 1]
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

struct Row {
    name: String,
    opt: Option<f64>,
    jit: f64,
    first: f64,
    first_f: f64,
    wait: f64,
    nests: usize,
    default_path: bool,
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let reps = args.first().copied().unwrap_or(7).max(1);
    let n = args.get(1).copied().unwrap_or(32);
    let filter = std::env::var("EINSAT_COMPILETIME_FILTER").unwrap_or_default();
    let root = env!("CARGO_MANIFEST_DIR");
    let mut files: Vec<_> = std::fs::read_dir(format!("{root}/examples"))
        .expect("examples/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "tl"))
        .collect();
    files.sort();
    files.push(format!("{root}/benches/perf.tl").into());

    // the first compile in a process (what `einsat run` waits for): the
    // matmul of benches/perf.tl, cold, then warm
    let perf = einsat::load(&std::fs::read_to_string(format!("{root}/benches/perf.tl")).unwrap())
        .expect("perf.tl loads");
    let mm = perf.get("matmul").expect("perf.tl has matmul");
    let one = || {
        let t = Instant::now();
        jit::compile_uncached_with(mm, &Options::default()).expect("compile");
        ms(t)
    };
    let cold = one();
    let warm: Vec<f64> = (0..reps).map(|_| one()).collect();
    println!(
        "first compile in this process (perf:matmul): {cold:.2} ms; the same again: {:.2} ms",
        median(&warm)
    );
    let passes = std::env::var_os("EINSAT_COMPILETIME_PASSES").is_some();
    let _ = cranelift_codegen::timing::take_current();
    let mut rows = Vec::new();
    let mut jit_total = 0.0;
    println!(
        "{reps} compiles per kernel (median), 1 thread, sizes {n}; times in ms\n\
         {:<34} {:>7} {:>7} {:>7} {:>7} {:>7} {:>5}",
        "kernel", "opt", "jit", "1st", "wait", "F 1st", "nests"
    );
    for path in &files {
        let src = std::fs::read_to_string(path).expect("read .tl");
        let prog = einsat::load(&src).expect("examples load");
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        for f in &prog.functions {
            if !f.name.contains(&filter) {
                continue;
            }
            // optimised (one optimisation per rep, shared by GEMM on/off)
            let mut opt_ms = Vec::new();
            let mut optimised = None;
            for _ in 0..reps {
                let t = Instant::now();
                let o = einsat::opt::optimize(f, &Default::default()).expect("optimise");
                opt_ms.push(ms(t));
                optimised = Some(o.program);
            }
            let optimised = optimised.unwrap();
            let mut variants: Vec<(&str, &Function)> = vec![("opt", &optimised)];
            if is_normal(f) {
                variants.push(("written", f));
            }
            for (how, g) in variants {
                for gemm in [true, false] {
                    let name = format!(
                        "{stem}:{}:{how}{}",
                        f.name,
                        if gemm { "" } else { ":nogemm" }
                    );
                    let r = measure(g, gemm, n, reps);
                    let row = Row {
                        name,
                        opt: (how == "opt").then(|| median(&opt_ms)),
                        jit: median(&r.0),
                        first: median(&r.1),
                        first_f: median(&r.2),
                        wait: median(&r.3),
                        nests: r.4,
                        default_path: how == "opt" && gemm,
                    };
                    println!(
                        "{:<34} {:>7} {:>7.2} {:>7.2} {:>7.2} {:>7.2} {:>5}",
                        row.name,
                        row.opt.map(|t| format!("{t:.1}")).unwrap_or("-".into()),
                        row.jit,
                        row.first,
                        row.wait,
                        row.first_f,
                        row.nests
                    );
                    jit_total += r.0.iter().chain(&r.2).sum::<f64>();
                    rows.push(row);
                }
            }
        }
    }
    if rows.is_empty() {
        println!("no kernel matches");
        return;
    }
    if passes {
        println!(
            "\nCranelift passes over every compile ({jit_total:.1} ms of `jit` and \
             `F 1st` in all, so the rest is einsat's):\n{}",
            cranelift_codegen::timing::take_current()
        );
    }
    println!();
    summary("all kernels", rows.iter().collect());
    summary(
        "default path (optimised, GEMM on)",
        rows.iter().filter(|r| r.default_path).collect(),
    );
    let mut worst: Vec<&Row> = rows.iter().collect();
    worst.sort_by(|a, b| b.wait.total_cmp(&a.wait));
    println!("slowest (wait = jit + 1st):");
    for r in worst.iter().take(6) {
        println!(
            "  {:<34} jit {:.2} ms, 1st {:.2} ms, F 1st {:.2} ms",
            r.name, r.jit, r.first, r.first_f
        );
    }
    let mut by: BTreeMap<&str, usize> = BTreeMap::new();
    for r in &rows {
        if r.wait > 5.0 {
            *by.entry(r.name.as_str()).or_default() += 1;
        }
    }
    println!(
        "kernels over 5 ms (wait): {} of {}{}",
        by.len(),
        rows.len(),
        if by.is_empty() {
            String::new()
        } else {
            format!(": {}", by.keys().copied().collect::<Vec<_>>().join(", "))
        }
    );
}

fn summary(what: &str, rows: Vec<&Row>) {
    let col = |f: &dyn Fn(&Row) -> f64| -> String {
        let v: Vec<f64> = rows.iter().map(|r| f(r)).collect();
        format!(
            "median {:6.2}  p90 {:6.2}  worst {:6.2}",
            median(&v),
            quantile(&v, 0.9),
            v.iter().cloned().fold(0.0, f64::max)
        )
    };
    println!("{what} ({} kernels), ms:", rows.len());
    println!("  jit    {}", col(&|r| r.jit));
    println!("  1st    {}", col(&|r| r.first));
    println!("  wait   {}", col(&|r| r.wait));
    println!("  F 1st  {}", col(&|r| r.first_f));
    let opt: Vec<f64> = rows.iter().filter_map(|r| r.opt).collect();
    if !opt.is_empty() {
        println!(
            "  opt    median {:6.2}  p90 {:6.2}  worst {:6.2}  (the optimiser, not JIT)",
            median(&opt),
            quantile(&opt, 0.9),
            opt.iter().cloned().fold(0.0, f64::max)
        );
    }
}

/// Compile `g` fresh `reps` times; per compile: the compile time, the
/// first C-order call's extra time over the second, the same for the first
/// Fortran-order call after them, and compile + first extra. Also the
/// number of nests.
#[allow(clippy::type_complexity)]
fn measure(
    g: &Function,
    gemm: bool,
    n: usize,
    reps: usize,
) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>, usize) {
    let opts = Options {
        gemm,
        threads: 1,
        ..Options::default()
    };
    let sizes: BTreeMap<String, usize> = g.size_names().into_iter().map(|x| (x, n)).collect();
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let args = einsat::testing::random_inputs(g, &sizes, &mut rng).expect("inputs");
    let fargs: Vec<Value> = args
        .iter()
        .map(|v| relayout_value(v, Layout::Fortran))
        .collect();
    let (mut jit_ms, mut first, mut first_f, mut wait) = (vec![], vec![], vec![], vec![]);
    let mut nests = 0;
    for _ in 0..reps {
        jit::clear_cache();
        let t = Instant::now();
        let k = jit::compile_uncached_with(g, &opts).expect("compile");
        let c = ms(t);
        nests = k.loop_program().nests.len();
        let t = Instant::now();
        let mut out = k.call(&args).expect("first call");
        let t1 = ms(t);
        let t = Instant::now();
        let _ = k.call(&args).expect("second call");
        let t2 = ms(t);
        let t = Instant::now();
        k.call_into(&fargs, &mut out).expect("first F call");
        let f1 = ms(t);
        let t = Instant::now();
        k.call_into(&fargs, &mut out).expect("second F call");
        let f2 = ms(t);
        jit_ms.push(c);
        first.push((t1 - t2).max(0.0));
        first_f.push((f1 - f2).max(0.0));
        wait.push(c + (t1 - t2).max(0.0));
    }
    (jit_ms, first, first_f, wait, nests)
}
