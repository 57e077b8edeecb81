//! The floating-point format a program is evaluated and compiled in.
//!
//! The language has one real type `R`; its format is chosen per run or
//! compilation, like `jax.jit` specialising on dtypes: [`Precision::F64`]
//! (the default, IEEE binary64) or [`Precision::F32`] (binary32). Within
//! one run every real value is of that format: literals and inputs are
//! rounded to it, and every operation's result is rounded to it (see
//! `docs/language.md`, "Precision"). Depends on nothing.

use std::fmt;
use std::str::FromStr;

/// The format every real value of a run or a kernel has.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Precision {
    /// IEEE binary64 (`f64`): the default.
    #[default]
    F64,
    /// IEEE binary32 (`f32`).
    F32,
}

impl Precision {
    /// `x` rounded to the format (round to nearest even; beyond the
    /// format's range an infinity). For `F32`, `(a op b)` computed in
    /// `f64` from `f32` operands and then rounded is the correctly rounded
    /// `f32` result of `+ - * /` and `sqrt` (53 ≥ 2·24 + 2).
    #[inline]
    pub fn round(self, x: f64) -> f64 {
        match self {
            Precision::F64 => x,
            Precision::F32 => x as f32 as f64,
        }
    }

    /// Whether `x` is a value of the format (NaN and infinities are).
    pub fn holds(self, x: f64) -> bool {
        x.is_nan() || self.round(x) == x
    }

    /// The unit roundoff `u` (half the machine epsilon): 2⁻⁵³ or 2⁻²⁴.
    pub fn unit_roundoff(self) -> f64 {
        match self {
            Precision::F64 => f64::EPSILON / 2.0,
            Precision::F32 => f32::EPSILON as f64 / 2.0,
        }
    }

    /// The smallest positive subnormal (the absolute error an underflow may
    /// cause).
    pub fn smallest_subnormal(self) -> f64 {
        match self {
            Precision::F64 => 5e-324,
            Precision::F32 => f32::from_bits(1) as f64,
        }
    }

    /// The smallest positive normal number.
    pub fn min_positive(self) -> f64 {
        match self {
            Precision::F64 => f64::MIN_POSITIVE,
            Precision::F32 => f32::MIN_POSITIVE as f64,
        }
    }

    /// The largest finite number.
    pub fn max(self) -> f64 {
        match self {
            Precision::F64 => f64::MAX,
            Precision::F32 => f32::MAX as f64,
        }
    }

    /// The size of one element in bytes.
    pub fn bytes(self) -> usize {
        match self {
            Precision::F64 => 8,
            Precision::F32 => 4,
        }
    }

    /// The numpy name: `"float64"` or `"float32"`.
    pub fn numpy_name(self) -> &'static str {
        match self {
            Precision::F64 => "float64",
            Precision::F32 => "float32",
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Precision::F64 => "f64",
            Precision::F32 => "f32",
        })
    }
}

impl FromStr for Precision {
    type Err = String;
    /// `f64`/`float64` or `f32`/`float32`.
    fn from_str(s: &str) -> Result<Precision, String> {
        match s {
            "f64" | "float64" => Ok(Precision::F64),
            "f32" | "float32" => Ok(Precision::F32),
            _ => Err(format!("unknown dtype `{s}` (expected f32 or f64)")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Precision;

    #[test]
    fn rounding_and_range() {
        let p = Precision::F32;
        assert_eq!(p.round(0.1), 0.1f32 as f64);
        assert!(p.holds(0.5) && !p.holds(0.1));
        assert_eq!(p.round(1e39), f64::INFINITY);
        assert_eq!(Precision::F64.round(0.1), 0.1);
        assert_eq!("float32".parse::<Precision>(), Ok(Precision::F32));
        assert!("f16".parse::<Precision>().is_err());
    }
}
