//! Built-in functions: the signatures the checker uses. Every bundle may call these
//! without declaring them, and no template may take one of their names.

use crate::types::Type;
use std::fmt;

#[derive(Debug)]
pub struct Builtin {
    pub name: &'static str,
    pub params: &'static [BuiltinParam],
    pub returns: Ret,
    pub doc: &'static str,
}

#[derive(Debug)]
pub struct BuiltinParam {
    pub name: &'static str,
    pub ty: Ty,
    /// Optional parameters come last.
    pub optional: bool,
}

/// Types as constants (a `Type` with a `Box` cannot be a `const`), and the unions of
/// types some built-ins take, so the checker can refuse an argument that never works.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    Any,
    String,
    Number,
    Boolean,
    Null,
    Object,
    Array,
    Strings,
    /// Something with a length or members: `len`, the haystack of `contains`.
    StringArrayOrObject,
    /// What `get` looks into; null reads as "nothing there", so lookups chain.
    ObjectArrayOrNull,
    /// A key of an object or an index of an array (a numeric string counts).
    StringOrNumber,
}

impl Ty {
    /// The closest single type: a union is `any`, as nothing narrower holds all of it.
    pub fn to_type(self) -> Type {
        match self {
            Ty::Any | Ty::StringArrayOrObject | Ty::ObjectArrayOrNull | Ty::StringOrNumber => {
                Type::Any
            }
            Ty::String => Type::String,
            Ty::Number => Type::Number,
            Ty::Boolean => Type::Boolean,
            Ty::Null => Type::Null,
            Ty::Object => Type::Object,
            Ty::Array => Type::Array(Box::new(Type::Any)),
            Ty::Strings => Type::Array(Box::new(Type::String)),
        }
    }

    /// The single types a value of this type may have.
    pub fn members(self) -> &'static [Ty] {
        match self {
            Ty::StringArrayOrObject => &[Ty::String, Ty::Array, Ty::Object],
            Ty::ObjectArrayOrNull => &[Ty::Object, Ty::Array, Ty::Null],
            Ty::StringOrNumber => &[Ty::String, Ty::Number],
            Ty::Any => &[Ty::Any],
            Ty::String => &[Ty::String],
            Ty::Number => &[Ty::Number],
            Ty::Boolean => &[Ty::Boolean],
            Ty::Null => &[Ty::Null],
            Ty::Object => &[Ty::Object],
            Ty::Array => &[Ty::Array],
            Ty::Strings => &[Ty::Strings],
        }
    }

    /// Whether an argument of type `t` may be passed: it fits one of the members. An
    /// `any` argument fits everything (its type is known only at run time).
    pub fn accepts(self, t: &Type) -> bool {
        self.members().iter().any(|m| t.fits(&m.to_type()))
    }

    /// The type for a message: "`number`", or "`string`, `array` or `object`".
    pub fn describe(self) -> String {
        let names: Vec<String> = self
            .members()
            .iter()
            .map(|m| format!("`{}`", m.to_type()))
            .collect();
        match names.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            _ => names.concat(),
        }
    }
}

/// As in a signature: `string`, or `string | array | object`.
impl fmt::Display for Ty {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, m) in self.members().iter().enumerate() {
            if i > 0 {
                f.write_str(" | ")?;
            }
            write!(f, "{}", m.to_type())?;
        }
        Ok(())
    }
}

/// The result type, possibly following the first argument (`default`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ret {
    Fixed(Ty),
    SameAsFirst,
}

impl Builtin {
    pub fn min_arity(&self) -> usize {
        self.params.iter().filter(|p| !p.optional).count()
    }

    pub fn max_arity(&self) -> usize {
        self.params.len()
    }

    pub fn signature(&self) -> String {
        let params: Vec<String> = self
            .params
            .iter()
            .map(|p| {
                let opt = if p.optional { "?" } else { "" };
                format!("{}{opt}: {}", p.name, p.ty)
            })
            .collect();
        let ret = match self.returns {
            Ret::Fixed(t) => t.to_type().to_string(),
            Ret::SameAsFirst => "same as first".into(),
        };
        format!("{}({}) -> {}", self.name, params.join(", "), ret)
    }
}

const fn p(name: &'static str, ty: Ty) -> BuiltinParam {
    BuiltinParam {
        name,
        ty,
        optional: false,
    }
}

const fn opt(name: &'static str, ty: Ty) -> BuiltinParam {
    BuiltinParam {
        name,
        ty,
        optional: true,
    }
}

