//! Borrowed arguments and output buffers of a kernel call: [`Arg`] and
//! [`ArgMut`] hold `ndarray` views of any layout (C, Fortran, transposed,
//! sliced with steps, negative strides), which the kernel reads and writes
//! in place — no copy, no allocation for the arguments themselves.
//!
//! They mirror [`crate::interp::Value`] at the call boundary: a number, an array,
//! or a pair (a tensor of pairs `[n](R,R)` travels as a pair of arrays).
//! A 0-dimensional array is accepted wherever a number is (as for
//! `Value`), which is how a number result is written into a buffer.
//!
//! Owns the conversion of caller values into views; it must not check
//! signatures (`super`) nor run code.

use crate::interp::value::{AsOperand, AsOperandMut, Operand, OperandMut};
use ndarray::{ArrayViewD, ArrayViewMutD};
use std::convert::Infallible;

/// A borrowed argument of [`super::Kernel::call_args`](crate::jit::Kernel::call_args): read in place.
#[derive(Clone, Debug)]
pub enum Arg<'a> {
    /// A number (parameter type `R`).
    Real(f64),
    /// An array of any layout (strides in elements, of any sign).
    Array(ArrayViewD<'a, f64>),
    /// A pair (a tuple parameter, or a tensor of pairs as a pair of arrays).
    Pair(Box<Arg<'a>>, Box<Arg<'a>>),
}

impl<'a> Arg<'a> {
    /// `Arg::Pair` of two arguments.
    pub fn pair(a: Arg<'a>, b: Arg<'a>) -> Arg<'a> {
        Arg::Pair(Box::new(a), Box::new(b))
    }
}

/// A borrowed output buffer of [`super::Kernel::call_args_into`](crate::jit::Kernel::call_args_into): the
/// result is written into it in place.
///
/// A result of type `R` (a number) goes into a 0-dimensional array view;
/// use [`super::Kernel::call_args`](crate::jit::Kernel::call_args) to get it back as a value instead.
#[derive(Debug)]
pub enum ArgMut<'a> {
    /// An array of any layout whose elements do not overlap (no zero
    /// stride on an axis of more than one element).
    Array(ArrayViewMutD<'a, f64>),
    /// A pair of buffers (a tuple result, or a tensor of pairs).
    Pair(Box<ArgMut<'a>>, Box<ArgMut<'a>>),
}

impl<'a> ArgMut<'a> {
    /// `ArgMut::Pair` of two buffers.
    pub fn pair(a: ArgMut<'a>, b: ArgMut<'a>) -> ArgMut<'a> {
        ArgMut::Pair(Box::new(a), Box::new(b))
    }
}

impl AsOperand for Arg<'_> {
    fn operand(&self) -> Operand<'_, Self> {
        match self {
            Arg::Real(x) => Operand::Real(x),
            Arg::Array(a) => Operand::Array {
                ptr: a.as_ptr(),
                shape: a.shape(),
                strides: a.strides(),
            },
            Arg::Pair(a, b) => Operand::Pair(a, b),
        }
    }
}

impl AsOperandMut for ArgMut<'_> {
    fn operand_mut(&mut self) -> OperandMut<'_, Self> {
        match self {
            ArgMut::Array(a) => {
                let ptr = a.as_mut_ptr();
                let a: &ArrayViewMutD<f64> = a;
                OperandMut::Array {
                    ptr,
                    shape: a.shape(),
                    strides: a.strides(),
                }
            }
            ArgMut::Pair(a, b) => OperandMut::Pair(a, b),
        }
    }
}

// ---------------------------------------------------------------------
// Idiomatic calls: arguments from ndarray arrays and views, typed results.

use crate::error::{Error, Result};
use crate::interp::Value;
use crate::precision::{IntElem, Precision};
use ndarray::{Array, ArrayBase, ArrayView, ArrayViewMut, Data, DataMut, Dimension};

