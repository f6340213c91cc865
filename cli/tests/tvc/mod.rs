//! `tvc` as a user runs it.

mod bounds;
mod cli;
mod outlines;
mod threads;
mod watch;
