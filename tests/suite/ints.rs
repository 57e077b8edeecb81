//! Integer programs (issue 25, item 5): the interpreter's `I64`/`I32`
//! meaning against hand-written wrapping integer loops bit for bit
//! (matvec, a cumulative sum by `fold`, a prefix max, a stencil,
//! wrap-around at overflow, `i32` wrapping, integers beyond 2^53 read
//! exactly); the integrality check's errors (with positions); the JIT in
//! `I64`/`I32` against the integer interpreter bit for bit, on the hand
//! programs and on random integral programs, with integers near the
//! limits and strided, reversed and transposed views; the optimiser in
//! integer precision (its result equals the written program's, bit for
//! bit); calls with the wrong element type.
#![cfg(feature = "testing")] // uses the testing support

use crate::common;

use common::{jit_opts, load1};

use common::cases;
use einsat::interp::{self, IntValue};
use einsat::opt::{optimize, Options};
use einsat::syntax::print_function;
use einsat::testing::{arb_function, random_inputs, random_sizes, GenConfig};
use einsat::{jit, Function, IntArg, IntElem, Precision, Value};
use ndarray::{arr1, Array2, ArrayD, IxDyn, Slice};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

fn v1<T: Clone>(x: &[T]) -> IntValue<T> {
    IntValue::Array(arr1(x).into_dyn())
}

fn arr<T: Clone + std::fmt::Debug>(v: &IntValue<T>) -> Vec<T> {
    match v {
        IntValue::Array(a) => a.iter().cloned().collect(),
        _ => panic!("not an array: {v:?}"),
    }
}

/// The JIT's result of `f` in the format of `T`, on `args` as given.
fn jit_run<T: IntElem>(f: &Function, args: &[IntValue<T>]) -> IntValue<T> {
    let k = jit::compile_uncached_with(f, &jit_opts(T::PRECISION))
        .unwrap_or_else(|e| panic!("{}: {e}", print_function(f)));
    let refs: Vec<IntArg<'_, T>> = args.iter().map(|a| a.as_arg()).collect();
    k.call_int(&refs)
        .unwrap_or_else(|e| panic!("{}: {e}", print_function(f)))
}

/// Interpreter and JIT agree bit for bit; the interpreter's result.
fn both<T: IntElem>(f: &Function, args: &[IntValue<T>]) -> IntValue<T> {
    let want = interp::run_int(f, args).unwrap_or_else(|e| panic!("{e}"));
    let got = jit_run(f, args);
    assert_eq!(got, want, "{}", print_function(f));
    want
}

/// Integers spread over the whole width, with the limits and the values
/// next to them often.
fn wide<T: IntElem>(rng: &mut impl Rng) -> T {
    let bits = T::PRECISION.int_bits();
    let (lo, hi) = if bits == 64 {
        (i64::MIN, i64::MAX)
    } else {
        (i64::from(i32::MIN), i64::from(i32::MAX))
    };
    let x = match rng.gen_range(0..6) {
        0 => lo + rng.gen_range(0..3),
        1 => hi - rng.gen_range(0..3),
        2 => rng.gen_range(-3..=3),
        3 => rng.gen_range(-1000..=1000),
        // around ±2^53 (in i64) / ±2^31 halves (in i32)
        4 => {
            let c = if bits == 64 { 1i64 << 53 } else { 1 << 30 };
            let s = if rng.gen_bool(0.5) { c } else { -c };
            s + rng.gen_range(-2..=2)
        }
        _ => rng.gen_range(lo..=hi),
    };
    T::from_i64(x)
}

#[test]
fn matvec_in_i64_is_the_wrapping_loop() {
    let f = load1("fn mv(A: [n,m]R, x: [m]R) -> [n]R = gen(i:n) sum(j:m) A[i,j] * x[j]");
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let (n, m) = (5, 7);
    let a: Vec<i64> = (0..n * m).map(|_| wide::<i64>(&mut rng)).collect();
    let x: Vec<i64> = (0..m).map(|_| wide::<i64>(&mut rng)).collect();
    let mut want = vec![0i64; n];
    for i in 0..n {
        for j in 0..m {
            want[i] = want[i].wrapping_add(a[i * m + j].wrapping_mul(x[j]));
        }
    }
    let am = IntValue::Array(Array2::from_shape_vec((n, m), a).unwrap().into_dyn());
    let r = both(&f, &[am, v1(&x)]);
    assert_eq!(arr(&r), want);
}

