//! The Rust builder API (seed 003 style): binders take closures.
