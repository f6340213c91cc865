//! The journal as a layer around a host: every call of the run goes through it, and is
//! answered from the journal when it holds the call (see [`Journal::call`]); every body
//! that completed is kept whole, and handed back whole when the run is resumed.

use super::{body_request, Journal};
use crate::host::{AsyncHost, BodyId, CallId};
use std::future::Future;
use tv_vm::host::{HostReply, HostRequest, LlmRequest};
use tv_vm::limits::Spending;
use tv_vm::result::{TaskError, TaskResult};

/// `host`'s calls, kept in `journal`.
pub struct Journaled<'a, H> {
    pub host: &'a H,
    pub journal: &'a Journal,
}

impl<H: AsyncHost> AsyncHost for Journaled<'_, H> {
    fn call(
        &self,
        at: CallId<'_>,
        request: &HostRequest,
    ) -> impl Future<Output = HostReply> + Send {
        self.journal.call(self.host, at, request)
    }

    fn model_of(&self, request: &LlmRequest) -> String {
        self.host.model_of(request)
    }

    fn keeps_places(&self) -> bool {
        true
    }

    fn kept_body(&self, body: BodyId<'_>) -> Option<(TaskResult, Spending)> {
        let request = body_request(body.function, body.args);
        self.journal.body(body.path, &request)
    }

    /// A body that COMPLETED is kept (a failed one runs again when the run is
    /// resumed); a journal that cannot keep it stops the body.
    async fn body_ended(
        &self,
        body: BodyId<'_>,
        result: TaskResult,
        spent: &Spending,
    ) -> TaskResult {
        if result.is_failed() {
            return result;
        }
        let request = body_request(body.function, body.args);
        match self
            .journal
            .body_ended(body.path, &request, &result, spent)
            .await
        {
            Ok(()) => result,
            Err(e) => TaskResult::failed(TaskError::failure(e.reason(), e.to_string())),
        }
    }
}
