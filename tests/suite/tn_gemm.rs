//! Pairwise tensor-network steps on GEMM stages (`jit::gemm`): index groups
//! that do not fuse in the arguments' or the output's strides (copied into
//! scratch in one order, as numpy's tensordot transposes), batch indices,
//! several kept and summed indices per operand, size-0 and size-1 axes,
//! every memory layout of the arguments and of the output, one and two
//! threads — against the interpreter; and whole planned networks (a ring,
//! an MPS norm, grids) through the optimiser, whose `let` temporaries
//! share storage, against the interpreter on the source.
#![cfg(feature = "testing")] // uses the testing support

use einsat::interp::{self, Value};
use einsat::jit::{self, Options};
use einsat::plan::networks;
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
        gemm_min_work: 0,
        ..Options::default()
    }
}

fn out_buffer(shape: &[usize], layout: Layout) -> Value {
    if shape.is_empty() {
        return Value::Real(0.0);
    }
    Value::Array(einsat::testing::relayout(
        &ArrayD::zeros(IxDyn(shape)),
        layout,
    ))
}

/// `src` (a GEMM stage with GEMM on, `want`; `gemm+copy`: one that copies
/// operands into scratch when no size is 0 or 1) agrees with the interpreter
/// for every size assignment, every layout of arguments and output, GEMM
/// on (1 and 2 threads) and off.
fn check(src: &str, names: &[&str], size_sets: &[&[usize]], want: &str) {
    let f = func(src);
    let packed = jit::testing::gemm::packed_stages();
    for set in size_sets {
        let sizes: BTreeMap<String, usize> = names
            .iter()
            .zip(set.iter())
            .map(|(k, v)| (k.to_string(), *v))
            .collect();
        let mut rng = rand::rngs::StdRng::seed_from_u64(set.iter().sum::<usize>() as u64);
        let args = random_inputs(&f, &sizes, &mut rng).unwrap();
        let expect = interp::run(&f, &args).unwrap();
        let shape: Vec<usize> = match &expect {
            Value::Array(a) => a.shape().to_vec(),
            _ => vec![],
        };
        for o in [opts(true, 1), opts(true, 2), opts(false, 1)] {
            let k = jit::compile_with(&f, &o).unwrap();
            if o.gemm {
                let st = k.stages();
                let w = want.trim_end_matches("+copy");
                assert!(st.iter().any(|s| s.starts_with(w)), "{src}: stages {st:?}");
            }
            for layout in Layout::ALL {
                let a: Vec<Value> = args.iter().map(|v| relayout_value(v, layout)).collect();
                let got = k.call(&a).unwrap();
                assert!(
                    expect.approx_eq(&got, 1e-9, 1e-9),
                    "{o:?} {layout:?} {sizes:?}\n{src}\ninterp {expect}\njit    {got}"
                );
                for ol in Layout::ALL {
                    let mut out = out_buffer(&shape, ol);
                    if let Value::Array(x) = &mut out {
                        x.fill(f64::NAN);
                    }
                    k.call_into(&a, &mut out).unwrap();
                    assert!(
                        expect.approx_eq(&out, 1e-9, 1e-9),
                        "{o:?} args {layout:?} out {ol:?} {sizes:?}\n{src}\ninterp {expect}\njit    {out}"
                    );
                }
            }
        }
    }
    if want == "gemm+copy" && size_sets.iter().any(|s| s.iter().all(|&n| n > 1)) {
        // (other tests run in parallel and may pack too: this only shows
        // that some stage packed, which these shapes need in some layout)
        assert!(
            jit::testing::gemm::packed_stages() > packed,
            "{src}: nothing was packed"
        );
    }
}

const SIZES4: [&[usize]; 7] = [
    &[2, 3, 4, 5],
    &[3, 1, 2, 4],
    &[1, 1, 1, 1],
    &[0, 2, 3, 2],
    &[2, 3, 0, 2],
    &[4, 2, 3, 0],
    &[7, 5, 3, 6],
];

#[test]
fn kept_indices_interleaved_with_summed_ones() {
    // M = {p, i} and K = {q, r} alternate in A's axes: neither group fuses
    // in A's strides; the output's M axes are apart too
    for s in SIZES4 {
        let src = "fn f(A: [a,k,b,l]R, B: [l,c,k]R) -> [b,c,a]R = gen(i:b, j:c, p:a) sum(q:k, r:l) A[p,q,i,r] * B[r,j,q]";
        let l = (s[0] + s[3]) % 4 + 1;
        check(
            src,
            &["a", "b", "c", "k", "l"],
            &[&[s[0], s[1], s[2], s[3], l]],
            "gemm+copy",
        );
    }
}

#[test]
fn summed_indices_in_opposite_orders() {
    // K = {q, r}: (q, r) in A, (r, q) in B
    let src = "fn f(A: [n,k,l]R, B: [l,k,m]R) -> [n,m]R = gen(i:n, j:m) sum(q:k, r:l) A[i,q,r] * B[r,q,j]";
    for s in SIZES4 {
        check(src, &["n", "m", "k", "l"], &[s], "gemm+copy");
    }
}

