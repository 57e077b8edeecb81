//! Values at the call boundary and the checks that bind arguments to a
//! function's parameters.
//!
//! At the boundary a number is a `Real`, a tensor of numbers is an `ndarray`
//! array of any strides, and anything holding pairs is a `Pair` of values:
//! a tensor of pairs `[n](R,R)` travels as a pair of arrays (struct of
//! arrays). [`bind`] checks rank, shape and size-name consistency and
//! resolves every size name; every engine calls it before running.

use crate::error::{Error, Found, Result};
use crate::precision::Precision;
use crate::syntax::ast::{Function, Size, Type};
use crate::syntax::printer::print_type;
use ndarray::ArrayD;
use std::collections::BTreeMap;

/// A value passed to or returned from a function.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A number.
    Real(f64),
    /// An array of numbers (any dimension, any layout).
    Array(ArrayD<f64>),
    /// A pair.
    Pair(Box<Value>, Box<Value>),
}

impl Value {
    /// `(a, b)`.
    pub fn pair(a: Value, b: Value) -> Value {
        Value::Pair(Box::new(a), Box::new(b))
    }
    /// Nested JSON lists; pairs become 2-element lists.
    pub fn to_json(&self) -> serde_json::Value {
        fn arr(a: ndarray::ArrayViewD<f64>) -> serde_json::Value {
            if a.ndim() == 0 {
                return num(a[ndarray::IxDyn(&[])]);
            }
            serde_json::Value::Array(a.outer_iter().map(arr).collect())
        }
        fn num(x: f64) -> serde_json::Value {
            serde_json::Number::from_f64(x)
                .map(serde_json::Value::Number)
                .unwrap_or_else(|| serde_json::Value::String(format!("{x}")))
        }
        match self {
            Value::Real(x) => num(*x),
            Value::Array(a) => arr(a.view()),
            Value::Pair(a, b) => serde_json::Value::Array(vec![a.to_json(), b.to_json()]),
        }
    }
    /// Write [`Value::to_json`]'s text to `w` as it goes, without building
    /// the JSON tree (which takes several times the array's memory).
    pub fn write_json(&self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        self.write_json_in(w, Precision::F64)
    }

    /// [`Value::write_json`] for the result of a run in precision `p`: in
    /// [`Precision::F32`] every number is an `f32` and is written as the
    /// shortest text that reads back as that `f32` (`0.1`, not the `f64`
    /// digits `0.10000000149011612` of the same value); in the integer
    /// formats every number is an integer and is written as one (`3`,
    /// not `3.0`).
    pub fn write_json_in(&self, w: &mut dyn std::io::Write, p: Precision) -> std::io::Result<()> {
        fn num(x: f64, p: Precision, w: &mut dyn std::io::Write) -> std::io::Result<()> {
            if !x.is_finite() {
                return write!(w, "{}", serde_json::Value::String(format!("{x}")));
            }
            if p == Precision::F32 {
                serde_json::to_writer(&mut *w, &(x as f32)).map_err(std::io::Error::other)
            } else if p.is_int() {
                write!(w, "{}", x as i64)
            } else {
                serde_json::to_writer(&mut *w, &x).map_err(std::io::Error::other)
            }
        }
        fn arr(
            a: ndarray::ArrayViewD<f64>,
            p: Precision,
            w: &mut dyn std::io::Write,
        ) -> std::io::Result<()> {
            if a.ndim() == 0 {
                return num(a[ndarray::IxDyn(&[])], p, w);
            }
            w.write_all(b"[")?;
            for (k, row) in a.outer_iter().enumerate() {
                if k > 0 {
                    w.write_all(b",")?;
                }
                arr(row, p, w)?;
            }
            w.write_all(b"]")
        }
        match self {
            Value::Real(x) => num(*x, p, w),
            Value::Array(a) => arr(a.view(), p, w),
            Value::Pair(a, b) => {
                w.write_all(b"[")?;
                a.write_json_in(w, p)?;
                w.write_all(b",")?;
                b.write_json_in(w, p)?;
                w.write_all(b"]")
            }
        }
    }

