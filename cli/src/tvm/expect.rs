//! A test's `<expect>` against a result: paths into the result's JSON, and what the
//! value there must equal or hold.

use serde_json::Value;
use tv_compiler::ast::Check;

/// How much of a value a failed expectation quotes.
const QUOTED: usize = 300;

/// What is wrong, or `None` when the result meets the expectation.
pub fn check(check: &Check, result: &Value) -> Option<String> {
    match check {
        Check::Status(want) => {
            let got = result.get("status").and_then(Value::as_str).unwrap_or("");
            (got != want).then(|| {
                let error = result
                    .pointer("/notes/error/message")
                    .and_then(Value::as_str)
                    .map_or(String::new(), |m| format!(" ({m})"));
                format!("expected status {want}, got {got}{error}")
            })
        }
        Check::Exists { path } => match at(result, path) {
            Some(v) if !v.is_null() => None,
            Some(_) => Some(format!("expected a value at {path}, found null")),
            None => Some(format!(
                "expected a value at {path}, {}",
                missing(result, path)
            )),
        },
        Check::Equals { path, value } => holds(result, path, &format!("to equal {value}"), |v| {
            equals(v, value)
        }),
        Check::Contains { path, value } => {
            holds(result, path, &format!("to contain {value:?}"), |v| {
                contains(v, value)
            })
        }
    }
}

/// Whether the value at `path` is there and `ok` with it; else what is wrong, `wanted`
/// saying what was expected of it.
fn holds(result: &Value, path: &str, wanted: &str, ok: impl Fn(&Value) -> bool) -> Option<String> {
    match at(result, path) {
        Some(v) if ok(v) => None,
        Some(v) => Some(format!("expected {path} {wanted}, got {}", quote(v))),
        None => Some(format!(
            "expected {path} {wanted}, {}",
            missing(result, path)
        )),
    }
}

/// The value at a dotted path: object keys, and array indexes by number.
pub fn at<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.').try_fold(value, |v, key| match v {
        Value::Object(m) => m.get(key),
        Value::Array(a) => key.parse::<usize>().ok().and_then(|i| a.get(i)),
        _ => None,
    })
}

/// Where a path leaves the result, and what was there instead: "but `parsedContent`
/// has no `aproved` (it has: approved, findings)".
fn missing(result: &Value, path: &str) -> String {
    let mut here = result;
    let mut walked: Vec<&str> = Vec::new();
    for key in path.split('.') {
        let next = match here {
            Value::Object(m) => m.get(key),
            Value::Array(a) => key.parse::<usize>().ok().and_then(|i| a.get(i)),
            _ => None,
        };
        let Some(next) = next else {
            let place = if walked.is_empty() {
                "the result".to_string()
            } else {
                format!("`{}`", walked.join("."))
            };
            let has = match here {
                Value::Object(m) => {
                    format!(
                        "it has: {}",
                        m.keys().cloned().collect::<Vec<_>>().join(", ")
                    )
                }
                Value::Array(a) => format!("it has {} elements", a.len()),
                other => format!("it is {}", quote(other)),
            };
            return format!("but {place} has no `{key}` ({has})");
        };
        walked.push(key);
        here = next;
    }
    format!("but the result has no {path}")
}

/// `equals="..."`: the text read as JSON equals the value (`true`, `3`, `["a"]`), or
/// the value is a string and the text is that string.
fn equals(v: &Value, text: &str) -> bool {
    serde_json::from_str::<Value>(text).is_ok_and(|j| numbers_equal(&j, v) || j == *v)
        || v.as_str() == Some(text)
}

/// `3` and `3.0` are the same number to a reader of the test.
fn numbers_equal(a: &Value, b: &Value) -> bool {
    matches!((a.as_f64(), b.as_f64()), (Some(x), Some(y)) if a.is_number() && b.is_number() && x == y)
}

/// `contains="..."`: a substring of a string, an element of an array (equal as above),
/// a key of an object; of anything else, a substring of its JSON.
fn contains(v: &Value, text: &str) -> bool {
    match v {
        Value::String(s) => s.contains(text),
        Value::Array(items) => items.iter().any(|i| equals(i, text)),
        Value::Object(m) => m.contains_key(text),
        other => other.to_string().contains(text),
    }
}

fn quote(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() <= QUOTED {
        return text;
    }
    let cut: String = text.chars().take(QUOTED).collect();
    format!("{cut}... ({} bytes)", text.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn eq(path: &str, value: &str) -> Check {
        Check::Equals {
            path: path.into(),
            value: value.into(),
        }
    }

    fn has(path: &str, value: &str) -> Check {
        Check::Contains {
            path: path.into(),
            value: value.into(),
        }
    }

    #[test]
    fn paths_reach_into_objects_and_arrays() {
        let r = json!({"parsedContent": {"findings": ["a", "b"], "approved": true, "score": 3}});
        assert_eq!(check(&eq("parsedContent.approved", "true"), &r), None);
        assert_eq!(check(&eq("parsedContent.findings.1", "b"), &r), None);
        assert_eq!(check(&eq("parsedContent.score", "3.0"), &r), None);
        assert_eq!(check(&has("parsedContent.findings", "a"), &r), None);
        assert_eq!(check(&has("parsedContent", "approved"), &r), None);
        assert_eq!(
            check(&eq("parsedContent.approved", "false"), &r).as_deref(),
            Some("expected parsedContent.approved to equal false, got true")
        );
        assert_eq!(
            check(&eq("parsedContent.missing.x", "1"), &r).as_deref(),
            Some("expected parsedContent.missing.x to equal 1, but `parsedContent` has no `missing` (it has: findings, approved, score)")
        );
    }

    #[test]
    fn a_string_equals_its_text_even_when_the_text_reads_as_json() {
        let r = json!({"content": "42", "title": "Add a flag"});
        assert_eq!(check(&eq("content", "42"), &r), None);
        assert_eq!(check(&eq("title", "Add a flag"), &r), None);
        assert_eq!(check(&has("title", "a fl"), &r), None);
        assert!(check(&has("title", "missing"), &r).is_some());
    }

    #[test]
    fn a_wrong_status_names_the_error_of_the_run() {
        let r = json!({"status": "FAILED", "notes": {"error": {"message": "no reply"}}});
        assert_eq!(
            check(&Check::Status("COMPLETE".into()), &r).as_deref(),
            Some("expected status COMPLETE, got FAILED (no reply)")
        );
        assert_eq!(check(&Check::Status("FAILED".into()), &r), None);
    }
}
