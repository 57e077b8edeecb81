//! The Rust API as a newcomer meets it (issue 27): functions print
//! themselves laid out as the examples are written, one call goes from text
//! to a kernel, and a single rule file loads.

use einsat::ndarray::array;

/// A long body is broken at `let … in`, after binders and before the terms
/// of a long sum; a short one stays on one line; either parses back to the
/// same function.
#[test]
fn functions_display_laid_out_and_parse_back() {
    let short = einsat::load("fn dot(x: [n]R, y: [n]R) -> R = sum(i:n) x[i] * y[i]").unwrap();
    let f = &short.functions[0];
    assert_eq!(
        f.to_string(),
        "fn dot(x: [n]R, y: [n]R) -> R =\n  sum(i:n) x[i] * y[i]\n"
    );
    let src = "fn layer(W: [n,m]R, x: [m]R, b: [n]R, g: [n]R) -> [n]R =
        let h = gen(i:n) b[i] + sum(j:m) W[i, j] * x[j] in
        let mean = (sum(i:n) h[i]) / 7 in
        let var = (sum(i:n) (h[i] - mean) * (h[i] - mean)) / 7 in
        gen(i:n) g[i] * (h[i] - mean) / sqrt(var + 0.00001) + b[i] * b[i] + sum(j:m) W[i, j] * W[i, j] * x[j]";
    let prog = einsat::load(src).unwrap();
    let text = prog.functions[0].to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 5, "{text}");
    assert!(lines[1].starts_with("  let h = "), "{text}");
    assert!(lines[2].starts_with("  let mean = "), "{text}");
    assert!(
        lines
            .iter()
            .all(|l| l.len() <= einsat::syntax::printer::LINE_WIDTH),
        "{text}"
    );
    // only whitespace changed: the same function comes back
    let back = einsat::load(&text).unwrap();
    assert_eq!(back.functions[0], prog.functions[0], "{text}");
    // and a program prints its functions separated by blank lines
    let two = einsat::load("fn a(x: R) -> R = x\nfn b(y: R) -> R = y * 2").unwrap();
    assert_eq!(
        two.to_string(),
        "fn a(x: R) -> R =\n  x\n\nfn b(y: R) -> R =\n  y * 2\n"
    );
}

#[test]
fn compile_str_goes_from_text_to_a_kernel() {
    let src = "fn mv(A: [n,m]R, x: [m]R) -> [n]R = gen(i:n) sum(j:m) A[i,j] * x[j]
               fn tr(A: [n,n]R) -> R = sum(i:n) A[i,i]";
    let k = einsat::compile_str(src, "mv", &einsat::opt::Options::default()).unwrap();
    let y: einsat::ndarray::Array1<f64> = k
        .eval((&array![[1.0, 2.0], [3.0, 4.0]], &array![1.0, 1.0]))
        .unwrap();
    assert_eq!(y, array![3.0, 7.0]);
    let e = einsat::compile_str(src, "trace", &Default::default()).unwrap_err();
    assert!(matches!(e, einsat::Error::NoFunction { .. }), "{e}");
    assert_eq!(
        e.to_string(),
        "no function `trace` (the source defines mv, tr)"
    );
    // errors in the text are the loader's, with line:column
    let e = einsat::compile_str("fn f(x: R) -> R = x +", "f", &Default::default()).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("<input>:1:21: error: expected an expression after `+`"),
        "{e}"
    );
}

#[test]
fn a_single_rule_file_loads_and_a_bad_one_is_refused_with_its_line() {
    let dir = std::env::temp_dir().join(format!("einsat-rule-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("mine.rules");
    std::fs::write(
        &good,
        "# doubling\nmul-two [exact]: (* 2 ?a) => (+ ?a ?a)\n",
    )
    .unwrap();
    let rules = einsat::rules::load_rules_file(&good).unwrap();
    assert_eq!(rules.len(), 1);
    assert_eq!(rules[0].name, "mul-two");
    let bad = dir.join("bad.rules");
    std::fs::write(
        &bad,
        "ok [exact]: (* 1 ?a) => ?a\nwrong [exact]: (+ ?a ?b) => (* ?a ?b)\n",
    )
    .unwrap();
    let e = einsat::rules::load_rules_file(&bad).unwrap_err();
    assert!(matches!(e, einsat::Error::UnsoundRule { .. }), "{e}");
    assert!(e.to_string().contains("bad.rules:2"), "{e}");
    let e = einsat::rules::load_rules_file(&dir.join("missing.rules")).unwrap_err();
    assert!(matches!(e, einsat::Error::RuleFile { .. }), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
