//! The parser fuzz target's body over the kept corpus (fuzz/regressions/:
//! inputs that once crashed or nearly did) and over every example.
#![cfg(feature = "testing")] // uses the testing support

use std::path::Path;

#[test]
fn fuzz_corpus_and_examples_do_not_crash() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut n = 0;
    for dir in ["fuzz/regressions", "examples"] {
        for entry in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = entry.unwrap().path();
            if p.extension().is_some_and(|e| e == "tl") {
                let bytes = std::fs::read(&p).unwrap();
                if let Ok(src) = std::str::from_utf8(&bytes) {
                    einsat::testing::fuzz_parse(src);
                    n += 1;
                }
            }
        }
    }
    assert!(n >= 12, "only {n} inputs");
}
