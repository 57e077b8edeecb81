//! Typed contraction: an einsum over `ndarray` views of `f32`, `f64`,
//! `Complex32`, `Complex64`, `i64` or `u64` (wrapping), computed in that
//! type, following a plan of [`crate::plan`]. This is how the Python
//! package computes numpy's einsum for dtypes other than float64 (the
//! float64 einsum keeps the optimiser and the JIT).
//!
//! [`einsum`] reads an explicit spec (`"ij,jk->ik"`: numpy's grammar
//! after `...` is expanded, see [`crate::frontend::einsum::expand_ellipsis`]),
//! takes repeated labels of one operand as its diagonal and broadcasts
//! size-1 axes (both as strides: operands are read in place, whatever
//! their strides), plans the network ([`crate::plan::plan`], or the given
//! path) and runs the plan's steps:
//!
//! - a one-operand step (a sum over indices of one tensor, a transpose) is
//!   a strided loop (`kernels::Reduce`);
//! - a pairwise step is a batched matrix product: each index is a batch
//!   (both operands and the result), M (left and result), N (right and
//!   result) or K (both operands, summed) axis; the axes of one role are
//!   fused where the strides allow, the largest of each role becomes the
//!   product's `m`, `n`, `k` and the rest are loops around it (an index in
//!   one operand only, summed, is summed out of it first). The product is
//!   the `gemm` crate's for the floating-point and complex types (any
//!   strides, no copies), plain loops for the integers
//!   ([`Scalar::matmul`]).
//!
//! Threads (`Options::threads`): a product of at least 2^21 multiply-adds
//! runs on the library's threads; many smaller products of one step (a
//! batch) split their loop over threads instead, one product per thread.
//!
//! Each step writes a new C-ordered tensor in the order of its indices (the
//! last step in the output's order). The integers wrap around (numpy's
//! integer einsum computes modulo 2^bits, and so does arithmetic in `i64`
//! or `u64` truncated to the narrower type afterwards).
//!
//! Memory (`Options::memory_limit`): where the plan slices indices to keep
//! its intermediates within the limit, the steps run once per value of the
//! sliced indices (each operand read at that value, in place), and each
//! slice's result is added into its place in the whole result (a sliced
//! index of the output: its own part; a summed one: a sum over slices,
//! which reorders the sum as any plan may).
//!
//! Cancellation: a call made inside [`crate::jit::Cancel::run`] stops soon
//! after the token is cancelled, with [`Error::Interrupted`]: the flag is
//! read between steps, between the products of a step, between panels of
//! a large product (about 2^30 multiply-adds each) and every 2^16 elements
//! of a one-operand sum. Buffers come zeroed from the system, so a huge
//! result costs nothing before it is written.
//!
//! Owns the execution of a plan over typed views; it must not plan
//! (`plan` does) and knows nothing of the IR, the optimiser or the JIT.

mod kernels;

pub use kernels::Scalar;
pub use num_complex::{Complex32, Complex64};

use crate::cancel::{current_flag, stopped};
use crate::plan::{self, Method, Network};
use crate::{Error, Result};
use kernels::{matmul_panels, Axis, MatMul, Reduce};
use ndarray::{ArrayD, ArrayViewD, IxDyn};
use std::sync::atomic::{AtomicBool, Ordering};

/// How [`einsum`] plans and runs.
#[derive(Clone, Debug)]
pub struct Options {
    /// The planner's method (default [`Method::Auto`]).
    pub method: Method,
    /// A contraction path in numpy's linear form, followed instead of a
    /// search (see [`crate::plan::plan_path`]).
    pub path: Option<Vec<Vec<usize>>>,
    /// Threads a matrix product may use (at least 1).
    pub threads: usize,
    /// The bound on intermediates (default: the float64 path's, the
    /// largest operand or result or 2^27 elements, whichever is larger):
    /// where no contraction order keeps within it, the plan slices
    /// indices and the run loops over them (see the module doc).
    pub memory_limit: plan::MemoryLimit,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            method: Method::Auto,
            path: None,
            threads: 1,
            memory_limit: plan::MemoryLimit::Default,
        }
    }
}

