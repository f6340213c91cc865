//! The types of the template language (DESIGN §5, §13): scalars, arrays, records with
//! optional fields, and unions of string literals; where a value departs from one
//! ([`Mismatch`]), how one is written ([`parse_with`]) and the JSON Schema a provider is
//! sent ([`json_schema`]).

mod check;
mod parse;
mod schema;

pub use check::{Mismatch, MISSING};
pub use parse::{is_scalar_name, parse_with, TypeError};
pub use schema::{json_schema, smallest_value, strict_schema, strict_wrapped, WRAPPED};

use std::fmt;
use std::sync::Arc;

/// A type of the template language.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    /// Any value: what is known only at run time.
    Any,
    /// A string.
    String,
    /// A number, whole or not.
    Number,
    /// `true` or `false`.
    Boolean,
    /// `null`.
    Null,
    /// An object of any fields.
    Object,
    /// `array` and `[]` are `Array(Any)`; `string[]` is `Array(String)`.
    Array(Box<Type>),
    /// `{approved: boolean, severity?: "low"|"high"}`, or a declared one (`Review`),
    /// which keeps its name. Shared: a declared record is used in many places.
    Record(Arc<Record>),
    /// `"low"|"high"`: one of these strings, in the order written.
    Literals(Arc<Vec<String>>),
}

/// The fields of a record type, in the order written.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Record {
    /// The name it was declared with (`<type name="Review">`); `None` when written inline.
    pub name: Option<String>,
    /// Its fields, in the order written.
    pub fields: Vec<Field>,
    /// How many types it holds written out, itself included: [`Type::size`].
    size: usize,
}

/// A field of a record type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Field {
    /// Its name.
    pub name: String,
    /// Written `name?: T`: the value may leave it out or give `null`.
    pub optional: bool,
    /// The type of its value.
    pub ty: Type,
}

impl Record {
    /// A record of these fields, under a declared name or none.
    pub fn new(name: Option<String>, fields: Vec<Field>) -> Record {
        let size = fields
            .iter()
            .fold(1usize, |n, f| n.saturating_add(f.ty.size()));
        Record { name, fields, size }
    }

    /// Its field of this name.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The names of its fields, for "did you mean" and "its fields are" messages.
    pub fn field_names(&self) -> Vec<&str> {
        self.fields.iter().map(|f| f.name.as_str()).collect()
    }

    /// Whether a value of this record may be used where `to` is expected: every field
    /// `to` requires is here and required, and every field both have fits. Extra
    /// fields are allowed (a wider record fits a narrower one).
    fn fits(&self, to: &Record) -> bool {
        to.fields.iter().all(|want| match self.field(&want.name) {
            Some(have) => have.ty.fits(&want.ty) && (want.optional || !have.optional),
            None => want.optional,
        })
    }
}

/// How deeply arrays, records and parentheses of a written type may nest
/// (`string[][]` is 2, `{a: {b: string[]}}` is 3). What walks a type recurses once per
/// level, so the bound keeps a crafted type from exhausting the stack.
pub const MAX_NESTING: usize = 32;

/// How many types a type may hold written out (a record's fields, their fields, an
/// array's items...). Declared types may share one record in many places, so a type a
/// few lines long could otherwise stand for billions of fields, and so take that long
/// to check or to write as a schema.
pub const MAX_SIZE: usize = 10_000;

/// The names a type may be written with, for "expected one of" messages.
pub const TYPE_NAMES: &str = "string, number, boolean, null, object, array (or []), any, T[], a record `{name: T, other?: T}`, string literals `\"a\"|\"b\"`, or a declared type";

