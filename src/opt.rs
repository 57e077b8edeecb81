//! The public optimiser: [`optimize`] ties the stages together.
//!
//! 1. type-check; inline lets, beta-reduce accesses of gens and push
//!    projections down (the pre-pass of [`crate::extract::normal`]);
//! 2. convert to the e-graph language (De Bruijn) and saturate with all rule
//!    families ([`crate::egraph::saturate`]);
//! 3. extract the cheapest term ([`crate::extract::extract_best`], DAG-aware);
//! 4. normal-form post-pass with loop-invariant hoisting and sharing;
//! 5. keep the cheaper of this and the post-pass applied to the input alone
//!    (a program that fails to type-check with the same signature is never
//!    returned).
//!
//! Limits bound the whole call, whatever the input: the pre-pass inlines
//! lets only while the program stays within [`Options::term_limit`] nodes
//! (so it is linear, not exponential, in a chain of lets); every saturation
//! round stops at [`Options::node_limit`] nodes (checked inside iterations,
//! see [`crate::egraph::saturate`]) and all rounds share one deadline,
//! `start + time_limit`; a term read out of the e-graph that would be
//! larger written out than the term limit (or the pre-pass' program, if
//! larger) is not used. What was cut short
//! is listed in [`Report::limits_hit`]; the result is then the best program
//! found so far (at worst the input in normal form, or the input itself).

use crate::egraph::rules::{builtin_rules, rewrites, Rule};
use crate::egraph::saturate::{saturate, Limits};
use crate::egraph::{from_rec, seed, to_rec, TlAnalysis, TL};
use crate::error::{Error, Result};
use crate::extract::cost::{ir_cost, CostModel};
use crate::extract::extract::tree_size;
use crate::extract::normal::{
    count_lets, inline_lets, normalize, uniquify, Cx, Fresh, NormalOptions, Simp,
    DEFAULT_TERM_LIMIT,
};
use crate::extract::{extract_best, extract_reduced, Extraction};
use crate::syntax::ast::*;
use crate::types;
use egg::RecExpr;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Optimiser options.
#[derive(Clone, Debug)]
pub struct Options {
    /// Estimated values of named sizes for the cost model (default 1000).
    pub sizes: BTreeMap<String, usize>,
    /// E-graph node limit of each saturation round.
    pub node_limit: usize,
    /// Iteration limit of each saturation round.
    pub iter_limit: usize,
    /// Time limit of the whole optimisation (all rounds share it).
    pub time_limit: Duration,
    /// The largest program, in nodes, that the optimiser writes out: lets
    /// are inlined only while the program stays within it, and a term
    /// extracted from the e-graph that is larger written out is not used.
    pub term_limit: usize,
    /// Rules to use; `None`: the built-in ones. Load them with
    /// [`crate::egraph::load::load_rules_dir`] or
    /// [`crate::egraph::load::parse_rules`], which check their soundness
    /// on load (an unsound rule is refused with a counterexample).
    pub rules: Option<Vec<Rule>>,
    /// Record the rewrite chain from input to extracted term.
    pub explain: bool,
    /// Run equality saturation at all (else only the post-pass).
    pub saturate: bool,
    /// Use the backoff scheduler.
    pub backoff: bool,
    /// Tree-cost or DAG-aware extraction (see [`crate::extract::extract`]).
    pub extraction: Extraction,
    /// The fast mode of the floating-point contract (`docs/fp-contract.md`):
    /// also rules that cancel terms or assume finite values (classes
    /// `finite-only` and `cancelling`), the polynomial simplification that
    /// collects like terms, and seeds that multiply products of sums out.
    /// Off by default: the default mode only reorders sums and products
    /// and applies identities exact in IEEE arithmetic.
    pub fast_math: bool,
    /// The most elements of any intermediate the optimised program
    /// materialises (a planned contraction's steps, a hoisted `let`),
    /// estimated with [`Options::sizes`]; `None`: the largest argument or
    /// result, or 2^27 elements, whichever is larger. Beyond it, values are
    /// recomputed in their loops instead.
    pub memory_limit: Option<f64>,
    /// How the contraction order of tensor networks is planned
    /// ([`crate::plan`]); the plan seeds the e-graph, and is a candidate of
    /// its own.
    pub plan: crate::plan::Method,
    /// Saturate also programs whose tensor networks the planner contracts
    /// on its own (see [`SATURATE_MAX_TENSORS`],
    /// [`SATURATE_PLAIN_MAX_TENSORS`]); off by default.
    pub saturate_networks: bool,
    /// A contraction path to follow instead of planning, in numpy's linear
    /// form (`[(0, 1), (0, 1)]`, as `einsum_path` returns it; see
    /// [`crate::plan::plan_path`]), for the program's first tensor network
    /// (an einsum's): the program is then contracted in that order, as
    /// written, without saturation.
    pub path: Option<Vec<Vec<usize>>>,
    /// A matrix product inside a larger expression (a bias and activation
    /// around it, a product inside another sum, a factor that is not a
    /// plain load) of at least this many multiply-adds, estimated with
    /// [`Options::sizes`], becomes a GEMM stage of its own: a `let` the JIT
    /// runs on the GEMM library (see [`crate::extract::normal`]).
    /// Infinite: never.
    pub gemm_stage_min_work: f64,
    /// The format the program will run in ([`crate::precision::Precision`]): constant
    /// folds are judged in it (default `F64`). In an integer format
    /// (`I64`, `I32`) the program must be integral
    /// ([`crate::types::integral()`]); the passes are those exact in
    /// wrapping integers: the structural ones (pre-pass, contraction
    /// planning, normal form), and saturation with the rules
    /// [`crate::egraph::rules::Rule::int_admitted`] keeps (ring identities
    /// and the structural families, checked in wrapping integers by
    /// [`crate::egraph::check::check_rule_int`]), constants folded in
    /// wrapping arithmetic; not the fast mode's extras, no accuracy
    /// judging (every candidate is exact).
    pub precision: crate::precision::Precision,
}

