//! The loop IR: what [`super::lower`] produces and every later stage
//! reads. Buffers (parameter leaves, `let` temporaries, result leaves),
//! loop nests that write one buffer each ([`Nest`]), and scalar
//! expressions ([`Scalar`]) with accumulation loops, guards ([`Cond`]) and
//! strided loads ([`LoadIndex`], over affine [`IndexExpr`]s); the buffers'
//! stride [`Layout`]s. Owns these types and pure helpers on them
//! ([`affine`], [`walk`]); it makes no decision and must not depend on any
//! later stage (`schedule`, `emit`, `run`).
//!
//! **Records.** A value holding pairs — a result or a `let` — is carried
//! as struct of arrays, as at the call boundary: one buffer and one nest
//! per leaf, over the `gen`s above that leaf, addressed by the leaf's
//! projection path (`gen(i:n) (gen(j:m) a, b)` is a `[n,m]` buffer at
//! `.0` and a `[n]` buffer at `.1`).

pub mod affine;
pub mod layout;
pub mod walk;

use crate::syntax::ast::{BinOp, CmpOp, Func, RedOp};
pub use layout::Layout;
pub use walk::{may_be_strong, nodes_beyond};

/// A size: a literal, or the `k`-th named size of the kernel.
#[derive(Clone, Debug, PartialEq)]
pub enum SizeRef {
    Lit(i64),
    Named(usize),
}

/// Where a buffer comes from.
#[derive(Clone, Debug)]
pub enum BufKind {
    /// A leaf of parameter `param` (projection path into the boundary form).
    Param { param: usize, path: Vec<u8> },
    /// A `let` temporary (C order, allocated by the caller of native code).
    Temp,
    /// A leaf of the result (projection path into the boundary form).
    Out { path: Vec<u8> },
}

/// A buffer and its axes.
#[derive(Clone, Debug)]
pub struct Buf {
    pub kind: BufKind,
    pub dims: Vec<SizeRef>,
    pub name: String,
    /// For a `let` temporary whose elements may be strong zeros: the
    /// companion temporary (same dims, C order) holding each element's
    /// strong-zero flag (1.0 strong, 0.0 not), written by the nest that
    /// writes this buffer and read wherever this buffer is loaded.
    pub flag: Option<usize>,
}

/// An affine index over loop variables.
#[derive(Clone, Debug)]
pub struct IndexExpr {
    pub terms: Vec<(usize, i64)>,
    pub constant: i64,
}

/// A predicate over loop variables.
#[derive(Clone, Debug)]
pub enum Cond {
    Cmp(CmpOp, IndexExpr, IndexExpr),
    And(Box<Cond>, Box<Cond>),
    Or(Box<Cond>, Box<Cond>),
    Not(Box<Cond>),
}

/// One axis of a load: the index, and whether it may leave `0..dim`
/// (then it is checked and reads 0 outside).
#[derive(Clone, Debug)]
pub struct LoadIndex {
    pub aff: IndexExpr,
    pub dim: SizeRef,
    pub checked: bool,
}

/// Scalar expressions.
#[derive(Clone, Debug)]
pub enum Scalar {
    Num(f64),
    Load(usize, Vec<LoadIndex>),
    Bracket(Cond),
    Eps(Vec<IndexExpr>),
    Bin(BinOp, Box<Scalar>, Box<Scalar>),
    Neg(Box<Scalar>),
    Call(Func, Vec<Scalar>),
    Sum(usize, SizeRef, Box<Scalar>),
    /// `max(v:n) body` / `min(v:n) body` (IEEE `maximum`/`minimum`,
    /// identity -inf / +inf; never a strong zero).
    Reduce(RedOp, usize, SizeRef, Box<Scalar>),
    /// An index expression as a number (`i`, `i + 1`): the loop counters'
    /// integer value converted to f64.
    Index(IndexExpr),
    /// A size as a number: its run-time value converted to f64.
    SizeVal(SizeRef),
    /// `where(c, a, b)`: the arguments are the compared numbers of `c`
    /// (left to right), then `a`, then `b`; the result is an ordinary
    /// number (never a strong zero).
    Select(SelCond, Vec<Scalar>),
    /// `fold(var:n, acc = init) body`, sequential (see [`FoldLoop`]).
    Fold(Box<FoldLoop>),
    /// The current value of an accumulator slot of an enclosing fold.
    Acc(usize),
    /// A load of a parameter buffer where some axes are gathers: each
    /// `(axis, g, c)` replaces that axis' [`LoadIndex`] (kept for its
    /// `dim`) by the integer `g + c`, `g` an integer array's element read
    /// as an f64. The call's check keeps every such index on its axis; the
    /// load is guarded anyway (0 outside), so it never reads out of bounds.
    Gather(usize, Vec<LoadIndex>, Vec<(usize, Box<Scalar>, i64)>),
}

/// `fold(var:n, acc = init) body` with the accumulator (a number or a
/// tree of pairs of numbers) flattened to its leaves, in path order: one
/// slot, one initial value and one body per leaf. Slots are numbered as
/// loop variables are (they are never a loop's), so that a value that
/// reads one counts as depending on it wherever loops are hoisted out of.
/// Its value is leaf `pick` of the final accumulator; every leaf is an
/// ordinary number (never a strong zero).
#[derive(Clone, Debug)]
pub struct FoldLoop {
    pub var: usize,
    pub n: SizeRef,
    pub slots: Vec<usize>,
    pub init: Vec<Scalar>,
    pub body: Vec<Scalar>,
    pub pick: usize,
}

