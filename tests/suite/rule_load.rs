//! Rules are checked for soundness on load: an unsound rule file is refused
//! with its counterexample (library and CLI), the check can be skipped
//! explicitly, sound files load, and rule-file errors carry file and line.
#![cfg(feature = "cli")] // runs the `einsat` binary

use crate::common;
use einsat::rules::{
    builtin_rules, load_rules_dir, load_rules_dir_with, parse_rules, parse_rules_with, RuleCheck,
};
use einsat::Error;
use std::path::Path;
use std::time::Duration;

/// Beta-reduction of a gen access without its zero-padding guard.
const UNGUARDED: &str =
    "# beta without the guard\nget-gen-unguarded [exact]: (get (gen ?n ?e) ?a) => (@subst ?e ?a)\n";
/// Moving a factor out of a sum without checking it does not use the index.
const SUM_OUT: &str = "bad-out [reassociating]: (sum ?n (* ?a ?e)) => (* ?a (sum ?n ?e))\n";
/// Sound rules that are not built in.
const SOUND: &str =
    "# mine\nneg-neg-neg [exact]: (neg (neg (neg ?a))) => (neg ?a)\nmul-two [exact]: (* 2 ?a) => (+ ?a ?a)\n";

fn unsound(e: Error) -> (String, String, usize, String) {
    match e {
        Error::UnsoundRule {
            rule,
            file,
            line,
            counterexample,
            ..
        } => (rule, file, line, counterexample),
        e => panic!("expected an unsound-rule refusal, got {e}"),
    }
}

#[test]
fn an_unsound_rule_is_refused_with_its_counterexample() {
    for (text, name, line) in [(UNGUARDED, "get-gen-unguarded", 2), (SUM_OUT, "bad-out", 1)] {
        let e = parse_rules("bad.rules", text).unwrap_err();
        let shown = e.to_string();
        let (rule, file, l, cx) = unsound(e);
        assert_eq!((rule.as_str(), file.as_str(), l), (name, "bad.rules", line));
        // both sides as programs and the values they give
        assert!(
            cx.contains("left:") && cx.contains("right:") && cx.contains("gives"),
            "{cx}"
        );
        assert!(
            shown.starts_with(&format!("bad.rules:{line}: rule `{name}` is not "))
                && shown.contains(&cx),
            "{shown}"
        );
    }
}

#[test]
fn a_folder_with_one_unsound_rule_is_refused() {
    // the README's way of extending the rules: a copy of rules/ plus a file
    let d = common::tmpdir("rule-load-folder");
    for (f, t) in einsat::egraph::rules::BUILTIN {
        std::fs::write(d.join(f), t).unwrap();
    }
    std::fs::write(d.join("mine.rules"), format!("{SOUND}{SUM_OUT}")).unwrap();
    let (rule, file, line, _) = unsound(load_rules_dir(&d).unwrap_err());
    assert_eq!(rule, "bad-out");
    assert!(file.ends_with("mine.rules"), "{file}");
    assert_eq!(line, 4);
    // skipping the check loads everything as written
    let all = load_rules_dir_with(&d, &RuleCheck::skip()).unwrap();
    assert_eq!(all.len(), builtin_rules().len() + 3);
    assert!(all.iter().any(|r| r.name == "bad-out"));
}

#[test]
fn the_check_can_be_skipped() {
    let r = parse_rules_with("bad.rules", UNGUARDED, &RuleCheck::skip()).unwrap();
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].name, "get-gen-unguarded");
    assert_eq!(r[0].origin, "bad.rules:2");
}

#[test]
fn every_rule_is_instantiated_whatever_the_budget() {
    let no_time = RuleCheck {
        time_budget: Duration::ZERO,
        cases: 1000,
        ..RuleCheck::default()
    };
    let e = parse_rules_with("bad.rules", &format!("{SOUND}{SUM_OUT}"), &no_time).unwrap_err();
    assert_eq!(unsound(e).0, "bad-out");
}

#[test]
fn sound_files_load() {
    let r = parse_rules("mine.rules", SOUND).unwrap();
    let names: Vec<&str> = r.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["neg-neg-neg", "mul-two"]);
    let d = common::tmpdir("rule-load-sound");
    for (f, t) in einsat::egraph::rules::BUILTIN {
        std::fs::write(d.join(f), t).unwrap();
    }
    std::fs::write(d.join("mine.rules"), SOUND).unwrap();
    let all = load_rules_dir(&d).unwrap();
    assert_eq!(all.len(), builtin_rules().len() + 2);
}

#[test]
fn rule_file_errors_carry_file_and_line() {
    match parse_rules("x.rules", "# ok\n\nfoo [exact]: (frob ?a) => ?a\n").unwrap_err() {
        Error::RuleFile {
            file,
            line,
            message,
        } => {
            assert_eq!((file.as_str(), line), ("x.rules", Some(3)));
            assert!(message.contains("unknown operator `frob`"), "{message}");
        }
        e => panic!("{e}"),
    }
    let missing = Path::new("/nonexistent/einsat-rules");
    match load_rules_dir(missing).unwrap_err() {
        Error::RuleFile { file, line, .. } => {
            assert_eq!((file.as_str(), line), ("/nonexistent/einsat-rules", None));
        }
        e => panic!("{e}"),
    }
}

