//! Reading one Python argument as an operand of one element type (f64,
//! f32, i64 or i32), and building a kernel argument of a parameter's
//! boundary form from the operands: the parts the float64, float32 and
//! integer paths share. Each path keeps its own rule for Python numbers
//! and for which arrays it accepts; this module owns borrowing in place,
//! converting a copy, and the errors those give.

use super::{fail, numpy, Exc, Res};
use einsat::interp::Boundary;
use ndarray::{ArrayViewD, IxDyn};
use numpy::npyffi::NPY_ARRAY_ALIGNED;
use numpy::{
    Element, PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArray,
    PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use std::fmt::Display;

/// An argument read as `T`: a number, or an array borrowed (in place, or
/// a converted copy).
pub(crate) enum Operand<'py, T: Element> {
    Num(T),
    Array(PyReadonlyArrayDyn<'py, T>),
}

impl<T: Element> Operand<'_, T> {
    /// The shape (`[]` for a number).
    pub(crate) fn shape(&self) -> &[usize] {
        match self {
            Operand::Num(_) => &[],
            Operand::Array(a) => a.shape(),
        }
    }
}

/// Whether an array of `T` can be read in place: aligned, at most 32 axes,
/// every stride a whole number of elements.
pub(crate) fn viewable<T: Element>(a: &Bound<'_, PyArrayDyn<T>>) -> bool {
    // SAFETY: `a` is a live numpy array; the flags field is plain data.
    let aligned = unsafe { (*a.as_array_ptr()).flags } & NPY_ARRAY_ALIGNED != 0;
    let size = std::mem::size_of::<T>() as isize;
    aligned && a.ndim() <= 32 && a.strides().iter().all(|s| s % size == 0)
}

/// A read borrow of `a` (an error when another call is writing it).
pub(crate) fn borrow<'py, T: Element>(
    a: &Bound<'py, PyArrayDyn<T>>,
    what: &dyn Display,
) -> Res<PyReadonlyArrayDyn<'py, T>> {
    a.try_readonly().map_err(|e| {
        fail(
            Exc::Shape,
            format!("{what}: the array cannot be read ({e}): it is being written by another call"),
        )
    })
}

/// `obj` as an array of `T` read in place, when it is one that can be.
pub(crate) fn in_place<'py, T: Element>(
    obj: &Bound<'py, PyAny>,
    what: &dyn Display,
) -> Res<Option<Operand<'py, T>>> {
    match obj.cast::<PyArrayDyn<T>>() {
        Ok(a) if viewable(a) => Ok(Some(Operand::Array(borrow(a, what)?))),
        _ => Ok(None),
    }
}

/// `obj` converted to a fresh, aligned, C-order array of numpy dtype
/// `dtype` (`T`'s). With `only_numbers`, arrays whose dtype is not bool,
/// integer or float are refused (`DTypeError`, "not supported") instead
/// of converted. Numpy's MemoryError, converting a large argument, stays
/// one.
pub(crate) fn converted<'py, T: Element>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    what: &dyn Display,
    dtype: &str,
    only_numbers: bool,
) -> Res<Operand<'py, T>> {
    let py_err = |e: PyErr| {
        let exc = if e.is_instance_of::<pyo3::exceptions::PyMemoryError>(py) {
            Exc::Memory
        } else {
            Exc::DType
        };
        fail(exc, format!("{what}: {e}"))
    };
    let np = numpy(py).map_err(py_err)?;
    let arr = match obj.cast::<PyUntypedArray>() {
        Ok(a) => a.clone(),
        Err(_) => np
            .call_method1("asarray", (obj,))
            .and_then(|a| a.cast_into::<PyUntypedArray>().map_err(PyErr::from))
            .map_err(py_err)?,
    };
    if only_numbers && !matches!(arr.dtype().kind() as char, 'b' | 'i' | 'u' | 'f') {
        let name = arr.dtype().str().map(|s| s.to_string()).unwrap_or_default();
        return Err(fail(
            Exc::DType,
            format!(
                "{what}: arrays of dtype `{name}` are not supported (einsat converts only bool, integer and float arrays)"
            ),
        ));
    }
    if arr.ndim() > 32 {
        return Err(fail(
            Exc::Shape,
            format!("{what}: {} axes is more than the limit of 32", arr.ndim()),
        ));
    }
    let conv = np
        .call_method1("array", (&arr, np.getattr(dtype).map_err(py_err)?))
        .and_then(|a| a.cast_into::<PyArrayDyn<T>>().map_err(PyErr::from))
        .map_err(py_err)?;
    Ok(Operand::Array(borrow(&conv, what)?))
}

/// How a kernel argument of one element type is made from its leaves.
pub(crate) trait Assemble<'a, T> {
    fn number(x: T) -> Self;
    fn array(a: ArrayViewD<'a, T>) -> Self;
    fn pair(a: Self, b: Self) -> Self;
}

/// The argument of boundary form `b` from the operands at `*next` (a 0-d
/// array for a number parameter is that number).
pub(crate) fn assemble<'a, T: Element + Copy, A: Assemble<'a, T>>(
    b: &Boundary,
    ops: &'a [Operand<'_, T>],
    next: &mut usize,
) -> A {
    match b {
        Boundary::Array(s) => {
            let op = &ops[*next];
            *next += 1;
            match op {
                Operand::Num(x) => A::number(*x),
                Operand::Array(a) if s.is_empty() && a.ndim() == 0 => {
                    A::number(a.as_array()[IxDyn(&[])])
                }
                Operand::Array(a) => A::array(a.as_array()),
            }
        }
        Boundary::Pair(x, y) => {
            let a = assemble(x, ops, next);
            let c = assemble(y, ops, next);
            A::pair(a, c)
        }
    }
}
