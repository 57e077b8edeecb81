//! Arrays of records end to end: results and `let`s holding tensors of
//! pairs (`[n](R,R)`, nested pairs, rank 2, a tensor inside a component)
//! are carried as struct of arrays by the JIT, on the program as written
//! and after `optimize`, and agree with the interpreter.
#![cfg(feature = "testing")] // uses the testing support

use crate::common;
use common::agree::agree_in_every_layout;
use common::cases;
use einsat::extract::is_normal;
use einsat::interp::{self, Value};
use einsat::jit;
use einsat::opt::{optimize, Options};
use einsat::syntax::{parse_program, print_function, Expr};
use einsat::testing::difftest::{case_from_seed, check, DiffConfig, Verdict};
use einsat::testing::{gen_function, GenConfig};
use einsat::{Function, Type};
use ndarray::{arr1, ArrayD, IxDyn};
use proptest::prelude::*;

const CMV: &str = "
fn cmv(A: [n,n](R,R), x: [n](R,R)) -> [n](R,R) =
  gen(i:n) (sum(j:n) A[i,j].0*x[j].0 - A[i,j].1*x[j].1,
            sum(j:n) A[i,j].0*x[j].1 + A[i,j].1*x[j].0)
";

const MORE: &str = "
fn nested(x: [n]R, y: [n]R) -> [n]((R,R),R) =
  gen(i:n) ((x[i] + y[i], x[i] * y[i]), x[i] - y[i])
fn rank2(A: [n,m]R) -> [n,m](R,R) = gen(i:n, j:m) (A[i,j] * A[i,j], A[i,j] + 1)
fn inner(A: [n,m]R) -> [n]([m]R, R) = gen(i:n) (gen(j:m) A[i,j] * 2, sum(j:m) A[i,j])
fn cmm(A: [n,m](R,R), B: [m,k](R,R)) -> [n,k](R,R) =
  gen(i:n, l:k) (sum(j:m) A[i,j].0 * B[j,l].0 - A[i,j].1 * B[j,l].1,
                 sum(j:m) A[i,j].0 * B[j,l].1 + A[i,j].1 * B[j,l].0)
fn pairlet(x: [n]R) -> [n]R =
  let d = gen(i:n) (x[i] * x[i], exp(x[i])) in
  gen(i:n) d[i-1].0 + d[i+1].1 * d[i].0
fn nestedlet(x: [n]R, y: [m]R) -> [n,m](R,R) =
  let d = gen(i:n, j:m) ((x[i] * y[j], x[i] + y[j]), [i = j] * 2) in
  gen(i:n, j:m) (d[i,j].0.0 + d[i,j].1, d[i,j].0.1 * d[i,j].1)
fn innerlet(A: [n,m]R) -> R =
  let d = gen(i:n) (gen(j:m) A[i,j] * A[i,j], sum(j:m) A[i,j]) in
  sum(i:n) d[i].1 * sum(j:m) d[i].0[j]
fn twice(x: [n]R) -> ([n](R,R), R) =
  let d = gen(i:n) (x[i] + 1, x[i] * 3) in
  (gen(i:n) (d[i].1, d[i].0), sum(i:n) d[i].0 * d[i].1)
fn guarded(x: [n]R) -> [n](R,R) =
  let d = gen(i:n) ([i = 0] * x[i], [i > 0] * x[i]) in
  gen(i:n) (d[i].0 * (1 / x[i]), d[i].0 + d[i].1)
";

fn functions() -> Vec<Function> {
    let records = include_str!("../../examples/records.tl");
    let mut out = Vec::new();
    for src in [records, CMV, MORE] {
        out.extend(einsat::load(src).unwrap().functions);
    }
    out
}

fn close(a: &Value, b: &Value) -> bool {
    a.approx_eq(b, 1e-9, 1e-12)
}

