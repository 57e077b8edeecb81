//! The native engine: normal-form functions compiled with Cranelift to loops
//! over strided `ndarray` buffers.
//!
//! The back end is a pipeline of stages, each a folder or file that
//! depends only on the stages before it:
//!
//! ```text
//! Function ──lower──▶ ir::LoopProgram ──schedule──▶ NestPlan per nest ──emit──▶ emit::Native
//!   (normal form)       (buffers, nests,     (back end, loop order,        (Cranelift code,
//!                        scalar trees)        tiles, vectors, polls)        one fn per nest)
//!                                                                   └──run──▶ Kernel::call
//!                                                 (arguments bound, steps decided, GEMM library, pool)
//! ```
//!
//! - `ir`: the loop IR (types and tree helpers only, no decisions).
//! - `lower`: normal form to loop IR.
//! - `schedule`: every decision about how a nest runs: the program-level
//!   passes (reuse of temporaries, column sums), then one
//!   [`schedule::NestPlan`] per nest and layout (back end chosen once:
//!   GEMM stage, register tiles or generic loops; loop order, tiling,
//!   vector width, polls) and per call the `schedule::Step` (threads,
//!   GEMM by work).
//! - `emit`: Cranelift code generation following a plan; it never
//!   decides, it only follows the plan.
//! - [`run`]: the kernel: cache, argument binding (the one module
//!   converting values at the boundary), workspaces, threads, the GEMM
//!   library calls, cancellation.
//!
//! [`compile`] type-checks, lowers, schedules and generates machine code;
//! [`Kernel::call`] allocates the result, [`Kernel::call_into`] writes
//! into the caller's buffers (see [`Kernel`] for calls, threads,
//! cancellation and the cache).

// The stages are internal (`pub(crate)`); their items are documented where
// they matter, and reach tests and tools only through [`testing`].
#[doc(hidden)]
pub(crate) mod emit;
#[doc(hidden)]
pub(crate) mod ir;
#[doc(hidden)]
pub(crate) mod lower;
mod options;
#[doc(hidden)]
pub(crate) mod run;
#[doc(hidden)]
pub(crate) mod schedule;

pub use crate::cancel::Cancel;
use crate::error::Result;
use crate::interp::Value;
use crate::syntax::ast::Function;
pub use options::{
    GemmAxis, GemmSplit, Options, CHECK_WORK, COPY_NODES, DEFAULT_GEMM_SPLIT, GEMM_MIN_WORK,
    GEMM_SPLIT_MIN_WORK, MAX_LAYOUTS, MAX_NEST_NODES, MAX_THREADS, PARALLEL_THRESHOLD,
    ROW_BLOCK_BYTES,
};
pub use run::boundary::arg::{
    Arg, Arg32, ArgMut, FromValue, IntArg, IntoArg, IntoArgMut, IntoArgs, Value32,
};
pub use run::boundary::typed::{ArgFor, ArgsFor, ParamType, ParamTypes, Shape, TypedKernel};
pub use run::cache::{cache_len, clear_cache, CACHE_CAPACITY};
pub use run::compile::{cache_key, compile, compile_uncached, compile_uncached_with, compile_with};
pub use run::kernel::Kernel;
pub use schedule::nest_work;

/// Compile (cached) and run.
pub fn run(f: &Function, args: &[Value]) -> Result<Value> {
    compile(f)?.call(args)
}

/// Unstable internals for the crate's tests, benches and examples (hidden
/// from the docs; not part of the stable API): the stages' entry points
/// and the process-wide counters and knobs of the run time.
#[doc(hidden)]
pub mod testing {
    use crate::error::Result;
    use crate::jit::{compile_uncached_with, Options};
    use crate::syntax::ast::Function;

    /// The loop IR.
    pub mod ir {
        pub use crate::jit::ir::*;
        pub use crate::jit::lower::lower;
    }
    /// The scheduling stage.
    pub mod schedule {
        pub use crate::jit::schedule::columns::{columns, materialise};
        pub use crate::jit::schedule::loops::{schedule, LoopSchedule, SchedExpr, SchedSum};
        pub use crate::jit::schedule::reuse::reuse_temps;
        pub use crate::jit::schedule::rows::{row_groups, RowGroup};
        pub use crate::jit::schedule::rowsum::{fused, row_sums};
        pub use crate::jit::schedule::storage::temp_liveness;
        pub use crate::jit::schedule::{plan_nest, plan_program, prepare, Backend, NestPlan};
    }
    /// Register tiles: their planning.
    pub mod tiles {
        pub use crate::jit::schedule::tiles::*;
    }
    /// GEMM stages: their planning and the library's counters and knobs.
    pub mod gemm {
        pub use crate::jit::run::gemm::*;
        pub use crate::jit::schedule::gemm::{plan, GemmPlan};
    }
    /// Code generation.
    pub mod emit {
        pub use crate::jit::emit::{Entry, Native};
        use crate::jit::ir::{Layout, LoopProgram};

        /// Native code for `p` in `layout`, every nest planned with the
        /// default options and compiled (a kernel's complete code).
        pub fn compile(p: &LoopProgram, layout: &Layout) -> Result<Native, String> {
            let opts = crate::jit::Options::default();
            let plans = crate::jit::schedule::plan_program(p, layout, &opts);
            crate::jit::emit::compile(p, &plans, layout, &opts, &[])
        }
    }
    /// The thread pool.
    pub mod pool {
        pub use crate::jit::run::pool::*;
    }

    /// The Cranelift IR text of every function compiled for `f` with `opts`
    /// (uncached), for the layout with every buffer contiguous and for the
    /// generic layout (no unit strides), followed by the kernel's
    /// [`Kernel::stages`](crate::jit::Kernel::stages): what a before/after comparison of the generated
    /// code hashes (`tests/suite/codegen_snapshot.rs`). Not part of the stable API.
    ///
    /// Each layout's code is its complete code, every nest compiled: the
    /// code a compile leaves out (`schedule::defer_native`) is compiled
    /// here, and its text stands for the first compile's.
    pub fn clif_text(f: &Function, opts: &Options) -> Result<Vec<String>> {
        use crate::jit::emit::captured;
        let (kernel, first) = captured(|| compile_uncached_with(f, opts));
        let kernel = kernel?;
        // the text of `native`'s layout with every nest: `text`, what
        // compiling `native` captured, unless it left nests out
        let complete = |native: std::sync::Arc<crate::jit::emit::Native>, text: Vec<String>| {
            if native.partial() && native.complete.get().is_none() {
                let (c, text) = captured(|| kernel.complete(&native));
                c.map(|_| text)
            } else {
                Ok(text)
            }
        };
        let mut text = complete(kernel.c_order_native()?, first)?;
        let generic = kernel.generic.clone();
        let (native, more) = captured(|| kernel.native(&generic));
        text.extend(complete(native?, more)?);
        text.extend(kernel.stages());
        Ok(text)
    }
}
