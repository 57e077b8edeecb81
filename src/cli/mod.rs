//! The `einsat` command line: `check`, `run`, `opt`, `bench`, `difftest`, `rules check`,
//! `einsum` and `demo`.
//! Every user error is printed as `error: …` (with file:line:col for source
//! errors) and exits with status 1; nothing user-caused panics. Output goes
//! through `out!`/`outln!`, so a failed write to stdout (a full disk,
//! an I/O error) is an error too; a closed pipe ends the process quietly
//! (`src/main.rs` restores SIGPIPE's default action).
//!
//! Unstable internal: the `einsat` command line (feature `cli`).

/// `print!` to stdout, returning the write's result as a `CliResult`
/// (`println!` panics on a failed write).
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::common::write_stdout(format_args!($($arg)*))
    };
}

/// `println!` to stdout, returning the write's result as a `CliResult`.
macro_rules! outln {
    () => {
        $crate::cli::common::write_stdout(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::cli::common::write_stdout(format_args!("{}\n", format_args!($($arg)*)))
    };
}

pub mod bench;
pub mod common;
pub mod difftest;
pub mod io;
pub mod optcmd;

use crate::error::Error;
use crate::interp::{self, Value};
use crate::opt::optimize;
use crate::syntax::{self, print_function};
use crate::testing::random_inputs;
use crate::types;
use clap::{Parser, Subcommand, ValueEnum};
use common::{
    load_file, parse_sizes, pick, read_source, render, stdout_error, threads_flag, CliResult,
    Spinner,
};
use rand::SeedableRng;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Parser, Debug)]
#[command(
    name = "einsat",
    version,
    about = "Tensor programs in index notation, optimised by equality saturation"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq)]
enum Engine {
    /// The reference interpreter.
    Interp,
    /// Native code from the Cranelift JIT (needs normal form).
    Jit,
}

