//! The call boundary, the one module converting values between the
//! caller and native code: [`arg`] turns `ndarray` arrays and views (and
//! [`Value`]s) into kernel arguments and results, and this module checks
//! them without heap allocation: the signature
//! with every named size replaced by a slot number ([`Sig`]), checked
//! against the arguments and the output buffer in place, and the per-call
//! scratch vectors ([`Workspace`]) a kernel keeps between calls.
//!
//! A workspace also remembers the last call it served ([`Workspace::key`]:
//! per argument and output leaf its kind, shape and strides, as
//! [`Sig::gather_args`] and [`Sig::gather_out`] read them in one walk):
//! a call is compared with it in place ([`Sig::match_call`], each leaf's
//! pointer written into the workspace on the way), and a call with the
//! same key would pass the same checks and get the same sizes, strides,
//! layout, native code and per-nest plan ([`Step`], [`Mode`]), so the
//! kernel only swaps in the new buffer pointers and runs. Any other call
//! takes the full check.
//!
//! [`Sig::bind`] accepts exactly the arguments [`crate::interp::bind`]
//! accepts and binds the same sizes; it only answers yes or no. On a no the
//! kernel calls `interp::bind` itself for the error message, so messages
//! stay those of the interpreter's call boundary.
//!
//! Owns the boundary only: it must not decide how nests run (`schedule`)
//! nor run native code (`super::kernel`).

pub mod arg;
pub mod typed;

use crate::error::{Error, Found, OutputProblem, Result};
use crate::interp;
use crate::interp::value::{AsOperand, AsOperandMut, Operand, OperandMut};
use crate::interp::{Boundary, Value};
use crate::jit::emit::{Entry, Native};
use crate::jit::ir::{resolve, Buf, BufKind, LoopProgram};
use crate::jit::run::jit_err;
use crate::jit::schedule::Step;
use crate::syntax::ast::{Function, Size};
use std::sync::Arc;

/// A size of the signature: a literal, or slot `k` of the named sizes.
#[derive(Clone, Debug)]
enum Dim {
    Lit(usize),
    Slot(usize),
}

/// [`Boundary`] with slots for named sizes.
#[derive(Clone, Debug)]
enum SlotForm {
    Array(Vec<Dim>),
    Pair(Box<SlotForm>, Box<SlotForm>),
}

/// A leaf of a parameter: the parameter and the projection path in it.
pub type ParamLeaf = (usize, Vec<u8>);

/// Sizes not bound (yet).
pub const UNBOUND: usize = usize::MAX;

/// A kernel's signature in slot form.
#[derive(Clone, Debug)]
pub struct Sig {
    params: Vec<SlotForm>,
    result: SlotForm,
    /// Slot `k` is the size named `names[k]`.
    pub names: Vec<String>,
    /// For each named size of the loop program: its slot, if the
    /// parameters bind it.
    pub prog_slots: Vec<Option<usize>>,
}

