//! `einsat._einsat`: the native half of the `einsat` Python package (the
//! Python half, `python/einsat/__init__.py`, holds the exception classes and
//! the documentation).
//!
//! This crate owns the boundary between Python and einsat:
//!
//! - **operands** ([`Operand`]): float64 numpy arrays are read in place (any
//!   strides, negative ones too); other numeric dtypes (bool, signed and
//!   unsigned integers, float16/32, longdouble) and Python numbers or
//!   nested lists are converted to float64 once; complex, object, string,
//!   datetime and other dtypes are refused;
//! - **einsum** ([`einsum`]): numpy's grammar with `...` and size-1
//!   broadcasting, compiled once per spec, operand ranks and thread count
//!   (sizes stay symbolic) and cached ([`EinsumCache`]); a one-operand
//!   einsum that sums nothing is numpy's view of the operand, errors are in
//!   the user's terms ([`words`]), and einsums of other dtypes go to
//!   `einsat/_typed.py` and [`typed`];
//! - **programs** ([`compile`], [`Kernel`], [`optimize`], [`check`]); a
//!   Kernel pickles as its source text and options (the receiver, e.g. a
//!   dask worker, compiles it again), and [`_function_json`] hands
//!   `einsat.dask` a function's parsed tree (read-only) to decide how it
//!   splits into chunks; a Kernel called with float32 (or float16)
//!   arguments computes in f32 ([`float32`]);
//! - **errors** ([`to_py_err`]): every einsat error becomes an instance of
//!   a subclass of `einsat.Error` in one place; a panic is caught and
//!   reported as `einsat.Error` instead of reaching Python.
//!
//! The GIL is released while einsat optimises, compiles or runs a kernel
//! (except einsum contractions of at most [`SMALL_WORK`] multiply-adds,
//! which take less time than handing the GIL over and back). A call
//! expected to take long runs on a helper thread while the calling thread
//! checks for signals, so Ctrl-C stops it (`KeyboardInterrupt`, see
//! [`interruptible`]); the others run on the calling thread, where the
//! hand-over would cost more than the wait for Ctrl-C saves. How long a
//! call takes is predicted from its estimated work and the kernel's speed
//! on its earlier calls ([`Pace`]). Every buffer of data
//! einsat allocates for a call is allocated fallibly: memory the system
//! refuses raises `einsat.OutOfMemoryError` (a `MemoryError`).

mod contract;
mod float32;
mod index;
mod ints;
mod operand;
mod typed;
mod words;

use einsat::interp::{Boundary, Value};
use einsat::jit::{Arg, ArgMut};
use einsat::syntax::{print_function, Function};
use einsat::{jit, opt};
use ndarray::{ArrayViewD, ArrayViewMutD, IxDyn};
use numpy::{
    PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyUntypedArray, PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyFloat, PyList, PyString, PyTuple};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Display;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

// ---------------------------------------------------------------- errors

/// The exception classes, defined in `einsat/__init__.py`.
#[derive(Clone, Copy)]
enum Exc {
    Error,
    Parse,
    TypeCheck,
    Shape,
    DType,
    Compile,
    Option,
    Memory,
}

impl Exc {
    fn name(self) -> &'static str {
        match self {
            Exc::Error => "Error",
            Exc::Parse => "ParseError",
            Exc::TypeCheck => "TypeCheckError",
            Exc::Shape => "ShapeError",
            Exc::DType => "DTypeError",
            Exc::Compile => "CompileError",
            Exc::Option => "OptionError",
            Exc::Memory => "OutOfMemoryError",
        }
    }
}

/// An error on its way to Python: the class, the message and, for source
/// errors, every diagnostic as (line, column, message); or a Python
/// exception already raised (`KeyboardInterrupt` from a signal handler
/// while a kernel ran).
struct Failure {
    exc: Exc,
    message: String,
    diags: Vec<(Option<usize>, Option<usize>, String)>,
    raised: Option<PyErr>,
}

type Res<T> = std::result::Result<T, Failure>;

fn fail(exc: Exc, message: impl Into<String>) -> Failure {
    Failure {
        exc,
        message: message.into(),
        diags: Vec::new(),
        raised: None,
    }
}

/// Source errors (`exc` is `Parse` or `TypeCheck`): the rendered
/// diagnostics (`<source>:line:col: error: …` with the line underlined when
/// the source is known) and each one's position.
fn source_failure(exc: Exc, d: &[einsat::diag::Diagnostic], src: Option<&str>) -> Failure {
    let message = match src {
        Some(s) => einsat::diag::render_all(d, "<source>", s),
        None => d
            .iter()
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
            .join("\n"),
    };
    let diags = d
        .iter()
        .map(|d| {
            let lc = src.and_then(|s| d.line_col(s));
            (lc.map(|x| x.0), lc.map(|x| x.1), d.message.clone())
        })
        .collect();
    Failure {
        exc,
        message,
        diags,
        raised: None,
    }
}

/// Call-error variants by name (the typed call errors of the `api` work:
/// arity, rank, shapes, size names, outputs, …): wrong arguments.
const ARGUMENT_ERRORS: &[&str] = &[
    "Call",
    "Gather",
    "Arity",
    "Rank",
    "NotPair",
    "Shape",
    "SizeName",
    "UnboundSize",
    "TooLarge",
    "Output",
    "MissingArgument",
    "UnknownArgument",
];

/// The one place an `einsat::Error` is mapped to an exception class.
/// `src` is the source text the error is about (for line:column).
fn from_einsat(e: einsat::Error, src: Option<&str>) -> Failure {
    use einsat::Error as E;
    match e {
        E::Parse(d) => source_failure(Exc::Parse, &d, src),
        E::Type(d) => source_failure(Exc::TypeCheck, &d, src),
        E::Frontend(m) => fail(Exc::Parse, m),
        E::Jit(m) => fail(Exc::Compile, format!("jit: {m}")),
        E::Options(m) => fail(Exc::Option, m),
        e @ E::OutOfMemory { .. } => fail(Exc::Memory, e.to_string()),
        // every other variant, also those added later, by its name: the
        // argument errors are ShapeError, the rest (I/O, rule files) Error
        #[allow(unreachable_patterns)]
        other => {
            let debug = format!("{other:?}");
            let variant = debug
                .split(|c: char| !c.is_ascii_alphanumeric())
                .next()
                .unwrap_or("");
            let exc = if ARGUMENT_ERRORS.contains(&variant) {
                Exc::Shape
            } else {
                Exc::Error
            };
            fail(exc, other.to_string())
        }
    }
}

static EXCEPTIONS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

fn to_py_err(py: Python<'_>, f: Failure) -> PyErr {
    if let Some(e) = f.raised {
        return e;
    }
    let module = EXCEPTIONS.get_or_try_init(py, || py.import("einsat").map(|m| m.unbind()));
    let cls = match module.and_then(|m| m.bind(py).getattr(f.exc.name())) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let (line, col) = f.diags.first().map_or((None, None), |d| (d.0, d.1));
    let diags: Vec<(Option<usize>, Option<usize>, String)> = f.diags;
    match cls.call1((f.message, line, col, diags)) {
        Ok(v) => PyErr::from_value(v),
        Err(e) => e,
    }
}

/// Run `f` with the GIL released, turning a panic into an error.
fn native<T: Send>(py: Python<'_>, f: impl FnOnce() -> Res<T> + Send) -> Res<T> {
    py.detach(|| guarded(f))
}

