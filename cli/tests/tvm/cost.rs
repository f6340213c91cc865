//! What a run costs and a budget it cannot exceed (DESIGN §15): `tvm run` against a
//! server on 127.0.0.1 that speaks OpenAI's wire format and reports usage, with the
//! built-in price table, `--prices` and `--max-cost`; and a property test of the
//! budget through the real adapter: whatever the calls and replies, the spend never
//! passes the budget.

use crate::support::files::{self, run_tvm, runtime, scratch};
use crate::support::http::{Reply, Request, Server};
use futures::StreamExt;
use proptest::prelude::*;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;
use tv_runtime::ledger::{CostBudget, Ledger};
use tv_runtime::prices::Prices;
use tv_runtime::providers::{CallKind, OpenAi, Settings};
use tv_vm::bundle::TaskMeta;
use tv_vm::host::{LlmRequest, Message};
use tv_vm::result::Resource;

const PROGRAM: &str = r#"<library>
  <task name="survey" type="sequential">
    <inputs><input name="topics" type="string[]">What to look at</input></inputs>
    <steps>
      <task type="map" over="topics" as="topic" concurrency="2">
        <task><instructions>Look at {{topic}}.</instructions></task>
      </task>
      <task><instructions>Sum up {{json(output)}}</instructions></task>
    </steps>
  </task>
</library>"#;

