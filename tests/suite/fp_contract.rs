//! The floating-point contract (issue 22, `docs/fp-contract.md`): every
//! reproducer of the issue gives the written program's value in the
//! default mode, in the interpreter and in the JIT, while the fast mode
//! still finds the rewrites it finds; the accuracy check keeps a centred
//! sum centred even against rules that would expand it.
#![cfg(feature = "cli")] // runs the `einsat` binary

use crate::common;
use einsat::interp::{self, Value};
use einsat::opt::{optimize, Optimized, Options};
use einsat::rules::{builtin_rules, parse_rules_with, RuleCheck};
use einsat::syntax::{print_expr, print_function, Function};
use ndarray::arr1;

fn func(src: &str) -> Function {
    einsat::load(src).unwrap().functions.remove(0)
}

fn opt(f: &Function, fast_math: bool) -> Optimized {
    optimize(
        f,
        &Options {
            fast_math,
            ..Options::default()
        },
    )
    .unwrap()
}

fn real(v: &Value) -> f64 {
    match v {
        Value::Real(x) => *x,
        v => panic!("expected a number, got {v}"),
    }
}

fn vector(xs: &[f64]) -> Value {
    Value::Array(arr1(xs).into_dyn())
}

/// The written program's value, the optimised program's in the interpreter
/// and in the JIT.
fn three(f: &Function, args: &[Value]) -> (f64, f64, f64) {
    let o = opt(f, false);
    let want = real(&interp::run(f, args).unwrap());
    let got = real(&interp::run(&o.program, args).unwrap());
    let jit = real(
        &einsat::jit::compile_uncached_with(&o.program, &einsat::jit::Options::default())
            .unwrap()
            .call(args)
            .unwrap(),
    );
    (want, got, jit)
}

/// Same value, bit for bit (NaN equals NaN).
fn same(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b
}

#[test]
fn constant_folds_that_overflow_or_underflow_do_not_merge_classes() {
    // x * 1e50 / 1e50 and (Σx) / 1e300 * 1e300 optimised to 0
    let f = func("fn f(x: R) -> R = x * 1e50 / 1e50");
    for x in [1.0, -3.5, 1e-300, 0.0] {
        let (want, got, jit) = three(&f, &[Value::Real(x)]);
        assert_eq!((want, got, jit), (x, x, x));
    }
    let f = func("fn f(x: [n]R) -> R = (sum(i:n) x[i]) / 1e300 * 1e300");
    let (want, got, jit) = three(&f, &[vector(&[1.0, 2.0])]);
    // the written order rounds twice (2.9999999999999996); regrouped, 3
    assert!((want - 3.0).abs() <= 4.0 * f64::EPSILON, "{want}");
    assert_eq!((got, jit), (3.0, 3.0));
    // constants whose product underflows are not folded into a zero; the
    // product may be regrouped (x * (1e-200 * 1e-200) underflows where
    // (x * 1e-200) * 1e-200 did not: within the contract's underflow
    // allowance of the smallest subnormal times the other factors)
    let f = func("fn f(x: R) -> R = x * 1e-200 * 1e-200");
    let o = opt(&f, false);
    let text = print_expr(&o.program.body);
    assert!(text.contains("1e-200") && text.contains('x'), "{text}");
    let big = [Value::Real(1e300)];
    let sets = einsat::testing::difftest::contract_oracle(&f, &big).unwrap();
    let got = real(&interp::run(&o.program, &big).unwrap());
    assert!(sets[0].accepts(got), "{got}: {}", sets[0].describe());
    assert!(!sets[0].accepts(1.0), "{}", sets[0].describe());
}

#[test]
fn a_centred_sum_of_squares_keeps_every_digit_and_its_mean_is_hoisted() {
    // the variance of 1e8 + [0.5, 1, 1.5, 2] is 1.25; expanded it was 2
    let f = func(
        "fn var(x: [n]R) -> R =
           let m = (sum(i:n) x[i]) / 4 in sum(i:n) (x[i] - m) * (x[i] - m)",
    );
    let x = vector(&[1e8 + 0.5, 1e8 + 1.0, 1e8 + 1.5, 1e8 + 2.0]);
    let (want, got, jit) = three(&f, &[x]);
    assert_eq!(want, 1.25);
    assert_eq!(got, 1.25);
    assert!((jit - 1.25).abs() < 1e-6, "{jit}");
    // the mean is computed once, outside the loop
    let o = opt(&f, false);
    let text = print_function(&o.program);
    assert!(
        text.contains("let ") && text.contains("sum(i:n) (x[i] - t"),
        "{text}"
    );
    let acc = o.report.accuracy.as_ref().expect("measured");
    assert!(acc.chosen_bits <= acc.written_bits + 1.0, "{acc:?}");
}

