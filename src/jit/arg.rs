//! Borrowed arguments and output buffers of a kernel call: [`Arg`] and
//! [`ArgMut`] hold `ndarray` views of any layout (C, Fortran, transposed,
//! sliced with steps, negative strides), which the kernel reads and writes
//! in place — no copy, no allocation for the arguments themselves.
//!
//! They mirror [`crate::Value`] at the call boundary: a number, an array,
//! or a pair (a tensor of pairs `[n](R,R)` travels as a pair of arrays).
//! A 0-dimensional array is accepted wherever a number is (as for
//! `Value`), which is how a number result is written into a buffer.

use crate::interp::value::{AsOperand, AsOperandMut, Operand, OperandMut};
use ndarray::{ArrayViewD, ArrayViewMutD};

/// A borrowed argument of [`super::Kernel::call_args`]: read in place.
#[derive(Clone, Debug)]
pub enum Arg<'a> {
    /// A number (parameter type `R`).
    Real(f64),
    /// An array of any layout (strides in elements, of any sign).
    Array(ArrayViewD<'a, f64>),
    /// A pair (a tuple parameter, or a tensor of pairs as a pair of arrays).
    Pair(Box<Arg<'a>>, Box<Arg<'a>>),
}

impl<'a> Arg<'a> {
    /// `Arg::Pair` of two arguments.
    pub fn pair(a: Arg<'a>, b: Arg<'a>) -> Arg<'a> {
        Arg::Pair(Box::new(a), Box::new(b))
    }
}

/// A borrowed output buffer of [`super::Kernel::call_args_into`]: the
/// result is written into it in place.
///
/// A result of type `R` (a number) goes into a 0-dimensional array view;
/// use [`super::Kernel::call_args`] to get it back as a value instead.
#[derive(Debug)]
pub enum ArgMut<'a> {
    /// An array of any layout whose elements do not overlap (no zero
    /// stride on an axis of more than one element).
    Array(ArrayViewMutD<'a, f64>),
    /// A pair of buffers (a tuple result, or a tensor of pairs).
    Pair(Box<ArgMut<'a>>, Box<ArgMut<'a>>),
}

impl<'a> ArgMut<'a> {
    /// `ArgMut::Pair` of two buffers.
    pub fn pair(a: ArgMut<'a>, b: ArgMut<'a>) -> ArgMut<'a> {
        ArgMut::Pair(Box::new(a), Box::new(b))
    }
}

impl AsOperand for Arg<'_> {
    fn operand(&self) -> Operand<'_, Self> {
        match self {
            Arg::Real(x) => Operand::Real(x),
            Arg::Array(a) => Operand::Array {
                ptr: a.as_ptr(),
                shape: a.shape(),
                strides: a.strides(),
            },
            Arg::Pair(a, b) => Operand::Pair(a, b),
        }
    }
}

impl AsOperandMut for ArgMut<'_> {
    fn operand_mut(&mut self) -> OperandMut<'_, Self> {
        match self {
            ArgMut::Array(a) => {
                let ptr = a.as_mut_ptr();
                let a: &ArrayViewMutD<f64> = a;
                OperandMut::Array {
                    ptr,
                    shape: a.shape(),
                    strides: a.strides(),
                }
            }
            ArgMut::Pair(a, b) => OperandMut::Pair(a, b),
        }
    }
}
