//! A batch's budget and cap on calls in flight, shared by its workers through the
//! server (DESIGN §16).
//!
//! **The budget** is one counter in the bucket `tvm_shared` (`spent.BATCH`): the
//! picodollars spent, plus the worst cases reserved by calls in flight, as a run's own
//! budget counts them ([`crate::ledger`]). A call reserves its worst case by writing
//! the counter with the revision it read (compare-and-set), and tries again when
//! another worker wrote first, so no two calls can both take the last of the budget:
//! the batch never spends more than `--max-cost`. A worker killed with calls in
//! flight never gives their reservations back; they stay counted at their worst case,
//! so such a batch may stop a little short of its budget, never beyond it.
//!
//! **The cap** is `--concurrency N` places, the keys `BATCH.0` to `BATCH.N-1` of the
//! bucket `tvm_slots`. A call takes a free one by creating its key (create-if-absent)
//! and gives it back by deleting it. The bucket forgets a key [`SLOT_LEASE`] after it
//! was last written, and a worker rewrites its keys every third of that while their
//! calls run, so the place of a worker killed mid-call is free again within the lease.
//! While every worker reaches the server, at most N calls of the batch are in flight;
//! a worker cut off from the server for longer than the lease may run one call beside
//! the N.

use super::{patiently, NatsKind, SLOT_LEASE};
use crate::ledger::{dollars, micro, Shared, Ticket};
use crate::model::{CallError, CallKind};
use async_nats::jetstream::kv::{self, Operation};
use futures::future::BoxFuture;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;
use tv_vm::result::Resource;

pub(super) struct NatsShared {
    counters: kv::Store,
    slots: kv::Store,
    batch: String,
    /// `--max-cost` of the batch, in picodollars.
    limit: Option<u64>,
    /// Places among the calls in flight.
    places: usize,
    next: AtomicU64,
    /// Where this worker starts looking for a free place, so that workers do not all
    /// try the same places first (each refused try is a round trip to the server).
    base: usize,
    /// Places this worker gave back, which no other worker held since it last knew:
    /// tried first.
    freed: Mutex<Vec<usize>>,
    /// Each ticket's place, and the task that keeps it.
    held: Mutex<HashMap<u64, (usize, tokio::task::JoinHandle<()>)>>,
}

impl NatsShared {
    pub(super) fn new(
        server: &super::Server,
        batch: &str,
        limit: Option<u64>,
        places: usize,
    ) -> Self {
        NatsShared {
            counters: server.shared.clone(),
            slots: server.slots.clone(),
            batch: batch.to_string(),
            limit,
            places: places.max(1),
            next: AtomicU64::new(0),
            base: spread(),
            freed: Mutex::new(Vec::new()),
            held: Mutex::new(HashMap::new()),
        }
    }

    /// Changes the batch's committed picodollars by `change`, which may refuse the
    /// value it is given; returns the new value.
    async fn adjust(
        &self,
        change: impl Fn(u64) -> Result<u64, CallError>,
    ) -> Result<u64, CallError> {
        let key = format!("spent.{}", self.batch);
        loop {
            let entry = patiently(|| self.counters.entry(&key))
                .await
                .map_err(unreachable)?;
            let (now, revision) = match entry {
                Some(e) if e.operation == Operation::Put => {
                    let text = String::from_utf8_lossy(&e.value).to_string();
                    (text.trim().parse::<u64>().unwrap_or(0), e.revision)
                }
                _ => (0, 0),
            };
            let after = change(now)?;
            let value: bytes::Bytes = after.to_string().into_bytes().into();
            let written = if revision == 0 {
                patiently(|| self.counters.create(&key, value.clone())).await
            } else {
                patiently(|| self.counters.update(&key, value.clone(), revision)).await
            };
            match written {
                Ok(_) => return Ok(after),
                // Another worker wrote first: read again.
                Err(e) if e.settled() => continue,
                Err(e) => return Err(unreachable(e)),
            }
        }
    }

    fn key(&self, place: usize) -> String {
        format!("{}.{place}", self.batch)
    }

