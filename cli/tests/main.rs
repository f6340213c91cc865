//! The command line's tests, one binary: `tvc` and `tvm` as processes, on real files
//! and folders, against a real HTTP server on 127.0.0.1 and a real `nats-server`.

mod support;

mod help;
mod tvc;
mod tvm;