/// Something that can be passed to a kernel without a copy: a reference to
/// any `ndarray` array or view of `f64` (any dimension, any layout), an
/// `ArrayView`, an `f64`, an [`Arg`], or a 2-tuple of these for a pair
/// parameter (a tensor of pairs is a pair of arrays).
///
/// Only `f64` elements: an `f32` array does not implement it (convert it
/// with `a.mapv(f64::from)`); the JIT computes in `f64` only.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed to an einsat kernel",
    note = "kernels take `&ArrayBase<_, _>` / `ArrayView` of f64 (any dimension, any layout), f64, or 2-tuples of these for pairs; f32 is not supported: convert with `a.mapv(f64::from)`"
)]
pub trait IntoArg<'a> {
    /// The borrowed argument.
    fn into_arg(self) -> Arg<'a>;

    /// Call `f` with the argument as the call boundary reads it (no
    /// dynamic-dimension view built: arrays and views lend their shape
    /// and strides for the call).
    #[doc(hidden)]
    fn with_arg_ref<R>(self, f: impl for<'r> FnOnce(ArgRef<'r>) -> R) -> R
    where
        Self: Sized,
    {
        let a = self.into_arg();
        f(ArgRef::of(&a))
    }
}

/// An argument at the call boundary of [`super::Kernel::eval`] and
/// [`super::Kernel::eval_into`]: like [`Arg`], but an array lends its
/// first element, shape and strides for the call instead of being turned
/// into an `ArrayViewD` (whose dynamic dimensions cost about as much as
/// the rest of a small call). Internal.
#[doc(hidden)]
pub type ArgRef<'a> = Bound<'a, *const f64, f64>;

/// An output buffer at the call boundary of [`super::Kernel::eval_into`]:
/// like [`ArgMut`], but lending its shape and strides as [`ArgRef`] does.
/// Internal.
#[doc(hidden)]
pub type ArgMutRef<'a> = Bound<'a, *mut f64, Infallible>;

/// [`ArgRef`] (`P = *const f64`, numbers allowed) and [`ArgMutRef`]
/// (`P = *mut f64`, no numbers: `R = Infallible`): one representation for
/// both. Internal.
#[doc(hidden)]
#[derive(Debug)]
pub struct Bound<'a, P, R>(Repr<'a, P, R>);

/// The forms of [`Bound`] (private: an `Array` is only ever built from a
/// live borrow of an array or view, so its pointer, shape and strides
/// agree, and the elements stay borrowed for `'a`).
#[derive(Debug)]
enum Repr<'a, P, R> {
    /// A number.
    Real(R),
    /// An array's first element, shape and strides.
    Array {
        ptr: P,
        shape: &'a [usize],
        strides: &'a [isize],
    },
    /// A pair.
    Pair(Box<Bound<'a, P, R>>, Box<Bound<'a, P, R>>),
}

impl<'a, P, R> Bound<'a, P, R> {
    fn real(x: R) -> Self {
        Bound(Repr::Real(x))
    }

    fn array(ptr: P, shape: &'a [usize], strides: &'a [isize]) -> Self {
        Bound(Repr::Array {
            ptr,
            shape,
            strides,
        })
    }

    fn pair(a: Self, b: Self) -> Self {
        Bound(Repr::Pair(Box::new(a), Box::new(b)))
    }
}

impl<'a> ArgRef<'a> {
    /// Borrowing an [`Arg`] (its pairs boxed again).
    fn of(a: &'a Arg<'_>) -> Self {
        match a {
            Arg::Real(x) => Bound::real(*x),
            Arg::Array(v) => Bound::array(v.as_ptr(), v.shape(), v.strides()),
            Arg::Pair(a, b) => Bound::pair(ArgRef::of(a), ArgRef::of(b)),
        }
    }
}

impl<'a> ArgMutRef<'a> {
    /// Borrowing an [`ArgMut`] (its pairs boxed again).
    fn of(a: &'a mut ArgMut<'_>) -> Self {
        match a {
            ArgMut::Array(v) => {
                let ptr = v.as_mut_ptr();
                let v: &'a ArrayViewMutD<f64> = v;
                Bound::array(ptr, v.shape(), v.strides())
            }
            ArgMut::Pair(a, b) => Bound::pair(ArgMutRef::of(a), ArgMutRef::of(b)),
        }
    }
}

impl AsOperand for ArgRef<'_> {
    #[inline]
    fn operand(&self) -> Operand<'_, Self> {
        match &self.0 {
            Repr::Real(x) => Operand::Real(x),
            Repr::Array {
                ptr,
                shape,
                strides,
            } => Operand::Array {
                ptr: *ptr,
                shape,
                strides,
            },
            Repr::Pair(a, b) => Operand::Pair(a, b),
        }
    }
}

