//! Column sums computed ahead (`jit::schedule::columns`): a sum under an
//! outer loop that depends on that loop's index only and walks a column
//! (`sum(j) x[j] * A[j,i]` under `sum(i)` or `gen(i)`) runs as its own
//! nest into a scratch vector, per layout. Checked against the
//! interpreter in every layout, with and without GEMM stages, on one and
//! two threads, at sizes 0, 1 and up; with zero padding inside the column
//! sum (computed ahead on the generated path) and brackets (the fallback:
//! left in place), including strong zeros over infinities. And the reuse
//! of `let` temporaries (`jit::schedule::reuse_temps`): the optimised row
//! softmax computes each `exp` once.
#![cfg(feature = "testing")] // uses the testing support

use crate::common;

use common::agree::{agree_with, bits};
use einsat::interp::{self, Value};
use einsat::jit;
use einsat::jit::testing::{ir, schedule};
use einsat::opt::{optimize, Options};
use einsat::syntax::print_function;
use einsat::testing::{random_inputs, relayout_value, Layout};
use einsat::Function;
use ndarray::{ArrayD, IxDyn};
use rand::SeedableRng;
use std::collections::BTreeMap;

const PROGRAMS: &str = "
fn chain(x: [n]R, A: [n,m]R, B: [m,k]R, y: [k]R) -> R =
  sum(i:m) (sum(j:k) B[i,j] * y[j]) * sum(j:n) x[j] * A[j,i]
fn plus(x: [n]R, A: [n,m]R, c: [m]R) -> [m]R =
  gen(i:m) c[i] + sum(j:n) x[j] * A[j,i]
fn padded(x: [n]R, A: [n,m]R, c: [m]R) -> [m]R =
  gen(i:m) c[i] * sum(j:n) x[j] * A[j+1,i] * A[j,i-1]
fn called(A: [n,m]R, x: [n]R) -> R = sum(i:m) tanh(sum(j:n) x[j] * A[j,i])
fn under(A: [n,m]R, x: [n]R, B: [m,m]R) -> [m]R =
  gen(k:m) sum(i:m) B[k,i] * sum(j:n) x[j] * A[j,i]
fn bracket(x: [n]R, A: [n,m]R, c: [m]R) -> [m]R =
  gen(i:m) c[i] + sum(j:n) [j <= i] * x[j] * A[j,i]
fn trace(A: [n,n]R, B: [n,n]R) -> R = sum(i:n, j:n) A[i,j] * B[j,i]
fn norm(A: [n,m]R) -> R = sqrt(sum(i:m, j:n) A[j,i] * A[j,i])
";

const SIZES: &[usize] = &[0, 1, 2, 3, 5, 17, 40];

fn programs() -> Vec<Function> {
    einsat::load(PROGRAMS).unwrap().functions
}

fn options(gemm: bool, threads: usize) -> jit::Options {
    jit::Options {
        gemm,
        threads,
        // split every nest, however small, so the threaded path runs
        parallel_threshold: if threads > 1 { 0 } else { u64::MAX },
        // GEMM stages at every size, so the library computes column sums
        gemm_min_work: 0,
        ..jit::Options::default()
    }
}

/// The JIT on `g` (with `opts`) against the interpreter on `f`, every
/// size name set to each of `SIZES`, random inputs in every layout.
fn agree(f: &Function, g: &Function, opts: &jit::Options, seed: u64) {
    // twice per layout: the second call takes the remembered-call path
    agree_with(f, g, opts, seed, SIZES, 1e-9, 1e-9, 2);
}

#[test]
fn column_sums_agree_with_the_interpreter_in_every_layout() {
    for (s, f) in programs().iter().enumerate() {
        let o = optimize(f, &Options::default()).unwrap().program;
        for g in [f, &o] {
            for gemm in [false, true] {
                for threads in [1, 2] {
                    agree(f, g, &options(gemm, threads), 100 * s as u64);
                }
            }
        }
    }
}

