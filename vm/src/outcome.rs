//! Building task results: from host replies, for failed sequences and reductions,
//! and for return-type checks. Pure functions of their inputs.

use crate::bundle::Output;
use crate::host::{LlmReply, ScriptReply};
use crate::isa::{CmpOp, Quote};
use crate::result::{complete, complete_with, exhausted, is_failed, set_note, task_failure};
use crate::shared::SharedText;
use serde_json::{json, Map, Value};
use std::cmp::Ordering;
use std::sync::Arc;
use tv_stdlib::types::{Mismatch, Type, MISSING};
use tv_stdlib::values::{self as f, kind_of, to_text};

pub fn compare(op: CmpOp, a: &Value, b: &Value) -> bool {
    match op {
        CmpOp::Eq => f::equal(a, b),
        CmpOp::Ne => !f::equal(a, b),
        CmpOp::Lt => f::compare(a, b) == Some(Ordering::Less),
        CmpOp::Le => matches!(f::compare(a, b), Some(Ordering::Less | Ordering::Equal)),
        CmpOp::Gt => f::compare(a, b) == Some(Ordering::Greater),
        CmpOp::Ge => matches!(f::compare(a, b), Some(Ordering::Greater | Ordering::Equal)),
    }
}

/// POSIX single quoting: no value can end the quote and inject a command.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// `s` quoted for where it stands in a command (DESIGN §18): as a quoted word of its
/// own, as text inside the author's `"..."`, or as text inside the author's `'...'`.
/// In each case the shell reads back exactly `s`, and nothing of it as code.
pub fn shell_quote_in(s: &str, quote: Quote) -> String {
    match quote {
        Quote::Bare => shell_quote(s),
        // Inside double quotes only these four keep a meaning, and a backslash takes
        // it away; a newline is plain text there.
        Quote::Double => {
            let mut out = String::with_capacity(s.len() + 8);
            for c in s.chars() {
                if matches!(c, '\\' | '"' | '$' | '`') {
                    out.push('\\');
                }
                out.push(c);
            }
            out
        }
        // Close the author's quote, write an escaped `'`, open it again.
        Quote::Single => s.replace('\'', r"'\''"),
    }
}

/// Accumulated context is kept to the most recent steps that fit in this many bytes,
/// so a long sequence costs the same per step instead of ever more.
pub const MAX_ACCUMULATED: usize = 16 * 1024;

/// The accumulated context of one sequence, built step by step: each result is turned
/// into text once, when it first shows up, and every step's context is a window of the
/// same buffer ([`SharedText`]), so a step costs the text it adds, not the context it
/// passes on.
#[derive(Debug, Default)]
pub struct Accumulator {
    full: bool,
    /// Results taken in so far, and how many of them were dropped for the cap.
    seen: usize,
    dropped: usize,
    /// The text of the kept steps is `text[start..]`; `lengths` has each kept step's
    /// length, oldest first. Dropped text is removed once it outweighs the cap, which
    /// moves the buffer once per 16 KiB appended rather than on every step.
    text: Arc<String>,
    start: usize,
    lengths: std::collections::VecDeque<usize>,
}

impl Accumulator {
    /// The context for the next step, given every result so far. Results are only ever
    /// appended; a shorter list, or another format, starts the context afresh.
    pub fn update(&mut self, results: &Value, full: bool) -> SharedText {
        let items = results.as_array().map(Vec::as_slice).unwrap_or_default();
        if items.len() < self.seen || full != self.full {
            *self = Accumulator {
                full,
                ..Accumulator::default()
            };
        }
        // Unshared once the previous step's request is answered; copied only if a
        // host still holds it.
        let text = Arc::make_mut(&mut self.text);
        for (i, r) in items.iter().enumerate().skip(self.seen) {
            let before = text.len();
            write_step(text, i, r, full);
            self.lengths.push_back(text.len() - before);
        }
        self.seen = items.len();
        while text.len() - self.start > MAX_ACCUMULATED && self.lengths.len() > 1 {
            self.start += self.lengths.pop_front().unwrap_or_default();
            self.dropped += 1;
        }
        if self.start > MAX_ACCUMULATED {
            text.drain(..self.start);
            self.start = 0;
        }
        let note = match self.dropped {
            0 => String::new(),
            n => format!("({n} earlier steps left out)\n"),
        };
        SharedText::window(&note, self.text.clone(), self.start)
    }
}

