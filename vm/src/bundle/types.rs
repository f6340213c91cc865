//! Types and roles as a bundle stores them: closed sets, so a reader gets a value it can
//! use instead of text it has to parse again (and could find it cannot).
//!
//! A type of the template language is a scalar under some number of `[]`, so it is
//! stored flat, as the scalar and the count, rather than as the standard library's
//! nested [`Type`]: a nested encoding would let a crafted bundle nest a million levels
//! deep in a million bytes, and decoding it would recurse once per level.

use bincode::{Decode, Encode};
use serde::{Serialize, Serializer};
use std::fmt;
use tv_stdlib::types::{Type, MAX_ARRAY_NESTING};

/// The type of a parameter, a return value or a JSON output format: [`Type`] in a form
/// that encodes without recursion. Written and shown as [`Type`] writes it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Encode, Decode)]
pub struct ValueType {
    /// What the innermost arrays hold; `Any` under arrays is `array`.
    pub item: Scalar,
    /// How many arrays are around it: `string[][]` is 2.
    pub arrays: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Encode, Decode)]
pub enum Scalar {
    Any,
    String,
    Number,
    Boolean,
    Null,
    Object,
}

impl ValueType {
    /// `any`, what an undeclared type is.
    pub const ANY: ValueType = ValueType::scalar(Scalar::Any);

    pub const fn scalar(item: Scalar) -> ValueType {
        ValueType { item, arrays: 0 }
    }

    /// A type as a template writes it, if it is one.
    pub fn parse(written: &str) -> Option<ValueType> {
        Type::parse(written).map(|t| ValueType::from(&t))
    }

    /// The type as the checker and the machine use it.
    pub fn to_type(self) -> Type {
        let mut t = match self.item {
            Scalar::Any => Type::Any,
            Scalar::String => Type::String,
            Scalar::Number => Type::Number,
            Scalar::Boolean => Type::Boolean,
            Scalar::Null => Type::Null,
            Scalar::Object => Type::Object,
        };
        for _ in 0..self.arrays {
            t = Type::Array(Box::new(t));
        }
        t
    }

    /// Whether its arrays nest no deeper than a written type may
    /// ([`MAX_ARRAY_NESTING`]); the verifier refuses a bundle with one that does.
    pub fn is_valid(self) -> bool {
        usize::from(self.arrays) <= MAX_ARRAY_NESTING
    }
}

/// A checked type as the bundle stores it. Written types nest at most
/// [`MAX_ARRAY_NESTING`] arrays deep, far below the 255 the count holds; a deeper one
/// (which no written type is) keeps 255, and the verifier refuses it.
impl From<&Type> for ValueType {
    fn from(t: &Type) -> ValueType {
        let mut arrays = 0usize;
        let mut t = t;
        while let Type::Array(item) = t {
            arrays += 1;
            t = item;
        }
        let item = match t {
            Type::Any | Type::Array(_) => Scalar::Any,
            Type::String => Scalar::String,
            Type::Number => Scalar::Number,
            Type::Boolean => Scalar::Boolean,
            Type::Null => Scalar::Null,
            Type::Object => Scalar::Object,
        };
        ValueType {
            item,
            arrays: u8::try_from(arrays).unwrap_or(u8::MAX),
        }
    }
}

/// `string[]`, `array`, `object`: as the source writes it and [`Type`] shows it.
impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut arrays = usize::from(self.arrays);
        let item = match self.item {
            // `Array(Any)` is shown as `array`, so one level of arrays is in the name.
            Scalar::Any if arrays > 0 => {
                arrays -= 1;
                "array"
            }
            Scalar::Any => "any",
            Scalar::String => "string",
            Scalar::Number => "number",
            Scalar::Boolean => "boolean",
            Scalar::Null => "null",
            Scalar::Object => "object",
        };
        f.write_str(item)?;
        (0..arrays).try_for_each(|_| f.write_str("[]"))
    }
}

/// Shown as the text it was stored as before format 4 (`"object"`): a replay cassette
/// keys a request by the debug form of its task's output format, and recorded
/// cassettes must keep their keys.
impl fmt::Debug for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_string(), f)
    }
}

/// As text, as it was when types were stored as text.
impl Serialize for ValueType {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// The kind of a template that subtask matching may select (DESIGN §4's task types).
/// Only atomic templates are matchable today; the others are listed so that a request
/// naming one finds no template rather than an unknown word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Encode, Decode)]
pub enum TaskType {
    Atomic,
    Sequential,
    Reduce,
    Script,
    DirectorEvaluatorLoop,
}

impl TaskType {
    /// As a template's `type` attribute and a subtask request's `type` write it.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskType::Atomic => "atomic",
            TaskType::Sequential => "sequential",
            TaskType::Reduce => "reduce",
            TaskType::Script => "script",
            TaskType::DirectorEvaluatorLoop => "director_evaluator_loop",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_written_type_is_stored_and_shown_as_the_standard_library_shows_it() {
        let written = [
            "any",
            "string",
            "number",
            "boolean",
            "null",
            "object",
            "array",
            "[]",
            "any[]",
            "string[]",
            "object[][]",
            "array[]",
            "[][]",
            "number[][][]",
        ];
        for w in written {
            let t = Type::parse(w).expect(w);
            let stored = ValueType::from(&t);
            assert_eq!(stored.to_type(), t, "{w}");
            assert_eq!(stored.to_string(), t.to_string(), "{w}");
            assert_eq!(format!("{stored:?}"), format!("{:?}", t.to_string()), "{w}");
            assert!(stored.is_valid());
        }
        let deepest = Type::parse(&format!("string{}", "[]".repeat(MAX_ARRAY_NESTING)));
        assert!(ValueType::from(&deepest.expect("parses")).is_valid());
        let deeper = ValueType {
            item: Scalar::String,
            arrays: MAX_ARRAY_NESTING as u8 + 1,
        };
        assert!(!deeper.is_valid());
    }
}
