//! Loop IR to Cranelift IR, compiled with `cranelift-jit` at
//! `opt_level=speed` for the host ISA (`cranelift_native`, so FMA/AVX are
//! used when present).
//!
//! Every nest of the loop program becomes its own native function
//! `extern "C" fn(bufs: *const *mut f64, strides: *const i64,
//! sizes: *const i64, lo: i64, hi: i64)`: the base pointer of every buffer,
//! the strides of every axis of every buffer (in elements, any sign), the
//! named sizes, and the range `lo..hi` of the nest's outermost loop (so the
//! caller can run a nest in pieces, on several threads; a nest without
//! loops ignores it). The code is specialised for a [`Layout`]: an axis the
//! layout marks unit-stride uses the constant 1 instead of the stride it is
//! passed. What a nest uses is loaded once in the entry block, so
//! it is SSA values that Cranelift keeps out of the loops; loop counters
//! and accumulators are SSA variables (registers). Plain indices are never
//! checked; affine ones are (zero padding). Strong zeros follow the
//! interpreter: a failed bracket is a zero that absorbs the other factor of
//! a product, which is then not evaluated; a `let` temporary that may hold
//! strong zeros has a flag buffer (`Buf::flag`) written with it and read
//! with it.
//!
//! Each nest is first scheduled ([`super::schedule`]: loop order, loop
//! domains, sum interchange); then, per loop (gen or sum):
//! - **loop-invariant code motion**: the largest subtrees of the body that
//!   use none of the loop's (or inner loops') variables are computed once
//!   before the loop (Cranelift hoists pure arithmetic itself, but not
//!   loads or calls across blocks);
//! - **border peeling**: a checked index with coefficient ±1 on the loop
//!   variable (other variables of enclosing loops) bounds the interior
//!   where it is in range; the loop runs as border / interior / border and
//!   the interior without those checks (at most [`MAX_COPIES`] copies of a
//!   body);
//! - **vectors**: an innermost loop whose body has no strong zeros or sums
//!   and whose moving loads walk unit-stride axes unchecked runs on `f64x2`
//!   (`fma` for multiply-add, calls other than `sqrt`/`abs` lane by lane)
//!   with a scalar tail: stores of a gen loop whose output axis is
//!   unit-stride ([`VSTORE_UNROLL`] vectors per step, then one), or a sum
//!   into [`VACCS`] vector accumulators. Every moving load and the store
//!   address a row pointer computed before the loop (at index 0; loads of
//!   one row such as `I[y,x-1]`, `I[y,x]`, `I[y,x+1]` share it and differ
//!   by an immediate offset) plus 8 × the loop index, one x86 addressing
//!   mode, so a step advances one register. Other innermost sums without
//!   strong zeros are unrolled by [`UNROLL`] with independent scalar
//!   accumulators (`fma` into each).
//! - **loops** are rotated (one test before the loop, then one at the
//!   bottom of each iteration), and a flag-free load on the left of `+` or
//!   `*` is evaluated last and swapped to the right (both are exactly
//!   commutative), so that it becomes the instruction's memory operand.
//!
//! - **short sums**: a sum of literal size up to [`UNROLL_SHORT`] without
//!   a loop domain is emitted as its terms in order, the summed index a
//!   constant in each (no loop, no accumulators to combine; Cranelift then
//!   folds `eps` and address arithmetic), within [`MAX_COPIES`] copies.
//! - **code size** (compile memory linear in the program): every copy of
//!   a body (peeling, unrolling, vector loops, short sums, tiling) is paid
//!   from the function's [`COPY_NODES`] and only bodies of at most
//!   [`COPY_BODY`] nodes are copied; a sum whose body has a loop of its own
//!   runs on one accumulator with its body emitted once (four unrolled
//!   copies and a tail per level made seven nested sums 78,125 copies of
//!   the innermost body). Cranelift's SSA builder keeps, per variable, a
//!   map over the blocks, and adds a block parameter wherever a lookup
//!   passes a merge: blocks are sealed as soon as their predecessors are
//!   known, loop indices are used as SSA values ([`Gen::var`]), not looked
//!   up from inside inner loops, and variables are pooled ([`Gen::take`]).
//!   A nest of more than [`super::MAX_NEST_NODES`] operations is refused
//!   before this stage.
//!
//! - **cancellation**: a nest with loops inside loops reads the address
//!   of the call's cancellation flag (`sizes[n]`, after the named sizes)
//!   into a stack slot in its entry block, and at the back edge of every
//!   loop whose body emitted a loop ([`Poll`]) loads the flag (through the
//!   slot: no register is held for it) and returns when it is set.
//!   Innermost loops, vector and unrolled ones, have no poll; their code
//!   is unchanged.
//!
//! `EINSAT_JIT_DUMP=1` prints each nest's machine code as it is compiled.

use super::loopir::*;
use super::schedule::{self, Bound, NestSched, SumT, T};
use crate::syntax::ast::{BinOp, CmpOp, Func};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types, AbiParam, InstBuilder, MemFlagsData, StackSlot, StackSlotData, StackSlotKind, Value,
};
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{FuncId, Linkage, Module};
use std::collections::BTreeSet;
use std::sync::OnceLock;

/// Independent accumulators of an innermost sum.
pub const UNROLL: usize = 4;

/// A sum of literal size up to this many terms (and no loop domain) is
/// unrolled completely: no loop, no accumulators to combine (the 3-term
/// sums of `eps` contractions; see the module documentation).
pub const UNROLL_SHORT: usize = 4;

/// The native entry point of one nest: buffers, strides, sizes, and the
/// range `lo..hi` of the nest's outermost loop.
pub type Entry = unsafe extern "C" fn(*const *mut f64, *const i64, *const i64, i64, i64);

extern "C" fn f_exp(x: f64) -> f64 {
    x.exp()
}
extern "C" fn f_log(x: f64) -> f64 {
    x.ln()
}
extern "C" fn f_sin(x: f64) -> f64 {
    x.sin()
}
extern "C" fn f_cos(x: f64) -> f64 {
    x.cos()
}
extern "C" fn f_tanh(x: f64) -> f64 {
    x.tanh()
}
extern "C" fn f_max(x: f64, y: f64) -> f64 {
    Func::Max.apply(&[x, y])
}
extern "C" fn f_min(x: f64, y: f64) -> f64 {
    Func::Min.apply(&[x, y])
}

const CALLS: &[(&str, Func, usize)] = &[
    ("einsat_exp", Func::Exp, 1),
    ("einsat_log", Func::Log, 1),
    ("einsat_sin", Func::Sin, 1),
    ("einsat_cos", Func::Cos, 1),
    ("einsat_tanh", Func::Tanh, 1),
    ("einsat_max", Func::Max, 2),
    ("einsat_min", Func::Min, 2),
];

/// Compiled code; the module owns the executable memory and lives as long
/// as the kernel.
pub struct Native {
    module: Option<JITModule>,
    /// One entry per nest of the loop program, in the same order.
    pub entries: Vec<Entry>,
    /// With more than one nest: an entry running every nest not skipped
    /// in order, each over its whole outermost range, on the calling
    /// thread (its `lo` and `hi` are ignored).
    pub chain: Option<Entry>,
    /// Per nest: it does nothing in this layout (a column sum's nest that
    /// is not computed ahead, [`schedule::with_columns`]); not run at all.
    pub skip: Vec<bool>,
}

impl Drop for Native {
    fn drop(&mut self) {
        if let Some(m) = self.module.take() {
            // SAFETY: `entry` points into this module's memory and is only
            // reachable through this `Native`, which is going away; no
            // call into the code can be running (calls borrow the kernel).
            unsafe { m.free_memory() };
        }
    }
}

// SAFETY: after `finalize_definitions` the module is never mutated again; the
// code it owns is immutable and may be called from any thread.
unsafe impl Send for Native {}
unsafe impl Sync for Native {}

/// The host ISA with einsat's Cranelift settings, built once per process
/// (detecting the host's features and building the flags is the same
/// work for every kernel). The settings:
/// - `opt_level=speed` (the e-graph pass: GVN, LICM of pure arithmetic,
///   the placement of the movable loads of [`super::dense`]);
/// - inline stack probes: frames larger than a page (the packing buffers
///   of `dense`) touch every page in order, so a thread's guard page is
///   never jumped over;
/// - Cranelift's IR verifier only in builds with debug assertions or with
///   `EINSAT_JIT_VERIFY=1` in the environment (read once; `.ci/run` sets
///   it for the tests and `difftest`): it checks einsat's IR without
///   changing the code, and took about a quarter of compile time
///   (`cargo run --release --example compiletime`).
fn host_isa() -> Result<cranelift_codegen::isa::OwnedTargetIsa, String> {
    static ISA: OnceLock<Result<cranelift_codegen::isa::OwnedTargetIsa, String>> = OnceLock::new();
    ISA.get_or_init(|| {
        let mut flags = settings::builder();
        let set = |f: &mut settings::Builder, k: &str, v: &str| {
            f.set(k, v)
                .map_err(|e| format!("cranelift setting {k}: {e}"))
        };
        set(&mut flags, "opt_level", "speed")?;
        set(&mut flags, "is_pic", "false")?;
        set(&mut flags, "enable_probestack", "true")?;
        set(&mut flags, "probestack_strategy", "inline")?;
        let verify = cfg!(debug_assertions)
            || std::env::var_os("EINSAT_JIT_VERIFY").is_some_and(|v| v != "0");
        set(
            &mut flags,
            "enable_verifier",
            if verify { "true" } else { "false" },
        )?;
        cranelift_native::builder()
            .map_err(|e| format!("host ISA: {e}"))?
            .finish(settings::Flags::new(flags))
            .map_err(|e| format!("host ISA: {e}"))
    })
    .clone()
}

