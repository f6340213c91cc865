//! Anthropic's messages API (`POST {base}/v1/messages`).

use super::structured::{self, Shape};
use super::{
    estimated_tokens, system_parts, tokens, Settings, Transport, SPAWN_SUBTASK,
    SPAWN_SUBTASK_DESCRIPTION,
};
use crate::model::CallError;
use reqwest::header::HeaderName;
use serde_json::{json, Value};
use tv_stdlib::models::Provider;
use tv_vm::host::{LlmReply, LlmRequest, Role};

/// Where the key comes from, named when a server refuses it.
pub(crate) const KEY_VAR: &str = crate::config::env::ANTHROPIC_API_KEY;

/// The API version the request and reply shapes below follow.
pub(crate) const API_VERSION: &str = "2023-06-01";

/// The API requires a limit on the reply: this one is sent when neither the task nor
/// the run sets `max_tokens`.
pub(crate) const MAX_TOKENS: u64 = 4096;

/// What the forced reply tool is for, in words a model reads.
const REPLY_TOOL_DESCRIPTION: &str = "Give your reply to the task: its input is the reply, \
in the JSON Schema of the task's output.";

#[derive(Debug)]
pub struct Anthropic {
    transport: Transport,
}

impl Anthropic {
    /// One HTTP client for all requests. Fails only on a base URL that is not a URL or a
    /// key that cannot be sent in a header.
    pub fn new(settings: Settings) -> Result<Anthropic, String> {
        let mut headers = vec![(
            HeaderName::from_static("anthropic-version"),
            API_VERSION.to_string(),
            false,
        )];
        // No key, no header: a local or proxying server may not want one.
        if let Some(key) = &settings.api_key {
            headers.push((HeaderName::from_static("x-api-key"), key.clone(), true));
        }
        let transport = Transport::new(settings, "anthropic", KEY_VAR, headers)?;
        Ok(Anthropic { transport })
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
        self.body_shaped(req, &Shape::of(req, self.transport.json_mode(), true))
            .0
    }

    /// The request body for `req`, its output asked for as `shape` says: a native shape
    /// is one tool whose input is the reply, forced with `tool_choice`. Settings the
    /// model does not take are left out, each with a warning.
    fn body_shaped(&self, req: &LlmRequest, shape: &Shape) -> (Value, Vec<String>) {
        let model = self.transport.settings.model_for(req);
        // Never both tools: forcing the reply tool would forbid the spawning one.
        let tools = match shape {
            Shape::Native { name, schema, .. } => Some(json!([{
                "name": name,
                "description": REPLY_TOOL_DESCRIPTION,
                "input_schema": schema,
            }])),
            _ if req.task.subtasks => Some(json!([{
                "name": SPAWN_SUBTASK,
                "description": SPAWN_SUBTASK_DESCRIPTION,
                "input_schema": super::subtask_schema(),
            }])),
            _ => None,
        };
        // The API has no system role inside `messages`: system messages of the session
        // join the system blocks, in order, instead of being dropped.
        let mut session = Vec::new();
        let mut messages = Vec::with_capacity(req.messages.len());
        for m in req.messages.iter() {
            if m.role == Role::System {
                session.push(m.content.clone());
            } else {
                messages.push(json!({"role": m.role, "content": m.content}));
            }
        }
        let system = system_blocks(&model, req, tools.as_ref(), session, shape);
        let (s, warnings) = super::sendable(Provider::Anthropic, &model, req);
        let mut body = json!({
            "model": model,
            "max_tokens": s.max_tokens.unwrap_or(MAX_TOKENS),
        });
        if !system.is_empty() {
            body["system"] = Value::Array(system);
        }
        body["messages"] = Value::Array(messages);
        if let Some(t) = s.temperature {
            body["temperature"] = json!(t);
        }
        if let Some(p) = s.top_p {
            body["top_p"] = json!(p);
        }
        // The messages API has no seed: `sendable` left it out with a warning; it still
        // keys the cassette, which holds what the task asked for.
        if let Some(stop) = &s.stop {
            body["stop_sequences"] = json!(stop);
        }
        if let Some(tools) = tools {
            body["tools"] = tools;
        }
        if let Shape::Native { name, .. } = shape {
            body["tool_choice"] = json!({"type": "tool", "name": name});
        }
        (body, warnings)
    }