/// The accumulated context of `results` in one go (for the `Accumulate` instruction).
pub fn accumulate(results: &Value, full: bool) -> String {
    Accumulator::default().update(results, full).to_string()
}

fn write_step(out: &mut String, i: usize, r: &Value, full: bool) {
    use std::fmt::Write as _;
    let content = r.get("content").map(text_of).unwrap_or_default();
    let n = i + 1;
    // Writing into a String cannot fail.
    let _ = if full {
        let notes = r.get("notes").map(notes_for_prompt).unwrap_or_default();
        write!(
            out,
            "Step {n} output:\n{content}\nStep {n} notes: {notes}\n"
        )
    } else {
        let summary = match content.char_indices().nth(200) {
            Some((end, _)) => &content[..end],
            None => &content,
        };
        writeln!(out, "Step {n}: {summary}")
    };
}

/// A step's notes as the next steps' prompts show them: token counts and usage are for
/// the people running the workflow, not for the model.
fn notes_for_prompt(notes: &Value) -> std::borrow::Cow<'_, str> {
    match notes {
        Value::Object(m) if m.contains_key("tokens") || m.contains_key("usage") => {
            let kept: Map<String, Value> = m
                .iter()
                .filter(|(k, _)| !matches!(k.as_str(), "tokens" | "usage"))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            std::borrow::Cow::Owned(Value::Object(kept).to_string())
        }
        other => text_of(other),
    }
}

/// A value as text, borrowed when it already is a string.
fn text_of(v: &Value) -> std::borrow::Cow<'_, str> {
    match v {
        Value::String(s) => std::borrow::Cow::Borrowed(s),
        other => std::borrow::Cow::Owned(to_text(other)),
    }
}

pub fn error_of(mut r: Value) -> (String, String, Value) {
    // The failed result is consumed: its error moves into the failure, uncopied.
    let e = r
        .pointer_mut("/notes/error")
        .map(Value::take)
        .unwrap_or(Value::Null);
    let reason = e
        .get("reason")
        .and_then(Value::as_str)
        .unwrap_or("unexpected_error")
        .to_string();
    let message = e
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("a step failed")
        .to_string();
    (reason, message, e)
}

pub fn fail_sequence(failed: Value, partial: Value, step: u16, total: u16) -> Value {
    let (reason, message, error) = error_of(failed);
    task_failure(
        &reason,
        format!("step {} of {total} failed: {message}", step + 1),
        // Counted from 1, as the message counts them.
        json!({"failedStep": step + 1, "totalSteps": total, "partialResults": partial, "stepError": error}),
    )
}

pub fn fail_reduce(
    failed: Value,
    index: Value,
    total: Value,
    processed: Value,
    accumulator: Value,
) -> Value {
    let (reason, message, error) = error_of(failed);
    task_failure(
        &reason,
        // `failedInputIndex` counts from 0; the message says both.
        format!(
            "input {} of {total} (index {index}) of the reduction failed: {message}",
            index.as_u64().unwrap_or(0) + 1
        ),
        json!({
            "failedInputIndex": index,
            "totalInputs": total,
            "processedInputs": processed,
            "currentAccumulator": accumulator,
            "inputError": error,
        }),
    )
}

