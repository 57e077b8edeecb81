//! The element types of typed contraction ([`Scalar`]: `f32`, `f64`,
//! `Complex32`, `Complex64`, wrapping `i64` and `u64`) and the two kernels
//! every step runs on: a strided matrix product `C (+)= A·B` ([`MatMul`];
//! the `gemm` crate's kernels for the floating-point and complex types,
//! plain loops for the integers) and a strided sum of one tensor into
//! another ([`Reduce`]). Owns the arithmetic; knows nothing of labels,
//! plans or steps.

use num_complex::{Complex32, Complex64};
use std::sync::atomic::{AtomicBool, Ordering};

/// A strided matrix product `dst (+)= lhs · rhs` of an `m × k` and a
/// `k × n` matrix: pointers and strides (in elements, any sign) of the
/// three, row stride first.
#[derive(Clone, Copy, Debug)]
pub struct MatMul<T> {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub dst: *mut T,
    pub dst_rs: isize,
    pub dst_cs: isize,
    pub lhs: *const T,
    pub lhs_rs: isize,
    pub lhs_cs: isize,
    pub rhs: *const T,
    pub rhs_rs: isize,
    pub rhs_cs: isize,
    /// Add to `dst` (else overwrite it).
    pub accumulate: bool,
    /// Threads the call may use.
    pub threads: usize,
}

/// About how many elements or multiply-adds a kernel does between two
/// reads of the cancellation flag (a millisecond or less of work).
pub(crate) const POLL_WORK: usize = 1 << 16;

/// `p` run as panels of about [`Scalar::PANEL_WORK`] multiply-adds (rows,
/// and for very wide products columns too), stopping between two panels
/// once `stop` is set (the rest of `dst` unwritten). Each element of the
/// result is still one product's, summed over the whole `k` as the unsplit
/// product sums it.
///
/// # Safety
/// As [`Scalar::matmul`].
pub(crate) unsafe fn matmul_panels<T: Scalar>(p: &MatMul<T>, stop: &AtomicBool) {
    let work = T::PANEL_WORK;
    let nk = p.n.saturating_mul(p.k).max(1);
    if p.m.saturating_mul(nk) <= work {
        // SAFETY: as the caller promises.
        return unsafe { T::matmul(p) };
    }
    let rows = (work / nk).clamp(64, p.m.max(1));
    let cols = if rows.saturating_mul(nk) > 2 * work {
        (work / rows.saturating_mul(p.k).max(1)).clamp(256, p.n.max(1))
    } else {
        p.n.max(1)
    };
    for i in (0..p.m).step_by(rows) {
        for j in (0..p.n).step_by(cols) {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            let (ii, jj) = (i as isize, j as isize);
            let panel = MatMul {
                m: rows.min(p.m - i),
                n: cols.min(p.n - j),
                dst: p.dst.wrapping_offset(ii * p.dst_rs + jj * p.dst_cs),
                lhs: p.lhs.wrapping_offset(ii * p.lhs_rs),
                rhs: p.rhs.wrapping_offset(jj * p.rhs_cs),
                ..*p
            };
            // SAFETY: the panel's rows and columns are a part of the
            // product's (below m and n), each element of `dst` in one
            // panel only.
            unsafe { T::matmul(&panel) };
        }
    }
}

/// Products of at least this many multiply-adds use threads (below it a
/// call takes well under a millisecond on one core).
pub(crate) const THREADED_WORK: usize = 1 << 21;

