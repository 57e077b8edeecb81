//! Dense contractions in generated code (`jit::dense`): every shape it takes
//! (matmul in every transposition, matvec, the column form, batched matmul,
//! three factors, scalar and two-level nests, constant and outer factors,
//! a repeated index) in every layout of the arguments and of the output,
//! at sizes that hit every tile edge, against the interpreter; which nests
//! the planner takes and refuses; and bit-identical results when the
//! outermost loop is run in pieces; triangular loop domains (`[j <= i]`)
//! and reductions long enough to run in several blocks (`tiles::KBLOCK`).
#![cfg(feature = "testing")] // uses the testing support

use einsat::interp::{self, Value};
use einsat::jit::testing::{emit, ir, tiles};
use einsat::jit::{self, Options};
use einsat::testing::{random_inputs, relayout_value, zeros_like, Layout};
use einsat::Function;
use ndarray::{ArrayD, IxDyn};
use rand::SeedableRng;
use std::collections::BTreeMap;

const SHAPES: &str = "
fn mm(A: [n,p]R, B: [p,m]R) -> [n,m]R = gen(i:n, j:m) sum(k:p) A[i,k] * B[k,j]
fn mm_at(A: [p,n]R, B: [p,m]R) -> [n,m]R = gen(i:n, j:m) sum(k:p) A[k,i] * B[k,j]
fn mm_bt(A: [n,p]R, B: [m,p]R) -> [n,m]R = gen(i:n, j:m) sum(k:p) A[i,k] * B[j,k]
fn mm_ct(A: [n,p]R, B: [p,m]R) -> [m,n]R = gen(j:m, i:n) sum(k:p) A[i,k] * B[k,j]
fn mv(A: [n,m]R, x: [m]R) -> [n]R = gen(i:n) sum(j:m) A[i,j] * x[j]
fn colv(x: [n]R, A: [n,m]R) -> [m]R = gen(j:m) sum(i:n) x[i] * A[i,j]
fn bmm(A: [b,n,p]R, B: [b,p,m]R) -> [b,n,m]R = gen(q:b, i:n, j:m) sum(k:p) A[q,i,k] * B[q,k,j]
fn three(A: [n,p]R, B: [p,m]R, c: [p]R) -> [n,m]R = gen(i:n, j:m) sum(k:p) A[i,k] * B[k,j] * c[k]
fn bil(x: [n]R, A: [n,m]R, y: [m]R) -> R = sum(i:n, j:m) x[i] * A[i,j] * y[j]
fn bil_rows(x: [n]R, A: [n,m]R, y: [m]R) -> R = sum(i:n) x[i] * sum(j:m) A[i,j] * y[j]
fn bil_cols(x: [n]R, A: [n,m]R, y: [m]R) -> R = sum(j:m) y[j] * sum(i:n) x[i] * A[i,j]
fn scaled(s: R, A: [n,p]R, B: [p,m]R) -> [n,m]R = gen(i:n, j:m) s * sum(k:p) 2 * A[i,k] * B[k,j]
fn outer(x: [n]R, A: [n,m]R, y: [m]R) -> [n]R = gen(i:n) x[i] * sum(j:m) A[i,j] * y[j]
fn post2(A: [n,p]R, B: [p,m]R, r: [n]R, c: [m]R) -> [n,m]R = gen(i:n, j:m) r[i] * (sum(k:p) A[i,k] * B[k,j]) * c[j]
fn diag(A: [n,n]R, B: [n,m]R) -> [n]R = gen(i:n) sum(k:m) A[i,i] * B[i,k]
fn two_gen(Y: [b,n]R, A: [b,m,n]R, x: [m]R) -> [b]R = gen(q:b) sum(i:n) Y[q,i] * sum(j:m) A[q,j,i] * x[j]
fn two_tile(x: [n]R, A: [n,m,p]R, B: [p]R) -> R = sum(i:n, j:m) x[i] * sum(k:p) A[i,j,k] * B[k]
fn dot(x: [n]R, y: [n]R) -> R = sum(i:n) x[i] * y[i]
";

