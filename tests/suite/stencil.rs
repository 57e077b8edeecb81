//! Stencils with zero padding on the general native path (`jit::emit::loops`:
//! borders peeled, the interior unchecked, `f64x2` vectors unrolled by two
//! with one index register addressing every neighbouring row): padding at
//! every border against hand-computed values, every size from 0 through
//! the unrolled loop, its one-vector step and scalar tail, every layout
//! against the interpreter, reads confined to a view of a larger buffer,
//! and gen results bit-identical for every thread count.
#![cfg(feature = "testing")] // uses the testing support

use einsat::interp::{self, Value};
use einsat::jit;
use einsat::opt::{optimize, Options};
use einsat::syntax::print_function;
use einsat::testing::{random_inputs, relayout_value, Layout};
use einsat::Function;
use ndarray::{Array2, ArrayD, IxDyn};
use rand::SeedableRng;
use std::collections::BTreeMap;

const BLUR: &str = "fn blur(I: [n,m]R) -> [n,m]R =
  gen(y:n, x:m) (I[y-1,x] + I[y+1,x] + I[y,x-1] + I[y,x+1] + I[y,x]) / 5";

/// Widths 0..=13 cover every remainder of the unrolled loop (4 elements),
/// its one-vector step and the scalar tail, each with borders peeled.
const DIMS: &[usize] = &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13];

fn opts(threads: usize) -> jit::Options {
    jit::Options {
        threads,
        // split every nest, however small, so the threaded path runs
        parallel_threshold: if threads > 1 { 0 } else { u64::MAX },
        ..jit::Options::default()
    }
}

/// The program as written and optimised.
fn both(f: &Function) -> [Function; 2] {
    [f.clone(), optimize(f, &Options::default()).unwrap().program]
}

fn arr(v: &Value) -> &ArrayD<f64> {
    match v {
        Value::Array(a) => a,
        other => panic!("expected an array, got {other}"),
    }
}

