//! The provider adapters against a real HTTP server on 127.0.0.1 (nothing else is ever
//! contacted). Most tests run the same scenario against both adapters at once.

mod bounds;
mod caching;
mod faults;
use crate::support::http;
mod openai_spec;
mod rate;
mod reply_cache;
use crate::support::openapi;
mod settings;
mod structured;

use futures::future::join_all;
use http::{Reply, Server};
use serde_json::{json, Value};
use std::future::Future;
use std::time::{Duration, Instant};
use tv_runtime::providers::{subtask_schema, Anthropic, CallError, CallKind, OpenAi, Settings};
use tv_vm::bundle::TaskMeta;
use tv_vm::host::{LlmReply, LlmRequest, Message, Role};
use tv_vm::result::Reason;

const KEY: &str = "sk-test-SECRET-4242";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Api {
    OpenAi,
    Anthropic,
}

impl Api {
    /// Test-scale settings: short timeouts, a 10 ms backoff.
    fn settings(self, server: &Server) -> Settings {
        let (base, model) = match self {
            Api::OpenAi => (format!("{}/v1", server.url()), "gpt-4o-mini"),
            Api::Anthropic => (server.url(), "claude-3-5-sonnet-latest"),
        };
        let mut s = Settings::new(base, model);
        s.api_key = Some(KEY.into());
        s.request_timeout = Duration::from_secs(2);
        s.backoff_base = Duration::from_millis(10);
        s.max_retry_wait = Duration::from_secs(5);
        s
    }

    fn path(self) -> &'static str {
        match self {
            Api::OpenAi => "/v1/chat/completions",
            Api::Anthropic => "/v1/messages",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Api::OpenAi => "openai",
            Api::Anthropic => "anthropic",
        }
    }

    fn key_var(self) -> &'static str {
        match self {
            Api::OpenAi => "OPENAI_API_KEY",
            Api::Anthropic => "ANTHROPIC_API_KEY",
        }
    }

    /// A successful reply in this provider's shape.
    fn ok(self, text: &str, input: u64, output: u64) -> Reply {
        Reply::json(
            200,
            match self {
                Api::OpenAi => json!({
                    "id": "chatcmpl-1",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output}
                }),
                Api::Anthropic => json!({
                    "id": "msg_1", "type": "message", "role": "assistant",
                    "content": [{"type": "text", "text": text}],
                    "stop_reason": "end_turn",
                    "usage": {"input_tokens": input, "output_tokens": output}
                }),
            },
        )
    }
}

enum Client {
    OpenAi(OpenAi),
    Anthropic(Anthropic),
}

impl Client {
    fn new(api: Api, settings: Settings) -> Client {
        match api {
            Api::OpenAi => Client::OpenAi(OpenAi::new(settings).unwrap()),
            Api::Anthropic => Client::Anthropic(Anthropic::new(settings).unwrap()),
        }
    }

    async fn complete(&self, req: &LlmRequest) -> Result<LlmReply, CallError> {
        match self {
            Client::OpenAi(p) => p.complete(req).await,
            Client::Anthropic(p) => p.complete(req).await,
        }
    }
}

/// One call with `settings`, as a new client would make it.
async fn call(api: Api, settings: Settings, req: &LlmRequest) -> Result<LlmReply, CallError> {
    Client::new(api, settings).complete(req).await
}

/// Runs the scenario for both adapters concurrently.
async fn both<F, Fut>(scenario: F)
where
    F: Fn(Api) -> Fut,
    Fut: Future<Output = ()>,
{
    tokio::join!(scenario(Api::OpenAi), scenario(Api::Anthropic));
}

/// A task that offers the spawning tool, as most tests here look at it.
fn task(model: Option<&str>) -> TaskMeta {
    TaskMeta {
        model: model.map(str::to_string),
        subtasks: true,
        ..TaskMeta::named("summarise")
    }
}

fn message(role: Role, content: &str) -> Message {
    Message {
        role,
        content: content.into(),
    }
}

fn request(model: Option<&str>) -> LlmRequest {
    LlmRequest {
        query: None,
        requested_files: Vec::new(),
        task: task(model).into(),
        system_prompt: "You are terse.".into(),
        messages: vec![
            message(Role::User, "Summarise the notes."),
            message(Role::Assistant, "Which notes?"),
            message(Role::User, "The release notes."),
        ]
        .into(),
        context: "notes.txt: v2 ships on Friday.".into(),
        model: model.map(str::to_string),
        settings: Default::default(),
    }
}

const SYSTEM: &str = "You are terse.\n\nContext:\nnotes.txt: v2 ships on Friday.";

fn conversation() -> Value {
    json!([
        {"role": "user", "content": "Summarise the notes."},
        {"role": "assistant", "content": "Which notes?"},
        {"role": "user", "content": "The release notes."}
    ])
}

/// The standard request through a new client; the reply must be a success.
async fn succeeds(api: Api, settings: Settings) -> LlmReply {
    let reply = call(api, settings, &request(None)).await;
    reply.unwrap_or_else(|e| panic!("{api:?}: {e:?}"))
}

