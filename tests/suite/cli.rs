//! The `einsat` binary end to end: check, run (text, JSON, .npy in and out),
//! einsum, demo, and every kind of bad input with exit status 1.
#![cfg(feature = "cli")] // runs the `einsat` binary

use crate::common;

use common::tmpdir;
use ndarray::{arr1, arr2, ArrayD};
use std::path::Path;

fn einsat(args: &[&str]) -> (i32, String, String) {
    common::einsat_in(Path::new(env!("CARGO_MANIFEST_DIR")), args)
}

fn write_npy(p: &Path, a: ArrayD<f64>) -> String {
    ndarray_npy::write_npy(p, &a).unwrap();
    p.display().to_string()
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

#[test]
fn check_prints_signatures() {
    let (code, out, _) = einsat(&["check", "examples/notebook.tl"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("fn axc(A: [3,3]R, x: [3]R, c: [3]R) -> [3]R"),
        "{out}"
    );
    assert_eq!(out.lines().count(), 7);
}

#[test]
fn check_reports_every_error_with_position() {
    let d = tmpdir("check");
    let f = d.join("bad.tl");
    std::fs::write(&f, "fn f(x: [3]R) -> R =\n  sum(j:4) x[j] + y\n").unwrap();
    let (code, _, err) = einsat(&["check", &s(&f)]);
    assert_eq!(code, 1);
    assert!(
        err.contains("bad.tl:2:12: error: index `j` ranges over 4 but axis 0 of `x` has size 3"),
        "{err}"
    );
    assert!(
        err.contains("bad.tl:2:19: error: unknown name `y`"),
        "{err}"
    );
}

#[test]
fn run_the_notebook_programs() {
    let d = tmpdir("run");
    let a = write_npy(
        &d.join("A.npy"),
        arr2(&[[5.0, 2.0, 0.0], [2.2, 0.0, 4.5], [0.0, 6.1, 3.3]]).into_dyn(),
    );
    let x = write_npy(&d.join("x.npy"), arr1(&[4.0, 7.0, 1.0]).into_dyn());
    let c = write_npy(&d.join("c.npy"), arr1(&[0.0, 0.0, 1.0]).into_dyn());
    let (code, out, err) = einsat(&[
        "run",
        "examples/notebook.tl",
        "--fn",
        "axc",
        "--engine",
        "interp",
        "--arg",
        &format!("A={a}"),
        "--arg",
        &format!("x={x}"),
        "--arg",
        &format!("c={c}"),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    let got: Vec<f64> = j["output"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    for (g, e) in got.iter().zip([34.0, 13.3, 47.0]) {
        assert!((g - e).abs() < 1e-9, "{got:?}");
    }
    let (code, out, _) = einsat(&[
        "run",
        "examples/notebook.tl",
        "--fn",
        "qprod",
        "--engine",
        "interp",
        "--arg",
        &format!("A={a}"),
        "--arg",
        &format!("x={x}"),
    ]);
    assert_eq!(code, 0);
    assert!(
        (out.trim().parse::<f64>().unwrap() - 275.1).abs() < 1e-9,
        "{out}"
    );
    // .npy output
    let o = d.join("out.npy");
    let (code, _, _) = einsat(&[
        "run",
        "examples/notebook.tl",
        "--fn",
        "diag",
        "--arg",
        &format!("x={x}"),
        "--out",
        &s(&o),
    ]);
    assert_eq!(code, 0);
    let back: ArrayD<f64> = ndarray_npy::read_npy(&o).unwrap();
    assert_eq!(
        back,
        arr2(&[[4.0, 0.0, 0.0], [0.0, 7.0, 0.0], [0.0, 0.0, 1.0]]).into_dyn()
    );
}

#[test]
fn pair_parameters_and_results_on_the_command_line() {
    let d = tmpdir("pairs");
    let re = write_npy(&d.join("re.npy"), arr1(&[1.0, 2.0]).into_dyn());
    let im = write_npy(&d.join("im.npy"), arr1(&[0.5, -1.0]).into_dyn());
    let (code, out, err) = einsat(&[
        "run",
        "examples/records.tl",
        "--fn",
        "cdot",
        "--arg",
        &format!("z.0={re}"),
        "--arg",
        &format!("z.1={im}"),
        "--arg",
        &format!("w.0={re}"),
        "--arg",
        &format!("w.1={im}"),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    // (1+0.5i)^2 + (2-i)^2 = (0.75 + i) + (3 - 4i) = 3.75 - 3i
    assert!(
        (j["output"][0].as_f64().unwrap() - 3.75).abs() < 1e-12,
        "{out}"
    );
    assert!(
        (j["output"][1].as_f64().unwrap() + 3.0).abs() < 1e-12,
        "{out}"
    );
    let (code, _, err) = einsat(&[
        "run",
        "examples/records.tl",
        "--fn",
        "cdot",
        "--arg",
        &format!("z.0={re}"),
        "--arg",
        &format!("w.0={re}"),
        "--arg",
        &format!("w.1={im}"),
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("component `z.1` is missing"), "{err}");
}

#[test]
fn numeric_dtypes_are_converted() {
    let d = tmpdir("dtypes");
    let p = d.join("xi.npy");
    ndarray_npy::write_npy(&p, &arr1(&[1i32, 2, 3])).unwrap();
    let (code, out, err) = einsat(&[
        "run",
        "examples/notebook.tl",
        "--fn",
        "diag",
        "--arg",
        &format!("x={}", s(&p)),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("[[1.0,0.0,0.0],[0.0,2.0,0.0],[0.0,0.0,3.0]]"),
        "{out}"
    );
}

/// A .npy file holding strings (dtype `<U3`), which is not numeric.
fn write_string_npy(p: &Path) {
    let mut header = "{'descr': '<U3', 'fortran_order': False, 'shape': (2,), }".to_string();
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    for ch in "abcdef".chars() {
        bytes.extend_from_slice(&(ch as u32).to_le_bytes());
    }
    std::fs::write(p, bytes).unwrap();
}

#[test]
fn bad_inputs_exit_1_with_a_message() {
    let d = tmpdir("bad");
    let x2 = write_npy(&d.join("x2.npy"), arr1(&[1.0, 2.0]).into_dyn());
    let m = write_npy(&d.join("m.npy"), arr2(&[[1.0, 2.0]]).into_dyn());
    let strs = d.join("s.npy");
    write_string_npy(&strs);
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["check".into(), "no/such/file.tl".into()],
            "no/such/file.tl",
        ),
        (
            vec![
                "run".into(),
                "examples/notebook.tl".into(),
                "--fn".into(),
                "diag".into(),
                format!("--arg=x={x2}"),
            ],
            "axis 0 has size 2 but the type says 3",
        ),
        (
            vec![
                "run".into(),
                "examples/notebook.tl".into(),
                "--fn".into(),
                "diag".into(),
                format!("--arg=x={m}"),
            ],
            "expected 1 dims, got 2",
        ),
        (
            vec![
                "run".into(),
                "examples/notebook.tl".into(),
                "--fn".into(),
                "diag".into(),
            ],
            "missing argument `x`",
        ),
        (
            vec![
                "run".into(),
                "examples/notebook.tl".into(),
                "--fn".into(),
                "diag".into(),
                format!("--arg=x={}", s(&strs)),
            ],
            "not a numeric .npy array",
        ),
        (
            vec![
                "run".into(),
                "examples/notebook.tl".into(),
                "--fn".into(),
                "diag".into(),
                "--arg=x=missing.npy".into(),
            ],
            "missing.npy: no such file",
        ),
        (
            vec![
                "run".into(),
                "examples/notebook.tl".into(),
                "--fn".into(),
                "nope".into(),
            ],
            "no function `nope`",
        ),
        (
            vec![
                "run".into(),
                "examples/notebook.tl".into(),
                "--fn".into(),
                "diag".into(),
                format!("--arg=x={x2}"),
                format!("--arg=y={x2}"),
            ],
            "no parameter `y`",
        ),
        (
            vec!["run".into(), "examples/notebook.tl".into()],
            "choose one with --fn",
        ),
    ];
    for (args, needle) in cases {
        let a: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        let (code, _, err) = einsat(&a);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(
            err.contains(needle),
            "{args:?}: expected `{needle}` in {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn einsum_prints_a_program() {
    let (code, out, err) = einsat(&["einsum", "ij,jk->ik"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("fn einsum("), "{out}");
    assert!(einsat::syntax::parse_program(&out).is_ok(), "{out}");
    let (code, _, err) = einsat(&["einsum", "ij,jk->iz"]);
    assert_eq!(code, 1);
    assert!(err.starts_with("error:"), "{err}");
}

#[test]
fn einsum_with_an_ellipsis_takes_the_ranks() {
    let (code, out, err) = einsat(&["einsum", "...ij,...jk->...ik", "--ranks", "3,3"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.starts_with("fn einsum(A: [nA,ni,nj]R, B: [nA,nj,nk]R) -> [nA,ni,nk]R"),
        "{out}"
    );
    let (code, _, err) = einsat(&["einsum", "...ij,jk"]);
    assert_eq!(code, 1);
    assert!(err.contains("needs the operands' ranks"), "{err}");
    let (code, _, err) = einsat(&["einsum", "...ij", "--ranks", "1"]);
    assert_eq!(code, 1);
    assert_eq!(
        err.trim(),
        "error: einsum: operand 0 has 1 axes but its subscripts `...ij` name 2"
    );
}

#[test]
fn demo_runs_every_example() {
    let (code, out, err) = einsat(&["demo"]);
    assert_eq!(code, 0, "{err}");
    for name in [
        "axc",
        "crossdot",
        "diamond",
        "blur2d",
        "cdot",
        "dual_square",
    ] {
        assert!(out.contains(name), "{name} missing from demo:\n{out}");
    }
}

/// Issue 27: `einsat demo` explains its columns first and ends with a
/// summary line counting the programs it ran, which passed, and the time.
#[test]
fn demo_explains_its_columns_and_ends_with_a_summary() {
    let (code, out, err) = einsat(&["demo"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("Every function of "), "{out}");
    assert!(
        out.contains("jit x: the JIT's speed-up over the interpreter"),
        "{out}"
    );
    let last = out.lines().last().unwrap();
    let words: Vec<&str> = last.split_whitespace().collect();
    // demo: N functions in M files: N passed, 0 failed; T s
    assert_eq!(words[0], "demo:", "{last}");
    let n: usize = words[1].parse().expect(last);
    let rows = out.lines().filter(|l| l.contains(" yes ")).count();
    assert_eq!(rows, n, "one row per function: {out}");
    assert_eq!(
        (words[6], words[7]),
        (n.to_string().as_str(), "passed,"),
        "{last}"
    );
    assert_eq!((words[8], words[9]), ("0", "failed;"), "{last}");
    assert!(last.ends_with(" s"), "{last}");
}

#[test]
fn demo_reports_costs_and_agreement() {
    let (code, out, err) = einsat(&["demo"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("opt cost") && out.contains("agree"), "{out}");
    let chain = out.lines().find(|l| l.contains(" chain ")).unwrap();
    let cols: Vec<&str> = chain.split_whitespace().collect();
    // ... interp ms, cost, opt cost, opt ms, agree ...
    let agree = cols.iter().position(|c| *c == "yes").expect(chain);
    let before: f64 = cols[agree - 3].parse().unwrap();
    let after: f64 = cols[agree - 2].parse().unwrap();
    assert!(after < before / 4.0, "{chain}");
}

/// `einsat opt` prints programs that parse back with the same signatures.
#[test]
fn opt_output_parses_back() {
    for file in [
        "examples/loops.tl",
        "examples/notebook.tl",
        "examples/records.tl",
    ] {
        let (code, out, err) = einsat(&["opt", file]);
        assert_eq!(code, 0, "{file}: {err}");
        assert!(
            out.contains("# cost:") && out.contains("# e-graph:"),
            "{out}"
        );
        let back = einsat::load(&out).unwrap_or_else(|e| panic!("{file}: {e}\n{out}"));
        let orig = einsat::load(&std::fs::read_to_string(file).unwrap()).unwrap();
        assert_eq!(back.functions.len(), orig.functions.len());
        for (a, b) in back.functions.iter().zip(&orig.functions) {
            let sa = einsat::types::check(a).unwrap().to_string();
            let sb = einsat::types::check(b).unwrap().to_string();
            assert_eq!(sa, sb);
        }
    }
    let (_, out, _) = einsat(&["opt", "examples/loops.tl", "--fn", "chain"]);
    // B x is computed once: the optimised program has a let of a gen.
    assert!(
        out.contains("let ") && out.contains("gen(i:n) sum(j:n) B[i, j] * x[j]"),
        "{out}"
    );
}

#[test]
fn opt_json_has_the_documented_fields() {
    let (code, out, err) = einsat(&["opt", "examples/loops.tl", "--json", "--size", "n=64"]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    let fs = j["functions"].as_array().unwrap();
    assert_eq!(fs.len(), 7);
    for f in fs {
        for k in [
            "name",
            "input",
            "output",
            "cost_before",
            "cost_after",
            "egraph_nodes",
            "egraph_classes",
            "iterations",
            "stop_reason",
            "optimize_ms",
        ] {
            assert!(f.get(k).is_some(), "missing {k} in {f}");
        }
        assert!(f["cost_after"].as_f64().unwrap() <= f["cost_before"].as_f64().unwrap());
    }
    let sumprod = fs.iter().find(|f| f["name"] == "sumprod").unwrap();
    // O(n) at n = 64: a few hundred operations, not n^3.
    assert!(
        sumprod["cost_after"].as_f64().unwrap() < 1000.0,
        "{sumprod}"
    );
}

/// `v` without the wall-clock and CPU timings (which differ between two
/// runs of the same optimisation).
fn without_timings(mut v: serde_json::Value) -> serde_json::Value {
    let o = v.as_object_mut().unwrap();
    for k in ["optimize_ms", "saturation_ms", "optimize_cpu_ms"] {
        assert!(o.remove(k).is_some_and(|t| t.is_f64()), "{k}");
    }
    for r in o["rounds"].as_array_mut().unwrap() {
        assert!(r.as_object_mut().unwrap().remove("ms").is_some());
    }
    for p in o["plans"].as_array_mut().unwrap() {
        assert!(p.as_object_mut().unwrap().remove("planning_ms").is_some());
    }
    v
}

#[test]
fn opt_json_is_the_library_report() {
    // `einsat opt --json` prints `einsat::opt::report_json` (the object the
    // Python `Kernel.report` holds too): same keys, same values but timings
    let (code, out, err) = einsat(&["opt", "examples/loops.tl", "--json"]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    let fs = j["functions"].as_array().unwrap();
    let src = std::fs::read_to_string("examples/loops.tl").unwrap();
    let prog = einsat::load(&src).unwrap();
    assert_eq!(fs.len(), prog.functions.len());
    for (cli, f) in fs.iter().zip(&prog.functions) {
        let o = einsat::opt::optimize(f, &einsat::opt::Options::default()).unwrap();
        let lib = einsat::opt::report_json(f, &o);
        let keys =
            |v: &serde_json::Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        assert_eq!(keys(cli), keys(&lib), "{}", f.name);
        for k in [
            "saturation_ms",
            "optimize_cpu_ms",
            "rounds",
            "chosen",
            "rules_fired",
        ] {
            assert!(cli.get(k).is_some(), "missing {k} in {cli}");
        }
        assert_eq!(
            without_timings(cli.clone()),
            without_timings(lib),
            "{}",
            f.name
        );
    }
}

#[test]
fn opt_explain_and_limits() {
    let (code, out, err) = einsat(&["opt", "examples/notebook.tl", "--fn", "qprod", "--explain"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("# explanation"), "{out}");
    let (code, out, err) = einsat(&[
        "opt",
        "examples/diderot.tl",
        "--fn",
        "crossdot",
        "--node-limit",
        "300",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("node limit") && out.contains("best program found so far"),
        "{out}"
    );
    einsat::load(&out).unwrap();
}

#[test]
fn opt_with_a_user_rule_folder() {
    let d = tmpdir("rules");
    std::fs::write(
        d.join("mine.rules"),
        "mul-comm [exact]: (* ?a ?b) => (* ?b ?a)\n",
    )
    .unwrap();
    let (code, out, err) = einsat(&[
        "opt",
        "examples/loops.tl",
        "--fn",
        "matmul",
        "--rules",
        &s(&d),
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("fn matmul"), "{out}");
    std::fs::write(
        d.join("bad.rules"),
        "oops [exact]: (* ?a ?b) => (frob ?a)\n",
    )
    .unwrap();
    let (code, _, err) = einsat(&["opt", "examples/loops.tl", "--rules", &s(&d)]);
    assert_eq!(code, 1);
    assert!(err.contains("bad.rules:1") && err.contains("frob"), "{err}");
}

#[test]
fn rules_check_passes_builtins_and_catches_a_wrong_rule() {
    let (code, out, err) = einsat(&["rules", "check", "--cases", "30"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(" 0 not of their class"), "{out}");
    let d = tmpdir("wrong");
    std::fs::write(
        d.join("wrong.rules"),
        "# sum binding without its condition\nbad-out [reassociating]: (sum ?n (* ?a ?e)) => (* ?a (sum ?n ?e))\n# true for finite values only\nmz [exact]: (* ?a 0) => 0\n",
    )
    .unwrap();
    let (code, out, err) = einsat(&["rules", "check", "--rules", &s(&d), "--cases", "100"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("WRONG CLASS")
            && out.contains("counterexample")
            && out.contains("rule `bad-out` (")
            && out.contains("is not reassociating (it is unsound)")
            && out.contains("rule `mz` (")
            && out.contains("is not exact (it passed as finite-only)"),
        "{out}"
    );
    // the table names each rule's claimed class and the class it holds
    let row = out.lines().find(|l| l.starts_with("mz ")).unwrap();
    assert!(
        row.contains("exact") && row.contains("finite-only"),
        "{row}"
    );
    assert!(
        err.contains("2 rule(s) not of the class they claim"),
        "{err}"
    );
}

#[test]
fn run_optimises_by_default_and_no_opt_agrees() {
    let d = tmpdir("runopt");
    let a = write_npy(&d.join("A.npy"), arr2(&[[1.0, 2.0], [3.0, 4.0]]).into_dyn());
    let b = write_npy(
        &d.join("B.npy"),
        arr2(&[[0.5, -1.0], [2.0, 1.0]]).into_dyn(),
    );
    let x = write_npy(&d.join("x.npy"), arr1(&[1.0, -2.0]).into_dyn());
    let args = |extra: &[&str]| {
        let mut v = vec!["run", "examples/loops.tl", "--fn", "chain", "--json"];
        v.extend_from_slice(extra);
        v.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let av = [format!("A={a}"), format!("B={b}"), format!("x={x}")];
    let mut o1 = args(&[]);
    let mut o2 = args(&["--no-opt"]);
    for a in &av {
        o1.extend(["--arg".to_string(), a.clone()]);
        o2.extend(["--arg".to_string(), a.clone()]);
    }
    let r1 = einsat(&o1.iter().map(|s| s.as_str()).collect::<Vec<_>>());
    let r2 = einsat(&o2.iter().map(|s| s.as_str()).collect::<Vec<_>>());
    assert_eq!(r1.0, 0, "{}", r1.2);
    assert_eq!(r2.0, 0, "{}", r2.2);
    let v1: serde_json::Value = serde_json::from_str(&r1.1).unwrap();
    let v2: serde_json::Value = serde_json::from_str(&r2.1).unwrap();
    // B x = [2.5, 0]; A (B x) = [2.5, 7.5]
    for v in [&v1, &v2] {
        let o = v["output"].as_array().unwrap();
        assert!((o[0].as_f64().unwrap() - 2.5).abs() < 1e-12, "{v}");
        assert!((o[1].as_f64().unwrap() - 7.5).abs() < 1e-12, "{v}");
    }
}

#[test]
fn run_engines_agree_and_bench_reports_ratios() {
    let d = tmpdir("engines");
    let a = write_npy(&d.join("A.npy"), arr2(&[[1.0, 2.0], [3.0, 4.0]]).into_dyn());
    let x = write_npy(&d.join("x.npy"), arr1(&[1.0, -2.0]).into_dyn());
    let mut outs = Vec::new();
    for engine in ["interp", "jit"] {
        let (code, out, err) = einsat(&[
            "run",
            "examples/blas.tl",
            "--fn",
            "matvec",
            "--arg",
            &format!("A={a}"),
            "--arg",
            &format!("x={x}"),
            "--engine",
            engine,
            "--json",
        ]);
        assert_eq!(code, 0, "{err}");
        outs.push(out);
    }
    assert_eq!(outs[0], outs[1]);
    assert!(
        outs[0].contains("-3") && outs[0].contains("-5"),
        "{}",
        outs[0]
    );
    // the JIT refuses a program that is not in normal form when asked for
    let a3 = write_npy(&d.join("A3.npy"), ArrayD::zeros(ndarray::IxDyn(&[3, 3])));
    let x3 = write_npy(&d.join("x3.npy"), ArrayD::zeros(ndarray::IxDyn(&[3])));
    let (code, _, err) = einsat(&[
        "run",
        "examples/notebook.tl",
        "--fn",
        "qprod",
        "--arg",
        &format!("A={a3}"),
        "--arg",
        &format!("x={x3}"),
        "--engine",
        "jit",
        "--no-opt",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("not in normal form"), "{err}");

    let (code, out, err) = einsat(&[
        "bench",
        "examples/blas.tl",
        "--fn",
        "matvec",
        "--size",
        "n=32",
        "--reps",
        "3",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    let engines = j["engines"].as_array().unwrap();
    let names: Vec<&str> = engines
        .iter()
        .map(|e| e["engine"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["interpreter", "jit (as written)", "jit (optimised)"]
    );
    for e in engines {
        assert_eq!(e["agrees"], true, "{e}");
        assert!(e["median_ms"].as_f64().unwrap() > 0.0);
        assert!(e["gflops"].as_f64().unwrap() > 0.0);
        // JIT engines report their compile and first-call times
        let jit = e["engine"].as_str().unwrap().starts_with("jit");
        for k in ["compile_ms", "first_call_ms"] {
            assert_eq!(e[k].as_f64().is_some_and(|t| t > 0.0), jit, "{k}: {e}");
        }
    }
    assert_eq!(j["flops"].as_f64().unwrap(), 2.0 * 32.0 * 32.0);
    // the optimised kernel's stages: the matrix–vector product on GEMM
    assert_eq!(j["stages"], serde_json::json!(["gemm n×1×n"]), "{out}");
}

#[test]
fn bench_picks_engines_threads_and_gemm() {
    let (code, out, err) = einsat(&[
        "bench",
        "examples/blas.tl",
        "--fn",
        "matmul",
        "--size",
        "n=24",
        "--reps",
        "2",
        "--engines",
        "jit,interp",
        "--threads",
        "2",
        "--no-gemm",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["threads"], 2);
    assert_eq!(j["gemm"], false);
    let engines = j["engines"].as_array().unwrap();
    let names: Vec<&str> = engines
        .iter()
        .map(|e| e["engine"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["jit (optimised)", "interpreter"]);
    assert_eq!(engines[0]["speedup_vs_first"], 1.0);
    for e in engines {
        assert_eq!(e["agrees"], true, "{e}");
        assert!(e["gflops"].as_f64().unwrap() > 0.0);
    }
    // without the interpreter there is no ratio against it
    let (code, out, err) = einsat(&[
        "bench",
        "examples/blas.tl",
        "--fn",
        "matvec",
        "--size",
        "n=16",
        "--reps",
        "2",
        "--engines",
        "jit-noopt",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(j["engines"][0]["speedup_vs_interp"].is_null());
    let (code, _, err) = einsat(&[
        "bench",
        "examples/blas.tl",
        "--fn",
        "dot",
        "--engines",
        "gpu",
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("unknown engine `gpu`"), "{err}");
}

// ---- issue 10: .npy headers, source encodings, rule files, difftest flags ----

/// A raw .npy file: header dict fields and the data bytes as given.
fn raw_npy(p: &Path, descr: &str, fortran: bool, shape: &str, data: &[u8]) -> String {
    let mut header = format!(
        "{{'descr': '{descr}', 'fortran_order': {}, 'shape': {shape}, }}",
        if fortran { "True" } else { "False" }
    );
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(data);
    std::fs::write(p, bytes).unwrap();
    s(p)
}

fn run_src(d: &Path, src: &str, args: &[String], extra: &[&str]) -> (i32, String, String) {
    let f = d.join("prog.tl");
    std::fs::write(&f, src).unwrap();
    let mut a: Vec<String> = vec!["run".into(), s(&f)];
    for x in args {
        a.push("--arg".into());
        a.push(x.clone());
    }
    a.extend(extra.iter().map(|x| x.to_string()));
    let a: Vec<&str> = a.iter().map(|x| x.as_str()).collect();
    einsat(&a)
}

#[test]
fn npy_headers_are_checked_before_allocating() {
    let d = tmpdir("npyhdr");
    // 192 bytes whose header declares 10^12 f64s: refused, no abort
    let huge = raw_npy(
        &d.join("huge.npy"),
        "<f8",
        false,
        "(1000000000000,)",
        &[0; 64],
    );
    assert!(std::fs::metadata(&huge).unwrap().len() <= 192);
    let (code, _, err) = run_src(&d, "fn f(x: [n]R) -> R = x[0]", &[format!("x={huge}")], &[]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("huge.npy") && err.contains("limit"), "{err}");
    // a shape under the element limit but more than the file holds
    let short = raw_npy(&d.join("short.npy"), "<f8", false, "(100000000,)", &[0; 64]);
    let (code, _, err) = run_src(
        &d,
        "fn f(x: [n]R) -> R = x[0]",
        &[format!("x={short}")],
        &[],
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("short.npy") && err.contains("800000000 bytes") && err.contains("holds 64"),
        "{err}"
    );
    // an axis past 2^31 even with no elements
    let wide = raw_npy(&d.join("wide.npy"), "<f8", false, "(0, 4294967296)", &[]);
    let (code, _, err) = run_src(
        &d,
        "fn f(x: [n,m]R) -> R = x[0, 0]",
        &[format!("x={wide}")],
        &[],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("wide.npy") && err.contains("limit"), "{err}");
    // not a .npy file at all
    let junk = d.join("junk.npy");
    std::fs::write(&junk, b"hello").unwrap();
    let (code, _, err) = run_src(
        &d,
        "fn f(x: [n]R) -> R = x[0]",
        &[format!("x={}", s(&junk))],
        &[],
    );
    assert_eq!(code, 1);
    assert!(err.contains("junk.npy: not a .npy file"), "{err}");
}

#[test]
fn npy_edge_cases_are_read() {
    let d = tmpdir("npyedge");
    // empty arrays, through both engines
    let e = raw_npy(&d.join("e.npy"), "<f8", false, "(0, 3)", &[]);
    for engine in ["interp", "jit"] {
        let (code, out, err) = run_src(
            &d,
            "fn f(A: [n,m]R) -> R = A[0, 0] + sum(i:n, j:m) A[i,j]",
            &[format!("A={e}")],
            &["--no-opt", "--engine", engine],
        );
        assert_eq!(code, 0, "{engine}: {err}");
        assert_eq!(out.trim(), "0", "{engine}");
    }
    let (code, out, err) = run_src(
        &d,
        "fn f(A: [n,m]R) -> [n,m]R = gen(i:n, j:m) A[i,j]",
        &[format!("A={e}")],
        &["--json"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("\"output\":[]"), "{out}");
    // Fortran order: element (i, j) is still A[i, j]
    let data: Vec<u8> = [1.0f64, 4.0, 2.0, 5.0, 3.0, 6.0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let f = raw_npy(&d.join("f.npy"), "<f8", true, "(2, 3)", &data);
    let (code, out, err) = run_src(
        &d,
        "fn f(A: [2,3]R) -> R = A[0, 1] * 10 + A[1, 0]",
        &[format!("A={f}")],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "24");
    // other dtypes are converted: big-endian f4, u1, bool, i2
    let be: Vec<u8> = [1.5f32, -2.0]
        .iter()
        .flat_map(|x| x.to_be_bytes())
        .collect();
    let cases = [
        raw_npy(&d.join("be.npy"), ">f4", false, "(2,)", &be),
        raw_npy(&d.join("u1.npy"), "|u1", false, "(2,)", &[3, 200]),
        raw_npy(&d.join("b.npy"), "|b1", false, "(2,)", &[1, 0]),
        raw_npy(&d.join("i2.npy"), "<i2", false, "(2,)", &[0xff, 0xff, 7, 0]),
    ];
    let want = ["-0.5", "203", "1", "6"];
    for (path, want) in cases.iter().zip(want) {
        let (code, out, err) = run_src(
            &d,
            "fn f(x: [2]R) -> R = x[0] + x[1]",
            &[format!("x={path}")],
            &[],
        );
        assert_eq!(code, 0, "{path}: {err}");
        assert_eq!(out.trim(), want, "{path}");
    }
    // a 0-dim array is a number
    let z = raw_npy(&d.join("z.npy"), "<f8", false, "()", &2.5f64.to_le_bytes());
    let (code, out, err) = run_src(&d, "fn f(x: R) -> R = x * 2", &[format!("x={z}")], &[]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "5");
}

#[test]
fn the_interpreter_pads_empty_axes() {
    let d = tmpdir("emptyaxes");
    let e = raw_npy(&d.join("e.npy"), "<f8", false, "(0, 3)", &[]);
    let (code, out, err) = run_src(
        &d,
        "fn f(A: [n,m]R) -> R = A[0, 0]",
        &[format!("A={e}")],
        &["--engine", "interp"],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "0");
    let x = raw_npy(&d.join("x.npy"), "<f8", false, "(0,)", &[]);
    let (code, out, err) = run_src(
        &d,
        "fn f(x: [n]R) -> [2]R = let t = gen(q:n) gen(r:2) 1 in t[1]",
        &[format!("x={x}")],
        &["--engine", "interp", "--no-opt"],
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "[0, 0]");
}

#[test]
fn source_encoding_errors_are_clear() {
    let d = tmpdir("encoding");
    // a byte-order mark is skipped, and columns do not count it
    let f = d.join("bom.tl");
    std::fs::write(&f, "\u{feff}fn f(x: R) -> R = x * 2\n").unwrap();
    let (code, out, err) = einsat(&["check", &s(&f)]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("fn f(x: R) -> R"), "{out}");
    std::fs::write(&f, "\u{feff}fn f(x: R) -> R = y\n").unwrap();
    let (_, _, err) = einsat(&["check", &s(&f)]);
    assert!(
        err.contains("bom.tl:1:19: error: unknown name `y`"),
        "{err}"
    );
    // a NUL byte is named, not shown blank
    let f = d.join("nul.tl");
    std::fs::write(&f, "fn f(x: R) -> R = x \0 2\n").unwrap();
    let (code, _, err) = einsat(&["check", &s(&f)]);
    assert_eq!(code, 1);
    assert!(
        err.contains("nul.tl:1:21: error: unexpected character U+0000"),
        "{err}"
    );
    // invalid UTF-8: the line and column of the first bad byte
    let f = d.join("latin1.tl");
    std::fs::write(&f, b"fn f(x: R) -> R =\n  x * 2 # caf\xe9\n").unwrap();
    let (code, _, err) = einsat(&["check", &s(&f)]);
    assert_eq!(code, 1);
    assert!(
        err.contains("latin1.tl:2:14: error: the file is not valid UTF-8"),
        "{err}"
    );
}

#[test]
fn rule_file_errors_name_the_problem() {
    let d = tmpdir("rulesdup");
    std::fs::write(d.join("a.rules"), "mine [exact]: (+ ?a ?b) => (+ ?b ?a)\n").unwrap();
    std::fs::write(
        d.join("b.rules"),
        "# again\nmine [exact]: (* ?a ?b) => (* ?b ?a)\n",
    )
    .unwrap();
    let (code, _, err) = einsat(&["rules", "check", "--rules", &s(&d), "--cases", "1"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("b.rules:2: rule `mine` is already defined at") && err.contains("a.rules:1"),
        "{err}"
    );
    let d = tmpdir("rulesnum");
    std::fs::write(
        d.join("a.rules"),
        "r [exact]: (sum ?n ?e) => (sum ?n ?e) if (notfree ?e 99999999999)\n",
    )
    .unwrap();
    let (code, _, err) = einsat(&["rules", "check", "--rules", &s(&d), "--cases", "1"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("`99999999999` is out of range"), "{err}");
}

#[test]
fn difftest_refuses_absurd_flags() {
    let (code, _, err) = einsat(&["difftest", "--depth", "100", "--cases", "1"]);
    assert_eq!(code, 1);
    assert!(err.contains("--depth 100: at most"), "{err}");
    for bad in ["nan", "inf", "-1"] {
        let flag = format!("--rtol={bad}");
        let (code, _, err) = einsat(&["difftest", &flag, "--cases", "1"]);
        assert_eq!(code, 1, "{bad}");
        assert!(err.contains("--rtol"), "{bad}: {err}");
    }
}

/// Start `einsat args…` with stdout piped, read its first line, close the
/// pipe and wait: the command must end quietly (no panic message, exit
/// status 0 or death by SIGPIPE as for any Unix filter), not with a panic.
#[cfg(unix)]
fn closes_quietly(args: &[&str]) {
    use std::io::BufRead;
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_einsat"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(!first.is_empty(), "{args:?}: no output");
    // the reader (and the pipe's read end) is dropped here
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() || out.status.signal() == Some(libc::SIGPIPE),
        "{args:?}: {:?}\n{err}",
        out.status
    );
    assert!(!err.contains("panicked"), "{args:?}: {err}");
    assert!(err.is_empty(), "{args:?}: {err}");
}

#[cfg(unix)]
#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    // far more output than a pipe buffers (64 KiB), so the command is
    // still writing when the reader goes away
    let dir = tmpdir("broken-pipe");
    let mut src = String::new();
    for k in 0..600 {
        src.push_str(&format!(
            "fn long_function_name_{k}(x: [n]R, y: [n]R, z: [n]R) -> R = sum(i:n) x[i] * y[i] + z[i] * {k}\n"
        ));
    }
    let file = dir.join("many.tl");
    std::fs::write(&file, src).unwrap();
    let file = s(&file);
    closes_quietly(&["opt", &file, "--tree-extraction"]);
    closes_quietly(&["opt", &file, "--json"]);
    closes_quietly(&["check", &file]);
}

/// Run `einsat args…` with stdout on `/dev/full` (every write fails with
/// ENOSPC): exit status and stderr.
#[cfg(target_os = "linux")]
fn with_full_stdout(args: &[&str]) -> (i32, String) {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_einsat"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(full)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Issue 22: `einsat opt f.tl > /dev/full` panicked (exit 101). Every
/// command's output path reports a failed write as an error, exit 1.
#[cfg(target_os = "linux")]
#[test]
fn a_full_stdout_is_an_error_not_a_panic() {
    if !Path::new("/dev/full").exists() {
        return;
    }
    let d = tmpdir("devfull");
    let f = s(&d.join("f.tl"));
    std::fs::write(&f, "fn tr(A: [n,n]R) -> R = sum(i:n) A[i,i]\n").unwrap();
    let a = write_npy(&d.join("A.npy"), arr2(&[[1.0, 2.0], [3.0, 4.0]]).into_dyn());
    let arg = format!("--arg=A={a}");
    let dir = s(&d);
    let out_dir = s(&d.join("fails"));
    let cases: Vec<Vec<&str>> = vec![
        vec!["check", &f],
        vec!["opt", &f],
        vec!["opt", &f, "--json"],
        vec!["opt", &f, "--explain"],
        vec!["run", &f, &arg],
        vec!["run", &f, &arg, "--json"],
        vec!["run", &f, &arg, "--engine", "interp", "--no-opt"],
        vec!["einsum", "ij,jk->ik"],
        vec!["einsum", "i,i->", "--batch", "x,y;y,y"],
        vec!["demo", "--dir", &dir, "--size", "n=3"],
        vec!["bench", &f, "--size", "n=4", "--reps", "1"],
        vec!["bench", &f, "--size", "n=4", "--reps", "1", "--json"],
        vec!["rules", "check", "--cases", "1"],
        vec!["rules", "check", "--cases", "1", "--json"],
        vec!["difftest", "--cases", "2", "--out", &out_dir],
        vec!["--help"],
        vec!["opt", "--help"],
        vec!["--version"],
    ];
    for args in cases {
        let (code, err) = with_full_stdout(&args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(
            err.contains("error: writing to stdout: No space left on device"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    // --out to a full device: the same, for the .npy writer
    let (code, _, err) = einsat(&["run", &f, &arg, "--out", "/dev/full"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("/dev/full: cannot write"), "{err}");
}

/// Issue 22: `--size =5` and sizes for names the program does not have
/// were accepted silently. Every command taking `--size` refuses an empty
/// name, a non-number and a name the chosen function(s) do not use, and
/// says which names exist.
#[test]
fn size_flags_are_checked_against_the_program() {
    let d = tmpdir("sizeflags");
    let f = s(&d.join("f.tl"));
    std::fs::write(
        &f,
        "fn mv(A: [n,m]R, x: [m]R) -> [n]R = gen(i:n) sum(j:m) A[i,j] * x[j]\n\
         fn dot(x: [k]R, y: [k]R) -> R = sum(i:k) x[i] * y[i]\n",
    )
    .unwrap();
    let demo = d.join("demo");
    std::fs::create_dir_all(&demo).unwrap();
    std::fs::write(
        demo.join("a.tl"),
        "fn dot(x: [k]R, y: [k]R) -> R = sum(i:k) x[i] * y[i]\n",
    )
    .unwrap();
    let demo = s(&demo);
    let x = write_npy(&d.join("x.npy"), arr1(&[1.0, 2.0]).into_dyn());
    let (ax, ay) = (format!("--arg=x={x}"), format!("--arg=y={x}"));
    // (command without the --size flag, what the error names)
    let commands: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["opt", &f],
            "no function of the file has a size `zz` (they have sizes k, m, n)",
        ),
        (
            vec!["opt", &f, "--fn", "dot"],
            "`dot` has no size `zz` (it has sizes k)",
        ),
        (
            vec!["opt", &f, "--fn", "dot", "--json"],
            "`dot` has no size `zz` (it has sizes k)",
        ),
        (
            vec!["run", &f, "--fn", "dot", &ax, &ay],
            "`dot` has no size `zz` (it has sizes k)",
        ),
        (
            vec![
                "run", &f, "--fn", "dot", &ax, &ay, "--no-opt", "--engine", "interp",
            ],
            "`dot` has no size `zz` (it has sizes k)",
        ),
        (
            vec!["bench", &f, "--fn", "mv", "--reps", "1"],
            "`mv` has no size `zz` (it has sizes m, n)",
        ),
        (
            vec!["demo", "--dir", &demo],
            "`dot` has no size `zz` (it has sizes k)",
        ),
    ];
    for (cmd, names) in &commands {
        for (flag, want) in [
            ("zz=3", *names),
            ("=5", "`--size =5`: the size name is missing"),
            ("k=x", "`--size k=x`: `x` is not a size"),
            ("k=-1", "`--size k=-1`: `-1` is not a size"),
            ("k", "`--size k`: expected NAME=INTEGER"),
        ] {
            let mut a = cmd.clone();
            a.extend(["--size", flag]);
            let (code, out, err) = einsat(&a);
            assert_eq!(code, 1, "{a:?}: {out}{err}");
            assert!(err.contains(want), "{a:?}: expected `{want}` in {err}");
            assert!(out.is_empty(), "{a:?}: {out}");
        }
    }
    // names the program has are accepted, by every command
    let ok: Vec<Vec<&str>> = vec![
        vec!["opt", &f, "--size", "n=8", "--size", "k=3"],
        vec!["run", &f, "--fn", "dot", &ax, &ay, "--size", "k=100"],
        vec![
            "bench", &f, "--fn", "mv", "--reps", "1", "--size", "n=4", "--size", "m=3",
        ],
        vec!["demo", "--dir", &demo, "--size", "k=5"],
    ];
    for a in ok {
        let (code, _, err) = einsat(&a);
        assert_eq!(code, 0, "{a:?}: {err}");
    }
}

/// Issue 22: a 1 MB einsum spec was echoed whole in the error. Errors
/// quote user input (specs, names, paths, source lines) as a bounded
/// excerpt, with the position where there is one. (A command-line
/// argument is at most 128 KiB on Linux; files carry the 1 MB cases.)
#[test]
fn errors_quote_long_input_as_a_bounded_excerpt() {
    let d = tmpdir("excerpts");
    let f = s(&d.join("f.tl"));
    std::fs::write(&f, "fn f(x: R) -> R = x\n").unwrap();
    let long = "a".repeat(100_000);
    // a megabyte-long name, and an error in the middle of a long line
    let big = d.join("big.tl");
    std::fs::write(&big, format!("fn f(x: R) -> R = {}\n", "y".repeat(1 << 20))).unwrap();
    let mid = d.join("mid.tl");
    let xs = "x + ".repeat(5000);
    std::fs::write(&mid, format!("fn f(x: R) -> R = {xs}zz + {xs}x\n")).unwrap();
    let spec_err = format!("{long}1");
    let batch = format!("{long}-");
    let arg_name = format!("--arg={long}=1");
    let arg_path = format!("--arg=x={long}.npy");
    let size = format!("{long}=3");
    let long_tl = format!("{long}.tl");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["einsum", &spec_err],
            "`1` is not an index letter (a-z, A-Z, or a character beyond ASCII) (column 100001 of `…aaaa",
        ),
        (
            vec!["einsum", "ij", "--batch", &batch],
            "is not a valid array name",
        ),
        (vec!["run", &f, "--fn", &long], "no function `aaaa"),
        (
            vec!["run", &f, "--arg=x=1", &arg_name],
            "has no parameter `aaaa",
        ),
        (vec!["run", &f, &arg_path], "(100004 characters)"),
        (vec!["opt", &f, "--size", &size], "`f` has no size `aaaa"),
        (
            vec!["bench", &f, "--engines", &long],
            "unknown engine `aaaa",
        ),
        (
            vec!["difftest", "--features", &long],
            "unknown feature `aaaa",
        ),
        (vec!["check", &long_tl], "(100003 characters)"),
        (vec!["opt", &f, "--rules", &long], "(100000 characters)"),
        (vec!["demo", "--dir", &long], "(100000 characters)"),
    ];
    let big = s(&big);
    let mid = s(&mid);
    let mut cases = cases;
    cases.push((
        vec!["check", &big],
        "big.tl:1:19: error: unknown name `yyyy",
    ));
    cases.push((
        vec!["check", &mid],
        "mid.tl:1:20019: error: unknown name `zz`",
    ));
    for (args, want) in cases {
        let (code, _, err) = einsat(&args);
        assert_eq!(code, 1, "{}", &err[..err.len().min(500)]);
        assert!(
            err.len() < 600,
            "{}: {} bytes of error: {}…",
            args[0],
            err.len(),
            &err[..300]
        );
        assert!(err.contains(want), "expected `{want}` in {err}");
    }
    // a function with a long name and many parameters, named in call errors
    let longf = d.join("longf.tl");
    let params: Vec<String> = (0..20000).map(|k| format!("p{k}: R")).collect();
    std::fs::write(
        &longf,
        format!(
            "fn {}({}) -> R = p0\n",
            "g".repeat(200_000),
            params.join(", ")
        ),
    )
    .unwrap();
    let mut args = vec!["run".to_string(), s(&longf)];
    for k in 0..20000 {
        args.push(format!("--arg=p{k}=1"));
    }
    args.push("--arg=zz=1".into());
    let a: Vec<&str> = args.iter().map(|x| x.as_str()).collect();
    let (code, _, err) = einsat(&a);
    assert_eq!(code, 1);
    assert!(err.len() < 600, "{} bytes", err.len());
    assert!(
        err.contains("(200000 characters)` has no parameter `zz` (parameters: p0, p1,")
            && err.contains("… (20000 in all)"),
        "{err}"
    );
    // the caret still points at the error inside the shown window
    let (_, _, err) = einsat(&["check", &mid]);
    let lines: Vec<&str> = err.lines().collect();
    let at = lines[2].chars().position(|c| c == '^').unwrap();
    let marked: String = lines[1].chars().skip(at).take(2).collect();
    assert_eq!(marked, "zz", "{err}");
}

/// The raw bytes of the integer `v` as the dtype `kind`+`size`, in the
/// byte order asked for (float16 through a table of the values used).
fn npy_bytes(kind: char, size: usize, v: i64, big: bool) -> Vec<u8> {
    let le: Vec<u8> = match (kind, size) {
        ('f', 2) => {
            let bits: u16 = match v {
                1 => 0x3c00,
                2 => 0x4000,
                3 => 0x4200,
                4 => 0x4400,
                5 => 0x4500,
                6 => 0x4600,
                _ => unreachable!(),
            };
            bits.to_le_bytes().to_vec()
        }
        ('f', 4) => (v as f32).to_le_bytes().to_vec(),
        ('f', 8) => (v as f64).to_le_bytes().to_vec(),
        ('b', 1) => vec![u8::from(v % 2 == 1)],
        ('i', n) | ('u', n) => v.to_le_bytes()[..n].to_vec(),
        _ => unreachable!(),
    };
    if big {
        le.into_iter().rev().collect()
    } else {
        le
    }
}

/// Issue 22: the CLI refused float16 `.npy` files although README says
/// any numeric dtype is read. Every dtype README promises (float16/32/64,
/// int and uint of 1-8 bytes, bool), both byte orders, C and Fortran
/// order, read exactly.
#[test]
fn every_numeric_npy_dtype_is_read_in_both_byte_orders_and_layouts() {
    let d = tmpdir("dtypes-all");
    let src = "fn f(x: [2,3]R) -> [2,3]R = gen(i:2, j:3) x[i, j]";
    let want = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
    let mut tried = 0;
    for (kind, size) in [
        ('f', 2),
        ('f', 4),
        ('f', 8),
        ('i', 1),
        ('i', 2),
        ('i', 4),
        ('i', 8),
        ('u', 1),
        ('u', 2),
        ('u', 4),
        ('u', 8),
        ('b', 1),
    ] {
        for big in [false, true] {
            for fortran in [false, true] {
                let order = if size == 1 {
                    '|'
                } else if big {
                    '>'
                } else {
                    '<'
                };
                let descr = format!("{order}{kind}{size}");
                // element (i, j) of the file, in its memory order
                let idx: Vec<(usize, usize)> = if fortran {
                    (0..3).flat_map(|j| (0..2).map(move |i| (i, j))).collect()
                } else {
                    (0..2).flat_map(|i| (0..3).map(move |j| (i, j))).collect()
                };
                let data: Vec<u8> = idx
                    .iter()
                    .flat_map(|&(i, j)| npy_bytes(kind, size, want[i][j] as i64, big))
                    .collect();
                let name = format!("{kind}{size}-{big}-{fortran}");
                let x = raw_npy(
                    &d.join(format!("{name}.npy")),
                    &descr,
                    fortran,
                    "(2, 3)",
                    &data,
                );
                let out = d.join(format!("{name}-out.npy"));
                let (code, _, err) = run_src(
                    &d,
                    src,
                    &[format!("x={x}")],
                    &["--out", &s(&out), "--no-opt"],
                );
                assert_eq!(code, 0, "{descr} fortran={fortran}: {err}");
                let got: ArrayD<f64> = ndarray_npy::read_npy(&out).unwrap();
                let want: ArrayD<f64> = if kind == 'b' {
                    arr2(&[[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]]).into_dyn()
                } else {
                    arr2(&want).into_dyn()
                };
                assert_eq!(got, want, "{descr} fortran={fortran}");
                tried += 1;
            }
        }
    }
    assert_eq!(tried, 48);
    // float16 exactly: subnormals, the largest, signed zero, infinities, NaN
    let bits: [u16; 9] = [
        0x3e00, 0xc000, 0x7bff, 0x0001, 0x03ff, 0x8000, 0x7c00, 0xfc00, 0x7e00,
    ];
    let want = [
        1.5,
        -2.0,
        65504.0,
        2f64.powi(-24),
        1023.0 * 2f64.powi(-24),
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ];
    for big in [false, true] {
        let data: Vec<u8> = bits
            .iter()
            .flat_map(|b| {
                if big {
                    b.to_be_bytes()
                } else {
                    b.to_le_bytes()
                }
            })
            .collect();
        let descr = if big { ">f2" } else { "<f2" };
        let x = raw_npy(&d.join("h.npy"), descr, false, "(9,)", &data);
        let out = d.join("h-out.npy");
        let (code, _, err) = run_src(
            &d,
            "fn f(x: [n]R) -> [n]R = gen(i:n) x[i]",
            &[format!("x={x}")],
            &["--out", &s(&out), "--no-opt"],
        );
        assert_eq!(code, 0, "{descr}: {err}");
        let got: ArrayD<f64> = ndarray_npy::read_npy(&out).unwrap();
        for (g, w) in got.iter().zip(want) {
            assert!(
                (g.is_nan() && w.is_nan()) || g.to_bits() == w.to_bits(),
                "{descr}: {g} for {w}"
            );
        }
    }
    // float128 and complex stay refused, by name
    for descr in ["<f16", "<c16", "<U3", ">f3"] {
        let x = raw_npy(&d.join("bad.npy"), descr, false, "(0,)", &[]);
        let (code, _, err) = run_src(&d, "fn f(x: [n]R) -> R = 0", &[format!("x={x}")], &[]);
        assert_eq!(code, 1, "{descr}");
        assert!(err.contains("not a numeric .npy array"), "{descr}: {err}");
        assert!(err.contains("float16/32/64"), "{descr}: {err}");
    }
}

/// Issue 22: the CLI allowed 100,000 threads where Python capped at 1024.
/// One limit (`jit::MAX_THREADS`) for `--threads`, `--jit-threads`,
/// `--jobs`, Python's `threads=` and `jit::Options`.
#[test]
fn thread_counts_have_one_limit() {
    assert_eq!(einsat::jit::MAX_THREADS, 1024);
    let d = tmpdir("threads");
    let f = s(&d.join("f.tl"));
    std::fs::write(&f, "fn f(x: R) -> R = x * 2\n").unwrap();
    for (args, want) in [
        (
            vec!["run", &f, "--arg", "x=1", "--threads", "100000"],
            "--threads 100000: at most 1024 threads",
        ),
        (
            vec![
                "run",
                &f,
                "--arg",
                "x=1",
                "--threads",
                "1025",
                "--engine",
                "interp",
            ],
            "--threads 1025: at most 1024",
        ),
        (
            vec!["bench", &f, "--threads", "5000"],
            "--threads 5000: at most 1024",
        ),
        (
            vec!["difftest", "--jit-threads", "5000", "--cases", "1"],
            "--jit-threads 5000: at most 1024",
        ),
        (
            vec!["difftest", "--jobs", "5000", "--cases", "1"],
            "--jobs 5000: at most 1024",
        ),
    ] {
        let (code, out, err) = einsat(&args);
        assert_eq!(code, 1, "{args:?}: {out}{err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    let (code, out, err) = einsat(&["run", &f, "--arg", "x=1", "--threads", "1024"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "2");
}

/// Issue 22: einsum specs follow numpy's whitespace rule on the command
/// line too: spaces between subscripts are read, a tab or newline is an
/// error with its column.
#[test]
fn einsum_specs_take_spaces_only() {
    let (code, plain, _) = einsat(&["einsum", "ij,jk->ik"]);
    assert_eq!(code, 0);
    let (code, spaced, err) = einsat(&["einsum", " ij , jk -> ik "]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(spaced, plain);
    for (spec, want) in [
        ("ij,\tjk->ik", "a tab (U+0009) in the spec: numpy's grammar allows only spaces between subscripts (column 4 of `ij,\\tjk->ik`)"),
        ("ij,jk\n->ik", "a newline (U+000A)"),
        ("ij,jk- >ik", "`-` appears only as part of `->`"),
    ] {
        let (code, out, err) = einsat(&["einsum", spec]);
        assert_eq!(code, 1, "{spec:?}: {out}");
        assert!(err.contains(want), "{spec:?}: {err}");
    }
}

/// Issue 27: long work shows a spinner on a terminal, and nothing when
/// stderr is piped (as here): logs and captured output stay clean.
#[test]
fn piped_commands_write_no_progress_to_stderr() {
    for args in [
        vec!["opt", "examples/fields/physics.tl"],
        vec!["demo", "--dir", "examples/fields"],
    ] {
        let (code, out, err) = einsat(&args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(!out.is_empty());
        assert_eq!(err, "", "{args:?}");
    }
}

/// Issue 25: `--dtype f32` computes in f32 (interpreter and JIT alike,
/// `(x * 1e30) / 1e30` overflows), prints f32 numbers in their shortest
/// form (text and JSON), writes float32 `.npy`, and `demo` runs
/// `examples/float32.tl` in f32.
#[test]
fn dtype_f32_runs_in_f32() {
    let d = tmpdir("dtype32");
    let src = d.join("o.tl");
    std::fs::write(
        &src,
        "fn o(x: [n]R) -> [n]R = gen(i:n) (x[i] * 1e30) / 1e30 + 0.1",
    )
    .unwrap();
    let x = write_npy(&d.join("x.npy"), arr1(&[1e30, 2.0]).into_dyn());
    for engine in ["interp", "jit"] {
        let (code, out, err) = einsat(&[
            "run",
            src.to_str().unwrap(),
            "--engine",
            engine,
            "--dtype",
            "f32",
            "--arg",
            &format!("x={x}"),
            "--json",
        ]);
        assert_eq!(code, 0, "{err}");
        let j: serde_json::Value = serde_json::from_str(&out).unwrap();
        // inf is written as the string "inf"; the second element is
        // 2 + 0.1 in f32, written as the shortest text of that f32
        assert_eq!(j["output"][0], "inf", "{engine}: {out}");
        let second = j["output"][1].as_f64().unwrap();
        assert_eq!(second as f32, 2.0f32 + 0.1f32, "{engine}: {out}");
        assert_eq!(out.trim(), r#"{"output":["inf",2.1]}"#, "{engine}");
        // and so is the text form: f32 digits, not the f64 digits of the
        // same value (2.0999999046325684)
        let (code, out, err) = einsat(&[
            "run",
            src.to_str().unwrap(),
            "--engine",
            engine,
            "--dtype",
            "f32",
            "--arg",
            &format!("x={x}"),
        ]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(out.trim(), "[inf, 2.1]", "{engine}");
    }
    let (code, _, err) = einsat(&[
        "run",
        src.to_str().unwrap(),
        "--dtype",
        "f32",
        "--arg",
        &format!("x={x}"),
        "--out",
        d.join("r.npy").to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let r: ndarray::ArrayD<f32> = ndarray_npy::read_npy(d.join("r.npy")).unwrap();
    assert_eq!(r[[0]], f32::INFINITY);
    let (code, _, err) = einsat(&["run", src.to_str().unwrap(), "--dtype", "f16"]);
    assert_eq!(code, 1);
    assert!(err.contains("--dtype"), "{err}");
    let (code, out, err) = einsat(&["demo"]);
    assert_eq!(code, 0, "{err}");
    let line = out.lines().find(|l| l.contains("mlp_layer")).unwrap();
    assert!(line.contains("(f32)"), "{line}");
}

/// Issue 25, item 5: `--dtype i64`/`i32` computes integral programs in
/// wrapping integers (interpreter and JIT alike), refuses non-integral
/// programs and non-integer arguments with clear errors, and `demo` runs
/// `examples/ints.tl` in i64.
#[test]
fn dtype_int_runs_in_integers() {
    let d = tmpdir("dtypeint");
    let src = d.join("w.tl");
    std::fs::write(
        &src,
        "fn w(x: [n]R) -> [n]R = gen(i:n) x[i] * 65536 + 1\nfn h(x: [n]R) -> [n]R = gen(i:n) x[i] / 2",
    )
    .unwrap();
    let x = write_npy(&d.join("x.npy"), arr1(&[65536.0, -3.0]).into_dyn());
    for engine in ["interp", "jit"] {
        for (dtype, first) in [("i64", 4294967297.0), ("i32", 1.0)] {
            let (code, out, err) = einsat(&[
                "run",
                src.to_str().unwrap(),
                "--fn",
                "w",
                "--engine",
                engine,
                "--dtype",
                dtype,
                "--arg",
                &format!("x={x}"),
                "--json",
            ]);
            assert_eq!(code, 0, "{err}");
            let j: serde_json::Value = serde_json::from_str(&out).unwrap();
            // 65536 * 65536 + 1 wraps to 1 in 32 bits
            assert_eq!(
                j["output"][0].as_f64(),
                Some(first),
                "{engine} {dtype}: {out}"
            );
            assert_eq!(
                j["output"][1].as_f64(),
                Some(-196607.0),
                "{engine} {dtype}: {out}"
            );
            // written as integers
            assert!(out.contains(",-196607]"), "{engine} {dtype}: {out}");
        }
    }
    // an integer run writes integer .npy files
    for (dtype, first) in [("i64", 4294967297i64), ("i32", 1)] {
        let r = d.join(format!("r{dtype}.npy"));
        let (code, _, err) = einsat(&[
            "run",
            src.to_str().unwrap(),
            "--fn",
            "w",
            "--dtype",
            dtype,
            "--arg",
            &format!("x={x}"),
            "--out",
            r.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        if dtype == "i64" {
            let a: ndarray::ArrayD<i64> = ndarray_npy::read_npy(&r).unwrap();
            assert_eq!(a.as_slice().unwrap(), &[first, -196607]);
        } else {
            let a: ndarray::ArrayD<i32> = ndarray_npy::read_npy(&r).unwrap();
            assert_eq!(a.as_slice().unwrap(), &[first as i32, -196607]);
        }
    }
    let (code, _, err) = einsat(&[
        "run",
        src.to_str().unwrap(),
        "--fn",
        "h",
        "--dtype",
        "i64",
        "--arg",
        &format!("x={x}"),
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("no true division"), "{err}");
    assert!(err.contains("w.tl:2:"), "a position: {err}");
    let y = write_npy(&d.join("y.npy"), arr1(&[0.5]).into_dyn());
    let (code, _, err) = einsat(&[
        "run",
        src.to_str().unwrap(),
        "--fn",
        "w",
        "--dtype",
        "i32",
        "--arg",
        &format!("x={y}"),
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("not an integer of i32"), "{err}");
    // integers beyond 2^53 would round through the CLI's float64 numbers:
    // refused on the way in (an int64 .npy of 2^53 + 1) and on the way out
    // (65536^2 * 65536^2 * ... beyond 2^53), never printed rounded
    let big = d.join("big.npy");
    ndarray_npy::write_npy(&big, &ndarray::arr1(&[(1i64 << 53) + 1, 3])).unwrap();
    let big2 = write_npy(&d.join("big2.npy"), arr1(&[(1u64 << 40) as f64]).into_dyn());
    for engine in ["interp", "jit"] {
        for (arg, what) in [
            (big.to_str().unwrap(), "is beyond 2^53"),
            (&big2[..], "the result holds"),
        ] {
            let (code, out, err) = einsat(&[
                "run",
                src.to_str().unwrap(),
                "--fn",
                "w",
                "--engine",
                engine,
                "--dtype",
                "i64",
                "--arg",
                &format!("x={arg}"),
            ]);
            assert_eq!(code, 1, "{engine}: {out}");
            assert!(err.contains(what), "{engine}: {err}");
        }
    }
    let (code, out, err) = einsat(&["demo"]);
    assert_eq!(code, 0, "{err}");
    let line = out.lines().find(|l| l.contains("best_prefix")).unwrap();
    assert!(line.contains("(i64)") && line.contains("yes"), "{line}");
}
