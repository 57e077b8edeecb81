//! # einsat
//!
//! Tensor programs in index notation, optimised by equality saturation and
//! run as native code. The pipeline, one folder per stage:
//!
//! - [`syntax`]: the IR, parser and printer of the surface language;
//! - [`types`]: the type checker (all errors at once, with line:column);
//! - [`interp`]: the reference interpreter and the call boundary ([`Value`]);
//! - [`frontend`]: the Rust builder and the einsum front end;
//! - [`testing`]: random well-typed programs and inputs (property tests);
//! - [`cli`]: the `einsat` command line;
//! - [`diag`] and [`error`]: diagnostics and the crate's error type.
//!
//! ```
//! use einsat::{load, Value};
//! let prog = load("fn dot(x: [n]R, y: [n]R) -> R = sum(i:n) x[i] * y[i]").unwrap();
//! let f = prog.get("dot").unwrap();
//! let x = Value::Array(ndarray::arr1(&[1.0, 2.0, 3.0]).into_dyn());
//! let r = einsat::interp::run(f, &[x.clone(), x]).unwrap();
//! assert_eq!(r, Value::Real(14.0));
//! ```

pub mod cli;
pub mod diag;
pub mod egraph;
pub mod error;
pub mod extract;
pub mod frontend;
pub mod interp;
pub mod jit;
pub mod opt;
pub mod stack;
pub mod syntax;
pub mod testing;
pub mod types;

pub use error::{Error, Result};
pub use interp::Value;
pub use jit::{Arg, ArgMut};
pub use syntax::{Expr, Function, Program, Type};

/// Parse and type-check a whole source text.
pub fn load(src: &str) -> Result<Program> {
    let parsed = syntax::parse_program(src).map_err(Error::Parse)?;
    types::check_parsed(&parsed).map_err(Error::Type)?;
    Ok(parsed.program)
}
