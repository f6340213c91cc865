//! What LLM calls used (DESIGN §15): [`Spent`] counts calls, tokens and cost, and is
//! what every task result's `notes.usage` shows; [`Spending`] adds the split by model
//! that the run's totals show as `byModel`.
//!
//! A result's usage is what the machine spent while that result was being made: the
//! difference of two readings of the machine's running [`Spent`] (when a session,
//! frame or iteration began, and when its result was made). Bodies and branches add
//! what they spent to the machine that waits for them before it reads again, so a
//! result's usage covers its whole subtree, retries, re-asks and subtasks included.
//!
//! Cost is counted in picodollars (10^-12 USD), as integers: sums are exact, and a
//! budget can be reserved with one atomic operation. It becomes dollars only in JSON.

use crate::host::LlmReply;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::sync::OnceLock;

/// The LLM calls of a machine, a result or a run and what they used. Absent fields
/// read as 0, so journals written before a field existed still read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Spent {
    /// LLM calls.
    pub calls: u64,
    /// Every input token, read from the provider's prompt cache or not.
    pub input_tokens: u64,
    /// Tokens of the replies.
    pub output_tokens: u64,
    /// Of the input tokens, those read from the provider's prompt cache.
    pub cache_read_tokens: u64,
    /// Of the input tokens, those written to the provider's prompt cache.
    pub cache_write_tokens: u64,
    /// Picodollars of the calls whose price is known.
    pub cost: u64,
    /// Calls whose model has no price: the cost is then unknown, not `cost`.
    pub unpriced: u64,
    /// Calls answered from the reply cache or a cassette (they cost 0).
    pub cached: u64,
    /// Calls in flight when the run stopped (its wall-clock limit, Ctrl-C): sent, and
    /// billed by the provider, but never answered, so their tokens and cost are unknown.
    pub abandoned: u64,
}

impl Spent {
    /// What one reply used.
    pub fn of(reply: &LlmReply) -> Spent {
        Spent {
            calls: 1,
            input_tokens: reply.input_tokens,
            output_tokens: reply.output_tokens,
            cache_read_tokens: reply.cache_read_tokens,
            cache_write_tokens: reply.cache_write_tokens,
            cost: reply.cost.unwrap_or(0),
            unpriced: u64::from(reply.cost.is_none()),
            cached: u64::from(reply.cached),
            abandoned: 0,
        }
    }

    /// A call that was sent and never answered: it counts as a call whose cost is
    /// unknown (a provider bills what it processed before the connection closed).
    pub fn abandoned() -> Spent {
        Spent {
            calls: 1,
            unpriced: 1,
            abandoned: 1,
            ..Spent::default()
        }
    }

    /// Adds what `other` counts.
    pub fn add(&mut self, other: Spent) {
        self.calls += other.calls;
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.cost = self.cost.saturating_add(other.cost);
        self.unpriced += other.unpriced;
        self.cached += other.cached;
        self.abandoned += other.abandoned;
    }

    /// What was spent since `earlier`, a reading of the same running total.
    pub fn since(self, earlier: Spent) -> Spent {
        Spent {
            calls: self.calls.saturating_sub(earlier.calls),
            input_tokens: self.input_tokens.saturating_sub(earlier.input_tokens),
            output_tokens: self.output_tokens.saturating_sub(earlier.output_tokens),
            cache_read_tokens: self
                .cache_read_tokens
                .saturating_sub(earlier.cache_read_tokens),
            cache_write_tokens: self
                .cache_write_tokens
                .saturating_sub(earlier.cache_write_tokens),
            cost: self.cost.saturating_sub(earlier.cost),
            unpriced: self.unpriced.saturating_sub(earlier.unpriced),
            cached: self.cached.saturating_sub(earlier.cached),
            abandoned: self.abandoned.saturating_sub(earlier.abandoned),
        }
    }

    /// The cost in dollars, or `None` when a call's price is unknown: a partial sum
    /// would read as the whole cost, so it is never shown as one.
    pub fn cost_usd(&self) -> Option<f64> {
        (self.unpriced == 0).then(|| usd(self.cost))
    }