impl Default for Options {
    fn default() -> Self {
        let l = Limits::default();
        Options {
            sizes: BTreeMap::new(),
            node_limit: l.node_limit,
            iter_limit: l.iter_limit,
            time_limit: l.time_limit,
            term_limit: DEFAULT_TERM_LIMIT,
            rules: None,
            explain: false,
            saturate: true,
            backoff: true,
            extraction: Extraction::default(),
            fast_math: false,
            memory_limit: None,
            plan: crate::plan::Method::Auto,
            saturate_networks: false,
            path: None,
            gemm_stage_min_work: crate::extract::normal::MIN_GEMM_STAGE_WORK,
            precision: crate::precision::Precision::F64,
        }
    }
}

impl Options {
    /// The optimiser's mode in words: `"value-safe"` or `"fast-math"`.
    pub fn mode(&self) -> &'static str {
        if self.fast_math {
            "fast-math"
        } else {
            "value-safe"
        }
    }
}

/// What the optimiser did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    /// The floating-point mode used: `"value-safe"` (the default) or
    /// `"fast-math"` ([`Options::fast_math`]).
    pub mode: String,
    /// E-graph nodes at the end of saturation.
    pub egraph_nodes: usize,
    /// E-graph classes at the end of saturation.
    pub egraph_classes: usize,
    /// Saturation iterations run (all rounds).
    pub iterations: usize,
    /// Why saturation stopped, in words.
    pub stop_reason: String,
    /// Saturation time in seconds.
    pub saturation_seconds: f64,
    /// Whole optimisation time in seconds.
    pub total_seconds: f64,
    /// CPU time of the optimising thread in seconds (less sensitive than
    /// [`Report::total_seconds`] to other processes sharing the cores;
    /// 0 where the platform has no per-thread clock).
    pub cpu_seconds: f64,
    /// Rules that fired, with how many times.
    pub rules_fired: BTreeMap<String, usize>,
    /// Extraction cost of the extracted term (its scoped DAG cost, or tree
    /// cost with `Extraction::Tree`; before the post-pass).
    pub extracted_cost: f64,
    /// Which candidate was kept: `"egraph"` or `"post-pass"`.
    pub chosen: String,
    /// The rewrite chain (explanation mode only).
    pub explanation: Option<Vec<String>>,
    /// Saturation rounds run (each from the previous round's program).
    pub rounds: usize,
    /// Every limit that cut the optimisation short, in words (saturation
    /// limits of each round, lets kept by the pre-pass, terms too large to
    /// use, the shared deadline); empty when nothing was cut.
    pub limits_hit: Vec<String>,
    /// Each saturation round's e-graph: nodes, classes, iterations, stop
    /// reason, milliseconds.
    pub round_stats: Vec<RoundStats>,
    /// The accuracy check of the default mode, when it ran.
    pub accuracy: Option<Accuracy>,
    /// Why the accuracy check did not run, in the default mode.
    pub accuracy_note: Option<String>,
    /// The contraction plans of the program's tensor networks (one per
    /// network planned), when it has any of at least three factors.
    pub plans: Vec<seed::PlannedNetwork>,
    /// The memory limit applied, in elements.
    pub memory_limit: f64,
}

/// One saturation round, for the report.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RoundStats {
    /// E-graph nodes when the round stopped.
    pub nodes: usize,
    /// E-classes when the round stopped.
    pub classes: usize,
    /// Saturation iterations run.
    pub iterations: usize,
    /// Why the round stopped (`saturated`, a limit, the deadline).
    pub stop_reason: String,
    /// Wall-clock milliseconds of the round.
    pub ms: f64,
}

impl Report {
    /// Whether some limit cut the optimisation short (the result is then
    /// the best program found so far).
    pub fn hit_limit(&self) -> bool {
        !self.limits_hit.is_empty()
    }

    fn note(&mut self, what: String) {
        if !self.limits_hit.contains(&what) {
            self.limits_hit.push(what);
        }
    }
}

/// The result of [`optimize`].
#[derive(Clone, Debug)]
pub struct Optimized {
    /// The optimised program, in normal form, with the input's signature.
    pub program: Function,
    /// Estimated cost of the input (the cost model of [`crate::extract::cost`]).
    pub cost_before: f64,
    /// Estimated cost of the optimised program.
    pub cost_after: f64,
    /// What the optimiser did.
    pub report: Report,
}

/// The pre-pass: inline lets (while the program stays within `term_limit`
/// nodes, see [`inline_lets`]), beta-reduce, push projections down; in the
/// fast mode also simplify the arithmetic ([`crate::egraph::poly`]).
pub fn prepass(f: &Function, term_limit: usize, fast_math: bool) -> Expr {
    let mut fresh = Fresh::default();
    let mut cx = Cx::of(f);
    let b = uniquify(&f.body, &mut fresh);
    let b = inline_lets(&b, &mut fresh, term_limit);
    let b = Simp { fresh: &mut fresh }.simp(&b, &mut cx);
    if fast_math {
        crate::egraph::poly::simplify(&b)
    } else {
        b
    }
}

/// `f` with its scalar arithmetic simplified ([`crate::egraph::poly`]),
/// when that is cheaper and keeps the signature.
fn poly_candidate(f: &Function, ret: &Type, model: &CostModel) -> Option<(f64, Function)> {
    let body = crate::egraph::poly::simplify(&f.body);
    if body == f.body {
        return None;
    }
    let g = Function { body, ..f.clone() };
    (same_sig(&g, ret) && crate::extract::is_normal(&g)).then(|| (ir_cost(&g.body, model), g))
}

/// `f` with sums over one range fused ([`crate::egraph::poly::fusions`]),
/// each way in normal form with its cost.
fn fused_candidates(
    f: &Function,
    ret: &Type,
    model: &CostModel,
    nopts: &NormalOptions,
) -> Vec<(f64, Function)> {
    crate::egraph::poly::body_fusions(&f.body)
        .into_iter()
        .filter_map(|body| {
            let g = normalize(&Function { body, ..f.clone() }, nopts);
            same_sig(&g, ret).then(|| (ir_cost(&g.body, model), g))
        })
        .collect()
}

fn same_sig(f: &Function, ret: &Type) -> bool {
    matches!(types::check(f), Ok(s) if &s.ret == ret)
}

/// At most this many saturation rounds.
pub const MAX_ROUNDS: usize = 4;