/// The evaluator's result as an EvaluationResult (DESIGN §6): its value is the object
/// `{success: boolean, feedback?: string}` read from the reply (parsed JSON, or the text
/// parsed leniently), whether or not the evaluator declared an output format. A reply
/// that is not one fails with `output_format_failure`, the reply kept.
pub fn evaluation(mut r: Value) -> Value {
    if is_failed(&r) {
        return r;
    }
    let content = r.get("content").cloned().unwrap_or(Value::Null);
    let parsed = match r.get("parsedContent") {
        Some(v) if v.is_object() => Ok(v.clone()),
        _ => f::parse_json_text(content.as_str().unwrap_or_default()),
    };
    // What is wrong, where (a JSON path) and what was found there.
    let (problem, path, actual) = match &parsed {
        Err(e) => (format!("it is not JSON ({e})"), "$", "text"),
        Ok(v) => match (v.get("success"), v.get("feedback")) {
            _ if !v.is_object() => (
                format!("it is {}, not an object", kind_of(v)),
                "$",
                kind_of(v),
            ),
            (Some(Value::Bool(_)), None | Some(Value::String(_) | Value::Null)) => {
                r["parsedContent"] = v.clone();
                return r;
            }
            (Some(Value::Bool(_)), Some(other)) => (
                format!("`feedback` is {}, not a string", kind_of(other)),
                "$.feedback",
                kind_of(other),
            ),
            (None, _) => ("it has no `success`".to_string(), "$.success", MISSING),
            (Some(other), _) => (
                format!("`success` is {}, not a boolean", kind_of(other)),
                "$.success",
                kind_of(other),
            ),
        },
    };
    let mut failed = task_failure(
        "output_format_failure",
        format!(
            "the evaluator's reply should be an EvaluationResult {{\"success\": boolean, \"feedback\": string}}, but {problem}"
        ),
        json!({"expected": "EvaluationResult", "actual": actual, "path": path, "content": content.clone()}),
    );
    failed["content"] = content;
    failed
}

/// The end of a director-evaluator loop (see [`crate::isa::Op::EndLoop`]).
pub fn end_loop(mut result: Value, evaluation: Value, iterations: Value, mode: u8) -> Value {
    use crate::isa::{LOOP_ACCEPTED, LOOP_EXHAUSTED};
    if mode == LOOP_EXHAUSTED {
        let n = iterations.as_u64().unwrap_or(0);
        // DESIGN §6 names this reason; it extends the seeds' list.
        return task_failure(
            "max_iterations_reached",
            format!("the loop ran its {n} iterations without the evaluator's success; `<on_max_iterations>accept</on_max_iterations>` keeps the last result instead"),
            json!({"iterations": iterations, "lastDirectorResult": result, "lastEvaluation": evaluation}),
        );
    }
    set_note(&mut result, "iterations", iterations);
    set_note(&mut result, "evaluation", evaluation);
    if mode == LOOP_ACCEPTED {
        set_note(&mut result, "iterationsExhausted", Value::Bool(true));
    }
    result
}

/// The failure of a value that is not of its declared type (DESIGN §5, §19): the
/// message and the details name the JSON path of the first mismatch, and the reply
/// stays in the result's `content`. `expected` is the declared type, `actual` what was
/// found at `path`, `expectedAtPath` the type expected there.
fn mismatched(should: String, declared: &str, m: &Mismatch, content: Value) -> Value {
    let mut failed = task_failure(
        "output_format_failure",
        format!("{should}, but {m}"),
        json!({
            "expected": declared,
            "actual": m.found,
            "path": m.path,
            "expectedAtPath": m.expected.to_string(),
            "content": content.clone(),
        }),
    );
    failed["content"] = content;
    failed
}

/// A template's result checked against its declared `returns`.
pub fn check_return(r: Value, ty: &str) -> Value {
    let Some(t) = Type::parse(ty) else { return r };
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
    let content = r.get("content").cloned().unwrap_or(Value::Null);
    mismatched(format!("the result should be `{ty}`"), ty, &m, content)
}

pub fn llm_result(reply: LlmReply, output: &Output) -> Value {
    if reply.truncated {
        return truncated(reply);
    }
    let notes = reply_notes(&reply);
    conform(complete_with(reply.content, notes), output)
}

