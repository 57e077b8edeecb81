//! Gathers, `E[tok[i], j]`: integer array parameters (`[n]Z`) read inside
//! an index. Parsing and printing, type errors, values against hand
//! computed results, the optimiser and the JIT (every layout) against the
//! interpreter, and the call's check of the integer arrays (outside the
//! axis, not an integer) with the same error in the interpreter and the
//! JIT.
#![cfg(feature = "testing")]

use crate::common;

use common::agree::agree_in_every_layout;
use common::load1;

use einsat::interp::{self, Value};
use einsat::jit;
use einsat::opt::{optimize, Options};
use einsat::syntax::{parse_program, print_function};
use ndarray::{arr1, arr2, ArrayD};

fn arr(v: ArrayD<f64>) -> Value {
    Value::Array(v)
}

fn as_vec(v: &Value) -> Vec<f64> {
    match v {
        Value::Array(a) => a.iter().copied().collect(),
        Value::Real(x) => vec![*x],
        _ => panic!("not an array: {v}"),
    }
}

/// As written in the interpreter, optimised in the interpreter, optimised
/// on the JIT, and as written on the JIT (all gathers here are in normal
/// form): the four results.
fn four_ways(f: &einsat::Function, args: &[Value]) -> [Vec<f64>; 4] {
    let a = interp::run(f, args).unwrap();
    let o = optimize(f, &Options::default()).unwrap().program;
    let b = interp::run(&o, args).unwrap();
    let k = jit::compile(&o).unwrap_or_else(|e| panic!("{e}\n{}", print_function(&o)));
    let c = k.call(args).unwrap();
    let d = jit::compile(f).unwrap().call(args).unwrap();
    [as_vec(&a), as_vec(&b), as_vec(&c), as_vec(&d)]
}

fn emb() -> Value {
    // E[v, j] = 10 v + j, v in 0..5, j in 0..3
    arr(ArrayD::from_shape_fn(ndarray::IxDyn(&[5, 3]), |ix| {
        (10 * ix[0] + ix[1]) as f64
    }))
}

#[test]
fn embedding_lookup_values() {
    let f = load1("fn embed(E: [v,d]R, tok: [n]Z) -> [n,d]R = gen(i:n, j:d) E[tok[i], j]");
    let tok = arr(arr1(&[3.0, 0.0, 4.0, 3.0]).into_dyn());
    let want = vec![30., 31., 32., 0., 1., 2., 40., 41., 42., 30., 31., 32.];
    for r in four_ways(&f, &[emb(), tok]) {
        assert_eq!(r, want);
    }
}

#[test]
fn offsets_two_index_arrays_and_inner_axes() {
    // tok[i, k] + 1 under a sum; a gather on the second axis minus one
    let f = load1(
        "fn f(E: [v,d]R, tok: [n,k]Z) -> [n,d]R = gen(i:n, j:d) sum(q:k) E[tok[i, q] + 1, j] * 2",
    );
    let tok = arr(arr2(&[[0.0, 3.0], [2.0, 2.0]]).into_dyn());
    // row 1 + row 4, twice; row 3 + row 3, twice
    let want = vec![
        2. * (10. + 40.),
        2. * (11. + 41.),
        2. * (12. + 42.),
        2. * 60.,
        2. * 62.,
        2. * 64.,
    ];
    for r in four_ways(&f, &[emb(), tok]) {
        assert_eq!(r, want);
    }
    let g = load1("fn g(E: [v,d]R, tok: [n]Z) -> [n,v]R = gen(i:n, a:v) E[a, tok[i] - 1]");
    let tok = arr(arr1(&[1.0, 3.0]).into_dyn());
    let want = vec![0., 10., 20., 30., 40., 2., 12., 22., 32., 42.];
    for r in four_ways(&g, &[emb(), tok]) {
        assert_eq!(r, want);
    }
}

