//! The runtime: everything that touches the world on the machine's behalf. It answers
//! the host calls a `tv-vm` machine halts with (LLM providers, scripts, files and
//! context), drives runs to their end, keeps the journal and cassettes, and reports
//! progress. The `tvm` binary is its front end.

// Output goes through functions that handle a closed or full stream; the print macros
// panic on one.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod backoff;
pub mod batch;
pub mod cache;
pub mod cassette;
pub mod config;
pub mod context;
pub mod digest;
pub mod driver;
pub mod files;
pub mod host;
pub mod journal;
pub mod ledger;
pub mod model;
pub mod nats;
pub mod observe;
pub mod offline;
pub mod prices;
pub mod providers;
pub mod resume;
mod run;
pub mod script;
pub mod testing;

pub use run::{Ran, Run};