const EDGES: [usize; 11] = [0, 1, 2, 3, 4, 5, 7, 8, 9, 17, 33];

fn functions() -> Vec<Function> {
    einsat::load(SHAPES).unwrap().functions
}

fn gemm_off() -> Options {
    Options {
        gemm: false,
        threads: 1,
        ..Options::default()
    }
}

/// The sizes of a case: `n` and its neighbours, so no two axes agree.
fn sizes(f: &Function, n: usize) -> BTreeMap<String, usize> {
    f.size_names()
        .into_iter()
        .map(|x| {
            let v = match x.as_str() {
                "n" => n,
                "m" => (n * 2 + 3) % 11,
                "p" => (n + 5) % 9,
                "b" => 1 + n % 3,
                _ => n,
            };
            (x, v)
        })
        .collect()
}

fn close(a: &Value, b: &Value) -> bool {
    a.approx_eq(b, 1e-10, 1e-12)
}

/// An output buffer of `like`'s shape in `layout` (zeros: the kernel must
/// write every element).

#[test]
fn the_planner_takes_every_shape() {
    for f in functions() {
        let k = jit::compile_with(&f, &gemm_off()).unwrap();
        let p = k.loop_program();
        assert_eq!(p.nests.len(), 1, "{}", f.name);
        for layout in [
            ir::Layout::c_order(p),
            ir::Layout::generic(p),
            ir::Layout::from_fn(p, |_, a| a == 0),
        ] {
            let plan = tiles::plan(p, &p.nests[0], &layout);
            assert!(plan.is_some(), "{} not taken in {layout:?}", f.name);
        }
    }
}

#[test]
fn the_planner_vectorises_along_unit_strides() {
    let prog = einsat::load(SHAPES).unwrap();
    let plan_of = |name: &str| {
        let k = jit::compile_with(prog.get(name).unwrap(), &gemm_off()).unwrap();
        let p = k.loop_program();
        tiles::plan(p, &p.nests[0], &ir::Layout::c_order(p)).unwrap()
    };
    // matmul, C order: lanes along j, rows along i
    let mm = plan_of("mm");
    assert_eq!((mm.mode, mm.lanes), (tiles::Mode::Tile, 2));
    assert!(mm.w.is_some() && mm.rows > 1);
    // matvec, C order: lanes along the summed j
    let mv = plan_of("mv");
    assert_eq!((mv.mode, mv.lanes), (tiles::Mode::Reduce, 2));
    // the column form: lanes along the output's j
    let cv = plan_of("colv");
    assert_eq!((cv.mode, cv.lanes), (tiles::Mode::Tile, 2));
    assert!(plan_of("bil_cols").two_level);
}

#[test]
fn two_level_sums_are_interchanged_to_walk_rows() {
    // `sum(j) y[j] * sum(i) x[i] * A[i,j]` walks a column of A per j as
    // written; in C order the planner swaps the sums (rows of A, the
    // row-sum form with rows sharing the loads of y), and in Fortran
    // order `bil_rows` is swapped the other way
    let prog = einsat::load(SHAPES).unwrap();
    for name in ["bil_rows", "bil_cols"] {
        let k = jit::compile_with(prog.get(name).unwrap(), &gemm_off()).unwrap();
        let p = k.loop_program();
        for layout in [
            ir::Layout::c_order(p),
            ir::Layout::from_fn(p, |_, a| a == 0),
        ] {
            let plan = tiles::plan(p, &p.nests[0], &layout).unwrap();
            assert!(plan.two_level, "{name}");
            assert_eq!(
                (plan.mode, plan.lanes),
                (tiles::Mode::Reduce, 2),
                "{name} in {layout:?}"
            );
            assert!(plan.w.is_some() && plan.rows > 1, "{name} in {layout:?}");
        }
    }
}

