//! The native engine: normal-form functions compiled with Cranelift to loops
//! over strided `ndarray` buffers.
//!
//! [`compile`] type-checks, lowers to the loop IR ([`loopir`]) and generates
//! machine code ([`codegen`]). [`Kernel::call`] allocates the result,
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
//! once).
//!
//! **Threads.** The nests run in order (a temporary is written before it is
//! read). A nest whose estimated work — trip counts times body size, see
//! [`nest_work`] — is at least [`Options::parallel_threshold`] (default
//! [`PARALLEL_THRESHOLD`], measured on a 2-core Zen 3: below it, handing
//! chunks to a worker costs more than it saves) has the range `0..n0` of
//! its outermost `gen` variable split into contiguous chunks, each run by
//! the native entry on a thread of [`pool`] (`entry(bufs, strides, sizes,
//! lo, hi)` computes exactly the elements with `v0` in `lo..hi`).
//! Reductions are never split, so results are bit-identical for every
//! thread count. Nests without a `gen` variable run on the calling thread;
//! GEMM stages get the thread count.
//!
//! **Cache.** [`compile`] and [`compile_with`] keep kernels in a global
//! least-recently-used cache of at most [`CACHE_CAPACITY`] kernels, keyed
//! by the program text and the options (`{options:?}`, a newline, and the
//! function as [`crate::syntax::print_function`] prints it). An evicted
//! kernel stays alive for as long as a caller holds its `Arc`;
//! [`cache_len`] and [`clear_cache`] inspect and empty the cache.

// The stages below are unstable internals, public only for the crate's
// tests, benches and examples (hidden from the docs).
#[doc(hidden)]
pub mod call;
#[doc(hidden)]
pub mod codegen;
#[doc(hidden)]
pub mod dense;
#[doc(hidden)]
pub mod gemm;
#[doc(hidden)]
pub mod loopir;
#[doc(hidden)]
pub mod pool;
#[doc(hidden)]
pub mod schedule;

use crate::error::{Error, Result};
use crate::interp::value::checked_elements;
use crate::interp::{self, Boundary, Value};
use crate::syntax::ast::{Function, Size};
use crate::syntax::print_function;
use crate::types;
use loopir::{BufKind, LoopProgram, Nest, SizeRef, S};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Options of the native engine (part of the compile cache's key).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Options {
    /// Run matrix products on the GEMM library (else generated loops do
    /// all the work).
    pub gemm: bool,
    /// Threads a call may use (0: all cores).
    pub threads: usize,
    /// The estimated work ([`nest_work`]) from which a nest is split across
    /// threads (default [`PARALLEL_THRESHOLD`]; 0 splits every nest with a
    /// `gen` variable, as the differential tests do).
    pub parallel_threshold: u64,
}

/// The default [`Options::parallel_threshold`]: a nest with less estimated
/// work ([`nest_work`]) runs on one thread. Measured with `einsat bench
/// --threads 1` against `--threads 2` (see README, Performance).
pub const PARALLEL_THRESHOLD: u64 = 1 << 17;

impl Default for Options {
    fn default() -> Self {
        Options {
            gemm: true,
            threads: 0,
            parallel_threshold: PARALLEL_THRESHOLD,
        }
    }
}

impl Options {
    /// The number of threads a call uses: `threads`, or all cores for 0.
    pub fn thread_count(&self) -> usize {
        if self.threads == 0 {
            pool::all_cores()
        } else {
            self.threads.min(pool::MAX_THREADS)
        }
    }
}

/// How many layouts a kernel keeps specialised native code for; calls with
/// further layouts run the generic code (every stride read at run time).
pub const MAX_LAYOUTS: usize = 8;

/// Native code per layout: the layout, the layout flattened, the code.
type Natives = Vec<(loopir::Layout, Vec<bool>, Arc<codegen::Native>)>;

