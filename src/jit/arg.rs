//! Borrowed arguments and output buffers of a kernel call: [`Arg`] and
//! [`ArgMut`] hold `ndarray` views of any layout (C, Fortran, transposed,
//! sliced with steps, negative strides), which the kernel reads and writes
//! in place — no copy, no allocation for the arguments themselves.
//!
//! They mirror [`crate::Value`] at the call boundary: a number, an array,
//! or a pair (a tensor of pairs `[n](R,R)` travels as a pair of arrays).
//! A 0-dimensional array is accepted wherever a number is (as for
//! `Value`), which is how a number result is written into a buffer.

use crate::interp::value::{AsOperand, AsOperandMut, Operand, OperandMut};
use ndarray::{ArrayViewD, ArrayViewMutD};
use std::convert::Infallible;

/// A borrowed argument of [`super::Kernel::call_args`]: read in place.
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

/// A borrowed output buffer of [`super::Kernel::call_args_into`]: the
/// result is written into it in place.
///
/// A result of type `R` (a number) goes into a 0-dimensional array view;
/// use [`super::Kernel::call_args`] to get it back as a value instead.
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

    /// The argument as the call boundary reads it (no dynamic-dimension
    /// view built when the shape and strides can be borrowed).
    #[doc(hidden)]
    fn into_arg_ref(self) -> ArgRef<'a>
    where
        Self: Sized,
    {
        ArgRef::from(self.into_arg())
    }
}

/// The most axes of a view passed by value whose shape and strides are
/// copied into the argument itself (more go through an `ArrayViewD`).
const INLINE: usize = 4;

/// An argument at the call boundary of [`super::Kernel::eval`] and
/// [`super::Kernel::eval_into`]: like [`Arg`], but an array passed by
/// reference lends its shape and strides, and a view of at most four
/// axes passed by value carries them inline, instead of being turned into
/// an `ArrayViewD` (whose dynamic dimensions cost about as much as the
/// rest of a small call). Internal.
#[doc(hidden)]
pub type ArgRef<'a> = Bound<'a, *const f64, ArrayViewD<'a, f64>, f64>;

/// An output buffer at the call boundary of [`super::Kernel::eval_into`]:
/// like [`ArgMut`], but lending or carrying its shape and strides as
/// [`ArgRef`] does. Internal.
#[doc(hidden)]
pub type ArgMutRef<'a> = Bound<'a, *mut f64, ArrayViewMutD<'a, f64>, Infallible>;

/// [`ArgRef`] (`P = *const f64`, numbers allowed) and [`ArgMutRef`]
/// (`P = *mut f64`, no numbers: `R = Infallible`): one representation for
/// both. Internal.
#[doc(hidden)]
#[derive(Debug)]
pub struct Bound<'a, P, V, R>(Repr<'a, P, V, R>);

/// The forms of [`Bound`] (private: a `Borrowed` or `Inline` array is only
/// ever built from a live borrow of an array or view, so its pointer,
/// shape and strides agree).
#[derive(Debug)]
enum Repr<'a, P, V, R> {
    /// A number.
    Real(R),
    /// An array.
    Array(Strided<'a, P, V>),
    /// A pair.
    Pair(Box<Bound<'a, P, V, R>>, Box<Bound<'a, P, V, R>>),
}

/// An array's first element, shape and strides, in one of three forms.
#[derive(Debug)]
enum Strided<'a, P, V> {
    /// Borrowed for `'a` from the caller's array.
    Borrowed {
        ptr: P,
        shape: &'a [usize],
        strides: &'a [isize],
    },
    /// Copied from a view of at most [`INLINE`] axes passed by value.
    Inline {
        ptr: P,
        ndim: usize,
        shape: [usize; INLINE],
        strides: [isize; INLINE],
    },
    /// A dynamic-dimension view (as an [`Arg`] or [`ArgMut`] holds it).
    View(V),
}

/// The dynamic-dimension views a [`Strided`] may hold.
trait ViewParts {
    type Ptr: Copy;
    fn parts(&self) -> (Self::Ptr, &[usize], &[isize]);
}

impl ViewParts for ArrayViewD<'_, f64> {
    type Ptr = *const f64;
    fn parts(&self) -> (*const f64, &[usize], &[isize]) {
        (self.as_ptr(), self.shape(), self.strides())
    }
}

