//! Extraction and hoisting (issue 13, items 3 and 4): partially invariant
//! calls and divisions computed on the indices they use, values that use
//! no index computed once, DAG-aware extraction that pays a shared subterm
//! once per scope. Every optimised program is checked against the
//! interpreter on the input (and run on the JIT); costs are compared with
//! the input's and with tree-cost extraction's.
#![cfg(feature = "testing")] // uses the testing support

use einsat::extract::cost::{ir_cost, CostModel};
use einsat::extract::{is_normal, Extraction};
use einsat::interp::{self, Value};
use einsat::jit;
use einsat::opt::{optimize, Optimized, Options};
use einsat::syntax::{print_function, BinOp, Expr, Function};
use einsat::testing::random_inputs;
use ndarray::{ArrayD, IxDyn};
use rand::SeedableRng;
use std::collections::BTreeMap;

fn func(src: &str) -> Function {
    einsat::load(src).unwrap().functions.remove(0)
}

fn opt_with(f: &Function, how: Extraction) -> Optimized {
    opt_mode(f, how, false)
}

fn opt_mode(f: &Function, how: Extraction, fast_math: bool) -> Optimized {
    let o = optimize(
        f,
        &Options {
            extraction: how,
            fast_math,
            ..Options::default()
        },
    )
    .unwrap();
    assert!(is_normal(&o.program), "{}", print_function(&o.program));
    o
}

/// Values agree bit for bit where either is NaN or infinite, and within a
/// relative tolerance elsewhere.
fn same(a: &Value, b: &Value) -> bool {
    a.approx_eq(b, 1e-9, 1e-9)
}

/// `g` (the optimised `f`) agrees with `f` on the interpreter and on the
/// JIT, for a few sizes of random inputs.
fn agrees(f: &Function, g: &Function) {
    let k = jit::compile(g).unwrap_or_else(|e| panic!("{e}\n{}", print_function(g)));
    for (seed, n) in [(1u64, 1usize), (2, 3), (3, 6)] {
        let sizes: BTreeMap<String, usize> = f.size_names().into_iter().map(|x| (x, n)).collect();
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let args = random_inputs(f, &sizes, &mut rng).unwrap();
        let want = interp::run(f, &args).unwrap();
        let got = interp::run(g, &args).unwrap();
        assert!(same(&want, &got), "{}\n{want}\n{got}", print_function(g));
        let jit = k.call(&args).unwrap();
        assert!(same(&want, &jit), "{}\n{want}\n{jit}", print_function(g));
    }
}

/// The top-level `let` values of a normal-form body.
fn lets(f: &Function) -> Vec<&Expr> {
    let mut out = Vec::new();
    let mut e = &f.body;
    while let Expr::Let(_, a, b) = e {
        out.push(&**a);
        e = b;
    }
    out
}

/// The result expression after the lets.
fn result(f: &Function) -> &Expr {
    let mut e = &f.body;
    while let Expr::Let(_, _, b) = e {
        e = b;
    }
    e
}

/// Number of `gen` binders wrapping `e`.
fn rank(e: &Expr) -> usize {
    match e {
        Expr::Gen(_, _, b) => 1 + rank(b),
        _ => 0,
    }
}

fn count(e: &Expr, p: &dyn Fn(&Expr) -> bool) -> usize {
    usize::from(p(e)) + e.children().into_iter().map(|c| count(c, p)).sum::<usize>()
}

fn is_call(e: &Expr) -> bool {
    matches!(e, Expr::Call(..))
}

#[test]
fn calls_on_separate_axes_are_computed_on_their_axes() {
    let f = func("fn outer(u: [n]R, v: [m]R) -> [n,m]R = gen(i:n, j:m) exp(u[i]) * cos(v[j])");
    let o = opt_with(&f, Extraction::Dag);
    let g = &o.program;
    // exp and cos each in a let over one axis; the result only multiplies
    let ls = lets(g);
    assert_eq!(ls.len(), 2, "{}", print_function(g));
    for l in &ls {
        assert_eq!(rank(l), 1, "{}", print_function(g));
        assert_eq!(count(l, &is_call), 1);
    }
    assert_eq!(count(result(g), &is_call), 0, "{}", print_function(g));
    // n + m calls instead of n·m: about CALL_COST + 1 less per element
    let m = CostModel::default();
    assert_eq!(o.cost_after, ir_cost(&g.body, &m));
    assert!(
        o.cost_after * 2.5 < o.cost_before,
        "{} {}",
        o.cost_before,
        o.cost_after
    );
    agrees(&f, g);
}

