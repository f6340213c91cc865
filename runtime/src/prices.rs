//! What LLM calls cost (DESIGN §15): a price table for the providers' current models,
//! compiled in from `runtime/prices.json` and overridden or extended by `--prices FILE`
//! in the same shape. Costs are whole picodollars (10^-12 USD) in `u64`, so that a run's
//! totals and its `--max-cost` budget add up exactly, whatever the order of the calls.

use serde::de::{Deserializer, Error as _, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use tv_stdlib::models::{undated, Provider};

/// The table as the providers published it on the date it names.
const BUILTIN: &str = include_str!("../prices.json");

/// No model costs anywhere near this per million tokens: a larger figure is a typo
/// (per thousand tokens, or cents), and it would make every worst case absurd.
const ABSURD_USD_PER_MILLION: f64 = 100_000.0;

/// The largest `--max-cost`: a budget beyond it is a typo, and it keeps picodollars far
/// from the end of `u64` (10^18 of its 1.8 × 10^19).
const MAX_BUDGET_USD: f64 = 1_000_000.0;

const PICODOLLARS_PER_USD: f64 = 1e12;

/// USD per million tokens. cache_read / cache_write default to the input price when absent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct Price {
    pub input: f64,
    pub output: f64,
    #[serde(default)]
    pub cache_read: Option<f64>,
    #[serde(default)]
    pub cache_write: Option<f64>,
}

/// `tokens` at `rate` picodollars each, saturating.
fn charge(tokens: u64, rate: u128) -> u128 {
    u128::from(tokens).saturating_mul(rate)
}

/// Picodollars per token of a price in USD per million tokens: USD/10^6 tokens is
/// 10^12/10^6 picodollars a token. The published prices have at most three decimals, so
/// every rate is a whole number. `as` saturates and makes NaN 0, so a `Price` built by
/// hand with a bad figure is a wrong cost, never a panic.
fn per_token(usd_per_million: f64) -> u128 {
    (usd_per_million * 1e6).round() as u128
}

impl Price {
    /// (input, output, cache read, cache write) in picodollars a token.
    fn rates(&self) -> [u128; 4] {
        [
            per_token(self.input),
            per_token(self.output),
            per_token(self.cache_read.unwrap_or(self.input)),
            per_token(self.cache_write.unwrap_or(self.input)),
        ]
    }

    /// What one call cost, in picodollars (10^-12 USD). `input` counts EVERY input token,
    /// cached or not; of them `cache_read` were read from the provider's prompt cache and
    /// `cache_write` written to it (those two are charged at their own prices, the rest of
    /// `input` at the input price). Saturating, never panics.
    pub(crate) fn cost(&self, input: u64, output: u64, cache_read: u64, cache_write: u64) -> u64 {
        let [inp, out, read, write] = self.rates();
        // A provider that reports more cached tokens than input tokens is charged for
        // the cached ones it names; nothing is charged twice or below zero.
        let plain = input.saturating_sub(cache_read.saturating_add(cache_write));
        let total = [
            charge(cache_read, read),
            charge(cache_write, write),
            charge(output, out),
        ]
        .into_iter()
        .fold(charge(plain, inp), u128::saturating_add);
        u64::try_from(total).unwrap_or(u64::MAX)
    }

    /// The most a call of `input` tokens and at most `max_output` output tokens can cost,
    /// in picodollars: every input token at the highest of the input and cache-write
    /// prices, plus max_output at the output price.
    pub(crate) fn worst_case(&self, input: u64, max_output: u64) -> u64 {
        let [inp, out, read, write] = self.rates();
        // The cache-read price is in the maximum too: it is never above the input price
        // in a published table, but a `--prices` file may say otherwise, and the budget
        // must hold whatever the file says.
        let dearest = inp.max(write).max(read);
        let total = charge(input, dearest).saturating_add(charge(max_output, out));
        u64::try_from(total).unwrap_or(u64::MAX)
    }
}

/// The price table: models keyed `provider:model`, with the date the prices were taken
/// and where from; read from files of the same shape (`taken` and `sources` optional).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prices {
    #[serde(default)]
    taken: String,
    #[serde(default)]
    sources: BTreeMap<String, String>,
    #[serde(deserialize_with = "checked_models")]
    models: BTreeMap<String, Price>,
}

