//! The `f32` slice kernels of `einsat::vmath` (`vmath/single.rs`) against
//! the interpreter's `F32` meaning of each function: the `f64` library
//! function of the widened argument, rounded to `f32`. Per function and
//! dispatch level, every 4093rd `f32` bit pattern over the whole range
//! (about a million points, both signs, subnormals, huge arguments) and
//! the special values: every lane within 1 `f32` ulp, special results
//! (NaN, ±inf, ±0) exactly, and results other than the library's rounded
//! one rare (double rounding; `tanh` in `f32` lanes at AVX-512, at most
//! half a percent); with an addend too. The fused sums, the
//! max/min reductions and the moments and affine maps in `f32` against
//! `f64` references, on offset data, huge and tiny magnitudes, inf and
//! NaN.

use einsat::syntax::ast::{Func, RedOp};
use einsat::vmath::{
    affine_to_f32, apply_at_f32, apply_to_add_f32, levels, reduce_of_f32, sum_f32, sum_of_at_f32,
    sum_of_f32, sum_sq_add_f32, Affine,
};

const FUNCS: [Func; 5] = [Func::Exp, Func::Log, Func::Sin, Func::Cos, Func::Tanh];

/// The interpreter's `F32` value of `f(x)`.
fn want(f: Func, x: f32) -> f32 {
    f.apply(&[f64::from(x)]) as f32
}

/// Distance in ulps of two finite floats (through zero).
fn ulps(a: f32, b: f32) -> u64 {
    fn ord(x: f32) -> i64 {
        let b = x.to_bits() as i32;
        if b < 0 {
            -i64::from(b & i32::MAX)
        } else {
            i64::from(b)
        }
    }
    (ord(a) - ord(b)).unsigned_abs()
}

fn specials() -> Vec<f32> {
    let mut v = vec![
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        f32::from_bits(1),
        -f32::from_bits(1),
        f32::from_bits(0x007f_ffff),
        f32::MAX,
        f32::MIN,
        1.0,
        -1.0,
        88.72283,
        88.72284,
        88.7229,
        89.0,
        -87.33654,
        -87.33655,
        -103.27893,
        -103.97207,
        -103.97208,
        -104.0,
        -110.0,
        100.0,
        1.0 / 16.0,
        -1.0 / 16.0,
        0.0624999,
        9.0,
        9.1,
        10.0,
        20.0,
        1e5,
        -1e5,
        1e30,
        std::f32::consts::FRAC_PI_2,
        std::f32::consts::PI,
    ];
    for k in 0..40 {
        v.push(1.0 + k as f32 * 1e-7);
        v.push(-(k as f32) * 0.37);
    }
    v
}

/// Every `step`th bit pattern, and the specials.
fn sweep(step: u64) -> Vec<f32> {
    let mut v: Vec<f32> = (0..(1u64 << 32))
        .step_by(step as usize)
        .map(|b| f32::from_bits(b as u32))
        .collect();
    v.extend(specials());
    v
}

/// Checks `got` against the interpreter's values of `f(x + c)`; returns
/// how many differ from it (each by at most 1 ulp, specials exact).
fn check(f: Func, what: &str, xs: &[f32], c: Option<f32>, got: &[f32]) -> usize {
    let mut off = 0;
    for (x, g) in xs.iter().zip(got) {
        let a = c.map_or(*x, |c| *x + c);
        let w = want(f, a);
        if w.is_nan() {
            assert!(g.is_nan(), "{what} {f:?}({a:e}) = {g:e}, want NaN");
            continue;
        }
        if w.is_infinite() || w == 0.0 || g.is_infinite() || *g == 0.0 || g.is_nan() {
            assert_eq!(
                g.to_bits(),
                w.to_bits(),
                "{what} {f:?}({a:e}) = {g:e}, want {w:e}"
            );
            continue;
        }
        let d = ulps(*g, w);
        assert!(d <= 1, "{what} {f:?}({a:e}) = {g:e}, want {w:e} ({d} ulps)");
        off += usize::from(d != 0);
    }
    off
}