#[test]
fn cumsum_prefix_max_and_a_stencil_in_i64() {
    let cumsum = load1(
        "fn cumsum(x: [n]R) -> [n]R = gen(i:n) fold(k:n, acc = 0) where(k <= i, acc + x[k], acc)",
    );
    let pmax = load1(
        "fn pmax(x: [n]R) -> [n]R = gen(i:n) fold(k:n, acc = x[0]) where(k <= i, max(acc, x[k]), acc)",
    );
    let stencil = load1("fn st(x: [n]R) -> [n]R = gen(i:n) x[i-1] - 2 * x[i] + x[i+1]");
    let mut rng = rand::rngs::StdRng::seed_from_u64(2);
    let x: Vec<i64> = (0..40).map(|_| wide::<i64>(&mut rng)).collect();
    let mut acc = 0i64;
    let want: Vec<i64> = x
        .iter()
        .map(|&v| {
            acc = acc.wrapping_add(v);
            acc
        })
        .collect();
    assert_eq!(arr(&both(&cumsum, &[v1(&x)])), want);
    let mut m = x[0];
    let want: Vec<i64> = x
        .iter()
        .map(|&v| {
            m = m.max(v);
            m
        })
        .collect();
    assert_eq!(arr(&both(&pmax, &[v1(&x)])), want);
    let at = |k: i64| {
        if k < 0 || k >= x.len() as i64 {
            0
        } else {
            x[k as usize]
        }
    };
    let want: Vec<i64> = (0..x.len() as i64)
        .map(|i| {
            at(i - 1)
                .wrapping_sub(2i64.wrapping_mul(at(i)))
                .wrapping_add(at(i + 1))
        })
        .collect();
    assert_eq!(arr(&both(&stencil, &[v1(&x)])), want);
}

#[test]
fn sums_wrap_at_overflow_and_inputs_beyond_2_pow_53_are_exact() {
    let s = load1("fn s(x: [n]R) -> R = sum(i:n) x[i]");
    let x = [i64::MAX, 1, 1];
    assert_eq!(both(&s, &[v1(&x)]), IntValue::Int(i64::MIN + 1));
    let inc = load1("fn inc(x: [n]R) -> [n]R = gen(i:n) x[i] + 1");
    let big = (1i64 << 53) + 1;
    assert_eq!(arr(&both(&inc, &[v1(&[big])])), vec![big + 1]);
    // the f64 run cannot tell 2^53 + 1 from 2^53
    let r = interp::run(&inc, &[Value::Array(arr1(&[big as f64]).into_dyn())]).unwrap();
    assert_eq!(r, Value::Array(arr1(&[(1u64 << 53) as f64]).into_dyn()));
    // negation and the empty reductions
    let neg = load1("fn ng(x: R) -> R = -x");
    assert_eq!(
        both(&neg, &[IntValue::Int(i64::MIN)]),
        IntValue::Int(i64::MIN)
    );
    let mx = load1("fn mx(x: [n]R) -> (R, R) = (max(i:n) x[i], min(i:n) x[i])");
    assert_eq!(
        both(&mx, &[v1::<i64>(&[])]),
        IntValue::pair(IntValue::Int(i64::MIN), IntValue::Int(i64::MAX))
    );
    assert_eq!(
        both(&mx, &[v1::<i32>(&[])]),
        IntValue::pair(IntValue::Int(i32::MIN), IntValue::Int(i32::MAX))
    );
}

#[test]
fn i32_wraps_to_32_bits_after_every_operation() {
    let f = load1("fn f(x: [n]R, y: [n]R) -> [n]R = gen(i:n) x[i] * y[i] + 7 - i");
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let x: Vec<i32> = (0..33).map(|_| wide::<i32>(&mut rng)).collect();
    let y: Vec<i32> = (0..33).map(|_| wide::<i32>(&mut rng)).collect();
    let want: Vec<i32> = (0..33)
        .map(|k| {
            x[k].wrapping_mul(y[k])
                .wrapping_add(7)
                .wrapping_sub(k as i32)
        })
        .collect();
    assert_eq!(arr(&both(&f, &[v1(&x), v1(&y)])), want);
    let s = load1("fn s(x: [n]R) -> R = sum(i:n) x[i] * x[i]");
    let want = x
        .iter()
        .fold(0i32, |a, &v| a.wrapping_add(v.wrapping_mul(v)));
    assert_eq!(both(&s, &[v1(&x)]), IntValue::Int(want));
    // the literal range of i32
    let lit = load1("fn l(x: R) -> R = x + 2147483647");
    assert_eq!(both(&lit, &[IntValue::Int(1i32)]), IntValue::Int(i32::MIN));
}