    /// The value as text (what `Display` prints) for the result of a run in
    /// precision `p`: in [`Precision::F32`] each number is printed as the
    /// shortest text that reads back as its `f32`.
    pub fn display_in(&self, p: Precision) -> impl std::fmt::Display + '_ {
        DisplayIn(self, p)
    }

    /// Compare with a relative tolerance (`|a-b| <= rtol·max(|a|,|b|) + atol`);
    /// NaNs compare equal to NaNs.
    pub fn approx_eq(&self, other: &Value, rtol: f64, atol: f64) -> bool {
        fn close(a: f64, b: f64, rtol: f64, atol: f64) -> bool {
            if a.is_nan() || b.is_nan() {
                return a.is_nan() && b.is_nan();
            }
            if a == b {
                return true;
            }
            if a.is_infinite() || b.is_infinite() {
                return false;
            }
            (a - b).abs() <= rtol * a.abs().max(b.abs()) + atol
        }
        match (self, other) {
            (Value::Real(a), Value::Real(b)) => close(*a, *b, rtol, atol),
            (Value::Array(a), Value::Array(b)) => {
                a.shape() == b.shape()
                    && a.iter()
                        .zip(b.iter())
                        .all(|(x, y)| close(*x, *y, rtol, atol))
            }
            (Value::Pair(a0, a1), Value::Pair(b0, b1)) => {
                a0.approx_eq(b0, rtol, atol) && a1.approx_eq(b1, rtol, atol)
            }
            _ => false,
        }
    }
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        DisplayIn(self, Precision::F64).fmt(f)
    }
}

/// [`Value::display_in`]'s text.
struct DisplayIn<'a>(&'a Value, Precision);

impl std::fmt::Display for DisplayIn<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        fn num(x: f64, p: Precision, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            if p == Precision::F32 {
                write!(f, "{}", x as f32)
            } else {
                write!(f, "{x}")
            }
        }
        fn arr(
            a: ndarray::ArrayViewD<f64>,
            p: Precision,
            f: &mut std::fmt::Formatter<'_>,
        ) -> std::fmt::Result {
            if a.ndim() == 0 {
                return num(a[ndarray::IxDyn(&[])], p, f);
            }
            write!(f, "[")?;
            for (k, row) in a.outer_iter().enumerate() {
                if k > 0 {
                    write!(f, ", ")?;
                }
                arr(row, p, f)?;
            }
            write!(f, "]")
        }
        let p = self.1;
        match self.0 {
            Value::Real(x) => num(*x, p, f),
            Value::Array(a) => arr(a.view(), p, f),
            Value::Pair(a, b) => write!(f, "({}, {})", a.display_in(p), b.display_in(p)),
        }
    }
}

impl Found {
    /// What `v` is (here, beside [`Value`], so that the error module
    /// depends on nothing of the interpreter).
    pub fn of_value(v: &Value) -> Found {
        match v {
            Value::Real(_) => Found::Number,
            Value::Array(a) => Found::Array(a.shape().to_vec()),
            Value::Pair(..) => Found::Pair,
        }
    }
}

/// How a type travels across the boundary: an array of some sizes (no sizes:
/// a number) or a pair of such.
#[derive(Clone, Debug, PartialEq)]
pub enum Boundary {
    /// An array of this shape (no axes: a number).
    Array(Vec<Size>),
    /// A pair.
    Pair(Box<Boundary>, Box<Boundary>),
}

