//! Dense contractions in generated code: a nest
//! `buf[g..] = o.. * sum(k..) f1 * f2 * …` (and the two-level form
//! `o.. * sum(k..) m.. * sum(l..) f1 * f2 * …`) whose factors are loads
//! with plain indices (no brackets, no padding, no calls) and numbers is
//! emitted as a scheduled, register-tiled, vectorised (`f64x2`, `fma`) loop
//! nest instead of the general scalar code of [`super::loops`]. In
//! `Precision::F32` the same code runs on `f32` (`f32x4` vectors where
//! `f64` has `f64x2`, so the plan's lanes are 4; 4-byte loads and stores,
//! `f32` accumulators, literals rounded to `f32`): every operation rounds
//! to `f32` as the scalar code does, and the `fma` is only a sum's
//! accumulation, which the contract allows in either format.
//!
//! [`crate::jit::schedule::tiles::plan`] decides from the nest and the layout whether this module takes
//! the nest, and how: which loop variable the `f64x2` lanes run along (the
//! one most factors are unit-stride along), whether that is a variable of
//! the tile level (`Mode::Tile`: the outputs, or for the two-level form the
//! outer sum's variables, are computed a register tile at a time, an
//! `rows × cols` block of vectors, with the reduction innermost) or of the
//! reduction (`Mode::Reduce`: vector accumulators along the summed axis,
//! reduced across lanes at the end, `rows` outputs at a time sharing the
//! loads that do not depend on the row), and which second variable the
//! rows run along. With no unit-stride axis it still tiles, one lane wide.
//! In `Tile` mode with rows the reduction runs in blocks of [`KBLOCK`]
//! terms, each block over every tile of a panel, the partial sums kept
//! in the output between blocks (so the second factor's rows a block reads
//! stay in cache for all rows of the first). A matrix product (two gen
//! axes, one summed variable, one factor along each pair) is also packed
//! into stack buffers first, in whatever layout its arguments come
//! ([`Pack`]); such a nest is always planned this way, lanes along the
//! output's unit-stride axis if it has one. In `Reduce` mode, brackets of
//! the inner product that bound the summed variable from above by the row
//! variable (`[j <= i]`, `[j < 2*i - 1 && j <= i + 3]`) become a loop
//! domain per row ([`TilePlan::hi`]): a triangular matvec reads half the
//! matrix and tests nothing per element. In `Tile` mode, brackets that
//! bound the summed variable by the lanes' variable from either side
//! (`gen(j) sum(i) [j <= i] * x[i] * A[i,j]`, the column form) become a
//! domain per lane ([`TilePlan::tdom`]): a tile sums over the union of its
//! lanes' domains, masking each lane's update only where the domains of
//! the tile's lanes differ. For the two-level form, [`plan`] also tries
//! the sums the other way round (`sum(k2) m' * sum(k1) f'`: reduction
//! interchange, so the bilinear form `sum(i) y[i] * sum(j) A[j,i] * x[j]`
//! walks rows of a C-order `A`) and keeps the orientation whose lanes
//! run along more unit-stride loads.
//! In `Reduce` mode with no rows, an inner load that walks across memory
//! along `v` (`B[j,i]` in the trace of a product `sum(i,j) A[i,j] *
//! B[j,i]`) makes `v` run in blocks of [`VBLOCK`], each over every value
//! of the other summed variables, where at call time its rows alias in
//! the L1 cache or outrun the TLB ([`TilePlan::vblock`]).
//! [`emit`] writes the function body (after the entry block of
//! [`super::compile`] has been created; it returns from the
//! function itself).
//!
//! Every output element is computed by the same sequence of operations
//! whatever tile (full, edge, vector or scalar lane) it falls in, and tiles
//! are laid out from the reduction's own origin, never from `lo`: so
//! running the outermost loop's range `lo..hi` in pieces gives bit-identical
//! results. Summation order differs from the interpreter (products are
//! reassociated, sums split into lanes), within rounding.
//!
//! Owns the register tiles' code; it follows the [`TilePlan`] (made by
//! `schedule::tiles`) and must not change it or decide anything it decides.

use super::common::{
    add_tree, for_blocks, if_blocks_pay, Emits, EntryParams, Levels, Poll, SUM_BLOCK,
};
use crate::jit::ir::{Layout, LoopProgram, SizeRef};
use crate::jit::schedule::tiles::{loads, Factor, Mode, TilePlan, VBLOCK};
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{
    types, InstBuilder, MemFlagsData, StackSlot, StackSlotData, StackSlotKind, Type, Value,
};
use cranelift_frontend::{FunctionBuilder, Variable};

/// Pseudo accesses: the packed copies of [`Pack::a`] and [`Pack::b`].
const PA: usize = usize::MAX - 8;
const PB: usize = usize::MAX - 9;

/// An address offset: a constant (folded into the load) or a value.
#[derive(Clone, Copy, Debug)]
enum Offset {
    C(i64),
    V(Value),
}

/// The geometry of a register tile: `rows` along `w`, `cols` groups of
/// `lanes` along `v`; per access, the offset of each row and each lane.
struct TileGeometry {
    lanes: usize,
    row_slot: Vec<Vec<usize>>,
    row_off: Vec<Vec<Offset>>,
    col_off: Vec<Vec<Offset>>,
}

/// The rows of a tile (see [`TileEmitter::row_geo`]).
#[derive(Clone)]
struct RowGeo {
    slot: Vec<Vec<usize>>,
    off: Vec<Vec<Offset>>,
}

/// Partial products of a tile: `s` per row (factors not along `v`, with
/// its splat `ss` when the tile is vectors), `t` per column (along `v`,
/// not `w`), `x` per row and column (along both).
#[derive(Clone)]
struct Parts {
    s: Vec<Option<Value>>,
    ss: Vec<Option<Value>>,
    t: Vec<Option<Value>>,
    x: Vec<Vec<Option<Value>>>,
}

impl Parts {
    fn new(rows: usize, cols: usize) -> Parts {
        Parts {
            s: vec![None; rows],
            ss: vec![None; rows],
            t: vec![None; cols],
            x: vec![vec![None; cols]; rows],
        }
    }
    fn reshape(&self, cols: usize) -> Parts {
        let rows = self.s.len();
        Parts {
            s: self.s.clone(),
            ss: vec![None; rows],
            t: vec![None; cols],
            x: vec![vec![None; cols]; rows],
        }
    }
}

/// What a tile does with its sums.
enum Action {
    /// Multiply by the factors outside the sum and store the output.
    Store,
    /// Two levels: multiply by the middle factors and add into the outer
    /// sum's accumulators (`vecs` per column of the plan's lanes, `scalar`
    /// for a one-lane column of a two-lane plan).
    Accumulate {
        vecs: Vec<Variable>,
        scalar: Variable,
    },
}

struct TileEmitter<'a, 'b> {
    b: &'b mut FunctionBuilder<'a>,
    plan: &'b TilePlan,
    /// Per access: (variable, stride in bytes, unit).
    /// Per access, per variable: where its strides are in the strides
    /// array (several axes indexed by one variable add up), and whether it
    /// is unit-stride. Strides and sizes are loaded where they are used, so
    /// no value of the entry block stays live across the loops.
    access_strides: Vec<Vec<(usize, Vec<usize>, bool)>>,
    strides: Value,
    sizes: Value,
    /// Scalar accesses: aligned, cannot trap.
    mf: MemFlagsData,
    /// Vector accesses: only 8-byte aligned.
    mv: MemFlagsData,
    /// Loads of the factors: as `mf`/`mv`, and also read-only and movable
    /// (the nest writes only its output, which no factor is), so Cranelift
    /// places each where it is first used (see [`TileEmitter::load`]).
    rf: MemFlagsData,
    rv: MemFlagsData,
    lo: Value,
    hi: Value,
    /// The access each pointer slot belongs to (see [`TileEmitter::lp`]).
    owners: Vec<usize>,
    fused: bool,
    /// Whether the tile being emitted is a full one (only those unroll
    /// their innermost loop: edge tiles are rare, code size is not).
    full_tile: bool,
    /// Inside a block of the reduction ([`TilePlan::kblock`]): its range, and
    /// whether it is the first and the last block.
    kblk: Option<KBlock>,
    /// Packing (see [`Pack`]): the stack buffers of `a` and `b`; whether
    /// the tiles being emitted read `a`, `b` packed; the rows `a` is
    /// packed for; the packed `b`'s pointer at the panel's origin.
    slots: Option<(StackSlot, StackSlot)>,
    pa_on: bool,
    pb_on: bool,
    mr: usize,
    pb_base: Option<Value>,
    /// A tile with a loop domain ([`TilePlan::tdom`]): the range of the
    /// reduction loop being emitted, and per column the lanes' bounds
    /// (`lo`, `hi`) when the updates are masked.
    rrange: Option<(Value, Value)>,
    masks: Option<Vec<(Value, Value)>>,
    /// The reduction variable's value in the loop body being emitted.
    cur_k: Option<Value>,
    /// Cancellation polls at the back edges of loops with loops inside
    /// (see `emit::common::Poll`).
    poll: Option<Poll>,
    /// Loops emitted so far.
    loops: usize,
    /// The number type (`F64` or `F32`), its vector of 16 bytes
    /// (`F64X2`, `F32X4`), its size in bytes and that size's log2.
    ft: Type,
    vt: Type,
    esz: i64,
    esh: i64,
}

