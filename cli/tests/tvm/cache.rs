//! The reply cache (DESIGN §15): `tvm run --cache DIR` twice against a server on
//! 127.0.0.1, checking what the second run sends, what its result says, and what the
//! folder holds.

use crate::support::files::{self, run_tvm, runtime, scratch};
use crate::support::http::{Reply, Request, Server};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Three steps; the last one's instructions are `last`.
fn program(last: &str) -> String {
    format!(
        r#"<library>
  <task name="survey" type="sequential">
    <inputs><input name="topics" type="string[]">What to look at</input></inputs>
    <steps>
      <task type="map" over="topics" as="topic" concurrency="1">
        <task><instructions>Look at {{{{topic}}}}.</instructions></task>
      </task>
      <task><instructions>{last}</instructions></task>
    </steps>
  </task>
</library>"#
    )
}

/// A chat completion of `content` from gpt-4o-mini.
fn completion(content: String) -> Reply {
    Reply::json(
        200,
        json!({
            "model": "gpt-4o-mini",
            "choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10}
        }),
    )
}

/// A server whose every reply is different: `reply N`, N counting from 0.
async fn counting() -> Server {
    let n = Arc::new(AtomicUsize::new(0));
    Server::start(move |_, _: &Request| {
        let i = n.fetch_add(1, Ordering::SeqCst);
        completion(format!("reply {i}"))
    })
    .await
}

/// A server whose reply depends on the request only: the same request, the same reply.
async fn deterministic() -> Server {
    Server::start(|_, r: &Request| completion(format!("a reply to {} bytes", r.body.len()))).await
}

struct Run {
    code: i32,
    result: Value,
    stderr: String,
}

fn run(bundle: &Path, server: &Server, cache: &Path, topics: &str, env: &[(&str, &str)]) -> Run {
    let args = [
        "run",
        bundle.to_str().expect("path"),
        "--provider",
        "openai",
        "--arg",
        topics,
        "--cache",
        cache.to_str().expect("path"),
    ];
    let url = server.url();
    let mut vars = vec![("OPENAI_BASE_URL", url.as_str())];
    vars.extend(env);
    let (code, stdout, stderr) = run_tvm(&args, &vars);
    let result = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    Run {
        code,
        result,
        stderr,
    }
}

fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                found.push(p);
            }
        }
    }
    found
}

