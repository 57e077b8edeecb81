//! The native code of a GEMM stage's nest is compiled on the first call
//! that runs it (`schedule::defer_native`), not with the kernel: a call
//! small enough for native code, or one the library declines, gets the
//! same code a kernel without GEMM stages runs, bit for bit, whether it
//! comes first or after library calls, on one thread or from several
//! threads at once; library calls are judged by the floating-point
//! contract. Data: offset (1e8 + small), huge and tiny magnitudes, ±0,
//! infinities and NaN.
#![cfg(feature = "testing")] // uses the testing support

use einsat::interp::Value;
use einsat::jit::{self, Kernel, Options};
use einsat::testing::difftest::contract_judge;
use einsat::{Arg32, Function, Precision, Type, Value32};
use ndarray::{ArrayD, IxDyn, Slice};
use rand::{Rng, SeedableRng};

fn func(src: &str) -> Function {
    einsat::load(src)
        .unwrap_or_else(|e| panic!("{e}\n{src}"))
        .functions
        .remove(0)
}

const MM: &str = "fn mm(X: [n,k]R, W: [k,m]R) -> [n,m]R = gen(i:n, j:m) sum(l:k) X[i,l] * W[l,j]";
const MLP: &str = "fn mlp(X: [n,k]R, W: [k,m]R, b: [m]R) -> [n,m]R = \
    let H = gen(i:n, j:m) sum(l:k) X[i,l] * W[l,j] in gen(i:n, j:m) max(b[j] + H[i,j], 0)";

#[derive(Clone, Copy, Debug)]
enum Data {
    Offset,
    Huge,
    Tiny,
    Special,
}

const DATA: [Data; 4] = [Data::Offset, Data::Huge, Data::Tiny, Data::Special];

fn number(d: Data, rng: &mut impl Rng) -> f64 {
    let u: f64 = rng.gen_range(-1.0..1.0);
    match d {
        Data::Offset => 1e8 + u,
        Data::Huge => 1e300 * u,
        Data::Tiny => 1e-300 * u,
        Data::Special => match rng.gen_range(0..12) {
            0 => f64::INFINITY,
            1 => f64::NEG_INFINITY,
            2 => f64::NAN,
            3 => 0.0,
            4 => -0.0,
            _ => u,
        },
    }
}

fn rank(t: &Type) -> usize {
    match t {
        Type::Tensor(_, e) => 1 + rank(e),
        _ => 0,
    }
}

/// `f`'s arguments with every size `n`, filled with `d`.
fn args(f: &Function, n: usize, d: Data, seed: u64) -> Vec<Value> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    f.params
        .iter()
        .map(|p| {
            let rank = rank(&p.ty);
            let len = n.pow(rank as u32);
            let xs: Vec<f64> = (0..len).map(|_| number(d, &mut rng)).collect();
            Value::Array(ArrayD::from_shape_vec(IxDyn(&vec![n; rank]), xs).unwrap())
        })
        .collect()
}

fn same_bits(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Array(x), Value::Array(y)) => {
            x.shape() == y.shape()
                && x.iter()
                    .zip(y.iter())
                    .all(|(p, q)| p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan()))
        }
        _ => false,
    }
}

fn with_gemm(gemm: bool) -> Options {
    Options {
        threads: 1,
        gemm,
        ..Options::default()
    }
}

/// Small calls (native code) are bit for bit those of the kernel without
/// GEMM stages; large calls (the library) pass the contract; in both
/// orders, on fresh kernels.
#[test]
fn small_calls_run_the_deferred_code_of_a_kernel_without_gemm() {
    for src in [MM, MLP] {
        let f = func(src);
        let plain = jit::compile_uncached_with(&f, &with_gemm(false)).unwrap();
        for small_first in [true, false] {
            let k = jit::compile_uncached_with(&f, &with_gemm(true)).unwrap();
            assert!(k.stages()[0].starts_with("gemm"), "{src}: {:?}", k.stages());
            let mut sizes = [40, 1, 3, 9, 0];
            if small_first {
                sizes.reverse();
            }
            for (s, &n) in sizes.iter().enumerate() {
                for d in DATA {
                    let a = args(&f, n, d, s as u64);
                    let got = k.call(&a).unwrap();
                    if n < 20 {
                        let want = plain.call(&a).unwrap();
                        assert!(same_bits(&got, &want), "{src} n={n} {d:?}");
                    } else if let Some(why) = contract_judge(&f, &a, &got).unwrap() {
                        panic!("{src} n={n} {d:?}: {why}");
                    }
                }
            }
        }
    }
}

