//! The interpreter's double-double domain (`interp::domain::Dd`, the
//! reference of the optimiser's accuracy check) against mpmath at 60 digits:
//! division and every function to 2⁻⁹⁵ relative, and the special values. The
//! reference values are printed by `tests/dd_domain_reference.py`.

// the tables hold points equal to π, π/2, ln 2 and √2 on purpose, as
// printed by the script
#![allow(clippy::approx_constant, clippy::type_complexity)]

use einsat::interp::domain::{Dd, Domain};
use einsat::syntax::ast::{BinOp, Func};
use twofloat::TwoFloat;

const EXP: &[(f64, (f64, f64))] = &[
    (0.5, (1.6487212707001282, -4.731568479435833e-17)),
    (-3.25, (0.03877420783172201, 1.1433418851841824e-18)),
    (1e-12, (1.000000000001, -8.890058184103173e-17)),
    (100.125, (3.0460357809113723e+43, 1.9444185594826978e+27)),
    (700.5, (1.6721859620674984e+304, 1.0957735777569338e+288)),
    (-300.5, (3.1225412772322846e-131, 2.3777947889417906e-147)),
    (0.6931471805599453, (2.0, -4.638093627692599e-17)),
    (37.0, (1.1719142372802612e+16, -0.6912270602088098)),
];
const LN: &[(f64, (f64, f64))] = &[
    (1e-300, (-690.7755278982137, -2.3670096176709832e-14)),
    (
        0.9999999999,
        (-1.000000082790371e-10, -4.217583732727628e-27),
    ),
    (
        1.0000000001,
        (1.000000082690371e-10, -4.2169170658954805e-27),
    ),
    (3.0, (1.0986122886681098, -9.07129723500153e-17)),
    (0.1, (-2.3025850929940455, -1.7150243628057985e-16)),
    (1e+300, (690.7755278982137, 2.3747660028800243e-14)),
    (2.5e-310, (-712.88508809628, 1.45703225183659e-14)),
];
const TANH: &[(f64, (f64, f64))] = &[
    (1e-10, (1e-10, -3.3333333333333338e-31)),
    (-2.5e-06, (-2.499999999994792e-06, -7.225934637900676e-23)),
    (0.3, (0.2913126124515909, -6.4602656586469586e-18)),
    (0.75, (0.6351489523872873, 1.7012977006564836e-17)),
    (1.7, (0.935409070603099, 6.160665782786146e-18)),
    (-5.5, (-0.9999665971563038, -4.933089545428797e-17)),
    (20.0, (1.0, -8.496708510583178e-18)),
];
const SIN: &[(f64, (f64, f64))] = &[
    (1e-08, (1e-08, -1.6666666666666668e-25)),
    (0.5, (0.479425538604203, -5.103969860556013e-18)),
    (3.0, (0.1411200080598672, 8.577269787017502e-18)),
    (
        3.141592653589793,
        (1.2246467991473532e-16, -2.99476980971834e-33),
    ),
    (100.0, (-0.5063656411097588, -3.050947053792115e-18)),
    (-1234.5, (-0.14539565052293643, 1.0722076316516586e-17)),
];
const COS: &[(f64, (f64, f64))] = &[
    (1e-08, (1.0, -5e-17)),
    (0.5, (0.8775825618903728, -4.2623149864279997e-17)),
    (
        1.5707963267948966,
        (6.123233995736766e-17, -1.4973849048591698e-33),
    ),
    (3.0, (-0.9899924966004454, -4.2060261566099734e-17)),
    (100.0, (0.8623188722876839, 4.334809858136501e-17)),
    (-1234.5, (-0.989373592132422, 3.4382785047781725e-17)),
];
const SQRT: &[(f64, (f64, f64))] = &[
    (2.0, (1.4142135623730951, -9.667293313452913e-17)),
    (1e-300, (1e-150, 6.234187685431415e-168)),
    (3e+300, (1.7320508075688775e+150, -1.1924780537453558e+134)),
    (0.1, (0.31622776601683794, 8.004969469767158e-19)),
    (5e-320, (2.2360555305969962e-160, 1.428764241668121e-176)),
];
const DIV: &[((f64, f64), (f64, f64))] = &[
    ((1.0, 3.0), (0.3333333333333333, 1.850371707708594e-17)),
    ((2.0, 7.0), (0.2857142857142857, 1.586032892321652e-17)),
    ((-1e+300, 3.0), (-3.3333333333333335e+299, 0.0)),
    ((1e-300, 70000000000.0), (1.4285714285714e-311, 0.0)),
    ((0.1, 0.3), (0.33333333333333337, -6.16790569236198e-18)),
    ((5.0, -1.1), (-4.545454545454545, -1.1744508029092568e-16)),
];