fn slot_form(b: &Boundary, names: &mut Vec<String>, add: bool) -> SlotForm {
    match b {
        Boundary::Pair(a, c) => SlotForm::Pair(
            Box::new(slot_form(a, names, add)),
            Box::new(slot_form(c, names, add)),
        ),
        Boundary::Array(dims) => SlotForm::Array(
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
    /// Per leaf of the arguments and the output ([`Sig::leaves`]), the
    /// buffer of `prog` it is the first element of ([`NO_BUF`] for a
    /// parameter leaf no nest reads); `None` if some parameter or result
    /// buffer is not a leaf (calls are then never remembered).
    pub fn leaf_buffers(&self, prog: &LoopProgram) -> Option<Vec<usize>> {
        let (arg_leaves, out_leaves) = self.leaves();
        let mut map = vec![NO_BUF; arg_leaves.len() + out_leaves.len()];
        let mut ok = true;
        for (k, b) in prog.bufs.iter().enumerate() {
            let leaf = match &b.kind {
                BufKind::Param { param, path } => {
                    arg_leaves.iter().position(|(p, q)| p == param && q == path)
                }
                BufKind::Out { path } => out_leaves
                    .iter()
                    .position(|q| q == path)
                    .map(|l| arg_leaves.len() + l),
                BufKind::Temp => continue,
            };
            match leaf {
                // (each leaf is one buffer at most)
                Some(l) if map[l] == NO_BUF => map[l] = k,
                _ => ok = false,
            }
        }
        ok.then_some(map)
    }

    pub fn new(f: &Function, result: &Boundary, prog: &LoopProgram) -> Sig {
        let mut names = Vec::new();
        let params: Vec<SlotForm> = f
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

    /// Append the kind, shape and strides of every leaf of `args` to
    /// `key`, parameters in order, each
    /// depth first (as [`Sig::leaves`] lists them); false (the call is
    /// not one a workspace can remember) when `args` do not have the
    /// parameters' number, pair structure and ranks.
    pub(crate) fn gather_args<V: AsOperand>(&self, args: &[V], key: &mut Vec<isize>) -> bool {
        args.len() == self.params.len()
            && self.params.iter().zip(args).all(|(b, v)| gather(b, v, key))
    }

    /// [`Sig::gather_args`] for the output buffer (its leaves follow the
    /// parameters').
    pub(crate) fn gather_out<O: AsOperandMut + ?Sized>(
        &self,
        out: &mut O,
        key: &mut Vec<isize>,
    ) -> bool {
        gather_mut(&self.result, out, key)
    }

    /// Whether `args` and `out` are, leaf by leaf, the call of `key`
    /// (kind, shape and strides, as [`Sig::gather_args`] and
    /// [`Sig::gather_out`] would gather them, the arguments making up
    /// `key_args` of it): compared in place, each leaf's first element
    /// written to its buffer's pointer (`leaf_buf`) on the way. On false
    /// the pointers are partly overwritten (the call must take the full
    /// path).
    #[inline]
    pub(crate) fn match_call<V: AsOperand, O: AsOperandMut>(
        &self,
        args: &[V],
        out: &mut O,
        key: &[isize],
        key_args: usize,
        leaf_buf: &[usize],
        ptrs: &mut [*mut f64],
    ) -> bool {
        let mut m = Matcher::new(key, 0, 0, leaf_buf, ptrs);
        self.match_args(args, &mut m)
            && m.at() == key_args
            && self.match_out(out, &mut m)
            && m.done()
    }

    /// Whether `args` are, leaf by leaf, the arguments of the key `m`
    /// walks (kind, shape and strides, as [`Sig::gather_args`] would
    /// gather them): compared in place, each leaf's first element written
    /// to its buffer's pointer on the way. On false the pointers are
    /// partly overwritten (the call must take the full path).
    pub(crate) fn match_args<V: AsOperand>(&self, args: &[V], m: &mut Matcher) -> bool {
        args.len() == self.params.len()
            && self
                .params
                .iter()
                .zip(args)
                .all(|(b, v)| same_here(b, v, m))
    }

    /// Then the output buffer's leaves.
    pub(crate) fn match_out<O: AsOperandMut + ?Sized>(&self, out: &mut O, m: &mut Matcher) -> bool {
        same_mut_here(&self.result, out, m)
    }

    /// The leaves of the parameters (parameter, projection path) and of
    /// the result (path), in the order the gathers visit them.
    pub fn leaves(&self) -> (Vec<ParamLeaf>, Vec<Vec<u8>>) {
        let mut args = Vec::new();
        for (k, b) in self.params.iter().enumerate() {
            let mut ps = Vec::new();
            paths(b, &mut Vec::new(), &mut ps);
            args.extend(ps.into_iter().map(|p| (k, p)));
        }
        let mut out = Vec::new();
        paths(&self.result, &mut Vec::new(), &mut out);
        (args, out)
    }

    /// Whether the result is a single number (no pair, rank 0).
    pub fn number_result(&self) -> bool {
        matches!(&self.result, SlotForm::Array(d) if d.is_empty())
    }

    pub fn alloc_result(&self, slots: &[usize]) -> crate::error::Result<Value> {
        alloc(&self.result, slots)
    }

    /// The result as a [`Fresh`] array (not zeroed) when it is one array
    /// (not a number, not a pair); else `None`.
    pub fn fresh_result(&self, slots: &[usize]) -> crate::error::Result<Option<Fresh>> {
        use crate::interp::value::checked_elements;
        let SlotForm::Array(d) = &self.result else {
            return Ok(None);
        };
        if d.is_empty() {
            return Ok(None);
        }
        let mut shape = Vec::with_capacity(d.len());
        for x in d {
            shape.push(dim(x, slots).ok_or_else(|| {
                crate::error::Error::Jit("a result size is not fixed by the arguments".into())
            })?);
        }
        let n = checked_elements(&shape)?;
        let what = || format!("the result (an array of shape {shape:?})");
        let mut v: Vec<std::mem::MaybeUninit<f64>> = crate::mem::with_capacity(n, what)?;
        // SAFETY: the capacity is `n`, and a `MaybeUninit` needs no
        // initialisation.
        unsafe { v.set_len(n) };
        let a = ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&shape), v)
            .map_err(|e| crate::error::Error::Call(format!("internal shape mismatch: {e}")))?;
        Ok(Some(Fresh(a)))
    }
}

/// A result array allocated without zeroing (C order), for a kernel whose
/// every call writes every element of its result (`Kernel`'s
/// `writes_whole_result`): its elements are uninitialised until the call
/// has run, and it becomes an array only then ([`Fresh::assume_init`]).
pub struct Fresh(ndarray::ArrayD<std::mem::MaybeUninit<f64>>);

impl Fresh {
    /// The array, once every element has been written.
    ///
    /// # Safety
    /// Every element has been written (a call of a kernel that writes its
    /// whole result returned `Ok`).
    pub unsafe fn assume_init(self) -> ndarray::ArrayD<f64> {
        // SAFETY: the caller's promise.
        unsafe { self.0.assume_init() }
    }
}

impl AsOperandMut for Fresh {
    fn operand_mut(&mut self) -> OperandMut<'_, Self> {
        let ptr = self.0.as_mut_ptr() as *mut f64;
        let a: &ndarray::ArrayD<std::mem::MaybeUninit<f64>> = &self.0;
        OperandMut::Array {
            ptr,
            shape: a.shape(),
            strides: a.strides(),
        }
    }
}

