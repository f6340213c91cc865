//! The built-in functions at run time, over `serde_json::Value`, plus the value rules the VM
//! shares with them: splicing into text, truthiness, equality and ordering, JSON from model
//! output. Signatures (names, parameters, arity) come from `builtins::BUILTINS`.

pub type Value = serde_json::Value;

use crate::builtins::{self, Builtin};
use serde_json::Number;
use std::cmp::Ordering;
use std::fmt;

/// A built-in called with a value it cannot use. `function` is the name as called.
#[derive(Debug, Clone, PartialEq)]
pub struct BuiltinError {
    pub function: String,
    pub message: String,
}

impl fmt::Display for BuiltinError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.function, self.message)
    }
}

impl std::error::Error for BuiltinError {}

/// Calls a built-in by name with its arguments already bound by position (optional trailing
/// ones may be absent). An unknown name or a wrong number of arguments is an error, not a
/// panic: the VM may run bytecode from an older or foreign compiler.
pub fn call(name: &str, args: &[Value]) -> Result<Value, BuiltinError> {
    let Some(builtin) = builtins::lookup(name) else {
        return Err(BuiltinError {
            function: name.to_string(),
            message: "there is no built-in function with this name".into(),
        });
    };
    let c = Call { builtin, args };
    let (min, max) = (builtin.min_arity(), builtin.max_arity());
    if args.len() < min || args.len() > max {
        let wanted = if min == max {
            format!("{min}")
        } else {
            format!("{min} to {max}")
        };
        return Err(c.fail(format!("takes {wanted} arguments, found {}", args.len())));
    }
    dispatch(&c)
}

fn dispatch(c: &Call) -> Result<Value, BuiltinError> {
    match c.builtin.name {
        "upper" => Ok(c.str(0)?.to_uppercase().into()),
        "lower" => Ok(c.str(0)?.to_lowercase().into()),
        "trim" => Ok(c.str(0)?.trim().into()),
        "len" => len(c),
        "join" => join(c),
        "split" => split(c),
        "replace" => replace(c),
        "contains" => contains(c),
        "default" => Ok(default(c)),
        "json" => Ok(c.arg(0).to_string().into()),
        "keys" => Ok(c.object(0)?.keys().cloned().collect::<Vec<_>>().into()),
        "get" => get(c),
        "str" => Ok(to_text(c.arg(0)).into()),
        "parse_json" => {
            parse_json_text(c.str(0)?).map_err(|e| c.fail(format!("the text is not JSON: {e}")))
        }
        "truncate" => truncate(c),
        "starts_with" => Ok(c.str(0)?.starts_with(c.str(1)?).into()),
        "ends_with" => Ok(c.str(0)?.ends_with(c.str(1)?).into()),
        // A signature in BUILTINS without a body here; a test keeps this unreachable.
        _ => Err(c.fail("is declared but has no implementation".into())),
    }
}

/// One call in progress: the signature (for the function and parameter names in errors)
/// and the arguments.
struct Call<'a> {
    builtin: &'static Builtin,
    args: &'a [Value],
}

impl<'a> Call<'a> {
    fn fail(&self, message: String) -> BuiltinError {
        BuiltinError {
            function: self.builtin.name.to_string(),
            message,
        }
    }

    /// The error for argument `i` not being what the function wants.
    fn wrong(&self, i: usize, expected: &str) -> BuiltinError {
        let param = self.builtin.params.get(i).map_or("?", |p| p.name);
        self.fail(format!(
            "expected {expected} for `{param}`, found {}",
            describe(self.arg(i))
        ))
    }