impl AsOperandMut for ArgMutRef<'_> {
    #[inline]
    fn operand_mut(&mut self) -> OperandMut<'_, Self> {
        match &mut self.0 {
            Repr::Real(never) => match *never {},
            Repr::Array {
                ptr,
                shape,
                strides,
            } => OperandMut::Array {
                ptr: *ptr,
                shape,
                strides,
            },
            Repr::Pair(a, b) => OperandMut::Pair(a, b),
        }
    }
}

impl<'a, S: Data<Elem = f64>, D: Dimension> IntoArg<'a> for &'a ArrayBase<S, D> {
    fn into_arg(self) -> Arg<'a> {
        Arg::Array(self.view().into_dyn())
    }

    #[inline]
    fn with_arg_ref<R>(self, f: impl for<'r> FnOnce(ArgRef<'r>) -> R) -> R {
        f(Bound::array(self.as_ptr(), self.shape(), self.strides()))
    }
}

impl<'a, D: Dimension> IntoArg<'a> for ArrayView<'a, f64, D> {
    fn into_arg(self) -> Arg<'a> {
        Arg::Array(self.into_dyn())
    }

    #[inline]
    fn with_arg_ref<R>(self, f: impl for<'r> FnOnce(ArgRef<'r>) -> R) -> R {
        // the view lives here for the call: its elements stay borrowed
        // for `'a`, its shape and strides are lent
        f(Bound::array(self.as_ptr(), self.shape(), self.strides()))
    }
}

impl<'a> IntoArg<'a> for f64 {
    fn into_arg(self) -> Arg<'a> {
        Arg::Real(self)
    }

    #[inline]
    fn with_arg_ref<R>(self, f: impl for<'r> FnOnce(ArgRef<'r>) -> R) -> R {
        f(Bound::real(self))
    }
}

impl<'a> IntoArg<'a> for Arg<'a> {
    fn into_arg(self) -> Arg<'a> {
        self
    }
}

impl<'a, A: IntoArg<'a>, B: IntoArg<'a>> IntoArg<'a> for (A, B) {
    fn into_arg(self) -> Arg<'a> {
        Arg::pair(self.0.into_arg(), self.1.into_arg())
    }

    fn with_arg_ref<R>(self, f: impl for<'r> FnOnce(ArgRef<'r>) -> R) -> R {
        let (a, b) = self;
        a.with_arg_ref(move |a| b.with_arg_ref(move |b| f(Bound::pair(a, b))))
    }
}

