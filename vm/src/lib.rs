//! The pure machine: instruction set, bundles and their verifier, the interpreter, and
//! the boundary it halts at for host calls. Nothing here touches the world: no files,
//! processes, network or clock; the `tv-runtime` crate answers the host calls.

#![warn(missing_docs)]

mod accumulate;
pub mod args;
pub mod bundle;
pub mod disasm;
pub mod host;
pub mod interp;
pub mod isa;
pub mod limits;
mod outcome;
pub mod result;
mod shared;
mod shell;
mod usage;

// The surface is what the runtime, the compiler and the tools use to load, check and run
// bundles: the public modules above, each named by its path (`tv_vm::bundle::Verified`),
// and at the root what they use of the machine's inner modules: how a script command
// quotes a value (the compiler's and the fuzzers' checks of its contexts), and how an
// LLM reply becomes a task's result (the validation benchmark).
pub use outcome::llm_result;
pub use shell::{shell_quote, shell_quote_in};