    /// `notes.usage` of a result (DESIGN §15).
    pub fn notes(&self) -> Value {
        // Every result gets one, so it is a copy of a ready-made object with its values
        // put in by position: building it key by key hashed each key, which made up
        // most of the machine's time per LLM step.
        static FIELDS: OnceLock<Map<String, Value>> = OnceLock::new();
        let mut m = FIELDS
            .get_or_init(|| {
                USAGE_KEYS
                    .iter()
                    .map(|k| (k.to_string(), Value::Null))
                    .collect()
            })
            .clone();
        let mut slots = m.values_mut();
        // The counts drive the loop, so that the slot after them is left for the cost.
        for (n, slot) in self.counts().into_iter().zip(slots.by_ref()) {
            *slot = Value::from(n);
        }
        if let (Some(slot), Some(usd)) = (slots.next(), self.cost_usd()) {
            *slot = Value::from(usd);
        }
        if self.cached > 0 {
            m.insert("cachedCalls".into(), self.cached.into());
        }
        if self.abandoned > 0 {
            m.insert("abandonedCalls".into(), self.abandoned.into());
        }
        Value::Object(m)
    }
}

impl Spent {
    /// Whether `usage` already is what [`Spent::notes`] makes of this: a function whose
    /// result is its one task's keeps that task's usage instead of a copy of it.
    pub fn shown_in(&self, usage: &Value) -> bool {
        let Some(m) = usage.as_object() else {
            return false;
        };
        let mut values = m.values();
        let cost = self.cost_usd().map_or(Value::Null, Value::from);
        let optional = |key: &str, n: u64| match m.get(key) {
            None => n == 0,
            Some(v) => n > 0 && v.as_u64() == Some(n),
        };
        let extra = usize::from(self.cached > 0) + usize::from(self.abandoned > 0);
        self.counts()
            .iter()
            .all(|&n| values.next().and_then(Value::as_u64) == Some(n))
            && values.next() == Some(&cost)
            && m.len() == USAGE_KEYS.len() + extra
            && optional("cachedCalls", self.cached)
            && optional("abandonedCalls", self.abandoned)
    }
}

impl Spent {
    /// The counts of `notes.usage`, in the order of [`USAGE_KEYS`].
    fn counts(&self) -> [u64; 5] {
        [
            self.calls,
            self.input_tokens,
            self.output_tokens,
            self.cache_read_tokens,
            self.cache_write_tokens,
        ]
    }
}

/// The fields of `notes.usage`, in the order they are printed.
const USAGE_KEYS: [&str; 6] = [
    "calls",
    "inputTokens",
    "outputTokens",
    "cacheReadTokens",
    "cacheWriteTokens",
    "costUsd",
];

/// Picodollars as dollars.
pub(crate) fn usd(picodollars: u64) -> f64 {
    picodollars as f64 / 1e12
}

/// What a machine or a run spent, in total and by the model that answered.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Spending {
    /// What every call used, all models together.
    #[serde(flatten)]
    pub total: Spent,
    /// In the order the models first answered; a run uses few models.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_model: Vec<(String, Spent)>,
}

impl Spending {
    /// Counts what a reply from `model` used.
    pub fn record(&mut self, model: &str, s: Spent) {
        self.total.add(s);
        self.model(model).add(s);
    }

    /// Adds what `other` spent, model by model.
    pub fn add(&mut self, other: &Spending) {
        self.total.add(other.total);
        for (model, s) in &other.by_model {
            self.model(model).add(*s);
        }
    }

    fn model(&mut self, model: &str) -> &mut Spent {
        // Most runs use one model: the last entry first.
        let at = match self.by_model.iter().rposition(|(m, _)| m == model) {
            Some(i) => i,
            None => {
                self.by_model.push((model.to_string(), Spent::default()));
                self.by_model.len() - 1
            }
        };
        &mut self.by_model[at].1
    }

