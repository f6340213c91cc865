//! LLM provider adapters (DESIGN §9): a HandlerPayload ([`LlmRequest`]) becomes one HTTP
//! call to an OpenAI-compatible chat-completions server or to Anthropic's messages API,
//! with retries (`retry`), a per-attempt timeout and a cap on concurrent calls.
//!
//! The API key never appears in an error, a `Debug` rendering or a log line: it is held
//! in a header value marked sensitive, and error excerpts of response bodies are scrubbed
//! of it (servers sometimes echo the key they refused).

pub(crate) mod anthropic;
mod body;
pub(crate) mod openai;
mod rate;
mod retry;
mod structured;
mod transport;

use crate::config::env as vars;
pub(crate) use crate::config::env::{Source, Vars};
pub use crate::model::{CallError, CallKind};
pub use anthropic::Anthropic;
pub use openai::OpenAi;
pub use structured::{schema_name, JsonMode};

pub use crate::config::{
    DEFAULT_CONCURRENCY, DEFAULT_MAX_REPLY_BYTES, DEFAULT_RATE_WAIT_SECS,
    DEFAULT_REQUEST_TIMEOUT_SECS, DEFAULT_RETRIES,
};
pub(crate) use body::too_large;
use serde_json::{json, Value};
use std::fmt;

use std::time::Duration;
use transport::Transport;
use tv_stdlib::models::{left_out, Provider, Setting};
use tv_vm::bundle::ModelSettings;
use tv_vm::host::LlmRequest;

/// The name of the tool through which a model asks for a subtask.
pub(crate) const SPAWN_SUBTASK: &str = "spawn_subtask";

/// How one provider is reached. Every field is public so that a caller (or a test) can
/// start from [`Settings::new`] or the `*_from_vars` constructors and adjust.
#[derive(Clone)]
pub struct Settings {
    /// Without a trailing slash, e.g. `https://api.openai.com/v1`.
    pub base_url: String,
    pub api_key: Option<String>,
    /// Used when a task names no model.
    pub default_model: String,
    /// Applies to each attempt: connecting, sending, and reading the whole reply.
    pub request_timeout: Duration,
    /// Retries after the first attempt (default 4).
    pub max_retries: u32,
    /// Total time a request may spend waiting between attempts (default 30 s).
    pub max_retry_wait: Duration,
    /// The first backoff; it doubles with each retry (default 500 ms).
    pub backoff_base: Duration,
    /// Total time a request may spend waiting for the provider's rate limit (429s),
    /// which counts apart from `max_retries` and `max_retry_wait` (default 300 s).
    pub max_rate_wait: Duration,
    /// Attempts in flight at once, over all requests to this provider, at most (default
    /// 16); fewer while the provider answers 429 (see `rate`).
    pub concurrency: usize,
    /// Bytes one reply may have (default 8 MiB); a longer one fails its call, unretried.
    pub max_reply_bytes: usize,
    /// How typed output is asked for (default native).
    pub json_mode: JsonMode,
}

impl Settings {
    /// The defaults of DESIGN §9 for a server at `base_url`, with no key.
    pub fn new(base_url: impl Into<String>, default_model: impl Into<String>) -> Settings {
        Settings {
            base_url: base_url.into().trim_end_matches('/').to_string(),
            api_key: None,
            default_model: default_model.into(),
            request_timeout: Duration::from_secs(DEFAULT_REQUEST_TIMEOUT_SECS),
            max_retries: DEFAULT_RETRIES,
            max_retry_wait: Duration::from_secs(30),
            backoff_base: Duration::from_millis(500),
            max_rate_wait: Duration::from_secs(DEFAULT_RATE_WAIT_SECS),
            concurrency: DEFAULT_CONCURRENCY,
            max_reply_bytes: DEFAULT_MAX_REPLY_BYTES,
            json_mode: JsonMode::Native,
        }
    }

    /// OpenAI's settings from the variables `var` gives, as if set in the environment
    /// (`OPENAI_BASE_URL`, `OPENAI_API_KEY` and `TVM_MODEL`).
    pub fn openai_from_vars(var: impl Fn(&str) -> Option<String>) -> Settings {
        OPENAI.settings(&Vars::read(var, vars::PROVIDER_VARS, Source::Environment))
    }

    /// Anthropic's settings from the variables `var` gives, as [`Settings::openai_from_vars`].
    pub fn anthropic_from_vars(var: impl Fn(&str) -> Option<String>) -> Settings {
        ANTHROPIC.settings(&Vars::read(var, vars::PROVIDER_VARS, Source::Environment))
    }

    /// OpenAI's settings from `vars`, or `None` when neither its key nor a base URL is
    /// set; an error when the key would go to a server named elsewhere than the key.
    pub(crate) fn openai_from(vars: &Vars) -> Result<Option<Settings>, String> {
        OPENAI.checked(vars)
    }

    /// Anthropic's settings from `vars`, as [`Settings::openai_from`].
    pub(crate) fn anthropic_from(vars: &Vars) -> Result<Option<Settings>, String> {
        ANTHROPIC.checked(vars)
    }