impl Boundary {
    /// The boundary form of a type: tensors of pairs become pairs of tensors.
    pub fn of(t: &Type) -> Boundary {
        match t {
            Type::Real | Type::Int => Boundary::Array(vec![]),
            Type::Pair(a, b) => {
                Boundary::Pair(Box::new(Boundary::of(a)), Box::new(Boundary::of(b)))
            }
            Type::Tensor(n, e) => Boundary::of(e).prefixed(n),
        }
    }
    fn prefixed(self, n: &Size) -> Boundary {
        match self {
            Boundary::Array(mut s) => {
                s.insert(0, n.clone());
                Boundary::Array(s)
            }
            Boundary::Pair(a, b) => {
                Boundary::Pair(Box::new(a.prefixed(n)), Box::new(b.prefixed(n)))
            }
        }
    }
}

/// Size names resolved from the arguments' shapes.
pub type Sizes = BTreeMap<String, usize>;

/// The largest number of elements one tensor may have (2^31 f64s = 16 GiB):
/// larger declared or computed sizes are refused before anything is allocated.
pub const MAX_ELEMENTS: u128 = 1 << 31;

/// Resolve a size with the bound size names.
pub fn resolve(n: &Size, sizes: &Sizes) -> Result<usize> {
    match n {
        Size::Lit(k) => Ok(*k),
        Size::Named(s) => sizes
            .get(s)
            .copied()
            .ok_or_else(|| Error::UnboundSize { size: s.clone() }),
    }
}

/// What a value at the call boundary is, seen without copying it: a
/// number, a strided array (first element, shape, strides in elements of
/// any sign), or a pair. Implemented by [`Value`] and by the borrowed
/// [`crate::jit::Arg`], so the checks and the JIT read both in place.
pub(crate) enum Operand<'v, T: ?Sized> {
    Real(&'v f64),
    Array {
        ptr: *const f64,
        shape: &'v [usize],
        strides: &'v [isize],
    },
    Pair(&'v T, &'v T),
}

/// A value at the call boundary, read in place ([`Operand`]).
pub(crate) trait AsOperand {
    fn operand(&self) -> Operand<'_, Self>;
}

/// An output buffer at the call boundary, written in place.
pub(crate) enum OperandMut<'v, T: ?Sized> {
    Real(&'v mut f64),
    Array {
        ptr: *mut f64,
        shape: &'v [usize],
        strides: &'v [isize],
    },
    Pair(&'v mut T, &'v mut T),
}

/// An output buffer at the call boundary ([`OperandMut`]).
pub(crate) trait AsOperandMut {
    fn operand_mut(&mut self) -> OperandMut<'_, Self>;
}

/// A value of an integer program at the call boundary
/// ([`crate::interp::run_int`], [`crate::jit::Kernel::call_int`]): a number,
/// an array of any layout, or a pair, of the element type `T` (`i64` or
/// `i32`, [`crate::precision::IntElem`]).
#[derive(Clone, Debug, PartialEq)]
pub enum IntValue<T> {
    /// A number.
    Int(T),
    /// An array (any dimension, any layout).
    Array(ArrayD<T>),
    /// A pair.
    Pair(Box<IntValue<T>>, Box<IntValue<T>>),
}

/// The largest magnitude up to which every integer is an `f64`: 2^53.
const EXACT_INT: u64 = 1 << 53;

impl<T: crate::precision::IntElem> IntValue<T> {
    /// `(a, b)`.
    pub fn pair(a: IntValue<T>, b: IntValue<T>) -> IntValue<T> {
        IntValue::Pair(Box::new(a), Box::new(b))
    }

    /// The same numbers as a [`Value`] (exact below 2^53 in magnitude,
    /// the nearest `f64` beyond).
    pub fn to_value(&self) -> Value {
        match self {
            IntValue::Int(x) => Value::Real(x.to_i64() as f64),
            IntValue::Array(a) => Value::Array(a.mapv(|x| x.to_i64() as f64)),
            IntValue::Pair(a, b) => Value::pair(a.to_value(), b.to_value()),
        }
    }

