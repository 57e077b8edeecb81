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
//! - [`ir`]: the loop IR (types and tree helpers only, no decisions).
//! - [`lower`]: normal form to loop IR.
//! - [`schedule`]: every decision about how a nest runs: the program-level
//!   passes (reuse of temporaries, column sums), then one
//!   [`schedule::NestPlan`] per nest and layout (back end chosen once:
//!   GEMM stage, register tiles or generic loops; loop order, tiling,
//!   vector width, polls) and per call the [`schedule::Step`] (threads,
//!   GEMM by work).
//! - [`emit`]: Cranelift code generation following a plan; it never
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
#[doc(hidden)]
pub(crate) mod run;
#[doc(hidden)]
pub(crate) mod schedule;

use crate::error::{Error, Result};
use crate::interp::Value;
use crate::syntax::ast::Function;
pub use run::boundary::arg::{Arg, ArgMut, FromValue, IntoArg, IntoArgMut, IntoArgs};
pub use run::cache::{cache_len, clear_cache, CACHE_CAPACITY};
pub use run::cancel::Cancel;
pub use run::compile::{cache_key, compile, compile_uncached, compile_uncached_with, compile_with};
pub use run::kernel::Kernel;
pub use schedule::nest_work;

/// Options of the native engine (part of the compile cache's key).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Options {
    /// Run matrix products on the GEMM library (else generated loops do
    /// all the work).
    pub gemm: bool,
    /// Threads a call may use (0: all cores), at most [`MAX_THREADS`]
    /// (more is refused when compiling, with [`Error::Options`]).
    pub threads: usize,
    /// The estimated work ([`nest_work`]) from which a nest is split across
    /// threads (default [`PARALLEL_THRESHOLD`]; 0 splits every nest with a
    /// `gen` variable, as the differential tests do).
    pub parallel_threshold: u64,
    /// The estimated work ([`nest_work`]) from which a GEMM stage calls
    /// the library; smaller products run on their generated code (default
    /// [`GEMM_MIN_WORK`]; 0 always calls the library, as its tests do).
    pub gemm_min_work: u64,
    /// Whether native code polls for cancellation (default: yes; see
    /// [`Cancel`]). Code without polls cannot be cancelled inside a nest;
    /// off only to measure the polls' cost (`examples/schedbench.rs`,
    /// `examples/callcost.rs`).
    pub poll: bool,
    /// The code-size budget of one native function of generic loops, in
    /// nodes copied (default [`COPY_NODES`]).
    pub copy_nodes: usize,
}

/// The most threads [`Options::threads`] may ask for: the one limit of
/// the Rust API, the command line (`--threads`) and Python (`threads=`).
/// (A call runs on at most `pool::MAX_THREADS` = 64 of them: a nest is not
/// split into more parts than that.)
pub const MAX_THREADS: usize = 1024;

/// The default [`Options::parallel_threshold`]: a nest with less estimated
/// work ([`nest_work`]) runs on one thread. Measured with
/// `examples/thread_sweep.rs` (one thread against two forced to split,
/// alternately in one process, the ratio per round; 2 cores under load
/// average 4–5): a generated matvec (`mv`, memory-bound) split lost below
/// ~2^20 units (2^17.2: 0.65×, 2^18: 0.80×, 2^20: 0.93×, 2^22: 0.95× of
/// the one-thread time), an `exp` map (`ew`) was 0.95–1.00× from 2^17.8 to
/// 2^22.6 and lost below (2^16.6: 0.93×, 2^15.8: 0.70×). The old 2^17
/// split `mv` at n=192 to 0.37–0.65×. Under that load no size paid
/// reliably; re-measure on a quiet machine.
pub const PARALLEL_THRESHOLD: u64 = 1 << 20;

/// The default [`Options::gemm_min_work`]: a GEMM stage whose nest has
/// less estimated work ([`nest_work`]) than this runs on its generated
/// code instead: the library's call (packing,
/// dispatch) costs microseconds, more than a 3×3 or 16×16 product takes in
/// the generated loops. About a 20×20×20 product.
pub const GEMM_MIN_WORK: u64 = 1 << 15;

impl Default for Options {
    fn default() -> Self {
        Options {
            gemm: true,
            threads: 0,
            parallel_threshold: PARALLEL_THRESHOLD,
            gemm_min_work: GEMM_MIN_WORK,
            poll: true,
            copy_nodes: COPY_NODES,
        }
    }
}

