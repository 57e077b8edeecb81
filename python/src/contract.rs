//! The drop-in half of the einsum binding: what `einsat.einsum` takes from
//! numpy and opt_einsum besides the spec and the operands, and what
//! `einsum_path`, `contract_path` and `contract_expression` need.
//!
//! - **`optimize=`** ([`Order`]): numpy's values (`False`, `True`,
//!   `'greedy'`, `'optimal'`, an explicit path `['einsum_path', (0, 1),
//!   …]` or `[(0, 1), …]`, `('greedy', memory_limit)`) and opt_einsum's
//!   (`'auto'`, `'auto-hq'`, `'dp'`, `'branch-*'`, `'random-greedy*'`, a
//!   path optimizer object), mapped onto einsat's planner methods
//!   ([`method_of`]); an explicit path is checked against the operands
//!   ([`check_path`]) and followed (`opt::Options::path`).
//! - **`memory_limit=`** ([`Memory`]): `None` or `-1` (einsat's default),
//!   a number of elements, or `'max_input'`.
//! - **`dtype=`, `order=`, `casting=`**: float64 results only.
//! - **numpy's interleaved form** (`einsum(A, [0, 1], B, [1, 2], [0, 2])`),
//!   converted to a spec by `einsat/_dropin.py`.
//! - **planning with the real sizes**: an einsum of 3 or more operands is
//!   planned with its operands' sizes and cached per shapes ([`planned`]);
//!   smaller ones stay shape-generic.
//! - **paths** ([`_plan`]): the contraction path einsat runs, over the
//!   operands, for `einsum_path` and `contract_path`; and compiled
//!   expressions for fixed shapes ([`Prepared`], `contract_expression`).

use super::*;
use einsat::plan::Method;

/// How the contraction order is chosen.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Order {
    /// By the planner, with this method.
    Method(Method),
    /// This path, in numpy's linear form (checked against the operands).
    Path(Vec<Vec<usize>>),
}

/// The bound on intermediates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Memory {
    /// einsat's: the largest argument or result, or 2^27 elements,
    /// whichever is larger.
    Default,
    /// At most this many elements.
    Elements(f64),
}

/// The planning asked for (part of the cache key).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Planning {
    order: Order,
    memory: Memory,
}

/// Einsums of at least this many operands are planned with their
/// operands' sizes, and their kernels cached per shapes; smaller ones are
/// compiled once per ranks for every size.
pub(crate) const PLANNED_OPERANDS: usize = 3;

/// Whether an einsum of `n` operands is planned with the real sizes.
pub(crate) fn planned(n: usize) -> bool {
    n >= PLANNED_OPERANDS
}

/// The `optimize=` strings einsat knows, and the planner method each runs
/// (documented in `einsat/__init__.py`).
const METHODS: &[(&str, Method)] = &[
    ("auto", Method::Auto),
    ("auto-hq", Method::Auto),
    ("optimal", Method::Optimal),
    ("dp", Method::Optimal),
    ("dynamic-programming", Method::Optimal),
    ("branch-all", Method::Optimal),
    ("branch-2", Method::Greedy),
    ("branch-1", Method::Greedy),
    ("greedy", Method::Greedy),
    ("eager", Method::Greedy),
    ("opportunistic", Method::Greedy),
    ("random-greedy", Method::Greedy),
    ("random-greedy-128", Method::Greedy),
    ("hyper", Method::Hyper),
];

