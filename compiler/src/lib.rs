//! The template compiler: XML task templates to checked programs.

pub mod ast;
pub mod check;
pub mod diag;
pub mod driver;
pub mod lexer;
pub mod parser;
pub mod source;
pub mod xml;