/// The argument list of a call: a tuple of [`IntoArg`]s (`(&a, &x)`,
/// `(&a,)` for one argument), an array `[Arg; N]`, or a `Vec<Arg>`. Tuples
/// and arrays are built on the stack: no allocation unless a pair is
/// passed.
pub trait IntoArgs<'a> {
    /// Call `f` with the arguments as a slice.
    fn with_args<R>(self, f: impl FnOnce(&[Arg<'a>]) -> R) -> R;

    /// Call `refs` with the arguments as the call boundary reads them, or
    /// `args` with them as a slice of [`Arg`]s when that is what they
    /// are (either gets `s`).
    #[doc(hidden)]
    fn with_arg_refs<S, R>(
        self,
        s: S,
        refs: impl for<'r> FnOnce(S, &[ArgRef<'r>]) -> R,
        args: impl FnOnce(S, &[Arg<'a>]) -> R,
    ) -> R
    where
        Self: Sized,
    {
        let _ = refs;
        self.with_args(|a| args(s, a))
    }
}

impl<'a, const N: usize> IntoArgs<'a> for [Arg<'a>; N] {
    fn with_args<R>(self, f: impl FnOnce(&[Arg<'a>]) -> R) -> R {
        f(&self)
    }
}

impl<'a> IntoArgs<'a> for Vec<Arg<'a>> {
    fn with_args<R>(self, f: impl FnOnce(&[Arg<'a>]) -> R) -> R {
        f(&self)
    }
}

impl<'a> IntoArgs<'a> for () {
    fn with_args<R>(self, f: impl FnOnce(&[Arg<'a>]) -> R) -> R {
        f(&[])
    }
}

/// Convert the arguments one by one, each in the closure of the one
/// before (so each lends its shape and strides for the whole call), then
/// call `$f` on all of them.
macro_rules! nest_refs {
    ($f:ident, $s:ident; [$($r:ident),*];) => {
        $f($s, &[$($r),*])
    };
    ($f:ident, $s:ident; [$($r:ident),*]; $v:ident $($rest:ident)*) => {
        $v.with_arg_ref(move |$v| nest_refs!($f, $s; [$($r,)* $v]; $($rest)*))
    };
}

macro_rules! tuple_args {
    ($($t:ident $v:ident),+) => {
        impl<'a, $($t: IntoArg<'a>),+> IntoArgs<'a> for ($($t,)+) {
            fn with_args<R>(self, f: impl FnOnce(&[Arg<'a>]) -> R) -> R {
                let ($($v,)+) = self;
                f(&[$($v.into_arg()),+])
            }

            #[inline]
            fn with_arg_refs<S, R>(
                self,
                s: S,
                refs: impl for<'r> FnOnce(S, &[ArgRef<'r>]) -> R,
                _args: impl FnOnce(S, &[Arg<'a>]) -> R,
            ) -> R {
                let ($($v,)+) = self;
                nest_refs!(refs, s; []; $($v)+)
            }
        }
    };
}
tuple_args!(A a);
tuple_args!(A a, B b);
tuple_args!(A a, B b, C c);
tuple_args!(A a, B b, C c, D d);
tuple_args!(A a, B b, C c, D d, E e);
tuple_args!(A a, B b, C c, D d, E e, F f);
tuple_args!(A a, B b, C c, D d, E e, F f, G g);
tuple_args!(A a, B b, C c, D d, E e, F f, G g, H h);

/// An output buffer a kernel can write into: `&mut` any `ndarray` array or
/// mutable view of `f64` (any dimension, any layout without overlapping
/// elements), an `ArrayViewMut`, an [`ArgMut`], or a 2-tuple of these for
/// a tuple result. A number result goes into a 0-dimensional array.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot receive an einsat kernel's result",
    note = "results go into `&mut ArrayBase<_, _>` / `ArrayViewMut` of f64, or 2-tuples of these for tuple results"
)]
pub trait IntoArgMut<'a> {
    /// The borrowed output buffer.
    fn into_arg_mut(self) -> ArgMut<'a>;

    /// Call `f` with the buffer as the call boundary writes it (see
    /// [`IntoArg::with_arg_ref`]).
    #[doc(hidden)]
    fn with_arg_mut_ref<R>(self, f: impl for<'r> FnOnce(ArgMutRef<'r>) -> R) -> R
    where
        Self: Sized,
    {
        let mut a = self.into_arg_mut();
        f(ArgMutRef::of(&mut a))
    }
}

impl<'a, S: DataMut<Elem = f64>, D: Dimension> IntoArgMut<'a> for &'a mut ArrayBase<S, D> {
    fn into_arg_mut(self) -> ArgMut<'a> {
        ArgMut::Array(self.view_mut().into_dyn())
    }

    #[inline]
    fn with_arg_mut_ref<R>(self, f: impl for<'r> FnOnce(ArgMutRef<'r>) -> R) -> R {
        // the pointer first (it may make a shared array unique), then the
        // whole borrow is downgraded to lend the shape and strides
        let ptr = self.as_mut_ptr();
        let this: &'a ArrayBase<S, D> = self;
        f(Bound::array(ptr, this.shape(), this.strides()))
    }
}

impl<'a, D: Dimension> IntoArgMut<'a> for ArrayViewMut<'a, f64, D> {
    fn into_arg_mut(self) -> ArgMut<'a> {
        ArgMut::Array(self.into_dyn())
    }

    #[inline]
    fn with_arg_mut_ref<R>(mut self, f: impl for<'r> FnOnce(ArgMutRef<'r>) -> R) -> R {
        // the view lives here for the call: its elements stay mutably
        // borrowed for `'a` (written through the pointer only), its shape
        // and strides are lent
        let ptr = self.as_mut_ptr();
        f(Bound::array(ptr, self.shape(), self.strides()))
    }
}

impl<'a> IntoArgMut<'a> for ArgMut<'a> {
    fn into_arg_mut(self) -> ArgMut<'a> {
        self
    }
}