/// The relative error of a double-double against a reference (hi, lo).
fn rel(got: TwoFloat, want: (f64, f64)) -> f64 {
    let w = TwoFloat::new_add(want.0, want.1);
    ((got - w).hi() / want.0).abs()
}

fn check(name: &str, f: Func, table: &[(f64, (f64, f64))], tol: f64) {
    for &(x, want) in table {
        let got = Dd.call(f, &[Dd.num(x)]);
        let e = rel(got, want);
        assert!(
            e <= tol,
            "{name}({x:e}) = {:e} + {:e}, want {:e} + {:e}: relative error {e:e} > {tol:e}",
            got.hi(),
            got.lo(),
            want.0,
            want.1
        );
    }
}

const TOL: f64 = 2.5e-29; // 2^-95

#[test]
fn division_and_the_functions_are_good_to_2_pow_minus_95() {
    check("sin", Func::Sin, SIN, TOL);
    check("cos", Func::Cos, COS, TOL);
    check("exp", Func::Exp, EXP, TOL);
    check("log", Func::Log, LN, TOL);
    check("tanh", Func::Tanh, TANH, TOL);
    check("sqrt", Func::Sqrt, SQRT, TOL);
    for &((a, b), want) in DIV {
        let got = Dd.bin(BinOp::Div, &Dd.num(a), &Dd.num(b));
        let e = rel(got, want);
        assert!(e <= TOL, "{a:e} / {b:e}: relative error {e:e}");
    }
}

#[test]
fn special_values_are_ieee_ones() {
    let nan = Dd.num(f64::NAN);
    let inf = Dd.num(f64::INFINITY);
    let ninf = Dd.num(f64::NEG_INFINITY);
    let zero = Dd.num(0.0);
    let nzero = Dd.num(-0.0);
    let one = Dd.num(1.0);
    let hi = |v: TwoFloat| v.hi();
    assert!(hi(Dd.call(Func::Exp, &[nan])).is_nan());
    assert_eq!(hi(Dd.call(Func::Exp, &[inf])), f64::INFINITY);
    assert_eq!(hi(Dd.call(Func::Exp, &[ninf])), 0.0);
    assert_eq!(hi(Dd.call(Func::Exp, &[Dd.num(710.0)])), f64::INFINITY);
    assert_eq!(hi(Dd.call(Func::Exp, &[zero])), 1.0);
    assert!(hi(Dd.call(Func::Log, &[nan])).is_nan());
    assert!(hi(Dd.call(Func::Log, &[Dd.num(-1.0)])).is_nan());
    assert_eq!(hi(Dd.call(Func::Log, &[zero])), f64::NEG_INFINITY);
    assert_eq!(hi(Dd.call(Func::Log, &[inf])), f64::INFINITY);
    assert_eq!(hi(Dd.call(Func::Log, &[one])), 0.0);
    assert!(hi(Dd.call(Func::Tanh, &[nan])).is_nan());
    assert_eq!(hi(Dd.call(Func::Tanh, &[inf])), 1.0);
    assert_eq!(hi(Dd.call(Func::Tanh, &[ninf])), -1.0);
    assert_eq!(
        hi(Dd.call(Func::Tanh, &[nzero])).to_bits(),
        (-0.0f64).to_bits()
    );
    let div = |a: TwoFloat, b: TwoFloat| hi(Dd.bin(BinOp::Div, &a, &b));
    assert_eq!(div(one, zero), f64::INFINITY);
    assert_eq!(div(one, nzero), f64::NEG_INFINITY);
    assert!(div(zero, zero).is_nan());
    assert!(div(inf, inf).is_nan());
    assert_eq!(div(one, inf), 0.0);
    assert_eq!(div(ninf, Dd.num(2.0)), f64::NEG_INFINITY);
    assert!(div(nan, one).is_nan());
    for f in [Func::Sin, Func::Cos] {
        for x in [nan, inf, ninf] {
            assert!(hi(Dd.call(f, &[x])).is_nan());
        }
    }
    assert_eq!(
        hi(Dd.call(Func::Sin, &[nzero])).to_bits(),
        (-0.0f64).to_bits()
    );
    assert_eq!(hi(Dd.call(Func::Cos, &[zero])), 1.0);
    assert_eq!(div(zero, Dd.num(-3.0)).to_bits(), (-0.0f64).to_bits());
}
