//! The part of both adapters that talks HTTP: one client, the adaptive limit on calls in
//! flight, retries, the ledger around each call, and the translation of every failure
//! into a [`CallError`] that never shows the API key.

use super::body::{read_body, Body, ERROR_BODY_BYTES};
use super::rate;
use super::retry::{self, Failure};
use super::Settings;
use crate::ledger::Ledger;
use crate::model::{CallError, CallKind};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use std::fmt;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;
use tv_vm::host::LlmReply;

/// How long an excerpt of a response body in an error message may be.
const EXCERPT_CHARS: usize = 200;

/// How long a server may take to accept a connection.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// TCP keepalive: the first probe of a quiet connection, the probes after it, how many
/// may go unanswered before the connection is given up (30 s in all) and the call
/// retried. A server's system answers them while its model works on a reply.
const KEEPALIVE: Duration = Duration::from_secs(15);
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(5);
const KEEPALIVE_RETRIES: u32 = 3;

/// The fields a server may refuse for lacking the feature they ask for (tools,
/// structured output); an error naming one the request carried is a refusal.
pub(super) const FEATURE_FIELDS: [&str; 4] =
    ["tools", "tool_choice", "response_format", "json_schema"];

/// The part of both adapters that talks HTTP: one client, the concurrency cap, retries,
/// and the translation of every failure into a [`CallError`].
pub(super) struct Transport {
    pub(super) client: reqwest::Client,
    pub(super) settings: Settings,
    /// The calls in flight, adapted to the provider's rate limits.
    pub(super) rate: rate::Rate,
    /// `openai` or `anthropic`, to open error messages with.
    pub(super) provider: &'static str,
    /// The environment variable a refused key came from, for the 401 message.
    pub(super) key_var: &'static str,
    /// Headers every request carries (authentication, API version).
    pub(super) headers: HeaderMap,
    /// Set once the server refused the native structured-output field: every later call
    /// of the run describes its schema in the prompt.
    pub(super) prompt_only: AtomicBool,
    /// Prices, the cost budget and the reply cache; without one, replies have no cost
    /// and nothing is cached.
    pub(super) ledger: Option<Arc<Ledger>>,
}

