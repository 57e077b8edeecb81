//! Optimisation time of the example functions.

use criterion::{criterion_group, criterion_main, Criterion};
use einsat::opt::{optimize, Options};

fn bench(c: &mut Criterion) {
    for file in ["notebook.tl", "diderot.tl", "loops.tl", "records.tl"] {
        let path = format!("{}/../shared/examples/{file}", env!("CARGO_MANIFEST_DIR"));
        let src = std::fs::read_to_string(&path)
            .or_else(|_| std::fs::read_to_string(format!("/work/shared/examples/{file}")))
            .expect("example file");
        let prog = einsat::load(&src).expect("example parses");
        for f in &prog.functions {
            c.bench_function(&format!("opt/{}", f.name), |b| {
                b.iter(|| optimize(f, &Options::default()).unwrap())
            });
        }
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = bench
}
criterion_main!(benches);
