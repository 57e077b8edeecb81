//! `einsat bench`: the interpreter, the JIT on the program as written (when
//! it is already in normal form) and the JIT on the optimised program — or
//! any of them (`--engines`) — timed in the same run on the same random
//! inputs; medians, ratios against the first engine listed, and GFLOP/s
//! from a count of the floating-point operations; for each JIT engine its
//! compile time (fresh, not from the kernel cache) and its first call's
//! time (`compile_ms`, `first_call_ms` in `--json`). `--threads` and
//! `--no-gemm` set the JIT's options.

use super::common::CliResult;
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
        Expr::Reduce(_, _, s, b) => n(s) * (flops(b, sizes) + 1.0),
        other => other.children().into_iter().map(|c| flops(c, sizes)).sum(),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn time(
    reps: usize,
    mut run: impl FnMut() -> crate::error::Result<Value>,
) -> crate::error::Result<(f64, Value)> {
    let mut last = run()?; // warm-up (and compilation)
    let mut ts = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        last = run()?;
        ts.push(t.elapsed().as_secs_f64());
    }
    Ok((median(ts), last))
}

/// Time a kernel writing into a preallocated output (as `time`; the
/// warm-up call allocates it). Also returns the warm-up call's time: the
/// first call a user makes (workspace set-up included).
fn time_into(
    reps: usize,
    k: &crate::jit::Kernel,
    args: &[Value],
) -> crate::error::Result<(f64, Value, f64)> {
    if k.precision() == crate::precision::Precision::F32 {
        // f32 arguments made once, outside the timing; each call allocates
        // its f32 result (there is no `call_into` for f32 yet)
        crate::interp::gather::check_values(k.function(), args, k.precision())?;
        let a32: Vec<crate::jit::Value32> = args.iter().map(crate::jit::Value32::rounded).collect();
        let refs: Vec<crate::jit::Arg32<'_>> =
            a32.iter().map(crate::jit::Value32::as_arg).collect();
        let t = Instant::now();
        let mut out = k.call_f32(&refs)?;
        let first = t.elapsed().as_secs_f64();
        let mut ts = Vec::with_capacity(reps);
        for _ in 0..reps {
            let t = Instant::now();
            out = k.call_f32(&refs)?;
            ts.push(t.elapsed().as_secs_f64());
        }
        return Ok((median(ts), out.to_value(), first));
    }
    match k.precision() {
        crate::precision::Precision::I64 => return time_int::<i64>(reps, k, args),
        crate::precision::Precision::I32 => return time_int::<i32>(reps, k, args),
        _ => {}
    }
    let t = Instant::now();
    let mut out = k.call(args)?;
    let first = t.elapsed().as_secs_f64();
    let mut ts = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        k.call_into(args, &mut out)?;
        ts.push(t.elapsed().as_secs_f64());
    }
    Ok((median(ts), out, first))
}

/// [`time_into`] for a kernel compiled in an integer format: the
/// arguments as integers made once, outside the timing (each must be an
/// integer of the width); each call allocates its result.
fn time_int<T: crate::precision::IntElem>(
    reps: usize,
    k: &crate::jit::Kernel,
    args: &[Value],
) -> crate::error::Result<(f64, Value, f64)> {
    let ints = args
        .iter()
        .map(crate::interp::IntValue::<T>::from_value)
        .collect::<crate::error::Result<Vec<_>>>()?;
    let refs: Vec<crate::jit::IntArg<'_, T>> = ints.iter().map(|v| v.as_arg()).collect();
    let t = Instant::now();
    let mut out = k.call_int(&refs)?;
    let first = t.elapsed().as_secs_f64();
    let mut ts = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        out = k.call_int(&refs)?;
        ts.push(t.elapsed().as_secs_f64());
    }
    Ok((median(ts), out.to_value(), first))
}

/// An engine `einsat bench` can time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BenchEngine {
    /// The reference interpreter on the program as written.
    Interp,
    /// The JIT on the optimised program.
    Jit,
    /// The JIT on the program as written (when it is in normal form).
    JitNoOpt,
}

