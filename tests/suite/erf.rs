//! The error function `erf` in the language, end to end: parsing,
//! printing and type errors; the interpreter's value (`libm::erf`, in
//! `F32` the `f64` function of the widened argument rounded); the
//! double-double reference against the library; the optimiser's `erf`
//! rule; the JIT against the interpreter on programs using `erf` (an
//! elementwise map with an addend, GELU's exact form, a sum of `erf`
//! terms, `erf` inside a reduction over rows) in `F64` and `F32`, on
//! moderate, offset, huge, tiny and special data (NaN, ±inf, ±0,
//! subnormals) at lengths around the vector widths and chunks.
#![cfg(feature = "testing")] // uses the testing support

use crate::common;

use common::{jit_opts, load1};
use einsat::interp::{self, Value};
use einsat::opt::{optimize, Options};
use einsat::syntax::ast::Func;
use einsat::syntax::print_function;
use einsat::Precision;
use einsat::{jit, Arg32, Value32};
use ndarray::{arr1, ArrayD};

use crate::common::Rng;

const LENGTHS: [usize; 11] = [0, 1, 2, 7, 8, 9, 255, 256, 257, 1000, 4097];

/// Data classes: moderate (every interval of the kernel, |x| < 7),
/// offset, huge, tiny (subnormals too), and moderate with specials at
/// the start, the middle and the end.
fn data(class: usize, n: usize, r: &mut Rng) -> Vec<f64> {
    let mut xs: Vec<f64> = (0..n)
        .map(|_| {
            let u = r.unit() - 0.5;
            match class {
                0 => u * 14.0,
                1 => 1e6 + u,
                2 => u * 1e300,
                3 => u * 1e-300,
                _ => u * 8.0,
            }
        })
        .collect();
    if class == 4 {
        let specials = [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.0,
            -0.0,
            5e-324,
            -2.5e-310,
            6.0,
            -5.95,
        ];
        for (k, s) in specials.iter().enumerate() {
            if n > 0 {
                let at = [0, n / 2, n - 1][k % 3];
                xs[(at + k) % n] = *s;
            }
        }
    }
    xs
}

fn vec_value(x: &[f64]) -> Value {
    Value::Array(arr1(x).into_dyn())
}

fn flat(v: &Value) -> Vec<f64> {
    match v {
        Value::Real(x) => vec![*x],
        Value::Array(a) => a.iter().copied().collect(),
        other => panic!("unexpected result {other:?}"),
    }
}

fn flat32(v: &Value32) -> Vec<f64> {
    match v {
        Value32::Real(x) => vec![*x as f64],
        Value32::Array(a) => a.iter().map(|&x| x as f64).collect(),
        other => panic!("unexpected result {other:?}"),
    }
}

/// Equal bits, or both NaN.
fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// A sum of `n` terms in another order: within the bound of recursive
/// summation (`n·u` times the terms' magnitudes, for either order) plus
/// the terms' own rounding, equal infinities, NaN where the other is not
/// finite either.
fn close(got: f64, want: f64, n: usize, mag: f64, u: f64) -> bool {
    if want.is_nan() || got.is_nan() {
        !got.is_finite() && !want.is_finite()
    } else if want.is_infinite() || got.is_infinite() {
        got == want
    } else {
        (got - want).abs() <= 2.0 * (n as f64 + 2.0) * u * mag + 1e-300
    }
}

#[test]
fn parses_prints_and_type_checks() {
    let f = load1("fn g(x: [n]R) -> [n]R = gen(i:n) x[i] * (1 + erf(x[i] / sqrt(2))) / 2");
    let text = print_function(&f);
    assert!(text.contains("erf("), "{text}");
    assert_eq!(load1(&text), f, "round trip of {text}");
    assert_eq!(Func::from_name("erf"), Some(Func::Erf));
    assert_eq!(Func::Erf.arity(), 1);
    // a name `erf` not followed by `(` is a variable
    let v = load1("fn h(erf: R) -> R = erf + erf(erf)");
    let r = interp::run(&v, &[Value::Real(0.5)]).unwrap();
    assert_eq!(flat(&r), vec![0.5 + libm::erf(0.5)]);
    // wrong arity and argument type: clear errors
    let e = einsat::load("fn g(x: R) -> R = erf(x, x)").unwrap_err();
    assert!(e.to_string().contains("`erf` takes 1 argument"), "{e}");
    assert!(einsat::load("fn g(x: [n]R) -> R = erf(x)").is_err());
    assert!(einsat::load("fn g(x: R) -> R = erf()").is_err());
}

