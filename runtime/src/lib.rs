//! The runtime: everything that touches the world on the machine's behalf. It answers
//! the host calls a `tv-vm` machine halts with (LLM providers, scripts, files and
//! context), drives runs to their end, keeps the journal and cassettes, and reports
//! progress. The `tvm` binary is its front end.

// Output goes through functions that handle a closed or full stream; the print macros
// panic on one.
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

mod backoff;
pub mod batch;
pub mod cache;
pub mod cassette;
pub mod config;
pub mod context;
mod digest;
mod driver;
pub mod files;
pub mod host;
pub mod journal;
pub mod ledger;
pub mod model;
pub mod nats;
pub mod observe;
mod offline;
pub mod prices;
pub mod providers;
pub mod resume;
mod run;
pub mod script;
pub mod testing;

// The surface is what `tvm`, the tests and the benchmarks use to run bundles against the
// world: the public modules above, each named by its path (`host` answers the machine's
// calls through `providers`, `model`, `script` and `context`; `cassette`, `cache`,
// `ledger` and `prices` record, reuse and price the calls; `config` holds a run's
// settings; `journal`, `resume`, `batch` and `nats` are what outlives a run; `observe`
// reports it; `testing` runs a workflow test; `files` holds the bounded reads `tvm`
// shares), and at the root what they use of the private modules: a run and what it
// ended with, the message of a run Ctrl-C stopped, the digest that names bundles and
// rows, and a test's written reply.
pub use digest::sha256_hex;
pub use driver::INTERRUPTED;
pub use offline::ReplyRule;
pub use run::{Ran, Run};