fn bind_value<V: AsOperand + ?Sized>(b: &SlotForm, v: &V, slots: &mut [usize]) -> bool {
    use crate::interp::value::MAX_ELEMENTS;
    match (b, v.operand()) {
        (SlotForm::Array(s), Operand::Real(_)) => s.is_empty(),
        (SlotForm::Array(s), Operand::Array { shape, .. }) => {
            shape.len() == s.len()
                // (past the limits — every axis and the whole — as
                // zero-stride views and empty arrays can be: the full
                // check words the error)
                && shape.iter().all(|&d| d as u128 <= MAX_ELEMENTS)
                && shape.iter().fold(1u128, |a, &d| a.saturating_mul(d as u128)) <= MAX_ELEMENTS
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
        (SlotForm::Pair(b0, b1), Operand::Pair(v0, v1)) => {
            bind_value(b0, v0, slots) && bind_value(b1, v1, slots)
        }
        _ => false,
    }
}

/// Key entries marking a number leaf and an array leaf (then its shape
/// and strides): a rank-0 leaf may be either.
const KEY_REAL: isize = -1;
const KEY_ARRAY: isize = -2;

/// The key entry of an array leaf of bound `d` (false: wrong rank).
fn key_array(d: &[Dim], shape: &[usize], strides: &[isize], key: &mut Vec<isize>) -> bool {
    if shape.len() != d.len() || strides.len() != d.len() {
        return false;
    }
    key.push(KEY_ARRAY);
    key.extend(shape.iter().map(|&n| n as isize));
    key.extend_from_slice(strides);
    true
}

fn gather<V: AsOperand + ?Sized>(b: &SlotForm, v: &V, key: &mut Vec<isize>) -> bool {
    match (b, v.operand()) {
        (SlotForm::Array(d), Operand::Real(_)) if d.is_empty() => {
            key.push(KEY_REAL);
            true
        }
        (SlotForm::Array(d), Operand::Array { shape, strides, .. }) => {
            key_array(d, shape, strides, key)
        }
        (SlotForm::Pair(b0, b1), Operand::Pair(v0, v1)) => {
            gather(b0, v0, key) && gather(b1, v1, key)
        }
        _ => false,
    }
}

fn gather_mut<O: AsOperandMut + ?Sized>(b: &SlotForm, v: &mut O, key: &mut Vec<isize>) -> bool {
    match (b, v.operand_mut()) {
        (SlotForm::Array(d), OperandMut::Real(_)) if d.is_empty() => {
            key.push(KEY_REAL);
            true
        }
        (SlotForm::Array(d), OperandMut::Array { shape, strides, .. }) => {
            key_array(d, shape, strides, key)
        }
        (SlotForm::Pair(b0, b1), OperandMut::Pair(v0, v1)) => {
            gather_mut(b0, v0, key) && gather_mut(b1, v1, key)
        }
        _ => false,
    }
}

/// A walk comparing a call's leaves with a remembered key in place
/// ([`Sig::match_args`], [`Sig::match_out`]).
pub(crate) struct Matcher<'k> {
    /// The remembered key.
    key: &'k [isize],
    /// How much of `key` has been matched.
    at: usize,
    /// The next leaf's number.
    leaf: usize,
    /// Per leaf, the buffer it is the first element of ([`NO_BUF`]: none).
    leaf_buf: &'k [usize],
    /// The buffers' first elements.
    ptrs: &'k mut [*mut f64],
}

