//! Built-in functions: one table holding each one's name, signature, result bound and
//! implementation, as MiniJinja registers its filters. Every bundle may call these without
//! declaring them, and no template may take one of their names.
//!
//! The compiler finds a name here once and writes its index into the bundle; the machine
//! calls `BUILTINS[index]` and never looks at names. The index is part of the bundle
//! format: a new built-in goes at the end of the table, and none is moved or removed.

pub(crate) mod call;

pub use call::{Builtin, BuiltinError, BuiltinParam, Ret, Ty};

use crate::bounds;
use crate::functions as f;
use call::{opt, p};

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

    /// The built-in it names.
    pub fn builtin(self) -> &'static Builtin {
        &BUILTINS[usize::from(self.0)]
    }
}

// Built-ins the compiler and the machine use by themselves, besides calls written in a
// template (a test checks each against the table).

/// `len`: how many items a failed reduction had, for its error.
pub const LEN: BuiltinId = BuiltinId(3);
/// `get`: a reduction reads each item's result with it.
pub const GET: BuiltinId = BuiltinId(11);
/// `parse_json`: reads an object or array argument written as text; its result bound is
/// that of an evaluator's reply.
pub const PARSE_JSON: BuiltinId = BuiltinId(13);
/// `merge`: adds a loop's script output to its evaluation.
pub const MERGE: BuiltinId = BuiltinId(17);

/// Every built-in, at the index a bundle names it by.
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

/// Calls a built-in by name, for the tests: the machine calls by index through
/// [`Builtin::call`]. An unknown name is an error, not a panic.
#[cfg(test)]
pub(crate) fn call(
    name: &str,
    args: &[serde_json::Value],
) -> Result<serde_json::Value, BuiltinError> {
    match lookup(name) {
        Some(builtin) => builtin.call(args),
        None => Err(BuiltinError {
            function: name.to_string(),
            message: "there is no built-in function with this name".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Type;

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
