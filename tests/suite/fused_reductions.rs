//! Fused reductions (`einsat::vmath::sum_of`, `reduce_of` and the JIT's
//! calls of them): a sum whose term is one kernel function of a
//! unit-stride run (`sum(i:n) exp(x[i] - m)`, log-sum-exp's) is one fused
//! kernel call per block, a max/min reduction of a run is one call of
//! the vector reduction, and a run divided by a fixed value (softmax's
//! last pass) one call of the vector division. Checked: the kernels against the scalar library
//! and `RedOp::apply` (the reductions bit for bit, NaN and signed zeros
//! included), a sum of 10^7 equal terms as accurate as pairwise summation,
//! the JIT against the interpreter on log-sum-exp, softmax and reductions
//! with offset, huge, tiny and special data, empty and length-1 rows and
//! lengths around the vector widths and blocks, in every layout; and that
//! the fused calls are in the generated code.

use einsat::opt::{optimize, Options};
use einsat::syntax::ast::{Func, RedOp};
use einsat::vmath::{reduce_of, sum_of};
use einsat::Value;

use crate::common::Rng;

const LENGTHS: [usize; 15] = [
    0, 1, 2, 7, 8, 15, 16, 17, 255, 256, 257, 4095, 4096, 4097, 9001,
];

/// The data classes: moderate, offset, huge, tiny, and moderate with
/// specials mixed in (at the start, the middle and the end).
fn data(class: usize, n: usize, r: &mut Rng) -> Vec<f64> {
    let mut xs: Vec<f64> = (0..n)
        .map(|_| {
            let u = r.unit() - 0.5;
            match class {
                0 => u * 20.0,
                1 => 1e6 + u,
                2 => u * 1e300,
                3 => u * 1e-300,
                _ => u * 60.0,
            }
        })
        .collect();
    if class == 4 {
        let specials = [
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.0,
            -0.0,
            1e-310,
            800.0,
            -800.0,
        ];
        for (k, s) in specials.iter().enumerate() {
            let at = [k, n / 2 + k, n.saturating_sub(1 + k)];
            for a in at {
                if a < n && r.next().is_multiple_of(3) {
                    xs[a] = *s;
                }
            }
        }
    }
    xs
}

/// The sum of `xs`, compensated (Neumaier): the reference, whose own
/// error is far below a pairwise sum's.
fn neumaier(xs: &[f64]) -> f64 {
    let (mut s, mut c) = (0.0f64, 0.0f64);
    for &x in xs {
        let t = s + x;
        c += if s.abs() >= x.abs() {
            (s - t) + x
        } else {
            (x - t) + s
        };
        s = t;
    }
    s + c
}

#[test]
fn fused_sums_match_the_library_terms() {
    let mut r = Rng(3);
    for f in [
        Func::Exp,
        Func::Log,
        Func::Sin,
        Func::Cos,
        Func::Tanh,
        Func::Erf,
    ] {
        for n in LENGTHS {
            for class in 0..5 {
                let xs = data(class, n, &mut r);
                for c in [None, Some(-1.25), Some(-1e6)] {
                    let terms: Vec<f64> = xs
                        .iter()
                        .map(|x| {
                            let x = c.map_or(*x, |c| x + c);
                            f.apply(&[x, x])
                        })
                        .collect();
                    let want = neumaier(&terms);
                    let mag: f64 = terms.iter().map(|t| t.abs()).sum();
                    let got = sum_of(f, &xs, c);
                    let ok = if want.is_nan() || !mag.is_finite() {
                        // NaN terms, ∞ - ∞, or an overflow of some order
                        !got.is_finite() || !mag.is_finite()
                    } else {
                        // within 1 ulp per term and a pairwise sum's error
                        (got - want).abs() <= 1e-14 * mag + 1e-300
                    };
                    assert!(
                        ok,
                        "{f:?} n={n} class {class} c={c:?}: {got:e} want {want:e}"
                    );
                }
            }
        }
    }
    assert_eq!(sum_of(Func::Exp, &[], Some(1.0)), 0.0);
}

