//! Gathers (`E[tok[i], j]`) in the `F32`, `I64` and `I32` formats (issue
//! 25, item 5): an integer array's elements come in the kernel's element
//! type (`f32`, exact up to 2^24; `i64`; `i32`). The JIT against the
//! interpreter in the same format (bit for bit: integers, and `f32`
//! without sums; within a relative tolerance with sums), embedding
//! lookups, offsets, gathers in sums, two-axis index arrays, strided,
//! reversed and transposed tables and index arrays, empty index arrays;
//! refused elements (outside the axis, not an integer, beyond 2^24 in
//! `F32`) with the same words in both engines and no read outside a
//! buffer; random gather programs in `F32` (the difftest harness) and
//! `I64`/`I32` (the integer interpreter).
#![cfg(feature = "testing")]

use crate::common;

use common::{jit_opts, load1};

use common::cases;
use einsat::interp::{self, IntValue};
use einsat::jit::{self, Arg32, Value32};
use einsat::opt::{optimize, Options};
use einsat::syntax::print_function;
use einsat::testing::{arb_function, random_inputs, random_sizes, GenConfig};
use einsat::{Function, IntArg, IntElem, Precision, Value};
use ndarray::{arr1, Array2, ArrayD, IxDyn, Slice};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

/// `f` optimised for `p` (as the Python package compiles it).
fn optimised(f: &Function, p: Precision) -> Function {
    optimize(
        f,
        &Options {
            precision: p,
            ..Options::default()
        },
    )
    .unwrap_or_else(|e| panic!("{}: {e}", print_function(f)))
    .program
}

// ------------------------------------------------------------ f32

fn a32(x: &[f32]) -> ArrayD<f32> {
    arr1(x).into_dyn()
}

/// The F32 interpreter (on the same numbers as f64 values).
fn interp32(f: &Function, args: &[Value]) -> einsat::Result<Vec<f64>> {
    Ok(flat(&interp::run_with(f, args, Precision::F32)?))
}

fn flat(v: &Value) -> Vec<f64> {
    match v {
        Value::Array(a) => a.iter().copied().collect(),
        Value::Real(x) => vec![*x],
        Value::Pair(a, b) => [flat(a), flat(b)].concat(),
    }
}

fn to64(a: &ArrayD<f32>) -> Value {
    Value::Array(a.mapv(f64::from))
}