/// The block of the reduction being emitted (see [`TilePlan::kblock`]).
#[derive(Clone, Copy)]
struct KBlock {
    start: Value,
    end: Value,
    first: Value,
    last: Value,
}

impl<'a> Emits<'a> for TileEmitter<'a, '_> {
    fn fb(&mut self) -> &mut FunctionBuilder<'a> {
        self.b
    }
}

/// Emit the body of the nest's function, return included. `stride_at[b]`
/// is where buffer `b`'s strides start in the strides array; `ft` the
/// number type (`F64`, or `F32` with `f32x4` vectors).
#[allow(clippy::too_many_arguments)]
pub fn emit(
    b: &mut FunctionBuilder,
    p: &LoopProgram,
    layout: &Layout,
    stride_at: &[usize],
    e: EntryParams,
    plan: &TilePlan,
    poll: bool,
    ft: Type,
) {
    let mf = MemFlagsData::trusted();
    let (vt, esz, esh) = if ft == types::F32 {
        (types::F32X4, 4, 2)
    } else {
        (types::F64X2, 8, 3)
    };
    let poll = poll.then(|| Poll::setup(b, e.sizes, p.sizes.len()));
    let mut bases: Vec<Option<Value>> = vec![None; p.bufs.len()];
    let mut ptrs = Vec::with_capacity(plan.acc.len());
    let mut access_strides = Vec::with_capacity(plan.acc.len());
    for a in &plan.acc {
        let base = match bases[a.buf] {
            Some(v) => v,
            None => {
                let v = b.ins().load(types::I64, mf, e.bufs, (a.buf * 8) as i32);
                bases[a.buf] = Some(v);
                v
            }
        };
        ptrs.push(base);
        let mut per = Vec::new();
        for (k, &v) in a.ix.iter().enumerate() {
            if a.ix[..k].contains(&v) {
                continue;
            }
            let at = (0..a.ix.len())
                .filter(|&k2| a.ix[k2] == v)
                .map(|k2| stride_at[a.buf] + k2)
                .collect();
            per.push((v, at, a.unit(v, layout)));
        }
        access_strides.push(per);
    }
    let mut em = TileEmitter {
        b,
        plan,
        access_strides,
        strides: e.strides,
        sizes: e.sizes,
        mf,
        mv: MemFlagsData::new().with_notrap(),
        rf: mf.with_readonly().with_can_move(),
        rv: MemFlagsData::new()
            .with_notrap()
            .with_readonly()
            .with_can_move(),
        lo: e.lo,
        hi: e.hi,
        owners: (0..plan.acc.len()).collect(),
        fused: true,
        full_tile: false,
        kblk: None,
        slots: None,
        pa_on: false,
        pb_on: false,
        mr: 1,
        pb_base: None,
        rrange: None,
        masks: None,
        cur_k: None,
        poll,
        loops: 0,
        ft,
        vt,
        esz,
        esh,
    };
    if plan.pack.is_some() {
        let kc = plan.kblock as u32;
        let mk = |em: &mut TileEmitter, n: u32| {
            em.b.create_sized_stack_slot(StackSlotData::new(
                StackSlotKind::ExplicitSlot,
                kc * n * em.esz as u32,
                6,
            ))
        };
        let sa = mk(&mut em, plan.rows as u32);
        let access_strides = mk(&mut em, plan.panel as u32);
        em.slots = Some((sa, access_strides));
    }
    if plan.two_level {
        em.two_level(&ptrs);
    } else {
        em.one_level(&ptrs);
    }
    em.b.ins().return_(&[]);
}

fn mul(b: &mut FunctionBuilder, a: Option<Value>, x: Value) -> Option<Value> {
    Some(match a {
        None => x,
        Some(a) => b.ins().fmul(a, x),
    })
}

impl TileEmitter<'_, '_> {
    /// The number `x` in the number type (rounded to `f32` in `F32`, as
    /// the language rounds literals).
    fn fconst(&mut self, x: f64) -> Value {
        if self.ft == types::F32 {
            self.b.ins().f32const(x as f32)
        } else {
            self.b.ins().f64const(x)
        }
    }

    fn iconst(&mut self, x: i64) -> Value {
        self.b.ins().iconst(types::I64, x)
    }

    fn size(&mut self, s: &SizeRef) -> Value {
        match s {
            SizeRef::Lit(n) => self.iconst(*n),
            SizeRef::Named(k) => {
                self.b
                    .ins()
                    .load(types::I64, self.mf, self.sizes, (*k * 8) as i32)
            }
        }
    }

    /// The range of loop `var`: the caller's `lo..hi` for the nest's
    /// outermost variable, else its whole size.
    fn range(&mut self, var: usize, n: &SizeRef) -> (Value, Value) {
        if self.plan.gens.first().is_some_and(|(g, _)| *g == var) {
            (self.lo, self.hi)
        } else {
            let z = self.iconst(0);
            (z, self.size(n))
        }
    }

    /// The stride in bytes of access `a` along `v` (`None`: it does not
    /// depend on `v`), and whether it is unit-stride.
    fn stride(&mut self, a: usize, v: usize) -> Option<(Value, bool)> {
        let a = self.eff(a);
        if a == PA || a == PB {
            let plan = self.plan;
            let k = plan.red[0].0;
            let (st, unit) = match (a == PA, v) {
                (true, x) if x == k => (self.esz * self.mr as i64, false),
                (true, x) if Some(x) == plan.w => (8, true),
                (false, x) if x == k => (self.esz * (plan.cols * plan.lanes) as i64, false),
                (false, x) if x == plan.v => (self.esz * plan.kblock as i64, false),
                _ => return None,
            };
            return Some((self.iconst(st), unit));
        }
        let (_, at, unit) = self.access_strides[a]
            .iter()
            .find(|(x, _, _)| *x == v)?
            .clone();
        if unit {
            let esz = self.esz;
            return Some((self.iconst(esz), true));
        }
        let mut tot: Option<Value> = None;
        for k in at {
            let s = self
                .b
                .ins()
                .load(types::I64, self.mf, self.strides, (k * 8) as i32);
            tot = Some(match tot {
                None => s,
                Some(t) => self.b.ins().iadd(t, s),
            });
        }
        let tot = tot.expect("an access indexes an axis by each of its variables");
        Some((self.b.ins().ishl_imm_s(tot, self.esh), false))
    }

    /// Whether access `a` is unit-stride along `v`.
    fn unit(&self, a: usize, v: usize) -> bool {
        match self.eff(a) {
            PA => Some(v) == self.plan.w,
            PB => v == self.plan.v,
            a => self.access_strides[a].iter().any(|(x, _, u)| *x == v && *u),
        }
    }

    /// The access `a` stands for: its packed copy while the tiles read
    /// that (see [`Pack`]).
    fn eff(&self, a: usize) -> usize {
        match self.plan.pack {
            Some(p) if self.pa_on && a == p.a => PA,
            Some(p) if self.pb_on && a == p.b => PB,
            _ => a,
        }
    }

    fn dep(&self, a: usize, v: Option<usize>) -> bool {
        v.is_some_and(|v| self.plan.acc[a].dep(v))
    }