#[test]
fn the_interpreter_is_libm_and_f32_rounds_it() {
    let f = load1("fn g(x: [n]R) -> [n]R = gen(i:n) erf(x[i])");
    let mut r = Rng(1);
    for class in 0..5 {
        let xs = data(class, 300, &mut r);
        let got = flat(&interp::run(&f, &[vec_value(&xs)]).unwrap());
        for (x, y) in xs.iter().zip(&got) {
            assert!(same(*y, libm::erf(*x)), "erf({x:e}) = {y:e}");
        }
        let x32: Vec<f64> = xs.iter().map(|&x| x as f32 as f64).collect();
        let got = flat(&interp::run_with(&f, &[vec_value(&x32)], Precision::F32).unwrap());
        for (x, y) in x32.iter().zip(&got) {
            assert!(
                same(*y, libm::erf(*x) as f32 as f64),
                "F32 erf({x:e}) = {y:e}"
            );
        }
    }
    // the specials
    let s = [
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        6.0,
        -5.94,
        1e-320,
    ];
    let got = flat(&interp::run(&f, &[vec_value(&s)]).unwrap());
    assert_eq!(got[0].to_bits(), 0.0f64.to_bits());
    assert_eq!(got[1].to_bits(), (-0.0f64).to_bits());
    assert_eq!(&got[2..6], &[1.0, -1.0, 1.0, -1.0]);
    assert!(got[6] > 1e-320 && got[6] < 1.2e-320);
    let nan = flat(&interp::run(&f, &[vec_value(&[f64::NAN])]).unwrap());
    assert!(nan[0].is_nan());
}

#[test]
fn the_double_double_reference_agrees_with_libm() {
    use einsat::interp::domain::erf_dd;
    use twofloat::TwoFloat;
    let mut r = Rng(2);
    let mut worst = 0.0f64;
    for k in 0..200_000 {
        let x = match k % 3 {
            0 => (r.unit() - 0.5) * 14.0,
            1 => (r.unit() - 0.5) * 5.0,
            _ => (r.unit() - 0.5) * 10f64.powf(-30.0 * r.unit()),
        };
        let v = erf_dd(TwoFloat::from(x));
        let lib = libm::erf(x);
        let ulp = f64::EPSILON * lib.abs().max(f64::MIN_POSITIVE);
        // the library is within 1 ulp of erf
        let d = (TwoFloat::from(lib) - v).hi().abs() / ulp;
        worst = worst.max(d);
        assert!(d <= 1.0, "erf({x:e}): libm {lib:e}, reference {v:?}");
    }
    assert!(
        worst > 0.2,
        "the reference differs from the library somewhere"
    );
    assert_eq!(erf_dd(TwoFloat::from(f64::INFINITY)).hi(), 1.0);
    assert_eq!(erf_dd(TwoFloat::from(-30.0)).hi(), -1.0);
    assert!(erf_dd(TwoFloat::from(f64::NAN)).hi().is_nan());
}

#[test]
fn erf_is_odd_in_the_optimiser() {
    // `erf(-x) = -erf(x)` (rules/algebra.rules, exact): the optimised
    // program computes the same values bit for bit
    let f = load1("fn g(x: [n]R) -> [n]R = gen(i:n) erf(-x[i]) + erf(x[i])");
    let g = optimize(&f, &Options::default()).unwrap().program;
    let mut r = Rng(3);
    for class in 0..5 {
        let xs = data(class, 100, &mut r);
        let a = flat(&interp::run(&f, &[vec_value(&xs)]).unwrap());
        let b = flat(&interp::run(&g, &[vec_value(&xs)]).unwrap());
        for (p, q) in a.iter().zip(&b) {
            assert!(same(*p, *q) || (*p == 0.0 && *q == 0.0), "{p:e} {q:e}");
        }
    }
}

const PROGRAMS: &str = "
fn map(x: [n]R) -> [n]R = gen(i:n) erf(x[i])
fn mapc(x: [n]R) -> [n]R = gen(i:n) erf(x[i] - 0.75)
fn gelu(x: [n]R) -> [n]R = gen(i:n) x[i] * (1 + erf(x[i] / sqrt(2))) / 2
fn sumerf(x: [n]R) -> R = sum(i:n) erf(0.5 + x[i])
fn rows(X: [r,n]R) -> [r]R = gen(i:r) sum(j:n) X[i,j] * erf(X[i,j])
";

/// The elementwise programs, whose results the JIT gives bit for bit.
const EXACT: [&str; 3] = ["map", "mapc", "gelu"];

