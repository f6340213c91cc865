//! The whole tool chain's tests, one binary: fixtures through every stage, bundles as
//! files, programs run through deterministic hosts and through the OpenAI adapter
//! against a real HTTP server on 127.0.0.1, limits, faults, property tests, and the XML
//! Schema of `tvc schema` against every example and fixture.

// The scripted HTTP server (`tv-test-support`).
use tv_test_support::http;

mod bundles;
mod concurrency;
mod end_to_end;
mod execution;
mod faults;
mod fixtures;
mod fuzz_vm;
mod limits;
mod reask;
mod requests;
mod robustness;
mod runs;
mod shell_quoting;
mod subtask_context;
mod subtasks;
mod xsd;
