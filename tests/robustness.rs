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
    let f = one("fn f(x: R) -> [1000000,1000000]R = gen(i:1000000, j:1000000) x");
    let m = call_error(&f, &[Value::Real(1.0)]);
    assert!(m.contains("1000000000000 elements"), "{m}");
    // a binder range past 2^31 is a type error
    assert!(matches!(
        load("fn f(x: R) -> [1000000000000]R = gen(i:1000000000000) x"),
        Err(Error::Type(_))
    ));
    // a named size that makes the result huge
    let f = one("fn f(x: [n]R) -> [n,n,n,n,n]R = gen(i:n, j:n, k:n, l:n, p:n) x[i]");
    let m = call_error(&f, &[vec(1000)]);
    assert!(m.contains("too large"), "{m}");
}

#[test]
fn size_arithmetic_overflow_is_an_error() {
    // 2^31 * 2^31 * 2^31 elements overflows 64 bits
    let f = one("fn f(x: R) -> [2147483648, 2147483648]R = gen(i:2147483648, j:2147483648) x");
    let m = call_error(&f, &[Value::Real(1.0)]);
    assert!(m.contains("too large"), "{m}");
    let f = one("fn f(x: R) -> R = (gen(i:2147483648, j:2147483648, k:2147483648) x)[0, 0, 0]");
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
    // (a block of 1000 `let`s is flat, not nested: see
    // flat_chains_of_ten_thousand_work_end_to_end)
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

// ---- issue 10: front end, interpreter and I/O ----

fn arr(shape: &[usize]) -> Value {
    let n: usize = shape.iter().product();
    Value::Array(
        ndarray::ArrayD::from_shape_vec(shape, (0..n).map(|k| 1.0 + k as f64).collect()).unwrap(),
    )
}

fn zeros(shape: &[usize]) -> Value {
    Value::Array(ndarray::ArrayD::zeros(shape))
}

/// Both engines (the JIT when the program is in normal form) give `want`.
fn both(src: &str, args: &[Value], want: &Value) {
    let f = one(src);
    let got = interp::run(&f, args).unwrap_or_else(|e| panic!("{src}: {e}"));
    assert!(got.approx_eq(want, 0.0, 0.0), "{src}: {got} vs {want}");
    if is_normal(&f) {
        let j = jit::compile_uncached(&f).unwrap().call(args).unwrap();
        assert!(j.approx_eq(want, 0.0, 0.0), "{src} (JIT): {j} vs {want}");
    }
}

#[test]
fn size_zero_axes_follow_zero_padding_everywhere() {
    let e03 = arr(&[0, 3]);
    let e0 = arr(&[0]);
    // access: twice into an empty outer axis (the interpreter panicked)
    both(
        "fn f(A: [n,m]R) -> R = A[0, 0]",
        std::slice::from_ref(&e03),
        &Value::Real(0.0),
    );
    // a row of an empty matrix is a zero row of the full inner size
    both(
        "fn f(A: [n,m]R) -> [m]R = A[1]",
        std::slice::from_ref(&e03),
        &zeros(&[3]),
    );
    // let + gen: an empty outer axis pads with a zero tensor of the element type
    both(
        "fn f(x: [n]R) -> [2]R = let t = gen(q:n) gen(r:2) 1 in t[1]",
        std::slice::from_ref(&e0),
        &zeros(&[2]),
    );
    both(
        "fn f(x: [n]R) -> R = let t = gen(q:n) gen(r:2) 1 in t[0, 1] + t[0][0]",
        std::slice::from_ref(&e0),
        &Value::Real(0.0),
    );
    // gen over an empty axis, and gens inside with an empty inner axis
    both(
        "fn f(x: [n]R) -> [n]R = gen(i:n) x[i]",
        std::slice::from_ref(&e0),
        &zeros(&[0]),
    );
    both(
        "fn f(A: [n,m]R) -> [m,n]R = gen(j:m, i:n) A[i,j]",
        std::slice::from_ref(&e03),
        &zeros(&[3, 0]),
    );
    // sum over an empty axis is 0, also under a guard
    both(
        "fn f(x: [n]R) -> R = sum(i:n) x[i]",
        std::slice::from_ref(&e0),
        &Value::Real(0.0),
    );
    both(
        "fn f(A: [n,m]R) -> [m]R = gen(j:m) sum(i:n) [i = j] * A[i,j]",
        std::slice::from_ref(&e03),
        &zeros(&[3]),
    );
    // pairs: a tensor of pairs over an empty axis, projected after padding
    let f = one(
        "fn f(x: [n]R) -> (R, [2]R) = let p = gen(i:n) (x[i], gen(k:2) x[i]) in (p[0].0, p[3].1)",
    );
    let got = interp::run(&f, std::slice::from_ref(&e0)).unwrap();
    assert_eq!(got, Value::pair(Value::Real(0.0), zeros(&[2])));
    // a pair parameter with empty components
    let f = one("fn f(z: [n]([m]R, R)) -> [m]R = z[0].0");
    let got = interp::run(&f, &[Value::pair(arr(&[0, 4]), arr(&[0]))]).unwrap();
    assert_eq!(got, zeros(&[4]));
    // an empty inner axis indexed out of range
    both(
        "fn f(A: [n,m]R) -> R = A[1, 5]",
        &[arr(&[2, 0])],
        &Value::Real(0.0),
    );
}

#[test]
fn index_arithmetic_cannot_wrap_around() {
    // each product fits, the sum is 2^64 + 1: refused at parse time with a
    // position instead of reading x[1]
    let src = "fn f(x: [n]R) -> R = x[2147483648*2147483648 + 2147483648*2147483648 + 2147483648*2147483648 + 2147483648*2147483648 + 1]";
    match load(src) {
        Err(Error::Parse(d)) => {
            assert!(d[0].message.contains("out of range"), "{}", d[0].message);
            assert_eq!(d[0].line_col(src), Some((1, 24)));
        }
        other => panic!("expected a parse error, got {:?}", other.map(|_| ())),
    }
    // a coefficient times 2^31 past 2^62, in an index and in a predicate
    for src in [
        "fn f(x: [n]R) -> R = sum(i:n) x[2147483649*i]",
        "fn f(x: [n]R) -> R = sum(i:n, j:n) x[1073741824*i + 1073741824*j + 1]",
        "fn f(x: [n]R) -> R = sum(i:n) [4611686018427387904 > -4611686018427387904 + i] * x[i]",
    ] {
        assert!(
            matches!(load(src), Err(Error::Parse(_))),
            "{src} should be refused"
        );
    }
    // within the limit: fine, and padded with zero
    let f = one("fn f(x: [n]R) -> R = sum(i:n) x[1073741824*i + 2147483647] + x[i]");
    assert_eq!(interp::run(&f, &[vec(2)]).unwrap(), Value::Real(0.5 + 0.75));
    // programs built without text are checked by the type checker
    let mut f = one("fn f(x: [n]R) -> R = sum(i:n) x[i + 1]");
    if let einsat::Expr::Sum(_, _, body) = &mut f.body {
        if let einsat::Expr::Access(_, a) = &mut **body {
            a.terms.insert("i".into(), 1 << 40);
        }
    }
    match einsat::types::check(&f) {
        Err(d) => assert!(d[0].message.contains("out of range"), "{:?}", d),
        Ok(_) => panic!("a huge coefficient should be refused"),
    }
    // binder ranges are at most 2^31, so index values stay below 2^31
    match load("fn f(x: R) -> R = sum(i:4294967296) x") {
        Err(Error::Type(d)) => assert!(d[0].message.contains("limit"), "{:?}", d),
        other => panic!("expected a type error, got {:?}", other.map(|_| ())),
    }
}

#[test]
fn a_hundred_thousand_functions_check_in_linear_time() {
    let mut src = String::new();
    for k in 0..100_000 {
        src.push_str(&format!("fn f{k}(x: [n]R) -> R = sum(i:n) x[i] * {k}\n"));
    }
    let p = load(&src).unwrap();
    assert_eq!(p.functions.len(), 100_000);
    // a duplicate at the end is still found
    src.push_str("fn f5(x: R) -> R = x\n");
    match load(&src) {
        Err(Error::Type(d)) => assert!(d[0].message.contains("`f5` is defined twice")),
        other => panic!("expected a type error, got {:?}", other.map(|_| ())),
    }
}

#[test]
fn flat_chains_of_ten_thousand_work_end_to_end() {
    // test threads have a 2 MiB stack: parse, check, print, run and drop
    let sum = format!(
        "fn f(x: [3]R) -> R = x[0]{}",
        " + x[1] * 2 - x[2]".repeat(5_000)
    );
    let lets = {
        let mut s = String::from("fn g(x: [3]R) -> R = ");
        for k in 0..10_000 {
            s.push_str(&format!("let y{k} = x[{}] + {k} in ", k % 3));
        }
        s.push_str("y9999 + y0");
        s
    };
    let paren = format!("fn h(x: R) -> R = {}x{}", "(".repeat(200), ")".repeat(200));
    let args = [Value::Array(ndarray::arr1(&[1.0, 2.0, 3.0]).into_dyn())];
    let f = one(&sum);
    assert_eq!(interp::run(&f, &args).unwrap(), Value::Real(1.0 + 5_000.0));
    let back = one(&print_function(&f));
    assert_eq!(back, f);
    let g = one(&lets);
    assert_eq!(
        interp::run(&g, &args).unwrap(),
        Value::Real((1.0 + 9999.0) + 1.0)
    );
    assert_eq!(one(&print_function(&g)), g);
    let h = one(&paren);
    assert_eq!(
        interp::run(&h, &[Value::Real(2.0)]).unwrap(),
        Value::Real(2.0)
    );
    drop((f, g, back));
    // a chain right at the depth limit loads, runs and drops on this stack
    let limit = einsat::syntax::parser::MAX_TREE_DEPTH;
    let at = format!("fn f(x: R) -> R = x{}", " + x".repeat(limit - 1));
    let f = one(&at);
    assert_eq!(f.body.depth(), limit);
    assert_eq!(
        interp::run(&f, &[Value::Real(1.0)]).unwrap(),
        Value::Real(limit as f64)
    );
    drop(f);
    let over = format!("fn f(x: R) -> R = x{}", " + x".repeat(limit));
    assert!(matches!(load(&over), Err(Error::Parse(_))));
    // past the size limits: a clear error, on this small stack too
    let long = format!("fn f(x: R) -> R = x{}", " + x".repeat(50_000));
    match load(&long) {
        Err(Error::Parse(d)) => assert!(d[0].message.contains("too large"), "{}", d[0].message),
        other => panic!("expected a parse error, got {:?}", other.map(|_| ())),
    }
    let huge = format!("fn f(x: R) -> R = x{} +", " + x".repeat(150_000));
    match load(&huge) {
        Err(Error::Parse(d)) => assert!(d[0].message.contains("too large"), "{}", d[0].message),
        other => panic!("expected a parse error, got {:?}", other.map(|_| ())),
    }
}

#[test]
fn errors_inside_and_after_long_chains_drop_safely() {
    // trees near the limit left behind by a syntax error are dropped on this
    // 2 MiB test thread: in a call argument, a pair, a let block, an access chain
    let chain = format!("x{}", " + x".repeat(11_000));
    let dot0 = ".0".repeat(20_000);
    for src in [
        format!("fn f(x: R) -> R = max({chain}, )"),
        format!("fn f(x: R) -> R = ({chain}, {chain}, )"),
        format!("fn f(x: R) -> R = let y = {chain} in let z = {chain} in"),
        format!("fn f(x: R) -> R = sqrt({chain}) * ({chain}) + ({chain}) +"),
        format!("fn f(x: R) -> R = (x, x){dot0} +"),
        format!("fn f(x: R) -> R = gen(i:2) {chain} + {chain}"),
    ] {
        assert!(
            matches!(load(&src), Err(Error::Parse(_))),
            "{} should be a parse error",
            &src[..30]
        );
    }
}