#[test]
fn comparisons_where_brackets_eps_and_pairs() {
    let f = load1(
        "fn f(x: [n]R, y: [n]R) -> ([n]R, R) =
           (gen(i:n) where(x[i] > y[i] && !(x[i] = 0), x[i], y[i]) * [i < 3] + eps[i, 1],
            sum(i:n) min(x[i], y[i]) * n)",
    );
    let mut rng = rand::rngs::StdRng::seed_from_u64(4);
    for len in [0usize, 1, 5, 17] {
        let x: Vec<i64> = (0..len).map(|_| wide::<i64>(&mut rng)).collect();
        let y: Vec<i64> = (0..len).map(|_| wide::<i64>(&mut rng)).collect();
        let r = both(&f, &[v1(&x), v1(&y)]);
        let IntValue::Pair(a, s) = r else {
            panic!("a pair")
        };
        let want: Vec<i64> = (0..len)
            .map(|i| {
                let w = if x[i] > y[i] && x[i] != 0 { x[i] } else { y[i] };
                let e = match i {
                    0 => 1,
                    _ => 0,
                };
                w.wrapping_mul(i64::from(i < 3)).wrapping_add(e)
            })
            .collect();
        assert_eq!(arr(&a), want);
        let want = (0..len).fold(0i64, |a, i| {
            a.wrapping_add(x[i].min(y[i]).wrapping_mul(len as i64))
        });
        assert_eq!(*s, IntValue::Int(want));
    }
}

/// Every built-in rule admitted in the integer formats holds bit for bit
/// in wrapping `i64` and `i32` arithmetic on random instances with
/// integers near the limits; the rules that mix order with arithmetic
/// stay out.
#[test]
fn every_rule_admitted_in_integers_holds_in_wrapping_integers() {
    let rules = einsat::egraph::rules::builtin_rules();
    let admitted: Vec<&str> = rules
        .iter()
        .filter(|r| r.int_admitted())
        .map(|r| r.name.as_str())
        .collect();
    for name in [
        "add-assoc",
        "distrib",
        "mul-zero",
        "sum-const",
        "let-sum-indep",
        "eps-eps",
    ] {
        assert!(
            admitted.contains(&name),
            "{name} is a ring identity: {admitted:?}"
        );
    }
    for name in ["rmax-neg", "rmax-add-out", "div-mul", "sum-div-out"] {
        assert!(!admitted.contains(&name), "{name} must stay out");
    }
    let reports = einsat::egraph::check::check_rules_int(&rules, cases(40) as usize, 25);
    assert_eq!(reports.len(), admitted.len());
    let mut tried = 0;
    for r in &reports {
        assert_eq!(
            r.mismatches,
            0,
            "{} ({}): {}",
            r.name,
            r.origin,
            r.counterexample.as_deref().unwrap_or("")
        );
        tried += r.tried;
    }
    assert!(tried > 20 * reports.len(), "instances run: {tried}");
}

#[test]
fn planned_contractions_are_exact_in_integers() {
    // a chain the planner reorders (A (B (C x))), and a trace of a product
    let chain = load1(
        "fn ch(A: [n,n]R, B: [n,n]R, C: [n,n]R, x: [n]R) -> [n]R =
           gen(i:n) sum(j:n, k:n, l:n) A[i,j] * B[j,k] * C[k,l] * x[l]",
    );
    let tr = load1("fn tr(A: [n,n]R, B: [n,n]R) -> R = sum(i:n, j:n) A[i,j] * B[j,i] - 3 * A[i,i]");
    // like terms over a sum, constants folded in wrapping arithmetic
    let collect = load1(
        "fn c(x: [n]R) -> R = sum(i:n) 3037000500 * x[i] * 3037000500 + x[i] * (0 - 7) + 2 * x[i]",
    );
    let mut rng = rand::rngs::StdRng::seed_from_u64(9);
    let n = 7;
    let mat = |rng: &mut rand::rngs::StdRng| {
        IntValue::Array(Array2::from_shape_fn((n, n), |_| wide::<i64>(rng)).into_dyn())
    };
    let (a, b, c) = (mat(&mut rng), mat(&mut rng), mat(&mut rng));
    let x: Vec<i64> = (0..n).map(|_| wide::<i64>(&mut rng)).collect();
    for (f, args) in [
        (&chain, vec![a.clone(), b.clone(), c.clone(), v1(&x)]),
        (&tr, vec![a.clone(), b.clone()]),
        (&collect, vec![v1(&x)]),
    ] {
        let want = interp::run_int(f, &args).unwrap();
        let o = optimize(
            f,
            &Options {
                precision: Precision::I64,
                ..Options::default()
            },
        )
        .unwrap();
        // saturated with the integer rules, or contracted as planned
        assert!(
            o.report.iterations > 0 || o.report.stop_reason.contains("as planned"),
            "{}",
            o.report.stop_reason
        );
        assert_eq!(
            interp::run_int(&o.program, &args).unwrap(),
            want,
            "{}",
            print_function(&o.program)
        );
        assert_eq!(
            jit_run(&o.program, &args),
            want,
            "{}",
            print_function(&o.program)
        );
    }
}