/// One axis of a strided view: its label, size and stride (elements).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Dim {
    label: usize,
    size: usize,
    stride: isize,
}

/// A tensor during the run: a view (pointer and axes) and, for the
/// tensors steps make, the buffer it points into.
struct Tensor<T> {
    ptr: *const T,
    dims: Vec<Dim>,
    owned: Option<Vec<T>>,
}

impl<T> Tensor<T> {
    /// This view with the labels `sliced` fixed at the values `at` (its
    /// axes of them dropped, the pointer moved to them).
    fn fixed(&self, sliced: &[usize], at: &[usize]) -> Tensor<T> {
        let mut off = 0isize;
        let mut dims = Vec::with_capacity(self.dims.len());
        for d in &self.dims {
            match sliced.iter().position(|&l| l == d.label) {
                Some(k) => off += d.stride * at[k] as isize,
                None => dims.push(*d),
            }
        }
        Tensor {
            // (each fixed value is below its axis's size)
            ptr: self.ptr.wrapping_offset(off),
            dims,
            owned: None,
        }
    }

    fn labels(&self) -> Vec<usize> {
        self.dims.iter().map(|d| d.label).collect()
    }
    fn stride_of(&self, label: usize) -> Option<isize> {
        self.dims
            .iter()
            .find(|d| d.label == label)
            .map(|d| d.stride)
    }
}

fn spec_error(m: impl Into<String>) -> Error {
    Error::Frontend(format!("einsum: {}", m.into()))
}

/// The operands' labels and the output's, as read from an explicit spec.
fn parse(spec: &str, n: usize) -> Result<(Vec<Vec<char>>, Vec<char>)> {
    let spec: String = spec.chars().filter(|&c| c != ' ').collect();
    let (lhs, out) = spec
        .split_once("->")
        .ok_or_else(|| spec_error(format!("`{spec}` has no `->` (an explicit spec is needed)")))?;
    let letter = |c: char| !matches!(c, ',' | '-' | '>' | '.') && !c.is_whitespace();
    let inputs: Vec<Vec<char>> = if lhs.is_empty() && n == 0 {
        Vec::new()
    } else {
        lhs.split(',').map(|t| t.chars().collect()).collect()
    };
    if inputs.len() != n {
        return Err(spec_error(format!(
            "the spec `{spec}` has {} operands, {n} were given",
            inputs.len()
        )));
    }
    let output: Vec<char> = out.chars().collect();
    for c in inputs.iter().flatten().chain(&output) {
        if !letter(*c) {
            return Err(spec_error(format!(
                "`{c}` is not an index letter in `{spec}`"
            )));
        }
    }
    for (k, c) in output.iter().enumerate() {
        if output[..k].contains(c) {
            return Err(spec_error(format!(
                "output index `{c}` appears twice in `{spec}`"
            )));
        }
        if !inputs.iter().flatten().any(|x| x == c) {
            return Err(spec_error(format!(
                "output index `{c}` is in no operand of `{spec}`"
            )));
        }
    }
    Ok((inputs, output))
}

