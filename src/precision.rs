//! The number format a program is evaluated and compiled in.
//!
//! The language has one number type `R`; its format is chosen per run or
//! compilation, like `jax.jit` specialising on dtypes: [`Precision::F64`]
//! (the default, IEEE binary64), [`Precision::F32`] (binary32), or one of
//! the integer formats [`Precision::I64`] and [`Precision::I32`] (two's
//! complement, wrapping like numpy's integer arrays), which only programs
//! passing [`crate::types::integral()`] may use. Within one run every value
//! is of that format: literals and inputs are rounded to it (a float
//! format) or must be its integers, and every operation's result is
//! rounded (wrapped) to it (see `docs/language.md`, "Precision"). Depends
//! on nothing.

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
    /// 64-bit two's complement integers (`i64`), wrapping on overflow.
    I64,
    /// 32-bit two's complement integers (`i32`), wrapping on overflow.
    I32,
}

impl Precision {
    /// Whether this is an integer format ([`Precision::I64`], [`Precision::I32`]).
    pub fn is_int(self) -> bool {
        matches!(self, Precision::I64 | Precision::I32)
    }

    /// The width of an integer format in bits (64 for the float formats,
    /// which have none: callers ask only integer formats).
    pub fn int_bits(self) -> u32 {
        match self {
            Precision::I32 => 32,
            _ => 64,
        }
    }

    /// `x` wrapped to the integer format (two's complement): itself in
    /// `I64`, its low 32 bits sign-extended in `I32` (and the float formats).
    #[inline]
    pub fn wrap(self, x: i64) -> i64 {
        match self {
            Precision::I64 => x,
            _ => x as i32 as i64,
        }
    }

    /// `x` rounded to the format (round to nearest even; beyond the
    /// format's range an infinity). For `F32`, `(a op b)` computed in
    /// `f64` from `f32` operands and then rounded is the correctly rounded
    /// `f32` result of `+ - * /` and `sqrt` (53 ≥ 2·24 + 2).
    #[inline]
    pub fn round(self, x: f64) -> f64 {
        match self {
            Precision::F32 => x as f32 as f64,
            _ => x,
        }
    }

    /// Whether `x` is a value of the format (NaN and infinities are).
    pub fn holds(self, x: f64) -> bool {
        x.is_nan() || self.round(x) == x
    }

    /// The unit roundoff `u` (half the machine epsilon): 2⁻⁵³ or 2⁻²⁴.
    pub fn unit_roundoff(self) -> f64 {
        match self {
            Precision::F32 => f32::EPSILON as f64 / 2.0,
            _ => f64::EPSILON / 2.0,
        }
    }

    /// The smallest positive subnormal (the absolute error an underflow may
    /// cause).
    pub fn smallest_subnormal(self) -> f64 {
        match self {
            Precision::F32 => f32::from_bits(1) as f64,
            _ => 5e-324,
        }
    }

    /// The smallest positive normal number.
    pub fn min_positive(self) -> f64 {
        match self {
            Precision::F32 => f32::MIN_POSITIVE as f64,
            _ => f64::MIN_POSITIVE,
        }
    }

    /// The largest finite number.
    pub fn max(self) -> f64 {
        match self {
            Precision::F32 => f32::MAX as f64,
            _ => f64::MAX,
        }
    }

    /// The size of one element in bytes.
    pub fn bytes(self) -> usize {
        match self {
            Precision::F64 | Precision::I64 => 8,
            Precision::F32 | Precision::I32 => 4,
        }
    }

    /// The numpy name: `"float64"`, `"float32"`, `"int64"` or `"int32"`.
    pub fn numpy_name(self) -> &'static str {
        match self {
            Precision::F64 => "float64",
            Precision::F32 => "float32",
            Precision::I64 => "int64",
            Precision::I32 => "int32",
        }
    }
}

/// `1 / c` when dividing by `c` is multiplying by it bit for bit in both
/// float formats: `c` is `±2^e` with `|e| <= 126`, so `1 / c` is a normal
/// number of binary32 and binary64, and `x / c` and `x * (1 / c)` are both
/// the correctly rounded value of the same real number for every `x`
/// (also where it underflows or overflows; ±0, ±∞ and NaN alike). Used
/// where a product's written division by a constant becomes the GEMM
/// library's scale factor (`extract::normal`, `jit::schedule::gemm`).
pub fn exact_reciprocal(c: f64) -> Option<f64> {
    let bits = c.abs().to_bits();
    let mantissa = bits & ((1u64 << 52) - 1);
    let exponent = (bits >> 52) as i64 - 1023;
    (c.is_normal() && mantissa == 0 && (-126..=126).contains(&exponent)).then(|| 1.0 / c)
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Precision::F64 => "f64",
            Precision::F32 => "f32",
            Precision::I64 => "i64",
            Precision::I32 => "i32",
        })
    }
}

impl FromStr for Precision {
    type Err = String;
    /// `f64`/`float64`, `f32`/`float32`, `i64`/`int64` or `i32`/`int32`.
    fn from_str(s: &str) -> Result<Precision, String> {
        match s {
            "f64" | "float64" => Ok(Precision::F64),
            "f32" | "float32" => Ok(Precision::F32),
            "i64" | "int64" => Ok(Precision::I64),
            "i32" | "int32" => Ok(Precision::I32),
            _ => Err(format!(
                "unknown dtype `{s}` (expected f64, f32, i64 or i32)"
            )),
        }
    }
}

/// An element type of the integer formats: `i64` ([`Precision::I64`]) or
/// `i32` ([`Precision::I32`]), the numbers of integer programs at the call
/// boundary (`interp::run_int`, `jit::Kernel::call_int`).
pub trait IntElem:
    Copy + fmt::Debug + Default + PartialEq + Send + Sync + 'static + sealed::Sealed
{
    /// The format of this element type.
    const PRECISION: Precision;
    /// The value as an `i64` (exact).
    fn to_i64(self) -> i64;
    /// `x` wrapped to the type (two's complement).
    fn from_i64(x: i64) -> Self;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for i64 {}
    impl Sealed for i32 {}
}

impl IntElem for i64 {
    const PRECISION: Precision = Precision::I64;
    fn to_i64(self) -> i64 {
        self
    }
    fn from_i64(x: i64) -> i64 {
        x
    }
}

impl IntElem for i32 {
    const PRECISION: Precision = Precision::I32;
    fn to_i64(self) -> i64 {
        i64::from(self)
    }
    fn from_i64(x: i64) -> i32 {
        x as i32
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
        assert_eq!("int32".parse::<Precision>(), Ok(Precision::I32));
        assert_eq!(
            Precision::I32.wrap(i64::from(i32::MAX) + 1),
            i64::from(i32::MIN)
        );
        assert_eq!(Precision::I64.wrap(i64::MIN), i64::MIN);
        assert!(Precision::I64.is_int() && !Precision::F32.is_int());
    }
}
