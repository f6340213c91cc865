//! What a worker does with a message from the queue before running it: the message is
//! untrusted data, so it is checked against the batch it names, and the batch's record
//! and bundle against what the publisher stored. Nothing a message holds ends a worker:
//! a message that is not a row of a published batch is terminated (the server never
//! hands it out again) and, when it names a row of a batch, that row is stored as
//! failed with the reason; a message that names no published batch's row is dropped
//! with a warning.
//!
//! A row message is `tvm.rows.BATCH`, with the message id `BATCH.ROW`, and a payload
//! ([`RowMessage`]) naming the same batch and row, a row below the batch's count.

use super::results::store_result;
use super::{valid_batch_name, BatchRecord, NatsError, NatsKind, RowMessage, Server};
use crate::ledger::Shared;
use async_nats::jetstream::{AckKind, Message};
use std::collections::HashMap;
use std::sync::Arc;
use tv_vm::bundle::{Bundle, Verified};
use tv_vm::result::{Reason, TaskError, TaskResult};

/// A batch as a worker runs it: its bundle, and the host its rows call through.
pub(super) struct Running<H> {
    pub record: BatchRecord,
    pub bundle: Verified,
    pub function: u32,
    pub host: H,
}

/// The batches a worker has met: ready to run, or refused for good (a bundle that has
/// its name's hash but does not load stays so).
pub(super) type Batches<H> = HashMap<String, Result<Arc<Running<H>>, String>>;

/// What comes of a message.
pub(super) enum Admitted<H> {
    Run(Arc<Running<H>>, RowMessage),
    /// Terminated, and its row stored as failed.
    Failed,
    /// Terminated, with a warning: it names no row of a published batch.
    Dropped(String),
    /// The worker cannot go on (the server is away, its own settings do not fit the
    /// batch): the message is left for later.
    Stop(NatsError),
}

/// How loading a batch ended.
enum Loaded<H> {
    Ready(Arc<Running<H>>),
    /// The batch cannot run: its rows fail with this reason.
    Refused(String),
    /// No such batch, or a record that cannot be read: its rows name no batch.
    Unknown(String),
    Stop(NatsError),
}

pub(super) async fn admit<H, F>(
    server: &Server,
    batches: &mut Batches<H>,
    message: &Message,
    provider: Option<crate::host::Choice>,
    make_host: &F,
) -> Admitted<H>
where
    F: Fn(&BatchRecord, Arc<dyn Shared>) -> Result<H, String>,
{
    let subject = message.subject.as_str();
    let name = subject.strip_prefix("tvm.rows.").unwrap_or_default();
    if valid_batch_name(name).is_err() {
        return drop(message, format!("a message on `{subject}` names no batch")).await;
    }
    let run = match load(server, batches, name, provider, make_host).await {
        Loaded::Ready(run) => run,
        Loaded::Unknown(why) => return drop(message, why).await,
        Loaded::Stop(why) => return Admitted::Stop(why),
        Loaded::Refused(why) => return fail(server, message, name, None, &why).await,
    };
    let rows = run.record.rows;
    let row = match serde_json::from_slice::<RowMessage>(&message.payload) {
        Ok(row) => row,
        Err(e) => {
            let why = format!("its message in the queue is not a row ({e})");
            return fail(server, message, name, Some(rows), &why).await;
        }
    };
    let claimed = message_row(message, name);
    let why = if row.batch != name {
        format!(
            "its message names batch `{}`, not the batch it was queued for",
            row.batch
        )
    } else if claimed != Some(row.index) {
        format!(
            "its message names row {}, not the row its message id names",
            row.index
        )
    } else if row.index >= rows {
        format!(
            "its message names row {}, but the batch has {rows} rows",
            row.index
        )
    } else {
        return Admitted::Run(run, row);
    };
    fail(server, message, name, Some(rows), &why).await
}

/// The row a message's id (`BATCH.ROW`) names.
fn message_row(message: &Message, batch: &str) -> Option<u64> {
    let id = message.headers.as_ref()?.get("Nats-Msg-Id")?.as_str();
    id.strip_prefix(batch)?.strip_prefix('.')?.parse().ok()
}

async fn drop<H>(message: &Message, why: String) -> Admitted<H> {
    let _ = message.ack_with(AckKind::Term).await;
    Admitted::Dropped(why)
}

