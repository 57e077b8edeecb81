//! Differential testing as a product feature (issue 5): the harness of
//! `einsat::testing::difftest`, the `einsat difftest` command, feature
//! knobs of the generator, and the pipeline fuzz target's kept corpus.
#![cfg(feature = "cli")] // runs the `einsat` binary

use crate::common;

use common::tmpdir;
use einsat::interp::{self, Value};
use einsat::rules::{builtin_rules, parse_rules_with, RuleCheck};
use einsat::syntax::{print_function, Expr};
use einsat::testing::difftest::{
    arb_case, arb_inputs, case_from_seed, check, run, shrink_case, write_reproducer, Case,
    DiffConfig, Stage, Tolerance, Verdict,
};
use einsat::testing::{gen_function, gen_function_with, ByteRng, GenConfig, Layout};
use std::path::Path;

fn einsat(args: &[&str], dir: &Path) -> (i32, String, String) {
    common::einsat_in(dir, args)
}

/// The broken rule of the example: beta-reduction of a gen access
/// without its zero-padding guard.
const BROKEN: &str = "get-gen-unguarded [exact]: (get (gen ?n ?e) ?a) => (@subst ?e ?a)\n";

fn broken_config() -> DiffConfig {
    let mut rules = builtin_rules();
    // the check on load would refuse it: skip it to difftest the rule
    rules.extend(parse_rules_with("bad.rules", BROKEN, &RuleCheck::skip()).unwrap());
    let mut cfg = DiffConfig::default();
    cfg.opt.rules = Some(rules);
    cfg
}

#[test]
fn built_in_pipeline_agrees_on_random_programs() {
    let s = run(&DiffConfig::default(), 11, 300, 2, 1, &|_, _| {});
    assert_eq!(s.cases, 300);
    assert_eq!(
        s.disagreeing,
        0,
        "{:?}",
        s.disagreements
            .first()
            .map(|d| print_function(&d.shrunk.function))
    );
    // results and lets holding tensors of pairs are carried as struct of
    // arrays, so the JIT leg ran on every case
    assert_eq!(s.jit_cases, 300, "skipped: {:?}", s.jit_skipped);
    assert!(s.jit_skipped.is_empty(), "{:?}", s.jit_skipped);
}

#[test]
fn broken_rule_is_caught_with_a_small_reproducer() {
    let cfg = broken_config();
    let s = run(&cfg, 1, 500, 2, 1, &|_, _| {});
    assert!(s.disagreeing > 0, "the broken rule went unnoticed");
    let d = &s.disagreements[0];
    assert_eq!(d.failure.stage, Stage::OptInterp);
    assert!(
        d.shrunk.function.body.size() <= 8,
        "not minimal: {}",
        print_function(&d.shrunk.function)
    );
    assert!(d.shrunk.function.body.size() <= d.original.function.body.size());
    // the shrunk case still disagrees, and only because of the broken rule
    assert!(matches!(check(&d.shrunk, &cfg), Verdict::Disagree(_)));
    assert!(matches!(
        check(&d.shrunk, &DiffConfig::default()),
        Verdict::Agree { .. }
    ));
    // the reproducer holds the program and inputs that `einsat run` takes
    let dir = tmpdir("repro");
    let words = write_reproducer(&d.shrunk, &d.failure, &dir, &[]).unwrap();
    let text = std::fs::read_to_string(dir.join("repro.tl")).unwrap();
    let back = einsat::load(&text).unwrap();
    assert_eq!(back.functions[0], d.shrunk.function);
    let mut args = vec![
        "run", "repro.tl", "--no-opt", "--engine", "interp", "--json",
    ];
    args.extend(words.iter().map(String::as_str));
    let (code, out, err) = einsat(&args, &dir);
    assert_eq!(code, 0, "{err}");
    let want = interp::run(&d.shrunk.function, &d.shrunk.args).unwrap();
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(json["output"], want.to_json(), "{out}");
}