#[test]
fn reductions_are_maximum_and_minimum_bit_for_bit() {
    let mut r = Rng(5);
    let bits = |x: f64| if x.is_nan() { u64::MAX } else { x.to_bits() };
    for op in [RedOp::Max, RedOp::Min] {
        for n in LENGTHS {
            for class in 0..5 {
                let xs = data(class, n, &mut r);
                let want = xs.iter().fold(op.identity(), |a, &x| op.apply(a, x));
                assert_eq!(
                    bits(reduce_of(op, &xs)),
                    bits(want),
                    "{op:?} n={n} class {class}"
                );
            }
        }
        // signed zeros: -0 < +0 whatever their order
        for xs in [[-0.0, 0.0], [0.0, -0.0]] {
            let want = if op == RedOp::Max { 0.0f64 } else { -0.0 };
            assert_eq!(
                reduce_of(op, &xs).to_bits(),
                want.to_bits(),
                "{op:?} {xs:?}"
            );
        }
        // a NaN anywhere (any sign, any payload) gives NaN
        for at in [0usize, 5, 16, 99] {
            let mut xs = vec![1.0; 100];
            xs[at] = -f64::NAN;
            assert!(reduce_of(op, &xs).is_nan(), "{op:?} NaN at {at}");
        }
        assert_eq!(reduce_of(op, &[]), op.identity());
        let inf = [f64::INFINITY, f64::NEG_INFINITY];
        assert_eq!(
            reduce_of(op, &inf),
            if op == RedOp::Max { inf[0] } else { inf[1] }
        );
    }
}

/// numpy's `test_einsum_chunking_precision`-style case: 10^7 equal terms.
const LONG: usize = 10_000_000;

#[test]
fn a_long_fused_sum_is_as_accurate_as_pairwise_summation() {
    // every term is fl(exp(-2.3)) (an inexact value): the exact sum is
    // LONG times it; one running sum per lane would lose about four digits
    let c = -2.3f64;
    let t = c.exp();
    let exact = t * LONG as f64; // (LONG · t rounded once)
    let xs = vec![0.0; LONG];
    let got = sum_of(Func::Exp, &xs, Some(c));
    assert!(
        ((got - exact) / exact).abs() < 4e-15,
        "fused kernel: {got:e} want {exact:e}"
    );
    // the same through the JIT: one fused kernel call over the range
    // (the kernel's blocks and levels are the loops' own)
    let p = einsat::load("fn s(x: [n]R) -> R = sum(i:n) exp(x[i] - 2.3)").unwrap();
    let k = einsat::jit::compile(&p.functions[0]).unwrap();
    let arg = Value::Array(ndarray::Array1::from(xs).into_dyn());
    let Value::Real(got) = k.call(&[arg]).unwrap() else {
        panic!("a scalar result")
    };
    assert!(
        ((got - exact) / exact).abs() < 4e-15,
        "JIT: {got:e} want {exact:e}"
    );
}

const PROGRAMS: &str = "
fn lse(x: [n]R) -> R = let m = max(i:n) x[i] in m + log(sum(i:n) exp(x[i] - m))
fn sumexp(x: [n]R) -> R = sum(i:n) exp(x[i])
fn sumtanh(x: [n]R) -> R = sum(i:n) tanh(0.5 + x[i])
fn sumlog(x: [n]R) -> R = sum(i:n) log(x[i] - -2)
fn mx(x: [n]R) -> R = max(i:n) x[i]
fn mn(x: [n]R) -> R = min(i:n) x[i]
fn sm(X: [r,n]R) -> [r,n]R = gen(i:r) let mx = max(j:n) X[i,j] in let z = sum(j:n) exp(X[i,j] - mx) in gen(j:n) exp(X[i,j] - mx) / z
fn rlse(X: [r,n]R) -> [r]R = gen(i:r) let m = max(j:n) X[i,j] in m + log(sum(j:n) exp(X[i,j] - m))
fn cmax(X: [r,n]R) -> [n]R = gen(j:n) max(i:r) X[i,j]
fn rmin(X: [r,n]R) -> [r]R = gen(i:r) min(j:n) X[i,j]
fn rdiv(X: [r,n]R) -> [r,n]R = gen(i:r, j:n) X[i,j] / X[i,0]
";

