//! The vector math kernels (`einsat::vmath`) against the C library's
//! functions (what the interpreter calls): millions of points per
//! function across the whole range (log-spaced magnitudes of both signs,
//! subnormals, the thresholds of each kernel's core domain and of
//! overflow/underflow, near multiples of π/2, huge arguments), at every
//! dispatch level this CPU has. Every lane is within 1 ulp of the
//! library's result, and special results (NaN, ±inf, ±0) are the
//! library's exactly.

use einsat::syntax::ast::Func;
use einsat::vmath::{apply_at, apply_to_add_at, levels, sum_of_at, Level};

use crate::common::Rng;

/// Distance in ulps between two finite doubles of the same sign class.
fn ulps(a: f64, b: f64) -> u64 {
    fn ord(x: f64) -> i128 {
        let b = x.to_bits() as i64;
        if b < 0 {
            -((b & i64::MAX) as i128)
        } else {
            b as i128
        }
    }
    (ord(a) - ord(b)).unsigned_abs() as u64
}

fn lib(f: Func, x: f64) -> f64 {
    f.apply(&[x])
}

/// The reference: the C library's result, except for `tanh` at the
/// vector levels on `1e-300 < |x| < 20`, where glibc's `tanh` is itself
/// up to 2 ulps off (`tanh(-0.45898522914607714)` is
/// `-0.4292567843419783…065`, glibc gives `…784`): there, [`tanh_dd`].
/// (The scalar level *is* the library.)
fn reference(f: Func, level: Level, x: f64) -> f64 {
    if f != Func::Tanh || level == Level::Scalar || !(1e-300..20.0).contains(&x.abs()) {
        return lib(f, x);
    }
    tanh_dd(x)
}

/// `tanh x` evaluated in double-double (about 2^-100 relative) and rounded
/// to a double: the Taylor series below `1e-4`; `e^{2x} - 1` by the
/// series of `expm1` while `|2x| ≤ 1` (no cancellation), `e^{2x}` beyond,
/// and the quotient by the three-digit double-double division
/// (`twofloat`'s `/` keeps only a double's quotient: the reference built
/// on it was 1.45 ulps off at `x = -0.031090955641009478`). Checked
/// against mpmath in [`tanh_reference_is_mpmath_rounded`].
fn tanh_dd(x: f64) -> f64 {
    tanh_dd_value(x).hi()
}

/// [`tanh_dd`] before its rounding to a double.
fn tanh_dd_value(x: f64) -> twofloat::TwoFloat {
    use einsat::interp::domain::{dd_div, dd_exp, dd_expm1};
    use twofloat::TwoFloat;
    let t = TwoFloat::from(x);
    if x.abs() < 1e-4 {
        // x - x^3/3 + 2x^5/15 - 17x^7/315
        let x2 = t * t;
        let third = dd_div(TwoFloat::from(1.0), TwoFloat::from(3.0));
        let p = x2 * (-17.0 / 315.0) + 2.0 / 15.0;
        let p = x2 * p - third;
        t + t * x2 * p
    } else if x.abs() <= 0.5 {
        let m = dd_expm1(t * 2.0);
        dd_div(m, m + 2.0)
    } else {
        let e = dd_exp(t * 2.0);
        dd_div(e - 1.0, e + 1.0)
    }
}

/// [`tanh_dd`] against `tanh` correctly rounded by mpmath at 300 bits
/// (`(x, tanh x)` as bit patterns: the points where the old reference
/// was wrong, the kernel's interval ends, the series' and branches'
/// ends, and 90 points spread log-uniformly over `±[5e-5, 20]`; none
/// within 2^-40 ulp of a rounding midpoint).
#[test]
fn tanh_reference_is_mpmath_rounded() {
    for &(x, y) in MPMATH_TANH {
        let (x, want) = (f64::from_bits(x), f64::from_bits(y));
        let got = tanh_dd(x);
        assert_eq!(
            got.to_bits(),
            want.to_bits(),
            "tanh({x:e}): reference {got:e}, mpmath {want:e}"
        );
    }
}