    /// The run's `notes.usage`: its totals and `byModel`.
    pub fn notes(&self) -> Value {
        let mut v = self.total.notes();
        let by_model: Map<String, Value> = self
            .by_model
            .iter()
            .map(|(m, s)| (m.clone(), s.notes()))
            .collect();
        v["byModel"] = Value::Object(by_model);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reply(input: u64, output: u64, cost: Option<u64>) -> LlmReply {
        LlmReply {
            input_tokens: input,
            output_tokens: output,
            cost,
            ..LlmReply::default()
        }
    }

    #[test]
    fn a_cost_is_unknown_once_one_call_has_no_price() {
        let mut s = Spent::of(&reply(10, 2, Some(3_000_000)));
        assert_eq!(s.notes()["costUsd"], json!(0.000003));
        s.add(Spent::of(&reply(1, 1, None)));
        assert_eq!(s.notes()["costUsd"], Value::Null);
        assert_eq!(s.notes()["calls"], json!(2));
    }

    #[test]
    fn usage_is_recognised_only_when_every_field_matches() {
        let mut s = Spent::of(&reply(10, 2, Some(5)));
        assert!(s.shown_in(&s.notes()));
        let other = Spent::of(&reply(10, 3, Some(5)));
        assert!(!other.shown_in(&s.notes()));
        s.cached = 1;
        assert!(s.shown_in(&s.notes()));
        assert!(!Spent::of(&reply(10, 2, Some(5))).shown_in(&s.notes()));
        assert!(!s.shown_in(&json!({"calls": 1})));
    }

    #[test]
    fn what_was_spent_since_a_reading_is_the_difference() {
        let mut running = Spent::of(&reply(10, 2, Some(5)));
        let mark = running;
        running.add(Spent::of(&reply(7, 1, Some(4))));
        let since = running.since(mark);
        assert_eq!((since.calls, since.input_tokens, since.cost), (1, 7, 4));
        assert_eq!(since.notes()["costUsd"], json!(4e-12));
    }

    #[test]
    fn spending_splits_by_model_in_the_order_models_answered() {
        let mut s = Spending::default();
        s.record("b", Spent::of(&reply(1, 1, Some(1))));
        s.record("a", Spent::of(&reply(2, 2, None)));
        s.record("b", Spent::of(&reply(3, 3, Some(1))));
        let notes = s.notes();
        assert_eq!(notes["calls"], json!(3));
        assert_eq!(notes["costUsd"], Value::Null);
        let models: Vec<&String> = notes["byModel"].as_object().unwrap().keys().collect();
        assert_eq!(models, ["b", "a"]);
        assert_eq!(notes["byModel"]["b"]["inputTokens"], json!(4));
        assert_eq!(notes["byModel"]["b"]["costUsd"], json!(2e-12));
    }

    #[test]
    fn an_abandoned_call_counts_as_a_call_whose_cost_is_unknown() {
        let mut s = Spending::default();
        s.record("gpt-4o-mini", Spent::of(&reply(10, 2, Some(3_000_000))));
        s.record("gpt-4o-mini", Spent::abandoned());
        let notes = s.notes();
        assert_eq!(notes["calls"], json!(2));
        assert_eq!(notes["inputTokens"], json!(10));
        assert_eq!(notes["costUsd"], Value::Null);
        assert_eq!(notes["abandonedCalls"], json!(1));
        assert_eq!(notes["byModel"]["gpt-4o-mini"]["abandonedCalls"], json!(1));
        assert!(s.total.shown_in(&s.total.notes()));
        let finished = Spent::of(&reply(10, 2, Some(3_000_000)));
        assert!(!finished.shown_in(&s.total.notes()));
        assert!(!s.total.shown_in(&finished.notes()));
    }

    #[test]
    fn a_journal_record_of_the_older_shape_still_reads() {
        let old: Spending =
            serde_json::from_str(r#"{"calls":2,"input_tokens":5,"output_tokens":1}"#).unwrap();
        assert_eq!(old.total.calls, 2);
        assert!(old.by_model.is_empty());
    }
}
