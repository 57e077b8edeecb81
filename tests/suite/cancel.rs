//! Cancelling running calls (issue 22): `jit::Cancel::cancel` from another
//! thread stops a call made in `Cancel::run` — native loops with loops
//! inside poll the flag at their back edges, GEMM stages check it before
//! each panel, nests whose only loop is the outermost run in checked
//! pieces — and the call returns `Error::Interrupted`. Sizes are chosen so
//! that the calls would run for hours; the waits are functional bounds (a
//! call that does not stop fails the test instead of hanging it), not
//! speed assertions.

use einsat::interp::Value;
use einsat::jit::{self, Cancel};
use einsat::{load, Error, Function};
use ndarray::{Array1, ArrayView1, ArrayView2};
use std::sync::mpsc;
use std::time::Duration;

fn get(src: &str) -> Function {
    load(src).unwrap().functions.remove(0)
}

/// Run `call` on a thread under a token, cancel it after a moment, and
/// return what the call returned.
fn cancelled<T: Send + 'static>(
    call: impl FnOnce() -> einsat::Result<T> + Send + 'static,
) -> einsat::Result<T> {
    let cancel = Cancel::new();
    let c = cancel.clone();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(c.run(call));
    });
    std::thread::sleep(Duration::from_millis(300));
    cancel.cancel();
    rx.recv_timeout(Duration::from_secs(120))
        .expect("the cancelled call did not stop")
}

fn interrupted<T: std::fmt::Debug>(r: einsat::Result<T>) {
    match r {
        Err(Error::Interrupted) => {}
        other => panic!("expected Error::Interrupted, got {other:?}"),
    }
}

#[test]
fn a_cancelled_call_stops_in_native_loops() {
    // 2^60 terms in loops of 2^20 (a zero-stride view: no memory)
    let f = get("fn f(x: [n]R) -> R = sum(i:n, j:n, k:n) exp(x[i] * x[j] * x[k])");
    let k = jit::compile_uncached(&f).unwrap();
    let k = std::sync::Arc::new(k);
    let k2 = k.clone();
    interrupted(cancelled(move || {
        let one = [0.5];
        let x = ArrayView1::from(&one[..]);
        let x = x.broadcast(1 << 20).unwrap();
        k2.eval::<f64>((x,))
    }));
    // a token that is not cancelled changes nothing; the kernel still works
    let x = Array1::from(vec![1.0, 2.0]);
    let want: f64 = [1.0f64, 2.0]
        .iter()
        .flat_map(|a| [1.0f64, 2.0].map(move |b| (a, b)))
        .flat_map(|(a, b)| [1.0f64, 2.0].map(move |c| (a * b * c).exp()))
        .sum();
    let got: f64 = Cancel::new().run(|| k.eval((&x,))).unwrap();
    assert!((got - want).abs() <= 1e-12 * want, "{got} vs {want}");
    let got: f64 = k.eval((&x,)).unwrap();
    assert!((got - want).abs() <= 1e-12 * want, "{got} vs {want}");
}

#[test]
fn a_cancelled_call_stops_on_threads_and_in_dense_code() {
    // a matrix product as generated loops (GEMM off), split across two
    // threads: 2^13-cubed multiply-adds
    let f = get("fn mm(A: [n,n]R, B: [n,n]R) -> [n,n]R = gen(i:n, j:n) sum(k:n) A[i,k] * B[k,j]");
    let opts = jit::Options {
        gemm: false,
        threads: 2,
        ..jit::Options::default()
    };
    let k = std::sync::Arc::new(jit::compile_uncached_with(&f, &opts).unwrap());
    interrupted(cancelled(move || {
        let one = [0.5];
        let a = ArrayView1::from(&one[..]);
        let a: ArrayView2<f64> = a.broadcast((1 << 13, 1 << 13)).unwrap();
        k.eval::<ndarray::Array2<f64>>((a, a))
    }));
}

#[test]
fn a_cancelled_call_stops_on_the_gemm_library() {
    // 2^12-cubed multiply-adds on the library, cut into panels
    let f = get("fn mm(A: [n,n]R, B: [n,n]R) -> [n,n]R = gen(i:n, j:n) sum(k:n) A[i,k] * B[k,j]");
    let opts = jit::Options {
        threads: 1,
        ..jit::Options::default()
    };
    let k = std::sync::Arc::new(jit::compile_uncached_with(&f, &opts).unwrap());
    assert!(k.stages()[0].starts_with("gemm"), "{:?}", k.stages());
    interrupted(cancelled(move || {
        let one = [0.5];
        let a = ArrayView1::from(&one[..]);
        let a: ArrayView2<f64> = a.broadcast((1 << 12, 1 << 12)).unwrap();
        k.eval::<ndarray::Array2<f64>>((a, a))
    }));
}

#[test]
fn a_single_loop_nest_runs_in_checked_pieces() {
    // one loop, no loop inside it (no polls in its native code): with
    // much work it runs in pieces, each only while the token is not
    // cancelled; cancelled before the call, nothing runs
    let f = get("fn g(x: [n]R) -> [n]R = gen(i:n) exp(exp(exp(exp(exp(x[i] * 1e-3) * 1e-3) * 1e-3) * 1e-3) * 1e-3)");
    let k = jit::compile_uncached(&f).unwrap();
    let n = 1 << 22;
    let x = Value::Array(Array1::from_elem(n, 0.5).into_dyn());
    let mut out = Value::Array(Array1::zeros(n).into_dyn());
    let cancel = Cancel::new();
    cancel.cancel();
    interrupted(cancel.run(|| k.call_into(std::slice::from_ref(&x), &mut out)));
    let Value::Array(o) = &out else {
        unreachable!()
    };
    assert!(o.iter().all(|&v| v == 0.0), "a piece ran after the cancel");
    // reset: the same call completes
    cancel.reset();
    cancel
        .run(|| k.call_into(std::slice::from_ref(&x), &mut out))
        .unwrap();
    let Value::Array(o) = &out else {
        unreachable!()
    };
    assert!(o.iter().all(|&v| v > 1.0), "{}", o[0]);
}