const MPMATH_TANH: &[(u64, u64)] = &[
    (0xbf9fd64eb6b7d4ba, 0xbf9fd3aead563c95),
    (0xbfdd60039521e2cb, 0xbfdb78f172956f5b),
    (0x3fdfbcdf18ffab46, 0x3fdd5e6f407aaab7),
    (0x3fdfbcded8c0be83, 0x3fdd5e6f0dc31e31),
    (0x4013000000000000, 0x3feffec61279a3a4),
    (0x40130985f06f6944, 0x3feffecbdb596a09),
    (0x3f1a36e2eb1c432d, 0x3f1a36e2e9a4f662),
    (0x3f1a36e2eb1c432e, 0x3f1a36e2e9a4f663),
    (0x3f1a36e2eb1c432c, 0x3f1a36e2e9a4f661),
    (0x3fe0000000000000, 0x3fdd9353d7568af3),
    (0x3fd0000000000000, 0x3fcf597ea69a1c86),
    (0x3ff0000000000000, 0x3fe85efab514f394),
    (0x4000000000000000, 0x3feed9505e1bc3d4),
    (0x4033000000000000, 0x3fefffffffffffff),
    (0x4033e66666666666, 0x3ff0000000000000),
    (0xbfe88bc7e9a950ef, 0xbfe4a5a12905fe2d),
    (0x3fcfa5c051f7bcdb, 0x3fcf049a3e7cc8c4),
    (0xbfbdae5c076d3f1a, 0xbfbd8c7e9e5b8c3a),
    (0x3f3115437e89e99c, 0x3f311543780c1faf),
    (0xbf16811199378488, 0xbf168111984a14b6),
    (0xbfc7360723ddd401, 0xbfc6f5be371db920),
    (0x4030d21493f6da9b, 0x3fefffffffffffd4),
    (0xbfe0a81b5887ff54, 0xbfde9938bdcef8fb),
    (0xbff44bf2a3b18de4, 0xbfeb4f11ae0a35ae),
    (0xbfd15b68b38b3b83, 0xbfd0f194d23c718b),
    (0xbf3516509309f207, 0xbf35165086d4585b),
    (0x3fbc71e377c09de4, 0x3fbc54117a396e94),
    (0xbf7681d5f3dc3374, 0xbf7681c71b664e44),
    (0x3f137079a2fdd2c0, 0x3f137079a264c890),
    (0xc0058a4d35463039, 0xbfefb53ab275b65e),
    (0xbfa24cf18bf2ab40, 0xbfa24af30da891e1),
    (0x3f947185c23feb52, 0x3f9470d3c9648a69),
    (0x3ffdbebf299a32b7, 0x3fee7ba3c66d95c6),
    (0xbf8af3c38c9a990a, 0xbf8af35d958afa31),
    (0x3f1b1e8e86138b98, 0x3f1b1e8e84740530),
    (0x3f44edec37acc23c, 0x3f44edec07ece7f4),
    (0xc00cb1b31903ca3b, 0xbfeff373134d6393),
    (0xbf1c15c178c89cd2, 0xbf1c15c176fb1a38),
    (0xbf30a37e04d94233, 0xbf30a37dfed9d206),
    (0xbf181683e76061f3, 0xbf181683e63d346d),
    (0xbf78386b7aaa96ad, 0xbf783858fa9e6127),
    (0x400866d47af3c97f, 0x3fefdb59b6ffd8e6),
    (0xbf292c775a9d41ea, 0xbf292c77556bd85a),
    (0x4022f15f063c0251, 0x3feffffff9a1587d),
    (0xbfb72ac983ddd93a, 0xbfb71aa65245970e),
    (0xbf734873fd30acce, 0xbf73486aa72da93f),
    (0xbff6358477f960d6, 0xbfec3f71a32d675d),
    (0x3fd446cde1d76af6, 0x3fd39fd3f726123a),
    (0x3f723a43b5bcb2ec, 0x3f723a3bd31365ce),
    (0x3f7229a7b2c3e917, 0x3f72299fe595518e),
    (0xbfbe922ab8a29979, 0xbfbe6d2d066a75cd),
    (0xc029e7dd0dbaa41a, 0xbfeffffffffe74ef),
    (0xbfb35a8d3cee3c16, 0xbfb35122550e6fba),
    (0x402bf71857b4cc8f, 0x3fefffffffffcd9f),
    (0xbf142d1d08344b91, 0xbf142d1d07892f19),
    (0xbffd97b9676553be, 0xbfee745972e096bb),
    (0x3fd8ecda51ab7e20, 0x3fd7bcaf84130e5d),
    (0x3f189dfa6a0e0f55, 0x3f189dfa68d744a2),
    (0x3f3b2d5c4a9142c6, 0x3f3b2d5c306e3d98),
    (0xbf3cfdd1d4f258f1, 0xbf3cfdd1b537d792),
    (0xbf1f107eca287f5e, 0xbf1f107ec7b7f93a),
    (0x4010fafb8d0515a0, 0x3feffca25d5d3e68),
    (0x3fad273bc708acb7, 0x3fad1f2da47722ba),
    (0x3f9caf1c5d054a2a, 0x3f9cad30d76dc834),
    (0x3fcb7bbf8aad912e, 0x3fcb1195a8a58c13),
    (0xbf1316c343c250b2, 0xbf1316c34331675f),
    (0x4029ad6815b99b5e, 0x3feffffffffe0f97),
    (0xbf51a46bc8503685, 0xbf51a46b55ea16dc),
    (0x3f357030dcc2a386, 0x3f357030cfee4fb2),
    (0x3f8243d428fee615, 0x3f8243b46ccab360),
    (0xbfdaa07fc1888b61, 0xbfd930a5f244219a),
    (0xbfe43e77d4527028, 0xbfe1ea5a1f04fde5),
    (0x3f11d56cfa02bd13, 0x3f11d56cf98c9343),
    (0xbf52b066caf9bfcf, 0xbf52b06642fb24fe),
    (0x3f45c59c4eeeaaff, 0x3f45c59c192e584c),
    (0xbf8c270b3c61b623, 0xbf8c2697086634c1),
    (0xbfce5d3c1c5678a5, 0xbfcdcea2839261df),
    (0xbf0ca99104697f17, 0xbf0ca99103eedb0b),
    (0xbf28fd2c238d20d1, 0xbf28fd2c1e78c51a),
    (0xbf493bf773c5edd7, 0xbf493bf720157c36),
    (0xbf34b1950ecee5e3, 0xbf34b19503450628),
    (0xbf15645b240e9807, 0xbf15645b2342a602),
    (0xbff6960fc12c13d6, 0xbfec6931aa7801f1),
    (0x3f1a127962a320fb, 0x3f1a12796131e79d),
    (0x3faa1697aa3231f0, 0x3faa10d1916444c2),
    (0xbfe7950cee873e51, 0xbfe412ce4ceadad4),
    (0xbf70f3790c319959, 0xbf70f372b4a3b798),
    (0xbf1c38f4e14641d1, 0xbf1c38f4df71ef61),
    (0x3f64b7b90bed5ceb, 0x3f64b7b626e3c0c0),
    (0x3f445d26c612d22a, 0x3f445d269a174d8a),
    (0x3fff238d680758ef, 0x3feeb87e3d6d4e0d),
    (0x3f6adf11f5c45d3f, 0x3f6adf0ba4db1031),
    (0x3fed853d147873d5, 0x3fe744474acf7bb2),
    (0x4016c79b544e665b, 0x3fefffd09086b918),
    (0x402b48a5aa57955b, 0x3fefffffffff9c6b),
    (0x3ff50522ccd472de, 0x3febafe66ae26a4c),
    (0xbf82e81dbb771244, 0xbf82e7fa887f98f1),
    (0x3ff2e46c81c5eb73, 0x3fea7c770a785c9a),
    (0x3f421532c3595d9e, 0x3f421532a48d8e4c),
    (0xbf506f4648cd32f0, 0xbf506f45ec52ad58),
    (0x3fb3848e5a22dfb3, 0x3fb37ae5b3daf77c),
    (0xbfd8b12027cb1477, 0xbfd7891ae11d9a5a),
    (0x3fc04bbd0a6ee941, 0x3fc03558480c5dbd),
    (0x3feddee70f110f5b, 0x3fe76e34c0312177),
    (0xbf62d1174314969c, 0xbf62d11517e0680d),
];

fn specials() -> Vec<f64> {
    let mut v = vec![
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        -f64::NAN,
        f64::MIN_POSITIVE,
        -f64::MIN_POSITIVE,
        f64::MAX,
        f64::MIN,
        f64::EPSILON,
        1.0,
        -1.0,
        5e-324,
        -5e-324,
        2.2e-308,
        1e300,
        -1e300,
        1e22,
        std::f64::consts::PI,
        std::f64::consts::FRAC_PI_2,
        std::f64::consts::FRAC_PI_4,
    ];
    // thresholds of the kernels' core domains and of overflow/underflow
    for t in [
        708.0,
        709.782712893384,
        -708.3964185322641,
        -745.1332191019411,
        -744.44,
        1e5,
        0.625,
        19.06154746539849,
        20.0,
        3.725290298461914e-9,
        9.332636185032189e-302,
        0.3465735902799726,
        std::f64::consts::LN_2,
    ] {
        for s in [1.0, -1.0] {
            let x: f64 = s * t;
            let mut y = x;
            let mut z = x;
            for _ in 0..8 {
                v.push(y);
                v.push(z);
                y = f64::from_bits(y.to_bits() + 1);
                z = f64::from_bits(z.to_bits() - 1);
            }
        }
    }
    v
}

/// Points for `f`: specials, then `n` drawn from its interesting ranges.
fn points(f: Func, n: usize, seed: u64) -> Vec<f64> {
    let mut r = Rng(seed);
    let mut v = specials();
    while v.len() < n {
        let x = match (f, r.next() % 4) {
            (_, 0) => r.logspaced(-320.0, 308.0),
            (Func::Exp, _) => (r.unit() - 0.5) * 1500.0,
            (Func::Tanh, 1) => (r.unit() - 0.5) * 50.0,
            (Func::Tanh, _) => r.logspaced(-10.0, 2.0),
            (Func::Erf, 1 | 2) => (r.unit() - 0.5) * 14.0,
            (Func::Log, 1) => 1.0 + (r.unit() - 0.5) * 0.7,
            (Func::Log, 2) => 1.0 + r.logspaced(-16.0, -1.0),
            (Func::Log, _) => f64::from_bits(r.next() >> 1), // every positive double
            (Func::Sin | Func::Cos, 1) => (r.unit() - 0.5) * 2e5,
            (Func::Sin | Func::Cos, 2) => {
                // near multiples of π/2
                let k = (r.next() % 127_324) as f64 - 63_662.0;
                let x = k * std::f64::consts::FRAC_PI_2;
                let d = (r.next() % 9) as i64 - 4;
                f64::from_bits((x.to_bits() as i64 + d) as u64)
            }
            (Func::Sin | Func::Cos, _) => r.logspaced(-10.0, 6.0),
            _ => r.logspaced(-20.0, 20.0),
        };
        v.push(x);
    }
    v
}