/// The scalar names, for "did you mean" among type names.
pub const SCALAR_NAMES: [&str; 7] = [
    "string", "number", "boolean", "null", "object", "array", "any",
];

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
    /// Parses a type as written in `params`, `returns` or `schema`, naming no declared
    /// type. See [`parse_with`] for the grammar and for declared names.
    pub fn parse(s: &str) -> Option<Type> {
        parse_with(s, &|_| None).ok()
    }

    /// `EvaluationResult`, predeclared (DESIGN §13): `{success: boolean, feedback?: string}`.
    pub fn evaluation_result() -> Type {
        Type::Record(Arc::new(Record::new(
            Some("EvaluationResult".into()),
            vec![
                Field {
                    name: "success".into(),
                    optional: false,
                    ty: Type::Boolean,
                },
                Field {
                    name: "feedback".into(),
                    optional: true,
                    ty: Type::String,
                },
            ],
        )))
    }

    /// The same type under a declared name: a record takes the name; other types
    /// (`"low"|"high"`, `string[]`) are aliases and stay as they are.
    pub fn named(self, name: &str) -> Type {
        match self {
            Type::Record(r) => Type::Record(Arc::new(Record::new(
                Some(name.to_string()),
                r.fields.clone(),
            ))),
            other => other,
        }
    }

    /// Whether a value of type `self` may be used where `to` is expected.
    /// `any` fits everywhere and accepts everything: it marks what is known only at run
    /// time. So does a plain `object` against a record and a plain `string` against
    /// literals: the value is checked when it is there.
    pub fn fits(&self, to: &Type) -> bool {
        match (self, to) {
            (Type::Any, _) | (_, Type::Any) => true,
            (Type::Array(a), Type::Array(b)) => a.fits(b),
            (Type::Record(_), Type::Object) | (Type::Object, Type::Record(_)) => true,
            (Type::Record(a), Type::Record(b)) => a.fits(b),
            (Type::Literals(a), Type::Literals(b)) => a.iter().all(|x| b.contains(x)),
            (Type::Literals(_), Type::String) | (Type::String, Type::Literals(_)) => true,
            (a, b) => a == b,
        }
    }

    /// The type of a value that is one of `self` or `other`.
    pub fn join(&self, other: &Type) -> Type {
        if self == other {
            return self.clone();
        }
        match (self, other) {
            (Type::Array(a), Type::Array(b)) => Type::Array(Box::new(a.join(b))),
            (Type::Literals(a), Type::Literals(b)) => {
                let mut all = a.to_vec();
                all.extend(b.iter().filter(|x| !a.contains(x)).cloned());
                Type::Literals(Arc::new(all))
            }
            (Type::Literals(_), Type::String) | (Type::String, Type::Literals(_)) => Type::String,
            (Type::Record(_) | Type::Object, Type::Record(_) | Type::Object) => Type::Object,
            _ => Type::Any,
        }
    }

    /// How many types it holds written out, itself included (`{a: string[]}` is 3);
    /// saturating. At most [`MAX_SIZE`] for a type that was parsed or decoded.
    pub fn size(&self) -> usize {
        match self {
            Type::Array(t) => t.size().saturating_add(1),
            Type::Record(r) => r.size,
            Type::Literals(ls) => ls.len().saturating_add(1),
            _ => 1,
        }
    }

    /// Whether it says more than `any`.
    pub fn is_known(&self) -> bool {
        *self != Type::Any
    }

    /// Whether it is a string or one of some strings.
    pub fn is_stringy(&self) -> bool {
        matches!(self, Type::String | Type::Literals(_))
    }

    /// How deeply its arrays and records nest; at most [`MAX_NESTING`] for a type that
    /// was parsed or decoded.
    pub fn depth(&self) -> usize {
        match self {
            Type::Array(t) => 1 + t.depth(),
            Type::Record(r) => 1 + r.fields.iter().map(|f| f.ty.depth()).max().unwrap_or(0),
            _ => 0,
        }
    }
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
            Type::Array(t) if matches!(**t, Type::Literals(_)) => write!(f, "({t})[]"),
            Type::Array(t) => write!(f, "{t}[]"),
            Type::Record(r) => match &r.name {
                Some(name) => f.write_str(name),
                None => write!(f, "{}", Expanded(r)),
            },
            Type::Literals(ls) => {
                for (i, l) in ls.iter().enumerate() {
                    if i > 0 {
                        f.write_str("|")?;
                    }
                    write!(f, "{}", serde_json::Value::from(l.as_str()))?;
                }
                Ok(())
            }
        }
    }
}

/// A record written out field by field, `{approved: boolean, notes?: string[]}`, even
/// when it has a name; its fields' types are written as [`Type`]'s `Display` does.
pub struct Expanded<'a>(pub &'a Record);

impl fmt::Display for Expanded<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (i, field) in self.0.fields.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            if check::is_identifier(&field.name) {
                f.write_str(&field.name)?;
            } else {
                write!(f, "{}", serde_json::Value::from(field.name.as_str()))?;
            }
            let q = if field.optional { "?" } else { "" };
            write!(f, "{q}: {}", field.ty)?;
        }
        f.write_str("}")
    }
}

#[cfg(test)]
mod tests;
