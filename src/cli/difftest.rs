//! `einsat difftest`: random well-typed programs through the interpreter,
//! the optimiser + interpreter and the optimiser + JIT
//! ([`crate::testing::difftest`]), with a progress bar, a summary line, and a
//! shrunk reproducer (`.tl` program plus `.npy` inputs) per disagreement.

use super::common::CliResult;
use super::optcmd::rule_set;
use crate::interp::random::ValueClass;
use crate::precision::Precision;
use crate::syntax::print_function;
use crate::testing::difftest::{run, write_reproducer, DiffConfig};
use crate::testing::GenConfig;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::time::Duration;

/// Options of `einsat difftest`.
#[derive(clap::Args, Debug)]
pub struct DiffArgs {
    /// Random programs to check.
    #[arg(long, default_value_t = 1000)]
    pub cases: u64,
    /// Seed of the run: case k is drawn from (seed, k).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Program features: a comma list of all, none, NAME or -NAME, e.g.
    /// "all,-eps" or "lets,affine" (names: pairs, lets, brackets, eps,
    /// funcs, affine, named, pair-params, tuples, records, reductions,
    /// values, folds, gathers).
    #[arg(long, default_value = "all")]
    pub features: String,
    /// Maximum expression depth of the random programs (at most 8).
    #[arg(long, default_value_t = 4)]
    pub depth: u32,
    /// Use the `*.rules` files of this folder instead of the built-in rules.
    #[arg(long)]
    pub rules: Option<PathBuf>,
    /// Load the `--rules` files without checking each rule's soundness on
    /// random instances first (to difftest a rule set the check refuses).
    #[arg(long)]
    pub no_rule_check: bool,
    /// Named sizes of the inputs are drawn from 1..=MAX.
    #[arg(long, default_value_t = 4)]
    pub max_size: usize,
    /// Relative tolerance of the comparison in the fast mode (default 1e-6;
    /// 1e-3 with --dtype f32).
    #[arg(long)]
    pub rtol: Option<f64>,
    /// The precision every engine computes in: f64 (default) or f32
    /// (inputs rounded to f32, the program optimised and compiled for f32,
    /// results judged by the contract in f32; integer arrays of gathers
    /// passed as f32 too).
    #[arg(long, default_value = "f64")]
    pub dtype: String,
    /// Stop after this many disagreements (each is shrunk and written).
    #[arg(long, default_value_t = 3)]
    pub max_failures: usize,
    /// Folder for the reproducers (one subfolder per disagreement).
    #[arg(long, default_value = "difftest-failures")]
    pub out: PathBuf,
    /// Worker threads (default: the number of cores).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Leave out the JIT leg.
    #[arg(long)]
    pub no_jit: bool,
    /// Draw no sizes 0 (by default some literal ranges are empty and some
    /// named sizes are bound to 0).
    #[arg(long)]
    pub no_zero_sizes: bool,
    /// Threads of the JIT leg (every nest with a `gen` variable is split
    /// across them).
    #[arg(long, default_value_t = 2)]
    pub jit_threads: usize,
    /// The share of cases whose named sizes are drawn up to --large-size
    /// (when the program's work stays small enough for the interpreter).
    #[arg(long, default_value_t = 0.25)]
    pub large_share: f64,
    #[arg(long, default_value_t = 64)]
    pub large_size: usize,
    /// Time limit of one optimisation, in milliseconds.
    #[arg(long, default_value_t = 5000)]
    pub time_limit_ms: u64,
    /// Value classes of the inputs, a comma list of moderate, zeros,
    /// offset, opposed, wide, special (default: all, moderate in 35% of the
    /// cases and each other in 13%). Results must satisfy the floating-point
    /// contract on each (docs/fp-contract.md).
    #[arg(long)]
    pub values: Option<String>,
    /// Optimise in the fast mode (rewrites that cancel terms or assume
    /// finite values); inputs are then moderate values only and results
    /// are compared with --rtol.
    #[arg(long)]
    pub fast_math: bool,
    /// The least work (multiply-adds) of a matrix product inside a larger
    /// expression that the optimiser makes a GEMM stage of its own (0: every
    /// one, so that the small random programs exercise the staging)
    #[arg(long, default_value_t = einsat_default_stage_work())]
    pub gemm_stage_min_work: f64,
}

fn einsat_default_stage_work() -> f64 {
    crate::extract::normal::MIN_GEMM_STAGE_WORK
}

/// Deepest random programs `--depth` may ask for: the generator's programs
/// grow exponentially with depth (depth 8 is already thousands of nodes).
pub const MAX_DEPTH: u32 = 8;

