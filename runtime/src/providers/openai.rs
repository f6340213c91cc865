//! OpenAI chat completions (`POST {base}/chat/completions`), which OpenAI-compatible
//! servers (llama.cpp, vLLM, Ollama) also speak.

use super::structured::{self, Shape};
use super::{system_text, tokens, Settings, Transport, SPAWN_SUBTASK, SPAWN_SUBTASK_DESCRIPTION};
use crate::model::{CallError, CallKind};
use reqwest::header::AUTHORIZATION;
use serde_json::{json, Value};
use tv_stdlib::models::Provider;
use tv_vm::host::{LlmReply, LlmRequest, Role};

/// Where the key comes from, named when a server refuses it.
pub(crate) const KEY_VAR: &str = crate::config::env::OPENAI_API_KEY;

#[derive(Debug)]
pub struct OpenAi {
    transport: Transport,
}

impl OpenAi {
    /// One HTTP client for all requests. Fails only on a base URL that is not a URL or a
    /// key that cannot be sent in a header.
    pub fn new(settings: Settings) -> Result<OpenAi, String> {
        // No key, no header: local servers accept anonymous requests.
        let headers = match &settings.api_key {
            Some(key) => vec![(AUTHORIZATION, format!("Bearer {key}"), true)],
            None => Vec::new(),
        };
        let transport = Transport::new(settings, "openai", KEY_VAR, headers)?;
        Ok(OpenAi { transport })
    }

    pub fn settings(&self) -> &Settings {
        &self.transport.settings
    }

    /// Counts this adapter's calls against `ledger`: prices, budget, reply cache.
    pub fn with_ledger(mut self, ledger: Option<std::sync::Arc<crate::ledger::Ledger>>) -> Self {
        self.transport.ledger = ledger;
        self
    }

    /// The request body for `req` in the run's JSON mode (public so that a recorder can
    /// store what was sent).
    pub fn body(&self, req: &LlmRequest) -> Value {
        self.body_shaped(req, &Shape::of(req, self.transport.json_mode(), false))
            .0
    }

    /// The request body for `req`, its output asked for as `shape` says: a native shape
    /// is `response_format` with a strict JSON schema (which the spawning tool can go
    /// with: the model either calls it or answers in the schema). Settings the model
    /// does not take are left out, each with a warning.
    fn body_shaped(&self, req: &LlmRequest, shape: &Shape) -> (Value, Vec<String>) {
        // Static text first, so that the prefix OpenAI caches on its own is as long as it
        // can be: the system message (the system prompt, then the context, then any
        // schema), then the conversation.
        let mut messages = Vec::with_capacity(req.messages.len() + 1);
        let system = shape.system(system_text(req));
        if !system.is_empty() {
            messages.push(json!({"role": Role::System, "content": system}));
        }
        for m in req.messages.iter() {
            messages.push(json!({"role": m.role, "content": m.content}));
        }
        let model = self.transport.settings.model_for(req);
        let mut body = json!({"model": model});
        // Moved in: `json!` would copy every message through the serializer.
        body["messages"] = Value::Array(messages);
        let (s, warnings) = super::sendable(Provider::OpenAi, &model, req);
        if let Some(t) = s.temperature {
            body["temperature"] = json!(t);
        }
        if let Some(p) = s.top_p {
            body["top_p"] = json!(p);
        }
        if let Some(n) = s.max_tokens {
            body[max_tokens_field(&model)] = json!(n);
        }
        if let Some(seed) = s.seed {
            body["seed"] = json!(seed);
        }
        if let Some(stop) = &s.stop {
            body["stop"] = json!(stop);
        }
        if req.task.subtasks {
            body["tools"] = json!([{
                "type": "function",
                "function": {
                    "name": SPAWN_SUBTASK,
                    "description": SPAWN_SUBTASK_DESCRIPTION,
                    "parameters": super::subtask_schema(),
                }
            }]);
        }
        if let Shape::Native { name, schema, .. } = shape {
            body["response_format"] = json!({
                "type": "json_schema",
                "json_schema": {"name": name, "strict": true, "schema": schema},
            });
        }
        (body, warnings)
    }

    /// One handler turn: the model's reply, its token usage, and any subtask it asked for.
    /// A server that refuses `response_format` is asked again with the schema in the
    /// prompt, and so is every later call of the run.
    pub async fn complete(&self, req: &LlmRequest) -> Result<LlmReply, CallError> {
        let feature = (
            "`response_format` with a JSON schema",
            &["response_format", "json_schema"][..],
        );
        structured::complete(&self.transport, req, false, feature, |shape| async move {
            self.complete_shaped(req, &shape).await
        })
        .await
    }

