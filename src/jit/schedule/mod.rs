//! The scheduling stage: every decision about how the loop program runs,
//! made here and recorded for the later stages, which only follow it.
//!
//! - Program-level passes, once per kernel ([`prepare`]): reuse of `let`
//!   temporaries ([`reuse`]), column sums computed ahead ([`columns`]),
//!   the axis order of temporaries read only by GEMM stages
//!   ([`permute`]), row sums that may be fused into their maps
//!   ([`rowsum`]), the temporaries' live ranges ([`storage`]).
//! - Per nest and layout, one [`NestPlan`] ([`plan_nest`]): the back end
//!   chosen once ([`choose_backend`]: a GEMM stage ([`gemm`]), register
//!   tiles ([`tiles`]) or generic loops ([`loops`]: loop order, domains,
//!   interchange, cache blocking)), whether the code polls for
//!   cancellation, and the nest as it runs in that layout.
//! - Per call, once per sizes and layout, one [`Step`] per nest
//!   ([`step`]): the GEMM library or native code by work, threads, the
//!   rows run between cancellation checks.
//!
//! Owns decisions only: it reads the IR ([`super::ir`]) and the options,
//! and must not generate code (`emit`) or touch buffers (`run`).

pub mod backend;
pub mod columns;
pub mod gemm;
pub mod loops;
pub mod permute;
pub mod reuse;
pub mod rows;
pub mod rowsum;
pub mod storage;
pub mod tiles;

use super::ir::{resolve, Layout, LoopProgram, Nest, RowSum, Scalar};
use crate::jit::options::Options;
pub use backend::{choose_backend, gemm_stage, Backend};
use gemm::GemmPlan;
use std::borrow::Cow;

/// The program-level passes, in order, before any code is generated:
/// reuse of temporaries, then column sums (given scratch nests when
/// `opts.gemm` may run them on the library), then (with `opts.gemm`) the
/// axis order of temporaries only GEMM stages read (`permute`).
pub fn prepare(prog: &mut LoopProgram, opts: &Options) {
    reuse::reuse_temps(prog);
    // (F32: the GEMM stages of column sums run on the library's f32
    // kernel; integer formats have no GEMM stages)
    columns::columns(prog, opts.gemm && !opts.precision.is_int(), opts.precision);
    if opts.gemm {
        permute::permute_temps(prog);
    }
    rowsum::row_sums(prog);
}

/// Every decision about one nest in one layout.
#[derive(Clone, Debug)]
pub struct NestPlan<'n> {
    /// The nest as it runs in this layout: column sums computed ahead
    /// replaced by loads of their scratch vectors (`columns::with_columns`).
    pub nest: Cow<'n, Nest>,
    /// The GEMM stage that runs the nest instead of its native code when
    /// the call's work is large enough (see `step`); layout-independent.
    pub gemm: Option<GemmPlan>,
    /// The native code's back end.
    pub backend: Backend,
    /// Whether the native code polls for cancellation at the back edges
    /// of loops that have loops inside ([`Options::poll`]).
    pub poll: bool,
    /// The row sum this nest's generic loops compute as they write each
    /// row, storing the sum's buffer (whose nest is then skipped):
    /// [`rowsum::fused`].
    pub row_sum: Option<RowSum>,
}

/// The plan of `nest` (as lowered) in `layout`.
pub fn plan_nest<'n>(
    p: &LoopProgram,
    nest: &'n Nest,
    layout: &Layout,
    opts: &Options,
) -> NestPlan<'n> {
    // integer formats: generic loops only (no GEMM library stage)
    let gemm = gemm_stage(p, nest, opts.gemm && !opts.precision.is_int());
    let Some(ran) = columns::with_columns(p, nest, layout) else {
        return NestPlan {
            nest: Cow::Borrowed(nest),
            gemm,
            backend: Backend::Skip,
            poll: false,
            row_sum: None,
        };
    };
    // (F32: GEMM stages on the library's f32 kernel, register tiles of
    // `f32x4` vectors; integer formats: generic loops only)
    let backend = choose_backend(p, &ran, layout, opts.precision);
    let poll = opts.poll
        && match &backend {
            Backend::Skip => false,
            Backend::Tiles(_) => true,
            Backend::Loops(s) => s.order.len() + loops::sum_depth(&s.body) >= 2,
        };
    NestPlan {
        nest: ran,
        gemm,
        backend,
        poll,
        row_sum: None,
    }
}

