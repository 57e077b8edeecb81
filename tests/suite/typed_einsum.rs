//! `einsat::typed::einsum` against a naive loop over every assignment of
//! the labels: random specs (repeated labels, size-1 broadcasting, scalars,
//! outer products, sums over one operand) and random operands, read through
//! transposed and reversed views. Integers exactly (large values, so that
//! products and sums wrap around), f64 and complex within a relative
//! tolerance, f32 against the f64 computation of the same (f32) values
//! within f32's tolerance.

use einsat::ndarray::{ArrayD, ArrayViewD, Axis, IxDyn};
use einsat::plan::{MemoryLimit, Method};
use einsat::typed::{einsum, Complex32, Complex64, Options, Scalar};
use proptest::prelude::*;

/// A random einsum: labels per operand, output labels, size per label.
#[derive(Clone, Debug)]
struct Case {
    inputs: Vec<Vec<usize>>,
    output: Vec<usize>,
    sizes: Vec<usize>,
    /// Per operand: axes of size 1 where the label's size is larger.
    ones: Vec<Vec<bool>>,
    /// Per operand: reverse its first axis / transpose it in memory.
    reverse: Vec<bool>,
    fortran: Vec<bool>,
    seed: u64,
}

impl Case {
    fn spec(&self) -> String {
        let l = |ls: &[usize]| {
            ls.iter()
                .map(|&i| (b'a' + i as u8) as char)
                .collect::<String>()
        };
        let ins: Vec<String> = self.inputs.iter().map(|t| l(t)).collect();
        format!("{}->{}", ins.join(","), l(&self.output))
    }
    fn shape(&self, k: usize) -> Vec<usize> {
        self.inputs[k]
            .iter()
            .zip(&self.ones[k])
            .map(|(&i, &one)| if one { 1 } else { self.sizes[i] })
            .collect()
    }
}

fn case() -> impl Strategy<Value = Case> {
    (1usize..=5, 1usize..=4).prop_flat_map(|(labels, n)| {
        let sizes = proptest::collection::vec(1usize..=4, labels);
        let inputs = proptest::collection::vec(proptest::collection::vec(0..labels, 0..=3), n);
        (
            sizes,
            inputs,
            proptest::collection::vec(any::<bool>(), labels),
            any::<u64>(),
        )
            .prop_flat_map(|(sizes, inputs, out_pick, seed)| {
                let mut output = Vec::new();
                for (i, &pick) in out_pick.iter().enumerate() {
                    if pick && inputs.iter().flatten().any(|&x| x == i) {
                        output.push(i);
                    }
                }
                let n = inputs.len();
                let ones: Vec<_> = inputs
                    .iter()
                    .map(|t| proptest::collection::vec(prop::bool::weighted(0.15), t.len()))
                    .collect();
                (
                    Just(sizes),
                    Just(inputs),
                    Just(output).prop_shuffle(),
                    ones,
                    proptest::collection::vec(any::<bool>(), n),
                    proptest::collection::vec(any::<bool>(), n),
                    Just(seed),
                )
            })
            .prop_map(|(sizes, inputs, output, ones, reverse, fortran, seed)| {
                // a repeated label is a diagonal: keep its axes full-size
                let ones = inputs
                    .iter()
                    .zip(ones)
                    .map(|(t, o)| {
                        t.iter()
                            .zip(o)
                            .map(|(l, one)| one && t.iter().filter(|&&x| x == *l).count() == 1)
                            .collect()
                    })
                    .collect();
                Case {
                    inputs,
                    output,
                    sizes,
                    ones,
                    reverse,
                    fortran,
                    seed,
                }
            })
    })
}