/// A program with a tensor network of more tensors than this is not
/// saturated: the planner's contraction order is taken as it is (rewriting
/// a long product spends the node and time limits on reassociating it and
/// finds no better order than the plan; what saturation adds, factorised
/// sums and δ/ε identities, lives in small networks).
pub const SATURATE_MAX_TENSORS: usize = 10;

/// A plain network (no brackets, no `eps`) of more tensors than this is
/// contracted as planned, not saturated: the planner's order is exact for
/// such networks (every order is searched up to 12 tensors), and it sums
/// the indices of one tensor first, which is the factorisation of
/// independent sums; saturating a five-tensor einsum took about a second.
pub const SATURATE_PLAIN_MAX_TENSORS: usize = 3;

/// Whether the body holds a bracket or an `eps`: identities the planner
/// does not know (δ/ε, sum collapse) are then left to saturation.
fn has_brackets(e: &Expr) -> bool {
    matches!(e, Expr::Bracket(_) | Expr::Eps(_)) || e.children().into_iter().any(has_brackets)
}

/// `g` (optimised from `f`) with the gathers of `f` it lost (dead code
/// removed, a false bracket's factor dropped) put back in a `let` of its
/// own, unused: `let keep0 = gen(i:n) E[tok[i], 0] in …`. The call checks
/// the integer arrays against every gather of the program it runs
/// ([`crate::interp::gather`]), so a lost gather would let the optimised
/// program accept a call the written one refuses. `g` itself when nothing
/// was lost (or the `let` would not type-check).
fn keep_gathers(f: &Function, g: Function) -> Function {
    use crate::extract::normal::{fv_idx, type_of, Cx};
    use crate::interp::gather::sites;
    let have = sites(&g);
    if sites(f).iter().all(|s| have.contains(s)) {
        return g;
    }
    // the access chains holding a gather, with the ranges of the indices
    // in scope
    fn chains(
        e: &Expr,
        scope: &mut Vec<(String, Size)>,
        out: &mut Vec<(Expr, Vec<(String, Size)>)>,
    ) {
        match e {
            Expr::Gen(i, n, b) | Expr::Sum(i, n, b) | Expr::Reduce(_, i, n, b) => {
                scope.push((i.clone(), n.clone()));
                chains(b, scope, out);
                scope.pop();
            }
            // a fold's index is in scope in its body (a gather there reads
            // at it), not in its initial value
            Expr::Fold(i, n, _, init, b) => {
                chains(init, scope, out);
                scope.push((i.clone(), n.clone()));
                chains(b, scope, out);
                scope.pop();
            }
            Expr::Access(..) | Expr::Gather(..) | Expr::Proj(..) => {
                let mut c = e;
                loop {
                    match c {
                        Expr::Gather(..) => {
                            out.push((e.clone(), scope.clone()));
                            return;
                        }
                        Expr::Access(b, _) | Expr::Proj(_, b) => c = b,
                        _ => break,
                    }
                }
                e.children().into_iter().for_each(|c| chains(c, scope, out));
            }
            _ => e.children().into_iter().for_each(|c| chains(c, scope, out)),
        }
    }
    let mut found = Vec::new();
    chains(&f.body, &mut Vec::new(), &mut found);
    let mut body = g.body.clone();
    let mut k = 0;
    for (chain, scope) in found {
        let one = Function {
            body: chain.clone(),
            ..f.clone()
        };
        if sites(&one).iter().all(|s| have.contains(s)) {
            continue;
        }
        // a number: the chain at fresh indices over its remaining axes
        // (the first component of a pair)
        let mut e = chain;
        let mut gens: Vec<(String, Size)> = Vec::new();
        for _ in 0..64 {
            let mut cx = Cx::of(f);
            cx.idx = scope.clone();
            match type_of(&e, &mut cx) {
                Type::Tensor(n, _) => {
                    let q = format!("keep_i{}", gens.len());
                    e = Expr::access(e, Affine::var(q.clone()));
                    gens.push((q, n));
                }
                Type::Pair(..) => e = Expr::proj(0, e),
                _ => break,
            }
        }
        let free = fv_idx(&e);
        for (q, n) in gens.into_iter().rev() {
            e = Expr::gen(q, n, e);
        }
        // the free indices, outermost first, each at its innermost range
        let mut seen = Vec::new();
        for (i, n) in scope.iter().rev() {
            if free.contains(i) && !seen.contains(i) {
                seen.push(i.clone());
                e = Expr::gen(i.clone(), n.clone(), e);
            }
        }
        let name = loop {
            let x = format!("keep{k}");
            k += 1;
            if !f.params.iter().any(|p| p.name == x) {
                break x;
            }
        };
        body = Expr::let_(name, e, body);
    }
    let kept = Function { body, ..g.clone() };
    if types::check(&kept).is_ok() && crate::extract::is_normal(&kept) {
        kept
    } else {
        g
    }
}

/// Whether the body holds a gather (`E[tok[i]]`).
fn has_gather(e: &Expr) -> bool {
    let mut todo = vec![e];
    while let Some(e) = todo.pop() {
        if matches!(e, Expr::Gather(..)) {
            return true;
        }
        todo.extend(e.children());
    }
    false
}

/// The default memory limit: the largest argument or result, or 2^27
/// elements, whichever is larger (sizes estimated with `model`).
fn default_memory_limit(f: &Function, ret: &Type, model: &CostModel) -> f64 {
    fn elements(t: &Type, model: &CostModel) -> f64 {
        match t {
            Type::Real | Type::Int => 1.0,
            Type::Tensor(n, e) => model.trip(n) * elements(e, model),
            Type::Pair(a, b) => elements(a, model).max(elements(b, model)),
        }
    }
    f.params
        .iter()
        .map(|p| elements(&p.ty, model))
        .chain(std::iter::once(elements(ret, model)))
        .fold((1u64 << 27) as f64, f64::max)
}

/// How accurate the chosen program is, against the written one (the
/// default mode's accuracy check, [`crate::extract::accuracy`]).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Accuracy {
    /// The written program's average bits of error on the samples.
    pub written_bits: f64,
    /// The chosen program's.
    pub chosen_bits: f64,
    /// Candidates refused as much less accurate than the written program.
    pub refused: usize,
}

