//! Differential testing: one function and its inputs through three engines —
//! the reference interpreter, the optimiser followed by the interpreter, and
//! the optimiser followed by the JIT — and the first disagreement, shrunk to
//! a small program and simple inputs, written out as a reproducer that
//! `einsat run` accepts. `einsat difftest` is the command-line front end;
//! rule authors and compiler testers can call [`check`], [`run`] and
//! [`shrink_case`] directly.
//!
//! **The floating-point contract.** Each case draws its inputs from one
//! [`ValueClass`]: moderate values, exact and signed zeros, a large common
//! offset, magnitudes from 1e-300 to 1e300, or values mixed with ±inf and
//! NaN ([`DiffConfig::values`]). In the default (value-safe) mode of the
//! optimiser, every number the optimised program gives, in the interpreter
//! and in the JIT, must be one the contract accepts for the *written*
//! program on those inputs (`docs/fp-contract.md`): the oracle
//! [`crate::interp::shadow`] runs the written program and bounds what a
//! correct optimisation may give — the written value within the rounding
//! error bound of its own terms (so a centred sum rewritten into a
//! difference of large sums is caught), a sum's terms in any order, NaN
//! where a NaN input reaches, non-finite where the written value is
//! non-finite. In the fast mode ([`crate::opt::Options::fast_math`]) only
//! moderate values are drawn and values are compared with a relative
//! tolerance ([`Tolerance`]): `a` and `b` agree when
//! `|a - b| <= rel * max(|a|, |b|) + abs` (default `rel = 1e-6`,
//! `abs = 1e-9`).
//!
//! **What counts as a disagreement.** A value outside the tolerance, an error
//! from any engine on a well-typed program with fitting inputs, an optimised
//! program that does not type-check with the original signature, a program
//! the JIT refuses, and a panic anywhere. The JIT leg runs on every case
//! (a result or `let` holding tensors of pairs is carried as struct of
//! arrays) unless it is turned off ([`DiffConfig::jit`]); the cases it ran
//! on are counted ([`Summary::jit_cases`]).
//!
//! **Float32.** With [`DiffConfig::precision`] `F32` every engine computes
//! in `f32` (inputs rounded to it, the optimiser's folds judged in it, the
//! JIT called through [`jit::Kernel::call_f32`]) and the contract judges in
//! `f32` ([`contract_judge_in`]); `einsat difftest --dtype f32`.

use super::{gen_function, relayout_value, shrink, GenConfig, Layout};
use crate::error::Result;
use crate::interp::random::{random_inputs_of, ValueClass};
use crate::interp::shadow::{Sh, Shadow};
use crate::interp::{self, Boundary, Sizes, Value};
use crate::opt::{optimize, Options};
use crate::precision::Precision;
use crate::syntax::ast::*;
use crate::{jit, types};
use ndarray::{ArrayD, Axis, ShapeBuilder, Slice};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How close two results must be to agree.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// Relative tolerance.
    pub rel: f64,
    /// Absolute tolerance (for values near 0).
    pub abs: f64,
}

impl Default for Tolerance {
    fn default() -> Self {
        Tolerance {
            rel: 1e-6,
            abs: 1e-9,
        }
    }
}

impl Tolerance {
    /// Do `a` and `b` agree (same structure and shapes, every number within
    /// the tolerance; NaN only with NaN, an infinity only with itself)?
    pub fn agree(&self, a: &Value, b: &Value) -> bool {
        a.approx_eq(b, self.rel, self.abs)
    }
}

/// The engine that disagreed with the reference interpreter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Stage {
    /// The reference interpreter itself failed.
    Interp,
    /// The optimiser failed or changed the signature.
    Optimizer,
    /// The optimised program, in the interpreter.
    OptInterp,
    /// The optimised program, compiled by the JIT.
    OptJit,
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stage::Interp => "interpreter",
            Stage::Optimizer => "optimiser",
            Stage::OptInterp => "optimiser + interpreter",
            Stage::OptJit => "optimiser + JIT",
        })
    }
}

/// One disagreement: which engine, and what it did.
#[derive(Clone, Debug)]
pub struct Failure {
    /// The stage that disagreed (or failed).
    pub stage: Stage,
    /// Whether the stage gave a value other than the reference's; `false`
    /// when it failed instead (an error, a panic, a changed signature, or
    /// the reference interpreter itself failing).
    pub mismatch: bool,
    /// What happened, in words.
    pub message: String,
    /// The optimised program, when the optimiser got that far.
    pub optimized: Option<Function>,
}

impl Failure {
    /// What happened, in one line: which stage disagreed with or failed
    /// where the reference interpreter ran, or that the reference
    /// interpreter itself failed (then nothing was compared).
    pub fn headline(&self) -> String {
        match (self.stage, self.mismatch) {
            (Stage::Interp, _) => {
                "the reference interpreter itself failed on the case (nothing was compared)".into()
            }
            (stage, true) => format!("the {stage} disagrees with the interpreter"),
            (stage, false) => format!("the {stage} failed where the interpreter ran"),
        }
    }
}

