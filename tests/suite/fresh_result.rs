//! Results allocated without zeroing (`Kernel::fresh_result`): only for
//! kernels whose every call writes every element of a one-array result
//! (a conservative proof over the loop program), and such results are the
//! interpreter's at every shape, empty ones and block tails included,
//! after the allocator has handed out memory full of NaN; results of any
//! other shape (tuples, numbers) are still zeroed and still right.

use einsat::Value;
use ndarray::{ArrayD, IxDyn};

/// Fill and free some heap memory with NaN so that fresh allocations
/// are likely to reuse dirty memory.
fn dirty_heap() {
    for sz in [1usize, 7, 64, 300, 4096, 70_000] {
        let v = vec![f64::NAN; sz];
        std::hint::black_box(&v);
    }
}

/// The first element where `got` and `want` differ by more than a
/// relative 1e-11 of the largest magnitude (products sum in the GEMM
/// library's order), or a length mismatch.
fn differs(got: &[f64], want: &[f64]) -> Option<String> {
    if got.len() != want.len() {
        return Some(format!("{} elements, want {}", got.len(), want.len()));
    }
    let scale = want.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    got.iter().zip(want).enumerate().find_map(|(k, (x, y))| {
        let ok = (x.is_nan() && y.is_nan()) || x == y || (x - y).abs() <= 1e-11 * scale;
        (!ok).then(|| format!("element {k}: {x:e}, want {y:e}"))
    })
}

fn flat(v: &Value) -> Vec<f64> {
    match v {
        Value::Real(x) => vec![*x],
        Value::Array(a) => a.iter().copied().collect(),
        Value::Pair(a, b) => {
            let mut x = flat(a);
            x.extend(flat(b));
            x
        }
    }
}

fn arr(shape: &[usize], seed: u64) -> Value {
    let n: usize = shape.iter().product();
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let data: Vec<f64> = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64 * 6.0 - 3.0
        })
        .collect();
    Value::Array(ArrayD::from_shape_vec(IxDyn(shape), data).unwrap())
}

/// Argument shapes for a size `n`.
type Shapes = fn(usize) -> Vec<Vec<usize>>;

/// The programs: source, whether the result is fresh, argument shapes.
fn cases() -> Vec<(&'static str, bool, Shapes)> {
    vec![
        ("fn f(x: [n]R) -> [n]R = gen(i:n) exp(x[i])", true, |n| {
            vec![vec![n]]
        }),
        (
            "fn f(x: [n]R) -> [n]R = gen(i:n) tanh(x[i]) * x[i]",
            true,
            |n| vec![vec![n]],
        ),
        (
            "fn f(x: [n]R) -> [n]R = gen(i:n) x[i-1] + x[i+1]",
            true,
            |n| vec![vec![n]],
        ),
        (
            "fn f(a: [n,m]R) -> [m,n]R = gen(j:m, i:n) log(1 + a[i,j] * a[i,j])",
            true,
            |n| vec![vec![n, 3]],
        ),
        (
            "fn f(a: [n,m]R, x: [m]R) -> [n]R = gen(i:n) sum(j:m) a[i,j] * x[j]",
            true,
            |n| vec![vec![n, 5], vec![5]],
        ),
        (
            "fn f(a: [n,k]R, b: [k,m]R) -> [n,m]R = gen(i:n, j:m) sum(l:k) a[i,l] * b[l,j]",
            true,
            |n| vec![vec![n, 24], vec![24, 32]],
        ),
        (
            "fn f(a: [n,k]R, b: [k,m]R) -> [n,m]R = gen(i:n, j:m) sum(l:k) a[i,l] * b[l,j]",
            true,
            |n| vec![vec![n, 0], vec![0, n]],
        ),
        (
            "fn f(X: [n,m]R) -> [n,m]R = gen(i:n) let mx = max(j:m) X[i,j] in \
             let z = sum(j:m) exp(X[i,j] - mx) in gen(j:m) exp(X[i,j] - mx) / z",
            true,
            |n| vec![vec![n, 9]],
        ),
        (
            "fn f(x: [n]R) -> [n]R = let t = gen(i:n) sin(x[i]) in gen(i:n) t[i] * [i < 3]",
            true,
            |n| vec![vec![n]],
        ),
        // not one array: zeroed as before
        ("fn f(x: [n]R) -> R = sum(i:n) exp(x[i])", false, |n| {
            vec![vec![n]]
        }),
        (
            "fn f(x: [n]R) -> ([n]R, R) = (gen(i:n) exp(x[i]), sum(i:n) x[i])",
            false,
            |n| vec![vec![n]],
        ),
        // a GEMM stage and its elementwise epilogue (the MLP layer)
        (
            "fn f(X: [n,k]R, W: [k,m]R, b: [m]R) -> [n,m]R = \
             gen(i:n, j:m) max(b[j] + sum(l:k) X[i,l] * W[l,j], 0)",
            true,
            |n| vec![vec![n, 20], vec![20, 33], vec![33]],
        ),
    ]
}

