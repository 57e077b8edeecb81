//! Robustness (issue 5): saturation limits on programs built to blow up,
//! huge sizes refused at the call boundary, overflow in size and stride
//! arithmetic, deep nesting, and a rule file whose rule loops. Each must end
//! in a result or a clear error, never a hang, a panic or a huge allocation.

use einsat::egraph::rules::{builtin_rules, parse_rules};
use einsat::extract::is_normal;
use einsat::interp::{self, Value};
use einsat::opt::{optimize, Options};
use einsat::syntax::print_function;
use einsat::{jit, load, Error, Function};
use std::time::{Duration, Instant};

fn one(src: &str) -> Function {
    load(src).unwrap().functions.remove(0)
}

fn vec(n: usize) -> Value {
    Value::Array(ndarray::Array1::from_iter((0..n).map(|k| 0.5 + k as f64 * 0.25)).into_dyn())
}

/// The optimiser on `f` with `opts`: a normal-form program equal to `f` on
/// `args`, and a report that says a limit was hit.
fn hits_limit_but_is_valid(f: &Function, opts: &Options, args: &[Value]) {
    let start = Instant::now();
    let o = optimize(f, opts).unwrap();
    let took = start.elapsed();
    // a hang check, not a speed test: the time limit plus room for the
    // post-pass on a loaded machine
    assert!(
        took < opts.time_limit + Duration::from_secs(20),
        "took {took:?}"
    );
    assert!(
        o.report.stop_reason.contains("limit"),
        "stop reason: {}",
        o.report.stop_reason
    );
    assert!(is_normal(&o.program), "{}", print_function(&o.program));
    let want = interp::run(f, args).unwrap();
    let got = interp::run(&o.program, args).unwrap();
    assert!(want.approx_eq(&got, 1e-9, 1e-9), "{want} vs {got}");
    let k = jit::compile_uncached(&o.program).unwrap();
    assert!(want.approx_eq(&k.call(args).unwrap(), 1e-9, 1e-9));
}

#[test]
fn long_associative_chain_stops_at_a_limit_with_a_valid_result() {
    let terms: Vec<String> = (0..24).map(|k| format!("x[{}]", k % 4)).collect();
    let src = format!(
        "fn f(x: [4]R) -> R = {} + {}",
        terms.join(" * "),
        terms.join(" + ")
    );
    let opts = Options {
        time_limit: Duration::from_secs(3),
        ..Options::default()
    };
    hits_limit_but_is_valid(&one(&src), &opts, &[vec(4)]);
}

