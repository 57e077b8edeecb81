//! Running GEMM stages on a tuned GEMM library (the run time's half of
//! [`crate::jit::schedule::gemm`], which decides which nests are stages):
//! a nest (or `let` temporary)
//! that is a (batched) matrix–matrix or matrix–vector product over plain
//! indices, in any permutation and with any strides, times an optional
//! scalar, runs as a library call instead of generated loops.
//!
//! `schedule::gemm::plan` recognises such a nest at compile time and records its symbolic
//! structure (which loop variable is an M, N, K or batch axis, and where it
//! indexes each buffer); [`GemmPlan::run`] reads the actual sizes and strides at
//! call time, fuses the variables of one role into a single GEMM dimension
//! where the strides allow it (in every operand), loops over the batch
//! axes, and calls the library. Transposes and reversals are strides.
//!
//! A complex product's part ([`GemmPlan::then`]) runs as two library
//! calls, the second accumulating into the first's output; with the
//! operands' parts interleaved, the part that runs first computes both
//! parts in one call of the library's complex kernel ([`ComplexPair`],
//! [`GemmPlan::run_stage`] then returns [`Ran::Both`] and the kernel
//! skips the other part's nest), into C-order scratch split into the two
//! outputs unless those are interleaved too.
//!
//! A pairwise step of a planned tensor network is such a nest with several
//! kept and summed indices per operand (a tensordot). Where an M, N or K
//! group does not fuse (its axes interleaved with another group's in an
//! operand, or in different orders in the two operands), the operands that
//! do not fit one order per group are copied into C-order scratch, and an
//! output that does not fit is computed in scratch and copied back (what
//! numpy's `tensordot` does with its transposes), so the step is one
//! library call per batch index. The scratch is the thread's, kept between
//! stages up to 2^22 elements; when it cannot be allocated the stage loops
//! over the unfused axes with one call each instead.
//!
//! # The library
//!
//! The [`gemm`](https://docs.rs/gemm) crate (faer's), pinned to 0.19.0:
//! it takes arbitrary (also negative) strides for every operand including
//! the destination, and its parallelism per call. It writes the
//! destination (zeros) when `k = 0` and does nothing when `m = 0` or
//! `n = 0`. Why this library, and its speed against ndarray's `dot`:
//! `benches/README.md`, "GEMM stages: the library".
//!
//! # Threads
//!
//! `threads` is the kernel's option (0 resolved to all cores by the
//! caller). A product of at least [`crate::jit::Options::gemm_split_min_work`]
//! multiply-adds on `threads > 1` is
//! cut into output panels, one per thread along the longer side of the
//! output (rows when square; widths a multiple of 16), which run on
//! [`super::pool`], each a single-threaded library call
//! (`Parallelism::None`); smaller products run on one thread. The panels
//! write disjoint parts of the destination, and each output element is
//! summed by one call, in the library's order (README: GEMM stages may sum
//! in the library's order; in every measurement so far the result was bit
//! for bit the one-thread result, but that is not promised).
//!
//! The threshold ([`crate::jit::GEMM_SPLIT_MIN_WORK`]) and the strategy
//! ([`crate::jit::DEFAULT_GEMM_SPLIT`], against the library's own
//! threading, still selectable with [`crate::jit::Options::gemm_split`])
//! were measured: `benches/README.md`, "GEMM stages on threads".
//!
//! At run time a stage declines (returns `false`, and the kernel runs the
//! native code instead) when the product degenerates to dot products
//! (`m = n = 1` after fusion), or when `α` is zero (generated code then
//! keeps IEEE semantics for non-finite inputs).
//!
//! Owns the library calls, their scratch and threads; it must not decide
//! which nests are stages.

use crate::jit::ir::SizeRef;
use crate::jit::options::{GemmAxis, GemmSplit};
use crate::jit::schedule::gemm::{ComplexPair, GemmPlan, Operand, Role, MAX_VARS, SMALL_MNK};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// One (fused) dimension: its size and its stride in each of out, lhs, rhs.
#[derive(Clone, Copy, Debug, Default)]
struct Dim {
    size: usize,
    st: [isize; 3],
}

/// Up to [`MAX_VARS`] dimensions, in place.
#[derive(Clone, Copy, Debug, Default)]
struct Dims {
    len: usize,
    d: [Dim; MAX_VARS],
}

impl Dims {
    fn push(&mut self, x: Dim) {
        self.d[self.len] = x;
        self.len += 1;
    }
    fn as_slice(&self) -> &[Dim] {
        &self.d[..self.len]
    }
    fn as_mut_slice(&mut self) -> &mut [Dim] {
        &mut self.d[..self.len]
    }
    /// The first dimension, removed (the unit dimension when empty).
    fn take_first(&mut self) -> Dim {
        if self.len == 0 {
            return Dim {
                size: 1,
                st: [0, 0, 0],
            };
        }
        let x = self.d[0];
        self.d.copy_within(1..self.len, 0);
        self.len -= 1;
        x
    }
}

/// Fuse the dimensions of one role: `ops` are the operands (0 out, 1 lhs,
/// 2 rhs) in which the role's variables occur; two dimensions fuse when the
/// outer one's stride is the inner one's stride times its size in each of
/// them. Returns the fused dimensions, largest first.
fn fuse(dims: Dims, ops: &[usize]) -> Dims {
    let mut kept = Dims::default();
    for d in dims.as_slice() {
        if d.size != 1 {
            kept.push(*d);
        }
    }
    kept.as_mut_slice()
        .sort_unstable_by_key(|d| (d.st[ops[0]].unsigned_abs(), d.size));
    let mut out = Dims::default();
    for &d in kept.as_slice() {
        if let Some(last) = out.as_mut_slice().last_mut() {
            let fits = ops.iter().all(|&o| {
                (last.size as isize)
                    .checked_mul(last.st[o])
                    .is_some_and(|s| s == d.st[o])
            });
            if fits {
                last.size *= d.size;
                continue;
            }
        }
        out.push(d);
    }
    out.as_mut_slice()
        .sort_unstable_by_key(|d| std::cmp::Reverse(d.size));
    out
}

impl GemmPlan {
    /// Run the stage: `bufs`, `strides` and `sizes` as the native code
    /// receives them. Returns `false`, having touched nothing, when the
    /// stage declines this call (see the module doc); the caller then runs
    /// the native code. `cancel` is checked before each library call, and
    /// a product of more than [`CANCEL_WORK`] multiply-adds is cut into
    /// panels, so a cancelled call stops within about one panel (see
    /// `jit::Cancel`); the stage then returns `true` with the output
    /// incomplete.
    ///
    /// # Safety
    /// The pointers and strides describe live buffers whose shapes were
    /// checked against the loop program's buffer dims, and the output
    /// buffer does not overlap the others or itself.
    /// `f32`: the buffers hold `f32` elements (a kernel compiled in
    /// `Precision::F32`; the library's f32 kernel, no scratch copies: a
    /// product that needs them is declined).
    ///
    /// A complex product's part (with [`GemmPlan::then`]) runs only when
    /// both its products run as plain library calls ([`GemmPlan::plain`]):
    /// the first writes the output, the second accumulates into it.
    pub unsafe fn run(
        &self,
        bufs: &[*mut f64],
        strides: &[i64],
        sizes: &[i64],
        threads: Threads,
        cancel: &AtomicBool,
        f32: bool,
    ) -> bool {
        let Some(then) = &self.then else {
            // SAFETY: as this function's
            return unsafe { self.run_one(bufs, strides, sizes, threads, cancel, f32, false) };
        };
        if !self.plain(bufs, strides, sizes, f32) || !then.plain(bufs, strides, sizes, f32) {
            return false;
        }
        // SAFETY: as this function's; both products take the plain path
        // (no scratch), so neither declines
        unsafe {
            self.run_one(bufs, strides, sizes, threads, cancel, f32, false);
            if !cancel.load(Ordering::Relaxed) {
                then.run_one(bufs, strides, sizes, threads, cancel, f32, true);
            }
        }
        true
    }

