//! Dump the planner's benchmark networks with einsat's plans as JSON (for
//! `python/bench_plan.py`, which plans the same networks with opt_einsum
//! and cotengra and prints the ratios).
//!
//! ```text
//! cargo run --release --example plan_networks -- [--case PREFIX] [--method auto|optimal|greedy|hyper]
//!     [--reps N] [--out FILE]
//! ```
//!
//! Per case: the network (inputs, output, sizes), and einsat's plan
//! without a memory limit (as its peers plan): multiply-adds, opt_einsum's
//! flop count, largest intermediate, the linear path, and the planning time
//! in ms (median of `--reps` runs, default 3); and the plan under the
//! default memory limit (`limited_*`: flops with recomputation, sliced
//! indices). Minimised cost: opt_einsum's convention, so the comparison is
//! like for like.

use einsat::plan::{networks, plan, Convention, MemoryLimit, Method, Network, Options};
use serde_json::json;
use std::time::Instant;

fn cases() -> Vec<(String, Network)> {
    let mut v = Vec::new();
    for n in [8, 16, 24] {
        v.push((format!("ring{n}"), networks::ring(n, 8)));
    }
    v.push(("mps32".into(), networks::mps_norm(32, 32, 2)));
    v.push(("grid6x6".into(), networks::grid(6, 6, 4)));
    for n in 3..=8 {
        for k in 0..4 {
            v.push((
                format!("einsum{n}_{k}"),
                networks::random_einsum(n, (n * 10 + k) as u64),
            ));
        }
    }
    for n in [20, 50, 100, 200, 500] {
        v.push((
            format!("rr{n}"),
            networks::random_regular(n, 3, 2, n as u64),
        ));
    }
    v
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let get = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let filter = get("--case");
    let method = match get("--method").as_deref() {
        None | Some("auto") => Method::Auto,
        Some("optimal") => Method::Optimal,
        Some("greedy") => Method::Greedy,
        Some("hyper") => Method::Hyper,
        Some(m) => {
            eprintln!("unknown method {m}");
            std::process::exit(2);
        }
    };
    let reps: usize = get("--reps")
        .and_then(|r| r.parse().ok())
        .unwrap_or(3)
        .max(1);
    let opts = Options {
        method,
        convention: Convention::OptEinsum,
        memory_limit: MemoryLimit::Unlimited,
        ..Options::default()
    };
    let limited = Options {
        memory_limit: MemoryLimit::Default,
        ..opts.clone()
    };
    let mut out = Vec::new();
    for (name, net) in cases() {
        if filter
            .as_ref()
            .is_some_and(|f| !name.starts_with(f.as_str()))
        {
            continue;
        }
        let mut times = Vec::new();
        let mut last = None;
        for _ in 0..reps {
            let t = Instant::now();
            let p = plan(&net, &opts).expect("benchmark networks plan");
            times.push(t.elapsed().as_secs_f64() * 1e3);
            last = Some(p);
        }
        let p = last.expect("one run");
        // with the default memory limit: sliced where the plan breaks it
        let l = plan(&net, &limited).expect("benchmark networks plan");
        let limit = l.memory_limit.unwrap_or(f64::INFINITY);
        times.sort_by(f64::total_cmp);
        let ms = times[times.len() / 2];
        eprintln!(
            "{name:>12}: {:>3} tensors  {:?}  flops(oe) {:.4e}  largest {:.3e}  sliced {:?}  {ms:.2} ms",
            net.inputs().len(),
            p.method,
            p.flops_opt_einsum,
            p.largest_intermediate,
            p.sliced
        );
        out.push(json!({
            "name": name,
            "inputs": net.inputs(),
            "output": net.output(),
            "sizes": net.sizes(),
            "einsat": {
                "method": format!("{:?}", p.method),
                "flops": p.flops,
                "flops_opt_einsum": p.flops_opt_einsum,
                "largest": p.largest_intermediate,
                "sliced": p.sliced,
                "path": p.linear_path(),
                "ms": ms,
                "ms_all": times,
                "limit": limit,
                "limited_flops_opt_einsum": l.flops_opt_einsum,
                "limited_largest": l.largest_intermediate,
                "limited_sliced": l.sliced,
            }
        }));
    }
    let text = serde_json::to_string(&out).expect("json");
    match get("--out") {
        Some(f) => std::fs::write(&f, text).unwrap_or_else(|e| {
            eprintln!("{f}: {e}");
            std::process::exit(1)
        }),
        None => println!("{text}"),
    }
}