fn guarded<T>(f: impl FnOnce() -> Res<T>) -> Res<T> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let what = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        Err(fail(
            Exc::Error,
            format!("internal error (a bug in einsat, please report it): {what}"),
        ))
    })
}

/// A kernel's first call (its speed not yet measured, see [`Pace`]) runs
/// on a helper thread while the calling thread waits, checking for signals
/// ([`interruptible`]), when its estimated work ([`jit::Kernel::work`])
/// reaches this; a smaller one (a few milliseconds at most) runs on the
/// calling thread.
pub(crate) const INTERRUPTIBLE_WORK: u64 = 1 << 22;

/// Once a kernel's speed is known ([`Pace`]), a call predicted to take
/// this long or longer runs on a helper thread ([`interruptible`]), a
/// shorter one on the calling thread: Ctrl-C waits for it at most about
/// this long, and the hand-over (starting a thread, waking the caller:
/// tens of microseconds on an idle machine, milliseconds on a loaded one,
/// where each wake-up waits for a core) costs a small fraction of it.
const INLINE_TIME: Duration = Duration::from_millis(20);

/// A kernel's speed on its calls so far: picoseconds per unit of
/// estimated work (0: not measured yet), from the time its calls took.
/// A slower call is believed at once (a call must not be predicted
/// shorter than it may take: Ctrl-C waits for calls run on the calling
/// thread); a faster one moves the figure three quarters of the way (the
/// first call also compiles the arguments' layout, and a loaded machine
/// slows calls at random). Shared by the threads calling the kernel;
/// their updates may race, any of them is a fair figure.
#[derive(Debug, Default)]
struct Pace(AtomicU64);

impl Pace {
    /// Whether a call of estimated work `work` runs on the calling thread.
    fn inline(&self, work: u64) -> bool {
        match self.0.load(Ordering::Relaxed) {
            0 => work < INTERRUPTIBLE_WORK,
            ps => u128::from(work) * u128::from(ps) < INLINE_TIME.as_nanos() * 1000,
        }
    }

    /// Record that a call of estimated work `work` took `took`.
    fn note(&self, work: u64, took: Duration) {
        if work == 0 {
            return;
        }
        let seen =
            (took.as_nanos() * 1000 / u128::from(work)).clamp(1, u128::from(u64::MAX)) as u64;
        let old = self.0.load(Ordering::Relaxed);
        let new = if old == 0 || seen >= old {
            seen
        } else {
            old / 4 + seen - seen / 4
        };
        self.0.store(new, Ordering::Relaxed);
    }
}

/// How often the waiting thread checks for signals.
const SIGNAL_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// Run the kernel call `f` so that Ctrl-C stops it: on a helper thread
/// under a [`jit::Cancel`] token, while this thread waits without the
/// GIL and, every [`SIGNAL_POLL`], takes the GIL to run Python's signal
/// handlers (`py.check_signals()`). When a handler raises (the default
/// SIGINT handler raises `KeyboardInterrupt`), the token is cancelled, the
/// kernel stops within its next poll (see `jit::Cancel`), and the
/// exception is raised here. If no thread can be started, `f` runs on this
/// thread (not interruptible).
fn interruptible<T: Send>(py: Python<'_>, f: impl FnOnce() -> Res<T> + Send) -> Res<T> {
    let cancel = jit::Cancel::new();
    // the call, taken by whichever thread runs it, and its end
    let job = Mutex::new(Some(f));
    let done = (Mutex::new(false), std::sync::Condvar::new());
    let take = || job.lock().ok().and_then(|mut j| j.take());
    std::thread::scope(|s| {
        let task = || {
            let r = match take() {
                Some(f) => guarded(|| cancel.run(f)),
                None => Err(fail(Exc::Error, "internal error: the call ran twice")),
            };
            if let Ok(mut d) = done.0.lock() {
                *d = true;
            }
            done.1.notify_all();
            r
        };
        let handle = match std::thread::Builder::new()
            .name("einsat-call".into())
            .spawn_scoped(s, task)
        {
            Ok(h) => h,
            Err(_) => {
                return match take() {
                    Some(f) => native(py, f),
                    None => Err(fail(Exc::Error, "internal error: the call was lost")),
                };
            }
        };
        // wait without the GIL, `SIGNAL_POLL` at a time: whether it ended
        let wait = |timeout: Option<std::time::Duration>| {
            py.detach(|| {
                let Ok(mut d) = done.0.lock() else {
                    return true;
                };
                while !*d {
                    match timeout {
                        Some(t) => match done.1.wait_timeout(d, t) {
                            Ok((g, r)) => {
                                d = g;
                                if r.timed_out() {
                                    return *d;
                                }
                            }
                            Err(_) => return true,
                        },
                        None => match done.1.wait(d) {
                            Ok(g) => d = g,
                            Err(_) => return true,
                        },
                    }
                }
                true
            })
        };
        let mut raised = None;
        while !wait(Some(SIGNAL_POLL)) {
            if let Err(e) = py.check_signals() {
                // the kernel stops at its next poll: wait for it
                cancel.cancel();
                raised = Some(e);
                wait(None);
                break;
            }
        }
        let r = py.detach(|| handle.join()).unwrap_or_else(|_| {
            Err(fail(
                Exc::Error,
                "internal error (a bug in einsat, please report it): the call's thread panicked",
            ))
        });
        match raised {
            Some(e) => Err(Failure {
                raised: Some(e),
                ..fail(Exc::Error, "interrupted")
            }),
            None => r,
        }
    })
}

/// Run a kernel call: with the GIL held when `small` (einsum's tiny
/// contractions), with it released on this thread when it is predicted to
/// be short (by the kernel's `pace`, see [`Pace`]), else
/// [`interruptible`]; its time goes into `pace`.
pub(crate) fn run_call<T: Send>(
    py: Python<'_>,
    small: bool,
    work: Option<u64>,
    pace: &Pace,
    f: impl FnOnce() -> Res<T> + Send,
) -> Res<T> {
    if small {
        return guarded(f);
    }
    // (no estimate: arguments the call refuses at once)
    let Some(work) = work else {
        return native(py, f);
    };
    let timed = || {
        let t = Instant::now();
        let r = f();
        if r.is_ok() {
            pace.note(work, t.elapsed());
        }
        r
    };
    if pace.inline(work) {
        native(py, timed)
    } else {
        interruptible(py, timed)
    }
}

// ---------------------------------------------------------------- operands

fn numpy(py: Python<'_>) -> PyResult<&Bound<'_, PyModule>> {
    static NP: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    NP.get_or_try_init(py, || py.import("numpy").map(|m| m.unbind()))
        .map(|m| m.bind(py))
}

/// A Python argument read as float64: a number, or a numpy array borrowed
/// for reading (in place when it already is an aligned float64 array).
type Operand<'py> = operand::Operand<'py, f64>;

/// `operand K` in messages (formatted only for an error).
struct OperandNo(usize);

impl Display for OperandNo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "operand {}", self.0)
    }
}

