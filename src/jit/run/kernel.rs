//! Kernels: compiled functions and their calls. [`Kernel::call`]
//! allocates the result,
//! [`Kernel::call_into`] writes into the caller's buffers. Both check the
//! arguments exactly as the interpreter's call boundary does
//! ([`crate::interp::bind`]: arity, rank, shapes, size names, pairs of
//! arrays for pair parameters; a non-allocating check in [`call`] with the
//! interpreter's messages on refusal) and check the output's shape, before
//! any native code runs: native code only ever touches the buffers it was
//! given, within their shapes.
//!
//! **Calls.** A kernel keeps a few [`call::Workspace`]s (sizes, buffer
//! pointers and strides, `let` temporaries) and reuses them: once warmed
//! up, `call_into` does no heap allocation in generated code (GEMM stages
//! allocate in the library), also with threads > 1 and under
//! concurrent calls (each concurrent call takes its own workspace, created
//! once). A workspace remembers the last call it served that passed the
//! checks (every argument's and the output's kind, shape and strides,
//! read in one walk): a call identical in all of these skips the checks
//! and the setup — sizes, strides, the layout's code and the per-nest
//! decisions below are those of the remembered call — and only swaps in
//! its buffer pointers (see [`call`]).
//!
//! **Threads.** The nests run in order (a temporary is written before it is
//! read); the nests of a row group (`schedule::rows`) run a block of rows
//! at a time, each nest of the group over the block before the next block
//! (split across threads by rows when one of them is). A nest whose estimated work — trip counts times body size, see
//! [`nest_work`] — is at least [`Options::parallel_threshold`] (default
//! [`PARALLEL_THRESHOLD`], measured on a 2-core Zen 3: below it, handing
//! chunks to a worker costs more than it saves) has the range `0..n0` of
//! its outermost `gen` variable split into contiguous chunks, each run by
//! the native entry on a thread of [`pool`] (`entry(bufs, strides, sizes,
//! lo, hi)` computes exactly the elements with `v0` in `lo..hi`).
//! Reductions are never split, so results are bit-identical for every
//! thread count. The estimate, and with it the choice of threads and of
//! the GEMM library ([`Options::gemm_min_work`]), is made once per sizes
//! and layout, not per call. Nests without a `gen` variable run on the calling thread;
//! GEMM stages get the thread count.
//!
//! **Cancellation.** A call made inside [`Cancel::run`] stops soon after
//! [`Cancel::cancel`] (from any thread) and returns [`Error::Interrupted`]
//! (its output incomplete): the native code of every loop that has loops
//! inside reads the call's flag at its back edge (one load from a stack
//! slot and one from the flag per iteration of an outer loop; innermost
//! loops are untouched), a nest whose outermost loop is its only loop runs
//! in native calls of at most [`CHECK_WORK`] estimated work with a check
//! between them, threads check before each chunk, and GEMM stages before
//! each library call (a product of more than [`gemm::CANCEL_WORK`]
//! multiply-adds is cut into panels). The flag's address travels after the
//! named sizes (`sizes[n]`); calls outside [`Cancel::run`] point it at a
//! flag that is never set. An innermost loop runs to its end (at most
//! 2^31 iterations of its body) before the next check.
//!
//! **Cache.** [`compile`] and [`compile_with`] keep kernels in a global
//! least-recently-used cache of at most [`CACHE_CAPACITY`] kernels, keyed
//! by the program text and the options ([`cache_key`]: `{options:?}`, a
//! newline, and the function as [`crate::syntax::print_function`] prints
//! it). An evicted
//! kernel stays alive for as long as a caller holds its `Arc`;
//! [`cache_len`] and [`clear_cache`] inspect and empty the cache.

//!
//! Owns running the native code and the GEMM stages as the plans say; it
//! must not generate code (`emit`) nor decide how a nest runs
//! (`schedule`).

use super::boundary::{self as call, check_out, Sig};
use super::gemm::{Ran, Threads};
use super::jit_err;
use super::pool;
use crate::cancel::{current_flag, stopped};
use crate::error::{Error, Result};
use crate::interp::value::{AsOperand, AsOperandMut};
use crate::interp::{self, Boundary, Value};
use crate::jit::emit::{self, Entry, Native};
use crate::jit::ir::{resolve, BufKind, Layout, LoopProgram};
use crate::jit::options::{Options, MAX_LAYOUTS};
use crate::jit::schedule::gemm::GemmPlan;
use crate::jit::schedule::rows::{self, RowGroup};
use crate::jit::schedule::storage::{self, temp_liveness};
use crate::jit::schedule::{self, nest_work};
use crate::syntax::ast::Function;
use call::arg::{Arg, ArgMut, FromValue, IntoArgMut, IntoArgs};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Native code per layout: the layout, the layout flattened, the code.
type Natives = Vec<(Layout, Vec<bool>, Arc<Native>)>;

/// A compiled function.
///
/// Native code is specialised for the layout of the buffers it is called
/// with ([`Layout`]: which axes have unit stride). [`compile`](crate::jit::compile)
/// generates the code for C-order arguments; a call with another layout
/// compiles (once) code for that layout, up to [`MAX_LAYOUTS`] of them, and
/// then falls back to the generic code. A layout's first compile leaves
/// out the native code of GEMM stages' nests (`schedule::defer_native`:
/// the library runs them unless the call is small or the library
/// declines it); the first call that runs one natively compiles the
/// layout's complete code (`Kernel::complete`), the same code a compile
/// without deferral gives, and later calls of that layout use it.
pub struct Kernel {
    func: Function,
    prog: LoopProgram,
    /// Native code per layout (with the layout flattened, buffers then
    /// axes); the first is C order.
    natives: Mutex<Natives>,
    /// The generic layout, flattened.
    pub(crate) generic: Vec<bool>,
    /// Per nest: the GEMM stage that runs it instead of native code.
    gemm: Vec<Option<GemmPlan>>,
    opts: Options,
    pub(crate) result: Boundary,
    sig: call::Sig,
    /// The layouts of `natives` whose flattened form fits in 64 bits,
    /// packed (bit `k` = axis `k` has unit stride), with their code: the
    /// lock-free lookup of a call's layout. Filled in order, under the
    /// `natives` lock, and never emptied.
    fast: [OnceLock<(u64, Arc<Native>)>; MAX_LAYOUTS + 1],
    /// An idle workspace, taken and given back without a lock (null when
    /// a call holds it); boxed so that it never moves.
    idle: AtomicPtr<call::Workspace>,
    /// Further workspaces of calls not running (see [`call::Workspace`]);
    /// boxed, as they pass to and from `idle` without moving.
    #[allow(clippy::vec_box)]
    spare: Mutex<Vec<Box<call::Workspace>>>,
    /// Per leaf of the arguments and the output (see
    /// [`call::Sig::leaves`]), the buffer it is the first element of
    /// ([`call::NO_BUF`] for a parameter leaf no nest reads); `None`
    /// altogether (calls are never remembered) if some parameter or
    /// result buffer is not a leaf.
    leaf_buf: Option<Vec<usize>>,
    /// The threads a call uses ([`Options::thread_count`]).
    threads: usize,
    /// The `let` temporaries (buffer indices) by the first nest that
    /// touches them, with the nests `(first, last)` that write or read
    /// them: two temporaries whose ranges do not meet share storage (see
    /// [`temp_liveness`]).
    live: Vec<(usize, (usize, usize))>,
    /// Runs of nests run a block of rows at a time
    /// ([`rows::row_groups`]); the temporaries they touch are live
    /// through the whole run (in `live`).
    groups: Vec<RowGroup>,
    /// Per row group, the buffers a block touches ([`rows::row_buffers`]),
    /// for sizing its blocks at each new call shape without allocating.
    group_bufs: Vec<Vec<usize>>,
    /// Every call writes every element of the result, which is one array
    /// ([`writes_whole_result`]): `call` and `call_f32` allocate it without zeroing.
    whole: bool,
}