#[test]
fn difftest_command_reports_and_exits_1_on_a_broken_rule() {
    let dir = tmpdir("cli");
    let rules = dir.join("rules");
    std::fs::create_dir_all(&rules).unwrap();
    for entry in std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("rules")).unwrap() {
        let p = entry.unwrap().path();
        std::fs::copy(&p, rules.join(p.file_name().unwrap())).unwrap();
    }
    std::fs::write(rules.join("bad.rules"), BROKEN).unwrap();
    let (code, out, err) = einsat(
        &[
            "difftest",
            "--cases",
            "500",
            "--rules",
            "rules",
            "--no-rule-check",
            "--max-failures",
            "1",
            "--out",
            "fails",
        ],
        &dir,
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("disagrees with the interpreter"), "{out}");
    assert!(err.contains("cases disagree"), "{err}");
    let case = std::fs::read_dir(dir.join("fails"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let repro = std::fs::read_to_string(case.join("repro.tl")).unwrap();
    assert!(repro.contains("--rules"), "{repro}");
    // the commands in the reproducer's comments run and disagree
    let line = |tag: &str| -> Vec<String> {
        let l = repro.lines().find(|l| l.starts_with(tag)).unwrap();
        l.split_once("einsat ")
            .unwrap()
            .1
            .split_whitespace()
            .map(String::from)
            .collect()
    };
    let reference = line("# reference:");
    let jit = line("# JIT:");
    let r1 = einsat(
        &reference.iter().map(String::as_str).collect::<Vec<_>>(),
        &case,
    );
    let r2 = einsat(&jit.iter().map(String::as_str).collect::<Vec<_>>(), &case);
    assert_eq!(r1.0, 0, "{}", r1.2);
    assert_eq!(r2.0, 0, "{}", r2.2);
    assert_ne!(r1.1, r2.1, "reference and JIT agree on the reproducer");
}

#[test]
fn difftest_command_runs_clean_and_prints_counts() {
    let dir = tmpdir("clean");
    let (code, out, err) = einsat(&["difftest", "--cases", "200", "--seed", "5"], &dir);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("difftest: 200 cases (200 also through the JIT, 0 skipped), 0 disagreements"),
        "{out}"
    );
    let (code, _, err) = einsat(&["difftest", "--features", "lets,bogus"], &dir);
    assert_eq!(code, 1);
    assert!(err.contains("unknown feature `bogus`"), "{err}");
}

#[test]
fn shrinking_keeps_the_failure_and_simplifies_inputs() {
    let cfg = broken_config();
    let s = run(&cfg, 1, 500, 1, 1, &|_, _| {});
    let d = &s.disagreements[0];
    // shrinking a shrunk case changes nothing more
    let (again, f2) = shrink_case(&d.shrunk, &d.failure, &cfg);
    assert_eq!(again.function, d.shrunk.function);
    assert_eq!(f2.stage, d.failure.stage);
    assert_eq!(again.layout, Layout::C);
    // inputs end up as simple numbers (0 or 1 where that still fails)
    for a in &again.args {
        if let Value::Array(x) = a {
            assert!(x.iter().all(|v| v.fract() == 0.0), "{a}");
        }
    }
}

fn features_of(e: &Expr, out: &mut Vec<&'static str>) {
    use einsat::syntax::{BinOp, Func};
    // a division's guard `1 + abs(d)` is part of every program's division
    if let Expr::Bin(BinOp::Div, a, b) = e {
        if let Expr::Bin(BinOp::Add, one, g) = &**b {
            if let (Expr::Num(_), Expr::Call(Func::Abs, d)) = (&**one, &**g) {
                features_of(a, out);
                features_of(&d[0], out);
                return;
            }
        }
    }
    let tag = match e {
        Expr::Let(..) => Some("lets"),
        Expr::Bracket(_) => Some("brackets"),
        Expr::Eps(_) => Some("eps"),
        Expr::Call(..) => Some("funcs"),
        Expr::Pair(..) | Expr::Proj(..) => Some("pairs"),
        Expr::Access(_, a) if a.as_var().is_none() && a.as_const().is_none() => Some("affine"),
        _ => None,
    };
    out.extend(tag);
    for c in e.children() {
        features_of(c, out);
    }
}

#[test]
fn feature_knobs_control_what_appears() {
    let none = GenConfig::default().with_features("none").unwrap();
    let all = GenConfig::default().with_features("all").unwrap();
    let mut seen_all = Vec::new();
    for seed in 0..400 {
        let f = gen_function(seed, &none);
        let mut fs = Vec::new();
        features_of(&f.body, &mut fs);
        assert!(fs.is_empty(), "{fs:?} in {}", print_function(&f));
        assert!(f.size_names().is_empty(), "{}", print_function(&f));
        assert!(f.params.iter().all(|p| p.ty.is_pair_free()));
        let g = gen_function(seed, &all);
        features_of(&g.body, &mut seen_all);
        if !g.size_names().is_empty() {
            seen_all.push("named");
        }
    }
    for f in [
        "lets", "brackets", "eps", "funcs", "pairs", "affine", "named",
    ] {
        assert!(seen_all.contains(&f), "{f} never appeared");
    }
    let only = GenConfig::default().with_features("lets").unwrap();
    assert!(only.lets && !only.eps && !only.pairs);
    let minus = GenConfig::default().with_features("all,-eps").unwrap();
    assert!(!minus.eps && minus.lets);
    assert!(GenConfig::default().with_features("wat").is_err());
}

