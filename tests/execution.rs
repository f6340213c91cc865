//! Programs run through a deterministic in-process host: every operator, the
//! request texts the model is sent, and the result and error shapes.

use serde_json::json;
use tv_stdlib::models::parse_model;
use tv_tests::{bundle_of, prompts, run_with, scripted, status};
use tv_vm::host::{EchoHost, HostRequest};
use tv_vm::limits::Limits;

#[test]
fn an_atomic_task_sends_its_rendered_prompt_and_system_prompt() {
    let b = bundle_of(
        r#"<task name="greet"><inputs><input name="who">a name</input></inputs>
             <system>Be brief.</system>
             <instructions>Say hello to {{upper(who)}} ({{len(who)}} letters).</instructions></task>"#,
    );
    let mut host = scripted(|_| "Hello!".into());
    let r = run_with(
        &b,
        "greet",
        json!({"who": "ada"}),
        Limits::default(),
        &mut host,
    );
    assert_eq!(r["status"], "COMPLETE");
    assert_eq!(r["content"], "Hello!");
    let HostRequest::Llm(req) = &host.requests[0] else {
        panic!("not an LLM call")
    };
    assert_eq!(req.system_prompt, "Be brief.");
    assert_eq!(req.messages[0].role, tv_vm::host::Role::User);
    assert_eq!(req.messages[0].content, "Say hello to ADA (3 letters).");
}