/// A function with inputs: sizes for its named sizes, arguments in
/// parameter order, and the memory layout the JIT receives them in.
#[derive(Clone, Debug)]
pub struct Case {
    /// The function.
    pub function: Function,
    /// Values of its named sizes.
    pub sizes: Sizes,
    /// Its arguments, in parameter order.
    pub args: Vec<Value>,
    /// The memory layout the JIT receives them in.
    pub layout: Layout,
    /// The class the argument values were drawn from.
    pub class: ValueClass,
}

/// The outcome of [`check`].
#[derive(Clone, Debug)]
pub enum Verdict {
    /// All engines agree; `jit` says whether the JIT leg ran.
    Agree {
        /// Whether the JIT leg ran.
        jit: bool,
    },
    /// Some stage disagreed with the interpreter or failed.
    Disagree(Failure),
}

/// Everything a differential run depends on.
#[derive(Clone, Debug)]
pub struct DiffConfig {
    /// Which programs are drawn.
    pub gen: GenConfig,
    /// Optimiser options (rules, limits).
    pub opt: Options,
    /// How close results must be.
    pub tol: Tolerance,
    /// Named sizes are drawn from `1..=max_size`…
    pub max_size: usize,
    /// …except in this share of the cases, where they are drawn from
    /// `1..=large_size` (so that the JIT's parallel splits, register tiles,
    /// vector tails and peeled borders run), as long as the program's
    /// estimated interpreter work ([`work`]) stays within `work_budget`.
    pub large_share: f64,
    /// The upper bound of named sizes in the large cases.
    pub large_size: usize,
    /// The largest estimated interpreter work of a large case.
    pub work_budget: f64,
    /// Threads of the JIT leg; every nest with a `gen` variable is split
    /// across them (parallel threshold 0) when there are more than one.
    pub jit_threads: usize,
    /// Give the JIT its inputs in a random layout (C, Fortran, sliced,
    /// reversed); else C order.
    pub layouts: bool,
    /// Run the JIT leg.
    pub jit: bool,
    /// Accepted shrinking steps, and the time shrinking one case may take.
    pub shrink_steps: usize,
    /// The time shrinking one case may take.
    pub shrink_time: Duration,
    /// The value classes the cases' inputs are drawn from, with weights
    /// (in the fast mode only moderate values are drawn).
    pub values: Vec<(ValueClass, u32)>,
    /// The format every engine computes in ([`Precision::F64`] by
    /// default). In [`Precision::F32`] the inputs are rounded to `f32`
    /// (the wide class's magnitudes scaled into `f32`'s range first), the
    /// program is optimised for `F32` ([`Options::precision`]), run in the
    /// `F32` interpreter, compiled for `F32` and called through
    /// [`jit::Kernel::call_f32`], and judged by the contract in `F32`
    /// ([`contract_judge_in`]); integer arrays (gathers) are passed as
    /// `f32` too, as every other argument.
    pub precision: Precision,
}

/// The default mix of value classes: moderate values in 35% of the cases,
/// each other class in 13%.
pub fn default_values() -> Vec<(ValueClass, u32)> {
    vec![
        (ValueClass::Moderate, 35),
        (ValueClass::Zeros, 13),
        (ValueClass::Offset, 13),
        (ValueClass::Opposed, 13),
        (ValueClass::Wide, 13),
        (ValueClass::Special, 13),
    ]
}

impl Default for DiffConfig {
    fn default() -> Self {
        DiffConfig {
            gen: GenConfig {
                max_depth: 4,
                ..GenConfig::default()
            },
            opt: Options::default(),
            tol: Tolerance::default(),
            max_size: 4,
            large_share: 0.25,
            large_size: 64,
            work_budget: 2e5,
            jit_threads: 2,
            layouts: true,
            jit: true,
            shrink_steps: 300,
            shrink_time: Duration::from_secs(60),
            values: default_values(),
            precision: Precision::F64,
        }
    }
}

