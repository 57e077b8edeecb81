//! # einsat
//!
//! Tensor programs in index notation, optimised by equality saturation and
//! run as native code over `ndarray` arrays.
//!
//! From text to a native call: load (parse and type-check), optimise,
//! compile, and call with arrays and views of any layout — read in place,
//! no copies — getting a typed result back:
//!
//! ```
//! use einsat::ndarray::{array, Array1, Array2};
//!
//! let prog = einsat::load(
//!     "fn axpy_mv(A: [n,m]R, x: [m]R, y: [n]R) -> [n]R =
//!        gen(i:n) y[i] + sum(j:m) A[i,j] * x[j]",
//! )?;
//! let f = prog.get("axpy_mv").unwrap();
//! let optimised = einsat::opt::optimize(f, &einsat::opt::Options::default())?;
//! let kernel = einsat::jit::compile(&optimised.program)?;
//!
//! let a: Array2<f64> = array![[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]];
//! let x = array![1.0, -1.0];
//! let y = array![0.5, 0.5, 0.5];
//! // owned arrays by reference
//! let r: Array1<f64> = kernel.eval((&a, &x, &y))?;
//! assert_eq!(r, array![-0.5, -0.5, -0.5]);
//!
//! // views: a transposed view (Fortran layout) and a reversed slice
//! let at = array![[1.0, 3.0, 5.0], [2.0, 4.0, 6.0]];
//! let y_rev = array![0.5, 0.5, 0.5, 9.0];
//! let r: Array1<f64> = kernel.eval((at.t(), &x, y_rev.slice(einsat::ndarray::s![..3;-1])))?;
//! assert_eq!(r, array![-0.5, -0.5, -0.5]);
//!
//! // into a buffer of yours (here every other element of a longer array)
//! let mut out = Array1::<f64>::zeros(6);
//! kernel.eval_into((&a, &x, &y), out.slice_mut(einsat::ndarray::s![..;2]))?;
//! assert_eq!(out, array![-0.5, 0.0, -0.5, 0.0, -0.5, 0.0]);
//!
//! // mistakes are typed errors, never a panic
//! let e = kernel.eval::<Array1<f64>>((&a, &y, &y)).unwrap_err();
//! assert!(matches!(e, einsat::Error::SizeName { .. }), "{e}");
//! # Ok::<(), einsat::Error>(())
//! ```
//!
//! Errors in the text point at it (`file:line:col` and the offending line):
//!
//! ```
//! let e = einsat::load("fn f(x: [n]R) -> R =\n  sum(i:n) y[i]").unwrap_err();
//! assert!(e.to_string().starts_with("<input>:2:12: error: unknown name `y`"), "{e}");
//! ```
//!
//! The same program from Rust, with the builder (binders take closures):
//!
//! ```
//! use einsat::frontend::builder::*;
//! let f = func("mv", |b| {
//!     let a = b.param("A", "[n,m]R");
//!     let x = b.param("x", "[m]R");
//!     gen("n", |i| sum("m", |j| a.at2(i, j) * x.at(j)))
//! })?;
//! let k = einsat::jit::compile(&f)?;
//! let y: einsat::ndarray::Array1<f64> =
//!     k.eval((&einsat::ndarray::array![[1.0, 2.0]], &einsat::ndarray::array![3.0, 4.0]))?;
//! assert_eq!(y, einsat::ndarray::array![11.0]);
//! # Ok::<(), einsat::Error>(())
//! ```
//!
//! And from an einsum string (numpy's grammar):
//!
//! ```
//! use einsat::ndarray::{array, Array2};
//! let f = einsat::frontend::einsum::einsum("ij,jk->ik")?;
//! let g = einsat::opt::optimize(&f, &Default::default())?.program;
//! let k = einsat::jit::compile(&g)?;
//! let a = array![[1.0, 2.0], [3.0, 4.0]];
//! let c: Array2<f64> = k.eval((&a, &a.t()))?;
//! assert_eq!(c, array![[5.0, 11.0], [11.0, 25.0]]);
//! # Ok::<(), einsat::Error>(())
//! ```
//!
//! **Element type.** Kernels compute in `f64` by default. A kernel
//! compiled with [`jit::Options::precision`] = [`Precision::F32`] computes
//! in `f32` (every operation rounded to `f32`, like numpy's float32) and
//! is called with [`Arg32`]s (`f32` numbers and array views, read in
//! place) through [`Kernel::call_f32`], returning a [`Value32`]; calling
//! a kernel with the other element type is an error. `f32` arrays do not
//! implement [`IntoArg`] (the `f64` calls). [`ndarray`] and [`rand`] are re-exported, so the
//! versions always match einsat's.
//!
//! The pipeline, one folder per stage:
//!
//! - [`syntax`]: the IR, parser and printer of the surface language;
//! - [`types`]: the type checker (all errors at once, with line:column);
//! - [`interp`]: the reference interpreter and the call boundary ([`Value`]);
//! - [`frontend`]: the Rust builder and the einsum front end;
//! - [`opt`]: the optimiser; [`jit`]: the native engine;
//! - [`plan`]: contraction planning (the order of pairwise contractions of
//!   a sum over a product of tensors, with a memory limit and slicing);
//! - [`typed`]: einsums over `f32`, complex and integer views, computed in
//!   their own type along a [`plan`];
//! - [`testing`]: random well-typed programs and inputs (property tests);
//! - [`cli`]: the `einsat` command line;
//! - [`diag`] and [`error`]: diagnostics and the crate's error type.

