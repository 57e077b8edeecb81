//! The seven programs of seed 000 with the values `docs/language.md` lists,
//! run in the reference interpreter, in every memory layout of the inputs.
#![cfg(feature = "testing")] // uses the testing support

use einsat::testing::{relayout_value, Layout};
use einsat::{interp, load, Value};
use ndarray::{arr1, arr2, Array3, ArrayD};

const NOTEBOOK: &str = include_str!("../../examples/notebook.tl");

fn v1(x: &[f64]) -> Value {
    Value::Array(arr1(x).into_dyn())
}

fn inputs(name: &str) -> Vec<Value> {
    let x = v1(&[4.0, 7.0, 1.0]);
    let a = Value::Array(arr2(&[[5.0, 2.0, 0.0], [2.2, 0.0, 4.5], [0.0, 6.1, 3.3]]).into_dyn());
    let va = v1(&[9.2, 5.4, 7.1]);
    let vb = v1(&[0.3, 2.1, 1.6]);
    let vc = v1(&[0.0, 0.0, 1.0]);
    let d = Value::Array(
        Array3::from_shape_fn((3, 3, 3), |(i, j, k)| (9 * i + 3 * j + k + 1) as f64).into_dyn(),
    );
    match name {
        "axc" => vec![a, x, vc],
        "tr" => vec![a],
        "diag" => vec![x],
        "ab3" => vec![va, vb],
        "ctrct" => vec![d, va, vb],
        "qprod" => vec![a, x],
        "dprod" => vec![x, va],
        _ => unreachable!(),
    }
}

fn expected(name: &str) -> Value {
    match name {
        "axc" => v1(&[34.0, 13.3, 47.0]),
        "tr" => Value::Real(8.3),
        "diag" => {
            Value::Array(arr2(&[[4.0, 0.0, 0.0], [0.0, 7.0, 0.0], [0.0, 0.0, 1.0]]).into_dyn())
        }
        "ab3" => Value::Real(51.16),
        "ctrct" => v1(&[510.23, 1291.43, 2072.63]),
        "qprod" => Value::Real(275.1),
        "dprod" => Value::Real(593.09),
        _ => unreachable!(),
    }
}

const NAMES: [&str; 7] = ["axc", "tr", "diag", "ab3", "ctrct", "qprod", "dprod"];

#[test]
fn seven_programs_give_the_notebook_values() {
    let prog = load(NOTEBOOK).unwrap();
    for name in NAMES {
        let f = prog.get(name).unwrap();
        let got = interp::run(f, &inputs(name)).unwrap();
        assert!(
            got.approx_eq(&expected(name), 1e-12, 1e-12),
            "{name}: got {got}, expected {}",
            expected(name)
        );
    }
}

#[test]
fn every_layout_gives_the_same_values() {
    let prog = load(NOTEBOOK).unwrap();
    for name in NAMES {
        let f = prog.get(name).unwrap();
        for layout in Layout::ALL {
            let args: Vec<Value> = inputs(name)
                .iter()
                .map(|v| relayout_value(v, layout))
                .collect();
            let multi_dim = args
                .iter()
                .any(|v| matches!(v, Value::Array(a) if a.ndim() > 1));
            // (a 1-dim Fortran array is C order too)
            if layout != Layout::C && (layout != Layout::Fortran || multi_dim) {
                // the layout really is different from C order
                let non_standard = args.iter().any(|v| match v {
                    Value::Array(a) => !a.is_standard_layout(),
                    _ => false,
                });
                assert!(non_standard, "{name}: {layout:?} produced C-order arrays");
            }
            let got = interp::run(f, &args).unwrap();
            assert!(
                got.approx_eq(&expected(name), 1e-12, 1e-12),
                "{name} with {layout:?} inputs: got {got}"
            );
        }
    }
}

#[test]
fn relayout_keeps_contents() {
    let a: ArrayD<f64> =
        Array3::from_shape_fn((2, 3, 4), |(i, j, k)| (i * 100 + j * 10 + k) as f64).into_dyn();
    for layout in Layout::ALL {
        let b = einsat::testing::relayout(&a, layout);
        assert_eq!(a, b, "{layout:?}");
    }
}
