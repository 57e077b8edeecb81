//! Complex matrix products on the GEMM stage (issue 25): the two parts of a
//! pair result that are `(Σ x0·y0 − x1·y1, Σ x0·y1 + x1·y0)` run as real
//! GEMMs (`schedule::gemm::plan_complex`). Every written form (components
//! swapped, terms and factors reordered, the result's parts swapped,
//! transposed operands, matrix–vector, batched, one part of a larger
//! program) is staged; near misses are not, and still compute the written
//! values. Every form agrees with the interpreter on sizes with 0, 1 and
//! odd sizes, in every layout of the arguments and of the output (filled
//! with NaN first), on 1 and 2 threads, and with the contract's oracle on
//! every value class (offset data, huge and tiny magnitudes, inf and NaN),
//! in F64 and F32. The oracle itself still catches a wrong sign.
#![cfg(feature = "testing")] // uses the testing support

use einsat::interp::random::ValueClass;
use einsat::interp::{self, Value};
use einsat::jit::{self, Options};
use einsat::precision::Precision;
use einsat::testing::difftest::{
    check, contract_judge, inputs_with_zero, Case, DiffConfig, Verdict,
};
use einsat::testing::{random_inputs, relayout_value, zeros_like, Layout};
use einsat::Function;
use rand::SeedableRng;
use std::collections::BTreeMap;

fn func(src: &str) -> Function {
    einsat::load(src)
        .unwrap_or_else(|e| panic!("{e}\n{src}"))
        .functions
        .remove(0)
}

fn opts(gemm: bool, threads: usize) -> Options {
    Options {
        gemm,
        threads,
        gemm_min_work: 0,
        ..Options::default()
    }
}

fn stages(f: &Function) -> Vec<String> {
    jit::compile_with(f, &opts(true, 1)).unwrap().stages()
}

fn complex_stages(f: &Function) -> usize {
    stages(f)
        .iter()
        .filter(|s| s.starts_with("complex gemm"))
        .count()
}

/// `examples/complex.tl`'s product.
const CMM: &str = "fn cmm(A: [n,m](R,R), B: [m,k](R,R)) -> [n,k](R,R) = \
  gen(i:n, l:k) (sum(j:m) A[i,j].0*B[j,l].0 - A[i,j].1*B[j,l].1, \
                 sum(j:m) A[i,j].0*B[j,l].1 + A[i,j].1*B[j,l].0)";

/// Every form that must be staged (two complex parts each).
const STAGED: [&str; 9] = [
    CMM,
    // terms and factors in another order, the subtraction as `-x + y`
    "fn c(A: [n,m](R,R), B: [m,k](R,R)) -> [n,k](R,R) = \
     gen(i:n, l:k) (sum(j:m) -(B[j,l].1*A[i,j].1) + B[j,l].0*A[i,j].0, \
                    sum(j:m) B[j,l].0*A[i,j].1 + A[i,j].0*B[j,l].1)",
    // components swapped in the operands: (.1 real, .0 imaginary)
    "fn c(A: [n,m](R,R), B: [m,k](R,R)) -> [n,k](R,R) = \
     gen(i:n, l:k) (sum(j:m) A[i,j].1*B[j,l].1 - A[i,j].0*B[j,l].0, \
                    sum(j:m) A[i,j].1*B[j,l].0 + A[i,j].0*B[j,l].1)",
    // the result's parts swapped: (imaginary, real)
    "fn c(A: [n,m](R,R), B: [m,k](R,R)) -> [n,k](R,R) = \
     gen(i:n, l:k) (sum(j:m) A[i,j].0*B[j,l].1 + A[i,j].1*B[j,l].0, \
                    sum(j:m) A[i,j].0*B[j,l].0 - A[i,j].1*B[j,l].1)",
    // both operands transposed, the output transposed
    "fn c(A: [m,n](R,R), B: [k,m](R,R)) -> [k,n](R,R) = \
     gen(l:k, i:n) (sum(j:m) A[j,i].0*B[l,j].0 - A[j,i].1*B[l,j].1, \
                    sum(j:m) A[j,i].0*B[l,j].1 + A[j,i].1*B[l,j].0)",
    // matrix-vector
    "fn cmv(A: [n,m](R,R), x: [m](R,R)) -> [n](R,R) = \
     gen(i:n) (sum(j:m) A[i,j].0*x[j].0 - A[i,j].1*x[j].1, \
               sum(j:m) A[i,j].0*x[j].1 + A[i,j].1*x[j].0)",
    // batched, the batch axis in the middle of B
    "fn cb(A: [b,n,m](R,R), B: [m,b,k](R,R)) -> [b,n,k](R,R) = \
     gen(p:b, i:n, l:k) (sum(j:m) A[p,i,j].0*B[j,p,l].0 - A[p,i,j].1*B[j,p,l].1, \
                         sum(j:m) A[p,i,j].0*B[j,p,l].1 + A[p,i,j].1*B[j,p,l].0)",
    // the parts from separate real arrays
    "fn c(X: [n,m]R, Y: [n,m]R, U: [m,k]R, V: [m,k]R) -> [n,k](R,R) = \
     gen(i:n, l:k) (sum(j:m) X[i,j]*U[j,l] - Y[i,j]*V[j,l], \
                    sum(j:m) X[i,j]*V[j,l] + Y[i,j]*U[j,l])",
    // one part of a larger program: a product, then its squared modulus
    "fn c(A: [n,m](R,R), B: [m,k](R,R)) -> [n,k]R = \
     let C = gen(i:n, l:k) (sum(j:m) A[i,j].0*B[j,l].0 - A[i,j].1*B[j,l].1, \
                            sum(j:m) A[i,j].0*B[j,l].1 + A[i,j].1*B[j,l].0) in \
     gen(i:n, l:k) C[i,l].0*C[i,l].0 + C[i,l].1*C[i,l].1",
];

