//! The division of a run by one divisor (`src/vmath/quotient.rs`: a
//! reciprocal and two corrections by the remainder instead of the
//! divider, for `f64`) against the IEEE division, **bit for bit**, at
//! every dispatch level of this CPU (and the `f32` maps, which keep the
//! divider, likewise): divisors of every kind
//! (mantissas of all ones, `1 + ulp`, powers of two, the ends of the
//! kernels' range and beyond it, zeros, subnormals, inf, NaN, random
//! ones over a wide range of exponents) times dividends of every kind
//! (random mantissas over the whole exponent range, subnormals, ±0,
//! ±inf, NaN, the ends of the range, and quotients placed next to a
//! midpoint between two floats, where a wrong rounding would show), for
//! `x / d` and `(x + c) / d`, through the slice functions, the JIT's
//! entry points (in place too) and every tail length.

use einsat::vmath::{
    affine_to_at, affine_to_at_f32, div_to_at, einsat_vaffine_f32, einsat_vdiv, levels, Affine,
};

use crate::common::Rng;

/// A double of random sign and mantissa with a binary exponent in
/// `lo..=hi`.
fn f64_exp(g: &mut Rng, lo: i32, hi: i32) -> f64 {
    let r = g.next();
    let e = lo + (r % (hi - lo + 1) as u64) as i32;
    let m = 1.0 + (g.next() >> 12) as f64 / (1u64 << 52) as f64;
    let s = if r & (1 << 40) != 0 { -1.0 } else { 1.0 };
    s * m * 2f64.powi(e)
}

fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn same32(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

fn divisors() -> Vec<f64> {
    let mut v = vec![
        1.0,
        -1.0,
        3.0,
        7.0,
        10.0,
        1.0 / 3.0,
        std::f64::consts::PI,
        1.9999999999999998, // mantissa of all ones
        1.0000000000000002, // 1 + ulp
        0.9999999999999999,
        512.0,
        2f64.powi(-100),
        2f64.powi(100),
        2f64.powi(-100) * 0.9999999999999999, // just outside the range
        2f64.powi(100) * 1.0000000000000002,
        2f64.powi(99) * 1.9999999999999998,
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        5e-324,
        f64::MAX,
        f64::MIN_POSITIVE,
    ];
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    v.extend((0..120).map(|_| f64_exp(&mut r, -110, 110)));
    v.extend((0..40).map(|_| f64_exp(&mut r, -2, 2)));
    v
}

fn dividends(d: f64, r: &mut Rng) -> Vec<f64> {
    let mut v = vec![
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        5e-324,
        -5e-324,
        f64::MIN_POSITIVE,
        f64::MAX,
        -f64::MAX,
        2f64.powi(-800),
        2f64.powi(-800) * 0.9999999999999999,
        2f64.powi(900),
        2f64.powi(900) * 1.0000000000000002,
        1.0,
        d,
        -d,
    ];
    // every exponent, subnormals and the largest included
    v.extend((0..1500).map(|_| f64_exp(r, -1074, 1023)));
    // where the row divisions live
    v.extend((0..1500).map(|_| f64_exp(r, -60, 60)));
    // quotients next to a midpoint: x = RN(d·m), m halfway between floats
    for _ in 0..1500 {
        let f = f64_exp(r, -40, 40);
        let m = f + f.abs() * f64::EPSILON / 2.0 * 1.0000000000000002;
        let x = d * m;
        v.push(x);
        v.push(f64::from_bits(x.to_bits() + 1));
        v.push(f64::from_bits(x.to_bits().wrapping_sub(1)));
    }
    v
}

#[test]
fn f64_quotients_are_the_ieee_division_bit_for_bit() {
    let mut r = Rng(7);
    let mut checked = 0usize;
    for l in levels() {
        for d in divisors() {
            let xs = dividends(d, &mut r);
            let c = f64_exp(&mut r, -3, 3);
            let mut ys = vec![0.0; xs.len()];
            div_to_at(l, &xs, &mut ys, d);
            for (x, y) in xs.iter().zip(&ys) {
                assert!(
                    same(*y, x / d),
                    "{l:?}: {x:e} / {d:e} = {y:e}, not {:e}",
                    x / d
                );
            }
            affine_to_at(Affine::Div, l, &xs, &mut ys, 0.0, d);
            for (x, y) in xs.iter().zip(&ys) {
                assert!(
                    same(*y, x / d),
                    "{l:?} (affine): {x:e} / {d:e} = {y:e}, not {:e}",
                    x / d
                );
            }
            affine_to_at(Affine::AddDiv, l, &xs, &mut ys, c, d);
            for (x, y) in xs.iter().zip(&ys) {
                let want = (x + c) / d;
                assert!(
                    same(*y, want),
                    "{l:?}: ({x:e} + {c:e}) / {d:e} = {y:e}, not {want:e}"
                );
            }
            checked += 3 * xs.len();
        }
    }
    assert!(checked > 1_000_000, "{checked} quotients");
}

#[test]
fn f32_quotients_are_the_ieee_division_bit_for_bit() {
    let mut r = Rng(11);
    let mut ds: Vec<f32> = divisors().iter().map(|&d| d as f32).collect();
    ds.extend([
        1.9999999f32,
        1.0000001,
        2f32.powi(-20),
        2f32.powi(20),
        2f32.powi(-20) * 0.99999994,
        2f32.powi(20) * 1.0000001,
        1e-45,
        f32::MAX,
    ]);
    ds.extend((0..100).map(|_| f64_exp(&mut r, -24, 24) as f32));
    let mut checked = 0usize;
    for l in levels() {
        for &d in &ds {
            let mut xs: Vec<f32> = vec![
                0.0,
                -0.0,
                f32::INFINITY,
                f32::NEG_INFINITY,
                f32::NAN,
                1e-45,
                f32::MIN_POSITIVE,
                f32::MAX,
                2f32.powi(-75),
                2f32.powi(-75) * 0.99999994,
                2f32.powi(100),
                2f32.powi(100) * 1.0000001,
                d,
            ];
            // random bit patterns (every exponent), then usual magnitudes
            xs.extend((0..3000).map(|_| f32::from_bits(r.next() as u32)));
            xs.extend((0..3000).map(|_| f64_exp(&mut r, -30, 30) as f32));
            for _ in 0..600 {
                let f = f64_exp(&mut r, -20, 20) as f32;
                let h = f.abs() * f32::EPSILON / 2.0;
                let h = f32::from_bits(h.to_bits() & 0xff80_0000);
                let x = d.mul_add(f, d * h);
                xs.extend((-2i32..=2).map(|k| f32::from_bits(x.to_bits().wrapping_add(k as u32))));
            }
            let c = f64_exp(&mut r, -3, 3) as f32;
            let mut ys = vec![0.0f32; xs.len()];
            affine_to_at_f32(Affine::Div, l, &xs, &mut ys, 0.0, d);
            for (x, y) in xs.iter().zip(&ys) {
                assert!(
                    same32(*y, x / d),
                    "{l:?}: {x:e} / {d:e} = {y:e}, not {:e}",
                    x / d
                );
            }
            affine_to_at_f32(Affine::AddDiv, l, &xs, &mut ys, c, d);
            for (x, y) in xs.iter().zip(&ys) {
                let want = (x + c) / d;
                assert!(
                    same32(*y, want),
                    "{l:?}: ({x:e} + {c:e}) / {d:e} = {y:e}, not {want:e}"
                );
            }
            checked += 2 * xs.len();
        }
    }
    assert!(checked > 1_000_000, "{checked} quotients");
}

#[test]
fn the_entry_points_divide_in_place_and_every_tail() {
    let mut r = Rng(3);
    for n in 0..40usize {
        let xs: Vec<f64> = (0..n).map(|_| f64_exp(&mut r, -30, 30)).collect();
        let d = f64_exp(&mut r, -5, 5);
        let want: Vec<f64> = xs.iter().map(|x| x / d).collect();
        let mut out = vec![f64::NAN; n + 1];
        // SAFETY: `n` elements at each, disjoint.
        unsafe { einsat_vdiv(xs.as_ptr(), out.as_mut_ptr(), n as i64, d) };
        assert!(
            out[..n].iter().zip(&want).all(|(a, b)| same(*a, *b)),
            "n = {n}"
        );
        assert!(out[n].is_nan(), "n = {n}: wrote past the end");
        let mut io = xs.clone();
        // SAFETY: in place, `n` elements.
        unsafe { einsat_vdiv(io.as_ptr(), io.as_mut_ptr(), n as i64, d) };
        assert!(
            io.iter().zip(&want).all(|(a, b)| same(*a, *b)),
            "in place, n = {n}"
        );

        let xs32: Vec<f32> = xs.iter().map(|&x| x as f32).collect();
        let d32 = d as f32;
        let want32: Vec<f32> = xs32.iter().map(|x| x / d32).collect();
        let mut out32 = vec![f32::NAN; n + 1];
        // SAFETY: `n` elements at each, disjoint.
        unsafe {
            einsat_vaffine_f32(
                xs32.as_ptr(),
                out32.as_mut_ptr(),
                n as i64,
                0.0,
                d32,
                Affine::Div.code(),
            )
        };
        assert!(
            out32[..n].iter().zip(&want32).all(|(a, b)| same32(*a, *b)),
            "f32, n = {n}"
        );
        assert!(out32[n].is_nan(), "f32, n = {n}: wrote past the end");
    }
}
