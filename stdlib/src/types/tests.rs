use super::check::{json_path, PathStep};
use super::*;
use serde_json::Value;

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
    assert!(Type::parse(&deep(MAX_NESTING)).is_some());
    assert_eq!(Type::parse(&deep(MAX_NESTING + 1)), None);
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

#[test]
fn a_mismatch_names_the_path_the_expected_type_and_what_was_found() {
    use serde_json::json;
    let cases = [
        ("string[]", json!(["a", "b"]), None),
        ("string[]", json!([]), None),
        (
            "string[]",
            json!(["a", 2]),
            Some(("$[1]", "string", "number")),
        ),
        (
            "string[]",
            json!([1, true]),
            Some(("$[0]", "string", "number")),
        ),
        (
            "string[]",
            json!({"a": 1}),
            Some(("$", "string[]", "object")),
        ),
        ("string[]", json!("a"), Some(("$", "string[]", "string"))),
        (
            "string[][]",
            json!([["a"], ["b", null]]),
            Some(("$[1][1]", "string", "null")),
        ),
        (
            "string[][]",
            json!([["a"], "b"]),
            Some(("$[1]", "string[]", "string")),
        ),
        ("number[]", json!([1, 2.5, -3]), None),
        ("boolean", json!(true), None),
        ("boolean", json!("true"), Some(("$", "boolean", "string"))),
        ("number", json!(null), Some(("$", "number", "null"))),
        ("null", json!(null), None),
        ("object", json!({"deep": [1]}), None),
        ("object", json!([]), Some(("$", "object", "array"))),
        ("array", json!([1, "a", null]), None),
        ("array", json!({}), Some(("$", "array", "object"))),
        (
            "object[]",
            json!([{}, [], {}]),
            Some(("$[1]", "object", "array")),
        ),
        ("any", json!({"x": [1, "a"]}), None),
        ("any[]", json!([1, "a"]), None),
    ];
    for (ty, v, want) in &cases {
        let t = Type::parse(ty).unwrap();
        let got = t.mismatch(v);
        let got = got
            .as_ref()
            .map(|m| (m.path.as_str(), m.expected.to_string(), m.found.as_str()));
        let want = want.map(|(p, e, f)| (p, e.to_string(), f));
        assert_eq!(got, want, "{ty} against {v}");
        assert_eq!(t.admits(v), want.is_none(), "{ty} against {v}");
    }
    let m = Type::parse("string[]").unwrap().mismatch(&json!(["a", 2]));
    assert_eq!(
        m.unwrap().to_string(),
        "at `$[1]` expected string, got number"
    );
}

