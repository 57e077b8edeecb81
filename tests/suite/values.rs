//! Sizes and indices as numbers, and `where(c, a, b)`: parsing and printing
//! (round trip), type errors with line:column, the interpreter's meaning
//! (means, `n-1-i`, NaN/infinity/strong zeros in conditions and branches,
//! data near 1e8), and the optimiser and the JIT against the interpreter.
#![cfg(feature = "testing")]

use crate::common;

use common::agree::agree_in_every_layout;
use common::load1;

use einsat::interp::{self, Value};
use einsat::jit;
use einsat::opt::{optimize, Options};
use einsat::syntax::{parse_program, print_function, Expr};
use einsat::testing::{gen_function, random_inputs, random_sizes, GenConfig};
use ndarray::{arr1, ArrayD};
use rand::SeedableRng;

fn vec_arg(v: &[f64]) -> Value {
    Value::Array(arr1(v).into_dyn())
}

fn as_vec(v: &Value) -> Vec<f64> {
    match v {
        Value::Array(a) => a.iter().copied().collect(),
        Value::Real(x) => vec![*x],
        _ => panic!("not an array: {v}"),
    }
}

/// Interpreter as written, optimised + interpreter, optimised + JIT.
fn three_ways(f: &einsat::Function, args: &[Value]) -> [Vec<f64>; 3] {
    let a = interp::run(f, args).unwrap();
    let o = optimize(f, &Options::default()).unwrap().program;
    let b = interp::run(&o, args).unwrap();
    let k = jit::compile(&o).unwrap_or_else(|e| panic!("{e}\n{}", print_function(&o)));
    let c = k.call(args).unwrap();
    [as_vec(&a), as_vec(&b), as_vec(&c)]
}

fn close(a: f64, b: f64, rtol: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= rtol * a.abs().max(b.abs())
}

fn all_close(r: &[Vec<f64>; 3], rtol: f64) {
    for k in 1..3 {
        assert_eq!(r[0].len(), r[k].len());
        for (x, y) in r[0].iter().zip(&r[k]) {
            assert!(close(*x, *y, rtol), "{:?} vs {:?}", r[0], r[k]);
        }
    }
}

#[test]
fn names_in_value_position_become_index_and_size_values() {
    let f = load1("fn f(x: [n]R) -> [n]R = gen(i:n) x[i] * i + (n - 1 - i)");
    let Expr::Gen(_, _, body) = &f.body else {
        panic!()
    };
    let s = format!("{body:?}");
    assert!(s.contains("IndexValue") && s.contains("SizeValue"), "{s}");
    // integer arithmetic on an index folds into one index value
    let g = load1("fn f(x: [n]R) -> [n]R = gen(i:n) x[i] * (2*i + 1)");
    assert!(
        format!("{:?}", g.body).contains("IndexValue(Affine { terms: {\"i\": 2}, constant: 1 })")
    );
    // a let or a parameter of the same name wins, as before
    let h = load1("fn f(x: [3]R) -> R = sum(i:3) let i = 2 in x[i] * i");
    assert!(!format!("{:?}", h.body).contains("IndexValue"));
}

#[test]
fn print_parse_round_trip() {
    for src in [
        "fn f(x: [n]R) -> [n]R = gen(i:n) x[i] * i + (n - 1 - i)",
        "fn f(x: [n]R) -> R = sum(i:n) x[i] / n",
        "fn f(x: [n]R) -> [n]R = gen(i:n) x[i] * (2*i - 1) - (-i)",
        "fn f(x: [n]R) -> [n]R = gen(i:n) where(i > 0 && !(x[i] < 0) || x[i] = 1, x[i-1], x[i])",
        "fn f(x: [n]R) -> [n]R = gen(i:n) where((sum(j:n) x[j]) >= n, 1 / x[i], 0)",
        "fn f(x: [n]R) -> [n]R = gen(i:n) where(!(i + 1 != n), 2, where(x[i] <= 0, 3, 4))",
    ] {
        let p = parse_program(src).unwrap().program;
        let printed = print_function(&p.functions[0]);
        let q = parse_program(&printed)
            .unwrap_or_else(|e| panic!("{printed}: {e:?}"))
            .program;
        assert_eq!(p, q, "{printed}");
    }
    // random programs with index values and `where`, and their optimised forms
    let cfg = GenConfig::default();
    let mut seen = (0, 0);
    for seed in 0..300 {
        let f = gen_function(seed, &cfg);
        let text = format!("{f:?}");
        seen.0 += text.contains("IndexValue") as usize;
        seen.1 += text.contains("Where") as usize;
        let printed = print_function(&f);
        let q = parse_program(&printed).unwrap_or_else(|e| panic!("{printed}: {e:?}"));
        assert_eq!(q.program.functions[0], f, "{printed}");
        // an optimised program prints to text that reads back to a program
        // printing the same (its negative literals read back as negations)
        let g = optimize(&f, &Options::default()).unwrap().program;
        let printed = print_function(&g);
        let q = parse_program(&printed).unwrap_or_else(|e| panic!("{printed}: {e:?}"));
        assert_eq!(print_function(&q.program.functions[0]), printed);
    }
    assert!(seen.0 >= 20 && seen.1 >= 20, "{seen:?}");
}

