//! Optimisation time of every function of the example files
//! (`examples/*.tl`), one benchmark per function (`opt/FILE/NAME`).
//! `einsat opt FILE --json` gives the e-graph nodes, iterations, stop
//! reason and time of one run.

use criterion::{criterion_group, criterion_main, Criterion};
use einsat::opt::{optimize, Options};

fn files() -> Vec<std::path::PathBuf> {
    let dir = format!("{}/examples", env!("CARGO_MANIFEST_DIR"));
    let rd = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{dir}: {e}"));
    let mut fs: Vec<_> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "tl"))
        .collect();
    fs.sort();
    fs
}

fn bench(c: &mut Criterion) {
    for path in files() {
        let src = std::fs::read_to_string(&path).expect("example file");
        let prog = einsat::load(&src).expect("example parses");
        let file = path.file_stem().unwrap().to_string_lossy().to_string();
        for f in &prog.functions {
            c.bench_function(&format!("opt/{file}/{}", f.name), |b| {
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