    /// The model a request asks for, without a `provider:` prefix, else the default.
    pub fn model_for(&self, req: &LlmRequest) -> String {
        match req.model.as_deref().map(tv_stdlib::models::parse_model) {
            Some(Ok(m)) => m.name,
            // The compiler rejects malformed identifiers; a bundle that still has
            // one is better served by the default than by a request sure to fail.
            Some(Err(_)) | None => self.default_model.clone(),
        }
    }
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Settings")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("default_model", &self.default_model)
            .field("request_timeout", &self.request_timeout)
            .field("max_retries", &self.max_retries)
            .field("max_retry_wait", &self.max_retry_wait)
            .field("backoff_base", &self.backoff_base)
            .field("concurrency", &self.concurrency)
            .field("max_reply_bytes", &self.max_reply_bytes)
            .field("json_mode", &self.json_mode)
            .finish()
    }
}

/// Where one provider's settings come from, and where its key may go without a base URL.
struct Endpoint {
    url_var: &'static str,
    default_url: &'static str,
    key_var: &'static str,
    default_model: &'static str,
}

const OPENAI: Endpoint = Endpoint {
    url_var: vars::OPENAI_BASE_URL,
    default_url: "https://api.openai.com/v1",
    key_var: openai::KEY_VAR,
    default_model: "gpt-4o-mini",
};

const ANTHROPIC: Endpoint = Endpoint {
    url_var: vars::ANTHROPIC_BASE_URL,
    default_url: "https://api.anthropic.com",
    key_var: anthropic::KEY_VAR,
    default_model: "claude-sonnet-4-5",
};

impl Endpoint {
    fn settings(&self, vars: &Vars) -> Settings {
        let mut s = Settings::new(
            vars.value(self.url_var).unwrap_or(self.default_url),
            vars.value("TVM_MODEL").unwrap_or(self.default_model),
        );
        s.api_key = vars.value(self.key_var).map(str::to_string);
        s
    }

    /// The settings when a key or a base URL is set, once the key is known to go where
    /// it may: to a base URL set in the same place as the key, or to the provider's own
    /// server. A base URL without a key (a local server) may come from anywhere.
    fn checked(&self, vars: &Vars) -> Result<Option<Settings>, String> {
        let (key, url) = (vars.get(self.key_var), vars.get(self.url_var));
        if let (Some(key), Some(url)) = (key, url) {
            if !key.source.same_place(url.source) && !same_url(&url.value, self.default_url) {
                return Err(format!(
                    "{} is set in {} but {} in {}: tvm sends a key only to a server named in \
                     the same place as the key (both in the environment, or both in the .env) \
                     or to the provider's own ({}); set {} where {} is, or remove it from {}",
                    self.key_var,
                    key.source,
                    self.url_var,
                    url.source,
                    self.default_url,
                    self.url_var,
                    self.key_var,
                    url.source
                ));
            }
        }
        Ok((key.is_some() || url.is_some()).then(|| self.settings(vars)))
    }
}

/// Whether `given` is the URL `default`, once parsed: `https://API.openai.com/v1/` is,
/// `https://api.openai.com@elsewhere/v1` is not.
fn same_url(given: &str, default: &str) -> bool {
    let parse = |u: &str| reqwest::Url::parse(u.trim().trim_end_matches('/')).ok();
    parse(given).is_some_and(|g| Some(g) == parse(default))
}

/// The JSON schema of the seeds' SubtaskRequest, as the spawning tool's parameters.
pub fn subtask_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "type": {
                "type": "string",
                "enum": ["atomic", "sequential", "reduce", "script", "director_evaluator_loop"],
                "description": "The kind of task to spawn; usually atomic."
            },
            "description": {
                "type": "string",
                "description": "What the subtask must do; used to choose its template."
            },
            "inputs": {
                "type": "object",
                "description": "Named input values for the subtask."
            },
            "template_hints": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Names of templates that may fit."
            },
            "subtype": {
                "type": "string",
                "description": "Optional subtype of an atomic task."
            },
            "file_paths": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Files to include in the subtask's context."
            }
        },
        "required": ["type", "description", "inputs"]
    })
}

/// What the spawning tool is for, in words a model reads.
pub(crate) const SPAWN_SUBTASK_DESCRIPTION: &str = "Run a subtask and continue this task with its \
result. Use it when part of the work is a separate task of its own.";

/// A request the server refused for its spawning tool gets told which task offered the
/// tool and which element turns it off: stock local servers (llama.cpp without
/// `--jinja`, some Ollama models) refuse tools, with whatever status they choose.
fn explain_unsupported(e: CallError, req: &LlmRequest) -> CallError {
    let tools = matches!(e.refused_field(), Some("tools" | "tool_choice"));
    if !(tools && req.task.subtasks) {
        return e;
    }
    e.with_suffix(&format!(
        "\n(the server does not take tools: task `{}` offers the spawn_subtask tool because \
             it says `<subtasks>enabled</subtasks>`; remove that element, or use a server with \
             tool support, e.g. llama-server started with --jinja)",
        req.task.name
    ))
}

