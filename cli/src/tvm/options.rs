//! The options `tvm run` and `tvm resume` share: who answers host calls, what is
//! written down about them, the bounds they run within, and the host they make.

use clap::Args;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tv_cli::{env, output};
use tv_runtime::cache::ReplyCache;
use tv_runtime::cassette::{Cassette, RecordMode, Recorder};
use tv_runtime::config::env::unknown_provider;
use tv_runtime::config::{
    at_least_one, CacheChoice, Calls, ContextPart, Cost, LimitsPart, Models, ProviderPart, Purpose,
    RunConfig, Sampling,
};
use tv_runtime::host::{Choice, RunHost};
use tv_runtime::ledger::{CostBudget, Ledger, Shared};
use tv_runtime::model::{Recorded, Replay};
use tv_runtime::observe::{Progress, Trace};
use tv_runtime::prices::{self, Prices};
use tv_runtime::providers::{self, JsonMode, Settings};
use tv_runtime::script::ScriptRunner;
use tv_vm::limits::Limits;

/// Who answers host calls, and what is written down about them.
#[derive(Args, Clone)]
pub(crate) struct HostArgs {
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

fn temperature(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(t) if (0.0..=2.0).contains(&t) => Ok(t),
        _ => Err(format!("`{s}` is not a number from 0 to 2")),
    }
}

impl HostArgs {
    /// The command line's layer of the run's config: what the flags give, nothing else.
    /// `--allow-read` paths are resolved (links, `..`, the current directory), so that
    /// the journal keeps what was meant whatever folder a resume starts from.
    pub(crate) fn layer(&self) -> Result<RunConfig, String> {
        let mut allow_read = Vec::new();
        for p in &self.allow_read {
            allow_read.push(
                std::fs::canonicalize(p)
                    .map_err(|e| format!("--allow-read {}: {e}", p.display()))?,
            );
        }
        let choice = match &self.provider {
            Some(p) => Some(Choice::parse(p).ok_or_else(|| unknown_provider(p))?),
            None => None,
        };
        let json_mode = match &self.json_mode {
            Some(m) => {
                Some(JsonMode::parse(m).ok_or_else(|| format!("unknown --json-mode `{m}`"))?)
            }
            None => None,
        };
        let cache = match (&self.cache, self.no_cache) {
            (_, true) => Some(CacheChoice::Off),
            (Some(dir), false) => Some(CacheChoice::Dir(dir.clone())),
            (None, false) => None,
        };
        Ok(RunConfig {
            provider: ProviderPart {
                choice,
                cassette: self.cassette.clone(),
            },
            models: Models {
                default: self.model.clone(),
                force: self.force_model.clone(),
            },
            sampling: Sampling {
                temperature: self.temperature,
                max_tokens: self.max_output_tokens,
                seed: self.seed,
            },
            json_mode,
            calls: Calls {
                concurrency: self.concurrency,
                retries: self.retries,
                request_timeout_secs: self.request_timeout,
                rate_wait_secs: self.rate_wait,
                max_reply_bytes: self.max_reply_bytes,
            },
            context: ContextPart {
                workspace: self.workspace.clone(),
                allow_read: Some(allow_read).filter(|a| !a.is_empty()),
                require_files: self.require_files.then_some(true),
            },
            cost: Cost {
                max_cost: self.max_cost,
                prices: self.prices.clone(),
                cache,
            },
            limits: LimitsPart::default(),
        })
    }
}

/// The config of a run, a batch or a worker: the defaults, the environment's settings,
/// then the flags (and `limits`), with the `.env`'s bounds lowering what is in force
/// (its warnings said); the provider, where none is named, is the one whose key is set.
pub(crate) fn run_config(a: &HostArgs, limits: Option<&LimitArgs>) -> Result<RunConfig, String> {
    let env = env::environment();
    let mut flags = a.layer()?;
    if let Some(l) = limits {
        flags.limits = l.layer();
    }
    let environment = env.layer(Purpose::Run)?;
    let bounds = env.bounds()?;
    let stack = RunConfig::defaults()
        .overlay(environment.clone())
        .overlay(flags.clone());
    let (mut config, warnings) = stack.clamp(&bounds, &env.bounds_layer()?, &flags);
    for w in warnings {
        output::say(&format!("tvm: warning: {w}\n"));
    }
    if config.provider.choice.is_none() {
        config.provider.choice = RunHost::default_from_keys(env.vars());
    }
    Ok(config)
}

/// The run's calls in flight (and bodies of a map at once).
pub(crate) fn concurrency(config: &RunConfig) -> usize {
    config.concurrency()
}