fn err_of(src: &str) -> String {
    einsat::load(src).unwrap_err().to_string()
}

#[test]
fn errors_name_line_and_column() {
    let e = err_of("fn f(x: [n]R) -> [n]R =\n  gen(i:n) x[i] * k");
    assert!(e.contains("<input>:2:19: error: unknown name `k`"), "{e}");
    let e = err_of("fn f(x: [n]R) -> [n]R = gen(i:n) where(x[i], 1, 2)");
    assert!(
        e.contains("1:44") && e.contains("expected a comparison"),
        "{e}"
    );
    let e = err_of("fn f(x: [n]R) -> R = where(x > 0, 1, 2)");
    assert!(
        e.contains("1:28") && e.contains("a comparison in `where` needs a number"),
        "{e}"
    );
    let e = err_of("fn f(x: [n]R) -> [n]R = gen(i:n) where(x[i] > 0, x, 2)");
    assert!(
        e.contains("1:50") && e.contains("`where` needs a number"),
        "{e}"
    );
    let e = err_of("fn f(x: [n]R) -> [n]R = gen(n:n) x[n] * n");
    assert!(
        e.contains("1:41") && e.contains("both an index and a size"),
        "{e}"
    );
    // an index used as a number is still no value to index with
    let e = err_of("fn f(x: [n]R, y: R) -> R = x[y]");
    assert!(e.contains("`y` is a value, not an index"), "{e}");
}

#[test]
fn interpreter_meaning() {
    let run = |src: &str, x: &[f64]| as_vec(&interp::run(&load1(src), &[vec_arg(x)]).unwrap());
    // a mean and a variance, on data near 1e8 (centred: exact here)
    let x = [1e8 + 1.0, 1e8 + 2.0, 1e8 + 3.0, 1e8 + 6.0];
    assert_eq!(
        run("fn f(x: [n]R) -> R = sum(i:n) x[i] / n", &x),
        [1e8 + 3.0]
    );
    let var =
        "fn f(x: [n]R) -> R = let m = sum(i:n) x[i] / n in sum(i:n) (x[i] - m) * (x[i] - m) / n";
    assert_eq!(run(var, &x), [3.5]);
    // indices and sizes as numbers
    assert_eq!(
        run("fn f(x: [n]R) -> [n]R = gen(i:n) n - 1 - i", &[0.0; 4]),
        [3.0, 2.0, 1.0, 0.0]
    );
    assert_eq!(
        run(
            "fn f(x: [n]R) -> [n]R = gen(i:n) x[i] * (2*i + 1)",
            &[1.0, 1.0, 2.0]
        ),
        [1.0, 3.0, 10.0]
    );
    // only the chosen side is evaluated: no NaN from 1/0 or 0 * inf
    let inf = f64::INFINITY;
    let r = run(
        "fn f(x: [n]R) -> [n]R = gen(i:n) where(x[i] != 0, 1 / x[i], 0)",
        &[2.0, 0.0, -0.0, inf],
    );
    assert_eq!(r, [0.5, 0.0, 0.0, 0.0]);
    // comparisons with NaN are false, except `!=`
    let nan = f64::NAN;
    let r = run(
        "fn f(x: [n]R) -> [n]R = gen(i:n) where(x[i] < 1, 1, 0) + 10 * where(x[i] != x[i], 1, 0) + 100 * where(!(x[i] >= 1), 1, 0)",
        &[nan, 0.0, 2.0, inf, -inf],
    );
    assert_eq!(r, [110.0, 101.0, 0.0, 0.0, 101.0]);
    // the result of `where` is an ordinary number, never a strong zero
    let r = run(
        "fn f(x: [n]R) -> [n]R = gen(i:n) where(x[i] > 0, [i = 5], 1) * (1 / 0)",
        &[1.0, -1.0],
    );
    assert!(r[0].is_nan() && r[1] == inf, "{r:?}");
    // a strong zero inside a branch keeps its own meaning
    let r = run(
        "fn f(x: [n]R) -> [n]R = gen(i:n) where(x[i] > 0, [i = 5] * (1 / 0), 1)",
        &[1.0, -1.0],
    );
    assert_eq!(r, [0.0, 1.0]);
    // clamped stencil
    let r = run(
        "fn f(x: [n]R) -> [n]R = gen(i:n) where(i > 0, x[i-1], x[i]) + where(i < n - 1, x[i+1], x[i])",
        &[1.0, 2.0, 4.0],
    );
    assert_eq!(r, [3.0, 5.0, 6.0]);
}

