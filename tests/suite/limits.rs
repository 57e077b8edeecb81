//! The 2^31 limits at the call boundary for every caller (issue 22): an
//! axis of at most 2^31 and at most 2^31 elements per argument, also for
//! borrowed views whose zero strides make a huge array cost nothing (as
//! numpy's `broadcast_to` does from Python). Before, the JIT's fast
//! signature check let them through: index arithmetic wrapped (a wrong
//! value) or a 2^59-iteration loop ran.

use einsat::jit::{self, Arg};
use einsat::{load, Error};
use ndarray::{ArrayView1, ArrayView2, IxDyn};

fn too_large(r: einsat::Result<f64>, what: &str) {
    match r {
        Err(e @ Error::TooLarge { .. }) => {
            assert!(e.to_string().contains(what), "{e}");
            assert!(e.is_call());
        }
        other => panic!("expected TooLarge ({what}), got {other:?}"),
    }
}

#[test]
fn zero_stride_views_past_the_limits_are_refused() {
    let p = load(
        "fn s(x: [n]R) -> R = sum(i:n) x[i]
         fn t(A: [n,m]R) -> R = sum(i:n, j:m) A[i,j]
         fn u(A: [n,m]R) -> R = sum(j:m) 1 + sum(i:n) A[i,j]",
    )
    .unwrap();
    let [s, t, u] = ["s", "t", "u"].map(|f| jit::compile(p.get(f).unwrap()).unwrap());
    let one = [0.5];
    let v = ArrayView1::from(&one[..]);
    // warm up the remembered-call path with a small call first
    assert_eq!(s.eval::<f64>((v,)).unwrap(), 0.5);
    too_large(
        s.eval((v.broadcast(1usize << 40).unwrap(),)),
        "argument `x` ([n]R): axis 0",
    );
    // each axis within the limit, 2^59 elements in all
    let big: ArrayView2<f64> = v.broadcast((1usize << 30, 1usize << 29)).unwrap();
    too_large(t.eval((big,)), "argument `A`");
    // empty, but an axis past the limit (a sum over it alone would run)
    let empty: ArrayView2<f64> = v.broadcast((0, 1usize << 40)).unwrap();
    too_large(u.eval((empty,)), "axis 1");
    // through `call_args` too
    let a = [Arg::Array(v.broadcast(IxDyn(&[1usize << 40])).unwrap())];
    assert!(matches!(s.call_args(&a), Err(Error::TooLarge { .. })));
    // at the limit: accepted and exact (no index arithmetic wraps)
    assert_eq!(
        s.eval::<f64>((v.broadcast(1usize << 31).unwrap(),))
            .unwrap(),
        (1u64 << 30) as f64
    );
}
