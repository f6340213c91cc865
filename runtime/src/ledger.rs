//! What the providers' calls are counted against (DESIGN §15): the price table that
//! gives each reply its cost, the `--max-cost` budget that every call reserves its
//! worst case from before it is sent, and the `--cache` of replies already paid for.
//!
//! The budget is one atomic counter of picodollars committed (spent, plus reserved by
//! calls in flight). A call reserves its worst case with one compare-and-swap, so two
//! concurrent calls can never both fit where only one does; once its reply is in, the
//! reservation is settled at the real cost and the rest given back. A call whose
//! reservation does not fit is never sent, so the run never spends more than its
//! budget while each reply's cost stays within its worst case, which holds whenever
//! the provider counts at most one input token per 4 ASCII characters or per other
//! character (see [`estimate_tokens`]) and honours `max_tokens`, or, for a call that
//! sends none, the model's longest reply in the capability table.
//!
//! A budget never changes what is sent: a request asked with a budget is the request
//! asked without one, so the reply cache answers both, and a reasoning model is not
//! cut short by a limit its task never set.

use crate::cache::{CacheKey, Lookup, ReplyCache};
use crate::model::CallError;
use crate::prices::{usd, Price, Prices};
use futures::future::BoxFuture;
use serde_json::{json, Value};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tv_stdlib::models::{capability, Provider};
use tv_vm::host::LlmReply;
use tv_vm::result::Resource;

/// Prices, the budget and the reply cache, shared by the run's adapters.
pub struct Ledger {
    pub prices: Prices,
    pub budget: Option<CostBudget>,
    pub cache: Option<ReplyCache>,
    /// What the calls share with other processes: the workers of a batch spread over
    /// many machines share its budget and its cap on calls in flight.
    pub shared: Option<Arc<dyn Shared>>,
}

/// A cap on calls in flight and a budget that several processes share, kept where
/// they all reach it (DESIGN §16).
pub trait Shared: Send + Sync {
    /// Waits for a place among the calls in flight and reserves `worst` picodollars of
    /// the budget for the call `what` (`None`: the call has no price); the ticket is
    /// given back with [`Shared::leave`].
    fn enter<'a>(
        &'a self,
        worst: Option<u64>,
        what: &'a str,
    ) -> BoxFuture<'a, Result<Ticket, CallError>>;
    /// The call ended, costing `actual` (`None`: not answered, or no price); its place
    /// and the rest of its reservation are given back.
    fn leave(&self, ticket: Ticket, actual: Option<u64>) -> BoxFuture<'_, ()>;
}

/// A call's place among the shared calls in flight and its shared reservation.
#[derive(Debug)]
#[must_use = "a ticket is given back with Shared::leave"]
pub struct Ticket {
    pub id: u64,
    pub worst: Option<u64>,
}

/// A call's reservation, with the budget it was taken from.
pub(crate) struct Held<'a> {
    budget: &'a CostBudget,
    reservation: Reservation,
}

impl Ledger {
    /// The price of `body["model"]` on `provider` (`openai`, `anthropic`).
    fn price(&self, provider: &str, body: &Value) -> Option<&Price> {
        let model = body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default();
        Provider::parse(provider).and_then(|p| self.prices.get(p, model))
    }

    /// The cache key of sending `body` to `url` of `provider`, when there is a cache:
    /// where the request goes and what it says, never the headers (the key is in them).
    pub(crate) fn cache_key(&self, provider: &str, url: &str, body: &Value) -> Option<CacheKey> {
        let cache = self.cache.as_ref()?;
        Some(cache.key(&json!({"provider": provider, "url": url, "body": body})))
    }

    /// The reply the cache holds under `key`, read by `read`, at no cost; `Err` is a
    /// warning (a damaged entry, or one `read` cannot take), and the call is made.
    pub(crate) fn cached(
        &self,
        key: &CacheKey,
        read: impl Fn(&Value) -> Result<LlmReply, CallError>,
    ) -> Result<Option<LlmReply>, String> {
        let Some(cache) = &self.cache else {
            return Ok(None);
        };
        match cache.get(key) {
            Lookup::Miss => Ok(None),
            Lookup::Damaged(why) => Err(why.to_string()),
            Lookup::Hit(stored) => match read(&stored) {
                Ok(reply) => Ok(Some(LlmReply {
                    cost: Some(0),
                    cached: true,
                    ..reply
                })),
                Err(e) => Err(format!(
                    "the cached reply {} cannot be read ({}); asking the provider again",
                    key.as_str(),
                    e.message()
                )),
            },
        }
    }

    /// The most sending `body` to `provider` may cost: its whole text as input, and its
    /// longest reply as output. `Ok(None)` when its model has no price; `Err` (why) when
    /// nothing bounds its reply.
    pub(crate) fn worst(&self, provider: &str, body: &Value) -> Result<Option<u64>, String> {
        let Some(price) = self.price(provider, body) else {
            return Ok(None);
        };
        let longest = longest_reply(provider, body, price)?;
        Ok(Some(worst_case(price, &body.to_string(), longest)))
    }