    /// `for var in start.. step step while var + step <= end`, advancing
    /// the pointers along `var` (`ptrs[k]` belongs to access
    /// `self.owners[k]`); returns where it stopped. The loop counts the
    /// elements left down, so `end` is not live in the loop.
    fn lp(
        &mut self,
        var: usize,
        start: Value,
        end: Value,
        step: i64,
        ptrs: &[Value],
        body: &mut dyn FnMut(&mut Self, &[Value], Value),
    ) -> Value {
        self.lp_u(var, start, end, step, 1, ptrs, body)
    }

    /// [`TileEmitter::lp`] with the body unrolled `unroll` times (the loop stops
    /// with fewer than `step * unroll` elements left; the caller runs the
    /// rest).
    #[allow(clippy::too_many_arguments)]
    fn lp_u(
        &mut self,
        var: usize,
        start: Value,
        end: Value,
        step: i64,
        unroll: usize,
        ptrs: &[Value],
        body: &mut dyn FnMut(&mut Self, &[Value], Value),
    ) -> Value {
        let rem = self.b.declare_var(types::I64);
        let n = self.b.ins().isub(end, start);
        self.b.def_var(rem, n);
        // a pointer along `var` at a run-time stride is its own induction
        // variable (a block parameter: Cranelift cannot sink its
        // computation into the loop); the unit-stride ones share one byte
        // offset, added in each address (the x86-64 base + index mode), so
        // a row tile's pointers cost one register each and one add per
        // iteration in all
        let mut moving: Vec<(usize, Variable, Value)> = Vec::new();
        let mut shared: Vec<usize> = Vec::new();
        for (k, &p) in ptrs.iter().enumerate() {
            if let Some((s, unit)) = self.stride(self.owners[k], var) {
                if unit {
                    shared.push(k);
                    continue;
                }
                let pv = self.b.declare_var(types::I64);
                let off = self.b.ins().imul(start, s);
                let p0 = self.b.ins().iadd(p, off);
                self.b.def_var(pv, p0);
                let inc = self.b.ins().imul_imm_s(s, step);
                moving.push((k, pv, inc));
            }
        }
        let offv = if shared.is_empty() {
            None
        } else {
            let ov = self.b.declare_var(types::I64);
            let o0 = self.b.ins().ishl_imm_s(start, self.esh);
            self.b.def_var(ov, o0);
            Some(ov)
        };
        let head = self.b.create_block();
        let body_b = self.b.create_block();
        let exit = self.b.create_block();
        self.b.ins().jump(head, &[]);
        self.b.switch_to_block(head);
        let r = self.b.use_var(rem);
        let c = self
            .b
            .ins()
            .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, r, step * unroll as i64);
        self.b.ins().brif(c, body_b, &[], exit, &[]);
        self.b.switch_to_block(body_b);
        self.loops += 1;
        let before = self.loops;
        let cur: Vec<Value> = moving
            .iter()
            .map(|(_, pv, _)| self.b.use_var(*pv))
            .collect();
        let off = offv.map(|ov| self.b.use_var(ov));
        let r = self.b.use_var(rem);
        let i0 = self.b.ins().isub(end, r);
        for j in 0..unroll {
            let mut inner = ptrs.to_vec();
            for ((k, _, inc), &p) in moving.iter().zip(&cur) {
                inner[*k] = match j {
                    0 => p,
                    1 => self.b.ins().iadd(p, *inc),
                    _ => {
                        let o = self.b.ins().imul_imm_s(*inc, j as i64);
                        self.b.ins().iadd(p, o)
                    }
                };
            }
            if let Some(off) = off {
                let o = match j {
                    0 => off,
                    _ => self.b.ins().iadd_imm_s(off, self.esz * step * j as i64),
                };
                for &k in &shared {
                    inner[k] = self.b.ins().iadd(ptrs[k], o);
                }
            }
            let i = self.b.ins().iadd_imm_s(i0, step * j as i64);
            body(self, &inner, i);
        }
        let r = self.b.use_var(rem);
        let mut r1 = self.b.ins().iadd_imm_s(r, -step * unroll as i64);
        if let (true, Some(p)) = (self.loops > before, self.poll) {
            // not an innermost loop: a cancelled call leaves nothing to
            // do (the loop, and the remainder loops after it, end)
            let zero = self.b.ins().iconst(types::I64, 0);
            r1 = p.or_stop(self.b, r1, zero);
        }
        self.b.def_var(rem, r1);
        for ((_, pv, inc), &p) in moving.iter().zip(&cur) {
            let o = if unroll == 1 {
                *inc
            } else {
                self.b.ins().imul_imm_s(*inc, unroll as i64)
            };
            let p1 = self.b.ins().iadd(p, o);
            self.b.def_var(*pv, p1);
        }
        if let (Some(ov), Some(off)) = (offv, off) {
            let o1 = self
                .b
                .ins()
                .iadd_imm_s(off, self.esz * step * unroll as i64);
            self.b.def_var(ov, o1);
        }
        self.b.ins().jump(head, &[]);
        self.b.seal_block(head);
        self.b.seal_block(body_b);
        self.b.seal_block(exit);
        self.b.switch_to_block(exit);
        let r = self.b.use_var(rem);
        self.b.ins().isub(end, r)
    }

    /// Nested loops over `vars` (whole ranges, or `lo..hi` for the nest's
    /// outermost variable), then `body`.
    fn loops(
        &mut self,
        vars: &[(usize, SizeRef)],
        ptrs: &[Value],
        body: &mut dyn FnMut(&mut Self, &[Value]),
    ) {
        match vars.split_first() {
            None => body(self, ptrs),
            Some(((v, n), rest)) => {
                let (lo, hi) = self.range(*v, n);
                self.lp(*v, lo, hi, 1, ptrs, &mut |em, p, _| em.loops(rest, p, body));
            }
        }
    }

    /// The rows of a tile: per access, the pointer slot and constant
    /// offset of each row. A row at a run-time stride gets its own pointer
    /// (appended to `ptrs`, which the reduction loops then advance), so the
    /// loops need no offset arithmetic. Returns the extended pointers and
    /// their owners.
    fn row_geo(
        &mut self,
        rows: usize,
        ptrs: &[Value],
        inner: bool,
    ) -> (RowGeo, Vec<Value>, Vec<usize>) {
        // the inner product's accesses, or the others (the output, the
        // factors outside the sum): only those a loop uses are live in it
        let mut mine = vec![!inner; self.plan.acc.len()];
        for a in loads(&self.plan.inner) {
            mine[a] = inner;
        }
        let w = self.plan.w;
        let mut xp = ptrs.to_vec();
        let mut owners = self.owners.clone();
        let mut slot = Vec::new();
        let mut off = Vec::new();
        for a in 0..self.plan.acc.len() {
            let wa = w.filter(|_| mine[a]);
            match wa.and_then(|x| self.stride(a, x)) {
                None => {
                    slot.push(vec![a; rows]);
                    off.push(vec![Offset::C(0); rows]);
                }
                Some((_, true)) => {
                    slot.push(vec![a; rows]);
                    off.push((0..rows).map(|r| Offset::C(self.esz * r as i64)).collect());
                }
                Some((s, false)) => {
                    let mut sl = vec![a];
                    for r in 1..rows {
                        let o = self.b.ins().imul_imm_s(s, r as i64);
                        xp.push(self.b.ins().iadd(ptrs[a], o));
                        owners.push(a);
                        sl.push(xp.len() - 1);
                    }
                    slot.push(sl);
                    off.push(vec![Offset::C(0); rows]);
                }
            }
        }
        (RowGeo { slot, off }, xp, owners)
    }

    /// A tile's geometry: its rows, and `cols` groups of `lanes` along `v`.
    fn geo(&mut self, rg: &RowGeo, cols: usize, lanes: usize) -> TileGeometry {
        let v = self.plan.v;
        let n = cols * lanes;
        let esz = self.esz;
        let col_off = (0..self.plan.acc.len())
            .map(|a| match self.stride(a, v) {
                Some(_) if self.eff(a) == PB => (0..n).map(|k| Offset::C(esz * k as i64)).collect(),
                None => vec![Offset::C(0); n],
                Some((_, true)) => (0..n).map(|k| Offset::C(esz * k as i64)).collect(),
                Some((s, false)) => (0..n)
                    .map(|k| {
                        if k == 0 {
                            Offset::C(0)
                        } else {
                            Offset::V(self.b.ins().imul_imm_s(s, k as i64))
                        }
                    })
                    .collect(),
            })
            .collect();
        TileGeometry {
            lanes,
            row_slot: rg.slot.clone(),
            row_off: rg.off.clone(),
            col_off,
        }
    }

    fn addr(&mut self, base: Value, offs: &[Offset]) -> (Value, i32) {
        let mut a = base;
        let mut c = 0i64;
        for o in offs {
            match o {
                Offset::C(k) => c += k,
                Offset::V(x) => a = self.b.ins().iadd(a, *x),
            }
        }
        match i32::try_from(c) {
            Ok(c) => (a, c),
            Err(_) => {
                let k = self.iconst(c);
                (self.b.ins().iadd(a, k), 0)
            }
        }
    }

    fn load_at(&mut self, ty: Type, base: Value, offs: &[Offset]) -> Value {
        let (a, c) = self.addr(base, offs);
        let f = if ty.is_vector() { self.mv } else { self.mf };
        self.b.ins().load(ty, f, a, c)
    }

    /// A load of a factor (read-only during the nest; see [`TileEmitter::rf`]).
    fn load_ro(&mut self, ty: Type, base: Value, offs: &[Offset]) -> Value {
        let (a, c) = self.addr(base, offs);
        let f = if ty.is_vector() { self.rv } else { self.rf };
        self.b.ins().load(ty, f, a, c)
    }

    fn store_at(&mut self, x: Value, base: Value, offs: &[Offset]) {
        let (a, c) = self.addr(base, offs);
        let f = if self.b.func.dfg.value_type(x).is_vector() {
            self.mv
        } else {
            self.mf
        };
        self.b.ins().store(f, x, a, c);
    }

    /// Access `a` at row `r`, column `c` of the tile: a vector when it runs
    /// along `v` in a two-lane tile, else a number.
    fn load(&mut self, a: usize, ptrs: &[Value], geo: &TileGeometry, r: usize, c: usize) -> Value {
        let base = ptrs[geo.row_slot[a][r]];
        let ro = geo.row_off[a][r];
        let along_v = self.dep(a, Some(self.plan.v));
        let (ft, vt, vl) = (self.ft, self.vt, geo.lanes);
        if !along_v {
            return self.load_ro(ft, base, &[ro]);
        }
        if vl == 1 {
            return self.load_ro(ft, base, &[ro, geo.col_off[a][c]]);
        }
        let unit = self.unit(a, self.plan.v);
        if unit {
            return self.load_ro(vt, base, &[ro, geo.col_off[a][vl * c]]);
        }
        let xs: Vec<Value> = (0..vl)
            .map(|l| self.load_ro(ft, base, &[ro, geo.col_off[a][vl * c + l]]))
            .collect();
        let mut v = self.b.ins().splat(vt, xs[0]);
        for (l, &x) in xs.iter().enumerate().skip(1) {
            v = self.b.ins().insertlane(v, x, l as u8);
        }
        v
    }

    /// Multiply `items` into the partial products of a tile.
    fn apply(&mut self, items: &[Factor], ptrs: &[Value], geo: &TileGeometry, parts: &mut Parts) {
        let (v, w) = (Some(self.plan.v), self.plan.w);
        let mut touched = false;
        for it in items {
            match *it {
                Factor::Num(x) => {
                    let k = self.fconst(x);
                    for r in 0..parts.s.len() {
                        parts.s[r] = mul(self.b, parts.s[r], k);
                    }
                    touched = true;
                }
                Factor::Load(a) => match (self.dep(a, v), self.dep(a, w)) {
                    (false, false) => {
                        let x = self.load(a, ptrs, geo, 0, 0);
                        for r in 0..parts.s.len() {
                            parts.s[r] = mul(self.b, parts.s[r], x);
                        }
                        touched = true;
                    }
                    (false, true) => {
                        for r in 0..parts.s.len() {
                            let x = self.load(a, ptrs, geo, r, 0);
                            parts.s[r] = mul(self.b, parts.s[r], x);
                        }
                        touched = true;
                    }
                    (true, false) => {
                        for c in 0..parts.t.len() {
                            let x = self.load(a, ptrs, geo, 0, c);
                            parts.t[c] = mul(self.b, parts.t[c], x);
                        }
                    }
                    (true, true) => {
                        for r in 0..parts.s.len() {
                            for c in 0..parts.t.len() {
                                let x = self.load(a, ptrs, geo, r, c);
                                parts.x[r][c] = mul(self.b, parts.x[r][c], x);
                            }
                        }
                    }
                },
            }
        }
        if touched {
            self.splat_s(geo.lanes, parts);
        }
    }

    fn splat_s(&mut self, lanes: usize, parts: &mut Parts) {
        for r in 0..parts.s.len() {
            parts.ss[r] = match (lanes, parts.s[r]) {
                (l, Some(s)) if l > 1 => Some(self.b.ins().splat(self.vt, s)),
                (_, s) => s,
            };
        }
    }

    /// The whole product at row `r`, column `c` (`None`: empty).
    fn combine(&mut self, parts: &Parts, r: usize, c: usize) -> Option<Value> {
        let mut m = parts.ss[r];
        if let Some(t) = parts.t[c] {
            m = mul(self.b, m, t);
        }
        if let Some(x) = parts.x[r][c] {
            m = mul(self.b, m, x);
        }
        m
    }

    /// The lanes' domains of a tile ([`TilePlan::tdom`]): the four cut points
    /// of [`TileEmitter::tile`]'s pieces (clamped to the block of the reduction
    /// being emitted), and per column the lanes' bounds (`i64x2` vectors
    /// when `lanes` is 2).
    fn dom_pieces(
        &mut self,
        cols: usize,
        lanes: usize,
        v_at: Value,
    ) -> (Vec<Value>, Vec<(Value, Value)>) {
        let (z, nv) = match self.kblk {
            Some(k) => (k.start, k.end),
            None => {
                let n = self.plan.red[0].1.clone();
                (self.iconst(0), self.size(&n))
            }
        };
        let zero = self.iconst(0);
        let n = {
            let n = self.plan.red[0].1.clone();
            self.size(&n)
        };
        let tdom = self.plan.tdom.clone();
        let mut lows = Vec::new();
        let mut highs = Vec::new();
        for e in 0..cols * lanes {
            let ve = self.b.ins().iadd_imm_s(v_at, e as i64);
            let (mut l, mut h) = (zero, n);
            for &(is_lo, c, d) in &tdom {
                let x = self.b.ins().imul_imm_s(ve, c);
                let x = self.b.ins().iadd_imm_s(x, d);
                if is_lo {
                    l = self.b.ins().smax(l, x);
                } else {
                    h = self.b.ins().smin(h, x);
                }
            }
            lows.push(l);
            highs.push(h);
        }
        let fold = |em: &mut Self, xs: &[Value], max: bool| {
            xs[1..].iter().fold(xs[0], |m, &x| {
                if max {
                    em.b.ins().smax(m, x)
                } else {
                    em.b.ins().smin(m, x)
                }
            })
        };
        let a = fold(self, &lows, false);
        let b = fold(self, &lows, true);
        let c = fold(self, &highs, false);
        let d = fold(self, &highs, true);
        let c = self.b.ins().smax(b, c);
        let d = self.b.ins().smax(c, d);
        let pieces = [a, b, c, d]
            .into_iter()
            .map(|x| {
                let x = self.b.ins().smax(x, z);
                self.b.ins().smin(x, nv)
            })
            .collect();
        let bounds = (0..cols)
            .map(|c| {
                if lanes == 2 {
                    let pack = |em: &mut Self, xs: &[Value]| {
                        let v = em.b.ins().splat(types::I64X2, xs[2 * c]);
                        em.b.ins().insertlane(v, xs[2 * c + 1], 1)
                    };
                    (pack(self, &lows), pack(self, &highs))
                } else {
                    (lows[c], highs[c])
                }
            })
            .collect();
        (pieces, bounds)
    }

    /// Whether reduction index `k` is in the domain of each lane of a
    /// column with bounds `(lo, hi)`: an `f64x2` bit mask, or an `i8`.
    fn lane_mask(&mut self, (lo, hi): (Value, Value), k: Value, lanes: usize) -> Value {
        if lanes == 2 {
            let kv = self.b.ins().splat(types::I64X2, k);
            let a = self.b.ins().icmp(IntCC::SignedGreaterThanOrEqual, kv, lo);
            let b = self.b.ins().icmp(IntCC::SignedLessThan, kv, hi);
            let m = self.b.ins().band(a, b);
            let le = MemFlagsData::new().with_endianness(cranelift_codegen::ir::Endianness::Little);
            self.b.ins().bitcast(types::F64X2, le, m)
        } else {
            let a = self.b.ins().icmp(IntCC::SignedGreaterThanOrEqual, k, lo);
            let b = self.b.ins().icmp(IntCC::SignedLessThan, k, hi);
            self.b.ins().band(a, b)
        }
    }

    /// [`TileEmitter::update`], keeping the accumulator's old value in the lanes
    /// where `mask` (from [`TileEmitter::lane_mask`]) is off.
    fn update_m(
        &mut self,
        acc: Variable,
        parts: &Parts,
        r: usize,
        c: usize,
        lanes: usize,
        mask: Option<Value>,
    ) {
        let Some(m) = mask else {
            return self.update(acc, parts, r, c, lanes);
        };
        let old = self.b.use_var(acc);
        self.update(acc, parts, r, c, lanes);
        let new = self.b.use_var(acc);
        let v = if lanes == 2 {
            self.b.ins().bitselect(m, new, old)
        } else {
            self.b.ins().select(m, new, old)
        };
        self.b.def_var(acc, v);
    }

    /// `acc += s * (t * x)`, one `fma` when both sides are there.
    fn update(&mut self, acc: Variable, parts: &Parts, r: usize, c: usize, lanes: usize) {
        let (mut s, mut tx) = (parts.ss[r], parts.t[c]);
        if let Some(x) = parts.x[r][c] {
            if s.is_none() && tx.is_some() {
                // `acc += t * x` (a matvec row): the `fma` takes both
                s = tx;
                tx = Some(x);
            } else {
                tx = mul(self.b, tx, x);
            }
        }
        let a = self.b.use_var(acc);
        let n = match (s, tx) {
            (Some(s), Some(t)) if self.fused => self.b.ins().fma(s, t, a),
            (Some(s), Some(t)) => {
                let m = self.b.ins().fmul(s, t);
                self.b.ins().fadd(a, m)
            }
            (Some(s), None) | (None, Some(s)) => self.b.ins().fadd(a, s),
            (None, None) => {
                let one = self.fconst(1.0);
                let one = if lanes > 1 {
                    self.b.ins().splat(self.vt, one)
                } else {
                    one
                };
                self.b.ins().fadd(a, one)
            }
        };
        self.b.def_var(acc, n);
    }

    fn zero(&mut self, lanes: usize) -> Value {
        let z = self.fconst(0.0);
        if lanes > 1 {
            self.b.ins().splat(self.vt, z)
        } else {
            z
        }
    }

    fn acc_var(&mut self, lanes: usize) -> Variable {
        let ty = if lanes > 1 { self.vt } else { self.ft };
        let v = self.b.declare_var(ty);
        let z = self.zero(lanes);
        self.b.def_var(v, z);
        v
    }

    /// The sum of the lanes of `vals` (a pairwise tree), plus `tail`.
    fn hsum(&mut self, vals: Vec<Value>, lanes: usize, tail: Option<Value>) -> Value {
        let first = add_tree(self.b, vals);
        let mut s = match (first.as_ref(), tail) {
            (None, Some(t)) => return t,
            (None, None) => self.fconst(0.0),
            (Some(&v), _) if lanes > 1 => {
                // the lanes' pairwise tree
                let xs = (0..lanes)
                    .map(|l| self.b.ins().extractlane(v, l as u8))
                    .collect();
                add_tree(self.b, xs).expect("lanes")
            }
            (Some(&v), _) => v,
        };
        if let Some(t) = tail {
            s = self.b.ins().fadd(s, t);
        }
        s
    }

    /// Items grouped by the depth of the reduction loop they first vary
    /// in: index 0 for none, `d + 1` for `red[d]`.
    fn by_depth(&self, items: &[Factor]) -> Vec<Vec<Factor>> {
        let red = &self.plan.red;
        let mut out = vec![Vec::new(); red.len() + 1];
        for it in items {
            let d = match it {
                Factor::Num(_) => 0,
                Factor::Load(a) => red
                    .iter()
                    .enumerate()
                    .filter(|(_, (x, _))| self.plan.acc[*a].dep(*x))
                    .map(|(d, _)| d + 1)
                    .max()
                    .unwrap_or(0),
            };
            out[d].push(*it);
        }
        out
    }

    /// The reduction loops `red[d..]` with the partial products of the
    /// items that vary in them, then `leaf`.
    #[allow(clippy::too_many_arguments)]
    fn red_loops(
        &mut self,
        d: usize,
        upto: usize,
        groups: &[Vec<Factor>],
        ptrs: &[Value],
        geo: &TileGeometry,
        parts: &Parts,
        leaf: &mut dyn FnMut(&mut Self, &[Value], &Parts),
    ) {
        if d == upto {
            return leaf(self, ptrs, parts);
        }
        let (var, n) = self.plan.red[d].clone();
        let (z, nv) = match (self.rrange, self.kblk) {
            (Some(r), _) => r,
            (None, Some(k)) => (k.start, k.end),
            (None, None) => (self.iconst(0), self.size(&n)),
        };
        let mut body = |em: &mut Self, p: &[Value], kv: Value| {
            em.cur_k = Some(kv);
            let mut parts = parts.clone();
            em.apply(&groups[d + 1], p, geo, &mut parts);
            em.red_loops(d + 1, upto, groups, p, geo, &parts, leaf);
        };
        let innermost = d + 1 == upto && self.plan.mode == Mode::Tile && self.full_tile;
        let mut s = z;
        if innermost && self.plan.unroll > 1 {
            s = self.lp_u(var, s, nv, 1, self.plan.unroll, ptrs, &mut body);
        }
        self.lp(var, s, nv, 1, ptrs, &mut body);
    }

    /// One register tile in `Tile` mode: `rows × cols` groups of `lanes`
    /// at the pointers' origin (`v_at` along `v`), the whole reduction,
    /// then `action`. With a loop domain ([`TilePlan::tdom`]) the reduction
    /// runs over the union of the lanes' domains in three pieces: masked
    /// up to the largest lower bound, unmasked up to the smallest upper
    /// one, masked to the largest. Each lane adds exactly the terms of its
    /// own domain, in increasing order, so every output is summed the same
    /// way whatever tile (or lane) it falls in.
    fn tile(
        &mut self,
        top: &[Value],
        rows: usize,
        cols: usize,
        lanes: usize,
        action: &Action,
        v_at: Value,
    ) {
        let (rg, xp, owners) = self.row_geo(rows, top, true);
        let ptrs = &xp[..];
        let saved = std::mem::replace(&mut self.owners, owners);
        self.full_tile = rows == self.plan.rows.max(1) && cols == self.plan.cols;
        let geo = self.geo(&rg, cols, lanes);
        let accs: Vec<Vec<Variable>> = (0..rows)
            .map(|_| (0..cols).map(|_| self.acc_var(lanes)).collect())
            .collect();
        let groups = self.by_depth(&self.plan.inner.clone());
        let mut parts = Parts::new(rows, cols);
        self.apply(&groups[0], ptrs, &geo, &mut parts);
        let upto = self.plan.red.len();
        let mut leaf = |em: &mut Self, _: &[Value], parts: &Parts| {
            let masks = em.masks.clone();
            let k = em.cur_k;
            for (r, row) in accs.iter().enumerate() {
                for (c, acc) in row.iter().enumerate() {
                    let m = match (&masks, k) {
                        (Some(ms), Some(k)) => Some(em.lane_mask(ms[c], k, lanes)),
                        _ => None,
                    };
                    em.update_m(*acc, parts, r, c, lanes, m);
                }
            }
        };
        if self.plan.tdom.is_empty() {
            self.red_loops(0, upto, &groups, ptrs, &geo, &parts, &mut leaf);
        } else {
            let (pieces, bounds) = self.dom_pieces(cols, lanes, v_at);
            let saved_full = self.full_tile;
            for (k, w) in pieces.windows(2).enumerate() {
                let masked = k != 1;
                self.rrange = Some((w[0], w[1]));
                self.masks = masked.then(|| bounds.clone());
                // the masked pieces are short: not unrolled
                self.full_tile = saved_full && !masked;
                self.red_loops(0, upto, &groups, ptrs, &geo, &parts, &mut leaf);
            }
            self.full_tile = saved_full;
            self.rrange = None;
            self.masks = None;
            self.cur_k = None;
        }
        self.owners = saved;
        let sums: Vec<Vec<Value>> = accs
            .iter()
            .map(|row| row.iter().map(|a| self.b.use_var(*a)).collect())
            .collect();
        let (rg, xp, _) = self.row_geo(rows, top, false);
        let ptrs = &xp[..];
        let geo = self.geo(&rg, cols, lanes);
        match action {
            Action::Store => {
                let mut parts = Parts::new(rows, cols);
                let post = self.plan.post.clone();
                self.apply(&post, ptrs, &geo, &mut parts);
                self.splat_s(lanes, &mut parts);
                for (r, row) in sums.iter().enumerate() {
                    for (c, &x) in row.iter().enumerate() {
                        // a later block adds the partial sum the earlier
                        // ones left in the output; the last multiplies
                        let x = match self.kblk {
                            Some(k) => {
                                let old = self.load_tile(ptrs, &geo, r, c);
                                let y = self.b.ins().fadd(old, x);
                                self.b.ins().select(k.first, x, y)
                            }
                            None => x,
                        };
                        let val = match self.combine(&parts, r, c) {
                            Some(m) => {
                                let y = self.b.ins().fmul(x, m);
                                match self.kblk {
                                    Some(k) => self.b.ins().select(k.last, y, x),
                                    None => y,
                                }
                            }
                            None => x,
                        };
                        self.store_tile(val, ptrs, &geo, r, c);
                    }
                }
            }
            Action::Accumulate { vecs, scalar } => {
                let mut parts = Parts::new(rows, cols);
                let mid = self.plan.mid.clone();
                self.apply(&mid, ptrs, &geo, &mut parts);
                self.splat_s(lanes, &mut parts);
                for (r, row) in sums.iter().enumerate() {
                    for (c, &x) in row.iter().enumerate() {
                        let target = if lanes == self.plan.lanes {
                            vecs[c]
                        } else {
                            *scalar
                        };
                        let a = self.b.use_var(target);
                        let n = match self.combine(&parts, r, c) {
                            Some(m) => self.b.ins().fma(m, x, a),
                            None => self.b.ins().fadd(a, x),
                        };
                        self.b.def_var(target, n);
                    }
                }
            }
        }
    }

    /// The output's value (a vector or a number) at row `r`, column `c` of
    /// a tile (as [`Self::store_tile`] stores it).
    fn load_tile(&mut self, ptrs: &[Value], geo: &TileGeometry, r: usize, c: usize) -> Value {
        let base = ptrs[geo.row_slot[0][r]];
        let ro = geo.row_off[0][r];
        let (ft, vt, vl) = (self.ft, self.vt, geo.lanes);
        if vl == 1 {
            return self.load_at(ft, base, &[ro, geo.col_off[0][c]]);
        }
        if self.unit(0, self.plan.v) {
            return self.load_at(vt, base, &[ro, geo.col_off[0][vl * c]]);
        }
        let xs: Vec<Value> = (0..vl)
            .map(|l| self.load_at(ft, base, &[ro, geo.col_off[0][vl * c + l]]))
            .collect();
        let mut v = self.b.ins().splat(vt, xs[0]);
        for (l, &x) in xs.iter().enumerate().skip(1) {
            v = self.b.ins().insertlane(v, x, l as u8);
        }
        v
    }

    /// Store a tile's value (a vector or a number) at row `r`, column `c`.
    fn store_tile(&mut self, val: Value, ptrs: &[Value], geo: &TileGeometry, r: usize, c: usize) {
        let base = ptrs[geo.row_slot[0][r]];
        let ro = geo.row_off[0][r];
        if geo.lanes == 1 {
            return self.store_at(val, base, &[ro, geo.col_off[0][c]]);
        }
        let unit = self.unit(0, self.plan.v);
        if unit {
            return self.store_at(val, base, &[ro, geo.col_off[0][geo.lanes * c]]);
        }
        for l in 0..geo.lanes {
            let x = self.b.ins().extractlane(val, l as u8);
            self.store_at(x, base, &[ro, geo.col_off[0][geo.lanes * c + l]]);
        }
    }

    /// The variants of a tile along `v`: (elements per step, columns,
    /// lanes), widest first.
    fn v_variants(&self) -> Vec<(i64, usize, usize)> {
        let (cols, lanes) = (self.plan.cols, self.plan.lanes);
        let mut vs = vec![((cols * lanes) as i64, cols, lanes)];
        if cols > 1 {
            vs.push((lanes as i64, 1, lanes));
        }
        if lanes > 1 {
            vs.push((1, 1, 1));
        }
        vs
    }

    /// `Tile` mode: the tile level's `w` and `v` loops (in panels of `v`),
    /// a register tile per step.
    fn tiles_g(&mut self, ptrs: &[Value], action: &Action) {
        let plan = self.plan;
        let (v, vn) = (plan.v, plan.v_size.clone());
        let (v0, v1) = self.range(v, &vn);
        let rows_steps: Vec<usize> = match plan.w {
            Some(_) if plan.rows > 1 => vec![plan.rows, 1],
            Some(_) => vec![1],
            None => vec![1],
        };
        let variants = self.v_variants();
        let over_v = |em: &mut Self, ptrs: &[Value], rows: usize, a: Value, b: Value| {
            let mut own = ptrs.to_vec();
            if let Some(pk) = plan.pack {
                own[pk.a] = em.pack_a(ptrs, rows);
                em.pa_on = true;
            }
            let mut s = a;
            for (vi, &(step, cols, lanes)) in variants.iter().enumerate() {
                let mut p2 = own.clone();
                if let (0, Some(pk), Some(base)) = (vi, plan.pack, em.pb_base) {
                    p2[pk.b] = base;
                    em.pb_on = true;
                }
                s = em.lp(v, s, b, step, &p2, &mut |em, p, vi| {
                    em.tile(p, rows, cols, lanes, action, vi)
                });
                em.pb_on = false;
            }
            em.pa_on = false;
        };
        let over_w = |em: &mut Self, ptrs: &[Value], a: Value, b: Value| match plan.w {
            None => over_v(em, ptrs, 1, a, b),
            Some(w) => {
                let wn = plan.w_size.clone().expect("w has a size");
                let (w0, w1) = em.range(w, &wn);
                let mut s = w0;
                for &rows in &rows_steps {
                    s = em.lp(w, s, w1, rows as i64, ptrs, &mut |em, p, _| {
                        over_v(em, p, rows, a, b)
                    });
                }
            }
        };
        // blocks of the reduction (a pseudo-variable no access depends
        // on): at least one, so an empty sum still stores its outputs
        let over_k = |em: &mut Self, ptrs: &[Value], a: Value, b: Value| {
            if plan.kblock == 0 {
                return over_w(em, ptrs, a, b);
            }
            let kb = plan.kblock as i64;
            let nk = em.size(&plan.red[0].1);
            let one = em.iconst(1);
            let nk1 = em.b.ins().smax(nk, one);
            let past = em.b.ins().iadd_imm_s(nk1, kb - 1);
            let z = em.iconst(0);
            em.lp(usize::MAX - 1, z, past, kb, ptrs, &mut |em, p, ks| {
                let nk = em.size(&plan.red[0].1);
                let full = em.b.ins().iadd_imm_s(ks, kb);
                let end = em.b.ins().smin(full, nk);
                let first = em.b.ins().icmp_imm_s(IntCC::Equal, ks, 0);
                let last = em.b.ins().icmp(IntCC::SignedGreaterThanOrEqual, full, nk);
                let saved = em.kblk.replace(KBlock {
                    start: ks,
                    end,
                    first,
                    last,
                });
                if plan.pack.is_some() {
                    em.pb_base = Some(em.pack_b(p, a, b));
                }
                over_w(em, p, a, b);
                em.pb_base = None;
                em.kblk = saved;
            });
        };
        if plan.panel > 0 {
            // panels of v (a pseudo-variable no access depends on); the
            // last may be partial
            let panel = plan.panel as i64;
            let past = self.b.ins().iadd_imm_s(v1, panel - 1);
            self.lp(usize::MAX, v0, past, panel, ptrs, &mut |em, p, pc| {
                let full = em.b.ins().iadd_imm_s(pc, panel);
                let end = em.b.ins().smin(full, v1);
                over_k(em, p, pc, end)
            });
        } else {
            over_k(self, ptrs, v0, v1);
        }
    }

    /// Pack the full-width column strips of [`Pack::b`] in `from..to`
    /// along `v`, the current block of `k`, into its stack buffer; returns
    /// the packed pointer at the origin of `v` and `k` (so the tiles'
    /// loops, starting at `from` and at the block's start, reach the
    /// buffer's first element).
    fn pack_b(&mut self, ptrs: &[Value], from: Value, to: Value) -> Value {
        let plan = self.plan;
        let (pk, (_, slot)) = (plan.pack.expect("packing"), self.slots.expect("slots"));
        let kb = self.kblk.expect("a block of k");
        let (v, k) = (plan.v, plan.red[0].0);
        let nr = (plan.cols * plan.lanes) as i64;
        let base = self.b.ins().stack_addr(types::I64, slot, 0);
        let (ft, vt, esz) = (self.ft, self.vt, self.esz);
        let o1 = self.b.ins().imul_imm_s(from, esz * plan.kblock as i64);
        let o2 = self.b.ins().imul_imm_s(kb.start, esz * nr);
        let o = self.b.ins().iadd(o1, o2);
        let vb = self.b.ins().isub(base, o);
        let saved = std::mem::replace(&mut self.owners, vec![pk.b, PB]);
        let unit = self.unit(pk.b, v);
        let cols = plan.cols;
        let mf = self.mf;
        let mv = self.mv;
        self.lp(v, from, to, nr, &[ptrs[pk.b], vb], &mut |em, q, _| {
            em.lp(k, kb.start, kb.end, 1, q, &mut |em, r, _| {
                if unit {
                    for c in 0..cols {
                        let o = (16 * c) as i32;
                        let x = em.b.ins().load(vt, mv, r[0], o);
                        em.b.ins().store(mv, x, r[1], o);
                    }
                } else {
                    let (s, _) = em.stride(pk.b, v).expect("b runs along v");
                    for l in 0..nr {
                        let o = em.b.ins().imul_imm_s(s, l);
                        let a = em.b.ins().iadd(r[0], o);
                        let x = em.b.ins().load(ft, mf, a, 0);
                        em.b.ins().store(mf, x, r[1], (esz * l) as i32);
                    }
                }
            });
        });
        self.owners = saved;
        vb
    }

    /// Pack `rows` rows of [`Pack::a`] from the tile's origin, the current
    /// block of `k`, into its stack buffer; returns the packed pointer at
    /// the origin of `k`.
    fn pack_a(&mut self, ptrs: &[Value], rows: usize) -> Value {
        let plan = self.plan;
        let (pk, (slot, _)) = (plan.pack.expect("packing"), self.slots.expect("slots"));
        let kb = self.kblk.expect("a block of k");
        let (w, k) = (plan.w.expect("rows along w"), plan.red[0].0);
        let (sw, _) = self.stride(pk.a, w).expect("a runs along w");
        let mut src = vec![ptrs[pk.a]];
        for r in 1..rows {
            let o = self.b.ins().imul_imm_s(sw, r as i64);
            src.push(self.b.ins().iadd(ptrs[pk.a], o));
        }
        self.mr = rows;
        let base = self.b.ins().stack_addr(types::I64, slot, 0);
        let (ft, esz) = (self.ft, self.esz);
        let o = self.b.ins().imul_imm_s(kb.start, esz * rows as i64);
        let va = self.b.ins().isub(base, o);
        src.push(va);
        let mut owners = vec![pk.a; rows];
        owners.push(PA);
        let saved = std::mem::replace(&mut self.owners, owners);
        let mf = self.mf;
        // (`pa_on` is off: `a` is read in place, the copy is `PA`)
        self.lp(k, kb.start, kb.end, 1, &src, &mut |em, q, _| {
            for r in 0..rows {
                let x = em.b.ins().load(ft, mf, q[r], 0);
                em.b.ins().store(mf, x, q[rows], (esz * r as i64) as i32);
            }
        });
        self.owners = saved;
        va
    }

    /// `Reduce` mode: the tile level's `w` loop, `rows` outputs at a time,
    /// each summed in vector accumulators along `v` (the innermost loop).
    fn tiles_r(&mut self, ptrs: &[Value], action: &Action) {
        let plan = self.plan;
        match plan.w {
            None => self.tile_r(ptrs, 1, action, None, None),
            Some(w) => {
                let wn = plan.w_size.clone().expect("w has a size");
                let (w0, w1) = self.range(w, &wn);
                let mut s = w0;
                let steps: Vec<usize> = if plan.rows > 1 {
                    vec![plan.rows, 1]
                } else {
                    vec![1]
                };
                for rows in steps {
                    // the rows' pointers are made here and advanced by the
                    // `w` loop (block parameters), so the reduction loop
                    // finds each in a register: computed in the tile,
                    // Cranelift's optimiser would recompute them in the
                    // reduction loop's every iteration
                    let (rg, xp, owners) = self.row_geo(rows, ptrs, true);
                    let saved = std::mem::replace(&mut self.owners, owners);
                    s = self.lp(w, s, w1, rows as i64, &xp, &mut |em, p, wi| {
                        em.tile_r(p, rows, action, Some(wi), Some(&rg))
                    });
                    self.owners = saved;
                }
            }
        }
    }

    /// One tile of `rows` outputs in `Reduce` mode (`w_at`: the first
    /// row's index). With a loop domain ([`TilePlan::hi`]) the rows share the
    /// widest vector loop up to the smallest of their bounds, then each
    /// row continues alone to its own: every output is still summed in
    /// the same order whatever tile it falls in.
    /// `pre`: the rows' geometry when `top` already holds their pointers
    /// (see [`TileEmitter::tiles_r`]).
    fn tile_r(
        &mut self,
        top: &[Value],
        rows: usize,
        action: &Action,
        w_at: Option<Value>,
        pre: Option<&RowGeo>,
    ) {
        let (cols, lanes) = (self.plan.cols, self.plan.lanes);
        let v = self.plan.v;
        let (accs, tails) = self.r_accumulators(rows, cols, lanes);
        let groups = self.by_depth(&self.plan.inner.clone());
        let (rg, xp, owners) = match pre {
            Some(rg) => (rg.clone(), top.to_vec(), self.owners.clone()),
            None => self.row_geo(rows, top, true),
        };
        let ptrs = &xp[..];
        let saved = std::mem::replace(&mut self.owners, owners);
        let geo0 = self.geo(&rg, 1, 1);
        let mut parts = Parts::new(rows, 1);
        self.apply(&groups[0], ptrs, &geo0, &mut parts);
        let upto = self.plan.red.len() - 1;
        let vn = self.plan.v_size.clone();
        let variants = self.v_variants();
        // the reduction, `v` over its whole range or over `vr`
        let reduce = |em: &mut Self, vr: Option<(Value, Value)>| {
            em.red_loops(
                0,
                upto,
                &groups,
                ptrs,
                &geo0,
                &parts,
                &mut |em, p, parts| {
                    // the variants `vis` from `s` to `end`, updating every row
                    // or only row `only`
                    let run = |em: &mut Self,
                               mut s: Value,
                               end: Value,
                               vis: &[usize],
                               only: Option<usize>|
                     -> Value {
                        for &vi in vis {
                            let (step, vcols, vlanes) = variants[vi];
                            let geo = em.geo(&rg, vcols, vlanes);
                            let mut base = parts.reshape(vcols);
                            em.splat_s(vlanes, &mut base);
                            let unroll = if vi == 0 && rows == em.plan.rows {
                                em.plan.unroll
                            } else {
                                1
                            };
                            let mut body = |em: &mut Self, p: &[Value], _: Value| {
                                let mut parts = base.clone();
                                em.apply(&groups[upto + 1], p, &geo, &mut parts);
                                for (r, row) in accs.iter().enumerate() {
                                    if only.is_some_and(|o| o != r) {
                                        continue;
                                    }
                                    for (c, &acc) in row.iter().take(vcols).enumerate() {
                                        let target = if vlanes == lanes { acc } else { tails[r] };
                                        em.update(target, &parts, r, c, vlanes);
                                    }
                                }
                            };
                            if unroll > 1 {
                                s = em.lp_u(v, s, end, step, unroll, p, &mut body);
                            }
                            s = em.lp(v, s, end, step, p, &mut body);
                        }
                        s
                    };
                    let z = em.iconst(0);
                    let n = em.size(&vn);
                    let all: Vec<usize> = (0..variants.len()).collect();
                    match w_at {
                        Some(w0) if !em.plan.hi.is_empty() => {
                            let his = em.row_domains(w0, rows, n, z);
                            let common =
                                his[1..].iter().fold(his[0], |m, &h| em.b.ins().smin(m, h));
                            let s = run(em, z, common, &[0], None);
                            for (r, &h) in his.iter().enumerate() {
                                run(em, s, h, &all, Some(r));
                            }
                        }
                        _ => {
                            let (a, b) = vr.unwrap_or((z, n));
                            run(em, a, b, &all, None);
                        }
                    }
                },
            );
        };
        match self.plan.vblock {
            Some(a) => {
                // blocks of `v` where the across load's rows alias in L1
                // or outrun the TLB (as `schedule::tiled`), else as is
                let (st, _) = self.stride(a, v).expect("the load runs along v");
                let nv = self.size(&vn);
                if_blocks_pay(
                    self,
                    st,
                    nv,
                    &mut |em| {
                        let z = em.iconst(0);
                        for_blocks(em, z, nv, VBLOCK, None, &mut |em, a0, a1| {
                            reduce(em, Some((a0, a1)))
                        });
                    },
                    &mut |em| reduce(em, None),
                );
            }
            None if self.plan.hi.is_empty() => {
                // blocks of `SUM_BLOCK` terms on fresh accumulators, their
                // sums kept by `Levels` (the accuracy of a long sum)
                let levels = Levels::new_typed(self.b, rows, self.ft);
                let nv = self.size(&vn);
                let z = self.iconst(0);
                for_blocks(self, z, nv, SUM_BLOCK, self.poll, &mut |em, a0, a1| {
                    for &a in accs.iter().flatten().chain(&tails) {
                        let lanes = if tails.contains(&a) { 1 } else { lanes };
                        let zero = em.zero(lanes);
                        em.b.def_var(a, zero);
                    }
                    reduce(em, Some((a0, a1)));
                    let sums = em.row_sums(&accs, &tails);
                    levels.add(em.b, &sums);
                });
                let sums = levels.totals(self.b);
                self.owners = saved;
                self.finish_r(top, rows, action, sums);
                return;
            }
            None => reduce(self, None),
        }
        self.owners = saved;
        let sums = self.row_sums(&accs, &tails);
        self.finish_r(top, rows, action, sums);
    }

    /// Each row's accumulators summed across lanes.
    fn row_sums(&mut self, accs: &[Vec<Variable>], tails: &[Variable]) -> Vec<Value> {
        let lanes = self.plan.lanes;
        (0..accs.len())
            .map(|r| {
                let vals = accs[r].iter().map(|a| self.b.use_var(*a)).collect();
                let tail = tails.get(r).map(|t| self.b.use_var(*t));
                self.hsum(vals, lanes, tail)
            })
            .collect()
    }

    /// The accumulators of a `Reduce` tile: `cols` per row of `lanes`
    /// lanes, and with two lanes one scalar per row for the one-lane tail.
    fn r_accumulators(
        &mut self,
        rows: usize,
        cols: usize,
        lanes: usize,
    ) -> (Vec<Vec<Variable>>, Vec<Variable>) {
        let accs: Vec<Vec<Variable>> = (0..rows)
            .map(|_| (0..cols).map(|_| self.acc_var(lanes)).collect())
            .collect();
        let tails: Vec<Variable> = if lanes > 1 {
            (0..rows).map(|_| self.acc_var(1)).collect()
        } else {
            vec![]
        };
        (accs, tails)
    }

    /// The end of [`TileEmitter::tile_r`]: each row's sum (its
    /// accumulators summed across lanes) stored times the factors outside the sum, or
    /// added into the outer sum's scalar accumulator times the middle
    /// factors.
    fn finish_r(&mut self, top: &[Value], rows: usize, action: &Action, sums: Vec<Value>) {
        let (rg, xp, _) = self.row_geo(rows, top, false);
        let ptrs = &xp[..];
        let geo = self.geo(&rg, 1, 1);
        match action {
            Action::Store => {
                let mut parts = Parts::new(rows, 1);
                let post = self.plan.post.clone();
                self.apply(&post, ptrs, &geo, &mut parts);
                for (r, &x) in sums.iter().enumerate() {
                    let val = match self.combine(&parts, r, 0) {
                        Some(m) => self.b.ins().fmul(x, m),
                        None => x,
                    };
                    self.store_at(val, ptrs[geo.row_slot[0][r]], &[geo.row_off[0][r]]);
                }
            }
            Action::Accumulate { scalar, .. } => {
                let mut parts = Parts::new(rows, 1);
                let mid = self.plan.mid.clone();
                self.apply(&mid, ptrs, &geo, &mut parts);
                for (r, &x) in sums.iter().enumerate() {
                    let a = self.b.use_var(*scalar);
                    let n = match self.combine(&parts, r, 0) {
                        Some(m) => self.b.ins().fma(m, x, a),
                        None => self.b.ins().fadd(a, x),
                    };
                    self.b.def_var(*scalar, n);
                }
            }
        }
    }

    /// Per row `r` of a tile starting at row `w0`, the end of the summed
    /// variable's domain ([`TilePlan::hi`]): `max(0, min(n, c * (w0 + r)
    /// + k, …))`.
    fn row_domains(&mut self, w0: Value, rows: usize, n: Value, z: Value) -> Vec<Value> {
        (0..rows)
            .map(|r| {
                let wr = self.b.ins().iadd_imm_s(w0, r as i64);
                let mut h = n;
                for &(c, k) in &self.plan.hi {
                    let x = self.b.ins().imul_imm_s(wr, c);
                    let x = self.b.ins().iadd_imm_s(x, k);
                    h = self.b.ins().smin(h, x);
                }
                self.b.ins().smax(h, z)
            })
            .collect()
    }

    fn tiles(&mut self, ptrs: &[Value], action: &Action) {
        match self.plan.mode {
            Mode::Tile => self.tiles_g(ptrs, action),
            Mode::Reduce => self.tiles_r(ptrs, action),
        }
    }

    /// `buf[g] = post * sum(red) inner`: the tile level is the output.
    fn one_level(&mut self, ptrs: &[Value]) {
        let around = self.plan.around.clone();
        self.loops(&around, ptrs, &mut |em, p| em.tiles(p, &Action::Store));
    }

    /// `buf[g] = post * sum(outer) mid * sum(red) inner`: every output in
    /// turn, its outer sum a tile at a time.
    fn two_level(&mut self, ptrs: &[Value]) {
        let gens = self.plan.gens.clone();
        let around = self.plan.around.clone();
        self.loops(&gens, ptrs, &mut |em, p| {
            let lanes = em.plan.lanes;
            let vecs: Vec<Variable> = if em.plan.mode == Mode::Tile {
                (0..em.plan.cols).map(|_| em.acc_var(lanes)).collect()
            } else {
                vec![]
            };
            let scalar = em.acc_var(1);
            let action = Action::Accumulate {
                vecs: vecs.clone(),
                scalar,
            };
            em.loops(&around, p, &mut |em, p| em.tiles(p, &action));
            let vals = vecs.iter().map(|a| em.b.use_var(*a)).collect();
            let tail = em.b.use_var(scalar);
            let total = em.hsum(vals, lanes, Some(tail));
            let rg = RowGeo {
                slot: (0..em.plan.acc.len()).map(|a| vec![a]).collect(),
                off: vec![vec![Offset::C(0)]; em.plan.acc.len()],
            };
            let geo = em.geo(&rg, 1, 1);
            let mut parts = Parts::new(1, 1);
            let post = em.plan.post.clone();
            em.apply(&post, p, &geo, &mut parts);
            let val = match em.combine(&parts, 0, 0) {
                Some(m) => em.b.ins().fmul(total, m),
                None => total,
            };
            em.store_at(val, p[0], &[]);
        });
    }
}