/// Terminates the message and stores the row its id names as failed for `why`, when
/// that is a row of the batch (of `rows`, when known).
async fn fail<H>(
    server: &Server,
    message: &Message,
    batch: &str,
    rows: Option<u64>,
    why: &str,
) -> Admitted<H> {
    let Some(index) = message_row(message, batch).filter(|i| rows.is_none_or(|n| *i < n)) else {
        return drop(
            message,
            format!("a message of batch {batch} that names no row of it: {why}"),
        )
        .await;
    };
    let failed = TaskResult::failed(TaskError::failure(
        Reason::InputValidationFailure,
        format!("row {index} of batch {batch} was not run: {why}"),
    ));
    if let Err(e) = store_result(server, batch, index, &serde_json::Value::Null, &failed).await {
        // Not stored: the message comes again.
        return Admitted::Stop(e);
    }
    let _ = message.ack_with(AckKind::Term).await;
    Admitted::Failed
}

/// The batch `name`, loaded when its first row comes: its record and bundle from the
/// server, the bundle checked against its hash and verified.
async fn load<H, F>(
    server: &Server,
    batches: &mut Batches<H>,
    name: &str,
    provider: Option<crate::host::Choice>,
    make_host: &F,
) -> Loaded<H>
where
    F: Fn(&BatchRecord, Arc<dyn Shared>) -> Result<H, String>,
{
    match batches.get(name) {
        Some(Ok(run)) => return Loaded::Ready(run.clone()),
        Some(Err(why)) => return Loaded::Refused(why.clone()),
        None => {}
    }
    let mut record = match server.batch_record(name).await {
        Ok(Some(Ok(record))) => record,
        Ok(Some(Err(why))) => return Loaded::Unknown(why.to_string()),
        Ok(None) => {
            return Loaded::Unknown(format!(
                "a row of batch {name} came, but the server has no record of that batch"
            ))
        }
        Err(e) => return Loaded::Stop(e),
    };
    record.header.config.provider.choice = provider;
    let bytes = match fetch_bundle(server, name, &record.header.bundle_sha256).await {
        Ok(bytes) => bytes,
        Err(Fetched::Refused(why)) => return Loaded::Refused(why),
        Err(Fetched::Stop(e)) => return Loaded::Stop(e),
    };
    // The bytes have the hash of their name, so what they hold will not change.
    let function = Bundle::from_bytes(&bytes)
        .map_err(|e| format!("its bundle does not load: {e}"))
        .and_then(|bundle| {
            let entry = record.header.entry.clone();
            match bundle.entry(&entry).map(|e| e.function) {
                Some(f) => Ok((bundle, f)),
                None => Err(format!("its bundle has no entry point `{entry}`")),
            }
        });
    let (bundle, function) = match function {
        Ok(found) => found,
        Err(why) => {
            batches.insert(name.to_string(), Err(why.clone()));
            return Loaded::Refused(why);
        }
    };
    let shared: Arc<dyn Shared> = Arc::new(super::shared::NatsShared::new(
        server,
        name,
        record.header.config.cost.max_cost,
        record.calls,
    ));
    let host = match make_host(&record, shared) {
        Ok(host) => host,
        Err(e) => {
            let e = NatsError::new(NatsKind::Settings, format!("batch {name}: {e}"));
            return Loaded::Stop(e);
        }
    };
    let run = Arc::new(Running {
        record,
        bundle,
        function,
        host,
    });
    batches.insert(name.to_string(), Ok(run.clone()));
    Loaded::Ready(run)
}

enum Fetched {
    Refused(String),
    Stop(NatsError),
}

/// The bundle `sha`'s bytes. An object whose bytes do not have the hash it is named by,
/// or whose parts do not match it, is removed, so that the next batch of the bundle
/// stores it anew; one that does not come whole in time is refused as it is.
async fn fetch_bundle(server: &Server, batch: &str, sha: &str) -> Result<Vec<u8>, Fetched> {
    let why = match server.bundle_bytes(sha).await {
        Ok(Some(bytes)) if crate::digest::sha256_hex(&bytes) == sha => return Ok(bytes),
        Ok(Some(_)) => "does not have the SHA-256 it is named by".to_string(),
        Ok(None) => {
            return Err(Fetched::Refused(format!(
            "the server has no bundle {sha}; publish the batch again under a new name to store it"
        )))
        }
        Err(e) if e.kind() == NatsKind::Decode => format!("is damaged: {e}"),
        Err(e) if e.kind() == NatsKind::Timeout => {
            return Err(Fetched::Refused(format!(
                "the server's bundle object {sha}: {e}"
            )))
        }
        Err(e) => {
            return Err(Fetched::Stop(e.context(format!(
                "cannot fetch the bundle {sha} of batch {batch}"
            ))))
        }
    };
    let removed = match server.bundles.delete(sha).await {
        Ok(()) => "it was removed".to_string(),
        Err(e) => format!("it could not be removed ({e})"),
    };
    Err(Fetched::Refused(format!(
        "the server's bundle object {sha} {why}, so it is not run; {removed}: publish the batch again under a new name to store the bundle anew"
    )))
}
