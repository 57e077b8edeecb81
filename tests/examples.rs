//! Every example program of the repository's `examples/` type-checks and
//! runs in the interpreter: the four programs of the language reference
//! (`notebook.tl`, `diderot.tl`, `loops.tl`, `records.tl`; see
//! `docs/language.md`) and the rest of `examples/*.tl`.

use einsat::testing::random_inputs;
use einsat::{interp, load};
use rand::SeedableRng;
use std::collections::BTreeMap;
use std::path::Path;

fn tl_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "tl"))
        .collect();
    v.sort();
    v
}

/// The example programs the language reference is about.
const REFERENCE_EXAMPLES: [&str; 4] = ["notebook.tl", "diderot.tl", "loops.tl", "records.tl"];

/// Type-checks `files` and runs every function of them in the interpreter
/// on random inputs (every size 5); returns the number of functions.
fn check_files(files: &[std::path::PathBuf]) -> usize {
    let mut count = 0;
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    for file in files {
        let src = std::fs::read_to_string(&file).unwrap();
        let prog = load(&src).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for f in &prog.functions {
            let sizes: BTreeMap<String, usize> =
                f.size_names().into_iter().map(|n| (n, 5)).collect();
            let args = random_inputs(f, &sizes, &mut rng).unwrap();
            interp::run(f, &args).unwrap_or_else(|e| panic!("{}: {}: {e}", file.display(), f.name));
            count += 1;
        }
    }
    count
}

#[test]
fn reference_examples_check_and_run() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let reference: Vec<_> = REFERENCE_EXAMPLES.iter().map(|f| dir.join(f)).collect();
    for f in &reference {
        assert!(f.is_file(), "{} is missing", f.display());
    }
    assert!(check_files(&reference) >= 20);
    // and every other example program of the repository
    assert!(check_files(&tl_files(&dir)) >= 20);
}