/// A compiled function.
///
/// Native code is specialised for the layout of the buffers it is called
/// with ([`loopir::Layout`]: which axes have unit stride). [`compile`]
/// generates the code for C-order arguments; a call with another layout
/// compiles (once) code for that layout, up to [`MAX_LAYOUTS`] of them, and
/// then falls back to the generic code.
pub struct Kernel {
    func: Function,
    prog: LoopProgram,
    /// Native code per layout (with the layout flattened, buffers then
    /// axes); the first is C order.
    natives: Mutex<Natives>,
    /// The generic layout, flattened.
    generic: Vec<bool>,
    /// Per nest: the GEMM stage that runs it instead of native code.
    gemm: Vec<Option<gemm::Plan>>,
    opts: Options,
    result: Boundary,
    sig: call::Sig,
    /// Workspaces of calls not running (see [`call::Workspace`]).
    spare: Mutex<Vec<call::Workspace>>,
}

/// How many idle workspaces a kernel keeps (more concurrent calls create
/// and drop their own).
const MAX_SPARE: usize = 8;

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Kernel({})", self.func.name)
    }
}

/// How many kernels the global cache keeps (the least recently used goes
/// first).
pub const CACHE_CAPACITY: usize = 256;

#[derive(Default)]
struct Cache {
    map: HashMap<String, (Arc<Kernel>, u64)>,
    clock: u64,
}

impl Cache {
    fn get(&mut self, key: &str) -> Option<Arc<Kernel>> {
        self.clock += 1;
        let now = self.clock;
        self.map.get_mut(key).map(|(k, used)| {
            *used = now;
            k.clone()
        })
    }

    fn insert(&mut self, key: String, k: Arc<Kernel>) -> Arc<Kernel> {
        if let Some(have) = self.get(&key) {
            return have;
        }
        while self.map.len() >= CACHE_CAPACITY {
            let oldest = self
                .map
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(key, _)| key.clone());
            match oldest {
                Some(o) => self.map.remove(&o),
                None => break,
            };
        }
        self.map.insert(key, (k.clone(), self.clock));
        k
    }
}

fn cache() -> Result<std::sync::MutexGuard<'static, Cache>> {
    static C: OnceLock<Mutex<Cache>> = OnceLock::new();
    C.get_or_init(|| Mutex::new(Cache::default()))
        .lock()
        .map_err(|_| jit_err("cache poisoned"))
}

/// The number of kernels in the global cache (at most
/// [`CACHE_CAPACITY`]).
pub fn cache_len() -> usize {
    cache().map(|c| c.map.len()).unwrap_or(0)
}

/// Empty the global cache (kernels held by callers stay alive).
pub fn clear_cache() {
    if let Ok(mut c) = cache() {
        c.map.clear();
    }
}

/// Compile a function in normal form (cached: the same function with the
/// same options compiles once while it stays in the cache).
pub fn compile(f: &Function) -> Result<Arc<Kernel>> {
    compile_with(f, &Options::default())
}

/// Compile with options (cached by program text and options).
pub fn compile_with(f: &Function, opts: &Options) -> Result<Arc<Kernel>> {
    let key = format!("{opts:?}\n{}", print_function(f));
    if let Some(k) = cache()?.get(&key) {
        return Ok(k);
    }
    let k = Arc::new(compile_uncached_with(f, opts)?);
    Ok(cache()?.insert(key, k))
}

fn jit_err(m: impl Into<String>) -> Error {
    Error::Jit(m.into())
}

/// Compile without the cache.
pub fn compile_uncached(f: &Function) -> Result<Kernel> {
    compile_uncached_with(f, &Options::default())
}

/// Compile with options, without the cache.
pub fn compile_uncached_with(f: &Function, opts: &Options) -> Result<Kernel> {
    // deep programs (long flat chains) get a large stack for lowering
    crate::stack::roomy_for(&f.body, || compile_here(f, opts))
}

fn compile_here(f: &Function, opts: &Options) -> Result<Kernel> {
    let sig = types::check(f).map_err(Error::Type)?;
    let prog = loopir::lower(f).map_err(|m| jit_err(format!("`{}`: {m}", f.name)))?;
    let layout = loopir::Layout::c_order(&prog);
    let native = codegen::compile(&prog, &layout).map_err(jit_err)?;
    let gemm = prog
        .nests
        .iter()
        .map(|n| {
            if opts.gemm {
                gemm::plan(&prog, n)
            } else {
                None
            }
        })
        .collect();
    let result = Boundary::of(&sig.ret);
    let flat = layout.unit.concat();
    Ok(Kernel {
        gemm,
        func: f.clone(),
        sig: call::Sig::new(f, &result, &prog),
        generic: loopir::Layout::generic(&prog).unit.concat(),
        natives: Mutex::new(vec![(layout, flat, Arc::new(native))]),
        prog,
        opts: opts.clone(),
        result,
        spare: Mutex::new(Vec::new()),
    })
}