#[test]
fn the_planner_refuses_brackets_padding_calls_and_products_without_sums() {
    let src = "
    fn upper(U: [n,n]R, x: [n]R) -> [n]R = gen(i:n) sum(j:n) [j >= i] * U[i,j] * x[j]
    fn shifted(A: [n,n]R, x: [n]R) -> [n]R = gen(i:n) sum(d:3) A[i, i+d-1] * x[i+d-1]
    fn called(A: [n,n]R, x: [n]R) -> [n]R = gen(i:n) sum(j:n) exp(A[i,j]) * x[j]
    fn summed(A: [n,n]R, x: [n]R) -> [n]R = gen(i:n) sum(j:n) A[i,j] + x[j]
    fn quotient(A: [n,n]R, x: [n]R) -> [n]R = gen(i:n) sum(j:n) A[i,j] / x[j]
    fn elementwise(x: [n]R, y: [n]R) -> [n]R = gen(i:n) x[i] * y[i]
    fn three_levels(x: [n]R) -> R = sum(i:n) x[i] * sum(j:n) x[j] * sum(k:n) x[k] * x[k]
    fn eps2(x: [2]R) -> R = sum(i:2, j:2) eps[i,j] * x[i] * x[j]
    ";
    let prog = einsat::load(src).unwrap();
    for f in &prog.functions {
        let p = ir::lower(f).unwrap();
        for nest in &p.nests {
            for layout in [ir::Layout::c_order(&p), ir::Layout::generic(&p)] {
                assert!(
                    tiles::plan(&p, nest, &layout).is_none(),
                    "{} was taken",
                    f.name
                );
            }
        }
    }
}

#[test]
fn every_shape_agrees_with_the_interpreter_in_every_layout_at_every_edge() {
    let mut runs = 0;
    for f in functions() {
        let k = jit::compile_with(&f, &gemm_off()).unwrap();
        for (t, &n) in EDGES.iter().enumerate() {
            let sz = sizes(&f, n);
            let mut rng = rand::rngs::StdRng::seed_from_u64(1000 + t as u64);
            let args = random_inputs(&f, &sz, &mut rng).unwrap();
            let want = interp::run(&f, &args).unwrap();
            for (li, layout) in Layout::ALL.into_iter().enumerate() {
                let a: Vec<Value> = args.iter().map(|v| relayout_value(v, layout)).collect();
                let got = k.call(&a).unwrap();
                assert!(
                    close(&want, &got),
                    "{} n={n} {layout:?}\ninterp {want}\njit    {got}",
                    f.name
                );
                runs += 1;
                if matches!(&want, Value::Array(w) if w.is_empty()) {
                    // (an empty array may have zero strides, which
                    // `call_into` refuses for an output)
                    continue;
                }
                // the output in another layout too
                let ol = Layout::ALL[(li + 1 + t) % 4];
                let mut out = zeros_like(&want, ol);
                k.call_into(&a, &mut out).unwrap();
                assert!(
                    close(&want, &out),
                    "{} n={n} args {layout:?} out {ol:?}\ninterp {want}\njit    {out}",
                    f.name
                );
                runs += 1;
            }
        }
    }
    assert!(runs >= 18 * 11 * 4);
}

#[test]
fn mixed_layouts_per_argument_agree() {
    // one argument C order and the other Fortran, sliced or reversed
    for f in functions() {
        let k = jit::compile_with(&f, &gemm_off()).unwrap();
        for (t, &n) in [3usize, 9, 17].iter().enumerate() {
            let sz = sizes(&f, n);
            let mut rng = rand::rngs::StdRng::seed_from_u64(77 + t as u64);
            let args = random_inputs(&f, &sz, &mut rng).unwrap();
            let want = interp::run(&f, &args).unwrap();
            for shift in 0..4 {
                let a: Vec<Value> = args
                    .iter()
                    .enumerate()
                    .map(|(i, v)| relayout_value(v, Layout::ALL[(i + shift) % 4]))
                    .collect();
                let got = k.call(&a).unwrap();
                assert!(close(&want, &got), "{} n={n} shift {shift}", f.name);
            }
        }
    }
}