/// How many of `n` results may differ (by 1 ulp) from the library's
/// rounded value: double rounding, a few per ten thousand at most; `tanh`
/// at AVX-512, computed in `f32` lanes within 0.8 ulp of the exact value
/// (`vmath/single/avx512.rs`), at most half a percent (0.18% of the dense
/// ranges, measured); `exp`, whose kernels hand the lanes near a midpoint
/// to the library (`vmath/single/avx2.rs`, `avx512.rs`), none.
fn rare(f: Func, level: einsat::vmath::Level, n: usize) -> usize {
    match (f, level) {
        (Func::Tanh, einsat::vmath::Level::Avx512) => n / 200,
        (Func::Exp, _) => 0,
        _ => n / 2000,
    }
}

#[test]
fn every_level_within_one_ulp_of_the_rounded_library() {
    let xs = sweep(4093);
    assert!(xs.len() > 1_000_000);
    for level in levels() {
        for f in FUNCS {
            let mut ys = vec![0.0f32; xs.len()];
            apply_at_f32(f, level, &xs, &mut ys, None);
            let off = check(f, &format!("{level:?}"), &xs, None, &ys);
            eprintln!("{level:?} {f:?}: {off} of {} differ", xs.len());
            assert!(
                off <= rare(f, level, xs.len()),
                "{level:?} {f:?}: {off} of {} differ from the rounded library",
                xs.len()
            );
            // the scalar level is the library
            if level == einsat::vmath::Level::Scalar {
                assert_eq!(off, 0);
            }
        }
    }
}

#[test]
fn dense_ranges_where_the_kernels_work() {
    // every float in slices of the ranges that matter (softmax's
    // negative logits, tanh's small and large arguments, log near 1,
    // exp's far ends)
    let mut xs = Vec::new();
    for (lo, n) in [
        (-20.0f32, 300_000),
        (-0.07, 300_000),
        (0.9, 200_000),
        (8.9, 200_000),
        // exp's large reductions (|k| up to 4100 in the f32 lanes), the
        // edge of its normal results, its subnormal band and underflow to
        // +0 (negative starts count towards zero)
        (-86.0, 100_000),
        (80.0, 100_000),
        (-87.3, 100_000),
        (-90.0, 100_000),
        (-104.2, 100_000),
    ] {
        let b = lo.to_bits();
        for k in 0..n {
            let bits = if lo < 0.0 { b - k } else { b + k };
            xs.push(f32::from_bits(bits));
        }
    }
    for level in levels() {
        for f in FUNCS {
            let mut ys = vec![0.0f32; xs.len()];
            apply_at_f32(f, level, &xs, &mut ys, None);
            let off = check(f, &format!("{level:?}"), &xs, None, &ys);
            eprintln!("dense {level:?} {f:?}: {off} of {} differ", xs.len());
            assert!(
                off <= rare(f, level, xs.len()),
                "{level:?} {f:?}: {off} differ"
            );
        }
    }
}

#[test]
fn addends_round_before_the_function_at_every_length() {
    let xs: Vec<f32> = sweep(1_000_003)
        .into_iter()
        .chain((0..500).map(|k| 1e4 + k as f32 * 0.01))
        .collect();
    for c in [-1e4f32, -0.5, 3.0, f32::INFINITY] {
        for level in levels() {
            for f in FUNCS {
                let mut ys = vec![0.0f32; xs.len()];
                apply_at_f32(f, level, &xs, &mut ys, Some(c));
                check(f, &format!("{level:?} c={c}"), &xs, Some(c), &ys);
            }
        }
    }
    // every short length (the masked tails), best level
    for n in 0..40 {
        let xs: Vec<f32> = (0..n).map(|k| k as f32 * 0.3 - 5.0).collect();
        for f in FUNCS {
            let mut ys = vec![7.0f32; n];
            apply_to_add_f32(f, &xs, &mut ys, Some(0.25));
            check(f, "short", &xs, Some(0.25), &ys);
        }
    }
}

#[test]
fn entry_points_in_place_and_into_another_buffer() {
    let xs: Vec<f32> = (0..1000).map(|k| k as f32 * 0.01 - 3.0).collect();
    let mut ys = vec![0.0f32; 1000];
    // SAFETY: 1000 elements each.
    unsafe { einsat::vmath::einsat_vexp_add_f32(xs.as_ptr(), ys.as_mut_ptr(), 1000, -1.0) };
    check(Func::Exp, "entry", &xs, Some(-1.0), &ys);
    let mut zs = xs.clone();
    // SAFETY: in place.
    unsafe { einsat::vmath::einsat_vtanh_f32(zs.as_ptr(), zs.as_mut_ptr(), 1000) };
    check(Func::Tanh, "in place", &xs, None, &zs);
    // SAFETY: nothing for n <= 0.
    unsafe { einsat::vmath::einsat_vlog_f32(xs.as_ptr(), ys.as_mut_ptr(), -5) };
}

