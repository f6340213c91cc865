//! The value rules the VM shares with the built-in functions: splicing into text,
//! truthiness, equality and ordering, and JSON read from model output.

use serde_json::{Number, Value};
use std::cmp::Ordering;

/// The kind of a value as types name it: `null`, `boolean`, `number`, `string`,
/// `array` or `object`.
pub fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Appends [`to_text`] of `v` to `out` without an intermediate copy.
pub fn push_text(out: &mut String, v: &Value) {
    match v {
        Value::String(s) => out.push_str(s),
        other => {
            use std::fmt::Write as _;
            // Writing into a String cannot fail.
            let _ = write!(out, "{other}");
        }
    }
}

/// [`to_text`] of a value the caller no longer needs: a string is moved, not copied.
pub fn into_text(v: Value) -> String {
    match v {
        Value::String(s) => s,
        other => other.to_string(),
    }
}

/// `s` cut to at most `max` characters, with `…` after the cut; as it is when shorter.
/// By characters, never bytes: a byte cut could split "é". For messages that quote a
/// value that may be long.
pub fn cut_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &s[..end]),
        None => s.to_string(),
    }
}

/// How a value is spliced into text: a string as it is, anything else as compact JSON
/// (null -> "null").
pub fn to_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Truthiness used by `<case test>` and `<condition>`: null, false, 0, "", [] and {} are
/// false; everything else true.
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        // -0.0 is zero too; serde_json never holds NaN.
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Equality and ordering used by the comparison operators: numbers compare numerically
/// (1 == 1.0), strings by Unicode code points, other kinds only by `equal`; ordering of
/// mismatched kinds (or of unequal non-numbers, non-strings) is None.
pub fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y),
        // Byte order of UTF-8 is code point order.
        (Value::String(x), Value::String(y)) => Some(x.cmp(y)),
        _ => equal(a, b).then_some(Ordering::Equal),
    }
}

/// Structural equality where numbers compare numerically at every depth, so
/// `[1] == [1.0]` and `contains([1.0], 1)` agree with `1 == 1.0`.
pub fn equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => compare_numbers(x, y) == Some(Ordering::Equal),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| equal(v, w)))
        }
        _ => a == b,
    }
}

/// Integers compare exactly (i64 and u64 both fit i128); anything with a fraction as f64.
fn compare_numbers(x: &Number, y: &Number) -> Option<Ordering> {
    match (int_of(x), int_of(y)) {
        (Some(i), Some(j)) => Some(i.cmp(&j)),
        _ => x.as_f64()?.partial_cmp(&y.as_f64()?),
    }
}

pub(crate) fn int_of(n: &Number) -> Option<i128> {
    n.as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))
}

pub use crate::reading::parse_json_text;

/// At least the [`weight`] of the value JSON `text` holds, found without parsing it: a
/// value for each `[`, `{`, `,` and `:` outside strings (every value but the first
/// follows one), and every byte as text. `[0,0,0,...]` weighs sixteen times its
/// length once parsed, so what reads JSON it does not trust measures it first.
pub fn json_weight_bound(text: &[u8]) -> u64 {
    const NODE: u64 = std::mem::size_of::<serde_json::Value>() as u64;
    let (mut values, mut in_string, mut escaped) = (1u64, false, false);
    for &b in text {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' | b',' | b':' => values += 1,
            _ => {}
        }
    }
    values
        .saturating_mul(NODE)
        .saturating_add(text.len() as u64)
}