    /// [`GemmPlan::run`], for a complex product's part that runs before
    /// its partner (the next nest) first trying both parts at once on the
    /// library's complex kernel ([`Ran::Both`]; see [`ComplexPair`]).
    ///
    /// # Safety
    /// As [`GemmPlan::run`]; with [`Ran::Both`] the next nest's output is
    /// written too.
    pub unsafe fn run_stage(
        &self,
        bufs: &[*mut f64],
        strides: &[i64],
        sizes: &[i64],
        threads: Threads,
        cancel: &AtomicBool,
        f32: bool,
    ) -> Ran {
        if let Some(c) = self.complex.as_deref().filter(|c| c.first) {
            // SAFETY: as this function's
            if unsafe { c.run(bufs, strides, sizes, threads, cancel, f32) } {
                return Ran::Both;
            }
        }
        // SAFETY: as this function's
        if unsafe { self.run(bufs, strides, sizes, threads, cancel, f32) } {
            Ran::Yes
        } else {
            Ran::No
        }
    }

    /// Whether the product runs as library calls on the operands in place
    /// (it binds, needs no scratch copies and does not degenerate to dot
    /// products), or has an empty output.
    fn plain(&self, bufs: &[*mut f64], strides: &[i64], sizes: &[i64], f32: bool) -> bool {
        let Some(b) = self.bind(bufs, strides, sizes, f32) else {
            return false;
        };
        let dims = |r: Role| self.dims(b.nv, &b.vsize, r, &b.st);
        let (dm, dn, dk, db) = (
            dims(Role::M),
            dims(Role::N),
            dims(Role::K),
            dims(Role::Batch),
        );
        let empty = |d: &Dims| d.as_slice().iter().any(|d| d.size == 0);
        if empty(&dm) || empty(&dn) || empty(&db) {
            return true;
        }
        let k_empty = empty(&dk);
        let unfused = |d: &Dims, ops: &[usize]| fuse(*d, ops).len > 1;
        if !k_empty && (unfused(&dm, &[0, 1]) || unfused(&dn, &[0, 2]) || unfused(&dk, &[1, 2])) {
            return false;
        }
        Product::of(dm, dn, dk, db, k_empty, b.alpha, false).is_some()
    }

    /// One product: [`GemmPlan::run`] for a plan without a second product;
    /// `acc`: add the product to the output instead of writing it (then it
    /// declines where it would need scratch copies).
    ///
    /// # Safety
    /// As [`GemmPlan::run`].
    #[allow(clippy::too_many_arguments)]
    unsafe fn run_one(
        &self,
        bufs: &[*mut f64],
        strides: &[i64],
        sizes: &[i64],
        threads: Threads,
        cancel: &AtomicBool,
        f32: bool,
        acc: bool,
    ) -> bool {
        let Some(Bound {
            nv,
            vsize,
            mut st,
            alpha,
        }) = self.bind(bufs, strides, sizes, f32)
        else {
            return false;
        };
        let dims = |r: Role, st: &[[isize; 3]; MAX_VARS]| self.dims(nv, &vsize, r, st);
        let (dm, dn, dk, db) = (
            dims(Role::M, &st),
            dims(Role::N, &st),
            dims(Role::K, &st),
            dims(Role::Batch, &st),
        );
        // an empty output: nothing to write
        if dm
            .as_slice()
            .iter()
            .chain(dn.as_slice())
            .chain(db.as_slice())
            .any(|d| d.size == 0)
        {
            return true;
        }
        let k_empty = dk.as_slice().iter().any(|d| d.size == 0);
        // index groups that do not fuse into one GEMM dimension: copy the
        // operands (and the output) into C-order scratch in one order of
        // each group, as numpy's tensordot does, so that the product is
        // one library call per batch index instead of a loop of small ones
        let unfused = |d: &Dims, ops: &[usize]| fuse(*d, ops).len > 1;
        let mut scratch = None;
        if !k_empty && (unfused(&dm, &[0, 1]) || unfused(&dn, &[0, 2]) || unfused(&dk, &[1, 2])) {
            if f32 || acc {
                // (the scratch copies are f64: the native code runs it)
                return false;
            }
            scratch = Packed::new(self, &vsize[..nv], &mut st);
        }
        let (dm, dn, dk, db) = if scratch.is_some() {
            (
                dims(Role::M, &st),
                dims(Role::N, &st),
                dims(Role::K, &st),
                dims(Role::Batch, &st),
            )
        } else {
            (dm, dn, dk, db)
        };
        let Some(mut product) = Product::of(dm, dn, dk, db, k_empty, alpha, acc) else {
            return false;
        };
        // a written division's `α` scales each finished sum once: a sum
        // over several calls (K axes that do not fuse, without scratch)
        // is left to the native code
        product.exact = self.exact_alpha;
        if product.exact && product.loops[..product.nl].iter().any(|(_, is_k)| *is_k) {
            return false;
        }
        let (dst0, lhs0, rhs0) = match &mut scratch {
            Some(p) => p.pointers(bufs[self.out.buf], bufs[self.lhs.buf], bufs[self.rhs.buf]),
            None => (
                bufs[self.out.buf],
                bufs[self.lhs.buf] as *const f64,
                bufs[self.rhs.buf] as *const f64,
            ),
        };
        // SAFETY: as this function's (the scratch copies, when made, are
        // addressed by their own C-order strides).
        unsafe { product.calls((dst0, lhs0, rhs0), threads, cancel, Elem::real(f32)) };
        if let Some(p) = scratch {
            if !cancel.load(Ordering::Relaxed) {
                // SAFETY: as `Packed::finish`: the output pointer and its
                // strides address the live output buffer
                unsafe { p.finish(bufs[self.out.buf]) };
            }
        }
        true
    }

    /// The call's sizes and strides per variable (in out, lhs, rhs: the
    /// sum over the axes it indexes, after checking each axis has the
    /// variable's range) and `α`; `None` when the stage declines.
    fn bind(&self, bufs: &[*mut f64], strides: &[i64], sizes: &[i64], f32: bool) -> Option<Bound> {
        let resolve = |s: &SizeRef| -> Option<usize> {
            let v = match s {
                SizeRef::Lit(n) => *n,
                SizeRef::Named(k) => *sizes.get(*k)?,
            };
            usize::try_from(v).ok()
        };
        // fixed arrays throughout: a warmed-up call allocates nothing
        let nv = self.vars.len();
        if nv > MAX_VARS {
            return None;
        }
        let mut vsize = [0usize; MAX_VARS];
        for (v, (_, n)) in self.vars.iter().enumerate() {
            vsize[v] = resolve(n)?;
        }
        let mut st = [[0isize; 3]; MAX_VARS];
        for (o, op) in [&self.out, &self.lhs, &self.rhs].into_iter().enumerate() {
            for (a, (&v, d)) in op.axes.iter().zip(&op.dims).enumerate() {
                let &s = strides.get(op.stride_at + a)?;
                if resolve(d) != Some(vsize[v]) {
                    return None;
                }
                st[v][o] += s as isize;
            }
        }
        let mut alpha = if f32 {
            self.alpha as f32 as f64
        } else {
            self.alpha
        };
        for &b in &self.alpha_loads {
            let &ptr = bufs.get(b)?;
            // SAFETY: a scalar load's buffer is a live number (see `run`),
            // of the kernel's element type.
            alpha *= unsafe {
                if f32 {
                    f64::from(*(ptr as *const f32))
                } else {
                    *ptr
                }
            };
        }
        if alpha == 0.0 {
            return None;
        }
        Some(Bound {
            nv,
            vsize,
            st,
            alpha,
        })
    }

    /// The dimensions of role `r`, in variable order.
    fn dims(
        &self,
        nv: usize,
        vsize: &[usize; MAX_VARS],
        r: Role,
        st: &[[isize; 3]; MAX_VARS],
    ) -> Dims {
        let mut out = Dims::default();
        for v in 0..nv {
            if self.vars[v].0 == r {
                out.push(Dim {
                    size: vsize[v],
                    st: st[v],
                });
            }
        }
        out
    }
}

/// What [`GemmPlan::run_stage`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ran {
    /// Declined: the nest's native code runs it.
    No,
    /// Ran the nest.
    Yes,
    /// Ran the nest and the next one: both parts of a complex product.
    Both,
}

