//! Typed kernel handles (`Kernel::typed`): the parameter count and every
//! parameter's and the result's kind and rank are checked once, when the
//! handle is made, with every mismatch named; calls through the handle
//! agree with the untyped kernel and still check sizes per call. (That a
//! call with an argument of the wrong rank does not compile is shown by the
//! `compile_fail` examples of `einsat::jit::typed`'s documentation.)

use einsat::ndarray::{array, Array0, Array1, Array2, Array3, ArrayD};
use einsat::{compile_str, Error, Value};

fn kernel(src: &str, name: &str) -> std::sync::Arc<einsat::Kernel> {
    compile_str(src, name, &Default::default()).unwrap()
}

const MV: &str = "fn mv(A: [n,m]R, x: [m]R) -> [n]R = gen(i:n) sum(j:m) A[i,j] * x[j]";

#[test]
fn a_fitting_handle_runs_as_the_kernel_does() {
    let k = kernel(MV, "mv");
    let mv = k
        .clone()
        .typed::<(Array2<f64>, Array1<f64>), Array1<f64>>()
        .unwrap();
    let a = array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
    let x = array![1.0, -1.0, 0.5];
    let y = mv.eval((&a, &x)).unwrap();
    let untyped: Array1<f64> = k.eval((&a, &x)).unwrap();
    assert_eq!(y, untyped);
    assert_eq!(y, array![0.5, 2.0]);
    // views of any layout, as for the untyped kernel
    let at = array![[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]];
    assert_eq!(mv.eval((at.t(), x.view())).unwrap(), y);
    // into a buffer
    let mut out = Array1::zeros(2);
    mv.eval_into((&a, &x), &mut out).unwrap();
    assert_eq!(out, y);
}

#[test]
fn sizes_are_still_checked_per_call() {
    let mv = kernel(MV, "mv")
        .typed::<(Array2<f64>, Array1<f64>), Array1<f64>>()
        .unwrap();
    let a = Array2::<f64>::zeros((2, 3));
    let x = Array1::<f64>::zeros(4);
    let e = mv.eval((&a, &x)).unwrap_err();
    assert!(matches!(e, Error::SizeName { .. }), "{e}");
}

#[test]
fn numbers_pairs_any_rank_and_values() {
    let src = "fn dot(x: [n]R, y: [n]R) -> R = sum(i:n) x[i] * y[i]\n\
               fn scale(c: R, x: [n]R) -> [n]R = gen(i:n) c * x[i]\n\
               fn both(p: ([n]R, [n]R)) -> ([n]R, R) = (gen(i:n) p.0[i] + p.1[i], sum(i:n) p.0[i])";
    let x = array![1.0, 2.0, 3.0];
    let dot = kernel(src, "dot")
        .typed::<(Array1<f64>, Array1<f64>), f64>()
        .unwrap();
    assert_eq!(dot.eval((&x, &x)).unwrap(), 14.0);
    // a 0-dimensional array stands for a number result, ArrayD for any rank
    let dot0 = kernel(src, "dot")
        .typed::<(ArrayD<f64>, Array1<f64>), Array0<f64>>()
        .unwrap();
    assert_eq!(dot0.eval((&x.clone().into_dyn(), &x)).unwrap()[()], 14.0);
    let scale = kernel(src, "scale")
        .typed::<(f64, Array1<f64>), Array1<f64>>()
        .unwrap();
    assert_eq!(scale.eval((2.0, &x)).unwrap(), array![2.0, 4.0, 6.0]);
    let both = kernel(src, "both")
        .typed::<((Array1<f64>, Array1<f64>),), (Array1<f64>, f64)>()
        .unwrap();
    let (v, s) = both.eval(((&x, &x),)).unwrap();
    assert_eq!((v, s), (array![2.0, 4.0, 6.0], 6.0));
    // Value: anything, checked at call time only
    let anyk = kernel(src, "scale")
        .typed::<(Value, Value), Value>()
        .unwrap();
    let r = anyk.eval((2.0, &x)).unwrap();
    assert!(matches!(r, Value::Array(_)));
}

#[test]
fn mismatches_are_all_named_when_the_handle_is_made() {
    let k = kernel(MV, "mv");
    let e = k
        .clone()
        .typed::<(Array1<f64>, Array3<f64>), f64>()
        .unwrap_err();
    let Error::Signature { function, problems } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(function, "mv");
    assert_eq!(
        problems,
        &[
            "parameter `A` is [n,m]R but the handle says an array of 1 dim",
            "parameter `x` is [m]R but the handle says an array of 3 dims",
            "the result is [n]R but the handle says a number (f64)",
        ]
    );
    assert!(e
        .to_string()
        .starts_with("`mv`: the typed handle does not fit: parameter `A`"));
    // the count
    let e = k
        .clone()
        .typed::<(Array2<f64>,), Array1<f64>>()
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("the handle has 1 parameter, the function 2"),
        "{e}"
    );
    // a pair where an array is declared, and the other way round
    let e = k
        .typed::<((Array1<f64>, Array1<f64>), Array1<f64>), (f64, f64)>()
        .unwrap_err();
    let Error::Signature { problems, .. } = &e else {
        panic!("{e:?}")
    };
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems[0].contains("a pair (an array of 1 dim, an array of 1 dim)"));
    assert!(problems[1].contains("the result is [n]R but the handle says a pair"));
}
