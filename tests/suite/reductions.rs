//! The max/min reductions `max(i:n) e` and `min(i:n) e` through every
//! stage: syntax (parse/print round trip, errors), the interpreter's
//! semantics (IEEE 754-2019 `maximum`/`minimum`: NaN propagates, -0 < +0,
//! the empty reduction is -inf/+inf, a reduction is never a strong zero),
//! the builder, the optimiser and the JIT against the interpreter (bit for
//! bit where only max/min reduce; with a relative tolerance where sums are
//! involved), and the numerically stable softmax of `examples/softmax.tl`.
#![cfg(feature = "testing")] // uses the testing support

use crate::common;

use common::load1;

use einsat::frontend::builder::{func, max_over, min_over, reduce_auto};
use einsat::interp::{self, Value};
use einsat::jit;
use einsat::opt::{optimize, Options};
use einsat::syntax::{print_function, RedOp};
use einsat::testing::{gen_function, random_inputs, relayout_value, GenConfig, Layout};
use einsat::{Expr, Function};
use ndarray::{arr1, arr2, ArrayD};
use rand::SeedableRng;
use std::collections::BTreeMap;

fn vec1(x: &[f64]) -> Value {
    Value::Array(arr1(x).into_dyn())
}

fn real(v: &Value) -> f64 {
    match v {
        Value::Real(x) => *x,
        _ => panic!("not a number: {v}"),
    }
}

/// Bits of every number, every NaN as one canonical NaN (engines may
/// differ in a NaN's payload and sign, nothing else).
fn canon(v: &Value) -> Vec<u64> {
    let c = |x: f64| {
        if x.is_nan() {
            f64::NAN.to_bits()
        } else {
            x.to_bits()
        }
    };
    match v {
        Value::Real(x) => vec![c(*x)],
        Value::Array(a) => a.iter().map(|x| c(*x)).collect(),
        Value::Pair(a, b) => [canon(a), canon(b)].concat(),
    }
}

fn normal(f: &Function) -> Function {
    optimize(f, &Options::default()).unwrap().program
}

/// The interpreter, the optimised program in the interpreter and the
/// optimised program in the JIT (every layout) on `args`.
fn three_ways(f: &Function, args: &[Value]) -> (Value, Value, Vec<Value>) {
    let want = interp::run(f, args).unwrap();
    let g = normal(f);
    assert!(einsat::extract::is_normal(&g), "{}", print_function(&g));
    let opt = interp::run(&g, args).unwrap();
    let k = jit::compile(&g).unwrap_or_else(|e| panic!("{e}\n{}", print_function(&g)));
    let jits = Layout::ALL
        .iter()
        .map(|l| {
            let a: Vec<Value> = args.iter().map(|v| relayout_value(v, *l)).collect();
            k.call(&a).unwrap()
        })
        .collect();
    (want, opt, jits)
}

/// All three engines give `want`'s bits (NaN canonical).
fn bit_identical(f: &Function, args: &[Value]) -> Value {
    let (want, opt, jits) = three_ways(f, args);
    assert_eq!(
        canon(&want),
        canon(&opt),
        "optimised\n{}",
        print_function(f)
    );
    for j in &jits {
        assert_eq!(
            canon(&want),
            canon(j),
            "jit {j} vs {want}\n{}",
            print_function(f)
        );
    }
    want
}

// ------------------------------------------------------------------ syntax

