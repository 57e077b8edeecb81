//! Row groups (`jit::schedule::rows`): runs of nests over the same rows
//! that a call runs a block of rows at a time (a row softmax's max, exp,
//! sum and division; attention's softmax between its two products; a
//! layer normalisation's passes). Checked: which runs are grouped (and
//! that a nest reading another row of what the run writes is not); the
//! values bit for bit those of the nests run one after the other
//! (`row_block_bytes: 0`), for blocks of one row, of a few rows that do
//! not divide the rows, and the default, on one and two threads, in
//! `F64` and `F32`; and within the floating-point contract of the
//! interpreter, on offset data (1e8 + small), huge and tiny magnitudes,
//! rows of -inf, rows with NaN or +inf, rows all equal, one column and
//! odd lengths.
#![cfg(feature = "testing")] // uses the testing support

use crate::common;

use common::load1;
use einsat::interp::{self, Value};
use einsat::jit::testing::ir::lower;
use einsat::jit::testing::schedule::{row_groups, RowGroup};
use einsat::testing::difftest::contract_judge_in;
use einsat::Precision;
use einsat::{jit, Arg32, Value32};
use ndarray::ArrayD;

const SOFTMAX: &str = "fn sm(X: [n,m]R) -> [n,m]R = gen(i:n) let mx = max(j:m) X[i,j] in \
    let z = sum(j:m) exp(X[i,j] - mx) in gen(j:m) exp(X[i,j] - mx) / z";
const ATTENTION: &str = "fn att(Q: [s,d]R, K: [s,d]R, V: [s,d]R) -> [s,d]R = \
    let S = gen(i:s, j:s) (sum(l:d) Q[i,l] * K[j,l]) / 8 in \
    let P = gen(i:s) let mx = max(j:s) S[i,j] in let z = sum(j:s) exp(S[i,j] - mx) in \
    gen(j:s) exp(S[i,j] - mx) / z in gen(i:s, c:d) sum(j:s) P[i,j] * V[j,c]";
const LAYER_NORM: &str = "fn ln(X: [n,m]R) -> [n,m]R = gen(i:n) let mu = (sum(j:m) X[i,j]) / m in \
    let v = (sum(j:m) (X[i,j] - mu) * (X[i,j] - mu)) / m in \
    gen(j:m) (X[i,j] - mu) / sqrt(v + 0.00001)";
/// The second nest reads the next row of the first's temporary (a
/// checked index): not one group.
const NEXT_ROW: &str = "fn nr(X: [n,m]R) -> [n,m]R = let t = gen(i:n, j:m) exp(X[i,j]) in \
    gen(i:n, j:m) t[i+1, j] + t[i, j]";
/// The second nest reads the first's temporary transposed: not one group.
const TRANSPOSED: &str = "fn tr(X: [n,n]R) -> [n,n]R = let t = gen(i:n, j:n) exp(X[i,j]) in \
    gen(i:n, j:n) t[j, i] * t[i, j]";

fn optimised(src: &str, p: Precision) -> einsat::Function {
    let o = einsat::opt::Options {
        precision: p,
        ..einsat::opt::Options::default()
    };
    einsat::opt::optimize(&load1(src), &o).unwrap().program
}

fn groups_of(src: &str) -> (usize, Vec<RowGroup>) {
    let g = optimised(src, Precision::F64);
    let mut p = lower(&g).unwrap();
    let opts = jit::Options::default();
    jit::testing::schedule::prepare(&mut p, &opts);
    let lib = vec![false; p.nests.len()];
    (p.nests.len(), row_groups(&p, &lib, &opts))
}

#[test]
fn which_runs_are_grouped() {
    // softmax: max, exp, sum, division over the rows, one group
    let (n, g) = groups_of(SOFTMAX);
    assert_eq!(n, 4);
    assert_eq!(g, vec![RowGroup { first: 0, last: 3 }]);
    let (n, g) = groups_of(LAYER_NORM);
    assert!(
        n >= 2
            && g == vec![RowGroup {
                first: 0,
                last: n - 1
            }],
        "{g:?}"
    );
    for src in [NEXT_ROW, TRANSPOSED] {
        let (_, g) = groups_of(src);
        assert!(g.is_empty(), "{src}: {g:?}");
    }
    // nothing grouped when the budget is 0
    let g = optimised(SOFTMAX, Precision::F64);
    let mut p = lower(&g).unwrap();
    let opts = jit::Options {
        row_block_bytes: 0,
        ..jit::Options::default()
    };
    jit::testing::schedule::prepare(&mut p, &opts);
    assert!(row_groups(&p, &[false; 4], &opts).is_empty());
}

