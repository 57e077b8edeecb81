//! Float32 precision for programs (issue 25): the interpreter's `F32`
//! meaning against hand-written `f32` loops (elementwise operations and
//! sums in the written order bit for bit), overflow where `f32`
//! overflows, offset data, special values and subnormals; the optimiser
//! for `F32` judged by the floating-point contract at `f32`'s unit
//! roundoff.
#![cfg(feature = "testing")] // uses the testing support

mod common;

use common::cases;
use einsat::interp::{self, Value};
use einsat::opt::{optimize, Options};
use einsat::syntax::print_function;
use einsat::testing::difftest::contract_judge_in;
use einsat::testing::{arb_function, random_inputs, random_sizes, GenConfig};
use einsat::{Function, Precision};
use ndarray::{arr1, ArrayD};
use proptest::prelude::*;
use rand::SeedableRng;

const F32: Precision = Precision::F32;

fn load1(src: &str) -> Function {
    einsat::load(src)
        .unwrap_or_else(|e| panic!("{src}: {e}"))
        .functions
        .remove(0)
}

fn vec1(x: &[f32]) -> Value {
    Value::Array(arr1(&x.iter().map(|&v| v as f64).collect::<Vec<_>>()).into_dyn())
}

fn real(v: &Value) -> f64 {
    match v {
        Value::Real(x) => *x,
        _ => panic!("not a number: {v}"),
    }
}

fn array(v: &Value) -> &ArrayD<f64> {
    match v {
        Value::Array(a) => a,
        _ => panic!("not an array: {v}"),
    }
}

/// `n` values `offset + U(0, 1)`, rounded to f32.
fn data(n: usize, offset: f32, seed: u64) -> Vec<f32> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n)
        .map(|_| offset + rand::Rng::gen::<f32>(&mut rng))
        .collect()
}

#[test]
fn elementwise_operations_are_f32_bit_for_bit() {
    let f = load1(
        "fn f(x: [n]R, y: [n]R) -> [n]R =
           gen(i:n) (x[i] * y[i] + 0.1) / (y[i] - x[i] * 3) + sqrt(abs(x[i])) - x[i] * x[i] * x[i]",
    );
    let x = data(257, -0.5, 1);
    let y = data(257, 1e4, 2);
    let r = interp::run_with(&f, &[vec1(&x), vec1(&y)], F32).unwrap();
    for (k, got) in array(&r).iter().enumerate() {
        let (a, b) = (x[k], y[k]);
        let want = (a * b + 0.1f32) / (b - a * 3.0) + a.abs().sqrt() - a * a * a;
        assert_eq!(got.to_bits(), (want as f64).to_bits(), "element {k}");
    }
    // and the f64 run differs (it is not rounded per operation)
    let r64 = interp::run(&f, &[vec1(&x), vec1(&y)]).unwrap();
    assert_ne!(array(&r), array(&r64));
}

#[test]
fn sums_accumulate_in_f32_in_the_written_order() {
    let f = load1("fn dot(x: [n]R, y: [n]R) -> R = sum(i:n) x[i] * y[i]");
    // offset data: f32 accumulation loses what f64 keeps
    let x = data(10_000, 1e4, 3);
    let y = data(10_000, 1.0, 4);
    let mut want = 0.0f32;
    for k in 0..x.len() {
        want += x[k] * y[k];
    }
    let got = real(&interp::run_with(&f, &[vec1(&x), vec1(&y)], F32).unwrap());
    assert_eq!(got, want as f64);
    let exact: f64 = x.iter().zip(&y).map(|(a, b)| *a as f64 * *b as f64).sum();
    assert!(((got - exact) / exact).abs() < 1e-3);
    assert!(got != exact, "f32 accumulation rounds");
}

#[test]
fn overflow_happens_where_f32_overflows() {
    let f = load1("fn f(x: R) -> R = (x * 1e30) / 1e30");
    let r = real(&interp::run_with(&f, &[Value::Real(1e30)], F32).unwrap());
    assert_eq!(r, f64::INFINITY);
    // in f64 the same program gives back x
    let r64 = real(&interp::run(&f, &[Value::Real(1e30)]).unwrap());
    assert!((r64 - 1e30).abs() <= 1e30 * 1e-15, "{r64}");
    // inputs and literals beyond f32's range are infinite
    let g = load1("fn g(x: R) -> R = x + 1e39");
    assert_eq!(
        real(&interp::run_with(&g, &[Value::Real(0.0)], F32).unwrap()),
        f64::INFINITY
    );
    let s = load1("fn s(x: [n]R) -> R = sum(i:n) x[i]");
    let big = vec1(&[f32::MAX, f32::MAX, -f32::MAX]);
    assert_eq!(
        real(&interp::run_with(&s, &[big], F32).unwrap()),
        f64::INFINITY
    );
}