/// The seed of case `index` of a run seeded by `seed` (SplitMix64).
pub fn case_seed(seed: u64, index: u64) -> u64 {
    let mut z = seed
        .wrapping_add(index.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Random inputs for `f`: named sizes in `1..=max_size` (or 0, with the
/// default [`GenConfig::zero_named`] chance), values uniform in [-2, 2),
/// and a layout (C unless `layouts`), all drawn from `rng`.
pub fn inputs_for(
    f: &Function,
    max_size: usize,
    layouts: bool,
    rng: &mut impl Rng,
) -> Result<(Sizes, Vec<Value>, Layout)> {
    let g = GenConfig::default();
    let zero = if g.zero_sizes { g.zero_named } else { 0.0 };
    inputs_with_zero(f, max_size, zero, layouts, ValueClass::Moderate, rng)
}

/// [`inputs_for`] where each named size is 0 with chance `zero`, and the
/// values are drawn from `class`.
pub fn inputs_with_zero(
    f: &Function,
    max_size: usize,
    zero: f64,
    layouts: bool,
    class: ValueClass,
    rng: &mut impl Rng,
) -> Result<(Sizes, Vec<Value>, Layout)> {
    let sizes: Sizes = f
        .size_names()
        .into_iter()
        .map(|n| {
            let z = zero > 0.0 && rng.gen_bool(zero.clamp(0.0, 1.0));
            (
                n,
                if z {
                    0
                } else {
                    rng.gen_range(1..=max_size.max(1))
                },
            )
        })
        .collect();
    let args = random_inputs_of(f, &sizes, class, rng)?;
    let layout = if layouts {
        Layout::ALL[rng.gen_range(0..Layout::ALL.len())]
    } else {
        Layout::C
    };
    Ok((sizes, args, layout))
}

/// The work of evaluating `e` once with `sizes`, roughly as the
/// interpreter does it: one per node, loops multiplied out.
pub fn work(e: &Expr, sizes: &Sizes) -> f64 {
    match e {
        Expr::Gen(_, n, b) | Expr::Sum(_, n, b) | Expr::Reduce(_, _, n, b) => {
            let n = match n {
                Size::Lit(k) => *k as f64,
                Size::Named(x) => sizes.get(x).copied().unwrap_or(1) as f64,
            };
            n * (1.0 + work(b, sizes))
        }
        other => {
            1.0 + other
                .children()
                .into_iter()
                .map(|c| work(c, sizes))
                .sum::<f64>()
        }
    }
}

/// The value class of a case (its own random stream, so that the programs
/// and sizes a seed draws do not depend on the mix).
fn draw_class(seed: u64, cfg: &DiffConfig) -> ValueClass {
    let mix: Vec<(ValueClass, u32)> = if cfg.opt.fast_math {
        vec![(ValueClass::Moderate, 1)]
    } else {
        cfg.values.clone()
    };
    let total: u32 = mix.iter().map(|(_, w)| w).sum();
    if total == 0 {
        return ValueClass::Moderate;
    }
    let mut r = StdRng::seed_from_u64(seed ^ 0x7A1E_C1A5_5E5E_D000).gen_range(0..total);
    for (c, w) in mix {
        if r < w {
            return c;
        }
        r -= w;
    }
    ValueClass::Moderate
}

/// The case a run draws for `seed`: a random well-typed function and inputs.
pub fn case_from_seed(seed: u64, cfg: &DiffConfig) -> Result<Case> {
    let function = gen_function(seed, &cfg.gen);
    let class = draw_class(seed, cfg);
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5DEE_CE66_D1CE_5EED);
    // large sizes from a stream of their own, so that the other cases
    // draw what they drew before
    let mut big = StdRng::seed_from_u64(seed ^ 0x0B16_5123_A11C_E5ED);
    let large = (cfg.large_share > 0.0 && big.gen_bool(cfg.large_share.clamp(0.0, 1.0)))
        .then(|| -> Sizes {
            function
                .size_names()
                .into_iter()
                .map(|n| (n, big.gen_range(1..=cfg.large_size.max(1))))
                .collect()
        })
        .filter(|s| !s.is_empty() && work(&function.body, s) <= cfg.work_budget);
    let (sizes, args, layout) = match large {
        Some(sizes) => {
            let args = random_inputs_of(&function, &sizes, class, &mut rng)?;
            let layout = if cfg.layouts {
                Layout::ALL[rng.gen_range(0..Layout::ALL.len())]
            } else {
                Layout::C
            };
            (sizes, args, layout)
        }
        None => {
            let zero = if cfg.gen.zero_sizes {
                cfg.gen.zero_named
            } else {
                0.0
            };
            inputs_with_zero(&function, cfg.max_size, zero, cfg.layouts, class, &mut rng)?
        }
    };
    let args = match cfg.precision {
        Precision::F64 | Precision::I64 | Precision::I32 => args,
        Precision::F32 => args.iter().map(|v| in_f32(v, class)).collect(),
    };
    Ok(Case {
        function,
        sizes,
        args,
        layout,
        class,
    })
}

/// An input drawn for f64, as an `F32` case takes it: the wide class's
/// magnitudes (10^±300) scaled to 10^±36 so that they stay finite and
/// nonzero in `f32`, then every number rounded to `f32`.
fn in_f32(v: &Value, class: ValueClass) -> Value {
    let p = Precision::F32;
    let one = |x: f64| {
        let x = if class == ValueClass::Wide && x.is_finite() && x != 0.0 {
            x.signum() * 10f64.powf(x.abs().log10() * 36.0 / 300.0)
        } else {
            x
        };
        p.round(x)
    };
    match v {
        Value::Real(x) => Value::Real(one(*x)),
        Value::Array(a) => Value::Array(a.mapv(one)),
        Value::Pair(a, b) => Value::pair(in_f32(a, class), in_f32(b, class)),
    }
}

/// A proptest strategy for random inputs of `f` (named sizes in
/// `1..=max_size`, values in [-2, 2), any of the four layouts).
pub fn arb_inputs(
    f: Function,
    max_size: usize,
) -> impl proptest::strategy::Strategy<Value = (Sizes, Vec<Value>, Layout)> {
    use proptest::prelude::*;
    any::<u64>().prop_filter_map("inputs too large", move |seed| {
        inputs_for(&f, max_size, true, &mut StdRng::seed_from_u64(seed)).ok()
    })
}

/// A proptest strategy for whole cases: a random well-typed function drawn
/// with `cfg.gen` and matching inputs (as [`case_from_seed`]).
pub fn arb_case(cfg: DiffConfig) -> impl proptest::strategy::Strategy<Value = Case> {
    use proptest::prelude::*;
    any::<u64>().prop_filter_map("inputs too large", move |seed| {
        case_from_seed(seed, &cfg).ok()
    })
}

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".into()
    }
}