/// Whether `got` is what the contract accepts for `want`: close for
/// finite values (sums in another order, kernels within 1 ulp), equal
/// infinities, NaN where the interpreter has NaN or the other is not
/// finite either.
fn accepted(got: f64, want: f64) -> bool {
    if want.is_nan() || got.is_nan() {
        !got.is_finite() && !want.is_finite()
    } else if want.is_infinite() || got.is_infinite() {
        got == want
    } else {
        (got - want).abs() <= 1e-12 * want.abs() + 1e-300
    }
}

fn flat(v: &Value) -> Vec<f64> {
    match v {
        Value::Real(x) => vec![*x],
        Value::Array(a) => a.iter().copied().collect(),
        other => panic!("unexpected result {other:?}"),
    }
}

#[test]
fn jit_fused_reductions_match_the_interpreter() {
    let p = einsat::load(PROGRAMS).unwrap();
    let mut r = Rng(9);
    for f in &p.functions {
        let rows = ["sm", "rlse", "cmax", "rmin", "rdiv"].contains(&f.name.as_str());
        let g = optimize(f, &Options::default()).unwrap().program;
        let k = einsat::jit::compile(&g).unwrap();
        for n in LENGTHS {
            for class in 0..5 {
                let arg = if rows {
                    // three rows, each its own data; and a transposed
                    // (strided) copy, where nothing is fused
                    let xs = data(class, 3 * n, &mut r);
                    let a = ndarray::Array2::from_shape_vec((3, n), xs).unwrap();
                    vec![Value::Array(a.into_dyn())]
                } else {
                    let xs = data(class, n, &mut r);
                    vec![Value::Array(ndarray::Array1::from(xs).into_dyn())]
                };
                let want = flat(&einsat::interp::run(f, &arg).unwrap());
                let got = flat(&k.call(&arg).unwrap());
                assert_eq!(want.len(), got.len());
                for (g, w) in got.iter().zip(&want) {
                    assert!(
                        accepted(*g, *w),
                        "{} n={n} class {class}: jit {g:e}, interpreter {w:e}",
                        f.name
                    );
                }
                if rows && n > 0 {
                    // the same rows through a strided view
                    let Value::Array(a) = &arg[0] else {
                        unreachable!()
                    };
                    let t = a.t().to_owned();
                    let strided = t.t();
                    let got = flat(&k.call(&[Value::Array(strided.to_owned())]).unwrap());
                    for (g, w) in got.iter().zip(&want) {
                        assert!(accepted(*g, *w), "{} n={n} strided", f.name);
                    }
                }
            }
        }
    }
}

/// The names of the imported functions `text` calls whose signature is
/// `sig` (Cranelift's IR text: `sigK = (…) -> …`, `fnM = … sigK`,
/// `call fnM(…)`).
fn calls_with_signature(text: &str, sig: &str) -> usize {
    let sigs: Vec<String> = text
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let (name, rest) = l.split_once(" = ")?;
            (name.starts_with("sig") && rest.starts_with(sig)).then(|| name.to_string())
        })
        .collect();
    let fns: Vec<String> = text
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let (name, rest) = l.split_once(" = ")?;
            (name.starts_with("fn") && sigs.iter().any(|s| rest.ends_with(&format!(" {s}"))))
                .then(|| name.to_string())
        })
        .collect();
    text.lines()
        .filter(|l| fns.iter().any(|f| l.contains(&format!("call {f}("))))
        .count()
}

