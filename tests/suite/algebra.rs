//! Algebraic simplification of scalar arithmetic (issue 13 item 2): like
//! terms collected, cancellations, factoring, under gens and sums, and the
//! δ/ε network reduction that lets crossdot saturate. Every case asserts the
//! optimised cost against the cost of the smaller form written by hand, and
//! the optimised program's values against the interpreter on the input.
//!
//! Collecting and cancelling terms is the fast mode's (issue 22: `x*y - y*x`
//! is NaN, not 0, for an infinite `x`); the default mode leaves those
//! programs within the floating-point contract, and still reduces δ/ε
//! networks, whose identities are exact.
#![cfg(feature = "testing")] // uses the testing support

use einsat::egraph::poly::simplify;
use einsat::extract::cost::{ir_cost, CostModel};
use einsat::extract::is_normal;
use einsat::opt::{optimize, Options};
use einsat::syntax::{print_function, Function};
use einsat::testing::{random_inputs, random_sizes};
use einsat::{interp, types};
use rand::SeedableRng;

fn func(src: &str) -> Function {
    einsat::load(src).unwrap().functions.remove(0)
}

fn cost(src: &str) -> f64 {
    ir_cost(&func(src).body, &CostModel::default())
}

/// `f` and `g` agree on random inputs (relative tolerance).
fn agree(f: &Function, g: &Function) {
    for seed in 0..4 {
        let sizes = random_sizes(f, seed, 5);
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let args = random_inputs(f, &sizes, &mut rng).unwrap();
        let a = interp::run(f, &args).unwrap();
        let b = interp::run(g, &args).unwrap();
        assert!(
            a.approx_eq(&b, 1e-9, 1e-9),
            "{a} vs {b}\n{}",
            print_function(g)
        );
    }
}

/// Optimise `src` in the fast mode: its cost must be at most the cost of
/// `target` (the same signature, the smaller form), and its values the
/// input's. The default mode must keep the program's values within the
/// floating-point contract on special and offset inputs.
fn reaches_fast(src: &str, target: &str) -> f64 {
    value_safe(src);
    let fast = Options {
        fast_math: true,
        ..Options::default()
    };
    reaches_in(src, target, &fast)
}

/// The default mode's program gives values the contract accepts for `src`
/// on inputs with infinities, NaN and large common offsets.
fn value_safe(src: &str) {
    use einsat::interp::random::{random_inputs_of, ValueClass};
    use einsat::testing::difftest::contract_oracle;
    let f = func(src);
    let o = optimize(&f, &Options::default()).unwrap();
    for class in [ValueClass::Special, ValueClass::Offset] {
        for seed in 0..8 {
            let sizes = random_sizes(&f, seed, 5);
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
            let args = random_inputs_of(&f, &sizes, class, &mut rng).unwrap();
            let sets = contract_oracle(&f, &args).unwrap();
            let got = interp::run(&o.program, &args).unwrap();
            let xs: Vec<f64> = match &got {
                interp::Value::Real(x) => vec![*x],
                interp::Value::Array(a) => a.iter().copied().collect(),
                interp::Value::Pair(..) => unreachable!("no pairs here"),
            };
            for (s, x) in sets.iter().zip(&xs) {
                assert!(
                    s.accepts(*x),
                    "{}: {x} on {class:?} inputs {args:?}, the contract accepts {}\n{}",
                    f.name,
                    s.describe(),
                    print_function(&o.program)
                );
            }
        }
    }
}

fn reaches_in(src: &str, target: &str, opts: &Options) -> f64 {
    let f = func(src);
    let o = optimize(&f, opts).unwrap();
    let want = cost(target);
    assert!(
        o.cost_after <= want + 1e-9,
        "{}: cost {} > {want} of {target}\n{}",
        f.name,
        o.cost_after,
        print_function(&o.program)
    );
    assert!(
        o.cost_after < o.cost_before,
        "{}",
        print_function(&o.program)
    );
    assert!(is_normal(&o.program), "{}", print_function(&o.program));
    assert_eq!(
        types::check(&o.program).unwrap().ret,
        types::check(&f).unwrap().ret
    );
    agree(&f, &o.program);
    agree(&f, &func(target));
    o.cost_after
}

#[test]
fn difference_of_squares_is_x_times_x() {
    let c = reaches_fast(
        "fn f(x: R, y: R) -> R = (x - y) * (x + y) + y * y",
        "fn f(x: R, y: R) -> R = x * x",
    );
    assert_eq!(c, 1.0);
}