/// Run nest 0 of `f` natively on `args` in pieces of its outermost range
/// (`cuts` are the boundaries inside it), writing into a C-order output.
fn run_in_pieces(f: &Function, args: &[Value], out: &mut Value, cuts: &[i64]) {
    let p = ir::lower(f).unwrap();
    assert_eq!(p.nests.len(), 1);
    let layout = ir::Layout::c_order(&p);
    assert!(
        tiles::plan(&p, &p.nests[0], &layout).is_some(),
        "{}",
        f.name
    );
    let native = emit::compile(&p, &layout).unwrap();
    let sz = interp::bind(f, args).unwrap();
    let mut svals: Vec<i64> = p.sizes.iter().map(|n| sz[n] as i64).collect();
    // (after the sizes: the address of the cancellation flag)
    let never = std::sync::atomic::AtomicBool::new(false);
    svals.push(&never as *const _ as i64);
    let mut ptrs: Vec<*mut f64> = Vec::new();
    let mut strides: Vec<i64> = Vec::new();
    for buf in &p.bufs {
        match &buf.kind {
            ir::BufKind::Param { param, path } => {
                assert!(path.is_empty());
                match &args[*param] {
                    Value::Array(a) => {
                        assert!(a.is_standard_layout());
                        ptrs.push(a.as_ptr() as *mut f64);
                        strides.extend(a.strides().iter().map(|&s| s as i64));
                    }
                    Value::Real(x) => ptrs.push(x as *const f64 as *mut f64),
                    Value::Pair(..) => unreachable!(),
                }
            }
            ir::BufKind::Out { .. } => match out {
                Value::Array(a) => {
                    strides.extend(a.strides().iter().map(|&s| s as i64));
                    ptrs.push(a.as_mut_ptr());
                }
                Value::Real(x) => ptrs.push(x as *mut f64),
                Value::Pair(..) => unreachable!(),
            },
            ir::BufKind::Temp => unreachable!("no temporaries here"),
        }
    }
    let hi = match p.nests[0].vars.first() {
        Some((_, ir::SizeRef::Named(k))) => svals[*k],
        Some((_, ir::SizeRef::Lit(n))) => *n,
        None => 1,
    };
    let mut bounds = vec![0];
    bounds.extend(cuts.iter().copied().filter(|&c| c > 0 && c < hi));
    bounds.push(hi);
    for w in bounds.windows(2) {
        // SAFETY: C-order buffers of the shapes the loop program declares
        // (checked by `bind`), pieces within the outermost range.
        let entry = native.entries[0].expect("every nest compiled");
        unsafe { entry(ptrs.as_ptr(), strides.as_ptr(), svals.as_ptr(), w[0], w[1]) };
    }
}

#[test]
fn running_the_outermost_loop_in_pieces_is_bit_identical() {
    for f in functions() {
        for &n in &[5usize, 9, 17, 33] {
            let sz = sizes(&f, n);
            let mut rng = rand::rngs::StdRng::seed_from_u64(n as u64);
            let args = random_inputs(&f, &sz, &mut rng).unwrap();
            let want = interp::run(&f, &args).unwrap();
            let mut whole = zeros_like(&want, Layout::C);
            run_in_pieces(&f, &args, &mut whole, &[]);
            assert!(close(&want, &whole), "{} n={n}", f.name);
            for cuts in [
                vec![1, 2, 3],
                vec![3, 7],
                vec![4, 8, 12, 16],
                vec![5, 6, 13],
            ] {
                let mut parts = zeros_like(&want, Layout::C);
                run_in_pieces(&f, &args, &mut parts, &cuts);
                let same = match (&whole, &parts) {
                    (Value::Array(a), Value::Array(b)) => a
                        .iter()
                        .zip(b.iter())
                        .all(|(x, y)| x.to_bits() == y.to_bits()),
                    (Value::Real(a), Value::Real(b)) => a.to_bits() == b.to_bits(),
                    _ => false,
                };
                assert!(same, "{} n={n} cuts {cuts:?}\n{whole}\n{parts}", f.name);
            }
        }
    }
}