/// `einsat difftest`.
pub fn difftest(a: &DiffArgs) -> CliResult {
    if a.depth > MAX_DEPTH {
        return Err(format!(
            "error: --depth {}: at most {MAX_DEPTH} (random programs grow exponentially with depth)",
            a.depth
        ));
    }
    let precision: Precision = a
        .dtype
        .parse()
        .map_err(|e| format!("error: --dtype: {e}"))?;
    if precision.is_int() {
        return Err(format!(
            "error: --dtype {precision}: difftest runs f64 or f32 (integer programs are checked by tests/suite/ints.rs)"
        ));
    }
    let f32 = precision == Precision::F32;
    let rtol = a.rtol.unwrap_or(if f32 { 1e-3 } else { 1e-6 });
    if !rtol.is_finite() || rtol < 0.0 {
        return Err(format!(
            "error: --rtol {rtol}: the tolerance must be a finite number ≥ 0"
        ));
    }
    let jit_threads = super::common::threads_flag("--jit-threads", a.jit_threads)?;
    if let Some(j) = a.jobs {
        super::common::threads_flag("--jobs", j)?;
    }
    let gen = GenConfig {
        max_depth: a.depth,
        zero_sizes: !a.no_zero_sizes,
        ..GenConfig::default()
    }
    .with_features(&a.features)
    .map_err(|e| format!("error: --features: {e}"))?;
    let mut cfg = DiffConfig {
        gen,
        precision,
        max_size: a.max_size.max(1),
        jit: !a.no_jit,
        jit_threads: jit_threads.max(1),
        large_share: a.large_share.clamp(0.0, 1.0),
        large_size: a.large_size.max(1),
        ..DiffConfig::default()
    };
    cfg.tol.rel = rtol;
    if f32 {
        cfg.tol.abs = 1e-5;
    }
    cfg.opt.time_limit = Duration::from_millis(a.time_limit_ms.max(1));
    cfg.opt.fast_math = a.fast_math;
    if a.gemm_stage_min_work.is_nan() || a.gemm_stage_min_work < 0.0 {
        return Err(format!(
            "error: --gemm-stage-min-work {}: a number of multiply-adds ≥ 0",
            a.gemm_stage_min_work
        ));
    }
    cfg.opt.gemm_stage_min_work = a.gemm_stage_min_work;
    if let Some(v) = &a.values {
        cfg.values = v
            .split(',')
            .map(|w| {
                ValueClass::parse(w.trim()).map(|c| (c, 1)).ok_or_else(|| {
                    format!(
                        "error: --values: unknown value class `{w}` (classes: {})",
                        ValueClass::ALL.map(|c| c.name()).join(", ")
                    )
                })
            })
            .collect::<Result<_, _>>()?;
    }
    if a.rules.is_some() {
        cfg.opt.rules = Some(rule_set(a.rules.as_deref(), !a.no_rule_check)?);
    }
    let jobs = a.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    let bar = ProgressBar::new(a.cases);
    bar.set_style(
        ProgressStyle::with_template(
            "{elapsed_precise} [{bar:40}] {pos}/{len} cases, {msg} ({eta} left)",
        )
        .map_err(|e| format!("error: {e}"))?
        .progress_chars("=> "),
    );
    bar.set_message("0 disagreements");
    // Panics are caught and reported as disagreements; keep their default
    // messages off the terminal while the run lasts.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let summary = run(&cfg, a.seed, a.cases, jobs, a.max_failures, &|done, bad| {
        bar.set_position(done);
        if bad > 0 {
            bar.set_message(format!("{bad} disagreements"));
        }
    });
    std::panic::set_hook(hook);
    bar.finish_and_clear();
    let skipped: Vec<String> = summary
        .jit_skipped
        .iter()
        .map(|(why, k)| format!("{k}: {why}"))
        .collect();
    outln!(
        "difftest: {} cases ({} also through the JIT, {} skipped{}), {} disagreements, seed {}, {:.1} s",
        summary.cases,
        summary.jit_cases,
        summary.jit_skipped.values().sum::<u64>(),
        if skipped.is_empty() {
            String::new()
        } else {
            format!(" — {}", skipped.join(", "))
        },
        summary.disagreeing,
        a.seed,
        summary.seconds
    )?;
    let classes: Vec<String> = summary
        .classes
        .iter()
        .map(|(c, k)| format!("{c} {k}"))
        .collect();
    if f32 {
        outln!("  dtype f32")?;
    }
    outln!("  mode {}; inputs: {}", cfg.opt.mode(), classes.join(", "))?;
    // The reproducer's commands use the same rules as the run.
    let mut run_opts: Vec<String> = match &a.rules {
        Some(r) => vec![
            "--rules".into(),
            std::fs::canonicalize(r)
                .unwrap_or_else(|_| r.clone())
                .display()
                .to_string(),
        ],
        None => vec![],
    };
    if a.rules.is_some() && a.no_rule_check {
        run_opts.push("--no-rule-check".into());
    }
    if f32 {
        run_opts.extend(["--dtype".to_string(), "f32".to_string()]);
    }
    for d in &summary.disagreements {
        let dir = a.out.join(format!("case-{}", d.index));
        let words =
            write_reproducer(&d.shrunk, &d.failure, &dir, &run_opts).map_err(|e| format!("{e}"))?;
        outln!(
            "\ncase {} (seed {:#x}): {}",
            d.index,
            d.seed,
            d.failure.headline()
        )?;
        for line in d.failure.message.lines() {
            outln!("  {line}")?;
        }
        outln!(
            "shrunk from {} to {} nodes:",
            d.original.function.body.size(),
            d.shrunk.function.body.size()
        )?;
        out!("{}", print_function(&d.shrunk.function))?;
        outln!()?;
        if let Some(g) = &d.failure.optimized {
            outln!("optimised to:")?;
            out!("{}", print_function(g))?;
            outln!()?;
        }
        let args: String = words.iter().map(|w| format!(" {w}")).collect();
        outln!("reproducer: {}", dir.join("repro.tl").display())?;
        outln!(
            "  cd {} && einsat run repro.tl --no-opt --engine interp{args}",
            dir.display()
        )?;
        outln!(
            "  cd {} && einsat run repro.tl --engine jit --threads {} --parallel-threshold 0{args}",
            dir.display(),
            cfg.jit_threads
        )?;
    }
    if summary.disagreeing > 0 {
        Err(format!(
            "error: {} of {} cases disagree",
            summary.disagreeing, summary.cases
        ))
    } else {
        Ok(())
    }
}
