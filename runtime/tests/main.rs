//! The runtime's integration tests, one binary: `tvm` as a process, the providers against
//! a real HTTP server on 127.0.0.1, scripts as real processes, files in real folders.

mod support;

mod batch;
mod batch_continue;
mod batch_resume;
mod batch_state;
mod cache;
mod cli;
mod cli_bounds;
mod context;
mod context_bounds;
mod context_race;
mod context_secrets;
mod cost;
mod dotenv;
mod each;
mod edit_loop;
mod file_kinds;
mod first_run;
mod journal;
mod json_mode;
mod key_handover;
mod map_resume;
mod planted;
mod process_bounds;
mod providers;
mod recording;
mod scripts;
mod secrets;
mod test_command;
mod workers;
mod workers_auth;
mod workers_untrusted;