/// The einsum `spec` (explicit, without `...`) of `operands`, computed in
/// `T` (see the module doc). Errors: a spec that does not fit the
/// operands (their number, ranks, sizes of one label that differ and are
/// not 1), a path that does not contract the operands, memory for a
/// result or an intermediate that the system refuses; a cancelled call
/// (see the module doc, "Cancellation").
pub fn einsum<T: Scalar>(
    spec: &str,
    operands: &[ArrayViewD<'_, T>],
    opts: &Options,
) -> Result<ArrayD<T>> {
    let (letters, out_letters) = parse(spec, operands.len())?;
    if operands.is_empty() {
        return Err(spec_error("no operands"));
    }
    // label ids in order of appearance
    let mut names: Vec<char> = Vec::new();
    let id = |c: char, names: &mut Vec<char>| match names.iter().position(|&x| x == c) {
        Some(i) => i,
        None => {
            names.push(c);
            names.len() - 1
        }
    };
    let mut sizes: Vec<usize> = Vec::new();
    let mut raw: Vec<Vec<Dim>> = Vec::with_capacity(operands.len());
    for (k, (ls, op)) in letters.iter().zip(operands).enumerate() {
        if ls.len() != op.ndim() {
            return Err(spec_error(format!(
                "operand {k} has {} axes, its subscripts `{}` name {}",
                op.ndim(),
                ls.iter().collect::<String>(),
                ls.len()
            )));
        }
        let mut dims = Vec::with_capacity(ls.len());
        for ((&c, &size), &stride) in ls.iter().zip(op.shape()).zip(op.strides()) {
            let label = id(c, &mut names);
            if label == sizes.len() {
                sizes.push(1);
            }
            if size != 1 {
                if sizes[label] != 1 && sizes[label] != size {
                    return Err(Error::Frontend(format!(
                        "einsum: operands could not be broadcast together: index `{c}` has sizes {} and {size}",
                        sizes[label]
                    )));
                }
                sizes[label] = size;
            }
            dims.push(Dim {
                label,
                size,
                stride,
            });
        }
        raw.push(dims);
    }
    let output: Vec<usize> = out_letters.iter().map(|&c| id(c, &mut names)).collect();
    let out_shape: Vec<usize> = output.iter().map(|&l| sizes[l]).collect();
    if sizes.contains(&0) {
        // an empty axis: the sums are empty (or the result is)
        return zeros_array(&out_shape);
    }
    // diagonals and broadcasting, as strides
    let mut tensors: Vec<Option<Tensor<T>>> = Vec::with_capacity(operands.len());
    for (dims, op) in raw.iter().zip(operands) {
        let mut merged: Vec<Dim> = Vec::with_capacity(dims.len());
        for d in dims {
            let (size, stride) = if d.size == 1 && sizes[d.label] != 1 {
                (sizes[d.label], 0)
            } else {
                (d.size, d.stride)
            };
            match merged.iter_mut().find(|m| m.label == d.label) {
                Some(m) if m.size == size => m.stride += stride,
                Some(m) => {
                    return Err(spec_error(format!(
                        "index `{}` is repeated in one operand with sizes {} and {size}",
                        names[d.label], m.size
                    )))
                }
                None => merged.push(Dim {
                    label: d.label,
                    size,
                    stride,
                }),
            }
        }
        tensors.push(Some(Tensor {
            ptr: op.as_ptr(),
            dims: merged,
            owned: None,
        }));
    }
    let net = Network::new(
        tensors
            .iter()
            .map(|t| t.as_ref().map(|t| t.labels()).unwrap_or_default())
            .collect(),
        output.clone(),
        sizes.iter().map(|&s| s as u64).collect(),
    )
    .map_err(|e| Error::Plan(format!("einsum: {e}")))?;
    let popts = plan::Options {
        method: opts.method,
        memory_limit: opts.memory_limit,
        ..plan::Options::default()
    };
    let p = match &opts.path {
        Some(path) => plan::plan_path(&net, path, &popts),
        None => plan::plan(&net, &popts),
    }
    .map_err(|e| Error::Plan(format!("einsum: {e}")))?;
    let run = Run {
        steps: &p.steps,
        sizes: &sizes,
        threads: opts.threads.max(1),
        stop: current_flag(),
    };
    if p.sliced.is_empty() {
        let last = run.steps(tensors, &output)?;
        let data = last.owned.unwrap_or_default();
        return ArrayD::from_shape_vec(IxDyn(&out_shape), data)
            .map_err(|e| Error::Plan(format!("einsum: result: {e}")));
    }
    // sliced: each slice's result added into its place in the whole
    let sliced = &p.sliced;
    let part_labels: Vec<usize> = output
        .iter()
        .copied()
        .filter(|l| !sliced.contains(l))
        .collect();
    let mut whole = fresh::<T>(&output, &sizes)?;
    let dst = whole
        .owned
        .as_mut()
        .map_or(std::ptr::null_mut(), |v| v.as_mut_ptr());
    let mut at = vec![0usize; sliced.len()];
    loop {
        let part: Vec<Option<Tensor<T>>> = tensors
            .iter()
            .map(|t| t.as_ref().map(|t| t.fixed(sliced, &at)))
            .collect();
        let r = run.steps(part, &part_labels)?;
        let off: isize = sliced
            .iter()
            .zip(&at)
            .map(|(&l, &x)| whole.stride_of(l).map_or(0, |st| st * x as isize))
            .sum();
        // SAFETY: `r` is a buffer of its sizes; `dst` plus `off` addresses,
        // along `r`'s axes (labels of the output), elements of `whole`'s
        // own buffer (the sliced labels fixed below their sizes).
        unsafe { add_into(&r, &whole, dst.wrapping_offset(off), run.stop) };
        stopped(run.stop)?;
        // the next slice (odometer, last fastest)
        let mut a = sliced.len();
        loop {
            if a == 0 {
                let data = whole.owned.take().unwrap_or_default();
                return ArrayD::from_shape_vec(IxDyn(&out_shape), data)
                    .map_err(|e| Error::Plan(format!("einsum: result: {e}")));
            }
            a -= 1;
            at[a] += 1;
            if at[a] < sizes[sliced[a]] {
                break;
            }
            at[a] = 0;
        }
    }
}

/// What runs a plan's steps: the steps, the labels' sizes, the threads
/// and the cancellation flag.
struct Run<'a> {
    steps: &'a [plan::Step],
    sizes: &'a [usize],
    threads: usize,
    stop: &'static AtomicBool,
}