/// The softmax's row sum (`t2[i] = sum(j) t1[i,j]`, right after the exp
/// map `t1`) is found, and fused into the map's nest in C order: the
/// sum's nest is skipped and the map's plan stores it. Not with
/// `fuse_row_sums: false`, nor where the map's loops do not run its rows
/// whole (`X` column-major: the map runs in tiles).
#[test]
fn softmax_row_sum_fused_into_the_exp_map() {
    use einsat::jit::testing::ir::{Layout, RowSum};
    use einsat::jit::testing::schedule::{plan_program, Backend};
    let g = optimised(SOFTMAX, Precision::F64);
    let mut p = lower(&g).unwrap();
    let opts = jit::Options::default();
    jit::testing::schedule::prepare(&mut p, &opts);
    assert_eq!(p.nests.len(), 4);
    assert_eq!(
        p.row_sums,
        vec![RowSum {
            map_nest: 1,
            map: p.nests[1].buf,
            sum: p.nests[2].buf
        }]
    );
    // the sum's buffer is live from the map's nest on, which writes it
    // when the two are fused (else it could share storage with a
    // temporary the map's nest still reads)
    let live = jit::testing::schedule::temp_liveness(&p);
    let sum_range = live.iter().find(|(b, _)| *b == p.nests[2].buf).unwrap().1;
    assert_eq!(sum_range, (1, 3));
    let c = Layout::c_order(&p);
    let plans = plan_program(&p, &c, &opts);
    assert!(matches!(plans[2].backend, Backend::Skip));
    assert_eq!(plans[1].row_sum, Some(p.row_sums[0]));
    assert!(plans
        .iter()
        .enumerate()
        .all(|(k, pl)| k == 2 || !matches!(pl.backend, Backend::Skip)));
    let off = jit::Options {
        fuse_row_sums: false,
        ..opts.clone()
    };
    let plans = plan_program(&p, &c, &off);
    assert!(plans
        .iter()
        .all(|pl| pl.row_sum.is_none() && !matches!(pl.backend, Backend::Skip)));
    // X column-major: the map's loops run in tiles of both axes (its
    // reads walk down X's columns), so a row is not whole when its loop
    // ends: the sum's nest runs
    let f_order = Layout::from_fn(&p, |b, a| {
        if b.dims.len() == 2 && !matches!(b.kind, einsat::jit::testing::ir::BufKind::Temp) {
            a == 0
        } else {
            a + 1 == b.dims.len()
        }
    });
    let plans = plan_program(&p, &f_order, &opts);
    assert!(matches!(&plans[1].backend, Backend::Loops(s) if s.tile.is_some()));
    assert!(plans[1].row_sum.is_none() && !matches!(plans[2].backend, Backend::Skip));
    // a map whose rows something else reads in between, or a sum of
    // another row: no pair
    for src in [
        "fn a(X: [n,m]R) -> [n]R = let t = gen(i:n, j:m) exp(X[i,j]) in \
         gen(i:n) sum(j:m) t[i, j] * t[i, j]",
        NEXT_ROW,
        TRANSPOSED,
    ] {
        let g = optimised(src, Precision::F64);
        let mut p = lower(&g).unwrap();
        jit::testing::schedule::prepare(&mut p, &opts);
        assert!(p.row_sums.is_empty(), "{src}: {:?}", p.row_sums);
    }
}

