//! Subtask spawning (DESIGN §6): recognising a request, choosing its template, and the
//! failure shape when it cannot run.

use crate::bundle::Bundle;
use crate::result::task_failure;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use tv_stdlib::types::Type;

/// Below this Jaccard score no template is a match for a description.
pub const MIN_MATCH: f64 = 0.1;

/// The subtask request in a reply: one the host took from a tool call, or a JSON
/// reply `{"status": "CONTINUATION", "subtask_request": {...}}` (also under `notes`).
pub fn request_in(tool: Option<&Value>, parsed: Option<&Value>) -> Option<Value> {
    if let Some(t) = tool {
        return Some(t.clone());
    }
    let v = parsed?;
    if v.get("status").and_then(Value::as_str) != Some("CONTINUATION") {
        return None;
    }
    v.get("subtask_request")
        .or_else(|| v.pointer("/notes/subtask_request"))
        .cloned()
}

/// Checks the required fields of a SubtaskRequest.
pub fn validate(req: &Value) -> Result<(), String> {
    let has = |k: &str, ok: fn(&Value) -> bool| req.get(k).is_some_and(ok);
    if !req.is_object() {
        return Err("the subtask request is not an object".into());
    }
    if !has("type", Value::is_string) {
        return Err("the subtask request needs a string `type`".into());
    }
    if !has("description", Value::is_string) {
        return Err("the subtask request needs a string `description`".into());
    }
    if !has("inputs", Value::is_object) {
        return Err("the subtask request needs an object `inputs`".into());
    }
    Ok(())
}

fn words(s: &str) -> BTreeSet<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// |A ∩ B| / |A ∪ B| over lower-cased words.
pub fn jaccard(a: &str, b: &str) -> f64 {
    let (a, b) = (words(a), words(b));
    let union = a.union(&b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(&b).count() as f64 / union as f64
}

/// The function a request runs: a hinted template by name, else the registered
/// template of that type (and subtype) whose description matches best. A hint names
/// only what matching could select (atomic templates): the model chooses among the
/// author's subtasks, never an arbitrary entry point such as a script.
pub fn select(bundle: &Bundle, req: &Value) -> Result<u32, String> {
    let hints = req.get("template_hints").and_then(Value::as_array);
    for hint in hints.into_iter().flatten().filter_map(Value::as_str) {
        let selectable = bundle.entry(hint).filter(|e| {
            bundle
                .functions
                .get(e.function as usize)
                .is_some_and(|f| f.matchable.is_some())
        });
        if let Some(e) = selectable {
            return Ok(e.function);
        }
    }
    let kind = req.get("type").and_then(Value::as_str).unwrap_or("atomic");
    let subtype = req.get("subtype").and_then(Value::as_str);
    let description = req.get("description").and_then(Value::as_str).unwrap_or("");
    let best = bundle
        .functions
        .iter()
        .enumerate()
        .filter_map(|(i, f)| f.matchable.as_ref().map(|m| (i, m)))
        .filter(|(_, m)| {
            m.task_type == kind && subtype.is_none_or(|s| m.subtype.as_deref() == Some(s))
        })
        .map(|(i, m)| (i, jaccard(description, &m.description)))
        .fold(None, |best: Option<(usize, f64)>, (i, s)| match best {
            Some((_, b)) if b >= s => best,
            _ => Some((i, s)),
        });
    match best {
        Some((i, score)) if score >= MIN_MATCH || subtype.is_some() => Ok(i as u32),
        _ => Err(format!(
            "no registered {kind} template matches \"{description}\""
        )),
    }
}

/// The arguments of `function` from a request's `inputs`, by parameter name, each
/// checked against its parameter's type: the model's values are untrusted.
pub fn arguments(bundle: &Bundle, function: u32, inputs: &Value) -> Result<Vec<Value>, String> {
    let Some(f) = bundle.functions.get(function as usize) else {
        return Err("the selected template does not exist".into());
    };
    f.params
        .iter()
        .map(|p| {
            let v = inputs.get(&p.name).cloned().unwrap_or(Value::Null);
            let ty = Type::parse(&p.ty).unwrap_or(Type::Any);
            match ty.mismatch(&v) {
                None => Ok(v),
                // A missing input is `null` here, and named so.
                Some(m) if m.path == "$" => Err(format!(
                    "input `{}` of `{}` should be `{}` but is {}",
                    p.name, f.name, p.ty, m.found
                )),
                Some(m) => Err(format!(
                    "input `{}` of `{}` should be `{}`, but {m}",
                    p.name, f.name, p.ty
                )),
            }
        })
        .collect()
}

/// The parent's result when its subtask could not run or failed.
pub fn failure(request: &Value, error: Value, depth: usize, partial: &str) -> Value {
    task_failure(
        "subtask_failure",
        "Subtask execution failed",
        json!({
            "subtaskRequest": request,
            "subtaskError": error,
            "nestingDepth": depth,
            "partialOutput": partial,
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jaccard_counts_shared_words_over_all_words() {
        assert_eq!(jaccard("Fix the bug", "fix a BUG"), 2.0 / 4.0);
        assert_eq!(jaccard("", ""), 0.0);
    }

    #[test]
    fn a_request_is_found_in_a_continuation_reply_or_its_notes() {
        let r = json!({"status": "CONTINUATION", "notes": {"subtask_request": {"type": "atomic"}}});
        assert_eq!(request_in(None, Some(&r)), Some(json!({"type": "atomic"})));
        assert_eq!(request_in(None, Some(&json!({"status": "COMPLETE"}))), None);
    }

    #[test]
    fn validation_names_the_missing_field() {
        let e = validate(&json!({"type": "atomic", "inputs": {}})).unwrap_err();
        assert!(e.contains("description"), "{e}");
    }
}