#[test]
fn the_fused_calls_are_in_the_generated_code() {
    let p = einsat::load(PROGRAMS).unwrap();
    let opts = einsat::jit::Options::default();
    let text = |name: &str| {
        let f = p.functions.iter().find(|f| f.name == name).unwrap();
        let g = optimize(f, &Options::default()).unwrap().program;
        einsat::jit::testing::clif_text(&g, &opts)
            .unwrap()
            .join("\n")
    };
    // the fused sum: (src, n, c) -> f64; the reduction: (src, n) -> f64
    let sum_sig = "(i64, i64, f64) -> f64";
    let red_sig = "(i64, i64) -> f64";
    let lse = text("lse");
    assert!(
        calls_with_signature(&lse, sum_sig) > 0,
        "lse's sum not fused:\n{lse}"
    );
    assert!(
        calls_with_signature(&lse, red_sig) > 0,
        "lse's max not a kernel call:\n{lse}"
    );
    for name in ["sumexp", "sumtanh", "sumlog", "rlse"] {
        let t = text(name);
        assert!(
            calls_with_signature(&t, sum_sig) > 0,
            "{name} not fused:\n{t}"
        );
    }
    for name in ["mx", "mn", "rmin", "sm"] {
        let t = text(name);
        assert!(
            calls_with_signature(&t, red_sig) > 0,
            "{name}: no reduction call:\n{t}"
        );
    }
    // a run divided by a value fixed in the row (softmax's last pass):
    // one call of the vector division, (src, dst, n, c)
    for name in ["rdiv", "sm"] {
        let t = text(name);
        let calls = calls_with_signature(&t, "(i64, i64, i64, f64) system_v");
        // (sm's exp map has that signature too: its addend form)
        assert!(
            calls > usize::from(name == "sm"),
            "{name}: no division call:\n{t}"
        );
    }
    // a column max reads a strided run: the generated loops, no call
    // (in the contiguous layout; the generic one has no unit axes)
    let t = text("cmax");
    assert_eq!(calls_with_signature(&t, red_sig), 0, "cmax:\n{t}");
}

#[test]
fn the_division_entry_point_in_place_and_overlapping() {
    let xs: Vec<f64> = (0..300).map(|k| k as f64 - 7.5).collect();
    for c in [3.0, -0.0, f64::INFINITY, f64::NAN] {
        let want: Vec<f64> = xs.iter().map(|x| x / c).collect();
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        // to another buffer (and nothing past the end)
        let mut ys = vec![1.0; 301];
        // SAFETY: 300 elements at `xs`, room for them at `ys`.
        unsafe { einsat::vmath::einsat_vdiv(xs.as_ptr(), ys.as_mut_ptr(), 300, c) };
        assert_eq!(bits(&ys[..300]), bits(&want), "c={c}");
        assert_eq!(ys[300], 1.0);
        // in place
        let mut zs = xs.clone();
        // SAFETY: 300 elements at the pointer.
        unsafe { einsat::vmath::einsat_vdiv(zs.as_ptr(), zs.as_mut_ptr(), 300, c) };
        assert_eq!(bits(&zs), bits(&want), "c={c} in place");
        // overlapping by one element: read from a copy
        let mut buf: Vec<f64> = xs.iter().copied().chain([0.0]).collect();
        let p = buf.as_mut_ptr();
        // SAFETY: 301 elements at `p`.
        unsafe { einsat::vmath::einsat_vdiv(p, p.wrapping_add(1), 300, c) };
        assert_eq!(bits(&buf[1..]), bits(&want), "c={c} overlapping");
        // n <= 0 does nothing
        unsafe { einsat::vmath::einsat_vdiv(xs.as_ptr(), ys.as_mut_ptr(), -3, c) };
    }
}

// ------------------------------------------------ moments and affine maps

use einsat::vmath::{affine_to, sum, sum_sq_add, Affine};

/// The data classes of [`data`] and a large common offset (`1e8 + u`,
/// class 5: a variance's terms cancel all but the last digits).
fn data6(class: usize, n: usize, r: &mut Rng) -> Vec<f64> {
    if class == 5 {
        (0..n).map(|_| 1e8 + (r.unit() - 0.5)).collect()
    } else {
        data(class, n, r)
    }
}

/// Whether a sum of `terms` computed in another order is what the
/// contract accepts: within a pairwise sum's error of the compensated
/// sum, or non-finite where the terms are (NaN terms, `∞ - ∞`, or an
/// overflow of some order).
fn sum_accepted(got: f64, terms: &[f64]) -> bool {
    let want = neumaier(terms);
    let mag: f64 = terms.iter().map(|t| t.abs()).sum();
    if want.is_nan() || !mag.is_finite() {
        !got.is_finite() || !mag.is_finite()
    } else {
        (got - want).abs() <= 1e-14 * mag + 1e-300
    }
}