#[test]
fn named_size_knob_and_literal_sizes() {
    let cfg = GenConfig {
        literal_sizes: vec![5],
        named_weight: 1.0,
        ..GenConfig::default()
    };
    for seed in 0..50 {
        let f = gen_function(seed, &cfg);
        assert!(!f.size_names().is_empty(), "{}", print_function(&f));
        let text = print_function(&f);
        assert!(!text.contains(":2)") && !text.contains(":3)"), "{text}");
    }
}

#[test]
fn byte_rng_programs_are_deterministic_and_well_typed() {
    let cfg = GenConfig::default();
    for k in 0u8..200 {
        let bytes: Vec<u8> = (0..64)
            .map(|j| k.wrapping_mul(31).wrapping_add(j * 7))
            .collect();
        let f = gen_function_with(ByteRng::new(&bytes), &cfg);
        assert!(einsat::types::check(&f).is_ok(), "{}", print_function(&f));
        assert_eq!(f, gen_function_with(ByteRng::new(&bytes), &cfg));
    }
    // no input at all is a valid (trivial) program
    let f = gen_function_with(ByteRng::new(&[]), &cfg);
    assert!(einsat::types::check(&f).is_ok());
}

#[test]
fn tolerance_is_relative_and_nan_inf_are_defined() {
    let t = Tolerance::default();
    let r = |x: f64| Value::Real(x);
    assert!(t.agree(&r(1e12), &r(1e12 + 1.0)));
    assert!(!t.agree(&r(1.0), &r(1.001)));
    assert!(t.agree(&r(f64::NAN), &r(f64::NAN)));
    assert!(!t.agree(&r(f64::NAN), &r(1.0)));
    assert!(t.agree(&r(f64::INFINITY), &r(f64::INFINITY)));
    assert!(!t.agree(&r(f64::INFINITY), &r(1e300)));
    assert!(!t.agree(&r(f64::INFINITY), &r(f64::NEG_INFINITY)));
}

#[test]
fn cases_are_deterministic_in_the_seed() {
    let cfg = DiffConfig::default();
    let a: Case = case_from_seed(42, &cfg).unwrap();
    let b = case_from_seed(42, &cfg).unwrap();
    assert_eq!(a.function, b.function);
    assert_eq!(a.layout, b.layout);
    assert!(a
        .args
        .iter()
        .zip(&b.args)
        .all(|(x, y)| x.approx_eq(y, 0.0, 0.0)));
}

/// The pipeline fuzz target's kept corpus (fuzz/regressions/pipeline/).
#[test]
fn pipeline_fuzz_corpus_agrees() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions/pipeline");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        einsat::testing::fuzz_pipeline(&bytes);
        n += 1;
    }
    assert!(n >= 20, "only {n} inputs");
}

proptest::proptest! {
    // (a quarter of a second a case; `einsat difftest`, 10,000 cases in CI,
    // is the run at scale)
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(100))]

    /// The strategies: a case is well-typed, its inputs fit, and the three
    /// engines agree on it (the CI-scale run is `einsat difftest`).
    #[test]
    fn strategies_give_fitting_cases(case in arb_case(DiffConfig::default())) {
        proptest::prop_assert!(einsat::types::check(&case.function).is_ok());
        proptest::prop_assert!(interp::bind(&case.function, &case.args).is_ok());
        let v = check(&case, &DiffConfig::default());
        proptest::prop_assert!(matches!(v, Verdict::Agree { .. }), "{:?}", v);
    }

    /// Inputs in Fortran, sliced and reversed layouts hold the same values.
    #[test]
    fn input_strategy_layouts(
        (sizes, args, layout) in arb_inputs(
            einsat::load("fn f(A: [n,m]R, z: [n](R,R)) -> R = 0").unwrap().functions.remove(0),
            5,
        )
    ) {
        // named sizes may be bound to 0 (GenConfig::zero_sizes is on by default)
        proptest::prop_assert!(sizes["n"] <= 5);
        fn arrays(v: &Value, out: &mut Vec<ndarray::ArrayD<f64>>) {
            match v {
                Value::Array(a) => out.push(a.clone()),
                Value::Pair(a, b) => {
                    arrays(a, out);
                    arrays(b, out);
                }
                Value::Real(_) => {}
            }
        }
        for a in &args {
            let laid = einsat::testing::relayout_value(a, layout);
            proptest::prop_assert!(laid.approx_eq(a, 0.0, 0.0));
            let mut xs = Vec::new();
            arrays(&laid, &mut xs);
            // an empty array has no elements to lay out (ndarray gives it
            // zero strides)
            for x in xs.into_iter().filter(|x| !x.is_empty()) {
                let big: Vec<usize> = (0..x.ndim()).filter(|&k| x.shape()[k] > 1).collect();
                let st = x.strides();
                match layout {
                    Layout::C => proptest::prop_assert!(x.is_standard_layout()),
                    Layout::Fortran => proptest::prop_assert!(x.t().is_standard_layout()),
                    Layout::Sliced => proptest::prop_assert!(big.iter().all(|&k| st[k].abs() >= 2)),
                    Layout::Reversed => proptest::prop_assert!(big.iter().all(|&k| st[k] < 0)),
                }
            }
        }
    }
}

