//! Float32 precision for programs (issue 25): the interpreter's `F32`
//! meaning against hand-written `f32` loops (elementwise operations and
//! sums in the written order bit for bit), overflow where `f32`
//! overflows, offset data, special values and subnormals; the optimiser
//! for `F32` judged by the floating-point contract at `f32`'s unit
//! roundoff; the JIT in `F32` (generic loops, `f32x4` vector loops at every tail
//! length, stencils) against the `F32`
//! interpreter (bit for bit where no sum is reordered, by the contract
//! elsewhere, on random programs too), strided and negative-stride `f32`
//! views, and calls with the wrong element type.
#![cfg(feature = "testing")] // uses the testing support

use crate::common;

use common::load1;

use common::cases;
use einsat::interp::{self, Value};
use einsat::opt::{optimize, Options};
use einsat::syntax::print_function;
use einsat::testing::difftest::contract_judge_in;
use einsat::testing::{arb_function, random_inputs, random_sizes, GenConfig};
use einsat::Precision;
use einsat::{jit, Arg32, Value32};
use ndarray::{arr1, s, Array2, ArrayD};
use proptest::prelude::*;
use rand::SeedableRng;

const F32: Precision = Precision::F32;

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

// ------------------------------------------------------------------ JIT

/// An owned f32 argument (the views of [`Arg32`] borrow it).
enum Own {
    Real(f32),
    Array(ArrayD<f32>),
    Pair(Box<Own>, Box<Own>),
}

fn own(v: &Value) -> Own {
    match v {
        Value::Real(x) => Own::Real(*x as f32),
        Value::Array(a) => Own::Array(a.mapv(|x| x as f32)),
        Value::Pair(a, b) => Own::Pair(Box::new(own(a)), Box::new(own(b))),
    }
}

fn arg(o: &Own) -> Arg32<'_> {
    match o {
        Own::Real(x) => Arg32::Real(*x),
        Own::Array(a) => Arg32::Array(a.view()),
        Own::Pair(a, b) => Arg32::pair(arg(a), arg(b)),
    }
}

/// The value of a result, as the interpreter's `Value`.
fn widen(v: &Value32) -> Value {
    match v {
        Value32::Real(x) => Value::Real(*x as f64),
        Value32::Array(a) => Value::Array(a.mapv(|x| x as f64)),
        Value32::Pair(a, b) => Value::pair(widen(a), widen(b)),
    }
}

/// F32 with every GEMM stage on the library and every nest with a `gen`
/// split across threads (as the differential tests run the f64 JIT).
fn jopts() -> jit::Options {
    jit::Options {
        precision: F32,
        gemm_min_work: 0,
        parallel_threshold: 0,
        ..jit::Options::default()
    }
}

fn kernel32(src: &str) -> std::sync::Arc<jit::Kernel> {
    jit::compile_with(&load1(src), &jopts()).unwrap()
}

fn bits(v: &Value) -> Vec<u64> {
    match v {
        Value::Real(x) => vec![x.to_bits()],
        Value::Array(a) => a.iter().map(|x| x.to_bits()).collect(),
        Value::Pair(a, b) => [bits(a), bits(b)].concat(),
    }
}

fn v32(x: &[f32]) -> ArrayD<f32> {
    arr1(x).into_dyn()
}

#[test]
fn jit_elementwise_is_the_interpreter_bit_for_bit() {
    let src = "fn f(x: [n]R, y: [n]R, c: R) -> [n]R =
           gen(i:n) (x[i] - y[i]) / (x[i] * c - 0.1) - sqrt(abs(y[i])) + exp(x[i]) - max(x[i], y[i])";
    let k = kernel32(src);
    let x = data(1001, -0.5, 8);
    let y = data(1001, 1e4, 9);
    let (xa, ya) = (v32(&x), v32(&y));
    let got = k
        .call_f32(&[Arg32::from(&xa), Arg32::from(&ya), Arg32::Real(3.0)])
        .unwrap();
    let want = interp::run_with(&load1(src), &[vec1(&x), vec1(&y), Value::Real(3.0)], F32).unwrap();
    assert_eq!(bits(&widen(&got)), bits(&want));
    let Value32::Array(a) = got else { panic!() };
    assert_eq!(a.len(), 1001);
}

