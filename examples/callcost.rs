//! Per-call cost of small kernels, robust to a loaded machine: each
//! program runs in batches of calls, alternating, and the minimum time per
//! call over the batches is reported (with its ratio to the first).
//!
//! `cargo run --release --example callcost -- FILE n=SIZE NAME[:opt]…`
//! (as `schedbench`, for calls too short for its per-call timer; `:nopoll`
//! compiles an entry without cancellation polls;
//! `EINSAT_BATCH` calls per batch, default 2000, `EINSAT_REPS` batches,
//! default 300).
use einsat::opt::{optimize, Options};
use rand::SeedableRng;
use std::collections::BTreeMap;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 || !args[2].contains('=') {
        eprintln!("usage: callcost FILE n=SIZE NAME[:opt]...");
        std::process::exit(2);
    }
    let src = std::fs::read_to_string(&args[1]).unwrap();
    let prog = einsat::load(&src).unwrap();
    let (_, v) = args[2].split_once('=').unwrap();
    let n: usize = v.parse().unwrap();
    let batch = env("EINSAT_BATCH", 2000);
    let mut runs = Vec::new();
    for spec in &args[3..] {
        let (name, opt) = match spec.split_once(':') {
            Some((a, m)) => (a, m.starts_with("opt")),
            None => (spec.as_str(), false),
        };
        // `NAME:nopoll`, `NAME:opt-nopoll`: compiled without cancellation
        // polls (their cost, measured in one process)
        let poll = !spec.ends_with("nopoll");
        let f = prog.get(name).unwrap_or_else(|| panic!("no {name}"));
        let g = if opt {
            optimize(f, &Options::default()).unwrap().program
        } else {
            f.clone()
        };
        let jopts = einsat::jit::Options {
            poll,
            ..einsat::jit::Options::default()
        };
        let kern = einsat::jit::compile_uncached_with(&g, &jopts).unwrap();
        let sizes: BTreeMap<String, usize> = f.size_names().into_iter().map(|x| (x, n)).collect();
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let a = einsat::testing::random_inputs(f, &sizes, &mut rng).unwrap();
        let out = kern.call(&a).unwrap();
        runs.push((spec.clone(), kern, a, out, f64::INFINITY));
    }
    for _ in 0..env("EINSAT_REPS", 300) {
        for r in runs.iter_mut() {
            let t = Instant::now();
            for _ in 0..batch {
                r.1.call_into(&r.2, &mut r.3).unwrap();
            }
            r.4 = r.4.min(t.elapsed().as_secs_f64() / batch as f64);
        }
    }
    let base = runs[0].4;
    for (spec, k, _, _, t) in &runs {
        println!(
            "{spec:20} min {:9.1} ns  ratio {:6.3}  nests {}",
            t * 1e9,
            t / base,
            k.stages().len()
        );
    }
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
