//! The register tiles, the small-product kernels and the column sums in
//! `Precision::F32`: dense contractions (matrix products, batches of small
//! products, matrix-vector products, the two-level bilinear form, the
//! trace of a product, triangular sums) and column sums computed ahead (the
//! centred Gram matrix) run by the F32 JIT against the F32 interpreter and
//! judged by the floating-point contract at `f32`'s unit roundoff, with
//! and without GEMM stages, on one and two threads, in every memory
//! layout, on offset data, huge and tiny (subnormal products) magnitudes,
//! infinities and NaNs. The planner takes these nests as tiles in F32 (not
//! generic loops), with `f32x4` lanes.
#![cfg(feature = "testing")] // uses the testing support

use crate::common;

use einsat::interp::{self, Value};
use einsat::jit;
use einsat::jit::testing::{ir, schedule, tiles};
use einsat::syntax::print_function;
use einsat::testing::difftest::contract_judge_in;
use einsat::testing::{arb_function, random_inputs, random_sizes, GenConfig, Layout};
use einsat::{Arg32, Function, Precision, Value32};
use ndarray::{ArrayD, IxDyn, ShapeBuilder, Slice};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

const F32: Precision = Precision::F32;

const PROGRAMS: &str = "
fn mm(A: [n,k]R, B: [k,m]R) -> [n,m]R = gen(i:n, j:m) sum(l:k) A[i,l] * B[l,j]
fn bmm(A: [b,n,k]R, B: [b,k,m]R) -> [b,n,m]R = gen(p:b, q:n, r:m) sum(t:k) A[p,q,t] * B[p,t,r]
fn mv(A: [n,k]R, x: [k]R) -> [n]R = gen(i:n) 2.5 * sum(l:k) A[i,l] * x[l]
fn tmv(A: [k,n]R, x: [k]R) -> [n]R = gen(i:n) sum(l:k) x[l] * A[l,i]
fn bil(y: [n]R, A: [k,n]R, x: [k]R) -> R = sum(i:n) y[i] * sum(j:k) A[j,i] * x[j]
fn trp(A: [n,k]R, B: [k,n]R) -> R = sum(i:n, j:k) A[i,j] * B[j,i]
fn tri(A: [n,n]R, x: [n]R) -> [n]R = gen(i:n) sum(j:n) [j <= i] * A[i,j] * x[j]
fn gram(X: [n,d]R) -> [d,d]R = gen(a:d, b:d) sum(i:n) (X[i,a] - (sum(k:n) X[k,a]) / n) * (X[i,b] - (sum(k:n) X[k,b]) / n)
fn plus(x: [n]R, A: [n,m]R, c: [m]R) -> [m]R = gen(i:m) c[i] + sum(j:n) x[j] * A[j,i]
fn dot(x: [n]R, y: [n]R) -> R = sum(i:n) x[i] * y[i]
fn mmk(A: [b,k]R, B: [k,b]R) -> [b,b]R = gen(i:b, j:b) sum(l:k) A[i,l] * B[l,j]
fn colt(x: [n]R, A: [n,n]R) -> [n]R = gen(j:n) sum(i:n) [j <= i] * x[i] * A[i,j]
";

fn programs() -> Vec<Function> {
    einsat::load(PROGRAMS).unwrap().functions
}

fn by(name: &str) -> Function {
    programs().into_iter().find(|f| f.name == name).unwrap()
}

fn options(gemm: bool, threads: usize) -> jit::Options {
    jit::Options {
        precision: F32,
        gemm,
        threads,
        parallel_threshold: if threads > 1 { 0 } else { u64::MAX },
        gemm_min_work: 0,
        ..jit::Options::default()
    }
}

/// The kinds of data: values near 1, a large common offset, huge and tiny
/// magnitudes (tiny products are subnormal or zero in f32; huge products
/// of three factors stay below f32's overflow, whose sign and place would
/// depend on the summation order), and a few infinities and NaNs among
/// values near 1.
#[derive(Clone, Copy, Debug)]
enum Data {
    Unit,
    Offset,
    Huge,
    Tiny,
    Special,
}

const DATA: [Data; 5] = [
    Data::Unit,
    Data::Offset,
    Data::Huge,
    Data::Tiny,
    Data::Special,
];

fn value(d: Data, rng: &mut impl Rng) -> f32 {
    let u: f32 = rng.gen::<f32>() * 2.0 - 1.0;
    match d {
        Data::Unit => u,
        Data::Offset => 1000.0 + u,
        Data::Huge => 1e11 * u,
        Data::Tiny => 1e-21 * u,
        Data::Special => match rng.gen_range(0..40) {
            0 => f32::INFINITY,
            1 => f32::NEG_INFINITY,
            2 => f32::NAN,
            _ => u,
        },
    }
}