/// The standard request through a new client; the reply must be an error.
async fn fails(api: Api, settings: Settings) -> CallError {
    let reply = call(api, settings, &request(None)).await;
    reply.expect_err("the call should fail")
}

/// Content and token counts, to compare in one assertion.
fn summary(r: &LlmReply) -> (&str, u64, u64) {
    (r.content.as_str(), r.input_tokens, r.output_tokens)
}

/// For the OpenAI adapter, every body `server` received must conform to OpenAI's published
/// request schema; the Anthropic API has no such description here.
fn assert_openai_bodies_conform(api: Api, server: &Server) {
    if api == Api::OpenAi {
        for sent in server.requests() {
            openapi::assert_valid_chat_request(&sent.json());
        }
    }
}

fn assert_mentions(err: &CallError, reason: Reason, parts: &[&str]) {
    assert_eq!(err.reason(), reason, "{err}");
    for part in parts {
        assert!(err.message().contains(part), "{part:?} missing: {err}");
    }
}

#[tokio::test]
async fn an_openai_request_carries_model_system_context_messages_tool_and_bearer_key() {
    let server = Server::scripted(vec![Api::OpenAi.ok("v2 ships Friday.", 31, 5)]).await;
    let req = request(Some("openai:gpt-4o"));
    let reply = call(Api::OpenAi, Api::OpenAi.settings(&server), &req)
        .await
        .unwrap();
    assert_eq!(summary(&reply), ("v2 ships Friday.", 31, 5));
    assert_eq!(reply.subtask_request, None);
    let [sent] = &server.requests()[..] else {
        panic!("one request expected")
    };
    assert_eq!(
        (&*sent.method, &*sent.path),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(
        sent.header("authorization"),
        Some(&*format!("Bearer {KEY}"))
    );
    assert_eq!(sent.header("content-type"), Some("application/json"));
    let mut messages = vec![json!({"role": "system", "content": SYSTEM})];
    messages.extend(conversation().as_array().unwrap().iter().cloned());
    let body = sent.json();
    let description = &body["tools"][0]["function"]["description"];
    assert!(description.as_str().is_some_and(|d| !d.is_empty()));
    let function = json!({
        "name": "spawn_subtask", "description": description, "parameters": subtask_schema()
    });
    let tools = json!([{"type": "function", "function": function}]);
    assert_eq!(
        body,
        json!({"model": "gpt-4o", "messages": messages, "tools": tools})
    );
    openapi::assert_valid_chat_request(&body);
}

#[tokio::test]
async fn an_anthropic_request_carries_model_system_context_messages_tool_and_key_headers() {
    let server = Server::scripted(vec![Api::Anthropic.ok("v2 ships Friday.", 40, 6)]).await;
    let mut req = request(Some("claude-3-5-haiku-latest"));
    // The messages API has no system role: such messages join the system text.
    std::sync::Arc::make_mut(&mut req.messages)
        .insert(1, message(Role::System, "Answer in English."));
    let reply = call(Api::Anthropic, Api::Anthropic.settings(&server), &req).await;
    assert_eq!(summary(&reply.unwrap()), ("v2 ships Friday.", 40, 6));
    let [sent] = &server.requests()[..] else {
        panic!("one request expected")
    };
    assert_eq!((&*sent.method, &*sent.path), ("POST", "/v1/messages"));
    assert_eq!(sent.header("x-api-key"), Some(KEY));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.header("authorization"), None);
    let body = sent.json();
    let tool = json!({
        "name": "spawn_subtask",
        "description": body["tools"][0]["description"],
        "input_schema": subtask_schema(),
    });
    let expected = json!({
        "model": "claude-3-5-haiku-latest",
        "max_tokens": 4096,
        // Static text first: the system prompt, the context, then the session's.
        "system": [
            {"type": "text", "text": "You are terse."},
            {"type": "text", "text": "Context:\nnotes.txt: v2 ships on Friday."},
            {"type": "text", "text": "Answer in English."},
        ],
        "messages": conversation(),
        "tools": [tool],
    });
    assert_eq!(body, expected);
}

#[test]
fn the_subtask_tool_describes_the_seeds_subtask_request() {
    let schema = subtask_schema();
    assert_eq!(schema["required"], json!(["type", "description", "inputs"]));
    let props = schema["properties"].as_object().unwrap();
    let names: Vec<&str> = props.keys().map(String::as_str).collect();
    let fields = [
        "type",
        "description",
        "inputs",
        "template_hints",
        "subtype",
        "file_paths",
    ];
    assert_eq!(names, fields);
    assert_eq!(props["inputs"]["type"], "object");
    assert_eq!(props["template_hints"]["items"]["type"], "string");
    assert_eq!(props["file_paths"]["items"]["type"], "string");
}

#[tokio::test]
async fn a_task_without_a_model_runs_on_the_default_and_no_key_means_no_auth_header() {
    both(|api| async move {
        let server = Server::scripted(vec![api.ok("hi", 1, 1)]).await;
        let mut settings = api.settings(&server);
        settings.api_key = None;
        settings.default_model = "local-model".into();
        succeeds(api, settings).await;
        let sent = &server.requests()[0];
        assert_eq!(sent.json()["model"], "local-model", "{api:?}");
        let auth = (sent.header("authorization"), sent.header("x-api-key"));
        assert_eq!(auth, (None, None), "{api:?}");
        assert_openai_bodies_conform(api, &server);
    })
    .await;
}

