//! The descent parser and the chumsky grammar agree: on every token stream the grammar
//! reads without an error the descent gives the same tree with the same spans, and it
//! gives up on every stream the grammar reports an error in.

use super::depth::tokens_are_sound;
use super::{descent, grammar, Tok};
use crate::diag::Diagnostics;
use crate::source::{FileId, Span};
use proptest::prelude::*;

fn tokens(src: &str) -> Vec<Tok<'_>> {
    crate::lexer::lex(src)
        .into_iter()
        .map(|(t, r)| (t, Span::new(FileId(0), r)))
        .collect()
}

/// Checks one source; returns whether the grammar accepted it.
fn agree(src: &str) -> bool {
    let toks = tokens(src);
    if toks.is_empty() || !tokens_are_sound(&toks, &mut Diagnostics::new()) {
        return false;
    }
    let fast = descent::parse(&toks);
    let mut diags = Diagnostics::new();
    let slow = grammar(toks, Span::new(FileId(0), 0..src.len()), &mut diags);
    match fast {
        Some(e) => {
            assert!(
                !diags.has_errors(),
                "descent accepted what the grammar refuses: {src}"
            );
            assert_eq!(format!("{e:?}"), format!("{slow:?}"), "{src}");
            true
        }
        None => {
            assert!(
                diags.has_errors(),
                "descent refused what the grammar accepts: {src}"
            );
            false
        }
    }
}

fn expression() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        "[a-z_][a-z0-9_]{0,6}",
        Just("true".to_string()),
        Just("null".to_string()),
        "-?[0-9]{1,3}(\\.[0-9]{1,2})?",
        Just("'it''s'".to_string()),
        Just(r#""a \"q\" \n""#.to_string()),
        Just(r#""bad \q""#.to_string()),
    ];
    leaf.prop_recursive(5, 40, 4, |inner| {
        let op = prop_oneof![
            Just(" == "),
            Just(" != "),
            Just("<"),
            Just(" >= "),
            Just(" && "),
            Just(" or "),
            Just(" and "),
        ];
        prop_oneof![
            (inner.clone(), op, inner.clone()).prop_map(|(a, o, b)| format!("{a}{o}{b}")),
            inner.clone().prop_map(|a| format!("!{a}")),
            inner.clone().prop_map(|a| format!("not ({a})")),
            inner.clone().prop_map(|a| format!("({a})")),
            inner.clone().prop_map(|a| format!("{{{{ {a} }}}}")),
            (inner.clone(), "[a-z]{1,3}|[0-9]|1\\.2").prop_map(|(a, f)| format!("{a}.{f}")),
            ("[a-z]{1,5}", prop::collection::vec(inner.clone(), 0..3))
                .prop_map(|(f, args)| format!("{f}({})", args.join(", "))),
            ("[a-z]{1,5}", inner.clone(), inner).prop_map(|(f, a, b)| format!("{f}({a}, k = {b})")),
        ]
    })
}

fn token_soup() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("a"),
        Just("f"),
        Just("("),
        Just(")"),
        Just(","),
        Just("="),
        Just("=="),
        Just("!"),
        Just("&&"),
        Just("or"),
        Just("."),
        Just("0"),
        Just("1.2"),
        Just("'s'"),
        Just("{{"),
        Just("}}"),
        Just("true"),
        Just("<"),
    ];
    prop::collection::vec(piece, 1..10).prop_map(|p| p.join(" "))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn generated_expressions_parse_the_same_both_ways(src in expression()) {
        agree(&src);
    }

    #[test]
    fn token_soups_parse_the_same_both_ways(src in token_soup()) {
        agree(&src);
    }
}

#[test]
fn hand_picked_holes_parse_the_same_both_ways() {
    let accepted = [
        "x",
        "a.b.0.c",
        "x.1.2",
        "f()",
        "f(a, k = g(b).c, m = (1))",
        "!!a == b && not c or d",
        "{{ a }}.b",
        "(a).b == 'x'",
        "upper(name) != \"N\\t\"",
    ];
    for src in accepted {
        assert!(agree(src), "{src}");
    }
    for src in [
        "f(a,)", "a ==", "a.", "x.1e5", "(a", "f(k = )", "a b", "'\\q'",
    ] {
        assert!(!agree(src), "{src}");
    }
}
