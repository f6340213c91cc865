//! A run's settings as one value, [`RunConfig`], built as a stack of layers merged by
//! one rule, [`RunConfig::overlay`]: the built-in defaults, then what the environment
//! gives, then (for a resume) what the journal kept, then the command line's flags. A
//! layer sets only what it has (every field is an `Option`), and a later layer wins
//! wherever it sets a field; an unset field never erases one set below it.
//!
//! A `RunConfig` holds what shapes a run and its replies, never a secret: API keys and
//! base URLs stay in the environment reader, so a journal or a published batch, which
//! embeds the run's `RunConfig`, cannot carry them. Where the run's output goes
//! (`--trace`, `--record`, progress) is per process and is not here either.

mod dotenv;
pub mod env;
mod variables;
mod vars;

use crate::host::Choice;
use env::{DotEnvBounds, Source};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::path::PathBuf;
use std::time::Duration;
use tv_vm::bundle::ModelSettings;
use tv_vm::limits::Limits;

pub use env::{Environment, Purpose};

/// How typed output is asked for (`tvm run --json-mode`, `TVM_JSON_MODE`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JsonMode {
    /// The provider's structured-output field where the type allows it.
    #[default]
    Native,
    /// The schema described in the system text, always.
    Prompt,
}

impl JsonMode {
    pub fn parse(s: &str) -> Option<JsonMode> {
        match s.trim() {
            "native" => Some(JsonMode::Native),
            "prompt" => Some(JsonMode::Prompt),
            _ => None,
        }
    }

    /// The name [`JsonMode::parse`] reads.
    pub fn as_str(self) -> &'static str {
        match self {
            JsonMode::Native => "native",
            JsonMode::Prompt => "prompt",
        }
    }
}

// The defaults of how calls are made (DESIGN §9), which `RunConfig::defaults` gives and
// the providers' `Settings::new` starts from.

/// Retries after a call's first attempt, unless told otherwise (`tvm run --retries`).
pub const DEFAULT_RETRIES: u32 = 4;
/// Seconds one attempt may take, unless told otherwise (`tvm run --request-timeout`).
pub const DEFAULT_REQUEST_TIMEOUT_SECS: u64 = 120;
/// Attempts in flight at once, unless told otherwise (`tvm run --concurrency`).
pub const DEFAULT_CONCURRENCY: usize = 16;
/// Seconds a request may wait for rate limits, unless told otherwise (`--rate-wait`).
pub const DEFAULT_RATE_WAIT_SECS: u64 = 300;

/// Bytes a reply may have, unless told otherwise (`tvm run --max-reply-bytes`).
pub const DEFAULT_MAX_REPLY_BYTES: usize = 8 << 20;

/// Declares a part of a [`RunConfig`]: a struct of optional fields, each left out of
/// its JSON when unset, and its `overlay`, which takes each field from `over` where
/// `over` sets it.
macro_rules! part {
    ($(#[$meta:meta])* pub struct $name:ident {
        $($(#[$fmeta:meta])* pub $field:ident: Option<$ty:ty>,)*
    }) => {
        $(#[$meta])*
        #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            $($(#[$fmeta])*
            #[serde(default, skip_serializing_if = "Option::is_none")]
            pub $field: Option<$ty>,)*
        }

        impl $name {
            /// This part with every field `over` sets taken from `over`.
            #[must_use]
            pub fn overlay(self, over: $name) -> $name {
                $name { $($field: over.$field.or(self.$field),)* }
            }

            /// Whether no field is set (the part is then left out of the JSON).
            pub fn is_empty(&self) -> bool {
                true $(&& self.$field.is_none())*
            }
        }
    };
}

part! {
    /// Who answers the run's LLM calls.
    pub struct ProviderPart {
        /// `--provider`, `TVM_PROVIDER`; unset, the provider whose key is set.
        pub choice: Option<Choice>,
        /// The recorded replies `--provider replay` answers from.
        pub cassette: Option<PathBuf>,
    }
}

part! {
    /// Which models answer.
    pub struct Models {
        /// `--model`, `TVM_MODEL`: for tasks that name none.
        pub default: Option<String>,
        /// `--force-model`: for every task, whatever it names (checked when read).
        pub force: Option<String>,
    }
}

part! {
    /// Sampling settings for tasks whose `<model>` sets none.
    pub struct Sampling {
        pub temperature: Option<f64>,
        pub max_tokens: Option<u64>,
        pub seed: Option<i64>,
    }
}

part! {
    /// How LLM calls are made.
    pub struct Calls {
        /// Calls in flight at once per provider, and bodies of a map at once.
        pub concurrency: Option<usize>,
        pub retries: Option<u32>,
        pub request_timeout_secs: Option<u64>,
        pub rate_wait_secs: Option<u64>,
        pub max_reply_bytes: Option<u64>,
    }
}

part! {
    /// What fresh context may read.
    pub struct ContextPart {
        pub workspace: Option<PathBuf>,
        /// `--allow-read` paths, resolved when the layer that names them is built.
        pub allow_read: Option<Vec<PathBuf>>,
        /// `--require-files`.
        pub require_files: Option<bool>,
    }
}

part! {
    /// What the run may spend, at which prices, and the reply cache.
    pub struct Cost {
        /// `--max-cost`, in picodollars.
        pub max_cost: Option<u64>,
        pub prices: Option<PathBuf>,
        pub cache: Option<CacheChoice>,
    }
}

part! {
    /// The run's bounds (`--max-call-depth` ... `--max-memory`, `--timeout`).
    pub struct LimitsPart {
        pub call_depth: Option<usize>,
        pub subtask_depth: Option<usize>,
        pub loop_iterations: Option<u64>,
        pub turns: Option<u64>,
        pub tokens: Option<u64>,
        pub instructions: Option<u64>,
        pub memory: Option<u64>,
        pub wall_time_secs: Option<u64>,
    }
}

/// The reply cache: a folder, or none even where a lower layer names one
/// (`--no-cache`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum CacheChoice {
    Dir(PathBuf),
    Off,
}