/// Compile a loop program for buffers laid out as `layout` says.
pub fn compile(p: &LoopProgram, layout: &Layout) -> Result<Native, String> {
    let isa = host_isa()?;
    let mut jb = JITBuilder::with_isa(isa, cranelift_module::default_libcall_names());
    jb.symbol("einsat_exp", f_exp as *const u8);
    jb.symbol("einsat_log", f_log as *const u8);
    jb.symbol("einsat_sin", f_sin as *const u8);
    jb.symbol("einsat_cos", f_cos as *const u8);
    jb.symbol("einsat_tanh", f_tanh as *const u8);
    jb.symbol("einsat_max", f_max as *const u8);
    jb.symbol("einsat_min", f_min as *const u8);
    let mut module = JITModule::new(jb);
    let tcfg = module.target_config();
    let ptr = tcfg.pointer_type();

    let mut calls: Vec<(Func, FuncId)> = Vec::new();
    for (name, f, arity) in CALLS {
        let mut sig = module.make_signature();
        for _ in 0..*arity {
            sig.params.push(AbiParam::new(types::F64));
        }
        sig.returns.push(AbiParam::new(types::F64));
        let id = module
            .declare_function(name, Linkage::Import, &sig)
            .map_err(|e| e.to_string())?;
        calls.push((*f, id));
    }

    // where each buffer's strides start in the strides array
    let mut stride_at = Vec::with_capacity(p.bufs.len());
    let mut off = 0usize;
    for buf in &p.bufs {
        stride_at.push(off);
        off += buf.dims.len();
    }

    let mut ctx = module.make_context();
    let mut fctx = FunctionBuilderContext::new();
    let mut ids = Vec::with_capacity(p.nests.len());
    let mut skip = Vec::with_capacity(p.nests.len());
    for (k, nest) in p.nests.iter().enumerate() {
        // column sums computed ahead in this layout, or not (their nests
        // then do nothing and are skipped)
        let ran = schedule::with_columns(p, nest, layout);
        skip.push(ran.is_none());
        let nest: &Nest = ran.as_deref().unwrap_or(nest);
        ctx.func.signature.params.clear();
        for _ in 0..3 {
            ctx.func.signature.params.push(AbiParam::new(ptr));
        }
        for _ in 0..2 {
            ctx.func.signature.params.push(AbiParam::new(types::I64));
        }
        {
            let mut b = FunctionBuilder::new(&mut ctx.func, &mut fctx);
            let entry = b.create_block();
            b.append_block_params_for_function_params(entry);
            b.switch_to_block(entry);
            // every block is sealed as soon as its predecessors are known
            // (see `for_range`), so the SSA construction creates block
            // parameters only at loop heads
            b.seal_block(entry);
            let (bp, sp, zp, lo, hi) = {
                let ps = b.block_params(entry);
                (ps[0], ps[1], ps[2], ps[3], ps[4])
            };
            if ran.is_none() {
                b.ins().return_(&[]);
                b.seal_all_blocks();
                b.finalize(tcfg);
            } else if let Some(plan) = super::dense::plan(p, nest, layout) {
                let e = super::dense::EntryParams {
                    bufs: bp,
                    strides: sp,
                    sizes: zp,
                    lo,
                    hi,
                };
                super::dense::emit(&mut b, p, nest, layout, &stride_at, e, &plan);
                b.seal_all_blocks();
                b.finalize(tcfg);
            } else {
                let mf = MemFlagsData::trusted();
                let mut used = vec![false; p.bufs.len()];
                nest_bufs(p, nest, &mut used);
                let mut bases = Vec::with_capacity(p.bufs.len());
                let mut strides = Vec::with_capacity(p.bufs.len());
                for (bi, buf) in p.bufs.iter().enumerate() {
                    if !used[bi] {
                        bases.push(None);
                        strides.push(vec![]);
                        continue;
                    }
                    bases.push(Some(b.ins().load(ptr, mf, bp, (bi * 8) as i32)));
                    let mut s = Vec::new();
                    for a in 0..buf.dims.len() {
                        s.push(if layout.is_unit(bi, a) {
                            b.ins().iconst(types::I64, 1)
                        } else {
                            b.ins()
                                .load(types::I64, mf, sp, ((stride_at[bi] + a) * 8) as i32)
                        });
                    }
                    strides.push(s);
                }
                let sizes: Vec<Value> = (0..p.sizes.len())
                    .map(|k| b.ins().load(types::I64, mf, zp, (k * 8) as i32))
                    .collect();
                let mut funcs = Vec::new();
                for (f, id) in &calls {
                    funcs.push((*f, module.declare_func_in_func(*id, b.func)));
                }
                let sched = schedule::schedule(p, nest, layout);
                // loops inside loops: the outer ones poll for cancellation
                let poll = (polling() && sched.order.len() + sum_depth(&sched.body) >= 2)
                    .then(|| Poll::setup(&mut b, zp, p.sizes.len()));
                let mut g = Gen {
                    b,
                    bases,
                    strides,
                    sizes,
                    pool: Vec::new(),
                    funcs,
                    mf,
                    vmf: MemFlagsData::new().with_notrap(),
                    range: (lo, hi),
                    layout,
                    hoisted: Vec::new(),
                    defined: vec![false; p.n_vars],
                    copies: 1,
                    copy_budget: COPY_NODES,
                    out_flag: p.bufs[nest.buf].flag,
                    rows: Vec::new(),
                    row_sigs: Vec::new(),
                    vidx: None,
                    voff: 0,
                    block: None,
                    cur: vec![None; p.n_vars],
                    poll,
                    loops: 0,
                };
                g.nest(nest, &sched);
                g.b.ins().return_(&[]);
                g.b.seal_all_blocks();
                g.b.finalize(tcfg);
            }
        }
        let id = module
            .declare_function(&format!("nest{k}"), Linkage::Local, &ctx.func.signature)
            .map_err(|e| e.to_string())?;
        capture(&ctx.func);
        let dump = std::env::var_os("EINSAT_JIT_DUMP").is_some();
        if dump {
            ctx.set_disasm(true);
        }
        module
            .define_function(id, &mut ctx)
            .map_err(|e| format!("cranelift: {e:?}"))?;
        if dump {
            if let Some(c) = ctx.compiled_code().and_then(|c| c.vcode.clone()) {
                eprintln!("; nest {k}\n{c}");
            }
        }
        module.clear_context(&mut ctx);
        ids.push(id);
    }
    let chain = if ids.len() > 1 {
        Some(chain(&mut module, &mut ctx, &mut fctx, p, &ids, &skip)?)
    } else {
        None
    };
    module.finalize_definitions().map_err(|e| e.to_string())?;
    // SAFETY: as for the entries below.
    let chain = chain.map(|id| unsafe {
        std::mem::transmute::<*const u8, Entry>(module.get_finalized_function(id))
    });
    let entries = ids
        .into_iter()
        .map(|id| {
            let code = module.get_finalized_function(id);
            // SAFETY: `code` was compiled from a function with exactly this
            // signature (three pointers and two i64s, no result).
            unsafe { std::mem::transmute::<*const u8, Entry>(code) }
        })
        .collect();
    Ok(Native {
        module: Some(module),
        entries,
        chain,
        skip,
    })
}

/// The chain function: the signature of a nest's entry (`lo`, `hi`
/// unused), calling every nest's entry but those of `skip` in order over
/// the whole range
/// `0..n0` of its outermost loop (`n0` read from the sizes as the caller
/// would resolve it; 1 without a `gen`), so a call whose nests all run on
/// the calling thread costs one indirect call, not one per nest.
fn chain(
    module: &mut JITModule,
    ctx: &mut cranelift_codegen::Context,
    fctx: &mut FunctionBuilderContext,
    p: &LoopProgram,
    ids: &[FuncId],
    skip: &[bool],
) -> Result<FuncId, String> {
    let ptr = module.target_config().pointer_type();
    ctx.func.signature.params.clear();
    for _ in 0..3 {
        ctx.func.signature.params.push(AbiParam::new(ptr));
    }
    for _ in 0..2 {
        ctx.func.signature.params.push(AbiParam::new(types::I64));
    }
    {
        let mut b = FunctionBuilder::new(&mut ctx.func, fctx);
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        let (bp, sp, zp) = {
            let ps = b.block_params(entry);
            (ps[0], ps[1], ps[2])
        };
        let mf = MemFlagsData::trusted();
        let zero = b.ins().iconst(types::I64, 0);
        for ((nest, id), _) in p.nests.iter().zip(ids).zip(skip).filter(|(_, s)| !**s) {
            let callee = module.declare_func_in_func(*id, b.func);
            let n0 = match nest.vars.first().map(|(_, n)| n) {
                None => b.ins().iconst(types::I64, 1),
                Some(SizeRef::Lit(n)) => b.ins().iconst(types::I64, *n),
                Some(SizeRef::Named(k)) => b.ins().load(types::I64, mf, zp, (*k * 8) as i32),
            };
            b.ins().call(callee, &[bp, sp, zp, zero, n0]);
        }
        b.ins().return_(&[]);
        b.seal_all_blocks();
        b.finalize(module.target_config());
    }
    capture(&ctx.func);
    let id = module
        .declare_function("chain", Linkage::Local, &ctx.func.signature)
        .map_err(|e| e.to_string())?;
    module
        .define_function(id, ctx)
        .map_err(|e| format!("cranelift: {e:?}"))?;
    module.clear_context(ctx);
    Ok(id)
}