/// Run `f`, turning a panic into an error message.
fn guarded<T>(f: impl FnOnce() -> Result<T>) -> std::result::Result<T, String> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(format!("error: {e}")),
        Err(p) => Err(format!("panicked: {}", panic_text(p))),
    }
}

/// A stage that failed (`mismatch` false) or gave another value.
fn fail(stage: Stage, message: String, optimized: Option<&Function>) -> Verdict {
    failure(stage, false, message, optimized)
}

fn mismatch(stage: Stage, message: String, optimized: Option<&Function>) -> Verdict {
    failure(stage, true, message, optimized)
}

fn failure(stage: Stage, mismatch: bool, message: String, optimized: Option<&Function>) -> Verdict {
    Verdict::Disagree(Failure {
        stage,
        mismatch,
        message,
        optimized: optimized.cloned(),
    })
}

/// What a result is compared with: the contract's oracle for the written
/// program (value-safe mode), or its value within a tolerance (fast mode).
enum Reference {
    Contract(Vec<Sh>),
    Tolerance(Tolerance),
}

impl Reference {
    /// `None` when `got` is accepted, else why not.
    fn judge(&self, want: &Value, got: &Value) -> Option<String> {
        match self {
            Reference::Tolerance(t) => {
                (!t.agree(want, got)).then(|| format!("expected {want}, got {got}"))
            }
            Reference::Contract(sh) => {
                let xs = numbers(got);
                if xs.len() != sh.len() {
                    return Some(format!("expected {want}, got {got} (a different shape)"));
                }
                let (k, (s, x)) = sh
                    .iter()
                    .zip(&xs)
                    .enumerate()
                    .find(|(_, (s, x))| !s.accepts(**x))?;
                Some(format!(
                    "expected {want}, got {got}: element {k} is {x}, but the written program gives {} and the floating-point contract accepts {}",
                    s.v,
                    s.describe()
                ))
            }
        }
    }
}

/// The oracle's acceptable sets for `f` on `args` (every number of the
/// result, in the order of `numbers`), with the slack for the other
/// program's own rounding.
pub fn contract_oracle(f: &Function, args: &[Value]) -> Result<Vec<Sh>> {
    contract_oracle_in(f, args, crate::precision::Precision::F64)
}

/// [`contract_oracle`] for `f` run in the format `p`.
pub fn contract_oracle_in(
    f: &Function,
    args: &[Value],
    p: crate::precision::Precision,
) -> Result<Vec<Sh>> {
    let d = Shadow::for_inputs_in(args, p);
    Ok(interp::run_domain(f, args, &d)?
        .into_iter()
        .flat_map(|l| l.data)
        .map(|(s, _)| s.slack_in(2.0, p))
        .collect())
}

/// `None` when `got` is a result the floating-point contract (value-safe
/// mode) accepts for `f` on `args`, else why not: the property tests of the
/// optimiser and the JIT judge their results by this, as difftest does.
pub fn contract_judge(f: &Function, args: &[Value], got: &Value) -> Result<Option<String>> {
    contract_judge_in(f, args, got, crate::precision::Precision::F64)
}

/// [`contract_judge`] for `f` run in the format `p` (`got` computed in
/// `p`; the reference is [`interp::run_with`] in `p`).
pub fn contract_judge_in(
    f: &Function,
    args: &[Value],
    got: &Value,
    p: crate::precision::Precision,
) -> Result<Option<String>> {
    let want = interp::run_with(f, args, p)?;
    Ok(Reference::Contract(contract_oracle_in(f, args, p)?).judge(&want, got))
}