/// `Σ f(x + c)` of the interpreter's `f32` terms, in `f64`, and the sum
/// of their magnitudes.
fn reference_sum(f: Func, xs: &[f32], c: f32) -> (f64, f64) {
    let t: Vec<f64> = xs.iter().map(|x| f64::from(want(f, *x + c))).collect();
    (t.iter().sum(), t.iter().map(|v| v.abs()).sum())
}

/// A small deterministic generator.
fn data(n: usize, offset: f32, scale: f32, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            let u = (s.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 40) as f32 / (1u64 << 24) as f32;
            offset + scale * u
        })
        .collect()
}

/// A fused sum of `exp` or `tanh` (the kernels that add the terms in
/// registers at AVX2 and AVX-512), at every level this CPU has, is bit for bit, the plain sum of the map's
/// values: the same terms added in the same order. Lengths across the
/// chunk (256), block (4096) and middle-level (64 blocks) boundaries;
/// offset data, huge and tiny arguments, infinities and NaN.
#[test]
fn fused_sums_in_f32_are_the_sums_of_the_maps_bit_for_bit() {
    let cases: Vec<(usize, f32, f32)> = vec![
        (0, 0.0, 1.0),
        (1, -1.0, 2.0),
        (15, -3.0, 6.0),
        (16, -3.0, 6.0),
        (17, -90.0, 10.0),
        (255, -100.0, 20.0),
        (256, 80.0, 10.0),
        (257, -2.0, 4.0),
        (4095, -1e-30, 2e-30),
        (4096, -20.0, 40.0),
        (4097, -88.0, 1.0),
        (64 * 4096, -5.0, 10.0),
        (64 * 4096 + 300, -105.0, 30.0),
    ];
    for (k, (n, offset, scale)) in cases.into_iter().enumerate() {
        let mut xs = data(n, offset, scale, 40 + k as u64);
        if n > 200 {
            xs[3] = f32::NEG_INFINITY;
            xs[n - 2] = -1e30;
            xs[n / 2] = f32::MIN_POSITIVE / 4.0;
        }
        for f in [Func::Exp, Func::Tanh] {
            for c in [None, Some(0.5f32), Some(-1e8)] {
                for level in levels() {
                    let got = sum_of_at_f32(f, level, &xs, c);
                    let mut ys = vec![0.0f32; n];
                    apply_at_f32(f, level, &xs, &mut ys, c);
                    let want = sum_f32(&ys);
                    assert!(
                        got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                        "{f:?} at {level:?}, n={n} c={c:?}: {got} vs {want}"
                    );
                }
                let best = sum_of_f32(f, &xs, c);
                let one = sum_of_at_f32(f, *levels().last().expect("a level"), &xs, c);
                assert!(best.to_bits() == one.to_bits() || (best.is_nan() && one.is_nan()));
            }
        }
        if n > 200 {
            xs[5] = f32::INFINITY;
            assert_eq!(sum_of_f32(Func::Exp, &xs, None), f32::INFINITY);
            xs[7] = f32::NAN;
            assert!(sum_of_f32(Func::Exp, &xs, Some(1.0)).is_nan());
            assert!(sum_of_f32(Func::Tanh, &xs, None).is_nan());
        }
    }
}

