//! The crate-wide error type [`Error`]: every failure a user can cause ends
//! here as a typed variant with a clear message; nothing user-caused
//! panics.
//!
//! Parse and type errors carry their [`Diagnostic`]s (message and byte
//! span) and, when the source text is known, the text itself
//! ([`Diagnostics::source`]), so `Display` shows `file:line:col: error:
//! …` with the offending line and a caret underline. Call errors say which
//! check failed, with the data of the failure (which argument, which axis,
//! the sizes).

use crate::diag::{render_all, Diagnostic};
use std::fmt;
use std::sync::Arc;

/// The diagnostics of a parse or type error, with the source they point
/// into when it is known. Dereferences to the list of [`Diagnostic`]s.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostics {
    /// Every error found, in source order.
    pub diagnostics: Vec<Diagnostic>,
    /// The source text the spans point into, and its file name (`<input>`
    /// for text given as a string).
    pub source: Option<Source>,
}

/// A named source text (shared, so errors stay cheap to clone).
#[derive(Clone, Debug, PartialEq)]
pub struct Source {
    /// The file name shown in messages.
    pub name: String,
    /// The text.
    pub text: Arc<str>,
}

impl Diagnostics {
    /// Diagnostics without a known source.
    pub fn new(diagnostics: Vec<Diagnostic>) -> Diagnostics {
        Diagnostics {
            diagnostics,
            source: None,
        }
    }

    /// Diagnostics pointing into `text`, shown as file `name`.
    pub fn with_source(diagnostics: Vec<Diagnostic>, name: &str, text: &str) -> Diagnostics {
        Diagnostics {
            diagnostics,
            source: Some(Source {
                name: name.to_string(),
                text: text.into(),
            }),
        }
    }

    /// 1-based line and column of each diagnostic (`None` without a span
    /// or a source).
    pub fn positions(&self) -> Vec<Option<(usize, usize)>> {
        self.diagnostics
            .iter()
            .map(|d| self.source.as_ref().and_then(|s| d.line_col(&s.text)))
            .collect()
    }
}

impl std::ops::Deref for Diagnostics {
    type Target = [Diagnostic];
    fn deref(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.source {
            Some(s) => write!(f, "{}", render_all(&self.diagnostics, &s.name, &s.text)),
            None => write!(
                f,
                "{}",
                self.diagnostics
                    .iter()
                    .map(|d| d.message.clone())
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        }
    }
}

/// What was found at the call boundary where something else was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Found {
    /// A number.
    Number,
    /// An array of this shape.
    Array(Vec<usize>),
    /// A pair.
    Pair,
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Found::Number => write!(f, "a number"),
            Found::Array(s) => write!(f, "an array of shape {s:?}"),
            Found::Pair => write!(f, "a pair"),
        }
    }
}

/// What is wrong with an output buffer ([`Error::Output`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutputProblem {
    /// The buffer's shape is not the result's.
    Shape {
        /// The result's shape.
        expected: Vec<usize>,
        /// The buffer's shape.
        got: Vec<usize>,
    },
    /// Two elements of the buffer share memory (a zero stride).
    Overlap,
    /// The result is a number: the buffer must be a 0-dimensional array.
    NotNumber(Found),
    /// The result is an array: the buffer must be one.
    NotArray(Found),
    /// The result is a tuple: the buffer must be a pair.
    NotPair(Found),
}

impl fmt::Display for OutputProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutputProblem::Shape { expected, got } => {
                write!(
                    f,
                    "has shape {got:?}, but the result has shape {expected:?}"
                )
            }
            OutputProblem::Overlap => write!(f, "has overlapping elements (a zero stride)"),
            OutputProblem::NotNumber(x) => write!(
                f,
                "must be a number or a 0-dimensional array (the result is a number), not {x}"
            ),
            OutputProblem::NotArray(x) => write!(f, "must be an array, not {x}"),
            OutputProblem::NotPair(x) => {
                write!(f, "must be a pair (the result is a tuple), not {x}")
            }
        }
    }
}

/// What the rule check found instead of the claimed class, in words.
fn verdict(holds: Option<&str>) -> String {
    match holds {
        Some(c) => format!("it passed as `{c}`: claim that class, or fix the rule"),
        None => "it is unsound even in exact arithmetic".to_string(),
    }
}

