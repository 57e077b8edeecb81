//! The elementwise epilogue of a GEMM stage (issue 26, item 2): the nest
//! after a matrix product that applies a bias, `max`/`min` or an
//! activation to it. The binary `max` and `min` are emitted inline
//! (`maxsd`/`maxpd` with a NaN check, no call per element): bit for bit
//! the interpreter's Rust `f64::max`/`min` (the first argument's sign of
//! zero when they compare equal, the number when one is NaN) on every
//! pair of special values, in the vector loops (unit stride, every tail
//! length) and the scalar ones (strided, reversed views), in `F64` and
//! `F32`; and the epilogues of the benchmarked rows (MLP layer, GELU,
//! two-layer MLP) after their GEMM stage against the interpreter on
//! offset, huge, tiny and special data, with 1 and 2 threads.
#![cfg(feature = "testing")] // uses the testing support

use crate::common;

use common::load1;
use einsat::interp::{self, Value};
use einsat::jit::{self, Options};
use einsat::{Arg32, Precision, Value32};
use ndarray::{s, Array1, Array2, ArrayD};

/// Every pair of these is tried: NaN, infinities, zeros of both signs,
/// subnormals, huge, tiny and offset numbers.
const SPECIALS: [f64; 14] = [
    f64::NAN,
    f64::NEG_INFINITY,
    -1e300,
    -1.5,
    -0.0,
    0.0,
    4.9e-324,
    -4.9e-324,
    1e-300,
    1.0,
    1e8 + 0.25,
    1e8 + 0.5,
    1e300,
    f64::INFINITY,
];

/// The pairs `(x, y)` of [`SPECIALS`], as two vectors.
fn pairs() -> (Vec<f64>, Vec<f64>) {
    let mut x = Vec::new();
    let mut y = Vec::new();
    for &a in &SPECIALS {
        for &b in &SPECIALS {
            x.push(a);
            y.push(b);
        }
    }
    (x, y)
}

