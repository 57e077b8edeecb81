//! Long sums in blocks (`jit::emit::common::Levels`): a sum whose length
//! is not known to be small runs in blocks of `SUM_BLOCK` (4096) terms on
//! fresh accumulators, the block sums in two levels above them, in the
//! general loops and in the register-tiled dense ones. Checked against the
//! interpreter around every block boundary (one block, one more term, the
//! middle level's flush after 64 blocks), in every layout, on one and two
//! threads; and for accuracy: a million equal terms keep 15 digits, as
//! numpy's pairwise summation does (numpy's `test_einsum_chunking_precision`),
//! and offset data (1e8 + small values) stays within a few units of
//! rounding of the exact sum.
#![cfg(feature = "testing")] // uses the testing support

use crate::common;

use common::agree::agree_with;
use einsat::interp::Value;
use einsat::jit;
use einsat::opt::{optimize, Options};
use einsat::Function;
use ndarray::{Array1, ArrayD, IxDyn};
use rand::{Rng, SeedableRng};

const PROGRAMS: &str = "
fn total(x: [n]R) -> R = sum(i:n) x[i]
fn dot(x: [n]R, y: [n]R) -> R = sum(i:n) x[i] * y[i]
fn rows(A: [3,n]R, x: [n]R) -> [3]R = gen(r:3) sum(j:n) A[r,j] * x[j]
fn called(x: [n]R) -> R = sum(i:n) exp(x[i] / 4)
fn bracket(x: [n]R) -> R = sum(i:n) [i != 2] * x[i] * x[i]
fn padded(x: [n]R) -> R = sum(i:n) x[i] * x[i+1]
fn nested(x: [n]R, c: [2]R) -> R = sum(i:n) x[i] * sum(k:2) c[k] * x[i]
";

fn programs() -> Vec<Function> {
    einsat::load(PROGRAMS).unwrap().functions
}

fn options(threads: usize) -> jit::Options {
    jit::Options {
        threads,
        parallel_threshold: if threads > 1 { 0 } else { u64::MAX },
        ..jit::Options::default()
    }
}

#[test]
fn blocked_sums_agree_with_the_interpreter_at_every_block_boundary() {
    let sizes = [0, 1, 4095, 4096, 4097, 8193, 64 * 4096, 64 * 4096 + 5];
    for f in programs() {
        let g = optimize(&f, &Options::default()).unwrap().program;
        for threads in [1, 2] {
            let runs = agree_with(&f, &g, &options(threads), 7, &sizes, 1e-12, 1e-12, 1);
            assert_eq!(runs, sizes.len() * 4, "{}", f.name);
        }
    }
}

fn vector(xs: Vec<f64>) -> Value {
    Value::Array(Array1::from(xs).into_dyn())
}

fn real(v: &Value) -> f64 {
    match v {
        Value::Real(x) => *x,
        v => panic!("expected a number, got {v}"),
    }
}

/// The exact sum of `xs`, to within one rounding (Neumaier's compensated
/// summation).
fn compensated(xs: &[f64]) -> f64 {
    let (mut s, mut c) = (0.0f64, 0.0f64);
    for &x in xs {
        let t = s + x;
        c += if s.abs() >= x.abs() {
            (s - t) + x
        } else {
            (x - t) + s
        };
        s = t;
    }
    s + c
}

/// `total` (the dense tiles) and `sum(i:n) abs(x[i])` (the general loops).
fn both_paths() -> Vec<jit::Kernel> {
    let p = einsat::load(
        "fn total(x: [n]R) -> R = sum(i:n) x[i]
         fn absum(x: [n]R) -> R = sum(i:n) abs(x[i])",
    )
    .unwrap();
    p.functions
        .iter()
        .map(|f| {
            let g = optimize(f, &Options::default()).unwrap().program;
            jit::compile_uncached_with(&g, &jit::Options::default()).unwrap()
        })
        .collect()
}

#[test]
fn a_million_equal_terms_keep_fifteen_digits() {
    // numpy's test_einsum_chunking_precision: sum(value) / n == value to
    // 15 decimals, where one running sum per lane keeps 11
    let value = 1.0 + f64::EPSILON * 8196.0;
    for n in [1_000_000usize, 3_000_001] {
        let x = vector(vec![value; n]);
        for k in both_paths() {
            let got = real(&k.call(std::slice::from_ref(&x)).unwrap());
            let err = (got / n as f64 - value).abs();
            assert!(err < 1.5e-15, "n={n}: {got} / n is {err:e} from {value}");
        }
    }
}

#[test]
fn offset_data_stays_within_a_few_roundings_of_the_exact_sum() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let n = 1_000_000;
    let xs: Vec<f64> = (0..n).map(|_| 1e8 + rng.gen::<f64>()).collect();
    let exact = compensated(&xs);
    let x = vector(xs);
    for k in both_paths() {
        let got = real(&k.call(std::slice::from_ref(&x)).unwrap());
        let rel = ((got - exact) / exact).abs();
        assert!(rel < 1e-14, "{got} vs {exact}: relative error {rel:e}");
    }
    // strided: every other element of a longer array
    let mut rng = rand::rngs::StdRng::seed_from_u64(4);
    let long: Vec<f64> = (0..2 * n).map(|_| 1e8 + rng.gen::<f64>()).collect();
    let every_other: Vec<f64> = long.iter().step_by(2).copied().collect();
    let exact = compensated(&every_other);
    let a = ArrayD::from_shape_vec(IxDyn(&[2 * n]), long).unwrap();
    let x = Value::Array(a.slice_move(ndarray::s![..;2]).into_dyn());
    for k in both_paths() {
        let got = real(&k.call(std::slice::from_ref(&x)).unwrap());
        let rel = ((got - exact) / exact).abs();
        assert!(
            rel < 1e-14,
            "strided: {got} vs {exact}: relative error {rel:e}"
        );
    }
}
