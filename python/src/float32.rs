//! Programs on float32 arrays: a `Kernel` (from `einsat.compile` or the
//! builder's `einsat.fn`) called with arguments whose numpy result dtype
//! (`np.result_type` of the array arguments; Python numbers are weak, as
//! NEP 50 makes them) is float32 or float16 computes in f32 on a second
//! kernel compiled for `Precision::F32` (on first such call) and returns
//! float32 (float16 for float16 arguments, rounded at the end). A result
//! dtype of complex64 (complex64 arrays for pair parameters, with float32
//! or float16 arrays and Python real numbers) computes the same way on
//! the parts, read in place from the interleaved storage, and a pair
//! result of two arrays of one shape returns complex64. float32 arrays of
//! any strides are read in place; other arrays are converted to float32. Every other result dtype takes the float64 path. Index arrays
//! of gathers do not take part in the result dtype and are passed as
//! float32 after a check ([`super::index`]: integers up to 2^24).

use super::operand::{self, Assemble, Operand};
use super::{fail, from_einsat, native, numpy, run_call, Exc, Kernel, Res};
use einsat::interp::Boundary;
use einsat::jit::{Arg32, Value32};
use einsat::{jit, opt, Precision};
use ndarray::ArrayViewD;
use numpy::{PyArrayDyn, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyFloat, PyInt, PyTuple};
use std::sync::Arc;

/// The leaves of the arguments (pairs are tuples of two), in order.
pub(super) fn leaves_of<'py>(
    obj: &Bound<'py, PyAny>,
    b: &Boundary,
    out: &mut Vec<Bound<'py, PyAny>>,
) {
    match b {
        Boundary::Array(_) => out.push(obj.clone()),
        Boundary::Pair(x, y) => match obj.cast::<PyTuple>() {
            Ok(t) if t.len() == 2 => {
                if let (Ok(a), Ok(c)) = (t.get_item(0), t.get_item(1)) {
                    leaves_of(&a, x, out);
                    leaves_of(&c, y, out);
                }
            }
            // (not a pair: the float64 path words the error)
            _ => out.push(obj.clone()),
        },
    }
}

/// [`leaves_of`], with complex numbers and arrays given for pair
/// parameters split into their real and imaginary parts (numpy's `.real`
/// and `.imag`: views of the interleaved storage, read in place).
fn parts_of<'py>(obj: &Bound<'py, PyAny>, b: &Boundary, out: &mut Vec<Bound<'py, PyAny>>) {
    match b {
        Boundary::Pair(x, y) => match super::complex_parts(obj) {
            Some((re, im)) => {
                parts_of(&re, x, out);
                parts_of(&im, y, out);
            }
            None => match obj.cast::<PyTuple>() {
                Ok(t) if t.len() == 2 => {
                    if let (Ok(a), Ok(c)) = (t.get_item(0), t.get_item(1)) {
                        parts_of(&a, x, out);
                        parts_of(&c, y, out);
                    }
                }
                _ => out.push(obj.clone()),
            },
        },
        Boundary::Array(_) => out.push(obj.clone()),
    }
}

/// What an f32 call returns: float32, float16 (rounded at the end), or
/// complex64 (a pair result of two arrays or numbers of one shape as one
/// complex64 array or number).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Out32 {
    Float32,
    Float16,
    Complex64,
}

/// Whether a Python number (weak under NEP 50: it does not decide the
/// result's dtype).
fn weak(o: &Bound<'_, PyAny>) -> bool {
    o.is_instance_of::<PyFloat>() || o.is_instance_of::<PyInt>() || o.is_instance_of::<PyBool>()
}

/// The f32 call's result when the arguments' result dtype is float32,
/// float16 or complex64, else `None` (the float64 path).
pub(super) fn wanted(py: Python<'_>, args: &[Bound<'_, PyAny>]) -> Option<Out32> {
    match result_kind(py, args)? {
        (k, 4) if k == "f" => Some(Out32::Float32),
        (k, 2) if k == "f" => Some(Out32::Float16),
        (k, 8) if k == "c" => Some(Out32::Complex64),
        _ => None,
    }
}

/// numpy's result dtype of the arguments that are not Python numbers
/// (NEP 50: those are weak), as its kind character and item size; `None`
/// when every argument is a Python number.
pub(super) fn result_kind(py: Python<'_>, args: &[Bound<'_, PyAny>]) -> Option<(String, usize)> {
    let np = numpy(py).ok()?;
    let mut dtypes = Vec::new();
    for a in args.iter().filter(|a| !weak(a)) {
        let dt = match a.getattr("dtype") {
            Ok(d) => d,
            // lists and other sequences: as `np.asarray` makes them
            Err(_) => np
                .call_method1("asarray", (a,))
                .ok()?
                .getattr("dtype")
                .ok()?,
        };
        dtypes.push(dt);
    }
    if dtypes.is_empty() {
        return None;
    }
    let rt = np
        .call_method1("result_type", PyTuple::new(py, dtypes).ok()?)
        .ok()?;
    let kind: String = rt.getattr("kind").ok()?.extract().ok()?;
    let size: usize = rt.getattr("itemsize").ok()?.extract().ok()?;
    Some((kind, size))
}