/// Whether operand `b` is stored interleaved after `a`, as the imaginary
/// parts of a numpy complex array after its real parts: one element
/// after it, with the same strides, every one even (on the axes of more
/// than one element: the others are only read at 0).
fn interleaved(
    bufs: &[*mut f64],
    strides: &[i64],
    sizes: &[i64],
    a: &Operand,
    b: &Operand,
    f32: bool,
) -> bool {
    let (Some(&pa), Some(&pb)) = (bufs.get(a.buf), bufs.get(b.buf)) else {
        return false;
    };
    let step = if f32 { 4 } else { 8 };
    let long = |d: &SizeRef| match d {
        SizeRef::Lit(n) => *n > 1,
        SizeRef::Named(k) => sizes.get(*k).is_none_or(|&n| n > 1),
    };
    a.axes.len() == b.axes.len()
        && (pb as usize).wrapping_sub(pa as usize) == step
        && (0..a.axes.len()).all(|k| {
            !long(&a.dims[k])
                || matches!(
                    (strides.get(a.stride_at + k), strides.get(b.stride_at + k)),
                    (Some(&s), Some(&t)) if s == t && s % 2 == 0
                )
        })
}

impl ComplexPair {
    /// Both parts of the complex product on the library's complex kernel
    /// (`Complex<f64>`, or `Complex<f32>` when `f32`), when both operands
    /// are interleaved ([`interleaved`]): into the outputs directly when
    /// they are interleaved too, else into C-order scratch, then split
    /// into the two outputs. `false`, having touched nothing, when the
    /// layout does not allow it (or the scratch cannot be allocated).
    ///
    /// # Safety
    /// As [`GemmPlan::run`], for both parts' buffers.
    unsafe fn run(
        &self,
        bufs: &[*mut f64],
        strides: &[i64],
        sizes: &[i64],
        threads: Threads,
        cancel: &AtomicBool,
        f32: bool,
    ) -> bool {
        let b = &self.base;
        if !interleaved(bufs, strides, sizes, &b.lhs, &self.lhs1, f32)
            || !interleaved(bufs, strides, sizes, &b.rhs, &self.rhs1, f32)
        {
            return false;
        }
        let Some(Bound {
            nv,
            vsize,
            mut st,
            alpha,
        }) = b.bind(bufs, strides, sizes, f32)
        else {
            return false;
        };
        let direct = interleaved(bufs, strides, sizes, &b.out, &self.im, f32);
        // strides in complex elements; the scratch's in C order
        for s in st.iter_mut().take(nv) {
            s[1] /= 2;
            s[2] /= 2;
            s[0] = if direct { s[0] / 2 } else { 0 };
        }
        let mut len = 1usize;
        if !direct {
            for &v in b.out.axes.iter().rev() {
                st[v][0] = len as isize;
                len = len.saturating_mul(vsize[v]);
            }
        }
        let dims = |r: Role| b.dims(nv, &vsize, r, &st);
        let (dm, dn, dk, db) = (
            dims(Role::M),
            dims(Role::N),
            dims(Role::K),
            dims(Role::Batch),
        );
        let empty = |d: &Dims| d.as_slice().iter().any(|d| d.size == 0);
        if empty(&dm) || empty(&dn) || empty(&db) {
            return true;
        }
        let k_empty = empty(&dk);
        let unfused = |d: &Dims, ops: &[usize]| fuse(*d, ops).len > 1;
        if !k_empty && (unfused(&dm, &[0, 1]) || unfused(&dn, &[0, 2]) || unfused(&dk, &[1, 2])) {
            return false;
        }
        let Some(product) = Product::of(dm, dn, dk, db, k_empty, alpha, false) else {
            return false;
        };
        // (f64 units: two per complex element, one per Complex<f32>)
        let mut scratch: Vec<f64> = Vec::new();
        if !direct {
            let n = if f32 { len } else { len.saturating_mul(2) };
            if scratch.try_reserve_exact(n).is_err() {
                return false;
            }
            scratch.resize(n, 0.0);
        }
        let dst = if direct {
            bufs[b.out.buf]
        } else {
            scratch.as_mut_ptr()
        };
        let elem = if f32 { Elem::C32 } else { Elem::C64 };
        COMPLEX_STAGES.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as this function's: the complex views of the interleaved
        // operands cover each element's two parts, both inside their
        // buffers; the scratch holds `len` complex elements in C order
        unsafe {
            product.calls(
                (
                    dst,
                    bufs[b.lhs.buf] as *const f64,
                    bufs[b.rhs.buf] as *const f64,
                ),
                threads,
                cancel,
                elem,
            )
        };
        if !direct && !cancel.load(Ordering::Relaxed) {
            // SAFETY: the outputs' strides address their buffers for every
            // index of their variables' ranges
            unsafe { self.split(&scratch, bufs, strides, &vsize, f32) };
        }
        true
    }

    /// Copy the C-order complex `scratch` into the two outputs.
    ///
    /// # Safety
    /// The outputs' pointers and strides address live buffers for every
    /// index below `vsize` of their variables.
    unsafe fn split(
        &self,
        scratch: &[f64],
        bufs: &[*mut f64],
        strides: &[i64],
        vsize: &[usize; MAX_VARS],
        f32: bool,
    ) {
        let out = &self.base.out;
        let g = out.axes.len();
        let mut size = [0usize; MAX_VARS];
        let mut st = [[0isize; 2]; MAX_VARS];
        for a in 0..g {
            size[a] = vsize[out.axes[a]];
            st[a] = [
                strides[out.stride_at + a] as isize,
                strides[self.im.stride_at + a] as isize,
            ];
        }
        let (re, im) = (bufs[out.buf], bufs[self.im.buf]);
        let total: usize = size[..g].iter().product();
        let mut idx = [0usize; MAX_VARS];
        let mut off = [0isize; 2];
        for e in 0..total {
            // SAFETY: `e` is below the scratch's length in complex
            // elements; the offsets are within the outputs (see above)
            unsafe {
                if f32 {
                    let sc = scratch.as_ptr() as *const f32;
                    *(re as *mut f32).offset(off[0]) = *sc.add(2 * e);
                    *(im as *mut f32).offset(off[1]) = *sc.add(2 * e + 1);
                } else {
                    *re.offset(off[0]) = scratch[2 * e];
                    *im.offset(off[1]) = scratch[2 * e + 1];
                }
            }
            // next index, last axis fastest
            let mut a = g;
            while a > 0 {
                a -= 1;
                idx[a] += 1;
                off[0] += st[a][0];
                off[1] += st[a][1];
                if idx[a] < size[a] {
                    break;
                }
                off[0] -= st[a][0] * size[a] as isize;
                off[1] -= st[a][1] * size[a] as isize;
                idx[a] = 0;
            }
        }
    }
}

/// A call's sizes and strides per variable, and `α` ([`GemmPlan::bind`]).
struct Bound {
    nv: usize,
    vsize: [usize; MAX_VARS],
    st: [[isize; 3]; MAX_VARS],
    alpha: f64,
}

/// The product after fusion: one library call of `m×k` by `k×n` per
/// index of the remaining `loops` (batch axes, unfused M and N axes,
/// then unfused K axes, accumulated into the destination).
struct Product {
    m: Dim,
    n: Dim,
    k: Dim,
    dst_rs: isize,
    dst_cs: isize,
    loops: [(Dim, bool); MAX_VARS],
    nl: usize,
    alpha: f64,
    /// `α` must scale each finished sum once ([`GemmPlan::exact_alpha`]).
    exact: bool,
    /// Add to the destination (every call accumulates).
    acc: bool,
}

