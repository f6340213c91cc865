//! The runtime's side of host calls: the async form of the machine's [`Host`] and the
//! host that really answers them ([`RunHost`]).

mod cost;
mod run;

pub use cost::{llm_tasks, priced, BudgetError, Unbudgeted};
pub use run::{relevant_subset, Choice, RunHost, NO_PROVIDER};

use std::sync::Mutex;
use tv_vm::host::{Host, HostReply, HostRequest, LlmRequest};

/// A host whose calls take time: providers, processes, files.
pub trait AsyncHost: Sync {
    fn call(&self, request: &HostRequest) -> impl std::future::Future<Output = HostReply> + Send;

    /// The model an LLM request goes to, as its usage is counted by (`byModel`): for a
    /// call that never got a reply naming one.
    fn model_of(&self, request: &LlmRequest) -> String {
        request.model.clone().unwrap_or_else(|| "unknown".into())
    }
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
