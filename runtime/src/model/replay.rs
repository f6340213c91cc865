//! Replies that were recorded: a cassette (`--provider replay`), or a test's replies
//! and cassettes (`tvm test`), which answer before any cassette of the run.

use super::echo::named;
use super::{CallError, Completion, Model};
use crate::cassette::Cassette;
use crate::host::Choice;
use crate::offline::Offline;
use tv_vm::host::{LlmReply, LlmRequest};

/// Answers from recorded replies, at no cost.
pub struct Replay {
    from: From,
    /// The run's model for tasks that name none: a cassette keys replies by the model
    /// they were asked of.
    default_model: Option<String>,
}

enum From {
    Cassette(Cassette),
    Test(Offline),
}

impl Replay {
    /// Answers from `cassette`.
    pub fn cassette(cassette: Cassette, default_model: Option<String>) -> Replay {
        Replay {
            from: From::Cassette(cassette),
            default_model,
        }
    }

    /// Answers from a test's replies and cassettes.
    pub(crate) fn test(offline: Offline, default_model: Option<String>) -> Replay {
        Replay {
            from: From::Test(offline),
            default_model,
        }
    }

    fn answer(&self, r: &LlmRequest) -> Result<LlmReply, CallError> {
        let asked = self.asked(r);
        match &self.from {
            From::Test(o) => o.answer(r, asked.as_deref()),
            // A replayed reply was paid for when it was recorded.
            From::Cassette(c) => c.answer(r, asked.as_deref()).map(|reply| LlmReply {
                cost: Some(0),
                cached: true,
                ..reply
            }),
        }
    }
}

impl Model for Replay {
    fn asked(&self, r: &LlmRequest) -> Option<String> {
        named(r, self.default_model.as_ref())
    }

    /// The model the task names, as written, else `replay`.
    fn reply_model(&self, r: &LlmRequest) -> String {
        r.model
            .clone()
            .unwrap_or_else(|| Choice::Replay.name().to_string())
    }

    fn complete<'a>(&'a self, r: &'a LlmRequest) -> Completion<'a> {
        let reply = self.answer(r).map(|mut reply| {
            if reply.model.is_empty() {
                reply.model = self.reply_model(r);
            }
            reply
        });
        Completion::ready(reply)
    }
}
