//! Fallible allocation of every buffer whose size comes from data: the
//! interpreter's tensors, the JIT's results and `let` temporaries,
//! conversions of values, arrays read from `.npy` files. A refusal by the
//! system (an address-space limit, memory that cannot be committed)
//! becomes [`Error::OutOfMemory`], so the CLI prints it and exits 1 and
//! Python raises `MemoryError`, instead of Rust's default of aborting the
//! process. Allocations of fixed or program-sized bookkeeping stay
//! infallible, as everywhere in Rust.
//!
//! Unstable internal: fallible allocation of buffers proportional to data.

use crate::error::{Error, Result};
use ndarray::{ArrayD, IxDyn};

/// The error for `bytes` bytes of `what`.
pub fn oom(bytes: u128, what: impl Into<String>) -> Error {
    Error::OutOfMemory {
        bytes,
        what: what.into(),
    }
}

/// Room for `additional` more elements in `v` (exactly that many), or
/// [`Error::OutOfMemory`] (`what` says what they are for; formatted only
/// on failure).
pub fn reserve<T>(v: &mut Vec<T>, additional: usize, what: impl FnOnce() -> String) -> Result<()> {
    v.try_reserve_exact(additional).map_err(|_| {
        oom(
            (v.len() as u128 + additional as u128) * std::mem::size_of::<T>() as u128,
            what(),
        )
    })
}

/// An empty vector with room for `n` elements.
pub fn with_capacity<T>(n: usize, what: impl FnOnce() -> String) -> Result<Vec<T>> {
    let mut v = Vec::new();
    reserve(&mut v, n, what)?;
    Ok(v)
}

/// Element types whose all-zero bit pattern is their zero, so that a
/// buffer of them can come zeroed from the allocator ([`zeros`]).
///
/// # Safety
/// Zero bits must be a valid value of the type (and its zero).
pub unsafe trait ZeroBits: Copy {}

// SAFETY: IEEE 0.0 and the integer 0 are all zero bits; a complex number
// is two floats.
unsafe impl ZeroBits for f32 {}
unsafe impl ZeroBits for f64 {}
unsafe impl ZeroBits for i64 {}
unsafe impl ZeroBits for u64 {}
unsafe impl ZeroBits for num_complex::Complex32 {}
unsafe impl ZeroBits for num_complex::Complex64 {}

/// `n` zeros, allocated zeroed (the system's zero pages: memory is
/// committed only where it is written, as with `vec![0.0; n]`, and a
/// huge buffer costs nothing before it is written).
pub fn zeros<T: ZeroBits>(n: usize, what: impl FnOnce() -> String) -> Result<Vec<T>> {
    let size = std::mem::size_of::<T>();
    if n == 0 || size == 0 {
        return Ok(Vec::new());
    }
    let fail = |what: String| oom(n as u128 * size as u128, what);
    let layout = match std::alloc::Layout::array::<T>(n) {
        Ok(l) => l,
        Err(_) => return Err(fail(what())),
    };
    // SAFETY: `layout` has a non-zero size (n > 0, a sized element).
    let p = unsafe { std::alloc::alloc_zeroed(layout) } as *mut T;
    if p.is_null() {
        return Err(fail(what()));
    }
    // SAFETY: `p` was allocated by the global allocator with the layout of
    // `n` elements of `T`, all of them initialised (zero bits are a `T`,
    // `ZeroBits` promises).
    Ok(unsafe { Vec::from_raw_parts(p, n, n) })
}

/// An array of zeros of shape `shape` (C order).
pub fn array_zeros(shape: IxDyn, what: impl FnOnce() -> String) -> Result<ArrayD<f64>> {
    use ndarray::Dimension;
    let Some(n) = shape
        .slice()
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
    else {
        return Err(oom(u128::MAX, what()));
    };
    let data = zeros::<f64>(n, what)?;
    ArrayD::from_shape_vec(shape, data)
        .map_err(|e| Error::Call(format!("internal shape mismatch: {e}")))
}