/// The default mode's weighing of candidates by their accuracy; in the
/// fast mode, or where the program is too large to sample, a candidate's
/// weight is its cost.
struct Judge {
    reference: Option<crate::extract::accuracy::Reference>,
    /// Error per candidate (by its text).
    cache: BTreeMap<String, Option<crate::extract::accuracy::Loss>>,
    refused: usize,
}

impl Judge {
    fn new(f: &Function, fast: bool, precision: crate::precision::Precision) -> Judge {
        let reference = if fast {
            None
        } else {
            crate::extract::accuracy::Reference::of_in(f, precision)
        };
        // the written program's error is the reference's own: a candidate
        // that prints as the written program is not run again
        let cache = reference
            .as_ref()
            .map(|r| (crate::syntax::print_function(f), Some(r.written_loss())))
            .into_iter()
            .collect();
        Judge {
            reference,
            cache,
            refused: 0,
        }
    }

    fn loss(&mut self, g: &Function) -> Option<crate::extract::accuracy::Loss> {
        let r = self.reference.as_ref()?;
        *self
            .cache
            .entry(crate::syntax::print_function(g))
            .or_insert_with(|| r.loss(g))
    }

    /// The weighed cost of a candidate; `None` when it is refused (much
    /// less accurate than the written program, or unable to run on the
    /// samples the written program runs on).
    fn weigh(&mut self, cost: f64, g: &Function) -> Option<f64> {
        if self.reference.is_none() {
            return Some(cost);
        }
        let w = self
            .loss(g)
            .and_then(|l| self.reference.as_ref()?.weigh(cost, l));
        if w.is_none() {
            self.refused += 1;
        }
        w
    }
}

/// Optimise one function.
pub fn optimize(f: &Function, opts: &Options) -> Result<Optimized> {
    // deep programs (long flat chains) get a large stack for every pass
    crate::stack::roomy_for(&f.body, || optimize_here(f, opts))
}

/// One function's optimisation as JSON: the object `einsat opt --json`
/// prints for each function and the Python `Kernel.report` holds (one
/// definition, so the two cannot drift apart).
///
/// Fields: `name`, `mode` (`value-safe` or `fast-math`), `input` and
/// `output` (program text), `cost_before`,
/// `cost_after`, `egraph_nodes`, `egraph_classes`, `iterations`,
/// `stop_reason`, `limits_hit`, `optimize_ms`, `saturation_ms`,
/// `optimize_cpu_ms`, `rounds` (one object per saturation round, see
/// [`RoundStats`]), `chosen`, `rules_fired`, `memory_limit`, `plans` (see
/// [`plan_json`]), `accuracy` (see [`Accuracy`];
/// null in the fast mode), `accuracy_note` when the check could not run,
/// Rewrite rules that only reorder (commutativity, associativity): a run of
/// them is one "reordered" step of an explanation.
fn reorders(rule: &str) -> bool {
    ["-comm", "-assoc", "-assoc-rev"]
        .iter()
        .any(|s| rule.ends_with(s))
}

fn reordered(steps: usize) -> String {
    match steps {
        1 => "reordered (1 step of commutativity or associativity)".into(),
        k => format!("reordered ({k} steps of commutativity or associativity)"),
    }
}

/// An explanation (egg's proof that the written term equals the extracted
/// one) in the surface syntax: the written term, then each step as the
/// rule's name, where it is defined and the term after it; runs of steps
/// that only reorder sums and products are one line.
fn explain_surface(
    ex: &mut egg::Explanation<TL>,
    rules: &[Rule],
    leaves: &BTreeMap<String, TL>,
    round: usize,
) -> Vec<String> {
    let flat = ex.make_flat_explanation().clone();
    let show = |t: &egg::FlatTerm<TL>| {
        let rec: egg::RecExpr<TL> = t
            .get_recexpr()
            .as_ref()
            .iter()
            .map(|n| match n {
                TL::Var(v) => leaves.get(v.as_str()).cloned().unwrap_or_else(|| n.clone()),
                _ => n.clone(),
            })
            .collect::<Vec<_>>()
            .into();
        crate::syntax::printer::print_expr(&from_rec(&rec))
    };
    // the rule a step applies: at the node carrying it (forwards or backwards)
    fn rule_of(t: &egg::FlatTerm<TL>) -> Option<(String, bool)> {
        if let Some(r) = t.forward_rule {
            return Some((r.to_string(), false));
        }
        if let Some(r) = t.backward_rule {
            return Some((r.to_string(), true));
        }
        t.children.iter().find_map(rule_of)
    }
    let mut out = Vec::new();
    let Some(first) = flat.first() else {
        return out;
    };
    out.push(format!("round {}, written: {}", round + 1, show(first)));
    let mut reordering = 0usize;
    for k in 1..flat.len() {
        let (rule, backwards) = rule_of(&flat[k]).unwrap_or_else(|| ("?".into(), false));
        if reorders(&rule) {
            reordering += 1;
            if k + 1 < flat.len() {
                continue;
            }
            out.push(format!("{}: {}", reordered(reordering), show(&flat[k])));
            break;
        }
        if reordering > 0 {
            out.push(format!("{}: {}", reordered(reordering), show(&flat[k - 1])));
            reordering = 0;
        }
        let origin = rules
            .iter()
            .find(|r| r.name == rule)
            .map_or(String::new(), |r| format!(" ({})", r.origin));
        let dir = if backwards { ", right to left" } else { "" };
        out.push(format!("{rule}{origin}{dir}: {}", show(&flat[k])));
    }
    out
}