#[test]
fn moment_sums_match_their_written_terms() {
    let mut r = Rng(11);
    for n in LENGTHS {
        for class in 0..6 {
            let xs = data6(class, n, &mut r);
            assert!(sum_accepted(sum(&xs), &xs), "sum n={n} class {class}");
            let mean = if n > 0 { neumaier(&xs) / n as f64 } else { 0.0 };
            for c in [0.0, -1.25, -1e6, -mean, f64::INFINITY, f64::NAN] {
                // each term the rounded sum, then the rounded square
                let terms: Vec<f64> = xs.iter().map(|x| (x + c) * (x + c)).collect();
                let got = sum_sq_add(&xs, c);
                assert!(
                    sum_accepted(got, &terms),
                    "sum of squares n={n} class {class} c={c}: {got:e} want {:e}",
                    neumaier(&terms)
                );
            }
        }
    }
    assert_eq!(sum(&[]), 0.0);
    assert_eq!(sum_sq_add(&[], 3.0), 0.0);
    // a sum of squares of centred offset data keeps its digits (no
    // expansion into Σx² - n·m²): 1e8 ± 0.5 around its mean
    let xs: Vec<f64> = (0..1001)
        .map(|k| 1e8 + (k as f64 - 500.0) / 1000.0)
        .collect();
    // (x - 1e8 is exact here, and so is its square's neighbourhood)
    let terms: Vec<f64> = xs.iter().map(|x| (x - 1e8) * (x - 1e8)).collect();
    let want = neumaier(&terms);
    let got = sum_sq_add(&xs, -1e8);
    assert!(((got - want) / want).abs() < 1e-12, "{got:e} want {want:e}");
}

#[test]
fn long_moment_sums_are_as_accurate_as_pairwise_summation() {
    // 10^7 equal inexact terms: one running sum per lane would lose
    // about four digits
    let t = 0.1f64;
    let exact = t * LONG as f64;
    let xs = vec![t; LONG];
    let got = sum(&xs);
    assert!(((got - exact) / exact).abs() < 4e-15, "sum: {got:e}");
    let sq = 0.3f64 * 0.3;
    let exact_sq = sq * LONG as f64;
    let zs = vec![0.0; LONG];
    let got = sum_sq_add(&zs, 0.3);
    assert!(
        ((got - exact_sq) / exact_sq).abs() < 4e-15,
        "sum_sq: {got:e}"
    );
    // the sum of squares through the JIT: a kernel call per block, the
    // blocks' totals on the loops' levels (a plain sum of a whole run is
    // a register-tile reduction, not this kernel)
    let p = einsat::load("fn q(x: [n]R) -> R = sum(i:n) (x[i] + 0.3) * (x[i] + 0.3)").unwrap();
    let k = einsat::jit::compile(&p.functions[0]).unwrap();
    let arg = Value::Array(ndarray::Array1::from(zs).into_dyn());
    let Value::Real(got) = k.call(&[arg]).unwrap() else {
        panic!("a scalar result")
    };
    assert!(
        ((got - exact_sq) / exact_sq).abs() < 4e-15,
        "JIT: {got:e} want {exact_sq:e}"
    );
}

#[test]
fn affine_maps_are_the_scalar_operations_bit_for_bit() {
    let mut r = Rng(13);
    let bits = |x: f64| if x.is_nan() { u64::MAX } else { x.to_bits() };
    let fixed = [
        1.5,
        -3.0,
        1e-300,
        1e300,
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ];
    for kind in Affine::ALL {
        assert_eq!(Affine::from_code(kind.code()), Some(kind));
        for n in LENGTHS {
            for class in 0..6 {
                let xs = data6(class, n, &mut r);
                for (k, &c) in fixed.iter().enumerate() {
                    let d = fixed[(k * 5 + 3) % fixed.len()];
                    let mut ys = vec![0.0; n];
                    affine_to(kind, &xs, &mut ys, c, d);
                    for (x, y) in xs.iter().zip(&ys) {
                        assert_eq!(
                            bits(*y),
                            bits(kind.apply(*x, c, d)),
                            "{kind:?} n={n} class {class} x={x:e} c={c:e} d={d:e}"
                        );
                    }
                }
            }
        }
    }
    assert_eq!(Affine::from_code(-1), None);
    assert_eq!(Affine::from_code(Affine::ALL.len() as i64), None);
}

