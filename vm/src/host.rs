//! Host calls: everything that touches the world. The interpreter halts with a
//! [`HostRequest`] and is resumed with the matching [`HostReply`].

use crate::bundle::{ModelSettings, TaskMeta};
use crate::result::{Metrics, Reason, Resource, TaskError};
use crate::shared::SharedText;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// What the machine asks of the world.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum HostRequest {
    /// A model call: one turn of a task's session.
    Llm(LlmRequest),
    /// A script task's command, to run.
    Script(ScriptRequest),
}

/// One handler session turn (the seeds' HandlerPayload).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LlmRequest {
    /// The task that makes the call.
    pub task: Arc<TaskMeta>,
    /// The session's system prompt.
    #[serde(rename = "systemPrompt")]
    pub system_prompt: String,
    /// Shared with the machine, which keeps a session's messages for its later turns.
    pub messages: Arc<Vec<Message>>,
    /// Shared, not copied: a sequence passes up to 16 KiB of accumulated context to
    /// every step, and the machine keeps the session's copy for later turns.
    pub context: SharedText,
    /// The model asked for: the task's (`provider:` prefix included), else `None` for the
    /// provider's default. `tvm run --force-model` replaces it before the call.
    pub model: Option<String>,
    /// The sampling settings sent: the task's, completed by the run's defaults.
    pub settings: ModelSettings,
    /// What fresh context searches the workspace with, when the task's
    /// `context_relevance` chose it; otherwise the request's own text.
    pub query: Option<String>,
    /// Paths a subtask request named (its `file_paths`): they replace the task's
    /// `file_paths`, and as a model's choice they are read only inside the workspace.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub requested_files: Vec<String>,
}

/// One message of a session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Message {
    /// Who said it.
    pub role: Role,
    /// What it says.
    pub content: String,
}

/// Who said a message of a session. The machine writes the task's prompt, each
/// subtask result and each re-ask's feedback as `user` turns, and a reply that asked
/// for a subtask or was re-asked as an `assistant` turn; a host may meet `system`
/// messages too.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Instructions for the model.
    System,
    /// The side that asks: prompts, subtask results, feedback.
    User,
    /// The model.
    Assistant,
}

impl Message {
    /// A message of the `user` role.
    pub fn user(content: String) -> Message {
        Message {
            role: Role::User,
            content,
        }
    }

    /// A message of the `assistant` role: what the model said.
    pub fn assistant(content: String) -> Message {
        Message {
            role: Role::Assistant,
            content,
        }
    }
}

/// A script task's command, with the inputs it is given.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScriptRequest {
    /// The script task.
    pub task: Arc<TaskMeta>,
    /// The command line, every interpolated value already shell-quoted.
    pub command: String,
    /// Passed as environment variables and, as a JSON object, on stdin.
    pub inputs: serde_json::Map<String, serde_json::Value>,
}

/// What the world answers a [`HostRequest`] with: a reply of the same kind.
#[derive(Clone, Debug, PartialEq)]
pub enum HostReply {
    /// The model's reply, or why there is none.
    Llm(Result<LlmReply, HostError>),
    /// What the command did, or why it did not run.
    Script(Result<ScriptReply, HostError>),
}

/// A model's reply to one call, and what the call used.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct LlmReply {
    /// The reply's text.
    pub content: String,
    /// Tokens of the prompt, as the provider counts them.
    pub input_tokens: u64,
    /// Tokens of the reply, as the provider counts them.
    pub output_tokens: u64,
    /// A subtask request the model made through the spawning tool.
    pub subtask_request: Option<serde_json::Value>,
    /// Files the host put into the context, and what it could not (missing paths, caps).
    pub context_files: Vec<String>,
    /// What the host warns of about the call (a damaged cache entry, a server that
    /// refused a field), for the result's notes.
    pub warnings: Vec<String>,
    /// The model that answered, as the provider names it (empty when unknown).
    pub model: String,
    /// The reply was cut by the output limit (OpenAI `finish_reason: "length"`,
    /// Anthropic `stop_reason: "max_tokens"`).
    pub truncated: bool,
    /// The output limit the call was sent with, if any.
    pub max_tokens: Option<u64>,
    /// Of `input_tokens` (which counts every input token, cached or not), those read
    /// from the provider's prompt cache (OpenAI `prompt_tokens_details.cached_tokens`,
    /// Anthropic `cache_read_input_tokens`).
    pub cache_read_tokens: u64,
    /// Of `input_tokens`, those written to the provider's prompt cache (Anthropic
    /// `cache_creation_input_tokens`; OpenAI reports none).
    pub cache_write_tokens: u64,
    /// What the call cost, in picodollars (10^-12 USD), from the price table; `None`
    /// when the model has no price. A reply not paid for (echo, a cassette, the reply
    /// cache) costs `Some(0)`.
    pub cost: Option<u64>,
    /// Answered without asking the provider: from the reply cache or a cassette.
    pub cached: bool,
}

