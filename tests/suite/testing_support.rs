//! The public testing support: the shrinker finds small failing programs and
//! keeps them well-typed.
#![cfg(feature = "testing")] // uses the testing support

use einsat::syntax::{parse_program, print_expr};
use einsat::testing::shrink;
use einsat::types;

#[test]
fn shrink_keeps_only_what_fails() {
    let src = "fn f(x: [3]R, y: [3]R) -> R = sum(i:3) (x[i] + sqrt(abs(y[i]))) * (1 + [i < 2] * exp(x[i]))";
    let f = parse_program(src).unwrap().program.functions.remove(0);
    // "fails" whenever the program still calls exp
    let fails = |g: &einsat::Function| print_expr(&g.body).contains("exp(");
    let small = shrink(&f, fails, 1000);
    assert!(fails(&small));
    assert!(types::check(&small).is_ok());
    assert!(small.body.size() < f.body.size());
    assert!(small.body.size() <= 5, "{}", print_expr(&small.body));
}
