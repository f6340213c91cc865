//! What the workspace's tests and benchmarks share, so that each is written once: a
//! folder per test (`temp`), a scripted HTTP server speaking the providers' wire format
//! (`http`), a real `nats-server -js` (`nats`), OpenAI's published API description as the
//! judge of request bodies (`openapi`), and, with the `compiler` feature, what the command
//! line's tests run `tvm` on (`files`) and the benchmarks' generated programs
//! (`workloads`), with the benchmarks' keep-alive server (`loopback`) and their measuring
//! children (`child`).
//!
//! A dev-dependency only: nothing here ships.

pub mod child;
#[cfg(feature = "compiler")]
pub mod files;
pub mod http;
pub mod loopback;
pub mod nats;
pub mod openapi;
pub mod temp;
#[cfg(feature = "compiler")]
pub mod workloads;