#![warn(missing_docs)]

// Unstable internals are public only for the crate's own integration
// tests, benches, examples, fuzz targets and the `einsat` binary; they are
// hidden from the docs and may change in any release.

pub mod cancel;
#[cfg(feature = "cli")]
#[doc(hidden)]
pub mod cli;
pub mod diag;
#[doc(hidden)]
pub mod egraph;
pub mod error;
#[doc(hidden)]
pub mod extract;
pub mod frontend;
pub mod interp;
pub mod jit;
#[doc(hidden)]
pub mod mem;
pub mod opt;
pub mod plan;
pub mod precision;
pub mod rules;
#[doc(hidden)]
pub mod stack;
pub mod syntax;
#[cfg(feature = "testing")]
pub mod testing;
pub mod typed;
pub mod types;
pub mod vmath;

pub use error::{Error, Result};
pub use interp::{IntValue, Value};
pub use jit::{
    Arg, Arg32, ArgMut, FromValue, IntArg, IntoArg, IntoArgMut, IntoArgs, Kernel, TypedKernel,
    Value32,
};
/// The `ndarray` version einsat's API uses (arrays in and out of kernels).
pub use ndarray;
pub use precision::{IntElem, Precision};
/// The `rand` version of [`testing`]'s signatures.
pub use rand;
pub use syntax::{Expr, Function, Program, Type};

/// Parse and type-check a whole source text. Errors keep the text:
/// their `Display` shows `<input>:line:col` and the caret line (see
/// [`load_named`] to name the file).
pub fn load(src: &str) -> Result<Program> {
    load_named(src, "<input>")
}

/// From text to a native kernel in one call: parse and type-check `src`,
/// take its function `name`, optimise it with `opts` and JIT-compile the
/// result ([`jit::compile`], cached per program). Errors as [`load`]'s, or
/// [`Error::NoFunction`] (with a suggestion when the name looks misspelt).
///
/// ```
/// use einsat::ndarray::array;
/// let k = einsat::compile_str(
///     "fn dot(x: [n]R, y: [n]R) -> R = sum(i:n) x[i] * y[i]",
///     "dot",
///     &einsat::opt::Options::default(),
/// )?;
/// let d: f64 = k.eval((&array![1.0, 2.0], &array![3.0, 4.0]))?;
/// assert_eq!(d, 11.0);
/// let e = einsat::compile_str("fn dot(x: R) -> R = x", "dto", &Default::default()).unwrap_err();
/// assert_eq!(e.to_string(), "no function `dto` (did you mean `dot`?) (the source defines dot)");
/// # Ok::<(), einsat::Error>(())
/// ```
pub fn compile_str(
    src: &str,
    name: &str,
    opts: &opt::Options,
) -> Result<std::sync::Arc<jit::Kernel>> {
    let prog = load(src)?;
    let f = prog.get(name).ok_or_else(|| Error::NoFunction {
        name: name.to_string(),
        defined: prog.functions.iter().map(|f| f.name.clone()).collect(),
    })?;
    let o = opt::optimize(f, opts)?;
    jit::compile(&o.program)
}

/// [`load`] with a file name for error messages.
pub fn load_named(src: &str, name: &str) -> Result<Program> {
    types::parse_and_check(src)
        .map(|p| p.program)
        .map_err(|e| e.with_source(name, src))
}
