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