#[tokio::test]
async fn a_reply_without_usage_counts_zero_tokens() {
    both(|api| async move {
        let body = match api {
            Api::OpenAi => json!({"choices": [{"message": {"content": "ok"}}]}),
            Api::Anthropic => json!({"content": [
                {"type": "text", "text": "o"}, {"type": "text", "text": "k"}
            ]}),
        };
        let server = Server::scripted(vec![Reply::json(200, body)]).await;
        let reply = succeeds(api, api.settings(&server)).await;
        assert_eq!(summary(&reply), ("ok", 0, 0), "{api:?}");
        assert_openai_bodies_conform(api, &server);
    })
    .await;
}

#[tokio::test]
async fn a_spawn_subtask_tool_call_becomes_the_subtask_request() {
    both(|api| async move {
        let wanted = json!({
            "type": "atomic", "description": "Summarise one file",
            "inputs": {"path": "a.txt"}, "template_hints": ["summary"]
        });
        assert!(tv_vm::interp::subtask::validate(&wanted).is_ok());
        let body = match api {
            Api::OpenAi => json!({
                "choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [{
                    "id": "call_1", "type": "function",
                    "function": {"name": "spawn_subtask", "arguments": wanted.to_string()}
                }]}, "finish_reason": "tool_calls"}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 20}
            }),
            Api::Anthropic => json!({
                "content": [
                    {"type": "text", "text": "I will delegate."},
                    {"type": "tool_use", "id": "toolu_1", "name": "spawn_subtask", "input": wanted}
                ],
                "stop_reason": "tool_use",
                "usage": {"input_tokens": 50, "output_tokens": 20}
            }),
        };
        let server = Server::scripted(vec![Reply::json(200, body)]).await;
        let reply = succeeds(api, api.settings(&server)).await;
        assert_eq!(reply.subtask_request.as_ref(), Some(&wanted), "{api:?}");
        let text = if api == Api::OpenAi {
            ""
        } else {
            "I will delegate."
        };
        assert_eq!(summary(&reply), (text, 50, 20), "{api:?}");
        assert_openai_bodies_conform(api, &server);
    })
    .await;
}

#[test]
fn settings_come_from_the_environment_with_documented_defaults() {
    let seen = |s: &Settings| {
        (
            s.base_url.clone(),
            s.default_model.clone(),
            s.api_key.clone(),
        )
    };
    let o = Settings::openai_from_vars(|_| None);
    let openai = (
        "https://api.openai.com/v1".into(),
        "gpt-4o-mini".into(),
        None,
    );
    assert_eq!(seen(&o), openai);
    let budgets = (o.max_retries, o.max_retry_wait, o.concurrency);
    assert_eq!(budgets, (4, Duration::from_secs(30), 16));
    let a = Settings::anthropic_from_vars(|_| None);
    let anthropic = (
        "https://api.anthropic.com".into(),
        "claude-sonnet-4-5".into(),
        None,
    );
    assert_eq!(seen(&a), anthropic);

    let vars = |k: &str| match k {
        "OPENAI_BASE_URL" => Some("http://127.0.0.1:8080/v1/".to_string()),
        "OPENAI_API_KEY" => Some(KEY.to_string()),
        "ANTHROPIC_API_KEY" => Some(String::new()),
        "TVM_MODEL" => Some("qwen2.5".to_string()),
        _ => None,
    };
    let o = Settings::openai_from_vars(vars);
    let local = (
        "http://127.0.0.1:8080/v1".into(),
        "qwen2.5".into(),
        Some(KEY.into()),
    );
    assert_eq!(seen(&o), local);
    assert!(!format!("{o:?}").contains(KEY));
    // An exported but empty key is no key.
    assert_eq!(Settings::anthropic_from_vars(vars).api_key, None);
}

#[test]
fn a_model_prefix_is_removed_and_a_missing_model_takes_the_default() {
    let s = Settings::new("http://127.0.0.1:1", "fallback");
    assert_eq!(s.model_for(&request(Some("openai:gpt-4o"))), "gpt-4o");
    let bare = "claude-3-5-sonnet-latest";
    assert_eq!(s.model_for(&request(Some(bare))), bare);
    assert_eq!(s.model_for(&request(None)), "fallback");
}

#[test]
fn a_base_url_that_is_not_a_url_is_refused_when_the_adapter_is_built() {
    let err = OpenAi::new(Settings::new("not a url", "m")).unwrap_err();
    assert!(err.contains("not a URL"), "{err}");
}

#[test]
fn the_completion_future_can_move_between_threads() {
    fn send<T: Send>(_: &T) {}
    let p = OpenAi::new(Settings::new("http://127.0.0.1:1", "m")).unwrap();
    let a = Anthropic::new(Settings::new("http://127.0.0.1:1", "m")).unwrap();
    let req = request(None);
    send(&p.complete(&req));
    send(&a.complete(&req));
}