/// The softmax on `X` column-major (read in place, strided) and on a
/// transposed view, the fused row sum and the unfused one against the
/// interpreter's contract, on one and two threads.
#[test]
fn softmax_row_sums_in_every_layout() {
    let f = load1(SOFTMAX);
    for p in [Precision::F64, Precision::F32] {
        let g = optimised(SOFTMAX, p);
        for (rows, cols) in [(1, 1), (3, 0), (0, 5), (5, 17), (40, 300)] {
            for class in [0, 1, 4] {
                let c = arr2(rows, cols, data(class, rows, cols, 7 + rows as u64));
                let mut f_order =
                    ndarray::Array2::<f64>::zeros(ndarray::ShapeBuilder::f((rows, cols)));
                f_order.assign(&c.view().into_dimensionality::<ndarray::Ix2>().unwrap());
                let f_order = f_order.into_dyn();
                assert!(rows < 2 || cols < 2 || f_order.strides() == [1, rows as isize]);
                for x in [c.clone(), f_order] {
                    let vals = vec![Value::Array(match p {
                        Precision::F32 => x.mapv(|v| v as f32 as f64),
                        _ => x.clone(),
                    })];
                    for (fuse, threads) in [(true, 1), (true, 2), (false, 1)] {
                        let o = jit::Options {
                            precision: p,
                            fuse_row_sums: fuse,
                            threads,
                            parallel_threshold: if threads > 1 {
                                0
                            } else {
                                jit::Options::default().parallel_threshold
                            },
                            ..jit::Options::default()
                        };
                        let got = run(&g, &o, std::slice::from_ref(&x));
                        let why = contract_judge_in(&f, &vals, &got, p).unwrap();
                        assert!(
                            why.is_none(),
                            "{rows}x{cols} class {class} {p:?} fuse {fuse} threads {threads} \
                             strides {:?}: {}",
                            x.strides(),
                            why.unwrap()
                        );
                    }
                }
            }
        }
    }
}