/// The interpreter on `f` against the JIT on `g`, for a few sizes and
/// every layout; returns the number of comparisons.
fn agree(f: &Function, g: &Function, seed: u64) -> usize {
    agree_in_every_layout(f, g, seed, &[1, 3, 8, 0], 1e-9, 1e-12)
}

#[test]
fn records_and_cmv_run_on_the_jit_after_optimize() {
    let mut runs = 0;
    for f in functions() {
        let o = optimize(&f, &Options::default()).unwrap();
        let g = &o.program;
        assert!(is_normal(g), "{}", print_function(g));
        // the optimised program prints, parses back and type-checks with
        // the same signature
        let text = print_function(g);
        let back = parse_program(&text).unwrap().program.functions;
        assert_eq!(back[0], *g, "{text}");
        let (sf, sg) = (einsat::types::check(&f), einsat::types::check(g));
        assert_eq!(sf.unwrap().ret, sg.unwrap().ret, "{text}");
        runs += agree(&f, g, 3);
    }
    assert!(runs >= 12 * 16, "{runs}");
}

#[test]
fn records_run_on_the_jit_as_written() {
    // every function above is in normal form as written (records and
    // `let`s of records included) and compiles without the optimiser
    for f in functions() {
        assert!(is_normal(&f), "{}", print_function(&f));
        agree(&f, &f, 7);
    }
}

#[test]
fn dual_square_and_cmv_values() {
    let fs = functions();
    let get = |n: &str| fs.iter().find(|f| f.name == n).unwrap().clone();
    let x = Value::Array(arr1(&[1.0, -2.0, 3.0]).into_dyn());
    for f in [
        get("dual_square"),
        optimize(&get("dual_square"), &Options::default())
            .unwrap()
            .program,
    ] {
        let v = jit::compile(&f)
            .unwrap()
            .call(std::slice::from_ref(&x))
            .unwrap();
        let want = Value::pair(
            Value::Array(arr1(&[1.0, 4.0, 9.0]).into_dyn()),
            Value::Array(arr1(&[2.0, -4.0, 6.0]).into_dyn()),
        );
        assert!(close(&v, &want), "{v}");
    }
    // (1+2i, 3-i; -i, 2) (1+i, 2) = (1+2i)(1+i) + (3-i)2, -i(1+i) + 4
    //                              = (5 + i, 5 - i)
    let a = Value::pair(
        Value::Array(ArrayD::from_shape_vec(IxDyn(&[2, 2]), vec![1.0, 3.0, 0.0, 2.0]).unwrap()),
        Value::Array(ArrayD::from_shape_vec(IxDyn(&[2, 2]), vec![2.0, -1.0, -1.0, 0.0]).unwrap()),
    );
    let xv = Value::pair(
        Value::Array(arr1(&[1.0, 2.0]).into_dyn()),
        Value::Array(arr1(&[1.0, 0.0]).into_dyn()),
    );
    let want = Value::pair(
        Value::Array(arr1(&[5.0, 5.0]).into_dyn()),
        Value::Array(arr1(&[1.0, -1.0]).into_dyn()),
    );
    let cmv = get("cmv");
    for f in [
        cmv.clone(),
        optimize(&cmv, &Options::default()).unwrap().program,
    ] {
        let v = jit::compile(&f)
            .unwrap()
            .call(&[a.clone(), xv.clone()])
            .unwrap();
        assert!(close(&v, &want), "{}: {v}", print_function(&f));
        assert!(close(
            &interp::run(&f, &[a.clone(), xv.clone()]).unwrap(),
            &want
        ));
    }
}

