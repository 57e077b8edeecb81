//! numpy-style einsum strings to functions of the language.
