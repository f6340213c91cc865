//! What `tvc` and `tvm` share: writing to streams that may be closed, whether
//! diagnostics are coloured, the one reader of the process environment, and the
//! libraries' warnings printed as lines.

// Output goes through functions that handle a closed or full stream; the print macros
// panic on one.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod color;
pub mod env;
pub mod log;
pub mod output;