#[test]
fn whole_results_are_fresh_and_right_at_every_shape() {
    for (src, fresh, shapes) in cases() {
        let p = einsat::load(src).unwrap();
        // (the optimised program, as the command line and Python run it)
        let g = einsat::opt::optimize(&p.functions[0], &einsat::opt::Options::default())
            .unwrap()
            .program;
        let f = &p.functions[0];
        let k = einsat::jit::compile(&g).unwrap();
        assert_eq!(k.fresh_result(), fresh, "{src}");
        for n in [0usize, 1, 2, 3, 5, 17, 255, 256, 257, 600] {
            let args: Vec<Value> = shapes(n)
                .iter()
                .enumerate()
                .map(|(s, sh)| arr(sh, n as u64 * 31 + s as u64))
                .collect();
            let want = flat(&einsat::interp::run(f, &args).unwrap());
            for _ in 0..2 {
                dirty_heap();
                let got = flat(&k.call(&args).unwrap());
                if let Some(d) = differs(&got, &want) {
                    panic!("{src} n={n}: {d}");
                }
            }
        }
    }
}

/// The numbers of an `f32` result, widened.
fn flat32(v: &einsat::Value32) -> Vec<f64> {
    match v {
        einsat::Value32::Real(x) => vec![f64::from(*x)],
        einsat::Value32::Array(a) => a.iter().map(|&x| f64::from(x)).collect(),
        einsat::Value32::Pair(a, b) => {
            let mut x = flat32(a);
            x.extend(flat32(b));
            x
        }
    }
}

/// An argument as `f32` (rounded), and the interpreter's value of it.
fn arg32(v: &Value) -> (ArrayD<f32>, Value) {
    let Value::Array(a) = v else {
        panic!("not an array")
    };
    let a32 = a.mapv(|x| x as f32);
    let back = Value::Array(a32.mapv(f64::from));
    (a32, back)
}

#[test]
fn whole_f32_results_are_fresh_and_right_at_every_shape() {
    // `call_f32` allocates a whole result without zeroing too
    let f32 = einsat::jit::Options {
        precision: einsat::Precision::F32,
        ..Default::default()
    };
    for (src, fresh, shapes) in cases() {
        let p = einsat::load(src).unwrap();
        let g = einsat::opt::optimize(&p.functions[0], &einsat::opt::Options::default())
            .unwrap()
            .program;
        let f = &p.functions[0];
        let k = einsat::jit::compile_with(&g, &f32).unwrap();
        assert_eq!(k.fresh_result(), fresh, "{src}");
        for n in [0usize, 1, 2, 3, 5, 17, 255, 256, 257, 600] {
            let (a32, args): (Vec<ArrayD<f32>>, Vec<Value>) = shapes(n)
                .iter()
                .enumerate()
                .map(|(s, sh)| arg32(&arr(sh, n as u64 * 31 + s as u64)))
                .unzip();
            let want = flat(&einsat::interp::run_with(f, &args, einsat::Precision::F32).unwrap());
            let views: Vec<einsat::Arg32<'_>> = a32.iter().map(einsat::Arg32::from).collect();
            for _ in 0..2 {
                for sz in [1usize, 7, 64, 300, 4096, 70_000] {
                    std::hint::black_box(vec![f32::NAN; sz]);
                }
                let got = flat32(&k.call_f32(&views).unwrap());
                // f32 roundings; sums reordered by the GEMM library
                let scale = want.iter().fold(1.0f64, |m, x| m.max(x.abs()));
                let bad = got.len() != want.len()
                    || got.iter().zip(&want).any(|(x, y)| {
                        !((x.is_nan() && y.is_nan()) || (x - y).abs() <= 1e-5 * scale)
                    });
                assert!(!bad, "{src} n={n}: {got:?}\nwant {want:?}");
            }
        }
    }
}

#[test]
fn a_failed_call_returns_an_error_not_a_result() {
    // a wrong shape fails before anything runs
    let p = einsat::load("fn f(x: [n]R, y: [n]R) -> [n]R = gen(i:n) exp(x[i]) + y[i]").unwrap();
    let k = einsat::jit::compile(&p.functions[0]).unwrap();
    assert!(k.fresh_result());
    assert!(k.call(&[arr(&[4], 1), arr(&[5], 2)]).is_err());
    let got = flat(&k.call(&[arr(&[4], 1), arr(&[4], 2)]).unwrap());
    let want = flat(&einsat::interp::run(&p.functions[0], &[arr(&[4], 1), arr(&[4], 2)]).unwrap());
    assert_eq!(differs(&got, &want), None);
}
