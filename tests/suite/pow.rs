//! `pow(x, y)` end to end: the interpreter's value is C's `pow` with the
//! C99 special cases (in `F32` the `f64` function of the widened
//! arguments rounded to `f32`), the double-double reference and the
//! contract's oracle follow it, integer formats refuse it, and the JIT
//! (scalar calls, staged vector kernels) agrees with the interpreter in
//! `F64` and `F32` on offset, huge, tiny, infinite and NaN data.
#![cfg(feature = "testing")] // uses the testing support

use crate::common;

use common::{cases, load1};
use einsat::interp::{self, Value};
use einsat::testing::difftest::{contract_judge, contract_judge_in};
use einsat::testing::{arb_function, random_inputs, random_sizes, GenConfig};
use einsat::{jit, Arg32, Precision, Value32};
use ndarray::{arr1, ArrayD};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

fn vec1(x: &[f64]) -> Value {
    Value::Array(arr1(x).into_dyn())
}

fn array(v: &Value) -> Vec<f64> {
    match v {
        Value::Array(a) => a.iter().copied().collect(),
        _ => panic!("not an array: {v}"),
    }
}

/// Units in the last place between two doubles of the same sign (or
/// zeros), `u64::MAX` when one is NaN and the other not.
fn ulps(a: f64, b: f64) -> u64 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() {
            0
        } else {
            u64::MAX
        };
    }
    if a == b {
        return 0;
    }
    if a.is_sign_negative() != b.is_sign_negative() {
        return u64::MAX;
    }
    a.to_bits().abs_diff(b.to_bits())
}

fn ulps32(a: f32, b: f32) -> u64 {
    if a.is_nan() || b.is_nan() {
        return if a.is_nan() && b.is_nan() {
            0
        } else {
            u64::MAX
        };
    }
    if a == b {
        return 0;
    }
    if a.is_sign_negative() != b.is_sign_negative() {
        return u64::MAX;
    }
    u64::from(a.to_bits().abs_diff(b.to_bits()))
}

const INF: f64 = f64::INFINITY;
const NAN: f64 = f64::NAN;

/// C99 (Annex F.9.4.4) special cases of `pow(x, y)`: `(x, y, result)`.
const C99: &[(f64, f64, f64)] = &[
    (NAN, 0.0, 1.0),
    (NAN, -0.0, 1.0),
    (1.0, NAN, 1.0),
    (1.0, INF, 1.0),
    (1.0, -INF, 1.0),
    (-1.0, INF, 1.0),
    (-1.0, -INF, 1.0),
    (NAN, 1.0, NAN),
    (2.0, NAN, NAN),
    (-2.0, 0.5, NAN),
    (-8.0, 1.0 / 3.0, NAN),
    (-2.0, 3.0, -8.0),
    (-2.0, 2.0, 4.0),
    (-2.0, -1.0, -0.5),
    (0.0, -1.0, INF),
    (-0.0, -1.0, -INF),
    (-0.0, -2.0, INF),
    (0.0, -0.5, INF),
    (-0.0, -0.5, INF),
    (0.0, -INF, INF),
    (-0.0, -INF, INF),
    (0.0, 3.0, 0.0),
    (-0.0, 3.0, -0.0),
    (-0.0, 2.0, 0.0),
    (-0.0, 0.5, 0.0),
    (0.5, INF, 0.0),
    (0.5, -INF, INF),
    (2.0, INF, INF),
    (2.0, -INF, 0.0),
    (-0.5, INF, 0.0),
    (-2.0, INF, INF),
    (INF, 0.5, INF),
    (INF, -0.5, 0.0),
    (-INF, 3.0, -INF),
    (-INF, 2.0, INF),
    (-INF, 0.5, INF),
    (-INF, -3.0, -0.0),
    (-INF, -2.0, 0.0),
    (-INF, -0.5, 0.0),
    (1e300, 2.0, INF),
    (1e-300, 2.0, 0.0),
    (-1e300, 3.0, -INF),
    (2.0, -1074.0, 5e-324),
    (2.0, 1023.0, 8.98846567431158e307),
    (4.0, 0.5, 2.0),
];