/// The naive einsum: every assignment of the labels.
fn naive<T: Scalar>(c: &Case, ops: &[ArrayD<T>]) -> ArrayD<T> {
    // a label's range: its largest axis (1 for labels of no operand, or
    // whose every axis is broadcast)
    let mut range = vec![1usize; c.sizes.len()];
    for (k, t) in c.inputs.iter().enumerate() {
        for (&l, n) in t.iter().zip(c.shape(k)) {
            range[l] = range[l].max(n);
        }
    }
    let out_shape: Vec<usize> = c.output.iter().map(|&l| range[l]).collect();
    let mut out = ArrayD::from_elem(IxDyn(&out_shape), T::ZERO);
    let total: usize = range.iter().product();
    let mut v = vec![0usize; range.len()];
    for mut r in 0..total {
        for (l, x) in v.iter_mut().enumerate() {
            *x = r % range[l];
            r /= range[l];
        }
        let mut p: Option<T> = None;
        for (k, op) in ops.iter().enumerate() {
            let ix: Vec<usize> = c.inputs[k]
                .iter()
                .zip(&c.ones[k])
                .map(|(&l, &one)| if one { 0 } else { v[l] })
                .collect();
            let x = op[IxDyn(&ix)];
            p = Some(p.map_or(x, |q| q.mul(x)));
        }
        let o: Vec<usize> = c.output.iter().map(|&l| v[l]).collect();
        let e = &mut out[IxDyn(&o)];
        *e = e.add(p.expect("at least one operand"));
    }
    out
}

/// The case's operands from `gen`, and views of them in the case's
/// layouts (reversed first axis, Fortran order).
fn operands<T: Scalar>(c: &Case, gen: impl Fn(u64) -> T) -> Vec<ArrayD<T>> {
    let mut s = c.seed | 1;
    let mut next = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    (0..c.inputs.len())
        .map(|k| {
            let shape = c.shape(k);
            let len = shape.iter().product();
            let data: Vec<T> = (0..len).map(|_| gen(next())).collect();
            ArrayD::from_shape_vec(IxDyn(&shape), data).unwrap()
        })
        .collect()
}

/// Copies of `ops` in other memory layouts, and views of them that read
/// as `ops` do.
fn laid_out<T: Scalar>(c: &Case, ops: &[ArrayD<T>]) -> Vec<ArrayD<T>> {
    ops.iter()
        .enumerate()
        .map(|(k, a)| {
            let mut b = a.clone();
            if c.fortran[k] && b.ndim() > 1 {
                // the same values, stored column-major
                let t = b.t().as_standard_layout().into_owned();
                b = t.reversed_axes();
            }
            if c.reverse[k] && b.ndim() > 0 {
                // stored reversed; the view reverses it back
                b.invert_axis(Axis(0));
                let owned = b.as_standard_layout().into_owned();
                b = owned;
                b.invert_axis(Axis(0));
            }
            b
        })
        .collect()
}

fn run<T: Scalar>(c: &Case, ops: &[ArrayD<T>], method: Method) -> ArrayD<T> {
    run_within(c, ops, method, MemoryLimit::Default)
}

fn run_within<T: Scalar>(
    c: &Case,
    ops: &[ArrayD<T>],
    method: Method,
    memory_limit: MemoryLimit,
) -> ArrayD<T> {
    let views: Vec<ArrayViewD<'_, T>> = ops.iter().map(|a| a.view()).collect();
    let opts = Options {
        method,
        threads: 2,
        memory_limit,
        ..Options::default()
    };
    einsum(&c.spec(), &views, &opts).unwrap_or_else(|e| panic!("{}: {e}", c.spec()))
}

fn close(a: f64, b: f64, tol: f64, scale: f64) -> bool {
    (a - b).abs() <= tol * scale.max(1.0)
}