impl Product {
    /// The product of the role's dimensions `dm`, `dn`, `dk`, `db`;
    /// `None` when it degenerates to dot products (`m = n = 1`).
    fn of(
        dm: Dims,
        dn: Dims,
        dk: Dims,
        db: Dims,
        k_empty: bool,
        alpha: f64,
        acc: bool,
    ) -> Option<Product> {
        let mut fm = fuse(dm, &[0, 1]);
        let mut fn_ = fuse(dn, &[0, 2]);
        let mut fk = if k_empty {
            let mut z = Dims::default();
            z.push(Dim {
                size: 0,
                st: [0, 1, 1],
            });
            z
        } else {
            fuse(dk, &[1, 2])
        };
        let (m, n, k) = (fm.take_first(), fn_.take_first(), fk.take_first());
        if m.size == 1 && n.size == 1 {
            return None;
        }
        // the strides of an absent (size-1) dimension of the destination
        // are chosen so the library keeps the orientation of the present one
        let mut dst_rs = m.st[0];
        let mut dst_cs = n.st[0];
        if m.size == 1 {
            dst_rs = dst_cs.abs().max(1);
        }
        if n.size == 1 {
            dst_cs = dst_rs.abs().max(1);
        }
        // the loops: batch axes, unfused M and N axes, then unfused K axes
        // (accumulated into the destination)
        let mut loops = [(Dim::default(), false); MAX_VARS];
        let mut nl = 0;
        let batch = db.as_slice().iter().filter(|d| d.size != 1);
        let mn = fm.as_slice().iter().chain(fn_.as_slice());
        for (d, is_k) in batch
            .map(|d| (d, false))
            .chain(mn.map(|d| (d, false)))
            .chain(fk.as_slice().iter().map(|d| (d, true)))
        {
            loops[nl] = (*d, is_k);
            nl += 1;
        }
        Some(Product {
            m,
            n,
            k,
            dst_rs,
            dst_cs,
            loops,
            nl,
            alpha,
            exact: false,
            acc,
        })
    }

    /// Every library call, from the operands' first elements `ptrs`
    /// (destination, lhs, rhs), checking `cancel` before each.
    ///
    /// # Safety
    /// As [`GemmPlan::run`]: every index stays within its variable's
    /// range, which is the range of every axis it indexes.
    unsafe fn calls(
        &self,
        (dst0, lhs0, rhs0): (*mut f64, *const f64, *const f64),
        threads: Threads,
        cancel: &AtomicBool,
        elem: Elem,
    ) {
        let (m, n, k) = (self.m, self.n, self.k);
        let loops = &self.loops[..self.nl];
        if matches!(elem, Elem::F64 | Elem::F32) && !self.acc && self.small() {
            let f32 = elem == Elem::F32;
            // SAFETY: as this function's
            return unsafe { self.small_calls((dst0, lhs0, rhs0), threads.threads, cancel, f32) };
        }
        let mut idx = [0usize; MAX_VARS];
        'calls: loop {
            let mut off = [0isize; 3];
            let mut accumulate = self.acc;
            for ((d, is_k), &i) in loops.iter().zip(&idx) {
                for (o, s) in off.iter_mut().enumerate() {
                    *s += i as isize * d.st[o];
                }
                accumulate |= *is_k && i > 0;
            }
            if cancel.load(Ordering::Relaxed) {
                break 'calls;
            }
            // SAFETY: every index stays within its variable's range, which
            // is the range of every axis it indexes (checked above), so
            // every address the library forms is inside its buffer.
            unsafe {
                Call {
                    m: m.size,
                    n: n.size,
                    k: k.size,
                    dst: moved_mut(dst0, off[0], elem),
                    dst_cs: self.dst_cs,
                    dst_rs: self.dst_rs,
                    accumulate,
                    lhs: moved(lhs0, off[1], elem),
                    lhs_cs: k.st[1],
                    lhs_rs: m.st[1],
                    rhs: moved(rhs0, off[2], elem),
                    rhs_cs: n.st[2],
                    rhs_rs: k.st[2],
                    alpha: self.alpha,
                    exact: self.exact,
                    elem,
                }
                .run(threads, cancel);
            }
            // next index, last loop fastest
            let mut a = loops.len();
            loop {
                if a == 0 {
                    break 'calls;
                }
                a -= 1;
                idx[a] += 1;
                if idx[a] < loops[a].0.size {
                    break;
                }
                idx[a] = 0;
            }
        }
    }
}

/// An `m×n` block of a destination, with its row and column strides.
struct Block {
    m: usize,
    n: usize,
    dst: *mut f64,
    rs: isize,
    cs: isize,
    elem: Elem,
}

impl Block {
    /// Every element multiplied by `alpha`, in the element type: for an
    /// `alpha` from [`crate::precision::exact_reciprocal`], the written
    /// division of the element bit for bit. Complex blocks are never
    /// scaled here (a complex product has no written divisor).
    ///
    /// # Safety
    /// `dst` with `rs`, `cs` addresses `m×n` live elements of `elem`.
    unsafe fn scale(&self, alpha: f64) {
        SCALED_BLOCKS.fetch_add(1, Ordering::Relaxed);
        // the unit-stride direction innermost
        let (outer, inner, os, is) = if self.rs.abs() < self.cs.abs() {
            (self.n, self.m, self.cs, self.rs)
        } else {
            (self.m, self.n, self.rs, self.cs)
        };
        for a in 0..outer {
            for b in 0..inner {
                let p = moved_mut(self.dst, a as isize * os + b as isize * is, self.elem);
                // SAFETY: as this function's
                unsafe {
                    match self.elem {
                        Elem::F64 => *p *= alpha,
                        Elem::F32 => *(p as *mut f32) *= alpha as f32,
                        Elem::C64 | Elem::C32 => {}
                    }
                }
            }
        }
    }
}

/// Products per chunk of the small-product kernels (one dispatch, one
/// check of the cancellation flag, one task of the thread pool).
const SMALL_CHUNK: usize = 64;

/// From this many multiply-adds in all, the small products of a stage are
/// split across the thread pool.
const SMALL_PARALLEL_WORK: usize = 1 << 17;

/// The offsets a [`Product`]'s calls share between threads.
struct SmallShared<'a> {
    p: &'a Product,
    ptrs: (*mut f64, *const f64, *const f64),
    total: usize,
    /// The buffers hold `f32` elements (`Precision::F32`).
    f32: bool,
}

// SAFETY: the products write disjoint parts of the destination (each
// output element belongs to one product) and only read the operands; the
// caller keeps every buffer alive until `pool::run` returns.
unsafe impl Sync for SmallShared<'_> {}

impl SmallShared<'_> {
    /// The products `at..at + SMALL_CHUNK` (in the odometer order of the
    /// loops, last fastest), run.
    ///
    /// # Safety
    /// As [`Product::calls`].
    unsafe fn chunk(&self, at: usize) {
        let (dst0, lhs0, rhs0) = self.ptrs;
        // SAFETY: as this function's
        unsafe {
            if self.f32 {
                self.chunk_as::<f32>(at, (dst0.cast(), lhs0.cast(), rhs0.cast()))
            } else {
                self.chunk_as::<f64>(at, (dst0, lhs0, rhs0))
            }
        }
    }

    /// [`SmallShared::chunk`] on elements of type `T`.
    ///
    /// # Safety
    /// As [`Product::calls`]; the buffers hold `T` elements.
    unsafe fn chunk_as<T: small::Real>(
        &self,
        at: usize,
        (dst0, lhs0, rhs0): (*mut T, *const T, *const T),
    ) {
        let p = self.p;
        let loops = &p.loops[..p.nl];
        let mut batch = [small::Small {
            m: p.m.size,
            n: p.n.size,
            k: p.k.size,
            a: lhs0,
            a_rs: p.m.st[1],
            a_cs: p.k.st[1],
            b: rhs0,
            b_rs: p.k.st[2],
            b_cs: p.n.st[2],
            c: dst0,
            c_rs: p.dst_rs,
            c_cs: p.dst_cs,
            alpha: T::from_f64(p.alpha),
        }; SMALL_CHUNK];
        let len = SMALL_CHUNK.min(self.total - at);
        for (q, s) in batch[..len].iter_mut().enumerate() {
            // the index of product `at + q`, last loop fastest
            let mut rest = at + q;
            let mut off = [0isize; 3];
            for (d, _) in loops.iter().rev() {
                let i = rest % d.size;
                rest /= d.size;
                for (o, x) in off.iter_mut().enumerate() {
                    *x += i as isize * d.st[o];
                }
            }
            s.c = dst0.wrapping_offset(off[0]);
            s.a = lhs0.wrapping_offset(off[1]);
            s.b = rhs0.wrapping_offset(off[2]);
        }
        // SAFETY: every index stays within its variable's range (as
        // `Product::calls`)
        unsafe { small::run(&mut batch[..len]) };
    }
}

