//! The virtual machine: instruction set, bundles, verifier, interpreter, host calls.

pub mod args;
pub mod bundle;
#[cfg(feature = "runtime")]
pub mod cassette;
#[cfg(feature = "runtime")]
pub mod context;
pub mod disasm;
#[cfg(feature = "runtime")]
pub mod driver;
pub mod host;
mod hostcalls;
pub mod interp;
pub mod isa;
#[cfg(feature = "runtime")]
pub mod journal;
pub mod limits;
#[cfg(feature = "runtime")]
pub mod observe;
pub mod outcome;
#[cfg(feature = "runtime")]
pub mod providers;
pub mod result;
#[cfg(feature = "runtime")]
pub mod runhost;
#[cfg(feature = "runtime")]
pub mod script;
mod session;
pub mod shared;
pub mod subtask;
mod text;
pub mod verify;
mod wire;