/// Near misses: not complex products, left to generated code.
const NOT_STAGED: [&str; 4] = [
    // `+` where the real part has `-`
    "fn c(A: [n,m](R,R), B: [m,k](R,R)) -> [n,k](R,R) = \
     gen(i:n, l:k) (sum(j:m) A[i,j].0*B[j,l].0 + A[i,j].1*B[j,l].1, \
                    sum(j:m) A[i,j].0*B[j,l].1 + A[i,j].1*B[j,l].0)",
    // `-` in the imaginary part
    "fn c(A: [n,m](R,R), B: [m,k](R,R)) -> [n,k](R,R) = \
     gen(i:n, l:k) (sum(j:m) A[i,j].0*B[j,l].0 - A[i,j].1*B[j,l].1, \
                    sum(j:m) A[i,j].0*B[j,l].1 - A[i,j].1*B[j,l].0)",
    // mismatched operands: the imaginary part reads A.0 twice
    "fn c(A: [n,m](R,R), B: [m,k](R,R)) -> [n,k](R,R) = \
     gen(i:n, l:k) (sum(j:m) A[i,j].0*B[j,l].0 - A[i,j].1*B[j,l].1, \
                    sum(j:m) A[i,j].0*B[j,l].1 + A[i,j].0*B[j,l].0)",
    // the parts indexed differently (A.1 transposed)
    "fn c(A: [n,n](R,R), B: [n,k](R,R)) -> [n,k](R,R) = \
     gen(i:n, l:k) (sum(j:n) A[i,j].0*B[j,l].0 - A[j,i].1*B[j,l].1, \
                    sum(j:n) A[i,j].0*B[j,l].1 + A[j,i].1*B[j,l].0)",
];

#[test]
fn complex_products_are_staged_in_every_written_form() {
    for src in STAGED {
        let f = func(src);
        assert_eq!(complex_stages(&f), 2, "{src}\n{:?}", stages(&f));
        // the optimiser keeps the form
        let o = einsat::opt::optimize(&f, &einsat::opt::Options::default()).unwrap();
        assert_eq!(
            complex_stages(&o.program),
            2,
            "{}",
            einsat::syntax::print_function(&o.program)
        );
    }
    let s = stages(&func(CMM));
    assert_eq!(
        s,
        [
            "complex gemm n×k×m (real part)",
            "complex gemm n×k×m (imaginary part)"
        ]
    );
}

#[test]
fn near_misses_are_not_staged() {
    for src in NOT_STAGED {
        let f = func(src);
        assert_eq!(complex_stages(&f), 0, "{src}\n{:?}", stages(&f));
    }
}

