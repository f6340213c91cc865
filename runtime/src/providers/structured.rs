//! Structured output (DESIGN §13): how a task's JSON type reaches the model. A record
//! that strict mode can express goes in the provider's own field (OpenAI's
//! `response_format`, a forced tool for Anthropic); any other type, every type under
//! `--json-mode prompt`, and every call to a server that refused the native field, has
//! its schema described at the end of the system text instead.

use super::Transport;
use crate::model::CallError;
use serde_json::Value;
use std::future::Future;
use std::sync::atomic::Ordering;
use tv_stdlib::types::{json_schema, strict_schema, strict_wrapped, Type, WRAPPED};
use tv_stdlib::values::parse_json_text;
use tv_vm::bundle::Output;
use tv_vm::host::{LlmReply, LlmRequest};

pub use crate::config::JsonMode;

/// How one request asks for the shape of its reply.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Shape {
    /// Text, or JSON of no declared type: nothing is added to the request.
    Free,
    /// The provider's own field: a strict schema under a name. `wrapped`: the type is
    /// not a record, and the schema asks for it as the one property of an object (both
    /// strict modes take only an object at the top), which the reply is unwrapped of.
    Native {
        name: String,
        schema: Value,
        wrapped: bool,
    },
    /// The schema, described at the end of the system text.
    Described(Value),
}

impl Shape {
    /// The shape of `req`'s reply in `mode`. `spawn_conflicts`: the adapter's native form
    /// would keep the model from calling the spawning tool (a forced tool), so a task that
    /// offers that tool has its schema described instead.
    pub(super) fn of(req: &LlmRequest, mode: JsonMode, spawn_conflicts: bool) -> Shape {
        let ty = match &req.task.output {
            Output::Json(Some(ty)) if *ty.as_type() != Type::Any => ty.as_type(),
            // `any` and undeclared JSON have nothing to describe.
            Output::Json(_) | Output::Text => return Shape::Free,
        };
        let native = mode == JsonMode::Native && !(spawn_conflicts && req.task.subtasks);
        let strict = strict_schema(ty)
            .map(|schema| (schema, false))
            .or_else(|| strict_wrapped(ty).map(|schema| (schema, true)));
        match strict.filter(|_| native) {
            Some((schema, wrapped)) => Shape::Native {
                name: schema_name(ty, &req.task.name),
                schema,
                wrapped,
            },
            None => Shape::Described(json_schema(ty)),
        }
    }

    /// What the system text ends with, if anything.
    pub(super) fn instruction(&self) -> Option<String> {
        match self {
            Shape::Described(schema) => Some(format!(
                "Reply with JSON only, matching this JSON Schema:\n{schema}"
            )),
            Shape::Free | Shape::Native { .. } => None,
        }
    }

    /// `system` with this shape's instruction as its last part.
    pub(super) fn system(&self, mut system: String) -> String {
        if let Some(text) = self.instruction() {
            if !system.is_empty() {
                system.push_str("\n\n");
            }
            system.push_str(&text);
        }
        system
    }

    /// The same request in prompt mode.
    fn described(&self) -> Shape {
        match self {
            Shape::Native {
                schema, wrapped, ..
            } => {
                let plain = if *wrapped {
                    &schema["properties"][WRAPPED]
                } else {
                    schema
                };
                Shape::Described(plain.clone())
            }
            other => other.clone(),
        }
    }
}

/// The name a native schema (or forced tool) goes by, as both APIs require it
/// (`^[a-zA-Z0-9_-]{1,64}$`): the record's declared name, else the task's (without the
/// `#N` that tells a template's tasks apart); characters outside that set become `_`.
pub fn schema_name(ty: &Type, task: &str) -> String {
    let declared = match ty {
        Type::Record(r) => r.name.as_deref(),
        _ => None,
    };
    let task = match task.rsplit_once('#') {
        Some((name, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => task,
    };
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect()
    };
    let name = [declared, Some(task)]
        .into_iter()
        .flatten()
        .map(clean)
        .find(|n| !n.is_empty())
        .unwrap_or_else(|| "output".to_string());
    // The spawning tool's name is taken: a reply under it would read as a subtask.
    if name == super::SPAWN_SUBTASK {
        "spawn_subtask_reply".to_string()
    } else {
        name
    }
}

impl Transport {
    /// The mode calls are made in now: the run's, until the server refuses the native
    /// field; prompt from then on.
    pub(super) fn json_mode(&self) -> JsonMode {
        if self.prompt_only.load(Ordering::SeqCst) {
            JsonMode::Prompt
        } else {
            self.settings.json_mode
        }
    }
}

/// A reply to a wrapped schema with the value it holds as its text. A reply that is not
/// the wrapper (a refusal in words, a model that ignored the schema) stays as it is, and
/// the type check says what is wrong with it.
fn unwrapped(mut reply: LlmReply) -> LlmReply {
    if reply.subtask_request.is_some() {
        return reply;
    }
    if let Ok(Value::Object(mut m)) = parse_json_text(&reply.content) {
        if m.len() == 1 {
            if let Some(v) = m.remove(WRAPPED) {
                reply.content = v.to_string();
            }
        }
    }
    reply
}

/// Whether a call failed because the server does not take one of `native`, the fields
/// the adapter's native mode adds: it refused a field the request carried (whatever the
/// HTTP status: [`CallError::refused_field`]), and that field is one of them.
fn refuses_native(e: &CallError, native: &[&str]) -> bool {
    e.refused_field().is_some_and(|f| native.contains(&f))
}

/// Makes one call with the shape `req` needs. A native call the server refuses for its
/// native field is made again in prompt mode, and the provider stays in prompt mode for
/// the rest of the run; the call that switched it carries the warning. `feature` names
/// the native field in messages; `native` lists the request fields it consists of.
pub(super) async fn complete<F, Fut>(
    transport: &Transport,
    req: &LlmRequest,
    spawn_conflicts: bool,
    (feature, native): (&str, &[&str]),
    call: F,
) -> Result<LlmReply, CallError>
where
    F: Fn(Shape) -> Fut,
    Fut: Future<Output = Result<LlmReply, CallError>>,
{
    let shape = Shape::of(req, transport.json_mode(), spawn_conflicts);
    let wrapped = match shape {
        Shape::Native { wrapped, .. } => wrapped,
        _ => return call(shape).await,
    };
    let described = shape.described();
    let refused = match call(shape).await {
        Err(e) if refuses_native(&e, native) => e,
        Ok(reply) if wrapped => return Ok(unwrapped(reply)),
        other => return other,
    };
    // Only the first refusal of the run says so; calls already in flight when it came
    // switch quietly.
    let first = !transport.prompt_only.swap(true, Ordering::SeqCst);
    match call(described).await {
        Ok(mut reply) => {
            if first {
                reply.warnings.push(format!(
                    "{}: the server does not take {feature} (structured output), so the rest \
                     of this run describes each JSON schema in the prompt instead; \
                     --json-mode prompt does so from the start. The server said: {}",
                    transport.provider,
                    refused
                        .message()
                        .strip_prefix(&format!("{}: ", transport.provider))
                        .unwrap_or(refused.message())
                ));
            }
            Ok(reply)
        }
        Err(e) => Err(e.with_suffix(&format!(
            "\n(before that, the server refused {feature} (structured output): {}; the call \
                 was made again with the JSON schema in the prompt, as --json-mode prompt \
                 does, and failed as above)",
            refused.message()
        ))),
    }
}