#[test]
fn layer_normalisation_stays_centred() {
    let f = func(
        "fn ln(x: [n]R) -> [n]R =
           let m = (sum(i:n) x[i]) / 4 in
           let v = (sum(i:n) (x[i] - m) * (x[i] - m)) / 4 in
           gen(i:n) (x[i] - m) / sqrt(v + 0.00001)",
    );
    let x = vector(&[1e8 + 0.5, 1e8 + 1.0, 1e8 + 1.5, 1e8 + 2.0]);
    let want = interp::run(&f, std::slice::from_ref(&x)).unwrap();
    let o = opt(&f, false);
    let got = interp::run(&o.program, std::slice::from_ref(&x)).unwrap();
    assert!(
        want.approx_eq(&got, 1e-9, 1e-12),
        "{want} vs {got}\n{}",
        print_function(&o.program)
    );
    let jit = einsat::jit::compile(&o.program)
        .unwrap()
        .call(&[x])
        .unwrap();
    assert!(want.approx_eq(&jit, 1e-9, 1e-12), "{want} vs {jit}");
}

#[test]
fn special_values_survive_the_default_mode() {
    let f = func("fn f(x: R) -> R = x * 0 + (x - x)");
    for x in [f64::INFINITY, f64::NEG_INFINITY, f64::NAN] {
        let (want, got, jit) = three(&f, &[Value::Real(x)]);
        assert!(
            want.is_nan() && got.is_nan() && jit.is_nan(),
            "{x}: {got} {jit}"
        );
    }
    assert_eq!(three(&f, &[Value::Real(2.0)]), (0.0, 0.0, 0.0));
    // the fast mode cancels, as asked
    assert_eq!(print_expr(&opt(&f, true).program.body), "0");
}

#[test]
fn rounding_tricks_are_kept_as_written() {
    // (x + 1e16) - 1e16 rounds x to a multiple of 2 where the written
    // program does; a compensated TwoSum keeps its error term
    let f = func("fn f(x: R) -> R = (x + 1e16) - 1e16");
    for x in [1.0, 3.0, 0.25, -7.0] {
        let (want, got, jit) = three(&f, &[Value::Real(x)]);
        assert!(
            same(want, got) && same(want, jit),
            "{x}: {want} {got} {jit}"
        );
    }
    assert_eq!(three(&f, &[Value::Real(1.0)]).1, 0.0);
    let twosum = func(
        "fn err(a: R, b: R) -> R =
           let s = a + b in let bb = s - a in (a - (s - bb)) + (b - bb)",
    );
    let args = [Value::Real(1.0), Value::Real(1e-17)];
    let (want, got, jit) = three(&twosum, &args);
    assert_eq!(want, 1e-17);
    assert!(same(want, got) && same(want, jit), "{got} {jit}");
    assert_eq!(print_expr(&opt(&twosum, true).program.body), "0");
}

/// A rule an author loaded without the check (`--no-rule-check`) that
/// claims to regroup but expands a centred sum of squares: the accuracy
/// check still keeps the centred form, which the cost model alone would
/// not (the expanded form shares the mean's sum and has fewer operations).
#[test]
fn the_accuracy_check_refuses_an_expanded_variance_from_unchecked_rules() {
    let expand = "var-expand [reassociating]: (sum ?n (* (- ?a ?b) (- ?a ?b))) => (- (+ (sum ?n (* ?a ?a)) (* (@num ?n) (* (@unshift ?b) (@unshift ?b)))) (* 2 (* (@unshift ?b) (sum ?n ?a)))) if (notfree ?b 0) (lit ?n)\n";
    let mut rules = builtin_rules();
    rules.extend(parse_rules_with("expand.rules", expand, &RuleCheck::skip()).unwrap());
    let f = func(
        "fn var(x: [4]R) -> R =
           let m = (sum(i:4) x[i]) / 4 in sum(i:4) (x[i] - m) * (x[i] - m)",
    );
    let o = optimize(
        &f,
        &Options {
            rules: Some(rules),
            ..Options::default()
        },
    )
    .unwrap();
    let acc = o.report.accuracy.as_ref().expect("measured");
    assert!(acc.refused > 0, "{acc:?}\n{}", print_function(&o.program));
    assert!(acc.chosen_bits <= acc.written_bits + 1.0, "{acc:?}");
    assert!(
        o.report.rules_fired.contains_key("var-expand"),
        "{:?}",
        o.report.rules_fired
    );
    let x = vector(&[1e8 + 0.5, 1e8 + 1.0, 1e8 + 1.5, 1e8 + 2.0]);
    assert_eq!(real(&interp::run(&o.program, &[x]).unwrap()), 1.25);
}