/// About how many bytes a value takes: what copying it costs.
pub fn weight(v: &serde_json::Value) -> u64 {
    use serde_json::Value;
    // Every value takes this much besides its text, which for deeply copied arrays
    // and objects is most of what they take.
    const NODE: u64 = std::mem::size_of::<Value>() as u64;
    // Most values the machine copies are text: no walk, no allocation.
    match v {
        Value::String(s) => return NODE + s.len() as u64,
        Value::Null | Value::Bool(_) | Value::Number(_) => return NODE,
        Value::Array(_) | Value::Object(_) => {}
    }
    let mut total = 0;
    let mut todo = vec![v];
    while let Some(v) = todo.pop() {
        total += NODE;
        match v {
            Value::String(s) => total += s.len() as u64,
            Value::Array(items) => todo.extend(items),
            Value::Object(fields) => {
                for (k, v) in fields {
                    total += k.len() as u64;
                    todo.push(v);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
    total
}

#[cfg(test)]
mod weight_bound_tests {
    use super::*;

    #[test]
    fn the_bound_of_json_text_is_never_below_the_weight_of_its_value() {
        for text in [
            "0",
            "[0,0,0,0]",
            "{\"a\":[1,{\"b\":\"x,y:[z]\"}],\"c\":null}",
            "\"a \\\" quoted, [bracket]\"",
            "[[],[],{},[[[]]]]",
            "{\"k\":\"\\\\\",\"l\":[true,false]}",
        ] {
            let v: serde_json::Value = serde_json::from_str(text).unwrap();
            assert!(json_weight_bound(text.as_bytes()) >= weight(&v), "{text}");
        }
        // Small numbers weigh far more than their text, and the bound says so.
        let zeros = format!("[{}0]", "0,".repeat(999));
        assert!(json_weight_bound(zeros.as_bytes()) >= 1000 * 32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    #[test]
    fn to_text_splices_strings_bare_and_the_rest_as_json() {
        assert_eq!(to_text(&json!("a b")), "a b");
        assert_eq!(to_text(&json!(null)), "null");
        assert_eq!(to_text(&json!(3)), "3");
        assert_eq!(to_text(&json!({"a": "b"})), "{\"a\":\"b\"}");
    }

    #[test]
    fn truthiness_treats_empty_and_zero_values_as_false() {
        for v in [
            json!(null),
            json!(false),
            json!(0),
            json!(-0.0),
            json!(""),
            json!([]),
            json!({}),
        ] {
            assert!(!truthy(&v), "{v}");
        }
        for v in [
            json!(true),
            json!(-1.5),
            json!(" "),
            json!([0]),
            json!({"a": null}),
        ] {
            assert!(truthy(&v), "{v}");
        }
    }

    #[test]
    fn numbers_compare_numerically_across_integer_and_float() {
        assert!(equal(&json!(1), &json!(1.0)));
        assert_eq!(compare(&json!(-1), &json!(u64::MAX)), Some(Ordering::Less));
        assert_eq!(compare(&json!(2.5), &json!(2)), Some(Ordering::Greater));
        assert_eq!(
            compare(&json!(i64::MIN), &json!(i64::MIN)),
            Some(Ordering::Equal)
        );
        assert!(equal(&json!([1, {"a": 2}]), &json!([1.0, {"a": 2.0}])));
    }

    #[test]
    fn strings_compare_by_code_point() {
        assert_eq!(compare(&json!("B"), &json!("a")), Some(Ordering::Less));
        assert_eq!(compare(&json!("z"), &json!("é")), Some(Ordering::Less));
        assert_eq!(compare(&json!(""), &json!("")), Some(Ordering::Equal));
    }

    #[test]
    fn other_kinds_are_only_equal_or_unordered() {
        assert_eq!(compare(&json!(1), &json!("1")), None);
        assert!(!equal(&json!(1), &json!("1")));
        assert_eq!(compare(&json!(true), &json!(false)), None);
        assert_eq!(compare(&json!(null), &json!(null)), Some(Ordering::Equal));
        assert_eq!(compare(&json!([1]), &json!([1.0])), Some(Ordering::Equal));
        assert_eq!(compare(&json!([1]), &json!([2])), None);
        assert!(!equal(&json!({"a": 1}), &json!({"b": 1})));
        assert!(!equal(&json!([1]), &json!([1, 2])));
    }
}
