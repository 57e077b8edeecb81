//! Typed kernel handles: [`TypedKernel<P, R>`] is a [`Kernel`] whose
//! parameter list `P` and result `R` are Rust types, checked against the
//! function's signature once, when the handle is made
//! ([`Kernel::typed`]), so that a call with the wrong number of arguments
//! or an array of the wrong rank does not compile, and a handle whose
//! types do not fit the function is refused with every mismatch named
//! before anything runs. Sizes still vary from call to call and are
//! checked on each call, as for [`Kernel::eval`].
//!
//! ```
//! use einsat::ndarray::{array, Array1, Array2};
//! let src = "fn mv(A: [n,m]R, x: [m]R) -> [n]R = gen(i:n) sum(j:m) A[i,j] * x[j]";
//! let k = einsat::compile_str(src, "mv", &Default::default())?;
//! let mv = k.typed::<(Array2<f64>, Array1<f64>), Array1<f64>>()?;
//! let y = mv.eval((&array![[1.0, 2.0], [3.0, 4.0]], &array![1.0, 1.0]))?;
//! assert_eq!(y, array![3.0, 7.0]);
//! // mv.eval((&array![1.0, 2.0], &array![1.0, 1.0])) does not compile:
//! // an Array1 where the handle says Array2
//! # Ok::<(), einsat::Error>(())
//! ```
//!
//! A call that does not fit the handle's types is a compile error:
//!
//! ```compile_fail
//! use einsat::ndarray::{array, Array1, Array2};
//! let src = "fn mv(A: [n,m]R, x: [m]R) -> [n]R = gen(i:n) sum(j:m) A[i,j] * x[j]";
//! let k = einsat::compile_str(src, "mv", &Default::default()).unwrap();
//! let mv = k.typed::<(Array2<f64>, Array1<f64>), Array1<f64>>().unwrap();
//! let _ = mv.eval((&array![1.0, 2.0], &array![1.0, 1.0])); // Array1 for A
//! ```
//!
//! ```compile_fail
//! use einsat::ndarray::{array, Array1, Array2};
//! let src = "fn mv(A: [n,m]R, x: [m]R) -> [n]R = gen(i:n) sum(j:m) A[i,j] * x[j]";
//! let k = einsat::compile_str(src, "mv", &Default::default()).unwrap();
//! let mv = k.typed::<(Array2<f64>, Array1<f64>), Array1<f64>>().unwrap();
//! let _ = mv.eval((&array![[1.0]],)); // one argument for two parameters
//! ```
//!
//! Parameter types ([`ParamType`]): `f64` for a number, `Array<f64, D>`
//! (`Array1<f64>`, `Array2<f64>`, …, `ArrayD<f64>` for any rank) for a
//! tensor, 2-tuples for pairs (a tensor of pairs is a pair of arrays), and
//! [`Value`] for anything (checked at call time only). Arguments
//! ([`ArgFor`]) are what [`Kernel::eval`] takes, restricted to the declared
//! types: `&` an array or an `ArrayView` of the parameter's dimension, an
//! `f64`, 2-tuples of these.

use super::arg::{FromValue, IntoArg, IntoArgMut, IntoArgs};
use crate::error::{Error, Result};
use crate::interp::value::Boundary;
use crate::interp::Value;
use crate::jit::run::kernel::Kernel;
use ndarray::{Array, ArrayBase, ArrayView, Data, Dimension};
use std::marker::PhantomData;
use std::sync::Arc;

/// What a Rust type says of a value at the call boundary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    /// A number (`f64`; a 0-dimensional array is accepted for it).
    Number,
    /// An array of this many dims (`None`: any).
    Array(Option<usize>),
    /// A pair.
    Pair(Box<Shape>, Box<Shape>),
    /// Anything ([`Value`]).
    Any,
}

