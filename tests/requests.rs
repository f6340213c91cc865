//! What every run fixture sends to each provider, frozen in `snapshots/requests`: a
//! changed byte in a body or a cassette key re-bills every cached or recorded request of
//! a user, so a change that means to keep them must leave these snapshots as they are.
//!
//! Each program under `tests/fixtures/runs` runs as `tests/runs.rs` runs it (the same
//! deterministic answers, the same `args:` line), and every LLM request the machine
//! makes is then sent, in order, through the real adapters to the scripted HTTP server
//! on 127.0.0.1, each inside the recording layer `tvm run --record` puts around it. A
//! request whose task names its provider goes to that one only, as in a run. The
//! snapshot shows, per request, the cassette key with the normalized request it hashes,
//! and each body exactly as the server received it (the reply cache keys on that body).
//! Each OpenAI body is also checked against OpenAI's published
//! `CreateChatCompletionRequest`.
//!
//! The adapters have the settings a user gets with no flags (`gpt-4o-mini`,
//! `claude-sonnet-4-5`, native structured output), pointed at the local server. What
//! the run host adds to a request before its adapter takes it (named files and
//! workspace excerpts in the context, `--force-model`, run defaults) is not part of
//! this baseline: the bodies are those of the machine's requests as they are.

use crate::http::{self, Reply, Server};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;
use tv_runtime::cassette::{RecordMode, Recorder};
use tv_runtime::model::{Model, Recorded};
use tv_runtime::providers::{Anthropic, OpenAi, Settings};
use tv_stdlib::models::{parse_model, Provider};
use tv_test_support::openapi;
use tv_test_support::temp::TempDir;
use tv_tests::{each_fixture, fixtures, in_suite, run_with, Fixture};
use tv_vm::host::{Host, HostReply, HostRequest, LlmRequest};
use tv_vm::limits::Limits;

/// Answers as `tests/runs.rs`' host does ([`crate::runs::answer`]), so that the
/// requests are the ones its snapshots show; keeps every LLM request.
#[derive(Default)]
struct Asked {
    requests: Vec<LlmRequest>,
}

impl Host for Asked {
    fn call(&mut self, request: &HostRequest) -> HostReply {
        if let HostRequest::Llm(r) = request {
            self.requests.push(r.clone());
        }
        crate::runs::answer(request)
    }
}

/// Every LLM request the fixture's run makes, in order.
fn requests_of(f: &Fixture) -> Vec<LlmRequest> {
    let bundle = crate::runs::verified(f);
    let entry = bundle.entries.first().expect("an entry").name.clone();
    let mut host = Asked::default();
    let args = crate::runs::args_of(&std::fs::read_to_string(&f.path).expect("fixture"));
    run_with(&bundle, &entry, args, Limits::default(), &mut host);
    host.requests
}

/// A successful reply in the shape of the API the request was sent to: what it says
/// does not matter, only that the adapter (and so the recorder) takes it.
fn provider(_: usize, req: &http::Request) -> Reply {
    if req.path.ends_with("/messages") {
        let reply = json!({
            "id": "msg_1", "type": "message", "role": "assistant",
            "content": [{"type": "text", "text": "ok"}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 1, "output_tokens": 1}
        });
        Reply::json(200, reply)
    } else {
        Reply::completion("ok", 1, 1)
    }
}

/// The provider a run sends `r` to whatever its own is, when its task names one
/// (`<provider>`, or a `provider:` prefix on its model), as the run host chooses.
fn named_provider(r: &LlmRequest) -> Option<Provider> {
    let named = r.task.provider.as_deref().and_then(Provider::parse);
    let prefixed = r.model.as_deref().and_then(|m| parse_model(m).ok());
    named.or(prefixed.and_then(|m| m.provider))
}

/// The two adapters with the settings a user gets with no flags, sending to `server`,
/// each inside the recording layer `--record` puts around it, writing to one cassette.
struct Adapters {
    openai: Recorded,
    anthropic: Recorded,
}

impl Adapters {
    fn new(server: &Server, cassette: &Path) -> Adapters {
        let base = server.url();
        let openai =
            Settings::openai_from_vars(|k| (k == "OPENAI_BASE_URL").then(|| format!("{base}/v1")));
        let anthropic =
            Settings::anthropic_from_vars(|k| (k == "ANTHROPIC_BASE_URL").then(|| base.clone()));
        let recorder = Arc::new(Recorder::create(cassette, RecordMode::New).expect("cassette"));
        Adapters {
            openai: Recorded {
                inner: Arc::new(OpenAi::new(openai).expect("adapter")),
                recorder: recorder.clone(),
            },
            anthropic: Recorded {
                inner: Arc::new(Anthropic::new(anthropic).expect("adapter")),
                recorder,
            },
        }
    }
}

