//! Which result a task gets from what happened: a host's reply (an LLM turn, a script
//! run), a value checked against its output format or declared `returns`, a failed
//! step of a sequence or reduce, the bodies of a map, the evaluator's reply and the end of a
//! director-evaluator loop. [`crate::result`] says what a result is; this module
//! builds them, through its constructors. Pure functions of their inputs.
//!
//! Replies arrive typed and become typed results. The functions that take a result
//! the machine holds (a step's, a loop's) take its value form, which templates may
//! have read, and give one back.

use crate::bundle::{Output, TaskMeta};
use crate::host::{LlmReply, ScriptReply};
use crate::result::{
    is_failed, set_note, ErrorKind, Reason, Resource, Status, TaskError, TaskResult,
};
use serde_json::{json, Map, Value};
use tv_stdlib::types::{Expanded, Mismatch, Type};
use tv_stdlib::values as f;

/// The result of an LLM turn: the reply read by the task's `output_format`, or a
/// failure when the reply was cut at its output limit.
pub fn llm_result(reply: LlmReply, output: &Output) -> TaskResult {
    read_reply(reply, output).0
}

/// Why a reply is not JSON of its declared type: what a re-ask tells the model
/// (DESIGN §13).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Misread {
    /// It does not parse as JSON: the parser's error.
    Parse(String),
    /// It parses, but departs from the type there.
    Mismatch(Mismatch),
}

/// [`llm_result`], and why the result failed when its reply is not JSON of the
/// declared type (a cut reply is not judged: it is not an answer).
pub(crate) fn read_reply(reply: LlmReply, output: &Output) -> (TaskResult, Option<Misread>) {
    if reply.truncated {
        return (truncated(reply), None);
    }
    let notes = reply_notes(&reply);
    let mut r = TaskResult::complete_with(reply.content, notes);
    let misread = conform(&mut r, output);
    (r, misread)
}

/// A COMPLETE result read by its `output_format`: with `json`, its content is parsed
/// (leniently) into `parsedContent`, and a declared type must fit. A parse error without
/// a type is a note; with one, or a mismatch, the result fails with
/// `output_format_failure`, keeps the text in `content` and its notes (a reply that
/// fails its type spent its tokens and had its files all the same), and the reason is
/// returned. (In place: a result is large, and most tasks have no output format.)
pub(crate) fn conform(r: &mut TaskResult, output: &Output) -> Option<Misread> {
    let Output::Json(schema) = output else {
        return None;
    };
    let parsed = match r.parsed_content.take() {
        Some(v) => Ok(v),
        None => f::parse_json_text(&r.content),
    };
    match (parsed, schema) {
        (Ok(v), None) => r.parsed_content = Some(v),
        (Ok(v), Some(ty)) => {
            if let Some(m) = ty.as_type().mismatch(&v) {
                let should = format!("the output should be `{ty}` JSON");
                let notes = std::mem::take(&mut r.notes.other);
                *r = mismatched(should, &ty.to_string(), &m, std::mem::take(&mut r.content));
                r.notes.other = notes;
                return Some(Misread::Mismatch(m));
            }
            r.parsed_content = Some(v);
        }
        (Err(e), None) => r.set_note("parseError", Value::String(e)),
        (Err(e), Some(ty)) => {
            let error = TaskError::failure(
                Reason::OutputFormatFailure,
                format!("the output should be `{ty}` JSON but does not parse: {e}"),
            )
            .with_details(json!({"expected": ty, "actual": "text", "path": "$",
                "content": r.content, "parseError": e}));
            let notes = std::mem::take(&mut r.notes.other);
            *r = failed_keeping(error, std::mem::take(&mut r.content));
            r.notes.other = notes;
            return Some(Misread::Parse(e));
        }
    }
    None
}

/// A FAILED result that keeps the text it failed on in `content`.
fn failed_keeping(error: TaskError, content: String) -> TaskResult {
    TaskResult {
        content,
        ..TaskResult::failed(error)
    }
}

/// The end of a composite task: its output format applied to a completed result, and
/// its criteria. `Err` when what the task produced is not a task result at all.
pub(crate) fn finish(r: Value, meta: &TaskMeta) -> Result<TaskResult, serde_json::Error> {
    let mut r = TaskResult::try_from(r)?;
    if !r.is_failed() {
        conform(&mut r, &meta.output);
    }
    with_criteria(&mut r, meta);
    Ok(r)
}

/// A result with its task's `criteria` (DESIGN §19), whatever its status: an atomic or
/// script task's as its reply comes in, a composite task's by [`finish`].
pub(crate) fn with_criteria(r: &mut TaskResult, meta: &TaskMeta) {
    if let Some(c) = &meta.criteria {
        r.criteria = Some(c.clone());
    }
}

