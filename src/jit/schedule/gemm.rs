//! Which nests are GEMM stages ([`plan`]): a (batched) matrix–matrix or
//! matrix–vector product over plain indices, in any permutation and with
//! any strides, times an optional scalar, recorded symbolically
//! ([`GemmPlan`]: which loop variable is an M, N, K or batch axis, and
//! where it indexes each buffer). The library call itself, at run time,
//! is `run::gemm`'s. Owns the recognition only; it must not call the library.
//!
//! # What is taken
//!
//! `buf[g..] = sum(k..) α * X[..] * Y[..]` (sums, products and negations in
//! any nesting, which is linear in each factor) where `X` and `Y` are the
//! only two loads with indices, every index is a plain loop variable (a gen
//! or sum variable, unchecked, of the axis's range), `α` is a product of
//! number literals and scalar (0-d) loads, every gen variable occurs in `X`
//! or `Y`, every sum variable in both; gen variables only in `X` form M,
//! only in `Y` form N, in both the batch; there is at least one sum
//! variable and at least one M or N variable. The whole product may be
//! divided by a power of two, `(sum(k..) X[..] * Y[..]) / 8` (the scaled
//! scores of attention): `α = 1/8` then, which the run side applies to
//! each finished sum once, so the stage gives the written division's
//! value bit for bit ([`GemmPlan::exact_alpha`]). Brackets, padding
//! (checked indices), `ε`, calls, other divisions, sums of terms or a
//! third tensor factor are left to generated code.
//!
//! # Complex products ([`plan_complex`])
//!
//! A complex matrix product of pair-valued operands is two nests, the
//! parts of one pair result (sibling leaves `.0`/`.1` of the result or of
//! a `let`), each a sum of two products:
//! `re = sum(k..) x0*y0 - x1*y1` and `im = sum(k..) x0*y1 + x1*y0` (in
//! either component order, the terms and factors in any order), where
//! `x0`, `x1` are loads indexed alike, and `y0`, `y1`. Each part runs as
//! two GEMMs into its buffer: the first writes, the second
//! ([`GemmPlan::then`]) accumulates with its coefficient (−1 for the real
//! part's second product). Where each operand's parts are interleaved in
//! memory (numpy's complex arrays, read in place), the part whose nest
//! runs first computes both parts as one product of complex matrices on
//! the library's complex kernel instead ([`ComplexPair`], run by
//! `run::gemm`; measured faster: 21 against 27 ms CPU time for 512×512
//! complex128 from Python, numpy 22 ms). That splits each part's sum of two products
//! into two sums, which the floating-point contract allows for exactly
//! this pattern, as BLAS's `zgemm` and numpy's complex `@` compute it
//! (`docs/fp-contract.md`); any other sum of two products stays with
//! generated code.

use crate::jit::ir::walk::factors;
use crate::jit::ir::{LoadIndex, LoopProgram, Nest, Scalar, SizeRef};
use crate::syntax::ast::BinOp;

/// The role of a loop variable in the product.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    M,
    N,
    K,
    Batch,
}

/// A tensor operand: its buffer, and per axis the index (into
/// [`GemmPlan::vars`]) of the variable that indexes it.
#[derive(Clone, Debug)]
pub(crate) struct Operand {
    pub(crate) buf: usize,
    /// Where the buffer's strides start in the strides array.
    pub(crate) stride_at: usize,
    pub(crate) axes: Vec<usize>,
    /// The declared dimension of each axis.
    pub(crate) dims: Vec<SizeRef>,
}

/// A nest recognised as a GEMM stage.
#[derive(Clone, Debug)]
pub struct GemmPlan {
    /// The loop variables: role and range.
    pub(crate) vars: Vec<(Role, SizeRef)>,
    pub(crate) out: Operand,
    pub(crate) lhs: Operand,
    pub(crate) rhs: Operand,
    /// `α`: the literal factor, and the scalar buffers it is multiplied by.
    pub(crate) alpha: f64,
    pub(crate) alpha_loads: Vec<usize>,
    /// `α` is the reciprocal of a written divisor, a power of two
    /// ([`scaled`]): it must scale each output element's finished sum
    /// once, as the division does (`run::gemm` passes it to the library
    /// only where the library does that, and else scales the output
    /// after the product); a literal factor is free to scale partial
    /// sums (a factor moved into a sum, which the contract allows).
    pub(crate) exact_alpha: bool,
    pub(crate) desc: String,
    /// A complex product's part ([`plan_complex`]): the second product,
    /// over the same variables and output, accumulated into the output
    /// after this one wrote it.
    pub(crate) then: Option<Box<GemmPlan>>,
    /// A complex product's part: the product as one complex product, run
    /// on the library's complex kernel when the operands' parts are
    /// interleaved (as numpy stores complex arrays).
    pub(crate) complex: Option<Box<ComplexPair>>,
}

