//! Random arguments that fit a function's signature, drawn from a
//! [`ValueClass`]: what the rule checker ([`crate::egraph::check`]) runs
//! both sides of a rule on, what `einsat difftest` feeds its programs, and
//! what `einsat::testing` re-exports. The classes beyond the moderate one
//! are the inputs on which the floating-point contract
//! (`docs/fp-contract.md`) bites: a large common offset, huge and tiny
//! magnitudes, exact and signed zeros, infinities and NaN.

use crate::error::Result;
use crate::interp::value::{checked_elements, resolve, Boundary, Sizes, Value};
use crate::syntax::ast::*;
use ndarray::{ArrayD, IxDyn};
use rand::Rng;

/// Which values random inputs hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ValueClass {
    /// Uniform in [-2, 2).
    Moderate,
    /// Many exact zeros of either sign and small integers, the rest
    /// moderate (products with zero, sums that cancel exactly).
    Zeros,
    /// One large offset common to every argument (1e6 to 1e12, either
    /// sign) plus moderate values: centred sums, differences of nearly equal
    /// numbers.
    Offset,
    /// One large offset, added to or subtracted from moderate values at
    /// random, and a fifth of moderate values alone: sums that cancel,
    /// small values beside large ones.
    Opposed,
    /// Magnitudes log-uniform from 1e-300 to 1e300, either sign.
    Wide,
    /// Moderate values mixed with +inf, -inf, NaN and signed zeros.
    Special,
}

impl ValueClass {
    /// Every class.
    pub const ALL: [ValueClass; 6] = [
        ValueClass::Moderate,
        ValueClass::Zeros,
        ValueClass::Offset,
        ValueClass::Opposed,
        ValueClass::Wide,
        ValueClass::Special,
    ];

    /// The class's name (`einsat difftest --values`).
    pub fn name(self) -> &'static str {
        match self {
            ValueClass::Moderate => "moderate",
            ValueClass::Zeros => "zeros",
            ValueClass::Offset => "offset",
            ValueClass::Opposed => "opposed",
            ValueClass::Wide => "wide",
            ValueClass::Special => "special",
        }
    }

    /// The class of a name.
    pub fn parse(s: &str) -> Option<ValueClass> {
        ValueClass::ALL.into_iter().find(|c| c.name() == s)
    }

    /// Whether every value drawn is finite.
    pub fn finite(self) -> bool {
        self != ValueClass::Special
    }

    /// One value; `offset` is the argument's common offset (Offset class).
    fn draw(self, offset: f64, rng: &mut impl Rng) -> f64 {
        let moderate = |rng: &mut _| uniform(rng);
        match self {
            ValueClass::Moderate => moderate(rng),
            ValueClass::Zeros => match rng.gen_range(0..10) {
                0..=1 => 0.0,
                2..=3 => -0.0,
                4..=5 => rng.gen_range(-2i32..=2) as f64,
                _ => moderate(rng),
            },
            ValueClass::Offset => offset + moderate(rng),
            ValueClass::Opposed => match rng.gen_range(0..5) {
                0 | 1 => offset + moderate(rng),
                2 | 3 => -offset + moderate(rng),
                _ => moderate(rng),
            },
            ValueClass::Wide => {
                let m = 10f64.powf(rng.gen_range(-300.0..300.0));
                if rng.gen_bool(0.5) {
                    -m
                } else {
                    m
                }
            }
            ValueClass::Special => match rng.gen_range(0..12) {
                0 => f64::INFINITY,
                1 => f64::NEG_INFINITY,
                2 => f64::NAN,
                3 => 0.0,
                4 => -0.0,
                _ => moderate(rng),
            },
        }
    }

    fn offset(self, rng: &mut impl Rng) -> f64 {
        if !matches!(self, ValueClass::Offset | ValueClass::Opposed) {
            return 0.0;
        }
        let m = 10f64.powf(rng.gen_range(6.0..12.0)).round();
        if rng.gen_bool(0.5) {
            -m
        } else {
            m
        }
    }
}

fn uniform(rng: &mut impl Rng) -> f64 {
    rng.gen_range(-2.0..2.0)
}

fn random_boundary(
    b: &Boundary,
    sizes: &Sizes,
    class: ValueClass,
    off: f64,
    rng: &mut impl Rng,
) -> Result<Value> {
    match b {
        Boundary::Array(s) if s.is_empty() => Ok(Value::Real(class.draw(off, rng))),
        Boundary::Array(s) => {
            let shape: Vec<usize> = s.iter().map(|n| resolve(n, sizes)).collect::<Result<_>>()?;
            let len = checked_elements(&shape)?;
            let data: Vec<f64> = (0..len).map(|_| class.draw(off, rng)).collect();
            Ok(Value::Array(
                ArrayD::from_shape_vec(IxDyn(&shape), data).expect("length matches shape"),
            ))
        }
        Boundary::Pair(a, b) => Ok(Value::pair(
            random_boundary(a, sizes, class, off, rng)?,
            random_boundary(b, sizes, class, off, rng)?,
        )),
    }
}

/// Random arguments for `f` (values uniform in [-2, 2), C order) with the
/// named sizes taken from `sizes`.
pub fn random_inputs(f: &Function, sizes: &Sizes, rng: &mut impl Rng) -> Result<Vec<Value>> {
    random_inputs_of(f, sizes, ValueClass::Moderate, rng)
}

/// Random arguments for `f` whose values are drawn from `class`.
pub fn random_inputs_of(
    f: &Function,
    sizes: &Sizes,
    class: ValueClass,
    rng: &mut impl Rng,
) -> Result<Vec<Value>> {
    let off = class.offset(rng);
    f.params
        .iter()
        .map(|p| {
            if p.ty.is_int_array() {
                random_ints(f, &p.name, &p.ty, sizes, class, rng)
            } else {
                random_boundary(&Boundary::of(&p.ty), sizes, class, off, rng)
            }
        })
        .collect()
}

/// Integers for the integer array `name`, uniform over the indices every
/// gather reading it accepts ([`super::gather::accepted`]; 0 when none
/// is). With [`ValueClass::Special`], three times in ten one element is
/// refused instead (one past the accepted range, below it, or 0.5), so
/// that the engines' refusals are compared too.
fn random_ints(
    f: &Function,
    name: &str,
    ty: &crate::syntax::ast::Type,
    sizes: &Sizes,
    class: ValueClass,
    rng: &mut impl Rng,
) -> Result<Value> {
    let Boundary::Array(s) = Boundary::of(ty) else {
        unreachable!("an integer array is an array")
    };
    let shape: Vec<usize> = s.iter().map(|n| resolve(n, sizes)).collect::<Result<_>>()?;
    let len = checked_elements(&shape)?;
    let (lo, hi) = super::gather::accepted(f, name, sizes)?;
    // an array no gather reads: small integers
    let hi = if hi == i64::MAX { lo + 8 } else { hi };
    let mut data: Vec<f64> = (0..len)
        .map(|_| {
            if lo < hi {
                rng.gen_range(lo..hi) as f64
            } else {
                0.0
            }
        })
        .collect();
    if class == ValueClass::Special && len > 0 && rng.gen_bool(0.3) {
        let k = rng.gen_range(0..len);
        data[k] = match rng.gen_range(0..3) {
            0 => hi as f64,
            1 => lo as f64 - 1.0,
            _ => 0.5,
        };
    }
    Ok(Value::Array(
        ArrayD::from_shape_vec(IxDyn(&shape), data).expect("length matches shape"),
    ))
}