/// Whether every successful call writes every element of the result: the
/// result is one array (one `Out` buffer, no pair), and some nest writes
/// that buffer with one distinct loop variable per axis, each over the
/// axis' whole range (a nest stores into every element of its range: its
/// generic loops, register tiles or GEMM stage; a nest is skipped only
/// when it writes a column sum's scratch, never the result; a cancelled
/// or failed call returns an error and its result is dropped unread).
/// Conservative: any other shape of program says no, and its result is
/// zeroed as before.
pub(crate) fn writes_whole_result(p: &LoopProgram) -> bool {
    let outs: Vec<usize> = (0..p.bufs.len())
        .filter(|&b| matches!(p.bufs[b].kind, BufKind::Out { .. }))
        .collect();
    let [out] = outs[..] else {
        return false;
    };
    let buf = &p.bufs[out];
    if !matches!(&buf.kind, BufKind::Out { path } if path.is_empty())
        || buf.dims.is_empty()
        || buf.flag.is_some()
        || p.cols.iter().any(|c| c.buf == out)
    {
        return false;
    }
    p.nests.iter().any(|n| {
        n.buf == out
            && n.vars.len() == buf.dims.len()
            && n.vars.iter().zip(&buf.dims).all(|((_, r), d)| r == d)
            && n.vars
                .iter()
                .enumerate()
                .all(|(a, (v, _))| n.vars[..a].iter().all(|(w, _)| w != v))
    })
}

impl Kernel {
    /// The kernel of `f` (lowered and scheduled into `prog`, its result
    /// type `ret`) with the native code `native` for `layout` (C order)
    /// and the GEMM stage of each nest.
    pub(crate) fn new(
        f: &Function,
        prog: LoopProgram,
        ret: &crate::syntax::ast::Type,
        layout: Layout,
        native: Native,
        gemm: Vec<Option<GemmPlan>>,
        opts: &Options,
    ) -> Kernel {
        let result = Boundary::of(ret);
        let flat = layout.unit.concat();
        let native = Arc::new(native);
        let fast: [OnceLock<(u64, Arc<Native>)>; MAX_LAYOUTS + 1] = Default::default();
        if let Some(key) = pack(&flat) {
            let _ = fast[0].set((key, native.clone()));
        }
        let mut live = temp_liveness(&prog);
        let lib: Vec<bool> = gemm.iter().map(Option::is_some).collect();
        let groups = rows::row_groups(&prog, &lib, opts);
        rows::extend_liveness(&mut live, &groups);
        let group_bufs = groups.iter().map(|g| rows::row_buffers(&prog, g)).collect();
        let whole = writes_whole_result(&prog);
        let sig = Sig::new(f, &result, &prog);
        let leaf_buf = sig.leaf_buffers(&prog);
        Kernel {
            leaf_buf,
            threads: opts.thread_count(),
            fast,
            idle: AtomicPtr::new(std::ptr::null_mut()),
            gemm,
            func: f.clone(),
            sig,
            generic: Layout::generic(&prog).unit.concat(),
            natives: Mutex::new(vec![(layout, flat, native)]),
            prog,
            opts: opts.clone(),
            result,
            spare: Mutex::new(Vec::new()),
            live,
            groups,
            group_bufs,
            whole,
        }
    }
}

impl Drop for Kernel {
    fn drop(&mut self) {
        let p = std::mem::replace(self.idle.get_mut(), std::ptr::null_mut());
        if !p.is_null() {
            // SAFETY: a non-null `idle` is a `Box` given up by `give_back`
            // and owned by the kernel alone.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

/// A flattened layout packed into 64 bits (bit `k` = axis `k` has unit
/// stride), when it has at most 64 axes.
fn pack(unit: &[bool]) -> Option<u64> {
    (unit.len() <= 64).then(|| {
        unit.iter()
            .enumerate()
            .fold(0u64, |acc, (k, &u)| acc | (u64::from(u) << k))
    })
}

/// An array of `zero`s of the shape `dims` at `sizes`, allocated fallibly
/// (`what`: its element type, for the error).
fn zeroed<T: Clone>(
    dims: &[crate::syntax::ast::Size],
    sizes: &interp::Sizes,
    zero: T,
    what: &dyn std::fmt::Display,
) -> Result<ndarray::ArrayD<T>> {
    let shape = dims
        .iter()
        .map(|n| interp::value::resolve(n, sizes))
        .collect::<Result<Vec<usize>>>()?;
    let n = interp::value::checked_elements(&shape)?;
    let mut data = crate::mem::with_capacity(n, || {
        format!("the result (an {what} array of shape {shape:?})")
    })?;
    data.resize(n, zero);
    ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&shape), data)
        .map_err(|e| jit_err(format!("internal shape mismatch: {e}")))
}

/// The output of an `F32` call for the result boundary `b` at `sizes`:
/// `f32` arrays of zeros (allocated fallibly), numbers in cells.
fn alloc32(b: &Boundary, sizes: &interp::Sizes) -> Result<crate::jit::run::boundary::arg::Out32> {
    use crate::jit::run::boundary::arg::Out32;
    Ok(match b {
        Boundary::Array(d) if d.is_empty() => Out32::Real(0.0),
        Boundary::Array(d) => Out32::Array(zeroed(d, sizes, 0.0f32, &"f32")?),
        Boundary::Pair(a, c) => {
            Out32::Pair(Box::new(alloc32(a, sizes)?), Box::new(alloc32(c, sizes)?))
        }
    })
}

/// The output of an integer call for the result boundary `b` at `sizes`:
/// arrays of zeros of `T` (allocated fallibly), numbers in cells.
fn alloc_int<T: crate::precision::IntElem>(
    b: &Boundary,
    sizes: &interp::Sizes,
) -> Result<crate::jit::run::boundary::arg::OutInt<T>> {
    use crate::jit::run::boundary::arg::OutInt;
    Ok(match b {
        Boundary::Array(d) if d.is_empty() => OutInt::Real(0.0),
        Boundary::Array(d) => OutInt::Array(zeroed(d, sizes, T::default(), &T::PRECISION)?),
        Boundary::Pair(a, c) => OutInt::Pair(
            Box::new(alloc_int(a, sizes)?),
            Box::new(alloc_int(c, sizes)?),
        ),
    })
}

/// How many idle workspaces a kernel keeps (more concurrent calls create
/// and drop their own).
const MAX_SPARE: usize = 8;

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Kernel({})", self.func.name)
    }
}

/// Raw buffer pointers shared by the threads of one nest.
#[derive(Clone, Copy)]
struct Raw {
    bufs: *const *mut f64,
    strides: *const i64,
    sizes: *const i64,
}

