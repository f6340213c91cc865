//! What the compiler and the VM share: value types, built-in function signatures and
//! model identifiers. Nothing here does I/O.

pub mod bounds;
pub mod builtins;
pub mod functions;
pub mod models;
pub mod reading;
pub mod templates;
pub mod text;
pub mod types;
pub mod values;
