//! The borrowed-argument call API (`Kernel::call_args`,
//! `Kernel::call_args_into`): views of every layout read in place, results
//! written into views of every layout, the same checks as `Kernel::call`,
//! all compared with the interpreter.

use einsat::interp::{self, Value};
use einsat::jit::{self, Arg, ArgMut};
use ndarray::{s, Array2, ArrayD, ArrayViewD, ArrayViewMutD, Axis, IxDyn, ShapeBuilder};

const SRC: &str = "
fn matvec(A: [n,m]R, x: [m]R) -> [n]R = gen(i:n) sum(j:m) A[i,j] * x[j]
fn dot(x: [n]R, y: [n]R) -> R = sum(i:n) x[i] * y[i]
fn scale(a: R, B: [n,m]R) -> [n,m]R = gen(i:n, j:m) a * B[i,j] + [j > 0] * B[i,j-1]
fn stats(z: ([n]R, [n]R), X: [n,n]R) -> (R, [n]R) =
  (sum(i:n) z.0[i] * z.1[i], gen(i:n) exp(X[i,i]) / sum(k:n) exp(X[k,i]) + [i > 0] * X[i-1,i])
fn zip(x: [n]R, y: [n]R) -> ([n]R, [n]R) = (gen(i:n) x[i] + y[i], gen(i:n) x[i] * y[i])
fn unzip(z: [n](R,R)) -> [n]R = gen(i:n) z[i].0 * z[i].1
";

fn prog() -> einsat::Program {
    einsat::load(SRC).unwrap()
}

fn kernel(name: &str) -> (einsat::Function, std::sync::Arc<jit::Kernel>) {
    let p = prog();
    let f = p.get(name).unwrap().clone();
    // (optimised: normal form, which the JIT needs)
    let g = einsat::opt::optimize(&f, &Default::default())
        .unwrap()
        .program;
    let k = jit::compile(&g).unwrap();
    (f, k)
}

/// Deterministic, distinct values.
fn data(shape: &[usize], seed: u64) -> ArrayD<f64> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    ArrayD::from_shape_fn(IxDyn(shape), |_| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((x >> 11) as f64 / (1u64 << 53) as f64) * 4.0 - 2.0
    })
}

/// Storage for a 2-d array of logical shape `[r, c]` in one of the layouts
/// the tests use; `view` gives the logical view of it.
struct Stored {
    buf: ArrayD<f64>,
    how: &'static str,
}

const LAYOUTS: [&str; 6] = ["c", "f", "transposed", "stepped", "reversed", "mixed"];

impl Stored {
    /// Storage whose `view()` has the contents of `a` (2-d).
    fn new(a: &ArrayD<f64>, how: &'static str) -> Stored {
        let (r, c) = (a.shape()[0], a.shape()[1]);
        let buf = match how {
            "c" => a.as_standard_layout().to_owned(),
            "f" => {
                let mut f = ArrayD::zeros(IxDyn(&[r, c]).f());
                f.assign(a);
                f
            }
            "transposed" => a.t().as_standard_layout().to_owned(),
            "stepped" => {
                let mut b = ArrayD::from_elem(IxDyn(&[2 * r + 1, 3 * c]), f64::NAN);
                b.slice_mut(s![1..;2, ..;3]).assign(a);
                b
            }
            "reversed" => {
                let mut b = a.to_owned();
                b.invert_axis(Axis(0));
                b.invert_axis(Axis(1));
                b.as_standard_layout().to_owned()
            }
            "mixed" => {
                // transposed storage, rows reversed, every other column
                let mut b = ArrayD::from_elem(IxDyn(&[2 * c, r]), f64::NAN);
                let mut v = b.slice_mut(s![..;2, ..]);
                v.invert_axis(Axis(1));
                v.assign(&a.t());
                b
            }
            _ => unreachable!(),
        };
        Stored { buf, how }
    }

    fn view(&self) -> ArrayViewD<'_, f64> {
        match self.how {
            "c" | "f" => self.buf.view(),
            "transposed" => self.buf.t(),
            "stepped" => self.buf.slice(s![1..;2, ..;3]).into_dyn(),
            "reversed" => {
                let mut v = self.buf.view();
                v.invert_axis(Axis(0));
                v.invert_axis(Axis(1));
                v
            }
            "mixed" => {
                let mut v = self.buf.slice(s![..;2, ..]).into_dyn();
                v.invert_axis(Axis(1));
                v.reversed_axes()
            }
            _ => unreachable!(),
        }
    }

    fn view_mut(&mut self) -> ArrayViewMutD<'_, f64> {
        match self.how {
            "c" | "f" => self.buf.view_mut(),
            "transposed" => self.buf.view_mut().reversed_axes(),
            "stepped" => self.buf.slice_mut(s![1..;2, ..;3]).into_dyn(),
            "reversed" => {
                let mut v = self.buf.view_mut();
                v.invert_axis(Axis(0));
                v.invert_axis(Axis(1));
                v
            }
            "mixed" => {
                let mut v = self.buf.slice_mut(s![..;2, ..]).into_dyn();
                v.invert_axis(Axis(1));
                v.reversed_axes()
            }
            _ => unreachable!(),
        }
    }
}

