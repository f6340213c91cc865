//! What a task result is: [`TaskResult`], its [`Status`], its [`Notes`] and the
//! [`TaskError`] a failed one carries, with every failure [`Reason`] and exhausted
//! [`Resource`] as an enum. Their serde attributes are the JSON of DESIGN §7, key
//! for key and in the order `tvm run` prints them; nothing here builds a result from
//! what happened (the machine's `outcome` module does, as it runs).
//!
//! Inside the machine a result is also a value: templates read `r.content`,
//! `r.status` or `r.notes.x` of a step's result, so the operand stack holds results
//! as JSON. [`Value::from`] turns a typed result into that form (moving its parts,
//! since it runs on every LLM step) and [`TaskResult::try_from`] reads one back where
//! it leaves the machine. The few functions at the end read and extend results in
//! that value form.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// How a task ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Status {
    /// It did what it was for.
    Complete,
    /// It failed: `notes.error` says why.
    Failed,
    /// A model's reply asking for a subtask; the machine runs it and goes on, so no
    /// result it returns has this status.
    Continuation,
}

impl Status {
    /// The status of a result in its value form, if it has a known one.
    pub fn of(r: &Value) -> Option<Status> {
        r.get("status").and_then(|s| Status::deserialize(s).ok())
    }
}

/// A task's result (DESIGN §7). Keys are printed in this order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    /// How it ended.
    pub status: Status,
    /// The reply or value as text.
    pub content: String,
    /// The error of a failed one, and what else the run notes about it.
    pub notes: Notes,
    /// The parsed reply or value; a `null` that was parsed stays `Some(Value::Null)`.
    #[serde(
        rename = "parsedContent",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    pub parsed_content: Option<Value>,
    /// The task's `<criteria>`, copied in (DESIGN §19).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub criteria: Option<String>,
}

/// A result's notes: the error of a failed one, first, then every other note in the
/// order it was added (tokens, files, warnings, script output, loop notes, usage).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Notes {
    /// Boxed: most results have none, and results and faults are moved about often.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Box<TaskError>>,
    /// Every other note, by key.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// Why a task failed: a TASK_FAILURE with its reason and `details`, or a
/// RESOURCE_EXHAUSTION with its resource and `metrics`. The constructors set the one
/// that belongs to the kind.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskError {
    /// A failure and its reason, or an exhaustion and its resource.
    #[serde(flatten)]
    pub kind: ErrorKind,
    /// What happened, as a sentence.
    pub message: String,
    /// What a failure knows besides its message, as an object: a mismatch's `path`,
    /// `expected` and `actual`, a script's `exitCode`, a failed step's error, ...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    /// How much of the resource an exhaustion used, of what limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Metrics>,
}

/// The `type` of a [`TaskError`] with the field that goes with it. (Struct variants:
/// serde writes an internally tagged variant's fields beside the tag, which a bare
/// `TaskFailure(Reason)` could not give.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum ErrorKind {
    /// The task could not do what it was for.
    #[serde(rename = "TASK_FAILURE")]
    TaskFailure {
        /// Why.
        reason: Reason,
    },
    /// Something ran out: a limit of the run, or a reply's output limit.
    #[serde(rename = "RESOURCE_EXHAUSTION")]
    ResourceExhaustion {
        /// What it ran out of.
        resource: Resource,
    },
}

impl ErrorKind {
    /// The kind of an error in its value form (`notes.error` of a result).
    pub fn of(error: &Value) -> Option<ErrorKind> {
        ErrorKind::deserialize(error).ok()
    }

    /// The reason a failure that contains this one passes on: a resource has none, so
    /// a step that ran out of one makes its sequence an `unexpected_error`.
    pub fn reason(self) -> Reason {
        match self {
            ErrorKind::TaskFailure { reason } => reason,
            ErrorKind::ResourceExhaustion { .. } => Reason::UnexpectedError,
        }
    }
}

/// The seeds' TaskFailureReason, and `max_iterations_reached` (DESIGN §6). README's
/// "Failure reasons" says when `tvm` reports each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// A file of the context could not be had: a `file_paths` command failed, or a
    /// required file could not be read.
    ContextRetrievalFailure,
    /// No template matches a subtask request.
    ContextMatchingFailure,
    /// Never reported at run time: a bundle is never reparsed.
    ContextParsingFailure,
    /// Never reported at run time: `tvc` validates templates when it compiles them.
    XmlValidationFailure,
    /// A value does not parse or does not fit its declared type.
    OutputFormatFailure,
    /// A script or a provider took longer than it may.
    ExecutionTimeout,
    /// The run cannot go on (no usable provider, a record that cannot be written, an
    /// interruption).
    ExecutionHalted,
    /// A spawned subtask could not run, or ran out of a resource.
    SubtaskFailure,
    /// A value the task was given is not one it takes: no case of a `<cond>` holds, a
    /// subtask request is invalid.
    InputValidationFailure,
    /// Anything else: a script that exits non-zero, a provider's error, a built-in
    /// given the wrong kind of value.
    UnexpectedError,
    /// A director-evaluator loop ended at `max_iterations` without success.
    MaxIterationsReached,
}

