//! The options `tvm run` and `tvm resume` share: who answers host calls, what is
//! written down about them, the bounds they run within, and the host they make.

use crate::{dotenv, output};
use clap::Args;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tv_runtime::cache::ReplyCache;
use tv_runtime::cassette::{Cassette, RecordMode, Recorder};
use tv_runtime::host::{Choice, RunHost};
use tv_runtime::journal::{self, Header};
use tv_runtime::ledger::{CostBudget, Ledger, Shared};
use tv_runtime::observe::{Progress, Trace};
use tv_runtime::prices::{self, Prices};
use tv_runtime::providers::{self, JsonMode, Settings, Source, Vars};
use tv_runtime::script::ScriptRunner;
use tv_vm::bundle::ModelSettings;
use tv_vm::limits::Limits;

/// Who answers host calls, and what is written down about them.
#[derive(Args, Clone)]
pub struct HostArgs {
    /// Who answers LLM calls: openai, anthropic, replay or echo (default: $TVM_PROVIDER,
    /// else the provider whose key is set).
    #[arg(long)]
    pub provider: Option<String>,
    /// The model for tasks that name none (default: $TVM_MODEL, else the provider's).
    #[arg(long)]
    pub model: Option<String>,
    /// The recorded replies `--provider replay` answers from.
    #[arg(long, value_name = "FILE")]
    pub cassette: Option<PathBuf>,
    /// The folder whose files fresh context may search (honouring .gitignore); none
    /// named, none searched.
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// A file or folder outside the workspace (or, without one, outside the current
    /// directory) that a task may name in its `file_paths`; repeatable. Without it such
    /// paths (absolute, with `..`, or through a link) are skipped with a warning.
    #[arg(long, value_name = "PATH")]
    pub allow_read: Vec<PathBuf>,
    /// Fail a task whose `file_paths` names a file that cannot be read (missing,
    /// refused, not text), with context_retrieval_failure, instead of asking the model
    /// without it and saying so in a warning.
    #[arg(long)]
    pub require_files: bool,
    /// Write one JSON line per host call: what was asked, how long, tokens, outcome.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Write every LLM reply of this run to a cassette: a new file, unless
    /// --record-mode says what to do with one that exists.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// What --record does with a cassette that exists: add this run's replies after its
    /// entries, or replace it (without this, an existing file is refused).
    #[arg(long, value_enum, value_name = "MODE", requires = "record")]
    pub record_mode: Option<Recording>,
    /// LLM calls in flight at once, per provider, and bodies of a map running at once
    /// where it states no `concurrency` (default: $TVM_CONCURRENCY) [default: 16]. A
    /// resume keeps the run's map setting whatever this says.
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    pub concurrency: Option<usize>,
    /// Retries of an LLM call that met a server error, a timeout or a dropped
    /// connection, before its task fails [default: 4]. Rate limits count apart (--rate-wait).
    #[arg(long, value_name = "N")]
    pub retries: Option<u32>,
    /// Seconds one LLM call may spend in all waiting out the provider's rate limit (429s,
    /// honouring Retry-After) before its task fails [default: 300]. Meanwhile the calls
    /// in flight to that provider are lowered, and raised again as calls succeed.
    #[arg(long, value_name = "SECS")]
    pub rate_wait: Option<u64>,
    /// Seconds one attempt of an LLM call may take, reply included [default: 120].
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub request_timeout: Option<u64>,
    /// Bytes one LLM reply may have; reading stops there and the call fails, without a
    /// retry, so that an endless or huge reply cannot fill the memory [default: 8388608].
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_reply_bytes: Option<u64>,
    /// Sampling temperature (0 to 2) for tasks whose `<model>` sets none.
    #[arg(long, value_name = "T", value_parser = temperature)]
    pub temperature: Option<f64>,
    /// The most tokens a reply may have, for tasks whose `<model>` sets no `max_tokens`;
    /// a reply cut there fails its task (Anthropic's default: 4096).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_output_tokens: Option<u64>,
    /// Sampling seed for tasks whose `<model>` sets none.
    #[arg(long, value_name = "N")]
    pub seed: Option<i64>,
    /// Run every task on this model, whatever its `<model>` says (`provider:model` or a
    /// known name), e.g. to run a library written for one provider on a local server.
    #[arg(long, value_name = "M")]
    pub force_model: Option<String>,
    /// How a task's JSON output type is asked for: `native` sends it in the provider's
    /// structured-output field (OpenAI's response_format, a forced tool for Anthropic)
    /// where the type allows; `prompt` describes it in the system prompt (default:
    /// $TVM_JSON_MODE, else native).
    #[arg(long, value_name = "MODE", value_parser = ["native", "prompt"])]
    pub json_mode: Option<String>,
    /// Prices that add to or replace entries of the built-in table: JSON of the same
    /// shape, `{"models": {"openai:gpt-4o-mini": {"input": 0.15, "output": 0.6}}}`, in
    /// USD per million tokens.
    #[arg(long, value_name = "FILE")]
    pub prices: Option<PathBuf>,
    /// The most the run may spend on LLM calls, in US dollars: each call reserves its
    /// worst case before it is sent, and one that does not fit fails its task with
    /// RESOURCE_EXHAUSTION `cost` instead. Every model the run may call needs a price
    /// (default: $TVM_MAX_COST).
    #[arg(long, value_name = "USD", value_parser = prices::parse_usd)]
    pub max_cost: Option<u64>,
    /// Keep every reply in this folder and answer a request asked before from it,
    /// without sending it (default: $TVM_CACHE).
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
    /// Use no reply cache, even with $TVM_CACHE set.
    #[arg(long, conflicts_with = "cache")]
    pub no_cache: bool,
    /// What the calls share with the other workers of a batch (`tvm worker`).
    #[arg(skip)]
    pub shared: Option<Arc<dyn Shared>>,
}

