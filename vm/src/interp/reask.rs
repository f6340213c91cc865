//! Re-asking a model whose reply is not JSON of its task's declared type (DESIGN §13).
//!
//! When an atomic task's reply does not parse as JSON, or parses but departs from the
//! type of its `output_format` (an atomic evaluator's is `EvaluationResult`), and the
//! session was re-asked fewer times than the task's `retries` (`<output_format
//! retries="N">`, default 1), the reply stays in the conversation as the assistant's
//! turn and one user turn follows that names the error and asks for the JSON alone:
//!
//! ```text
//! Your reply does not match the required JSON type: at `$.approved` expected boolean, got string.
//! The required type: {approved: boolean}
//! Reply again with the corrected JSON only, and no other text.
//! ```
//!
//! A reply that does not parse gets `Your reply is not valid JSON (<the parser's
//! error>).` as its first line, and a required field left out `Your reply does not match
//! the required JSON type: `$.approved` is missing; it must be boolean.` The turn quotes
//! of the reply only what was found where some strings were expected (cut at 60
//! characters by the type check); the type and the parser's error are cut too
//! ([`MAX_TYPE_TEXT`], [`MAX_ERROR_TEXT`]). The new turn is asked through
//! [`Vm::request`], so the run's turn and token limits stop it as they stop any turn:
//! the task then fails with that RESOURCE_EXHAUSTION, the last reply in `content`. Both
//! turns are charged to memory.
//!
//! Not re-asked: a reply cut at the output limit (not an answer), a reply that starts a
//! subtask, and JSON without a declared type (a parse error is `notes.parseError`).
//!
//! The result of a session asked more than once carries:
//! - `notes.tokens`: `{input, output}` summed over its attempts (the run's budget counts
//!   every reply as it comes);
//! - `notes.attempts`: one entry per failed attempt, in order, the last one included
//!   when it failed too, e.g. `{"attempt": 1, "error": "at `$.approved` expected
//!   boolean, got string", "path": "$.approved", "expected": "boolean", "got": "string"}`:
//!   `attempt` counts from 1, `error` says what was wrong in a line, `expected` is the
//!   type expected at `path`, and `got` what was there (a kind, `missing`, a quoted
//!   string, or `text` for a reply that does not parse).
//!
//! When the retries are spent, the result is the last reply's `output_format_failure`.

use super::{Fault, Session, Vm};
use crate::bundle::Output;
use crate::host::{LlmReply, Message};
use crate::outcome::{read_reply, Misread};
use crate::result::TaskResult;
use serde_json::{Map, Value};
use std::sync::Arc;
use tv_stdlib::types::{Expanded, Type, MISSING};
use tv_stdlib::values::cut_chars as cut;

/// The longest a type is written out in a feedback turn or a note: a declared type
/// may hold thousands of fields, and the turn is sent with every later request.
pub(crate) const MAX_TYPE_TEXT: usize = 1_000;
/// The longest a parser's error is quoted.
pub(crate) const MAX_ERROR_TEXT: usize = 300;

/// What a session's earlier replies came to, for the result of its last one.
#[derive(Clone, Debug, Default)]
pub(crate) struct Attempts {
    /// Replies read by the output format so far.
    count: usize,
    /// One `notes.attempts` entry per reply that failed it.
    failed: Vec<Value>,
}

impl Attempts {
    /// Counts a reply, and its failure if it failed. (What the replies used is the
    /// session's usage, counted by the machine.)
    fn record(&mut self, failure: Option<(&Misread, &Type)>) {
        self.count += 1;
        if let Some((misread, declared)) = failure {
            self.failed.push(entry(self.count, misread, declared));
        }
    }

    /// The notes of a session asked more than once on the result of its last reply.
    fn note(self, r: &mut TaskResult) {
        if self.count < 2 {
            return;
        }
        r.set_note("attempts", Value::Array(self.failed));
    }
}

impl Vm<'_> {
    /// The result of a session's reply, read by its task's output format; or `None`
    /// when the reply is not JSON of the declared type and the session is asked again
    /// (the request waits in `again`).
    pub(super) fn judged(&mut self, mut session: Session, reply: LlmReply) -> Option<TaskResult> {
        let bundle = self.bundle;
        let meta = bundle.tasks.get(session.task as usize);
        let output = meta.map_or(&Output::Text, |t| &t.output);
        let retries = meta.map_or(0, |t| t.retries) as usize;
        let (mut r, misread) = read_reply(reply, output);
        let declared = match output {
            Output::Json(Some(ty)) => Some(ty.as_type()),
            _ => None,
        };
        let failure = misread.as_ref().zip(declared);
        // Every failed reply but the last was re-asked.
        let reasks = session.attempts.failed.len();
        session.attempts.record(failure);
        match failure {
            Some((misread, ty)) if reasks < retries => self.reask(session, r, misread, ty),
            _ => {
                session.attempts.note(&mut r);
                Some(r)
            }
        }
    }

    /// Keeps the failed reply in the conversation, adds the feedback turn and asks
    /// again; when a limit refuses the turn, the failure of that limit, the reply kept.
    fn reask(
        &mut self,
        mut session: Session,
        r: TaskResult,
        misread: &Misread,
        declared: &Type,
    ) -> Option<TaskResult> {
        let said = feedback(misread, declared);
        let attempts = session.attempts.clone();
        let asked = self.charge_turn(&said).and_then(|()| {
            let messages = Arc::make_mut(&mut session.messages);
            messages.push(Message::assistant(r.content.clone()));
            messages.push(Message::user(said));
            self.request(session)
        });
        match asked {
            Ok(request) => {
                self.again = Some(request);
                None
            }
            Err(fault) => Some(stopped(r, fault, attempts)),
        }
    }

    /// Counts the feedback turn against the memory and instruction budgets.
    fn charge_turn(&mut self, said: &str) -> Result<(), Fault> {
        self.reserve(said.len() as u64)?;
        self.charge(said.len() as u64)
    }
}

