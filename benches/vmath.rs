//! The vector math kernels (`einsat::vmath`) against the C library's
//! scalar functions (what the JIT called per element before, and still
//! calls where a loop is not staged), on the same data in the same run:
//! 4096 values (in cache) per function, at every dispatch level this CPU
//! has, and JIT kernels of `gen(i:n) f(x[i])` for n = 2^16. Report the
//! ratios library/kernel with the CPU model (`lscpu`). `cargo bench
//! --bench vmath`.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use einsat::syntax::ast::Func;
use einsat::vmath::{apply_at, levels};
use einsat::Value;
use ndarray::Array1;

const FUNCS: [(Func, &str); 6] = [
    (Func::Exp, "exp"),
    (Func::Log, "log"),
    (Func::Sin, "sin"),
    (Func::Cos, "cos"),
    (Func::Tanh, "tanh"),
    (Func::Erf, "erf"),
];

/// Arguments in each function's usual range (positive for `log`).
fn data(f: Func, n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let t = (i as f64 * 0.618_033_988_749_895).fract();
            match f {
                Func::Log => 1e-3 + 1e3 * t,
                Func::Exp => -50.0 + 100.0 * t,
                Func::Erf => -4.0 + 8.0 * t,
                _ => -10.0 + 20.0 * t,
            }
        })
        .collect()
}

fn slices(c: &mut Criterion) {
    for (f, name) in FUNCS {
        let xs = data(f, 4096);
        let mut ys = xs.clone();
        let mut g = c.benchmark_group(format!("vmath {name} 4096"));
        g.throughput(Throughput::Elements(xs.len() as u64));
        g.bench_function("libm per element", |b| {
            b.iter(|| {
                for (y, x) in ys.iter_mut().zip(&xs) {
                    *y = f.apply(&[black_box(*x)]);
                }
            })
        });
        for level in levels() {
            g.bench_function(format!("{level:?}"), |b| {
                b.iter(|| {
                    ys.copy_from_slice(&xs);
                    apply_at(f, level, black_box(&mut ys));
                })
            });
        }
        g.finish();
    }
}

fn jit_maps(c: &mut Criterion) {
    for (f, name) in FUNCS {
        let src = format!("fn f(x: [n]R) -> [n]R = gen(i:n) {name}(x[i])");
        let p = einsat::load(&src).unwrap();
        let k = einsat::jit::compile(&p.functions[0]).unwrap();
        let x = Array1::from(data(f, 1 << 16)).into_dyn();
        let args = [Value::Array(x)];
        let mut out = k.call(&args).unwrap();
        let mut g = c.benchmark_group(format!("jit gen {name} 2^16"));
        g.throughput(Throughput::Elements(1 << 16));
        g.bench_function("einsat jit", |b| {
            b.iter(|| k.call_into(black_box(&args), &mut out).unwrap())
        });
        g.finish();
    }
}

criterion_group!(benches, slices, jit_maps);
criterion_main!(benches);
