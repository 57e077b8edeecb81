//! The JIT against the reference interpreter in every memory layout: the
//! agreement harness of `tests/suite/jit.rs` and `tests/suite/records.rs`.

use einsat::interp::{self, Value};
use einsat::jit;
use einsat::syntax::print_function;
use einsat::testing::{random_inputs, relayout_value, Layout};
use einsat::Function;
use rand::SeedableRng;
use std::collections::BTreeMap;

/// The interpreter on `f` (any form) against the JIT on `g` (its normal
/// form, or `f` itself): for each size `n` of `sizes` (the `t`-th drawn
/// with seed `seed + t`), every size name set to `n`, random inputs, and
/// every [`Layout`] of them. Values agree within `rtol`/`atol`
/// ([`Value::approx_eq`]); a disagreement panics naming the layout, the
/// size and both programs. Returns the number of comparisons made.
pub fn agree_in_every_layout(
    f: &Function,
    g: &Function,
    seed: u64,
    sizes: &[usize],
    rtol: f64,
    atol: f64,
) -> usize {
    agree_with(f, g, &jit::Options::default(), seed, sizes, rtol, atol, 1)
}

/// [`agree_in_every_layout`] with the JIT's options `opts`, each layout
/// called `calls` times (from the second on, a call takes the
/// remembered-call path).
#[allow(clippy::too_many_arguments)]
pub fn agree_with(
    f: &Function,
    g: &Function,
    opts: &jit::Options,
    seed: u64,
    sizes: &[usize],
    rtol: f64,
    atol: f64,
    calls: usize,
) -> usize {
    let k = jit::compile_with(g, opts).unwrap_or_else(|e| panic!("{e}\n{}", print_function(g)));
    let mut runs = 0;
    for (t, &n) in sizes.iter().enumerate() {
        let named: BTreeMap<String, usize> = f.size_names().into_iter().map(|x| (x, n)).collect();
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed + t as u64);
        let args = random_inputs(f, &named, &mut rng).unwrap();
        let want = interp::run(f, &args).unwrap();
        for layout in Layout::ALL {
            let a: Vec<Value> = args.iter().map(|v| relayout_value(v, layout)).collect();
            for _ in 0..calls {
                let got = k.call(&a).unwrap();
                assert!(
                    want.approx_eq(&got, rtol, atol),
                    "{layout:?} n={n} {opts:?}\n{}\n{}\ninterp {want}\njit    {got}",
                    print_function(f),
                    print_function(g)
                );
                runs += 1;
            }
        }
    }
    runs
}

/// Every number of `v`, as bits (for bit-identity across thread counts).
pub fn bits(v: &Value) -> Vec<u64> {
    match v {
        Value::Real(x) => vec![x.to_bits()],
        Value::Array(a) => a.iter().map(|x| x.to_bits()).collect(),
        Value::Pair(a, b) => [bits(a), bits(b)].concat(),
    }
}