/// Sizes with 0, 1 and odd sizes for every named size of `f`.
fn size_sets(f: &Function) -> Vec<BTreeMap<String, usize>> {
    let names = f.size_names();
    let sets: [&[usize]; 8] = [
        &[0, 3, 2, 2],
        &[3, 0, 2, 1],
        &[2, 3, 0, 3],
        &[1, 1, 1, 1],
        &[1, 17, 3, 2],
        &[17, 5, 1, 3],
        &[7, 13, 9, 2],
        &[33, 31, 35, 3],
    ];
    sets.iter()
        .map(|s| {
            names
                .iter()
                .enumerate()
                .map(|(k, n)| (n.clone(), s[k % s.len()]))
                .collect()
        })
        .collect()
}

fn fill_nan(v: &mut Value) {
    match v {
        Value::Real(x) => *x = f64::NAN,
        Value::Array(a) => a.fill(f64::NAN),
        Value::Pair(a, b) => {
            fill_nan(a);
            fill_nan(b);
        }
    }
}

/// `src` agrees with the interpreter within a relative tolerance on every
/// size set, every layout of the arguments and of the output (NaN first),
/// GEMM on (1 and 2 threads) and off.
fn agrees_everywhere(src: &str) {
    let f = func(src);
    for sizes in size_sets(&f) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(sizes.values().sum::<usize>() as u64);
        let args = random_inputs(&f, &sizes, &mut rng).unwrap();
        let want = interp::run(&f, &args).unwrap();
        for o in [opts(true, 1), opts(true, 2), opts(false, 1)] {
            let k = jit::compile_with(&f, &o).unwrap();
            for layout in Layout::ALL {
                let a: Vec<Value> = args.iter().map(|v| relayout_value(v, layout)).collect();
                let got = k.call(&a).unwrap();
                assert!(
                    want.approx_eq(&got, 1e-9, 1e-9),
                    "{o:?} {layout:?} {sizes:?}\n{src}\ninterp {want}\njit    {got}"
                );
                for ol in Layout::ALL {
                    let mut out = zeros_like(&want, ol);
                    fill_nan(&mut out);
                    k.call_into(&a, &mut out).unwrap();
                    assert!(
                        want.approx_eq(&out, 1e-9, 1e-9),
                        "{o:?} args {layout:?} out {ol:?} {sizes:?}\n{src}\ninterp {want}\njit    {out}"
                    );
                }
            }
        }
    }
}

#[test]
fn staged_forms_agree_with_the_interpreter_in_every_layout() {
    for src in STAGED {
        agrees_everywhere(src);
    }
}

#[test]
fn near_misses_compute_the_written_values() {
    for src in NOT_STAGED {
        agrees_everywhere(src);
    }
}

/// `f` through the optimiser and the JIT (the library at every size, 2
/// threads) agrees with the contract's oracle for every value class and a
/// few sizes, in `precision`.
fn keeps_the_contract(src: &str, precision: Precision) {
    let f = func(src);
    let cfg = DiffConfig {
        precision,
        ..DiffConfig::default()
    };
    for (seed, class) in ValueClass::ALL.into_iter().enumerate() {
        for max in [1usize, 4, 13, 40] {
            for rep in 0..3u64 {
                let mut rng =
                    rand::rngs::StdRng::seed_from_u64(seed as u64 * 131 + max as u64 * 7 + rep);
                let (sizes, args, layout) =
                    inputs_with_zero(&f, max, 0.1, true, class, &mut rng).unwrap();
                let case = Case {
                    function: f.clone(),
                    sizes,
                    args,
                    layout,
                    class,
                };
                match check(&case, &cfg) {
                    Verdict::Agree { jit } => assert!(jit, "the JIT leg ran"),
                    Verdict::Disagree(d) => {
                        panic!("{src}\n{precision:?} {class:?} max {max}: {d:?}")
                    }
                }
            }
        }
    }
}

#[test]
fn complex_products_keep_the_contract_on_every_value_class() {
    for src in [STAGED[0], STAGED[1], STAGED[3], STAGED[5], STAGED[6]] {
        keeps_the_contract(src, Precision::F64);
    }
}

