//! Fuzz target: the parser and type checker on arbitrary bytes. Any input
//! must give a program or diagnostics, never a panic; a program that checks
//! must print and parse back to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(src) = std::str::from_utf8(data) {
        einsat::testing::fuzz_parse(src);
    }
});