#[test]
fn parse_print_round_trip() {
    let src = "\
fn a(x: [n]R) -> R = max(i:n) x[i]
fn b(A: [n,m]R) -> [n]R = gen(i:n) min(j:m) A[i,j]
fn c(A: [n,m]R) -> R = max(i:n, j:m) A[i,j] * 2 + 1
fn d(x: [n]R) -> R = (max(i:n) x[i]) * 2 - min(i:n) x[i]
fn e(x: [n]R, y: [n]R) -> R = max(x[0], y[0]) + max(i:n) max(x[i], y[i])
fn f(A: [n,m]R) -> R = min(i:n) max(j:m) sum(k:m) A[i,k] * A[i,j]
fn g(x: [n]R) -> R = let m = max(i:n) x[i] in sum(i:n) exp(x[i] - m)
fn h(x: [n]R) -> R = max(i:n) [i > 0] * x[i-1]
";
    let p = einsat::load(src).unwrap();
    // multi-binder heads nest like sum's
    let Expr::Reduce(RedOp::Max, i, _, body) = &p.functions[2].body else {
        panic!("{:?}", p.functions[2].body)
    };
    assert_eq!(i, "i");
    assert!(matches!(**body, Expr::Reduce(RedOp::Max, ..)));
    // the body reaches as far right as it can, like sum's
    assert!(matches!(p.functions[0].body, Expr::Reduce(RedOp::Max, ..)));
    // binary max stays a call
    assert!(matches!(&p.functions[4].body, Expr::Bin(_, a, _) if matches!(**a, Expr::Call(..))));
    for f in &p.functions {
        let text = print_function(f);
        let back = einsat::load(&text).unwrap();
        assert_eq!(&back.functions[0], f, "{text}");
    }
    // parentheses only where needed
    let text = print_function(&p.functions[3]);
    assert!(
        text.contains("(max(i:n) x[i]) * 2 - min(i:n) x[i]"),
        "{text}"
    );
    let text = print_function(&p.functions[2]);
    assert!(text.contains("max(i:n, j:m) A[i, j] * 2 + 1"), "{text}");
}

#[test]
fn errors_are_reported_not_panics() {
    let cases = [
        // the body must be a number
        (
            "fn f(A: [3,3]R) -> R = max(i:3) A[i]",
            "`max` reduces numbers",
        ),
        (
            "fn f(A: [3,3]R) -> R = min(i:3) (A[i,0], 1)",
            "`min` reduces numbers",
        ),
        // the index is bound only in the body
        ("fn f(x: [3]R) -> R = (max(i:3) x[i]) + x[i]", "i"),
        // a plain index ranges over its axis
        ("fn f(x: [3]R) -> R = max(i:4) x[i]", "axis"),
        // a missing body
        ("fn f(x: [3]R) -> R = max(i:3)", "no body"),
        // a size name not bound by a parameter
        ("fn f(x: [3]R) -> R = max(i:k) 1", "k"),
    ];
    for (src, want) in cases {
        let e = einsat::load(src)
            .err()
            .unwrap_or_else(|| panic!("{src} loaded"));
        assert!(e.to_string().contains(want), "{src}: {e}");
    }
    // binary max keeps its arity check
    let e = einsat::load("fn f(x: [3]R) -> R = max(x[0])").unwrap_err();
    assert!(e.to_string().contains("2 arguments"), "{e}");
}

// --------------------------------------------------------------- semantics

#[test]
fn nan_propagates_unlike_binary_max() {
    let f = load1("fn f(x: [n]R) -> R = max(i:n) x[i]");
    let g = load1("fn g(x: [n]R) -> R = min(i:n) x[i]");
    let b = load1("fn b(x: [2]R) -> R = max(x[0], x[1])");
    for pos in 0..3 {
        let mut x = vec![1.0, 5.0, -2.0];
        x[pos] = f64::NAN;
        assert!(real(&bit_identical(&f, &[vec1(&x)])).is_nan(), "{x:?}");
        assert!(real(&bit_identical(&g, &[vec1(&x)])).is_nan(), "{x:?}");
    }
    // in the JIT's vector lanes, its unrolled steps and its scalar tail
    let k = jit::compile(&normal(&f)).unwrap();
    let kg = jit::compile(&normal(&g)).unwrap();
    for n in [1usize, 2, 7, 8, 9, 19] {
        for pos in 0..n {
            let mut x: Vec<f64> = (0..n).map(|t| (t as f64 * 1.7).sin()).collect();
            x[pos] = f64::NAN;
            assert!(real(&k.call(&[vec1(&x)]).unwrap()).is_nan(), "{x:?}");
            assert!(real(&kg.call(&[vec1(&x)]).unwrap()).is_nan(), "{x:?}");
            // the zeros' order in every position
            let mut z = vec![-0.0; n];
            z[pos] = 0.0;
            let m = real(&k.call(&[vec1(&z)]).unwrap());
            assert!(m == 0.0 && m.is_sign_positive(), "{z:?}");
            let mut z = vec![0.0; n];
            z[pos] = -0.0;
            let m = real(&kg.call(&[vec1(&z)]).unwrap());
            assert!(m == 0.0 && m.is_sign_negative(), "{z:?}");
            // the largest and smallest in every position
            let mut y: Vec<f64> = (0..n).map(|t| t as f64 * 0.5 - 3.0).collect();
            y[pos] = 1e300;
            assert_eq!(real(&k.call(&[vec1(&y)]).unwrap()), 1e300);
            y[pos] = -1e300;
            assert_eq!(real(&kg.call(&[vec1(&y)]).unwrap()), -1e300);
        }
    }
    // the binary function ignores a NaN (f64::max), in every engine
    assert_eq!(real(&bit_identical(&b, &[vec1(&[f64::NAN, 3.0])])), 3.0);
    assert_eq!(real(&bit_identical(&b, &[vec1(&[3.0, f64::NAN])])), 3.0);
}