#[test]
fn complex_products_keep_the_f32_contract() {
    let f = func(CMM);
    let k = jit::compile_with(
        &f,
        &Options {
            precision: Precision::F32,
            ..opts(true, 1)
        },
    )
    .unwrap();
    assert_eq!(
        k.stages()
            .iter()
            .filter(|s| s.starts_with("complex gemm"))
            .count(),
        2
    );
    for src in [STAGED[0], STAGED[4], STAGED[5]] {
        keeps_the_contract(src, Precision::F32);
    }
}

/// The product of `cmm` computed as the stage does, in f64: each part's
/// two real sums accumulated separately, then combined; and with the
/// real part's sign wrong.
fn split_cmm(args: &[Value], wrong_sign: bool) -> Value {
    let parts = |v: &Value| match v {
        Value::Pair(a, b) => match (&**a, &**b) {
            (Value::Array(x), Value::Array(y)) => (x.clone(), y.clone()),
            _ => unreachable!(),
        },
        _ => unreachable!(),
    };
    let (a0, a1) = parts(&args[0]);
    let (b0, b1) = parts(&args[1]);
    let (n, m, k) = (a0.shape()[0], a0.shape()[1], b0.shape()[1]);
    let mut re = ndarray::ArrayD::zeros(ndarray::IxDyn(&[n, k]));
    let mut im = re.clone();
    for i in 0..n {
        for l in 0..k {
            let (mut s00, mut s11, mut s01, mut s10) = (0.0, 0.0, 0.0, 0.0);
            for j in 0..m {
                s00 += a0[[i, j]] * b0[[j, l]];
                s11 += a1[[i, j]] * b1[[j, l]];
                s01 += a0[[i, j]] * b1[[j, l]];
                s10 += a1[[i, j]] * b0[[j, l]];
            }
            re[[i, l]] = if wrong_sign { s00 + s11 } else { s00 - s11 };
            im[[i, l]] = s01 + s10;
        }
    }
    Value::pair(Value::Array(re), Value::Array(im))
}

/// Pair arguments of `cmm`, `1e8 + small` (the written differences cancel
/// to the small parts' scale).
fn offset_args(n: usize, m: usize, k: usize, seed: u64) -> Vec<Value> {
    use rand::Rng;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut arr = |r: usize, c: usize| {
        Value::Array(ndarray::ArrayD::from_shape_fn(
            ndarray::IxDyn(&[r, c]),
            |_| 1e8 + rng.gen_range(-1.0..1.0),
        ))
    };
    vec![
        Value::pair(arr(n, m), arr(n, m)),
        Value::pair(arr(m, k), arr(m, k)),
    ]
}

#[test]
fn the_oracle_takes_the_split_sums_of_a_complex_product_and_catches_a_wrong_sign() {
    let f = func(CMM);
    // (long sums: the split sums' rounding, on the scale of the 1e16
    // products, exceeds the written differences' bound there)
    for (n, m, k, seed) in [
        (3, 17, 4, 1),
        (5, 64, 2, 2),
        (1, 200, 1, 3),
        (2, 6000, 2, 4),
    ] {
        let args = offset_args(n, m, k, seed);
        // the stage's order: within the bound of the 2m real products
        let split = split_cmm(&args, false);
        let why = contract_judge(&f, &args, &split).unwrap();
        assert!(why.is_none(), "{why:?}");
        // and the JIT's own result
        let got = jit::compile_with(&f, &opts(true, 1))
            .unwrap()
            .call(&args)
            .unwrap();
        assert!(contract_judge(&f, &args, &got).unwrap().is_none());
        // a wrong sign is still refused
        let bad = split_cmm(&args, true);
        assert!(contract_judge(&f, &args, &bad).unwrap().is_some());
    }
    // a near miss is not the pattern: its oracle keeps the written
    // differences' bound, which the split sums leave on offset data
    let near = func(
        "fn c(A: [n,m](R,R), B: [m,k](R,R)) -> [n,k](R,R) = \
         gen(i:n, l:k) (sum(j:m) A[i,j].0*B[j,l].0 - A[i,j].1*B[j,l].1, \
                        sum(j:m) A[i,j].0*B[j,l].1 - A[i,j].1*B[j,l].0)",
    );
    let args = offset_args(4, 300, 4, 9);
    let want = interp::run(&near, &args).unwrap();
    assert!(contract_judge(&near, &args, &want).unwrap().is_none());
    let split = split_cmm(&args, false);
    let Value::Pair(re, _) = &split else {
        unreachable!()
    };
    let Value::Pair(_, wim) = &want else {
        unreachable!()
    };
    // (the real part as split sums, the written imaginary part)
    let mixed = Value::pair((**re).clone(), (**wim).clone());
    assert!(contract_judge(&near, &args, &mixed).unwrap().is_some());
}

