//! How the JIT runs calls: the bounded kernel cache (eviction, recompiling,
//! clearing), generated nests split across threads (bit-identical to one
//! thread and equal to the interpreter, on sizes that leave uneven chunks;
//! GEMM stages off, since the library's summation order may depend on its
//! threads), calls from
//! several threads at once, and argument errors worded exactly as the
//! interpreter's.
//!
//! The cache test is the only one here that uses the global cache (the
//! others compile uncached), so clearing it races with nothing.
#![cfg(feature = "testing")] // uses the testing support

mod common;

use common::agree::bits;
use einsat::interp::{self, Value};
use einsat::jit::{self, Options};
use einsat::opt::optimize;
use einsat::testing::{random_inputs, relayout_value, Layout};
use einsat::Function;
use ndarray::{ArrayD, IxDyn};
use rand::SeedableRng;
use std::collections::BTreeMap;
use std::sync::Arc;

const PROGRAMS: &str = include_str!("../benches/perf.tl");

fn normal(f: &Function) -> Function {
    optimize(f, &einsat::opt::Options::default())
        .unwrap()
        .program
}

fn inputs(f: &Function, n: usize, seed: u64) -> Vec<Value> {
    let sizes: BTreeMap<String, usize> = f.size_names().into_iter().map(|x| (x, n)).collect();
    random_inputs(f, &sizes, &mut rand::rngs::StdRng::seed_from_u64(seed)).unwrap()
}

#[test]
fn the_cache_is_bounded_and_evicted_kernels_still_work() {
    let src = |k: usize| format!("fn f(x: [n]R) -> [n]R = gen(i:n) x[i] * {k}");
    let func = |k: usize| einsat::load(&src(k)).unwrap().functions.remove(0);
    let x = Value::Array(ndarray::arr1(&[1.0, 2.0]).into_dyn());
    jit::clear_cache();
    assert_eq!(jit::cache_len(), 0);
    let first = jit::compile(&func(0)).unwrap();
    for k in 1..2000 {
        jit::compile(&func(k)).unwrap();
        assert!(jit::cache_len() <= jit::CACHE_CAPACITY);
    }
    assert_eq!(jit::cache_len(), jit::CACHE_CAPACITY);
    // the most recent kernels are cached, the first one was evicted but
    // works through the Arc its caller holds, and compiles again
    let last = jit::compile(&func(1999)).unwrap();
    assert!(Arc::ptr_eq(&last, &jit::compile(&func(1999)).unwrap()));
    assert_eq!(
        bits(&first.call(std::slice::from_ref(&x)).unwrap()),
        bits(&Value::Array(ndarray::arr1(&[0.0, 0.0]).into_dyn()))
    );
    let again = jit::compile(&func(0)).unwrap();
    assert!(!Arc::ptr_eq(&first, &again));
    let v = jit::compile(&func(7))
        .unwrap()
        .call(std::slice::from_ref(&x))
        .unwrap();
    assert!(v.approx_eq(
        &Value::Array(ndarray::arr1(&[7.0, 14.0]).into_dyn()),
        1e-12,
        0.0
    ));
    // a lookup refreshes a kernel: it outlives newer ones
    for k in 2000..2000 + jit::CACHE_CAPACITY - 1 {
        jit::compile(&func(k)).unwrap();
        assert!(Arc::ptr_eq(&last, &jit::compile(&func(1999)).unwrap()));
    }
    // options are part of the key
    let one = Options {
        threads: 1,
        ..Options::default()
    };
    let t1 = jit::compile_with(&func(1999), &one).unwrap();
    assert!(!Arc::ptr_eq(&last, &t1));
    assert_eq!(t1.options().threads, 1);
    jit::clear_cache();
    assert_eq!(jit::cache_len(), 0);
    assert!(!Arc::ptr_eq(&last, &jit::compile(&func(1999)).unwrap()));
    assert_eq!(jit::cache_len(), 1);
    // the key is the options and the printed function: another layout of
    // the same text shares the kernel, another name or index does not
    let same = einsat::load("# a comment\nfn f(x: [n]R) -> [n]R =\n    gen(i : n)   x[i]*1999")
        .unwrap()
        .functions
        .remove(0);
    assert_eq!(
        jit::cache_key(&same, &Options::default()),
        jit::cache_key(&func(1999), &Options::default())
    );
    assert!(Arc::ptr_eq(
        &jit::compile(&func(1999)).unwrap(),
        &jit::compile(&same).unwrap()
    ));
    assert_eq!(jit::cache_len(), 1);
    for other in [
        "fn g(x: [n]R) -> [n]R = gen(i:n) x[i] * 1999",
        "fn f(x: [n]R) -> [n]R = gen(j:n) x[j] * 1999",
        "fn f(y: [n]R) -> [n]R = gen(i:n) y[i] * 1999",
    ] {
        let g = einsat::load(other).unwrap().functions.remove(0);
        assert_ne!(
            jit::cache_key(&g, &Options::default()),
            jit::cache_key(&func(1999), &Options::default()),
            "{other}"
        );
        jit::compile(&g).unwrap();
    }
    assert_eq!(jit::cache_len(), 4);
    assert!(jit::cache_key(&same, &one).starts_with(&format!("{one:?}\n")));
}