/// In a leaf-to-buffer map: the leaf is no buffer (an unused parameter).
pub const NO_BUF: usize = usize::MAX;

impl<'k> Matcher<'k> {
    /// A walk of `key` from position `at`, leaf number `leaf` (0, 0: from
    /// the start; else where [`Matcher::pos`] left off).
    pub(crate) fn new(
        key: &'k [isize],
        at: usize,
        leaf: usize,
        leaf_buf: &'k [usize],
        ptrs: &'k mut [*mut f64],
    ) -> Self {
        Matcher {
            key,
            at,
            leaf,
            leaf_buf,
            ptrs,
        }
    }

    /// How much of the key has been matched.
    pub(crate) fn at(&self) -> usize {
        self.at
    }

    /// Where the walk is: position in the key, leaf number.
    pub(crate) fn pos(&self) -> (usize, usize) {
        (self.at, self.leaf)
    }

    /// Whether the whole key has been matched.
    pub(crate) fn done(&self) -> bool {
        self.at == self.key.len()
    }

    #[inline(always)]
    fn ptr(&mut self, p: *mut f64) -> bool {
        let Some(&b) = self.leaf_buf.get(self.leaf) else {
            return false;
        };
        self.leaf += 1;
        if let Some(slot) = self.ptrs.get_mut(b) {
            *slot = p;
        }
        // (a leaf of no buffer, `NO_BUF`, is no slot)
        true
    }

    #[inline(always)]
    fn real(&mut self, p: *mut f64) -> bool {
        match self.key.get(self.at) {
            Some(&KEY_REAL) => {
                self.at += 1;
                self.ptr(p)
            }
            _ => false,
        }
    }

    #[inline(always)]
    fn array(&mut self, p: *mut f64, shape: &[usize], strides: &[isize]) -> bool {
        let n = shape.len();
        let Some((&tag, k)) = self
            .key
            .get(self.at..self.at + 1 + 2 * n)
            .and_then(|k| k.split_first())
        else {
            return false;
        };
        let (ks, kt) = k.split_at(n);
        if tag != KEY_ARRAY
            || strides.len() != n
            || !ks.iter().zip(shape).all(|(a, &b)| *a == b as isize)
            || !kt.iter().zip(strides).all(|(a, b)| a == b)
        {
            return false;
        }
        self.at += 1 + 2 * n;
        self.ptr(p)
    }
}

/// Whether leaf or pair `v` matches the key where `m` is (a leaf inline,
/// pairs through [`same`]).
#[inline(always)]
fn same_here<V: AsOperand + ?Sized>(b: &SlotForm, v: &V, m: &mut Matcher) -> bool {
    match (b, v.operand()) {
        (SlotForm::Array(d), Operand::Real(x)) if d.is_empty() => {
            m.real(x as *const f64 as *mut f64)
        }
        (
            SlotForm::Array(d),
            Operand::Array {
                ptr,
                shape,
                strides,
            },
        ) if shape.len() == d.len() => m.array(ptr as *mut f64, shape, strides),
        (SlotForm::Pair(b0, b1), Operand::Pair(v0, v1)) => same(b0, v0, m) && same(b1, v1, m),
        _ => false,
    }
}

