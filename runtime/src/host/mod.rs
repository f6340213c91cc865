//! The runtime's side of host calls: the async form of the machine's [`Host`] and the
//! host that really answers them ([`RunHost`]).

mod cost;
mod run;

pub use cost::{llm_tasks, priced, BudgetError, Unbudgeted};
pub use run::{relevant_subset, Choice, RunHost};

use serde_json::Value;
use std::fmt;
use std::future::{ready, Future};
use std::sync::Mutex;
use tv_vm::host::{Host, HostReply, HostRequest, LlmRequest};
use tv_vm::limits::Spending;
use tv_vm::result::TaskResult;

/// A host whose calls take time: providers, processes, files. A layer (the journal's
/// [`crate::journal::Journaled`]) is a host wrapping another.
pub trait AsyncHost: Sync {
    /// Answers `request`, the machine's call `at`.
    fn call(&self, at: CallId<'_>, request: &HostRequest)
        -> impl Future<Output = HostReply> + Send;

    /// The model an LLM request goes to, as its usage is counted by (`byModel`): for a
    /// call that never got a reply naming one.
    fn model_of(&self, request: &LlmRequest) -> String {
        request.model.clone().unwrap_or_else(|| "unknown".into())
    }

    /// Whether calls and bodies are to be told where in the run they come from: only
    /// a host that keeps them by place (a journal) needs it, and spelling places out
    /// costs a string for each machine. Without it every [`CallId::path`] is empty.
    fn keeps_places(&self) -> bool {
        false
    }

    /// The result and spending `body` ended with in an earlier run of the same work,
    /// when this host kept them: the body is then not run again.
    fn kept_body(&self, _body: BodyId<'_>) -> Option<(TaskResult, Spending)> {
        None
    }

    /// `body` ended with `result`, which the run goes on with: a host that keeps
    /// bodies keeps it here, and fails it when it cannot.
    fn body_ended(
        &self,
        _body: BodyId<'_>,
        result: TaskResult,
        _spent: &Spending,
    ) -> impl Future<Output = TaskResult> + Send {
        ready(result)
    }
}

/// Where a host call comes from: call `n` (from 1) of the machine at `path`, named as
/// [`crate::journal`] describes. Spelled out only by a host that keeps places.
#[derive(Clone, Copy, Debug)]
pub struct CallId<'a> {
    pub path: &'a str,
    pub n: u64,
}

impl fmt::Display for CallId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.path, self.n)
    }
}

/// A body of an iteration over a run-time list: the machine at `path` calling
/// `function` with `args`. Asked about only by a host that keeps places.
#[derive(Clone, Copy, Debug)]
pub struct BodyId<'a> {
    pub path: &'a str,
    pub function: u32,
    pub args: &'a [Value],
}

/// Any synchronous [`Host`] (the echo host, scripted test hosts) as an async one.
pub struct Blocking<H>(pub Mutex<H>);

impl<H: Host + Send> AsyncHost for Blocking<H> {
    async fn call(&self, _: CallId<'_>, request: &HostRequest) -> HostReply {
        match self.0.lock() {
            Ok(mut h) => h.call(request),
            Err(poisoned) => poisoned.into_inner().call(request),
        }
    }
}
