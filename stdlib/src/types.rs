//! The types of the template language (DESIGN §5), and where a value departs from one.

use crate::values::kind_of;
use serde_json::Value;
use std::fmt;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    Any,
    String,
    Number,
    Boolean,
    Null,
    Object,
    /// `array` and `[]` are `Array(Any)`; `string[]` is `Array(String)`.
    Array(Box<Type>),
}

/// How deeply the arrays of a written type may nest (`string[][]` is 2).
pub const MAX_ARRAY_NESTING: usize = 32;

/// The names a type may be written with, for "expected one of" messages.
pub const TYPE_NAMES: &str = "string, number, boolean, null, object, array (or []), any, or T[]";

/// How many `[]` a written type ends with: the depth of its arrays.
pub fn array_nesting(written: &str) -> usize {
    let mut s = written.trim();
    let mut depth = 0;
    while let Some(inner) = s.strip_suffix("[]") {
        depth += 1;
        s = inner.trim();
    }
    depth
}

impl Type {
    /// Parses a type as written in `params`, `returns` or `schema`. Arrays nest at
    /// most [`MAX_ARRAY_NESTING`] deep: what walks a type recurses once per level.
    pub fn parse(s: &str) -> Option<Type> {
        let mut s = s.trim();
        let mut arrays = 0;
        while s != "[]" {
            let Some(inner) = s.strip_suffix("[]") else {
                break;
            };
            arrays += 1;
            s = inner.trim();
        }
        if arrays > MAX_ARRAY_NESTING {
            return None;
        }
        let mut t = match s {
            "any" => Type::Any,
            "string" => Type::String,
            "number" => Type::Number,
            "boolean" => Type::Boolean,
            "null" => Type::Null,
            "object" => Type::Object,
            "array" | "[]" => Type::Array(Box::new(Type::Any)),
            _ => return None,
        };
        for _ in 0..arrays {
            t = Type::Array(Box::new(t));
        }
        Some(t)
    }

    /// Whether a value of type `self` may be used where `to` is expected.
    /// `any` fits everywhere and accepts everything: it marks what is known only at run time.
    pub fn fits(&self, to: &Type) -> bool {
        match (self, to) {
            (Type::Any, _) | (_, Type::Any) => true,
            (Type::Array(a), Type::Array(b)) => a.fits(b),
            (a, b) => a == b,
        }
    }

    /// The type of a value that is one of `self` or `other`.
    pub fn join(&self, other: &Type) -> Type {
        if self == other {
            self.clone()
        } else {
            match (self, other) {
                (Type::Array(a), Type::Array(b)) => Type::Array(Box::new(a.join(b))),
                _ => Type::Any,
            }
        }
    }

    pub fn is_known(&self) -> bool {
        *self != Type::Any
    }

    /// Whether a value is of this type (at run time: a reply, an argument, a result).
    pub fn admits(&self, v: &Value) -> bool {
        first_mismatch(self, v, &mut Vec::new()).is_none()
    }

    /// Where `v` first departs from this type, in document order: the JSON path, the
    /// type expected there and what was found. `None` when `v` is of this type.
    pub fn mismatch(&self, v: &Value) -> Option<Mismatch> {
        let mut at = Vec::new();
        let (expected, found) = first_mismatch(self, v, &mut at)?;
        Some(Mismatch {
            path: json_path(&at),
            expected: expected.clone(),
            found: found.to_string(),
        })
    }
}