    /// One handler turn: the model's reply, its token usage, and any subtask it asked for.
    /// A server that refuses the forced tool is asked again with the schema in the
    /// prompt, and so is every later call of the run.
    pub async fn complete(&self, req: &LlmRequest) -> Result<LlmReply, CallError> {
        let feature = (
            "a forced tool (`tools` with `tool_choice`)",
            &["tools", "tool_choice"][..],
        );
        structured::complete(&self.transport, req, true, feature, |shape| async move {
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
        let reply_tool = match shape {
            Shape::Native { name, .. } => Some(name.as_str()),
            _ => None,
        };
        let mut reply = self
            .transport
            .exchange("/v1/messages", &body, |v| self.read(v, reply_tool))
            .await
            .map_err(|e| super::explain_unsupported(e, req))?;
        if reply.model.is_empty() {
            reply.model = self.transport.settings.model_for(req);
        }
        reply.max_tokens = body.get("max_tokens").and_then(Value::as_u64);
        reply.warnings.extend(warnings);
        if reply.truncated && req.settings.max_tokens.is_none() {
            // The limit it was cut at is one the task never set: say where it came from.
            reply.warnings.push(format!(
                "task `{}`: no max_tokens was set, and Anthropic requires one, so the default \
                 of {MAX_TOKENS} was sent; set max_tokens on the task's <model> or \
                 --max-output-tokens for longer replies",
                req.task.name
            ));
        }
        Ok(reply)
    }

    /// The reply's text, token usage and subtask request; with `reply_tool`, the input
    /// of that tool's call is the reply, as JSON text (the text blocks beside it, if any,
    /// are the model thinking aloud).
    fn read(&self, reply: &Value, reply_tool: Option<&str>) -> Result<LlmReply, CallError> {
        let t = &self.transport;
        let blocks = reply
            .get("content")
            .and_then(Value::as_array)
            .ok_or_else(|| t.malformed("`content` array", reply))?;
        let mut content = String::new();
        let mut subtask_request = None;
        let mut answered = None;
        for block in blocks {
            let name = block.get("name").and_then(Value::as_str);
            match block.get("type").and_then(Value::as_str) {
                Some("tool_use")
                    if answered.is_none() && reply_tool.is_some_and(|r| name == Some(r)) =>
                {
                    let input = block.get("input");
                    let input = input
                        .ok_or_else(|| t.malformed("`input` in the reply tool's call", reply))?;
                    answered = Some(match input {
                        // Some proxies pass the input on as the JSON text itself.
                        Value::String(text) => text.clone(),
                        other => other.to_string(),
                    });
                }
                Some("text") => {
                    let text = block.get("text").and_then(Value::as_str);
                    content.push_str(
                        text.ok_or_else(|| t.malformed("`text` in a text block", reply))?,
                    );
                }
                Some("tool_use")
                    if subtask_request.is_none()
                        && block.get("name").and_then(Value::as_str) == Some(SPAWN_SUBTASK) =>
                {
                    let input = block.get("input").filter(|i| i.is_object());
                    let input = input.ok_or_else(|| {
                        t.malformed("object `input` in the spawn_subtask call", reply)
                    })?;
                    subtask_request = Some(input.clone());
                }
                // Thinking blocks, other tools: nothing the machine acts on.
                _ => {}
            }
        }
        let usage = reply.get("usage");
        Ok(LlmReply {
            content: answered.unwrap_or(content),
            // The API's `input_tokens` are those after the last cache breakpoint; the
            // reply's count every input token, cached or not.
            input_tokens: [
                "input_tokens",
                "cache_read_input_tokens",
                "cache_creation_input_tokens",
            ]
            .into_iter()
            .fold(0u64, |sum, field| sum.saturating_add(tokens(usage, field))),
            output_tokens: tokens(usage, "output_tokens"),
            cache_read_tokens: tokens(usage, "cache_read_input_tokens"),
            cache_write_tokens: tokens(usage, "cache_creation_input_tokens"),
            subtask_request,
            model: reply
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            truncated: reply.get("stop_reason").and_then(Value::as_str) == Some("max_tokens"),
            ..LlmReply::default()
        })
    }
}

/// The system text as the API's text blocks, static first (DESIGN §15): the task's system
/// prompt, the memory system's context, the session's system messages, then the schema
/// when `shape` describes it. The system prompt's block and the context's carry
/// `cache_control` when the prompt up to and including them (the tools first, as the API
/// reads a request) is long enough for `model` to cache; a shorter prefix would not be
/// cached, so it is not marked. Empty or blank texts have no block (the API refuses
/// them).
fn system_blocks(
    model: &str,
    req: &LlmRequest,
    tools: Option<&Value>,
    session: Vec<String>,
    shape: &Shape,
) -> Vec<Value> {
    let least = min_cache_tokens(model);
    let mut prefix = tools.map_or(0, |t| t.to_string().chars().count());
    let mut blocks = Vec::new();
    let blank = |t: &String| t.trim().is_empty();
    for text in system_parts(req).into_iter().flatten() {
        if blank(&text) {
            continue;
        }
        prefix += text.chars().count();
        let mut block = json!({"type": "text", "text": text});
        if estimated_tokens(prefix) >= least {
            block["cache_control"] = json!({"type": "ephemeral"});
        }
        blocks.push(block);
    }
    // Never marked: the session's system messages change from turn to turn, and the
    // schema stays last, where prompt mode has always put it.
    let rest = session.into_iter().chain(shape.instruction());
    for text in rest.filter(|t| !blank(t)) {
        blocks.push(json!({"type": "text", "text": text}));
    }
    blocks
}

/// The shortest prompt prefix, in tokens, that `model` caches, as Anthropic's prompt
/// caching documentation lists them ("Cache limitations"): 4096 for Claude Opus 4.6,
/// Opus 4.5 and Haiku 4.5; 2048 for Claude Haiku 3.5 and Haiku 3; 1024 for the others
/// (Sonnet 4.6, 4.5, 4 and 3.7, Opus 4.1 and 4). A model the list does not name gets
/// 1024: marking a prefix too short to cache costs nothing, leaving a cacheable one
/// unmarked costs its caching. Names are matched as Anthropic, Bedrock, Vertex and
/// OpenRouter spell them (`claude-haiku-4-5-20251001`, `claude-3-5-haiku@20241022`,
/// `anthropic/claude-opus-4.5`).
fn min_cache_tokens(model: &str) -> u64 {
    let name = model.to_ascii_lowercase().replace('.', "-");
    let named = |families: &[&str]| families.iter().any(|f| name.contains(f));
    if named(&["opus-4-5", "opus-4-6", "haiku-4-5"]) {
        4096
    } else if named(&["claude-3-haiku", "claude-3-5-haiku"]) {
        2048
    } else {
        1024
    }
}

impl crate::model::Model for Anthropic {
    fn asked(&self, r: &LlmRequest) -> Option<String> {
        Some(self.settings().model_for(r))
    }

    fn reply_model(&self, r: &LlmRequest) -> String {
        self.settings().model_for(r)
    }

    fn complete<'a>(&'a self, r: &'a LlmRequest) -> crate::model::Completion<'a> {
        crate::model::Completion::later(Anthropic::complete(self, r))
    }
}