    /// Takes a free place, waiting for one: its number and revision.
    async fn take_place(&self, ticket: u64) -> Result<(usize, u64), CallError> {
        let mut waits =
            crate::backoff::doubling(Duration::from_millis(5), Duration::from_millis(200));
        let start = self.base.wrapping_add(ticket as usize);
        loop {
            let mine = self.freed.lock().ok().and_then(|mut f| f.pop());
            let others = (0..self.places).map(|k| start.wrapping_add(k) % self.places);
            for place in mine.into_iter().chain(others) {
                let taken = patiently(|| {
                    self.slots
                        .create(self.key(place), ticket.to_string().into_bytes().into())
                });
                match taken.await {
                    Ok(revision) => return Ok((place, revision)),
                    // Another call holds the place.
                    Err(e) if e.kind() == NatsKind::Exists => {}
                    Err(e) => return Err(unreachable(e)),
                }
            }
            // `doubling` has no last wait; its ceiling stands in for one.
            let wait = waits.next().unwrap_or(Duration::from_millis(200));
            tokio::time::sleep(wait).await;
        }
    }
}

/// The server could not be asked: the call is not made.
fn unreachable(e: impl std::fmt::Display) -> CallError {
    CallError::new(
        CallKind::Shared,
        format!("the batch's shared budget and cap could not be read from the NATS server: {e}"),
    )
}

impl Shared for NatsShared {
    fn enter<'a>(
        &'a self,
        worst: Option<u64>,
        what: &'a str,
    ) -> BoxFuture<'a, Result<Ticket, CallError>> {
        Box::pin(async move {
            let reserved = match self.limit {
                None => None,
                Some(limit) => {
                    let Some(worst) = worst else {
                        return Err(CallError::exhausted(
                            Resource::Cost,
                            format!("{what} has no price, so it cannot be kept within the batch's --max-cost; add its price with --prices FILE"),
                            0,
                            micro(limit),
                        ));
                    };
                    self.adjust(|committed| match committed.checked_add(worst) {
                        Some(after) if after <= limit => Ok(after),
                        _ => Err(CallError::exhausted(
                            Resource::Cost,
                            format!(
                                "{what} was not sent: its worst case of ${} does not fit in what is left of the batch's budget (--max-cost ${}: ${} spent or reserved by the calls of all its workers)",
                                dollars(worst),
                                dollars(limit),
                                dollars(committed)
                            ),
                            micro(committed.saturating_add(worst)),
                            micro(limit),
                        )),
                    })
                    .await?;
                    Some(worst)
                }
            };
            let id = self.next.fetch_add(1, Ordering::Relaxed);
            let (place, revision) = match self.take_place(id).await {
                Ok(place) => place,
                Err(e) => {
                    if let Some(w) = reserved {
                        let _ = self.adjust(|c| Ok(c.saturating_sub(w))).await;
                    }
                    return Err(e);
                }
            };
            let keeper = tokio::spawn(keep(self.slots.clone(), self.key(place), revision));
            if let Ok(mut held) = self.held.lock() {
                held.insert(id, (place, keeper));
            }
            Ok(Ticket {
                id,
                worst: reserved,
            })
        })
    }

    fn leave(&self, ticket: Ticket, actual: Option<u64>) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let place = self.held.lock().ok().and_then(|mut h| h.remove(&ticket.id));
            if let Some((place, keeper)) = place {
                keeper.abort();
                if self.slots.delete(self.key(place)).await.is_ok() {
                    if let Ok(mut freed) = self.freed.lock() {
                        freed.push(place);
                    }
                }
            }
            if let Some(worst) = ticket.worst {
                let actual = actual.unwrap_or(0);
                let _ = self
                    .adjust(|c| Ok(c.saturating_sub(worst).saturating_add(actual)))
                    .await;
            }
        })
    }
}

/// Rewrites a taken place every third of its lease, so the bucket keeps it while its
/// call runs.
async fn keep(slots: kv::Store, key: String, mut revision: u64) {
    loop {
        tokio::time::sleep(SLOT_LEASE / 3).await;
        match slots.update(&key, "kept".into(), revision).await {
            Ok(r) => revision = r,
            Err(_) => return,
        }
    }
}

/// A starting place that differs between worker processes.
fn spread() -> usize {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.finish() as usize
}
