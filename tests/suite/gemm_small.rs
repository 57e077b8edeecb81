//! GEMM stages' own kernels (`run::gemm`): batches of small products run
//! by the small-product kernels (with the default options, whatever their
//! work), and symmetric products `A·Aᵀ` computed as the blocks of one
//! triangle and mirrored. Against the interpreter in every layout of the
//! arguments and of the output, on one and two threads, sizes 0, 1, odd
//! and around the kernels' block sizes, and with offset data, huge and
//! tiny magnitudes, infinities and NaN judged by the floating-point
//! contract.
#![cfg(feature = "testing")] // uses the testing support

use einsat::interp::{self, Value};
use einsat::jit::{self, Options};
use einsat::testing::difftest::contract_judge;
use einsat::testing::{random_inputs, relayout_value, Layout};
use einsat::Function;
use ndarray::{ArrayD, IxDyn};
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;

fn func(src: &str) -> Function {
    einsat::load(src)
        .unwrap_or_else(|e| panic!("{e}\n{src}"))
        .functions
        .remove(0)
}

fn opts(threads: usize, gemm_min_work: u64) -> Options {
    Options {
        threads,
        gemm_min_work,
        ..Options::default()
    }
}

/// An array of `shape` laid out as `layout`, filled with NaN (the stage
/// must write every element).
fn out_buffer(shape: &[usize], layout: Layout) -> Value {
    let mut a = einsat::testing::relayout(&ArrayD::zeros(IxDyn(shape)), layout);
    a.fill(f64::NAN);
    Value::Array(a)
}

/// `args` with every element replaced, with probability 1/4 each, by a
/// huge, tiny, offset, infinite or NaN value.
fn special(args: &[Value], rng: &mut impl Rng) -> Vec<Value> {
    const ODD: [f64; 8] = [
        1e300,
        -1e-300,
        1e8 + 0.5,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -0.0,
        5e-324,
    ];
    args.iter()
        .map(|v| match v {
            Value::Array(a) => Value::Array(a.mapv(|x| {
                if rng.gen_range(0..4) == 0 {
                    ODD[rng.gen_range(0..ODD.len())]
                } else {
                    x
                }
            })),
            v => v.clone(),
        })
        .collect()
}

/// `src` agrees with the interpreter for `sizes` in every layout of the
/// arguments and of the output, on 1 and 2 threads, with the options'
/// `gemm_min_work`; with special values, agrees by the contract. The
/// kernel's stages are `want_stages` (unless empty).
fn check(src: &str, sizes: &[(&str, usize)], gemm_min_work: u64, want_stages: &[&str]) {
    let f = func(src);
    let sizes: BTreeMap<String, usize> = sizes.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let mut rng = rand::rngs::StdRng::seed_from_u64(sizes.values().sum::<usize>() as u64 + 7);
    let args = random_inputs(&f, &sizes, &mut rng).unwrap();
    let want = interp::run(&f, &args).unwrap();
    let Value::Array(w) = &want else {
        panic!("an array result")
    };
    let shape = w.shape().to_vec();
    let odd = special(&args, &mut rng);
    for threads in [1, 2] {
        let k = jit::compile_with(&f, &opts(threads, gemm_min_work)).unwrap();
        if !want_stages.is_empty() {
            assert_eq!(k.stages(), want_stages, "{src}");
        }
        for layout in Layout::ALL {
            let a: Vec<Value> = args.iter().map(|v| relayout_value(v, layout)).collect();
            for ol in Layout::ALL {
                let mut out = out_buffer(&shape, ol);
                k.call_into(&a, &mut out).unwrap();
                assert!(
                    want.approx_eq(&out, 1e-12, 1e-12),
                    "threads {threads} args {layout:?} out {ol:?} {sizes:?}\n{src}\ninterp {want}\njit    {out}"
                );
            }
            let a: Vec<Value> = odd.iter().map(|v| relayout_value(v, layout)).collect();
            let got = k.call(&a).unwrap();
            if let Some(why) = contract_judge(&f, &odd, &got).unwrap() {
                panic!("special values, {layout:?} {sizes:?}\n{src}\n{why}");
            }
        }
    }
}

#[test]
fn batches_of_small_products_on_the_small_kernels() {
    let shapes = [
        (1, 1, 1),
        (8, 8, 8),
        (1, 5, 3),
        (5, 1, 3),
        (3, 7, 5),
        (9, 4, 2),
        (4, 9, 1),
        (16, 16, 16),
        (2, 17, 3),
        (0, 3, 2),
        (3, 2, 0),
    ];
    for (n, m, k) in shapes {
        for b in [2, 3, 70] {
            let sz = [("n", n), ("m", m), ("k", k), ("b", b)];
            check(
                "fn bmm(A: [b,n,k]R, B: [b,k,m]R) -> [b,n,m]R =
                   gen(t:b, i:n, j:m) sum(l:k) A[t,i,l] * B[t,l,j]",
                &sz,
                Options::default().gemm_min_work,
                &["gemm n×m×k batch b"],
            );
            check(
                "fn bmm(A: [n,b,k]R, B: [k,m,b]R) -> [m,b,n]R =
                   gen(j:m, t:b, i:n) sum(l:k) 0.5 * A[i,t,l] * B[l,j,t]",
                &sz,
                Options::default().gemm_min_work,
                &["gemm n×m×k batch b"],
            );
        }
    }
    // a batch of matrix–vector products, and a scalar factor from a buffer
    for (n, k, b) in [(8, 8, 100), (1, 3, 2), (7, 5, 3)] {
        let sz = [("n", n), ("k", k), ("b", b)];
        check(
            "fn bmv(A: [n,k,b]R, x: [b,k]R, s: R) -> [b,n]R =
               gen(t:b, i:n) sum(l:k) s * A[i,l,t] * x[t,l]",
            &sz,
            Options::default().gemm_min_work,
            &["gemm n×1×k batch b"],
        );
    }
}

