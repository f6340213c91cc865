//! What the command line's tests share: running `tvm` (`bin`), and the workspace's test
//! support (`tv-test-support`): folders, a scripted HTTP server, a `nats-server` of their
//! own and OpenAI's published API description.

pub mod bin;
pub use tv_test_support::{http, nats, openapi, temp};

/// The bundles, programs, folders and waits the tests that run `tvm` use, with running it.
pub mod files {
    pub use super::bin::{run_tvm, tvm, within_deadline};
    pub use tv_test_support::files::*;
}
