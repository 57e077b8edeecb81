//! The choice of back end for a nest: a GEMM stage ([`gemm_stage`]) and
//! the native code's back end ([`choose_backend`]: register tiles or
//! generic loops). The one place it is made; [`super::plan_nest`] and the
//! column-sum pass ask here.
//!
//! Must not generate code or look at buffers.

use super::gemm::{self, GemmPlan};
use super::loops::{self, LoopSchedule};
use super::tiles::{self, TilePlan};
use crate::jit::ir::{Layout, LoopProgram, Nest};
use crate::precision::Precision;

/// How a nest's native code is generated in one layout.
#[derive(Clone, Debug)]
pub enum Backend {
    /// Nothing: a column sum's nest this layout does not compute ahead
    /// (its consumer computes the sum in place); the nest is skipped.
    Skip,
    /// Register tiles of a dense contraction (`tiles`).
    Tiles(Box<TilePlan>),
    /// Generic loops (`loops`).
    Loops(LoopSchedule),
}

/// The GEMM stage of `nest` when `gemm` (the kernel runs GEMM stages)
/// and the nest is a product the library takes ([`gemm::plan`]) or a
/// part of a complex matrix product ([`gemm::plan_complex`]).
pub fn gemm_stage(p: &LoopProgram, nest: &Nest, gemm: bool) -> Option<GemmPlan> {
    if gemm {
        gemm::plan(p, nest).or_else(|| gemm::plan_complex(p, nest))
    } else {
        None
    }
}

/// The back end of a nest's native code in `layout` (`ran`: the nest as
/// it runs there) and `precision`: register tiles when [`tiles::plan_lanes`]
/// takes it (`f64x2` vectors in `F64`, `f32x4` in `F32`; never in the
/// integer formats), else generic loops. With [`gemm_stage`], the one
/// place the back end is chosen.
pub fn choose_backend(
    p: &LoopProgram,
    ran: &Nest,
    layout: &Layout,
    precision: Precision,
) -> Backend {
    let vl = match precision {
        Precision::F64 => Some(2),
        Precision::F32 => Some(4),
        Precision::I64 | Precision::I32 => None,
    };
    match vl.and_then(|vl| tiles::plan_lanes(p, ran, layout, vl)) {
        Some(t) => Backend::Tiles(Box::new(t)),
        None => Backend::Loops(loops::schedule(p, ran, layout)),
    }
}