impl<'a, A: IntoArgMut<'a>, B: IntoArgMut<'a>> IntoArgMut<'a> for (A, B) {
    fn into_arg_mut(self) -> ArgMut<'a> {
        ArgMut::pair(self.0.into_arg_mut(), self.1.into_arg_mut())
    }

    fn with_arg_mut_ref<R>(self, f: impl for<'r> FnOnce(ArgMutRef<'r>) -> R) -> R {
        let (a, b) = self;
        a.with_arg_mut_ref(move |a| b.with_arg_mut_ref(move |b| f(Bound::pair(a, b))))
    }
}

/// A typed result of [`super::Kernel::eval`](crate::jit::Kernel::eval): `f64` for a number,
/// `Array<f64, D>` (`Array1<f64>`, `Array2<f64>`, `ArrayD<f64>`, …) for a
/// tensor, 2-tuples of these for a tuple result, or [`Value`] for any.
/// The conversion moves the result (no copy); a type that does not match
/// the function's result is an [`Error::Result`].
pub trait FromValue: Sized {
    /// Convert a kernel's result.
    fn from_value(v: Value) -> Result<Self>;

    /// Convert a number result (without building a [`Value`] when the
    /// requested type is `f64`).
    #[doc(hidden)]
    fn from_real(x: f64) -> Result<Self> {
        Self::from_value(Value::Real(x))
    }
}

fn wrong(want: &str, v: &Value) -> Error {
    Error::Result {
        expected: want.to_string(),
        found: crate::error::Found::of_value(v),
    }
}

impl FromValue for Value {
    fn from_value(v: Value) -> Result<Self> {
        Ok(v)
    }
}

impl FromValue for f64 {
    fn from_value(v: Value) -> Result<Self> {
        match v {
            Value::Real(x) => Ok(x),
            Value::Array(a) if a.ndim() == 0 => Ok(a[ndarray::IxDyn(&[])]),
            v => Err(wrong("a number (f64)", &v)),
        }
    }

    fn from_real(x: f64) -> Result<Self> {
        Ok(x)
    }
}

impl<D: Dimension> FromValue for Array<f64, D> {
    fn from_value(v: Value) -> Result<Self> {
        let want = || match D::NDIM {
            Some(n) => format!("an array with {n} dims"),
            None => "an array".to_string(),
        };
        match v {
            Value::Array(a) => match D::NDIM {
                Some(n) if n != a.ndim() => Err(wrong(&want(), &Value::Array(a))),
                _ => a
                    .into_dimensionality::<D>()
                    .map_err(|e| Error::Jit(format!("result conversion: {e}"))),
            },
            Value::Real(x) if D::NDIM.is_none_or(|n| n == 0) => {
                Array::from_elem(ndarray::IxDyn(&[]), x)
                    .into_dimensionality::<D>()
                    .map_err(|e| Error::Jit(format!("result conversion: {e}")))
            }
            v => Err(wrong(&want(), &v)),
        }
    }
}

impl<A: FromValue, B: FromValue> FromValue for (A, B) {
    fn from_value(v: Value) -> Result<Self> {
        match v {
            Value::Pair(a, b) => Ok((A::from_value(*a)?, B::from_value(*b)?)),
            v => Err(wrong("a pair", &v)),
        }
    }
}

// ---------------------------------------------------------------------
// Kernels compiled in `Precision::F32`: f32 arguments and results.

/// A borrowed argument of a kernel compiled in
/// [`Precision::F32`](crate::precision::Precision::F32)
/// ([`Kernel::call_f32`](crate::jit::Kernel::call_f32)): an `f32` number,
/// an `f32` array view of any layout (read in place, no copy), or a pair.
#[derive(Clone, Debug)]
pub enum Arg32<'a> {
    /// A number (parameter type `R`).
    Real(f32),
    /// An array of any layout (strides in elements, of any sign).
    Array(ArrayViewD<'a, f32>),
    /// A pair (a tuple parameter, or a tensor of pairs as a pair of arrays).
    Pair(Box<Arg32<'a>>, Box<Arg32<'a>>),
}

impl<'a> Arg32<'a> {
    /// `Arg32::Pair` of two arguments.
    pub fn pair(a: Arg32<'a>, b: Arg32<'a>) -> Arg32<'a> {
        Arg32::Pair(Box::new(a), Box::new(b))
    }
}