    async fn complete_shaped(
        &self,
        req: &LlmRequest,
        shape: &Shape,
    ) -> Result<LlmReply, CallError> {
        let (body, warnings) = self.body_shaped(req, shape);
        let mut reply = self
            .transport
            .exchange("/chat/completions", &body, |v| self.read(v))
            .await
            .map_err(|e| super::explain_unsupported(e, req))?;
        if reply.model.is_empty() {
            reply.model = self.transport.settings.model_for(req);
        }
        reply.max_tokens = req.settings.max_tokens;
        reply.warnings.extend(warnings);
        Ok(reply)
    }

    fn read(&self, reply: &Value) -> Result<LlmReply, CallError> {
        let t = &self.transport;
        // Looked up key by key: `Value::pointer` would parse its path on every reply.
        let choice = reply.get("choices").and_then(|c| c.get(0));
        let message = choice
            .and_then(|c| c.get("message"))
            .filter(|m| m.is_object())
            .ok_or_else(|| t.malformed("`choices[0].message`", reply))?;
        let subtask_request = self.subtask(message)?;
        let content = match message.get("content") {
            Some(Value::String(s)) => s.clone(),
            // Some servers send content parts even for plain text.
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect(),
            // Null (or absent) is normal when the model called the tool instead.
            Some(Value::Null) | None if subtask_request.is_some() => String::new(),
            // A model that declines to answer in a schema says why in `refusal`: that
            // text is the reply, which then fails its type with the words kept.
            Some(Value::Null) | None if message.get("refusal").is_some_and(Value::is_string) => {
                message["refusal"].as_str().unwrap_or_default().to_string()
            }
            _ => {
                return Err(t.malformed(
                    "text in `choices[0].message.content` and no spawn_subtask call",
                    reply,
                ))
            }
        };
        let usage = reply.get("usage");
        let finish = choice.and_then(|c| c.get("finish_reason"));
        Ok(LlmReply {
            content,
            // `prompt_tokens` counts the cached ones too.
            input_tokens: tokens(usage, "prompt_tokens"),
            output_tokens: tokens(usage, "completion_tokens"),
            cache_read_tokens: tokens(usage, "prompt_tokens_details/cached_tokens"),
            subtask_request,
            model: reply
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            truncated: finish.and_then(Value::as_str) == Some("length"),
            ..LlmReply::default()
        })
    }

    /// The arguments of the first `spawn_subtask` call, if the model made one.
    fn subtask(&self, message: &Value) -> Result<Option<Value>, CallError> {
        let calls = message.get("tool_calls").and_then(Value::as_array);
        let Some(function) = calls
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("function"))
            .find(|f| f.get("name").and_then(Value::as_str) == Some(SPAWN_SUBTASK))
        else {
            return Ok(None);
        };
        match function.get("arguments") {
            // The API sends the arguments as a JSON document inside a string.
            Some(Value::String(text)) => serde_json::from_str(text).map(Some).map_err(|e| {
                self.transport.error(
                    CallKind::Malformed,
                    format!("the spawn_subtask call's arguments are not JSON ({e})"),
                )
            }),
            // Some compatible servers send the object itself.
            Some(v @ Value::Object(_)) => Ok(Some(v.clone())),
            _ => Err(self
                .transport
                .malformed("`arguments` in the spawn_subtask call", message)),
        }
    }
}

/// OpenAI's reasoning models (o1, o3, o4, gpt-5) refuse `max_tokens` and take
/// `max_completion_tokens`; OpenAI-compatible local servers know only `max_tokens`.
fn max_tokens_field(model: &str) -> &'static str {
    let reasoning = ["o1", "o3", "o4", "gpt-5"]
        .iter()
        .any(|p| model.starts_with(p));
    if reasoning {
        "max_completion_tokens"
    } else {
        "max_tokens"
    }
}

impl crate::model::Model for OpenAi {
    fn asked(&self, r: &LlmRequest) -> Option<String> {
        Some(self.settings().model_for(r))
    }

    fn reply_model(&self, r: &LlmRequest) -> String {
        self.settings().model_for(r)
    }

    fn complete<'a>(&'a self, r: &'a LlmRequest) -> crate::model::Completion<'a> {
        crate::model::Completion::later(OpenAi::complete(self, r))
    }
}
