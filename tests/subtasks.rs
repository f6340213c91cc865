//! Subtask spawning: template selection, the parent session going on, depth, cycles.

use serde_json::{json, Value};
use tv_tests::{bundle_of, prompts, run_with, scripted};
use tv_vm::host::{HostRequest, LlmReply, Role};
use tv_vm::limits::Limits;

const SUBTASK_LIBRARY: &str = r#"<library>
  <template name="summarize_text" params="text"><task>
    <description>Summarize the text briefly</description>
    <instructions>Summarize: {{text}}</instructions></task></template>
  <template name="translate_text" params="text,language"><task subtype="translation">
    <description>Translate the text into another language</description>
    <instructions>Translate into {{language}}: {{text}}</instructions></task></template>
  <task name="plan"><instructions>plan the work</instructions></task>
</library>"#;

fn continuation(request: Value) -> String {
    json!({"status": "CONTINUATION", "subtask_request": request}).to_string()
}

#[test]
fn a_subtask_request_runs_the_best_matching_template_and_the_parent_continues() {
    let b = bundle_of(SUBTASK_LIBRARY);
    let mut host = scripted(|r| match r.messages.len() {
        1 if r.messages[0].content == "plan the work" => continuation(
            json!({"type": "atomic", "description": "summarize this text", "inputs": {"text": "a long report"}}),
        ),
        1 => "short".into(),
        _ => format!("done with [{}]", r.messages[2].content),
    });
    let r = run_with(&b, "plan", json!({}), Limits::default(), &mut host);
    let given = r["content"].as_str().unwrap_or_default();
    let result = given
        .strip_prefix("done with [Subtask result:\n")
        .and_then(|g| g.strip_suffix(']'))
        .unwrap_or_else(|| panic!("{given}"));
    let result: Value = serde_json::from_str(result).expect("the subtask's result as JSON");
    assert_eq!(
        (&result["status"], &result["content"]),
        (&json!("COMPLETE"), &json!("short"))
    );
    assert_eq!(prompts(&host.requests)[1], "Summarize: a long report");
    let HostRequest::Llm(last) = &host.requests[2] else {
        panic!()
    };
    let roles: Vec<Role> = last.messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Assistant, Role::User]);
}

#[test]
fn hints_and_subtypes_choose_the_template_before_the_description_does() {
    let b = bundle_of(SUBTASK_LIBRARY);
    for request in [
        json!({"type": "atomic", "description": "summarize", "template_hints": ["translate_text"], "inputs": {"text": "hi", "language": "fr"}}),
        json!({"type": "atomic", "subtype": "translation", "description": "summarize", "inputs": {"text": "hi", "language": "fr"}}),
    ] {
        let req = continuation(request);
        let mut host = scripted(|r| {
            if r.messages[0].content == "plan the work" && r.messages.len() == 1 {
                req.clone()
            } else {
                "ok".into()
            }
        });
        run_with(&b, "plan", json!({}), Limits::default(), &mut host);
        assert_eq!(prompts(&host.requests)[1], "Translate into fr: hi");
    }
}

#[test]
fn a_request_nothing_matches_fails_the_parent_with_a_subtask_failure() {
    let b = bundle_of(SUBTASK_LIBRARY);
    let req = continuation(json!({"type": "atomic", "description": "bake bread", "inputs": {}}));
    let mut host = scripted(|_| req.clone());
    let r = run_with(&b, "plan", json!({}), Limits::default(), &mut host);
    let e = &r["notes"]["error"];
    assert_eq!(
        (e["reason"].as_str(), e["message"].as_str()),
        (
            Some("subtask_failure"),
            Some("Subtask execution failed: no registered atomic template matches \"bake bread\"")
        )
    );
    assert_eq!(e["details"]["subtaskRequest"]["description"], "bake bread");
    assert_eq!(e["details"]["nestingDepth"], 0);
    assert_eq!(e["details"]["partialOutput"], req);
}