impl<'a, S: ndarray::Data<Elem = f32>, D: Dimension> From<&'a ArrayBase<S, D>> for Arg32<'a> {
    fn from(a: &'a ArrayBase<S, D>) -> Arg32<'a> {
        Arg32::Array(a.view().into_dyn())
    }
}

impl From<f32> for Arg32<'_> {
    fn from(x: f32) -> Self {
        Arg32::Real(x)
    }
}

/// The result of a kernel compiled in [`Precision::F32`](crate::precision::Precision::F32):
/// an `f32` number, an `f32` array (C order), or a pair.
#[derive(Clone, Debug, PartialEq)]
pub enum Value32 {
    /// A number.
    Real(f32),
    /// An array.
    Array(ndarray::ArrayD<f32>),
    /// A pair.
    Pair(Box<Value32>, Box<Value32>),
}

impl Value32 {
    /// `v` with every number rounded to `f32` (an explicit conversion,
    /// for callers holding `f64` data: the CLI's `--dtype f32`).
    pub fn rounded(v: &Value) -> Value32 {
        match v {
            Value::Real(x) => Value32::Real(*x as f32),
            Value::Array(a) => Value32::Array(a.mapv(|x| x as f32)),
            Value::Pair(a, b) => {
                Value32::Pair(Box::new(Value32::rounded(a)), Box::new(Value32::rounded(b)))
            }
        }
    }

    /// The same numbers as a [`Value`] (exact: every `f32` is an `f64`).
    pub fn to_value(&self) -> Value {
        match self {
            Value32::Real(x) => Value::Real(f64::from(*x)),
            Value32::Array(a) => Value::Array(a.mapv(f64::from)),
            Value32::Pair(a, b) => Value::pair(a.to_value(), b.to_value()),
        }
    }

    /// Borrowed as an argument of [`Kernel::call_f32`](crate::jit::Kernel::call_f32).
    pub fn as_arg(&self) -> Arg32<'_> {
        match self {
            Value32::Real(x) => Arg32::Real(*x),
            Value32::Array(a) => Arg32::Array(a.view()),
            Value32::Pair(a, b) => Arg32::pair(a.as_arg(), b.as_arg()),
        }
    }
}

/// The f64 cell an `f32` number travels in: its bits in the cell's first
/// four bytes (little-endian targets; the native code of an `F32` kernel
/// reads and writes four bytes at a number's address).
fn cell(x: f32) -> f64 {
    f64::from_bits(u64::from(x.to_bits()))
}

fn uncell(c: f64) -> f32 {
    f32::from_bits(c.to_bits() as u32)
}

/// An [`Arg32`] as the call boundary reads it: a number in an f64 cell
/// ([`cell`]), an array's first element (typed `*const f64` at the
/// boundary, which never reads through it), shape and strides. Internal.
pub(crate) enum Op32<'a> {
    Real(f64),
    Array {
        ptr: *const f64,
        shape: &'a [usize],
        strides: &'a [isize],
    },
    Pair(Box<Op32<'a>>, Box<Op32<'a>>),
}

impl<'a> Op32<'a> {
    pub(crate) fn of(a: &'a Arg32<'_>) -> Op32<'a> {
        match a {
            Arg32::Real(x) => Op32::Real(cell(*x)),
            Arg32::Array(v) => Op32::Array {
                ptr: v.as_ptr() as *const f64,
                shape: v.shape(),
                strides: v.strides(),
            },
            Arg32::Pair(a, b) => Op32::Pair(Box::new(Op32::of(a)), Box::new(Op32::of(b))),
        }
    }
}

impl AsOperand for Op32<'_> {
    fn operand(&self) -> Operand<'_, Self> {
        match self {
            Op32::Real(x) => Operand::Real(x),
            Op32::Array {
                ptr,
                shape,
                strides,
            } => Operand::Array {
                ptr: *ptr,
                shape,
                strides,
            },
            Op32::Pair(a, b) => Operand::Pair(a, b),
        }
    }
}

/// The output of an `F32` call, allocated by the kernel: numbers in
/// cells ([`cell`]), arrays of `f32` (C order). Internal.
pub(crate) enum Out32 {
    Real(f64),
    Array(ndarray::ArrayD<f32>),
    Pair(Box<Out32>, Box<Out32>),
}