/// Nests with a loop domain from brackets (`Reduce` mode, rows along `i`;
/// the column forms and `mm_tri` in `Tile` mode, lanes along `j`).
const TRI: &str = "
fn tri(A: [n,m]R, x: [m]R) -> [n]R = gen(i:n) sum(j:m) [j <= i] * A[i,j] * x[j]
fn tri_strict(A: [n,m]R, x: [m]R) -> [n]R = gen(i:n) sum(j:m) [j < i] * A[i,j] * x[j]
fn tri_two(A: [n,m]R, x: [m]R) -> [n]R = gen(i:n) sum(j:m) [j < 2*i - 1 && j <= i + 3] * x[j] * A[i,j]
fn col_lo(x: [n]R, A: [n,m]R) -> [m]R = gen(j:m) sum(i:n) [j <= i] * x[i] * A[i,j]
fn col_hi(x: [n]R, A: [n,m]R) -> [m]R = gen(j:m) sum(i:n) [i <= j] * x[i] * A[i,j]
fn col_band(x: [n]R, A: [n,m]R) -> [m]R = gen(j:m) sum(i:n) [j - 1 <= i && i < 2*j - 2] * A[i,j] * x[i]
fn mm_tri(A: [n,p]R, B: [p,m]R) -> [n,m]R = gen(i:n, j:m) sum(k:p) [k <= j + 1] * A[i,k] * B[k,j]
";

#[test]
fn triangular_domains_are_planned_and_agree_in_pieces() {
    let prog = einsat::load(TRI).unwrap();
    for f in &prog.functions {
        let p = ir::lower(f).unwrap();
        let plan = tiles::plan(&p, &p.nests[0], &ir::Layout::c_order(&p))
            .unwrap_or_else(|| panic!("{} not taken", f.name));
        if f.name.starts_with("tri") {
            assert_eq!(plan.mode, tiles::Mode::Reduce, "{}", f.name);
            assert!(!plan.hi.is_empty(), "{}", f.name);
        } else {
            // the column forms: lanes along the output, masked domains
            assert_eq!(
                (plan.mode, plan.lanes),
                (tiles::Mode::Tile, 2),
                "{}",
                f.name
            );
            assert!(!plan.tdom.is_empty(), "{}", f.name);
        }
        for &n in &EDGES {
            let sz = sizes(f, n);
            let mut rng = rand::rngs::StdRng::seed_from_u64(n as u64 + 11);
            let args = random_inputs(f, &sz, &mut rng).unwrap();
            let want = interp::run(f, &args).unwrap();
            let mut whole = zeros_like(&want, Layout::C);
            run_in_pieces(f, &args, &mut whole, &[]);
            assert!(close(&want, &whole), "{} n={n}\n{want}\n{whole}", f.name);
            for cuts in [vec![1, 2, 3], vec![3, 7], vec![5, 6, 13]] {
                let mut parts = zeros_like(&want, Layout::C);
                run_in_pieces(f, &args, &mut parts, &cuts);
                let (Value::Array(a), Value::Array(b)) = (&whole, &parts) else {
                    panic!("arrays")
                };
                assert!(
                    a.iter()
                        .zip(b.iter())
                        .all(|(x, y)| x.to_bits() == y.to_bits()),
                    "{} n={n} cuts {cuts:?}",
                    f.name
                );
            }
            // through the kernel, every layout
            let k = jit::compile_with(f, &gemm_off()).unwrap();
            for layout in Layout::ALL {
                let a: Vec<Value> = args.iter().map(|v| relayout_value(v, layout)).collect();
                let got = k.call(&a).unwrap();
                assert!(close(&want, &got), "{} n={n} {layout:?}", f.name);
            }
        }
    }
}