#[test]
fn json_paths_write_indexes_identifiers_and_other_names_as_json_does() {
    use PathStep::{Field, Index};
    assert_eq!(json_path(&[]), "$");
    assert_eq!(json_path(&[Field("findings")]), "$.findings");
    assert_eq!(json_path(&[Field("findings"), Index(2)]), "$.findings[2]");
    assert_eq!(json_path(&[Field("user"), Field("name")]), "$.user.name");
    assert_eq!(json_path(&[Index(0), Field("_id2")]), "$[0]._id2");
    assert_eq!(json_path(&[Field("a b")]), r#"$["a b"]"#);
    assert_eq!(json_path(&[Field("2x")]), r#"$["2x"]"#);
    assert_eq!(json_path(&[Field("")]), r#"$[""]"#);
    assert_eq!(json_path(&[Field("q\"")]), r#"$["q\""]"#);
}

#[test]
fn a_long_array_is_checked_to_its_last_element() {
    let v = Value::Array((0..100_000).map(|i| Value::from(i.to_string())).collect());
    let strings = Type::parse("string[]").unwrap();
    assert!(strings.admits(&v));
    let mut v = v;
    v[99_999] = Value::Bool(false);
    assert_eq!(strings.mismatch(&v).unwrap().path, "$[99999]");
}

fn review() -> Type {
    Type::parse(r#"{approved: boolean, findings: string[], severity?: "low"|"high"}"#)
        .expect("parses")
        .named("Review")
}

#[test]
fn records_literals_and_optional_fields_parse_and_print_as_written() {
    for written in [
        "{approved: boolean, findings: string[]}",
        r#"{severity?: "low"|"high", "odd name": number}"#,
        r#"("a"|"b")[]"#,
        r#""only""#,
        "{user: {name: string, tags?: string[][]}}[]",
        "{}",
    ] {
        let t = Type::parse(written).unwrap_or_else(|| panic!("{written}"));
        assert_eq!(t.to_string(), written);
        assert_eq!(Type::parse(&t.to_string()), Some(t));
    }
    assert_eq!(
        Type::parse("{ a : string , b ? : number , }").map(|t| t.to_string()),
        Some("{a: string, b?: number}".to_string())
    );
    assert_eq!(
        Type::parse(r#"'x' | "y" | 'x'"#).map(|t| t.to_string()),
        Some(r#""x"|"y""#.to_string())
    );
}

#[test]
fn a_malformed_type_is_an_error_at_its_place() {
    let cases = [
        ("{a: strng}", 4..9, "unknown type `strng`"),
        (
            "{a string}",
            3..4,
            "expected `:` and the field's type, found `s`",
        ),
        ("{a: string", 10..10, "expected `,` or `}`, found the end"),
        (
            "{a: string, a: number}",
            12..13,
            "field `a` is declared twice",
        ),
        (
            r#""a"|number"#,
            4..10,
            "a union joins string literals only, and `number` is not one",
        ),
        (
            r#""a"|"b"[]"#,
            4..9,
            "a union joins string literals only, and `(\"b\")[]` is not one",
        ),
        ("string]", 6..7, "unexpected text after the type"),
        (r#""open"#, 0..5, "this string is never closed"),
    ];
    for (written, span, message) in cases {
        let e = parse_with(written, &|_| None).expect_err(written);
        assert_eq!(
            (e.span.clone(), e.message.as_str()),
            (span, message),
            "{written}"
        );
    }
    let e = parse_with("{a: Reviw}", &|_| None).unwrap_err();
    assert_eq!(e.unknown.as_deref(), Some("Reviw"));
}

#[test]
fn nesting_past_the_limit_is_refused_without_recursing() {
    let deep_records = |n: usize| format!("{}string{}", "{a: ".repeat(n), "}".repeat(n));
    assert!(Type::parse(&deep_records(MAX_NESTING)).is_some());
    assert!(Type::parse(&deep_records(MAX_NESTING + 1)).is_none());
    assert!(Type::parse(&deep_records(1_000_000)).is_none());
    let parens = format!("{}string{}", "(".repeat(1_000_000), ")".repeat(1_000_000));
    assert!(Type::parse(&parens).is_none());
    let mixed = format!(
        "{}string[]{}",
        "{a: ".repeat(MAX_NESTING - 1),
        "}".repeat(MAX_NESTING - 1)
    );
    assert!(Type::parse(&mixed).is_some());
    let over = format!(
        "{}string[][]{}",
        "{a: ".repeat(MAX_NESTING - 1),
        "}".repeat(MAX_NESTING - 1)
    );
    assert!(Type::parse(&over).is_none());
}

#[test]
fn declared_names_resolve_and_keep_their_name() {
    let declared = |name: &str| (name == "Review").then(review);
    let t = parse_with("{review: Review, all: Review[]}", &declared).expect("parses");
    assert_eq!(t.to_string(), "{review: Review, all: Review[]}");
    let Type::Record(r) = &t else {
        panic!("a record")
    };
    assert_eq!(r.field("review").map(|f| &f.ty), Some(&review()));
    assert_eq!(Type::evaluation_result().to_string(), "EvaluationResult");
    let Type::Record(e) = Type::evaluation_result() else {
        panic!("a record")
    };
    assert_eq!(
        Expanded(&e).to_string(),
        "{success: boolean, feedback?: string}"
    );
}

#[test]
fn records_fit_by_their_fields_and_literals_by_their_strings() {
    let t = |s: &str| Type::parse(s).expect(s);
    let wide = t("{a: string, b: number, c?: boolean}");
    assert!(wide.fits(&t("{a: string}")));
    assert!(wide.fits(&t("{a: string, d?: number}")));
    assert!(!wide.fits(&t("{a: string, d: number}")));
    assert!(
        !wide.fits(&t("{c: boolean}")),
        "an optional field fits no required one"
    );
    assert!(!wide.fits(&t("{a: number}")));
    assert!(wide.fits(&Type::Object) && Type::Object.fits(&wide));
    assert!(t(r#""a""#).fits(&t(r#""a"|"b""#)));
    assert!(!t(r#""a"|"c""#).fits(&t(r#""a"|"b""#)));
    assert!(t(r#""a"|"b""#).fits(&Type::String));
    assert_eq!(t(r#""a""#).join(&t(r#""b""#)), t(r#""a"|"b""#));
    assert_eq!(wide.join(&t("{a: string}")), Type::Object);
    assert_eq!(t(r#""a""#).join(&Type::String), Type::String);
}

#[test]
fn a_record_mismatch_names_the_field_path() {
    use serde_json::json;
    let r = review();
    let cases = [
        (json!({"approved": true, "findings": []}), None),
        (
            json!({"approved": true, "findings": [], "severity": null}),
            None,
        ),
        (json!({"approved": true, "findings": [], "extra": 1}), None),
        (
            json!({"approved": true, "findings": [], "severity": "high"}),
            None,
        ),
        (
            json!({"findings": []}),
            Some(("$.approved", "boolean", "missing")),
        ),
        (
            json!({"approved": "yes", "findings": []}),
            Some(("$.approved", "boolean", "string")),
        ),
        (
            json!({"approved": true, "findings": ["a", 3]}),
            Some(("$.findings[1]", "string", "number")),
        ),
        (
            json!({"approved": true, "findings": [], "severity": "urgent"}),
            Some(("$.severity", r#""low"|"high""#, r#""urgent""#)),
        ),
        (json!([]), Some(("$", "Review", "array"))),
    ];
    for (v, want) in cases {
        let got = r.mismatch(&v);
        let got = got
            .as_ref()
            .map(|m| (m.path.as_str(), m.expected.to_string(), m.found.as_str()));
        assert_eq!(got, want.map(|(p, e, f)| (p, e.to_string(), f)), "{v}");
    }
}

#[test]
fn the_json_schema_of_a_record_is_strict() {
    use serde_json::json;
    let schema = strict_schema(&review()).expect("strict");
    assert_eq!(
        schema,
        json!({
            "type": "object",
            "properties": {
                "approved": {"type": "boolean"},
                "findings": {"type": "array", "items": {"type": "string"}},
                "severity": {"anyOf": [{"type": "string", "enum": ["low", "high"]}, {"type": "null"}]},
            },
            "required": ["approved", "findings", "severity"],
            "additionalProperties": false,
        })
    );
    assert_eq!(strict_schema(&Type::parse("{a: object}").unwrap()), None);
    assert_eq!(strict_schema(&Type::parse("{a: array}").unwrap()), None);
    assert_eq!(strict_schema(&Type::parse("string[]").unwrap()), None);
}

#[test]
fn a_fully_typed_value_that_is_not_a_record_is_wrapped_for_strict_mode() {
    use serde_json::json;
    let list = Type::parse("string[]").unwrap();
    assert_eq!(
        strict_wrapped(&list),
        Some(json!({"type": "object",
            "properties": {"value": {"type": "array", "items": {"type": "string"}}},
            "required": ["value"], "additionalProperties": false}))
    );
    assert_eq!(strict_wrapped(&review()), None, "a record goes as it is");
    assert_eq!(strict_wrapped(&Type::parse("array").unwrap()), None);
    assert_eq!(strict_wrapped(&Type::parse("object").unwrap()), None);
}

#[test]
fn the_smallest_value_has_the_required_fields_only_and_is_of_its_type() {
    use serde_json::json;
    let t =
        Type::parse(r#"{a: string, b?: number, c: {d: boolean[]}, e: "x"|"y", f: any, g: object}"#)
            .unwrap();
    let v = smallest_value(&t);
    assert_eq!(
        v,
        json!({"a": "", "c": {"d": []}, "e": "x", "f": null, "g": {}})
    );
    assert!(t.admits(&v));
    assert!(review().admits(&smallest_value(&review())));
}

#[test]
fn a_type_that_shares_records_is_refused_past_its_written_out_size() {
    use std::cell::RefCell;
    let declared: RefCell<Vec<Type>> = RefCell::new(vec![Type::String]);
    let mut last = Ok(Type::String);
    for level in 1..30 {
        let prev = format!("T{}", level - 1);
        let lookup = |name: &str| {
            let n: usize = name.strip_prefix('T')?.parse().ok()?;
            declared.borrow().get(n).cloned()
        };
        last = parse_with(&format!("{{a: {prev}, b: {prev}}}"), &lookup);
        match &last {
            Ok(t) => declared.borrow_mut().push(t.clone()),
            Err(_) => break,
        }
    }
    let e = last.expect_err("2^14 fields written out is past the bound");
    assert!(e.message.contains("more than 10000 types"), "{}", e.message);
    assert!(declared.borrow().iter().all(|t| t.size() <= MAX_SIZE));
}
