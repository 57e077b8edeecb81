//! Cache blocking of loops that walk across memory: maps
//! (`schedule::tiled`: the transpose and its relatives run their two
//! innermost loops in blocks) and reductions (`dense::Plan::vblock`: the
//! trace of a product `sum(i,j) A[i,j] * B[j,i]` runs `j` in blocks, each
//! over every `i`), both when, at call time, the rows walked across are a
//! multiple of 256 elements apart or more than `TILE_ROWS` long, and as
//! before otherwise. Both branches, block edges (sizes not a multiple of
//! the block), zero padding peeled inside a block, loop domains, views,
//! reversed strides and the threaded path against the interpreter.
#![cfg(feature = "testing")] // uses the testing support

use crate::common;

use common::agree::bits;
use einsat::interp::{self, Value};
use einsat::jit;
use einsat::opt::{optimize, Options};
use einsat::syntax::print_function;
use einsat::testing::{random_inputs, relayout_value, Layout};
use einsat::Function;
use rand::SeedableRng;
use std::collections::BTreeMap;

const PROGRAMS: &str = "
fn tr(A: [n,m]R) -> [m,n]R = gen(i:m, j:n) A[j,i]
fn sym(A: [n,n]R) -> [n,n]R = gen(i:n, j:n) 0.5 * (A[i,j] + A[j,i])
fn padded(A: [n,m]R) -> [m,n]R = gen(i:m, j:n) A[j-1,i] - 2 * A[j,i+1]
fn lower(A: [n,n]R) -> [n,n]R = gen(i:n, j:n) [j <= i] * A[j,i]
fn mixed(A: [n,m]R, B: [m,n]R, c: [m]R) -> [m,n]R = gen(i:m, j:n) exp(A[j,i]) * B[i,j] + c[i]
";

/// (n, m): 256 and 512 rows are a multiple of 256 elements apart in C
/// order (blocked), 1030 is longer than `TILE_ROWS` (blocked), 300 and 40
/// neither (the plain loops); 257 and 130 leave partial blocks.
const SIZES: &[(usize, usize)] = &[
    (256, 256),
    (256, 300),
    (300, 256),
    (512, 130),
    (257, 512),
    (1030, 40),
    (40, 1030),
    (300, 300),
    (3, 256),
];

fn opts(threads: usize) -> jit::Options {
    jit::Options {
        threads,
        // split every nest, however small, so the threaded path runs
        parallel_threshold: if threads > 1 { 0 } else { u64::MAX },
        ..jit::Options::default()
    }
}

/// The sizes of [`SIZES`] that `f` takes (only the square ones when it
/// has one size name), each with random inputs (seed `seed` + its index)
/// and the interpreter's result.
fn cases(f: &Function, seed: u64) -> Vec<(usize, usize, Vec<Value>, Value)> {
    SIZES
        .iter()
        .enumerate()
        .filter(|(_, &(n, m))| n == m || f.size_names().len() > 1)
        .map(|(t, &(n, m))| {
            let sizes: BTreeMap<String, usize> =
                [("n".to_string(), n), ("m".to_string(), m)].into();
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed + t as u64);
            let args = random_inputs(f, &sizes, &mut rng).unwrap();
            let want = interp::run(f, &args).unwrap();
            (n, m, args, want)
        })
        .collect()
}

#[test]
fn blocked_maps_agree_with_the_interpreter_in_both_branches() {
    let prog = einsat::load(PROGRAMS).unwrap();
    let mut runs = 0;
    for f in &prog.functions {
        let g = optimize(f, &Options::default()).unwrap().program;
        let cases = cases(f, 7);
        for h in [f, &g] {
            let k1 = jit::compile_with(h, &opts(1)).unwrap();
            let k2 = jit::compile_with(h, &opts(2)).unwrap();
            for (n, m, args, want) in &cases {
                for layout in Layout::ALL {
                    let a: Vec<Value> = args.iter().map(|v| relayout_value(v, layout)).collect();
                    let one = k1.call(&a).unwrap();
                    assert!(
                        want.approx_eq(&one, 1e-12, 1e-12),
                        "{layout:?} n={n} m={m}\n{}\ninterp {want}\njit    {one}",
                        print_function(h)
                    );
                    // a gen's elements are bit-identical for every thread
                    // count, blocked or not
                    let two = k2.call(&a).unwrap();
                    assert_eq!(bits(&one), bits(&two), "{layout:?} n={n} m={m} threads 2");
                    runs += 1;
                }
            }
        }
    }
    assert!(runs >= 5 * 2 * 4 * 3, "{runs} comparisons");
}

const SUMS: &str = "
fn trp(A: [n,m]R, B: [m,n]R) -> R = sum(i:n, j:m) A[i,j] * B[j,i]
fn wtrp(x: [n]R, A: [n,m]R, B: [m,n]R) -> R = sum(i:n, j:m) x[i] * A[i,j] * B[j,i]
fn tri(A: [n,n]R, B: [n,n]R) -> R = sum(i:n, j:n) [j <= i] * A[i,j] * B[j,i]
";

#[test]
fn blocked_sums_agree_with_the_interpreter_in_both_branches() {
    let prog = einsat::load(SUMS).unwrap();
    let mut runs = 0;
    for f in &prog.functions {
        let g = optimize(f, &Options::default()).unwrap().program;
        let cases = cases(f, 70);
        for h in [f, &g] {
            let k = jit::compile_with(h, &opts(1)).unwrap();
            for (n, m, args, want) in &cases {
                // blocks reorder the additions: within rounding of the
                // sum of |terms| (inputs are under 2 in magnitude)
                let atol = 1e-13 * (n * m) as f64;
                for layout in Layout::ALL {
                    let a: Vec<Value> = args.iter().map(|v| relayout_value(v, layout)).collect();
                    let got = k.call(&a).unwrap();
                    assert!(
                        want.approx_eq(&got, 1e-12, atol),
                        "{layout:?} n={n} m={m}\n{}\ninterp {want}\njit    {got}",
                        print_function(h)
                    );
                    runs += 1;
                }
            }
        }
    }
    assert!(runs >= 3 * 2 * 4 * 3, "{runs} comparisons");
}

/// A copy into a column-major result walks the result at unit stride
/// along `i` and the C-order argument along `j`: `i`, the nest's first
/// variable and the one threads split, is then the inner loop of the
/// blocks.
#[test]
fn blocks_over_the_split_variable_agree_with_the_interpreter() {
    let f = einsat::load("fn copy(A: [n,m]R) -> [n,m]R = gen(i:n, j:m) A[i,j] - 0.5 * A[i,j+1]")
        .unwrap()
        .functions
        .remove(0);
    let cases = cases(&f, 700);
    for threads in [1, 2] {
        let k = jit::compile_with(&f, &opts(threads)).unwrap();
        for (n, m, args, want) in &cases {
            let mut out = relayout_value(want, Layout::Fortran);
            if let Value::Array(a) = &mut out {
                a.fill(f64::NAN);
            }
            k.call_into(args, &mut out).unwrap();
            assert_eq!(bits(want), bits(&out), "n={n} m={m} threads {threads}");
        }
    }
}
