//! `tvm` as a user runs it: exit codes and messages, on the checked-in golden bundle.

use crate::support::files;
use crate::support::http;

use http::{Reply, Server};
use serde_json::{json, Value};
use std::path::PathBuf;

fn golden() -> PathBuf {
    files::golden("code_review")
}

/// A runtime whose worker serves the test server while `tvm` runs as a child process.
fn server_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime")
}

fn tvm(args: &[&str]) -> (i32, String, String) {
    tvm_env(args, &[])
}

fn tvm_env(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    files::run_tvm(args, env)
}

/// Good arguments for the code-review bundle's `review` entry.
const REVIEW: [&str; 6] = [
    "--entry",
    "review",
    "--arg",
    "diff=x",
    "--arg",
    "checklist=[]",
];

fn run(extra: &[&str]) -> (i32, String, String) {
    let g = golden();
    let mut args = vec!["run", g.to_str().expect("path"), "--provider", "echo"];
    args.extend_from_slice(extra);
    tvm(&args)
}

#[test]
fn a_completed_run_prints_its_result_as_json_and_exits_zero() {
    let g = golden();
    let mut args = files::summarize_change(g.to_str().expect("path"));
    args.extend_from_slice(&["--provider", "echo"]);
    let (code, stdout, _) = tvm(&args);
    assert_eq!(code, 0);
    let r: serde_json::Value = serde_json::from_str(&stdout).expect("JSON on stdout");
    assert_eq!(r["status"], "COMPLETE");
    // The echo provider answers with what the task would send: system text, then prompt.
    assert_eq!(
        r["content"],
        "System:\nYou are a senior engineer who writes short, precise summaries.\n\n\
         Prompt:\nSummarise this change in three sentences for ops:\n+x"
    );
}

