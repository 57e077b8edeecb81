//! Schedule figures in one process, robust to a loaded machine: for each
//! group, the programs run alternately and the minimum time of each is
//! reported with its ratio to the group's first program.
//!
//! `cargo run --release --example schedbench -- FILE n=SIZE NAME[:opt] NAME[:opt]…`
//! (`:opt` runs the optimised program, else the program as written;
//! `:nogemm` / `:opt-nogemm` turn the GEMM stage off for that entry, and a
//! mode containing `nopoll` — `:nopoll`, `:opt-nogemm-nopoll` — compiles
//! it without cancellation polls, to measure their cost).
//! `EINSAT_THREADS=N` sets the JIT's threads (default all cores),
//! `EINSAT_REPS=N` the interleaved rounds (default 200).
//!
//! Hand-written Rust peers run in the same rounds on the group's first
//! program's inputs: `rust:blur` (a 5-point blur with zero padding, borders
//! peeled, the interior written so LLVM vectorises it) and
//! `rust:blur-naive` (every neighbour checked).
#[path = "peers/blur.rs"]
mod blur;

use einsat::interp::Value;
use einsat::opt::{optimize, Options};
use rand::SeedableRng;
use std::collections::BTreeMap;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 4 || !args[2].contains('=') {
        eprintln!("usage: schedbench FILE n=SIZE NAME[:opt|:nogemm]... [rust:PEER]...");
        std::process::exit(2);
    }
    let src = std::fs::read_to_string(&args[1]).unwrap();
    let prog = einsat::load(&src).unwrap();
    // every size name gets the same value
    let (_, v) = args[2].split_once('=').unwrap();
    let n: usize = v.parse().unwrap();
    let mut runs = Vec::new();
    let mut peers: Vec<(String, Peer, Vec<f64>, f64)> = Vec::new();
    for spec in &args[3..] {
        if let Some(p) = spec.strip_prefix("rust:") {
            let f = match p {
                "blur" => blur::peeled as Peer,
                "blur-naive" => blur::naive as Peer,
                _ => panic!("no peer {p}"),
            };
            peers.push((spec.clone(), f, vec![0.0; n * n], f64::INFINITY));
            continue;
        }
        let (name, opt, gemm, poll) = match spec.split_once(':') {
            Some((a, m)) => (
                a,
                m.starts_with("opt"),
                !m.contains("nogemm"),
                !m.contains("nopoll"),
            ),
            None => (spec.as_str(), false, true, true),
        };
        let f = prog.get(name).unwrap_or_else(|| panic!("no {name}"));
        let g = if opt {
            optimize(f, &Options::default()).unwrap().program
        } else {
            f.clone()
        };
        let t = Instant::now();
        let jopts = einsat::jit::Options {
            gemm,
            threads: env("EINSAT_THREADS", 0),
            poll,
            ..einsat::jit::Options::default()
        };
        let kern = einsat::jit::compile_uncached_with(&g, &jopts).unwrap();
        let ct = t.elapsed().as_secs_f64();
        let sizes: BTreeMap<String, usize> = f.size_names().into_iter().map(|x| (x, n)).collect();
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        // the same inputs as the first program when the parameters agree
        // (so the group shares one working set)
        let a = match runs.first() {
            Some((_, _, a0, _, _, _, p0)) if *p0 == f.params => {
                let a0: &Vec<Value> = a0;
                a0.clone()
            }
            _ => einsat::testing::random_inputs(f, &sizes, &mut rng).unwrap(),
        };
        let out = kern.call(&a).unwrap();
        runs.push((
            spec.clone(),
            kern,
            a,
            out,
            f64::INFINITY,
            ct,
            f.params.clone(),
        ));
    }
    let first = runs[0].2.clone();
    let p0 = runs[0].6.clone();
    for r in runs.iter_mut() {
        if r.6 == p0 {
            r.2 = Vec::new();
        }
    }
    for _ in 0..env("EINSAT_REPS", 200) {
        for r in runs.iter_mut() {
            let a = if r.2.is_empty() { &first } else { &r.2 };
            let t = Instant::now();
            r.1.call_into(a, &mut r.3).unwrap();
            r.4 = r.4.min(t.elapsed().as_secs_f64());
        }
        for (_, f, out, best) in peers.iter_mut() {
            let Value::Array(a) = &first[0] else {
                panic!("a peer needs an array argument")
            };
            let a = a.as_standard_layout();
            let a = a.as_slice().expect("standard layout");
            let t = Instant::now();
            f(a, out, n);
            *best = best.min(t.elapsed().as_secs_f64());
        }
    }
    let base = runs[0].4;
    for (spec, _, out, t) in &peers {
        // the peer's result against the group's first program's
        let same = match &runs[0].3 {
            Value::Array(r) => r
                .iter()
                .zip(out)
                .all(|(x, y)| (x - y).abs() <= 1e-12 * (1.0 + x.abs())),
            _ => false,
        };
        println!(
            "{spec:20} min {:9.4} ms  ratio {:6.3}  agrees with the first: {same}",
            t * 1e3,
            t / base,
        );
    }
    for (spec, _, _, out, t, ct, _) in &runs {
        let s = match out {
            Value::Real(x) => format!("{x:.6e}"),
            _ => String::new(),
        };
        println!(
            "{spec:20} min {:9.4} ms  ratio {:6.3}  compile {:6.2} ms {s}",
            t * 1e3,
            t / base,
            ct * 1e3
        );
    }
}

type Peer = fn(&[f64], &mut [f64], usize);

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