impl Prices {
    /// The compiled-in table.
    pub fn builtin() -> Prices {
        parse("the built-in price table", BUILTIN)
            .expect("runtime/prices.json is a valid price table (a unit test reads it)")
    }

    /// Overrides or adds the entries of a `--prices` file. Nothing changes when the file
    /// has an error, so a run never goes on with half a file.
    pub fn extend_from_file(&mut self, path: &Path) -> Result<(), String> {
        let file = parse(&path.display().to_string(), &read_limited(path)?)?;
        self.models.extend(file.models);
        self.sources.extend(file.sources);
        // The file is the newer word on what it prices.
        if !file.taken.is_empty() {
            self.taken = file.taken;
        }
        Ok(())
    }

    /// The price of `model` at `provider`: the exact `provider:model` entry, else, for a
    /// dated snapshot (`gpt-4o-mini-2024-07-18`, `claude-sonnet-4-5-20250929`), the entry
    /// of the model it is a snapshot of. Nothing else is guessed: `gpt-4o-audio` is a
    /// different model at a different price, and a wrong price is worse than none.
    pub(crate) fn get(&self, provider: Provider, model: &str) -> Option<&Price> {
        let prefix = provider.as_str();
        self.models
            .get(&format!("{prefix}:{model}"))
            .or_else(|| self.models.get(&format!("{prefix}:{}", undated(model)?)))
    }

    /// The date the table's prices were taken (the last file's that states one).
    pub fn taken(&self) -> &str {
        &self.taken
    }

    /// Where the prices were taken from, by provider.
    pub fn sources(&self) -> &BTreeMap<String, String> {
        &self.sources
    }
}

/// Reads a price file: a regular file within [`files::PRICES`].
fn read_limited(path: &Path) -> Result<String, String> {
    crate::files::read_text(path, crate::files::PRICES).map_err(|e| format!("the price file {e}"))
}

/// Parses and checks a table; errors start with `name` and, for what the JSON reader
/// finds, the line and column.
fn parse(name: &str, text: &str) -> Result<Prices, String> {
    let file: Prices = serde_json::from_str(text).map_err(|e| {
        let message = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let message = message.strip_suffix(&suffix).unwrap_or(&message);
        format!("{name}:{}:{}: {message}", e.line(), e.column())
    })?;
    if let Some(provider) = file.sources.keys().find(|p| Provider::parse(p).is_none()) {
        return Err(format!(
            "{name}: `sources` names `{provider}`, which is not a known provider (openai, anthropic)"
        ));
    }
    Ok(file)
}

/// The `models` object, each entry checked as it is read, so that an error has its position;
/// a key given twice is an error rather than a silent choice of one of two prices.
fn checked_models<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, Price>, D::Error> {
    struct Models;
    impl<'de> Visitor<'de> for Models {
        type Value = BTreeMap<String, Price>;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object of prices keyed `provider:model`")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut models = BTreeMap::new();
            while let Some(key) = map.next_key::<String>()? {
                let fail = |why: String| A::Error::custom(format!("`{key}`{why}"));
                check_key(&key).map_err(A::Error::custom)?;
                if models.contains_key(&key) {
                    return Err(fail(" is priced twice".into()));
                }
                // serde_json takes the inner error's position from its message's end.
                let price: Price = map.next_value().map_err(|e| fail(format!(": {e}")))?;
                check_price(&price).map_err(|why| fail(format!(": {why}")))?;
                models.insert(key, price);
            }
            Ok(models)
        }
    }
    d.deserialize_map(Models)
}

fn check_key(key: &str) -> Result<(), String> {
    let why = match key.split_once(':') {
        Some((p, m)) if Provider::parse(p).is_some() && !m.is_empty() => {
            if !m.contains(char::is_whitespace) {
                return Ok(());
            }
            "has white space in its model name"
        }
        Some((p, "")) if Provider::parse(p).is_some() => "has no model name after the provider",
        _ => "does not start with a known provider",
    };
    Err(format!("`{key}` {why} (as in `openai:gpt-4o`)"))
}

