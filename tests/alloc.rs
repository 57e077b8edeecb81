//! `Kernel::call_into` with a preallocated output allocates nothing once
//! warmed up: a global allocator that counts allocations, around many calls
//! of kernels with `let` temporaries, column sums computed ahead into
//! scratch vectors, tuple results, pair parameters and non-C layouts, on
//! one thread and split across threads.
//!
//! GEMM stages are allocation-free on einsat's side (`jit::gemm`'s
//! `Plan::run` works in fixed arrays, and a split stage's panels go to the
//! pool, whose dispatch allocates nothing), but the `gemm` crate (0.19)
//! allocates per call itself, in `gemm_basic_generic`: its packing buffer
//! (`MemBuffer::new`, when it packs) and a `vec![false; mc / MR]` of
//! packed-panel flags; it has no entry point taking the caller's scratch
//! (no `MemStack`/`*_req` API in 0.19). So the guarantee is for generated
//! code (`gemm: false`, split across threads or not), and the GEMM cases —
//! one thread, and two threads with the product split into panels — check
//! that a stage costs no more than the crate's two allocations per library
//! call (`jit::gemm::library_calls`; on two threads one call per panel).
//!
//! One test function only: the count is process-wide.
#![cfg(feature = "testing")] // uses the testing support

use einsat::interp::{self, Value};
use einsat::jit::testing::gemm::library_calls;
use einsat::jit::GEMM_SPLIT_MIN_WORK;
use einsat::jit::{self, Options};
use einsat::testing::{random_inputs, relayout_value, Layout};
use ndarray::{ArrayD, IxDyn};
use rand::SeedableRng;
use std::alloc::{GlobalAlloc, Layout as AllocLayout, System};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: AllocLayout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: AllocLayout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: AllocLayout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(p, l, n) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: AllocLayout) {
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const SRC: &str = "
fn mm2(A: [n,n]R, B: [n,n]R) -> [n,n]R =
  let T = gen(i:n, j:n) sum(k:n) A[i,k] * B[k,j] in gen(i:n, j:n) sum(k:n) T[i,k] * A[k,j]
fn mv(A: [n,n]R, x: [n]R) -> [n]R = gen(i:n) 2 * sum(j:n) A[j,i] * x[j]
fn chain(x: [n]R, A: [n,n]R, B: [n,n]R, y: [n]R) -> R =
  sum(i:n) (sum(j:n) B[i,j] * y[j]) * sum(j:n) x[j] * A[j,i]
fn stats(z: ([n]R, [n]R), X: [n,n]R) -> (R, [n]R) =
  (sum(i:n) z.0[i] * z.1[i], gen(i:n) exp(X[i,i]) / sum(k:n) exp(X[i,k]) + [i > 0] * X[i-1,i])
";

fn out_for(v: &Value) -> Value {
    match v {
        Value::Real(_) => Value::Real(0.0),
        Value::Array(a) => Value::Array(ArrayD::zeros(IxDyn(a.shape()))),
        Value::Pair(a, b) => Value::pair(out_for(a), out_for(b)),
    }
}

#[test]
fn call_into_does_not_allocate_after_warm_up() {
    let prog = einsat::load(SRC).unwrap();
    for f in &prog.functions {
        for (threads, threshold, gemm) in [
            (1, u64::MAX, false),
            (2, 0, false),
            (3, 0, false),
            (1, u64::MAX, true),
            (2, 0, true),
        ] {
            // split even these small products into panels
            let k = jit::compile_uncached_with(
                f,
                &Options {
                    threads,
                    parallel_threshold: threshold,
                    gemm,
                    gemm_min_work: 0,
                    gemm_split_min_work: if threads > 1 { 0 } else { GEMM_SPLIT_MIN_WORK },
                    ..Options::default()
                },
            )
            .unwrap();
            for layout in [Layout::C, Layout::Fortran] {
                let sizes: BTreeMap<String, usize> =
                    f.size_names().into_iter().map(|x| (x, 45)).collect();
                let args: Vec<Value> =
                    random_inputs(f, &sizes, &mut rand::rngs::StdRng::seed_from_u64(5))
                        .unwrap()
                        .iter()
                        .map(|v| relayout_value(v, layout))
                        .collect();
                let want = interp::run(f, &args).unwrap();
                let mut out = out_for(&want);
                k.call_into(&args, &mut out).unwrap(); // warm-up
                let (before, calls0, jobs0) = (
                    ALLOCS.load(Ordering::SeqCst),
                    library_calls(),
                    jit::testing::pool::jobs_posted(),
                );
                for _ in 0..50 {
                    k.call_into(&args, &mut out).unwrap();
                }
                let during = ALLOCS.load(Ordering::SeqCst) - before;
                let calls = library_calls() - calls0;
                let jobs = jit::testing::pool::jobs_posted() - jobs0;
                assert!(want.approx_eq(&out, 1e-9, 1e-9), "{}", f.name);
                let gemm_stages =
                    k.stages().iter().filter(|s| s.starts_with("gemm")).count() as u64;
                // the products run on the library when it is on
                assert_eq!(
                    gemm_stages > 0,
                    gemm && f.name != "stats",
                    "{}: {:?}",
                    f.name,
                    k.stages()
                );
                // on two threads, the nests (or the products) ran on the pool
                if threads > 1 {
                    assert!(jobs >= 50, "{}: {jobs} jobs in 50 calls", f.name);
                }
                if gemm_stages > 0 {
                    assert!(
                        calls >= 50 * gemm_stages,
                        "{}: {calls} library calls",
                        f.name
                    );
                    // a split product: a library call per panel
                    if threads > 1 {
                        assert!(calls >= 2 * 50 * gemm_stages, "{}: {calls}", f.name);
                    }
                }
                assert!(
                    during <= 2 * calls,
                    "{} allocated {during} times in 50 calls with {calls} library calls (threads {threads}, gemm {gemm}, {layout:?})",
                    f.name
                );
            }
        }
    }
    // borrowed views of other layouts (transposed, stepped, reversed) are
    // read in place: no copy, so no allocation once warmed up
    let f = prog.get("mm2").unwrap();
    let k = jit::compile_uncached_with(
        f,
        &Options {
            threads: 1,
            parallel_threshold: u64::MAX,
            gemm: false,
            ..Options::default()
        },
    )
    .unwrap();
    let n = 33;
    let a = ndarray::Array2::from_shape_fn((n, n), |(i, j)| ((i * 7 + j * 3) % 11) as f64 - 5.0);
    let big = ndarray::Array2::from_shape_fn((2 * n, 3 * n), |(i, j)| ((i + 2 * j) % 5) as f64);
    let stepped = big.slice(ndarray::s![..;2, ..;3]);
    let mut reversed = a.view();
    reversed.invert_axis(ndarray::Axis(0));
    let want = interp::run(
        f,
        &[
            Value::Array(a.t().to_owned().into_dyn()),
            Value::Array(stepped.to_owned().into_dyn()),
        ],
    )
    .unwrap();
    let mut out = ndarray::Array2::<f64>::zeros((n, n));
    let mut out_t = ndarray::Array2::<f64>::zeros((n, n));
    for (x, y) in [(a.t(), stepped), (reversed, a.t())] {
        k.eval_into((x, y), &mut out).unwrap(); // warm-up (layout compiled)
        k.eval_into((x, y), out_t.view_mut().reversed_axes())
            .unwrap();
        let before = ALLOCS.load(Ordering::SeqCst);
        for _ in 0..50 {
            k.eval_into((x, y), &mut out).unwrap();
            k.call_args_into(
                &[
                    einsat::Arg::Array(x.into_dyn()),
                    einsat::Arg::Array(y.into_dyn()),
                ],
                &mut einsat::ArgMut::Array(out_t.view_mut().reversed_axes().into_dyn()),
            )
            .unwrap();
        }
        let during = ALLOCS.load(Ordering::SeqCst) - before;
        assert_eq!(during, 0, "views: {during} allocations in 100 calls");
        assert!(Value::Array(out.clone().into_dyn()).approx_eq(
            &Value::Array(out_t.t().to_owned().into_dyn()),
            1e-9,
            1e-9
        ));
    }
    // (the first pair of views against the interpreter on copies; out now
    // holds the second pair's result)
    k.eval_into((a.t(), stepped), &mut out).unwrap();
    assert!(want.approx_eq(&Value::Array(out.into_dyn()), 1e-9, 1e-9));
}