#[test]
fn the_affine_entry_point_in_place_and_overlapping() {
    use einsat::vmath::einsat_vaffine;
    let xs: Vec<f64> = (0..300).map(|k| k as f64 - 7.5).collect();
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let (c, d) = (-1.25, 3.0);
    for kind in Affine::ALL {
        let want: Vec<f64> = xs.iter().map(|x| kind.apply(*x, c, d)).collect();
        let mut ys = vec![1.0; 301];
        // SAFETY: 300 elements at `xs`, room for them at `ys`.
        unsafe { einsat_vaffine(xs.as_ptr(), ys.as_mut_ptr(), 300, c, d, kind.code()) };
        assert_eq!(bits(&ys[..300]), bits(&want), "{kind:?}");
        assert_eq!(ys[300], 1.0, "{kind:?}: past the end");
        let mut zs = xs.clone();
        // SAFETY: 300 elements at the pointer.
        unsafe { einsat_vaffine(zs.as_ptr(), zs.as_mut_ptr(), 300, c, d, kind.code()) };
        assert_eq!(bits(&zs), bits(&want), "{kind:?} in place");
        let mut buf: Vec<f64> = xs.iter().copied().chain([0.0]).collect();
        let p = buf.as_mut_ptr();
        // SAFETY: 301 elements at `p`.
        unsafe { einsat_vaffine(p, p.wrapping_add(1), 300, c, d, kind.code()) };
        assert_eq!(bits(&buf[1..]), bits(&want), "{kind:?} overlapping");
    }
    // n <= 0 and an unknown kind write nothing
    let mut ys = vec![1.0; 4];
    // SAFETY: 4 elements at each (nothing is read or written).
    unsafe {
        einsat_vaffine(xs.as_ptr(), ys.as_mut_ptr(), -3, c, d, 0);
        einsat_vaffine(xs.as_ptr(), ys.as_mut_ptr(), 4, c, d, 99);
        assert_eq!(einsat::vmath::einsat_vsum(xs.as_ptr(), 0), 0.0);
        assert_eq!(einsat::vmath::einsat_vsumsq_add(xs.as_ptr(), -1, c), 0.0);
    }
    assert_eq!(ys, vec![1.0; 4]);
}

/// Layer normalisation, its passes on their own, a triangular row sum (a
/// sum with a domain: the generated loops, where a whole row's sum is a
/// register-tile reduction), and maps and sums that read strided runs
/// (columns), where nothing may call the kernels.
const MOMENTS: &str = "
fn ln(X: [r,n]R) -> [r,n]R = gen(i:r) let mu = (sum(j:n) X[i,j]) / n in let v = (sum(j:n) (X[i,j] - mu) * (X[i,j] - mu)) / n in gen(j:n) (X[i,j] - mu) / sqrt(v + 0.00001)
fn rsum(X: [r,n]R) -> [r]R = gen(i:r) sum(j:n) X[i,j]
fn tri(X: [n,n]R) -> [n]R = gen(i:n) sum(j:n) [j <= i] * X[i,j]
fn rsq(X: [r,n]R) -> [r]R = gen(i:r) sum(j:n) X[i,j] * X[i,j]
fn rcsq(X: [r,n]R, c: [r]R) -> [r]R = gen(i:r) sum(j:n) (c[i] + X[i,j]) * (c[i] + X[i,j])
fn raddiv(X: [r,n]R, c: [r]R, d: [r]R) -> [r,n]R = gen(i:r, j:n) (X[i,j] - c[i]) / d[i]
fn raddmul(X: [r,n]R, c: [r]R, d: [r]R) -> [r,n]R = gen(i:r, j:n) d[i] * (X[i,j] + c[i])
fn rmul(X: [r,n]R, d: [r]R) -> [r,n]R = gen(i:r, j:n) X[i,j] * d[i]
fn radd(X: [r,n]R, c: [r]R) -> [r,n]R = gen(i:r, j:n) X[i,j] - c[i]
fn csum(X: [n,r]R) -> [r]R = gen(i:r) sum(j:n) X[j,i]
fn csq(X: [n,r]R, c: [r]R) -> [r]R = gen(i:r) sum(j:n) (X[j,i] - c[i]) * (X[j,i] - c[i])
fn cdiv(X: [n,r]R, c: [n]R, d: [n]R) -> [r,n]R = gen(i:r, j:n) (X[j,i] - c[j]) / d[j]
";

