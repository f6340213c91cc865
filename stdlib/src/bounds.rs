//! How large a built-in's result can be, known before it is built: the machine charges
//! this bound to its memory budget first, so `replace(q, "a", q)` on a 100 KB `q` is
//! refused before it asks for 10 GB, not after.
//!
//! Each bound is in the units of [`weight`] and holds for every argument (a property
//! test checks it). Arguments a built-in would refuse get a small bound: the call fails
//! without building anything.

use crate::values::weight;
use serde_json::Value;

/// What one value takes besides its text (the `NODE` of [`weight`]).
const NODE: u64 = std::mem::size_of::<Value>() as u64;

/// JSON text can take up to six bytes per byte of a string (`\u0000`) and a few per
/// value (`null,`), so a value written as JSON is at most this many times its weight.
const JSON_FACTOR: u64 = 6;

/// Case mapping can turn one character into up to three (`ß` → `SS` is two; some
/// ligatures give three), each at most as long in UTF-8 as the source character.
const CASE_FACTOR: u64 = 3;

/// Parsed JSON takes at most this many bytes per byte of its text: `[]` is 2 bytes of
/// text and one value.
const PARSE_FACTOR: u64 = NODE / 2 + 1;

/// The largest weight `name(args)` can have.
pub fn result_bound(name: &str, args: &[Value]) -> u64 {
    let arg = |i: usize| args.get(i).unwrap_or(&Value::Null);
    let text = |i: usize| arg(i).as_str().map_or(0, |s| s.len() as u64);
    let bound = match name {
        "upper" | "lower" => CASE_FACTOR * text(0),
        "trim" | "truncate" => text(0),
        "len" | "contains" | "starts_with" | "ends_with" => 0,
        "join" => join_bound(arg(0), args.get(1)),
        "split" => split_bound(text(0), text(1)),
        "replace" => replace_bound(text(0), text(1), text(2)),
        "default" => args.iter().map(weight).max().unwrap_or(0),
        "json" | "str" => JSON_FACTOR * weight(arg(0)),
        "merge" => weight(arg(0)) + weight(arg(1)),
        "keys" | "get" => weight(arg(0)) + args.get(2).map_or(0, weight),
        "parse_json" => PARSE_FACTOR * text(0),
        // Unknown names fail without building anything.
        _ => 0,
    };
    NODE + bound
}

/// The largest text a value is written as: a string as it is, anything else as JSON.
pub fn text_bound(v: &Value) -> u64 {
    match v {
        Value::String(s) => s.len() as u64,
        other => JSON_FACTOR * weight(other),
    }
}

/// The items as text (JSON for non-strings) with a separator between each two.
fn join_bound(items: &Value, separator: Option<&Value>) -> u64 {
    let Value::Array(items) = items else { return 0 };
    // The default separator, ", ", is two bytes.
    let sep = separator
        .and_then(Value::as_str)
        .map_or(2, |s| s.len() as u64);
    let texts: u64 = items.iter().map(|i| JSON_FACTOR * weight(i)).sum();
    texts + sep * items.len() as u64
}

/// At most one piece per separator, plus one; every piece is a value.
fn split_bound(text: u64, separator: u64) -> u64 {
    let pieces = text / separator.max(1) + 1;
    text + pieces * NODE
}

/// Every occurrence of `from` replaced by `to`: at most `text / from` occurrences.
fn replace_bound(text: u64, from: u64, to: u64) -> u64 {
    let occurrences = text / from.max(1);
    text.saturating_add(occurrences.saturating_mul(to))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtins::BUILTINS;
    use crate::functions::call;
    use proptest::prelude::*;
    use serde_json::json;

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i32>().prop_map(|n| json!(n)),
            "[a-zß\u{0}\"\\\\ ,\\[\\]{}:ﬃ]{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("[a-c]{1,2}", inner, 0..3)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn no_built_in_result_outweighs_its_bound(
            id in 0..BUILTINS.len(),
            args in prop::collection::vec(value(), 0..4),
        ) {
            let name = BUILTINS[id].name;
            if let Ok(result) = call(name, &args) {
                prop_assert!(
                    weight(&result) <= result_bound(name, &args),
                    "{name}({args:?}) = {result:?}"
                );
            }
        }
    }

    #[test]
    fn a_replacement_that_would_explode_is_bounded_before_it_is_built() {
        let q = "a".repeat(100_000);
        let bound = result_bound("replace", &[json!(q), json!("a"), json!(q)]);
        assert!(bound >= 10_000_000_000, "{bound}");
        let small = result_bound("replace", &[json!("abc"), json!("b"), json!("xy")]);
        assert!(small < 200, "{small}");
    }
}