fn check(f: Func, level: Level, n: usize) {
    let xs = points(f, n, 0x9e37_79b9_7f4a_7c15 ^ (f as u64));
    let mut ys = xs.clone();
    apply_at(f, level, &mut ys);
    let mut worst = (0u64, 0.0);
    for (&x, &y) in xs.iter().zip(&ys) {
        let want = reference(f, level, x);
        if want.is_nan() {
            assert!(y.is_nan(), "{f:?}({x:e}) at {level:?}: {y:e}, want NaN");
            continue;
        }
        if want == 0.0 || want.is_infinite() || y == 0.0 || y.is_infinite() || y.is_nan() {
            assert_eq!(
                y.to_bits(),
                want.to_bits(),
                "{f:?}({x:e}) at {level:?}: {y:e}, want {want:e}"
            );
            continue;
        }
        let d = ulps(y, want);
        if d > worst.0 {
            worst = (d, x);
        }
        assert!(
            d <= 1,
            "{f:?}({x:e}) = {y:e} at {level:?}: {d} ulps from {want:e}"
        );
    }
    eprintln!(
        "{f:?} at {level:?}: {} points, worst {} ulp at {:e}",
        xs.len(),
        worst.0,
        worst.1
    );
}

const FUNCS: [Func; 6] = [
    Func::Exp,
    Func::Log,
    Func::Sin,
    Func::Cos,
    Func::Tanh,
    Func::Erf,
];

#[test]
fn every_level_within_one_ulp() {
    for level in levels() {
        for f in FUNCS {
            check(f, level, 2_000_000);
        }
    }
}

/// The out-of-place and shifted forms (`ys[i] = f(xs[i] + c)`, what the
/// JIT's calls with a constant added use) and the fused sums, at every
/// level, for every function with a kernel: the map is, bit for bit,
/// the in-place kernel applied to the rounded `x + c` (every length to
/// 40, so every tail, and a long run), and the sum is within `1e-13` of
/// those values' exact total, relative to `Σ|f|`.
#[test]
fn shifted_maps_and_sums_at_every_level() {
    let mut r = Rng(0x5eed);
    for level in levels() {
        for f in FUNCS {
            for n in (0..=40).chain([1000, 5000]) {
                // (log's arguments positive, also after the shift)
                let lo = if f == Func::Log { 3.0 } else { -6.0 };
                let xs: Vec<f64> = (0..n).map(|_| lo + r.unit() * 12.0).collect();
                for c in [None, Some(0.375), Some(-2.5)] {
                    let mut want: Vec<f64> = xs.iter().map(|x| c.map_or(*x, |c| x + c)).collect();
                    apply_at(f, level, &mut want);
                    let mut ys = vec![0.0; n];
                    apply_to_add_at(f, level, &xs, &mut ys, c);
                    for ((x, y), w) in xs.iter().zip(&ys).zip(&want) {
                        assert!(
                            y.to_bits() == w.to_bits() || (y.is_nan() && w.is_nan()),
                            "{f:?}({x:e} + {c:?}) at {level:?}, n = {n}: {y:e}, in place {w:e}"
                        );
                    }
                    let got = sum_of_at(f, level, &xs, c);
                    let mut exact = twofloat::TwoFloat::from(0.0);
                    let mut mag = 0.0;
                    for w in &want {
                        exact += *w;
                        mag += w.abs();
                    }
                    assert!(
                        (got - exact.hi()).abs() <= 1e-13 * mag,
                        "Σ {f:?}(x + {c:?}) at {level:?}, n = {n}: {got:e}, want {:e}",
                        exact.hi()
                    );
                }
            }
        }
    }
}

/// The fused sum of `exp` (added in registers at AVX2 and AVX-512) is,
/// at every vector level this CPU has, bit for bit the plain sum (`vmath::sum`, the blocked
/// pairwise order every level shares) of the map's values: lengths
/// across the chunk (256), block (4096) and middle-level (64 blocks)
/// boundaries, offset data, huge and tiny arguments, inf and NaN.
#[test]
fn fused_exp_sums_are_the_sums_of_the_maps_bit_for_bit() {
    let mut r = Rng(0xf00d);
    for (n, lo, width) in [
        (0usize, 0.0, 1.0),
        (1, -1.0, 2.0),
        (7, -3.0, 6.0),
        (255, -700.0, 20.0),
        (256, 690.0, 30.0),
        (257, -2.0, 4.0),
        (4095, -1e-300, 2e-300),
        (4096, -40.0, 80.0),
        (4097, -745.0, 10.0),
        (64 * 4096 + 100, -5.0, 10.0),
    ] {
        let mut xs: Vec<f64> = (0..n).map(|_| lo + r.unit() * width).collect();
        if n > 200 {
            xs[3] = f64::NEG_INFINITY;
            xs[n - 2] = -1e300;
            xs[n / 2] = f64::MIN_POSITIVE / 8.0;
        }
        for c in [None, Some(0.5), Some(-1e8)] {
            // (the scalar fallback adds in an order of its own)
            for level in levels().into_iter().filter(|l| *l != Level::Scalar) {
                let got = sum_of_at(Func::Exp, level, &xs, c);
                let mut ys = vec![0.0; n];
                apply_to_add_at(Func::Exp, level, &xs, &mut ys, c);
                let want = einsat::vmath::sum(&ys);
                assert!(
                    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                    "Σ exp(x + {c:?}) at {level:?}, n = {n}: {got:e}, the map's sum {want:e}"
                );
            }
        }
        if n > 200 {
            xs[5] = f64::INFINITY;
            for level in levels() {
                assert_eq!(sum_of_at(Func::Exp, level, &xs, None), f64::INFINITY);
            }
            xs[9] = f64::NAN;
            for level in levels() {
                assert!(sum_of_at(Func::Exp, level, &xs, Some(1.0)).is_nan());
            }
        }
    }
}