/// The first place, in document order, where a value is not of its type. The walk
/// follows the type, so it recurses at most as deep as the type nests (arrays at most
/// [`MAX_ARRAY_NESTING`]), however deep the value.
fn first_mismatch<'a>(
    ty: &'a Type,
    v: &'a Value,
    at: &mut Vec<PathStep<'a>>,
) -> Option<(&'a Type, &'static str)> {
    let fits = match (ty, v) {
        (Type::Any, _) => true,
        (Type::String, Value::String(_))
        | (Type::Number, Value::Number(_))
        | (Type::Boolean, Value::Bool(_))
        | (Type::Null, Value::Null)
        | (Type::Object, Value::Object(_)) => true,
        (Type::Array(item), Value::Array(_)) if **item == Type::Any => true,
        (Type::Array(item), Value::Array(items)) => {
            for (i, x) in items.iter().enumerate() {
                at.push(PathStep::Index(i));
                if let Some(m) = first_mismatch(item, x, at) {
                    return Some(m);
                }
                at.pop();
            }
            true
        }
        // A record type walks its fields here, in declaration order: each present field
        // under `PathStep::Field(name)`, a required one that is absent found as
        // [`MISSING`] at its path.
        _ => false,
    };
    (!fits).then(|| (ty, kind_of(v)))
}

/// What a mismatch finds where a required field is absent.
pub const MISSING: &str = "missing";

/// Where a value first departs from its type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// The JSON path of the departing value: `$`, `$[2]`, `$.findings[2]`, `$.user.name`.
    pub path: String,
    /// The type expected at `path`.
    pub expected: Type,
    /// What is there: the value's kind (`number`, `object`, ...), or [`MISSING`].
    pub found: String,
}

/// "at `$.findings[1]` expected string, got number".
impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "at `{}` expected {}, got {}",
            self.path, self.expected, self.found
        )
    }
}

/// One step of a JSON path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathStep<'a> {
    /// An array element, counted from 0.
    Index(usize),
    /// An object's field.
    Field(&'a str),
}