#[test]
fn non_integral_programs_are_refused_with_positions() {
    let src = "fn f(x: [n]R) -> [n]R =\n  gen(i:n) x[i] / 2 + sqrt(x[i]) + 0.5";
    let parsed = einsat::types::parse_and_check(src).unwrap();
    let errs = einsat::types::integral(
        &parsed.program.functions[0],
        parsed.spans.first(),
        Precision::I64,
    )
    .unwrap_err();
    let text = einsat::Error::types(errs)
        .with_source("f.tl", src)
        .to_string();
    assert!(
        text.contains("`/`") && text.contains("no true division"),
        "{text}"
    );
    assert!(text.contains("f.tl:2:12"), "{text}");
    assert!(text.contains("`sqrt`"), "{text}");
    assert!(text.contains("`0.5` is not an integer"), "{text}");
    // the float formats accept it
    assert!(einsat::types::integral(&parsed.program.functions[0], None, Precision::F32).is_ok());
    // the engines refuse it, without positions, never panicking
    let f = &parsed.program.functions[0];
    let e = interp::run_int(f, &[v1(&[1i64])]).unwrap_err().to_string();
    assert!(e.contains("no true division"), "{e}");
    let e = jit::compile_uncached_with(f, &jit_opts(Precision::I32))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no true division"), "{e}");
    // a literal beyond the width
    let g = load1("fn g(x: R) -> R = x + 4294967296");
    assert!(einsat::types::is_integral(&g, Precision::I64));
    let e = interp::run_int(&g, &[IntValue::Int(1i32)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("beyond the range of i32"), "{e}");
}

#[test]
fn calls_of_the_wrong_element_type_are_errors() {
    let f = load1("fn s(x: [n]R) -> R = sum(i:n) x[i]");
    let k64 = jit::compile_uncached_with(&f, &jit_opts(Precision::I64)).unwrap();
    let x32 = arr1(&[1i32, 2]);
    let e = k64.call_int(&[IntArg::from(&x32)]).unwrap_err().to_string();
    assert!(
        e.contains("compiled for i64") && e.contains("call_int"),
        "{e}"
    );
    let xf = Value::Array(arr1(&[1.0, 2.0]).into_dyn());
    assert!(k64.call(&[xf]).is_err());
    let kf = jit::compile_uncached(&f).unwrap();
    let x64 = arr1(&[1i64, 2]);
    let e = kf.call_int(&[IntArg::from(&x64)]).unwrap_err().to_string();
    assert!(e.contains("compiled for f64"), "{e}");
    // shapes are checked as for f64 calls
    let g = load1("fn d(x: [n]R, y: [n]R) -> R = sum(i:n) x[i] * y[i]");
    let k = jit::compile_uncached_with(&g, &jit_opts(Precision::I64)).unwrap();
    let y = arr1(&[1i64, 2, 3]);
    assert!(k.call_int(&[IntArg::from(&x64), IntArg::from(&y)]).is_err());
}

// ------------------------------------------------- random programs

/// Random integers of `T` in the shapes of `v` (a random f64 argument).
fn ints_like<T: IntElem>(v: &Value, rng: &mut impl Rng) -> IntValue<T> {
    match v {
        Value::Real(_) => IntValue::Int(wide(rng)),
        Value::Array(a) => IntValue::Array(a.mapv(|_| wide(rng))),
        Value::Pair(a, b) => IntValue::pair(ints_like(a, rng), ints_like(b, rng)),
    }
}

/// The arrays holding `v`'s numbers in layout `k` (one per array leaf,
/// in order): reversed data (read through negative strides), a larger
/// array (read every other element), or Fortran order.
fn owners<T: IntElem>(v: &IntValue<T>, k: u32, out: &mut Vec<ArrayD<T>>) {
    match v {
        IntValue::Array(a) => out.push(match k % 3 {
            0 => a.slice_each_axis(|_| Slice::new(0, None, -1)).to_owned(),
            1 => {
                let shape: Vec<usize> = a.shape().iter().map(|&n| 2 * n).collect();
                let mut big = ArrayD::from_elem(IxDyn(&shape), T::from_i64(0x5a5a));
                big.slice_each_axis_mut(|_| Slice::new(0, None, 2))
                    .assign(a);
                big
            }
            _ => a.t().as_standard_layout().into_owned().reversed_axes(),
        }),
        IntValue::Pair(a, b) => {
            owners(a, k, out);
            owners(b, k, out);
        }
        IntValue::Int(_) => {}
    }
}

/// `v` as an argument viewing its numbers in `owners` (layout `k`).
fn view<'a, T: IntElem>(
    v: &IntValue<T>,
    k: u32,
    owners: &'a [ArrayD<T>],
    next: &mut usize,
) -> IntArg<'a, T> {
    match v {
        IntValue::Array(_) => {
            let o = &owners[*next];
            *next += 1;
            IntArg::Array(match k % 3 {
                0 => o.slice_each_axis(|_| Slice::new(0, None, -1)),
                1 => o.slice_each_axis(|_| Slice::new(0, None, 2)),
                _ => o.view(),
            })
        }
        IntValue::Pair(a, b) => IntArg::pair(view(a, k, owners, next), view(b, k, owners, next)),
        IntValue::Int(x) => IntArg::Int(*x),
    }
}