#[inline(never)]
fn same<V: AsOperand + ?Sized>(b: &SlotForm, v: &V, m: &mut Matcher) -> bool {
    same_here(b, v, m)
}

/// [`same_here`] for output buffers.
#[inline(always)]
fn same_mut_here<O: AsOperandMut + ?Sized>(b: &SlotForm, v: &mut O, m: &mut Matcher) -> bool {
    match (b, v.operand_mut()) {
        (SlotForm::Array(d), OperandMut::Real(x)) if d.is_empty() => m.real(x as *mut f64),
        (
            SlotForm::Array(d),
            OperandMut::Array {
                ptr,
                shape,
                strides,
            },
        ) if shape.len() == d.len() => m.array(ptr, shape, strides),
        (SlotForm::Pair(b0, b1), OperandMut::Pair(v0, v1)) => {
            same_mut(b0, v0, m) && same_mut(b1, v1, m)
        }
        _ => false,
    }
}

#[inline(never)]
fn same_mut<O: AsOperandMut + ?Sized>(b: &SlotForm, v: &mut O, m: &mut Matcher) -> bool {
    same_mut_here(b, v, m)
}

fn paths(b: &SlotForm, at: &mut Vec<u8>, out: &mut Vec<Vec<u8>>) {
    match b {
        SlotForm::Array(_) => out.push(at.clone()),
        SlotForm::Pair(a, c) => {
            for (k, x) in [(0u8, a), (1, c)] {
                at.push(k);
                paths(x, at, out);
                at.pop();
            }
        }
    }
}

fn dim(d: &Dim, slots: &[usize]) -> Option<usize> {
    match d {
        Dim::Lit(n) => Some(*n),
        Dim::Slot(k) => slots.get(*k).copied().filter(|&v| v != UNBOUND),
    }
}

fn fits<O: AsOperandMut + ?Sized>(b: &SlotForm, v: &mut O, slots: &[usize]) -> bool {
    match (b, v.operand_mut()) {
        (SlotForm::Pair(a, c), OperandMut::Pair(x, y)) => fits(a, x, slots) && fits(c, y, slots),
        (SlotForm::Array(d), OperandMut::Real(_)) => d.is_empty(),
        (SlotForm::Array(d), OperandMut::Array { shape, strides, .. }) => {
            shape.len() == d.len()
                && d.iter()
                    .zip(shape)
                    .all(|(w, &got)| dim(w, slots) == Some(got))
                && !shape.iter().zip(strides).any(|(n, s)| *n > 1 && *s == 0)
        }
        _ => false,
    }
}

