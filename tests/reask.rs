//! Re-asking with feedback (DESIGN §13): a reply that does not parse or does not match
//! its declared type is answered with a turn naming the error, up to the task's
//! `retries`, every attempt counted.

use serde_json::{json, Value};
use std::collections::VecDeque;
use std::sync::Arc;
use tv_stdlib::types::Type;
use tv_tests::bundle_of;
use tv_vm::bundle::{Output, ValueType, Verified};
use tv_vm::host::{Host, HostReply, HostRequest, LlmReply, LlmRequest, Role};
use tv_vm::interp::Vm;
use tv_vm::limits::Limits;

/// A host that answers LLM calls with these replies in turn and keeps every request.
struct Replies {
    replies: VecDeque<LlmReply>,
    requests: Vec<LlmRequest>,
}

impl Host for Replies {
    fn call(&mut self, request: &HostRequest) -> HostReply {
        let HostRequest::Llm(r) = request else {
            panic!("no script in these tests")
        };
        self.requests.push(r.clone());
        let reply = self
            .replies
            .pop_front()
            .expect("a reply left for the request");
        HostReply::Llm(Ok(reply))
    }
}

/// Replies of these texts, the n-th (from 0) spending 100 + n input and 10 + n output
/// tokens.
fn replies(texts: &[&str]) -> Replies {
    let replies = texts
        .iter()
        .zip(0u64..)
        .map(|(t, n)| LlmReply {
            content: t.to_string(),
            input_tokens: 100 + n,
            output_tokens: 10 + n,
            ..LlmReply::default()
        })
        .collect();
    Replies {
        replies,
        requests: Vec::new(),
    }
}

const REVIEW: &str = r#"<task name="review"><instructions>Review the change.</instructions>
    <output_format type="json" schema="{approved: boolean}"/></task>"#;

fn review(retries: Option<u32>) -> Verified {
    let mut b = bundle_of(REVIEW).into_bundle();
    if let Some(n) = retries {
        for t in &mut b.tasks {
            Arc::make_mut(t).retries = n;
        }
    }
    Verified::new(b).expect("verifies")
}

/// Runs the bundle's only entry with no arguments; the result and the turns spent.
fn run(b: &Verified, limits: Limits, host: &mut Replies) -> (Value, u64) {
    let entry = &b.entries[0];
    let mut vm = Vm::new(b, entry.function, Vec::new(), limits);
    let r = vm.run_with(host).into();
    (r, vm.usage().turns)
}

