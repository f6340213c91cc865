//! The waits between tries of something that may work a moment later: a provider call
//! that failed or was rate-limited, a NATS request while the server restarts, a place
//! under the batch's shared cap while every place is taken. They double, so that a long outage costs few tries, up to a ceiling, so that
//! the first try after it ends comes soon; each gets up to half again of jitter, so that
//! the many clients refused at once do not come back at the same instant.
//!
//! The doubling is backon's; its own jitter is not used, since it adds up to the whole
//! wait again.

use backon::{BackoffBuilder, ExponentialBuilder};
use std::time::Duration;

/// Waits that start at `base` and double up to `max`, where they stay, without end;
/// each has up to half again of jitter on top. Usable as backon's `Backoff`.
pub(crate) fn doubling(
    base: Duration,
    max: Duration,
) -> impl Iterator<Item = Duration> + Send + Sync + Unpin + 'static {
    ExponentialBuilder::new()
        .with_factor(2.0)
        .with_min_delay(base)
        .with_max_delay(max.max(base))
        .without_max_times()
        .build()
        .map(|wait| with_jitter(wait, fastrand::f64()))
}

/// `wait` plus `unit` (in [0, 1)) of half of it.
fn with_jitter(wait: Duration, unit: f64) -> Duration {
    let jitter = Duration::try_from_secs_f64(wait.as_secs_f64() * unit / 2.0);
    wait.saturating_add(jitter.unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn waits_double_from_the_base_with_up_to_half_again_of_jitter_and_stop_at_the_ceiling() {
        for _ in 0..100 {
            for (n, d) in doubling(100 * MS, 1600 * MS).take(8).enumerate() {
                let exp = 100 * MS * (1 << n.min(4));
                assert!(d >= exp && d <= exp + exp / 2, "wait {n}: {d:?}");
            }
        }
    }

    #[test]
    fn a_ceiling_between_two_doublings_is_reached_and_kept() {
        let waits = doubling(50 * MS, 1000 * MS);
        for (d, exp) in waits.zip([50, 100, 200, 400, 800, 1000, 1000, 1000]) {
            let exp = exp * MS;
            assert!(d >= exp && d <= exp + exp / 2, "{d:?} for {exp:?}");
        }
    }

    #[test]
    fn jitter_is_at_most_half_of_the_wait_and_never_overflows() {
        assert_eq!(with_jitter(100 * MS, 0.0), 100 * MS);
        assert!(with_jitter(100 * MS, 0.999_999) <= 150 * MS);
        assert_eq!(with_jitter(Duration::MAX, 0.999), Duration::MAX);
    }

    #[test]
    fn the_waits_differ_between_clients() {
        let first: Vec<Duration> = doubling(100 * MS, 100 * MS).take(16).collect();
        let second: Vec<Duration> = doubling(100 * MS, 100 * MS).take(16).collect();
        assert_ne!(first, second);
    }
}