/// `a`'s elements stored in `layout` (see [`view`]).
fn stored(a: &ArrayD<f32>, layout: Layout) -> ArrayD<f32> {
    match layout {
        Layout::C => a.as_standard_layout().to_owned(),
        Layout::Fortran => {
            let mut f = ArrayD::zeros(IxDyn(a.shape()).f());
            f.assign(a);
            f
        }
        Layout::Sliced => {
            let big: Vec<usize> = a.shape().iter().map(|&n| 2 * n).collect();
            let mut s = ArrayD::from_elem(IxDyn(&big), f32::NAN);
            s.slice_each_axis_mut(|_| Slice::new(0, None, 2)).assign(a);
            s
        }
        Layout::Reversed => a
            .slice_each_axis(|_| Slice::new(0, None, -1))
            .as_standard_layout()
            .to_owned(),
    }
}

/// The view of [`stored`] with the original's contents.
fn view(s: &ArrayD<f32>, layout: Layout) -> ndarray::ArrayViewD<'_, f32> {
    match layout {
        Layout::C | Layout::Fortran => s.view(),
        Layout::Sliced => s.slice_each_axis(|_| Slice::new(0, None, 2)),
        Layout::Reversed => s.slice_each_axis(|_| Slice::new(0, None, -1)),
    }
}

fn widen(v: &Value32) -> Value {
    match v {
        Value32::Real(x) => Value::Real(*x as f64),
        Value32::Array(a) => Value::Array(a.mapv(|x| x as f64)),
        Value32::Pair(a, b) => Value::pair(widen(a), widen(b)),
    }
}

/// Random `f32` arguments of `f` (all arrays) with every size set to `n`
/// (the batch `b` to `batch`), of the kind `d`.
fn args(f: &Function, n: usize, batch: usize, d: Data, seed: u64) -> Vec<ArrayD<f32>> {
    let sizes = f
        .size_names()
        .into_iter()
        .map(|x| {
            let v = if x == "b" { batch } else { n };
            (x, v)
        })
        .collect();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    random_inputs(f, &sizes, &mut rng)
        .unwrap()
        .iter()
        .map(|v| match v {
            Value::Array(a) => a.mapv(|_| value(d, &mut rng)),
            v => panic!("array parameters only: {v}"),
        })
        .collect()
}

/// The F32 JIT (with `opts`) on `f` against the F32 interpreter, judged
/// by the contract, for each size of `sizes`, each kind of data and
/// every layout; also NaN where the interpreter has NaN and the same
/// infinities.
fn agree(f: &Function, opts: &jit::Options, sizes: &[(usize, usize)]) {
    let k = jit::compile_with(f, opts).unwrap_or_else(|e| panic!("{e}\n{}", print_function(f)));
    for (t, &(n, batch)) in sizes.iter().enumerate() {
        for (di, &d) in DATA.iter().enumerate() {
            let xs = args(f, n, batch, d, (t * 10 + di) as u64);
            let vals: Vec<Value> = xs
                .iter()
                .map(|a| Value::Array(a.mapv(|x| x as f64)))
                .collect();
            let want = interp::run_with(f, &vals, F32).unwrap();
            for layout in Layout::ALL {
                let st: Vec<ArrayD<f32>> = xs.iter().map(|a| stored(a, layout)).collect();
                let a32: Vec<Arg32<'_>> =
                    st.iter().map(|s| Arg32::Array(view(s, layout))).collect();
                let got = widen(&k.call_f32(&a32).unwrap());
                let ctx = || {
                    format!(
                        "{layout:?} n={n} b={batch} {d:?} gemm={} threads={}\n{}\ninterp {want}\njit    {got}",
                        opts.gemm,
                        opts.threads,
                        print_function(f)
                    )
                };
                let why = contract_judge_in(f, &vals, &got, F32).unwrap();
                assert!(why.is_none(), "{}\n{}", why.unwrap(), ctx());
                let (g, w) = (flat(&got), flat(&want));
                assert_eq!(g.len(), w.len(), "{}", ctx());
                for (x, y) in g.iter().zip(&w) {
                    assert_eq!(x.is_nan(), y.is_nan(), "{}", ctx());
                    if y.is_infinite() {
                        assert_eq!(x, y, "{}", ctx());
                    }
                    // every f32 result is an f32 value
                    assert!(x.is_nan() || (*x as f32) as f64 == *x, "{}", ctx());
                }
            }
        }
    }
}