impl Reason {
    /// Every reason, in declaration order.
    pub const ALL: [Reason; 11] = [
        Reason::ContextRetrievalFailure,
        Reason::ContextMatchingFailure,
        Reason::ContextParsingFailure,
        Reason::XmlValidationFailure,
        Reason::OutputFormatFailure,
        Reason::ExecutionTimeout,
        Reason::ExecutionHalted,
        Reason::SubtaskFailure,
        Reason::InputValidationFailure,
        Reason::UnexpectedError,
        Reason::MaxIterationsReached,
    ];
}

/// What a run ran out of (README's resource table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Resource {
    /// Nested template calls or subtasks, or a value nesting too deep.
    Depth,
    /// Assistant turns of the run.
    Turns,
    /// Tokens of the run.
    Context,
    /// A reply cut at its output limit.
    Output,
    /// Wall-clock time of the run.
    Time,
    /// Director-evaluator iterations of the run.
    Iterations,
    /// Instructions executed by the run.
    Instructions,
    /// Bytes the run's values take.
    Memory,
    /// Dollars the run may spend on LLM calls (`--max-cost`).
    Cost,
}

impl Resource {
    /// Every resource, in declaration order.
    pub const ALL: [Resource; 9] = [
        Resource::Depth,
        Resource::Turns,
        Resource::Context,
        Resource::Output,
        Resource::Time,
        Resource::Iterations,
        Resource::Instructions,
        Resource::Memory,
        Resource::Cost,
    ];
}

/// A RESOURCE_EXHAUSTION's `metrics`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metrics {
    /// What the run used, or would have with what was refused.
    pub used: u64,
    /// What it may use.
    pub limit: u64,
}

impl TaskError {
    /// A TASK_FAILURE without details.
    pub fn failure(reason: Reason, message: impl Into<String>) -> TaskError {
        TaskError {
            kind: ErrorKind::TaskFailure { reason },
            message: message.into(),
            details: None,
            metrics: None,
        }
    }

    /// A RESOURCE_EXHAUSTION: `used` of a `limit`.
    pub fn exhausted(
        resource: Resource,
        message: impl Into<String>,
        used: u64,
        limit: u64,
    ) -> Self {
        TaskError {
            kind: ErrorKind::ResourceExhaustion { resource },
            message: message.into(),
            details: None,
            metrics: Some(Metrics { used, limit }),
        }
    }

    /// This failure with its `details` (an object; `null` leaves them out).
    pub fn with_details(mut self, details: Value) -> TaskError {
        self.details = Some(details).filter(|d| !d.is_null());
        self
    }
}

impl TaskResult {
    /// A COMPLETE result with text content.
    pub fn complete(content: String) -> TaskResult {
        TaskResult::complete_with(content, Map::new())
    }

    /// A COMPLETE result with its notes.
    pub fn complete_with(content: String, notes: Map<String, Value>) -> TaskResult {
        TaskResult {
            status: Status::Complete,
            content,
            notes: Notes {
                error: None,
                other: notes,
            },
            parsed_content: None,
            criteria: None,
        }
    }

    /// A FAILED result carrying `error`, with empty content.
    pub fn failed(error: impl Into<Box<TaskError>>) -> TaskResult {
        TaskResult {
            status: Status::Failed,
            content: String::new(),
            notes: Notes {
                error: Some(error.into()),
                other: Map::new(),
            },
            parsed_content: None,
            criteria: None,
        }
    }

    /// Whether it FAILED.
    pub fn is_failed(&self) -> bool {
        self.status == Status::Failed
    }

    /// Sets `notes.key`, after the notes already there (in place if it is one).
    pub fn set_note(&mut self, key: &str, v: Value) {
        self.notes.other.insert(key.to_string(), v);
    }
}

/// The result as JSON: compact, or with `{:#}` indented as `tvm run` prints it.
impl fmt::Display for TaskResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = if f.alternate() {
            serde_json::to_string_pretty(self)
        } else {
            serde_json::to_string(self)
        };
        f.write_str(&text.map_err(|_| fmt::Error)?)
    }
}

/// `Some` for a field that is present, `null` included (serde's `Option` would read a
/// `null` as absent, and the printed result would lose it).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// A result leaving the machine (the end of a run or of a branch), read back from the
/// value a template returned. Only a crafted bundle returns something else.
impl TryFrom<Value> for TaskResult {
    type Error = serde_json::Error;