impl Shape {
    /// Whether a value of boundary form `b` fits this shape.
    fn fits(&self, b: &Boundary) -> bool {
        match (self, b) {
            (Shape::Any, _) => true,
            (Shape::Number, Boundary::Array(s)) => s.is_empty(),
            (Shape::Array(None), Boundary::Array(_)) => true,
            (Shape::Array(Some(n)), Boundary::Array(s)) => *n == s.len(),
            (Shape::Pair(x, y), Boundary::Pair(a, b)) => x.fits(a) && y.fits(b),
            _ => false,
        }
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Shape::Number => write!(f, "a number (f64)"),
            Shape::Array(None) => write!(f, "an array of any rank"),
            Shape::Array(Some(1)) => write!(f, "an array of 1 dim"),
            Shape::Array(Some(n)) => write!(f, "an array of {n} dims"),
            Shape::Pair(a, b) => write!(f, "a pair ({a}, {b})"),
            Shape::Any => write!(f, "any value"),
        }
    }
}

/// A Rust type that stands for a parameter or result of a kernel in a
/// [`TypedKernel`]: `f64`, `Array<f64, D>`, [`Value`], or a 2-tuple of
/// these for a pair.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot stand for a kernel's parameter or result",
    note = "use f64, Array<f64, D> (Array1<f64>, Array2<f64>, ArrayD<f64>, …), einsat::Value, or a 2-tuple of these"
)]
pub trait ParamType {
    /// The values this type stands for.
    fn shape() -> Shape;
}

impl ParamType for f64 {
    fn shape() -> Shape {
        Shape::Number
    }
}

impl<D: Dimension> ParamType for Array<f64, D> {
    fn shape() -> Shape {
        Shape::Array(D::NDIM)
    }
}

impl ParamType for Value {
    fn shape() -> Shape {
        Shape::Any
    }
}

impl<A: ParamType, B: ParamType> ParamType for (A, B) {
    fn shape() -> Shape {
        Shape::Pair(Box::new(A::shape()), Box::new(B::shape()))
    }
}

/// A parameter list: a tuple of [`ParamType`]s (`()`, `(A,)`, `(A, B)`, …
/// up to 8).
pub trait ParamTypes {
    /// The shapes of the parameters, in order.
    fn shapes() -> Vec<Shape>;
}

/// An argument that may be passed for a parameter of type `P`: `&` an
/// array (or an `ArrayView`) of `P`'s dimension for `Array<f64, D>`, an
/// `f64` for `f64`, 2-tuples of these for pairs, any [`IntoArg`] for
/// [`Value`].
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be passed for a parameter of type `{P}`",
    note = "a parameter `Array<f64, D>` takes `&Array<f64, D>` or `ArrayView<f64, D>` of the same D; `f64` takes an f64"
)]
pub trait ArgFor<'a, P: ParamType>: IntoArg<'a> {}

impl<'a, S: Data<Elem = f64>, D: Dimension> ArgFor<'a, Array<f64, D>> for &'a ArrayBase<S, D> {}
impl<'a, D: Dimension> ArgFor<'a, Array<f64, D>> for ArrayView<'a, f64, D> {}
impl<'a> ArgFor<'a, f64> for f64 {}
impl<'a, T: IntoArg<'a>> ArgFor<'a, Value> for T {}
impl<'a, PA: ParamType, PB: ParamType, A: ArgFor<'a, PA>, B: ArgFor<'a, PB>> ArgFor<'a, (PA, PB)>
    for (A, B)
{
}

/// An argument list for the parameter list `P`: a tuple with one
/// [`ArgFor`] per parameter.
pub trait ArgsFor<'a, P: ParamTypes>: IntoArgs<'a> {}

impl ParamTypes for () {
    fn shapes() -> Vec<Shape> {
        Vec::new()
    }
}
impl<'a> ArgsFor<'a, ()> for () {}

