//! The types of the template language (DESIGN §5).

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
}