#[test]
fn jit_matches_the_interpreter_f64() {
    let p = einsat::load(PROGRAMS).unwrap();
    let mut r = Rng(4);
    for f in &p.functions {
        let g = optimize(f, &Options::default()).unwrap().program;
        let k = jit::compile_with(&g, &jit_opts(Precision::F64)).unwrap();
        for n in LENGTHS {
            for class in 0..5 {
                let xs = data(class, if f.name == "rows" { 3 * n } else { n }, &mut r);
                let arg = if f.name == "rows" {
                    let a = ndarray::Array2::from_shape_vec((3, n), xs.clone()).unwrap();
                    Value::Array(a.into_dyn())
                } else {
                    vec_value(&xs)
                };
                let want = flat(&interp::run(f, std::slice::from_ref(&arg)).unwrap());
                let got = flat(&k.call(&[arg]).unwrap());
                assert_eq!(want.len(), got.len());
                let mag: f64 = xs
                    .iter()
                    .filter(|x| x.is_finite())
                    .map(|x| x.abs())
                    .sum::<f64>()
                    + n as f64;
                for (i, (v, w)) in got.iter().zip(&want).enumerate() {
                    let ok = if EXACT.contains(&f.name.as_str()) {
                        same(*v, *w)
                    } else {
                        close(*v, *w, n, mag, f64::EPSILON / 2.0)
                    };
                    assert!(
                        ok,
                        "{} n={n} class {class} [{i}]: JIT {v:e}, interpreter {w:e}\n{}",
                        f.name,
                        print_function(&g)
                    );
                }
            }
        }
    }
}

#[test]
fn jit_matches_the_interpreter_f32() {
    let p = einsat::load(PROGRAMS).unwrap();
    let mut r = Rng(5);
    let o = Options {
        precision: Precision::F32,
        ..Options::default()
    };
    for f in &p.functions {
        let g = optimize(f, &o).unwrap().program;
        let k = jit::compile_with(&g, &jit_opts(Precision::F32)).unwrap();
        for n in LENGTHS {
            for class in [0, 1, 3, 4] {
                let rows = f.name == "rows";
                let xs: Vec<f32> = data(class, if rows { 3 * n } else { n }, &mut r)
                    .iter()
                    .map(|&x| x as f32)
                    .collect();
                let x64: Vec<f64> = xs.iter().map(|&x| x as f64).collect();
                let (arg, arg32): (Value, ArrayD<f32>) = if rows {
                    let a = ndarray::Array2::from_shape_vec((3, n), x64.clone()).unwrap();
                    let b = ndarray::Array2::from_shape_vec((3, n), xs.clone()).unwrap();
                    (Value::Array(a.into_dyn()), b.into_dyn())
                } else {
                    (vec_value(&x64), arr1(&xs).into_dyn())
                };
                let want = flat(&interp::run_with(f, &[arg], Precision::F32).unwrap());
                let got = flat32(&k.call_f32(&[Arg32::from(&arg32)]).unwrap());
                assert_eq!(want.len(), got.len());
                let mag: f64 = x64
                    .iter()
                    .filter(|x| x.is_finite())
                    .map(|x| x.abs())
                    .sum::<f64>()
                    + n as f64;
                for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                    let ok = if EXACT.contains(&f.name.as_str()) {
                        same(*g, *w)
                    } else {
                        close(*g, *w, n, mag, f32::EPSILON as f64 / 2.0)
                    };
                    assert!(
                        ok,
                        "F32 {} n={n} class {class} [{i}]: JIT {g:e}, interpreter {w:e}",
                        f.name
                    );
                }
            }
        }
    }
}

/// Calls in CLIF `text` of functions whose signature starts with `sig`.
fn calls_with_signature(text: &str, sig: &str) -> usize {
    let sigs: Vec<String> = text
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.trim().split_once(" = ")?;
            (name.starts_with("sig") && rest.starts_with(sig)).then(|| name.to_string())
        })
        .collect();
    let fns: Vec<String> = text
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.trim().split_once(" = ")?;
            (name.starts_with("fn") && sigs.iter().any(|s| rest.ends_with(&format!(" {s}"))))
                .then(|| name.to_string())
        })
        .collect();
    text.lines()
        .filter(|l| fns.iter().any(|f| l.contains(&format!("call {f}("))))
        .count()
}

#[test]
fn the_jit_calls_the_slice_kernels() {
    // `erf` has a vector kernel: a map of a run is a staged call
    // (src, dst, n) or (src, dst, n, c), a sum of `erf` terms one fused
    // call (src, n, c) -> f64
    assert!(einsat::vmath::has_kernel(Func::Erf));
    let p = einsat::load(PROGRAMS).unwrap();
    let opts = jit::Options::default();
    let text = |name: &str| {
        let f = p.functions.iter().find(|f| f.name == name).unwrap();
        let g = optimize(f, &Options::default()).unwrap().program;
        jit::testing::clif_text(&g, &opts).unwrap().join("\n")
    };
    let map = text("map");
    assert!(
        calls_with_signature(&map, "(i64, i64, i64)") > 0,
        "map not staged:\n{map}"
    );
    let mapc = text("mapc");
    assert!(
        calls_with_signature(&mapc, "(i64, i64, i64, f64)") > 0,
        "mapc not staged:\n{mapc}"
    );
    let s = text("sumerf");
    assert!(
        calls_with_signature(&s, "(i64, i64, f64) -> f64") > 0,
        "sumerf not fused:\n{s}"
    );
}