    /// [`IntValue::to_value`], refusing a number beyond 2^53 in magnitude
    /// (where `f64` would round it) with an error naming it.
    pub fn to_value_exact(&self) -> Result<Value> {
        let exact = |x: T| -> Result<f64> {
            let x = x.to_i64();
            if x.unsigned_abs() <= EXACT_INT {
                Ok(x as f64)
            } else {
                Err(Error::Call(format!(
                    "the result holds {x}, beyond 2^53: a float64 number would round it (the CLI writes numbers as float64); take the result with `interp::run_int` or `Kernel::call_int`, or from Python, which keep integers exact"
                )))
            }
        };
        Ok(match self {
            IntValue::Int(x) => Value::Real(exact(*x)?),
            IntValue::Array(a) => {
                let mut data = Vec::with_capacity(a.len());
                for &x in a.iter() {
                    data.push(exact(x)?);
                }
                Value::Array(
                    ArrayD::from_shape_vec(a.raw_dim(), data)
                        .map_err(|e| Error::Call(format!("internal shape mismatch: {e}")))?,
                )
            }
            IntValue::Pair(a, b) => Value::pair(a.to_value_exact()?, b.to_value_exact()?),
        })
    }

    /// `v`'s numbers as integers of `T`, or an error naming the first
    /// number that is not an integer of `T`'s range (an explicit
    /// conversion, for callers holding `f64` data: the CLI's `--dtype i64`).
    /// A number of 2^53 or more in magnitude is refused too: it may be a
    /// rounded integer (2^53 + 1 becomes 2^53 in `f64`, as the CLI's
    /// reading of a larger int64 would make it).
    pub fn from_value(v: &Value) -> Result<IntValue<T>> {
        let p = T::PRECISION;
        let conv = |x: f64| -> Result<T> {
            if x.abs() >= EXACT_INT as f64 {
                Err(Error::Call(format!(
                    "{x} is beyond 2^53: a float64 number of 2^53 or more may be a rounded integer (2^53 + 1 reads as 2^53) (the CLI reads numbers as float64); pass integers to `interp::run_int` or `Kernel::call_int`, or call from Python, which keep them exact"
                )))
            } else if crate::types::integral::literal_fits(x, p) {
                Ok(T::from_i64(x as i64))
            } else {
                Err(Error::Call(format!(
                    "{x} is not an integer of {p}: an integer program's arguments are integers"
                )))
            }
        };
        Ok(match v {
            Value::Real(x) => IntValue::Int(conv(*x)?),
            Value::Array(a) => {
                let mut data = Vec::with_capacity(a.len());
                for &x in a.iter() {
                    data.push(conv(x)?);
                }
                IntValue::Array(
                    ArrayD::from_shape_vec(a.raw_dim(), data)
                        .map_err(|e| Error::Call(format!("internal shape mismatch: {e}")))?,
                )
            }
            Value::Pair(a, b) => IntValue::pair(IntValue::from_value(a)?, IntValue::from_value(b)?),
        })
    }
}

/// The boundary checks read shapes only: a number's cell is a zero, an
/// array's pointer is never read through.
impl<T> AsOperand for IntValue<T> {
    fn operand(&self) -> Operand<'_, Self> {
        match self {
            IntValue::Int(_) => Operand::Real(&0.0),
            IntValue::Array(a) => Operand::Array {
                ptr: a.as_ptr() as *const f64,
                shape: a.shape(),
                strides: a.strides(),
            },
            IntValue::Pair(a, b) => Operand::Pair(a, b),
        }
    }
}

impl AsOperand for Value {
    fn operand(&self) -> Operand<'_, Value> {
        match self {
            Value::Real(x) => Operand::Real(x),
            Value::Array(a) => Operand::Array {
                ptr: a.as_ptr(),
                shape: a.shape(),
                strides: a.strides(),
            },
            Value::Pair(a, b) => Operand::Pair(a, b),
        }
    }
}