/// Run one case through the three engines and compare with the reference.
pub fn check(case: &Case, cfg: &DiffConfig) -> Verdict {
    let f = &case.function;
    let mut refused = None;
    let p = cfg.precision;
    let want = match guarded(|| {
        interp::run_with(f, &case.args, p).inspect_err(|e| {
            if let crate::Error::Gather(m) = e {
                refused = Some(m.clone());
            }
        })
    }) {
        Ok(v) => v,
        // integer arrays a gather refuses: every engine refuses the call
        // with the same words
        Err(_) if refused.is_some() => {
            return same_refusal(f, case, cfg, refused.as_deref().unwrap_or_default())
        }
        Err(m) => return fail(Stage::Interp, m, None),
    };
    let reference = if cfg.opt.fast_math {
        Reference::Tolerance(cfg.tol)
    } else {
        match guarded(|| contract_oracle_in(f, &case.args, p)) {
            Ok(sh) => Reference::Contract(sh),
            Err(m) => return fail(Stage::Interp, format!("the oracle failed: {m}"), None),
        }
    };
    // the optimiser's cost model sees the actual sizes, as in `einsat run`
    let mut opts = cfg.opt.clone();
    opts.precision = p;
    for (n, v) in &case.sizes {
        opts.sizes.entry(n.clone()).or_insert(*v);
    }
    let o = match guarded(|| optimize(f, &opts)) {
        Ok(o) => o,
        Err(m) => return fail(Stage::Optimizer, m, None),
    };
    let g = &o.program;
    let same_sig = match (types::check(f), types::check(g)) {
        (Ok(a), Ok(b)) => a.ret == b.ret && f.params == g.params,
        _ => false,
    };
    if !same_sig {
        return fail(
            Stage::Optimizer,
            "the optimised program does not type-check with the original signature".into(),
            Some(g),
        );
    }
    match guarded(|| interp::run_with(g, &case.args, p)) {
        Ok(got) => {
            if let Some(why) = reference.judge(&want, &got) {
                return mismatch(
                    Stage::OptInterp,
                    format!("{why} ({} inputs)", case.class.name()),
                    Some(g),
                );
            }
        }
        Err(m) => return fail(Stage::OptInterp, m, Some(g)),
    }
    if !cfg.jit {
        return Verdict::Agree { jit: false };
    }
    let laid = laid_out(case);
    let opts = jit::Options {
        threads: cfg.jit_threads.max(1),
        parallel_threshold: 0,
        // GEMM stages call the library at every size, as threads split
        // every nest: the small random sizes reach every path
        gemm_min_work: 0,
        precision: p,
        ..jit::Options::default()
    };
    let call = |k: jit::Kernel| match p {
        Precision::F64 => k.call(&laid),
        Precision::F32 => {
            // the arrays in f32, in the case's layout
            let a32: Vec<jit::Value32> = case
                .args
                .iter()
                .map(|v| laid_out32(&jit::Value32::rounded(v), case.layout))
                .collect();
            let refs: Vec<jit::Arg32<'_>> = a32.iter().map(jit::Value32::as_arg).collect();
            k.call_f32(&refs).map(|r| r.to_value())
        }
        // integer programs are not generated here (`tests/suite/ints.rs`)
        Precision::I64 | Precision::I32 => Err(crate::error::Error::Call(format!(
            "difftest does not run {p}"
        ))),
    };
    match guarded(|| call(jit::compile_uncached_with(g, &opts)?)) {
        Ok(got) => match reference.judge(&want, &got) {
            None => Verdict::Agree { jit: true },
            Some(why) => mismatch(
                Stage::OptJit,
                format!(
                    "{why} ({} inputs, {:?} layout, {} threads)",
                    case.class.name(),
                    case.layout,
                    opts.threads
                ),
                Some(g),
            ),
        },
        Err(m) => fail(Stage::OptJit, m, Some(g)),
    }
}

/// A case whose integer arrays a gather refuses (`want`, the interpreter's
/// error): the optimised program in the interpreter and on the JIT must
/// refuse it with the same error.
fn same_refusal(f: &Function, case: &Case, cfg: &DiffConfig, want: &str) -> Verdict {
    let opts = Options {
        precision: cfg.precision,
        ..cfg.opt.clone()
    };
    let g = match guarded(|| optimize(f, &opts)) {
        Ok(o) => o.program,
        Err(m) => return fail(Stage::Optimizer, m, None),
    };
    let want = format!("error: {want}");
    match guarded(|| interp::run_with(&g, &case.args, cfg.precision)) {
        Err(m) if m == want => {}
        Err(m) => return fail(Stage::OptInterp, format!("{m} (expected {want})"), Some(&g)),
        Ok(v) => {
            return mismatch(
                Stage::OptInterp,
                format!("{want} expected, got {v}"),
                Some(&g),
            )
        }
    }
    if !cfg.jit {
        return Verdict::Agree { jit: false };
    }
    let laid = laid_out(case);
    let jit_opts = jit::Options {
        precision: cfg.precision,
        ..jit::Options::default()
    };
    match guarded(|| {
        let k = jit::compile_uncached_with(&g, &jit_opts)?;
        match cfg.precision {
            Precision::F32 => {
                let a32: Vec<jit::Value32> = case
                    .args
                    .iter()
                    .map(|v| laid_out32(&jit::Value32::rounded(v), case.layout))
                    .collect();
                let refs: Vec<jit::Arg32<'_>> = a32.iter().map(jit::Value32::as_arg).collect();
                k.call_f32(&refs).map(|r| r.to_value())
            }
            _ => k.call(&laid),
        }
    }) {
        Err(m) if m == want => Verdict::Agree { jit: true },
        Err(m) => fail(Stage::OptJit, format!("{m} (expected {want})"), Some(&g)),
        Ok(v) => mismatch(Stage::OptJit, format!("{want} expected, got {v}"), Some(&g)),
    }
}

/// Does `case` still fail at `stage`?
fn fails_at(case: &Case, stage: Stage, cfg: &DiffConfig) -> Option<Failure> {
    match check(case, cfg) {
        Verdict::Disagree(f) if f.stage == stage => Some(f),
        _ => None,
    }
}

/// Keep only the first `k` entries along every axis of size `name`.
fn restrict(v: &Value, b: &Boundary, name: &str, k: usize) -> Value {
    match (v, b) {
        (Value::Array(a), Boundary::Array(dims)) => {
            let mut a: ArrayD<f64> = a.clone();
            for (ax, d) in dims.iter().enumerate() {
                if matches!(d, Size::Named(n) if n == name) && ax < a.ndim() {
                    a.slice_axis_inplace(Axis(ax), Slice::from(0..k.min(a.shape()[ax])));
                }
            }
            Value::Array(a.as_standard_layout().to_owned())
        }
        (Value::Pair(x, y), Boundary::Pair(bx, by)) => {
            Value::pair(restrict(x, bx, name, k), restrict(y, by, name, k))
        }
        _ => v.clone(),
    }
}

/// The case's arguments in its memory layout (what the JIT is called on).
fn laid_out(case: &Case) -> Vec<Value> {
    case.args
        .iter()
        .map(|v| relayout_value(v, case.layout))
        .collect()
}

