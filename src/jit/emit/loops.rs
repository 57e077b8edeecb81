//! Generic loops: a nest scheduled by [`crate::jit::schedule::loops`]
//! (loop order, domains, interchange, blocking) emitted as Cranelift IR.
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
//!   (`f32x4` in `F32`: 16-byte vectors either way, the lanes rounded as
//!   the scalar code rounds them; `fma` only for a sum's accumulation,
//!   `sqrt`, `abs`, `max` and `min` inline, other calls lane by lane)
//!   with a scalar tail: stores of a gen loop whose output axis is
//!   unit-stride ([`VSTORE_UNROLL`] vectors per step, then one), or a sum
//!   into [`VACCS`] vector accumulators. Every moving load and the store
//!   address a row pointer computed before the loop (at index 0; loads of
//!   one row such as `I[y,x-1]`, `I[y,x]`, `I[y,x+1]` share it and differ
//!   by an immediate offset) plus 8 (4 in `F32`) × the loop index, one x86 addressing
//!   mode, so a step advances one register. Other innermost sums without
//!   strong zeros are unrolled by [`UNROLL`] with independent scalar
//!   accumulators (`fma` into each).
//! - **staged calls**: an innermost gen or sum loop (its interior, where
//!   borders are peeled) whose body, without strong zeros, applies `exp`,
//!   `log`, `sin`, `cos` or `tanh` to an argument that moves with the
//!   loop (and has no loop of its own) runs in blocks of [`STAGE_BLOCK`]
//!   iterations: each such argument for the block into a stack buffer
//!   (`f64x2` where the argument allows), one call of the function's slice
//!   kernel ([`crate::vmath`]: AVX-512/AVX2 chosen at run time), then the
//!   body with the calls replaced by unit-stride loads of the buffers
//!   (vectorised as above). At most [`MAX_STAGED`] calls per body.
//!   A sum whose term is the one call, of a unit-stride run (plus a
//!   fixed value), calls the fused sum instead (`Σ f(x + c)` per block,
//!   no buffer); a max/min reduction of a run calls the vector
//!   reduction; a map dividing a run by a fixed value, stored along a
//!   unit-stride axis, calls the vector division, and the other affine
//!   maps of a run with fixed values (`(x ± c) / d`, `(x ± c)·d`, `x·d`,
//!   `x ± c`) the affine map; a sum of a run, or of the square of a run
//!   plus or minus a fixed value (a mean's and a variance's,
//!   `Σ (x - m)·(x - m)` with its two factors written alike), calls the
//!   vector sum (all in [`crate::vmath`], full vector width, `f64`, or
//!   their `f32` forms in `F32`, the stage buffers then holding `f32`s;
//!   the same operations as written, sums reordered only). A `pow(x, y)`
//!   whose arguments (no loops of their own) move with the loop is staged
//!   too: `x` into the stage buffer, `y` into a second one (or, fixed in
//!   the loop, passed as a constant exponent), one call of
//!   [`crate::vmath::einsat_vpow`] (`einsat_vpow_const`) for the block. The affine maps
//!   and sums call their kernel for runs of at least [`MIN_KERNEL_RUN`]
//!   iterations and run inline below that (a branch per run).
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
//!   from the function's budget ([`crate::jit::Options::copy_nodes`]) and only bodies of at most
//!   [`COPY_BODY`] nodes are copied; a sum whose body has a loop of its own
//!   runs on one accumulator with its body emitted once (four unrolled
//!   copies and a tail per level made seven nested sums 78,125 copies of
//!   the innermost body). Cranelift's SSA builder keeps, per variable, a
//!   map over the blocks, and adds a block parameter wherever a lookup
//!   passes a merge: blocks are sealed as soon as their predecessors are
//!   known, loop indices are used as SSA values ([`LoopEmitter::var`]), not looked
//!   up from inside inner loops, and variables are pooled ([`LoopEmitter::take`]).
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
//! Owns the generic loops' code; it follows the [`LoopSchedule`] and the
//! nest's plan and must not decide anything the schedule decides.

use super::common::{
    add_tree, for_blocks, if_blocks_pay, Emits, EntryParams, Levels, Poll, SUM_BLOCK,
};
use crate::jit::ir::affine::{coef, scale, without};
use crate::jit::ir::{
    Cond, IndexExpr, Layout, LoadIndex, LoopProgram, Nest, RowSum, Scalar, SizeRef,
};
use crate::jit::schedule::loops::{
    free_vars, has_sum, mentions, size_within, strong, Bound, LoopSchedule, SchedExpr, SchedFold,
    SchedRed, SchedSum, TILE,
};
use crate::syntax::ast::{BinOp, CmpOp, Func, RedOp};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types, InstBuilder, MemFlagsData, StackSlotData, StackSlotKind, Value,
};
use cranelift_frontend::{FunctionBuilder, Variable};
use std::collections::BTreeSet;

/// Independent accumulators of an innermost sum.
pub const UNROLL: usize = 4;

/// A sum of literal size up to this many terms (and no loop domain) is
/// unrolled completely: no loop, no accumulators to combine (the 3-term
/// sums of `eps` contractions; see the module documentation).
pub const UNROLL_SHORT: usize = 4;

/// Iterations per block of a loop with staged calls
/// ([`LoopEmitter::stage`]).
pub const STAGE_BLOCK: usize = 256;

/// A staged argument the kernels read in place
/// ([`LoopEmitter::run_src`]): the load of a unit-stride run, and an
/// addend with whether it is negated.
type RunSrc = (SchedExpr, Option<(SchedExpr, bool)>);

/// Fewest iterations for which a loop calls a slice kernel of
/// [`crate::vmath`] (the affine maps and moment sums) instead of running
/// inline ([`LoopEmitter::kernel_or_inline`]).
const MIN_KERNEL_RUN: i64 = 32;

/// Terms of a long fused sum ([`LoopEmitter::blocked_sum`]) one kernel
/// call adds: 64 groups of 64 blocks of [`SUM_BLOCK`] (about 4 ms of
/// `exp` terms), enough for the kernel to split them over threads, few
/// enough that a cancelled call stops soon.
const FUSED_RUN: i64 = 64 * 64 * SUM_BLOCK;

/// An affine map's call: the run, its addend (negated when `true`), the
/// factor or divisor, the kind.
type AffinePlan = (
    SchedExpr,
    Option<(SchedExpr, bool)>,
    Option<SchedExpr>,
    crate::vmath::Affine,
);

/// A moment sum's call: the run, its addend, whether the term is squared.
type MomentPlan = (SchedExpr, Option<(SchedExpr, bool)>, bool);

/// Most staged calls in one loop body.
pub const MAX_STAGED: usize = 4;

/// `t` with its stageable calls (see [`LoopEmitter::stage`]) replaced by
/// loads of buffers `first`, `first + 1`, … at index `var`; the calls, in
/// that order, go to `calls`.
fn staged_calls(
    t: &SchedExpr,
    var: usize,
    first: usize,
    calls: &mut Vec<(Func, SchedExpr)>,
) -> SchedExpr {
    match t {
        SchedExpr::Call(f, args)
            if args.len() == 1
                && crate::vmath::has_kernel(*f)
                && calls.len() < MAX_STAGED
                && mentions(&args[0], var)
                && !has_loop(&args[0]) =>
        {
            let buf = first + calls.len();
            calls.push((*f, args[0].clone()));
            SchedExpr::Load {
                buf,
                ixs: vec![LoadIndex {
                    aff: IndexExpr {
                        terms: vec![(var, 1)],
                        constant: 0,
                    },
                    dim: SizeRef::Lit(STAGE_BLOCK as i64),
                    checked: false,
                }],
                flag: None,
            }
        }
        // `pow(x, y)`: the call itself is the staged "argument" (its two
        // arguments are staged apart, [`LoopEmitter::stage`])
        SchedExpr::Call(Func::Pow, args)
            if calls.len() < MAX_STAGED
                && args.iter().any(|a| mentions(a, var))
                && !args.iter().any(has_loop) =>
        {
            let buf = first + calls.len();
            calls.push((Func::Pow, t.clone()));
            SchedExpr::Load {
                buf,
                ixs: vec![LoadIndex {
                    aff: IndexExpr {
                        terms: vec![(var, 1)],
                        constant: 0,
                    },
                    dim: SizeRef::Lit(STAGE_BLOCK as i64),
                    checked: false,
                }],
                flag: None,
            }
        }
        SchedExpr::Bin(op, a, b) => SchedExpr::Bin(
            *op,
            Box::new(staged_calls(a, var, first, calls)),
            Box::new(staged_calls(b, var, first, calls)),
        ),
        SchedExpr::Neg(a) => SchedExpr::Neg(Box::new(staged_calls(a, var, first, calls))),
        SchedExpr::Call(f, args) => SchedExpr::Call(
            *f,
            args.iter()
                .map(|a| staged_calls(a, var, first, calls))
                .collect(),
        ),
        _ => t.clone(),
    }
}

/// Whether `t` has a loop of its own (a sum or a max/min reduction).
fn has_loop(t: &SchedExpr) -> bool {
    match t {
        SchedExpr::Sum(_) | SchedExpr::Reduce(_) => true,
        SchedExpr::Bin(_, a, b) => has_loop(a) || has_loop(b),
        SchedExpr::Neg(a) => has_loop(a),
        SchedExpr::Call(_, args) | SchedExpr::Select(_, args) => args.iter().any(has_loop),
        _ => false,
    }
}