#[test]
fn values_are_spliced_as_text_and_never_parsed_as_templates() {
    let b = bundle_of(
        r#"<task name="t"><inputs><input name="x">data</input></inputs>
             <instructions>Echo {{x}} and {{json(x)}}</instructions></task>"#,
    );
    let mut host = scripted(|_| "ok".into());
    run_with(
        &b,
        "t",
        json!({"x": "{{secret}}"}),
        Limits::default(),
        &mut host,
    );
    assert_eq!(
        prompts(&host.requests),
        vec![r#"Echo {{secret}} and "{{secret}}""#]
    );
}

#[test]
fn a_sequence_passes_each_output_on_and_accumulates_notes() {
    let b = bundle_of(
        r#"<task name="s" type="sequential">
             <context_management><accumulate_data>true</accumulate_data><accumulation_format>notes_only</accumulation_format></context_management>
             <steps>
               <task><instructions>first</instructions></task>
               <task><instructions>second after {{output}}</instructions></task>
             </steps></task>"#,
    );
    let mut n = 0;
    let mut host = scripted(|_| {
        n += 1;
        format!("reply {n}")
    });
    let r = run_with(&b, "s", json!({}), Limits::default(), &mut host);
    assert_eq!(r["content"], "reply 2");
    assert_eq!(
        prompts(&host.requests),
        vec!["first", "second after reply 1"]
    );
    let HostRequest::Llm(second) = &host.requests[1] else {
        panic!()
    };
    assert_eq!(second.context.to_string(), "Step 1: reply 1\n");
}

#[test]
fn a_failing_step_fails_the_sequence_with_its_details() {
    let b = bundle_of(
        r#"<task name="s" type="sequential"><steps>
             <task><instructions>a</instructions></task>
             <task><instructions>b</instructions><output_format type="json" schema="number"/></task>
             <task><instructions>never</instructions></task>
           </steps></task>"#,
    );
    let mut host = scripted(|_| "not json".into());
    let r = run_with(&b, "s", json!({}), Limits::default(), &mut host);
    assert_eq!(status(&r), "FAILED");
    let e = &r["notes"]["error"];
    assert_eq!(e["type"], "TASK_FAILURE");
    assert_eq!(e["reason"], "output_format_failure");
    assert_eq!(
        e["message"].as_str().map(|m| &m[..16]),
        Some("step 2 of 3 fail")
    );
    assert_eq!(
        e["details"]["failedStep"], 2,
        "counted as the message counts"
    );
    assert_eq!(e["details"]["totalSteps"], 3);
    assert_eq!(e["details"]["partialResults"][0]["content"], "not json");
    // The second step is asked once more (its `retries` default), then fails.
    assert_eq!(host.requests.len(), 3, "the third step never runs");
}

#[test]
fn json_output_is_parsed_from_a_fenced_block_and_a_parse_error_is_noted() {
    let b = bundle_of(
        r#"<library>
             <task name="typed"><instructions>x</instructions><output_format type="json" schema="string[]"/></task>
             <task name="loose"><instructions>x</instructions><output_format type="json"/></task>
           </library>"#,
    );
    let mut host = scripted(|_| "Here:\n```json\n[\"a\", \"b\"]\n```".into());
    let r = run_with(&b, "typed", json!({}), Limits::default(), &mut host);
    assert_eq!(r["parsedContent"], json!(["a", "b"]));
    let mut host = scripted(|_| "no json here".into());
    let r = run_with(&b, "loose", json!({}), Limits::default(), &mut host);
    assert_eq!(status(&r), "COMPLETE");
    assert!(r["notes"]["parseError"].is_string());
    let mut host = scripted(|_| "{\"a\": 1}".into());
    let r = run_with(&b, "typed", json!({}), Limits::default(), &mut host);
    let e = &r["notes"]["error"];
    assert_eq!(
        (e["reason"].as_str(), e["details"]["expected"].as_str()),
        (Some("output_format_failure"), Some("string[]"))
    );
    assert_eq!(e["details"]["actual"], "object");
    assert_eq!(e["details"]["path"], "$");
    assert_eq!(r["content"], "{\"a\": 1}", "the reply is kept");
}

#[test]
fn an_output_that_fails_its_type_names_the_path_of_the_first_mismatch_and_keeps_the_reply() {
    let b = bundle_of(
        r#"<task name="tags"><instructions>x</instructions><output_format type="json" schema="string[]"/></task>"#,
    );
    let reply = r#"["a", 2]"#;
    let mut host = scripted(|_| reply.into());
    let r = run_with(&b, "tags", json!({}), Limits::default(), &mut host);
    assert_eq!(status(&r), "FAILED");
    assert_eq!(r["content"], reply);
    let e = &r["notes"]["error"];
    assert_eq!(e["type"], "TASK_FAILURE");
    assert_eq!(e["reason"], "output_format_failure");
    assert_eq!(
        e["message"],
        "the output should be `string[]` JSON, but at `$[1]` expected string, got number"
    );
    assert_eq!(
        e["details"],
        json!({"expected": "string[]", "actual": "number", "path": "$[1]",
               "expectedAtPath": "string", "content": reply})
    );
}

#[test]
fn a_declared_return_type_names_the_path_of_the_first_mismatch_and_keeps_the_reply() {
    let b = bundle_of(
        r#"<template name="ret" params="" returns="string[]"><task><instructions>x</instructions>
             <output_format type="json"/></task></template>"#,
    );
    let reply = r#"["a", {"b": 1}]"#;
    let mut host = scripted(|_| reply.into());
    let r = run_with(&b, "ret", json!({}), Limits::default(), &mut host);
    let e = &r["notes"]["error"];
    assert_eq!(e["reason"], "output_format_failure", "{r:#}");
    assert_eq!(
        e["message"],
        "the result should be `string[]`, but at `$[1]` expected string, got object"
    );
    assert_eq!(
        (&e["details"]["path"], &e["details"]["actual"]),
        (&json!("$[1]"), &json!("object"))
    );
    assert_eq!(r["content"], reply);
}

#[test]
fn cond_runs_the_first_case_that_holds_or_completes_empty() {
    let b = bundle_of(
        r#"<template name="route" params="score:number"><cond>
             <case test="score &gt;= 8"><task><instructions>approve</instructions></task></case>
             <case test="score &gt;= 5 and score != 6"><task><instructions>fix</instructions></task></case>
           </cond></template>"#,
    );
    for (score, expected) in [(9, Some("approve")), (5, Some("fix")), (6, None), (1, None)] {
        let mut host = scripted(|r| r.messages[0].content.clone());
        let r = run_with(
            &b,
            "route",
            json!({ "score": score }),
            Limits::default(),
            &mut host,
        );
        assert_eq!(status(&r), "COMPLETE");
        match expected {
            Some(p) => assert_eq!(r["content"], p),
            None => assert_eq!((r["content"].as_str(), host.requests.len()), (Some(""), 0)),
        }
    }
}

#[test]
fn calls_bind_arguments_by_position_and_name_and_splice_values_as_json() {
    let b = bundle_of(
        r#"<library>
             <template name="facts" params="topic" returns="object"><task>
               <instructions>facts about {{topic}}</instructions><output_format type="json" schema="object"/></task></template>
             <template name="write" params="topic,style"><task>
               <instructions>Write {{style}} about {{topic}} using {{facts(topic)}}</instructions></task></template>
             <template name="main" params=""><call template="write"><arg name="style">briefly</arg><arg name="topic">owls</arg></call></template>
           </library>"#,
    );
    let mut host = scripted(|r| {
        if r.messages[0].content.starts_with("facts") {
            "{\"legs\": 2}".into()
        } else {
            r.messages[0].content.clone()
        }
    });
    let r = run_with(&b, "main", json!({}), Limits::default(), &mut host);
    assert_eq!(r["content"], r#"Write briefly about owls using {"legs":2}"#);
}

#[test]
fn a_declared_return_type_is_checked_at_run_time() {
    let b = bundle_of(
        r#"<template name="n" params="" returns="number"><task><instructions>x</instructions>
             <output_format type="json" schema="number"/></task></template>"#,
    );
    let mut host = scripted(|_| "42".into());
    assert_eq!(
        run_with(&b, "n", json!({}), Limits::default(), &mut host)["parsedContent"],
        42
    );
}

#[test]
fn reduce_folds_inputs_in_order_through_the_accumulator() {
    let b = bundle_of(
        r#"<task name="r" type="reduce">
             <inputs><input name="a">one</input><input name="b">two</input></inputs>
             <initial_value>start</initial_value>
             <inner_task><instructions>inner {{current_input}}</instructions></inner_task>
             <reduction_task><instructions>{{accumulator}}+{{current_result}}</instructions></reduction_task>
           </task>"#,
    );
    let mut host = scripted(|r| {
        let p = r.messages[0].content.clone();
        p.strip_prefix("inner ")
            .map_or(p.clone(), |x| x.to_uppercase())
    });
    let r = run_with(&b, "r", json!({}), Limits::default(), &mut host);
    assert_eq!(r["content"], "start+ONE+TWO");
    // Inner tasks run ahead (here one after another: the test host is sequential).
    assert_eq!(
        prompts(&host.requests),
        vec!["inner one", "inner two", "start+ONE", "start+ONE+TWO"],
    );
}

#[test]
fn a_failing_reduction_reports_the_input_and_the_accumulator() {
    let b = bundle_of(
        r#"<task name="r" type="reduce">
             <inputs><input name="a">one</input><input name="b">two</input></inputs>
             <inner_task><instructions>inner {{current_input}}</instructions><output_format type="json" schema="object"/></inner_task>
             <reduction_task><instructions>{{accumulator}}</instructions></reduction_task>
           </task>"#,
    );
    let mut host = scripted(|r| {
        if r.messages[0].content == "inner two" {
            "bad".into()
        } else {
            "{}".into()
        }
    });
    let r = run_with(&b, "r", json!({}), Limits::default(), &mut host);
    let d = &r["notes"]["error"]["details"];
    assert_eq!(
        (d["failedInputIndex"].as_u64(), d["totalInputs"].as_u64()),
        (Some(1), Some(2))
    );
    assert_eq!(d["processedInputs"], json!(["one"]));
    assert_eq!(d["currentAccumulator"], "{}");
}

#[test]
fn script_commands_shell_quote_every_interpolated_value() {
    let b = bundle_of(
        r#"<task name="s" type="script"><inputs><input name="file">a path</input></inputs>
             <script_execution><command>wc -l {{file}}</command><timeout>5</timeout></script_execution></task>"#,
    );
    let r = run_with(
        &b,
        "s",
        json!({"file": "x'; rm -rf / #"}),
        Limits::default(),
        &mut EchoHost,
    );
    assert_eq!(r["content"], r"wc -l 'x'\''; rm -rf / #'");
    assert_eq!(r["notes"]["scriptOutput"]["exitCode"], 0);
}

#[test]
fn script_commands_quote_each_value_for_the_shell_context_it_stands_in() {
    let b = bundle_of(
        r#"<task name="s" type="script"><inputs><input name="v">a value</input></inputs>
             <script_execution><command>echo {{v}} "in $HOME {{v}}" 'lit {{v}}'</command></script_execution></task>"#,
    );
    let r = run_with(
        &b,
        "s",
        json!({"v": r#"x'"$(id)`id`\"#}),
        Limits::default(),
        &mut EchoHost,
    );
    assert_eq!(
        r["content"],
        r#"echo 'x'\''"$(id)`id`\' "in $HOME x'\"\$(id)\`id\`\\" 'lit x'\''"$(id)`id`\'"#
    );
}

#[test]
fn the_director_evaluator_loop_stops_when_the_evaluator_succeeds() {
    let b = bundle_of(
        r#"<task name="l" type="director_evaluator_loop"><max_iterations>5</max_iterations>
             <director><instructions>draft {{current_iteration}} after {{evaluation_feedback}}</instructions></director>
             <evaluator><instructions>judge {{director_result}}</instructions><output_format type="json" schema="object"/></evaluator>
           </task>"#,
    );
    let mut host = scripted(|r| {
        let p = &r.messages[0].content;
        if p.starts_with("judge draft 3") {
            r#"{"success": true, "feedback": "good"}"#.into()
        } else if p.starts_with("judge") {
            r#"{"success": false, "feedback": "more"}"#.into()
        } else {
            p.clone()
        }
    });
    let r = run_with(&b, "l", json!({}), Limits::default(), &mut host);
    assert_eq!(r["content"], "draft 3 after more");
    assert_eq!(prompts(&host.requests).len(), 6);
}

#[test]
fn the_loop_fails_at_max_iterations_or_stops_at_its_termination_condition() {
    let b = bundle_of(
        r#"<library>
           <task name="capped" type="director_evaluator_loop"><max_iterations>2</max_iterations>
             <director><instructions>d</instructions></director>
             <evaluator><instructions>e</instructions></evaluator></task>
           <task name="until" type="director_evaluator_loop">
             <director><instructions>d</instructions></director>
             <evaluator><instructions>e</instructions></evaluator>
             <termination_condition><condition>current_iteration &gt;= 3</condition></termination_condition></task>
           </library>"#,
    );
    let not_yet = |r: &tv_vm::host::LlmRequest| match r.messages[0].content.as_str() {
        "e" => r#"{"success": false, "feedback": "again"}"#.to_string(),
        other => format!("draft {other}"),
    };
    let mut host = scripted(not_yet);
    let r = run_with(&b, "capped", json!({}), Limits::default(), &mut host);
    assert_eq!(host.requests.len(), 4);
    assert_eq!(r["status"], "FAILED");
    let error = &r["notes"]["error"];
    assert_eq!(error["reason"], "max_iterations_reached");
    assert_eq!(error["details"]["iterations"], 2);
    assert_eq!(error["details"]["lastDirectorResult"]["content"], "draft d");
    assert_eq!(error["details"]["lastEvaluation"]["feedback"], "again");
    // Its notes say how far it went, as a loop's that succeeded do.
    assert_eq!(r["notes"]["iterations"], 2);
    assert_eq!(r["notes"]["evaluation"]["feedback"], "again");
    let mut host = scripted(not_yet);
    let r = run_with(&b, "until", json!({}), Limits::default(), &mut host);
    assert_eq!(host.requests.len(), 6);
    assert_eq!(
        (r["status"].as_str(), r["notes"]["iterations"].as_u64()),
        (Some("COMPLETE"), Some(3))
    );
}

#[test]
fn an_evaluator_without_an_output_format_still_ends_the_loop_and_passes_its_feedback_on() {
    let b = bundle_of(
        r#"<task name="l" type="director_evaluator_loop"><max_iterations>5</max_iterations>
             <director><instructions>draft {{current_iteration}} after {{evaluation_feedback}}</instructions></director>
             <evaluator><instructions>judge {{director_result}}</instructions></evaluator>
           </task>"#,
    );
    let mut host = scripted(|r| {
        let p = &r.messages[0].content;
        if p.starts_with("judge draft 2") {
            "Looks right.\n```json\n{\"success\": true, \"feedback\": \"good\"}\n```".into()
        } else if p.starts_with("judge") {
            r#"{"success": false, "feedback": "shorter"}"#.into()
        } else {
            p.clone()
        }
    });
    let r = run_with(&b, "l", json!({}), Limits::default(), &mut host);
    assert_eq!(r["status"], "COMPLETE");
    assert_eq!(r["content"], "draft 2 after shorter");
    assert_eq!(r["notes"]["iterations"], 2);
    assert_eq!(r["notes"]["evaluation"]["success"], true);
    assert_eq!(prompts(&host.requests).len(), 4);
}

#[test]
fn a_loop_that_accepts_running_out_completes_with_its_last_result_and_says_so() {
    let b = bundle_of(
        r#"<task name="l" type="director_evaluator_loop"><max_iterations>2</max_iterations>
             <on_max_iterations>accept</on_max_iterations>
             <director><instructions>draft {{current_iteration}}</instructions></director>
             <evaluator><instructions>judge</instructions></evaluator>
           </task>"#,
    );
    let mut host = scripted(|r| match r.messages[0].content.as_str() {
        "judge" => r#"{"success": false}"#.into(),
        other => other.into(),
    });
    let r = run_with(&b, "l", json!({}), Limits::default(), &mut host);
    assert_eq!(r["status"], "COMPLETE");
    assert_eq!(r["content"], "draft 2");
    assert_eq!(r["notes"]["iterationsExhausted"], true);
    assert_eq!(r["notes"]["iterations"], 2);
}

#[test]
fn an_evaluator_reply_that_is_not_an_evaluation_result_fails_the_loop_with_the_reply_kept() {
    let mut b = bundle_of(
        r#"<task name="l" type="director_evaluator_loop">
             <director><instructions>d</instructions></director>
             <evaluator><instructions>judge</instructions></evaluator>
           </task>"#,
    )
    .into_bundle();
    // Not asked again: this is about the failure of the loop.
    for t in &mut b.tasks {
        std::sync::Arc::make_mut(t).retries = 0;
    }
    let b = tv_vm::bundle::Verified::new(b).expect("verifies");
    for (reply, problem, path) in [
        // The evaluator's task is typed EvaluationResult, so the reply is judged as
        // any typed JSON output is.
        ("it is fine", "does not parse", "$"),
        (
            r#"{"success": "yes"}"#,
            "at `$.success` expected boolean, got string",
            "$.success",
        ),
        (
            r#"{"ok": true}"#,
            "at `$.success` expected boolean, got missing",
            "$.success",
        ),
        (
            r#"{"success": true, "feedback": 3}"#,
            "at `$.feedback` expected string, got number",
            "$.feedback",
        ),
    ] {
        let mut host = scripted(move |r| match r.messages[0].content.as_str() {
            "judge" => reply.into(),
            _ => "draft".into(),
        });
        let r = run_with(&b, "l", json!({}), Limits::default(), &mut host);
        let error = &r["notes"]["error"];
        assert_eq!(error["reason"], "output_format_failure", "{reply}");
        assert!(
            error["message"].as_str().unwrap().contains(problem),
            "{error}"
        );
        assert_eq!(error["details"]["content"], reply);
        assert_eq!(error["details"]["path"], path, "{reply}");
        assert_eq!(r["content"], reply, "the reply is kept");
        assert_eq!(host.requests.len(), 2);
    }
}

#[test]
fn the_shipped_examples_replay_from_their_cassettes_to_complete() {
    struct Replay(tv_runtime::cassette::Cassette);
    impl tv_vm::host::Host for Replay {
        fn call(&mut self, request: &HostRequest) -> tv_vm::host::HostReply {
            match request {
                HostRequest::Llm(r) => {
                    // As a replay naming no model asks: a task's own model, else none.
                    let named = r.model.as_deref().and_then(|m| parse_model(m).ok());
                    let asked = named.map(|m| m.name);
                    tv_vm::host::HostReply::Llm(
                        self.0.answer(r, asked.as_deref()).map_err(Into::into),
                    )
                }
                HostRequest::Script(_) => panic!("the examples run no script"),
            }
        }
    }
    let read = |path: &str| std::fs::read_to_string(path).expect(path);
    let examples = [
        (
            "code_review",
            "review_pull_request",
            json!({"diff": read("examples/add_dry_run.diff"), "title": "Add a dry-run mode to deploy"}),
            "",
        ),
        (
            "diff_review",
            "review_diff",
            json!({"diff": read("examples/rate_limit.diff")}),
            // The last step read the three files' reviews, which the map kept in order.
            "api/limits.py",
        ),
    ];
    for (name, entry, args, expected) in examples {
        let path = format!("examples/{name}.xml");
        let src = read(&path);
        let c = tv_compiler::driver::check_texts([(path.as_str(), src.as_str())]);
        let (_, b) = tv_compiler::driver::compile(&c).expect("compiles");
        let b = tv_vm::bundle::Verified::new(b).expect("verifies");
        let cassette = tv_runtime::cassette::Cassette::load(std::path::Path::new(&format!(
            "examples/{name}.cassette.jsonl"
        )))
        .expect("cassette");
        let r = run_with(&b, entry, args, Limits::default(), &mut Replay(cassette));
        assert_eq!(r["status"], "COMPLETE", "{name}: {r:#}");
        assert!(
            r["content"].as_str().unwrap().contains(expected),
            "{name}: {r:#}"
        );
    }
}

#[test]
fn a_step_that_inherits_no_context_gets_none_of_the_accumulated_results() {
    let b = bundle_of(
        r#"<task name="s" type="sequential"><steps>
             <task><instructions>first</instructions></task>
             <task><instructions>second</instructions></task>
             <task><instructions>third</instructions>
               <context_management><inherit_context>none</inherit_context></context_management></task>
           </steps></task>"#,
    );
    let mut host = scripted(|r| format!("re {}", r.messages[0].content));
    run_with(&b, "s", json!({}), Limits::default(), &mut host);
    let contexts: Vec<String> = host
        .requests
        .iter()
        .map(|r| match r {
            HostRequest::Llm(l) => l.context.to_string(),
            HostRequest::Script(_) => String::new(),
        })
        .collect();
    assert_eq!(
        contexts,
        vec!["".to_string(), "Step 1: re first\n".into(), "".into()]
    );
}