/// `--record-mode`.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Recording {
    Append,
    Overwrite,
}

impl From<Recording> for RecordMode {
    fn from(r: Recording) -> RecordMode {
        match r {
            Recording::Append => RecordMode::Append,
            Recording::Overwrite => RecordMode::Overwrite,
        }
    }
}

/// A count of 1 or more: with 0 nothing could run (no call in flight, no frame, ...),
/// so 0 is a usage error rather than a run that fails or hangs.
fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("`{s}` is not a whole number of 1 or more")),
    }
}

fn temperature(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(t) if (0.0..=2.0).contains(&t) => Ok(t),
        _ => Err(format!("`{s}` is not a number from 0 to 2")),
    }
}

impl HostArgs {
    /// The run's default sampling settings.
    pub fn sampling(&self) -> ModelSettings {
        ModelSettings {
            temperature: self.temperature,
            max_tokens: self.max_output_tokens,
            seed: self.seed,
            ..ModelSettings::default()
        }
    }

    /// Resolves every `--allow-read` path (links, `..`, the current directory), so that
    /// the journal keeps what was meant whatever folder a resume starts from.
    pub fn resolve_allow_read(&mut self) -> Result<(), String> {
        for p in &mut self.allow_read {
            *p = std::fs::canonicalize(&*p)
                .map_err(|e| format!("--allow-read {}: {e}", p.display()))?;
        }
        Ok(())
    }

    /// `--max-reply-bytes`, else the default; more than the address space means no cap.
    pub fn max_reply_bytes(&self) -> usize {
        self.max_reply_bytes
            .map_or(providers::DEFAULT_MAX_REPLY_BYTES, |n| {
                usize::try_from(n).unwrap_or(usize::MAX)
            })
    }

    /// `--json-mode`, else `TVM_JSON_MODE`, else native.
    pub fn json_mode(&self) -> Result<JsonMode, String> {
        if let Some(m) = &self.json_mode {
            return JsonMode::parse(m).ok_or_else(|| format!("unknown --json-mode `{m}`"));
        }
        match dotenv::vars().get("TVM_JSON_MODE") {
            // The value is not quoted: a `.env`'s values are never printed.
            Some(m) => JsonMode::parse(m.value.trim())
                .ok_or_else(|| format!("TVM_JSON_MODE (in {}) must be native or prompt", m.source)),
            None => Ok(JsonMode::Native),
        }
    }

    /// `--cache`, else `TVM_CACHE`, unless `--no-cache`.
    pub fn cache_dir(&self) -> Option<PathBuf> {
        if self.no_cache {
            return None;
        }
        self.cache
            .clone()
            .or_else(|| dotenv::vars().value("TVM_CACHE").map(PathBuf::from))
    }

    /// Prices, the budget and the cache the run's calls are counted against.
    pub fn ledger(&self) -> Result<Ledger, String> {
        let mut prices = Prices::builtin();
        if let Some(path) = &self.prices {
            prices.extend_from_file(path)?;
        }
        let cache = self
            .cache_dir()
            .map(|dir| ReplyCache::open(&dir))
            .transpose()?;
        Ok(Ledger {
            prices,
            budget: self.max_cost.map(CostBudget::new),
            cache,
            shared: self.shared.clone(),
        })
    }

