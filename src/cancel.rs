//! Cancellation tokens ([`Cancel`], re-exported as `jit::Cancel`) and the
//! per-thread flag a call reads: the JIT's native code polls it where its
//! plan says, the typed einsum ([`crate::typed`]) between its steps and
//! inside its kernels. Owns the flag only; it must not run or stop code
//! itself.

use crate::error::{Error, Result};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A cancellation token: [`Cancel::cancel`], from any thread, stops every
/// kernel call made inside [`Cancel::run`] with this token; each returns
/// [`Error::Interrupted`] soon after (see the module doc,
/// "Cancellation"), its output incomplete. A token stays cancelled until
/// [`Cancel::reset`].
///
/// ```
/// let p = einsat::load("fn s(x: [n]R) -> R = sum(i:n, j:n) x[i] * x[j]")?;
/// let k = einsat::jit::compile(p.get("s").unwrap())?;
/// let x = einsat::ndarray::Array1::<f64>::ones(1000);
/// let cancel = einsat::jit::Cancel::new();
/// let c = cancel.clone();
/// let t = std::thread::spawn(move || c.run(|| k.eval::<f64>((&x,))));
/// cancel.cancel();
/// // finished before the cancel, or interrupted
/// match t.join().unwrap() {
///     Ok(v) => assert_eq!(v, 1e6),
///     Err(e) => assert!(matches!(e, einsat::Error::Interrupted)),
/// }
/// # Ok::<(), einsat::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Cancel(Arc<AtomicBool>);

/// The flag of calls made outside [`Cancel::run`]: never set.
static NEVER: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// The flag of the innermost [`Cancel::run`] on this thread (null:
    /// none).
    static CURRENT: Cell<*const AtomicBool> = const { Cell::new(std::ptr::null()) };
}

/// The cancellation flag of a call starting on this thread.
#[inline]
pub(crate) fn current_flag() -> &'static AtomicBool {
    let p = CURRENT.with(|c| c.get());
    if p.is_null() {
        &NEVER
    } else {
        // SAFETY: a non-null CURRENT is the flag of a `Cancel` that
        // `Cancel::run` borrows (and so keeps alive) until it restores the
        // previous value; the call using it returns before that.
        unsafe { &*p }
    }
}

impl Cancel {
    /// A token not cancelled.
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Stop the calls running (and those starting) under this token.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Whether [`Cancel::cancel`] was called (since the last reset).
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// Clear the token, for calls to come.
    pub fn reset(&self) {
        self.0.store(false, Ordering::Release);
    }

    /// Run `f` with this token: the kernel calls `f` makes on this thread
    /// (any of [`Kernel::call`](crate::jit::Kernel::call), [`Kernel::call_into`](crate::jit::Kernel::call_into), `call_args`,
    /// `eval`, …) stop when the token is cancelled.
    pub fn run<R>(&self, f: impl FnOnce() -> R) -> R {
        struct Restore(*const AtomicBool);
        impl Drop for Restore {
            fn drop(&mut self) {
                CURRENT.with(|c| c.set(self.0));
            }
        }
        let _restore = Restore(CURRENT.with(|c| c.replace(Arc::as_ptr(&self.0))));
        f()
    }
}

/// A cancelled call's error, after the native code stopped.
#[inline]
pub(crate) fn stopped(flag: &AtomicBool) -> Result<()> {
    if flag.load(Ordering::Relaxed) {
        Err(Error::Interrupted)
    } else {
        Ok(())
    }
}