/// What a script task's command did.
#[derive(Clone, Debug, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct ScriptReply {
    /// What the command wrote to its standard output.
    pub stdout: String,
    /// What it wrote to its standard error.
    pub stderr: String,
    /// Its exit status (a host may give 128 + N for a command killed by signal N).
    pub exit_code: i32,
    /// Set when the output was cut at the size cap or held bytes that are not UTF-8.
    pub notes: Vec<String>,
}

/// A host call that could not be answered.
#[derive(Clone, Debug, PartialEq)]
pub struct HostError {
    /// What the task that made the call fails with.
    pub reason: Reason,
    /// What went wrong, as a sentence.
    pub message: String,
    /// Set when the call was refused because a resource of the run would not hold it
    /// (`--max-cost`): the task fails with RESOURCE_EXHAUSTION of that resource and
    /// these metrics instead of a TASK_FAILURE with `reason`.
    pub exhausted: Option<(Resource, Metrics)>,
}

impl HostError {
    /// A call that failed for `reason`.
    pub fn new(reason: Reason, message: impl Into<String>) -> HostError {
        HostError {
            reason,
            message: message.into(),
            exhausted: None,
        }
    }

    /// A call refused before it was made because `resource` would not hold it:
    /// `used` (what the call would have brought the run to) of `limit`.
    pub fn exhausted(
        resource: Resource,
        message: impl Into<String>,
        used: u64,
        limit: u64,
    ) -> HostError {
        HostError {
            exhausted: Some((resource, Metrics { used, limit })),
            ..HostError::new(Reason::UnexpectedError, message)
        }
    }

    /// The task error this failure makes.
    pub fn into_task_error(self) -> TaskError {
        match self.exhausted {
            Some((resource, m)) => TaskError::exhausted(resource, self.message, m.used, m.limit),
            None => TaskError::failure(self.reason, self.message),
        }
    }
}

/// A deterministic host for tests: answers each request from a function.
pub trait Host {
    /// The reply to `request`.
    fn call(&mut self, request: &HostRequest) -> HostReply;
}

/// The echo provider's answer (a dry run). A task whose output is typed JSON gets the
/// smallest value of its type (DESIGN §13), so that every later step of a workflow runs;
/// JSON of no declared type gets `{}`. A text task gets what it would send, in labelled
/// sections, each without its trailing blank lines and left out when empty:
///
/// ```text
/// System:
/// <the system prompt>
///
/// Context:
/// <the context: inherited, accumulated, files>
///
/// Prompt:
/// <the last message>
/// ```
pub fn echo(r: &LlmRequest) -> LlmReply {
    use crate::bundle::Output;
    use tv_stdlib::types::{smallest_value, Type};
    let content = match &r.task.output {
        Output::Json(Some(ty)) if *ty.as_type() != Type::Any => {
            smallest_value(ty.as_type()).to_string()
        }
        Output::Json(_) => "{}".to_string(),
        Output::Text => echo_text(r),
    };
    LlmReply {
        content,
        ..LlmReply::default()
    }
}

/// A text task's echo, written once into a string of its final size: in a sequence
/// that accumulates, the context is the 16 KiB cap on every step.
fn echo_text(r: &LlmRequest) -> String {
    let prompt = r.messages.last().map_or("", |m| m.content.as_str());
    // The context's two parts, as one text without its trailing blank lines.
    let [head, body] = r.context.parts();
    let context = match body.trim_end() {
        "" => [head.trim_end(), ""],
        body => [head, body],
    };
    let sections = [
        ("System", [r.system_prompt.trim_end(), ""]),
        ("Context", context),
        ("Prompt", [prompt.trim_end(), ""]),
    ];
    let shown = || {
        sections
            .iter()
            .filter(|(_, [a, b])| !(a.is_empty() && b.is_empty()))
    };
    let size: usize = shown()
        .map(|(label, [a, b])| "\n\n".len() + label.len() + ":\n".len() + a.len() + b.len())
        .sum();
    // No blank line before the first section.
    let mut out = String::with_capacity(size.saturating_sub("\n\n".len()));
    for (label, [a, b]) in shown() {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        out.push_str(label);
        out.push_str(":\n");
        out.push_str(a);
        out.push_str(b);
    }
    out
}