/// Every error of the crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Syntax errors, one per broken function.
    #[error("{}", shown(.0, "syntax error"))]
    Parse(Diagnostics),
    /// Type errors, all of them.
    #[error("{}", shown(.0, "type error"))]
    Type(Diagnostics),
    /// A call with the wrong number of arguments.
    #[error("`{}` takes {expected} argument{}, got {got}", crate::diag::quote(function), if *expected == 1 { "" } else { "s" })]
    Arity {
        /// The function called.
        function: String,
        /// Its number of parameters.
        expected: usize,
        /// The number of arguments given.
        got: usize,
    },
    /// An argument of the wrong rank, or a number/array/pair where another
    /// is expected: `expected` dims (0: a number), `found` something else.
    #[error("{argument}: {}", rank_text(*expected, found))]
    Rank {
        /// The argument (`argument `x` ([n]R)`, `.0`/`.1` for pair parts).
        argument: String,
        /// The declared number of dims (0 for a number).
        expected: usize,
        /// What was given.
        found: Found,
    },
    /// A pair expected (tuple parameter, tensor of pairs), something else
    /// given.
    #[error("{argument}: expected a pair of values, got {found}")]
    NotPair {
        /// The argument.
        argument: String,
        /// What was given.
        found: Found,
    },
    /// An axis whose size is not the literal size of the type.
    #[error("{argument}: axis {axis} has size {got} but the type says {expected}")]
    Shape {
        /// The argument.
        argument: String,
        /// The axis (0-based).
        axis: usize,
        /// The declared size.
        expected: usize,
        /// The given size.
        got: usize,
    },
    /// A size name bound to two different values by two axes.
    #[error(
        "size `{size}` is {first} from {first_argument} but {got} from {argument} (axis {axis})"
    )]
    SizeName {
        /// The size name.
        size: String,
        /// The value it was bound to first.
        first: usize,
        /// The argument that bound it first.
        first_argument: String,
        /// The value this axis gives it.
        got: usize,
        /// The argument of this axis.
        argument: String,
        /// The axis.
        axis: usize,
    },
    /// A size name the arguments do not bind (a result size).
    #[error("size `{size}` is not fixed by the arguments")]
    UnboundSize {
        /// The size name.
        size: String,
    },
    /// A tensor (or axis) larger than [`crate::interp::value::MAX_ELEMENTS`].
    #[error("{what} is too large ({elements} elements; the limit is {limit})")]
    TooLarge {
        /// What is too large.
        what: String,
        /// Its number of elements.
        elements: u128,
        /// The limit.
        limit: u128,
    },
    /// An output buffer that cannot receive the result.
    #[error("the output {buffer} {problem}")]
    Output {
        /// Which buffer (`buffer`, `buffer.0`, …).
        buffer: String,
        /// What is wrong.
        problem: OutputProblem,
    },
    /// A named argument list without a parameter's argument.
    #[error(
        "missing argument `{}` ({ty}) of `{}`",
        crate::diag::quote(parameter),
        crate::diag::quote(function)
    )]
    MissingArgument {
        /// The function.
        function: String,
        /// The parameter.
        parameter: String,
        /// Its type, as written.
        ty: String,
    },
    /// A named argument that is not a parameter.
    #[error(
        "`{}` has no parameter `{}` (parameters: {})",
        crate::diag::quote(function),
        crate::diag::quote(name),
        crate::diag::quote_list(parameters)
    )]
    UnknownArgument {
        /// The function.
        function: String,
        /// The name given.
        name: String,
        /// The function's parameters.
        parameters: Vec<String>,
    },
    /// A typed result ([`crate::jit::FromValue`]) that does not match the
    /// function's result.
    #[error("the result is {found}, not {expected}")]
    Result {
        /// The requested Rust type, in words.
        expected: String,
        /// What the function returned.
        found: Found,
    },
    /// A typed kernel handle ([`crate::jit::Kernel::typed`]) whose Rust
    /// types do not fit the function's signature: every mismatch.
    #[error("`{}`: the typed handle does not fit: {}", crate::diag::quote(function), problems.join("; "))]
    Signature {
        /// The function.
        function: String,
        /// Each mismatch, in words.
        problems: Vec<String>,
    },
    /// Other argument errors (command-line argument specifications).
    #[error("{0}")]
    Call(String),
    /// A front end (builder, einsum) refused its input.
    #[error("{0}")]
    Frontend(String),
    /// The JIT refused a function (not in normal form) or failed to build it.
    #[error("jit: {0}")]
    Jit(String),
    /// An option out of its range ([`crate::jit::Options::threads`] above
    /// [`crate::jit::MAX_THREADS`]).
    #[error("{0}")]
    Options(String),
    /// A function asked for by name that the source does not define.
    #[error("no function `{}`{} (the source defines {})", crate::diag::quote(name), crate::diag::did_you_mean(name, defined.iter().map(String::as_str)), crate::diag::quote_list(defined))]
    NoFunction {
        /// The name asked for.
        name: String,
        /// The functions the source defines.
        defined: Vec<String>,
    },

    // ---- rule files (`egraph::rules`: loading, and the soundness check on
    // load in `egraph::check`) ----
    /// A rule file that cannot be read or parsed, or rules that do not fit
    /// together (a name defined twice): where, and what is wrong.
    #[error("{}{}: {message}", crate::diag::quote_path(std::path::Path::new(file)), line.map(|l| format!(":{l}")).unwrap_or_default())]
    RuleFile {
        /// The file (or folder) the error is about.
        file: String,
        /// The 1-based line, when the error is about one line.
        line: Option<usize>,
        /// What is wrong.
        message: String,
    },
    /// A rule refused on load: a random instance of it (as `einsat rules
    /// check` makes) gives different values on its two sides.
    #[error("{file}:{line}: rule `{rule}` is not {class}, refused on load ({}; skip the check with --no-rule-check or `RuleCheck::skip()`); counterexample:\n{counterexample}", verdict(*.holds))]
    UnsoundRule {
        /// The rule's name.
        rule: String,
        /// The floating-point class the rule claims.
        class: &'static str,
        /// The strongest class the rule did pass (`None`: it is unsound
        /// even in exact arithmetic).
        holds: Option<&'static str>,
        /// The file that defines it.
        file: String,
        /// The 1-based line that defines it.
        line: usize,
        /// Both sides as programs, and the values they give on the same
        /// inputs.
        counterexample: String,
    },
    // ---- end of rule files ----
    /// A contraction path or plan that cannot be used.
    #[error("{0}")]
    Plan(String),
    /// Files that cannot be read or written.
    #[error("{0}")]
    Io(String),
    /// A call stopped by [`crate::jit::Cancel::cancel`] (Ctrl-C in
    /// Python): its output is incomplete.
    #[error("interrupted: the call was cancelled before it finished (its output is incomplete)")]
    Interrupted,
    /// An allocation for data (a tensor of the interpreter, a result, a
    /// `let` temporary, a conversion, an `.npy` file's array) that the
    /// system refused: the call ends with this error instead of aborting
    /// the process. (Small allocations, such as a compile's, still abort
    /// when memory is exhausted, as everywhere in Rust.)
    #[error("out of memory: could not allocate {bytes} bytes for {what}")]
    OutOfMemory {
        /// The bytes asked for.
        bytes: u128,
        /// What they were for.
        what: String,
    },
    /// An integer array argument that a gather (`E[tok[i], j]`) refuses:
    /// an element that is not an exact integer, or one (plus the gather's
    /// offset) outside the axis it indexes (`tok[3] = 7 is outside 0..5
    /// (axis 0 of E, a gather index)`). Checked when the call starts, in
    /// the interpreter and the JIT alike.
    #[error("{0}")]
    Gather(String),
}