/// `rows × cols` values of data class `class`, deterministic.
fn data(class: usize, rows: usize, cols: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut unit = move || {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        (s.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut xs: Vec<f64> = (0..rows * cols)
        .map(|_| {
            let u = unit() - 0.5;
            match class {
                0 => u * 20.0,
                1 => 1e8 + u,
                2 => u * 1e300,
                3 => u * 1e-300,
                _ => u * 60.0,
            }
        })
        .collect();
    if class == 4 && cols > 0 {
        // row 0 all -inf, row 1 a NaN, row 2 a +inf, row 3 all equal,
        // row 4 a -inf among finite values, row 5 ±0 only
        let row = |r: usize, xs: &mut Vec<f64>, f: &dyn Fn(usize) -> f64| {
            if r < rows {
                for c in 0..cols {
                    xs[r * cols + c] = f(c);
                }
            }
        };
        row(0, &mut xs, &|_| f64::NEG_INFINITY);
        row(1, &mut xs, &|c| {
            if c == cols / 2 {
                f64::NAN
            } else {
                c as f64
            }
        });
        row(2, &mut xs, &|c| {
            if c == cols - 1 {
                f64::INFINITY
            } else {
                -(c as f64)
            }
        });
        row(3, &mut xs, &|_| 0.75);
        row(4, &mut xs, &|c| {
            if c == 0 {
                f64::NEG_INFINITY
            } else {
                c as f64 * 0.5
            }
        });
        row(5, &mut xs, &|c| if c % 2 == 0 { 0.0 } else { -0.0 });
    }
    xs
}

fn bits(v: &Value) -> Vec<u64> {
    match v {
        Value::Real(x) => vec![x.to_bits()],
        Value::Array(a) => a.iter().map(|x| x.to_bits()).collect(),
        Value::Pair(a, b) => [bits(a), bits(b)].concat(),
    }
}

fn widen(v: &Value32) -> Value {
    match v {
        Value32::Real(x) => Value::Real(*x as f64),
        Value32::Array(a) => Value::Array(a.mapv(|x| x as f64)),
        Value32::Pair(a, b) => Value::pair(widen(a), widen(b)),
    }
}

/// The JIT's result for `args` with `opts` (in `opts.precision`).
fn run(g: &einsat::Function, opts: &jit::Options, args: &[ArrayD<f64>]) -> Value {
    let k = jit::compile_with(g, opts).unwrap();
    match opts.precision {
        Precision::F32 => {
            let a32: Vec<ArrayD<f32>> = args.iter().map(|a| a.mapv(|x| x as f32)).collect();
            let av: Vec<Arg32<'_>> = a32.iter().map(|a| Arg32::Array(a.view())).collect();
            widen(&k.call_f32(&av).unwrap())
        }
        _ => {
            let vals: Vec<Value> = args.iter().map(|a| Value::Array(a.clone())).collect();
            k.call(&vals).unwrap()
        }
    }
}

/// For every block budget and thread count: the same bits as nest by
/// nest, and within the contract of the interpreter.
fn check(src: &str, p: Precision, args: &[ArrayD<f64>], what: &str) {
    let f = load1(src);
    let g = optimised(src, p);
    let base = jit::Options {
        precision: p,
        ..jit::Options::default()
    };
    let serial = run(
        &g,
        &jit::Options {
            row_block_bytes: 0,
            threads: 1,
            ..base.clone()
        },
        args,
    );
    // the interpreter's values, and the contract
    let vals: Vec<Value> = match p {
        Precision::F32 => args
            .iter()
            .map(|a| Value::Array(a.mapv(|x| x as f32 as f64)))
            .collect(),
        _ => args.iter().map(|a| Value::Array(a.clone())).collect(),
    };
    let _ = interp::run_with(&f, &vals, p).unwrap();
    let why = contract_judge_in(&f, &vals, &serial, p).unwrap();
    assert!(why.is_none(), "{what} {p:?}: {}", why.unwrap());
    // the row sums as nests of their own (`fuse_row_sums: false`): their
    // terms in another order, within the contract too
    let unfused = run(
        &g,
        &jit::Options {
            row_block_bytes: 0,
            threads: 1,
            fuse_row_sums: false,
            ..base.clone()
        },
        args,
    );
    let why = contract_judge_in(&f, &vals, &unfused, p).unwrap();
    assert!(why.is_none(), "{what} {p:?} unfused: {}", why.unwrap());
    let row_bytes = args[0].shape()[1..].iter().product::<usize>().max(1) * 8;
    for budget in [1, 3 * row_bytes, jit::ROW_BLOCK_BYTES] {
        for threads in [1, 2] {
            let o = jit::Options {
                row_block_bytes: budget,
                threads,
                parallel_threshold: if threads > 1 {
                    0
                } else {
                    base.parallel_threshold
                },
                ..base.clone()
            };
            let got = run(&g, &o, args);
            assert_eq!(
                bits(&got),
                bits(&serial),
                "{what} {p:?} budget {budget} threads {threads}"
            );
        }
    }
}

fn arr2(rows: usize, cols: usize, xs: Vec<f64>) -> ArrayD<f64> {
    ndarray::Array2::from_shape_vec((rows, cols), xs)
        .unwrap()
        .into_dyn()
}

#[test]
fn softmax_and_layer_norm_by_blocks_of_rows() {
    for p in [Precision::F64, Precision::F32] {
        for (rows, cols) in [(9, 1), (7, 13), (11, 64), (6, 257), (33, 100)] {
            for class in 0..5 {
                let x = arr2(
                    rows,
                    cols,
                    data(class, rows, cols, (rows * 31 + cols) as u64),
                );
                let what = format!("{rows}x{cols} class {class}");
                check(
                    SOFTMAX,
                    p,
                    std::slice::from_ref(&x),
                    &format!("softmax {what}"),
                );
                if class != 2 || p == Precision::F64 {
                    check(LAYER_NORM, p, &[x], &format!("layer norm {what}"));
                }
            }
        }
    }
}

#[test]
fn attention_and_ungrouped_programs_by_blocks_of_rows() {
    for p in [Precision::F64, Precision::F32] {
        for s in [1, 5, 40] {
            let q = arr2(s, 8, data(0, s, 8, 1));
            let k = arr2(s, 8, data(1, s, 8, 2).iter().map(|x| x - 1e8).collect());
            let v = arr2(s, 8, data(0, s, 8, 3));
            check(ATTENTION, p, &[q, k, v], &format!("attention s={s}"));
        }
        for n in [1, 6, 17] {
            let x = arr2(n, n, data(0, n, n, 4));
            check(
                NEXT_ROW,
                p,
                std::slice::from_ref(&x),
                &format!("next row n={n}"),
            );
            check(TRANSPOSED, p, &[x], &format!("transposed n={n}"));
        }
    }
}