#[test]
fn a_second_run_is_answered_from_the_cache_at_no_cost() {
    let rt = runtime();
    let server = rt.block_on(counting());
    let dir = scratch("cache", "again");
    let (b, cache) = (
        files::compiled(&dir, &program("Sum up.")),
        dir.join("cache"),
    );
    let first = run(&b, &server, &cache, r#"topics=["a","b"]"#, &[]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(server.hits(), 3);
    let again = run(&b, &server, &cache, r#"topics=["a","b"]"#, &[]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(server.hits(), 3, "nothing more is sent");
    assert_eq!(again.result["content"], first.result["content"]);
    let usage = &again.result["notes"]["usage"];
    assert_eq!(usage["calls"], json!(3), "{usage}");
    assert_eq!(usage["cachedCalls"], json!(3), "{usage}");
    assert_eq!(usage["costUsd"], json!(0.0), "{usage}");
    assert_eq!(again.result["notes"]["cached"], json!(true));
}

#[test]
fn editing_one_template_sends_only_the_requests_whose_text_changed() {
    let rt = runtime();
    let server = rt.block_on(counting());
    let dir = scratch("cache", "edit");
    let cache = dir.join("cache");
    let topics = r#"topics=["a","b","c"]"#;
    let before = run(
        &files::compiled(&dir, &program("Sum up.")),
        &server,
        &cache,
        topics,
        &[],
    );
    assert_eq!(before.code, 0, "{}", before.stderr);
    assert_eq!(server.hits(), 4);
    let after = run(
        &files::compiled(&dir, &program("Sum up in one line.")),
        &server,
        &cache,
        topics,
        &[],
    );
    assert_eq!(after.code, 0, "{}", after.stderr);
    assert_eq!(server.hits(), 5, "only the edited step is sent");
    let sent = server.requests();
    let last = sent.last().expect("a request").json();
    assert!(last.to_string().contains("Sum up in one line."), "{last}");
    assert_eq!(after.result["notes"]["usage"]["cachedCalls"], json!(3));
}

#[test]
fn the_same_request_asked_three_times_keeps_three_samples() {
    let rt = runtime();
    let server = rt.block_on(counting());
    let dir = scratch("cache", "samples");
    let (b, cache) = (
        files::compiled(&dir, &program("Sum up.")),
        dir.join("cache"),
    );
    let topics = r#"topics=["same","same","same"]"#;
    let first = run(&b, &server, &cache, topics, &[]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(server.hits(), 4, "identical requests are each sent");
    let again = run(&b, &server, &cache, topics, &[]);
    assert_eq!(server.hits(), 4);
    // The last step saw the three samples, as in the first run.
    assert_eq!(again.result["content"], first.result["content"]);
    let prompt = server.requests()[3].json().to_string();
    for i in 0..3 {
        assert!(prompt.contains(&format!("reply {i}")), "{prompt}");
    }
}

#[test]
fn a_damaged_entry_is_a_miss_and_a_warning() {
    let rt = runtime();
    let server = rt.block_on(deterministic());
    let dir = scratch("cache", "damaged");
    let (b, cache) = (
        files::compiled(&dir, &program("Sum up.")),
        dir.join("cache"),
    );
    let first = run(&b, &server, &cache, r#"topics=["a"]"#, &[]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let files = entries(&cache);
    assert_eq!(files.len(), 2, "{files:?}");
    std::fs::write(&files[0], "{not json").expect("damage an entry");
    let again = run(&b, &server, &cache, r#"topics=["a"]"#, &[]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(
        server.hits(),
        3,
        "the damaged entry's request is sent again"
    );
    assert!(again.stderr.contains("warning"), "{}", again.stderr);
    assert_eq!(again.result["notes"]["usage"]["cachedCalls"], json!(1));
    // The entry was written again, whole.
    let third = run(&b, &server, &cache, r#"topics=["a"]"#, &[]);
    assert_eq!(server.hits(), 3);
    assert!(!third.stderr.contains("warning"), "{}", third.stderr);
}

#[test]
fn no_cache_entry_holds_the_api_key() {
    let rt = runtime();
    let server = rt.block_on(counting());
    let dir = scratch("cache", "secret");
    let (b, cache) = (
        files::compiled(&dir, &program("Sum up.")),
        dir.join("cache"),
    );
    let key = "sk-test-0123456789abcdef";
    let r = run(
        &b,
        &server,
        &cache,
        r#"topics=["a"]"#,
        &[("OPENAI_API_KEY", key)],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let files = entries(&cache);
    assert!(!files.is_empty());
    for f in files {
        let text = std::fs::read_to_string(&f).expect("an entry");
        assert!(!text.contains(key), "{}", f.display());
        assert!(!f.to_string_lossy().contains(key));
    }
}

/// A parent that may spawn, and the template its subtask runs.
const SPAWNING: &str = r#"<library>
  <template name="shout" params="word">
    <task><description>shout the word</description><instructions>Shout {{word}}.</instructions></task>
  </template>
  <task name="plan">
    <instructions>Plan the release.</instructions>
    <subtasks>enabled</subtasks>
  </task>
</library>"#;

/// The model of [`SPAWNING`]: the parent calls the spawning tool, the subtask shouts,
/// and the parent's follow-up turn, which holds the subtask's result, is answered
/// with the text of that turn, so that a result shows what the model was sent.
fn spawning_model(_: usize, r: &Request) -> Reply {
    let body = r.json();
    let last = r.prompt();
    let message = if last.starts_with("Subtask result:") {
        json!({"role": "assistant", "content": format!("done after: {last}")})
    } else if last.contains("Plan the release") {
        let call =
            json!({"type": "atomic", "description": "shout the word", "inputs": {"word": "ship"}});
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "spawn_subtask", "arguments": call.to_string()}}]})
    } else {
        json!({"role": "assistant", "content": "SHIP!"})
    };
    assert_eq!(body["model"], "gpt-4o-mini");
    Reply::json(
        200,
        json!({"model": "gpt-4o-mini-2024-07-18",
               "choices": [{"message": message, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 120, "completion_tokens": 12,
                         "prompt_tokens_details": {"cached_tokens": 64}}}),
    )
}

#[test]
fn a_subtask_workflow_replays_from_its_cassette_and_its_cache_without_calling_the_server() {
    let rt = runtime();
    let server = rt.block_on(Server::start(spawning_model));
    let dir = scratch("cache", "subtask");
    let (b, cache, cassette) = (
        files::compiled(&dir, SPAWNING),
        dir.join("cache"),
        dir.join("plan.jsonl"),
    );
    let url = server.url();
    let bundle = b.to_str().expect("path");
    let (cache, cassette) = (
        cache.to_str().expect("path"),
        cassette.to_str().expect("path"),
    );
    let run = |extra: &[&str]| {
        let mut args = vec!["run", bundle, "--entry", "plan"];
        args.extend_from_slice(extra);
        let (code, stdout, stderr) = run_tvm(&args, &[("OPENAI_BASE_URL", url.as_str())]);
        let result: Value = serde_json::from_str(&stdout).unwrap_or(Value::Null);
        assert_eq!(code, 0, "{extra:?}: {stdout} {stderr}");
        result
    };
    let live = run(&[
        "--provider",
        "openai",
        "--cache",
        cache,
        "--record",
        cassette,
    ]);
    assert_eq!(
        server.hits(),
        3,
        "the parent, its subtask, the parent again"
    );
    let sent = server.requests()[2].prompt();
    assert!(
        sent.starts_with("Subtask result:") && sent.contains("SHIP!"),
        "{sent}"
    );
    for metadata in ["usage", "cached", "costUsd", "inputTokens", "warnings"] {
        assert!(
            !sent.contains(metadata),
            "the model was sent `{metadata}`: {sent}"
        );
    }
    let replayed = run(&["--provider", "replay", "--cassette", cassette]);
    assert_eq!(replayed["content"], live["content"], "{replayed}");
    let cached = run(&["--provider", "openai", "--cache", cache]);
    assert_eq!(
        server.hits(),
        3,
        "every call of the second run is in the cache"
    );
    assert_eq!(cached["content"], live["content"]);
    assert_eq!(
        cached["notes"]["usage"]["cachedCalls"],
        json!(3),
        "{cached}"
    );
}

#[test]
fn a_cassette_and_the_cache_answer_only_the_model_that_was_asked() {
    let rt = runtime();
    let server = rt.block_on(deterministic());
    let dir = scratch("cache", "model");
    let b = files::compiled(&dir, &program("Sum up."));
    let (cache, cassette) = (dir.join("cache"), dir.join("survey.jsonl"));
    let (bundle, cache, cassette) = (
        b.to_str().expect("path"),
        cache.to_str().expect("path"),
        cassette.to_str().expect("path"),
    );
    let url = server.url();
    let run = |extra: &[&str], env: &[(&str, &str)]| {
        let mut args = vec!["run", bundle, "--arg", r#"topics=["a"]"#];
        args.extend_from_slice(extra);
        let mut vars = vec![("OPENAI_BASE_URL", url.as_str())];
        vars.extend_from_slice(env);
        let (code, stdout, stderr) = run_tvm(&args, &vars);
        let result: Value = serde_json::from_str(&stdout).unwrap_or(Value::Null);
        (code, result, stderr)
    };
    let openai = ["--provider", "openai", "--cache", cache];
    let (code, _, stderr) = run(
        &[
            &openai[..],
            &["--model", "gpt-4o-mini", "--record", cassette],
        ]
        .concat(),
        &[],
    );
    assert_eq!((code, server.hits()), (0, 2), "{stderr}");
    let entry: Value = serde_json::from_str(
        std::fs::read_to_string(cassette)
            .expect("cassette")
            .lines()
            .next()
            .expect("an entry"),
    )
    .expect("JSON");
    assert_eq!(entry["request"]["model"], "gpt-4o-mini", "{entry}");
    // Another model is asked again, whether named by --model or TVM_MODEL.
    let (code, _, stderr) = run(&[&openai[..], &["--model", "gpt-4o"]].concat(), &[]);
    assert_eq!((code, server.hits()), (0, 4), "{stderr}");
    let (code, _, stderr) = run(&openai, &[("TVM_MODEL", "gpt-4.1")]);
    assert_eq!((code, server.hits()), (0, 6), "{stderr}");
    let (code, _, stderr) = run(&[&openai[..], &["--model", "gpt-4o-mini"]].concat(), &[]);
    assert_eq!(
        (code, server.hits()),
        (0, 6),
        "the model asked first is cached: {stderr}"
    );
    // The cassette replays for its model, and for a replay that names none.
    let replay = ["--provider", "replay", "--cassette", cassette];
    let (code, r, _) = run(&[&replay[..], &["--model", "gpt-4o-mini"]].concat(), &[]);
    assert_eq!((code, &r["status"]), (0, &json!("COMPLETE")), "{r}");
    let (code, r, _) = run(&replay, &[]);
    assert_eq!((code, &r["status"]), (0, &json!("COMPLETE")), "{r}");
    let (code, r, _) = run(&replay, &[("TVM_MODEL", "gpt-4o")]);
    assert_eq!(code, 1, "{r}");
    let message = r["notes"]["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("model `gpt-4o`")
            && message.contains("for model `gpt-4o-mini`, and this run asks for model `gpt-4o`"),
        "{message}"
    );
}
