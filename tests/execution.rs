//! Programs run through a deterministic in-process host: every operator, the
//! request texts the model is sent, the result and error shapes, and every limit.

use serde_json::{json, Value};
use tv_tests::{bundle_of, prompts, run_with, Scripted};
use tv_vm::host::{EchoHost, HostRequest, LlmRequest};
use tv_vm::limits::Limits;

fn scripted<F: FnMut(&LlmRequest) -> String>(reply: F) -> Scripted<F> {
    Scripted {
        reply,
        requests: Vec::new(),
    }
}

fn status(r: &Value) -> &str {
    r["status"].as_str().unwrap_or("")
}

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
    assert_eq!(req.messages[0].role, "user");
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
    assert_eq!(second.context, "Step 1: reply 1\n");
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
    assert_eq!(e["details"]["failedStep"], 1);
    assert_eq!(e["details"]["totalSteps"], 3);
    assert_eq!(e["details"]["partialResults"][0]["content"], "not json");
    assert_eq!(host.requests.len(), 2, "the third step never runs");
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
fn the_loop_stops_at_max_iterations_or_its_termination_condition() {
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
    let mut host = scripted(|_| "no".into());
    run_with(&b, "capped", json!({}), Limits::default(), &mut host);
    assert_eq!(host.requests.len(), 4);
    let mut host = scripted(|_| "no".into());
    run_with(&b, "until", json!({}), Limits::default(), &mut host);
    assert_eq!(host.requests.len(), 6);
}

fn exhausted(r: &Value) -> (&str, &str) {
    let e = &r["notes"]["error"];
    (
        e["type"].as_str().unwrap_or(""),
        e["resource"].as_str().unwrap_or(""),
    )
}

#[test]
fn runaway_recursion_hits_the_call_depth_limit_before_another_host_call() {
    let b = bundle_of(
        r#"<template name="deeper" params="n"><task type="sequential"><steps>
             <task><instructions>level {{n}}</instructions></task>
             <call template="deeper"><arg>output</arg></call>
           </steps></task></template>"#,
    );
    let limits = Limits {
        call_depth: 4,
        ..Limits::default()
    };
    let mut host = scripted(|_| "x".into());
    let r = run_with(&b, "deeper", json!({"n": 0}), limits, &mut host);
    assert_eq!(exhausted(&r), ("RESOURCE_EXHAUSTION", "depth"));
    assert_eq!(
        r["notes"]["error"]["metrics"],
        json!({"used": 5, "limit": 4})
    );
    assert_eq!(
        host.requests.len(),
        4,
        "one call per frame, none after the limit"
    );
}

#[test]
fn the_turn_limit_stops_the_run_before_the_next_llm_call() {
    let b = bundle_of(
        r#"<task name="s" type="sequential"><steps>
             <task><instructions>a</instructions></task><task><instructions>b</instructions></task>
             <task><instructions>c</instructions></task></steps></task>"#,
    );
    let mut host = scripted(|_| "x".into());
    let r = run_with(
        &b,
        "s",
        json!({}),
        Limits {
            turns: 2,
            ..Limits::default()
        },
        &mut host,
    );
    assert_eq!(exhausted(&r), ("RESOURCE_EXHAUSTION", "turns"));
    assert_eq!(host.requests.len(), 2);
}

#[test]
fn the_token_limit_stops_the_run_before_the_next_llm_call() {
    let b = bundle_of(
        r#"<task name="s" type="sequential"><steps>
             <task><instructions>a</instructions></task><task><instructions>b</instructions></task></steps></task>"#,
    );
    let mut host = scripted(|_| "x".into());
    let r = run_with(
        &b,
        "s",
        json!({}),
        Limits {
            tokens: 15,
            ..Limits::default()
        },
        &mut host,
    );
    assert_eq!(exhausted(&r), ("RESOURCE_EXHAUSTION", "context"));
    assert_eq!(host.requests.len(), 1);
}

