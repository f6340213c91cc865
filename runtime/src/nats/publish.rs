//! `tvm batch --nats URL`: the bundle, the batch's record and its rows put in the
//! server for the workers.

use super::{result_key, BatchRecord, NatsError, NatsKind, RowMessage, Server};
use crate::batch::{named, read_row, Lines, MAX_ROW_BYTES};
use async_nats::jetstream::message::PublishMessage;
use futures::stream::{FuturesUnordered, StreamExt};
use std::future::IntoFuture;
use std::io::BufRead;
use tv_vm::bundle::Bundle;
use tv_vm::result::{Reason, TaskError, TaskResult};

/// Acknowledgements of rows sent awaited at once: the server takes rows as fast as
/// they come, and one round trip per row would make a large batch slow to publish.
const ACKS_IN_FLIGHT: usize = 256;

/// What publishing did.
#[derive(Debug, Default)]
pub struct Published {
    /// Rows new to the queue.
    pub queued: u64,
    /// Rows the server already had (published before, within its duplicate window),
    /// or whose result it holds.
    pub already: u64,
    /// Lines that are not rows, stored at once as failed rows.
    pub failed: u64,
}

/// Puts `bundle_bytes` (with SHA-256 `record.header.bundle_sha256`), the batch's
/// record and every row of `inputs` in the server. The same batch published again adds
/// nothing; a batch of the same name over other rows, another bundle or another entry
/// is refused.
pub async fn publish(
    server: &Server,
    bundle_bytes: &[u8],
    bundle: &Bundle,
    function: u32,
    record: &BatchRecord,
    inputs: impl BufRead,
) -> Result<Published, NatsError> {
    store_bundle(server, bundle_bytes, &record.header.bundle_sha256).await?;
    let again = claim_name(server, record).await?;
    let name = &record.batch;
    let subject = format!("tvm.rows.{name}");
    let max = server.max_payload();
    let mut done = Published::default();
    let mut acks = FuturesUnordered::new();
    let mut index = 0u64;
    for next in Lines::new(inputs, MAX_ROW_BYTES) {
        let (n, line) = next.map_err(|e| {
            NatsError::new(NatsKind::Local, format!("cannot read the inputs: {e}")).because(e)
        })?;
        if line.as_ref().is_ok_and(|l| l.trim().is_empty()) {
            continue;
        }
        index += 1;
        let row = match line {
            Ok(text) => read_row(bundle, function, index - 1, n, &text),
            Err(why) => crate::batch::Row {
                index: index - 1,
                id: serde_json::Value::Null,
                args: Err(why),
            },
        };
        if again && has_result(server, name, row.index).await? {
            done.already += 1;
            continue;
        }
        let args = match &row.args {
            Ok(values) => named(bundle, function, values),
            Err(why) => {
                fail_row(server, name, row.index, &row.id, why).await?;
                done.failed += 1;
                continue;
            }
        };
        let message = RowMessage {
            batch: name.clone(),
            index: row.index,
            id: row.id.clone(),
            args,
        };
        let payload = serde_json::to_vec(&message).map_err(unwritable)?;
        if payload.len() > max {
            let why = format!(
                "line {n}: the row takes {} bytes, more than the {max} the NATS server takes in one message (its max_payload)",
                payload.len()
            );
            fail_row(server, name, row.index, &row.id, &why).await?;
            done.failed += 1;
            continue;
        }
        let publish = PublishMessage::build()
            .payload(payload.into())
            .message_id(format!("{name}.{}", row.index));
        let ack = server
            .js
            .send_publish(subject.clone(), publish)
            .await
            .map_err(|e| refused(format!("cannot publish row {}", row.index), e))?;
        acks.push(ack.into_future());
        if acks.len() >= ACKS_IN_FLIGHT {
            count(&mut done, acks.next().await)?;
        }
    }
    while let Some(ack) = acks.next().await {
        count(&mut done, Some(ack))?;
    }
    Ok(done)
}

fn count(
    done: &mut Published,
    ack: Option<
        Result<
            async_nats::jetstream::publish::PublishAck,
            impl std::error::Error + Send + Sync + 'static,
        >,
    >,
) -> Result<(), NatsError> {
    match ack {
        Some(Ok(a)) if a.duplicate => done.already += 1,
        Some(Ok(_)) => done.queued += 1,
        Some(Err(e)) => return Err(refused("the server did not take a row", e)),
        None => {}
    }
    Ok(())
}

/// A request the server did not carry out while `what` was being done, for `e`.
fn refused(
    what: impl std::fmt::Display,
    e: impl std::error::Error + Send + Sync + 'static,
) -> NatsError {
    NatsError::new(NatsKind::Request, format!("{what}: {e}")).because(e)
}

/// A value that cannot be written as JSON (it always can: its fields are JSON's).
fn unwritable(e: serde_json::Error) -> NatsError {
    NatsError::new(NatsKind::Decode, e.to_string()).because(e)
}

/// Stores the bundle under its hash, unless the store holds it already: an object of
/// that name whose bytes have another hash (damaged, or stored by someone else) is
/// replaced.
async fn store_bundle(server: &Server, bytes: &[u8], sha256: &str) -> Result<(), NatsError> {
    if stored_intact(server, sha256).await {
        return Ok(());
    }
    let mut reader = bytes;
    server
        .bundles
        .put(sha256, &mut reader)
        .await
        .map(|_| ())
        .map_err(|e| refused("cannot store the bundle in the server", e))
}

/// Whether the object `sha256` holds bytes with that hash.
async fn stored_intact(server: &Server, sha256: &str) -> bool {
    let stored = server.bundle_bytes(sha256).await;
    stored.is_ok_and(|b| b.is_some_and(|b| crate::digest::sha256_hex(&b) == sha256))
}

/// Makes the batch's record; `true` when it was there already, for the same rows,
/// bundle and entry (the batch is being published again).
async fn claim_name(server: &Server, record: &BatchRecord) -> Result<bool, NatsError> {
    let name = &record.batch;
    let bytes = serde_json::to_vec(record).map_err(unwritable)?;
    let Err(e) = server.batches.create(name, bytes.into()).await else {
        return Ok(false);
    };
    let Some(earlier) = server.batch(name).await? else {
        let e = NatsError::from_server(e);
        return Err(NatsError::new(e.kind(), format!(
            "cannot make the record of batch {name}: {e} (may this NATS user write the bucket tvm_batches?)"
        )).because(e));
    };
    let same = earlier.header.bundle_sha256 == record.header.bundle_sha256
        && earlier.header.entry == record.header.entry
        && earlier.rows == record.rows
        && earlier.rows_sha256 == record.rows_sha256;
    if same {
        Ok(true)
    } else {
        Err(NatsError::new(NatsKind::Exists, format!(
            "batch {name} was published with another bundle, entry point or rows; choose another name with --batch NAME"
        )))
    }
}

async fn has_result(server: &Server, batch: &str, index: u64) -> Result<bool, NatsError> {
    server
        .results
        .get(result_key(batch, index))
        .await
        .map(|v| v.is_some())
        .map_err(|e| NatsError::from_server(e).context("cannot read the results"))
}

/// Stores row `index` as failed for `why` (a line that is not a row).
async fn fail_row(
    server: &Server,
    batch: &str,
    index: u64,
    id: &serde_json::Value,
    why: &str,
) -> Result<(), NatsError> {
    let failed = TaskResult::failed(TaskError::failure(Reason::InputValidationFailure, why));
    super::results::store_result(server, batch, index, id, &failed)
        .await
        .map(|_| ())
}