/// A complex product `(x0 + i·x1)·(y0 + i·y1)` as one product of complex
/// matrices: when each operand's second part is stored one element after
/// its first with the same strides (numpy's interleaved complex arrays),
/// the first of its two nests to run computes both parts on the library's
/// complex kernel, and the second has nothing left to do.
#[derive(Clone, Debug)]
pub(crate) struct ComplexPair {
    /// `x0·y0` into the real part (its variables are the stage's).
    pub(crate) base: GemmPlan,
    /// The other parts of `base.lhs` and `base.rhs` (the same axes).
    pub(crate) lhs1: Operand,
    pub(crate) rhs1: Operand,
    /// The imaginary part's output (the axes of `base.out`).
    pub(crate) im: Operand,
    /// This nest runs before its partner (it computes both parts on the
    /// complex kernel).
    pub(crate) first: bool,
}

fn stride_starts(p: &LoopProgram) -> Vec<usize> {
    let mut at = Vec::with_capacity(p.bufs.len());
    let mut acc = 0;
    for b in &p.bufs {
        at.push(acc);
        acc += b.dims.len();
    }
    at
}

/// The factors of a product: sum variables, the literal, scalar loads,
/// tensor loads. `None` when the body is not such a product.
#[derive(Default)]
struct Factors<'a> {
    sums: Vec<(usize, SizeRef)>,
    alpha: f64,
    scalars: Vec<usize>,
    tensors: Vec<(usize, &'a [LoadIndex])>,
}

fn collect<'a>(s: &'a Scalar, f: &mut Factors<'a>) -> Option<()> {
    let mut fs = Vec::new();
    factors(s, &mut fs);
    for x in fs {
        match x {
            Scalar::Sum(v, n, b) => {
                f.sums.push((*v, n.clone()));
                collect(b, f)?;
            }
            Scalar::Neg(a) => {
                f.alpha = -f.alpha;
                collect(a, f)?;
            }
            Scalar::Num(x) => f.alpha *= x,
            Scalar::Load(b, ixs) if ixs.is_empty() => f.scalars.push(*b),
            Scalar::Load(b, ixs) => f.tensors.push((*b, ixs)),
            _ => return None,
        }
    }
    Some(())
}

fn size_name(p: &LoopProgram, s: &SizeRef) -> String {
    match s {
        SizeRef::Lit(n) => n.to_string(),
        SizeRef::Named(k) => p.sizes[*k].clone(),
    }
}

