//! Optimisation time of every function of the example files
//! (`examples/*.tl` and the shared `../shared/examples/*.tl`), one
//! benchmark per function (`opt/FILE/NAME`). `einsat opt FILE --json` gives
//! the e-graph nodes, iterations, stop reason and time of one run.

use criterion::{criterion_group, criterion_main, Criterion};
use einsat::opt::{optimize, Options};

fn files() -> Vec<std::path::PathBuf> {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut out = Vec::new();
    for dir in [
        format!("{root}/examples"),
        format!("{root}/../shared/examples"),
        "/work/shared/examples".to_string(),
    ] {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut fs: Vec<_> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "tl"))
            .collect();
        fs.sort();
        out.extend(fs);
        if dir.ends_with("shared/examples") && !out.is_empty() {
            // the shared folder once, by whichever path reaches it first
            break;
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    for path in files() {
        let src = std::fs::read_to_string(&path).expect("example file");
        let prog = einsat::load(&src).expect("example parses");
        let file = path.file_stem().unwrap().to_string_lossy().to_string();
        let dir = path
            .parent()
            .and_then(|d| d.parent())
            .and_then(|d| d.file_name())
            .map(|d| d.to_string_lossy().to_string())
            .unwrap_or_default();
        for f in &prog.functions {
            c.bench_function(&format!("opt/{dir}/{file}/{}", f.name), |b| {
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
