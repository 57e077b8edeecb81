//! Optimised versus as written, for every function of some `.tl` files:
//! each function is compiled by the JIT twice in this process (the program
//! as written, when it is in the JIT's normal form, and the optimised
//! program), the size is doubled until a call of the program as written
//! takes at least `EINSAT_MIN_US` µs (default 100; at most 2^22 input
//! elements), and the two kernels then run alternately on the same inputs
//! into the same output buffer (calls under 20 µs timed in batches); the
//! minimum time of each and their ratio are printed (ratio > 1.05 is
//! flagged `SLOWER`). One output buffer, because with a buffer each, two
//! identical programs (the blocked transpose at n = 1024) timed 0.74–1.47×
//! of each other from run to run. A function not in the JIT's normal
//! form as written runs, as written, in the normal form of the
//! optimiser's post-pass alone (`extract::normalize`; its size is marked
//! `*`).
//!
//! `cargo run --release --example optsweep -- [FILE.tl …]` (default:
//! `examples/*.tl` and the bilinear form
//! `sum(i,j) x[i]*A[i,j]*y[j]` at n = 512). `EINSAT_THREADS=N` sets the
//! JIT's threads (default 1), `EINSAT_REPS=N` the alternating rounds
//! (default 40). Only ratios of one run mean anything on a loaded machine.
use einsat::extract::NormalOptions;
use einsat::interp::Value;
use einsat::opt::{optimize, Options};
use einsat::syntax::ast::{Function, Size, Type};
use rand::SeedableRng;
use std::collections::BTreeMap;
use std::time::Instant;

const BILINEAR: &str =
    "fn bilinear(x: [n]R, A: [n,n]R, y: [n]R) -> R = sum(i:n, j:n) x[i] * A[i,j] * y[j]\n";