/// The GEMM plan of `nest`, when it is one.
pub fn plan(p: &LoopProgram, nest: &Nest) -> Option<GemmPlan> {
    if p.touches_strong_buffers(nest) {
        return None;
    }
    if let Scalar::Bin(BinOp::Div, a, c) = &nest.body {
        return scaled(p, nest, a, c);
    }
    let mut f = Factors {
        alpha: 1.0,
        ..Default::default()
    };
    collect(&nest.body, &mut f)?;
    if f.tensors.len() != 2 || f.sums.is_empty() || f.alpha == 0.0 || !f.alpha.is_finite() {
        return None;
    }
    // the variables: gen variables first (in output order), then sums
    let mut ids: Vec<usize> = nest.vars.iter().map(|(v, _)| *v).collect();
    ids.extend(f.sums.iter().map(|(v, _)| *v));
    let ranges: Vec<SizeRef> = nest
        .vars
        .iter()
        .map(|(_, n)| n.clone())
        .chain(f.sums.iter().map(|(_, n)| n.clone()))
        .collect();
    // each binder is a distinct variable
    for (k, v) in ids.iter().enumerate() {
        if ids[..k].contains(v) {
            return None;
        }
    }
    let starts = stride_starts(p);
    let operand = |buf: usize, ixs: &[LoadIndex]| -> Option<Operand> {
        if buf == nest.buf || p.bufs.get(buf)?.dims.len() != ixs.len() {
            return None;
        }
        let mut axes = Vec::with_capacity(ixs.len());
        let mut dims = Vec::with_capacity(ixs.len());
        for ix in ixs {
            if ix.checked || ix.aff.constant != 0 || ix.aff.terms.len() != 1 {
                return None;
            }
            let (v, c) = ix.aff.terms[0];
            let k = ids.iter().position(|w| *w == v)?;
            // a plain index has the axis's range
            if c != 1 || ranges[k] != ix.dim {
                return None;
            }
            axes.push(k);
            dims.push(ix.dim.clone());
        }
        Some(Operand {
            buf,
            stride_at: starts[buf],
            axes,
            dims,
        })
    };
    let lhs = operand(f.tensors[0].0, f.tensors[0].1)?;
    let rhs = operand(f.tensors[1].0, f.tensors[1].1)?;
    if f.scalars.contains(&nest.buf) {
        return None;
    }
    let g = nest.vars.len();
    let mut vars = Vec::with_capacity(ids.len());
    for (k, range) in ranges.iter().enumerate() {
        let (x, y) = (lhs.axes.contains(&k), rhs.axes.contains(&k));
        let role = match (k < g, x, y) {
            (true, true, true) => Role::Batch,
            (true, true, false) => Role::M,
            (true, false, true) => Role::N,
            (false, true, true) => Role::K,
            // a broadcast gen variable, or a sum over one factor only
            _ => return None,
        };
        vars.push((role, range.clone()));
    }
    if !vars.iter().any(|(r, _)| matches!(r, Role::M | Role::N)) || vars.len() > MAX_VARS {
        return None;
    }
    let out = Operand {
        buf: nest.buf,
        stride_at: starts[nest.buf],
        axes: (0..g).collect(),
        dims: nest.vars.iter().map(|(_, n)| n.clone()).collect(),
    };
    let dim = |r: Role| {
        let names: Vec<String> = vars
            .iter()
            .filter(|(q, _)| *q == r)
            .map(|(_, n)| size_name(p, n))
            .collect();
        if names.is_empty() {
            "1".to_string()
        } else {
            names.join("·")
        }
    };
    let mut desc = format!("gemm {}×{}×{}", dim(Role::M), dim(Role::N), dim(Role::K));
    if vars.iter().any(|(r, _)| *r == Role::Batch) {
        desc.push_str(&format!(" batch {}", dim(Role::Batch)));
    }
    Some(GemmPlan {
        vars,
        out,
        lhs,
        rhs,
        alpha: f.alpha,
        alpha_loads: f.scalars,
        exact_alpha: false,
        desc,
        then: None,
        complex: None,
    })
}

/// `buf[g..] = (sum(k..) ±X[..] * Y[..]) / c` with `c` a power of two
/// whose reciprocal is exact ([`crate::precision::exact_reciprocal`]):
/// the product's plan with `α = ±1/c` applied to each finished sum once
/// ([`GemmPlan::exact_alpha`]), which is the written division bit for bit.
/// Any other divisor (`/3`: `x/3` is not `x·(1/3)`), or a numerator with
/// a scale of its own, is left to generated code.
fn scaled(p: &LoopProgram, nest: &Nest, a: &Scalar, c: &Scalar) -> Option<GemmPlan> {
    fn literal(c: &Scalar) -> Option<f64> {
        match c {
            Scalar::Num(x) => Some(*x),
            Scalar::Neg(a) => literal(a).map(|x| -x),
            _ => None,
        }
    }
    let r = crate::precision::exact_reciprocal(literal(c)?)?;
    let inner = Nest {
        buf: nest.buf,
        vars: nest.vars.clone(),
        body: a.clone(),
    };
    let mut g = plan(p, &inner)?;
    if g.alpha.abs() != 1.0 || !g.alpha_loads.is_empty() || g.exact_alpha {
        return None;
    }
    g.alpha *= r;
    g.exact_alpha = true;
    Some(g)
}

