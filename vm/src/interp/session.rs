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
use crate::interp::{Attempts, Fault, Step, Vm};
use crate::outcome::with_criteria;
use crate::result::{is_failed, ErrorKind, Reason, Resource, Status, TaskError, TaskResult};
use crate::shared::SharedText;
use crate::usage::Spent;
use serde_json::Value;
use std::sync::Arc;
use tv_stdlib::values::parse_json_text;

/// Why a reply with the status CONTINUATION and no `subtask_request` fails its task.
const NO_REQUEST: &str = "the reply's status is CONTINUATION but it holds no \
     `subtask_request` (an object with `type`, `description` and `inputs`), so there is \
     no subtask to run and no answer";

/// One handler session: the conversation of an atomic task so far.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    pub(crate) task: u32,
    pub(crate) system: String,
    pub(crate) context: SharedText,
    pub(crate) messages: Arc<Vec<Message>>,
    /// The fresh-context query `context_relevance` chose, if any.
    pub(crate) query: Option<String>,
    /// Set when the session runs inside a spawned subtask.
    pub(crate) spawned: Option<RunsAs>,
    /// Its replies so far that were read as its output format, for re-asks.
    pub(crate) attempts: Attempts,
    /// What the machine had spent when the session began: its result's usage is what
    /// was spent since.
    pub(crate) start: Spent,
}

/// What the atomic tasks of a spawned subtask run with (DESIGN §19): the request's
/// `context_management` and `file_paths`, and the context of the session that asked.
#[derive(Debug)]
pub(crate) struct SubtaskScope {
    pub(crate) overrides: subtask::Overrides,
    pub(crate) parent_context: SharedText,
}

/// An atomic task as it runs inside a spawned subtask: with the request's settings
/// merged over the template's, and the files the request named.
#[derive(Debug, Clone)]
pub(crate) struct RunsAs {
    pub(crate) task: Arc<crate::bundle::TaskMeta>,
    pub(crate) files: Arc<Vec<String>>,
}

/// A subtask in progress and the session that asked for it.
#[derive(Debug)]
pub(crate) struct Spawn {
    pub(crate) session: Session,
    pub(crate) request: Value,
    pub(crate) inputs: Value,
    pub(crate) depth: usize,
}

impl Vm<'_> {
    /// Subtasks on the stack now.
    fn subtask_depth(&self) -> usize {
        self.subtask_offset + self.frames.iter().filter(|f| f.spawned.is_some()).count()
    }

    /// `Ok(None)` when the reply asked for a subtask and its frame is running (the
    /// session waits in it); the session back when the reply asked for none.
    pub(crate) fn continuation(
        &mut self,
        mut session: Session,
        reply: &LlmReply,
    ) -> Result<Option<Session>, Box<TaskResult>> {
        // A JSON continuation names its status; other replies are not parsed at all.
        let parsed = if reply.content.contains("CONTINUATION") || reply.content.contains("\\u") {
            parse_json_text(&reply.content).ok()
        } else {
            None
        };
        let depth = self.subtask_depth() + 1;
        let Some(request) = subtask::request_in(reply.subtask_request.as_ref(), parsed.as_ref())
        else {
            // A reply that says CONTINUATION asks to go on with a subtask: without a
            // request there is none to run, and its text is no answer either.
            if parsed.as_ref().and_then(Status::of) == Some(Status::Continuation) {
                let e = TaskError::failure(Reason::InputValidationFailure, NO_REQUEST);
                let f = failure(&Value::Null, e.into(), depth - 1, &reply.content);
                return Err(Box::new(f));
            }
            return Ok(Some(session));
        };
        // The request's failure carries the error the spawn met.
        let fail =
            |error: TaskError| Box::new(failure(&request, error.into(), depth - 1, &reply.content));
        let invalid = |e: String| fail(TaskError::failure(Reason::InputValidationFailure, e));
        let overrides = subtask::validate(&request)
            .and_then(|()| subtask::overrides(&request))
            .map_err(invalid)?;
        let limit = request
            .get("max_depth")
            .and_then(Value::as_u64)
            .map_or(self.limits.subtask_depth, |m| {
                (m as usize).min(self.limits.subtask_depth)
            });
        if depth > limit {
            let msg = format!("subtasks nested deeper than {limit}");
            let deep = TaskError::exhausted(Resource::Depth, msg, depth as u64, limit as u64);
            return Err(fail(deep));
        }
        let function = subtask::select(self.bundle, &request)
            .map_err(|e| fail(TaskError::failure(Reason::ContextMatchingFailure, e)))?;
        let inputs = request.get("inputs").cloned().unwrap_or(Value::Null);
        let args = subtask::arguments(self.bundle, function, &inputs).map_err(invalid)?;
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
            return Err(fail(TaskError::failure(Reason::SubtaskFailure, msg)));
        }
        self.push_frame(function as usize, args)
            .map_err(|e| fail(*e))?;
        // A tool call may come with no text; the conversation still needs the turn
        // (some providers refuse an empty assistant message), so it is written out.
        let said = if reply.content.trim().is_empty() {
            serde_json::json!({"status": Status::Continuation, "subtask_request": request})
                .to_string()
        } else {
            reply.content.clone()
        };
        Arc::make_mut(&mut session.messages).push(Message::assistant(said));
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
        Ok(None)
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
            let mut failed = failure(&request, error, depth - 1, &partial);
            if let Some(meta) = self.bundle.tasks.get(session.task as usize) {
                with_criteria(&mut failed, meta);
            }
            self.stack.push(failed.into());
            return Ok(None);
        }
        // Billing and cache notes stay out: a replayed or cached subtask would make a
        // different follow-up turn than the live one it replays.
        let content = format!("Subtask result:\n{}", crate::result::for_model(&result));
        self.charge(content.len() as u64)?;
        Arc::make_mut(&mut session.messages).push(Message::user(content));
        self.ask(session).map(Some)
    }
}

/// Whether a failure comes from a RESOURCE_EXHAUSTION: its own error, or the error a
/// subtask it spawned failed with, however deep.
fn exhausted_at_root(result: &Value) -> bool {
    let mut error = result.pointer("/notes/error");
    while let Some(e) = error {
        if let Some(ErrorKind::ResourceExhaustion { .. }) = ErrorKind::of(e) {
            return true;
        }
        error = e.pointer("/details/subtaskError");
    }
    false
}