impl Product {
    /// Whether the calls are small products for [`small`]: f64 or f32
    /// (checked by the caller), at least two products (a single one stays the
    /// library's), at most [`SMALL_MNK`] multiply-adds each, at least one
    /// term, no K axis left to accumulate over.
    fn small(&self) -> bool {
        let (m, n, k) = (self.m.size, self.n.size, self.k.size);
        let loops = &self.loops[..self.nl];
        k >= 1
            && m.saturating_mul(n).saturating_mul(k) <= SMALL_MNK
            && loops.iter().all(|(_, is_k)| !is_k)
            && loops.iter().map(|(d, _)| d.size).product::<usize>() >= 2
    }

    /// [`Product::calls`] by the small-product kernels, in chunks of
    /// [`SMALL_CHUNK`] products (on up to `threads` threads when the
    /// work is large), checking `cancel` before each chunk.
    ///
    /// # Safety
    /// As [`Product::calls`].
    unsafe fn small_calls(
        &self,
        ptrs: (*mut f64, *const f64, *const f64),
        threads: usize,
        cancel: &AtomicBool,
        f32: bool,
    ) {
        let total: usize = self.loops[..self.nl].iter().map(|(d, _)| d.size).product();
        let work = total.saturating_mul(self.m.size * self.n.size * self.k.size);
        let shared = SmallShared {
            p: self,
            ptrs,
            total,
            f32,
        };
        let chunks = total.div_ceil(SMALL_CHUNK);
        let threads = if work >= SMALL_PARALLEL_WORK {
            threads
        } else {
            1
        };
        super::pool::run(threads.max(1), chunks, |c| {
            if cancel.load(Ordering::Relaxed) {
                return;
            }
            // SAFETY: as this function's; chunks are disjoint products
            unsafe { shared.chunk(c * SMALL_CHUNK) }
        });
    }
}

/// A GEMM stage's operands copied into C-order scratch (see [`GemmPlan::run`]):
/// per operand (0 out, 1 lhs, 2 rhs) whether it was copied, its variables
/// in the copy's order, their sizes and the original strides, and the
/// scratch vector (taken from the thread's [`SCRATCH`] and given back
/// when dropped).
struct Packed {
    copied: [bool; 3],
    order: [[usize; MAX_VARS]; 3],
    len: [usize; 3],
    size: [usize; MAX_VARS],
    orig: [[isize; 3]; MAX_VARS],
    /// Where each copy starts in `buf`.
    at: [usize; 3],
    buf: Vec<f64>,
}

thread_local! {
    /// Scratch for [`Packed`], reused by the thread's next GEMM stage (so a
    /// warmed-up call allocates nothing here); freed after a stage that
    /// needed more than [`SCRATCH_KEEP`] elements.
    static SCRATCH: std::cell::Cell<Vec<f64>> = const { std::cell::Cell::new(Vec::new()) };
}

/// The most scratch elements (32 MiB) a thread keeps between GEMM stages.
const SCRATCH_KEEP: usize = 1 << 22;

impl Drop for Packed {
    fn drop(&mut self) {
        let mut buf = std::mem::take(&mut self.buf);
        if buf.capacity() > SCRATCH_KEEP {
            buf = Vec::new();
        }
        SCRATCH.with(|s| s.set(buf));
    }
}

/// Whether the variables `vs` (outermost first) are nested in operand
/// `o`'s strides, so that they fuse into one dimension there.
fn nested(vs: &[usize], size: &[usize], st: &[[isize; 3]; MAX_VARS], o: usize) -> bool {
    let mut prev: Option<usize> = None;
    for &v in vs.iter().rev() {
        if size[v] == 1 {
            continue;
        }
        if let Some(p) = prev {
            if (size[p] as isize).checked_mul(st[p][o]) != Some(st[v][o]) {
                return false;
            }
        }
        prev = Some(v);
    }
    true
}

impl Packed {
    /// Choose the order of each group, copy the operands that do not
    /// fit it into scratch and rewrite their strides in `st` (the
    /// output's too when it is to be copied back); `None` (nothing
    /// changed) when the scratch cannot be allocated.
    fn new(plan: &GemmPlan, size: &[usize], st: &mut [[isize; 3]; MAX_VARS]) -> Option<Packed> {
        let nv = size.len();
        let of = |r: Role| -> Vec<usize> { (0..nv).filter(|&v| plan.vars[v].0 == r).collect() };
        let by_stride = |mut vs: Vec<usize>, o: usize| {
            vs.sort_by_key(|&v| std::cmp::Reverse(st[v][o].unsigned_abs()));
            vs
        };
        let (b, mut m, mut n) = (
            of(Role::Batch),
            by_stride(of(Role::M), 0),
            by_stride(of(Role::N), 0),
        );
        let out_ok = nested(&m, size, st, 0) && nested(&n, size, st, 0);
        if !out_ok {
            m.sort_unstable();
            n.sort_unstable();
        }
        let k_lhs = by_stride(of(Role::K), 1);
        let k = if nested(&k_lhs, size, st, 1) {
            k_lhs
        } else {
            by_stride(of(Role::K), 2)
        };
        let lhs_ok = nested(&m, size, st, 1) && nested(&k, size, st, 1);
        let rhs_ok = nested(&k, size, st, 2) && nested(&n, size, st, 2);
        let groups: [[&[usize]; 2]; 3] = [[&m, &n], [&m, &k], [&k, &n]];
        let copied = [!out_ok, !lhs_ok, !rhs_ok];
        let mut order = [[0usize; MAX_VARS]; 3];
        let mut len = [0usize; 3];
        let mut at = [0usize; 3];
        let mut total = 0usize;
        for o in 0..3 {
            let all = b.iter().chain(groups[o][0]).chain(groups[o][1]);
            for &v in all {
                order[o][len[o]] = v;
                len[o] += 1;
            }
            if copied[o] {
                at[o] = total;
                let elems: usize = order[o][..len[o]].iter().map(|&v| size[v]).product();
                total = total.checked_add(elems)?;
            }
        }
        let mut buf = SCRATCH.with(|s| s.take());
        if buf.len() < total {
            let extra = total - buf.len();
            if buf.try_reserve_exact(extra).is_err() {
                SCRATCH.with(|s| s.set(buf));
                return None;
            }
            buf.resize(total, 0.0);
        }
        let orig = *st;
        let mut sizes = [0usize; MAX_VARS];
        sizes[..nv].copy_from_slice(size);
        let p = Packed {
            copied,
            order,
            len,
            size: sizes,
            orig,
            at,
            buf,
        };
        for o in 0..3 {
            if copied[o] {
                // C order over the copy's variables
                let mut acc = 1isize;
                for &v in p.order[o][..p.len[o]].iter().rev() {
                    st[v][o] = acc;
                    acc *= size[v] as isize;
                }
            }
        }
        PACKED_STAGES.fetch_add(1, Ordering::Relaxed);
        Some(p)
    }

    /// The output, lhs and rhs pointers of the library calls, after
    /// copying lhs and rhs where they were to be copied.
    fn pointers(
        &mut self,
        out: *mut f64,
        lhs: *mut f64,
        rhs: *mut f64,
    ) -> (*mut f64, *const f64, *const f64) {
        let mut buf = std::mem::take(&mut self.buf);
        let base = buf.as_mut_ptr();
        let mut ptr = [out, lhs, rhs];
        for o in 1..3 {
            if self.copied[o] {
                // SAFETY: the operand's strides and its variables' sizes
                // (checked against the buffer's shape by `GemmPlan::run`)
                // address the live operand
                unsafe { self.copy(o, ptr[o], &mut buf[self.at[o]..], false) };
            }
        }
        self.buf = buf;
        for (o, p) in ptr.iter_mut().enumerate() {
            if self.copied[o] {
                *p = base.wrapping_add(self.at[o]);
            }
        }
        (ptr[0], ptr[1], ptr[2])
    }

    /// Copy the output's scratch (if it was copied) to the output.
    ///
    /// # Safety
    /// `out` and the output's original strides address the live output.
    unsafe fn finish(mut self, out: *mut f64) {
        if self.copied[0] {
            let at = self.at[0];
            let mut buf = std::mem::take(&mut self.buf);
            unsafe { self.copy(0, out, &mut buf[at..], true) };
            self.buf = buf;
        }
    }