/// Read one argument (`what` names it in errors). The conversion rule:
/// float64 arrays are used in place; bool, integer and other float arrays
/// (and Python numbers and nested lists of them) are converted to float64;
/// every other dtype is refused.
fn operand<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>, what: &dyn Display) -> Res<Operand<'py>> {
    if let Some(op) = operand::in_place(obj, what)? {
        return Ok(op);
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Ok(Operand::Num(f.value()));
    }
    if obj.is_instance_of::<pyo3::types::PyInt>() || obj.is_instance_of::<pyo3::types::PyBool>() {
        return obj
            .extract::<f64>()
            .map(Operand::Num)
            .map_err(|e| fail(Exc::DType, format!("{what}: {e}")));
    }
    // a fresh, aligned, C-order float64 copy
    operand::converted(py, obj, what, "float64", true)
}

/// The one place arguments cross into einsat: borrowed views (read and
/// written in place), the result allocated by the kernel when there is no
/// `out` (then `Some(result)`).
fn call_kernel(
    k: &jit::Kernel,
    args: &[Arg<'_>],
    out: Option<ArrayViewMutD<'_, f64>>,
) -> Res<Option<Value>> {
    match out {
        None => k
            .call_args(args)
            .map(Some)
            .map_err(|e| from_einsat(e, None)),
        Some(o) => k
            .call_args_into(args, &mut ArgMut::Array(o))
            .map(|()| None)
            .map_err(|e| from_einsat(e, None)),
    }
}

/// `numpy.float64(x)`.
fn float64(py: Python<'_>, x: f64) -> PyResult<Py<PyAny>> {
    static F64: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    let t = F64.get_or_try_init(py, || numpy(py)?.getattr("float64").map(|t| t.unbind()))?;
    t.bind(py).call1((x,)).map(|v| v.unbind())
}

fn value_to_py(py: Python<'_>, v: Value) -> PyResult<Py<PyAny>> {
    Ok(match v {
        // a numpy float64 (a subclass of float), as numpy returns
        Value::Real(x) => float64(py, x)?,
        Value::Array(a) => PyArrayDyn::from_owned_array(py, a).into_any().unbind(),
        Value::Pair(a, b) => PyTuple::new(py, [value_to_py(py, *a)?, value_to_py(py, *b)?])?
            .into_any()
            .unbind(),
    })
}

/// `threads=`: None (all cores) or 1 to [`jit::MAX_THREADS`], the limit
/// the command line and the Rust API share; else `OptionError`.
fn threads_of(threads: Option<&Bound<'_, PyAny>>) -> Res<usize> {
    match threads {
        None => Ok(0),
        Some(t) if t.is_none() => Ok(0),
        Some(t) => match t.extract::<i64>() {
            Ok(n) if (1..=jit::MAX_THREADS as i64).contains(&n) => Ok(n as usize),
            _ => Err(fail(
                Exc::Option,
                format!(
                    "threads must be None (all cores) or a whole number from 1 to {}, not {}",
                    jit::MAX_THREADS,
                    shown(t)
                ),
            )),
        },
    }
}

/// A Python object in an error message: its `repr`, cut to a bounded
/// excerpt.
fn shown(o: &Bound<'_, PyAny>) -> String {
    let r = o.repr().map(|r| r.to_string()).unwrap_or_default();
    einsat::diag::quote(&r)
}

// ---------------------------------------------------------------- einsum

/// One compiled einsum: the kernel and every operand's labels.
struct Compiled {
    kernel: Arc<jit::Kernel>,
    /// Per operand, the label of each axis (ellipses expanded).
    labels: Vec<Vec<char>>,
    /// The spec as the user wrote it (for messages in the user's terms).
    spec: String,
    /// The kernel's speed so far.
    pace: Pace,
}

impl Compiled {
    /// A failure of the kernel's call in the user's terms (operands by
    /// position and subscripts, indices by letter; see [`words`]).
    fn reworded(&self, mut f: Failure) -> Failure {
        if f.raised.is_none() {
            f.message = words::in_user_terms(&f.message, &self.spec, &self.labels);
        }
        f
    }
}

/// How an einsum is compiled: its thread count and the optimiser's mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct How {
    threads: usize,
    fast_math: bool,
}

/// What an einsum kernel is compiled for, besides its spec text: the
/// operands' ranks, or (planned einsums of 3 or more operands, see
/// [`contract::planned`]) their shapes, so that the planner plans with the
/// real sizes; how; and the contraction planning asked for.
#[derive(Clone, Debug, PartialEq)]
struct Key {
    /// The operands' ranks, then (planned einsums) every operand's shape.
    dims: Vec<usize>,
    how: How,
    planning: contract::Planning,
}

impl Key {
    fn ranks(&self, n: usize) -> &[usize] {
        &self.dims[..n]
    }
}

/// Kernels per spec text, then per key.
type EinsumCache = HashMap<String, Vec<(Key, Arc<Compiled>)>>;

/// Compiled einsums kept at most (the whole cache is dropped past it).
const EINSUM_CACHE_MAX: usize = 1024;

static CACHE: Mutex<Option<EinsumCache>> = Mutex::new(None);

/// A cache entry with its key: spec, key.
type Entry = (String, Key, Arc<Compiled>);

thread_local! {
    /// This thread's last einsum: a repeated call skips the shared cache.
    static LAST: std::cell::RefCell<Option<Entry>> =
        const { std::cell::RefCell::new(None) };
}

fn cached(spec: &str, key: &Key) -> Option<Arc<Compiled>> {
    let hit = LAST.with(|l| {
        l.borrow()
            .as_ref()
            .and_then(|(s, k, c)| (s == spec && k == key).then(|| c.clone()))
    });
    if hit.is_some() {
        return hit;
    }
    let found = cached_shared(spec, key)?;
    LAST.with(|l| *l.borrow_mut() = Some((spec.to_string(), key.clone(), found.clone())));
    Some(found)
}

fn cached_shared(spec: &str, key: &Key) -> Option<Arc<Compiled>> {
    let c = CACHE.lock().ok()?;
    c.as_ref()?
        .get(spec)?
        .iter()
        .find(|(k, _)| k == key)
        .map(|e| e.1.clone())
}

fn remember(spec: &str, key: &Key, k: Arc<Compiled>) {
    if let Ok(mut c) = CACHE.lock() {
        let map = c.get_or_insert_with(HashMap::new);
        let n: usize = map.values().map(|v| v.len()).sum();
        if n >= EINSUM_CACHE_MAX {
            map.clear();
        }
        map.entry(spec.to_string())
            .or_default()
            .push((key.clone(), k));
    }
}

/// The compiled einsum for `spec` and `key`: cached, or optimised and
/// compiled now (GIL released) and remembered.
fn compiled_for(py: Python<'_>, spec: &str, key: &Key, shapes: &[&[usize]]) -> Res<Arc<Compiled>> {
    if let Some(c) = cached(spec, key) {
        return Ok(c);
    }
    let c = Arc::new(native(py, || compile_einsum(spec, key, shapes))?);
    remember(spec, key, c.clone());
    Ok(c)
}

fn spec_err(m: impl Into<String>) -> Failure {
    fail(Exc::Parse, format!("einsum: {}", m.into()))
}

/// A spec error at a character of the spec (line 1, 1-based column; the
/// message quotes an excerpt of the spec around it).
fn spec_err_at(spec: &str, byte: usize, m: impl Into<String>) -> Failure {
    let m = format!("einsum: {}", m.into());
    let col = spec[..byte.min(spec.len())].chars().count() + 1;
    Failure {
        exc: Exc::Parse,
        message: format!("{m} ({})", einsat::frontend::einsum::where_in(spec, byte)),
        diags: vec![(Some(1), Some(col), m)],
        raised: None,
    }
}