/// Whether buffers `a` and `b` are the two parts of one pair of numbers:
/// result leaves (or `let` leaves, by name) whose paths differ in their
/// last step only. `Some(c)`: `a` is component `c`.
fn siblings(p: &LoopProgram, a: usize, b: usize) -> Option<u8> {
    use crate::jit::ir::BufKind;
    let (ba, bb) = (p.bufs.get(a)?, p.bufs.get(b)?);
    if ba.flag.is_some() || bb.flag.is_some() {
        return None;
    }
    match (&ba.kind, &bb.kind) {
        (BufKind::Out { path: pa }, BufKind::Out { path: pb }) => {
            let (&ca, ra) = pa.split_last()?;
            let (&cb, rb) = pb.split_last()?;
            (ra == rb && ca != cb).then_some(ca)
        }
        (BufKind::Temp, BufKind::Temp) => {
            let (ra, ca) = ba.name.rsplit_once('.')?;
            let (rb, cb) = bb.name.rsplit_once('.')?;
            match (ca, cb) {
                ("0", "1") if ra == rb => Some(0),
                ("1", "0") if ra == rb => Some(1),
                _ => None,
            }
        }
        _ => None,
    }
}

/// A part's two products: `sum(k..) t1 ± t2` as the GEMM plans of
/// `sum(k..) t1` and `sum(k..) ±t2` (each times ±1, no scalar factor,
/// no sum inside a term).
fn two_terms(p: &LoopProgram, nest: &Nest) -> Option<[GemmPlan; 2]> {
    let mut sums = Vec::new();
    let mut body = &nest.body;
    while let Scalar::Sum(v, n, b) = body {
        sums.push((*v, n.clone()));
        body = b;
    }
    let Scalar::Bin(op, t1, t2) = body else {
        return None;
    };
    let neg = match op {
        BinOp::Add => false,
        BinOp::Sub => true,
        _ => return None,
    };
    let term = |t: &Scalar| -> Option<GemmPlan> {
        let body = sums.iter().rev().fold(t.clone(), |acc, (v, n)| {
            Scalar::Sum(*v, n.clone(), Box::new(acc))
        });
        let g = plan(
            p,
            &Nest {
                buf: nest.buf,
                vars: nest.vars.clone(),
                body,
            },
        )?;
        let plain = g.alpha_loads.is_empty()
            && g.alpha.abs() == 1.0
            && g.vars.len() == nest.vars.len() + sums.len();
        plain.then_some(g)
    };
    let g1 = term(t1)?;
    let mut g2 = term(t2)?;
    if neg {
        g2.alpha = -g2.alpha;
    }
    Some([g1, g2])
}

/// The ranges of a plan's variables (equal for the four products of one
/// complex product, whose operands' axes index them by position).
fn ranges(g: &GemmPlan) -> Vec<&SizeRef> {
    g.vars.iter().map(|(_, n)| n).collect()
}

/// When `re` and `im` (each part's two products) are the parts of a
/// complex product `(x0 + i·x1)·(y0 + i·y1)`: `re = x0·y0 − x1·y1`,
/// `im = x0·y1 + x1·y0` over the same variables, with `x0`, `x1` indexed
/// alike and `y0`, `y1` indexed alike: the real part's positive product
/// `x0·y0`, and the other parts of its `lhs` and `rhs`.
fn complex_of(re: &[GemmPlan; 2], im: &[GemmPlan; 2]) -> Option<(GemmPlan, Operand, Operand)> {
    let r = ranges(&re[0]);
    if [&re[1], &im[0], &im[1]].iter().any(|g| ranges(g) != r) {
        return None;
    }
    if im.iter().any(|g| g.alpha != 1.0) {
        return None;
    }
    let (pl, mi) = match (re[0].alpha == 1.0, re[1].alpha == 1.0) {
        (true, false) => (&re[0], &re[1]),
        (false, true) => (&re[1], &re[0]),
        _ => return None,
    };
    let same = |a: &Operand, b: &Operand| a.buf == b.buf && a.axes == b.axes;
    let pair = |a: &Operand, b: &Operand, g: &GemmPlan| {
        (same(a, &g.lhs) && same(b, &g.rhs)) || (same(a, &g.rhs) && same(b, &g.lhs))
    };
    // `x0` is `pl.lhs` in the first assignments, `pl.rhs` in the others
    for (swap, (x0, y0)) in [(&pl.lhs, &pl.rhs), (&pl.rhs, &pl.lhs)]
        .into_iter()
        .enumerate()
    {
        for (x1, y1) in [(&mi.lhs, &mi.rhs), (&mi.rhs, &mi.lhs)] {
            if x0.axes != x1.axes || y0.axes != y1.axes {
                continue;
            }
            if (pair(x0, y1, &im[0]) && pair(x1, y0, &im[1]))
                || (pair(x0, y1, &im[1]) && pair(x1, y0, &im[0]))
            {
                let (l1, r1) = if swap == 0 { (x1, y1) } else { (y1, x1) };
                let mut base = pl.clone();
                base.then = None;
                base.complex = None;
                return Some((base, l1.clone(), r1.clone()));
            }
        }
    }
    None
}

