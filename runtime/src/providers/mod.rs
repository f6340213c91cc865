//! LLM provider adapters (DESIGN §9): a HandlerPayload ([`LlmRequest`]) becomes one HTTP
//! call to an OpenAI-compatible chat-completions server or to Anthropic's messages API,
//! with retries ([`retry`]), a per-attempt timeout and a cap on concurrent calls.
//!
//! The API key never appears in an error, a `Debug` rendering or a log line: it is held
//! in a header value marked sensitive, and error excerpts of response bodies are scrubbed
//! of it (servers sometimes echo the key they refused).

pub mod anthropic;
mod body;
pub mod openai;
mod rate;
mod retry;
pub mod structured;

pub use anthropic::Anthropic;
pub use openai::OpenAi;
pub use structured::JsonMode;

use crate::ledger::Ledger;
pub use body::DEFAULT_MAX_REPLY_BYTES;
use body::{read_body, Body, ERROR_BODY_BYTES};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use retry::Failure;
use serde_json::{json, Value};
use std::fmt;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;
use tv_vm::host::{HostError, LlmReply, LlmRequest};
use tv_vm::result::Reason;

/// The name of the tool through which a model asks for a subtask.
pub const SPAWN_SUBTASK: &str = "spawn_subtask";

/// How long an excerpt of a response body in an error message may be.
const EXCERPT_CHARS: usize = 200;

/// How one provider is reached. Every field is public so that a caller (or a test) can
/// start from [`Settings::new`] or the `*_from_env` constructors and adjust.
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
    /// 16); fewer while the provider answers 429 (see [`rate`]).
    pub concurrency: usize,
    /// Bytes one reply may have (default 8 MiB); a longer one fails its call, unretried.
    pub max_reply_bytes: usize,
    /// How typed output is asked for (default native).
    pub json_mode: JsonMode,
}