impl CacheChoice {
    /// The folder, if the cache is on.
    pub fn dir(&self) -> Option<&PathBuf> {
        match self {
            CacheChoice::Dir(d) => Some(d),
            CacheChoice::Off => None,
        }
    }
}

/// A run's settings, or a layer of them (see the module's documentation).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    #[serde(default, skip_serializing_if = "ProviderPart::is_empty")]
    pub provider: ProviderPart,
    #[serde(default, skip_serializing_if = "Models::is_empty")]
    pub models: Models,
    #[serde(default, skip_serializing_if = "Sampling::is_empty")]
    pub sampling: Sampling,
    /// `--json-mode`, `TVM_JSON_MODE`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_mode: Option<JsonMode>,
    #[serde(default, skip_serializing_if = "Calls::is_empty")]
    pub calls: Calls,
    #[serde(default, skip_serializing_if = "ContextPart::is_empty")]
    pub context: ContextPart,
    #[serde(default, skip_serializing_if = "Cost::is_empty")]
    pub cost: Cost,
    #[serde(default, skip_serializing_if = "LimitsPart::is_empty")]
    pub limits: LimitsPart,
}

impl RunConfig {
    /// What is in force where no layer says: the providers' call settings, native
    /// JSON mode and [`Limits::default`]. (The provider, models, sampling, context and
    /// cost have no default: unset, each is left to the provider or is off.)
    pub fn defaults() -> RunConfig {
        RunConfig {
            json_mode: Some(JsonMode::Native),
            calls: Calls {
                concurrency: Some(DEFAULT_CONCURRENCY),
                retries: Some(DEFAULT_RETRIES),
                request_timeout_secs: Some(DEFAULT_REQUEST_TIMEOUT_SECS),
                rate_wait_secs: Some(DEFAULT_RATE_WAIT_SECS),
                max_reply_bytes: Some(DEFAULT_MAX_REPLY_BYTES as u64),
            },
            limits: LimitsPart::from_limits(&Limits::default()),
            ..RunConfig::default()
        }
    }

    /// THE merge: this layer with every field `over` sets taken from `over`.
    #[must_use]
    pub fn overlay(self, over: RunConfig) -> RunConfig {
        RunConfig {
            provider: self.provider.overlay(over.provider),
            models: self.models.overlay(over.models),
            sampling: self.sampling.overlay(over.sampling),
            json_mode: over.json_mode.or(self.json_mode),
            calls: self.calls.overlay(over.calls),
            context: self.context.overlay(over.context),
            cost: self.cost.overlay(over.cost),
            limits: self.limits.overlay(over.limits),
        }
    }

    /// The one step of a stack that is not an overlay: `TVM_MAX_COST` and
    /// `TVM_CONCURRENCY` of the `.env` lower the bounds in force, never raise them.
    /// `flags` is the command line's layer and `environment` the environment's, which
    /// the warnings name as where the value in force came from. Gives the warnings.
    #[must_use]
    pub fn clamp(
        mut self,
        bounds: &DotEnvBounds,
        environment: &RunConfig,
        flags: &RunConfig,
    ) -> (RunConfig, Vec<String>) {
        let mut warnings = Vec::new();
        let cost = Bound {
            name: "TVM_MAX_COST",
            flag: "--max-cost",
            from_flag: flags.cost.max_cost.is_some(),
            from_environment: environment.cost.max_cost.is_some(),
        };
        self.cost.max_cost = cost.lower(self.cost.max_cost, bounds.max_cost, &mut warnings);
        let calls = Bound {
            name: "TVM_CONCURRENCY",
            flag: "--concurrency",
            from_flag: flags.calls.concurrency.is_some(),
            from_environment: environment.calls.concurrency.is_some(),
        };
        self.calls.concurrency =
            calls.lower(self.calls.concurrency, bounds.concurrency, &mut warnings);
        (self, warnings)
    }

