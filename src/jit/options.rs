//! The back end's options ([`Options`], part of the kernel cache's key)
//! and limits, with their documented defaults: the one place tuning
//! knobs live (the command line and benches may override them from the
//! environment; the library reads no environment variable for them).
//! Depends on no other part of the back end.

use crate::error::{Error, Result};
use std::sync::OnceLock;
/// Options of the native engine (part of the compile cache's key).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Options {
    /// Run matrix products on the GEMM library (else generated loops do
    /// all the work).
    pub gemm: bool,
    /// Threads a call may use (0: all cores), at most [`MAX_THREADS`]
    /// (more is refused when compiling, with [`Error::Options`]).
    pub threads: usize,
    /// The estimated work ([`nest_work`](crate::jit::nest_work)) from which a nest is split across
    /// threads (default [`PARALLEL_THRESHOLD`]; 0 splits every nest with a
    /// `gen` variable, as the differential tests do).
    pub parallel_threshold: u64,
    /// The estimated work ([`nest_work`](crate::jit::nest_work)) from which a GEMM stage calls
    /// the library; smaller products run on their generated code (default
    /// [`GEMM_MIN_WORK`]; 0 always calls the library, as its tests do).
    pub gemm_min_work: u64,
    /// Whether native code polls for cancellation (default: yes; see
    /// [`Cancel`](crate::jit::Cancel)). Code without polls cannot be cancelled inside a nest;
    /// off only to measure the polls' cost (`examples/schedbench.rs`,
    /// `examples/callcost.rs`).
    pub poll: bool,
    /// The code-size budget of one native function of generic loops, in
    /// nodes copied (default [`COPY_NODES`]).
    pub copy_nodes: usize,
    /// How a GEMM stage splits a product across threads (default
    /// [`DEFAULT_GEMM_SPLIT`]: one panel of the output per thread along
    /// its longer side).
    pub gemm_split: GemmSplit,
    /// The least multiply-adds a GEMM stage's product needs to be split
    /// across threads (default [`GEMM_SPLIT_MIN_WORK`]).
    pub gemm_split_min_work: usize,
    /// The format the kernel computes in (default `F64`). An `F32` kernel
    /// reads and writes `f32` arrays ([`Kernel::call_f32`](crate::jit::Kernel::call_f32)) and rounds every
    /// operation to `f32`; its GEMM stages run on the library's f32
    /// kernel, everything else on generic scalar loops (staged
    /// vector-math calls on the f64 kernels, rounded; no register tiles or
    /// vectors yet).
    pub precision: crate::precision::Precision,
    /// The bytes of rows a block of a row group touches (default
    /// [`ROW_BLOCK_BYTES`]): runs of nests over the same rows, where each
    /// row reads only its own row of what the run writes (a row
    /// softmax's max, exp, sum and division), run a block of rows at a
    /// time, each nest over the block, so the block stays in cache from
    /// one nest to the next (`schedule::rows`). 0: every nest over all
    /// its rows before the next (the values are the same either way).
    pub row_block_bytes: usize,
    /// Fuse a row sum into the nest that writes its rows (`t2[i] =
    /// sum(j) t1[i,j]` right after `t1`'s nest: each row is added as it is
    /// written, and the sum's nest is skipped; `schedule::rowsum`). The
    /// sum adds the same terms in another order, as the floating-point
    /// contract allows. Default on.
    pub fuse_row_sums: bool,
}

/// The most threads [`Options::threads`] may ask for: the one limit of
/// the Rust API, the command line (`--threads`) and Python (`threads=`).
/// (A call runs on at most `pool::MAX_THREADS` = 64 of them: a nest is not
/// split into more parts than that.)
pub const MAX_THREADS: usize = 1024;

/// The default [`Options::parallel_threshold`]: a nest with less estimated
/// work ([`crate::jit::nest_work`]) runs on one thread; below it, handing
/// chunks to a worker costs more than it saves (measured:
/// `benches/README.md`, "Generated nests on threads").
pub const PARALLEL_THRESHOLD: u64 = 1 << 20;

/// The default [`Options::row_block_bytes`]: about a fifth of a 2 MB L2,
/// so the rows of a block are still in L2 when the next nest of its row
/// group reads them.
pub const ROW_BLOCK_BYTES: usize = 384 * 1024;

/// The default [`Options::gemm_min_work`]: a GEMM stage whose nest has
/// less estimated work ([`nest_work`](crate::jit::nest_work)) than this runs on its generated
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
            gemm_split: DEFAULT_GEMM_SPLIT,
            gemm_split_min_work: GEMM_SPLIT_MIN_WORK,
            precision: crate::precision::Precision::F64,
            row_block_bytes: ROW_BLOCK_BYTES,
            fuse_row_sums: true,
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
            all_cores()
        } else {
            self.threads.min(MAX_POOL_THREADS)
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

/// The estimated work ([`nest_work`](crate::jit::nest_work)) a nest whose outermost loop is its
/// only loop runs per native call when it is split for cancellation
/// checks (about 10–100 ms).
pub const CHECK_WORK: u64 = 1 << 26;

/// How many layouts a kernel keeps specialised native code for; calls with
/// further layouts run the generic code (every stride read at run time).
pub const MAX_LAYOUTS: usize = 8;

/// The number of hardware threads (`threads = 0` in `jit::Options`).
pub fn all_cores() -> usize {
    static N: OnceLock<usize> = OnceLock::new();
    *N.get_or_init(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    })
}

/// The most threads a job uses (including the caller's).
pub const MAX_POOL_THREADS: usize = 64;

/// How a GEMM stage's library call with more than one thread is split
/// ([`Options::gemm_split`]; benchmarks compare the strategies,
/// `examples/gemm_threads.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GemmSplit {
    /// The library's own threading, `Parallelism::Rayon(threads)`.
    Rayon,
    /// Output panels on the thread pool, `per_thread` panels per thread,
    /// each a single-threaded library call.
    Panels {
        /// Panels per thread (≥ 1; more balance load, each re-packs the
        /// other operand).
        per_thread: usize,
        /// Which side of the output is cut.
        axis: GemmAxis,
    },
}

/// The side of the output [`GemmSplit::Panels`] cuts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GemmAxis {
    /// Rows (M).
    M,
    /// Columns (N).
    N,
    /// The longer of the two (rows when equal).
    Longer,
}

/// The default [`Options::gemm_split`]: one panel per thread along the
/// longer side (measured against the library's own threading in
/// `benches/README.md`, "GEMM stages").
pub const DEFAULT_GEMM_SPLIT: GemmSplit = GemmSplit::Panels {
    per_thread: 1,
    axis: GemmAxis::Longer,
};

/// The default [`Options::gemm_split_min_work`]: products of fewer
/// multiply-adds (a 256×256×256 product) run on one thread (measured:
/// `benches/README.md`, "GEMM stages").
pub const GEMM_SPLIT_MIN_WORK: usize = 1 << 24;