#[test]
fn specials_and_subnormals() {
    let f = load1("fn f(x: [n]R) -> [n]R = gen(i:n) x[i] * 0.5 + x[i] - x[i]");
    let tiny = f32::from_bits(3); // a subnormal
    let x = [f32::INFINITY, f32::NAN, tiny, -f32::MIN_POSITIVE, 0.0];
    let r = interp::run_with(&f, &[vec1(&x)], F32).unwrap();
    let r = array(&r);
    assert!(r[0].is_nan(), "inf - inf");
    assert!(r[1].is_nan());
    for k in 2..5 {
        let a = x[k];
        assert_eq!(r[k], (a * 0.5 + a - a) as f64, "element {k}");
    }
    // a product that underflows in f32 but not in f64
    let g = load1("fn g(x: R) -> R = x * 1e-30 * 1e-30 * 1e30 * 1e30");
    let r = real(&interp::run_with(&g, &[Value::Real(1.0)], F32).unwrap());
    assert_eq!(r, 0.0);
    assert!((real(&interp::run(&g, &[Value::Real(1.0)]).unwrap()) - 1.0).abs() < 1e-12);
}

#[test]
fn functions_are_faithful_f32() {
    let f = load1(
        "fn f(x: [n]R) -> [n]R = gen(i:n) exp(x[i]) + log(abs(x[i]) + 1) * sin(x[i]) - cos(x[i]) * tanh(x[i])",
    );
    let x = data(100, -0.5, 5);
    let r = interp::run_with(&f, &[vec1(&x)], F32).unwrap();
    for (k, got) in array(&r).iter().enumerate() {
        let a = x[k];
        let want = a.exp() + (a.abs() + 1.0).ln() * a.sin() - a.cos() * a.tanh();
        assert!(
            got.is_finite() && (*got as f32).to_bits().abs_diff(want.to_bits()) <= 4,
            "{got} {want}"
        );
        assert_eq!(*got, *got as f32 as f64, "an f32 value");
    }
}

/// The optimiser's constant folds are judged in the target format: `0.1`
/// is not an f32, so `x * 0.1 * 3` keeps the written rounding of each step.
#[test]
fn constant_folds_follow_the_format() {
    let f = load1("fn f(x: [n]R) -> [n]R = gen(i:n) x[i] * 0.1 * 3 + x[i] * 0.5 * 4");
    let o = Options {
        precision: F32,
        ..Options::default()
    };
    let g = optimize(&f, &o).unwrap().program;
    let x = data(64, -0.5, 6);
    let args = [vec1(&x)];
    let got = interp::run_with(&g, &args, F32).unwrap();
    let why = contract_judge_in(&f, &args, &got, F32).unwrap();
    assert!(why.is_none(), "{}: {}", print_function(&g), why.unwrap());
    // 0.5 * 4 = 2 is exact in f32: folded
    assert!(print_function(&g).contains('2'), "{}", print_function(&g));
}

#[test]
fn the_f32_contract_refuses_f64_results_on_overflow() {
    let f = load1("fn f(x: R) -> R = (x * 1e30) / 1e30 + 1");
    let args = [Value::Real(1e30)];
    // the f64 value is finite, but in f32 the written program overflows:
    // the oracle is unconstrained there (a regrouping may overflow), so
    // both are accepted; a plainly wrong value for a tame program is not
    let g = load1("fn g(x: [n]R) -> R = sum(i:n) x[i]");
    let xs = data(1000, 1e4, 7);
    let args_g = [vec1(&xs)];
    let want = real(&interp::run_with(&g, &args_g, F32).unwrap());
    let ok = contract_judge_in(&g, &args_g, &Value::Real(want), F32).unwrap();
    assert!(ok.is_none(), "{ok:?}");
    let exact: f64 = xs.iter().map(|&v| v as f64).sum();
    assert!(contract_judge_in(&g, &args_g, &Value::Real(exact), F32)
        .unwrap()
        .is_none());
    let bad = contract_judge_in(&g, &args_g, &Value::Real(exact * (1.0 + 1e-3)), F32).unwrap();
    assert!(bad.is_some());
    assert!(
        contract_judge_in(&f, &args, &Value::Real(f64::INFINITY), F32)
            .unwrap()
            .is_none()
    );
}

fn prop_cfg() -> GenConfig {
    GenConfig {
        max_depth: 4,
        ..GenConfig::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(300)))]

    /// Optimised for F32 and run in F32, every program gives a value the
    /// F32 contract accepts.
    #[test]
    fn optimised_f32_programs_keep_the_contract(f in arb_function(prop_cfg()), seed in any::<u64>()) {
        let o = Options {
            precision: F32,
            time_limit: std::time::Duration::from_secs(600),
            ..Options::default()
        };
        let g = optimize(&f, &o).unwrap().program;
        let sizes = random_sizes(&f, seed, 3);
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let args = random_inputs(&f, &sizes, &mut rng).unwrap();
        let b = interp::run_with(&g, &args, F32).unwrap();
        let why = contract_judge_in(&f, &args, &b, F32).unwrap();
        prop_assert!(why.is_none(), "{}\n=>\n{}\n{}", print_function(&f), print_function(&g), why.unwrap());
    }
}