/// Retries after a call's first attempt, unless told otherwise (`tvm run --retries`).
pub const DEFAULT_RETRIES: u32 = 4;
/// Seconds one attempt may take, unless told otherwise (`tvm run --request-timeout`).
pub const DEFAULT_REQUEST_TIMEOUT_SECS: u64 = 120;
/// Attempts in flight at once, unless told otherwise (`tvm run --concurrency`).
pub const DEFAULT_CONCURRENCY: usize = 16;
/// Seconds a request may wait for rate limits, unless told otherwise (`--rate-wait`).
pub const DEFAULT_RATE_WAIT_SECS: u64 = 300;

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

    /// `OPENAI_BASE_URL`, `OPENAI_API_KEY` and `TVM_MODEL` from the environment.
    pub fn openai_from_env() -> Settings {
        Settings::openai_from_vars(|k| std::env::var(k).ok())
    }

    /// `ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY` and `TVM_MODEL` from the environment.
    pub fn anthropic_from_env() -> Settings {
        Settings::anthropic_from_vars(|k| std::env::var(k).ok())
    }

    /// [`Settings::openai_from_env`] reading variables through `var` (tests avoid
    /// mutating the process environment, which other threads may be reading).
    pub fn openai_from_vars(var: impl Fn(&str) -> Option<String>) -> Settings {
        Settings::from_vars(
            &var,
            "OPENAI_BASE_URL",
            "https://api.openai.com/v1",
            openai::KEY_VAR,
            "gpt-4o-mini",
        )
    }

    /// [`Settings::anthropic_from_env`] reading variables through `var`.
    pub fn anthropic_from_vars(var: impl Fn(&str) -> Option<String>) -> Settings {
        Settings::from_vars(
            &var,
            "ANTHROPIC_BASE_URL",
            "https://api.anthropic.com",
            anthropic::KEY_VAR,
            "claude-sonnet-4-5",
        )
    }

    fn from_vars(
        var: &dyn Fn(&str) -> Option<String>,
        url_var: &str,
        url: &str,
        key_var: &str,
        model: &str,
    ) -> Settings {
        // An exported but empty variable (`OPENAI_API_KEY=`) counts as unset.
        let get = |k: &str| {
            var(k)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let mut s = Settings::new(
            get(url_var).unwrap_or_else(|| url.to_string()),
            get("TVM_MODEL").unwrap_or_else(|| model.to_string()),
        );
        s.api_key = get(key_var);
        s
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
pub const SPAWN_SUBTASK_DESCRIPTION: &str = "Run a subtask and continue this task with its \
result. Use it when part of the work is a separate task of its own.";

/// A request the server refused as malformed (HTTP 400 or 422) that names a feature the
/// request used gets told which element turns the feature off: stock local servers
/// (llama.cpp without `--jinja`, some Ollama models) refuse tools.
fn explain_unsupported(mut e: HostError, req: &LlmRequest) -> HostError {
    let refused = e.message.contains("HTTP 400") || e.message.contains("HTTP 422");
    let lower = e.message.to_lowercase();
    if refused && req.task.subtasks && lower.contains("tool") {
        e.message.push_str(&format!(
            "\n(the server seems not to support tools: task `{}` offers the spawn_subtask tool \
             because it says `<subtasks>enabled</subtasks>`; remove that element, or use a \
             server with tool support)",
            req.task.name
        ));
    }
    e
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

/// The part of both adapters that talks HTTP: one client, the concurrency cap, retries,
/// and the translation of every failure into a [`HostError`].
struct Transport {
    client: reqwest::Client,
    settings: Settings,
    /// The calls in flight, adapted to the provider's rate limits.
    rate: rate::Rate,
    /// `openai` or `anthropic`, to open error messages with.
    provider: &'static str,
    /// The environment variable a refused key came from, for the 401 message.
    key_var: &'static str,
    /// Headers every request carries (authentication, API version).
    headers: HeaderMap,
    /// Set once the server refused the native structured-output field: every later call
    /// of the run describes its schema in the prompt.
    prompt_only: AtomicBool,
    /// Prices, the cost budget and the reply cache; without one, replies have no cost
    /// and nothing is cached.
    ledger: Option<Arc<Ledger>>,
}

impl Transport {
    fn new(
        mut settings: Settings,
        provider: &'static str,
        key_var: &'static str,
        headers: Vec<(HeaderName, String, bool)>,
    ) -> Result<Transport, String> {
        // The field is public, so `Settings::new`'s trimming may have been bypassed.
        settings.base_url = settings.base_url.trim_end_matches('/').to_string();
        let url = reqwest::Url::parse(&settings.base_url).map_err(|e| {
            format!(
                "{provider}: the base URL `{}` is not a URL: {e}",
                settings.base_url
            )
        })?;
        let mut map = HeaderMap::new();
        for (name, value, sensitive) in headers {
            // The value is not quoted: it may be the key.
            let mut v = HeaderValue::from_str(&value).map_err(|_| {
                format!("{provider}: the value for the `{name}` header (from {key_var}) contains characters not allowed in HTTP headers")
            })?;
            v.set_sensitive(sensitive);
            map.insert(name, v);
        }
        // reqwest finds no crypto provider on its own with `rustls-no-provider`; an error
        // here only means one is installed already, which reqwest then uses.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = reqwest::Client::builder();
        // A local server (llama.cpp, vLLM, a test) must not be sent through a proxy
        // configured for the internet.
        let loopback = matches!(url.host_str(), Some("localhost" | "127.0.0.1" | "[::1]"));
        if loopback {
            builder = builder.no_proxy();
        }
        let client = builder
            .build()
            .map_err(|e| format!("{provider}: cannot build the HTTP client: {e}"))?;
        Ok(Transport {
            client,
            rate: rate::Rate::new(settings.concurrency),
            settings,
            provider,
            key_var,
            headers: map,
            prompt_only: AtomicBool::new(false),
            ledger: None,
        })
    }

    /// Sends `body` to `{base_url}{path}` and reads the reply with `read`, through the
    /// ledger: a reply the cache holds is not sent for; otherwise the call's worst case
    /// is reserved from the budget first (it is not sent when that does not fit), and
    /// its real cost is settled and the reply stored once it is in.
    async fn exchange(
        &self,
        path: &str,
        body: &Value,
        read: impl Fn(&Value) -> Result<LlmReply, HostError>,
    ) -> Result<LlmReply, HostError> {
        let Some(ledger) = &self.ledger else {
            return read(&self.post(path, body).await?);
        };
        let mut warnings = Vec::new();
        // The key names the endpoint, which costs a URL parse: only with a cache to ask.
        let key = match &ledger.cache {
            Some(_) => ledger.cache_key(self.provider, &self.endpoint(path), body),
            None => None,
        };
        if let Some(key) = &key {
            match ledger.cached(key, &read) {
                Ok(Some(reply)) => return Ok(reply),
                Ok(None) => {}
                Err(warning) => warnings.push(warning),
            }
        }
        let held = ledger.reserve(self.provider, body)?;
        let raw = match self.post(path, body).await {
            Ok(raw) => raw,
            Err(e) => {
                Ledger::release(held);
                return Err(e);
            }
        };
        let reply = read(&raw);
        let cost = ledger.settle(self.provider, body, held, &reply);
        let mut reply = reply?;
        reply.cost = cost;
        if let Some(key) = key {
            warnings.extend(Ledger::store(ledger, key, raw).await);
        }
        reply.warnings.extend(warnings);
        Ok(reply)
    }

    /// The URL a request goes to, without credentials a base URL may carry.
    fn endpoint(&self, path: &str) -> String {
        let url = format!("{}{path}", self.settings.base_url);
        match reqwest::Url::parse(&url) {
            Ok(mut u) => {
                let _ = u.set_username("");
                let _ = u.set_password(None);
                u.set_query(None);
                u.to_string()
            }
            Err(_) => url,
        }
    }

    /// POSTs `body` to `{base_url}{path}` and returns the JSON of a successful reply.
    async fn post(&self, path: &str, body: &Value) -> Result<Value, HostError> {
        let url = format!("{}{path}", self.settings.base_url);
        let policy = retry::Policy {
            max_retries: self.settings.max_retries,
            max_wait: self.settings.max_retry_wait,
            max_rate_wait: self.settings.max_rate_wait,
            base: self.settings.backoff_base,
        };
        policy.run(|| self.attempt(&url, body)).await
    }

    /// One attempt, holding a slot of the rate for the whole of it, reply body included,
    /// and released while backing off so that waiting requests do not starve the others.
    async fn attempt(&self, url: &str, body: &Value) -> Result<Value, Failure> {
        let slot = self.rate.slot().await.map_err(|_| {
            Failure::Fatal(self.error(
                Reason::UnexpectedError,
                "the request queue was closed".into(),
            ))
        })?;
        let outcome = self.send(url, body).await;
        match &outcome {
            Ok(_) => slot.succeeded(),
            Err(Failure::Limited { wait, .. }) => {
                slot.rate_limited(*wait, self.settings.max_rate_wait)
            }
            Err(_) => drop(slot),
        }
        outcome
    }

    async fn send(&self, url: &str, body: &Value) -> Result<Value, Failure> {
        let response = self
            .client
            .post(url)
            .headers(self.headers.clone())
            .timeout(self.settings.request_timeout)
            .json(body)
            .send()
            .await
            .map_err(|e| self.transport_failure(e))?;
        let status = response.status();
        let wait = retry::retry_after(response.headers());
        // An error reply is only excerpted, so little of it is read.
        let cap = if status.is_success() {
            self.settings.max_reply_bytes
        } else {
            ERROR_BODY_BYTES.min(self.settings.max_reply_bytes)
        };
        let bytes = match read_body(response, cap)
            .await
            .map_err(|e| self.transport_failure(e))?
        {
            Body::Whole(bytes) => bytes,
            Body::Cut(bytes) if !status.is_success() => bytes,
            // The same request would get the same reply: not retried.
            Body::Cut(_) => {
                return Err(Failure::Fatal(self.error(
                    Reason::UnexpectedError,
                    format!(
                        "the reply is larger than the limit of {} bytes (--max-reply-bytes); \
                         reading stopped there",
                        self.settings.max_reply_bytes
                    ),
                )))
            }
        };
        if status.is_success() {
            return serde_json::from_slice(&bytes).map_err(|e| {
                Failure::Fatal(self.error(
                    Reason::UnexpectedError,
                    format!("the reply is not JSON ({e}): {}", self.excerpt(&bytes)),
                ))
            });
        }
        let code = status.as_u16();
        let what = format!("HTTP {status}: {}", self.excerpt(&bytes));
        if code == 429 && !out_of_quota(&bytes) {
            return Err(Failure::Limited {
                error: self.error(Reason::UnexpectedError, what),
                wait,
            });
        }
        if status.is_server_error() {
            return Err(Failure::Retry {
                error: self.error(Reason::UnexpectedError, what),
                wait,
            });
        }
        let message = match code {
            401 if self.settings.api_key.is_none() => {
                format!("the server wants an API key; set {} ({what})", self.key_var)
            }
            401 => format!("the API key in {} was refused ({what})", self.key_var),
            403 => format!("access denied; check the key in {} ({what})", self.key_var),
            429 => format!("the account's quota is used up; waiting will not help ({what})"),
            _ => what,
        };
        Err(Failure::Fatal(self.error(Reason::UnexpectedError, message)))
    }

    fn transport_failure(&self, e: reqwest::Error) -> Failure {
        let error = if e.is_timeout() {
            self.error(
                Reason::ExecutionTimeout,
                format!("no reply within {:?}", self.settings.request_timeout),
            )
        } else {
            // reqwest's message names the URL but never headers, so not the key.
            let mut text = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                text.push_str(": ");
                text.push_str(&s.to_string());
                source = s.source();
            }
            self.error(Reason::UnexpectedError, text)
        };
        if e.is_builder() {
            Failure::Fatal(error)
        } else {
            Failure::Retry { error, wait: None }
        }
    }

    fn error(&self, reason: Reason, message: String) -> HostError {
        HostError::new(reason, self.redact(format!("{}: {message}", self.provider)))
    }

    /// `text` without the API key, whatever put it there.
    fn redact(&self, text: String) -> String {
        match self.settings.api_key.as_deref().filter(|k| !k.is_empty()) {
            Some(key) if text.contains(key) => text.replace(key, "<redacted>"),
            _ => text,
        }
    }

    /// The start of a body for an error message, on one line and without the key.
    fn excerpt(&self, bytes: &[u8]) -> String {
        let text = String::from_utf8_lossy(bytes);
        // Redacted before cutting, so that no part of the key survives at the cut.
        let one_line = self.redact(text.split_whitespace().collect::<Vec<_>>().join(" "));
        if one_line.is_empty() {
            return "(empty body)".into();
        }
        tv_stdlib::values::cut_chars(&one_line, EXCERPT_CHARS)
    }

    /// A reply that parsed as JSON but lacks what the adapter needs.
    fn malformed(&self, what: &str, reply: &Value) -> HostError {
        let text = reply.to_string();
        self.error(
            Reason::UnexpectedError,
            format!("the reply has no {what}: {}", self.excerpt(text.as_bytes())),
        )
    }
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transport")
            .field("provider", &self.provider)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// Whether a 429's body says the account has no credit left (OpenAI's
/// `insufficient_quota`) rather than that calls come too fast.
fn out_of_quota(body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(body);
    text.contains("insufficient_quota")
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
