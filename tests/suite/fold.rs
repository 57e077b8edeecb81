//! The indexed fold `fold(i:n, acc = init) body` through every stage:
//! syntax (parse/print round trip, errors with positions), types (the
//! accumulator's type, what is bound where), the interpreter's meaning
//! (sequential, `init` outside the loop, an empty fold is its `init`, the
//! accumulator holds ordinary numbers), the builder, the optimiser and the
//! JIT against the interpreter (every layout; offset data, huge and tiny
//! magnitudes, inf and NaN), the random generator's `folds` feature and
//! differential testing with it, and `examples/fold.tl`.
#![cfg(feature = "testing")] // uses the testing support

use crate::common;

use common::load1;

use einsat::frontend::builder::{fold, fold_named, func, gen, num, pair, sum};
use einsat::interp::{self, Value};
use einsat::jit;
use einsat::opt::{optimize, Options};
use einsat::syntax::print_function;
use einsat::testing::difftest::{run, DiffConfig};
use einsat::testing::{gen_function, relayout_value, GenConfig, Layout};
use einsat::{Expr, Function};
use ndarray::arr1;

fn vec1(x: &[f64]) -> Value {
    Value::Array(arr1(x).into_dyn())
}

fn real(v: &Value) -> f64 {
    match v {
        Value::Real(x) => *x,
        _ => panic!("not a number: {v}"),
    }
}

fn close(a: f64, b: f64, rel: f64) -> bool {
    if a.is_nan() || b.is_nan() {
        return a.is_nan() && b.is_nan();
    }
    if a.is_infinite() || b.is_infinite() {
        return a == b;
    }
    (a - b).abs() <= rel * a.abs().max(b.abs()) + 1e-300
}

fn flat(v: &Value) -> Vec<f64> {
    match v {
        Value::Real(x) => vec![*x],
        Value::Array(a) => a.iter().copied().collect(),
        Value::Pair(a, b) => [flat(a), flat(b)].concat(),
    }
}

fn values_close(a: &Value, b: &Value, rel: f64) -> bool {
    let (x, y) = (flat(a), flat(b));
    x.len() == y.len() && x.iter().zip(&y).all(|(p, q)| close(*p, *q, rel))
}

fn example(name: &str) -> Function {
    let src =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/fold.tl")).unwrap();
    einsat::load(&src)
        .unwrap()
        .get(name)
        .unwrap_or_else(|| panic!("no {name}"))
        .clone()
}

/// The interpreter's value, after checking that the optimised program
/// (interpreted) and the JIT (every layout) give it within `rel`.
fn three_ways(f: &Function, args: &[Value], rel: f64) -> Value {
    let want = interp::run(f, args).unwrap();
    let g = optimize(f, &Options::default()).unwrap().program;
    assert!(einsat::extract::is_normal(&g), "{}", print_function(&g));
    let opt = interp::run(&g, args).unwrap();
    assert!(
        values_close(&want, &opt, rel),
        "optimised {opt} vs {want}\n{}",
        print_function(&g)
    );
    let k = jit::compile(&g).unwrap_or_else(|e| panic!("{e}\n{}", print_function(&g)));
    for l in Layout::ALL {
        let a: Vec<Value> = args.iter().map(|v| relayout_value(v, l)).collect();
        let j = k.call(&a).unwrap();
        assert!(
            values_close(&want, &j, rel),
            "jit ({l:?}) {j} vs {want}\n{}",
            print_function(&g)
        );
    }
    want
}

// ------------------------------------------------------------------ syntax

