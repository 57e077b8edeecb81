//! Row groups: runs of consecutive nests that the run time may execute a
//! block of rows at a time ([`row_groups`]), every nest of the run over
//! rows `lo..hi` of their common outermost loop, then the next block,
//! instead of each nest over all rows before the next starts.
//!
//! The row softmax's normal form is four nests over the rows `i` (`t0[i]
//! = max(j) X[i,j]`, `t1[i,j] = exp(X[i,j] - t0[i])`, `t2[i] = sum(j)
//! t1[i,j]`, `out[i,j] = t1[i,j] / t2[i]`): run nest by nest, each pass
//! streams the whole matrix through the caches; run by blocks of rows,
//! the rows a block touches stay in L1/L2 from one nest to the next
//! ([`block_rows`] sizes the block).
//!
//! A run is legal when the row `i` of each of its nests reads, of the
//! buffers written by earlier nests of the run, only row `i` (a plain
//! index: the nest's outermost variable on the buffer's first axis), so
//! every value a nest reads was written by an earlier nest of the run in
//! the same block. Every nest of a run has a `gen` variable over the same
//! range, is no GEMM stage nor a column sum's nest or consumer
//! ([`crate::jit::ir::Col`]: its scratch load is not in the IR), and
//! touches no strong-zero flags; the buffers it writes are written once
//! and not read earlier in the run. Each element is computed by the same
//! operations on the same values as nest by nest, so nothing changes
//! but the order in which independent rows are visited. The temporaries
//! a run touches must be live through the whole run (the run time
//! extends their ranges, [`extend_liveness`]) since they are live at once.
//!
//! Owns these decisions; it reads the IR only.

use crate::jit::ir::{resolve, IndexExpr, LoopProgram, Nest, Scalar, SizeRef};
use crate::jit::options::Options;
use std::collections::BTreeSet;

/// A run of nests `first..=last` that may run by blocks of rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowGroup {
    pub first: usize,
    pub last: usize,
}

/// The row groups of `p` (at least two nests each, in order, disjoint);
/// `gemm[k]`: nest `k` may run as a GEMM stage. None when
/// `opts.row_block_bytes` is 0.
pub fn row_groups(p: &LoopProgram, gemm: &[bool], opts: &Options) -> Vec<RowGroup> {
    let mut out = Vec::new();
    if opts.row_block_bytes == 0 {
        return out;
    }
    let mut k = 0;
    while k < p.nests.len() {
        if !candidate(p, k, gemm) {
            k += 1;
            continue;
        }
        let n0 = &p.nests[k].vars[0].1;
        let mut written: BTreeSet<usize> = BTreeSet::new();
        let mut read: BTreeSet<usize> = BTreeSet::new();
        written.insert(p.nests[k].buf);
        loads(&p.nests[k].body, &mut read);
        let mut last = k;
        while last + 1 < p.nests.len() {
            let b = &p.nests[last + 1];
            if !candidate(p, last + 1, gemm)
                || b.vars[0].1 != *n0
                || written.contains(&b.buf)
                || read.contains(&b.buf)
                || !row_reads(b, &b.body, &written)
            {
                break;
            }
            written.insert(b.buf);
            loads(&b.body, &mut read);
            last += 1;
        }
        if last > k {
            out.push(RowGroup { first: k, last });
        }
        k = last + 1;
    }
    out
}

/// Whether nest `k` may be in a row group at all.
fn candidate(p: &LoopProgram, k: usize, gemm: &[bool]) -> bool {
    let n = &p.nests[k];
    !n.vars.is_empty()
        && !gemm.get(k).copied().unwrap_or(false)
        && !p.touches_strong_buffers(n)
        && p.bufs[n.buf].flag.is_none()
        && !p.cols.iter().any(|c| c.buf == n.buf || c.consumer == n.buf)
        && !matches!(n.vars[0].1, SizeRef::Lit(l) if l <= 1)
}

/// Every buffer `s` loads (gathers included).
fn loads(s: &Scalar, out: &mut BTreeSet<usize>) {
    match s {
        Scalar::Load(b, _) => {
            out.insert(*b);
        }
        Scalar::Gather(b, _, dyns) => {
            out.insert(*b);
            dyns.iter().for_each(|(_, g, _)| loads(g, out));
        }
        Scalar::Num(_)
        | Scalar::Bracket(_)
        | Scalar::Eps(_)
        | Scalar::Index(_)
        | Scalar::SizeVal(_)
        | Scalar::Acc(_) => {}
        Scalar::Bin(_, a, b) => {
            loads(a, out);
            loads(b, out);
        }
        Scalar::Neg(a) | Scalar::Sum(_, _, a) | Scalar::Reduce(_, _, _, a) => loads(a, out),
        Scalar::Call(_, args) | Scalar::Select(_, args) => args.iter().for_each(|a| loads(a, out)),
        Scalar::Fold(f) => f.init.iter().chain(&f.body).for_each(|a| loads(a, out)),
    }
}

