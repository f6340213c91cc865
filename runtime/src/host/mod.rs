//! The runtime's side of host calls: the async form of the machine's [`Host`] and the
//! host that really answers them ([`RunHost`]).

mod cost;
mod run;

pub use cost::{llm_tasks, Unbudgeted};
pub use run::{relevant_subset, Choice, RunHost, NO_PROVIDER};

use std::sync::Mutex;
use tv_vm::host::{Host, HostReply, HostRequest};

/// A host whose calls take time: providers, processes, files.
pub trait AsyncHost: Sync {
    fn call(&self, request: &HostRequest) -> impl std::future::Future<Output = HostReply> + Send;
}

/// Any synchronous [`Host`] (the echo host, scripted test hosts) as an async one.
pub struct Blocking<H>(pub Mutex<H>);

impl<H: Host + Send> AsyncHost for Blocking<H> {
    async fn call(&self, request: &HostRequest) -> HostReply {
        match self.0.lock() {
            Ok(mut h) => h.call(request),
            Err(poisoned) => poisoned.into_inner().call(request),
        }
    }
}