#[test]
fn the_einsum_chains_agree_with_the_interpreter() {
    for spec in [
        "i,ij,jk,k->",
        "i,ij,j->",
        "ij,ji->",
        "i,j,ij->i",
        "ij,j,jk->ik",
    ] {
        let f = einsat::frontend::einsum::einsum(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
        let o = optimize(&f, &Options::default()).unwrap().program;
        for gemm in [false, true] {
            agree(&f, &o, &options(gemm, 1), 7);
        }
    }
}

fn lowered(f: &Function, gemm: bool) -> ir::LoopProgram {
    let k = jit::compile_with(f, &options(gemm, 1)).unwrap();
    k.loop_program().clone()
}

/// How many of `p`'s column sums run ahead in C order and with every
/// parameter transposed (Fortran order).
fn ahead(p: &ir::LoopProgram) -> (usize, usize) {
    let c = ir::Layout::c_order(p);
    let fortran = ir::Layout::from_fn(p, |_, a| a == 0);
    let count = |l: &ir::Layout| {
        p.cols
            .iter()
            .filter(|c| schedule::materialise(p, c, l))
            .count()
    };
    (count(&c), count(&fortran))
}

#[test]
fn a_column_walk_is_computed_ahead_and_a_row_walk_is_not() {
    let fs = programs();
    let by = |name: &str| fs.iter().find(|f| f.name == name).unwrap();
    // generated code only: the decision follows the layout
    let p = lowered(by("chain"), false);
    // the column sum and the row sum both get a scratch vector; in C order
    // only the column one (`A[j,i]`) runs ahead, transposed only the row
    // one (`B[i,j]`, now walking a column)
    assert_eq!(p.cols.len(), 2);
    assert_eq!(ahead(&p), (1, 1));
    for name in ["plus", "padded", "called"] {
        let p = lowered(by(name), false);
        assert_eq!(p.cols.len(), 1, "{name}");
        assert_eq!(ahead(&p), (1, 0), "{name}");
    }
    // a dense contraction (`under`, two levels under a gen): the dense
    // planner interchanges it per layout itself
    assert!(lowered(by("under"), false).cols.is_empty());
    // brackets: left in place (a guard may skip most of the sum)
    assert!(lowered(by("bracket"), false).cols.is_empty());
    // a transposed pair walks a column whichever loop is inside
    let p = lowered(by("trace"), false);
    assert_eq!(ahead(&p), (0, 0));
    // a perfect nest of sums (`sum(i) sum(j) A[j,i]`, the optimised
    // `norm_trace` of examples/kernels.tl): the scheduler's loop order runs
    // the unit-stride loop inside, so no scratch vector and no second pass
    assert!(lowered(by("norm"), false).cols.is_empty());
    // with GEMM stages, a matrix-vector column sum runs ahead in any layout
    let p = lowered(by("chain"), true);
    assert_eq!(ahead(&p), (2, 2));
}

#[test]
fn a_guarded_column_sum_keeps_its_strong_zeros() {
    // A[j,i] is infinite wherever the bracket fails (j > i): the guard
    // makes those terms 0, in the interpreter and in native code
    let f = programs()
        .into_iter()
        .find(|f| f.name == "bracket")
        .unwrap();
    for n in [1usize, 2, 7, 33] {
        let a = ArrayD::from_shape_fn(IxDyn(&[n, n]), |ix| {
            if ix[0] > ix[1] {
                f64::INFINITY
            } else {
                (ix[0] + 2 * ix[1]) as f64 * 0.25
            }
        });
        let x = ArrayD::from_shape_fn(IxDyn(&[n]), |ix| 1.0 + ix[0] as f64);
        let c = ArrayD::from_shape_fn(IxDyn(&[n]), |ix| -(ix[0] as f64));
        let args = [Value::Array(x), Value::Array(a), Value::Array(c)];
        let want = interp::run(&f, &args).unwrap();
        for gemm in [false, true] {
            let k = jit::compile_with(&f, &options(gemm, 1)).unwrap();
            for layout in Layout::ALL {
                let a: Vec<Value> = args.iter().map(|v| relayout_value(v, layout)).collect();
                let got = k.call(&a).unwrap();
                assert!(
                    want.approx_eq(&got, 1e-12, 0.0),
                    "{layout:?} n={n}: {want} vs {got}"
                );
            }
        }
    }
}

const LETS: &str = "
fn softmax(X: [n,m]R) -> [n,m]R =
  gen(i:n, j:m) exp(X[i,j]) / sum(k:m) exp(X[i,k])
fn shared(X: [n,m]R) -> [n,m]R =
  let t = gen(i:n, j:m) exp(X[i,j]) in
  let s = gen(i:n) sum(j:m) exp(X[i,j]) + sin(X[i,j]) in
  gen(i:n, j:m) t[i,j] / s[i]
fn ranges(x: [n]R, y: [m]R) -> [m]R =
  let t = gen(i:m) exp(x[i+1]) in
  gen(j:m) y[j] * t[j] * (sum(k:n) exp(x[k+1])) + sum(k:m) exp(x[k+1])
fn shifted(x: [n]R) -> [n]R =
  let t = gen(i:n) exp(x[i]) in
  gen(i:n) t[i] + exp(x[i+1]) + sum(k:n) [k <= i] * exp(x[k])
";

/// How many calls the nests of `f`'s kernel make per element, summed.
fn calls(f: &Function) -> usize {
    fn count(s: &ir::Scalar) -> usize {
        use ir::Scalar;
        match s {
            Scalar::Call(_, args) => 1 + args.iter().map(count).sum::<usize>(),
            Scalar::Bin(_, a, b) => count(a) + count(b),
            Scalar::Neg(a) | Scalar::Sum(_, _, a) => count(a),
            _ => 0,
        }
    }
    let k = jit::compile_with(f, &options(true, 1)).unwrap();
    k.loop_program().nests.iter().map(|n| count(&n.body)).sum()
}

#[test]
fn temporaries_are_reused_and_agree_with_the_interpreter() {
    let fs = einsat::load(LETS).unwrap().functions;
    for (s, f) in fs.iter().enumerate() {
        let o = optimize(f, &Options::default()).unwrap().program;
        for g in [f, &o] {
            for threads in [1, 2] {
                agree(f, g, &options(true, threads), 1000 + 10 * s as u64);
            }
        }
    }
    let by = |name: &str| fs.iter().find(|f| f.name == name).unwrap();
    // the optimised softmax: `exp` once per element (the row sums read
    // the temporary of exponentials)
    let o = optimize(by("softmax"), &Options::default())
        .unwrap()
        .program;
    assert_eq!(calls(&o), 1, "{}", print_function(&o));
    // `exp` reused in a sum beside another call
    assert_eq!(calls(by("shared")), 2);
    // `exp(x[k+1])` under `sum(k:m)` reuses `t` (`i:m`), under `sum(k:n)`
    // it does not
    assert_eq!(calls(by("ranges")), 2);
    // a shifted index (padding) is another value; the bracketed sum reuses
    assert_eq!(calls(by("shifted")), 2);
}

#[test]
fn column_sums_are_bit_identical_for_every_thread_count() {
    // the scratch nest is split across threads like any gen nest: each
    // element is still summed by one thread in one order
    for f in programs() {
        let one = jit::compile_with(&f, &options(false, 1)).unwrap();
        let two = jit::compile_with(&f, &options(false, 2)).unwrap();
        for (t, n) in [37usize, 53].into_iter().enumerate() {
            let named: BTreeMap<String, usize> =
                f.size_names().into_iter().map(|x| (x, n)).collect();
            let mut rng = rand::rngs::StdRng::seed_from_u64(t as u64);
            let args = random_inputs(&f, &named, &mut rng).unwrap();
            for layout in Layout::ALL {
                let a: Vec<Value> = args.iter().map(|v| relayout_value(v, layout)).collect();
                let (x, y) = (one.call(&a).unwrap(), two.call(&a).unwrap());
                assert_eq!(bits(&x), bits(&y), "{} n={n} {layout:?}", f.name);
            }
        }
    }
}