fn assert_close(got: &Value, want: &Value, what: &str) {
    assert!(
        got.approx_eq(want, 1e-12, 1e-12),
        "{what}: got {got}, want {want}"
    );
}

#[test]
fn stored_layouts_are_what_they_claim() {
    let a = data(&[3, 4], 1);
    for how in LAYOUTS {
        let st = Stored::new(&a, how);
        assert_eq!(st.view(), a.view(), "{how}");
        let strides = st.view().strides().to_vec();
        match how {
            "c" => assert_eq!(strides, [4, 1]),
            "f" => assert_eq!(strides, [1, 3]),
            "transposed" => assert_eq!(strides, [1, 3]),
            "stepped" => assert_eq!(strides, [2 * 12, 3]),
            "reversed" => assert_eq!(strides, [-4, -1]),
            "mixed" => assert_eq!(strides, [-1, 2 * 3]),
            _ => unreachable!(),
        }
    }
}

#[test]
fn views_of_every_layout_agree_with_the_interpreter() {
    let (f, k) = kernel("matvec");
    let a = data(&[5, 7], 2);
    let x = data(&[7], 3);
    let want = interp::run(&f, &[Value::Array(a.clone()), Value::Array(x.clone())]).unwrap();
    // x reversed (negative stride) and stepped
    let mut xr = x.clone();
    xr.invert_axis(Axis(0));
    let xr = xr.as_standard_layout().to_owned();
    let mut xrv = xr.view();
    xrv.invert_axis(Axis(0));
    let xs_store = {
        let mut b = ArrayD::from_elem(IxDyn(&[21]), f64::NAN);
        b.slice_mut(s![..;3]).assign(&x);
        b
    };
    let xs = xs_store.slice(s![..;3]).into_dyn();
    for how in LAYOUTS {
        let st = Stored::new(&a, how);
        for (xname, xv) in [
            ("x", x.view()),
            ("x reversed", xrv.clone()),
            ("x stepped", xs.clone()),
        ] {
            let got = k
                .call_args(&[Arg::Array(st.view()), Arg::Array(xv.clone().reborrow())])
                .unwrap();
            assert_close(&got, &want, &format!("A {how}, {xname}"));
        }
    }
}

#[test]
fn results_go_into_views_of_every_layout() {
    let (f, k) = kernel("scale");
    let b = data(&[4, 6], 4);
    let want = interp::run(&f, &[Value::Real(1.5), Value::Array(b.clone())]).unwrap();
    for bhow in LAYOUTS {
        let bst = Stored::new(&b, bhow);
        for ohow in LAYOUTS {
            let mut ost = Stored::new(&ArrayD::zeros(IxDyn(&[4, 6])), ohow);
            let mut out = ArgMut::Array(ost.view_mut());
            k.call_args_into(&[Arg::Real(1.5), Arg::Array(bst.view())], &mut out)
                .unwrap();
            drop(out);
            assert_close(
                &Value::Array(ost.view().to_owned()),
                &want,
                &format!("B {bhow}, out {ohow}"),
            );
            if matches!(ohow, "stepped" | "mixed") {
                // the gaps of the storage are untouched
                assert_eq!(
                    ost.buf.iter().filter(|v| v.is_nan()).count(),
                    ost.buf.len() - 24,
                    "out {ohow}"
                );
            }
        }
    }
}

