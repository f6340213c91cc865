//! The template compiler: XML task templates to checked programs.

// Output goes through functions that handle a closed or full stream; the print macros
// panic on one.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod ast;
pub mod check;
pub mod codegen;
pub mod diag;
pub mod driver;
pub mod ir;
pub mod language;
pub mod lexer;
pub mod lower;
pub mod parallel;
pub mod parser;
pub mod schemas;
pub mod source;
pub mod timings;
pub mod xml;