#[test]
fn the_iteration_limit_caps_loops_across_the_run() {
    let b = bundle_of(
        r#"<task name="l" type="director_evaluator_loop"><max_iterations>50</max_iterations>
             <director><instructions>d</instructions></director><evaluator><instructions>e</instructions></evaluator></task>"#,
    );
    let mut host = scripted(|_| "no".into());
    let r = run_with(
        &b,
        "l",
        json!({}),
        Limits {
            loop_iterations: 3,
            ..Limits::default()
        },
        &mut host,
    );
    assert_eq!(exhausted(&r), ("RESOURCE_EXHAUSTION", "iterations"));
    assert_eq!(host.requests.len(), 6);
}

#[test]
fn the_instruction_budget_stops_pure_computation() {
    let b = bundle_of(
        r#"<task name="t"><instructions>{{upper(trim(lower("A")))}}</instructions></task>"#,
    );
    let mut host = scripted(|_| "x".into());
    let r = run_with(
        &b,
        "t",
        json!({}),
        Limits {
            instructions: 3,
            ..Limits::default()
        },
        &mut host,
    );
    assert_eq!(exhausted(&r), ("RESOURCE_EXHAUSTION", "instructions"));
    assert!(host.requests.is_empty());
}

#[test]
fn the_wall_time_limit_is_enforced_by_the_async_driver() {
    use std::sync::Mutex;
    use tv_vm::driver::{run, Blocking};
    struct Slow;
    impl tv_vm::driver::AsyncHost for Slow {
        async fn call(&self, _: &HostRequest) -> tv_vm::host::HostReply {
            tokio::time::sleep(std::time::Duration::from_secs(30)).await;
            tv_vm::host::HostReply::Llm(Ok(Default::default()))
        }
    }
    let b = bundle_of(r#"<task name="t"><instructions>x</instructions></task>"#);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("runtime");
    let limits = Limits {
        wall_time: std::time::Duration::from_secs(2),
        ..Limits::default()
    };
    let (r, _) = rt.block_on(run(&b, 0, vec![], limits.clone(), &Slow));
    assert_eq!(exhausted(&r), ("RESOURCE_EXHAUSTION", "time"));
    let (r, usage) = rt.block_on(run(&b, 0, vec![], limits, &Blocking(Mutex::new(EchoHost))));
    assert_eq!((status(&r), usage.turns), ("COMPLETE", 1));
}

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
    assert_eq!(r["content"], "done with [Subtask result:\nshort]");
    assert_eq!(prompts(&host.requests)[1], "Summarize: a long report");
    let HostRequest::Llm(last) = &host.requests[2] else {
        panic!()
    };
    let roles: Vec<&str> = last.messages.iter().map(|m| m.role.as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "user"]);
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
        (Some("subtask_failure"), Some("Subtask execution failed"))
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
    let mut host = scripted(|_| req.clone());
    let r = run_with(&b, "plan", json!({}), Limits::default(), &mut host);
    let inner = &r["notes"]["error"]["details"]["subtaskError"]["details"]["subtaskError"];
    assert!(
        inner["message"]
            .as_str()
            .unwrap_or("")
            .starts_with("cycle:"),
        "{r:#}"
    );
}

/// A host that answers every LLM call after 100 ms of (virtual) time.
struct Sleepy;

impl tv_vm::driver::AsyncHost for Sleepy {
    async fn call(&self, request: &HostRequest) -> tv_vm::host::HostReply {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let HostRequest::Llm(r) = request else {
            panic!("no scripts here")
        };
        tv_vm::host::HostReply::Llm(Ok(tv_vm::host::LlmReply {
            content: r.messages[0].content.to_uppercase(),
            ..Default::default()
        }))
    }
}

