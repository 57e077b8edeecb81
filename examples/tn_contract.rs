//! Contraction time of planned tensor networks in the JIT (issue 23, the
//! speed half): per network, the optimised program's stages, the time to
//! optimise and compile, and the call time on random data with 1 and 2
//! threads. `python/bench_tn.py` compares the same networks with
//! opt_einsum on numpy; `benches/tn.rs` against a tensordot baseline.
//!
//! ```text
//! cargo run --release --example tn_contract -- [--case PREFIX] [--reps N] [--stages] [--interp]
//! ```

use einsat::jit;
use einsat::plan::{networks, Network};
use einsat::syntax::parse_program;
use std::time::Instant;

/// The networks measured: name and network.
fn cases() -> Vec<(String, Network)> {
    let mut v: Vec<(String, Network)> = Vec::new();
    for n in [8, 16, 24, 50] {
        v.push((format!("ring{n}"), networks::ring(n, 8)));
    }
    v.push(("mps32".into(), networks::mps_norm(32, 32, 2)));
    v.push(("grid4x4".into(), networks::grid(4, 4, 4)));
    v.push(("grid6x6".into(), networks::grid(6, 6, 4)));
    for n in 3..=8 {
        v.push((
            format!("einsum{n}"),
            networks::random_einsum(n, n as u64 * 10),
        ));
    }
    for n in [50, 100, 200, 500] {
        v.push((
            format!("rr{n}"),
            networks::random_regular(n, 3, 2, n as u64),
        ));
    }
    v
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let get = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let filter = get("--case");
    let reps: usize = get("--reps")
        .and_then(|r| r.parse().ok())
        .unwrap_or(5)
        .max(1);
    let show_stages = args.iter().any(|a| a == "--stages");
    let show_program = args.iter().any(|a| a == "--program");
    let check = args.iter().any(|a| a == "--interp");
    for (name, net) in cases() {
        if filter
            .as_ref()
            .is_some_and(|f| !name.starts_with(f.as_str()))
        {
            continue;
        }
        let text = networks::program_text(&net);
        let f = parse_program(&text)
            .expect("program parses")
            .program
            .functions
            .remove(0);
        let mut o = einsat::opt::Options::default();
        for (i, &s) in net.sizes().iter().enumerate() {
            o.sizes.insert(format!("d{i}"), s as usize);
        }
        if show_program {
            eprintln!("optimising {name}");
        }
        let t0 = Instant::now();
        let opt = einsat::opt::optimize(&f, &o).expect("optimises");
        let t_opt = t0.elapsed().as_secs_f64();
        if show_program {
            println!("{}", einsat::syntax::print_function(&opt.program));
        }
        let inputs = networks::random_data(&net, 1);
        let argv: Vec<einsat::Arg> = inputs
            .iter()
            .map(|a| {
                if a.ndim() == 0 {
                    einsat::Arg::Real(a.sum())
                } else {
                    einsat::Arg::Array(a.view())
                }
            })
            .collect();
        let mut line = format!("{name:10} opt {:7.1} ms", t_opt * 1e3);
        let mut first = None;
        let mut jit_result = None;
        for threads in [1, 2] {
            let jo = jit::Options {
                threads,
                ..jit::Options::default()
            };
            let t0 = Instant::now();
            let k = jit::compile_uncached_with(&opt.program, &jo).expect("compiles");
            let t_c = t0.elapsed().as_secs_f64();
            if show_stages && threads == 1 {
                for s in k.stages() {
                    println!("  stage {s}");
                }
            }
            let r = k.call_args(&argv).expect("runs");
            let mut times = Vec::new();
            let start = Instant::now();
            while times.len() < reps || (start.elapsed().as_secs_f64() < 0.3 && times.len() < 1000)
            {
                let t0 = Instant::now();
                let r = k.call_args(&argv).expect("runs");
                times.push(t0.elapsed().as_secs_f64());
                std::hint::black_box(r);
            }
            let v = match r {
                einsat::Value::Real(x) => x,
                ref other => other.to_json().to_string().len() as f64,
            };
            first.get_or_insert(v);
            jit_result.get_or_insert(r.clone());
            line += &format!(
                " | {threads}t compile {:6.1} ms call {:10.3} ms",
                t_c * 1e3,
                median(times) * 1e3
            );
        }
        if check {
            let vals: Vec<einsat::Value> = inputs
                .iter()
                .map(|a| {
                    if a.ndim() == 0 {
                        einsat::Value::Real(a.sum())
                    } else {
                        einsat::Value::Array(a.clone())
                    }
                })
                .collect();
            // the optimised program on the interpreter: its steps are the
            // planned ones, so this finishes where the source's loop nest
            // would not
            let r = einsat::interp::run(&opt.program, &vals).expect("interprets");
            let flat = |v: &einsat::Value| -> Vec<f64> {
                match v {
                    einsat::Value::Real(x) => vec![*x],
                    einsat::Value::Array(a) => a.iter().copied().collect(),
                    einsat::Value::Pair(..) => vec![],
                }
            };
            let (a, b) = (flat(&r), flat(&jit_result.clone().expect("ran")));
            let scale = a
                .iter()
                .fold(0f64, |m, x| m.max(x.abs()))
                .max(f64::MIN_POSITIVE);
            let diff = a
                .iter()
                .zip(&b)
                .fold(0f64, |m, (x, y)| m.max((x - y).abs()));
            line += &format!(" | jit vs interp: max diff / max {:.1e}", diff / scale);
            assert!(
                a.len() == b.len() && diff <= 1e-9 * scale,
                "{name}: the JIT differs from the interpreter"
            );
        }
        println!("{line}");
    }
}
