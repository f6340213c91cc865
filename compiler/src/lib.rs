//! The template compiler: XML task templates to checked programs.

// Output goes through functions that handle a closed or full stream; the print macros
// panic on one.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod ast;
mod check;
mod codegen;
pub mod diag;
pub mod driver;
pub mod ir;
pub mod language;
mod lexer;
mod lower;
mod parallel;
mod parser;
pub mod schemas;
pub mod source;
pub mod timings;
pub mod xml;

// The surface is what `tvc`, `tvm` and the tests use: the public modules above, each
// named by its path (`driver` runs the stages, `ast`, `ir`, `schemas` and `xml` give
// the `tvc --emit` listings, `language` the language's table and schema, `diag` and
// `source` the diagnostics and where they point), and at the root what they use of
// the inner stages: one expression parsed alone, and the shell lexer that decides
// each script hole's quoting context (the quoting tests and fuzzers drive it).
pub use check::shell::{contexts, Lexer, Piece};
pub use parser::parse_standalone;