    /// Between operand `o` as the original strides address it from `ptr`
    /// and its C-order copy at the start of `c`: gather into `c`, or
    /// (`back`) scatter from `c`.
    ///
    /// # Safety
    /// `ptr` and the original strides address every element of the
    /// operand for the variables' sizes.
    unsafe fn copy(&self, o: usize, ptr: *mut f64, c: &mut [f64], back: bool) {
        let vs = &self.order[o][..self.len[o]];
        let n: usize = vs.iter().map(|&v| self.size[v]).product();
        if n == 0 {
            return;
        }
        let Some((&last, outer)) = vs.split_last() else {
            // a scalar
            if back {
                unsafe { *ptr = c[0] };
            } else {
                c[0] = unsafe { *ptr };
            }
            return;
        };
        let (inner, inner_st) = (self.size[last], self.orig[last][o]);
        let mut idx = [0usize; MAX_VARS];
        let mut at = 0usize;
        loop {
            let mut off = 0isize;
            for (&v, &i) in outer.iter().zip(&idx) {
                off += i as isize * self.orig[v][o];
            }
            let row = &mut c[at..at + inner];
            for (j, x) in row.iter_mut().enumerate() {
                let q = ptr.wrapping_offset(off + j as isize * inner_st);
                // SAFETY: every index is below its variable's size
                unsafe {
                    if back {
                        *q = *x;
                    } else {
                        *x = *q;
                    }
                }
            }
            at += inner;
            let mut a = outer.len();
            loop {
                if a == 0 {
                    return;
                }
                a -= 1;
                idx[a] += 1;
                if idx[a] < self.size[outer[a]] {
                    break;
                }
                idx[a] = 0;
            }
        }
    }
}

/// A library call of more multiply-adds than this is cut into panels of
/// about this much, with a check of the cancellation flag before each
/// (about 0.1–0.5 s on one core): a long product stops soon after a
/// cancel. Panels write disjoint parts of the output, each element summed
/// by one call as before.
pub const CANCEL_WORK: usize = 1 << 30;

/// The fewest rows of a symmetric product computed as blocks of its
/// upper triangle ([`Call::run_sym`]).
const SYM_MIN: usize = 48;

/// The narrowest panel (and the multiple panels are rounded to: a
/// multiple of the library's register tiles and of a cache line of f64).
const PANEL_ALIGN: usize = 16;

static LIBRARY_CALLS: AtomicU64 = AtomicU64::new(0);

static PACKED_STAGES: AtomicU64 = AtomicU64::new(0);

static COMPLEX_STAGES: AtomicU64 = AtomicU64::new(0);

static SCALED_BLOCKS: AtomicU64 = AtomicU64::new(0);

/// The most depth `k` of a call whose `alpha` the library applies to each
/// finished sum once ([`Call::library_scales_once`]).
const LIBRARY_SCALED_MAX_K: usize = 512;

/// How many output blocks GEMM stages so far, process-wide, scaled
/// after the library's product instead of passing a written division's
/// `α` to the library ([`Call::library_scales_once`]; tests).
#[doc(hidden)]
pub fn scaled_blocks() -> u64 {
    SCALED_BLOCKS.load(Ordering::Relaxed)
}

/// How many complex products so far, process-wide, ran both parts on the
/// library's complex kernel ([`ComplexPair`]; tests).
#[doc(hidden)]
pub fn complex_stages() -> u64 {
    COMPLEX_STAGES.load(Ordering::Relaxed)
}

/// How many GEMM stage runs so far, process-wide, copied operands into
/// scratch because their index groups did not fuse (tests).
#[doc(hidden)]
pub fn packed_stages() -> u64 {
    PACKED_STAGES.load(Ordering::Relaxed)
}

/// How many calls of the library GEMM stages have made so far, process-wide
/// (a panel is one call): the library allocates per call, see
/// `tests/alloc.rs`, which counts allocations against this.
#[doc(hidden)]
pub fn library_calls() -> u64 {
    LIBRARY_CALLS.load(Ordering::Relaxed)
}

/// One library call: `dst (+)= alpha * lhs · rhs` (`accumulate` reads
/// the destination), `m×k` by `k×n`, each operand with its column and row
/// strides.
#[derive(Clone, Copy)]
struct Call {
    m: usize,
    n: usize,
    k: usize,
    dst: *mut f64,
    dst_cs: isize,
    dst_rs: isize,
    accumulate: bool,
    lhs: *const f64,
    lhs_cs: isize,
    lhs_rs: isize,
    rhs: *const f64,
    rhs_cs: isize,
    rhs_rs: isize,
    alpha: f64,
    /// `alpha` must scale the finished sum once ([`GemmPlan::exact_alpha`]).
    exact: bool,
    /// The buffers' element type: the library's kernel for it.
    elem: Elem,
}

/// The element type of a library call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Elem {
    F64,
    F32,
    /// `Complex<f64>`: a complex product's interleaved parts.
    C64,
    /// `Complex<f32>`.
    C32,
}

impl Elem {
    /// The real element type of a kernel (`f32`: `Precision::F32`).
    fn real(f32: bool) -> Elem {
        if f32 {
            Elem::F32
        } else {
            Elem::F64
        }
    }

    /// The size of an element in bytes.
    fn bytes(self) -> isize {
        match self {
            Elem::F32 => 4,
            Elem::F64 | Elem::C32 => 8,
            Elem::C64 => 16,
        }
    }
}

/// `p` moved by `k` elements of type `elem`.
fn moved(p: *const f64, k: isize, elem: Elem) -> *const f64 {
    (p as *const u8).wrapping_offset(k.wrapping_mul(elem.bytes())) as *const f64
}

/// [`moved`] for the destination.
fn moved_mut(p: *mut f64, k: isize, elem: Elem) -> *mut f64 {
    moved(p, k, elem) as *mut f64
}

/// A [`Call`] shared by the pool's threads, each taking its own panel.
struct Shared(Call);

// SAFETY: the panels write disjoint parts of the destination and only read
// the operands; the caller keeps every buffer alive until `pool::run`
// returns.
unsafe impl Sync for Shared {}

impl Shared {
    /// The panel `i` (a method, so that a closure captures the whole
    /// `Shared`, not its field).
    fn panel(&self, along_n: bool, width: usize, i: usize) -> Call {
        self.0.panel(along_n, width, i)
    }
}

impl Call {
    /// # Safety
    /// As [`GemmPlan::run`]: the pointers and strides address live buffers for
    /// every index below `m`, `n`, `k`.
    unsafe fn single(&self, par: gemm::Parallelism) {
        if self.exact && !self.library_scales_once() {
            let plain = Call {
                alpha: 1.0,
                exact: false,
                ..*self
            };
            let block = Block {
                m: self.m,
                n: self.n,
                dst: self.dst,
                rs: self.dst_rs,
                cs: self.dst_cs,
                elem: self.elem,
            };
            // SAFETY: as this function's; the block is the call's output
            unsafe {
                plain.single(par);
                block.scale(self.alpha);
            }
            return;
        }
        LIBRARY_CALLS.fetch_add(1, Ordering::Relaxed);
        type C64 = num_complex::Complex64;
        type C32 = num_complex::Complex32;
        // SAFETY: as above; the buffers hold elements of `self.elem`
        unsafe {
            match self.elem {
                Elem::C64 => self.library_as(C64::new(1.0, 0.0), C64::new(self.alpha, 0.0), par),
                Elem::C32 => {
                    self.library_as(C32::new(1.0, 0.0), C32::new(self.alpha as f32, 0.0), par)
                }
                Elem::F32 => self.library_as(1.0f32, self.alpha as f32, par),
                Elem::F64 => self.library_as(1.0f64, self.alpha, par),
            }
        }
    }

