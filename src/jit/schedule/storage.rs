//! Storage of the `let` temporaries: their live ranges over the nests
//! ([`temp_liveness`]), from which the run time lets temporaries whose
//! ranges do not meet share memory, and the slot each temporary takes
//! for a call's sizes ([`place_temps`]). Decides nothing else.

use crate::error::Result;
use crate::interp::value::{checked_elements, MAX_ELEMENTS};
use crate::jit::ir::{resolve, Buf, BufKind, LoopProgram, Scalar};

/// The live range of every `let` temporary: the first and the last nest
/// (in execution order) that writes or reads it, sorted by the first. A
/// temporary's strong-zero flag buffer ([`Buf::flag`](crate::jit::ir::Buf::flag)) lives as
/// long as the temporary (written by its nest, read wherever it is read);
/// a column sum's scratch vector (`ir::Col`) lives until its
/// consumer's nest, which reads it in the layouts that compute it ahead
/// (the consumer as lowered does not show that load), and a row sum of
/// `ir::RowSum` from the map's nest on, which writes it in the layouts
/// that fuse the two. Nests run one after
/// the other (a nest split across threads ends before the next starts),
/// so temporaries whose ranges do not meet are never live at once and
/// can share storage: a planned tensor network of hundreds of pairwise
/// steps then needs a few intermediates' worth of memory, not the sum of
/// all of them. A temporary no nest touches gets an empty range at its
/// buffer's position.
pub fn temp_liveness(p: &LoopProgram) -> Vec<(usize, (usize, usize))> {
    fn visit(s: &Scalar, k: usize, r: &mut [Option<(usize, usize)>]) {
        match s {
            Scalar::Load(b, _) => touch(r, *b, k),
            Scalar::Num(_) | Scalar::Bracket(_) | Scalar::Eps(_) => {}
            Scalar::Bin(_, a, b) => {
                visit(a, k, r);
                visit(b, k, r);
            }
            Scalar::Neg(a) | Scalar::Sum(_, _, a) => visit(a, k, r),
            Scalar::Reduce(_, _, _, a) => visit(a, k, r),
            Scalar::Call(_, args) => args.iter().for_each(|a| visit(a, k, r)),
            Scalar::Index(_) | Scalar::SizeVal(_) => {}
            Scalar::Select(_, args) => args.iter().for_each(|a| visit(a, k, r)),
            Scalar::Fold(f) => f.init.iter().chain(&f.body).for_each(|a| visit(a, k, r)),
            Scalar::Acc(_) => {}
            Scalar::Gather(b, _, dyns) => {
                touch(r, *b, k);
                dyns.iter().for_each(|(_, g, _)| visit(g, k, r));
            }
        }
    }
    fn touch(r: &mut [Option<(usize, usize)>], b: usize, k: usize) {
        if let Some(x) = r.get_mut(b) {
            *x = Some(match *x {
                None => (k, k),
                Some((lo, hi)) => (lo.min(k), hi.max(k)),
            });
        }
    }
    let mut r: Vec<Option<(usize, usize)>> = vec![None; p.bufs.len()];
    for (k, nest) in p.nests.iter().enumerate() {
        touch(&mut r, nest.buf, k);
        visit(&nest.body, k, &mut r);
    }
    for c in &p.cols {
        if let Some(k) = p.nests.iter().position(|n| n.buf == c.consumer) {
            touch(&mut r, c.buf, k);
        }
    }
    // a row sum the map's nest may compute (`rowsum`) is written there
    for rs in &p.row_sums {
        touch(&mut r, rs.sum, rs.map_nest);
    }
    for (b, buf) in p.bufs.iter().enumerate() {
        if let Some(f) = buf.flag {
            if let Some(x) = r[b] {
                touch(&mut r, f, x.0);
                touch(&mut r, f, x.1);
            }
            if let Some(x) = r.get(f).copied().flatten() {
                touch(&mut r, b, x.0);
                touch(&mut r, b, x.1);
            }
        }
    }
    let mut live: Vec<(usize, (usize, usize))> = p
        .bufs
        .iter()
        .enumerate()
        .filter(|(_, b)| matches!(b.kind, BufKind::Temp))
        .map(|(b, _)| (b, r[b].unwrap_or((usize::MAX, usize::MAX))))
        .collect();
    live.sort_by_key(|&(b, (lo, _))| (lo, b));
    live
}

/// The workspace's slot tables [`place_temps`] fills: per buffer its slot
/// (`of`), per slot the last nest of its occupants (`busy`) and the
/// elements they need (`want`).
pub struct Slots<'w> {
    pub of: &'w mut Vec<usize>,
    pub busy: &'w mut Vec<usize>,
    pub want: &'w mut Vec<usize>,
}

/// Storage of the temporaries for a call with the named sizes `svals`:
/// in order of first use (`live`, see [`temp_liveness`]), each takes a
/// slot whose occupants' ranges have ended (the best fit among them: the
/// smallest that holds it, else the largest; `have(s)`: the elements
/// slot `s` already holds), or a new one. Refuses a temporary of
/// more elements than an array may have.
pub fn place_temps(
    live: &[(usize, (usize, usize))],
    bufs: &[Buf],
    svals: &[i64],
    have: &dyn Fn(usize) -> usize,
    slots: Slots<'_>,
) -> Result<()> {
    let Slots {
        of,
        busy,
        want: wants,
    } = slots;
    of.clear();
    of.resize(bufs.len(), usize::MAX);
    busy.clear();
    wants.clear();
    for &(b, (lo, hi)) in live {
        let buf = &bufs[b];
        let mut n = 1usize;
        for d in buf.dims.iter().map(|d| resolve(d, svals)) {
            n = n.saturating_mul(d);
        }
        if n as u128 > MAX_ELEMENTS {
            checked_elements(
                &buf.dims
                    .iter()
                    .map(|d| resolve(d, svals))
                    .collect::<Vec<_>>(),
            )?;
        }
        let want = n.max(1);
        let mut best: Option<usize> = None;
        for (s, &until) in busy.iter().enumerate() {
            // a slot is free once its last occupant's last nest ran;
            // temporaries no nest touches (empty range) never share
            if lo == usize::MAX || until >= lo {
                continue;
            }
            let cap = wants[s].max(have(s));
            best = Some(match best {
                None => s,
                Some(o) => {
                    let ocap = wants[o].max(have(o));
                    let fits = |c: usize| c >= want;
                    match (fits(cap), fits(ocap)) {
                        (true, true) if cap < ocap => s,
                        (true, false) => s,
                        (false, false) if cap > ocap => s,
                        _ => o,
                    }
                }
            });
        }
        let s = match best {
            Some(s) => s,
            None => {
                busy.push(0);
                wants.push(0);
                busy.len() - 1
            }
        };
        busy[s] = if lo == usize::MAX { usize::MAX } else { hi };
        wants[s] = wants[s].max(want);
        of[b] = s;
    }
    Ok(())
}