#[test]
fn fused_sums_in_f32_are_accurate() {
    for n in [0usize, 1, 15, 16, 17, 255, 256, 257, 4095, 4097, 300_000] {
        // offset data (a softmax's logits minus their maximum), huge and
        // tiny results
        for (xs, c) in [
            (data(n, 1e4, 1.0, 1), -1e4f32 - 1.0),
            (data(n, -5.0, 10.0, 2), 0.0),
            (data(n, 80.0, 8.0, 3), 0.0),
            (data(n, -100.0, 10.0, 4), 0.0),
        ] {
            for f in FUNCS {
                let got = sum_of_f32(f, &xs, Some(c));
                let (w, mag) = reference_sum(f, &xs, c);
                if w.is_nan() {
                    assert!(got.is_nan(), "{f:?} n={n}: {got}");
                    continue;
                }
                if w.is_infinite() || w.abs() > f64::from(f32::MAX) {
                    assert_eq!(f64::from(got), w.signum() * f64::INFINITY, "{f:?} n={n}");
                    continue;
                }
                let err = (f64::from(got) - w).abs();
                // f32 blocked sums: well within n·u of the magnitudes
                assert!(
                    err <= 2e-6 * mag + 1e-44,
                    "{f:?} n={n} c={c}: {got} vs {w} (mag {mag})"
                );
            }
        }
    }
    // inf and NaN terms
    let mut xs = data(1000, -1.0, 2.0, 5);
    xs[500] = f32::INFINITY;
    assert_eq!(sum_of_f32(Func::Exp, &xs, None), f32::INFINITY);
    assert_eq!(sum_of_f32(Func::Tanh, &xs, Some(1.0)), {
        let (w, _) = reference_sum(Func::Tanh, &xs, 1.0);
        let g = sum_of_f32(Func::Tanh, &xs, Some(1.0));
        assert!((f64::from(g) - w).abs() < 1e-3, "{g} {w}");
        g
    });
    xs[500] = f32::NAN;
    for f in FUNCS {
        assert!(sum_of_f32(f, &xs, Some(0.5)).is_nan(), "{f:?}");
    }
    xs[500] = f32::NEG_INFINITY;
    assert!(sum_of_f32(Func::Sin, &xs, None).is_nan());
    assert_eq!(sum_of_f32(Func::Exp, &[], Some(1.0)), 0.0);
}

#[test]
fn max_and_min_in_f32_are_ieee_maximum_and_minimum() {
    for n in [0usize, 1, 7, 16, 33, 1000, 5000] {
        let mut xs = data(n, -3.0, 6.0, n as u64);
        let check = |xs: &[f32]| {
            for op in [RedOp::Max, RedOp::Min] {
                let got = reduce_of_f32(op, xs);
                let w = xs
                    .iter()
                    .fold(op.identity(), |a, &x| op.apply(a, f64::from(x)));
                if w.is_nan() {
                    assert!(got.is_nan(), "{op:?} {n}");
                } else {
                    assert_eq!(f64::from(got).to_bits(), w.to_bits(), "{op:?} {n}");
                }
            }
        };
        check(&xs);
        if n > 2 {
            xs[1] = f32::INFINITY;
            xs[n - 1] = f32::NEG_INFINITY;
            check(&xs);
            xs.iter_mut().for_each(|x| *x = 0.0);
            xs[n / 2] = -0.0;
            check(&xs);
            xs[0] = -f32::NAN;
            check(&xs);
            xs[0] = f32::from_bits(1);
            xs[n - 1] = f32::NAN;
            check(&xs);
        }
    }
}

#[test]
fn moments_and_affine_maps_in_f32() {
    for n in [0usize, 1, 16, 255, 256, 4097, 100_000] {
        let xs = data(n, 1e4, 1.0, 7);
        let c = -1e4f32 - 0.5;
        let w: f64 = xs.iter().map(|&x| f64::from(x)).sum();
        let mag: f64 = xs.iter().map(|&x| f64::from(x).abs()).sum();
        let got = f64::from(sum_f32(&xs));
        assert!((got - w).abs() <= 2e-6 * mag, "sum {n}: {got} {w}");
        let terms: Vec<f64> = xs
            .iter()
            .map(|&x| {
                let d = x + c;
                f64::from(d * d)
            })
            .collect();
        let w: f64 = terms.iter().sum();
        let got = f64::from(sum_sq_add_f32(&xs, c));
        assert!((got - w).abs() <= 2e-6 * w + 1e-30, "sumsq {n}: {got} {w}");
        for kind in Affine::ALL {
            let d = 0.37f32;
            let mut ys = vec![0.0f32; n];
            affine_to_f32(kind, &xs, &mut ys, c, d);
            for (x, y) in xs.iter().zip(&ys) {
                let w = match kind {
                    Affine::AddDiv => (x + c) / d,
                    Affine::AddMul => (x + c) * d,
                    Affine::Mul => x * d,
                    Affine::Add => x + c,
                    Affine::Div => x / d,
                };
                assert_eq!(y.to_bits(), w.to_bits(), "{kind:?}");
            }
        }
    }
    let big = [f32::MAX, f32::MAX, 1.0];
    assert_eq!(sum_f32(&big), f32::INFINITY);
    assert!(sum_f32(&[1.0, f32::NAN]).is_nan());
    assert_eq!(sum_sq_add_f32(&[1e30, 1.0], 0.0), f32::INFINITY);
}
