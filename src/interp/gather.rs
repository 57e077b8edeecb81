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
//!
//! An integer array's elements come in the element type of the call's
//! format, as every other argument's: `f64` in `F64`, `f32` in `F32`,
//! `i64`/`i32` in `I64`/`I32` (the check reads that type). In `F32` an
//! element must also be at most 2^24 in magnitude, the integers `f32`
//! holds exactly ([`fits`]): an index given as `f64` beyond that is
//! refused, never rounded to another index. Callers converting integer
//! arrays into a format (the Python package) refuse the elements the
//! format cannot hold with [`beyond_error`] before converting.

use crate::error::{Error, Result};
use crate::interp::value::{resolve, AsOperand, Operand, Sizes};
use crate::precision::Precision;
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

/// Whether the integer `t` may be an integer array's element in the
/// format `p`: at most 2^24 in magnitude in `F32` ([`F32_INDEX_LIMIT`]:
/// `f32` holds every integer up to it exactly), within the width in
/// `I64`/`I32` (`i32`: -2^31..2^31), any in `F64` (every `f64` that is an
/// integer is one exactly).
pub fn fits(t: f64, p: Precision) -> bool {
    match p {
        Precision::F64 => true,
        Precision::F32 => t.abs() <= F32_INDEX_LIMIT as f64,
        Precision::I32 => t >= -(2f64.powi(31)) && t < 2f64.powi(31),
        Precision::I64 => t >= -(2f64.powi(63)) && t < 2f64.powi(63),
    }
}

/// The largest magnitude of an integer array's element in `F32`: 2^24.
pub const F32_INDEX_LIMIT: i64 = 1 << 24;

/// The refusal of the element `shown` (as written) of the integer array
/// parameter `param` of `f` at position `pos`, an integer the format `p`
/// cannot hold ([`fits`]): the words of the call's check.
pub fn beyond_error(f: &Function, param: &str, pos: &[usize], shown: &str, p: Precision) -> Error {
    let ty = param_type(f, param);
    let range = match p {
        Precision::F32 => "at most 2^24 in magnitude (the integers f32 holds exactly)".to_string(),
        Precision::F64 => "at most 2^53 in magnitude (the integers f64 holds exactly)".to_string(),
        _ => format!("within the range of {}", p.numpy_name()),
    };
    Error::Gather(format!(
        "{} = {shown} is beyond the indices of {p}: `{param}` is an integer array ({ty}) and an {p} call takes its elements as {p}, {range}",
        position(param, pos)
    ))
}

/// The refusal of the element `shown` of the integer array parameter
/// `param` at `pos`, not an integer: the words of the call's check.
pub fn not_integer_error(f: &Function, param: &str, pos: &[usize], shown: &str) -> Error {
    let ty = param_type(f, param);
    Error::Gather(format!(
        "{} = {shown} is not an integer (`{param}` is an integer array, {ty})",
        position(param, pos)
    ))
}

/// The printed type of parameter `param` of `f` (empty if there is none).
fn param_type(f: &Function, param: &str) -> String {
    f.params
        .iter()
        .find(|q| q.name == param)
        .map(|q| crate::syntax::print_type(&q.ty))
        .unwrap_or_default()
}

fn position(param: &str, pos: &[usize]) -> String {
    let ks: Vec<String> = pos.iter().map(|k| k.to_string()).collect();
    format!("{param}[{}]", ks.join(", "))
}

/// Check the integer arrays among `f64` arguments `args` of `f` for a
/// call in the format `p` (as `interp::run_with` does before it
/// runs): for callers that convert `f64` arguments into `p`'s element type
/// themselves (the CLI's `--dtype f32`), so that an index `p` cannot hold
/// is refused before it is rounded into another one.
pub fn check_values(
    f: &Function,
    args: &[crate::interp::value::Value],
    p: Precision,
) -> Result<()> {
    if !has_int_params(f) {
        return Ok(());
    }
    let sizes = crate::interp::value::bind(f, args)?;
    check(f, args, &sizes, Precision::F64, p)
}

/// An element of an integer array as read: exactly, as `f64` (from `f64`
/// or `f32`) or `i64` (from `i64` or `i32`).
#[derive(Clone, Copy)]
enum Elem {
    F(f64),
    I(i64),
}

/// Check the integer arrays of a call (bound to `sizes`) whose arrays hold
/// elements of `elems`' type (`f64`, `f32`, `i64` or `i32`) and which runs
/// in the format `p`: every element an exact integer, one `p` holds
/// ([`fits`]), and on the axis of every gather that reads it.
pub(crate) fn check<V: AsOperand>(
    f: &Function,
    args: &[V],
    sizes: &Sizes,
    elems: Precision,
    p: Precision,
) -> Result<()> {
    if !has_int_params(f) {
        return Ok(());
    }
    let p_format = p;
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
        for_each_element(ptr, shape, strides, elems, &mut |pos, t| {
            if bad.is_some() {
                return;
            }
            let (k, shown) = match t {
                Elem::F(t) => {
                    if !(t.is_finite() && t.fract() == 0.0) {
                        bad = Some(not_integer_error(f, &p.name, pos, &t.to_string()));
                        return;
                    }
                    if !fits(t, p_format) {
                        bad = Some(beyond_error(f, &p.name, pos, &t.to_string(), p_format));
                        return;
                    }
                    (t as i128, t.to_string())
                }
                Elem::I(t) => (t as i128, t.to_string()),
            };
            for (s, n) in &mine {
                let k = k + s.offset as i128;
                if k < 0 || k >= *n {
                    let plus = match s.offset {
                        0 => String::new(),
                        c if c > 0 => format!(" + {c} = {k}"),
                        c => format!(" - {} = {k}", c.unsigned_abs()),
                    };
                    bad = Some(Error::Gather(format!(
                        "{} = {shown}{plus} is outside 0..{n} ({}, a gather index)",
                        position(&p.name, pos),
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

/// Call `f` on every element of a strided array of elements of `elems`'
/// type (shape checked by the caller), in C order, with its position.
fn for_each_element(
    ptr: *const f64,
    shape: &[usize],
    strides: &[isize],
    elems: Precision,
    f: &mut impl FnMut(&[usize], Elem),
) {
    if shape.contains(&0) {
        return;
    }
    let mut pos = vec![0usize; shape.len()];
    loop {
        let off: isize = pos.iter().zip(strides).map(|(&k, &s)| k as isize * s).sum();
        // SAFETY: the boundary check bound this array's shape and strides
        // (in elements of its type, the type of `elems`: the caller's
        // pointer is cast from it), and `pos` stays below the shape
        let x = unsafe {
            match elems {
                Precision::F64 => Elem::F(*ptr.offset(off)),
                Precision::F32 => Elem::F(f64::from(*(ptr as *const f32).offset(off))),
                Precision::I64 => Elem::I(*(ptr as *const i64).offset(off)),
                Precision::I32 => Elem::I(i64::from(*(ptr as *const i32).offset(off))),
            }
        };
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
