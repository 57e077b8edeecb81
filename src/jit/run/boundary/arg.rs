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