/// and `explanation` only when [`Options::explain`] was set.
pub fn report_json(f: &Function, o: &Optimized) -> serde_json::Value {
    use crate::syntax::print_function;
    let r = &o.report;
    let mut j = serde_json::json!({
        "name": f.name,
        "mode": r.mode,
        "input": print_function(f),
        "output": print_function(&o.program),
        "cost_before": o.cost_before,
        "cost_after": o.cost_after,
        "egraph_nodes": r.egraph_nodes,
        "egraph_classes": r.egraph_classes,
        "iterations": r.iterations,
        "stop_reason": r.stop_reason,
        "limits_hit": r.limits_hit,
        "optimize_ms": r.total_seconds * 1e3,
        "saturation_ms": r.saturation_seconds * 1e3,
        "optimize_cpu_ms": r.cpu_seconds * 1e3,
        "rounds": r.round_stats,
        "chosen": r.chosen,
        "rules_fired": r.rules_fired,
        "accuracy": r.accuracy,
        "memory_limit": r.memory_limit,
        "plans": r.plans.iter().map(plan_json).collect::<Vec<_>>(),
    });
    if let Some(n) = &r.accuracy_note {
        j["accuracy_note"] = serde_json::json!(n);
    }
    if let Some(ex) = &r.explanation {
        j["explanation"] = serde_json::json!(ex);
    }
    j
}

/// One planned network as JSON: its tensors and index names, the plan's
/// method, totals and steps (numpy's linear path form, and per step the
/// indices kept and summed, by name, its multiply-adds and the size of
/// what it makes).
pub fn plan_json(n: &seed::PlannedNetwork) -> serde_json::Value {
    let p = &n.plan;
    let names =
        |ids: &[usize]| -> Vec<String> { ids.iter().map(|&i| n.indices[i].clone()).collect() };
    let steps: Vec<serde_json::Value> = p
        .steps
        .iter()
        .map(|s| {
            serde_json::json!({
                "operands": s.operands,
                "kept": names(&s.kept),
                "summed": names(&s.summed),
                "flops": s.flops,
                "flops_opt_einsum": s.flops_opt_einsum,
                "size": s.size,
            })
        })
        .collect();
    serde_json::json!({
        "tensors": n.tensors,
        "method": format!("{:?}", p.method),
        "flops": p.flops,
        "flops_opt_einsum": p.flops_opt_einsum,
        "largest_intermediate": p.largest_intermediate,
        "memory_limit": p.memory_limit,
        "sliced": names(&p.sliced),
        "slices": p.slices,
        "path": p.linear_path(),
        "steps": steps,
        "planning_ms": p.seconds * 1e3,
    })
}

/// CPU time of the calling thread, in seconds.
pub fn thread_cpu_seconds() -> f64 {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes one timespec through a valid pointer.
        let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        if r == 0 {
            return ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9;
        }
    }
    0.0
}

/// The best candidate so far: (weighed cost, cost, program, which
/// candidate it is: `post-pass`, `input`, `plan`, `path`, `egraph`).
type Best = Option<(f64, f64, Function, &'static str)>;

/// Keep candidate `g` (weighed cost `w`, cost `c`) if it weighs less than
/// the best so far (or as much, with `ties`); says whether it was kept.
fn offer(best: &mut Best, w: f64, c: f64, g: Function, how: &'static str, ties: bool) -> bool {
    let kept = best
        .as_ref()
        .is_none_or(|(w0, ..)| if ties { w <= *w0 } else { w < *w0 });
    if kept {
        *best = Some((w, c, g, how));
    }
    kept
}

/// What every stage of one optimisation shares.
struct Setup<'a> {
    opts: &'a Options,
    /// The input's result type (inferred where it was left out).
    ret: Type,
    /// The input with that result type.
    fixed: Function,
    model: CostModel,
    nopts: NormalOptions,
    fast: bool,
    deadline: Instant,
}

impl<'a> Setup<'a> {
    fn new(f: &Function, ret: &Type, opts: &'a Options, start: Instant) -> Setup<'a> {
        let model = CostModel {
            sizes: opts.sizes.clone(),
            ..CostModel::default()
        };
        let fixed = Function {
            ret: Some(ret.clone()),
            ..f.clone()
        };
        let memory_limit = opts
            .memory_limit
            .unwrap_or_else(|| default_memory_limit(&fixed, ret, &model));
        let nopts = NormalOptions {
            term_limit: opts.term_limit,
            gemm_stage_min_work: opts.gemm_stage_min_work,
            model: model.clone(),
            memory_limit,
            ..NormalOptions::default()
        };
        Setup {
            opts,
            ret: ret.clone(),
            fixed,
            model,
            nopts,
            // (integers: the fast mode's extras are not checked in
            // wrapping arithmetic)
            fast: opts.fast_math && !opts.precision.is_int(),
            deadline: start + opts.time_limit,
        }
    }

    /// `body` with the input's signature.
    fn with_body(&self, body: Expr) -> Function {
        Function {
            body,
            ..self.fixed.clone()
        }
    }

    /// The candidates that need no search: the pre-pass' program in normal
    /// form, and the input itself when it already is in normal form.
    fn plain_candidates(&self, pre: &Expr, judge: &mut Judge) -> Best {
        let mut best = None;
        let p0 = normalize(&self.with_body(pre.clone()), &self.nopts);
        if same_sig(&p0, &self.ret) {
            let c = ir_cost(&p0.body, &self.model);
            if let Some(w) = judge.weigh(c, &p0) {
                offer(&mut best, w, c, p0, "post-pass", false);
            }
        }
        if crate::extract::is_normal(&self.fixed) {
            let c = ir_cost(&self.fixed.body, &self.model);
            let g = crate::extract::normal::pretty_names(&self.fixed);
            if let Some(w) = judge.weigh(c, &g) {
                offer(&mut best, w, c, g, "input", false);
            }
        }
        best
    }

    /// The planned contraction order of every tensor network of the body
    /// (the caller's path where one is given): the body with its networks
    /// nested in that order, and the plans; `None` without a network.
    fn planned(&self, pre: &Expr) -> Result<Option<(Expr, Vec<seed::PlannedNetwork>)>> {
        let opts = self.opts;
        let popts = crate::plan::Options {
            method: opts.plan,
            memory_limit: crate::plan::MemoryLimit::Elements(self.nopts.memory_limit.max(1.0)),
            ..crate::plan::Options::default()
        };
        let mut plan_error: Option<crate::plan::PlanError> = None;
        let mut given = opts.path.clone();
        let planned = {
            let mut planner = |net: &crate::plan::Network| match given.take() {
                Some(path) => crate::plan::plan_path(net, &path, &popts)
                    .map_err(|e| plan_error = Some(e))
                    .ok(),
                None => crate::plan::plan(net, &popts).ok(),
            };
            let min = if opts.path.is_some() { 2 } else { 3 };
            let model = &self.model;
            seed::planned_body(pre, &self.ret, &|s| model.trip(s) as u64, &mut planner, min)
        };
        if let Some(e) = plan_error {
            return Err(Error::Plan(e.to_string()));
        }
        if opts.path.is_some() && planned.is_none() {
            return Err(Error::Plan(
                "a contraction path was given, but the program has no product of tensors to contract"
                    .into(),
            ));
        }
        Ok(planned)
    }

    /// Offer the planned body as a candidate (the only one, when the
    /// caller gave the path).
    fn offer_planned(&self, body: &Expr, judge: &mut Judge, best: &mut Best) {
        let g = normalize(&self.with_body(body.clone()), &self.nopts);
        if !same_sig(&g, &self.ret) {
            return;
        }
        let c = ir_cost(&g.body, &self.model);
        if self.opts.path.is_some() {
            // the caller's order, as given: no other candidate
            *best = Some((c, c, g, "path"));
        } else if let Some(w) = judge.weigh(c, &g) {
            offer(best, w, c, g, "plan", false);
        }
    }

    /// Whether the body's networks are contracted as planned, without
    /// saturation (a given path, or a network too large to saturate).
    fn planned_only(&self, pre: &Expr, largest_network: usize) -> bool {
        self.opts.path.is_some()
            || (!self.opts.saturate_networks
                && (largest_network > SATURATE_MAX_TENSORS
                    || (largest_network > SATURATE_PLAIN_MAX_TENSORS && !has_brackets(pre))))
    }

    /// The rules of this mode and their rewrites: the given ones or the
    /// built-in ones ([`builtin_rewrites`]), the default mode keeping only
    /// those its floating-point contract allows.
    fn rules(&self) -> Result<std::borrow::Cow<'static, Rewrites>> {
        use std::borrow::Cow;
        let int = self.opts.precision.is_int();
        match &self.opts.rules {
            None if int => Ok(Cow::Borrowed(builtin_int_rewrites())),
            None => Ok(Cow::Borrowed(builtin_rewrites(self.fast))),
            Some(r) if int => {
                let rules: Vec<Rule> = r.iter().filter(|r| r.int_admitted()).cloned().collect();
                let rws = rewrites(&rules)?;
                Ok(Cow::Owned(Rewrites { rules, rws }))
            }
            Some(r) => {
                let rules: Vec<Rule> = r
                    .iter()
                    .filter(|r| self.fast || r.class.safe())
                    .cloned()
                    .collect();
                let rws = rewrites(&rules)?;
                Ok(Cow::Owned(Rewrites { rules, rws }))
            }
        }
    }

