//! Every limit of the machine, each hit and reported with its own error.

use serde_json::{json, Value};
use tv_tests::{bundle_of, run_with, scripted, status};
use tv_vm::host::{EchoHost, HostRequest};
use tv_vm::limits::Limits;

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
fn the_turn_and_token_limits_stop_the_run_before_the_next_llm_call() {
    let b = bundle_of(
        r#"<task name="s" type="sequential"><steps>
             <task><instructions>a</instructions></task><task><instructions>b</instructions></task>
             <task><instructions>c</instructions></task></steps></task>"#,
    );
    // Each call costs one turn and 15 tokens with the scripted host.
    let cases = [
        (
            Limits {
                turns: 2,
                ..Limits::default()
            },
            "turns",
            2,
        ),
        (
            Limits {
                tokens: 15,
                ..Limits::default()
            },
            "context",
            1,
        ),
    ];
    for (limits, resource, calls) in cases {
        let mut host = scripted(|_| "x".into());
        let r = run_with(&b, "s", json!({}), limits, &mut host);
        assert_eq!(exhausted(&r), ("RESOURCE_EXHAUSTION", resource));
        assert_eq!(host.requests.len(), calls, "{resource}");
    }
}

#[test]
fn the_iteration_limit_caps_loops_across_the_run() {
    let b = bundle_of(
        r#"<task name="l" type="director_evaluator_loop"><max_iterations>50</max_iterations>
             <director><instructions>d</instructions></director><evaluator><instructions>e</instructions></evaluator></task>"#,
    );
    let mut host = scripted(|r| match r.messages[0].content.as_str() {
        "e" => r#"{"success": false}"#.into(),
        _ => "no".into(),
    });
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
    use tv_runtime::host::Blocking;
    use tv_runtime::Run;
    struct Slow;
    impl tv_runtime::host::AsyncHost for Slow {
        async fn call(
            &self,
            _: tv_runtime::host::CallId<'_>,
            _: &HostRequest,
        ) -> tv_vm::host::HostReply {
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
    let ran = rt.block_on(Run::new(&b, 0, vec![], limits.clone()).on(&Slow));
    assert_eq!(
        exhausted(&ran.result.into()),
        ("RESOURCE_EXHAUSTION", "time")
    );
    let ran = rt.block_on(Run::new(&b, 0, vec![], limits).on(&Blocking(Mutex::new(EchoHost))));
    assert_eq!(
        (status(&ran.result.into()), ran.usage.turns),
        ("COMPLETE", 1)
    );
}

#[test]
fn a_replacement_that_would_take_gigabytes_is_refused_before_it_is_built() {
    let b = bundle_of(
        r#"<task name="blow"><inputs><input name="q">text</input></inputs>
             <instructions>{{replace(q, "a", q)}}</instructions></task>"#,
    );
    let q = "a".repeat(100_000);
    let mut host = scripted(|_| "never".into());
    let r = run_with(&b, "blow", json!({"q": q}), Limits::default(), &mut host);
    assert_eq!(exhausted(&r), ("RESOURCE_EXHAUSTION", "memory"));
    let metrics = &r["notes"]["error"]["metrics"];
    assert!(
        metrics["used"].as_u64().unwrap() > 10_000_000_000,
        "{metrics}"
    );
    assert_eq!(metrics["limit"], 512 << 20);
    assert!(host.requests.is_empty());
}

#[test]
fn nested_replacements_are_refused_at_the_first_that_cannot_fit() {
    let b = bundle_of(
        r#"<task name="blow"><inputs><input name="q">text</input></inputs>
             <instructions>{{replace(replace(replace(q, "a", q), "a", q), "a", q)}}</instructions></task>"#,
    );
    let limits = Limits {
        memory: 64 << 20,
        ..Limits::default()
    };
    let mut host = scripted(|_| "never".into());
    let q = "a".repeat(5_000);
    let r = run_with(&b, "blow", json!({"q": q}), limits.clone(), &mut host);
    assert_eq!(exhausted(&r), ("RESOURCE_EXHAUSTION", "memory"));
    // Small values fit: the budget refuses only what would not.
    let r = run_with(&b, "blow", json!({"q": "ab"}), limits, &mut host);
    assert_eq!(status(&r), "COMPLETE");
}

#[test]
fn values_copied_again_and_again_hit_the_memory_budget_not_the_machine() {
    // Each call passes on its text twice over.
    let b = bundle_of(
        r#"<template name="grow" params="t"><task type="sequential"><steps>
             <call template="grow"><arg name="t">{{t}}{{t}}</arg></call>
           </steps></task></template>"#,
    );
    let limits = Limits {
        memory: 8 << 20,
        call_depth: 64,
        ..Limits::default()
    };
    let mut host = scripted(|_| "x".into());
    let r = run_with(&b, "grow", json!({"t": "0123456789"}), limits, &mut host);
    assert_eq!(exhausted(&r), ("RESOURCE_EXHAUSTION", "memory"), "{r:#}");
}