/// The long sums and reductions split over two threads
/// (`vmath::with_threads`, what the JIT's kernel runner sets around a
/// nest on one thread) give the one-thread result bit for bit, `f64` and
/// `f32`, at lengths on and around the groups' boundaries (64 blocks of
/// 4096), with a NaN, an inf, or all terms -0 in some runs.
#[test]
fn long_sums_and_reductions_split_over_threads_keep_their_bits() {
    use einsat::syntax::ast::RedOp;
    use einsat::vmath::{reduce_of, reduce_of_f32, sum_of, sum_of_f32, with_threads};
    let g = 64 * 4096;
    let mut r = Rng(0x7e4d);
    let base: Vec<f64> = (0..5 * g + 77).map(|_| (r.unit() - 0.5) * 8.0).collect();
    for n in [
        g - 1,
        g,
        2 * g - 1,
        2 * g,
        2 * g + 1,
        3 * g + 4095,
        5 * g + 77,
    ] {
        for special in [None, Some(f64::NAN), Some(f64::INFINITY), Some(-0.0)] {
            let mut xs = base[..n].to_vec();
            match special {
                Some(0.0) => xs.iter_mut().for_each(|x| *x = -0.0),
                Some(v) => xs[n * 3 / 4] = v,
                None => {}
            }
            let x32: Vec<f32> = xs.iter().map(|&x| x as f32).collect();
            for f in [Func::Exp, Func::Tanh, Func::Sin] {
                let one = sum_of(f, &xs, Some(-0.25));
                let two = with_threads(2, || sum_of(f, &xs, Some(-0.25)));
                assert_eq!(
                    one.to_bits(),
                    two.to_bits(),
                    "Σ {f:?}, n = {n}, {special:?}"
                );
                let one = sum_of_f32(f, &x32, Some(-0.25));
                let two = with_threads(2, || sum_of_f32(f, &x32, Some(-0.25)));
                assert_eq!(
                    one.to_bits(),
                    two.to_bits(),
                    "f32 Σ {f:?}, n = {n}, {special:?}"
                );
            }
            for op in [RedOp::Max, RedOp::Min] {
                let one = reduce_of(op, &xs);
                let two = with_threads(2, || reduce_of(op, &xs));
                assert_eq!(one.to_bits(), two.to_bits(), "{op:?}, n = {n}, {special:?}");
                let one = reduce_of_f32(op, &x32);
                let two = with_threads(2, || reduce_of_f32(op, &x32));
                assert_eq!(
                    one.to_bits(),
                    two.to_bits(),
                    "f32 {op:?}, n = {n}, {special:?}"
                );
            }
        }
    }
}

/// The ends of the AVX-512 `tanh` kernel's table intervals
/// (`src/vmath/tanh.rs`: interval 0's odd form ends at the first; the
/// exp lane takes over at 4.75, the last interval's fit reaching
/// 4.7593), and where the result rounds to 1 and the kernel clamps.
const TANH_ENDS: [f64; 19] = [
    0.49590274016643593,
    0.4959028,
    0.7035361956013022,
    0.9171483783307524,
    1.137287570313157,
    1.3645913585050198,
    1.599808431930906,
    1.843827736799443,
    2.097718274379403,
    2.3627847141919447,
    2.6406472578799236,
    2.933360085676203,
    3.243593952558341,
    3.574931319199675,
    3.9323725421878937,
    4.323273418563613,
    4.75,
    4.759271995540935,
    19.06154746539849,
];

#[test]
fn tanh_every_interval_and_lane() {
    // a million and a half points of |x| < 6 (every table interval and
    // the exp lane above 4.75), each interval end ± 16 ulps, and some
    // large ones; sorted, so most chunks of 256 run one lane, then
    // shuffled, so most run both (the blend); both signs
    let mut r = Rng(0x7a4b);
    let mut xs: Vec<f64> = (0..1_500_000).map(|_| r.unit() * 6.0).collect();
    xs.extend((0..20_000).map(|_| 6.0 + r.unit() * 20.0));
    for t in TANH_ENDS.into_iter().chain([20.0, 0.0]) {
        for d in 0..=16u64 {
            xs.push(f64::from_bits(t.to_bits() + d));
            if t > 0.0 {
                xs.push(f64::from_bits(t.to_bits() - d));
            }
        }
    }
    xs.sort_by(f64::total_cmp);
    let neg: Vec<f64> = xs.iter().map(|x| -x).collect();
    xs.extend(neg);
    let want: Vec<f64> = xs
        .iter()
        .map(|&x| reference(Func::Tanh, Level::Avx2, x))
        .collect();
    // a fixed shuffle (a multiplicative step through the indices)
    let n = xs.len();
    let step = 1_000_003 % n;
    let order: Vec<usize> = (0..n).map(|i| (i * step) % n).collect();
    for level in levels().into_iter().filter(|l| *l != Level::Scalar) {
        for shuffled in [false, true] {
            let pick = |i: usize| if shuffled { order[i] } else { i };
            let mut ys: Vec<f64> = (0..n).map(|i| xs[pick(i)]).collect();
            apply_at(Func::Tanh, level, &mut ys);
            for (i, y) in ys.iter().enumerate() {
                let (x, w) = (xs[pick(i)], want[pick(i)]);
                assert!(
                    y.to_bits() == w.to_bits() || (w != 0.0 && ulps(*y, w) <= 1),
                    "tanh({x:e}) = {y:e} at {level:?} (shuffled: {shuffled}): want {w:e}"
                );
            }
        }
    }
}

/// The exp lane (`|x| ≥ 4.75`: `1 - w(1 - w/2 + w²/4 - w³/8)`, `w =
/// 2e^{-2|x|}`) is within 0.51 ulp of `tanh` as its module comment bounds
/// it (the table lane is within 0.8, the check above allows 1): the
/// distance to the unrounded double-double value, at a million points from
/// the lane's lower end to 20, at every vector level; and AVX2 gives
/// AVX-512's bits everywhere (the same operations) where this CPU has
/// both, on the points of both lanes and the specials.
#[test]
fn tanh_exp_lane_within_its_bound_and_avx2_is_avx512() {
    let vector: Vec<Level> = levels()
        .into_iter()
        .filter(|l| *l != Level::Scalar)
        .collect();
    if vector.is_empty() {
        eprintln!("no vector level on this CPU: nothing to check");
        return;
    }
    let mut r = Rng(0x51d);
    let lo = 4.75f64;
    let mut xs: Vec<f64> = (0..1_000_000)
        .map(|k| match k % 3 {
            0 => lo + r.unit() * 0.1,
            1 => lo + r.unit() * 3.0,
            _ => lo + r.unit() * 15.5,
        })
        .collect();
    xs.extend((1..=64u64).map(|d| f64::from_bits(lo.to_bits() + d)));
    for &level in &vector {
        let mut ys = xs.clone();
        apply_at(Func::Tanh, level, &mut ys);
        let mut worst = (0.0f64, 0.0);
        for (&x, &y) in xs.iter().zip(&ys) {
            let v = tanh_dd_value(x);
            // ulp of the correctly rounded result (below 1 here)
            let ulp = f64::from_bits(v.hi().to_bits() & (0x7ff << 52)) * f64::EPSILON;
            let d = (twofloat::TwoFloat::from(y) - v).hi().abs() / ulp;
            if d > worst.0 {
                worst = (d, x);
            }
        }
        eprintln!(
            "{level:?} tanh exp lane: worst {:.3} ulp at {:e}",
            worst.0, worst.1
        );
        assert!(
            worst.0 <= 0.51,
            "{level:?}: {:.3} ulp at {:e}",
            worst.0,
            worst.1
        );
    }
    if vector.contains(&Level::Avx512) && vector.contains(&Level::Avx2) {
        let mut zs: Vec<f64> = (0..400_000).map(|_| (r.unit() - 0.5) * 12.0).collect();
        zs.extend(&xs);
        zs.extend(specials());
        let (mut a2, mut a5) = (zs.clone(), zs.clone());
        apply_at(Func::Tanh, Level::Avx2, &mut a2);
        apply_at(Func::Tanh, Level::Avx512, &mut a5);
        for ((x, p), q) in zs.iter().zip(&a2).zip(&a5) {
            assert!(
                p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan()),
                "tanh({x:e}): AVX2 {p:e}, AVX-512 {q:e}"
            );
        }
    }
}

