//! Packed matrix products in generated code (`jit::dense`, `Plan::pack`):
//! with the GEMM stage off, matrix products of random sizes large enough
//! to run several panels of columns, several blocks of the reduction and
//! every tail (rows, vector and scalar columns), in every layout of each
//! argument and of the output, against the interpreter; sizes 0 and 1;
//! which nests pack; and bit-identical results for every thread count.
#![cfg(feature = "testing")] // uses the testing support

use einsat::interp::{self, Value};
use einsat::jit::testing::{ir, tiles};
use einsat::jit::{self, Options};
use einsat::testing::{random_inputs, relayout_value, zeros_like, Layout};
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;

const SRC: &str = "
fn mm(A: [n,p]R, B: [p,m]R) -> [n,m]R = gen(i:n, j:m) sum(k:p) A[i,k] * B[k,j]
fn mm_at(A: [p,n]R, B: [p,m]R) -> [n,m]R = gen(i:n, j:m) sum(k:p) A[k,i] * B[k,j]
fn mm_bt(A: [n,p]R, B: [m,p]R) -> [n,m]R = gen(i:n, j:m) sum(k:p) A[i,k] * B[j,k]
fn mm_ct(A: [n,p]R, B: [p,m]R) -> [m,n]R = gen(j:m, i:n) sum(k:p) A[i,k] * B[k,j]
fn bmm(A: [b,n,p]R, B: [b,p,m]R) -> [b,n,m]R = gen(q:b, i:n, j:m) sum(k:p) A[q,i,k] * B[q,k,j]
fn scaled(s: R, A: [n,p]R, B: [p,m]R) -> [n,m]R = gen(i:n, j:m) s * sum(k:p) 2 * A[i,k] * B[k,j]
fn post2(A: [n,p]R, B: [p,m]R, r: [n]R, c: [m]R) -> [n,m]R = gen(i:n, j:m) r[i] * (sum(k:p) A[i,k] * B[k,j]) * c[j]
fn three(A: [n,p]R, B: [p,m]R, c: [p]R) -> [n,m]R = gen(i:n, j:m) sum(k:p) A[i,k] * B[k,j] * c[k]
";

fn opts(threads: usize) -> Options {
    Options {
        gemm: false,
        threads,
        parallel_threshold: 0,
        ..Options::default()
    }
}

fn close(a: &Value, b: &Value) -> bool {
    a.approx_eq(b, 1e-10, 1e-12)
}

fn sizes(n: usize, m: usize, p: usize, b: usize) -> BTreeMap<String, usize> {
    [("n", n), ("m", m), ("p", p), ("b", b)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

#[test]
fn products_pack_in_every_layout() {
    let prog = einsat::load(SRC).unwrap();
    for f in &prog.functions {
        let k = jit::compile_with(f, &opts(1)).unwrap();
        let p = k.loop_program();
        for layout in [
            ir::Layout::c_order(p),
            ir::Layout::generic(p),
            ir::Layout::from_fn(p, |_, a| a == 0),
        ] {
            let plan = tiles::plan(p, &p.nests[0], &layout).unwrap();
            assert!(
                plan.pack.is_some(),
                "{} does not pack in {layout:?}",
                f.name
            );
        }
    }
    // a matrix–vector product has no second gen axis to pack for
    let mv = einsat::load("fn mv(A: [n,m]R, x: [m]R) -> [n]R = gen(i:n) sum(j:m) A[i,j] * x[j]")
        .unwrap();
    let k = jit::compile_with(&mv.functions[0], &opts(1)).unwrap();
    let p = k.loop_program();
    let plan = tiles::plan(p, &p.nests[0], &ir::Layout::c_order(p)).unwrap();
    assert!(plan.pack.is_none());
}

/// Random sizes around the panel and block boundaries, every layout of
/// the arguments (all alike and mixed) and of the output.
#[test]
fn packed_products_agree_with_the_interpreter() {
    let prog = einsat::load(SRC).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let kb = tiles::PACK_KC;
    let mut runs = 0;
    for f in &prog.functions {
        let k = jit::compile_with(f, &opts(1)).unwrap();
        let mut cases = vec![
            sizes(0, 5, 7, 1),
            sizes(3, 0, 7, 1),
            sizes(3, 5, 0, 2),
            sizes(1, 1, 1, 1),
            sizes(1, 1, kb + 1, 1),
            sizes(7, 131, 2 * kb + 3, 2),
        ];
        for _ in 0..6 {
            cases.push(sizes(
                rng.gen_range(1..20),
                rng.gen_range(1..150),
                rng.gen_range(1..2 * kb + 40),
                rng.gen_range(1..3),
            ));
        }
        for (t, sz) in cases.iter().enumerate() {
            let mut r = rand::rngs::StdRng::seed_from_u64(500 + t as u64);
            let args = random_inputs(f, sz, &mut r).unwrap();
            let want = interp::run(f, &args).unwrap();
            for shift in 0..Layout::ALL.len() {
                let a: Vec<Value> = args
                    .iter()
                    .enumerate()
                    .map(|(i, v)| relayout_value(v, Layout::ALL[(i * (t + 1) + shift) % 4]))
                    .collect();
                let got = k.call(&a).unwrap();
                assert!(close(&want, &got), "{} {sz:?} shift {shift}", f.name);
                runs += 1;
                if matches!(&want, Value::Array(w) if w.is_empty()) {
                    continue;
                }
                let mut out = zeros_like(&want, Layout::ALL[(shift + t) % 4]);
                k.call_into(&a, &mut out).unwrap();
                assert!(close(&want, &out), "{} {sz:?} shift {shift} out", f.name);
                runs += 1;
            }
        }
    }
    assert!(runs >= 8 * 12 * 4);
}

/// The same product with 1, 2 and 3 threads (the outermost gen axis split
/// at different places) gives the same bits.
#[test]
fn packed_products_are_bit_identical_for_every_thread_count() {
    let prog = einsat::load(SRC).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    for name in ["mm", "mm_ct", "bmm"] {
        let f = prog.get(name).unwrap();
        let ks: Vec<_> = [1, 2, 3]
            .iter()
            .map(|&t| jit::compile_with(f, &opts(t)).unwrap())
            .collect();
        for _ in 0..3 {
            let sz = sizes(
                rng.gen_range(9..40),
                rng.gen_range(60..140),
                rng.gen_range(200..600),
                rng.gen_range(2..4),
            );
            let args = random_inputs(f, &sz, &mut rng).unwrap();
            let want = interp::run(f, &args).unwrap();
            let one = ks[0].call(&args).unwrap();
            assert!(close(&want, &one), "{name} {sz:?}");
            for k in &ks[1..] {
                assert_eq!(k.call(&args).unwrap(), one, "{name} {sz:?}");
            }
        }
    }
}