/// An f32 value with its arrays laid out as `layout` (as [`relayout_value`]
/// lays out f64 values).
fn laid_out32(v: &jit::Value32, layout: Layout) -> jit::Value32 {
    use jit::Value32 as V;
    match v {
        V::Real(x) => V::Real(*x),
        V::Array(a) => V::Array(match layout {
            Layout::C => a.as_standard_layout().to_owned(),
            Layout::Fortran => {
                let mut f = ArrayD::zeros(ndarray::IxDyn(a.shape()).f());
                f.assign(a);
                f
            }
            Layout::Sliced => {
                let big: Vec<usize> = a.shape().iter().map(|&d| 2 * d.max(1)).collect();
                let mut b = ArrayD::from_elem(ndarray::IxDyn(&big), f32::NAN);
                for ax in 0..a.ndim() {
                    b.slice_axis_inplace(
                        Axis(ax),
                        Slice::new(0, Some(2 * a.shape()[ax] as isize), 2),
                    );
                }
                b.assign(a);
                b
            }
            Layout::Reversed => {
                let mut r = a.to_owned();
                for ax in 0..r.ndim() {
                    r.invert_axis(Axis(ax));
                }
                r.assign(a);
                r
            }
        }),
        V::Pair(a, b) => V::Pair(
            Box::new(laid_out32(a, layout)),
            Box::new(laid_out32(b, layout)),
        ),
    }
}

/// The numbers of a value, in order (arrays in logical order).
fn numbers(v: &Value) -> Vec<f64> {
    match v {
        Value::Real(x) => vec![*x],
        Value::Array(a) => a.iter().copied().collect(),
        Value::Pair(a, b) => [numbers(a), numbers(b)].concat(),
    }
}

/// `v` with its numbers taken, in order, from `xs` (as [`numbers`] lists them).
fn with_numbers(v: &Value, xs: &mut impl Iterator<Item = f64>) -> Value {
    match v {
        Value::Real(x) => Value::Real(xs.next().unwrap_or(*x)),
        Value::Array(a) => {
            let data: Vec<f64> = a.iter().map(|x| xs.next().unwrap_or(*x)).collect();
            Value::Array(ArrayD::from_shape_vec(a.raw_dim(), data).expect("same length"))
        }
        Value::Pair(a, b) => {
            let a = with_numbers(a, xs);
            Value::pair(a, with_numbers(b, xs))
        }
    }
}

/// Shrink a failing case: a smaller program with the same signature, then
/// unused parameters dropped, named sizes made smaller, the layout made C,
/// and input numbers made simple (0, 1, integers), each step kept only if
/// the case still fails at the same stage. Bounded by `cfg.shrink_steps`
/// and `cfg.shrink_time`.
pub fn shrink_case(case: &Case, failure: &Failure, cfg: &DiffConfig) -> (Case, Failure) {
    let stage = failure.stage;
    let start = Instant::now();
    let in_time = || start.elapsed() < cfg.shrink_time;
    let mut best = case.clone();
    let mut fl = failure.clone();
    let try_case = |c: Case, best: &mut Case, fl: &mut Failure| -> bool {
        if !in_time() {
            return false;
        }
        match fails_at(&c, stage, cfg) {
            Some(f2) => {
                *best = c;
                *fl = f2;
                true
            }
            None => false,
        }
    };
    // 1. the layout
    if best.layout != Layout::C {
        let c = Case {
            layout: Layout::C,
            ..best.clone()
        };
        try_case(c, &mut best, &mut fl);
    }
    // 2. the program (same signature, same inputs)
    let base = best.clone();
    let small = shrink(
        &best.function,
        |g| {
            in_time()
                && fails_at(
                    &Case {
                        function: g.clone(),
                        ..base.clone()
                    },
                    stage,
                    cfg,
                )
                .is_some()
        },
        cfg.shrink_steps,
    );
    if small != best.function {
        let c = Case {
            function: small,
            ..best.clone()
        };
        try_case(c, &mut best, &mut fl);
    }
    // 3. parameters the body no longer reads
    let mut k = 0;
    while k < best.function.params.len() {
        let p = &best.function.params[k];
        if best.function.body.uses_var(&p.name) {
            k += 1;
            continue;
        }
        let mut g = best.function.clone();
        g.params.remove(k);
        let mut args = best.args.clone();
        args.remove(k);
        let ok = types::check(&g).is_ok() && interp::bind(&g, &args).is_ok();
        let names = g.size_names();
        let sizes = best
            .sizes
            .iter()
            .filter(|(n, _)| names.contains(n))
            .map(|(n, v)| (n.clone(), *v))
            .collect();
        if !(ok
            && try_case(
                Case {
                    function: g,
                    args,
                    sizes,
                    layout: best.layout,
                    class: best.class,
                },
                &mut best,
                &mut fl,
            ))
        {
            k += 1;
        }
    }
    // 4. smaller named sizes
    let names: Vec<(String, usize)> = best.sizes.iter().map(|(n, v)| (n.clone(), *v)).collect();
    for (name, v) in names {
        for smaller in 1..v {
            let args: Vec<Value> = best
                .args
                .iter()
                .zip(&best.function.params)
                .map(|(a, p)| restrict(a, &Boundary::of(&p.ty), &name, smaller))
                .collect();
            let mut sizes = best.sizes.clone();
            sizes.insert(name.clone(), smaller);
            let c = Case {
                args,
                sizes,
                ..best.clone()
            };
            if try_case(c, &mut best, &mut fl) {
                break;
            }
        }
    }
    // 5. simpler numbers: whole arguments rounded, then each number 0 or 1
    for k in 0..best.args.len() {
        for f in [|_: f64| 0.0, |_: f64| 1.0, |x: f64| x.round()] {
            let mut args = best.args.clone();
            args[k] = with_numbers(&args[k], &mut numbers(&args[k]).into_iter().map(f));
            if args[k].approx_eq(&best.args[k], 0.0, 0.0) {
                continue;
            }
            let c = Case {
                args,
                ..best.clone()
            };
            if try_case(c, &mut best, &mut fl) {
                break;
            }
        }
        for j in 0..numbers(&best.args[k]).len() {
            for x in [0.0, 1.0] {
                let mut xs = numbers(&best.args[k]);
                if xs[j] == x {
                    break;
                }
                xs[j] = x;
                let mut args = best.args.clone();
                args[k] = with_numbers(&args[k], &mut xs.into_iter());
                let c = Case {
                    args,
                    ..best.clone()
                };
                if try_case(c, &mut best, &mut fl) {
                    break;
                }
            }
        }
    }
    (best, fl)
}