#[test]
fn cancellations() {
    reaches_fast(
        "fn f(x: R, y: R) -> R = x * y - y * x",
        "fn f(x: R, y: R) -> R = 0",
    );
    reaches_fast(
        "fn f(a: R, b: R) -> R = (a + b) * (a + b) - a * a - b * b",
        "fn f(a: R, b: R) -> R = 2 * (a * b)",
    );
    // opaque atoms: calls and brackets cancel like names
    reaches_fast(
        "fn f(x: [n]R) -> [n]R = gen(i:n) exp(x[i]) * [i < 3] - [i < 3] * exp(x[i]) + x[i]",
        "fn f(x: [n]R) -> [n]R = gen(i:n) x[i]",
    );
}

#[test]
fn under_gens_and_sums() {
    reaches_fast(
        "fn f(u: [n]R, v: [n]R) -> [n]R = gen(i:n) (u[i] - v[i]) * (u[i] + v[i]) + v[i] * v[i]",
        "fn f(u: [n]R, v: [n]R) -> [n]R = gen(i:n) u[i] * u[i]",
    );
    reaches_fast(
        "fn f(u: [n]R, v: [n]R) -> R = sum(i:n) (u[i] + v[i]) * (u[i] + v[i]) - (u[i] - v[i]) * (u[i] - v[i])",
        "fn f(u: [n]R, v: [n]R) -> R = 4 * sum(i:n) u[i] * v[i]",
    );
    // a sum is an atom: sums that cancel outside a gen
    reaches_fast(
        "fn f(A: [n,n]R, x: [n]R) -> [n]R = gen(i:n) (sum(j:n) A[i,j] * x[j]) * x[i] - x[i] * (sum(j:n) A[i,j] * x[j]) + x[i]",
        "fn f(A: [n,n]R, x: [n]R) -> [n]R = gen(i:n) x[i]",
    );
}

#[test]
fn factoring_that_reduces_cost() {
    reaches_fast(
        "fn f(a: [n]R, x: [n]R, y: [n]R) -> R = sum(i:n) a[i] * x[i] + y[i] * a[i] - a[i] * y[i] + a[i] * y[i]",
        "fn f(a: [n]R, x: [n]R, y: [n]R) -> R = sum(i:n) a[i] * (x[i] + y[i])",
    );
    reaches_fast(
        "fn f(a: R, b: R, c: R, d: R) -> R = a * c + a * d + b * c + b * d",
        "fn f(a: R, b: R, c: R, d: R) -> R = (a + b) * (c + d)",
    );
}

#[test]
fn eps_eps_networks_reduce() {
    // (a x b) . (c x d) = (a.c)(b.d) - (a.d)(b.c), with a gen around it: a
    // difference of products, which the default mode's accuracy check
    // refuses (nearly parallel vectors lose every digit)
    reaches_fast(
        "fn f(a: [n,3]R, b: [3]R, c: [3]R, d: [3]R) -> [n]R = gen(p:n) sum(i:3) (sum(j:3, k:3) eps[i,j,k] * a[p,j] * b[k]) * (sum(l:3, m:3) eps[i,l,m] * c[l] * d[m])",
        "fn f(a: [n,3]R, b: [3]R, c: [3]R, d: [3]R) -> [n]R = let s = sum(i:3) b[i] * d[i] in let t = sum(i:3) b[i] * c[i] in gen(p:n) s * (sum(i:3) a[p,i] * c[i]) - t * sum(i:3) a[p,i] * d[i]",
    );
    // |a x b|^2 = |a|^2 |b|^2 - (a.b)^2: a difference of large products
    // where a and b are nearly parallel, so the fast mode's (the default's
    // accuracy check refuses it)
    reaches_fast(
        "fn f(a: [3]R, b: [3]R) -> R = sum(i:3) (sum(j:3, k:3) eps[i,j,k] * a[j] * b[k]) * (sum(l:3, m:3) eps[i,l,m] * a[l] * b[m])",
        "fn f(a: [3]R, b: [3]R) -> R = (sum(i:3) a[i] * a[i]) * (sum(i:3) b[i] * b[i]) - (sum(i:3) a[i] * b[i]) * (sum(i:3) a[i] * b[i])",
    );
}

/// The pass itself on random polynomials: values kept (finite inputs),
/// never more operations.
#[test]
fn simplify_keeps_values() {
    use einsat::testing::{gen_function, GenConfig};
    for seed in 0..400 {
        let f = gen_function(seed, &GenConfig::default());
        let g = Function {
            body: simplify(&f.body),
            ..f.clone()
        };
        assert_eq!(
            types::check(&g).unwrap().ret,
            types::check(&f).unwrap().ret,
            "{}",
            print_function(&g)
        );
        let sizes = random_sizes(&f, 1, 4);
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let args = random_inputs(&f, &sizes, &mut rng).unwrap();
        let (Ok(a), Ok(b)) = (interp::run(&f, &args), interp::run(&g, &args)) else {
            continue;
        };
        assert!(
            a.approx_eq(&b, 1e-6, 1e-6),
            "{a} vs {b}\n{}\n{}",
            print_function(&f),
            print_function(&g)
        );
    }
}