/// An element type einsat contracts: a commutative ring under
/// [`Scalar::add`] and [`Scalar::mul`] (the integers wrap around, as
/// numpy's do), with the matrix product of its kind.
pub trait Scalar:
    Copy + PartialEq + Send + Sync + std::fmt::Debug + crate::mem::ZeroBits + 'static
{
    /// The additive identity.
    const ZERO: Self;
    /// `self + other` (wrapping for integers).
    fn add(self, other: Self) -> Self;
    /// `self · other` (wrapping for integers).
    fn mul(self, other: Self) -> Self;

    /// The multiply-adds of one panel of a large product
    /// ([`matmul_panels`]): a fraction of a second of [`Scalar::matmul`]
    /// (plain loops by default; the `gemm` types take more).
    #[doc(hidden)]
    const PANEL_WORK: usize = 1 << 26;

    /// `p.dst (+)= p.lhs · p.rhs`, summing each element over `k` in order
    /// (the default, for the integers) or in the `gemm` crate's order.
    ///
    /// # Safety
    /// The pointers and strides address live buffers for every index below
    /// `m`, `n`, `k`; `dst` is written by no one else meanwhile, and no
    /// two of its indices address the same element.
    #[doc(hidden)]
    unsafe fn matmul(p: &MatMul<Self>) {
        unsafe { loops(p) }
    }
}

/// The plain-loop matrix product (row `i`, then `p`, then `j` innermost).
///
/// # Safety
/// As [`Scalar::matmul`].
unsafe fn loops<T: Scalar>(p: &MatMul<T>) {
    unsafe {
        for i in 0..p.m as isize {
            let d = p.dst.offset(i * p.dst_rs);
            if !p.accumulate {
                for j in 0..p.n as isize {
                    *d.offset(j * p.dst_cs) = T::ZERO;
                }
            }
            let l = p.lhs.offset(i * p.lhs_rs);
            for q in 0..p.k as isize {
                let a = *l.offset(q * p.lhs_cs);
                let r = p.rhs.offset(q * p.rhs_rs);
                for j in 0..p.n as isize {
                    let c = d.offset(j * p.dst_cs);
                    *c = (*c).add(a.mul(*r.offset(j * p.rhs_cs)));
                }
            }
        }
    }
}

macro_rules! int_scalar {
    ($t:ty) => {
        impl Scalar for $t {
            const ZERO: Self = 0;
            fn add(self, other: Self) -> Self {
                self.wrapping_add(other)
            }
            fn mul(self, other: Self) -> Self {
                self.wrapping_mul(other)
            }
        }
    };
}

int_scalar!(i64);
int_scalar!(u64);

macro_rules! gemm_scalar {
    ($t:ty, $zero:expr, $one:expr) => {
        impl Scalar for $t {
            const ZERO: Self = $zero;
            const PANEL_WORK: usize = 1 << 30;
            fn add(self, other: Self) -> Self {
                self + other
            }
            fn mul(self, other: Self) -> Self {
                self * other
            }
            unsafe fn matmul(p: &MatMul<Self>) {
                let par = if p.threads > 1
                    && p.m.saturating_mul(p.n).saturating_mul(p.k) >= THREADED_WORK
                {
                    gemm::Parallelism::Rayon(p.threads)
                } else {
                    gemm::Parallelism::None
                };
                // SAFETY: as the caller promises; `gemm` takes any strides.
                unsafe {
                    gemm::gemm(
                        p.m,
                        p.n,
                        p.k,
                        p.dst,
                        p.dst_cs,
                        p.dst_rs,
                        p.accumulate,
                        p.lhs,
                        p.lhs_cs,
                        p.lhs_rs,
                        p.rhs,
                        p.rhs_cs,
                        p.rhs_rs,
                        $one,
                        $one,
                        false,
                        false,
                        false,
                        par,
                    )
                }
            }
        }
    };
}

gemm_scalar!(f32, 0.0, 1.0);
gemm_scalar!(f64, 0.0, 1.0);
gemm_scalar!(
    Complex32,
    Complex32::new(0.0, 0.0),
    Complex32::new(1.0, 0.0)
);
gemm_scalar!(
    Complex64,
    Complex64::new(0.0, 0.0),
    Complex64::new(1.0, 0.0)
);