/// A disagreement found by [`run`]: the case as drawn and as shrunk.
#[derive(Clone, Debug)]
pub struct Disagreement {
    /// Case number in the run, and the seed it was drawn from.
    pub index: u64,
    /// The seed it was drawn from.
    pub seed: u64,
    /// The case as drawn.
    pub original: Case,
    /// The case as shrunk (still failing the same way).
    pub shrunk: Case,
    /// How it fails.
    pub failure: Failure,
}

/// What [`run`] did.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Cases checked, cases whose JIT leg ran, and disagreements found
    /// (before the cap on how many are shrunk and kept).
    pub cases: u64,
    /// Cases whose JIT leg ran.
    pub jit_cases: u64,
    /// Cases that agreed without the JIT leg, or were not run, by reason
    /// (empty when the JIT leg ran on every agreeing case).
    pub jit_skipped: BTreeMap<String, u64>,
    /// Disagreements found (before the cap on how many are shrunk and kept).
    pub disagreeing: u64,
    /// The first disagreements by case number, shrunk.
    pub disagreements: Vec<Disagreement>,
    /// Wall time of the run, in seconds.
    pub seconds: f64,
    /// Cases per value class of their inputs.
    pub classes: BTreeMap<String, u64>,
}

/// Run `cases` random cases (case `k` drawn from [`case_seed`]`(seed, k)`)
/// on `jobs` threads; stop drawing new cases once `max_failures`
/// disagreements are known, then shrink the first of them by case number.
/// `progress(done, disagreeing)` is called after every case.
pub fn run(
    cfg: &DiffConfig,
    seed: u64,
    cases: u64,
    jobs: usize,
    max_failures: usize,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Summary {
    let start = Instant::now();
    let next = AtomicU64::new(0);
    let done = AtomicU64::new(0);
    let jit_cases = AtomicU64::new(0);
    let skipped: Mutex<BTreeMap<String, u64>> = Mutex::new(BTreeMap::new());
    let classes: Mutex<BTreeMap<String, u64>> = Mutex::new(BTreeMap::new());
    let bad = AtomicUsize::new(0);
    let found: Mutex<Vec<(u64, Case, Failure)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| loop {
                if bad.load(Ordering::SeqCst) >= max_failures.max(1) {
                    break;
                }
                let k = next.fetch_add(1, Ordering::SeqCst);
                if k >= cases {
                    break;
                }
                let cs = case_seed(seed, k);
                let skip = |why: &str| {
                    if let Ok(mut m) = skipped.lock() {
                        *m.entry(why.to_string()).or_insert(0) += 1;
                    }
                };
                let count = |case: &Case| {
                    if let Ok(mut m) = classes.lock() {
                        *m.entry(case.class.name().to_string()).or_insert(0) += 1;
                    }
                    check(case, cfg)
                };
                let verdict = match case_from_seed(cs, cfg) {
                    Ok(case) => match count(&case) {
                        Verdict::Agree { jit } => {
                            if jit {
                                jit_cases.fetch_add(1, Ordering::Relaxed);
                            } else if !cfg.jit {
                                skip("the JIT leg is off");
                            } else {
                                skip("the JIT leg did not run");
                            }
                            None
                        }
                        Verdict::Disagree(f) => Some((k, case, f)),
                    },
                    Err(_) => {
                        skip("no inputs (too large)");
                        None
                    }
                };
                if let Some(v) = verdict {
                    bad.fetch_add(1, Ordering::SeqCst);
                    if let Ok(mut g) = found.lock() {
                        g.push(v);
                    }
                }
                let d = done.fetch_add(1, Ordering::SeqCst) + 1;
                progress(d, bad.load(Ordering::SeqCst) as u64);
            });
        }
    });
    let mut found = found.into_inner().unwrap_or_default();
    found.sort_by_key(|(k, _, _)| *k);
    let disagreeing = found.len() as u64;
    let disagreements = found
        .into_iter()
        .take(max_failures.max(1))
        .map(|(index, case, failure)| {
            let (shrunk, failure) = shrink_case(&case, &failure, cfg);
            Disagreement {
                index,
                seed: case_seed(seed, index),
                original: case,
                shrunk,
                failure,
            }
        })
        .collect();
    Summary {
        cases: done.load(Ordering::SeqCst),
        jit_cases: jit_cases.load(Ordering::SeqCst),
        jit_skipped: skipped.into_inner().unwrap_or_default(),
        disagreeing,
        disagreements,
        seconds: start.elapsed().as_secs_f64(),
        classes: classes.into_inner().unwrap_or_default(),
    }
}

