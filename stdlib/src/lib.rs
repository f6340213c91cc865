//! What the compiler and the VM share: value types, built-in function signatures and
//! model identifiers. Nothing here does I/O.

#![warn(missing_docs)]

pub mod bounds;
pub mod builtins;
mod functions;
pub mod models;
mod reading;
pub mod templates;
pub mod text;
pub mod types;
pub mod values;

// The surface is what the compiler, the machine and the runtime share: the public
// modules above, each named by its path (`tv_stdlib::types::Type`), and at the root the
// names most of them use: the type of a value, the built-ins by index, the providers,
// and how a model's reply is read as JSON.
pub use builtins::{Builtin, BuiltinError, BUILTINS};
pub use models::Provider;
pub use types::Type;
pub use values::parse_json_text;
