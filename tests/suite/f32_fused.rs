//! The JIT in `Precision::F32` on the paths that call `vmath`'s `f32`
//! kernels (`vmath/single.rs`): maps of `exp`/`log`/`sin`/`cos`/`tanh`
//! of a run (with an addend), fused sums of a function of a run
//! (log-sum-exp), max/min reductions of a run, a row softmax's division
//! and a layer normalisation's moments and affine map; against the
//! interpreter's `F32` (`interp::run_with`): maps within 1 ulp (double
//! rounding aside, bit for bit), everything within the floating-point
//! contract at `f32`'s unit roundoff, on offset data, huge and tiny
//! magnitudes, inf and NaN.
#![cfg(feature = "testing")] // uses the testing support

use crate::common;

use common::load1;
use einsat::interp::{self, Value};
use einsat::testing::difftest::contract_judge_in;
use einsat::Precision;
use einsat::{jit, Arg32, Value32};
use ndarray::{Array2, ArrayD};

const F32: Precision = Precision::F32;

fn jopts() -> jit::Options {
    jit::Options {
        precision: F32,
        ..jit::Options::default()
    }
}

/// `n` values `offset + scale·U(0, 1)`, deterministic.
fn data(n: usize, offset: f32, scale: f32, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            let u = (s.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 40) as f32 / (1u64 << 24) as f32;
            offset + scale * u
        })
        .collect()
}

fn widen(v: &Value32) -> Value {
    match v {
        Value32::Real(x) => Value::Real(*x as f64),
        Value32::Array(a) => Value::Array(a.mapv(|x| x as f64)),
        Value32::Pair(a, b) => Value::pair(widen(a), widen(b)),
    }
}

fn flat(v: &Value) -> Vec<f64> {
    match v {
        Value::Real(x) => vec![*x],
        Value::Array(a) => a.iter().copied().collect(),
        Value::Pair(a, b) => [flat(a), flat(b)].concat(),
    }
}

/// Runs `src` on `args` in the JIT and the interpreter, both `F32`;
/// checks the contract and returns (JIT, interpreter) flattened.
fn both(src: &str, args: &[ArrayD<f32>]) -> (Vec<f64>, Vec<f64>) {
    let f = load1(src);
    let o = einsat::opt::Options {
        precision: F32,
        ..einsat::opt::Options::default()
    };
    let g = einsat::opt::optimize(&f, &o).unwrap().program;
    let k = jit::compile_with(&g, &jopts()).unwrap();
    let a32: Vec<Arg32<'_>> = args.iter().map(|a| Arg32::Array(a.view())).collect();
    let got = widen(&k.call_f32(&a32).unwrap());
    let vals: Vec<Value> = args
        .iter()
        .map(|a| Value::Array(a.mapv(f64::from)))
        .collect();
    let want = interp::run_with(&f, &vals, F32).unwrap();
    let why = contract_judge_in(&f, &vals, &got, F32).unwrap();
    assert!(why.is_none(), "{src}: {}", why.unwrap());
    (flat(&got), flat(&want))
}

/// Within `ulps` f32 ulps of each other (NaN where the other is NaN,
/// infinities and zeros equal).
fn close(got: &[f64], want: &[f64], ulps: u32, what: &str) {
    assert_eq!(got.len(), want.len());
    for (k, (g, w)) in got.iter().zip(want).enumerate() {
        if w.is_nan() {
            assert!(g.is_nan(), "{what}[{k}]: {g} want NaN");
            continue;
        }
        let (g, w) = (*g as f32, *w as f32);
        let d = (g.to_bits() as i64 - w.to_bits() as i64).unsigned_abs();
        assert!(
            g == w || (g.signum() == w.signum() && d <= u64::from(ulps)),
            "{what}[{k}]: {g:e} want {w:e}"
        );
    }
}

fn arr(x: Vec<f32>) -> ArrayD<f32> {
    ndarray::arr1(&x).into_dyn()
}

#[test]
fn maps_of_a_run_with_an_addend() {
    for f in ["exp", "log", "sin", "cos", "tanh"] {
        for (off, scale) in [
            (-5.0f32, 10.0f32),
            (1e4, 1.0),
            (-100.0, 200.0),
            (1e-30, 1e-30),
        ] {
            for n in [1usize, 15, 16, 17, 300, 1000] {
                let mut x = data(n, off, scale, n as u64);
                if n > 20 {
                    x[3] = f32::INFINITY;
                    x[5] = f32::NEG_INFINITY;
                    x[7] = f32::NAN;
                    x[9] = -0.0;
                    x[11] = f32::from_bits(3);
                }
                let c = off;
                let src = format!("fn m(x: [n]R, c: [1]R) -> [n]R = gen(i:n) {f}(x[i] - c[0])");
                let (g, w) = both(&src, &[arr(x.clone()), arr(vec![c])]);
                close(&g, &w, 1, &src);
                let src = format!("fn m(x: [n]R) -> [n]R = gen(i:n) {f}(x[i])");
                let (g, w) = both(&src, &[arr(x)]);
                close(&g, &w, 1, &src);
            }
        }
    }
}