#[test]
fn jit_overflows_where_f32_overflows() {
    let k = kernel32("fn f(x: [n]R) -> [n]R = gen(i:n) (x[i] * 1e30) / 1e30");
    let x = v32(&[1e30, 1.0, -1e10]);
    let got = k.call_f32(&[Arg32::from(&x)]).unwrap();
    let Value32::Array(a) = got else { panic!() };
    assert_eq!(a[0], f32::INFINITY);
    assert_eq!(a[1], 1.0);
    assert_eq!(a[2], f32::NEG_INFINITY);
    let nan = kernel32("fn g(x: [n]R) -> R = sum(i:n) x[i]");
    let x = v32(&[1.0, f32::NAN, 2.0]);
    let Value32::Real(r) = nan.call_f32(&[Arg32::from(&x)]).unwrap() else {
        panic!()
    };
    assert!(r.is_nan());
    let x = v32(&[1.0, f32::INFINITY, 2.0]);
    let Value32::Real(r) = nan.call_f32(&[Arg32::from(&x)]).unwrap() else {
        panic!()
    };
    assert_eq!(r, f32::INFINITY);
    let tiny = f32::from_bits(5);
    let x = v32(&[tiny, tiny, -f32::from_bits(2)]);
    let Value32::Real(r) = nan.call_f32(&[Arg32::from(&x)]).unwrap() else {
        panic!()
    };
    assert_eq!(r, f32::from_bits(8));
}

#[test]
fn jit_long_sums_on_offset_data_keep_f32_accuracy() {
    let src = "fn dot(x: [n]R, y: [n]R) -> R = sum(i:n) x[i] * y[i]";
    let k = kernel32(src);
    let x = data(100_000, 1e4, 10);
    let y = data(100_000, 1.0, 11);
    let (xa, ya) = (v32(&x), v32(&y));
    let got = widen(&k.call_f32(&[Arg32::from(&xa), Arg32::from(&ya)]).unwrap());
    let why = contract_judge_in(&load1(src), &[vec1(&x), vec1(&y)], &got, F32).unwrap();
    assert!(why.is_none(), "{}", why.unwrap());
    let exact: f64 = x.iter().zip(&y).map(|(a, b)| *a as f64 * *b as f64).sum();
    // blocked sums: far better than one running f32 sum's n·u
    assert!(
        ((real(&got) - exact) / exact).abs() < 1e-5,
        "{} {exact}",
        real(&got)
    );
}

#[test]
fn jit_matrix_product_against_a_naive_f32_loop() {
    let src = "fn mm(A: [n,k]R, B: [k,m]R) -> [n,m]R = gen(i:n) gen(j:m) sum(l:k) A[i,l] * B[l,j]";
    let k = kernel32(src);
    let (n, kk, m) = (37, 129, 23);
    let a = Array2::from_shape_vec((n, kk), data(n * kk, -0.5, 12)).unwrap();
    let b = Array2::from_shape_vec((kk, m), data(kk * m, -0.5, 13)).unwrap();
    let Value32::Array(c) = k.call_f32(&[Arg32::from(&a), Arg32::from(&b)]).unwrap() else {
        panic!()
    };
    assert_eq!(c.shape(), &[n, m]);
    // a GEMM stage on the library's f32 kernel
    assert!(k.stages()[0].starts_with("gemm"), "{:?}", k.stages());
    for i in 0..n {
        for j in 0..m {
            let mut want = 0.0f32;
            let mut mag = 0.0f32;
            for l in 0..kk {
                want += a[[i, l]] * b[[l, j]];
                mag += (a[[i, l]] * b[[l, j]]).abs();
            }
            let got = c[[i, j]];
            assert!(
                (got - want).abs() <= 4.0 * kk as f32 * f32::EPSILON * mag,
                "{i},{j}: {got} {want}"
            );
        }
    }
    // transposed and reversed views, read in place
    let at = a.t().to_owned();
    let at_view = at.t();
    let brev_store = b.slice(s![..;-1, ..]).to_owned();
    let brev = brev_store.slice(s![..;-1, ..]);
    let Value32::Array(c2) = k
        .call_f32(&[
            Arg32::Array(at_view.into_dyn()),
            Arg32::Array(brev.into_dyn()),
        ])
        .unwrap()
    else {
        panic!()
    };
    for (x, y) in c.iter().zip(&c2) {
        assert!((x - y).abs() <= 1e-5 * x.abs().max(1.0), "{x} {y}");
    }
}

