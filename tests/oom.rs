//! Allocation failures end in `Error::OutOfMemory`, never an abort (issue
//! 22): every buffer whose size comes from data (the interpreter's tensors,
//! the JIT's results and `let` temporaries, arguments converted for the
//! interpreter, `.npy` arrays) is allocated fallibly.
//!
//! In process, a global allocator refuses any allocation that would take
//! the live bytes past [`CAP`] (without the fix, the refusal aborts the
//! test binary); the command line runs under an address-space limit
//! (`setrlimit(RLIMIT_AS)`) and must print the error and exit 1.
#![cfg(feature = "cli")] // runs the `einsat` binary

mod common;
use common::tmpdir;
use einsat::interp::{self, Value};
use einsat::{jit, load, Error, Function};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Capped;

static LIVE: AtomicUsize = AtomicUsize::new(0);

/// The most bytes live at once in this test binary.
const CAP: usize = 1 << 30;

unsafe impl GlobalAlloc for Capped {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size() > CAP {
            LIVE.fetch_sub(l.size(), Ordering::Relaxed);
            return std::ptr::null_mut();
        }
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        if LIVE.fetch_add(l.size(), Ordering::Relaxed) + l.size() > CAP {
            LIVE.fetch_sub(l.size(), Ordering::Relaxed);
            return std::ptr::null_mut();
        }
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        let grow = n.saturating_sub(l.size());
        if LIVE.fetch_add(grow, Ordering::Relaxed) + grow > CAP {
            LIVE.fetch_sub(grow, Ordering::Relaxed);
            return std::ptr::null_mut();
        }
        let q = unsafe { System.realloc(p, l, n) };
        if q.is_null() {
            LIVE.fetch_sub(grow, Ordering::Relaxed);
        } else {
            LIVE.fetch_sub(l.size().saturating_sub(n), Ordering::Relaxed);
        }
        q
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static GLOBAL: Capped = Capped;

const SRC: &str = "
fn outer(a: [n]R) -> [n,n]R = gen(i:n, j:n) a[i] * a[j]
fn lett(a: [n]R) -> R = let t = gen(i:n, j:n) a[i] * a[j] in sum(i:n, j:n) t[i,j] * t[j,i]
fn rows(A: [n,m]R) -> R = sum(i:n, j:m) A[i,j]
fn total(a: [n]R) -> R = sum(i:n) a[i]
";

fn get(name: &str) -> Function {
    load(SRC).unwrap().get(name).unwrap().clone()
}

fn ones(n: usize) -> Value {
    Value::Array(ndarray::Array1::from_elem(n, 1.0).into_dyn())
}

fn oom(r: einsat::Result<Value>, what: &str, bytes: u128) {
    match r {
        Err(e @ Error::OutOfMemory { .. }) => {
            let Error::OutOfMemory { bytes: b, what: w } = &e else {
                unreachable!()
            };
            assert!(w.contains(what), "{e}");
            assert!(*b >= bytes, "{e}");
            assert!(e.to_string().starts_with("out of memory: "), "{e}");
        }
        other => panic!("expected out of memory ({what}), got {other:?}"),
    }
}

#[test]
fn refused_allocations_are_errors_not_aborts() {
    // 20,000² elements: 3.2 GB, past the cap
    let a = [ones(20_000)];
    let small = [ones(3)];
    for name in ["outer", "lett"] {
        let f = get(name);
        let k = jit::compile_uncached(&f).unwrap();
        let what = if name == "outer" {
            "the result (an array of shape [20000, 20000])"
        } else {
            "the `let` temporary `t` (an array of shape [20000, 20000])"
        };
        oom(k.call(&a), what, 3_200_000_000);
        // the kernel and the process stay usable
        let want = interp::run(&f, &small).unwrap();
        assert_eq!(k.call(&small).unwrap(), want);
    }
    // the interpreter holds every value: a tensor of tensors fails part
    // way and the run ends with the error
    oom(
        interp::run(&get("outer"), &a),
        "in the interpreter",
        20_000 * 8,
    );
    // converting an argument for the interpreter (a 2^26-element matrix,
    // 512 MiB, in the interpreter's form more than the cap allows)
    let big = Value::Array(ndarray::Array2::from_elem((1 << 13, 1 << 13), 0.5).into_dyn());
    oom(
        interp::run(&get("rows"), std::slice::from_ref(&big)),
        "in the interpreter",
        1,
    );
    drop(big);
    assert_eq!(
        interp::run(&get("outer"), &small).unwrap(),
        jit::compile(&get("outer")).unwrap().call(&small).unwrap()
    );
}

#[test]
fn json_output_is_written_as_it_goes() {
    // `Value::write_json` writes what `to_json` builds
    let vals = [
        Value::Real(1.5),
        Value::Real(f64::NAN),
        Value::Array(ndarray::arr2(&[[1.0, -2.5e-300], [f64::INFINITY, 0.0]]).into_dyn()),
        Value::pair(
            Value::Array(ndarray::arr1(&[] as &[f64]).into_dyn()),
            Value::pair(
                Value::Real(-0.0),
                Value::Array(ndarray::arr0(3.0).into_dyn()),
            ),
        ),
    ];
    for v in &vals {
        let mut out = Vec::new();
        v.write_json(&mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), v.to_json().to_string());
    }
}