/// Expand a numpy spec for operands of the given ranks into explicit form
/// without ellipses: `(explicit spec, labels per operand)` — the einsum
/// front end's [`einsat::frontend::einsum::expand_ellipsis`], its errors as
/// the Python exceptions (`ParseError` for the spec's grammar, with the
/// column; `ShapeError` for operands that do not fit it).
fn expand(spec: &str, ranks: &[usize]) -> Res<(String, Vec<Vec<char>>)> {
    match einsat::frontend::einsum::expand_ellipsis(spec, ranks) {
        Ok(e) => Ok((e.explicit, e.labels)),
        Err(e) if e.operands => Err(fail(Exc::Shape, format!("einsum: {}", e.message))),
        Err(e) => Err(match e.byte {
            Some(at) => spec_err_at(spec, at, e.message),
            None => spec_err(e.message),
        }),
    }
}

/// Optimise and compile a function (GIL released by the caller).
fn build(f: &Function, how: How) -> Res<(Arc<jit::Kernel>, opt::Optimized)> {
    let opts = opt::Options {
        fast_math: how.fast_math,
        ..opt::Options::default()
    };
    let o = opt::optimize(f, &opts).map_err(|e| from_einsat(e, None))?;
    Ok((jit_compile(&o, how)?, o))
}

/// Compile an optimised function (GIL released by the caller).
fn jit_compile(o: &opt::Optimized, how: How) -> Res<Arc<jit::Kernel>> {
    jit::compile_with(
        &o.program,
        &jit::Options {
            threads: how.threads,
            ..jit::Options::default()
        },
    )
    .map_err(|e| from_einsat(e, None))
}

/// Optimise and compile the einsum `spec` for `key` (operands of shapes
/// `shapes`; GIL released by the caller).
fn compile_einsum(spec: &str, key: &Key, shapes: &[&[usize]]) -> Res<Compiled> {
    let planned = contract::optimize_einsum(spec, key, shapes)?;
    let kernel = jit_compile(&planned.optimized, key.how)?;
    Ok(Compiled {
        kernel,
        labels: planned.labels,
        spec: spec.to_string(),
        pace: Pace::default(),
    })
}

/// Per label its size, whether broadcasting is needed, and the work.
type LabelSizes = (Vec<(char, usize)>, bool, u128);

/// Per label, the size of its axes (numpy's broadcasting: the size that is
/// not 1), as `(label, size)`; whether some operand's size-1 axis must be
/// broadcast; and the product of all label sizes (the work of the
/// contraction as written).
/// Two sizes of one label that are not 1 and differ are a `ShapeError`
/// naming the label (as numpy's message does).
fn label_sizes(c: &Compiled, ops: &[Operand<'_>]) -> Res<LabelSizes> {
    let size = contract::label_sizes_of(&c.spec, &c.labels, ops.iter().map(Operand::shape))?;
    // a size-1 axis of a label whose size is not 1 is broadcast
    let needed = c.labels.iter().zip(ops).any(|(l, op)| {
        l.iter()
            .zip(op.shape())
            .any(|(lab, &n)| n == 1 && size.iter().any(|e| e.0 == *lab && e.1 != 1))
    });
    let work = size
        .iter()
        .fold(1u128, |w, e| w.saturating_mul(e.1 as u128));
    Ok((size, needed, work))
}

/// Contractions with at most this much work (the product of the label
/// sizes) run without releasing the GIL: they take about a microsecond, less
/// than handing the GIL over and back costs.
const SMALL_WORK: u128 = 4096;

/// numpy.einsum's grammar (explicit and implicit output, repeated indices,
/// `...` and size-1 broadcasting, numbers as operands, index letters beyond
/// ASCII as opt_einsum allows) and its interleaved form
/// (`einsum(A, [0, 1], B, [1, 2], [0, 2])`), optimised and compiled once
/// per spec, operand ranks (shapes, for 3 or more operands), thread count
/// and planning options. Returns a new float64 array, a numpy float64 for a scalar
/// result, or `out` (a float64 array of the result's shape, any strides)
/// written in place. float64 operands are read in place; bool/int/float
/// operands are converted to float64; other dtypes raise DTypeError. As
/// numpy's, a one-operand einsum that sums nothing (`'ij->ji'`, `'ij'`,
/// `'ii->i'`, `'...ii->...i'`) returns a view of a numpy array operand
/// (writeable when it is; `dtype`, `order`, `casting` checked and otherwise
/// ignored).
/// `threads`: at most this many threads for the call (default: all cores).
/// `fast_math`: the optimiser's fast mode (may cancel terms and assume
/// finite values; see docs/fp-contract.md). `optimize`, `memory_limit`,
/// `dtype`, `order`, `casting`: numpy's and opt_einsum's (see the
/// package's documentation).
#[pyfunction]
#[pyo3(signature = (*operands, out=None, threads=None, fast_math=false, optimize=None, memory_limit=None, dtype=None, order=None, casting=None), text_signature = "(spec, *operands, out=None, threads=None, fast_math=False, optimize=False, memory_limit=None, dtype=None, order='K', casting='safe')")]
#[allow(clippy::too_many_arguments)]
fn einsum<'py>(
    py: Python<'py>,
    operands: &Bound<'py, PyTuple>,
    out: Option<&Bound<'py, PyAny>>,
    threads: Option<&Bound<'py, PyAny>>,
    fast_math: bool,
    optimize: Option<&Bound<'py, PyAny>>,
    memory_limit: Option<&Bound<'py, PyAny>>,
    dtype: Option<&Bound<'py, PyAny>>,
    order: Option<&Bound<'py, PyAny>>,
    casting: Option<&Bound<'py, PyAny>>,
) -> PyResult<Py<PyAny>> {
    if out.is_none_or(|o| o.is_none()) {
        // numpy's views of one operand (a relabelling, diagonals)
        let options = [
            ("threads", threads),
            ("optimize", optimize),
            ("memory_limit", memory_limit),
            ("dtype", dtype),
            ("order", order),
            ("casting", casting),
        ];
        match words::single_view(py, operands, &options) {
            Ok(Some(v)) => return Ok(v),
            Ok(None) => {}
            Err(e) => return Err(words::interleaved_error(py, operands, e)),
        }
    }
    if typed::wanted(py, operands, dtype) {
        // another dtype than float64: numpy's dtype rules, in einsat/_typed.py
        let fm = pyo3::types::PyBool::new(py, fast_math)
            .to_owned()
            .into_any();
        return typed::dispatch(
            py,
            operands,
            &[
                ("out", out),
                ("threads", threads),
                ("fast_math", Some(&fm)),
                ("optimize", optimize),
                ("memory_limit", memory_limit),
                ("dtype", dtype),
                ("order", order),
                ("casting", casting),
            ],
        );
    }
    let run = || -> Res<PyResult<Py<PyAny>>> {
        let spec = operands.get_item(0).map_err(|_| {
            fail(
                Exc::Shape,
                "einsum: no spec and operands given (einsum(spec, *operands), or numpy's interleaved form)",
            )
        })?;
        let call = contract::Call::new(
            py,
            &spec,
            operands,
            1,
            contract::Knobs {
                threads,
                fast_math,
                optimize,
                memory_limit,
                dtype,
                order,
                casting,
            },
        )?;
        let mut ops = Vec::with_capacity(call.len());
        for (k, o) in call.operands().enumerate() {
            ops.push(operand(py, &o, &OperandNo(k))?);
        }
        let shapes: Vec<&[usize]> = ops.iter().map(Operand::shape).collect();
        let key = call.key(py, &shapes)?;
        let compiled = compiled_for(py, &call.spec, &key, &shapes)?;
        run_einsum(py, &compiled, &ops, out, call.fortran)
    };
    run()
        .map_err(|f| to_py_err(py, f))
        .and_then(|r| r)
        .map_err(|e| words::interleaved_error(py, operands, e))
}

