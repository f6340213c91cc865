//! What the command line's tests share: running `tvm` on bundles and folders, a
//! `nats-server` of their own, and, from the runtime's tests, folders, a scripted HTTP
//! server and OpenAI's published API description.

pub mod files;
#[path = "../../../runtime/tests/support/http.rs"]
pub mod http;
pub mod nats;
#[path = "../../../runtime/tests/support/openapi.rs"]
pub mod openapi;
#[path = "../../../runtime/tests/support/temp.rs"]
pub mod temp;