impl Run<'_> {
    /// The steps over `tensors` (the operands, sliced indices fixed): a new
    /// C-ordered tensor of `output` (the output's labels not sliced).
    fn steps<T: Scalar>(
        &self,
        mut tensors: Vec<Option<Tensor<T>>>,
        output: &[usize],
    ) -> Result<Tensor<T>> {
        let (sizes, stop) = (self.sizes, self.stop);
        let nsteps = self.steps.len();
        for (s, step) in self.steps.iter().enumerate() {
            stopped(stop)?;
            // (a sliced label is fixed: no tensor has it)
            let mut order: Vec<usize> = step
                .kept
                .iter()
                .copied()
                .filter(|l| tensors.iter().flatten().any(|t| t.stride_of(*l).is_some()))
                .collect();
            if s + 1 == nsteps && same_set(&order, output) {
                order = output.to_vec();
            }
            let made = match step.operands[..] {
                [a] => {
                    let t = take(&mut tensors, a)?;
                    reduce(&t, &order, sizes, stop)?
                }
                [a, b] => {
                    let ta = take(&mut tensors, a)?;
                    let tb = take(&mut tensors, b)?;
                    pair(ta, tb, &order, sizes, self.threads, stop)?
                }
                _ => return Err(Error::Plan("einsum: a plan step of 0 or 3 operands".into())),
            };
            tensors.push(Some(made));
        }
        let last = tensors
            .iter_mut()
            .rev()
            .find_map(Option::take)
            .ok_or_else(|| Error::Plan("einsum: the plan left no tensor".into()))?;
        let last = if last.owned.is_some() && last.labels() == output {
            last
        } else {
            reduce(&last, output, sizes, stop)?
        };
        // (a step may have stopped with its result incomplete)
        stopped(stop)?;
        Ok(last)
    }
}

fn same_set(a: &[usize], b: &[usize]) -> bool {
    a.len() == b.len() && a.iter().all(|x| b.contains(x))
}