thread_local! {
    /// Where [`capture`] records the Cranelift IR of each function compiled
    /// on this thread (`None`: not recorded), for [`super::clif_text`].
    static CAPTURED: std::cell::RefCell<Option<Vec<String>>> = const { std::cell::RefCell::new(None) };
}

/// Record `func`'s IR text if this thread asked for it ([`captured`]).
fn capture(func: &cranelift_codegen::ir::Function) {
    CAPTURED.with(|c| {
        if let Some(v) = c.borrow_mut().as_mut() {
            v.push(func.display().to_string());
        }
    });
}

/// Run `f` and return, with its result, the Cranelift IR text of every
/// function it compiled on this thread, in order.
pub(crate) fn captured<R>(f: impl FnOnce() -> R) -> (R, Vec<String>) {
    let old = CAPTURED.with(|c| c.replace(Some(Vec::new())));
    let r = f();
    let text = CAPTURED.with(|c| c.replace(old)).unwrap_or_default();
    (r, text)
}

/// The sum of `vals` as a pairwise tree of `fadd`s (scalars or vectors);
/// `None` for no values.
pub(crate) fn add_tree(b: &mut FunctionBuilder, vals: Vec<Value>) -> Option<Value> {
    let mut level = vals;
    while level.len() > 1 {
        level = level
            .chunks(2)
            .map(|c| {
                if c.len() == 2 {
                    b.ins().fadd(c[0], c[1])
                } else {
                    c[0]
                }
            })
            .collect();
    }
    level.first().copied()
}
/// Whether code compiled from now on polls for cancellation (default:
/// yes). A knob for measuring the polls' cost in one process
/// (`examples/schedbench.rs`, entries ending `nopoll`); code without polls
/// cannot be cancelled. Not part of the stable API.
#[doc(hidden)]
pub fn set_polling(on: bool) {
    POLLING.store(on, std::sync::atomic::Ordering::Relaxed);
}

static POLLING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Whether to emit cancellation polls ([`set_polling`]).
pub(crate) fn polling() -> bool {
    POLLING.load(std::sync::atomic::Ordering::Relaxed)
}

/// Cancellation polls (see the module doc, "cancellation"): the address
/// of the call's flag, kept in a stack slot (no register is held for it).
#[derive(Clone, Copy)]
pub(crate) struct Poll {
    slot: StackSlot,
}

impl Poll {
    /// In the entry block: read the flag's address from `sizes[n_sizes]`
    /// (the element after the named sizes) into a stack slot.
    pub(crate) fn setup(b: &mut FunctionBuilder, sizes: Value, n_sizes: usize) -> Poll {
        let slot = b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 8, 3));
        let p = b.ins().load(
            types::I64,
            MemFlagsData::trusted(),
            sizes,
            (n_sizes * 8) as i32,
        );
        b.ins().stack_store(types::I64, p, slot, 0);
        Poll { slot }
    }

    /// `x`, or `stop` when the call is cancelled (a `select`, no
    /// branch): a loop's back edge compares its counter with the bound
    /// this returns, so a cancelled loop leaves by its usual exit, with no
    /// new block or edge.
    pub(crate) fn or_stop(self, b: &mut FunctionBuilder, x: Value, stop: Value) -> Value {
        let p = b.ins().stack_load(types::I64, types::I64, self.slot, 0);
        let f = b.ins().atomic_load(types::I8, MemFlagsData::trusted(), p);
        b.ins().select(f, stop, x)
    }
}