    /// The round's program extracted from the e-graph, in normal form, and
    /// its cost (in fast mode the cheapest of it, its arithmetic
    /// simplified and its sums fused); `None` if it lost the signature.
    fn round_candidate(&self, term: &RecExpr<TL>) -> Option<(f64, Function)> {
        let p1 = normalize(&self.with_body(from_rec(term)), &self.nopts);
        if !same_sig(&p1, &self.ret) {
            return None;
        }
        let mut c1 = ir_cost(&p1.body, &self.model);
        let mut p1 = p1;
        if self.fast {
            if let Some((c, g)) = poly_candidate(&p1, &self.ret, &self.model) {
                if c < c1 {
                    (c1, p1) = (c, g);
                }
            }
            for (c, g) in fused_candidates(&p1, &self.ret, &self.model, &self.nopts) {
                if c < c1 {
                    (c1, p1) = (c, g);
                }
            }
        }
        Some((c1, p1))
    }
}

/// Rules and their egg rewrites, in the same order.
#[derive(Clone)]
struct Rewrites {
    rules: Vec<Rule>,
    rws: Vec<egg::Rewrite<TL, TlAnalysis>>,
}

/// The built-in rules of a mode (all of them in fast mode, else those the
/// floating-point contract allows) and their rewrites, built once per
/// process: parsing the rule files and compiling their patterns took an
/// eighth of an optimisation's time when every call did it.
fn builtin_rewrites(fast: bool) -> &'static Rewrites {
    static CACHE: [std::sync::OnceLock<Rewrites>; 2] =
        [std::sync::OnceLock::new(), std::sync::OnceLock::new()];
    CACHE[usize::from(fast)].get_or_init(|| {
        let rules: Vec<Rule> = builtin_rules()
            .into_iter()
            .filter(|r| fast || r.class.safe())
            .collect();
        let rws = rewrites(&rules).expect("built-in rules compile");
        Rewrites { rules, rws }
    })
}

/// The built-in rules admitted in the integer formats
/// ([`Rule::int_admitted`], whatever their floating-point class: a ring
/// identity such as `(a + b) + c = a + (b + c)` is exact in wrapping
/// integers) and their rewrites, built once.
fn builtin_int_rewrites() -> &'static Rewrites {
    static CACHE: std::sync::OnceLock<Rewrites> = std::sync::OnceLock::new();
    CACHE.get_or_init(|| {
        let rules: Vec<Rule> = builtin_rules()
            .into_iter()
            .filter(Rule::int_admitted)
            .collect();
        let rws = rewrites(&rules).expect("built-in rules compile");
        Rewrites { rules, rws }
    })
}

/// What the saturation rounds carry from one to the next.
#[derive(Default)]
struct Rounds {
    /// The most reduced tensor network of the last round, as a seed (and
    /// the next round's start when the round did not improve).
    extra: Vec<Expr>,
    /// Reduced networks and restarts already tried.
    seen: std::collections::BTreeSet<String>,
    /// Seeds already added to an e-graph.
    seeded: std::collections::BTreeSet<String>,
    /// `--explain`'s steps so far.
    explanation: Vec<String>,
    /// Terms extracted so far and their round candidates with the next
    /// round's start ([`Setup::round_candidate_memo`]).
    candidates: Vec<(RecExpr<TL>, Option<RoundCandidate>)>,
}

/// A round's candidate: its cost, its program, and the pre-pass of that
/// program (the next round's start).
type RoundCandidate = (f64, Function, Expr);