fn take<T>(ts: &mut [Option<Tensor<T>>], k: usize) -> Result<Tensor<T>> {
    ts.get_mut(k)
        .and_then(Option::take)
        .ok_or_else(|| Error::Plan(format!("einsum: the plan uses tensor {k} twice")))
}

/// `n` zeros, the allocation fallible (zeroed by the system).
fn zeros<T: Scalar>(n: usize) -> Result<Vec<T>> {
    crate::mem::zeros(n, || format!("a tensor of {n} elements"))
}

fn zeros_array<T: Scalar>(shape: &[usize]) -> Result<ArrayD<T>> {
    let n = shape.iter().product();
    ArrayD::from_shape_vec(IxDyn(shape), zeros(n)?)
        .map_err(|e| Error::Plan(format!("einsum: result: {e}")))
}

/// A new C-ordered tensor of `labels` (zeros) and its strides.
fn fresh<T: Scalar>(labels: &[usize], sizes: &[usize]) -> Result<Tensor<T>> {
    let shape: Vec<usize> = labels.iter().map(|&l| sizes[l]).collect();
    let total = shape
        .iter()
        .try_fold(1usize, |a, &n| a.checked_mul(n))
        .filter(|&n| n <= isize::MAX as usize / 16)
        .ok_or_else(|| {
            Error::Plan(format!(
                "einsum: an intermediate of shape {shape:?} is too large"
            ))
        })?;
    let data = zeros::<T>(total)?;
    let mut dims = Vec::with_capacity(labels.len());
    let mut stride = 1isize;
    for (&l, &n) in labels.iter().zip(&shape).rev() {
        dims.push(Dim {
            label: l,
            size: n,
            stride,
        });
        stride *= n as isize;
    }
    dims.reverse();
    Ok(Tensor {
        ptr: data.as_ptr(),
        dims,
        owned: Some(data),
    })
}

/// `src` summed over the labels not in `keep`, as a new tensor of `keep`
/// in that order (incomplete if `stop` is set meanwhile).
fn reduce<T: Scalar>(
    src: &Tensor<T>,
    keep: &[usize],
    sizes: &[usize],
    stop: &AtomicBool,
) -> Result<Tensor<T>> {
    let mut out = fresh::<T>(keep, sizes)?;
    let dst = out
        .owned
        .as_mut()
        .map_or(std::ptr::null_mut(), |v| v.as_mut_ptr());
    // SAFETY: `src` addresses its view (an operand's, or a buffer it
    // owns) for every index below its sizes; `dst` is `out`'s own buffer
    // of `keep`'s sizes.
    unsafe { add_into(src, &out, dst, stop) };
    Ok(out)
}

/// Add every element of `src` into the element of `out`'s layout (its
/// strides per label) at `dst` that has the same values of `out`'s labels:
/// labels of `src` that `out` lacks are summed over (stride 0 in `dst`).
/// Incomplete if `stop` is set meanwhile.
///
/// # Safety
/// `src.ptr` must address an element for every index below `src`'s sizes,
/// and `dst` (which need not be `out`'s own start: a slice of it) must
/// address a writable element of `T` at every offset `out`'s strides give
/// for those indices.
unsafe fn add_into<T: Scalar>(src: &Tensor<T>, out: &Tensor<T>, dst: *mut T, stop: &AtomicBool) {
    let axes = src
        .dims
        .iter()
        .map(|d| Axis {
            size: d.size,
            src: d.stride,
            dst: out.stride_of(d.label).unwrap_or(0),
        })
        .collect();
    // SAFETY: the caller's promise.
    unsafe {
        Reduce {
            src: src.ptr,
            dst,
            axes,
        }
        .run(stop)
    };
}

/// One dimension of a product: its size and strides in dst, lhs, rhs.
#[derive(Clone, Copy, Debug)]
struct PDim {
    size: usize,
    st: [isize; 3],
}