#[test]
fn masked_domains_keep_strong_zeros() {
    // NaN and inf outside the bracket's domain are strong zeros: they must
    // not reach a lane through the masked pieces of a tile
    let prog = einsat::load(TRI).unwrap();
    for (name, inside) in [
        (
            "col_lo",
            (|i: usize, j: usize| j <= i) as fn(usize, usize) -> bool,
        ),
        ("col_hi", |i, j| i <= j),
    ] {
        let f = prog.get(name).unwrap();
        for (n, m) in [(1usize, 1usize), (5, 7), (9, 4), (17, 17)] {
            let x = ArrayD::from_shape_fn(IxDyn(&[n]), |ix| 1.0 + ix[0] as f64 * 0.5);
            let a = ArrayD::from_shape_fn(IxDyn(&[n, m]), |ix| {
                match (inside(ix[0], ix[1]), (ix[0] + ix[1]) % 2) {
                    (true, _) => 0.25 * ix[0] as f64 - 0.5 * ix[1] as f64,
                    (false, 0) => f64::NAN,
                    (false, _) => f64::INFINITY,
                }
            });
            let args = vec![Value::Array(x), Value::Array(a)];
            let want = interp::run(f, &args).unwrap();
            let k = jit::compile_with(f, &gemm_off()).unwrap();
            for layout in Layout::ALL {
                let a: Vec<Value> = args.iter().map(|v| relayout_value(v, layout)).collect();
                let got = k.call(&a).unwrap();
                assert!(
                    close(&want, &got),
                    "{name} {n}x{m} {layout:?}\n{want}\n{got}"
                );
            }
        }
    }
}

#[test]
fn long_reductions_run_in_blocks_and_agree() {
    let prog = einsat::load(&format!("{SHAPES}{TRI}")).unwrap();
    for name in ["mm", "scaled", "post2", "mm_at", "mm_tri"] {
        let f = prog.get(name).unwrap();
        for (n, m, kk) in [
            (9usize, 7usize, tiles::KBLOCK + 1),
            (5, 10, 2 * tiles::KBLOCK),
            (6, 3, 2 * tiles::KBLOCK + 37),
        ] {
            let sz: BTreeMap<String, usize> = [("n", n), ("m", m), ("p", kk)]
                .into_iter()
                .filter(|(x, _)| f.size_names().iter().any(|y| y == x))
                .map(|(x, v)| (x.to_string(), v))
                .collect();
            let mut rng = rand::rngs::StdRng::seed_from_u64(kk as u64);
            let args = random_inputs(f, &sz, &mut rng).unwrap();
            let want = interp::run(f, &args).unwrap();
            let k = jit::compile_with(f, &gemm_off()).unwrap();
            for layout in Layout::ALL {
                let a: Vec<Value> = args.iter().map(|v| relayout_value(v, layout)).collect();
                let got = k.call(&a).unwrap();
                assert!(close(&want, &got), "{name} p={kk} {layout:?}");
                let mut out = zeros_like(&want, layout);
                k.call_into(&a, &mut out).unwrap();
                assert!(close(&want, &out), "{name} p={kk} {layout:?} call_into");
            }
            let mut whole = zeros_like(&want, Layout::C);
            run_in_pieces(f, &args, &mut whole, &[]);
            let mut parts = zeros_like(&want, Layout::C);
            run_in_pieces(f, &args, &mut parts, &[2, 3, 5]);
            assert!(close(&want, &whole), "{name} p={kk} whole");
            let (Value::Array(a), Value::Array(b)) = (&whole, &parts) else {
                panic!("arrays")
            };
            assert!(
                a.iter()
                    .zip(b.iter())
                    .all(|(x, y)| x.to_bits() == y.to_bits()),
                "{name} p={kk} pieces"
            );
        }
    }
}