#[test]
fn a_read_off_the_integer_arrays_axis_is_zero_so_the_index_is_the_offset() {
    // tok[i+1] at the last i reads 0: the gather indexes row 0 + 2
    let f = load1("fn f(E: [v,d]R, tok: [n]Z) -> [n]R = gen(i:n) E[tok[i+1] + 2, 0]");
    let tok = arr(arr1(&[0.0, 1.0, 2.0]).into_dyn());
    for r in four_ways(&f, &[emb(), tok]) {
        assert_eq!(r, vec![30., 40., 20.]);
    }
}

#[test]
fn jit_agrees_with_the_interpreter_in_every_layout() {
    for src in [
        "fn f(E: [v,d]R, tok: [n]Z, w: [d]R) -> [n]R = gen(i:n) sum(j:d) E[tok[i], j] * w[j]",
        "fn f(E: [v,d]R, tok: [n]Z) -> [n,d]R = gen(i:n, j:d) exp(E[tok[i], j]) + E[tok[i], j + 1] * E[tok[i], 0]",
        "fn f(E: [v,d]R, t: [n,m]Z) -> [n,m]R = gen(i:n, k:m) max(j:d) E[t[i,k], j]",
        "fn f(E: [v,d]R, tok: [n]Z) -> [d,n]R = gen(j:d, i:n) where(E[tok[i], j] > 0, E[tok[i], j], 0)",
    ] {
        let f = load1(src);
        let o = optimize(&f, &Options::default()).unwrap().program;
        let runs = agree_in_every_layout(&f, &o, 7, &[1, 3, 5], 1e-12, 1e-12);
        assert!(runs > 0, "{src}");
        // the program as written, compiled as it is
        let runs = agree_in_every_layout(&f, &f, 9, &[2, 4], 1e-12, 1e-12);
        assert!(runs > 0, "{src}");
    }
}

fn both_errors(f: &einsat::Function, args: &[Value]) -> (String, String) {
    let a = interp::run(f, args).unwrap_err().to_string();
    let o = optimize(f, &Options::default()).unwrap().program;
    let b = jit::compile(&o)
        .unwrap()
        .call(args)
        .unwrap_err()
        .to_string();
    (a, b)
}

#[test]
fn an_index_outside_the_axis_is_an_error_in_both_engines() {
    let f = load1("fn embed(E: [v,d]R, tok: [n]Z) -> [n,d]R = gen(i:n, j:d) E[tok[i], j]");
    let tok = arr(arr1(&[1.0, 0.0, 4.0, 7.0]).into_dyn());
    let (a, b) = both_errors(&f, &[emb(), tok]);
    assert_eq!(a, b);
    assert!(a.contains("tok[3] = 7 is outside 0..5 (axis 0 of E"), "{a}");
    let tok = arr(arr1(&[-1.0]).into_dyn());
    let (a, b) = both_errors(&f, &[emb(), tok]);
    assert_eq!(a, b);
    assert!(a.contains("tok[0] = -1 is outside 0..5"), "{a}");
    // the offset counts
    let g = load1("fn g(E: [v,d]R, tok: [n,k]Z) -> [n]R = gen(i:n) sum(q:k) E[tok[i, q] + 1, 0]");
    let tok = arr(arr2(&[[0.0, 3.0], [4.0, 1.0]]).into_dyn());
    let (a, b) = both_errors(&g, &[emb(), tok]);
    assert_eq!(a, b);
    assert!(a.contains("tok[1, 0] = 4 + 1 = 5 is outside 0..5"), "{a}");
    // an element no run reads is checked too (the check does not depend
    // on what is evaluated): here the gather is under a false bracket
    let h = load1("fn h(E: [v,d]R, tok: [n]Z) -> R = sum(i:n) sum(j:d) [j < 0] * E[tok[i], j]");
    let tok = arr(arr1(&[9.0]).into_dyn());
    let (a, b) = both_errors(&h, &[emb(), tok]);
    assert_eq!(a, b);
    assert!(a.contains("tok[0] = 9 is outside 0..5"), "{a}");
    // a gather inside a fold whose value is never used: the optimiser
    // drops the fold and keeps the gather, at the fold's index (CI's
    // difftest, seed 20261123 case 2053)
    let k = load1(
        "fn k(E: [v,d]R, tok: [n]Z) -> [v,d]R = let t = fold(i:1, a = 0) E[0, tok[2*i] + 1] in E",
    );
    let tok = arr(arr1(&[4.0]).into_dyn());
    let (a, b) = both_errors(&k, &[emb(), tok]);
    assert_eq!(a, b);
    assert!(a.contains("tok[0] = 4 + 1 = 5 is outside 0..3"), "{a}");
}