#[test]
fn optimiser_and_jit_agree_with_the_interpreter() {
    let programs = [
        "fn f(x: [n]R) -> R = sum(i:n) x[i] / n",
        "fn f(x: [n]R) -> R = let m = sum(i:n) x[i] / n in sum(i:n) (x[i] - m) * (x[i] - m) / n",
        "fn f(x: [n]R) -> [n]R = gen(i:n) x[i] * i + (n - 1 - i)",
        "fn f(x: [n]R) -> [n]R = gen(i:n) where(x[i] != 0, 1 / x[i], 0)",
        "fn f(x: [n]R) -> [n]R = gen(i:n) where(i > 0, x[i-1], x[i]) + x[i] + where(i < n - 1, x[i+1], x[i])",
        "fn f(x: [n]R) -> [n]R = gen(i:n) where(x[i] < 1 || !(x[i] = x[i]), 1, 0) + where(x[i] != x[i], 10, 0)",
        "fn f(x: [n]R) -> [n]R = gen(i:n) sum(j:n) where(j <= i, x[j], 0) * (i - j + 1)",
        "fn f(x: [n]R) -> [n,n]R = gen(i:n, j:n) where(i = j, n, x[i] * j)",
    ];
    let inputs: [&[f64]; 4] = [
        &[1e8 + 1.0, 1e8 + 2.0, 1e8 + 3.0, 1e8 + 6.0, 1e8 - 0.5],
        &[0.0, -0.0, 3.0, -2.5, 1.0, 7.0, 0.25],
        &[f64::NAN, f64::INFINITY, -1.0, 0.0, f64::NEG_INFINITY],
        &[2.0],
    ];
    for src in programs {
        let f = load1(src);
        for x in inputs {
            let r = three_ways(&f, &[vec_arg(x)]);
            all_close(&r, 1e-12);
        }
    }
}

#[test]
fn random_programs_with_values_agree() {
    // the generator's programs with index values and `where`, three ways
    let cfg = GenConfig::default();
    let mut checked = 0;
    for seed in 0..120 {
        let f = gen_function(seed, &cfg);
        let text = format!("{f:?}");
        if !text.contains("IndexValue") && !text.contains("Where") && !text.contains("SizeValue") {
            continue;
        }
        let sizes = random_sizes(&f, seed, 4);
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let args = random_inputs(&f, &sizes, &mut rng).unwrap();
        let a = interp::run(&f, &args).unwrap();
        let o = optimize(&f, &Options::default()).unwrap().program;
        let b = interp::run(&o, &args).unwrap();
        let k = jit::compile(&o).unwrap();
        let c = k.call(&args).unwrap();
        assert!(
            a.approx_eq(&b, 1e-6, 1e-9),
            "{}\n{a}\n{b}",
            print_function(&f)
        );
        assert!(
            a.approx_eq(&c, 1e-6, 1e-9),
            "{}\n{a}\n{c}",
            print_function(&f)
        );
        checked += 1;
    }
    assert!(checked >= 20, "{checked}");
}

#[test]
fn sizes_reach_the_jit_at_run_time() {
    let f = load1("fn f(x: [n]R) -> [n]R = gen(i:n) n * 1000 + i");
    let k = jit::compile(&f).unwrap();
    for n in [0usize, 1, 5, 33] {
        let x = Value::Array(ArrayD::zeros(vec![n]));
        let v = as_vec(&k.call(&[x]).unwrap());
        let want: Vec<f64> = (0..n).map(|i| (n * 1000 + i) as f64).collect();
        assert_eq!(v, want);
    }
}

