//! Fuzz target: the whole pipeline on arbitrary well-typed programs. The
//! bytes choose a program and inputs (`einsat::testing::fuzz_pipeline`);
//! the interpreter, the optimiser + interpreter and the optimiser + JIT must
//! agree, and nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    einsat::testing::fuzz_pipeline(data);
});