fn alloc(b: &SlotForm, slots: &[usize]) -> crate::error::Result<Value> {
    use crate::interp::value::checked_elements;
    use ndarray::{Dimension, IxDyn};
    Ok(match b {
        SlotForm::Pair(a, c) => Value::pair(alloc(a, slots)?, alloc(c, slots)?),
        SlotForm::Array(d) if d.is_empty() => Value::Real(0.0),
        SlotForm::Array(d) => {
            // built in place: an IxDyn of up to 4 axes is inline, no Vec
            let mut shape = IxDyn::zeros(d.len());
            for (k, x) in d.iter().enumerate() {
                shape[k] = dim(x, slots).ok_or_else(|| {
                    crate::error::Error::Jit("a result size is not fixed by the arguments".into())
                })?;
            }
            checked_elements(shape.slice())?;
            let what = || format!("the result (an array of shape {:?})", shape.slice());
            Value::Array(crate::mem::array_zeros(shape.clone(), what)?)
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
    /// Named sizes in the loop program's order, then the address of the
    /// call's cancellation flag (see `jit::Cancel`).
    pub svals: Vec<i64>,
    /// First element of every buffer.
    pub ptrs: Vec<*mut f64>,
    /// Strides of every buffer, buffers in order.
    pub strides: Vec<i64>,
    /// Per buffer per axis (flattened): unit stride.
    pub unit: Vec<bool>,
    /// The storage of the `let` temporaries (C order): slots shared by
    /// temporaries that are never live at once (see
    /// [`super::Kernel`]'s `live`), each as long as the longest it holds.
    pub temps: Vec<Vec<f64>>,
    /// Per temporary buffer (by buffer index, others unused), its slot in
    /// `temps` for the remembered call's sizes.
    pub slot_of: Vec<usize>,
    /// Per slot, while assigning: the last nest of its latest occupant.
    pub slot_busy: Vec<usize>,
    /// Per slot, while assigning: the elements it must hold.
    pub slot_want: Vec<usize>,
    /// The remembered call: per argument leaf then output leaf, its kind,
    /// shape and strides (see the module doc); meaningful only when
    /// `valid`.
    pub key: Vec<isize>,
    /// How much of `key` the arguments make up.
    pub key_args: usize,
    /// Whether `key`, `slots`, `svals`, `strides`, `unit`, the
    /// temporaries' pointers in `ptrs`, `native` and `plan` describe a
    /// call that passed every check.
    pub valid: bool,
    /// This call's key, being gathered.
    pub probe: Vec<isize>,
    /// How much of `probe` the arguments make up.
    pub probe_args: usize,
    /// The native code for the remembered call's layout.
    pub native: Option<Arc<Native>>,
    /// Per nest, how the remembered call runs it.
    pub plan: Vec<Step>,
    /// Per row group of the kernel (`schedule::rows`), the rows per block
    /// for the remembered call's sizes.
    pub blocks: Vec<usize>,
    /// How the remembered call runs its nests, from `plan` and `native`.
    pub mode: Mode,
}

/// How a call runs its nests, decided with its [`Step`]s.
#[derive(Clone, Copy, Debug, Default)]
pub enum Mode {
    /// Nest by nest as the steps say.
    #[default]
    Steps,
    /// One nest, on the calling thread, not on the GEMM library: its
    /// entry over `0..n0`.
    One(Entry, i64),
    /// Every nest on the calling thread, none on the GEMM library: the
    /// native function that runs them all in order
    /// ([`Native::chain`]).
    Chain(Entry),
}

// SAFETY: the raw pointers are only meaningful during a call, which holds
// the workspace exclusively; between calls they are dead values.
unsafe impl Send for Workspace {}

pub(crate) fn leaf<'v, V: AsOperand>(v: &'v V, path: &[u8]) -> Option<&'v V> {
    let Some(k) = path.first() else {
        return Some(v);
    };
    match v.operand() {
        Operand::Pair(a, b) => leaf(if *k == 0 { a } else { b }, &path[1..]),
        _ => None,
    }
}

pub(crate) fn leaf_mut<'v, O: AsOperandMut>(v: &'v mut O, path: &[u8]) -> Option<&'v mut O> {
    let Some(k) = path.first() else {
        return Some(v);
    };
    match v.operand_mut() {
        OperandMut::Pair(a, b) => leaf_mut(if *k == 0 { a } else { b }, &path[1..]),
        _ => None,
    }
}

pub(crate) fn size_of(s: &Size, sizes: &interp::Sizes) -> Result<usize> {
    match s {
        Size::Lit(n) => Ok(*n),
        Size::Named(x) => sizes
            .get(x)
            .copied()
            .ok_or_else(|| Error::UnboundSize { size: x.clone() }),
    }
}