/// Run a compiled einsum on its operands (into `out` when given; the
/// result in Fortran order when `fortran`).
fn run_einsum<'py>(
    py: Python<'py>,
    compiled: &Compiled,
    ops: &[Operand<'py>],
    out: Option<&Bound<'py, PyAny>>,
    fortran: bool,
) -> Res<PyResult<Py<PyAny>>> {
    let (size, needed, work) = label_sizes(compiled, ops)?;
    let small = work <= SMALL_WORK;
    // the views first: a broadcast view borrows the view it widens
    let views: Vec<Option<ArrayViewD<'_, f64>>> = ops
        .iter()
        .map(|op| match op {
            Operand::Array(a) if a.ndim() > 0 => Some(a.as_array()),
            _ => None,
        })
        .collect();
    let mut args = Vec::with_capacity(ops.len());
    for (k, (op, view)) in ops.iter().zip(&views).enumerate() {
        args.push(match (op, view) {
            (Operand::Num(x), _) => Arg::Real(*x),
            (Operand::Array(a), None) => Arg::Real(a.as_array()[IxDyn(&[])]),
            (_, Some(v)) if !needed => Arg::Array(v.view()),
            (_, Some(v)) => {
                let l = &compiled.labels[k];
                let shape: Vec<usize> = l
                    .iter()
                    .zip(v.shape())
                    .map(|(&lab, &n)| {
                        // numpy broadcasts a label's axes of size 1 (all of
                        // them, when the label repeats in this operand)
                        let all_one = l.iter().zip(v.shape()).all(|(&m, &k)| m != lab || k == 1);
                        if n == 1 && all_one {
                            size.iter().find(|e| e.0 == lab).map_or(n, |e| e.1)
                        } else {
                            n
                        }
                    })
                    .collect();
                Arg::Array(v.broadcast(IxDyn(&shape)).unwrap_or_else(|| v.view()))
            }
        });
    }
    let kernel = &compiled.kernel;
    match out {
        Some(o) if !o.is_none() && o.cast::<PyArrayDyn<f64>>().is_err() => {
            // an `out` of another real dtype: computed in float64, then
            // cast into it (as numpy's casting='unsafe')
            let numeric = o
                .cast::<PyUntypedArray>()
                .is_ok_and(|a| matches!(a.dtype().kind(), b'b' | b'i' | b'u' | b'f'));
            if !numeric {
                return Err(fail(
                    Exc::DType,
                    "einsum: out must be a numpy array of bool, integer or float dtype (of the result's shape); einsat computes in float64",
                ));
            }
            let r = match run_einsum(py, compiled, ops, None, false)? {
                Ok(r) => r,
                Err(e) => return Ok(Err(e)),
            };
            let np = numpy(py).map_err(|e| fail(Exc::Error, e.to_string()))?;
            let same = np
                .call_method1("shape", (&r,))
                .and_then(|s| s.eq(o.getattr("shape")?))
                .unwrap_or(false);
            if !same {
                return Err(fail(
                    Exc::Shape,
                    "einsum: out does not have the result's shape",
                ));
            }
            let kw = PyDict::new(py);
            kw.set_item("casting", "unsafe")
                .map_err(|e| fail(Exc::Error, e.to_string()))?;
            Ok(np
                .call_method("copyto", (o, r), Some(&kw))
                .map(|_| o.clone().unbind()))
        }
        Some(o) if !o.is_none() => {
            let arr = o.cast::<PyArrayDyn<f64>>().map_err(|_| {
                fail(
                    Exc::DType,
                    "einsum: out must be a float64 numpy array (of the result's shape)",
                )
            })?;
            if !operand::viewable(arr) {
                return Err(fail(
                    Exc::Shape,
                    "einsum: out must be an aligned array whose strides are whole elements",
                ));
            }
            let mut w = arr.try_readwrite().map_err(|e| out_refused(arr, ops, e))?;
            let view = w.as_array_mut();
            let work = (!small).then(|| kernel.work(&args)).flatten();
            run_call(py, small, work, &compiled.pace, || {
                call_kernel(kernel, &args, Some(view))
            })
            .map_err(|f| compiled.reworded(f))?;
            Ok(Ok(o.clone().unbind()))
        }
        _ => {
            let work = (!small).then(|| kernel.work(&args)).flatten();
            let v = run_call(py, small, work, &compiled.pace, || {
                call_kernel(kernel, &args, None)
            })
            .map_err(|f| compiled.reworded(f))?;
            let scalar = matches!(v, None | Some(Value::Real(_)));
            let r = match v.unwrap_or(Value::Real(0.0)) {
                // a numpy float64 (a subclass of float), as numpy returns
                Value::Real(x) => float64(py, x),
                v => value_to_py(py, v),
            };
            Ok(match r {
                // a scalar stays a numpy float64 (as numpy's order='F')
                Ok(a) if fortran && !scalar => numpy(py)
                    .and_then(|np| np.call_method1("asfortranarray", (a,)))
                    .map(|a| a.unbind()),
                r => r,
            })
        }
    }
}

/// The bytes an array's elements span, `[lo, hi)` (`None` when it has no
/// elements): from the address of its first element, its shape and its
/// strides in bytes.
fn byte_span(
    first: usize,
    shape: &[usize],
    strides: impl Iterator<Item = isize>,
) -> Option<(usize, usize)> {
    let (mut lo, mut hi) = (first as isize, first as isize);
    for (&n, s) in shape.iter().zip(strides) {
        if n == 0 {
            return None;
        }
        let reach = (n as isize - 1) * s;
        if reach < 0 {
            lo += reach;
        } else {
            hi += reach;
        }
    }
    Some((lo as usize, hi as usize + 8))
}

