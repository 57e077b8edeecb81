//! The call boundary of a kernel without heap allocation: the signature
//! with every named size replaced by a slot number ([`Sig`]), checked
//! against the arguments and the output buffer in place, and the per-call
//! scratch vectors ([`Workspace`]) a kernel keeps between calls.
//!
//! [`Sig::bind`] accepts exactly the arguments [`crate::interp::bind`]
//! accepts and binds the same sizes; it only answers yes or no. On a no the
//! kernel calls `interp::bind` itself for the error message, so messages
//! stay those of the interpreter's call boundary.

use super::loopir::LoopProgram;
use crate::interp::value::{AsOperand, AsOperandMut, Operand, OperandMut};
use crate::interp::{Boundary, Value};
use crate::syntax::ast::{Function, Size};

/// A size of the signature: a literal, or slot `k` of the named sizes.
#[derive(Clone, Debug)]
enum Dim {
    Lit(usize),
    Slot(usize),
}

/// [`Boundary`] with slots for named sizes.
#[derive(Clone, Debug)]
enum SB {
    Array(Vec<Dim>),
    Pair(Box<SB>, Box<SB>),
}

/// Sizes not bound (yet).
pub const UNBOUND: usize = usize::MAX;

/// A kernel's signature in slot form.
#[derive(Clone, Debug)]
pub struct Sig {
    params: Vec<SB>,
    result: SB,
    /// Slot `k` is the size named `names[k]`.
    pub names: Vec<String>,
    /// For each named size of the loop program: its slot, if the
    /// parameters bind it.
    pub prog_slots: Vec<Option<usize>>,
}

fn slot_form(b: &Boundary, names: &mut Vec<String>, add: bool) -> SB {
    match b {
        Boundary::Pair(a, c) => SB::Pair(
            Box::new(slot_form(a, names, add)),
            Box::new(slot_form(c, names, add)),
        ),
        Boundary::Array(dims) => SB::Array(
            dims.iter()
                .map(|d| match d {
                    Size::Lit(n) => Dim::Lit(*n),
                    Size::Named(x) => match names.iter().position(|n| n == x) {
                        Some(k) => Dim::Slot(k),
                        None if add => {
                            names.push(x.clone());
                            Dim::Slot(names.len() - 1)
                        }
                        // a result size no parameter binds: never matches
                        None => Dim::Slot(UNBOUND),
                    },
                })
                .collect(),
        ),
    }
}

impl Sig {
    pub fn new(f: &Function, result: &Boundary, prog: &LoopProgram) -> Sig {
        let mut names = Vec::new();
        let params = f
            .params
            .iter()
            .map(|p| slot_form(&Boundary::of(&p.ty), &mut names, true))
            .collect();
        let result = slot_form(result, &mut names, false);
        let prog_slots = prog
            .sizes
            .iter()
            .map(|s| names.iter().position(|n| n == s))
            .collect();
        Sig {
            params,
            result,
            names,
            prog_slots,
        }
    }

    /// Whether `args` fit the parameters (as `interp::bind` decides),
    /// binding `slots` (all [`UNBOUND`] on entry, one per name).
    pub(crate) fn bind<V: AsOperand>(&self, args: &[V], slots: &mut [usize]) -> bool {
        args.len() == self.params.len()
            && self
                .params
                .iter()
                .zip(args)
                .all(|(b, v)| bind_value(b, v, slots))
    }

    /// Whether `out` fits the result (as the kernel's output check
    /// decides) with the bound `slots`.
    pub(crate) fn fits_out<O: AsOperandMut + ?Sized>(&self, out: &mut O, slots: &[usize]) -> bool {
        fits(&self.result, out, slots)
    }

    /// The result's shape of leaf `path`... (used to allocate results).
    pub fn alloc_result(&self, slots: &[usize]) -> crate::Result<Value> {
        alloc(&self.result, slots)
    }
}

fn bind_value<V: AsOperand + ?Sized>(b: &SB, v: &V, slots: &mut [usize]) -> bool {
    match (b, v.operand()) {
        (SB::Array(s), Operand::Real(_)) => s.is_empty(),
        (SB::Array(s), Operand::Array { shape, .. }) => {
            shape.len() == s.len()
                && s.iter().zip(shape).all(|(want, &got)| match want {
                    Dim::Lit(k) => *k == got,
                    Dim::Slot(k) => {
                        let Some(slot) = slots.get_mut(*k) else {
                            return false;
                        };
                        if *slot == UNBOUND {
                            *slot = got;
                        }
                        *slot == got
                    }
                })
        }
        (SB::Pair(b0, b1), Operand::Pair(v0, v1)) => {
            bind_value(b0, v0, slots) && bind_value(b1, v1, slots)
        }
        _ => false,
    }
}

fn dim(d: &Dim, slots: &[usize]) -> Option<usize> {
    match d {
        Dim::Lit(n) => Some(*n),
        Dim::Slot(k) => slots.get(*k).copied().filter(|&v| v != UNBOUND),
    }
}

fn fits<O: AsOperandMut + ?Sized>(b: &SB, v: &mut O, slots: &[usize]) -> bool {
    match (b, v.operand_mut()) {
        (SB::Pair(a, c), OperandMut::Pair(x, y)) => fits(a, x, slots) && fits(c, y, slots),
        (SB::Array(d), OperandMut::Real(_)) => d.is_empty(),
        (SB::Array(d), OperandMut::Array { shape, strides, .. }) => {
            shape.len() == d.len()
                && d.iter()
                    .zip(shape)
                    .all(|(w, &got)| dim(w, slots) == Some(got))
                && !shape.iter().zip(strides).any(|(n, s)| *n > 1 && *s == 0)
        }
        _ => false,
    }
}

fn alloc(b: &SB, slots: &[usize]) -> crate::Result<Value> {
    use crate::interp::value::checked_elements;
    use ndarray::{ArrayD, IxDyn};
    Ok(match b {
        SB::Pair(a, c) => Value::pair(alloc(a, slots)?, alloc(c, slots)?),
        SB::Array(d) if d.is_empty() => Value::Real(0.0),
        SB::Array(d) => {
            let shape = d
                .iter()
                .map(|x| {
                    dim(x, slots).ok_or_else(|| {
                        crate::Error::Jit("a result size is not fixed by the arguments".into())
                    })
                })
                .collect::<crate::Result<Vec<_>>>()?;
            checked_elements(&shape)?;
            Value::Array(ArrayD::zeros(IxDyn(&shape)))
        }
    })
}

/// The scratch space of one call: kept by the kernel and reused, so a call
/// into a preallocated output allocates nothing once its workspace has
/// grown to the sizes it is called with.
#[derive(Default)]
pub struct Workspace {
    /// Named sizes by slot.
    pub slots: Vec<usize>,
    /// Named sizes in the loop program's order.
    pub svals: Vec<i64>,
    /// First element of every buffer.
    pub ptrs: Vec<*mut f64>,
    /// Strides of every buffer, buffers in order.
    pub strides: Vec<i64>,
    /// Per buffer per axis (flattened): unit stride.
    pub unit: Vec<bool>,
    /// The `let` temporaries (C order).
    pub temps: Vec<Vec<f64>>,
}

// SAFETY: the raw pointers are only meaningful during a call, which holds
// the workspace exclusively; between calls they are dead values.
unsafe impl Send for Workspace {}