impl Setup<'_> {
    /// The saturation rounds: each saturates from the previous round's
    /// program (and its contraction-order seeds), so that a rewrite chain
    /// longer than one saturation reaches can continue; stop when a round
    /// does not improve or the time is spent.
    #[allow(clippy::too_many_arguments)]
    fn saturation_rounds(
        &self,
        f: &Function,
        mut pre: Expr,
        planned: Option<&Expr>,
        written_limit: usize,
        judge: &mut Judge,
        best: &mut Best,
        report: &mut Report,
    ) -> Result<()> {
        let opts = self.opts;
        let rw = self.rules()?;
        let (rules, rws) = (&rw.rules, &rw.rws);
        let analysis = TlAnalysis::of_in(f, opts.precision);
        let mut st = Rounds::default();
        for round in 0..MAX_ROUNDS {
            let now = Instant::now();
            if round > 0 && now >= self.deadline {
                report.note(format!(
                    "time limit ({}s) before round {}",
                    opts.time_limit.as_secs_f64(),
                    round + 1
                ));
                break;
            }
            // The first round starts from the tensor network reduced by the
            // δ/ε identities when they apply (see seed::reduce_body).
            if round == 0 {
                if let Some(r) = seed::reduce_body(&pre, &self.ret, !self.fast) {
                    pre = if self.fast {
                        crate::egraph::poly::simplify(&r)
                    } else {
                        r
                    };
                }
            }
            let Ok(rec) = to_rec(&pre) else { break };
            let seeds = self.round_seeds(round, &pre, planned, &mut st);
            let limits = Limits {
                node_limit: opts.node_limit,
                iter_limit: opts.iter_limit,
                time_limit: self
                    .deadline
                    .saturating_duration_since(now)
                    .max(Duration::from_millis(1)),
                explain: opts.explain,
                backoff: opts.backoff,
            };
            let (mut runner, stats) = saturate(&rec, &seeds, analysis.clone(), rws, &limits);
            record_round(report, round, stats);
            let root = runner.roots[0];
            let Some((c, term)) = extract_best(&runner.egraph, root, &self.model, opts.extraction)
            else {
                report.note(format!("round {}: extraction failed", round + 1));
                break;
            };
            let written = tree_size(&term);
            if written > written_limit {
                report.note(format!(
                    "term limit ({written_limit}): round {} extracted a term of {written} nodes written out",
                    round + 1
                ));
                break;
            }
            report.extracted_cost = c;
            if opts.explain {
                st.explanation
                    .extend(explain_round(&mut runner, &rec, &term, rules, round));
            }
            // The most reduced tensor network seeds the next round.
            let reduced = extract_reduced(&runner.egraph, root, &self.model)
                .filter(|r| tree_size(r) <= written_limit);
            st.extra.clear();
            if let Some(reduced) = reduced {
                if reduced != term && st.seen.insert(reduced.to_string()) {
                    let fr = self.with_body(from_rec(&reduced));
                    st.extra.push(prepass(&fr, opts.term_limit, self.fast));
                }
            }
            let Some((c1, p1, next)) = self.round_candidate_memo(&term, &mut st) else {
                break;
            };
            let w1 = judge.weigh(c1, &p1);
            let improved = w1.is_some_and(|w| best.as_ref().is_none_or(|(w0, ..)| w < *w0));
            if let Some(w) = w1 {
                offer(best, w, c1, p1.clone(), "egraph", true);
            }
            // Next round: from the improved program (seeded also with the
            // reduced network), or else from the reduced network alone.
            // A program that is no cheaper but different (the post-pass
            // rebinds an index whose range changed, which the e-graph can
            // then collapse) also gets a round when nothing else does.
            if improved {
                pre = next;
            } else if let Some(r) = st.extra.pop() {
                pre = r;
            } else if next != pre && st.seen.insert(format!("{next:?}")) {
                pre = next;
            } else {
                break;
            }
        }
        if opts.explain {
            report.explanation = Some(st.explanation);
        }
        Ok(())
    }

    /// [`Setup::round_candidate`] of `term` and the pre-pass of its program
    /// (the next round's start), computed once per term: a later round
    /// often extracts the same term again, and both are functions of the
    /// term alone (its numbers compared by their bits).
    fn round_candidate_memo(&self, term: &RecExpr<TL>, st: &mut Rounds) -> Option<RoundCandidate> {
        if let Some((_, c)) = st.candidates.iter().find(|(t, _)| t == term) {
            return c.clone();
        }
        let c = self.round_candidate(term).map(|(c1, p1)| {
            let next = prepass(&p1, self.opts.term_limit, self.fast);
            (c1, p1, next)
        });
        st.candidates.push((term.clone(), c.clone()));
        c
    }

    /// The seeds of a round, each added to an e-graph once: in the first
    /// round every nesting of the body's networks and the planned body;
    /// later rounds start from a program extracted from an e-graph that
    /// already held every nesting of its networks, so only the reduced
    /// network's nestings are new.
    fn round_seeds(
        &self,
        round: usize,
        pre: &Expr,
        planned: Option<&Expr>,
        st: &mut Rounds,
    ) -> Vec<RecExpr<TL>> {
        let mut seed_exprs = if round == 0 {
            let mut v = seed::body_seeds(pre, &self.ret, !self.fast);
            v.extend(planned.cloned());
            v
        } else {
            vec![]
        };
        for e in &st.extra {
            seed_exprs.push(e.clone());
            seed_exprs.extend(seed::body_seeds(e, &self.ret, !self.fast));
        }
        seed_exprs
            .iter()
            .filter_map(|e| to_rec(e).ok())
            .filter(|r| st.seeded.insert(r.to_string()))
            .collect()
    }
}