impl Transport {
    pub(super) fn new(
        mut settings: Settings,
        provider: &'static str,
        key_var: &'static str,
        headers: Vec<(HeaderName, String, bool)>,
    ) -> Result<Transport, String> {
        // The field is public, so `Settings::new`'s trimming may have been bypassed.
        settings.base_url = settings.base_url.trim_end_matches('/').to_string();
        // The URL is not quoted: what is not a URL may hold a key pasted in by mistake.
        let url = reqwest::Url::parse(&settings.base_url)
            .map_err(|e| format!("{provider}: the base URL is not a URL: {e}"))?;
        // A URL is shown in messages and traces, and reqwest would send its user name and
        // password as Basic authentication: a credential goes in the key's variable only.
        if !url.username().is_empty() || url.password().is_some() {
            return Err(format!(
                "{provider}: the base URL holds a user name or password (`user:secret@host`); \
                 tvm sends credentials only in a header, from {key_var}: remove them from the URL"
            ));
        }
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
        // A redirect is not followed: reqwest would send the key on to the new address
        // (it drops `authorization` across hosts, but not Anthropic's `x-api-key`), and a
        // provider's API has no reason to move a POST. The 3xx fails the call instead.
        let mut builder = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none());
        // A local server (llama.cpp, vLLM, a test) must not be sent through a proxy
        // configured for the internet.
        let loopback = matches!(url.host_str(), Some("localhost" | "127.0.0.1" | "[::1]"));
        if loopback {
            builder = builder.no_proxy();
        }
        // Connections (README "tvm", providers): none is kept
        // between calls, because a kept connection to a server that restarted may be
        // held open and never answered, and from this side it cannot be told from a
        // model still working on a long reply, which sends nothing before it is done.
        // A server that does not accept is given up on after the connect timeout, and
        // a peer that stops answering keepalive probes (a machine or container gone)
        // after them; neither cuts a slow reply, whose server's system answers the
        // probes while the model works. (No TCP user timeout: a busy server that has
        // not yet read a long request holds it unacknowledged for as long as it likes.)
        builder = builder
            .pool_max_idle_per_host(0)
            .connect_timeout(CONNECT_TIMEOUT.min(settings.request_timeout))
            .tcp_keepalive(KEEPALIVE)
            .tcp_keepalive_interval(KEEPALIVE_INTERVAL)
            .tcp_keepalive_retries(KEEPALIVE_RETRIES);
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
    pub(super) async fn exchange(
        &self,
        path: &str,
        body: &Value,
        read: impl Fn(&Value) -> Result<LlmReply, CallError>,
    ) -> Result<LlmReply, CallError> {
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
        let ticket = match &ledger.shared {
            Some(shared) => {
                let what = format!("a call to `{}`", model_of(body));
                let bound = ledger.worst(self.provider, body);
                match shared.enter(bound.clone().unwrap_or(None), &what).await {
                    Ok(t) => Some((shared, t)),
                    Err(e) => {
                        Ledger::release(held);
                        // A shared budget refuses a call with no worst case: nothing
                        // bounds its reply, which says better what to do than no price.
                        return Err(match bound {
                            Err(why) => {
                                CallError::new(e.kind(), format!("{why} (the batch's --max-cost)"))
                            }
                            Ok(_) => e,
                        });
                    }
                }
            }
            None => None,
        };
        let raw = match self.post(path, body).await {
            Ok(raw) => raw,
            Err(e) => {
                Ledger::release(held);
                if let Some((shared, t)) = ticket {
                    shared.leave(t, None).await;
                }
                return Err(e);
            }
        };
        let reply = read(&raw);
        let cost = ledger.settle(self.provider, body, held, &reply);
        if let Some((shared, t)) = ticket {
            // A reply that cannot be read was still paid for: its worst case stays spent.
            let paid = cost.or(if reply.is_err() { t.worst } else { None });
            shared.leave(t, paid).await;
        }
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
    async fn post(&self, path: &str, body: &Value) -> Result<Value, CallError> {
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
            Failure::Fatal(self.error(CallKind::QueueClosed, "the request queue was closed".into()))
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
        let response_location = response.headers().get(reqwest::header::LOCATION).cloned();
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
                    CallKind::TooLarge,
                    super::too_large(self.settings.max_reply_bytes),
                )))
            }
        };
        if status.is_success() {
            return serde_json::from_slice(&bytes).map_err(|e| {
                Failure::Fatal(self.error(
                    CallKind::NotJson,
                    format!("the reply is not JSON ({e}): {}", self.excerpt(&bytes)),
                ))
            });
        }
        let code = status.as_u16();
        let what = format!("HTTP {status}: {}", self.excerpt(&bytes));
        // Whatever the status (llama.cpp says 500), an error naming a feature the request
        // carried will not go away with another attempt: the feature is not there.
        if !matches!(code, 401 | 403 | 429) {
            if let Some(field) = named_field(&bytes, body) {
                let message = format!("the server refused the request's `{field}` field ({what})");
                let kind = CallKind::Refused {
                    field,
                    status: code,
                };
                return Err(Failure::Fatal(self.error(kind, message)));
            }
        }
        if code == 429 && !out_of_quota(&bytes) {
            return Err(Failure::Limited {
                error: self.error(CallKind::Status(code), what),
                wait,
            });
        }
        if status.is_server_error() {
            return Err(Failure::Retry {
                error: self.error(CallKind::Status(code), what),
                wait,
            });
        }
        let message = match code {
            300..=399 => format!(
                "the server redirects the request{}; tvm does not follow redirects, so that \
                 the key goes nowhere else: set the base URL to the address meant ({what})",
                redirect_target(&response_location)
            ),
            401 if self.settings.api_key.is_none() => {
                format!("the server wants an API key; set {} ({what})", self.key_var)
            }
            401 => format!("the API key in {} was refused ({what})", self.key_var),
            403 => format!("access denied; check the key in {} ({what})", self.key_var),
            429 => format!("the account's quota is used up; waiting will not help ({what})"),
            _ => what,
        };
        Err(Failure::Fatal(self.error(CallKind::Status(code), message)))
    }

    fn transport_failure(&self, e: reqwest::Error) -> Failure {
        let error = if e.is_timeout() {
            self.error(
                CallKind::Timeout,
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
            let kind = match e.is_builder() {
                true => CallKind::Request,
                false => CallKind::Connection,
            };
            self.error(kind, text)
        };
        if e.is_builder() {
            Failure::Fatal(error)
        } else {
            Failure::Retry { error, wait: None }
        }
    }

    pub(super) fn error(&self, kind: CallKind, message: String) -> CallError {
        CallError::new(kind, self.redact(format!("{}: {message}", self.provider)))
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
    pub(super) fn malformed(&self, what: &str, reply: &Value) -> CallError {
        let text = reply.to_string();
        self.error(
            CallKind::Malformed,
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

/// The first of [`FEATURE_FIELDS`] that `body` (the request) carries and the error
/// reply `error` names as a word (`tools` in "tools param requires --jinja flag", not in
/// "tool_choice").
fn named_field(error: &[u8], body: &Value) -> Option<&'static str> {
    let text = String::from_utf8_lossy(error).to_lowercase();
    let carried = |f: &str| match f {
        "json_schema" => body.pointer("/response_format/json_schema").is_some(),
        f => body.get(f).is_some(),
    };
    FEATURE_FIELDS
        .into_iter()
        .filter(|f| carried(f))
        .find(|f| names_word(&text, f))
}

/// Whether `word` occurs in `text` with no letter, digit or `_` either side.
fn names_word(text: &str, word: &str) -> bool {
    let part = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    text.match_indices(word).any(|(at, _)| {
        !part(text[..at].chars().next_back()) && !part(text[at + word.len()..].chars().next())
    })
}

/// Whether a 429's body says the account has no credit left (OpenAI's
/// `insufficient_quota`) rather than that calls come too fast.
fn out_of_quota(body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(body);
    text.contains("insufficient_quota")
}

/// ` to HOST` for a redirect's `Location` that names a host (its path and query, which
/// may carry tokens, left out), else nothing.
fn redirect_target(location: &Option<reqwest::header::HeaderValue>) -> String {
    location
        .as_ref()
        .and_then(|l| l.to_str().ok())
        .and_then(|l| reqwest::Url::parse(l).ok())
        .and_then(|u| u.host_str().map(|h| format!(" to {h}")))
        .unwrap_or_default()
}

/// The model a request body names, for messages.
fn model_of(body: &Value) -> &str {
    body.get("model")
        .and_then(Value::as_str)
        .unwrap_or_default()
}