/// Answers every LLM request as [`echo`] does, and runs no script (dry runs).
#[derive(Debug, Default)]
pub struct EchoHost;

impl Host for EchoHost {
    fn call(&mut self, request: &HostRequest) -> HostReply {
        match request {
            HostRequest::Llm(r) => HostReply::Llm(Ok(echo(r))),
            HostRequest::Script(s) => HostReply::Script(Ok(ScriptReply {
                stdout: s.command.clone(),
                ..ScriptReply::default()
            })),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::{Output, ValueType};

    fn asked(output: Output, system: &str, context: &str, prompt: &str) -> LlmRequest {
        LlmRequest {
            task: Arc::new(TaskMeta {
                output,
                ..TaskMeta::named("t")
            }),
            system_prompt: system.into(),
            messages: Arc::new(vec![
                Message::user("an earlier turn".into()),
                Message::user(prompt.into()),
            ]),
            context: context.into(),
            model: None,
            settings: ModelSettings::default(),
            query: None,
            requested_files: Vec::new(),
        }
    }

    #[test]
    fn a_text_task_is_answered_with_what_it_would_send_in_labelled_sections() {
        let full = asked(Output::Text, "Be brief.", "a.txt: alpha\n", "Sum up.");
        assert_eq!(
            echo(&full).content,
            "System:\nBe brief.\n\nContext:\na.txt: alpha\n\nPrompt:\nSum up."
        );
        // Empty sections are left out.
        let bare = asked(Output::Text, "", "", "Sum up.");
        assert_eq!(echo(&bare).content, "Prompt:\nSum up.");
        let no_system = asked(Output::Text, "", "notes", "Go.");
        assert_eq!(echo(&no_system).content, "Context:\nnotes\n\nPrompt:\nGo.");
    }

    #[test]
    fn a_context_in_two_parts_is_echoed_as_one_text_without_its_trailing_blank_lines() {
        // (head, body, start of the body's window, the Context section echoed)
        let cases = [
            (
                "Earlier:\n",
                "xxStep 1: done\n\n",
                2,
                "Earlier:\nStep 1: done",
            ),
            ("Earlier:\n  \n", "xx \n\n", 2, "Earlier:"),
            ("", "Step 1: done\n", 0, "Step 1: done"),
            ("head ", "", 0, "head"),
        ];
        for (head, body, start, shown) in cases {
            let mut r = asked(Output::Text, "", "", "Go.");
            r.context = SharedText::window(head, Arc::new(body.into()), start);
            let echoed = echo(&r).content;
            assert_eq!(
                echoed,
                format!("Context:\n{shown}\n\nPrompt:\nGo."),
                "{head:?} {body:?}"
            );
            assert_eq!(echoed.len(), echoed.capacity(), "written once, at its size");
        }
        let mut r = asked(Output::Text, "", "", "Go.");
        r.context = SharedText::window(" \n", Arc::new("xx\n\n".into()), 2);
        assert_eq!(echo(&r).content, "Prompt:\nGo.");
    }

    #[test]
    fn a_typed_task_is_answered_with_the_smallest_value_of_its_type() {
        let typed = |written: &str| {
            let ty = ValueType::parse(written).expect(written);
            echo(&asked(Output::Json(Some(ty)), "s", "c", "p")).content
        };
        assert_eq!(
            typed(r#"{approved: boolean, findings: string[], note?: string, level: "low"|"high"}"#),
            r#"{"approved":false,"findings":[],"level":"low"}"#
        );
        assert_eq!(typed("string[]"), "[]");
        assert_eq!(typed("number"), "0");
        assert_eq!(typed("any"), "{}");
        assert_eq!(
            echo(&asked(Output::Json(None), "s", "c", "p")).content,
            "{}"
        );
    }
}
