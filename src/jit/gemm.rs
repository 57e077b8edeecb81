//! Contraction stages on a tuned GEMM library: a nest (or `let` temporary)
//! that is a (batched) matrix–matrix or matrix–vector product over plain
//! indices, in any permutation and with any strides, times an optional
//! scalar, runs as a library call instead of generated loops.
//!
//! [`plan`] recognises such a nest at compile time; [`Plan::run`] executes
//! it at call time on the buffers of the kernel.

use super::loopir::{LoopProgram, Nest};

/// A nest recognised as a GEMM stage.
#[derive(Clone, Debug)]
pub struct Plan {}

/// The GEMM plan of `nest`, when it is one.
pub fn plan(_p: &LoopProgram, _nest: &Nest) -> Option<Plan> {
    None
}

impl Plan {
    /// Run the stage: `bufs`, `strides` and `sizes` as the native code
    /// receives them.
    ///
    /// # Safety
    /// The pointers and strides describe live buffers whose shapes were
    /// checked against the loop program's buffer dims.
    pub unsafe fn run(
        &self,
        _bufs: &[*mut f64],
        _strides: &[i64],
        _sizes: &[i64],
        _threads: usize,
    ) {
        unreachable!("plan() takes no nest yet")
    }
}