#[test]
fn strong_zeros_through_a_let_of_pairs() {
    // d[i].0 is a strong zero for i > 0: times 1/x[i] = inf (x[i] = 0) or
    // NaN, it stays 0, in the interpreter and in the JIT alike
    let f = functions()
        .into_iter()
        .find(|f| f.name == "guarded")
        .unwrap();
    let x = Value::Array(arr1(&[2.0, 0.0, f64::NAN, -1.0]).into_dyn());
    let want = interp::run(&f, std::slice::from_ref(&x)).unwrap();
    for g in [
        f.clone(),
        optimize(&f, &Options::default()).unwrap().program,
    ] {
        let got = jit::compile(&g)
            .unwrap()
            .call(std::slice::from_ref(&x))
            .unwrap();
        assert!(
            close(&want, &got),
            "{}\ninterp {want}\njit    {got}",
            print_function(&g)
        );
    }
    let Value::Pair(a, _) = &want else {
        panic!("{want}")
    };
    let Value::Array(a) = &**a else { panic!() };
    assert_eq!(a.as_slice().unwrap(), &[1.0, 0.0, 0.0, 0.0]);
}

#[test]
fn records_inside_an_expression_are_still_refused_by_the_jit() {
    // a pair read back inline is not normal form: the JIT names it
    let p = einsat::load("fn f(x: [n]R) -> R = sum(i:n) (gen(j:n) (x[j], 1))[i].0").unwrap();
    let f = &p.functions[0];
    assert!(!is_normal(f));
    let m = jit::compile(f).unwrap_err().to_string();
    assert!(m.contains("not in normal form"), "{m}");
    // and the optimiser puts it in normal form
    let o = optimize(f, &Options::default()).unwrap();
    assert!(is_normal(&o.program));
    agree(f, &o.program, 1);
}

/// Does `f` return or bind a tensor holding pairs?
fn has_record(f: &Function) -> bool {
    fn record(t: &Type) -> bool {
        match t {
            Type::Real | Type::Int => false,
            Type::Tensor(_, e) => !e.is_pair_free() || record(e),
            Type::Pair(a, b) => record(a) || record(b),
        }
    }
    fn let_of_pairs(e: &Expr) -> bool {
        if let Expr::Let(_, a, _) = e {
            let (mut g, mut gens) = (&**a, 0);
            while let Expr::Gen(_, _, b) = g {
                (g, gens) = (b, gens + 1);
            }
            if gens > 0 && matches!(g, Expr::Pair(..)) {
                return true;
            }
        }
        e.children().into_iter().any(let_of_pairs)
    }
    einsat::types::check(f).is_ok_and(|s| record(&s.ret)) || let_of_pairs(&f.body)
}

#[test]
fn the_generator_draws_records() {
    let cfg = GenConfig::default();
    let n = (0..300u64)
        .filter(|&s| has_record(&gen_function(s, &cfg)))
        .count();
    assert!(n >= 30, "only {n} of 300 programs hold records");
    let off = GenConfig {
        records: false,
        ..GenConfig::default()
    };
    let ret = |f: &Function| einsat::types::check(f).unwrap().ret;
    assert!((0..300u64).all(|s| {
        let f = gen_function(s, &off);
        match ret(&f) {
            Type::Tensor(_, e) => e.is_pair_free(),
            _ => true,
        }
    }));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(400), max_global_rejects: 1_000_000, ..ProptestConfig::default() })]

    /// Random programs holding records: the interpreter, the optimiser +
    /// interpreter and the optimiser + JIT agree, and the JIT leg runs.
    #[test]
    fn random_records_agree_through_the_jit(seed in any::<u64>()) {
        let cfg = DiffConfig::default();
        let case = case_from_seed(seed, &cfg);
        prop_assume!(case.as_ref().is_ok_and(|c| has_record(&c.function)));
        let case = case.unwrap();
        let v = check(&case, &cfg);
        prop_assert!(matches!(v, Verdict::Agree { jit: true }), "{}\n{:?}", print_function(&case.function), v);
        // as written, when in normal form, the JIT compiles it too
        let f = &case.function;
        if is_normal(f) {
            let k = jit::compile(f);
            prop_assert!(k.is_ok(), "{}\n{:?}", print_function(f), k.err());
        }
    }
}
