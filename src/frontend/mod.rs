//! Front ends that build IR without surface text: the Rust [`builder`] API
//! with scoped index binders, and [`einsum`] strings (plain and batched).

pub mod builder;
pub mod einsum;