#[test]
fn some_cases_draw_large_sizes_within_the_work_budget() {
    use einsat::testing::difftest::{case_from_seed, case_seed, work};
    let cfg = DiffConfig::default();
    let (mut large, mut named) = (0, 0);
    for k in 0..400 {
        let Ok(case) = case_from_seed(case_seed(11, k), &cfg) else {
            continue;
        };
        if case.sizes.is_empty() {
            continue;
        }
        named += 1;
        if case.sizes.values().any(|&n| n > cfg.max_size) {
            large += 1;
            assert!(work(&case.function.body, &case.sizes) <= cfg.work_budget);
        }
    }
    eprintln!("{large} of {named} cases with named sizes drew large ones");
    assert!(large * 20 >= named, "{large} of {named}");
    assert!(large < named, "{large} of {named}");
}

/// Issue 22: a case the reference interpreter itself refuses was reported
/// as "the interpreter disagrees with the interpreter"; the headline (CLI
/// and reproducer) now says what happened, and a failing stage is told
/// apart from one that gave another value.
#[test]
fn failures_say_which_stage_failed_and_how() {
    // a tensor past 2^31 elements: the interpreter refuses it
    let f = einsat::load("fn f(x: R) -> R = (gen(i:100000, j:100000) x)[0, 0]").unwrap();
    let case = Case {
        function: f.functions[0].clone(),
        sizes: Default::default(),
        args: vec![Value::Real(1.0)],
        layout: Layout::C,
        class: einsat::testing::ValueClass::Moderate,
    };
    let Verdict::Disagree(fl) = check(&case, &DiffConfig::default()) else {
        panic!("the interpreter ran a tensor of 10^10 elements");
    };
    assert_eq!(fl.stage, Stage::Interp);
    assert!(!fl.mismatch);
    let h = fl.headline();
    assert!(
        h.contains("reference interpreter itself failed") && !h.contains("disagrees"),
        "{h}"
    );
    assert!(
        fl.message.contains("would build a tensor"),
        "{}",
        fl.message
    );
    let dir = tmpdir("interp-fails");
    write_reproducer(&case, &fl, &dir, &[]).unwrap();
    let text = std::fs::read_to_string(dir.join("repro.tl")).unwrap();
    assert!(
        text.starts_with("# einsat difftest reproducer: the reference interpreter itself failed"),
        "{text}"
    );
    // a stage that gives another value disagrees
    let d = &run(&broken_config(), 1, 500, 2, 1, &|_, _| {}).disagreements[0];
    assert!(d.failure.mismatch);
    assert_eq!(
        d.failure.headline(),
        "the optimiser + interpreter disagrees with the interpreter"
    );
}

// ------------------------------------------------------------ --dtype f32

fn f32_config() -> DiffConfig {
    DiffConfig {
        precision: einsat::Precision::F32,
        ..DiffConfig::default()
    }
}

fn is_f32(v: &Value) -> bool {
    match v {
        Value::Real(x) => x.is_nan() || *x as f32 as f64 == *x,
        Value::Array(a) => a.iter().all(|x| x.is_nan() || *x as f32 as f64 == *x),
        Value::Pair(a, b) => is_f32(a) && is_f32(b),
    }
}

