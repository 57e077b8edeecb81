//! Column sums computed ahead: a sum `sum(j) f(i, j)` under a loop of
//! `i` that depends on `i` only gets a scratch vector and a nest of its
//! own ([`columns`], layout-independently); whether that nest runs is
//! decided per layout ([`materialise`], [`with_columns`]). See
//! [`super::loops`] for the whole story. Owns these decisions only; it must not generate code.

use super::backend::{choose_backend, gemm_stage, Backend};
use crate::jit::ir::affine::coef;
use crate::jit::ir::walk::{rename, s_any, s_free};
use crate::jit::ir::{
    Buf, BufKind, Col, IndexExpr, Layout, LoadIndex, LoopProgram, Nest, Scalar, SizeRef,
};
use crate::precision::Precision;
use std::collections::BTreeSet;

/// At most this many column sums per nest get a scratch vector.
pub const MAX_COLS: usize = 4;

/// Give the column sums of `p`'s nests their scratch vectors and nests
/// ([`Col`], [`LoopProgram::cols`]), layout-independently; whether each
/// runs is decided per layout ([`materialise`]). A nest is left alone
/// when it has a bracket anywhere (a guard or loop domain may skip the
/// sum for most outer indices, which computing it ahead would not), reads
/// or writes strong zeros, or is a GEMM stage or a dense contraction
/// (`tiles::plan` takes it; it interchanges the sums of the two-level
/// form `sum(i) x[i] * sum(j) A[j,i] * y[j]` itself, per layout, with no
/// temporary). Computing a
/// column sum ahead changes no value, only when it is computed: it reads
/// the same elements (zero padding checked as before) for every index of
/// its outer loop. With `gemm` (the kernel runs GEMM stages), a column
/// sum whose nest is a GEMM stage (a matrix-vector product) is computed
/// ahead in every layout ([`Col::lib`]): the library takes any strides
/// and beats the generated row or column walk.
pub fn columns(p: &mut LoopProgram, gemm: bool, precision: Precision) {
    let mut k = 0;
    while k < p.nests.len() {
        let nest = &p.nests[k];
        if p.touches_strong_buffers(nest)
            || s_any(&nest.body, &|x| matches!(x, Scalar::Bracket(_)))
            || gemm_stage(p, nest, true).is_some()
            || matches!(
                choose_backend(p, nest, &Layout::c_order(p), precision),
                Backend::Tiles(_)
            )
            || p.cols.iter().any(|c| c.buf == nest.buf)
        {
            k += 1;
            continue;
        }
        let mut found = Vec::new();
        let mut scope = nest.vars.clone();
        find_cols(&nest.body, true, false, &mut scope, &mut found);
        found.truncate(MAX_COLS);
        let consumer = nest.buf;
        let name = p.bufs[consumer].name.clone();
        for (c, (j, i, n, m, body)) in found.into_iter().enumerate() {
            let buf = p.bufs.len();
            p.bufs.push(Buf {
                kind: BufKind::Temp,
                dims: vec![n.clone()],
                name: format!("{name}#col{c}"),
                flag: None,
            });
            let (i2, j2) = (p.n_vars, p.n_vars + 1);
            p.n_vars += 2;
            let body = rename(&body, &[(i, i2), (j, j2)]);
            let ahead = Nest {
                buf,
                vars: vec![(i2, n.clone())],
                body: Scalar::Sum(j2, m, Box::new(body)),
            };
            let lib = gemm_stage(p, &ahead, gemm).is_some();
            p.nests.insert(k, ahead);
            k += 1;
            p.cols.push(Col {
                buf,
                consumer,
                sum_var: j,
                outer: i,
                n,
                lib,
            });
        }
        k += 1;
    }
}

/// Whether the column sum `col` is computed ahead under `layout`: when
/// more of the loads that depend on both its variables walk a unit-stride
/// axis along the outer variable than along the summed one (the scratch
/// nest then accumulates a row at a time, `for j { for i { t[i] += … } }`,
/// instead of walking a column per outer index), or always when the
/// scratch nest is a GEMM stage ([`Col::lib`]).
pub fn materialise(p: &LoopProgram, col: &Col, layout: &Layout) -> bool {
    if col.lib {
        return true;
    }
    let Some(nest) = p.nests.iter().find(|n| n.buf == col.buf) else {
        return false;
    };
    let (Some((i, _)), Scalar::Sum(j, _, b)) = (nest.vars.first(), &nest.body) else {
        return false;
    };
    let (along_i, along_j) = cross_units(b, *i, *j, layout);
    along_i > along_j
}