fn elems(t: &Type, n: usize) -> usize {
    match t {
        Type::Real | Type::Int => 1,
        Type::Tensor(s, e) => {
            let k = match s {
                Size::Lit(k) => *k,
                Size::Named(_) => n,
            };
            k.saturating_mul(elems(e, n))
        }
        Type::Pair(a, b) => elems(a, n).saturating_add(elems(b, n)),
    }
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Seconds per call, over `batch` calls in a row (short calls are timed in
/// batches so the clock's resolution does not decide the ratio).
fn time(k: &einsat::jit::Kernel, a: &[Value], out: &mut Value, batch: usize) -> f64 {
    let t = Instant::now();
    for _ in 0..batch {
        k.call_into(a, out).expect("call");
    }
    t.elapsed().as_secs_f64() / batch as f64
}

fn main() {
    let mut files: Vec<(String, String)> = Vec::new();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() {
        let mut paths: Vec<_> = std::fs::read_dir("examples")
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default();
        paths.sort();
        for p in paths {
            if p.extension().is_some_and(|e| e == "tl") {
                let src = std::fs::read_to_string(&p).expect("read");
                files.push((p.display().to_string(), src));
            }
        }
        files.push(("(bilinear)".into(), BILINEAR.into()));
    } else {
        for p in args {
            let src = std::fs::read_to_string(&p).expect("read");
            files.push((p, src));
        }
    }
    let threads = env("EINSAT_THREADS", 1);
    let reps = env("EINSAT_REPS", 40);
    let min_s = env("EINSAT_MIN_US", 100) as f64 * 1e-6;
    let jopts = einsat::jit::Options {
        threads,
        ..einsat::jit::Options::default()
    };
    println!(
        "{:28} {:14} {:>6} {:>11} {:>11} {:>7}",
        "file", "function", "n", "written µs", "opt µs", "ratio"
    );
    let mut worst: Vec<(f64, String)> = Vec::new();
    for (file, src) in &files {
        let prog = match einsat::load(src) {
            Ok(p) => p,
            Err(e) => {
                println!("{file}: {e}");
                continue;
            }
        };
        let short = file.rsplit('/').next().unwrap_or(file);
        for f in &prog.functions {
            let row = |msg: &str| println!("{short:28} {:14} {msg}", f.name);
            let g: Function = match optimize(f, &Options::default()) {
                Ok(o) => o.program,
                Err(e) => {
                    row(&format!("optimize: {e}"));
                    continue;
                }
            };
            // a program not in the JIT's normal form as written runs as
            // the optimiser's post-pass alone puts it (marked `*`)
            let written = einsat::jit::compile_uncached_with(f, &jopts);
            let normalised = written.is_err();
            let written = written.or_else(|_| {
                let nf = einsat::extract::normalize(f, &NormalOptions::default());
                einsat::jit::compile_uncached_with(&nf, &jopts)
            });
            let (kw, ko) = match (written, einsat::jit::compile_uncached_with(&g, &jopts)) {
                (Ok(a), Ok(b)) => (a, b),
                (Err(e), _) => {
                    row(&format!("compile as written: {e}"));
                    continue;
                }
                (_, Err(e)) => {
                    row(&format!("compile optimised: {e}"));
                    continue;
                }
            };
            let names = f.size_names();
            let mut rng = rand::rngs::StdRng::seed_from_u64(1);
            let mut n = if f.name == "bilinear" { 512 } else { 4 };
            let (a, mut ow, mut oo) = loop {
                let sizes: BTreeMap<String, usize> = names.iter().map(|x| (x.clone(), n)).collect();
                let a = match einsat::testing::random_inputs(f, &sizes, &mut rng) {
                    Ok(a) => a,
                    Err(e) => break (Err(e.to_string()), None, None),
                };
                let ow = match kw.call(&a) {
                    Ok(o) => o,
                    Err(e) => break (Err(e.to_string()), None, None),
                };
                let mut o2 = ow.clone();
                let t = (0..3)
                    .map(|_| time(&kw, &a, &mut o2, 1))
                    .fold(f64::INFINITY, f64::min);
                let next: usize = f.params.iter().map(|p| elems(&p.ty, 2 * n)).sum();
                if f.name == "bilinear" || names.is_empty() || t >= min_s || next > 1 << 22 {
                    let oo = ko.call(&a).ok();
                    break (Ok(a), Some(ow), oo);
                }
                n *= 2;
            };
            let a = match a {
                Ok(a) => a,
                Err(e) => {
                    row(&format!("inputs: {e}"));
                    continue;
                }
            };
            // (the optimised kernel's own result only shows that it runs)
            let (Some(ow), Some(_)) = (ow.as_mut(), oo.as_mut()) else {
                row("call of the optimised kernel failed");
                continue;
            };
            let t1 = time(&kw, &a, ow, 1).max(time(&ko, &a, ow, 1));
            let batch = ((20e-6 / t1) as usize).clamp(1, 10_000);
            let (mut tw, mut to) = (f64::INFINITY, f64::INFINITY);
            for _ in 0..reps {
                tw = tw.min(time(&kw, &a, ow, batch));
                to = to.min(time(&ko, &a, ow, batch));
            }
            let r = to / tw;
            let flag = if r > 1.05 { "  SLOWER" } else { "" };
            let n_shown = match (names.is_empty(), normalised) {
                (true, false) => "-".to_string(),
                (true, true) => "-*".to_string(),
                (false, false) => n.to_string(),
                (false, true) => format!("{n}*"),
            };
            println!(
                "{short:28} {:14} {n_shown:>6} {:11.2} {:11.2} {r:7.3}{flag}",
                f.name,
                tw * 1e6,
                to * 1e6
            );
            worst.push((r, format!("{short} {}", f.name)));
        }
    }
    worst.sort_by(|a, b| b.0.total_cmp(&a.0));
    if let Some((r, name)) = worst.first() {
        println!("worst ratio: {r:.3} ({name})");
    }
}
