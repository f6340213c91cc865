//! Built-in functions: one table holding each one's name, signature, result bound and
//! implementation, as MiniJinja registers its filters. Every bundle may call these without
//! declaring them, and no template may take one of their names.
//!
//! The compiler finds a name here once and writes its index into the bundle; the machine
//! calls `BUILTINS[index]` and never looks at names. The index is part of the bundle
//! format: a new built-in goes at the end of the table, and none is moved or removed.

use crate::bounds::{self, NODE};
use crate::functions::{self as f, BuiltinError, Call};
use crate::types::Type;
use serde_json::Value;
use std::fmt;

#[derive(Debug)]
pub struct Builtin {
    pub name: &'static str,
    pub params: &'static [BuiltinParam],
    pub returns: Ret,
    pub doc: &'static str,
    /// The largest weight of its result beyond the result's own node ([`crate::bounds`]).
    bound: fn(&[Value]) -> u64,
    /// The implementation, given arguments already checked against the arity.
    function: fn(&Call) -> Result<Value, BuiltinError>,
}

/// The place of a built-in in [`BUILTINS`]: what a bundle's `Builtin` instruction names.
/// Only this module makes one, from a name found in the table or as one of the constants
/// below, so an id always names a built-in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BuiltinId(u16);

impl BuiltinId {
    /// The index a bundle holds.
    pub const fn index(self) -> u16 {
        self.0
    }

    pub fn builtin(self) -> &'static Builtin {
        &BUILTINS[usize::from(self.0)]
    }
}

/// Built-ins the compiler and the machine use by themselves, besides calls written in a
/// template (a test checks each against the table): `parse_json` reads an object or array
/// argument written as text, and the result bound of an evaluator's reply; `merge` adds a
/// loop's script output to its evaluation.
pub const LEN: BuiltinId = BuiltinId(3);
pub const GET: BuiltinId = BuiltinId(11);
pub const PARSE_JSON: BuiltinId = BuiltinId(13);
pub const MERGE: BuiltinId = BuiltinId(17);

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
    /// Runs the built-in on arguments bound by position (absent optional trailing ones
    /// left out). A wrong number of arguments is an error, not a panic: the machine may
    /// run bytecode from an older or foreign compiler.
    pub fn call(&'static self, args: &[Value]) -> Result<Value, BuiltinError> {
        let c = Call::new(self, args);
        let (min, max) = (self.min_arity(), self.max_arity());
        if args.len() < min || args.len() > max {
            let wanted = if min == max {
                format!("{min}")
            } else {
                format!("{min} to {max}")
            };
            return Err(c.fail(format!("takes {wanted} arguments, found {}", args.len())));
        }
        (self.function)(&c)
    }

    /// The largest weight its result can have for these arguments, known before it is
    /// built: the machine charges this to its memory budget first.
    pub fn result_bound(&self, args: &[Value]) -> u64 {
        NODE + (self.bound)(args)
    }

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
        bound: bounds::case,
        function: f::upper,
    },
    Builtin {
        name: "lower",
        params: &[p("text", Ty::String)],
        returns: Ret::Fixed(Ty::String),
        doc: "The text in lower case.",
        bound: bounds::case,
        function: f::lower,
    },
    Builtin {
        name: "trim",
        params: &[p("text", Ty::String)],
        returns: Ret::Fixed(Ty::String),
        doc: "The text without leading and trailing white space.",
        bound: bounds::first_text,
        function: f::trim,
    },
    Builtin {
        name: "len",
        params: &[p("value", Ty::StringArrayOrObject)],
        returns: Ret::Fixed(Ty::Number),
        doc: "Characters of a string, items of an array, keys of an object.",
        bound: bounds::scalar,
        function: f::len,
    },
    Builtin {
        name: "join",
        params: &[p("items", Ty::Array), opt("separator", Ty::String)],
        returns: Ret::Fixed(Ty::String),
        doc: "The items as text, separated by `separator` (default \", \").",
        bound: bounds::join,
        function: f::join,
    },
    Builtin {
        name: "split",
        params: &[p("text", Ty::String), p("separator", Ty::String)],
        returns: Ret::Fixed(Ty::Strings),
        doc: "The pieces of the text between separators.",
        bound: bounds::split,
        function: f::split,
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
        bound: bounds::replace,
        function: f::replace,
    },
    Builtin {
        name: "contains",
        params: &[p("haystack", Ty::StringArrayOrObject), p("needle", Ty::Any)],
        returns: Ret::Fixed(Ty::Boolean),
        doc: "Substring of a string, item of an array, or key of an object.",
        bound: bounds::scalar,
        function: f::contains,
    },
    Builtin {
        name: "default",
        params: &[p("value", Ty::Any), p("fallback", Ty::Any)],
        returns: Ret::SameAsFirst,
        doc: "The value, or the fallback when the value is null or an empty string.",
        bound: bounds::largest_argument,
        function: f::default,
    },
    Builtin {
        name: "json",
        params: &[p("value", Ty::Any)],
        returns: Ret::Fixed(Ty::String),
        doc: "The value as compact JSON text.",
        bound: bounds::as_json,
        function: f::json,
    },
    Builtin {
        name: "keys",
        params: &[p("object", Ty::Object)],
        returns: Ret::Fixed(Ty::Strings),
        doc: "The keys of an object, in order.",
        bound: bounds::looked_up,
        function: f::keys,
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
        bound: bounds::looked_up,
        function: f::get,
    },
    Builtin {
        name: "str",
        params: &[p("value", Ty::Any)],
        returns: Ret::Fixed(Ty::String),
        doc: "A string as it is, any other value as JSON text.",
        bound: bounds::as_json,
        function: f::str,
    },
    Builtin {
        name: "parse_json",
        params: &[p("text", Ty::String)],
        returns: Ret::Fixed(Ty::Any),
        doc: "The JSON value the text holds (a fenced ```json block counts).",
        bound: bounds::parsed,
        function: f::parse_json,
    },
    Builtin {
        name: "truncate",
        params: &[p("text", Ty::String), p("max_chars", Ty::Number)],
        returns: Ret::Fixed(Ty::String),
        doc: "At most `max_chars` characters of the text.",
        bound: bounds::first_text,
        function: f::truncate,
    },
    Builtin {
        name: "starts_with",
        params: &[p("text", Ty::String), p("prefix", Ty::String)],
        returns: Ret::Fixed(Ty::Boolean),
        doc: "Whether the text starts with the prefix.",
        bound: bounds::scalar,
        function: f::starts_with,
    },
    Builtin {
        name: "ends_with",
        params: &[p("text", Ty::String), p("suffix", Ty::String)],
        returns: Ret::Fixed(Ty::Boolean),
        doc: "Whether the text ends with the suffix.",
        bound: bounds::scalar,
        function: f::ends_with,
    },
    Builtin {
        name: "merge",
        params: &[p("object", Ty::Object), p("with", Ty::Object)],
        returns: Ret::Fixed(Ty::Object),
        doc: "The first object with the second's fields added, replacing any of the same name.",
        bound: bounds::both_objects,
        function: f::merge,
    },
];