/// `nest` as it runs under `layout`: `None` for the nest of a column sum
/// that is not computed ahead (it does nothing), else the nest with each
/// column sum computed ahead replaced by a load of its scratch vector.
pub fn with_columns<'n>(
    p: &LoopProgram,
    nest: &'n Nest,
    layout: &Layout,
) -> Option<std::borrow::Cow<'n, Nest>> {
    use std::borrow::Cow;
    if let Some(c) = p.cols.iter().find(|c| c.buf == nest.buf) {
        return materialise(p, c, layout).then_some(Cow::Borrowed(nest));
    }
    let mine: Vec<&Col> = p
        .cols
        .iter()
        .filter(|c| c.consumer == nest.buf && materialise(p, c, layout))
        .collect();
    if mine.is_empty() {
        return Some(Cow::Borrowed(nest));
    }
    fn subst(s: &Scalar, mine: &[&Col]) -> Scalar {
        match s {
            Scalar::Sum(v, n, b) => match mine.iter().find(|c| c.sum_var == *v) {
                Some(c) => Scalar::Load(
                    c.buf,
                    vec![LoadIndex {
                        aff: IndexExpr {
                            terms: vec![(c.outer, 1)],
                            constant: 0,
                        },
                        dim: c.n.clone(),
                        checked: false,
                    }],
                ),
                None => Scalar::Sum(*v, n.clone(), Box::new(subst(b, mine))),
            },
            Scalar::Bin(op, a, b) => {
                Scalar::Bin(*op, Box::new(subst(a, mine)), Box::new(subst(b, mine)))
            }
            Scalar::Neg(a) => Scalar::Neg(Box::new(subst(a, mine))),
            Scalar::Call(f, args) => {
                Scalar::Call(*f, args.iter().map(|a| subst(a, mine)).collect())
            }
            s => s.clone(),
        }
    }
    Some(Cow::Owned(Nest {
        buf: nest.buf,
        vars: nest.vars.clone(),
        body: subst(&nest.body, &mine),
    }))
}

/// The column sums of `body` (see [`Col`]): sums whose only free variable
/// is one enclosing loop variable (in `scope`), without sums inside, with
/// a load that depends on both variables; not the whole body, and not the
/// whole body of an enclosing sum (`perfect`: `sum(i) sum(j) A[j,i]` is a
/// perfect nest, whose loop order the scheduler picks so that the
/// unit-stride loop runs innermost, with no scratch vector and no second
/// pass). Found outermost first, left to right.
fn find_cols(
    s: &Scalar,
    top: bool,
    perfect: bool,
    scope: &mut Vec<(usize, SizeRef)>,
    out: &mut Vec<(usize, usize, SizeRef, SizeRef, Scalar)>,
) {
    match s {
        Scalar::Sum(j, m, b) => {
            let mut free = BTreeSet::new();
            s_free(s, &mut free);
            let outer = match free.iter().collect::<Vec<_>>()[..] {
                [i] => scope.iter().rev().find(|(v, _)| v == i).cloned(),
                _ => None,
            };
            if let (Some((i, n)), false) = (outer, perfect) {
                let cross = s_any(b, &|x| {
                    matches!(x, Scalar::Load(_, ixs)
                        if ixs.iter().any(|ix| coef(&ix.aff, i) != 0)
                        && ixs.iter().any(|ix| coef(&ix.aff, *j) != 0))
                });
                if !top && cross && !s_any(b, &|x| matches!(x, Scalar::Sum(..))) {
                    out.push((*j, i, n, m.clone(), (**b).clone()));
                    return;
                }
            }
            scope.push((*j, m.clone()));
            find_cols(b, false, true, scope, out);
            scope.pop();
        }
        Scalar::Bin(_, a, b) => {
            find_cols(a, false, false, scope, out);
            find_cols(b, false, false, scope, out);
        }
        Scalar::Neg(a) => find_cols(a, false, false, scope, out),
        Scalar::Call(_, args) => args
            .iter()
            .for_each(|a| find_cols(a, false, false, scope, out)),
        _ => {}
    }
}

/// The loads of `s` that depend on both `i` and `j`, counted by which of
/// the two walks a unit-stride axis (plain, coefficient 1, the only axis
/// mentioning it): `(along i, along j)`.
fn cross_units(s: &Scalar, i: usize, j: usize, layout: &Layout) -> (usize, usize) {
    match s {
        Scalar::Load(buf, ixs) => {
            let on = |v: usize| -> Vec<usize> {
                (0..ixs.len())
                    .filter(|&a| coef(&ixs[a].aff, v) != 0)
                    .collect()
            };
            let (oi, oj) = (on(i), on(j));
            if oi.is_empty() || oj.is_empty() {
                return (0, 0);
            }
            let unit = |o: &[usize], v: usize| {
                usize::from(
                    o.len() == 1 && coef(&ixs[o[0]].aff, v) == 1 && layout.is_unit(*buf, o[0]),
                )
            };
            (unit(&oi, i), unit(&oj, j))
        }
        Scalar::Bin(_, a, b) => {
            let (x, y) = cross_units(a, i, j, layout);
            let (z, w) = cross_units(b, i, j, layout);
            (x + z, y + w)
        }
        Scalar::Neg(a) | Scalar::Sum(_, _, a) => cross_units(a, i, j, layout),
        Scalar::Call(_, args) => args.iter().fold((0, 0), |(x, y), a| {
            let (z, w) = cross_units(a, i, j, layout);
            (x + z, y + w)
        }),
        _ => (0, 0),
    }
}