/// Why `out` cannot be written, in einsat's words: read-only, or sharing
/// memory with an operand einsat reads in place (which one), or in use by
/// another call.
fn out_refused(
    out: &Bound<'_, PyArrayDyn<f64>>,
    ops: &[Operand<'_>],
    e: numpy::BorrowError,
) -> Failure {
    if matches!(e, numpy::BorrowError::NotWriteable) {
        return fail(
            Exc::Shape,
            "einsum: out cannot be written: the array is read-only (its `writeable` flag is off)",
        );
    }
    let span = byte_span(
        out.data() as usize,
        out.shape(),
        out.strides().iter().copied(),
    );
    let overlapping = ops.iter().position(|op| match (op, span) {
        (Operand::Array(a), Some((lo, hi))) => {
            let v = a.as_array();
            let strides = v.strides().iter().map(|s| s * 8);
            byte_span(v.as_ptr() as usize, v.shape(), strides)
                .is_some_and(|(l, h)| l < hi && lo < h)
        }
        _ => false,
    });
    match overlapping {
        Some(k) => fail(
            Exc::Shape,
            format!(
                "einsum: out overlaps operand {k} (they share memory): einsat does not write into an array it reads; give out an array of its own"
            ),
        ),
        None => fail(
            Exc::Shape,
            "einsum: out cannot be written: another call is using the array",
        ),
    }
}

// ---------------------------------------------------------------- programs

/// Parse and type-check a source text.
fn load(src: &str) -> Res<einsat::Program> {
    einsat::load(src).map_err(|e| from_einsat(e, Some(src)))
}

fn pick<'a>(prog: &'a einsat::Program, name: Option<&str>) -> Res<&'a Function> {
    let names = || {
        let all: Vec<String> = prog.functions.iter().map(|f| f.name.clone()).collect();
        einsat::diag::quote_list(&all)
    };
    match name {
        Some(n) => prog.get(n).ok_or_else(|| {
            fail(
                Exc::Error,
                format!(
                    "no function `{}` (the source defines: {})",
                    einsat::diag::quote(n),
                    names()
                ),
            )
        }),
        None if prog.functions.len() == 1 => Ok(&prog.functions[0]),
        None => Err(fail(
            Exc::Error,
            format!(
                "the source defines several functions; choose one with fn= ({})",
                names()
            ),
        )),
    }
}

/// The fields of `einsat opt --json` for one function.
/// A compiled function of the language: call it on numpy arrays.
#[pyclass(frozen, module = "einsat")]
struct Kernel {
    kernel: Arc<jit::Kernel>,
    /// The function as written (compiled again for f32 on the first call
    /// with float32 arguments, [`float32`]).
    func: Function,
    /// The kernel compiled for `Precision::F32`, once needed.
    kernel32: std::sync::OnceLock<Arc<jit::Kernel>>,
    /// The kernels compiled for `Precision::I64` and `I32`, once needed
    /// ([`ints`]; `None`: the program is not integral).
    kernels_int: [std::sync::OnceLock<Option<Arc<jit::Kernel>>>; 2],
    name: String,
    params: Vec<(String, Boundary)>,
    source: String,
    optimized: String,
    report: String,
    /// How it was compiled (for `__reduce__`: pickling sends the source
    /// text and these options, and the receiver compiles again).
    how: How,
    /// Its speed so far.
    pace: Pace,
    /// The f32 kernel's speed so far.
    pace32: Pace,
}

/// Read the argument for a parameter of boundary form `b` into `ops`
/// (pairs: a tuple of two, recursively; or a complex number or array,
/// whose real and imaginary parts are the pair's, `complex` noting it).
fn collect<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    b: &Boundary,
    what: &str,
    ops: &mut Vec<Operand<'py>>,
    complex: &mut bool,
) -> Res<()> {
    match b {
        Boundary::Array(_) => {
            if complex_parts(obj).is_some() {
                return Err(fail(
                    Exc::DType,
                    format!(
                        "{what}: a complex argument for a real parameter: a complex number or array goes to a pair parameter, (R, R) or [n](R, R), as its real and imaginary parts"
                    ),
                ));
            }
            ops.push(operand(py, obj, &what)?);
            Ok(())
        }
        Boundary::Pair(x, y) if complex_parts(obj).is_some() => {
            let (re, im) = complex_parts(obj).ok_or_else(|| fail(Exc::DType, what.to_string()))?;
            *complex = true;
            collect(py, &re, x, &format!("{what} (its real part)"), ops, complex)?;
            collect(
                py,
                &im,
                y,
                &format!("{what} (its imaginary part)"),
                ops,
                complex,
            )
        }
        Boundary::Pair(x, y) => {
            let t = obj
                .cast::<PyTuple>()
                .ok()
                .filter(|t| t.len() == 2)
                .ok_or_else(|| {
                    fail(
                        Exc::Shape,
                        format!("{what}: a pair parameter takes a tuple of two values"),
                    )
                })?;
            let t0 = t.get_item(0).map_err(|e| fail(Exc::Shape, e.to_string()))?;
            let t1 = t.get_item(1).map_err(|e| fail(Exc::Shape, e.to_string()))?;
            collect(py, &t0, x, &format!("{what}.0"), ops, complex)?;
            collect(py, &t1, y, &format!("{what}.1"), ops, complex)
        }
    }
}

/// A complex number or numpy array's real and imaginary parts: Python
/// floats, or numpy's `.real` and `.imag` (views of the interleaved
/// storage: nothing is copied; float64 parts are read in place).
fn complex_parts<'py>(obj: &Bound<'py, PyAny>) -> Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let complex = if obj.is_instance_of::<pyo3::types::PyComplex>() {
        true
    } else {
        let dt = obj.getattr("dtype").ok()?;
        dt.getattr("kind").ok()?.extract::<String>().ok()? == "c"
    };
    if !complex {
        return None;
    }
    Some((obj.getattr("real").ok()?, obj.getattr("imag").ok()?))
}

/// The result of a call given complex arguments: a pair of arrays of one
/// shape (or of numbers) as one complex array (number) of numpy's result
/// dtype of the arguments (complex64 or complex128); other results as
/// [`value_to_py`] gives them.
fn complex_result(py: Python<'_>, v: Value, given: &[Bound<'_, PyAny>]) -> PyResult<Py<PyAny>> {
    let np = numpy(py)?;
    let mut dtypes = Vec::new();
    for g in given {
        if let Ok(d) = g.getattr("dtype") {
            dtypes.push(d);
        } else if g.is_instance_of::<pyo3::types::PyComplex>() {
            dtypes.push(np.call_method1("dtype", ("complex128",))?);
        }
    }
    let mut rt = np.call_method1("result_type", PyTuple::new(py, dtypes)?)?;
    if rt.getattr("kind")?.extract::<String>()? != "c" {
        rt = np.call_method1("dtype", ("complex128",))?;
    }
    match v {
        Value::Pair(a, b) => match (*a, *b) {
            (Value::Array(re), Value::Array(im)) if re.shape() == im.shape() => {
                let z = ndarray::Zip::from(&re)
                    .and(&im)
                    .map_collect(|&r, &i| einsat::typed::Complex64::new(r, i));
                let arr = numpy::IntoPyArray::into_pyarray(z, py).into_any();
                let kw = pyo3::types::PyDict::new(py);
                kw.set_item("copy", false)?;
                Ok(arr.call_method("astype", (rt,), Some(&kw))?.unbind())
            }
            (Value::Real(r), Value::Real(i)) => {
                let z = pyo3::types::PyComplex::from_doubles(py, r, i);
                Ok(rt.getattr("type")?.call1((z,))?.unbind())
            }
            (a, b) => value_to_py(py, Value::Pair(Box::new(a), Box::new(b))),
        },
        v => value_to_py(py, v),
    }
}

impl<'a> operand::Assemble<'a, f64> for Arg<'a> {
    fn number(x: f64) -> Self {
        Arg::Real(x)
    }
    fn array(a: ArrayViewD<'a, f64>) -> Self {
        Arg::Array(a)
    }
    fn pair(a: Self, b: Self) -> Self {
        Arg::Pair(Box::new(a), Box::new(b))
    }
}