/// Limits; defaults are those of `Limits::default()`.
#[derive(Args)]
pub(crate) struct LimitArgs {
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
    /// The limits as a layer of the run's config (clap gives each its default).
    pub(crate) fn layer(&self) -> LimitsPart {
        LimitsPart {
            call_depth: Some(self.max_call_depth),
            subtask_depth: Some(self.max_subtask_depth),
            loop_iterations: Some(self.max_iterations),
            turns: Some(self.max_turns),
            tokens: Some(self.max_tokens),
            instructions: Some(self.max_instructions),
            memory: Some(self.max_memory),
            wall_time_secs: Some(self.timeout),
        }
    }
}

/// The host for a run of `config`: provider adapters, cassette, recorder, trace,
/// workspace; `a` gives where the run writes about itself and what a worker's calls
/// share.
pub(crate) fn host(config: &RunConfig, a: &HostArgs) -> Result<RunHost, String> {
    let choice = config.provider.choice;
    let workspace = config.context.workspace.clone();
    if let Some(w) = &workspace {
        if !w.is_dir() {
            return Err(format!("--workspace {}: no such directory", w.display()));
        }
    }
    let model = config.models.default.clone();
    let concurrency = concurrency(config);
    let c = &config.calls;
    let retries = c.retries.unwrap_or(providers::DEFAULT_RETRIES);
    let timeout = c
        .request_timeout_secs
        .unwrap_or(providers::DEFAULT_REQUEST_TIMEOUT_SECS);
    let timeout = Duration::from_secs(timeout.max(1));
    let rate_wait = Duration::from_secs(
        c.rate_wait_secs
            .unwrap_or(providers::DEFAULT_RATE_WAIT_SECS),
    );
    // More than the address space means no cap.
    let max_reply_bytes = c
        .max_reply_bytes
        .map_or(providers::DEFAULT_MAX_REPLY_BYTES, |n| {
            usize::try_from(n).unwrap_or(usize::MAX)
        });
    let json_mode = config.json_mode.unwrap_or_default();
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
    let cache = config
        .cost
        .cache
        .as_ref()
        .and_then(CacheChoice::dir)
        .cloned();
    let ledger = Some(Arc::new(ledger(
        config,
        cache.as_deref(),
        a.shared.clone(),
    )?));
    let default_model = config.models.default.clone();
    let scripts = ScriptRunner::default();
    let mut host = RunHost::new(
        choice,
        env::vars(),
        tune,
        scripts,
        ledger,
        default_model.clone(),
    )?;
    host.defaults = config.model_settings();
    if let Some(m) = &config.models.force {
        tv_stdlib::models::parse_model(m)
            .map_err(|e| format!("--force-model `{m}` is not a model identifier: {e}"))?;
        host.force_model = Some(m.clone());
    }
    let cassette = &config.provider.cassette;
    match (cassette, choice) {
        (Some(path), Some(Choice::Replay)) => {
            let cassette = Cassette::load(path)?.with_max_reply_bytes(max_reply_bytes);
            let replay = Replay::cassette(cassette, default_model);
            host.models.set(Choice::Replay, Arc::new(replay));
        }
        (None, Some(Choice::Replay)) => {
            return Err("--provider replay needs --cassette FILE".into())
        }
        (Some(_), _) => return Err("--cassette is read by --provider replay only".into()),
        (None, _) => {}
    }
    if let Some(path) = &a.record {
        let mode = a.record_mode.map_or(RecordMode::New, RecordMode::from);
        let recorder = Arc::new(Recorder::create(path, mode)?);
        host.models.layer(|inner| {
            let recorder = recorder.clone();
            Arc::new(Recorded { inner, recorder })
        });
    }
    if let Some(path) = &a.trace {
        host.trace = Some(Trace::create(path)?);
    }
    let progress = Progress::new();
    tv_cli::log::above(Some(progress.above()));
    host.progress = Some(progress);
    host.context.workspace = workspace;
    host.context.allow_read = config.context.allow_read.clone().unwrap_or_default();
    // What the run reads and writes about itself is never context (callers add theirs).
    let own = [cassette, &a.record, &a.trace, &config.cost.prices, &cache];
    host.context.own_files = own.into_iter().flatten().cloned().collect();
    host.context.require_files = config.context.require_files.unwrap_or(false);
    Ok(host)
}

/// Prices, the budget and the cache the run's calls are counted against.
fn ledger(
    config: &RunConfig,
    cache: Option<&Path>,
    shared: Option<Arc<dyn Shared>>,
) -> Result<Ledger, String> {
    let mut prices = Prices::builtin();
    if let Some(path) = &config.cost.prices {
        prices.extend_from_file(path)?;
    }
    Ok(Ledger {
        prices,
        budget: config.cost.max_cost.map(CostBudget::new),
        cache: cache
            .map(ReplyCache::open)
            .transpose()
            .map_err(|e| e.to_string())?,
        shared,
    })
}
