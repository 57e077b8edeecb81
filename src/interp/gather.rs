//! Gathers (`E[tok[i], j]`, [`Expr::Gather`]): the integer-array
//! parameters' check when a call starts, shared by the interpreter and the
//! JIT (so both refuse the same calls with the same words).
//!
//! Every element of an integer array must be an exact integer, and for
//! every gather that reads the array, `element + offset` must lie on the
//! axis it indexes. The check is over every element, not only those a run
//! happens to read, so it does not depend on evaluation order, on what the
//! optimiser drops or on what the JIT computes ahead: a call either passes
//! it, and then no gather index can leave its axis, or fails before
//! anything runs.

use crate::error::{Error, Result};
use crate::interp::value::{resolve, AsOperand, Operand, Sizes};
use crate::syntax::ast::*;

/// One gather of a function: `target[array[...] + offset]`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Site {
    /// The integer array parameter.
    pub array: String,
    /// The constant added to its element.
    pub offset: i64,
    /// The size of the indexed axis.
    pub axis: Size,
    /// The indexed axis, for messages (``axis 0 of `E` ``).
    pub target: String,
}

/// The integer array a gather index reads (`tok` of `tok[i, k]`).
pub fn array_of(g: &Expr) -> Option<&str> {
    let mut e = g;
    loop {
        match e {
            Expr::Access(b, _) => e = b,
            Expr::Var(x) => return Some(x),
            _ => return None,
        }
    }
}

/// The affine positions a gather index reads, outermost axis first.
pub fn positions_of(g: &Expr) -> Vec<&Affine> {
    let mut out = Vec::new();
    let mut e = g;
    while let Expr::Access(b, a) = e {
        out.push(a);
        e = b;
    }
    out.reverse();
    out
}

/// The type of an access chain from a parameter (`None` otherwise).
fn chain_type(e: &Expr, f: &Function) -> Option<(Type, usize, String)> {
    match e {
        Expr::Var(x) => f
            .params
            .iter()
            .find(|p| &p.name == x)
            .map(|p| (p.ty.clone(), 0, x.clone())),
        Expr::Access(b, _) | Expr::Gather(b, _, _) => match chain_type(b, f)? {
            (Type::Tensor(_, t), k, x) => Some((*t, k + 1, x)),
            _ => None,
        },
        Expr::Proj(k, b) => match chain_type(b, f)? {
            (Type::Pair(t0, t1), a, x) => Some((if *k == 0 { *t0 } else { *t1 }, a, x)),
            _ => None,
        },
        _ => None,
    }
}

/// Every gather of `f`'s body (each once, in a fixed order).
pub fn sites(f: &Function) -> Vec<Site> {
    let mut out = Vec::new();
    let mut todo = vec![&f.body];
    while let Some(e) = todo.pop() {
        if let Expr::Gather(a, g, c) = e {
            if let (Some(x), Some((Type::Tensor(n, _), axis, root))) =
                (array_of(g), chain_type(a, f))
            {
                out.push(Site {
                    array: x.to_string(),
                    offset: *c,
                    axis: n,
                    target: format!("axis {axis} of {root}"),
                });
            }
        }
        todo.extend(e.children());
    }
    out.sort();
    out.dedup();
    out
}

/// The elements the integer array `name` may hold with the sizes `sizes`:
/// `lo..hi`, the integers every gather reading it accepts (`0..i64::MAX`
/// when none reads it; empty when no integer fits every gather).
pub fn accepted(f: &Function, name: &str, sizes: &Sizes) -> Result<(i64, i64)> {
    let (mut lo, mut hi) = (0i64, i64::MAX);
    for s in sites(f).iter().filter(|s| s.array == name) {
        let n = resolve(&s.axis, sizes)? as i64;
        lo = lo.max(s.offset.saturating_neg());
        hi = hi.min(n.saturating_sub(s.offset));
    }
    Ok((lo, hi.max(lo)))
}

/// Whether `f` has an integer array parameter.
pub fn has_int_params(f: &Function) -> bool {
    f.params.iter().any(|p| p.ty.is_int_array())
}

/// Check the integer arrays of a call (bound to `sizes`): every element an
/// exact integer, and on the axis of every gather that reads it.
pub(crate) fn check<V: AsOperand>(f: &Function, args: &[V], sizes: &Sizes) -> Result<()> {
    if !has_int_params(f) {
        return Ok(());
    }
    let sites = sites(f);
    for (p, v) in f.params.iter().zip(args) {
        if !p.ty.is_int_array() {
            continue;
        }
        let Operand::Array {
            ptr,
            shape,
            strides,
        } = v.operand()
        else {
            continue;
        };
        let mine: Vec<(&Site, i128)> = sites
            .iter()
            .filter(|s| s.array == p.name)
            .map(|s| Ok((s, resolve(&s.axis, sizes)? as i128)))
            .collect::<Result<_>>()?;
        let mut bad: Option<Error> = None;
        for_each_element(ptr, shape, strides, &mut |pos, t| {
            if bad.is_some() {
                return;
            }
            let at = || {
                let ks: Vec<String> = pos.iter().map(|k| k.to_string()).collect();
                format!("{}[{}]", p.name, ks.join(", "))
            };
            if !(t.is_finite() && t.fract() == 0.0) {
                bad = Some(Error::Gather(format!(
                    "{} = {t} is not an integer (`{}` is an integer array, {})",
                    at(),
                    p.name,
                    crate::syntax::print_type(&p.ty)
                )));
                return;
            }
            for (s, n) in &mine {
                let k = t as i128 + s.offset as i128;
                if k < 0 || k >= *n {
                    let plus = match s.offset {
                        0 => String::new(),
                        c if c > 0 => format!(" + {c} = {k}"),
                        c => format!(" - {} = {k}", c.unsigned_abs()),
                    };
                    bad = Some(Error::Gather(format!(
                        "{} = {t}{plus} is outside 0..{n} ({}, a gather index)",
                        at(),
                        s.target
                    )));
                    return;
                }
            }
        });
        if let Some(e) = bad {
            return Err(e);
        }
    }
    Ok(())
}

/// Call `f` on every element of a strided array (shape checked by the
/// caller), in C order, with its position.
fn for_each_element(
    ptr: *const f64,
    shape: &[usize],
    strides: &[isize],
    f: &mut impl FnMut(&[usize], f64),
) {
    if shape.contains(&0) {
        return;
    }
    let mut pos = vec![0usize; shape.len()];
    loop {
        let off: isize = pos.iter().zip(strides).map(|(&k, &s)| k as isize * s).sum();
        // SAFETY: the boundary check bound this array's shape and strides,
        // and `pos` stays below the shape
        let x = unsafe { *ptr.offset(off) };
        f(&pos, x);
        let mut d = shape.len();
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            pos[d] += 1;
            if pos[d] < shape[d] {
                break;
            }
            pos[d] = 0;
        }
    }
}