/// A COMPLETE result read by its `output_format`: with `json`, its content is parsed
/// (leniently) into `parsedContent`, and a declared type must fit. A parse error without
/// a type is a note; with one, or a mismatch, the result fails with
/// `output_format_failure` and keeps the text in `content`.
pub fn conform(mut r: Value, output: &Output) -> Value {
    let Output::Json(schema) = output else {
        return r;
    };
    let content = r
        .get("content")
        .map(text_of)
        .unwrap_or_default()
        .into_owned();
    let parsed = match r.get("parsedContent") {
        Some(v) => Ok(v.clone()),
        None => f::parse_json_text(&content),
    };
    match (parsed, schema) {
        (Ok(v), None) => r["parsedContent"] = v,
        (Ok(v), Some(ty)) => {
            if let Some(m) = ty.to_type().mismatch(&v) {
                let should = format!("the output should be `{ty}` JSON");
                return mismatched(should, &ty.to_string(), &m, Value::String(content));
            }
            r["parsedContent"] = v;
        }
        (Err(e), None) => set_note(&mut r, "parseError", Value::String(e)),
        (Err(e), Some(ty)) => {
            let mut failed = task_failure(
                "output_format_failure",
                format!("the output should be `{ty}` JSON but does not parse: {e}"),
                json!({"expected": ty, "actual": "text", "path": "$", "content": content, "parseError": e}),
            );
            failed["content"] = Value::String(content);
            return failed;
        }
    }
    r
}

/// The end of a composite task: its criteria in the result, its output format applied
/// to a completed result.
pub fn finish(mut r: Value, meta: &crate::bundle::TaskMeta) -> Value {
    if !is_failed(&r) {
        r = conform(r, &meta.output);
    }
    if let (Some(c), Some(o)) = (&meta.criteria, r.as_object_mut()) {
        o.insert("criteria".into(), Value::String(c.clone()));
    }
    r
}

/// An atomic or script task's result with the task's `criteria` (DESIGN §19), whatever
/// its status; a composite task's are added by [`finish`].
pub fn with_criteria(mut r: Value, meta: &crate::bundle::TaskMeta) -> Value {
    if let (Some(c), Some(o)) = (&meta.criteria, r.as_object_mut()) {
        o.insert("criteria".into(), Value::String(c.clone()));
    }
    r
}

/// A reply cut by the output limit: what was written is kept, but it is not an answer.
fn truncated(reply: LlmReply) -> Value {
    let limit = reply.max_tokens.unwrap_or(reply.output_tokens);
    let message = match reply.max_tokens {
        Some(n) => format!("the reply was cut at the output limit of {n} tokens; raise `max_tokens` on the task's `<model>` or `--max-output-tokens`"),
        None => "the reply was cut at the model's output limit".to_string(),
    };
    let notes = reply_notes(&reply);
    let mut r = exhausted("output", message, reply.output_tokens, limit);
    r["content"] = Value::String(reply.content);
    if let Some(Value::Object(n)) = r.get_mut("notes") {
        n.extend(notes);
    }
    r
}

/// The notes of a reply: the files put into its context, warnings, tokens.
fn reply_notes(reply: &LlmReply) -> Map<String, Value> {
    let mut notes = Map::with_capacity(3);
    if !reply.context_files.is_empty() {
        notes.insert("contextFiles".into(), json!(reply.context_files));
    }
    if !reply.warnings.is_empty() {
        notes.insert("warnings".into(), json!(reply.warnings));
    }
    let mut tokens = Map::with_capacity(2);
    tokens.insert("input".into(), reply.input_tokens.into());
    tokens.insert("output".into(), reply.output_tokens.into());
    notes.insert("tokens".into(), Value::Object(tokens));
    notes
}

