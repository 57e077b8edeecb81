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

#[test]
fn scaled_products_are_one_stage() {
    // a product divided by a power of two, or times any constant, is one
    // stage (the library's scale factor); by any other divisor it is not
    for (n, m, k) in [
        (3, 4, 5),
        (17, 2, 64),
        (1, 9, 20),
        (0, 2, 3),
        (2, 2, 0),
        (4, 4, 2),
    ] {
        let sz = [("n", n), ("m", m), ("k", k)];
        for scaled in [
            "(sum(l:k) A[i,l] * B[l,j]) / 8",
            "(sum(l:k) A[i,l] * B[l,j]) / -0.25",
            "-(sum(l:k) A[i,l] * B[l,j]) / 4",
            "(sum(l:k) A[i,l] * B[l,j]) * 3",
            "0.1 * sum(l:k) A[i,l] * B[l,j]",
        ] {
            check(
                &format!("fn f(A: [n,k]R, B: [k,m]R) -> [n,m]R = gen(i:n, j:m) {scaled}"),
                &sz,
                &["gemm n×m×k"],
            );
        }
    }
    // M = (i, i2), K = (l, l2): scratch copies where they do not fuse
    check(
        "fn f(A: [n,m,k,k]R, B: [k,k,m]R) -> [n,m,m]R =
           gen(i:n, i2:m, j:m) (sum(l:k, l2:k) A[i,i2,l,l2] * B[l,l2,j]) / 16",
        &[("n", 3), ("m", 2), ("k", 4)],
        &["gemm n·m×m×k·k"],
    );
    let huge = format!("(sum(l:n) A[i,l] * B[l,j]) / {:e}", 2f64.powi(127));
    for (why, body) in [
        (
            "a divisor not a power of two",
            "(sum(l:n) A[i,l] * B[l,j]) / 3",
        ),
        ("a power of two out of range", huge.as_str()),
        ("a divisor that is a size", "(sum(l:n) A[i,l] * B[l,j]) / n"),
        ("a scaled numerator", "(2 * sum(l:n) A[i,l] * B[l,j]) / 8"),
        ("a division by zero", "(sum(l:n) A[i,l] * B[l,j]) / 0"),
    ] {
        let src = format!("fn f(A: [n,n]R, B: [n,n]R) -> [n,n]R = gen(i:n, j:n) {body}");
        assert_eq!(stages(&src), ["native"], "{why}: {src}");
    }
}

/// `n` values of `A` and `B` whose products straddle the bottom of the
/// normal range (so a product divided by 8 rounds to a subnormal), with
/// huge ones, zeros, infinities and NaN mixed in.
fn extreme(len: usize, rng: &mut impl rand::Rng) -> Vec<f64> {
    (0..len)
        .map(|_| {
            let x: f64 = rng.gen_range(1.0..2.0) * if rng.gen() { 1.0 } else { -1.0 };
            match rng.gen_range(0..40) {
                0 => f64::INFINITY,
                1 => f64::NAN,
                2 => 0.0,
                3..=5 => x * 2f64.powi(rng.gen_range(500..512)),
                _ => x * 2f64.powi(rng.gen_range(-530..-500)),
            }
        })
        .collect()
}

#[test]
fn a_scaled_product_is_the_written_division_bit_for_bit() {
    use rand::Rng;
    // each shape takes another path of the library: blocked kernels
    // (k <= 512: the library scales), k > 512 and matrix–vector or k <= 2
    // (scaled after the product), the small-output kernel, a batch
    let shapes = [
        (5, 7, 3),
        (17, 17, 64),
        (3, 40, 512),
        (2, 3, 600),
        (1, 9, 20),
        (9, 1, 20),
        (4, 4, 2),
        (70, 33, 513),
    ];
    let mut rng = rand::rngs::StdRng::seed_from_u64(26);
    let mm = |scale: &str| {
        func(&format!(
            "fn f(A: [n,k]R, B: [k,m]R) -> [n,m]R = gen(i:n, j:m) (sum(l:k) A[i,l] * B[l,j]){scale}"
        ))
    };
    let plain = mm("");
    let scaled_before = jit::testing::gemm::scaled_blocks();
    for c in [8.0, 0.5, -2.0, 2f64.powi(-126), 2f64.powi(126)] {
        let f = mm(&format!(" / {c:e}"));
        for (n, m, k) in shapes {
            let a = ArrayD::from_shape_vec(IxDyn(&[n, k]), extreme(n * k, &mut rng)).unwrap();
            let b = ArrayD::from_shape_vec(IxDyn(&[k, m]), extreme(k * m, &mut rng)).unwrap();
            for threads in [1, 2] {
                let o = opts(true, threads);
                let kp = jit::compile_with(&plain, &o).unwrap();
                let ks = jit::compile_with(&f, &o).unwrap();
                assert_eq!(ks.stages(), ["gemm n×m×k"]);
                for layout in [Layout::ALL[0], Layout::ALL[Layout::ALL.len() - 1]] {
                    let args = [
                        relayout_value(&Value::Array(a.clone()), layout),
                        relayout_value(&Value::Array(b.clone()), layout),
                    ];
                    let (Value::Array(p), Value::Array(s)) =
                        (kp.call(&args).unwrap(), ks.call(&args).unwrap())
                    else {
                        panic!("not arrays")
                    };
                    for (x, y) in p.iter().zip(s.iter()) {
                        let want = x / c;
                        assert!(
                            want.to_bits() == y.to_bits() || (want.is_nan() && y.is_nan()),
                            "/ {c:e} {n}x{m}x{k} {threads} threads {layout:?}: \
                             {x:e} / c = {want:e}, the stage gave {y:e}"
                        );
                    }
                }
            }
        }
    }
    // the matrix–vector, k <= 2 and k > 512 shapes were scaled after
    // the library's product
    assert!(jit::testing::gemm::scaled_blocks() > scaled_before);
    // f32: the division in f32, bit for bit
    let f = mm(" / 8");
    let o = Options {
        precision: einsat::Precision::F32,
        ..opts(true, 1)
    };
    let kp = jit::compile_with(&plain, &o).unwrap();
    let ks = jit::compile_with(&f, &o).unwrap();
    assert_eq!(ks.stages(), ["gemm n×m×k"]);
    for (n, m, k) in shapes {
        let gen = |len: usize, rng: &mut rand::rngs::StdRng| {
            (0..len)
                .map(|_| match rng.gen_range(0..30) {
                    0 => f32::INFINITY,
                    1 => f32::NAN,
                    _ => rng.gen_range(1.0f32..2.0) * 2f32.powi(rng.gen_range(-80..-55)),
                })
                .collect::<Vec<f32>>()
        };
        let a = ndarray::Array2::from_shape_vec((n, k), gen(n * k, &mut rng)).unwrap();
        let b = ndarray::Array2::from_shape_vec((k, m), gen(k * m, &mut rng)).unwrap();
        let args = [einsat::Arg32::from(&a), einsat::Arg32::from(&b)];
        let (einsat::Value32::Array(p), einsat::Value32::Array(s)) =
            (kp.call_f32(&args).unwrap(), ks.call_f32(&args).unwrap())
        else {
            panic!("not arrays")
        };
        for (x, y) in p.iter().zip(s.iter()) {
            let want = x / 8.0;
            assert!(
                want.to_bits() == y.to_bits() || (want.is_nan() && y.is_nan()),
                "f32 {n}x{m}x{k}: {x:e} / 8 = {want:e}, the stage gave {y:e}"
            );
        }
    }
}

