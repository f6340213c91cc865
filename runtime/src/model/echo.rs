//! The echo provider: answers with what would be sent (a dry run), at no cost.

use super::{CallError, Completion, Model};
use crate::host::Choice;
use tv_stdlib::models::parse_model;
use tv_vm::host::{LlmReply, LlmRequest};

/// Answers every request with its prompt (see [`tv_vm::host::echo`]).
#[derive(Clone, Debug, Default)]
pub struct Echo {
    /// The run's model for tasks that name none (`--model`, `TVM_MODEL`): what a
    /// recording made of a dry run keys its replies by.
    pub default_model: Option<String>,
}

impl Model for Echo {
    fn asked(&self, r: &LlmRequest) -> Option<String> {
        named(r, self.default_model.as_ref())
    }

    fn reply_model(&self, _: &LlmRequest) -> String {
        Choice::Echo.name().to_string()
    }

    fn complete<'a>(&'a self, r: &'a LlmRequest) -> Completion<'a> {
        Completion::ready(Ok::<_, CallError>(LlmReply {
            // A dry run costs nothing.
            cost: Some(0),
            model: self.reply_model(r),
            ..tv_vm::host::echo(r)
        }))
    }
}

/// The model `r` names, else `default`, without its `provider:` prefix.
pub(super) fn named(r: &LlmRequest, default: Option<&String>) -> Option<String> {
    let m = r.model.as_ref().or(default)?;
    parse_model(m).ok().map(|m| m.name)
}