#[test]
fn subtasks_nest_only_to_the_subtask_depth_limit() {
    let b = bundle_of(SUBTASK_LIBRARY);
    let mut n = 0;
    let mut host = scripted(|_| {
        n += 1;
        continuation(
            json!({"type": "atomic", "description": "summarize the text", "inputs": {"text": n}}),
        )
    });
    let r = run_with(
        &b,
        "plan",
        json!({}),
        Limits {
            subtask_depth: 2,
            ..Limits::default()
        },
        &mut host,
    );
    // plan → summarize(1) → summarize(2) → a third level is refused, and each level fails in turn.
    assert_eq!(host.requests.len(), 3);
    let mut e = &r["notes"]["error"];
    let mut depth = 0;
    while e["details"]["subtaskError"]["type"] == "TASK_FAILURE" {
        e = &e["details"]["subtaskError"];
        depth += 1;
    }
    assert_eq!(depth, 2, "two levels ran, each wraps the failure below it");
    assert_eq!(e["details"]["subtaskError"]["type"], "RESOURCE_EXHAUSTION");
    assert_eq!(e["details"]["subtaskError"]["resource"], "depth");
}

#[test]
fn the_same_template_with_the_same_inputs_is_a_cycle() {
    let b = bundle_of(SUBTASK_LIBRARY);
    let req = continuation(
        json!({"type": "atomic", "description": "summarize the text", "inputs": {"text": "same"}}),
    );
    // Every first turn asks for the same subtask; `plan` then answers with what it got.
    let mut host = scripted(|r| match r.messages.len() {
        1 => req.clone(),
        _ => r.messages.last().map(|m| m.content.clone()).unwrap(),
    });
    let r = run_with(&b, "plan", json!({}), Limits::default(), &mut host);
    // The subtask's own request was the cycle: it failed with a subtask_failure, which
    // `plan` received as its subtask's result.
    let given = r["content"].as_str().unwrap_or_default();
    let failed: Value = serde_json::from_str(given.trim_start_matches("Subtask result:\n"))
        .unwrap_or_else(|e| panic!("{e}: {r:#}"));
    assert_eq!(failed["status"], "FAILED");
    assert_eq!(failed["notes"]["error"]["reason"], "subtask_failure");
    let inner = &failed["notes"]["error"]["details"]["subtaskError"];
    assert!(
        inner["message"]
            .as_str()
            .unwrap_or("")
            .starts_with("cycle:"),
        "{r:#}"
    );
    // The reason is in the message a reader sees first, not only in the details.
    assert_eq!(
        failed["notes"]["error"]["message"],
        "Subtask execution failed: cycle: `summarize_text` is already running as a subtask \
         with the same inputs"
    );
}

#[test]
fn a_subtask_that_would_run_the_entry_again_with_its_own_arguments_is_a_cycle() {
    let b = bundle_of(SUBTASK_LIBRARY);
    let again = continuation(json!({"type": "atomic", "description": "summarize",
        "template_hints": ["summarize_text"], "inputs": {"text": "the report"}}));
    let mut host = scripted(|_| again.clone());
    let args = json!({"text": "the report"});
    let r = run_with(&b, "summarize_text", args, Limits::default(), &mut host);
    let error = &r["notes"]["error"]["details"]["subtaskError"];
    assert!(
        error["message"]
            .as_str()
            .unwrap_or("")
            .starts_with("cycle:"),
        "{r:#}"
    );
    assert_eq!(host.requests.len(), 1, "the entry is not run a second time");
}

#[test]
fn a_tool_call_without_text_still_leaves_an_assistant_turn_in_the_conversation() {
    struct ToolCaller(Vec<HostRequest>);
    impl tv_vm::host::Host for ToolCaller {
        fn call(&mut self, request: &HostRequest) -> tv_vm::host::HostReply {
            self.0.push(request.clone());
            let HostRequest::Llm(r) = request else {
                panic!()
            };
            let spawn = r.messages[0].content == "plan the work" && r.messages.len() == 1;
            tv_vm::host::HostReply::Llm(Ok(tv_vm::host::LlmReply {
                content: if spawn { String::new() } else { "ok".into() },
                subtask_request: spawn.then(|| json!({"type": "atomic", "description": "summarize the text", "inputs": {"text": "t"}})),
                ..Default::default()
            }))
        }
    }
    let b = bundle_of(SUBTASK_LIBRARY);
    let mut host = ToolCaller(Vec::new());
    let r = run_with(&b, "plan", json!({}), Limits::default(), &mut host);
    assert_eq!(r["content"], "ok");
    let HostRequest::Llm(last) = &host.0[2] else {
        panic!()
    };
    assert!(
        last.messages[1].content.contains("\"subtask_request\""),
        "{:?}",
        last.messages
    );
}

