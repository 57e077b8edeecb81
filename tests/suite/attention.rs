//! Attention `softmax(Q·Kᵀ/8)·V` as the optimiser writes it: both
//! products GEMM stages, and the softmax's second `exp` pass found to be
//! the first's (reuse of a temporary through a `let` that renames a cheap
//! expression, `schedule::reuse`), whose renaming temporary is then not
//! run. Against the interpreter in every layout, with special values by
//! the floating-point contract.
#![cfg(feature = "testing")] // uses the testing support

use einsat::interp::{self, Value};
use einsat::jit::{self, Options};
use einsat::testing::difftest::contract_judge;
use einsat::testing::{random_inputs, relayout_value, Layout};
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;

/// The attention program as `einsat opt` wrote python/bench_programs.py's
/// before a product divided by a power of two was one GEMM stage (now
/// `t0 = (Q Kᵀ) / 8`, tests/suite/gemm.rs): `/ 8` at each use and a `let` that
/// renames it, what reuse must see through.
const ATT: &str = "fn att(Q: [s,d]R, K: [s,d]R, V: [s,d]R) -> [s,d]R =
  let t0 = gen(i:s, j:s) sum(k:d) Q[i, k] * K[j, k] in
  let t1 = gen(i:s) max(j:s) t0[i, j] / 8 in
  let t2 = gen(i:s, j:s) exp(t0[i, j] / 8 - t1[i]) in
  let t3 = gen(i:s, j:s) t0[i, j] / 8 in
  let t4 = gen(i:s) sum(j:s) exp(t3[i, j] - t1[i]) in
  let t5 = gen(i:s, j:s) t2[i, j] / t4[i] in gen(i:s, j:d) sum(k:s) t5[i, k] * V[k, j]";

#[test]
fn attention_computes_each_exp_once() {
    let f = einsat::load(ATT).unwrap().functions.remove(0);
    for (s, d) in [(1, 1), (3, 2), (17, 5), (40, 16)] {
        let sizes: BTreeMap<String, usize> = [("s".to_string(), s), ("d".to_string(), d)]
            .into_iter()
            .collect();
        let mut rng = rand::rngs::StdRng::seed_from_u64(s as u64);
        let args = random_inputs(&f, &sizes, &mut rng).unwrap();
        let want = interp::run(&f, &args).unwrap();
        let odd: Vec<Value> = args
            .iter()
            .map(|v| match v {
                Value::Array(a) => Value::Array(a.mapv(|x| match rng.gen_range(0..12) {
                    0 => f64::INFINITY,
                    1 => f64::NAN,
                    2 => 1e300,
                    3 => x + 1e6,
                    _ => x,
                })),
                v => v.clone(),
            })
            .collect();
        for threads in [1, 2] {
            let o = Options {
                threads,
                gemm_min_work: 0,
                ..Options::default()
            };
            let k = jit::compile_with(&f, &o).unwrap();
            // t3's nest is not run: 6 stages for 7 nests
            assert_eq!(
                k.stages(),
                [
                    "gemm s×s×d",
                    "native",
                    "native",
                    "native",
                    "native",
                    "gemm s×d×s"
                ]
            );
            for layout in Layout::ALL {
                let a: Vec<Value> = args.iter().map(|v| relayout_value(v, layout)).collect();
                let got = k.call(&a).unwrap();
                assert!(want.approx_eq(&got, 1e-12, 1e-12), "{layout:?} s {s} d {d}");
                let a: Vec<Value> = odd.iter().map(|v| relayout_value(v, layout)).collect();
                let got = k.call(&a).unwrap();
                if let Some(why) = contract_judge(&f, &odd, &got).unwrap() {
                    panic!("special values {layout:?} s {s} d {d}: {why}");
                }
            }
        }
    }
}