#[test]
fn threads_give_bit_identical_results() {
    let prog = einsat::load(PROGRAMS).unwrap();
    let posted = jit::testing::pool::jobs_posted();
    for f in &prog.functions {
        let g = normal(f);
        let serial = jit::compile_uncached_with(
            &g,
            &Options {
                threads: 1,
                gemm: false,
                ..Options::default()
            },
        )
        .unwrap();
        // 37 and 53 rows leave uneven chunks and vector/tile tails
        for (n, seed) in [(37usize, 1u64), (53, 2), (1, 3)] {
            let args = inputs(f, n, seed);
            let want = interp::run(f, &args).unwrap();
            let one = serial.call(&args).unwrap();
            assert!(want.approx_eq(&one, 1e-9, 1e-9), "{}", f.name);
            for threads in [2, 3, 5] {
                let k = jit::compile_uncached_with(
                    &g,
                    &Options {
                        threads,
                        parallel_threshold: 0,
                        gemm: false,
                        ..Options::default()
                    },
                )
                .unwrap();
                for layout in Layout::ALL {
                    let laid: Vec<Value> = args.iter().map(|v| relayout_value(v, layout)).collect();
                    let got = k.call(&laid).unwrap();
                    // the schedule (and so the order of a sum's additions)
                    // depends on the layout; for one layout it does not
                    // depend on the thread count
                    let one = serial.call(&laid).unwrap();
                    assert!(want.approx_eq(&one, 1e-9, 1e-9), "{}", f.name);
                    assert_eq!(
                        bits(&one),
                        bits(&got),
                        "{} n={n} threads={threads} {layout:?}",
                        f.name
                    );
                }
            }
        }
    }
    assert!(
        jit::testing::pool::jobs_posted() > posted,
        "no nest ran on the pool"
    );
}

#[test]
fn concurrent_calls_share_a_kernel() {
    let prog = einsat::load(PROGRAMS).unwrap();
    let g = normal(prog.get("abc").unwrap());
    let k = jit::compile_uncached_with(
        &g,
        &Options {
            threads: 2,
            parallel_threshold: 0,
            ..Options::default()
        },
    )
    .unwrap();
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (k, g) = (&k, &g);
            s.spawn(move || {
                for r in 0..20u64 {
                    let n = 3 + ((t * 7 + r) % 29) as usize;
                    let args = inputs(g, n, t * 100 + r);
                    let want = interp::run(g, &args).unwrap();
                    let mut out = Value::Array(ArrayD::zeros(IxDyn(&[n, n])));
                    k.call_into(&args, &mut out).unwrap();
                    assert!(want.approx_eq(&out, 1e-9, 1e-9));
                }
            });
        }
    });
}

#[test]
fn argument_errors_are_the_interpreters() {
    let p = einsat::load(
        "fn mv(A: [n,m]R, x: [m]R) -> [n]R = gen(i:n) sum(j:m) A[i,j] * x[j]
         fn cm(z: ([n]R, [n]R), s: R) -> R = s * sum(i:n) z.0[i] * z.1[i]",
    )
    .unwrap();
    let arr = |s: &[usize]| Value::Array(ArrayD::zeros(IxDyn(s)));
    let cases: Vec<(usize, Vec<Value>)> = vec![
        (0, vec![arr(&[2, 3])]),
        (0, vec![arr(&[3]), arr(&[3])]),
        (0, vec![arr(&[2, 3]), arr(&[4])]),
        (0, vec![arr(&[2, 3]), Value::Real(1.0)]),
        (0, vec![arr(&[2, 3]), Value::pair(arr(&[3]), arr(&[3]))]),
        (1, vec![arr(&[3]), Value::Real(1.0)]),
        (1, vec![Value::pair(arr(&[3]), arr(&[2])), Value::Real(1.0)]),
        (1, vec![Value::pair(arr(&[3]), arr(&[3])), arr(&[2])]),
        (1, vec![Value::pair(arr(&[3]), arr(&[3, 1])), arr(&[])]),
    ];
    for (f, args) in cases {
        let f = &p.functions[f];
        let want = interp::run(f, &args).unwrap_err().to_string();
        let k = jit::compile_uncached(f).unwrap();
        assert_eq!(k.call(&args).unwrap_err().to_string(), want);
        let mut out = arr(&[2]);
        assert_eq!(k.call_into(&args, &mut out).unwrap_err().to_string(), want);
    }
    // accepted: a 0-d array for a number
    let k = jit::compile_uncached(&p.functions[1]).unwrap();
    let one = Value::Array(ndarray::arr1(&[1.0, 2.0]).into_dyn());
    let v = k
        .call(&[
            Value::pair(one.clone(), one),
            Value::Array(ndarray::arr0(2.0).into_dyn()),
        ])
        .unwrap();
    assert!(v.approx_eq(&Value::Real(10.0), 1e-12, 0.0));
}
