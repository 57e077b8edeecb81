//! Property tests of the foundation on random well-typed programs: the
//! generator makes well-typed programs, print → parse is the identity, serde
//! JSON round-trips, and the interpreter does not care about input layout.
#![cfg(feature = "testing")] // uses the testing support

use crate::common;
use common::cases;
use einsat::syntax::{parse_program, print_function, Program};
use einsat::testing::{
    arb_function, random_inputs, random_sizes, relayout_value, GenConfig, Layout,
};
use einsat::{interp, types};
use proptest::prelude::*;
use rand::SeedableRng;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(3000)))]

    #[test]
    fn generated_programs_are_well_typed(f in arb_function(GenConfig::default())) {
        let sig = types::check(&f);
        prop_assert!(sig.is_ok(), "{}\n{:?}", print_function(&f), sig);
        prop_assert_eq!(Some(sig.unwrap().ret), f.ret.clone());
    }

    #[test]
    fn print_then_parse_is_identity(f in arb_function(GenConfig::default())) {
        let text = print_function(&f);
        let parsed = parse_program(&text);
        prop_assert!(parsed.is_ok(), "{}\n{:?}", text, parsed.err());
        let p = parsed.unwrap().program;
        prop_assert_eq!(&p.functions[0], &f, "{}", text);
    }

    #[test]
    fn serde_json_round_trip(f in arb_function(GenConfig::default())) {
        let prog = Program { functions: vec![f] };
        let json = serde_json::to_string(&prog).unwrap();
        let back: Program = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(back, prog);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(3000) / 4))]

    #[test]
    fn interpreter_ignores_layout(f in arb_function(GenConfig::default()), seed in any::<u64>()) {
        let sizes = random_sizes(&f, seed, 4);
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let args = random_inputs(&f, &sizes, &mut rng).unwrap();
        let base = interp::run(&f, &args).unwrap();
        for layout in [Layout::Fortran, Layout::Sliced, Layout::Reversed] {
            let moved: Vec<_> = args.iter().map(|v| relayout_value(v, layout)).collect();
            let got = interp::run(&f, &moved).unwrap();
            prop_assert!(got.approx_eq(&base, 0.0, 0.0), "{:?}: {} vs {}\n{}", layout, got, base, print_function(&f));
        }
    }
}

#[test]
fn printer_examples() {
    let src = "fn f(A: [3,3]R, x: [3]R, c: [3]R) -> [3]R = gen(i:3) c[i] + sum(j:3) A[i,j] * x[j]";
    let p = parse_program(src).unwrap().program;
    assert_eq!(
        print_function(&p.functions[0]),
        "fn f(A: [3,3]R, x: [3]R, c: [3]R) -> [3]R =\n  gen(i:3) c[i] + sum(j:3) A[i, j] * x[j]\n"
    );
    // a binder that does not end the text keeps its parentheses
    let src = "fn g(A: [3,3]R, x: [3]R) -> R = sum(k:3) (sum(j:3) A[k,j] * x[j]) * x[k]";
    let p = parse_program(src).unwrap().program;
    assert!(print_function(&p.functions[0]).contains("sum(k:3) (sum(j:3) A[k, j] * x[j]) * x[k]"));
    // predicates and affine indices
    let src = "fn h(x: [n]R) -> [n]R = gen(i:n) [!(i = 0) && (i < 2*i-1 || i >= 3)] * x[i-1]";
    let p = parse_program(src).unwrap().program;
    let text = print_function(&p.functions[0]);
    assert!(
        text.contains("[!(i = 0) && (i < 2*i-1 || i >= 3)] * x[i-1]"),
        "{text}"
    );
}
