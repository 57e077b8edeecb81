//! Helpers both code generators use ([`super::loops`], [`super::tiles`]):
//! the entry block's parameters, blocked loops, the run-time test of
//! whether cache blocking pays, cancellation polls, pairwise sums. They
//! emit what they are asked to and decide nothing.

use crate::jit::schedule::loops::TILE_ROWS;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types, InstBuilder, MemFlagsData, StackSlot, StackSlotData, StackSlotKind, Value,
};
use cranelift_frontend::{FunctionBuilder, Variable};

/// `x + y` of two numbers (or vectors) of one type: `fadd`, or `iadd`
/// (wrapping) for integers.
pub(crate) fn add(b: &mut FunctionBuilder, x: Value, y: Value) -> Value {
    if b.func.dfg.value_type(x).lane_type().is_int() {
        b.ins().iadd(x, y)
    } else {
        b.ins().fadd(x, y)
    }
}

/// The sum of `vals` as a pairwise tree of `fadd`s (scalars or vectors;
/// `iadd`s for integers); `None` for no values.
pub(crate) fn add_tree(b: &mut FunctionBuilder, vals: Vec<Value>) -> Option<Value> {
    let mut level = vals;
    while level.len() > 1 {
        level = level
            .chunks(2)
            .map(|c| {
                if c.len() == 2 {
                    add(b, c[0], c[1])
                } else {
                    c[0]
                }
            })
            .collect();
    }
    level.first().copied()
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

/// A code generator emitting one function (the general one here and the
/// dense one of [`super::dense`]), for the helpers both use.
pub(crate) trait Emits<'f> {
    fn fb(&mut self) -> &mut FunctionBuilder<'f>;
}

/// The terms of a long sum added on one set of accumulators before their
/// total goes to the next level of a [`Levels`] (512 per lane of the
/// eight vector lanes of the general loops).
pub(crate) const SUM_BLOCK: i64 = 4096;

/// Block sums added one after another before the next level.
const SUM_MID: i64 = 64;

/// Two levels above the accumulators of a long sum that runs in blocks of
/// [`SUM_BLOCK`] terms (one total per output): each block's sum goes to a
/// middle total, and every [`SUM_MID`] blocks the middle one to the outer
/// one. No partial sum then adds more than a few hundred terms one after
/// another, so a long sum is about as accurate as numpy's pairwise
/// summation (10^7 equal terms keep 15 digits, where one running sum per
/// lane loses four).
pub(crate) struct Levels {
    /// The float type of the totals.
    ty: types::Type,
    outer: Vec<Variable>,
    mid: Vec<Variable>,
    count: Variable,
}

impl Levels {
    /// `k` totals of the number type `ty` (`F64`, `F32`, `I64`, `I32`),
    /// all 0, defined where the blocks' loop starts.
    pub(crate) fn new_typed(b: &mut FunctionBuilder, k: usize, ty: types::Type) -> Levels {
        let zero = fzero(b, ty);
        let var = |b: &mut FunctionBuilder| {
            let v = b.declare_var(ty);
            b.def_var(v, zero);
            v
        };
        let outer = (0..k).map(|_| var(b)).collect();
        let mid = (0..k).map(|_| var(b)).collect();
        let count = b.declare_var(types::I64);
        let c0 = b.ins().iconst(types::I64, 0);
        b.def_var(count, c0);
        Levels {
            ty,
            outer,
            mid,
            count,
        }
    }

    /// Add one block's sums (one per total).
    pub(crate) fn add(&self, b: &mut FunctionBuilder, sums: &[Value]) {
        let c = b.use_var(self.count);
        let c = b.ins().iadd_imm_s(c, 1);
        let full = b.ins().icmp_imm_s(IntCC::Equal, c, SUM_MID);
        let zero = fzero(b, self.ty);
        for ((&o, &m), &x) in self.outer.iter().zip(&self.mid).zip(sums) {
            let mv = b.use_var(m);
            let mv = add(b, mv, x);
            let ov = b.use_var(o);
            let sum = add(b, ov, mv);
            let ov = b.ins().select(full, sum, ov);
            b.def_var(o, ov);
            let mv = b.ins().select(full, zero, mv);
            b.def_var(m, mv);
        }
        let c0 = b.ins().iconst(types::I64, 0);
        let c = b.ins().select(full, c0, c);
        b.def_var(self.count, c);
    }

    /// The totals, after the blocks' loop.
    pub(crate) fn totals(&self, b: &mut FunctionBuilder) -> Vec<Value> {
        self.outer
            .iter()
            .zip(&self.mid)
            .map(|(&o, &m)| {
                let o = b.use_var(o);
                let m = b.use_var(m);
                add(b, o, m)
            })
            .collect()
    }
}

/// The zero of the number type `ty` (`F64`, `F32`, `I64`, `I32`).
fn fzero(b: &mut FunctionBuilder, ty: types::Type) -> Value {
    match ty {
        types::F32 => b.ins().f32const(0.0),
        types::F64 => b.ins().f64const(0.0),
        _ => b.ins().iconst(ty, 0),
    }
}

/// `for x0 in (lo..hi).step_by(t) { body(x0, min(x0 + t, hi)) }`; with
/// `poll`, the loop also stops after the block under way when the call is
/// cancelled (a long sum in blocks, [`Levels`], would otherwise start its
/// next block, and each level of nested sums one more).
pub(crate) fn for_blocks<'f, C: Emits<'f>>(
    c: &mut C,
    lo: Value,
    hi: Value,
    t: i64,
    poll: Option<Poll>,
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
    let bound = match poll {
        Some(p) => p.or_stop(b, hi, x1),
        None => hi,
    };
    let more = b.ins().icmp(IntCC::SignedLessThan, x1, bound);
    b.ins().brif(more, body_b, &[], exit, &[]);
    b.seal_block(body_b);
    b.seal_block(exit);
    b.switch_to_block(exit);
}

/// `if blocks pay { blocked } else { plain }`, decided at call time for a
/// loop that walks across `rows` rows `stride` bytes apart
/// (`schedule::tiled`, `TilePlan::vblock`): blocks pay when the rows
/// are a multiple of 2 KiB apart (they then share a few sets of the L1
/// cache) or there are more than [`TILE_ROWS`] of them
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
        .icmp_imm_s(IntCC::SignedGreaterThan, rows, TILE_ROWS);
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

/// The parameters of a nest's native function (see [`super`]).
#[derive(Clone, Copy, Debug)]
pub struct EntryParams {
    pub bufs: Value,
    pub strides: Value,
    pub sizes: Value,
    pub lo: Value,
    pub hi: Value,
}