#[test]
fn where_rules_are_checked_against_ieee_comparisons() {
    use einsat::rules::{parse_rules, RuleCheck};
    // the built-in `where` rules are exact
    let sound = "a [exact]: (where (not ?c) ?a ?b) => (where ?c ?b ?a)\n\
                 b [exact]: (where ?c ?a ?a) => ?a if (weak ?a)\n";
    parse_rules("ok.rules", sound).unwrap();
    // `!(a < b)` is not `b <= a` with a NaN, and `where` of a strong zero
    // is an ordinary zero: both refused as exact
    for bad in [
        "bad [exact]: (where (not (< ?a ?b)) ?x ?y) => (where (<= ?b ?a) ?x ?y)\n",
        "bad [exact]: (where ?c ?a ?a) => ?a\n",
    ] {
        let check = RuleCheck {
            cases: 300,
            min_cases: 300,
            ..RuleCheck::default()
        };
        let e = einsat::rules::parse_rules_with("bad.rules", bad, &check).unwrap_err();
        assert!(e.to_string().contains("is not exact"), "{e}");
    }
}

#[test]
fn loop_invariant_index_values_leave_the_loop() {
    // `i` does not change along the sum over `j`: the product by it moves
    // out, and the mean's division by `n` leaves the sum
    let f = load1("fn f(x: [n]R, y: [n]R) -> [n]R = gen(i:n) sum(j:n) x[j] * i * y[j]");
    let o = optimize(&f, &Options::default()).unwrap();
    let text = print_function(&o.program);
    assert!(o.cost_after < o.cost_before, "{text}");
    let f = load1("fn f(x: [n]R) -> R = sum(i:n) x[i] / n");
    let o = optimize(&f, &Options::default()).unwrap();
    let text = print_function(&o.program);
    assert!(text.contains("(sum(i:n) x[i]) / n"), "{text}");
}

#[test]
fn clamped_stencils_in_the_jit_match_the_interpreter_in_every_layout() {
    // edge clamping by conditions on indices, 1-D and 2-D, as written and
    // optimised, over sizes that exercise loop peeling, vector lanes and
    // threads
    for src in [
        "fn f(x: [n]R) -> [n]R = gen(i:n) (where(i > 0, x[i-1], x[i]) + x[i] + where(i < n - 1, x[i+1], x[i])) / 3",
        "fn f(I: [n,m]R) -> [n,m]R = gen(i:n, j:m) (where(j > 0, I[i, j-1], I[i, j]) + where(j + 1 < m, I[i, j+1], I[i, j]) + where(i > 0 && i < n - 1, I[i-1, j] + I[i+1, j], 2 * I[i, j])) / 4",
        "fn f(x: [n]R) -> [n]R = gen(i:n) sum(j:n) where(j <= i, x[j] * (i - j + 1), 0)",
        // sides with loops: the JIT branches instead of computing both
        "fn f(x: [n]R, A: [n,n]R) -> [n]R = gen(i:n) where(x[i] > 0, sum(j:n) A[i, j] * x[j], where(x[i] = 0, n, -(sum(j:n) A[j, i])))",
    ] {
        let f = load1(src);
        let o = optimize(&f, &Options::default()).unwrap().program;
        let runs = agree_in_every_layout(&f, &o, 5, &[1, 2, 7, 40], 1e-12, 1e-12);
        assert!(runs >= 8, "{runs}");
        if einsat::extract::is_normal(&f) {
            agree_in_every_layout(&f, &f, 6, &[1, 3, 33], 1e-12, 1e-12);
        }
    }
}

#[test]
fn the_builder_writes_index_values_and_where() {
    use einsat::frontend::builder::*;
    let f = func("f", |b| {
        let x = b.param("x", "[n]R");
        gen("n", |i| {
            where_(i.value().is_gt(num(0.0)), x.at(i - 1), x.at(i))
                + (i + 1).value() * size_value("n")
        })
    })
    .unwrap();
    let g = load1("fn f(x: [n]R) -> [n]R = gen(i:n) where(i > 0, x[i-1], x[i]) + (i + 1) * n");
    assert_eq!(f.body, g.body);
    let r = interp::run(&f, &[vec_arg(&[1.0, 2.0, 4.0])]).unwrap();
    assert_eq!(as_vec(&r), [4.0, 7.0, 11.0]);
}