#[test]
fn einsat_opt_names_the_mode() {
    let d = common::tmpdir("fp-mode");
    let file = d.join("sp.tl");
    std::fs::write(&file, "fn f(x: R) -> R = x * 0 + (x - x)\n").unwrap();
    let path = file.display().to_string();
    let (code, out, err) = common::einsat_in(&d, &["opt", &path]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("# mode: value-safe") && out.contains("x * 0 + (x - x)"),
        "{out}"
    );
    let (code, out, err) = common::einsat_in(&d, &["opt", &path, "--fast-math"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("# mode: fast-math") && out.contains("\n  0\n"),
        "{out}"
    );
    let (code, out, _) = common::einsat_in(&d, &["opt", &path, "--json"]);
    assert_eq!(code, 0);
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(j["functions"][0]["mode"], "value-safe");
    assert!(
        j["functions"][0]["accuracy"]["written_bits"].is_number(),
        "{out}"
    );
}

/// Found by CI's `strategies_give_fitting_cases` (special inputs): a bracket
/// of an outer index, hoisted out of an inner loop the JIT vectorises, lost
/// its strong zero there (`[2 <= i] * x[j]` gave `0 * NaN = NaN` where the
/// interpreter, and the language, give 0). Every form below, written and
/// optimised, on the JIT as in the interpreter, NaN for NaN.
#[test]
fn hoisted_brackets_stay_strong_zeros_in_vector_loops() {
    let programs = [
        "fn f(x: [2]R) -> [3,2]R = gen(i:3, j:2) [2 <= i] * x[j] + 1",
        "fn f(x: [2]R) -> [3,2]R = gen(i:3, j:2) [2 <= i] * x[j] - x[i+1]",
        "fn f(x: [2]R) -> [3,2]R = gen(i:3, j:2) -x[i+1] + (gen(k:3) x[j])[i-2]",
        "fn f(x: [2]R) -> [3,2]R = gen(i:3, j:2) ([0 <= i-2 && i-2 < 3] * x[j] + [!(0 <= i-2 && i-2 < 3)] * 0) - x[i+1]",
        "fn f(x: [8]R) -> [5,8]R = gen(i:5, j:8) x[j] * [i != 2] + 2 * x[j]",
        "fn f(x: [8]R) -> [5]R = gen(i:5) sum(j:8) [i < 3] * x[j] + 1",
    ];
    let nan = f64::NAN;
    let inf = f64::INFINITY;
    for src in programs {
        let f = func(src);
        let n = einsat::syntax::printer::print_type(&f.params[0].ty);
        let x = if n.starts_with("[2]") {
            vector(&[-inf, nan])
        } else {
            vector(&[nan, 1.0, -inf, 2.0, inf, nan, 3.0, -0.0])
        };
        let want = interp::run(&f, std::slice::from_ref(&x)).unwrap();
        for (what, p) in [
            ("written", f.clone()),
            ("optimised", opt(&f, false).program),
        ] {
            if !einsat::extract::is_normal(&p) {
                continue;
            }
            for threads in [1, 2] {
                let k = einsat::jit::compile_with(
                    &p,
                    &einsat::jit::Options {
                        threads,
                        ..Default::default()
                    },
                )
                .unwrap();
                let got = k.call(std::slice::from_ref(&x)).unwrap();
                let (Value::Array(a), Value::Array(b)) = (&want, &got) else {
                    panic!("arrays expected")
                };
                let same = a.iter().zip(b.iter()).all(|(u, v)| {
                    u.to_bits() == v.to_bits() || (u.is_nan() && v.is_nan()) || u == v
                });
                assert!(
                    same,
                    "{src} ({what}, {threads} threads): interpreter {a}, JIT {b}"
                );
            }
        }
    }
}

/// Found by CI's `strategies_give_fitting_cases` (wide inputs): the empty
/// outer sum of `sum(i:0) sum(j:3) y[j] * sum(k:2) y[j]` is 0 as written;
/// the optimiser regroups it as `(sum(i:0) 2) * sum(j:3) y[j] * y[j]`, which
/// is `0 * inf = NaN` when `y[j]²` overflows — an overflow the written
/// program never performs (it never evaluates the empty sum's body), as
/// with numpy's `einsum(optimize=True)`. The contract allows it
/// (docs/fp-contract.md, "Empty sums"), and the oracle says so; with
/// moderate inputs the regrouped program is 0 as written.
#[test]
fn an_empty_sum_regrouped_with_an_overflowing_factor_may_be_nan() {
    let f = func("fn f(y: [3]R) -> R = sum(i:0) sum(j:3) y[j] * sum(k:2) y[j]");
    let o = opt(&f, false);
    for (ys, may_be_nan) in [
        ([-6.76e267, -7.4e-189, 1.1e137], true),
        ([1.5, -2.0, 0.25], false),
    ] {
        let args = [vector(&ys)];
        let oracle = einsat::testing::difftest::contract_oracle(&f, &args).unwrap();
        let got = real(&interp::run(&o.program, &args).unwrap());
        assert!(
            oracle[0].accepts(got),
            "{ys:?}: {got} outside {}",
            oracle[0].describe()
        );
        assert_eq!(real(&interp::run(&f, &args).unwrap()), 0.0);
        if !may_be_nan {
            assert_eq!(got, 0.0, "{}", print_function(&o.program));
        }
    }
}

/// A factor is not moved into an empty sum: `(sum(j:0) 1) * a` is `0 * a`,
/// NaN for an infinite or NaN `a`, and stays so (moved in, it was the empty
/// sum's 0). Found by difftest (`--features none,reductions,lets,brackets
/// --seed 9`, case 1921). The contraction planner and the seeds read a
/// product of sums as one network (every factor under every sum), and
/// must not either: the last three (found by `einsat difftest --cases
/// 20000 --seed 202612031 --depth 5 --max-size 5`, case 6110, the third,
/// shrunk; the planner had made it `sum(i:0) t0 * (0 * 0)`, 0 where the
/// written program gives NaN).
#[test]
fn a_nan_is_not_lost_in_an_empty_sum() {
    for src in [
        "fn f(a: [3]R) -> R = (sum(j:0) 1) * a[0]",
        "fn f(a: [3]R) -> R = (sum(j:0) a[1]) / a[0]",
        "fn f(a: [3]R) -> R = (sum(j:0) a[2]) * sum(i:3) a[i] * 0",
        "fn f(a: [3]R) -> R = a[0] * a[1] * sum(j:0) a[2] * a[1]",
        "fn f(a: [3]R) -> R = a[0] * (sum(j:0) a[2] * a[1]) * (sum(k:3) a[k] * a[1])",
    ] {
        let f = func(src);
        for x in [f64::INFINITY, f64::NAN, 0.0] {
            let args = [vector(&[x, 0.0, 2.0])];
            let (want, got, jit) = three(&f, &args);
            if x.is_nan() {
                assert!(
                    want.is_nan(),
                    "{src} at {x}: the written program gives {want}"
                );
            }
            assert!(
                same(want, got) && same(want, jit),
                "{src} at {x}: {want} {got} {jit}"
            );
        }
    }
}

/// The other side of `a_nan_is_not_lost_in_an_empty_sum`: a sum over a
/// named size inside a product stays one factor, and its own network is
/// still planned. A chain of twelve matrices scaled by 0.5 (more tensors
/// than are saturated: the planner's order is the result) costs what the
/// unscaled chain costs, plus the scaling.
#[test]
fn a_scaled_network_over_named_sizes_is_still_planned() {
    let n = 12;
    let mats: Vec<String> = (0..n).map(|i| format!("M{i}: [n,n]R")).collect();
    let sums: Vec<String> = (1..n).map(|i| format!("sum(k{i}:n)")).collect();
    let prod: Vec<String> = (0..n).map(|i| format!("M{i}[k{i},k{}]", i + 1)).collect();
    let src = |scale: &str| {
        format!(
            "fn f({}) -> [n,n]R = gen(k0:n, k{n}:n) {scale}{} {}",
            mats.join(", "),
            sums.join(" "),
            prod.join(" * ")
        )
    };
    let o = Options {
        sizes: [("n".to_string(), 100)].into_iter().collect(),
        ..Options::default()
    };
    let scaled = optimize(&func(&src("0.5 * ")), &o).unwrap();
    let plain = optimize(&func(&src("")), &o).unwrap();
    assert_eq!(
        scaled.report.plans.len(),
        1,
        "{}",
        print_function(&scaled.program)
    );
    assert_eq!(scaled.report.plans[0].plan.inputs, n);
    let (a, b) = (scaled.cost_after, plain.cost_after);
    assert!(a <= b * 1.01 && b < 1e7, "{a} against {b}");
}

/// The contract lets an infinity times a zero change kind when a factor
/// moves out of a sum (docs/fp-contract.md, "Infinities and NaN made by
/// arithmetic"): the empty `min` is +inf, the written program multiplies it
/// by the padded `v[-1] = 0` (NaN), the optimised one by the sum (inf). The
/// oracle accepts either (and -inf: the sign of a zero is not promised) and
/// still refuses a finite result; a NaN input stays
/// NaN. CI's property test of the JIT once drew this case.
#[test]
fn an_infinity_times_a_padded_zero_may_change_kind_but_not_become_finite() {
    use einsat::testing::difftest::contract_judge;
    let f = func("fn f(v: [n]R, w: [0]R) -> R = sum(i:n) (min(j:0) w[j]) * v[i-1]");
    let o = opt(&f, false);
    assert!(
        print_function(&o.program).contains("* sum(i:n)"),
        "the factor is expected to move out: {}",
        print_function(&o.program)
    );
    let empty = vector(&[]);
    let args = [vector(&[1.0, 2.0, 3.0]), empty.clone()];
    let (want, got, jit) = three(&f, &args);
    assert!(want.is_nan(), "{want}");
    assert_eq!((got, jit), (f64::INFINITY, f64::INFINITY));
    for ok in [f64::INFINITY, f64::NAN] {
        assert_eq!(contract_judge(&f, &args, &Value::Real(ok)).unwrap(), None);
    }
    for bad in [0.0, 6.0, f64::MAX] {
        assert!(
            contract_judge(&f, &args, &Value::Real(bad))
                .unwrap()
                .is_some(),
            "{bad} accepted"
        );
    }
    let args = [vector(&[1.0, f64::NAN, 3.0]), empty];
    let (want, got, jit) = three(&f, &args);
    assert!(
        want.is_nan() && got.is_nan() && jit.is_nan(),
        "{want} {got} {jit}"
    );
}

/// Every element of an array value, bit for bit against `want`.
fn same_elements(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Array(g), Value::Array(w)) => {
            g.shape() == w.shape() && g.iter().zip(w.iter()).all(|(&a, &b)| same(a, b))
        }
        _ => false,
    }
}

