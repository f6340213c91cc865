//! Model identifiers: `provider:model` or a bare model name (DESIGN §3), and what the
//! providers' models take: which sampling settings, how long a reply and a prompt may be
//! (the capability table, `stdlib/models.json`, which the compiler reads to warn and the
//! runtime to send only what a model takes and to bound a call's worst case).

use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;

/// A model provider whose API the runtime speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Provider {
    /// OpenAI's chat completions API, and servers that speak it.
    OpenAi,
    /// Anthropic's messages API.
    Anthropic,
}

/// Every provider with the prefix that names it in a model identifier (`openai:gpt-4o`).
pub const PROVIDERS: &[(&str, Provider)] = &[
    ("openai", Provider::OpenAi),
    ("anthropic", Provider::Anthropic),
];

impl Provider {
    /// The provider a prefix names; `None` for one that names none.
    pub fn parse(s: &str) -> Option<Provider> {
        PROVIDERS.iter().find(|(n, _)| *n == s).map(|(_, p)| *p)
    }

    /// The prefix that names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Anthropic => "anthropic",
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A model named by a template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelRef {
    /// Stated with a prefix or inferred from the name; `None` when neither.
    pub provider: Option<Provider>,
    /// The model's name, without the provider's prefix.
    pub name: String,
    /// Whether the identifier stated the provider with a prefix.
    pub explicit_provider: bool,
}

/// Why a text is not a model identifier.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelError {
    /// Nothing but white space.
    Empty,
    /// White space inside the identifier.
    Whitespace,
    /// A prefix that names no provider (the prefix).
    UnknownProvider(String),
    /// A provider's prefix with nothing after its `:`.
    EmptyName,
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelError::Empty => f.write_str("the model identifier is empty"),
            ModelError::Whitespace => f.write_str("a model identifier cannot contain white space"),
            ModelError::UnknownProvider(p) => write!(
                f,
                "unknown provider `{p}` in the model identifier (known: openai, anthropic)"
            ),
            ModelError::EmptyName => f.write_str("the model name after the provider is empty"),
        }
    }
}

/// Which provider serves a bare model name, from the vendors' naming schemes.
pub(crate) fn infer_provider(name: &str) -> Option<Provider> {
    const OPENAI: &[&str] = &[
        "gpt-", "o1", "o3", "o4", "chatgpt-", "text-", "davinci", "babbage",
    ];
    if OPENAI.iter().any(|p| name.starts_with(p)) {
        Some(Provider::OpenAi)
    } else if name.starts_with("claude-") {
        Some(Provider::Anthropic)
    } else {
        None
    }
}

/// Reads a model identifier, `provider:model` or a bare name whose provider is inferred;
/// white space around it is ignored.
pub fn parse_model(s: &str) -> Result<ModelRef, ModelError> {
    let trimmed = s.trim();
    if trimmed.is_empty() {
        return Err(ModelError::Empty);
    }
    if trimmed.chars().any(char::is_whitespace) {
        return Err(ModelError::Whitespace);
    }
    match trimmed.split_once(':') {
        Some((prefix, name)) => {
            let provider = Provider::parse(prefix)
                .ok_or_else(|| ModelError::UnknownProvider(prefix.to_string()))?;
            if name.is_empty() {
                return Err(ModelError::EmptyName);
            }
            Ok(ModelRef {
                provider: Some(provider),
                name: name.to_string(),
                explicit_provider: true,
            })
        }
        None => Ok(ModelRef {
            provider: infer_provider(trimmed),
            name: trimmed.to_string(),
            explicit_provider: false,
        }),
    }
}

/// The capability table as the providers published it on the date it names.
const CAPABILITIES: &str = include_str!("../models.json");

/// A sampling setting of `<model>` that a model may refuse (`max_tokens` is always
/// taken, under one name or another).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub enum Setting {
    /// `temperature`.
    #[serde(rename = "temperature")]
    Temperature,
    /// `top_p`.
    #[serde(rename = "top_p")]
    TopP,
    /// `stop`: the stop sequences.
    #[serde(rename = "stop")]
    Stop,
    /// `seed`.
    #[serde(rename = "seed")]
    Seed,
}

