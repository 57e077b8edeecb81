//! The integration tests, one module per subject, in one test binary: one
//! crate to compile and link instead of one per file, and one harness that
//! runs every test on all cores (a long property test no longer runs alone
//! while the other core idles). A module that needs a feature says so
//! (`#![cfg(feature = ...)]`) and is empty without it.
//!
//! Four files stay binaries of their own, because they need a process to
//! themselves: `alloc.rs`, `oom.rs` and `compile_memory.rs` install a
//! counting global allocator, and `jit_exec.rs` clears and counts the
//! process-wide kernel cache.
//!
//! Run one module with `cargo test --release --test suite MODULE::`.

#[path = "../common/mod.rs"]
mod common;

mod algebra;
mod architecture;
mod args;
mod attention;
mod builder_scope;
mod cancel;
mod cli;
mod codegen_snapshot;
mod columns;
mod complex_gemm;
mod dd_domain;
mod dense;
mod dense_pack;
mod difftest;
mod erf;
mod errors;
mod examples;
mod extraction;
mod f32;
mod f32_fused;
mod f32_tiles;
mod fold;
mod fp_contract;
mod fresh_result;
mod frontend;
mod fused_reductions;
mod fuzz_regressions;
mod gather;
mod gather_formats;
mod gemm;
mod gemm_deferred;
mod gemm_epilogue;
mod gemm_small;
mod gemm_threads;
mod ints;
mod jit;
mod limits;
mod long_sums;
mod newcomer_api;
mod notebook;
mod opt;
mod parse_errors;
mod pow;
mod props;
mod quotient;
mod records;
mod reductions;
mod robustness;
mod row_groups;
mod rule_load;
mod staging;
mod stencil;
mod testing_support;
mod tiling;
mod tn_gemm;
mod typed_einsum;
mod typed_kernel;
mod values;
mod vmath;
mod vmath_f32;