#[test]
fn an_element_that_is_not_an_integer_is_an_error_in_both_engines() {
    let f = load1("fn embed(E: [v,d]R, tok: [n]Z) -> [n,d]R = gen(i:n, j:d) E[tok[i], j]");
    for bad in [1.5, f64::NAN, f64::INFINITY, -0.25] {
        let tok = arr(arr1(&[0.0, bad]).into_dyn());
        let (a, b) = both_errors(&f, &[emb(), tok]);
        assert_eq!(a, b);
        assert!(
            a.contains("tok[1] = ") && a.contains("is not an integer"),
            "{a}"
        );
    }
    // -0 is the integer 0
    let tok = arr(arr1(&[-0.0]).into_dyn());
    for r in four_ways(&f, &[emb(), tok]) {
        assert_eq!(r, vec![0., 1., 2.]);
    }
}

#[test]
fn type_errors_are_clear() {
    for (src, want) in [
        (
            "fn f(tok: [n]Z) -> [n]R = gen(i:n) tok[i]",
            "is an integer array: it may only be read inside an index",
        ),
        (
            "fn f(x: [n]R, tok: [n]Z) -> R = sum(i:n) x[tok]",
            "`tok` is a value, not an index",
        ),
        (
            "fn f(x: [n]R, t: [n,m]Z) -> R = sum(i:n) x[t[i]]",
            "integer array read at fewer indices",
        ),
        (
            "fn f(x: [n]R, y: [n]R) -> R = sum(i:n) x[y[i]]",
            "must read one integer of an integer array",
        ),
        (
            "fn f(x: [n]R, k: Z) -> R = x[0]",
            "`Z` is only the element type of an integer array",
        ),
        (
            "fn f(x: [n]R, k: [n](Z, R)) -> R = x[0]",
            "`Z` is only the element type",
        ),
        (
            "fn f(t: [n]Z) -> [n]Z = gen(i:n) 0",
            "integer arrays are parameters only",
        ),
        (
            "fn f(t: [n]Z) -> [n]R = gen(i:n) (gen(j:n) j)[t[i]]",
            "indexes a parameter or an access chain",
        ),
        (
            "fn f(x: [n]R, t: [n]Z) -> R = let y = x in sum(i:n) y[t[i]]",
            "indexes a parameter or an access chain",
        ),
        (
            "fn f(x: [n]R, t: [n]Z) -> R = sum(i:n) x[u[i]]",
            "unknown name `u`",
        ),
    ] {
        let e = einsat::load(src).unwrap_err().to_string();
        assert!(e.contains(want), "{src}: {e}");
        assert!(e.contains("<input>:1:"), "{src}: {e}");
    }
    for (src, want) in [
        (
            "fn f(x: [n]R, t: [n]Z) -> R = sum(i:n) x[t[i] * 2]",
            "a gather's index is an integer array read plus or minus an integer",
        ),
        (
            "fn f(x: [n]R, t: [n]Z) -> R = sum(i:n) x[t[i] + j]",
            "a gather's index is an integer array read plus or minus an integer",
        ),
        (
            "fn f(x: [n]R, t: [n]Z) -> R = sum(i:n) x[t[t[i]]]",
            "may not itself hold a gather",
        ),
    ] {
        let e = einsat::load(src).unwrap_err().to_string();
        assert!(e.contains(want), "{src}: {e}");
    }
}

