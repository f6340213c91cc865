//! Retrying a provider call: exponential backoff with jitter, `Retry-After`, and two
//! budgets (a number of retries and a total time spent waiting), after which the last
//! error is returned.

use reqwest::header::HeaderMap;
use std::future::Future;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tv_vm::host::HostError;

/// How one attempt ended, when it did not succeed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Worth another attempt (429, 5xx, timeout, connection trouble), after `wait` when
    /// the server said how long.
    Retry {
        error: HostError,
        wait: Option<Duration>,
    },
    /// Another attempt would fail the same way (a refused key, a malformed reply).
    Fatal(HostError),
}

pub(crate) struct Policy {
    pub max_retries: u32,
    pub max_wait: Duration,
    pub base: Duration,
}

/// Backoff doubles up to this many times the base (0.5 s → 8 s with the defaults), so
/// that a long outage is still probed now and then within the waiting budget.
const MAX_DOUBLINGS: u32 = 4;

impl Policy {
    /// Runs `attempt` until it succeeds, fails for good, or a budget is spent.
    pub(crate) async fn run<T, F, Fut>(&self, mut attempt: F) -> Result<T, HostError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, Failure>>,
    {
        let mut waited = Duration::ZERO;
        let mut attempts: u32 = 0;
        loop {
            attempts = attempts.saturating_add(1);
            let (error, asked) = match attempt().await {
                Ok(v) => return Ok(v),
                Err(Failure::Fatal(e)) => return Err(e),
                Err(Failure::Retry { error, wait }) => (error, wait),
            };
            if attempts > self.max_retries {
                return Err(gave_up(error, attempts, None));
            }
            let delay = asked.unwrap_or_else(|| self.backoff(attempts - 1));
            if waited.saturating_add(delay) > self.max_wait {
                // Waiting less than the server asked would only earn another 429.
                let why = format!(
                    "the next wait of {delay:?} would exceed the {:?} retry budget",
                    self.max_wait
                );
                return Err(gave_up(error, attempts, Some(why)));
            }
            waited += delay;
            tokio::time::sleep(delay).await;
        }
    }

    /// The wait before retry `n` (0-based): `base · 2ⁿ` (capped) plus up to half again,
    /// so that many clients refused at once do not come back at the same instant.
    fn backoff(&self, n: u32) -> Duration {
        let exp = self.base.saturating_mul(1 << n.min(MAX_DOUBLINGS));
        let jitter = Duration::try_from_secs_f64(exp.as_secs_f64() * unit_random(n) / 2.0);
        let jitter = jitter.unwrap_or(Duration::ZERO);
        exp.saturating_add(jitter)
    }
}

fn gave_up(mut error: HostError, attempts: u32, why: Option<String>) -> HostError {
    let plural = if attempts == 1 { "" } else { "s" };
    error.message = match why {
        Some(why) => format!(
            "{} (gave up after {attempts} attempt{plural}: {why})",
            error.message
        ),
        None => format!(
            "{} (gave up after {attempts} attempt{plural})",
            error.message
        ),
    };
    error
}

/// A number in [0, 1) that differs between calls and processes. Jitter needs no quality
/// randomness, so a mixed clock reading spares a dependency.
fn unit_random(salt: u32) -> f64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    // splitmix64's finaliser: nearby clock readings land far apart.
    let mut z = nanos ^ (u64::from(salt) << 32) ^ 0x9E37_79B9_7F4A_7C15;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
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
            base: Duration::from_millis(100),
        };
        for n in 0..8 {
            let exp = Duration::from_millis(100 << n.min(MAX_DOUBLINGS));
            let d = p.backoff(n);
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