#[test]
fn the_cli_refuses_an_unsound_folder_unless_told_not_to_check() {
    let d = common::tmpdir("rule-load-cli");
    std::fs::write(d.join("bad.rules"), SUM_OUT).unwrap();
    let dir = d.display().to_string();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (code, _, err) = common::einsat_in(
        root,
        &[
            "opt",
            "examples/loops.tl",
            "--fn",
            "matmul",
            "--rules",
            &dir,
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("bad.rules:1: rule `bad-out` is not reassociating") && err.contains("left:"),
        "{err}"
    );
    let (code, out, err) = common::einsat_in(
        root,
        &[
            "opt",
            "examples/loops.tl",
            "--fn",
            "matmul",
            "--rules",
            &dir,
            "--no-rule-check",
        ],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("fn matmul"), "{out}");
}

#[test]
fn a_rule_that_claims_a_stronger_class_is_refused_with_the_class_it_has() {
    // x * 0 -> 0 is true for finite x only (inf * 0 is NaN)
    let e = parse_rules("fp.rules", "\nmz [exact]: (* ?a 0) => 0\n").unwrap_err();
    let shown = e.to_string();
    assert!(
        shown.starts_with("fp.rules:2: rule `mz` is not exact")
            && shown.contains("it passed as `finite-only`"),
        "{shown}"
    );
    // claimed honestly, it loads (and is used by the fast mode only)
    let r = parse_rules("fp.rules", "mz [finite-only]: (* ?a 0) => 0\n").unwrap();
    assert_eq!(r[0].class, einsat::egraph::rules::FpClass::FiniteOnly);
    // cancellation of the user's own additions is not a regrouping
    let strict = RuleCheck {
        cases: 400,
        min_cases: 400,
        ..RuleCheck::default()
    };
    let e = parse_rules_with(
        "fp.rules",
        "assoc [reassociating]: (+ (+ ?a ?b) ?c) => (+ ?a (+ ?b ?c))\n",
        &strict,
    );
    let shown = e.unwrap_err().to_string();
    assert!(
        shown.contains("rule `assoc` is not reassociating")
            && shown.contains("passed as `cancelling`"),
        "{shown}"
    );
}

#[test]
fn a_rule_wrong_even_in_exact_arithmetic_is_refused_whatever_it_claims() {
    // exp(log(x)) is NaN for x < 0: a NaN left side is not skipped
    for class in ["exact", "reassociating", "finite-only", "cancelling"] {
        let text = format!("el [{class}]: (exp (log ?a)) => ?a\n");
        let shown = parse_rules("el.rules", &text).unwrap_err().to_string();
        assert!(
            shown.starts_with(&format!("el.rules:1: rule `el` is not {class}"))
                && shown.contains("unsound even in exact arithmetic"),
            "{shown}"
        );
    }
}

#[test]
fn a_rule_without_a_known_class_is_a_rule_file_error() {
    for (text, want) in [
        (
            "\nr: (neg (neg ?a)) => ?a\n",
            "has no floating-point class: write `r [exact]: ...`",
        ),
        (
            "r [safe]: (neg (neg ?a)) => ?a\n",
            "unknown floating-point class `safe`",
        ),
        (
            "r [exact: (neg (neg ?a)) => ?a\n",
            "expected `]` after the class",
        ),
    ] {
        match parse_rules("c.rules", text).unwrap_err() {
            Error::RuleFile {
                file,
                line,
                message,
            } => {
                assert_eq!(file, "c.rules");
                assert_eq!(line, Some(if text.starts_with('\n') { 2 } else { 1 }));
                assert!(message.contains(want), "{message}");
            }
            e => panic!("{e}"),
        }
    }
}

#[test]
fn the_default_mode_uses_only_the_safe_classes() {
    use einsat::opt::{optimize, Options};
    let f = einsat::load("fn f(x: R) -> R = x * 0").unwrap().functions[0].clone();
    let mut rules = builtin_rules();
    rules.extend(parse_rules("mz.rules", "mz [finite-only]: (* ?a 0) => 0\n").unwrap());
    let safe = optimize(
        &f,
        &Options {
            rules: Some(rules.clone()),
            ..Options::default()
        },
    )
    .unwrap();
    assert_eq!(safe.report.mode, "value-safe");
    assert!(
        !safe.report.rules_fired.contains_key("mz"),
        "{:?}",
        safe.report.rules_fired
    );
    assert_eq!(einsat::syntax::print_expr(&safe.program.body), "x * 0");
    let fast = optimize(
        &f,
        &Options {
            rules: Some(rules),
            fast_math: true,
            ..Options::default()
        },
    )
    .unwrap();
    assert_eq!(fast.report.mode, "fast-math");
    assert_eq!(einsat::syntax::print_expr(&fast.program.body), "0");
}
