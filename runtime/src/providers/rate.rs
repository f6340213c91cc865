//! The calls in flight to one provider, adapted to its rate limits (DESIGN §16): the
//! limit starts at the configured concurrency, halves when the provider answers 429, and
//! grows by one again each time as many calls as the limit have succeeded (additive
//! increase, multiplicative decrease, as TCP does with its window). A `Retry-After` on a
//! 429 holds back every call to the provider until then, not only the refused one.
//!
//! Only one halving is made per round: a 429 to a call that was let through before the
//! last halving tells nothing new (a burst of 16 calls refused together halves the limit
//! once, not 16 times).

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::sync::{AcquireError, Semaphore, SemaphorePermit};
use tokio::time::Instant;

pub(crate) struct Rate {
    /// As many permits as the limit, less those the window owes (see [`Window::debt`]).
    permits: Semaphore,
    window: Mutex<Window>,
}

struct Window {
    /// The configured concurrency: the limit never grows past it.
    ceiling: usize,
    limit: usize,
    /// Permits to be forgotten as they come back, because the limit was lowered while
    /// they were out.
    debt: usize,
    /// Calls that succeeded since the limit last changed.
    successes: usize,
    /// Counts the halvings, so that a 429 can tell whether the limit was already lowered
    /// after its call went out.
    round: u64,
    /// No call starts before this instant (the latest `Retry-After` heard).
    paused_until: Option<Instant>,
}

/// The right to send one attempt; told how it went, and handing its permit back when
/// dropped.
pub(crate) struct Slot<'a> {
    rate: &'a Rate,
    permit: Option<SemaphorePermit<'a>>,
    round: u64,
}

impl Rate {
    pub(crate) fn new(concurrency: usize) -> Rate {
        // Zero permits would hang every call; too many would panic in tokio.
        let ceiling = concurrency.clamp(1, Semaphore::MAX_PERMITS);
        Rate {
            permits: Semaphore::new(ceiling),
            window: Mutex::new(Window {
                ceiling,
                limit: ceiling,
                debt: 0,
                successes: 0,
                round: 0,
                paused_until: None,
            }),
        }
    }

    /// Waits for a permit, in arrival order, and then for the end of any pause the
    /// provider asked for (it may have asked while this call waited in line).
    pub(crate) async fn slot(&self) -> Result<Slot<'_>, AcquireError> {
        let permit = self.permits.acquire().await?;
        loop {
            let until = self.window().paused_until;
            match until {
                Some(t) if t > Instant::now() => tokio::time::sleep_until(t).await,
                _ => break,
            }
        }
        let round = self.window().round;
        Ok(Slot {
            rate: self,
            permit: Some(permit),
            round,
        })
    }

    /// The calls that may be in flight now.
    #[cfg(test)]
    pub(crate) fn limit(&self) -> usize {
        self.window().limit
    }

    fn window(&self) -> MutexGuard<'_, Window> {
        // The window holds plain counters, consistent after every statement; a panic
        // elsewhere while it was held leaves nothing half-done.
        self.window.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Slot<'_> {
    /// The call succeeded: one step towards a higher limit.
    pub(crate) fn succeeded(self) {
        let mut w = self.rate.window();
        w.successes += 1;
        if w.successes >= w.limit && w.limit < w.ceiling {
            w.limit += 1;
            w.successes = 0;
            if w.debt > 0 {
                w.debt -= 1;
            } else {
                self.rate.permits.add_permits(1);
            }
        }
    }

    /// The provider answered 429: halve the limit (once per round) and, when it said how
    /// long to wait, hold every call back until then, but no longer than `longest`.
    pub(crate) fn rate_limited(self, retry_after: Option<Duration>, longest: Duration) {
        let mut w = self.rate.window();
        if self.round == w.round {
            let lower = (w.limit / 2).max(1);
            let cut = w.limit - lower;
            // Idle permits go at once; those out now are owed and go as they return.
            let taken = self.rate.permits.forget_permits(cut);
            w.debt += cut - taken;
            w.limit = lower;
            w.successes = 0;
            w.round += 1;
        }
        if let Some(wait) = retry_after {
            let until = Instant::now() + wait.min(longest);
            w.paused_until = Some(w.paused_until.map_or(until, |t| t.max(until)));
        }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let Some(permit) = self.permit.take() else {
            return;
        };
        let mut w = self.rate.window();
        if w.debt > 0 {
            w.debt -= 1;
            permit.forget();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn in_flight(rate: &Rate) -> usize {
        let w = rate.window();
        w.limit + w.debt - rate.permits.available_permits()
    }

    #[tokio::test]
    async fn a_burst_of_429s_halves_the_limit_once_and_successes_raise_it_one_at_a_time() {
        let rate = Rate::new(16);
        let slots: Vec<_> = take_slots(&rate, 16).await;
        assert_eq!(in_flight(&rate), 16);
        for s in slots {
            s.rate_limited(None, Duration::from_secs(1));
        }
        assert_eq!(
            rate.limit(),
            8,
            "one halving for calls sent in the same round"
        );
        assert_eq!(rate.permits.available_permits(), 8);
        // Eight successes at a limit of 8 raise it to 9; nine more to 10.
        for _ in 0..8 {
            rate.slot().await.unwrap().succeeded();
        }
        assert_eq!(rate.limit(), 9);
        for _ in 0..9 {
            rate.slot().await.unwrap().succeeded();
        }
        assert_eq!(rate.limit(), 10);
        assert_eq!(rate.permits.available_permits(), 10);
    }

    #[tokio::test]
    async fn a_429_after_a_halving_halves_again_and_the_limit_stays_at_least_one() {
        let rate = Rate::new(4);
        for expected in [2, 1, 1] {
            rate.slot()
                .await
                .unwrap()
                .rate_limited(None, Duration::from_secs(1));
            assert_eq!(rate.limit(), expected);
        }
        assert_eq!(rate.permits.available_permits(), 1);
    }

    #[tokio::test]
    async fn permits_out_during_a_halving_are_forgotten_as_they_return() {
        let rate = Rate::new(4);
        let mut out = take_slots(&rate, 4).await;
        out.pop()
            .unwrap()
            .rate_limited(None, Duration::from_secs(1));
        assert_eq!(rate.limit(), 2);
        drop(out);
        assert_eq!(rate.permits.available_permits(), 2);
        assert_eq!(rate.window().debt, 0);
    }

    #[tokio::test(start_paused = true)]
    async fn retry_after_holds_back_every_call_until_it_has_passed_but_no_longer_than_the_cap() {
        let rate = Rate::new(4);
        let start = Instant::now();
        rate.slot()
            .await
            .unwrap()
            .rate_limited(Some(Duration::from_secs(3)), Duration::from_secs(60));
        let s = rate.slot().await.unwrap();
        assert_eq!(Instant::now() - start, Duration::from_secs(3));
        s.rate_limited(Some(Duration::from_secs(3600)), Duration::from_secs(10));
        let t = Instant::now();
        drop(rate.slot().await.unwrap());
        assert_eq!(Instant::now() - t, Duration::from_secs(10));
    }

    async fn take_slots(rate: &Rate, n: usize) -> Vec<Slot<'_>> {
        let mut v = Vec::new();
        for _ in 0..n {
            v.push(rate.slot().await.unwrap());
        }
        v
    }
}