/// The planner method of an `optimize=` string (any case); else
/// `OptionError` naming the valid ones.
pub(crate) fn method_of(name: &str) -> Res<Method> {
    let lower = name.to_ascii_lowercase();
    METHODS
        .iter()
        .find(|(n, _)| *n == lower)
        .map(|e| e.1)
        .ok_or_else(|| {
            fail(
                Exc::Option,
                format!(
                    "optimize={}: not a path optimizer einsat knows (valid: False, True, {}, an explicit path such as ['einsum_path', (0, 1), (0, 1)], or an opt_einsum PathOptimizer)",
                    einsat::diag::quote(&format!("{name:?}")),
                    METHODS
                        .iter()
                        .map(|(n, _)| format!("'{n}'"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })
}

/// Check a path in numpy's linear form against `n` operands: every step
/// names at least one position, no position twice, and only positions of
/// the current list (which loses a step's tensors and gains its result),
/// and one tensor left at the end (as numpy requires).
pub(crate) fn check_path(path: &[Vec<usize>], n: usize) -> Res<()> {
    let mut left = n;
    let bad = |m: String| fail(Exc::Option, format!("optimize: the path does not fit: {m}"));
    for (k, step) in path.iter().enumerate() {
        if step.is_empty() {
            return Err(bad(format!("step {k} names no tensor")));
        }
        let mut seen = step.clone();
        seen.sort_unstable();
        seen.dedup();
        if seen.len() != step.len() {
            return Err(bad(format!("step {k} names a tensor twice")));
        }
        if let Some(p) = step.iter().find(|&&p| p >= left) {
            return Err(bad(format!(
                "step {k} names position {p}, but {left} tensor{} {} left (of {n} operand{})",
                if left == 1 { "" } else { "s" },
                if left == 1 { "is" } else { "are" },
                if n == 1 { "" } else { "s" }
            )));
        }
        left = left - step.len() + 1;
    }
    if left > 1 {
        return Err(bad(format!(
            "{left} tensors are left after its last step (a path contracts the operands to one)"
        )));
    }
    Ok(())
}

/// The Python half of the package (`einsat._dropin`).
pub(crate) fn dropin(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    static M: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    M.get_or_try_init(py, || py.import("einsat._dropin").map(|m| m.unbind()))
        .map(|m| m.bind(py))
}

/// A Python exception raised by the package's Python half, as a failure:
/// einsat's own errors and ValueError/TypeError pass through as they are.
fn raised(e: PyErr) -> Failure {
    Failure {
        raised: Some(e),
        ..fail(Exc::Error, "")
    }
}

/// A path from Python: a list or tuple of steps, each a tuple or list of
/// positions (`'einsum_path'` first, as numpy's `einsum_path` returns it,
/// is skipped).
fn path_of(obj: &Bound<'_, PyAny>) -> Res<Vec<Vec<usize>>> {
    let bad = || {
        fail(
            Exc::Option,
            format!(
                "optimize={}: a path is a list of tuples of operand positions, as ['einsum_path', (0, 1), (0, 1)] or [(0, 1), (0, 1)]",
                shown(obj)
            ),
        )
    };
    let items: Vec<Bound<'_, PyAny>> = obj.try_iter().map_err(|_| bad())?.flatten().collect();
    let mut out = Vec::with_capacity(items.len());
    for (k, it) in items.iter().enumerate() {
        if k == 0 && it.extract::<String>().is_ok_and(|s| s == "einsum_path") {
            continue;
        }
        if it.is_instance_of::<PyString>() {
            return Err(bad());
        }
        let step: Vec<usize> = it
            .try_iter()
            .map_err(|_| bad())?
            .map(|p| p.ok().and_then(|p| p.extract::<usize>().ok()))
            .collect::<Option<_>>()
            .ok_or_else(bad)?;
        out.push(step);
    }
    Ok(out)
}

/// The keywords of an einsum call besides `out`.
pub(crate) struct Knobs<'a, 'py> {
    pub threads: Option<&'a Bound<'py, PyAny>>,
    pub fast_math: bool,
    pub optimize: Option<&'a Bound<'py, PyAny>>,
    pub memory_limit: Option<&'a Bound<'py, PyAny>>,
    pub dtype: Option<&'a Bound<'py, PyAny>>,
    pub order: Option<&'a Bound<'py, PyAny>>,
    pub casting: Option<&'a Bound<'py, PyAny>>,
}

/// An einsum call read: the spec (interleaved operands converted), the
/// operands, how it runs and what it plans.
pub(crate) struct Call<'py> {
    pub spec: String,
    /// The operands, after the first `skip` items.
    operands: Bound<'py, PyTuple>,
    skip: usize,
    /// `order='F'`: the result in Fortran order.
    pub fortran: bool,
    how: How,
    optimize: Option<Bound<'py, PyAny>>,
    memory_limit: Option<Bound<'py, PyAny>>,
}

fn given<'a, 'py>(o: Option<&'a Bound<'py, PyAny>>) -> Option<&'a Bound<'py, PyAny>> {
    o.filter(|o| !o.is_none())
}

impl<'py> Call<'py> {
    /// Read the spec (or numpy's interleaved operands) and the keywords;
    /// the operands are the items of `operands` after the first `skip`
    /// (the spec, when `operands` is a call's whole argument tuple).
    pub fn new(
        py: Python<'py>,
        spec: &Bound<'py, PyAny>,
        operands: &Bound<'py, PyTuple>,
        skip: usize,
        k: Knobs<'_, 'py>,
    ) -> Res<Call<'py>> {
        let (spec, operands, skip) = match spec.cast::<PyString>() {
            Ok(s) => (
                s.to_str()
                    .map_err(|e| fail(Exc::Parse, format!("einsum: {e}")))?
                    .to_string(),
                operands.clone(),
                skip,
            ),
            Err(_) => {
                // interleaved: einsum(A, [0, 1], B, [1, 2], [0, 2])
                let all: Vec<Bound<'py, PyAny>> = std::iter::once(spec.clone())
                    .chain(operands.iter().skip(skip))
                    .collect();
                let all = PyTuple::new(py, all).map_err(raised)?;
                let r = dropin(py)
                    .and_then(|m| m.call_method1("_interleaved", (all,)))
                    .map_err(raised)?;
                let (s, ops): (String, Bound<'py, PyTuple>) = r.extract().map_err(raised)?;
                (s, ops, 0)
            }
        };
        let how = How {
            threads: threads_of(k.threads)?,
            fast_math: k.fast_math,
        };
        if let Some(d) = given(k.dtype) {
            let np = numpy(py).map_err(raised)?;
            let is_f64 = np
                .call_method1("dtype", (d,))
                .and_then(|t| t.getattr("char"))
                .and_then(|c| c.extract::<String>())
                .is_ok_and(|c| c == "d");
            if !is_f64 {
                return Err(fail(
                    Exc::DType,
                    format!(
                        "einsum: dtype={}: einsat computes in float64 only (dtype=None or float64)",
                        shown(d)
                    ),
                ));
            }
        }
        let fortran = match given(k.order) {
            None => false,
            Some(o) => match o.extract::<String>().as_deref() {
                Ok("K" | "k" | "A" | "a" | "C" | "c") => false,
                Ok("F" | "f") => true,
                _ => {
                    return Err(fail(
                        Exc::Option,
                        format!("einsum: order={}: expected 'K', 'A', 'C' or 'F'", shown(o)),
                    ))
                }
            },
        };
        if let Some(c) = given(k.casting) {
            match c.extract::<String>().as_deref() {
                Ok("safe" | "same_kind" | "unsafe") => {}
                Ok("no" | "equiv") => {
                    // only float64 arrays need no cast
                    for (n, o) in operands.iter().skip(skip).enumerate() {
                        let f64_array = o
                            .cast::<PyUntypedArray>()
                            .is_ok_and(|a| a.dtype().char() == b'd');
                        if !f64_array {
                            return Err(fail(
                                Exc::DType,
                                format!(
                                    "einsum: casting={}: operand {n} is not a float64 array, and einsat computes in float64",
                                    shown(c)
                                ),
                            ));
                        }
                    }
                }
                _ => {
                    return Err(fail(
                        Exc::Option,
                        format!(
                            "einsum: casting={}: expected 'no', 'equiv', 'safe', 'same_kind' or 'unsafe'",
                            shown(c)
                        ),
                    ))
                }
            }
        }
        Ok(Call {
            spec,
            operands,
            skip,
            fortran,
            how,
            optimize: given(k.optimize).cloned(),
            memory_limit: given(k.memory_limit).cloned(),
        })
    }

    /// The operands.
    pub fn operands(&self) -> impl Iterator<Item = Bound<'py, PyAny>> + '_ {
        self.operands.iter().skip(self.skip)
    }

    /// How many operands there are.
    pub fn len(&self) -> usize {
        self.operands.len() - self.skip
    }

    /// The cache key of the call for operands of `shapes`: `optimize=` and
    /// `memory_limit=` read (a path optimizer object is asked for its
    /// path now, with the sizes).
    pub fn key(&self, py: Python<'py>, shapes: &[&[usize]]) -> Res<Key> {
        let n = shapes.len();
        let mut memory = match &self.memory_limit {
            None => Memory::Default,
            Some(m) => memory_of(m, shapes)?,
        };
        let order = match &self.optimize {
            None => Order::Method(Method::Auto),
            Some(o) if o.is_instance_of::<pyo3::types::PyBool>() => Order::Method(Method::Auto),
            Some(o) if o.is_instance_of::<PyString>() => {
                let s: String = o.extract().map_err(raised)?;
                match method_of(&s) {
                    Ok(m) => Order::Method(m),
                    // a path function registered with opt_einsum
                    Err(e) => {
                        let f = dropin(py)
                            .and_then(|m| m.call_method1("_registered_path_fn", (&s,)))
                            .map_err(raised)?;
                        if f.is_none() {
                            return Err(e);
                        }
                        self.custom_path(py, &f, memory, shapes)?
                    }
                }
            }
            Some(o) if o.is_instance_of::<PyList>() || o.is_instance_of::<PyTuple>() => {
                // numpy's ('greedy', memory_limit)
                let pair: Option<(String, Bound<'py, PyAny>)> = o.extract().ok();
                match pair {
                    Some((m, limit)) if m != "einsum_path" => {
                        // numpy's limit may be 0: no intermediate beyond
                        // one element
                        let zero = limit.extract::<f64>().is_ok_and(|x| x == 0.0);
                        memory = if zero {
                            Memory::Elements(1.0)
                        } else {
                            memory_of(&limit, shapes)?
                        };
                        Order::Method(method_of(&m)?)
                    }
                    _ => {
                        let p = path_of(o)?;
                        check_path(&p, n)?;
                        Order::Path(p)
                    }
                }
            }
            Some(o) if o.hasattr("__call__").unwrap_or(false) => {
                self.custom_path(py, o, memory, shapes)?
            }
            Some(o) => {
                return Err(fail(
                    Exc::Option,
                    format!(
                        "optimize={}: expected False, True, a path optimizer's name, an explicit path or a PathOptimizer",
                        shown(o)
                    ),
                ))
            }
        };
        let mut dims: Vec<usize> = shapes.iter().map(|s| s.len()).collect();
        if planned(n) {
            for s in shapes {
                dims.extend_from_slice(s);
            }
        }
        Ok(Key {
            dims,
            how: self.how,
            planning: Planning { order, memory },
        })
    }
}

impl Call<'_> {
    /// The path a path optimizer object or function (opt_einsum's
    /// `PathOptimizer`, or any function of `(inputs, output, size_dict,
    /// memory_limit)`) chooses for operands of `shapes`, checked.
    fn custom_path(
        &self,
        py: Python<'_>,
        f: &Bound<'_, PyAny>,
        memory: Memory,
        shapes: &[&[usize]],
    ) -> Res<Order> {
        let limit = match memory {
            Memory::Default => None,
            Memory::Elements(e) => Some(e),
        };
        let ranks: Vec<usize> = shapes.iter().map(|s| s.len()).collect();
        let (explicit, labels) = expand(&self.spec, &ranks)?;
        let sizes = label_sizes_of(&self.spec, &labels, shapes.iter().copied())?;
        let r = dropin(py)
            .and_then(|m| m.call_method1("_custom_path", (f, explicit, sizes, limit)))
            .map_err(raised)?;
        let p = path_of(&r)?;
        check_path(&p, shapes.len())?;
        Ok(Order::Path(p))
    }
}

/// `memory_limit=` (opt_einsum's): `None` or `-1` einsat's default, a
/// whole number of elements ≥ 1, or `'max_input'` (the largest operand's
/// elements).
pub(crate) fn memory_of(m: &Bound<'_, PyAny>, shapes: &[&[usize]]) -> Res<Memory> {
    if m.is_none() {
        return Ok(Memory::Default);
    }
    if let Ok(s) = m.extract::<String>() {
        if s == "max_input" {
            let largest = shapes
                .iter()
                .map(|s| s.iter().map(|&d| d as f64).product::<f64>())
                .fold(1.0, f64::max);
            return Ok(Memory::Elements(largest));
        }
    } else if let Ok(x) = m.extract::<f64>() {
        if x == -1.0 {
            return Ok(Memory::Default);
        }
        if x >= 1.0 && !m.is_instance_of::<pyo3::types::PyBool>() {
            return Ok(Memory::Elements(x.floor()));
        }
    }
    Err(fail(
        Exc::Option,
        format!(
            "memory_limit={}: expected None or -1 (einsat's default: the largest operand or result, or 2**27 elements, whichever is larger), a number of elements >= 1, or 'max_input'",
            shown(m)
        ),
    ))
}

/// Per label (in order of first appearance), its size: the axes' size
/// that is not 1 (numpy's broadcasting). Two sizes of a label that are not
/// 1 and differ are a `ShapeError` naming both operands with the
/// subscripts of `spec` (the user's) and the index letter
/// ([`words::size_mismatch`]).
pub(crate) fn label_sizes_of<'s>(
    spec: &str,
    labels: &[Vec<char>],
    shapes: impl IntoIterator<Item = &'s [usize]>,
) -> Res<Vec<(char, usize)>> {
    // per label: its size, and the operand and axis that gave it
    let mut size: Vec<(char, usize, (usize, usize))> = Vec::with_capacity(8);
    for (k, (l, s)) in labels.iter().zip(shapes).enumerate() {
        for (axis, (&lab, &n)) in l.iter().zip(s.iter()).enumerate() {
            match size.iter_mut().find(|e| e.0 == lab) {
                None => size.push((lab, n, (k, axis))),
                Some(e) if e.1 == 1 => *e = (lab, n, (k, axis)),
                Some(e) if n != 1 && n != e.1 => {
                    return Err(fail(
                        Exc::Shape,
                        words::size_mismatch(
                            spec,
                            labels,
                            lab,
                            (e.2 .0, e.2 .1, e.1),
                            (k, axis, n),
                        ),
                    ))
                }
                Some(_) => {}
            }
        }
    }
    Ok(size.into_iter().map(|e| (e.0, e.1)).collect())
}

/// An einsum optimised for a key: its explicit spec, labels and the
/// optimiser's result.
pub(crate) struct Planned {
    pub explicit: String,
    pub labels: Vec<Vec<char>>,
    pub optimized: opt::Optimized,
}

/// Optimise the einsum `spec` for `key` (operands of `shapes`), planning
/// with the sizes when the key has them (or `with_sizes`).
pub(crate) fn optimize_einsum(spec: &str, key: &Key, shapes: &[&[usize]]) -> Res<Planned> {
    plan_einsum(spec, key, shapes, false)
}

fn plan_einsum(spec: &str, key: &Key, shapes: &[&[usize]], with_sizes: bool) -> Res<Planned> {
    let n = shapes.len();
    let (explicit, labels) = expand(spec, key.ranks(n))?;
    let f = einsat::frontend::einsum::einsum(&explicit).map_err(|e| from_einsat(e, None))?;
    let mut opts = opt::Options {
        fast_math: key.how.fast_math,
        ..opt::Options::default()
    };
    let sizes = label_sizes_of(spec, &labels, shapes.iter().copied())?;
    if with_sizes || key.dims.len() > n {
        for (c, s) in sizes {
            opts.sizes.insert(
                format!("n{}", einsat::frontend::einsum::index_name(c)),
                s.max(1),
            );
        }
    }
    if let Memory::Elements(e) = key.planning.memory {
        opts.memory_limit = Some(e);
    }
    match &key.planning.order {
        // the exact search is bounded (it refuses larger networks)
        Order::Method(Method::Optimal) if n > einsat::plan::dp::CONNECTED_MAX => {}
        Order::Method(m) => opts.plan = *m,
        Order::Path(p) if n >= 2 => opts.path = Some(p.clone()),
        Order::Path(_) => {}
    }
    let optimized = match opt::optimize(&f, &opts) {
        Ok(o) => o,
        // the path fits the operands (`check_path`) but not the network
        // einsat plans (a factor taken out, a scalar operand): plan it
        Err(einsat::Error::Plan(_)) if opts.path.is_some() => {
            opts.path = None;
            opt::optimize(&f, &opts).map_err(|e| in_terms(e, spec, &labels))?
        }
        Err(e) => return Err(in_terms(e, spec, &labels)),
    };
    Ok(Planned {
        explicit,
        labels,
        optimized,
    })
}

/// An error of the function `spec` compiles to, in the user's terms.
fn in_terms(e: einsat::Error, spec: &str, labels: &[Vec<char>]) -> Failure {
    let mut f = from_einsat(e, None);
    f.message = words::in_user_terms(&f.message, spec, labels);
    f
}

/// The operand a planned tensor reads, from its text (`A[i, j]`, `C`,
/// `T26[k]`): `A`…`Z` are operands 0…25, `Tk` operand k.
fn operand_of(tensor: &str) -> Option<usize> {
    let name: String = tensor
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect();
    let b = name.as_bytes();
    match b {
        [c] if c.is_ascii_uppercase() => Some((c - b'A') as usize),
        [b'T', rest @ ..] if !rest.is_empty() => name[1..].parse().ok(),
        _ => None,
    }
}

/// The contraction path einsat runs, in numpy's linear form over all `n`
/// operands: the first planned network's steps (its tensors mapped to the
/// operands they read), then every tensor left in one step; without a
/// plan (one or two operands, or no product to plan), all in one step.
fn full_path(n: usize, plans: &[einsat::egraph::seed::PlannedNetwork]) -> (Vec<Vec<usize>>, bool) {
    let all = |k: usize| vec![(0..k).collect::<Vec<usize>>()];
    let Some(net) = plans.first() else {
        return (all(n), false);
    };
    let ops: Option<Vec<usize>> = net.tensors.iter().map(|t| operand_of(t)).collect();
    let Some(ops) = ops.filter(|o| {
        let mut s = o.clone();
        s.sort_unstable();
        s.dedup();
        s.len() == o.len() && o.iter().all(|&k| k < n)
    }) else {
        return (all(n), false);
    };
    // the current list: operands and steps' results
    #[derive(PartialEq)]
    enum Item {
        Operand(usize),
        Step(usize),
    }
    let mut current: Vec<Item> = (0..n).map(Item::Operand).collect();
    let m = ops.len();
    let mut path = Vec::new();
    for (s, step) in net.plan.steps.iter().enumerate() {
        let item = |id: usize| {
            if id < m {
                Item::Operand(ops[id])
            } else {
                Item::Step(id - m)
            }
        };
        let pos: Option<Vec<usize>> = step
            .operands
            .iter()
            .map(|&id| current.iter().position(|c| *c == item(id)))
            .collect();
        let Some(pos) = pos else {
            return (all(n), false);
        };
        let mut del = pos.clone();
        del.sort_unstable_by(|a, b| b.cmp(a));
        for p in del {
            current.remove(p);
        }
        current.push(Item::Step(s));
        path.push(pos);
    }
    if current.len() > 1 {
        path.push((0..current.len()).collect());
    }
    (path, true)
}

/// The contraction einsat plans for an einsum call (for `einsum_path` and
/// `contract_path`): a dict of `spec` (explicit, ellipses expanded),
/// `inputs` (each operand's labels), `output`, `sizes` (label → size),
/// `path` (numpy's linear form, over the operands), `planned` (whether
/// the path is the planner's; else one step of everything: one or two
/// operands, or nothing to plan), `plan` (the planner's report of the
/// first network, as `einsat opt --json` has it, or None), `networks`.
#[pyfunction]
#[pyo3(signature = (spec, *operands, optimize=None, memory_limit=None, fast_math=false))]
fn _plan<'py>(
    py: Python<'py>,
    spec: &Bound<'py, PyAny>,
    operands: &Bound<'py, PyTuple>,
    optimize: Option<&Bound<'py, PyAny>>,
    memory_limit: Option<&Bound<'py, PyAny>>,
    fast_math: bool,
) -> PyResult<Py<PyAny>> {
    let run = || -> Res<Py<PyAny>> {
        let call = Call::new(
            py,
            spec,
            operands,
            0,
            Knobs {
                threads: None,
                fast_math,
                optimize,
                memory_limit,
                dtype: None,
                order: None,
                casting: None,
            },
        )?;
        // shapes only: operands need not be float64 here
        let mut shapes: Vec<Vec<usize>> = Vec::new();
        for (k, o) in call.operands().enumerate() {
            shapes.push(shape_of(py, &o, k)?);
        }
        let sh: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
        let key = call.key(py, &sh)?;
        let p = native(py, || plan_einsum(&call.spec, &key, &sh, true))?;
        let (path, is_planned) = full_path(sh.len(), &p.optimized.report.plans);
        let d = PyDict::new(py);
        let e = |e: PyErr| raised(e);
        let (lhs, out) = p.explicit.split_once("->").unwrap_or((&p.explicit, ""));
        d.set_item("spec", &p.explicit).map_err(e)?;
        d.set_item("inputs", lhs.split(',').collect::<Vec<_>>())
            .map_err(e)?;
        d.set_item("output", out).map_err(e)?;
        let sizes = PyDict::new(py);
        for (c, s) in label_sizes_of(&call.spec, &p.labels, sh.iter().copied())? {
            sizes.set_item(c.to_string(), s).map_err(e)?;
        }
        d.set_item("sizes", sizes).map_err(e)?;
        let steps: Vec<Bound<'py, PyTuple>> = path
            .iter()
            .map(|s| PyTuple::new(py, s))
            .collect::<PyResult<_>>()
            .map_err(e)?;
        d.set_item("path", steps).map_err(e)?;
        d.set_item("planned", is_planned).map_err(e)?;
        let plan = match p.optimized.report.plans.first() {
            Some(n) => py
                .import("json")
                .and_then(|j| j.call_method1("loads", (opt::plan_json(n).to_string(),)))
                .map_err(e)?
                .unbind(),
            None => py.None(),
        };
        d.set_item("plan", plan).map_err(e)?;
        d.set_item("networks", p.optimized.report.plans.len())
            .map_err(e)?;
        Ok(d.into_any().unbind())
    };
    run().map_err(|f| to_py_err(py, f))
}

/// The shape of an operand without converting it (a number: `()`).
fn shape_of(py: Python<'_>, o: &Bound<'_, PyAny>, k: usize) -> Res<Vec<usize>> {
    if let Ok(a) = o.cast::<PyUntypedArray>() {
        return Ok(a.shape().to_vec());
    }
    let op = operand(py, o, &OperandNo(k))?;
    Ok(op.shape().to_vec())
}

/// An einsum compiled once for fixed operand shapes
/// (`einsat.contract_expression`): call it with arrays of those shapes.
#[pyclass(frozen, module = "einsat")]
struct Prepared {
    compiled: Arc<Compiled>,
    shapes: Vec<Vec<usize>>,
}

/// Plan and compile the einsum `spec` for operands of `shapes` (a tuple of
/// shapes); the keywords as `einsum`'s.
#[pyfunction]
#[pyo3(signature = (spec, shapes, optimize=None, memory_limit=None, threads=None, fast_math=false))]
fn _prepare<'py>(
    py: Python<'py>,
    spec: &Bound<'py, PyAny>,
    shapes: Vec<Vec<usize>>,
    optimize: Option<&Bound<'py, PyAny>>,
    memory_limit: Option<&Bound<'py, PyAny>>,
    threads: Option<&Bound<'py, PyAny>>,
    fast_math: bool,
) -> PyResult<Prepared> {
    let run = || -> Res<Prepared> {
        let none = PyTuple::empty(py);
        let call = Call::new(
            py,
            spec,
            &none,
            0,
            Knobs {
                threads,
                fast_math,
                optimize,
                memory_limit,
                dtype: None,
                order: None,
                casting: None,
            },
        )?;
        let sh: Vec<&[usize]> = shapes.iter().map(Vec::as_slice).collect();
        let key = call.key(py, &sh)?;
        let compiled = compiled_for(py, &call.spec, &key, &sh)?;
        Ok(Prepared { compiled, shapes })
    };
    run().map_err(|f| to_py_err(py, f))
}

