//! Why a model call failed, as a value callers branch on: the kind of failure (an HTTP
//! status kept as a number, a field the server refused, a timeout, a budget that would
//! not hold the call, ...) beside the message a user reads. The message is the one the
//! run's result shows, already free of the API key; nothing branches on its words.

use std::fmt;
use tv_vm::host::HostError;
use tv_vm::result::{Reason, Resource};

/// A model call that did not give a reply.
#[derive(Clone, Debug, PartialEq)]
pub struct CallError {
    kind: CallKind,
    message: String,
}

/// What went wrong, for the code that decides what to do about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallKind {
    /// The server answered with an error status (redirects included).
    Status(u16),
    /// The server refused a field the request carried (`tools`, `response_format`, ...),
    /// under whatever status it chose: the feature is not there, and asking again in the
    /// same shape gets the same answer.
    Refused { field: &'static str, status: u16 },
    /// No reply within the request timeout.
    Timeout,
    /// The connection could not be made or was lost.
    Connection,
    /// The request could not be built (a header, a URL).
    Request,
    /// The reply passed `--max-reply-bytes`.
    TooLarge,
    /// A successful status with a body that is not JSON.
    NotJson,
    /// JSON without what the adapter needs (`choices[0].message`, ...).
    Malformed,
    /// The provider's queue of calls was closed: the run is ending.
    QueueClosed,
    /// A resource of the run would not hold the call (`--max-cost`): `used` of `limit`.
    Exhausted {
        resource: Resource,
        used: u64,
        limit: u64,
    },
    /// No provider, key or cassette is configured for the call: a usage error.
    Unconfigured,
    /// A cassette or a test's replies have no answer for the request.
    Unanswered,
    /// The reply came but could not be written to `--record`'s cassette.
    Recording,
    /// The batch's shared budget and cap could not be read from the NATS server.
    Shared,
}

impl CallError {
    pub fn new(kind: CallKind, message: impl Into<String>) -> CallError {
        CallError {
            kind,
            message: message.into(),
        }
    }

    /// A call refused before it was made because `resource` would not hold it: `used`
    /// (what the call would have brought the run to) of `limit`.
    pub fn exhausted(
        resource: Resource,
        message: impl Into<String>,
        used: u64,
        limit: u64,
    ) -> CallError {
        let kind = CallKind::Exhausted {
            resource,
            used,
            limit,
        };
        CallError::new(kind, message)
    }

    pub fn kind(&self) -> CallKind {
        self.kind
    }

    pub fn message(&self) -> &str {
        &self.message
    }

    /// The HTTP status the server answered with, when it answered with one.
    pub fn status(&self) -> Option<u16> {
        match self.kind {
            CallKind::Status(code) | CallKind::Refused { status: code, .. } => Some(code),
            _ => None,
        }
    }

    /// The request field the server refused, when that is why the call failed.
    pub(crate) fn refused_field(&self) -> Option<&'static str> {
        match self.kind {
            CallKind::Refused { field, .. } => Some(field),
            _ => None,
        }
    }

    /// The reason the task that made the call fails with.
    pub fn reason(&self) -> Reason {
        match self.kind {
            CallKind::Timeout => Reason::ExecutionTimeout,
            CallKind::Unconfigured
            | CallKind::Unanswered
            | CallKind::Recording
            | CallKind::Shared => Reason::ExecutionHalted,
            _ => Reason::UnexpectedError,
        }
    }

    /// The same failure with `text` after its message (what was tried, what to do).
    #[must_use]
    pub(crate) fn with_suffix(mut self, text: &str) -> CallError {
        self.message.push_str(text);
        self
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CallError {}

impl From<CallError> for HostError {
    fn from(e: CallError) -> HostError {
        match e.kind {
            CallKind::Exhausted {
                resource,
                used,
                limit,
            } => HostError::exhausted(resource, e.message, used, limit),
            _ => HostError::new(e.reason(), e.message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_field_keeps_the_status_it_came_with() {
        let e = CallError::new(
            CallKind::Refused {
                field: "tools",
                status: 500,
            },
            "openai: the server refused the request's `tools` field (HTTP 500 ...)",
        );
        assert_eq!(e.status(), Some(500));
        assert_eq!(e.refused_field(), Some("tools"));
        let plain = CallError::new(CallKind::Status(400), "openai: HTTP 400 Bad Request: tools");
        assert_eq!(
            plain.refused_field(),
            None,
            "words in a message decide nothing"
        );
    }

    #[test]
    fn each_kind_fails_its_task_with_the_reason_the_readme_gives() {
        let reason = |kind| HostError::from(CallError::new(kind, "m")).reason;
        assert_eq!(reason(CallKind::Timeout), Reason::ExecutionTimeout);
        for halted in [
            CallKind::Unconfigured,
            CallKind::Unanswered,
            CallKind::Recording,
            CallKind::Shared,
        ] {
            assert_eq!(reason(halted), Reason::ExecutionHalted, "{halted:?}");
        }
        for other in [
            CallKind::Status(401),
            CallKind::Malformed,
            CallKind::TooLarge,
        ] {
            assert_eq!(reason(other), Reason::UnexpectedError, "{other:?}");
        }
        let budget = HostError::from(CallError::new(
            CallKind::Exhausted {
                resource: Resource::Cost,
                used: 0,
                limit: 7,
            },
            "over budget",
        ));
        assert_eq!(
            budget.exhausted.map(|(r, m)| (r, m.limit)),
            Some((Resource::Cost, 7))
        );
        assert_eq!(budget.message, "over budget");
    }
}