fn same(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

#[test]
fn the_interpreter_follows_the_c99_table() {
    let f = load1("fn f(x: [n]R, y: [n]R) -> [n]R = gen(i:n) pow(x[i], y[i])");
    let (xs, ys): (Vec<f64>, Vec<f64>) = C99.iter().map(|&(x, y, _)| (x, y)).unzip();
    let got = array(&interp::run(&f, &[vec1(&xs), vec1(&ys)]).unwrap());
    for (k, &(x, y, want)) in C99.iter().enumerate() {
        assert!(same(got[k], want), "pow({x}, {y}) = {} not {want}", got[k]);
    }
    // F32: the f64 function of the (f32) arguments, rounded to f32
    let got = array(&interp::run_with(&f, &[vec1(&xs), vec1(&ys)], Precision::F32).unwrap());
    for (k, &(x, y, _)) in C99.iter().enumerate() {
        let want = (x as f32 as f64).powf(y as f32 as f64) as f32 as f64;
        assert!(
            same(got[k], want),
            "f32 pow({x}, {y}) = {} not {want}",
            got[k]
        );
    }
}

#[test]
fn pow_is_refused_in_integer_formats() {
    let f = load1("fn f(x: [n]R) -> [n]R = gen(i:n) pow(x[i], 2)");
    let errs = einsat::types::integral(&f, None, Precision::I64).unwrap_err();
    let text: String = errs.iter().map(|d| d.to_string()).collect();
    assert!(text.contains("`pow`"), "{text}");
    assert!(einsat::types::integral(&f, None, Precision::F64).is_ok());
    let o = jit::Options {
        precision: Precision::I64,
        ..jit::Options::default()
    };
    assert!(jit::compile_with(&f, &o).is_err());
}

/// The double-double reference is close to `powf` (which is within an
/// ulp) on finite values, and the contract's oracle accepts `powf`'s
/// value and refuses one far from it.
#[test]
fn reference_and_oracle_follow_pow() {
    let f = load1("fn f(x: R, y: R) -> R = pow(x, y)");
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    for _ in 0..2000 {
        let x: f64 = 10f64.powf(rng.gen_range(-30.0..30.0));
        let y: f64 = rng.gen_range(-8.0..8.0);
        let x = if rng.gen_bool(0.2) { -x } else { x };
        let y = if x < 0.0 { y.round() } else { y };
        let args = [Value::Real(x), Value::Real(y)];
        let want = x.powf(y);
        let dd = interp::run_domain(&f, &args, &interp::domain::Dd).unwrap()[0].data[0]
            .0
            .hi();
        if want.is_finite() && want != 0.0 {
            // powf is within an ulp; the reference far closer
            assert!(ulps(dd, want) <= 1, "dd pow({x}, {y}) = {dd}, powf {want}");
        }
        let got = Value::Real(want);
        assert!(contract_judge(&f, &args, &got).unwrap().is_none());
        if want.is_finite() && want.abs() > 1e-300 {
            let off = Value::Real(want * (1.0 + 1e-9));
            assert!(
                contract_judge(&f, &args, &off).unwrap().is_some(),
                "pow({x}, {y}): {} accepted",
                want * (1.0 + 1e-9)
            );
        }
    }
    // special pairs: the oracle accepts exactly the C99 value's kind
    for &(x, y, want) in C99 {
        let args = [Value::Real(x), Value::Real(y)];
        assert!(
            contract_judge(&f, &args, &Value::Real(want))
                .unwrap()
                .is_none(),
            "pow({x}, {y}) = {want} refused"
        );
        let wrong = if want.is_nan() { 1.0 } else { NAN };
        assert!(
            contract_judge(&f, &args, &Value::Real(wrong))
                .unwrap()
                .is_some(),
            "pow({x}, {y}) = {wrong} accepted"
        );
    }
    // an inexact exponent may make a negative base's power NaN: the
    // oracle accepts NaN for pow(x, 3·(1/3)·3) at a negative x, but not
    // for pow(x, 3)
    let g = load1("fn g(x: R, t: R) -> R = pow(x, t * (1 / t) * 3)");
    let args = [Value::Real(-2.0), Value::Real(3.0)];
    assert!(contract_judge(&g, &args, &Value::Real(NAN))
        .unwrap()
        .is_none());
    let h = load1("fn h(x: R) -> R = pow(x, 3)");
    assert!(contract_judge(&h, &[Value::Real(-2.0)], &Value::Real(NAN))
        .unwrap()
        .is_some());
}

/// Data for the JIT tests: offset, huge and tiny magnitudes, zeros of
/// both signs, infinities, NaN, negative bases; `n` values.
fn bases(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n)
        .map(|k| match k % 8 {
            0 => 1e6 + rng.gen::<f64>(),
            1 => 10f64.powf(rng.gen_range(-300.0..300.0)),
            2 => -(10f64.powf(rng.gen_range(-5.0..5.0))),
            3 => [0.0, -0.0, INF, -INF, NAN, 1.0, -1.0, 5e-324][rng.gen_range(0..8)],
            _ => rng.gen_range(0.0..4.0),
        })
        .collect()
}

fn exponents(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..n)
        .map(|k| match k % 6 {
            0 => rng.gen_range(-5i32..6) as f64,
            1 => rng.gen_range(-700.0..700.0),
            2 => [0.0, -0.0, INF, -INF, NAN, 0.5, -1.5][rng.gen_range(0..7)],
            _ => rng.gen_range(-4.0..4.0),
        })
        .collect()
}