/// A product whose K axes do not fuse (the f64 stage packs them into
/// scratch): in F32 the stage declines and the native loops run it.
#[test]
fn jit_unfused_products_in_f32() {
    let src = "fn t(A: [n,p,q]R, B: [q,p,m]R) -> [n,m]R = gen(i:n) gen(j:m) sum(a:p) sum(b:q) A[i,a,b] * B[b,a,j]";
    let k = kernel32(src);
    let (n, p, q, m) = (20, 9, 11, 17);
    let a = ndarray::Array3::from_shape_vec((n, p, q), data(n * p * q, -0.5, 15)).unwrap();
    let b = ndarray::Array3::from_shape_vec((q, p, m), data(q * p * m, -0.5, 16)).unwrap();
    let Value32::Array(c) = k.call_f32(&[Arg32::from(&a), Arg32::from(&b)]).unwrap() else {
        panic!()
    };
    for i in 0..n {
        for j in 0..m {
            let (mut want, mut mag) = (0.0f64, 0.0f64);
            for x in 0..p {
                for y in 0..q {
                    let t = a[[i, x, y]] as f64 * b[[y, x, j]] as f64;
                    want += t;
                    mag += t.abs();
                }
            }
            let got = c[[i, j]] as f64;
            assert!(
                (got - want).abs() <= 4.0 * (p * q) as f64 * 6e-8 * mag,
                "{i},{j}: {got} {want}"
            );
        }
    }
}

#[test]
fn jit_strided_and_negative_stride_f32_views() {
    let src = "fn f(x: [n]R, y: [n]R) -> [n]R = gen(i:n) x[i] * 2 - y[i]";
    let k = kernel32(src);
    let big = v32(&data(21, 0.0, 14));
    let x = big.slice(s![..;2]); // 11 elements, stride 2
    let yv = big.slice(s![..;-2]); // 11 elements, stride -2
    let Value32::Array(r) = k
        .call_f32(&[Arg32::Array(x.into_dyn()), Arg32::Array(yv.into_dyn())])
        .unwrap()
    else {
        panic!()
    };
    for i in 0..11 {
        assert_eq!(r[i], big[2 * i] * 2.0 - big[20 - 2 * i], "{i}");
    }
    // a sum over a negative-stride view
    let s = kernel32("fn s(x: [n]R) -> R = sum(i:n) x[i]");
    let Value32::Real(t) = s
        .call_f32(&[Arg32::Array(big.slice(s![..;-3]).into_dyn())])
        .unwrap()
    else {
        panic!()
    };
    let want: f32 = big.slice(s![..;-3]).iter().sum();
    assert!((t - want).abs() <= 1e-5 * want.abs());
}

#[test]
fn calls_with_the_wrong_element_type_are_errors() {
    let src = "fn f(x: [n]R) -> [n]R = gen(i:n) x[i] + 1";
    let k32 = kernel32(src);
    let x64 = ndarray::array![1.0, 2.0];
    let e = k32.eval::<ndarray::Array1<f64>>((&x64,)).unwrap_err();
    assert!(e.to_string().contains("compiled for f32"), "{e}");
    assert!(k32.call(&[Value::Array(x64.clone().into_dyn())]).is_err());
    let k64 = jit::compile(&load1(src)).unwrap();
    let x32 = v32(&[1.0, 2.0]);
    let e = k64.call_f32(&[Arg32::from(&x32)]).unwrap_err();
    assert!(e.to_string().contains("compiled for f64"), "{e}");
    // the cache keeps the two apart
    assert_eq!(k32.precision(), F32);
    assert_eq!(k64.precision(), Precision::F64);
    // shapes are checked as for f64 calls
    let k2 = kernel32("fn g(x: [n]R, y: [n]R) -> R = sum(i:n) x[i] * y[i]");
    let y = v32(&[1.0, 2.0, 3.0]);
    assert!(k2.call_f32(&[Arg32::from(&x32), Arg32::from(&y)]).is_err());
    assert!(k2.call_f32(&[Arg32::from(&x32)]).is_err());
    // integer array parameters (gathers) take f32 elements
    let g = jit::compile_with(
        &load1("fn e(E: [v,d]R, t: [n]Z) -> [n,d]R = gen(i:n) gen(j:d) E[t[i], j]"),
        &jopts(),
    )
    .unwrap();
    let e = ndarray::Array2::from_shape_fn((3, 2), |(a, b)| (10 * a + b) as f32);
    let t = v32(&[2.0, 0.0]);
    let r = g.call_f32(&[Arg32::from(&e), Arg32::from(&t)]).unwrap();
    let Value32::Array(r) = r else { panic!() };
    assert_eq!(
        r.iter().copied().collect::<Vec<f32>>(),
        [20.0, 21.0, 0.0, 1.0]
    );
}