/// A reply cut by the output limit: what was written is kept, but it is not an answer.
/// With no `max_tokens` sent, no limit was set, so none is reported: the model's own
/// output limit or the server's context window ended the reply, and the message says
/// which settings choose the limit.
fn truncated(reply: LlmReply) -> TaskResult {
    let error = match reply.max_tokens {
        Some(n) => TaskError::exhausted(
            Resource::Output,
            format!("the reply was cut at the output limit of {n} tokens; raise `max_tokens` on the task's `<model>` or `--max-output-tokens`"),
            reply.output_tokens,
            n,
        ),
        None => TaskError {
            metrics: None,
            ..TaskError::exhausted(
                Resource::Output,
                format!(
                    "the reply was cut after {} tokens, though no max_tokens was sent: the model's own output limit or the server's context window ended it (a local server's context size, e.g. llama-server --ctx-size, holds the prompt and the reply together); set `max_tokens` on the task's `<model>` or `--max-output-tokens` to choose the limit, or give the server a larger context",
                    reply.output_tokens
                ),
                reply.output_tokens,
                0,
            )
        }
        .with_details(json!({"outputTokens": reply.output_tokens})),
    };
    let notes = reply_notes(&reply);
    let mut r = failed_keeping(error, reply.content);
    r.notes.other = notes;
    r
}

/// The notes of a reply: the files put into its context, warnings, whether it came from
/// a cache. (Its usage is added where the session's result is made.)
fn reply_notes(reply: &LlmReply) -> Map<String, Value> {
    // Room for these and the usage, no more: a sequence keeps every step's result, and
    // an entry of a map is about a hundred bytes.
    let present = [
        !reply.context_files.is_empty(),
        !reply.warnings.is_empty(),
        reply.cached,
    ];
    let mut notes = Map::with_capacity(1 + present.iter().filter(|p| **p).count());
    if !reply.context_files.is_empty() {
        notes.insert("contextFiles".into(), json!(reply.context_files));
    }
    if !reply.warnings.is_empty() {
        notes.insert("warnings".into(), json!(reply.warnings));
    }
    if reply.cached {
        notes.insert("cached".into(), Value::Bool(true));
    }
    notes
}

/// A script's result: its stdout when it exited 0, else an `unexpected_error`; its
/// whole output in `notes.scriptOutput` either way.
pub(crate) fn script_result(reply: ScriptReply) -> TaskResult {
    let mut output =
        json!({"stdout": reply.stdout, "stderr": reply.stderr, "exitCode": reply.exit_code});
    if !reply.notes.is_empty() {
        output["notes"] = json!(reply.notes);
    }
    let mut r = if reply.exit_code == 0 {
        TaskResult::complete(reply.stdout)
    } else {
        TaskResult::failed(
            TaskError::failure(
                Reason::UnexpectedError,
                format!("the script exited with status {}", reply.exit_code),
            )
            .with_details(json!({"exitCode": reply.exit_code})),
        )
    };
    r.set_note("scriptOutput", output);
    r
}

/// The value of a script command's hole that stands as a word of its own with no
/// `--` before it (DESIGN §18): one starting with `-` would be read as an option
/// (`git log {{branch}}` with `--output=FILE` writes the file), so the script fails
/// with `input_validation_failure` before it starts. `hole` is the hole's expression.
pub(crate) fn check_option(v: Value, hole: &str) -> Value {
    let dashed = match &v {
        Value::String(s) => s.starts_with('-'),
        Value::Number(n) => n.to_string().starts_with('-'),
        _ => false,
    };
    if !dashed {
        return v;
    }
    let text = f::to_text(&v);
    let mut shown: String = text.chars().take(OPTION_SHOWN).collect();
    if shown.len() < text.len() {
        shown.push('…');
    }
    let message = format!(
        "the value of `{{{{{hole}}}}}` in the script command starts with `-` ({shown:?}), \
         so the command would read it as an option; the script was not run (put `--` \
         before it in the command, or write it after a prefix: `--name={{{{{hole}}}}}`)"
    );
    let error = TaskError::failure(Reason::InputValidationFailure, message)
        .with_details(json!({"hole": hole, "value": shown}));
    TaskResult::failed(error).into()
}

/// How much of a refused value its error shows.
const OPTION_SHOWN: usize = 200;

/// The failure of a value that is not of its declared type (DESIGN §5, §19): the
/// message and the details name the JSON path of the first mismatch, and the reply
/// stays in the result's `content`. `expected` is the declared type, `actual` what was
/// found at `path`, `expectedAtPath` the type expected there.
fn mismatched(should: String, declared: &str, m: &Mismatch, content: String) -> TaskResult {
    let error = TaskError::failure(Reason::OutputFormatFailure, format!("{should}, but {m}"))
        .with_details(json!({
            "expected": declared,
            "actual": m.found,
            "path": m.path,
            "expectedAtPath": m.expected.to_string(),
            "content": content,
        }));
    failed_keeping(error, content)
}