const PROGRAMS: &[&str] = &[
    "fn f(x: [n]R, y: [n]R) -> [n]R = gen(i:n) pow(x[i], 3.0) + 0 * y[i]",
    "fn f(x: [n]R, y: [n]R) -> [n]R = gen(i:n) pow(x[i], y[i])",
    "fn f(x: [n]R, y: [n]R) -> [n]R = gen(i:n) pow(x[i], 1.5) + 0 * y[i]",
    "fn f(x: [n]R, y: [n]R) -> [n]R = gen(i:n) pow(x[i], -1.5) + 0 * y[i]",
    "fn f(x: [n]R, y: [n]R) -> [n]R = gen(i:n) 2 * pow(abs(x[i]) + 1, y[i] / 8) - pow(x[i] + y[i], 2)",
    "fn f(x: [n]R, y: [n]R) -> [n]R = gen(i:n) pow(y[i], x[i])",
];

const SUMS: &[&str] = &[
    "fn f(x: [n]R, y: [n]R) -> R = sum(i:n) pow(x[i], y[i])",
    "fn f(x: [n]R, y: [n]R) -> R = sum(i:n) pow(abs(x[i]) + 1, y[i] / 100)",
    "fn f(x: [n]R, y: [n]R) -> R = sum(i:n) pow(abs(x[i]), -1.5) * y[i]",
];

/// The written program through the JIT, and the optimised one.
fn kernels(src: &str, p: Precision) -> Vec<std::sync::Arc<jit::Kernel>> {
    let f = load1(src);
    let g = einsat::opt::optimize(
        &f,
        &einsat::opt::Options {
            precision: p,
            ..einsat::opt::Options::default()
        },
    )
    .unwrap()
    .program;
    [f, g]
        .iter()
        .map(|h| jit::compile_with(h, &common::jit_opts(p)).unwrap())
        .collect()
}

#[test]
fn jit_elementwise_pow_is_the_interpreter_within_an_ulp() {
    for src in PROGRAMS {
        let f = load1(src);
        for n in [1usize, 7, 300, 1000] {
            let (x, y) = (bases(n, n as u64), exponents(n, 7 * n as u64));
            let args = [vec1(&x), vec1(&y)];
            let want = array(&interp::run(&f, &args).unwrap());
            // (one call: within an ulp; more, by the contract: the
            // calls' errors propagate)
            let single = src.matches("pow").count() == 1;
            for k in kernels(src, Precision::F64) {
                let got = k.call(&args).unwrap();
                let why = contract_judge(&f, &args, &got).unwrap();
                assert!(why.is_none(), "{src} n {n}: {}", why.unwrap());
                for (i, (w, g)) in want.iter().zip(array(&got)).enumerate() {
                    assert!(
                        !single || ulps(*w, g) <= 1,
                        "{src}: x {} y {}: jit {g} interp {w}",
                        x[i],
                        y[i]
                    );
                }
            }
        }
    }
}

#[test]
fn jit_sums_of_pow_keep_the_contract() {
    for src in SUMS {
        let f = load1(src);
        for n in [1usize, 5, 64, 1000] {
            for seed in 0..3u64 {
                let (x, y) = (bases(n, seed * 11 + n as u64), exponents(n, seed));
                // finite data and special data alike
                let x: Vec<f64> = if seed == 0 {
                    x.iter()
                        .map(|v| if v.is_finite() { *v } else { 2.0 })
                        .collect()
                } else {
                    x
                };
                let args = [vec1(&x), vec1(&y)];
                for k in kernels(src, Precision::F64) {
                    let got = k.call(&args).unwrap();
                    let why = contract_judge(&f, &args, &got).unwrap();
                    assert!(why.is_none(), "{src} n {n}: {}", why.unwrap());
                }
            }
        }
    }
}

fn v32(x: &[f64]) -> ArrayD<f32> {
    arr1(&x.iter().map(|&v| v as f32).collect::<Vec<_>>()).into_dyn()
}