/// A library whose entry points include a script: a model's hint must not reach it.
const WITH_SCRIPT: &str = r#"<library>
  <template name="wipe" params="target"><task type="script">
    <script_execution><command>rm -rf {{target}}</command></script_execution></task></template>
  <template name="count_words" params="text:string,limit:number"><task>
    <description>Count the words of a text</description>
    <instructions>Count the words, at most {{limit}}: {{text}}</instructions></task></template>
  <task name="plan"><instructions>plan the work</instructions></task>
</library>"#;

#[test]
fn a_hint_cannot_select_a_script_or_any_template_matching_would_not() {
    let b = bundle_of(WITH_SCRIPT);
    let ask = continuation(json!({"type": "atomic", "description": "erase disk",
        "template_hints": ["wipe"], "inputs": {"target": "/"}}));
    let mut host = scripted(move |r| match r.messages.len() {
        1 => ask.clone(),
        _ => "done".into(),
    });
    let r = run_with(&b, "plan", json!({}), Limits::default(), &mut host);
    let scripts = host
        .requests
        .iter()
        .filter(|r| matches!(r, HostRequest::Script(_)))
        .count();
    assert_eq!(scripts, 0, "{r:#}");
    let error = &r["notes"]["error"]["details"]["subtaskError"];
    assert_eq!(error["reason"], "context_matching_failure", "{r:#}");
}

#[test]
fn a_subtasks_inputs_are_checked_against_the_templates_parameter_types() {
    let b = bundle_of(WITH_SCRIPT);
    let ask = continuation(
        json!({"type": "atomic", "description": "count the words of a text",
        "template_hints": ["count_words"], "inputs": {"text": "a b c", "limit": "ten"}}),
    );
    let mut host = scripted(move |r| match r.messages.len() {
        1 => ask.clone(),
        _ => "done".into(),
    });
    let r = run_with(&b, "plan", json!({}), Limits::default(), &mut host);
    let error = &r["notes"]["error"]["details"]["subtaskError"];
    assert_eq!(error["reason"], "input_validation_failure", "{r:#}");
    assert_eq!(
        error["message"],
        "input `limit` of `count_words` should be `number` but is string"
    );
    assert_eq!(host.requests.len(), 1, "the subtask never ran");
}

/// Parameters are strict (DESIGN §19): a request that leaves one out, or names an
/// input the template does not take, is refused by name before the subtask runs;
/// nothing is passed on as `null`.
#[test]
fn a_request_that_leaves_out_or_adds_an_input_is_refused_by_name() {
    let b = bundle_of(SUBTASK_LIBRARY);
    let cases = [
        (
            json!({"text": "hi"}),
            "input `language` of `translate_text` is missing: a subtask request gives every \
             parameter (its parameters: text, language)",
        ),
        (
            json!({"text": "hi", "language": "fr", "tone": "formal"}),
            "`translate_text` has no parameter `tone` (its parameters: text, language)",
        ),
        (json!({"text": "hi", "language": null}), ""),
    ];
    for (inputs, expected) in cases {
        let ask = continuation(json!({"type": "atomic", "description": "translate",
            "template_hints": ["translate_text"], "inputs": inputs}));
        let mut host = scripted(move |r| match r.messages.len() {
            1 if r.messages[0].content == "plan the work" => ask.clone(),
            _ => "done".into(),
        });
        let r = run_with(&b, "plan", json!({}), Limits::default(), &mut host);
        if expected.is_empty() {
            // A `null` the model wrote is a value like any other for an untyped parameter.
            assert_eq!(r["status"], "COMPLETE", "{r:#}");
            continue;
        }
        let e = &r["notes"]["error"];
        assert_eq!(e["reason"], "subtask_failure", "{r:#}");
        assert_eq!(
            e["details"]["subtaskError"]["reason"],
            "input_validation_failure"
        );
        assert_eq!(e["details"]["subtaskError"]["message"], expected);
        assert_eq!(
            e["message"],
            format!("Subtask execution failed: {expected}"),
            "the reason is in the message, not only in the details"
        );
        assert_eq!(host.requests.len(), 1, "the subtask never ran");
    }
}