#[test]
fn fused_sums_and_log_sum_exp() {
    let lse = "fn lse(x: [n]R) -> R = let m = max(i:n) x[i] in m + log(sum(i:n) exp(x[i] - m))";
    for (off, scale) in [(1e4f32, 1.0f32), (-3.0, 6.0), (80.0, 30.0), (-1e30, 1e29)] {
        for n in [1usize, 17, 4097, 100_000] {
            let x = data(n, off, scale, 3 + n as u64);
            let (g, w) = both(lse, &[arr(x.clone())]);
            assert!(
                ((g[0] - w[0]) / w[0].abs().max(1e-30)).abs() < 1e-5,
                "{off} {n}: {g:?} {w:?}"
            );
            for (f, fun) in [
                ("exp", einsat::syntax::ast::Func::Exp),
                ("tanh", einsat::syntax::ast::Func::Tanh),
                ("sin", einsat::syntax::ast::Func::Sin),
            ] {
                let src = format!("fn s(x: [n]R, c: [1]R) -> R = sum(i:n) {f}(x[i] + c[0])");
                let (g, w) = both(&src, &[arr(x.clone()), arr(vec![-off])]);
                // the exact sum of the interpreter's f32 terms
                let terms: Vec<f64> = x
                    .iter()
                    .map(|v| f64::from(fun.apply(&[f64::from(v - off)]) as f32))
                    .collect();
                let exact: f64 = terms.iter().sum();
                let mag: f64 = terms.iter().map(|t| t.abs()).sum();
                if w[0].is_finite() && g[0].is_finite() {
                    // blocked f32 sums: far within n·u of the magnitudes
                    assert!(
                        (g[0] - exact).abs() <= 2e-6 * mag,
                        "{src} {n}: {g:?} {exact} (interpreter {w:?})"
                    );
                } else {
                    assert_eq!(g[0], w[0], "{src}");
                }
            }
        }
    }
    // inf and NaN terms
    let mut x = data(1000, -1.0, 2.0, 9);
    x[400] = f32::INFINITY;
    let (g, _) = both(lse, &[arr(x.clone())]);
    assert!(g[0].is_nan() || g[0] == f64::INFINITY, "{g:?}");
    let (g, w) = both("fn s(x: [n]R) -> R = sum(i:n) exp(x[i])", &[arr(x.clone())]);
    assert_eq!((g[0], w[0]), (f64::INFINITY, f64::INFINITY));
    x[400] = f32::NAN;
    let (g, w) = both(lse, &[arr(x)]);
    assert!(g[0].is_nan() && w[0].is_nan());
}

#[test]
fn max_and_min_of_runs() {
    for n in [1usize, 7, 33, 1000] {
        let mut x = data(3 * n, -2.0, 4.0, n as u64);
        let m = "fn m(X: [r,n]R) -> ([r]R, [r]R) = (gen(i:r) max(j:n) X[i,j], gen(i:r) min(j:n) X[i,j])";
        let a = Array2::from_shape_vec((3, n), x.clone())
            .unwrap()
            .into_dyn();
        let (g, w) = both(m, &[a]);
        close(&g, &w, 0, m);
        x[0] = -0.0;
        x[n.min(2)] = 0.0;
        x[n] = f32::NAN;
        x[2 * n] = f32::NEG_INFINITY;
        let a = Array2::from_shape_vec((3, n), x).unwrap().into_dyn();
        let (g, w) = both(m, &[a]);
        close(&g, &w, 0, m);
    }
}

#[test]
fn softmax_and_layer_norm_rows() {
    let sm = "fn sm(X: [n,m]R) -> [n,m]R = gen(i:n) let mx = max(j:m) X[i,j] in \
              let z = sum(j:m) exp(X[i,j] - mx) in gen(j:m) exp(X[i,j] - mx) / z";
    let ln = "fn ln(X: [n,m]R) -> [n,m]R = gen(i:n) let mu = (sum(j:m) X[i,j]) / m in \
              let v = (sum(j:m) (X[i,j] - mu) * (X[i,j] - mu)) / m in \
              gen(j:m) (X[i,j] - mu) / sqrt(v + 0.00001)";
    for (off, scale) in [(1e4f32, 1.0f32), (-3.0, 6.0), (0.0, 1e-20), (0.0, 1e18)] {
        for (r, m) in [(3usize, 40usize), (5, 257), (2, 5000)] {
            let x = data(r * m, off, scale, (r * m) as u64);
            let a = Array2::from_shape_vec((r, m), x).unwrap().into_dyn();
            let (g, w) = both(sm, std::slice::from_ref(&a));
            for (p, q) in g.iter().zip(&w) {
                assert!((p - q).abs() <= 1e-5 * q.abs() + 1e-30, "softmax {p} {q}");
            }
            // (the contract check in `both` judges the layer norm)
            both(ln, &[a]);
        }
    }
    let mut x = data(2 * 64, 0.0, 1.0, 11);
    x[5] = f32::INFINITY;
    x[64 + 7] = f32::NAN;
    let a = Array2::from_shape_vec((2, 64), x).unwrap().into_dyn();
    let (g, w) = both(sm, std::slice::from_ref(&a));
    assert!(g.iter().zip(&w).all(|(p, q)| p.is_nan() == q.is_nan()));
    both(ln, &[a]);
}