#[test]
fn signed_zeros_are_ordered() {
    let f = load1("fn f(x: [n]R) -> R = max(i:n) x[i]");
    let g = load1("fn g(x: [n]R) -> R = min(i:n) x[i]");
    for x in [[-0.0, 0.0], [0.0, -0.0]] {
        let m = real(&bit_identical(&f, &[vec1(&x)]));
        assert!(m == 0.0 && m.is_sign_positive(), "max {x:?} = {m}");
        let m = real(&bit_identical(&g, &[vec1(&x)]));
        assert!(m == 0.0 && m.is_sign_negative(), "min {x:?} = {m}");
    }
    let m = real(&bit_identical(&f, &[vec1(&[-0.0, -0.0])]));
    assert!(m == 0.0 && m.is_sign_negative());
}

#[test]
fn empty_range_is_the_identity_and_infinities_are_ordinary() {
    let f = load1("fn f(x: [n]R) -> R = max(i:n) x[i]");
    let g = load1("fn g(x: [n]R) -> R = min(i:n) x[i]");
    assert_eq!(real(&bit_identical(&f, &[vec1(&[])])), f64::NEG_INFINITY);
    assert_eq!(real(&bit_identical(&g, &[vec1(&[])])), f64::INFINITY);
    let lit = load1("fn h() -> R = (max(i:0) 1) + min(j:0) 1");
    assert!(real(&bit_identical(&lit, &[])).is_nan()); // -inf + inf
    let x = [f64::NEG_INFINITY, -1e308, f64::INFINITY, 3.0];
    assert_eq!(real(&bit_identical(&f, &[vec1(&x)])), f64::INFINITY);
    assert_eq!(real(&bit_identical(&g, &[vec1(&x)])), f64::NEG_INFINITY);
    let x = [f64::NEG_INFINITY, f64::NEG_INFINITY];
    assert_eq!(real(&bit_identical(&f, &[vec1(&x)])), f64::NEG_INFINITY);
}

#[test]
fn offset_data_keeps_every_digit() {
    // max/min are exact: 1e8 + small values come back unrounded
    let f = load1(
        "fn f(x: [n]R) -> [2]R = gen(k:2) [k = 0] * (max(i:n) x[i]) + [k = 1] * min(i:n) x[i]",
    );
    let x: Vec<f64> = (0..37)
        .map(|k| 1e8 + (k as f64 * 0.37).sin() * 1e-6)
        .collect();
    let hi = x.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let lo = x.iter().copied().fold(f64::INFINITY, f64::min);
    let r = bit_identical(&f, &[vec1(&x)]);
    assert_eq!(canon(&r), canon(&vec1(&[hi, lo])));
}

#[test]
fn a_reduction_is_never_a_strong_zero() {
    // every term is a failed bracket: the sum is a strong zero (it wipes
    // out the infinity), the max is the ordinary number 0 (0 * inf is NaN)
    let s = load1("fn s(x: [3]R) -> R = (sum(i:3) [i = 5]) * (1 / (x[0] - x[0]))");
    let m = load1("fn m(x: [3]R) -> R = (max(i:3) [i = 5]) * (1 / (x[0] - x[0]))");
    let x = vec1(&[4.0, 7.0, 1.0]);
    assert_eq!(
        real(&interp::run(&s, std::slice::from_ref(&x)).unwrap()),
        0.0
    );
    assert!(real(&bit_identical(&m, std::slice::from_ref(&x))).is_nan());
    // a strong-zero term counts as 0
    let z = load1("fn z(x: [3]R) -> R = max(i:3) [i = 1] * x[i]");
    assert_eq!(real(&bit_identical(&z, &[vec1(&[-4.0, -7.0, -1.0])])), 0.0);
    assert_eq!(real(&bit_identical(&z, &[vec1(&[-4.0, 7.0, -1.0])])), 7.0);
}