    /// The library's product with the buffers read as elements of `T`:
    /// `dst = one·dst + alpha·lhs·rhs` (`dst` read only when accumulating).
    ///
    /// # Safety
    /// As [`Call::single`], with `T` the buffers' element type.
    unsafe fn library_as<T: 'static>(&self, one: T, alpha: T, par: gemm::Parallelism) {
        unsafe {
            gemm::gemm(
                self.m,
                self.n,
                self.k,
                self.dst as *mut T,
                self.dst_cs,
                self.dst_rs,
                self.accumulate,
                self.lhs as *const T,
                self.lhs_cs,
                self.lhs_rs,
                self.rhs as *const T,
                self.rhs_cs,
                self.rhs_rs,
                one,
                alpha,
                false,
                false,
                false,
                par,
            )
        }
    }

    /// Whether the library multiplies each output element's finished sum
    /// by `alpha` once (what [`Call::exact`] needs), read from gemm
    /// 0.19.0's source: its blocked kernels sum depth blocks of at least
    /// `min(k, 512)` (1024 in the kernel for small outputs) and scale each
    /// block's sum as they store it, so a product with `k <= 512` is
    /// scaled once; its matrix-vector (`m` or `n` 1) and `k <= 2` paths
    /// scale an operand instead, which differs where that operand's
    /// scaled elements underflow. Otherwise the call runs with `alpha = 1`
    /// and its block is scaled after it ([`Block::scale`]); tests/suite/gemm.rs
    /// checks both against the unscaled product, bit for bit.
    fn library_scales_once(&self) -> bool {
        self.alpha == 1.0
            || (!self.accumulate
                && self.m >= 2
                && self.n >= 2
                && (3..=LIBRARY_SCALED_MAX_K).contains(&self.k))
    }

    /// The panel `i` of `width` columns (`along_n`) or rows.
    fn panel(&self, along_n: bool, width: usize, i: usize) -> Call {
        let at = i * width;
        let mut c = *self;
        if along_n {
            c.n = width.min(self.n - at);
            c.dst = moved_mut(self.dst, at as isize * self.dst_cs, self.elem);
            c.rhs = moved(self.rhs, at as isize * self.rhs_cs, self.elem);
        } else {
            c.m = width.min(self.m - at);
            c.dst = moved_mut(self.dst, at as isize * self.dst_rs, self.elem);
            c.lhs = moved(self.lhs, at as isize * self.lhs_rs, self.elem);
        }
        c
    }

    /// Whether the call is a symmetric product `A·Aᵀ` of at least
    /// [`SYM_MIN`] rows ([`Call::run_sym`]): f64, the same operand on both
    /// sides with the M strides equal to the N strides, nothing to
    /// accumulate.
    fn symmetric(&self) -> bool {
        self.elem == Elem::F64
            && !self.accumulate
            && self.m == self.n
            && self.m >= SYM_MIN
            && self.k >= 1
            && std::ptr::eq(self.lhs, self.rhs)
            && self.lhs_rs == self.rhs_cs
            && self.lhs_cs == self.rhs_rs
    }

    /// A symmetric product ([`Call::symmetric`]): the output in 2×2 (4×4
    /// from 128 rows) blocks, the diagonal blocks and those above computed
    /// by the library, those below copied from their mirror images above:
    /// `c[j,i] = Σₜ a[j,t]·a[i,t]` is `c[i,j]`'s sum with each product's
    /// factors swapped, which is exact, so the copy is a valid order of
    /// the element's own sum (what BLAS `syrk` does). 3/4 (5/8) of the
    /// work.
    ///
    /// # Safety
    /// As [`Call::single`].
    unsafe fn run_sym(self, threads: Threads, cancel: &AtomicBool) {
        let m = self.m;
        let nb = if m < 128 { 2 } else { 4 };
        let bs = m.div_ceil(nb).next_multiple_of(8);
        let nb = m.div_ceil(bs);
        for bi in 0..nb {
            for bj in bi..nb {
                if cancel.load(Ordering::Relaxed) {
                    return;
                }
                let (i0, j0) = (bi * bs, bj * bs);
                let mut c = self;
                c.m = bs.min(m - i0);
                c.n = bs.min(m - j0);
                c.dst = self
                    .dst
                    .wrapping_offset(i0 as isize * self.dst_rs + j0 as isize * self.dst_cs);
                c.lhs = self.lhs.wrapping_offset(i0 as isize * self.lhs_rs);
                c.rhs = self.rhs.wrapping_offset(j0 as isize * self.rhs_cs);
                // SAFETY: the block addresses a part of the call's ranges
                unsafe { c.run_plain(threads, cancel) };
            }
        }
        if cancel.load(Ordering::Relaxed) {
            return;
        }
        // the blocks below the diagonal, from their mirror images
        for bi in 0..nb {
            for bj in bi + 1..nb {
                for i in bi * bs..(bi * bs + bs).min(m) {
                    for j in bj * bs..(bj * bs + bs).min(m) {
                        let (i, j) = (i as isize, j as isize);
                        // SAFETY: i, j < m = n: both inside the output
                        unsafe {
                            *self.dst.wrapping_offset(j * self.dst_rs + i * self.dst_cs) =
                                *self.dst.wrapping_offset(i * self.dst_rs + j * self.dst_cs);
                        }
                    }
                }
            }
        }
    }

    /// Run on up to `threads` threads: [`Call::run_sym`] for a symmetric
    /// product, else [`Call::run_plain`].
    ///
    /// # Safety
    /// As [`Call::single`].
    unsafe fn run(self, threads: Threads, cancel: &AtomicBool) {
        if self.symmetric() {
            unsafe { self.run_sym(threads, cancel) }
        } else {
            unsafe { self.run_plain(threads, cancel) }
        }
    }

    /// Run on up to `threads` threads (see the module doc, "Threads"); a
    /// product of more than [`CANCEL_WORK`] multiply-adds in panels of
    /// about that much, each run only if `cancel` is not set.
    ///
    /// # Safety
    /// As [`Call::single`].
    unsafe fn run_plain(self, threads: Threads, cancel: &AtomicBool) {
        let Threads {
            threads,
            split,
            min_work,
        } = threads;
        let work = self.m.saturating_mul(self.n).saturating_mul(self.k);
        if work > CANCEL_WORK {
            // panels along the longer side of the output, at least one
            // per thread, each a one-thread library call
            let along_n = self.n > self.m;
            let len = if along_n { self.n } else { self.m };
            let want = (work / CANCEL_WORK + 1).max(threads);
            let width = len.div_ceil(want).next_multiple_of(PANEL_ALIGN);
            let panels = len.div_ceil(width);
            if panels > 1 {
                let shared = Shared(self);
                super::pool::run(threads.max(1), panels, |i| {
                    if cancel.load(Ordering::Relaxed) {
                        return;
                    }
                    let c = shared.panel(along_n, width, i);
                    // SAFETY: a panel addresses a part of the call's index
                    // ranges.
                    unsafe { c.single(gemm::Parallelism::None) }
                });
                return;
            }
        }
        if threads <= 1 || work < min_work {
            return unsafe { self.single(gemm::Parallelism::None) };
        }
        let (per_thread, along_n) = match split {
            GemmSplit::Rayon => return unsafe { self.single(gemm::Parallelism::Rayon(threads)) },
            GemmSplit::Panels { per_thread, axis } => (
                per_thread,
                match axis {
                    GemmAxis::M => false,
                    GemmAxis::N => true,
                    GemmAxis::Longer => self.n > self.m,
                },
            ),
        };
        let len = if along_n { self.n } else { self.m };
        let want = (threads * per_thread).min(len / PANEL_ALIGN).max(1);
        let width = len.div_ceil(want).next_multiple_of(PANEL_ALIGN);
        let panels = len.div_ceil(width);
        if panels <= 1 {
            return unsafe { self.single(gemm::Parallelism::None) };
        }
        let shared = Shared(self);
        super::pool::run(threads, panels, |i| {
            let c = shared.panel(along_n, width, i);
            // SAFETY: a panel addresses a part of the call's index ranges.
            unsafe { c.single(gemm::Parallelism::None) }
        });
    }
}

/// How a GEMM stage may use threads: `threads` (resolved), and from the
/// kernel's options how a product is split ([`crate::jit::Options::gemm_split`])
/// and from what work ([`crate::jit::Options::gemm_split_min_work`]).
#[derive(Clone, Copy, Debug)]
pub struct Threads {
    pub threads: usize,
    pub split: GemmSplit,
    pub min_work: usize,
}

