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
use ndarray::ArrayD;
use std::time::Instant;

/// The program text of a network: one parameter per tensor, one named size
/// per index (`d{id}`), the output as `gen`s and the rest as `sum`s.
fn program(net: &Network) -> String {
    let idx = |i: usize| format!("i{i}");
    let size = |i: usize| format!("d{i}");
    let mut params = Vec::new();
    let mut factors = Vec::new();
    for (t, ids) in net.inputs().iter().enumerate() {
        let dims: Vec<String> = ids.iter().map(|&i| size(i)).collect();
        params.push(if ids.is_empty() {
            format!("T{t}: R")
        } else {
            format!("T{t}: [{}]R", dims.join(","))
        });
        let ix: Vec<String> = ids.iter().map(|&i| idx(i)).collect();
        factors.push(if ids.is_empty() {
            format!("T{t}")
        } else {
            format!("T{t}[{}]", ix.join(","))
        });
    }
    let out = net.output();
    let mut used: Vec<usize> = net.inputs().iter().flatten().copied().collect();
    used.sort_unstable();
    used.dedup();
    let summed: Vec<usize> = used.into_iter().filter(|i| !out.contains(i)).collect();
    let ret = if out.is_empty() {
        "R".to_string()
    } else {
        format!(
            "[{}]R",
            out.iter().map(|&i| size(i)).collect::<Vec<_>>().join(",")
        )
    };
    let mut body = factors.join(" * ");
    if !summed.is_empty() {
        let b: Vec<String> = summed
            .iter()
            .map(|&i| format!("{}:{}", idx(i), size(i)))
            .collect();
        body = format!("sum({}) {body}", b.join(", "));
    }
    if !out.is_empty() {
        let b: Vec<String> = out
            .iter()
            .map(|&i| format!("{}:{}", idx(i), size(i)))
            .collect();
        body = format!("gen({}) {body}", b.join(", "));
    }
    format!("fn tn({}) -> {ret} = {body}", params.join(", "))
}

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

/// Random data for the network's inputs (deterministic).
fn data(net: &Network, seed: u64) -> Vec<ArrayD<f64>> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    };
    net.inputs()
        .iter()
        .map(|ids| {
            let shape: Vec<usize> = ids.iter().map(|&i| net.sizes()[i] as usize).collect();
            let n: usize = shape.iter().product();
            ArrayD::from_shape_vec(shape, (0..n).map(|_| next()).collect()).unwrap()
        })
        .collect()
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
        let text = program(&net);
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
        let inputs = data(&net, 1);
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