/// The arguments of a [`MOMENTS`] function: its matrix (`rows × n`, or
/// `n × rows` for a column program) of data class `class`, its vectors
/// of the same class (offsets and divisors alike).
fn moment_args(f: &einsat::Function, n: usize, class: usize, r: &mut Rng) -> Vec<Value> {
    const ROWS: usize = 3;
    let cols = f.name.starts_with('c');
    let (a, b) = if f.name == "tri" {
        (n, n)
    } else if cols {
        (n, ROWS)
    } else {
        (ROWS, n)
    };
    let mut args = vec![Value::Array(
        ndarray::Array2::from_shape_vec((a, b), data6(class, a * b, r))
            .unwrap()
            .into_dyn(),
    )];
    for _ in &f.params[1..] {
        // a vector along the matrix's first axis (`c[i]` of rows,
        // `c[j]` of columns), or its second (`csq`'s `c[i]`)
        let len = if f.name == "csq" { b } else { a };
        let v = data6(class, len, r);
        args.push(Value::Array(ndarray::Array1::from(v).into_dyn()));
    }
    args
}

/// The JIT's values of `k` on `args` against the contract's oracle for
/// the written `f` ([`einsat::interp::shadow`]).
fn check_contract(f: &einsat::Function, k: &einsat::jit::Kernel, args: &[Value], what: &str) {
    use einsat::interp::shadow::Shadow;
    let oracle = Shadow::for_inputs(args);
    let want: Vec<_> = einsat::interp::run_domain(f, args, &oracle)
        .unwrap()
        .into_iter()
        .flat_map(|l| l.data)
        .collect();
    let got = flat(&k.call(args).unwrap());
    assert_eq!(got.len(), want.len(), "{what}");
    for (g, (w, _)) in got.iter().zip(&want) {
        assert!(
            w.accepts(*g),
            "{} {what}: jit {g:e}, the contract allows {}",
            f.name,
            w.describe()
        );
    }
}

#[test]
fn jit_moments_and_affine_maps_keep_the_contract() {
    let p = einsat::load(MOMENTS).unwrap();
    let mut r = Rng(17);
    for f in &p.functions {
        let g = optimize(f, &Options::default()).unwrap().program;
        let k = einsat::jit::compile(&g).unwrap();
        for n in LENGTHS {
            if f.name == "tri" && n > 257 {
                // (n² elements)
                continue;
            }
            for class in 0..6 {
                let args = moment_args(f, n, class, &mut r);
                check_contract(f, &k, &args, &format!("n={n} class {class}"));
                if n > 1 {
                    // the matrix through a strided view (its transpose's
                    // transpose): the generated loops
                    let Value::Array(a) = &args[0] else {
                        unreachable!()
                    };
                    let t = a.t().to_owned();
                    let mut strided = args.clone();
                    strided[0] = Value::Array(t.t().to_owned());
                    check_contract(f, &k, &strided, &format!("n={n} class {class} strided"));
                }
            }
        }
    }
}