fn flat(v: &Value) -> Vec<f64> {
    match v {
        Value::Real(x) => vec![*x],
        Value::Array(a) => a.iter().copied().collect(),
        Value::Pair(a, b) => [flat(a), flat(b)].concat(),
    }
}

/// Sizes at the tiles' edges: empty, one, below and above a tile of
/// `4 × 8` lanes (sizes past a panel and a reduction block: below).
const SIZES: &[(usize, usize)] = &[(0, 2), (1, 1), (3, 5), (8, 3), (13, 2), (33, 2)];

#[test]
fn f32_tiles_agree_with_the_f32_interpreter() {
    for f in programs() {
        for gemm in [false, true] {
            for threads in [1, 2] {
                agree(&f, &options(gemm, threads), SIZES);
            }
        }
    }
}

#[test]
fn long_reductions_past_the_blocks() {
    // past a panel and a reduction block (`PACK_PANEL`, `PACK_KC`,
    // `KBLOCK`), and a sum past `SUM_BLOCK` terms in `Reduce` mode
    // (a product's reduction past `KBLOCK` on a 9 × 9 result: `b` is
    // the batch size; the whole 257³ product took most of a CI minute
    // in the interpreter and the contract's reference)
    for name in ["mv", "trp"] {
        agree(&by(name), &options(false, 1), &[(130, 1), (257, 1)]);
    }
    agree(&by("mm"), &options(false, 1), &[(130, 1)]);
    agree(&by("mmk"), &options(false, 1), &[(257, 9)]);
    agree(&by("dot"), &options(false, 1), &[(9000, 1)]);
}

#[test]
fn batches_of_small_products_in_f32() {
    // the GEMM stage's small-product kernels (every size), and the tiles
    let f = by("bmm");
    for gemm in [false, true] {
        for threads in [1, 2] {
            agree(
                &f,
                &options(gemm, threads),
                &[(8, 64), (3, 70), (5, 2), (16, 9)],
            );
        }
    }
    let k = jit::compile_with(&f, &options(true, 1)).unwrap();
    assert!(k.stages()[0].starts_with("gemm"), "{:?}", k.stages());
}

/// The F32 plan of each nest of `f` as compiled with `opts`, C order.
fn backends(f: &Function, opts: &jit::Options) -> Vec<String> {
    let k = jit::compile_with(f, opts).unwrap();
    let p = k.loop_program();
    let layout = ir::Layout::c_order(p);
    p.nests
        .iter()
        .map(
            |nest| match schedule::plan_nest(p, nest, &layout, opts).backend {
                schedule::Backend::Tiles(t) => format!("tiles{}", t.lanes),
                schedule::Backend::Loops(_) => "loops".into(),
                schedule::Backend::Skip => "skip".into(),
            },
        )
        .collect()
}

#[test]
fn dense_nests_run_on_f32x4_tiles() {
    for name in ["mm", "bmm", "mv", "tmv", "bil", "trp"] {
        let b = backends(&by(name), &options(false, 1));
        assert_eq!(b, ["tiles4"], "{name}");
    }
    // the same nests in F64: f64x2
    let f64 = jit::Options {
        precision: Precision::F64,
        ..options(false, 1)
    };
    assert_eq!(backends(&by("mm"), &f64), ["tiles2"]);
    // a loop domain per row (`tri`, `Reduce` mode) in F32 too; a
    // lane-masked one (`colt`, `Tile` mode) stays F64's: generic loops in F32
    let lowered = |name: &str| {
        let k = jit::compile_with(&by(name), &options(false, 1)).unwrap();
        k.loop_program().clone()
    };
    let p = lowered("tri");
    let t = tiles::plan_lanes(&p, &p.nests[0], &ir::Layout::c_order(&p), 4);
    assert!(t.is_some_and(|t| t.lanes == 4 && !t.hi.is_empty()));
    let p = lowered("colt");
    let c = ir::Layout::c_order(&p);
    assert!(tiles::plan(&p, &p.nests[0], &c).is_some_and(|t| !t.tdom.is_empty()));
    assert!(tiles::plan_lanes(&p, &p.nests[0], &c, 4).is_none());
    assert_eq!(backends(&by("colt"), &options(false, 1)), ["loops"]);
    // the integer formats have no tiles
    let i64o = jit::Options {
        precision: Precision::I64,
        ..options(false, 1)
    };
    let k = jit::compile_with(&load_int(), &i64o).unwrap();
    let p = k.loop_program();
    let nest = &p.nests[0];
    let plan = schedule::plan_nest(p, nest, &ir::Layout::c_order(p), &i64o);
    assert!(matches!(plan.backend, schedule::Backend::Loops(_)));
}