/// The ends of `erf`'s intervals (`src/vmath/erf.rs`, fdlibm's): 2^-28,
/// 0.84375, 1.25, high word `0x4006db6d` (≈ 1/0.35), 6, where it
/// rounds to 1 (5.9215…), and the subnormal boundary.
const ERF_ENDS: [f64; 7] = [
    3.725290298461914e-9,
    0.84375,
    1.25,
    2.8571414947509766,
    6.0,
    5.921587195794507,
    2.2250738585072014e-308,
];

/// `erf` at every level over its whole range: 1.6 million points of
/// `|x| < 6.5` (every interval), tiny and subnormal ones, every interval
/// end ± 16 ulps, large ones, ±inf, NaN, ±0; sorted (most chunks of 256
/// run one lane) and shuffled (most run every interval, blended); both
/// signs. Each lane is the library's result bit for bit (the kernel
/// performs its operations), and within 1 ulp of the correctly rounded
/// value (a double-double reference, `einsat::interp::domain::erf_dd`,
/// itself checked against the library on the way).
#[test]
fn erf_whole_range_against_a_reference() {
    use einsat::interp::domain::erf_dd;
    let mut r = Rng(0xe2f);
    let mut xs: Vec<f64> = (0..1_600_000).map(|_| r.unit() * 6.5).collect();
    xs.extend((0..20_000).map(|_| r.logspaced(-320.0, 0.0).abs()));
    xs.extend((0..5_000).map(|_| 6.0 + r.logspaced(-3.0, 300.0).abs()));
    for t in ERF_ENDS.into_iter().chain([f64::MIN_POSITIVE, 5e-324, 0.0]) {
        for d in 0..=16u64 {
            xs.push(f64::from_bits(t.to_bits() + d));
            if t > 0.0 && t.to_bits() > d {
                xs.push(f64::from_bits(t.to_bits() - d));
            }
        }
    }
    xs.extend([f64::INFINITY, f64::MAX, f64::NAN]);
    xs.sort_by(f64::total_cmp);
    let neg: Vec<f64> = xs.iter().map(|x| -x).collect();
    xs.extend(neg);
    let lib: Vec<f64> = xs.iter().map(|&x| libm::erf(x)).collect();
    // the reference, checked against the library: within 1 ulp of the
    // correctly rounded value (|lib - erf| < 1 ulp of lib)
    let mut worst = (0.0f64, 0.0);
    for (&x, &l) in xs.iter().zip(&lib) {
        if x.is_nan() {
            assert!(l.is_nan());
            continue;
        }
        let e = erf_dd(twofloat::TwoFloat::from(x));
        let cr = e.hi();
        if cr == 0.0 || cr.abs() == 1.0 || l == 0.0 {
            assert_eq!(
                l.to_bits(),
                cr.to_bits(),
                "erf({x:e}): libm {l:e}, reference {cr:e}"
            );
            continue;
        }
        assert!(ulps(l, cr) <= 1, "erf({x:e}): libm {l:e}, reference {cr:e}");
        let ulp = f64::EPSILON * 0.5f64.max(l.abs());
        let err = if l.abs() >= f64::MIN_POSITIVE {
            (twofloat::TwoFloat::from(l) - e).hi().abs() / ulp
        } else {
            0.0
        };
        if err > worst.0 {
            worst = (err, x);
        }
    }
    eprintln!("libm erf: worst {:.3} ulp at {:e}", worst.0, worst.1);
    let n = xs.len();
    let step = 1_000_003 % n;
    let order: Vec<usize> = (0..n).map(|i| (i * step) % n).collect();
    for level in levels() {
        for shuffled in [false, true] {
            let pick = |i: usize| if shuffled { order[i] } else { i };
            let mut ys: Vec<f64> = (0..n).map(|i| xs[pick(i)]).collect();
            apply_at(Func::Erf, level, &mut ys);
            for (i, y) in ys.iter().enumerate() {
                let (x, w) = (xs[pick(i)], lib[pick(i)]);
                assert!(
                    y.to_bits() == w.to_bits() || (y.is_nan() && w.is_nan()),
                    "erf({x:e}) = {y:e} at {level:?} (shuffled: {shuffled}): libm {w:e}"
                );
            }
        }
    }
}

#[test]
fn short_and_odd_lengths_and_unsupported_levels() {
    // lengths around the chunking, each lane checked; a level the CPU
    // lacks falls back to the scalar code
    for len in [0usize, 1, 2, 3, 7, 63, 64, 65, 129, 1000] {
        for f in FUNCS {
            let xs: Vec<f64> = (0..len).map(|i| (i as f64 - 300.0) * 0.37).collect();
            for level in [Level::Scalar, Level::Avx2, Level::Avx512] {
                let mut ys = xs.clone();
                apply_at(f, level, &mut ys);
                for (&x, &y) in xs.iter().zip(&ys) {
                    let want = lib(f, x);
                    assert!(
                        (y.is_nan() && want.is_nan()) || ulps(y, want) <= 1,
                        "{f:?}({x}) = {y} want {want}"
                    );
                }
            }
        }
    }
}

#[test]
fn entry_points_write_another_buffer() {
    // src -> dst (the staged maps' form: input row to output row)
    let mut r = Rng(11);
    for f in FUNCS {
        for n in [0usize, 1, 7, 255, 256, 257, 1000] {
            let xs: Vec<f64> = (0..n).map(|_| 0.1 + r.unit() * 30.0).collect();
            let mut ys = vec![f64::NAN; n + 1];
            // SAFETY: `n` elements at `xs`, room for them at `ys`.
            unsafe { einsat::vmath::apply_raw(f, xs.as_ptr(), ys.as_mut_ptr(), n) };
            let mut want = xs.clone();
            einsat::vmath::apply(f, &mut want);
            assert_eq!(&ys[..n], &want[..], "{f:?} n={n}");
            assert!(ys[n].is_nan(), "{f:?} n={n}: wrote past the end");
            // with an addend: f(x + c), the sum rounded first
            let mut ys2 = vec![f64::NAN; n];
            // SAFETY: as above.
            unsafe {
                einsat::vmath::apply_raw_add(f, xs.as_ptr(), ys2.as_mut_ptr(), n, Some(-1.5))
            };
            let mut want2: Vec<f64> = xs.iter().map(|x| x + -1.5).collect();
            einsat::vmath::apply(f, &mut want2);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&ys2), bits(&want2), "{f:?} n={n} with an addend");
            // overlapping by one element: read from a copy, same values
            let mut buf: Vec<f64> = xs.iter().copied().chain([0.0]).collect();
            let p = buf.as_mut_ptr();
            // SAFETY: `n + 1` elements at `p`.
            unsafe { einsat::vmath::apply_raw(f, p, p.wrapping_add(1), n) };
            assert_eq!(&buf[1..], &want[..], "{f:?} n={n} overlapping");
        }
    }
}

