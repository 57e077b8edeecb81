//! `einsat bench`: the interpreter, the JIT on the program as written (when
//! it is already in normal form) and the JIT on the optimised program, timed
//! in the same run on the same random inputs; medians, ratios against the
//! interpreter, and GFLOP/s from a count of the floating-point operations.

use super::CliResult;
use crate::interp::{self, Sizes, Value};
use crate::opt::{optimize, Options};
use crate::syntax::ast::{Expr, Function, Size};
use crate::testing::random_inputs;
use rand::SeedableRng;
use std::collections::BTreeMap;
use std::time::Instant;

/// Floating-point operations of one evaluation (`+ - * /`, negation and
/// scalar functions; a `sum` adds once per term), loops multiplied out.
pub fn flops(e: &Expr, sizes: &Sizes) -> f64 {
    let n = |s: &Size| match s {
        Size::Lit(n) => *n as f64,
        Size::Named(x) => *sizes.get(x).unwrap_or(&1) as f64,
    };
    match e {
        Expr::Bin(_, a, b) => 1.0 + flops(a, sizes) + flops(b, sizes),
        Expr::Neg(a) => 1.0 + flops(a, sizes),
        Expr::Call(_, args) => 1.0 + args.iter().map(|a| flops(a, sizes)).sum::<f64>(),
        Expr::Sum(_, s, b) => n(s) * (flops(b, sizes) + 1.0),
        Expr::Gen(_, s, b) => n(s) * flops(b, sizes),
        other => other.children().into_iter().map(|c| flops(c, sizes)).sum(),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn time(reps: usize, mut run: impl FnMut() -> crate::Result<Value>) -> crate::Result<(f64, Value)> {
    let mut last = run()?; // warm-up (and compilation)
    let mut ts = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        last = run()?;
        ts.push(t.elapsed().as_secs_f64());
    }
    Ok((median(ts), last))
}

/// Run the benchmark and print it.
pub fn bench(
    f: &Function,
    given: &BTreeMap<String, usize>,
    reps: usize,
    seed: u64,
    json: bool,
) -> CliResult {
    let err = |e: crate::Error| format!("error: {e}");
    let sizes: Sizes = f
        .size_names()
        .into_iter()
        .map(|n| {
            let v = given.get(&n).copied().unwrap_or(64);
            (n, v)
        })
        .collect();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let args = random_inputs(f, &sizes, &mut rng).map_err(err)?;
    let t0 = Instant::now();
    let o = optimize(
        f,
        &Options {
            sizes: sizes.clone(),
            ..Options::default()
        },
    )
    .map_err(err)?;
    let opt_ms = t0.elapsed().as_secs_f64() * 1e3;
    let fl = flops(&f.body, &sizes);
    let fl_opt = flops(&o.program.body, &sizes);

    let mut rows: Vec<(String, f64, f64, bool)> = Vec::new();
    let (ti, want) = time(reps, || interp::run(f, &args)).map_err(err)?;
    rows.push(("interpreter".into(), ti, fl, true));
    if crate::extract::is_normal(f) {
        let k = crate::jit::compile(f).map_err(err)?;
        let (t, v) = time(reps, || k.call(&args)).map_err(err)?;
        rows.push((
            "jit (as written)".into(),
            t,
            fl,
            want.approx_eq(&v, 1e-6, 1e-9),
        ));
    }
    let k = crate::jit::compile(&o.program).map_err(err)?;
    let stages = k.stages();
    let (t, v) = time(reps, || k.call(&args)).map_err(err)?;
    rows.push((
        "jit (optimised)".into(),
        t,
        fl_opt,
        want.approx_eq(&v, 1e-6, 1e-9),
    ));

    if json {
        let rs: Vec<_> = rows
            .iter()
            .map(|(name, t, fl, ok)| {
                serde_json::json!({
                    "engine": name,
                    "median_ms": t * 1e3,
                    "speedup_vs_interp": ti / t,
                    "gflops": fl / t / 1e9,
                    "agrees": ok,
                })
            })
            .collect();
        println!(
            "{}",
            serde_json::json!({
                "function": f.name,
                "sizes": sizes,
                "reps": reps,
                "optimize_ms": opt_ms,
                "flops": fl,
                "engines": rs,
                "stages": stages,
            })
        );
    } else {
        println!(
            "{} with {:?}, {reps} runs each (median), optimised in {opt_ms:.1} ms",
            f.name, sizes
        );
        println!(
            "{:<18} {:>12} {:>12} {:>10} {:>7}",
            "engine", "median ms", "vs interp", "GFLOP/s", "agrees"
        );
        for (name, t, fl, ok) in &rows {
            println!(
                "{:<18} {:>12.4} {:>11.1}x {:>10.3} {:>7}",
                name,
                t * 1e3,
                ti / t,
                fl / t / 1e9,
                if *ok { "yes" } else { "NO" }
            );
        }
        println!("stages (optimised): {}", stages.join(", "));
    }
    if rows.iter().any(|r| !r.3) {
        return Err("error: an engine disagrees with the interpreter".into());
    }
    Ok(())
}
