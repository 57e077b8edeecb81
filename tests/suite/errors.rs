//! Bad input gets a clear error with a position, never a panic.

use einsat::interp::{self, Value};
use einsat::syntax::parse_program;
use einsat::{load, types, Error};
use ndarray::{arr1, arr2};

/// All diagnostics of loading `src`, as (line, column, message).
fn diags(src: &str) -> Vec<(usize, usize, String)> {
    let ds = match parse_program(src) {
        Err(d) => d,
        Ok(p) => match types::check_parsed(&p) {
            Err(d) => d,
            Ok(_) => panic!("expected an error for:\n{src}"),
        },
    };
    ds.iter()
        .map(|d| {
            let (l, c) = d.line_col(src).expect("errors from text have a position");
            (l, c, d.message.clone())
        })
        .collect()
}

fn has(src: &str, line: usize, col: usize, needle: &str) {
    let ds = diags(src);
    assert!(
        ds.iter()
            .any(|(l, c, m)| *l == line && *c == col && m.contains(needle)),
        "expected `{needle}` at {line}:{col}, got {ds:?}"
    );
}

#[test]
fn unterminated_binder() {
    has(
        "fn f(x: [3]R) -> [3]R =\n  gen(i:3 x[i]",
        2,
        11,
        "expected `)`",
    );
    has("fn f(x: [3]R) -> [3]R = gen(i:3)", 1, 33, "has no body");
    // at the end of input the parenthesis was never closed: the error points at it
    has(
        "fn f(x: [3]R) -> R = sum(i:3) (x[i]",
        1,
        31,
        "`(` is never closed: expected `)` to close a parenthesis, found end of input at 1:36",
    );
}

#[test]
fn unknown_name() {
    has(
        "fn f(x: [3]R) -> R =\n  sum(i:3) y[i]",
        2,
        12,
        "unknown name `y`",
    );
}

#[test]
fn index_used_as_value() {
    // an index in scope is a number (tests/suite/values.rs); one out of scope is
    // an unknown name
    has(
        "fn f(x: [3]R) -> [3]R = (gen(i:3) x[i]) * i",
        1,
        43,
        "unknown name `i`",
    );
    has(
        "fn f(x: [3]R, y: R) -> R = x[y]",
        1,
        28,
        "`y` is a value, not an index",
    );
}

#[test]
fn range_mismatch() {
    has(
        "fn f(x: [3]R) -> R = sum(j:4) x[j]",
        1,
        31,
        "index `j` ranges over 4 but axis 0 of `x` has size 3",
    );
    has(
        "fn f(A: [3,4]R) -> R = sum(j:3) A[j,j]",
        1,
        33,
        "index `j` ranges over 3 but axis 1 of `A` has size 4",
    );
}

#[test]
fn unbound_size_name() {
    has(
        "fn f(x: [n]R) -> R = sum(i:k) x[0]",
        1,
        22,
        "size `k` is not bound by any parameter",
    );
    has(
        "fn f(x: [n]R) -> [m]R = gen(i:n) x[i]",
        1,
        18,
        "size `m` in the result type",
    );
}

#[test]
fn projection_of_non_pair() {
    has(
        "fn f(x: [3]R) -> R = sum(i:3) x[i].0",
        1,
        31,
        "`.0` needs a pair",
    );
}

#[test]
fn other_type_errors() {
    has("fn f(x: [3]R) -> R = x + 1", 1, 22, "needs a number");
    has(
        "fn f(x: [3]R) -> R = sum(i:3) x",
        1,
        31,
        "`sum` adds numbers",
    );
    has(
        "fn f(x: [3]R) -> [3]R = sum(i:3) x[i]",
        1,
        18,
        "declared result type is [3]R",
    );
    has("fn f(x: R) -> R = x[0]", 1, 19, "indexes a tensor");
}