impl Setting {
    /// Every setting, in the order messages name them.
    pub const ALL: [Setting; 4] = [
        Setting::Temperature,
        Setting::TopP,
        Setting::Stop,
        Setting::Seed,
    ];

    /// The attribute of `<model>` that sets it.
    pub fn as_str(self) -> &'static str {
        match self {
            Setting::Temperature => "temperature",
            Setting::TopP => "top_p",
            Setting::Stop => "stop",
            Setting::Seed => "seed",
        }
    }
}

/// What one model takes.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Capability {
    /// Tokens of prompt and reply together.
    pub context_window: u64,
    /// The most tokens one reply may have.
    pub max_output: u64,
    /// The settings it takes; any other is refused by the provider.
    pub takes: Vec<Setting>,
    /// Settings it takes one of at a time, never together (Anthropic's newer models:
    /// `temperature` or `top_p`).
    #[serde(default)]
    pub one_of: Vec<Setting>,
}

/// The table: models keyed `provider:model`, when and where the figures were taken.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Capabilities {
    /// The date the figures were taken.
    pub taken: String,
    /// Where each provider's figures were read, keyed by its prefix.
    pub sources: BTreeMap<String, String>,
    /// What each model takes, keyed `provider:model`.
    pub models: BTreeMap<String, Capability>,
}

/// The built-in capability table.
pub fn capabilities() -> &'static Capabilities {
    static TABLE: OnceLock<Capabilities> = OnceLock::new();
    TABLE.get_or_init(|| {
        serde_json::from_str(CAPABILITIES)
            .expect("stdlib/models.json is a valid capability table (a unit test reads it)")
    })
}

/// What `model` at `provider` takes: the exact `provider:model` entry, else, for a
/// dated snapshot (`gpt-4o-mini-2024-07-18`), the entry of the model it is a snapshot
/// of. Nothing else is guessed: a model the table does not name is sent every setting
/// it is given (a local server takes what it takes).
pub fn capability(provider: Provider, model: &str) -> Option<&'static Capability> {
    let models = &capabilities().models;
    let prefix = provider.as_str();
    models
        .get(&format!("{prefix}:{model}"))
        .or_else(|| models.get(&format!("{prefix}:{}", undated(model)?)))
}

/// A setting a request cannot carry to its model, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeftOut {
    /// The setting.
    pub setting: Setting,
    /// Why, as a clause for a warning: "`o1` does not take `temperature`".
    pub why: String,
}

/// The settings of `set` (in [`Setting::ALL`] order) that `model` at `provider` does not
/// take, each with why: the table says it refuses them; it takes only one of two that
/// are both set (the second is left out); or Anthropic, whose API has no seed.
pub fn left_out(provider: Provider, model: &str, set: &[Setting]) -> Vec<LeftOut> {
    let cap = capability(provider, model);
    let mut out = Vec::new();
    for s in Setting::ALL.into_iter().filter(|s| set.contains(s)) {
        let why = match cap {
            _ if provider == Provider::Anthropic && s == Setting::Seed => {
                "Anthropic's API has no seed".to_string()
            }
            Some(c) if !c.takes.contains(&s) => {
                format!("`{model}` does not take `{}`", s.as_str())
            }
            Some(c) if c.one_of.contains(&s) && is_second(s, &c.one_of, set) => {
                let names: Vec<String> = c
                    .one_of
                    .iter()
                    .map(|o| format!("`{}`", o.as_str()))
                    .collect();
                format!("`{model}` takes {}, not both", names.join(" or "))
            }
            _ => continue,
        };
        out.push(LeftOut { setting: s, why });
    }
    out
}

/// Whether `s` comes after another setting of `group` that is set too.
fn is_second(s: Setting, group: &[Setting], set: &[Setting]) -> bool {
    group
        .iter()
        .take_while(|g| **g != s)
        .any(|g| set.contains(g))
}

