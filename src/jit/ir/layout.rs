//! Stride layouts ([`Layout`]): which axes of which buffers a piece of
//! native code may assume unit-stride. Owns the type only and must not choose layouts; which layouts
//! get code is the run time's choice (`run::kernel`).

use super::{Buf, BufKind, LoopProgram};

/// What the generated code may assume of the buffers' strides: for every
/// buffer, for every axis, whether its stride is 1 (then the code uses the
/// constant 1 and never reads the stride it is passed). `let` temporaries
/// are C order, so their last axis is always unit-stride. A kernel keeps
/// native code per layout it has been called with (see `jit::Kernel`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Layout {
    pub unit: Vec<Vec<bool>>,
}

impl Layout {
    /// Nothing known: every stride is read at run time (temporaries still
    /// have a unit last axis).
    pub fn generic(p: &LoopProgram) -> Layout {
        Layout::from_fn(p, |_, _| false)
    }

    /// C order for every buffer: the last axis is unit-stride.
    pub fn c_order(p: &LoopProgram) -> Layout {
        Layout::from_fn(p, |b, a| a + 1 == b.dims.len())
    }

    /// A layout from a predicate on (buffer, axis); temporaries are always
    /// C order.
    pub fn from_fn(p: &LoopProgram, mut unit: impl FnMut(&Buf, usize) -> bool) -> Layout {
        Layout {
            unit: p
                .bufs
                .iter()
                .map(|b| {
                    (0..b.dims.len())
                        .map(|a| match b.kind {
                            BufKind::Temp => a + 1 == b.dims.len(),
                            _ => unit(b, a),
                        })
                        .collect()
                })
                .collect(),
        }
    }

    /// Whether axis `axis` of buffer `buf` is unit-stride.
    pub fn is_unit(&self, buf: usize, axis: usize) -> bool {
        self.unit
            .get(buf)
            .and_then(|u| u.get(axis))
            .copied()
            .unwrap_or(false)
    }
}