#[derive(Subcommand, Debug)]
enum RulesCmd {
    /// Check every rule for soundness on random well-typed instances.
    Check {
        /// Use the `*.rules` files of this folder (default: built-in rules).
        #[arg(long)]
        rules: Option<PathBuf>,
        /// Random instances per rule.
        #[arg(long, default_value_t = 300)]
        cases: usize,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Type-check a file: print every function's signature, or every error.
    Check { file: PathBuf },
    /// Run one function of a file on arguments.
    Run {
        file: PathBuf,
        /// The function to run (may be left out when the file holds one).
        #[arg(long = "fn")]
        func: Option<String>,
        /// NAME=PATH.npy or NAME=NUMBER; NAME.0=… for pair components.
        #[arg(long = "arg")]
        args: Vec<String>,
        /// The engine (default: the best available).
        #[arg(long, value_enum)]
        engine: Option<Engine>,
        /// Write the result to this .npy file instead of printing it.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Print `{"output": …}` as JSON.
        #[arg(long)]
        json: bool,
        /// Run the program as written, without optimising it first.
        #[arg(long)]
        no_opt: bool,
        /// Threads the JIT may use (0: all cores).
        #[arg(long, default_value_t = 0)]
        threads: usize,
        /// The estimated work from which the JIT splits a nest across
        /// threads (default: the built-in threshold).
        #[arg(long)]
        parallel_threshold: Option<u64>,
        /// The precision to compute in: f64 (default) or f32 (arguments
        /// rounded to f32, every operation in f32; the result's numbers
        /// are f32 values, printed or written as float32 .npy), or i64,
        /// i32 for integral programs (arguments must be integers; `+ - *`
        /// and sums wrap in the width; the result printed as numbers,
        /// exact below 2^53).
        #[arg(long, default_value = "f64")]
        dtype: String,
        #[command(flatten)]
        opt: optcmd::OptArgs,
    },
    /// Optimise functions by equality saturation and print the result
    /// (surface syntax that parses back), its cost and e-graph statistics.
    Opt {
        file: PathBuf,
        /// Only this function (default: all).
        #[arg(long = "fn")]
        func: Option<String>,
        #[command(flatten)]
        opt: optcmd::OptArgs,
        /// Print JSON: {"functions": [{"name", "input", "output", …}]}.
        #[arg(long)]
        json: bool,
        /// List the chain of rewrites from input to output.
        #[arg(long)]
        explain: bool,
    },
    /// Time the interpreter and the JIT (on the program as written when it
    /// is in normal form, and on the optimised program) on random inputs.
    Bench {
        file: PathBuf,
        #[arg(long = "fn")]
        func: Option<String>,
        /// Value of a named size, e.g. --size n=256 (default 64).
        #[arg(long = "size")]
        sizes: Vec<String>,
        /// Timed runs per engine (the median is reported).
        #[arg(long, default_value_t = 11)]
        reps: usize,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Print JSON: function, sizes, reps, threads, flops, and per
        /// engine median_ms, speedup_vs_interp, speedup_vs_first, gflops,
        /// agrees.
        #[arg(long)]
        json: bool,
        /// The engines to time, in order (ratios are against the first):
        /// any of interp, jit, jit-noopt, comma-separated.
        #[arg(long, default_value = "interp,jit-noopt,jit")]
        engines: String,
        /// Threads the JIT may use (0: all cores).
        #[arg(long, default_value_t = 0)]
        threads: usize,
        /// Run matrix products as generated loops, not GEMM stages.
        #[arg(long)]
        no_gemm: bool,
        /// The estimated work from which the JIT splits a nest across
        /// threads (default: the built-in threshold).
        #[arg(long)]
        parallel_threshold: Option<u64>,
        /// The bytes of rows a block of a row group touches (default: the
        /// built-in budget; 0 runs every nest over all its rows before
        /// the next).
        #[arg(long)]
        row_block_bytes: Option<usize>,
        /// The precision to compute in: f64 (default), f32, or i64, i32
        /// for integral programs.
        #[arg(long, default_value = "f64")]
        dtype: String,
    },
    /// Differential testing: random well-typed programs through the
    /// interpreter, the optimiser + interpreter and the optimiser + JIT;
    /// exit 1 with a shrunk reproducer on any disagreement.
    Difftest(difftest::DiffArgs),
    /// Rewrite rules.
    Rules {
        #[command(subcommand)]
        cmd: RulesCmd,
    },
    /// Print the program of an einsum string (numpy grammar).
    Einsum {
        spec: String,
        /// Batched: outputs separated by `;`, operands by `,`, arrays in one
        /// operand by `*`, e.g. "A,x;B,x".
        #[arg(long)]
        batch: Option<String>,
        /// The operands' ranks, e.g. --ranks 3,2: needed by a spec with
        /// `...` (numpy's broadcast axes), which names the axes each
        /// operand has beyond its letters.
        #[arg(long, value_delimiter = ',')]
        ranks: Option<Vec<usize>>,
    },
    /// The main job on the bundled examples: check and run every function.
    Demo {
        /// Folder of .tl files (default: the bundled examples/).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Value of a named size, e.g. --size n=16 (default 8).
        #[arg(long = "size")]
        sizes: Vec<String>,
        /// Random seed for the inputs.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

/// Run the CLI on `std::env::args`; returns the exit status.
pub fn main() -> i32 {
    use std::io::Write;
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            if e.use_stderr() {
                let _ = e.print();
                return 2;
            }
            // --help, --version: stdout
            return match e.print().and_then(|()| std::io::stdout().flush()) {
                Ok(()) => 0,
                Err(w) => {
                    let _ = writeln!(std::io::stderr(), "{}", stdout_error(w));
                    1
                }
            };
        }
    };
    let done = dispatch(cli.cmd).and_then(|()| std::io::stdout().flush().map_err(stdout_error));
    match done {
        Ok(()) => 0,
        Err(msg) => {
            // (a failed write to stderr has nowhere to be reported)
            let _ = writeln!(std::io::stderr(), "{msg}");
            1
        }
    }
}

fn dispatch(cmd: Cmd) -> CliResult {
    let err = |e: Error| format!("error: {e}");
    match cmd {
        Cmd::Check { file } => {
            let src = read_source(&file)?;
            let parsed = types::parse_and_check(&src).map_err(|e| render(e, &file, &src))?;
            let sigs =
                types::check_parsed(&parsed).map_err(|d| render(Error::types(d), &file, &src))?;
            for s in sigs {
                outln!("{s}")?;
            }
            Ok(())
        }
        Cmd::Run {
            file,
            func,
            args,
            engine,
            out,
            json,
            no_opt,
            threads,
            parallel_threshold,
            dtype,
            opt,
        } => {
            let threads = threads_flag("--threads", threads)?;
            let precision = dtype_flag(&dtype)?;
            let (text, parsed) = load_file(&file)?;
            let f = pick(&parsed.program, func.as_deref())?;
            // an integer format: the integrality check, at source positions
            let k = parsed
                .program
                .functions
                .iter()
                .position(|g| std::ptr::eq(g, f));
            if let Err(d) = types::integral(f, k.and_then(|k| parsed.spans.get(k)), precision) {
                return Err(common::render(Error::types(d), &file, &text));
            }
            let named = io::parse_args(&args).map_err(err)?;
            let args = interp::order_named(f, named).map_err(err)?;
            let program = if no_opt {
                // (the flags are checked all the same)
                parse_sizes(&opt.sizes, &[f], "the file")?;
                f.clone()
            } else {
                // The cost model uses the actual sizes unless told otherwise.
                let mut o = opt.options(&[f], "the file")?;
                o.precision = precision;
                for (k, v) in interp::bind(f, &args).map_err(err)? {
                    o.sizes.entry(k).or_insert(v);
                }
                let _busy = Spinner::new(format!("optimising `{}`", f.name));
                optimize(f, &o).map_err(err)?.program
            };
            // The JIT by default, when the program is in normal form.
            let engine = engine.unwrap_or(if crate::extract::is_normal(&program) {
                Engine::Jit
            } else {
                Engine::Interp
            });
            let result = match engine {
                Engine::Interp => interp::run_with(&program, &args, precision),
                Engine::Jit => crate::jit::compile_with(
                    &program,
                    &crate::jit::Options {
                        threads,
                        parallel_threshold: parallel_threshold
                            .unwrap_or(crate::jit::PARALLEL_THRESHOLD),
                        precision,
                        ..crate::jit::Options::default()
                    },
                )
                .and_then(|k| match precision {
                    crate::precision::Precision::F64 => k.call(&args),
                    crate::precision::Precision::F32 => {
                        // integer arrays: refused before rounding beyond 2^24
                        interp::gather::check_values(&program, &args, precision)?;
                        let a32: Vec<crate::jit::Value32> =
                            args.iter().map(crate::jit::Value32::rounded).collect();
                        let refs: Vec<crate::jit::Arg32<'_>> =
                            a32.iter().map(crate::jit::Value32::as_arg).collect();
                        k.call_f32(&refs).map(|r| r.to_value())
                    }
                    crate::precision::Precision::I64 => call_int::<i64>(&k, &args),
                    crate::precision::Precision::I32 => call_int::<i32>(&k, &args),
                }),
            }
            .map_err(err)?;
            emit(&result, out.as_deref(), json, precision)
        }
        Cmd::Opt {
            file,
            func,
            opt,
            json,
            explain,
        } => optcmd::opt(&file, func.as_deref(), &opt, json, explain),
        Cmd::Bench {
            file,
            func,
            sizes,
            reps,
            seed,
            json,
            engines,
            threads,
            no_gemm,
            parallel_threshold,
            row_block_bytes,
            dtype,
        } => {
            let threads = threads_flag("--threads", threads)?;
            let precision = dtype_flag(&dtype)?;
            let (text, parsed) = load_file(&file)?;
            let f = pick(&parsed.program, func.as_deref())?;
            // an integer format: the integrality check, at source positions
            let k = parsed
                .program
                .functions
                .iter()
                .position(|g| std::ptr::eq(g, f));
            if let Err(d) = types::integral(f, k.and_then(|k| parsed.spans.get(k)), precision) {
                return Err(common::render(Error::types(d), &file, &text));
            }
            let jit = crate::jit::Options {
                threads,
                gemm: !no_gemm,
                precision,
                ..crate::jit::Options::default()
            };
            let jit = crate::jit::Options {
                parallel_threshold: parallel_threshold.unwrap_or(jit.parallel_threshold),
                row_block_bytes: row_block_bytes.unwrap_or(jit.row_block_bytes),
                ..jit
            };
            bench::bench(
                f,
                &bench::BenchArgs {
                    sizes: parse_sizes(&sizes, &[f], "the file")?,
                    reps: reps.max(1),
                    seed,
                    json,
                    engines: bench::BenchEngine::parse_list(&engines)?,
                    jit,
                },
            )
        }
        Cmd::Difftest(a) => difftest::difftest(&a),
        Cmd::Rules {
            cmd:
                RulesCmd::Check {
                    rules,
                    cases,
                    seed,
                    json,
                },
        } => optcmd::rules_check(rules.as_deref(), cases, seed, json),
        Cmd::Einsum { spec, batch, ranks } => {
            use crate::frontend::einsum::{
                einsum, einsum_batched, einsum_ranked, parse_batch_args,
            };
            let f = match (batch, ranks) {
                (Some(_), Some(_)) => {
                    return Err("error: --ranks applies to one einsum, not to --batch".into())
                }
                (None, None) => einsum(&spec),
                (None, Some(r)) => einsum_ranked(&spec, &r),
                (Some(b), None) => parse_batch_args(&b).and_then(|a| einsum_batched(&spec, &a)),
            }
            .map_err(err)?;
            out!("{}", print_function(&f))?;
            Ok(())
        }
        Cmd::Demo { dir, sizes, seed } => demo(dir, &sizes, seed),
    }
}

/// Print or write a result of a run in `precision` (its numbers in that
/// format's shortest text; `.npy` files of that element type).
fn emit(
    v: &Value,
    out: Option<&Path>,
    json: bool,
    precision: crate::precision::Precision,
) -> CliResult {
    if let Some(p) = out {
        return io::write_value_in(p, v, precision).map_err(|e| format!("error: {e}"));
    }
    if json {
        // written as it goes: the JSON tree of a large result would take
        // several times its memory
        use std::io::Write as _;
        let mut w = std::io::BufWriter::new(std::io::stdout().lock());
        let mut put = || -> std::io::Result<()> {
            w.write_all(b"{\"output\":")?;
            v.write_json_in(&mut w, precision)?;
            w.write_all(b"}\n")?;
            w.flush()
        };
        put().map_err(stdout_error)?;
    } else {
        outln!("{}", v.display_in(precision))?;
    }
    Ok(())
}

fn examples_dir() -> PathBuf {
    let local = PathBuf::from("examples");
    if local.is_dir() {
        local
    } else {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
    }
}

/// `v` with every number `x` made the integer `round(1000 x)` (the
/// demo's arguments of integer files).
fn integers(v: &Value) -> Value {
    match v {
        Value::Real(x) => Value::Real((x * 1000.0).round()),
        Value::Array(a) => Value::Array(a.mapv(|x| (x * 1000.0).round())),
        Value::Pair(a, b) => Value::pair(integers(a), integers(b)),
    }
}

/// Call an integer kernel on `f64` arguments holding integers (each must
/// be an integer of the width, below 2^53 in magnitude); the result as
/// `f64`s, refused beyond 2^53 (where they would be rounded).
fn call_int<T: crate::precision::IntElem>(
    k: &crate::jit::Kernel,
    args: &[Value],
) -> crate::error::Result<Value> {
    let ints = args
        .iter()
        .map(crate::interp::IntValue::<T>::from_value)
        .collect::<crate::error::Result<Vec<_>>>()?;
    let refs: Vec<crate::jit::IntArg<'_, T>> = ints.iter().map(|v| v.as_arg()).collect();
    k.call_int(&refs)?.to_value_exact()
}

/// `--dtype`: `f64`, `f32`, `i64` or `i32` (also `float64`, `float32`,
/// `int64`, `int32`).
fn dtype_flag(s: &str) -> Result<crate::precision::Precision, String> {
    s.parse().map_err(|e| format!("error: --dtype: {e}"))
}

/// The precision a demo file asks for: `f32` (or `i64`, ...) when a
/// comment line says `dtype: f32` (before the first function), else `f64`.
fn file_dtype(text: &str) -> crate::precision::Precision {
    text.lines()
        .take_while(|l| !l.trim_start().starts_with("fn "))
        .filter_map(|l| l.trim_start().strip_prefix('#'))
        .find_map(|c| c.trim().strip_prefix("dtype:"))
        .and_then(|d| d.trim().parse().ok())
        .unwrap_or_default()
}

/// The size `einsat demo` gives every named size not set by `--size`.
const DEMO_SIZE: usize = 8;

fn demo(dir: Option<PathBuf>, size_flags: &[String], seed: u64) -> CliResult {
    let dir = dir.unwrap_or_else(examples_dir);
    // the folder's `.tl` files and those of its subfolders (the examples by
    // field), by path
    let list = |d: &Path| -> std::result::Result<Vec<PathBuf>, String> {
        Ok(std::fs::read_dir(d)
            .map_err(|e| format!("error: {}: {e}", crate::diag::quote_path(d)))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .collect())
    };
    let mut files = Vec::new();
    for p in list(&dir)? {
        if p.is_dir() {
            files.extend(
                list(&p)?
                    .into_iter()
                    .filter(|q| q.extension().is_some_and(|x| x == "tl")),
            );
        } else if p.extension().is_some_and(|x| x == "tl") {
            files.push(p);
        }
    }
    files.sort();
    let loaded: Vec<(PathBuf, std::result::Result<syntax::Parsed, String>)> = files
        .into_iter()
        .map(|f| {
            let l = load_file(&f).map(|(_, p)| p);
            (f, l)
        })
        .collect();
    let all: Vec<&syntax::Function> = loaded
        .iter()
        .filter_map(|(_, l)| l.as_ref().ok())
        .flat_map(|p| &p.program.functions)
        .collect();
    let sizes = parse_sizes(size_flags, &all, &format!("the files of {}", dir.display()))?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let started = Instant::now();
    outln!(
        "Every function of {} checked, run by the interpreter on random inputs (every size {} unless --size says otherwise), optimised, and JIT-compiled:",
        crate::diag::quote_path(&dir),
        DEMO_SIZE
    )?;
    outln!("  interp ms: the interpreter's time; cost, opt cost: the cost model's work before and after optimisation; opt ms: time to optimise;")?;
    outln!("  agree: the optimised program gives the written one's value; jit x: the JIT's speed-up over the interpreter; jit=: the JIT agrees too")?;
    outln!()?;
    outln!(
        "{:<18} {:<13} {:<40} {:>9} {:>11} {:>11} {:>7} {:>5} {:>9} {:>5}  result (sum of elements)",
        "file", "function", "signature", "interp ms", "cost", "opt cost", "opt ms", "agree", "jit x", "jit="
    )?;
    let mut failures = 0;
    let mut functions = 0;
    let mut failed_functions = 0;
    for (file, parsed) in &loaded {
        let parsed = match parsed {
            Ok(x) => x,
            Err(e) => {
                outln!("{e}")?;
                failures += 1;
                continue;
            }
        };
        let fname = file
            .strip_prefix(&dir)
            .unwrap_or(file)
            .to_string_lossy()
            .to_string();
        // a file whose comments say `dtype: f32` runs in f32 throughout
        let precision = std::fs::read_to_string(file)
            .map(|t| file_dtype(&t))
            .unwrap_or_default();
        let f32 = precision == crate::precision::Precision::F32;
        let int = precision.is_int();
        // (f32: sums in another order differ by a few f32 ulps per term;
        // integers: exact)
        let (rtol, atol) = if f32 {
            (1e-3, 1e-5)
        } else if int {
            (0.0, 0.0)
        } else {
            (1e-9, 1e-9)
        };
        for f in &parsed.program.functions {
            functions += 1;
            let failures_before = failures;
            let sig = types::check(f).map_err(|d| format!("{d:?}"))?;
            let mut all = BTreeMap::new();
            for n in f.size_names() {
                all.insert(n.clone(), sizes.get(&n).copied().unwrap_or(DEMO_SIZE));
            }
            let args = random_inputs(f, &all, &mut rng).map_err(|e| format!("error: {e}"))?;
            // an integer file: integers in [-2000, 2000]
            let args: Vec<Value> = if int {
                args.iter().map(integers).collect()
            } else {
                args
            };
            let t = Instant::now();
            let r = interp::run_with(f, &args, precision);
            let ms = t.elapsed().as_secs_f64() * 1e3;
            let sigs = sig.to_string();
            let sigs = sigs.strip_prefix("fn ").unwrap_or(&sigs);
            let sigs = sigs.strip_prefix(f.name.as_str()).unwrap_or(sigs);
            let opts = crate::opt::Options {
                sizes: all.clone(),
                precision,
                ..Default::default()
            };
            let busy = Spinner::new(format!("{fname}: `{}`", f.name));
            let o = optimize(f, &opts).map_err(|e| format!("error: {e}"))?;
            let agree = match (&r, interp::run_with(&o.program, &args, precision)) {
                (Ok(a), Ok(b)) => a.approx_eq(&b, rtol, atol),
                _ => false,
            };
            if !agree {
                failures += 1;
            }
            // The JIT on the optimised program (always in normal form;
            // tensors of pairs are carried as struct of arrays), warm,
            // against the interpreter's time.
            let jit = if crate::extract::is_normal(&o.program) {
                let jopts = crate::jit::Options {
                    precision,
                    ..Default::default()
                };
                let k = crate::jit::compile_with(&o.program, &jopts)
                    .map_err(|e| format!("error: {e}"))?;
                let a32: Vec<crate::jit::Value32> = if f32 {
                    args.iter().map(crate::jit::Value32::rounded).collect()
                } else {
                    Vec::new()
                };
                let refs: Vec<crate::jit::Arg32<'_>> =
                    a32.iter().map(crate::jit::Value32::as_arg).collect();
                let call = || match precision {
                    crate::precision::Precision::F32 => k.call_f32(&refs).map(|v| v.to_value()),
                    crate::precision::Precision::I64 => call_int::<i64>(&k, &args),
                    crate::precision::Precision::I32 => call_int::<i32>(&k, &args),
                    crate::precision::Precision::F64 => k.call(&args),
                };
                let _ = call();
                let t = Instant::now();
                let v = call();
                let jms = t.elapsed().as_secs_f64() * 1e3;
                let ok = match (&r, &v) {
                    (Ok(a), Ok(b)) => a.approx_eq(b, rtol, atol),
                    _ => false,
                };
                if !ok {
                    failures += 1;
                }
                (
                    format!("{:.1}x", ms / jms.max(1e-6)),
                    if ok { "yes" } else { "NO" },
                )
            } else {
                ("-".to_string(), "-")
            };
            drop(busy);
            match r {
                Ok(v) => outln!(
                    "{:<18} {:<13} {:<40} {:>9.3} {:>11} {:>11} {:>7.1} {:>5} {:>9} {:>5}  {}{}",
                    fname,
                    f.name,
                    sigs,
                    ms,
                    o.cost_before,
                    o.cost_after,
                    o.report.total_seconds * 1e3,
                    if agree { "yes" } else { "NO" },
                    jit.0,
                    jit.1,
                    summary(&v),
                    match precision {
                        crate::precision::Precision::F64 => String::new(),
                        p => format!(" ({p})"),
                    }
                )?,
                Err(e) => {
                    failures += 1;
                    outln!("{fname:<16} {:<14} error: {e}", f.name)?
                }
            }
            if failures > failures_before {
                failed_functions += 1;
            }
        }
    }
    let broken_files = loaded.iter().filter(|(_, p)| p.is_err()).count();
    outln!()?;
    outln!(
        "demo: {functions} functions in {} files: {} passed, {failed_functions} failed{}; {:.1} s",
        loaded.len(),
        functions - failed_functions,
        if broken_files > 0 {
            format!(", {broken_files} files did not load")
        } else {
            String::new()
        },
        started.elapsed().as_secs_f64()
    )?;
    if failures > 0 {
        return Err(format!("error: {failures} example(s) failed"));
    }
    Ok(())
}

fn summary(v: &Value) -> String {
    match v {
        Value::Real(x) => format!("{x:.6}"),
        Value::Array(a) => format!("{:.6} over shape {:?}", a.sum(), a.shape()),
        Value::Pair(a, b) => format!("({}, {})", summary(a), summary(b)),
    }
}
