//! Programs on integer arrays: a `Kernel` called with arguments whose
//! numpy result dtype (`np.result_type` of the array arguments; Python
//! ints are weak, as NEP 50 makes them) is int64 or int32, on a program
//! that passes the integrality check (`einsat::types::integral`: `+ - *`,
//! `max`/`min`, comparisons, `where`, `fold`, sums, integer literals),
//! computes exactly in that width on a kernel compiled for
//! `Precision::I64`/`I32` (on first such call), wrapping on overflow as
//! numpy's integer arrays do, and returns that dtype (numpy scalars for
//! numbers). Arrays of the dtype are read in place (any strides); other
//! integer and bool arrays are converted to it (a safe cast, as the
//! result dtype says). Every other case keeps the float64 path: a program
//! with `/` or a function (numpy's promotion gives float64 there), a
//! Python float among the arguments, other result dtypes (int8, int16,
//! unsigned, bool, and uint64 with int64, which numpy makes float64).
//! Index arrays of gathers do not take part in the result dtype; they are
//! passed in the width after a check ([`super::index`]: within int32 for
//! int32, whole numbers for float index arrays).

use super::float32::leaves_of;
use super::operand::{self, Assemble, Operand};
use super::{fail, from_einsat, native, numpy, run_call, Exc, Kernel, Res};
use einsat::interp::IntValue;
use einsat::jit::IntArg;
use einsat::{jit, opt, IntElem, Precision};
use ndarray::ArrayViewD;
use numpy::{Element, PyArrayDyn};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyTuple};
use std::sync::Arc;

/// The integer format of a call: `Some(I64 | I32)` when the arguments'
/// result dtype is int64 or int32 and no Python float is among them,
/// else `None` (the float64 path).
pub(super) fn wanted(py: Python<'_>, args: &[Bound<'_, PyAny>]) -> Option<Precision> {
    // a Python float makes numpy's integer arithmetic float64
    if args.iter().any(|a| a.is_instance_of::<PyFloat>()) {
        return None;
    }
    match super::float32::result_kind(py, args)? {
        (k, 8) if k == "i" => Some(Precision::I64),
        (k, 4) if k == "i" => Some(Precision::I32),
        _ => None,
    }
}

/// An argument read as integers of `T`: a number, or an array borrowed
/// in place (of `T`, aligned) or converted to a copy of `T`.
fn operand<'py, T: IntElem + Element>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    what: &str,
) -> Res<Operand<'py, T>> {
    if let Some(op) = operand::in_place(obj, &what)? {
        return Ok(op);
    }
    if obj.is_instance_of::<PyInt>() || obj.is_instance_of::<PyBool>() {
        let x: i64 = obj.extract().map_err(|e| {
            fail(
                Exc::DType,
                format!("{what}: {e} (a Python integer beyond int64)"),
            )
        })?;
        if T::from_i64(x).to_i64() != x {
            return Err(fail(
                Exc::DType,
                format!(
                    "{what}: the Python integer {x} is out of bounds for {} (as numpy refuses it)",
                    T::PRECISION.numpy_name()
                ),
            ));
        }
        return Ok(Operand::Num(T::from_i64(x)));
    }
    // (the result dtype chose this path: bool and integer arrays only)
    operand::converted(py, obj, &what, T::PRECISION.numpy_name(), false)
}

impl<'a, T: IntElem + Element> Assemble<'a, T> for IntArg<'a, T> {
    fn number(x: T) -> Self {
        IntArg::Int(x)
    }
    fn array(a: ArrayViewD<'a, T>) -> Self {
        IntArg::Array(a)
    }
    fn pair(a: Self, b: Self) -> Self {
        IntArg::pair(a, b)
    }
}

fn to_py<T: IntElem + Element>(py: Python<'_>, v: IntValue<T>) -> PyResult<Py<PyAny>> {
    let np = numpy(py)?;
    Ok(match v {
        IntValue::Int(x) => np
            .getattr(T::PRECISION.numpy_name())?
            .call1((x.to_i64(),))?
            .unbind(),
        IntValue::Array(a) => PyArrayDyn::from_owned_array(py, a).into_any().unbind(),
        IntValue::Pair(a, b) => PyTuple::new(py, [to_py(py, *a)?, to_py(py, *b)?])?
            .into_any()
            .unbind(),
    })
}

impl Kernel {
    /// The kernel compiled for the integer format `p` (on first use; GIL
    /// released), or `None` when the program is not integral.
    fn kernel_int(&self, py: Python<'_>, p: Precision) -> Res<Option<Arc<jit::Kernel>>> {
        let cell = &self.kernels_int[usize::from(p == Precision::I32)];
        if let Some(k) = cell.get() {
            return Ok(k.clone());
        }
        let (f, how) = (&self.func, self.how);
        let k = if einsat::types::is_integral(f, p) {
            Some(native(py, || {
                let o = opt::optimize(
                    f,
                    &opt::Options {
                        precision: p,
                        ..opt::Options::default()
                    },
                )
                .map_err(|e| from_einsat(e, None))?;
                jit::compile_with(
                    &o.program,
                    &jit::Options {
                        threads: how.threads,
                        precision: p,
                        ..jit::Options::default()
                    },
                )
                .map_err(|e| from_einsat(e, None))
            })?)
        } else {
            None
        };
        Ok(cell.get_or_init(|| k).clone())
    }

    /// The call in the integer format `p`, with every parameter given
    /// (`given`, in order); `None` when the program is not integral (the
    /// caller takes the float64 path).
    pub(super) fn call_int(
        &self,
        py: Python<'_>,
        given: &[Bound<'_, PyAny>],
        p: Precision,
    ) -> Res<Option<PyResult<Py<PyAny>>>> {
        let Some(kernel) = self.kernel_int(py, p)? else {
            return Ok(None);
        };
        Ok(Some(match p {
            Precision::I32 => self.call_as::<i32>(py, given, &kernel)?,
            _ => self.call_as::<i64>(py, given, &kernel)?,
        }))
    }

    fn call_as<T: IntElem + Element>(
        &self,
        py: Python<'_>,
        given: &[Bound<'_, PyAny>],
        kernel: &jit::Kernel,
    ) -> Res<PyResult<Py<PyAny>>> {
        let mut ops = Vec::new();
        for (at, ((name, b), g)) in self.params.iter().zip(given).enumerate() {
            let mut ls = Vec::new();
            leaves_of(g, b, &mut ls);
            for (k, l) in ls.iter().enumerate() {
                let what = if ls.len() == 1 {
                    format!("argument `{name}`")
                } else {
                    format!("argument `{name}` (component {k})")
                };
                if super::index::is_index(&self.func, at) {
                    // an index array: checked before it becomes `T`
                    let l = super::index::checked(py, &self.func, name, l, &what, T::PRECISION)?;
                    ops.push(operand::<T>(py, &l, &what)?);
                } else {
                    ops.push(operand::<T>(py, l, &what)?);
                }
            }
        }
        let mut next = 0;
        let argv: Vec<IntArg<'_, T>> = self
            .params
            .iter()
            .map(|(_, b)| operand::assemble(b, &ops, &mut next))
            .collect();
        // the work estimate sends a long call where Ctrl-C reaches it
        let work = kernel.work_int(&argv);
        let v = run_call(py, false, work, &self.pace32, || {
            kernel.call_int(&argv).map_err(|e| from_einsat(e, None))
        })?;
        Ok(to_py(py, v))
    }
}