/// `model` without a snapshot date at its end: `-YYYY-MM-DD` (OpenAI) or `-YYYYMMDD`
/// (Anthropic). The digits must read as a date, so `-20250000` is not stripped.
pub fn undated(model: &str) -> Option<&str> {
    [11, 9].into_iter().find_map(|n| {
        let at = model.len().checked_sub(n).filter(|&at| at > 0)?;
        let date = model.get(at..)?.strip_prefix('-')?;
        let dashed = n == 11 && date.get(4..5)? == "-" && date.get(7..8)? == "-";
        let digits: String = date.chars().filter(|&c| !dashed || c != '-').collect();
        is_date(&digits).then(|| &model[..at])
    })
}

/// Whether `digits` is a date of this century as `YYYYMMDD`.
pub fn is_date(digits: &str) -> bool {
    let number = |at: std::ops::Range<usize>| digits.get(at)?.parse::<u32>().ok();
    digits.len() == 8
        && digits.bytes().all(|b| b.is_ascii_digit())
        && matches!(
            (number(0..4), number(4..6), number(6..8)),
            (Some(2000..=2099), Some(1..=12), Some(1..=31))
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixed_and_bare_names_find_their_provider() {
        assert_eq!(
            parse_model("openai:gpt-4o-mini").unwrap().provider,
            Some(Provider::OpenAi)
        );
        assert_eq!(
            parse_model("claude-3-sonnet").unwrap().provider,
            Some(Provider::Anthropic)
        );
        assert_eq!(
            parse_model("o1-mini").unwrap().provider,
            Some(Provider::OpenAi)
        );
        assert_eq!(parse_model("llama3").unwrap().provider, None);
        // A local OpenAI-compatible server serves any name.
        assert_eq!(
            parse_model("openai:llama3").unwrap().provider,
            Some(Provider::OpenAi)
        );
    }

    #[test]
    fn malformed_identifiers_say_what_is_wrong() {
        assert_eq!(parse_model(" "), Err(ModelError::Empty));
        assert_eq!(parse_model("gpt 4"), Err(ModelError::Whitespace));
        assert_eq!(
            parse_model("foo:bar"),
            Err(ModelError::UnknownProvider("foo".into()))
        );
        assert_eq!(parse_model("openai:"), Err(ModelError::EmptyName));
    }

    #[test]
    fn the_capability_table_reads_and_names_known_providers_and_sources() {
        let t = capabilities();
        assert!(is_date(&t.taken.replace('-', "")), "{}", t.taken);
        for (key, c) in &t.models {
            let (provider, name) = key.split_once(':').expect("provider:model");
            assert!(Provider::parse(provider).is_some(), "{key}");
            assert!(parse_model(name).is_ok(), "{key}");
            assert!(c.max_output > 0 && c.max_output < c.context_window, "{key}");
            assert!(t.sources.contains_key(provider), "{key} has no source");
        }
    }

    #[test]
    fn a_reasoning_model_takes_no_temperature_top_p_or_stop_and_a_snapshot_is_its_model() {
        let all = Setting::ALL;
        let out: Vec<Setting> = left_out(Provider::OpenAi, "o3-2025-04-16", &all)
            .into_iter()
            .map(|l| l.setting)
            .collect();
        assert_eq!(out, [Setting::Temperature, Setting::TopP, Setting::Stop]);
        assert!(left_out(Provider::OpenAi, "gpt-4o-mini", &all).is_empty());
        // A model the table does not name is sent what it is given.
        assert!(left_out(Provider::OpenAi, "llama3", &all).is_empty());
    }

    #[test]
    fn anthropic_has_no_seed_and_its_newer_models_take_temperature_or_top_p() {
        let both = [Setting::Temperature, Setting::TopP, Setting::Seed];
        let out = left_out(Provider::Anthropic, "claude-sonnet-4-5", &both);
        let names: Vec<&str> = out.iter().map(|l| l.setting.as_str()).collect();
        assert_eq!(names, ["top_p", "seed"]);
        assert!(
            out[0].why.contains("`temperature` or `top_p`, not both"),
            "{}",
            out[0].why
        );
        let one = left_out(Provider::Anthropic, "claude-sonnet-4-5", &[Setting::TopP]);
        assert!(one.is_empty(), "{one:?}");
        let unknown = left_out(Provider::Anthropic, "claude-3-opus", &[Setting::Seed]);
        assert_eq!(unknown[0].why, "Anthropic's API has no seed");
    }
}