/// The deepest nesting of sums in `t`.
fn sum_depth(t: &T) -> usize {
    match t {
        T::Sum(s) => 1 + sum_depth(&s.body),
        T::Bin(_, a, b) => sum_depth(a).max(sum_depth(b)),
        T::Neg(a) => sum_depth(a),
        T::Call(_, args) => args.iter().map(sum_depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Mark the buffers a nest reads or writes (with their strong-zero flag
/// buffers).
fn nest_bufs(p: &LoopProgram, n: &Nest, used: &mut [bool]) {
    fn walk(p: &LoopProgram, s: &S, used: &mut [bool]) {
        match s {
            S::Load(b, _) => {
                used[*b] = true;
                if let Some(f) = p.bufs[*b].flag {
                    used[f] = true;
                }
            }
            S::Num(_) | S::Bracket(_) | S::Eps(_) => {}
            S::Bin(_, a, b) => {
                walk(p, a, used);
                walk(p, b, used);
            }
            S::Neg(a) | S::Sum(_, _, a) => walk(p, a, used),
            S::Call(_, args) => args.iter().for_each(|a| walk(p, a, used)),
        }
    }
    used[n.buf] = true;
    if let Some(f) = p.bufs[n.buf].flag {
        used[f] = true;
    }
    walk(p, &n.body, used);
}

/// How many copies of a loop body peeling may make (each peeled loop
/// emits its body three times: two borders and the interior).
const MAX_COPIES: usize = 27;

/// How many nodes of code copies may add to one native function: a body
/// is copied (peeled, unrolled, vectorised with several accumulators,
/// tiled) only while the nodes of the extra copies (times the copies of
/// the code around it) fit in what is left of this budget. The kernels of
/// the examples and benchmarks stay far within it and are copied as
/// before; in a large nest (deep nests of sums, long expressions, many
/// sums) the copying stops when the budget is spent, so a function's code
/// stays within a small multiple of its program's size (and with it
/// Cranelift's compile memory). A body of more than [`COPY_BODY`] nodes
/// is never copied.
const COPY_NODES: usize = 1 << 14;

/// The largest body (in nodes) that is copied at all (see
/// [`COPY_NODES`]): its loops' overhead is small beside its work anyway.
const COPY_BODY: usize = 1 << 10;

/// Vector accumulators of an innermost vectorised sum.
const VACCS: usize = 4;

/// `f64x2` vectors stored per step of a vectorised gen loop (then one
/// vector, then scalars).
pub const VSTORE_UNROLL: usize = 2;

/// A code generator emitting one function (the general one here and the
/// dense one of [`super::dense`]), for the helpers both use.
pub(crate) trait Emits<'f> {
    fn fb(&mut self) -> &mut FunctionBuilder<'f>;
}

impl<'a> Emits<'a> for Gen<'a, '_> {
    fn fb(&mut self) -> &mut FunctionBuilder<'a> {
        &mut self.b
    }
}

/// `for x0 in (lo..hi).step_by(t) { body(x0, min(x0 + t, hi)) }`.
pub(crate) fn for_blocks<'f, C: Emits<'f>>(
    c: &mut C,
    lo: Value,
    hi: Value,
    t: i64,
    body: &mut dyn FnMut(&mut C, Value, Value),
) {
    let b = c.fb();
    let x = b.declare_var(types::I64);
    b.def_var(x, lo);
    let body_b = b.create_block();
    let exit = b.create_block();
    let go = b.ins().icmp(IntCC::SignedLessThan, lo, hi);
    b.ins().brif(go, body_b, &[], exit, &[]);
    b.switch_to_block(body_b);
    let x0 = b.use_var(x);
    let x1 = b.ins().iadd_imm_s(x0, t);
    let end = b.ins().smin(x1, hi);
    body(c, x0, end);
    let b = c.fb();
    b.def_var(x, x1);
    let more = b.ins().icmp(IntCC::SignedLessThan, x1, hi);
    b.ins().brif(more, body_b, &[], exit, &[]);
    b.seal_block(body_b);
    b.seal_block(exit);
    b.switch_to_block(exit);
}

/// `if blocks pay { blocked } else { plain }`, decided at call time for a
/// loop that walks across `rows` rows `stride` bytes apart
/// (`schedule::tiled`, `dense::Plan::vblock`): blocks pay when the rows
/// are a multiple of 2 KiB apart (they then share a few sets of the L1
/// cache) or there are more than [`super::schedule::TILE_ROWS`] of them
/// (beyond the TLB's reach).
pub(crate) fn if_blocks_pay<'f, C: Emits<'f>>(
    c: &mut C,
    stride: Value,
    rows: Value,
    blocked: &mut dyn FnMut(&mut C),
    plain: &mut dyn FnMut(&mut C),
) {
    let b = c.fb();
    let low = b.ins().band_imm_s(stride, 2047);
    let alias = b.ins().icmp_imm_s(IntCC::Equal, low, 0);
    let long = b
        .ins()
        .icmp_imm_s(IntCC::SignedGreaterThan, rows, super::schedule::TILE_ROWS);
    let go = b.ins().bor(alias, long);
    let (yes, no, join) = (b.create_block(), b.create_block(), b.create_block());
    b.ins().brif(go, yes, &[], no, &[]);
    b.seal_block(yes);
    b.seal_block(no);
    b.switch_to_block(yes);
    blocked(c);
    let b = c.fb();
    b.ins().jump(join, &[]);
    b.switch_to_block(no);
    plain(c);
    let b = c.fb();
    b.ins().jump(join, &[]);
    b.seal_block(join);
    b.switch_to_block(join);
}

struct Gen<'a, 'l> {
    b: FunctionBuilder<'a>,
    /// Base pointers of the buffers the nest uses.
    bases: Vec<Option<Value>>,
    strides: Vec<Vec<Value>>,
    sizes: Vec<Value>,
    /// Variables free for reuse, with their types ([`Gen::take`]).
    pool: Vec<(types::Type, Variable)>,
    funcs: Vec<(Func, cranelift_codegen::ir::FuncRef)>,
    mf: MemFlagsData,
    /// Flags of vector accesses (not assumed aligned).
    vmf: MemFlagsData,
    /// The range of the nest's first gen variable.
    range: (Value, Value),
    layout: &'l Layout,
    /// Values computed before a loop (loop-invariant code motion).
    hoisted: Vec<(Value, Option<Value>)>,
    /// The loop variables whose loops enclose the code being emitted.
    defined: Vec<bool>,
    /// How many copies of the current code peeling, short sums and tiling
    /// have made.
    copies: usize,
    /// What is left of [`COPY_NODES`].
    copy_budget: usize,
    /// The strong-zero flag buffer of the nest's output.
    out_flag: Option<usize>,
    /// In a vector loop: the address of each vector load (keyed by the
    /// load's node) at the loop variable 0, computed before the loop, and
    /// the byte offset of its constant along the vector axis.
    rows: Vec<(usize, Value, i32)>,
    /// The row pointers' signatures (buffer and the indices without the
    /// vector axis's constant), so loads of one row share a pointer.
    row_sigs: Vec<(String, Value)>,
    /// In a vector loop: the loop index of the current step's first lane
    /// (every row load is `row + 8 * vidx + voff + imm`, one addressing
    /// mode, so the loop advances one counter, not a pointer per row).
    vidx: Option<Value>,
    /// Bytes to add to every row load for the current unrolled step.
    voff: i64,
    /// Inside a block of tiled loops ([`NestSched::tile`]): the range of
    /// the innermost loop's block.
    block: Option<(Value, Value)>,
    /// Each loop variable's current SSA value where it is known (set with
    /// the variable, read instead of looking the variable up): a lookup
    /// from deep inside nested loops walks back through every block in
    /// between, creating a block parameter at each merge, so looking up
    /// outer indices inside inner loops cost memory quadratic in the
    /// nesting ([`Gen::var`]).
    cur: Vec<Option<Value>>,
    /// Cancellation polls, when the nest has loops inside loops.
    poll: Option<Poll>,
    /// Loops emitted so far (a loop whose body emitted one polls).
    loops: usize,
}

/// What a loop's body does.
#[derive(Clone, Copy)]
enum Act<'n> {
    /// The gen loops from level `k` of the schedule on.
    Level(&'n Nest, &'n NestSched, usize),
    /// Store the body into the nest's buffer.
    Store(&'n Nest),
    /// Add the body to an accumulator.
    Accum(Acc),
}

#[derive(Clone, Copy)]
struct Acc {
    /// Scalar accumulators (independent, to hide the add latency).
    accs: [Variable; UNROLL],
    /// Vector accumulators (none for a body with loops of its own, which
    /// is not vectorised).
    vaccs: Option<[Variable; VACCS]>,
    /// "Every term so far was a strong zero", when the body may be one.
    all: Option<Variable>,
}

impl Gen<'_, '_> {
    fn size(&mut self, s: &SizeRef) -> Value {
        match s {
            SizeRef::Lit(n) => self.b.ins().iconst(types::I64, *n),
            SizeRef::Named(k) => self.sizes[*k],
        }
    }

    /// Loop variable `var` is `x` here.
    fn set_var(&mut self, var: usize, x: Value) {
        self.cur[var] = Some(x);
    }

    /// Loop variable `var`'s value here (it is only used inside its loop).
    fn var(&self, var: usize) -> Value {
        self.cur[var].expect("a loop variable is used only inside its loop, where it is set")
    }

    /// A Cranelift variable of type `ty`: a free one, or a new one.
    /// Cranelift's SSA builder keeps, per variable, a map over the blocks
    /// (up to the last block it is defined in), so memory is variables ×
    /// blocks: the variables of a finished loop or sum go back to the pool
    /// ([`Gen::give`]), and at any time only those of the loops enclosing
    /// the code being emitted are in use. A variable is given back only
    /// after its last use, and taken again only with a definition before
    /// any use, so no lookup can see its earlier life.
    fn take(&mut self, ty: types::Type) -> Variable {
        match self.pool.iter().rposition(|(t, _)| *t == ty) {
            Some(k) => self.pool.swap_remove(k).1,
            None => self.b.declare_var(ty),
        }
    }

    /// Return variables to the pool.
    fn give(&mut self, ty: types::Type, vs: &[Variable]) {
        for &v in vs {
            if !self.pool.iter().any(|(_, w)| *w == v) {
                self.pool.push((ty, v));
            }
        }
    }

    /// Whether `k` copies of `t` (instead of one) fit in what is left of
    /// the function's [`COPY_NODES`]; if so, they are spent.
    fn copyable(&mut self, t: &T, k: usize) -> bool {
        let unit = self.copies.max(1) * k.saturating_sub(1);
        if unit == 0 {
            return true;
        }
        match schedule::size_within(t, (self.copy_budget / unit).min(COPY_BODY)) {
            Some(s) => {
                self.copy_budget -= s * unit;
                true
            }
            None => false,
        }
    }

    fn base(&self, buf: usize) -> Value {
        self.bases[buf].expect("the nest's buffers are loaded in its entry block")
    }

    fn f64c(&mut self, x: f64) -> Value {
        self.b.ins().f64const(x)
    }

    /// `for var in lo..hi { body }`.
    ///
    /// Like every block of the generated code, the loop's blocks are
    /// sealed as soon as their predecessors are known (here after the
    /// back edge): a variable looked up in an unsealed block gets a block
    /// parameter there, so with every block left unsealed until the end,
    /// each variable used inside nested loops got one in every block
    /// between its definition and its use (quadratic in the nesting, and
    /// gigabytes for seven nested sums).
    fn for_range(&mut self, var: usize, lo: Value, n: Value, body: &mut dyn FnMut(&mut Self)) {
        // rotated: one test before the loop, then one per iteration at
        // its bottom (no jump back to a separate head block)
        let v = self.take(types::I64);
        self.b.def_var(v, lo);
        let body_b = self.b.create_block();
        let exit = self.b.create_block();
        let c = self.b.ins().icmp(IntCC::SignedLessThan, lo, n);
        self.b.ins().brif(c, body_b, &[], exit, &[]);
        self.b.switch_to_block(body_b);
        // the counter's value in this iteration: the loop head's parameter,
        // looked up once here (the body and the increment use it)
        let i = self.b.use_var(v);
        self.cur[var] = Some(i);
        self.loops += 1;
        let before = self.loops;
        body(self);
        let i1 = self.b.ins().iadd_imm_s(i, 1);
        self.b.def_var(v, i1);
        let mut n = n;
        if let (true, Some(p)) = (self.loops > before, self.poll) {
            // not an innermost loop: it also stops (its bound becomes the
            // next index) when the call is cancelled
            n = p.or_stop(&mut self.b, n, i1);
        }
        let c = self.b.ins().icmp(IntCC::SignedLessThan, i1, n);
        self.b.ins().brif(c, body_b, &[], exit, &[]);
        self.b.seal_block(body_b);
        self.b.seal_block(exit);
        self.b.switch_to_block(exit);
        self.cur[var] = None;
        self.give(types::I64, &[v]);
    }

    /// `while base + step <= hi { body(base); base += step }`.
    fn strided(
        &mut self,
        base: Variable,
        hi: Value,
        step: i64,
        body: &mut dyn FnMut(&mut Self, Value),
    ) {
        // rotated like `for_range`
        let body_b = self.b.create_block();
        let exit = self.b.create_block();
        let i = self.b.use_var(base);
        let last = self.b.ins().iadd_imm_s(i, step);
        let c = self.b.ins().icmp(IntCC::SignedLessThanOrEqual, last, hi);
        self.b.ins().brif(c, body_b, &[], exit, &[]);
        self.b.switch_to_block(body_b);
        let i = self.b.use_var(base);
        self.loops += 1;
        body(self, i);
        let i1 = self.b.ins().iadd_imm_s(i, step);
        self.b.def_var(base, i1);
        let last = self.b.ins().iadd_imm_s(i1, step);
        let c = self.b.ins().icmp(IntCC::SignedLessThanOrEqual, last, hi);
        self.b.ins().brif(c, body_b, &[], exit, &[]);
        self.b.seal_block(body_b);
        self.b.seal_block(exit);
        self.b.switch_to_block(exit);
    }

    fn imax(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().smax(a, b)
    }

    fn imin(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().smin(a, b)
    }

    fn bound(&mut self, bd: &Bound) -> Value {
        let mut v = self.aff(&bd.aff);
        if let Some((s, k)) = &bd.size {
            let s = self.size(s);
            let t = if *k == 1 {
                s
            } else {
                self.b.ins().imul_imm_s(s, *k)
            };
            v = self.b.ins().iadd(v, t);
        }
        v
    }

    // ------------------------------------------------------------ nests

    fn nest(&mut self, n: &Nest, ns: &NestSched) {
        self.levels(n, ns, 0, ns.body.clone());
    }

    /// The gen loops from level `k` of the schedule on.
    fn levels(&mut self, n: &Nest, ns: &NestSched, k: usize, body: T) {
        if k == ns.order.len() {
            let (v, f) = self.scalar(&body);
            self.store(n, v, f);
            return;
        }
        let pos = ns.order[k];
        let var = n.vars[pos].0;
        let last = k + 1 == ns.order.len();
        let (lo, hi) = match self.block {
            Some(r) if last && ns.tile.is_some() => r,
            _ => self.level_range(n, pos),
        };
        let blocked: BTreeSet<usize> = ns.order[k..].iter().map(|&q| n.vars[q].0).collect();
        let body = self.hoist(body, &blocked);
        let act = if last {
            Act::Store(n)
        } else {
            Act::Level(n, ns, k + 1)
        };
        if let (Some((buf, ax)), true, true) =
            (ns.tile, k + 2 == ns.order.len(), self.copyable(&body, 2))
        {
            // blocks of the two innermost loops, laid out from their
            // ranges' starts, each block's loops as without tiling; only
            // where they pay (see `schedule::tiled`), else the loops as
            // they are
            let (blo, bhi) = self.level_range(n, ns.order[k + 1]);
            let st = self.strides[buf][ax];
            let bytes = self.b.ins().ishl_imm_s(st, 3);
            let span = self.b.ins().isub(bhi, blo);
            let (ta, tb) = super::schedule::TILE;
            self.copies *= 2;
            if_blocks_pay(
                self,
                bytes,
                span,
                &mut |g| {
                    for_blocks(g, lo, hi, ta, &mut |g, a0, a1| {
                        for_blocks(g, blo, bhi, tb, &mut |g, b0, b1| {
                            let saved = g.block.replace((b0, b1));
                            g.run_loop(var, a0, a1, body.clone(), act);
                            g.block = saved;
                        });
                    });
                },
                &mut |g| g.run_loop(var, lo, hi, body.clone(), act),
            );
            self.copies /= 2;
            return;
        }
        self.run_loop(var, lo, hi, body, act);
    }

    /// The range of the gen loop at `pos` of the nest's variables.
    fn level_range(&mut self, n: &Nest, pos: usize) -> (Value, Value) {
        if pos == 0 {
            self.range
        } else {
            let z = self.b.ins().iconst(types::I64, 0);
            let size = n.vars[pos].1.clone();
            (z, self.size(&size))
        }
    }

    /// The address of `buf[i0, i1, …]` for the given index values.
    fn addr(&mut self, buf: usize, idx: &[Value]) -> Value {
        let mut off: Option<Value> = None;
        for (a, &i) in idx.iter().enumerate() {
            let t = self.b.ins().imul(i, self.strides[buf][a]);
            off = Some(match off {
                None => t,
                Some(o) => self.b.ins().iadd(o, t),
            });
        }
        let base = self.base(buf);
        match off {
            None => base,
            Some(o) => {
                let bytes = self.b.ins().ishl_imm_s(o, 3);
                self.b.ins().iadd(base, bytes)
            }
        }
    }

    fn out_addr(&mut self, n: &Nest, buf: usize) -> Value {
        let idx: Vec<Value> = n.vars.iter().map(|(v, _)| self.var(*v)).collect();
        self.addr(buf, &idx)
    }

    fn store(&mut self, n: &Nest, v: Value, f: Option<Value>) {
        let addr = self.out_addr(n, n.buf);
        self.b.ins().store(self.mf, v, addr, 0);
        if let Some(fb) = self.out_flag {
            let one = self.f64c(1.0);
            let zero = self.f64c(0.0);
            let x = match f {
                Some(f) => self.b.ins().select(f, one, zero),
                None => zero,
            };
            let addr = self.out_addr(n, fb);
            self.b.ins().store(self.mf, x, addr, 0);
        }
    }

    // ------------------------------------------------ loop-invariant code

    /// Compute, here (before a loop), the largest subtrees of `t` that use
    /// none of the `blocked` variables (the loop's and those of loops
    /// inside it), and refer to them as [`T::Hoisted`].
    fn hoist(&mut self, t: T, blocked: &BTreeSet<usize>) -> T {
        match t {
            T::Num(_) | T::Hoisted(..) => t,
            t if {
                let mut fv = BTreeSet::new();
                schedule::free_vars(&t, &mut fv);
                fv.is_disjoint(blocked)
            } =>
            {
                let (v, f) = self.scalar(&t);
                self.hoisted.push((v, f));
                T::Hoisted(self.hoisted.len() - 1, f.is_some())
            }
            T::Bin(op, a, b) => {
                let a = self.hoist(*a, blocked);
                let b = self.hoist(*b, blocked);
                T::Bin(op, Box::new(a), Box::new(b))
            }
            T::Neg(a) => T::Neg(Box::new(self.hoist(*a, blocked))),
            T::Call(f, args) => T::Call(
                f,
                args.into_iter().map(|a| self.hoist(a, blocked)).collect(),
            ),
            T::Sum(s) => {
                let mut s = *s;
                let mut inner = blocked.clone();
                inner.insert(s.var);
                s.body = self.hoist(s.body, &inner);
                T::Sum(Box::new(s))
            }
            t => t,
        }
    }

    // ------------------------------------------------------------ peeling

    /// Whether the checked index `ix` only leaves its axis at the borders
    /// of `var`'s loop: coefficient ±1 on `var`, every other variable of
    /// an enclosing loop.
    fn peelable(&self, ix: &Ix, var: usize) -> bool {
        ix.checked
            && schedule::coef(&ix.aff, var).abs() == 1
            && ix
                .aff
                .terms
                .iter()
                .all(|(x, c)| *x == var || *c == 0 || self.defined[*x])
    }

    /// The interior bounds of `var` from every peelable index of `t`.
    fn peel_bounds(&self, t: &T, var: usize, lo: &mut Vec<Bound>, hi: &mut Vec<Bound>) {
        match t {
            T::Load { ixs, .. } => {
                for ix in ixs {
                    if !self.peelable(ix, var) {
                        continue;
                    }
                    let r = schedule::without(&ix.aff, var);
                    if schedule::coef(&ix.aff, var) == 1 {
                        // var + r in 0..d: var in -r .. d - r
                        let m = schedule::scale(&r, -1);
                        lo.push(Bound {
                            aff: m.clone(),
                            size: None,
                        });
                        hi.push(Bound {
                            aff: m,
                            size: Some((ix.dim.clone(), 1)),
                        });
                    } else {
                        // r - var in 0..d: var in r - d + 1 .. r + 1
                        let mut r1 = r;
                        r1.constant += 1;
                        lo.push(Bound {
                            aff: r1.clone(),
                            size: Some((ix.dim.clone(), -1)),
                        });
                        hi.push(Bound {
                            aff: r1,
                            size: None,
                        });
                    }
                }
            }
            T::Bin(_, a, b) => {
                self.peel_bounds(a, var, lo, hi);
                self.peel_bounds(b, var, lo, hi);
            }
            T::Neg(a) => self.peel_bounds(a, var, lo, hi),
            T::Call(_, args) => args.iter().for_each(|a| self.peel_bounds(a, var, lo, hi)),
            T::Sum(s) => self.peel_bounds(&s.body, var, lo, hi),
            _ => {}
        }
    }

    /// `t` with the peelable indices of `var` unchecked (for the interior).
    fn uncheck(&self, t: &T, var: usize) -> T {
        match t {
            T::Load { buf, ixs, flag } => T::Load {
                buf: *buf,
                ixs: ixs
                    .iter()
                    .map(|ix| Ix {
                        checked: ix.checked && !self.peelable(ix, var),
                        ..ix.clone()
                    })
                    .collect(),
                flag: *flag,
            },
            T::Bin(op, a, b) => T::Bin(
                *op,
                Box::new(self.uncheck(a, var)),
                Box::new(self.uncheck(b, var)),
            ),
            T::Neg(a) => T::Neg(Box::new(self.uncheck(a, var))),
            T::Call(f, args) => T::Call(*f, args.iter().map(|a| self.uncheck(a, var)).collect()),
            T::Sum(s) => {
                let mut s2 = (**s).clone();
                s2.body = self.uncheck(&s.body, var);
                T::Sum(Box::new(s2))
            }
            t => t.clone(),
        }
    }

    /// `for var in lo..hi { act(body) }`, with the border iterations of
    /// checked indices peeled off so that the interior runs unchecked.
    fn run_loop(&mut self, var: usize, lo: Value, hi: Value, body: T, act: Act) {
        let (mut plo, mut phi) = (Vec::new(), Vec::new());
        self.peel_bounds(&body, var, &mut plo, &mut phi);
        if plo.is_empty() || self.copies * 3 > MAX_COPIES || !self.copyable(&body, 3) {
            self.part(var, lo, hi, &body, act, true);
            return;
        }
        let interior = self.uncheck(&body, var);
        let mut ilo = lo;
        for bd in &plo {
            let x = self.bound(bd);
            ilo = self.imax(ilo, x);
        }
        let mid_lo = self.imin(ilo, hi);
        let mut ihi = hi;
        for bd in &phi {
            let x = self.bound(bd);
            ihi = self.imin(ihi, x);
        }
        let mid_hi = self.imax(ihi, mid_lo);
        self.copies *= 3;
        self.part(var, lo, mid_lo, &body, act, false);
        self.part(var, mid_lo, mid_hi, &interior, act, true);
        self.part(var, mid_hi, hi, &body, act, false);
        self.copies /= 3;
    }

    /// One range of a loop.
    fn part(&mut self, var: usize, lo: Value, hi: Value, body: &T, act: Act, vector: bool) {
        self.defined[var] = true;
        match act {
            Act::Level(n, ns, k) => {
                self.for_range(var, lo, hi, &mut |g| g.levels(n, ns, k, body.clone()));
            }
            Act::Store(n) => {
                let pos = n.vars.iter().position(|(v, _)| *v == var);
                let unit_out = pos.is_some_and(|a| {
                    self.layout.is_unit(n.buf, a)
                        && n.vars.iter().filter(|(v, _)| *v == var).count() == 1
                });
                if vector
                    && unit_out
                    && self.out_flag.is_none()
                    && self.vec_ok(body, var)
                    && self.copyable(body, VSTORE_UNROLL + 2)
                {
                    let saved = self.rows.len();
                    self.vec_rows(body, var);
                    // the output row at `var = 0`: stores go to
                    // `out_row + 8 * i` like the loads
                    let zero = self.b.ins().iconst(types::I64, 0);
                    self.set_var(var, zero);
                    let out_row = self.out_addr(n, n.buf);
                    let base = self.take(types::I64);
                    self.b.def_var(base, lo);
                    for step in [VSTORE_UNROLL, 1] {
                        self.strided(base, hi, 2 * step as i64, &mut |g, i| {
                            g.vidx = Some(i);
                            let bytes = g.b.ins().ishl_imm_s(i, 3);
                            let addr = g.b.ins().iadd(out_row, bytes);
                            for u in 0..step {
                                let iu = g.b.ins().iadd_imm_s(i, 2 * u as i64);
                                g.set_var(var, iu);
                                g.voff = 16 * u as i64;
                                let v = g.vscalar(body, var);
                                g.b.ins().store(g.vmf, v, addr, 16 * u as i32);
                            }
                            g.voff = 0;
                            g.vidx = None;
                        });
                    }
                    self.cur[var] = None;
                    self.rows.truncate(saved);
                    self.row_sigs.clear();
                    let rest = self.b.use_var(base);
                    self.give(types::I64, &[base]);
                    self.for_range(var, rest, hi, &mut |g| {
                        let (v, f) = g.scalar(body);
                        g.store(n, v, f);
                    });
                } else {
                    self.for_range(var, lo, hi, &mut |g| {
                        let (v, f) = g.scalar(body);
                        g.store(n, v, f);
                    });
                }
            }
            Act::Accum(acc) => self.accum_part(var, lo, hi, body, acc, vector),
        }
        self.defined[var] = false;
    }

    // ------------------------------------------------------------ scalars

    fn aff(&mut self, a: &Aff) -> Value {
        let mut acc = self.b.ins().iconst(types::I64, a.constant);
        for (v, c) in &a.terms {
            let x = self.var(*v);
            let t = if *c == 1 {
                x
            } else {
                self.b.ins().imul_imm_s(x, *c)
            };
            acc = self.b.ins().iadd(acc, t);
        }
        acc
    }

    fn pred(&mut self, p: &P) -> Value {
        match p {
            P::Cmp(op, a, b) => {
                let (x, y) = (self.aff(a), self.aff(b));
                let cc = match op {
                    CmpOp::Eq => IntCC::Equal,
                    CmpOp::Ne => IntCC::NotEqual,
                    CmpOp::Lt => IntCC::SignedLessThan,
                    CmpOp::Le => IntCC::SignedLessThanOrEqual,
                    CmpOp::Gt => IntCC::SignedGreaterThan,
                    CmpOp::Ge => IntCC::SignedGreaterThanOrEqual,
                };
                self.b.ins().icmp(cc, x, y)
            }
            P::And(a, b) => {
                let (x, y) = (self.pred(a), self.pred(b));
                self.b.ins().band(x, y)
            }
            P::Or(a, b) => {
                let (x, y) = (self.pred(a), self.pred(b));
                self.b.ins().bor(x, y)
            }
            P::Not(a) => {
                let x = self.pred(a);
                self.b.ins().icmp_imm_s(IntCC::Equal, x, 0)
            }
        }
    }

    /// The offset (elements) of a load and its in-range condition when
    /// some index is checked.
    fn offset(&mut self, buf: usize, ixs: &[Ix]) -> (Value, Option<Value>) {
        let mut off = self.b.ins().iconst(types::I64, 0);
        let mut ok: Option<Value> = None;
        for (a, ix) in ixs.iter().enumerate() {
            let i = self.aff(&ix.aff);
            if ix.checked {
                // 0 <= i < dim, as one unsigned comparison
                let d = self.size(&ix.dim);
                let c = self.b.ins().icmp(IntCC::UnsignedLessThan, i, d);
                ok = Some(match ok {
                    None => c,
                    Some(o) => self.b.ins().band(o, c),
                });
            }
            let t = self.b.ins().imul(i, self.strides[buf][a]);
            off = self.b.ins().iadd(off, t);
        }
        (off, ok)
    }

    fn load(&mut self, buf: usize, ixs: &[Ix]) -> Value {
        let (off, ok) = self.offset(buf, ixs);
        let base = self.base(buf);
        match ok {
            None => {
                let bytes = self.b.ins().ishl_imm_s(off, 3);
                let addr = self.b.ins().iadd(base, bytes);
                self.b.ins().load(types::F64, self.mf, addr, 0)
            }
            Some(c) => {
                let inb = self.b.create_block();
                let merge = self.b.create_block();
                let r = self.b.append_block_param(merge, types::F64);
                let zero = self.f64c(0.0);
                self.b.ins().brif(c, inb, &[], merge, &[zero.into()]);
                self.b.seal_block(inb);
                self.b.switch_to_block(inb);
                let bytes = self.b.ins().ishl_imm_s(off, 3);
                let addr = self.b.ins().iadd(base, bytes);
                let x = self.b.ins().load(types::F64, self.mf, addr, 0);
                self.b.ins().jump(merge, &[x.into()]);
                self.b.seal_block(merge);
                self.b.switch_to_block(merge);
                r
            }
        }
    }

    fn eps(&mut self, ks: &[Aff]) -> Value {
        let vals: Vec<Value> = ks.iter().map(|a| self.aff(a)).collect();
        let n = vals.len() as i64;
        let mut ok = self.b.ins().iconst(types::I8, 1);
        for &v in &vals {
            let c = self.b.ins().icmp_imm_s(IntCC::UnsignedLessThan, v, n);
            ok = self.b.ins().band(ok, c);
        }
        // (b - a) for two indices; (a-b)(b-c)(c-a)/2 for three
        let num = if vals.len() == 2 {
            self.b.ins().isub(vals[1], vals[0])
        } else {
            let x = self.b.ins().isub(vals[0], vals[1]);
            let y = self.b.ins().isub(vals[1], vals[2]);
            let z = self.b.ins().isub(vals[2], vals[0]);
            let xy = self.b.ins().imul(x, y);
            let xyz = self.b.ins().imul(xy, z);
            self.b.ins().sshr_imm_s(xyz, 1)
        };
        let zero = self.b.ins().iconst(types::I64, 0);
        let r = self.b.ins().select(ok, num, zero);
        self.b.ins().fcvt_from_sint(types::F64, r)
    }

    fn call(&mut self, f: Func, args: &[Value]) -> Value {
        match f {
            Func::Sqrt => self.b.ins().sqrt(args[0]),
            Func::Abs => self.b.ins().fabs(args[0]),
            _ => {
                let fr = self
                    .funcs
                    .iter()
                    .find(|(g, _)| *g == f)
                    .map(|(_, r)| *r)
                    .expect("every other function is imported");
                let inst = self.b.ins().call(fr, args);
                self.b.inst_results(inst)[0]
            }
        }
    }

    /// The value of `t`, and its strong-zero flag (an `i8`) when it may be
    /// one.
    fn scalar(&mut self, t: &T) -> (Value, Option<Value>) {
        match t {
            T::Num(x) => (self.f64c(*x), None),
            T::Hoisted(k, _) => self.hoisted[*k],
            T::Load { buf, ixs, flag } => {
                let v = self.load(*buf, ixs);
                let f = flag.map(|fb| {
                    let x = self.load(fb, ixs);
                    let zero = self.f64c(0.0);
                    self.b
                        .ins()
                        .fcmp(cranelift_codegen::ir::condcodes::FloatCC::NotEqual, x, zero)
                });
                (v, f)
            }
            T::Bracket(p) => {
                let c = self.pred(p);
                let one = self.f64c(1.0);
                let zero = self.f64c(0.0);
                let v = self.b.ins().select(c, one, zero);
                let f = self.b.ins().icmp_imm_s(IntCC::Equal, c, 0);
                (v, Some(f))
            }
            T::Eps(ks) => (self.eps(ks), None),
            T::Neg(a) => {
                let (x, f) = self.scalar(a);
                let n = self.b.ins().fneg(x);
                match f {
                    None => (n, None),
                    Some(f) => {
                        let zero = self.f64c(0.0);
                        (self.b.ins().select(f, zero, n), Some(f))
                    }
                }
            }
            T::Call(func, args) => {
                let vs: Vec<Value> = args.iter().map(|a| self.scalar(a).0).collect();
                (self.call(*func, &vs), None)
            }
            T::Bin(op, a, b) => self.bin(*op, a, b),
            T::Sum(s) => self.sum(s),
        }
    }

    fn arith(&mut self, op: BinOp, x: Value, y: Value) -> Value {
        match op {
            BinOp::Add => self.b.ins().fadd(x, y),
            BinOp::Sub => self.b.ins().fsub(x, y),
            BinOp::Mul => self.b.ins().fmul(x, y),
            BinOp::Div => self.b.ins().fdiv(x, y),
        }
    }

    /// Whether `a op b` is computed as `b op a` with `a` evaluated last:
    /// `+` and `*` are exactly commutative in IEEE arithmetic, and a load
    /// (without a strong-zero flag) emitted right before the instruction
    /// that uses it becomes its memory operand (`vaddpd (mem), x`)
    /// instead of a load of its own — so `a + (b + c)`, as the optimiser
    /// leaves sums, costs no extra loads.
    fn swapped(op: BinOp, a: &T) -> bool {
        matches!(op, BinOp::Add | BinOp::Mul) && matches!(a, T::Load { flag: None, .. })
    }

    fn bin(&mut self, op: BinOp, a: &T, b: &T) -> (Value, Option<Value>) {
        // a + b*c with no strong zeros about: one fused multiply-add
        if op == BinOp::Add && !schedule::strong(a) && !schedule::strong(b) {
            if let T::Bin(BinOp::Mul, x, y) = b {
                let va = self.scalar(a).0;
                let vx = self.scalar(x).0;
                let vy = self.scalar(y).0;
                return (self.b.ins().fma(vx, vy, va), None);
            }
        }
        if Self::swapped(op, a) {
            let (y, fy) = self.scalar(b);
            let x = self.scalar(a).0;
            let v = self.arith(op, y, x);
            return match (op, fy) {
                (BinOp::Mul, Some(fy)) => {
                    let zero = self.f64c(0.0);
                    (self.b.ins().select(fy, zero, v), Some(fy))
                }
                // a load without a flag is never a strong zero, so
                // neither is the sum
                _ => (v, None),
            };
        }
        let (x, fx) = self.scalar(a);
        if let (Some(fx), BinOp::Mul | BinOp::Div) = (fx, op) {
            // a strong zero on the left: the right is not evaluated
            let rest = self.b.create_block();
            let merge = self.b.create_block();
            let rv = self.b.append_block_param(merge, types::F64);
            let rf = self.b.append_block_param(merge, types::I8);
            let zero = self.f64c(0.0);
            let one = self.b.ins().iconst(types::I8, 1);
            self.b
                .ins()
                .brif(fx, merge, &[zero.into(), one.into()], rest, &[]);
            self.b.seal_block(rest);
            self.b.switch_to_block(rest);
            let (y, fy) = self.scalar(b);
            let v = self.arith(op, x, y);
            let (v, f) = match (op, fy) {
                (BinOp::Mul, Some(fy)) => {
                    let zero = self.f64c(0.0);
                    (self.b.ins().select(fy, zero, v), fy)
                }
                _ => (v, self.b.ins().iconst(types::I8, 0)),
            };
            self.b.ins().jump(merge, &[v.into(), f.into()]);
            self.b.seal_block(merge);
            self.b.switch_to_block(merge);
            return (rv, Some(rf));
        }
        let (y, fy) = self.scalar(b);
        let v = self.arith(op, x, y);
        match op {
            BinOp::Mul => match fy {
                Some(fy) => {
                    let zero = self.f64c(0.0);
                    (self.b.ins().select(fy, zero, v), Some(fy))
                }
                None => (v, None),
            },
            BinOp::Div => (v, None),
            BinOp::Add | BinOp::Sub => match (fx, fy) {
                (Some(p), Some(q)) => (v, Some(self.b.ins().band(p, q))),
                _ => (v, None),
            },
        }
    }

    // --------------------------------------------------------------- sums

    /// `sum(var in dom ∩ 0..n) body`: its value, and its strong-zero flag
    /// when it may be one (`n > 0` and every term a strong zero; terms
    /// outside a bracket-derived domain are strong zeros).
    fn sum(&mut self, s: &SumT) -> (Value, Option<Value>) {
        let n = self.size(&s.n);
        let mut lo = self.b.ins().iconst(types::I64, 0);
        for bd in &s.dom.lo {
            let x = self.bound(bd);
            lo = self.imax(lo, x);
        }
        let mut hi = n;
        for bd in &s.dom.hi {
            let x = self.bound(bd);
            hi = self.imin(hi, x);
        }
        let strong = schedule::strong(&s.body);
        let mut blocked = BTreeSet::new();
        blocked.insert(s.var);
        let body = self.hoist(s.body.clone(), &blocked);
        // a body with loops of its own runs on one accumulator (see
        // `accum_part`), and the accumulators it would leave untouched are
        // neither made nor looked up after the loop (each lookup would
        // walk back through every block of the inner loops)
        let nested = schedule::has_sum(&body);
        let zero = self.f64c(0.0);
        let accs = if nested {
            let a = self.take(types::F64);
            self.b.def_var(a, zero);
            [a; UNROLL]
        } else {
            [(); UNROLL].map(|_| {
                let a = self.take(types::F64);
                self.b.def_var(a, zero);
                a
            })
        };
        let vaccs = (!nested).then(|| {
            let vzero = self.b.ins().splat(types::F64X2, zero);
            [(); VACCS].map(|_| {
                let a = self.take(types::F64X2);
                self.b.def_var(a, vzero);
                a
            })
        });
        let all = strong.then(|| {
            let v = self.take(types::I8);
            let one = self.b.ins().iconst(types::I8, 1);
            self.b.def_var(v, one);
            v
        });
        let (r, flag) = self.sum_loop(s, n, lo, hi, body, Acc { accs, vaccs, all });
        self.give(types::F64, &accs);
        if let Some(v) = vaccs {
            self.give(types::F64X2, &v);
        }
        if let Some(v) = all {
            self.give(types::I8, &[v]);
        }
        (r, flag)
    }

    /// The loop of [`Gen::sum`] over `lo..hi` (of `0..n`) into `acc`,
    /// then the accumulators combined.
    fn sum_loop(
        &mut self,
        s: &SumT,
        n: Value,
        lo: Value,
        hi: Value,
        body: T,
        acc: Acc,
    ) -> (Value, Option<Value>) {
        let Acc { accs, vaccs, all } = acc;
        let strong = all.is_some();
        // a short sum of literal size without a domain is unrolled: one
        // accumulator, terms in order, the index a constant in each copy
        if let SizeRef::Lit(k) = s.n {
            if s.dom.lo.is_empty()
                && s.dom.hi.is_empty()
                && (0..=UNROLL_SHORT as i64).contains(&k)
                && self.copies * (k.max(1) as usize) <= MAX_COPIES
                && self.copyable(&body, k as usize)
            {
                let k = k as usize;
                self.copies *= k.max(1);
                self.defined[s.var] = true;
                for t in 0..k {
                    let c = self.b.ins().iconst(types::I64, t as i64);
                    self.set_var(s.var, c);
                    self.accumulate(accs[0], all, &body);
                }
                self.defined[s.var] = false;
                self.cur[s.var] = None;
                self.copies /= k.max(1);
                let r = self.b.use_var(accs[0]);
                let flag = if strong || s.dom_strong {
                    let pos = self.b.ins().icmp_imm_s(IntCC::SignedGreaterThan, n, 0);
                    let inner = match all {
                        Some(v) => self.b.use_var(v),
                        None => self.b.ins().icmp(IntCC::SignedGreaterThanOrEqual, lo, hi),
                    };
                    Some(self.b.ins().band(pos, inner))
                } else {
                    None
                };
                return (r, flag);
            }
        }
        self.run_loop(s.var, lo, hi, body, Act::Accum(acc));
        let r = match vaccs {
            None => self.b.use_var(accs[0]),
            Some(vaccs) => {
                // combine: vector accumulators pairwise, then their lanes, then
                // the scalar accumulators
                let vs: Vec<Value> = vaccs.iter().map(|a| self.b.use_var(*a)).collect();
                let v = add_tree(&mut self.b, vs).expect("a vector sum has accumulators");
                let l0 = self.b.ins().extractlane(v, 0);
                let l1 = self.b.ins().extractlane(v, 1);
                let mut level: Vec<Value> = accs.iter().map(|a| self.b.use_var(*a)).collect();
                level.push(l0);
                level.push(l1);
                add_tree(&mut self.b, level).expect("two lanes at least")
            }
        };
        let flag = if strong || s.dom_strong {
            let pos = self.b.ins().icmp_imm_s(IntCC::SignedGreaterThan, n, 0);
            let inner = match all {
                Some(v) => self.b.use_var(v),
                None => self.b.ins().icmp(IntCC::SignedGreaterThanOrEqual, lo, hi),
            };
            Some(self.b.ins().band(pos, inner))
        } else {
            None
        };
        (r, flag)
    }

    /// `acc + body` (one `fma` when the body is a product without strong
    /// zeros). The accumulators are looked up before the body is emitted,
    /// in the loop's head, not after the body's own loops (see
    /// [`Gen::cur`]).
    fn accumulate(&mut self, acc: Variable, all: Option<Variable>, body: &T) {
        let a = self.b.use_var(acc);
        let s = all.map(|all| self.b.use_var(all));
        if all.is_none() {
            if let T::Bin(BinOp::Mul, x, y) = body {
                let vx = self.scalar(x).0;
                let vy = self.scalar(y).0;
                let r = self.b.ins().fma(vx, vy, a);
                self.b.def_var(acc, r);
                return;
            }
        }
        let (v, f) = self.scalar(body);
        let r = self.b.ins().fadd(a, v);
        self.b.def_var(acc, r);
        if let (Some(all), Some(s)) = (all, s) {
            let f = match f {
                Some(f) => f,
                None => self.b.ins().iconst(types::I8, 0),
            };
            let s = self.b.ins().band(s, f);
            self.b.def_var(all, s);
        }
    }

    /// The terms `lo..hi` of a sum: vectorised (`VACCS` vector
    /// accumulators, then one, then scalar terms) when the body allows it,
    /// else unrolled by [`UNROLL`] with independent scalar accumulators
    /// (no strong zeros) or one term at a time.
    fn accum_part(&mut self, var: usize, lo: Value, hi: Value, body: &T, acc: Acc, vector: bool) {
        if acc.all.is_some() {
            self.for_range(var, lo, hi, &mut |g| {
                g.accumulate(acc.accs[0], acc.all, body)
            });
            return;
        }
        let copies = acc.vaccs.filter(|_| self.copyable(body, VACCS + 2));
        let Some(vaccs) = copies else {
            // a body with a loop of its own (see `Gen::sum`), or too large
            // to copy, is emitted once: copies of a loop would multiply at
            // every level of nested sums
            self.for_range(var, lo, hi, &mut |g| g.accumulate(acc.accs[0], None, body));
            return;
        };
        let base = self.take(types::I64);
        self.b.def_var(base, lo);
        if vector && self.vec_ok(body, var) {
            let saved = self.rows.len();
            self.vec_rows(body, var);
            self.strided(base, hi, 2 * VACCS as i64, &mut |g, i| {
                g.vidx = Some(i);
                for (u, va) in vaccs.iter().enumerate() {
                    let iu = g.b.ins().iadd_imm_s(i, 2 * u as i64);
                    g.set_var(var, iu);
                    g.voff = 16 * u as i64;
                    g.vaccumulate(*va, body, var);
                }
                g.voff = 0;
                g.vidx = None;
            });
            self.strided(base, hi, 2, &mut |g, i| {
                g.vidx = Some(i);
                g.set_var(var, i);
                g.vaccumulate(vaccs[0], body, var);
                g.vidx = None;
            });
            self.cur[var] = None;
            self.rows.truncate(saved);
            self.row_sigs.clear();
        } else {
            self.strided(base, hi, UNROLL as i64, &mut |g, i| {
                for (u, a) in acc.accs.iter().enumerate() {
                    let iu = g.b.ins().iadd_imm_s(i, u as i64);
                    g.set_var(var, iu);
                    g.accumulate(*a, None, body);
                }
            });
            self.cur[var] = None;
        }
        let rest = self.b.use_var(base);
        self.give(types::I64, &[base]);
        self.for_range(var, rest, hi, &mut |g| {
            g.accumulate(acc.accs[0], None, body)
        });
    }

    // ------------------------------------------------------------ vectors

    /// Whether `t` can be evaluated two lanes (`var`, `var + 1`) at once:
    /// no strong zeros, no sums, and every load that moves with `var`
    /// walks a unit-stride axis unchecked.
    fn vec_ok(&self, t: &T, var: usize) -> bool {
        if schedule::strong(t) {
            return false;
        }
        self.vec_ok_rec(t, var)
    }

    fn vec_ok_rec(&self, t: &T, var: usize) -> bool {
        match t {
            T::Num(_) => true,
            // a hoisted value that may be a strong zero (a bracket of outer
            // indices, `[2 <= i]` in a loop of `j`) carries a flag the vector
            // code does not read: `0 * NaN` would be NaN, not the strong zero
            T::Hoisted(_, strong) => !strong,
            T::Load { buf, ixs, flag } => {
                if flag.is_some() {
                    return false;
                }
                let on: Vec<usize> = (0..ixs.len())
                    .filter(|&a| schedule::coef(&ixs[a].aff, var) != 0)
                    .collect();
                on.is_empty()
                    || (on.len() == 1
                        && schedule::coef(&ixs[on[0]].aff, var) == 1
                        && self.layout.is_unit(*buf, on[0])
                        && ixs.iter().all(|ix| !ix.checked))
            }
            T::Eps(_) => !schedule::mentions(t, var),
            T::Bin(_, a, b) => self.vec_ok_rec(a, var) && self.vec_ok_rec(b, var),
            T::Neg(a) => self.vec_ok_rec(a, var),
            T::Call(_, args) => args.iter().all(|a| self.vec_ok_rec(a, var)),
            T::Bracket(_) | T::Sum(_) => false,
        }
    }

    /// Before a vector loop over `var`: a row pointer per vector load of
    /// `t`, its address at `var = 0` (loads of one row, e.g. `I[y,x-1]`,
    /// `I[y,x]` and `I[y,x+1]`, share one; the constant becomes the
    /// load's immediate offset). In the loop a load is `row + 8 * i + imm`,
    /// one x86 addressing mode; only `i` advances.
    fn vec_rows(&mut self, t: &T, var: usize) {
        match t {
            T::Load { buf, ixs, .. } if ixs.iter().any(|ix| schedule::coef(&ix.aff, var) != 0) => {
                // the vector axis's constant becomes an immediate offset
                // (loads of one row share a pointer)
                let mut ixs = ixs.clone();
                let mut imm = 0i32;
                for ix in ixs.iter_mut() {
                    // small constants only, so `imm + voff` fits an i32
                    if schedule::coef(&ix.aff, var) != 0 && ix.aff.constant.abs() <= 1 << 20 {
                        imm = (ix.aff.constant * 8) as i32;
                        ix.aff.constant = 0;
                    }
                }
                let key = t as *const T as usize;
                let sig = format!("{buf} {ixs:?}");
                if let Some(&(_, pv)) = self.row_sigs.iter().find(|(s2, _)| *s2 == sig) {
                    self.rows.push((key, pv, imm));
                    return;
                }
                let zero = self.b.ins().iconst(types::I64, 0);
                self.set_var(var, zero);
                let (off, _) = self.offset(*buf, &ixs);
                let bytes = self.b.ins().ishl_imm_s(off, 3);
                let base = self.base(*buf);
                let row = self.b.ins().iadd(base, bytes);
                self.row_sigs.push((sig, row));
                self.rows.push((key, row, imm));
            }
            T::Bin(_, a, b) => {
                self.vec_rows(a, var);
                self.vec_rows(b, var);
            }
            T::Neg(a) => self.vec_rows(a, var),
            T::Call(_, args) => args.iter().for_each(|a| self.vec_rows(a, var)),
            _ => {}
        }
    }

    fn splat(&mut self, x: Value) -> Value {
        self.b.ins().splat(types::F64X2, x)
    }

    /// `t` at `var` and `var + 1` (the variable holds the first lane's
    /// index); `t` passed [`Self::vec_ok`].
    fn vscalar(&mut self, t: &T, var: usize) -> Value {
        match t {
            T::Num(x) => {
                let c = self.f64c(*x);
                self.splat(c)
            }
            T::Hoisted(k, _) => {
                let x = self.hoisted[*k].0;
                self.splat(x)
            }
            T::Load { buf, ixs, .. } if ixs.iter().any(|ix| schedule::coef(&ix.aff, var) != 0) => {
                let key = t as *const T as usize;
                if let (Some(&(_, row, imm)), Some(i)) =
                    (self.rows.iter().find(|(k, _, _)| *k == key), self.vidx)
                {
                    // unit stride, coefficient 1: `row + 8 * i + imm`
                    let bytes = self.b.ins().ishl_imm_s(i, 3);
                    let p = self.b.ins().iadd(row, bytes);
                    let off = self.voff as i32 + imm;
                    return self.b.ins().load(types::F64X2, self.vmf, p, off);
                }
                let (off, _) = self.offset(*buf, ixs);
                let bytes = self.b.ins().ishl_imm_s(off, 3);
                let base = self.base(*buf);
                let addr = self.b.ins().iadd(base, bytes);
                self.b.ins().load(types::F64X2, self.vmf, addr, 0)
            }
            T::Load { .. } | T::Eps(_) | T::Bracket(_) | T::Sum(_) => {
                let x = self.scalar(t).0;
                self.splat(x)
            }
            T::Bin(op, a, b) => {
                if *op == BinOp::Add {
                    if let T::Bin(BinOp::Mul, x, y) = &**b {
                        let va = self.vscalar(a, var);
                        let vx = self.vscalar(x, var);
                        let vy = self.vscalar(y, var);
                        return self.b.ins().fma(vx, vy, va);
                    }
                }
                if Self::swapped(*op, a) {
                    let y = self.vscalar(b, var);
                    let x = self.vscalar(a, var);
                    return self.arith(*op, y, x);
                }
                let x = self.vscalar(a, var);
                let y = self.vscalar(b, var);
                self.arith(*op, x, y)
            }
            T::Neg(a) => {
                let x = self.vscalar(a, var);
                self.b.ins().fneg(x)
            }
            T::Call(f, args) => {
                let vs: Vec<Value> = args.iter().map(|a| self.vscalar(a, var)).collect();
                match f {
                    Func::Sqrt => self.b.ins().sqrt(vs[0]),
                    Func::Abs => self.b.ins().fabs(vs[0]),
                    _ => {
                        // lane by lane
                        let mut lanes = Vec::new();
                        for l in 0..2u8 {
                            let xs: Vec<Value> =
                                vs.iter().map(|v| self.b.ins().extractlane(*v, l)).collect();
                            lanes.push(self.call(*f, &xs));
                        }
                        let v = self.splat(lanes[0]);
                        self.b.ins().insertlane(v, lanes[1], 1)
                    }
                }
            }
        }
    }

    /// `vacc += t` over two lanes (`fma` for a product).
    fn vaccumulate(&mut self, vacc: Variable, t: &T, var: usize) {
        let r = match t {
            T::Bin(BinOp::Mul, x, y) => {
                let vx = self.vscalar(x, var);
                let vy = self.vscalar(y, var);
                let a = self.b.use_var(vacc);
                self.b.ins().fma(vx, vy, a)
            }
            _ => {
                let v = self.vscalar(t, var);
                let a = self.b.use_var(vacc);
                self.b.ins().fadd(a, v)
            }
        };
        self.b.def_var(vacc, r);
    }
}
