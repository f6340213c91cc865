//! Subtask spawning (DESIGN §6): recognising a request, choosing its template, and the
//! failure shape when it cannot run.

use crate::bundle::{Bundle, ContextSettings, Inherit, StatedContext, CONTEXT_PARAM};
use crate::result::{Reason, Status, TaskError, TaskResult};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use tv_stdlib::text::{words, Words};
use tv_stdlib::values::kind_of;

/// Below this Jaccard score no template is a match for a description.
pub(crate) const MIN_MATCH: f64 = 0.1;

/// The subtask request in a reply: one the host took from a tool call, or a JSON
/// reply `{"status": "CONTINUATION", "subtask_request": {...}}` (also under `notes`).
pub(crate) fn request_in(tool: Option<&Value>, parsed: Option<&Value>) -> Option<Value> {
    if let Some(t) = tool {
        return Some(t.clone());
    }
    let v = parsed?;
    if Status::of(v) != Some(Status::Continuation) {
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

/// The most paths a request's `file_paths` may name, and the longest path: a model's
/// list is untrusted and each path read or refused costs a look-up and a warning.
pub(crate) const MAX_REQUESTED_FILES: usize = 100;
const MAX_PATH_BYTES: usize = 4096;

/// What a subtask request states about its context (the seeds' `context_management`
/// and `file_paths`), checked. A field left `None` was not stated.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Overrides {
    pub(crate) stated: StatedContext,
    /// Paths the subtask's atomic tasks read instead of their templates' `file_paths`;
    /// empty when the request names none.
    pub(crate) files: Vec<String>,
}

/// The request's `context_management` and `file_paths`. Values outside the seeds'
/// vocabulary, and two settings that contradict each other (fresh context with an
/// inherited one), are refused: the model gets an `input_validation_failure` instead
/// of a silently different subtask.
pub(crate) fn overrides(req: &Value) -> Result<Overrides, String> {
    let mut o = Overrides::default();
    match req.get("context_management") {
        None | Some(Value::Null) => {}
        Some(Value::Object(cm)) => {
            for (key, v) in cm {
                let bad = || {
                    format!(
                        "context_management: `{key}` cannot be {v}; it takes {}",
                        takes(key)
                    )
                };
                match key.as_str() {
                    "inherit_context" => {
                        o.stated.inherit =
                            Some(v.as_str().and_then(Inherit::parse).ok_or_else(bad)?);
                    }
                    "accumulate_data" => {
                        o.stated.accumulate = Some(match v {
                            Value::Bool(b) => *b,
                            Value::String(s) if s == "true" => true,
                            Value::String(s) if s == "false" => false,
                            _ => return Err(bad()),
                        });
                    }
                    "accumulation_format" => {
                        o.stated.full_output = Some(match v.as_str() {
                            Some("notes_only" | "minimal") => false,
                            Some("full_output" | "full") => true,
                            _ => return Err(bad()),
                        });
                    }
                    "fresh_context" => {
                        o.stated.fresh = Some(match v.as_str() {
                            Some("enabled") => true,
                            Some("disabled") => false,
                            _ => return Err(bad()),
                        });
                    }
                    _ => {
                        return Err(format!(
                            "context_management: unknown setting `{key}`; the settings are \
                             inherit_context, accumulate_data, accumulation_format, fresh_context"
                        ))
                    }
                }
            }
        }
        Some(other) => {
            return Err(format!(
                "context_management should be an object but is {}",
                kind_of(other)
            ))
        }
    }
    if let (Some(true), Some(i @ (Inherit::Full | Inherit::Subset))) =
        (o.stated.fresh, o.stated.inherit)
    {
        return Err(format!(
            "context_management states fresh_context=enabled and inherit_context={i}, which \
             conflict: fresh context requires inherit_context=none"
        ));
    }
    match req.get("file_paths") {
        None | Some(Value::Null) => {}
        Some(Value::Array(paths)) => {
            if paths.len() > MAX_REQUESTED_FILES {
                return Err(format!(
                    "file_paths names {} paths; at most {MAX_REQUESTED_FILES} are read",
                    paths.len()
                ));
            }
            for p in paths {
                match p.as_str() {
                    // No path holds a NUL; a reader that stopped at it would read another.
                    Some(s) if s.contains('\0') => {
                        return Err("file_paths: a path holds a NUL byte".into())
                    }
                    Some(s) if s.len() <= MAX_PATH_BYTES => o.files.push(s.to_string()),
                    Some(_) => {
                        return Err(format!(
                            "file_paths: a path is longer than {MAX_PATH_BYTES} bytes"
                        ))
                    }
                    None => {
                        return Err(format!(
                            "file_paths should hold strings but holds {}",
                            kind_of(p)
                        ))
                    }
                }
            }
        }
        Some(other) => {
            return Err(format!(
                "file_paths should be an array of strings but is {}",
                kind_of(other)
            ))
        }
    }
    Ok(o)
}

/// The values a `context_management` setting takes, for messages.
fn takes(key: &str) -> &'static str {
    match key {
        "inherit_context" => "full, none or subset",
        "accumulate_data" => "true or false",
        "accumulation_format" => "notes_only (minimal) or full_output (full)",
        _ => "enabled or disabled",
    }
}