impl BenchEngine {
    /// Parse a comma-separated list (`interp,jit,jit-noopt`).
    pub fn parse_list(s: &str) -> Result<Vec<BenchEngine>, String> {
        let mut out = Vec::new();
        for w in s.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            let e = match w {
                "interp" => BenchEngine::Interp,
                "jit" => BenchEngine::Jit,
                "jit-noopt" => BenchEngine::JitNoOpt,
                other => {
                    return Err(format!(
                        "error: unknown engine `{}` (engines: interp, jit, jit-noopt)",
                        crate::diag::quote(other)
                    ))
                }
            };
            if !out.contains(&e) {
                out.push(e);
            }
        }
        if out.is_empty() {
            return Err("error: --engines lists no engine".into());
        }
        Ok(out)
    }

    fn label(self) -> &'static str {
        match self {
            BenchEngine::Interp => "interpreter",
            BenchEngine::Jit => "jit (optimised)",
            BenchEngine::JitNoOpt => "jit (as written)",
        }
    }
}

/// What `einsat bench` runs.
#[derive(Clone, Debug)]
pub struct BenchArgs {
    /// Named sizes (64 when not given).
    pub sizes: BTreeMap<String, usize>,
    /// Timed runs per engine.
    pub reps: usize,
    pub seed: u64,
    pub json: bool,
    /// In order; ratios are against the first.
    pub engines: Vec<BenchEngine>,
    /// JIT options (threads, GEMM stages).
    pub jit: crate::jit::Options,
}

struct Row {
    engine: BenchEngine,
    time: f64,
    flops: f64,
    out: Value,
    /// JIT engines: the compile time (type check, lowering, Cranelift for
    /// the arguments' layout) and the first call's time, in seconds.
    compile: Option<(f64, f64)>,
}

