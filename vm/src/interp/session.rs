//! The machine's side of subtask spawning: a reply that asks for a subtask pushes a
//! frame for the chosen template; when it returns, the parent session continues with
//! the subtask's whole TaskResult, as JSON, in a new user message.
//!
//! A failed subtask (DESIGN §19): a TASK_FAILURE is a result like any other, so the
//! parent gets it as JSON (`notes.error` included) and may react, by retrying another
//! way or by answering without it. A RESOURCE_EXHAUSTION, found at the root of the
//! failure (a subtask's own or one it was given by a subtask of its own), fails the
//! parent with `subtask_failure`: depth, turns, memory and the like are shared by the
//! whole chain, and a parent that tried again would only use more of them. A request
//! that cannot be spawned (no template, invalid inputs or settings, depth, a cycle)
//! fails the session that made it with `subtask_failure`, which its own parent, if it
//! is a subtask too, then receives by the rule above.

use super::subtask::{self, failure};
use crate::host::{LlmReply, Message};
use crate::interp::{Fault, Session, Spawn, Step, SubtaskScope, Vm};
use crate::outcome::with_criteria;
use crate::result::{exhausted, is_failed, task_failure};
use serde_json::Value;
use std::sync::Arc;
use tv_stdlib::values::parse_json_text;

impl Vm<'_> {
    /// Subtasks on the stack now.
    fn subtask_depth(&self) -> usize {
        self.subtask_offset + self.frames.iter().filter(|f| f.spawned.is_some()).count()
    }

    /// `Ok(true)` when the reply asked for a subtask and its frame is running.
    pub(crate) fn continuation(
        &mut self,
        mut session: Session,
        reply: &LlmReply,
    ) -> Result<bool, Value> {
        // A JSON continuation names its status; other replies are not parsed at all.
        let parsed = if reply.content.contains("CONTINUATION") || reply.content.contains("\\u") {
            parse_json_text(&reply.content).ok()
        } else {
            None
        };
        let Some(request) = subtask::request_in(reply.subtask_request.as_ref(), parsed.as_ref())
        else {
            return Ok(false);
        };
        let depth = self.subtask_depth() + 1;
        // `error` is a failed result; the request's failure carries its TaskError.
        let fail = |error: Value| {
            let error = error.pointer("/notes/error").cloned().unwrap_or(error);
            failure(&request, error, depth - 1, &reply.content)
        };
        let overrides = subtask::validate(&request)
            .and_then(|()| subtask::overrides(&request))
            .map_err(|e| fail(task_failure("input_validation_failure", e, Value::Null)))?;
        let limit = request
            .get("max_depth")
            .and_then(Value::as_u64)
            .map_or(self.limits.subtask_depth, |m| {
                (m as usize).min(self.limits.subtask_depth)
            });
        if depth > limit {
            let msg = format!("subtasks nested deeper than {limit}");
            return Err(fail(exhausted("depth", msg, depth as u64, limit as u64)));
        }
        let function = subtask::select(self.bundle, &request)
            .map_err(|e| fail(task_failure("context_matching_failure", e, Value::Null)))?;
        let inputs = request.get("inputs").cloned().unwrap_or(Value::Null);
        let args = subtask::arguments(self.bundle, function, &inputs)
            .map_err(|e| fail(task_failure("input_validation_failure", e, Value::Null)))?;
        // The run's entry counts too: it is on the stack with its arguments, though no
        // request spawned it.
        let entry = (self.depth_offset == 0)
            .then(|| self.frames.first())
            .flatten()
            .filter(|f| f.function == function as usize && f.spawned.is_none())
            .is_some_and(|f| f.locals.get(..args.len()) == Some(&args[..]));
        let cycle = entry
            || self
                .frames
                .iter()
                .filter_map(|f| f.spawned.as_ref().map(|s| (f.function, s)))
                .any(|(f, s)| f == function as usize && s.inputs == inputs);
        if cycle {
            let name = self
                .bundle
                .functions
                .get(function as usize)
                .map_or("?", |f| f.name.as_str());
            let msg =
                format!("cycle: `{name}` is already running as a subtask with the same inputs");
            return Err(fail(task_failure("subtask_failure", msg, Value::Null)));
        }
        self.push_frame(function as usize, args).map_err(fail)?;
        // A tool call may come with no text; the conversation still needs the turn
        // (some providers refuse an empty assistant message), so it is written out.
        let said = if reply.content.trim().is_empty() {
            serde_json::json!({"status": "CONTINUATION", "subtask_request": request}).to_string()
        } else {
            reply.content.clone()
        };
        Arc::make_mut(&mut session.messages).push(Message {
            role: "assistant".into(),
            content: said,
        });
        if let Some(frame) = self.frames.last_mut() {
            // The subtask's frame, and every frame and branch under it, run with these.
            frame.scope = Some(Arc::new(SubtaskScope {
                overrides,
                parent_context: session.context.clone(),
            }));
            frame.spawned = Some(Box::new(Spawn {
                session,
                request,
                inputs,
                depth,
            }));
        }
        Ok(true)
    }

    /// The parent session goes on with the subtask's result, or fails with it.
    pub(crate) fn subtask_returned(
        &mut self,
        spawn: Spawn,
        result: Value,
    ) -> Result<Option<Step>, Fault> {
        let Spawn {
            mut session,
            request,
            depth,
            ..
        } = spawn;
        if is_failed(&result) && exhausted_at_root(&result) {
            let error = result
                .pointer("/notes/error")
                .cloned()
                .unwrap_or(Value::Null);
            let partial = session
                .messages
                .last()
                .map(|m| m.content.clone())
                .unwrap_or_default();
            let failed = failure(&request, error, depth - 1, &partial);
            let failed = match self.bundle.tasks.get(session.task as usize) {
                Some(meta) => with_criteria(failed, meta),
                None => failed,
            };
            self.stack.push(failed);
            return Ok(None);
        }
        let content = format!("Subtask result:\n{result}");
        self.charge(content.len() as u64)?;
        Arc::make_mut(&mut session.messages).push(Message {
            role: "user".into(),
            content,
        });
        self.ask(session).map(Some)
    }
}

/// Whether a failure comes from a RESOURCE_EXHAUSTION: its own error, or the error a
/// subtask it spawned failed with, however deep.
fn exhausted_at_root(result: &Value) -> bool {
    let mut error = result.pointer("/notes/error");
    while let Some(e) = error {
        if e.get("type").and_then(Value::as_str) == Some("RESOURCE_EXHAUSTION") {
            return true;
        }
        error = e.pointer("/details/subtaskError");
    }
    false
}
