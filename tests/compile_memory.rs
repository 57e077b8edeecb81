//! JIT compile memory grows linearly in the program's size (issue 22): a
//! global allocator tracks the bytes live and their peak, and refuses any
//! allocation past a cap, so a compile that blows up fails here (the
//! process aborts on the refused allocation) instead of exhausting the
//! machine.
//!
//! Before the fix, every non-innermost sum emitted its body five times
//! (four unrolled copies and a tail), so nested sums multiplied their code
//! by five per level, and Cranelift's SSA construction added a block
//! parameter per variable in every block between a definition and a use:
//! seven nested sums took 5.3 GB, the 16-operand star einsum more than
//! 20 GB. A nest too large for one native function is refused with a
//! clear error before any code is generated.
//!
//! One test function only: the counts are process-wide.

use einsat::interp::{self, Value};
use einsat::{jit, load, Error, Function};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Tracking;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// No allocation may take the live bytes past this (the compiles below
/// need well under a tenth of it).
const CAP: usize = 2 << 30;

impl Tracking {
    fn add(&self, n: usize) -> bool {
        let now = LIVE.fetch_add(n, Ordering::Relaxed) + n;
        if now > CAP {
            LIVE.fetch_sub(n, Ordering::Relaxed);
            return false;
        }
        PEAK.fetch_max(now, Ordering::Relaxed);
        true
    }
}

unsafe impl GlobalAlloc for Tracking {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if !self.add(l.size()) {
            return std::ptr::null_mut();
        }
        let p = unsafe { System.alloc(l) };
        if p.is_null() {
            LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        if !self.add(l.size()) {
            return std::ptr::null_mut();
        }
        let p = unsafe { System.alloc_zeroed(l) };
        if p.is_null() {
            LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        if n > l.size() && !self.add(n - l.size()) {
            return std::ptr::null_mut();
        }
        let q = unsafe { System.realloc(p, l, n) };
        match (q.is_null(), n > l.size()) {
            (true, true) => {
                LIVE.fetch_sub(n - l.size(), Ordering::Relaxed);
            }
            (false, false) => {
                LIVE.fetch_sub(l.size() - n, Ordering::Relaxed);
            }
            _ => {}
        }
        q
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static GLOBAL: Tracking = Tracking;

/// `depth` nested sums, each level a product with a sum inside:
/// `sum(i0:n) A[i0,i0] * (A[i0,i0] + sum(i1:n) A[i0,i1] * (A[i1,i1] + …))`,
/// the indices shifted (`A[i+1, j-1]`, zero padding, so loops are peeled)
/// when `pad`.
fn nested(depth: usize, pad: bool) -> String {
    let (mut body, mut close) = (String::new(), String::new());
    for k in 0..depth {
        let p = k.saturating_sub(1);
        if pad {
            body += &format!("sum(i{k}:n) A[i{p}+1, i{k}-1] * (A[i{k}+1, i{k}] + ");
        } else {
            body += &format!("sum(i{k}:n) A[i{p}, i{k}] * (A[i{k}, i{k}] + ");
        }
        close.push(')');
    }
    format!("fn f(A: [n,n]R) -> R = {body}1{close}")
}

/// The shape the optimiser gives the 16-operand star einsum
/// `ab,ac,…,aq->`: sums nested eight deep, each level's body a product
/// with the next sum inside.
fn star() -> String {
    let mut s = String::from("fn f(A: [n,n]R, t: [n]R) -> R = sum(i:n, j:n) ");
    let mut close = String::new();
    for k in 0..8 {
        s += &format!("(sum(k{k}:n) A[i, k{k}] * ");
        close += ") * t[i]";
    }
    s += "A[i, j]";
    s += &close;
    s
}

/// Compile `f` (no optimiser), with the peak of live bytes during the
/// compile; the kernel must agree with the interpreter on `args`.
fn compile_peak(f: &Function, args: &[Value]) -> usize {
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let k = jit::compile_uncached(f).unwrap();
    let peak = PEAK.load(Ordering::Relaxed) - base;
    let want = interp::run(f, args).unwrap();
    let got = k.call(args).unwrap();
    assert!(want.approx_eq(&got, 1e-9, 1e-9), "{want} vs {got}");
    peak
}

fn matrix(n: usize) -> Value {
    Value::Array(
        ndarray::Array2::from_shape_fn((n, n), |(i, j)| {
            0.25 + ((i * 7 + j * 3) % 5) as f64 * 0.125
        })
        .into_dyn(),
    )
}

#[test]
fn compile_memory_is_linear_in_the_program() {
    // compiles run on a thread with room for deep programs
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(run)
        .unwrap()
        .join()
        .unwrap();
}

fn run() {
    let a = [matrix(3)];
    let one = [matrix(1)];
    let mut report = Vec::new();
    // nested sums: memory per level stays flat, far from the old factor
    // of 17 per level
    for pad in [false, true] {
        let mut peaks = Vec::new();
        for depth in [4, 7, 14, 28] {
            let f = load(&nested(depth, pad)).unwrap().functions.remove(0);
            // (the interpreter's work is n^depth)
            let p = compile_peak(&f, if depth <= 7 { &a } else { &one });
            report.push(format!("nested {depth} pad {pad}: {} KiB", p >> 10));
            peaks.push(p);
        }
        // 7 times the levels of the first: within 7 times its memory and
        // a constant (Cranelift's fixed costs), not exponentially more
        assert!(
            peaks[3] <= 7 * peaks[0] + (32 << 20),
            "{}",
            report.join("\n")
        );
        assert!(peaks[1] < 64 << 20, "{}", report.join("\n"));
    }
    // the star einsum's nest
    let f = load(&star()).unwrap().functions.remove(0);
    let t = Value::Array(ndarray::arr1(&[0.5, 0.75, 1.0]).into_dyn());
    let p = compile_peak(&f, &[matrix(3), t]);
    report.push(format!("star: {} KiB", p >> 10));
    assert!(p < 64 << 20, "{}", report.join("\n"));

    // a nest too large for one native function: a clear error, before
    // any code is generated
    let terms: Vec<String> = (0..6_000)
        .map(|k| format!("A[i+{}, j-{}]", k % 3, k % 5))
        .collect();
    let src = format!(
        "fn big(A: [n,n]R) -> [n,n]R = gen(i:n, j:n) {}",
        terms.join(" + ")
    );
    let f = load(&src).unwrap().functions.remove(0);
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    match jit::compile_uncached(&f) {
        Err(Error::Jit(m)) => {
            assert!(m.contains("11999 operations"), "{m}");
            assert!(m.contains("the interpreter can run it"), "{m}");
        }
        other => panic!("expected a JIT error, got {:?}", other.map(|_| ())),
    }
    let p = PEAK.load(Ordering::Relaxed) - base;
    assert!(p < 64 << 20, "refusing took {} KiB", p >> 10);
    // one below the limit compiles
    let src = format!(
        "fn big(A: [n,n]R) -> [n,n]R = gen(i:n, j:n) {}",
        terms[..2_000].join(" + ")
    );
    let f = load(&src).unwrap().functions.remove(0);
    let p = compile_peak(&f, &a);
    report.push(format!("2000-term map: {} KiB", p >> 10));
    eprintln!("{}", report.join("\n"));
}