/// `a` and `b` are the same number bit for bit (any NaN equals any NaN).
fn same(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

fn same32(a: f32, b: f32) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

fn arr(v: &Value) -> &ArrayD<f64> {
    match v {
        Value::Array(a) => a,
        _ => panic!("not an array: {v}"),
    }
}

const MAX_MIN: &str = "fn mm(x: [n]R, y: [n]R) -> [n,4]R =
    gen(i:n) gen(c:4) [c == 0] * max(x[i], y[i]) + [c == 1] * min(x[i], y[i])
      + [c == 2] * max(y[i], x[i]) + [c == 3] * min(y[i], x[i])";

const MAX_MIN_ROWS: &str = "fn mr(x: [n]R, y: [n]R) -> [n]R = gen(i:n) max(x[i], y[i])";
const MIN_ROWS: &str = "fn nr(x: [n]R, y: [n]R) -> [n]R = gen(i:n) min(x[i], y[i])";

/// The JIT (`F64`) against the interpreter, bit for bit, for `x`, `y`
/// in C order, every other element (the scalar loop) and reversed.
fn check_f64(src: &str, x: &[f64], y: &[f64]) {
    let f = load1(src);
    let n = x.len();
    let (xa, ya) = (Array1::from_vec(x.to_vec()), Array1::from_vec(y.to_vec()));
    let args = [
        Value::Array(xa.clone().into_dyn()),
        Value::Array(ya.clone().into_dyn()),
    ];
    let want = interp::run(&f, &args).unwrap();
    for threads in [1, 2] {
        let k = jit::compile_with(
            &f,
            &Options {
                threads,
                parallel_threshold: 0,
                ..Options::default()
            },
        )
        .unwrap();
        // C order (vector loops), every other element, reversed
        let mut wide_x = Array1::from_elem(2 * n, 7.0);
        let mut wide_y = Array1::from_elem(2 * n, 7.0);
        wide_x.slice_mut(s![..;2]).assign(&xa);
        wide_y.slice_mut(s![..;2]).assign(&ya);
        let rx = xa.slice(s![..;-1]).to_owned();
        let ry = ya.slice(s![..;-1]).to_owned();
        let views = [
            (xa.view(), ya.view(), false),
            (wide_x.slice(s![..;2]), wide_y.slice(s![..;2]), false),
            (rx.slice(s![..;-1]), ry.slice(s![..;-1]), false),
            (xa.view(), ry.slice(s![..;-1]), true),
        ];
        for (vx, vy, _) in views {
            let got: ArrayD<f64> = k.eval((vx.into_dyn(), vy.into_dyn())).unwrap();
            for (w, g) in arr(&want).iter().zip(got.iter()) {
                assert!(
                    same(*w, *g),
                    "{src} threads {threads}: interp {w:e}, jit {g:e}"
                );
            }
        }
    }
}

/// The JIT in `F32` against the `F32` interpreter, bit for bit.
fn check_f32(src: &str, x: &[f64], y: &[f64]) {
    let f = load1(src);
    let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
    let y32: Vec<f32> = y.iter().map(|&v| v as f32).collect();
    let args = [
        Value::Array(Array1::from_vec(x32.iter().map(|&v| v as f64).collect()).into_dyn()),
        Value::Array(Array1::from_vec(y32.iter().map(|&v| v as f64).collect()).into_dyn()),
    ];
    let want = interp::run_with(&f, &args, Precision::F32).unwrap();
    let k = jit::compile_with(&f, &common::jit_opts(Precision::F32)).unwrap();
    let (xa, ya) = (Array1::from_vec(x32), Array1::from_vec(y32));
    let n = xa.len();
    let mut wide_x = Array1::from_elem(2 * n, 7.0f32);
    wide_x.slice_mut(s![..;2]).assign(&xa);
    for vx in [xa.view(), wide_x.slice(s![..;2])] {
        let got = k
            .call_f32(&[
                Arg32::Array(vx.into_dyn()),
                Arg32::Array(ya.view().into_dyn()),
            ])
            .unwrap();
        let Value32::Array(got) = got else {
            panic!("not an array")
        };
        for (w, g) in arr(&want).iter().zip(got.iter()) {
            assert!(same32(*w as f32, *g), "{src} f32: interp {w:e}, jit {g:e}");
        }
    }
}

#[test]
fn max_and_min_are_the_interpreters_bit_for_bit_on_special_values() {
    let (x, y) = pairs();
    for src in [MAX_MIN, MAX_MIN_ROWS, MIN_ROWS] {
        check_f64(src, &x, &y);
        check_f32(src, &x, &y);
    }
}

#[test]
fn max_and_min_at_every_vector_tail_length() {
    // the vector loop's lanes and its scalar tail: 1 to 9 elements
    let (x, y) = pairs();
    for n in 1..=9 {
        for at in [0, 5, 17, 40, 101, 150] {
            let (xs, ys) = (&x[at..at + n], &y[at..at + n]);
            check_f64(MAX_MIN_ROWS, xs, ys);
            check_f64(MIN_ROWS, xs, ys);
            check_f32(MAX_MIN_ROWS, xs, ys);
        }
    }
}

#[test]
fn inline_max_calls_no_function() {
    // the generated code of `max` and `min` has no call (it had one per
    // element), in the contiguous and the generic layout, F64 and F32
    for src in [MAX_MIN_ROWS, MIN_ROWS, MAX_MIN] {
        let f = load1(src);
        for p in [Precision::F64, Precision::F32] {
            let o = Options {
                precision: p,
                ..Options::default()
            };
            let text = einsat::jit::testing::clif_text(&f, &o).unwrap().join("\n");
            assert!(text.contains("fcmp"), "{text}");
            assert!(!text.contains(" = call "), "{text}");
        }
    }
}

/// Data for the benchmarked rows: `n×k` and `k×m` matrices whose
/// elements are `offset + scale·u` for a fixed pseudo-random `u` in
/// [-1, 1), with `specials` placed along the first row of the left one.
fn matrix(r: usize, c: usize, offset: f64, scale: f64, seed: u64) -> Array2<f64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    Array2::from_shape_fn((r, c), |_| {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        offset + scale * ((s >> 11) as f64 / (1u64 << 52) as f64 - 1.0)
    })
}

const MLP: &str = "fn mlp(X: [n,k]R, W: [k,m]R, b: [m]R) -> [n,m]R =
    gen(i:n, j:m) max(b[j] + sum(l:k) X[i,l] * W[l,j], 0)";
const GELU: &str = "fn g(X: [n,k]R, W: [k,m]R) -> [n,m]R = gen(i:n, j:m)
    let h = sum(l:k) X[i,l] * W[l,j] in
    0.5 * h * (1 + tanh(0.7978845608028654 * (h + 0.044715 * h * h * h)))";
