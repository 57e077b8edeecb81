//! Stack room for deep programs. A flat chain in the source (a 10,000-term
//! sum, a 10,000-`let` block) is a tree 10,000 levels deep, and every stage
//! walks it recursively. The recursive walkers of the front end, the type
//! checker, the printer and the interpreter call [`deep`] at every level,
//! which moves onto a fresh stack segment when the current one runs low, so
//! they work on any thread; the library entry points of stages that are not
//! instrumented run in [`roomy`].
//!
//! Unstable internal: stack growth for deep programs.

/// Stack left before [`deep`] switches to a new segment.
const RED_ZONE: usize = 256 << 10;
/// Size of each new segment.
const SEGMENT: usize = 8 << 20;

/// Run `f`, first moving to a new stack segment if less than 256 KiB is
/// left. Call it at each level of a recursive walk over a program.
#[inline]
pub fn deep<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(RED_ZONE, SEGMENT, f)
}

/// Stack for a whole stage that recurses over the program without calling
/// [`deep`] (the optimiser's passes, the JIT's lowering): at least 64 MiB,
/// enough for the deepest program the parser accepts.
pub fn roomy<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(64 << 20, 256 << 20, f)
}

/// [`roomy`] when `e` is deeper than any program before flat chains were
/// allowed (256 levels), else `f` as it is: ordinary programs pay nothing.
pub fn roomy_for<R>(e: &crate::syntax::Expr, f: impl FnOnce() -> R) -> R {
    if e.depth() > 256 {
        roomy(f)
    } else {
        f()
    }
}