/// An argument read as float32: a number, or an array borrowed in place
/// (float32, aligned) or converted to a float32 copy.
type Op32<'py> = Operand<'py, f32>;

fn operand32<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>, what: &str) -> Res<Op32<'py>> {
    if let Some(op) = operand::in_place(obj, &what)? {
        return Ok(op);
    }
    if weak(obj) {
        let x: f64 = obj
            .extract()
            .map_err(|e| fail(Exc::DType, format!("{what}: {e}")))?;
        return Ok(Operand::Num(x as f32));
    }
    operand::converted(py, obj, &what, "float32", true)
}

impl<'a> Assemble<'a, f32> for Arg32<'a> {
    fn number(x: f32) -> Self {
        Arg32::Real(x)
    }
    fn array(a: ArrayViewD<'a, f32>) -> Self {
        Arg32::Array(a)
    }
    fn pair(a: Self, b: Self) -> Self {
        Arg32::pair(a, b)
    }
}

fn to_py(py: Python<'_>, v: Value32, out: Out32) -> PyResult<Py<PyAny>> {
    if out == Out32::Complex64 {
        match v {
            Value32::Pair(a, b) => match (*a, *b) {
                (Value32::Array(re), Value32::Array(im)) if re.shape() == im.shape() => {
                    let z = ndarray::Zip::from(&re)
                        .and(&im)
                        .map_collect(|&r, &i| einsat::typed::Complex32::new(r, i));
                    return Ok(PyArrayDyn::from_owned_array(py, z).into_any().unbind());
                }
                (Value32::Real(r), Value32::Real(i)) => {
                    let np = numpy(py)?;
                    let z = pyo3::types::PyComplex::from_doubles(py, r.into(), i.into());
                    // (exact: both parts are f32)
                    return Ok(np.getattr("complex64")?.call1((z,))?.unbind());
                }
                (a, b) => {
                    return to_py(py, Value32::Pair(Box::new(a), Box::new(b)), Out32::Float32)
                }
            },
            v => return to_py(py, v, Out32::Float32),
        }
    }
    let half = out == Out32::Float16;
    let np = numpy(py)?;
    let dt = np.getattr(if half { "float16" } else { "float32" })?;
    Ok(match v {
        Value32::Real(x) => dt.call1((x,))?.unbind(),
        Value32::Array(a) => {
            let arr = PyArrayDyn::from_owned_array(py, a).into_any();
            if half {
                arr.call_method1("astype", (dt,))?.unbind()
            } else {
                arr.unbind()
            }
        }
        Value32::Pair(a, b) => PyTuple::new(py, [to_py(py, *a, out)?, to_py(py, *b, out)?])?
            .into_any()
            .unbind(),
    })
}

impl Kernel {
    /// The kernel compiled for f32 (on first use; GIL released).
    fn kernel32(&self, py: Python<'_>) -> Res<Arc<jit::Kernel>> {
        if let Some(k) = self.kernel32.get() {
            return Ok(k.clone());
        }
        let (f, how) = (&self.func, self.how);
        let k = native(py, || {
            let o = opt::optimize(
                f,
                &opt::Options {
                    fast_math: how.fast_math,
                    precision: Precision::F32,
                    ..opt::Options::default()
                },
            )
            .map_err(|e| from_einsat(e, None))?;
            jit::compile_with(
                &o.program,
                &jit::Options {
                    threads: how.threads,
                    precision: Precision::F32,
                    ..jit::Options::default()
                },
            )
            .map_err(|e| from_einsat(e, None))
        })?;
        Ok(self.kernel32.get_or_init(|| k).clone())
    }

    /// The call in f32 (returning `out`), with every parameter given
    /// (`given`, in order).
    pub(super) fn call32(
        &self,
        py: Python<'_>,
        given: &[Bound<'_, PyAny>],
        out: Out32,
    ) -> Res<PyResult<Py<PyAny>>> {
        let mut ops = Vec::new();
        let mut elements = 0usize;
        for (at, ((name, b), g)) in self.params.iter().zip(given).enumerate() {
            let mut ls = Vec::new();
            parts_of(g, b, &mut ls);
            for (k, l) in ls.iter().enumerate() {
                let what = if ls.len() == 1 {
                    format!("argument `{name}`")
                } else {
                    format!("argument `{name}` (component {k})")
                };
                let op = if super::index::is_index(&self.func, at) {
                    // an index array: checked before it becomes float32
                    let l = super::index::checked(py, &self.func, name, l, &what, Precision::F32)?;
                    operand32(py, &l, &what)?
                } else {
                    operand32(py, l, &what)?
                };
                if let Op32::Array(a) = &op {
                    elements = elements.saturating_add(a.len());
                }
                ops.push(op);
            }
        }
        let kernel = self.kernel32(py)?;
        let mut next = 0;
        let argv: Vec<Arg32<'_>> = self
            .params
            .iter()
            .map(|(_, b)| operand::assemble(b, &ops, &mut next))
            .collect();
        let work = kernel.work_f32(&argv);
        let v = run_call(py, false, work, &self.pace32, || {
            kernel.call_f32(&argv).map_err(|e| from_einsat(e, None))
        })?;
        Ok(to_py(py, v, out))
    }
}