fn int_cfg() -> GenConfig {
    GenConfig {
        funcs: false,
        ..GenConfig::default()
    }
}

fn check_random<T: IntElem>(f: &Function, seed: u64) -> Result<(), TestCaseError> {
    if !einsat::types::is_integral(f, T::PRECISION) {
        return Ok(());
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let sizes = random_sizes(f, seed, 6);
    let Ok(shapes) = random_inputs(f, &sizes, &mut rng) else {
        return Ok(());
    };
    let args: Vec<IntValue<T>> = shapes.iter().map(|v| ints_like(v, &mut rng)).collect();
    let want = match interp::run_int(f, &args) {
        Ok(w) => w,
        Err(e) if e.is_call() => return Ok(()),
        Err(e) => return Err(TestCaseError::fail(format!("{e}"))),
    };
    // optimised for the format: the same integers
    let o = Options {
        precision: T::PRECISION,
        time_limit: std::time::Duration::from_secs(600),
        ..Options::default()
    };
    let g = optimize(f, &o)
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
    // the JIT on the optimised program, in every layout
    let k = jit::compile_uncached_with(&g, &jit_opts(T::PRECISION))
        .map_err(|e| TestCaseError::fail(format!("{}: {e}", print_function(&g))))?;
    for layout in 0..4u32 {
        let mut own = Vec::new();
        for a in &args {
            owners(a, layout, &mut own);
        }
        let mut next = 0;
        let refs: Vec<IntArg<'_, T>> = if layout == 3 {
            args.iter().map(|a| a.as_arg()).collect()
        } else {
            args.iter()
                .map(|a| view(a, layout, &own, &mut next))
                .collect()
        };
        let got = k
            .call_int(&refs)
            .map_err(|e| TestCaseError::fail(format!("{}: {e}", print_function(&g))))?;
        prop_assert_eq!(&got, &want, "{} (layout {})", print_function(&g), layout);
    }
    Ok(())
}

proptest! {
    // a third of the cases: each optimises a program to saturation (no time
    // limit) and compiles it, about 0.2 s a case (CI: 1000 each in I64 and
    // I32, beside `einsat difftest`'s 10,000 in f64)
    #![proptest_config(ProptestConfig::with_cases(cases(600) / 3))]

    /// Random integral programs: optimised for I64, in the interpreter and
    /// in the JIT (in several layouts), they give the written program's
    /// integers bit for bit, with inputs near the limits.
    #[test]
    fn random_programs_agree_in_i64(f in arb_function(int_cfg()), seed in any::<u64>()) {
        check_random::<i64>(&f, seed)?;
    }

    /// The same in I32.
    #[test]
    fn random_programs_agree_in_i32(f in arb_function(int_cfg()), seed in any::<u64>()) {
        check_random::<i32>(&f, seed)?;
    }
}