fn timed_run(src: &str, entry: &str) -> (Value, std::time::Duration) {
    let b = bundle_of(src);
    let f = b.entry(entry).expect("entry").function;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("runtime");
    rt.block_on(async {
        let start = tokio::time::Instant::now();
        let (r, _) = tv_vm::driver::run(&b, f, vec![], Limits::default(), &Sleepy).await;
        (r, start.elapsed())
    })
}

#[test]
fn independent_computed_inputs_run_concurrently_and_the_parent_waits_for_all() {
    let (r, took) = timed_run(
        r#"<task name="t"><inputs>
             <input name="a"><task><instructions>one</instructions></task></input>
             <input name="b"><task><instructions>two</instructions></task></input>
             <input name="c"><task><instructions>three</instructions></task></input>
           </inputs><instructions>{{a}} {{b}} {{c}}</instructions></task>"#,
        "t",
    );
    assert_eq!(r["content"], "ONE TWO THREE");
    // Three 100 ms calls at once, then the parent's own call: 200 ms, not 400 ms.
    assert_eq!(took.as_millis() / 100, 2, "{took:?}");
}

#[test]
fn reduce_inner_tasks_run_ahead_concurrently_while_reductions_stay_in_order() {
    let (r, took) = timed_run(
        r#"<task name="r" type="reduce">
             <inputs><input name="a">a</input><input name="b">b</input><input name="c">c</input></inputs>
             <inner_task><instructions>x{{current_input}}</instructions></inner_task>
             <reduction_task><instructions>{{accumulator}}{{current_result}}</instructions></reduction_task>
           </task>"#,
        "r",
    );
    assert_eq!(r["content"], "XAXBXC");
    // All inner tasks together (100 ms), then three reductions one after another.
    assert_eq!(took.as_millis() / 100, 4, "{took:?}");
}

#[test]
fn a_failing_computed_input_fails_its_task() {
    let b = bundle_of(
        r#"<task name="t"><inputs>
             <input name="a"><task><instructions>ok</instructions></task></input>
             <input name="b"><task><instructions>bad</instructions><output_format type="json" schema="number"/></task></input>
           </inputs><instructions>{{a}} {{b}}</instructions></task>"#,
    );
    let mut host = scripted(|r| r.messages[0].content.clone());
    let r = run_with(&b, "t", json!({}), Limits::default(), &mut host);
    assert_eq!(r["notes"]["error"]["reason"], "output_format_failure");
    assert_eq!(
        host.requests.len(),
        2,
        "the parent's own call is never made"
    );
}

#[test]
fn the_shipped_example_replays_from_its_cassette_to_complete() {
    struct Replay(tv_vm::cassette::Cassette);
    impl tv_vm::host::Host for Replay {
        fn call(&mut self, request: &HostRequest) -> tv_vm::host::HostReply {
            match request {
                HostRequest::Llm(r) => tv_vm::host::HostReply::Llm(self.0.answer(r)),
                HostRequest::Script(_) => panic!("the example runs no script"),
            }
        }
    }
    let src = std::fs::read_to_string("examples/code_review.xml").expect("example");
    let c = tv_compiler::driver::check_texts([("examples/code_review.xml", src.as_str())]);
    let (_, b) = tv_compiler::driver::compile(&c).expect("compiles");
    let cassette = tv_vm::cassette::Cassette::load(std::path::Path::new(
        "examples/code_review.cassette.jsonl",
    ))
    .expect("cassette");
    let diff = std::fs::read_to_string("examples/add_dry_run.diff").expect("diff");
    let args = json!({"diff": diff, "title": "Add a dry-run mode to deploy"});
    let r = run_with(
        &b,
        "review_pull_request",
        args,
        Limits::default(),
        &mut Replay(cassette),
    );
    assert_eq!(r["status"], "COMPLETE", "{r:#}");
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
            HostRequest::Llm(l) => l.context.clone(),
            HostRequest::Script(_) => String::new(),
        })
        .collect();
    assert_eq!(
        contexts,
        vec!["".to_string(), "Step 1: re first\n".into(), "".into()]
    );
}
