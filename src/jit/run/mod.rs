//! The run time: kernels and their calls. Compiling through the pipeline
//! with a global cache in front ([`compile`], [`cache`]), the call
//! boundary ([`boundary`]: the one module converting values between
//! callers and native code), running the nests as their steps say
//! ([`kernel`]), the GEMM library calls ([`gemm`]), the thread pool
//! ([`pool`]); cancellation tokens live in [`crate::cancel`], shared with
//! [`crate::typed`]. Must not generate code nor
//! make scheduling decisions (it asks `schedule`).

pub mod boundary;
pub mod cache;
pub mod compile;
pub mod gemm;
pub mod kernel;
pub mod pool;

use crate::error::Error;

/// An [`Error::Jit`] with message `m`.
pub(crate) fn jit_err(m: impl Into<String>) -> Error {
    Error::Jit(m.into())
}