/// Fuse the dimensions of one role (the operands `ops` it occurs in): two
/// fuse when the outer stride is the inner stride times the inner size in
/// each of them. The fused dimensions, largest first.
fn fuse(mut dims: Vec<PDim>, ops: &[usize]) -> Vec<PDim> {
    dims.retain(|d| d.size != 1);
    dims.sort_by_key(|d| (d.st[ops[0]].unsigned_abs(), d.size));
    let mut out: Vec<PDim> = Vec::new();
    for d in dims {
        if let Some(last) = out.last_mut() {
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
    out.sort_by_key(|d| std::cmp::Reverse(d.size));
    out
}

/// The pairwise step: `a · b` summed over their common labels not in
/// `order`, as a new tensor of `order` (incomplete if `stop` is set
/// meanwhile).
fn pair<T: Scalar>(
    a: Tensor<T>,
    b: Tensor<T>,
    order: &[usize],
    sizes: &[usize],
    threads: usize,
    stop: &'static AtomicBool,
) -> Result<Tensor<T>> {
    // labels in one operand only and not kept are summed out of it first
    let own = |x: &Tensor<T>, y: &Tensor<T>| -> Vec<usize> {
        x.labels()
            .into_iter()
            .filter(|l| order.contains(l) || y.stride_of(*l).is_some())
            .collect()
    };
    let (ka, kb) = (own(&a, &b), own(&b, &a));
    let a = if ka.len() < a.dims.len() {
        reduce(&a, &ka, sizes, stop)?
    } else {
        a
    };
    let b = if kb.len() < b.dims.len() {
        reduce(&b, &kb, sizes, stop)?
    } else {
        b
    };
    let mut out = fresh::<T>(order, sizes)?;
    let dst = out
        .owned
        .as_mut()
        .map_or(std::ptr::null_mut(), |v| v.as_mut_ptr());
    let (mut bt, mut mt, mut nt, mut kt) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for d in &out.dims {
        let (sa, sb) = (a.stride_of(d.label), b.stride_of(d.label));
        let pd = PDim {
            size: d.size,
            st: [d.stride, sa.unwrap_or(0), sb.unwrap_or(0)],
        };
        match (sa, sb) {
            (Some(_), Some(_)) => bt.push(pd),
            (Some(_), None) => mt.push(pd),
            (None, Some(_)) => nt.push(pd),
            (None, None) => {
                return Err(Error::Plan(
                    "einsum: a step keeps an index of neither operand".into(),
                ))
            }
        }
    }
    for d in &a.dims {
        if let (Some(sb), None) = (b.stride_of(d.label), out.stride_of(d.label)) {
            kt.push(PDim {
                size: d.size,
                st: [0, d.stride, sb],
            });
        }
    }
    let unit = PDim {
        size: 1,
        st: [0, 0, 0],
    };
    let mut m = fuse(mt, &[0, 1]);
    let mut n = fuse(nt, &[0, 2]);
    let mut k = fuse(kt, &[1, 2]);
    let md = if m.is_empty() { unit } else { m.remove(0) };
    let nd = if n.is_empty() { unit } else { n.remove(0) };
    let kd = if k.is_empty() { unit } else { k.remove(0) };
    // loops around the product: writing disjoint parts (batch and the other
    // M and N axes), and summing (the other K axes)
    let mut outer = fuse(bt, &[0, 1, 2]);
    outer.extend(m);
    outer.extend(n);
    let sums = k;
    let product = Product {
        md,
        nd,
        kd,
        dst,
        lhs: a.ptr,
        rhs: b.ptr,
        sums,
        outer,
        stop,
    };
    let count: usize = product.outer.iter().map(|d| d.size).product();
    let call_work = md.size * nd.size * kd.size;
    let work = call_work
        .saturating_mul(count)
        .saturating_mul(product.sums.iter().map(|d| d.size).product());
    let parts = threads.min(count);
    if parts > 1 && call_work < kernels::THREADED_WORK && work >= kernels::THREADED_WORK {
        // many small products: the loops around them split over threads
        // (each writes its own part of the result), one thread per call
        let shared = &product;
        std::thread::scope(|s| {
            for p in 1..parts {
                s.spawn(move || shared.run(count * p / parts, count * (p + 1) / parts, 1));
            }
            shared.run(0, count / parts, 1);
        });
    } else {
        product.run(0, count, threads);
    }
    drop((a, b));
    Ok(out)
}

/// A pairwise step's products: the one product (`md`, `nd`, `kd`), the
/// loops around it writing disjoint parts (`outer`) and summing (`sums`).
struct Product<T> {
    md: PDim,
    nd: PDim,
    kd: PDim,
    dst: *mut T,
    lhs: *const T,
    rhs: *const T,
    sums: Vec<PDim>,
    outer: Vec<PDim>,
    /// The cancellation flag, read before each product.
    stop: &'static AtomicBool,
}

// SAFETY: the threads sharing a `Product` write disjoint parts of `dst`
// (different outer indices) and only read `lhs` and `rhs`; the buffers
// outlive the scope the threads run in.
unsafe impl<T: Sync> Sync for Product<T> {}

impl<T: Scalar> Product<T> {
    /// The products of the outer indices `lo..hi` (in odometer order),
    /// each with up to `threads` threads; none after `stop` is set.
    fn run(&self, lo: usize, hi: usize, threads: usize) {
        if lo >= hi {
            return;
        }
        // the multi-index of `lo`, and its offsets
        let mut idx = vec![0usize; self.outer.len()];
        let mut off = [0isize; 3];
        let mut rest = lo;
        for (a, d) in self.outer.iter().enumerate().rev() {
            idx[a] = rest % d.size;
            rest /= d.size;
            for (o, s) in off.iter_mut().zip(d.st) {
                *o += s * idx[a] as isize;
            }
        }
        for _ in lo..hi {
            let mut sidx = vec![0usize; self.sums.len()];
            let mut soff = off;
            let mut first = true;
            loop {
                if self.stop.load(Ordering::Relaxed) {
                    return;
                }
                let call = MatMul {
                    m: self.md.size,
                    n: self.nd.size,
                    k: self.kd.size,
                    // (the offsets: each index is below its size)
                    dst: self.dst.wrapping_offset(soff[0]),
                    dst_rs: self.md.st[0],
                    dst_cs: self.nd.st[0],
                    lhs: self.lhs.wrapping_offset(soff[1]),
                    lhs_rs: self.md.st[1],
                    lhs_cs: self.kd.st[1],
                    rhs: self.rhs.wrapping_offset(soff[2]),
                    rhs_rs: self.kd.st[2],
                    rhs_cs: self.nd.st[2],
                    accumulate: !first,
                    threads,
                };
                // SAFETY: the operands are live views over every index
                // below their sizes; `dst` is the step's own buffer, each
                // element at one index (C order), this outer index's part
                // written by this thread only.
                unsafe { matmul_panels(&call, self.stop) };
                first = false;
                if !step(&self.sums, &mut sidx, &mut soff) {
                    break;
                }
            }
            step(&self.outer, &mut idx, &mut off);
        }
    }
}

/// The next index of an odometer over `dims` (last fastest), moving the
/// three offsets along; false after the last.
fn step(dims: &[PDim], idx: &mut [usize], off: &mut [isize; 3]) -> bool {
    let mut a = dims.len();
    while a > 0 {
        a -= 1;
        idx[a] += 1;
        for (o, s) in off.iter_mut().zip(dims[a].st) {
            *o += s;
        }
        if idx[a] < dims[a].size {
            return true;
        }
        for (o, s) in off.iter_mut().zip(dims[a].st) {
            *o -= s * dims[a].size as isize;
        }
        idx[a] = 0;
    }
    false
}