// SAFETY: the threads of a nest call its entry on disjoint ranges of the
// outermost `gen` variable, so they write disjoint elements and only read
// buffers no thread of the nest writes (a nest writes its own buffer only).
unsafe impl Sync for Raw {}
unsafe impl Send for Raw {}

/// The chunks `0..n0` is split into for `threads` threads: eight per
/// thread (so uneven rows, as in triangular nests, balance out), each a
/// multiple of 8 rows when they are long (register tiles stay whole).
fn chunking(n0: usize, threads: usize) -> (usize, usize) {
    let mut len = n0.div_ceil(8 * threads).max(1);
    if len >= 16 {
        len = len.next_multiple_of(8);
    }
    (len, n0.div_ceil(len))
}

impl Kernel {
    /// The function this kernel runs.
    pub fn function(&self) -> &Function {
        &self.func
    }

    /// The loop program the kernel was generated from.
    #[doc(hidden)]
    pub fn loop_program(&self) -> &LoopProgram {
        &self.prog
    }

    /// The options the kernel was compiled with.
    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// Native code for the flattened layout `unit` (compiled on first use).
    pub(crate) fn native(&self, unit: &[bool]) -> Result<Arc<Native>> {
        let mut natives = self
            .natives
            .lock()
            .map_err(|_| jit_err("kernel poisoned"))?;
        if let Some((_, _, n)) = natives.iter().find(|(_, l, _)| l.as_slice() == unit) {
            return Ok(n.clone());
        }
        let flat = if natives.len() >= MAX_LAYOUTS {
            if let Some((_, _, n)) = natives.iter().find(|(_, l, _)| *l == self.generic) {
                return Ok(n.clone());
            }
            self.generic.clone()
        } else {
            unit.to_vec()
        };
        let mut it = flat.iter();
        let layout = Layout {
            unit: self
                .prog
                .bufs
                .iter()
                .map(|b| it.by_ref().take(b.dims.len()).copied().collect())
                .collect(),
        };
        let plans = schedule::plan_program(&self.prog, &layout, &self.opts);
        // (the native code of GEMM stages waits for a call that runs it)
        let defer = schedule::deferred(&self.prog, &plans, &self.opts);
        let n = Arc::new(
            emit::compile(&self.prog, &plans, &layout, &self.opts, &defer).map_err(jit_err)?,
        );
        if let Some(key) = pack(&flat) {
            // under the lock: slots fill in order, each once
            if let Some(free) = self.fast.iter().find(|f| f.get().is_none()) {
                let _ = free.set((key, n.clone()));
            }
        }
        natives.push((layout, flat, n.clone()));
        Ok(n)
    }

    /// `native` itself, or when it left some nest's code out (the native
    /// code of a GEMM stage, [`schedule::defer_native`]), the same
    /// layout's code with every nest, compiled on the first call that
    /// needs it (a call small enough for native code, or one the library
    /// declines) and kept with `native`.
    pub(crate) fn complete(&self, native: &Arc<Native>) -> Result<Arc<Native>> {
        if !native.partial() {
            return Ok(native.clone());
        }
        if let Some(c) = native.complete.get() {
            return Ok(c.clone());
        }
        // (under the lock: compiled once)
        let natives = self
            .natives
            .lock()
            .map_err(|_| jit_err("kernel poisoned"))?;
        if let Some(c) = native.complete.get() {
            return Ok(c.clone());
        }
        let (layout, _, _) = natives
            .iter()
            .find(|(_, _, n)| Arc::ptr_eq(n, native))
            .ok_or_else(|| jit_err("internal: native code of another kernel"))?;
        let plans = schedule::plan_program(&self.prog, layout, &self.opts);
        let c =
            Arc::new(emit::compile(&self.prog, &plans, layout, &self.opts, &[]).map_err(jit_err)?);
        let _ = native.complete.set(c.clone());
        Ok(c)
    }

    /// The C-order code (the first compiled), as compiled.
    pub(crate) fn c_order_native(&self) -> Result<Arc<Native>> {
        let natives = self
            .natives
            .lock()
            .map_err(|_| jit_err("kernel poisoned"))?;
        natives
            .first()
            .map(|(_, _, n)| n.clone())
            .ok_or_else(|| jit_err("internal: a kernel without native code"))
    }

    /// Per nest, in execution order: how it runs — `gemm M×N×K` (with
    /// `batch B` for batched products) for a GEMM stage, `native` for
    /// generated code. A GEMM stage may still run natively on a call where
    /// it degenerates (see [`gemm`]). The nest of a column sum computed
    /// ahead (`schedule::columns`) is marked `(column sum)`: it runs in
    /// the layouts that compute the sum ahead and is skipped in the others.
    pub fn stages(&self) -> Vec<String> {
        self.stages_of()
    }

    /// Whether calls allocate the result without zeroing it (`call`,
    /// `call_args`, `call_f32`): every call writes every element
    /// ([`writes_whole_result`]). Unstable (for tests).
    #[doc(hidden)]
    pub fn fresh_result(&self) -> bool {
        self.whole
    }

    fn stages_of(&self) -> Vec<String> {
        self.gemm
            .iter()
            .zip(&self.prog.nests)
            .map(|(g, nest)| {
                let s = g
                    .as_ref()
                    .map_or("native".to_string(), |g| g.describe().to_string());
                if self.prog.cols.iter().any(|c| c.buf == nest.buf) {
                    format!("{s} (column sum)")
                } else {
                    s
                }
            })
            .collect()
    }