#[test]
fn batch_indices_anywhere() {
    // batch b in both operands and the output, at different places
    let src = "fn f(A: [n,l,z,k]R, B: [k,z,m,l]R) -> [m,z,n]R = gen(j:m, b:z, i:n) sum(q:k, r:l) A[i,r,b,q] * B[q,b,j,r]";
    for s in SIZES4 {
        let z = s[0] % 3 + 1;
        check(
            src,
            &["n", "m", "k", "l", "z"],
            &[&[s[0], s[1], s[2], s[3], z]],
            "gemm+copy",
        );
    }
    // two batch indices, one kept index per side
    let src2 = "fn f(A: [y,n,z,k]R, B: [z,k,y,m]R) -> [z,n,y,m]R = gen(c:z, i:n, b:y, j:m) sum(q:k) A[b,i,c,q] * B[c,q,b,j]";
    for s in SIZES4 {
        check(
            src2,
            &["n", "m", "k", "y", "z"],
            &[&[s[0], s[1], s[2], 2, 3]],
            "gemm",
        );
    }
}

#[test]
fn matrix_vector_and_scalar_steps() {
    // N empty: a multi-index matrix-vector step, kept axes reversed
    let src = "fn f(A: [k,a,b,l]R, v: [l,k]R) -> [b,a]R = gen(i:b, j:a) sum(q:k, r:l) A[q,j,i,r] * v[r,q]";
    for s in SIZES4 {
        check(src, &["a", "b", "k", "l"], &[s], "gemm+copy");
    }
    // a scalar factor and a negation
    let src = "fn f(s: R, A: [n,k,l]R, B: [m,l,k]R) -> [m,n]R = gen(j:m, i:n) sum(q:k, r:l) -(2.0 * s * A[i,q,r] * B[j,r,q])";
    for s in SIZES4 {
        check(src, &["n", "m", "k", "l"], &[s], "gemm");
    }
}

#[test]
fn outer_products_and_hadamard_steps() {
    // no sum: not a GEMM; generated code, checked against the interpreter
    let f = func("fn f(A: [n,m]R, B: [k,n]R) -> [m,k,n]R = gen(j:m, q:k, i:n) A[i,j] * B[q,i]");
    let sizes: BTreeMap<String, usize> = [("n", 3), ("m", 4), ("k", 2)]
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let args = random_inputs(&f, &sizes, &mut rng).unwrap();
    let want = interp::run(&f, &args).unwrap();
    for o in [opts(true, 1), opts(true, 2)] {
        let got = jit::compile_with(&f, &o).unwrap().call(&args).unwrap();
        assert!(want.approx_eq(&got, 1e-12, 1e-12));
    }
}

/// A network optimised (planned pairwise) and compiled agrees with the
/// interpreter on the source program, GEMM on every step (min work 0) and
/// with the default thresholds, 1 and 2 threads.
fn check_network(net: &einsat::plan::Network, interp_source: bool) {
    let f = func(&networks::program_text(net));
    let mut o = einsat::opt::Options::default();
    let mut sizes = BTreeMap::new();
    for (i, &s) in net.sizes().iter().enumerate() {
        o.sizes.insert(format!("d{i}"), s as usize);
        sizes.insert(format!("d{i}"), s as usize);
    }
    let opt = einsat::opt::optimize(&f, &o).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(net.inputs().len() as u64);
    let args = random_inputs(&f, &sizes, &mut rng).unwrap();
    let want = if interp_source {
        interp::run(&f, &args).unwrap()
    } else {
        interp::run(&opt.program, &args).unwrap()
    };
    for jo in [
        opts(true, 1),
        opts(true, 2),
        Options {
            threads: 2,
            ..Options::default()
        },
    ] {
        let k = jit::compile_with(&opt.program, &jo).unwrap();
        assert!(
            k.stages().iter().filter(|s| s.starts_with("gemm")).count() >= net.inputs().len() / 2
        );
        for layout in Layout::ALL {
            let a: Vec<Value> = args.iter().map(|v| relayout_value(v, layout)).collect();
            // twice: the second call reuses the workspace's shared storage
            for _ in 0..2 {
                let got = k.call(&a).unwrap();
                assert!(
                    want.approx_eq(&got, 1e-9, 1e-12),
                    "{jo:?} {layout:?}\n{}\ninterp {want}\njit    {got}",
                    einsat::syntax::print_function(&opt.program)
                );
            }
        }
    }
}

#[test]
fn planned_networks_agree_with_the_interpreter() {
    check_network(&networks::ring(8, 3), true);
    check_network(&networks::grid(3, 3, 2), true);
    check_network(&networks::grid(3, 4, 3), false);
    check_network(&networks::mps_norm(6, 4, 2), false);
    check_network(&networks::mps_norm(12, 8, 2), false);
    check_network(&networks::random_regular(20, 3, 2, 1), false);
}