#[test]
fn entry_points_apply_in_place() {
    let mut xs = vec![0.5, -1.0, 2.0];
    // SAFETY: three elements at the pointer.
    unsafe { einsat::vmath::einsat_vexp(xs.as_ptr(), xs.as_mut_ptr(), 3) };
    for (y, x) in xs.iter().zip([0.5f64, -1.0, 2.0]) {
        assert!(ulps(*y, x.exp()) <= 1);
    }
    // n <= 0 does nothing
    unsafe { einsat::vmath::einsat_vlog(xs.as_ptr(), xs.as_mut_ptr(), 0) };
    unsafe { einsat::vmath::einsat_vlog(xs.as_ptr(), xs.as_mut_ptr(), -4) };
    assert!(ulps(xs[0], 0.5f64.exp()) <= 1);
}

/// The values of a result, flattened.
fn flat(v: &einsat::Value) -> Vec<f64> {
    match v {
        einsat::Value::Real(x) => vec![*x],
        einsat::Value::Array(a) => a.iter().copied().collect(),
        other => panic!("unexpected result {other:?}"),
    }
}

#[test]
fn jit_staged_calls_match_the_interpreter() {
    // maps and sums whose body applies a function to a moving argument
    // (staged: blocks of arguments through the slice kernels), over
    // contiguous and strided axes, lengths around the block size, with
    // special values among the inputs
    let src = "
        fn e(x: [n]R) -> [n]R = gen(i:n) exp(x[i])
        fn l(x: [n]R) -> [n]R = gen(i:n) log(x[i]) + 1
        fn s(x: [n]R) -> [n]R = gen(i:n) sin(x[i]) * cos(2 * x[i])
        fn t(x: [n]R) -> [n]R = gen(i:n) 0.5 * x[i] * (1 + tanh(0.7 * x[i]))
        fn lse(x: [n]R) -> R = let m = max(i:n) x[i] in m + log(sum(i:n) exp(x[i] - m))
        fn col(a: [n,k]R) -> [k]R = gen(j:k) sum(i:n) exp(a[i,j])
        fn row(a: [n,k]R) -> [n,k]R = gen(i:n) gen(j:k) tanh(a[i,j]) - a[i,0]
        fn sh(x: [n]R) -> [n]R = gen(i:n) exp(x[i+1]) + cos(x[i-2])
        fn map2(a: [n,k]R) -> [n,k]R = gen(i:n, j:k) tanh(a[i,j])
        fn tr(a: [n,k]R) -> [k,n]R = gen(j:k, i:n) exp(a[i,j])
        fn rows(a: [n,k]R) -> [k,n]R = gen(j:k, i:n) log(a[i,j] * a[i,j])
        fn off(x: [n]R) -> [n]R = gen(i:n) sin(x[i] + x[0]) + cos(x[1] - x[i])
        fn offm(a: [n,k]R) -> [n,k]R = gen(i:n, j:k) exp(a[i,j] - a[i,0])
        fn offs(a: [n,k]R) -> [n]R = gen(i:n) sum(j:k) tanh(-0.5 + a[i,j])
    ";
    let p = einsat::load(src).unwrap();
    let specials = [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0,
        -0.0,
        1e-310,
        800.0,
        -800.0,
        1e300,
    ];
    let mut r = Rng(7);
    for n in [1usize, 5, 255, 256, 257, 700] {
        let mut xs: Vec<f64> = (0..n).map(|_| (r.unit() - 0.5) * 40.0).collect();
        for (k, s) in specials.iter().enumerate() {
            if n > 3 * k {
                xs[3 * k] = *s;
            }
        }
        let x = einsat::Value::Array(ndarray::Array1::from(xs.clone()).into_dyn());
        let a = einsat::Value::Array(
            ndarray::Array2::from_shape_fn((n, 3), |(i, j)| xs[i] * (j as f64 + 0.5) * 0.1)
                .into_dyn(),
        );
        for f in &p.functions {
            let arg = if ["col", "row", "map2", "tr", "rows", "offm", "offs"]
                .contains(&f.name.as_str())
            {
                a.clone()
            } else {
                x.clone()
            };
            let args = [arg];
            let want = flat(&einsat::interp::run(f, &args).unwrap());
            let k = einsat::jit::compile(f).unwrap();
            let got = flat(&k.call(&args).unwrap());
            assert_eq!(want.len(), got.len());
            for (g, w) in got.iter().zip(&want) {
                let ok = if w.is_nan() || g.is_nan() {
                    // a NaN from the data, or ∞ - ∞ in lse: the kinds may
                    // differ only where the contract allows (both non-finite)
                    !g.is_finite() && !w.is_finite()
                } else if w.is_infinite() || g.is_infinite() {
                    g == w
                } else {
                    (g - w).abs() <= 1e-12 * w.abs() + 1e-14
                };
                assert!(ok, "{} n={n}: jit {g:e}, interpreter {w:e}", f.name);
            }
        }
    }
}

#[test]
fn exp_overflow_and_underflow_are_exact_at_every_level() {
    // far beyond the thresholds (masked attention's -inf and -1e9
    // logits): +0 and +inf exactly, by every form (in place, into
    // another buffer, with an addend, summed), mixed with ordinary
    // lanes in one chunk, around the thresholds the library's values
    let mut xs = vec![
        f64::NEG_INFINITY,
        -1e9,
        -1000.0,
        -746.0,
        -745.2,
        -745.1332191019412,
        -745.1332191019411,
        -745.0,
        -720.0,
        -708.4,
        -708.3964185322641,
        -708.39,
        1000.0,
        1e9,
        1e300,
        f64::INFINITY,
        f64::MAX,
        709.78,
        709.782712893384,
        709.7827128933841,
        709.8,
        710.0,
        -f64::MAX,
    ];
    let n0 = xs.len();
    for i in 0..300 {
        xs.push((i as f64 - 150.0) * 0.77);
        xs.push(if i % 2 == 0 { f64::NEG_INFINITY } else { -1e9 });
    }
    let check = |got: &[f64], xs: &[f64], what: &str| {
        for (&y, &x) in got.iter().zip(xs) {
            let want = x.exp();
            if want == 0.0 || want.is_infinite() {
                assert_eq!(y.to_bits(), want.to_bits(), "{what}: exp({x:e}) = {y:e}");
            } else {
                assert!(
                    ulps(y, want) <= 1,
                    "{what}: exp({x:e}) = {y:e}, want {want:e}"
                );
            }
        }
    };
    for level in levels() {
        let mut ys = xs.clone();
        apply_at(Func::Exp, level, &mut ys);
        check(&ys, &xs, &format!("{level:?}"));
    }
    assert_eq!(xs[..n0].iter().filter(|x| x.exp() == 0.0).count(), 7);
    let mut ys = vec![0.0; xs.len()];
    einsat::vmath::apply_to(Func::Exp, &xs, &mut ys);
    check(&ys, &xs, "apply_to");
    let c = -0.5;
    einsat::vmath::apply_to_add(Func::Exp, &xs, &mut ys, Some(c));
    let shifted: Vec<f64> = xs.iter().map(|x| x + c).collect();
    check(&ys, &shifted, "apply_to_add");
    // a sum of exp(x - m) over -inf and -1e9 terms: those add +0
    let row: Vec<f64> = (0..1000)
        .map(|i| {
            if i % 3 == 0 {
                (i as f64) * 1e-3
            } else if i % 3 == 1 {
                f64::NEG_INFINITY
            } else {
                -1e9
            }
        })
        .collect();
    let got = einsat::vmath::sum_of(Func::Exp, &row, Some(-1.0));
    let want: f64 = row.iter().map(|x| (x - 1.0).exp()).sum();
    assert!((got - want).abs() <= 1e-13 * want, "sum {got} want {want}");
    assert_eq!(
        einsat::vmath::sum_of(Func::Exp, &[f64::NEG_INFINITY; 9], Some(3.0)),
        0.0
    );
    assert_eq!(
        einsat::vmath::sum_of(Func::Exp, &[0.0, 1000.0], None),
        f64::INFINITY
    );
}