#[test]
fn a_continuation_without_a_subtask_request_fails_instead_of_completing_with_its_text() {
    let b = bundle_of(SUBTASK_LIBRARY);
    for reply in [
        r#"{"status": "CONTINUATION"}"#,
        "```json\n{\"status\": \"CONTINUATION\", \"notes\": {}}\n```",
    ] {
        let mut host = scripted(move |_| reply.into());
        let r = run_with(&b, "plan", json!({}), Limits::default(), &mut host);
        assert_eq!(r["status"], "FAILED", "{r:#}");
        let e = &r["notes"]["error"];
        assert_eq!(e["reason"], "subtask_failure");
        let inner = &e["details"]["subtaskError"];
        assert_eq!(inner["reason"], "input_validation_failure");
        let message = e["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("CONTINUATION but it holds no `subtask_request`"),
            "{message}"
        );
        assert_eq!(e["details"]["partialOutput"], reply);
        assert_eq!(r["content"], "", "the raw reply is not the answer");
    }
}

#[test]
fn every_result_of_a_template_names_it_and_the_parent_sees_which_template_a_request_ran() {
    let b = bundle_of(SUBTASK_LIBRARY);
    let ask = continuation(
        json!({"type": "atomic", "description": "summarize this text", "inputs": {"text": "t"}}),
    );
    let mut host = scripted(move |r| match r.messages.len() {
        1 if r.messages[0].content == "plan the work" => ask.clone(),
        1 => "short".into(),
        _ => r.messages[2].content.clone(),
    });
    let r = run_with(&b, "plan", json!({}), Limits::default(), &mut host);
    assert_eq!(r["notes"]["template"], "plan", "{r:#}");
    let given = subtask_result(r["content"].as_str().unwrap_or_default());
    assert_eq!(given["notes"]["template"], "summarize_text", "{given:#}");
}

/// A runner for tests whose replies need more than text (a cut reply).
struct Replies<F>(F, Vec<HostRequest>);

impl<F: FnMut(&tv_vm::host::LlmRequest) -> LlmReply> tv_vm::host::Host for Replies<F> {
    fn call(&mut self, request: &HostRequest) -> tv_vm::host::HostReply {
        self.1.push(request.clone());
        let HostRequest::Llm(r) = request else {
            panic!("no script runs here")
        };
        tv_vm::host::HostReply::Llm(Ok((self.0)(r)))
    }
}

fn text(content: &str) -> LlmReply {
    LlmReply {
        content: content.into(),
        ..LlmReply::default()
    }
}

/// The TaskResult in a parent's message `Subtask result:\n{json}`.
fn subtask_result(message: &str) -> Value {
    let json = message
        .strip_prefix("Subtask result:\n")
        .unwrap_or_else(|| panic!("not a subtask result: {message}"));
    serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}"))
}

const STRUCTURED: &str = r#"<library>
  <template name="count_files" params="folder"><task>
    <description>Count the files in a folder</description>
    <instructions>Count the files in {{folder}}</instructions>
    <criteria>Every file is counted once</criteria>
    <output_format type="json" schema="object"/></task></template>
  <task name="plan"><instructions>plan the work</instructions></task>
</library>"#;

/// `plan` asks for the count subtask, which replies `reply`; the parent then says
/// `then`. The run's result, and the subtask result the parent was given.
fn parent_given(reply: &'static str, then: &'static str) -> (Value, Value) {
    let b = bundle_of(STRUCTURED);
    let ask = continuation(json!({"type": "atomic", "description": "count the files",
        "inputs": {"folder": "src"}}));
    let mut host = scripted(
        |r| match (r.messages[0].content.as_str(), r.messages.len()) {
            ("plan the work", 1) => ask.clone(),
            ("plan the work", _) => then.into(),
            _ => reply.into(),
        },
    );
    let r = run_with(&b, "plan", json!({}), Limits::default(), &mut host);
    // After the subtask's replies (a wrong one is asked again).
    let Some(HostRequest::Llm(last)) = host.requests.last() else {
        panic!("the parent's second turn is the last request")
    };
    (r, subtask_result(&last.messages[2].content))
}

#[test]
fn the_parent_receives_the_subtasks_result_as_json_with_its_parsed_content_and_no_usage() {
    let (r, given) = parent_given("```json\n{\"count\": 3}\n```", "done");
    assert_eq!(r["content"], "done", "{r:#}");
    assert_eq!(given["status"], "COMPLETE");
    assert_eq!(given["parsedContent"], json!({"count": 3}));
    assert_eq!(given["content"], "```json\n{\"count\": 3}\n```");
    assert_eq!(given["criteria"], "Every file is counted once");
    // What the run spent on the subtask is for the people running it: the model is not
    // sent it, so the parent's next request is the same live, replayed or cached.
    assert_eq!(given["notes"].get("usage"), None, "{given:#}");
    assert_eq!(r["notes"]["usage"]["calls"], 3, "{r:#}");
}