/// A template's result checked against its declared `returns`.
pub(crate) fn check_return(r: Value, t: &Type) -> Value {
    if is_failed(&r) {
        return r;
    }
    // The value the result stands for, borrowed: a large parsed reply is checked in
    // place, not copied on every return.
    let v = r
        .get("parsedContent")
        .or_else(|| r.get("content"))
        .unwrap_or(&Value::Null);
    let Some(m) = t.mismatch(v) else {
        return r;
    };
    let content = content_of(&r);
    let declared = t.to_string();
    mismatched(
        format!("the result should be `{t}`"),
        &declared,
        &m,
        content,
    )
    .into()
}

/// The text content of a result in value form.
fn content_of(r: &Value) -> String {
    r.get("content")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// What a composite task's failure takes from its failed step (or item, or input).
struct StepFailure {
    reason: Reason,
    message: String,
    /// The step's error, in value form.
    error: Value,
    /// The step's text: a reply cut at its output limit, or one of the wrong type, is
    /// kept, as an atomic task's failure keeps it.
    content: String,
}

/// The failure of a step (its value form, moved out), for the failure of the sequence,
/// reduce or map it belongs to. A failed script's output goes with its error
/// (`details.scriptOutput`): its stderr says why it failed.
fn error_of(mut r: Value) -> StepFailure {
    let mut error = r
        .pointer_mut("/notes/error")
        .map(Value::take)
        .unwrap_or(Value::Null);
    let output = r.pointer_mut("/notes/scriptOutput").map(Value::take);
    if let (Some(output), Some(e)) = (output, error.as_object_mut()) {
        let details = e.entry("details").or_insert(Value::Null);
        if !details.is_object() {
            *details = Value::Object(Map::new());
        }
        if let Some(d) = details.as_object_mut() {
            d.insert("scriptOutput".into(), output);
        }
    }
    let reason = ErrorKind::of(&error).map_or(Reason::UnexpectedError, ErrorKind::reason);
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("a step failed")
        .to_string();
    let content = match r.get_mut("content").map(Value::take) {
        Some(Value::String(s)) => s,
        _ => String::new(),
    };
    StepFailure {
        reason,
        message,
        error,
        content,
    }
}

/// A sequence whose step `step` (from 0) of `total` failed with `failed`.
pub(crate) fn fail_sequence(failed: Value, partial: Value, step: u16, total: u16) -> Value {
    let f = error_of(failed);
    let message = format!("step {} of {total} failed: {}", step + 1, f.message);
    // Counted from 1, as the message counts them.
    let details = json!({"failedStep": step + 1, "totalSteps": total,
        "partialResults": partial, "stepError": f.error});
    let error = TaskError::failure(f.reason, message).with_details(details);
    failed_keeping(error, f.content).into()
}

/// A `cond` that says `otherwise="fail"` and none of whose cases held, at `at`
/// (`file:line:col`); `path` is the value its cases compare, as written (empty when
/// they test no one value), and `value` what it held.
pub(crate) fn no_case(at: &str, path: &str, value: Value) -> Value {
    let mut message = format!("{at}: no case of the `<cond>` holds");
    if !path.is_empty() {
        let mut shown = value.to_string();
        // The message names the value; the details keep all of it.
        if shown.len() > 200 {
            let cut = (0..=200)
                .rev()
                .find(|&i| shown.is_char_boundary(i))
                .unwrap_or(0);
            shown.truncate(cut);
            shown.push('…');
        }
        let _ = std::fmt::Write::write_fmt(
            &mut message,
            format_args!(" for `{path}`, which is {shown}"),
        );
    }
    message.push_str(", and it says otherwise=\"fail\"");
    let mut details = json!({"location": at});
    if !path.is_empty() {
        details["path"] = json!(path);
        details["value"] = value;
    }
    TaskResult::failed(
        TaskError::failure(Reason::InputValidationFailure, message).with_details(details),
    )
    .into()
}

/// A reduce whose input at `index` of `total` failed with `failed`.
pub(crate) fn fail_reduce(
    failed: Value,
    index: Value,
    total: Value,
    processed: Value,
    accumulator: Value,
) -> Value {
    let f = error_of(failed);
    // `failedInputIndex` counts from 0; the message says both.
    let message = format!(
        "input {} of {total} (index {index}) of the reduction failed: {}",
        index.as_u64().unwrap_or(0) + 1,
        f.message
    );
    let details = json!({
        "failedInputIndex": index,
        "totalInputs": total,
        "processedInputs": processed,
        "currentAccumulator": accumulator,
        "inputError": f.error,
    });
    let error = TaskError::failure(f.reason, message).with_details(details);
    failed_keeping(error, f.content).into()
}

/// A map's result from its bodies' results in item order (`null` for an item whose
/// body never started): COMPLETE, its value the array of the bodies' values and its
/// content that array's JSON; or, when a body failed, FAILED for the first item whose
/// body did, with the completed results beside it (`null` for the others).
pub(crate) fn map_result(results: Vec<Value>) -> Value {
    let total = results.len();
    let Some(index) = results.iter().position(is_failed) else {
        let values = Value::Array(results.into_iter().map(into_value).collect());
        let mut r = TaskResult::complete(values.to_string());
        r.parsed_content = Some(values);
        return r.into();
    };
    let mut failed = Value::Null;
    let partial: Vec<Value> = results
        .into_iter()
        .enumerate()
        .map(|(i, r)| match Status::of(&r) {
            _ if i == index => {
                failed = r;
                Value::Null
            }
            Some(Status::Complete) => r,
            _ => Value::Null,
        })
        .collect();
    let f = error_of(failed);
    // `failedIndex` counts from 0; the message says both.
    let message = format!(
        "item {} of {total} (index {index}) of the map failed: {}",
        index + 1,
        f.message
    );
    let details = json!({
        "failedIndex": index,
        "totalItems": total,
        "partialResults": partial,
        "itemError": f.error,
    });
    let error = TaskError::failure(f.reason, message).with_details(details);
    failed_keeping(error, f.content).into()
}

/// [`crate::result::value_of`], moving the value out of the result.
fn into_value(r: Value) -> Value {
    match r {
        Value::Object(mut m) => m
            .remove("parsedContent")
            .or_else(|| m.remove("content"))
            .unwrap_or(Value::Null),
        _ => Value::Null,
    }
}

/// The evaluator's result as an EvaluationResult (DESIGN §6): its value is the object
/// `{success: boolean, feedback?: string}` read from the reply (parsed JSON, or the text
/// parsed leniently), whether or not the evaluator declared an output format. A reply
/// that is not one fails with `output_format_failure`, the reply kept. (An atomic
/// evaluator's reply was read as that type already, and re-asked; this reads what a
/// composite evaluator produced.)
pub(crate) fn evaluation(mut r: Value) -> Value {
    if is_failed(&r) {
        return r;
    }
    let content = content_of(&r);
    let parsed = match r.get("parsedContent") {
        Some(v) if v.is_object() => Ok(v.clone()),
        _ => f::parse_json_text(&content),
    };
    let ty = Type::evaluation_result();
    let (problem, path, actual) = match parsed.map(|v| (ty.mismatch(&v), v)) {
        Ok((None, v)) => {
            r["parsedContent"] = v;
            return r;
        }
        Ok((Some(m), _)) => (m.to_string(), m.path, m.found),
        Err(e) => (format!("it does not parse: {e}"), "$".into(), "text".into()),
    };
    let written = match &ty {
        Type::Record(record) => Expanded(record).to_string(),
        other => other.to_string(),
    };
    let error = TaskError::failure(
        Reason::OutputFormatFailure,
        format!("the evaluator's reply should be an EvaluationResult {written}, but {problem}"),
    )
    .with_details(
        json!({"expected": ty.to_string(), "actual": actual, "path": path, "content": content}),
    );
    failed_keeping(error, content).into()
}

/// The end of a director-evaluator loop (see [`crate::isa::Op::EndLoop`]).
pub(crate) fn end_loop(mut result: Value, evaluation: Value, iterations: Value, mode: u8) -> Value {
    use crate::isa::{LOOP_ACCEPTED, LOOP_EXHAUSTED};
    if mode == LOOP_EXHAUSTED {
        let n = iterations.as_u64().unwrap_or(0);
        // DESIGN §6 names this reason; it extends the seeds' list.
        let error = TaskError::failure(
            Reason::MaxIterationsReached,
            format!("the loop ran its {n} iterations without the evaluator's success; `<on_max_iterations>accept</on_max_iterations>` keeps the last result instead"),
        )
        .with_details(json!({"iterations": iterations, "lastDirectorResult": result, "lastEvaluation": evaluation}));
        // A failed loop is a loop's result too: its notes say how far it went (§19).
        let mut failed: Value = TaskResult::failed(error).into();
        set_note(&mut failed, "iterations", iterations);
        set_note(&mut failed, "evaluation", evaluation);
        return failed;
    }
    set_note(&mut result, "iterations", iterations);
    set_note(&mut result, "evaluation", evaluation);
    if mode == LOOP_ACCEPTED {
        set_note(&mut result, "iterationsExhausted", Value::Bool(true));
    }
    result
}

#[cfg(test)]
#[path = "outcome_tests.rs"]
mod tests;