/// The GEMM plan of `nest` when it is one part of a complex matrix
/// product (see the module doc): its first product, with the second in
/// [`GemmPlan::then`].
pub fn plan_complex(p: &LoopProgram, nest: &Nest) -> Option<GemmPlan> {
    let k = p.nests.iter().position(|n| n.buf == nest.buf)?;
    let (j, partner) = [k.checked_sub(1), k.checked_add(1)]
        .into_iter()
        .flatten()
        .filter_map(|j| Some((j, p.nests.get(j)?)))
        .find(|(_, o)| siblings(p, nest.buf, o.buf).is_some())?;
    if p.touches_strong_buffers(nest) || p.touches_strong_buffers(partner) {
        return None;
    }
    let mine = two_terms(p, nest)?;
    let other = two_terms(p, partner)?;
    let (real, (base, lhs1, rhs1)) = if let Some(c) = complex_of(&mine, &other) {
        (true, c)
    } else {
        (false, complex_of(&other, &mine)?)
    };
    let starts = stride_starts(p);
    let im_buf = if real { partner.buf } else { nest.buf };
    let im = Operand {
        buf: im_buf,
        stride_at: starts[im_buf],
        axes: base.out.axes.clone(),
        dims: base.out.dims.clone(),
    };
    let two = |[a, b]: [GemmPlan; 2]| {
        // the real part's positive product first (it writes the output)
        let (mut first, second) = if b.alpha == 1.0 && a.alpha != 1.0 {
            (b, a)
        } else {
            (a, b)
        };
        first.then = Some(Box::new(second));
        first
    };
    let mut first = two(mine);
    first.desc = format!(
        "complex {} ({} part)",
        first.desc,
        if real { "real" } else { "imaginary" }
    );
    first.complex = Some(Box::new(ComplexPair {
        base,
        lhs1,
        rhs1,
        im,
        first: k < j,
    }));
    Some(first)
}

/// The most loop variables a GEMM stage takes (so [`GemmPlan::run`] works in
/// fixed arrays and allocates nothing).
pub const MAX_VARS: usize = 32;

/// The most multiply-adds of one product of a batch that the stage runs
/// on its small-product kernels (`run::gemm`'s `small`: register blocks
/// compiled per CPU level, no library call per product) rather than the
/// library (16×16×16); [`GemmPlan::small_batch`].
pub const SMALL_MNK: usize = 4096;

impl GemmPlan {
    /// Whether the stage is, for the named sizes `svals`, a batch of at
    /// least two products of at least one and at most [`SMALL_MNK`]
    /// multiply-adds each (M, N and K sizes multiplied): the small-product
    /// kernels run it faster than generated code, whatever its work.
    pub fn small_batch(&self, svals: &[i64]) -> bool {
        let size = |r: Role| {
            self.vars
                .iter()
                .filter(|(q, _)| *q == r)
                .fold(1u64, |acc, (_, n)| {
                    acc.saturating_mul(crate::jit::ir::resolve(n, svals) as u64)
                })
        };
        let mnk = size(Role::M)
            .saturating_mul(size(Role::N))
            .saturating_mul(size(Role::K));
        self.batch_count(svals) >= 2 && (1..=SMALL_MNK as u64).contains(&mnk)
    }

    /// What the stage is, e.g. `gemm n×n×n` (sizes of M×N×K, variables of
    /// one role joined with `·`, and the batch axes).
    pub fn describe(&self) -> &str {
        &self.desc
    }

    /// How many matrix products the stage is for the named sizes `svals`:
    /// the product of its batch axes' sizes (1 without batch axes).
    pub fn batch_count(&self, svals: &[i64]) -> u64 {
        self.vars
            .iter()
            .filter(|(r, _)| *r == Role::Batch)
            .fold(1u64, |acc, (_, n)| {
                acc.saturating_mul(crate::jit::ir::resolve(n, svals) as u64)
            })
    }
}