#[test]
fn a_subtask_that_fails_its_task_is_given_to_the_parent_which_may_go_on() {
    let (r, given) = parent_given("I could not count them", "counted them myself");
    assert_eq!(r["status"], "COMPLETE", "{r:#}");
    assert_eq!(r["content"], "counted them myself");
    assert_eq!(given["status"], "FAILED");
    assert_eq!(given["notes"]["error"]["reason"], "output_format_failure");
    assert_eq!(given["content"], "I could not count them");
}

#[test]
fn a_subtask_that_runs_out_of_a_resource_still_fails_the_parent() {
    let b = bundle_of(STRUCTURED);
    let ask = continuation(json!({"type": "atomic", "description": "count the files",
        "inputs": {"folder": "src"}}));
    let mut host = Replies(
        |r: &tv_vm::host::LlmRequest| match r.messages[0].content.as_str() {
            "plan the work" => text(&ask),
            _ => LlmReply {
                truncated: true,
                max_tokens: Some(5),
                ..text("{\"cou")
            },
        },
        Vec::new(),
    );
    let r = run_with(&b, "plan", json!({}), Limits::default(), &mut host);
    assert_eq!(host.1.len(), 2, "the parent was not asked again");
    let e = &r["notes"]["error"];
    assert_eq!(e["reason"], "subtask_failure", "{r:#}");
    assert_eq!(e["details"]["subtaskError"]["type"], "RESOURCE_EXHAUSTION");
    assert_eq!(e["details"]["subtaskError"]["resource"], "output");
    assert_eq!(e["details"]["partialOutput"], ask);
}

#[test]
fn criteria_are_copied_into_atomic_and_script_results() {
    let b = bundle_of(
        r#"<library>
      <task name="ask"><instructions>say hi</instructions>
        <criteria>A greeting of {{n}} words</criteria>
        <inputs><input name="n">how many words</input></inputs></task>
      <task name="run" type="script"><criteria>Exits with 0</criteria>
        <script_execution><command>true</command></script_execution></task>
      <task name="plain"><instructions>say hi</instructions></task>
    </library>"#,
    );
    let mut host = scripted(|_| "hi".into());
    let r = run_with(&b, "ask", json!({"n": 2}), Limits::default(), &mut host);
    assert_eq!(r["criteria"], "A greeting of {{n}} words", "{r:#}");
    let r = run_with(&b, "run", json!({}), Limits::default(), &mut host);
    assert_eq!(r["criteria"], "Exits with 0", "{r:#}");
    let r = run_with(&b, "plain", json!({}), Limits::default(), &mut host);
    assert!(r.get("criteria").is_none(), "{r:#}");
}

#[test]
fn criteria_words_decide_which_template_a_request_selects() {
    // The same description; only the criteria tell the two apart.
    let b = bundle_of(
        r#"<library>
      <template name="review_speed" params="code"><task>
        <description>Review the code</description>
        <criteria>latency throughput allocations</criteria>
        <instructions>Review the speed of {{code}}</instructions></task></template>
      <template name="review_safety" params="code"><task>
        <description>Review the code</description>
        <criteria>injection escaping secrets</criteria>
        <instructions>Review the safety of {{code}}</instructions></task></template>
      <task name="plan"><instructions>plan the work</instructions></task>
    </library>"#,
    );
    for (words, chosen) in [
        (
            "review the code for injection and secrets",
            "Review the safety of x",
        ),
        (
            "review the code for latency and allocations",
            "Review the speed of x",
        ),
    ] {
        let ask = continuation(json!({"type": "atomic", "description": words,
            "inputs": {"code": "x"}}));
        let mut host = scripted(|r| match r.messages.len() {
            1 if r.messages[0].content == "plan the work" => ask.clone(),
            _ => "ok".into(),
        });
        run_with(&b, "plan", json!({}), Limits::default(), &mut host);
        assert_eq!(prompts(&host.requests)[1], chosen, "{words}");
    }
}