#[test]
fn a_reply_of_the_wrong_type_is_kept_and_answered_with_the_path_expected_and_got() {
    let b = review(None);
    let mut host = replies(&[r#"{"approved": "yes"}"#, r#"{"approved": true}"#]);
    let (r, turns) = run(&b, Limits::default(), &mut host);
    assert_eq!(r["status"], "COMPLETE", "{r}");
    assert_eq!(r["parsedContent"], json!({"approved": true}));
    assert_eq!(turns, 2);
    let second = &host.requests[1].messages;
    assert_eq!(second.len(), 3);
    assert_eq!(second[0], host.requests[0].messages[0]);
    assert_eq!(second[1].role, Role::Assistant);
    assert_eq!(second[1].content, r#"{"approved": "yes"}"#);
    assert_eq!(second[2].role, Role::User);
    assert_eq!(
        second[2].content,
        "Your reply does not match the required JSON type: at `$.approved` expected boolean, got string.\n\
         The required type: {approved: boolean}\n\
         Reply again with the corrected JSON only, and no other text."
    );
    assert_eq!(
        r["notes"]["attempts"],
        json!([{"attempt": 1, "error": "at `$.approved` expected boolean, got string",
                "path": "$.approved", "expected": "boolean", "got": "string"}])
    );
    let u = &r["notes"]["usage"];
    assert_eq!(
        (&u["calls"], &u["inputTokens"], &u["outputTokens"]),
        (&json!(2), &json!(201), &json!(21)),
        "{u}"
    );
}

#[test]
fn a_reply_that_is_not_json_is_answered_with_the_parse_error() {
    let b = review(None);
    let mut host = replies(&["I approve it.", r#"{"approved": false}"#]);
    let (r, _) = run(&b, Limits::default(), &mut host);
    assert_eq!(r["status"], "COMPLETE", "{r}");
    let feedback = &host.requests[1].messages[2].content;
    assert!(
        feedback.starts_with("Your reply is not valid JSON (")
            && feedback.contains("{approved: boolean}"),
        "{feedback}"
    );
    let attempt = &r["notes"]["attempts"][0];
    assert_eq!(
        (attempt["path"].as_str(), attempt["got"].as_str()),
        (Some("$"), Some("text"))
    );
    assert_eq!(attempt["expected"], "{approved: boolean}");
}

#[test]
fn retries_0_fails_the_first_wrong_reply_without_asking_again() {
    let b = review(Some(0));
    let mut host = replies(&[r#"{"approved": "yes"}"#]);
    let (r, turns) = run(&b, Limits::default(), &mut host);
    assert_eq!(turns, 1);
    assert_eq!(r["notes"]["error"]["reason"], "output_format_failure");
    assert!(r["notes"].get("attempts").is_none(), "{r}");
    let u = &r["notes"]["usage"];
    assert_eq!(
        (&u["calls"], &u["inputTokens"], &u["outputTokens"]),
        (&json!(1), &json!(100), &json!(10)),
        "{u}"
    );
}

#[test]
fn when_the_retries_are_spent_the_failure_keeps_the_last_reply_and_every_attempt() {
    let b = review(Some(2));
    let mut host = replies(&[r#"{"approved": "yes"}"#, "{}", r#"{"approved": "no"}"#]);
    let (r, turns) = run(&b, Limits::default(), &mut host);
    assert_eq!(turns, 3);
    assert_eq!(r["status"], "FAILED");
    assert_eq!(r["content"], r#"{"approved": "no"}"#);
    assert_eq!(r["notes"]["error"]["reason"], "output_format_failure");
    assert_eq!(
        r["notes"]["error"]["details"]["content"],
        r#"{"approved": "no"}"#
    );
    let attempts = r["notes"]["attempts"].as_array().expect("attempts");
    let got: Vec<_> = attempts
        .iter()
        .map(|a| (a["attempt"].clone(), a["got"].clone()))
        .collect();
    assert_eq!(
        got,
        [
            (json!(1), json!("string")),
            (json!(2), json!("missing")),
            (json!(3), json!("string"))
        ]
    );
    let u = &r["notes"]["usage"];
    assert_eq!(
        (&u["calls"], &u["inputTokens"], &u["outputTokens"]),
        (&json!(3), &json!(303), &json!(33)),
        "{u}"
    );
    // The conversation holds every attempt and its feedback.
    let last = &host.requests[2].messages;
    assert_eq!(last.len(), 5);
    assert!(last[4]
        .content
        .contains("`$.approved` is missing; it must be boolean."));
}

#[test]
fn the_turn_limit_stops_re_asking_with_its_own_resource_error() {
    let b = review(None);
    let mut host = replies(&[r#"{"approved": "yes"}"#]);
    let limits = Limits {
        turns: 1,
        ..Limits::default()
    };
    let (r, turns) = run(&b, limits, &mut host);
    assert_eq!(turns, 1);
    let error = &r["notes"]["error"];
    assert_eq!(
        (error["type"].as_str(), error["resource"].as_str()),
        (Some("RESOURCE_EXHAUSTION"), Some("turns")),
        "{r}"
    );
    assert_eq!(r["content"], r#"{"approved": "yes"}"#);
}

#[test]
fn a_reply_cut_at_the_output_limit_is_not_asked_again() {
    let b = review(None);
    let mut host = replies(&[r#"{"approved": "#]);
    host.replies[0].truncated = true;
    let (r, turns) = run(&b, Limits::default(), &mut host);
    assert_eq!(turns, 1);
    assert_eq!(r["notes"]["error"]["resource"], "output");
}

#[test]
fn json_without_a_declared_type_keeps_its_parse_error_as_a_note() {
    let b = bundle_of(
        r#"<task name="t"><instructions>x</instructions><output_format type="json"/></task>"#,
    );
    let mut host = replies(&["not json"]);
    let (r, turns) = run(&b, Limits::default(), &mut host);
    assert_eq!((turns, r["status"].as_str()), (1, Some("COMPLETE")));
    assert!(r["notes"]["parseError"].is_string(), "{r}");
}

#[test]
fn an_evaluator_reply_that_is_not_an_evaluation_result_is_asked_again_then_accepted() {
    let mut b = bundle_of(
        r#"<task name="l" type="director_evaluator_loop"><max_iterations>3</max_iterations>
             <director><instructions>draft</instructions></director>
             <evaluator><instructions>judge {{director_result}}</instructions></evaluator>
           </task>"#,
    )
    .into_bundle();
    // What the compiler gives an atomic evaluator without an output format. The
    // loop's tasks are numbered from 1 in the order written: the director, the evaluator.
    let evaluation = Output::Json(Some(ValueType::from(Type::evaluation_result())));
    let evaluator = b
        .tasks
        .iter_mut()
        .find(|t| t.name == "l#2")
        .expect("the evaluator");
    Arc::make_mut(evaluator).output = evaluation.clone();
    let b = Verified::new(b).expect("verifies");
    let mut host = replies(&[
        "my draft",
        r#"{"success": "yes"}"#,
        r#"{"success": true, "feedback": "fine"}"#,
    ]);
    let (r, turns) = run(&b, Limits::default(), &mut host);
    assert_eq!(turns, 3);
    assert_eq!(r["status"], "COMPLETE", "{r}");
    assert_eq!(r["content"], "my draft");
    assert_eq!(r["notes"]["evaluation"]["feedback"], "fine");
    assert_eq!(host.requests[1].task.output, evaluation);
    let feedback = &host.requests[2].messages[2].content;
    assert!(
        feedback.contains("at `$.success` expected boolean, got string")
            && feedback.contains("{success: boolean, feedback?: string}"),
        "{feedback}"
    );
}

/// A task that answers in JSON of `ty` (untyped JSON when `None`), asked again once.
fn typed(ty: Option<&str>) -> Verified {
    let schema = ty.map_or(String::new(), |t| {
        format!(
            r#" schema="{}""#,
            t.replace('&', "&amp;").replace('"', "&quot;")
        )
    });
    bundle_of(&format!(
        r#"<task name="t"><instructions>Answer.</instructions><output_format type="json"{schema}/></task>"#
    ))
}

#[test]
fn each_reply_of_the_fixture_reads_as_it_says_or_is_asked_again_as_prose() {
    let text = std::fs::read_to_string("tests/fixtures/replies.json").expect("the fixture");
    let fixture: Value = serde_json::from_str(&text).expect("the fixture is JSON");
    let cases = fixture["cases"].as_array().expect("cases");
    assert!(cases.len() >= 25, "only {} cases", cases.len());
    for case in cases {
        let (what, reply) = (&case["case"], case["reply"].as_str().expect("a reply"));
        let ty = case["type"].as_str();
        // The same text twice: a re-asked prose reply gets it back and fails.
        let mut host = replies(&[reply, reply]);
        let (r, turns) = run(&typed(ty), Limits::default(), &mut host);
        match (case.get("parsed"), ty) {
            (Some(want), _) => {
                assert_eq!(r["status"], "COMPLETE", "{what}: {r}");
                assert_eq!(&r["parsedContent"], want, "{what}");
                assert_eq!(turns, 1, "{what}");
            }
            (None, None) => {
                assert_eq!(r["status"], "COMPLETE", "{what}: {r}");
                assert!(r.get("parsedContent").is_none(), "{what}: {r}");
                assert!(r["notes"]["parseError"].is_string(), "{what}: {r}");
            }
            (None, Some(_)) => {
                assert_eq!(turns, 2, "{what}: asked again");
                let feedback = &host.requests[1].messages[2].content;
                assert!(
                    feedback.starts_with("Your reply is not valid JSON ("),
                    "{what}: {feedback}"
                );
                assert_eq!(r["status"], "FAILED", "{what}: {r}");
                assert_eq!(
                    r["notes"]["error"]["reason"], "output_format_failure",
                    "{what}"
                );
                assert_eq!(r["content"], reply, "{what}: the last reply is kept");
            }
        }
    }
}
