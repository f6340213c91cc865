//! Each built-in: what it returns, and the error it gives for values it cannot use.

use super::*;
use crate::builtins::{self, call};
use serde_json::json;

fn ok(name: &str, args: &[Value]) -> Value {
    call(name, args).unwrap_or_else(|e| panic!("{e}"))
}

fn err(name: &str, args: &[Value]) -> String {
    match call(name, args) {
        Ok(v) => panic!("`{name}` returned {v} instead of an error"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn upper_and_lower_are_unicode_aware() {
    assert_eq!(ok("upper", &[json!("éß abc")]), json!("ÉSS ABC"));
    assert_eq!(ok("lower", &[json!("ÉÀ ABC")]), json!("éà abc"));
    assert_eq!(ok("upper", &[json!("")]), json!(""));
}

#[test]
fn trim_removes_unicode_white_space_at_both_ends_only() {
    assert_eq!(ok("trim", &[json!("\u{a0} a b\n\t")]), json!("a b"));
    assert_eq!(ok("trim", &[json!("   ")]), json!(""));
}

#[test]
fn string_functions_name_the_function_parameter_and_found_value() {
    assert_eq!(
        err("upper", &[json!(3)]),
        "`upper`: expected a string for `text`, found number 3"
    );
    assert!(err("lower", &[json!(null)]).contains("found null"));
    assert!(err("trim", &[json!([1])]).contains("found array [1]"));
}

#[test]
fn long_values_are_cut_short_in_error_messages() {
    let long = json!("é".repeat(100));
    let message = err("upper", &[json!({ "k": long })]);
    assert!(message.ends_with('…'), "{message}");
    assert!(message.chars().count() < 100, "{message}");
}

#[test]
fn len_counts_characters_items_and_keys() {
    assert_eq!(ok("len", &[json!("éß")]), json!(2));
    assert_eq!(ok("len", &[json!("")]), json!(0));
    assert_eq!(ok("len", &[json!([1, [2, 3]])]), json!(2));
    assert_eq!(ok("len", &[json!({"a": 1, "b": 2})]), json!(2));
}

#[test]
fn len_of_a_number_boolean_or_null_is_an_error() {
    for v in [json!(1), json!(true), json!(null)] {
        let message = err("len", &[v]);
        assert!(
            message.contains("a string, an array or an object"),
            "{message}"
        );
    }
}

#[test]
fn join_splices_non_strings_as_json() {
    let items = json!(["a", 1, null, {"k": [true]}]);
    assert_eq!(
        ok("join", &[items, json!(" | ")]),
        json!("a | 1 | null | {\"k\":[true]}")
    );
}

#[test]
fn join_without_separator_uses_comma_space() {
    assert_eq!(ok("join", &[json!(["x", "y"])]), json!("x, y"));
    assert_eq!(ok("join", &[json!([])]), json!(""));
    assert_eq!(ok("join", &[json!(["x", "y"]), json!("")]), json!("xy"));
}

#[test]
fn join_rejects_a_non_array_or_a_non_string_separator() {
    assert!(err("join", &[json!("ab")]).contains("an array for `items`"));
    assert!(err("join", &[json!([]), json!(null)]).contains("a string for `separator`"));
}

#[test]
fn split_keeps_empty_pieces() {
    assert_eq!(
        ok("split", &[json!("a,,é"), json!(",")]),
        json!(["a", "", "é"])
    );
    assert_eq!(ok("split", &[json!(""), json!(",")]), json!([""]));
    assert_eq!(
        ok("split", &[json!("aßbßc"), json!("ß")]),
        json!(["a", "b", "c"])
    );
}

#[test]
fn split_on_an_empty_separator_is_an_error() {
    let message = err("split", &[json!("abc"), json!("")]);
    assert_eq!(
        message,
        "`split`: expected a non-empty string for `separator`, found string \"\""
    );
    assert!(err("split", &[json!(1), json!(",")]).contains("`text`"));
}

#[test]
fn replace_replaces_every_occurrence() {
    assert_eq!(
        ok("replace", &[json!("é-é-e"), json!("é"), json!("ß")]),
        json!("ß-ß-e")
    );
    assert_eq!(
        ok("replace", &[json!("abc"), json!("b"), json!("")]),
        json!("ac")
    );
    assert_eq!(
        ok("replace", &[json!(""), json!("x"), json!("y")]),
        json!("")
    );
}

#[test]
fn replace_with_an_empty_from_or_non_strings_is_an_error() {
    assert!(err("replace", &[json!("abc"), json!(""), json!("x")]).contains("`from`"));
    assert!(err("replace", &[json!("abc"), json!("a"), json!(1)]).contains("`to`"));
}

#[test]
fn contains_finds_substrings_with_the_needle_spliced_as_text() {
    assert_eq!(ok("contains", &[json!("café"), json!("fé")]), json!(true));
    assert_eq!(ok("contains", &[json!("v12"), json!(12)]), json!(true));
    assert_eq!(ok("contains", &[json!("abc"), json!("")]), json!(true));
    assert_eq!(ok("contains", &[json!("abc"), json!("d")]), json!(false));
}

#[test]
fn contains_finds_array_items_by_value_equality() {
    assert_eq!(ok("contains", &[json!([1, "a"]), json!(1.0)]), json!(true));
    assert_eq!(
        ok("contains", &[json!([[1, 2]]), json!([1, 2])]),
        json!(true)
    );
    assert_eq!(ok("contains", &[json!([1, "a"]), json!("1")]), json!(false));
    assert_eq!(ok("contains", &[json!([]), json!(null)]), json!(false));
}

#[test]
fn contains_finds_object_keys_and_wants_a_string_key() {
    assert_eq!(ok("contains", &[json!({"a": 1}), json!("a")]), json!(true));
    assert_eq!(ok("contains", &[json!({"a": 1}), json!("b")]), json!(false));
    assert!(err("contains", &[json!({"1": 1}), json!(1)]).contains("a string key"));
}

#[test]
fn contains_in_a_number_boolean_or_null_is_an_error() {
    for v in [json!(1), json!(false), json!(null)] {
        assert!(err("contains", &[v, json!("x")]).contains("`haystack`"));
    }
}

#[test]
fn default_replaces_only_null_and_the_empty_string() {
    assert_eq!(ok("default", &[json!(null), json!("x")]), json!("x"));
    assert_eq!(ok("default", &[json!(""), json!("x")]), json!("x"));
    for kept in [json!(0), json!(false), json!([]), json!(" ")] {
        assert_eq!(ok("default", &[kept.clone(), json!("x")]), kept);
    }
}

#[test]
fn json_quotes_strings_and_writes_everything_compactly() {
    assert_eq!(ok("json", &[json!("a\"é")]), json!("\"a\\\"é\""));
    assert_eq!(
        ok("json", &[json!({"a": [1, null]})]),
        json!("{\"a\":[1,null]}")
    );
    assert_eq!(ok("json", &[json!(null)]), json!("null"));
}

#[test]
fn keys_come_in_the_order_written() {
    let object: Value = serde_json::from_str(r#"{"z": 1, "a": 2, "m": 3}"#).unwrap();
    assert_eq!(ok("keys", &[object]), json!(["z", "a", "m"]));
    assert_eq!(ok("keys", &[json!({})]), json!([]));
    assert!(err("keys", &[json!([1])]).contains("an object for `object`"));
}

#[test]
fn get_reads_object_fields_and_falls_back_when_absent() {
    let o = json!({"a": 1, "n": null});
    assert_eq!(ok("get", &[o.clone(), json!("a")]), json!(1));
    assert_eq!(ok("get", &[o.clone(), json!("b")]), json!(null));
    assert_eq!(ok("get", &[o.clone(), json!("b"), json!("x")]), json!("x"));
    // A field present with null is present: the fallback is for absent keys.
    assert_eq!(ok("get", &[o, json!("n"), json!("x")]), json!(null));
}

#[test]
fn get_reads_array_items_with_negative_and_numeric_string_indexes() {
    let a = json!(["a", "b", "c"]);
    assert_eq!(ok("get", &[a.clone(), json!(0)]), json!("a"));
    assert_eq!(ok("get", &[a.clone(), json!(-1)]), json!("c"));
    assert_eq!(ok("get", &[a.clone(), json!(2.0)]), json!("c"));
    assert_eq!(ok("get", &[a.clone(), json!("1")]), json!("b"));
    assert_eq!(ok("get", &[a.clone(), json!("-3")]), json!("a"));
    assert_eq!(ok("get", &[a.clone(), json!(3), json!("x")]), json!("x"));
    assert_eq!(ok("get", &[a.clone(), json!(-4), json!("x")]), json!("x"));
    assert_eq!(ok("get", &[a, json!(1e300)]), json!(null));
}

#[test]
fn get_from_null_is_the_fallback_so_lookups_chain() {
    assert_eq!(ok("get", &[json!(null), json!("a"), json!(0)]), json!(0));
    assert_eq!(ok("get", &[json!(null), json!(1)]), json!(null));
}

#[test]
fn get_with_a_key_of_the_wrong_kind_is_an_error() {
    assert!(err("get", &[json!({"1": 1}), json!(1)]).contains("a string key for `key`"));
    assert!(err("get", &[json!([1]), json!(0.5)]).contains("an integer index"));
    assert!(err("get", &[json!([1]), json!("first")]).contains("an integer index"));
    assert!(err("get", &[json!("abc"), json!(0)]).contains("an object or an array"));
}

#[test]
fn str_keeps_strings_and_writes_other_values_as_json() {
    assert_eq!(ok("str", &[json!("é")]), json!("é"));
    assert_eq!(ok("str", &[json!(1.5)]), json!("1.5"));
    assert_eq!(ok("str", &[json!(null)]), json!("null"));
    assert_eq!(ok("str", &[json!([true])]), json!("[true]"));
}

#[test]
fn parse_json_reads_the_whole_text() {
    assert_eq!(
        ok("parse_json", &[json!(" {\"a\": [1]} \n")]),
        json!({"a": [1]})
    );
    assert_eq!(ok("parse_json", &[json!("\"é\"")]), json!("é"));
}

#[test]
fn parse_json_finds_a_fenced_block_inside_prose() {
    let reply = "Sure! Here it is:\n```json\n{\"ok\": true}\n```\nAnything else?";
    assert_eq!(ok("parse_json", &[json!(reply)]), json!({"ok": true}));
    let plain = "Result:\n```\n[1, 2]\n```";
    assert_eq!(ok("parse_json", &[json!(plain)]), json!([1, 2]));
    let upper = "```JSON\n1\n```";
    assert_eq!(ok("parse_json", &[json!(upper)]), json!(1));
    let inline = "it is ```{\"a\": 1}``` ok";
    assert_eq!(ok("parse_json", &[json!(inline)]), json!({"a": 1}));
}

#[test]
fn parse_json_skips_blocks_in_other_languages() {
    let reply = "```python\nprint(1)\n```\nthen\n```json\n{\"a\": \"ß\"}\n```";
    assert_eq!(ok("parse_json", &[json!(reply)]), json!({"a": "ß"}));
}

#[test]
fn parse_json_accepts_a_fence_cut_off_before_its_end() {
    assert_eq!(ok("parse_json", &[json!("x ```json\n[1]\n")]), json!([1]));
}

#[test]
fn parse_json_reports_serde_json_errors() {
    let message = err("parse_json", &[json!("not json")]);
    assert!(
        message.starts_with("`parse_json`: the text is not JSON: expected"),
        "{message}"
    );
    assert!(err("parse_json", &[json!("```json\n{oops}\n```")]).contains("line 1"));
    assert!(err("parse_json", &[json!("")]).contains("EOF"));
    assert!(err("parse_json", &[json!("```rust\nfn\n```")]).contains("not JSON"));
    assert!(err("parse_json", &[json!(1)]).contains("a string for `text`"));
}

#[test]
fn truncate_counts_characters_not_bytes() {
    assert_eq!(ok("truncate", &[json!("éßab"), json!(2)]), json!("éß"));
    assert_eq!(ok("truncate", &[json!("éß"), json!(10)]), json!("éß"));
    assert_eq!(ok("truncate", &[json!("éß"), json!(0)]), json!(""));
    assert_eq!(ok("truncate", &[json!("abc"), json!(2.0)]), json!("ab"));
    assert_eq!(ok("truncate", &[json!("abc"), json!(1e300)]), json!("abc"));
}

#[test]
fn truncate_wants_a_non_negative_whole_number() {
    for bad in [json!(-1), json!(1.5), json!("2"), json!(null)] {
        let message = err("truncate", &[json!("abc"), bad]);
        assert!(
            message.contains("a non-negative whole number for `max_chars`"),
            "{message}"
        );
    }
}

#[test]
fn starts_with_and_ends_with_compare_whole_characters() {
    assert_eq!(ok("starts_with", &[json!("éa"), json!("é")]), json!(true));
    assert_eq!(ok("starts_with", &[json!("éa"), json!("")]), json!(true));
    assert_eq!(ok("starts_with", &[json!("a"), json!("ab")]), json!(false));
    assert_eq!(ok("ends_with", &[json!("aß"), json!("ß")]), json!(true));
    assert_eq!(ok("ends_with", &[json!("aß"), json!("a")]), json!(false));
    assert!(err("starts_with", &[json!("a"), json!(1)]).contains("`prefix`"));
    assert!(err("ends_with", &[json!(1), json!("a")]).contains("`text`"));
}

#[test]
fn unknown_names_and_wrong_arities_are_errors() {
    assert_eq!(
        err("shout", &[]),
        "`shout`: there is no built-in function with this name"
    );
    assert_eq!(err("upper", &[]), "`upper`: takes 1 arguments, found 0");
    assert!(err("join", &[json!([]), json!(""), json!("")]).contains("takes 1 to 2"));
}

fn samples() -> Vec<Value> {
    vec![
        json!(null),
        json!(true),
        json!(false),
        json!(0),
        json!(-1),
        json!(-1.5),
        json!(1e300),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(""),
        json!("éß"),
        json!("1"),
        json!("```json\n{\"a\":1}\n```"),
        json!("```"),
        json!([]),
        json!([1, "é", null]),
        json!({}),
        json!({"a": [1], "é": {"b": null}}),
    ]
}

/// Every argument list of length `n` drawn from the samples.
fn grid(n: usize) -> Vec<Vec<Value>> {
    let mut lists = vec![vec![]];
    for _ in 0..n {
        lists = lists
            .into_iter()
            .flat_map(|list| {
                samples().into_iter().map(move |v| {
                    let mut next = list.clone();
                    next.push(v);
                    next
                })
            })
            .collect();
    }
    lists
}

#[test]
fn no_builtin_panics_on_any_sample_arguments() {
    for b in builtins::BUILTINS {
        for n in b.min_arity()..=b.max_arity() {
            for args in grid(n) {
                let result = std::panic::catch_unwind(|| call(b.name, &args));
                assert!(result.is_ok(), "`{}` panicked on {:?}", b.name, args);
            }
        }
    }
}

/// The type the checker gives a literal or a variable holding this value.
fn type_of(v: &Value) -> crate::types::Type {
    use crate::types::Type;
    match v {
        Value::Null => Type::Null,
        Value::Bool(_) => Type::Boolean,
        Value::Number(_) => Type::Number,
        Value::String(_) => Type::String,
        Value::Array(_) => Type::Array(Box::new(Type::Any)),
        Value::Object(_) => Type::Object,
    }
}

#[test]
fn each_parameter_works_with_exactly_the_kinds_of_value_its_signature_accepts() {
    use std::collections::BTreeSet;
    let kinds = [
        json!(null),
        json!(true),
        json!(1),
        json!("a"),
        json!([]),
        json!({}),
    ];
    for b in builtins::BUILTINS {
        // Per parameter: the kinds of value seen in a call that worked.
        let mut worked: Vec<BTreeSet<String>> = vec![BTreeSet::new(); b.params.len()];
        for n in b.min_arity()..=b.max_arity() {
            for args in grid(n) {
                if call(b.name, &args).is_err() {
                    continue;
                }
                for (i, a) in args.iter().enumerate() {
                    // `get` of null answers the fallback whatever the key: a key's kind
                    // matters only when there is something to look into.
                    if b.name == "get" && i == 1 && args[0].is_null() {
                        continue;
                    }
                    worked[i].insert(type_of(a).to_string());
                }
            }
        }
        for (i, p) in b.params.iter().enumerate() {
            let accepted: BTreeSet<String> = kinds
                .iter()
                .map(type_of)
                .filter(|t| p.ty.accepts(t))
                .map(|t| t.to_string())
                .collect();
            assert_eq!(
                worked[i], accepted,
                "`{}` parameter `{}` declared `{}`",
                b.name, p.name, p.ty
            );
        }
    }
}

#[test]
fn merge_adds_the_second_objects_fields_over_the_first() {
    let merged = ok("merge", &[json!({"a": 1, "b": 2}), json!({"b": 3, "c": 4})]);
    assert_eq!(merged, json!({"a": 1, "b": 3, "c": 4}));
    assert!(err("merge", &[json!({}), json!([1])]).contains("an object for `with`"));
}