impl ViewParts for ArrayViewMutD<'_, f64> {
    type Ptr = *mut f64;
    fn parts(&self) -> (*mut f64, &[usize], &[isize]) {
        // the view's own pointer (what `as_mut_ptr` returns for a view),
        // written through only while the buffer is mutably borrowed
        (self.as_ptr().cast_mut(), self.shape(), self.strides())
    }
}

impl<P: Copy, V: ViewParts<Ptr = P>> Strided<'_, P, V> {
    fn parts(&self) -> (P, &[usize], &[isize]) {
        match self {
            Strided::Borrowed {
                ptr,
                shape,
                strides,
            } => (*ptr, shape, strides),
            Strided::Inline {
                ptr,
                ndim,
                shape,
                strides,
            } => (*ptr, &shape[..*ndim], &strides[..*ndim]),
            Strided::View(v) => v.parts(),
        }
    }
}

impl<'a, P, V, R> Bound<'a, P, V, R> {
    fn real(x: R) -> Self {
        Bound(Repr::Real(x))
    }

    fn borrowed(ptr: P, shape: &'a [usize], strides: &'a [isize]) -> Self {
        Bound(Repr::Array(Strided::Borrowed {
            ptr,
            shape,
            strides,
        }))
    }

    /// A view passed by value, its shape and strides copied inline (if
    /// it has at most [`INLINE`] axes).
    fn inline(ptr: P, shape: &[usize], strides: &[isize]) -> Option<Self> {
        let n = shape.len();
        if n > INLINE || strides.len() != n {
            return None;
        }
        let mut s = [0; INLINE];
        let mut st = [0; INLINE];
        s[..n].copy_from_slice(shape);
        st[..n].copy_from_slice(strides);
        Some(Bound(Repr::Array(Strided::Inline {
            ptr,
            ndim: n,
            shape: s,
            strides: st,
        })))
    }

    fn view(v: V) -> Self {
        Bound(Repr::Array(Strided::View(v)))
    }

    fn pair(a: Self, b: Self) -> Self {
        Bound(Repr::Pair(Box::new(a), Box::new(b)))
    }
}

impl<'a> From<Arg<'a>> for ArgRef<'a> {
    fn from(a: Arg<'a>) -> Self {
        match a {
            Arg::Real(x) => Bound::real(x),
            Arg::Array(v) => Bound::view(v),
            Arg::Pair(a, b) => Bound::pair((*a).into(), (*b).into()),
        }
    }
}

impl<'a> From<ArgMut<'a>> for ArgMutRef<'a> {
    fn from(a: ArgMut<'a>) -> Self {
        match a {
            ArgMut::Array(v) => Bound::view(v),
            ArgMut::Pair(a, b) => Bound::pair((*a).into(), (*b).into()),
        }
    }
}

impl AsOperand for ArgRef<'_> {
    fn operand(&self) -> Operand<'_, Self> {
        match &self.0 {
            Repr::Real(x) => Operand::Real(x),
            Repr::Array(a) => {
                let (ptr, shape, strides) = a.parts();
                Operand::Array {
                    ptr,
                    shape,
                    strides,
                }
            }
            Repr::Pair(a, b) => Operand::Pair(a, b),
        }
    }
}

impl AsOperandMut for ArgMutRef<'_> {
    fn operand_mut(&mut self) -> OperandMut<'_, Self> {
        match &mut self.0 {
            Repr::Real(never) => match *never {},
            Repr::Array(a) => {
                let (ptr, shape, strides) = a.parts();
                OperandMut::Array {
                    ptr,
                    shape,
                    strides,
                }
            }
            Repr::Pair(a, b) => OperandMut::Pair(a, b),
        }
    }
}

impl<'a, S: Data<Elem = f64>, D: Dimension> IntoArg<'a> for &'a ArrayBase<S, D> {
    fn into_arg(self) -> Arg<'a> {
        Arg::Array(self.view().into_dyn())
    }

    fn into_arg_ref(self) -> ArgRef<'a> {
        Bound::borrowed(self.as_ptr(), self.shape(), self.strides())
    }
}

impl<'a, D: Dimension> IntoArg<'a> for ArrayView<'a, f64, D> {
    fn into_arg(self) -> Arg<'a> {
        Arg::Array(self.into_dyn())
    }

    fn into_arg_ref(self) -> ArgRef<'a> {
        Bound::inline(self.as_ptr(), self.shape(), self.strides())
            .unwrap_or_else(|| Bound::view(self.into_dyn()))
    }
}

