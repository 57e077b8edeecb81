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

/// A small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

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
    for f in [Func::Exp, Func::Log, Func::Sin, Func::Cos, Func::Tanh] {
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
    // the same through the JIT: blocks of the fused kernel, their totals
    // on the loops' levels
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