#[test]
fn a_value_that_uses_no_index_is_computed_once() {
    let f = func("fn logc(x: [n]R, t0: R) -> [n]R = gen(i:n) x[i] - log(t0)");
    let o = opt_with(&f, Extraction::Dag);
    let g = &o.program;
    let ls = lets(g);
    assert_eq!(ls.len(), 1, "{}", print_function(g));
    assert_eq!(rank(ls[0]), 0);
    assert!(matches!(ls[0], Expr::Call(..)), "{}", print_function(g));
    assert_eq!(count(result(g), &is_call), 0);
    // the logarithm once, then a subtraction and a load per element
    assert!(o.cost_after * 2.0 < o.cost_before);
    agrees(&f, g);
}

#[test]
fn division_and_sqrt_on_a_subset_of_axes() {
    let f = func(
        "fn divc(x: [n,m]R, y: [n]R, z: [n]R) -> [n,m]R = gen(i:n, j:m) x[i,j] / sqrt(y[i]) + x[i,j] * (y[i] / z[i])",
    );
    let o = opt_with(&f, Extraction::Dag);
    let g = &o.program;
    assert_eq!(count(result(g), &is_call), 0, "{}", print_function(g));
    let divs_in_result = count(result(g), &|e| matches!(e, Expr::Bin(BinOp::Div, ..)));
    assert_eq!(divs_in_result, 1, "{}", print_function(g));
    assert!(o.cost_after < o.cost_before);
    agrees(&f, g);
}

#[test]
fn an_invariant_factor_of_a_sum_is_hoisted_out_of_the_outer_gen() {
    let f = func(
        "fn sumin(u: [n,k]R, w: [k,m]R) -> [n,m]R = gen(i:n, j:m) sum(l:k) exp(u[i,l]) * w[l,j]",
    );
    let o = opt_with(&f, Extraction::Dag);
    let g = &o.program;
    let ls = lets(g);
    assert_eq!(ls.len(), 1, "{}", print_function(g));
    assert_eq!(rank(ls[0]), 2);
    assert_eq!(count(result(g), &is_call), 0);
    assert!(o.cost_after * 10.0 < o.cost_before);
    agrees(&f, g);
}

#[test]
fn hoisting_only_when_the_cost_model_says_so() {
    // over one j, hoisting exp would add a loop and a load for nothing
    let f = func("fn one(u: [3]R) -> [3,1]R = gen(i:3, j:1) exp(u[i]) * 2");
    let o = opt_with(&f, Extraction::Dag);
    assert!(
        lets(&o.program).is_empty(),
        "{}",
        print_function(&o.program)
    );
    agrees(&f, &o.program);
}

#[test]
fn hoisted_values_keep_padding() {
    let f = func("fn pad(u: [n]R, v: [m]R) -> [n,m]R = gen(i:n, j:m) exp(u[i+1]) * cos(v[j-1])");
    let o = opt_with(&f, Extraction::Dag);
    assert_eq!(lets(&o.program).len(), 2, "{}", print_function(&o.program));
    agrees(&f, &o.program);
}

#[test]
fn hoisted_values_keep_strong_zeros() {
    // log of a negative is NaN; the bracket kills it where j >= 2
    let f = func("fn sz(u: [n]R, v: [m]R) -> [n,m]R = gen(i:n, j:m) [j < 2] * log(u[i]) + v[j]");
    let o = opt_with(&f, Extraction::Dag);
    let g = &o.program;
    assert_eq!(
        count(result(g), &is_call),
        0,
        "hoisted: {}",
        print_function(g)
    );
    let u = ArrayD::from_shape_vec(IxDyn(&[3]), vec![-1.0, 2.0, f64::NAN]).unwrap();
    let v = ArrayD::from_shape_vec(IxDyn(&[4]), vec![0.5, -1.0, 3.0, 0.25]).unwrap();
    let args = [Value::Array(u), Value::Array(v)];
    let want = interp::run(&f, &args).unwrap();
    let got = interp::run(g, &args).unwrap();
    let jit = jit::compile(g).unwrap().call(&args).unwrap();
    for r in [&want, &got, &jit] {
        let Value::Array(w) = r else { panic!("{r}") };
        for i in [0, 2] {
            assert!(w[[i, 0]].is_nan() && w[[i, 1]].is_nan(), "{r}");
            assert_eq!((w[[i, 2]], w[[i, 3]]), (3.0, 0.25), "strong zero: {r}");
        }
    }
    assert!(same(&want, &got), "{want}\n{got}");
    assert!(same(&want, &jit), "{want}\n{jit}");
}