#[test]
fn pairs_tuples_and_numbers() {
    let (f, k) = kernel("stats");
    let z0 = data(&[6], 5);
    let z1 = data(&[6], 6);
    let x = data(&[6, 6], 7);
    let want = interp::run(
        &f,
        &[
            Value::pair(Value::Array(z0.clone()), Value::Array(z1.clone())),
            Value::Array(x.clone()),
        ],
    )
    .unwrap();
    for how in LAYOUTS {
        let st = Stored::new(&x, how);
        let args = [
            Arg::pair(Arg::Array(z0.view()), Arg::Array(z1.view())),
            Arg::Array(st.view()),
        ];
        let got = k.call_args(&args).unwrap();
        assert_close(&got, &want, how);
        // into buffers: the number into a 0-d view
        let mut r = ndarray::arr0(0.0).into_dyn();
        let mut v = ArrayD::zeros(IxDyn(&[6]));
        let mut out = ArgMut::pair(ArgMut::Array(r.view_mut()), ArgMut::Array(v.view_mut()));
        k.call_args_into(&args, &mut out).unwrap();
        drop(out);
        let got = Value::pair(Value::Real(r[IxDyn(&[])]), Value::Array(v.clone()));
        assert_close(&got, &want, how);
    }
    // a number result: a 0-d buffer works, anything else is an error
    let (f, k) = kernel("dot");
    let x = data(&[9], 8);
    let want = interp::run(&f, &[Value::Array(x.clone()), Value::Array(x.clone())]).unwrap();
    let args = [Arg::Array(x.view()), Arg::Array(x.view())];
    assert_close(&k.call_args(&args).unwrap(), &want, "dot");
    let mut r = ndarray::arr0(0.0).into_dyn();
    k.call_args_into(&args, &mut ArgMut::Array(r.view_mut()))
        .unwrap();
    assert_close(&Value::Real(r[IxDyn(&[])]), &want, "dot into 0-d");
    let mut v = ArrayD::zeros(IxDyn(&[1]));
    let e = k
        .call_args_into(&args, &mut ArgMut::Array(v.view_mut()))
        .unwrap_err();
    assert!(e.to_string().contains("number"), "{e}");
}

#[test]
fn tuples_and_tensors_of_pairs_as_pairs_of_views() {
    let (f, k) = kernel("zip");
    let x = data(&[5], 9);
    let y = data(&[5], 10);
    let want = interp::run(&f, &[Value::Array(x.clone()), Value::Array(y.clone())]).unwrap();
    let mut yr = y.view();
    yr.invert_axis(Axis(0));
    let yr = yr.to_owned();
    let mut yv = yr.view();
    yv.invert_axis(Axis(0));
    let got = k
        .call_args(&[Arg::Array(x.view()), Arg::Array(yv.clone())])
        .unwrap();
    assert_close(&got, &want, "zip");
    let mut o = Array2::<f64>::zeros((2, 5));
    let (mut o0, mut o1) = o.view_mut().split_at(Axis(0), 1);
    let mut out = ArgMut::pair(
        ArgMut::Array(o0.index_axis_mut(Axis(0), 0).into_dyn()),
        ArgMut::Array(o1.index_axis_mut(Axis(0), 0).into_dyn()),
    );
    k.call_args_into(&[Arg::Array(x.view()), Arg::Array(yv)], &mut out)
        .unwrap();
    drop(out);
    let got = Value::pair(
        Value::Array(o.row(0).to_owned().into_dyn()),
        Value::Array(o.row(1).to_owned().into_dyn()),
    );
    assert_close(&got, &want, "zip into rows");
    // a tensor of pairs: a pair of views
    let (f, k) = kernel("unzip");
    let want = interp::run(
        &f,
        &[Value::pair(
            Value::Array(x.clone()),
            Value::Array(y.clone()),
        )],
    )
    .unwrap();
    let mut yv = yr.view();
    yv.invert_axis(Axis(0));
    let got = k
        .call_args(&[Arg::pair(Arg::Array(x.view()), Arg::Array(yv))])
        .unwrap();
    assert_close(&got, &want, "unzip");
}

#[test]
fn refusals_match_the_value_api() {
    let (_, k) = kernel("matvec");
    let a = data(&[3, 4], 11);
    let x = data(&[5], 12);
    let x4 = data(&[4], 12);
    let m = data(&[4, 1], 13);
    // (the value API's message for the same mistake)
    let same = |args: &[Arg], vals: &[Value]| {
        let e1 = k.call_args(args).unwrap_err().to_string();
        let e2 = k.call(vals).unwrap_err().to_string();
        assert_eq!(e1, e2);
        e1
    };
    let e = same(
        &[Arg::Array(a.view()), Arg::Array(x.view())],
        &[Value::Array(a.clone()), Value::Array(x.clone())],
    );
    assert!(e.contains("size `m`"), "{e}");
    let e = same(&[Arg::Array(a.view())], &[Value::Array(a.clone())]);
    assert!(e.contains("takes 2 arguments"), "{e}");
    let e = same(
        &[Arg::Array(a.view()), Arg::Array(m.view())],
        &[Value::Array(a.clone()), Value::Array(m.clone())],
    );
    assert!(e.contains("dims"), "{e}");
    let e = same(
        &[Arg::Array(a.view()), Arg::Real(1.0)],
        &[Value::Array(a.clone()), Value::Real(1.0)],
    );
    assert!(e.contains("a number"), "{e}");
    // output buffers: wrong shape, a pair for an array (a mutable view
    // with overlapping elements cannot be made in safe Rust)
    let args = [Arg::Array(a.view()), Arg::Array(x4.view())];
    let mut o = ArrayD::zeros(IxDyn(&[4]));
    let e = k
        .call_args_into(&args, &mut ArgMut::Array(o.view_mut()))
        .unwrap_err();
    assert!(e.to_string().contains("shape"), "{e}");
    let mut p0 = ArrayD::zeros(IxDyn(&[3]));
    let mut p1 = ArrayD::zeros(IxDyn(&[3]));
    let e = k
        .call_args_into(
            &args,
            &mut ArgMut::pair(ArgMut::Array(p0.view_mut()), ArgMut::Array(p1.view_mut())),
        )
        .unwrap_err();
    assert!(e.to_string().contains("must be an array"), "{e}");
}

