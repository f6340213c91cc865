//! `tvc` as a user runs it.

mod bounds;
mod cli;
mod threads;
mod watch;