impl AsOperandMut for Value {
    fn operand_mut(&mut self) -> OperandMut<'_, Value> {
        match self {
            Value::Real(x) => OperandMut::Real(x),
            Value::Array(a) => {
                let ptr = a.as_mut_ptr();
                let a: &ArrayD<f64> = a;
                OperandMut::Array {
                    ptr,
                    shape: a.shape(),
                    strides: a.strides(),
                }
            }
            Value::Pair(a, b) => OperandMut::Pair(a, b),
        }
    }
}

/// Where a value being checked sits: argument `arg` (described by
/// `describe_arg`, written only for an error message) and the path of
/// pair components inside it (`.0.1`).
#[derive(Clone, Copy)]
struct Place<'a> {
    arg: usize,
    path: &'a str,
    describe_arg: &'a dyn Fn(usize) -> String,
}

impl<'a> Place<'a> {
    fn describe(&self) -> String {
        (self.describe_arg)(self.arg) + self.path
    }
    fn with_path(self, path: &'a str) -> Place<'a> {
        Place { path, ..self }
    }
}

fn check_value<V: AsOperand + ?Sized>(
    v: &V,
    b: &Boundary,
    at: Place<'_>,
    sizes: &mut Sizes,
    origin: &mut BTreeMap<String, (usize, String)>,
) -> Result<()> {
    let what = || at.describe();
    match (b, v.operand()) {
        (Boundary::Array(s), Operand::Real(_)) if s.is_empty() => Ok(()),
        (Boundary::Array(s), Operand::Array { shape, .. }) => {
            if shape.len() != s.len() {
                return Err(Error::Rank {
                    argument: what(),
                    expected: s.len(),
                    found: Found::Array(shape.to_vec()),
                });
            }
            for (axis, (want, &got)) in s.iter().zip(shape).enumerate() {
                // index variables stay below 2^31 (the index-range proof
                // of the type checker relies on it), even on empty arrays
                if got as u128 > MAX_ELEMENTS {
                    return Err(Error::TooLarge {
                        what: format!("{}: axis {axis}", what()),
                        elements: got as u128,
                        limit: MAX_ELEMENTS,
                    });
                }
                match want {
                    Size::Lit(k) if *k != got => {
                        return Err(Error::Shape {
                            argument: what(),
                            axis,
                            expected: *k,
                            got,
                        })
                    }
                    Size::Lit(_) => {}
                    Size::Named(n) => match sizes.get(n) {
                        Some(&prev) if prev != got => {
                            return Err(Error::SizeName {
                                size: n.clone(),
                                first: prev,
                                first_argument: {
                                    let (arg, path) = &origin[n];
                                    (at.describe_arg)(*arg) + path
                                },
                                got,
                                argument: what(),
                                axis,
                            })
                        }
                        Some(_) => {}
                        None => {
                            sizes.insert(n.clone(), got);
                            origin.insert(n.clone(), (at.arg, at.path.to_string()));
                        }
                    },
                }
            }
            // and at most MAX_ELEMENTS in all (a zero-stride view makes a
            // huge array cheap: its loops would run for ages)
            let elements = shape
                .iter()
                .fold(1u128, |a, &d| a.saturating_mul(d as u128));
            if elements > MAX_ELEMENTS {
                return Err(Error::TooLarge {
                    what: format!("{} (shape {shape:?})", what()),
                    elements,
                    limit: MAX_ELEMENTS,
                });
            }
            Ok(())
        }
        (Boundary::Pair(b0, b1), Operand::Pair(v0, v1)) => {
            let p0 = format!("{}.0", at.path);
            let p1 = format!("{}.1", at.path);
            check_value(v0, b0, at.with_path(&p0), sizes, origin)?;
            check_value(v1, b1, at.with_path(&p1), sizes, origin)
        }
        (Boundary::Pair(..), _) => Err(Error::NotPair {
            argument: what(),
            found: found(v),
        }),
        (Boundary::Array(s), _) => Err(Error::Rank {
            argument: what(),
            expected: s.len(),
            found: found(v),
        }),
    }
}

/// What a boundary value is, for error messages.
pub(crate) fn found<V: AsOperand + ?Sized>(v: &V) -> Found {
    match v.operand() {
        Operand::Real(_) => Found::Number,
        Operand::Array { shape, .. } => Found::Array(shape.to_vec()),
        Operand::Pair(..) => Found::Pair,
    }
}

/// Check `args` (positional) against `f`'s parameters and resolve the size
/// names. Also refuses a declared result whose size would be absurd.
pub fn bind(f: &Function, args: &[Value]) -> Result<Sizes> {
    bind_operands(f, args)
}

/// [`bind`] for any boundary values (values or borrowed arguments).
pub(crate) fn bind_operands<V: AsOperand>(f: &Function, args: &[V]) -> Result<Sizes> {
    if args.len() != f.params.len() {
        return Err(Error::Arity {
            function: f.name.clone(),
            expected: f.params.len(),
            got: args.len(),
        });
    }
    let mut sizes = Sizes::new();
    let mut origin = BTreeMap::new();
    let describe = |k: usize| {
        let p = &f.params[k];
        format!("argument `{}` ({})", p.name, print_type(&p.ty))
    };
    for (k, (p, v)) in f.params.iter().zip(args).enumerate() {
        let at = Place {
            arg: k,
            path: "",
            describe_arg: &describe,
        };
        check_value(v, &Boundary::of(&p.ty), at, &mut sizes, &mut origin)?;
    }
    Ok(sizes)
}

/// Order named arguments by the function's parameters.
pub fn order_named(f: &Function, mut named: BTreeMap<String, Value>) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    for p in &f.params {
        match named.remove(&p.name) {
            Some(v) => out.push(v),
            None => {
                return Err(Error::MissingArgument {
                    function: f.name.clone(),
                    parameter: p.name.clone(),
                    ty: print_type(&p.ty),
                })
            }
        }
    }
    if let Some(k) = named.keys().next() {
        return Err(Error::UnknownArgument {
            function: f.name.clone(),
            name: k.clone(),
            parameters: f.params.iter().map(|p| p.name.clone()).collect(),
        });
    }
    Ok(out)
}