#[test]
fn pairs_and_numbers_in_f32() {
    let k = kernel32("fn f(x: [n]R, c: R) -> ([n]R, R) = (gen(i:n) x[i] * c, sum(i:n) x[i])");
    let x = v32(&[1.5, 2.5, -1.0]);
    let r = k.call_f32(&[Arg32::from(&x), Arg32::Real(0.1)]).unwrap();
    let Value32::Pair(a, b) = r else { panic!() };
    assert_eq!(*b, Value32::Real(3.0));
    let Value32::Array(a) = *a else { panic!() };
    assert_eq!(
        a.as_slice().unwrap(),
        &[1.5 * 0.1f32, 2.5 * 0.1f32, -0.1f32]
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(300)))]

    /// Random programs optimised and compiled for F32 give, on random
    /// inputs in f32, a result the F32 contract accepts.
    #[test]
    fn jit_f32_keeps_the_contract(f in arb_function(prop_cfg()), seed in any::<u64>()) {
        let o = Options {
            precision: F32,
            time_limit: std::time::Duration::from_secs(600),
            ..Options::default()
        };
        let g = optimize(&f, &o).unwrap().program;
        let k = match jit::compile_with(&g, &jopts()) {
            Ok(k) => k,
            Err(e) => {
                prop_assume!(false, "{}", e);
                unreachable!()
            }
        };
        let sizes = random_sizes(&f, seed, 4);
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let args = random_inputs(&f, &sizes, &mut rng).unwrap();
        let owned: Vec<Own> = args.iter().map(own).collect();
        let args32: Vec<Arg32<'_>> = owned.iter().map(arg).collect();
        // (the F32 interpreter and oracle round the inputs to f32, as the call does)
        let got = widen(&k.call_f32(&args32).unwrap());
        let why = contract_judge_in(&f, &args, &got, F32).unwrap();
        prop_assert!(why.is_none(), "{}\n=>\n{}\n{}", print_function(&f), print_function(&g), why.unwrap());
    }
}

/// Staged vector-math calls in F32: the arguments widened into the f64
/// stage buffers, the f64 slice kernel, the results rounded to f32 (exp
/// past f32's range is inf, as in f32).
#[test]
fn jit_staged_calls_round_to_f32() {
    let src = "fn f(x: [n]R) -> [n]R = gen(i:n) exp(x[i]) * 2 + tanh(x[i]) - log(abs(x[i]) + 1)";
    let k = kernel32(src);
    let mut x = data(700, -4.0, 17);
    for v in x.iter_mut().step_by(3) {
        *v *= 8.0;
    }
    x[5] = 89.0; // exp overflows f32, not f64
    x[6] = f32::NAN;
    x[7] = -200.0;
    let xa = v32(&x);
    let Value32::Array(got) = k.call_f32(&[Arg32::from(&xa)]).unwrap() else {
        panic!()
    };
    assert_eq!(got[5], f32::INFINITY);
    assert!(got[6].is_nan());
    let want = interp::run_with(&load1(src), &[vec1(&x)], F32).unwrap();
    for (k, (g, w)) in got.iter().zip(array(&want)).enumerate() {
        let w = *w as f32;
        let ok =
            (g.is_nan() && w.is_nan()) || g == &w || (g - w).abs() <= 2.0 * f32::EPSILON * w.abs();
        assert!(ok, "element {k}: {g} against {w}");
    }
    let s = kernel32("fn s(x: [n]R) -> R = sum(i:n) exp(x[i])");
    let y = data(5000, -1.0, 18);
    let ya = v32(&y);
    let got = widen(&s.call_f32(&[Arg32::from(&ya)]).unwrap());
    let why = contract_judge_in(
        &load1("fn s(x: [n]R) -> R = sum(i:n) exp(x[i])"),
        &[vec1(&y)],
        &got,
        F32,
    )
    .unwrap();
    assert!(why.is_none(), "{}", why.unwrap());
}

// ---------------------------------------------------------------- f32x4

