//! The runtime's integration tests, one binary: the providers against a real HTTP server
//! on 127.0.0.1, scripts as real processes, files in real folders. `tvm` as a process is
//! tested by the command line's tests (`cli/tests`).

mod support;

mod context;
mod context_bounds;
mod context_race;
mod providers;
mod scripts;
