//! Run arguments: read from `--arg NAME=VALUE` text or a JSON object, and checked against
//! the entry's parameter types before anything runs (DESIGN §13), so a wrong argument is
//! a usage error naming the argument, the expected type and what it got, never a
//! workflow that runs with a value its templates cannot use.

use crate::bundle::{Function, CONTEXT_PARAM};
use serde_json::{Map, Value};
use tv_stdlib::types::{Mismatch, Type};
use tv_stdlib::values::cut_chars;

/// How much of a bad value an error message quotes.
const QUOTED_CHARS: usize = 60;

/// The value of `--arg NAME=RAW` for a parameter of type `t`: text for `string` and
/// untyped parameters and for a union of strings (`--arg severity=high`), JSON for the
/// others.
pub fn parse_arg(name: &str, t: &Type, raw: &str) -> Result<Value, String> {
    let value = match t {
        Type::String | Type::Any => return Ok(Value::String(raw.to_string())),
        Type::Literals(_) => Ok(Value::String(raw.to_string())),
        _ => serde_json::from_str::<Value>(raw.trim()),
    };
    match value {
        Ok(v) => match t.mismatch(&v) {
            None => Ok(v),
            Some(m) => Err(expected(name, t, &quote(raw), Some(&m))),
        },
        Err(_) => Err(expected(name, t, &quote(raw), None)),
    }
}

/// The entry's arguments in parameter order, from `given` by name: each checked against
/// its parameter's type; unknown and missing names are errors.
pub fn bind(f: &Function, mut given: Map<String, Value>) -> Result<Vec<Value>, String> {
    if let Some(unknown) = given
        .keys()
        .find(|k| !f.params.iter().any(|p| &p.name == *k) || *k == CONTEXT_PARAM)
    {
        let names: Vec<&str> = f.params.iter().map(|p| p.name.as_str()).collect();
        return Err(format!(
            "`{}` has no parameter `{unknown}` (parameters: {})",
            f.name,
            names.join(", ")
        ));
    }
    f.params
        .iter()
        .map(|p| {
            // A run's entry has no caller, so no context to inherit.
            if p.name == CONTEXT_PARAM {
                return Ok(Value::String(String::new()));
            }
            let v = given.remove(&p.name).ok_or_else(|| {
                format!(
                    "missing argument `{}` for `{}`: pass --arg {}=...",
                    p.name, f.name, p.name
                )
            })?;
            let t = p.ty.to_type();
            match t.mismatch(&v) {
                None => Ok(v),
                Some(m) => Err(expected(&p.name, &t, &quote(&v.to_string()), Some(&m))),
            }
        })
        .collect()
}

/// "`n` expects a number, got `two`"; a mismatch inside the value adds where it is:
/// "...; at `$[1]` expected string, got number".
fn expected(name: &str, t: &Type, got: &str, mismatch: Option<&Mismatch>) -> String {
    let what = match t {
        Type::Number => "a number".to_string(),
        Type::Boolean => "a boolean (`true` or `false`)".to_string(),
        Type::Object => "a JSON object".to_string(),
        Type::Null => "null".to_string(),
        Type::Array(item) if **item == Type::Any => "a JSON array".to_string(),
        Type::Literals(ls) => {
            let quoted: Vec<String> = ls.iter().map(|l| format!("`{l}`")).collect();
            format!("one of {}", quoted.join(", "))
        }
        other => format!("`{other}` (as JSON)"),
    };
    match mismatch.filter(|m| m.path != "$") {
        Some(m) => format!("`{name}` expects {what}, got `{got}`; {m}"),
        None => format!("`{name}` expects {what}, got `{got}`"),
    }
}

