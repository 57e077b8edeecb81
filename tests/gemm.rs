//! GEMM stages (`jit::gemm`): which nests are taken, and every recognised
//! shape (matmul in all eight transpositions, matvec both ways, batched
//! products with the batch axis anywhere, scalar factors, fused axes,
//! sizes 0, 1, 2, 3, 17, 64, non-square) in every memory layout of the
//! arguments and of the output, against the interpreter, with the GEMM
//! library on and off and with one and two threads.
#![cfg(feature = "testing")] // uses the testing support

use einsat::interp::{self, Value};
use einsat::jit::{self, Options};
use einsat::testing::{random_inputs, relayout_value, Layout};
use einsat::Function;
use ndarray::{ArrayD, IxDyn};
use rand::SeedableRng;
use std::collections::BTreeMap;

fn func(src: &str) -> Function {
    einsat::load(src)
        .unwrap_or_else(|e| panic!("{e}\n{src}"))
        .functions
        .remove(0)
}

fn opts(gemm: bool, threads: usize) -> Options {
    Options {
        gemm,
        threads,
        // the library even on tiny products: its strides are what is tested
        gemm_min_work: 0,
        ..Options::default()
    }
}

fn stages(src: &str) -> Vec<String> {
    jit::compile_with(&func(src), &opts(true, 1))
        .unwrap()
        .stages()
}

/// An array of `shape` laid out as `layout` (zeros).
fn out_buffer(shape: &[usize], layout: Layout) -> Value {
    if shape.is_empty() {
        return Value::Real(0.0);
    }
    Value::Array(einsat::testing::relayout(
        &ArrayD::zeros(IxDyn(shape)),
        layout,
    ))
}

/// `src` agrees with the interpreter for `sizes`, every layout of the
/// arguments and of the output, GEMM on and off, 1 and 2 threads; the
/// kernel with GEMM on has `want_stages`.
fn check(src: &str, sizes: &[(&str, usize)], want_stages: &[&str]) {
    let f = func(src);
    let sizes: BTreeMap<String, usize> = sizes.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let mut rng = rand::rngs::StdRng::seed_from_u64(sizes.values().sum::<usize>() as u64);
    let args = random_inputs(&f, &sizes, &mut rng).unwrap();
    let want = interp::run(&f, &args).unwrap();
    let shape: Vec<usize> = match &want {
        Value::Array(a) => a.shape().to_vec(),
        _ => vec![],
    };
    for o in [opts(true, 1), opts(true, 2), opts(false, 1)] {
        let k = jit::compile_with(&f, &o).unwrap();
        if o.gemm {
            assert_eq!(k.stages(), want_stages, "{src}");
        } else {
            assert!(k.stages().iter().all(|s| s == "native"));
        }
        for layout in Layout::ALL {
            let a: Vec<Value> = args.iter().map(|v| relayout_value(v, layout)).collect();
            let got = k.call(&a).unwrap();
            assert!(
                want.approx_eq(&got, 1e-9, 1e-9),
                "{o:?} {layout:?} {sizes:?}\n{src}\ninterp {want}\njit    {got}"
            );
            // the output in every layout too (filled with garbage first:
            // the stage must write every element)
            for ol in Layout::ALL {
                let mut out = out_buffer(&shape, ol);
                if let Value::Array(x) = &mut out {
                    x.fill(f64::NAN);
                }
                k.call_into(&a, &mut out).unwrap();
                assert!(
                    want.approx_eq(&out, 1e-9, 1e-9),
                    "{o:?} args {layout:?} out {ol:?} {sizes:?}\n{src}\ninterp {want}\njit    {out}"
                );
            }
        }
    }
}

const SIZES: [(usize, usize, usize); 12] = [
    (0, 3, 2),
    (3, 0, 2),
    (2, 3, 0),
    (1, 1, 1),
    (1, 17, 3),
    (2, 3, 17),
    (17, 1, 5),
    (3, 17, 64),
    (64, 64, 64),
    (5, 2, 1),
    (64, 17, 3),
    (2, 2, 2),
];