    /// The estimated work of a call on `args`: [`nest_work`] summed over
    /// the nests (multiply-adds and other operations, a scalar function
    /// call counting 20), or `None` when the arguments do not fit (the call
    /// would refuse them). The Python binding runs calls of much work on a
    /// helper thread so that Ctrl-C can cancel them.
    pub fn work(&self, args: &[Arg<'_>]) -> Option<u64> {
        self.work_of(args)
    }

    /// [`Kernel::work`] for the arguments of [`Kernel::call_f32`].
    pub fn work_f32(&self, args: &[crate::jit::Arg32<'_>]) -> Option<u64> {
        use crate::jit::run::boundary::arg::Op32;
        let ops: Vec<Op32<'_>> = args.iter().map(Op32::of).collect();
        self.work_of(&ops)
    }

    /// [`Kernel::work`] for the arguments of [`Kernel::call_int`].
    pub fn work_int<T: crate::precision::IntElem>(
        &self,
        args: &[crate::jit::IntArg<'_, T>],
    ) -> Option<u64> {
        use crate::jit::run::boundary::arg::Op32;
        let ops: Vec<Op32<'_>> = args.iter().map(Op32::of_int).collect();
        self.work_of(&ops)
    }

    fn work_of<V: crate::interp::value::AsOperand>(&self, args: &[V]) -> Option<u64> {
        let mut slots = vec![call::UNBOUND; self.sig.names.len()];
        if !self.sig.bind(args, &mut slots) {
            return None;
        }
        let svals = self
            .sig
            .prog_slots
            .iter()
            .map(|s| {
                s.map(|s| slots[s])
                    .filter(|&v| v != call::UNBOUND)
                    .map(|v| v as i64)
            })
            .collect::<Option<Vec<i64>>>()?;
        Some(
            self.prog
                .nests
                .iter()
                .fold(0u64, |w, n| w.saturating_add(nest_work(n, &svals))),
        )
    }

    /// How many layouts native code has been generated for.
    pub fn layouts_compiled(&self) -> usize {
        self.natives.lock().map(|n| n.len()).unwrap_or(0)
    }

    /// Native code for the packed layout `key`, without a lock, if it has
    /// been compiled.
    fn fast_native(&self, key: u64) -> Option<&Arc<Native>> {
        for f in &self.fast {
            match f.get() {
                Some((k, n)) if *k == key => return Some(n),
                Some(_) => {}
                None => return None,
            }
        }
        None
    }

    /// A workspace for one call: the idle one (lock-free), a spare one, or
    /// a new one.
    fn workspace(&self) -> Box<call::Workspace> {
        let p = self.idle.swap(std::ptr::null_mut(), Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: `idle` held a `Box` given up by `give_back`; the swap
            // made this call its only owner.
            return unsafe { Box::from_raw(p) };
        }
        self.spare
            .lock()
            .ok()
            .and_then(|mut s| s.pop())
            .unwrap_or_default()
    }

    fn give_back(&self, ws: Box<call::Workspace>) {
        let p = Box::into_raw(ws);
        if self
            .idle
            .compare_exchange(
                std::ptr::null_mut(),
                p,
                Ordering::Release,
                Ordering::Relaxed,
            )
            .is_ok()
        {
            return;
        }
        // SAFETY: `p` came from `Box::into_raw` just above and was not
        // published (the exchange failed).
        let ws = unsafe { Box::from_raw(p) };
        if let Ok(mut s) = self.spare.lock() {
            if s.len() < MAX_SPARE {
                s.push(ws);
            }
        }
    }

    /// Bind the arguments' sizes into `ws.slots`; on a refusal, the
    /// interpreter's error.
    fn bind<V: AsOperand>(&self, args: &[V], ws: &mut call::Workspace) -> Result<()> {
        // (the remembered call's sizes are about to go)
        ws.valid = false;
        ws.slots.clear();
        ws.slots.resize(self.sig.names.len(), call::UNBOUND);
        if self.sig.bind(args, &mut ws.slots) {
            if crate::interp::gather::has_int_params(&self.func) {
                // integer arrays: every element an integer on the axes it
                // gathers from (the interpreter's check and words)
                let sizes = interp::value::bind_operands(&self.func, args)?;
                interp::gather::check(
                    &self.func,
                    args,
                    &sizes,
                    self.opts.precision,
                    self.opts.precision,
                )?;
            }
            return Ok(());
        }
        // refused (or a case the fast check does not know): the
        // interpreter's check decides and words the error
        let sizes = interp::value::bind_operands(&self.func, args)?;
        interp::gather::check(
            &self.func,
            args,
            &sizes,
            self.opts.precision,
            self.opts.precision,
        )?;
        for (slot, name) in ws.slots.iter_mut().zip(&self.sig.names) {
            *slot = sizes.get(name).copied().unwrap_or(call::UNBOUND);
        }
        Ok(())
    }

    fn sizes_map(&self, ws: &call::Workspace) -> interp::Sizes {
        self.sig
            .names
            .iter()
            .zip(&ws.slots)
            .filter(|(_, v)| **v != call::UNBOUND)
            .map(|(n, v)| (n.clone(), *v))
            .collect()
    }

    /// The format the kernel computes in ([`Options::precision`]).
    pub fn precision(&self) -> crate::precision::Precision {
        self.opts.precision
    }

    /// Refuse a call whose element type is not the kernel's.
    fn expect(&self, p: crate::precision::Precision) -> Result<()> {
        let have = self.opts.precision;
        if have == p {
            return Ok(());
        }
        let how = match have {
            crate::precision::Precision::F32 => "pass f32 arrays and numbers to `Kernel::call_f32`",
            crate::precision::Precision::F64 => "pass f64 arrays (`call`, `eval`), or compile it with `Options { precision: Precision::F32, .. }` (or `I64`, `I32`)",
            crate::precision::Precision::I64 => "pass i64 arrays and numbers to `Kernel::call_int`",
            crate::precision::Precision::I32 => "pass i32 arrays and numbers to `Kernel::call_int`",
        };
        Err(Error::Call(format!(
            "`{}` is compiled for {have} and was called with {p} values: {how}",
            self.func.name
        )))
    }

    /// Run a kernel compiled in [`crate::precision::Precision::F32`] on `f32`
    /// numbers and array views of any layout (read in place), allocating
    /// the `f32` result. Checked as [`Kernel::call`] checks its arguments;
    /// a kernel compiled for `F64` refuses the call (and an `F32` kernel
    /// refuses the `f64` calls).
    ///
    /// ```
    /// use einsat::ndarray::array;
    /// use einsat::{Arg32, Precision, Value32};
    /// let f = einsat::load("fn dot(x: [n]R, y: [n]R) -> R = sum(i:n) x[i] * y[i]")?;
    /// let opts = einsat::jit::Options { precision: Precision::F32, ..Default::default() };
    /// let k = einsat::jit::compile_with(f.get("dot").unwrap(), &opts)?;
    /// let (x, y) = (array![1.0f32, 2.0], array![3.0f32, 4.0]);
    /// let r = k.call_f32(&[Arg32::from(&x), Arg32::from(&y)])?;
    /// assert_eq!(r, Value32::Real(11.0));
    /// assert!(k.eval::<f64>((&array![1.0, 2.0], &array![3.0, 4.0])).is_err());
    /// # Ok::<(), einsat::Error>(())
    /// ```
    pub fn call_f32(&self, args: &[crate::jit::Arg32<'_>]) -> Result<crate::jit::Value32> {
        use crate::jit::run::boundary::arg::Op32;
        self.expect(crate::precision::Precision::F32)?;
        let ops: Vec<Op32<'_>> = args.iter().map(Op32::of).collect();
        let sizes = interp::value::bind_operands(&self.func, &ops)?;
        if let (true, Boundary::Array(d)) = (self.whole, &self.result) {
            // every call writes every element ([`writes_whole_result`]):
            // not zeroed, an array only once the call returned `Ok`
            let shape = d
                .iter()
                .map(|n| interp::value::resolve(n, &sizes))
                .collect::<Result<Vec<usize>>>()?;
            let mut out = crate::jit::run::boundary::arg::Fresh32::new(&shape)?;
            self.call_into_generic(&ops, &mut out)?;
            // SAFETY: the call returned `Ok`, and it writes every element
            // of its result (`self.whole`).
            return Ok(crate::jit::Value32::Array(unsafe { out.assume_init() }));
        }
        let mut out = alloc32(&self.result, &sizes)?;
        self.call_into_generic(&ops, &mut out)?;
        Ok(out.into_value())
    }

    /// Run a kernel compiled in an integer format
    /// ([`crate::precision::Precision::I64`] for `T = i64`, `I32` for
    /// `i32`) on integer numbers and array views of any layout (read in
    /// place), allocating the integer result: exact, `+ - *` and sums
    /// wrapping in the width as numpy's integer arrays do. Checked as
    /// [`Kernel::call`] checks its arguments; a kernel compiled in another
    /// format refuses the call.
    ///
    /// ```
    /// use einsat::ndarray::array;
    /// use einsat::{IntArg, IntValue, Precision};
    /// let f = einsat::load("fn dot(x: [n]R, y: [n]R) -> R = sum(i:n) x[i] * y[i]")?;
    /// let opts = einsat::jit::Options { precision: Precision::I64, ..Default::default() };
    /// let k = einsat::jit::compile_with(f.get("dot").unwrap(), &opts)?;
    /// let (x, y) = (array![1i64 << 40, 3], array![1i64 << 20, 4]);
    /// let r = k.call_int(&[IntArg::from(&x), IntArg::from(&y)])?;
    /// assert_eq!(r, IntValue::Int((1i64 << 60) + 12));
    /// assert!(k.call_int(&[IntArg::<i32>::Int(1), IntArg::Int(2)]).is_err());
    /// # Ok::<(), einsat::Error>(())
    /// ```
    pub fn call_int<T: crate::precision::IntElem>(
        &self,
        args: &[crate::jit::IntArg<'_, T>],
    ) -> Result<crate::interp::IntValue<T>> {
        use crate::jit::run::boundary::arg::Op32;
        self.expect(T::PRECISION)?;
        let ops: Vec<Op32<'_>> = args.iter().map(Op32::of_int).collect();
        let sizes = interp::value::bind_operands(&self.func, &ops)?;
        let mut out = alloc_int::<T>(&self.result, &sizes)?;
        self.call_into_generic(&ops, &mut out)?;
        Ok(out.into_value())
    }

    /// Run on `args`, allocating the result.
    pub fn call(&self, args: &[Value]) -> Result<Value> {
        self.expect(crate::precision::Precision::F64)?;
        self.call_alloc(args)
    }

    /// Run on `args`, writing the result into `out`, which must have exactly
    /// the result's shape (a pair of buffers for a tuple result; any
    /// strides). Allocates nothing once the kernel has been called with
    /// these sizes (see the module doc).
    pub fn call_into(&self, args: &[Value], out: &mut Value) -> Result<()> {
        self.expect(crate::precision::Precision::F64)?;
        self.call_into_generic(args, out)
    }

    /// Run on borrowed arguments, allocating the result: every array is an
    /// `ndarray` view of any layout (C, Fortran, transposed, sliced with
    /// steps, negative strides), read in place without a copy. Checked as
    /// [`Kernel::call`] checks `Value`s (arity, rank, shapes, size names).
    pub fn call_args(&self, args: &[Arg<'_>]) -> Result<Value> {
        self.expect(crate::precision::Precision::F64)?;
        self.call_alloc(args)
    }

    fn call_alloc<V: AsOperand>(&self, args: &[V]) -> Result<Value> {
        if self.sig.number_result() {
            // nothing to allocate: the number goes where `call_into` puts it
            let mut out = Value::Real(0.0);
            self.call_into_generic(args, &mut out)?;
            return Ok(out);
        }
        let mut ws = self.workspace();
        let r = self.alloc_with(args, &mut ws);
        self.give_back(ws);
        r
    }

    fn alloc_with<V: AsOperand>(&self, args: &[V], ws: &mut call::Workspace) -> Result<Value> {
        if self.whole {
            return self.fresh_with(args, ws);
        }
        // the arguments of the remembered call: the same sizes
        if let Some((at, leaf)) = self.same_args(args, ws) {
            let mut out = self.sig.alloc_result(&ws.slots)?;
            if self.same_out(&mut out, ws, at, leaf) {
                self.exec(ws)?;
            } else {
                let gathered = self.gather_args(args, ws) && self.gather_out(&mut out, ws);
                self.run(args, &mut out, ws, gathered)?;
            }
            return Ok(out);
        }
        let gathered = self.gather_args(args, ws);
        self.bind(args, ws)?;
        let mut out = self.sig.alloc_result(&ws.slots)?;
        let gathered = gathered && self.gather_out(&mut out, ws);
        self.run(args, &mut out, ws, gathered)?;
        Ok(out)
    }

    /// [`Kernel::alloc_with`] for a kernel that writes its whole result
    /// ([`writes_whole_result`]): the result allocated without zeroing,
    /// an array only once the call has returned `Ok` (on an error it is
    /// dropped unread).
    fn fresh_with<V: AsOperand>(&self, args: &[V], ws: &mut call::Workspace) -> Result<Value> {
        let fresh = |slots: &[usize]| {
            self.sig
                .fresh_result(slots)?
                .ok_or_else(|| jit_err("internal: a whole result that is not one array"))
        };
        let out = if let Some((at, leaf)) = self.same_args(args, ws) {
            let mut out = fresh(&ws.slots)?;
            if self.same_out(&mut out, ws, at, leaf) {
                self.exec(ws)?;
            } else {
                let gathered = self.gather_args(args, ws) && self.gather_out(&mut out, ws);
                self.run(args, &mut out, ws, gathered)?;
            }
            out
        } else {
            let gathered = self.gather_args(args, ws);
            self.bind(args, ws)?;
            let mut out = fresh(&ws.slots)?;
            let gathered = gathered && self.gather_out(&mut out, ws);
            self.run(args, &mut out, ws, gathered)?;
            out
        };
        // SAFETY: the call returned `Ok`, and it writes every element of
        // its result (`self.whole`).
        let a = unsafe { out.assume_init() };
        Ok(Value::Array(a))
    }

    /// Run on borrowed arguments, writing the result into the caller's
    /// buffers `out` (views of any layout whose elements do not overlap;
    /// a pair of buffers for a tuple result). A number result goes into a
    /// 0-dimensional view; any other buffer for it is an error. Allocates
    /// nothing once the kernel has been called with these sizes.
    ///
    /// `out` must not share memory with an argument (safe Rust cannot
    /// build such views; the result would be unspecified).
    pub fn call_args_into(&self, args: &[Arg<'_>], out: &mut ArgMut<'_>) -> Result<()> {
        self.expect(crate::precision::Precision::F64)?;
        self.call_into_generic(args, out)
    }

    /// Run on `ndarray` arrays and views, read in place, and return a
    /// typed result:
    ///
    /// ```
    /// use einsat::ndarray::{array, Array1};
    /// let p = einsat::load("fn mv(A: [n,m]R, x: [m]R) -> [n]R = gen(i:n) sum(j:m) A[i,j] * x[j]")?;
    /// let k = einsat::jit::compile(p.get("mv").unwrap())?;
    /// let a = array![[1.0, 2.0], [3.0, 4.0]];
    /// let y: Array1<f64> = k.eval((a.t(), &array![1.0, 1.0]))?; // Aᵀ·1, no copy
    /// assert_eq!(y, array![4.0, 6.0]);
    /// # Ok::<(), einsat::Error>(())
    /// ```
    ///
    /// Arguments are a tuple of [`IntoArg`](crate::jit::IntoArg)s: `&` any array or view of
    /// `f64` (any dimension and layout), `ArrayView`s, `f64`s, 2-tuples
    /// for pair parameters. The result is any [`FromValue`]: `f64`,
    /// `Array<f64, D>` (`Array2<f64>`, …), 2-tuples of these, or
    /// [`Value`]. Errors as [`Kernel::call`], plus [`Error::Result`] when
    /// the requested type is not the function's result.
    pub fn eval<'a, R: FromValue>(&self, args: impl IntoArgs<'a>) -> Result<R> {
        self.expect(crate::precision::Precision::F64)?;
        if self.sig.number_result() {
            // nothing to allocate: the number goes where `call_into` puts it
            let mut x = Value::Real(0.0);
            args.with_arg_refs(
                &mut x,
                |x, a| self.call_into_generic(a, x),
                |x, a| self.call_into_generic(a, x),
            )?;
            return match x {
                Value::Real(x) => R::from_real(x),
                v => R::from_value(v),
            };
        }
        args.with_arg_refs((), |(), a| self.call_alloc(a), |(), a| self.call_alloc(a))
            .and_then(R::from_value)
    }

    /// Run on `ndarray` arrays and views, writing the result into `out`:
    /// `&mut` an array or a mutable view of any layout (a 0-dimensional
    /// one for a number result), or a 2-tuple of these for a tuple result.
    /// Allocates nothing once warmed up (unless a pair is passed: its
    /// [`Arg::Pair`] boxes).
    pub fn eval_into<'a, 'b>(
        &self,
        args: impl IntoArgs<'a>,
        out: impl IntoArgMut<'b>,
    ) -> Result<()> {
        self.expect(crate::precision::Precision::F64)?;
        out.with_arg_mut_ref(|mut out| {
            args.with_arg_refs(
                &mut out,
                |out, a| self.call_into_generic(a, out),
                |out, a| self.call_into_generic(a, out),
            )
        })
    }

    fn call_into_generic<V: AsOperand, O: AsOperandMut>(
        &self,
        args: &[V],
        out: &mut O,
    ) -> Result<()> {
        let mut ws = self.workspace();
        let r = if self.same_call(args, out, &mut ws) {
            if let Some(r) = self.exec_one(&mut ws) {
                self.give_back(ws);
                return r;
            }
            self.exec_steps(&mut ws)
        } else {
            self.full_into(args, out, &mut ws)
        };
        self.give_back(ws);
        r
    }

    /// [`Kernel::call_into_generic`] when the call is not the remembered
    /// one: every check, then set up, run and remember.
    #[inline(never)]
    fn full_into<V: AsOperand, O: AsOperandMut>(
        &self,
        args: &[V],
        out: &mut O,
        ws: &mut call::Workspace,
    ) -> Result<()> {
        let gathered = self.gather_args(args, ws) && self.gather_out(out, ws);
        self.bind(args, ws)?;
        if !self.sig.fits_out(out, &ws.slots) {
            check_out(&self.result, out, &self.sizes_map(ws), "buffer")?;
        }
        self.run(args, out, ws, gathered)
    }

    /// Whether `args` and `out` are those of the call `ws` remembers
    /// (every leaf's kind, shape and strides, compared in place); if so,
    /// their pointers are in `ws.ptrs`, every check the remembered call
    /// passed holds for this call, and its set-up (sizes, strides,
    /// temporaries, native code, plan) is this call's. One walk of the
    /// key, not [`Kernel::same_args`] then [`Kernel::same_out`]: that costs
    /// about 50 instructions more per call (callgrind, dot3 `call_into`
    /// 405 against 457).
    #[inline]
    fn same_call<V: AsOperand, O: AsOperandMut>(
        &self,
        args: &[V],
        out: &mut O,
        ws: &mut call::Workspace,
    ) -> bool {
        let Some(leaf_buf) = self.leaf_buf.as_deref() else {
            return false;
        };
        // integer arrays are checked at every call, not remembered (a
        // call of the same shapes may hold other indices)
        if !ws.valid || crate::interp::gather::has_int_params(&self.func) {
            return false;
        }
        self.sig
            .match_call(args, out, &ws.key, ws.key_args, leaf_buf, &mut ws.ptrs)
    }

    /// Whether `args` are those of the call `ws` remembers (every leaf's
    /// kind, shape and strides, compared in place); if so, their pointers
    /// are in `ws.ptrs` and the answer is where the output's leaves start
    /// in the key and in the leaves ([`Kernel::same_out`]).
    #[inline]
    fn same_args<V: AsOperand>(
        &self,
        args: &[V],
        ws: &mut call::Workspace,
    ) -> Option<(usize, usize)> {
        let leaf_buf = self.leaf_buf.as_deref()?;
        // integer arrays are checked at every call, not remembered
        if !ws.valid || crate::interp::gather::has_int_params(&self.func) {
            return None;
        }
        let mut m = call::Matcher::new(&ws.key, 0, 0, leaf_buf, &mut ws.ptrs);
        (self.sig.match_args(args, &mut m) && m.at() == ws.key_args).then(|| m.pos())
    }

    /// Then whether `out` is the output of the remembered call (its
    /// pointers then in `ws.ptrs`): if so, every check the remembered call
    /// passed holds for this call, and its set-up (sizes, strides,
    /// temporaries, native code, plan) is this call's.
    #[inline]
    fn same_out<O: AsOperandMut>(
        &self,
        out: &mut O,
        ws: &mut call::Workspace,
        at: usize,
        leaf: usize,
    ) -> bool {
        let Some(leaf_buf) = self.leaf_buf.as_deref() else {
            return false;
        };
        let mut m = call::Matcher::new(&ws.key, at, leaf, leaf_buf, &mut ws.ptrs);
        self.sig.match_out(out, &mut m) && m.done()
    }

    /// Gather the arguments' leaves into `ws.probe` (see
    /// [`call::Sig::gather_args`]); false when the call cannot be
    /// remembered.
    fn gather_args<V: AsOperand>(&self, args: &[V], ws: &mut call::Workspace) -> bool {
        ws.probe.clear();
        let ok = self.leaf_buf.is_some() && self.sig.gather_args(args, &mut ws.probe);
        ws.probe_args = ws.probe.len();
        ok
    }

    /// Then the output's leaves.
    fn gather_out<O: AsOperandMut>(&self, out: &mut O, ws: &mut call::Workspace) -> bool {
        self.sig.gather_out(out, &mut ws.probe)
    }

    /// The full path: set the call up ([`Kernel::setup`]) and run it;
    /// remembered in `ws` when it succeeds and `gathered` (its key is in
    /// `ws.probe`).
    fn run<V: AsOperand, O: AsOperandMut>(
        &self,
        args: &[V],
        out: &mut O,
        ws: &mut call::Workspace,
        gathered: bool,
    ) -> Result<()> {
        ws.valid = false;
        self.setup(args, out, ws)?;
        self.exec(ws)?;
        if gathered {
            ws.key_args = ws.probe_args;
            ws.key.clone_from(&ws.probe);
            ws.valid = true;
        }
        Ok(())
    }

    /// Bind the buffers of a checked call into `ws`: sizes, pointers,
    /// strides, the layout and its native code, and the step of each nest.
    fn setup<V: AsOperand, O: AsOperandMut>(
        &self,
        args: &[V],
        out: &mut O,
        ws: &mut call::Workspace,
    ) -> Result<()> {
        self.bind_sizes(ws)?;
        self.place_temps(ws)?;
        self.bind_buffers(args, out, ws)?;
        // (temporaries are C order: their last stride is 1)
        let native = match pack(&ws.unit).and_then(|key| self.fast_native(key)) {
            Some(n) => n.clone(),
            None => self.native(&ws.unit)?,
        };
        // per nest, decided once per sizes and layout: GEMM, threads
        ws.plan.clear();
        for (k, nest) in self.prog.nests.iter().enumerate() {
            let skip = native.skip.get(k).copied().unwrap_or(false);
            ws.plan.push(schedule::step(
                nest,
                self.gemm[k].as_ref(),
                skip,
                &ws.svals,
                self.threads,
                &self.opts,
            ));
        }
        let elem = if self.opts.precision == crate::precision::Precision::F32 {
            4
        } else {
            8
        };
        ws.blocks.clear();
        for bufs in &self.group_bufs {
            ws.blocks.push(rows::block_rows(
                &self.prog,
                bufs,
                &ws.svals,
                elem,
                self.opts.row_block_bytes,
            ));
        }
        // a nest whose code was left out runs natively at these sizes:
        // the layout's complete code
        let wanted = |(e, s): (&Option<Entry>, &schedule::Step)| e.is_none() && !s.gemm && !s.skip;
        let native = if native.entries.iter().zip(&ws.plan).any(wanted) {
            self.complete(&native)?
        } else {
            native
        };
        ws.native = Some(native);
        ws.mode = self.mode(ws);
        Ok(())
    }

    /// The named sizes native code receives (`ws.svals`), from the bound
    /// slots, then the slot of the cancellation flag's address.
    fn bind_sizes(&self, ws: &mut call::Workspace) -> Result<()> {
        let p = &self.prog;
        ws.svals.clear();
        for (k, slot) in self.sig.prog_slots.iter().enumerate() {
            match slot.map(|s| ws.slots[s]).filter(|&v| v != call::UNBOUND) {
                Some(v) => ws.svals.push(v as i64),
                None => {
                    return Err(Error::UnboundSize {
                        size: p.sizes[k].clone(),
                    })
                }
            }
        }
        // the cancellation flag's address, set per call (`Kernel::arm`)
        ws.svals.push(0);
        Ok(())
    }

    /// Storage of the temporaries: a slot per temporary
    /// ([`storage::place_temps`]), each slot's vector grown to what its
    /// occupants need.
    fn place_temps(&self, ws: &mut call::Workspace) -> Result<()> {
        let p = &self.prog;
        let call::Workspace {
            svals,
            temps,
            slot_of,
            slot_busy,
            slot_want,
            ..
        } = ws;
        let slots = storage::Slots {
            of: slot_of,
            busy: slot_busy,
            want: slot_want,
        };
        // (what each existing slot already holds)
        let have = |s: usize| temps.get(s).map_or(0, |t| t.len());
        storage::place_temps(&self.live, &p.bufs, svals, &have, slots)?;
        while temps.len() < slot_want.len() {
            temps.push(Vec::new());
        }
        for (s, &want) in slot_want.iter().enumerate() {
            let t = &mut temps[s];
            // every element of a temporary is written by its nest before
            // any later nest reads it: no need to keep or clear what it
            // held, so a larger one is a fresh buffer from the system's
            // zero pages (a huge temporary costs nothing before its nest
            // writes it, where the call can be cancelled)
            if want > t.len() {
                *t = Vec::new();
                *t = crate::mem::zeros(want, || self.temps_held(s, slot_of, svals))?;
            }
        }
        Ok(())
    }

    /// What slot `s` holds, for an out-of-memory message.
    fn temps_held(&self, s: usize, slot_of: &[usize], svals: &[i64]) -> String {
        let p = &self.prog;
        let shape =
            |b: usize| -> Vec<usize> { p.bufs[b].dims.iter().map(|d| resolve(d, svals)).collect() };
        let held: Vec<usize> = self
            .live
            .iter()
            .map(|&(b, _)| b)
            .filter(|&b| slot_of[b] == s)
            .collect();
        match held[..] {
            [b] => format!(
                "the `let` temporary `{}` (an array of shape {:?})",
                p.bufs[b].name,
                shape(b)
            ),
            _ => format!(
                "the `let` temporaries {} (sharing storage, never live at once)",
                held.iter()
                    .map(|&b| format!("`{}` (shape {:?})", p.bufs[b].name, shape(b)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// Every buffer's pointer and strides (`ws.ptrs`, `ws.strides`), and
    /// per axis whether it is unit-stride (`ws.unit`, the call's layout).
    fn bind_buffers<V: AsOperand, O: AsOperandMut>(
        &self,
        args: &[V],
        out: &mut O,
        ws: &mut call::Workspace,
    ) -> Result<()> {
        let call::Workspace {
            svals,
            ptrs,
            strides,
            unit,
            temps,
            slot_of,
            ..
        } = ws;
        ptrs.clear();
        strides.clear();
        unit.clear();
        for (b, buf) in self.prog.bufs.iter().enumerate() {
            let first = strides.len();
            let dims = || buf.dims.iter().map(|d| resolve(d, svals));
            match &buf.kind {
                BufKind::Param { param, path } => {
                    call::bind_param(&args[*param], path, buf, svals, ptrs, strides)?
                }
                BufKind::Temp => {
                    ptrs.push(temps[slot_of[b]].as_mut_ptr());
                    // C order
                    strides.extend(std::iter::repeat_n(0, buf.dims.len()));
                    let mut acc = 1i64;
                    for k in (0..buf.dims.len()).rev() {
                        strides[first + k] = acc;
                        acc *= resolve(&buf.dims[k], svals).max(1) as i64;
                    }
                }
                BufKind::Out { path } => call::bind_out(out, path, buf, svals, ptrs, strides)?,
            }
            // per axis: unit stride (an axis of at most one element is
            // only ever read at 0, so any stride is as good as 1)
            unit.extend(
                strides[first..]
                    .iter()
                    .zip(dims())
                    .map(|(s, d)| *s == 1 || d <= 1),
            );
        }
        Ok(())
    }

    /// How a call set up in `ws` runs its nests: with no GEMM stage and
    /// nothing split across threads, one native call (a chain calls the
    /// nests `native.skip` does not mark).
    fn mode(&self, ws: &call::Workspace) -> call::Mode {
        let Some(native) = ws.native.as_deref() else {
            return call::Mode::Steps;
        };
        if !self.groups.is_empty()
            || ws
                .plan
                .iter()
                .any(|s| s.gemm || s.parallel || s.rows < s.n0)
        {
            return call::Mode::Steps;
        }
        match (&native.entries[..], &ws.plan[..], native.chain) {
            ([Some(entry)], [step], _) if !step.skip => call::Mode::One(*entry, step.n0 as i64),
            // (the chain leaves out the nests this layout skips)
            (_, _, Some(chain)) => call::Mode::Chain(chain),
            _ => call::Mode::Steps,
        }
    }

    /// Point the call's flag slot (after the sizes) at this thread's
    /// cancellation flag.
    #[inline(always)]
    fn arm(ws: &mut call::Workspace) -> &'static AtomicBool {
        let flag = current_flag();
        if let Some(slot) = ws.svals.last_mut() {
            *slot = flag as *const AtomicBool as i64;
        }
        flag
    }

    /// [`Kernel::exec`] when it is one native call (then its result), or
    /// nothing (`None`).
    #[inline(always)]
    fn exec_one(&self, ws: &mut call::Workspace) -> Option<Result<()>> {
        let flag = Self::arm(ws);
        let (bufs, strides, sizes) = (ws.ptrs.as_ptr(), ws.strides.as_ptr(), ws.svals.as_ptr());
        let call = || match ws.mode {
            // SAFETY: as in `exec`.
            call::Mode::One(entry, n0) => unsafe { entry(bufs, strides, sizes, 0, n0) },
            call::Mode::Chain(entry) => unsafe { entry(bufs, strides, sizes, 0, 0) },
            call::Mode::Steps => {}
        };
        match ws.mode {
            call::Mode::Steps => return None,
            _ if self.threads > 1 => crate::vmath::with_threads(self.threads, call),
            _ => call(),
        }
        Some(stopped(flag))
    }

    /// Run the nests of the call set up in `ws`.
    #[inline]
    fn exec(&self, ws: &mut call::Workspace) -> Result<()> {
        let flag = Self::arm(ws);
        let (bufs, strides, sizes) = (ws.ptrs.as_ptr(), ws.strides.as_ptr(), ws.svals.as_ptr());
        let call = || match ws.mode {
            // SAFETY: as in `exec_steps` (the entries are those of
            // `ws.native`, which the workspace holds; `One` covers the
            // nest's whole outermost range `0..n0`, `Chain` runs every
            // nest over its whole range, in order, on this thread; the
            // flag slot holds the address of a static or of a flag that
            // `Cancel::run` keeps alive during the call).
            call::Mode::One(entry, n0) => unsafe { entry(bufs, strides, sizes, 0, n0) },
            call::Mode::Chain(entry) => unsafe { entry(bufs, strides, sizes, 0, 0) },
            call::Mode::Steps => {}
        };
        match ws.mode {
            call::Mode::Steps => return self.exec_steps(ws),
            // (the long sums and reductions of a call on this thread may
            // use the threads: `vmath::with_threads`)
            _ if self.threads > 1 => crate::vmath::with_threads(self.threads, call),
            _ => call(),
        }
        stopped(flag)
    }

    /// Run the nests of the call set up in `ws` step by step.
    fn exec_steps(&self, ws: &mut call::Workspace) -> Result<()> {
        let flag = Self::arm(ws);
        let call::Workspace {
            svals,
            ptrs,
            strides,
            native,
            plan,
            blocks,
            ..
        } = ws;
        let mut code = native
            .clone()
            .ok_or_else(|| jit_err("internal: a call without native code"))?;
        let threads = self.threads;
        let gemm_threads = Threads {
            threads,
            split: self.opts.gemm_split,
            min_work: self.opts.gemm_split_min_work,
        };
        let raw = Raw {
            bufs: ptrs.as_ptr(),
            strides: strides.as_ptr(),
            sizes: svals.as_ptr(),
        };
        // the next nest was run by this one's stage (a complex product's
        // two parts on the complex kernel)
        let mut done = false;
        // the nests up to this one ran in a row group
        let mut ran_to = 0;
        let mut groups = self.groups.iter().zip(blocks.iter()).peekable();
        for (k, step) in plan.iter().enumerate() {
            if std::mem::take(&mut done) || step.skip || k < ran_to {
                continue;
            }
            stopped(flag)?;
            if let Some((g, &block)) = groups.next_if(|(g, _)| g.first == k) {
                // (a group has no GEMM stage, so none of its nests' code
                // is left out; if one were, the complete code, with no
                // allocation per call)
                if code.entries[g.first..=g.last].iter().any(Option::is_none) {
                    code = self.complete(&code)?;
                    *native = Some(code.clone());
                }
                let entries = &code.entries[g.first..=g.last];
                if entries.iter().any(Option::is_none) {
                    return Err(jit_err("internal: a nest without native code"));
                }
                let steps = &plan[g.first..=g.last];
                let n0 = step.n0;
                // SAFETY: as below, for each nest of the group in turn on
                // rows `at..to` within `0..n0` (every nest of a group has
                // its outermost loop over the same range); a nest of the
                // group reads, of what the group writes, only the rows
                // `at..to` that the group's earlier nests have just
                // written (`rows::row_groups`), and the temporaries the
                // group touches do not share storage (`rows::
                // extend_liveness`). Threads take disjoint rows, so they
                // write disjoint elements.
                let run = move |lo: usize, hi: usize| {
                    let r = raw;
                    let mut at = lo;
                    while at < hi && !flag.load(Ordering::Relaxed) {
                        let to = hi.min(at.saturating_add(block));
                        for e in entries.iter().flatten() {
                            unsafe { e(r.bufs, r.strides, r.sizes, at as i64, to as i64) }
                        }
                        at = to;
                    }
                };
                if n0 > 1 && steps.iter().any(|s| s.parallel) {
                    let (len, chunks) = chunking(n0, threads);
                    pool::run(threads, chunks, |c| run(c * len, ((c + 1) * len).min(n0)));
                } else {
                    // (its long sums and reductions may use the threads;
                    // a nest without loops, n0 = 1, has nothing else to split)
                    crate::vmath::with_threads(threads, || run(0, n0));
                }
                ran_to = g.last + 1;
                continue;
            }
            if step.gemm {
                if let Some(g) = &self.gemm[k] {
                    // SAFETY: as below (the library gets the same pointers
                    // and strides; the output never aliases an argument).
                    let f32 = self.opts.precision == crate::precision::Precision::F32;
                    match unsafe {
                        g.run_stage(&ptrs[..], &strides[..], &svals[..], gemm_threads, flag, f32)
                    } {
                        Ran::No => {}
                        Ran::Yes => continue,
                        Ran::Both => {
                            done = true;
                            continue;
                        }
                    }
                }
            }
            let entry = match code.entries.get(k).copied().flatten() {
                Some(entry) => entry,
                // a GEMM stage declined this call and its native code was
                // left out: the layout's complete code, from here on (the
                // nests before ran the same code, compiled once more)
                None => {
                    code = self.complete(&code)?;
                    *native = Some(code.clone());
                    code.entries
                        .get(k)
                        .copied()
                        .flatten()
                        .ok_or_else(|| jit_err("internal: a nest without native code"))?
                }
            };
            let (n0, rows) = (step.n0, step.rows.max(1));
            // SAFETY: every pointer is the first element of a live buffer
            // whose shape was checked against the buffer's declared dims,
            // with its own strides (an axis assumed unit-stride by the
            // layout has stride 1 or at most one element) — on a
            // remembered call, the key (every leaf's kind, shape and
            // strides) equals that of a call that passed the checks, and
            // the temporaries' buffers are those it sized; the generated
            // code indexes plain indices within their (equal) ranges and
            // checks every other index, and a call covers `lo..hi` within
            // `0..n0`, the outermost loop's range, so all accesses stay
            // inside the buffers. Calls on disjoint `lo..hi` write
            // disjoint elements (see `Raw`). The workspace, the arguments
            // and the output outlive the call.
            // (in pieces of `rows`, checking the flag before each)
            let run = move |lo: usize, hi: usize| {
                let r = raw;
                let mut at = lo;
                while at < hi && !flag.load(Ordering::Relaxed) {
                    let to = hi.min(at.saturating_add(rows));
                    unsafe { entry(r.bufs, r.strides, r.sizes, at as i64, to as i64) }
                    at = to;
                }
            };
            if n0 > 1 && step.parallel {
                let (len, chunks) = chunking(n0, threads);
                pool::run(threads, chunks, |c| run(c * len, ((c + 1) * len).min(n0)));
            } else {
                // (its long sums and reductions may use the threads; a
                // nest without loops, n0 = 1, has nothing else to split)
                crate::vmath::with_threads(threads, || run(0, n0));
            }
        }
        stopped(flag)
    }
}