/// The failed reply's result, failing with what stopped the re-ask instead.
fn stopped(mut r: TaskResult, fault: Fault, attempts: Attempts) -> TaskResult {
    r.notes.error = Some(fault);
    r.parsed_content = None;
    attempts.note(&mut r);
    r
}

/// The user turn that tells the model what was wrong and asks for the JSON alone.
pub(crate) fn feedback(misread: &Misread, declared: &Type) -> String {
    let problem = match misread {
        Misread::Parse(e) => format!("Your reply is not valid JSON ({}).", cut(e, MAX_ERROR_TEXT)),
        Misread::Mismatch(m) if m.found == MISSING => format!(
            "Your reply does not match the required JSON type: `{}` is missing; it must be {}.",
            m.path,
            written(&m.expected)
        ),
        Misread::Mismatch(m) => format!(
            "Your reply does not match the required JSON type: at `{}` expected {}, got {}.",
            m.path,
            written(&m.expected),
            m.found
        ),
    };
    format!(
        "{problem}\nThe required type: {}\nReply again with the corrected JSON only, and no other text.",
        written(declared)
    )
}

/// One `notes.attempts` entry.
fn entry(attempt: usize, misread: &Misread, declared: &Type) -> Value {
    let (error, path, expected, got) = match misread {
        Misread::Parse(e) => {
            let e = cut(e, MAX_ERROR_TEXT);
            (
                format!("not valid JSON: {e}"),
                "$".to_string(),
                declared,
                "text",
            )
        }
        Misread::Mismatch(m) => (m.to_string(), m.path.clone(), &m.expected, m.found.as_str()),
    };
    let mut e = Map::with_capacity(5);
    e.insert("attempt".into(), attempt.into());
    e.insert("error".into(), cut(&error, MAX_TYPE_TEXT).into());
    e.insert("path".into(), path.into());
    e.insert("expected".into(), written(expected).into());
    e.insert("got".into(), got.into());
    Value::Object(e)
}

/// A type as the model should write it: a declared record by its fields (its name
/// means nothing to the model), cut at [`MAX_TYPE_TEXT`].
fn written(t: &Type) -> String {
    let text = match t {
        Type::Record(r) if r.name.is_some() => Expanded(r).to_string(),
        other => other.to_string(),
    };
    cut(&text, MAX_TYPE_TEXT)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn misread(ty: &Type, v: Value) -> Misread {
        Misread::Mismatch(ty.mismatch(&v).expect("a mismatch"))
    }

    #[test]
    fn the_feedback_names_the_path_the_type_and_what_was_found() {
        let ty = Type::parse("{approved: boolean}").expect("a type");
        let m = misread(&ty, json!({"approved": "yes"}));
        assert_eq!(
            feedback(&m, &ty),
            "Your reply does not match the required JSON type: at `$.approved` expected boolean, got string.\nThe required type: {approved: boolean}\nReply again with the corrected JSON only, and no other text."
        );
        let missing = misread(&ty, json!({}));
        assert!(feedback(&missing, &ty).starts_with(
            "Your reply does not match the required JSON type: `$.approved` is missing; it must be boolean."
        ));
        let parse = Misread::Parse("expected value at line 1 column 1".into());
        assert!(feedback(&parse, &ty)
            .starts_with("Your reply is not valid JSON (expected value at line 1 column 1)."));
    }

    #[test]
    fn a_declared_record_is_written_by_its_fields_and_long_text_is_cut() {
        let ty = Type::evaluation_result();
        let m = misread(&ty, json!({"success": "yes"}));
        assert!(feedback(&m, &ty)
            .contains("The required type: {success: boolean, feedback?: string}\n"));
        let long = Misread::Parse("x".repeat(5_000));
        let said = feedback(&long, &ty);
        assert!(said.len() < MAX_ERROR_TEXT + 300, "{}", said.len());
        let e = entry(2, &long, &ty);
        assert_eq!(e["attempt"], 2);
        assert_eq!(e["got"], "text");
        assert_eq!(e["expected"], "{success: boolean, feedback?: string}");
    }

    #[test]
    fn a_literal_found_is_quoted_no_longer_than_the_type_check_cuts_it() {
        let ty = Type::parse(r#"{severity: "low"|"high"}"#).expect("a type");
        let m = misread(&ty, json!({"severity": "m".repeat(10_000)}));
        let e = entry(1, &m, &ty);
        assert_eq!(e["path"], "$.severity");
        assert_eq!(e["expected"], r#""low"|"high""#);
        assert!(e["got"].as_str().expect("text").chars().count() < 70);
        assert!(feedback(&m, &ty).len() < 300);
    }
}
