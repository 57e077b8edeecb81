//! Helpers shared by the integration tests (each test crate uses a part).
#![allow(dead_code)]

#[cfg(feature = "testing")] // uses the testing support
pub mod agree;

use einsat::{jit, Function, Precision};

use std::path::{Path, PathBuf};
use std::process::Command;

/// Case count of a property test: PROPTEST_CASES if set, else `default`.
pub fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// Run the `einsat` binary in `dir`: exit status, stdout, stderr.
pub fn einsat_in(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_einsat"))
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A fresh, empty temporary folder for one test.
pub fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("einsat-test-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The first function of `src` (panics with the source on an error).
pub fn load1(src: &str) -> Function {
    einsat::load(src)
        .unwrap_or_else(|e| panic!("{src}: {e}"))
        .functions
        .remove(0)
}

/// JIT options for format `p` that split every nest across two threads
/// (the parallel paths run even on small inputs).
pub fn jit_opts(p: Precision) -> jit::Options {
    jit::Options {
        precision: p,
        parallel_threshold: 0,
        threads: 2,
        ..jit::Options::default()
    }
}

/// A small deterministic generator (xorshift64*) for the kernels' sweeps.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// `±m · 10^e`, `e` uniform in `lo..hi`.
    pub fn logspaced(&mut self, lo: f64, hi: f64) -> f64 {
        let e = lo + (hi - lo) * self.unit();
        let s = if self.next() & 1 == 0 { 1.0 } else { -1.0 };
        s * 10f64.powf(e)
    }
}