/// With a source: the rendered diagnostics (`file:line:col: error: …` and
/// the caret line); without: `kind: message; message`.
fn shown(d: &Diagnostics, kind: &str) -> String {
    match d.source {
        Some(_) => d.to_string(),
        None => format!("{kind}: {d}"),
    }
}

fn rank_text(n: usize, found: &Found) -> String {
    match (n, found) {
        (0, Found::Array(s)) => format!("expected a number, got an array with {} dims", s.len()),
        (0, f) => format!("expected a number, got {f}"),
        (n, Found::Array(s)) => format!("expected {n} dims, got {}", s.len()),
        (n, f) => format!("expected an array with {n} dims, got {f}"),
    }
}

impl Error {
    /// Parse errors without a known source.
    pub fn parse(d: Vec<Diagnostic>) -> Error {
        Error::Parse(Diagnostics::new(d))
    }

    /// Type errors without a known source.
    pub fn types(d: Vec<Diagnostic>) -> Error {
        Error::Type(Diagnostics::new(d))
    }

    /// Attach the source text (shown as file `name`) to parse and type
    /// errors that have none; other errors are returned unchanged.
    pub fn with_source(self, name: &str, text: &str) -> Error {
        let attach = |d: Diagnostics| match d.source {
            Some(_) => d,
            None => Diagnostics::with_source(d.diagnostics, name, text),
        };
        match self {
            Error::Parse(d) => Error::Parse(attach(d)),
            Error::Type(d) => Error::Type(attach(d)),
            e => e,
        }
    }

    /// Whether this is a call error: arguments or an output buffer that do
    /// not fit the function ([`Error::Arity`], [`Error::Rank`],
    /// [`Error::NotPair`], [`Error::Shape`], [`Error::SizeName`],
    /// [`Error::UnboundSize`], [`Error::TooLarge`], [`Error::Output`],
    /// [`Error::MissingArgument`], [`Error::UnknownArgument`],
    /// [`Error::Call`], [`Error::Gather`]).
    pub fn is_call(&self) -> bool {
        matches!(
            self,
            Error::Arity { .. }
                | Error::Rank { .. }
                | Error::NotPair { .. }
                | Error::Shape { .. }
                | Error::SizeName { .. }
                | Error::UnboundSize { .. }
                | Error::TooLarge { .. }
                | Error::Output { .. }
                | Error::MissingArgument { .. }
                | Error::UnknownArgument { .. }
                | Error::Call(_)
                | Error::Gather(_)
        )
    }

    /// The diagnostics of a parse or type error.
    pub fn diagnostics(&self) -> Option<&Diagnostics> {
        match self {
            Error::Parse(d) | Error::Type(d) => Some(d),
            _ => None,
        }
    }
}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, Error>;