fn load_int() -> Function {
    einsat::load("fn mm(A: [n,k]R, B: [k,m]R) -> [n,m]R = gen(i:n, j:m) sum(l:k) A[i,l] * B[l,j]")
        .unwrap()
        .functions
        .remove(0)
}

#[test]
fn f32_column_sums_run_ahead_on_the_library() {
    // a column sum that is a matrix-vector product: a scratch nest that is
    // a GEMM stage in F32 as in F64; the centred Gram matrix's column
    // means get scratch vectors too
    let k = jit::compile_with(&by("plus"), &options(true, 1)).unwrap();
    let p = k.loop_program();
    assert_eq!(p.cols.len(), 1);
    assert!(p.cols[0].lib, "{:?}", p.cols);
    let k = jit::compile_with(&by("gram"), &options(true, 1)).unwrap();
    assert!(!k.loop_program().cols.is_empty());
}

// ------------------------------------------------------ random programs

/// Random programs of products and sums (no functions, brackets or pairs:
/// the shapes the register tiles take).
fn dense_cfg() -> GenConfig {
    GenConfig {
        max_depth: 4,
        funcs: false,
        brackets: false,
        eps: false,
        pairs: false,
        ..GenConfig::default()
    }
}

/// Whether some nest of `f` optimised for F32 runs on the register tiles
/// in C order (generic loops only, no GEMM stages).
fn tiled(f: &Function) -> bool {
    let o = einsat::opt::Options {
        precision: F32,
        time_limit: std::time::Duration::from_secs(600),
        ..einsat::opt::Options::default()
    };
    let g = einsat::opt::optimize(f, &o).unwrap().program;
    let opts = options(false, 1);
    let Ok(k) = jit::compile_with(&g, &opts) else {
        return false;
    };
    let p = k.loop_program();
    let layout = ir::Layout::c_order(p);
    p.nests.iter().any(|n| {
        matches!(
            schedule::plan_nest(p, n, &layout, &opts).backend,
            schedule::Backend::Tiles(_)
        )
    })
}

/// The property test below does exercise the F32 tiles: some of its
/// random programs (2 of the first 60 of the deterministic runner) have a
/// nest on them.
#[test]
fn random_dense_programs_reach_the_f32_tiles() {
    use proptest::strategy::{Strategy, ValueTree};
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let strat = arb_function(dense_cfg());
    let n = 60;
    let hits = (0..n)
        .filter(|_| tiled(&strat.new_tree(&mut runner).unwrap().current()))
        .count();
    assert!(hits >= 2, "{hits} of {n}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(common::cases(200)))]

    /// Random programs optimised and compiled for F32 with no GEMM stages
    /// (dense contractions on the `f32x4` tiles), on one and two threads,
    /// give on random inputs a result the F32 contract accepts.
    #[test]
    fn jit_f32_tiles_keep_the_contract(f in arb_function(dense_cfg()), seed in any::<u64>(), threads in 1usize..3) {
        let o = einsat::opt::Options {
            precision: F32,
            time_limit: std::time::Duration::from_secs(600),
            ..einsat::opt::Options::default()
        };
        let g = einsat::opt::optimize(&f, &o).unwrap().program;
        let k = match jit::compile_with(&g, &options(false, threads)) {
            Ok(k) => k,
            Err(e) => {
                prop_assume!(false, "{}", e);
                unreachable!()
            }
        };
        let sizes = random_sizes(&f, seed, 9);
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let args = random_inputs(&f, &sizes, &mut rng).unwrap();
        let owned: Vec<Own> = args.iter().map(own).collect();
        let args32: Vec<Arg32<'_>> = owned.iter().map(arg).collect();
        let got = widen(&k.call_f32(&args32).unwrap());
        let why = contract_judge_in(&f, &args, &got, F32).unwrap();
        prop_assert!(why.is_none(), "{}\n=>\n{}\n{}", print_function(&f), print_function(&g), why.unwrap());
    }
}

/// An owned f32 argument (the views of [`Arg32`] borrow it).
enum Own {
    Real(f32),
    Array(ArrayD<f32>),
    Pair(Box<Own>, Box<Own>),
}

fn own(v: &Value) -> Own {
    match v {
        Value::Real(x) => Own::Real(*x as f32),
        Value::Array(a) => Own::Array(a.mapv(|x| x as f32)),
        Value::Pair(a, b) => Own::Pair(Box::new(own(a)), Box::new(own(b))),
    }
}

fn arg(o: &Own) -> Arg32<'_> {
    match o {
        Own::Real(x) => Arg32::Real(*x),
        Own::Array(a) => Arg32::Array(a.view()),
        Own::Pair(a, b) => Arg32::pair(arg(a), arg(b)),
    }
}
