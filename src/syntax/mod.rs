//! Syntax: the IR ([`ast`]), the parser from surface text ([`parser`]) and
//! the printer back to it ([`printer`]). `parse(print(p)) == p`.

pub mod ast;
mod fold;
pub mod parser;
pub mod printer;
pub use fold::fold_index_values;

pub use ast::*;
pub use parser::{
    parse_expr, parse_program, parse_program_partial, parse_type, FunctionSpans, Parsed, SpanTree,
};
pub use printer::{print_expr, print_function, print_program, print_type};