#[test]
fn parse_print_round_trip() {
    let src = "\
fn a(c: [n]R, x: R) -> R = fold(i:n, acc = 0) acc * x + c[i]
fn b(x: [n]R) -> [n]R = gen(k:n) fold(i:n, acc = 0) where(i <= k, acc + x[i], acc)
fn c(x: [n]R) -> R = (fold(i:n, s = (0, 0)) (s.1, s.0 + x[i])).1 * 2
fn d(x: [n]R) -> R = (fold(i:n, a = x[0]) a + x[i]) + fold(j:3, b = 1) b * 2
fn e(x: [n]R) -> R = fold(i:n, a = fold(j:n, b = 0) b + x[j]) let t = a * x[i] in t + 1
fn f(x: [n]R) -> ((R, R), R) = fold(i:n, a = ((1, 2), 3)) ((a.0.1, a.1), a.0.0 + i)
";
    let p = einsat::load(src).unwrap();
    let Expr::Fold(i, _, acc, init, body) = &p.functions[0].body else {
        panic!("{:?}", p.functions[0].body)
    };
    assert_eq!((i.as_str(), acc.as_str()), ("i", "acc"));
    assert_eq!(**init, Expr::Num(0.0));
    // the body reaches as far right as it can, like sum's
    assert!(matches!(**body, Expr::Bin(..)));
    // the index is a number in the body, the accumulator a value
    let Expr::Fold(.., body) = &p.functions[1].body.children()[0] else {
        panic!()
    };
    assert!(matches!(**body, Expr::Where(..)));
    for f in &p.functions {
        let text = print_function(f);
        let back = einsat::load(&text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(&back.functions[0], f, "{text}");
    }
    // parentheses only where the fold does not end the text
    let text = print_function(&p.functions[3]);
    assert!(
        text.contains("(fold(i:n, a = x[0]) a + x[i]) + fold(j:3, b = 1) b * 2"),
        "{text}"
    );
}

#[test]
fn errors_are_reported_not_panics() {
    let cases = [
        // the body must have the accumulator's type
        (
            "fn f(x: [3]R) -> R = fold(i:3, a = 0) (a, x[i])",
            "must have the accumulator's type R, but it has type (R, R)",
        ),
        (
            "fn f(x: [3]R) -> (R, R) = fold(i:3, a = (0, 0)) a.0 + x[i]",
            "(R, R)",
        ),
        // the accumulator is a number or pairs of numbers
        (
            "fn f(x: [3]R) -> [3]R = fold(i:3, a = x) a",
            "must be a number or a pair of numbers",
        ),
        // the index and the accumulator are bound only in the body
        (
            "fn f(x: [3]R) -> R = fold(i:3, a = x[i]) a",
            "unknown index `i`",
        ),
        (
            "fn f(x: [3]R) -> R = fold(i:3, a = a) a",
            "unknown name `a`",
        ),
        (
            "fn f(x: [3]R) -> R = (fold(i:3, a = 0) a) + a",
            "unknown name `a`",
        ),
        // one name for both
        (
            "fn f(x: [3]R) -> R = fold(i:3, i = 0) i",
            "name of its index",
        ),
        // a plain index ranges over its axis
        ("fn f(x: [3]R) -> R = fold(i:4, a = 0) a + x[i]", "axis"),
        // the head's pieces
        ("fn f(x: [3]R) -> R = fold(i:3, a = 0)", "no body"),
        ("fn f(x: [3]R) -> R = fold(i:3 a = 0) a", "expected `,`"),
        ("fn f(x: [3]R) -> R = fold(i:3, a 0) a", "expected `=`"),
        ("fn f(x: [3]R) -> R = fold(3, a = 0) a", "an index name"),
        (
            "fn f(x: [3]R) -> R = fold(i:3, a = 0 a",
            "to close the head of `fold`",
        ),
        // a size name not bound by a parameter
        ("fn f(x: [3]R) -> R = fold(i:k, a = 0) a", "size `k`"),
    ];
    for (src, want) in cases {
        let e = einsat::load(src)
            .err()
            .unwrap_or_else(|| panic!("{src} loaded"));
        let msg = e.to_string();
        assert!(msg.contains(want), "{src}: {msg}");
    }
    // errors point at the source: line and column
    let e = einsat::load("fn f(x: [3]R) -> R =\n  fold(i:3, a = 0) (a, a)")
        .unwrap_err()
        .to_string();
    assert!(e.contains("2:"), "{e}");
}

#[test]
fn builder_makes_the_same_program() {
    let f = func("polyval", |b| {
        let c = b.param("c", "[n]R");
        let x = b.param("x", "R");
        fold_named("i", "acc", "n", num(0.0), |i, acc| {
            acc * x.clone() + c.at(i)
        })
    })
    .unwrap();
    assert_eq!(
        f.body,
        load1("fn f(c: [n]R, x: R) -> R = fold(i:n, acc = 0) acc * x + c[i]").body
    );
    // automatic names, a pair accumulator, a fold inside a gen
    let g = func("fib", |b| {
        let x = b.param("x", "[n]R");
        gen("n", |k| {
            fold(3, pair(num(0.0), x.at(k)), |_, a| {
                pair(a.snd(), a.fst() + a.snd())
            })
            .fst()
        })
    })
    .unwrap();
    assert!(einsat::types::check(&g).is_ok(), "{}", print_function(&g));
    let args = [vec1(&[1.0, 2.0])];
    // (0, x) -> (x, x) -> (x, 2x) -> (2x, 3x): first component 2x
    let v = flat(&interp::run(&g, &args).unwrap());
    assert_eq!(v, vec![2.0, 4.0]);
    // an accumulator used outside its fold is an error, not a panic
    let leaked = std::cell::RefCell::new(None);
    let r = func("bad", |b| {
        let x = b.param("x", "[n]R");
        let s = sum("n", |i| x.at(i));
        let f = fold("n", s, |_, a| {
            *leaked.borrow_mut() = Some(a.clone());
            a
        });
        f + leaked.borrow().clone().unwrap()
    });
    assert!(r.is_err());
}

// --------------------------------------------------------------- semantics

#[test]
fn horner_and_polyval_match_hand_computed_values() {
    let polyval = example("polyval");
    let horner = example("horner");
    let c = vec1(&[2.0, -3.0, 0.5, 4.0]);
    for x in [0.0, 1.0, -2.0, 0.3, 1e3] {
        // highest power first: 2x^3 - 3x^2 + 0.5x + 4
        let want = 2.0 * x * x * x - 3.0 * x * x + 0.5 * x + 4.0;
        let got = real(&three_ways(&polyval, &[c.clone(), Value::Real(x)], 1e-12));
        assert!(close(got, want, 1e-12), "polyval({x}) = {got}, want {want}");
        // lowest power first: 2 - 3x + 0.5x^2 + 4x^3
        let want = 2.0 - 3.0 * x + 0.5 * x * x + 4.0 * x * x * x;
        let got = real(&three_ways(&horner, &[c.clone(), Value::Real(x)], 1e-12));
        assert!(close(got, want, 1e-12), "horner({x}) = {got}, want {want}");
    }
    // an empty polynomial is the initial value
    let got = real(&three_ways(&polyval, &[vec1(&[]), Value::Real(2.0)], 0.0));
    assert_eq!(got, 0.0);
}

#[test]
fn prefix_sums_in_the_written_order() {
    let f = example("cumsum");
    let x = [1.5, -2.0, 1e8, 0.25, -1e8, 3.0];
    let got = flat(&three_ways(&f, &[vec1(&x)], 0.0));
    let mut acc = 0.0;
    let want: Vec<f64> = x
        .iter()
        .map(|v| {
            acc += v;
            acc
        })
        .collect();
    // sequential additions: the same bits in every engine
    assert_eq!(got, want);
}

#[test]
fn pair_accumulators_fibonacci_and_argmax() {
    let fib = example("fibonacci");
    let steps = vec1(&[0.0; 10]);
    let got = flat(&three_ways(
        &fib,
        &[Value::Real(0.0), Value::Real(1.0), steps],
        0.0,
    ));
    assert_eq!(got, vec![55.0, 89.0]);
    let argmax = example("argmax");
    let got = flat(&three_ways(
        &argmax,
        &[vec1(&[3.0, -1.0, 7.5, 7.5, 2.0])],
        0.0,
    ));
    assert_eq!(got, vec![7.5, 2.0]);
}

#[test]
fn kahan_keeps_its_compensation_through_the_optimiser_and_jit() {
    // 1 followed by 1000 values of 1e-16: each is below half an ulp of 1,
    // so the plain sum stays 1; the compensated sum keeps them
    let mut x = vec![1.0];
    x.extend(std::iter::repeat_n(1e-16, 1000));
    let want = 1.0 + 1000.0 * 1e-16;
    let plain = x.iter().sum::<f64>();
    assert_eq!(plain, 1.0);
    let f = example("kahan");
    let got = real(&three_ways(&f, &[vec1(&x)], 0.0));
    assert!(close(got, want, 1e-15), "{got} vs {want}");
}

#[test]
fn empty_fold_is_its_init_and_init_is_evaluated_once_outside() {
    let f = load1("fn f(x: [n]R) -> (R, R) = fold(i:n, a = (x[0] * 2, 7)) (a.1, a.0 + x[i])");
    // n = 0: x[0] reads the zero padding; the fold is its init
    let got = flat(&three_ways(&f, &[vec1(&[])], 0.0));
    assert_eq!(got, vec![0.0, 7.0]);
    let got = flat(&three_ways(&f, &[vec1(&[1.0, 2.0])], 0.0));
    // (2, 7) -> (7, 3) -> (3, 9)
    assert_eq!(got, vec![3.0, 9.0]);
    // a literal empty range
    let g = load1("fn g(x: R) -> R = fold(i:0, a = x + 1) a * 1e300 * 1e300");
    assert_eq!(real(&three_ways(&g, &[Value::Real(2.0)], 0.0)), 3.0);
}

#[test]
fn the_accumulator_holds_ordinary_numbers() {
    // a failed bracket is a strong zero; stored in the accumulator it is
    // a plain 0, so 0 * inf is NaN, as for a reduction
    let s = load1("fn s(x: [3]R) -> R = (sum(i:1) [i = 5]) * (1 / (x[0] - x[0]))");
    let f = load1("fn f(x: [3]R) -> R = (fold(i:1, a = 1) [i = 5]) * (1 / (x[0] - x[0]))");
    let g = load1("fn g(x: [3]R) -> R = (fold(i:0, a = [0 = 1]) a) * (1 / (x[0] - x[0]))");
    let x = [vec1(&[1.0, 2.0, 3.0])];
    assert_eq!(real(&interp::run(&s, &x).unwrap()), 0.0);
    assert!(real(&three_ways(&f, &x, 0.0)).is_nan());
    assert!(real(&three_ways(&g, &x, 0.0)).is_nan());
    // inside the body a bracket still guards its own product
    let h = load1("fn h(x: [3]R) -> R = fold(i:3, a = 0) a + [i > 0] * (1 / x[i])");
    let got = real(&three_ways(&h, &[vec1(&[0.0, 2.0, 4.0])], 0.0));
    assert_eq!(got, 0.75);
}

#[test]
fn names_shadow_and_nest() {
    // an inner fold's accumulator shadows the outer one of the same name;
    // the outer index is a number inside
    let f = load1("fn f(x: [n]R) -> R = fold(i:n, a = 0) a + fold(j:n, a = i) a + x[j] * i");
    let x = [1.0, 2.0, 3.0];
    let mut want = 0.0;
    for i in 0..3 {
        let mut inner = i as f64;
        for v in x {
            inner += v * i as f64;
        }
        want += inner;
    }
    let got = real(&three_ways(&f, &[vec1(&x)], 0.0));
    assert_eq!(got, want);
    // a let outside the fold with the accumulator's name
    let g = load1("fn g(x: [n]R) -> R = let a = 10 in fold(i:n, a = a) a + x[i] + 1");
    let got = real(&three_ways(&g, &[vec1(&[1.0, 2.0])], 0.0));
    assert_eq!(got, 15.0);
}

#[test]
fn specials_and_magnitudes_agree_with_the_interpreter() {
    let progs = [
        "fn p(x: [n]R) -> R = fold(i:n, a = 0) a * 0.5 + x[i]",
        "fn p(x: [n]R) -> R = fold(i:n, a = 1) a * x[i]",
        "fn p(x: [n]R) -> [n]R = gen(k:n) fold(i:n, a = 0) where(i <= k, a + x[i], a)",
        "fn p(x: [n]R) -> (R, R) = fold(i:n, a = (0, 0)) (a.0 + x[i], a.1 + x[i] * x[i])",
        "fn p(x: [n]R) -> R = fold(i:n, a = 0) max(a, x[i]) + sum(j:n) [j < i] * x[j]",
        "fn p(x: [n]R, A: [n,n]R) -> [n]R = gen(r:n) fold(i:n, a = x[r]) a + A[r, i] * a",
    ];
    let data: [&[f64]; 6] = [
        &[1.0, 2.0, 3.0, 4.0],
        &[1e8 + 1.0, 1e8 - 2.0, 1e8 + 0.5, 1e8],
        &[1e300, 1e300, -1e-300, 5e-324],
        &[f64::INFINITY, 1.0, -2.0, 3.0],
        &[1.0, f64::NAN, 2.0, 0.0],
        &[-0.0, 0.0, -0.0, 1e-310],
    ];
    for src in progs {
        let f = load1(src);
        for x in data {
            let mut args = vec![vec1(x)];
            if f.params.len() == 2 {
                let n = x.len();
                let a = ndarray::Array2::from_shape_fn((n, n), |(r, c)| x[(r + c) % n] * 0.25);
                args.push(Value::Array(a.into_dyn()));
            }
            three_ways(&f, &args, 1e-12);
        }
    }
}

#[test]
fn a_gen_read_in_the_body_keeps_its_padding() {
    // a gen that reads the accumulator cannot be computed ahead of the
    // loop: the optimiser rewrites the read in place, and the padding
    // beyond the axis stays a plain 0 (0 * inf is NaN)
    let progs = [
        "fn f(x: [n]R) -> R = fold(i:n, a = 1) a + (gen(k:n) a + x[k])[i+1] * x[0]",
        "fn f(x: [3]R) -> R = fold(i:3, a = 1) a + (gen(k:3) [k > 0] * a)[i+1] * x[0]",
        "fn f(x: [n]R) -> (R, R) = fold(i:n, a = (1, 2)) ((gen(k:n) (a.1, x[k]))[i-1].0 * x[0], a.0)",
    ];
    for src in progs {
        let f = load1(src);
        for x in [
            [1.0, 2.0, 3.0],
            [f64::INFINITY, 2.0, 3.0],
            [-0.0, 1e300, -1e300],
        ] {
            three_ways(&f, &[vec1(&x)], 1e-12);
        }
    }
}

#[test]
fn examples_run_in_every_engine() {
    let src =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/fold.tl")).unwrap();
    let p = einsat::load(&src).unwrap();
    assert!(p.functions.len() >= 6);
    let x = vec1(&[0.5, -1.25, 2.0, 3.5, -0.75]);
    for f in &p.functions {
        let args: Vec<Value> = f
            .params
            .iter()
            .map(|p| match p.ty {
                einsat::Type::Real => Value::Real(0.875),
                _ => x.clone(),
            })
            .collect();
        three_ways(f, &args, 1e-12);
    }
}

// ------------------------------------------------------ random programs

#[test]
fn generated_programs_hold_folds() {
    let cfg = GenConfig::default();
    fn has(e: &Expr) -> bool {
        matches!(e, Expr::Fold(..)) || e.children().into_iter().any(has)
    }
    let with: Vec<Function> = (0..400u64)
        .map(|s| gen_function(s, &cfg))
        .filter(|f| has(&f.body))
        .collect();
    assert!(
        with.len() >= 20,
        "only {} of 400 programs hold a fold",
        with.len()
    );
    for f in &with {
        assert!(einsat::types::check(f).is_ok(), "{}", print_function(f));
        let back = einsat::load(&print_function(f)).unwrap();
        assert_eq!(&back.functions[0], f);
    }
    let off = GenConfig::default().with_features("all,-folds").unwrap();
    assert!((0..400u64).all(|s| !has(&gen_function(s, &off).body)));
}

#[test]
fn difftest_with_folds_finds_no_disagreement() {
    let mut cfg = DiffConfig::default();
    cfg.gen = cfg.gen.with_features("all").unwrap();
    let s = run(&cfg, 25, 300, 2, 1, &|_, _| {});
    assert_eq!(s.cases, 300);
    assert_eq!(
        s.disagreeing,
        0,
        "{:?}",
        s.disagreements
            .first()
            .map(|d| print_function(&d.shrunk.function))
    );
    assert_eq!(s.jit_cases, 300, "skipped: {:?}", s.jit_skipped);
}
