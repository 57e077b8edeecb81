//! The crate-wide error type. Every failure a user can cause ends here with a
//! clear message; nothing user-caused panics.

use crate::diag::Diagnostic;

/// Every error of the crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Syntax errors, one per broken function.
    #[error("syntax error: {}", join(.0))]
    Parse(Vec<Diagnostic>),
    /// Type errors, all of them.
    #[error("type error: {}", join(.0))]
    Type(Vec<Diagnostic>),
    /// Arguments that do not fit the function's signature.
    #[error("{0}")]
    Call(String),
    /// A front end (builder, einsum) refused its input.
    #[error("{0}")]
    Frontend(String),
    /// The JIT refused a function (not in normal form) or failed to build it.
    #[error("jit: {0}")]
    Jit(String),

    // ---- rule files (`egraph::rules`: loading, and the soundness check on
    // load in `egraph::check`) ----
    /// A rule file that cannot be read or parsed, or rules that do not fit
    /// together (a name defined twice): where, and what is wrong.
    #[error("{file}{}: {message}", line.map(|l| format!(":{l}")).unwrap_or_default())]
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
    #[error("{file}:{line}: rule `{rule}` is unsound, refused on load (skip the check with --no-rule-check or `RuleCheck::skip()`); counterexample:\n{counterexample}")]
    UnsoundRule {
        /// The rule's name.
        rule: String,
        /// The file that defines it.
        file: String,
        /// The 1-based line that defines it.
        line: usize,
        /// Both sides as programs, and the values they give on the same
        /// inputs.
        counterexample: String,
    },
    // ---- end of rule files ----
    /// Files that cannot be read or written.
    #[error("{0}")]
    Io(String),
}

fn join(d: &[Diagnostic]) -> String {
    d.iter()
        .map(|d| d.message.clone())
        .collect::<Vec<_>>()
        .join("; ")
}

/// The crate's result type.
pub type Result<T> = std::result::Result<T, Error>;