impl Out32 {
    pub(crate) fn into_value(self) -> Value32 {
        match self {
            Out32::Real(c) => Value32::Real(uncell(c)),
            Out32::Array(a) => Value32::Array(a),
            Out32::Pair(a, b) => Value32::Pair(Box::new(a.into_value()), Box::new(b.into_value())),
        }
    }
}

/// An `f32` result array allocated without zeroing (C order), for a
/// kernel whose every call writes every element of its result (as
/// [`super::Fresh`] for `f64`): uninitialised until the call has run,
/// an array only then ([`Fresh32::assume_init`]).
pub(crate) struct Fresh32(ndarray::ArrayD<std::mem::MaybeUninit<f32>>);

impl Fresh32 {
    /// An array of `shape`, allocated fallibly.
    pub(crate) fn new(shape: &[usize]) -> crate::error::Result<Fresh32> {
        let n = crate::interp::value::checked_elements(shape)?;
        let what = || format!("the result (an f32 array of shape {shape:?})");
        let mut v: Vec<std::mem::MaybeUninit<f32>> = crate::mem::with_capacity(n, what)?;
        // SAFETY: the capacity is `n`, and a `MaybeUninit` needs no
        // initialisation.
        unsafe { v.set_len(n) };
        let a = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(shape), v)
            .map_err(|e| crate::error::Error::Call(format!("internal shape mismatch: {e}")))?;
        Ok(Fresh32(a))
    }

    /// The array, once every element has been written.
    ///
    /// # Safety
    /// Every element has been written (a call of a kernel that writes its
    /// whole result returned `Ok`).
    pub(crate) unsafe fn assume_init(self) -> ndarray::ArrayD<f32> {
        // SAFETY: the caller's promise.
        unsafe { self.0.assume_init() }
    }
}

impl AsOperandMut for Fresh32 {
    fn operand_mut(&mut self) -> OperandMut<'_, Self> {
        let ptr = self.0.as_mut_ptr() as *mut f64;
        let a: &ndarray::ArrayD<std::mem::MaybeUninit<f32>> = &self.0;
        OperandMut::Array {
            ptr,
            shape: a.shape(),
            strides: a.strides(),
        }
    }
}

impl AsOperandMut for Out32 {
    fn operand_mut(&mut self) -> OperandMut<'_, Self> {
        match self {
            Out32::Real(x) => OperandMut::Real(x),
            Out32::Array(a) => {
                let ptr = a.as_mut_ptr() as *mut f64;
                let a: &ndarray::ArrayD<f32> = a;
                OperandMut::Array {
                    ptr,
                    shape: a.shape(),
                    strides: a.strides(),
                }
            }
            Out32::Pair(a, b) => OperandMut::Pair(a, b),
        }
    }
}

// ---------------------------------------------------------------------
// Kernels compiled in an integer format (`Precision::I64`, `I32`).

/// A borrowed argument of a kernel compiled in an integer format
/// ([`Kernel::call_int`](crate::jit::Kernel::call_int)): a number, an
/// array view of any layout (read in place, no copy), or a pair, of the
/// element type `T` (`i64` for [`Precision::I64`](crate::precision::Precision::I64),
/// `i32` for `I32`).
#[derive(Clone, Debug)]
pub enum IntArg<'a, T> {
    /// A number (parameter type `R`).
    Int(T),
    /// An array of any layout (strides in elements, of any sign).
    Array(ArrayViewD<'a, T>),
    /// A pair (a tuple parameter, or a tensor of pairs as a pair of arrays).
    Pair(Box<IntArg<'a, T>>, Box<IntArg<'a, T>>),
}

impl<'a, T> IntArg<'a, T> {
    /// `IntArg::Pair` of two arguments.
    pub fn pair(a: IntArg<'a, T>, b: IntArg<'a, T>) -> IntArg<'a, T> {
        IntArg::Pair(Box::new(a), Box::new(b))
    }
}

impl<'a, T: IntElem, S: ndarray::Data<Elem = T>, D: Dimension> From<&'a ArrayBase<S, D>>
    for IntArg<'a, T>
{
    fn from(a: &'a ArrayBase<S, D>) -> IntArg<'a, T> {
        IntArg::Array(a.view().into_dyn())
    }
}

impl From<i64> for IntArg<'_, i64> {
    fn from(x: i64) -> Self {
        IntArg::Int(x)
    }
}

impl From<i32> for IntArg<'_, i32> {
    fn from(x: i32) -> Self {
        IntArg::Int(x)
    }
}