#[test]
fn builder_makes_the_same_program() {
    let f = func("rowmax", |b| {
        let a = b.param("A", "[n,m]R");
        einsat::frontend::builder::gen("n", |i| max_over("m", |j| a.at2(i, j)))
    })
    .unwrap();
    assert_eq!(
        f.body,
        load1("fn f(A: [n,m]R) -> [n]R = gen(i:n) max(j:m) A[i,j]").body
    );
    let g = func("g", |b| {
        let x = b.param("x", "[n]R");
        min_over("n", |i| x.at(i)) - reduce_auto(RedOp::Max, |i| x.at(i))
    })
    .unwrap();
    assert_eq!(
        g.body,
        load1("fn g(x: [n]R) -> R = (min(i:n) x[i]) - max(i:n) x[i]").body
    );
}

// ------------------------------------------------- optimiser and JIT

const PROGRAMS: &str = "\
fn rowmax(A: [n,m]R) -> [n]R = gen(i:n) max(j:m) A[i,j]
fn colmin(A: [n,m]R) -> [m]R = gen(j:m) min(i:n) A[i,j]
fn minmax(A: [n,m]R) -> R = min(i:n) max(j:m) A[i,j]
fn all2(A: [n,m]R) -> R = max(i:n, j:m) A[i,j]
fn shifted(x: [n]R) -> [n]R = gen(i:n) max(j:n) [j <= i] * x[j] + x[i]
fn border(x: [n]R) -> [n]R = gen(i:n) max(k:3) x[i+k-1]
fn invariant(x: [n]R, A: [n,m]R) -> [n,m]R = gen(i:n, j:m) A[i,j] - max(k:n) x[k]
fn binmix(x: [n]R, y: [n]R) -> R = max(i:n) max(x[i], y[i]) - min(i:n) min(x[i], y[i])
";

#[test]
fn optimised_and_jit_are_bit_identical_to_the_interpreter() {
    let p = einsat::load(PROGRAMS).unwrap();
    for f in &p.functions {
        for (t, n) in [0usize, 1, 2, 5, 17].into_iter().enumerate() {
            let sizes: BTreeMap<String, usize> =
                f.size_names().into_iter().map(|x| (x, n)).collect();
            let mut rng = rand::rngs::StdRng::seed_from_u64(t as u64);
            let mut args = random_inputs(f, &sizes, &mut rng).unwrap();
            bit_identical(f, &args);
            // specials mixed in: NaN, infinities, signed zeros
            for (k, a) in args.iter_mut().enumerate() {
                if let Value::Array(a) = a {
                    let specials = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.0, 0.0];
                    for (m, x) in a.iter_mut().enumerate() {
                        if (m * 7 + k + t) % 5 == 0 {
                            *x = specials[(m + k) % specials.len()];
                        }
                    }
                }
            }
            bit_identical(f, &args);
        }
    }
}

#[test]
fn sums_inside_and_around_reductions_agree_within_rounding() {
    let src = "\
fn lse(x: [n]R) -> R = let m = max(i:n) x[i] in m + log(sum(i:n) exp(x[i] - m))
fn rowlse(A: [n,m]R) -> [n]R = gen(i:n) let c = max(j:m) A[i,j] in c + log(sum(j:m) exp(A[i,j] - c))
fn maxdot(A: [n,m]R, x: [m]R) -> R = max(i:n) sum(j:m) A[i,j] * x[j]
fn summax(A: [n,m]R) -> R = sum(i:n) max(j:m) A[i,j] * 2
";
    let p = einsat::load(src).unwrap();
    for f in &p.functions {
        let g = normal(f);
        common::agree::agree_in_every_layout(f, &g, 7, &[1, 3, 8, 33], 1e-12, 1e-12);
    }
}