/// The sum of `n` elements from `s` at stride `st`, pairwise as numpy
/// sums (blocks of up to 128 summed in 8 interleaved partial sums, blocks
/// added in a balanced tree): the rounding error grows with log n, not n.
///
/// # Safety
/// `s` addresses a live element at every index below `n`.
unsafe fn pairwise<T: Scalar>(s: *const T, n: usize, st: isize) -> T {
    if n > 128 {
        let half = (n / 2) & !7;
        // SAFETY: both halves lie within the `n` elements.
        return unsafe {
            pairwise(s, half, st).add(pairwise(s.offset(half as isize * st), n - half, st))
        };
    }
    let mut r = [T::ZERO; 8];
    let whole = n - n % 8;
    let mut i = 0;
    // SAFETY: every index read is below `n`.
    unsafe {
        while i < whole {
            for (k, acc) in r.iter_mut().enumerate() {
                *acc = acc.add(*s.offset((i + k) as isize * st));
            }
            i += 8;
        }
        let mut sum = (r[0].add(r[1]).add(r[2].add(r[3]))).add(r[4].add(r[5]).add(r[6].add(r[7])));
        while i < n {
            sum = sum.add(*s.offset(i as isize * st));
            i += 1;
        }
        sum
    }
}

/// One axis of a [`Reduce`]: its size and its strides in the source and
/// the destination (0 in the destination: summed).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Axis {
    pub size: usize,
    pub src: isize,
    pub dst: isize,
}

/// `dst[..] += src[..]` over `axes` (every index of the source once;
/// axes with destination stride 0 are summed).
pub(crate) struct Reduce<T> {
    pub src: *const T,
    pub dst: *mut T,
    pub axes: Vec<Axis>,
}

impl<T: Scalar> Reduce<T> {
    /// Run it: the innermost loop over the axis with the smallest source
    /// stride, sums kept in a register along a summed innermost axis.
    /// Stops early (`dst` incomplete) once `stop` is set: it is read
    /// every [`POLL_WORK`] elements or so.
    ///
    /// # Safety
    /// The pointers and strides address live buffers for every index
    /// below the sizes; `dst` is written by no one else meanwhile.
    pub(crate) unsafe fn run(mut self, stop: &AtomicBool) {
        self.axes.retain(|a| a.size != 1);
        if self.axes.iter().any(|a| a.size == 0) {
            return;
        }
        // innermost last: the smallest source stride
        self.axes
            .sort_by_key(|a| std::cmp::Reverse((a.src.unsigned_abs(), a.dst.unsigned_abs())));
        let inner = self.axes.pop().unwrap_or(Axis {
            size: 1,
            src: 0,
            dst: 0,
        });
        let outer = &self.axes;
        let mut idx = vec![0usize; outer.len()];
        let (mut so, mut d_o) = (0isize, 0isize);
        let mut since_poll = 0usize;
        loop {
            since_poll += inner.size;
            if since_poll >= POLL_WORK {
                since_poll = 0;
                if stop.load(Ordering::Relaxed) {
                    return;
                }
            }
            unsafe {
                let s = self.src.offset(so);
                let d = self.dst.offset(d_o);
                if inner.dst == 0 {
                    *d = (*d).add(pairwise(s, inner.size, inner.src));
                } else {
                    for i in 0..inner.size as isize {
                        let c = d.offset(i * inner.dst);
                        *c = (*c).add(*s.offset(i * inner.src));
                    }
                }
            }
            // the next outer index (odometer, last axis fastest)
            let mut a = outer.len();
            loop {
                if a == 0 {
                    return;
                }
                a -= 1;
                idx[a] += 1;
                so += outer[a].src;
                d_o += outer[a].dst;
                if idx[a] < outer[a].size {
                    break;
                }
                so -= outer[a].src * outer[a].size as isize;
                d_o -= outer[a].dst * outer[a].size as isize;
                idx[a] = 0;
            }
        }
    }
}
