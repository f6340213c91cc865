//! What `tvc` and `tvm` share: writing to streams that may be closed, and whether
//! diagnostics are coloured.

// Output goes through functions that handle a closed or full stream; the print macros
// panic on one.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod color;
pub mod output;