pub fn script_result(reply: ScriptReply) -> Value {
    let mut output =
        json!({"stdout": reply.stdout, "stderr": reply.stderr, "exitCode": reply.exit_code});
    if !reply.notes.is_empty() {
        output["notes"] = json!(reply.notes);
    }
    let mut r = if reply.exit_code == 0 {
        complete(reply.stdout)
    } else {
        task_failure(
            "unexpected_error",
            format!("the script exited with status {}", reply.exit_code),
            json!({"exitCode": reply.exit_code}),
        )
    };
    set_note(&mut r, "scriptOutput", output);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_that_fails_its_declared_type_names_the_path_and_keeps_the_reply() {
        let declared = Type::parse("string[][]").expect("a type");
        let schema = Output::Json(Some((&declared).into()));
        // A composite's final value, as `finish` conforms it: text to parse, or a
        // value its last step parsed already.
        let text = r#"[["a"], ["b", true]]"#;
        let r = conform(complete(text.into()), &schema);
        let e = &r["notes"]["error"];
        assert_eq!(e["reason"], "output_format_failure");
        assert_eq!(
            e["message"],
            "the output should be `string[][]` JSON, but at `$[1][1]` expected string, got boolean"
        );
        assert_eq!(
            e["details"],
            json!({"expected": "string[][]", "actual": "boolean", "path": "$[1][1]",
                   "expectedAtPath": "string", "content": text})
        );
        assert_eq!(r["content"], text);
        let mut parsed = complete("[]?".into());
        parsed["parsedContent"] = json!([["a"], "b"]);
        let r = conform(parsed, &schema);
        assert_eq!(r["notes"]["error"]["details"]["path"], "$[1]");
        assert_eq!(r["notes"]["error"]["details"]["expectedAtPath"], "string[]");
        assert_eq!(r["content"], "[]?");
        let ok = conform(complete(r#"[["a"], []]"#.into()), &schema);
        assert_eq!(ok["parsedContent"], json!([["a"], []]));
        let r = check_return(complete("12".into()), "number");
        assert_eq!(
            r["notes"]["error"]["message"],
            "the result should be `number`, but at `$` expected number, got string"
        );
        assert_eq!(r["content"], "12");
    }

    #[test]
    fn accumulated_context_keeps_the_latest_steps_within_its_cap() {
        let results: Vec<Value> = (0..1000)
            .map(|i| complete(format!("{i}:{}", "x".repeat(195))))
            .collect();
        let text = accumulate(&Value::Array(results), false);
        assert!(text.len() <= MAX_ACCUMULATED + 64, "{}", text.len());
        assert!(text.starts_with("(9"), "{}", &text[..40]);
        assert!(text
            .trim_end()
            .ends_with(&format!("Step 1000: 999:{}", "x".repeat(195))));
        let few = accumulate(&json!([complete("a".into()), complete("b".into())]), false);
        assert_eq!(few, "Step 1: a\nStep 2: b\n");
    }

    #[test]
    fn context_built_step_by_step_equals_the_context_built_in_one_go() {
        let mut acc = Accumulator::default();
        let mut results = Vec::new();
        for i in 0..400 {
            results.push(complete(format!("{i}:{}", "é".repeat(i % 150))));
            let all = Value::Array(results.clone());
            assert_eq!(
                acc.update(&all, false).to_string(),
                accumulate(&all, false),
                "step {i}"
            );
        }
        let all = Value::Array(results);
        assert_eq!(acc.update(&all, true).to_string(), accumulate(&all, true));
        let shorter = json!([complete("again".into())]);
        assert_eq!(
            acc.update(&shorter, true).to_string(),
            accumulate(&shorter, true)
        );
    }

    #[test]
    fn full_output_context_shows_each_steps_notes_without_its_token_counts() {
        let step = json!({"status": "COMPLETE", "content": "done",
            "notes": {"tokens": {"input": 812, "output": 90}, "contextFiles": ["a.rs"]}});
        let text = accumulate(&json!([step]), true);
        assert_eq!(
            text,
            "Step 1 output:\ndone\nStep 1 notes: {\"contextFiles\":[\"a.rs\"]}\n"
        );
    }

    #[test]
    fn a_context_still_held_by_a_host_is_not_changed_by_the_next_step() {
        let mut acc = Accumulator::default();
        let mut results = vec![complete("a".repeat(MAX_ACCUMULATED))];
        let held = acc.update(&Value::Array(results.clone()), true);
        let before = held.to_string();
        assert!(before.starts_with("Step 1 output:\naaa"));
        results.push(complete("b".into()));
        let next = acc.update(&Value::Array(results), true);
        assert_eq!(held.to_string(), before);
        assert_eq!(
            next.to_string(),
            "(1 earlier steps left out)\nStep 2 output:\nb\nStep 2 notes: {}\n"
        );
    }
}
