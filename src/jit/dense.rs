//! Dense contractions in generated code: a nest `gen(i..) sum(k..) a * b * …`
//! over plain indices (no brackets, no padding) is emitted as a scheduled,
//! register-tiled, vectorised (`f64x2`, `fma`) loop nest instead of the
//! general scalar code of [`super::codegen`].
//!
//! [`plan`] decides from the nest and the layout whether this module takes
//! the nest; [`emit`] writes the function body (after the entry block of
//! [`super::codegen::compile`] has been created; it returns from the
//! function itself).

use super::loopir::{Layout, LoopProgram, Nest};
use cranelift_codegen::ir::Value;
use cranelift_frontend::FunctionBuilder;

/// The parameters of a nest's native function (see [`super::codegen`]).
#[derive(Clone, Copy, Debug)]
pub struct EntryParams {
    pub bufs: Value,
    pub strides: Value,
    pub sizes: Value,
    pub lo: Value,
    pub hi: Value,
}

/// How a dense nest is emitted.
#[derive(Clone, Debug)]
pub struct Plan {}

/// The plan for `nest`, when it is a dense contraction this module handles.
pub fn plan(_p: &LoopProgram, _nest: &Nest, _layout: &Layout) -> Option<Plan> {
    None
}

/// Emit the body of the nest's function, return included. `stride_at[b]`
/// is where buffer `b`'s strides start in the strides array.
pub fn emit(
    _b: &mut FunctionBuilder,
    _p: &LoopProgram,
    _nest: &Nest,
    _layout: &Layout,
    _stride_at: &[usize],
    _e: EntryParams,
    _plan: &Plan,
) {
    unreachable!("plan() takes no nest yet")
}