impl Overrides {
    /// `base` (a task's settings as a spawned subtask) with the request's settings
    /// merged over it (DESIGN §3): a stated setting wins and the other dimension takes
    /// the compatible value (fresh context stated on ⇒ nothing inherited; an inherited
    /// context stated ⇒ no fresh context). Named files take precedence over matching:
    /// with them, fresh context runs only when the request states it.
    pub(crate) fn apply(&self, base: &ContextSettings) -> ContextSettings {
        let mut s = base.merged(&self.stated);
        if !self.files.is_empty() && self.stated.fresh != Some(true) {
            s.fresh = false;
        }
        s
    }
}

/// |A ∩ B| / |A ∪ B| over lower-cased words.
pub(crate) fn jaccard(a: &str, b: &str) -> f64 {
    let set = |s| -> BTreeSet<_> { words(s, Words::default()).collect() };
    let (a, b) = (set(a), set(b));
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
pub(crate) fn select(bundle: &Bundle, req: &Value) -> Result<u32, String> {
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
            m.task_type.as_str() == kind && subtype.is_none_or(|s| m.subtype.as_deref() == Some(s))
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
/// checked against its parameter's type: the model's values are untrusted. Parameters
/// are strict, as for `tvm run`: an input the template does not take, and a parameter
/// the request leaves out, are refused by name (never passed on as `null`). The context
/// a template inherits is not an input: it comes from the session that asked.
pub(crate) fn arguments(
    bundle: &Bundle,
    function: u32,
    inputs: &Value,
) -> Result<Vec<Value>, String> {
    let Some(f) = bundle.functions.get(function as usize) else {
        return Err("the selected template does not exist".into());
    };
    let names = || {
        let names: Vec<&str> = (f.params.iter())
            .filter(|p| p.name != CONTEXT_PARAM)
            .map(|p| p.name.as_str())
            .collect();
        match names.is_empty() {
            true => "it takes none".to_string(),
            false => format!("its parameters: {}", names.join(", ")),
        }
    };
    let given = inputs.as_object();
    let unknown = given.and_then(|m| {
        m.keys()
            .find(|k| *k == CONTEXT_PARAM || !f.params.iter().any(|p| &p.name == *k))
    });
    if let Some(unknown) = unknown {
        return Err(format!(
            "`{}` has no parameter `{unknown}` ({})",
            f.name,
            names()
        ));
    }
    f.params
        .iter()
        .map(|p| {
            if p.name == CONTEXT_PARAM {
                return Ok(Value::String(String::new()));
            }
            let Some(v) = given.and_then(|m| m.get(&p.name)).cloned() else {
                return Err(format!(
                    "input `{}` of `{}` is missing: a subtask request gives every parameter ({})",
                    p.name,
                    f.name,
                    names()
                ));
            };
            match p.ty.to_type().mismatch(&v) {
                None => Ok(v),
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

/// The parent's result when its subtask could not run or failed; `error` is the
/// subtask's error (its value form, as a failed subtask's result holds it). The message
/// is the seeds' "Subtask execution failed" followed by the subtask error's own, so that
/// the reason shows where the message is read, not only in the details.
pub(crate) fn failure(request: &Value, error: Value, depth: usize, partial: &str) -> TaskResult {
    let message = match error.get("message").and_then(Value::as_str) {
        Some(why) if !why.is_empty() => format!("Subtask execution failed: {why}"),
        _ => "Subtask execution failed".to_string(),
    };
    let details = json!({
        "subtaskRequest": request,
        "subtaskError": error,
        "nestingDepth": depth,
        "partialOutput": partial,
    });
    let error = TaskError::failure(Reason::SubtaskFailure, message);
    TaskResult::failed(error.with_details(details))
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

    fn settings(inherit: Inherit, fresh: bool) -> ContextSettings {
        ContextSettings {
            inherit,
            accumulate: false,
            full_output: false,
            fresh,
        }
    }

    #[test]
    fn a_requests_stated_setting_wins_and_the_other_dimension_takes_the_compatible_value() {
        let base = settings(Inherit::Subset, false);
        let o = |cm: Value| overrides(&json!({"context_management": cm})).unwrap();
        let fresh = o(json!({"fresh_context": "enabled"}));
        assert_eq!(fresh.apply(&base), settings(Inherit::None, true));
        let full = o(json!({"inherit_context": "full"}));
        assert_eq!(
            full.apply(&settings(Inherit::None, true)),
            settings(Inherit::Full, false)
        );
        let none = o(json!({"inherit_context": "none"}));
        assert_eq!(
            none.apply(&settings(Inherit::None, true)),
            settings(Inherit::None, true)
        );
        let format = o(json!({"accumulation_format": "full", "accumulate_data": true}));
        let merged = format.apply(&base);
        assert!(merged.full_output && merged.accumulate);
    }

    #[test]
    fn named_files_turn_fresh_context_off_unless_the_request_states_it() {
        let base = settings(Inherit::None, true);
        let files = overrides(&json!({"file_paths": ["a.rs"]})).unwrap();
        assert_eq!(files.apply(&base), settings(Inherit::None, false));
        let both = overrides(&json!({"file_paths": ["a.rs"],
            "context_management": {"fresh_context": "enabled"}}))
        .unwrap();
        assert_eq!(both.apply(&base), settings(Inherit::None, true));
    }

    #[test]
    fn conflicting_or_unknown_request_settings_are_refused() {
        let e = overrides(&json!({"context_management":
            {"fresh_context": "enabled", "inherit_context": "subset"}}))
        .unwrap_err();
        assert!(
            e.contains("fresh_context=enabled") && e.contains("inherit_context=subset"),
            "{e}"
        );
        let e = overrides(&json!({"context_management": {"fresh_context": "yes"}})).unwrap_err();
        assert!(e.contains("enabled or disabled"), "{e}");
        let e = overrides(&json!({"context_management": {"inherit": "full"}})).unwrap_err();
        assert!(e.contains("unknown setting `inherit`"), "{e}");
        let e = overrides(&json!({"file_paths": "a.rs"})).unwrap_err();
        assert!(e.contains("array of strings"), "{e}");
        let e = overrides(&json!({"file_paths": ["notes.md\0.env"]})).unwrap_err();
        assert_eq!(e, "file_paths: a path holds a NUL byte");
    }

    #[test]
    fn validation_names_the_missing_field() {
        let e = validate(&json!({"type": "atomic", "inputs": {}})).unwrap_err();
        assert!(e.contains("description"), "{e}");
    }
}