    /// A journal's header for a run of `entry` of the bundle at `bundle` (its bytes
    /// hashing to `hash`) with these options; no arguments yet.
    pub fn header(
        &self,
        bundle: &Path,
        hash: String,
        entry: &str,
        choice: Option<Choice>,
        limits: &Limits,
    ) -> Result<Header, String> {
        let (concurrency, retries, request_timeout) = self.calls();
        Ok(Header {
            journal: journal::FORMAT,
            bundle: std::fs::canonicalize(bundle).unwrap_or(bundle.to_path_buf()),
            bundle_sha256: hash,
            entry: entry.to_string(),
            args: serde_json::Map::new(),
            provider: choice.map_or("", Choice::name).to_string(),
            model: self.model.clone(),
            cassette: self.cassette.clone(),
            workspace: self.workspace.clone(),
            allow_read: self.allow_read.clone(),
            limits: limits.clone(),
            concurrency: Some(concurrency),
            retries: Some(retries),
            request_timeout: Some(request_timeout),
            rate_wait: self.rate_wait,
            max_reply_bytes: self.max_reply_bytes,
            sampling: Some(self.sampling()),
            force_model: self.force_model.clone(),
            json_mode: Some(self.json_mode()?.as_str().to_string()),
            max_cost: self.max_cost,
            prices: self.prices.clone(),
            cache: self.cache_dir(),
            require_files: self.require_files,
        })
    }

    /// `--max-cost` and `--concurrency` where the command line gives none: from
    /// `TVM_MAX_COST` and `TVM_CONCURRENCY`, read as the flags are. A `.env` may lower
    /// either, never raise it (a warning says when it tried to, or lowered a value given
    /// on the command line or in the environment). Not for `tvm resume`, which keeps
    /// the run's.
    pub fn settle_bounds(&mut self) -> Result<(), String> {
        let vars = dotenv::vars();
        let cost = Bound {
            name: "TVM_MAX_COST",
            flag: "--max-cost",
            default: None,
        };
        self.max_cost = cost.settle(self.max_cost, vars, prices::parse_usd)?;
        let calls = Bound {
            name: "TVM_CONCURRENCY",
            flag: "--concurrency",
            default: Some(providers::DEFAULT_CONCURRENCY),
        };
        self.concurrency = calls.settle(self.concurrency, vars, |s| at_least_one(s.trim()))?;
        Ok(())
    }

    /// The LLM call settings: those given, else the defaults.
    pub fn calls(&self) -> (usize, u32, u64) {
        (
            self.concurrency.unwrap_or(providers::DEFAULT_CONCURRENCY),
            self.retries.unwrap_or(providers::DEFAULT_RETRIES),
            self.request_timeout
                .unwrap_or(providers::DEFAULT_REQUEST_TIMEOUT_SECS),
        )
    }
}

/// A setting that bounds a run, given by a flag or a `TVM_*` variable.
struct Bound<T> {
    name: &'static str,
    flag: &'static str,
    /// What is in force when neither gives one (`None`: no bound).
    default: Option<T>,
}

impl<T: PartialOrd + Copy> Bound<T> {
    /// The flag's value, else the environment's; lowered to the `.env`'s when that is
    /// lower (no bound at all counts as the highest).
    fn settle(
        &self,
        flag: Option<T>,
        vars: &Vars,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Result<Option<T>, String> {
        let (name, flag_name) = (self.name, self.flag);
        let env = vars
            .from(name, Source::Environment)
            .map(|v| parse(&v.value).map_err(|e| format!("{name} in the environment: {e}")))
            .transpose()?;
        let given = flag.or(env);
        let Some(var) = vars.from(name, Source::DotEnv { line: 0 }) else {
            return Ok(given);
        };
        // The value is not quoted: a `.env`'s values are never printed.
        let lower = parse(&var.value)
            .map_err(|_| format!("{name} in {} is not a value {flag_name} takes", var.source))?;
        let from = match (flag, env) {
            (Some(_), _) => flag_name,
            (None, Some(_)) => "the environment",
            (None, None) => "the default",
        };
        match given.or(self.default) {
            Some(in_force) if lower > in_force => {
                output::say(&format!(
                    "tvm: warning: {}: {name} is above the value in force (from {from}), and a \
                     .env may only lower it; it is not taken\n",
                    var.source
                ));
                Ok(given)
            }
            _ => {
                if given.is_some_and(|g| lower < g) {
                    output::say(&format!(
                        "tvm: warning: {}: {name} lowers the value of {from}; the lower applies\n",
                        var.source
                    ));
                }
                Ok(Some(lower))
            }
        }
    }
}

/// Limits; defaults are those of `Limits::default()`.
#[derive(Args)]
pub struct LimitArgs {
    /// Nested template calls (the entry point is the first).
    #[arg(long, default_value_t = Limits::default().call_depth, value_parser = at_least_one)]
    pub max_call_depth: usize,
    /// Nested subtasks.
    #[arg(long, default_value_t = Limits::default().subtask_depth)]
    pub max_subtask_depth: usize,
    /// Director-evaluator iterations over the run.
    #[arg(long, default_value_t = Limits::default().loop_iterations)]
    pub max_iterations: u64,
    /// Assistant turns over the run.
    #[arg(long, default_value_t = Limits::default().turns)]
    pub max_turns: u64,
    /// Tokens over the run.
    #[arg(long, default_value_t = Limits::default().tokens)]
    pub max_tokens: u64,
    /// Wall-clock seconds for the run.
    #[arg(long, default_value_t = Limits::default().wall_time.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: u64,
    /// Instructions executed.
    #[arg(long, default_value_t = Limits::default().instructions, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_instructions: u64,
    /// Memory the run's values may take: bytes, or with a unit (KiB, MiB, GiB).
    #[arg(long, value_name = "SIZE", default_value = "512MiB", value_parser = size)]
    pub max_memory: u64,
}

/// `512MiB`, `64KiB`, `1GiB` (also `K`, `M`, `G`, binary multiples), or plain bytes.
fn size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    let shift = match unit.trim() {
        "" | "B" => 0,
        "K" | "KiB" => 10,
        "M" | "MiB" => 20,
        "G" | "GiB" => 30,
        other => return Err(format!("unknown unit `{other}` (use KiB, MiB or GiB)")),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("`{s}` is not a positive size"))
}