/// The three engines in F32 (the F32 interpreter, the F32-optimised program
/// in it, and in the F32 JIT through `call_f32`) keep the F32 contract on
/// random programs; the inputs are f32 values, the wide class's finite.
#[test]
fn f32_pipeline_agrees_on_random_programs() {
    let cfg = f32_config();
    let s = run(&cfg, 11, 300, 2, 1, &|_, _| {});
    assert_eq!(s.cases, 300);
    assert_eq!(
        s.disagreeing,
        0,
        "{:?}",
        s.disagreements.first().map(|d| (
            print_function(&d.shrunk.function),
            d.failure.message.clone()
        ))
    );
    assert_eq!(s.jit_cases, 300, "skipped: {:?}", s.jit_skipped);
    let mut wide = 0;
    for k in 0..200 {
        let case = case_from_seed(einsat::testing::difftest::case_seed(11, k), &cfg).unwrap();
        assert!(case.args.iter().all(is_f32), "{:?}", case.args);
        if case.class == einsat::testing::ValueClass::Wide {
            for a in &case.args {
                if let Value::Array(x) = a {
                    wide += x.len();
                    assert!(x.iter().all(|v| v.is_finite() && *v != 0.0), "{a}");
                }
            }
        }
    }
    assert!(wide > 0, "no wide inputs drawn");
}

/// The broken rule is caught in F32 as in F64, at the optimised program in
/// the (F32) interpreter.
#[test]
fn f32_broken_rule_is_caught() {
    let cfg = DiffConfig {
        precision: einsat::Precision::F32,
        ..broken_config()
    };
    let s = run(&cfg, 1, 500, 2, 1, &|_, _| {});
    assert!(s.disagreeing > 0, "the broken rule went unnoticed in f32");
    let d = &s.disagreements[0];
    assert_eq!(d.failure.stage, Stage::OptInterp);
    assert!(matches!(check(&d.shrunk, &cfg), Verdict::Disagree(_)));
    assert!(matches!(
        check(&d.shrunk, &f32_config()),
        Verdict::Agree { .. }
    ));
}

#[test]
fn difftest_command_in_f32_reports_and_writes_f32_reproducers() {
    let dir = tmpdir("cli32");
    let (code, out, err) = einsat(
        &[
            "difftest", "--dtype", "f32", "--cases", "100", "--seed", "3",
        ],
        &dir,
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("difftest: 100 cases (100 also through the JIT, 0 skipped), 0 disagreements"),
        "{out}"
    );
    assert!(out.contains("  dtype f32\n"), "{out}");
    assert!(!out.contains("gathers left out"), "{out}");
    let (code, _, err) = einsat(&["difftest", "--dtype", "f16", "--cases", "1"], &dir);
    assert_eq!(code, 1);
    assert!(err.contains("--dtype: unknown dtype `f16`"), "{err}");
    // a broken rule: the reproducer's commands run in f32 and disagree
    let rules = dir.join("rules");
    std::fs::create_dir_all(&rules).unwrap();
    for entry in std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("rules")).unwrap() {
        let p = entry.unwrap().path();
        std::fs::copy(&p, rules.join(p.file_name().unwrap())).unwrap();
    }
    std::fs::write(rules.join("bad.rules"), BROKEN).unwrap();
    let (code, out, err) = einsat(
        &[
            "difftest",
            "--dtype",
            "f32",
            "--cases",
            "500",
            "--rules",
            "rules",
            "--no-rule-check",
            "--max-failures",
            "1",
            "--out",
            "fails",
        ],
        &dir,
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("disagrees with the interpreter"), "{out}");
    let case = std::fs::read_dir(dir.join("fails"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let repro = std::fs::read_to_string(case.join("repro.tl")).unwrap();
    let line = |tag: &str| -> Vec<String> {
        let l = repro.lines().find(|l| l.starts_with(tag)).unwrap();
        l.split_once("einsat ")
            .unwrap()
            .1
            .split_whitespace()
            .map(String::from)
            .collect()
    };
    let reference = line("# reference:");
    let optimised = line("# optimised:");
    assert!(
        reference.windows(2).any(|w| w == ["--dtype", "f32"]),
        "{repro}"
    );
    let r1 = einsat(
        &reference.iter().map(String::as_str).collect::<Vec<_>>(),
        &case,
    );
    let r2 = einsat(
        &optimised.iter().map(String::as_str).collect::<Vec<_>>(),
        &case,
    );
    assert_eq!(r1.0, 0, "{}", r1.2);
    assert_eq!(r2.0, 0, "{}", r2.2);
    assert_ne!(
        r1.1, r2.1,
        "reference and optimised agree on the reproducer"
    );
}