/// Add a round's statistics to the report.
fn record_round(report: &mut Report, round: usize, stats: crate::egraph::saturate::SatStats) {
    report.rounds += 1;
    report.round_stats.push(RoundStats {
        nodes: stats.nodes,
        classes: stats.classes,
        iterations: stats.iterations,
        stop_reason: stats.stop_reason.clone(),
        ms: stats.seconds * 1e3,
    });
    report.egraph_nodes = report.egraph_nodes.max(stats.nodes);
    report.egraph_classes = report.egraph_classes.max(stats.classes);
    report.iterations += stats.iterations;
    if stats.stop_reason.contains("limit") {
        report.note(format!("round {}: {}", round + 1, stats.stop_reason));
    }
    if round == 0 || stats.stop_reason.contains("limit") {
        report.stop_reason = stats.stop_reason;
    }
    report.saturation_seconds += stats.seconds;
    for (k, v) in stats.fired {
        *report.rules_fired.entry(k).or_insert(0) += v;
    }
}

/// `--explain`'s steps of a round: how the e-graph proved `rec` equal to
/// the extracted `term`, in the surface syntax.
fn explain_round(
    runner: &mut egg::Runner<TL, TlAnalysis>,
    rec: &RecExpr<TL>,
    term: &RecExpr<TL>,
    rules: &[Rule],
    round: usize,
) -> Vec<String> {
    // egg rebuilds a proof's leaves from their text: the index and
    // predicate leaves come back as names, mapped here to the leaves they
    // print as
    let leaves: BTreeMap<String, TL> = runner
        .egraph
        .classes()
        .flat_map(|c| c.nodes.iter())
        .filter(|n| matches!(n, TL::Aff(_) | TL::Pred(_)))
        .map(|n| (n.to_string(), n.clone()))
        .collect();
    let mut ex = runner.explain_equivalence(rec, term);
    explain_surface(&mut ex, rules, &leaves, round)
}

fn optimize_here(f: &Function, opts: &Options) -> Result<Optimized> {
    let start = Instant::now();
    let cpu_start = thread_cpu_seconds();
    let sig = types::check(f).map_err(Error::types)?;
    // integer formats: only integral programs, and only the structural
    // passes (see `Options::precision`)
    let int = opts.precision.is_int();
    if int {
        types::integral(f, None, opts.precision).map_err(Error::types)?;
    }
    let s = Setup::new(f, &sig.ret, opts, start);
    let cost_before = ir_cost(&f.body, &s.model);
    let mut report = Report {
        mode: opts.mode().to_string(),
        memory_limit: s.nopts.memory_limit,
        ..Report::default()
    };
    let pre = prepass(&s.fixed, opts.term_limit, s.fast);
    // a term read out of the e-graph may be as large as the term limit or
    // the pre-pass' program, whichever is larger
    let written_limit = opts.term_limit.max(pre.size());
    let kept = count_lets(&pre);
    if kept > 0 {
        report.note(format!(
            "term limit ({}): {kept} let(s) kept, as inlining them would exceed it",
            opts.term_limit
        ));
    }
    // In the default mode every candidate is weighed by its accuracy
    // against the written program's (see `extract::accuracy`).
    // (integers: every candidate is exact, there is no accuracy to weigh)
    let mut judge = Judge::new(&s.fixed, s.fast || int, opts.precision);
    if !s.fast && !int && judge.reference.is_none() {
        report.accuracy_note = Some(format!(
            "not measured: sampling the program (named sizes {}) takes more than {} steps of the interpreter",
            crate::extract::accuracy::SAMPLE_SIZE,
            crate::extract::accuracy::WORK_BUDGET
        ));
    }
    let mut best = s.plain_candidates(&pre, &mut judge);
    // The planned contraction order of every tensor network of the body:
    // a candidate of its own and a seed of the first round.
    // (contraction orders regroup sums of products: exact in any
    // commutative ring, so in wrapping integers too)
    let planned = s.planned(&pre)?;
    if let Some((body, plans)) = &planned {
        report.plans = plans.clone();
        s.offer_planned(body, &mut judge, &mut best);
    }
    let largest_network = report
        .plans
        .iter()
        .map(|p| p.plan.inputs)
        .max()
        .unwrap_or(0);
    let planned_only = s.planned_only(&pre, largest_network);
    if opts.saturate && planned_only {
        report.stop_reason = format!(
            "not saturated: a network of {largest_network} tensors is contracted as planned"
        );
    }
    // a gather's index is not affine: the e-graph does not take it (the
    // post-pass' program, or the input, is the result)
    let gathers = has_gather(&pre);
    if opts.saturate && gathers {
        report.stop_reason = "not saturated: the program has a gather".to_string();
    }
    if opts.saturate && !planned_only && !gathers {
        let planned_body = planned.as_ref().map(|(b, _)| b);
        s.saturation_rounds(
            f,
            pre,
            planned_body,
            written_limit,
            &mut judge,
            &mut best,
            &mut report,
        )?;
    }
    let (cost_after, program, chosen) = match best {
        // every gather of the input must stay: the call's check of the
        // integer arrays follows the program's gathers, so that the
        // interpreter on the input and the JIT on the result refuse the
        // same calls
        Some((_, c, g, how)) if has_gather(&s.fixed.body) => (c, keep_gathers(&s.fixed, g), how),
        Some((_, c, g, how)) => (c, g, how),
        None => (cost_before, s.fixed, "input"),
    };
    report.chosen = chosen.to_string();
    if !crate::extract::is_normal(&program) {
        // (every candidate is normalised; only the written program, kept
        // when none type-checks, can be out of normal form)
        report.note(
            "normal form not reached: no normalised program type-checked, so the written one is \
             kept; the JIT cannot compile it (the interpreter runs it)"
                .to_string(),
        );
    }
    if let Some(written_bits) = judge.reference.as_ref().map(|r| r.written_bits) {
        // to a thousandth of a bit: a statistic, and a decimal that reads
        // back exactly from JSON
        let round = |b: f64| (b * 1e3).round() / 1e3;
        report.accuracy = Some(Accuracy {
            written_bits: round(written_bits),
            chosen_bits: round(judge.loss(&program).map_or(written_bits, |l| l.bits)),
            refused: judge.refused,
        });
    }
    report.total_seconds = start.elapsed().as_secs_f64();
    report.cpu_seconds = thread_cpu_seconds() - cpu_start;
    // integer arithmetic on index values as the parser reads it back
    let program = Function {
        body: crate::syntax::fold_index_values(program.body),
        ..program
    };
    Ok(Optimized {
        program,
        cost_before,
        cost_after,
        report,
    })
}