/// The plans of every nest of `p` in `layout`, in order, row sums fused
/// into their maps where the maps' loops allow ([`rowsum::fused`]).
pub fn plan_program<'p>(p: &'p LoopProgram, layout: &Layout, opts: &Options) -> Vec<NestPlan<'p>> {
    let mut plans: Vec<NestPlan<'p>> = p
        .nests
        .iter()
        .map(|nest| plan_nest(p, nest, layout, opts))
        .collect();
    // (integer formats: no run-sum kernel)
    if opts.fuse_row_sums && !opts.precision.is_int() {
        let backends: Vec<&Backend> = plans.iter().map(|pl| &pl.backend).collect();
        let gemm: Vec<bool> = plans.iter().map(|pl| pl.gemm.is_some()).collect();
        for r in rowsum::fused(p, layout, &backends, &gemm) {
            plans[r.map_nest].row_sum = Some(r);
            plans[r.map_nest + 1].backend = Backend::Skip;
            plans[r.map_nest + 1].poll = false;
        }
    }
    plans
}

/// Whether the native code of `plan`'s nest is left out of a layout's
/// first compile, to be compiled on the first call that runs it: the nest
/// has a GEMM stage (which runs it whenever the work is large enough, so
/// its native code, register tiles, the largest function of most
/// kernels, serves only small calls and calls the library declines),
/// unless the program has no named sizes and its [`step`] is native (a
/// product of literal sizes below [`Options::gemm_min_work`] always runs
/// natively). The code itself is the same whenever it is compiled.
/// (`nest`: as lowered, the nest [`step`] is given at a call.)
pub fn defer_native(p: &LoopProgram, nest: &Nest, plan: &NestPlan<'_>, opts: &Options) -> bool {
    let Some(g) = &plan.gemm else {
        return false;
    };
    if matches!(plan.backend, Backend::Skip) {
        return false;
    }
    // (no named sizes: every size is a literal, the step is known now)
    !p.sizes.is_empty() || step(nest, Some(g), false, &[], 1, opts).gemm
}