pub static BUILTINS: &[Builtin] = &[
    Builtin {
        name: "upper",
        params: &[p("text", Ty::String)],
        returns: Ret::Fixed(Ty::String),
        doc: "The text in upper case.",
    },
    Builtin {
        name: "lower",
        params: &[p("text", Ty::String)],
        returns: Ret::Fixed(Ty::String),
        doc: "The text in lower case.",
    },
    Builtin {
        name: "trim",
        params: &[p("text", Ty::String)],
        returns: Ret::Fixed(Ty::String),
        doc: "The text without leading and trailing white space.",
    },
    Builtin {
        name: "len",
        params: &[p("value", Ty::StringArrayOrObject)],
        returns: Ret::Fixed(Ty::Number),
        doc: "Characters of a string, items of an array, keys of an object.",
    },
    Builtin {
        name: "join",
        params: &[p("items", Ty::Array), opt("separator", Ty::String)],
        returns: Ret::Fixed(Ty::String),
        doc: "The items as text, separated by `separator` (default \", \").",
    },
    Builtin {
        name: "split",
        params: &[p("text", Ty::String), p("separator", Ty::String)],
        returns: Ret::Fixed(Ty::Strings),
        doc: "The pieces of the text between separators.",
    },
    Builtin {
        name: "replace",
        params: &[
            p("text", Ty::String),
            p("from", Ty::String),
            p("to", Ty::String),
        ],
        returns: Ret::Fixed(Ty::String),
        doc: "The text with every `from` replaced by `to`.",
    },
    Builtin {
        name: "contains",
        params: &[p("haystack", Ty::StringArrayOrObject), p("needle", Ty::Any)],
        returns: Ret::Fixed(Ty::Boolean),
        doc: "Substring of a string, item of an array, or key of an object.",
    },
    Builtin {
        name: "default",
        params: &[p("value", Ty::Any), p("fallback", Ty::Any)],
        returns: Ret::SameAsFirst,
        doc: "The value, or the fallback when the value is null or an empty string.",
    },
    Builtin {
        name: "json",
        params: &[p("value", Ty::Any)],
        returns: Ret::Fixed(Ty::String),
        doc: "The value as compact JSON text.",
    },
    Builtin {
        name: "keys",
        params: &[p("object", Ty::Object)],
        returns: Ret::Fixed(Ty::Strings),
        doc: "The keys of an object, in order.",
    },
    Builtin {
        name: "get",
        params: &[
            p("value", Ty::ObjectArrayOrNull),
            p("key", Ty::StringOrNumber),
            opt("fallback", Ty::Any),
        ],
        returns: Ret::Fixed(Ty::Any),
        doc: "A field of an object or an item of an array, or the fallback (default null).",
    },
    Builtin {
        name: "str",
        params: &[p("value", Ty::Any)],
        returns: Ret::Fixed(Ty::String),
        doc: "A string as it is, any other value as JSON text.",
    },
    Builtin {
        name: "parse_json",
        params: &[p("text", Ty::String)],
        returns: Ret::Fixed(Ty::Any),
        doc: "The JSON value the text holds (a fenced ```json block counts).",
    },
    Builtin {
        name: "truncate",
        params: &[p("text", Ty::String), p("max_chars", Ty::Number)],
        returns: Ret::Fixed(Ty::String),
        doc: "At most `max_chars` characters of the text.",
    },
    Builtin {
        name: "starts_with",
        params: &[p("text", Ty::String), p("prefix", Ty::String)],
        returns: Ret::Fixed(Ty::Boolean),
        doc: "Whether the text starts with the prefix.",
    },
    Builtin {
        name: "ends_with",
        params: &[p("text", Ty::String), p("suffix", Ty::String)],
        returns: Ret::Fixed(Ty::Boolean),
        doc: "Whether the text ends with the suffix.",
    },
    Builtin {
        name: "merge",
        params: &[p("object", Ty::Object), p("with", Ty::Object)],
        returns: Ret::Fixed(Ty::Object),
        doc: "The first object with the second's fields added, replacing any of the same name.",
    },
];

pub fn lookup(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_optional_parameters_come_last() {
        for (i, b) in BUILTINS.iter().enumerate() {
            assert!(
                BUILTINS[i + 1..].iter().all(|o| o.name != b.name),
                "{}",
                b.name
            );
            let first_opt = b
                .params
                .iter()
                .position(|p| p.optional)
                .unwrap_or(b.params.len());
            assert!(
                b.params[first_opt..].iter().all(|p| p.optional),
                "{}",
                b.name
            );
        }
    }

    #[test]
    fn signatures_read_like_the_docs() {
        assert_eq!(
            lookup("join").unwrap().signature(),
            "join(items: array, separator?: string) -> string"
        );
        assert_eq!(
            lookup("get").unwrap().signature(),
            "get(value: object | array | null, key: string | number, fallback?: any) -> any"
        );
    }

    #[test]
    fn a_union_accepts_its_members_and_any_but_nothing_else() {
        let t = Ty::StringArrayOrObject;
        assert!(t.accepts(&Type::String));
        assert!(t.accepts(&Type::Array(Box::new(Type::Number))));
        assert!(t.accepts(&Type::Object));
        assert!(t.accepts(&Type::Any));
        assert!(!t.accepts(&Type::Boolean));
        assert!(!t.accepts(&Type::Null));
        assert_eq!(t.describe(), "`string`, `array` or `object`");
        assert_eq!(Ty::Number.describe(), "`number`");
        assert_eq!(Ty::StringOrNumber.describe(), "`string` or `number`");
    }
}