/// Tree cost pays `sum(k) u[k]*v[k]` twice in the split form of
/// `(Σ u(v+w)) · Σ uv` and so keeps the input; DAG extraction sees it
/// shared, extracts `s·s + s·Σ uw` (or a factored form), and the post-pass
/// computes `s` once.
#[test]
fn dag_extraction_beats_tree_extraction_on_a_shared_sum() {
    // splitting u*(v+w) into u*v + u*w is the fast mode's: where v ≈ -w
    // the written sum keeps digits the split one loses
    let f = func(
        "fn split(u: [n]R, v: [n]R, w: [n]R) -> R = (sum(k:n) u[k]*(v[k]+w[k])) * sum(k:n) u[k]*v[k]",
    );
    let safe = opt_with(&f, Extraction::Dag);
    assert_eq!(
        safe.cost_after,
        safe.cost_before,
        "{}",
        print_function(&safe.program)
    );
    let tree = opt_mode(&f, Extraction::Tree, true);
    let dag = opt_mode(&f, Extraction::Dag, true);
    let m = CostModel::default();
    assert_eq!(dag.cost_after, ir_cost(&dag.program.body, &m));
    assert!(
        dag.cost_after * 1.15 < tree.cost_after,
        "dag {} tree {}\n{}\n{}",
        dag.cost_after,
        tree.cost_after,
        print_function(&dag.program),
        print_function(&tree.program)
    );
    // the shared sum is a let, read more than once
    assert_eq!(
        lets(&dag.program).len(),
        1,
        "{}",
        print_function(&dag.program)
    );
    agrees(&f, &dag.program);
    agrees(&f, &tree.program);
}

/// The same inside a loop: the shared value is one per iteration of `i`.
#[test]
fn dag_extraction_shares_within_a_loop_body() {
    let f = func(
        "fn splitg(A: [n,m]R, v: [m]R, w: [m]R, c: [n]R) -> [n]R = gen(i:n) exp(c[i]) * (sum(k:m) A[i,k]*(v[k]+w[k])) + exp(c[i]) * sum(k:m) A[i,k]*v[k]",
    );
    let tree = opt_with(&f, Extraction::Tree);
    let dag = opt_with(&f, Extraction::Dag);
    assert!(dag.cost_after <= tree.cost_after);
    assert!(dag.cost_after < dag.cost_before);
    agrees(&f, &dag.program);
}

#[test]
fn extraction_is_deterministic() {
    let f = func(
        "fn split(u: [n]R, v: [n]R, w: [n]R) -> R = (sum(k:n) u[k]*(v[k]+w[k])) * sum(k:n) u[k]*v[k]",
    );
    let a = opt_with(&f, Extraction::Dag);
    let b = opt_with(&f, Extraction::Dag);
    assert_eq!(print_function(&a.program), print_function(&b.program));
    assert_eq!(a.cost_after, b.cost_after);
}

/// The diamond: `A x` feeds a call on each axis; hoisting the calls keeps
/// the product shared (one `sum`), and each call runs n times, not n².
#[test]
fn calls_of_a_shared_sum_are_hoisted_and_the_sum_computed_once() {
    let f = func(
        "fn diamond(A: [n,n]R, x: [n]R) -> [n,n]R = gen(i:n, j:n) sin(sum(k:n) A[i,k] * x[k]) * cos(sum(k:n) A[j,k] * x[k])",
    );
    let o = opt_with(&f, Extraction::Dag);
    let g = &o.program;
    let sums = count(&g.body, &|e| matches!(e, Expr::Sum(..)));
    assert_eq!(sums, 1, "{}", print_function(g));
    assert_eq!(count(result(g), &is_call), 0, "{}", print_function(g));
    for l in lets(g) {
        assert!(rank(l) <= 1, "{}", print_function(g));
    }
    agrees(&f, g);
}

/// Softmax: the row sum of the hoisted numerator reads it back, so every
/// `exp` is computed once (the sum's body, materialised, keeps the counts
/// of the scalar it came from), and attention's `P · V` keeps that shape.
#[test]
fn a_sum_of_a_hoisted_call_reads_the_call_back() {
    for src in [
        "fn sm(X: [n,m]R) -> [n,m]R = gen(i:n) let mx = max(j:m) X[i,j] in \
         let z = sum(j:m) exp(X[i,j] - mx) in gen(j:m) exp(X[i,j] - mx) / z",
        "fn att(Q: [s,d]R, K: [s,d]R, V: [s,d]R) -> [s,d]R = \
         let S = gen(i:s, j:s) (sum(l:d) Q[i,l] * K[j,l]) / 8 in \
         let P = gen(i:s) let mx = max(j:s) S[i,j] in let z = sum(j:s) exp(S[i,j] - mx) in \
         gen(j:s) exp(S[i,j] - mx) / z in gen(i:s, c:d) sum(j:s) P[i,j] * V[j,c]",
    ] {
        let f = func(src);
        let o = opt_with(&f, Extraction::Dag);
        let g = &o.program;
        assert_eq!(count(&g.body, &is_call), 1, "{}", print_function(g));
        agrees(&f, g);
    }
}
