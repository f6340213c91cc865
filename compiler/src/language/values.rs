//! The ranges of numbers the language takes, each citing the limit it comes from, and
//! what each kind of value is called in diagnostics and in the schema.

use super::ValueKind;
use tv_vm::limits::MAX_CONCURRENCY;

/// A whole number from `min` to `max` (no upper bound when `None`).
#[derive(Debug, PartialEq)]
pub struct Count {
    pub min: u64,
    pub max: Option<u64>,
    /// The schema's name of the range and the lead of its documentation (": 1 to
    /// 1024." is added); `None` for a range the schema has a built-in type for.
    pub xsd: Option<(&'static str, &'static str)>,
}

/// A number from `min` to `max`.
#[derive(Debug, PartialEq)]
pub struct Number {
    pub min: f64,
    pub max: f64,
    /// The schema's name of the range.
    pub xsd_name: &'static str,
}

/// The most `<output_format retries>` may ask again: every attempt costs a model call.
pub const MAX_RETRIES: u64 = 10;

/// `max_tokens`, `<max_iterations>`, `<timeout>`.
pub const POSITIVE: Count = Count {
    min: 1,
    max: None,
    xsd: None,
};

/// `concurrency` of a map: each running body is a machine of its own, so a bundle may
/// not ask for more than the machine allows.
pub const CONCURRENCY: Count = Count {
    min: 1,
    max: Some(MAX_CONCURRENCY as u64),
    xsd: Some(("Concurrency", "How many bodies run at once")),
};

/// `<output_format retries>`.
pub const RETRIES: Count = Count {
    min: 0,
    max: Some(MAX_RETRIES),
    xsd: Some((
        "Retries",
        "How many times a reply that does not fit its type is asked again",
    )),
};

pub const TEMPERATURE: Number = Number {
    min: 0.0,
    max: 2.0,
    xsd_name: "Temperature",
};

pub const TOP_P: Number = Number {
    min: 0.0,
    max: 1.0,
    xsd_name: "TopP",
};

impl Count {
    pub fn contains(&self, n: u64) -> bool {
        n >= self.min && self.max.is_none_or(|max| n <= max)
    }

    /// "a positive whole number", "a whole number from 1 to 1024".
    pub fn describe(&self) -> String {
        match (self.min, self.max) {
            (min, Some(max)) => format!("a whole number from {min} to {max}"),
            (1, None) => "a positive whole number".into(),
            (min, None) => format!("a whole number of at least {min}"),
        }
    }
}

impl Number {
    pub fn contains(&self, n: f64) -> bool {
        (self.min..=self.max).contains(&n)
    }
}

impl ValueKind {
    /// What a value of this kind is, as diagnostics and hover help say it.
    pub fn describe(&self) -> String {
        match self {
            ValueKind::Template => "text with {{ }} holes".into(),
            ValueKind::Text => "text".into(),
            ValueKind::Expression => "an expression".into(),
            ValueKind::Type => "a type".into(),
            ValueKind::Params => "parameter names, each optionally typed".into(),
            ValueKind::ModelId => "a model identifier".into(),
            ValueKind::Identifier => {
                "a name: letters, digits and `_`, not starting with a digit".into()
            }
            ValueKind::NonBlank => "text that is not only white space".into(),
            ValueKind::NonEmpty => "text of at least one character, white space counting".into(),
            ValueKind::Integer => "a whole number".into(),
            ValueKind::Count(c) => c.describe(),
            ValueKind::Number(n) => format!("a number from {} to {}", n.min, n.max),
            ValueKind::Words(list) => {
                let words: Vec<String> = list.names().map(|w| format!("`{w}`")).collect();
                format!("one of {}", words.join(", "))
            }
        }
    }

    /// Its type's name in the schema: a built-in `xs:` type or one the schema defines.
    pub fn xsd_type(&self) -> &'static str {
        match self {
            ValueKind::Template
            | ValueKind::Text
            | ValueKind::Expression
            | ValueKind::Type
            | ValueKind::Params
            | ValueKind::ModelId => "xs:string",
            ValueKind::Identifier => "Identifier",
            ValueKind::NonBlank => "NonBlank",
            ValueKind::NonEmpty => "NonEmpty",
            ValueKind::Integer => "xs:long",
            ValueKind::Count(Count {
                xsd: Some((name, _)),
                ..
            }) => name,
            ValueKind::Count(Count { min: 0, .. }) => "xs:nonNegativeInteger",
            ValueKind::Count(_) => "xs:positiveInteger",
            ValueKind::Number(n) => n.xsd_name,
            ValueKind::Words(list) => list.xsd_name,
        }
    }
}
