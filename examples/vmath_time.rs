//! Times the `f64` and `f32` exp/tanh slice kernels (maps into another
//! buffer, and the `f64` fused sums) at each level (in
//! cache: 4096 values; out of cache: 2^20), ns per element, on two kinds of
//! arguments: spread over [-10, 10] and over [-3, 3] (where a normal
//! sample lies); then the division of a run by one divisor (`f64`, in
//! cache). `cargo run --release --example vmath_time`.
use einsat::syntax::ast::Func;
use einsat::vmath::{apply_at_f32, apply_to_add_at, div_to_at, levels, sum_of_at};
use std::time::Instant;

fn time(mut run: impl FnMut(), n: usize) -> f64 {
    let reps = (1 << 24) / n;
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..reps {
            run();
        }
        best = best.min(t.elapsed().as_secs_f64() / (reps * n) as f64 * 1e9);
    }
    best
}

fn main() {
    for (f, name) in [(Func::Exp, "exp"), (Func::Tanh, "tanh")] {
        for w in [10.0, 3.0] {
            for n in [4096usize, 1 << 20] {
                let xs: Vec<f64> = (0..n)
                    .map(|i| ((i as f64 * 0.618_033_988_749_895).fract() * 2.0 - 1.0) * w)
                    .collect();
                let xs32: Vec<f32> = xs.iter().map(|&x| x as f32).collect();
                let (mut ys, mut ys32) = (xs.clone(), xs32.clone());
                for level in levels() {
                    let t64 = time(
                        || apply_to_add_at(f, level, std::hint::black_box(&xs), &mut ys, None),
                        n,
                    );
                    let t32 = time(
                        || apply_at_f32(f, level, std::hint::black_box(&xs32), &mut ys32, None),
                        n,
                    );
                    let mut total = 0.0;
                    let ts = time(
                        || total += sum_of_at(f, level, std::hint::black_box(&xs), None),
                        n,
                    );
                    std::hint::black_box(total);
                    println!(
                        "{name} |x|<{w} n={n} {level:?}: f64 {t64:.3}  f32 {t32:.3}  Σ f64 {ts:.3} ns/elem"
                    );
                }
            }
        }
    }
    let xs: Vec<f64> = (0..4096)
        .map(|i| (i as f64 * 0.618_033_988_749_895).fract() + 0.5)
        .collect();
    let mut ys = vec![0.0; xs.len()];
    for level in levels() {
        let t = time(
            || div_to_at(level, std::hint::black_box(&xs), &mut ys, 3.7),
            xs.len(),
        );
        println!("x / d n=4096 {level:?}: f64 {t:.3} ns/elem");
    }
}
