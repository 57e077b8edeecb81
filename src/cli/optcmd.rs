//! The optimiser's commands: `einsat opt` (print the optimised program with
//! its cost and e-graph statistics, or JSON) and `einsat rules check`
//! (soundness of a rule set by random instantiation).

use super::common::{load_file, parse_sizes, pick, CliResult, Spinner};
use crate::egraph::check::check_rules;
use crate::egraph::check::RuleCheck;
use crate::egraph::load::load_rules_dir_with;
use crate::egraph::rules::{builtin_rules, Rule};
use crate::opt::{optimize, report_json, Optimized, Options};
use crate::syntax::{print_function, Function};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Optimiser knobs shared by `opt`, `run`, `demo` and `bench`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct OptArgs {
    /// Estimated value of a named size for the cost model, e.g. --size n=512
    /// (default 1000).
    #[arg(long = "size")]
    pub sizes: Vec<String>,
    /// Use the `*.rules` files of this folder instead of the built-in rules.
    #[arg(long)]
    pub rules: Option<PathBuf>,
    /// Load the `--rules` files without checking each rule's soundness on
    /// random instances first.
    #[arg(long)]
    pub no_rule_check: bool,
    /// E-graph node limit.
    #[arg(long)]
    pub node_limit: Option<usize>,
    /// Saturation iteration limit.
    #[arg(long)]
    pub iter_limit: Option<usize>,
    /// Time limit of the whole optimisation in milliseconds.
    #[arg(long)]
    pub time_limit_ms: Option<u64>,
    /// Largest program (nodes) the optimiser writes out: lets are inlined
    /// only while the program stays within it (default 5000).
    #[arg(long)]
    pub term_limit: Option<usize>,
    /// Use egg's simple scheduler instead of the backoff scheduler.
    #[arg(long)]
    pub simple_scheduler: bool,
    /// Extract by tree cost only (a subterm paid at every use) instead of
    /// the DAG-aware extraction.
    #[arg(long)]
    pub tree_extraction: bool,
    /// The fast mode of the floating-point contract: also rewrites that
    /// cancel terms or assume finite values (`x - x -> 0`, `x * 0 -> 0`,
    /// expanding products of differences). Default: value-safe (see
    /// docs/fp-contract.md).
    #[arg(long)]
    pub fast_math: bool,
    /// The most elements of any intermediate (a contraction step, a hoisted
    /// value); larger ones are recomputed in their loops. Default: the
    /// largest argument or result, or 2^27, whichever is larger.
    #[arg(long)]
    pub memory_limit: Option<f64>,
    /// How tensor networks are planned: auto, optimal, greedy or hyper.
    #[arg(long, value_parser = ["auto", "optimal", "greedy", "hyper"])]
    pub plan: Option<String>,
    /// Print each tensor network's contraction path (steps, flops, sizes);
    /// with a value, contract the first network in that order instead of
    /// planning it, in numpy's form: "[(0, 1), (0, 1)]" or "0,1;0,1".
    #[arg(long, num_args = 0..=1, default_missing_value = "")]
    pub path: Option<String>,
}

/// A contraction path in numpy's linear form: groups of positions, as
/// `[(0, 1), (0, 1)]` (what `einsum_path` returns) or `0,1;0,1`.
pub fn parse_path(text: &str) -> Result<Vec<Vec<usize>>, String> {
    let t = text.trim();
    let groups: Vec<&str> = if t.contains('(') {
        t.split('(')
            .skip(1)
            .map(|g| g.split(')').next().unwrap_or(""))
            .collect()
    } else {
        t.split(';').collect()
    };
    let bad = || {
        format!(
            "error: --path {}: expected groups of positions, as \"[(0, 1), (0, 1)]\" or \"0,1;0,1\"",
            crate::diag::quote(text)
        )
    };
    let mut out = Vec::new();
    for g in groups {
        let ps: Vec<usize> = g
            .split(',')
            .map(str::trim)
            .filter(|x| !x.is_empty())
            .map(|x| x.parse().map_err(|_| bad()))
            .collect::<Result<_, _>>()?;
        if ps.is_empty() {
            return Err(bad());
        }
        out.push(ps);
    }
    if out.is_empty()
        || t.contains(|c: char| !(c.is_ascii_digit() || " ,;()[]'einsum_path".contains(c)))
    {
        return Err(bad());
    }
    Ok(out)
}