/// The built-in of this name, for the checker and the compiler: never at run time.
pub fn lookup(name: &str) -> Option<&'static Builtin> {
    find(name).map(BuiltinId::builtin)
}

/// The id of the built-in of this name.
pub fn find(name: &str) -> Option<BuiltinId> {
    let i = BUILTINS.iter().position(|b| b.name == name)?;
    // The table has far fewer than 65,536 entries (a test checks it).
    Some(BuiltinId(i as u16))
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

    /// The order is the bundle format: bundles name built-ins by index.
    #[test]
    fn the_table_keeps_its_order() {
        let names: Vec<&str> = BUILTINS.iter().map(|b| b.name).collect();
        assert_eq!(
            names,
            [
                "upper",
                "lower",
                "trim",
                "len",
                "join",
                "split",
                "replace",
                "contains",
                "default",
                "json",
                "keys",
                "get",
                "str",
                "parse_json",
                "truncate",
                "starts_with",
                "ends_with",
                "merge",
            ]
        );
        assert!(BUILTINS.len() <= usize::from(u16::MAX));
    }

    #[test]
    fn the_named_ids_are_the_built_ins_of_their_names() {
        assert_eq!(PARSE_JSON.builtin().name, "parse_json");
        assert_eq!(MERGE.builtin().name, "merge");
        assert_eq!(LEN.builtin().name, "len");
        assert_eq!(GET.builtin().name, "get");
        assert_eq!(find("parse_json"), Some(PARSE_JSON));
        assert_eq!(find("merge"), Some(MERGE));
        assert_eq!(find("shout"), None);
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