// ---------------------------------------------------------------------
// Idiomatic calls (`eval`, `eval_into`) and typed results.

#[test]
fn eval_takes_arrays_and_views_of_any_dimension_and_returns_typed_results() {
    use ndarray::{array, Array0, Array1, Array2};
    let (f, k) = kernel("matvec");
    let a = data(&[3, 4], 20)
        .into_dimensionality::<ndarray::Ix2>()
        .unwrap();
    let x = data(&[4], 21)
        .into_dimensionality::<ndarray::Ix1>()
        .unwrap();
    let want = interp::run(
        &f,
        &[
            Value::Array(a.clone().into_dyn()),
            Value::Array(x.clone().into_dyn()),
        ],
    )
    .unwrap();
    let y: Array1<f64> = k.eval((&a, &x)).unwrap();
    assert_close(&Value::Array(y.into_dyn()), &want, "Array1");
    let y: ArrayD<f64> = k.eval((a.view(), x.view())).unwrap();
    assert_close(&Value::Array(y), &want, "ArrayD from views");
    let y: Value = k
        .eval([
            Arg::Array(a.view().into_dyn()),
            Arg::Array(x.view().into_dyn()),
        ])
        .unwrap();
    assert_close(&y, &want, "Value from Args");
    // a transposed storage read through `.t()`
    let at = a.t().as_standard_layout().to_owned();
    let y: Array1<f64> = k.eval((at.t(), &x)).unwrap();
    assert_close(&Value::Array(y.into_dyn()), &want, "transposed");
    // into a stepped view, and into an owned array
    let mut big = Array1::from_elem(7, f64::NAN);
    k.eval_into((&a, &x), big.slice_mut(s![..;3])).unwrap();
    assert_close(
        &Value::Array(big.slice(s![..;3]).to_owned().into_dyn()),
        &want,
        "into stepped",
    );
    assert!(big[1].is_nan() && big[5].is_nan());
    let mut o = Array1::zeros(3);
    k.eval_into((&a, &x), &mut o).unwrap();
    assert_close(&Value::Array(o.into_dyn()), &want, "into owned");
    // a wrong result type is an error naming both
    let e = k.eval::<Array2<f64>>((&a, &x)).unwrap_err();
    assert!(
        matches!(&e, einsat::Error::Result { found: einsat::error::Found::Array(s), .. } if s == &[3]),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "the result is an array of shape [3], not an array with 2 dims"
    );
    assert!(matches!(
        k.eval::<f64>((&a, &x)),
        Err(einsat::Error::Result { .. })
    ));
    assert!(matches!(
        k.eval::<(f64, f64)>((&a, &x)),
        Err(einsat::Error::Result { .. })
    ));

    // numbers: f64 in and out, 0-d arrays in and out
    let (f, k) = kernel("scale");
    let b = array![[1.0, 2.0], [3.0, 4.0]];
    let want = interp::run(&f, &[Value::Real(2.0), Value::Array(b.clone().into_dyn())]).unwrap();
    let r: Array2<f64> = k.eval((2.0, &b)).unwrap();
    assert_close(&Value::Array(r.into_dyn()), &want, "scale");
    let two: Array0<f64> = ndarray::arr0(2.0);
    let r: Array2<f64> = k.eval((&two, &b)).unwrap();
    assert_close(&Value::Array(r.into_dyn()), &want, "scale by a 0-d array");
    let (_, k) = kernel("dot");
    let v = array![1.0, 2.0, 3.0];
    assert_eq!(k.eval::<f64>((&v, &v)).unwrap(), 14.0);
    let r: Array0<f64> = k.eval((&v, &v)).unwrap();
    assert_eq!(r[()], 14.0);
    let mut r = ndarray::arr0(0.0);
    k.eval_into((&v, v.view()), &mut r).unwrap();
    assert_eq!(r[()], 14.0);

    // pairs: a tuple for a pair parameter, a tuple result into a tuple
    let (f, k) = kernel("stats");
    let z0 = data(&[5], 22);
    let z1 = data(&[5], 23);
    let xx = data(&[5, 5], 24);
    let want = interp::run(
        &f,
        &[
            Value::pair(Value::Array(z0.clone()), Value::Array(z1.clone())),
            Value::Array(xx.clone()),
        ],
    )
    .unwrap();
    let (s, v): (f64, Array1<f64>) = k.eval(((&z0, &z1), xx.t().t())).unwrap();
    assert_close(
        &Value::pair(Value::Real(s), Value::Array(v.into_dyn())),
        &want,
        "stats",
    );
    let mut s = ndarray::arr0(0.0);
    let mut v = Array1::zeros(5);
    k.eval_into(((&z0, &z1), &xx), (&mut s, &mut v)).unwrap();
    assert_close(
        &Value::pair(Value::Real(s[()]), Value::Array(v.into_dyn())),
        &want,
        "stats into",
    );
}