    fn try_from(v: Value) -> Result<TaskResult, Self::Error> {
        // The parts are moved out when the value has a result's shape: serde would
        // buffer every note (`notes` is flattened) and copy it again. Anything else
        // goes through serde, for its error.
        let Value::Object(mut m) = v else {
            return serde_json::from_value(v);
        };
        let shaped = matches!(m.get("content"), Some(Value::String(_)))
            && matches!(m.get("notes"), Some(Value::Object(_)))
            && matches!(
                m.get("criteria"),
                None | Some(Value::String(_) | Value::Null)
            );
        let status = m.get("status").map(Status::deserialize);
        let (true, Some(Ok(status))) = (shaped, status) else {
            return serde_json::from_value(Value::Object(m));
        };
        let error = match m.get("notes").and_then(|n| n.get("error")) {
            Some(e) => Some(Box::new(TaskError::deserialize(e)?)),
            None => None,
        };
        // Both were checked above; the defaults are never taken.
        let content = match m.remove("content") {
            Some(Value::String(c)) => c,
            _ => String::new(),
        };
        let mut other = match m.remove("notes") {
            Some(Value::Object(o)) => o,
            _ => Map::new(),
        };
        other.shift_remove("error");
        Ok(TaskResult {
            status,
            content,
            notes: Notes { error, other },
            parsed_content: m.remove("parsedContent"),
            criteria: match m.remove("criteria") {
                Some(Value::String(c)) => Some(c),
                _ => None,
            },
        })
    }
}

/// The value form of a result, key for key what serde writes (a test holds them
/// equal), built by moving the parts instead of serializing copies of them.
impl From<TaskResult> for Value {
    fn from(r: TaskResult) -> Value {
        // Exactly the room needed: a sequence keeps every step's result as a value.
        let extra = usize::from(r.parsed_content.is_some()) + usize::from(r.criteria.is_some());
        let mut m = Map::with_capacity(3 + extra);
        m.insert("status".into(), status_value(r.status));
        m.insert("content".into(), Value::String(r.content));
        m.insert("notes".into(), r.notes.into());
        if let Some(p) = r.parsed_content {
            m.insert("parsedContent".into(), p);
        }
        if let Some(c) = r.criteria {
            m.insert("criteria".into(), Value::String(c));
        }
        Value::Object(m)
    }
}

impl From<Notes> for Value {
    fn from(n: Notes) -> Value {
        let Some(error) = n.error else {
            return Value::Object(n.other);
        };
        let mut m = Map::with_capacity(n.other.len() + 1);
        m.insert("error".into(), (*error).into());
        m.extend(n.other);
        Value::Object(m)
    }
}

impl From<TaskError> for Value {
    fn from(e: TaskError) -> Value {
        let mut m = Map::with_capacity(4);
        // Unit enums and two integers: serializing them cannot fail.
        let kind = serde_json::to_value(e.kind).unwrap_or_default();
        if let Value::Object(k) = kind {
            m.extend(k);
        }
        m.insert("message".into(), Value::String(e.message));
        if let Some(d) = e.details {
            m.insert("details".into(), d);
        }
        if let Some(metrics) = e.metrics {
            m.insert(
                "metrics".into(),
                serde_json::to_value(metrics).unwrap_or_default(),
            );
        }
        Value::Object(m)
    }
}

fn status_value(s: Status) -> Value {
    serde_json::to_value(s).unwrap_or_default()
}

/// Whether a result in value form FAILED.
pub fn is_failed(r: &Value) -> bool {
    Status::of(r) == Some(Status::Failed)
}

/// The value a result stands for in expressions: parsed JSON when there is some.
pub(crate) fn value_of(r: &Value) -> Value {
    match r.get("parsedContent") {
        Some(v) => v.clone(),
        None => r.get("content").cloned().unwrap_or(Value::Null),
    }
}

/// Sets `notes.key` of a result in value form.
pub fn set_note(r: &mut Value, key: &str, v: Value) {
    if let Value::Object(obj) = r {
        let notes = obj
            .entry("notes")
            .or_insert_with(|| Value::Object(Map::new()));
        if !notes.is_object() {
            *notes = Value::Object(Map::new());
        }
        if let Value::Object(n) = notes {
            n.insert(key.to_string(), v);
        }
    }
}

/// Notes that are for the people running a workflow, never for a model: what calls used
/// and cost, whether a reply came from a cache, and the host's warnings (a damaged cache
/// entry, a server that refused a field). They differ between a live run, a replayed
/// one and a cached one, so a prompt holding them would be a different request each
/// time, and the cassette and the cache would never answer it.
pub(crate) const OPERATOR_NOTES: [&str; 3] = ["usage", "cached", "warnings"];

/// A result in value form as a model is sent it: without [`OPERATOR_NOTES`], in its own
/// notes or in those of any result it holds (a map's partial results, a subtask's
/// error, a loop's last result). What a result says, its `content` and
/// `parsedContent`, is data and is never touched, whatever keys it has.
pub(crate) fn for_model(r: &Value) -> Value {
    let mut v = r.clone();
    strip_operator_notes(&mut v);
    v
}

fn strip_operator_notes(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(Value::Object(notes)) = m.get_mut("notes") {
                notes.retain(|k, _| !OPERATOR_NOTES.contains(&k.as_str()));
            }
            m.iter_mut()
                .filter(|(k, _)| !matches!(k.as_str(), "content" | "parsedContent"))
                .for_each(|(_, child)| strip_operator_notes(child));
        }
        Value::Array(items) => items.iter_mut().for_each(strip_operator_notes),
        _ => {}
    }
}

#[cfg(test)]
#[path = "result_tests.rs"]
mod tests;