impl<'a> IntoArg<'a> for f64 {
    fn into_arg(self) -> Arg<'a> {
        Arg::Real(self)
    }

    fn into_arg_ref(self) -> ArgRef<'a> {
        Bound::real(self)
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

    fn into_arg_ref(self) -> ArgRef<'a> {
        Bound::pair(self.0.into_arg_ref(), self.1.into_arg_ref())
    }
}

/// The argument list of a call: a tuple of [`IntoArg`]s (`(&a, &x)`,
/// `(&a,)` for one argument), an array `[Arg; N]`, or a `Vec<Arg>`. Tuples
/// and arrays are built on the stack: no allocation unless a pair is
/// passed.
pub trait IntoArgs<'a> {
    /// Call `f` with the arguments as a slice.
    fn with_args<R>(self, f: impl FnOnce(&[Arg<'a>]) -> R) -> R;

    /// Call `f` with the arguments as the call boundary reads them.
    #[doc(hidden)]
    fn with_arg_refs<R>(self, f: impl FnOnce(&[ArgRef<'a>]) -> R) -> R
    where
        Self: Sized,
    {
        self.with_args(|a| {
            let a: Vec<ArgRef<'a>> = a.iter().cloned().map(ArgRef::from).collect();
            f(&a)
        })
    }
}

impl<'a, const N: usize> IntoArgs<'a> for [Arg<'a>; N] {
    fn with_args<R>(self, f: impl FnOnce(&[Arg<'a>]) -> R) -> R {
        f(&self)
    }

    fn with_arg_refs<R>(self, f: impl FnOnce(&[ArgRef<'a>]) -> R) -> R {
        f(&self.map(ArgRef::from))
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

    fn with_arg_refs<R>(self, f: impl FnOnce(&[ArgRef<'a>]) -> R) -> R {
        f(&[])
    }
}

macro_rules! tuple_args {
    ($($t:ident $v:ident),+) => {
        impl<'a, $($t: IntoArg<'a>),+> IntoArgs<'a> for ($($t,)+) {
            fn with_args<R>(self, f: impl FnOnce(&[Arg<'a>]) -> R) -> R {
                let ($($v,)+) = self;
                f(&[$($v.into_arg()),+])
            }

            fn with_arg_refs<R>(self, f: impl FnOnce(&[ArgRef<'a>]) -> R) -> R {
                let ($($v,)+) = self;
                f(&[$($v.into_arg_ref()),+])
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

    /// The buffer as the call boundary writes it (see [`ArgRef`]).
    #[doc(hidden)]
    fn into_arg_mut_ref(self) -> ArgMutRef<'a>
    where
        Self: Sized,
    {
        ArgMutRef::from(self.into_arg_mut())
    }
}

impl<'a, S: DataMut<Elem = f64>, D: Dimension> IntoArgMut<'a> for &'a mut ArrayBase<S, D> {
    fn into_arg_mut(self) -> ArgMut<'a> {
        ArgMut::Array(self.view_mut().into_dyn())
    }

    fn into_arg_mut_ref(self) -> ArgMutRef<'a> {
        // the pointer first (it may make a shared array unique), then the
        // whole borrow is downgraded to lend the shape and strides
        let ptr = self.as_mut_ptr();
        let this: &'a ArrayBase<S, D> = self;
        Bound::borrowed(ptr, this.shape(), this.strides())
    }
}

impl<'a, D: Dimension> IntoArgMut<'a> for ArrayViewMut<'a, f64, D> {
    fn into_arg_mut(self) -> ArgMut<'a> {
        ArgMut::Array(self.into_dyn())
    }

    fn into_arg_mut_ref(mut self) -> ArgMutRef<'a> {
        // the view is consumed: its elements stay borrowed for `'a`
        // through the returned buffer
        let ptr = self.as_mut_ptr();
        Bound::inline(ptr, self.shape(), self.strides())
            .unwrap_or_else(|| Bound::view(self.into_dyn()))
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

    fn into_arg_mut_ref(self) -> ArgMutRef<'a> {
        Bound::pair(self.0.into_arg_mut_ref(), self.1.into_arg_mut_ref())
    }
}

/// A typed result of [`super::Kernel::eval`]: `f64` for a number,
/// `Array<f64, D>` (`Array1<f64>`, `Array2<f64>`, `ArrayD<f64>`, …) for a
/// tensor, 2-tuples of these for a tuple result, or [`Value`] for any.
/// The conversion moves the result (no copy); a type that does not match
/// the function's result is an [`Error::Result`].
pub trait FromValue: Sized {
    /// Convert a kernel's result.
    fn from_value(v: Value) -> Result<Self>;
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
