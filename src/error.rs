//! The crate-wide error type. Every failure a user can cause ends here with a
//! clear message; nothing user-caused panics.

use crate::diag::Diagnostic;

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

pub type Result<T> = std::result::Result<T, Error>;
