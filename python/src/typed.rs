//! The native half of the einsum of dtypes other than float64
//! (`einsat._typed_einsum`, called by `einsat/_typed.py`, which chooses the
//! dtype as numpy does and converts operands): numpy arrays of one element
//! type, read in place (any strides), contracted by [`einsat::typed`] in
//! that type (`float32`, `complex64`, `complex128`, `float64`, and `int64`
//! or `uint64` for every integer and bool dtype, which Python truncates to
//! the result's dtype afterwards). Owns only the crossing: the spec's `...`
//! expanded, the operands borrowed, the GIL released (a long call runs
//! where Ctrl-C stops it, as the float64 einsum's do), errors mapped.

use crate::{contract, expand, fail, from_einsat, run_call, threads_of, to_py_err, Exc, Pace, Res};
use einsat::typed::{Complex32, Complex64, Options, Scalar};
use ndarray::ArrayViewD;
use numpy::{
    Element, IntoPyArray, PyArrayDyn, PyArrayMethods, PyReadonlyArrayDyn, PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

/// The einsum `spec` (numpy's grammar, `...` included) of `operands`
/// (numpy arrays, all of the dtype `kind` names: `f4`, `f8`, `c8`, `c16`,
/// `i8`, `u8`), computed in that type; returns a new C-ordered array of
/// it. `method`: an `optimize=` name of the planner; `path`: an explicit
/// path (numpy's linear form) instead; `memory_limit`: as the float64
/// einsum's (intermediates over it are sliced).
#[pyfunction]
#[allow(clippy::too_many_arguments)] // (the Python function's keywords)
#[pyo3(signature = (spec, operands, kind, method=None, path=None, threads=None, memory_limit=None))]
pub(crate) fn _typed_einsum<'py>(
    py: Python<'py>,
    spec: &str,
    operands: &Bound<'py, PyTuple>,
    kind: &str,
    method: Option<&str>,
    path: Option<Vec<Vec<usize>>>,
    threads: Option<&Bound<'py, PyAny>>,
    memory_limit: Option<&Bound<'py, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let run = || -> Res<Py<PyAny>> {
        let threads = match threads_of(threads)? {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        let method = match method {
            Some(m) => contract::method_of(m)?,
            None => einsat::plan::Method::Auto,
        };
        if let Some(p) = &path {
            contract::check_path(p, operands.len())?;
        }
        let mut opts = Options {
            method,
            path,
            threads,
            ..Options::default()
        };
        let m = memory_limit;
        match kind {
            "f4" => typed::<f32>(py, spec, operands, &mut opts, m),
            "f8" => typed::<f64>(py, spec, operands, &mut opts, m),
            "c8" => typed::<Complex32>(py, spec, operands, &mut opts, m),
            "c16" => typed::<Complex64>(py, spec, operands, &mut opts, m),
            "i8" => typed::<i64>(py, spec, operands, &mut opts, m),
            "u8" => typed::<u64>(py, spec, operands, &mut opts, m),
            _ => Err(fail(
                Exc::DType,
                format!("einsum: no typed einsum of `{kind}`"),
            )),
        }
    };
    run().map_err(|f| to_py_err(py, f))
}

fn typed<'py, T: Scalar + Element>(
    py: Python<'py>,
    spec: &str,
    operands: &Bound<'py, PyTuple>,
    opts: &mut Options,
    memory_limit: Option<&Bound<'py, PyAny>>,
) -> Res<Py<PyAny>> {
    let mut arrays: Vec<PyReadonlyArrayDyn<'py, T>> = Vec::with_capacity(operands.len());
    for (k, o) in operands.iter().enumerate() {
        let a = o.cast::<PyArrayDyn<T>>().map_err(|_| {
            fail(
                Exc::DType,
                format!("einsum: operand {k} is not an array of the computation's dtype"),
            )
        })?;
        arrays.push(a.try_readonly().map_err(|e| {
            fail(
                Exc::Shape,
                format!("operand {k}: the array cannot be read ({e}): it is being written by another call"),
            )
        })?);
    }
    if let Some(m) = memory_limit {
        let shapes: Vec<&[usize]> = arrays.iter().map(|a| a.shape()).collect();
        opts.memory_limit = match contract::memory_of(m, &shapes)? {
            contract::Memory::Default => einsat::plan::MemoryLimit::Default,
            contract::Memory::Elements(e) => einsat::plan::MemoryLimit::Elements(e),
        };
    }
    let ranks: Vec<usize> = arrays.iter().map(|a| a.ndim()).collect();
    let (explicit, _) = expand(spec, &ranks)?;
    let views: Vec<ArrayViewD<'_, T>> = arrays.iter().map(|a| a.as_array()).collect();
    let work = naive_work(&explicit, &views);
    // (each einsum its own pace: the naive work says little of its speed,
    // so the first-call rule applies)
    let pace = Pace::default();
    let r = run_call(py, false, Some(work), &pace, || {
        einsat::typed::einsum(&explicit, &views, opts).map_err(|e| from_einsat(e, None))
    })?;
    Ok(r.into_pyarray(py).into_any().unbind())
}