impl LimitArgs {
    pub fn limits(&self) -> Limits {
        Limits {
            call_depth: self.max_call_depth,
            subtask_depth: self.max_subtask_depth,
            loop_iterations: self.max_iterations,
            turns: self.max_turns,
            tokens: self.max_tokens,
            wall_time: Duration::from_secs(self.timeout),
            instructions: self.max_instructions,
            memory: self.max_memory,
            ..Limits::default()
        }
    }
}

/// The host for a run: provider adapters, cassette, recorder, trace, workspace.
pub fn host(choice: Option<Choice>, a: &HostArgs) -> Result<RunHost, String> {
    if let Some(w) = &a.workspace {
        if !w.is_dir() {
            return Err(format!("--workspace {}: no such directory", w.display()));
        }
    }
    let model = a.model.clone();
    let (concurrency, retries, timeout) = a.calls();
    let timeout = Duration::from_secs(timeout.max(1));
    let rate_wait = Duration::from_secs(a.rate_wait.unwrap_or(providers::DEFAULT_RATE_WAIT_SECS));
    let max_reply_bytes = a.max_reply_bytes();
    let json_mode = a.json_mode()?;
    let tune = move |s: &mut Settings| {
        s.json_mode = json_mode;
        if let Some(m) = &model {
            s.default_model = m.clone();
        }
        s.concurrency = concurrency;
        s.max_retries = retries;
        s.request_timeout = timeout;
        s.max_rate_wait = rate_wait;
        s.max_reply_bytes = max_reply_bytes;
    };
    let ledger = Some(Arc::new(a.ledger()?));
    let vars = dotenv::vars();
    let mut host = RunHost::new(choice, vars, tune, ScriptRunner::default(), ledger)?;
    host.defaults = a.sampling();
    host.model = a.model.clone().or_else(|| {
        let from_env = std::env::var("TVM_MODEL").ok()?;
        Some(from_env.trim().to_string()).filter(|m| !m.is_empty())
    });
    if let Some(m) = &a.force_model {
        tv_stdlib::models::parse_model(m)
            .map_err(|e| format!("--force-model `{m}` is not a model identifier: {e}"))?;
        host.force_model = Some(m.clone());
    }
    match (&a.cassette, choice) {
        (Some(path), Some(Choice::Replay)) => {
            host.cassette = Some(Cassette::load(path)?.with_max_reply_bytes(max_reply_bytes))
        }
        (None, Some(Choice::Replay)) => {
            return Err("--provider replay needs --cassette FILE".into())
        }
        (Some(_), _) => return Err("--cassette is read by --provider replay only".into()),
        (None, _) => {}
    }
    if let Some(path) = &a.record {
        let mode = a.record_mode.map_or(RecordMode::New, RecordMode::from);
        host.recorder = Some(Recorder::create(path, mode)?);
    }
    if let Some(path) = &a.trace {
        host.trace = Some(Trace::create(path)?);
    }
    host.progress = Some(Progress::new());
    host.context.workspace = a.workspace.clone();
    host.context.allow_read = a.allow_read.clone();
    // What the run reads and writes about itself is never context (callers add theirs).
    let own = [&a.cassette, &a.record, &a.trace, &a.prices, &a.cache_dir()];
    host.context.own_files = own.into_iter().flatten().cloned().collect();
    host.context.require_files = a.require_files;
    Ok(host)
}