/// `r` sent through `adapter` to `server`: the body as the server received it, with
/// what the adapter left out of it (a warning each).
async fn sent(server: &Server, adapter: &Recorded, r: &LlmRequest, what: &str) -> String {
    let reply = adapter.complete(r).await;
    let reply = reply.unwrap_or_else(|e| panic!("{what}: {e}"));
    let sent = server
        .requests()
        .pop()
        .expect("a request reached the server");
    let body = sent.json();
    // The snapshot shows the body as parsed; it is the body only if writing it again
    // gives the very bytes sent (key order, escapes, numbers).
    let written = serde_json::to_string(&body).expect("json");
    assert_eq!(
        written, sent.body,
        "{what}: the body sent is not what is shown"
    );
    if sent.path == "/v1/chat/completions" {
        if let Err(errors) = openapi::validate(&body) {
            let errors = errors.join("\n  ");
            panic!("{what}: the body breaks OpenAI's CreateChatCompletionRequest:\n  {errors}\n{body:#}");
        }
    }
    let mut out = format!("body, POST {}:\n{body:#}\n", sent.path);
    for w in &reply.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    out
}

/// The snapshot of one fixture: each of its requests sent through both adapters, or
/// through the one of the provider its task names. Both record the same cassette key
/// when the task names its model; else each asks its own default, and the key shown is
/// the first adapter's.
async fn shown(f: &Fixture, server: &Server, adapters: &Adapters, cassette: &Path) -> String {
    let requests = requests_of(f);
    let mut out = format!("LLM requests: {}\n", requests.len());
    for (i, r) in requests.iter().enumerate() {
        let _ = writeln!(out, "\n=== request {}: task `{}`", i + 1, r.task.name);
        let named = named_provider(r);
        let before = entries(cassette).len();
        let mut bodies = String::new();
        for (provider, adapter) in [
            (Provider::OpenAi, &adapters.openai),
            (Provider::Anthropic, &adapters.anthropic),
        ] {
            let name = provider.as_str();
            let _ = write!(bodies, "--- {name} ");
            if named.is_some_and(|n| n != provider) {
                let _ = writeln!(bodies, "(not sent: the task names another provider)");
                continue;
            }
            let what = format!("{} request {}: {name}", f.name, i + 1);
            bodies.push_str(&sent(server, adapter, r, &what).await);
        }
        out.push_str(&recorded(
            cassette,
            before,
            &format!("{} request {}", f.name, i + 1),
        ));
        out.push_str(&bodies);
    }
    out
}

/// The cassette key of the request whose entries the recorder wrote from entry
/// `before` on, with the normalized request it hashes. The adapters record the same
/// request, but for the model each asks when the task names none.
fn recorded(cassette: &Path, before: usize, what: &str) -> String {
    let recorded = entries(cassette).split_off(before);
    let unnamed = |e: &Value| {
        let mut request = e["request"].clone();
        request["model"] = Value::Null;
        request
    };
    let first = recorded.first().expect("the request recorded");
    let same = recorded.iter().all(|e| unnamed(e) == unnamed(first));
    assert!(same, "{what}: the adapters record different requests");
    let key = first["key"].as_str().expect("a key");
    let request = serde_json::to_string_pretty(&first["request"]).expect("json");
    format!("cassette key: {key}\ncassette request (what the key hashes):\n{request}\n")
}

/// The entries the recorder wrote so far.
fn entries(cassette: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(cassette).expect("the cassette");
    let entry = |l: &str| serde_json::from_str(l).expect("a cassette entry is JSON");
    text.lines().map(entry).collect()
}

#[test]
fn every_run_fixture_sends_each_provider_the_bodies_and_cassette_keys_its_snapshot_shows() {
    let all = fixtures("runs");
    assert!(all.len() >= 20, "only {} run fixtures", all.len());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let server = rt.block_on(Server::start(provider));
    let dir = TempDir::new("requests");
    let cassette = dir.path().join("cassette.jsonl");
    let adapters = Adapters::new(&server, &cassette);
    each_fixture("runs", |f| {
        let shown = rt.block_on(shown(f, &server, &adapters, &cassette));
        in_suite("requests", || {
            insta::assert_snapshot!(f.name.clone(), shown)
        });
    });
}