#[test]
fn specials_stay_non_finite_where_the_written_program_is() {
    let f = func(CMM);
    let k = jit::compile_with(&f, &opts(true, 1)).unwrap();
    let (n, m, kk) = (3, 5, 4);
    let sizes: BTreeMap<String, usize> = [("n", n), ("m", m), ("k", kk)]
        .into_iter()
        .map(|(a, b)| (a.to_string(), b))
        .collect();
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let mut args = random_inputs(&f, &sizes, &mut rng).unwrap();
    let set = |v: &mut Value, part: usize, idx: [usize; 2], x: f64| {
        if let Value::Pair(a, b) = v {
            let t = if part == 0 { a } else { b };
            if let Value::Array(arr) = &mut **t {
                arr[idx.as_slice()] = x;
            }
        }
    };
    set(&mut args[0], 0, [0, 1], f64::INFINITY);
    set(&mut args[0], 1, [1, 2], f64::NAN);
    set(&mut args[1], 1, [3, 0], f64::NEG_INFINITY);
    let want = interp::run(&f, &args).unwrap();
    let got = k.call(&args).unwrap();
    assert!(contract_judge(&f, &args, &got).unwrap().is_none());
    let flat = |v: &Value| -> Vec<f64> {
        match v {
            Value::Pair(a, b) => match (&**a, &**b) {
                (Value::Array(x), Value::Array(y)) => x.iter().chain(y.iter()).copied().collect(),
                _ => unreachable!(),
            },
            _ => unreachable!(),
        }
    };
    for (w, g) in flat(&want).iter().zip(flat(&got)) {
        assert_eq!(w.is_finite(), g.is_finite(), "{want}\n{got}");
    }
}

/// `z`'s real and imaginary parts as views of one interleaved array (the
/// last axis of `z`, of length 2), as numpy stores a complex array.
fn parts(z: &ndarray::ArrayD<f64>) -> einsat::jit::Arg<'_> {
    use ndarray::Axis;
    let last = z.ndim() - 1;
    einsat::jit::Arg::Pair(
        Box::new(einsat::jit::Arg::Array(z.index_axis(Axis(last), 0))),
        Box::new(einsat::jit::Arg::Array(z.index_axis(Axis(last), 1))),
    )
}