#[test]
fn blur_of_ones_counts_the_neighbours_inside_at_every_border() {
    // on an image of ones, each pixel is (neighbours inside + 1) / 5: the
    // corners 3/5, the edges 4/5, the interior 1 — zero padding on all
    // four borders, computed here without the interpreter
    let f = einsat::load(BLUR).unwrap().functions.remove(0);
    for g in both(&f) {
        for threads in [1, 2] {
            let k = jit::compile_with(&g, &opts(threads)).unwrap();
            for &n in DIMS {
                for &m in DIMS {
                    let ones = Value::Array(ArrayD::from_elem(IxDyn(&[n, m]), 1.0));
                    for layout in Layout::ALL {
                        let got = k.call(&[relayout_value(&ones, layout)]).unwrap();
                        let got = arr(&got);
                        assert_eq!(got.shape(), &[n, m]);
                        for y in 0..n {
                            for x in 0..m {
                                let inside = usize::from(y > 0)
                                    + usize::from(y + 1 < n)
                                    + usize::from(x > 0)
                                    + usize::from(x + 1 < m)
                                    + 1;
                                let want = inside as f64 / 5.0;
                                let v = got[[y, x]];
                                assert!(
                                    (v - want).abs() <= 1e-15,
                                    "{layout:?} {threads} threads n={n} m={m} at ({y},{x}): {v} != {want}\n{}",
                                    print_function(&g)
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}

/// Stencils the peeling and the vector loops must get right: wide and
/// asymmetric offsets (immediate offsets on one row pointer), a reversed
/// index, a scalar of the outer index only, a row sum beside a stencil,
/// and the neighbours of a `let` temporary.
const STENCILS: &str = "
fn blur(I: [n,m]R) -> [n,m]R =
  gen(y:n, x:m) (I[y-1,x] + I[y+1,x] + I[y,x-1] + I[y,x+1] + I[y,x]) / 5
fn wide(I: [n,m]R) -> [n,m]R =
  gen(y:n, x:m) I[y+2,x-3] * 2 + I[y-2,x+5] - I[y,x+1] * I[y,x-1]
fn rev(I: [n,m]R) -> [n,m]R = gen(y:n, x:m) I[y, 2-x] + I[y-1, x+1]
fn rowscale(I: [n,m]R, s: [n]R) -> [n,m]R =
  gen(y:n, x:m) sin(s[y]) * (I[y,x-1] + I[y,x+1]) + exp(s[y]) * I[y,x]
fn withsum(I: [n,m]R) -> [n,m]R =
  gen(y:n, x:m) I[y,x+1] - I[y,x-1] + sum(k:m) I[y,k] * I[y,k]
fn twice(I: [n,m]R) -> [n,m]R =
  let b = gen(y:n, x:m) I[y,x-1] + I[y,x] + I[y,x+1] in
  gen(y:n, x:m) b[y-1,x] + b[y,x] + b[y+1,x]
";

/// Bit-identical values (NaN equal to NaN).
fn same_bits(a: &Value, b: &Value) -> bool {
    let (a, b) = (arr(a), arr(b));
    a.shape() == b.shape()
        && a.iter()
            .zip(b.iter())
            .all(|(x, y)| x.to_bits() == y.to_bits())
}

#[test]
fn stencils_agree_with_the_interpreter_every_size_and_layout_and_thread_count() {
    let p = einsat::load(STENCILS).unwrap();
    for (fi, f) in p.functions.iter().enumerate() {
        for g in both(f) {
            let ks: Vec<_> = [1, 2, 3]
                .iter()
                .map(|&t| jit::compile_with(&g, &opts(t)).unwrap())
                .collect();
            for (t, &n) in [0usize, 1, 2, 3, 6, 11].iter().enumerate() {
                for &m in DIMS {
                    let sizes: BTreeMap<String, usize> =
                        [("n".to_string(), n), ("m".to_string(), m)]
                            .into_iter()
                            .collect();
                    let mut rng =
                        rand::rngs::StdRng::seed_from_u64((fi * 1000 + t * 100 + m) as u64);
                    let args = random_inputs(f, &sizes, &mut rng).unwrap();
                    let want = interp::run(f, &args).unwrap();
                    for layout in Layout::ALL {
                        let a: Vec<Value> =
                            args.iter().map(|v| relayout_value(v, layout)).collect();
                        let one = ks[0].call(&a).unwrap();
                        assert!(
                            want.approx_eq(&one, 1e-12, 1e-12),
                            "{layout:?} n={n} m={m}\n{}\ninterp {want}\njit    {one}",
                            print_function(&g)
                        );
                        for k in &ks[1..] {
                            let more = k.call(&a).unwrap();
                            assert!(
                                same_bits(&one, &more),
                                "threads change the result: {layout:?} n={n} m={m}\n{}",
                                print_function(&g)
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn stencil_reads_stay_inside_a_view_of_a_larger_buffer() {
    // the image is the interior of a NaN-filled buffer, read in place
    // (C order, and transposed): a read past any border would bring a NaN
    // into the result
    let p = einsat::load(STENCILS).unwrap();
    for name in ["blur", "wide", "rev"] {
        let f = p.get(name).unwrap();
        for g in both(f) {
            let k = jit::compile_with(&g, &opts(1)).unwrap();
            for &n in &[1usize, 2, 3, 7] {
                for &m in DIMS {
                    let mut big = Array2::from_elem((n + 8, m + 8), f64::NAN);
                    let mut img = Array2::zeros((n, m));
                    for y in 0..n {
                        for x in 0..m {
                            img[[y, x]] = (y * 31 + x * 7) as f64 * 0.25 - 3.0;
                        }
                    }
                    big.slice_mut(ndarray::s![4..4 + n, 4..4 + m]).assign(&img);
                    let want = interp::run(f, &[Value::Array(img.clone().into_dyn())]).unwrap();
                    let view = big.slice(ndarray::s![4..4 + n, 4..4 + m]);
                    let got: Array2<f64> = k.eval((&view,)).unwrap();
                    assert!(
                        want.approx_eq(&Value::Array(got.into_dyn()), 1e-12, 1e-12),
                        "{name} n={n} m={m} in a view"
                    );
                    // the transposed buffer holds the image's transpose
                    let mut bigt = Array2::from_elem((m + 8, n + 8), f64::NAN);
                    bigt.slice_mut(ndarray::s![4..4 + m, 4..4 + n])
                        .assign(&img.t());
                    let tv = bigt.slice(ndarray::s![4..4 + m, 4..4 + n]);
                    let tv = tv.t();
                    let got: Array2<f64> = k.eval((&tv,)).unwrap();
                    assert!(
                        want.approx_eq(&Value::Array(got.into_dyn()), 1e-12, 1e-12),
                        "{name} n={n} m={m} in a transposed view"
                    );
                }
            }
        }
    }
}
