//! Building task results: from host replies, for failed sequences and reductions,
//! and for return-type checks. Pure functions of their inputs.

/// Shell quoting lived here before it had a module of its own; `tvc`'s tests still
/// reach it by this path.
pub use crate::shell::{shell_quote, shell_quote_in};

use crate::bundle::Output;
use crate::host::{LlmReply, ScriptReply};
use crate::result::{complete, complete_with, exhausted, is_failed, set_note, task_failure};
use serde_json::{json, Map, Value};
use tv_stdlib::types::{Mismatch, Type, MISSING};
use tv_stdlib::values::{self as f, kind_of, to_text};

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
    let content = r.get("content").map(to_text).unwrap_or_default();
    let parsed = match r.get("parsedContent") {
        Some(v) => Ok(v.clone()),
        None => f::parse_json_text(&content),
    };
    match (parsed, schema) {
        (Ok(v), None) => r["parsedContent"] = v,
        (Ok(v), Some(ty)) => {
            let expected = Type::parse(ty).unwrap_or(Type::Any);
            if let Some(m) = expected.mismatch(&v) {
                let should = format!("the output should be `{ty}` JSON");
                return mismatched(should, ty, &m, Value::String(content));
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
        let schema = Output::Json(Some("string[][]".into()));
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
}