#[test]
fn matmul_in_all_eight_transpositions() {
    for ta in [false, true] {
        for tb in [false, true] {
            for tc in [false, true] {
                let (at, a) = if ta {
                    ("[k,n]", "A[l,i]")
                } else {
                    ("[n,k]", "A[i,l]")
                };
                let (bt, b) = if tb {
                    ("[m,k]", "B[j,l]")
                } else {
                    ("[k,m]", "B[l,j]")
                };
                let (ct, g) = if tc {
                    ("[m,n]", "gen(j:m, i:n)")
                } else {
                    ("[n,m]", "gen(i:n, j:m)")
                };
                let src = format!("fn mm(A: {at}R, B: {bt}R) -> {ct}R = {g} sum(l:k) {a} * {b}");
                for (n, m, k) in SIZES {
                    check(&src, &[("n", n), ("m", m), ("k", k)], &["gemm n×m×k"]);
                }
            }
        }
    }
}

#[test]
fn matvec_both_orientations() {
    for (n, _, k) in SIZES {
        check(
            "fn mv(A: [n,k]R, x: [k]R) -> [n]R = gen(i:n) sum(j:k) A[i,j] * x[j]",
            &[("n", n), ("k", k)],
            &["gemm n×1×k"],
        );
        check(
            "fn vm(x: [k]R, A: [k,n]R) -> [n]R = gen(i:n) sum(j:k) x[j] * A[j,i]",
            &[("n", n), ("k", k)],
            &["gemm 1×n×k"],
        );
    }
}

#[test]
fn batched_matmul_with_the_batch_axis_anywhere() {
    for (n, m, k) in [(3, 2, 4), (0, 2, 2), (2, 3, 0), (17, 5, 3), (1, 4, 2)] {
        for b in [1, 3] {
            let sz = [("n", n), ("m", m), ("k", k), ("b", b)];
            check(
                "fn bmm(A: [b,n,k]R, B: [b,k,m]R) -> [b,n,m]R =
                   gen(t:b, i:n, j:m) sum(l:k) A[t,i,l] * B[t,l,j]",
                &sz,
                &["gemm n×m×k batch b"],
            );
            check(
                "fn bmm(A: [n,b,k]R, B: [k,m,b]R) -> [n,m,b]R =
                   gen(i:n, j:m, t:b) sum(l:k) A[i,t,l] * B[l,j,t]",
                &sz,
                &["gemm n×m×k batch b"],
            );
            check(
                "fn bmv(A: [n,k,b]R, x: [b,k]R) -> [b,n]R =
                   gen(t:b, i:n) sum(l:k) A[i,l,t] * x[t,l]",
                &sz,
                &["gemm n×1×k batch b"],
            );
        }
    }
}

#[test]
fn scalar_factors() {
    for (n, m, k) in [(3, 4, 5), (17, 2, 64), (0, 2, 3), (2, 2, 0)] {
        let sz = [("n", n), ("m", m), ("k", k)];
        check(
            "fn f(s: R, A: [n,k]R, B: [k,m]R) -> [n,m]R =
               gen(i:n, j:m) sum(l:k) s * A[i,l] * B[l,j]",
            &sz,
            &["gemm n×m×k"],
        );
        check(
            "fn f(s: R, A: [n,k]R, B: [k,m]R) -> [n,m]R =
               gen(i:n, j:m) -(2.5 * s * sum(l:k) A[i,l] * (B[l,j] * 3))",
            &sz,
            &["gemm n×m×k"],
        );
    }
    // α = 0 at run time: declined, generated code runs
    let f = func(
        "fn f(s: R, A: [n,k]R, B: [k,m]R) -> [n,m]R = gen(i:n, j:m) sum(l:k) s * A[i,l] * B[l,j]",
    );
    let k = jit::compile_with(&f, &opts(true, 1)).unwrap();
    let a = Value::Array(ArrayD::from_elem(IxDyn(&[2, 2]), f64::INFINITY));
    let got = k.call(&[Value::Real(0.0), a.clone(), a.clone()]).unwrap();
    let want = interp::run(&f, &[Value::Real(0.0), a.clone(), a]).unwrap();
    assert!(want.approx_eq(&got, 0.0, 0.0), "{want} {got}");
}