/// How an argument is given to `einsat run`: `--arg` specs, with the arrays
/// to write as `.npy` files (name, path stem, value).
#[cfg(feature = "cli")]
fn arg_specs(name: &str, v: &Value, out: &mut Vec<String>, files: &mut Vec<(String, Value)>) {
    match v {
        Value::Real(x) => out.push(format!("{name}={x:?}")),
        Value::Array(_) => {
            let file = format!("{name}.npy");
            out.push(format!("{name}={file}"));
            files.push((file, v.clone()));
        }
        Value::Pair(a, b) => {
            arg_specs(&format!("{name}.0"), a, out, files);
            arg_specs(&format!("{name}.1"), b, out, files);
        }
    }
}

/// Write a reproducer for `case` into `dir`: `repro.tl` (the program, with
/// the failure and the commands in comments) and one `.npy` file per array
/// argument. Returns the options `einsat run` takes after the engine
/// flags: `run_opts` (what the run needs besides the arguments, such as
/// `--rules DIR` when the run used other rules), then `--arg` for each
/// argument. (With the `cli` feature: the reproducer is replayed by
/// `einsat run`, and its `.npy` files are written by the CLI's I/O.)
#[cfg(feature = "cli")]
pub fn write_reproducer(
    case: &Case,
    failure: &Failure,
    dir: &std::path::Path,
    run_opts: &[String],
) -> Result<Vec<String>> {
    std::fs::create_dir_all(dir)
        .map_err(|e| crate::error::Error::Io(format!("{}: cannot create: {e}", dir.display())))?;
    let mut specs = Vec::new();
    let mut files = Vec::new();
    for (p, v) in case.function.params.iter().zip(&case.args) {
        arg_specs(&p.name, v, &mut specs, &mut files);
    }
    for (file, v) in &files {
        crate::cli::io::write_value(&dir.join(file), v)?;
    }
    let mut words = run_opts.to_vec();
    for s in specs {
        words.push("--arg".into());
        words.push(s);
    }
    let args: String = words.iter().map(|w| format!(" {w}")).collect();
    let mut text = String::new();
    text.push_str(&format!(
        "# einsat difftest reproducer: {}\n",
        failure.headline()
    ));
    for line in failure.message.lines() {
        text.push_str(&format!("#   {line}\n"));
    }
    if !case.sizes.is_empty() {
        let s: Vec<String> = case.sizes.iter().map(|(n, v)| format!("{n}={v}")).collect();
        text.push_str(&format!("# sizes: {}\n", s.join(", ")));
    }
    if case.layout != Layout::C {
        text.push_str(&format!(
            "# the JIT received the inputs in {:?} layout\n",
            case.layout
        ));
    }
    text.push_str(&format!(
        "# reference: einsat run repro.tl --no-opt --engine interp{args}\n"
    ));
    text.push_str(&format!(
        "# optimised: einsat run repro.tl --engine interp{args}\n"
    ));
    text.push_str(&format!(
        "# JIT:       einsat run repro.tl --engine jit --threads 2 --parallel-threshold 0{args}\n"
    ));
    if let Some(g) = &failure.optimized {
        text.push_str("# the optimised program:\n");
        for line in crate::syntax::print_function(g).lines() {
            text.push_str(&format!("#   {line}\n"));
        }
    }
    text.push_str(&crate::syntax::print_function(&case.function));
    text.push('\n');
    let path = dir.join("repro.tl");
    std::fs::write(&path, text)
        .map_err(|e| crate::error::Error::Io(format!("{}: cannot write: {e}", path.display())))?;
    Ok(words)
}

/// The body of the pipeline fuzz target, also run over its kept corpus by
/// the regression tests: the bytes choose a well-typed program (through
/// [`super::ByteRng`]) and inputs, which go through the three-way comparison of
/// [`check`]; a disagreement panics with the program and message.
pub fn fuzz_pipeline(data: &[u8]) {
    let cfg = DiffConfig::default();
    let f = super::gen_function_with(super::ByteRng::new(data), &cfg.gen);
    let seed = data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ *b as u64).wrapping_mul(0x100_0000_01b3)
    });
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let Ok((sizes, args, layout)) = inputs_for(&f, cfg.max_size, true, &mut rng) else {
        return;
    };
    let case = Case {
        function: f,
        sizes,
        args,
        layout,
        class: crate::interp::random::ValueClass::Moderate,
    };
    if let Verdict::Disagree(fl) = check(&case, &cfg) {
        panic!(
            "{}: {}\n{}",
            fl.headline(),
            fl.message,
            crate::syntax::print_function(&case.function)
        );
    }
}