#[test]
fn a_dry_run_of_a_typed_task_answers_the_smallest_value_of_its_type() {
    // `review` answers a `Review`: the echo provider answers its required fields with
    // their smallest values, which fits it.
    let (code, stdout, _) = run(&[
        "--entry",
        "review",
        "--args-json",
        r#"{"diff": "+x", "checklist": ["a"]}"#,
    ]);
    assert_eq!(code, 0, "{stdout}");
    let r: serde_json::Value = serde_json::from_str(&stdout).expect("JSON on stdout");
    assert_eq!(
        (&r["content"], &r["parsedContent"]),
        (
            &json!(r#"{"approved":false,"findings":[]}"#),
            &json!({"approved": false, "findings": []})
        )
    );
}

#[test]
fn a_failed_run_exits_one() {
    // No assistant turn is allowed, so the first model call fails the run.
    let (code, stdout, _) = run(&[
        "--entry",
        "review",
        "--args-json",
        r#"{"diff": "+x", "checklist": ["a"]}"#,
        "--max-turns",
        "0",
    ]);
    assert_eq!(code, 1);
    assert!(stdout.contains("RESOURCE_EXHAUSTION"), "{stdout}");
}

#[test]
fn usage_errors_exit_two_with_a_clear_message() {
    let cases: &[(&[&str], &str)] = &[
        // The bundle's only entry point (the items it calls are not) runs by default.
        (&[], "missing argument `diff` for `review_pull_request`"),
        (&["--entry", "nope"], "no entry point `nope`"),
        (
            &["--entry", "summarize_change", "--arg", "diff=x"],
            "missing argument `audience`",
        ),
        (
            &[
                "--entry",
                "summarize_change",
                "--arg",
                "diff=x",
                "--arg",
                "audience=y",
                "--arg",
                "tone=z",
            ],
            "has no parameter `tone`",
        ),
        (
            &[
                "--entry",
                "review",
                "--arg",
                "diff=x",
                "--arg",
                "checklist=[oops",
            ],
            "`checklist` expects `string[]` (as JSON), got `[oops`",
        ),
    ];
    for (args, expected) in cases {
        let (code, _, stderr) = run(args);
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

#[test]
fn no_provider_configured_says_how_to_choose_one() {
    let g = golden();
    let mut args = vec!["run", g.to_str().expect("path")];
    args.extend(REVIEW);
    let (code, _, stderr) = tvm(&args);
    assert_eq!(code, 2);
    assert!(stderr.contains("no provider is configured"), "{stderr}");
    assert!(stderr.contains("TVM_PROVIDER"), "{stderr}");
}

#[test]
fn a_damaged_bundle_is_refused_with_exit_two() {
    let dir = std::env::temp_dir().join(format!("tvm-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut bytes = std::fs::read(golden()).expect("golden");
    let last = bytes.len() - 1;
    bytes[last] ^= 0x40;
    let bad = dir.join("bad.bin");
    std::fs::write(&bad, &bytes).expect("write");
    let (code, _, stderr) = tvm(&["run", bad.to_str().expect("path"), "--provider", "echo"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("checksum does not match"), "{stderr}");
    let (code, _, stderr) = tvm(&["disasm", bad.to_str().expect("path")]);
    assert_eq!(code, 2, "{stderr}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A bundle written by an older `tvc` (format 3) is refused like a damaged one, with
/// a message that names its format and says to recompile it.
#[test]
fn a_bundle_of_an_older_format_is_refused_with_exit_two_and_told_to_recompile() {
    let old = files::golden("compat/code_review.v3");
    let old = old.to_str().expect("path");
    let (code, _, stderr) = tvm(&["run", old, "--provider", "echo"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("format 3"), "{stderr}");
    assert!(
        stderr.contains("recompile the templates with this version's tvc"),
        "{stderr}"
    );
    let (code, _, stderr) = tvm(&["disasm", old]);
    assert_eq!(code, 2, "{stderr}");
}

#[test]
fn disasm_prints_the_listing() {
    let g = golden();
    let (code, stdout, _) = tvm(&["disasm", g.to_str().expect("path")]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("entry review_pull_request -> fn2"),
        "{stdout}"
    );
    // The bundle names its file within the folder it was compiled from.
    assert!(stdout.contains("# code_review.xml:"), "{stdout}");
}

#[test]
fn a_run_against_an_openai_compatible_server_sends_the_prompt_and_prints_the_reply() {
    let rt = server_runtime();
    let reply = json!({"choices": [{"message": {"role": "assistant", "content": "Ship it."}}],
                       "usage": {"prompt_tokens": 7, "completion_tokens": 3}});
    let server = rt.block_on(Server::scripted(vec![Reply::json(200, reply)]));
    let g = golden();
    let url = server.url();
    let (code, stdout, stderr) = tvm_env(
        &files::summarize_change(g.to_str().expect("path")),
        &[
            ("OPENAI_BASE_URL", url.as_str()),
            ("OPENAI_API_KEY", "sk-test-not-real"),
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let r: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(r["content"], "Ship it.");
    assert_eq!(r["notes"]["usage"]["inputTokens"], json!(7));
    assert_eq!(r["notes"]["usage"]["outputTokens"], json!(3));
    let req = &server.requests()[0];
    assert_eq!(req.path, "/chat/completions");
    assert_eq!(req.header("authorization"), Some("Bearer sk-test-not-real"));
    let body = req.json();
    assert_eq!(body["model"], "gpt-4o-mini");
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": "Summarise this change in three sentences for ops:\n+x"})
    );
    assert!(!stdout.contains("sk-test") && !stderr.contains("sk-test"));
}

#[test]
fn a_provider_without_its_key_is_a_usage_error() {
    let g = golden();
    let mut args = vec!["run", g.to_str().expect("path"), "--provider", "anthropic"];
    args.extend(REVIEW);
    let (code, _, stderr) = tvm(&args);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("needs provider `anthropic`, but neither ANTHROPIC_API_KEY"),
        "{stderr}"
    );
}

#[test]
fn a_recorded_run_replays_byte_for_byte_without_a_server() {
    let rt = server_runtime();
    let server = rt.block_on(Server::start(|i, req| {
        let prompt = req.json()["messages"][1]["content"].as_str().unwrap_or("").to_string();
        let body = json!({"choices": [{"message": {"role": "assistant", "content": format!("reply {i} to {}", prompt.len())}}],
                          "usage": {"prompt_tokens": 1, "completion_tokens": 1}});
        Reply::json(200, body)
    }));
    let dir = std::env::temp_dir().join(format!("tvm-cassette-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let cassette = dir.join("run.jsonl");
    let g = golden();
    let common = files::summarize_change(g.to_str().expect("path"));
    let mut record = common.to_vec();
    record.extend([
        "--provider",
        "openai",
        "--record",
        cassette.to_str().expect("path"),
    ]);
    let url = server.url();
    let (code, live, stderr) = tvm_env(&record, &[("OPENAI_BASE_URL", url.as_str())]);
    assert_eq!(code, 0, "{stderr}");
    drop(server);
    let mut replay = common.to_vec();
    replay.extend([
        "--provider",
        "replay",
        "--cassette",
        cassette.to_str().expect("path"),
    ]);
    let (code, replayed, stderr) = tvm(&replay);
    assert_eq!(code, 0, "{stderr}");
    // The replay is the run again, except that its replies were paid for already.
    let (live, replayed): (Value, Value) = (
        serde_json::from_str(&live).expect("JSON"),
        serde_json::from_str(&replayed).expect("JSON"),
    );
    let usage = &replayed["notes"]["usage"];
    assert_eq!(usage["costUsd"], json!(0.0), "{replayed}");
    assert_eq!(usage["cachedCalls"], usage["calls"], "{replayed}");
    assert_eq!(unpaid(live), unpaid(replayed.clone()));
    let mut other = replay.clone();
    other[5] = "diff=something else";
    let (code, stdout, _) = tvm(&other);
    assert_eq!(code, 1);
    assert!(
        stdout.contains("the cassette has no reply for request"),
        "{stdout}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A planner that asks for a translation as a subtask, then reports.
const PLANNER: &str = r#"<library>
  <template name="translate" params="text,language">
    <task><description>Translate the text into a language</description>
      <instructions>Translate into {{language}}: {{text}}</instructions></task>
  </template>
  <task name="plan"><instructions>Plan the greeting</instructions></task>
</library>"#;

/// The parent of a subtask is sent the subtask's result without what the run spent on
/// it, so its next request is the same when the subtask's reply comes from a cassette
/// (cost 0, cached) as when it came from the provider: the run replays.
#[test]
fn a_run_with_a_subtask_replays_from_its_cassette() {
    let rt = server_runtime();
    let server = rt.block_on(Server::start(|_, req| {
        let messages = req.json()["messages"].clone();
        let last = messages.as_array().and_then(|m| m.last()).cloned();
        let last = last.map(|m| m["content"].as_str().unwrap_or("").to_string());
        let content = match last.as_deref().unwrap_or("") {
            "Plan the greeting" => json!({"status": "CONTINUATION", "subtask_request":
                {"type": "atomic", "description": "translate the text",
                 "inputs": {"text": "hello", "language": "fr"}}})
            .to_string(),
            l if l.starts_with("Subtask result:") => "The team is greeted.".to_string(),
            _ => "bonjour".to_string(),
        };
        Reply::completion(&content, 100, 10)
    }));
    let dir = files::TempDir::new("cassette-subtask");
    let program = files::compiled(dir.path(), PLANNER);
    let cassette = dir.path().join("plan.jsonl");
    let (program, cassette) = (program.to_str().unwrap(), cassette.to_str().unwrap());
    let url = server.url();
    let live = ["run", program, "--entry", "plan", "--provider", "openai"];
    let (code, stdout, stderr) = tvm_env(
        &[&live[..], &["--record", cassette]].concat(),
        &[("OPENAI_BASE_URL", url.as_str())],
    );
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert_eq!(server.hits(), 3);
    let replay = [
        "run",
        program,
        "--entry",
        "plan",
        "--provider",
        "replay",
        "--cassette",
        cassette,
    ];
    let (code, stdout, stderr) = tvm(&replay);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let replayed: Value = serde_json::from_str(&stdout).expect("JSON");
    assert_eq!(replayed["content"], "The team is greeted.");
    assert_eq!(replayed["notes"]["usage"]["cachedCalls"], 3, "{replayed:#}");
}

#[test]
fn a_trace_has_one_line_per_host_call_and_no_secret() {
    let rt = server_runtime();
    let reply = json!({"choices": [{"message": {"role": "assistant", "content": "fine"}}], "usage": {"prompt_tokens": 2, "completion_tokens": 1}});
    let server = rt.block_on(Server::scripted(vec![Reply::json(200, reply)]));
    let dir = std::env::temp_dir().join(format!("tvm-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let trace = dir.join("trace.jsonl");
    let trace_arg = ["--trace", trace.to_str().expect("path")];
    let (code, _, stderr) = run_against(&server.url(), &trace_arg);
    assert_eq!(code, 0, "{stderr}");
    let text = std::fs::read_to_string(&trace).expect("trace");
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["kind"], "llm");
    assert_eq!(lines[0]["outcome"], "ok");
    assert_eq!(lines[0]["tokens"], json!({"input": 2, "output": 1}));
    assert!(lines[0]["prompt"]
        .as_str()
        .unwrap_or("")
        .starts_with("Summarise this change"));
    assert!(lines[0]["ms"].is_u64());
    assert!(!text.contains("sk-test"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_setting_the_model_does_not_take_is_left_out_of_the_request_and_the_trace_and_said_in_the_notes(
) {
    let rt = server_runtime();
    let reply = json!({"choices": [{"message": {"role": "assistant", "content": "fine"}}], "usage": {"prompt_tokens": 2, "completion_tokens": 1}});
    let server = rt.block_on(Server::scripted(vec![Reply::json(200, reply)]));
    let dir = std::env::temp_dir().join(format!("tvm-refused-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let trace = dir.join("trace.jsonl");
    let flags = [
        "--force-model",
        "openai:o3",
        "--temperature",
        "0.5",
        "--seed",
        "3",
        "--trace",
        trace.to_str().expect("path"),
    ];
    let (code, stdout, stderr) = run_against(&server.url(), &flags);
    assert_eq!(code, 0, "{stderr}");
    let body = server.requests()[0].json();
    assert_eq!(
        (body.get("temperature"), &body["seed"]),
        (None, &json!(3)),
        "{body}"
    );
    let line: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&trace)
            .expect("trace")
            .lines()
            .next()
            .expect("a line"),
    )
    .expect("JSON");
    let settings = &line["settings"];
    assert_eq!(
        (&settings["temperature"], &settings["seed"]),
        (&json!(null), &json!(3)),
        "{line}"
    );
    let result: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    let warnings = result["notes"]["warnings"].to_string();
    assert!(
        warnings.contains("`o3` does not take `temperature`"),
        "{result}"
    );
    assert_eq!(
        stderr.matches("does not take `temperature`").count(),
        1,
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Runs the golden bundle's `summarize_change` against `url` with `extra` flags.
fn run_against(url: &str, extra: &[&str]) -> (i32, String, String) {
    let g = golden();
    let mut args = files::summarize_change(g.to_str().expect("path"));
    args.extend_from_slice(&["--provider", "openai"]);
    args.extend_from_slice(extra);
    tvm_env(
        &args,
        &[
            ("OPENAI_BASE_URL", url),
            ("OPENAI_API_KEY", "sk-test-not-real"),
        ],
    )
}

#[test]
fn retries_and_the_request_timeout_are_set_on_the_command_line() {
    let rt = server_runtime();
    let failing = rt.block_on(Server::scripted(vec![Reply::json(
        503,
        json!({"error": {"message": "overloaded"}}),
    )]));
    let (code, stdout, _) = run_against(&failing.url(), &["--retries", "1"]);
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("gave up after 2 attempts"), "{stdout}");
    assert_eq!(failing.hits(), 2);

    let slow = json!({"choices": [{"message": {"role": "assistant", "content": "late"}}]});
    let slow = rt.block_on(Server::scripted(vec![
        Reply::json(200, slow).after(std::time::Duration::from_secs(5))
    ]));
    let args = ["--retries", "0", "--request-timeout", "1"];
    let (code, stdout, _) = run_against(&slow.url(), &args);
    assert_eq!(code, 1, "{stdout}");
    let r: serde_json::Value = serde_json::from_str(&stdout).expect("JSON");
    let message = r["notes"]["error"]["message"].as_str().unwrap_or("");
    assert_eq!(
        message,
        "openai: no reply within 1s (gave up after 1 attempt)"
    );
    assert_eq!(slow.hits(), 1);
}

/// A result without what tells a paid call from a replayed one: cost and cache marks.
fn unpaid(mut v: Value) -> Value {
    match &mut v {
        Value::Object(m) => {
            for k in ["costUsd", "cachedCalls", "cached"] {
                m.remove(k);
            }
            for x in m.values_mut() {
                *x = unpaid(x.take());
            }
        }
        Value::Array(items) => {
            for x in items {
                *x = unpaid(x.take());
            }
        }
        _ => {}
    }
    v
}