/// Run the benchmark and print it: every engine on the same inputs, the
/// median time, the ratio against the first engine listed, GFLOP/s, and
/// whether the result agrees with the reference (the interpreter when it
/// runs, else the first engine listed).
pub fn bench(f: &Function, a: &BenchArgs) -> CliResult {
    let err = |e: crate::error::Error| format!("error: {e}");
    let sizes: Sizes = f
        .size_names()
        .into_iter()
        .map(|n| {
            let v = a.sizes.get(&n).copied().unwrap_or(64);
            (n, v)
        })
        .collect();
    let mut rng = rand::rngs::StdRng::seed_from_u64(a.seed);
    let args = random_inputs(f, &sizes, &mut rng).map_err(err)?;
    let fl = flops(&f.body, &sizes);
    let mut opt_ms = None;
    let mut stages: Option<Vec<String>> = None;
    let mut notes = Vec::new();
    let mut rows: Vec<Row> = Vec::new();
    for &e in &a.engines {
        let (time, flops, out, compile) = match e {
            BenchEngine::Interp => {
                let p = a.jit.precision;
                let (t, v) = time(a.reps, || interp::run_with(f, &args, p)).map_err(err)?;
                (t, fl, v, None)
            }
            BenchEngine::JitNoOpt => {
                if !crate::extract::is_normal(f) {
                    notes.push(format!(
                        "jit (as written) skipped: `{}` is not in normal form",
                        f.name
                    ));
                    continue;
                }
                let t0 = Instant::now();
                let k = crate::jit::compile_uncached_with(f, &a.jit).map_err(err)?;
                let c = t0.elapsed().as_secs_f64();
                let (t, v, first) = time_into(a.reps, &k, &args).map_err(err)?;
                (t, fl, v, Some((c, first)))
            }
            BenchEngine::Jit => {
                let t0 = Instant::now();
                let o = optimize(
                    f,
                    &Options {
                        sizes: sizes.clone(),
                        precision: a.jit.precision,
                        ..Options::default()
                    },
                )
                .map_err(err)?;
                opt_ms = Some(t0.elapsed().as_secs_f64() * 1e3);
                let t0 = Instant::now();
                let k = crate::jit::compile_uncached_with(&o.program, &a.jit).map_err(err)?;
                let c = t0.elapsed().as_secs_f64();
                stages = Some(k.stages());
                let (t, v, first) = time_into(a.reps, &k, &args).map_err(err)?;
                (t, flops(&o.program.body, &sizes), v, Some((c, first)))
            }
        };
        rows.push(Row {
            engine: e,
            time,
            flops,
            out,
            compile,
        });
    }
    if rows.is_empty() {
        return Err(format!("error: no engine could run ({})", notes.join("; ")));
    }
    let reference = rows
        .iter()
        .find(|r| r.engine == BenchEngine::Interp)
        .unwrap_or(&rows[0])
        .out
        .clone();
    let agrees: Vec<bool> = rows
        .iter()
        .map(|r| match a.jit.precision {
            crate::precision::Precision::F64 => reference.approx_eq(&r.out, 1e-6, 1e-9),
            // f32: sums in another order differ by a few f32 ulps per term
            crate::precision::Precision::F32 => reference.approx_eq(&r.out, 1e-3, 1e-5),
            // integers: exact
            crate::precision::Precision::I64 | crate::precision::Precision::I32 => {
                reference.approx_eq(&r.out, 0.0, 0.0)
            }
        })
        .collect();
    let base = rows[0].time;
    let t_interp = rows
        .iter()
        .find(|r| r.engine == BenchEngine::Interp)
        .map(|r| r.time);
    let threads = a.jit.thread_count();

    if a.json {
        let rs: Vec<_> = rows
            .iter()
            .zip(&agrees)
            .map(|(r, ok)| {
                serde_json::json!({
                    "engine": r.engine.label(),
                    "median_ms": r.time * 1e3,
                    "speedup_vs_interp": t_interp.map(|ti| ti / r.time),
                    "speedup_vs_first": base / r.time,
                    "gflops": r.flops / r.time / 1e9,
                    "compile_ms": r.compile.map(|c| c.0 * 1e3),
                    "first_call_ms": r.compile.map(|c| c.1 * 1e3),
                    "agrees": ok,
                })
            })
            .collect();
        outln!(
            "{}",
            serde_json::json!({
                "function": f.name,
                "sizes": sizes,
                "reps": a.reps,
                "threads": threads,
                "dtype": a.jit.precision.to_string(),
                "gemm": a.jit.gemm,
                "optimize_ms": opt_ms,
                "flops": fl,
                "engines": rs,
                "notes": notes,
                "stages": stages,
            })
        )?;
    } else {
        outln!(
            "{} with {:?}, {} runs each (median), {threads} thread{}{}{}",
            f.name,
            sizes,
            a.reps,
            if threads == 1 { "" } else { "s" },
            if a.jit.gemm { "" } else { ", no GEMM stages" },
            opt_ms
                .map(|m| format!(", optimised in {m:.1} ms"))
                .unwrap_or_default()
        )?;
        let vs = format!("vs {}", rows[0].engine.label());
        outln!(
            "{:<18} {:>12} {:>22} {:>10} {:>7}",
            "engine",
            "median ms",
            vs,
            "GFLOP/s",
            "agrees"
        )?;
        for (r, ok) in rows.iter().zip(&agrees) {
            outln!(
                "{:<18} {:>12.4} {:>21.1}x {:>10.3} {:>7}",
                r.engine.label(),
                r.time * 1e3,
                base / r.time,
                r.flops / r.time / 1e9,
                if *ok { "yes" } else { "NO" }
            )?;
        }
        for n in &notes {
            outln!("note: {n}")?;
        }
        for r in &rows {
            if let Some((c, first)) = r.compile {
                outln!(
                    "{}: compiled in {:.2} ms, first call {:.4} ms",
                    r.engine.label(),
                    c * 1e3,
                    first * 1e3
                )?;
            }
        }
        if let Some(st) = &stages {
            outln!("stages (optimised): {}", st.join(", "))?;
        }
    }
    if agrees.iter().any(|ok| !ok) {
        return Err("error: an engine disagrees with the reference".into());
    }
    Ok(())
}
