//! Einsum errors in the user's terms: the binding compiles an einsum into a
//! function whose parameters are `A`, `B`, … (`T26`, … past 26) and whose
//! sizes are `ni`, `nj`, … (`nu00D7` for `×`), and fills the axes under
//! `...` with letters the spec does not use. A message about an einsum
//! names none of these: it names operands by position with the subscripts
//! the user wrote (`operand 1 ('jk')`), indices by the user's letters, and
//! the axes under `...` as such. This module owns those words: the size
//! mismatch found before a call ([`size_mismatch`]), the rewording of
//! the kernel's own call errors ([`in_user_terms`]), and for numpy's
//! interleaved form the letters its subscripts stand as
//! ([`interleaved_error`]).
//!
//! It also holds the one other thing the einsum binding asks the Python
//! half before compiling: whether a one-operand einsum is numpy's view of
//! its operand (a relabelling or diagonals, [`single_view`]), which no
//! kernel computes.

use einsat::frontend::einsum::{index_name, operand_name};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

/// The subscripts of each operand as the user wrote them (spaces removed):
/// `"ij, jk -> ik"` gives `["ij", "jk"]`.
pub(crate) fn user_terms(spec: &str) -> Vec<String> {
    let s: String = spec.chars().filter(|&c| c != ' ').collect();
    let lhs = s.split("->").next().unwrap_or("");
    lhs.split(',').map(str::to_string).collect()
}

/// The output subscripts as the user wrote them, when the spec has `->`.
fn user_output(spec: &str) -> Option<String> {
    let s: String = spec.chars().filter(|&c| c != ' ').collect();
    s.split_once("->").map(|(_, r)| r.to_string())
}

/// `operand K ('subscripts')`.
pub(crate) fn operand_shown(k: usize, terms: &[String]) -> String {
    match terms.get(k) {
        Some(t) => format!("operand {k} ('{}')", einsat::diag::quote(t)),
        None => format!("operand {k}"),
    }
}

/// The message for two sizes of one label that are not 1 and differ:
/// axis `axis` of operand `k` has size `n`, but axis `first_axis` of operand
/// `first_k` gave the label size `first`. Index letters are quoted (`'j'`),
/// as numpy's messages quote them.
pub(crate) fn size_mismatch(
    spec: &str,
    labels: &[Vec<char>],
    lab: char,
    (first_k, first_axis, first): (usize, usize, usize),
    (k, axis, n): (usize, usize, usize),
) -> String {
    let terms = user_terms(spec);
    let user = terms.get(k).is_some_and(|t| t.contains(lab));
    let op = operand_shown(k, &terms);
    if !user {
        // an axis under `...` (never repeated within one operand)
        return format!(
            "einsum: {op}: axis {axis} (under ...) has size {n} but the same axis of ... in {} has size {first} (the axes under ... broadcast from the right; only sizes of 1 broadcast)",
            operand_shown(first_k, &terms)
        );
    }
    if first_k == k {
        return format!(
            "einsum: {op}: index '{lab}' has size {n} on axis {axis} but size {first} on axis {first_axis} (a repeated index takes a diagonal: its axes have one size; only sizes of 1 broadcast)"
        );
    }
    let repeated = labels[k].iter().filter(|&&c| c == lab).count() > 1;
    let which = if repeated {
        format!(" (axis {axis})")
    } else {
        String::new()
    };
    format!(
        "einsum: {op}: index '{lab}'{which} has size {n} but {} gives it size {first} (an index has one size; only sizes of 1 broadcast)",
        operand_shown(first_k, &terms)
    )
}

/// A message of the kernel einsum compiled (its call boundary, the
/// interpreter, the JIT) in the user's terms: `argument `A` ([ni,nj]R)` is
/// `operand 0 ('ij')`, `size `nj`` the size of index `j`, the output
/// buffer `out`.
pub(crate) fn in_user_terms(msg: &str, spec: &str, labels: &[Vec<char>]) -> String {
    let terms = user_terms(spec);
    let mut m = msg.to_string();
    for k in (0..labels.len()).rev() {
        let name = operand_name(k);
        let shown = operand_shown(k, &terms);
        // `argument `A` (<type>)`: the type has no parentheses
        let head = format!("argument `{name}` (");
        while let Some(at) = m.find(&head) {
            let end = m[at + head.len()..]
                .find(')')
                .map_or(m.len(), |e| at + head.len() + e + 1);
            m.replace_range(at..end, &shown);
        }
        m = m.replace(&format!("argument `{name}`"), &shown);
    }
    let letters: Vec<char> = {
        let mut v: Vec<char> = labels.iter().flatten().copied().collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let all_terms: String = terms.concat();
    for c in letters {
        let size = format!("size `n{}`", index_name(c));
        let user = all_terms.contains(c);
        let said = if user {
            format!("the size of index '{c}'")
        } else {
            "the size of an axis under ...".to_string()
        };
        m = m.replace(&size, &said);
    }
    if let Some(rest) = m.strip_prefix("the output buffer") {
        let result = match user_output(spec) {
            Some(o) => format!("the result ('{}')", einsat::diag::quote(&o)),
            None => "the result".to_string(),
        };
        m = format!("out{}", rest.replace("the result", &result));
    }
    if m.starts_with("einsum") {
        m
    } else {
        format!("einsum: {m}")
    }
}

/// numpy's view of a one-operand einsum that sums nothing (a relabelling
/// or diagonals: `einsat._dropin._single_view`), when the call is one
/// (one operand in the spec form or the interleaved form, no `out`); the
/// options given are checked as numpy checks them for a view
/// (`_view_options`). `None`: not a view, the einsum runs. Einsums of two
/// or more operands do not reach Python here.
pub(crate) fn single_view<'py>(
    py: Python<'py>,
    operands: &Bound<'py, PyTuple>,
    options: &[(&str, Option<&Bound<'py, PyAny>>)],
) -> PyResult<Option<Py<PyAny>>> {
    let n = operands.len();
    let one = match n {
        2 => true,
        3 => !operands.get_item(0)?.is_instance_of::<PyString>(),
        _ => false,
    };
    if !one {
        return Ok(None);
    }
    let m = super::contract::dropin(py)?;
    let v = m.call_method1("_single_view", (operands,))?;
    if v.is_none() {
        return Ok(None);
    }
    let given: Vec<_> = options
        .iter()
        .filter_map(|(k, v)| v.filter(|v| !v.is_none()).map(|v| (*k, v)))
        .collect();
    if !given.is_empty() {
        let kw = PyDict::new(py);
        for (k, v) in given {
            kw.set_item(k, v)?;
        }
        m.call_method("_view_options", (), Some(&kw))?;
    }
    Ok(Some(v.unbind()))
}

/// An error of an einsum in numpy's interleaved form, with the letters
/// its subscripts are written as in the message
/// (`einsat._dropin._subscripts_note`).
pub(crate) fn interleaved_error(py: Python<'_>, operands: &Bound<'_, PyTuple>, e: PyErr) -> PyErr {
    let spec_form = operands
        .get_item(0)
        .is_ok_and(|s| s.is_instance_of::<PyString>());
    if spec_form || operands.is_empty() {
        return e;
    }
    match super::contract::dropin(py)
        .and_then(|m| m.call_method1("_reraise_interleaved", (e.value(py), operands)))
    {
        // it always raises
        Ok(_) => e,
        Err(e2) => e2,
    }
}