#[test]
fn a_written_multiply_add_keeps_both_roundings_in_every_engine() {
    // `-(y*y) + x*x` with x = y is exactly 0 as written; a fused
    // multiply-add would give the rounding error of y*y (negative for some
    // x), and its square root NaN. Arrays long enough for the vector loops
    // (contiguous) and the scalar ones (every other element, a strided
    // view), run as written (no optimiser to reorder the terms) and
    // optimised.
    let f = func("fn f(x: [n]R, y: [n]R) -> [n]R = gen(i:n) sqrt(-(y[i] * y[i]) + x[i] * x[i])");
    let g = func("fn g(a: [n]R, b: [n]R, c: [n]R) -> [n]R = gen(i:n) a[i] + b[i] * c[i]");
    let xs: Vec<f64> = (0..203).map(|k| 0.1 + k as f64 / 7.0).collect();
    let x = ndarray::Array1::from(xs.clone());
    let strided = ndarray::Array1::from_iter(xs.iter().flat_map(|&v| [v, -1.0]));
    let views = [x.clone(), strided.slice_move(ndarray::s![..;2])];
    for (layout, xv) in ["contiguous", "strided"].iter().zip(&views) {
        let args = [
            Value::Array(xv.clone().into_dyn()),
            Value::Array(xv.clone().into_dyn()),
        ];
        let zeros = Value::Array(ndarray::Array1::<f64>::zeros(xs.len()).into_dyn());
        assert!(same_elements(&interp::run(&f, &args).unwrap(), &zeros));
        for program in [f.clone(), opt(&f, false).program] {
            let k = einsat::jit::compile_uncached_with(&program, &einsat::jit::Options::default())
                .unwrap();
            let got = k.call(&args).unwrap();
            assert!(
                same_elements(&got, &zeros),
                "{layout}: {}\ngave {got}",
                print_function(&program)
            );
        }
        // a + b*c: the product rounded, then the sum, bit for bit
        let (b, c): (Vec<f64>, Vec<f64>) = (
            xs.iter().map(|v| v * 1e8 + 1.0 / 3.0).collect(),
            xs.iter().map(|v| 1.0 / (v + 0.7)).collect(),
        );
        let gargs = [
            Value::Array(xv.mapv(|v| -v * 1e8).into_dyn()),
            vector(&b),
            vector(&c),
        ];
        let want = interp::run(&g, &gargs).unwrap();
        for program in [g.clone(), opt(&g, false).program] {
            let got =
                einsat::jit::compile_uncached_with(&program, &einsat::jit::Options::default())
                    .unwrap()
                    .call(&gargs)
                    .unwrap();
            assert!(
                same_elements(&got, &want),
                "{layout}: a + b*c gave {got}, want {want}"
            );
        }
    }
    // Special values, where fusing changes the kind of result: b*c
    // overflows to inf as written, so `-inf + b*c` is NaN, while a fused
    // fma(b, c, -inf) is -inf; NaN and 0·inf stay NaN; an underflowing
    // product, signed zeros and an overflowing one keep the written
    // values. Each case repeated so that vector and scalar lanes meet it.
    let cases: [(f64, f64, f64); 8] = [
        (f64::NEG_INFINITY, 1e200, 1e200),
        (f64::INFINITY, -1e200, 1e200),
        (f64::NAN, 2.0, 3.0),
        (1.0, f64::NAN, 0.0),
        (f64::INFINITY, 0.0, f64::INFINITY),
        (5e-324, 1e-200, 1e-200),
        (-0.0, -0.0, 1.0),
        (1e308, 1e308, 10.0),
    ];
    let reps: Vec<(f64, f64, f64)> = (0..37).map(|k| cases[k % cases.len()]).collect();
    let col = |f: fn(&(f64, f64, f64)) -> f64| reps.iter().map(f).collect::<Vec<f64>>();
    let (a, b, c) = (col(|t| t.0), col(|t| t.1), col(|t| t.2));
    let strided = |v: &[f64]| {
        let wide = ndarray::Array1::from_iter(v.iter().flat_map(|&x| [x, 7.0]));
        Value::Array(wide.slice_move(ndarray::s![..;2]).into_dyn())
    };
    for (layout, gargs) in [
        ("contiguous", [vector(&a), vector(&b), vector(&c)]),
        ("strided", [strided(&a), strided(&b), strided(&c)]),
    ] {
        let want = interp::run(&g, &gargs).unwrap();
        let Value::Array(w) = &want else {
            panic!("an array result")
        };
        // the written program's own values: NaN for the first five, the
        // subnormal unchanged, -0 (-0 + -0), inf
        assert!((0..5).all(|k| w[[k]].is_nan()), "{want}");
        assert_eq!(w[[5]].to_bits(), 5e-324f64.to_bits());
        assert_eq!(w[[6]].to_bits(), (-0.0f64).to_bits());
        assert_eq!(w[[7]], f64::INFINITY);
        for program in [g.clone(), opt(&g, false).program] {
            let got =
                einsat::jit::compile_uncached_with(&program, &einsat::jit::Options::default())
                    .unwrap()
                    .call(&gargs)
                    .unwrap();
            assert!(
                same_elements(&got, &want),
                "{layout}: a + b*c on special values gave {got}, want {want}"
            );
        }
    }
}