/// The F32 JIT (written and optimised programs) on `args`, each result
/// as f64s; the interpreter's error when the JIT refuses.
fn jit32(f: &Function, args: &[Arg32<'_>]) -> einsat::Result<Vec<Vec<f64>>> {
    let mut out = Vec::new();
    for g in [f.clone(), optimised(f, Precision::F32)] {
        let k = jit::compile_uncached_with(&g, &jit_opts(Precision::F32))?;
        out.push(flat(&k.call_f32(args)?.to_value()));
    }
    Ok(out)
}

fn table32(v: usize, d: usize) -> ArrayD<f32> {
    // E[a, b] = 10 a + b + 0.25
    ArrayD::from_shape_fn(IxDyn(&[v, d]), |ix| (10 * ix[0] + ix[1]) as f32 + 0.25)
}

#[test]
fn f32_embedding_lookup_is_exact_and_matches_the_interpreter() {
    let f = load1("fn emb(E: [v,d]R, tok: [n]Z) -> [n,d]R = gen(i:n, j:d) E[tok[i], j] * 2");
    let e = table32(5, 3);
    let tok = a32(&[3.0, 0.0, 4.0, 3.0]);
    let want: Vec<f64> = [3, 0, 4, 3]
        .iter()
        .flat_map(|&r| (0..3).map(move |c| 2.0 * ((10 * r + c) as f64 + 0.25)))
        .collect();
    assert_eq!(interp32(&f, &[to64(&e), to64(&tok)]).unwrap(), want);
    for got in jit32(&f, &[Arg32::from(&e), Arg32::from(&tok)]).unwrap() {
        assert_eq!(got, want);
    }
}

#[test]
fn f32_offsets_sums_and_two_axis_index_arrays() {
    // a bag of embeddings: tok[i, q] + 1 under a sum, and a gather on the
    // second axis minus one
    let f = load1(
        "fn bag(E: [v,d]R, t: [n,k]Z, F: [d,v]R, u: [n]Z) -> [n,d]R =
           gen(i:n, j:d) sum(q:k) E[t[i, q] + 1, j] * 0.1 + F[j, u[i] - 1]",
    );
    let e = table32(6, 3);
    let ft = ArrayD::from_shape_fn(IxDyn(&[3, 6]), |ix| (ix[0] as f32) * 0.5 - ix[1] as f32);
    let t = Array2::from_shape_vec((2, 3), vec![0f32, 4.0, 2.0, 1.0, 1.0, 3.0])
        .unwrap()
        .into_dyn();
    let u = a32(&[6.0, 1.0]);
    let want = interp32(&f, &[to64(&e), to64(&t), to64(&ft), to64(&u)]).unwrap();
    // by hand in f64 (the f32 results within a relative 1e-5); the sum's
    // body holds both terms
    let mut hand = Vec::new();
    for (i, row) in [[0, 4, 2], [1, 1, 3]].iter().enumerate() {
        for j in 0..3 {
            let uu = [6, 1][i] - 1;
            let s: f64 = row
                .iter()
                .map(|&r| ((10 * (r + 1) + j) as f64 + 0.25) * 0.1 + j as f64 * 0.5 - uu as f64)
                .sum();
            hand.push(s);
        }
    }
    for (a, b) in want.iter().zip(&hand) {
        assert!(
            (a - b).abs() <= 1e-5 * b.abs().max(1.0),
            "{want:?} vs {hand:?}"
        );
    }
    let args = [
        Arg32::from(&e),
        Arg32::from(&t),
        Arg32::from(&ft),
        Arg32::from(&u),
    ];
    for got in jit32(&f, &args).unwrap() {
        for (a, b) in got.iter().zip(&want) {
            assert!(
                (a - b).abs() <= 1e-5 * b.abs().max(1.0),
                "{got:?} vs {want:?}"
            );
        }
    }
}

#[test]
fn f32_strided_reversed_and_transposed_tables_and_index_arrays() {
    let f = load1("fn emb(E: [v,d]R, tok: [n]Z) -> [n,d]R = gen(i:n, j:d) E[tok[i], j] - 1");
    let big = table32(8, 6);
    let tok_owner = a32(&[9.0, 2.0, 9.0, 0.0, 9.0, 3.0, 9.0, 1.0]);
    // E: every other row, reversed columns; tok: every other element
    // from the second, reversed (1, 3, 0, 2)
    let e = big.slice_each_axis(|ax| {
        if ax.axis.index() == 0 {
            Slice::new(0, None, 2)
        } else {
            Slice::new(0, None, -1)
        }
    });
    let tok = tok_owner.slice_each_axis(|_| Slice::new(1, None, -2));
    let et = e.to_owned();
    let tt = tok.to_owned();
    let want = interp32(&f, &[to64(&et), to64(&tt)]).unwrap();
    let hand: Vec<f64> = tt
        .iter()
        .flat_map(|&r| {
            let et = &et;
            (0..6).map(move |c| f64::from(et[[r as usize, c]]) - 1.0)
        })
        .collect();
    assert_eq!(want, hand);
    for got in jit32(&f, &[Arg32::Array(e.view()), Arg32::Array(tok.view())]).unwrap() {
        assert_eq!(got, want);
    }
    // a transposed table
    let g = load1("fn col(E: [d,v]R, tok: [n]Z) -> [n,d]R = gen(i:n, j:d) E[j, tok[i]]");
    let et = big.t();
    let tok = a32(&[7.0, 0.0]);
    let want = interp32(&g, &[Value::Array(et.mapv(f64::from)), to64(&tok)]).unwrap();
    for got in jit32(&g, &[Arg32::Array(et.view()), Arg32::from(&tok)]).unwrap() {
        assert_eq!(got, want);
    }
}

/// The interpreter's and the JIT's errors (both must refuse).
fn errors32(f: &Function, e: &ArrayD<f32>, tok: &ArrayD<f32>) -> (String, Vec<String>) {
    let i = interp32(f, &[to64(e), to64(tok)]).unwrap_err().to_string();
    let mut j = Vec::new();
    for g in [f.clone(), optimised(f, Precision::F32)] {
        let k = jit::compile_uncached_with(&g, &jit_opts(Precision::F32)).unwrap();
        j.push(
            k.call_f32(&[Arg32::from(e), Arg32::from(tok)])
                .unwrap_err()
                .to_string(),
        );
    }
    (i, j)
}

#[test]
fn f32_refused_elements_have_the_same_words_in_both_engines() {
    let f = load1("fn emb(E: [v,d]R, tok: [n]Z) -> [n,d]R = gen(i:n, j:d) E[tok[i] + 1, j]");
    let e = table32(5, 2);
    for (tok, words) in [
        (
            vec![0.0, 4.0],
            "tok[1] = 4 + 1 = 5 is outside 0..5 (axis 0 of E, a gather index)",
        ),
        (vec![-2.0], "tok[0] = -2 + 1 = -1 is outside 0..5"),
        (vec![1.0, 0.5], "tok[1] = 0.5 is not an integer"),
        (vec![f32::NAN], "tok[0] = NaN is not an integer"),
        (vec![f32::INFINITY], "tok[0] = inf is not an integer"),
        (
            vec![33554432.0],
            "tok[0] = 33554432 is beyond the indices of f32",
        ),
    ] {
        let (i, js) = errors32(&f, &e, &a32(&tok));
        assert!(i.contains(words), "{i} (want {words})");
        for j in js {
            assert_eq!(j, i);
        }
    }
}

#[test]
fn f32_indices_beyond_2_pow_24_are_refused_not_rounded() {
    let f = load1("fn emb(E: [v]R, tok: [n]Z) -> [n]R = gen(i:n) E[tok[i] - 16777216]");
    let e = Value::Array(arr1(&[1.0, 2.0, 3.0]).into_dyn());
    // 2^24 is the largest: on the axis after the offset
    let ok = Value::Array(arr1(&[16777216.0]).into_dyn());
    assert_eq!(
        flat(&interp::run_with(&f, &[e.clone(), ok], Precision::F32).unwrap()),
        [1.0]
    );
    // 2^24 + 1 (an f64 argument) would round to 2^24 in f32: refused
    let bad = Value::Array(arr1(&[16777217.0]).into_dyn());
    let m = interp::run_with(&f, &[e.clone(), bad.clone()], Precision::F32)
        .unwrap_err()
        .to_string();
    assert!(
        m.contains("tok[0] = 16777217 is beyond the indices of f32")
            && m.contains("at most 2^24 in magnitude"),
        "{m}"
    );
    // in f64 the same element is the index 1
    assert_eq!(flat(&interp::run(&f, &[e, bad]).unwrap()), [2.0]);
    // the JIT in f32 holds 2^24 exactly
    let k = jit::compile_uncached_with(&f, &jit_opts(Precision::F32)).unwrap();
    let e32 = a32(&[1.0, 2.0, 3.0]);
    let t32 = a32(&[16777216.0]);
    let r = k.call_f32(&[Arg32::from(&e32), Arg32::from(&t32)]).unwrap();
    assert_eq!(flat(&r.to_value()), [1.0]);
    let t32 = a32(&[16777218.0]);
    let m = k
        .call_f32(&[Arg32::from(&e32), Arg32::from(&t32)])
        .unwrap_err()
        .to_string();
    assert!(
        m.contains("tok[0] = 16777218 is beyond the indices of f32"),
        "{m}"
    );
}

#[test]
fn f32_empty_index_arrays() {
    let f = load1("fn emb(E: [v,d]R, tok: [n]Z) -> [n,d]R = gen(i:n, j:d) E[tok[i], j]");
    let s = load1("fn s(E: [v,d]R, tok: [n]Z) -> [d]R = gen(j:d) sum(i:n) E[tok[i], j]");
    let e = table32(3, 2);
    let tok = a32(&[]);
    let k = jit::compile_uncached_with(&f, &jit_opts(Precision::F32)).unwrap();
    match k.call_f32(&[Arg32::from(&e), Arg32::from(&tok)]).unwrap() {
        Value32::Array(a) => assert_eq!(a.shape(), [0, 2]),
        r => panic!("{r:?}"),
    }
    for got in jit32(&s, &[Arg32::from(&e), Arg32::from(&tok)]).unwrap() {
        assert_eq!(got, [0.0, 0.0]);
    }
    // an empty table with an empty index array: fine; with an index: refused
    let e0 = ArrayD::<f32>::zeros(IxDyn(&[0, 2]));
    assert!(k.call_f32(&[Arg32::from(&e0), Arg32::from(&tok)]).is_ok());
    let m = k
        .call_f32(&[Arg32::from(&e0), Arg32::from(&a32(&[0.0]))])
        .unwrap_err()
        .to_string();
    assert!(m.contains("tok[0] = 0 is outside 0..0"), "{m}");
}

// ------------------------------------------------------- integers

fn v1<T: Clone>(x: &[T]) -> IntValue<T> {
    IntValue::Array(arr1(x).into_dyn())
}

/// The JIT (written and optimised for `T`'s format) and the integer
/// interpreter agree bit for bit; the interpreter's result.
fn both<T: IntElem>(f: &Function, args: &[IntValue<T>]) -> IntValue<T> {
    let want = interp::run_int(f, args).unwrap_or_else(|e| panic!("{e}"));
    let refs: Vec<IntArg<'_, T>> = args.iter().map(|a| a.as_arg()).collect();
    for g in [f.clone(), optimised(f, T::PRECISION)] {
        let k = jit::compile_uncached_with(&g, &jit_opts(T::PRECISION))
            .unwrap_or_else(|e| panic!("{}: {e}", print_function(&g)));
        let got = k
            .call_int(&refs)
            .unwrap_or_else(|e| panic!("{}: {e}", print_function(&g)));
        assert_eq!(got, want, "{}", print_function(&g));
    }
    want
}

/// The integer interpreter's error, and the JIT's (written and optimised)
/// which must be the same.
fn refused<T: IntElem>(f: &Function, args: &[IntValue<T>]) -> String {
    let want = interp::run_int(f, args).unwrap_err().to_string();
    let refs: Vec<IntArg<'_, T>> = args.iter().map(|a| a.as_arg()).collect();
    for g in [f.clone(), optimised(f, T::PRECISION)] {
        let k = jit::compile_uncached_with(&g, &jit_opts(T::PRECISION)).unwrap();
        let got = k.call_int(&refs).unwrap_err().to_string();
        assert_eq!(got, want, "{}", print_function(&g));
    }
    want
}

fn table<T: IntElem>(v: usize, d: usize, big: i64) -> IntValue<T> {
    IntValue::Array(ArrayD::from_shape_fn(IxDyn(&[v, d]), |ix| {
        T::from_i64(
            big.wrapping_mul(ix[0] as i64 + 1)
                .wrapping_add(ix[1] as i64),
        )
    }))
}

fn as_vec<T: Clone>(v: &IntValue<T>) -> Vec<T> {
    match v {
        IntValue::Array(a) => a.iter().cloned().collect(),
        IntValue::Int(x) => vec![x.clone()],
        IntValue::Pair(..) => panic!("a pair"),
    }
}

#[test]
fn i64_embedding_lookup_wraps_as_numpy() {
    let f = load1("fn emb(E: [v,d]R, tok: [n]Z) -> [n,d]R = gen(i:n, j:d) E[tok[i], j] * 2");
    // large entries: doubling wraps
    let e = table::<i64>(4, 3, 1 << 62);
    let r = both(&f, &[e.clone(), v1(&[3i64, 0, 2])]);
    let IntValue::Array(ea) = &e else { panic!() };
    let want: Vec<i64> = [3usize, 0, 2]
        .iter()
        .flat_map(|&r| (0..3).map(move |c| ea[[r, c]].wrapping_mul(2)))
        .collect();
    assert_eq!(as_vec(&r), want);
}

#[test]
fn i32_embedding_lookup_wraps_to_32_bits() {
    let f = load1("fn emb(E: [v,d]R, tok: [n]Z) -> [n,d]R = gen(i:n, j:d) E[tok[i], j] * 3 + 1");
    let e = table::<i32>(4, 3, 1 << 30);
    let r = both(&f, &[e.clone(), v1(&[1i32, 3, 3, 0])]);
    let IntValue::Array(ea) = &e else { panic!() };
    let want: Vec<i32> = [1usize, 3, 3, 0]
        .iter()
        .flat_map(|&r| (0..3).map(move |c| ea[[r, c]].wrapping_mul(3).wrapping_add(1)))
        .collect();
    assert_eq!(as_vec(&r), want);
}

#[test]
fn integer_offsets_sums_and_two_axis_index_arrays() {
    fn run<T: IntElem>() {
        let f = load1(
            "fn bag(E: [v,d]R, t: [n,k]Z, F: [d,v]R, u: [n]Z) -> [n,d]R =
               gen(i:n, j:d) sum(q:k) E[t[i, q] + 1, j] * 7 - F[j, u[i] - 1]",
        );
        let e = table::<T>(6, 3, 1 << 29);
        let ft = table::<T>(3, 6, -5);
        let t = IntValue::Array(
            Array2::from_shape_vec((2, 3), [0i64, 4, 2, 1, 1, 3].map(T::from_i64).to_vec())
                .unwrap()
                .into_dyn(),
        );
        let u = v1(&[T::from_i64(6), T::from_i64(1)]);
        let r = both(&f, &[e.clone(), t, ft.clone(), u]);
        let (IntValue::Array(ea), IntValue::Array(fa)) = (&e, &ft) else {
            panic!()
        };
        let mut want = Vec::new();
        for (i, row) in [[0usize, 4, 2], [1, 1, 3]].iter().enumerate() {
            for j in 0..3 {
                // (the sum's body holds both terms)
                let mut x = 0i64;
                for &r in row {
                    let t = ea[[r + 1, j]]
                        .to_i64()
                        .wrapping_mul(7)
                        .wrapping_sub(fa[[j, [6, 1][i] - 1]].to_i64());
                    x = x.wrapping_add(t);
                }
                // wrapped to the width
                want.push(T::from_i64(x).to_i64());
            }
        }
        let got: Vec<i64> = as_vec(&r).iter().map(|x| x.to_i64()).collect();
        assert_eq!(got, want, "{}", print_function(&f));
    }
    run::<i64>();
    run::<i32>();
}

#[test]
fn integer_strided_reversed_and_transposed_views() {
    let f = load1("fn col(E: [d,v]R, tok: [n]Z) -> [n,d]R = gen(i:n, j:d) E[j, tok[i]] - i");
    let owner = ArrayD::from_shape_fn(IxDyn(&[6, 4]), |ix| (100 * ix[0] + ix[1]) as i64 - 7);
    let toks = arr1(&[9i64, 5, 9, 0, 9, 3]).into_dyn();
    let et = owner.t(); // [4, 6]: d = 4, v = 6
    let tok = toks.slice_each_axis(|_| Slice::new(1, None, -2)); // 3, 0, 5
    let want = interp::run_int(
        &f,
        &[
            IntValue::Array(et.to_owned()),
            IntValue::Array(tok.to_owned()),
        ],
    )
    .unwrap();
    let hand: Vec<i64> = [3usize, 0, 5]
        .iter()
        .enumerate()
        .flat_map(|(i, &r)| {
            let et = &et;
            (0..4).map(move |j| et[[j, r]] - i as i64)
        })
        .collect();
    assert_eq!(as_vec(&want), hand);
    for g in [f.clone(), optimised(&f, Precision::I64)] {
        let k = jit::compile_uncached_with(&g, &jit_opts(Precision::I64)).unwrap();
        let got = k
            .call_int(&[IntArg::Array(et.view()), IntArg::Array(tok.view())])
            .unwrap();
        assert_eq!(got, want);
    }
    // i32: the same through i32 views
    let o32 = owner.mapv(|x| x as i32);
    let t32 = toks.mapv(|x| x as i32);
    let (et, tok) = (o32.t(), t32.slice_each_axis(|_| Slice::new(1, None, -2)));
    let k = jit::compile_uncached_with(&f, &jit_opts(Precision::I32)).unwrap();
    let got = k
        .call_int(&[IntArg::Array(et.view()), IntArg::Array(tok.view())])
        .unwrap();
    let got: Vec<i64> = as_vec(&got).iter().map(|&x| i64::from(x)).collect();
    assert_eq!(got, hand);
}

#[test]
fn integer_refused_elements_have_the_same_words_in_both_engines() {
    let f = load1("fn emb(E: [v,d]R, tok: [n]Z) -> [n,d]R = gen(i:n, j:d) E[tok[i] + 1, j]");
    let m = refused(&f, &[table::<i64>(5, 2, 3), v1(&[0i64, 4])]);
    assert!(
        m.contains("tok[1] = 4 + 1 = 5 is outside 0..5 (axis 0 of E, a gather index)"),
        "{m}"
    );
    let m = refused(&f, &[table::<i64>(5, 2, 3), v1(&[-2i64])]);
    assert!(m.contains("tok[0] = -2 + 1 = -1 is outside 0..5"), "{m}");
    // the limits: no wrap of element + offset into the axis
    let m = refused(&f, &[table::<i64>(5, 2, 3), v1(&[i64::MAX])]);
    assert!(
        m.contains("tok[0] = 9223372036854775807 + 1 = 9223372036854775808 is outside"),
        "{m}"
    );
    let g = load1("fn emb(E: [v,d]R, tok: [n]Z) -> [n,d]R = gen(i:n, j:d) E[tok[i] - 1, j]");
    let m = refused(&g, &[table::<i64>(5, 2, 3), v1(&[i64::MIN])]);
    assert!(m.contains("is outside 0..5"), "{m}");
    let m = refused(&g, &[table::<i32>(5, 2, 3), v1(&[i32::MIN])]);
    assert!(
        m.contains("tok[0] = -2147483648 - 1 = -2147483649 is outside 0..5"),
        "{m}"
    );
    let m = refused(&f, &[table::<i32>(5, 2, 3), v1(&[i32::MAX])]);
    assert!(
        m.contains("tok[0] = 2147483647 + 1 = 2147483648 is outside 0..5"),
        "{m}"
    );
    // f64 arguments beyond i32 for the i32 interpreter: refused, never wrapped
    let args = [
        Value::Array(ArrayD::zeros(IxDyn(&[5, 2]))),
        Value::Array(arr1(&[4294967296.0 + 1.0]).into_dyn()),
    ];
    let m = interp::run_with(&g, &args, Precision::I32).unwrap_err();
    assert!(m.is_call(), "{m}");
}

#[test]
fn integer_empty_index_arrays() {
    let f = load1("fn s(E: [v,d]R, tok: [n]Z) -> ([n,d]R, [d]R) = (gen(i:n, j:d) E[tok[i], j], gen(j:d) sum(i:n) E[tok[i], j])");
    let r = both(&f, &[table::<i64>(3, 2, 5), v1::<i64>(&[])]);
    let IntValue::Pair(a, b) = r else { panic!() };
    let IntValue::Array(a) = *a else { panic!() };
    assert_eq!(a.shape(), [0, 2]);
    assert_eq!(as_vec(&b), [0, 0]);
    let r = both(&f, &[table::<i32>(3, 2, 5), v1::<i32>(&[])]);
    let IntValue::Pair(_, b) = r else { panic!() };
    assert_eq!(as_vec(&b), [0, 0]);
}

#[test]
fn gathers_pass_the_integrality_check_but_division_does_not() {
    let f = load1("fn emb(E: [v,d]R, tok: [n]Z) -> [n,d]R = gen(i:n, j:d) E[tok[i], j]");
    assert!(einsat::types::is_integral(&f, Precision::I64));
    assert!(einsat::types::is_integral(&f, Precision::I32));
    let g = load1("fn emb(E: [v,d]R, tok: [n]Z) -> [n,d]R = gen(i:n, j:d) E[tok[i], j] / 2");
    assert!(!einsat::types::is_integral(&g, Precision::I64));
}

// ------------------------------------------------- random programs

/// Random F32 programs with gathers (the difftest harness: interpreter,
/// optimiser, JIT through `call_f32`, refusals word for word).
#[test]
fn random_gather_programs_agree_in_f32() {
    use einsat::testing::difftest::{case_from_seed, case_seed, run, DiffConfig};
    let cfg = DiffConfig {
        gen: GenConfig {
            max_depth: 4,
            ..GenConfig::default()
        }
        .with_features("all")
        .unwrap(),
        precision: Precision::F32,
        ..DiffConfig::default()
    };
    // a third of PROPTEST_CASES (each case optimises and compiles its
    // program; `einsat difftest --dtype f32` in CI runs 3000 more)
    let n = u64::from(cases(600) / 3);
    let mut with_gather = 0;
    for k in 0..n {
        let case = case_from_seed(case_seed(13, k), &cfg).unwrap();
        if print_function(&case.function).contains("[tok[") {
            with_gather += 1;
        }
    }
    assert!(with_gather * 8 >= n, "{with_gather} of {n} programs gather");
    let s = run(&cfg, 13, n, 2, 1, &|_, _| {});
    assert_eq!(
        s.disagreeing,
        0,
        "{:?}",
        s.disagreements.first().map(|d| (
            print_function(&d.shrunk.function),
            d.failure.message.clone()
        ))
    );
    assert_eq!(s.jit_cases, s.cases, "{:?}", s.jit_skipped);
}

fn int_gather_cfg() -> GenConfig {
    GenConfig {
        funcs: false,
        gathers: true,
        ..GenConfig::default()
    }
}

/// Random integers of `T` in the shapes of `v`; an integer array's
/// elements (indices) as they are.
fn int_args<T: IntElem>(f: &Function, vs: &[Value], rng: &mut impl Rng) -> Vec<IntValue<T>> {
    fn wide<T: IntElem>(v: &Value, rng: &mut impl Rng) -> IntValue<T> {
        match v {
            Value::Real(_) => IntValue::Int(T::from_i64(rng.gen())),
            Value::Array(a) => IntValue::Array(a.mapv(|_| T::from_i64(rng.gen()))),
            Value::Pair(a, b) => IntValue::pair(wide(a, rng), wide(b, rng)),
        }
    }
    f.params
        .iter()
        .zip(vs)
        .map(|(p, v)| {
            if p.ty.is_int_array() {
                IntValue::from_value(v).unwrap()
            } else {
                wide(v, rng)
            }
        })
        .collect()
}

/// `v` read through a reversed view of a reversed copy (negative strides).
fn reversed<T: IntElem>(v: &IntValue<T>) -> ArrayD<T> {
    match v {
        IntValue::Array(a) => a.slice_each_axis(|_| Slice::new(0, None, -1)).to_owned(),
        _ => ArrayD::from_elem(IxDyn(&[]), T::from_i64(0)),
    }
}

fn check_random<T: IntElem>(f: &Function, seed: u64) -> Result<(), TestCaseError> {
    if !einsat::types::is_integral(f, T::PRECISION) {
        return Ok(());
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let sizes = random_sizes(f, seed, 5);
    let Ok(shapes) = random_inputs(f, &sizes, &mut rng) else {
        return Ok(());
    };
    let args: Vec<IntValue<T>> = int_args(f, &shapes, &mut rng);
    let want = match interp::run_int(f, &args) {
        Ok(w) => w,
        Err(e) if e.is_call() => return Ok(()),
        Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
    };
    let g = optimize(
        f,
        &Options {
            precision: T::PRECISION,
            time_limit: std::time::Duration::from_secs(600),
            ..Options::default()
        },
    )
    .map_err(|e| TestCaseError::fail(format!("{}: {e}", print_function(f))))?
    .program;
    let got = interp::run_int(&g, &args)
        .map_err(|e| TestCaseError::fail(format!("{}: {e}", print_function(&g))))?;
    prop_assert_eq!(
        &got,
        &want,
        "optimised {} from {}",
        print_function(&g),
        print_function(f)
    );
    let k = jit::compile_uncached_with(&g, &jit_opts(T::PRECISION))
        .map_err(|e| TestCaseError::fail(format!("{}: {e}", print_function(&g))))?;
    let refs: Vec<IntArg<'_, T>> = args.iter().map(|a| a.as_arg()).collect();
    let got = k
        .call_int(&refs)
        .map_err(|e| TestCaseError::fail(format!("{}: {e}", print_function(&g))))?;
    prop_assert_eq!(&got, &want, "{}", print_function(&g));
    // every array through negative strides
    if args.iter().all(|a| !matches!(a, IntValue::Pair(..))) {
        let owners: Vec<ArrayD<T>> = args.iter().map(reversed).collect();
        let refs: Vec<IntArg<'_, T>> = args
            .iter()
            .zip(&owners)
            .map(|(a, o)| match a {
                IntValue::Int(x) => IntArg::Int(*x),
                _ => IntArg::Array(o.slice_each_axis(|_| Slice::new(0, None, -1))),
            })
            .collect();
        let got = k
            .call_int(&refs)
            .map_err(|e| TestCaseError::fail(format!("{}: {e}", print_function(&g))))?;
        prop_assert_eq!(&got, &want, "{} (reversed views)", print_function(&g));
    }
    Ok(())
}

proptest! {
    // a third of PROPTEST_CASES per format: each case optimises and
    // compiles its program in I64 or I32 (1000 each in CI)
    #![proptest_config(ProptestConfig::with_cases(cases(450) / 3))]

    /// Random integral programs with gathers: optimised for I64, in the
    /// interpreter and the JIT, the written program's integers bit for bit.
    #[test]
    fn random_gather_programs_agree_in_i64(f in arb_function(int_gather_cfg()), seed in any::<u64>()) {
        check_random::<i64>(&f, seed)?;
    }

    /// The same in I32.
    #[test]
    fn random_gather_programs_agree_in_i32(f in arb_function(int_gather_cfg()), seed in any::<u64>()) {
        check_random::<i32>(&f, seed)?;
    }
}

/// A call of the same shapes as the one before (which a kernel remembers
/// to skip its set-up) checks its integer arrays again, in every format
/// and through `call_into` too: never a read outside the table.
#[test]
fn a_repeated_call_of_the_same_shapes_checks_the_indices_again() {
    let f = load1("fn emb(E: [v,d]R, tok: [n]Z) -> [n,d]R = gen(i:n, j:d) E[tok[i], j]");
    let k = jit::compile_uncached_with(&f, &jit_opts(Precision::F64)).unwrap();
    let e = Value::Array(ArrayD::from_elem(IxDyn(&[3, 2]), 1.5));
    let mut out = Value::Array(ArrayD::zeros(IxDyn(&[2, 2])));
    let good = Value::Array(arr1(&[2.0, 0.0]).into_dyn());
    let bad = Value::Array(arr1(&[2.0, 1000000.0]).into_dyn());
    for _ in 0..2 {
        k.call_into(&[e.clone(), good.clone()], &mut out).unwrap();
        let m = k
            .call_into(&[e.clone(), bad.clone()], &mut out)
            .unwrap_err();
        assert!(
            m.to_string().contains("tok[1] = 1000000 is outside 0..3"),
            "{m}"
        );
        assert!(k.call(&[e.clone(), bad.clone()]).is_err());
    }
    let k = jit::compile_uncached_with(&f, &jit_opts(Precision::F32)).unwrap();
    let e32 = ArrayD::from_elem(IxDyn(&[3, 2]), 1.5f32);
    for _ in 0..2 {
        assert!(k
            .call_f32(&[Arg32::from(&e32), Arg32::from(&a32(&[2.0, 0.0]))])
            .is_ok());
        assert!(k
            .call_f32(&[Arg32::from(&e32), Arg32::from(&a32(&[2.0, 1e6]))])
            .is_err());
    }
    let k = jit::compile_uncached_with(&f, &jit_opts(Precision::I32)).unwrap();
    let ei = ArrayD::from_elem(IxDyn(&[3, 2]), 7i32);
    for _ in 0..2 {
        let t = arr1(&[2i32, 0]).into_dyn();
        assert!(k.call_int(&[IntArg::from(&ei), IntArg::from(&t)]).is_ok());
        let t = arr1(&[2i32, 1_000_000]).into_dyn();
        assert!(k.call_int(&[IntArg::from(&ei), IntArg::from(&t)]).is_err());
    }
}

/// `einsat run --dtype f32` (the JIT and the interpreter) refuses an index
/// beyond 2^24 before rounding it to f32; `--dtype i32` runs a gather.
#[cfg(feature = "cli")]
#[test]
fn the_cli_runs_gathers_in_every_dtype_and_refuses_unrounded_indices() {
    let d = common::tmpdir("gather-formats-cli");
    let prog = d.join("g.tl");
    std::fs::write(
        &prog,
        "fn f(E: [v]R, tok: [n]Z) -> [n]R = gen(i:n) E[tok[i] - 16777216] * 2\n",
    )
    .unwrap();
    let e = d.join("E.npy");
    ndarray_npy::write_npy(&e, &arr1(&[1.0f64, 2.0, 3.0])).unwrap();
    let ok = d.join("ok.npy");
    ndarray_npy::write_npy(&ok, &arr1(&[16777218i64, 16777216])).unwrap();
    let bad = d.join("bad.npy");
    ndarray_npy::write_npy(&bad, &arr1(&[16777217i64])).unwrap();
    let run = |tok: &std::path::Path, dtype: &str, engine: &[&str]| {
        let (p, e, t) = (
            prog.display().to_string(),
            format!("E={}", e.display()),
            format!("tok={}", tok.display()),
        );
        let mut args = vec![
            "run", &p, "--fn", "f", "--arg", &e, "--arg", &t, "--dtype", dtype,
        ];
        args.extend_from_slice(engine);
        let (code, out, err) =
            common::einsat_in(std::path::Path::new(env!("CARGO_MANIFEST_DIR")), &args);
        (code, out + &err)
    };
    for engine in [&[][..], &["--engine", "interp"][..]] {
        for dtype in ["f64", "i64", "i32"] {
            let (code, out) = run(&ok, dtype, engine);
            assert_eq!(code, 0, "{dtype} {engine:?}: {out}");
            assert!(out.contains("[6, 2]"), "{dtype} {engine:?}: {out}");
        }
        // in f32: 16777218 is past 2^24, and 16777217 would round to 2^24
        for tok in [&ok, &bad] {
            let (code, out) = run(tok, "f32", engine);
            assert_eq!(code, 1, "{engine:?}: {out}");
            assert!(
                out.contains("is beyond the indices of f32"),
                "{engine:?}: {out}"
            );
        }
    }
}
