//! GEMM stages on several threads (`jit::GemmSplit`): the library's own
//! threading and output panels on einsat's pool (along N or M, one or
//! several per thread) compute what the interpreter computes, for ragged
//! sizes (panels that do not divide the output), a side too narrow to
//! split, batched products, and K axes that do not fuse (the later library
//! calls accumulate into the destination), in C and Fortran layouts.
#![cfg(feature = "testing")] // uses the testing support

use einsat::interp::{self, Value};
use einsat::jit::{self, GemmAxis as Axis, GemmSplit as Split, Options, DEFAULT_GEMM_SPLIT};
use einsat::testing::{random_inputs, relayout_value, Layout};
use rand::SeedableRng;
use std::collections::BTreeMap;

const STRATEGIES: [Split; 7] = [
    Split::Rayon,
    DEFAULT_GEMM_SPLIT,
    Split::Panels {
        per_thread: 2,
        axis: Axis::Longer,
    },
    Split::Panels {
        per_thread: 1,
        axis: Axis::N,
    },
    Split::Panels {
        per_thread: 4,
        axis: Axis::N,
    },
    Split::Panels {
        per_thread: 1,
        axis: Axis::M,
    },
    Split::Panels {
        per_thread: 3,
        axis: Axis::M,
    },
];

#[test]
fn every_split_agrees_with_the_interpreter() {
    let cases: &[(&str, &[(&str, usize)])] = &[
        // ragged: 83×71×53 (≥ 2^18 multiply-adds, so the product is split)
        (
            "fn mm(A: [n,k]R, B: [k,m]R) -> [n,m]R = gen(i:n, j:m) sum(l:k) A[i,l] * B[l,j]",
            &[("n", 83), ("m", 71), ("k", 53)],
        ),
        // one side narrower than two panels: not split along it
        (
            "fn mm(A: [n,k]R, B: [k,m]R) -> [n,m]R = gen(i:n, j:m) sum(l:k) 2 * A[i,l] * B[l,j]",
            &[("n", 300), ("m", 20), ("k", 60)],
        ),
        (
            "fn mm(A: [n,k]R, B: [k,m]R) -> [n,m]R = gen(i:n, j:m) sum(l:k) A[i,l] * B[l,j]",
            &[("n", 20), ("m", 300), ("k", 60)],
        ),
        // batched
        (
            "fn bmm(A: [b,n,k]R, B: [b,k,m]R) -> [b,n,m]R = gen(h:b, i:n, j:m) sum(l:k) A[h,i,l] * B[h,l,j]",
            &[("b", 2), ("n", 70), ("m", 66), ("k", 61)],
        ),
        // two K axes: fused in C order, separate calls accumulating in
        // other layouts
        (
            "fn kk(A: [n,p,q]R, B: [p,q,m]R) -> [n,m]R = gen(i:n, j:m) sum(k:p) sum(l:q) A[i,k,l] * B[k,l,j]",
            &[("n", 72), ("m", 68), ("p", 9), ("q", 7)],
        ),
    ];
    for (src, sizes) in cases {
        let f = einsat::load(src).unwrap().functions.remove(0);
        let sizes: BTreeMap<String, usize> =
            sizes.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        let mut rng = rand::rngs::StdRng::seed_from_u64(sizes.values().sum::<usize>() as u64);
        let args = random_inputs(&f, &sizes, &mut rng).unwrap();
        let want = interp::run(&f, &args).unwrap();
        for threads in [2, 3] {
            for s in STRATEGIES {
                let k = jit::compile_with(
                    &f,
                    &Options {
                        threads,
                        gemm_split: s,
                        // these products are below the default threshold:
                        // split them anyway
                        gemm_split_min_work: 0,
                        ..Options::default()
                    },
                )
                .unwrap();
                assert!(k.stages()[0].starts_with("gemm"), "{:?}", k.stages());
                assert_eq!(k.options().gemm_split, s);
                for layout in [Layout::C, Layout::Fortran] {
                    let a: Vec<Value> = args.iter().map(|v| relayout_value(v, layout)).collect();
                    let mut out = relayout_value(&want, layout);
                    // garbage first: the stage must overwrite every element
                    if let Value::Array(o) = &mut out {
                        o.fill(f64::NAN);
                    }
                    k.call_into(&a, &mut out).unwrap();
                    assert!(
                        want.approx_eq(&out, 1e-9, 1e-9),
                        "{src}\n{s:?} threads {threads} {layout:?}"
                    );
                }
            }
        }
    }
}