    /// Reserves the worst case of sending `body` to `provider` from the budget, when
    /// there is one ([`Ledger::worst`]).
    pub(crate) fn reserve(
        &self,
        provider: &str,
        body: &Value,
    ) -> Result<Option<Held<'_>>, CallError> {
        let Some(budget) = &self.budget else {
            return Ok(None);
        };
        let model = model_of(body);
        let refused =
            |why: String| CallError::exhausted(Resource::Cost, why, 0, micro(budget.limit()));
        // Every model was checked for a price and a bound before the run started; one
        // met only now (a subtask's) is refused rather than run at an unknown cost.
        let worst = match self.worst(provider, body) {
            Ok(Some(worst)) => worst,
            Ok(None) => {
                return Err(refused(format!("`{provider}:{model}` has no price, so a call to it cannot be kept within --max-cost; add its price with --prices FILE")))
            }
            Err(why) => return Err(refused(why)),
        };
        let what = match self.price(provider, body).map(|p| longest_reply(provider, body, p)) {
            Some(Ok(n)) if sent_limit(body).is_none() && n > 0 => format!(
                "a call to `{model}`, which sends no max_tokens, so that its longest reply ({n} tokens) counts,"
            ),
            _ => format!("a call to `{model}`"),
        };
        let reservation = budget.reserve(worst, &what)?;
        Ok(Some(Held {
            budget,
            reservation,
        }))
    }

    /// What `reply` to `body` cost (`None` without a price or a reply), with `held`
    /// settled at it; a reply that cannot be read was still paid for, so its worst case
    /// stays spent.
    pub(crate) fn settle(
        &self,
        provider: &str,
        body: &Value,
        held: Option<Held<'_>>,
        reply: &Result<LlmReply, CallError>,
    ) -> Option<u64> {
        let cost = reply.as_ref().ok().and_then(|r| {
            let p = self.price(provider, body)?;
            Some(p.cost(
                r.input_tokens,
                r.output_tokens,
                r.cache_read_tokens,
                r.cache_write_tokens,
            ))
        });
        if let Some(h) = held {
            let actual = cost.unwrap_or(h.reservation.worst);
            h.budget.settle(h.reservation, actual);
        }
        cost
    }

    /// The call was not answered: `held` is given back whole.
    pub(crate) fn release(held: Option<Held<'_>>) {
        if let Some(h) = held {
            h.budget.release(h.reservation);
        }
    }

    /// Stores `raw` under `key`; a warning when it cannot. A put syncs the entry to
    /// disk, which takes milliseconds, so it runs off the thread that drives the other
    /// calls in flight.
    pub(crate) async fn store(ledger: &Arc<Ledger>, key: CacheKey, raw: Value) -> Option<String> {
        let ledger = Arc::clone(ledger);
        let stored = tokio::task::spawn_blocking(move || match &ledger.cache {
            Some(cache) => cache.put(&key, &raw).map_err(|e| e.to_string()),
            None => Ok(()),
        })
        .await
        .unwrap_or_else(|e| Err(e.to_string()));
        stored
            .err()
            .map(|e| format!("the reply could not be cached: {e}"))
    }
}

/// A run's `--max-cost`, in picodollars.
#[derive(Debug)]
pub struct CostBudget {
    limit: u64,
    /// Spent, plus the worst cases of the calls in flight.
    committed: AtomicU64,
    /// Spent only.
    spent: AtomicU64,
}

/// A call's part of the budget, held while the call is in flight.
#[derive(Debug)]
#[must_use = "a reservation is settled or released"]
pub(crate) struct Reservation {
    worst: u64,
}

impl CostBudget {
    pub fn new(limit: u64) -> CostBudget {
        CostBudget {
            limit,
            committed: AtomicU64::new(0),
            spent: AtomicU64::new(0),
        }
    }

    pub(crate) fn limit(&self) -> u64 {
        self.limit
    }

    pub fn spent(&self) -> u64 {
        self.spent.load(Ordering::SeqCst)
    }

    /// Reserves `worst` picodollars, unless that would commit more than the limit:
    /// then nothing is reserved and the error says what the call would have needed.
    pub(crate) fn reserve(&self, worst: u64, what: &str) -> Result<Reservation, CallError> {
        let fits = self
            .committed
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |c| {
                c.checked_add(worst).filter(|&after| after <= self.limit)
            });
        match fits {
            Ok(_) => Ok(Reservation { worst }),
            Err(committed) => Err(CallError::exhausted(
                Resource::Cost,
                format!(
                    "{what} was not sent: its worst case of ${} does not fit in what is left of the \
                     budget (--max-cost ${}: ${} spent or reserved by calls in flight); a lower \
                     max_tokens (the task's `<model max_tokens>` or --max-output-tokens) lowers \
                     the worst case",
                    dollars(worst),
                    dollars(self.limit),
                    dollars(committed),
                ),
                micro(committed.saturating_add(worst)),
                micro(self.limit),
            )),
        }
    }

    /// The call cost `actual`: it is spent and the rest of its reservation given back.
    pub(crate) fn settle(&self, r: Reservation, actual: u64) {
        self.spent.fetch_add(actual, Ordering::SeqCst);
        let _ = self
            .committed
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |c| {
                Some(c.saturating_sub(r.worst).saturating_add(actual))
            });
    }

    /// The call was not answered: its reservation is given back whole.
    pub(crate) fn release(&self, r: Reservation) {
        self.settle(r, 0);
    }
}