/// The shape of a `where` condition: each `Cmp` compares the next two
/// arguments of its [`Scalar::Select`] (IEEE: false with a NaN, except
/// `!=`).
#[derive(Clone, Debug, PartialEq)]
pub enum SelCond {
    Cmp(CmpOp),
    And(Box<SelCond>, Box<SelCond>),
    Or(Box<SelCond>, Box<SelCond>),
    Not(Box<SelCond>),
}

/// `buf[v0, v1, …] = body` for every value of the loop variables.
#[derive(Clone, Debug)]
pub struct Nest {
    pub buf: usize,
    pub vars: Vec<(usize, SizeRef)>,
    pub body: Scalar,
}

/// A whole kernel.
#[derive(Clone, Debug)]
pub struct LoopProgram {
    pub bufs: Vec<Buf>,
    /// In execution order.
    pub nests: Vec<Nest>,
    pub n_vars: usize,
    /// Named sizes, in the order native code receives them.
    pub sizes: Vec<String>,
    /// Column sums that native code may compute ahead into a scratch
    /// vector, per layout (see `super::schedule::columns`); empty after
    /// `lower`.
    pub cols: Vec<Col>,
    /// Row sums that the nest writing their rows may compute as it writes
    /// each row, per layout (see `super::schedule::row_sums`); empty after
    /// `lower`.
    pub row_sums: Vec<RowSum>,
}

/// A nest `sum[i] = sum(j) map[i, j]` right after the nest writing the
/// `Temp` buffer `map` (`map[i, j] = f(i, j)` over the same ranges, `i`
/// outermost). Per layout, `super::schedule::rowsum::fused` decides
/// whether the map's nest adds each row as it writes it (storing
/// `sum[i]`, and the sum's nest is skipped) or the sum's nest runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowSum {
    /// The nest writing the rows (the sum's nest is the next one).
    pub map_nest: usize,
    /// The buffer of the rows (`[n, m]`).
    pub map: usize,
    /// The buffer of the sums (`[n]`).
    pub sum: usize,
}

/// A sum `sum(j) f(i, j)` inside the nest writing `consumer` that depends
/// on one enclosing loop variable `i` only, with its scratch vector: the
/// `Temp` buffer `buf` (`[n]`, `n` the range of `i`) and the nest writing
/// it, `buf[i'] = sum(j') f(i', j')` (fresh variables), placed just before
/// the consumer. Per layout, `super::schedule::materialise` decides
/// whether that nest runs (and the consumer loads `buf[i]` instead of the
/// sum) or is skipped (and the consumer computes the sum in place).
#[derive(Clone, Debug)]
pub struct Col {
    /// The scratch buffer (written by the nest with `buf` as its output).
    pub buf: usize,
    /// The output buffer of the consuming nest.
    pub consumer: usize,
    /// The summed variable of the sum in the consumer (names the node).
    pub sum_var: usize,
    /// The enclosing loop variable the sum depends on, in the consumer.
    pub outer: usize,
    /// The range of `outer` (the scratch vector's length).
    pub n: SizeRef,
    /// The scratch nest is a GEMM stage (a matrix-vector product, and the
    /// kernel runs GEMM stages): computed ahead in every layout.
    pub lib: bool,
}

impl LoopProgram {
    /// Whether `nest` writes or reads a buffer whose elements may be strong
    /// zeros (a `let` temporary with a flag buffer, [`Buf::flag`]). Only
    /// the general code generator carries the flags; the dense and GEMM
    /// stages take no such nest.
    pub fn touches_strong_buffers(&self, nest: &Nest) -> bool {
        fn reads(p: &LoopProgram, s: &Scalar) -> bool {
            match s {
                Scalar::Load(b, _) => p.bufs.get(*b).is_some_and(|b| b.flag.is_some()),
                Scalar::Num(_) | Scalar::Bracket(_) | Scalar::Eps(_) => false,
                Scalar::Bin(_, a, b) => reads(p, a) || reads(p, b),
                Scalar::Neg(a) | Scalar::Sum(_, _, a) => reads(p, a),
                Scalar::Reduce(_, _, _, a) => reads(p, a),
                Scalar::Call(_, args) => args.iter().any(|a| reads(p, a)),
                Scalar::Index(_) | Scalar::SizeVal(_) => false,
                Scalar::Select(_, args) => args.iter().any(|a| reads(p, a)),
                Scalar::Fold(f) => f.init.iter().chain(&f.body).any(|a| reads(p, a)),
                Scalar::Acc(_) => false,
                Scalar::Gather(b, _, dyns) => {
                    p.bufs.get(*b).is_some_and(|b| b.flag.is_some())
                        || dyns.iter().any(|(_, g, _)| reads(p, g))
                }
            }
        }
        self.bufs.get(nest.buf).is_some_and(|b| b.flag.is_some()) || reads(self, &nest.body)
    }
}

pub fn resolve(s: &SizeRef, sizes: &[i64]) -> usize {
    match s {
        SizeRef::Lit(n) => *n as usize,
        SizeRef::Named(k) => sizes[*k] as usize,
    }
}