/// Mark the buffers a nest reads or writes (with their strong-zero flag
/// buffers).
fn nest_bufs(p: &LoopProgram, n: &Nest, used: &mut [bool]) {
    fn walk(p: &LoopProgram, s: &Scalar, used: &mut [bool]) {
        match s {
            Scalar::Load(b, _) => {
                used[*b] = true;
                if let Some(f) = p.bufs[*b].flag {
                    used[f] = true;
                }
            }
            Scalar::Num(_) | Scalar::Bracket(_) | Scalar::Eps(_) => {}
            Scalar::Bin(_, a, b) => {
                walk(p, a, used);
                walk(p, b, used);
            }
            Scalar::Neg(a) | Scalar::Sum(_, _, a) => walk(p, a, used),
            Scalar::Reduce(_, _, _, a) => walk(p, a, used),
            Scalar::Call(_, args) => args.iter().for_each(|a| walk(p, a, used)),
            Scalar::Index(_) | Scalar::SizeVal(_) => {}
            Scalar::Select(_, args) => args.iter().for_each(|a| walk(p, a, used)),
            Scalar::Fold(f) => f.init.iter().chain(&f.body).for_each(|a| walk(p, a, used)),
            Scalar::Acc(_) => {}
            Scalar::Gather(b, _, dyns) => {
                used[*b] = true;
                if let Some(f) = p.bufs[*b].flag {
                    used[f] = true;
                }
                dyns.iter().for_each(|(_, g, _)| walk(p, g, used));
            }
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

/// The largest body (in nodes) that is copied at all (see
/// [`crate::jit::COPY_NODES`]): its loops' overhead is small beside its work anyway.
const COPY_BODY: usize = 1 << 10;

/// Vector accumulators of an innermost vectorised sum.
const VACCS: usize = 4;

/// `f64x2` vectors stored per step of a vectorised gen loop (then one
/// vector, then scalars).
pub const VSTORE_UNROLL: usize = 2;

impl<'a> Emits<'a> for LoopEmitter<'a, '_> {
    fn fb(&mut self) -> &mut FunctionBuilder<'a> {
        &mut self.b
    }
}

/// Where a nest's generic loops are emitted: the layout, where each
/// buffer's strides start, the entry block's parameters, the imported
/// scalar functions, and the code-size budget ([`Options::copy_nodes`]).
pub(crate) struct At<'l> {
    pub ptr: types::Type,
    /// The type of the numbers (`F64`, `F32`, or `I64`/`I32` for the
    /// integer formats).
    pub ft: types::Type,
    pub layout: &'l Layout,
    pub stride_at: &'l [usize],
    pub entry: EntryParams,
    pub funcs: Vec<(Func, cranelift_codegen::ir::FuncRef)>,
    pub copy_nodes: usize,
    /// The slice kernels of [`crate::vmath`], for staged calls.
    pub vfuncs: Vec<VFunc>,
    /// The max/min reductions of a run of [`crate::vmath`]
    /// (`src, n -> f64`).
    pub vreduce: Vec<(RedOp, cranelift_codegen::ir::FuncRef)>,
    /// `dst[0..n] = src[0..n] / c` of [`crate::vmath`].
    pub vdiv: cranelift_codegen::ir::FuncRef,
    /// `Σ src[0..n]` of [`crate::vmath`] (`src, n -> f64`).
    pub vsum: cranelift_codegen::ir::FuncRef,
    /// `Σ (src[0..n] + c)²` of [`crate::vmath`] (`src, n, c -> f64`).
    pub vsum_sq: cranelift_codegen::ir::FuncRef,
    /// `dst[0..n] = kind(src[0..n], c, d)` of [`crate::vmath`]
    /// ([`crate::vmath::Affine`]; `src, dst, n, c, d, kind`).
    pub vaffine: cranelift_codegen::ir::FuncRef,
    /// `pow` of [`crate::vmath`]: of two runs (`x, y, dst, n`) and of a
    /// run and a constant exponent (`x, dst, n, c`).
    pub vpow: (
        cranelift_codegen::ir::FuncRef,
        cranelift_codegen::ir::FuncRef,
    ),
}

/// The slice kernels of one function of [`crate::vmath`], imported into
/// the function being emitted.
#[derive(Clone, Copy)]
pub struct VFunc {
    pub f: Func,
    /// `dst[0..n] = f(src[0..n])`
    pub map: cranelift_codegen::ir::FuncRef,
    /// `dst[0..n] = f(src[0..n] + c)`
    pub map_add: cranelift_codegen::ir::FuncRef,
    /// `Σ f(src[0..n] + c)`, returned
    pub sum_add: cranelift_codegen::ir::FuncRef,
}

/// Emit `nest` as generic loops following `sched`, return included, in
/// the function `b` builds (its entry block current); `poll`: the outer
/// loops poll for cancellation; `row_sum`: the row sum the nest stores as
/// it writes each row ([`crate::jit::schedule::rowsum`]). Returns the
/// builder, to be sealed and finalised.
pub(crate) fn emit<'a>(
    mut b: FunctionBuilder<'a>,
    p: &LoopProgram,
    nest: &Nest,
    sched: &LoopSchedule,
    at: At<'_>,
    poll: bool,
    row_sum: Option<RowSum>,
) -> FunctionBuilder<'a> {
    let At {
        ptr,
        ft,
        layout,
        stride_at,
        entry: e,
        funcs,
        copy_nodes,
        vfuncs,
        vreduce,
        vdiv,
        vsum,
        vsum_sq,
        vaffine,
        vpow,
    } = at;
    let mf = MemFlagsData::trusted();
    let mut used = vec![false; p.bufs.len()];
    nest_bufs(p, nest, &mut used);
    if let Some(r) = row_sum {
        used[r.sum] = true;
    }
    let mut bases = Vec::with_capacity(p.bufs.len());
    let mut strides = Vec::with_capacity(p.bufs.len());
    for (bi, buf) in p.bufs.iter().enumerate() {
        if !used[bi] {
            bases.push(None);
            strides.push(vec![]);
            continue;
        }
        bases.push(Some(b.ins().load(ptr, mf, e.bufs, (bi * 8) as i32)));
        let mut s = Vec::new();
        for a in 0..buf.dims.len() {
            s.push(if layout.is_unit(bi, a) {
                b.ins().iconst(types::I64, 1)
            } else {
                b.ins()
                    .load(types::I64, mf, e.strides, ((stride_at[bi] + a) * 8) as i32)
            });
        }
        strides.push(s);
    }
    let sizes: Vec<Value> = (0..p.sizes.len())
        .map(|k| b.ins().load(types::I64, mf, e.sizes, (k * 8) as i32))
        .collect();
    // loops inside loops: the outer ones poll for cancellation
    let poll = poll.then(|| Poll::setup(&mut b, e.sizes, p.sizes.len()));
    let n_bufs = bases.len();
    let narrow = ft.bytes() == 4;
    let mut g = LoopEmitter {
        b,
        ft,
        vt: match ft {
            types::F32 => types::F32X4,
            types::I64 => types::I64X2,
            types::I32 => types::I32X4,
            _ => types::F64X2,
        },
        esh: if narrow { 2 } else { 3 },
        lanes: if narrow { 4 } else { 2 },
        ptr,
        vfuncs,
        vreduce,
        vdiv,
        vsum,
        vsum_sq,
        vaffine,
        vpow,
        n_bufs,
        staging: false,
        bases,
        strides,
        sizes,
        pool: Vec::new(),
        funcs,
        mf,
        vmf: MemFlagsData::new().with_notrap(),
        range: (e.lo, e.hi),
        layout,
        hoisted: Vec::new(),
        hoisted_src: Vec::new(),
        defined: vec![false; p.n_vars],
        copies: 1,
        copy_budget: copy_nodes,
        out_flag: p.bufs[nest.buf].flag,
        rows: Vec::new(),
        row_sigs: Vec::new(),
        vidx: None,
        voff: 0,
        block: None,
        cur: vec![None; p.n_vars],
        poll,
        loops: 0,
        row_sum,
    };
    g.nest(nest, sched);
    g.b.ins().return_(&[]);
    g.b
}

struct LoopEmitter<'a, 'l> {
    b: FunctionBuilder<'a>,
    /// The type of every number (`F64`, or `F32` for a kernel compiled in
    /// [`crate::precision::Precision::F32`], `I64`/`I32` for the integer
    /// formats: then `+ - *` are `iadd`/`isub`/`imul` (wrapping),
    /// `max`/`min` `smax`/`smin`, comparisons signed `icmp`, and nothing
    /// runs on vectors or staged calls).
    ft: types::Type,
    /// The vector type of the vector paths (`F64X2`; `F32X4` in `F32`).
    /// A vector is 16 bytes either way.
    vt: types::Type,
    /// log2 of the element size in bytes (3, or 2 in `F32`).
    esh: i64,
    /// Lanes of [`LoopEmitter::vt`] (2, or 4 in `F32`).
    lanes: i64,
    /// The pointer type.
    ptr: types::Type,
    /// The slice kernels of [`crate::vmath`] ([`At::vfuncs`]).
    vfuncs: Vec<VFunc>,
    /// The reductions of a run ([`At::vreduce`]).
    vreduce: Vec<(RedOp, cranelift_codegen::ir::FuncRef)>,
    /// The division of a run ([`At::vdiv`]).
    vdiv: cranelift_codegen::ir::FuncRef,
    /// The sum of a run ([`At::vsum`]).
    vsum: cranelift_codegen::ir::FuncRef,
    /// The sum of squares of a shifted run ([`At::vsum_sq`]).
    vsum_sq: cranelift_codegen::ir::FuncRef,
    /// The affine maps of a run ([`At::vaffine`]).
    vaffine: cranelift_codegen::ir::FuncRef,
    /// `pow` of runs ([`At::vpow`]).
    vpow: (
        cranelift_codegen::ir::FuncRef,
        cranelift_codegen::ir::FuncRef,
    ),
    /// The buffers of the program; `bases`/`strides` entries beyond are
    /// the stack buffers of staged calls ([`LoopEmitter::stage`]),
    /// unit-stride.
    n_bufs: usize,
    /// Emitting the second phase of a staged loop (no staging inside).
    staging: bool,
    /// Base pointers of the buffers the nest uses.
    bases: Vec<Option<Value>>,
    strides: Vec<Vec<Value>>,
    sizes: Vec<Value>,
    /// Variables free for reuse, with their types ([`LoopEmitter::take`]).
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
    /// What each of [`LoopEmitter::hoisted`] computed (two hoisted
    /// copies of one expression have the same value,
    /// [`LoopEmitter::same_expr`]).
    hoisted_src: Vec<SchedExpr>,
    /// The loop variables whose loops enclose the code being emitted.
    defined: Vec<bool>,
    /// How many copies of the current code peeling, short sums and tiling
    /// have made.
    copies: usize,
    /// What is left of the code-size budget ([`At::copy_nodes`]).
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
    /// Inside a block of tiled loops ([`LoopSchedule::tile`]): the range of
    /// the innermost loop's block.
    block: Option<(Value, Value)>,
    /// Each loop variable's current SSA value where it is known (set with
    /// the variable, read instead of looking the variable up): a lookup
    /// from deep inside nested loops walks back through every block in
    /// between, creating a block parameter at each merge, so looking up
    /// outer indices inside inner loops cost memory quadratic in the
    /// nesting ([`LoopEmitter::var`]).
    cur: Vec<Option<Value>>,
    /// Cancellation polls, when the nest has loops inside loops.
    poll: Option<Poll>,
    /// Loops emitted so far (a loop whose body emitted one polls).
    loops: usize,
    /// The row sum this nest stores as it writes each row
    /// ([`crate::jit::schedule::rowsum`]).
    row_sum: Option<RowSum>,
}

/// What a loop's body does.
#[derive(Clone, Copy)]
enum LoopAction<'n> {
    /// The gen loops from level `k` of the schedule on.
    Level(&'n Nest, &'n LoopSchedule, usize),
    /// Store the body into the nest's buffer.
    Store(&'n Nest),
    /// Add the body to an accumulator.
    Accum(Accumulators),
    /// Reduce the body into a max/min accumulator.
    Reduce(RedOp, Variable),
}

#[derive(Clone, Copy)]
struct Accumulators {
    /// Scalar accumulators (independent, to hide the add latency).
    accs: [Variable; UNROLL],
    /// Vector accumulators (none for a body with loops of its own, which
    /// is not vectorised).
    vaccs: Option<[Variable; VACCS]>,
    /// "Every term so far was a strong zero", when the body may be one.
    all: Option<Variable>,
}