#[test]
fn all_errors_are_reported_at_once() {
    let src = "fn f(x: [3]R) -> R =\n  sum(j:4) x[j] + y + sum(i:3) x\n";
    let ds = diags(src);
    assert_eq!(ds.len(), 3, "{ds:?}");
    // and one syntax error per broken function
    let src = "fn a(x: [3]R) -> R = sum(i:3 x[i]\nfn b(x: [3]R) -> R = x[0] +\nfn c(x: R) -> R = x";
    let ds = diags(src);
    assert_eq!(ds.len(), 2, "{ds:?}");
    assert_eq!(ds[0].0, 1);
    // the missing operand of `+` is reported at the `+`, not at the next `fn`
    assert_eq!((ds[1].0, ds[1].1), (2, 27), "{ds:?}");
}

#[test]
fn rendered_errors_show_the_line() {
    let src = "fn f(x: [3]R) -> R =\n  sum(i:3) y[i]";
    let d = &diags_raw(src)[0];
    let r = d.render("f.tl", src);
    assert!(r.starts_with("f.tl:2:12: error: unknown name `y`"), "{r}");
    assert!(r.contains("  sum(i:3) y[i]"), "{r}");
    assert!(r.contains("^"), "{r}");
}

fn diags_raw(src: &str) -> Vec<einsat::diag::Diagnostic> {
    match load(src) {
        Err(Error::Parse(d)) | Err(Error::Type(d)) => d.diagnostics,
        other => panic!("expected an error, got {other:?}"),
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let deep = format!(
        "fn f(x: R) -> R = {}x{}",
        "(".repeat(5000),
        ")".repeat(5000)
    );
    let ds = diags(&deep);
    assert!(ds[0].2.contains("nested too deeply"), "{ds:?}");
    let negs = format!("fn f(x: R) -> R = {}x", "-".repeat(5000));
    assert!(diags(&negs)[0].2.contains("nested too deeply"));
}

fn call_err(src: &str, args: &[Value]) -> String {
    let p = load(src).unwrap();
    match interp::run(&p.functions[0], args) {
        Err(e) if e.is_call() => e.to_string(),
        other => panic!("expected a call error, got {other:?}"),
    }
}

#[test]
fn wrong_arguments() {
    let mv = "fn mv(A: [n,m]R, x: [m]R) -> [n]R = gen(i:n) sum(j:m) A[i,j] * x[j]";
    let a = Value::Array(arr2(&[[1.0, 2.0], [3.0, 4.0]]).into_dyn());
    let x2 = Value::Array(arr1(&[1.0, 2.0]).into_dyn());
    let x3 = Value::Array(arr1(&[1.0, 2.0, 3.0]).into_dyn());
    assert!(call_err(mv, std::slice::from_ref(&a)).contains("takes 2 arguments, got 1"));
    assert!(call_err(mv, &[x2.clone(), x2.clone()]).contains("expected 2 dims, got 1"));
    let m = call_err(mv, &[a.clone(), x3]);
    assert!(m.contains("size `m` is 2 from argument `A`"), "{m}");
    assert!(m.contains("but 3 from argument `x`"), "{m}");
    assert!(call_err(mv, &[a.clone(), Value::Real(1.0)])
        .contains("expected an array with 1 dims, got a number"));
    let fixed = "fn f(x: [3]R) -> R = x[0]";
    assert!(call_err(fixed, &[x2]).contains("axis 0 has size 2 but the type says 3"));
    let pairp = "fn f(z: [n](R,R)) -> R = sum(i:n) z[i].0";
    assert!(call_err(pairp, &[a]).contains("expected a pair of values"));
}

#[test]
fn huge_sizes_are_refused_before_allocating() {
    let m = call_err(
        "fn f(x: R) -> R = (gen(i:1000000, j:1000000) x)[0, 0]",
        &[Value::Real(1.0)],
    );
    assert!(
        m.contains("would build a tensor of 1000000000000 elements"),
        "{m}"
    );
    // a binder range past 2^31 (the tensor limit) is a type error
    has(
        "fn f(x: R) -> R = (gen(i:1000000000000) x)[0]",
        1,
        20,
        "larger than the limit of 2^31",
    );
    let m = call_err(
        "fn f(x: [n]R) -> [n,n,n,n]R = gen(i:n, j:n, k:n, l:n) x[i]",
        &[Value::Array(ndarray::Array1::zeros(1000).into_dyn())],
    );
    assert!(m.contains("too large"), "{m}");
    // nested gens multiply
    let m = call_err(
        "fn f(x: R) -> R = (gen(i:100000, j:100000) x)[0, 0]",
        &[Value::Real(1.0)],
    );
    assert!(m.contains("10000000000 elements"), "{m}");
}

#[test]
fn numeric_limits_are_errors() {
    has("fn f(x: R) -> R = x * 1e400", 1, 23, "too large for an f64");
    // index constants are limited to 2^62, coefficients so that the index
    // stays within ±2^62 for any index value below 2^31
    has(
        "fn f(x: [3]R) -> R = x[9999999999999999999]",
        1,
        24,
        "too large",
    );
    let many = format!("fn f(x: [3]R) -> R = sum(i:3) x[{}i]", "4096*".repeat(8));
    has(&many, 1, 33, "out of range");
    has(
        "fn f(x: [3]R) -> R = sum(i:3) x[i + 2147483648*2147483648]",
        1,
        33,
        "out of range",
    );
    has(
        "fn f(x: [3]R) -> R = sum(i:3) [2147483648*2147483648 > -2147483648*2147483648] * x[i]",
        1,
        32,
        "out of range",
    );
}

#[test]
fn long_operator_chains_are_capped() {
    // flat chains are limited by size, not nesting: 50,000 terms are a
    // tree 50,000 levels deep, past the limit
    let long = format!("fn f(x: R) -> R = x{}", " + x".repeat(50_000));
    let d = diags(&long);
    assert!(d[0].2.contains("too large"), "{d:?}");
    assert_eq!((d[0].0, d[0].1), (1, 19));
    let tokens = format!("fn f(x: [3]R) -> R = x[0{}]", " + 0".repeat(100_001));
    assert!(diags(&tokens)[0].2.contains("more than 200000 tokens"));
    let ors = format!("fn f(x: R) -> R = [0 = 1{}] * x", " || 0 = 1".repeat(2000));
    assert!(diags(&ors)[0].2.contains("predicate too large"));
    // a chain within the cap works end to end
    let ok = format!("fn f(x: R) -> R = x{}", " * 1 + x".repeat(100));
    let p = load(&ok).unwrap();
    assert_eq!(
        interp::run(&p.functions[0], &[Value::Real(1.0)]).unwrap(),
        Value::Real(101.0)
    );
}

#[test]
fn byte_order_marks_nul_bytes_and_bad_utf8() {
    // a leading BOM is skipped; columns do not count it
    let p = load("\u{feff}fn f(x: R) -> R = x").unwrap();
    assert_eq!(p.functions[0].name, "f");
    has("\u{feff}fn f(x: R) -> R = y", 1, 19, "unknown name `y`");
    // a BOM elsewhere, and a NUL byte, are named by code point
    has("fn f(x: R) -> R = x \u{feff}", 1, 21, "U+FEFF");
    has(
        "fn f(x: R) -> R = x \0",
        1,
        21,
        "unexpected character U+0000 (NUL",
    );
    // invalid UTF-8: line and column of the first bad byte
    let e =
        einsat::diag::decode_source("f.tl", b"fn f(x: R) -> R =\n  x\xff".to_vec()).unwrap_err();
    assert!(
        e.starts_with("f.tl:2:4: error: the file is not valid UTF-8"),
        "{e}"
    );
    assert!(e.contains("0xFF"), "{e}");
}

/// Issue 22 (difftest seed 7, case 8090): the interpreter's allocation
/// check counts a value's components exactly, through lets, pairs,
/// projections and accesses: a projection of a let-bound pair counts only
/// its component, and what is refused is exactly what would exceed 2^31.
#[test]
fn the_allocation_check_counts_each_component() {
    let run = |src: &str| {
        let p = load(src).unwrap();
        interp::run(&p.functions[0], &[Value::Real(2.0)])
    };
    let sum = |v: Value| match v {
        Value::Array(a) => a.sum(),
        other => panic!("expected an array, got {other:?}"),
    };
    // 1300 * (1300^2 + 1) > 2^31 but 1300 * 1 is not
    let ok = [
        "fn f(x: R) -> [1300]R = let t = (gen(i:1300, j:1300) 0.0, x) in gen(i:1300) t.1",
        "fn f(x: R) -> [1300]R = let t = (x, (gen(i:1300, j:1300) 0.0, gen(k:3) x)) in gen(i:1300) t.1.1[2]",
        // a tensor of pairs: an access, then a projection
        "fn f(x: R) -> [1300]R = let t = gen(i:1300) (gen(j:1300) 0.0, x) in gen(k:1300) t[k].1",
        // nested lets and a pair of pairs taken apart
        "fn f(x: R) -> [1300]R = let t = ((gen(i:1300, j:1300) 0.0, x), x) in let u = t.0 in gen(i:1300) u.1 + t.1 - x",
    ];
    for src in ok {
        let v = run(src).unwrap_or_else(|e| panic!("{src}: {e}"));
        assert!((sum(v) - 1300.0 * 2.0).abs() < 1e-9, "{src}");
    }
    // the big component itself, under another gen of 1300, is refused
    for src in [
        "fn f(x: R) -> R = let t = (gen(i:1300, j:1300) 0.0, x) in (gen(i:1300) t.0)[0, 0, 0]",
        "fn f(x: R) -> R = let t = gen(i:1300) (gen(j:1300) 0.0, x) in (gen(k:1300) t)[0][0].1",
        "fn f(x: R) -> R = let t = (gen(i:1300, j:1300) 0.0, x) in let u = (x, t) in (gen(k:1300) u.1.0)[0, 0, 0]",
    ] {
        let m = run(src).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(m.contains("would build a tensor of"), "{src}: {m}");
    }
    // parameters count as what they hold: [1300,1300]R under a gen of 1300
    let p = load("fn f(A: [n,n]R) -> R = (gen(i:n) A)[0, 0, 0]").unwrap();
    let a = Value::Array(ndarray::Array2::<f64>::zeros((1300, 1300)).into_dyn());
    let m = interp::run(&p.functions[0], std::slice::from_ref(&a))
        .unwrap_err()
        .to_string();
    assert!(
        m.contains("would build a tensor of 2197000000 elements"),
        "{m}"
    );
    let p = load("fn f(A: [n,n]R) -> R = (gen(i:n) A[i])[0, 0]").unwrap();
    assert_eq!(
        interp::run(&p.functions[0], &[a]).unwrap(),
        Value::Real(0.0)
    );
}

/// Issue 22: `jit::Options::threads` has the limit the CLI and Python
/// have ([`einsat::jit::MAX_THREADS`]); more is `Error::Options`.
#[test]
fn jit_threads_past_the_limit_are_refused() {
    let f = &load("fn f(x: R) -> R = x * 2").unwrap().functions[0];
    for threads in [einsat::jit::MAX_THREADS + 1, 100_000, usize::MAX] {
        let o = einsat::jit::Options {
            threads,
            ..Default::default()
        };
        let Err(e) = einsat::jit::compile_with(f, &o) else {
            panic!("{threads} threads accepted");
        };
        assert!(matches!(e, Error::Options(_)), "{e:?}");
        assert!(e.to_string().contains("more than the limit of 1024"), "{e}");
        assert!(einsat::jit::compile_uncached_with(f, &o).is_err());
    }
    let o = einsat::jit::Options {
        threads: einsat::jit::MAX_THREADS,
        ..Default::default()
    };
    let k = einsat::jit::compile_with(f, &o).unwrap();
    assert_eq!(k.call(&[Value::Real(3.0)]).unwrap(), Value::Real(6.0));
}