#[test]
fn jit_pow_in_f32_is_the_f32_interpreter() {
    for src in PROGRAMS.iter().chain(SUMS) {
        let f = load1(src);
        for n in [1usize, 9, 1000] {
            let (x, y) = (bases(n, 3 + n as u64), exponents(n, 5 + n as u64));
            let x: Vec<f64> = x.iter().map(|v| v.clamp(-1e30, 1e30)).collect();
            let (xa, ya) = (v32(&x), v32(&y));
            let args = [vec1(&x), vec1(&y)];
            let want = interp::run_with(&f, &args, Precision::F32).unwrap();
            for k in kernels(src, Precision::F32) {
                let got = k.call_f32(&[Arg32::from(&xa), Arg32::from(&ya)]).unwrap();
                match (&got, &want) {
                    (Value32::Array(g), Value::Array(w)) => {
                        let gv = Value::Array(g.mapv(f64::from));
                        let why = contract_judge_in(&f, &args, &gv, Precision::F32).unwrap();
                        assert!(why.is_none(), "{src} n {n}: {}", why.unwrap());
                        for (i, (g, w)) in g.iter().zip(w.iter()).enumerate() {
                            assert!(
                                src.matches("pow").count() > 1 || ulps32(*g, *w as f32) <= 1,
                                "{src}: x {} y {}: jit {g} interp {w}",
                                x[i],
                                y[i]
                            );
                        }
                    }
                    (Value32::Real(g), _) => {
                        let why =
                            contract_judge_in(&f, &args, &Value::Real(*g as f64), Precision::F32)
                                .unwrap();
                        assert!(why.is_none(), "{src} n {n}: {}", why.unwrap());
                    }
                    _ => panic!("{src}: {got:?} against {want}"),
                }
            }
        }
    }
}

fn prop_cfg() -> GenConfig {
    GenConfig {
        funcs: true,
        ..GenConfig::default()
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(48), ..ProptestConfig::default() })]
    /// Random programs with `pow` (the generator's calls include it):
    /// the JIT of the optimised program keeps the contract.
    #[test]
    fn random_programs_with_pow_keep_the_contract(f in arb_function(prop_cfg()), seed in any::<u64>()) {
        let g = einsat::opt::optimize(&f, &einsat::opt::Options::default()).unwrap().program;
        let k = match jit::compile_with(&g, &common::jit_opts(Precision::F64)) {
            Ok(k) => k,
            Err(e) => {
                prop_assume!(false, "{}", e);
                unreachable!()
            }
        };
        let sizes = random_sizes(&f, seed, 4);
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let args = random_inputs(&f, &sizes, &mut rng).unwrap();
        let got = k.call(&args).unwrap();
        let why = contract_judge(&f, &args, &got).unwrap();
        prop_assert!(why.is_none(), "{}", why.unwrap());
    }
}

/// The JIT stages `pow` into the vector kernel (`vmath::pow_to`): on
/// arguments where the kernel's result differs from `powf`'s in the last
/// bit (both within an ulp), the JIT gives the kernel's, for two moving
/// arguments, a constant exponent, and `pow` inside a larger body.
#[test]
fn jit_stages_pow_into_the_vector_kernel() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let n = 200_000;
    let x: Vec<f64> = (0..n)
        .map(|_| 10f64.powf(rng.gen_range(-5.0..5.0)))
        .collect();
    let y: Vec<f64> = (0..n).map(|_| rng.gen_range(-60.0..60.0)).collect();
    let mut k = vec![0.0; n];
    einsat::vmath::pow_to(&x, &y, &mut k);
    let differ: Vec<usize> = (0..n).filter(|&i| k[i] != x[i].powf(y[i])).collect();
    assert!(!differ.is_empty(), "the kernel is powf on every pair");
    let xs: Vec<f64> = differ.iter().map(|&i| x[i]).collect();
    let ys: Vec<f64> = differ.iter().map(|&i| y[i]).collect();
    let want: Vec<f64> = differ.iter().map(|&i| k[i]).collect();
    let f = load1("fn f(x: [n]R, y: [n]R) -> [n]R = gen(i:n) pow(x[i], y[i])");
    let got = array(
        &jit::compile(&f)
            .unwrap()
            .call(&[vec1(&xs), vec1(&ys)])
            .unwrap(),
    );
    assert_eq!(got, want);
    let g = load1("fn g(x: [n]R, y: [n]R) -> [n]R = gen(i:n) 2 * pow(x[i], y[i]) + y[i]");
    let got = array(
        &jit::compile(&g)
            .unwrap()
            .call(&[vec1(&xs), vec1(&ys)])
            .unwrap(),
    );
    let want2: Vec<f64> = want.iter().zip(&ys).map(|(p, y)| 2.0 * p + y).collect();
    assert_eq!(got, want2);
    // a constant exponent
    let c = 1.37;
    let mut kc = vec![0.0; n];
    einsat::vmath::pow_const_to(&x, c, &mut kc);
    let xs: Vec<f64> = (0..n)
        .filter(|&i| kc[i] != x[i].powf(c))
        .map(|i| x[i])
        .collect();
    assert!(!xs.is_empty(), "the kernel is powf on every base");
    let mut want = vec![0.0; xs.len()];
    einsat::vmath::pow_const_to(&xs, c, &mut want);
    let h = load1("fn h(x: [n]R, c: R) -> [n]R = gen(i:n) pow(x[i], c)");
    let got = array(
        &jit::compile(&h)
            .unwrap()
            .call(&[vec1(&xs), Value::Real(c)])
            .unwrap(),
    );
    assert_eq!(got, want);
}
