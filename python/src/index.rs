//! Integer array arguments (the index arrays of gathers, `tok` of
//! `E[tok[i], j]`): a call passes an index array in the kernel's element
//! type (float64, float32, int64 or int32), so each one is checked BEFORE
//! it is converted: every element an integer (bool, integer and float
//! arrays are accepted; a float must be a whole number) that the format
//! holds exactly — at most 2^53 in magnitude in float64, 2^24 in float32,
//! within int32 in int32 — else the call's gather error (`einsat::interp::gather`'s words, a
//! ShapeError), never a silent wrap or rounding into another index. Index
//! arrays take no part in the result's dtype (numpy: `E[tok]` has `E`'s
//! dtype).

use super::{fail, from_einsat, numpy, Exc, Res};
use einsat::interp::gather;
use einsat::syntax::Function;
use einsat::Precision;
use numpy::{PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;

/// Whether parameter `k` of `f` is an integer array (a gather's index).
pub(super) fn is_index(f: &Function, k: usize) -> bool {
    f.params.get(k).is_some_and(|p| p.ty.is_int_array())
}

/// The smallest and largest element the format `p` holds exactly.
fn range(p: Precision) -> (i128, i128) {
    match p {
        Precision::F32 => (-(1 << 24), 1 << 24),
        Precision::I32 => (i128::from(i32::MIN), i128::from(i32::MAX)),
        Precision::I64 => (i128::from(i64::MIN), i128::from(i64::MAX)),
        Precision::F64 => (-(1 << 53), 1 << 53),
    }
}

/// The index array argument `obj` of the parameter `param` of `f`, for a
/// call in the format `p`: checked (every element an integer `p` holds
/// exactly, else the gather error naming the first refused element in C
/// order) and returned as an array the format's reader converts exactly
/// (float arrays as float64, others as given).
pub(super) fn checked<'py>(
    py: Python<'py>,
    f: &Function,
    param: &str,
    obj: &Bound<'py, PyAny>,
    what: &str,
    p: Precision,
) -> Res<Bound<'py, PyAny>> {
    let err = |e: PyErr| fail(Exc::DType, format!("{what}: {e}"));
    let np = numpy(py).map_err(err)?;
    let arr = np
        .call_method1("asarray", (obj,))
        .and_then(|a| a.cast_into::<PyUntypedArray>().map_err(PyErr::from))
        .map_err(err)?;
    let kind = arr.dtype().kind() as char;
    let (lo, hi) = range(p);
    // the refused elements, as a boolean array (None: none can be)
    let (bad, integer) = match kind {
        'f' => {
            let a = np
                .call_method1("asarray", (&arr, np.getattr("float64").map_err(err)?))
                .map_err(err)?;
            let whole = np
                .call_method1("isfinite", (&a,))
                .and_then(|fin| {
                    let fl = np.call_method1("floor", (&a,))?;
                    fin.call_method1("__and__", (fl.call_method1("__eq__", (&a,))?,))
                })
                .map_err(err)?;
            let not_whole = np.call_method1("logical_not", (&whole,)).map_err(err)?;
            if not_whole
                .call_method0("any")
                .and_then(|b| b.is_truthy())
                .map_err(err)?
            {
                (Some((a, not_whole)), false)
            } else {
                // whole numbers: beyond the range? (compared in float64,
                // where both limits are exact)
                let out = a
                    .call_method1("__lt__", (lo as f64,))
                    .and_then(|l| {
                        l.call_method1("__or__", (a.call_method1("__gt__", (hi as f64,))?,))
                    })
                    .map_err(err)?;
                (Some((a, out)), true)
            }
        }
        'i' | 'u' => {
            // only a dtype wider than the range is compared (each limit
            // within the dtype, so numpy compares exactly)
            let info = np.call_method1("iinfo", (arr.dtype(),)).map_err(err)?;
            let (dmin, dmax): (i128, i128) = (
                info.getattr("min").and_then(|x| x.extract()).map_err(err)?,
                info.getattr("max").and_then(|x| x.extract()).map_err(err)?,
            );
            let mut out: Option<Bound<'py, PyAny>> = None;
            if dmax > hi {
                out = Some(arr.call_method1("__gt__", (hi,)).map_err(err)?);
            }
            if dmin < lo {
                let below = arr.call_method1("__lt__", (lo,)).map_err(err)?;
                out = Some(match out {
                    Some(o) => o.call_method1("__or__", (below,)).map_err(err)?,
                    None => below,
                });
            }
            (out.map(|o| (arr.clone().into_any(), o)), true)
        }
        // bool (0 and 1); other dtypes: the format's reader refuses them
        _ => (None, true),
    };
    if let Some((a, mask)) = bad {
        if mask
            .call_method0("any")
            .and_then(|b| b.is_truthy())
            .map_err(err)?
        {
            let first = np
                .call_method1("argwhere", (&mask,))
                .and_then(|w| w.get_item(0))
                .and_then(|w| w.call_method0("tolist"))
                .and_then(|w| w.extract::<Vec<usize>>())
                .map_err(err)?;
            let x = a
                .get_item(pyo3::types::PyTuple::new(py, &first).map_err(err)?)
                .map_err(err)?;
            let shown = if kind == 'f' {
                let v: f64 = x.extract().map_err(err)?;
                v.to_string()
            } else {
                x.call_method0("__int__")
                    .and_then(|i| i.str())
                    .map(|s| s.to_string())
                    .map_err(err)?
            };
            let e = if integer {
                gather::beyond_error(f, param, &first, &shown, p)
            } else {
                gather::not_integer_error(f, param, &first, &shown)
            };
            return Err(from_einsat(e, None));
        }
        if kind == 'f' {
            return Ok(a);
        }
    }
    Ok(arr.into_any())
}