#[test]
fn symmetric_products_from_one_triangle() {
    for d in [47, 48, 64, 129] {
        for n in [1, 33] {
            let sz = [("n", n), ("d", d)];
            check(
                "fn g(C: [n,d]R) -> [d,d]R = gen(a:d, b:d) sum(i:n) C[i,a] * C[i,b]",
                &sz,
                0,
                &["gemm d×d×n"],
            );
            check(
                "fn g(T: [d,n]R) -> [d,d]R = gen(a:d, b:d) sum(i:n) -2 * T[a,i] * T[b,i]",
                &sz,
                0,
                &["gemm d×d×n"],
            );
        }
    }
    // the same buffer, but not a product with its own transpose
    for n in [48, 65] {
        check(
            "fn f(C: [n,n]R) -> [n,n]R = gen(a:n, b:n) sum(i:n) C[i,a] * C[b,i]",
            &[("n", n)],
            0,
            &["gemm n×n×n"],
        );
        check(
            "fn f(C: [n,n]R) -> [n,n]R = gen(a:n, b:n) sum(i:n) C[a,i] * C[i,b]",
            &[("n", n)],
            0,
            &["gemm n×n×n"],
        );
    }
    // batched: symmetric per batch index
    check(
        "fn g(X: [b,n,d]R) -> [b,d,d]R = gen(t:b, a:d, c:d) sum(i:n) X[t,i,a] * X[t,i,c]",
        &[("b", 3), ("n", 5), ("d", 64)],
        0,
        &["gemm d×d×n batch b"],
    );
}

#[test]
fn centred_gram_matrix() {
    for (n, d) in [(1, 1), (3, 2), (40, 64), (9, 50)] {
        let src = "fn gram(X: [n,d]R) -> [d,d]R = gen(a:d, b:d) sum(i:n)
              (X[i,a] - (sum(k:n) X[k,a]) / n) * (X[i,b] - (sum(k:n) X[k,b]) / n)";
        let f = func(src);
        let sizes: BTreeMap<String, usize> = [("n".to_string(), n), ("d".to_string(), d)]
            .into_iter()
            .collect();
        let mut rng = rand::rngs::StdRng::seed_from_u64(11);
        let args = random_inputs(&f, &sizes, &mut rng).unwrap();
        // offset data: the centring must not lose the digits
        let args: Vec<Value> = args
            .iter()
            .map(|v| match v {
                Value::Array(a) => Value::Array(a.mapv(|x| x + 1e6)),
                v => v.clone(),
            })
            .collect();
        let opt = einsat::opt::optimize(&f, &einsat::opt::Options::default()).unwrap();
        for threads in [1, 2] {
            let k = jit::compile_with(&opt.program, &opts(threads, 0)).unwrap();
            for layout in Layout::ALL {
                let a: Vec<Value> = args.iter().map(|v| relayout_value(v, layout)).collect();
                let got = k.call(&a).unwrap();
                if let Some(why) = contract_judge(&f, &args, &got).unwrap() {
                    panic!("{layout:?} n {n} d {d}: {why}");
                }
            }
        }
    }
}

#[test]
fn temporaries_read_only_by_gemm_stages_stored_along_their_reads() {
    // a temporary written across the rows of its argument, read by one
    // or two GEMM stages (its axes are permuted), or also by a nest that
    // is not a GEMM stage (they are not)
    let progs = [
        "fn f(X: [n,d]R, Y: [n,m]R) -> [d,m]R =
           let t = gen(i:d, j:n) X[j,i] * 2 - 1 in gen(a:d, b:m) sum(k:n) t[a,k] * Y[k,b]",
        "fn f(X: [n,d]R, Y: [n,m]R) -> [d,m]R =
           let t = gen(i:d, j:n) exp(X[j,i]) in
           let u = gen(a:d, b:m) sum(k:n) t[a,k] * Y[k,b] in
           gen(a:d, b:m) u[a,b] + sum(k:n) t[a,k] * Y[k,b] * 3",
        "fn f(X: [n,d]R, Y: [n,m]R) -> [d,m]R =
           let t = gen(i:d, j:n) X[j,i] - Y[j,0] in
           let u = gen(a:d, b:m) sum(k:n) t[a,k] * Y[k,b] in
           gen(a:d, b:m) u[a,b] + t[a,0]",
    ];
    for src in progs {
        for (n, d, m) in [(1, 1, 1), (5, 3, 4), (33, 17, 9)] {
            check(src, &[("n", n), ("d", d), ("m", m)], 0, &[]);
        }
    }
}
