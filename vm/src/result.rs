//! Task results and errors as JSON, exactly as DESIGN §7 spells them.

use serde_json::{json, Map, Value};

pub const COMPLETE: &str = "COMPLETE";
pub const FAILED: &str = "FAILED";
pub const CONTINUATION: &str = "CONTINUATION";

/// A COMPLETE result with text content.
pub fn complete(content: String) -> Value {
    complete_with(content, Map::new())
}

/// A COMPLETE result with its notes; built in place, as every LLM step makes one.
pub fn complete_with(content: String, notes: Map<String, Value>) -> Value {
    let mut r = Map::with_capacity(4);
    r.insert("status".into(), Value::String(COMPLETE.into()));
    r.insert("content".into(), Value::String(content));
    r.insert("notes".into(), Value::Object(notes));
    Value::Object(r)
}

/// A FAILED result carrying a TASK_FAILURE.
pub fn task_failure(reason: &str, message: impl Into<String>, details: Value) -> Value {
    let mut error = json!({"type": "TASK_FAILURE", "reason": reason, "message": message.into()});
    if !details.is_null() {
        error["details"] = details;
    }
    json!({"status": FAILED, "content": "", "notes": {"error": error}})
}

/// A FAILED result carrying a RESOURCE_EXHAUSTION.
pub fn exhausted(resource: &str, message: impl Into<String>, used: u64, limit: u64) -> Value {
    json!({"status": FAILED, "content": "", "notes": {"error": {
        "type": "RESOURCE_EXHAUSTION",
        "resource": resource,
        "message": message.into(),
        "metrics": {"used": used, "limit": limit},
    }}})
}

pub fn is_failed(r: &Value) -> bool {
    r.get("status").and_then(Value::as_str) == Some(FAILED)
}

/// The value a result stands for in expressions: parsed JSON when there is some.
pub fn value_of(r: &Value) -> Value {
    match r.get("parsedContent") {
        Some(v) => v.clone(),
        None => r.get("content").cloned().unwrap_or(Value::Null),
    }
}

/// Sets `notes.key` of a result.
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