/// The sum of |terms| of each output element (the scale of its error).
fn magnitude(c: &Case, ops: &[ArrayD<f64>]) -> ArrayD<f64> {
    let abs: Vec<ArrayD<f64>> = ops.iter().map(|a| a.mapv(f64::abs)).collect();
    naive(c, &abs)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn integers_exact(c in case()) {
        // values near 2^62: products and sums wrap around
        let ops = operands(&c, |r| (r as i64) >> (r % 3 * 20));
        let want = naive(&c, &ops);
        let got = run(&c, &laid_out(&c, &ops), Method::Auto);
        prop_assert_eq!(&got, &want, "{}", c.spec());
        let uops: Vec<ArrayD<u64>> = ops.iter().map(|a| a.mapv(|x| x as u64)).collect();
        let got = run(&c, &laid_out(&c, &uops), Method::Greedy);
        prop_assert_eq!(got, naive(&c, &uops), "{}", c.spec());
    }

    #[test]
    fn floats_and_complex_within_tolerance(c in case()) {
        let unit = |r: u64| (r >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
        let ops = operands(&c, unit);
        let want = naive(&c, &ops);
        let scale = magnitude(&c, &ops);
        let got = run(&c, &laid_out(&c, &ops), Method::Auto);
        for ((g, w), s) in got.iter().zip(&want).zip(&scale) {
            prop_assert!(close(*g, *w, 1e-13, *s), "{}: {} vs {}", c.spec(), g, w);
        }
        // f32: the same values (rounded to f32), against f64 arithmetic
        let ops32: Vec<ArrayD<f32>> = ops.iter().map(|a| a.mapv(|x| x as f32)).collect();
        let exact = naive(&c, &ops32.iter().map(|a| a.mapv(f64::from)).collect::<Vec<_>>());
        let got = run(&c, &laid_out(&c, &ops32), Method::Greedy);
        for ((g, w), s) in got.iter().zip(&exact).zip(&scale) {
            prop_assert!(close(f64::from(*g), *w, 1e-5, *s), "{}: {} vs {}", c.spec(), g, w);
        }
        // complex: real and imaginary parts from two draws
        let ops64: Vec<ArrayD<Complex64>> = operands(&c, |r| Complex64::new(unit(r), unit(r.rotate_left(29))));
        let want = naive(&c, &ops64);
        let got = run(&c, &laid_out(&c, &ops64), Method::Auto);
        let abs: Vec<ArrayD<f64>> = ops64.iter().map(|a| a.mapv(|z| z.norm())).collect();
        let scale = naive(&c, &abs);
        for ((g, w), s) in got.iter().zip(&want).zip(&scale) {
            prop_assert!((g - w).norm() <= 1e-13 * s.max(1.0), "{}: {} vs {}", c.spec(), g, w);
        }
        let ops32: Vec<ArrayD<Complex32>> = ops64.iter().map(|a| a.mapv(|z| Complex32::new(z.re as f32, z.im as f32))).collect();
        let exact: Vec<ArrayD<Complex64>> = ops32.iter().map(|a| a.mapv(|z| Complex64::new(z.re.into(), z.im.into()))).collect();
        let want = naive(&c, &exact);
        let got = run(&c, &laid_out(&c, &ops32), Method::Greedy);
        for ((g, w), s) in got.iter().zip(&want).zip(&scale) {
            let g = Complex64::new(g.re.into(), g.im.into());
            prop_assert!((g - w).norm() <= 1e-5 * s.max(1.0), "{}: {} vs {}", c.spec(), g, w);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Under a memory limit of 2 elements most plans slice: each slice's
    /// steps run on the operands fixed at its values, its result added
    /// into its place (output indices) or summed (summed indices).
    #[test]
    fn sliced_runs_match_the_naive_sum(c in case()) {
        let ops = operands(&c, |r| (r as i64) >> (r % 3 * 20));
        let want = naive(&c, &ops);
        for method in [Method::Auto, Method::Greedy] {
            let got = run_within(&c, &laid_out(&c, &ops), method, MemoryLimit::Elements(2.0));
            prop_assert_eq!(&got, &want, "{} ({:?})", c.spec(), method);
        }
        let unit = |r: u64| (r >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
        let ops64: Vec<ArrayD<Complex64>> =
            operands(&c, |r| Complex64::new(unit(r), unit(r.rotate_left(29))));
        let want = naive(&c, &ops64);
        let abs: Vec<ArrayD<f64>> = ops64.iter().map(|a| a.mapv(|z| z.norm())).collect();
        let scale = naive(&c, &abs);
        let got = run_within(&c, &laid_out(&c, &ops64), Method::Auto, MemoryLimit::Elements(2.0));
        for ((g, w), s) in got.iter().zip(&want).zip(&scale) {
            prop_assert!((g - w).norm() <= 1e-13 * s.max(1.0), "{}: {} vs {}", c.spec(), g, w);
        }
    }
}

#[test]
fn a_network_over_its_memory_limit_is_sliced_and_exact() {
    // a chain whose every order makes a 64x64 intermediate, under a limit
    // of 100 elements: the plan slices, and the result is the unsliced one
    let spec = "ab,bc,cd,da->ac";
    let ops: Vec<ArrayD<i64>> = (0..4)
        .map(|k| {
            ArrayD::from_shape_fn(IxDyn(&[64, 64]), |i| {
                ((i[0] * 7 + i[1] * (k + 3)) % 19) as i64 - 9
            })
        })
        .collect();
    let views: Vec<ArrayViewD<'_, i64>> = ops.iter().map(|a| a.view()).collect();
    let whole = einsum(spec, &views, &Options::default()).unwrap();
    let net = einsat::plan::Network::new(
        vec![vec![0, 1], vec![1, 2], vec![2, 3], vec![3, 0]],
        vec![0, 2],
        vec![64; 4],
    )
    .unwrap();
    let limit = MemoryLimit::Elements(100.0);
    let p = einsat::plan::plan(
        &net,
        &einsat::plan::Options {
            memory_limit: limit,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(!p.sliced.is_empty(), "the plan should slice: {p:?}");
    for threads in [1, 2] {
        let opts = Options {
            threads,
            memory_limit: limit,
            ..Options::default()
        };
        assert_eq!(einsum(spec, &views, &opts).unwrap(), whole);
    }
    let f32s: Vec<ArrayD<f32>> = ops.iter().map(|a| a.mapv(|x| x as f32)).collect();
    let v32: Vec<ArrayViewD<'_, f32>> = f32s.iter().map(|a| a.view()).collect();
    let opts = Options {
        memory_limit: limit,
        ..Options::default()
    };
    // small integers: exact in f32 as well
    assert_eq!(einsum(spec, &v32, &opts).unwrap(), whole.mapv(|x| x as f32));
}

/// Larger products run on the library's kernels with threads; transposed
/// operands read in place.
#[test]
fn matrix_products_of_every_float_type() {
    let (m, k, n) = (67, 129, 33);
    let a = ArrayD::from_shape_fn(IxDyn(&[m, k]), |i| {
        ((i[0] * 7 + i[1] * 3) % 11) as f64 - 5.0
    });
    let b = ArrayD::from_shape_fn(IxDyn(&[n, k]), |i| ((i[0] * 5 + i[1]) % 13) as f64 - 6.0);
    let want = a
        .clone()
        .into_dimensionality::<einsat::ndarray::Ix2>()
        .unwrap()
        .dot(
            &b.clone()
                .into_dimensionality::<einsat::ndarray::Ix2>()
                .unwrap()
                .t(),
        );
    let opts = Options {
        threads: 2,
        ..Options::default()
    };
    let got = einsum("ik,jk->ij", &[a.view(), b.view()], &opts).unwrap();
    assert_eq!(got, want.clone().into_dyn());
    // small integers: every type is exact here
    let (a32, b32) = (a.mapv(|x| x as f32), b.mapv(|x| x as f32));
    let got = einsum("ik,jk->ij", &[a32.view(), b32.view()], &opts).unwrap();
    assert_eq!(got, want.mapv(|x| x as f32).into_dyn());
    let (ac, bc) = (
        a.mapv(|x| Complex64::new(x, -x)),
        b.mapv(|x| Complex64::new(0.5 * x, x)),
    );
    let got = einsum("ik,jk->ij", &[ac.view(), bc.view()], &opts).unwrap();
    let want_c = ArrayD::from_shape_fn(IxDyn(&[m, n]), |i| {
        (0..k)
            .map(|p| ac[[i[0], p]] * bc[[i[1], p]])
            .sum::<Complex64>()
    });
    assert_eq!(got, want_c);
    let (ai, bi) = (a.mapv(|x| x as i64), b.mapv(|x| x as i64));
    let got = einsum("ik,jk->ij", &[ai.view(), bi.view()], &opts).unwrap();
    assert_eq!(got, want.mapv(|x| x as i64).into_dyn());
}

/// Operands that do not fit the spec are errors, not panics.
#[test]
fn bad_input_is_an_error() {
    let a = ArrayD::<f32>::zeros(IxDyn(&[2, 3]));
    let b = ArrayD::<f32>::zeros(IxDyn(&[4, 2]));
    let o = Options::default();
    let msg = |r: einsat::Result<ArrayD<f32>>| r.unwrap_err().to_string();
    assert!(msg(einsum("ij,jk->ik", &[a.view(), b.view()], &o)).contains("broadcast"));
    assert!(msg(einsum("ij->ij", &[a.view(), b.view()], &o)).contains("operands"));
    assert!(msg(einsum("i->i", &[a.view()], &o)).contains("axes"));
    assert!(msg(einsum("ij->k", &[a.view()], &o)).contains("no operand"));
    assert!(msg(einsum("ii->i", &[a.view()], &o)).contains("broadcast"));
    let bad_path = Options {
        path: Some(vec![vec![0, 5]]),
        ..Options::default()
    };
    assert!(msg(einsum("ij,ki->jk", &[a.view(), b.view()], &bad_path)).contains("path"));
    // an empty axis: zeros
    let e = ArrayD::<f32>::zeros(IxDyn(&[2, 0]));
    let r = einsum(
        "ij,jk->ik",
        &[e.view(), ArrayD::<f32>::zeros(IxDyn(&[0, 3])).view()],
        &o,
    )
    .unwrap();
    assert_eq!(r, ArrayD::<f32>::zeros(IxDyn(&[2, 3])));
}

/// A long f32 sum is summed pairwise (as numpy sums): 2^25 ones (one
/// element broadcast by a zero stride) sum to 2^25 exactly, where a
/// running f32 sum stops at 2^24.
#[test]
fn long_f32_sums_are_pairwise() {
    let one = einsat::ndarray::arr1(&[1.0f32]);
    let n = 1usize << 25;
    let ones = one.broadcast(n).unwrap().into_dyn();
    let r = einsum("i->", std::slice::from_ref(&ones), &Options::default()).unwrap();
    assert_eq!(r[IxDyn(&[])], n as f32);
    // a sum over one operand inside a product step too
    let two = einsat::ndarray::arr1(&[2.0f32]).into_dyn();
    let r = einsum("i,j->j", &[ones, two.view()], &Options::default()).unwrap();
    assert_eq!(r[IxDyn(&[0])], 2.0 * n as f32);
}

/// Many small products (a batch of 64 products of 32 × 32 matrices) split
/// over threads: the same as one thread and as the naive loop.
#[test]
fn batched_products_on_threads() {
    let (b, n) = (64, 32);
    let a = ArrayD::from_shape_fn(IxDyn(&[b, n, n]), |i| {
        ((i[0] * 31 + i[1] * 7 + i[2] * 3) % 17) as i64 - 8
    });
    let c = ArrayD::from_shape_fn(IxDyn(&[b, n, n]), |i| {
        ((i[0] * 5 + i[1] * 11 + i[2]) % 13) as i64 - 6
    });
    let want = ArrayD::from_shape_fn(IxDyn(&[b, n, n]), |i| {
        (0..n)
            .map(|p| a[[i[0], i[1], p]] * c[[i[0], p, i[2]]])
            .sum::<i64>()
    });
    for threads in [1, 2, 3] {
        let opts = Options {
            threads,
            ..Options::default()
        };
        let got = einsum("bij,bjk->bik", &[a.view(), c.view()], &opts).unwrap();
        assert_eq!(got, want, "{threads} threads");
        // transposed result and operands: the batch axis inside
        let got = einsum(
            "ibj,bjk->kbi",
            &[a.view().permuted_axes(IxDyn(&[1, 0, 2])), c.view()],
            &opts,
        )
        .unwrap();
        assert_eq!(
            got,
            want.view().permuted_axes(IxDyn(&[2, 0, 1])),
            "{threads} threads"
        );
        let (af, cf) = (a.mapv(|x| x as f64), c.mapv(|x| x as f64));
        let got = einsum("bij,bjk->bik", &[af.view(), cf.view()], &opts).unwrap();
        assert_eq!(got, want.mapv(|x| x as f64), "{threads} threads");
    }
}

/// The product `a·b` of `m×k` and `k×n` integer matrices, by plain loops.
fn naive_product(a: &ArrayD<i64>, b: &ArrayD<i64>) -> ArrayD<i64> {
    let (m, k, n) = (a.shape()[0], a.shape()[1], b.shape()[1]);
    ArrayD::from_shape_fn(IxDyn(&[m, n]), |i| {
        (0..k).fold(0i64, |s, p| {
            s.wrapping_add(a[[i[0], p]].wrapping_mul(b[[p, i[1]]]))
        })
    })
}

#[test]
fn large_products_run_in_panels_with_the_same_result() {
    // over the integers' panel size (2^26 multiply-adds): rows split into
    // panels of 559 and 141; then a wide one, in panels of 64 and 6 rows
    // by 512, 512 and 76 columns
    for (m, k, n) in [(700, 400, 300), (70, 2048, 1100)] {
        let a = ArrayD::from_shape_fn(IxDyn(&[m, k]), |i| {
            ((i[0] * 31 + i[1] * 7) % 1001) as i64 * 1_000_003 - 500
        });
        let b = ArrayD::from_shape_fn(IxDyn(&[k, n]), |i| {
            ((i[0] * 13 + i[1] * 5) % 997) as i64 * 999_983 - 400
        });
        let want = naive_product(&a, &b);
        for threads in [1, 2] {
            let opts = Options {
                threads,
                ..Options::default()
            };
            let got = einsum("ik,kj->ij", &[a.view(), b.view()], &opts).unwrap();
            assert_eq!(got, want, "{m}x{k}x{n} on {threads} threads");
            // transposed result: the panels' destination strides
            let got_t = einsum("ik,kj->ji", &[a.view(), b.view()], &opts).unwrap();
            assert_eq!(got_t, want.t().to_owned(), "{m}x{k}x{n} transposed");
        }
    }
}

#[test]
fn a_cancelled_call_is_interrupted_in_every_type() {
    let cancel = einsat::jit::Cancel::new();
    cancel.cancel();
    let a = ArrayD::from_shape_fn(IxDyn(&[5, 6]), |i| (i[0] + 2 * i[1]) as f64);
    let b = ArrayD::from_shape_fn(IxDyn(&[6, 4]), |i| (3 * i[0] + i[1]) as f64 - 7.0);
    let opts = Options::default();
    fn check<T: Scalar>(
        cancel: &einsat::jit::Cancel,
        a: &ArrayD<T>,
        b: &ArrayD<T>,
        opts: &Options,
    ) -> ArrayD<T> {
        for spec in ["ij,jk->ik", "ij->j", "ij,jk->"] {
            let r = cancel.run(|| {
                einsum(
                    spec,
                    &[a.view(), b.view()][..spec.matches(',').count() + 1],
                    opts,
                )
            });
            assert!(
                matches!(r, Err(einsat::Error::Interrupted)),
                "{spec} in {}: {r:?}",
                std::any::type_name::<T>()
            );
        }
        // outside the token's run, the same call completes
        einsum("ij,jk->ik", &[a.view(), b.view()], opts).unwrap()
    }
    let want = check(&cancel, &a, &b, &opts);
    let f32s = check(&cancel, &a.mapv(|x| x as f32), &b.mapv(|x| x as f32), &opts);
    assert_eq!(f32s, want.mapv(|x| x as f32));
    let ints = check(&cancel, &a.mapv(|x| x as i64), &b.mapv(|x| x as i64), &opts);
    assert_eq!(ints, want.mapv(|x| x as i64));
    let cs = check(
        &cancel,
        &a.mapv(|x| Complex32::new(x as f32, 1.0)),
        &b.mapv(|x| Complex32::new(0.0, x as f32)),
        &opts,
    );
    assert_eq!(cs.shape(), &[5, 4]);
    // a reset token lets calls through again
    cancel.reset();
    let again = cancel.run(|| einsum("ij,jk->ik", &[a.view(), b.view()], &opts));
    assert_eq!(again.unwrap(), want);
}

#[test]
fn a_long_product_stops_soon_after_a_cancel() {
    // 2^33 multiply-adds on plain integer loops: many seconds of work,
    // stopped at the next panel (2^26) once cancelled
    let n = 2048;
    let a = ArrayD::from_shape_fn(IxDyn(&[n, n]), |i| (i[0] ^ i[1]) as i64);
    let cancel = einsat::jit::Cancel::new();
    let c = cancel.clone();
    let worker = std::thread::spawn(move || {
        c.run(|| einsum("ij,jk->ik", &[a.view(), a.view()], &Options::default()))
    });
    std::thread::sleep(std::time::Duration::from_millis(50));
    cancel.cancel();
    let r = worker.join().unwrap();
    assert!(
        matches!(r, Err(einsat::Error::Interrupted)),
        "{:?}",
        r.map(|a| a.len())
    );
}