#[test]
fn print_parse_round_trip() {
    let src = "fn f(E: [v,d]R, F: [d,v]R, t: [n,k]Z, p: [v](R, R)) -> [n,d]R =\n  gen(i:n, j:d) E[t[i, 0] + 1, j] + F[j, t[i, 1] - 2] * p[t[i, 0]].1\n";
    let p = parse_program(src).unwrap();
    let text = print_function(&p.program.functions[0]);
    assert!(text.contains("E[t[i, 0] + 1, j]"), "{text}");
    assert!(text.contains("F[j, t[i, 1] - 2]"), "{text}");
    assert!(text.contains("p[t[i, 0]].1"), "{text}");
    let back = parse_program(&text).unwrap();
    assert_eq!(back.program, p.program);
    if let Err(e) = einsat::load(&text) {
        panic!("{text}: {e}");
    }
}

#[test]
fn the_builder_writes_gathers() {
    use einsat::frontend::builder::*;
    let f = func("embed", |b| {
        let e = b.param("E", "[v,d]R");
        let tok = b.param("tok", "[n]Z");
        gen("n", |i| {
            gen("d", |j| {
                e.gather(tok.at(i), 0).at(j) + e.gather(tok.at(i), -1).at(0)
            })
        })
    })
    .unwrap();
    assert_eq!(
        einsat::syntax::print_expr(&f.body),
        "gen(i:n, j:d) E[tok[i], j] + E[tok[i] - 1, 0]"
    );
    let tok = arr(arr1(&[3.0, 1.0]).into_dyn());
    for r in four_ways(&f, &[emb(), tok]) {
        assert_eq!(r, vec![50., 51., 52., 10., 11., 12.]);
    }
    // a gather from a non-parameter is a type error, not a panic
    let e = func("bad", |b| {
        let tok = b.param("tok", "[n]Z");
        gen("n", |i| gen(3, |j| j.value()).gather(tok.at(i), 0))
    })
    .unwrap_err();
    assert!(e.to_string().contains("indexes a parameter"), "{e}");
}

/// Random programs with gathers: the interpreter, the optimiser and the
/// JIT agree (values within the floating-point contract, refusals word for
/// word), as `einsat difftest --features all` checks at scale; and the
/// generator does make gathers, refused inputs among them.
#[test]
fn random_programs_with_gathers_agree() {
    use einsat::testing::difftest::{case_from_seed, case_seed, run, DiffConfig};
    use einsat::testing::GenConfig;
    let cfg = DiffConfig {
        gen: GenConfig {
            max_depth: 4,
            ..GenConfig::default()
        }
        .with_features("all")
        .unwrap(),
        ..DiffConfig::default()
    };
    let (mut with_gather, mut refused) = (0, 0);
    for k in 0..300 {
        let case = case_from_seed(case_seed(11, k), &cfg).unwrap();
        if print_function(&case.function).contains("[tok[") {
            with_gather += 1;
            if interp::run(&case.function, &case.args).is_err() {
                refused += 1;
            }
        }
    }
    assert!(with_gather >= 40, "{with_gather} of 300 programs gather");
    assert!(refused >= 3, "{refused} refused calls");
    let s = run(&cfg, 11, 300, 2, 1, &|_, _| {});
    assert_eq!(
        s.disagreeing,
        0,
        "{:?}",
        s.disagreements.first().map(|d| (
            print_function(&d.shrunk.function),
            d.failure.message.clone()
        ))
    );
}