/// The rule set: built in, or every `*.rules` file of `dir`, checked for
/// soundness on load when `check` is set (an unsound rule is an error with
/// its counterexample).
pub fn rule_set(dir: Option<&Path>, check: bool) -> Result<Vec<Rule>, String> {
    match dir {
        None => Ok(builtin_rules()),
        Some(d) => {
            let how = if check {
                RuleCheck::default()
            } else {
                RuleCheck::skip()
            };
            let r = load_rules_dir_with(d, &how).map_err(|e| format!("error: {e}"))?;
            if r.is_empty() {
                return Err(format!(
                    "error: {}: no *.rules files",
                    crate::diag::quote_path(d)
                ));
            }
            Ok(r)
        }
    }
}

impl OptArgs {
    /// Optimiser options from the flags, for the functions `fs` (of
    /// `place`, e.g. "the file"): `--size` names only sizes they have.
    pub fn options(&self, fs: &[&Function], place: &str) -> Result<Options, String> {
        let mut o = Options {
            sizes: parse_sizes(&self.sizes, fs, place)?,
            ..Options::default()
        };
        if self.rules.is_some() {
            o.rules = Some(rule_set(self.rules.as_deref(), !self.no_rule_check)?);
        }
        if let Some(n) = self.node_limit {
            o.node_limit = n;
        }
        if let Some(n) = self.iter_limit {
            o.iter_limit = n;
        }
        o.backoff = !self.simple_scheduler;
        if self.tree_extraction {
            o.extraction = crate::extract::Extraction::Tree;
        }
        if let Some(ms) = self.time_limit_ms {
            o.time_limit = Duration::from_millis(ms);
        }
        if let Some(n) = self.term_limit {
            o.term_limit = n;
        }
        o.fast_math = self.fast_math;
        if let Some(m) = self.memory_limit {
            if m.is_nan() || m < 1.0 {
                return Err(format!(
                    "error: --memory-limit {m}: the limit must be at least one element"
                ));
            }
            o.memory_limit = Some(m);
        }
        if let Some(p) = &self.plan {
            o.plan = match p.as_str() {
                "optimal" => crate::plan::Method::Optimal,
                "greedy" => crate::plan::Method::Greedy,
                "hyper" => crate::plan::Method::Hyper,
                _ => crate::plan::Method::Auto,
            };
        }
        if let Some(p) = self.path.as_deref().filter(|p| !p.trim().is_empty()) {
            o.path = Some(parse_path(p)?);
        }
        Ok(o)
    }
}

/// Whether a limit cut the optimisation short (the result is then the best
/// program found so far).
pub fn hit_limit(o: &Optimized) -> bool {
    o.report.hit_limit() || o.report.stop_reason.contains("limit")
}

fn opt_one(f: &Function, opts: &Options) -> Result<Optimized, String> {
    let _busy = Spinner::new(format!("optimising `{}`", f.name));
    optimize(f, opts).map_err(|e| format!("error: in `{}`: {e}", f.name))
}

/// `einsat opt`.
pub fn opt(
    file: &Path,
    func: Option<&str>,
    args: &OptArgs,
    json: bool,
    explain: bool,
) -> CliResult {
    let (_, parsed) = load_file(file)?;
    let fs: Vec<&Function> = match func {
        Some(_) => vec![pick(&parsed.program, func)?],
        None => parsed.program.functions.iter().collect(),
    };
    let mut opts = args.options(&fs, "the file")?;
    opts.explain = explain;
    let mut out = Vec::new();
    for (k, f) in fs.iter().enumerate() {
        let o = opt_one(f, &opts)?;
        if json {
            out.push(report_json(f, &o));
            continue;
        }
        if k > 0 {
            outln!()?;
        }
        out!("{}", print_function(&o.program))?;
        let r = &o.report;
        outln!(
            "# mode: {}{}",
            r.mode,
            if opts.fast_math {
                " (may cancel terms and assume finite values)"
            } else {
                " (reorders sums and products only; --fast-math for more)"
            }
        )?;
        outln!(
            "# cost: {} -> {} ({:.1}x less work)",
            o.cost_before,
            o.cost_after,
            o.cost_before / o.cost_after.max(1.0)
        )?;
        outln!(
            "# e-graph: {} nodes, {} classes, {} iterations, stopped: {}; {:.1} ms ({:.1} ms CPU)",
            r.egraph_nodes,
            r.egraph_classes,
            r.iterations,
            r.stop_reason,
            r.total_seconds * 1e3,
            r.cpu_seconds * 1e3
        )?;
        for l in &r.limits_hit {
            outln!("# limit: {l}")?;
        }
        if hit_limit(&o) {
            outln!(
                "# note: a limit cut the optimisation short; this is the best program found so far"
            )?;
        }
        if let Some(ex) = &r.explanation {
            outln!(
                "# explanation (per round of saturation: the program it starts from, then each rule applied and the program after it):"
            )?;
            for step in ex {
                outln!("#   {step}")?;
            }
        }
        if args.path.is_some() {
            print_paths(&r.plans)?;
        }
    }
    if json {
        outln!("{}", serde_json::json!({ "functions": out }))?;
    }
    Ok(())
}