/// Per nest of `p` with its plan, whether its native code is left out of
/// a layout's first compile ([`defer_native`]).
pub fn deferred(p: &LoopProgram, plans: &[NestPlan<'_>], opts: &Options) -> Vec<bool> {
    p.nests
        .iter()
        .zip(plans)
        .map(|(nest, plan)| defer_native(p, nest, plan, opts))
        .collect()
}

/// How a call runs one nest, decided once per sizes and layout.
#[derive(Clone, Copy, Debug)]
pub struct Step {
    /// On the GEMM library (its estimated work reached
    /// `Options::gemm_min_work`); native code if the library declines.
    pub gemm: bool,
    /// Split across the thread pool (its work reached
    /// `Options::parallel_threshold`).
    pub parallel: bool,
    /// The trip count of its outermost loop (1 without a `gen`).
    pub n0: usize,
    /// Not run: a column sum's nest that this layout does not compute
    /// ahead ([`Backend::Skip`]).
    pub skip: bool,
    /// Rows of the outermost loop run per native call between two checks
    /// of the cancellation flag: fewer than `n0` for a nest whose
    /// outermost loop is its only loop (native code polls only at the
    /// back edges of loops with loops inside) and whose work is large.
    pub rows: usize,
}

/// The step of `nest` for a call with the named sizes `svals` on
/// `threads` threads: the GEMM stage (`gemm`, when the nest is one) when
/// the work of each of its products (the nest's work over its batch count:
/// a batch of 4096 8×8 products is 4096 products of 8×8×8 each)
/// reaches [`Options::gemm_min_work`] or the stage is a batch of small
/// products ([`GemmPlan::small_batch`], run by the stage's own kernels), threads when it reaches
/// [`Options::parallel_threshold`], and a nest whose outermost loop is
/// its only loop in pieces of at most [`crate::jit::options::CHECK_WORK`], checking
/// the cancellation flag between them.
pub fn step(
    nest: &Nest,
    gemm: Option<&GemmPlan>,
    skip: bool,
    svals: &[i64],
    threads: usize,
    opts: &Options,
) -> Step {
    let n0 = nest.vars.first().map_or(1, |(_, n)| resolve(n, svals));
    let work = || nest_work(nest, svals);
    let gemm = gemm.is_some_and(|g| {
        g.small_batch(svals) || work() / g.batch_count(svals).max(1) >= opts.gemm_min_work
    });
    let parallel =
        threads > 1 && n0 > 1 && !nest.vars.is_empty() && work() >= opts.parallel_threshold;
    let rows = if !gemm && single_loop(nest) && work() > crate::jit::options::CHECK_WORK {
        ((n0 as u128 * crate::jit::options::CHECK_WORK as u128 / work() as u128) as usize).max(1)
    } else {
        n0
    };
    Step {
        gemm: gemm && !skip,
        parallel,
        n0,
        skip,
        rows,
    }
}

/// Whether the nest's outermost loop is its only loop (its native code
/// has no loop that polls for cancellation).
fn single_loop(nest: &Nest) -> bool {
    fn has_sum(s: &Scalar) -> bool {
        match s {
            Scalar::Sum(..) => true,
            Scalar::Reduce(..) | Scalar::Fold(..) => true,
            Scalar::Bin(_, a, b) => has_sum(a) || has_sum(b),
            Scalar::Neg(a) => has_sum(a),
            Scalar::Call(_, args) => args.iter().any(has_sum),
            _ => false,
        }
    }
    nest.vars.len() == 1 && !has_sum(&nest.body)
}

/// The estimated work of one run of `nest` with the named sizes `sizes`:
/// the product of its `gen` trip counts times the size of its body, where a
/// `sum` counts its trip count times its body (every node of the scalar
/// expression counts 1, a scalar function call 20: `exp` costs about as
/// much as 20 additions). Brackets are not evaluated, so a triangular nest
/// counts as its bounding box.
pub fn nest_work(nest: &Nest, sizes: &[i64]) -> u64 {
    let trips = nest.vars.iter().fold(1u64, |acc, (_, n)| {
        acc.saturating_mul(resolve(n, sizes) as u64)
    });
    trips.saturating_mul(expr_work(&nest.body, sizes).saturating_add(1))
}

fn expr_work(e: &Scalar, sizes: &[i64]) -> u64 {
    match e {
        Scalar::Num(_) | Scalar::Bracket(_) | Scalar::Eps(_) | Scalar::Load(..) => 1,
        Scalar::Bin(_, a, b) => 1 + expr_work(a, sizes).saturating_add(expr_work(b, sizes)),
        Scalar::Neg(a) => 1 + expr_work(a, sizes),
        Scalar::Call(_, args) => args
            .iter()
            .fold(20u64, |acc, a| acc.saturating_add(expr_work(a, sizes))),
        Scalar::Sum(_, n, b) => (resolve(n, sizes) as u64).saturating_mul(expr_work(b, sizes) + 1),
        Scalar::Reduce(_, _, n, b) => {
            (resolve(n, sizes) as u64).saturating_mul(expr_work(b, sizes) + 1)
        }
        Scalar::Index(_) | Scalar::SizeVal(_) => 1,
        Scalar::Select(_, args) => args
            .iter()
            .fold(2u64, |acc, a| acc.saturating_add(expr_work(a, sizes))),
        Scalar::Fold(f) => {
            let step = f
                .body
                .iter()
                .fold(1u64, |acc, a| acc.saturating_add(expr_work(a, sizes)));
            f.init.iter().fold(
                (resolve(&f.n, sizes) as u64).saturating_mul(step),
                |acc, a| acc.saturating_add(expr_work(a, sizes)),
            )
        }
        Scalar::Acc(_) => 1,
        Scalar::Gather(_, _, dyns) => dyns.iter().fold(4u64, |acc, (_, g, _)| {
            acc.saturating_add(expr_work(g, sizes))
        }),
    }
}