/// The F32 JIT's result for arrays `xs` (and scalars `cs`), and the F32
/// interpreter's, as bits.
fn both(src: &str, xs: &[ArrayD<f32>], cs: &[f32]) -> (Vec<u64>, Vec<u64>) {
    let k = kernel32(src);
    let mut args: Vec<Arg32<'_>> = xs.iter().map(|a| Arg32::Array(a.view())).collect();
    args.extend(cs.iter().map(|c| Arg32::Real(*c)));
    let got = widen(&k.call_f32(&args).unwrap());
    let mut vals: Vec<Value> = xs
        .iter()
        .map(|a| Value::Array(a.mapv(|x| x as f64)))
        .collect();
    vals.extend(cs.iter().map(|c| Value::Real(*c as f64)));
    let want = interp::run_with(&load1(src), &vals, F32).unwrap();
    (bits(&got), bits(&want))
}

/// Lengths 0..40 (every tail mod 4, before and after the unrolled
/// steps) and a few thousand.
fn lengths() -> Vec<usize> {
    (0..40).chain([1000, 1001, 1002, 1003, 4099]).collect()
}

#[test]
fn f32_maps_and_stencils_run_on_f32x4() {
    let opts = jopts();
    for src in [
        "fn m(x: [n]R, y: [n]R, c: R) -> [n]R = gen(i:n) (x[i] * c - y[i]) / (y[i] + 0.1) + sqrt(abs(x[i]))",
        "fn s(x: [n]R) -> [n]R = gen(i:n) 0.25 * x[i-1] + 0.5 * x[i] + 0.25 * x[i+1]",
        "fn s2(I: [h,w]R) -> [h,w]R = gen(y:h, x:w) I[y-1,x] + I[y+1,x] + I[y,x-1] + I[y,x+1] - 4 * I[y,x]",
        "fn d(x: [n]R, y: [n]R) -> R = sum(i:n) x[i] * y[i]",
    ] {
        let text = einsat::jit::testing::clif_text(&load1(src), &opts).unwrap();
        assert!(
            text.iter().any(|t| t.contains("f32x4")),
            "{src}: no f32x4 in\n{}",
            text.join("\n")
        );
    }
    // f64 keeps f64x2 (a map that is not one of vmath's affine maps of
    // a run, `x[i] * 2`, which calls its full-width kernel)
    let text = einsat::jit::testing::clif_text(
        &load1("fn m(x: [n]R) -> [n]R = gen(i:n) x[i] * x[i]"),
        &jit::Options::default(),
    )
    .unwrap();
    assert!(text.iter().any(|t| t.contains("f64x2")));
    assert!(!text.iter().any(|t| t.contains("f32x4")));
}

#[test]
fn f32x4_maps_are_the_interpreter_bit_for_bit_at_every_length() {
    let src = "fn m(x: [n]R, y: [n]R, c: R) -> [n]R =
        gen(i:n) (x[i] * c - y[i]) / (y[i] + 0.1) + sqrt(abs(x[i])) - exp(x[i]) * x[i]";
    for n in lengths() {
        let x = v32(&data(n, -0.5, 20 + n as u64));
        let y = v32(&data(n, 1e3, 21 + n as u64));
        let (got, want) = both(src, &[x, y], &[3.0]);
        assert_eq!(got, want, "n = {n}");
    }
}

#[test]
fn f32x4_stencils_are_the_interpreter_bit_for_bit() {
    let s1 = "fn s(x: [n]R) -> [n]R = gen(i:n) 0.25 * x[i-1] + 0.5 * x[i] + 0.25 * x[i+1]";
    for n in lengths() {
        let x = v32(&data(n, 1e4, 30 + n as u64));
        let (got, want) = both(s1, &[x], &[]);
        assert_eq!(got, want, "n = {n}");
    }
    let s2 = "fn s2(I: [h,w]R) -> [h,w]R =
        gen(y:h, x:w) 0.2 * (I[y-1,x] + I[y+1,x] + I[y,x-1] + I[y,x+1]) - 0.8 * I[y,x]";
    for (h, w) in [(0, 5), (1, 1), (3, 4), (5, 7), (9, 13), (17, 35), (40, 103)] {
        let a = Array2::from_shape_vec((h, w), data(h * w, -0.5, 40 + w as u64))
            .unwrap()
            .into_dyn();
        let (got, want) = both(s2, &[a], &[]);
        assert_eq!(got, want, "{h}x{w}");
    }
}