/// Number of f64 elements of a resolved boundary shape, refusing overflow and
/// sizes above [`MAX_ELEMENTS`].
pub fn checked_elements(shape: &[usize]) -> Result<usize> {
    let mut n: u128 = 1;
    for &d in shape {
        n = n.saturating_mul(d as u128);
    }
    if n > MAX_ELEMENTS {
        return Err(Error::TooLarge {
            what: format!("a tensor of shape {shape:?}"),
            elements: n,
            limit: MAX_ELEMENTS,
        });
    }
    Ok(n as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{ArrayD, IxDyn};

    fn array(shape: &[usize]) -> Value {
        Value::Array(ArrayD::zeros(IxDyn(shape)))
    }

    #[test]
    fn a_size_name_bound_twice_names_both_arguments_and_pair_components() {
        let f = crate::load("fn f(p: ([n]R, [m]R), y: [m]R) -> R = sum(i:n) p.0[i]")
            .unwrap()
            .functions
            .remove(0);
        let args = [Value::pair(array(&[2]), array(&[3])), array(&[4])];
        match bind(&f, &args) {
            Err(Error::SizeName {
                size,
                first,
                first_argument,
                got,
                argument,
                axis,
            }) => {
                assert_eq!((size.as_str(), first, got, axis), ("m", 3, 4, 0));
                assert_eq!(first_argument, "argument `p` (([n]R, [m]R)).1");
                assert_eq!(argument, "argument `y` ([m]R)");
            }
            other => panic!("{other:?}"),
        }
        // consistent arguments bind every name
        let ok = [Value::pair(array(&[2]), array(&[3])), array(&[3])];
        let sizes = bind(&f, &ok).unwrap();
        assert_eq!((sizes["n"], sizes["m"]), (2, 3));
    }
}