/// A JSON path as messages write it: `$` for the whole value, `[i]` for an element,
/// `.name` for a field whose name is an identifier and `["a name"]` for any other.
pub fn json_path(steps: &[PathStep<'_>]) -> String {
    use std::fmt::Write as _;
    let mut out = String::from("$");
    for step in steps {
        // Writing into a String cannot fail.
        let _ = match step {
            PathStep::Index(i) => write!(out, "[{i}]"),
            PathStep::Field(name) if is_identifier(name) => write!(out, ".{name}"),
            PathStep::Field(name) => write!(out, "[{}]", Value::from(*name)),
        };
    }
    out
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Any => f.write_str("any"),
            Type::String => f.write_str("string"),
            Type::Number => f.write_str("number"),
            Type::Boolean => f.write_str("boolean"),
            Type::Null => f.write_str("null"),
            Type::Object => f.write_str("object"),
            Type::Array(t) if **t == Type::Any => f.write_str("array"),
            Type::Array(t) => write!(f, "{t}[]"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_the_seeds_parses() {
        for s in [
            "object", "array", "[]", "string[]", "number", "boolean", "any", "null",
        ] {
            assert!(Type::parse(s).is_some(), "{s}");
        }
        assert_eq!(Type::parse("[]"), Type::parse("array"));
        assert_eq!(Type::parse("string[][]").unwrap().to_string(), "string[][]");
        assert_eq!(Type::parse("strng"), None);
        assert_eq!(Type::parse("[]x"), None);
        assert_eq!(
            Type::parse(" string [] []").unwrap().to_string(),
            "string[][]"
        );
        assert_eq!(Type::parse("[][]").unwrap().to_string(), "array[]");
    }

    #[test]
    fn arrays_nested_past_the_limit_are_refused_without_recursing() {
        let deep = |n: usize| format!("string{}", "[]".repeat(n));
        assert!(Type::parse(&deep(MAX_ARRAY_NESTING)).is_some());
        assert_eq!(Type::parse(&deep(MAX_ARRAY_NESTING + 1)), None);
        assert_eq!(Type::parse(&deep(1_000_000)), None);
    }

    #[test]
    fn any_fits_both_ways_and_arrays_fit_by_element() {
        let strings = Type::parse("string[]").unwrap();
        let array = Type::parse("array").unwrap();
        assert!(strings.fits(&array));
        assert!(array.fits(&strings));
        assert!(!Type::Number.fits(&Type::String));
        assert!(Type::Any.fits(&Type::Number));
        assert_eq!(Type::Number.join(&Type::String), Type::Any);
    }

    #[test]
    fn a_mismatch_names_the_path_the_expected_type_and_what_was_found() {
        use serde_json::json;
        let cases = [
            ("string[]", json!(["a", "b"]), None),
            ("string[]", json!([]), None),
            (
                "string[]",
                json!(["a", 2]),
                Some(("$[1]", "string", "number")),
            ),
            (
                "string[]",
                json!([1, true]),
                Some(("$[0]", "string", "number")),
            ),
            (
                "string[]",
                json!({"a": 1}),
                Some(("$", "string[]", "object")),
            ),
            ("string[]", json!("a"), Some(("$", "string[]", "string"))),
            (
                "string[][]",
                json!([["a"], ["b", null]]),
                Some(("$[1][1]", "string", "null")),
            ),
            (
                "string[][]",
                json!([["a"], "b"]),
                Some(("$[1]", "string[]", "string")),
            ),
            ("number[]", json!([1, 2.5, -3]), None),
            ("boolean", json!(true), None),
            ("boolean", json!("true"), Some(("$", "boolean", "string"))),
            ("number", json!(null), Some(("$", "number", "null"))),
            ("null", json!(null), None),
            ("object", json!({"deep": [1]}), None),
            ("object", json!([]), Some(("$", "object", "array"))),
            ("array", json!([1, "a", null]), None),
            ("array", json!({}), Some(("$", "array", "object"))),
            (
                "object[]",
                json!([{}, [], {}]),
                Some(("$[1]", "object", "array")),
            ),
            ("any", json!({"x": [1, "a"]}), None),
            ("any[]", json!([1, "a"]), None),
        ];
        for (ty, v, want) in &cases {
            let t = Type::parse(ty).unwrap();
            let got = t.mismatch(v);
            let got = got
                .as_ref()
                .map(|m| (m.path.as_str(), m.expected.to_string(), m.found.as_str()));
            let want = want.map(|(p, e, f)| (p, e.to_string(), f));
            assert_eq!(got, want, "{ty} against {v}");
            assert_eq!(t.admits(v), want.is_none(), "{ty} against {v}");
        }
        let m = Type::parse("string[]").unwrap().mismatch(&json!(["a", 2]));
        assert_eq!(
            m.unwrap().to_string(),
            "at `$[1]` expected string, got number"
        );
    }

    #[test]
    fn json_paths_write_indexes_identifiers_and_other_names_as_json_does() {
        use PathStep::{Field, Index};
        assert_eq!(json_path(&[]), "$");
        assert_eq!(json_path(&[Field("findings")]), "$.findings");
        assert_eq!(json_path(&[Field("findings"), Index(2)]), "$.findings[2]");
        assert_eq!(json_path(&[Field("user"), Field("name")]), "$.user.name");
        assert_eq!(json_path(&[Index(0), Field("_id2")]), "$[0]._id2");
        assert_eq!(json_path(&[Field("a b")]), r#"$["a b"]"#);
        assert_eq!(json_path(&[Field("2x")]), r#"$["2x"]"#);
        assert_eq!(json_path(&[Field("")]), r#"$[""]"#);
        assert_eq!(json_path(&[Field("q\"")]), r#"$["q\""]"#);
    }

    #[test]
    fn a_long_array_is_checked_to_its_last_element() {
        let v = Value::Array((0..100_000).map(|i| Value::from(i.to_string())).collect());
        let strings = Type::parse("string[]").unwrap();
        assert!(strings.admits(&v));
        let mut v = v;
        v[99_999] = Value::Bool(false);
        assert_eq!(strings.mismatch(&v).unwrap().path, "$[99999]");
    }
}