/// Run the `einsat` binary with its address space limited to `limit`
/// bytes: exit status (None for a signal) and stderr.
#[cfg(target_os = "linux")]
fn einsat_limited(dir: &std::path::Path, args: &[&str], limit: u64) -> (Option<i32>, String) {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_einsat"));
    cmd.args(args).current_dir(dir);
    // SAFETY: only async-signal-safe work between fork and exec (one
    // setrlimit call).
    unsafe {
        cmd.pre_exec(move || {
            let r = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &r) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A `.npy` file of `n` f64s whose data is a hole (a sparse file: no
/// disk space, the header checks pass).
#[cfg(target_os = "linux")]
fn sparse_npy(path: &std::path::Path, n: u64) {
    let mut dict = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': ({n},), }}");
    while (10 + dict.len() + 1) % 64 != 0 {
        dict.push(' ');
    }
    dict.push('\n');
    let mut h = b"\x93NUMPY\x01\x00".to_vec();
    h.extend((dict.len() as u16).to_le_bytes());
    h.extend(dict.as_bytes());
    std::fs::write(path, &h).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.set_len(h.len() as u64 + n * 8).unwrap();
}

#[cfg(target_os = "linux")]
#[test]
fn the_cli_reports_out_of_memory_and_exits_1() {
    let dir = tmpdir("oom");
    std::fs::write(dir.join("big.tl"), SRC).unwrap();
    ndarray_npy::write_npy(dir.join("a.npy"), &ndarray::Array1::from_elem(40_000, 1.0)).unwrap();
    sparse_npy(&dir.join("huge.npy"), 400_000_000);
    let limit = 1 << 30;
    let cases: [(&[&str], &str); 5] = [
        (
            &[
                "run", "big.tl", "--fn", "outer", "--arg", "a=a.npy", "--no-opt",
            ],
            "bytes for the result (an array of shape [40000, 40000])",
        ),
        (
            &[
                "run", "big.tl", "--fn", "outer", "--arg", "a=a.npy", "--engine", "interp",
            ],
            "in the interpreter",
        ),
        (
            &[
                "run", "big.tl", "--fn", "lett", "--arg", "a=a.npy", "--no-opt",
            ],
            "the `let` temporary `t`",
        ),
        (
            &[
                "run", "big.tl", "--fn", "outer", "--arg", "a=a.npy", "--json",
            ],
            "bytes for the result",
        ),
        (
            &["run", "big.tl", "--fn", "total", "--arg", "a=huge.npy"],
            "3200000000 bytes for huge.npy: the array of shape [400000000]",
        ),
    ];
    for (args, want) in cases {
        let (code, err) = einsat_limited(&dir, args, limit);
        assert_eq!(code, Some(1), "{args:?}: {err}");
        assert!(
            err.starts_with("error: out of memory: could not allocate"),
            "{args:?}: {err}"
        );
        assert!(err.contains(want), "{args:?}: {err}");
    }
    // within the limit, the same commands work
    ndarray_npy::write_npy(dir.join("s.npy"), &ndarray::Array1::from_elem(300, 2.0)).unwrap();
    let (code, err) = einsat_limited(
        &dir,
        &["run", "big.tl", "--fn", "lett", "--arg", "a=s.npy"],
        limit,
    );
    assert_eq!(code, Some(0), "{err}");
}