impl Options {
    /// Refuse options out of range: more than [`MAX_THREADS`] threads.
    pub fn check(&self) -> Result<()> {
        if self.threads > MAX_THREADS {
            return Err(Error::Options(format!(
                "{} threads is more than the limit of {MAX_THREADS} (0 uses all cores)",
                self.threads
            )));
        }
        Ok(())
    }

    /// The number of threads a call uses: `threads`, or all cores for 0.
    pub fn thread_count(&self) -> usize {
        if self.threads == 0 {
            run::pool::all_cores()
        } else {
            self.threads.min(run::pool::MAX_THREADS)
        }
    }
}

/// The default [`Options::copy_nodes`]: how many nodes of code copies may
/// add to one native function of generic loops: a body
/// is copied (peeled, unrolled, vectorised with several accumulators,
/// tiled) only while the nodes of the extra copies (times the copies of
/// the code around it) fit in what is left of this budget. The kernels of
/// the examples and benchmarks stay far within it and are copied as
/// before; in a large nest (deep nests of sums, long expressions, many
/// sums) the copying stops when the budget is spent, so a function's code
/// stays within a small multiple of its program's size (and with it
/// Cranelift's compile memory). A body of more than `COPY_BODY` (1,024) nodes
/// is never copied.
pub const COPY_NODES: usize = 1 << 14;

/// The most operations (nodes of its scalar body, sums and their bodies
/// included) a loop nest may have: each nest becomes one native function,
/// and Cranelift's register allocator needs memory and time that grow
/// faster than linearly in a function's size (about 270 MB and 9 s for a
/// nest of 8,000 operations, 1.4 GB and 100 s for 20,000). A larger nest
/// is refused with [`Error::Jit`] before any code is generated; the
/// interpreter runs it. Programs the optimiser writes stay far below
/// (its term limit is 5,000 nodes for the whole program).
pub const MAX_NEST_NODES: usize = 10_000;

/// The estimated work ([`nest_work`]) a nest whose outermost loop is its
/// only loop runs per native call when it is split for cancellation
/// checks (about 10–100 ms).
pub const CHECK_WORK: u64 = 1 << 26;

/// How many layouts a kernel keeps specialised native code for; calls with
/// further layouts run the generic code (every stride read at run time).
pub const MAX_LAYOUTS: usize = 8;

fn jit_err(m: impl Into<String>) -> Error {
    Error::Jit(m.into())
}

/// Compile (cached) and run.
pub fn run(f: &Function, args: &[Value]) -> Result<Value> {
    compile(f)?.call(args)
}

/// Unstable internals for the crate's tests, benches and examples (hidden
/// from the docs; not part of the stable API): the stages' entry points
/// and the process-wide counters and knobs of the run time.
#[doc(hidden)]
pub mod testing {
    use super::{compile_uncached_with, Function, Options, Result};

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
        pub use crate::jit::schedule::{plan_nest, Backend, NestPlan};
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
        /// default options (as a kernel would compile it).
        pub fn compile(p: &LoopProgram, layout: &Layout) -> Result<Native, String> {
            let opts = crate::jit::Options::default();
            let plans = crate::jit::schedule::plan_program(p, layout, &opts);
            crate::jit::emit::compile(p, &plans, layout, &opts)
        }
    }
    /// The thread pool.
    pub mod pool {
        pub use crate::jit::run::pool::*;
    }

    /// The Cranelift IR text of every function compiled for `f` with `opts`
    /// (uncached), for the layout with every buffer contiguous and for the
    /// generic layout (no unit strides), followed by the kernel's
    /// [`Kernel::stages`]: what a before/after comparison of the generated
    /// code hashes (`tests/codegen_snapshot.rs`). Not part of the stable API.
    pub fn clif_text(f: &Function, opts: &Options) -> Result<Vec<String>> {
        let (kernel, mut text) = crate::jit::emit::captured(|| compile_uncached_with(f, opts));
        let kernel = kernel?;
        let generic = kernel.generic.clone();
        let (native, more) = crate::jit::emit::captured(|| kernel.native(&generic));
        native?;
        text.extend(more);
        text.extend(kernel.stages());
        Ok(text)
    }
}