pub(crate) fn check_out<O: AsOperandMut>(
    b: &Boundary,
    v: &mut O,
    sizes: &interp::Sizes,
    what: &str,
) -> Result<()> {
    let v = v.operand_mut();
    let found = match &v {
        OperandMut::Pair(..) => Found::Pair,
        OperandMut::Real(_) => Found::Number,
        OperandMut::Array { shape, .. } => Found::Array(shape.to_vec()),
    };
    let bad = |problem| {
        Err(Error::Output {
            buffer: what.to_string(),
            problem,
        })
    };
    match (b, v) {
        (Boundary::Pair(a, c), OperandMut::Pair(x, y)) => {
            check_out(a, x, sizes, &format!("{what}.0"))?;
            check_out(c, y, sizes, &format!("{what}.1"))
        }
        (Boundary::Array(d), OperandMut::Real(_)) if d.is_empty() => Ok(()),
        (Boundary::Array(d), OperandMut::Array { shape, .. })
            if d.is_empty() && !shape.is_empty() =>
        {
            bad(OutputProblem::NotNumber(found))
        }
        (Boundary::Array(d), OperandMut::Array { shape, strides, .. }) => {
            let want = d
                .iter()
                .map(|s| size_of(s, sizes))
                .collect::<Result<Vec<_>>>()?;
            if shape != want.as_slice() {
                return bad(OutputProblem::Shape {
                    expected: want,
                    got: shape.to_vec(),
                });
            }
            // (an empty array has no elements to overlap)
            if !shape.contains(&0) && shape.iter().zip(strides).any(|(n, s)| *n > 1 && *s == 0) {
                return bad(OutputProblem::Overlap);
            }
            Ok(())
        }
        (Boundary::Pair(..), _) => bad(OutputProblem::NotPair(found)),
        (Boundary::Array(d), _) if d.is_empty() => bad(OutputProblem::NotNumber(found)),
        (Boundary::Array(_), _) => bad(OutputProblem::NotArray(found)),
    }
}

/// Push the pointer and strides of the parameter leaf at `path` of `arg`
/// (buffer `buf`, its dims resolved with `svals`), checked again against
/// its shape.
pub(crate) fn bind_param<V: AsOperand>(
    arg: &V,
    path: &[u8],
    buf: &Buf,
    svals: &[i64],
    ptrs: &mut Vec<*mut f64>,
    strides: &mut Vec<i64>,
) -> Result<()> {
    let dims = || buf.dims.iter().map(|d| resolve(d, svals));
    let shape_is = |s: &[usize]| s.len() == buf.dims.len() && dims().eq(s.iter().copied());
    let v =
        leaf(arg, path).ok_or_else(|| jit_err(format!("argument `{}` is malformed", buf.name)))?;
    match v.operand() {
        Operand::Array {
            ptr,
            shape,
            strides: st,
        } => {
            if !shape_is(shape) {
                return Err(jit_err(format!(
                    "internal: argument `{}` has shape {:?} after its check, expected {:?}",
                    buf.name,
                    shape,
                    dims().collect::<Vec<_>>()
                )));
            }
            ptrs.push(ptr as *mut f64);
            strides.extend(st.iter().map(|&s| s as i64));
        }
        Operand::Real(x) if buf.dims.is_empty() => ptrs.push(x as *const f64 as *mut f64),
        _ => {
            return Err(jit_err(format!(
                "internal: argument `{}` does not match its type after its check",
                buf.name
            )))
        }
    }
    Ok(())
}

/// Push the pointer and strides of the output leaf at `path` of `out`
/// (buffer `buf`), its shape checked.
pub(crate) fn bind_out<O: AsOperandMut>(
    out: &mut O,
    path: &[u8],
    buf: &Buf,
    svals: &[i64],
    ptrs: &mut Vec<*mut f64>,
    strides: &mut Vec<i64>,
) -> Result<()> {
    let dims = || buf.dims.iter().map(|d| resolve(d, svals));
    let shape_is = |s: &[usize]| s.len() == buf.dims.len() && dims().eq(s.iter().copied());
    let v = leaf_mut(out, path).ok_or_else(|| jit_err("the output does not match the result"))?;
    match v.operand_mut() {
        OperandMut::Array {
            ptr,
            shape,
            strides: st,
        } => {
            if !shape_is(shape) {
                return Err(Error::Output {
                    buffer: "buffer".into(),
                    problem: OutputProblem::Shape {
                        expected: dims().collect(),
                        got: shape.to_vec(),
                    },
                });
            }
            strides.extend(st.iter().map(|&s| s as i64));
            ptrs.push(ptr);
        }
        OperandMut::Real(x) if buf.dims.is_empty() => ptrs.push(x as *mut f64),
        _ => return Err(jit_err("the output does not match the result")),
    }
    Ok(())
}