#[pymethods]
impl Prepared {
    /// Run on operands of the shapes the expression was made for (into
    /// `out` when given).
    #[pyo3(signature = (*operands, out=None))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        operands: &Bound<'py, PyTuple>,
        out: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let run = || -> Res<PyResult<Py<PyAny>>> {
            if operands.len() != self.shapes.len() {
                return Err(fail(
                    Exc::Shape,
                    format!(
                        "contract_expression: the expression takes {} operand{} but {} {} given",
                        self.shapes.len(),
                        if self.shapes.len() == 1 { "" } else { "s" },
                        operands.len(),
                        if operands.len() == 1 { "was" } else { "were" }
                    ),
                ));
            }
            let mut ops = Vec::with_capacity(operands.len());
            for (k, o) in operands.iter().enumerate() {
                let op = operand(py, &o, &OperandNo(k))?;
                if op.shape() != self.shapes[k].as_slice() {
                    return Err(fail(
                        Exc::Shape,
                        format!(
                            "contract_expression: operand {k} has shape {:?} but the expression was made for shape {:?}; make another expression for other shapes",
                            op.shape(),
                            self.shapes[k]
                        ),
                    ));
                }
                ops.push(op);
            }
            run_einsum(py, &self.compiled, &ops, out, false)
        };
        run().map_err(|f| to_py_err(py, f))?
    }

    /// The operand shapes the expression takes.
    #[getter]
    fn shapes(&self) -> Vec<Vec<usize>> {
        self.shapes.clone()
    }

    /// Per stage, how the compiled kernel runs (`gemm M×N×K` or `native`).
    #[getter]
    fn stages(&self) -> Vec<String> {
        self.compiled.kernel.stages()
    }
}

/// Add this module's functions and classes to `einsat._einsat`.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_plan, m)?)?;
    m.add_function(wrap_pyfunction!(_prepare, m)?)?;
    m.add_class::<Prepared>()?;
    Ok(())
}
