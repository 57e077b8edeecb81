//! The axis order of `let` temporaries read only by GEMM stages
//! ([`permute_temps`]): an elementwise temporary whose body reads an
//! argument across its rows (`let t = gen(i:d, j:n) X[j,i] - m[i]`, the
//! centred operand of the optimised Gram matrix) is stored with its axes
//! permuted so that it is written along the rows it reads (`t'[j,i]`),
//! and every load of it permuted alike. A program-level pass of the
//! scheduling stage; it rewrites the IR and must not look at layouts or
//! generate code.
//!
//! Only the storage order changes: every element is computed by the same
//! operations from the same values, and every consumer reads the same
//! element; the consumers are GEMM stages, which take any strides.

use super::gemm;
use crate::jit::ir::walk::s_any;
use crate::jit::ir::{BufKind, LoadIndex, LoopProgram, Scalar};

/// Permute the axes of the temporaries that gain (see the module doc):
/// a `let` temporary of at least two axes, without strong-zero flags or a
/// column sum, whose body has no reduction, read by at least one nest and
/// only by nests that are GEMM stages ([`gemm::plan`]), whose body loads
/// an argument (2 or more axes) along its last axis by a gen variable other
/// than the nest's last, and loads nothing along its last axis by the
/// nest's last variable. That variable becomes the nest's last.
pub fn permute_temps(p: &mut LoopProgram) {
    for k in 0..p.nests.len() {
        let Some(u) = candidate(p, k) else { continue };
        let t = p.nests[k].buf;
        let vars = &p.nests[k].vars;
        let from = vars.iter().position(|(v, _)| *v == u).expect("a gen var");
        // new axis a reads old axis perm[a]
        let mut perm: Vec<usize> = (0..vars.len()).filter(|&a| a != from).collect();
        perm.push(from);
        let consumers: Vec<usize> = (0..p.nests.len())
            .filter(|&c| c != k && loads(&p.nests[c].body, t))
            .collect();
        let mut bodies = Vec::with_capacity(consumers.len());
        for &c in &consumers {
            match permuted(&p.nests[c].body, t, &perm) {
                Some(b) => bodies.push(b),
                None => break,
            }
        }
        if bodies.len() != consumers.len() {
            continue;
        }
        for (c, b) in consumers.into_iter().zip(bodies) {
            p.nests[c].body = b;
        }
        let nest = &mut p.nests[k];
        nest.vars = perm.iter().map(|&a| nest.vars[a].clone()).collect();
        let dims = &p.bufs[t].dims;
        p.bufs[t].dims = perm.iter().map(|&a| dims[a].clone()).collect();
    }
}

/// The gen variable to move last in nest `k`, when it is a candidate.
fn candidate(p: &LoopProgram, k: usize) -> Option<usize> {
    let nest = &p.nests[k];
    let t = nest.buf;
    let b = &p.bufs[t];
    if !matches!(b.kind, BufKind::Temp)
        || b.flag.is_some()
        || nest.vars.len() < 2
        || p.cols.iter().any(|c| c.buf == t)
        || s_any(&nest.body, &|x| {
            matches!(
                x,
                Scalar::Sum(..)
                    | Scalar::Reduce(..)
                    | Scalar::Fold(..)
                    | Scalar::Gather(..)
                    | Scalar::Acc(..)
            )
        })
    {
        return None;
    }
    let mut consumers = p
        .nests
        .iter()
        .enumerate()
        .filter(|(c, n)| *c != k && loads(&n.body, t))
        .peekable();
    consumers.peek()?;
    if !consumers.all(|(_, n)| gemm::plan(p, n).is_some()) {
        return None;
    }
    let last = nest.vars.last()?.0;
    let is_gen = |v: usize| nest.vars.iter().any(|(w, _)| *w == v);
    // the gen variables indexing the last axis of each tensor load
    let mut lasts = Vec::new();
    let mut stack = vec![&nest.body];
    while let Some(s) = stack.pop() {
        match s {
            Scalar::Load(b, ixs) if ixs.len() >= 2 && *b != t => {
                if let [(v, 1)] = ixs[ixs.len() - 1].aff.terms.as_slice() {
                    if is_gen(*v) {
                        lasts.push(*v);
                    }
                }
            }
            Scalar::Bin(_, a, b) => {
                stack.push(a);
                stack.push(b);
            }
            Scalar::Neg(a) => stack.push(a),
            Scalar::Call(_, args) | Scalar::Select(_, args) => stack.extend(args.iter()),
            _ => {}
        }
    }
    if lasts.contains(&last) {
        return None;
    }
    lasts.first().copied()
}

/// Whether `s` loads buffer `t`.
fn loads(s: &Scalar, t: usize) -> bool {
    s_any(
        s,
        &|x| matches!(x, Scalar::Load(b, _) | Scalar::Gather(b, ..) if *b == t),
    )
}

/// `s` (a GEMM stage's body: sums, products, negations, numbers, loads)
/// with every load of `t` reading its axes permuted by `perm`; `None` for
/// any other node.
fn permuted(s: &Scalar, t: usize, perm: &[usize]) -> Option<Scalar> {
    Some(match s {
        Scalar::Load(b, ixs) if *b == t => {
            let ixs: Vec<LoadIndex> = perm.iter().map(|&a| ixs[a].clone()).collect();
            Scalar::Load(*b, ixs)
        }
        Scalar::Load(..) | Scalar::Num(_) => s.clone(),
        Scalar::Bin(op, a, b) => Scalar::Bin(
            *op,
            Box::new(permuted(a, t, perm)?),
            Box::new(permuted(b, t, perm)?),
        ),
        Scalar::Neg(a) => Scalar::Neg(Box::new(permuted(a, t, perm)?)),
        Scalar::Sum(v, n, b) => Scalar::Sum(*v, n.clone(), Box::new(permuted(b, t, perm)?)),
        _ => return None,
    })
}