fn resolve(s: &SizeRef, sizes: &[i64]) -> usize {
    match s {
        SizeRef::Lit(n) => *n as usize,
        SizeRef::Named(k) => sizes[*k] as usize,
    }
}

fn leaf<'v>(v: &'v Value, path: &[u8]) -> Option<&'v Value> {
    match (path.first(), v) {
        (None, v) => Some(v),
        (Some(k), Value::Pair(a, b)) => leaf(if *k == 0 { a } else { b }, &path[1..]),
        _ => None,
    }
}

fn leaf_mut<'v>(v: &'v mut Value, path: &[u8]) -> Option<&'v mut Value> {
    match (path.first(), v) {
        (None, v) => Some(v),
        (Some(k), Value::Pair(a, b)) => leaf_mut(if *k == 0 { a } else { b }, &path[1..]),
        _ => None,
    }
}

fn size_of(s: &Size, sizes: &interp::Sizes) -> Result<usize> {
    match s {
        Size::Lit(n) => Ok(*n),
        Size::Named(x) => sizes
            .get(x)
            .copied()
            .ok_or_else(|| jit_err(format!("size `{x}` is not fixed by the arguments"))),
    }
}

fn check_out(b: &Boundary, v: &Value, sizes: &interp::Sizes, what: &str) -> Result<()> {
    match (b, v) {
        (Boundary::Pair(a, c), Value::Pair(x, y)) => {
            check_out(a, x, sizes, &format!("{what}.0"))?;
            check_out(c, y, sizes, &format!("{what}.1"))
        }
        (Boundary::Array(d), Value::Real(_)) if d.is_empty() => Ok(()),
        (Boundary::Array(d), Value::Array(a)) => {
            let want = d
                .iter()
                .map(|s| size_of(s, sizes))
                .collect::<Result<Vec<_>>>()?;
            if a.shape() != want.as_slice() {
                return Err(Error::Call(format!(
                    "the output {what} has shape {:?}, but the result has shape {want:?}",
                    a.shape()
                )));
            }
            // (an empty array has no elements to overlap)
            if !a.is_empty()
                && a.shape()
                    .iter()
                    .zip(a.strides())
                    .any(|(n, s)| *n > 1 && *s == 0)
            {
                return Err(Error::Call(format!(
                    "the output {what} has overlapping elements (a zero stride)"
                )));
            }
            Ok(())
        }
        (Boundary::Pair(..), _) => Err(Error::Call(format!(
            "the output {what} must be a pair (the result is a tuple)"
        ))),
        (Boundary::Array(_), _) => Err(Error::Call(format!(
            "the output {what} must be an array, not {}",
            match v {
                Value::Pair(..) => "a pair",
                Value::Real(_) => "a number",
                Value::Array(_) => "an array",
            }
        ))),
    }
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

fn expr_work(e: &S, sizes: &[i64]) -> u64 {
    match e {
        S::Num(_) | S::Bracket(_) | S::Eps(_) | S::Load(..) => 1,
        S::Bin(_, a, b) => 1 + expr_work(a, sizes).saturating_add(expr_work(b, sizes)),
        S::Neg(a) => 1 + expr_work(a, sizes),
        S::Call(_, args) => args
            .iter()
            .fold(20u64, |acc, a| acc.saturating_add(expr_work(a, sizes))),
        S::Sum(_, n, b) => (resolve(n, sizes) as u64).saturating_mul(expr_work(b, sizes) + 1),
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
    pub fn loop_program(&self) -> &LoopProgram {
        &self.prog
    }

    /// The options the kernel was compiled with.
    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// Native code for the flattened layout `unit` (compiled on first use).
    fn native(&self, unit: &[bool]) -> Result<Arc<codegen::Native>> {
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
        let layout = loopir::Layout {
            unit: self
                .prog
                .bufs
                .iter()
                .map(|b| it.by_ref().take(b.dims.len()).copied().collect())
                .collect(),
        };
        let n = Arc::new(codegen::compile(&self.prog, &layout).map_err(jit_err)?);
        natives.push((layout, flat, n.clone()));
        Ok(n)
    }

    /// Per nest, in execution order: how it runs — `gemm M×N×K` (with
    /// `batch B` for batched products) for a GEMM stage, `native` for
    /// generated code. A GEMM stage may still run natively on a call where
    /// it degenerates (see [`gemm`]).
    pub fn stages(&self) -> Vec<String> {
        self.gemm
            .iter()
            .map(|g| {
                g.as_ref()
                    .map_or("native".to_string(), |g| g.describe().to_string())
            })
            .collect()
    }

    /// How many layouts native code has been generated for.
    pub fn layouts_compiled(&self) -> usize {
        self.natives.lock().map(|n| n.len()).unwrap_or(0)
    }

    /// A workspace for one call: an idle one, or a new one.
    fn workspace(&self) -> call::Workspace {
        self.spare
            .lock()
            .ok()
            .and_then(|mut s| s.pop())
            .unwrap_or_default()
    }

    fn give_back(&self, ws: call::Workspace) {
        if let Ok(mut s) = self.spare.lock() {
            if s.len() < MAX_SPARE {
                s.push(ws);
            }
        }
    }

    /// Bind the arguments' sizes into `ws.slots`; on a refusal, the
    /// interpreter's error.
    fn bind(&self, args: &[Value], ws: &mut call::Workspace) -> Result<()> {
        ws.slots.clear();
        ws.slots.resize(self.sig.names.len(), call::UNBOUND);
        if self.sig.bind(args, &mut ws.slots) {
            return Ok(());
        }
        // refused (or a case the fast check does not know): the
        // interpreter's check decides and words the error
        let sizes = interp::bind(&self.func, args)?;
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

    /// Run on `args`, allocating the result.
    pub fn call(&self, args: &[Value]) -> Result<Value> {
        let mut ws = self.workspace();
        let r = self.bind(args, &mut ws).and_then(|()| {
            let mut out = self.sig.alloc_result(&ws.slots)?;
            self.run(args, &mut out, &mut ws)?;
            Ok(out)
        });
        self.give_back(ws);
        r
    }

    /// Run on `args`, writing the result into `out`, which must have exactly
    /// the result's shape (a pair of buffers for a tuple result; any
    /// strides). Allocates nothing once the kernel has been called with
    /// these sizes (see the module doc).
    pub fn call_into(&self, args: &[Value], out: &mut Value) -> Result<()> {
        let mut ws = self.workspace();
        let r = self.bind(args, &mut ws).and_then(|()| {
            if !self.sig.fits_out(out, &ws.slots) {
                check_out(&self.result, out, &self.sizes_map(&ws), "buffer")?;
            }
            self.run(args, out, &mut ws)
        });
        self.give_back(ws);
        r
    }

    fn run(&self, args: &[Value], out: &mut Value, ws: &mut call::Workspace) -> Result<()> {
        let p = &self.prog;
        ws.svals.clear();
        for (k, slot) in self.sig.prog_slots.iter().enumerate() {
            match slot.map(|s| ws.slots[s]).filter(|&v| v != call::UNBOUND) {
                Some(v) => ws.svals.push(v as i64),
                None => {
                    return Err(jit_err(format!(
                        "size `{}` is not fixed by the arguments",
                        p.sizes[k]
                    )))
                }
            }
        }
        let call::Workspace {
            svals,
            ptrs,
            strides,
            unit,
            temps,
            ..
        } = ws;
        ptrs.clear();
        strides.clear();
        unit.clear();
        let mut n_temps = 0;
        for buf in &p.bufs {
            let first = strides.len();
            let dims = || buf.dims.iter().map(|d| resolve(d, svals));
            let shape_is = |s: &[usize]| s.len() == buf.dims.len() && dims().eq(s.iter().copied());
            match &buf.kind {
                BufKind::Param { param, path } => {
                    let v = leaf(&args[*param], path)
                        .ok_or_else(|| jit_err(format!("argument `{}` is malformed", buf.name)))?;
                    match v {
                        Value::Array(a) => {
                            if !shape_is(a.shape()) {
                                return Err(Error::Call(format!(
                                    "argument `{}` has shape {:?}, expected {:?}",
                                    buf.name,
                                    a.shape(),
                                    dims().collect::<Vec<_>>()
                                )));
                            }
                            ptrs.push(a.as_ptr() as *mut f64);
                            strides.extend(a.strides().iter().map(|&s| s as i64));
                        }
                        Value::Real(x) if buf.dims.is_empty() => {
                            ptrs.push(x as *const f64 as *mut f64)
                        }
                        _ => {
                            return Err(Error::Call(format!(
                                "argument `{}` does not match its type",
                                buf.name
                            )))
                        }
                    }
                }
                BufKind::Temp => {
                    let mut n = 1usize;
                    for d in dims() {
                        n = n.saturating_mul(d);
                    }
                    if n as u128 > interp::value::MAX_ELEMENTS {
                        checked_elements(&dims().collect::<Vec<_>>())?;
                    }
                    if temps.len() == n_temps {
                        temps.push(Vec::new());
                    }
                    let t = &mut temps[n_temps];
                    n_temps += 1;
                    // every element is written by the temporary's nest
                    // before any later nest reads it: no need to clear
                    t.resize(n.max(1), 0.0);
                    ptrs.push(t.as_mut_ptr());
                    // C order
                    strides.extend(std::iter::repeat_n(0, buf.dims.len()));
                    let mut acc = 1i64;
                    for k in (0..buf.dims.len()).rev() {
                        strides[first + k] = acc;
                        acc *= resolve(&buf.dims[k], svals).max(1) as i64;
                    }
                }
                BufKind::Out { path } => {
                    let v = leaf_mut(out, path)
                        .ok_or_else(|| jit_err("the output does not match the result"))?;
                    match v {
                        Value::Array(a) => {
                            if !shape_is(a.shape()) {
                                return Err(Error::Call(format!(
                                    "the output has shape {:?}, expected {:?}",
                                    a.shape(),
                                    dims().collect::<Vec<_>>()
                                )));
                            }
                            strides.extend(a.strides().iter().map(|&s| s as i64));
                            ptrs.push(a.as_mut_ptr());
                        }
                        Value::Real(x) if buf.dims.is_empty() => ptrs.push(x as *mut f64),
                        _ => return Err(jit_err("the output does not match the result")),
                    }
                }
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
        // (temporaries are C order: their last stride is 1)
        let native = self.native(unit)?;
        let threads = self.opts.thread_count();
        let raw = Raw {
            bufs: ptrs.as_ptr(),
            strides: strides.as_ptr(),
            sizes: svals.as_ptr(),
        };
        for (k, (nest, entry)) in p.nests.iter().zip(&native.entries).enumerate() {
            if let Some(g) = &self.gemm[k] {
                // SAFETY: as below (the library gets the same pointers and
                // strides; the output never aliases an argument).
                if unsafe { g.run(&ptrs[..], &strides[..], &svals[..], threads) } {
                    continue;
                }
            }
            let entry = *entry;
            let n0 = nest.vars.first().map_or(1, |(_, n)| resolve(n, svals));
            // SAFETY: every pointer is the first element of a live buffer
            // whose shape was checked against the buffer's declared dims,
            // with its own strides (an axis assumed unit-stride by the
            // layout has stride 1 or at most one element); the generated
            // code indexes plain indices within their (equal) ranges and
            // checks every other index, and a call covers `lo..hi` within
            // `0..n0`, the outermost loop's range, so all accesses stay
            // inside the buffers. Calls on disjoint `lo..hi` write
            // disjoint elements (see `Raw`). The workspace, `args` and
            // `out` outlive the call.
            let run = move |lo: usize, hi: usize| {
                let r = raw;
                unsafe { entry(r.bufs, r.strides, r.sizes, lo as i64, hi as i64) }
            };
            if threads > 1
                && n0 > 1
                && !nest.vars.is_empty()
                && nest_work(nest, svals) >= self.opts.parallel_threshold
            {
                let (len, chunks) = chunking(n0, threads);
                pool::run(threads, chunks, |c| run(c * len, ((c + 1) * len).min(n0)));
            } else {
                run(0, n0);
            }
        }
        Ok(())
    }
}

/// Compile (cached) and run.
pub fn run(f: &Function, args: &[Value]) -> Result<Value> {
    compile(f)?.call(args)
}