    /// Argument `i`; absent ones read as null so a short slice never panics.
    fn arg(&self, i: usize) -> &'a Value {
        self.args.get(i).unwrap_or(&Value::Null)
    }

    fn opt(&self, i: usize) -> Option<&'a Value> {
        self.args.get(i)
    }

    fn str(&self, i: usize) -> Result<&'a str, BuiltinError> {
        self.arg(i)
            .as_str()
            .ok_or_else(|| self.wrong(i, "a string"))
    }

    fn array(&self, i: usize) -> Result<&'a Vec<Value>, BuiltinError> {
        self.arg(i)
            .as_array()
            .ok_or_else(|| self.wrong(i, "an array"))
    }

    fn object(&self, i: usize) -> Result<&'a serde_json::Map<String, Value>, BuiltinError> {
        self.arg(i)
            .as_object()
            .ok_or_else(|| self.wrong(i, "an object"))
    }

    /// A string argument that must not be empty (splitting or replacing on "" has no
    /// single sensible meaning).
    fn non_empty_str(&self, i: usize) -> Result<&'a str, BuiltinError> {
        let s = self.str(i)?;
        if s.is_empty() {
            return Err(self.wrong(i, "a non-empty string"));
        }
        Ok(s)
    }
}

fn len(c: &Call) -> Result<Value, BuiltinError> {
    let n = match c.arg(0) {
        Value::String(s) => s.chars().count(),
        Value::Array(a) => a.len(),
        Value::Object(o) => o.len(),
        _ => return Err(c.wrong(0, "a string, an array or an object")),
    };
    Ok(n.into())
}

fn join(c: &Call) -> Result<Value, BuiltinError> {
    let items = c.array(0)?;
    let separator = match c.opt(1) {
        Some(_) => c.str(1)?,
        None => ", ",
    };
    let texts: Vec<String> = items.iter().map(to_text).collect();
    Ok(texts.join(separator).into())
}

fn split(c: &Call) -> Result<Value, BuiltinError> {
    let text = c.str(0)?;
    let separator = c.non_empty_str(1)?;
    Ok(text.split(separator).collect::<Vec<_>>().into())
}

fn replace(c: &Call) -> Result<Value, BuiltinError> {
    let text = c.str(0)?;
    let from = c.non_empty_str(1)?;
    let to = c.str(2)?;
    Ok(text.replace(from, to).into())
}

fn contains(c: &Call) -> Result<Value, BuiltinError> {
    let needle = c.arg(1);
    let found = match c.arg(0) {
        Value::String(s) => s.contains(to_text(needle).as_str()),
        Value::Array(a) => a.iter().any(|item| equal(item, needle)),
        // Object keys are strings; a number needle is more likely a mistake than a key.
        Value::Object(o) => o.contains_key(c.str(1).map_err(|_| c.wrong(1, "a string key"))?),
        _ => return Err(c.wrong(0, "a string, an array or an object")),
    };
    Ok(found.into())
}

fn default(c: &Call) -> Value {
    match c.arg(0) {
        Value::Null => c.arg(1).clone(),
        Value::String(s) if s.is_empty() => c.arg(1).clone(),
        v => v.clone(),
    }
}

fn get(c: &Call) -> Result<Value, BuiltinError> {
    let fallback = || c.opt(2).cloned().unwrap_or(Value::Null);
    let key = c.arg(1);
    let found = match c.arg(0) {
        // Null reads as "nothing there", so `get(get(a, "b"), "c")` chains without errors.
        Value::Null => None,
        Value::Object(o) => {
            let key = key.as_str().ok_or_else(|| c.wrong(1, "a string key"))?;
            o.get(key)
        }
        Value::Array(a) => {
            let index = array_index(key).ok_or_else(|| c.wrong(1, "an integer index"))?;
            resolve_index(a, index)
        }
        _ => return Err(c.wrong(0, "an object or an array")),
    };
    Ok(found.cloned().unwrap_or_else(fallback))
}