/// A reply from `model` that used 1,000 input tokens (200 of them from the prompt
/// cache) and 100 output tokens.
fn reply(model: &str) -> Reply {
    Reply::json(
        200,
        json!({
            "model": model,
            "choices": [{"message": {"role": "assistant", "content": "fine"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 1000, "completion_tokens": 100,
                      "prompt_tokens_details": {"cached_tokens": 200}}
        }),
    )
}

/// `tvm run` of the survey over three topics against `server`, with `extra` flags.
fn survey(dir: &Path, server: &Server, extra: &[&str]) -> (i32, Value, String) {
    let b = files::compiled(dir, PROGRAM);
    let mut args = vec![
        "run",
        b.to_str().expect("path"),
        "--provider",
        "openai",
        "--arg",
        r#"topics=["a","b","c"]"#,
    ];
    args.extend(extra);
    let url = server.url();
    let (code, stdout, stderr) = run_tvm(&args, &[("OPENAI_BASE_URL", url.as_str())]);
    let result = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    (code, result, stderr)
}

fn close(a: &Value, b: f64) -> bool {
    a.as_f64().is_some_and(|a| (a - b).abs() < 1e-12)
}

#[test]
fn a_run_prints_its_usage_and_cost_in_total_and_by_model() {
    let rt = runtime();
    let server = rt.block_on(Server::start(|_, _| reply("gpt-4o-mini-2024-07-18")));
    let dir = scratch("cost", "usage");
    let (code, result, stderr) = survey(&dir, &server, &[]);
    assert_eq!(code, 0, "{stderr}");
    let usage = &result["notes"]["usage"];
    // gpt-4o-mini: 0.15 USD per million input tokens, 0.075 cached, 0.60 output.
    let per_call = (800.0 * 0.15 + 200.0 * 0.075 + 100.0 * 0.60) / 1e6;
    assert_eq!(usage["calls"], json!(4), "{result}");
    assert_eq!(usage["inputTokens"], json!(4000));
    assert_eq!(usage["cacheReadTokens"], json!(800));
    assert_eq!(usage["outputTokens"], json!(400));
    assert!(close(&usage["costUsd"], 4.0 * per_call), "{usage}");
    let model = &usage["byModel"]["gpt-4o-mini-2024-07-18"];
    assert_eq!(model["calls"], json!(4), "{usage}");
    assert!(close(&model["costUsd"], 4.0 * per_call), "{usage}");
}

#[test]
fn a_model_without_a_price_costs_null_not_zero_until_prices_name_it() {
    let rt = runtime();
    let server = rt.block_on(Server::start(|_, _| reply("my-local-model")));
    let dir = scratch("cost", "unpriced");
    let model = ["--model", "my-local-model"];
    let (code, result, stderr) = survey(&dir, &server, &model);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(result["notes"]["usage"]["costUsd"], Value::Null, "{result}");
    assert_eq!(result["notes"]["usage"]["calls"], json!(4));
    let prices = dir.join("prices.json");
    let table = json!({"models": {"openai:my-local-model": {"input": 1.0, "output": 2.0}}});
    std::fs::write(&prices, table.to_string()).expect("write prices");
    let priced = [&model[..], &["--prices", prices.to_str().expect("path")]].concat();
    let (code, result, stderr) = survey(&dir, &server, &priced);
    assert_eq!(code, 0, "{stderr}");
    let per_call = (1000.0 * 1.0 + 100.0 * 2.0) / 1e6;
    assert!(
        close(&result["notes"]["usage"]["costUsd"], 4.0 * per_call),
        "{result}"
    );
}

#[test]
fn a_budget_over_a_model_without_a_price_is_a_usage_error_before_anything_is_sent() {
    let rt = runtime();
    let server = rt.block_on(Server::start(|_, _| reply("my-local-model")));
    let dir = scratch("cost", "budget-unpriced");
    let flags = ["--model", "my-local-model", "--max-cost", "1"];
    let (code, _, stderr) = survey(&dir, &server, &flags);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("`openai:my-local-model`"), "{stderr}");
    assert!(stderr.contains("--prices FILE"), "{stderr}");
    assert_eq!(server.hits(), 0);
}

#[test]
fn a_call_whose_worst_case_does_not_fit_is_not_sent_and_fails_with_the_cost_resource() {
    let rt = runtime();
    let server = rt.block_on(Server::start(|_, _| reply("gpt-4o-mini")));
    let dir = scratch("cost", "budget");
    // No max_tokens is sent, so a call's worst case is gpt-4o-mini's longest reply in
    // the capability table (16,384 tokens at 0.60 USD per million, about 0.0098 USD):
    // one fits in 0.012 USD, a second one beside it does not.
    let (code, result, stderr) = survey(&dir, &server, &["--max-cost", "0.012"]);
    assert_eq!(code, 1, "{stderr}");
    let text = result.to_string();
    assert!(text.contains(r#""resource":"cost""#), "{result}");
    assert!(text.contains("does not fit"), "{result}");
    let sent = server.requests();
    assert!(!sent.is_empty() && sent.len() < 4, "{} sent", sent.len());
    // A budget changes nothing in what is sent.
    for r in &sent {
        let body = r.json();
        assert!(body.get("max_tokens").is_none(), "{body}");
    }
    let spent = result["notes"]["usage"]["costUsd"]
        .as_f64()
        .expect("a cost");
    assert!(spent <= 0.012, "{spent}");
}

#[test]
fn a_budget_changes_nothing_in_the_request_so_a_cache_filled_without_one_answers_it() {
    let rt = runtime();
    let server = rt.block_on(Server::start(|_, _| reply("gpt-4o-mini")));
    let dir = scratch("cost", "budget-cache");
    let cache = dir.join("cache");
    let cache = ["--cache", cache.to_str().expect("path")];
    let (code, _, stderr) = survey(&dir, &server, &cache);
    assert_eq!((code, server.hits()), (0, 4), "{stderr}");
    let budgeted = [&cache[..], &["--max-cost", "1"]].concat();
    let (code, result, stderr) = survey(&dir, &server, &budgeted);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        server.hits(),
        4,
        "the budgeted run is answered from the cache"
    );
    assert_eq!(
        result["notes"]["usage"]["cachedCalls"],
        json!(4),
        "{result}"
    );
}

#[test]
fn a_budget_over_a_model_whose_longest_reply_is_unknown_asks_for_a_max_tokens_before_anything_is_sent(
) {
    let rt = runtime();
    let server = rt.block_on(Server::start(|_, _| reply("my-local-model")));
    let dir = scratch("cost", "budget-unbounded");
    let prices = dir.join("prices.json");
    let table = json!({"models": {"openai:my-local-model": {"input": 1.0, "output": 2.0},
                                  "openai:my-free-model": {"input": 0, "output": 0}}});
    std::fs::write(&prices, table.to_string()).expect("write prices");
    let priced = [
        "--prices",
        prices.to_str().expect("path"),
        "--max-cost",
        "1",
    ];
    let flags = [&priced[..], &["--model", "my-local-model"]].concat();
    let (code, _, stderr) = survey(&dir, &server, &flags);
    assert_eq!(code, 2, "{stderr}");
    for part in [
        "`openai:my-local-model`",
        "no max_tokens",
        "--max-output-tokens",
    ] {
        assert!(stderr.contains(part), "{part}: {stderr}");
    }
    assert_eq!(server.hits(), 0);
    // The limit the user sets is sent, and bounds the worst case.
    let bounded = [&flags[..], &["--max-output-tokens", "500"]].concat();
    let (code, _, stderr) = survey(&dir, &server, &bounded);
    assert_eq!((code, server.hits()), (0, 4), "{stderr}");
    assert!(server
        .requests()
        .iter()
        .all(|r| r.json()["max_tokens"] == json!(500)));
    // A model whose output is free needs no bound.
    let free = [&priced[..], &["--model", "my-free-model"]].concat();
    let (code, _, stderr) = survey(&dir, &server, &free);
    assert_eq!(code, 0, "{stderr}");
}

/// One call of a random workflow: its prompt's length, its output limit, and the
/// share of its worst case the server's reply reports (of the input the budget
/// estimates, and of `max_tokens`).
#[derive(Clone, Debug)]
struct Call {
    prompt_chars: usize,
    max_tokens: u64,
    input_share: f64,
    output_share: f64,
}

fn call() -> impl Strategy<Value = Call> {
    (1usize..4000, 1u64..3000, 0.0f64..=1.0, 0.0f64..=1.0).prop_map(|(p, m, i, o)| Call {
        prompt_chars: p,
        max_tokens: m,
        input_share: i,
        output_share: o,
    })
}

/// Answers a call with the usage its prompt asks for: `IN OUT|...` shares of the
/// input estimate of the whole body and of its `max_tokens`.
fn usage_reply(r: &Request) -> Reply {
    let body = r.json();
    let prompt = body["messages"][0]["content"].as_str().unwrap_or("");
    let mut shares = prompt.split('|').next().unwrap_or("").split(' ');
    let mut share = || {
        shares
            .next()
            .and_then(|s| s.parse::<f64>().ok())
            .unwrap_or(1.0)
    };
    let (input, output) = (share(), share());
    let estimate = tv_runtime::ledger::estimate_tokens(&body.to_string());
    let max = body["max_tokens"].as_u64().unwrap_or(0);
    Reply::json(
        200,
        json!({
            "model": "gpt-4o",
            "choices": [{"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": (estimate as f64 * input) as u64,
                      "completion_tokens": (max as f64 * output) as u64}
        }),
    )
}

fn request(c: &Call) -> LlmRequest {
    let head = format!("{} {}|", c.input_share, c.output_share);
    let prompt = format!("{head}{}", "x".repeat(c.prompt_chars));
    LlmRequest {
        query: None,
        requested_files: Vec::new(),
        task: TaskMeta::named("t#1").into(),
        system_prompt: String::new(),
        messages: vec![Message::user(prompt)].into(),
        context: Default::default(),
        model: Some("gpt-4o".into()),
        settings: tv_vm::bundle::ModelSettings {
            max_tokens: Some(c.max_tokens),
            ..Default::default()
        },
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Random workflows (calls of random size and output limit, several at once) and
    /// random replies within each call's worst case: the calls sent never cost more
    /// than the budget, the refused ones were never sent, and the budget's count of
    /// what was spent is the sum of the replies' costs.
    #[test]
    fn spend_never_exceeds_the_budget(
        calls in prop::collection::vec(call(), 1..12),
        at_once in 1usize..6,
        budget_microdollars in 0u64..30_000,
    ) {
        let rt = runtime();
        let server = rt.block_on(Server::start(|_, r| usage_reply(r)));
        let mut settings = Settings::new(server.url(), "gpt-4o");
        settings.max_retries = 0;
        let limit = budget_microdollars * 1_000_000;
        let ledger = Arc::new(Ledger {
            prices: Prices::builtin(),
            budget: Some(CostBudget::new(limit)),
            cache: None,
            shared: None,
        });
        let adapter = OpenAi::new(settings).expect("adapter").with_ledger(Some(ledger.clone()));
        let replies = rt.block_on(
            futures::stream::iter(calls.iter().map(request))
                .map(|r| { let a = &adapter; async move { a.complete(&r).await } })
                .buffer_unordered(at_once)
                .collect::<Vec<_>>(),
        );
        let mut spent = 0u64;
        let mut answered = 0;
        for reply in &replies {
            match reply {
                Ok(r) => {
                    answered += 1;
                    spent += r.cost.expect("gpt-4o has a price");
                }
                Err(e) => prop_assert!(
                    matches!(e.kind(), CallKind::Exhausted { resource: Resource::Cost, .. }),
                    "{e}"
                ),
            }
        }
        prop_assert!(spent <= limit, "spent {spent} of {limit}");
        let budget = ledger.budget.as_ref().expect("a budget");
        prop_assert_eq!(budget.spent(), spent);
        prop_assert_eq!(server.hits(), answered);
    }
}

/// The survey's first call is answered at once; every other is answered only after a
/// minute, so that it is still in flight when the run stops.
fn slow_after_the_first() -> impl Fn(usize, &Request) -> Reply + Send + Sync + 'static {
    |_, r| {
        let answer = reply("gpt-4o-mini-2024-07-18");
        if r.prompt().contains("Look at a.") {
            answer
        } else {
            answer.after(std::time::Duration::from_secs(60))
        }
    }
}

/// A call in flight when the run stops was sent, and the provider bills it: it is a
/// call of the run whose tokens and cost are unknown, never left out.
fn assert_abandoned(result: &Value, answered: u64, abandoned: u64) {
    let usage = &result["notes"]["usage"];
    assert_eq!(usage["calls"], json!(answered + abandoned), "{result:#}");
    assert_eq!(usage["abandonedCalls"], json!(abandoned), "{usage}");
    assert_eq!(usage["inputTokens"], json!(1000 * answered), "{usage}");
    assert_eq!(
        usage["costUsd"],
        Value::Null,
        "a partial sum is not the cost: {usage}"
    );
    let answered_model = &usage["byModel"]["gpt-4o-mini-2024-07-18"];
    assert_eq!(answered_model["calls"], json!(answered), "{usage}");
    assert!(answered_model["costUsd"].is_f64(), "{usage}");
    // The model asked for, as the provider's default names it.
    assert_eq!(
        usage["byModel"]["gpt-4o-mini"]["abandonedCalls"],
        json!(abandoned),
        "{usage}"
    );
}

#[test]
fn calls_in_flight_at_the_time_limit_count_as_abandoned_calls_of_unknown_cost() {
    let rt = runtime();
    let server = rt.block_on(Server::start(slow_after_the_first()));
    let dir = scratch("cost", "abandoned-at-timeout");
    let (code, result, stderr) = survey(&dir, &server, &["--timeout", "1"]);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(result["notes"]["error"]["resource"], "time", "{result:#}");
    // `a` was answered; `b` and then `c` (the map runs two at once) were in flight.
    assert_eq!(server.hits(), 3);
    assert_abandoned(&result, 1, 2);
}

#[test]
fn ctrl_c_stops_the_run_and_prints_its_result_with_the_calls_in_flight_counted() {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let rt = runtime();
    let server = rt.block_on(Server::start(slow_after_the_first()));
    let dir = scratch("cost", "abandoned-at-ctrl-c");
    let b = files::compiled(&dir, PROGRAM);
    let child = files::tvm(&[
        "run",
        b.to_str().expect("path"),
        "--provider",
        "openai",
        "--arg",
        r#"topics=["a","b","c"]"#,
    ])
    .env("OPENAI_BASE_URL", server.url())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .expect("tvm");
    files::wait_for(|| server.hits() == 3);
    kill(Pid::from_raw(child.id() as i32), Signal::SIGINT).expect("SIGINT");
    let out = child.wait_with_output().expect("tvm ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("tvm: interrupted: stopping the run"),
        "{stderr}"
    );
    let result: Value = serde_json::from_slice(&out.stdout).expect("the result is printed");
    let error = &result["notes"]["error"];
    assert_eq!(error["reason"], "execution_halted", "{result:#}");
    assert_eq!(error["message"], tv_runtime::INTERRUPTED);
    assert_abandoned(&result, 1, 2);
}
