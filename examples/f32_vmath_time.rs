//! Times the `f32` exp/tanh slice kernels at each level (in cache: 4096
//! values; out of cache: 2^20), ns per element. `cargo run --release
//! --example f32_vmath_time`.
use einsat::syntax::ast::Func;
use einsat::vmath::{apply_at_f32, levels};
use std::time::Instant;

fn main() {
    for (f, name) in [(Func::Exp, "exp"), (Func::Tanh, "tanh")] {
        for n in [4096usize, 1 << 20] {
            let xs: Vec<f32> = (0..n)
                .map(|i| (i as f64 * 0.618_033_988_749_895).fract() as f32 * 20.0 - 10.0)
                .collect();
            let mut ys = vec![0.0f32; n];
            for level in levels() {
                let reps = (1 << 24) / n;
                let mut best = f64::INFINITY;
                for _ in 0..5 {
                    let t = Instant::now();
                    for _ in 0..reps {
                        apply_at_f32(f, level, std::hint::black_box(&xs), &mut ys, None);
                    }
                    best = best.min(t.elapsed().as_secs_f64() / (reps * n) as f64 * 1e9);
                }
                println!("{name} n={n} {level:?}: {best:.3} ns/elem");
            }
        }
    }
}
