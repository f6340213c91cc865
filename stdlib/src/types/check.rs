//! Where a value departs from its type: the JSON path, the type expected there and
//! what was found. The walk follows the type, so it recurses at most as deep as the
//! type nests ([`super::MAX_NESTING`]), however deep the value.

use super::Type;
use crate::values::kind_of;
use serde_json::Value;
use std::fmt;

impl Type {
    /// Whether a value is of this type (at run time: a reply, an argument, a result).
    pub fn admits(&self, v: &Value) -> bool {
        first_mismatch(self, v, &mut Vec::new()).is_none()
    }

    /// Where `v` first departs from this type, in document order: the JSON path, the
    /// type expected there and what was found. `None` when `v` is of this type.
    ///
    /// A record's fields are checked in the order declared; a required field that is
    /// absent is found as [`MISSING`]; an optional one may be absent or `null`. Fields
    /// the type does not name are allowed and kept.
    pub fn mismatch(&self, v: &Value) -> Option<Mismatch> {
        let mut at = Vec::new();
        let (expected, found) = first_mismatch(self, v, &mut at)?;
        Some(Mismatch {
            path: json_path(&at),
            expected: expected.clone(),
            found,
        })
    }
}

fn first_mismatch<'a>(
    ty: &'a Type,
    v: &'a Value,
    at: &mut Vec<PathStep<'a>>,
) -> Option<(&'a Type, String)> {
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
        (Type::Record(r), Value::Object(map)) => {
            for field in &r.fields {
                match map.get(&field.name) {
                    None | Some(Value::Null) if field.optional => {}
                    None => {
                        at.push(PathStep::Field(&field.name));
                        return Some((&field.ty, MISSING.to_string()));
                    }
                    Some(x) => {
                        at.push(PathStep::Field(&field.name));
                        if let Some(m) = first_mismatch(&field.ty, x, at) {
                            return Some(m);
                        }
                        at.pop();
                    }
                }
            }
            true
        }
        (Type::Literals(ls), Value::String(s)) => {
            if ls.iter().any(|l| l == s) {
                true
            } else {
                return Some((ty, quoted(s)));
            }
        }
        _ => false,
    };
    (!fits).then(|| (ty, kind_of(v).to_string()))
}

/// A string found where other strings were expected, as JSON writes it, cut to a
/// length a message can carry.
fn quoted(s: &str) -> String {
    const MAX: usize = 60;
    match s.char_indices().nth(MAX) {
        None => Value::from(s).to_string(),
        Some((end, _)) => format!("{}…", Value::from(&s[..end])),
    }
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
    /// What is there: the value's kind (`number`, `object`, ...), [`MISSING`], or the
    /// string itself, quoted, where only some strings were allowed.
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
pub(crate) enum PathStep<'a> {
    /// An array element, counted from 0.
    Index(usize),
    /// An object's field.
    Field(&'a str),
}

/// A JSON path as messages write it: `$` for the whole value, `[i]` for an element,
/// `.name` for a field whose name is an identifier and `["a name"]` for any other.
pub(crate) fn json_path(steps: &[PathStep<'_>]) -> String {
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

pub(super) fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
