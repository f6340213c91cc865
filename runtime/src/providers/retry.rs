//! Retrying a provider call: exponential backoff with jitter, `Retry-After`, and budgets
//! after which the last error is returned. Failures (5xx, timeouts, lost connections)
//! have a number of retries and a total time spent waiting; rate limits (429) have a
//! waiting time of their own and no count, because under an adaptive rate ([`super::rate`])
//! a 429 is the provider pacing a busy run, not the call going wrong.

use crate::backoff::doubling;
use crate::model::CallError;
use reqwest::header::HeaderMap;
use std::future::Future;
use std::time::Duration;

/// How one attempt ended, when it did not succeed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Worth another attempt (5xx, timeout, connection trouble), after `wait` when
    /// the server said how long.
    Retry {
        error: CallError,
        wait: Option<Duration>,
    },
    /// The provider's rate limit (429), after `wait` when the server said how long.
    Limited {
        error: CallError,
        wait: Option<Duration>,
    },
    /// Another attempt would fail the same way (a refused key, a malformed reply).
    Fatal(CallError),
}

pub(crate) struct Policy {
    pub max_retries: u32,
    pub max_wait: Duration,
    /// The total time a call may wait for rate limits.
    pub max_rate_wait: Duration,
    pub base: Duration,
}

/// Rate-limited attempts one call may make, whatever the waits: a server that answers
/// 429 with no wait at all (or a zero backoff base) still ends.
pub(crate) const MAX_RATE_ATTEMPTS: u32 = 100;

/// Backoff doubles up to this many times the base (0.5 s → 8 s with the defaults), so
/// that a long outage is still probed now and then within the waiting budget.
const MAX_DOUBLINGS: u32 = 4;

impl Policy {
    /// Runs `attempt` until it succeeds, fails for good, or a budget is spent.
    pub(crate) async fn run<T, F, Fut>(&self, mut attempt: F) -> Result<T, CallError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Failure>>,
    {
        let mut waited = Duration::ZERO;
        let mut rate_waited = Duration::ZERO;
        let (mut failures, mut limited) = (0u32, 0u32);
        // Failures and rate limits back off each on their own: a 429 says nothing of
        // how long an outage lasts.
        let (mut failing, mut pacing) = (self.backoff(), self.backoff());
        loop {
            let (error, delay, spent, budget, kind) = match attempt().await {
                Ok(v) => return Ok(v),
                Err(Failure::Fatal(e)) => return Err(e),
                Err(Failure::Retry { error, wait }) => {
                    failures = failures.saturating_add(1);
                    if failures > self.max_retries {
                        return Err(gave_up(error, failures + limited, None));
                    }
                    // Taken even when the server says how long: the next one doubles.
                    let backoff = failing.next().unwrap_or(self.base);
                    let delay = wait.unwrap_or(backoff);
                    (error, delay, &mut waited, self.max_wait, "retry")
                }
                Err(Failure::Limited { error, wait }) => {
                    limited = limited.saturating_add(1);
                    if limited >= MAX_RATE_ATTEMPTS {
                        let why = format!("rate-limited {limited} times");
                        return Err(gave_up(error, failures + limited, Some(why)));
                    }
                    let backoff = pacing.next().unwrap_or(self.base);
                    let delay = wait.unwrap_or(backoff);
                    (
                        error,
                        delay,
                        &mut rate_waited,
                        self.max_rate_wait,
                        "rate-limit",
                    )
                }
            };
            if spent.saturating_add(delay) > budget {
                // Waiting less than the server asked would only earn another 429.
                let why =
                    format!("the next wait of {delay:?} would exceed the {budget:?} {kind} budget");
                return Err(gave_up(error, failures + limited, Some(why)));
            }
            *spent += delay;
            tokio::time::sleep(delay).await;
        }
    }

    /// The waits between attempts: `base · 2ⁿ`, doubling at most [`MAX_DOUBLINGS`]
    /// times, each with up to half again of jitter, so that many clients refused at
    /// once do not come back at the same instant.
    fn backoff(&self) -> impl Iterator<Item = Duration> {
        doubling(self.base, self.base.saturating_mul(1 << MAX_DOUBLINGS))
    }
}

fn gave_up(error: CallError, attempts: u32, why: Option<String>) -> CallError {
    let plural = if attempts == 1 { "" } else { "s" };
    let suffix = match why {
        Some(why) => format!(" (gave up after {attempts} attempt{plural}: {why})"),
        None => format!(" (gave up after {attempts} attempt{plural})"),
    };
    error.with_suffix(&suffix)
}

/// How long the server asked us to wait: `retry-after-ms` (sent by some OpenAI-compatible
/// servers) or `Retry-After` in seconds. The HTTP-date form is ignored (plain backoff
/// then), as no provider we talk to sends it.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| {
        let text = headers.get(name)?.to_str().ok()?.trim();
        text.parse::<f64>().ok()
    };
    // `try_`: a hostile or broken header ("1e300", "-1") must not panic.
    let seconds = |v: f64| Duration::try_from_secs_f64(v).ok();
    number("retry-after-ms")
        .and_then(|ms| seconds(ms / 1000.0))
        .or_else(|| number("retry-after").and_then(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_up_to_half_again_of_jitter_and_stops_doubling() {
        let p = Policy {
            max_retries: 4,
            max_wait: Duration::from_secs(30),
            max_rate_wait: Duration::from_secs(300),
            base: Duration::from_millis(100),
        };
        for (n, d) in p.backoff().take(8).enumerate() {
            let exp = Duration::from_millis(100 << n.min(MAX_DOUBLINGS as usize));
            assert!(d >= exp && d <= exp + exp / 2, "retry {n}: {d:?}");
        }
    }

    #[test]
    fn retry_after_is_read_in_seconds_or_milliseconds() {
        let mut h = HeaderMap::new();
        assert_eq!(retry_after(&h), None);
        h.insert("retry-after", "2".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_secs(2)));
        h.insert("retry-after-ms", "250".parse().unwrap());
        assert_eq!(retry_after(&h), Some(Duration::from_millis(250)));
        let mut d = HeaderMap::new();
        d.insert(
            "retry-after",
            "Wed, 21 Oct 2015 07:28:00 GMT".parse().unwrap(),
        );
        assert_eq!(retry_after(&d), None);
        for hostile in ["1e300", "-1", "NaN", "inf"] {
            let mut h = HeaderMap::new();
            h.insert("retry-after", hostile.parse().unwrap());
            assert_eq!(retry_after(&h), None, "{hostile}");
        }
    }
}