impl Kernel {
    fn call_impl<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> Res<PyResult<Py<PyAny>>> {
        let n = self.params.len();
        let list = || {
            self.params
                .iter()
                .map(|p| p.0.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        if args.len() > n {
            return Err(fail(
                Exc::Shape,
                format!(
                    "`{}` takes {n} argument{} ({}) but {} were given",
                    self.name,
                    if n == 1 { "" } else { "s" },
                    list(),
                    args.len()
                ),
            ));
        }
        let mut given: Vec<Option<Bound<'py, PyAny>>> = args.iter().map(Some).collect();
        given.resize(n, None);
        if let Some(kw) = kwargs {
            for (k, v) in kw.iter() {
                let k: String = k
                    .extract()
                    .map_err(|e: PyErr| fail(Exc::Shape, e.to_string()))?;
                let Some(pos) = self.params.iter().position(|p| p.0 == k) else {
                    return Err(fail(
                        Exc::Shape,
                        format!(
                            "`{}` has no parameter `{}` (it takes {})",
                            self.name,
                            einsat::diag::quote(&k),
                            list()
                        ),
                    ));
                };
                if given[pos].is_some() {
                    return Err(fail(Exc::Shape, format!("argument `{k}` is given twice")));
                }
                given[pos] = Some(v);
            }
        }
        if given.iter().all(Option::is_some) {
            let all: Vec<Bound<'py, PyAny>> = given.iter().flatten().cloned().collect();
            // the result's dtype: numpy's of the values (an index array
            // does not take part: `E[tok]` has `E`'s dtype)
            let mut leaves = Vec::new();
            for (k, ((_, b), g)) in self.params.iter().zip(&all).enumerate() {
                if !index::is_index(&self.func, k) {
                    float32::leaves_of(g, b, &mut leaves);
                }
            }
            if let Some(out) = float32::wanted(py, &leaves) {
                return self.call32(py, &all, out);
            }
            if let Some(p) = ints::wanted(py, &leaves) {
                if let Some(r) = self.call_int(py, &all, p)? {
                    return Ok(r);
                }
            }
        }
        let mut ops = Vec::new();
        let mut complex = false;
        for (at, ((name, b), g)) in self.params.iter().zip(&given).enumerate() {
            let g = g.as_ref().ok_or_else(|| {
                fail(
                    Exc::Shape,
                    format!(
                        "missing argument `{name}` (`{}` takes {})",
                        self.name,
                        list()
                    ),
                )
            })?;
            let what = format!("argument `{name}`");
            // an index array: checked before it becomes float64 (an
            // integer beyond 2^53 would round to another index)
            let checked;
            let g = if index::is_index(&self.func, at) {
                checked = index::checked(py, &self.func, name, g, &what, einsat::Precision::F64)?;
                &checked
            } else {
                g
            };
            collect(py, g, b, &what, &mut ops, &mut complex)?;
        }
        let mut next = 0;
        let argv: Vec<Arg<'_>> = self
            .params
            .iter()
            .map(|(_, b)| operand::assemble(b, &ops, &mut next))
            .collect();
        let kernel = &self.kernel;
        let work = kernel.work(&argv);
        let v = run_call(py, false, work, &self.pace, || {
            call_kernel(kernel, &argv, None)
        })?;
        let v = v.unwrap_or(Value::Real(0.0));
        if complex {
            let all: Vec<Bound<'py, PyAny>> = given.iter().flatten().cloned().collect();
            return Ok(complex_result(py, v, &all));
        }
        Ok(value_to_py(py, v))
    }
}

#[pymethods]
impl Kernel {
    /// Run the kernel: arguments positionally or by parameter name; pair
    /// parameters take a tuple of two arrays.
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__<'py>(
        &self,
        py: Python<'py>,
        args: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        self.call_impl(py, args, kwargs)
            .map_err(|f| to_py_err(py, f))?
    }

    /// The function's name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// The parameter names, in order.
    #[getter]
    fn params(&self) -> Vec<String> {
        self.params.iter().map(|p| p.0.clone()).collect()
    }

    /// The function as written (printed from its parsed form).
    #[getter]
    fn source(&self) -> &str {
        &self.source
    }

    /// The optimised function that the kernel runs, as source text.
    #[getter]
    fn optimized(&self) -> &str {
        &self.optimized
    }

    /// The optimiser's report: the fields of `einsat opt --json`.
    #[getter]
    fn report<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("json")?.call_method1("loads", (&self.report,))
    }

    /// Per stage, how it runs (`gemm M×N×K` or `native`).
    #[getter]
    fn stages(&self) -> Vec<String> {
        self.kernel.stages()
    }

    /// Pickling: the function's source text and options; unpickling
    /// compiles it again (in the receiving process, e.g. a dask worker).
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, Py<PyAny>)> {
        let compile = py.import("einsat")?.getattr("compile")?;
        let threads = match self.how.threads {
            0 => py.None(),
            n => n.into_pyobject(py)?.into_any().unbind(),
        };
        let args = (self.source.clone(), py.None(), threads, self.how.fast_math);
        Ok((compile, args.into_pyobject(py)?.into_any().unbind()))
    }

    fn __repr__(&self) -> String {
        format!("<einsat.Kernel {}({})>", self.name, {
            self.params
                .iter()
                .map(|p| p.0.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        })
    }
}

fn source_str<'a>(s: &'a Bound<'_, PyAny>) -> Res<std::borrow::Cow<'a, str>> {
    let s = s
        .cast::<PyString>()
        .map_err(|_| fail(Exc::DType, "the source must be a string"))?;
    s.to_cow()
        .map_err(|e| fail(Exc::Parse, format!("the source is not valid text: {e}")))
}

fn opt_name(f: Option<&Bound<'_, PyAny>>) -> Res<Option<String>> {
    match f {
        None => Ok(None),
        Some(f) if f.is_none() => Ok(None),
        Some(f) => f
            .extract::<String>()
            .map(Some)
            .map_err(|_| fail(Exc::DType, "fn must be a function name (a string) or None")),
    }
}

/// `sizes=` of `optimize` names only sizes the functions have (as the
/// command line's `--size`); else `OptionError` listing them.
fn check_size_names(sizes: &BTreeMap<String, usize>, fs: &[&Function]) -> Res<()> {
    let mut have: Vec<String> = Vec::new();
    for f in fs {
        for n in f.size_names() {
            if !have.contains(&n) {
                have.push(n);
            }
        }
    }
    have.sort();
    match sizes.keys().find(|k| !have.contains(k)) {
        None => Ok(()),
        Some(k) => Err(fail(
            Exc::Option,
            format!(
                "sizes: {} has no size `{}` ({})",
                match fs {
                    [f] => format!("`{}`", f.name),
                    _ => "no function of the source".to_string(),
                },
                einsat::diag::quote(k),
                if have.is_empty() {
                    "there are no named sizes".to_string()
                } else {
                    format!("sizes: {}", einsat::diag::quote_list(&have))
                }
            ),
        )),
    }
}