impl<T: IntElem> crate::interp::IntValue<T> {
    /// Borrowed as an argument of [`Kernel::call_int`](crate::jit::Kernel::call_int).
    pub fn as_arg(&self) -> IntArg<'_, T> {
        use crate::interp::IntValue;
        match self {
            IntValue::Int(x) => IntArg::Int(*x),
            IntValue::Array(a) => IntArg::Array(a.view()),
            IntValue::Pair(a, b) => IntArg::pair(a.as_arg(), b.as_arg()),
        }
    }
}

/// The f64 cell an integer number travels in: its bits in the cell's
/// first 8 (`i64`) or 4 (`i32`) bytes (little-endian targets).
fn icell<T: IntElem>(x: T) -> f64 {
    let bits = match T::PRECISION {
        Precision::I64 => x.to_i64() as u64,
        _ => u64::from(x.to_i64() as i32 as u32),
    };
    f64::from_bits(bits)
}

fn iuncell<T: IntElem>(c: f64) -> T {
    let bits = c.to_bits();
    match T::PRECISION {
        Precision::I64 => T::from_i64(bits as i64),
        _ => T::from_i64(i64::from(bits as u32 as i32)),
    }
}

impl<'a> Op32<'a> {
    /// An integer argument, with its numbers in cells ([`icell`]).
    pub(crate) fn of_int<T: IntElem>(a: &'a IntArg<'_, T>) -> Op32<'a> {
        match a {
            IntArg::Int(x) => Op32::Real(icell(*x)),
            IntArg::Array(v) => Op32::Array {
                ptr: v.as_ptr() as *const f64,
                shape: v.shape(),
                strides: v.strides(),
            },
            IntArg::Pair(a, b) => Op32::Pair(Box::new(Op32::of_int(a)), Box::new(Op32::of_int(b))),
        }
    }
}

/// The output of an integer call, allocated by the kernel: numbers in
/// cells ([`icell`]), arrays of `T` (C order). Internal.
pub(crate) enum OutInt<T> {
    Real(f64),
    Array(ndarray::ArrayD<T>),
    Pair(Box<OutInt<T>>, Box<OutInt<T>>),
}

impl<T: IntElem> OutInt<T> {
    pub(crate) fn into_value(self) -> crate::interp::IntValue<T> {
        use crate::interp::IntValue;
        match self {
            OutInt::Real(c) => IntValue::Int(iuncell(c)),
            OutInt::Array(a) => IntValue::Array(a),
            OutInt::Pair(a, b) => IntValue::pair(a.into_value(), b.into_value()),
        }
    }
}

impl<T> AsOperandMut for OutInt<T> {
    fn operand_mut(&mut self) -> OperandMut<'_, Self> {
        match self {
            OutInt::Real(x) => OperandMut::Real(x),
            OutInt::Array(a) => {
                let ptr = a.as_mut_ptr() as *mut f64;
                let a: &ndarray::ArrayD<T> = a;
                OperandMut::Array {
                    ptr,
                    shape: a.shape(),
                    strides: a.strides(),
                }
            }
            OutInt::Pair(a, b) => OperandMut::Pair(a, b),
        }
    }
}

#[cfg(test)]
mod int_tests {
    #[test]
    fn integer_cells_round_trip() {
        for x in [0i64, -1, i64::MIN, i64::MAX, 1 << 53 | 1] {
            assert_eq!(super::iuncell::<i64>(super::icell(x)), x);
        }
        for x in [0i32, -1, i32::MIN, i32::MAX] {
            let c = super::icell(x);
            assert_eq!(super::iuncell::<i32>(c), x);
            let b = c.to_ne_bytes();
            assert_eq!(i32::from_ne_bytes([b[0], b[1], b[2], b[3]]), x);
        }
    }
}

#[cfg(test)]
mod f32_tests {
    #[test]
    fn cells_round_trip() {
        for x in [0.0f32, -0.0, 1.5, f32::MAX, f32::NAN, f32::from_bits(1)] {
            let c = super::cell(x);
            assert_eq!(super::uncell(c).to_bits(), x.to_bits());
            // the first four bytes are the f32's
            let bytes = c.to_ne_bytes();
            assert_eq!(
                f32::from_ne_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]).to_bits(),
                x.to_bits()
            );
        }
    }
}
