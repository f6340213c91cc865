//! Which delivery of a row holds it now: the key `BATCH.ROW.lease` of the bucket
//! `tvm_journals` names the row message's stream sequence and how many times the server
//! has handed it out.
//!
//! A worker takes the lease when a row comes to it, and holds it again (a write that
//! names the revision it follows: compare-and-set) before each write of the row's
//! journal and before it stores the row's result. The server hands a row out again only
//! once its worker fell silent for the lease; the worker that gets it then takes the
//! lease, so the silent one, if it wakes, finds the lease moved and gives the row up: a
//! result is stored only by the worker that holds the row's latest delivery. A delivery
//! older than the one holding the lease (the same message, handed out fewer times) is
//! given up at once.

use super::{patiently, NatsError, NatsKind};
use async_nats::jetstream::kv::{self, Operation};
use serde::{Deserialize, Serialize};
use tokio::sync::Mutex;

pub(super) struct Lease {
    kv: kv::Store,
    key: String,
    /// This delivery, as written.
    value: bytes::Bytes,
    revision: Mutex<u64>,
}

#[derive(Serialize, Deserialize)]
struct Holder {
    seq: u64,
    delivered: u64,
}

/// Another delivery of the row holds its lease.
pub(super) const TAKEN: &str =
    "was taken over by another worker (this one stopped sending heartbeats for too long)";

impl Lease {
    /// Takes the lease of row `row` (`BATCH.ROW`) for the delivery `delivered` of the
    /// message at stream sequence `seq`; `None` when a later delivery holds it.
    pub(super) async fn take(
        kv: kv::Store,
        row: &str,
        seq: u64,
        delivered: u64,
    ) -> Result<Option<Lease>, NatsError> {
        let key = format!("{row}.lease");
        let value: bytes::Bytes = serde_json::to_vec(&Holder { seq, delivered })
            .map_err(|e| NatsError::new(NatsKind::Decode, e.to_string()).because(e))?
            .into();
        let failed = |e: NatsError| e.context(format!("cannot take the lease of row {row}"));
        loop {
            let entry = patiently(|| kv.entry(key.clone())).await.map_err(failed)?;
            let (holder, revision) = match entry {
                Some(e) if e.operation == Operation::Put => {
                    (serde_json::from_slice::<Holder>(&e.value).ok(), e.revision)
                }
                Some(e) => (None, e.revision),
                None => (None, 0),
            };
            // Another message of the same row (published again) takes it over; a later
            // delivery of this one keeps it.
            if holder.is_some_and(|h| h.seq == seq && h.delivered > delivered) {
                return Ok(None);
            }
            let written = patiently(|| kv.update(&key, value.clone(), revision)).await;
            match written {
                Ok(revision) => {
                    return Ok(Some(Lease {
                        kv,
                        key,
                        value,
                        revision: Mutex::new(revision),
                    }))
                }
                // Written meanwhile by another delivery: read again.
                Err(e) if e.kind() == NatsKind::RevisionMoved => continue,
                Err(e) => return Err(failed(e)),
            }
        }
    }

    /// Holds the lease again; `Ok(false)` when another delivery took it since.
    pub(super) async fn hold(&self) -> Result<bool, NatsError> {
        let mut revision = self.revision.lock().await;
        let written = patiently(|| self.kv.update(&self.key, self.value.clone(), *revision)).await;
        match written {
            Ok(r) => {
                *revision = r;
                Ok(true)
            }
            Err(e) if e.kind() == NatsKind::RevisionMoved => Ok(false),
            Err(e) => Err(e.context(format!("cannot hold the lease of {}", self.key))),
        }
    }

    /// Removes the lease once the row's result is stored.
    pub(super) async fn remove(&self) {
        let _ = self.kv.purge(&self.key).await;
    }
}