#[test]
fn deep_nest_of_sums_stops_at_a_limit_with_a_valid_result() {
    let f = one("fn f(A: [3,3]R, x: [3]R) -> R =
           sum(i:3, j:3, k:3, l:3, p:3, q:3)
             A[i,j] * A[j,k] * A[k,l] * A[l,p] * A[p,q] * x[q] * x[i]
             + [i = j] * x[k] * (x[l] + x[p]) * (x[q] - x[i])");
    let a = Value::Array(
        ndarray::Array2::from_shape_fn((3, 3), |(i, j)| (i as f64 - j as f64) * 0.3 + 0.1)
            .into_dyn(),
    );
    let opts = Options {
        node_limit: 3000,
        time_limit: Duration::from_secs(3),
        ..Options::default()
    };
    hits_limit_but_is_valid(&f, &opts, &[a, vec(3)]);
}

#[test]
fn a_looping_rule_cannot_hang_the_optimiser() {
    // a -> a + 0 -> (a + 0) + 0 -> … and a -> a * 1: every match makes a new
    // one; the node and iteration limits end it
    let mut rules = builtin_rules();
    rules.extend(
        parse_rules(
            "loop.rules",
            "add-zero-loop: ?a => (+ ?a 0)\nmul-one-loop: ?a => (* ?a 1)\n",
        )
        .unwrap(),
    );
    let f = one("fn f(x: [3]R) -> R = sum(i:3) x[i] * x[i]");
    let opts = Options {
        rules: Some(rules),
        time_limit: Duration::from_secs(3),
        ..Options::default()
    };
    hits_limit_but_is_valid(&f, &opts, &[vec(3)]);
}

fn call_error(f: &Function, args: &[Value]) -> String {
    let a = match interp::run(f, args) {
        Err(Error::Call(m)) => m,
        other => panic!("interpreter: expected a call error, got {other:?}"),
    };
    // the JIT (given normal form) refuses the same call, before running any
    // native code
    if is_normal(f) {
        match jit::compile_uncached(f).and_then(|k| k.call(args)) {
            Err(Error::Call(_)) => {}
            other => panic!("JIT: expected a call error, got {other:?}"),
        }
    }
    a
}

#[test]
fn huge_sizes_are_refused_at_the_call_boundary() {
    // a literal parameter size no array can have
    let f = one("fn f(x: [1000000000000]R) -> R = x[0]");
    let m = call_error(&f, &[vec(3)]);
    assert!(m.contains("1000000000000"), "{m}");
    // a huge result is refused before it is allocated
    let f = one("fn f(x: R) -> [1000000000000]R = gen(i:1000000000000) x");
    let m = call_error(&f, &[Value::Real(1.0)]);
    assert!(m.contains("1000000000000 elements"), "{m}");
    // a named size that makes the result huge
    let f = one("fn f(x: [n]R) -> [n,n,n,n,n]R = gen(i:n, j:n, k:n, l:n, p:n) x[i]");
    let m = call_error(&f, &[vec(1000)]);
    assert!(m.contains("too large"), "{m}");
}

#[test]
fn size_arithmetic_overflow_is_an_error() {
    // 2^32 * 2^32 elements overflows 64 bits
    let f = one("fn f(x: R) -> [4294967296, 4294967296]R = gen(i:4294967296, j:4294967296) x");
    let m = call_error(&f, &[Value::Real(1.0)]);
    assert!(m.contains("too large"), "{m}");
    let f = one("fn f(x: R) -> R = (gen(i:4294967296, j:4294967296, k:4294967296) x)[0, 0, 0]");
    let m = call_error(&f, &[Value::Real(1.0)]);
    assert!(m.contains("too large") || m.contains("elements"), "{m}");
}

#[test]
fn index_and_stride_arithmetic_cannot_overflow_into_a_read() {
    // the largest coefficients and constants the parser takes, on indices that then leave
    // any buffer: both engines pad with zero instead of reading outside
    let f = one(
        "fn f(x: [n]R) -> [n]R = gen(i:n) x[16777216*i + 2147483647] + x[-16777216*i - 2147483647]",
    );
    let args = [vec(5)];
    let want = interp::run(&f, &args).unwrap();
    assert!(want.approx_eq(
        &Value::Array(ndarray::Array1::zeros(5).into_dyn()),
        0.0,
        0.0
    ));
    let got = jit::compile_uncached(&f).unwrap().call(&args).unwrap();
    assert!(want.approx_eq(&got, 0.0, 0.0), "{got}");
    // a large sliced view: strides times indices stay inside the view
    let big = ndarray::Array1::from_iter((0..4000).map(|k| k as f64));
    let view = big.slice(ndarray::s![..;1000]).to_owned().into_dyn();
    let f = one("fn f(x: [n]R) -> R = sum(i:n) x[i] + x[i+3] + x[2*i]");
    let args = [Value::Array(view)];
    let want = interp::run(&f, &args).unwrap();
    let got = jit::compile_uncached(&f).unwrap().call(&args).unwrap();
    assert!(want.approx_eq(&got, 0.0, 0.0));
}

#[test]
fn thousand_levels_of_nesting_are_a_parse_error() {
    let forms = [
        format!(
            "fn f(x: R) -> R = {}x{}",
            "(".repeat(1000),
            ")".repeat(1000)
        ),
        format!("fn f(x: R) -> R = {}x", "-".repeat(1000)),
        format!(
            "fn f(x: R) -> R = {}x{}",
            "sqrt(".repeat(1000),
            ")".repeat(1000)
        ),
        format!("fn f(x: R) -> R = {}x", "sum(i:2) ".repeat(1000)),
        format!("fn f(x: R) -> R = {}0", "(gen(i:2) ".repeat(1000)),
        format!("fn f(x: R) -> R = {}x", "let y = x in ".repeat(1000)),
        format!(
            "fn f(x: R) -> R = {}x{}",
            "(x, ".repeat(1000),
            ").0".repeat(1000)
        ),
        format!(
            "fn f(x: [2]R) -> R = sum(i:2) [{}(i = 0)] * x[i]",
            "!".repeat(1000)
        ),
        format!(
            "fn f(x: [2]R) -> R = sum(i:2) [{}i = 0{}] * x[i]",
            "!(".repeat(1000),
            ")".repeat(1000)
        ),
        format!(
            "fn f(x: [2]R) -> R = sum(i:2) [{}i = 0{}] * x[i]",
            "(".repeat(1000),
            ")".repeat(1000)
        ),
        format!(
            "fn f(x: [2]R) -> R = sum(i:2) x[{}i{}]",
            "(".repeat(1000),
            ")".repeat(1000)
        ),
    ];
    for src in &forms {
        // the parser runs on a test thread (2 MiB stack): no overflow
        match load(src) {
            Err(Error::Parse(d)) => assert!(
                d.iter().any(|d| d.message.contains("nested too deeply")),
                "{:?}",
                d.first().map(|d| &d.message)
            ),
            other => panic!(
                "{}: expected a parse error, got {:?}",
                &src[..40],
                other.map(|_| ())
            ),
        }
    }
}