/// The contraction paths of a report, as comments: per network its
/// tensors, numpy's linear path, and per step what it contracts, which
/// indices it sums and keeps, its flops and the size of what it makes.
fn print_paths(plans: &[crate::egraph::seed::PlannedNetwork]) -> CliResult {
    if plans.is_empty() {
        outln!("# path: no product of three or more tensors to plan")?;
    }
    for (k, n) in plans.iter().enumerate() {
        let p = &n.plan;
        let names = |ids: &[usize]| -> String {
            ids.iter()
                .map(|&i| n.indices[i].as_str())
                .collect::<Vec<_>>()
                .join(",")
        };
        outln!(
            "# path {k} ({:?}): {} tensors, {:.6e} multiply-adds ({:.6e} flops as opt_einsum counts), largest intermediate {:.6e} elements{}",
            p.method,
            p.inputs,
            p.flops,
            p.flops_opt_einsum,
            p.largest_intermediate,
            if p.sliced.is_empty() {
                String::new()
            } else {
                format!(", {} slices over {}", p.slices, names(&p.sliced))
            }
        )?;
        let path: Vec<String> = p
            .linear_path()
            .iter()
            .map(|g| {
                format!(
                    "({})",
                    g.iter()
                        .map(|x| x.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
            .collect();
        outln!("#   linear path: [{}]", path.join(", "))?;
        for (t, text) in n.tensors.iter().enumerate() {
            outln!("#   tensor {t}: {text}")?;
        }
        outln!(
            "#   {:>4}  {:<12} {:<16} {:<16} {:>12} {:>12}",
            "step",
            "operands",
            "sums",
            "keeps",
            "flops",
            "size"
        )?;
        for (s, step) in p.steps.iter().enumerate() {
            let ops: Vec<String> = step.operands.iter().map(|o| o.to_string()).collect();
            outln!(
                "#   {:>4}  {:<12} {:<16} {:<16} {:>12.4e} {:>12.4e}",
                p.inputs + s,
                ops.join(" "),
                names(&step.summed),
                names(&step.kept),
                step.flops_opt_einsum,
                step.size
            )?;
        }
    }
    Ok(())
}

/// `einsat rules check`.
pub fn rules_check(dir: Option<&Path>, cases: usize, seed: u64, json: bool) -> CliResult {
    // this command is the full check: load without the quick one
    let rules = rule_set(dir, false)?;
    let reports = check_rules(&rules, cases, seed);
    let bad = reports.iter().filter(|r| !r.sound()).count();
    if json {
        outln!("{}", serde_json::json!({ "rules": reports }))?;
    } else {
        outln!(
            "{:<22} {:<26} {:<14} {:<14} {:>7} {:>8} {:>10}",
            "rule",
            "origin",
            "class",
            "holds",
            "tried",
            "skipped",
            "mismatches"
        )?;
        for r in &reports {
            outln!(
                "{:<22} {:<26} {:<14} {:<14} {:>7} {:>8} {:>10}{}",
                r.name,
                r.origin,
                r.class.name(),
                r.holds.map(|c| c.name()).unwrap_or("unsound"),
                r.tried,
                r.skipped,
                r.mismatches,
                if r.sound() { "" } else { "  WRONG CLASS" }
            )?;
        }
        let tried: usize = reports.iter().map(|r| r.tried).sum();
        outln!(
            "{} rules, {tried} instances, {bad} not of their class",
            reports.len()
        )?;
        for r in reports.iter().filter(|r| !r.sound()) {
            outln!(
                "\nrule `{}` ({}) is not {}{}; counterexample:",
                r.name,
                r.origin,
                r.class,
                match r.holds {
                    Some(c) => format!(" (it passed as {c})"),
                    None => " (it is unsound)".into(),
                }
            )?;
            outln!("{}", r.counterexample.as_deref().unwrap_or("(none kept)"))?;
        }
    }
    if bad > 0 {
        return Err(format!("error: {bad} rule(s) not of the class they claim"));
    }
    Ok(())
}
