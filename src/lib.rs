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

#![warn(missing_docs)]

// Unstable internals are public only for the crate's own integration
// tests, benches, examples, fuzz targets and the `einsat` binary; they are
// hidden from the docs and may change in any release.

/// Unstable internal: the `einsat` command line (feature `cli`).
#[cfg(feature = "cli")]
#[doc(hidden)]
pub mod cli;
pub mod diag;
/// Unstable internal: the e-graph language, saturation and rule machinery
/// (the rule API for users is [`rules`]).
#[doc(hidden)]
pub mod egraph;
pub mod error;
/// Unstable internal: cost model, extraction and the normal-form passes
/// (the optimiser for users is [`opt`]).
#[doc(hidden)]
pub mod extract;
pub mod frontend;
pub mod interp;
pub mod jit;
pub mod opt;
pub mod rules;
/// Unstable internal: stack growth for deep programs.
#[doc(hidden)]
pub mod stack;
pub mod syntax;
#[cfg(feature = "testing")]
pub mod testing;
pub mod types;

/// The `ndarray` version of einsat's signatures (arrays in and out).
pub use ndarray;
/// The `rand` version of [`testing`]'s signatures (random programs and
/// inputs take a `rand::Rng`).
pub use rand;

pub use error::{Error, Result};
pub use interp::Value;
pub use syntax::{Expr, Function, Program, Type};

/// Parse and type-check a whole source text.
pub fn load(src: &str) -> Result<Program> {
    let parsed = syntax::parse_program(src).map_err(Error::Parse)?;
    types::check_parsed(&parsed).map_err(Error::Type)?;
    Ok(parsed.program)
}