/// The settings `req` is sent to `model` of `provider` with: those the model does not
/// take by the capability table (a reasoning model's temperature, Anthropic's seed)
/// left out, each said in a warning for the task's notes.
pub(crate) fn sendable(
    provider: Provider,
    model: &str,
    req: &LlmRequest,
) -> (ModelSettings, Vec<String>) {
    let mut s = req.settings.clone();
    let set: Vec<Setting> = [
        (Setting::Temperature, s.temperature.is_some()),
        (Setting::TopP, s.top_p.is_some()),
        (Setting::Stop, s.stop.is_some()),
        (Setting::Seed, s.seed.is_some()),
    ]
    .into_iter()
    .filter_map(|(setting, on)| on.then_some(setting))
    .collect();
    let mut warnings = Vec::new();
    for left in left_out(provider, model, &set) {
        match left.setting {
            Setting::Temperature => s.temperature = None,
            Setting::TopP => s.top_p = None,
            Setting::Stop => s.stop = None,
            Setting::Seed => s.seed = None,
        }
        warnings.push(format!(
            "task `{}`: {}, so the request leaves `{}` out",
            req.task.name,
            left.why,
            left.setting.as_str()
        ));
    }
    (s, warnings)
}

/// The system text: the system prompt, then the memory system's context when there is one
/// (the [`system_parts`] joined by a blank line).
fn system_text(req: &LlmRequest) -> String {
    let [prompt, context] = system_parts(req);
    match (prompt, context) {
        (Some(prompt), Some(context)) => format!("{prompt}\n\n{context}"),
        (Some(one), None) | (None, Some(one)) => one,
        (None, None) => String::new(),
    }
}

/// Token counts from a reply's `usage`; `field` is a name, or a path of names joined by
/// `/` (`prompt_tokens_details/cached_tokens`). A server that reports none (some local
/// ones), or reports `null`, counts as zero rather than failing the run.
fn tokens(usage: Option<&Value>, field: &str) -> u64 {
    usage
        .and_then(|u| field.split('/').try_fold(u, |v, name| v.get(name)))
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

/// The parts of the system text, static first: the task's system prompt, then the memory
/// system's context as `Context:\n...`; each only when it is not empty. The system prompt
/// is the same for every call of a task, so it leads, and a provider's prompt cache can
/// keep it (and the context after it) as a prefix.
fn system_parts(req: &LlmRequest) -> [Option<String>; 2] {
    let prompt = Some(req.system_prompt.clone()).filter(|p| !p.is_empty());
    let context = Some(&req.context)
        .filter(|c| !c.is_empty())
        .map(|c| format!("Context:\n{c}"));
    [prompt, context]
}

/// Tokens in `chars` characters of prompt, estimated at 4 characters a token, rounded up
/// (DESIGN §15): close enough for deciding what to ask a provider to cache.
fn estimated_tokens(chars: usize) -> u64 {
    chars.div_ceil(4) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(list: &[(&str, &str, Source)]) -> Vars {
        let mut vars = Vars::default();
        for (name, value, source) in list {
            vars.insert(name, value.to_string(), *source);
        }
        vars
    }

    #[test]
    fn a_key_of_the_shell_may_go_to_its_providers_own_url_named_in_a_dotenv() {
        let dotenv = Source::DotEnv { line: 1 };
        for url in ["https://api.openai.com/v1", "https://API.openai.com/v1/"] {
            let v = vars(&[
                ("OPENAI_API_KEY", "sk-shell", Source::Environment),
                ("OPENAI_BASE_URL", url, dotenv),
            ]);
            let s = Settings::openai_from(&v).expect("allowed").expect("set");
            assert_eq!(s.api_key.as_deref(), Some("sk-shell"));
        }
        for url in [
            "https://api.openai.com@evil.example/v1",
            "https://api.openai.com.evil.example/v1",
            "http://api.openai.com/v1",
        ] {
            let v = vars(&[
                ("OPENAI_API_KEY", "sk-shell", Source::Environment),
                ("OPENAI_BASE_URL", url, dotenv),
            ]);
            let e = Settings::openai_from(&v).expect_err(url);
            assert!(
                e.starts_with(
                    "OPENAI_API_KEY is set in the environment but OPENAI_BASE_URL in .env:1"
                ),
                "{e}"
            );
        }
    }

    #[test]
    fn neither_key_nor_base_url_means_no_settings_and_a_base_url_alone_means_no_key() {
        assert!(Settings::anthropic_from(&Vars::default())
            .expect("ok")
            .is_none());
        let v = vars(&[(
            "ANTHROPIC_BASE_URL",
            "http://127.0.0.1:8080",
            Source::DotEnv { line: 3 },
        )]);
        let s = Settings::anthropic_from(&v).expect("ok").expect("set");
        assert_eq!(
            (s.base_url.as_str(), s.api_key),
            ("http://127.0.0.1:8080", None)
        );
    }
}