#[test]
fn masked_softmax_matches_the_interpreter() {
    // rows with -inf and -1e9 logits (masked attention), a fully masked
    // row of -1e9 (a uniform softmax) and one of -inf (NaN: 0/0)
    let src = "fn sm(X: [n,m]R) -> [n,m]R = gen(i:n) let mx = max(j:m) X[i,j] in \
               let z = sum(j:m) exp(X[i,j] - mx) in gen(j:m) exp(X[i,j] - mx) / z";
    let p = einsat::load(src).unwrap();
    let f = &p.functions[0];
    let g = einsat::opt::optimize(f, &einsat::opt::Options::default())
        .unwrap()
        .program;
    let k = einsat::jit::compile(&g).unwrap();
    let mut r = Rng(5);
    for (n, m) in [(3usize, 7usize), (6, 300), (4, 1000)] {
        let a = ndarray::Array2::from_shape_fn((n, m), |(i, j)| match i {
            0 => -1e9,
            1 if n > 3 => f64::NEG_INFINITY,
            _ if j % 3 == 1 => f64::NEG_INFINITY,
            _ if j % 5 == 2 => -1e9,
            _ => (r.unit() - 0.5) * 30.0,
        });
        let args = [einsat::Value::Array(a.into_dyn())];
        let want = flat(&einsat::interp::run(f, &args).unwrap());
        let got = flat(&k.call(&args).unwrap());
        assert_eq!(want.len(), got.len());
        for (g, w) in got.iter().zip(&want) {
            let ok = if w.is_nan() {
                g.is_nan()
            } else {
                (g - w).abs() <= 1e-12 * w.abs() + 1e-300 && (*w != 0.0 || *g == 0.0)
            };
            assert!(ok, "{n}x{m}: jit {g:e}, interpreter {w:e}");
        }
        assert!(want.iter().filter(|w| **w == 0.0).count() >= n);
    }
}

// ------------------------------------------------------------------ pow

/// The error of `v` against the double-double `want`, in ulps of `want`
/// (a normal double).
fn err_ulps(v: f64, want: twofloat::TwoFloat) -> f64 {
    let e = ((want.hi().to_bits() >> 52) & 0x7ff) as i32 - 1075;
    let d = twofloat::TwoFloat::from(v) - want;
    (d.hi() / 2f64.powi(e)).abs()
}

fn normal(v: f64) -> bool {
    v.is_finite() && v.abs() >= f64::MIN_POSITIVE
}

/// Pairs for the `pow` sweep: exponents aimed at every result range
/// (`y = t/ln x`, `t` across the whole exponent range and at the
/// overflow/underflow/subnormal thresholds), bases over every binade and
/// near 1 (large exponents), small integer and non-integer exponents,
/// negative and subnormal bases, and every pair of special values.
fn pow_pairs(n: usize, seed: u64) -> Vec<(f64, f64)> {
    let mut r = Rng(seed);
    let specials = [
        0.0,
        -0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        1.0,
        -1.0,
        0.5,
        -0.5,
        2.0,
        -2.0,
        3.0,
        -3.0,
        1.5,
        -1.5,
        5e-324,
        -5e-324,
        f64::MIN_POSITIVE,
        f64::MAX,
        -f64::MAX,
        1.0 + f64::EPSILON,
        1.0 - f64::EPSILON / 2.0,
        1e300,
        1e-300,
        2f64.powi(53),
        2f64.powi(53) + 2.0,
    ];
    let mut v: Vec<(f64, f64)> = Vec::with_capacity(n + specials.len() * specials.len());
    for &x in &specials {
        for &y in &specials {
            v.push((x, y));
        }
    }
    const THRESHOLDS: [f64; 6] = [
        709.782712893384,
        709.0,
        -708.0,
        -708.396418532264,
        -744.44,
        -745.1332191019412,
    ];
    while v.len() < n {
        let pair = match r.next() % 10 {
            // any binade, the result anywhere
            0 | 1 => {
                let x = r.logspaced(-307.0, 308.0).abs();
                let t = -750.0 + 1465.0 * r.unit();
                (x, t / x.ln())
            }
            // at the thresholds of the result
            2 => {
                let x = r.logspaced(-300.0, 300.0).abs();
                let t = THRESHOLDS[(r.next() % 6) as usize] * (1.0 + (r.unit() - 0.5) * 1e-6);
                (x, t / x.ln())
            }
            // near 1, large exponents
            3 => {
                let x = 1.0 + (r.unit() - 0.5) * 10f64.powf(-15.0 * r.unit());
                let t = -750.0 + 1465.0 * r.unit();
                (x, t / x.ln())
            }
            // small integer exponents, bases of both signs
            4 => (r.logspaced(-30.0, 30.0), (r.next() % 41) as f64 - 20.0),
            // small non-integer exponents
            5 => (r.logspaced(-20.0, 20.0).abs(), (r.unit() - 0.5) * 8.0),
            // exponents of every size
            6 => (r.logspaced(-3.0, 3.0), r.logspaced(-300.0, 300.0)),
            // subnormal bases
            7 => (
                f64::from_bits(1 + r.next() % (1 << 52)),
                (r.unit() - 0.5) * 2.5,
            ),
            // negative bases, non-integer or integer exponents
            8 => (
                -r.logspaced(-10.0, 10.0).abs(),
                if r.next() & 1 == 0 {
                    (r.unit() - 0.5) * 20.0
                } else {
                    ((r.unit() - 0.5) * 200.0).round()
                },
            ),
            // the common exponents of physics codes
            _ => (
                r.logspaced(-100.0, 100.0).abs(),
                [-1.5, -0.5, 0.5, 1.5, 2.0, 3.0, -2.0, 1.0 / 3.0][(r.next() % 8) as usize],
            ),
        };
        v.push(pair);
    }
    v
}

/// `pow(x, y)` for finite nonzero `x`, `y` in double-double, and the
/// power of two it is scaled by: results below `2^-860` are computed
/// times `2^512`, so that the low part keeps its bits (a subnormal low
/// part would cost the reference half an ulp at the bottom of the normal
/// range).
fn pow_reference(x: f64, y: f64) -> (twofloat::TwoFloat, i32) {
    use einsat::interp::domain::{dd_exp, dd_ln};
    use twofloat::TwoFloat;
    let neg = x < 0.0 && y.fract() == 0.0 && y % 2.0 != 0.0;
    let mut z = TwoFloat::from(y) * dd_ln(TwoFloat::from(x.abs()));
    let mut scale = 0;
    if z.hi() < -596.0 {
        let ln2 = TwoFloat::new_add(std::f64::consts::LN_2, 2.3190468138462996e-17);
        z += ln2 * 512.0;
        scale = 512;
    }
    let r = dd_exp(z);
    (if neg { -r } else { r }, scale)
}