#[test]
fn several_axes_per_dimension_and_several_contracted_axes() {
    for (n, m, k) in [(3, 2, 4), (2, 0, 3), (4, 3, 0), (17, 3, 2)] {
        let sz = [("n", n), ("m", m), ("k", k)];
        // M = (i, i2), K = (l, l2): fused in C order, loops otherwise
        check(
            "fn f(A: [n,m,k,k]R, B: [k,k,m]R) -> [n,m,m]R =
               gen(i:n, i2:m, j:m) sum(l:k, l2:k) A[i,i2,l,l2] * B[l,l2,j]",
            &sz,
            &["gemm n·m×m×k·k"],
        );
        // a matrix–matrix product written with the contracted axis first
        // and the output transposed against both operands
        check(
            "fn f(A: [k,n]R, B: [m,k]R, C: [k,k]R) -> [m,n]R =
               let T = gen(i:m, j:n) sum(l:k) B[i,l] * A[l,j] in
               gen(j:m, i:n) sum(l:k) T[j,i] * C[l,l] + 0 * T[j,i]",
            &sz,
            &["gemm m×n×k", "native"],
        );
    }
}

#[test]
fn plan_takes_exactly_the_products() {
    let mm = "fn f(A: [n,k]R, B: [k,m]R) -> [n,m]R = gen(i:n, j:m) sum(l:k) A[i,l] * B[l,j]";
    assert_eq!(stages(mm), ["gemm n×m×k"]);
    // literal sizes
    assert_eq!(
        stages("fn f(A: [3,4]R, B: [4,5]R) -> [3,5]R = gen(i:3, j:5) sum(l:4) A[i,l] * B[l,j]"),
        ["gemm 3×5×4"]
    );
    // a `let` temporary is a stage too; the three-factor contraction is not
    assert_eq!(
        stages(
            "fn f(A: [n,n]R, B: [n,n]R, C: [n,n]R) -> [n,n]R =
               let T = gen(i:n, k:n) sum(j:n) A[i,j] * B[j,k] in
               gen(i:n, l:n) sum(k:n) T[i,k] * C[k,l]"
        ),
        ["gemm n×n×n", "gemm n×n×n"]
    );
    for (why, src) in [
        (
            "three tensor factors",
            "fn f(A: [n,n]R, B: [n,n]R, C: [n,n]R) -> [n,n]R =
               gen(i:n, l:n) sum(j:n, k:n) A[i,j] * B[j,k] * C[k,l]",
        ),
        (
            "a bracket",
            "fn f(A: [n,n]R, B: [n,n]R) -> [n,n]R =
               gen(i:n, j:n) sum(l:n) [l <= i] * A[i,l] * B[l,j]",
        ),
        (
            "padding",
            "fn f(A: [n,n]R, B: [n,n]R) -> [n,n]R =
               gen(i:n, j:n) sum(l:n) A[i,l+1] * B[l,j]",
        ),
        (
            "a call",
            "fn f(A: [n,n]R, B: [n,n]R) -> [n,n]R =
               gen(i:n, j:n) sum(l:n) exp(A[i,l]) * B[l,j]",
        ),
        (
            "a sum of products",
            "fn f(A: [n,n]R, B: [n,n]R) -> [n,n]R =
               gen(i:n, j:n) sum(l:n) A[i,l] * B[l,j] + A[i,l]",
        ),
        (
            "a dot product",
            "fn f(x: [n]R, y: [n]R) -> R = sum(i:n) x[i] * y[i]",
        ),
        (
            "an outer product (nothing contracted)",
            "fn f(x: [n]R, y: [m]R) -> [n,m]R = gen(i:n, j:m) x[i] * y[j]",
        ),
        (
            "a broadcast output axis",
            "fn f(A: [n,k]R, x: [k]R, y: [m]R) -> [n,m]R = gen(i:n, j:m) sum(l:k) A[i,l] * x[l]",
        ),
        (
            "a sum over one factor",
            "fn f(A: [n,k]R, x: [m]R) -> [n,m]R = gen(i:n, j:m) sum(l:k) A[i,l] * x[j]",
        ),
        (
            "an elementwise product",
            "fn f(x: [n]R, y: [n]R) -> [n]R = gen(i:n) x[i] * y[i]",
        ),
        (
            "a division",
            "fn f(A: [n,n]R, B: [n,n]R) -> [n,n]R = gen(i:n, j:n) sum(l:n) A[i,l] / B[l,j]",
        ),
    ] {
        assert_eq!(stages(src), ["native"], "{why}: {src}");
    }
    // GEMM off: nothing taken
    let k = jit::compile_with(&func(mm), &opts(false, 0)).unwrap();
    assert_eq!(k.stages(), ["native"]);
}