#[test]
fn the_moment_calls_are_in_the_generated_code() {
    let p = einsat::load(MOMENTS).unwrap();
    let opts = einsat::jit::Options::default();
    let text = |name: &str| {
        let f = p.functions.iter().find(|f| f.name == name).unwrap();
        let g = optimize(f, &Options::default()).unwrap().program;
        einsat::jit::testing::clif_text(&g, &opts)
            .unwrap()
            .join("\n")
    };
    // the plain sum: (src, n) -> f64; the sum of squares: (src, n, c)
    // -> f64; the affine map: (src, dst, n, c, d, kind)
    let sum_sig = "(i64, i64) -> f64";
    let sq_sig = "(i64, i64, f64) -> f64";
    let map_sig = "(i64, i64, i64, f64, f64, i64)";
    // layer normalisation: its variance and its last pass are calls (its
    // mean, a whole row's sum, a register-tile reduction)
    let ln = text("ln");
    assert!(
        calls_with_signature(&ln, sq_sig) > 0,
        "ln's variance:\n{ln}"
    );
    assert!(calls_with_signature(&ln, map_sig) > 0, "ln's map:\n{ln}");
    for (name, sig) in [
        ("tri", sum_sig),
        ("rcsq", sq_sig),
        ("raddiv", map_sig),
        ("raddmul", map_sig),
        ("rmul", map_sig),
        ("radd", map_sig),
    ] {
        let t = text(name);
        assert!(calls_with_signature(&t, sig) > 0, "{name}: no call:\n{t}");
    }
    // strided runs: the generated loops, no call
    for (name, sig) in [("csum", sum_sig), ("csq", sq_sig), ("cdiv", map_sig)] {
        let t = text(name);
        assert_eq!(calls_with_signature(&t, sig), 0, "{name}:\n{t}");
    }
}

/// A long fused sum or reduction in a nest on one thread (log-sum-exp's
/// passes) is split over the call's threads (`vmath::with_threads`, one
/// fused call over the whole range): the result is the one-thread
/// result bit for bit, `f64` and `f32`, at lengths on and around the
/// groups of 64·4096 terms the split takes, with specials in some runs.
#[test]
fn long_fused_reductions_on_two_threads_keep_their_bits() {
    use einsat::precision::Precision;
    let p = einsat::load(PROGRAMS).unwrap();
    let g = 64 * 4096;
    let mut r = Rng(0x2e);
    for f in p
        .functions
        .iter()
        .filter(|f| ["lse", "sumexp", "sumtanh", "sumlog", "mx", "mn"].contains(&f.name.as_str()))
    {
        let opt = optimize(f, &Options::default()).unwrap().program;
        for precision in [Precision::F64, Precision::F32] {
            let k = |threads| {
                let o = einsat::jit::Options {
                    threads,
                    precision,
                    ..einsat::jit::Options::default()
                };
                einsat::jit::compile_uncached_with(&opt, &o).unwrap()
            };
            let (k1, k2) = (k(1), k(2));
            for (n, class) in [
                (2 * g - 1, 0),
                (2 * g + 3, 1),
                (3 * g + 4097, 4),
                (4 * g, 0),
            ] {
                let xs = data(class, n, &mut r);
                let (one, two) = if precision == Precision::F32 {
                    use einsat::jit::{Arg32, Value32};
                    let a = ndarray::Array1::from_iter(xs.iter().map(|&x| x as f32)).into_dyn();
                    let real = |v: Value32| match v {
                        Value32::Real(x) => vec![f64::from(x)],
                        other => panic!("unexpected result {other:?}"),
                    };
                    (
                        real(k1.call_f32(&[Arg32::from(&a)]).unwrap()),
                        real(k2.call_f32(&[Arg32::from(&a)]).unwrap()),
                    )
                } else {
                    let arg = vec![Value::Array(ndarray::Array1::from(xs).into_dyn())];
                    (flat(&k1.call(&arg).unwrap()), flat(&k2.call(&arg).unwrap()))
                };
                // (a NaN's sign and payload are not part of its value:
                // IEEE 754 leaves them open for arithmetic results, and
                // Rust's semantics (RFC 3514) let LLVM swap an addition's
                // operands, which picks the other operand's NaN; a NaN on
                // both is the same value)
                let same = |x: f64| {
                    if x.is_nan() {
                        f64::NAN.to_bits()
                    } else {
                        x.to_bits()
                    }
                };
                assert_eq!(
                    same(one[0]),
                    same(two[0]),
                    "{} {precision:?} n={n} class {class}: {:e} on one thread, {:e} on two",
                    f.name,
                    one[0],
                    two[0]
                );
            }
        }
    }
}