#[test]
fn f32x4_special_values_and_subnormals() {
    let src =
        "fn m(x: [n]R, y: [n]R) -> [n]R = gen(i:n) 0.5 * x[i-1] + x[i] * y[i] - y[i] / x[i+1]";
    let specials = [
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        0.0,
        -0.0,
        f32::from_bits(1),
        -f32::from_bits(7),
        f32::MIN_POSITIVE,
        f32::MAX,
        1e-30,
        3e38,
        1.0,
    ];
    for n in [5, 12, 31, 64, 333] {
        let x: Vec<f32> = (0..n).map(|k| specials[k % specials.len()]).collect();
        let y: Vec<f32> = (0..n)
            .map(|k| specials[(k * 7 + 3) % specials.len()])
            .collect();
        let (got, want) = both(src, &[v32(&x), v32(&y)], &[]);
        // NaN payloads may differ: compare NaN-ness, the rest bit for bit
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            let (g, w) = (f64::from_bits(*g), f64::from_bits(*w));
            assert!(
                (g.is_nan() && w.is_nan()) || g.to_bits() == w.to_bits(),
                "n = {n}, element {k}: {g} {w}"
            );
        }
    }
}

#[test]
fn f32x4_strided_and_reversed_inputs() {
    let src = "fn s(x: [n]R, y: [n]R) -> [n]R = gen(i:n) 0.25 * x[i-1] + 0.5 * x[i] * y[i] + 0.25 * x[i+1]";
    let k = kernel32(src);
    for n in [0usize, 1, 3, 4, 7, 33, 1001] {
        let xs = v32(&data(2 * n, -0.5, 50 + n as u64));
        let ys = v32(&data(n, 2.0, 51 + n as u64));
        let x_str = xs.slice(s![..;2]);
        let y_rev = ys.slice(s![..;-1]);
        let got = widen(
            &k.call_f32(&[
                Arg32::Array(x_str.into_dyn()),
                Arg32::Array(y_rev.into_dyn()),
            ])
            .unwrap(),
        );
        let (xo, yo) = (x_str.to_owned(), y_rev.to_owned());
        let want = interp::run_with(
            &load1(src),
            &[
                Value::Array(xo.mapv(|x| x as f64).into_dyn()),
                Value::Array(yo.mapv(|x| x as f64).into_dyn()),
            ],
            F32,
        )
        .unwrap();
        assert_eq!(bits(&got), bits(&want), "n = {n}");
    }
}

#[test]
fn f32x4_sums_keep_the_f32_contract() {
    for src in [
        "fn d(x: [n]R, y: [n]R) -> R = sum(i:n) x[i] * y[i]",
        "fn r(A: [m,n]R, y: [n]R) -> [m]R = gen(j:m) sum(i:n) (A[j,i] - y[i]) * (A[j,i] - y[i])",
        "fn mx(x: [n]R) -> R = max(i:n) x[i] * 2 - 1",
    ] {
        for n in lengths() {
            let f = load1(src);
            let m = 3;
            let k = kernel32(src);
            let x = data(
                if src.contains("A:") { m * n } else { n },
                1e3,
                60 + n as u64,
            );
            let y = data(n, 1.0, 61 + n as u64);
            let xa = if src.contains("A:") {
                Array2::from_shape_vec((m, n), x.clone())
                    .unwrap()
                    .into_dyn()
            } else {
                v32(&x)
            };
            let ya = v32(&y);
            let mut args = vec![Arg32::Array(xa.view())];
            let mut vals = vec![Value::Array(xa.mapv(|v| v as f64))];
            if !src.contains("mx") {
                args.push(Arg32::Array(ya.view()));
                vals.push(vec1(&y));
            }
            let got = widen(&k.call_f32(&args).unwrap());
            if src.contains("mx") {
                // max/min are exact whatever the order
                let want = interp::run_with(&f, &vals, F32).unwrap();
                assert_eq!(bits(&got), bits(&want), "{src} n = {n}");
                continue;
            }
            let why = contract_judge_in(&f, &vals, &got, F32).unwrap();
            assert!(why.is_none(), "{src} n = {n}: {}", why.unwrap());
        }
    }
    // special values propagate through the vector accumulators
    let k = kernel32("fn g(x: [n]R) -> R = sum(i:n) x[i]");
    for (n, at, v) in [
        (9, 6, f32::NAN),
        (37, 33, f32::INFINITY),
        (64, 1, f32::NEG_INFINITY),
    ] {
        let mut x = vec![1.0f32; n];
        x[at] = v;
        let Value32::Real(r) = k.call_f32(&[Arg32::from(&v32(&x))]).unwrap() else {
            panic!()
        };
        assert!(
            r.is_nan() == v.is_nan() && (v.is_nan() || r == v),
            "{n}: {r}"
        );
    }
}