/// `pow` at every level this CPU has, on a million pairs and every pair
/// of special values: a normal result is within 1 ulp of a double-double
/// reference (so within 1 ulp of the correctly rounded value), every
/// other result (±inf, NaN, ±0, subnormal) is C's `pow` exactly. The
/// reference is itself checked against `powf` on the same pairs.
#[test]
fn pow_within_one_ulp_at_every_level() {
    use einsat::vmath::pow_to_at;
    let pairs = pow_pairs(1_000_000, 0x9e37_79b9_7f4a_7c15);
    let (xs, ys): (Vec<f64>, Vec<f64>) = pairs.iter().copied().unzip();
    // the reference where the library's result is normal
    let refs: Vec<Option<(twofloat::TwoFloat, i32)>> = pairs
        .iter()
        .map(|&(x, y)| normal(x.powf(y)).then(|| pow_reference(x, y)))
        .collect();
    let err = |v: f64, k: usize| {
        let (r, s) = refs[k].expect("a normal result");
        err_ulps(v * 2f64.powi(s), r)
    };
    // the reference against the C library (glibc: below 0.52 ulp)
    let mut lib_worst = 0.0f64;
    for (k, &(x, y)) in pairs.iter().enumerate() {
        if refs[k].is_some() {
            lib_worst = lib_worst.max(err(x.powf(y), k));
        }
    }
    assert!(
        lib_worst < 1.0,
        "powf against the reference: {lib_worst} ulp"
    );
    let mut normals = 0usize;
    for level in levels() {
        let mut got = vec![0.0; xs.len()];
        pow_to_at(level, &xs, &ys, &mut got);
        let mut worst = (0.0f64, 0.0, 0.0);
        for (k, &(x, y)) in pairs.iter().enumerate() {
            let (g, lib) = (got[k], x.powf(y));
            if refs[k].is_some() && normal(g) {
                let e = err(g, k);
                if e > worst.0 {
                    worst = (e, x, y);
                }
                normals += 1;
            } else {
                assert!(
                    g.to_bits() == lib.to_bits() || (g.is_nan() && lib.is_nan()),
                    "{level:?}: pow({x:e}, {y:e}) = {g:e}, the library's {lib:e}"
                );
            }
        }
        assert!(
            worst.0 < 1.0,
            "{level:?}: {} ulp at pow({:e}, {:e})",
            worst.0,
            worst.1,
            worst.2
        );
        eprintln!(
            "pow {level:?}: worst {:.3} ulp at pow({:e}, {:e}) (library {lib_worst:.3})",
            worst.0, worst.1, worst.2
        );
    }
    // most pairs have a normal result
    assert!(normals > levels().len() * 600_000, "{normals}");
}

/// The constant-exponent form is the two-slice form with every `y = c`,
/// bit for bit, at every level; the entry points work in place and into
/// another buffer at odd lengths.
#[test]
fn pow_const_and_entry_points() {
    use einsat::vmath::{einsat_vpow, einsat_vpow_const, pow_const_to_at, pow_to_at};
    let pairs = pow_pairs(20_000, 77);
    let xs: Vec<f64> = pairs.iter().map(|p| p.0).collect();
    for c in [
        -1.5,
        0.5,
        2.0,
        3.0,
        1e-3,
        -700.0,
        1e300,
        0.0,
        -0.0,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ] {
        let ys = vec![c; xs.len()];
        for level in levels() {
            let mut a = vec![0.0; xs.len()];
            let mut b = vec![0.0; xs.len()];
            pow_const_to_at(level, &xs, c, &mut a);
            pow_to_at(level, &xs, &ys, &mut b);
            for k in 0..xs.len() {
                assert!(
                    a[k].to_bits() == b[k].to_bits() || (a[k].is_nan() && b[k].is_nan()),
                    "{level:?}: pow({}, {c}): {} against {}",
                    xs[k],
                    a[k],
                    b[k]
                );
            }
        }
    }
    for n in [0usize, 1, 7, 255, 256, 257, 1000] {
        let x: Vec<f64> = xs[..n].to_vec();
        let y: Vec<f64> = pairs[..n].iter().map(|p| p.1).collect();
        let mut want = vec![0.0; n];
        einsat::vmath::pow_to(&x, &y, &mut want);
        let mut d = vec![0.0; n];
        let mut inplace = x.clone();
        let mut inplace_y = y.clone();
        // SAFETY: buffers of `n` elements; in place is allowed
        unsafe {
            einsat_vpow(x.as_ptr(), y.as_ptr(), d.as_mut_ptr(), n as i64);
            einsat_vpow(inplace.as_ptr(), y.as_ptr(), inplace.as_mut_ptr(), n as i64);
            einsat_vpow(
                x.as_ptr(),
                inplace_y.as_ptr(),
                inplace_y.as_mut_ptr(),
                n as i64,
            );
        }
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&d), bits(&want), "n {n}");
        assert_eq!(bits(&inplace), bits(&want), "n {n}");
        assert_eq!(bits(&inplace_y), bits(&want), "n {n}");
        let mut c = x.clone();
        let mut wc = vec![0.0; n];
        einsat::vmath::pow_const_to(&x, -1.5, &mut wc);
        // SAFETY: as above
        unsafe { einsat_vpow_const(c.as_ptr(), c.as_mut_ptr(), n as i64, -1.5) };
        assert_eq!(bits(&c), bits(&wc), "n {n}");
    }
}

/// `exp` at AVX2 (`vmath/exp.rs`'s `map256`: the AVX-512 kernel's
/// operations, its table looked up by loads, `2^m` added to the exponent) gives the
/// AVX-512 kernel's bits wherever the result is normal (`|x| < 708`), and
/// the library's result beyond; every tail length. Where this CPU lacks
/// AVX-512 the first half has nothing to compare and only the second runs.
#[test]
fn exp_at_avx2_is_the_avx512_kernel_bit_for_bit() {
    let ls = levels();
    if !ls.contains(&Level::Avx2) {
        return;
    }
    let mut r = Rng(0x5eed);
    let mut xs: Vec<f64> = (0..200_000).map(|_| r.logspaced(-10.0, 2.85)).collect();
    xs.extend((0..xs.len()).map(|i| -xs[i]).collect::<Vec<_>>());
    let mut a2 = xs.clone();
    apply_at(Func::Exp, Level::Avx2, &mut a2);
    if ls.contains(&Level::Avx512) {
        let mut a5 = xs.clone();
        apply_at(Func::Exp, Level::Avx512, &mut a5);
        for ((x, p), q) in xs.iter().zip(&a2).zip(&a5) {
            assert_eq!(
                p.to_bits(),
                q.to_bits(),
                "exp({x:e}): AVX2 {p:e}, AVX-512 {q:e}"
            );
        }
    }
    // beyond the core and every tail: the library's value exactly there
    let edge = [
        708.0, 709.7, 709.79, 745.0, 746.0, -708.5, -745.2, -746.0, -1e300, 1e300,
    ];
    for n in 0..13 {
        let mut v: Vec<f64> = (0..n).map(|k| edge[k % edge.len()]).collect();
        v.push(f64::NAN);
        v.push(f64::INFINITY);
        v.push(f64::NEG_INFINITY);
        let want: Vec<f64> = v.iter().map(|x| x.exp()).collect();
        apply_at(Func::Exp, Level::Avx2, &mut v);
        for (y, w) in v.iter().zip(&want) {
            assert!(
                y.to_bits() == w.to_bits() || (y.is_nan() && w.is_nan()),
                "n {n}: {y:e}, want {w:e}"
            );
        }
    }
}