#[test]
fn diagonal_operand_and_repeated_axes() {
    // A[l,l]-style access of one operand: the stride is the sum of both
    for (n, k) in [(3, 4), (0, 2), (5, 0)] {
        check(
            "fn f(A: [k,k,n]R, x: [k]R) -> [n]R = gen(i:n) sum(l:k) A[l,l,i] * x[l]",
            &[("n", n), ("k", k)],
            &["gemm n×1×k"],
        );
    }
}

#[test]
fn the_cost_model_knows_gemm_stages() {
    use einsat::extract::cost::{gemm_stage, ir_cost, CostModel, GEMM_CALL_COST, GEMM_FACTOR};
    let body = |src: &str| func(src).body;
    let mm = body("fn f(A: [n,k]R, B: [k,m]R) -> [n,m]R = gen(i:n, j:m) sum(l:k) A[i,l] * B[l,j]");
    assert!(gemm_stage(&mm));
    assert!(gemm_stage(&body(
        "fn f(s: R, A: [n,k]R, x: [k]R) -> [n]R = gen(i:n) -(s * sum(l:k) x[l] * A[i,l])"
    )));
    for src in [
        "fn f(A: [n,n]R, B: [n,n]R, C: [n,n]R) -> [n,n]R =
           gen(i:n, l:n) sum(j:n, k:n) A[i,j] * B[j,k] * C[k,l]",
        "fn f(x: [n]R, y: [n]R) -> [n]R = gen(i:n) x[i] * y[i]",
        "fn f(A: [n,n]R, B: [n,n]R) -> [n,n]R =
           gen(i:n, j:n) sum(l:n) [l <= i] * A[i,l] * B[l,j]",
        "fn f(A: [n,n]R, B: [n,n]R) -> [n,n]R = gen(i:n, j:n) sum(l:n) A[i,l+1] * B[l,j]",
    ] {
        assert!(!gemm_stage(&body(src)), "{src}");
    }
    // a GEMM stage costs a share of its loops plus a call; never more than
    // its loops
    let m = CostModel::default();
    // per term: a multiply and two accesses of two indices each
    let plain = 1000.0 * (1000.0 * (1000.0 * 6.0 + 1.0) + 1.0);
    assert_eq!(ir_cost(&mm, &m), GEMM_FACTOR * plain + GEMM_CALL_COST);
    let tiny =
        body("fn f(A: [2,2]R, B: [2,2]R) -> [2,2]R = gen(i:2, j:2) sum(l:2) A[i,l] * B[l,j]");
    assert_eq!(ir_cost(&tiny, &m), 2.0 * (2.0 * (2.0 * 6.0 + 1.0) + 1.0));
    // the optimiser turns a three-matrix chain into two GEMM stages
    let chain = func(
        "fn f(A: [n,n]R, B: [n,n]R, C: [n,n]R) -> [n,n]R =
           gen(i:n, l:n) sum(j:n, k:n) A[i,j] * B[j,k] * C[k,l]",
    );
    let o = einsat::opt::optimize(&chain, &einsat::opt::Options::default()).unwrap();
    let k = jit::compile_with(&o.program, &opts(true, 1)).unwrap();
    assert_eq!(k.stages(), ["gemm n×n×n", "gemm n×n×n"]);
}