/// An array index from a whole number or a numeric string ("2", "-1"). Out-of-range
/// floats saturate, so they read as absent rather than wrapping around.
fn array_index(key: &Value) -> Option<i128> {
    match key {
        Value::Number(n) => whole_number(n),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn whole_number(n: &Number) -> Option<i128> {
    if let Some(i) = int_of(n) {
        return Some(i);
    }
    let f = n.as_f64()?;
    (f.fract() == 0.0).then_some(f as i128)
}

/// The item at `index`, negative counting from the end; None when out of range.
fn resolve_index(items: &[Value], index: i128) -> Option<&Value> {
    let len = i128::try_from(items.len()).ok()?;
    let i = if index < 0 { len + index } else { index };
    usize::try_from(i).ok().and_then(|i| items.get(i))
}

fn truncate(c: &Call) -> Result<Value, BuiltinError> {
    let text = c.str(0)?;
    let max = c
        .arg(1)
        .as_number()
        .and_then(whole_number)
        .filter(|n| *n >= 0)
        .ok_or_else(|| c.wrong(1, "a non-negative whole number"))?;
    let max = usize::try_from(max).unwrap_or(usize::MAX);
    // By characters, never by bytes: a byte cut could split "é".
    Ok(text.chars().take(max).collect::<String>().into())
}

/// A short description of a value for error messages: its kind, then a preview.
fn describe(v: &Value) -> String {
    const PREVIEW: usize = 40;
    let kind = match v {
        Value::Null => return "null".into(),
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let json = v.to_string();
    if json.chars().count() > PREVIEW {
        let cut: String = json.chars().take(PREVIEW).collect();
        format!("{kind} {cut}…")
    } else {
        format!("{kind} {json}")
    }
}

/// How a value is spliced into text: a string as it is, anything else as compact JSON
/// (null -> "null").
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

fn int_of(n: &Number) -> Option<i128> {
    n.as_i64()
        .map(i128::from)
        .or_else(|| n.as_u64().map(i128::from))
}

/// Parses model output as JSON: the whole text, or else the first fenced block labelled
/// `json` (any case) or unlabelled. Models often wrap JSON in prose and a fence.
pub fn parse_json_text(text: &str) -> Result<Value, String> {
    let whole_error = match serde_json::from_str(text) {
        Ok(v) => return Ok(v),
        Err(e) => e.to_string(),
    };
    match fenced_json(text) {
        Some(body) => serde_json::from_str(body).map_err(|e| e.to_string()),
        None => Err(whole_error),
    }
}

/// The body of the first ``` block whose label is `json` or empty. An unclosed fence runs
/// to the end (a reply cut off by the token limit). All slicing is next to ASCII "```"
/// or '\n', so it stays on character boundaries.
fn fenced_json(text: &str) -> Option<&str> {
    let mut rest = text;
    while let Some(open) = rest.find("```") {
        let after = &rest[open + 3..];
        let close = after.find("```");
        let inner = close.map_or(after, |end| &after[..end]);
        let (label, body) = split_label(inner);
        if label.is_empty() || label.eq_ignore_ascii_case("json") {
            return Some(body);
        }
        rest = &after[close? + 3..];
    }
    None
}

/// Splits a fence's inside into its info string and body. The first line is a label
/// only when it looks like one (`json`, `python`), so "```{\"a\": 1}```" is a body.
fn split_label(inner: &str) -> (&str, &str) {
    let (first, body) = match inner.find('\n') {
        Some(nl) => (inner[..nl].trim(), &inner[nl + 1..]),
        // One line: nothing after a label, so it is all body ("```1```").
        None => return ("", inner),
    };
    let is_label = first
        .chars()
        .all(|ch| ch.is_alphanumeric() || matches!(ch, '-' | '_' | '+' | '.'));
    if is_label {
        (first, body)
    } else {
        ("", inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(name: &str, args: &[Value]) -> Value {
        call(name, args).unwrap_or_else(|e| panic!("{e}"))
    }

    fn err(name: &str, args: &[Value]) -> String {
        match call(name, args) {
            Ok(v) => panic!("`{name}` returned {v} instead of an error"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn upper_and_lower_are_unicode_aware() {
        assert_eq!(ok("upper", &[json!("éß abc")]), json!("ÉSS ABC"));
        assert_eq!(ok("lower", &[json!("ÉÀ ABC")]), json!("éà abc"));
        assert_eq!(ok("upper", &[json!("")]), json!(""));
    }

    #[test]
    fn trim_removes_unicode_white_space_at_both_ends_only() {
        assert_eq!(ok("trim", &[json!("\u{a0} a b\n\t")]), json!("a b"));
        assert_eq!(ok("trim", &[json!("   ")]), json!(""));
    }

    #[test]
    fn string_functions_name_the_function_parameter_and_found_value() {
        assert_eq!(
            err("upper", &[json!(3)]),
            "`upper`: expected a string for `text`, found number 3"
        );
        assert!(err("lower", &[json!(null)]).contains("found null"));
        assert!(err("trim", &[json!([1])]).contains("found array [1]"));
    }

    #[test]
    fn long_values_are_cut_short_in_error_messages() {
        let long = json!("é".repeat(100));
        let message = err("upper", &[json!({ "k": long })]);
        assert!(message.ends_with('…'), "{message}");
        assert!(message.chars().count() < 100, "{message}");
    }

    #[test]
    fn len_counts_characters_items_and_keys() {
        assert_eq!(ok("len", &[json!("éß")]), json!(2));
        assert_eq!(ok("len", &[json!("")]), json!(0));
        assert_eq!(ok("len", &[json!([1, [2, 3]])]), json!(2));
        assert_eq!(ok("len", &[json!({"a": 1, "b": 2})]), json!(2));
    }

    #[test]
    fn len_of_a_number_boolean_or_null_is_an_error() {
        for v in [json!(1), json!(true), json!(null)] {
            let message = err("len", &[v]);
            assert!(
                message.contains("a string, an array or an object"),
                "{message}"
            );
        }
    }

    #[test]
    fn join_splices_non_strings_as_json() {
        let items = json!(["a", 1, null, {"k": [true]}]);
        assert_eq!(
            ok("join", &[items, json!(" | ")]),
            json!("a | 1 | null | {\"k\":[true]}")
        );
    }

    #[test]
    fn join_without_separator_uses_comma_space() {
        assert_eq!(ok("join", &[json!(["x", "y"])]), json!("x, y"));
        assert_eq!(ok("join", &[json!([])]), json!(""));
        assert_eq!(ok("join", &[json!(["x", "y"]), json!("")]), json!("xy"));
    }

    #[test]
    fn join_rejects_a_non_array_or_a_non_string_separator() {
        assert!(err("join", &[json!("ab")]).contains("an array for `items`"));
        assert!(err("join", &[json!([]), json!(null)]).contains("a string for `separator`"));
    }

    #[test]
    fn split_keeps_empty_pieces() {
        assert_eq!(
            ok("split", &[json!("a,,é"), json!(",")]),
            json!(["a", "", "é"])
        );
        assert_eq!(ok("split", &[json!(""), json!(",")]), json!([""]));
        assert_eq!(
            ok("split", &[json!("aßbßc"), json!("ß")]),
            json!(["a", "b", "c"])
        );
    }

    #[test]
    fn split_on_an_empty_separator_is_an_error() {
        let message = err("split", &[json!("abc"), json!("")]);
        assert_eq!(
            message,
            "`split`: expected a non-empty string for `separator`, found string \"\""
        );
        assert!(err("split", &[json!(1), json!(",")]).contains("`text`"));
    }

    #[test]
    fn replace_replaces_every_occurrence() {
        assert_eq!(
            ok("replace", &[json!("é-é-e"), json!("é"), json!("ß")]),
            json!("ß-ß-e")
        );
        assert_eq!(
            ok("replace", &[json!("abc"), json!("b"), json!("")]),
            json!("ac")
        );
        assert_eq!(
            ok("replace", &[json!(""), json!("x"), json!("y")]),
            json!("")
        );
    }

    #[test]
    fn replace_with_an_empty_from_or_non_strings_is_an_error() {
        assert!(err("replace", &[json!("abc"), json!(""), json!("x")]).contains("`from`"));
        assert!(err("replace", &[json!("abc"), json!("a"), json!(1)]).contains("`to`"));
    }

    #[test]
    fn contains_finds_substrings_with_the_needle_spliced_as_text() {
        assert_eq!(ok("contains", &[json!("café"), json!("fé")]), json!(true));
        assert_eq!(ok("contains", &[json!("v12"), json!(12)]), json!(true));
        assert_eq!(ok("contains", &[json!("abc"), json!("")]), json!(true));
        assert_eq!(ok("contains", &[json!("abc"), json!("d")]), json!(false));
    }

    #[test]
    fn contains_finds_array_items_by_value_equality() {
        assert_eq!(ok("contains", &[json!([1, "a"]), json!(1.0)]), json!(true));
        assert_eq!(
            ok("contains", &[json!([[1, 2]]), json!([1, 2])]),
            json!(true)
        );
        assert_eq!(ok("contains", &[json!([1, "a"]), json!("1")]), json!(false));
        assert_eq!(ok("contains", &[json!([]), json!(null)]), json!(false));
    }

    #[test]
    fn contains_finds_object_keys_and_wants_a_string_key() {
        assert_eq!(ok("contains", &[json!({"a": 1}), json!("a")]), json!(true));
        assert_eq!(ok("contains", &[json!({"a": 1}), json!("b")]), json!(false));
        assert!(err("contains", &[json!({"1": 1}), json!(1)]).contains("a string key"));
    }

    #[test]
    fn contains_in_a_number_boolean_or_null_is_an_error() {
        for v in [json!(1), json!(false), json!(null)] {
            assert!(err("contains", &[v, json!("x")]).contains("`haystack`"));
        }
    }

    #[test]
    fn default_replaces_only_null_and_the_empty_string() {
        assert_eq!(ok("default", &[json!(null), json!("x")]), json!("x"));
        assert_eq!(ok("default", &[json!(""), json!("x")]), json!("x"));
        for kept in [json!(0), json!(false), json!([]), json!(" ")] {
            assert_eq!(ok("default", &[kept.clone(), json!("x")]), kept);
        }
    }

    #[test]
    fn json_quotes_strings_and_writes_everything_compactly() {
        assert_eq!(ok("json", &[json!("a\"é")]), json!("\"a\\\"é\""));
        assert_eq!(
            ok("json", &[json!({"a": [1, null]})]),
            json!("{\"a\":[1,null]}")
        );
        assert_eq!(ok("json", &[json!(null)]), json!("null"));
    }

    #[test]
    fn keys_come_in_the_order_written() {
        let object: Value = serde_json::from_str(r#"{"z": 1, "a": 2, "m": 3}"#).unwrap();
        assert_eq!(ok("keys", &[object]), json!(["z", "a", "m"]));
        assert_eq!(ok("keys", &[json!({})]), json!([]));
        assert!(err("keys", &[json!([1])]).contains("an object for `object`"));
    }

    #[test]
    fn get_reads_object_fields_and_falls_back_when_absent() {
        let o = json!({"a": 1, "n": null});
        assert_eq!(ok("get", &[o.clone(), json!("a")]), json!(1));
        assert_eq!(ok("get", &[o.clone(), json!("b")]), json!(null));
        assert_eq!(ok("get", &[o.clone(), json!("b"), json!("x")]), json!("x"));
        // A field present with null is present: the fallback is for absent keys.
        assert_eq!(ok("get", &[o, json!("n"), json!("x")]), json!(null));
    }

    #[test]
    fn get_reads_array_items_with_negative_and_numeric_string_indexes() {
        let a = json!(["a", "b", "c"]);
        assert_eq!(ok("get", &[a.clone(), json!(0)]), json!("a"));
        assert_eq!(ok("get", &[a.clone(), json!(-1)]), json!("c"));
        assert_eq!(ok("get", &[a.clone(), json!(2.0)]), json!("c"));
        assert_eq!(ok("get", &[a.clone(), json!("1")]), json!("b"));
        assert_eq!(ok("get", &[a.clone(), json!("-3")]), json!("a"));
        assert_eq!(ok("get", &[a.clone(), json!(3), json!("x")]), json!("x"));
        assert_eq!(ok("get", &[a.clone(), json!(-4), json!("x")]), json!("x"));
        assert_eq!(ok("get", &[a, json!(1e300)]), json!(null));
    }

    #[test]
    fn get_from_null_is_the_fallback_so_lookups_chain() {
        assert_eq!(ok("get", &[json!(null), json!("a"), json!(0)]), json!(0));
        assert_eq!(ok("get", &[json!(null), json!(1)]), json!(null));
    }

    #[test]
    fn get_with_a_key_of_the_wrong_kind_is_an_error() {
        assert!(err("get", &[json!({"1": 1}), json!(1)]).contains("a string key for `key`"));
        assert!(err("get", &[json!([1]), json!(0.5)]).contains("an integer index"));
        assert!(err("get", &[json!([1]), json!("first")]).contains("an integer index"));
        assert!(err("get", &[json!("abc"), json!(0)]).contains("an object or an array"));
    }

    #[test]
    fn str_keeps_strings_and_writes_other_values_as_json() {
        assert_eq!(ok("str", &[json!("é")]), json!("é"));
        assert_eq!(ok("str", &[json!(1.5)]), json!("1.5"));
        assert_eq!(ok("str", &[json!(null)]), json!("null"));
        assert_eq!(ok("str", &[json!([true])]), json!("[true]"));
    }

    #[test]
    fn parse_json_reads_the_whole_text() {
        assert_eq!(
            ok("parse_json", &[json!(" {\"a\": [1]} \n")]),
            json!({"a": [1]})
        );
        assert_eq!(ok("parse_json", &[json!("\"é\"")]), json!("é"));
    }

    #[test]
    fn parse_json_finds_a_fenced_block_inside_prose() {
        let reply = "Sure! Here it is:\n```json\n{\"ok\": true}\n```\nAnything else?";
        assert_eq!(ok("parse_json", &[json!(reply)]), json!({"ok": true}));
        let plain = "Result:\n```\n[1, 2]\n```";
        assert_eq!(ok("parse_json", &[json!(plain)]), json!([1, 2]));
        let upper = "```JSON\n1\n```";
        assert_eq!(ok("parse_json", &[json!(upper)]), json!(1));
        let inline = "it is ```{\"a\": 1}``` ok";
        assert_eq!(ok("parse_json", &[json!(inline)]), json!({"a": 1}));
    }

    #[test]
    fn parse_json_skips_blocks_in_other_languages() {
        let reply = "```python\nprint(1)\n```\nthen\n```json\n{\"a\": \"ß\"}\n```";
        assert_eq!(ok("parse_json", &[json!(reply)]), json!({"a": "ß"}));
    }

    #[test]
    fn parse_json_accepts_a_fence_cut_off_before_its_end() {
        assert_eq!(ok("parse_json", &[json!("x ```json\n[1]\n")]), json!([1]));
    }

    #[test]
    fn parse_json_reports_serde_json_errors() {
        let message = err("parse_json", &[json!("not json")]);
        assert!(
            message.starts_with("`parse_json`: the text is not JSON: expected"),
            "{message}"
        );
        assert!(err("parse_json", &[json!("```json\n{oops}\n```")]).contains("line 1"));
        assert!(err("parse_json", &[json!("")]).contains("EOF"));
        assert!(err("parse_json", &[json!("```rust\nfn\n```")]).contains("not JSON"));
        assert!(err("parse_json", &[json!(1)]).contains("a string for `text`"));
    }

    #[test]
    fn truncate_counts_characters_not_bytes() {
        assert_eq!(ok("truncate", &[json!("éßab"), json!(2)]), json!("éß"));
        assert_eq!(ok("truncate", &[json!("éß"), json!(10)]), json!("éß"));
        assert_eq!(ok("truncate", &[json!("éß"), json!(0)]), json!(""));
        assert_eq!(ok("truncate", &[json!("abc"), json!(2.0)]), json!("ab"));
        assert_eq!(ok("truncate", &[json!("abc"), json!(1e300)]), json!("abc"));
    }

    #[test]
    fn truncate_wants_a_non_negative_whole_number() {
        for bad in [json!(-1), json!(1.5), json!("2"), json!(null)] {
            let message = err("truncate", &[json!("abc"), bad]);
            assert!(
                message.contains("a non-negative whole number for `max_chars`"),
                "{message}"
            );
        }
    }

    #[test]
    fn starts_with_and_ends_with_compare_whole_characters() {
        assert_eq!(ok("starts_with", &[json!("éa"), json!("é")]), json!(true));
        assert_eq!(ok("starts_with", &[json!("éa"), json!("")]), json!(true));
        assert_eq!(ok("starts_with", &[json!("a"), json!("ab")]), json!(false));
        assert_eq!(ok("ends_with", &[json!("aß"), json!("ß")]), json!(true));
        assert_eq!(ok("ends_with", &[json!("aß"), json!("a")]), json!(false));
        assert!(err("starts_with", &[json!("a"), json!(1)]).contains("`prefix`"));
        assert!(err("ends_with", &[json!(1), json!("a")]).contains("`text`"));
    }

    #[test]
    fn unknown_names_and_wrong_arities_are_errors() {
        assert_eq!(
            err("shout", &[]),
            "`shout`: there is no built-in function with this name"
        );
        assert_eq!(err("upper", &[]), "`upper`: takes 1 arguments, found 0");
        assert!(err("join", &[json!([]), json!(""), json!("")]).contains("takes 1 to 2"));
    }

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

    #[test]
    fn every_builtin_has_an_implementation() {
        for b in builtins::BUILTINS {
            let args = vec![Value::Null; b.min_arity()];
            if let Err(e) = call(b.name, &args) {
                assert!(!e.message.contains("no implementation"), "{e}");
            }
        }
    }

    fn samples() -> Vec<Value> {
        vec![
            json!(null),
            json!(true),
            json!(false),
            json!(0),
            json!(-1),
            json!(-1.5),
            json!(1e300),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(""),
            json!("éß"),
            json!("1"),
            json!("```json\n{\"a\":1}\n```"),
            json!("```"),
            json!([]),
            json!([1, "é", null]),
            json!({}),
            json!({"a": [1], "é": {"b": null}}),
        ]
    }

    /// Every argument list of length `n` drawn from the samples.
    fn grid(n: usize) -> Vec<Vec<Value>> {
        let mut lists = vec![vec![]];
        for _ in 0..n {
            lists = lists
                .into_iter()
                .flat_map(|list| {
                    samples().into_iter().map(move |v| {
                        let mut next = list.clone();
                        next.push(v);
                        next
                    })
                })
                .collect();
        }
        lists
    }

    #[test]
    fn no_builtin_panics_on_any_sample_arguments() {
        for b in builtins::BUILTINS {
            for n in b.min_arity()..=b.max_arity() {
                for args in grid(n) {
                    let result = std::panic::catch_unwind(|| call(b.name, &args));
                    assert!(result.is_ok(), "`{}` panicked on {:?}", b.name, args);
                }
            }
        }
    }
}