impl LoopEmitter<'_, '_> {
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
    /// ([`LoopEmitter::give`]), and at any time only those of the loops enclosing
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
    /// the function's code-size budget; if so, they are spent.
    fn copyable(&mut self, t: &SchedExpr, k: usize) -> bool {
        let unit = self.copies.max(1) * k.saturating_sub(1);
        if unit == 0 {
            return true;
        }
        match size_within(t, (self.copy_budget / unit).min(COPY_BODY)) {
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

    /// Whether the numbers are integers (`I64`, `I32`).
    fn int(&self) -> bool {
        self.ft.is_int()
    }

    /// The constant `x` in the number type (rounded to it in `F32`; in
    /// the integer types an integer of the width, `±inf` its
    /// largest/smallest integer as [`crate::interp::domain::Int`] has it).
    fn f64c(&mut self, x: f64) -> Value {
        match self.ft {
            types::F32 => self.b.ins().f32const(x as f32),
            types::I64 => self.b.ins().iconst(types::I64, x as i64),
            // (the immediate of a narrow constant holds its bits)
            types::I32 => self.b.ins().iconst(types::I32, i64::from(x as i32 as u32)),
            _ => self.b.ins().f64const(x),
        }
    }

    /// An `i64` integer (an index, a size) as a number.
    fn int_number(&mut self, k: Value) -> Value {
        match self.ft {
            types::I64 => k,
            types::I32 => self.b.ins().ireduce(types::I32, k),
            _ => self.b.ins().fcvt_from_sint(self.ft, k),
        }
    }

    /// `max`/`min` of two numbers (scalars or vectors): IEEE `fmax`/`fmin`
    /// (NaN propagates), signed `smax`/`smin` for integers.
    fn maxmin(&mut self, op: RedOp, a: Value, x: Value) -> Value {
        match (op, self.int()) {
            (RedOp::Max, false) => self.b.ins().fmax(a, x),
            (RedOp::Min, false) => self.b.ins().fmin(a, x),
            (RedOp::Max, true) => self.b.ins().smax(a, x),
            (RedOp::Min, true) => self.b.ins().smin(a, x),
        }
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

    fn nest(&mut self, n: &Nest, ns: &LoopSchedule) {
        self.levels(n, ns, 0, ns.body.clone());
    }

    /// The gen loops from level `k` of the schedule on.
    fn levels(&mut self, n: &Nest, ns: &LoopSchedule, k: usize, body: SchedExpr) {
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
            LoopAction::Store(n)
        } else {
            LoopAction::Level(n, ns, k + 1)
        };
        if let (1, Some(rs)) = (k, self.row_sum) {
            // a row whose sum this nest stores (the schedule fused it
            // only with the loop order `i, j` and no tiles)
            self.run_loop(var, lo, hi, body, act);
            self.row_end(n, rs, lo, hi);
            return;
        }
        if let (Some((buf, ax)), true, true) =
            (ns.tile, k + 2 == ns.order.len(), self.copyable(&body, 2))
        {
            // blocks of the two innermost loops, laid out from their
            // ranges' starts, each block's loops as without tiling; only
            // where they pay (see `schedule::tiled`), else the loops as
            // they are
            let (blo, bhi) = self.level_range(n, ns.order[k + 1]);
            let st = self.strides[buf][ax];
            let bytes = self.b.ins().ishl_imm_s(st, self.esh);
            let span = self.b.ins().isub(bhi, blo);
            let (ta, tb) = TILE;
            self.copies *= 2;
            if_blocks_pay(
                self,
                bytes,
                span,
                &mut |g| {
                    for_blocks(g, lo, hi, ta, None, &mut |g, a0, a1| {
                        for_blocks(g, blo, bhi, tb, None, &mut |g, b0, b1| {
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

    /// The end of a row of a fused row sum (its loop `lo..hi` emitted):
    /// the run-sum kernel adds the row just written (still in L1), and
    /// its total is stored as the sum's element of the row.
    fn row_end(&mut self, n: &Nest, rs: RowSum, lo: Value, hi: Value) {
        let i = self.var(n.vars[0].0);
        let src = self.addr(rs.map, &[i, lo]);
        let count = self.b.ins().isub(hi, lo);
        let call = self.b.ins().call(self.vsum, &[src, count]);
        let total = self.b.inst_results(call)[0];
        let dst = self.addr(rs.sum, &[i]);
        self.b.ins().store(self.mf, total, dst, 0);
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
                let bytes = self.b.ins().ishl_imm_s(o, self.esh);
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
    /// inside it), and refer to them as [`SchedExpr::Hoisted`].
    fn hoist(&mut self, t: SchedExpr, blocked: &BTreeSet<usize>) -> SchedExpr {
        match t {
            SchedExpr::Num(_) | SchedExpr::Hoisted(..) => t,
            t if {
                let mut fv = BTreeSet::new();
                free_vars(&t, &mut fv);
                fv.is_disjoint(blocked)
            } =>
            {
                let (v, f) = self.scalar(&t);
                self.hoisted.push((v, f));
                self.hoisted_src.push(t);
                SchedExpr::Hoisted(self.hoisted.len() - 1, f.is_some())
            }
            SchedExpr::Bin(op, a, b) => {
                let a = self.hoist(*a, blocked);
                let b = self.hoist(*b, blocked);
                SchedExpr::Bin(op, Box::new(a), Box::new(b))
            }
            SchedExpr::Neg(a) => SchedExpr::Neg(Box::new(self.hoist(*a, blocked))),
            SchedExpr::Call(f, args) => SchedExpr::Call(
                f,
                args.into_iter().map(|a| self.hoist(a, blocked)).collect(),
            ),
            SchedExpr::Select(c, args) => SchedExpr::Select(
                c,
                args.into_iter().map(|a| self.hoist(a, blocked)).collect(),
            ),
            SchedExpr::Sum(s) => {
                let mut s = *s;
                let mut inner = blocked.clone();
                inner.insert(s.var);
                s.body = self.hoist(s.body, &inner);
                SchedExpr::Sum(Box::new(s))
            }
            SchedExpr::Reduce(r) => {
                let mut r = *r;
                let mut inner = blocked.clone();
                inner.insert(r.var);
                r.body = self.hoist(r.body, &inner);
                SchedExpr::Reduce(Box::new(r))
            }
            // a gather's integer (`tok[i]` in a loop of `j`) is read once
            SchedExpr::Gather { buf, ixs, dyns } => SchedExpr::Gather {
                buf,
                ixs,
                dyns: dyns
                    .into_iter()
                    .map(|(a, g, c)| (a, Box::new(self.hoist(*g, blocked)), c))
                    .collect(),
            },
            t => t,
        }
    }

    // ------------------------------------------------------------ peeling

    /// Whether the checked index `ix` only leaves its axis at the borders
    /// of `var`'s loop: coefficient ±1 on `var`, every other variable of
    /// an enclosing loop.
    fn peelable(&self, ix: &LoadIndex, var: usize) -> bool {
        ix.checked
            && coef(&ix.aff, var).abs() == 1
            && ix
                .aff
                .terms
                .iter()
                .all(|(x, c)| *x == var || *c == 0 || self.defined[*x])
    }

    /// The interior bounds of `var` from every peelable index of `t`.
    fn peel_bounds(&self, t: &SchedExpr, var: usize, lo: &mut Vec<Bound>, hi: &mut Vec<Bound>) {
        match t {
            SchedExpr::Load { ixs, .. } => {
                for ix in ixs {
                    if !self.peelable(ix, var) {
                        continue;
                    }
                    let r = without(&ix.aff, var);
                    if coef(&ix.aff, var) == 1 {
                        // var + r in 0..d: var in -r .. d - r
                        let m = scale(&r, -1);
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
            SchedExpr::Bin(_, a, b) => {
                self.peel_bounds(a, var, lo, hi);
                self.peel_bounds(b, var, lo, hi);
            }
            SchedExpr::Neg(a) => self.peel_bounds(a, var, lo, hi),
            SchedExpr::Call(_, args) => args.iter().for_each(|a| self.peel_bounds(a, var, lo, hi)),
            SchedExpr::Sum(s) => self.peel_bounds(&s.body, var, lo, hi),
            SchedExpr::Reduce(r) => self.peel_bounds(&r.body, var, lo, hi),
            _ => {}
        }
    }

    /// `t` with the peelable indices of `var` unchecked (for the interior).
    fn uncheck(&self, t: &SchedExpr, var: usize) -> SchedExpr {
        match t {
            SchedExpr::Load { buf, ixs, flag } => SchedExpr::Load {
                buf: *buf,
                ixs: ixs
                    .iter()
                    .map(|ix| LoadIndex {
                        checked: ix.checked && !self.peelable(ix, var),
                        ..ix.clone()
                    })
                    .collect(),
                flag: *flag,
            },
            SchedExpr::Bin(op, a, b) => SchedExpr::Bin(
                *op,
                Box::new(self.uncheck(a, var)),
                Box::new(self.uncheck(b, var)),
            ),
            SchedExpr::Neg(a) => SchedExpr::Neg(Box::new(self.uncheck(a, var))),
            SchedExpr::Call(f, args) => {
                SchedExpr::Call(*f, args.iter().map(|a| self.uncheck(a, var)).collect())
            }
            SchedExpr::Sum(s) => {
                let mut s2 = (**s).clone();
                s2.body = self.uncheck(&s.body, var);
                SchedExpr::Sum(Box::new(s2))
            }
            SchedExpr::Reduce(r) => {
                let mut r2 = (**r).clone();
                r2.body = self.uncheck(&r.body, var);
                SchedExpr::Reduce(Box::new(r2))
            }
            t => t.clone(),
        }
    }

    /// `for var in lo..hi { act(body) }`, with the border iterations of
    /// checked indices peeled off so that the interior runs unchecked.
    fn run_loop(&mut self, var: usize, lo: Value, hi: Value, body: SchedExpr, act: LoopAction) {
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
    fn part(
        &mut self,
        var: usize,
        lo: Value,
        hi: Value,
        body: &SchedExpr,
        act: LoopAction,
        vector: bool,
    ) {
        self.defined[var] = true;
        if vector
            && !self.staging
            && matches!(act, LoopAction::Store(_) | LoopAction::Accum(_))
            && self.stage(var, lo, hi, body, act)
        {
            self.defined[var] = false;
            return;
        }
        match act {
            LoopAction::Level(n, ns, k) => {
                self.for_range(var, lo, hi, &mut |g| g.levels(n, ns, k, body.clone()));
            }
            LoopAction::Store(n) => match if vector {
                self.affine_plan(n, var, body)
            } else {
                None
            } {
                Some(plan) => self.kernel_or_inline(
                    lo,
                    hi,
                    &mut |g| g.affine_call(n, var, lo, hi, &plan),
                    &mut |g| g.store_part(n, var, lo, hi, body, vector),
                ),
                None => self.store_part(n, var, lo, hi, body, vector),
            },
            LoopAction::Accum(acc) => match if vector {
                self.moment_plan(var, body, acc)
            } else {
                None
            } {
                Some(plan) => self.kernel_or_inline(
                    lo,
                    hi,
                    &mut |g| g.moment_call(var, lo, hi, &plan, acc),
                    &mut |g| g.accum_part(var, lo, hi, body, acc, vector),
                ),
                None => self.accum_part(var, lo, hi, body, acc, vector),
            },
            LoopAction::Reduce(op, acc) => self.reduce_part(var, lo, hi, body, op, acc, vector),
        }
        self.defined[var] = false;
    }

    /// A range of a loop that stores its body (on `f64x2` where it can).
    fn store_part(
        &mut self,
        n: &Nest,
        var: usize,
        lo: Value,
        hi: Value,
        body: &SchedExpr,
        vector: bool,
    ) {
        let pos = n.vars.iter().position(|(v, _)| *v == var);
        let unit_out = pos.is_some_and(|a| {
            self.layout.is_unit(n.buf, a) && n.vars.iter().filter(|(v, _)| *v == var).count() == 1
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
                self.strided(base, hi, self.lanes * step as i64, &mut |g, i| {
                    g.vidx = Some(i);
                    let bytes = g.b.ins().ishl_imm_s(i, g.esh);
                    let addr = g.b.ins().iadd(out_row, bytes);
                    for u in 0..step {
                        let iu = g.b.ins().iadd_imm_s(i, g.lanes * u as i64);
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

    /// Whether a sum's term `body` is the one staged call of a run that
    /// [`Self::stage`] adds by one fused kernel call (`Σ f(x[i] + c)`):
    /// its conditions, checked before the sum is split into blocks.
    fn one_fused_call(&mut self, var: usize, body: &SchedExpr) -> bool {
        if strong(body) || self.vfuncs.is_empty() || self.int() {
            return false;
        }
        let first = self.bases.len();
        let mut calls = Vec::new();
        let staged = staged_calls(body, var, first, &mut calls);
        calls.len() == 1
            && matches!(&staged, SchedExpr::Load { buf, .. } if *buf == first)
            && self.vfuncs.iter().any(|v| v.f == calls[0].0)
            && self.run_src(&calls[0].1, var).is_some()
            && self.copyable(body, 2)
    }

    /// A run that a slice kernel of [`crate::vmath`] can take: the kernel's
    /// call when the range has at least [`MIN_KERNEL_RUN`] iterations,
    /// else the loop inline (a call costs about a dozen elements of
    /// inline vector code: rows of 4 or 8 ran 2–5 times slower as calls).
    fn kernel_or_inline(
        &mut self,
        lo: Value,
        hi: Value,
        kernel: &mut dyn FnMut(&mut Self),
        inline: &mut dyn FnMut(&mut Self),
    ) {
        let count = self.b.ins().isub(hi, lo);
        let long = self
            .b
            .ins()
            .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, count, MIN_KERNEL_RUN);
        let (kb, ib, join) = (
            self.b.create_block(),
            self.b.create_block(),
            self.b.create_block(),
        );
        self.b.ins().brif(long, kb, &[], ib, &[]);
        self.b.seal_block(kb);
        self.b.seal_block(ib);
        self.b.switch_to_block(kb);
        kernel(self);
        self.b.ins().jump(join, &[]);
        self.b.switch_to_block(ib);
        inline(self);
        self.b.ins().jump(join, &[]);
        self.b.seal_block(join);
        self.b.switch_to_block(join);
    }

    /// Staged calls: a loop whose body applies `exp`, `log`, `sin`, `cos`
    /// or `tanh` to an argument that moves with the loop runs in blocks
    /// of [`STAGE_BLOCK`] iterations: first each such argument for the
    /// whole block into a stack buffer, then one call of the function's
    /// slice kernel ([`crate::vmath`], vectorised for the CPU) on the
    /// buffer, then the body with those calls replaced by loads of the
    /// buffer (on `f64x2` where the body allows). Only for bodies without
    /// strong zeros, arguments without loops of their own, and at most
    /// [`MAX_STAGED`] calls; returns whether it emitted the loop.
    fn stage(
        &mut self,
        var: usize,
        lo: Value,
        hi: Value,
        body: &SchedExpr,
        act: LoopAction,
    ) -> bool {
        if strong(body) || self.vfuncs.is_empty() || self.int() {
            return false;
        }
        let first = self.bases.len();
        let mut calls = Vec::new();
        let staged = staged_calls(body, var, first, &mut calls);
        if calls.is_empty() || !self.copyable(body, 2) {
            return false;
        }
        let mut kernels = Vec::with_capacity(calls.len());
        for (f, _) in &calls {
            match self.vfuncs.iter().find(|v| v.f == *f) {
                Some(v) => kernels.push((v.map, v.map_add, v.sum_add)),
                // (its own call below; `f64` buffers only: in `F32` the
                // stage buffers hold `f32`s, and `pow` stays a scalar call)
                None if *f == Func::Pow && self.ft == types::F64 => {
                    kernels.push((self.vpow.0, self.vpow.1, self.vpow.0))
                }
                None => return false,
            }
        }
        // an argument that is a unit-stride run of a buffer (plus or minus
        // a value that does not move with the loop) is read by the kernel
        // in place, not copied into a stage buffer
        let srcs: Vec<Option<RunSrc>> = calls
            .iter()
            .map(|(f, a)| {
                if *f != Func::Pow {
                    self.run_src(a, var)
                } else {
                    None
                }
            })
            .collect();
        let direct: Vec<bool> = srcs.iter().map(Option::is_some).collect();
        // a sum whose term is the one call of a run (log-sum-exp's
        // `sum(i:n) exp(x[i] - m)`): one fused kernel call adds the terms
        // of the whole range (in blocks of `vmath::SUM_BLOCK`, as long
        // sums here) and its total goes to an accumulator; no stage
        // buffer is written and read back
        if let (LoopAction::Accum(acc), Some((run, addend))) = (act, &srcs[0]) {
            if acc.all.is_none()
                && calls.len() == 1
                && matches!(&staged, SchedExpr::Load { buf, .. } if *buf == first)
            {
                self.set_var(var, lo);
                let src = self.run_addr(run);
                let count = self.b.ins().isub(hi, lo);
                // (without an addend `f(x + 0)`: only `x = -0` changes,
                // to `+0`, and `f(-0)` and `f(+0)` are equal or zeros of
                // either sign, the same in a sum whose accumulators start
                // at `+0`)
                let c = match addend {
                    None => self.f64c(0.0),
                    Some((c, neg)) => {
                        let (v, _) = self.scalar(c);
                        if *neg {
                            self.b.ins().fneg(v)
                        } else {
                            v
                        }
                    }
                };
                let call = self.b.ins().call(kernels[0].2, &[src, count, c]);
                let total = self.b.inst_results(call)[0];
                let a = self.b.use_var(acc.accs[0]);
                let s = self.b.ins().fadd(a, total);
                self.b.def_var(acc.accs[0], s);
                self.cur[var] = None;
                return true;
            }
        }
        // a pure map (the body is the one call, stored along a unit-stride
        // output axis): the kernel writes the output in place
        let map_out = match act {
            LoopAction::Store(n)
                if calls.len() == 1
                    && self.out_flag.is_none()
                    && matches!(&staged, SchedExpr::Load { buf, .. } if *buf == first)
                    && self.unit_out(n, var) =>
            {
                Some(n)
            }
            _ => None,
        };
        let ptr = self.ptr;
        if let (Some(n), Some(src)) = (map_out, &srcs[0]) {
            // one call over the whole range, input to output
            self.set_var(var, lo);
            let dst = self.out_addr(n, n.buf);
            let count = self.b.ins().isub(hi, lo);
            self.run_call((kernels[0].0, kernels[0].1), src, dst, count);
            self.cur[var] = None;
            return true;
        }
        let slots: Vec<_> = calls
            .iter()
            .zip(&direct)
            .map(|(_, &d)| {
                // (a direct pure map needs no buffer at all)
                let el = self.ft.bytes() as usize;
                let bytes = if d && map_out.is_some() {
                    el
                } else {
                    STAGE_BLOCK * el
                };
                self.b.create_sized_stack_slot(StackSlotData::new(
                    StackSlotKind::ExplicitSlot,
                    bytes as u32,
                    4,
                ))
            })
            .collect();
        // a `pow` whose exponent moves with the loop: a buffer for it
        let pow_y: Vec<_> = calls
            .iter()
            .map(|(f, a)| match a {
                SchedExpr::Call(Func::Pow, args) if *f == Func::Pow && mentions(&args[1], var) => {
                    Some(self.b.create_sized_stack_slot(StackSlotData::new(
                        StackSlotKind::ExplicitSlot,
                        (STAGE_BLOCK * 8) as u32,
                        4,
                    )))
                }
                _ => None,
            })
            .collect();
        for_blocks(
            self,
            lo,
            hi,
            STAGE_BLOCK as i64,
            self.poll,
            &mut |g, b0, b1| {
                // the buffers' element `var` is at `addr + size * (var - b0)`
                // (the stage buffers hold numbers of the program's type:
                // the slice kernels have `f64` and `f32` forms)
                let off0 = g.b.ins().ishl_imm_s(b0, g.esh);
                let n = g.b.ins().isub(b1, b0);
                let mut bases = Vec::with_capacity(calls.len());
                for (c, (_, arg)) in calls.iter().enumerate() {
                    let addr = g.b.ins().stack_addr(ptr, slots[c], 0);
                    let base = g.b.ins().isub(addr, off0);
                    // where the kernel writes: the output row (a pure
                    // map), else the stage buffer
                    let dst = match map_out {
                        Some(nest) => {
                            g.set_var(var, b0);
                            let d = g.out_addr(nest, nest.buf);
                            g.cur[var] = None;
                            d
                        }
                        None => addr,
                    };
                    if let Some(src) = &srcs[c] {
                        g.set_var(var, b0);
                        g.run_call((kernels[c].0, kernels[c].1), src, dst, n);
                        g.cur[var] = None;
                        bases.push(base);
                        continue;
                    }
                    if let (Func::Pow, SchedExpr::Call(_, args)) = &calls[c] {
                        // x into the stage buffer, y into its own (or
                        // the constant exponent), then the kernel
                        g.stage_fill(&args[0], var, base, b0, b1);
                        match pow_y[c] {
                            Some(slot) => {
                                let ya = g.b.ins().stack_addr(ptr, slot, 0);
                                let ybase = g.b.ins().isub(ya, off0);
                                g.stage_fill(&args[1], var, ybase, b0, b1);
                                g.b.ins().call(g.vpow.0, &[addr, ya, dst, n]);
                            }
                            None => {
                                let (y, _) = g.scalar(&args[1]);
                                g.b.ins().call(g.vpow.1, &[addr, dst, n, y]);
                            }
                        }
                        bases.push(base);
                        continue;
                    }
                    let mut from = b0;
                    if g.vec_ok(arg, var) {
                        // a vector of arguments per step, then the rest
                        let saved = g.rows.len();
                        g.vec_rows(arg, var);
                        let bv = g.take(types::I64);
                        g.b.def_var(bv, b0);
                        g.strided(bv, b1, g.lanes, &mut |g, i| {
                            g.vidx = Some(i);
                            g.set_var(var, i);
                            let v = g.vscalar(arg, var);
                            let bytes = g.b.ins().ishl_imm_s(i, g.esh);
                            let a = g.b.ins().iadd(base, bytes);
                            g.b.ins().store(g.vmf, v, a, 0);
                            g.vidx = None;
                        });
                        g.cur[var] = None;
                        g.rows.truncate(saved);
                        g.row_sigs.clear();
                        from = g.b.use_var(bv);
                        g.give(types::I64, &[bv]);
                    }
                    g.for_range(var, from, b1, &mut |g| {
                        let (v, _) = g.scalar(arg);
                        let i = g.var(var);
                        let bytes = g.b.ins().ishl_imm_s(i, g.esh);
                        let a = g.b.ins().iadd(base, bytes);
                        g.b.ins().store(g.mf, v, a, 0);
                    });
                    g.b.ins().call(kernels[c].0, &[addr, dst, n]);
                    bases.push(base);
                }
                if map_out.is_some() {
                    // the kernel wrote the results: no second phase
                    return;
                }
                for base in bases {
                    g.bases.push(Some(base));
                    let one = g.b.ins().iconst(types::I64, 1);
                    g.strides.push(vec![one]);
                }
                g.staging = true;
                g.part(var, b0, b1, &staged, act, true);
                g.staging = false;
                g.bases.truncate(first);
                g.strides.truncate(first);
            },
        );
        true
    }

    /// Write `arg` for `var` in `b0..b1` to a stage buffer whose element
    /// `var` is at `base + 8·var` (as `f64`: `pow` is staged in `F64` only), one
    /// iteration at a time (the arguments of a staged `pow`).
    fn stage_fill(&mut self, arg: &SchedExpr, var: usize, base: Value, b0: Value, b1: Value) {
        self.for_range(var, b0, b1, &mut |g| {
            let (v, _) = g.scalar(arg);
            let i = g.var(var);
            let bytes = g.b.ins().ishl_imm_s(i, 3);
            let a = g.b.ins().iadd(base, bytes);
            g.b.ins().store(g.mf, v, a, 0);
        });
    }

    /// Whether `t` is a load of a program buffer (no flags, no checked
    /// index) that moves with `var` along one unit-stride axis with
    /// coefficient 1: a contiguous run the slice kernels can read in
    /// place.
    fn unit_run(&self, t: &SchedExpr, var: usize) -> bool {
        let SchedExpr::Load { buf, ixs, flag } = t else {
            return false;
        };
        if flag.is_some() || *buf >= self.n_bufs || ixs.iter().any(|ix| ix.checked) {
            return false;
        }
        let on: Vec<usize> = (0..ixs.len())
            .filter(|&a| coef(&ixs[a].aff, var) != 0)
            .collect();
        on.len() == 1 && coef(&ixs[on[0]].aff, var) == 1 && self.layout.is_unit(*buf, on[0])
    }

    /// How a staged argument `t` reaches its kernel without a stage
    /// buffer: a [`LoopEmitter::unit_run`] load, and an addend (negated
    /// for `-`: `x - c` is `x + (-c)` exactly) that does not move with
    /// `var` and has no loop; `None` when it must be staged.
    fn run_src(&self, t: &SchedExpr, var: usize) -> Option<RunSrc> {
        if self.unit_run(t, var) {
            return Some((t.clone(), None));
        }
        let fixed = |c: &SchedExpr| !mentions(c, var) && !has_loop(c) && !strong(c);
        match t {
            SchedExpr::Bin(BinOp::Add, a, c) | SchedExpr::Bin(BinOp::Add, c, a)
                if self.unit_run(a, var) && fixed(c) =>
            {
                Some(((**a).clone(), Some(((**c).clone(), false))))
            }
            SchedExpr::Bin(BinOp::Sub, a, c) if self.unit_run(a, var) && fixed(c) => {
                Some(((**a).clone(), Some(((**c).clone(), true))))
            }
            _ => None,
        }
    }

    /// The kernel call `dst[0..n] = f(run[0..n] (+ c))` of a
    /// [`LoopEmitter::run_src`] argument, the run read from the current
    /// value of the variables.
    fn run_call(
        &mut self,
        (plain, add): (
            cranelift_codegen::ir::FuncRef,
            cranelift_codegen::ir::FuncRef,
        ),
        (run, addend): &RunSrc,
        dst: Value,
        n: Value,
    ) {
        let src = self.run_addr(run);
        match addend {
            None => {
                self.b.ins().call(plain, &[src, dst, n]);
            }
            Some((c, neg)) => {
                let (v, _) = self.scalar(c);
                let v = if *neg { self.b.ins().fneg(v) } else { v };
                self.b.ins().call(add, &[src, dst, n, v]);
            }
        }
    }

    /// The address of the element a [`LoopEmitter::unit_run`] load reads
    /// at the current value of the variables.
    fn run_addr(&mut self, t: &SchedExpr) -> Value {
        let SchedExpr::Load { buf, ixs, .. } = t else {
            unreachable!("run_addr of a load only")
        };
        let (off, _) = self.offset(*buf, ixs);
        let base = self.base(*buf);
        let bytes = self.b.ins().ishl_imm_s(off, self.esh);
        self.b.ins().iadd(base, bytes)
    }

    /// A value fixed in loop `var` that a kernel may take as an argument:
    /// it does not move with the loop and has no loop or strong zero.
    fn fixed_in(&self, c: &SchedExpr, var: usize) -> bool {
        !mentions(c, var) && !has_loop(c) && !strong(c)
    }

    /// The value of a [`RunSrc`] addend (`-c` for `x - c`: `x + (-c)` is
    /// `x - c` exactly), or `+0` without one.
    fn addend(&mut self, addend: &Option<(SchedExpr, bool)>) -> Value {
        match addend {
            None => self.f64c(0.0),
            Some((c, neg)) => {
                let (v, _) = self.scalar(c);
                if *neg {
                    self.b.ins().fneg(v)
                } else {
                    v
                }
            }
        }
    }

    /// An affine map of a run with values fixed in the loop, stored along
    /// a unit-stride output axis: `x / d` (softmax's `E[i,j] / z[i]`), one
    /// call of the vector division ([`crate::vmath::div_to`]); `(x ± c) / d`
    /// (layer normalisation's last pass), `(x ± c)·d`, `x·d` and `x ± c`,
    /// one call of the affine map ([`crate::vmath::affine_to`]): the same
    /// IEEE operations, in the written order, on the vector unit's full
    /// width. The plan of the call, if the body is one of these.
    fn affine_plan(&self, n: &Nest, var: usize, body: &SchedExpr) -> Option<AffinePlan> {
        use crate::vmath::Affine;
        if self.int() || self.staging || self.out_flag.is_some() || !self.unit_out(n, var) {
            return None;
        }
        Some(match body {
            SchedExpr::Bin(BinOp::Div, a, d) if self.fixed_in(d, var) => {
                match self.run_src(a, var)? {
                    (run, None) => (run, None, Some((**d).clone()), Affine::Div),
                    (run, Some(c)) => (run, Some(c), Some((**d).clone()), Affine::AddDiv),
                }
            }
            SchedExpr::Bin(BinOp::Mul, x, y) => {
                // (`x·d = d·x` exactly)
                let (a, d) = if self.fixed_in(y, var) {
                    (x, y)
                } else if self.fixed_in(x, var) {
                    (y, x)
                } else {
                    return None;
                };
                match self.run_src(a, var)? {
                    (run, None) => (run, None, Some((**d).clone()), Affine::Mul),
                    (run, Some(c)) => (run, Some(c), Some((**d).clone()), Affine::AddMul),
                }
            }
            _ => match self.run_src(body, var)? {
                (run, Some(c)) => (run, Some(c), None, Affine::Add),
                _ => return None,
            },
        })
    }

    /// The call of an [`LoopEmitter::affine_plan`] for the range from `lo`
    /// (the count `hi - lo` is [`LoopEmitter::kernel_or_inline`]'s).
    fn affine_call(&mut self, n: &Nest, var: usize, lo: Value, hi: Value, plan: &AffinePlan) {
        use crate::vmath::Affine;
        let (run, addend, d, kind) = plan;
        self.set_var(var, lo);
        let dst = self.out_addr(n, n.buf);
        let src = self.run_addr(run);
        self.cur[var] = None;
        let count = self.b.ins().isub(hi, lo);
        let dv = match d {
            Some(d) => self.scalar(d).0,
            None => self.f64c(1.0),
        };
        if *kind == Affine::Div {
            self.b.ins().call(self.vdiv, &[src, dst, count, dv]);
            return;
        }
        let cv = self.addend(addend);
        let k = self.b.ins().iconst(types::I64, kind.code());
        self.b
            .ins()
            .call(self.vaffine, &[src, dst, count, cv, dv, k]);
    }

    /// `t` with its hoisted values replaced by what they computed
    /// ([`LoopEmitter::hoisted_src`]).
    fn unhoisted(&self, t: &SchedExpr) -> SchedExpr {
        match t {
            SchedExpr::Hoisted(k, _) => self.unhoisted(&self.hoisted_src[*k]),
            SchedExpr::Bin(op, a, b) => SchedExpr::Bin(
                *op,
                Box::new(self.unhoisted(a)),
                Box::new(self.unhoisted(b)),
            ),
            SchedExpr::Neg(a) => SchedExpr::Neg(Box::new(self.unhoisted(a))),
            SchedExpr::Call(f, args) => {
                SchedExpr::Call(*f, args.iter().map(|a| self.unhoisted(a)).collect())
            }
            _ => t.clone(),
        }
    }

    /// Whether `a` and `b` are the same expression, hoisted values
    /// compared by what they computed (the printed form is the whole
    /// tree, numbers at full precision; pure expressions, so the same
    /// value).
    fn same_expr(&self, a: &SchedExpr, b: &SchedExpr) -> bool {
        format!("{:?}", self.unhoisted(a)) == format!("{:?}", self.unhoisted(b))
    }

    /// A sum whose term is a unit-stride run (`Σ X[i,j]`, a mean's) or the
    /// square of a run plus or minus a value fixed in the loop
    /// (`Σ (X[i,j] - mu)·(X[i,j] - mu)`, a variance's, the two factors
    /// written alike), without strong zeros: one call of the vector sum
    /// ([`crate::vmath::sum`], [`crate::vmath::sum_sq_add`]: the written
    /// terms, the product rounded on its own, added in blocks pairwise)
    /// whose total goes to the first accumulator. The plan of the call,
    /// if the body is one of these.
    fn moment_plan(&self, var: usize, body: &SchedExpr, acc: Accumulators) -> Option<MomentPlan> {
        if self.int() || self.staging || acc.all.is_some() {
            return None;
        }
        if self.unit_run(body, var) {
            return Some((body.clone(), None, false));
        }
        let SchedExpr::Bin(BinOp::Mul, a, b) = body else {
            return None;
        };
        if !self.same_expr(a, b) {
            return None;
        }
        let (run, addend) = self.run_src(a, var)?;
        Some((run, addend, true))
    }

    /// The call of a [`LoopEmitter::moment_plan`] for the range from `lo`
    /// to `hi`, its total added to the first accumulator.
    fn moment_call(
        &mut self,
        var: usize,
        lo: Value,
        hi: Value,
        (run, addend, square): &MomentPlan,
        acc: Accumulators,
    ) {
        self.set_var(var, lo);
        let src = self.run_addr(run);
        self.cur[var] = None;
        let count = self.b.ins().isub(hi, lo);
        let call = if *square {
            // (without an addend `(x + 0)²`: only `x = -0` changes, to
            // `+0`, and its square is `+0` either way)
            let c = self.addend(addend);
            self.b.ins().call(self.vsum_sq, &[src, count, c])
        } else {
            self.b.ins().call(self.vsum, &[src, count])
        };
        let total = self.b.inst_results(call)[0];
        let a = self.b.use_var(acc.accs[0]);
        let s = self.b.ins().fadd(a, total);
        self.b.def_var(acc.accs[0], s);
    }

    /// Whether nest `n`'s output axis of `var` is unit-stride and indexed
    /// by `var` alone (stores along `var` are contiguous).
    fn unit_out(&self, n: &Nest, var: usize) -> bool {
        let pos = n.vars.iter().position(|(v, _)| *v == var);
        pos.is_some_and(|a| {
            self.layout.is_unit(n.buf, a) && n.vars.iter().filter(|(v, _)| *v == var).count() == 1
        })
    }

    // ------------------------------------------------------------ scalars

    fn aff(&mut self, a: &IndexExpr) -> Value {
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

    fn pred(&mut self, p: &Cond) -> Value {
        match p {
            Cond::Cmp(op, a, b) => {
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
            Cond::And(a, b) => {
                let (x, y) = (self.pred(a), self.pred(b));
                self.b.ins().band(x, y)
            }
            Cond::Or(a, b) => {
                let (x, y) = (self.pred(a), self.pred(b));
                self.b.ins().bor(x, y)
            }
            Cond::Not(a) => {
                let x = self.pred(a);
                self.b.ins().icmp_imm_s(IntCC::Equal, x, 0)
            }
        }
    }

    /// The offset (elements) of a load and its in-range condition when
    /// some index is checked.
    fn offset(&mut self, buf: usize, ixs: &[LoadIndex]) -> (Value, Option<Value>) {
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

    fn load(&mut self, buf: usize, ixs: &[LoadIndex]) -> Value {
        let (off, ok) = self.offset(buf, ixs);
        let base = self.base(buf);
        match ok {
            None => {
                let bytes = self.b.ins().ishl_imm_s(off, self.esh);
                let addr = self.b.ins().iadd(base, bytes);
                self.b.ins().load(self.ft, self.mf, addr, 0)
            }
            Some(c) => self.guarded_load(base, off, c),
        }
    }

    /// The element `off` of the buffer at `base` where `ok` holds, else 0
    /// (a branch around the load: memory outside the buffer is never read).
    fn guarded_load(&mut self, base: Value, off: Value, ok: Value) -> Value {
        let inb = self.b.create_block();
        let merge = self.b.create_block();
        let r = self.b.append_block_param(merge, self.ft);
        let zero = self.f64c(0.0);
        self.b.ins().brif(ok, inb, &[], merge, &[zero.into()]);
        self.b.seal_block(inb);
        self.b.switch_to_block(inb);
        let bytes = self.b.ins().ishl_imm_s(off, self.esh);
        let addr = self.b.ins().iadd(base, bytes);
        let x = self.b.ins().load(self.ft, self.mf, addr, 0);
        self.b.ins().jump(merge, &[x.into()]);
        self.b.seal_block(merge);
        self.b.switch_to_block(merge);
        r
    }

    /// A load with gathered axes: each gathered index is the integer of
    /// its scalar (saturating: NaN is 0, never a trap; sign-extended in
    /// `I32`) plus its constant;
    /// every index outside its axis (none, after the call's check, except
    /// where the integer array was read off its own axes) reads 0, never
    /// memory.
    fn gather(
        &mut self,
        buf: usize,
        ixs: &[LoadIndex],
        dyns: &[(usize, Box<SchedExpr>, i64)],
    ) -> Value {
        let mut off = self.b.ins().iconst(types::I64, 0);
        let mut ok = self.b.ins().iconst(types::I8, 1);
        for (a, ix) in ixs.iter().enumerate() {
            let i = match dyns.iter().find(|d| d.0 == a) {
                Some((_, g, c)) => {
                    let x = self.scalar(g).0;
                    // the integer array's element, in the kernel's element
                    // type: an integer already in the integer formats
                    let k = match self.ft {
                        types::I64 => x,
                        types::I32 => self.b.ins().sextend(types::I64, x),
                        _ => self.b.ins().fcvt_to_sint_sat(types::I64, x),
                    };
                    let c = self.b.ins().iconst(types::I64, *c);
                    self.b.ins().iadd(k, c)
                }
                None => self.aff(&ix.aff),
            };
            if ix.checked || dyns.iter().any(|d| d.0 == a) {
                let d = self.size(&ix.dim);
                let c = self.b.ins().icmp(IntCC::UnsignedLessThan, i, d);
                ok = self.b.ins().band(ok, c);
            }
            let t = self.b.ins().imul(i, self.strides[buf][a]);
            off = self.b.ins().iadd(off, t);
        }
        let base = self.base(buf);
        self.guarded_load(base, off, ok)
    }

    fn eps(&mut self, ks: &[IndexExpr]) -> Value {
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
        self.int_number(r)
    }

    fn call(&mut self, f: Func, args: &[Value]) -> Value {
        if self.int() {
            // an integral program calls `max` and `min` only
            return match f {
                Func::Min => self.b.ins().smin(args[0], args[1]),
                _ => self.b.ins().smax(args[0], args[1]),
            };
        }
        match f {
            Func::Sqrt => self.b.ins().sqrt(args[0]),
            Func::Abs => self.b.ins().fabs(args[0]),
            Func::Max | Func::Min => self.min_max(f, args[0], args[1]),
            _ => {
                let fr = self
                    .funcs
                    .iter()
                    .find(|(g, _)| *g == f)
                    .map(|(_, r)| *r)
                    .expect("every other function is imported");
                if self.ft == types::F32 {
                    // the f64 function on the (exact) widened arguments,
                    // its result rounded to f32, as the interpreter's F32
                    let wide: Vec<Value> = args
                        .iter()
                        .map(|a| self.b.ins().fpromote(types::F64, *a))
                        .collect();
                    let inst = self.b.ins().call(fr, &wide);
                    let r = self.b.inst_results(inst)[0];
                    return self.b.ins().fdemote(types::F32, r);
                }
                let inst = self.b.ins().call(fr, args);
                self.b.inst_results(inst)[0]
            }
        }
    }

    /// The binary `max(a, b)` or `min(a, b)` of floats (scalars of the
    /// kernel's type or its vectors, lane by lane), inline: Rust's
    /// `f64::max`/`min`, which the interpreter and the called function
    /// this replaces compute, as the compiler lowers them on x86-64
    /// (`maxsd`/`minsd` with a NaN check of the first argument, the same
    /// sequence as that function's code): `b` when `a` is NaN, else `b`
    /// when it is larger (smaller), else `a` (so a NaN `b` gives `a`, and
    /// of `-0` and `+0` the first argument). The comparison and select
    /// are Cranelift's pattern for one `maxsd`/`maxpd` (`minsd`/`minpd`).
    fn min_max(&mut self, f: Func, a: Value, b: Value) -> Value {
        use cranelift_codegen::ir::condcodes::FloatCC;
        let ty = self.b.func.dfg.value_type(a);
        // `b` beats `a`: `a < b` for max, `b < a` for min
        let beats = match f {
            Func::Max => self.b.ins().fcmp(FloatCC::LessThan, a, b),
            _ => self.b.ins().fcmp(FloatCC::LessThan, b, a),
        };
        let nan = self.b.ins().fcmp(FloatCC::Unordered, a, a);
        if ty.is_vector() {
            let le = MemFlagsData::new().with_endianness(cranelift_codegen::ir::Endianness::Little);
            let beats = self.b.ins().bitcast(ty, le, beats);
            let m = self.b.ins().bitselect(beats, b, a);
            let nan = self.b.ins().bitcast(ty, le, nan);
            self.b.ins().bitselect(nan, b, m)
        } else {
            let m = self.b.ins().select(beats, b, a);
            self.b.ins().select(nan, b, m)
        }
    }

    /// The value of `t`, and its strong-zero flag (an `i8`) when it may be
    /// one.
    fn scalar(&mut self, t: &SchedExpr) -> (Value, Option<Value>) {
        match t {
            SchedExpr::Num(x) => (self.f64c(*x), None),
            SchedExpr::Hoisted(k, _) => self.hoisted[*k],
            SchedExpr::Load { buf, ixs, flag } => {
                let v = self.load(*buf, ixs);
                let f = flag.map(|fb| {
                    let x = self.load(fb, ixs);
                    if self.int() {
                        return self.b.ins().icmp_imm_s(IntCC::NotEqual, x, 0);
                    }
                    let zero = self.f64c(0.0);
                    self.b
                        .ins()
                        .fcmp(cranelift_codegen::ir::condcodes::FloatCC::NotEqual, x, zero)
                });
                (v, f)
            }
            SchedExpr::Bracket(p) => {
                let c = self.pred(p);
                let one = self.f64c(1.0);
                let zero = self.f64c(0.0);
                let v = self.b.ins().select(c, one, zero);
                let f = self.b.ins().icmp_imm_s(IntCC::Equal, c, 0);
                (v, Some(f))
            }
            SchedExpr::Eps(ks) => (self.eps(ks), None),
            SchedExpr::Neg(a) => {
                let (x, f) = self.scalar(a);
                let n = if self.int() {
                    self.b.ins().ineg(x)
                } else {
                    self.b.ins().fneg(x)
                };
                match f {
                    None => (n, None),
                    Some(f) => {
                        let zero = self.f64c(0.0);
                        (self.b.ins().select(f, zero, n), Some(f))
                    }
                }
            }
            SchedExpr::Call(func, args) => {
                let vs: Vec<Value> = args.iter().map(|a| self.scalar(a).0).collect();
                (self.call(*func, &vs), None)
            }
            SchedExpr::Bin(op, a, b) => self.bin(*op, a, b),
            SchedExpr::Gather { buf, ixs, dyns } => (self.gather(*buf, ixs, dyns), None),
            SchedExpr::Sum(s) => self.sum(s),
            SchedExpr::Reduce(r) => (self.reduce(r), None),
            SchedExpr::Fold(f) => (self.fold(f), None),
            SchedExpr::Acc(k) => (
                self.cur[*k].expect("an accumulator is read only inside its fold"),
                None,
            ),
            SchedExpr::Index(a) => {
                let k = self.aff(a);
                (self.int_number(k), None)
            }
            SchedExpr::SizeVal(n) => {
                let k = self.size(n);
                (self.int_number(k), None)
            }
            SchedExpr::Select(c, args)
                if args.len() >= 2 && args[args.len() - 2..].iter().any(has_sum) =>
            {
                // a side with a loop: branch, so only the chosen side runs
                let k = args.len() - 2;
                let vs: Vec<Value> = args[..k].iter().map(|a| self.scalar(a).0).collect();
                let cv = self.sel_cond(c, &mut vs.into_iter());
                let then_b = self.b.create_block();
                let else_b = self.b.create_block();
                let merge = self.b.create_block();
                let r = self.b.append_block_param(merge, self.ft);
                self.b.ins().brif(cv, then_b, &[], else_b, &[]);
                self.b.seal_block(then_b);
                self.b.seal_block(else_b);
                self.b.switch_to_block(then_b);
                let x = self.scalar(&args[k]).0;
                self.b.ins().jump(merge, &[x.into()]);
                self.b.switch_to_block(else_b);
                let y = self.scalar(&args[k + 1]).0;
                self.b.ins().jump(merge, &[y.into()]);
                self.b.seal_block(merge);
                self.b.switch_to_block(merge);
                (r, None)
            }
            SchedExpr::Select(c, args) => {
                // cheap sides: both are computed and one is selected
                // (`fcmp` + `select`); neither traps (loads off the axis
                // are checked), and the other's value, NaN or not, is
                // dropped
                let vs: Vec<Value> = args.iter().map(|a| self.scalar(a).0).collect();
                let mut it = vs.iter().copied();
                let cv = self.sel_cond(c, &mut it);
                let x = it.next().expect("a select has two sides");
                let y = it.next().expect("a select has two sides");
                (self.b.ins().select(cv, x, y), None)
            }
        }
    }

    /// A `where` condition over the values of its compared numbers, in
    /// order (an `i8`, IEEE comparisons: ordered except `!=`).
    fn sel_cond(
        &mut self,
        c: &crate::jit::ir::SelCond,
        vals: &mut impl Iterator<Item = Value>,
    ) -> Value {
        use cranelift_codegen::ir::condcodes::FloatCC;
        match c {
            crate::jit::ir::SelCond::Cmp(op) => {
                let x = vals.next().expect("a comparison has two sides");
                let y = vals.next().expect("a comparison has two sides");
                if self.int() {
                    let cc = match op {
                        CmpOp::Eq => IntCC::Equal,
                        CmpOp::Ne => IntCC::NotEqual,
                        CmpOp::Lt => IntCC::SignedLessThan,
                        CmpOp::Le => IntCC::SignedLessThanOrEqual,
                        CmpOp::Gt => IntCC::SignedGreaterThan,
                        CmpOp::Ge => IntCC::SignedGreaterThanOrEqual,
                    };
                    return self.b.ins().icmp(cc, x, y);
                }
                let cc = match op {
                    CmpOp::Eq => FloatCC::Equal,
                    CmpOp::Ne => FloatCC::NotEqual,
                    CmpOp::Lt => FloatCC::LessThan,
                    CmpOp::Le => FloatCC::LessThanOrEqual,
                    CmpOp::Gt => FloatCC::GreaterThan,
                    CmpOp::Ge => FloatCC::GreaterThanOrEqual,
                };
                self.b.ins().fcmp(cc, x, y)
            }
            crate::jit::ir::SelCond::And(a, b) => {
                let x = self.sel_cond(a, vals);
                let y = self.sel_cond(b, vals);
                self.b.ins().band(x, y)
            }
            crate::jit::ir::SelCond::Or(a, b) => {
                let x = self.sel_cond(a, vals);
                let y = self.sel_cond(b, vals);
                self.b.ins().bor(x, y)
            }
            crate::jit::ir::SelCond::Not(a) => {
                let x = self.sel_cond(a, vals);
                self.b.ins().icmp_imm_s(IntCC::Equal, x, 0)
            }
        }
    }

    fn arith(&mut self, op: BinOp, x: Value, y: Value) -> Value {
        if self.int() {
            return match op {
                BinOp::Add => self.b.ins().iadd(x, y),
                BinOp::Sub => self.b.ins().isub(x, y),
                BinOp::Mul => self.b.ins().imul(x, y),
                // an integral program has no division (never emitted)
                BinOp::Div => self.f64c(0.0),
            };
        }
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
    fn swapped(op: BinOp, a: &SchedExpr) -> bool {
        matches!(op, BinOp::Add | BinOp::Mul) && matches!(a, SchedExpr::Load { flag: None, .. })
    }

    fn bin(&mut self, op: BinOp, a: &SchedExpr, b: &SchedExpr) -> (Value, Option<Value>) {
        // (`a + b*c` is not fused into one multiply-add: the product's
        // rounding is the program's, as in the interpreter and numpy; see
        // docs/fp-contract.md. Only a sum's accumulation fuses.)
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
            let rv = self.b.append_block_param(merge, self.ft);
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
    fn sum(&mut self, s: &SchedSum) -> (Value, Option<Value>) {
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
        let strong = strong(&s.body);
        let mut blocked = BTreeSet::new();
        blocked.insert(s.var);
        let body = self.hoist(s.body.clone(), &blocked);
        // a body with loops of its own runs on one accumulator (see
        // `accum_part`), and the accumulators it would leave untouched are
        // neither made nor looked up after the loop (each lookup would
        // walk back through every block of the inner loops)
        let nested = has_sum(&body);
        let zero = self.f64c(0.0);
        let accs = if nested {
            let a = self.take(self.ft);
            self.b.def_var(a, zero);
            [a; UNROLL]
        } else {
            [(); UNROLL].map(|_| {
                let a = self.take(self.ft);
                self.b.def_var(a, zero);
                a
            })
        };
        let vaccs = (!nested).then(|| {
            let vzero = self.b.ins().splat(self.vt, zero);
            [(); VACCS].map(|_| {
                let a = self.take(self.vt);
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
        let (r, flag) = self.sum_loop(s, n, lo, hi, body, Accumulators { accs, vaccs, all });
        self.give(self.ft, &accs);
        if let Some(v) = vaccs {
            self.give(self.vt, &v);
        }
        if let Some(v) = all {
            self.give(types::I8, &[v]);
        }
        (r, flag)
    }

    /// `max(var:n) body` / `min(var:n) body`: one accumulator from the
    /// identity (-inf / +inf), `fmax` / `fmin` per term (IEEE 754-2019
    /// `maximum` / `minimum`: NaN propagates, -0 < +0, so the result does
    /// not depend on the order of the terms). A term that is a strong zero
    /// counts as 0. Loop-invariant parts of the body are hoisted and
    /// checked indices peeled as in a sum's loop.
    fn reduce(&mut self, r: &SchedRed) -> Value {
        let n = self.size(&r.n);
        let lo = self.b.ins().iconst(types::I64, 0);
        let mut blocked = BTreeSet::new();
        blocked.insert(r.var);
        let body = self.hoist(r.body.clone(), &blocked);
        let acc = self.take(self.ft);
        let init = self.f64c(r.op.identity());
        self.b.def_var(acc, init);
        self.run_loop(r.var, lo, n, body, LoopAction::Reduce(r.op, acc));
        let v = self.b.use_var(acc);
        self.give(self.ft, &[acc]);
        v
    }

    /// `fold(var:n, acc = init) body`: one Cranelift variable per leaf of
    /// the accumulator, set from `init` before the loop; each step
    /// computes every leaf of the body from the accumulator's values at
    /// the start of the step, then sets them all (as the interpreter
    /// binds `acc` to the whole previous value). One loop, in order; the
    /// parts of the body that read neither the index nor the accumulator
    /// are computed once before it. Returns leaf `pick` of the result.
    fn fold(&mut self, f: &SchedFold) -> Value {
        let inits: Vec<Value> = f.init.iter().map(|t| self.scalar(t).0).collect();
        let mut blocked = BTreeSet::new();
        blocked.insert(f.var);
        blocked.extend(f.slots.iter().copied());
        let body: Vec<SchedExpr> = f
            .body
            .iter()
            .map(|t| self.hoist(t.clone(), &blocked))
            .collect();
        let accs: Vec<Variable> = f.slots.iter().map(|_| self.take(self.ft)).collect();
        for (v, x) in accs.iter().zip(&inits) {
            self.b.def_var(*v, *x);
        }
        let n = self.size(&f.n);
        let lo = self.b.ins().iconst(types::I64, 0);
        self.defined[f.var] = true;
        self.for_range(f.var, lo, n, &mut |me| {
            for (k, v) in f.slots.iter().zip(&accs) {
                me.cur[*k] = Some(me.b.use_var(*v));
            }
            let next: Vec<Value> = body.iter().map(|t| me.scalar(t).0).collect();
            for (v, x) in accs.iter().zip(next) {
                me.b.def_var(*v, x);
            }
            for k in &f.slots {
                me.cur[*k] = None;
            }
        });
        self.defined[f.var] = false;
        let out: Vec<Value> = accs.iter().map(|v| self.b.use_var(*v)).collect();
        self.give(self.ft, &accs);
        out[f.pick]
    }

    /// `acc = op(acc, body)` for one term of a max/min reduction.
    fn reduce_step(&mut self, op: RedOp, acc: Variable, body: &SchedExpr) {
        let a = self.b.use_var(acc);
        let x = self.scalar(body).0;
        let m = self.maxmin(op, a, x);
        self.b.def_var(acc, m);
    }

    /// The terms `lo..hi` of a max/min reduction into `acc`: on `f64x2`
    /// vectors ([`VACCS`] vector accumulators, `fmax`/`fmin` lane by lane,
    /// then one vector, then scalar terms) when the body allows it, as an
    /// innermost sum's are; else one term at a time. The lanes are combined
    /// at the end, which is exact whatever the order.
    #[allow(clippy::too_many_arguments)]
    fn reduce_part(
        &mut self,
        var: usize,
        lo: Value,
        hi: Value,
        body: &SchedExpr,
        op: RedOp,
        acc: Variable,
        vector: bool,
    ) {
        // the reduction of a run (`max(j:m) X[i,j]`): one call of the
        // vector kernel, whose result joins the accumulator (`maximum` and
        // `minimum` are exactly associative, any order agrees bit for bit)
        if vector && !self.int() && self.unit_run(body, var) {
            if let Some(&(_, kernel)) = self.vreduce.iter().find(|(o, _)| *o == op) {
                self.set_var(var, lo);
                let src = self.run_addr(body);
                let count = self.b.ins().isub(hi, lo);
                let call = self.b.ins().call(kernel, &[src, count]);
                let r = self.b.inst_results(call)[0];
                let m = self.b.use_var(acc);
                let m = self.maxmin(op, m, r);
                self.b.def_var(acc, m);
                self.cur[var] = None;
                return;
            }
        }
        if !(vector && self.vec_ok(body, var) && self.copyable(body, VACCS + 2)) {
            self.for_range(var, lo, hi, &mut |g| g.reduce_step(op, acc, body));
            return;
        }
        let init = self.f64c(op.identity());
        let vinit = self.splat(init);
        let vaccs = [(); VACCS].map(|_| {
            let a = self.take(self.vt);
            self.b.def_var(a, vinit);
            a
        });
        let base = self.take(types::I64);
        self.b.def_var(base, lo);
        let saved = self.rows.len();
        self.vec_rows(body, var);
        self.strided(base, hi, self.lanes * VACCS as i64, &mut |g, i| {
            g.vidx = Some(i);
            for (u, va) in vaccs.iter().enumerate() {
                let iu = g.b.ins().iadd_imm_s(i, g.lanes * u as i64);
                g.set_var(var, iu);
                g.voff = 16 * u as i64;
                g.vreduce_step(op, *va, body, var);
            }
            g.voff = 0;
            g.vidx = None;
        });
        self.strided(base, hi, self.lanes, &mut |g, i| {
            g.vidx = Some(i);
            g.set_var(var, i);
            g.vreduce_step(op, vaccs[0], body, var);
            g.vidx = None;
        });
        self.cur[var] = None;
        self.rows.truncate(saved);
        self.row_sigs.clear();
        let pick = |g: &mut Self, a: Value, b: Value| g.maxmin(op, a, b);
        let mut v = self.b.use_var(vaccs[0]);
        for va in &vaccs[1..] {
            let w = self.b.use_var(*va);
            v = pick(self, v, w);
        }
        let ls: Vec<Value> = (0..self.lanes as u8)
            .map(|l| self.b.ins().extractlane(v, l))
            .collect();
        let mut m = self.b.use_var(acc);
        for x in ls {
            m = pick(self, m, x);
        }
        self.b.def_var(acc, m);
        self.give(self.vt, &vaccs);
        let rest = self.b.use_var(base);
        self.give(types::I64, &[base]);
        self.for_range(var, rest, hi, &mut |g| g.reduce_step(op, acc, body));
    }

    /// `vacc = op(vacc, t)` over every lane.
    fn vreduce_step(&mut self, op: RedOp, vacc: Variable, t: &SchedExpr, var: usize) {
        let v = self.vscalar(t, var);
        let a = self.b.use_var(vacc);
        let r = self.maxmin(op, a, v);
        self.b.def_var(vacc, r);
    }

    /// The loop of [`LoopEmitter::sum`] over `lo..hi` (of `0..n`) into `acc`,
    /// then the accumulators combined.
    fn sum_loop(
        &mut self,
        s: &SchedSum,
        n: Value,
        lo: Value,
        hi: Value,
        body: SchedExpr,
        acc: Accumulators,
    ) -> (Value, Option<Value>) {
        let Accumulators {
            accs,
            vaccs: _,
            all,
        } = acc;
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
        // blocks for a long innermost sum (a sum with sums inside runs
        // as written: its terms are long computations already, and the
        // levels' variables, live across every inner loop, would make the
        // register allocator's work grow faster than the nesting)
        let short = matches!(s.n, SizeRef::Lit(k) if k <= SUM_BLOCK) || acc.vaccs.is_none();
        let r = if short {
            self.run_loop(s.var, lo, hi, body, LoopAction::Accum(acc));
            self.combine(&acc)
        } else {
            self.blocked_sum(s.var, lo, hi, body, acc)
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

    /// The value of a sum's accumulators: vector accumulators pairwise,
    /// then their lanes, then the scalar accumulators.
    fn combine(&mut self, acc: &Accumulators) -> Value {
        match acc.vaccs {
            None => self.b.use_var(acc.accs[0]),
            Some(vaccs) => {
                let vs: Vec<Value> = vaccs.iter().map(|a| self.b.use_var(*a)).collect();
                let v = add_tree(&mut self.b, vs).expect("a vector sum has accumulators");
                let ls: Vec<Value> = (0..self.lanes as u8)
                    .map(|l| self.b.ins().extractlane(v, l))
                    .collect();
                let mut level: Vec<Value> = acc.accs.iter().map(|a| self.b.use_var(*a)).collect();
                level.extend(ls);
                add_tree(&mut self.b, level).expect("two lanes at least")
            }
        }
    }

    /// An innermost sum whose length is not known to be at most [`SUM_BLOCK`]: in
    /// blocks of that many terms, each on fresh accumulators, its total
    /// kept by [`Levels`]. The strong-zero flag runs across the blocks.
    fn blocked_sum(
        &mut self,
        var: usize,
        lo: Value,
        hi: Value,
        body: SchedExpr,
        acc: Accumulators,
    ) -> Value {
        if acc.all.is_none() && self.one_fused_call(var, &body) {
            // log-sum-exp's `sum(i:n) exp(x[i] - m)`: one fused kernel
            // call per [`FUSED_RUN`] terms adds them in these blocks and
            // levels itself (`vmath::sum_of`), so it may split them over
            // the call's threads (`vmath::with_threads`); the runs' totals
            // go to the accumulator in order, the cancellation flag
            // checked between runs
            for_blocks(self, lo, hi, FUSED_RUN, self.poll, &mut |g, b0, b1| {
                g.run_loop(var, b0, b1, body.clone(), LoopAction::Accum(acc));
            });
            return self.combine(&acc);
        }
        let levels = Levels::new_typed(&mut self.b, 1, self.ft);
        for_blocks(self, lo, hi, SUM_BLOCK, self.poll, &mut |g, b0, b1| {
            let zero = g.f64c(0.0);
            for a in acc.accs {
                g.b.def_var(a, zero);
            }
            if let Some(vaccs) = acc.vaccs {
                let vzero = g.b.ins().splat(g.vt, zero);
                for a in vaccs {
                    g.b.def_var(a, vzero);
                }
            }
            g.run_loop(var, b0, b1, body.clone(), LoopAction::Accum(acc));
            let r = g.combine(&acc);
            levels.add(&mut g.b, &[r]);
        });
        levels.totals(&mut self.b)[0]
    }

    /// `acc + body` (one `fma` when the body is a product without strong
    /// zeros). The accumulators are looked up before the body is emitted,
    /// in the loop's head, not after the body's own loops (see
    /// [`LoopEmitter::cur`]).
    fn accumulate(&mut self, acc: Variable, all: Option<Variable>, body: &SchedExpr) {
        let a = self.b.use_var(acc);
        let s = all.map(|all| self.b.use_var(all));
        if all.is_none() && !self.int() {
            if let SchedExpr::Bin(BinOp::Mul, x, y) = body {
                let vx = self.scalar(x).0;
                let vy = self.scalar(y).0;
                let r = self.b.ins().fma(vx, vy, a);
                self.b.def_var(acc, r);
                return;
            }
        }
        let (v, f) = self.scalar(body);
        let r = if self.int() {
            self.b.ins().iadd(a, v)
        } else {
            self.b.ins().fadd(a, v)
        };
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
    fn accum_part(
        &mut self,
        var: usize,
        lo: Value,
        hi: Value,
        body: &SchedExpr,
        acc: Accumulators,
        vector: bool,
    ) {
        if acc.all.is_some() {
            self.for_range(var, lo, hi, &mut |g| {
                g.accumulate(acc.accs[0], acc.all, body)
            });
            return;
        }
        let copies = acc.vaccs.filter(|_| self.copyable(body, VACCS + 2));
        let Some(vaccs) = copies else {
            // a body with a loop of its own (see `LoopEmitter::sum`), or too large
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
            self.strided(base, hi, self.lanes * VACCS as i64, &mut |g, i| {
                g.vidx = Some(i);
                for (u, va) in vaccs.iter().enumerate() {
                    let iu = g.b.ins().iadd_imm_s(i, g.lanes * u as i64);
                    g.set_var(var, iu);
                    g.voff = 16 * u as i64;
                    g.vaccumulate(*va, body, var);
                }
                g.voff = 0;
                g.vidx = None;
            });
            self.strided(base, hi, self.lanes, &mut |g, i| {
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

    /// Whether `t` can be evaluated [`LoopEmitter::lanes`] lanes (`var`,
    /// `var + 1`, ...) at once:
    /// no strong zeros, no sums, and every load that moves with `var`
    /// walks a unit-stride axis unchecked.
    fn vec_ok(&self, t: &SchedExpr, var: usize) -> bool {
        // integer formats: scalar loops only
        if strong(t) || self.int() {
            return false;
        }
        self.vec_ok_rec(t, var)
    }

    fn vec_ok_rec(&self, t: &SchedExpr, var: usize) -> bool {
        match t {
            SchedExpr::Num(_) => true,
            // a hoisted value that may be a strong zero (a bracket of outer
            // indices, `[2 <= i]` in a loop of `j`) carries a flag the vector
            // code does not read: `0 * NaN` would be NaN, not the strong zero
            SchedExpr::Hoisted(_, strong) => !strong,
            SchedExpr::Load { buf, ixs, flag } => {
                if flag.is_some() {
                    return false;
                }
                let on: Vec<usize> = (0..ixs.len())
                    .filter(|&a| coef(&ixs[a].aff, var) != 0)
                    .collect();
                on.is_empty()
                    || (on.len() == 1
                        && coef(&ixs[on[0]].aff, var) == 1
                        // (staged buffers are unit-stride)
                        && (*buf >= self.n_bufs || self.layout.is_unit(*buf, on[0]))
                        && ixs.iter().all(|ix| !ix.checked))
            }
            SchedExpr::Eps(_) => !mentions(t, var),
            SchedExpr::Bin(_, a, b) => self.vec_ok_rec(a, var) && self.vec_ok_rec(b, var),
            SchedExpr::Neg(a) => self.vec_ok_rec(a, var),
            SchedExpr::Call(_, args) => args.iter().all(|a| self.vec_ok_rec(a, var)),
            SchedExpr::Bracket(_) | SchedExpr::Sum(_) => false,
            SchedExpr::Reduce(_) | SchedExpr::Fold(_) => false,
            SchedExpr::Acc(_) => true,
            SchedExpr::Index(_) => !mentions(t, var),
            SchedExpr::SizeVal(_) => true,
            SchedExpr::Select(..) => !mentions(t, var),
            SchedExpr::Gather { .. } => !mentions(t, var),
        }
    }

    /// Before a vector loop over `var`: a row pointer per vector load of
    /// `t`, its address at `var = 0` (loads of one row, e.g. `I[y,x-1]`,
    /// `I[y,x]` and `I[y,x+1]`, share one; the constant becomes the
    /// load's immediate offset). In the loop a load is `row + 8 * i + imm`,
    /// one x86 addressing mode; only `i` advances.
    fn vec_rows(&mut self, t: &SchedExpr, var: usize) {
        match t {
            SchedExpr::Load { buf, ixs, .. } if ixs.iter().any(|ix| coef(&ix.aff, var) != 0) => {
                // the vector axis's constant becomes an immediate offset
                // (loads of one row share a pointer)
                let mut ixs = ixs.clone();
                let mut imm = 0i32;
                for ix in ixs.iter_mut() {
                    // small constants only, so `imm + voff` fits an i32
                    if coef(&ix.aff, var) != 0 && ix.aff.constant.abs() <= 1 << 20 {
                        imm = (ix.aff.constant << self.esh) as i32;
                        ix.aff.constant = 0;
                    }
                }
                let key = t as *const SchedExpr as usize;
                let sig = format!("{buf} {ixs:?}");
                if let Some(&(_, pv)) = self.row_sigs.iter().find(|(s2, _)| *s2 == sig) {
                    self.rows.push((key, pv, imm));
                    return;
                }
                let zero = self.b.ins().iconst(types::I64, 0);
                self.set_var(var, zero);
                let (off, _) = self.offset(*buf, &ixs);
                let bytes = self.b.ins().ishl_imm_s(off, self.esh);
                let base = self.base(*buf);
                let row = self.b.ins().iadd(base, bytes);
                self.row_sigs.push((sig, row));
                self.rows.push((key, row, imm));
            }
            SchedExpr::Bin(_, a, b) => {
                self.vec_rows(a, var);
                self.vec_rows(b, var);
            }
            SchedExpr::Neg(a) => self.vec_rows(a, var),
            SchedExpr::Call(_, args) => args.iter().for_each(|a| self.vec_rows(a, var)),
            _ => {}
        }
    }

    fn splat(&mut self, x: Value) -> Value {
        self.b.ins().splat(self.vt, x)
    }

    /// `t` at `var`, `var + 1`, ... (every lane; the variable holds the first lane's
    /// index); `t` passed [`Self::vec_ok`].
    fn vscalar(&mut self, t: &SchedExpr, var: usize) -> Value {
        match t {
            SchedExpr::Num(x) => {
                let c = self.f64c(*x);
                self.splat(c)
            }
            SchedExpr::Hoisted(k, _) => {
                let x = self.hoisted[*k].0;
                self.splat(x)
            }
            SchedExpr::Load { buf, ixs, .. } if ixs.iter().any(|ix| coef(&ix.aff, var) != 0) => {
                let key = t as *const SchedExpr as usize;
                if let (Some(&(_, row, imm)), Some(i)) =
                    (self.rows.iter().find(|(k, _, _)| *k == key), self.vidx)
                {
                    // unit stride, coefficient 1: `row + 8 * i + imm`
                    let bytes = self.b.ins().ishl_imm_s(i, self.esh);
                    let p = self.b.ins().iadd(row, bytes);
                    let off = self.voff as i32 + imm;
                    return self.b.ins().load(self.vt, self.vmf, p, off);
                }
                let (off, _) = self.offset(*buf, ixs);
                let bytes = self.b.ins().ishl_imm_s(off, self.esh);
                let base = self.base(*buf);
                let addr = self.b.ins().iadd(base, bytes);
                self.b.ins().load(self.vt, self.vmf, addr, 0)
            }
            SchedExpr::Load { .. }
            | SchedExpr::Eps(_)
            | SchedExpr::Bracket(_)
            | SchedExpr::Sum(_)
            | SchedExpr::Reduce(_)
            | SchedExpr::Fold(_)
            | SchedExpr::Acc(_)
            | SchedExpr::Index(_)
            | SchedExpr::SizeVal(_)
            | SchedExpr::Select(..)
            | SchedExpr::Gather { .. } => {
                let x = self.scalar(t).0;
                self.splat(x)
            }
            SchedExpr::Bin(op, a, b) => {
                if Self::swapped(*op, a) {
                    let y = self.vscalar(b, var);
                    let x = self.vscalar(a, var);
                    return self.arith(*op, y, x);
                }
                let x = self.vscalar(a, var);
                let y = self.vscalar(b, var);
                self.arith(*op, x, y)
            }
            SchedExpr::Neg(a) => {
                let x = self.vscalar(a, var);
                self.b.ins().fneg(x)
            }
            SchedExpr::Call(f, args) => {
                let vs: Vec<Value> = args.iter().map(|a| self.vscalar(a, var)).collect();
                match f {
                    Func::Sqrt => self.b.ins().sqrt(vs[0]),
                    Func::Abs => self.b.ins().fabs(vs[0]),
                    Func::Max | Func::Min => self.min_max(*f, vs[0], vs[1]),
                    _ => {
                        // lane by lane
                        let mut lanes = Vec::new();
                        for l in 0..self.lanes as u8 {
                            let xs: Vec<Value> =
                                vs.iter().map(|v| self.b.ins().extractlane(*v, l)).collect();
                            lanes.push(self.call(*f, &xs));
                        }
                        let mut v = self.splat(lanes[0]);
                        for (l, x) in lanes.iter().enumerate().skip(1) {
                            v = self.b.ins().insertlane(v, *x, l as u8);
                        }
                        v
                    }
                }
            }
        }
    }

    /// `vacc += t` over every lane (`fma` for a product).
    fn vaccumulate(&mut self, vacc: Variable, t: &SchedExpr, var: usize) {
        let r = match t {
            SchedExpr::Bin(BinOp::Mul, x, y) => {
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
