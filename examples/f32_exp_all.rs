//! Every `f32` argument through the `f32` `exp` kernels, at each dispatch
//! level this CPU has, against the interpreter's `F32` value (the `f64`
//! library `exp` rounded to `f32`): every result within 1 ulp, every
//! special result (NaN, ±inf, ±0) exact, and how many differ. Prints one
//! line per level and exits 1 on a violation. A few minutes in all:
//! `cargo run --release --example f32_exp_all`. (`tests/suite/vmath_f32.rs`
//! checks a million of these points and dense ranges in CI.)

use einsat::syntax::ast::Func;
use einsat::vmath::{apply_at_f32, levels};

/// A float's place in order, through zero.
fn ord(x: f32) -> i64 {
    let b = x.to_bits() as i32;
    if b < 0 {
        -i64::from(b & i32::MAX)
    } else {
        i64::from(b)
    }
}

fn main() {
    const CH: usize = 1 << 20;
    let mut xs = vec![0f32; CH];
    let mut ys = vec![0f32; CH];
    let mut failed = false;
    for level in levels() {
        let (mut off, mut bad, mut worst) = (0u64, 0u64, 0i64);
        for c in 0..(1usize << 32) / CH {
            for (k, x) in xs.iter_mut().enumerate() {
                *x = f32::from_bits((c * CH + k) as u32);
            }
            apply_at_f32(Func::Exp, level, &xs, &mut ys, None);
            for (x, g) in xs.iter().zip(&ys) {
                let w = f64::from(*x).exp() as f32;
                let special =
                    w.is_nan() || w.is_infinite() || w == 0.0 || g.is_infinite() || *g == 0.0;
                let ok = if w.is_nan() {
                    g.is_nan()
                } else if special || g.is_nan() {
                    g.to_bits() == w.to_bits()
                } else {
                    let d = (ord(*g) - ord(w)).abs();
                    worst = worst.max(d);
                    off += u64::from(d != 0);
                    d <= 1
                };
                if !ok {
                    bad += 1;
                    if bad <= 5 {
                        println!("{level:?}: exp({x:e}) = {g:e}, want {w:e}");
                    }
                }
            }
        }
        println!(
            "{level:?}: all 2^32 arguments: {off} results 1 ulp from the rounded library \
             (worst {worst} ulp), {bad} wrong"
        );
        failed |= bad > 0;
    }
    if failed {
        std::process::exit(1);
    }
}