fn quote(text: &str) -> String {
    cut_chars(text, QUOTED_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::{Param, ValueType};
    use serde_json::json;

    fn function(params: &[(&str, &str)]) -> Function {
        Function {
            name: "f".into(),
            params: params
                .iter()
                .map(|(n, t)| Param {
                    name: n.to_string(),
                    ty: ValueType::from(&ty(t)),
                    doc: String::new(),
                })
                .collect(),
            locals: params.len() as u16,
            code: Vec::new(),
            lines: Vec::new(),
            returns: ValueType::ANY,
            matchable: None,
            doc: String::new(),
        }
    }

    fn ty(written: &str) -> Type {
        Type::parse(written).expect("a type")
    }

    #[test]
    fn text_arguments_are_read_as_their_parameter_type_or_refused_by_name() {
        assert_eq!(parse_arg("n", &ty("number"), "2").unwrap(), json!(2));
        assert_eq!(
            parse_arg("n", &ty("number"), "two").unwrap_err(),
            "`n` expects a number, got `two`"
        );
        assert_eq!(parse_arg("b", &ty("boolean"), "true").unwrap(), json!(true));
        assert_eq!(
            parse_arg("b", &ty("boolean"), "3").unwrap_err(),
            "`b` expects a boolean (`true` or `false`), got `3`"
        );
        assert_eq!(
            parse_arg("xs", &ty("string[]"), "[1,2]").unwrap_err(),
            "`xs` expects `string[]` (as JSON), got `[1,2]`; at `$[0]` expected string, got number"
        );
        assert_eq!(
            parse_arg("xs", &ty("string[]"), "{}").unwrap_err(),
            "`xs` expects `string[]` (as JSON), got `{}`"
        );
        assert_eq!(
            parse_arg("s", &ty("string"), "[1,2]").unwrap(),
            json!("[1,2]")
        );
        assert_eq!(parse_arg("a", &ty("any"), "12").unwrap(), json!("12"));
    }

    #[test]
    fn records_are_given_as_json_and_literal_unions_as_text() {
        let severity = ty(r#""low"|"high""#);
        assert_eq!(parse_arg("s", &severity, "high").unwrap(), json!("high"));
        assert_eq!(
            parse_arg("s", &severity, "urgent").unwrap_err(),
            "`s` expects one of `low`, `high`, got `urgent`"
        );
        let review = ty("{approved: boolean, findings: string[]}");
        let ok = parse_arg("r", &review, r#"{"approved": true, "findings": []}"#);
        assert_eq!(ok.unwrap(), json!({"approved": true, "findings": []}));
        assert_eq!(
            parse_arg("r", &review, r#"{"approved": "yes"}"#).unwrap_err(),
            "`r` expects `{approved: boolean, findings: string[]}` (as JSON), got `{\"approved\": \"yes\"}`; at `$.approved` expected boolean, got string"
        );
    }

    #[test]
    fn json_arguments_are_checked_against_their_parameter_types() {
        let f = function(&[("n", "number"), ("xs", "string[]")]);
        let given = |v: Value| v.as_object().cloned().unwrap();
        assert_eq!(
            bind(&f, given(json!({"n": 1, "xs": ["a"]}))).unwrap(),
            vec![json!(1), json!(["a"])]
        );
        assert_eq!(
            bind(&f, given(json!({"n": "two", "xs": []}))).unwrap_err(),
            "`n` expects a number, got `\"two\"`"
        );
        assert_eq!(
            bind(&f, given(json!({"n": 1, "xs": ["a", 2]}))).unwrap_err(),
            "`xs` expects `string[]` (as JSON), got `[\"a\",2]`; at `$[1]` expected string, got number"
        );
        assert!(bind(&f, given(json!({"n": 1})))
            .unwrap_err()
            .starts_with("missing argument `xs`"));
        assert!(bind(&f, given(json!({"n": 1, "xs": [], "z": 0})))
            .unwrap_err()
            .contains("no parameter `z`"));
    }

    #[test]
    fn a_long_bad_value_is_quoted_only_in_part() {
        let e = parse_arg("n", &ty("number"), &"x".repeat(500)).unwrap_err();
        assert!(e.len() < 120, "{e}");
        assert!(e.ends_with("…`"), "{e}");
    }
}