/// Every call error is its own variant with its data, and its message.
#[test]
fn call_errors_are_typed() {
    use einsat::error::{Found, OutputProblem};
    use einsat::Error;
    use ndarray::{array, Array1};
    let (_, k) = kernel("matvec");
    let a = array![[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]];
    let x2 = array![1.0, 2.0];
    let x3 = array![1.0, 2.0, 3.0];

    let e = k.eval::<Value>((&a,)).unwrap_err();
    assert!(
        matches!(&e, Error::Arity { function, expected: 2, got: 1 } if function == "matvec"),
        "{e:?}"
    );
    assert_eq!(e.to_string(), "`matvec` takes 2 arguments, got 1");

    let e = k.eval::<Value>((&a, &a)).unwrap_err();
    assert!(
        matches!(&e, Error::Rank { expected: 1, found: Found::Array(s), .. } if s == &[3, 2]),
        "{e:?}"
    );
    assert_eq!(e.to_string(), "argument `x` ([m]R): expected 1 dims, got 2");
    let e = k.eval::<Value>((&a, 1.0)).unwrap_err();
    assert!(
        matches!(
            &e,
            Error::Rank {
                expected: 1,
                found: Found::Number,
                ..
            }
        ),
        "{e:?}"
    );

    let e = k.eval::<Value>((&a, &x3)).unwrap_err();
    assert!(
        matches!(&e, Error::SizeName { size, first: 2, got: 3, axis: 0, .. } if size == "m"),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "size `m` is 2 from argument `A` ([n,m]R) but 3 from argument `x` ([m]R) (axis 0)"
    );

    let (_, ks) = kernel("stats");
    let z = array![1.0, 2.0];
    let x22 = array![[1.0, 2.0], [3.0, 4.0]];
    let e = ks.eval::<Value>((&z, &x22)).unwrap_err();
    assert!(
        matches!(
            &e,
            Error::NotPair {
                found: Found::Array(_),
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .contains("expected a pair of values, got an array of shape [2]"),
        "{e}"
    );

    let lit = einsat::load("fn f(x: [3]R) -> R = sum(i:3) x[i]").unwrap();
    let kl = jit::compile(&lit.functions[0]).unwrap();
    let e = kl.eval::<f64>((&x2,)).unwrap_err();
    assert!(
        matches!(
            &e,
            Error::Shape {
                axis: 0,
                expected: 3,
                got: 2,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "argument `x` ([3]R): axis 0 has size 2 but the type says 3"
    );

    // an axis beyond the element limit (a broadcast view: no memory)
    let one = [1.0];
    let one = ndarray::ArrayView1::from(&one[..]);
    let huge = one.broadcast(1usize << 32).unwrap();
    let e = kl.eval::<f64>((huge,)).unwrap_err();
    assert!(
        matches!(&e, Error::TooLarge { elements, .. } if *elements == 1u128 << 32),
        "{e:?}"
    );
    assert!(e.to_string().contains("too large"), "{e}");

    // output buffers
    let mut o = Array1::zeros(2);
    let e = k.eval_into((&a, &x2), &mut o).unwrap_err();
    assert!(
        matches!(&e, Error::Output { problem: OutputProblem::Shape { expected, got }, .. } if expected == &[3] && got == &[2]),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "the output buffer has shape [2], but the result has shape [3]"
    );
    let mut v = Value::Real(0.0);
    let e = k
        .call_into(
            &[
                Value::Array(a.clone().into_dyn()),
                Value::Array(x2.clone().into_dyn()),
            ],
            &mut v,
        )
        .unwrap_err();
    assert!(
        matches!(
            &e,
            Error::Output {
                problem: OutputProblem::NotArray(Found::Number),
                ..
            }
        ),
        "{e:?}"
    );
    let mut o3 = Array1::zeros(3);
    let mut p = ndarray::arr0(0.0);
    let e = k.eval_into((&a, &x2), (&mut o3, &mut p)).unwrap_err();
    assert!(
        matches!(
            &e,
            Error::Output {
                problem: OutputProblem::NotArray(Found::Pair),
                ..
            }
        ),
        "{e:?}"
    );
    let e = ks.eval_into(((&z, &z), &x22), &mut o3).unwrap_err();
    assert!(
        matches!(
            &e,
            Error::Output {
                problem: OutputProblem::NotPair(Found::Array(_)),
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .contains("must be a pair (the result is a tuple)"),
        "{e}"
    );
    let mut s2 = Array1::zeros(2);
    let e = ks
        .eval_into(((&z, &z), &x22), (&mut s2, &mut o3))
        .unwrap_err();
    assert!(
        matches!(&e, Error::Output { buffer, problem: OutputProblem::NotNumber(Found::Array(_)) } if buffer == "buffer.0"),
        "{e:?}"
    );

    // named arguments
    let f = prog().get("matvec").unwrap().clone();
    let mut named = std::collections::BTreeMap::new();
    named.insert("A".to_string(), Value::Array(a.clone().into_dyn()));
    let e = interp::order_named(&f, named.clone()).unwrap_err();
    assert!(
        matches!(&e, Error::MissingArgument { parameter, .. } if parameter == "x"),
        "{e:?}"
    );
    assert_eq!(e.to_string(), "missing argument `x` ([m]R) of `matvec`");
    named.insert("x".to_string(), Value::Real(1.0));
    named.insert("z".to_string(), Value::Real(1.0));
    let e = interp::order_named(&f, named).unwrap_err();
    assert!(
        matches!(&e, Error::UnknownArgument { name, parameters, .. } if name == "z" && parameters == &["A", "x"]),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "`matvec` has no parameter `z` (parameters: A, x)"
    );
    for e in [
        k.eval::<Value>((&a,)).unwrap_err(),
        k.eval::<Value>((&a, &x3)).unwrap_err(),
        k.eval_into((&a, &x2), &mut o).unwrap_err(),
    ] {
        assert!(e.is_call(), "{e:?}");
    }
    assert!(!einsat::load("fn f(").unwrap_err().is_call());
    assert!(!k.eval::<f64>((&a, &x2)).unwrap_err().is_call());
}

#[test]
fn parse_and_type_errors_show_where_they_are() {
    use einsat::Error;
    let src = "fn f(x: [n]R) -> R =\n  sum(i:n) x[i] +\n";
    let e = einsat::load(src).unwrap_err();
    let Error::Parse(d) = &e else { panic!("{e:?}") };
    assert_eq!(d.source.as_ref().unwrap().name, "<input>");
    assert!(d.positions()[0].is_some());
    let shown = e.to_string();
    assert!(shown.starts_with("<input>:"), "{shown}");
    assert!(shown.contains(" | "), "{shown}");
    assert!(shown.contains('^'), "{shown}");

    let src = "fn f(x: [n]R) -> R =\n  sum(i:n) y[i]\nfn g(x: R) -> R = x[0]";
    let e = einsat::load_named(src, "t.tl").unwrap_err();
    let Error::Type(d) = &e else { panic!("{e:?}") };
    assert_eq!(d.len(), 2);
    assert_eq!(d.positions()[0], Some((2, 12)));
    assert_eq!(d.positions()[1].map(|p| p.0), Some(3));
    let shown = e.to_string();
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(lines[0], "t.tl:2:12: error: unknown name `y`", "{shown}");
    assert_eq!(lines[1], "    2 |   sum(i:n) y[i]", "{shown}");
    assert_eq!(lines[2], "      |            ^", "{shown}");
    assert!(lines[3].starts_with("t.tl:3:"), "{shown}");
    // without a source: the messages, no position
    let bare = Error::types(d.diagnostics.clone());
    assert!(
        bare.to_string()
            .starts_with("type error: unknown name `y`; "),
        "{bare}"
    );
    assert_eq!(
        bare.with_source("u.tl", src).to_string().lines().next(),
        Some("u.tl:2:12: error: unknown name `y`")
    );
}

/// A kernel remembers its last checked call per workspace and skips the
/// checks for a call with the same leaves (kinds, shapes, strides): calls
/// alternating sizes, layouts, refusals and pair structure on one kernel
/// each get the interpreter's result, or the same error as a kernel that
/// has never been called.
#[test]
fn remembered_calls_are_rechecked_when_anything_changes() {
    for name in ["matvec", "stats", "scale"] {
        let (f, k) = kernel(name);
        let fresh = || {
            let g = einsat::opt::optimize(&f, &Default::default())
                .unwrap()
                .program;
            jit::compile_uncached(&g).unwrap()
        };
        // (shapes; C or Fortran order) in an order that revisits each
        let cases: Vec<(usize, usize, bool)> = vec![
            (3, 4, false),
            (3, 4, false),
            (3, 4, true),
            (5, 4, false),
            (3, 4, false),
            (3, 3, true),
            (3, 3, true),
        ];
        for (step, &(n, m, fortran)) in cases.iter().enumerate() {
            let arr = |shape: &[usize], seed: u64| {
                let a = data(shape, seed + step as u64);
                if fortran && shape.len() == 2 {
                    let mut t = ArrayD::zeros(IxDyn(shape).f());
                    t.assign(&a);
                    Value::Array(t)
                } else {
                    Value::Array(a)
                }
            };
            let args: Vec<Value> = match name {
                "matvec" => vec![arr(&[n, m], 1), arr(&[m], 2)],
                "stats" => vec![Value::pair(arr(&[n], 1), arr(&[n], 2)), arr(&[n, n], 3)],
                _ => vec![Value::Real(1.5), arr(&[n, m], 4)],
            };
            let want = interp::run(&f, &args).unwrap();
            let got = k.call(&args).unwrap();
            assert_close(&got, &want, &format!("{name} call {step}"));
            // into a buffer of the right shape (twice: the second call is
            // the remembered one)
            let mut out = got.clone();
            for _ in 0..2 {
                k.call_into(&args, &mut out).unwrap();
                assert_close(&out, &want, &format!("{name} call_into {step}"));
            }
            // a refusal right after a remembered call: the same error as
            // a fresh kernel's, and the next good call is still right
            let mut bad = args.clone();
            bad.pop();
            assert_eq!(
                k.call(&bad).unwrap_err().to_string(),
                fresh().call(&bad).unwrap_err().to_string()
            );
            let mut wrong_out = match &want {
                Value::Array(a) => Value::Array(ArrayD::zeros(IxDyn(&[a.len() + 1]))),
                _ => Value::Real(0.0),
            };
            let e = k.call_into(&args, &mut wrong_out);
            let e0 = fresh().call_into(&args, &mut wrong_out);
            assert_eq!(e.is_err(), e0.is_err(), "{name}: {e:?} vs {e0:?}");
            if let (Err(a), Err(b)) = (e, e0) {
                assert_eq!(a.to_string(), b.to_string());
            }
            k.call_into(&args, &mut out).unwrap();
            assert_close(&out, &want, &format!("{name} after refusal {step}"));
        }
    }
    // a rank-0 parameter given as a number, then as a 0-d array, then a
    // pair (refused), through the remembered path
    let (f, k) = kernel("scale");
    let b = Value::Array(data(&[2, 3], 9));
    for a in [
        Value::Real(2.0),
        Value::Array(ArrayD::from_elem(IxDyn(&[]), 2.0)),
        Value::Real(-1.0),
    ] {
        let args = vec![a, b.clone()];
        let want = interp::run(&f, &args).unwrap();
        let mut out = want.clone();
        for _ in 0..2 {
            k.call_into(&args, &mut out).unwrap();
            assert_close(&out, &want, "scale");
        }
        let bad = vec![Value::pair(Value::Real(1.0), Value::Real(2.0)), b.clone()];
        assert!(k.call_into(&bad, &mut out).is_err());
        assert_eq!(
            k.call(&bad).unwrap_err().to_string(),
            jit::compile_uncached(k.function())
                .unwrap()
                .call(&bad)
                .unwrap_err()
                .to_string()
        );
    }
}

/// The remembered path of `eval`/`eval_into` (views lending their shapes
/// and strides) and of a kernel of several nests run as one native call:
/// each call, made twice so that the second is the remembered one, agrees
/// with the interpreter whatever changes between calls (layout of an
/// argument, of the output, sizes), and a refusal in between is the
/// fresh kernel's error.
#[test]
fn remembered_eval_calls_are_rechecked_when_anything_changes() {
    use ndarray::{arr0, Array1};
    let p = einsat::load(
        "fn crossdot(a: [3]R, b: [3]R, c: [3]R, d: [3]R) -> R =
           sum(i:3) (sum(j:3, k:3) eps[i,j,k] * a[j] * b[k]) * (sum(l:3, m:3) eps[i,l,m] * c[l] * d[m])",
    )
    .unwrap();
    let f = p.get("crossdot").unwrap().clone();
    // the fast mode's form, (a·c)(b·d) - (a·d)(b·c): several nests (the
    // default mode keeps the cross products, more accurate for nearly
    // parallel vectors)
    let fast = einsat::opt::Options {
        fast_math: true,
        ..Default::default()
    };
    let g = einsat::opt::optimize(&f, &fast).unwrap().program;
    let k = jit::compile_uncached(&g).unwrap();
    assert!(k.stages().len() > 1, "{:?}", k.stages());
    let fresh = || jit::compile_uncached(&g).unwrap();
    // storage of 6 elements read as 3: contiguous, every other, reversed
    let store: Vec<ArrayD<f64>> = (0..4).map(|s| data(&[6], 20 + s)).collect();
    let view = |s: &ArrayD<f64>, how: usize| match how {
        0 => s.slice(s![..3]).into_owned().into_dyn(),
        1 => s.slice(s![..;2]).into_owned().into_dyn(),
        _ => s.slice(s![..3;-1]).into_owned().into_dyn(),
    };
    for (step, how) in [0, 0, 1, 2, 1, 0, 2].into_iter().enumerate() {
        let vals: Vec<Value> = store
            .iter()
            .enumerate()
            .map(|(i, s)| Value::Array(view(s, (how + i) % 3)))
            .collect();
        let want = match interp::run(&f, &vals).unwrap() {
            Value::Real(x) => x,
            v => panic!("{v}"),
        };
        let close = |x: f64| (x - want).abs() <= 1e-12 * (1.0 + want.abs());
        let v = |i: usize| match (how + i) % 3 {
            0 => store[i].slice(s![..3]),
            1 => store[i].slice(s![..;2]),
            _ => store[i].slice(s![..3;-1]),
        };
        for _ in 0..2 {
            let x: f64 = k.eval((v(0), v(1), v(2), v(3))).unwrap();
            assert!(close(x), "crossdot eval {step}: {x} vs {want}");
            let mut o = arr0(0.0);
            k.eval_into((v(0), v(1), v(2), v(3)), &mut o).unwrap();
            assert!(close(o[()]), "crossdot eval_into {step}");
            let x: f64 = k
                .eval(vec![
                    Arg::Array(v(0).into_dyn()),
                    Arg::Array(v(1).into_dyn()),
                    Arg::Array(v(2).into_dyn()),
                    Arg::Array(v(3).into_dyn()),
                ])
                .unwrap();
            assert!(close(x), "crossdot eval of a Vec<Arg> {step}");
        }
        // a refusal right after a remembered call (a wrong size, then a
        // number for an array): the fresh kernel's error
        let short = store[0].slice(s![..2]);
        let e = k.eval::<f64>((v(0), short, v(2), v(3))).unwrap_err();
        let e0 = fresh().eval::<f64>((v(0), short, v(2), v(3))).unwrap_err();
        assert_eq!(e.to_string(), e0.to_string());
        let e = k.eval::<f64>((v(0), 1.0, v(2), v(3))).unwrap_err();
        let e0 = fresh().eval::<f64>((v(0), 1.0, v(2), v(3))).unwrap_err();
        assert_eq!(e.to_string(), e0.to_string());
        let x: f64 = k.eval((v(0), v(1), v(2), v(3))).unwrap();
        assert!(close(x), "crossdot after refusal {step}");
    }

    // matvec through eval_into: argument layouts, output strides and
    // sizes change between calls
    let (f, k) = kernel("matvec");
    let cases = [
        (3, 4, 0, 0),
        (3, 4, 0, 0),
        (3, 4, 1, 0),
        (3, 4, 1, 1),
        (5, 4, 2, 1),
        (3, 4, 0, 0),
    ];
    for (step, &(n, m, la, lo)) in cases.iter().enumerate() {
        let a = data(&[n, m], 30 + step as u64);
        let x = data(&[m], 40 + step as u64);
        let st = Stored::new(&a, LAYOUTS[la]);
        let want = interp::run(&f, &[Value::Array(a.clone()), Value::Array(x.clone())]).unwrap();
        let mut buf = Array1::<f64>::zeros(2 * n);
        for _ in 0..2 {
            buf.fill(f64::NAN);
            let out = if lo == 0 {
                buf.slice_mut(s![..n])
            } else {
                buf.slice_mut(s![..;2])
            };
            k.eval_into((st.view(), &x), out).unwrap();
            let got = if lo == 0 {
                buf.slice(s![..n]).to_owned()
            } else {
                buf.slice(s![..;2]).to_owned()
            };
            assert_close(
                &Value::Array(got.into_dyn()),
                &want,
                &format!("matvec {step}"),
            );
            let y: Array1<f64> = k.eval((st.view(), x.view())).unwrap();
            assert_close(
                &Value::Array(y.into_dyn()),
                &want,
                &format!("matvec eval {step}"),
            );
        }
        // an output of the wrong length after a remembered call
        let mut wrong = Array1::<f64>::zeros(n + 1);
        let e = k.eval_into((st.view(), &x), &mut wrong).unwrap_err();
        let e0 = jit::compile_uncached(k.function())
            .unwrap()
            .eval_into((st.view(), &x), &mut wrong)
            .unwrap_err();
        assert_eq!(e.to_string(), e0.to_string());
    }
}