fn check_price(price: &Price) -> Result<(), String> {
    let figures = [
        ("input", Some(price.input)),
        ("output", Some(price.output)),
        ("cacheRead", price.cache_read),
        ("cacheWrite", price.cache_write),
    ];
    for (field, value) in figures.into_iter().filter_map(|(f, v)| Some((f, v?))) {
        let why = if !value.is_finite() {
            "is not a finite number"
        } else if value < 0.0 {
            "is negative"
        } else if value > ABSURD_USD_PER_MILLION {
            "is more than 100000: prices are USD per million tokens"
        } else {
            continue;
        };
        return Err(format!("the {field} price {value} {why}"));
    }
    Ok(())
}

/// Picodollars as USD for JSON output (f64).
pub(crate) fn usd(picodollars: u64) -> f64 {
    picodollars as f64 / PICODOLLARS_PER_USD
}

/// Parses a `--max-cost` argument like `0.50` or `2` (USD) into picodollars.
pub fn parse_usd(text: &str) -> Result<u64, String> {
    let why = match text.trim().parse::<f64>() {
        Ok(value) if (0.0..=MAX_BUDGET_USD).contains(&value) => {
            return Ok((value * PICODOLLARS_PER_USD).round() as u64);
        }
        Ok(value) if value < 0.0 => "is negative",
        Ok(value) if value > MAX_BUDGET_USD => "is more than 1,000,000 USD",
        // NaN, or not a number at all.
        _ => "is not an amount of USD (write it like 0.50 or 2, without a currency sign)",
    };
    Err(format!("the cost limit `{text}` {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use Provider::{Anthropic, OpenAi};

    const OPENAI: &str = "gpt-5 gpt-5-mini gpt-5-nano gpt-4.1 gpt-4.1-mini gpt-4.1-nano gpt-4o gpt-4o-mini o3 o4-mini";
    const ANTHROPIC: &str = "claude-opus-4-5 claude-opus-4-1 claude-sonnet-4-5 claude-sonnet-4 claude-haiku-4-5 claude-3-5-haiku";

    /// A price file of `text` in the temporary folder, removed when dropped.
    struct TempFile(std::path::PathBuf);
    impl TempFile {
        fn new(name: &str, text: &str) -> TempFile {
            let name = format!("tv-prices-{}-{name}.json", std::process::id());
            let path = std::env::temp_dir().join(name);
            std::fs::write(&path, text).unwrap();
            TempFile(path)
        }
    }
    impl Drop for TempFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn price(input: f64, output: f64, cache_read: Option<f64>, cache_write: Option<f64>) -> Price {
        Price {
            input,
            output,
            cache_read,
            cache_write,
        }
    }

    #[test]
    fn the_builtin_table_parses_and_every_entry_is_sane() {
        let prices = Prices::builtin();
        let (taken, models) = (prices.taken(), &prices.models);
        let dated = taken.len() == 10 && tv_stdlib::models::is_date(&taken.replace('-', ""));
        assert!(dated, "{taken}");
        assert_eq!(prices.sources().len(), 2);
        for (key, p) in models {
            check_key(key).unwrap();
            check_price(p).unwrap();
            let read = p.cache_read.unwrap_or(f64::NAN);
            let ordered = p.input > 0.0 && p.output >= p.input && read < p.input;
            assert!(ordered, "{key}");
            // Anthropic: a cache write is 1.25 times the input price, a read 0.1 times;
            // OpenAI has no cache write price.
            let anthropic = key.starts_with("anthropic:");
            let write = anthropic.then(|| per_token(p.input * 1.25));
            assert_eq!(p.cache_write.map(per_token), write, "{key}");
            let tenth = per_token(read) == per_token(p.input / 10.0);
            assert!(!anthropic || tenth, "{key}");
        }
        let priced = |p, list: &str| list.split(' ').filter_map(|m| prices.get(p, m)).count();
        let counts = (priced(OpenAi, OPENAI), priced(Anthropic, ANTHROPIC));
        assert_eq!((counts, models.len()), ((10, 6), 16));
    }

    #[test]
    fn a_dated_snapshot_takes_the_price_of_its_model() {
        let prices = Prices::builtin();
        let mini = prices.get(OpenAi, "gpt-4o-mini");
        assert!(mini.is_some());
        assert_eq!(prices.get(OpenAi, "gpt-4o-mini-2024-07-18"), mini);
        let sonnet = prices.get(Anthropic, "claude-sonnet-4-5");
        assert_eq!(prices.get(Anthropic, "claude-sonnet-4-5-20250929"), sonnet);
        let o3 = prices.get(OpenAi, "o3");
        assert_eq!(prices.get(OpenAi, "o3-2025-04-16"), o3);
    }

    #[test]
    fn nothing_but_a_snapshot_date_is_guessed() {
        let prices = Prices::builtin();
        let others = "gpt-4o-audio gpt-4o-2024 gpt-4o-mini-2024-13-18 o3-mini gpt-5-20251399 \
                      -20250929 gpt-4o-20é5-07-18 gpt-4o-mini-latest";
        for model in others.split_whitespace() {
            assert_eq!(prices.get(OpenAi, model), None, "{model}");
        }
        assert_eq!(prices.get(Anthropic, "claude-sonnet-4-5-latest"), None);
        // The provider is part of the key: OpenAI does not serve Claude.
        assert_eq!(prices.get(OpenAi, "claude-sonnet-4-5"), None);
    }

    #[test]
    fn cached_tokens_are_charged_at_their_own_prices_and_the_rest_at_the_input_price() {
        let sonnet = price(3.0, 15.0, Some(0.30), Some(3.75));
        // 2,000 plain at 3, 6,000 read at 0.30, 2,000 written at 3.75, 500 out at 15:
        // 6,000 + 1,800 + 7,500 + 7,500 = 22,800 USD per million = 0.0228 USD.
        assert_eq!(sonnet.cost(10_000, 500, 6_000, 2_000), 22_800_000_000);
        // Without cache prices, cached tokens cost what input tokens cost.
        let plain = price(3.0, 15.0, None, None);
        let cached = plain.cost(10_000, 500, 6_000, 2_000);
        assert_eq!(cached, plain.cost(10_000, 500, 0, 0));
        let mini = price(0.15, 0.60, Some(0.075), None);
        assert_eq!(mini.cost(1, 0, 1, 0), 75_000);
    }

    #[test]
    fn costs_saturate_instead_of_overflowing_or_panicking() {
        let max = u64::MAX;
        let dear = price(ABSURD_USD_PER_MILLION, ABSURD_USD_PER_MILLION, None, None);
        assert_eq!(dear.cost(max, max, 0, 0), max);
        assert_eq!(dear.worst_case(max, max), max);
        // More cached tokens than input tokens: the cached ones are charged, no more.
        assert_eq!(dear.cost(1, 0, max, max), max);
        let bad = price(f64::NAN, f64::INFINITY, Some(-1.0), Some(f64::NEG_INFINITY));
        assert_eq!(bad.cost(10, 10, 2, 2), max);
        assert_eq!(bad.worst_case(10, 0), 0);
    }

    #[test]
    fn the_worst_case_bounds_the_cost_of_every_call_of_its_size() {
        for p in Prices::builtin().models.values() {
            let worst = p.worst_case(10_000, 1_000);
            for (read, write) in [(0, 0), (10_000, 0), (0, 10_000), (4_000, 6_000)] {
                assert!(p.cost(10_000, 1_000, read, write) <= worst, "{p:?}");
            }
            let written = p.cache_write.map_or(0, |_| 10_000);
            assert_eq!(p.cost(10_000, 1_000, 0, written), worst);
        }
    }

    #[test]
    fn a_price_file_overrides_and_adds_entries() {
        let file = TempFile::new(
            "extend",
            r#"{"models": {"openai:gpt-4o": {"input": 2.0, "output": 9.0},
                           "openai:my-local-model": {"input": 0, "output": 0}}}"#,
        );
        let mut prices = Prices::builtin();
        let taken = prices.taken().to_string();
        prices.extend_from_file(&file.0).unwrap();
        let gpt_4o = price(2.0, 9.0, None, None);
        assert_eq!(prices.get(OpenAi, "gpt-4o"), Some(&gpt_4o));
        let local = prices.get(OpenAi, "my-local-model");
        assert_eq!(local.map(|p| p.cost(5, 5, 0, 0)), Some(0));
        assert!(prices.get(OpenAi, "gpt-4o-mini").is_some());
        assert_eq!(prices.taken(), taken);
        let text = r#"{"taken": "2027-01-02", "sources": {"openai": "x"}, "models": {}}"#;
        let dated = TempFile::new("dated", text);
        prices.extend_from_file(&dated.0).unwrap();
        assert_eq!(prices.taken(), "2027-01-02");
        assert_eq!(prices.sources()["openai"], "x");
    }

    /// Price files, each with what its error says, after ` => `.
    const BAD_FILES: &str = r#"
{"models": {"openai:gpt-4o": {"input": 1, "output": 2, "cachedInput": 1}}} => :1:68: `openai:gpt-4o`: unknown field `cachedInput`
{"models": {"google:gemini": {"input": 1, "output": 2}}} => :1:27: `google:gemini` does not start with a known provider
{"models": {"gpt-4o": {"input": 1, "output": 2}}} => `gpt-4o` does not start with a known provider
{"models": {"openai:": {"input": 1, "output": 2}}} => `openai:` has no model name
{"models": {"openai:x": {"input": -1, "output": 2}}} => :1:51: `openai:x`: the input price -1 is negative
{"models": {"openai:x": {"input": 1, "output": 2e6}}} => `openai:x`: the output price 2000000 is more than
{"models": {"openai:x": {"input": 1, "output": 2}, "openai:x": {"input": 1, "output": 3}}} => `openai:x` is priced twice
{"models": {"openai:x": {"input": "1", "output": 2}}} => `openai:x`: invalid type
{"model": {}} => unknown field `model`
{"sources": {"google": "x"}, "models": {}} => `sources` names `google`
{"models": {"openai:x": {"input": 1,}}} => :1:37: `openai:x`: trailing comma"#;

    #[test]
    fn a_bad_or_oversized_price_file_is_an_error_naming_the_file_the_position_and_the_key() {
        for (i, case) in BAD_FILES.trim().lines().enumerate() {
            let (text, expected) = case.split_once(" => ").unwrap();
            let file = TempFile::new(&format!("error-{i}"), text);
            let mut prices = Prices::builtin();
            let error = prices.extend_from_file(&file.0).unwrap_err();
            assert!(error.starts_with(&file.0.display().to_string()), "{error}");
            assert!(error.contains(expected), "{error} should say {expected}");
            assert!(!error.contains(" at line "), "{error}");
            // A file with an error changes nothing.
            assert_eq!(prices, Prices::builtin());
        }
        let missing = Prices::builtin().extend_from_file(Path::new("/nonexistent/prices.json"));
        assert!(missing.unwrap_err().contains("/nonexistent/prices.json"));
        // Over 1 MiB: refused from its size. Sparse, the size is there, the bytes are not.
        let large = TempFile::new("large", "");
        let handle = std::fs::File::options().write(true).open(&large.0).unwrap();
        handle.set_len(1 << 30).unwrap();
        let error = Prices::builtin().extend_from_file(&large.0).unwrap_err();
        assert!(error.contains("larger than 1 MiB"), "{error}");
    }

    #[test]
    fn a_cost_limit_is_read_in_usd_and_anything_else_is_refused() {
        assert_eq!(parse_usd("0.50"), Ok(500_000_000_000));
        assert_eq!(parse_usd(" 2 "), Ok(2_000_000_000_000));
        assert_eq!(parse_usd("0.1"), Ok(100_000_000_000));
        assert_eq!(parse_usd("1000000"), Ok(1_000_000_000_000_000_000));
        assert_eq!(usd(parse_usd("0.25").unwrap()), 0.25);
        let refused = "-1 => negative|NaN => not an amount|inf => more than 1,000,000|\
                       1000000.01 => more than| => not an amount|$2 => not an amount";
        for case in refused.split('|') {
            let (text, expected) = case.split_once("=> ").unwrap();
            let error = parse_usd(text.trim()).unwrap_err();
            assert!(error.contains(expected), "{text}: {error}");
        }
    }
}