/// Whether every load in `s` of a buffer of `written` reads row `v0` of
/// it (`v0` the nest's outermost variable, alone and unchecked on the
/// buffer's first axis); a gather of such a buffer is refused.
fn row_reads(n: &Nest, s: &Scalar, written: &BTreeSet<usize>) -> bool {
    let v0 = n.vars[0].0;
    let is_row = |a: &IndexExpr| a.constant == 0 && a.terms == [(v0, 1)];
    match s {
        Scalar::Load(b, ixs) => {
            !written.contains(b) || ixs.first().is_some_and(|ix| !ix.checked && is_row(&ix.aff))
        }
        Scalar::Gather(b, _, dyns) => {
            !written.contains(b) && dyns.iter().all(|(_, g, _)| row_reads(n, g, written))
        }
        Scalar::Num(_)
        | Scalar::Bracket(_)
        | Scalar::Eps(_)
        | Scalar::Index(_)
        | Scalar::SizeVal(_)
        | Scalar::Acc(_) => true,
        Scalar::Bin(_, a, b) => row_reads(n, a, written) && row_reads(n, b, written),
        Scalar::Neg(a) | Scalar::Sum(_, _, a) | Scalar::Reduce(_, _, _, a) => {
            row_reads(n, a, written)
        }
        Scalar::Call(_, args) | Scalar::Select(_, args) => {
            args.iter().all(|a| row_reads(n, a, written))
        }
        Scalar::Fold(f) => f
            .init
            .iter()
            .chain(&f.body)
            .all(|a| row_reads(n, a, written)),
    }
}

/// The live ranges of the temporaries (as [`super::storage::temp_liveness`]
/// gives them) with every temporary touched inside a row group live
/// through the whole group: its nests run interleaved, so the
/// temporaries they touch are live at once.
pub fn extend_liveness(live: &mut [(usize, (usize, usize))], groups: &[RowGroup]) {
    for (_, (lo, hi)) in live.iter_mut() {
        if *lo == usize::MAX {
            continue;
        }
        for g in groups {
            if *lo <= g.last && *hi >= g.first {
                *lo = (*lo).min(g.first);
                *hi = (*hi).max(g.last);
            }
        }
    }
}

/// The buffers whose rows a block of `g` touches: those it writes and
/// those it reads by row (sorted, each once). They do not depend on the
/// sizes: computed when the kernel is built, so that [`block_rows`], run
/// when a call's sizes or layouts change, allocates nothing.
pub fn row_buffers(p: &LoopProgram, g: &RowGroup) -> Vec<usize> {
    let mut bufs: BTreeSet<usize> = BTreeSet::new();
    for n in &p.nests[g.first..=g.last] {
        bufs.insert(n.buf);
        by_row(n, &n.body, &mut bufs);
    }
    bufs.into_iter().collect()
}

/// The rows per block of a group whose blocks touch the buffers `bufs`
/// ([`row_buffers`]) for a call with the sizes `svals` and elements of
/// `elem` bytes: `budget` bytes ([`crate::jit::Options::row_block_bytes`])
/// over the bytes per row of those buffers (at least 1; the whole range
/// when it fits).
pub fn block_rows(
    p: &LoopProgram,
    bufs: &[usize],
    svals: &[i64],
    elem: usize,
    budget: usize,
) -> usize {
    let row_bytes: usize = bufs
        .iter()
        .map(|&b| {
            let d = &p.bufs[b].dims;
            d.iter()
                .skip(1)
                .map(|s| resolve(s, svals).max(1))
                .fold(1usize, |a, x| a.saturating_mul(x))
                .saturating_mul(elem)
        })
        .fold(0usize, |a, x| a.saturating_add(x));
    (budget / row_bytes.max(1)).max(1)
}

/// The buffers `s` loads with the nest's outermost variable on the first
/// axis (read row by row).
fn by_row(n: &Nest, s: &Scalar, out: &mut BTreeSet<usize>) {
    fn walk(s: &Scalar, v0: usize, out: &mut BTreeSet<usize>) {
        match s {
            Scalar::Load(b, ixs) => {
                if ixs
                    .first()
                    .is_some_and(|ix| ix.aff.terms.iter().any(|&(v, _)| v == v0))
                {
                    out.insert(*b);
                }
            }
            Scalar::Gather(_, _, dyns) => dyns.iter().for_each(|(_, g, _)| walk(g, v0, out)),
            Scalar::Num(_)
            | Scalar::Bracket(_)
            | Scalar::Eps(_)
            | Scalar::Index(_)
            | Scalar::SizeVal(_)
            | Scalar::Acc(_) => {}
            Scalar::Bin(_, a, b) => {
                walk(a, v0, out);
                walk(b, v0, out);
            }
            Scalar::Neg(a) | Scalar::Sum(_, _, a) | Scalar::Reduce(_, _, _, a) => walk(a, v0, out),
            Scalar::Call(_, args) | Scalar::Select(_, args) => {
                args.iter().for_each(|a| walk(a, v0, out))
            }
            Scalar::Fold(f) => f.init.iter().chain(&f.body).for_each(|a| walk(a, v0, out)),
        }
    }
    walk(s, n.vars[0].0, out);
}
