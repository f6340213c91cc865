//! How large a built-in's result can be, known before it is built: the machine charges
//! this bound to its memory budget first, so `replace(q, "a", q)` on a 100 KB `q` is
//! refused before it asks for 10 GB, not after.
//!
//! Each bound is in the units of [`weight`] and holds for every argument (a property
//! test checks it). Arguments a built-in would refuse get a small bound: the call fails
//! without building anything.

use crate::values::weight;
use serde_json::Value;

/// What one value takes besides its text (the `NODE` of [`weight`]): every result is
/// at least one value.
pub(crate) const NODE: u64 = std::mem::size_of::<Value>() as u64;

/// JSON text can take up to six bytes per byte of a string (`\u0000`) and a few per
/// value (`null,`), so a value written as JSON is at most this many times its weight.
const JSON_FACTOR: u64 = 6;

/// Case mapping can turn one character into up to three (`ß` → `SS` is two; some
/// ligatures give three), each at most as long in UTF-8 as the source character.
const CASE_FACTOR: u64 = 3;

/// Parsed JSON takes at most this many bytes per byte of its text: `[]` is 2 bytes of
/// text and one value.
const PARSE_FACTOR: u64 = NODE / 2 + 1;

/// The largest text a value is written as: a string as it is, anything else as JSON.
pub fn text_bound(v: &Value) -> u64 {
    match v {
        Value::String(s) => s.len() as u64,
        other => JSON_FACTOR * weight(other),
    }
}

// Each built-in's bound beyond the result's own node, registered with it in
// `builtins::BUILTINS`. Arguments may be missing or of the wrong kind (the call then
// fails): they count as null or as empty text.

fn arg(args: &[Value], i: usize) -> &Value {
    args.get(i).unwrap_or(&Value::Null)
}

fn text(args: &[Value], i: usize) -> u64 {
    arg(args, i).as_str().map_or(0, |s| s.len() as u64)
}

/// `upper`, `lower`.
pub(crate) fn case(args: &[Value]) -> u64 {
    CASE_FACTOR * text(args, 0)
}

/// `trim`, `truncate`: a part of the first argument.
pub(crate) fn first_text(args: &[Value]) -> u64 {
    text(args, 0)
}

/// `len`, `contains`, `starts_with`, `ends_with`: a number or a boolean.
pub(crate) fn scalar(_: &[Value]) -> u64 {
    0
}

/// `default`: one of its arguments.
pub(crate) fn largest_argument(args: &[Value]) -> u64 {
    args.iter().map(weight).max().unwrap_or(0)
}

/// `json`, `str`.
pub(crate) fn as_json(args: &[Value]) -> u64 {
    JSON_FACTOR * weight(arg(args, 0))
}

/// `merge`: at most the fields of both objects.
pub(crate) fn both_objects(args: &[Value]) -> u64 {
    weight(arg(args, 0)) + weight(arg(args, 1))
}

/// `keys`, `get`: a part of the first argument, or the fallback.
pub(crate) fn looked_up(args: &[Value]) -> u64 {
    weight(arg(args, 0)) + args.get(2).map_or(0, weight)
}

/// `parse_json`.
pub(crate) fn parsed(args: &[Value]) -> u64 {
    PARSE_FACTOR * text(args, 0)
}

/// `join`: the items as text (JSON for non-strings) with a separator between each two.
pub(crate) fn join(args: &[Value]) -> u64 {
    let Value::Array(items) = arg(args, 0) else {
        return 0;
    };
    // The default separator, ", ", is two bytes.
    let sep = args
        .get(1)
        .and_then(Value::as_str)
        .map_or(2, |s| s.len() as u64);
    let texts: u64 = items.iter().map(|i| JSON_FACTOR * weight(i)).sum();
    texts + sep * items.len() as u64
}

/// `split`: at most one piece per separator, plus one; every piece is a value.
pub(crate) fn split(args: &[Value]) -> u64 {
    let (text, separator) = (text(args, 0), text(args, 1));
    let pieces = text / separator.max(1) + 1;
    text + pieces * NODE
}

/// `replace`: every occurrence of `from` replaced by `to`, at most `text / from` of them.
pub(crate) fn replace(args: &[Value]) -> u64 {
    let (text, from, to) = (text(args, 0), text(args, 1), text(args, 2));
    let occurrences = text / from.max(1);
    text.saturating_add(occurrences.saturating_mul(to))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtins::{lookup, BUILTINS};
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
            let b = &BUILTINS[id];
            if let Ok(result) = b.call(&args) {
                prop_assert!(
                    weight(&result) <= b.result_bound(&args),
                    "{}({args:?}) = {result:?}", b.name
                );
            }
        }
    }

    #[test]
    fn a_replacement_that_would_explode_is_bounded_before_it_is_built() {
        let replace = lookup("replace").unwrap();
        let q = "a".repeat(100_000);
        let bound = replace.result_bound(&[json!(q), json!("a"), json!(q)]);
        assert!(bound >= 10_000_000_000, "{bound}");
        let small = replace.result_bound(&[json!("abc"), json!("b"), json!("xy")]);
        assert!(small < 200, "{small}");
    }
}