/// An upper bound of an einsum's work: the product of the sizes of its
/// distinct labels (what the unplanned loop nest would do), which decides
/// whether the call runs where Ctrl-C can stop it (`run_call`).
fn naive_work<T>(explicit: &str, views: &[ArrayViewD<'_, T>]) -> u64 {
    let inputs = explicit.split("->").next().unwrap_or("");
    let mut seen: Vec<(char, usize)> = Vec::new();
    for (subs, v) in inputs.split(',').zip(views) {
        for (c, &n) in subs.chars().zip(v.shape()) {
            match seen.iter_mut().find(|(d, _)| *d == c) {
                Some((_, m)) => *m = (*m).max(n),
                None => seen.push((c, n)),
            }
        }
    }
    seen.iter()
        .fold(1u64, |w, &(_, n)| w.saturating_mul(n as u64))
}

/// Whether `einsat.einsum(*operands, dtype=dtype)` computes in a dtype
/// other than float64 (or may: lists, numpy scalars and arrays of other
/// dtypes, only Python ints and bools), so that `einsat/_typed.py` decides.
/// Only float64 arrays and Python floats (numpy float64 scalars among
/// them), with ints and bools beside them, keep the float64 path here.
pub(crate) fn wanted(
    py: Python<'_>,
    operands: &Bound<'_, PyTuple>,
    dtype: Option<&Bound<'_, PyAny>>,
) -> bool {
    if let Some(d) = dtype.filter(|d| !d.is_none()) {
        let f64_dtype = crate::numpy(py)
            .and_then(|np| np.call_method1("dtype", (d,)))
            .and_then(|t| t.getattr("char"))
            .and_then(|c| c.extract::<String>())
            .is_ok_and(|c| c == "d");
        if !f64_dtype {
            return true;
        }
    }
    let items: Vec<Bound<'_, PyAny>> = operands.iter().collect();
    let ops: Vec<&Bound<'_, PyAny>> = match items.first() {
        None => return false,
        Some(s) if s.is_instance_of::<pyo3::types::PyString>() => items[1..].iter().collect(),
        // numpy's interleaved form: operand, sublist, operand, ...
        Some(_) => items[..items.len() - items.len() % 2]
            .iter()
            .step_by(2)
            .collect(),
    };
    if ops.is_empty() {
        return false;
    }
    let mut float = false;
    for o in ops {
        if o.cast::<PyArrayDyn<f64>>().is_ok() || o.is_instance_of::<pyo3::types::PyFloat>() {
            float = true;
        } else if !(o.is_instance_of::<pyo3::types::PyInt>()
            || o.is_instance_of::<pyo3::types::PyBool>())
        {
            return true;
        }
    }
    !float
}

/// `einsat._typed.einsum(*operands, **keywords)`: the einsum of a dtype
/// other than float64.
pub(crate) fn dispatch(
    py: Python<'_>,
    operands: &Bound<'_, PyTuple>,
    keywords: &[(&str, Option<&Bound<'_, PyAny>>)],
) -> PyResult<Py<PyAny>> {
    let kw = pyo3::types::PyDict::new(py);
    for (name, v) in keywords {
        if let Some(v) = v {
            kw.set_item(name, v)?;
        }
    }
    py.import("einsat._typed")?
        .call_method("einsum", operands, Some(&kw))
        .map(|r| r.unbind())
}