/// The model a request body names.
fn model_of(body: &Value) -> &str {
    body.get("model")
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The longest reply `body` can get, in tokens: its `max_tokens` (or OpenAI's
/// `max_completion_tokens`), else the model's longest reply by the capability table;
/// nothing at all bounds it when the output is free. `Err` says what to set when
/// nothing bounds a priced reply.
pub(crate) fn longest_reply(provider: &str, body: &Value, price: &Price) -> Result<u64, String> {
    if let Some(n) = sent_limit(body) {
        return Ok(n);
    }
    if price.output <= 0.0 {
        return Ok(0);
    }
    let model = model_of(body);
    Provider::parse(provider)
        .and_then(|p| capability(p, model))
        .map(|c| c.max_output)
        .ok_or_else(|| unbounded(&format!("{provider}:{model}")))
}

/// The output limit a request body sends, under either of OpenAI's names.
fn sent_limit(body: &Value) -> Option<u64> {
    body.get("max_tokens")
        .or(body.get("max_completion_tokens"))
        .and_then(Value::as_u64)
}

/// Why a budget cannot hold calls to `model`, which send no max_tokens and whose longest
/// reply the capability table does not know.
pub(crate) fn unbounded(model: &str) -> String {
    format!(
        "a call to `{model}` sends no max_tokens and the capability table (stdlib/models.json) \
         does not know its longest reply, so --max-cost cannot bound it; set max_tokens on the \
         task's <model> or --max-output-tokens"
    )
}

/// Tokens a request text may take at most, as the budget counts them: 4 ASCII
/// characters a token, rounded up (DESIGN §15), and one token for every other
/// character, since text outside ASCII takes a token for every one or two characters.
pub fn estimate_tokens(text: &str) -> u64 {
    let (ascii, other) = text.chars().fold((0u64, 0u64), |(a, o), c| {
        if c.is_ascii() {
            (a + 1, o)
        } else {
            (a, o + 1)
        }
    });
    ascii.div_ceil(4) + other
}

/// The worst case of one call: its whole body counted as input (so every message,
/// tool and schema is in), and `max_tokens` of output.
pub(crate) fn worst_case(price: &Price, body_text: &str, max_tokens: u64) -> u64 {
    price.worst_case(estimate_tokens(body_text), max_tokens)
}

pub(crate) fn micro(picodollars: u64) -> u64 {
    picodollars / 1_000_000
}

/// Dollars for a message: cents at least, and enough digits to tell small amounts
/// apart (`0.01`, `0.002461`, `12.50`).
pub(crate) fn dollars(picodollars: u64) -> String {
    let d = usd(picodollars);
    if d >= 1.0 {
        return format!("{d:.2}");
    }
    let text = format!("{d:.6}");
    let kept = text.trim_end_matches('0');
    match kept.split_once('.') {
        Some((_, cents)) if cents.len() < 2 => format!("{d:.2}"),
        _ => kept.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reservation_that_does_not_fit_is_refused_with_the_cost_resource() {
        let b = CostBudget::new(1_000);
        let first = b.reserve(600, "call").unwrap();
        let refused = b.reserve(500, "task `t`").unwrap_err();
        assert!(matches!(
            refused.kind(),
            crate::model::CallKind::Exhausted {
                resource: Resource::Cost,
                ..
            }
        ));
        assert!(
            refused.message().contains("task `t` was not sent"),
            "{}",
            refused.message()
        );
        b.settle(first, 100);
        assert_eq!(b.spent(), 100);
        // What the first call did not use is free again.
        b.reserve(900, "call").map(|r| b.release(r)).unwrap();
    }

    #[test]
    fn dollars_show_cents_at_least_and_no_trailing_zeros() {
        assert_eq!(dollars(10_000_000_000), "0.01");
        assert_eq!(dollars(2_461_000_000), "0.002461");
        assert_eq!(dollars(12_500_000_000_000), "12.50");
        assert_eq!(dollars(0), "0.00");
    }

    #[test]
    fn text_outside_ascii_counts_a_token_a_character() {
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        assert_eq!(estimate_tokens("日本語"), 3);
        assert_eq!(estimate_tokens(""), 0);
    }
}
