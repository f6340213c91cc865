//! A row's journal in the bucket `tvm_journals`: JSON lines, as a journal file holds
//! them, under the keys `BATCH.ROW.0`, `BATCH.ROW.1`, ...: a part is at most
//! [`PART_BYTES`] (a message must fit in the server's `max_payload`), and a line that
//! does not fit in the last part starts the next.
//!
//! Every write names the revision it follows (compare-and-set), and is made only while
//! the worker holds the row's lease ([`Lease`]). A worker that lost the row (it stopped
//! sending heartbeats long enough for the server to hand the row to another worker) has
//! its next write refused, and stops the row rather than write beside the worker that
//! took it over.

use super::lease::{Lease, TAKEN};
use super::{patiently, NatsError, NatsKind};
use crate::journal::{JournalError, RemoteLog};
use async_nats::jetstream::kv::{self, Operation};
use futures::future::BoxFuture;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::Mutex;

/// The most a part holds before a line starts the next.
const PART_BYTES: usize = 256 * 1024;

/// The most a journal read back may hold: the bucket is written by every worker, so
/// what it holds is read with a bound.
pub(super) const MAX_JOURNAL_BYTES: usize = 256 << 20;

pub(super) struct KvLog {
    kv: kv::Store,
    /// `BATCH.ROW`.
    key: String,
    last: Mutex<Part>,
    /// A write was refused: another worker has the row.
    lost: AtomicBool,
    lease: Arc<Lease>,
}

/// The last part: its number, its text and the revision it was read or written at
/// (0: not made yet).
struct Part {
    number: u32,
    text: String,
    revision: u64,
    /// The header, written with the first line: a row with nothing to keep (echo
    /// replies) writes nothing.
    header: Option<String>,
}

impl KvLog {
    /// The journal of row `key` as the bucket holds it (its lines, empty for a new
    /// row), and the log that appends to it while this worker holds `lease`; `header`
    /// starts a new one.
    pub(super) async fn open(
        kv: kv::Store,
        key: String,
        header: String,
        lease: Arc<Lease>,
    ) -> Result<(String, KvLog), NatsError> {
        let mut all = String::new();
        let mut last = Part {
            number: 0,
            text: String::new(),
            revision: 0,
            header: None,
        };
        for number in 0u32.. {
            if all.len() > MAX_JOURNAL_BYTES {
                return Err(NatsError::new(
                    NatsKind::Payload,
                    format!(
                    "the journal of row {key} in the server holds more than {} MiB; it is not read",
                    MAX_JOURNAL_BYTES >> 20
                ),
                ));
            }
            let part = format!("{key}.{number}");
            let entry = patiently(|| kv.entry(part.clone()))
                .await
                .map_err(|e| e.context(format!("cannot read the journal of row {key}")))?;
            match entry {
                Some(e) if e.operation == Operation::Put => {
                    let text = String::from_utf8(e.value.to_vec()).map_err(|e| {
                        let message = format!("the journal of row {key} is not UTF-8");
                        NatsError::new(NatsKind::Decode, message).because(e)
                    })?;
                    all.push_str(&text);
                    last = Part {
                        number,
                        text,
                        revision: e.revision,
                        header: None,
                    };
                }
                _ => break,
            }
        }
        if all.is_empty() {
            last.header = Some(header);
        }
        let log = KvLog {
            kv,
            key,
            last: Mutex::new(last),
            lost: AtomicBool::new(false),
            lease,
        };
        Ok((all, log))
    }

    /// Whether another worker took the row over.
    pub(super) fn lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }

    /// Removes the journal once the row's result is stored.
    pub(super) async fn remove(&self) {
        let parts = self.last.lock().await.number;
        for number in 0..=parts {
            let _ = self.kv.purge(format!("{}.{number}", self.key)).await;
        }
    }

    /// Another worker took the row over: this one writes no more of it.
    fn taken(&self) -> NatsError {
        self.lost.store(true, Ordering::SeqCst);
        NatsError::new(NatsKind::RevisionMoved, format!("row {} {TAKEN}", self.key))
    }

    async fn write(&self, line: String) -> Result<(), NatsError> {
        let mut last = self.last.lock().await;
        if !self.lease.hold().await? {
            return Err(self.taken());
        }
        let mut text = match last.header.take() {
            Some(h) => format!("{h}\n"),
            None => String::new(),
        };
        let starts_part = last.revision != 0 && last.text.len() + line.len() >= PART_BYTES;
        if starts_part {
            *last = Part {
                number: last.number + 1,
                text: String::new(),
                revision: 0,
                header: None,
            };
        }
        text.insert_str(0, &last.text);
        text.push_str(&line);
        text.push('\n');
        let key = format!("{}.{}", self.key, last.number);
        let written = if last.revision == 0 {
            patiently(|| self.kv.create(&key, text.clone().into())).await
        } else {
            let revision = last.revision;
            patiently(|| self.kv.update(&key, text.clone().into(), revision)).await
        };
        match written {
            Ok(revision) => {
                last.text = text;
                last.revision = revision;
                Ok(())
            }
            // Written by another worker since this one read or wrote it.
            Err(e) if e.settled() => Err(self.taken()),
            Err(e) => Err(e.context(format!(
                "cannot write the journal of row {} in the server",
                self.key
            ))),
        }
    }
}

impl RemoteLog for KvLog {
    fn append(&self, line: String) -> BoxFuture<'_, Result<(), JournalError>> {
        Box::pin(async move { self.write(line).await.map_err(JournalError::remote) })
    }

    fn name(&self) -> String {
        format!("the server's journal of row {}", self.key)
    }
}