const MLP2: &str = "fn mlp2(X: [n,k]R, W1: [k,m]R, b1: [m]R, W2: [m,p]R) -> [n,p]R =
    let H = gen(i:n, j:m) max(b1[j] + sum(l:k) X[i,l] * W1[l,j], 0) in
    gen(i:n, c:p) sum(j:m) H[i,j] * W2[j,c]";

/// The optimised program of `src` on the JIT (GEMM stages from any
/// size) against the interpreter on the program as written, in F64 with
/// 1 and 2 threads: the same infinities and NaNs, the numbers within
/// `atol` (the products' sums are reordered, as the contract allows).
fn check_row(src: &str, args: &[Value], atol: f64) {
    let f = load1(src);
    let g = einsat::opt::optimize(&f, &einsat::opt::Options::default())
        .unwrap()
        .program;
    let want = interp::run(&f, args).unwrap();
    for threads in [1, 2] {
        let k = jit::compile_with(
            &g,
            &Options {
                threads,
                gemm_min_work: 0,
                parallel_threshold: 0,
                ..Options::default()
            },
        )
        .unwrap();
        assert!(k.stages()[0].starts_with("gemm"), "{:?}", k.stages());
        let got = k.call(args).unwrap();
        let (w, o) = (arr(&want), arr(&got));
        assert_eq!(w.shape(), o.shape());
        for (a, b) in w.iter().zip(o.iter()) {
            let ok = (a.is_nan() && b.is_nan())
                || a == b
                || (a.is_finite() && b.is_finite() && (a - b).abs() <= atol);
            assert!(
                ok,
                "{src} threads {threads} atol {atol:e}: interp {a:e}, jit {b:e}"
            );
        }
    }
}

/// The largest finite magnitude of `a` (0 when there is none).
fn big(a: &Array2<f64>) -> f64 {
    a.iter()
        .filter(|x| x.is_finite())
        .fold(0.0, |m: f64, x| m.max(x.abs()))
}

#[test]
fn benchmarked_rows_agree_on_offset_huge_tiny_and_special_data() {
    // (n, k, m): one row, k = 0, sizes no multiple of a vector or panel
    for (n, k, m) in [(1, 1, 1), (1, 3, 5), (7, 0, 3), (17, 9, 33), (40, 31, 20)] {
        // (offset of X, scale of X, scale of W): offset data, huge
        // products, tiny ones (normal), products in the subnormals
        for (offset, xs, ws) in [
            (0.0, 1.0, 1.0),
            (1e8, 1.0, 1.0),
            (0.0, 1e150, 1e150),
            (0.0, 1e-160, 1.0),
            (0.0, 1e-200, 1e-115),
        ] {
            let x = matrix(n, k, offset, xs, 1);
            let w = matrix(k, m, 0.0, ws, 2);
            let w2 = matrix(m, 6, 0.0, 1.0, 3);
            let b = Array1::from_shape_fn(m, |j| {
                [0.5, -0.0, f64::INFINITY, f64::NAN, -3.0, 1e8][j % 6]
            });
            let mut x_sp = x.clone();
            // specials along the first row: inf, NaN, ±0 reach the epilogue
            for (c, v) in x_sp.row_mut(0).iter_mut().enumerate() {
                *v = [f64::INFINITY, f64::NAN, -0.0, 0.0, f64::NEG_INFINITY][c % 5];
            }
            // a bound on every product's sum, and on the second one's
            let bound = (offset + xs) * ws * k as f64 + 3.0 + 1e8;
            let atol = 1e-9 * bound + 1e-300;
            let atol2 = 1e-9 * bound * big(&w2) * m as f64 + 1e-300;
            for xv in [&x, &x_sp] {
                let xa = Value::Array(xv.clone().into_dyn());
                let wa = Value::Array(w.clone().into_dyn());
                let ba = Value::Array(b.clone().into_dyn());
                let w2a = Value::Array(w2.clone().into_dyn());
                check_row(MLP, &[xa.clone(), wa.clone(), ba.clone()], atol);
                check_row(GELU, &[xa.clone(), wa.clone()], atol);
                check_row(MLP2, &[xa, wa, ba, w2a], atol2);
            }
        }
    }
}