fn gemm_count(stages: &[String]) -> usize {
    stages.iter().filter(|s| s.starts_with("gemm")).count()
}

#[test]
fn the_optimiser_makes_a_scaled_product_one_stage() {
    // attention: `S = (Q Kᵀ) / 8` is one stage its uses read, not `Q Kᵀ`
    // with `/ 8` at each use
    let att = func(
        "fn att(Q: [s,d]R, K: [s,d]R, V: [s,d]R) -> [s,d]R =
           let S = gen(i:s, j:s) (sum(l:d) Q[i,l] * K[j,l]) / 8 in
           let P = gen(i:s) let mx = max(j:s) S[i,j] in let z = sum(j:s) exp(S[i,j] - mx) in
             gen(j:s) exp(S[i,j] - mx) / z in
           gen(i:s, c:d) sum(j:s) P[i,j] * V[j,c]",
    );
    let o = einsat::opt::optimize(&att, &einsat::opt::Options::default()).unwrap();
    let text = einsat::syntax::print_function(&o.program);
    assert!(text.contains("(sum(k:d) Q[i, k] * K[j, k]) / 8"), "{text}");
    assert_eq!(text.matches("/ 8").count(), 1, "{text}");
    let k = jit::compile_with(&o.program, &opts(true, 1)).unwrap();
    let st = k.stages();
    assert_eq!(st.first().map(String::as_str), Some("gemm s×s×d"), "{st:?}");
    // (P·V is a stage too; the normalisation by the row sums may follow it:
    // `tests/suite/staging.rs`)
    assert!(st.iter().any(|s| s == "gemm s×d×s"), "{st:?}");
    // values: the interpreter's on the written program
    for (s, d) in [(1, 1), (5, 3), (33, 8)] {
        let sizes: BTreeMap<String, usize> = [("s".to_string(), s), ("d".to_string(), d)]
            .into_iter()
            .collect();
        let mut rng = rand::rngs::StdRng::seed_from_u64(s as u64);
        let args = random_inputs(&att, &sizes, &mut rng).unwrap();
        let want = interp::run(&att, &args).unwrap();
        for threads in [1, 2] {
            let k = jit::compile_with(&o.program, &opts(true, threads)).unwrap();
            let got = k.call(&args).unwrap();
            assert!(
                want.approx_eq(&got, 1e-12, 1e-12),
                "s {s} d {d}\n{want}\n{got}"
            );
        }
    }
    // a product also used unscaled is one stage, divided at the use
    let both = func(
        "fn f(Q: [s,d]R, K: [s,d]R) -> [s,s]R =
           let S = gen(i:s, j:s) sum(l:d) Q[i,l] * K[j,l] in
           gen(i:s, j:s) exp(S[i,j] / 8) + S[i,j]",
    );
    let o = einsat::opt::optimize(&both, &einsat::opt::Options::default()).unwrap();
    let k = jit::compile_with(&o.program, &opts(true, 1)).unwrap();
    let st = k.stages();
    assert_eq!(
        gemm_count(&st),
        1,
        "{}\n{st:?}",
        einsat::syntax::print_function(&o.program)
    );
    // a divisor that is not a power of two stays a division at the uses
    let att3 = func(
        "fn f(Q: [s,d]R, K: [s,d]R) -> [s,s]R =
           let S = gen(i:s, j:s) (sum(l:d) Q[i,l] * K[j,l]) / 3 in
           gen(i:s, j:s) exp(S[i,j])",
    );
    let o = einsat::opt::optimize(&att3, &einsat::opt::Options::default()).unwrap();
    let text = einsat::syntax::print_function(&o.program);
    assert!(text.contains("t0[i, j] / 3"), "{text}");
}