    /// What of this config shapes the results of the run's calls, and so is a
    /// published batch's rather than each worker's: the models, sampling, JSON mode,
    /// the reply cap and the limits. Who answers, how calls are retried, the files
    /// context reads, the prices and the cache are each worker's own.
    #[must_use]
    pub(crate) fn result_shaping(&self) -> RunConfig {
        RunConfig {
            models: self.models.clone(),
            sampling: self.sampling.clone(),
            json_mode: self.json_mode,
            calls: Calls {
                max_reply_bytes: self.calls.max_reply_bytes,
                ..Calls::default()
            },
            limits: self.limits.clone(),
            ..RunConfig::default()
        }
    }

    /// The run's calls in flight at once per provider (and bodies of a map at once).
    pub fn concurrency(&self) -> usize {
        self.calls.concurrency.unwrap_or(DEFAULT_CONCURRENCY)
    }

    /// The machine's limits: a map runs as many bodies at once as the provider takes
    /// calls, unless it says.
    pub fn machine_limits(&self) -> Limits {
        self.limits.limits(self.concurrency())
    }

    /// What a journal keeps of this config: all of it, but a cache turned off, which a
    /// resume leaves to its own flags and environment as it does a cache never named.
    #[must_use]
    pub fn journaled(&self) -> RunConfig {
        let mut kept = self.clone();
        if kept.cost.cache == Some(CacheChoice::Off) {
            kept.cost.cache = None;
        }
        kept
    }

    /// The run's default sampling settings, as a task's `<model>` would give them.
    pub fn model_settings(&self) -> ModelSettings {
        ModelSettings {
            temperature: self.sampling.temperature,
            max_tokens: self.sampling.max_tokens,
            seed: self.sampling.seed,
            ..ModelSettings::default()
        }
    }
}

impl LimitsPart {
    /// Every bound of `l` (its map concurrency aside, which is the calls').
    pub(crate) fn from_limits(l: &Limits) -> LimitsPart {
        LimitsPart {
            call_depth: Some(l.call_depth),
            subtask_depth: Some(l.subtask_depth),
            loop_iterations: Some(l.loop_iterations),
            turns: Some(l.turns),
            tokens: Some(l.tokens),
            instructions: Some(l.instructions),
            memory: Some(l.memory),
            wall_time_secs: Some(l.wall_time.as_secs()),
        }
    }

    /// The machine's limits: those set, else [`Limits::default`]'s; the map
    /// concurrency is `concurrency`.
    pub fn limits(&self, concurrency: usize) -> Limits {
        let d = Limits::default();
        Limits {
            call_depth: self.call_depth.unwrap_or(d.call_depth),
            subtask_depth: self.subtask_depth.unwrap_or(d.subtask_depth),
            loop_iterations: self.loop_iterations.unwrap_or(d.loop_iterations),
            turns: self.turns.unwrap_or(d.turns),
            tokens: self.tokens.unwrap_or(d.tokens),
            instructions: self.instructions.unwrap_or(d.instructions),
            memory: self.memory.unwrap_or(d.memory),
            wall_time: self.wall_time_secs.map_or(d.wall_time, Duration::from_secs),
            concurrency,
        }
    }
}

/// A bound a `.env` may lower: where the value in force came from.
struct Bound {
    name: &'static str,
    flag: &'static str,
    from_flag: bool,
    from_environment: bool,
}

impl Bound {
    /// `in_force` (no bound at all counts as the highest), lowered to the `.env`'s
    /// when that is lower; a warning says when the `.env` tried to raise it, or
    /// lowered a value given on the command line or in the environment.
    fn lower<T: PartialOrd + Copy>(
        &self,
        in_force: Option<T>,
        dotenv: Option<(T, Source)>,
        warnings: &mut Vec<String>,
    ) -> Option<T> {
        let Some((lower, source)) = dotenv else {
            return in_force;
        };
        let name = self.name;
        let given = self.from_flag || self.from_environment;
        let from = match (self.from_flag, self.from_environment) {
            (true, _) => self.flag,
            (false, true) => "the environment",
            (false, false) => "the default",
        };
        match in_force {
            Some(v) if lower > v => {
                warnings.push(format!(
                    "{source}: {name} is above the value in force (from {from}), and a \
                     .env may only lower it; it is not taken"
                ));
                in_force
            }
            _ => {
                if given && in_force.is_some_and(|v| lower < v) {
                    warnings.push(format!(
                        "{source}: {name} lowers the value of {from}; the lower applies"
                    ));
                }
                Some(lower)
            }
        }
    }
}

/// A count of 1 or more: with 0 nothing could run (no call in flight, no frame, ...),
/// so 0 is a usage error rather than a run that fails or hangs.
pub fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("`{s}` is not a whole number of 1 or more")),
    }
}

/// A choice is written by the name `--provider` takes.
impl Serialize for Choice {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Choice {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Choice, D::Error> {
        let name = String::deserialize(d)?;
        Choice::parse(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown provider `{name}`")))
    }
}

#[cfg(test)]
mod tests;