/// Interleaved complex arguments (and outputs) take the library's complex
/// kernel: both parts at once, equal to the interpreter's values within a
/// relative tolerance, in every size set, transposed operands, a batched
/// form, an output interleaved or not (filled with NaN first), 1 and 2
/// threads, F64 and F32; and the contract holds on offset data.
#[test]
fn interleaved_parts_run_on_the_complex_kernel() {
    use einsat::jit::{Arg, ArgMut};
    use ndarray::{ArrayD, Axis, IxDyn};
    use rand::Rng;
    for src in [STAGED[0], STAGED[3], STAGED[4], STAGED[5], STAGED[6]] {
        let f = func(src);
        for sizes in size_sets(&f) {
            let mut rng = rand::rngs::StdRng::seed_from_u64(sizes.values().sum::<usize>() as u64);
            let args = random_inputs(&f, &sizes, &mut rng).unwrap();
            // each pair argument as one interleaved array
            let inter: Vec<ArrayD<f64>> = args
                .iter()
                .map(|v| match v {
                    Value::Pair(a, b) => match (&**a, &**b) {
                        (Value::Array(x), Value::Array(y)) => {
                            // C order, the parts' axis last
                            let mut full = x.shape().to_vec();
                            full.push(2);
                            let mut z = ArrayD::zeros(IxDyn(&full));
                            z.index_axis_mut(Axis(x.ndim()), 0).assign(x);
                            z.index_axis_mut(Axis(x.ndim()), 1).assign(y);
                            z
                        }
                        _ => unreachable!(),
                    },
                    _ => unreachable!(),
                })
                .collect();
            let want = interp::run(&f, &args).unwrap();
            let Value::Pair(w0, _) = &want else {
                unreachable!()
            };
            let shape = match &**w0 {
                Value::Array(a) => a.shape().to_vec(),
                _ => unreachable!(),
            };
            for threads in [1, 2] {
                for precision in [Precision::F64, Precision::F32] {
                    let k = jit::compile_with(
                        &f,
                        &Options {
                            precision,
                            ..opts(true, threads)
                        },
                    )
                    .unwrap();
                    if precision == Precision::F32 {
                        let i32s: Vec<ArrayD<f32>> =
                            inter.iter().map(|a| a.mapv(|x| x as f32)).collect();
                        let a32: Vec<einsat::Arg32<'_>> = i32s
                            .iter()
                            .map(|z| {
                                let last = z.ndim() - 1;
                                einsat::Arg32::pair(
                                    einsat::Arg32::Array(z.index_axis(Axis(last), 0)),
                                    einsat::Arg32::Array(z.index_axis(Axis(last), 1)),
                                )
                            })
                            .collect();
                        let got = k.call_f32(&a32).unwrap().to_value();
                        assert!(
                            want.approx_eq(&got, 1e-4, 1e-4),
                            "{src} {sizes:?}\n{want}\n{got}"
                        );
                        continue;
                    }
                    let a: Vec<Arg<'_>> = inter.iter().map(parts).collect();
                    let before = jit::testing::gemm::complex_stages();
                    let got = k.call_args(&a).unwrap();
                    assert!(
                        want.approx_eq(&got, 1e-9, 1e-9),
                        "{src} {sizes:?} threads {threads}\ninterp {want}\njit    {got}"
                    );
                    // (an empty output has nothing to run, a product
                    // degenerate to dot products, m = n = 1, is left to
                    // generated code; the batched form's first axis is
                    // its batch)
                    let mn = if src == STAGED[6] {
                        &shape[1..]
                    } else {
                        &shape[..]
                    };
                    if sizes.values().all(|&v| v > 0) && mn.iter().any(|&d| d > 1) {
                        assert!(
                            jit::testing::gemm::complex_stages() > before,
                            "{src} {sizes:?}"
                        );
                    }
                    // into an interleaved output (NaN first)
                    let mut full = shape.clone();
                    full.push(2);
                    let mut out = ArrayD::from_elem(IxDyn(&full), f64::NAN);
                    {
                        let last = Axis(shape.len());
                        let (o0, o1) = out.view_mut().split_at(last, 1);
                        let mut o = ArgMut::Pair(
                            Box::new(ArgMut::Array(o0.index_axis_move(last, 0))),
                            Box::new(ArgMut::Array(o1.index_axis_move(last, 0))),
                        );
                        k.call_args_into(&a, &mut o).unwrap();
                    }
                    let got = Value::pair(
                        Value::Array(out.index_axis(Axis(shape.len()), 0).to_owned()),
                        Value::Array(out.index_axis(Axis(shape.len()), 1).to_owned()),
                    );
                    assert!(
                        want.approx_eq(&got, 1e-9, 1e-9),
                        "{src} {sizes:?} interleaved out\ninterp {want}\njit    {got}"
                    );
                }
            }
        }
    }
    // offset data through the complex kernel: within the contract
    let f = func(CMM);
    let k = jit::compile_with(&f, &opts(true, 1)).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    for (n, m, kk) in [(3, 400, 5), (8, 3000, 2)] {
        let a = ArrayD::from_shape_fn(IxDyn(&[n, m, 2]), |_| 1e8 + rng.gen_range(-1.0..1.0));
        let b = ArrayD::from_shape_fn(IxDyn(&[m, kk, 2]), |_| 1e8 + rng.gen_range(-1.0..1.0));
        let got = k.call_args(&[parts(&a), parts(&b)]).unwrap();
        let vals = |z: &ArrayD<f64>| {
            Value::pair(
                Value::Array(z.index_axis(Axis(2), 0).to_owned()),
                Value::Array(z.index_axis(Axis(2), 1).to_owned()),
            )
        };
        let args = [vals(&a), vals(&b)];
        let why = contract_judge(&f, &args, &got).unwrap();
        assert!(why.is_none(), "{why:?}");
    }
}
