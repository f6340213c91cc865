//! What the command line's tests share: running `tvm` (`bin`), and the workspace's test
//! support (`tv-test-support`): folders, a scripted HTTP server, a `nats-server` of their
//! own and OpenAI's published API description.

pub(crate) mod bin;
pub(crate) use tv_test_support::{http, nats, openapi, temp};

/// The bundles, programs, folders and waits the tests that run `tvm` use, with running it.
pub(crate) mod files {
    pub(crate) use super::bin::{run_tvm, tvm, within_deadline};
    pub(crate) use tv_test_support::files::*;
}
