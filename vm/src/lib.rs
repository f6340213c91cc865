//! The pure machine: instruction set, bundles and their verifier, the interpreter, and
//! the boundary it halts at for host calls. Nothing here touches the world: no files,
//! processes, network or clock; the `tv-runtime` crate answers the host calls.

pub mod accumulate;
pub mod args;
pub mod bundle;
pub mod disasm;
pub mod host;
pub mod interp;
pub mod isa;
pub mod limits;
pub mod outcome;
pub mod result;
pub mod shared;
pub mod shell;
pub mod usage;