/// The first small calls of a fresh kernel, from several threads at once:
/// the deferred code is compiled once and every call gets it.
#[test]
fn concurrent_first_small_calls_agree() {
    let f = func(MLP);
    let plain = jit::compile_uncached_with(&f, &with_gemm(false)).unwrap();
    let k: Kernel = jit::compile_uncached_with(&f, &with_gemm(true)).unwrap();
    let inputs: Vec<Vec<Value>> = (0..4).map(|t| args(&f, 5 + t, DATA[t], t as u64)).collect();
    let wants: Vec<Value> = inputs.iter().map(|a| plain.call(a).unwrap()).collect();
    std::thread::scope(|s| {
        for (a, want) in inputs.iter().zip(&wants) {
            let k = &k;
            s.spawn(move || {
                for _ in 0..3 {
                    assert!(same_bits(&k.call(a).unwrap(), want));
                }
            });
        }
    });
    assert_eq!(k.layouts_compiled(), 1);
}

/// `f32` arrays every other element of a larger one (`a[::2, ::2, ::2]`).
fn sliced(a: &ArrayD<f32>) -> ArrayD<f32> {
    let big: Vec<usize> = a.shape().iter().map(|&n| 2 * n).collect();
    let mut s = ArrayD::from_elem(IxDyn(&big), f32::NAN);
    s.slice_each_axis_mut(|_| Slice::new(0, None, 2)).assign(a);
    s
}

/// A call the library declines (in `f32`, two reduced axes that do not
/// fuse into one would need `f64` scratch copies) runs the deferred
/// native code of the call's layout: bit for bit that of the kernel
/// without GEMM stages, on the same views; then again from the kernel's
/// complete code.
#[test]
fn a_declined_call_runs_the_deferred_code() {
    let f = func(
        "fn t(A: [n,p,q]R, B: [p,q,m]R) -> [n,m]R = gen(i:n, j:m) sum(k:p) sum(l:q) A[i,k,l] * B[k,l,j]",
    );
    let o = |gemm| Options {
        precision: Precision::F32,
        gemm_min_work: 0,
        ..with_gemm(gemm)
    };
    let plain = jit::compile_uncached_with(&f, &o(false)).unwrap();
    let k = jit::compile_uncached_with(&f, &o(true)).unwrap();
    assert!(k.stages()[0].starts_with("gemm"), "{:?}", k.stages());
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    for d in DATA {
        for n in [3usize, 6] {
            let gen = |rng: &mut rand::rngs::StdRng| {
                let xs = (0..n * n * n).map(|_| number(d, rng) as f32).collect();
                sliced(&ArrayD::from_shape_vec(IxDyn(&[n, n, n]), xs).unwrap())
            };
            let (a, b) = (gen(&mut rng), gen(&mut rng));
            let va = a.slice_each_axis(|_| Slice::new(0, None, 2));
            let vb = b.slice_each_axis(|_| Slice::new(0, None, 2));
            let call = |k: &Kernel| match k.call_f32(&[Arg32::from(&va), Arg32::from(&vb)]).unwrap()
            {
                Value32::Array(x) => x,
                _ => panic!("not an array"),
            };
            let want = call(&plain);
            for _ in 0..2 {
                let got = call(&k);
                assert!(
                    got.iter()
                        .zip(want.iter())
                        .all(|(p, q)| p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan())),
                    "{d:?} n={n}"
                );
            }
        }
    }
}