/// Small products of a batch (the stage's [`Product::calls`] when each
/// product is at most [`SMALL_MNK`] multiply-adds): a loop of register
/// blocks compiled into this crate, per CPU level (AVX-512, AVX2 with FMA,
/// baseline SSE2; chosen at run time), instead of one library call per
/// product, whose fixed cost is many times a small product's work.
///
/// Every output element is `α · Σₜ a[i,t]·b[t,j]`, its terms accumulated
/// from `0` in the order `t = 0, 1, …` (with a fused multiply-add where
/// the CPU has one: the contract lets a sum's accumulation fuse), then
/// multiplied by `α`: a valid order of the written sum's terms and a
/// factor moved out of it (docs/fp-contract.md).
mod small {
    /// The element types of the kernels: `f64`, `f32` (`Precision::F32`:
    /// every operation rounds to `f32`, as the language says).
    pub(super) trait Real:
        Copy + std::ops::Add<Output = Self> + std::ops::Mul<Output = Self>
    {
        const ZERO: Self;
        fn mul_add(self, a: Self, b: Self) -> Self;
        fn from_f64(x: f64) -> Self;
    }

    impl Real for f64 {
        const ZERO: f64 = 0.0;
        #[inline(always)]
        fn mul_add(self, a: f64, b: f64) -> f64 {
            f64::mul_add(self, a, b)
        }
        fn from_f64(x: f64) -> f64 {
            x
        }
    }

    impl Real for f32 {
        const ZERO: f32 = 0.0;
        #[inline(always)]
        fn mul_add(self, a: f32, b: f32) -> f32 {
            f32::mul_add(self, a, b)
        }
        fn from_f64(x: f64) -> f32 {
            x as f32
        }
    }

    /// One product `c = α · a · b`, `m×k` by `k×n`, each operand with its
    /// row and column strides (elements).
    #[derive(Clone, Copy)]
    pub(super) struct Small<T> {
        pub m: usize,
        pub n: usize,
        pub k: usize,
        pub a: *const T,
        pub a_rs: isize,
        pub a_cs: isize,
        pub b: *const T,
        pub b_rs: isize,
        pub b_cs: isize,
        pub c: *mut T,
        pub c_rs: isize,
        pub c_cs: isize,
        pub alpha: T,
    }

    impl<T: Real> Small<T> {
        /// The same product transposed (`cᵀ = α · bᵀ · aᵀ`): the same
        /// elements, each the same sum in the same order.
        fn transposed(self) -> Small<T> {
            Small {
                m: self.n,
                n: self.m,
                k: self.k,
                a: self.b,
                a_rs: self.b_cs,
                a_cs: self.b_rs,
                b: self.a,
                b_rs: self.a_cs,
                b_cs: self.a_rs,
                c: self.c,
                c_rs: self.c_cs,
                c_cs: self.c_rs,
                alpha: self.alpha,
            }
        }

        /// Oriented so that the lanes run along unit-stride rows of `b`
        /// and `c` where either orientation has them; `true` then.
        fn oriented(self) -> (Small<T>, bool) {
            if self.b_cs == 1 && self.c_cs == 1 {
                (self, true)
            } else if self.a_rs == 1 && self.c_rs == 1 {
                (self.transposed(), true)
            } else {
                (self, false)
            }
        }
    }

    /// The rows × width block of `c` at `(i, j)`.
    ///
    /// # Safety
    /// `i + R <= m`, `j + W <= n`, and the pointers and strides address
    /// every element of the operands below `m`, `n`, `k`.
    #[inline(always)]
    unsafe fn block<T: Real, const R: usize, const W: usize, const UNIT: bool, const FMA: bool>(
        s: &Small<T>,
        i: usize,
        j: usize,
    ) {
        let mut acc = [[T::ZERO; W]; R];
        let b_cs = if UNIT { 1 } else { s.b_cs };
        for t in 0..s.k {
            let t = t as isize;
            // SAFETY: as this function's: every index is below its size
            let brow = s.b.wrapping_offset(t * s.b_rs + j as isize * b_cs);
            let mut y = [T::ZERO; W];
            for (l, y) in y.iter_mut().enumerate() {
                *y = unsafe { *brow.wrapping_offset(l as isize * b_cs) };
            }
            for (r, acc) in acc.iter_mut().enumerate() {
                let x = unsafe { *s.a.wrapping_offset((i + r) as isize * s.a_rs + t * s.a_cs) };
                for l in 0..W {
                    acc[l] = if FMA {
                        x.mul_add(y[l], acc[l])
                    } else {
                        acc[l] + x * y[l]
                    };
                }
            }
        }
        let c_cs = if UNIT { 1 } else { s.c_cs };
        for (r, acc) in acc.iter().enumerate() {
            let crow =
                s.c.wrapping_offset((i + r) as isize * s.c_rs + j as isize * c_cs);
            for (l, v) in acc.iter().enumerate() {
                unsafe { *crow.wrapping_offset(l as isize * c_cs) = s.alpha * *v };
            }
        }
    }

    /// The rows `i..i + R` of `c`, in blocks of 8, 4, 2 and 1 columns.
    #[inline(always)]
    unsafe fn rows<T: Real, const R: usize, const UNIT: bool, const FMA: bool>(
        s: &Small<T>,
        i: usize,
    ) {
        let mut j = 0;
        while j + 8 <= s.n {
            unsafe { block::<T, R, 8, UNIT, FMA>(s, i, j) };
            j += 8;
        }
        if j + 4 <= s.n {
            unsafe { block::<T, R, 4, UNIT, FMA>(s, i, j) };
            j += 4;
        }
        if j + 2 <= s.n {
            unsafe { block::<T, R, 2, UNIT, FMA>(s, i, j) };
            j += 2;
        }
        if j < s.n {
            unsafe { block::<T, R, 1, UNIT, FMA>(s, i, j) };
        }
    }

    /// Every product of `batch`, in rows of four.
    #[inline(always)]
    unsafe fn all<T: Real, const UNIT: bool, const FMA: bool>(batch: &[Small<T>]) {
        for s in batch {
            let mut i = 0;
            while i + 4 <= s.m {
                unsafe { rows::<T, 4, UNIT, FMA>(s, i) };
                i += 4;
            }
            while i < s.m {
                unsafe { rows::<T, 1, UNIT, FMA>(s, i) };
                i += 1;
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx2,fma")]
    unsafe fn all_avx512<T: Real, const UNIT: bool>(batch: &[Small<T>]) {
        unsafe { all::<T, UNIT, true>(batch) }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn all_avx2<T: Real, const UNIT: bool>(batch: &[Small<T>]) {
        unsafe { all::<T, UNIT, true>(batch) }
    }

    /// The CPU level, detected once: 2 AVX-512, 1 AVX2 with FMA, 0 neither.
    fn level() -> u8 {
        static LEVEL: std::sync::OnceLock<u8> = std::sync::OnceLock::new();
        *LEVEL.get_or_init(|| {
            #[cfg(target_arch = "x86_64")]
            {
                if std::arch::is_x86_feature_detected!("avx512f")
                    && std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
                {
                    return 2;
                }
                if std::arch::is_x86_feature_detected!("avx2")
                    && std::arch::is_x86_feature_detected!("fma")
                {
                    return 1;
                }
            }
            0
        })
    }

    /// Run the products of `batch` (each oriented first); all of one
    /// orientation kind per call is the caller's affair only for speed.
    ///
    /// # Safety
    /// Each product's pointers and strides address every element of its
    /// operands below `m`, `n`, `k`; outputs do not overlap the operands.
    pub(super) unsafe fn run<T: Real>(batch: &mut [Small<T>]) {
        let mut unit = true;
        for s in batch.iter_mut() {
            let (o, u) = s.oriented();
            *s = o;
            unit &= u;
        }
        let level = level();
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: the CPU has the features (`level`)
            match (level, unit) {
                (2, true) => return unsafe { all_avx512::<T, true>(batch) },
                (2, false) => return unsafe { all_avx512::<T, false>(batch) },
                (1, true) => return unsafe { all_avx2::<T, true>(batch) },
                (1, false) => return unsafe { all_avx2::<T, false>(batch) },
                _ => {}
            }
        }
        let _ = level;
        if unit {
            unsafe { all::<T, true, false>(batch) }
        } else {
            unsafe { all::<T, false, false>(batch) }
        }
    }
}