macro_rules! typed_tuple {
    ($($p:ident $t:ident),+) => {
        impl<$($p: ParamType),+> ParamTypes for ($($p,)+) {
            fn shapes() -> Vec<Shape> {
                vec![$($p::shape()),+]
            }
        }
        impl<'a, $($p: ParamType, $t: ArgFor<'a, $p>),+> ArgsFor<'a, ($($p,)+)> for ($($t,)+) {}
    };
}
typed_tuple!(P0 T0);
typed_tuple!(P0 T0, P1 T1);
typed_tuple!(P0 T0, P1 T1, P2 T2);
typed_tuple!(P0 T0, P1 T1, P2 T2, P3 T3);
typed_tuple!(P0 T0, P1 T1, P2 T2, P3 T3, P4 T4);
typed_tuple!(P0 T0, P1 T1, P2 T2, P3 T3, P4 T4, P5 T5);
typed_tuple!(P0 T0, P1 T1, P2 T2, P3 T3, P4 T4, P5 T5, P6 T6);
typed_tuple!(P0 T0, P1 T1, P2 T2, P3 T3, P4 T4, P5 T5, P6 T6, P7 T7);

/// A kernel with its parameter list `P` and result `R` as Rust types,
/// checked against the function once ([`Kernel::typed`]). Cloning is
/// cheap (the kernel is shared).
pub struct TypedKernel<P, R> {
    kernel: Arc<Kernel>,
    types: PhantomData<fn(P) -> R>,
}

impl<P, R> Clone for TypedKernel<P, R> {
    fn clone(&self) -> Self {
        TypedKernel {
            kernel: self.kernel.clone(),
            types: PhantomData,
        }
    }
}

impl<P, R> std::fmt::Debug for TypedKernel<P, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TypedKernel")
            .field("function", &self.kernel.function().name)
            .finish()
    }
}

impl<P: ParamTypes, R: ParamType + FromValue> TypedKernel<P, R> {
    /// Run on arguments of the declared types (read in place, as
    /// [`Kernel::eval`]); only their sizes are checked here.
    pub fn eval<'a>(&self, args: impl ArgsFor<'a, P>) -> Result<R> {
        self.kernel.eval(args)
    }

    /// Run, writing the result into `out` (as [`Kernel::eval_into`]).
    pub fn eval_into<'a, 'b>(
        &self,
        args: impl ArgsFor<'a, P>,
        out: impl IntoArgMut<'b>,
    ) -> Result<()> {
        self.kernel.eval_into(args, out)
    }

    /// The kernel.
    pub fn kernel(&self) -> &Arc<Kernel> {
        &self.kernel
    }
}

impl Kernel {
    /// This kernel as a [`TypedKernel`] with parameter types `P` (a tuple)
    /// and result type `R`, after checking them against the function's
    /// signature: the number of parameters, and for each parameter and the
    /// result whether it is a number, an array of that rank or a pair.
    /// Every mismatch is listed in one [`Error::Signature`].
    pub fn typed<P: ParamTypes, R: ParamType + FromValue>(
        self: Arc<Self>,
    ) -> Result<TypedKernel<P, R>> {
        let f = self.function();
        let want = P::shapes();
        let mut problems = Vec::new();
        if want.len() != f.params.len() {
            problems.push(format!(
                "the handle has {} parameter{}, the function {}",
                want.len(),
                if want.len() == 1 { "" } else { "s" },
                f.params.len()
            ));
        }
        for (p, s) in f.params.iter().zip(&want) {
            if !s.fits(&Boundary::of(&p.ty)) {
                problems.push(format!(
                    "parameter `{}` is {} but the handle says {s}",
                    p.name,
                    crate::syntax::printer::print_type(&p.ty)
                ));
            }
        }
        if !R::shape().fits(&self.result) {
            problems.push(format!(
                "the result is {} but the handle says {}",
                self.result_type(),
                R::shape()
            ));
        }
        if problems.is_empty() {
            Ok(TypedKernel {
                kernel: self,
                types: PhantomData,
            })
        } else {
            Err(Error::Signature {
                function: f.name.clone(),
                problems,
            })
        }
    }

    /// The function's result type as written, or its boundary form when
    /// it was inferred.
    fn result_type(&self) -> String {
        match &self.function().ret {
            Some(t) => crate::syntax::printer::print_type(t),
            None => match &self.result {
                Boundary::Array(s) if s.is_empty() => "R".to_string(),
                Boundary::Array(s) => format!("an array of {} dims", s.len()),
                Boundary::Pair(..) => "a pair".to_string(),
            },
        }
    }
}