/// Parse, type-check, optimise and compile one function of a program in
/// the einsat language (`fn` names it when the source defines several).
/// Returns a Kernel: call it with arrays positionally or by parameter name.
#[pyfunction]
#[pyo3(signature = (source, r#fn=None, threads=None, fast_math=false), text_signature = "(source, fn=None, threads=None, fast_math=False)")]
fn compile<'py>(
    py: Python<'py>,
    source: &Bound<'py, PyAny>,
    r#fn: Option<&Bound<'py, PyAny>>,
    threads: Option<&Bound<'py, PyAny>>,
    fast_math: bool,
) -> PyResult<Kernel> {
    let run = || -> Res<Kernel> {
        let src = source_str(source)?;
        let name = opt_name(r#fn)?;
        let threads = How {
            threads: threads_of(threads)?,
            fast_math,
        };
        let src: &str = &src;
        native(py, || {
            let prog = load(src)?;
            let f = pick(&prog, name.as_deref())?;
            let (kernel, o) = build(f, threads)?;
            Ok(Kernel {
                kernel,
                func: f.clone(),
                kernel32: std::sync::OnceLock::new(),
                kernels_int: Default::default(),
                name: f.name.clone(),
                params: f
                    .params
                    .iter()
                    .map(|p| (p.name.clone(), Boundary::of(&p.ty)))
                    .collect(),
                source: print_function(f),
                optimized: print_function(&o.program),
                report: opt::report_json(f, &o).to_string(),
                how: threads,
                pace: Pace::default(),
                pace32: Pace::default(),
            })
        })
    };
    run().map_err(|f| to_py_err(py, f))
}

/// The optimised program as source text: every function, or the one named
/// `fn`. `sizes` maps size names to the values the cost model assumes
/// (default 1000 each); `fast_math` selects the optimiser's fast mode.
#[pyfunction]
#[pyo3(signature = (source, r#fn=None, sizes=None, fast_math=false), text_signature = "(source, fn=None, sizes=None, fast_math=False)")]
fn optimize<'py>(
    py: Python<'py>,
    source: &Bound<'py, PyAny>,
    r#fn: Option<&Bound<'py, PyAny>>,
    sizes: Option<&Bound<'py, PyAny>>,
    fast_math: bool,
) -> PyResult<String> {
    let run = || -> Res<String> {
        let src = source_str(source)?;
        let name = opt_name(r#fn)?;
        let mut opts = opt::Options {
            fast_math,
            ..opt::Options::default()
        };
        if let Some(s) = sizes.filter(|s| !s.is_none()) {
            let bad = || {
                fail(
                    Exc::DType,
                    "sizes must be a dict of size names to whole numbers ≥ 0",
                )
            };
            let d = s.cast::<PyDict>().map_err(|_| bad())?;
            let mut m = BTreeMap::new();
            for (k, v) in d.iter() {
                m.insert(
                    k.extract::<String>().map_err(|_| bad())?,
                    v.extract::<usize>().map_err(|_| bad())?,
                );
            }
            opts.sizes = m;
        }
        let src: &str = &src;
        native(py, || {
            let prog = load(src)?;
            let fs: Vec<&Function> = match name {
                Some(_) => vec![pick(&prog, name.as_deref())?],
                None => prog.functions.iter().collect(),
            };
            check_size_names(&opts.sizes, &fs)?;
            let mut text = Vec::new();
            for f in fs {
                let o = opt::optimize(f, &opts).map_err(|e| {
                    let mut fl = from_einsat(e, None);
                    fl.message = format!("in `{}`: {}", f.name, fl.message);
                    fl
                })?;
                text.push(print_function(&o.program));
            }
            Ok(text.join("\n"))
        })
    };
    run().map_err(|f| to_py_err(py, f))
}

/// Parse and type-check a program: every function's signature as text, or
/// ParseError / TypeCheckError with every error.
#[pyfunction]
fn check<'py>(py: Python<'py>, source: &Bound<'py, PyAny>) -> PyResult<Py<PyList>> {
    let run = || -> Res<Vec<String>> {
        let src = source_str(source)?;
        let src: &str = &src;
        native(py, || {
            let parsed = einsat::syntax::parse_program(src)
                .map_err(|d| source_failure(Exc::Parse, &d, Some(src)))?;
            let sigs = einsat::types::check_parsed(&parsed)
                .map_err(|d| source_failure(Exc::TypeCheck, &d, Some(src)))?;
            Ok(sigs.iter().map(|s| s.to_string()).collect())
        })
    };
    let sigs = run().map_err(|f| to_py_err(py, f))?;
    Ok(PyList::new(py, sigs)?.unbind())
}

/// Whether einsat reads `obj` in place (tests): the view it would hand the
/// kernel starts at the numpy array's own data.
#[pyfunction]
fn _reads_in_place<'py>(py: Python<'py>, obj: &Bound<'py, PyAny>) -> PyResult<bool> {
    let Ok(arr) = obj.cast::<PyUntypedArray>() else {
        return Ok(false);
    };
    // SAFETY: reading the data pointer of a live array.
    let data = unsafe { (*arr.as_array_ptr()).data } as *const f64;
    let op = operand(py, obj, &"argument").map_err(|f| to_py_err(py, f))?;
    Ok(match &op {
        Operand::Array(a) => std::ptr::eq(a.as_array().as_ptr(), data),
        Operand::Num(_) => false,
    })
}

/// One function of a program as parsed (read-only, for `einsat.dask`'s
/// analysis of how a program splits into chunks): JSON of `{"name",
/// "params", "ret", "body"}`, the parameters, the result type (inferred
/// when not declared) and the body in the serde form of `einsat::syntax`'s
/// tree. Errors as `compile`'s.
#[pyfunction]
#[pyo3(signature = (source, r#fn=None))]
fn _function_json<'py>(
    py: Python<'py>,
    source: &Bound<'py, PyAny>,
    r#fn: Option<&Bound<'py, PyAny>>,
) -> PyResult<String> {
    let run = || -> Res<String> {
        let src = source_str(source)?;
        let name = opt_name(r#fn)?;
        let src: &str = &src;
        let parsed = einsat::types::parse_and_check(src).map_err(|e| from_einsat(e, Some(src)))?;
        let sigs = einsat::types::check_parsed(&parsed)
            .map_err(|d| source_failure(Exc::TypeCheck, &d, Some(src)))?;
        let f = pick(&parsed.program, name.as_deref())?;
        let ret = sigs
            .iter()
            .find(|s| s.name == f.name)
            .map(|s| s.ret.clone())
            .ok_or_else(|| fail(Exc::Error, "internal: no signature for the function"))?;
        let j = serde_json::json!({
            "name": f.name,
            "params": f.params,
            "ret": ret,
            "body": f.body,
        });
        Ok(j.to_string())
    };
    run().map_err(|f| to_py_err(py, f))
}

/// How many einsum kernels are cached (tests, diagnostics).
#[pyfunction]
fn _einsum_cache_len() -> usize {
    CACHE
        .lock()
        .ok()
        .and_then(|c| c.as_ref().map(|m| m.values().map(Vec::len).sum()))
        .unwrap_or(0)
}

#[pymodule]
fn _einsat(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(einsum, m)?)?;
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_function(wrap_pyfunction!(optimize, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    m.add_function(wrap_pyfunction!(_einsum_cache_len, m)?)?;
    m.add_function(wrap_pyfunction!(_function_json, m)?)?;
    m.add_function(wrap_pyfunction!(_reads_in_place, m)?)?;
    m.add_function(wrap_pyfunction!(typed::_typed_einsum, m)?)?;
    m.add_class::<Kernel>()?;
    contract::register(m)?;
    Ok(())
}
