//! Row sums fused into the map that writes their rows: the row softmax's
//! normal form has `t1[i,j] = exp(X[i,j] - t0[i])` and then `t2[i] =
//! sum(j) t1[i,j]`, a second pass over every row just written. The nest
//! of `t1` can add each row right after writing it, while the row is in
//! L1 (one call of the run-sum kernel per row), store `t2[i]`, and the
//! sum's nest is skipped.
//!
//! [`row_sums`] finds the pairs layout-independently (the sum's nest
//! right after the map's, reading nothing but one row of the map's
//! temporary per output, no strong zeros, no column sums); the
//! temporaries' live ranges count the sum as written by the map's nest
//! (`storage::temp_liveness`). Per layout, [`fused`] picks a
//! pair when the map's nest runs as generic loops with its rows outermost
//! and whole (loop order `i, j`, no tiles), so that each row is complete
//! when its loop ends. The sum then adds the same terms in the order of
//! the run-sum kernel ([`crate::vmath::sum`]: blocks added pairwise), which
//! is a reordering of the sum and nothing else: the value of every term
//! is the one stored in the row.
//!
//! Owns these decisions; it reads the IR only.

use super::backend::Backend;
use crate::jit::ir::{BufKind, IndexExpr, Layout, LoopProgram, RowSum, Scalar};

/// Record in `p.row_sums` every nest `sum[i] = sum(j) map[i, j]` that
/// directly follows the nest writing the `Temp` buffer `map` over the
/// same two ranges (`map`'s nest `gen(i:n, j:m)`, the sum's `gen(i:n)
/// sum(j:m)`), neither touching strong zeros nor taking part in a column
/// sum.
pub fn row_sums(p: &mut LoopProgram) {
    let mut found = Vec::new();
    for k in 0..p.nests.len().saturating_sub(1) {
        if let Some(r) = pair(p, k) {
            found.push(r);
        }
    }
    p.row_sums = found;
}

/// The pair of nest `k` and the next one, if they are a map and its row sum.
fn pair(p: &LoopProgram, k: usize) -> Option<RowSum> {
    let (a, b) = (&p.nests[k], &p.nests[k + 1]);
    let map = &p.bufs[a.buf];
    if !matches!(map.kind, BufKind::Temp)
        || p.touches_strong_buffers(a)
        || p.touches_strong_buffers(b)
        || p.cols.iter().any(|c| {
            [a.buf, b.buf]
                .iter()
                .any(|&x| x == c.buf || x == c.consumer)
        })
        || a.buf == b.buf
    {
        return None;
    }
    let ([(i, n), (j, m)], [(i2, n2)]) = (&a.vars[..], &b.vars[..]) else {
        return None;
    };
    if n != n2 || i == j || map.dims[..] != [n.clone(), m.clone()] {
        return None;
    }
    let Scalar::Sum(j2, m2, body) = &b.body else {
        return None;
    };
    let Scalar::Load(buf, ixs) = &**body else {
        return None;
    };
    let plain = |ix: &IndexExpr, v: usize| ix.constant == 0 && ix.terms[..] == [(v, 1)];
    let whole = *buf == a.buf
        && m2 == m
        && ixs.len() == 2
        && plain(&ixs[0].aff, *i2)
        && plain(&ixs[1].aff, *j2)
        && ixs.iter().all(|ix| !ix.checked);
    whole.then_some(RowSum {
        map_nest: k,
        map: a.buf,
        sum: b.buf,
    })
}

/// The row sums of `p` to fuse in `layout`: those whose map nest runs
/// as generic loops over its rows outermost and whole (`backends[k]`,
/// nest `k`'s back end in `layout`, loop order `i, j` and no tiles) and
/// whose sum nest runs at all; `gemm[k]`: nest `k` has a GEMM stage (a
/// pair with one is left alone; neither ever has: a map has no product,
/// a plain row sum no second factor). `plan_program` makes the
/// sum's nest [`Backend::Skip`] and records the sum in the map's plan.
pub fn fused(
    p: &LoopProgram,
    layout: &Layout,
    backends: &[&Backend],
    gemm: &[bool],
) -> Vec<RowSum> {
    p.row_sums
        .iter()
        .filter(|r| {
            let k = r.map_nest;
            k + 1 < backends.len()
                && layout.is_unit(r.map, 1)
                && matches!(backends[k], Backend::Loops(s) if s.order[..] == [0, 1] && s.tile.is_none())
                && matches!(backends[k + 1], Backend::Loops(_) | Backend::Tiles(_))
                && !gemm[k]
                && !gemm[k + 1]
        })
        .copied()
        .collect()
}