#[test]
fn generated_programs_hold_reductions() {
    let cfg = GenConfig::default();
    let has = |e: &Expr| -> bool {
        fn go(e: &Expr) -> bool {
            matches!(e, Expr::Reduce(..)) || e.children().into_iter().any(go)
        }
        go(e)
    };
    let n = (0..300u64)
        .filter(|&s| has(&gen_function(s, &cfg).body))
        .count();
    assert!(n >= 20, "only {n} of 300 programs hold a reduction");
    let off = GenConfig {
        reductions: false,
        ..GenConfig::default()
    };
    assert!((0..300u64).all(|s| !has(&gen_function(s, &off).body)));
}

// ------------------------------------------------------------------ softmax

fn softmax_file() -> einsat::Program {
    let src = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/softmax.tl"))
        .unwrap();
    einsat::load(&src).unwrap()
}

#[test]
fn stable_softmax_is_finite_at_large_logits() {
    let p = softmax_file();
    let get = |name: &str| p.get(name).unwrap_or_else(|| panic!("no {name}")).clone();
    let logits = [1000.0, 1001.0, 999.5, 1000.25];
    // exact answer from shifted logits (the shift cancels)
    let e: Vec<f64> = logits.iter().map(|x| (x - 1001.0_f64).exp()).collect();
    let total: f64 = e.iter().sum();
    let want: Vec<f64> = e.iter().map(|v| v / total).collect();
    let want_lse = 1001.0 + total.ln();
    let x = vec1(&logits);
    for engine in ["interp", "opt", "jit"] {
        let run = |f: &Function| -> Value {
            match engine {
                "interp" => interp::run(f, std::slice::from_ref(&x)).unwrap(),
                "opt" => interp::run(&normal(f), std::slice::from_ref(&x)).unwrap(),
                _ => jit::run(&normal(f), std::slice::from_ref(&x)).unwrap(),
            }
        };
        let naive = run(&get("softmax_naive"));
        assert!(
            canon(&naive).iter().all(|b| f64::from_bits(*b).is_nan()),
            "{naive}"
        );
        let s = run(&get("softmax"));
        assert!(s.approx_eq(&vec1(&want), 1e-14, 1e-300), "{engine}: {s}");
        let l = real(&run(&get("logsumexp")));
        assert!(
            (l - want_lse).abs() <= 1e-13 * want_lse,
            "{engine}: {l} vs {want_lse}"
        );
        let nl = real(&run(&get("logsumexp_naive")));
        assert!(nl.is_infinite(), "{engine}: {nl}");
    }
    // row-wise, on a matrix of large logits
    let rows = get("softmax_rows");
    let a = Value::Array(
        arr2(&[[1000.0, 1000.0], [-1000.0, -999.0]])
            .into_dyn()
            .into_shape_with_order(ndarray::IxDyn(&[2, 2]))
            .map(|a: ArrayD<f64>| a)
            .unwrap(),
    );
    let r = jit::run(&normal(&rows), std::slice::from_ref(&a)).unwrap();
    let e1 = 1.0 / (1.0 + 1f64.exp());
    let want = Value::Array(arr2(&[[0.5, 0.5], [e1, 1.0 - e1]]).into_dyn());
    assert!(r.approx_eq(&want, 1e-14, 1e-300), "{r}");
}

#[test]
fn the_jit_reduces_in_vector_lanes_with_ieee_max_and_min() {
    // a unit-stride reduction runs on f64x2 fmax/fmin (exact in any order);
    // the reduction of a plain run is a call of the vector kernel
    // (`vmath::reduce_of`; tests/suite/fused_reductions.rs)
    for (src, op) in [
        (
            "fn f(A: [n,m]R) -> [n]R = gen(i:n) max(j:m) A[i,j] * 3",
            "fmax",
        ),
        ("fn f(x: [n]R) -> R = min(i:n) x[i] * 2", "fmin"),
    ] {
        let f = normal(&load1(src));
        let text = jit::testing::clif_text(&f, &jit::Options::default())
            .unwrap()
            .join("\n");
        // a vector accumulator (a block parameter of type f64x2) folded
        // with the IEEE instruction
        assert!(text.contains("load.f64x2"), "{src}\n{text}");
        assert!(
            text.lines().any(|l| l.contains(&format!("= {op} v"))),
            "{src}\n{text}"
        );
    }
}