/// A gather keeps a program out of the e-graph, so the normal-form pass
/// alone makes it runnable. A value it lifts to a top-level `let` and reads
/// back whole (a tensor: `t15[i+1].0`, or `(gen(j:n) …)[i].1`) must be
/// known by its type afterwards: taken for a number, the zero-padded read
/// `t15[i+1]` became `[0 <= i+1 < 1] * t0 + …` of a tensor, ill-typed, and
/// the program stayed as written (not in normal form: the JIT refused it).
/// Found by `einsat difftest --cases 20000 --depth 5 --max-size 5`, seeds
/// 202612033 (case 8709) and 202612034 (case 6854), shrunk.
#[test]
fn lifted_tensors_read_back_whole_stay_tensors() {
    let chain = "fn f(A: [3]R, tok: [3]Z) -> [3](R, R) =
  let t15 = gen(i:1)
        let t2 = 0 in
        let t3 = t2 * t2 * 0.25 + t2 * 0.5 in
        let t4 = t3 * t3 + t3 in
        let t5 = t4 * t4 + t4 * 0.5 in
        let t6 = t5 * t5 + t5 in
        let t7 = t6 * t6 + t6 * 0.5 in
        let t8 = t7 * t7 + t7 in (gen(j:1) t8, sum(j:1) A[tok[0]]) in
  gen(i:3) (t15[i+1].0[0], t15[0].1)";
    let proj = "fn f(A: R, vn: [n]R, tok: [n]Z) -> [2]R =
  let t1 = gen(i:n) (gen(j:n) ([j >= 0] * vn[tok[i] - 1], eps[j, i, j] + vn[tok[i]]))[i].1 in
  let t2 = gen(i:n) 2 * tanh(t1[i]) in
  let t3 = gen(i:n) t2[i] * t2[i] * 0.25 + t2[i] * 0.5 in
  gen(i:2) (sum(j:n) let t9 = (t3[j], t3[2*i]) in t9.0) + ((gen(j:3) t3)[i-1, 2*i] + (i+1) / (1 + abs(i)))";
    let cases = [
        (
            chain,
            vec![
                arr(arr1(&[1.5, -2.0, 4.0]).into_dyn()),
                arr(arr1(&[2.0, 0.0, 1.0]).into_dyn()),
            ],
        ),
        (
            proj,
            vec![
                Value::Real(4926810.00742007),
                arr(
                    arr1(&[-4926810.4998472715, 4926810.799115796, -0.4636202649081813]).into_dyn(),
                ),
                arr(arr1(&[1.0, 2.0, 2.0]).into_dyn()),
            ],
        ),
    ];
    for (src, args) in cases {
        let f = load1(src);
        let o = optimize(&f, &Options::default()).unwrap().program;
        assert!(einsat::extract::is_normal(&o), "{}", print_function(&o));
        let want = interp::run(&f, &args).unwrap();
        let got = jit::compile(&o)
            .unwrap_or_else(|e| panic!("{e}\n{}", print_function(&o)))
            .call(&args)
            .unwrap();
        assert!(
            want.approx_eq(&got, 1e-12, 0.0),
            "{want} vs {got}\n{}",
            print_function(&o)
        );
    }
}

mod props {
    use einsat::syntax::{parse_program, print_function};
    use einsat::testing::{arb_function, GenConfig};
    use proptest::prelude::*;

    fn all() -> GenConfig {
        GenConfig::default().with_features("all").unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1000))]

        /// Random programs with gathers type-check, print → parse is the
        /// identity, and serde JSON round-trips.
        #[test]
        fn gather_programs_type_check_and_round_trip(f in arb_function(all())) {
            let sig = einsat::types::check(&f);
            prop_assert!(sig.is_ok(), "{}\n{:?}", print_function(&f), sig);
            let text = print_function(&f);
            let parsed = parse_program(&text);
            prop_assert!(parsed.is_ok(), "{}\n{:?}", text, parsed.err());
            prop_assert_eq!(&parsed.unwrap().program.functions[0], &f, "{}", text);
            let json = serde_json::to_string(&f).unwrap();
            let back: einsat::Function = serde_json::from_str(&json).unwrap();
            prop_assert_eq!(back, f);
        }
    }
}
