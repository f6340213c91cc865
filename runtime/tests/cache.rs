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
