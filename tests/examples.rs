//! Every shared example (`../shared/examples/*.tl`, copied into examples/)
//! and our own examples type-check and run in the interpreter.

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

fn check_dir(dir: &Path) -> usize {
    let mut count = 0;
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    for file in tl_files(dir) {
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
fn shared_examples_check_and_run() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/examples");
    assert!(
        dir.is_dir(),
        "../shared/examples is beside the project root"
    );
    assert!(check_dir(&dir) >= 20);
    // our copies are always there
    let ours = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    assert!(check_dir(&ours) >= 20);
}
